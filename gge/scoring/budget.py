"""Budget curves: the Top-1 each strategy reaches with j of the K candidates, and what j candidates cost.

From one run with K candidates per sample, :func:`budget_curves` gives, for j = 1..K, the micro Top-1
of every selection strategy (:data:`gge.types.STRATEGIES`; ``cluster`` is the voting
baseline) and Oracle@j, with the cost per sample of using j candidates (results.json ``budget``).

**Which j candidates** (:func:`subset_plan`):

* ``subsets``: the answers from slot ``first_slot`` on are exchangeable draws (``sampling``), so
  j of them is any j-subset, each equally likely, as the unbiased pass@k counts them: the slots
  before ``first_slot`` are always kept, the other ``j - first_slot`` are one of the
  ``C(K - first_slot, j - first_slot)`` subsets of the rest, candidates kept in proposer order, and
  a point is the exact mean over those subsets. Below ``first_slot`` it is the first j.
* ``prefix``: answers that are not exchangeable (a ranked list): the first j.
* ``sampled``: where a j has more than :data:`SUBSET_CAP` subsets, :data:`SUBSET_CAP` of them
  are drawn at random (seed :data:`SUBSET_SEED`, with replacement) instead; the curve's notes
  name each such j.

**Picks on a subset**: each strategy is run on the subset's candidates (:func:`gge.scoring.selection.select`,
its tie and None rules). A pointwise critic's score belongs to its candidate, so the critic's pick
on a subset is exact (``critic: pointwise``); a listwise ranking restricted to a subset is the
order it induces there, not a new call (``critic: induced``). At j = K the run's own Top-1 is used.

**Cost** (:func:`sample_costs`): at j = K what the run paid per sample (``measured``, or ``replayed``
where a replay read the ledger back: total tokens and seconds of its requests); below K ``derived``
from the ledger. A request that serves the slots ``[slot, slot + candidates)`` is made when some of
them are used: with the probability of that over the same subsets it pays its fixed part (the
prompt tokens it computed, :attr:`~gge.types.CostRecord.computed_input_tokens`; its
``prefill_seconds`` where timed apart) and, in proportion to the expected share of its slots used,
its per-candidate part (its output tokens; the rest of its seconds). A request about all candidates
at once (``candidates == 0``, a listwise ranking) is paid in full wherever it is made. When the
ledger's requests cover slots past the run's K (a K = 5 file rescored with k = 3) every j is
derived, j = K too.

**Who pays what**: ``first``, a vote and the spatial baselines use the proposer's candidates only:
their cost (a point's ``tokens`` and ``seconds``) leaves out the critic's requests (stages
:data:`CRITIC_STAGES`). The critic's cost (a point's ``critic``) adds them, made on a subset that
holds at least two point candidates, as gge's critic skips a sample with fewer (so at j = 1 the
critic's cost is the proposer's). The refine stage is not on the j curve: the ``refined`` strategy
is one point at the run's whole cost. Unknown counts give None.

Example:
    >>> plan = subset_plan(3, first_slot=1)
    >>> plan.method, [len(plan.subsets(j)) for j in (1, 2, 3)], plan.subsets(2)
    ('subsets', [1, 2, 1], ((0, 1), (0, 2)))
    >>> subset_plan(3, None).subsets(2)
    ((0, 1),)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import NamedTuple

import numpy as np

from gge.documents.results import BudgetCurves, BudgetPoint, RefinedPoint
from gge.scoring.calibration import ScoreKind, infer_score_kind
from gge.scoring.cost import ledger_slots, refined_hits
from gge.scoring.grouping import pct
from gge.scoring.scoring import candidate_hits
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS, select
from gge.types import STRATEGIES, Candidate, CostRecord, SampleResult

__all__ = [
    "CRITIC_STAGES",
    "ORACLE",
    "SUBSET_CAP",
    "SUBSET_SEED",
    "Cost",
    "Plan",
    "SampleCost",
    "budget_curves",
    "critic_kind",
    "mean_cost",
    "mean_pct",
    "point_label",
    "point_slots",
    "prime_budget",
    "sample_costs",
    "sample_hits",
    "subset_plan",
    "whole_cost",
]

SUBSET_CAP = 1000
"""The most j-subsets a point averages exactly; above it, this many are drawn at random."""
SUBSET_SEED = 0
"""Seed of the subsets drawn at random (the same subsets for every sample and every run)."""
ORACLE = "oracle"
"""The key of Oracle@j beside the strategies in :func:`sample_hits`."""

Cost = tuple[float | None, float | None]
"""``(tokens, seconds)`` per sample; None where unknown."""
CRITIC_STAGES = ("rank", "judge")
"""The critic's stages: paid by the ``critic`` pick only (a vote, ``first`` and the spatial ones never)."""


