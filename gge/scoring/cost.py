"""The cost ledger as pure functions: what each stage cost per sample, and what the refine stage bought.

Every model request of a sample leaves a :class:`~gge.types.CostRecord` (its stage, tokens, seconds
and batch). :func:`cost_summary` turns a benchmark's records into results.json ``cost``: per stage
and in total, calls per sample, tokens per sample (mean, p50, p90) and seconds per sample (mean,
p50, p90, p99), over the samples that have records, a stage a sample did not run counting 0 for it.
Percentiles are numpy's default (linear interpolation). :func:`refine_summary` is results.json
``refine``: the Top-1 before and after the refine stage, what it fixed and broke, how often it ran
and its share of the cost.

Example:
    >>> from gge.types import CostRecord
    >>> per = sample_totals([CostRecord("propose", input_tokens=100, output_tokens=8, seconds=0.5),
    ...                      CostRecord("judge", input_tokens=90, seconds=0.1, candidates=1)])
    >>> per["propose"].tokens["total"], per["judge"].calls, per["total"].seconds
    (108, 1, 0.6)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from gge.documents.results import CostSummary, RefineSummary, SecondsSpread, Spread, StageCost, TokenCounts
from gge.scoring.grouping import pct
from gge.scoring.selection import REFINED
from gge.types import STAGES, CostRecord, SampleResult

TOKEN_KINDS = ("input", "image", "text", "output", "cached", "total")
"""The token counts of a stage, as ``cost.stages.<stage>.tokens`` names them."""
TOTAL = "total"
"""The name of the whole run's figures beside the stages'."""


@dataclass(frozen=True)
class Totals:
    """One sample's cost in one stage (or in all: ``total``): sums over its requests.

    Attributes:
        calls: Requests.
        tokens: Per kind of :data:`TOKEN_KINDS`, the sum; None where a request did not report it.
        seconds: Summed seconds; None where a request did not report them.
    """

    calls: int = 0
    tokens: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    seconds: float | None = 0.0


def _counts(r: CostRecord) -> dict[str, int | None]:
    return {
        "input": r.input_tokens,
        "image": r.image_tokens,
        "text": r.text_tokens,
        "output": r.output_tokens,
        "cached": r.cached_tokens,
        "total": r.total_tokens,
    }


def _add(a: int | float | None, b: int | float | None) -> Any:
    return None if a is None or b is None else a + b


def sample_totals(costs: Iterable[CostRecord]) -> dict[str, Totals]:
    """One sample's totals per stage it ran, and over all its requests (``total``).

    Args:
        costs: The sample's cost records.

    Returns:
        ``{stage: Totals}`` for each stage with a request, plus ``"total"``.
    """
    out: dict[str, Totals] = {}
    for r in costs:
        for key in (r.stage, TOTAL):
            t = out.get(key, Totals())
            tokens = {kind: _add(t.tokens[kind], n) for kind, n in _counts(r).items()}
            out[key] = Totals(t.calls + 1, tokens, _add(t.seconds, r.seconds))
    return out


def spread(values: Sequence[float]) -> Spread:
    """Mean, p50 and p90 of per-sample values (numpy's linear percentiles).

    Example:
        >>> spread([1.0, 2.0, 3.0, 10.0])["p50"]
        2.5
    """
    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90))}


def seconds_spread(values: Sequence[float]) -> SecondsSpread:
    """:func:`spread` plus the 99th percentile (latency tails)."""
    out = cast(dict[str, float], dict(spread(values)))
    out["p99"] = float(np.percentile(np.asarray(values, dtype=float), 99))
    return cast(SecondsSpread, out)


def _stage_cost(rows: Sequence[Totals | None], overall: Sequence[Totals]) -> StageCost:
    """A stage's figures over the samples (``None``: the sample did not run the stage, counted 0)."""
    zero = Totals()
    present = [r if r is not None else zero for r in rows]
    tokens: dict[str, Spread | None] = {}
    for kind in TOKEN_KINDS:
        values = [r.tokens[kind] for r in present]
        tokens[kind] = None if any(v is None for v in values) else spread([float(v or 0) for v in values])
    seconds = [r.seconds for r in present]
    known_seconds = None if any(s is None for s in seconds) else [float(s or 0.0) for s in seconds]

    def part(mine: Sequence[float | None], whole: Sequence[float | None]) -> float | None:
        if any(v is None for v in mine) or any(v is None for v in whole):
            return None
        return pct(sum(float(v or 0) for v in mine), sum(float(v or 0) for v in whole))

    return {
        "calls_per_sample": float(np.mean([r.calls for r in present])),
        "tokens": cast(TokenCounts, tokens),
        "seconds": None if known_seconds is None else seconds_spread(known_seconds),
        "share": {
            "tokens": part([r.tokens["total"] for r in present], [t.tokens["total"] for t in overall]),
            "seconds": part(seconds, [t.seconds for t in overall]),
        },
    }


def ledger_slots(costs: Iterable[CostRecord]) -> int:
    """The most candidate slots a sample's requests cover: the largest ``slot + candidates`` (0: none).

    A request about every candidate at once (``candidates == 0``) covers none of its own.

    Example:
        >>> ledger_slots([CostRecord("propose", slot=0, candidates=1), CostRecord("propose", slot=1,
        ...               candidates=4), CostRecord("rank")])
        5
    """
    return max((r.slot + r.candidates for r in costs), default=0)


def cost_summary(results: Sequence[SampleResult], *, source: str = "measured") -> CostSummary | None:
    """A benchmark's cost ledger (results.json ``cost``), or None when no sample has cost records.

    Args:
        results: One result per sample.
        source: ``measured`` (this run's requests) or ``replayed`` (read back from a predictions file).

    Returns:
        Per stage (in :data:`~gge.types.STAGES` order, the stages some sample ran) and in total:
        calls per sample, tokens per sample by kind, seconds per sample and the share of the total;
        ``candidates``, the most slots the requests paid for (:func:`ledger_slots` over the samples:
        5 for a K = 5 file a replay rescores with k = 3).
    """
    per = [sample_totals(r.costs) for r in results if r.costs]
    if not per:
        return None
    overall = [p[TOTAL] for p in per]
    stages = [s for s in STAGES if any(s in p for p in per)]
    return {
        "samples": len(per),
        "unrecorded": len(results) - len(per),
        "source": source,
        "candidates": max(ledger_slots(r.costs) for r in results),
        "stages": {s: _stage_cost([p.get(s) for p in per], overall) for s in stages},
        "total": _stage_cost(overall, overall),
    }


# --- the refine stage: what it bought and what it cost ---------------------------------------------
def refined_hits(results: Sequence[SampleResult]) -> list[bool]:
    """Whether each sample's ``refined`` pick hits; a sample without a refine answer keeps its base pick.

    As :func:`gge.scoring.scoring.refined_pick` lets the base pick stand where the stage gave no
    point, a sample the stage never answered (an unreadable screenshot) scores its base strategy's
    hit (the base of the samples that have one; ``critic`` when none has).

    Example:
        >>> from gge.types import Refinement
        >>> zoomed = SampleResult("b", "0", {}, 1, (), (False,), top1={"critic": False, "refined": True},
        ...                       refine=Refinement(base="first", triggered=True, point=(1.0, 1.0)))
        >>> bare = SampleResult("b", "1", {}, 1, (), (True,), top1={"critic": False, "first": True})
        >>> refined_hits([zoomed, bare])
        [True, True]
    """
    base = next((r.refine.base for r in results if r.refine is not None), "critic")
    return [bool(r.top1[REFINED]) if REFINED in r.top1 else bool(r.top1.get(base, False)) for r in results]


def refine_summary(results: Sequence[SampleResult]) -> RefineSummary | None:
    """What the refine stage did over a benchmark (results.json ``refine``), or None without one.

    ``before`` is the micro Top-1 of the strategy it refined (its ``base``), ``after`` that of the
    ``refined`` pick, over every sample (one without a refine answer keeps its base pick:
    :func:`refined_hits`); ``fixed`` (a miss before, a hit after) and ``broken`` (a hit
    before, a miss after) count samples; ``trigger_rate`` is the share of samples it ran for;
    ``cost_share`` its part of the tokens and seconds of the samples with cost records.

    Example:
        >>> from gge.types import Box, Candidate, Prediction, Refinement, Sample
        >>> from gge.scoring.scoring import score_sample
        >>> s = Sample("b", "0", "", (100, 100), "x", Box(40, 40, 60, 60))
        >>> zoomed = Refinement(triggered=True, point=(50.0, 50.0))
        >>> p = Prediction("b", "0", (Candidate((10.0, 10.0)),), refine=zoomed)
        >>> summary = refine_summary([score_sample(s, p, k=1)])
        >>> summary["before"], summary["after"], summary["fixed"], summary["broken"]
        (0.0, 100.0, 1, 0)
    """
    refined = [r for r in results if r.refine is not None]
    if not refined:
        return None
    base = refined[0].refine.base if refined[0].refine is not None else "critic"
    n = len(results)

    before = [bool(r.top1.get(base, False)) for r in results]
    after = refined_hits(results)
    triggered = sum(r.refine is not None and r.refine.triggered for r in results)
    per = [sample_totals(r.costs) for r in results if r.costs]
    share: dict[str, float | None] = {"tokens": None, "seconds": None}
    if per:
        share = _stage_cost([p.get("refine") for p in per], [p[TOTAL] for p in per])["share"]
    return {
        "base": base,
        "samples": n,
        "triggered": triggered,
        "trigger_rate": pct(triggered, n),
        "before": pct(sum(before), n),
        "after": pct(sum(after), n),
        "fixed": sum(not b and a for b, a in zip(before, after, strict=True)),
        "broken": sum(b and not a for b, a in zip(before, after, strict=True)),
        "format_errors": sum(r.refine is not None and r.refine.format_error for r in results),
        "cost_share": share,
    }
