"""The overlay drawing, moved to :mod:`gge.drawing` (floor 0, below both the report and the loggers).

Its public names, for the importers not yet moved to :mod:`gge.drawing` (:mod:`gge.loggers.dispatch`);
this module goes once they import :mod:`gge.drawing` themselves.
"""

from __future__ import annotations

from gge.drawing import (
    ABSENT_TEXT,
    HIT_COLOUR,
    MISS_COLOUR,
    PICK_COLOUR,
    TARGET_COLOUR,
    draw_overlay,
    marker_radius,
    pick_rank,
    place_tags,
    point_scale,
    scaled_region_box,
    target_thumbnail,
    thumb_point,
    thumbnail,
)

__all__ = [
    "ABSENT_TEXT",
    "HIT_COLOUR",
    "MISS_COLOUR",
    "PICK_COLOUR",
    "TARGET_COLOUR",
    "draw_overlay",
    "marker_radius",
    "pick_rank",
    "place_tags",
    "point_scale",
    "scaled_region_box",
    "target_thumbnail",
    "thumb_point",
    "thumbnail",
]
