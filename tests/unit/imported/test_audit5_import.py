"""``gge import``: the shapes the planted fixtures lacked (audit 5's survivors in the log readers).

Negative lines the script judged wrong, fractional points, points a pixel off a box, a Gelato
``Refusal``, malformed ``pred``/``bbox``, ClawGUI lines without ``counted_in_accuracy`` or with a
verdict that is no boolean, lines without a verdict, and refusals of targets that count none. Each
expectation is counted by hand on a one-to-three-sample benchmark with a 10x10 screenshot and the
target box (1, 1, 4, 4).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gge.errors import GgeError
from gge.models.imported import ImportReport, as_answer, import_log
from gge.models.imported.generic import parse_columns
from gge.models.imported.reread import reading
from gge.types import Absent, Box, Region, Sample

BOX = Box(1, 1, 4, 4)
ABS = reading(convention="abs_original")  # a raw "(x, y)" read as original pixels


def _sample(sid: str = "s-0", region: Region = BOX) -> Sample:
    return Sample("b", sid, f"/d/{sid}.png", (10, 10), f"click {sid}", region)


def _sspro(tmp_path: Path, sample: Sample, verdict: str, pred: list[Any] | None, **more: Any) -> Path:
    """A one-record official-script log of ``sample`` (its id, screenshot and instruction)."""
    record = {
        "id": sample.id, "img_path": Path(sample.image_path).name, "prompt_to_evaluate": sample.instruction,
        "gt_type": "positive", "pred": pred, "raw_response": "", "correctness": verdict, **more,
    }  # fmt: skip
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"details": [record]}))
    return path


def _gelato(tmp_path: Path, sample: Sample, ok: bool, click: list[float] | None, response: str) -> Path:
    result = {"img_filename": Path(sample.image_path).name, "instruction": sample.instruction,
              "response": response, "is_correct": ok, "predicted_click": click}  # fmt: skip
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"sample_results": [result]}))
    return path


def _clawgui(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / "predictions_judge.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _claw(sample: Sample, raw: str, **more: Any) -> dict[str, Any]:
    return {"id": sample.id, "question": sample.instruction, "answer": [1, 1, 4, 4],
            "image": f"image/{Path(sample.image_path).name}", "qwen3vl_infer": raw, **more}  # fmt: skip


def _causes(report: ImportReport) -> list[tuple[str, bool, bool, str]]:
    return [(d.sample, d.log, d.gge, d.cause) for d in report.disagree]


# ScreenSpot-Pro script logs: each verdict as a replay line


@pytest.mark.parametrize(
    ("gt_type", "pred", "verdict", "candidate", "format_error", "hit"),
    [
        ("positive", [8, 8], "wrong", [8.0, 8.0], False, False),  # a miss is no format error
        ("positive", None, "wrong_format", "unparsed", True, False),
        ("negative", None, "correct", None, False, True),  # the script's "negative": an abstention
        ("negative", None, "wrong", "unparsed", True, False),  # no point, no abstention: no hit
        ("negative", [2, 2], "wrong", [2.0, 2.0], False, False),  # a point where nothing is
    ],
)
def test_each_script_verdict_is_its_replay_line(
    tmp_path: Path,
    gt_type: str,
    pred: list[int] | None,
    verdict: str,
    candidate: Any,
    format_error: bool,
    hit: bool,
) -> None:
    sample = _sample(region=BOX if gt_type == "positive" else Absent())
    report = import_log("sspro_log", _sspro(tmp_path, sample, verdict, pred, gt_type=gt_type), [sample])
    [record] = report.records
    assert (record["candidates"], record["format_error"], report.hits) == (
        [candidate],
        format_error,
        int(hit),
    )
    assert (report.agree, report.disagree) == (1, [])  # the script's verdict is gge's on each
    assert "carry no verdict" not in "\n".join(report.summary())  # every line has one


def test_a_negative_refusal_stays_one_when_answers_are_read_again(tmp_path: Path) -> None:
    sample = _sample(region=Absent())
    log = _sspro(tmp_path, sample, "correct", None, gt_type="negative", raw_response="negative")
    report = import_log("sspro_log", log, [sample], ABS)
    [record] = report.records
    assert (record["candidates"], record["format_error"], report.hits, report.agree) == ([None], False, 1, 1)


def test_a_format_error_gge_reads_a_point_from_is_no_format_error(tmp_path: Path) -> None:
    sample = _sample()
    log = _sspro(tmp_path, sample, "wrong_format", None, raw_response="(2, 2)", bbox=[1, 1, 4, 4])
    [record] = import_log("sspro_log", log, [sample], ABS).records
    assert (record["candidates"], record["format_error"]) == ([[2.0, 2.0]], False)


@pytest.mark.parametrize(
    ("bbox", "pred", "verdict", "cause"),
    [
        # no box in the line: nothing shows the log's target is another, so not "data"
        (None, [2.5, 2.5], "wrong", "rule"),
        # on the top edge, but x is fractional: the log did not round this point
        ([1, 1, 4, 4], [2.5, 1.0], "wrong", "rule"),
        # whole pixels exactly one pixel right of the edge x2 = 4: within a pixel, so "rounded"
        ([1, 1, 4, 4], [5, 2], "correct", "rounded"),
        ([1, 1, 4, 4], [5, 3], "correct", "rounded"),
        ([1, 1, 4, 4], [0, 2], "correct", "rounded"),  # a pixel left of x1
        ([1, 1, 4, 4], [2, 0], "correct", "rounded"),  # a pixel above y1
        ([1, 1, 4, 4], [2, 5], "correct", "rounded"),  # a pixel below y2
        # two pixels off: not rounding
        ([1, 1, 4, 4], [6, 2], "correct", "rule"),
        ([1, 1, 4, 4], [2, 6], "correct", "rule"),
        ([1, 1, 9, 4], [5, 2], "correct", "data"),  # the log's box is not the release's
    ],
)
def test_the_cause_of_a_disagreement(
    tmp_path: Path, bbox: list[int] | None, pred: list[float], verdict: str, cause: str
) -> None:
    sample = _sample()
    more = {} if bbox is None else {"bbox": bbox}
    report = import_log("sspro_log", _sspro(tmp_path, sample, verdict, pred, **more), [sample])
    inside = 1 <= pred[0] <= 4 and 1 <= pred[1] <= 4
    assert _causes(report) == [("s-0", verdict == "correct", inside, cause)]


@pytest.mark.parametrize(
    ("more", "message"),
    [
        ({"pred": [1, 2, 3]}, r"pred must be \[x, y\]"),
        ({"pred": [True, 2]}, r"pred must be \[x, y\]"),
        ({"pred": [1, 2], "bbox": [1, 2]}, "bbox must be a list of at least 4 finite numbers"),
        ({"pred": [1, 2], "bbox": [1, 2, 3, False]}, "bbox must be a list of at least 4 finite numbers"),
    ],
)
def test_a_malformed_point_or_box_is_one_line(tmp_path: Path, more: dict[str, Any], message: str) -> None:
    sample = _sample()
    pred = more.pop("pred")
    with pytest.raises(GgeError, match=r"log\.json: details\[0\]: " + message):
        import_log("sspro_log", _sspro(tmp_path, sample, "correct", pred, **more), [sample])


def test_a_record_with_only_an_id_is_matched_by_it(tmp_path: Path) -> None:
    samples = [_sample("3"), _sample("s-1")]
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"details": [{"id": 3, "pred": [2, 2], "correctness": "correct"}]}))
    report = import_log("sspro_log", path, samples)
    assert report.read[0].id == "3" and {sid: ln.line for sid, ln in report.matched.lines.items()} == {"3": 1}


def test_a_json_list_of_records_is_read_as_the_details(tmp_path: Path) -> None:
    sample = _sample()
    _sspro(tmp_path, sample, "correct", [2, 2])
    path = tmp_path / "log.json"
    path.write_text(json.dumps(json.loads(path.read_text())["details"]))  # the records without the object
    report = import_log("sspro_log", path, [sample])
    assert (list(report.matched.lines), report.hits) == (["s-0"], 1)


def test_a_raw_answer_that_is_json_keeps_its_text(tmp_path: Path) -> None:
    sample = _sample()
    log = _sspro(tmp_path, sample, "correct", [2, 2], raw_response={"action": "点击", "xy": [2, 2]})
    assert import_log("sspro_log", log, [sample]).records[0]["raw"] == '{"action": "点击", "xy": [2, 2]}'


def test_a_log_no_line_of_which_matches_is_refused_with_the_first_lines_reason(tmp_path: Path) -> None:
    sample = _sample()
    other = Sample("b", "s-1", "/d/x.png", (10, 10), "click s-1", BOX)
    log = _sspro(tmp_path, other, "correct", [2, 2])  # another benchmark's screenshot and instruction
    body = json.loads(log.read_text())
    del body["details"][0]["id"]
    log.write_text(json.dumps(body))
    with pytest.raises(GgeError) as e:
        import_log("sspro_log", log, [sample])
    assert str(e.value) == (
        f"{log}: details[0]: no line of the log matches a b sample "
        "(no sample has screenshot x.png and instruction 'click s-1')"
    )
    # a line without a box that fits two samples with other targets is ambiguous: said so
    twins = [Sample("b", f"t-{i}", "/d/t.png", (10, 10), "click t", Box(i, i, 4, 4)) for i in range(2)]
    log.write_text(json.dumps({"details": [{"img_path": "t.png", "prompt_to_evaluate": "click t",
                                            "pred": [2, 2], "correctness": "correct"}]}))  # fmt: skip
    with pytest.raises(GgeError, match=r"details\[0\]: no line of the log matches a b sample \(ambiguous\)"):
        import_log("sspro_log", log, twins)


# Gelato logs


def test_a_capitalised_refusal_is_an_abstention(tmp_path: Path) -> None:
    sample = _sample(region=Absent())
    report = import_log("gelato", _gelato(tmp_path, sample, True, None, "Refusal"), [sample])
    [record] = report.records
    assert (record["candidates"], record["format_error"], report.hits, report.agree) == ([None], False, 1, 1)


def test_a_refusal_misses_a_target_that_counts_no_abstention(tmp_path: Path) -> None:
    sample = _sample(region=Absent(abstention_hits=False))  # OSWorld-G read with refusals=miss
    report = import_log("gelato", _gelato(tmp_path, sample, True, None, "refusal"), [sample])
    assert report.records[0]["candidates"] == [None] and report.hits == 0
    assert _causes(report) == [("s-0", True, False, "rule")]


def test_a_negative_point_is_an_abstention_in_gges_accuracy(tmp_path: Path) -> None:
    sample = _sample(region=Absent())
    report = import_log("gelato", _gelato(tmp_path, sample, True, [-1.28, -0.72], "(-1.28, -0.72)"), [sample])
    assert (report.hits, report.agree, report.disagree) == (1, 1, [])
    assert "gge's rule: 100.00% (1/1 matched lines)" in report.headlines()


def test_a_point_on_an_axis_is_no_abstention() -> None:
    assert as_answer((0.0, -1.0), False) == ((0.0, -1.0), False)
    assert as_answer((-1.0, 0.0), False) == ((-1.0, 0.0), False)
    assert as_answer((-0.5, -0.5), False) == (None, True)


def test_a_click_whose_text_says_refusal_is_read_again(tmp_path: Path) -> None:
    sample = _sample()
    log = _gelato(tmp_path, sample, True, [2, 2], "(8, 8), no refusal needed")
    report = import_log("gelato", log, [sample], ABS)
    assert report.read[0].refused is False
    assert report.records[0]["candidates"] == [[8.0, 8.0]] and report.hits == 0


def test_the_logs_verdict_is_judged_on_its_own_point_not_gges_reading(tmp_path: Path) -> None:
    sample = _sample()
    report = import_log("gelato", _gelato(tmp_path, sample, True, [2, 2], "(8, 8)"), [sample], ABS)
    # (2, 2) hits as the log says; gge writes and scores (8, 8), a miss, and counts it a reading difference
    assert (report.agree, report.disagree, report.hits) == (1, [], 0)
    assert report.reread is not None and [sid for sid, _ in report.reread.differ] == ["s-0"]


# ClawGUI predictions


def test_the_logs_own_accuracy_counts_the_lines_its_harness_counted(tmp_path: Path) -> None:
    samples = [_sample("s-0"), _sample("s-1")]
    path = _clawgui(
        tmp_path,
        [
            _claw(samples[0], "(2, 2)", correct=True),  # no counted_in_accuracy: counted (not OSWorld-G)
            _claw(samples[1], "(8, 8)", correct=False, counted_in_accuracy=False),
        ],
    )
    report = import_log("clawgui", path, samples, ABS)
    assert [ln.counted for ln in report.read] == [True, False]
    headline = report.headlines()
    assert "the log's own: 100.00% (1/1 of its counted lines)" in headline
    assert "gge's rule: 50.00% (1/2 matched lines)" in headline


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"qwen3vl_infer": "(2, 2)", "uitars_infer": "(3, 3)"}, r"expected one '<model_type>_infer' answer"),
        ({"correct": "yes"}, "correct must be true or false, got 'yes'"),
        ({"correct": 1}, "correct must be true or false, got 1"),
        ({"answer": [1, 2]}, "answer must be a list of at least 4 finite numbers"),
        ({"counted_in_accuracy": "no"}, "counted_in_accuracy must be true or false, got 'no'"),
    ],
)
def test_a_bad_clawgui_line_is_one_line(tmp_path: Path, line: dict[str, Any], message: str) -> None:
    sample = _sample()
    path = _clawgui(tmp_path, [{**_claw(sample, "(2, 2)"), **line}])
    with pytest.raises(GgeError, match=r"predictions_judge\.jsonl:1: " + message):
        import_log("clawgui", path, [sample], ABS)


def test_an_empty_clawgui_list_needs_no_reading(tmp_path: Path) -> None:
    path = tmp_path / "predictions.json"
    path.write_text("[]")
    report = import_log("clawgui", path, [_sample()])  # no line needs one: not asked for --preset
    assert (report.read, report.records, report.matched.missing) == ([], [], ["s-0"])


# a table without verdicts


def test_a_line_without_a_verdict_is_unjudged_not_a_disagreement(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"sid": "s-0", "xy": [8, 8]}) + "\n")
    report = import_log("generic", path, [_sample()], columns=parse_columns("id=sid,point=xy"))
    assert (report.unjudged, report.agree, report.disagree, report.hits) == (1, 0, [], 0)
    said = "\n".join(report.summary())
    assert "gge's rule gives the same on 0 of 0 matched lines (1 lines carry no verdict)" in said
    assert "differ where" not in said


def test_both_copies_of_a_record_under_gt_type_all_match_their_own_sample(tmp_path: Path) -> None:
    """The script keeps X's id on its negative copy too; gge's negative copy is X_negative (one id a copy)."""
    positive = _sample("s-0")
    negative = Sample("b", "s-0_negative", positive.image_path, (10, 10), positive.instruction, Absent())
    both = [
        {"id": "s-0", "img_path": "s-0.png", "prompt_to_evaluate": "click s-0", "gt_type": gt,
         "pred": pred, "raw_response": "", "correctness": verdict}
        for gt, pred, verdict in (("positive", [2, 2], "correct"), ("negative", None, "correct"))
    ]  # fmt: skip
    for order in (both, both[::-1]):  # whichever copy the log holds first
        log = tmp_path / "log.json"
        log.write_text(json.dumps({"details": order}))
        report = import_log("sspro_log", log, [positive, negative])
        by_id = {r["id"]: r["candidates"] for r in report.records}
        assert by_id == {"s-0": [[2.0, 2.0]], "s-0_negative": [None]}  # a point on the box, an abstention
        assert (report.hits, report.agree, report.disagree) == (2, 2, [])


# from an unbiased mutant sample (seed 11)


def test_a_whole_pixel_point_well_inside_the_box_is_the_rule_not_rounding(tmp_path: Path) -> None:
    """(3, 5) in the box (1, 1)-(10, 10) is two pixels from its nearest edge: no rounding moved it."""
    sample = Sample("b", "s-0", "/d/s-0.png", (20, 20), "click s-0", Box(1, 1, 10, 10))
    report = import_log("sspro_log", _sspro(tmp_path, sample, "wrong", [3, 5], bbox=[1, 1, 10, 10]), [sample])
    assert _causes(report) == [("s-0", False, True, "rule")]


def test_a_clawgui_list_names_its_records_by_position_and_keeps_their_ids(tmp_path: Path) -> None:
    from gge.models.imported.formats import read_clawgui

    sample = _sample()
    path = tmp_path / "predictions.json"
    no_id = {k: v for k, v in _claw(sample, "(2, 2)").items() if k != "id"}
    path.write_text(json.dumps([_claw(sample, "(2, 2)"), no_id]))
    assert [(ln.where, ln.line, ln.id) for ln in read_clawgui(path)] == [
        (f"{path}:1", 1, "s-0"),
        (f"{path}:2", 2, None),
    ]
    path.write_text(json.dumps([_claw(sample, "(2, 2)"), {**no_id, "correct": "yes"}]))
    with pytest.raises(GgeError, match=rf"{path.name}:2: correct must be true or false"):
        read_clawgui(path)


def test_a_point_two_pixels_left_of_the_box_is_the_rule_not_rounding(tmp_path: Path) -> None:
    """From an unbiased mutant sample (seed 37): (3, 6) is two pixels left of the box (5, 5)-(9, 9)."""
    sample = Sample("b", "s-0", "/d/s-0.png", (20, 20), "click s-0", Box(5, 5, 9, 9))
    report = import_log("sspro_log", _sspro(tmp_path, sample, "correct", [3, 6], bbox=[5, 5, 9, 9]), [sample])
    assert _causes(report) == [("s-0", True, False, "rule")]
