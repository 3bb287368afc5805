"""A fixed, seeded subset of a benchmark, stratified by its breakdown labels.

The training-time callback evaluates the same subset every time, so curves are comparable, and the
subset keeps the proportions of the benchmark's official table cells (e.g. ScreenSpot-Pro's
group x ui_type), so a small subset still speaks for every cell.

Example:
    >>> from gge.types import Box, Sample
    >>> s = [Sample("b", str(i), "", (1, 1), "x", Box(0, 0, 1, 1), {"kind": "ab"[i % 2]}) for i in range(10)]
    >>> [x.id for x in stratified_subset(s, 4, ("kind",), seed=0)]
    ['1', '5', '6', '8']
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from gge.types import Sample, label_values


def strata_keys(label_keys: Sequence[str], rows: str | None, cols: str | None) -> tuple[str, ...]:
    """The label keys to stratify by: the first official table's rows and columns, else none."""
    return tuple(k for k in (rows, cols) if k is not None and k in label_keys)


def stratified_subset(
    samples: Sequence[Sample], n: int | None, keys: Sequence[str], *, seed: int
) -> list[Sample]:
    """``n`` samples drawn without replacement, proportionally from each stratum, in original order.

    Strata are the combinations of the samples' values for ``keys`` (a multi-label value counts by
    its first value). Each stratum gets ``n * size / total`` rounded down, and the remaining slots go
    to the strata with the largest remainders (ties: larger stratum, then first seen), so the total
    is exactly ``min(n, len(samples))``. The draw within a stratum is seeded.

    Args:
        samples: The benchmark's samples.
        n: How many to keep; None keeps all.
        keys: Label keys defining the strata.
        seed: Seed of the draw.

    Returns:
        The chosen samples, in their original order.
    """
    if n is None or n >= len(samples):
        return list(samples)
    if n <= 0:
        return []
    strata: dict[tuple[str, ...], list[int]] = {}
    for i, s in enumerate(samples):
        key = tuple((label_values(s.labels.get(k)) or ("",))[0] for k in keys)
        strata.setdefault(key, []).append(i)
    total = len(samples)
    quotas = {key: n * len(idx) // total for key, idx in strata.items()}
    order = list(strata)
    remainder = sorted(
        order, key=lambda key: (-(n * len(strata[key]) % total), -len(strata[key]), order.index(key))
    )
    for key in remainder[: n - sum(quotas.values())]:
        quotas[key] += 1
    rng = random.Random(seed)
    chosen: list[int] = []
    for key in order:
        chosen += rng.sample(strata[key], quotas[key])
    return [samples[i] for i in sorted(chosen)]
