"""Why a model misses: outcome decomposition, unbiased pass@k, target sizes, miss distances, calibration.

Pure functions over scored results (:class:`gge.types.SampleResult`). Every quantity is defined
here once; :func:`gge.scoring.metrics.benchmark_metrics` puts them in results.json, the report prints and
draws them, the loggers log them.

**Outcomes** (:func:`outcome`): every sample falls in exactly one kind, tested in this order:

* ``hit`` — the Top-1 pick hits (a correct abstention on an absent target included);
* ``image_error`` — the screenshot could not be read (the model was not asked);
* ``server_error`` — the sample's request failed for good (its retries ran out, or the server refused
  or garbled it): the model's answer never came;
* ``not_in_file`` — a replayed predictions file has no line for the sample (the harness that made it
  did not ask the model, or dropped the answer);
* ``critic_miss`` — some scored candidate hits, the pick does not;
* ``format_error`` — the answer could not be parsed (no candidate hits);
* ``abstained`` — no candidate hits and the pick is an abstention;
* ``proposer_miss`` — no candidate hits (the pick is a wrong point, or there is none).

With the ``critic`` or ``first`` strategy, ``hit + critic_miss`` is exactly Oracle@K (a spatial
strategy may build a point that hits while no candidate does: that sample is a ``hit``).

**pass@k** (:func:`pass_at_k`): the unbiased estimator of Chen et al. (2021),
``1 - C(n - c, k) / C(n, k)`` for ``n`` exchangeable answers of which ``c`` hit, averaged over
samples. Oracle@k in proposer order is what a ``single_pass`` ranking means; for ``sampling`` the
answers are draws, and pass@k is the order-free number.

**Target sizes** (:func:`target_area_fraction`): the target's area over the screenshot's
(a box's width x height, a polygon's shoelace area; absent targets have none), bucketed by
:data:`SIZE_EDGES`, log-spaced and the same for every benchmark.

**Miss distance** (:func:`miss_distance`): from a missing pick to the nearest point of the target's
bounding box (0 inside it), in target sizes (over the box's diagonal) and in screen fractions (over
the screenshot's diagonal).

**Calibration**: :mod:`gge.scoring.calibration`.

Example:
    >>> round(pass_at_k(n=5, c=1, k=2), 3)
    0.4
    >>> size_bucket(0.0007)
    '0.03–0.1%'
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from gge.benchmarks.base import UNKNOWN_SIZE, TableSpec
from gge.scoring.calibration import ScoreKind, calibration
from gge.scoring.grouping import group_by, group_stats, ordered, pct
from gge.types import STRATEGIES, Absent, Box, Polygon, Region, SampleResult

Stats = dict[str, Any]

OUTCOMES: tuple[str, ...] = (
    "hit",
    "critic_miss",
    "proposer_miss",
    "abstained",
    "format_error",
    "image_error",
    "server_error",
    "not_in_file",
)
"""The outcome kinds, in the order tables show them."""
WHEN_PRESENT: tuple[str, ...] = ("server_error", "not_in_file")
"""Kinds an outcome split has only where some sample has them (only an endpoint run has server
errors, only a replay lacks lines): documents written before the kind existed read the same."""
MISS_KINDS: tuple[str, ...] = OUTCOMES[1:]
"""Every outcome but ``hit``."""
SPATIAL: tuple[str, ...] = tuple(s for s in STRATEGIES if s not in ("critic", "first"))
"""The spatial self-consistency baselines the critic is compared with."""

SIZE_EDGES: tuple[float, ...] = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 1.0)
"""Bucket edges of the target's area as a fraction of the screenshot (half-decades; the last bucket
includes 1, and a larger fraction, possible with a box past the edges, goes there too)."""


# -- outcomes ---------------------------------------------------------------------------------------
def outcome(result: SampleResult, strategy: str) -> str:
    """The kind of one sample's outcome under a selection strategy (see the module docstring).

    Args:
        result: The scored sample.
        strategy: The strategy whose pick is Top-1.

    Returns:
        One of :data:`OUTCOMES`.

    Example:
        >>> from gge.types import Candidate
        >>> r = SampleResult("b", "0", {}, 2, (Candidate((1.0, 1.0), 0.9), Candidate((5.0, 5.0), 0.1)),
        ...                  (False, True), {"critic": Candidate((1.0, 1.0), 0.9)}, {"critic": False})
        >>> outcome(r, "critic")
        'critic_miss'
    """
    if result.top1.get(strategy, False):
        return "hit"
    if result.image_error is not None:
        return "image_error"
    if result.server_error is not None:
        return "server_error"
    if result.not_in_file:
        return "not_in_file"
    if any(result.hits):
        return "critic_miss"
    if result.format_error:
        return "format_error"
    if result.abstained(strategy):
        return "abstained"
    return "proposer_miss"


def decompose(results: Sequence[SampleResult], strategy: str) -> Stats:
    """How a group's samples split over the outcome kinds.

    Args:
        results: The group.
        strategy: The strategy whose pick is Top-1.

    Returns:
        ``{"samples": n, "counts": {kind: int}, kind: percent or None, ...}`` for every kind of
        :data:`OUTCOMES` (the percentages sum to 100 when ``n > 0``).
    """
    counts = dict.fromkeys(OUTCOMES, 0)
    for r in results:
        counts[outcome(r, strategy)] += 1
    for kind in WHEN_PRESENT:
        if not counts[kind]:
            del counts[kind]
    n = len(results)
    return {
        "samples": n,
        "counts": counts,
        **{kind: pct(counts[kind], n) for kind in OUTCOMES if kind in counts},
    }


def critic_gain(selection: Mapping[str, float | None]) -> Stats:
    """The critic's Top-1 minus that of ``first`` and of the best spatial baseline, in points.

    Args:
        selection: Top-1 percent by strategy (results.json's ``selection``).

    Returns:
        ``{"over_first", "over_best_spatial", "best_spatial"}`` (None where a number is missing).

    Example:
        >>> critic_gain({"critic": 60.0, "first": 50.0, "mean": 40.0, "medoid": 55.0})
        {'over_first': 10.0, 'over_best_spatial': 5.0, 'best_spatial': 'medoid'}
    """
    critic = selection.get("critic")
    first = selection.get("first")
    spatial = [(v, s) for s in SPATIAL if (v := selection.get(s)) is not None]
    best_value, best = max(spatial, key=lambda t: t[0]) if spatial else (None, None)
    return {
        "over_first": None if critic is None or first is None else critic - first,
        "over_best_spatial": None if critic is None or best_value is None else critic - best_value,
        "best_spatial": best,
    }


# -- pass@k -----------------------------------------------------------------------------------------
def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased probability that ``k`` of ``n`` answers, ``c`` of which hit, include a hit.

    ``1 - C(n - c, k) / C(n, k)``, computed as a product to stay exact for large ``n``.

    Args:
        n: Answers drawn.
        c: Answers that hit (``0 <= c <= n``).
        k: Answers kept (``1 <= k <= n``).

    Returns:
        A probability in [0, 1].
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def draws(results: Sequence[SampleResult], k: int) -> int:
    """How many answers each sample drew: the most candidates any sample has, at most ``k``.

    A sampling proposer returns one slot per draw (unparsed ones included), so the longest list is
    the number drawn, whatever K the evaluation scores (a replay with a larger ``k`` does not invent
    draws; a smaller one scores the first ``k``).

    Example:
        >>> from gge.types import Candidate
        >>> r = SampleResult("b", "0", {}, 9, (Candidate((1.0, 1.0)),) * 5, (False,) * 5)
        >>> draws([r], 9), draws([r], 3)
        (5, 3)
    """
    return min(k, max((len(r.candidates) for r in results), default=0))


def pass_at_k_table(results: Sequence[SampleResult], n: int, first_slot: int = 0) -> Stats | None:
    """Mean unbiased pass@k for k = 1..n over a group, from ``n`` exchangeable answers per sample.

    The answers are the candidate slots ``first_slot .. first_slot + n - 1`` in proposer order; a
    missing or unparsed slot counts as a miss (it was drawn and failed).

    Args:
        results: The group.
        n: Exchangeable answers per sample.
        first_slot: The first of them (1 when the first answer is the greedy one, which is not a draw).

    Returns:
        ``{"n": n, "first_slot": first_slot, "pass@1": pct, ..., "pass@n": pct}``, or None when ``n``
        is below 1 or the group is empty.
    """
    if n < 1 or not results:
        return None
    out: Stats = {"n": n, "first_slot": first_slot}
    counts = [sum(r.hits[first_slot : first_slot + n]) for r in results]
    for k in range(1, n + 1):
        out[f"pass@{k}"] = 100.0 * sum(pass_at_k(n, c, k) for c in counts) / len(counts)
    return out


# -- target sizes and distances ---------------------------------------------------------------------
def region_area(region: Region) -> float | None:
    """The target's area in pixels (a polygon's by the shoelace formula); None for an absent target."""
    if isinstance(region, Absent):
        return None
    if isinstance(region, Polygon):
        v = region.vertices
        if len(v) < 3:
            return 0.0
        nxt = [*v[1:], v[0]]
        twice = sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(v, nxt, strict=True))
        return abs(twice) / 2.0
    x1, y1, x2, y2 = region.pixel_box()
    return max(0.0, x2 - x1) * max(0.0, y2 - y1)


def target_area_fraction(result: SampleResult) -> float | None:
    """The target's area over the screenshot's, or None (absent target, unknown region or size).

    A screenshot that could not be read has no known size (the loaders' :data:`UNKNOWN_SIZE`).
    """
    if result.region is None or result.image_size is None or result.image_size == UNKNOWN_SIZE:
        return None
    area = region_area(result.region)
    w, h = result.image_size
    if area is None or w <= 0 or h <= 0:
        return None
    return area / (w * h)


def _percent_label(x: float) -> str:
    value = 100.0 * x
    return f"{value:.3g}".rstrip("0").rstrip(".") if value < 1 else f"{value:g}"


def bucket_labels() -> list[str]:
    """Labels of the size buckets of :data:`SIZE_EDGES` (``"<0.01%"``, ``"0.01–0.03%"`` ... ``"≥10%"``).

    Example:
        >>> bucket_labels()[0], bucket_labels()[-1]
        ('<0.01%', '≥10%')
    """
    inner = SIZE_EDGES[1:-1]
    labels = [f"<{_percent_label(inner[0])}%"]
    labels += [f"{_percent_label(a)}–{_percent_label(b)}%" for a, b in itertools.pairwise(inner)]
    labels.append(f"≥{_percent_label(inner[-1])}%")
    return labels


_SIZE_LABELS: tuple[str, ...] = tuple(bucket_labels())


def size_bucket(fraction: float) -> str:
    """The label of the size bucket holding an area fraction (lower edge inclusive)."""
    for i, high in enumerate(SIZE_EDGES[1:-1]):
        if fraction < high:
            return _SIZE_LABELS[i]
    return _SIZE_LABELS[-1]


def size_buckets(results: Sequence[SampleResult], k: int, strategy: str) -> Stats:
    """Top-1 and Oracle@K by target size bucket.

    Args:
        results: The group.
        k: The K of Oracle@K.
        strategy: The strategy whose pick is Top-1.

    Returns:
        ``{"edges": [...], "buckets": [{"label", "low", "high", "samples", "top1", "oracle@K",
        "median_area"}...], "no_area": n, "unreadable": m}``; ``no_area`` counts targets without an
        area (absent targets, or a size unknown), ``unreadable`` the samples whose screenshot could
        not be read (the model was not asked: they belong to no bucket).
    """
    groups: dict[str, list[tuple[float, SampleResult]]] = {label: [] for label in _SIZE_LABELS}
    no_area = unreadable = 0
    for r in results:
        fraction = target_area_fraction(r)
        if r.image_error is not None:
            unreadable += 1
        elif fraction is None:
            no_area += 1
        else:
            groups[size_bucket(fraction)].append((fraction, r))
    buckets = []
    for i, label in enumerate(_SIZE_LABELS):
        members = groups[label]
        areas = sorted(f for f, _ in members)
        buckets.append(
            {
                "label": label,
                "low": SIZE_EDGES[i],
                "high": SIZE_EDGES[i + 1],
                **group_stats([r for _, r in members], k, strategy),
                "median_area": quantile(areas, 0.5) if areas else None,
            }
        )
    return {"edges": list(SIZE_EDGES), "buckets": buckets, "no_area": no_area, "unreadable": unreadable}


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values by linear interpolation (numpy's default rule).

    Example:
        >>> quantile([1.0, 2.0, 3.0, 4.0], 0.5), quantile([1.0, 2.0, 3.0, 4.0], 0.25)
        (2.5, 1.75)
    """
    if not sorted_values:
        raise ValueError("quantile of no values")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def miss_distance(result: SampleResult, strategy: str) -> tuple[float | None, float] | None:
    """How far a missing pick lands from the target: (target sizes, screen fractions).

    The distance is from the pick to the nearest point of the target's bounding box (0 inside it,
    e.g. a point within a polygon's box but outside the polygon); the target size is the box's
    diagonal, the screen's its diagonal. None for a hit, an abstaining or missing pick, an absent or
    unknown target; a zero-size target (a degenerate box) has no distance in target sizes (None).

    Args:
        result: The scored sample.
        strategy: The strategy whose pick is Top-1.

    Returns:
        ``(distance / target diagonal, distance / screen diagonal)``, or None.
    """
    pick = result.picks.get(strategy)
    if (
        result.top1.get(strategy, False)
        or pick is None
        or pick.point is None
        or result.region is None
        or result.image_size is None
        or result.image_size == UNKNOWN_SIZE
        or isinstance(result.region, Absent)
    ):
        return None
    x1, y1, x2, y2 = _bbox(result.region)
    x, y = pick.point
    dx = max(x1 - x, 0.0, x - x2)
    dy = max(y1 - y, 0.0, y - y2)
    d = math.hypot(dx, dy)
    size = math.hypot(max(0.0, x2 - x1), max(0.0, y2 - y1))
    screen = math.hypot(*result.image_size)
    return (d / size if size > 0 else None), (d / screen if screen > 0 else 0.0)


def _bbox(region: Box | Polygon) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = region.pixel_box()
    return min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)


