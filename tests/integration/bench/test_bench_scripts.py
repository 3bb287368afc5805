"""The perf scripts run (so that they cannot rot): their quick modes print the ratio lines they promise.

No timing is asserted (seconds move with the machine); what is pinned is that each script finishes,
prints every ratio line with a number, and that the figures it can know exactly are right: the GPU
script's tiny CPU mode writes figures.json whose image tokens per sample are the processor's count for
its screenshot size, and whose one-prefill sampling case reports the cached prompt tokens the
ledger's rule gives.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

pytestmark = pytest.mark.slow

NUMBER = r"-?\d+(\.\d+)?"


def _run(script: str, *args: str, timeout: int = 600) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def _ratio_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("ratio: ")]


def test_batch_grouping_quick_prints_its_ratios() -> None:
    out = _run("batch_grouping.py", "--quick")
    lines = _ratio_lines(out)
    for pattern in (
        rf"ratio: batch 8 grouped / batch 1 samples/s = {NUMBER} \(target >= 1: (met|MISSED)\)",
        rf"ratio: batch 8 grouped / batch 1 memory per sample = {NUMBER} \(target <= 1: (met|MISSED)\)",
        rf"ratio: batch 8 grouped / batch 1 samples per CPU second = {NUMBER}",
        rf"ratio: batch 8 grouped / not grouped samples/s = {NUMBER}",
    ):
        assert any(re.match(pattern, line) for line in lines), (pattern, out)
    # grouped, no batch mixes the two sizes and none pays for padding; not grouped, every one does
    rows = {
        line.split("|")[1].strip(): line.split("|") for line in out.splitlines() if line.startswith("| batch")
    }
    assert rows["batch 8, grouped"][5].split() == ["0", "of", "2"]
    assert rows["batch 8, grouped"][6].strip() == "0.0%"
    assert rows["batch 8, not grouped"][5].split() == ["2", "of", "2"]
    # a sample's ledger tokens are its own, grouped or not, batched or not
    assert "ledger tokens per sample equal: True" in out


def test_ledger_overhead_quick_prints_its_ratios() -> None:
    out = _run("ledger_overhead.py", "--quick", "--repeats", "1")
    lines = _ratio_lines(out)
    assert any(
        re.match(rf"ratio: ledger \(records, summary, encoding, report\) / run = {NUMBER}%", x) for x in lines
    )
    assert any(
        re.match(rf"ratio: ledger with budget curves / run = {NUMBER}% \(target < 2%: (met|MISSED)\)", x)
        for x in lines
    )
    # 6 default benchmarks x 6 samples, and the demo's two requests (propose, judge) per sample
    assert "6 benchmarks, 36 samples, K=5, 72 cost records" in out


def test_gpu_cost_tiny_cpu_mode_writes_its_figures(tmp_path: Path) -> None:
    out = _run("gpu_cost.py", "--tiny", "--device", "cpu", "--out", str(tmp_path / "figures"))
    figures = json.loads((tmp_path / "figures" / "figures.json").read_text(encoding="utf-8"))
    assert (tmp_path / "figures" / "figures.txt").read_text(encoding="utf-8") in out
    cases = {c["case"]: c for c in figures["cases"]}
    assert list(cases) == [
        "greedy, batch 1",
        "greedy, batch 8",
        "sampling K=5, one prefill",
        "5 greedy calls",
        "pointwise critic, K=5",
        "refine (zoom x2)",
    ]
    assert figures["facts"]["timer"] == "time.perf_counter" and figures["facts"]["screen"] == [448, 252]
    # 448x252 resizes to 448x252 (multiples of 28): (448/28) * (252/28) = 16 * 9 = 144 image tokens
    for name in ("greedy, batch 1", "greedy, batch 8"):
        assert cases[name]["ledger"]["image_tokens_per_sample"] == 144
    # the one prefill's 5 answers consume the image 5 times (most of it read from the cache)
    assert cases["sampling K=5, one prefill"]["ledger"]["image_tokens_per_sample"] == 5 * 144
    assert cases["5 greedy calls"]["ledger"]["image_tokens_per_sample"] == 5 * 144
    assert cases["pointwise critic, K=5"]["ledger"]["image_tokens_per_sample"] == 5 * 144
    # the crop is 448/2 x 252/2 = 224x126; 126 / 28 = 4.5 rounds half to even (smart_resize's round):
    # 224x112, 8 * 4 = 32 image tokens
    assert cases["refine (zoom x2)"]["ledger"]["image_tokens_per_sample"] == 32
    # batch sizes the ledger saw: 1 a call, 8 in one call, 5 marked images in one critic forward
    assert cases["greedy, batch 1"]["ledger"]["batch_sizes"] == [1]
    assert cases["greedy, batch 8"]["ledger"]["batch_sizes"] == [8]
    assert cases["pointwise critic, K=5"]["ledger"]["batch_sizes"] == [5]
    # one prefill for K=5: the prompt consumed 5 times, (n - 1) * (prompt - 1) of it from the cache
    shared = cases["sampling K=5, one prefill"]["ledger"]
    consumed = cases["5 greedy calls"]["ledger"]["input_tokens_per_sample"]
    assert shared["input_tokens_per_sample"] == consumed and consumed % 5 == 0
    assert shared["cached_tokens_per_sample"] == 4 * (consumed // 5 - 1)
    for c in figures["cases"]:
        assert c["seconds"] > 0 and c["ledger"]["seconds"] > 0 and c["peak_gib"] is None
    lines = _ratio_lines(out)
    assert any(
        re.fullmatch(rf"ratio: greedy, batch 8 / greedy, batch 1 samples/s = {NUMBER}", x) for x in lines
    )
    assert any(
        re.fullmatch(rf"ratio: sampling K=5, one prefill / 5 greedy calls seconds = {NUMBER}", x)
        for x in lines
    )
    assert sum(x.startswith("ratio: ledger seconds / event seconds") for x in lines) == 6
