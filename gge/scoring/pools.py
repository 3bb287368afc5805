"""Frozen candidate pools: the critic judged on the same candidates whatever the proposer did.

A pool gives one sample N candidate points, one or more of them *gold* (a point the benchmark's own
rule counts as a hit) and the rest *distractors* (points it counts as misses), each with its kind.
Every model and checkpoint asked on a pool is asked on the same points, so a critic's accuracy on it
moves with the critic alone (with its own proposer's candidates it moves with the proposer too).

Three sources, each seeded and recorded (:class:`PoolRecipe`):

- **synthetic** (:func:`synthetic_pool`), from the data alone: the gold is a seeded point inside the
  target (not its centre: uniform in the box's middle 70%, or inside the polygon), the distractors
  are of named kinds, cycled over the N - 1 places then shuffled:
  *near_miss* (just outside the target, at ``near`` target diagonals from its edge, seeded
  direction), *other_element* (a point inside the target of another sample on the same screenshot,
  ground truth the records already hold; where there is none, a *random* point takes its place and
  says so), *random* (a seeded point on the screen). The gold goes to a seeded position.
- **from a run** (:func:`pool_from_points`): a finished run's candidates (kind *proposer*); the ones
  that hit are gold (several may: a pick is correct when it hits, as Top-1 counts it); where none
  hits, a synthetic gold replaces the candidate at a seeded position.
- **a file** a user brings (:func:`check_entry`): checked against the data like a replay file.

Points are kept to 1/1000 pixel, as the pool file writes them, so a pool read back from its file is the
pool asked. Every distractor misses and every gold hits by :func:`gge.scoring.scoring.candidate_hits`
(GroundUI's strict edges, OSWorld-G's polygons); a sample whose target cannot be hit (a refusal, a
degenerate box, no known size) has no pool and is counted under why.

**Orders** (:func:`orders`): ``none`` asks each pool once as built; ``rotate`` asks it N times, the
list cyclically shifted by 0..N-1 (a Latin square: every candidate at every position once), so the
gold is seen at every position and a critic's preference for a position, apart from the candidates,
shows (:mod:`gge.scoring.pool_figures`).

Example:
    >>> from gge.types import Box, Sample
    >>> s = Sample("b", "0", "a.png", (100, 100), "click OK", Box(40, 40, 60, 60))
    >>> entry = synthetic_pool([s], n=3, kinds=("near_miss", "random"), seed=0)[0][0]
    >>> len(entry.points), entry.kinds.count("gold"), [entry.kinds[g] for g in entry.gold]
    (3, 1, ['gold'])
    >>> orders(entry, "rotate")
    [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gge.benchmarks.images import UNKNOWN_SIZE
from gge.errors import GgeError
from gge.scoring.scoring import candidate_hits
from gge.types import Absent, Box, Candidate, Polygon, Region, Sample

Point = tuple[float, float]

DISTRACTOR_KINDS = ("near_miss", "other_element", "random")
"""The distractor kinds a synthetic pool draws (``pool.kinds``)."""

KINDS = ("gold", *DISTRACTOR_KINDS, "proposer")
"""Every kind a pool point may have: ``proposer`` is a run's own candidate."""

ORDERS = ("none", "rotate")
"""``pool.orders``: each pool asked once, or once per cyclic shift (a Latin square)."""

LABELS = ("order", "shuffled")
"""``pool.labels``: a listwise critic's markers numbered in the order shown, or by a seeded shuffle
(the label probe: a pick of number 1 is then apart from a pick of the first marker drawn)."""

SOURCES = ("synthetic", "run", "file")

TRIES = 200
"""Seeded draws per point before a kind gives up (a target filling the screen has no near miss)."""