def _quartiles(values: Sequence[float]) -> Stats | None:
    if not values:
        return None
    s = sorted(values)
    return {"q1": quantile(s, 0.25), "median": quantile(s, 0.5), "q3": quantile(s, 0.75)}


def miss_distances(results: Sequence[SampleResult], strategy: str) -> Stats:
    """Median and quartiles of the miss distances of a group (see :func:`miss_distance`).

    Returns:
        ``{"misses": n, "target_sizes": {"q1", "median", "q3"} | None, "screen": {...} | None}``.
    """
    pairs = [d for r in results if (d := miss_distance(r, strategy)) is not None]
    return {
        "misses": len(pairs),
        "target_sizes": _quartiles([a for a, _ in pairs if a is not None]),
        "screen": _quartiles([b for _, b in pairs]),
    }


# -- one benchmark's analysis -----------------------------------------------------------------------
def decomposition_tables(
    results: Sequence[SampleResult], tables: Sequence[TableSpec], strategy: str
) -> list[Stats]:
    """The decomposition in every cell of the official tables (rows x cols, or rows for a 1-D table)."""
    out = []
    for spec in tables:
        if not any(spec.rows in r.labels for r in results):
            continue
        keys = [spec.rows] if spec.cols is None else [spec.rows, spec.cols]
        groups = group_by(results, keys)
        rows = ordered((key[0] for key in groups), spec.row_order)
        cols: list[str | None] = (
            [None] if spec.cols is None else list(ordered((key[1] for key in groups), spec.col_order))
        )
        cells = [
            {"row": rv, "col": cv, **decompose(groups[(rv,) if cv is None else (rv, cv)], strategy)}
            for rv in rows
            for cv in cols
            if ((rv,) if cv is None else (rv, cv)) in groups
        ]
        out.append({"title": spec.title, "rows": spec.rows, "cols": spec.cols, "cells": cells})
    return out


