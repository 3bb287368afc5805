"""What each stage cost and what it bought, as tables of text shared by report.md and report.html.

Three sections of a results.json entry, each None-able, become :class:`Section` values (a title, a
header, rows of formatted cells and notes), which :mod:`gge.report.markdown` lays out as Markdown and
:mod:`gge.report.cost_html` as HTML, so both reports read the same numbers:

* ``cost`` (:func:`cost_section`): one row per stage and the total: calls, tokens and seconds per
  sample, and each stage's share of the run's tokens and seconds;
* ``refine`` (:func:`refine_section`): the refine stage's Top-1 before and after, what it fixed and
  broke, how often it ran and its share of the cost;
* ``budget`` (:func:`budget_section`): Top-1 of the critic, the vote and ``first`` using j of the K
  candidates, with what j candidates cost without the critic and, for the critic's pick, with it
  (``†`` marks a derived cost).

:func:`budget_curves` gives the budget plot's curves (report.html's SVG and the W&B line series): the
critic's curve at the critic's cost, the others at the proposer's.

Example:
    >>> point = {"j": 1, "top1": {"critic": 40.0, "cluster": 35.0, "first": 30.0}, "oracle": 50.0,
    ...          "tokens": 1040.0, "seconds": 0.5, "critic": {"tokens": 1040.0, "seconds": 0.5},
    ...          "cost": "derived", "subsets": 1}
    >>> budget = {"k": 1, "method": "prefix", "first_slot": None, "critic": "pointwise",
    ...           "points": [point], "notes": []}
    >>> budget_section(budget).rows
    [['1', '1,040†', '0.5†', '1,040†', '0.5†', '40.0', '35.0', '30.0', '–', '50.0']]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gge.documents.cost import WindowSummary
from gge.documents.results import (
    BudgetCurves,
    BudgetPoint,
    CostSetup,
    CostSummary,
    PointCost,
    RefineSummary,
    StageCost,
)
from gge.report.numbers import DASH, fmt, fmt_calls, fmt_seconds, fmt_signed, fmt_tokens
from gge.scoring.analysis import SPATIAL

TOKEN_KINDS = ("image", "text", "output", "cached")
"""The token counts of a stage shown beside its total (their means), where some stage reports them."""
DERIVED_MARK = "†"
"""Marks a budget point's cost derived from measured per-candidate costs (not paid as such)."""
VOTE = "cluster"
"""The voting strategy the critic's curve is set beside (majority vote over clustered answers)."""
PLOTTED = ("critic", VOTE, "first")
"""The strategies of the budget plot, in drawing order (``first`` drawn faint)."""
LABELS = {"critic": "critic", VOTE: "cluster (voting)", "first": "first"}
"""How the budget table and plot name the strategies they show."""
OTHER_SPATIAL = tuple(s for s in SPATIAL if s != VOTE)
"""The spatial baselines of the budget table's "best other spatial" column."""

Axis = Literal["tokens", "seconds"]


@dataclass(frozen=True)
class Section:
    """One report section: ``### title``, a table and notes under it (plain text, not escaped).

    Attributes:
        key: A stable name (``cost``, ``refine``, ``budget``): the HTML id's stem.
        title: The heading.
        header: Column names.
        rows: Formatted cells.
        notes: What the table means, one sentence each.
    """

    key: str
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


# -- cost -------------------------------------------------------------------------------------------
def _spread_cells(spread: Mapping[str, float] | None, keys: Sequence[str], text: Any) -> list[str]:
    return [text(None if spread is None else spread[key]) for key in keys]


