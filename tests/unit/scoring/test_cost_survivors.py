"""Rules of the cost ledger and the budget curves that an outside mutation audit found unpinned (issue 26).

Each test pins one rule of :mod:`gge.scoring.cost` or :mod:`gge.scoring.budget` with figures worked out
by hand in its comments; each was checked to fail on the audit's mutant of that rule.
"""

from __future__ import annotations

import pytest

from gge.scoring.budget import budget_curves, sample_costs, subset_plan
from gge.scoring.cost import cost_summary, ledger_slots, refine_summary
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, CostRecord, Prediction, Refinement, Sample, SampleResult

TARGET = Box(40, 40, 60, 60)
HIT, MISS = (50.0, 50.0), (10.0, 10.0)


def _scored(
    i: int,
    points: tuple[tuple[float, float], ...],
    costs: tuple[CostRecord, ...] = (),
    refine: Refinement | None = None,
) -> SampleResult:
    """Sample ``i`` with a 40..60 box target; the first candidate scores highest (the critic's pick)."""
    sample = Sample("screenspot_v2", str(i), f"/img/{i}.png", (100, 100), "click", TARGET)
    cands = tuple(Candidate(p, 0.9 - 0.1 * j) for j, p in enumerate(points))
    pred = Prediction("screenspot_v2", str(i), cands, costs=costs, refine=refine)
    return score_sample(sample, pred, k=len(points))


# -- cost_summary ---------------------------------------------------------------------------------
def test_a_stage_s_seconds_are_unknown_when_one_sample_s_request_lacks_them() -> None:
    timed = (CostRecord("propose", input_tokens=10, output_tokens=2, seconds=1.0, candidates=1),)
    untimed = (CostRecord("propose", input_tokens=10, output_tokens=2, candidates=1),)
    summary = cost_summary([_scored(0, (HIT,), timed), _scored(1, (HIT,), untimed)])
    assert summary is not None
    # the mean of 1.0 and an unknown is unknown, not 0.5 (an unknown counted as 0 s)
    assert summary["stages"]["propose"]["seconds"] is None
    assert summary["total"]["seconds"] is None
    assert summary["stages"]["propose"]["share"]["seconds"] is None
    # the tokens are known for both: 12 each
    tokens = summary["total"]["tokens"]["total"]
    assert tokens is not None and tokens["mean"] == 12.0


def test_a_request_about_every_candidate_at_once_covers_no_slot() -> None:
    assert ledger_slots([CostRecord("rank")]) == 0
    assert ledger_slots([]) == 0
    # slot 2 + 3 candidates = 5; the ranking adds nothing
    assert ledger_slots([CostRecord("propose", slot=2, candidates=3), CostRecord("rank")]) == 5


def test_the_candidates_paid_for_are_the_most_over_every_sample_not_the_first_s() -> None:
    k5 = (
        CostRecord("propose", input_tokens=10, output_tokens=5, seconds=1.0, candidates=1),
        CostRecord("propose", input_tokens=40, output_tokens=20, seconds=2.0, slot=1, candidates=4),
    )
    summary = cost_summary([_scored(0, (HIT,)), _scored(1, (HIT,), k5)])
    assert summary is not None
    assert summary["candidates"] == 5  # the second sample's requests cover slots 0..4
    assert (summary["samples"], summary["unrecorded"]) == (1, 1)


# -- refine_summary -------------------------------------------------------------------------------
def test_before_and_the_trigger_rate_are_over_every_sample_not_only_the_refined() -> None:
    # sample 0: the critic's pick misses, the refined point hits; sample 1: no refine stage, its pick hits
    refined = _scored(0, (MISS, HIT), refine=Refinement(triggered=True, point=HIT))
    bare = _scored(1, (HIT, MISS))
    summary = refine_summary([refined, bare])
    assert summary is not None
    assert (summary["samples"], summary["triggered"]) == (2, 1)
    assert summary["before"] == pytest.approx(50.0)  # 1 of 2 (sample 1's)
    assert summary["trigger_rate"] == pytest.approx(50.0)  # 1 of 2
    assert summary["after"] == pytest.approx(100.0)  # sample 0 refined, sample 1 keeps its hit
    assert (summary["fixed"], summary["broken"]) == (1, 0)


