"""The share of a target the critic's markers hide (gge.models.occlusion), against a direct pixel count.

The markers are drawn whole (``draw_markers``, not the banded drawing the measure uses) on a black and a
white screenshot, and the box's pixels that either drawing changed are counted here; the measure must
give the same share for a marker over the box, beside it, far from it, a label over it, several
markers (listwise) and a pointwise critic's worst single-marker view.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from gge.models.markers import MarkerStyle, draw_markers
from gge.models.occlusion import target_cover, views_cover


def _direct(
    size: tuple[int, int],
    points: list[tuple[float, float]],
    style: MarkerStyle,
    box: tuple[int, int, int, int],
) -> float:
    """Pixels (integer box: columns x1..x2-1, rows y1..y2-1) changed by the drawing on either canvas."""
    x1, y1, x2, y2 = box
    changed = np.zeros((y2 - y1, x2 - x1), dtype=bool)
    for color in ((0, 0, 0), (255, 255, 255)):
        drawn = np.asarray(draw_markers(Image.new("RGB", size, color), points, style))[y1:y2, x1:x2]
        changed |= np.any(drawn != np.array(color, dtype=np.uint8), axis=-1)
    return float(changed.mean())


@pytest.mark.parametrize(
    "points,box",
    [
        ([(100.0, 100.0)], (90, 90, 110, 110)),  # the marker over the box
        ([(100.0, 100.0)], (60, 60, 200, 140)),  # a box larger than the marker
        ([(130.0, 100.0)], (90, 90, 110, 110)),  # beside it: part covered
        ([(600.0, 400.0)], (90, 90, 110, 110)),  # far away
        ([(70.0, 120.0)], (86, 96, 120, 124)),  # the label to its right lies on the box
        ([(100.0, 100.0), (115.0, 105.0), (400.0, 50.0)], (80, 80, 140, 130)),  # several markers
    ],
)
@pytest.mark.parametrize(
    "style", [MarkerStyle(), MarkerStyle(shape="cross", size=0.02), MarkerStyle(numbered=False)]
)
def test_the_cover_is_the_direct_count(
    points: list[tuple[float, float]], box: tuple[int, int, int, int], style: MarkerStyle
) -> None:
    size = (800, 500)
    # a box from integer edges at pixel boundaries: x1..x2 covers the pixels x1..x2-1 (centres x + 0.5)
    got = target_cover(size, points, style, (box[0], box[1], box[2], box[3]))
    assert got == pytest.approx(_direct(size, points, style, box), abs=1e-12)


def test_a_pointwise_critic_is_judged_on_its_worst_view_and_a_listwise_on_its_one() -> None:
    size, style, box = (800, 500), MarkerStyle(), (90, 90, 110, 110)
    points = [(100.0, 100.0), (116.0, 100.0), (600.0, 300.0)]  # radius 0.012 x 800 = 9.6 pixels
    singles = [_direct(size, [p], style, box) for p in points]
    assert views_cover(size, points, style, box, "pointwise") == pytest.approx(max(singles), abs=1e-12)
    assert views_cover(size, points, style, box, "listwise") == pytest.approx(
        _direct(size, points, style, box), abs=1e-12
    )
    assert 0 < singles[1] < singles[0] and singles[2] == 0.0
