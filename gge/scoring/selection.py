"""Top-1 selection strategies: pick one answer per sample from the proposer's K candidates.

Every strategy is computed from the same candidates, so one run compares the critic against the
spatial self-consistency baselines of the COPC paper (mean, coordinate-wise median, geometric
median, medoid) and the centre of the densest cluster.

Rules (gge's choices, documented here and kept stable):

* No candidates: every strategy gives ``None`` (the sample has no answer; scoring counts a miss).
* ``critic``: the candidate with the highest score; ties go to the earlier candidate; a candidate
  whose score is ``None`` (or NaN) ranks below every scored one; when no candidate is scored, the
  first candidate. The original :class:`~gge.types.Candidate` object is returned (it may abstain).
* ``first``: ``candidates[0]`` (it may abstain).
* Spatial strategies (``mean``, ``median``, ``geomedian``, ``medoid``, ``cluster``): let P be the
  points of the candidates that do not abstain and A the number of abstentions (unparsed
  slots, ``Candidate.parsed`` false, count in neither; with nothing parsed the result is
  ``None``). **Abstention rule** (gge's choice): when A > len(P), a strict majority abstains
  and the result is an abstention ``Candidate(point=None)``; otherwise the strategy aggregates
  P only and the abstentions are ignored (a tie between points and abstentions keeps the
  points). Aggregated points are new candidates with ``score=None`` and ``raw=""``; ``medoid``
  returns the original candidate.

  - ``mean``: the arithmetic mean of x and of y.
  - ``median``: the coordinate-wise median (mean of the two middle values for an even count).
  - ``geomedian``: the point minimising the sum of Euclidean distances (see
    :func:`geometric_median`); for collinear points, where the minimiser may be a whole segment,
    the median along the line (the midpoint of the middle segment for an even count).
  - ``medoid``: the candidate point with the smallest sum of distances to the others; ties (equal
    up to a relative 1e-12, so that the order of floating-point sums cannot decide) go to the
    earlier candidate.
  - ``cluster``: with r = ``cluster_radius`` times the image diagonal, each point's neighbourhood
    is every point within distance <= r (itself included); the point with most neighbours (ties go
    to the earlier point) gives the answer, the mean of its neighbourhood.

Example:
    >>> from gge.types import Candidate
    >>> cands = [Candidate((10.0, 10.0), 0.2), Candidate((12.0, 10.0), 0.9), Candidate(None, 0.5)]
    >>> select("critic", cands, (100, 100)).point
    (12.0, 10.0)
    >>> select("mean", cands, (100, 100)).point
    (11.0, 10.0)
    >>> select("mean", [Candidate(None), Candidate(None), Candidate((1.0, 2.0))], (100, 100))
    Candidate(point=None, score=None, raw='', parsed=True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from gge.errors import GgeError, unknown_name
from gge.types import STRATEGIES, Candidate

Point = tuple[float, float]

REFINED = "refined"
"""The pick of a refine stage (``model.refine=zoom``): a strategy only runs with that stage have, not
one of :data:`STRATEGIES` (it is not computed from the candidates)."""

DEFAULT_CLUSTER_RADIUS: float = 0.025
"""Default ``cluster`` radius, as a fraction of the image diagonal."""

_GEOMEDIAN_TOL = 1e-12
"""Geometric median: final smoothing and step tolerance, relative to the spread of the points."""
_GEOMEDIAN_MAX_ITER = 200
"""Cap on the Newton iterations of each smoothing stage (they usually take a handful)."""
_COLLINEAR_TOL = 1e-10
"""Points whose distance to the line is at most this times the spread count as collinear."""
_TIE_TOL = 1e-12
"""Relative tolerance under which two sums of distances count as equal (medoid ties)."""


def check_strategy(name: str) -> str:
    """Validate a selection strategy name.

    Args:
        name: A strategy name.

    Returns:
        ``name`` unchanged, when it is one of :data:`STRATEGIES`.

    Raises:
        GgeError: The name is unknown; the message suggests the closest known name.

    Example:
        >>> check_strategy("medoid")
        'medoid'
        >>> check_strategy("medion")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: unknown selection strategy 'medion' (did you mean 'median'?); known: ...
    """
    if name not in (*STRATEGIES, REFINED):
        raise unknown_name("selection strategy", name, (*STRATEGIES, REFINED))
    return name


# --- pure point functions -------------------------------------------------------------------------


def _require_points(points: Sequence[Point], what: str) -> None:
    if not points:
        raise ValueError(f"{what} of no points")


def _dist(a: Point, b: Point) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _sum_dist(p: Point, points: Sequence[Point]) -> float:
    return math.fsum(_dist(p, q) for q in points)


def mean_point(points: Sequence[Point]) -> Point:
    """The arithmetic mean of the points, coordinate by coordinate.

    Args:
        points: One or more (x, y) points.

    Returns:
        (mean x, mean y) as Python floats.

    Raises:
        ValueError: ``points`` is empty.

    Example:
        >>> mean_point([(0, 0), (4, 2)])
        (2.0, 1.0)
    """
    _require_points(points, "mean")
    n = len(points)
    return (math.fsum(p[0] for p in points) / n, math.fsum(p[1] for p in points) / n)


def _median(values: Sequence[float]) -> float:
    s = sorted(values)
    n = len(s)
    mid = n // 2
    if n % 2:
        return float(s[mid])
    return (s[mid - 1] + s[mid]) / 2.0


def coordinate_median(points: Sequence[Point]) -> Point:
    """The coordinate-wise median: median of x and median of y, taken separately.

    For an even count each coordinate is the mean of its two middle values.

    Args:
        points: One or more (x, y) points.

    Returns:
        (median x, median y) as Python floats.

    Raises:
        ValueError: ``points`` is empty.

    Example:
        >>> coordinate_median([(0, 9), (1, 0), (5, 1)])
        (1.0, 1.0)
        >>> coordinate_median([(0, 0), (4, 2)])
        (2.0, 1.0)
    """
    _require_points(points, "median")
    return (_median([p[0] for p in points]), _median([p[1] for p in points]))


def _collinear_median(points: Sequence[Point], anchor: Point, far: Point) -> Point:
    """The median along the line through ``anchor`` and ``far`` of points lying on that line."""
    ux, uy = far[0] - anchor[0], far[1] - anchor[1]
    order = sorted(
        range(len(points)),
        key=lambda i: ((points[i][0] - anchor[0]) * ux + (points[i][1] - anchor[1]) * uy, i),
    )
    n = len(points)
    mid = n // 2
    if n % 2:
        p = points[order[mid]]
        return (float(p[0]), float(p[1]))
    a, b = points[order[mid - 1]], points[order[mid]]
    return ((a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0)


def _smoothed_objective(y: Point, points: Sequence[Point], weights: Sequence[int], eps: float) -> float:
    return math.fsum(
        w * math.hypot(y[0] - p[0], y[1] - p[1], eps) for p, w in zip(points, weights, strict=True)
    )


def _descend(points: Sequence[Point], weights: Sequence[int]) -> tuple[Point, int]:
    """Minimise the weighted sum of distances, starting at the origin.

    The points are centred on their mean and scaled so that their spread is 1. The distances are
    smoothed to sqrt(d**2 + eps**2), which makes the objective smooth and strictly convex, and
    minimised by Newton's method with a backtracking (Armijo) line search; eps starts at 1 and
    shrinks tenfold per stage down to ``_GEOMEDIAN_TOL``, each stage starting from the previous
    minimiser. The smoothed objective exceeds the true one by at most eps times the total weight,
    so the last stage's minimiser is within that of the optimum. A stage ends when the Newton step
    is shorter than ``_GEOMEDIAN_TOL``, when the line search finds no decrease, or after
    ``_GEOMEDIAN_MAX_ITER`` iterations. Returns (point, Newton iterations in all).
    """
    y: Point = (0.0, 0.0)
    tol = _GEOMEDIAN_TOL
    eps = 1.0
    iterations = 0
    while True:
        fy = _smoothed_objective(y, points, weights, eps)
        for _ in range(_GEOMEDIAN_MAX_ITER):
            iterations += 1
            gx = gy = hxx = hxy = hyy = 0.0
            for p, w in zip(points, weights, strict=True):
                dx, dy = y[0] - p[0], y[1] - p[1]
                s = math.hypot(dx, dy, eps)
                k = w / s
                ux, uy = dx / s, dy / s
                gx += k * dx
                gy += k * dy
                hxx += k * (1.0 - ux * ux)
                hyy += k * (1.0 - uy * uy)
                hxy -= k * ux * uy
            det = hxx * hyy - hxy * hxy
            if not det > 0.0:
                break
            sx = -(hyy * gx - hxy * gy) / det
            sy = -(hxx * gy - hxy * gx) / det
            slope = gx * sx + gy * sy
            length = math.hypot(sx, sy)
            t = 1.0
            accepted = False
            while t * length > 0.01 * tol:
                z = (y[0] + t * sx, y[1] + t * sy)
                fz = _smoothed_objective(z, points, weights, eps)
                if fz <= fy + 1e-4 * t * slope and fz <= fy:
                    y, fy, accepted = z, fz, True
                    break
                t *= 0.5
            if not accepted or t * length <= tol:
                break
        if eps <= tol:
            return y, iterations
        eps = max(eps * 0.1, tol)


def _geometric_median_with_iterations(points: Sequence[Point]) -> tuple[Point, int]:
    _require_points(points, "geometric median")
    # Distinct points with their multiplicities, in order of first appearance.
    index: dict[Point, int] = {}
    distinct: list[Point] = []
    weights: list[int] = []
    for p in points:
        key = (float(p[0]), float(p[1]))
        if key in index:
            weights[index[key]] += 1
        else:
            index[key] = len(distinct)
            distinct.append(key)
            weights.append(1)
    anchor = distinct[0]
    if len(distinct) == 1:
        return anchor, 0
    far = max(distinct, key=lambda p: _dist(anchor, p))
    spread = _dist(anchor, far)
    ux, uy = (far[0] - anchor[0]) / spread, (far[1] - anchor[1]) / spread
    if all(
        abs(ux * (p[1] - anchor[1]) - uy * (p[0] - anchor[0])) <= _COLLINEAR_TOL * spread for p in distinct
    ):
        # The objective restricted to the line is sum |t - t_i|: the 1-D median (a deterministic
        # point of the optimal segment when the count is even).
        return _collinear_median(points, anchor, far), 0

    # Not collinear: the objective is strictly convex, the minimiser unique. A data point p_k of
    # weight w_k is the minimiser iff the unit pulls of the other points sum to a norm <= w_k.
    objective = [_sum_dist(p, points) for p in distinct]
    best_k = min(range(len(distinct)), key=lambda k: (objective[k], k))
    pk = distinct[best_k]
    rx = ry = 0.0
    for p, w in zip(distinct, weights, strict=True):
        d = _dist(p, pk)
        if d > 0.0:
            rx += w * (p[0] - pk[0]) / d
            ry += w * (p[1] - pk[1]) / d
    if math.hypot(rx, ry) <= weights[best_k]:
        return pk, 0

    # Work relative to the mean, in units of the spread, so that the tolerances hold whatever the
    # coordinates' magnitude and scale.
    cx, cy = mean_point(points)
    scaled = [((p[0] - cx) / spread, (p[1] - cy) / spread) for p in distinct]
    (yx, yy), iterations = _descend(scaled, weights)
    y = (cx + yx * spread, cy + yy * spread)
    # Every accepted step descends; keep the best data point should rounding ever disagree.
    if _sum_dist(y, points) > objective[best_k]:
        return pk, iterations
    return y, iterations


def geometric_median(points: Sequence[Point]) -> Point:
    """The geometric median: the point minimising the sum of Euclidean distances to ``points``.

    Algorithm: duplicates are merged into weights. One distinct point is its own median. Collinear
    points (within 1e-10 of the spread) have as minimisers the median along their line, a segment
    for an even count: the middle point, or the midpoint of the two middle points, is returned
    (so two points give their midpoint). Otherwise the minimiser is unique: the data point of least
    objective is returned when it satisfies the optimality condition (the unit vectors towards the
    other points, weighted, sum to a norm no larger than its weight). Else the minimiser is not a
    data point and the objective is smooth there: starting from the mean, Newton's method with a
    backtracking line search minimises the smoothed objective sum sqrt(d**2 + eps**2), with eps
    shrinking tenfold per stage from the spread of the points down to 1e-12 times it (each stage
    ends when a Newton step is below 1e-12 times the spread; at most 200 iterations a stage). The
    result is within about 1e-12 times the spread (times the count) of the optimal objective. Plain
    Weiszfeld iterations are not used: they stall when the minimiser lies close to a data point.
    The result is never worse than the best data point.

    Args:
        points: One or more (x, y) points (duplicates allowed).

    Returns:
        The geometric median as Python floats.

    Raises:
        ValueError: ``points`` is empty.

    Example:
        >>> geometric_median([(0, 0), (10, 0)])
        (5.0, 0.0)
        >>> geometric_median([(0, 0), (10, 0), (0, 10), (1, 1)])
        (1.0, 1.0)
        >>> x, y = geometric_median([(0, 0), (2, 0), (1, math.sqrt(3))])
        >>> round(x, 9), round(y, 9)
        (1.0, 0.577350269)
    """
    return _geometric_median_with_iterations(points)[0]


def _distance_sums(points: Sequence[Point]) -> list[float]:
    return [_sum_dist(p, points) for p in points]


def medoid_index(points: Sequence[Point]) -> int:
    """Index of the medoid: the point with the smallest sum of distances to the others.

    Sums equal up to a relative 1e-12 count as ties, which go to the earlier point.

    Args:
        points: One or more (x, y) points.

    Returns:
        The index into ``points`` of the medoid.

    Raises:
        ValueError: ``points`` is empty.

    Example:
        >>> medoid_index([(0, 0), (5, 0), (6, 0), (100, 0)])
        1
        >>> medoid_index([(0, 0), (1, 0)])
        0
    """
    _require_points(points, "medoid")
    sums = _distance_sums(points)
    least = min(sums)
    limit = least + _TIE_TOL * max(least, 1.0)
    return next(i for i, s in enumerate(sums) if s <= limit)


def neighbour_counts(points: Sequence[Point], radius: float) -> list[int]:
    """For each point, how many points (itself included) lie within distance <= ``radius``.

    Args:
        points: (x, y) points.
        radius: Neighbourhood radius in the points' units (pixels).

    Returns:
        One count per point, in order.

    Example:
        >>> neighbour_counts([(0, 0), (3, 4), (20, 0)], 5.0)
        [2, 2, 1]
    """
    return [sum(1 for q in points if _dist(p, q) <= radius) for p in points]


def densest_cluster(points: Sequence[Point], radius: float) -> Point:
    """Centre of the densest cluster: the mean of the largest neighbourhood.

    Each point's neighbourhood is every point within distance <= ``radius`` (itself included); the
    point with the most neighbours wins (ties go to the earlier point) and the mean of its
    neighbourhood is returned.

    Args:
        points: One or more (x, y) points.
        radius: Neighbourhood radius in pixels (>= 0).

    Returns:
        The mean of the winning neighbourhood, as Python floats.

    Raises:
        ValueError: ``points`` is empty or ``radius`` is negative or not finite.

    Example:
        >>> densest_cluster([(100, 100), (0, 0), (2, 0), (1, 3)], 3.5)
        (1.0, 1.0)
    """
    _require_points(points, "densest cluster")
    if not (math.isfinite(radius) and radius >= 0.0):
        raise ValueError(f"cluster radius must be finite and >= 0, got {radius}")
    counts = neighbour_counts(points, radius)
    best = max(range(len(points)), key=lambda i: (counts[i], -i))
    centre = points[best]
    return mean_point([q for q in points if _dist(centre, q) <= radius])


# --- strategies -----------------------------------------------------------------------------------


def _rank_score(c: Candidate) -> float | None:
    """The score the critic strategy ranks by: ``None`` (unscored) for a missing or NaN score."""
    return None if c.score is None or math.isnan(c.score) else c.score


def _critic(candidates: Sequence[Candidate]) -> Candidate:
    best, best_score = candidates[0], _rank_score(candidates[0])
    for c in candidates[1:]:
        score = _rank_score(c)
        if score is not None and (best_score is None or score > best_score):
            best, best_score = c, score
    return best


def _aggregated(point: Point) -> Candidate:
    return Candidate((float(point[0]), float(point[1])), score=None, raw="")


def _spatial(
    strategy: str, candidates: Sequence[Candidate], image_size: tuple[int, int], cluster_radius: float
) -> Candidate | None:
    voting = [c for c in candidates if c.point is not None]
    abstentions = sum(c.abstains for c in candidates)
    if not voting and not abstentions:
        return None  # nothing parseable: no answer
    if abstentions > len(voting):
        return Candidate(None, score=None, raw="")
    points: list[Point] = [c.point for c in voting if c.point is not None]
    aggregate: Callable[[Sequence[Point]], Point]
    if strategy == "medoid":
        return voting[medoid_index(points)]
    if strategy == "mean":
        aggregate = mean_point
    elif strategy == "median":
        aggregate = coordinate_median
    elif strategy == "geomedian":
        aggregate = geometric_median
    else:
        radius = cluster_radius * math.hypot(image_size[0], image_size[1])
        return _aggregated(densest_cluster(points, radius))
    return _aggregated(aggregate(points))


def select(
    strategy: str,
    candidates: Sequence[Candidate],
    image_size: tuple[int, int],
    *,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
) -> Candidate | None:
    """The Top-1 answer of one sample under one selection strategy (rules in the module docstring).

    Args:
        strategy: One of :data:`STRATEGIES`.
        candidates: The sample's candidates in proposer order.
        image_size: (width, height) of the screenshot in pixels (sets the ``cluster`` radius).
        cluster_radius: ``cluster`` radius as a fraction of the image diagonal (>= 0).

    Returns:
        The chosen candidate (original object for ``critic``, ``first`` and ``medoid``; a new one
        with ``score=None`` for aggregated points; an abstention when a strict majority of the
        candidates abstains under a spatial strategy), or ``None`` when there are no candidates.

    Raises:
        GgeError: Unknown strategy, or a negative or non-finite ``cluster_radius``.

    Example:
        >>> from gge.types import Candidate
        >>> cands = [Candidate((0.0, 0.0)), Candidate((4.0, 0.0)), Candidate((5.0, 0.0))]
        >>> select("median", cands, (1920, 1080)).point
        (4.0, 0.0)
        >>> select("first", [], (1920, 1080)) is None
        True
    """
    check_strategy(strategy)
    if not (math.isfinite(cluster_radius) and cluster_radius >= 0.0):
        raise GgeError(f"cluster radius must be a finite fraction >= 0, got {cluster_radius}")
    if not candidates:
        return None
    if strategy == "critic":
        return _critic(candidates)
    if strategy == "first":
        return candidates[0]
    return _spatial(strategy, candidates, image_size, cluster_radius)


def select_all(
    candidates: Sequence[Candidate],
    image_size: tuple[int, int],
    *,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
) -> dict[str, Candidate | None]:
    """The Top-1 answer of one sample under every strategy, from the same candidates.

    Args:
        candidates: The sample's candidates in proposer order.
        image_size: (width, height) of the screenshot in pixels.
        cluster_radius: ``cluster`` radius as a fraction of the image diagonal (>= 0).

    Returns:
        One entry per name of :data:`STRATEGIES`, in that order.

    Raises:
        GgeError: A negative or non-finite ``cluster_radius``.

    Example:
        >>> from gge.types import Candidate
        >>> top = select_all([Candidate((0.0, 0.0), 0.1), Candidate((2.0, 2.0), 0.7)], (100, 100))
        >>> list(top) == list(STRATEGIES)
        True
        >>> top["critic"].point, top["mean"].point, top["geomedian"].point
        ((2.0, 2.0), (1.0, 1.0), (1.0, 1.0))
    """
    return {name: select(name, candidates, image_size, cluster_radius=cluster_radius) for name in STRATEGIES}
