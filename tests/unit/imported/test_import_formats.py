"""``gge import``: each format's fixture log, built from its published schema, every case planted.

Planted on one fixture benchmark of 8 samples (hand-counted below):
- ``a-0``: hit, its line without an id, the screenshot written as an absolute cluster path;
- ``a-1`` and ``b-1``: the same file name and instruction in two folders (the path tail decides);
- ``d-0``/``d-1``: one (screenshot, instruction) pair twice with different boxes (the log's box decides);
- ``e-0``/``e-1``: one pair twice with the same box (interchangeable: matched in order);
- ``f-0``: not in the file;
- a line for no sample (unmatched, named by line), and a point rounded onto a box edge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gge.errors import GgeError
from gge.models.imported import import_log
from gge.models.imported.lines import LogLine, match_lines
from gge.types import Absent, Box, Polygon, Sample


def _samples() -> list[Sample]:
    def s(sid: str, folder: str, instr: str, box: Any) -> Sample:
        return Sample("b", sid, f"/data/b/images/{folder}/shot.png", (100, 80), instr, box)

    return [
        s("a-0", "app_a", "open menu", Box(10, 10, 20, 20)),
        s("a-1", "app_a", "close it", Box(30, 30, 40, 40)),
        s("b-1", "app_b", "close it", Box(50, 50, 60, 60)),
        s("d-0", "app_d", "click the tab", Box(0, 0, 10, 10)),
        s("d-1", "app_d", "click the tab", Box(70, 0, 80, 10)),
        s("e-0", "app_e", "press OK", Box(5, 5, 15, 15)),
        s("e-1", "app_e", "press OK", Box(5, 5, 15, 15)),
        s("f-0", "app_f", "scroll down", Box(1, 1, 2, 2)),
    ]


def _sspro(
    path: str, instr: str, box: list[float], pred: list[float] | None, verdict: str, **more: Any
) -> dict:
    return {
        "img_path": path, "group": "Dev", "platform": "windows", "application": "x", "lang": "en",
        "instruction_style": "instruction", "prompt_to_evaluate": instr, "gt_type": "positive",
        "ui_type": "icon", "task_filename": "x", "pred": pred, "raw_response": "r", "bbox": box,
        "correctness": verdict, **more,
    }  # fmt: skip


def _official_details() -> list[dict[str, Any]]:
    return [
        _sspro("/cluster/u/imgs/app_a/shot.png", "open menu", [10, 10, 20, 20], [15, 15], "correct"),
        _sspro("./data/images/app_b/shot.png", "close it", [50, 50, 60, 60], [0, 0], "wrong"),
        _sspro("./data/images/app_a/shot.png", "close it", [30, 30, 40, 40], None, "wrong_format"),
        _sspro("imgs/app_d/shot.png", "click the tab", [70, 0, 80, 10], [75, 5], "correct"),
        _sspro("imgs/app_d/shot.png", "click the tab", [0, 0, 10, 10], [5, 5], "correct"),
        _sspro("imgs/app_e/shot.png", "press OK", [5, 5, 15, 15], [10, 10], "correct"),
        # rounded onto the right edge: the harness judged 15.4 (a miss) and logged 15 (a hit by the rule)
        _sspro("imgs/app_e/shot.png", "press OK", [5, 5, 15, 15], [15, 10], "wrong"),
        _sspro("imgs/app_z/other.png", "do a thing", [1, 1, 2, 2], [1, 1], "wrong"),
    ]


def _write(tmp_path: Path, name: str, value: Any, jsonl: bool = False) -> Path:
    path = tmp_path / name
    with path.open("w", encoding="utf-8") as f:
        if jsonl:
            for v in value:
                f.write(json.dumps(v) + "\n")
        else:
            json.dump(value, f, indent=4)
    return path


@pytest.mark.parametrize("layout", ["official_json", "jsonl_with_idx"])
def test_the_official_script_log_matches_each_planted_case(tmp_path: Path, layout: str) -> None:
    details = _official_details()
    if layout == "official_json":
        path = _write(tmp_path, "log.json", {"details": details, "metrics": {"overall": {}}})
        where = "details[7]"
    else:  # OmniParser's variant: the same records one per line, with idx
        path = _write(tmp_path, "log.json", [{**d, "idx": i} for i, d in enumerate(details)], jsonl=True)
        where = "log.json:8"
    report = import_log("sspro_log", path, _samples())
    m = report.matched
    assert {sid: line.line for sid, line in m.lines.items()} == {
        "a-0": 1, "b-1": 2, "a-1": 3, "d-1": 4, "d-0": 5, "e-0": 6, "e-1": 7,
    }  # fmt: skip
    assert m.interchangeable == 2 and m.ambiguous == [] and m.missing == ["f-0"]
    [(line, why)] = m.unmatched
    assert line.line == 8 and where in line.where and "other.png" in why
    # verdicts: 7 matched, 6 agree; the rounded point on e-1's edge is the one that differs
    assert (report.agree, [(d.sample, d.log, d.gge, d.cause) for d in report.disagree]) == (
        6, [("e-1", False, True, "rounded")],
    )  # fmt: skip
    assert report.hits == 5 and report.samples == 8
    by_id = {r["id"]: r for r in report.records}
    assert by_id["a-1"]["candidates"] == ["unparsed"] and by_id["a-1"]["format_error"] is True
    assert by_id["a-0"]["candidates"] == [[15.0, 15.0]] and by_id["a-0"]["imported"]["correct"] is True
    text = "\n".join(report.summary())
    assert "1 unmatched" in text and "1 samples not in the file" in text and "not in the file: f-0" in text
    assert "gge's rule: 71.43% (5/7 matched lines); 62.50% over the release's 8 samples" in text
    # the harness's own figure is over all its lines: a-0, d-1, d-0, e-0 of 8
    assert "the log's own: 50.00% (4/8 of its counted lines)" in text


def test_mai_server_lines_read_incorrect_and_match_by_id(tmp_path: Path) -> None:
    def line(
        sid: str, folder: str, instr: str, box: list[int], pred: list[float] | None, verdict: str
    ) -> dict:
        return {
            "img_filename": f"{folder}/shot.png", "img_size": [100, 80], "bbox": box, "instruction": instr,
            "instruction_cn": "", "id": sid, "ui_type": "icon", "group": "Dev", "application": "x",
            "platform": "windows", "dataset_source": "x.json", "raw_response": "<answer>[1,2]</answer>",
            "pred": pred, "pred_norm": None if pred is None else [pred[0] / 100, pred[1] / 80],
            "correctness": verdict,
        }  # fmt: skip

    path = _write(
        tmp_path,
        "SSPro.jsonl",
        [
            line("b-1", "app_b", "close it", [50, 50, 60, 60], [55, 55], "correct"),
            line("a-1", "app_a", "close it", [30, 30, 40, 40], [0, 0], "incorrect"),
            # an id the release has, but another screenshot: matched by name and instruction instead
            line("d-0", "app_a", "open menu", [10, 10, 20, 20], [12, 12], "correct"),
        ],
        jsonl=True,
    )
    report = import_log("sspro_log", path, _samples())
    assert {sid: ln.line for sid, ln in report.matched.lines.items()} == {"a-0": 3, "a-1": 2, "b-1": 1}
    assert report.agree == 3 and report.disagree == []


def test_gelato_log_refusals_polygons_and_a_box_not_the_release(tmp_path: Path) -> None:
    samples = [
        Sample("o", "r-0", "/d/r.png", (100, 80), "add a middle name", Absent()),
        Sample("o", "p-0", "/d/p.png", (100, 80), "the slider", Polygon(((10, 10), (30, 10), (20, 30)))),
        Sample("o", "b-0", "/d/b.png", (100, 80), "the button", Box(40, 40, 50, 50)),
        Sample("o", "c-0", "/d/c.png", (100, 80), "the checkbox", Box(60, 60, 70, 70)),
    ]

    def result(
        name: str, instr: str, click: list[float] | None, ok: bool, bbox: list[float], resp: str
    ) -> dict:
        return {
            "img_filename": name, "instruction": instr, "response": resp, "is_correct": ok,
            "predicted_click": click, "error_msg": None, "bbox": bbox,
            "original_resolution": [100, 80], "resized_resolution": [100, 80],
        }  # fmt: skip

    log = {
        "accuracy": 0.75, "correct": 3, "total": 4, "errors": 0, "metadata": {"model_type": "qwen3"},
        "sample_results": [
            result("r.png", "add a middle name", None, True, [0, 0, 0, 0], "refusal"),
            result("p.png", "the slider", [20, 15], True, [10, 10, 30, 10, 20, 30], "(200, 187)"),
            # the log's box is not the release's (an annotation converted wrongly): gge says miss
            result("b.png", "the button", [55, 45], True, [40, 40, 60, 50], "(550, 562)"),
        ],
    }  # fmt: skip
    report = import_log("gelato", _write(tmp_path, "g.json", log), samples)
    by_id = {r["id"]: r for r in report.records}
    assert by_id["r-0"]["candidates"] == [None] and by_id["r-0"]["format_error"] is False
    assert report.matched.missing == ["c-0"]
    assert report.agree == 2 and [(d.sample, d.cause) for d in report.disagree] == [("b-0", "data")]
    assert report.hits == 2  # the refusal and the polygon


def test_an_ambiguous_line_is_listed_never_guessed() -> None:
    samples = _samples()
    # d-0 and d-1 share file name and instruction; a line without a box fits both
    line = LogLine("log:4", 4, None, "x/app_d/shot.png", "click the tab", None, (5.0, 5.0), "", True)
    m = match_lines([line], samples)
    assert m.lines == {} and [(ln.line, ids) for ln, ids in m.ambiguous] == [(4, ["d-0", "d-1"])]


def test_a_second_line_for_one_sample_is_unmatched_and_names_the_first() -> None:
    first = LogLine("log:1", 1, "a-0", None, None, None, (15.0, 15.0), "", True)
    again = LogLine("log:2", 2, "a-0", None, None, None, (15.0, 15.0), "", True)
    m = match_lines([first, again], _samples())
    assert list(m.lines) == ["a-0"] and [(ln.line, why) for ln, why in m.unmatched] == [
        (2, "its sample a-0 is already line 1's")
    ]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"img_path": "a.png", "prompt_to_evaluate": "x"}, "details[0]: no 'correctness'"),
        ({"img_path": "a.png", "correctness": "right"}, "details[0]: correctness must be one of"),
        ({"img_path": "a.png", "correctness": "correct", "pred": [1]}, "details[0]: pred must be [x, y]"),
    ],
)
def test_a_bad_record_is_one_line_naming_file_record_and_key(
    tmp_path: Path, record: dict, message: str
) -> None:
    path = _write(tmp_path, "log.json", {"details": [record]})
    with pytest.raises(GgeError, match=r"log\.json: " + message.replace("[", r"\[").replace("]", r"\]")):
        import_log("sspro_log", path, _samples())


def test_a_file_of_another_format_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "g.json", {"details": []})
    with pytest.raises(GgeError, match="not a Gelato log"):
        import_log("gelato", path, _samples())
    with pytest.raises(GgeError, match="unknown log format 'vlmeval'"):
        import_log("vlmeval", path, _samples())


def test_a_line_that_earlier_lines_would_settle_by_elimination_is_still_ambiguous() -> None:
    samples = _samples()
    with_box = LogLine(
        "log:1", 1, None, "x/app_d/shot.png", "click the tab", (0, 0, 10, 10), (5.0, 5.0), "", True
    )
    no_box = LogLine("log:2", 2, None, "x/app_d/shot.png", "click the tab", None, (75.0, 5.0), "", True)
    m = match_lines([with_box, no_box], samples)
    assert list(m.lines) == ["d-0"] and [(ln.line, ids) for ln, ids in m.ambiguous] == [(2, ["d-0", "d-1"])]


def test_a_whole_pixel_point_far_from_the_target_is_not_called_rounded(tmp_path: Path) -> None:
    details = [_sspro("imgs/app_a/shot.png", "open menu", [10, 10, 20, 20], [20, 60], "correct")]
    report = import_log("sspro_log", _write(tmp_path, "log.json", {"details": details}), _samples())
    assert [(d.sample, d.cause) for d in report.disagree] == [("a-0", "rule")]  # x on the edge, y 40 px below


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe{}", r"log\.json: not UTF-8 text \(byte 0\)"),
        (b"  \n", r"log\.json: the log is empty"),
        (b'{"details": [{"img_path": "a.png", "correctness": ["correct"]}]}', r"correctness must be one of"),
        (b'{"details": [{"img_path": "a.png", "correctness": "correct", "bbox": [1, 2, NaN, 4]}]}', "finite"),
        (
            b'{"details": [{"image_path": 7, "correctness": "correct"}]}',
            r"details\[0\]: image_path must be a str",
        ),
    ],
)
def test_bad_bytes_and_values_are_one_line_errors(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "log.json"
    path.write_bytes(content)
    with pytest.raises(GgeError, match=message):
        import_log("sspro_log", path, _samples())


def test_a_one_line_jsonl_log_is_one_record(tmp_path: Path) -> None:
    line = _sspro("imgs/app_a/shot.png", "open menu", [10, 10, 20, 20], [15, 15], "correct")
    path = _write(tmp_path, "log.jsonl", [line], jsonl=True)
    assert list(import_log("sspro_log", path, _samples()).matched.lines) == ["a-0"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"resized_resolution": [0, 40]}, "resized_resolution must be"),
        ({"resized_resolution": "50x40"}, "resized_resolution must be"),
    ],
)
def test_a_bad_gelato_frame_is_a_one_line_error(tmp_path: Path, extra: dict, message: str) -> None:
    row = {
        "img_filename": "shot.png",
        "instruction": "x",
        "is_correct": True,
        "predicted_click": None,
        **extra,
    }
    path = _write(tmp_path, "g.json", {"sample_results": [row]})
    with pytest.raises(GgeError, match=r"g\.json: sample_results\[0\]: " + message):
        import_log("gelato", path, _samples())
