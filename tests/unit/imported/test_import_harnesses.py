"""``gge import vlmevalkit`` and ``gge import lmms_eval``: fixture files built from the harnesses' schemas.

VLMEvalKit (a prediction table, xlsx/tsv/json, ``bbox`` written as text, ``[x, y, w, h]`` except on
ScreenSpot-Pro), planted on 6 samples of a ScreenSpot-v2-like benchmark:
- ``m-0``: hit; ``m-1``: miss (a point outside its box); ``d-0``/``d-1``: one (screenshot, instruction)
  pair with two boxes (the row's box decides); ``w-0``: an answer with no point (a format error);
  ``w-1``: not in the file; and a row for a screenshot no sample has.
lmms-eval (``doc_id``, ``target``, ``filtered_resps``, metric records): matched by instruction, and
by ``doc_id`` among samples sharing one only where the loaded order is the copy's.
Every count below is by hand from the planted rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gge.errors import GgeError
from gge.models.imported import import_log
from gge.models.imported.harnesses import read_lmms_eval
from gge.models.imported.lines import match_lines
from gge.models.imported.reread import reading
from gge.types import Box, Sample

openpyxl = pytest.importorskip("openpyxl")

NORM_1 = reading(None, "norm_1")


def _samples(benchmark: str = "screenspot_v2") -> list[Sample]:
    def s(sid: str, image: str, instr: str, box: Box) -> Sample:
        return Sample(benchmark, sid, f"/data/ssv2/screenspotv2_image/{image}", (200, 100), instr, box)

    return [
        s("m-0", "mobile_a.png", "open menu", Box(10, 10, 30, 20)),
        s("m-1", "mobile_b.png", "close it", Box(100, 50, 120, 60)),
        s("d-0", "desk_a.png", "click the tab", Box(0, 0, 20, 10)),
        s("d-1", "desk_a.png", "click the tab", Box(140, 0, 160, 10)),
        s("w-0", "web_a.png", "search", Box(50, 50, 70, 70)),
        s("w-1", "web_b.png", "scroll down", Box(1, 1, 2, 2)),
    ]


# VLMEvalKit's columns (the dataset table less its image, plus prediction); bbox as [x, y, w, h] text
HEADER = ["index", "image_path", "question", "bbox", "data_type", "data_source", "prediction"]


def _rows() -> list[list[Any]]:
    return [
        [1, "screenspotv2_image/mobile_a.png", "open menu", "[10, 10, 20, 10]", "text", "ios",
         "pyautogui.click(x=0.1, y=0.15)"],  # (20, 15): inside (10, 10, 30, 20)
        [2, "screenspotv2_image/mobile_b.png", "close it", "[100, 50, 20, 10]", "icon", "ios",
         "pyautogui.click(x=0.2, y=0.2)"],  # (40, 20): outside
        [3, "screenspotv2_image/desk_a.png", "click the tab", "[140, 0, 20, 10]", "text", "macos",
         "pyautogui.click(x=0.75, y=0.05)"],  # (150, 5): d-1's box (the row's box says d-1)
        [4, "screenspotv2_image/desk_a.png", "click the tab", "[0, 0, 20, 10]", "text", "macos",
         "pyautogui.click(x=0.75, y=0.05)"],  # d-0: the same answer misses it
        [5, "screenspotv2_image/web_a.png", "search", "[50, 50, 20, 20]", "icon", "shop",
         "no idea"],  # no point: a format error
        [6, "screenspotv2_image/nowhere.png", "gone", "[0, 0, 1, 1]", "icon", "shop",
         "pyautogui.click(x=0.5, y=0.5)"],  # no such screenshot
    ]  # fmt: skip


def _xlsx(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    book.save(path)
    return path


def _check_vlmevalkit(report: Any, first: int) -> None:
    """``first``: the number of the first row (2 under a header row, 1 in a JSON table)."""
    assert sorted(report.matched.lines) == ["d-0", "d-1", "m-0", "m-1", "w-0"]
    lines = report.matched.lines
    assert (lines["d-1"].line, lines["d-0"].line) == (first + 2, first + 3)  # by the row's box
    assert report.matched.missing == ["w-1"]
    assert [why for _, why in report.matched.unmatched] == [
        "no sample has screenshot nowhere.png and instruction 'gone'"
    ]
    assert report.hits == 2  # m-0 and d-1
    assert report.unjudged == 5  # VLMEvalKit keeps no verdict
    by_id = {r["id"]: r for r in report.records}
    assert by_id["m-1"]["candidates"] == [[40.0, 20.0]]
    assert by_id["w-0"]["candidates"] == ["unparsed"] and by_id["w-0"]["format_error"] is True
    assert by_id["d-0"]["imported"]["box"] == [0.0, 0.0, 20.0, 10.0]  # [x, y, w, h] as corners
    assert (
        "accuracy: gge's rule: 40.00% (2/5 matched lines); 33.33% over the release's 6 samples"
        in "\n".join(report.summary())
    )


def test_vlmevalkit_xlsx_tsv_and_json_read_alike(tmp_path: Path) -> None:
    xlsx = _xlsx(tmp_path / "Model_ScreenSpot_v2_Mobile.xlsx", HEADER, _rows())
    _check_vlmevalkit(import_log("vlmevalkit", xlsx, _samples(), NORM_1), 2)
    tsv = tmp_path / "Model_ScreenSpot_v2_Mobile.tsv"
    tsv.write_text("\n".join("\t".join(str(v) for v in row) for row in [HEADER, *_rows()]) + "\n")
    report = import_log("vlmevalkit", tsv, _samples(), NORM_1)
    _check_vlmevalkit(report, 2)
    as_json = tmp_path / "Model_ScreenSpot_v2_Mobile.json"  # pandas' to_json: {column: {row: value}}
    columns = {h: {str(i): row[j] for i, row in enumerate(_rows())} for j, h in enumerate(HEADER)}
    as_json.write_text(json.dumps(columns))
    _check_vlmevalkit(import_log("vlmevalkit", as_json, _samples(), NORM_1), 1)


def test_vlmevalkit_screenspot_pro_boxes_are_corners(tmp_path: Path) -> None:
    rows = [[1, "vscode_macos/a.png", "open menu", "[10, 10, 30, 20]", "text", "Dev", "x=0.1, y=0.15"]]
    samples = [Sample("screenspot_pro", "vscode_macos_0", "/d/images/vscode_macos/a.png", (200, 100),
                      "open menu", Box(10, 10, 30, 20))]  # fmt: skip
    report = import_log("vlmevalkit", _xlsx(tmp_path / "p.xlsx", HEADER, rows), samples, NORM_1)
    assert report.records[0]["imported"]["box"] == [10.0, 10.0, 30.0, 20.0] and report.hits == 1


def test_vlmevalkit_needs_a_reading_and_names_bad_rows(tmp_path: Path) -> None:
    xlsx = _xlsx(tmp_path / "p.xlsx", HEADER, _rows())
    with pytest.raises(GgeError, match=r"keeps the model's raw answers but no parsed point: name --preset"):
        import_log("vlmevalkit", xlsx, _samples())
    bad = _xlsx(tmp_path / "bad.xlsx", HEADER, [[1, "a.png", "x", "[1, 2, 3]", "text", "ios", "x=1, y=1"]])
    with pytest.raises(GgeError, match=rf"^{bad}:2: bbox must be a list of 4 numbers, got '\[1, 2, 3\]'$"):
        import_log("vlmevalkit", bad, _samples(), NORM_1)
    short = _xlsx(tmp_path / "short.xlsx", HEADER[:-1], [row[:-1] for row in _rows()])
    with pytest.raises(GgeError, match=rf"^{short}:2: no column 'prediction'"):
        import_log("vlmevalkit", short, _samples(), NORM_1)
    not_a_book = tmp_path / "zip.xlsx"
    not_a_book.write_text("hello")
    with pytest.raises(GgeError, match=rf"^{not_a_book}: not an xlsx workbook"):
        import_log("vlmevalkit", not_a_book, _samples(), NORM_1)


def test_vlmevalkit_xlsx_without_openpyxl_says_how(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xlsx = _xlsx(tmp_path / "p.xlsx", HEADER, _rows())
    monkeypatch.setitem(__import__("sys").modules, "openpyxl", None)
    with pytest.raises(GgeError, match=r"reading .xlsx needs openpyxl \(pip install 'gge\[xlsx\]'\)"):
        import_log("vlmevalkit", xlsx, _samples(), NORM_1)


# -- lmms-eval ---------------------------------------------------------------------------------------
def _lmms(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _doc(doc_id: int, target: str, answer: Any, correct: bool | None) -> dict[str, Any]:
    line: dict[str, Any] = {"doc_id": doc_id, "target": target, "filtered_resps": answer, "doc_hash": "h"}
    if correct is not None:  # every metric key holds the same record
        for metric in ("screenspot_v2_action_acc", "screenspot_v2_text_acc", "screenspot_v2_icon_acc"):
            line[metric] = {"correct": correct, "data_type": "text"}
    return line


def test_lmms_eval_matches_by_instruction_and_position(tmp_path: Path) -> None:
    samples = _samples()
    log = _lmms(
        tmp_path / "20260101_samples_screenspot_v2.jsonl",
        [
            _doc(0, "open menu", ["[0.1, 0.15]"], True),  # hit; a one-element list, as before flattening
            _doc(1, "close it", "[0.2, 0.2]", False),  # miss
            _doc(3, "click the tab", "[0.75, 0.05]", True),  # shared instruction: position 3 is d-1 (hit)
            _doc(2, "click the tab", "[0.75, 0.05]", True),  # position 2 is d-0: the log says hit, gge miss
            _doc(4, "search", "nothing here", False),
        ],
    )
    report = import_log("lmms_eval", log, samples, NORM_1)
    m = report.matched
    assert m.lines["d-1"].line == 3 and m.lines["d-0"].line == 4 and m.by_position == 2
    assert m.missing == ["w-1"] and report.hits == 2  # m-0, d-1
    assert [(d.sample, d.log, d.gge, d.cause) for d in report.disagree] == [("d-0", True, False, "reading")]
    said = "\n".join(report.summary())
    assert "5 matched to screenspot_v2 samples (0 among interchangeable samples, 2 by their position" in said
    assert "the log's own: 60.00% (3/5 of its counted lines)" in said
    # loaded in another order than the copy's, position 3 is no sample with that instruction: the
    # positions are not used for the whole file, and both lines sharing an instruction are ambiguous
    # (line 4's position 2 is still d-0 there, but by chance: never trusted line by line)
    shuffled = [samples[i] for i in (0, 1, 2, 4, 3, 5)]
    report = import_log("lmms_eval", log, shuffled, NORM_1)
    assert [line.line for line, _ in report.matched.ambiguous] == [3, 4] and report.matched.by_position == 0
    assert (
        report.matched.positions
        == f"{log}:3: its position 3 is sample w-0, whose instruction is another: "
        + ("the samples are not loaded in the harness copy's order")
    )
    assert "positions not used: " in "\n".join(report.summary())


def test_lmms_eval_positions_are_never_trusted_by_chance(tmp_path: Path) -> None:
    # the copy's order: c0 "close", o1, c2 "close", o3; loaded: o1, o3, c0, c2 (another source's order)
    def s(sid: str, instr: str) -> Sample:
        return Sample("b", sid, f"/d/{sid}.png", (100, 100), instr, Box(0, 0, 10, 10))

    loaded = [s("o1", "open"), s("o3", "other"), s("c0", "close"), s("c2", "close")]
    log = _lmms(tmp_path / "s.jsonl", [_doc(2, "close", "[0.05, 0.05]", True)])  # the copy's c2
    matched = match_lines(read_lmms_eval(log), loaded)  # loaded[2] is c0, which says "close" too
    # its position names a sample with its instruction, but no line of an instruction of its own
    # shows the loaded order is the copy's: the line is ambiguous, never matched to c0 by chance
    assert matched.lines == {} and [ids for _, ids in matched.ambiguous] == [["c0", "c2"]]
    assert matched.positions.startswith("no line whose instruction only one sample has shows")
    # with a line that shows it (o1 at position 1 in the copy's order), positions are used
    in_order = [loaded[i] for i in (2, 0, 3, 1)]  # c0, o1, c2, o3
    log = _lmms(
        tmp_path / "s.jsonl", [_doc(2, "close", "[0.05, 0.05]", True), _doc(1, "open", "[0.05, 0.05]", True)]
    )
    report = import_log("lmms_eval", log, in_order, NORM_1)
    assert report.matched.lines["c2"].line == 1 and report.matched.by_position == 1


def test_lmms_eval_bad_lines_are_named(tmp_path: Path) -> None:
    for line, why in [
        ({"target": "x", "filtered_resps": "a"}, r"no 'doc_id'"),
        ({"doc_id": -1, "target": "x", "filtered_resps": "a"}, r"doc_id must be a row number"),
        ({"doc_id": 0, "target": "x", "filtered_resps": ["a", "b"]}, r"filtered_resps holds 2 answers"),
        (
            {"doc_id": 0, "target": "x", "filtered_resps": "a", "m_acc": {"correct": True},
             "n_acc": {"correct": False}},
            r"its metric records disagree on correct \(m_acc, n_acc\)",
        ),
    ]:  # fmt: skip
        log = _lmms(tmp_path / "s.jsonl", [_doc(0, "open menu", "[0.1, 0.15]", True), line])
        with pytest.raises(GgeError, match=rf"^{log}:2: {why}"):
            import_log("lmms_eval", log, _samples(), NORM_1)
