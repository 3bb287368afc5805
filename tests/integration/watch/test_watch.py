"""``gge watch`` on tiny real Qwen3-VL checkpoints that a test writes one by one, as a trainer would.

Each evaluation is the real eval path (1 benchmark, 2 samples). Checked: every checkpoint is evaluated
exactly once, in step order, with CSV rows equal to its results.json; incomplete checkpoints wait; a
checkpoint no preset knows is a configuration error that uses no attempt; the verl layout is found;
W&B offline gets one run id with rows at the checkpoint steps; a watcher SIGKILLed during an
evaluation resumes it (eval's own resume) without evaluating anything twice; a second watcher on the
same output folder is refused.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

from tiny_checkpoints import build_tiny_qwen3_vl

from gge.errors import GgeError
from gge.integrations.watch import METRICS_FILE, WATCH_FILE, find_checkpoints, watch, watch_main
from gge.integrations.watch import scan as watch_scan
from gge.run import standalone
from gge.scoring.metrics import scalar_metrics

pytestmark = pytest.mark.usefixtures("one_thread_per_module")

HOUR = 3600.0
SMALL = [
    "benchmarks=[screenspot_v2]",
    "max_samples=2",
    "batch_size=1",
    "report_misses=0",
    "trainer.accelerator=cpu",
    "model.max_pixels=50000",
    "model.min_pixels=3136",
    "model.max_new_tokens=12",
    "model.critic_max_new_tokens=6",
    "model.device=cpu",
]
SUBSET_LINE = (  # the demo's ScreenSpot-v2 has 3 x 12 samples; max_samples=2 keeps 2
    "subset: first 2 of 36 samples (ScreenSpot-v2); max_samples=2: not comparable with published numbers"
)
RUN_NAME = "Qwen3-VL-tiny-grpo"  # the watched folder: eval picks the qwen3_vl preset from this name


def _age(path: Path, seconds: float = HOUR) -> None:
    """Set every modification time under ``path`` (and its own) ``seconds`` in the past."""
    t = time.time() - seconds
    for p in [path, *path.rglob("*")]:
        os.utime(p, (t, t))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Three tiny checkpoints with different weights (seeds 1-3), written an hour ago."""
    base = tmp_path_factory.mktemp("models")
    out = {seed: build_tiny_qwen3_vl(base / f"seed{seed}", seed=seed) for seed in (1, 2, 3)}
    _age(base)
    return out


def _eval_args(demo: Path) -> list[str]:
    return [f"data_root={demo}", *SMALL]


def _place(src: Path, dest: Path) -> Path:
    """Copy a checkpoint folder keeping its modification times (a checkpoint written long ago)."""
    shutil.copytree(src, dest)
    return dest


def _csv_rows(out: Path) -> list[dict[str, str]]:
    with (out / METRICS_FILE).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _state(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / WATCH_FILE).read_text(encoding="utf-8"))
    return data


def _check_rows_match_results(out: Path, steps: list[int]) -> None:
    rows = _csv_rows(out)
    assert [int(r["step"]) for r in rows] == steps  # one row per step, in step order
    for row in rows:
        doc = json.loads((out / f"step_{row['step']}" / "results.json").read_text(encoding="utf-8"))
        expected = scalar_metrics(doc["benchmarks"], doc["k"])
        k = doc["k"]
        assert "grounding/screenspot_v2/top1" in expected
        assert (f"grounding/screenspot_v2/oracle@{k}" in expected) is (k > 1)  # one answer: Top-1 only
        assert row["subset"] == SUBSET_LINE  # every step here is a max_samples=2 run
        scalars = {key: float(v) for key, v in row.items() if key not in ("step", "subset") and v != ""}
        assert scalars == expected


