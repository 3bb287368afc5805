"""What ``python eval.py`` says to a user (issue 26, item 7): each message tells what happened and what to do.

Runs are in-process (``gge.cli.eval.main``) on a small demo suite written here, replaying its own
predictions file (no model is loaded); the output is read as a user would read it.
"""

from __future__ import annotations

import json
import shlex
import signal
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import gge.benchmarks.demo
from gge.cli.eval import main

pytestmark = [pytest.mark.usefixtures("one_thread_per_module"), pytest.mark.slow]  # runs of ~5 s

DEMO_LINE = "data_root not set: using the synthetic demo suite"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo suite, 12 samples per benchmark."""
    from gge.benchmarks.demo import write_demo_suite

    return write_demo_suite(tmp_path_factory.mktemp("suite"), seed=0, per_benchmark=12)


@pytest.fixture
def demo_calls(suite: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The demo suite a run without ``data_root`` reads is ``suite`` (never the user's cache); the calls."""
    calls: list[int] = []

    def fake(seed: int = 0) -> Path:
        calls.append(seed)
        return suite

    monkeypatch.setattr(gge.benchmarks.demo, "demo_root", fake)
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
    summary = report.split("## Summary (headlines: official unless marked)", 1)[1]
    rows = [line for line in summary.splitlines() if line.startswith("|")]
    assert [r.split("|")[1].strip() for r in rows[2:]] == [
        "ScreenSpot-v2",
        "OSWorld-G",
        "UI-Vision",
        "mean of 3 (1 not official)",
    ]
    assert "- mean of 3: 1 of its headlines not official (OSWorld-G)" in summary.splitlines()
    assert summary.strip() in printed  # the console prints the same report


# ----------------------------------------------------------------------------------------------
# Ctrl-C: how many samples are kept, and the command that resumes


def _replay(suite: Path, out: Path) -> list[str]:
    return [
        f"data_root={suite}",
        f"model.predictions={suite / 'predictions.jsonl'}",
        "benchmarks=[screenspot_v2]",
        "batch_size=2",
        f"output_dir={out}",
        "trainer.accelerator=cpu",
    ]


def test_ctrl_c_says_what_is_kept_and_the_command_that_resumes(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gge.models.replay import ReplayModel

    out = tmp_path / "run"
    predict = ReplayModel.predict
    calls = []

    def ctrl_c_at_the_third_batch(self: ReplayModel, samples: Any) -> Any:
        calls.append(len(samples))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return predict(self, samples)

    monkeypatch.setattr(ReplayModel, "predict", ctrl_c_at_the_third_batch)
    handler = signal.getsignal(signal.SIGINT)
    args = [*_replay(suite, out), "resume=false"]  # resume=false: the resuming command must not repeat it
    assert main(args) == 130
    assert signal.getsignal(signal.SIGINT) is handler  # Ctrl-C works again after Lightning's shutdown
    err = capsys.readouterr().err.splitlines()
    kept = sum(1 for _ in (out / "predictions.rank0.jsonl").open())
    assert kept == 4  # two batches of 2 finished before the third was interrupted
    assert err[-2:] == [
        f"gge: interrupted: 4 of 12 samples are kept in {out} (predictions.rank0.jsonl); the same command "
        "resumes from them:",
        "  python eval.py " + " ".join(shlex.quote(a) for a in [*args[:-1], "resume=true"]),
    ]

    monkeypatch.setattr(ReplayModel, "predict", predict)
    assert main(shlex.split(err[-1])[2:]) == 0  # the command printed, as the shell would split it
    assert "resuming: 4 samples already finished" in capsys.readouterr().out
    assert json.loads((out / "results.json").read_text())["benchmarks"]["screenspot_v2"]["samples"] == 12


# ----------------------------------------------------------------------------------------------
# a malformed line in the middle of the folder's own log: named, with the command that drops it


def test_a_malformed_middle_line_is_named_with_the_command_that_drops_it(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = _replay(suite, out)
    assert main(args) == 0
    log = out / "predictions.rank0.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    assert len(lines) == 12
    original = lines[4]
    lines[4] = lines[4][:30] + "\n"  # line 5 cut short: not JSON, and not the last line
    log.write_text("".join(lines))
    capsys.readouterr()

    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()
    bad = out / "predictions.rank0.jsonl.bad"
    assert err[-2].startswith(f"gge: error: {log}:5: malformed JSON line: ")
    assert err[-2].endswith(
        f"Rerun with drop_malformed_lines=true to move it to {bad} and evaluate its sample again "
        "(or resume=false to start over):"
    )
    assert err[-1] == "  python eval.py " + " ".join(
        shlex.quote(a) for a in [*args, "drop_malformed_lines=true"]
    )
    assert log.read_text() == "".join(lines) and not bad.exists()  # nothing touched until asked

    assert main(shlex.split(err[-1])[2:]) == 0
    printed = capsys.readouterr().out
    said = f"dropped 1 malformed prediction log line (kept in {bad}); its sample is evaluated again: {log}:5:"
    assert said in printed
    assert "resuming: 11 samples already finished" in printed
    assert bad.read_text() == lines[4]  # the dropped line, kept aside as it was
    redone = log.read_text().splitlines(keepends=True)
    assert redone[:11] == lines[:4] + lines[5:] and len(redone) == 12  # its sample asked again, appended
    assert json.loads(redone[11])["id"] == json.loads(original)["id"]
