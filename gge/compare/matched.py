"""Two runs at a matched budget: ``gge compare`` between runs of another K, critic or refine stage.

A critic run at K = 5 and a voting run at K = 8 differ in what they pay per sample as much as in what
they choose. When the two runs differ in K, in critic (``model.critic``, or how the critic's scores
read: pointwise or a ranking) or in refine stage (either selects ``refined``, or their
``model.refine*`` settings differ), :func:`matched_budget` compares them where they cost the same:
each run's budget curve of its own selection strategy (:mod:`gge.scoring.budget`, rebuilt sample by
sample from its predictions.jsonl: the candidates, their hits and each sample's cost ledger), the
pair of points (jA, jB) of closest cost per sample, and there the difference B − A of their Top-1
with its paired bootstrap interval over the per-sample expected hits (the same resamples, clusters
and seed as compare's other intervals).

**Rule** (:data:`RULE`): the cost is tokens per sample where both runs know them (at some pair of
points: a run without token counts makes it seconds), else seconds per sample; the pair minimises
``|cost A − cost B| / max(cost A, cost B)``; ties go to the larger budget (the larger of the smaller
cost), then to the fewer candidates.

**Seconds are measured, with noise** (:data:`SPREAD_POLICY`): tokens are counted, but seconds on a
loaded machine vary from one request to the next, so a run's mean seconds per sample is known only
to within its uncertainty (:func:`seconds_spread`, :data:`SPREAD_MEASURE`: the relative half-width
of the 95% interval of the mean, ``1.96 · sd / √n / mean`` of its seconds per sample). The
difference of two such costs is uncertain by ``√(a² + b²)`` (the tolerance); every pairing whose
relative difference lies within the tolerance of the closest's is one the measurement cannot tell
from it. The pair stays the closest measured cost; compare lists those pairings and flags the
pairing (compare.json ``budget.spread``, a note, compare.md and compare.html). It does not refuse
and does not pick another pair.

**What a strategy pays**: the ``critic`` pick pays the critic's requests (``rank``, ``judge``); a
vote, ``first`` and the spatial picks pay the proposer's only (:func:`gge.scoring.budget.sample_costs`).
The ``refined`` strategy is one point, at the run's whole cost.

A run's curve below K needs each sample's pick on fewer candidates. predictions.jsonl holds the
candidates, their hits and (since gge recorded it) each sample's target and screenshot size, so a
pick that is a new point (``mean``, ``median``, ``geomedian``, ``cluster``) is hit-tested on the
target. In lines written before that, only a pick that is one of the candidates (``critic``,
``first``, ``medoid``), lies on one, or abstains is known: such a run's other points below K are
left out, and a note says so.

**Comparable costs** (:func:`setup_warnings`): seconds measured on other hardware, device, dtype,
backend or batch size, and tokens counted by another backend, are not one unit; compare warns where
the runs' cost setups (results.json ``cost``) differ, and where a run's costs were replayed (read back
by a replay, their setup not recorded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gge.compare.runs import Line, Run, _pct
from gge.documents.compare import MatchedSpread
from gge.documents.results import MatchedBudget, MatchedPoint, MatchedSide
from gge.report.numbers import spread_text
from gge.scoring.budget import (
    Cost,
    SampleCost,
    mean_cost,
    mean_pct,
    point_label,
    point_slots,
    sample_costs,
    sample_hits,
    subset_plan,
    whole_cost,
)
from gge.scoring.cost import TOTAL, ledger_slots, sample_totals
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS, REFINED
from gge.scoring.stats import paired_bootstrap
from gge.types import SampleResult

__all__ = [
    "RULE",
    "SETUP_FIELDS",
    "SPREAD_MEASURE",
    "SPREAD_POLICY",
    "Curve",
    "Match",
    "closest",
    "cost_source",
    "critic_of",
    "differs",
    "matched_budget",
    "refine_of",
    "run_curve",
    "seconds_spread",
    "setup_warnings",
    "spread_tolerance",
]

RULE = (
    "closest common cost: tokens per sample where both runs know them, else seconds; the pair (jA, jB) "
    "minimising |cost A − cost B| / max(cost A, cost B); ties: the larger budget, then fewer candidates; "
    "in seconds, the pairings whose relative difference is within √(a² + b²) of the closest's (a, b: each "
    "run's relative uncertainty of its mean measured seconds) cannot be told apart from it by the "
    "measurement: they are listed and the pairing flagged, the pair unchanged"
)
"""How the matched pair is chosen (written into compare.json ``budget.rule``)."""

SPREAD_MEASURE = (
    "the relative half-width of the 95% interval of each run's mean seconds per sample over the paired "
    "samples, 1.96 · sd / √n / mean (sd with ddof = 1)"
)
"""How each run's uncertainty of measured seconds is measured (compare.json ``budget.spread.measure``)."""
SPREAD_POLICY = "flag"
"""What compare does with a pairing the measured seconds cannot tell apart (``budget.spread.policy``).

``flag``: the pair stays the closest measured cost (the plain rule, :func:`closest`); the pairings
whose relative difference lies within the tolerance (``√(a² + b²)`` of the runs'
:func:`seconds_spread`) of the closest's are listed, the pair first, and compare says the pairing
cannot be told apart from them (compare.json ``budget.spread.inside``, a note, compare.md and
compare.html). It does not refuse, and no other pair is picked.
"""

