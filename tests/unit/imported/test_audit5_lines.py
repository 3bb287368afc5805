"""audit-5's survivors in the log importers' matching, harness and generic readers, re-reading and replay.

Each test pins one rule the audit found unpinned (its IDs in the test's comment); every expected value is
by hand from the planted lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gge.errors import GgeError
from gge.models.imported.generic import parse_columns, read_generic
from gge.models.imported.harnesses import read_lmms_eval, read_vlmevalkit, settle_boxes
from gge.models.imported.lines import LogLine, match_lines, region_agrees
from gge.models.imported.replaying import ImportedReplay
from gge.models.imported.reread import Reading, Reread, reading
from gge.types import Absent, Box, Sample


def _line(
    image: str | None, instruction: str | None, box: tuple[float, ...] | None = None, **kw: Any
) -> LogLine:
    return LogLine("log:1", 1, kw.pop("id", None), image, instruction, box, (2.0, 2.0), "", True, **kw)


def _sample(sid: str, image: str, instruction: str = "click OK", box: Box | None = None) -> Sample:
    return Sample("b", sid, image, (10, 10), instruction, box or Box(1, 1, 4, 4))


# -- matching (lines.py) ------------------------------------------------------------------------------
def test_the_longest_shared_path_tail_counts_the_whole_shorter_path() -> None:
    # LI01: a/b.png shares 2 components with /d/a/b.png, 1 with /d/c/b.png: the first, not ambiguous
    samples = [
        _sample("s-a", "/d/a/b.png", box=Box(1, 1, 4, 4)),
        _sample("s-c", "/d/c/b.png", box=Box(5, 5, 8, 8)),
    ]
    m = match_lines([_line("a/b.png", "click OK")], samples)
    assert list(m.lines) == ["s-a"] and m.ambiguous == [] and m.unmatched == []


def test_an_instruction_with_trailing_whitespace_matches_its_sample() -> None:
    # LI02: 'click OK \n' is 'click OK' once whitespace runs are one space and the ends stripped
    m = match_lines([_line("a.png", "click OK \n")], [_sample("s-0", "/d/a.png")])
    assert list(m.lines) == ["s-0"] and m.unmatched == []


@pytest.mark.parametrize(
    ("region", "box", "agrees"),
    [
        (Absent(), (0, 0, 0, 0), True),  # a refusal item's [0, 0, 0, 0]
        (Absent(), (0, 5, 10, 20), False),  # LI03: one zero is not an absent target
        (Box(1, 1, 4, 4), (1.5, 1, 4, 4), True),  # LI04: exactly BOX_TOLERANCE off: within
        (Box(1, 1, 4, 4), (1.75, 1, 4, 4), False),  # past it
        (Box(1, 1, 4, 4), (1, 1, 4, 4, 9, 9), False),  # LI05: six numbers are not the box (no crash)
    ],
)
def test_a_logs_box_names_the_target_within_half_a_pixel(
    region: Any, box: tuple[float, ...], agrees: bool
) -> None:
    assert region_agrees(region, box) is agrees


def test_a_line_whose_id_names_a_sample_of_another_screenshot_is_not_matched_by_id() -> None:
    # LI06: the id a-0 is a sample, but its screenshot is a.png and the line's b.png: not that sample
    line = _line("x/b.png", "click OK", id="a-0")
    m = match_lines([line], [_sample("a-0", "/d/a.png")])
    assert m.lines == {} and m.missing == ["a-0"]
    assert m.unmatched == [
        (
            line,
            "its id a-0 names a sample, but its screenshot b.png is not the sample's a.png; and no sample "
            "has screenshot b.png and instruction 'click OK'",
        )
    ]


def test_a_position_equal_to_the_number_of_samples_is_past_them() -> None:
    # LI08: one sample (positions 0..0); position 1 is past it: positions not used, the line still
    # matched by its instruction (one sample has it)
    line = LogLine("log:1", 1, None, None, "click OK", None, None, "(1, 1)", True, fields={"position": 1})
    m = match_lines([line], [_sample("s-0", "/d/a.png")])
    assert m.positions == "log:1: its position 1 is past the 1 samples loaded"
    assert list(m.lines) == ["s-0"] and m.by_position == 0


def test_a_box_that_fits_none_of_interchangeable_samples_leaves_them_interchangeable() -> None:
    # LI14: two samples alike in screenshot, instruction and box; the line's box (6, 6, 9, 9) fits
    # neither: it is still one of them (matched in order; the box difference is the data's)
    samples = [_sample("s-0", "/d/a.png"), _sample("s-1", "/d/a.png")]
    m = match_lines([_line("a.png", "click OK", (6, 6, 9, 9))], samples)
    assert list(m.lines) == ["s-0"] and m.interchangeable == 1 and m.unmatched == [] and m.ambiguous == []


@pytest.mark.parametrize(
    ("ident", "why"),
    [
        ("zz", "its id zz is no sample's and it does not name both a screenshot and an instruction"),
        (None, "it has no id and it does not name both a screenshot and an instruction"),
    ],
)
def test_a_line_naming_too_little_to_match_says_why(ident: str | None, why: str) -> None:
    line = _line("a.png", None, id=ident)  # a screenshot but no instruction, and no sample's id
    m = match_lines([line], [_sample("s-0", "/d/a.png")])
    assert m.unmatched == [(line, why)] and m.missing == ["s-0"]


# -- VLMEvalKit and lmms-eval (harnesses.py) ----------------------------------------------------------
HEADER = "index\timage_path\tquestion\tbbox\tprediction\n"


def test_an_xlsx_row_with_an_empty_cell_is_read(tmp_path: Path) -> None:
    # HA01: only a row whose cells are all empty is skipped; row 3 has no bbox and is a row
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    for row in (
        ["index", "image_path", "question", "bbox", "prediction"],
        [1, "a.png", "click OK", "[1, 1, 3, 3]", "(1, 1)"],
        [2, "b.png", "click it", None, "(2, 2)"],
        [None, None, None, None, None],
        [3, "c.png", "click there", "[0, 0, 1, 1]", "(3, 3)"],
    ):
        sheet.append(row)
    book.save(tmp_path / "m.xlsx")
    assert [
        (ln.line, ln.image, ln.raw, ln.fields["bbox_as_written"])
        for ln in read_vlmevalkit(tmp_path / "m.xlsx")
    ] == [
        (2, "a.png", "(1, 1)", (1.0, 1.0, 3.0, 3.0)),
        (3, "b.png", "(2, 2)", None),
        (5, "c.png", "(3, 3)", (0.0, 0.0, 1.0, 1.0)),
    ]


def test_a_bbox_of_five_numbers_is_refused_in_one_line(tmp_path: Path) -> None:
    # HA02: a bbox holds 4 numbers; a fifth is refused by the reader, not a crash in settle_boxes
    path = tmp_path / "m.tsv"
    path.write_text(HEADER + "1\ta.png\tclick OK\t[1, 2, 3, 4, 5]\t(1, 1)\n")
    with pytest.raises(
        GgeError, match=rf"^{path}:2: bbox must be a list of 4 numbers, got '\[1, 2, 3, 4, 5\]'$"
    ):
        read_vlmevalkit(path)


def test_an_empty_image_path_cell_names_no_screenshot_and_the_row_matches_by_instruction(
    tmp_path: Path,
) -> None:
    # HA03: an empty image_path is no screenshot (None), not a screenshot named ''
    path = tmp_path / "m.tsv"
    path.write_text(HEADER + "1\t\tclick OK\t[1, 1, 3, 3]\t(1, 1)\n")
    lines = read_vlmevalkit(path)
    assert lines[0].image is None
    m = match_lines(settle_boxes(lines, "b"), [_sample("s-0", "/d/a.png")])
    assert list(m.lines) == ["s-0"] and m.unmatched == []


@pytest.mark.parametrize("suffix", ["tsv", "json"])
def test_an_empty_question_is_no_instruction(tmp_path: Path, suffix: str) -> None:
    # an empty (TSV) or null (JSON) question, like an empty image_path, names nothing: the row cannot
    # be matched and says so, never matched to a sample whose instruction is ''
    path = tmp_path / f"m.{suffix}"
    if suffix == "tsv":
        path.write_text(HEADER + "1\ta.png\t\t[1, 1, 3, 3]\t(1, 1)\n")
    else:
        path.write_text(
            json.dumps([{"index": 1, "image_path": "a.png", "question": None, "prediction": "(1, 1)"}])
        )
    (line,) = read_vlmevalkit(path)
    assert (line.image, line.instruction) == ("a.png", None)
    m = match_lines([line], [_sample("s-0", "/d/a.png", instruction="")])
    assert m.unmatched == [(line, "it has no id and it does not name both a screenshot and an instruction")]


def test_an_lmms_eval_answer_nested_twice_is_one_answer(tmp_path: Path) -> None:
    # HA07: [[text]] (before flattening, one per filter) is the text
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"doc_id": 0, "target": "click OK", "filtered_resps": [["(1, 2)"]]}) + "\n")
    assert [(ln.where, ln.line, ln.raw) for ln in read_lmms_eval(path)] == [(f"{path}:1", 1, "(1, 2)")]


def test_vlmevalkit_json_lines_are_rows_and_so_is_a_file_of_one_line(tmp_path: Path) -> None:
    # a JSON-lines file of one row parses as one JSON object: still one row, not "not a table"
    rows = [
        {"index": i, "image_path": f"{i}.png", "question": f"click {i}", "prediction": f"({i}, {i})"}
        for i in (1, 2)
    ]
    two, one = tmp_path / "two.json", tmp_path / "one.json"
    two.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    one.write_text(json.dumps(rows[0]) + "\n")
    read = [[(ln.line, ln.image, ln.instruction, ln.raw) for ln in read_vlmevalkit(f)] for f in (two, one)]
    assert read == [
        [(1, "1.png", "click 1", "(1, 1)"), (2, "2.png", "click 2", "(2, 2)")],
        [(1, "1.png", "click 1", "(1, 1)")],
    ]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ([{"question": "q", "prediction": "p"}, 5], r":2: a row must be a JSON object, got 5$"),
        (
            {"index": {"0": 1}, "model": "m"},
            r":1: no column 'question' \(a VLMEvalKit prediction file has it\)$",
        ),
        ("just text", r": not a VLMEvalKit prediction file \(xlsx, tsv, or a JSON table\)$"),
    ],
)
def test_a_vlmevalkit_json_file_that_is_no_table_is_refused_in_one_line(
    tmp_path: Path, content: Any, why: str
) -> None:
    # a dict with one column of values that is not {row: value} is not pandas' column layout
    path = tmp_path / "p.json"
    path.write_text(json.dumps(content))
    with pytest.raises(GgeError, match=rf"^{path}{why}"):
        read_vlmevalkit(path)


def test_an_lmms_eval_line_with_one_metric_and_an_answer_that_is_not_text(tmp_path: Path) -> None:
    # the verdict of its one metric key; an answer that is not text kept as its JSON
    path = tmp_path / "s.jsonl"
    record = {"doc_id": 0, "target": "click OK", "filtered_resps": [{"x": 0.5}], "acc": {"correct": False}}
    path.write_text(json.dumps(record) + "\n")
    assert [(ln.raw, ln.correct) for ln in read_lmms_eval(path)] == [('{"x": 0.5}', False)]


# -- generic tables (generic.py) ----------------------------------------------------------------------
def test_a_columns_pair_with_an_empty_column_is_refused() -> None:
    # GE01
    with pytest.raises(GgeError, match=r"^--columns: 'id=' is not field=column$"):
        parse_columns("id=,x=a,y=b")


def test_a_point_of_three_numbers_is_refused(tmp_path: Path) -> None:
    # GE05: a point is 2 numbers; a third is refused, never truncated
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"sid": "s-0", "xy": [1, 2, 3]}) + "\n")
    with pytest.raises(GgeError, match=rf"^{path}:1: xy must be a list of 2 numbers, got \[1, 2, 3\]$"):
        read_generic(path, parse_columns("id=sid,point=xy"))


def test_a_row_with_x_and_an_empty_y_has_no_point_and_keeps_its_raw_answer(tmp_path: Path) -> None:
    # GE08: half a point is no point; the raw answer is there to read
    path = tmp_path / "p.csv"
    path.write_text("sid,px,py,text\na,2,,(2 2)\n")
    (line,) = read_generic(path, parse_columns("id=sid,x=px,y=py,raw=text"))
    assert (line.point, line.raw) == (None, "(2 2)")


def test_a_box_of_three_numbers_is_refused(tmp_path: Path) -> None:
    # GE09: a box holds at least 4 numbers (x1, y1, x2, y2, or a polygon's)
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"sid": "s-0", "xy": [1, 2], "b": [1, 2, 3]}) + "\n")
    with pytest.raises(GgeError, match=rf"^{path}:1: b must hold at least 4 numbers, got \[1.0, 2.0, 3.0\]$"):
        read_generic(path, parse_columns("id=sid,point=xy,box=b"))


def test_a_generic_raw_answer_that_is_not_text_is_kept_as_its_json(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"sid": "s-0", "text": {"x": 1, "y": 2}}) + "\n")
    (line,) = read_generic(path, parse_columns("id=sid,raw=text"))
    assert line.raw == '{"x": 1, "y": 2}'


# -- re-reading (reread.py) ---------------------------------------------------------------------------
def _reread_line(point: tuple[float, float] | None, **fields: Any) -> LogLine:
    return LogLine("log:1", 1, None, None, None, None, point, "(0, 0)", None, fields=dict(fields))


def _shot(sid: str, size: tuple[int, int]) -> Sample:
    return Sample("b", sid, f"/d/{sid}.png", size, "x", Box(0, 0, 1, 1))


def test_a_reread_point_half_a_pixel_off_is_the_logs_own() -> None:
    # RR06: |(2.5, 2) - (2, 2)| = 0.5 = SAME_PX: the same point
    r = Reread(reading(convention="abs_original"))
    r.add(_sample("a", "/d/a.png"), _reread_line((2.0, 2.0)), (2.5, 2.0))
    assert (r.lines, r.same, r.differ) == (1, 1, [])


def test_no_point_on_either_side_is_the_same() -> None:
    r = Reread(reading(convention="abs_original"))
    r.add(_sample("a", "/d/a.png"), _reread_line(None), None)
    r.add(_sample("b", "/d/b.png"), _reread_line((2.0, 2.0)), None)
    assert (r.lines, r.same, r.differ) == (2, 1, [("b", None)])


def test_a_log_that_records_its_resized_frame_is_checked_for_the_frame_bug_under_any_convention() -> None:
    # RR09, RR10: a 2000x1000 screenshot, the log's frame 1000x500 (ratio 0.5); gge reads (400, 200):
    # the log's (200, 100) is the frame's ratio; 0.8 px off on x or on y still is (the log rounded),
    # 1.2 px off is not
    r = Reread(Reading("convention norm_1000", "norm_1000"))
    for sid, theirs in (
        ("a", (200.0, 100.0)),
        ("b", (200.8, 100.0)),
        ("c", (200.0, 100.8)),
        ("d", (201.2, 100.0)),
    ):
        r.add(_shot(sid, (2000, 1000)), _reread_line(theirs, resized=[1000, 500]), (400.0, 200.0))
    assert r.frame == ["a", "b", "c"] and [sid for sid, _ in r.differ] == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("ours", "theirs", "clamped"),
    [
        ((-5.0, 50.0), (0.0, 50.0), True),  # left of a 100x80 screenshot, the log on its left edge
        ((105.0, 50.0), (100.0, 50.0), True),  # right
        ((50.0, -5.0), (50.0, 0.0), True),  # above
        ((50.0, 85.0), (50.0, 80.0), True),  # below
        ((-5.0, 50.0), (3.0, 50.0), False),  # outside, but the log's point is on no edge
        ((0.0, 50.0), (0.0, 40.0), False),  # on an edge is inside: a plain difference
        ((100.0, 50.0), (100.0, 40.0), False),
        ((50.0, 0.0), (40.0, 0.0), False),
        ((50.0, 80.0), (40.0, 80.0), False),
    ],
)
def test_an_answer_outside_the_screenshot_that_the_log_put_on_its_edge_is_clamped(
    ours: tuple[float, float], theirs: tuple[float, float], clamped: bool
) -> None:
    r = Reread(reading(convention="abs_original"))
    r.add(_shot("a", (100, 80)), _reread_line(theirs), ours)
    assert r.clamped == (["a"] if clamped else []) and [sid for sid, _ in r.differ] == ["a"]


def _differing(distances: list[float]) -> Reread:
    r = Reread(reading(convention="abs_original"))
    for i, d in enumerate(distances):
        r.add(_shot(f"s-{i}", (100, 100)), _reread_line((10.0 + d, 10.0)), (10.0, 10.0))
    return r


@pytest.mark.parametrize(
    ("distances", "said"),
    [
        ([9.0, 1.0, 2.0], "  3 differ; by 2.0 px (median), 9.0 px at most: s-0, s-1, s-2"),  # RR11
        ([4.0, 1.0], "  2 differ; by 2.5 px (median), 4.0 px at most: s-0, s-1"),  # (1 + 4) / 2
    ],
)
def test_the_summary_gives_the_median_distance(distances: list[float], said: str) -> None:
    head = f"raw answers read again (convention abs_original): 0 of {len(distances)} points are the log's own"
    assert _differing(distances).summary() == [head, said]  # no clamp, no frame: no line for them


def test_the_summary_names_the_clamped_answers_and_the_frame_bug() -> None:
    # a: gge (400, 200), the log (200, 100): the 1000x500 frame's ratio, 223.6 px apart (sqrt(200² + 100²));
    # b: gge (-10, 500), the log (0, 500): clamped, 10 px apart; median (10 + 223.6) / 2 = 116.8
    r = Reread(Reading("convention norm_1000", "norm_1000"))
    r.add(_shot("a", (2000, 1000)), _reread_line((200.0, 100.0), resized=[1000, 500]), (400.0, 200.0))
    r.add(_shot("b", (2000, 1000)), _reread_line((0.0, 500.0), resized=[1000, 500]), (-10.0, 500.0))
    assert r.summary() == [
        "raw answers read again (convention norm_1000): 0 of 2 points are the log's own",
        "  2 differ; by 116.8 px (median), 223.6 px at most: a, b",
        "  1 are answers outside the screenshot that the log clamped to its edge: b",
        "  1 differ by the frame's ratio to the screenshot (a coordinate-frame bug): a",
    ]
    empty = Reread(Reading("convention norm_1000", "norm_1000")).summary()
    assert empty == ["raw answers read (convention norm_1000): the log keeps no point of its own to compare"]


@pytest.mark.parametrize(
    ("prompt_max_pixels", "ceiling"),
    [(None, 12_845_056), (1_000_000, 1_000_000)],  # the Qwen-VL processors' 16384 x 28 x 28; the prompt's own
)
def test_a_preset_that_sets_no_resize_reads_in_the_qwen_processors_defaults(
    monkeypatch: pytest.MonkeyPatch, prompt_max_pixels: int | None, ceiling: int
) -> None:
    from omegaconf import OmegaConf

    import gge.models.factory as factory

    bare = OmegaConf.create(
        {
            "convention": "abs_resized",
            "box_pairs": False,
            "patch_factor": None,
            "min_pixels": None,
            "max_pixels": None,
            "prompt_max_pixels": prompt_max_pixels,
        }
    )
    monkeypatch.setattr(factory, "preset_config", lambda name: bare)
    r = reading("bare")
    # 14-px patches merged 2x2: factor 28; the floor 56 x 56
    assert (r.name, r.convention, r.factor, r.min_pixels, r.max_pixels) == (
        "preset bare",
        "abs_resized",
        28,
        3136,
        ceiling,
    )


# -- replay of a log (replaying.py) -------------------------------------------------------------------
def test_a_replayed_log_needs_exactly_one_benchmark(tmp_path: Path) -> None:
    # RP01: none is refused in one line too (not an unpacking error)
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"sample_results": []}))
    with pytest.raises(
        GgeError, match=r"^model.format=gelato: a log is of one benchmark, and this run has 0 \(\)"
    ):
        ImportedReplay(log, "gelato").load({})
    with pytest.raises(GgeError, match=r"this run has 2 \(b, c\): name it alone, benchmarks=\[NAME\]$"):
        ImportedReplay(log, "gelato").load({"b": [], "c": []})


def test_an_unknown_log_format_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "log.json"
    log.write_text("{}")
    with pytest.raises(GgeError, match=r"model.format.*'nope'"):
        ImportedReplay(log, "nope")


def _gelato_record(image: str, instruction: str, click: list[float]) -> dict[str, Any]:
    return {
        "img_filename": image,
        "instruction": instruction,
        "response": "",
        "is_correct": True,
        "predicted_click": click,
        "bbox": [0, 0, 9, 9],
    }


def test_a_replayed_log_answers_the_samples_its_lines_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import Image

    shot = tmp_path / "a.png"
    Image.new("RGB", (10, 10)).save(shot)
    found = Sample("b", "s0", str(shot), (10, 10), "click", Box(0, 0, 9, 9))
    lost = Sample("b", "s1", str(tmp_path / "gone.png"), (10, 10), "click it", Box(0, 0, 9, 9))  # not on disk
    log = tmp_path / "log.json"
    rows = [_gelato_record("a.png", "click", [5, 5]), _gelato_record("gone.png", "click it", [1, 1])]
    rows.append(_gelato_record("z.png", "nothing", [2, 2]))  # no sample's
    log.write_text(json.dumps({"sample_results": rows, "metadata": {}}))
    model = ImportedReplay(log, "gelato")
    assert model.max_candidates() == 1  # a log keeps one answer a sample, known before it is matched
    before = {
        "format": "gelato",
        "file": str(log),
        "lines": 0,
        "matched": 0,
        "unmatched": [],
        "ambiguous": [],
    }
    assert model.imported_log() == before
    assert model.load({"b": [found, lost]}).agree == 2  # (5, 5) and (1, 1) hit (0, 0, 9, 9), as the log says
    assert model.imported_log() == {
        **before,
        "lines": 3,
        "matched": 2,
        "unmatched": [f"{log}: sample_results[2]: no sample has screenshot z.png and instruction 'nothing'"],
    }
    slept: list[float] = []
    monkeypatch.setattr("gge.models.replay.time.sleep", slept.append)
    a, b = model.predict([found, lost])
    assert ([c.point for c in a.candidates], a.image_error) == ([(5.0, 5.0)], None)
    # not strict by default: the missing screenshot's size is known, so its line is scored (issue 37)
    assert ([c.point for c in b.candidates], b.image_error) == ([(1.0, 1.0)], None)
    assert slept == []  # no delay by default


def test_a_replayed_logs_settings_record_how_it_was_read(tmp_path: Path) -> None:
    # RP02, RP03: results.json keeps the reading and the generic columns
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"sid": "s-0", "text": "(1, 1)"}) + "\n")
    columns = {"id": "sid", "raw": "text"}
    settings = ImportedReplay(
        log, "generic", reading=reading(convention="abs_original"), columns=columns
    ).settings()
    assert (settings["format"], settings["read_as"], settings["columns"]) == (
        "generic",
        "convention abs_original",
        {"id": "sid", "raw": "text"},
    )
    plain = ImportedReplay(log, "gelato").settings()
    assert "read_as" not in plain and "columns" not in plain


# from an unbiased mutant sample (seed 23)


def test_a_cell_holding_json_null_is_no_point_and_a_0_verdict_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text('sid,xy,ok\na,null,0\nb,"[2, 3]",1\n')
    a, b = read_generic(path, parse_columns("id=sid,point=xy,correct=ok"))
    assert (a.point, a.correct) == (None, False) and (b.point, b.correct) == ((2.0, 3.0), True)
    path = tmp_path / "p.jsonl"  # JSON's own numbers: 0, 1 and a spreadsheet's floats 0.0, 1.0
    rows = [{"sid": s, "xy": [2, 3], "ok": ok} for s, ok in (("a", 0), ("b", 1), ("c", 0.0), ("d", 1.0))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = read_generic(path, parse_columns("id=sid,point=xy,correct=ok"))
    assert [line.correct for line in lines] == [False, True, False, True]


# from an unbiased mutant sample (seed 37)


def test_blank_lines_of_a_json_lines_table_are_passed_over(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    rows = [{"sid": "a", "xy": [1, 2]}, {"sid": "b", "xy": [3, 4]}]
    path.write_text(json.dumps(rows[0]) + "\n\n   \n" + json.dumps(rows[1]) + "\n")
    lines = read_generic(path, parse_columns("id=sid,point=xy"))
    assert [(ln.id, ln.point, ln.line) for ln in lines] == [("a", (1.0, 2.0), 1), ("b", (3.0, 4.0), 4)]


def test_an_empty_workbook_is_one_line(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    path = tmp_path / "empty.xlsx"
    openpyxl.Workbook().save(path)
    with pytest.raises(GgeError, match=rf"^{path}: the sheet is empty$"):
        read_vlmevalkit(path)


def test_a_reading_resizes_by_qwens_patch_of_28_unless_told() -> None:
    assert (Reading("r", "abs_resized").factor, Reading("r", "abs_resized").min_pixels) == (28, 56 * 56)
