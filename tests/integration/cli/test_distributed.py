"""Sharded evaluation on CPU processes: the same results as one process, no sample twice, resumable.

``ddp_fork`` runs in-process (cheap); one real ``python eval.py trainer.devices=2`` launch uses a
subprocess, as users would. A killed run's resume is test_cli_kill_resume.py (killed at a known
line count, no timing). ``merge_results`` keeps the first result of each (benchmark, id).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from measured import unmeasured
from paths import ROOT

from gge.run.evaluate import merge_results
from gge.run.predlog import existing_logs
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Absent, Candidate, Sample, SampleResult


def _args(demo: Path, out: Path, *extra: str) -> list[str]:
    return [
        f"data_root={demo}",
        f"model.predictions={demo / 'predictions.jsonl'}",
        f"output_dir={out}",
        "benchmarks=[screenspot_v2,osworld_g,mmbench_gui]",
        *extra,
    ]


def _benchmarks(doc: dict[str, Any]) -> dict[str, Any]:
    """The benchmarks' entries but for the seconds measured and the batches run (they depend on the load)."""
    return unmeasured(json.loads(json.dumps(doc["benchmarks"])))


@pytest.fixture(scope="module")
def single(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for n in (None, 7, 2):
        extra = [] if n is None else [f"max_samples={n}"]
        doc = run(parse_args(_args(demo_suite, tmp_path_factory.mktemp("single"), *extra)), out=io.StringIO())
        out[str(n)] = _benchmarks(doc)
    return out


@pytest.mark.distributed
@pytest.mark.parametrize(
    ("devices", "max_samples"),
    [(2, None), (3, None), (2, 7), (3, 7), (3, 2)],  # uneven shards; 2 samples on 3 ranks: one rank has none
)
def test_ddp_fork_equals_single_process(
    devices: int, max_samples: int | None, demo_suite: Path, tmp_path: Path, single: dict[str, dict[str, Any]]
) -> None:
    extra = [
        "trainer.accelerator=cpu",
        f"trainer.devices={devices}",
        "trainer.strategy=ddp_fork",
        "batch_size=2",
    ]
    if max_samples is not None:
        extra.append(f"max_samples={max_samples}")
    doc = run(parse_args(_args(demo_suite, tmp_path, *extra)), out=io.StringIO())
    assert _benchmarks(doc) == single[str(max_samples)]
    # every sample was evaluated exactly once, across the ranks' logs
    lines = [json.loads(x) for p in existing_logs(tmp_path) for x in p.read_text().splitlines()]
    keys = [(r["benchmark"], r["id"]) for r in lines]
    assert len(keys) == len(set(keys)) == sum(e["samples"] for e in doc["benchmarks"].values())
    assert len(existing_logs(tmp_path)) == min(devices, max_samples or devices)  # an empty rank writes none


@pytest.mark.distributed
def test_pad_batches_through_the_cli_equals_no_padding(
    demo_suite: Path, tmp_path: Path, single: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FSDP-style padding: every rank runs as many batches, the padding's results are dropped."""
    from gge.models.replay import ReplayModel

    calls = tmp_path / "calls"
    calls.mkdir()
    predict = ReplayModel.predict

    def counting(self: ReplayModel, samples: Any) -> Any:  # forked ranks inherit the patch
        with (calls / str(os.getpid())).open("a") as f:
            f.write(" ".join(f"{s.benchmark}/{s.id}" for s in samples) + "\n")
        return predict(self, samples)

    monkeypatch.setattr(ReplayModel, "predict", counting)
    extra = ["trainer.accelerator=cpu", "trainer.devices=3", "trainer.strategy=ddp_fork", "batch_size=2"]
    out = tmp_path / "out"
    doc = run(
        parse_args(_args(demo_suite, out, *extra, "max_samples=7", "pad_batches=true")), out=io.StringIO()
    )
    assert doc["config"]["pad_batches"] is True
    assert _benchmarks(doc) == single["7"]
    # 7 samples on 3 ranks in batches of 2: shards of 3, 2, 2 -> 2 batches on every rank, per benchmark
    per_rank = [p.read_text().splitlines() for p in sorted(calls.iterdir())]
    assert len(per_rank) == 3 and [len(b) for b in per_rank] == [6, 6, 6]
    items = [i for batches in per_rank for b in batches for i in b.split()]
    assert len(items) == 3 * (7 + 2)  # two padding items per benchmark
    # the logs hold every sample once: padding results are neither logged nor counted
    lines = [json.loads(x) for p in existing_logs(out) for x in p.read_text().splitlines()]
    keys = [(r["benchmark"], r["id"]) for r in lines]
    assert len(keys) == len(set(keys)) == 3 * 7


@pytest.mark.distributed
@pytest.mark.slow
def test_ddp_fork_with_decoding_workers_equals_single_process(demo_suite: Path, tmp_path: Path) -> None:
    """The demo model looks at the screenshots: each rank's workers decode them and hand them over."""

    def args(out: Path, *extra: str) -> list[str]:
        return [f"data_root={demo_suite}", f"output_dir={out}", "max_samples=5", "batch_size=2", *extra]

    one = run(parse_args(args(tmp_path / "one")), out=io.StringIO())
    extra = ["trainer.accelerator=cpu", "trainer.devices=3", "trainer.strategy=ddp_fork", "num_workers=2"]
    three = run(parse_args(args(tmp_path / "three", *extra)), out=io.StringIO())
    assert one["model"]["model"] == three["model"]["model"] == "gge-demo"
    assert _benchmarks(three) == _benchmarks(one)


def test_rerun_skips_finished_samples(
    demo_suite: Path, tmp_path: Path, single: dict[str, dict[str, Any]]
) -> None:
    run(parse_args(_args(demo_suite, tmp_path, "max_samples=7")), out=io.StringIO())
    log = existing_logs(tmp_path)[0]
    kept = log.read_text().splitlines()[:10]
    log.write_text("\n".join(kept) + "\n" + kept[-1][: len(kept[-1]) // 2])  # a truncated last line
    buf = io.StringIO()
    doc = run(parse_args(_args(demo_suite, tmp_path, "max_samples=7")), out=buf)
    assert "resuming: 10 samples already finished" in buf.getvalue()  # the torn 11th line is redone
    assert _benchmarks(doc) == single["7"]
    keys = [tuple(json.loads(x)[k] for k in ("benchmark", "id")) for x in log.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 21


def _cli(args: list[str], env: dict[str, str], **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "eval.py"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kw,
    )


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


@pytest.mark.distributed
@pytest.mark.slow
def test_eval_py_two_devices_equals_one(demo_suite: Path, tmp_path: Path) -> None:
    docs = []
    for devices in (1, 2):
        out = tmp_path / f"d{devices}"
        args = _args(demo_suite, out, "trainer.accelerator=cpu", f"trainer.devices={devices}", "batch_size=4")
        proc = _cli(args, _env(), cwd=tmp_path)
        log, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, log
        docs.append(json.loads((out / "results.json").read_text()))
    assert docs[0]["benchmarks"] == docs[1]["benchmarks"]
    assert docs[1]["config"]["trainer"]["devices"] == 2


# -- merging the ranks' results --------------------------------------------------------------------


def _result(bench: str, sid: str, hit: bool) -> SampleResult:
    c = Candidate((1.0, 1.0))
    return SampleResult(bench, sid, {}, 1, (c,), (hit,), {"critic": c}, {"critic": hit})


def test_merge_results_first_occurrence_wins_per_benchmark_and_id() -> None:
    order = [Sample(b, i, "/x.png", (9, 9), "x", Absent()) for b in ("a", "b") for i in ("0", "1")]
    first = [_result("a", "0", True), _result("b", "0", False)]
    later = [
        _result("a", "0", False),
        _result("b", "0", True),
        _result("a", "1", True),
        _result("c", "0", True),
    ]
    merged = merge_results([first, later, [_result("a", "1", False)]], order)
    assert [(r.benchmark, r.id, r.hits[0]) for r in merged] == [
        ("a", "0", True),  # first part wins over the later conflicting one
        ("a", "1", True),  # first occurrence, not the last
        ("b", "0", False),  # same id, other benchmark: its own result
    ]  # ("b", "1") has no result; ("c", "0") is not in order