def test_checkpoints_appearing_one_by_one_are_each_evaluated_once_in_step_order(
    models: dict[int, Path], demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / RUN_NAME
    root.mkdir()
    evaluated: list[str] = []
    real_run = standalone.run

    def counting_run(cfg: Any, out: Any = None) -> dict[str, Any]:
        evaluated.append(Path(cfg.ckpt).name)
        return real_run(cfg, out=out)

    monkeypatch.setattr(standalone, "run", counting_run)
    args = _eval_args(demo_suite)

    _place(models[1], root / "checkpoint-1")
    report = watch(root, args, once=True, stdout=(first := io.StringIO()))
    assert report.evaluated == [1] and evaluated == ["checkpoint-1"]

    _place(models[3], root / "checkpoint-3")  # saved out of order: still evaluated in step order
    _place(models[2], root / "checkpoint-2")
    buf = io.StringIO()
    report = watch(root, args, once=True, stdout=buf)
    said = first.getvalue() + buf.getvalue()
    assert report.evaluated == [2, 3] and not report.failed and not report.pending
    assert evaluated == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]
    assert "step 2: Top-1 " in buf.getvalue() and "step 1: evaluating" not in buf.getvalue()

    report = watch(root, args, once=True, stdout=io.StringIO())  # nothing new
    assert report.evaluated == [] and len(evaluated) == 3

    out = root / "gge_watch"
    state = _state(out)
    assert sorted(state["steps"], key=int) == ["1", "2", "3"]
    for step, entry in state["steps"].items():
        assert entry["status"] == "done" and entry["attempts"] == 1
        assert entry["path"] == str(root / f"checkpoint-{step}")
        doc = json.loads((out / f"step_{step}" / "results.json").read_text(encoding="utf-8"))
        assert doc["config"]["ckpt"] == entry["path"]  # each step's eval read its own checkpoint
        assert doc["model"]["adapter"]["preset"] == "qwen3_vl"
        k = doc["k"]
        assert entry["k"] == k and entry["top1"] == doc["mean"]["top1"]
        if k == 1:  # a one-answer run (the greedy preset) has no Oracle@K
            assert not [key for key in (*entry, *entry["benchmarks"]["screenspot_v2"]) if "oracle" in key]
        else:
            assert entry[f"oracle@{k}"] == doc["mean"][f"oracle@{k}"]
        (line,) = [x for x in said.splitlines() if x.startswith(f"gge watch: step {step}: Top-1 ")]
        assert ("Oracle@" in line) is (k > 1)
        for name in ("predictions.jsonl", "report.md", "report.html"):
            assert (out / f"step_{step}" / name).is_file()
    _check_rows_match_results(out, [1, 2, 3])

    # a restart with other eval arguments would mix protocols in one curve: refused
    with pytest.raises(GgeError, match=r"other eval arguments .*now: k=3"):
        watch(root, [*args, "k=3"], once=True, stdout=io.StringIO())
    with pytest.raises(GgeError, match="output_dir= is set by the watcher"):
        watch(root, [*args, f"output_dir={tmp_path}"], once=True, stdout=io.StringIO())
    other = tmp_path / "other_run"
    other.mkdir()
    with pytest.raises(GgeError, match=re.escape(f"holds the evaluations of {root}, not {other}")):
        watch(other, args, out=out, once=True, stdout=io.StringIO())


