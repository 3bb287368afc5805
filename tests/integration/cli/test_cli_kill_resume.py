"""A run killed mid-way resumes to the same results (issue 19, item 11: no kill-timing race).

The run is killed at a known point, not after a sleep: the child ``python eval.py`` process sends
itself SIGKILL right after its prediction log has received a given number of lines (the log is
appended, flushed and fsynced per batch), so exactly that many samples are on disk, whatever the
machine's speed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from measured import unmeasured
from paths import ROOT

from gge.run.predlog import existing_logs

pytestmark = pytest.mark.slow

BENCHES = "benchmarks=[screenspot_v2,osworld_g,mmbench_gui]"
TOTAL = 3 * 36

# Runs eval.py's main in this process, killing it (SIGKILL: no cleanup, no finally) once the
# prediction log holds KILL_AFTER lines.
KILLER = """
import os, signal, sys
from gge.run import predlog
limit = int(os.environ["KILL_AFTER"])
append = predlog.PredictionLog.append
written = 0
def append_then_die(self, records):
    global written
    records = list(records)
    append(self, records)
    written += len(records)
    if written >= limit:
        os.kill(os.getpid(), signal.SIGKILL)
predlog.PredictionLog.append = append_then_die
from gge.cli.eval import main
sys.exit(main(sys.argv[1:]))
"""


def _args(demo: Path, out: Path, model: str) -> list[str]:
    # the demo model (screenshots decoded in workers, a real forward) or a replay of its file
    chosen = [f"model.predictions={demo / 'predictions.jsonl'}"] if model == "replay" else []
    return [
        f"data_root={demo}",
        *chosen,
        f"output_dir={out}",
        BENCHES,
        "batch_size=2",
        "trainer.accelerator=cpu",
    ]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), **extra}


def _eval(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(ROOT / "eval.py"), *args]
    return subprocess.run(cmd, env=_env(), cwd=cwd, capture_output=True, text=True, timeout=300)


def _lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for p in existing_logs(folder) for x in p.read_text().splitlines()]


@pytest.mark.parametrize("model", ["demo", "replay"])
def test_killed_run_resumes_to_the_same_results(demo_suite: Path, tmp_path: Path, model: str) -> None:
    full = tmp_path / "full"
    done = _eval(_args(demo_suite, full, model), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr

    part = tmp_path / "part"
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, *_args(demo_suite, part, model)],
        env=_env(KILL_AFTER="20"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert not (part / "results.json").exists()
    first = _lines(part)
    assert len(first) == 20  # ten batches of two, each on disk before the kill

    again = _eval(_args(demo_suite, part, model), tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "resuming: 20 samples already finished" in again.stdout
    a = json.loads((full / "results.json").read_text())
    b = json.loads((part / "results.json").read_text())
    a["config"].pop("output_dir")
    b["config"].pop("output_dir")
    # how each run went: one invocation, or one killed after 20 samples and one that finished the rest
    runs = [[(x["end"], x["restored"], x["samples"]) for x in d.pop("invocations")] for d in (a, b)]
    assert runs == [[("finished", 0, TOTAL)], [("killed", 0, 20), ("finished", 20, TOTAL - 20)]]
    assert unmeasured(a) == unmeasured(b)  # the same but for the seconds the requests took
    lines = _lines(part)
    assert lines[:20] == first  # the finished samples were kept, not redone
    keys = [(r["benchmark"], r["id"]) for r in lines]
    assert len(keys) == len(set(keys)) == TOTAL
    merged = (part / "predictions.jsonl").read_text().splitlines()
    assert [unmeasured(json.loads(x)) for x in merged] == [
        unmeasured(json.loads(x)) for x in (full / "predictions.jsonl").read_text().splitlines()
    ]
