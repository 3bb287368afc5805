"""Budget curves primed sample by sample during a run equal the curves computed at the end."""

from __future__ import annotations

import random

from gge.scoring import budget
from gge.scoring.budget import budget_curves, prime_budget
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, Prediction, Sample, SampleResult


def _results(n: int, k: int, seed: int) -> list[SampleResult]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sample = Sample("b", str(i), "", (200, 100), "click", Box(40, 20, 80, 60))
        cands = tuple(Candidate((rng.uniform(0, 200), rng.uniform(0, 100)), rng.random()) for _ in range(k))
        out.append(score_sample(sample, Prediction("b", str(i), cands), k=k))
    return out


def test_primed_curves_are_the_curves_and_the_primed_hits_are_used_up() -> None:
    fresh = budget_curves(_results(30, 5, 0), k=5, exchangeable_from=1, cluster_radius=0.05)
    results = _results(30, 5, 0)
    for r in results:
        prime_budget(r, k=5, exchangeable_from=1, cluster_radius=0.05)
    assert len(budget._PRIMED) >= 30
    assert budget_curves(results, k=5, exchangeable_from=1, cluster_radius=0.05) == fresh
    assert not any(entry[0] in results for entry in budget._PRIMED.values())


def test_hits_primed_for_another_plan_are_not_used() -> None:
    """Primed with the prefix plan (no exchangeable slot), asked for subsets: computed afresh."""
    results = _results(12, 4, 1)
    subsets = budget_curves(_results(12, 4, 1), k=4, exchangeable_from=0, cluster_radius=0.05)
    for r in results:
        prime_budget(r, k=4, exchangeable_from=None, cluster_radius=0.05)
    assert budget_curves(results, k=4, exchangeable_from=0, cluster_radius=0.05) == subsets
    prefix = budget_curves(results, k=4, exchangeable_from=None, cluster_radius=0.05)
    assert prefix is not None and subsets is not None and prefix["method"] != subsets["method"]
