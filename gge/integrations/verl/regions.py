"""Regions as plain JSON: how a ground truth stores a sample's target, with its official hit test."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gge.errors import GgeError
from gge.types import Absent, Box, Polygon, Region


def region_to_json(region: Region) -> dict[str, Any]:
    """A region as plain JSON, in its official space (rebuilt by :func:`region_from_json`).

    Example:
        >>> region_to_json(Box(0.1, 0.2, 0.3, 0.4, "normalized", (100, 50)))
        {'type': 'bbox', 'x1': 0.1, 'y1': 0.2, 'x2': 0.3, 'y2': 0.4, 'space': 'normalized', 'size': [100, 50]}
        >>> region_from_json(region_to_json(Polygon(((0, 0), (4, 0), (4, 4))))).contains(3, 1)
        True
        >>> region_to_json(Box(0, 0, 100, 10, integer_point=True))["integer_point"]  # showdown-clicks
        True
        >>> region_to_json(Absent(abstention_hits=False))  # OSWorld-G refusals=miss: nothing hits it
        {'type': 'refusal', 'abstention_hits': False}
    """
    if isinstance(region, Box):
        out: dict[str, Any] = {
            "type": "bbox",
            "x1": region.x1,
            "y1": region.y1,
            "x2": region.x2,
            "y2": region.y2,
            "space": region.space,
            "size": None if region.size is None else [region.size[0], region.size[1]],
        }
        if region.integer_point:  # written only when set: other boxes export as before
            out["integer_point"] = True
        if region.strict:  # GroundUI: the edges are not inside
            out["strict"] = True
        return out
    if isinstance(region, Polygon):
        return {"type": "polygon", "vertices": [[x, y] for x, y in region.vertices]}
    return {"type": "refusal"} if region.abstention_hits else {"type": "refusal", "abstention_hits": False}


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _size(value: Any, what: str) -> tuple[int, int]:
    if not (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise GgeError(f"{what} must be [width, height] in positive integers, got {value!r}")
    return (int(value[0]), int(value[1]))


def region_from_json(obj: Any) -> Region:
    """The region :func:`region_to_json` wrote, with the same official hit test.

    Raises:
        GgeError: for a malformed region.
    """
    if not isinstance(obj, Mapping) or "type" not in obj:
        raise GgeError(f"region must be an object with a 'type', got {obj!r}")
    kind = obj["type"]
    if kind == "bbox":
        coords = [obj.get(key) for key in ("x1", "y1", "x2", "y2")]
        space = obj.get("space", "pixel")
        if not all(_num(c) for c in coords) or space not in ("pixel", "normalized"):
            raise GgeError(
                f"region: a bbox needs finite x1, y1, x2, y2 and space pixel|normalized, got {obj!r}"
            )
        size = None if obj.get("size") is None else _size(obj["size"], "region.size")
        integer_point, strict = obj.get("integer_point", False), obj.get("strict", False)
        if not isinstance(integer_point, bool) or not isinstance(strict, bool):
            raise GgeError(
                f"region: a bbox's integer_point and strict must be true or false, got {integer_point!r}, "
                f"{strict!r}"
            )
        try:
            x1, y1, x2, y2 = (float(c) for c in coords)  # type: ignore[arg-type]
            return Box(x1, y1, x2, y2, space=space, size=size, integer_point=integer_point, strict=strict)
        except ValueError as e:
            raise GgeError(f"region: {e}") from None
    if kind == "polygon":
        verts = obj.get("vertices")
        if not isinstance(verts, list) or not all(
            isinstance(v, list) and len(v) == 2 and all(_num(c) for c in v) for v in verts
        ):
            raise GgeError(f"region: a polygon needs vertices [[x, y], ...], got {verts!r}")
        return Polygon(tuple((float(v[0]), float(v[1])) for v in verts))
    if kind == "refusal":
        hits = obj.get("abstention_hits", True)
        if not isinstance(hits, bool):
            raise GgeError(f"region: a refusal's abstention_hits must be true or false, got {hits!r}")
        return Absent(abstention_hits=hits)
    raise GgeError(f"region: unknown type {kind!r}; known: bbox, polygon, refusal")
