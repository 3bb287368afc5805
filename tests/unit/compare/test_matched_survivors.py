"""The matched-budget rule's corners (issue 26's mutation survivors), on curves and runs built by hand.

Each test pins one rule of :mod:`gge.compare.matched` that the suite left free: the tie-breaks of the
closest pair, the uncertainty of measured seconds and the pairings it hides, the replayed-run
warning standing alone, a ``refined`` selection making runs differ, and the interval at exactly
:data:`gge.compare.pairing.MIN_CLUSTERS` screenshots. Expected values are worked out in the comments,
not read from the code.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gge.compare.matched import (
    Curve,
    closest,
    differs,
    matched_budget,
    seconds_spread,
    setup_warnings,
    spread_tolerance,
)
from gge.compare.pairing import MIN_CLUSTERS
from gge.compare.runs import Line, Run
from gge.scoring.stats import resample_weights
from gge.types import Candidate, CostRecord

BENCH = "bench"


def _curve(costs: list[tuple[float | None, float | None]], js: list[int] | None = None) -> Curve:
    """A curve whose every point is known (one sample, a hit), costing ``costs`` (tokens, seconds)."""
    js = js or list(range(1, len(costs) + 1))
    return Curve(
        "critic",
        max(js),
        "prefix",
        None,
        tuple(js),
        tuple((1.0,) for _ in js),
        tuple(costs),
        tuple("derived" for _ in js),
    )


def _pair(a: Curve, b: Curve, tolerance: float = 0.0) -> tuple[int, int]:
    match = closest(a, b, tolerance)
    assert match is not None
    return a.js[match.i], b.js[match.m]


def test_a_tie_of_relative_difference_goes_to_the_larger_budget() -> None:
    # (1, 1) and (2, 2) are both 0 apart: the larger budget (200 over 100) wins
    a = _curve([(100.0, None), (200.0, None)])
    b = _curve([(100.0, None), (200.0, None)])
    assert _pair(a, b) == (2, 2)


def test_then_a_tie_of_budget_goes_to_the_fewer_candidates() -> None:
    # A costs 100 at j = 1 and at j = 2, B 100 at j = 1: both pairs are 0 apart at a budget of 100;
    # (1, 1) uses 2 candidates, (2, 1) 3
    a = _curve([(100.0, None), (100.0, None)])
    b = _curve([(100.0, None)])
    assert _pair(a, b) == (1, 1)


def test_tokens_where_both_know_them_else_seconds() -> None:
    # tokens pair (1, 2) exactly; seconds would pair (2, 1)
    a = _curve([(100.0, 2.0), (300.0, 4.0)])
    b = _curve([(50.0, 4.0), (100.0, 8.0)])
    match = closest(a, b, tolerance=0.5)  # a spread of seconds does nothing to tokens
    assert match is not None and match.unit == "tokens" and (match.i, match.m) == (0, 1)
    assert match.inside == ((0, 1),)
    # B counts no tokens: seconds, even though A does
    b_timed = _curve([(None, 4.0), (None, 8.0)])
    match = closest(a, b_timed)
    assert match is not None and match.unit == "seconds" and (match.i, match.m) == (1, 0)


def test_seconds_pair_at_the_closest_and_list_the_pairings_within_the_tolerance() -> None:
    # A 1.00, 1.04 s; B the same 3% slower: 1.03, 1.0712 s. Apart: (1, 1) 0.03/1.03 = 0.0291,
    # (2, 2) 0.0291, (2, 1) |1.04 - 1.03|/1.04 = 0.0096 (the closest), (1, 2) 0.0712/1.0712 = 0.0665
    a = _curve([(None, 1.0), (None, 1.04)])
    b = _curve([(None, 1.03), (None, 1.0712)])
    match = closest(a, b)
    assert match is not None and (match.i, match.m) == (1, 0) and match.inside == ((1, 0),)
    # a tolerance of 0.05: every pairing within 0.0096 + 0.05 = 0.0596 of it but (1, 2) is listed, the
    # pair first; the pair itself stays the closest measured cost
    match = closest(a, b, tolerance=0.05)
    assert match is not None and match.unit == "seconds"
    assert (match.i, match.m) == (1, 0) and match.rel == pytest.approx(0.01 / 1.04)
    assert match.inside[0] == (1, 0) and set(match.inside) == {(1, 0), (0, 0), (1, 1)}
    # 0.03 reaches (1, 1) and (2, 2) (0.0291 - 0.0096 = 0.0195 from it) but not (1, 2); 0.019 neither
    got = closest(a, b, tolerance=0.03)
    assert got is not None and set(got.inside) == {(1, 0), (0, 0), (1, 1)}
    got = closest(a, b, tolerance=0.019)
    assert got is not None and got.inside == ((1, 0),)
    # a tolerance reaching every pairing lists all four, the pair unchanged
    got = closest(a, b, tolerance=1.0)
    assert got is not None and (got.i, got.m) == (1, 0) and len(got.inside) == 4


def test_the_tolerance_is_the_root_sum_of_squares() -> None:
    # the uncertainty of a difference of two independent measured costs: 0.03 and 0.04 -> 0.05
    assert spread_tolerance(0.03, 0.04) == pytest.approx(0.05)
    assert spread_tolerance(None, 0.02) == pytest.approx(0.02)
    assert spread_tolerance(None, None) == 0.0


def _line(i: int, cost: tuple[CostRecord, ...], hits: tuple[bool, ...], shot: str) -> Line:
    cands = tuple(Candidate((float(i), float(i))) for _ in hits)
    return Line(str(i), i + 1, hits[0], hits, shot, None, candidates=cands, costs=cost)


def test_the_uncertainty_of_seconds_is_the_interval_of_the_mean() -> None:
    # per-sample seconds 1, 2, 3, 4, 10 (one sample's 10 is two requests, 6 + 4): mean 4, squared
    # deviations 9 + 4 + 1 + 0 + 36 = 50, sd^2 = 50 / 4 = 12.5 (ddof 1), n = 5:
    # 1.96 * sqrt(12.5) / sqrt(5) / 4 = 1.96 * sqrt(2.5) / 4
    want = 1.96 * math.sqrt(2.5) / 4
    per = [(1.0,), (2.0,), (3.0,), (4.0,), (6.0, 4.0)]
    lines = [
        _line(i, tuple(CostRecord("propose", seconds=s) for s in x), (True,), "s") for i, x in enumerate(per)
    ]
    assert seconds_spread(lines) == pytest.approx(want)
    # a sample whose seconds are unknown is left out; none known: None
    unknown = _line(9, (CostRecord("propose"),), (True,), "s")
    assert seconds_spread([*lines, unknown]) == pytest.approx(want)
    assert seconds_spread([unknown]) is None
    # the same samples four times over: the sd about the same, the interval of the mean narrower ...
    many = [_line(i, x.costs, (True,), "s") for i, x in enumerate(lines * 4)]
    # ... 20 samples, sd^2 = 4 * 50 / 19: 1.96 * sqrt(200 / 19 / 20) / 4
    assert seconds_spread(many) == pytest.approx(1.96 * math.sqrt(200 / 19 / 20) / 4)
    # one sample, or a mean of 0: no interval to speak of, 0
    assert seconds_spread(lines[:1]) == 0.0
    zero = [_line(i, (CostRecord("propose", seconds=0.0),), (True,), "s") for i in range(3)]
    assert seconds_spread(zero) == 0.0


def _run(folder: Path, k: int, *, selection: str = "critic", **extra: Any) -> Run:
    document: dict[str, Any] = {
        "selection": selection,
        "k": k,
        "protocol": "p",
        "config": {"model": {"critic": "probability"}},
        "model": {},
        "benchmarks": {BENCH: {"budget": None if k == 1 else {"critic": None, "first_slot": None}}},
    }
    for key, value in extra.items():
        document[key] = value
    return Run(folder, folder / "results.json", folder / "predictions.jsonl", document, {}, folder.name)  # type: ignore[arg-type]


SETUP = {
    "source": "measured",
    "hardware": "Test CPU",
    "device": "cpu",
    "backend": "transformers",
    "dtype": None,
    "batch_size": 8,
    "batch_grouping": "none",
}


def test_a_replayed_run_gets_the_replayed_warning_only(tmp_path: Path) -> None:
    """A replayed and B measured with another backend: the setups cannot be checked, so only that is said."""
    a = _run(tmp_path / "a", 1, cost=SETUP | {"source": "replayed", "hardware": "not measured here"})
    b = _run(tmp_path / "b", 2, cost=SETUP | {"backend": "openai"})
    assert setup_warnings(a, b, BENCH, "tokens") == [
        f"{BENCH}: A's costs are replayed (not measured here): the setup they were measured on is not "
        "recorded, so whether A's tokens compare with B's is unknown"
    ]
    # measured both: the backends differ
    measured = _run(tmp_path / "a", 1, cost=SETUP)
    assert len(setup_warnings(measured, b, BENCH, "tokens")) == 1
    assert "backend: A 'transformers', B 'openai'" in setup_warnings(measured, b, BENCH, "tokens")[0]


def test_a_run_selecting_refined_differs_even_with_the_same_refine_stage(tmp_path: Path) -> None:
    zoom = {"adapter": {"refine": "zoom", "refine_zoom": 2.0}}
    a = _run(tmp_path / "a", 3, selection="refined", model=zoom)
    b = _run(tmp_path / "b", 3, selection="critic", model=zoom)
    assert differs(a, b, BENCH)
    assert not differs(_run(tmp_path / "c", 3, model=zoom), b, BENCH)  # the same in all: no


def test_exactly_min_clusters_screenshots_get_an_interval(tmp_path: Path) -> None:
    """Five screenshots (compare's minimum): the matched budget has its interval, a plain loop's."""
    assert MIN_CLUSTERS == 5
    # A: K = 1, first; B: K = 2, first (prefix); tokens: A 100; B 60 at j = 1, 120 at j = 2: pairs
    # (1, 1) 40/100, (1, 2) 20/120 -> (1, 2)
    shots = ["s0", "s0", "s1", "s2", "s3", "s4", "s4"]
    a_hits = [True, False, True, False, True, True, False]
    b_hits = [
        (False, True),
        (True, False),
        (True, True),
        (False, True),
        (False, False),
        (True, True),
        (False, True),
    ]
    a_lines = [
        _line(i, (CostRecord("propose", input_tokens=100, output_tokens=0, candidates=1),), (h,), s)
        for i, (h, s) in enumerate(zip(a_hits, shots, strict=True))
    ]
    b_lines = [
        _line(i, (CostRecord("propose", input_tokens=0, output_tokens=120, candidates=2),), h, s)
        for i, (h, s) in enumerate(zip(b_hits, shots, strict=True))
    ]
    a, b = _run(tmp_path / "a", 1, selection="first"), _run(tmp_path / "b", 2, selection="first")
    budget, _, _ = matched_budget(
        a,
        b,
        BENCH,
        list(zip(a_lines, b_lines, strict=True)),
        shots,
        resamples=200,
        seed=0,
        level=0.95,
        min_clusters=MIN_CLUSTERS,
    )
    assert budget is not None and budget["screenshots"] == 5
    assert budget["unit"] == "tokens" and budget["spread"] is None
    assert (budget["a"]["j"], budget["b"]["j"]) == (1, 2)
    assert budget["relative_difference"] == pytest.approx(20 / 120)
    ea = np.array(a_hits, dtype=float)
    eb = np.array([h[0] for h in b_hits], dtype=float)  # B's first of its 2 candidates: slot 0
    assert budget["diff"] == pytest.approx(100 * (eb.mean() - ea.mean()))
    diffs = [
        100 * (float(w @ eb) - float(w @ ea)) / w.sum()
        for w in resample_weights(shots, resamples=200).astype(float)
    ]
    assert budget["ci"] == pytest.approx(list(np.percentile(diffs, [2.5, 97.5])), abs=1e-9)
    # four screenshots: none
    four = ["s0", "s0", "s1", "s2", "s3", "s3", "s3"]
    got, _, _ = matched_budget(
        a,
        b,
        BENCH,
        list(zip(a_lines, b_lines, strict=True)),
        four,
        resamples=200,
        seed=0,
        level=0.95,
        min_clusters=MIN_CLUSTERS,
    )
    assert got is not None and got["ci"] is None