def analyse(
    results: Sequence[SampleResult],
    *,
    tables: Sequence[TableSpec],
    k: int,
    strategy: str,
    selection: Mapping[str, float | None],
    exchangeable_from: int | None = None,
    score_kind: ScoreKind | None = None,
) -> Stats:
    """Every "why" section of one benchmark's results.json entry.

    Args:
        results: The benchmark's results.
        tables: Its official tables (the decomposition is given per cell).
        k: The K of Oracle@K.
        strategy: The strategy whose pick is Top-1.
        selection: Top-1 percent by strategy (for the critic's gain).
        exchangeable_from: The first candidate slot of the exchangeable (sampled) answers, when the
            proposer sampled them (``sampling`` mode: 1, the greedy answer being first); None for a
            ranked list (``single_pass``), where pass@k is not reported.
        score_kind: How to read the critic's scores (None: inferred).

    Returns:
        ``{"decomposition", "critic_gain", "pass_at_k", "size_buckets", "miss_distance",
        "calibration"}``. A one-answer run (``k == 1``) has no critic gain and no pass@k (None): no
        critic chose and nothing was drawn twice; its outcome split (``hit``, ``proposer_miss``,
        ``abstained``, ``format_error``, ``image_error``; ``critic_miss`` stays 0), target sizes, miss
        distances and any calibration are reported as for any K.
    """
    return {
        "decomposition": {
            "strategy": strategy,
            "overall": decompose(results, strategy),
            "tables": decomposition_tables(results, tables, strategy),
        },
        "critic_gain": None if k == 1 else critic_gain(selection),
        "pass_at_k": None
        if exchangeable_from is None or k == 1
        else pass_at_k_table(results, draws(results, k) - exchangeable_from, exchangeable_from),
        "size_buckets": size_buckets(results, k, strategy),
        "miss_distance": miss_distances(results, strategy),
        "calibration": calibration(results, score_kind),
    }


def analysis_options(proposer: str | None, critic: str | None) -> dict[str, Any]:
    """The :func:`analyse` options that follow from a policy's proposer and critic modes.

    ``sampling`` draws its answers after a greedy first one (``greedy_first``), so the exchangeable
    answers start at slot 1; a ``pointwise`` critic gives probabilities, a ``listwise`` one a rank;
    anything else (a demo or replayed model) leaves both to the data: no pass@k, the score kind
    inferred.

    Example:
        >>> analysis_options("sampling", "pointwise")
        {'exchangeable_from': 1, 'score_kind': 'probability'}
    """
    kinds: dict[str, ScoreKind] = {"pointwise": "probability", "listwise": "rank"}
    return {
        "exchangeable_from": 1 if proposer == "sampling" else None,
        "score_kind": kinds.get(critic or ""),
    }