@dataclass(frozen=True)
class Plan:
    """Which j candidates a point uses, for j = 1..K (:func:`subset_plan`).

    Attributes:
        k: K, the candidates per sample.
        first_slot: The first exchangeable slot (None: not exchangeable, the first j are used).
        per_j: For each j (index j - 1), the subsets averaged, each a tuple of slots in proposer order.
        sampled: The j whose subsets were drawn at random (more than :data:`SUBSET_CAP`).
        counts: For each j, how many subsets there are in all.
        cap: The most subsets averaged exactly for one j.
        seed: Seed of the subsets drawn at random.
    """

    k: int
    first_slot: int | None
    per_j: tuple[tuple[tuple[int, ...], ...], ...]
    sampled: tuple[int, ...]
    counts: tuple[int, ...]
    cap: int = SUBSET_CAP
    seed: int = SUBSET_SEED
    _usage: dict[tuple[int, int, int], tuple[float, float]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )
    _critic_usage: dict[tuple[int, int, int, tuple[bool, ...] | None], tuple[float, float]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )

    @property
    def method(self) -> str:
        """``prefix``, ``subsets`` or ``sampled`` (some j drawn at random)."""
        if self.first_slot is None:
            return "prefix"
        return "sampled" if self.sampled else "subsets"

    def subsets(self, j: int) -> tuple[tuple[int, ...], ...]:
        """The subsets of j candidates (1 <= j <= K)."""
        return self.per_j[j - 1]

    def usage(self, j: int, slot: int, candidates: int) -> tuple[float, float]:
        """For a request serving ``[slot, slot + candidates)``: (P(it is made), E[share of its slots used]).

        A request about every candidate at once (``candidates == 0``: a single_pass answer that listed
        no point) is made in full at every j.

        Example:
            >>> subset_plan(5, first_slot=1).usage(3, 1, 4)  # 2 of the 4 drawn slots, always made
            (1.0, 0.5)
            >>> subset_plan(5, first_slot=None).usage(1, 0, 0)
            (1.0, 1.0)
        """
        if candidates == 0:
            return (1.0, 1.0)
        key = (j, slot, candidates)
        got = self._usage.get(key)
        if got is None:
            span = range(slot, slot + candidates)
            used = [sum(1 for s in subset if s in span) for subset in self.subsets(j)]
            got = (sum(u > 0 for u in used) / len(used), sum(used) / (len(used) * candidates))
            self._usage[key] = got
        return got

    def critic_usage(
        self, j: int, slot: int, candidates: int, points: tuple[bool, ...] | None
    ) -> tuple[float, float]:
        """:meth:`usage` of a critic request: made only on a subset of at least two point candidates.

        ``points`` says which slots hold a point candidate (None: every slot does). A request about
        every candidate at once (``candidates == 0``, a ranking) is made in full wherever the critic runs.

        Example:
            >>> plan = subset_plan(3, first_slot=0)
            >>> plan.critic_usage(1, 0, 0, None), plan.critic_usage(2, 0, 0, None)  # no critic for one
            ((0.0, 0.0), (1.0, 1.0))
            >>> plan.critic_usage(2, 1, 1, (True, True, False))  # of {0,1} {0,2} {1,2}, only {0,1} runs
            (0.3333333333333333, 0.3333333333333333)
        """
        key = (j, slot, candidates, points)
        got = self._critic_usage.get(key)
        if got is None:
            span = range(slot, slot + candidates)
            subsets = self.subsets(j)
            runs = [sum(1 for s in subset if (points is None or points[s])) >= 2 for subset in subsets]
            if candidates == 0:
                ran = sum(runs) / len(subsets)
                got = (ran, ran)
            else:
                used = [
                    sum(1 for s in subset if s in span) if run else 0
                    for subset, run in zip(subsets, runs, strict=True)
                ]
                got = (sum(u > 0 for u in used) / len(used), sum(used) / (len(used) * candidates))
            self._critic_usage[key] = got
        return got

    def notes(self) -> list[str]:
        """What the curve says of its subsets (the j drawn at random)."""
        return [
            f"j = {j}: {self.cap} of its {self.counts[j - 1]} subsets drawn at random "
            f"(seed {self.seed}), not all of them"
            for j in self.sampled
        ]


