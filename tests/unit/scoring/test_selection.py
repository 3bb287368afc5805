"""Tests of the Top-1 selection strategies (gge/scoring/selection.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from gge.errors import GgeError
from gge.scoring.selection import (
    DEFAULT_CLUSTER_RADIUS,
    check_strategy,
    coordinate_median,
    densest_cluster,
    geometric_median,
    mean_point,
    medoid_index,
    neighbour_counts,
    select,
    select_all,
)
from gge.types import STRATEGIES, Candidate

SPATIAL = ("mean", "median", "geomedian", "medoid", "cluster")
# Bounded property tests; no example database, so running them leaves no files behind.
PROPERTY = settings(max_examples=200, deadline=None, database=None)
SIZE = (1920, 1080)
Point = tuple[float, float]


def pts(*xy: tuple[float, float]) -> list[Candidate]:
    return [Candidate((float(x), float(y))) for x, y in xy]


def objective(p: Point | np.ndarray, points: np.ndarray) -> float:
    return float(np.sqrt(((points - np.asarray(p, dtype=float)) ** 2).sum(axis=1)).sum())


def fast_objective(p: np.ndarray, points: list[Point]) -> float:
    """The same sum of distances in plain Python (faster than numpy for a dozen points)."""
    x, y = float(p[0]), float(p[1])
    return sum(math.sqrt((x - px) ** 2 + (y - py) ** 2) for px, py in points)


# --- names -------------------------------------------------------------------------------------------


def test_strategy_names() -> None:
    assert STRATEGIES == ("critic", "first", "mean", "median", "geomedian", "medoid", "cluster")
    assert DEFAULT_CLUSTER_RADIUS == 0.025
    for name in STRATEGIES:
        assert check_strategy(name) == name


def test_unknown_strategy_suggests() -> None:
    with pytest.raises(GgeError, match="did you mean 'geomedian'") as info:
        check_strategy("geomedain")
    assert "unknown selection strategy 'geomedain'" in str(info.value)
    assert "known: cluster, critic, first, geomedian, mean, median, medoid" in str(info.value)
    with pytest.raises(GgeError, match="did you mean 'first'"):
        select("firts", pts((1, 1)), SIZE)


def test_bad_cluster_radius() -> None:
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(GgeError, match="cluster radius"):
            select("cluster", pts((1, 1)), SIZE, cluster_radius=bad)
    with pytest.raises(ValueError):
        densest_cluster([(0.0, 0.0)], -1.0)


# --- empty and generic -------------------------------------------------------------------------------


def test_no_candidates_gives_none_everywhere() -> None:
    for name in STRATEGIES:
        assert select(name, [], SIZE) is None
    top = select_all([], SIZE)
    assert list(top) == list(STRATEGIES)
    assert all(v is None for v in top.values())


def test_point_functions_reject_empty() -> None:
    for fn in (mean_point, coordinate_median, geometric_median, medoid_index):
        with pytest.raises(ValueError):
            fn([])
    with pytest.raises(ValueError):
        densest_cluster([], 1.0)


def test_select_all_order_and_content() -> None:
    cands = [Candidate((0.0, 0.0), 0.3), Candidate(None, 0.9), Candidate((4.0, 2.0), None)]
    top = select_all(cands, SIZE)
    assert tuple(top) == STRATEGIES
    assert top["critic"] is cands[1]
    assert top["first"] is cands[0]
    assert top["mean"] == Candidate((2.0, 1.0), None, "")
    assert top["medoid"] is cands[0]


# --- critic and first --------------------------------------------------------------------------------


def test_critic_highest_score_original_object() -> None:
    cands = [Candidate((1.0, 1.0), 0.1, "a"), Candidate((2.0, 2.0), 0.8, "b"), Candidate((3.0, 3.0), 0.5)]
    assert select("critic", cands, SIZE) is cands[1]


def test_critic_ties_go_earlier() -> None:
    cands = [Candidate((1.0, 1.0), 0.2), Candidate((2.0, 2.0), 0.7), Candidate((3.0, 3.0), 0.7)]
    assert select("critic", cands, SIZE) is cands[1]
    same = [Candidate((5.0, 5.0), 0.0), Candidate((5.0, 5.0), 0.0)]
    assert select("critic", same, SIZE) is same[0]


def test_critic_none_scores_rank_last() -> None:
    cands = [
        Candidate((1.0, 1.0)),
        Candidate((2.0, 2.0), -3.0),
        Candidate((3.0, 3.0)),
        Candidate((4.0, 4.0), -5.0),
    ]
    assert select("critic", cands, SIZE) is cands[1]


def test_critic_no_scores_gives_first() -> None:
    cands = [Candidate(None), Candidate((2.0, 2.0)), Candidate((3.0, 3.0))]
    assert select("critic", cands, SIZE) is cands[0]


def test_critic_nan_score_ranks_as_unscored() -> None:
    cands = [Candidate((1.0, 1.0), math.nan), Candidate((2.0, 2.0), -1.0), Candidate((3.0, 3.0), math.nan)]
    assert select("critic", cands, SIZE) is cands[1]


def test_critic_may_choose_abstention() -> None:
    cands = [Candidate((1.0, 1.0), 0.2), Candidate(None, 0.9)]
    assert select("critic", cands, SIZE) is cands[1]


def test_first_is_first_even_abstaining() -> None:
    cands = [Candidate(None, 0.1), Candidate((2.0, 2.0), 0.9)]
    assert select("first", cands, SIZE) is cands[0]
    cands2 = [Candidate((7.0, 8.0)), Candidate(None)]
    assert select("first", cands2, SIZE) is cands2[0]


# --- abstention rule ---------------------------------------------------------------------------------


def test_strict_majority_abstaining_abstains() -> None:
    cands = [Candidate(None), Candidate((10.0, 10.0), 0.9), Candidate(None)]
    for name in SPATIAL:
        got = select(name, cands, SIZE)
        assert got == Candidate(None, None, "")
        assert got is not None and got.abstains


def test_all_abstaining_abstains() -> None:
    cands = [Candidate(None, 0.5), Candidate(None)]
    for name in SPATIAL:
        assert select(name, cands, SIZE) == Candidate(None)
    assert select("critic", cands, SIZE) is cands[0]


def test_abstention_minority_or_tie_is_ignored() -> None:
    minority = [Candidate((0.0, 0.0)), Candidate(None), Candidate((4.0, 2.0))]
    tie = [Candidate(None), Candidate((0.0, 0.0)), Candidate(None), Candidate((4.0, 2.0))]
    for cands in (minority, tie):
        for name in ("mean", "median", "geomedian"):
            assert select(name, cands, SIZE) == Candidate((2.0, 1.0))
        assert select("medoid", cands, SIZE) is cands[0 if cands is minority else 1]
        assert select("cluster", cands, SIZE) == Candidate((2.0, 1.0))
    one = [Candidate(None), Candidate((3.0, 4.0), 0.2)]
    for name in SPATIAL:
        got = select(name, one, SIZE)
        assert got is not None and got.point == (3.0, 4.0)


# --- mean and median ---------------------------------------------------------------------------------


def test_mean_point_and_candidate_fields() -> None:
    cands = [Candidate((0, 0), 0.5, "x"), Candidate((1, 3), 0.9, "y"), Candidate((5, 0), 0.1, "z")]
    got = select("mean", cands, SIZE)
    assert got == Candidate((2.0, 1.0), score=None, raw="")
    assert got is not None and got.point is not None
    assert all(type(v) is float for v in got.point)


def test_coordinate_median_odd_and_even() -> None:
    assert coordinate_median([(0.0, 9.0), (1.0, 0.0), (5.0, 1.0)]) == (1.0, 1.0)
    assert coordinate_median([(0.0, 9.0), (1.0, 0.0), (5.0, 1.0), (7.0, 2.0)]) == (3.0, 1.5)
    assert coordinate_median([(2.0, 3.0)]) == (2.0, 3.0)
    got = select("median", pts((10, 0), (0, 10), (2, 2), (100, 100)), SIZE)
    assert got == Candidate((6.0, 6.0))


# --- geometric median --------------------------------------------------------------------------------


def test_geomedian_one_point_and_duplicates() -> None:
    assert geometric_median([(3.0, 4.0)]) == (3.0, 4.0)
    assert geometric_median([(3.0, 4.0)] * 5) == (3.0, 4.0)
    assert geometric_median([(3, 4)]) == (3.0, 4.0)


def test_geomedian_two_points_midpoint() -> None:
    assert geometric_median([(0.0, 0.0), (10.0, 4.0)]) == (5.0, 2.0)
    assert geometric_median([(0.0, 0.0), (0.0, 0.0), (10.0, 4.0), (10.0, 4.0)]) == (5.0, 2.0)


def test_geomedian_collinear() -> None:
    # Odd count: the middle point; even: the midpoint of the two middle points (optimal segment).
    assert geometric_median([(0.0, 0.0), (9.0, 9.0), (1.0, 1.0)]) == (1.0, 1.0)
    assert geometric_median([(0.0, 0.0), (9.0, 9.0), (1.0, 1.0), (3.0, 3.0)]) == (2.0, 2.0)
    assert geometric_median([(5.0, 0.0), (5.0, 7.0), (5.0, 1.0), (5.0, 1.0)]) == (5.0, 1.0)


def test_geomedian_majority_duplicate_is_optimal() -> None:
    points = [(100.0, 100.0)] * 3 + [(0.0, 0.0), (200.0, 0.0), (50.0, 300.0)]
    assert geometric_median(points) == (100.0, 100.0)


def test_geomedian_obtuse_triangle_vertex() -> None:
    # An angle of 120 degrees or more: the Fermat point is that vertex.
    assert geometric_median([(0.0, 0.0), (10.0, 0.0), (5.0, 1.0)]) == (5.0, 1.0)


def test_geomedian_equilateral_and_square() -> None:
    x, y = geometric_median([(0.0, 0.0), (2.0, 0.0), (1.0, math.sqrt(3.0))])
    assert x == pytest.approx(1.0, abs=1e-9) and y == pytest.approx(1.0 / math.sqrt(3.0), abs=1e-9)
    x, y = geometric_median([(0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0)])
    assert x == pytest.approx(2.0, abs=1e-9) and y == pytest.approx(2.0, abs=1e-9)


def test_geomedian_near_data_point_optimum() -> None:
    # Optimum a hair away from a data point (where plain Weiszfeld stalls).
    points = [(1059.0, 934.0), (1863.0, 317.0), (1602.0, 530.0), (1602.0, 530.0), (1862.999067, 317.0)]
    points.append((1863.0, 317.0))
    ours = geometric_median(points)
    arr = np.array(points)
    ref = min(
        minimize(
            objective, s, args=(arr,), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12}
        ).fun
        for s in (arr.mean(axis=0), arr[1], arr[4])
    )
    assert objective(ours, arr) <= ref + 1e-9


def test_geomedian_candidate() -> None:
    got = select("geomedian", pts((0, 0), (10, 0), (0, 10), (1, 1)), SIZE)
    assert got == Candidate((1.0, 1.0), None, "")


# --- medoid ------------------------------------------------------------------------------------------


def test_medoid_index_and_ties() -> None:
    assert medoid_index([(0.0, 0.0), (5.0, 0.0), (6.0, 0.0), (100.0, 0.0)]) == 1
    assert medoid_index([(0.0, 0.0), (1.0, 0.0)]) == 0
    assert medoid_index([(0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0)]) == 0
    assert medoid_index([(9.0, 9.0), (0.1, 0.0), (0.0, 0.1), (-0.1, 0.0), (0.0, -0.1)]) == 1


def test_medoid_returns_original_candidate() -> None:
    cands = [Candidate(None), Candidate((0.0, 0.0), 0.1, "a"), Candidate((5.0, 0.0), 0.2, "b")]
    cands.append(Candidate((6.0, 0.0), 0.3, "c"))
    assert select("medoid", cands, SIZE) is cands[2]


# --- cluster -----------------------------------------------------------------------------------------


def test_cluster_radius_scales_with_image_diagonal() -> None:
    # Diagonal of 30x40 is 50; radius 0.1 -> 5 px, inclusive: (0,0) and (3,4) are neighbours.
    cands = pts((0, 0), (3, 4), (100, 100))
    assert select("cluster", cands, (30, 40), cluster_radius=0.1) == Candidate((1.5, 2.0))
    # A smaller radius leaves everyone alone: the first point wins the tie.
    assert select("cluster", cands, (30, 40), cluster_radius=0.09) == Candidate((0.0, 0.0))


def test_cluster_densest_wins_and_ties_go_earlier() -> None:
    points = [(500.0, 500.0), (0.0, 0.0), (2.0, 0.0), (1.0, 3.0), (503.0, 500.0)]
    assert neighbour_counts(points, 3.5) == [2, 3, 3, 3, 2]
    # Points 1, 2, 3 tie with 3 neighbours; point 1's neighbourhood is {1, 2, 3}.
    assert densest_cluster(points, 3.5) == (1.0, 1.0)
    assert densest_cluster([(0.0, 0.0), (10.0, 0.0)], 0.0) == (0.0, 0.0)
    assert densest_cluster([(0.0, 0.0), (10.0, 0.0), (10.0, 0.0)], 0.0) == (10.0, 0.0)


def test_cluster_neighbourhood_not_transitive() -> None:
    # The winner's neighbourhood only: (0,0) and (8,0) are not within 5 of each other.
    points = [(0.0, 0.0), (4.0, 0.0), (8.0, 0.0)]
    assert densest_cluster(points, 5.0) == (4.0, 0.0)


def test_cluster_default_radius() -> None:
    r = DEFAULT_CLUSTER_RADIUS * math.hypot(*SIZE)  # about 55 px
    cands = pts((100, 100), (100 + r * 0.9, 100), (900, 900), (930, 900), (960, 900))
    got = select("cluster", cands, SIZE)
    assert got == Candidate((930.0, 900.0))


# --- checked against independent references on random candidate sets ------------------------------

coord_x = st.one_of(st.floats(0.0, 3840.0, allow_nan=False), st.integers(0, 3840).map(float))
coord_y = st.one_of(st.floats(0.0, 2160.0, allow_nan=False), st.integers(0, 2160).map(float))


@st.composite
def point_sets(draw: st.DrawFn, max_size: int = 12) -> list[Point]:
    """1..max_size points in a screen range: spread out, tight clusters, or with duplicates."""
    kind = draw(st.sampled_from(["spread", "tight", "duplicates"]))
    if kind == "tight":
        cx, cy = draw(coord_x), draw(coord_y)
        offset = st.floats(-20.0, 20.0, allow_nan=False)
        n = draw(st.integers(1, max_size))
        return [(cx + draw(offset), cy + draw(offset)) for _ in range(n)]
    pool = draw(st.lists(st.tuples(coord_x, coord_y), min_size=1, max_size=max_size))
    if kind == "duplicates":
        return draw(st.lists(st.sampled_from(pool), min_size=1, max_size=max_size))
    return pool


def spread_of(arr: np.ndarray) -> float:
    return float(np.ptp(arr, axis=0).max())


@PROPERTY
@given(point_sets())
def test_geomedian_matches_numerical_optimum(points: list[Point]) -> None:
    arr = np.array(points, dtype=float)
    ours = geometric_median(points)
    assert all(math.isfinite(v) for v in ours)
    scale = spread_of(arr)
    tol = 1e-6 * scale + 1e-9
    # It lies in the convex hull, hence in the bounding box.
    assert arr[:, 0].min() - tol <= ours[0] <= arr[:, 0].max() + tol
    assert arr[:, 1].min() - tol <= ours[1] <= arr[:, 1].max() + tol
    at_points = [objective(p, arr) for p in arr]
    ref = min(at_points)
    starts = [arr.mean(axis=0), np.median(arr, axis=0), arr[int(np.argmin(at_points))]]
    for start in starts:
        res = minimize(
            fast_objective,
            start,
            args=(points,),
            method="Nelder-Mead",
            options={"xatol": 1e-9, "fatol": 1e-11},
        )
        ref = min(ref, float(res.fun))
    assert objective(ours, arr) <= ref + tol


@PROPERTY
@given(point_sets(max_size=4))
def test_geomedian_beats_brute_force_grid(points: list[Point]) -> None:
    arr = np.array(points, dtype=float)
    lo, hi = arr.min(axis=0), arr.max(axis=0)
    xs = np.linspace(lo[0], hi[0], 121)
    ys = np.linspace(lo[1], hi[1], 121)
    gx, gy = np.meshgrid(xs, ys)
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    dist = np.sqrt(((grid[:, None, :] - arr[None, :, :]) ** 2).sum(axis=2)).sum(axis=1)
    ours = objective(geometric_median(points), arr)
    assert ours <= float(dist.min()) + 1e-6 * spread_of(arr) + 1e-9


@PROPERTY
@given(point_sets())
def test_medoid_matches_bruteforce(points: list[Point]) -> None:
    arr = np.array(points, dtype=float)
    # np.hypot, not sqrt of summed squares: squares of tiny differences underflow to 0.
    dmat = np.hypot(arr[:, None, 0] - arr[None, :, 0], arr[:, None, 1] - arr[None, :, 1])
    sums = dmat.sum(axis=1)
    least = float(sums.min())
    # argmin with the first index, sums equal to 1e-12 relative counting as ties.
    expected = int(np.flatnonzero(sums <= least + 1e-12 * max(least, 1.0))[0])
    assert medoid_index(points) == expected


@PROPERTY
@given(
    point_sets(),
    st.tuples(st.integers(1, 4000), st.integers(1, 4000)),
    st.floats(0.0, 0.3, allow_nan=False),
)
def test_cluster_matches_reference(points: list[Point], size: tuple[int, int], fraction: float) -> None:
    arr = np.array(points, dtype=float)
    radius = fraction * math.hypot(*size)
    # np.hypot, not sqrt of summed squares: squares of tiny differences underflow to 0.
    dmat = np.hypot(arr[:, None, 0] - arr[None, :, 0], arr[:, None, 1] - arr[None, :, 1])
    # Skip sets with a distance on the boundary up to rounding (the two computations may differ).
    near = np.abs(dmat - radius) <= 1e-9 * max(radius, 1.0)
    assume(not np.any(near & (dmat != radius)))
    inside = dmat <= radius
    winner = int(np.argmax(inside.sum(axis=1)))
    expected = arr[inside[winner]].mean(axis=0)
    got = select("cluster", [Candidate(p) for p in points], size, cluster_radius=fraction)
    assert got is not None and got.point is not None and got.score is None
    assert got.point == pytest.approx(tuple(expected), rel=1e-12, abs=1e-9)
    assert densest_cluster(points, radius) == got.point


@PROPERTY
@given(point_sets())
def test_mean_and_median_match_numpy(points: list[Point]) -> None:
    arr = np.array(points, dtype=float)
    assert mean_point(points) == pytest.approx(tuple(np.mean(arr, axis=0)), rel=1e-12, abs=1e-9)
    assert coordinate_median(points) == pytest.approx(tuple(np.median(arr, axis=0)), rel=1e-12, abs=1e-9)


candidate_st = st.builds(
    Candidate,
    st.one_of(st.none(), st.tuples(coord_x, coord_y)),
    st.one_of(st.none(), st.floats(-5.0, 5.0, allow_nan=False), st.sampled_from([0.0, 1.0])),
)


@PROPERTY
@given(
    st.lists(candidate_st, max_size=12),
    st.tuples(st.integers(1, 4000), st.integers(1, 4000)),
    st.floats(0.0, 0.2, allow_nan=False),
)
def test_select_all_agrees_with_select(
    cands: list[Candidate], size: tuple[int, int], fraction: float
) -> None:
    top = select_all(cands, size, cluster_radius=fraction)
    assert tuple(top) == STRATEGIES
    for name in STRATEGIES:
        one = select(name, cands, size, cluster_radius=fraction)
        assert top[name] == one
        if name in ("critic", "first") or (name == "medoid" and one is not None and not one.abstains):
            assert top[name] is one
    if not cands:
        return
    abstaining = sum(c.abstains for c in cands)
    for name in SPATIAL:
        got = top[name]
        assert got is not None
        assert got.abstains == (abstaining > len(cands) - abstaining)
    scored = [c.score for c in cands if c.score is not None]
    critic = top["critic"]
    assert critic is not None
    if scored:
        assert critic.score == max(scored)
        assert critic is next(c for c in cands if c.score == max(scored))
    else:
        assert critic is cands[0]
