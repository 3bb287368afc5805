"""Hand-built results.json pieces of issue 20: a cost ledger, a refine summary, budget curves, a setup.

They follow :mod:`gge.documents.results`'s TypedDicts (``CostSummary``, ``RefineSummary``,
``BudgetCurves``, ``CostSetup``) and carry values whose report formatting is known by hand (no halves
that a rounding rule could send either way). Shared by the report, browser and logger tests.
"""

from __future__ import annotations

import copy
from typing import Any

from report_documents import base_entry, make_document

SETUP: dict[str, Any] = {
    "source": "measured",
    "hardware": "Test CPU x 2 cores",
    "device": "cpu",
    "backend": "transformers",
    "dtype": "float32",
    "batch_size": 8,
    "batch_grouping": "image size",
}
SETUP_LINE = (
    "Costs: measured on Test CPU x 2 cores (cpu, float32), backend transformers, "
    "batch 8 (grouped by image size)"
)


def _spread(mean: float, p50: float, p90: float) -> dict[str, float]:
    return {"mean": mean, "p50": p50, "p90": p90}


def _seconds(mean: float, p50: float, p90: float, p99: float) -> dict[str, float]:
    return {"mean": mean, "p50": p50, "p90": p90, "p99": p99}


def _stage(
    calls: float,
    total: dict[str, float],
    image: float,
    text: float,
    output: float,
    seconds: dict[str, float],
    share: tuple[float, float],
) -> dict[str, Any]:
    return {
        "calls_per_sample": calls,
        "tokens": {
            "input": _spread(image + text, image + text, image + text),
            "image": _spread(image, image, image),
            "text": _spread(text, text, text),
            "output": _spread(output, output, output),
            "cached": None,
            "total": total,
        },
        "seconds": seconds,
        "share": {"tokens": share[0], "seconds": share[1]},
    }


def cost() -> dict[str, Any]:
    """A ledger of three stages over 40 samples (2 more without records)."""
    return {
        "samples": 40,
        "unrecorded": 2,
        "source": "measured",
        "stages": {
            "propose": _stage(
                1.0,
                _spread(1040.3, 1038.0, 1055.6),
                800.0,
                200.0,
                40.3,
                _seconds(0.25, 0.2, 0.4, 0.48),
                (40.0, 33.3333),
            ),
            "judge": _stage(
                2.0,
                _spread(1040.0, 1040.0, 1040.0),
                800.0,
                240.0,
                0.0,
                _seconds(0.25, 0.25, 0.3, 0.31),
                (40.0, 33.3333),
            ),
            "refine": _stage(
                1.0,
                _spread(519.7, 520.0, 522.0),
                400.0,
                100.0,
                19.7,
                _seconds(0.25, 0.25, 0.3, 0.35),
                (20.0, 33.3333),
            ),
        },
        "total": _stage(
            4.0,
            _spread(2600.0, 2598.0, 2617.4),
            2000.0,
            540.0,
            60.0,
            _seconds(0.75, 0.7, 0.9, 0.99),
            (100.0, 100.0),
        ),
    }


COST_ROWS = [  # cost(), as the report writes it
    ["propose", "1.00", "1,040", "1,038", "1,056", "800", "200", "40.3", "0.25", "0.2", "0.4", "0.48",
     "40.0", "33.3"],
    ["judge", "2.00", "1,040", "1,040", "1,040", "800", "240", "0.0", "0.25", "0.25", "0.3", "0.31",
     "40.0", "33.3"],
    ["refine", "1.00", "520", "520", "522", "400", "100", "19.7", "0.25", "0.25", "0.3", "0.35",
     "20.0", "33.3"],
    ["total", "4.00", "2,600", "2,598", "2,617", "2,000", "540", "60.0", "0.75", "0.7", "0.9", "0.99",
     "100.0", "100.0"],
]  # fmt: skip
COST_HEADER = [
    "stage", "calls/sample", "tokens mean", "tokens p50", "tokens p90", "image mean", "text mean",
    "output mean", "s mean", "s p50", "s p90", "s p99", "% of tokens", "% of seconds",
]  # fmt: skip


def refine() -> dict[str, Any]:
    """A refine stage that fixed 4 misses and broke 2 hits of 40 samples, run for 30."""
    return {
        "base": "critic",
        "samples": 40,
        "triggered": 30,
        "trigger_rate": 75.0,
        "before": 62.5,
        "after": 67.5,
        "fixed": 4,
        "broken": 2,
        "format_errors": 1,
        "cost_share": {"tokens": 20.0, "seconds": 33.3333},
    }