def test_a_checkpoint_no_preset_knows_is_a_configuration_error_while_others_go_on(
    models: dict[int, Path], demo_suite: Path, tmp_path: Path
) -> None:
    """Transient failures and their attempts: test_watch_config_errors.py."""
    root = tmp_path / RUN_NAME
    root.mkdir()
    bad = _place(models[1], root / "checkpoint-1")
    original = (bad / "config.json").read_text(encoding="utf-8")
    (bad / "config.json").write_text(
        json.dumps({**json.loads(original), "model_type": "bert"}), encoding="utf-8"
    )
    _age(bad)
    _place(models[2], root / "checkpoint-2")
    args = [*_eval_args(demo_suite)]
    out = root / "gge_watch"

    report = watch(root, args, once=True, attempts=2, stdout=io.StringIO())
    assert list(report.config_errors) == [1] and report.evaluated == [2] and report.failed == []
    entry = _state(out)["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("config_error", 0)  # no attempt used
    assert "no preset for model_type 'bert'" in entry["error"] and str(bad) in entry["error"]
    assert report.config_errors[1] == entry["error"]
    assert [int(r["step"]) for r in _csv_rows(out)] == [2]

    report = watch(root, args, once=True, attempts=2, stdout=io.StringIO())
    assert report.config_errors == {} and report.failed == [] and report.evaluated == []  # not retried
    (bad / "config.json").write_text(original, encoding="utf-8")  # the checkpoint fixed
    _age(bad)
    assert watch_main([str(root), "--once", "--attempts", "2", "--retry-failed", *args]) == 0
    entry = _state(out)["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("done", 1) and "error" not in entry
    _check_rows_match_results(out, [1, 2])


def _sharded_copy(src: Path, dest: Path) -> list[str]:
    """``src`` saved again in shards of ~300 KB into ``dest``; returns the shard names."""
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(src)
    model.save_pretrained(dest, max_shard_size="300KB")
    for f in src.iterdir():
        if not f.name.startswith("model") and not (dest / f.name).exists():
            shutil.copy2(f, dest / f.name)
    shards = sorted(p.name for p in dest.glob("model-*-of-*.safetensors"))
    assert len(shards) >= 2 and (dest / "model.safetensors.index.json").is_file()
    return shards


def test_incomplete_checkpoints_wait_until_complete(
    models: dict[int, Path], demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / RUN_NAME
    root.mkdir()
    staged = tmp_path / "staged"
    shards = _sharded_copy(models[1], staged)
    # step 1: sharded, its last shard not written yet
    ck1 = root / "checkpoint-1"
    ck1.mkdir()
    for f in staged.iterdir():
        if f.name != shards[-1]:
            shutil.copy2(f, ck1 / f.name)
    # step 2: its weights file half written
    ck2 = _place(models[2], root / "checkpoint-2")
    data = (models[2] / "model.safetensors").read_bytes()
    (ck2 / "model.safetensors").write_bytes(data[: len(data) // 2])
    # step 3: complete but its config written 12 s before the watcher's clock
    ck3 = _place(models[3], root / "checkpoint-3")
    _age(ck1)
    _age(ck2)
    now = time.time()
    monkeypatch.setattr(watch_scan, "_clock", lambda: now)
    os.utime(ck3 / "config.json", (now - 12, now - 12))

    report = watch(root, _eval_args(demo_suite), once=True, stdout=io.StringIO())
    assert report.evaluated == []
    assert f"{shards[-1]} is missing" in report.pending[1]
    assert "model.safetensors is still being written" in report.pending[2]
    assert report.pending[3] == "changed 12s ago: waiting until nothing changes for 30s"
    assert not (root / "gge_watch" / "step_1").exists()

    shutil.copy2(staged / shards[-1], ck1 / shards[-1])
    (ck2 / "model.safetensors").write_bytes(data)
    for ck in (ck1, ck2, ck3):
        _age(ck, 60)
    monkeypatch.setattr(watch_scan, "_clock", time.time)
    report = watch(root, _eval_args(demo_suite), once=True, stdout=io.StringIO())
    assert report.evaluated == [1, 2, 3] and not report.pending
    _check_rows_match_results(root / "gge_watch", [1, 2, 3])


def test_verl_layout_waits_for_weights_then_is_evaluated(
    models: dict[int, Path], demo_suite: Path, tmp_path: Path
) -> None:
    root = tmp_path / "verl_run"  # the name says nothing: the config's _name_or_path does, as verl's
    hf = root / "global_step_5" / "actor" / "huggingface"
    hf.mkdir(parents=True)
    for f in models[1].iterdir():
        if f.name != "model.safetensors":  # verl writes config and tokenizer at every save
            shutil.copy2(f, hf / f.name)
    config = json.loads((hf / "config.json").read_text(encoding="utf-8"))
    config["_name_or_path"] = "/models/Qwen3-VL-2B-Instruct"
    (hf / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (hf.parent / "model_world_size_1_rank_0.pt").write_bytes(b"sharded FSDP state")
    (root / "latest_checkpointed_iteration.txt").write_text("5")
    _age(root)

    (ck,) = find_checkpoints(root)
    assert (ck.step, ck.layout, ck.path) == (5, "verl", hf)
    report = watch(root, _eval_args(demo_suite), once=True, stdout=io.StringIO())
    assert report.evaluated == [] and "no model weights" in report.pending[5]
    assert "hf_model" in report.pending[5] and "verl.model_merger merge" in report.pending[5]

    shutil.copy2(models[1] / "model.safetensors", hf / "model.safetensors")  # merged
    _age(root)
    report = watch(root, _eval_args(demo_suite), once=True, stdout=io.StringIO())
    assert report.evaluated == [5]
    out = root / "gge_watch"
    doc = json.loads((out / "step_5" / "results.json").read_text(encoding="utf-8"))
    assert doc["config"]["ckpt"] == str(hf) and doc["model"]["adapter"]["preset"] == "qwen3_vl"
    _check_rows_match_results(out, [5])


def test_wandb_offline_one_run_with_rows_at_the_checkpoint_steps(
    models: dict[int, Path], demo_suite: Path, wandb_env: Path
) -> None:
    import wandb
    from wandb_reader import find_run_dirs, read_run

    root = wandb_env / RUN_NAME
    root.mkdir()
    out = wandb_env / "evals"
    args = _eval_args(demo_suite)
    _place(models[1], root / "checkpoint-10")
    _place(models[2], root / "checkpoint-20")
    report = watch(root, args, out=out, once=True, logger="wandb", stdout=io.StringIO())
    assert report.evaluated == [10, 20] and wandb.run is None  # the watcher finished its run
    _place(models[3], root / "checkpoint-30")  # a restarted watcher continues the same run
    assert watch(root, args, out=out, once=True, logger="wandb", stdout=io.StringIO()).evaluated == [30]

    run_id = _state(out)["wandb_run_id"]
    dirs = find_run_dirs(wandb_env)
    assert len(dirs) == 2 and all(d.name.endswith(f"-{run_id}") for d in dirs)  # one run id, two sessions
    rows: dict[int, dict[str, Any]] = {}
    for d in dirs:
        for row in read_run(d).history:
            if "grounding/screenspot_v2/top1" in row:
                rows[int(row["trainer/global_step"])] = row
    csv_rows = {int(r["step"]): r for r in _csv_rows(out)}
    assert sorted(csv_rows) == sorted(rows) == [10, 20, 30]
    for step, row in rows.items():
        k = _state(out)["steps"][str(step)]["k"]
        keys = ["grounding/screenspot_v2/top1", "grounding/mean/top1"]
        keys += [f"grounding/screenspot_v2/oracle@{k}"] if k > 1 else []
        for key in keys:
            assert row[key] == pytest.approx(float(csv_rows[step][key]))


RUNNER = """\
import sys, time
from gge.run.predlog import PredictionLog

_append = PredictionLog.append


def slow_append(self, records):
    _append(self, records)
    if "step_2" in str(self.path):
        time.sleep(300)  # killed here, with step 2 half evaluated


PredictionLog.append = slow_append
from gge.integrations.watch import watch_main

sys.exit(watch_main(sys.argv[1:]))
"""


def _wait_for(predicate: Any, what: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"the watcher exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0


@pytest.mark.slow
def test_killed_watcher_resumes_without_evaluating_twice(
    models: dict[int, Path], demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / RUN_NAME
    root.mkdir()
    for step in (1, 2, 3):
        _place(models[step], root / f"checkpoint-{step}")
    out = tmp_path / "evals"
    args = [str(root), "--out", str(out), "--poll", "0.2", *_eval_args(demo_suite)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runner = tmp_path / "slow_watch.py"
    runner.write_text(RUNNER, encoding="utf-8")
    with (tmp_path / "first.log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, str(runner), *args], stdout=log, stderr=log, env=env)
        try:
            half = out / "step_2" / "predictions.rank0.jsonl"
            _wait_for(lambda: _lines(half) >= 1, "step 2's first sample", proc)
            state = _state(out)
            assert state["steps"]["1"]["status"] == "done" and state["steps"]["2"]["status"] == "running"

            # a second watcher on the same output folder is refused while the first runs
            assert watch_main([*args, "--once"]) == 2
            err = capsys.readouterr().err
            assert f"{out} is in use by another gge watch (pid {proc.pid}" in err
            assert "one watcher per output folder" in err
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    step1_written = (out / "step_1" / "results.json").stat().st_mtime_ns
    assert [int(r["step"]) for r in _csv_rows(out)] == [1]

    restart = subprocess.run(
        [sys.executable, "-m", "gge.integrations.watch", *args, "--once"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert restart.returncode == 0, restart.stderr[-3000:]
    said = restart.stdout
    assert "step 1: evaluating" not in said
    assert "step 2: evaluating" in said and "(attempt 2 of 3)" in said
    assert "resuming: 1 samples already finished" in said  # eval's own resume kept the finished sample
    assert (out / "step_1" / "results.json").stat().st_mtime_ns == step1_written

    steps = _state(out)["steps"]
    assert {k: (v["status"], v["attempts"]) for k, v in steps.items()} == {
        "1": ("done", 1),
        "2": ("done", 2),  # the killed attempt counts
        "3": ("done", 1),
    }
    records = [json.loads(x) for x in (out / "step_2" / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 2 and len({r["id"] for r in records}) == 2
    _check_rows_match_results(out, [1, 2, 3])


def test_a_checkpoint_removed_before_its_evaluation_is_reported(
    models: dict[int, Path], demo_suite: Path, tmp_path: Path
) -> None:
    """A trainer keeping only its latest checkpoints may remove one the watcher has not evaluated."""
    root = tmp_path / RUN_NAME
    root.mkdir()
    ck = _place(models[1], root / "checkpoint-1")
    os.utime(ck / "config.json")  # written just now: it waits
    out = io.StringIO()
    report = watch(root, _eval_args(demo_suite), once=True, stdout=out)
    assert report.evaluated == [] and 1 in report.pending
    assert _state(root / "gge_watch")["seen"] == [1]
    shutil.rmtree(ck)  # rotated away (save_total_limit)
    out = io.StringIO()
    report = watch(root, _eval_args(demo_suite), once=True, stdout=out)
    assert report.evaluated == []
    assert "step 1: the checkpoint was removed before it could be evaluated" in out.getvalue()
    assert _state(root / "gge_watch")["steps"]["1"]["status"] == "vanished"
    out = io.StringIO()
    watch(root, _eval_args(demo_suite), once=True, stdout=out)
    assert "was removed" not in out.getvalue()  # said once


def _trimmed_screenspot(demo: Path, dest: Path) -> Path:
    """The demo suite with ScreenSpot-v2 cut by hand to its first record per file (3 samples)."""
    shutil.copytree(demo, dest)
    for f in (dest / "screenspot_v2").glob("*.json"):
        f.write_text(json.dumps(json.loads(f.read_text(encoding="utf-8"))[:1]), encoding="utf-8")
    return dest


def test_a_subset_run_says_so_in_its_line_its_entry_and_its_csv_row_a_full_run_does_not(
    models: dict[int, Path], demo_suite: Path, tmp_path: Path
) -> None:
    data = _trimmed_screenspot(demo_suite, tmp_path / "data")
    for cut, subset, text in [
        (
            ["max_samples=2"],
            {"max_samples": 2, "benchmarks": {"screenspot_v2": {"evaluated": 2, "total": 3}}},
            "subset: first 2 of 3 samples (ScreenSpot-v2); max_samples=2: not comparable with published "
            "numbers",
        ),
        ([], None, ""),  # all 3 samples: a full run
    ]:
        root = tmp_path / f"{RUN_NAME}{len(cut)}"
        _place(models[1], root / "checkpoint-4")
        args = [f"data_root={data}", *[a for a in SMALL if not a.startswith("max_samples=")], *cut]
        report = watch(root, args, once=True, stdout=(buf := io.StringIO()))
        assert report.evaluated == [4]
        out = root / "gge_watch"
        entry = _state(out)["steps"]["4"]
        assert entry["subset"] == subset
        doc = json.loads((out / "step_4" / "results.json").read_text(encoding="utf-8"))
        assert doc["subset"] == subset
        (row,) = _csv_rows(out)
        assert row["subset"] == text and list(row)[:2] == ["step", "subset"]
        (line,) = [x for x in buf.getvalue().splitlines() if "step 4: Top-1 " in x]
        bench = "; " + text if text else ""
        assert line.endswith(f" (mean of 1 benchmarks{bench}) -> {out / 'step_4'}")
