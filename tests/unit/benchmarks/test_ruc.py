"""RUC: both release layouts, the records the released code leaves out, and deceptive clicks by hand.

Fixture records follow the card's fields (FORMATS.md, section 15). The replay plants, per deception
sample, a first candidate and a critic pick on the target, on the decoy, or elsewhere, and the
deceptive-click counts of ``first`` and ``critic`` are counted here by hand.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks import get_benchmark
from gge.benchmarks.ruc import CAVEAT, RUCOptions
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.metrics import scalar_metrics
from gge.types import Box

TARGET, DECOY = [10, 10, 30, 30], [50, 10, 70, 30]
ON_TARGET, ON_DECOY, ELSEWHERE = [20.0, 20.0], [60.0, 20.0], [90.0, 90.0]


def _rec(sid: int, kind: str = "Normal", **more: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": sid,
        "type": kind,
        "category": "fake_button" if kind == "Deception" else None,
        "url": None,
        "image_path": f"images/{sid}.png",
        "image_width": 100,
        "image_height": 100,
        "correct_box": {"bbox": TARGET, "bbox_norm": [0.1, 0.1, 0.3, 0.3]},
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": f"click {sid}"}],
    }
    if kind == "Deception":
        rec["dark_box"] = {"bbox": DECOY}
    rec.update(more)
    return rec


RECORDS = [
    _rec(1),
    _rec(2, "Deception"),
    _rec(3, "Deception"),
    _rec(4, "Deception"),
    _rec(5, correct_box={"bbox_norm": [0.1, 0.1, 0.2, 0.2]}),  # no bbox: left out
    _rec(6, "Deception", dark_box={"bbox": [20, 10, 40, 30]}),  # a decoy overlapping the target
    _rec(998),  # left out by its id, as the released code does
]


def _write(root: Path, name: str = "full.json", records: list[dict[str, Any]] = RECORDS) -> Path:
    (root / "images").mkdir(parents=True, exist_ok=True)
    for r in records:
        Image.new("RGB", (100, 100)).save(root / r["image_path"])
    if name.endswith(".jsonl"):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    else:
        (root / name).write_text(json.dumps(records))
    return root


def test_the_full_split_reads_with_decoys_and_leaves_out_what_the_code_does(tmp_path: Path) -> None:
    loaded = get_benchmark("ruc").load(_write(tmp_path / "ruc"), RUCOptions(revision="50dbd61"))
    assert [s.id for s in loaded.samples] == ["1", "2", "3", "4", "6"]
    normal, deceptive = loaded.samples[0], loaded.samples[1]
    assert normal.region == Box(10, 10, 30, 30) and normal.decoy is None
    assert deceptive.decoy == Box(50, 10, 70, 30) and deceptive.labels == {
        "type": "Deception",
        "category": "fake_button",
    }
    assert normal.labels == {"type": "Normal", "category": "none"} and normal.instruction == "click 1"
    assert normal.image_path == str(tmp_path / "ruc" / "images" / "1.png")
    s = loaded.summary
    assert s["variant"] == {"split": "full", "revision": "50dbd61"}
    assert s["notes"] == [
        "1 records without correct_box.bbox left out, as the released code does: 5",
        "record 998 left out, as the released code does (by its id)",
    ]
    assert get_benchmark("ruc").headline_caveat(RUCOptions()) == CAVEAT


def test_the_earlier_merged_jsonl_and_the_splits(tmp_path: Path) -> None:
    root = _write(tmp_path / "old", "merged.jsonl")
    loaded = get_benchmark("ruc").load(root, RUCOptions())  # full falls back to the earlier layout
    assert len(loaded.samples) == 5 and loaded.summary["variant"]["split"] == "merged"
    with pytest.raises(GgeError, match=r"ruc: annotation file not found: .*eval\.json \(split=eval\)"):
        get_benchmark("ruc").load(root, RUCOptions(split="eval"))
    with pytest.raises(GgeError, match=r"unknown ruc split 'test'"):
        get_benchmark("ruc").load(root, RUCOptions(split="test"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"type": "Fake"}, r"type must be Normal or Deception, got 'Fake'"),
        ({"dark_box": {"bbox": [1, 2, 3]}}, r"dark_box\.bbox must be 4 numbers"),
        ({"messages": [{"role": "system", "content": "s"}]}, r"messages has no user message with text"),
        ({"image_width": 0}, r"image_width and image_height must be positive integers"),
    ],
)
def test_a_bad_record_is_named(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    root = _write(tmp_path / "ruc", records=[_rec(1), _rec(2, **change)])
    with pytest.raises(GgeError, match=r"full\.json: record 1: " + message):
        get_benchmark("ruc").load(root, RUCOptions())


def test_deceptive_clicks_per_strategy_counted_by_hand(tmp_path: Path) -> None:
    root = _write(tmp_path / "ruc")
    # (first candidate, second candidate; the critic's scores pick the second)
    plan = {
        "1": (ON_TARGET, ON_DECOY),  # a normal sample: no decoy, never a deceptive click
        "2": (ON_DECOY, ON_TARGET),  # first: deceptive; critic: hit
        "3": (ON_DECOY, ON_DECOY),  # both deceptive
        "4": (ELSEWHERE, ON_DECOY),  # first: a plain miss; critic: deceptive
        "6": ([25.0, 20.0], ELSEWHERE),  # first: in the decoy and on the target: a hit, not deceptive
    }
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"benchmark": "ruc", "id": i, "candidates": [a, b], "scores": [0.1, 0.9]}) + "\n"
            for i, (a, b) in plan.items()
        )
    )
    args = [f"bench.ruc.root={root}", f"model.predictions={preds}", f"output_dir={tmp_path / 'o'}"]
    doc = run(parse_args([*args, "benchmarks=[ruc]", "selection=critic"]), out=io.StringIO())
    e = doc["benchmarks"]["ruc"]
    assert e["top1"] == pytest.approx(20.0)  # the critic's pick hits on 2 only
    decoys = e["decoy_clicks"]
    assert decoys["decoy_samples"] == 4 and decoys["samples"] == 5
    for strategy in ("first", "critic"):  # first: 2 and 3; critic: 3 and 4
        assert decoys["by_strategy"][strategy] == {"clicks": 2, "over_decoy_samples": 50.0, "over_all": 40.0}
    report = (tmp_path / "o" / "report.md").read_text()
    assert "- Deceptive clicks, of the 4 samples with a decoy (gge's rule" in report
    assert "first 50.0% (2)" in report and "critic 50.0% (2)" in report
    assert "not official: gge's rule (no official scorer): RUC publishes none; its paper's rates" in report
    html = (tmp_path / "o" / "report.html").read_text()
    assert "deceptive clicks of the 4 samples with a decoy: critic 50.0%" in html
    scalars = scalar_metrics(doc["benchmarks"], doc["k"])
    assert (scalars["grounding/ruc/decoy_clicks/first"], scalars["grounding/ruc/decoy_clicks/critic"]) == (
        50.0,
        50.0,
    )
    html = (tmp_path / "o" / "report.html").read_text()
    assert "deceptive clicks of the 4 samples with a decoy: critic 50.0%" in html
    scalars = scalar_metrics(doc["benchmarks"], doc["k"])
    assert (
        scalars["grounding/ruc/decoy_clicks/first"] == 50.0
        and scalars["grounding/ruc/decoy_clicks/critic"] == 50.0
    )