UNITS = ("tokens", "seconds")
"""The cost units, in order of preference."""
SETUP_FIELDS = {
    "seconds": ("hardware", "device", "dtype", "backend", "batch_size"),
    "tokens": ("backend",),
}
"""The fields of results.json ``cost`` (the setup) that must agree for costs in each unit to compare."""


@dataclass(frozen=True)
class Curve:
    """One run's budget curve of its selection strategy on one benchmark, per sample.

    Attributes:
        strategy: The run's selection strategy.
        k: Its K.
        method: How j candidates are drawn (``prefix``, ``subsets``, ``sampled``; ``refined``: one point).
        critic: ``pointwise``, ``induced`` or None (results.json ``budget.critic``).
        js: The j of each point.
        hits: For each point, every paired sample's expected hit (None: unknown).
        costs: For each point, the mean ``(tokens, seconds)`` per sample the strategy pays (the
            critic's requests only for ``critic``).
        labels: For each point, ``measured``, ``replayed`` or ``derived``.
        notes: What the curve could not know.
    """

    strategy: str
    k: int
    method: str
    critic: str | None
    js: tuple[int, ...]
    hits: tuple[tuple[float | None, ...], ...]
    costs: tuple[Cost, ...]
    labels: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def known(self, i: int) -> bool:
        """Whether point ``i`` has every sample's expected hit."""
        return all(h is not None for h in self.hits[i])

    def top1(self, i: int) -> float | None:
        """The micro Top-1 (percent) of point ``i``, None where a hit is unknown."""
        return mean_pct(self.hits[i])

    def cost(self, i: int, unit: str) -> float | None:
        """Point ``i``'s cost per sample in ``unit`` (``tokens`` or ``seconds``)."""
        return self.costs[i][UNITS.index(unit)]

    def points(self) -> list[MatchedPoint]:
        """The curve as compare.json writes it."""
        return [
            {
                "j": j,
                "top1": self.top1(i),
                "tokens": self.costs[i][0],
                "seconds": self.costs[i][1],
                "cost": self.labels[i],
            }
            for i, j in enumerate(self.js)
        ]


def critic_of(run: Run, bench: str) -> tuple[Any, Any]:
    """A run's critic: its ``model.critic`` option and how its scores read (``budget.critic``)."""
    model = run.document.get("config", {}).get("model")
    option = model.get("critic") if isinstance(model, Mapping) else None
    budget = run.document["benchmarks"][bench].get("budget")
    return option, None if budget is None else budget["critic"]


