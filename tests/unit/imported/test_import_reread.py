"""``gge import --preset/--convention``: raw answers read again, set against the log's own points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gge.errors import GgeError
from gge.models.imported import import_log
from gge.models.imported.reread import reading
from gge.types import Box, Sample

SIZE = (100, 80)


def _samples(n: int) -> list[Sample]:
    return [Sample("b", f"s-{i}", f"/d/{i}.png", SIZE, f"click {i}", Box(10, 10, 30, 30)) for i in range(n)]


def _gelato(tmp_path: Path, rows: list[tuple[str, list[float] | None, list[int] | None]]) -> Path:
    results = []
    for i, (response, click, resized) in enumerate(rows):
        row = {
            "img_filename": f"{i}.png",
            "instruction": f"click {i}",
            "response": response,
            "is_correct": click is not None and 10 <= click[0] <= 30 and 10 <= click[1] <= 30,
            "predicted_click": click,
            "bbox": [10, 10, 30, 30],
        }
        if resized is not None:
            row["resized_resolution"] = resized
        results.append(row)
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"sample_results": results}))
    return path


def test_norm_1000_answers_read_again_and_a_point_the_harness_found_in_no_point(tmp_path: Path) -> None:
    log = _gelato(
        tmp_path,
        [
            ("(200, 250)", [20.0, 20.0], None),  # 200/1000 x 100, 250/1000 x 80: the log's own
            ("(150, 150)", [15.0, 12.0], None),  # (15, 12) exactly, as the log says
            ("I would click the icon", [0.0, 0.0], None),  # the harness made (0, 0) of no point
        ],
    )
    report = import_log("gelato", log, _samples(3), reading("qwen3_vl"))
    assert report.reread is not None
    # (150, 150) in norm_1000 is (15, 12) exactly: the same; the third has no point in it
    assert (report.reread.lines, report.reread.same) == (3, 2)
    assert report.reread.differ == [("s-2", None)]
    by_id = {r["id"]: r for r in report.records}
    assert by_id["s-0"]["candidates"] == [[20.0, 20.0]] and by_id["s-0"]["imported"]["point"] == [20.0, 20.0]
    assert by_id["s-2"]["candidates"] == ["unparsed"] and by_id["s-2"]["format_error"] is True
    assert report.hits == 2  # (20, 20) and (15, 12) hit the box; the unread answer does not
    text = "\n".join(report.summary())
    assert "raw answers read again (preset qwen3_vl): 2 of 3 points are the log's own" in text
    assert "1 differ; 1 where one side has no point: s-2" in text


def test_resized_pixel_answers_show_a_frame_bug_and_a_clamp(tmp_path: Path) -> None:
    # each line records its frame: the screenshot was resized to 50x40 (half) before the model saw it
    log = _gelato(
        tmp_path,
        [
            ("(10, 10)", [20.0, 20.0], [50, 40]),  # mapped to original pixels: the log's own
            ("(12, 9)", [12.0, 9.0], [50, 40]),  # the log kept the resized-frame point: a frame bug
            ("(60, 10)", [100.0, 20.0], [50, 40]),  # (120, 20) is off the screen; the log clamped it
        ],
    )
    report = import_log("gelato", log, _samples(3), reading(convention="abs_resized"))
    rr = report.reread
    assert rr is not None and rr.same == 1
    assert [sid for sid, _ in rr.differ] == ["s-1", "s-2"]
    assert rr.differ[0][1] == pytest.approx(((24 - 12) ** 2 + (18 - 9) ** 2) ** 0.5)
    assert rr.frame == ["s-1"] and rr.clamped == ["s-2"]
    # the replay lines carry what the model said: (24, 18) hits, the log's (12, 9) did not
    assert [r["candidates"] for r in report.records] == [[[20.0, 20.0]], [[24.0, 18.0]], [[120.0, 20.0]]]
    assert report.hits == 2


def test_a_reading_needs_a_preset_or_a_known_convention() -> None:
    with pytest.raises(GgeError, match="needs --preset NAME or --convention NAME"):
        reading()
    with pytest.raises(GgeError, match="unknown convention 'norm_100'"):
        reading(convention="norm_100")
    assert reading("ui_tars_1_5").convention == "abs_resized"
    assert reading("ui_tars_1_5", "norm_1000").convention == "norm_1000"


def test_clawgui_lines_keep_no_point_and_are_read_from_their_raw_answers(tmp_path: Path) -> None:
    from gge.types import Absent

    samples = [*_samples(2), Sample("b", "r-0", "/d/r.png", SIZE, "add a name", Absent())]

    def line(
        sid: str, image: str, question: str, answer: list[int], raw: str, ok: bool, counted: bool
    ) -> str:
        return json.dumps(
            {"id": sid, "question": question, "answer": answer, "image": f"image/ss/{image}",
             "image_size": list(SIZE), "qwen3vl_infer": raw, "correct": ok, "counted_in_accuracy": counted}
        )  # fmt: skip

    path = tmp_path / "predictions_judge.jsonl"
    path.write_text(
        "\n".join(
            [
                line("c0", "0.png", "click 0", [10, 10, 30, 30], "(200, 250)", True, True),  # (20, 20): a hit
                line(
                    "c1", "1.png", "click 1", [10, 10, 30, 30], "(900, 900)", False, True
                ),  # (90, 72): a miss
                line("c2", "r.png", "add a name", [0, 0, 0, 0], "[-1, -1]", True, False),  # a refusal
            ]
        )
        + "\n"
    )
    with pytest.raises(GgeError, match="keeps the model's raw answers but no parsed point: name --preset"):
        import_log("clawgui", path, samples)
    report = import_log("clawgui", path, samples, reading("qwen3_vl"))
    assert {sid: ln.line for sid, ln in report.matched.lines.items()} == {"s-0": 1, "s-1": 2, "r-0": 3}
    assert [r["candidates"] for r in report.records] == [[[20.0, 20.0]], [[90.0, 72.0]], [None]]
    assert report.agree == 3 and report.hits == 2  # the hit and the refusal of an absent target
    assert report.records[2]["imported"]["counted"] is False
    assert "the log keeps no point of its own to compare" in "\n".join(report.summary())


def test_a_preset_reads_resized_answers_in_the_frame_its_own_run_states(tmp_path: Path) -> None:
    """qwen2_5_vl states the screenshot resized with its prompt_max_pixels (99999999): 5120x2880 is
    5124x2884 (183 and 103 patches of 28), not the processor's 12.8 MP resize."""
    sample = Sample("b", "s-0", "/d/0.png", (5120, 2880), "click 0", Box(0, 0, 5120, 2880))
    log = tmp_path / "g.json"
    row = {"img_filename": "0.png", "instruction": "click 0", "response": "(1000, 500)", "is_correct": True,
           "predicted_click": [1000.0, 500.0], "bbox": [0, 0, 5120, 2880]}  # fmt: skip
    log.write_text(json.dumps({"sample_results": [row]}))
    report = import_log("gelato", log, [sample], reading("qwen2_5_vl"))
    [[point]] = [r["candidates"] for r in report.records]
    assert point == pytest.approx([1000 * 5120 / 5124, 500 * 2880 / 2884])
    assert (
        "frame: the log's resized size, else smart_resize factor 28, min_pixels 3136, max_pixels 99999999"
        in ("\n".join(report.summary()))
    )


