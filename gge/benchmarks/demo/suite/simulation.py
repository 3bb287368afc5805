"""The simulated proposer/critic of the demo suite's replay file, and the scores it should get.

:func:`simulate` draws each sample's candidates and critic scores (exact shares of hits per benchmark,
:data:`DIFFICULTY`); intended hits lie strictly inside their region and intended misses clearly outside,
so :func:`expected_scores` under the official rule (:func:`official_hit`) is exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gge.benchmarks.demo.screens.elements import _rng
from gge.benchmarks.demo.suite.cases import Case, _fbox
from gge.benchmarks.demo.suite.constants import K, Point
from gge.types import Absent, Box, Polygon, Region


@dataclass(frozen=True)
class Difficulty:
    """How often the simulated model succeeds on one benchmark (exact shares, not probabilities).

    Attributes:
        found: Share of hittable samples where some candidate hits (Oracle@K).
        first: Share of those where the first candidate hits.
        critic: Share of those where the candidate with the top critic score hits.
        refusal: Share of refusal samples whose candidates include abstentions.
    """

    found: float
    first: float
    critic: float
    refusal: float = 0.75


DIFFICULTY: dict[str, Difficulty] = {
    "screenspot_v2": Difficulty(0.88, 0.78, 0.9),
    "screenspot_pro": Difficulty(0.5, 0.6, 0.8),
    "osworld_g": Difficulty(0.62, 0.65, 0.84),
    "osworld_g_refined": Difficulty(0.7, 0.68, 0.86),
    "ui_vision": Difficulty(0.42, 0.6, 0.8),
    "mmbench_gui": Difficulty(0.78, 0.72, 0.87),
    "ui_i2e_bench": Difficulty(0.82, 0.72, 0.87),
}
FORMAT_ERROR_RATE = 1 / 40
_BAD_OUTPUTS = (
    "I think the element you are looking for is near the top of the window.",
    '<tool_call>{"name": "click", "arguments": {"coordinate": [',
    "click(start_box='<|box_start|>(",
    "The answer is the second one.",
    "Sorry, I cannot help with that request.",
)


def _seg_dist(x: float, y: float, a: Point, b: Point) -> float:
    (ax, ay), (bx, by) = a, b
    dx, dy = bx - ax, by - ay
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - ax - t * dx, y - ay - t * dy)


def official_hit(region: Region, point: Point | None) -> bool:
    """Official rule for one candidate: a point hits a box or polygon, an abstention an absent target."""
    if point is None:
        return isinstance(region, Absent)
    return region.contains(*point)


def _clear(region: Region, point: Point | None, hit: bool) -> bool:
    """Whether the point is an unambiguous hit (or miss): 1 px inside, or 2 px outside every edge."""
    if point is None or isinstance(region, Absent):
        return official_hit(region, point) == hit
    x, y = point
    inside = region.contains(x, y)
    if isinstance(region, Polygon):
        vs = region.vertices
        dist = min(_seg_dist(x, y, vs[i - 1], vs[i]) for i in range(len(vs)))
        return inside and dist >= 1.5 if hit else not inside and dist >= 2.0
    x1, y1, x2, y2 = region.pixel_box()
    if x1 > x2 or y1 > y2:  # inverted, kept as written: contains nothing
        return not hit
    if hit:
        return inside and min(x - x1, x2 - x, y - y1, y2 - y) >= 1.0
    return not inside and max(x1 - x, x - x2, y1 - y, y - y2) >= 2.0


def _hittable(region: Region) -> bool:
    if isinstance(region, Box):
        x1, y1, x2, y2 = region.pixel_box()
        return x2 - x1 >= 4 and y2 - y1 >= 4
    return True


def _inside(rng: np.random.Generator, box: tuple[float, float, float, float], w: int, h: int) -> Point:
    """A point around the centre of the box, at least 1.5 px inside it and inside the image."""
    x1, y1, x2, y2 = max(box[0], 2), max(box[1], 2), min(box[2], w - 2), min(box[3], h - 2)
    cx = float(np.clip(rng.normal((x1 + x2) / 2, (x2 - x1) / 5), x1 + 1.5, x2 - 1.5))
    cy = float(np.clip(rng.normal((y1 + y2) / 2, (y2 - y1) / 5), y1 + 1.5, y2 - 1.5))
    return (round(cx, 1), round(cy, 1))


def _hit_point(rng: np.random.Generator, case: Case) -> Point | None:
    region = case.region
    if isinstance(region, Absent):
        return None
    w, h = case.screen.spec.size
    bounds = region.pixel_box()
    for _ in range(2000):
        if isinstance(region, Polygon):
            p = (
                round(float(rng.uniform(bounds[0], bounds[2])), 1),
                round(float(rng.uniform(bounds[1], bounds[3])), 1),
            )
        else:
            p = _inside(rng, bounds, w, h)
        if _clear(region, p, hit=True):
            return p
    raise AssertionError(f"{case.benchmark} {case.id}: no unambiguous hit point")


def _miss_point(rng: np.random.Generator, case: Case, allow_abstain: bool) -> Point | None:
    region, screen = case.region, case.screen
    w, h = screen.spec.size
    others = [e for e in screen.elements if e is not case.aim]
    kinds = {"distractor": 0.55, "near": 0.3, "random": 0.15}
    if isinstance(region, Absent):
        kinds = {"distractor": 0.8, "random": 0.2}
    elif not _hittable(region):
        kinds = {"aim": 0.5, "distractor": 0.35, "random": 0.15}
    elif allow_abstain:
        kinds["abstain"] = 0.06
    names = list(kinds)
    p = np.array(list(kinds.values())) / sum(kinds.values())
    for _ in range(200):
        kind = names[int(rng.choice(len(names), p=p))]
        point: Point | None
        if kind == "abstain":
            point = None
        elif kind == "random":
            point = (round(float(rng.uniform(2, w - 2)), 1), round(float(rng.uniform(2, h - 2)), 1))
        elif kind == "aim" and case.aim is not None:
            point = _inside(rng, _fbox(case.aim), w, h)
        elif kind == "distractor":
            point = _inside(rng, _fbox(others[int(rng.integers(len(others)))]), w, h)
        else:
            x1, y1, x2, y2 = region.pixel_box() or (0.0, 0.0, 0.0, 0.0)
            off = float(rng.uniform(3, 10))
            side = int(rng.integers(4))
            u = float(rng.uniform(0.1, 0.9))
            px, py = x1 + u * (x2 - x1), y1 + u * (y2 - y1)
            point = [(x1 - off, py), (x2 + off, py), (px, y1 - off), (px, y2 + off)][side]
            point = (round(point[0], 1), round(point[1], 1))
        if point is not None and not (2 <= point[0] <= w - 2 and 2 <= point[1] <= h - 2):
            continue
        if _clear(region, point, hit=False):
            return point
    raise AssertionError(f"{case.benchmark} {case.id}: no unambiguous miss point")


def _subset(rng: np.random.Generator, items: Sequence[int], share: float) -> set[int]:
    k = round(share * len(items))
    return {items[int(i)] for i in rng.choice(len(items), size=k, replace=False)} if k else set()


def _scores(rng: np.random.Generator, hits: set[int], critic_ok: bool) -> list[float]:
    while True:
        values = sorted({round(float(v), 3) for v in rng.uniform(0.02, 0.98, size=K)}, reverse=True)
        if len(values) == K:
            break
    misses = [i for i in range(K) if i not in hits]
    if hits and critic_ok:
        top = sorted(hits)[int(rng.integers(len(hits)))]
    elif hits:
        top = misses[int(rng.integers(len(misses)))]
    else:
        top = int(rng.integers(K))
    rest = sorted((i for i in range(K) if i != top), key=lambda i: -((i in hits) + float(rng.normal(0, 0.8))))
    out = [0.0] * K
    for value, i in zip(values, [top, *rest], strict=True):
        out[i] = value
    return out


def simulate(name: str, cases: Sequence[Case], seed: int) -> list[dict[str, Any]]:
    """Replay lines of the simulated proposer/critic for one benchmark.

    Args:
        name: Benchmark name written in the lines (``osworld_g_refined`` reuses OSWorld-G's cases).
        cases: The benchmark's samples.
        seed: Suite seed.

    Returns:
        One dict per case: ``benchmark``, ``id``, ``candidates`` (``[x, y]`` pixels or None),
        ``scores``; about one in 40 is a format error instead (no candidates, ``raw`` text).
    """
    d = DIFFICULTY[name]
    rng = _rng(seed, "predictions", name)
    hittable = [i for i, c in enumerate(cases) if _hittable(c.region)]
    refusals = [i for i in hittable if isinstance(cases[i].region, Absent)]
    others = [i for i in hittable if i not in refusals]
    found = sorted(_subset(rng, others, d.found) | _subset(rng, refusals, d.refusal))
    first_ok = _subset(rng, found, d.first)
    critic_ok = _subset(rng, found, d.critic)
    plain = [i for i in others if i not in found]
    errors = _subset(rng, plain, max(1, round(len(cases) * FORMAT_ERROR_RATE)) / max(1, len(plain)))
    lines: list[dict[str, Any]] = []
    for i, case in enumerate(cases):
        if i in errors:
            raw = _BAD_OUTPUTS[int(rng.integers(len(_BAD_OUTPUTS)))]
            lines.append(
                {
                    "benchmark": name,
                    "id": case.id,
                    "candidates": [],
                    "scores": [],
                    "raw": raw,
                    "format_error": True,
                }
            )
            continue
        extra = 0.5 if isinstance(case.region, Absent) else 0.3
        hits: set[int] = set()
        if i in found and i in first_ok:
            hits = {0} | {k for k in range(1, K) if rng.random() < extra}
        elif i in found:
            m = 1 + int(rng.binomial(K - 2, extra))
            hits = {1 + int(v) for v in rng.choice(K - 1, size=m, replace=False)}
        if len(hits) == K:
            hits.discard(K - 1)
        allow_abstain = name.startswith("osworld")
        points = [
            _hit_point(rng, case) if k in hits else _miss_point(rng, case, allow_abstain) for k in range(K)
        ]
        if [official_hit(case.region, p) for p in points] != [k in hits for k in range(K)]:
            raise AssertionError(f"{name} {case.id}: simulated outcome differs from the official rule")
        lines.append(
            {
                "benchmark": name,
                "id": case.id,
                "candidates": [None if p is None else [p[0], p[1]] for p in points],
                "scores": _scores(rng, hits, i in critic_ok),
            }
        )
    return lines


def expected_scores(cases: Sequence[Case], lines: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Micro Oracle@K, first-candidate and top-score accuracy of replay lines under the official rules.

    Format errors are misses that stay in the denominator.
    """
    by_id = {c.id: c for c in cases}
    oracle = first = top = errors = 0
    for line in lines:
        region = by_id[line["id"]].region
        points = [None if p is None else (float(p[0]), float(p[1])) for p in line["candidates"]]
        hits = [official_hit(region, p) for p in points]
        errors += bool(line.get("format_error"))
        if hits:
            oracle += any(hits)
            first += hits[0]
            top += hits[int(np.argmax(line["scores"]))]
    n = max(1, len(lines))
    return {
        "samples": len(lines),
        "oracle_at_5": round(oracle / n, 4),
        "first": round(first / n, 4),
        "max_score": round(top / n, 4),
        "format_errors": errors,
    }
