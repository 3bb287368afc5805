"""How much of a target the critic's markers hide: the share of its box the drawing covers.

A marking critic (listwise: every candidate on one image; pointwise: one image per candidate) sees
the screenshot with markers drawn at the resolution the model sees (:mod:`gge.models.markers`). A
marker is drawn *on* the point it marks, so a small target under a gold candidate's marker, or under
a near miss's, may be hidden from the critic that is asked about it. :func:`target_cover` measures it
directly: the markers are drawn (with the run's style, at the view's size) on a black and on a white
canvas, and a pixel of the target's box is covered when either drawing changed it (every colour of the
style, its outline and its labels differ from one of the two). A listwise view covers with all its
markers; a pointwise critic's worst view (:func:`views_cover`) is the one whose marker covers most.

Example:
    >>> from gge.models.markers import MarkerStyle
    >>> style = MarkerStyle(numbered=False)  # radius 0.012 x 1000 = 12 pixels
    >>> target_cover((1000, 500), [(100.0, 100.0)], style, (96.0, 96.0, 104.0, 104.0))  # under the disc
    1.0
    >>> target_cover((1000, 500), [(500.0, 400.0)], style, (96.0, 96.0, 104.0, 104.0))  # far away
    0.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from PIL import Image

from gge.models.markers import MarkerStyle, mark_view

Point = tuple[float, float]
Box = tuple[float, float, float, float]

BACKGROUNDS = ((0, 0, 0), (255, 255, 255))


@lru_cache(maxsize=8)
def _canvas(size: tuple[int, int], color: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", size, color)


def _pixels(box: Box, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The view's pixels whose centres lie in the box: column and row ranges ``[c1, c2) x [r1, r2)``."""
    x1, y1, x2, y2 = box
    c1, r1 = max(0, math.ceil(x1 - 0.5)), max(0, math.ceil(y1 - 0.5))
    c2, r2 = min(size[0], math.floor(x2 - 0.5) + 1), min(size[1], math.floor(y2 - 0.5) + 1)
    if c2 <= c1:  # thinner than a pixel: the pixel it lies in
        c1 = min(max(0, int(x1)), size[0] - 1)
        c2 = c1 + 1
    if r2 <= r1:
        r1 = min(max(0, int(y1)), size[1] - 1)
        r2 = r1 + 1
    return c1, r1, c2, r2


def target_cover(size: tuple[int, int], points: Sequence[Point], style: MarkerStyle, box: Box) -> float:
    """The share of the box's pixels that markers at ``points`` cover, in a view of ``size``.

    Args:
        size: The view's size (the resolution the model sees).
        points: Marker centres in the view's pixels, in candidate order.
        style: The run's marker style.
        box: The target's box in the view's pixels.

    Returns:
        A share in [0, 1].
    """
    c1, r1, c2, r2 = _pixels(box, size)
    covered = np.zeros((r2 - r1, c2 - c1), dtype=bool)
    for color in BACKGROUNDS:
        view = mark_view(_canvas(size, color), points, style)
        for top, band in view.bands:
            lo, hi = max(r1, top), min(r2, top + band.height)
            if lo >= hi:
                continue
            part = np.asarray(band.crop((c1, lo - top, c2, hi - top)))
            covered[lo - r1 : hi - r1] |= np.any(part != np.array(color, dtype=part.dtype), axis=-1)
    return float(covered.mean())


def views_cover(
    size: tuple[int, int], points: Sequence[Point], style: MarkerStyle, box: Box, critic: str
) -> float:
    """The share of the target a critic's views hide: listwise's one view, pointwise's worst.

    Args:
        size: The view's size.
        points: The candidates in the view's pixels.
        style: The marker style.
        box: The target's box in the view's pixels.
        critic: ``listwise`` or ``pointwise``.

    Returns:
        A share in [0, 1].
    """
    if critic == "listwise":
        return target_cover(size, points, style, box)
    reach = max(2.0, style.size * max(size)) * (2 + 2 * style.label_scale)  # beyond it: nothing covers
    near = [
        p
        for p in points
        if box[0] - reach <= p[0] <= box[2] + reach and box[1] - reach <= p[1] <= box[3] + reach
    ]
    return max((target_cover(size, [p], style, box) for p in near), default=0.0)