@dataclass(frozen=True)
class PoolRecipe:
    """How a pool was made: written beside it and into results.json.

    Attributes:
        source: ``synthetic``, ``run`` (a finished run's predictions.jsonl) or ``file``.
        n: Candidates per pool (a run's pool may hold fewer where the run proposed fewer).
        kinds: The distractor kinds drawn, in the order they are cycled.
        near: Distances of near misses from the target's edge, in target diagonals (cycled).
        seed: The seed.
        orders: ``none`` or ``rotate``.
        path: The run's predictions or the file, for those sources.
        labels: ``order`` (marker numbers in the order shown) or ``shuffled`` (the label probe).
        nested: Also ask each pool's nested sub-pools of 2..N-1 candidates (:func:`sub_pools`).
    """

    source: str
    n: int = 4
    kinds: tuple[str, ...] = DISTRACTOR_KINDS
    near: tuple[float, ...] = (0.25, 0.5)
    seed: int = 0
    orders: str = "none"
    path: str | None = None
    labels: str = "order"
    nested: bool = False

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise GgeError(f"pool.source: {self.source!r} is not one of {', '.join(SOURCES)}")
        if self.n < 2:
            raise GgeError(f"pool.n={self.n}: a critic needs at least 2 candidates to choose from")
        unknown = [k for k in self.kinds if k not in DISTRACTOR_KINDS]
        if unknown or not self.kinds:
            raise GgeError(f"pool.kinds: {unknown or 'none'}: the kinds are {', '.join(DISTRACTOR_KINDS)}")
        if self.orders not in ORDERS:
            raise GgeError(f"pool.orders={self.orders!r}: one of {', '.join(ORDERS)}")
        if self.labels not in LABELS:
            raise GgeError(f"pool.labels={self.labels!r}: one of {', '.join(LABELS)}")
        if any(d <= 0 for d in self.near) or not self.near:
            raise GgeError(f"pool.near={list(self.near)}: distances in target diagonals, each > 0")


@dataclass(frozen=True)
class PoolEntry:
    """One sample's pool: its points in pool order, the kind of each, and which are gold.

    Attributes:
        benchmark: The sample's benchmark.
        id: The sample's id.
        points: Candidate points in original pixels.
        kinds: One kind per point (:data:`KINDS`).
        gold: The indices of the points that hit the target.
    """

    benchmark: str
    id: str
    points: tuple[Point, ...]
    kinds: tuple[str, ...]
    gold: tuple[int, ...]

    def record(self) -> dict[str, Any]:
        """The entry as a pool file's line."""
        return {
            "benchmark": self.benchmark,
            "id": self.id,
            "points": [[x, y] for x, y in self.points],
            "kinds": list(self.kinds),
            "gold": list(self.gold),
        }


def hits(region: Region, point: Point) -> bool:
    """Whether a point hits a target by the benchmark's own rule."""
    return candidate_hits(region, Candidate(point))


def _r(x: float, y: float) -> Point:
    """A pool point: kept to 1/1000 pixel, as the pool file writes it (what is asked is what is written)."""
    return (round(float(x), 3), round(float(y), 3))


def _on_screen(p: Point, size: tuple[int, int]) -> bool:
    return 0 <= p[0] < size[0] and 0 <= p[1] < size[1]


def _bounds(region: Region) -> tuple[float, float, float, float]:
    box = region.pixel_box()
    assert box is not None
    return box


def why_no_pool(sample: Sample) -> str | None:
    """Why a sample can have no pool (its target cannot be hit, or its size is not known), or None."""
    if isinstance(sample.region, Absent):
        return "no target (a refusal sample)"
    if sample.region.degenerate:
        return "a degenerate target"
    if tuple(sample.image_size) == UNKNOWN_SIZE:
        return "no known screenshot size"
    if not isinstance(sample.region, (Box, Polygon)):
        return f"a {type(sample.region).__name__} target"
    return None


def gold_point(sample: Sample, rng: random.Random) -> Point | None:
    """A seeded point inside the target that hits it (uniform in the box's middle 70%, or in the polygon)."""
    x1, y1, x2, y2 = _bounds(sample.region)
    inset = 0.15 if isinstance(sample.region, Box) else 0.0
    for i in range(TRIES):
        t = inset if i < TRIES // 2 else 0.0  # a box too thin for its middle: anywhere inside
        p = _r(
            rng.uniform(x1 + t * (x2 - x1), x2 - t * (x2 - x1)),
            rng.uniform(y1 + t * (y2 - y1), y2 - t * (y2 - y1)),
        )
        if hits(sample.region, p) and _on_screen(p, sample.image_size):
            return p
    centre = _r((x1 + x2) / 2, (y1 + y2) / 2)
    return centre if hits(sample.region, centre) else None


