"""What ``python eval.py`` says to a user (issue 26, item 7): each message tells what happened and what to do.

Runs are in-process (``gge.cli.eval.main``) on a small demo suite written here, replaying its own
predictions file (no model is loaded); the output is read as a user would read it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

import gge.demo
from gge.cli.eval import main

pytestmark = [pytest.mark.usefixtures("one_thread_per_module"), pytest.mark.slow]  # runs of ~5 s

DEMO_LINE = "data_root not set: using the synthetic demo suite"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo suite, 12 samples per benchmark."""
    from gge.demo import write_demo_suite

    return write_demo_suite(tmp_path_factory.mktemp("suite"), seed=0, per_benchmark=12)


@pytest.fixture
def demo_calls(suite: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The demo suite a run without ``data_root`` reads is ``suite`` (never the user's cache); the calls."""
    calls: list[int] = []

    def fake(seed: int = 0) -> Path:
        calls.append(seed)
        return suite

    monkeypatch.setattr(gge.demo, "demo_root", fake)
    return calls


def _records(folder: Path) -> tuple[Path, Path]:
    """A user's records file of two samples on one 100 x 80 screenshot, and a replay file (1 hit)."""
    folder.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (100, 80), (255, 255, 255)).save(folder / "shot.png")
    rows = [
        {"id": "a", "image": "shot.png", "instruction": "ok", "bbox": [10, 10, 30, 30]},
        {"id": "b", "image": "shot.png", "instruction": "no", "bbox": [50, 10, 70, 30]},
    ]
    records = folder / "mine.jsonl"
    declared = {"box_format": "xyxy", "units": "pixels"}
    records.write_text("".join(json.dumps({**r, **declared}) + "\n" for r in rows))
    preds = folder / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"benchmark": "records", "id": i, "candidates": [p]}) + "\n"
            for i, p in (("a", [20, 20]), ("b", [20, 20]))
        )
    )
    return records, preds


# ----------------------------------------------------------------------------------------------
# data_root not set: said only when the demo suite is read


def test_a_records_run_with_its_own_path_does_not_read_the_demo_suite(
    tmp_path: Path, demo_calls: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    records, preds = _records(tmp_path / "mine")
    out = tmp_path / "out"
    args = ["benchmarks=[records]", f"bench.records.path={records}", f"model.predictions={preds}"]
    assert main([*args, f"output_dir={out}"]) == 0
    printed = capsys.readouterr().out
    assert DEMO_LINE not in printed and demo_calls == []  # not said, and not generated either
    doc = json.loads((out / "results.json").read_text())
    assert doc["benchmarks"]["records"]["samples"] == 2 and doc["benchmarks"]["records"]["top1"] == 50.0
    assert doc["config"]["data_root"] is None  # no folder was read as data_root


def test_a_benchmark_with_its_own_root_does_not_read_the_demo_suite(
    suite: Path, tmp_path: Path, demo_calls: list[int], capsys: pytest.CaptureFixture[str]
) -> None:
    common = [f"model.predictions={suite / 'predictions.jsonl'}", "max_samples=2"]
    own = ["benchmarks=[screenspot_v2]", f"bench.screenspot_v2.root={suite / 'screenspot_v2'}"]
    assert main([*own, *common, f"output_dir={tmp_path / 'own'}"]) == 0
    assert DEMO_LINE not in capsys.readouterr().out and demo_calls == []
    # one benchmark without a root of its own: the demo suite is read, and said
    both = ["benchmarks=[screenspot_v2,osworld_g]", f"bench.screenspot_v2.root={suite / 'screenspot_v2'}"]
    assert main([*both, *common, f"output_dir={tmp_path / 'both'}"]) == 0
    assert f"{DEMO_LINE} at {suite}" in capsys.readouterr().out.splitlines() and demo_calls == [0]


# ----------------------------------------------------------------------------------------------
# the summary's mean row says how many of its headlines are not official


def test_the_mean_row_counts_the_headlines_that_are_not_official(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        f"data_root={suite}",
        f"model.predictions={suite / 'predictions.jsonl'}",
        "benchmarks=[screenspot_v2,osworld_g,ui_vision]",
        "bench.osworld_g.refusals=miss",  # not the official headline (which scores refusals)
        "max_samples=2",
        f"output_dir={tmp_path}",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    report = (tmp_path / "report.md").read_text()
    summary = report.split("## Summary (official headlines)", 1)[1]
    rows = [line for line in summary.splitlines() if line.startswith("|")]
    assert [r.split("|")[1].strip() for r in rows[2:]] == [
        "ScreenSpot-v2",
        "OSWorld-G",
        "UI-Vision",
        "mean of 3 (1 not official)",
    ]
    assert "- mean of 3: 1 of its headlines not official (OSWorld-G)" in summary.splitlines()
    assert summary.strip() in printed  # the console prints the same report