def refine_of(run: Run) -> dict[str, Any]:
    """A run's refine stage: its ``model.refine*`` settings (``{"refine": "none"}`` without one).

    Read from results.json ``model.adapter`` (a policy's record), else ``config.model``.
    """
    model = run.document.get("model", {})
    adapter = model.get("adapter") if isinstance(model, Mapping) else None
    config = run.document.get("config", {})
    source = adapter if isinstance(adapter, Mapping) and "refine" in adapter else None
    if source is None:
        source = config.get("model") if isinstance(config, Mapping) else None
    settings = (
        {key: value for key, value in source.items() if key.startswith("refine")}
        if isinstance(source, Mapping)
        else {}
    )
    if settings.get("refine", "none") == "none":
        return {"refine": "none"}  # the other refine settings do nothing then
    return settings


def differs(a: Run, b: Run, bench: str) -> bool:
    """Whether the runs differ in K, critic or refine stage on a benchmark (then compare matches budgets).

    The refine stage differs where either run selects ``refined`` or their ``refine*`` settings
    differ (:func:`refine_of`).
    """
    return (
        a.k != b.k
        or critic_of(a, bench) != critic_of(b, bench)
        or REFINED in (a.selection, b.selection)
        or refine_of(a) != refine_of(b)
    )


def cost_source(run: Run, bench: str) -> str:
    """Where a run's costs on a benchmark come from: ``measured`` or ``replayed`` (results.json ``cost``)."""
    cost = run.document["benchmarks"][bench].get("cost")
    if cost is not None:
        return str(cost["source"])
    setup = run.document.get("cost")
    return str(setup["source"]) if setup is not None else "measured"


def _result(bench: str, line: Line, k: int) -> SampleResult:
    """The light result of a line: candidates, hits, outcomes, and its target and size where recorded."""
    return SampleResult(
        bench,
        line.id,
        {},
        k,
        tuple(line.candidates[:k]),
        line.hits,
        top1=line.outcomes,
        image_size=line.size,
        region=line.target,
    )


def run_curve(run: Run, bench: str, lines: Sequence[Line]) -> tuple[Curve | None, str | None]:
    """A run's curve of its selection strategy over ``lines`` (paired order), or None and why not.

    Args:
        run: The run.
        bench: The benchmark.
        lines: Its lines, in the order the comparison pairs them.

    Returns:
        ``(curve, None)``, or ``(None, reason)`` when the run has no curves to rebuild.
    """
    strategy = run.selection
    entry = run.document["benchmarks"][bench]
    budget = entry.get("budget")
    config = run.document.get("config", {})
    radius = config.get("cluster_radius", DEFAULT_CLUSTER_RADIUS) if isinstance(config, Mapping) else None
    radius = float(radius) if isinstance(radius, (int, float)) else DEFAULT_CLUSTER_RADIUS
    recorded = sum(bool(x.costs) for x in lines)
    if not recorded:
        return None, "no cost records in its predictions.jsonl"
    partial: tuple[str, ...] = ()
    if recorded < len(lines):
        partial = (f"costs are the mean over the {recorded} of {len(lines)} samples with cost records",)
    critic = None if budget is None else budget["critic"]
    paid = point_label(cost_source(run, bench))
    if strategy == REFINED:
        whole = mean_cost([whole_cost(x.costs) if x.costs else None for x in lines])
        outcomes = tuple(float(x.top1) for x in lines)
        one = Curve(strategy, run.k, REFINED, critic, (run.k,), (outcomes,), (whole,), (paid,), partial)
        return one, None
    if budget is None and run.k > 1:
        return None, (
            f"{run.results_path} has no budget curves (written before them): re-score the run with this gge "
            "(model=replay)"
        )
    first_slot = None if budget is None else budget["first_slot"]
    plan = subset_plan(run.k, first_slot)
    method = plan.method
    per_sample = [
        sample_hits(_result(bench, x, run.k), plan, (strategy,), cluster_radius=radius) for x in lines
    ]
    per_cost = [sample_costs(x.costs, plan, point_slots(x.candidates[: run.k])) for x in lines]
    js = tuple(range(1, run.k + 1))
    hits = tuple(tuple(h[strategy][j - 1] for h in per_sample) for j in js)

    def paid_for(c: SampleCost) -> Cost:  # the critic pick pays the critic's requests; no other does
        return c.critic if strategy == "critic" else c.proposer

    costs = tuple(mean_cost([None if c is None else paid_for(c[j - 1]) for c in per_cost]) for j in js)
    slots = max((ledger_slots(x.costs) for x in lines if x.costs), default=0)
    notes = partial
    if slots > run.k:
        paid = "derived"
        notes += (f"its ledger paid for {slots} candidates and it scores {run.k}: every cost is derived",)
    labels = tuple(paid if j == run.k else "derived" for j in js)
    unknown = [j for j, row in zip(js, hits, strict=True) if any(h is None for h in row)]
    if unknown:
        notes += (
            f"'{strategy}' builds a new point, whose hit needs the target, which these predictions.jsonl "
            f"lines (written before gge recorded it) do not have: its points at j = "
            f"{', '.join(map(str, unknown))} are left out",
        )
    return Curve(strategy, run.k, method, critic, js, hits, costs, labels, notes), None