def near_miss(sample: Sample, distance: float, rng: random.Random) -> Point | None:
    """A point ``distance`` target diagonals outside the target's edge, in a seeded direction."""
    x1, y1, x2, y2 = _bounds(sample.region)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    diag = math.hypot(x2 - x1, y2 - y1)
    for _ in range(TRIES):
        a = rng.uniform(0, 2 * math.pi)
        dx, dy = math.cos(a), math.sin(a)
        # where the ray from the centre leaves the bounding box, then `distance` diagonals on
        tx = (x2 - cx) / dx if dx > 1e-12 else (x1 - cx) / dx if dx < -1e-12 else math.inf
        ty = (y2 - cy) / dy if dy > 1e-12 else (y1 - cy) / dy if dy < -1e-12 else math.inf
        t = min(tx, ty) + distance * diag
        p = _r(cx + t * dx, cy + t * dy)
        if _on_screen(p, sample.image_size) and not hits(sample.region, p):
            return p
    return None


def random_miss(sample: Sample, rng: random.Random) -> Point | None:
    """A seeded point on the screen that misses the target."""
    w, h = sample.image_size
    for _ in range(TRIES):
        p = _r(rng.uniform(0, w), rng.uniform(0, h))
        if _on_screen(p, sample.image_size) and not hits(sample.region, p):
            return p
    return None


def _same_screen(samples: Sequence[Sample]) -> dict[tuple[str, str], list[Sample]]:
    on: dict[tuple[str, str], list[Sample]] = {}
    for s in samples:
        on.setdefault((s.benchmark, s.image_path), []).append(s)
    return on


def _rng(seed: int, sample: Sample, what: str) -> random.Random:
    return random.Random(f"{seed}:{sample.benchmark}:{sample.id}:{what}")


def _distractors(
    sample: Sample, wanted: Sequence[str], recipe: PoolRecipe, others: Sequence[Sample]
) -> list[tuple[Point, str]] | None:
    """The distractors of one pool, by the kinds wanted (an other element missing -> a random point)."""
    elements = [o for o in others if o.id != sample.id and why_no_pool(o) is None]
    _rng(recipe.seed, sample, "elements").shuffle(elements)
    out: list[tuple[Point, str]] = []
    near_i = 0
    for slot, kind in enumerate(wanted):
        rng = _rng(recipe.seed, sample, f"distractor {slot}")  # each slot its own stream
        p: Point | None = None
        got = kind
        if kind == "near_miss":
            p = near_miss(sample, recipe.near[near_i % len(recipe.near)], rng)
            near_i += 1
        elif kind == "other_element":
            while elements and p is None:
                other = elements.pop()
                q = gold_point(other, _rng(recipe.seed, other, "element"))
                p = q if q is not None and not hits(sample.region, q) else None
        if p is None and kind != "random":
            got = "random"
        if p is None:
            p = random_miss(sample, rng)
        if p is None:
            return None
        out.append((p, got))
    return out


