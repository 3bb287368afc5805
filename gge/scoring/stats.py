"""Paired statistics of ``gge compare``: cluster bootstrap, exact McNemar, minimum detectable difference.

Pure functions (numpy only); :mod:`gge.compare` applies them to two runs paired sample by sample.

- :func:`paired_bootstrap`: percentile interval and standard error of ``stat(b) - stat(a)`` under a
  cluster bootstrap; :func:`resample_weights` gives the resampled multisets themselves.
- :func:`mcnemar_exact`: the two-sided exact McNemar test (binomial on the discordant pairs).
- :func:`min_detectable_difference`: ``(z_0.975 + z_0.80) * SE``.
- :func:`percentile_bootstrap`: the seeded percentile interval of a mean over samples, resampled as
  ``scipy.stats.bootstrap(..., method="percentile")`` resamples (:func:`bootstrap_means`; a
  benchmark's declared headline interval, :attr:`gge.benchmarks.base.Benchmark.headline_ci`).

Example:
    >>> mcnemar_exact(0, 0), round(mcnemar_exact(1, 9), 4)
    (1.0, 0.0215)
    >>> lo, hi, se = paired_bootstrap(np.array([0.0, 1.0] * 20), np.ones(40), [str(i) for i in range(40)])
    >>> lo < 0.5 < hi
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

import numpy as np

__all__ = [
    "HEADLINE_SEED",
    "MDD_FACTOR",
    "Statistic",
    "bootstrap_means",
    "macro_statistic",
    "mcnemar_exact",
    "mean_statistic",
    "min_detectable_difference",
    "paired_bootstrap",
    "percentile_bootstrap",
    "resample_weights",
]

Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""A resampled statistic: ``(values (n,), weights (R, n)) -> (R,)``.

``weights[r, i]`` is how many times sample ``i`` is in resample ``r`` (a multiset of indices written
as multiplicities, so that all ``R`` resamples are evaluated as one matrix product). The statistic
of the original sample is ``statistic(values, np.ones((1, n)))[0]``.
"""

MDD_FACTOR = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.80)
"""``z_0.975 + z_0.80`` (≈ 2.80): alpha 0.05 two-sided, power 0.8."""

_CHUNK_CELLS = 1 << 22
"""Weights are materialised in blocks of at most this many (resample, sample) entries."""


def mean_statistic(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The mean of each weighted resample (micro accuracy for 0/1 values).

    Args:
        values: One value per sample, shape (n,).
        weights: Multiplicities, shape (R, n).

    Returns:
        Shape (R,).

    Example:
        >>> mean_statistic(np.array([0.0, 1.0]), np.array([[1, 1], [0, 2]])).tolist()
        [0.5, 1.0]
    """
    w = weights.astype(float)
    return np.asarray((w @ values) / w.sum(axis=1))


def macro_statistic(groups: Sequence[Sequence[int]], n: int) -> Statistic:
    """The unweighted mean over groups of each group's mean (a macro average, as ``metrics.average``).

    A group absent from a resample (weight 0) is left out of that resample's mean, as
    :func:`gge.scoring.metrics.average` averages over the groups present. A sample may be in several groups
    (multi-label values) or in none.

    Args:
        groups: Sample indices of each group.
        n: Number of samples.

    Returns:
        A :data:`Statistic`.

    Example:
        >>> stat = macro_statistic([[0, 1, 2], [3]], 4)
        >>> stat(np.array([1.0, 1.0, 0.0, 0.0]), np.ones((1, 4))).round(4).tolist()
        [0.3333]
    """
    member = np.zeros((n, len(groups)))
    for g, idx in enumerate(groups):
        member[list(idx), g] = 1.0

    def statistic(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        w = weights.astype(float)
        num = w @ (values[:, None] * member)
        den = w @ member
        present = den > 0
        acc = np.where(present, num / np.where(present, den, 1.0), 0.0)
        count = present.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(np.where(count > 0, acc.sum(axis=1) / count, np.nan))

    return statistic


def _cluster_codes(clusters: Sequence[str]) -> tuple[np.ndarray, int]:
    index: dict[str, int] = {}
    codes = np.fromiter(
        (index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=len(clusters)
    )
    return codes, len(index)


def _cluster_counts(n_clusters: int, resamples: int, seed: int) -> np.ndarray:
    """(R, G): how many times each cluster is drawn in each resample (G draws with replacement)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_clusters, size=(resamples, n_clusters))
    flat = draws + n_clusters * np.arange(resamples)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * n_clusters).reshape(resamples, n_clusters)


