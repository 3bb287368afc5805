"""Frozen candidate pools (gge.scoring.pools) and the critic's figures on them (gge.scoring.pool_figures).

Each rule against a direct computation: every gold hits and every distractor misses by the
benchmark's own test (GroundUI's strict edges, a polygon's even-odd rule, a normalised box), a near
miss lies its distance in target diagonals beyond the box's edge (stepping back along its ray lands on
the edge), ``other_element`` distractors come from the targets of the other samples on the same
screenshot (counted here by hand), a pool does not change when other samples come and go, and a pool
file's line is refused, naming file and line, for a gold that misses, a distractor that hits, an
unknown id, a size the record contradicts, a point off the screen. The figures are pinned by scripted
critics whose behaviour is known: one that always picks the first shown (accuracy 1/N under a full
rotation, consistency 0, first-position rate 100), an oracle (100), one that picks the candidate
nearest the screen's centre (consistent, no position preference, accuracy counted by hand), and one
that prefers a distractor kind.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest

from gge.benchmarks.images import UNKNOWN_SIZE
from gge.errors import GgeError
from gge.scoring.pool_figures import Ask, pool_figures
from gge.scoring.pools import (
    PoolEntry,
    PoolRecipe,
    check_entry,
    orders,
    pool_from_points,
    synthetic_pool,
)
from gge.types import Absent, Box, Polygon, Sample


def _sample(
    i: int, box: Box | Polygon | Absent, image: str = "a.png", size: tuple[int, int] = (400, 300)
) -> Sample:
    return Sample("b", str(i), image, size, f"click {i}", box)


def _inside(region: Box | Polygon, p: tuple[float, float]) -> bool:
    """The hit test written out here: inclusive box, strict box, normalised box, even-odd polygon."""
    x, y = p
    if isinstance(region, Polygon):
        inside = False
        v = region.vertices
        for (x1, y1), (x2, y2) in zip(v, v[1:] + v[:1], strict=True):
            if (y1 > y) != (y2 > y) and x < (x2 - x1) * (y - y1) / (y2 - y1) + x1:
                inside = not inside
        return inside
    if region.space == "normalized":
        assert region.size is not None
        x, y = x / region.size[0], y / region.size[1]
    if region.strict:
        return region.x1 < x < region.x2 and region.y1 < y < region.y2
    return region.x1 <= x <= region.x2 and region.y1 <= y <= region.y2


REGIONS: list[Box | Polygon] = [
    Box(100, 100, 160, 130),
    Box(10, 10, 12, 40, strict=True),  # GroundUI: the edges are not inside
    Box(0.5, 0.5, 0.6, 0.55, space="normalized", size=(400, 300)),
    Polygon(((200.0, 50.0), (260.0, 50.0), (230.0, 110.0))),
]


@pytest.mark.parametrize("region", REGIONS, ids=["box", "strict", "normalised", "polygon"])
def test_every_gold_hits_and_every_distractor_misses_by_the_benchmarks_rule(region: Box | Polygon) -> None:
    others = [_sample(9, Box(300, 200, 340, 240)), _sample(8, Box(20, 250, 60, 280))]
    entries, skipped = synthetic_pool([_sample(0, region), *others], n=6, seed=3)
    assert not skipped
    entry = entries[0]
    assert len(entry.points) == 6 and entry.kinds.count("gold") == 1 and entry.kinds[entry.gold[0]] == "gold"
    for i, p in enumerate(entry.points):
        assert _inside(region, p) == (i in entry.gold), (i, p, entry.kinds[i])
        assert 0 <= p[0] < 400 and 0 <= p[1] < 300
    cx, cy = ((region.x1 + region.x2) / 2, (region.y1 + region.y2) / 2) if isinstance(region, Box) else (0, 0)
    if isinstance(region, Box) and region.space == "pixel":  # not the centre: a seeded point inside
        assert entry.points[entry.gold[0]] != (cx, cy)


def test_a_near_miss_lies_its_distance_beyond_the_edge() -> None:
    box = Box(100, 100, 160, 130)
    diag = math.hypot(60, 30)
    for seed in range(20):
        (entry,), _ = synthetic_pool(
            [_sample(0, box)], n=3, kinds=("near_miss",), near=(0.25, 0.5), seed=seed
        )
        near = [p for p, k in zip(entry.points, entry.kinds, strict=True) if k == "near_miss"]
        assert len(near) == 2
        matched = []
        for p in near:  # shuffled among the distractors: each at one of the two distances
            ux, uy = p[0] - 130, p[1] - 115
            norm = math.hypot(ux, uy)
            for d in (0.25, 0.5):
                back = (p[0] - d * diag * ux / norm, p[1] - d * diag * uy / norm)
                on_x = math.isclose(back[0], 100, abs_tol=2e-3) or math.isclose(back[0], 160, abs_tol=2e-3)
                on_y = math.isclose(back[1], 100, abs_tol=2e-3) or math.isclose(back[1], 130, abs_tol=2e-3)
                if (on_x and 100 - 2e-3 <= back[1] <= 130 + 2e-3) or (
                    on_y and 100 - 2e-3 <= back[0] <= 160 + 2e-3
                ):
                    matched.append(d)
        assert sorted(matched) == [0.25, 0.5], (seed, near)


def test_other_elements_are_the_other_targets_on_the_same_screenshot() -> None:
    samples = [
        _sample(0, Box(10, 10, 50, 50), "a.png"),
        _sample(1, Box(100, 10, 140, 50), "a.png"),
        _sample(2, Box(200, 10, 240, 50), "a.png"),
        _sample(3, Box(10, 200, 50, 240), "b.png"),  # alone on its screenshot: a random point instead
    ]
    entries, _ = synthetic_pool(samples, n=4, kinds=("other_element",), seed=1)
    by_id = {e.id: e for e in entries}
    regions = {s.id: s.region for s in samples}
    for sid, sharing in (("0", {"1", "2"}), ("1", {"0", "2"}), ("2", {"0", "1"})):
        e = by_id[sid]
        assert e.kinds.count("other_element") == 2 and e.kinds.count("random") == 1
        # each other-element point is inside a different one of the other targets on a.png
        found = {
            o
            for p, k in zip(e.points, e.kinds, strict=True)
            if k == "other_element"
            for o in sharing
            if _inside(regions[o], p)
        }  # type: ignore[arg-type]
        assert found == sharing
    assert by_id["3"].kinds.count("other_element") == 0 and by_id["3"].kinds.count("random") == 3


def test_a_pool_is_the_same_whatever_other_samples_are_read_and_moves_with_the_seed() -> None:
    a = _sample(0, Box(100, 100, 160, 130), "x.png")
    b = _sample(1, Box(200, 100, 260, 130), "y.png")
    alone = synthetic_pool([a], seed=5)[0][0]
    assert synthetic_pool([b, a], seed=5)[0][1] == alone
    assert synthetic_pool([a], seed=6)[0][0] != alone
    positions = {
        synthetic_pool([_sample(i, Box(100, 100, 160, 130))], seed=0)[0][0].gold[0] for i in range(40)
    }
    assert positions == {0, 1, 2, 3}  # the gold's place is drawn, not always the same


def test_samples_without_a_hittable_target_have_no_pool() -> None:
    entries, skipped = synthetic_pool(
        [_sample(0, Absent()), _sample(1, Box(5, 5, 5, 5)), _sample(2, Box(1, 1, 9, 9), size=UNKNOWN_SIZE)]
    )
    assert entries == []
    assert skipped == {
        "no target (a refusal sample)": ["0"],
        "a degenerate target": ["1"],
        "no known screenshot size": ["2"],
    }


def test_a_runs_candidates_that_hit_are_gold_and_a_run_that_missed_gets_one() -> None:
    s = _sample(0, Box(100, 100, 160, 130))
    e = pool_from_points(s, [(120, 110), (5, 5), (150, 129), (300, 10), (1, 1)], n=4, seed=0)
    assert e is not None and e.gold == (0, 2) and e.kinds == ("proposer",) * 4 and len(e.points) == 4
    assert pool_from_points(s, [], n=4, seed=0) is None  # nothing proposed: no pool
    assert pool_from_points(s, [(900, 900)], n=4, seed=0) is None  # nothing on the screen: none
    kept = pool_from_points(s, [(5, 5), (5, 5), (900, 9), (300, 10), (120, 110)], n=4, seed=0)
    assert kept is not None and kept.points == (
        (5.0, 5.0),
        (300.0, 10.0),
        (120.0, 110.0),
    )  # once each, on screen
    missed = pool_from_points(s, [(5, 5), (300, 10), (1, 1)], n=4, seed=0)
    assert missed is not None and len(missed.gold) == 1
    (g,) = missed.gold
    assert missed.kinds[g] == "gold" and _inside(s.region, missed.points[g])  # type: ignore[arg-type]
    kept = [p for i, p in enumerate(missed.points) if i != g]
    assert all(p in [(5.0, 5.0), (300.0, 10.0), (1.0, 1.0)] for p in kept) and len(kept) == 2


def test_a_pool_file_line_that_the_data_contradicts_is_refused_naming_file_and_line() -> None:
    s = _sample(0, Box(100, 100, 160, 130))
    good = {"benchmark": "b", "id": "0", "points": [[120, 110], [10, 10]], "gold": [0]}
    assert check_entry(good, s, "p.jsonl:1").gold == (0,)
    cases: list[tuple[dict[str, object], Sample | None, str]] = [
        ({**good, "gold": [1]}, s, "p.jsonl:2: point 0 .*: the distractor hits"),
        ({**good, "points": [[120, 110], [130, 115]]}, s, "p.jsonl:2: point 1 .*: the distractor hits"),
        (good, None, "p.jsonl:2: no sample b 0 in the data read"),
        (
            {**good, "image_size": [800, 600]},
            s,
            r"p.jsonl:2: image_size \[800, 600\], but the record says \[400, 300\]",
        ),
        (
            {**good, "points": [[120, 110], [500, 10]]},
            s,
            r"p.jsonl:2: point 1 \[500.0, 10.0\] is off the 400x300 screen",
        ),
        ({**good, "points": [[120, 110]]}, s, "p.jsonl:2: 'points' must be a list of at least two"),
        ({**good, "points": [["a", 50], [10, 10]]}, s, "p.jsonl:2: 'points' must be a list of at least two"),
        ({**good, "points": [[None, 1], [10, 10]]}, s, "p.jsonl:2: 'points' must be a list of at least two"),
        ({**good, "gold": 0}, s, "p.jsonl:2: 'gold' must list the gold points' indices"),
        ({**good, "gold": ["a"]}, s, "p.jsonl:2: 'gold' must list the gold points' indices"),
        ({**good, "gold": [0, 0]}, s, "p.jsonl:2: 'gold' must list the gold points' indices"),
        ({**good, "gold": [0.7]}, s, "p.jsonl:2: 'gold' must list the gold points' indices"),
        ({**good, "image_size": 5}, s, "p.jsonl:2: image_size 5, but the record says"),
        ({**good, "points": [[120, 110], [10, 10], [10.0001, 10]]}, s, "p.jsonl:2: a point is given twice"),
    ]
    for line, sample, message in cases:
        with pytest.raises(GgeError, match=message):
            check_entry(line, sample, "p.jsonl:2")


def test_a_recipe_that_cannot_be_built_says_why() -> None:
    for kwargs, message in (
        ({"n": 1}, "pool.n=1: a critic needs at least 2"),
        ({"kinds": ("far",)}, r"pool.kinds: \['far'\]"),
        ({"orders": "shuffle"}, "pool.orders='shuffle'"),
    ):
        with pytest.raises(GgeError, match=message):
            PoolRecipe("synthetic", **kwargs)  # type: ignore[arg-type]


# -- the figures, from scripted critics ---------------------------------------------------------


def _pools(count: int, n: int, seed: int = 0) -> list[PoolEntry]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        kinds = ["near_miss", "other_element", "random", "random", "near_miss"][: n - 1]
        at = rng.randrange(n)
        kinds.insert(at, "gold")
        points = tuple((rng.uniform(0, 400), rng.uniform(0, 300)) for _ in range(n))
        out.append(PoolEntry("b", str(i), points, tuple(kinds), (at,)))
    return out


def _ask(
    entries: list[PoolEntry], mode: str, critic: Callable[[PoolEntry, tuple[int, ...]], int]
) -> list[Ask]:
    return [Ask(e, o, critic(e, o), 0.005) for e in entries for o in orders(e, mode)]


def test_a_critic_that_always_picks_the_first_shown() -> None:
    entries = _pools(10, 4)
    f = pool_figures(_ask(entries, "rotate", lambda e, o: 0), "rotate")
    assert (f["pools"], f["asks"], f["candidates"]) == (10, 40, [4])
    assert f["accuracy"] == 25.0 and f["chance"] == 25.0  # the gold is first in one order of four
    assert f["first_position_rate"] == 100.0 and f["first_position_over_chance"] == 75.0
    assert f["consistency"] == 0.0  # another candidate in every order
    assert f["by_gold_position"] == {
        "0": {"asks": 10, "accuracy": 100.0},
        **{str(p): {"asks": 10, "accuracy": 0.0} for p in (1, 2, 3)},
    }


def test_an_oracle_critic() -> None:
    entries = _pools(7, 5)
    f = pool_figures(_ask(entries, "rotate", lambda e, o: o.index(e.gold[0])), "rotate")
    assert f["accuracy"] == 100.0 and f["consistency"] == 100.0 and f["picked_kind"] == {"gold": 100.0}
    assert f["first_position_rate"] == 20.0 and f["first_position_over_chance"] == 0.0


def test_a_critic_that_picks_the_candidate_nearest_the_screen_centre() -> None:
    entries = _pools(12, 4, seed=4)

    def nearest(e: PoolEntry, o: tuple[int, ...]) -> int:
        shown = [e.points[i] for i in o]
        return min(range(len(shown)), key=lambda j: math.hypot(shown[j][0] - 200, shown[j][1] - 150))

    f = pool_figures(_ask(entries, "rotate", nearest), "rotate")
    by_hand = sum(
        min(range(4), key=lambda i, e=e: math.hypot(e.points[i][0] - 200, e.points[i][1] - 150)) == e.gold[0]
        for e in entries
    )
    assert f["accuracy"] == pytest.approx(100 * by_hand / 12, abs=1e-4)
    assert f["consistency"] == 100.0  # a place on the screen, not a place in the list
    assert f["first_position_rate"] == 25.0 and f["first_position_over_chance"] == 0.0
    assert pool_figures(_ask(entries, "none", nearest), "none")["consistency"] is None


def test_a_critic_that_prefers_near_misses() -> None:
    entries = [e for e in _pools(20, 4, seed=2)]

    def likes_near(e: PoolEntry, o: tuple[int, ...]) -> int:
        return next(j for j, i in enumerate(o) if e.kinds[i] == "near_miss")

    f = pool_figures(_ask(entries, "none", likes_near), "none")
    assert f["picked_kind"] == {"near_miss": 100.0} and f["accuracy"] == 0.0
    sizes = pool_figures([Ask(entries[0], (0, 1, 2, 3), 0, a) for a in (0.0005, 0.005, 0.05)], "none")
    assert list(sizes["by_target_size"]) == ["small", "medium", "large"]


def test_the_rescue_rate_of_a_pool_from_a_run() -> None:
    hit = PoolEntry("b", "0", ((1.0, 1.0), (9.0, 9.0)), ("proposer", "proposer"), (1,))
    put_in = PoolEntry("b", "1", ((1.0, 1.0), (9.0, 9.0)), ("gold", "proposer"), (0,))
    put_in2 = PoolEntry("b", "2", ((1.0, 1.0), (9.0, 9.0)), ("proposer", "gold"), (1,))
    asks = [Ask(hit, (0, 1), 1, 0.01), Ask(put_in, (0, 1), 0, 0.01), Ask(put_in2, (0, 1), 0, 0.01)]
    rescue = pool_figures(asks, "none")["critic_rescue"]
    assert rescue == {"asks": 2, "rate": 50.0, "proposer_hit_asks": 1, "proposer_hit_accuracy": 100.0}
    assert pool_figures(_ask(_pools(3, 4), "none", lambda e, o: 0), "none")["critic_rescue"] is None


def test_shuffled_labels_put_number_one_on_every_position_equally_often() -> None:
    from gge.scoring.pools import shuffled_labels

    for n in (2, 3, 4):
        counts = [0] * n
        draws = 6000
        for i in range(draws):
            counts[shuffled_labels(n, 0, f"k{i}").index("1")] += 1
        # each position 1/n of the time: within 4 standard deviations of a binomial draw
        sd = math.sqrt(draws * (1 / n) * (1 - 1 / n))
        assert all(abs(c - draws / n) < 4 * sd for c in counts), (n, counts)