def synthetic_pool(
    samples: Sequence[Sample],
    n: int = 4,
    kinds: Sequence[str] = DISTRACTOR_KINDS,
    seed: int = 0,
    near: Sequence[float] = (0.25, 0.5),
) -> tuple[list[PoolEntry], dict[str, list[str]]]:
    """A seeded pool for every sample whose target can be hit, from the data alone.

    Args:
        samples: The samples (every sample of a benchmark: another one on the same screenshot gives
            ``other_element`` distractors).
        n: Candidates per pool (one gold, ``n - 1`` distractors).
        kinds: Distractor kinds, cycled over the ``n - 1`` places.
        seed: The seed (each sample draws from its own stream: a pool does not change when another
            sample is added or left out).
        near: Near-miss distances in target diagonals (cycled).

    Returns:
        The pools in sample order, and the samples left without one by why (``id`` lists).
    """
    recipe = PoolRecipe("synthetic", n, tuple(kinds), tuple(near), seed)
    on = _same_screen(samples)
    entries: list[PoolEntry] = []
    skipped: dict[str, list[str]] = {}
    wanted = [recipe.kinds[i % len(recipe.kinds)] for i in range(n - 1)]
    for s in samples:
        why = why_no_pool(s)
        gold = gold_point(s, _rng(seed, s, "gold")) if why is None else None
        if why is None and gold is None:
            why = "no point inside the target on the screen"
        found = _distractors(s, wanted, recipe, on[(s.benchmark, s.image_path)]) if why is None else None
        if why is None and found is None:
            why = "no point on the screen misses the target"
        if why is not None or gold is None or found is None:
            skipped.setdefault(why or "", []).append(s.id)
            continue
        rng = _rng(seed, s, "order")
        rng.shuffle(found)
        at = rng.randrange(n)
        found.insert(at, (gold, "gold"))
        entries.append(
            PoolEntry(s.benchmark, s.id, tuple(p for p, _ in found), tuple(k for _, k in found), (at,))
        )
    return entries, skipped


def pool_from_points(sample: Sample, points: Sequence[Point], n: int, seed: int) -> PoolEntry | None:
    """A pool from a run's candidates: the first ``n`` points, those that hit gold; none hits: one made gold.

    Args:
        sample: The sample.
        points: The run's candidate points, in its proposer's order (abstentions left out).
        n: Candidates kept at most.
        seed: The seed (where a gold replaces a candidate; random distractors where fewer than 2).

    Returns:
        The pool, or None when the sample's target cannot be hit or the run proposed no point on the
        screen. Off-screen and repeated points are left out.
    """
    if why_no_pool(sample) is not None:
        return None
    kept: list[Point] = []
    for x, y in points:  # on the screen, each point once (a repeat would count a position twice)
        q = _r(x, y)
        if _on_screen(q, sample.image_size) and q not in kept and len(kept) < n:
            kept.append(q)
    if not kept:
        return None  # nothing proposed: nothing to judge the critic on
    kinds = ["proposer"] * len(kept)
    rng = _rng(seed, sample, "run")
    while len(kept) < 2:  # a critic needs two to choose from
        extra = random_miss(sample, rng)
        if extra is None:
            return None
        kept.append(extra)
        kinds.append("random")
    gold = [i for i, p in enumerate(kept) if hits(sample.region, p)]
    if not gold:
        g = gold_point(sample, _rng(seed, sample, "gold"))
        if g is None:
            return None
        at = rng.randrange(len(kept))
        kept[at], kinds[at] = g, "gold"
        gold = [at]
    return PoolEntry(sample.benchmark, sample.id, tuple(kept), tuple(kinds), tuple(gold))


def _xy(p: Any) -> bool:
    """Whether a pool file's point is ``[x, y]`` with two finite numbers."""
    ok = isinstance(p, list) and len(p) == 2
    return ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in p)


def _index(g: Any, n: int) -> bool:
    return isinstance(g, int) and not isinstance(g, bool) and 0 <= g < n


