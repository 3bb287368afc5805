"""A benchmark's declared headline interval: the seeded percentile bootstrap of its micro Top-1.

The independent computation is ``scipy.stats.bootstrap(..., method="percentile")`` with the same
seeded generator: it draws ``rng.integers(0, n, (n_resamples, n))`` in one batch, so gge, which draws
the same stream in blocks of rows, must give the very same resample means (its
``bootstrap_distribution``, bit for bit) and the same interval (to the last bits: scipy's quantile
and numpy's interpolate in another order).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

from gge.benchmarks.base import Benchmark, BenchmarkOptions, BootstrapCI, LoadedBenchmark, TableSpec
from gge.scoring.metrics import benchmark_metrics, headline_interval, scalar_metrics
from gge.scoring.stats import HEADLINE_SEED, bootstrap_means, percentile_bootstrap
from gge.types import Candidate, SampleResult


def scipy_bootstrap(values: np.ndarray, *, resamples: int = 9999, confidence: float = 0.95, seed: int = 0):
    return stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )


def scipy_interval(values: np.ndarray, *, resamples: int = 9999, confidence: float = 0.95, seed: int = 0):
    res = scipy_bootstrap(values, resamples=resamples, confidence=confidence, seed=seed)
    return pytest.approx((float(res.confidence_interval.low), float(res.confidence_interval.high)), abs=1e-12)


def outcomes(n: int, hits: int, seed: int = 1) -> np.ndarray:
    values = np.array([1.0] * hits + [0.0] * (n - hits))
    np.random.default_rng(seed).shuffle(values)
    return values


@pytest.mark.parametrize(("n", "hits"), [(557, 301), (564, 316), (40, 13), (7, 3), (2, 1)])
def test_the_interval_is_scipys(n: int, hits: int) -> None:
    values = outcomes(n, hits)
    assert np.array_equal(bootstrap_means(values, seed=0), scipy_bootstrap(values).bootstrap_distribution)
    assert percentile_bootstrap(values, resamples=9999, confidence=0.95, seed=0) == scipy_interval(values)


@pytest.mark.parametrize("chunk_cells", [1, 7, 3 * 37 + 1, 1 << 22])
def test_drawing_in_blocks_continues_the_same_stream(chunk_cells: int) -> None:
    values = outcomes(37, 20)
    means = bootstrap_means(values, resamples=501, seed=3, chunk_cells=chunk_cells)
    assert np.array_equal(means, scipy_bootstrap(values, resamples=501, seed=3).bootstrap_distribution)
    ours = percentile_bootstrap(values, resamples=501, confidence=0.9, seed=3, chunk_cells=chunk_cells)
    assert ours == scipy_interval(values, resamples=501, confidence=0.9, seed=3)


def test_other_seeds_and_levels_follow_scipy() -> None:
    values = outcomes(120, 77)
    for seed in (0, 1, 12345):
        for confidence in (0.8, 0.95, 0.99):
            got = percentile_bootstrap(values, resamples=2000, confidence=confidence, seed=seed)
            assert got == scipy_interval(values, resamples=2000, confidence=confidence, seed=seed)
    assert percentile_bootstrap(values, seed=0) != percentile_bootstrap(values, seed=1)


def test_known_values() -> None:
    assert percentile_bootstrap(np.ones(50)) == (1.0, 1.0)
    assert percentile_bootstrap(np.zeros(50)) == (0.0, 0.0)
    assert headline_interval(BootstrapCI(), [True] * 9)["top1"] == [100.0, 100.0]
    assert headline_interval(BootstrapCI(), [False] * 9)["top1"] == [0.0, 0.0]
    assert headline_interval(BootstrapCI(), [])["top1"] is None
    with pytest.raises(ValueError):
        percentile_bootstrap(np.array([]))


class Declared(Benchmark):
    name = "declared"
    title = "Declared"
    directory = "declared"
    label_keys = ("app",)
    tables = (TableSpec("By app", rows="app"),)
    headline_ci: ClassVar[BootstrapCI | None] = BootstrapCI()

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


class Plain(Declared):
    name = "plain"
    headline_ci = None


def _results(top1: list[bool]) -> list[SampleResult]:
    out = []
    for i, hit in enumerate(top1):
        c = Candidate((1.0, 1.0))
        out.append(
            SampleResult(
                "declared",
                str(i),
                {"app": "a" if i % 2 else "b"},
                1,
                (c,),
                (hit,),
                {"first": c},
                {"first": hit},
            )
        )
    return out


def test_the_entry_of_a_benchmark_that_declares_it() -> None:
    hits = [bool(v) for v in outcomes(60, 37, seed=4)]
    entry = benchmark_metrics(Declared(), _results(hits), k=1, strategy="first")
    res = scipy_bootstrap(np.asarray(hits, dtype=float), seed=HEADLINE_SEED)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    got = entry["headline_interval"]
    assert {key: value for key, value in got.items() if key != "top1"} == {
        "method": "percentile",
        "resamples": 9999,
        "confidence": 0.95,
        "seed": 0,
    }
    assert got["top1"] == pytest.approx([100 * lo, 100 * hi], abs=1e-10)
    assert list(got) == ["method", "resamples", "confidence", "seed", "top1"]
    keys = list(entry)
    assert keys[keys.index("intervals") + 1] == "headline_interval"
    assert entry["top1"] == pytest.approx(100 * 37 / 60)
    scalars = scalar_metrics({"declared": entry}, 1)
    assert scalars["grounding/declared/top1_ci_low"] == pytest.approx(100 * lo, abs=1e-10)
    assert scalars["grounding/declared/top1_ci_high"] == pytest.approx(100 * hi, abs=1e-10)
    # the same answers again: the same interval (seeded)
    assert (
        benchmark_metrics(Declared(), _results(hits), k=1, strategy="first")["headline_interval"]
        == (entry["headline_interval"])
    )


def test_a_benchmark_that_declares_none_gets_no_key_and_no_scalar() -> None:
    entry = benchmark_metrics(Plain(), _results([True, False, True]), k=1, strategy="first")
    assert "headline_interval" not in entry
    assert not any("ci_" in key for key in scalar_metrics({"plain": entry}, 1))


def test_an_abstention_or_format_error_is_a_miss_in_the_interval() -> None:
    results = _results([True, True, True, True])
    results[0] = SampleResult(
        "declared",
        "0",
        {"app": "b"},
        1,
        (Candidate(None),),
        (False,),
        {"first": Candidate(None)},
        {"first": False},
    )
    results[1] = SampleResult(
        "declared", "1", {"app": "a"}, 1, (), (), {"first": None}, {"first": False}, format_error=True
    )
    entry = benchmark_metrics(Declared(), results, k=1, strategy="first")
    res = scipy_bootstrap(np.array([0.0, 0.0, 1.0, 1.0]))
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    assert entry["headline_interval"]["top1"] == pytest.approx([100 * lo, 100 * hi], abs=1e-10)