def test_fixed_counts_misses_turned_hits_not_every_hit_after() -> None:
    fixed = _scored(0, (MISS, HIT), refine=Refinement(triggered=True, point=HIT))
    kept = _scored(1, (HIT, MISS), refine=Refinement(triggered=True, point=(45.0, 55.0)))  # hit, still hit
    broken = _scored(2, (HIT, MISS), refine=Refinement(triggered=True, point=(90.0, 90.0)))
    summary = refine_summary([fixed, kept, broken])
    assert summary is not None
    assert (summary["fixed"], summary["broken"]) == (1, 1)
    assert summary["before"] == pytest.approx(100 * 2 / 3)  # samples 1 and 2
    assert summary["after"] == pytest.approx(100 * 2 / 3)  # samples 0 and 1
    two = refine_summary([fixed, kept])
    assert two is not None and (two["fixed"], two["broken"]) == (1, 0)


def test_format_errors_count_unreadable_answers_not_refinements_without_a_point() -> None:
    untriggered = _scored(0, (MISS, HIT), refine=Refinement(triggered=False))
    answered = _scored(1, (MISS, HIT), refine=Refinement(triggered=True, point=HIT))
    abstained = _scored(2, (MISS, HIT), refine=Refinement(triggered=True, point=None, raw="not found"))
    summary = refine_summary([untriggered, answered])
    assert summary is not None and summary["format_errors"] == 0
    summary = refine_summary([untriggered, answered, abstained])
    assert summary is not None and summary["format_errors"] == 0 and summary["triggered"] == 2
    unreadable = _scored(3, (MISS, HIT), refine=Refinement(triggered=True, raw="(1,", format_error=True))
    summary = refine_summary([untriggered, answered, abstained, unreadable])
    assert summary is not None and summary["format_errors"] == 1


# -- budget ---------------------------------------------------------------------------------------
def test_slots_past_the_sample_s_candidates_hold_no_point_for_the_critic() -> None:
    # K = 3, the model answered 2 candidates (one request for both), then one ranking request
    ledger = [
        CostRecord("propose", input_tokens=100, output_tokens=30, seconds=3.0, candidates=2),
        CostRecord("rank", input_tokens=60, output_tokens=0, seconds=0.6),
    ]
    got = sample_costs(ledger, subset_plan(3, 0), points=(True, True))
    assert got is not None
    # j = 2 of 3: subsets {0,1} {0,2} {1,2}; the proposer's request is made in each (100 prompt tokens),
    # its answers used 2, 1, 1 of 2: 2/3 of 30 output tokens, 2/3 of 3 s (no prefill time: all per answer)
    # the ranking runs only on {0,1} (slot 2 holds no point): 1/3 of 60 tokens and of 0.6 s
    proposer, critic = got[1]
    assert proposer == pytest.approx((120.0, 2.0))
    assert critic == pytest.approx((140.0, 2.2))
    # j = 3 is measured: every request in full
    assert got[2].proposer == pytest.approx((130.0, 3.0)) and got[2].critic == pytest.approx((190.0, 3.6))


def test_no_partial_cost_note_when_every_sample_has_cost_records() -> None:
    ledger = (CostRecord("propose", input_tokens=10, output_tokens=4, seconds=1.0, candidates=2),)
    every = [_scored(i, (HIT, MISS), ledger) for i in range(2)]
    curves = budget_curves(every, k=2, exchangeable_from=0)
    assert curves is not None
    assert not [n for n in curves["notes"] if n.startswith("costs are the mean")]
    some = budget_curves([*every, _scored(2, (HIT, MISS))], k=2, exchangeable_from=0)
    assert some is not None
    assert "costs are the mean over the 2 of 3 samples with cost records" in some["notes"]