@lru_cache(maxsize=64)
def subset_plan(k: int, first_slot: int | None, *, cap: int = SUBSET_CAP, seed: int = SUBSET_SEED) -> Plan:
    """The subsets each j uses (module docstring): prefix, every j-subset, or a seeded sample of them.

    Args:
        k: K (>= 1).
        first_slot: The first exchangeable slot, or None (prefix).
        cap: The most subsets averaged exactly for one j.
        seed: Seed of the subsets drawn when a j has more than ``cap``.

    Returns:
        The plan.

    Example:
        >>> p = subset_plan(4, 0, cap=4)
        >>> p.method, p.sampled, len(p.subsets(2)), p.counts
        ('sampled', (2,), 4, (4, 6, 4, 1))
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if first_slot is None or first_slot >= k:
        prefix = tuple((tuple(range(j)),) for j in range(1, k + 1))
        return Plan(k, first_slot, prefix, (), (1,) * k, cap, seed)
    f = max(0, first_slot)
    rest = range(f, k)
    head = tuple(range(f))
    per_j: list[tuple[tuple[int, ...], ...]] = []
    sampled: list[int] = []
    counts: list[int] = []
    for j in range(1, k + 1):
        if j <= f:
            per_j.append((tuple(range(j)),))
            counts.append(1)
            continue
        count = math.comb(k - f, j - f)
        counts.append(count)
        if count <= cap:
            per_j.append(tuple(head + c for c in combinations(rest, j - f)))
            continue
        rng = np.random.default_rng([seed, j])
        drawn = (sorted(int(s) + f for s in rng.choice(k - f, j - f, replace=False)) for _ in range(cap))
        per_j.append(tuple(head + tuple(d) for d in drawn))
        sampled.append(j)
    return Plan(k, first_slot, tuple(per_j), tuple(sampled), tuple(counts), cap, seed)


def critic_kind(results: Sequence[SampleResult], score_kind: ScoreKind | None) -> str | None:
    """How the critic's pick on a subset reads: ``pointwise``, ``induced`` (a ranking) or None (no scores).

    Example:
        >>> critic_kind([], "rank"), critic_kind([], "probability"), critic_kind([], None)
        ('induced', 'pointwise', None)
    """
    kind = score_kind if score_kind is not None else infer_score_kind(results)
    if kind is None:
        return None
    return "induced" if kind == "rank" else "pointwise"


# -- per sample: expected hits ----------------------------------------------------------------------
def _subset_hit(
    result: SampleResult, chosen: Sequence[Candidate], hits: Sequence[bool], pick: Candidate | None
) -> bool | None:
    """Whether a pick on a subset hits; None where it cannot be known (a new point and no region)."""
    if pick is None:
        return False
    for c, hit in zip(chosen, hits, strict=True):
        if pick is c:
            return hit
    if result.region is not None:
        return candidate_hits(result.region, pick)
    if pick.point is not None:
        # a built point on a candidate's own point (one point, an odd median) hits as that candidate
        return next((hit for c, hit in zip(chosen, hits, strict=True) if c.point == pick.point), None)
    if pick.abstains:
        # a strict majority abstains: an abstaining candidate of the subset hits exactly as it does
        return next((hit for c, hit in zip(chosen, hits, strict=True) if c.abstains), None)
    return None


def _radius_matters(chosen: Sequence[Candidate], pick: Candidate | None) -> bool:
    """Whether a ``cluster`` pick depends on the radius: not for an abstention or a single point."""
    return pick is not None and not pick.abstains and sum(c.point is not None for c in chosen) > 1


def sample_hits(
    result: SampleResult,
    plan: Plan,
    strategies: Sequence[str] = STRATEGIES,
    *,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
) -> dict[str, list[float | None]]:
    """One sample's expected hit at j = 1..K for each strategy, and Oracle@j (:data:`ORACLE`).

    The mean over the plan's subsets of whether the strategy's pick on the subset hits; at j = K the
    run's own outcome (``result.top1``) where it has one. Slots past the sample's candidates are
    left out of a subset. A result without a region (one read back from predictions.jsonl) knows
    the hit of a pick that is one of its candidates (``critic``, ``first``, ``medoid``), lies on a
    candidate's point, or abstains; another built point (``mean``, ``median``, ``geomedian``,
    ``cluster``) then gives None, as does ``cluster`` on several points without the image size
    (its radius is a fraction of the screen).

    Args:
        result: The scored sample.
        plan: The subsets (:func:`subset_plan`).
        strategies: The strategies (names of :data:`~gge.types.STRATEGIES`).
        cluster_radius: The run's ``cluster`` radius (fraction of the image diagonal).

    Returns:
        ``{strategy: [E hit at j=1, ..., j=K]}`` plus ``"oracle"``; None where unknown.

    Example:
        >>> from gge.types import Box
        >>> r = SampleResult("b", "0", {}, 3, (Candidate((1.0, 1.0), 0.2), Candidate((50.0, 50.0), 0.9),
        ...                  Candidate((52.0, 50.0), 0.1)), (False, True, True), region=Box(40, 40, 60, 60))
        >>> got = sample_hits(r, subset_plan(3, 0), ("critic", "first"))
        >>> {name: [round(v, 3) for v in values] for name, values in got.items()}
        {'critic': [0.667, 0.667, 1.0], 'first': [0.667, 0.333, 0.0], 'oracle': [0.667, 1.0, 1.0]}
    """
    n = len(result.candidates)
    size = result.image_size if result.image_size is not None else (1, 1)
    memo: dict[tuple[int, ...], dict[str, bool | None]] = {}

    def outcomes(slots: tuple[int, ...]) -> dict[str, bool | None]:
        key = tuple(s for s in slots if s < n)
        got = memo.get(key)
        if got is None:
            chosen = [result.candidates[s] for s in key]
            hits = [bool(result.hits[s]) if s < len(result.hits) else False for s in key]
            # gge's critic judges no subset of fewer than two point candidates (it skips such samples):
            # its pick there is the first candidate, as with no scores, whatever the run's K scored
            unjudged = sum(c.point is not None for c in chosen) < 2
            got = {}
            for s in strategies:
                if s == "critic" and unjudged:
                    pick = chosen[0] if chosen else None
                else:
                    pick = select(s, chosen, size, cluster_radius=cluster_radius)
                if s == "cluster" and result.image_size is None and _radius_matters(chosen, pick):
                    got[s] = None  # the radius is a fraction of the screen, whose size is unknown
                else:
                    got[s] = _subset_hit(result, chosen, hits, pick)
            got[ORACLE] = any(hits)
            memo[key] = got
        return got

    out: dict[str, list[float | None]] = {s: [] for s in (*strategies, ORACLE)}
    for j in range(1, plan.k + 1):
        if j == plan.k and all(s in result.top1 for s in strategies):
            # every slot: the run's own outcomes
            for s in strategies:
                out[s].append(float(result.top1[s]))
            out[ORACLE].append(float(any(result.hits[: plan.k])))
            continue
        rows = [outcomes(subset) for subset in plan.subsets(j)]
        for name, values in out.items():
            if j == plan.k and name in result.top1:
                values.append(float(result.top1[name]))
                continue
            got = [row[name] for row in rows]
            values.append(_mean([None if v is None else float(v) for v in got]))
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean, or None when a value is unknown (or there are none)."""
    if not values or any(v is None for v in values):
        return None
    return math.fsum(v for v in values if v is not None) / len(values)