def resample_weights(clusters: Sequence[str], *, resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """The cluster-bootstrap resamples as sample multiplicities.

    Each resample draws as many clusters as there are, with replacement, and takes every sample of
    each drawn cluster: samples of one cluster always carry the same multiplicity.

    Args:
        clusters: The cluster key of each sample (its screenshot).
        resamples: Number of resamples R.
        seed: Seed of the generator.

    Returns:
        Integer array (R, n): ``[r, i]`` is how many times sample ``i`` is in resample ``r``.

    Example:
        >>> w = resample_weights(["s1", "s1", "s2"], resamples=50, seed=1)
        >>> bool((w[:, 0] == w[:, 1]).all()), w.shape, sorted(set(w[:, [0, 2]].sum(axis=1).tolist()))
        (True, (50, 3), [2])
    """
    codes, n_clusters = _cluster_codes(clusters)
    if n_clusters == 0:
        return np.zeros((resamples, 0), dtype=np.int64)
    return _cluster_counts(n_clusters, resamples, seed)[:, codes]


def paired_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    clusters: Sequence[str],
    *,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    statistic: Statistic = mean_statistic,
) -> tuple[float, float, float]:
    """Percentile interval and standard error of ``statistic(b) - statistic(a)``, paired, clustered.

    Both runs are evaluated on the same resamples (the pairing); a resample draws clusters with
    replacement and takes all their samples (see :func:`resample_weights`). Resamples where the
    statistic is undefined (NaN, e.g. a macro average with no group present) are dropped.

    Args:
        a: Run A's per-sample values (0/1 outcomes), shape (n,).
        b: Run B's, same samples in the same order.
        clusters: Each sample's cluster key (screenshot path; a unique key per sample gives the
            ordinary per-sample bootstrap).
        resamples: Number of resamples.
        seed: Seed (the same seed gives the same resamples).
        level: Coverage of the interval.
        statistic: The statistic (default: the mean).

    Returns:
        ``(low, high, se)`` in the statistic's units (fractions for 0/1 values); NaNs when no
        resample defines the statistic.

    Example:
        >>> a = np.array([1.0, 1.0, 0.0, 0.0]); b = np.array([1.0, 1.0, 1.0, 1.0])
        >>> lo, hi, se = paired_bootstrap(a, b, ["x", "x", "y", "y"], resamples=200)
        >>> (lo, hi)
        (0.0, 1.0)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    n = len(a)
    if len(b) != n or len(clusters) != n:
        raise ValueError(f"a, b and clusters must have one entry per sample: {n}, {len(b)}, {len(clusters)}")
    if n == 0:
        raise ValueError("paired_bootstrap needs at least one sample")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    codes, n_clusters = _cluster_codes(clusters)
    counts = _cluster_counts(n_clusters, resamples, seed)
    step = max(1, _CHUNK_CELLS // n)
    diffs = np.concatenate(
        [
            statistic(b, w) - statistic(a, w)
            for w in (counts[i : i + step][:, codes] for i in range(0, resamples, step))
        ]
    )
    diffs = diffs[~np.isnan(diffs)]
    if diffs.size == 0:
        return (math.nan, math.nan, math.nan)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(diffs, [tail, 1.0 - tail])
    se = float(diffs.std(ddof=1)) if diffs.size > 1 else 0.0
    return (float(lo), float(hi), se)


HEADLINE_SEED = 0
"""The seed of a benchmark's declared headline interval (written into results.json with it)."""