def cost_section(cost: CostSummary, k: int | None = None) -> Section:
    """The cost table: one row per stage that ran, then ``total``.

    Columns: calls per sample; tokens per sample (mean, p50, p90) and the means of the image, text,
    output and cached tokens (only the kinds some stage reports); seconds per sample (mean, p50, p90,
    p99); the stage's share of the run's tokens and seconds (percent). Where the requests paid for
    more candidates than the run's ``k`` scores (``cost.candidates``: a K = 5 file rescored with
    k = 3), the heading says so.

    Example:
        >>> spread = {"mean": 100.0, "p50": 100.0, "p90": 100.0}
        >>> tokens = {"input": spread, "image": None, "text": None, "output": None, "cached": None,
        ...           "total": spread}
        >>> stage = {"calls_per_sample": 1.0, "tokens": tokens, "seconds": None,
        ...          "share": {"tokens": 100.0, "seconds": None}}
        >>> section = cost_section({"samples": 2, "unrecorded": 0, "source": "measured",
        ...                         "stages": {"propose": stage}, "total": stage})
        >>> section.header[:5]
        ['stage', 'calls/sample', 'tokens mean', 'tokens p50', 'tokens p90']
        >>> section.rows[1][:5]
        ['total', '1.00', '100', '100', '100']
    """
    lines: list[tuple[str, StageCost]] = [*cost["stages"].items(), ("total", cost["total"])]
    kinds = [kind for kind in TOKEN_KINDS if any(s["tokens"][kind] is not None for _, s in lines)]  # type: ignore[literal-required]
    header = ["stage", "calls/sample", "tokens mean", "tokens p50", "tokens p90"]
    header += [f"{kind} mean" for kind in kinds]
    header += ["s mean", "s p50", "s p90", "s p99", "% of tokens", "% of seconds"]
    rows = []
    for name, s in lines:
        tokens: Mapping[str, Any] = s["tokens"]
        seconds: Mapping[str, float] | None = s["seconds"]  # type: ignore[assignment]
        row = [name, fmt_calls(s["calls_per_sample"])]
        row += _spread_cells(tokens["total"], ("mean", "p50", "p90"), fmt_tokens)
        row += [fmt_tokens(None if tokens[kind] is None else tokens[kind]["mean"]) for kind in kinds]
        row += _spread_cells(seconds, ("mean", "p50", "p90", "p99"), fmt_seconds)
        row += [fmt(s["share"].get("tokens")), fmt(s["share"].get("seconds"))]
        rows.append(row)
    source = "measured in this run" if cost["source"] == "measured" else "replayed from the predictions file"
    paid_for = cost.get("candidates")
    if k is not None and paid_for and paid_for != k:
        source += f"; measured for {paid_for} candidates; this run scores {k}"
    without = f"; {cost['unrecorded']} without" if cost["unrecorded"] else ""
    title = f"Cost per sample ({source}; {cost['samples']} samples with cost records{without})"
    notes = [
        "Tokens: what the model computed, the prompt (image and text) less what a cache served, plus the "
        "output; cached: the prompt tokens a cache served (of the input consumed); a stage a sample did "
        "not run counts 0 for it; p50/p90/p99: percentiles over the samples; image/text/output/cached: "
        f"means; {DASH}: some request of the stage did not report it.",
        "Seconds: each sample's share of its batches' wall time; % of tokens / seconds: the stage's part "
        "of the run's total.",
    ]
    return Section("cost", title, header, rows, notes)


# -- refine -----------------------------------------------------------------------------------------
def refine_section(refine: RefineSummary) -> Section:
    """The refine table: one row, the refined strategy's Top-1 before and after and what it changed.

    Example:
        >>> section = refine_section({"base": "critic", "samples": 4, "triggered": 3, "trigger_rate": 75.0,
        ...     "before": 50.0, "after": 75.0, "fixed": 2, "broken": 1, "format_errors": 0,
        ...     "cost_share": {"tokens": 20.0, "seconds": 30.0}})
        >>> section.rows
        [['critic', '4', '50.0', '75.0', '+25.0', '2', '1', '3 (75.0%)', '0', '20.0', '30.0']]
    """
    before, after = refine["before"], refine["after"]
    change = None if before is None or after is None else after - before
    header = [
        "refines",
        "samples",
        "Top-1 before",
        "Top-1 after",
        "change",
        "fixed (miss → hit)",
        "broken (hit → miss)",
        "triggered",
        "format errors",
        "% of tokens",
        "% of seconds",
    ]
    row = [
        refine["base"],
        str(refine["samples"]),
        fmt(before),
        fmt(after),
        fmt_signed(change),
        str(refine["fixed"]),
        str(refine["broken"]),
        f"{refine['triggered']} ({fmt(refine['trigger_rate'])}%)",
        str(refine["format_errors"]),
        fmt(refine["cost_share"].get("tokens")),
        fmt(refine["cost_share"].get("seconds")),
    ]
    notes = [
        f"Top-1 before: the `{refine['base']}` pick; after: the refined pick (`selection=refined`), "
        "micro, over every sample; triggered: the samples the refine request ran for "
        "(`model.refine_when`); % of tokens / seconds: the refine stage's part of the run's cost."
    ]
    return Section("refine", "Refine stage (zoom-in)", header, [row], notes)


