"""What every benchmark writer of the demo suite shares: the written sample (:class:`Case`) and helpers.

The helpers split counts over screens, pick target elements and instruction styles, and write PNG and
JSON files.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from gge.benchmarks.demo.screens.elements import Element, Screen
from gge.types import Box, Region


@dataclass(frozen=True)
class Case:
    """One written sample, as the candidate simulation and the expected scores need it.

    Attributes:
        benchmark: Benchmark name.
        id: Native sample id (FORMATS.md, "Sample ids").
        region: The target under the benchmark's official rule, read from the record as written.
        screen: The screenshot the record points at.
        aim: The drawn element the instruction is about (None when it is not on the screen).
    """

    benchmark: str
    id: str
    region: Region
    screen: Screen
    aim: Element | None


def _allocate(n: int, weights: Sequence[float]) -> list[int]:
    """Split n over the weights (largest remainder; ties go to the first)."""
    total = sum(weights)
    raw = [n * w / total for w in weights]
    counts = [math.floor(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


def _pick(
    screen: Screen,
    n: int,
    rng: np.random.Generator,
    first: Callable[[Element], bool] | None = None,
    allowed: Callable[[Element], bool] | None = None,
) -> list[Element]:
    """Choose n distinct target elements, cycling over element kinds, about one icon in three."""
    pool = [e for e in screen.elements if allowed is None or allowed(e)]
    chosen: list[Element] = []
    if first is not None:
        firsts = [e for e in pool if first(e)]
        if not firsts:
            raise AssertionError(f"{screen.spec.key}: no element for the forced target")
        chosen.append(firsts[int(rng.integers(len(firsts)))])
    kinds = sorted({e.kind for e in pool})
    by_kind = {k: [pool[i] for i in rng.permutation(len(pool)) if pool[i].kind == k] for k in kinds}
    others = [kinds[i] for i in rng.permutation(len(kinds)) if kinds[i] != "icon"]
    cycle = ["icon"] if not others else []
    for i, kind in enumerate(others):
        cycle += ["icon", kind] if i % 2 == 0 and "icon" in by_kind else [kind]
    while len(chosen) < n and any(by_kind.values()):
        for kind in cycle:
            while by_kind[kind] and by_kind[kind][0] in chosen:
                by_kind[kind].pop(0)
            if by_kind[kind] and len(chosen) < n:
                chosen.append(by_kind[kind].pop(0))
    if len(chosen) < n:
        raise ValueError(
            f"{screen.spec.key}: only {len(chosen)} targets for {n} samples; lower per_benchmark"
        )
    return chosen


def _styles(rng: np.random.Generator, n: int, weights: dict[str, float]) -> list[str]:
    names = list(weights)
    p = np.array([weights[k] for k in names]) / sum(weights.values())
    return [names[int(i)] for i in rng.choice(len(names), size=n, p=p)]


def _save_png(image: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=False, compress_level=6)


def _dump(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _token(rng: np.random.Generator, n: int, alphabet: str = string.hexdigits[:16]) -> str:
    return "".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=n))


def _xyxy(el: Element) -> list[float]:
    return [float(v) for v in el.box]


def _box(v: Sequence[float], size: tuple[int, int] | None = None) -> Box:
    """A Box from four values (pixels, or normalised by ``size`` when it is given)."""
    if size is None:
        return Box(v[0], v[1], v[2], v[3])
    return Box(v[0], v[1], v[2], v[3], space="normalized", size=size)


def _ints(v: Sequence[float]) -> list[int]:
    return [int(x) for x in v]


def _fbox(el: Element) -> tuple[float, float, float, float]:
    x1, y1, x2, y2 = el.box
    return (float(x1), float(y1), float(x2), float(y2))
