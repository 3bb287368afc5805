"""A records row's target in its declared format and units: the conversion, and what is refused.

:func:`unit_box` and :func:`unit_polygon` turn a ``bbox`` / ``polygon`` in the declared ``box_format``
and ``units`` into the sample's region; :func:`check_box` and :func:`check_polygon` refuse first, in
one line naming ``file:line`` and the column, a target that cannot be in those units or that format:
a normalised coordinate outside [0, 1] (``norm_1``) or [0, 1000] (``norm_1000``) by more than
:data:`TOLERANCE` of the range, an inverted box (x2 < x1 or y2 < y1 after the ``xywh`` conversion),
a polygon of fewer than 3 vertices, a pixel box or polygon entirely outside the image.

Example:
    >>> unit_box([100, 50, 20, 10], "xywh", "pixels", (200, 100)).pixel_box()
    (100.0, 50.0, 120.0, 60.0)
"""

from __future__ import annotations

from collections.abc import Sequence

from gge.errors import GgeError
from gge.types import Box, Point, Polygon

SCALES = {"norm_1": 1.0, "norm_1000": 1000.0}
"""The range [0, scale] of each normalised unit."""
TOLERANCE = 1e-6
"""How far (a fraction of the range) a normalised coordinate may lie outside [0, scale]: rounding."""


def unit_box(values: Sequence[float], box_format: str, units: str, size: tuple[int, int]) -> Box:
    """The target box of a ``bbox`` in the declared format and units.

    Args:
        values: The four numbers.
        box_format: ``xyxy`` or ``xywh``.
        units: ``pixels``, ``norm_1`` or ``norm_1000``.
        size: Image (width, height) (the size a normalised box is tested against).

    Returns:
        A pixel box, or a normalised box (``space="normalized"``) for ``norm_1`` / ``norm_1000``.

    Example:
        >>> unit_box([250, 500, 750, 1000], "xyxy", "norm_1000", (400, 200)).pixel_box()
        (100.0, 100.0, 300.0, 200.0)
    """
    x1, y1, x2, y2 = corners(values, box_format)
    if units == "pixels":
        return Box(x1, y1, x2, y2)
    scale = SCALES[units]
    return Box(x1 / scale, y1 / scale, x2 / scale, y2 / scale, space="normalized", size=size)


def corners(values: Sequence[float], box_format: str) -> tuple[float, float, float, float]:
    """``(x1, y1, x2, y2)`` of a bbox in the declared format, in its own units.

    Example:
        >>> corners([100, 50, 20, 10], "xywh")
        (100.0, 50.0, 120.0, 60.0)
    """
    x1, y1, a, b = (float(v) for v in values)
    return (x1, y1, x1 + a, y1 + b) if box_format == "xywh" else (x1, y1, a, b)


def _in_range(value: float, units: str) -> bool:
    """Whether a normalised coordinate lies in [0, scale], up to :data:`TOLERANCE` of the range."""
    scale = SCALES[units]
    return -TOLERANCE * scale <= value <= scale * (1 + TOLERANCE)