def check_entry(line: Mapping[str, Any], sample: Sample | None, where: str) -> PoolEntry:
    """A pool file's line checked against the data: its id, points on the screen, gold hits, distractors miss.

    Args:
        line: ``{benchmark, id, points: [[x, y], ...], gold: [i, ...], kinds: [...] (optional),
            image_size: [w, h] (optional)}``.
        sample: The sample the line names (None: no such sample).
        where: ``file:line`` for the messages.

    Returns:
        The entry.

    Raises:
        GgeError: One line naming ``where`` and what is wrong.
    """
    if sample is None:
        raise GgeError(f"{where}: no sample {line.get('benchmark')} {line.get('id')} in the data read")
    why = why_no_pool(sample)
    if why is not None:
        raise GgeError(f"{where}: {sample.benchmark} {sample.id} can have no pool: {why}")
    size = line.get("image_size")
    if size is not None and (not isinstance(size, list) or tuple(size) != tuple(sample.image_size)):
        raise GgeError(f"{where}: image_size {size!r}, but the record says {list(sample.image_size)}")
    raw = line.get("points")
    if not isinstance(raw, list) or len(raw) < 2 or not all(_xy(p) for p in raw):
        raise GgeError(f"{where}: 'points' must be a list of at least two [x, y] points (numbers)")
    points = tuple(_r(p[0], p[1]) for p in raw)
    given = line.get("gold")
    n = len(points)
    if (
        not isinstance(given, list)
        or not given
        or not all(_index(g, n) for g in given)
        or len(set(given)) < len(given)
    ):
        raise GgeError(f"{where}: 'gold' must list the gold points' indices (0..{n - 1}, each once)")
    gold = tuple(int(g) for g in given)
    if len(set(points)) < n:
        raise GgeError(f"{where}: a point is given twice (kept to 1/1000 pixel)")
    kinds = tuple(
        str(k) for k in line.get("kinds") or ["gold" if i in gold else "file" for i in range(len(points))]
    )
    if len(kinds) != len(points):
        raise GgeError(f"{where}: {len(kinds)} kinds for {len(points)} points")
    for i, p in enumerate(points):
        if not _on_screen(p, sample.image_size):
            w, h = sample.image_size
            raise GgeError(f"{where}: point {i} {list(p)} is off the {w}x{h} screen")
        if (i in gold) != hits(sample.region, p):
            said = "gold point misses" if i in gold else "distractor hits"
            raise GgeError(
                f"{where}: point {i} {list(p)}: the {said} the target by {sample.benchmark}'s rule"
            )
    return PoolEntry(sample.benchmark, sample.id, points, kinds, gold)


NESTED = "#"
"""Between a pool's id and a sub-pool's size in the sub-pool's id (``<id>#<m>``)."""


def sub_pools(entry: PoolEntry) -> list[PoolEntry]:
    """The nested sub-pools of a pool with one gold: sizes 2..N-1, each the next one less a distractor.

    Sub-pool ``m`` keeps the gold and the first ``m - 1`` distractors in pool order (the points keep
    their relative order), so each holds the one before it: accuracy against the number of candidates
    on the same points. A pool with several golds (from a run) has none.

    Example:
        >>> points = ((0.0, 0.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0))
        >>> e = PoolEntry("b", "7", points, ("random", "gold", "near_miss", "random"), (1,))
        >>> [(s.id, s.points, s.gold) for s in sub_pools(e)]
        [('7#2', ((0.0, 0.0), (1.0, 1.0)), (1,)), ('7#3', ((0.0, 0.0), (1.0, 1.0), (2.0, 2.0)), (1,))]
    """
    if len(entry.gold) != 1:
        return []
    (gold,) = entry.gold
    distractors = [i for i in range(len(entry.points)) if i != gold]
    out = []
    for m in range(2, len(entry.points)):
        kept = sorted([gold, *distractors[: m - 1]])
        out.append(
            PoolEntry(
                entry.benchmark,
                f"{entry.id}{NESTED}{m}",
                tuple(entry.points[i] for i in kept),
                tuple(entry.kinds[i] for i in kept),
                (kept.index(gold),),
            )
        )
    return out


def shuffled_labels(n: int, seed: int, key: str) -> tuple[str, ...]:
    """A seeded, uniform numbering of ``n`` markers (shown position -> its number).

    Uniform over every permutation, the identity included: the number 1 falls on each shown position
    1/n of the time, so a critic biased to the first marker shows no label bias, and the reverse.

    Example:
        >>> sorted(shuffled_labels(4, 0, "b:0~1"))
        ['1', '2', '3', '4']
    """
    names = [str(i + 1) for i in range(n)]
    random.Random(f"{seed}:labels:{key}").shuffle(names)  # uniform: number 1 on each marker 1/n of the time
    return tuple(names)


def orders(entry: PoolEntry, mode: str) -> list[tuple[int, ...]]:
    """The orders a pool is asked in: each a permutation (asked position -> pool index)."""
    n = len(entry.points)
    if mode == "none":
        return [tuple(range(n))]
    return [tuple((k + j) % n for j in range(n)) for k in range(n)]
