"""The grouped computation every benchmark's numbers come from: Top-1 and Oracle@k of a group of samples.

A group is a list of results (a table cell, a label value, a whole benchmark); an average is micro
(over samples) or macro (over label values), as the benchmark declares it
(:mod:`gge.benchmarks.base`). Percentages are unrounded floats in [0, 100]; an empty group gives
``None``.

Example:
    >>> wilson_interval(45, 50)[0] > 75.0
    True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from gge.benchmarks.base import Average, TableSpec
from gge.types import SampleResult, label_values

Stats = dict[str, Any]


def pct(hits: float, n: float) -> float | None:
    """``100 * hits / n``, or None when ``n`` is 0 (counts, or sums such as a stage's tokens)."""
    return 100.0 * hits / n if n else None


def wilson_interval(hits: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion, in percent (95% by default).

    Args:
        hits: Successes.
        n: Trials.
        z: Normal quantile (1.96 for 95%).

    Returns:
        (low, high) in percent, or None when ``n`` is 0.
    """
    if n == 0:
        return None
    p = hits / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (100.0 * max(0.0, centre - half), 100.0 * min(1.0, centre + half))


def group_stats(results: Sequence[SampleResult], k: int, strategy: str) -> Stats:
    """Samples, Top-1 and Oracle@k of a group of results (micro).

    Args:
        results: The group.
        k: The K of Oracle@K.
        strategy: Selection strategy giving Top-1.

    Returns:
        ``{"samples": n, "top1": pct, "oracle@K": pct}``.
    """
    n = len(results)
    return {
        "samples": n,
        "top1": pct(sum(r.top1.get(strategy, False) for r in results), n),
        f"oracle@{k}": pct(sum(r.hit_at(k) for r in results), n),
    }


def group_by(
    results: Iterable[SampleResult], keys: Sequence[str]
) -> dict[tuple[str, ...], list[SampleResult]]:
    """Group results by the combination of their values for ``keys`` (multi-label expands).

    A result lacking one of the keys belongs to no group.
    """
    groups: dict[tuple[str, ...], list[SampleResult]] = {}
    for r in results:
        combos: list[tuple[str, ...]] = [()]
        for key in keys:
            combos = [(*c, v) for c in combos for v in label_values(r.labels.get(key))]
        for combo in combos:
            groups.setdefault(combo, []).append(r)
    return groups


def average(results: Sequence[SampleResult], avg: Average, k: int, strategy: str) -> Stats:
    """An overall number by the given averaging rule.

    Micro is hits over samples. Macro is the unweighted mean of the micro accuracy of each
    group of ``avg.over`` label values present.

    Args:
        results: All results of a benchmark.
        avg: The averaging rule.
        k: The K of Oracle@K.
        strategy: Selection strategy giving Top-1.

    Returns:
        ``{"rule": name, "top1": pct, "oracle@K": pct}`` (plus ``"groups"`` for macro).
    """
    if not avg.over:
        stats = group_stats(results, k, strategy)
        return {"rule": avg.name, "top1": stats["top1"], f"oracle@{k}": stats[f"oracle@{k}"]}
    groups = group_by(results, avg.over)
    per = [group_stats(g, k, strategy) for g in groups.values()]

    def mean(key: str) -> float | None:
        return sum(s[key] for s in per) / len(per) if per else None

    return {"rule": avg.name, "top1": mean("top1"), f"oracle@{k}": mean(f"oracle@{k}"), "groups": len(per)}


def ordered(values: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """The distinct ``values``: those listed in ``preferred`` first, in its order, then the rest sorted."""
    present = set(values)
    head = [v for v in preferred if v in present]
    return head + sorted(present - set(head))


def table(results: Sequence[SampleResult], spec: TableSpec, k: int, strategy: str) -> Stats:
    """One official table: cells by row (and column) values, with row and column averages (micro).

    Args:
        results: All results of a benchmark.
        spec: The table's layout.
        k: The K of Oracle@K.
        strategy: Selection strategy giving Top-1.

    Returns:
        ``{"title", "rows", "cols", "row_values", "col_values", "cells", "row_avg", "col_avg", "all"}``;
        ``cells[row][col]`` and the averages are :func:`group_stats` dicts.
    """
    by_row = group_by(results, [spec.rows])
    row_values = ordered((key[0] for key in by_row), spec.row_order)
    out: Stats = {
        "title": spec.title,
        "rows": spec.rows,
        "cols": spec.cols,
        "row_values": row_values,
        "row_avg": {v: group_stats(by_row[(v,)], k, strategy) for v in row_values},
        "all": group_stats(results, k, strategy),
    }
    if spec.cols is not None:
        by_cell = group_by(results, [spec.rows, spec.cols])
        by_col = group_by(results, [spec.cols])
        col_values = ordered((key[0] for key in by_col), spec.col_order)
        out["col_values"] = col_values
        out["cells"] = {
            rv: {cv: group_stats(by_cell.get((rv, cv), []), k, strategy) for cv in col_values}
            for rv in row_values
        }
        out["col_avg"] = {cv: group_stats(by_col[(cv,)], k, strategy) for cv in col_values}
    return out
