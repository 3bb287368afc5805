"""The W&B tables name the benchmark's variant and denominator (a trailing ``variant`` column).

Real samples over small PNGs, scored and summed by the real metrics; a recording run keeps what
:func:`gge.loggers.wandb.log_evaluation_wandb` logs (wandb's own Table objects).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks.base import Benchmark, BenchmarkOptions, LoadedBenchmark, TableSpec
from gge.loggers.dispatch import log_evaluation
from gge.loggers.wandb import (
    BREAKDOWN_COLUMNS,
    DECOMPOSITION_COLUMNS,
    SIZE_COLUMNS,
    log_evaluation_wandb,
    sample_columns,
)
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import score_sample
from gge.types import Absent, Box, Candidate, Prediction, Sample, SampleResult

K = 2
VARIANT = {"instructions": "original", "refusals": "miss", "denominator": 3}
NAMED = "instructions: original · refusals: miss · denominator: 3"
TABLES = ("samples", "breakdown", "decomposition", "size_buckets")


class Bench(Benchmark):
    name = "osworld_g"
    title = "OSWorld-G"
    directory = "osworld_g"
    label_keys = ("box_type",)
    tables = (TableSpec("By box type", rows="box_type"),)

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], int | None]] = []

    def log(self, payload: dict[str, Any], step: int | None = None) -> None:
        self.calls.append((payload, step))


class WandbLogger:  # a Lightning WandbLogger by class name
    def __init__(self) -> None:
        self.experiment = Recorder()


def scored(tmp_path: Path) -> tuple[dict[str, Sample], list[SampleResult], dict[str, Any]]:
    shot = tmp_path / "shot.png"
    Image.new("RGB", (200, 100)).save(shot)
    samples = [
        Sample("osworld_g", "a", str(shot), (200, 100), "click a", Box(20, 10, 60, 40), {"box_type": "bbox"}),
        Sample("osworld_g", "b", str(shot), (200, 100), "click b", Box(20, 10, 60, 40), {"box_type": "bbox"}),
        Sample("osworld_g", "r", str(shot), (200, 100), "click r", Absent(False), {"box_type": "refusal"}),
    ]
    answers = {"a": ((30.0, 20.0), (150.0, 90.0)), "b": ((150.0, 90.0), (30.0, 20.0)), "r": (None,)}
    results = [
        score_sample(s, Prediction("osworld_g", s.id, tuple(Candidate(p) for p in answers[s.id])), k=K)
        for s in samples
    ]
    entry: dict[str, Any] = dict(benchmark_metrics(Bench(), results, k=K, strategy="first"))
    return {s.id: s for s in samples}, results, entry


def _log(
    run: Any, entry: dict[str, Any], samples: dict[str, Sample], results: list[SampleResult], **kw: Any
) -> dict[str, Any]:
    log_evaluation_wandb(
        run, step=3, benchmark_name="osworld_g", title="OSWorld-G", entry=entry, samples=samples,
        results=results, table_ids=list(samples), k=K, strategy="first", **kw,
    )  # fmt: skip
    ((payload, _),) = run.calls
    return payload


def test_every_table_ends_with_the_variant_of_the_entry(tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    samples, results, entry = scored(tmp_path)
    entry["load"] = {"variant": VARIANT}
    payload = _log(Recorder(), entry, samples, results)
    expected = {
        "samples": sample_columns(K),
        "breakdown": [*BREAKDOWN_COLUMNS, f"oracle@{K}"],
        "decomposition": list(DECOMPOSITION_COLUMNS),
        "size_buckets": [*SIZE_COLUMNS, f"oracle@{K}"],
    }
    for name in TABLES:
        table = payload[f"grounding/osworld_g/{name}"]
        assert table.columns == [*expected[name], "variant"], name
        assert table.data and all(row[-1] == NAMED for row in table.data), name
    samples_table = payload["grounding/osworld_g/samples"]
    assert [row[1] for row in samples_table.data] == ["a", "b", "r"]
    # the refusal sample abstained and still missed: refusals=miss
    assert [row[sample_columns(K).index("top1")] for row in samples_table.data] == [True, False, False]


def test_without_a_variant_the_tables_are_as_before(tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    samples, results, entry = scored(tmp_path)
    for load in (None, {"variant": {}}):
        if load is not None:
            entry["load"] = load
        payload = _log(Recorder(), entry, samples, results)
        assert payload["grounding/osworld_g/samples"].columns == sample_columns(K)
        assert payload["grounding/osworld_g/breakdown"].columns == [*BREAKDOWN_COLUMNS, f"oracle@{K}"]
        assert payload["grounding/osworld_g/decomposition"].columns == list(DECOMPOSITION_COLUMNS)


def test_a_variant_given_by_the_caller_and_through_the_dispatch(tmp_path: Path) -> None:
    """An online evaluation's entry has no ``load``: the caller names the variant."""
    pytest.importorskip("wandb")
    samples, results, entry = scored(tmp_path)
    payload = _log(Recorder(), entry, samples, results, variant=NAMED)
    assert all(payload[f"grounding/osworld_g/{n}"].columns[-1] == "variant" for n in TABLES)
    logger = WandbLogger()
    written = log_evaluation(
        [logger], step=3, benchmark=Bench(), entry=entry, samples=samples, results=results,
        table_ids=list(samples), k=K, strategy="first", log_dir=tmp_path, variant=NAMED,
    )  # fmt: skip
    assert written == []
    ((payload, _),) = logger.experiment.calls
    assert payload["grounding/osworld_g/breakdown"].data[0][-1] == NAMED


def test_a_headline_that_is_not_official_says_so_in_every_table(tmp_path: Path) -> None:
    pytest.importorskip("wandb")
    samples, results, entry = scored(tmp_path)
    caveat = "the mean of two of the three subtasks"
    for variant, expected in (
        (VARIANT, f"{NAMED} · not official: {caveat}"),
        ({}, f"not official: {caveat}"),  # no variant keys: the column is there for the caveat alone
    ):
        entry["load"] = {"variant": variant, "headline_caveat": caveat}
        payload = _log(Recorder(), entry, samples, results)
        for name in TABLES:
            table = payload[f"grounding/osworld_g/{name}"]
            assert table.columns[-1] == "variant" and {row[-1] for row in table.data} == {expected}, name