def check_box(
    values: Sequence[float], box_format: str, units: str, size: tuple[int, int] | None, where: str
) -> None:
    """Refuse a bbox that cannot be in the declared format and units (one-line GgeError).

    Args:
        values: The four numbers, as the row gives them.
        box_format: ``xyxy`` or ``xywh``.
        units: ``pixels``, ``norm_1`` or ``norm_1000``.
        size: Image (width, height), or None when it is not known.
        where: ``file:line`` for the message.

    Raises:
        GgeError: for a normalised coordinate outside its range, an inverted box, or a pixel box
            entirely outside the image.

    Example:
        >>> try:
        ...     check_box([100, 50, 20, 10], "xyxy", "pixels", (200, 100), "my.jsonl:3")
        ... except GgeError as e:
        ...     print(str(e)[:86])
        my.jsonl:3: column 'bbox': [100, 50, 20, 10] read as xyxy is inverted (x2 20 < x1 100)
    """
    x1, y1, x2, y2 = corners(values, box_format)
    shown = _show_numbers(values)
    if units in SCALES:
        for name, value in zip(("x1", "y1", "x2", "y2"), (x1, y1, x2, y2), strict=True):
            if not _in_range(value, units):
                raise GgeError(
                    f"{where}: column 'bbox': {shown} read as {box_format} has {name} = {_num(value)}, "
                    f"outside [0, {_num(SCALES[units])}] for units={units} (are the boxes in other units?)"
                )
    for a, b, lo, hi in (("x1", "x2", x1, x2), ("y1", "y2", y1, y2)):
        if hi < lo:
            why = (
                "a negative width or height"
                if box_format == "xywh"
                else "xywh boxes declared xyxy read this way (set box_format=xywh)"
            )
            raise GgeError(
                f"{where}: column 'bbox': {shown} read as {box_format} is inverted "
                f"({b} {_num(hi)} < {a} {_num(lo)}): {why}"
            )
    if units == "pixels" and size is not None and _outside((x1, y1, x2, y2), size):
        raise GgeError(
            f"{where}: column 'bbox': the pixel box {_show_numbers([x1, y1, x2, y2])} lies entirely outside "
            f"the {size[0]}x{size[1]} image (are the boxes in other units?)"
        )


def check_polygon(vertices: Sequence[Point], units: str, size: tuple[int, int] | None, where: str) -> None:
    """Refuse a polygon that cannot be in the declared units (one-line GgeError).

    Args:
        vertices: The (x, y) pairs, as the row gives them.
        units: ``pixels``, ``norm_1`` or ``norm_1000``.
        size: Image (width, height), or None when it is not known.
        where: ``file:line`` for the message.

    Raises:
        GgeError: for fewer than 3 vertices, a normalised coordinate outside its range, or a pixel
            polygon entirely outside the image.
    """
    if len(vertices) < 3:
        raise GgeError(f"{where}: column 'polygon' has {len(vertices)} vertices: a polygon needs at least 3")
    if units in SCALES:
        for i, (x, y) in enumerate(vertices):
            if not (_in_range(x, units) and _in_range(y, units)):
                raise GgeError(
                    f"{where}: column 'polygon': vertex {i} [{_num(x)}, {_num(y)}] lies outside "
                    f"[0, {_num(SCALES[units])}] for units={units} (are the vertices in other units?)"
                )
    elif size is not None:
        xs, ys = [v[0] for v in vertices], [v[1] for v in vertices]
        if _outside((min(xs), min(ys), max(xs), max(ys)), size):
            raise GgeError(
                f"{where}: column 'polygon' lies entirely outside the {size[0]}x{size[1]} image "
                "(are the vertices in other units?)"
            )


def _outside(box: tuple[float, float, float, float], size: tuple[int, int]) -> bool:
    """Whether a pixel box shares no point with the image [0, width] x [0, height]."""
    x1, y1, x2, y2 = box
    return x2 < 0 or y2 < 0 or x1 > size[0] or y1 > size[1]


def _num(value: float) -> str:
    """A coordinate for a message: ``20`` for 20.0, else its repr."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))


def _show_numbers(values: Sequence[float]) -> str:
    """``[100, 50, 20, 10]``: the numbers as a message shows them."""
    return "[" + ", ".join(_num(v) for v in values) + "]"


def unit_polygon(vertices: Sequence[Point], units: str, size: tuple[int, int]) -> Polygon:
    """A polygon in pixels from vertices in the declared units.

    Args:
        vertices: (x, y) pairs.
        units: ``pixels``, ``norm_1`` or ``norm_1000``.
        size: Image (width, height).

    Returns:
        The polygon, vertices in pixels.
    """
    if units == "pixels":
        return Polygon(tuple((float(x), float(y)) for x, y in vertices))
    scale = SCALES[units]
    w, h = size
    return Polygon(tuple((x / scale * w, y / scale * h) for x, y in vertices))
