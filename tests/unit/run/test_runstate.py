"""A resume never mixes runs; a folder in use refuses a second run (issue 13, point 1)."""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from gge.demo.model import default_checkpoint
from gge.errors import GgeError
from gge.run.runstate import differences, output_dir_lock
from gge.run.settings import parse_args
from gge.run.standalone import run

BENCHES = "benchmarks=[screenspot_v2,osworld_g]"


def _demo(demo: Path, out: Path, *extra: str) -> dict[str, Any]:
    args = [f"data_root={demo}", f"output_dir={out}", BENCHES, "max_samples=6", *extra]
    return run(parse_args(args), out=io.StringIO())


def _top1(doc: dict[str, Any]) -> dict[str, float]:
    return {name: e["top1"] for name, e in doc["benchmarks"].items()}


def test_a_rerun_with_another_k_stops_and_names_what_differs(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _demo(demo_suite, out, "k=5")
    with pytest.raises(GgeError) as e:
        _demo(demo_suite, out, "k=3")
    msg = str(e.value)
    assert "k: 5 -> 3" in msg and "resume=false" in msg and str(out) in msg
    # resume=false starts over and gives what a fresh folder gives
    fresh = _demo(demo_suite, tmp_path / "fresh", "k=3")
    again = _demo(demo_suite, out, "k=3", "resume=false")
    assert _top1(again) == _top1(fresh)
    assert json.loads((out / "run.json").read_text())["fingerprint"]["k"] == 3


def test_the_same_run_resumes(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _demo(demo_suite, out)
    buf = io.StringIO()
    again = run(
        parse_args([f"data_root={demo_suite}", f"output_dir={out}", BENCHES, "max_samples=6"]), out=buf
    )
    assert "resuming: 12 samples already finished" in buf.getvalue()
    assert _top1(again) == _top1(first)
    # the selection strategy and max_samples do not change predictions: still the same run
    _demo(demo_suite, out, "selection=mean", "max_samples=8")


def test_another_checkpoint_with_the_same_path_is_another_run(demo_suite: Path, tmp_path: Path) -> None:
    ckpt = tmp_path / "policy.pt"
    shutil.copy(default_checkpoint(), ckpt)
    out = tmp_path / "run"
    _demo(demo_suite, out, f"ckpt={ckpt}")
    blob = torch.load(ckpt, weights_only=True)  # a retrained checkpoint saved over the old one
    state = blob["state_dict"]
    name = next(k for k, v in state.items() if v.is_floating_point())
    state[name] = state[name] + 0.01
    torch.save(blob, ckpt)
    with pytest.raises(GgeError, match=r"files\.ckpt\.digest: "):
        _demo(demo_suite, out, f"ckpt={ckpt}")


def test_another_prompt_or_benchmark_variant_is_another_run(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    replay = f"model.predictions={demo_suite / 'predictions.jsonl'}"
    args = [f"data_root={demo_suite}", f"output_dir={out}", replay, "benchmarks=[osworld_g]"]
    run(parse_args(args), out=io.StringIO())
    refined = [f"data_root={demo_suite}", f"output_dir={out}", replay, "benchmarks=[osworld_g_refined]"]
    with pytest.raises(GgeError, match=r"benchmarks\.osworld_g\.options: \{\} -> \(absent\)"):
        run(parse_args(refined), out=io.StringIO())
    assert differences({"model": {"prompts": {"system": "a"}}}, {"model": {"prompts": {"system": "b"}}}) == [
        'model.prompts.system: "a" -> "b"'
    ]


def test_predictions_without_a_run_record_are_not_reused(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _demo(demo_suite, out)
    (out / "run.json").unlink()  # e.g. a folder written by a gge before run.json existed
    with pytest.raises(GgeError, match=r"no run\.json saying which run made them"):
        _demo(demo_suite, out)
    _demo(demo_suite, out, "resume=false")


def test_output_dir_that_is_a_file(demo_suite: Path, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    for target in (f, f / "sub"):
        with pytest.raises(GgeError, match=f"output_dir {target}: {f} is a file, not a folder"):
            _demo(demo_suite, target)


def test_a_folder_in_use_refuses_and_a_killed_holder_leaves_no_lock(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with output_dir_lock(out), pytest.raises(GgeError, match="is in use by another gge run \\(pid "):
        _demo(demo_suite, out)
    # another process holds it, then is killed: the kernel drops the lock
    code = (
        "import sys, time\nfrom gge.run.runstate import output_dir_lock\n"
        f"with output_dir_lock({str(out)!r}):\n    print('held', flush=True)\n    time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(GgeError, match=f"pid {proc.pid}"):
            _demo(demo_suite, out)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()  # reaped: its descriptors, and so the lock, are gone
    assert _demo(demo_suite, out)["benchmarks"]