def bootstrap_means(
    values: np.ndarray, *, resamples: int = 9999, seed: int = HEADLINE_SEED, chunk_cells: int = _CHUNK_CELLS
) -> np.ndarray:
    """The mean of each bootstrap resample of ``values``, drawn as ``scipy.stats.bootstrap`` draws them.

    ``rng = numpy.random.default_rng(seed)`` then ``rng.integers(0, n, (resamples, n))``: row ``r``
    holds the sample indices of resample ``r``. Here the rows are drawn in blocks, which continue the
    same stream, so the result equals scipy's ``bootstrap_distribution`` for the statistic
    ``numpy.mean`` with ``rng=numpy.random.default_rng(seed)`` (one batch). Samples are drawn one by
    one (no clusters).

    Args:
        values: One value per sample, shape (n,), n >= 1.
        resamples: Number of resamples R.
        seed: Seed of ``numpy.random.default_rng``.
        chunk_cells: At most this many (resample, sample) indices are drawn at once.

    Returns:
        Shape (R,).

    Example:
        >>> bootstrap_means(np.array([0.0, 1.0]), resamples=4, seed=0).tolist()
        [1.0, 0.5, 0.0, 0.0]
    """
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 0:
        raise ValueError("a bootstrap needs at least one sample")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    rng = np.random.default_rng(seed)
    step = max(1, chunk_cells // n)
    return np.concatenate(
        [
            values[rng.integers(0, n, (min(step, resamples - start), n))].mean(axis=1)
            for start in range(0, resamples, step)
        ]
    )


def percentile_bootstrap(
    values: np.ndarray,
    *,
    resamples: int = 9999,
    confidence: float = 0.95,
    seed: int = HEADLINE_SEED,
    chunk_cells: int = _CHUNK_CELLS,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values``, seeded.

    The resample means of :func:`bootstrap_means` (those of ``scipy.stats.bootstrap(...,
    method="percentile", n_resamples=resamples, rng=np.random.default_rng(seed))``), then their
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles with linear interpolation
    (numpy's; scipy's own quantile may differ in the last bit).

    Args:
        values: One value per sample (0/1 outcomes), shape (n,), n >= 1.
        resamples: Number of resamples R.
        confidence: Coverage of the interval.
        seed: Seed of ``numpy.random.default_rng``.
        chunk_cells: At most this many (resample, sample) indices are drawn at once.

    Returns:
        ``(low, high)`` in the units of ``values``.

    Example:
        >>> percentile_bootstrap(np.ones(5))
        (1.0, 1.0)
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    means = bootstrap_means(values, resamples=resamples, seed=seed, chunk_cells=chunk_cells)
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return (float(lo), float(hi))


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs.

    Under the null each discordant pair is equally likely to favour either run, so
    ``X ~ Binomial(a_only + b_only, 1/2)`` and ``p = min(1, 2 * P[X <= min(a_only, b_only)])``.
    Exact integer arithmetic up to 20000 discordant pairs, log-space sums beyond.

    Args:
        a_only: Samples only run A gets right.
        b_only: Samples only run B gets right.

    Returns:
        The p-value; 1.0 when there are no discordant pairs.

    Example:
        >>> mcnemar_exact(0, 0), mcnemar_exact(0, 5), mcnemar_exact(3, 3)
        (1.0, 0.0625, 1.0)
    """
    if a_only < 0 or b_only < 0:
        raise ValueError(f"counts must be >= 0, got {a_only}, {b_only}")
    n = a_only + b_only
    if n == 0:
        return 1.0
    m = min(a_only, b_only)
    if n <= 20000:
        term = tail = 1  # C(n, 0); each next coefficient from the last, exactly
        for i in range(m):
            term = term * (n - i) // (i + 1)
            tail += term
        return min(1.0, 2 * tail / (1 << n))
    log_half = n * math.log(2.0)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - log_half for i in range(m + 1)]
    top = max(logs)
    log_tail = top + math.log(sum(math.exp(x - top) for x in logs))
    return min(1.0, 2.0 * math.exp(log_tail))


def min_detectable_difference(se: float) -> float:
    """Minimum detectable difference: ``(z_0.975 + z_0.80) * se``.

    The smallest true difference that a two-sided test at alpha 0.05 would detect with power 0.8,
    under a normal approximation to the paired difference whose standard error is ``se`` (here the
    screenshot-clustered bootstrap SE of the observed difference, so it accounts for correlated
    samples). It estimates the SE from the observed disagreements: it would be 0 when the two runs
    never disagree, which says nothing about a difference that would show up as disagreements, so
    :func:`gge.compare.pairing.compare_runs` reports no MDD there (and none below
    :data:`gge.compare.pairing.MIN_CLUSTERS` screenshots). (Connor's
    1987 sample size for McNemar needs the discordance rate under the alternative and ignores the
    clustering; the bootstrap SE needs neither.)

    Args:
        se: Standard error of the difference.

    Returns:
        The minimum detectable difference, in the units of ``se``.

    Example:
        >>> round(min_detectable_difference(1.0), 3)
        2.802
    """
    return MDD_FACTOR * se