REFINE_ROW = ["critic", "40", "62.5", "67.5", "+5.0", "4", "2", "30 (75.0%)", "1", "20.0", "33.3"]

_SPATIAL = ("mean", "median", "geomedian", "medoid")


def _point(
    j: int,
    critic: float,
    cluster: float,
    first: float,
    others: tuple[float, ...],
    oracle: float,
    proposer: tuple[float | None, float | None],
    with_critic: tuple[float | None, float | None],
    cost: str,
    subsets: int,
) -> dict[str, Any]:
    top1 = {"critic": critic, "first": first, **dict(zip(_SPATIAL, others, strict=True)), "cluster": cluster}
    return {
        "j": j,
        "top1": top1,
        "oracle": oracle,
        "tokens": proposer[0],
        "seconds": proposer[1],
        "critic": {"tokens": with_critic[0], "seconds": with_critic[1]},
        "cost": cost,
        "subsets": subsets,
    }


def budget() -> dict[str, Any]:
    """K = 3 sampled answers after a greedy first, a pointwise critic, and the refined point.

    The proposer's requests cost 840.3, 940.3 and 1040.3 tokens (0.15, 0.2, 0.25 s) at j = 1..3; the
    critic's pick adds its judges from j = 2 (none at j = 1: one candidate, no critic), so 2080.3 tokens
    and 0.5 s at j = 3 (cost()'s total less its refine stage); the refined point is the whole 2600.
    """
    return {
        "k": 3,
        "method": "subsets",
        "first_slot": 1,
        "critic": "pointwise",
        "points": [
            _point(1, 40.0, 40.0, 40.0, (40.0,) * 4, 40.0, (840.3, 0.15), (840.3, 0.15), "derived", 1),
            _point(2, 55.0, 45.0, 40.0, (42.5, 42.5, 44.0, 47.5), 60.0, (940.3, 0.2), (1633.7, 0.375),
                   "derived", 2),
            _point(3, 62.5, 50.0, 40.0, (45.0, 47.5, 47.5, 46.0), 70.0, (1040.3, 0.25), (2080.3, 0.5),
                   "measured", 1),
        ],
        "refined": {"top1": 67.5, "tokens": 2600.0, "seconds": 0.75, "cost": "measured"},
        "notes": ["The critic's scores of a subset are the run's own: no new judge request."],
    }  # fmt: skip


BUDGET_HEADER = ["j", "tokens/sample", "seconds/sample", "critic tokens/sample", "critic seconds/sample",
                 "critic", "cluster (voting)", "first", "best other spatial", "Oracle@j"]  # fmt: skip
BUDGET_ROWS = [
    ["1", "840†", "0.15†", "840†", "0.15†", "40.0", "40.0", "40.0", "40.0 (mean)", "40.0"],
    ["2", "940†", "0.2†", "1,634†", "0.375†", "55.0", "45.0", "40.0", "47.5 (medoid)", "60.0"],
    ["3", "1,040", "0.25", "2,080", "0.5", "62.5", "50.0", "40.0", "47.5 (median)", "70.0"],
]


def cost_entry(**overrides: Any) -> dict[str, Any]:
    """OSWorld-G's entry of :func:`report_documents.base_entry` with the cost, refine and budget sections."""
    entry = base_entry(62.5, 70.0, samples=40)
    entry["selection"] = {
        "critic": 62.5,
        "first": 40.0,
        "mean": 45.0,
        "median": 47.5,
        "geomedian": 47.5,
        "medoid": 46.0,
        "cluster": 50.0,
        "refined": 67.5,
    }
    entry.update(cost=cost(), refine=refine(), budget=budget())
    entry.update(overrides)
    return entry


def cost_document(**entry_overrides: Any) -> dict[str, Any]:
    """A results document of one benchmark (osworld_g) with every cost section and the run's setup."""
    document = copy.deepcopy(make_document())
    document["benchmarks"] = {"osworld_g": cost_entry(**entry_overrides)}
    document["mean"] = {"benchmarks": ["osworld_g"], "top1": 62.5, "oracle@3": 70.0}
    document["cost"] = dict(SETUP)
    return document
