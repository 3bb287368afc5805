"""results.json's cost types: the ledger (``cost``), the budget curves (``budget``), the refine stage.

Re-exported by :mod:`gge.documents.results` (the one schema every reader takes). Their producers are
:func:`gge.scoring.cost.cost_summary`, :func:`gge.scoring.cost.refine_summary`,
:func:`gge.scoring.budget.budget_curves` and :func:`gge.run.hardware.cost_setup`.
"""

from __future__ import annotations

import sys
from typing import Literal, TypedDict

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover - Python 3.10 (typing_extensions comes with torch)
    from typing_extensions import NotRequired

__all__ = [
    "BudgetCurves",
    "BudgetPoint",
    "CostSetup",
    "CostSummary",
    "Invocation",
    "InvocationEnd",
    "PointCost",
    "RefineSummary",
    "RefinedPoint",
    "SecondsSpread",
    "Spread",
    "StageCost",
    "TokenCounts",
]


class Spread(TypedDict):
    """A per-sample quantity over the samples: its mean and percentiles (numpy's linear rule)."""

    mean: float
    p50: float
    p90: float


class SecondsSpread(Spread):
    """Seconds per sample: also the 99th percentile."""

    p99: float


class TokenCounts(TypedDict):
    """Tokens per sample by kind (None: some request of the stage did not report that count)."""

    input: Spread | None
    image: Spread | None
    text: Spread | None
    output: Spread | None
    cached: Spread | None
    total: Spread | None


class StageCost(TypedDict):
    """What one stage (or the whole run: ``total``) cost per sample (:func:`gge.scoring.cost.cost_summary`).

    ``share`` is this stage's part of the run's total tokens and seconds, in percent.
    """

    calls_per_sample: float
    tokens: TokenCounts
    seconds: SecondsSpread | None
    share: dict[str, float | None]


class CostSummary(TypedDict):
    """A benchmark's cost ledger, per stage and in total (results.json ``cost``).

    ``samples`` is how many samples have cost records (the spreads are over them; a stage a sample
    did not run counts 0 for it), ``unrecorded`` how many have none (an unreadable screenshot, a
    replayed file without costs). ``source`` is ``measured`` (this run's requests) or ``replayed``
    (read back from the predictions file a replay re-scored). ``candidates`` is the most candidate
    slots the requests paid for (:func:`gge.scoring.cost.ledger_slots`): a replay of a K = 5 file
    at k = 3 reports K = 5's cost, and says so with 5.
    """

    samples: int
    unrecorded: int
    source: str
    candidates: int
    stages: dict[str, StageCost]
    total: StageCost


class WindowSummary(TypedDict):
    """What a run's request window did (results.json ``cost.window``; :mod:`gge.models.window`).

    Attributes:
        mode: ``fixed`` or ``adaptive``.
        start: The limit it started with.
        max: The most it could grow to (the fixed limit itself when fixed).
        final: Its limit at the end.
        peak_in_flight: The most requests in flight at once.
        mean_in_flight: Requests in flight on average over the time any request was in flight.
        sent: Tries sent (retries included).
        overloads: Tries answered 429 or 503, or timed out.
        decreases: Times an adaptive window shrank (overloads and queueing latency).
        busy_seconds: The time any request was in flight.
        start_reason: Why it started where it did: ``model.concurrency`` (fixed), ``default``
            (adaptive, :data:`gge.models.window.ADAPTIVE_START`), ``given``, or what a probe of the
            server measured (absent from runs before it was recorded).
        processes: The client processes whose windows ran side by side after the parent's
            (``client_procs``, :mod:`gge.models.openai_parts`: then ``peak_in_flight`` is the sum of their
            peaks, an upper bound); absent for a run in one process.
        ramp_stalls: Times a try out past the usual timeout ended an adaptive window's slow start
            and halved it (absent from runs before it was recorded).
    """

    mode: str
    start: int
    max: int
    final: int
    peak_in_flight: int
    mean_in_flight: float
    sent: int
    overloads: int
    decreases: int
    busy_seconds: float
    start_reason: NotRequired[str]
    ramp_stalls: NotRequired[int]
    processes: NotRequired[int]


InvocationEnd = Literal["running", "finished", "interrupted", "stopped", "killed"]
"""How an invocation of a run ended: ``running`` (not yet, or the process died before it could say),
``finished`` (it wrote the results), ``interrupted`` (Ctrl-C), ``stopped`` (an error stopped it: ``why``)
or ``killed`` (a later invocation found it ``running``: the process was killed, its counters are those
of its last update)."""