@dataclass(frozen=True)
class Match:
    """The matched pair of two curves (:func:`closest`).

    Attributes:
        unit: ``tokens`` or ``seconds``.
        i: A's point index.
        m: B's point index.
        rel: Their relative difference ``|cost A − cost B| / max(cost A, cost B)``.
        inside: Every ``(i, m)`` whose relative difference is within the tolerance of the pair's,
            the pair first, then the others from the closest (one: the measurement tells the
            pairing apart).
    """

    unit: str
    i: int
    m: int
    rel: float
    inside: tuple[tuple[int, int], ...]


def closest(a: Curve, b: Curve, tolerance: float = 0.0) -> Match | None:
    """The unit and the matched pair of point indices (:data:`RULE`), or None without a common unit.

    Tokens where both curves know them at some pair of points, else seconds. The pair minimises the
    relative difference; ties go to the larger budget (the larger of the smaller cost), then to the
    fewer candidates (the smaller ``jA + jB``, then the smaller jA). In seconds, every pair whose
    relative difference is at most the closest's plus ``tolerance`` (the uncertainty of the
    difference of the measured costs, :func:`spread_tolerance`) is one the measurement cannot tell
    from it: they are listed in :attr:`Match.inside` (:data:`SPREAD_POLICY`); the pair stays the
    closest.

    Args:
        a: A's curve.
        b: B's curve.
        tolerance: The relative uncertainty of a difference of measured seconds (ignored for tokens).

    Returns:
        The :class:`Match`, or None.
    """
    for unit in UNITS:
        pairs = []
        for i in range(len(a.js)):
            ca = a.cost(i, unit)
            if ca is None or not a.known(i):
                continue
            for m in range(len(b.js)):
                cb = b.cost(m, unit)
                if cb is None or not b.known(m):
                    continue
                top = max(ca, cb)
                rel = abs(ca - cb) / top if top > 0 else 0.0
                pairs.append((rel, -min(ca, cb), a.js[i] + b.js[m], a.js[i], i, m))
        if not pairs:
            continue
        pairs.sort()
        best = pairs[0]
        inside = [best]
        if unit == "seconds":
            inside += [p for p in pairs[1:] if p[0] <= best[0] + tolerance]
        return Match(unit, best[4], best[5], best[0], tuple((p[4], p[5]) for p in inside))
    return None


Z95 = 1.96
"""The normal quantile of a two-sided 95% interval."""


