"""A one-answer run is scored, recorded and shown as K = 1 (issue 19, item 5; shared decision S3)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from tiny_checkpoints import build_tiny_qwen2_5_vl

from gge.benchmarks import get_benchmark
from gge.run.settings import parse_args
from gge.run.standalone import run

BENCH = "screenspot_v2"


def _replay(demo: Path, predictions: Path, out: Path, *extra: str) -> dict[str, Any]:
    args = [
        f"data_root={demo}",
        f"model.predictions={predictions}",
        f"output_dir={out}",
        f"benchmarks=[{BENCH}]",
        *extra,
    ]
    return run(parse_args(args), out=io.StringIO())


def _cut(demo: Path, path: Path, keep: int) -> list[dict[str, Any]]:
    """The demo's replay file with each record's first ``keep`` candidates (and scores) only."""
    records = [json.loads(x) for x in (demo / "predictions.jsonl").read_text().splitlines()]
    for r in records:
        r["candidates"] = r["candidates"][:keep]
        if r.get("scores") is not None:
            r["scores"] = r["scores"][:keep]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


def _first_hits(demo: Path, records: list[dict[str, Any]]) -> float:
    """Percent of the benchmark's samples whose first candidate lies in the target, counted here."""
    bench = get_benchmark(BENCH)
    samples = {s.id: s for s in bench.load(demo / bench.directory, bench.options_type()).samples}
    by_id = {str(r["id"]): r for r in records if r["benchmark"] == BENCH}
    hits = 0
    for sid, sample in samples.items():
        cands = by_id[sid]["candidates"]
        first = cands[0] if cands else None
        if isinstance(first, list) and not (first[0] < 0 and first[1] < 0):
            hits += bool(sample.region.contains(float(first[0]), float(first[1])))
    return 100 * hits / len(samples)


def test_a_replay_file_of_one_candidate_per_line_is_a_k1_run(demo_suite: Path, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    records = _cut(demo_suite, one, 1)
    doc = _replay(demo_suite, one, tmp_path / "k5", "k=5")
    assert doc["k"] == 1
    entry = doc["benchmarks"][BENCH]
    assert "oracle@1" in entry["official"] and "oracle@5" not in entry["official"]
    assert entry["official"]["top1"] == pytest.approx(_first_hits(demo_suite, records))
    assert entry["official"]["oracle@1"] == entry["official"]["top1"]
    report = (tmp_path / "k5" / "report.md").read_text()
    assert "Oracle@5" not in report and "K=5" not in report
    assert json.loads((tmp_path / "k5" / "results.json").read_text())["k"] == 1
    # what k=1 asks for gives the same numbers
    asked = _replay(demo_suite, one, tmp_path / "k1", "k=1")
    assert asked["k"] == 1 and asked["benchmarks"] == doc["benchmarks"]


@pytest.mark.parametrize(("keep", "k", "expected"), [(2, 5, 2), (5, 3, 3), (5, 5, 5)])
def test_a_replay_run_scores_at_most_the_candidates_its_records_carry(
    keep: int, k: int, expected: int, demo_suite: Path, tmp_path: Path
) -> None:
    path = tmp_path / "cut.jsonl"
    _cut(demo_suite, path, keep)
    doc = _replay(demo_suite, path, tmp_path / "out", f"k={k}")
    assert doc["k"] == expected
    keys = set(doc["benchmarks"][BENCH]["official"])
    assert f"oracle@{expected}" in keys
    assert (f"oracle@{k}" in keys) == (expected == k)


def test_a_replay_file_with_no_candidate_at_all_is_still_a_k1_run(demo_suite: Path, tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    _cut(demo_suite, path, 0)
    doc = _replay(demo_suite, path, tmp_path / "out", "k=5")
    assert doc["k"] == 1
    entry = doc["benchmarks"][BENCH]
    assert entry["official"]["top1"] == entry["official"]["oracle@1"] == 0.0
    assert entry["format_errors"] == entry["samples"] == 36  # no answer: every sample a format error


def test_the_demo_model_keeps_k(demo_suite: Path, tmp_path: Path) -> None:
    args = [
        f"data_root={demo_suite}",
        f"output_dir={tmp_path}",
        f"benchmarks=[{BENCH}]",
        "max_samples=4",
        "k=4",
    ]
    doc = run(parse_args(args), out=io.StringIO())
    assert doc["k"] == 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2_5_vl(tmp_path_factory.mktemp("ckpt") / "Qwen2.5-VL-tiny")


SMALL = ["model.max_pixels=50000", "model.max_new_tokens=8", "model.device=cpu", "max_samples=2"]


def test_an_official_greedy_preset_is_a_k1_run(tiny: Path, demo_suite: Path, tmp_path: Path) -> None:
    base = [f"data_root={demo_suite}", f"benchmarks=[{BENCH}]", f"ckpt={tiny}", *SMALL]
    doc = run(parse_args([*base, f"output_dir={tmp_path / 'greedy'}", "k=5"]), out=io.StringIO())
    assert (
        doc["model"]["adapter"]["preset"] == "qwen2_5_vl" and doc["model"]["adapter"]["proposer"] == "greedy"
    )
    assert doc["k"] == 1
    assert "oracle@5" not in doc["benchmarks"][BENCH]["official"]
    assert "Oracle@5" not in (tmp_path / "greedy" / "report.md").read_text()
    # the same preset sampling K answers scores K
    sampled = run(
        parse_args([*base, f"output_dir={tmp_path / 'sampling'}", "k=3", "model.proposer=sampling"]),
        out=io.StringIO(),
    )
    assert sampled["k"] == 3