def test_a_line_without_raw_text_keeps_the_logs_point_when_answers_are_read_again(tmp_path: Path) -> None:
    log = tmp_path / "g.json"
    row = {"img_filename": "0.png", "instruction": "click 0", "response": "", "is_correct": True,
           "predicted_click": [20.0, 20.0], "bbox": [10, 10, 30, 30]}  # fmt: skip
    log.write_text(json.dumps({"sample_results": [row]}))
    report = import_log("gelato", log, _samples(1), reading("qwen3_vl"))
    assert report.records[0]["candidates"] == [[20.0, 20.0]] and report.hits == 1
    assert report.reread is not None and report.reread.lines == 0


def test_a_clawgui_verdict_gge_reads_otherwise_is_named_a_reading_difference(tmp_path: Path) -> None:
    path = tmp_path / "predictions_judge.jsonl"
    # the harness judged (150, 150) wrong (its parser read another point); gge reads (15, 12): a hit
    path.write_text(
        json.dumps(
            {
                "id": "c0",
                "question": "click 0",
                "answer": [10, 10, 30, 30],
                "image": "image/0.png",
                "qwen3vl_infer": "(150, 150)",
                "correct": False,
            }
        )
        + "\n"
    )
    report = import_log("clawgui", path, _samples(1), reading("qwen3_vl"))
    assert [(d.sample, d.log, d.gge, d.cause) for d in report.disagree] == [("s-0", False, True, "reading")]