def seconds_spread(lines: Sequence[Line]) -> float | None:
    """A run's relative uncertainty of its mean measured seconds (:data:`SPREAD_MEASURE`), None where unknown.

    The relative half-width of the 95% interval of the mean of the seconds per sample (every
    request of the sample: results.json ``cost.total.seconds``) over the ``lines`` whose seconds
    are known: ``1.96 · sd / √n / mean``, ``sd`` with ddof = 1. It says how far the measured cost
    could lie from the run's true one, not how much samples differ from each other. 0 under two
    samples or where the mean is 0; None where no sample has seconds.

    Example:
        >>> from gge.types import CostRecord
        >>> lines = [Line("x", 1, True, (True,), None, None, costs=(CostRecord("propose", seconds=s),))
        ...          for s in (1.0, 1.0, 2.0, 2.0)]
        >>> round(seconds_spread(lines), 6)  # mean 1.5, sd √(1/3): 1.96 · 0.57735 / 2 / 1.5
        0.377202
    """
    per = [sample_totals(x.costs)[TOTAL].seconds for x in lines if x.costs]
    known = np.array([s for s in per if s is not None], dtype=float)
    if not len(known):
        return None
    mean = float(known.mean())
    if len(known) < 2 or mean == 0:
        return 0.0
    return Z95 * float(known.std(ddof=1)) / float(np.sqrt(len(known))) / mean


def spread_tolerance(a: float | None, b: float | None) -> float:
    """The relative uncertainty of a difference of two measured costs: ``√(a² + b²)`` (unknown: 0).

    Example:
        >>> spread_tolerance(0.03, 0.04), spread_tolerance(None, 0.02)
        (0.05, 0.02)
    """
    return float(np.hypot(a or 0.0, b or 0.0))


def setup_warnings(a: Run, b: Run, bench: str, unit: str) -> list[str]:
    """Why the costs compared at matched budget in ``unit`` may not be one unit (compare.json ``warnings``).

    Seconds compare only on the same hardware, device, dtype, backend and batch size, tokens only
    counted by the same backend (:data:`SETUP_FIELDS`, read from each run's results.json ``cost``).
    A run whose costs were replayed (read back from a predictions file) records none of its original
    setup, so nothing can be checked for it: that is said instead.

    Args:
        a: Run A.
        b: Run B.
        bench: The benchmark (its entry's cost ``source``).
        unit: The matched unit, ``tokens`` or ``seconds``.

    Returns:
        The warnings, each naming the benchmark (none when the setups agree).
    """
    out: list[str] = []
    sides = (("A", a), ("B", b))
    replayed = [(side, run) for side, run in sides if cost_source(run, bench) == "replayed"]
    for side, run in replayed:
        setup = run.document.get("cost")
        whose = f" ({setup['hardware']})" if setup is not None else ""
        other = "B" if side == "A" else "A"
        out.append(
            f"{bench}: {side}'s costs are replayed{whose}: the setup they were measured on is not recorded, "
            f"so whether {side}'s {unit} compare with {other}'s is unknown"
        )
    if replayed:
        return out
    setups = [run.document.get("cost") for _, run in sides]
    missing = [side for (side, _), setup in zip(sides, setups, strict=True) if setup is None]
    if missing:
        out.append(
            f"{bench}: {' and '.join(missing)} records no cost setup (results.json 'cost'): whether the "
            f"runs' {unit} compare is unknown"
        )
        return out
    sa, sb = setups
    assert sa is not None and sb is not None
    fields = SETUP_FIELDS.get(unit, ())
    apart = [f for f in fields if sa.get(f) != sb.get(f)]
    if apart:
        diff = "; ".join(f"{f}: A {sa.get(f)!r}, B {sb.get(f)!r}" for f in apart)
        why = (
            "seconds measured on other hardware or settings are not one unit"
            if unit == "seconds"
            else "tokens counted by other backends (tokenizers, image encodings, caches) are not one unit"
        )
        out.append(f"{bench}: matched budget in {unit}, but the runs' cost setups differ ({diff}): {why}")
    return out


def _side(curve: Curve, i: int) -> MatchedSide:
    return {
        "strategy": curve.strategy,
        "k": curve.k,
        "method": curve.method,
        "critic": curve.critic,
        "j": curve.js[i],
        "top1": curve.top1(i),
        "tokens": curve.costs[i][0],
        "seconds": curve.costs[i][1],
        "cost": curve.labels[i],
        "curve": curve.points(),
    }


