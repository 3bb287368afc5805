"""Rules of the refine stage's crop and options that an outside mutation audit found unpinned (issue 26).

The crops are worked out by hand in the comments (the rules are :mod:`gge.models.refine`'s docstring);
each test was checked to fail on the audit's mutant of its rule.
"""

from __future__ import annotations

import pytest

from gge.errors import GgeError
from gge.models.refine import check_refine, crop_region


def test_a_window_at_the_right_edge_keeps_a_pixel_of_a_smaller_decoded_screenshot() -> None:
    # 200 x 100 at zoom 400: a 1 x 1 window (0.5 and 0.25 round to at least 1); x: 199.9 - 0.5 = 199.4 -> 199,
    # (199, 200); y: 50 - 0.5 = 49.5 -> 50, (50, 51). Decoded at 50 x 25 (scale 1/4): x 199 / 4 = 49.75 -> 50,
    # clamped to 50 - 1 = 49 so that one pixel is left, high 200 / 4 = 50; y 12.5 -> 13, 12.75 -> 13, raised
    # to 13 + 1 = 14. The window shown is that cut times 4: (196, 52, 200, 56), 4 x 4.
    crop = crop_region((199.9, 50.0), (200, 100), (50, 25), 400.0)
    assert crop.box == (49, 13, 50, 14)
    x1, _, x2, _ = crop.box
    assert x1 < x2 <= 50
    assert crop.window == (196.0, 52.0, 200.0, 56.0) and crop.size == (4, 4)


def test_a_window_thinner_than_a_decoded_pixel_is_cut_one_pixel_wide() -> None:
    # the window (100, 50, 101, 51) at scale 1/4: x 25 and 25.25 -> 25, y 12.5 and 12.75 -> 13: each high
    # edge is raised to low + 1, so the crop is one decoded pixel, never empty
    crop = crop_region((100.0, 50.0), (200, 100), (50, 25), 400.0)
    assert crop.box == (25, 13, 26, 14)
    x1, y1, x2, y2 = crop.box
    assert x1 < x2 and y1 < y2
    assert crop.window == (100.0, 52.0, 104.0, 56.0) and crop.size == (4, 4)


def test_a_refine_radius_of_zero_is_accepted_and_a_negative_one_refused() -> None:
    check_refine("zoom", 2.0, "disagree", 0.0, 0.5, "none")  # any other point disagrees: no error
    with pytest.raises(GgeError, match=r"model\.refine_radius must be a fraction >= 0 .*got -0\.1"):
        check_refine("zoom", 2.0, "disagree", -0.1, 0.5, "none")