# -- budget -----------------------------------------------------------------------------------------
def best_other_spatial(top1: Mapping[str, float | None]) -> tuple[str | None, float | None]:
    """The best spatial baseline other than the vote at one budget point (the first of a tie).

    Example:
        >>> best_other_spatial({"mean": 40.0, "medoid": 55.0, "median": 55.0, "cluster": 70.0})
        ('median', 55.0)
    """
    known = [(v, s) for s in OTHER_SPATIAL if (v := top1.get(s)) is not None]
    if not known:
        return None, None
    value = max(v for v, _ in known)
    return next(s for v, s in known if v == value), value


def _method_note(budget: BudgetCurves) -> str:
    k = budget["k"]
    first = budget["first_slot"]
    kept = (
        f", the first {first} candidate{'s' if first != 1 else ''} (before the sampled ones) always kept"
        if first
        else ""
    )
    if budget["method"] == "subsets":
        how = (
            f"the exact expectation over the j-subsets of the {k} candidates (sampled answers are "
            f"exchangeable){kept}, as the unbiased pass@k counts them"
        )
    elif budget["method"] == "sampled":
        how = (
            f"the expectation over the j-subsets of the {k} candidates{kept}, averaged over subsets drawn "
            "at random where a j has too many (the notes below name them)"
        )
    elif budget["method"] == "prefix":
        how = "the first j candidates in proposer order"
    else:
        how = str(budget["method"])
    critic = budget["critic"]
    if critic == "pointwise":
        judge = "the critic scores each candidate, so its pick on a subset is exact"
    elif critic == "induced":
        judge = "the critic's listwise ranking restricted to the subset: the induced order, not a new call"
    else:
        judge = "no critic"
    return f"Top-1 (%, micro) using j of the K={k} candidates; method {budget['method']}: {how}; {judge}."


def _cost_cell(value: float | None, text: Callable[[float | None], str], derived: bool) -> str:
    cell = text(value)
    return cell + DERIVED_MARK if derived and value is not None else cell


def critic_cost(point: BudgetPoint) -> PointCost | None:
    """What the critic's pick costs at a point (None: no critic; a point written before it: its own).

    Example:
        >>> critic_cost({"tokens": 10.0, "seconds": 1.0, "critic": {"tokens": 15.0, "seconds": 1.5}})
        {'tokens': 15.0, 'seconds': 1.5}
    """
    if "critic" not in point:  # a results.json of an earlier gge: one cost for every strategy
        return {"tokens": point["tokens"], "seconds": point["seconds"]}
    return point["critic"]


def paid_label(budget: BudgetCurves) -> str:
    """How the budget names the cost the run paid: ``measured`` or ``replayed`` (its j = K point's)."""
    labels = {p["cost"] for p in budget["points"]} - {"derived"}
    return "replayed" if "replayed" in labels else "measured"


def budget_section(budget: BudgetCurves) -> Section:
    """The budget table: rows j = 1..K, what j candidates cost per sample and each strategy's Top-1.

    Columns: tokens and seconds per sample of the proposer's requests (what ``first``, the vote and
    the spatial baselines pay), then, with a critic, the critic pick's tokens and seconds (its
    requests included; ``†``: derived), the critic's Top-1 (only with one), the vote (``cluster``),
    ``first``, the best other spatial baseline (named) and Oracle@j.
    """
    critic = budget["critic"] is not None
    header = ["j", "tokens/sample", "seconds/sample"]
    if critic:
        header += ["critic tokens/sample", "critic seconds/sample"]
    header += [LABELS[s] for s in PLOTTED if critic or s != "critic"]
    header += ["best other spatial", "Oracle@j"]
    rows = []
    for p in budget["points"]:
        derived = p["cost"] == "derived"
        row = [str(p["j"]), _cost_cell(p["tokens"], fmt_tokens, derived)]
        row.append(_cost_cell(p["seconds"], fmt_seconds, derived))
        if critic:
            judged = critic_cost(p)
            row.append(_cost_cell(None if judged is None else judged["tokens"], fmt_tokens, derived))
            row.append(_cost_cell(None if judged is None else judged["seconds"], fmt_seconds, derived))
        row += [fmt(p["top1"].get(s)) for s in PLOTTED if critic or s != "critic"]
        name, value = best_other_spatial(p["top1"])
        row += [DASH if name is None else f"{fmt(value)} ({name})", fmt(p["oracle"])]
        rows.append(row)
    paid = paid_label(budget)
    what = (
        "replayed (what the replayed run paid, read back from its predictions file)"
        if paid == "replayed"
        else "measured (what the run paid)"
    )
    notes = [
        _method_note(budget),
        f"Costs per sample: unmarked, {what}; {DERIVED_MARK} derived from the ledger: each request's "
        "fixed part (the prompt tokens it computed; its prefill time where timed apart) weighted by the "
        "chance it is still made, plus its per-candidate part (its output, the rest of its time) in "
        "proportion to the share of its candidates used; a request about all candidates at once (a "
        "listwise ranking) in full.",
    ]
    if critic:
        notes.append(
            "tokens/seconds: the proposer's requests, what `first`, the vote and the spatial baselines pay "
            "(they never ask the critic); critic tokens/seconds: the critic's pick, its requests (rank, "
            "judge) included where it runs, on at least two point candidates (not at j = 1)."
        )
    refined = budget.get("refined")
    if refined is not None:
        whole = refined.get("cost", "measured")
        notes.append(
            f"Refined (the refine stage on the pick, at the run's whole cost, {whole}): "
            f"Top-1 {fmt(refined['top1'])} at {fmt_tokens(refined['tokens'])} tokens, "
            f"{fmt_seconds(refined['seconds'])} s per sample."
        )
    notes += list(budget["notes"])
    title = f"Budget: Top-1 against the candidates used (j = 1..{budget['k']})"
    return Section("budget", title, header, rows, notes)