def matched_budget(
    a: Run,
    b: Run,
    bench: str,
    pairs: Sequence[tuple[Line, Line]],
    clusters: Sequence[str],
    *,
    resamples: int,
    seed: int,
    level: float,
    min_clusters: int,
) -> tuple[MatchedBudget | None, list[str], list[str]]:
    """The comparison at matched budget on one benchmark (compare.json ``budget``), its notes and warnings.

    Args:
        a: Run A.
        b: Run B.
        bench: The benchmark.
        pairs: Its paired lines (A's, B's), in the comparison's order.
        clusters: Each pair's cluster key (its screenshot), as compare's other intervals use.
        resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        level: Interval coverage.
        min_clusters: Fewer screenshots than this give no interval.

    Returns:
        ``(budget, notes, warnings)``: ``budget`` is None when either run has no curve or no common
        cost unit (the notes say why); ``warnings`` say where the costs compared may not be one unit
        (:func:`setup_warnings`). Else ``unit``, ``rule``, ``relative_difference``, ``spread`` (in
        seconds: each run's :func:`seconds_spread`, their tolerance, the pairings the measurement
        cannot tell apart from the pair and whether there are others, which a note then says;
        None in tokens), ``a`` and ``b`` (each
        run's strategy, K, method, critic, the matched ``j``, its Top-1, tokens and seconds per
        sample, ``cost`` measured or derived, and its whole ``curve``), ``diff`` (B − A in points, of
        the micro Top-1: the mean of the per-sample expected hits), ``ci``, ``samples`` and
        ``screenshots``.
    """
    notes: list[str] = []
    curves: list[Curve] = []
    for side, run, lines in (("A", a, [x for x, _ in pairs]), ("B", b, [y for _, y in pairs])):
        curve, why = run_curve(run, bench, lines)
        if curve is None:
            notes.append(f"{bench}: no comparison at matched budget: {side} ({run.folder}): {why}")
            return None, notes, []
        notes += [f"{bench}: {side}'s budget curve: {n}" for n in curve.notes]
        curves.append(curve)
    ca, cb = curves
    spreads = (
        seconds_spread([x for x, _ in pairs]),
        seconds_spread([y for _, y in pairs]),
    )
    tolerance = spread_tolerance(*spreads)
    match = closest(ca, cb, tolerance)
    if match is None:
        notes.append(f"{bench}: no comparison at matched budget: no cost both runs know (tokens or seconds)")
        return None, notes, []
    unit, i, m, rel = match.unit, match.i, match.m, match.rel
    spread_doc: MatchedSpread | None = None
    if unit == "seconds":
        spread_doc = {
            "measure": SPREAD_MEASURE,
            "a": spreads[0],
            "b": spreads[1],
            "tolerance": tolerance,
            "pairings": [[ca.js[p], cb.js[q]] for p, q in match.inside],
            "inside": len(match.inside) > 1,
            "policy": SPREAD_POLICY,
        }
        if spread_doc["inside"]:
            notes.append(f"{bench}: {spread_text(spread_doc)}")
    ea = np.array(ca.hits[i], dtype=float)
    eb = np.array(cb.hits[m], dtype=float)
    ci: list[float] | None = None
    screenshots = len(set(clusters))
    if len(ea) and screenshots >= min_clusters:
        lo, hi, _ = paired_bootstrap(ea, eb, clusters, resamples=resamples, seed=seed, level=level)
        ci = [_pct(lo), _pct(hi)]
    top_a, top_b = ca.top1(i), cb.top1(m)
    budget: MatchedBudget = {
        "unit": unit,
        "rule": RULE,
        "relative_difference": rel,
        "spread": spread_doc,
        "a": _side(ca, i),
        "b": _side(cb, m),
        "diff": None if top_a is None or top_b is None else top_b - top_a,
        "ci": ci,
        "samples": len(ea),
        "screenshots": screenshots,
    }
    return budget, notes, setup_warnings(a, b, bench, unit)
