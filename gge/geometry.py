"""Pure geometric tests used by the official scoring rules.

Example:
    >>> point_in_box(5, 5, 0, 0, 5, 5)
    True
    >>> point_in_polygon(1.0, 1.0, ((0, 0), (4, 0), (4, 4), (0, 4)))
    True
"""

from __future__ import annotations

from collections.abc import Sequence


def point_in_box(x: float, y: float, x1: float, y1: float, x2: float, y2: float) -> bool:
    """Inclusive point-in-box test, exactly as written: ``x1 <= x <= x2 and y1 <= y <= y2``.

    The corners are not reordered: an inverted box (x1 > x2) contains no point, a zero-area box
    contains exactly its edge points. Benchmarks that swap corners do so when they load.

    Args:
        x: Point x.
        y: Point y.
        x1: Left edge.
        y1: Top edge.
        x2: Right edge.
        y2: Bottom edge.

    Returns:
        Whether the point lies in the box, edges included.
    """
    return x1 <= x <= x2 and y1 <= y <= y2


def point_in_polygon(x: float, y: float, vertices: Sequence[tuple[float, float]]) -> bool:
    """Even-odd ray casting (PNPOLY), the rule of OSWorld-G's official evaluator.

    A horizontal ray is cast from the point towards +x; each edge it crosses toggles the state.
    An edge counts when its end points lie strictly on opposite sides of the ray's half-open test
    ``(yi > y) != (yj > y)`` and the crossing lies strictly right of the point. Points on the boundary
    follow from that arithmetic (for an axis-aligned square: the edges of smaller x and smaller y are
    in, those of larger x and larger y are out); they are not special-cased.

    Args:
        x: Point x.
        y: Point y.
        vertices: Polygon vertices in order; the last connects back to the first.

    Returns:
        Whether the point is inside by the even-odd rule.
    """
    inside = False
    n = len(vertices)
    j = n - 1
    for i in range(n):
        xi, yi = vertices[i]
        xj, yj = vertices[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            inside = not inside
        j = i
    return inside