# -- per sample: cost -------------------------------------------------------------------------------
def _known(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else math.fsum(v for v in values if v is not None)


class SampleCost(NamedTuple):
    """What j candidates cost one sample per strategy family (module docstring).

    Attributes:
        proposer: The proposer's requests only: what ``first``, a vote and the spatial baselines pay.
        critic: The proposer's and the critic's (``rank``, ``judge``): what the ``critic`` pick pays.
    """

    proposer: Cost
    critic: Cost


def whole_cost(costs: Sequence[CostRecord]) -> Cost:
    """The measured ``(tokens, seconds)`` of requests: the sums of ``total_tokens`` and ``seconds``.

    Example:
        >>> whole_cost([CostRecord("propose", input_tokens=90, output_tokens=10, seconds=1.0),
        ...             CostRecord("refine", input_tokens=40, cached_tokens=30, seconds=0.5)])
        (110.0, 1.5)
    """
    return (
        _known([None if r.total_tokens is None else float(r.total_tokens) for r in costs]),
        _known([r.seconds for r in costs]),
    )


def _derived(r: CostRecord, made: float, share: float) -> Cost:
    """A request's expected cost: its fixed part ``made`` times, its per-candidate part ``share`` of it."""
    computed = r.computed_input_tokens
    tokens = None if computed is None else made * computed + share * (r.output_tokens or 0)
    if r.seconds is None:
        return tokens, None
    fixed = min(r.prefill_seconds or 0.0, r.seconds)
    return tokens, made * fixed + share * (r.seconds - fixed)


def _sum(parts: Sequence[Cost]) -> Cost:
    return _known([t for t, _ in parts]), _known([s for _, s in parts])


def sample_costs(
    costs: Sequence[CostRecord], plan: Plan, points: Sequence[bool] | None = None
) -> list[SampleCost] | None:
    """One sample's cost at j = 1..K, without and with the critic (module docstring); None without records.

    j = K is measured (the sums over its requests, the refine stage left out) when the ledger's
    requests cover no slot past K; below K, and at every j when they do (a file of K = 5 rescored
    with k = 3), derived. The critic's requests are paid on a subset holding at least two point
    candidates (``points``; None: every slot holds one), as gge's critic skips a sample with fewer.

    Args:
        costs: The sample's cost ledger.
        plan: The subsets (:func:`subset_plan`).
        points: Whether each slot holds a point candidate (slots past it hold none).

    Returns:
        One :class:`SampleCost` per j (None where a request did not report a count), or None.

    Example:
        >>> ledger = [CostRecord("propose", input_tokens=100, output_tokens=40, seconds=2.0,
        ...                      prefill_seconds=1.0, candidates=4),
        ...           CostRecord("rank", input_tokens=50, output_tokens=4, seconds=0.5)]
        >>> got = sample_costs(ledger, subset_plan(4, None))
        >>> got[1]  # 2 of 4: the prompt, half the answers; the critic also pays its ranking
        SampleCost(proposer=(120.0, 1.5), critic=(174.0, 2.0))
        >>> got[0].critic  # one candidate: the critic does not run
        (110.0, 1.25)
    """
    if not costs:
        return None
    records = [r for r in costs if r.stage != "refine"]
    proposer = [r for r in records if r.stage not in CRITIC_STAGES]
    critic = [r for r in records if r.stage in CRITIC_STAGES]
    mask = tuple(bool(points[s]) if s < len(points) else False for s in range(plan.k)) if points else None
    measured = ledger_slots(records) <= plan.k
    out: list[SampleCost] = []
    for j in range(1, plan.k + 1):
        if j == plan.k and measured:
            out.append(SampleCost(whole_cost(proposer), whole_cost(records)))
            continue
        own = [_derived(r, *plan.usage(j, r.slot, r.candidates)) for r in proposer]
        judged = [_derived(r, *plan.critic_usage(j, r.slot, r.candidates, mask)) for r in critic]
        out.append(SampleCost(_sum(own), _sum([*own, *judged])))
    return out


def mean_cost(per_sample: Sequence[Cost | None]) -> Cost:
    """The mean ``(tokens, seconds)`` over the samples with cost records (None: none, or unknown)."""
    known = [c for c in per_sample if c is not None]
    if not known:
        return (None, None)
    return _mean([c[0] for c in known]), _mean([c[1] for c in known])


def mean_pct(values: Sequence[float | None]) -> float | None:
    """The mean of per-sample expected hits in percent (None: unknown, or no values).

    Example:
        >>> mean_pct([1.0, 0.5, 0.0, 0.5]), mean_pct([1.0, None])
        (50.0, None)
    """
    total = _known(values)
    return None if total is None else pct(total, len(values))


# -- a benchmark's curves ---------------------------------------------------------------------------
def _same_cluster(result: SampleResult, cluster_radius: float) -> bool:
    """Whether the run's own ``cluster`` pick (at j = K) is the one ``cluster_radius`` gives."""
    if "cluster" not in result.picks or result.image_size is None:
        return True
    mine = select("cluster", result.candidates, result.image_size, cluster_radius=cluster_radius)
    theirs = result.picks["cluster"]
    return (mine is None) == (theirs is None) and (
        mine is None or theirs is None or mine.point == theirs.point
    )


def point_slots(candidates: Sequence[Candidate]) -> tuple[bool, ...]:
    """Which slots hold a point candidate (the critic judges only those: :func:`sample_costs`)."""
    return tuple(c.point is not None for c in candidates)


def point_label(source: str) -> str:
    """The cost label of a point the run paid for: ``measured``, or ``replayed`` (read back by a replay)."""
    return "replayed" if source == "replayed" else "measured"


_PrimedKey = tuple[int, int, int | None, int, int, float]
_PRIMED: dict[_PrimedKey, tuple[SampleResult, dict[str, list[float | None]]]] = {}
"""Samples' hits computed while a run was still going (:func:`prime_budget`), until its curves use them."""


def prime_budget(
    result: SampleResult, *, k: int, exchangeable_from: int | None, cluster_radius: float
) -> None:
    """Compute a finished sample's budget-curve hits now, for :func:`budget_curves` to use later.

    A windowed run calls this for each sample as it finishes, so the curves (a few milliseconds of
    geometric medians per sample at K = 5) are not all left for the end of the run. What is primed
    is :func:`sample_hits` for the same plan exactly; a result the curves are never asked about is
    kept until the process ends (one small dict per sample).

    Args:
        result: The scored sample.
        k: The run's K.
        exchangeable_from: The first exchangeable slot, as :func:`budget_curves` will be given it.
        cluster_radius: The run's ``cluster`` radius.
    """
    keep_primed(
        result,
        primed_hits(result, k=k, exchangeable_from=exchangeable_from, cluster_radius=cluster_radius),
        k=k,
        exchangeable_from=exchangeable_from,
        cluster_radius=cluster_radius,
    )


def primed_hits(
    result: SampleResult, *, k: int, exchangeable_from: int | None, cluster_radius: float
) -> dict[str, list[float | None]] | None:
    """What :func:`prime_budget` computes for a finished sample (None where K <= 1: nothing to prime).

    A client process (:mod:`gge.run.client_procs`) computes it beside the sample's requests and sends
    it with the result; the parent keeps it for its own copy of the result with :func:`keep_primed`.
    """
    if k <= 1:
        return None
    return sample_hits(result, _plan_of(k, exchangeable_from), cluster_radius=cluster_radius)


def keep_primed(
    result: SampleResult,
    hits: dict[str, list[float | None]] | None,
    *,
    k: int,
    exchangeable_from: int | None,
    cluster_radius: float,
) -> None:
    """Keep a sample's :func:`primed_hits` for :func:`budget_curves` (the same plan's; None keeps nothing)."""
    if hits is None or k <= 1:
        return
    _PRIMED[_primed_key(result, _plan_of(k, exchangeable_from), cluster_radius)] = (result, hits)


@functools.lru_cache(maxsize=8)
def _plan_of(k: int, first_slot: int | None) -> Plan:
    """The default plan of a K and first slot, built once for the samples a run primes."""
    return subset_plan(k, first_slot)


def _primed_key(result: SampleResult, plan: Plan, cluster_radius: float) -> _PrimedKey:
    return (id(result), plan.k, plan.first_slot, plan.cap, plan.seed, cluster_radius)


def _primed(result: SampleResult, plan: Plan, cluster_radius: float) -> dict[str, list[float | None]]:
    """:func:`sample_hits` of every strategy: primed while the run went, or computed now."""
    known = _PRIMED.pop(_primed_key(result, plan, cluster_radius), None)
    if known is not None and known[0] is result:
        return known[1]
    return sample_hits(result, plan, cluster_radius=cluster_radius)


def budget_curves(
    results: Sequence[SampleResult],
    *,
    k: int,
    exchangeable_from: int | None = None,
    score_kind: ScoreKind | None = None,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
    cost_source: str = "measured",
) -> BudgetCurves | None:
    """A benchmark's budget curves (results.json ``budget``), or None for a one-answer run (K = 1).

    Args:
        results: One result per sample.
        k: K, the candidates scored per sample.
        exchangeable_from: The first exchangeable slot (``sampling``: 1), or None (the first j).
        score_kind: How the critic's scores read (None: inferred from the data).
        cluster_radius: The run's ``cluster`` radius.
        cost_source: ``measured`` or ``replayed`` (the ledger read back from a predictions file):
            how the j = K point's cost is labelled.

    Returns:
        ``k``, ``method`` (``subsets``, ``prefix`` or ``sampled``), ``first_slot``, ``critic``
        (``pointwise``, ``induced`` or None), ``points`` (per j: the micro Top-1 of each strategy,
        Oracle@j, tokens and seconds per sample of the proposer's requests over the samples with
        cost records, ``critic`` the same with the critic's requests (None without a critic),
        ``cost`` ``measured`` (``replayed``) or ``derived``, ``subsets`` averaged), ``refined``
        where a refine stage ran, and ``notes``.
    """
    if k <= 1:
        return None
    plan = subset_plan(k, exchangeable_from)
    hits = [_primed(r, plan, cluster_radius) for r in results]
    costs = [sample_costs(r.costs, plan, point_slots(r.candidates)) for r in results]
    critic = critic_kind(results, score_kind)
    paid = point_label(cost_source)
    notes = plan.notes()
    if plan.method == "prefix":
        notes.append(
            "the answers are not exchangeable draws: j candidates are the first j, in proposer order"
        )
    other_radius = sum(not _same_cluster(r, cluster_radius) for r in results)
    if other_radius:
        notes.append(
            f"the 'cluster' pick of {other_radius} samples at j = K is not the one this radius "
            f"({cluster_radius:g}) gives: the run's cluster_radius was another, and 'cluster' below K uses "
            f"{cluster_radius:g}"
        )
    recorded = sum(c is not None for c in costs)
    if 0 < recorded < len(results):
        notes.append(f"costs are the mean over the {recorded} of {len(results)} samples with cost records")
    if recorded == 0:
        notes.append("no cost records: the curves have no cost")
    slots = max((ledger_slots(r.costs) for r in results if r.costs), default=0)
    if slots > k:
        paid = "derived"
        notes.append(
            f"the ledger's requests were made for {slots} candidates and this run scores {k}: every cost "
            f"is derived from them, none {point_label(cost_source)} at j = K"
        )
    points: list[BudgetPoint] = []
    for j in range(1, k + 1):
        tokens, seconds = mean_cost([None if c is None else c[j - 1].proposer for c in costs])
        with_critic = mean_cost([None if c is None else c[j - 1].critic for c in costs])
        points.append(
            {
                "j": j,
                "top1": {s: mean_pct([h[s][j - 1] for h in hits]) for s in STRATEGIES},
                "oracle": mean_pct([h[ORACLE][j - 1] for h in hits]),
                "tokens": tokens,
                "seconds": seconds,
                "critic": None if critic is None else {"tokens": with_critic[0], "seconds": with_critic[1]},
                "cost": paid if j == k else "derived",
                "subsets": len(plan.subsets(j)),
            }
        )
    curves: BudgetCurves = {
        "k": k,
        "method": plan.method,
        "first_slot": exchangeable_from,
        "critic": critic,
        "points": points,
        "notes": notes,
    }
    if any(r.refine is not None for r in results):
        tokens, seconds = mean_cost([whole_cost(r.costs) if r.costs else None for r in results])
        refined: RefinedPoint = {
            "top1": pct(sum(refined_hits(results)), len(results)),
            "tokens": tokens,
            "seconds": seconds,
            "cost": point_label(cost_source),
        }
        notes.append("the refine stage is not on the j curve: 'refined' is one point at the run's whole cost")
        curves = {**curves, "refined": refined, "notes": notes}
    return curves
