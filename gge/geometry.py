"""Pure geometric tests used by the official scoring rules.

Example:
    >>> point_in_box(5, 5, 0, 0, 5, 5)
    True
    >>> point_in_polygon(1.0, 1.0, ((0, 0), (4, 0), (4, 4), (0, 4)))
    True
"""

from __future__ import annotations

import math
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


# ----------------------------------------------------------------------------------------------
# Coordinate conventions: what a model's numbers mean, converted once to original-image pixels.

CONVENTIONS = ("abs_original", "abs_resized", "norm_1000", "norm_999", "norm_1")
"""The coordinate conventions a model adapter may declare (FORMATS.md, last table)."""

_SCALE = {"norm_1000": 1000.0, "norm_999": 999.0, "norm_1": 1.0}


def smart_resize(
    height: int,
    width: int,
    *,
    factor: int = 28,
    min_pixels: int = 56 * 56,
    max_pixels: int = 14 * 14 * 4 * 1280,
) -> tuple[int, int]:
    """The size the Qwen-VL processors resize an image to (both sides multiples of ``factor``).

    Each side is rounded to the nearest multiple of ``factor``; if the area then exceeds
    ``max_pixels`` (or falls below ``min_pixels``) both sides are scaled by one factor, floored (or
    ceiled) to multiples of ``factor``, keeping the aspect ratio as far as the grid allows.

    Args:
        height: Original height.
        width: Original width.
        factor: Patch size times spatial merge size (28 for Qwen2/2.5-VL, 32 for Qwen3-VL).
        min_pixels: Smallest area allowed.
        max_pixels: Largest area allowed.

    Returns:
        (height, width) after resizing.

    Example:
        >>> smart_resize(720, 1280)
        (728, 1288)
        >>> smart_resize(1080, 1920, max_pixels=50_000)
        (140, 280)
    """
    if height < 1 or width < 1:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def to_original(
    x: float,
    y: float,
    convention: str,
    original_size: tuple[int, int],
    seen_size: tuple[int, int] | None = None,
) -> tuple[float, float]:
    """Convert a model's point to pixels of the original screenshot.

    Args:
        x: The model's x.
        y: The model's y.
        convention: One of :data:`CONVENTIONS`.
        original_size: (width, height) of the original screenshot.
        seen_size: (width, height) of the image the model saw; required for ``abs_resized``.

    Returns:
        (x, y) in original pixels.

    Example:
        >>> to_original(500, 500, "norm_1000", (1920, 1080))
        (960.0, 540.0)
        >>> to_original(644, 364, "abs_resized", (1280, 720), (1288, 728))
        (640.0, 360.0)
    """
    w, h = original_size
    if convention == "abs_original":
        return float(x), float(y)
    if convention == "abs_resized":
        if seen_size is None:
            raise ValueError("abs_resized needs the size of the image the model saw")
        return x * w / seen_size[0], y * h / seen_size[1]
    if convention in _SCALE:
        s = _SCALE[convention]
        return x / s * w, y / s * h
    raise ValueError(f"unknown coordinate convention {convention!r}; known: {', '.join(CONVENTIONS)}")


def from_original(
    x: float,
    y: float,
    convention: str,
    original_size: tuple[int, int],
    seen_size: tuple[int, int] | None = None,
) -> tuple[float, float]:
    """The inverse of :func:`to_original`: original pixels to a model's units.

    Example:
        >>> from_original(960, 540, "norm_1000", (1920, 1080))
        (500.0, 500.0)
    """
    w, h = original_size
    if convention == "abs_original":
        return float(x), float(y)
    if convention == "abs_resized":
        if seen_size is None:
            raise ValueError("abs_resized needs the size of the image the model saw")
        return x * seen_size[0] / w, y * seen_size[1] / h
    if convention in _SCALE:
        s = _SCALE[convention]
        return x / w * s, y / h * s
    raise ValueError(f"unknown coordinate convention {convention!r}; known: {', '.join(CONVENTIONS)}")