class Invocation(TypedDict):
    """One invocation of a run into its folder (results.json ``invocations``; :mod:`gge.run.invocations`).

    Attributes:
        started: When it started (UTC, ISO 8601 to the second).
        ended: When it ended (None while ``running``, or when it was killed).
        end: How it ended (:data:`InvocationEnd`).
        why: What stopped it (``stopped``: the error's first line), else absent.
        restored: Samples already finished in the folder when it started.
        samples: Samples it answered itself (its server errors, asked again by a later one, left out).
        counters: Its usage counters by where the model record holds them (``backend.usage``,
            ``backend.images``, ``critic_backend.usage``, ``calls``, ``usage``): each a mapping of
            counts (requests, retries, tokens, ...) this invocation alone made.
        window: What its request window did (absent for a policy without one: an in-process run).
    """

    started: str
    ended: str | None
    end: InvocationEnd
    why: NotRequired[str]
    restored: int
    samples: int
    counters: dict[str, dict[str, float]]
    window: NotRequired[WindowSummary]


class CostSetup(TypedDict):
    """What a run's costs were measured on (results.json ``cost``; :func:`gge.run.hardware.cost_setup`).

    ``source`` is ``measured`` or ``replayed`` (a replay measured nothing: ``hardware`` says whose
    costs it read back).
    """

    source: str
    hardware: str
    device: str
    backend: str
    dtype: str | None
    batch_size: int
    batch_grouping: str
    window: NotRequired[WindowSummary]


class PointCost(TypedDict):
    """What one budget point costs per sample, in tokens and seconds (None: unknown)."""

    tokens: float | None
    seconds: float | None


class BudgetPoint(TypedDict):
    """Top-1 of every strategy using j of the K candidates, and what j candidates cost per sample.

    ``top1`` is the micro Top-1 (percent) of each strategy of :data:`gge.types.STRATEGIES`,
    ``oracle`` Oracle@j, both the mean over the ``subsets`` averaged (1 for the first j). ``tokens``
    and ``seconds`` are per sample over the samples with cost records (None: unknown), of the
    proposer's requests only: what ``first``, a vote and the spatial baselines pay. ``critic`` is
    what the ``critic`` pick pays, the critic's requests (``rank``, ``judge``) included (the
    proposer's alone at j = 1, where the critic does not run); None for a run without a critic.
    ``cost`` is ``measured`` at j = K (what the run paid; ``replayed`` where a replay read it back
    from its predictions file) and ``derived`` below it: each request's measured fixed part (the
    prompt it computed; its prefill time where timed apart) where the request is still made, plus its
    per-candidate part in proportion to the candidates it serves
    (:func:`gge.scoring.budget.budget_curves`). Every j is ``derived`` where the ledger paid for
    more candidates than the run scores (a K = 5 file rescored with k = 3).
    """

    j: int
    top1: dict[str, float | None]
    oracle: float | None
    tokens: float | None
    seconds: float | None
    critic: PointCost | None
    cost: str
    subsets: int


class RefinedPoint(TypedDict):
    """The ``refined`` strategy on the budget plot: its Top-1 at the run's whole cost.

    ``cost`` is ``measured`` or ``replayed`` (as the j = K point's).
    """

    top1: float | None
    tokens: float | None
    seconds: float | None
    cost: str


class BudgetCurves(TypedDict):
    """Top-1 as a function of the candidates used, j = 1..K (results.json ``budget``).

    ``method``: ``subsets`` (the exact expectation over the j-subsets of exchangeable sampled
    answers, the slots before ``first_slot`` always kept, as the unbiased pass@k counts them),
    ``sampled`` (the same, but some j averaged over subsets drawn at random, which ``notes`` names) or
    ``prefix`` (the first j candidates in proposer order, for answers that are not exchangeable).
    ``critic``: ``pointwise`` (a score per candidate: the pick on a subset is exact), ``induced``
    (a listwise ranking restricted to the subset: the induced order, not a new call) or None.
    """

    k: int
    method: str
    first_slot: int | None
    critic: str | None
    points: list[BudgetPoint]
    refined: NotRequired[RefinedPoint]
    notes: list[str]


class RefineSummary(TypedDict):
    """What the refine stage bought and cost (results.json ``refine``).

    ``before`` and ``after`` are the micro Top-1 of the base strategy's pick and of the refined pick;
    ``fixed`` counts misses it turned into hits, ``broken`` hits it turned into misses;
    ``cost_share`` is the refine stage's part of the run's tokens and seconds, in percent.
    """

    base: str
    samples: int
    triggered: int
    trigger_rate: float | None
    before: float | None
    after: float | None
    fixed: int
    broken: int
    format_errors: int
    cost_share: dict[str, float | None]