@dataclass(frozen=True)
class CurvePoint:
    """One mark of the budget plot: j candidates cost ``x`` per sample and gave Top-1 ``y``.

    ``cost`` is the point's label: ``measured``, ``replayed`` (both what the run paid) or ``derived``.
    """

    j: int
    x: float
    y: float
    cost: str = "measured"

    @property
    def derived(self) -> bool:
        """Whether the cost is derived from the ledger (not paid as such)."""
        return self.cost == "derived"


@dataclass(frozen=True)
class Curve:
    """One strategy's budget curve on one cost axis (points without a value on it left out)."""

    strategy: str
    label: str
    points: tuple[CurvePoint, ...]


def _cost_on(point: BudgetPoint, strategy: str, axis: Axis) -> float | None:
    """What ``strategy`` pays at ``point`` on ``axis``: the critic its own cost, the others the proposer's."""
    if strategy != "critic":
        return point[axis]
    judged = critic_cost(point)
    return None if judged is None else judged[axis]


def budget_curves(budget: BudgetCurves, axis: Axis) -> list[Curve]:
    """The budget plot's curves on ``axis`` (tokens or seconds per sample): critic, vote, ``first``.

    Each strategy at what it pays: the critic's curve at the critic's cost (its requests included),
    the vote's and ``first``'s at the proposer's. The critic's curve only when the run has a critic;
    a curve with no point is left out.

    Example:
        >>> p = {"j": 2, "top1": {"critic": 60.0, "cluster": 55.0, "first": 50.0}, "oracle": 70.0,
        ...      "tokens": 2000.0, "seconds": None, "critic": {"tokens": 2600.0, "seconds": None},
        ...      "cost": "measured", "subsets": 1}
        >>> b = {"k": 2, "method": "subsets", "first_slot": 0, "critic": "pointwise", "points": [p],
        ...      "notes": []}
        >>> [(c.label, c.points[0].x) for c in budget_curves(b, "tokens")], budget_curves(b, "seconds")
        ([('critic', 2600.0), ('cluster (voting)', 2000.0), ('first', 2000.0)], [])
    """
    out = []
    for strategy in PLOTTED:
        if strategy == "critic" and budget["critic"] is None:
            continue
        points = tuple(
            CurvePoint(p["j"], float(x), float(y), p["cost"])
            for p in budget["points"]
            if (x := _cost_on(p, strategy, axis)) is not None and (y := p["top1"].get(strategy)) is not None
        )
        if points:
            out.append(Curve(strategy, LABELS[strategy], points))
    return out


def refined_mark(budget: BudgetCurves, axis: Axis) -> tuple[float, float] | None:
    """The refined point ``(cost on axis, Top-1)`` of the budget plot, or None."""
    refined = budget.get("refined")
    if refined is None or refined[axis] is None or refined["top1"] is None:
        return None
    return float(refined[axis]), float(refined["top1"])  # type: ignore[arg-type]


