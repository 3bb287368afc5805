from __future__ import annotations

from pathlib import Path

import pytest
from scipy.stats import binomtest

from gge.benchmarks.base import Average, Benchmark, BenchmarkOptions, LoadedBenchmark, TableSpec
from gge.scoring.grouping import wilson_interval
from gge.scoring.metrics import benchmark_metrics, mean_over_benchmarks
from gge.types import Candidate, SampleResult


class Fake(Benchmark):
    name = "fake"
    title = "Fake"
    directory = "fake"
    label_keys = ("setting", "kind", "cat")
    official = Average("macro_setting", ("setting",))
    extra_averages = (Average("macro_cells", ("setting", "kind")),)
    tables = (
        TableSpec(
            "setting x kind", rows="setting", cols="kind", row_order=("b", "a"), col_order=("text", "icon")
        ),
        TableSpec("cat", rows="cat"),
        TableSpec("absent key", rows="nope"),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


def _r(
    i: int, setting: str, kind: str, hits: tuple[bool, ...], top1: bool, cat=("x",), fmt=False
) -> SampleResult:
    cands = tuple(Candidate((float(j), 0.0)) for j in range(len(hits)))
    return SampleResult(
        "fake",
        str(i),
        {"setting": setting, "kind": kind, "cat": cat},
        3,
        cands,
        hits,
        {"critic": cands[0] if cands else None, "first": None},
        {"critic": top1, "first": False},
        format_error=fmt,
    )


RESULTS = [
    _r(0, "a", "text", (True, False, False), True),
    _r(1, "a", "text", (False, True, False), False, cat=("x", "y")),
    _r(2, "a", "icon", (False, False, False), False, cat=()),
    _r(3, "b", "text", (False, False, True), True),
    _r(4, "b", "icon", (), False, fmt=True),
]


def test_headline_numbers() -> None:
    """The unqualified top1 / oracle@j are the official (macro) headline; the micro means move to micro."""
    e = benchmark_metrics(Fake(), RESULTS, k=3, strategy="critic")
    assert e["samples"] == 5
    # macro over setting: a (samples 0-2) = top1 1/3, oracle@1..3 1/3, 2/3, 2/3; b (3-4) = 1/2, 0, 0, 1/2
    macro = {
        "top1": 100 * (1 / 3 + 1 / 2) / 2,
        "oracle@1": 100 * (1 / 3 + 0) / 2,
        "oracle@2": 100 * (2 / 3 + 0) / 2,
        "oracle@3": 100 * (2 / 3 + 1 / 2) / 2,
    }
    for key, want in macro.items():
        assert e[key] == pytest.approx(want), key
    assert e["official"]["rule"] == "macro_setting"
    assert e["official"]["top1"] == pytest.approx(macro["top1"])
    assert e["official"]["oracle@3"] == pytest.approx(macro["oracle@3"])
    # micro: hits over the 5 samples
    assert e["micro"] == pytest.approx({"top1": 40.0, "oracle@1": 20.0, "oracle@2": 40.0, "oracle@3": 60.0})
    assert e["averages"]["micro"]["top1"] == pytest.approx(40.0)
    assert e["intervals"]["top1"] == pytest.approx(wilson_interval(2, 5))  # of the micro mean
    assert e["intervals"]["oracle@3"] == pytest.approx(wilson_interval(3, 5))
    # four cells: a/text 1/2, a/icon 0, b/text 1, b/icon 0
    assert e["averages"]["macro_cells"]["top1"] == pytest.approx(100 * (0.5 + 0 + 1 + 0) / 4)
    assert e["format_errors"] == 1
    assert e["critic_gap"] == pytest.approx(macro["oracle@3"] - macro["top1"])
    assert e["top1_given_oracle"] == pytest.approx(100 * 2 / 3)
    assert e["selection"]["critic"] == pytest.approx(40.0) and e["selection"]["first"] == 0.0


def test_breakdown_multilabel_and_tables() -> None:
    e = benchmark_metrics(Fake(), RESULTS, k=3, strategy="critic")
    cat = e["breakdown"]["cat"]
    assert cat["x"]["samples"] == 4 and cat["y"]["samples"] == 1  # sample 1 counts in both
    assert "nope" not in e["breakdown"]
    titles = [t["title"] for t in e["tables"]]
    assert titles == ["setting x kind", "cat"]  # a table whose key no sample carries is dropped
    t = e["tables"][0]
    assert t["row_values"] == ["b", "a"] and t["col_values"] == ["text", "icon"]
    assert t["cells"]["a"]["text"] == {"samples": 2, "top1": 50.0, "oracle@3": 100.0}
    assert t["col_avg"]["icon"]["samples"] == 2 and t["all"]["samples"] == 5


@pytest.mark.parametrize(("hits", "n"), [(0, 10), (3, 10), (10, 10), (56, 100), (1, 1581)])
def test_wilson_matches_scipy(hits: int, n: int) -> None:
    lo, hi = wilson_interval(hits, n)  # type: ignore[misc]
    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert lo == pytest.approx(100 * ci.low, abs=1e-9) and hi == pytest.approx(100 * ci.high, abs=1e-9)


def test_wilson_of_no_trials_is_none() -> None:
    assert wilson_interval(0, 0) is None


def test_empty_benchmark_and_mean() -> None:
    e = benchmark_metrics(Fake(), [], k=3, strategy="critic")
    assert e["samples"] == 0 and e["top1"] is None and e["official"]["top1"] is None
    full = benchmark_metrics(Fake(), RESULTS, k=3, strategy="critic")
    m = mean_over_benchmarks({"empty": e, "full": full}, 3)
    assert m["benchmarks"] == ["full"] and m["top1"] == full["official"]["top1"]