def entry_k(entry: Mapping[str, Any]) -> int | None:
    """A results.json entry's K: the last of its ``oracle@1`` ... ``oracle@K`` (None: none).

    Example:
        >>> entry_k({"top1": 50.0, "oracle@1": 50.0, "oracle@2": 60.0}), entry_k({})
        (2, None)
    """
    js = [int(key[len("oracle@") :]) for key in entry if key.startswith("oracle@") and key[7:].isdigit()]
    return max(js, default=None)


def cost_sections(entry: Mapping[str, Any], k: int | None = None) -> list[Section]:
    """The cost, refine and budget sections of a results.json entry, those it has (None: none).

    Args:
        entry: The entry.
        k: The run's K (None: read from the entry, :func:`entry_k`).
    """
    out = []
    if entry.get("cost"):
        out.append(cost_section(entry["cost"], k if k is not None else entry_k(entry)))
    if entry.get("refine"):
        out.append(refine_section(entry["refine"]))
    if entry.get("budget"):
        out.append(budget_section(entry["budget"]))
    return out


__all__ = [
    "DERIVED_MARK",
    "LABELS",
    "PLOTTED",
    "Curve",
    "CurvePoint",
    "Section",
    "best_other_spatial",
    "budget_curves",
    "budget_section",
    "cost_section",
    "cost_sections",
    "critic_cost",
    "entry_k",
    "paid_label",
    "refine_section",
    "refined_mark",
]


def window_text(window: WindowSummary) -> str:
    """What a request window did, in words: its size, the requests in flight, the overloads.

    The words of the ``Costs:`` line's window (:func:`setup_text`) and of each invocation's window
    (results.json ``invocations[i].window``) in report.html.

    Example:
        >>> window_text({"mode": "adaptive", "start": 64, "max": 256, "final": 32, "peak_in_flight": 64,
        ...     "mean_in_flight": 30.6, "sent": 500, "overloads": 3, "decreases": 1, "busy_seconds": 9.0})
        'adaptive 64 -> 32 (at most 256), 30.6 requests in flight on average, 64 at most, 3 overloads'
        >>> window_text({"mode": "fixed", "start": 8, "max": 8, "final": 8, "peak_in_flight": 8,
        ...     "mean_in_flight": 7.5, "sent": 40, "overloads": 0, "decreases": 0, "busy_seconds": 5.0})
        'fixed 8, 7.5 requests in flight on average, 8 at most, 0 overloads'
    """
    moved = f"{window['start']} -> {window['final']} (at most {window['max']})"
    size = moved if window["mode"] == "adaptive" else str(window["start"])
    return (
        f"{window['mode']} {size}, {window['mean_in_flight']:g} requests in flight on average, "
        f"{window['peak_in_flight']} at most, {window['overloads']} overloads"
    )


def setup_text(cost: CostSetup) -> str:
    """The report's line saying what the costs were measured on.

    Example:
        >>> setup_text({"source": "measured", "hardware": "AMD EPYC x 2 cores", "device": "cpu",
        ...     "backend": "demo", "dtype": "float32", "batch_size": 16, "batch_grouping": "image size"})
        'Costs: measured on AMD EPYC x 2 cores (cpu, float32), backend demo, batch 16 (grouped by image size)'
        >>> window = {"mode": "adaptive", "start": 64, "max": 256, "final": 96, "peak_in_flight": 96,
        ...     "mean_in_flight": 61.5, "sent": 900, "overloads": 0, "decreases": 0, "busy_seconds": 7.5}
        >>> text = setup_text({"source": "measured", "hardware": "AMD EPYC x 2 cores", "device": "cpu",
        ...     "backend": "openai", "dtype": None, "batch_size": 1, "batch_grouping": "image size",
        ...     "window": window})
        >>> for part in text.split(", backend openai, ")[1].split(", "):
        ...     print(part)
        one request window: adaptive 64 -> 96 (at most 256)
        61.5 requests in flight on average
        96 at most
        0 overloads
    """
    if cost["source"] == "replayed":
        return f"Costs: {cost['hardware']}"
    kind = ", ".join(x for x in (cost["device"], cost["dtype"]) if x)
    head = f"Costs: measured on {cost['hardware']} ({kind}), backend {cost['backend']}, "
    window = cost.get("window")
    if window is not None:
        return f"{head}one request window: {window_text(window)}"
    return f"{head}batch {cost['batch_size']} (grouped by {cost['batch_grouping']})"
