"""Screenshots with the target, every candidate and the pick drawn: why a sample hits or misses.

Pure functions over pillow images: the input image is never modified, a new RGB image is returned.
Points and regions are in pixels of the original screenshot (``sample.image_size``); they are scaled
per axis into the thumbnail, so the image passed may be the original or a pre-resized copy.

Drawing conventions (kept stable; the W&B tables use the same colours for their box layers):

* the target: a box outline (normalized boxes via :meth:`gge.types.Box.pixel_box`), a polygon
  outline, or for :class:`~gge.types.Absent` a "target absent" banner in the top-left corner;
* every candidate: a filled disc, green when it hits and red when it misses, with its proposer rank
  (1-based) in a tag beside it; rank 1 is drawn last (on top);
* the pick of the selection strategy: a yellow ring around its point;
* a legend line at the bottom-left: the pick (``critic pick: #2 miss``, ``abstain``, ``new point``
  for an aggregated point, ``none``) and the ranks of abstaining candidates.

Example:
    >>> from PIL import Image
    >>> from gge.scoring.scoring import score_sample
    >>> from gge.types import Box, Candidate, Prediction, Sample
    >>> s = Sample("demo", "0", "/x.png", (1920, 1080), "click OK", Box(100, 100, 300, 200))
    >>> r = score_sample(s, Prediction("demo", "0", (Candidate((200, 150), 0.9),)), k=5)
    >>> img = draw_overlay(Image.new("RGB", (1920, 1080), "gray"), s, r, "critic")
    >>> img.size, img.getpixel((100, 75))  # (200, 150) scaled by 0.5: a green disc
    ((960, 540), (0, 200, 0))
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from gge.types import Absent, Candidate, Polygon, Region, Sample, SampleResult

RGB = tuple[int, int, int]
Scale = tuple[float, float]

TARGET_COLOUR: RGB = (0, 120, 255)
"""Target box / polygon outline and the absent banner."""
HIT_COLOUR: RGB = (0, 200, 0)
"""A candidate that hits."""
MISS_COLOUR: RGB = (220, 0, 0)
"""A candidate that misses."""
PICK_COLOUR: RGB = (255, 210, 0)
"""The ring around the selection strategy's pick."""
TEXT_COLOUR: RGB = (255, 255, 255)
OUTLINE_COLOUR: RGB = (0, 0, 0)

ABSENT_TEXT = "target absent"


def thumbnail(image: Image.Image, max_width: int = 960) -> tuple[Image.Image, float]:
    """An RGB copy of ``image``, downscaled (never upscaled) to at most ``max_width`` pixels wide.

    Args:
        image: Any pillow image (it is not modified).
        max_width: Largest width of the result, in pixels (>= 1).

    Returns:
        ``(thumbnail, scale)``: the new image and its width over the input's width (1.0 when the
        image was narrow enough). The height keeps the aspect ratio (rounded, at least 1 pixel).

    Example:
        >>> from PIL import Image
        >>> thumb, scale = thumbnail(Image.new("RGB", (1280, 720)))
        >>> thumb.size, scale
        ((960, 540), 0.75)
        >>> thumbnail(Image.new("L", (400, 800)))[0].mode, thumbnail(Image.new("L", (400, 800)))[1]
        ('RGB', 1.0)
    """
    if max_width < 1:
        raise ValueError(f"max_width must be >= 1, got {max_width}")
    w, h = image.size
    if w <= max_width:
        return (image.copy() if image.mode == "RGB" else image.convert("RGB")), 1.0
    rgb = image if image.mode == "RGB" else image.convert("RGB")  # resize returns a new image
    new_h = max(1, round(h * max_width / w))
    return rgb.resize((max_width, new_h), Image.Resampling.BILINEAR, reducing_gap=2.0), max_width / w


def point_scale(image_size: tuple[int, int], thumb_size: tuple[int, int]) -> Scale:
    """Per-axis factors from original-image pixels (``sample.image_size``) to thumbnail pixels.

    Args:
        image_size: (width, height) the sample's points and regions are given in.
        thumb_size: (width, height) of the thumbnail.

    Returns:
        ``(sx, sy)``.

    Example:
        >>> point_scale((1280, 720), (960, 540))
        (0.75, 0.75)
    """
    return thumb_size[0] / image_size[0], thumb_size[1] / image_size[1]


def scaled_region_box(region: Region, scale: Scale) -> tuple[float, float, float, float] | None:
    """The region's pixel box (a polygon's bounding box) in thumbnail pixels, or None when absent.

    Args:
        region: The target region.
        scale: Per-axis factors from :func:`point_scale`.

    Returns:
        ``(x1, y1, x2, y2)`` scaled, or None for :class:`~gge.types.Absent`.

    Example:
        >>> from gge.types import Box
        >>> scaled_region_box(Box(0.5, 0.5, 1.0, 1.0, space="normalized", size=(200, 100)), (0.5, 0.5))
        (50.0, 25.0, 100.0, 50.0)
    """
    box = region.pixel_box()
    if box is None:
        return None
    x1, y1, x2, y2 = box
    sx, sy = scale
    return (x1 * sx, y1 * sy, x2 * sx, y2 * sy)


def thumb_point(
    point: tuple[float, float], scale: Scale, thumb_size: tuple[int, int]
) -> tuple[float, float, bool]:
    """A point in thumbnail pixels, clipped onto the thumbnail, and whether it was off the image.

    A policy may answer far off the screen (an RL policy emitting ``1e19``); such a point is drawn at
    the nearest edge and marked, so drawing never fails and the miss stays visible.

    Args:
        point: (x, y) in original-image pixels.
        scale: Per-axis factors from :func:`point_scale`.
        thumb_size: (width, height) of the thumbnail.

    Returns:
        ``(x, y, off_image)``.

    Example:
        >>> thumb_point((100, 50), (0.5, 0.5), (960, 540))
        (50.0, 25.0, False)
        >>> thumb_point((1e19, -3), (0.5, 0.5), (960, 540))
        (959.0, 0.0, True)
    """
    x, y = point[0] * scale[0], point[1] * scale[1]
    w, h = thumb_size
    cx, cy = min(max(x, 0.0), float(w - 1)), min(max(y, 0.0), float(h - 1))
    return cx, cy, (cx, cy) != (x, y)


def marker_radius(thumb_size: tuple[int, int]) -> int:
    """Radius in pixels of a candidate marker on a thumbnail of this size (at least 5).

    Example:
        >>> marker_radius((960, 540))
        7
    """
    return max(5, round(min(thumb_size) / 80))


@lru_cache(maxsize=8)
def tag_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """The font of the rank tags, the legend and the absent banner at ``size`` pixels.

    Pillow's default FreeType font, or its fixed bitmap font where pillow has no FreeType. A caller
    that measures a tag (``draw.textbbox(xy, text, font=tag_font(size))``) sees the box drawn.

    Example:
        >>> tag_font(12) is tag_font(12)  # made once per size
        True
    """
    try:
        return ImageFont.load_default(size=size)
    except (ImportError, OSError, TypeError):  # no FreeType: pillow's bitmap font
        return ImageFont.load_default()


def _line_width(thumb_size: tuple[int, int]) -> int:
    return max(3, round(min(thumb_size) / 180))


def _draw_text_tag(
    draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, fill: RGB, size: int
) -> None:
    """A filled tag with white text whose top-left corner is at ``xy``."""
    font = tag_font(size)
    left, top, right, bottom = draw.textbbox(xy, text, font=font)
    draw.rectangle((left - 2, top - 2, right + 2, bottom + 2), fill=fill)
    draw.text(xy, text, fill=TEXT_COLOUR, font=font)


def _draw_target(draw: ImageDraw.ImageDraw, region: Region, scale: Scale, size: tuple[int, int]) -> None:
    """Draw the target: box outline, polygon outline, or the absent banner."""
    width = _line_width(size)
    if isinstance(region, Absent):
        font = tag_font(max(11, marker_radius(size) * 2))
        _, _, right, bottom = draw.textbbox((6, 4), ABSENT_TEXT, font=font)
        draw.rectangle((0, 0, right + 6, bottom + 6), fill=TARGET_COLOUR)
        draw.text((6, 4), ABSENT_TEXT, fill=TEXT_COLOUR, font=font)
    elif isinstance(region, Polygon):
        if region.vertices:
            sx, sy = scale
            pts = [(x * sx, y * sy) for x, y in region.vertices]
            draw.line([*pts, pts[0]], fill=TARGET_COLOUR, width=width, joint="curve")
    else:
        box = scaled_region_box(region, scale)
        assert box is not None
        x1, y1, x2, y2 = box
        draw.rectangle(
            (min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)), outline=TARGET_COLOUR, width=width
        )


def target_thumbnail(
    image: Image.Image, sample: Sample, *, max_width: int = 960
) -> tuple[Image.Image, Scale]:
    """A thumbnail with only what box layers cannot show: a polygon's outline, the absent banner.

    Box targets are left undrawn (a viewer with box layers, such as W&B, draws them).

    Args:
        image: The screenshot (not modified).
        sample: The sample (its region and ``image_size``).
        max_width: Largest width of the thumbnail.

    Returns:
        ``(thumbnail, (sx, sy))``, the per-axis factors from original pixels to thumbnail pixels.

    Example:
        >>> from PIL import Image
        >>> from gge.types import Absent, Sample
        >>> s = Sample("demo", "0", "/x.png", (1280, 720), "open the menu", Absent())
        >>> thumb, scale = target_thumbnail(Image.new("RGB", (1280, 720)), s)
        >>> thumb.size, scale, thumb.getpixel((3, 3))
        ((960, 540), (0.75, 0.75), (0, 120, 255))
    """
    thumb, _ = thumbnail(image, max_width)
    scale = point_scale(sample.image_size, thumb.size)
    if isinstance(sample.region, (Absent, Polygon)):
        _draw_target(ImageDraw.Draw(thumb), sample.region, scale, thumb.size)
    return thumb, scale


def _pick_rank(candidates: Sequence[Candidate], pick: Candidate | None) -> int | None:
    """The 1-based rank of the pick among the candidates (same object first, else equal), or None."""
    if pick is None:
        return None
    for i, c in enumerate(candidates):
        if c is pick:
            return i + 1
    for i, c in enumerate(candidates):
        if c == pick:
            return i + 1
    return None


def pick_rank(result: SampleResult, strategy: str) -> int | None:
    """The proposer rank (1-based) of the strategy's pick, or None (no pick, or a new point).

    Aggregating strategies (``mean``...) return a new point that is none of the candidates.

    Example:
        >>> from gge.scoring.scoring import score_sample
        >>> from gge.types import Box, Candidate, Prediction, Sample
        >>> s = Sample("demo", "0", "/x.png", (100, 100), "click", Box(0, 0, 10, 10))
        >>> p = Prediction("demo", "0", (Candidate((5, 5), 0.1), Candidate((50, 50), 0.8)))
        >>> r = score_sample(s, p, k=2)
        >>> pick_rank(r, "critic"), pick_rank(r, "first"), pick_rank(r, "mean")
        (2, 1, None)
    """
    return _pick_rank(result.candidates, result.picks.get(strategy))


def _pick_legend(result: SampleResult, strategy: str) -> str:
    """``"<strategy> pick: #2 miss"`` (or ``abstain``, ``none``, ``mean point hit``)."""
    pick = result.picks.get(strategy)
    if pick is None:
        return f"{strategy} pick: none"
    outcome = "hit" if result.top1.get(strategy, False) else "miss"
    rank = pick_rank(result, strategy)
    what = f"#{rank}" if rank is not None else ("abstain" if pick.point is None else "new point")
    if pick.point is None and rank is not None:
        what += " (abstain)"
    return f"{strategy} pick: {what} {outcome}"


def draw_overlay(
    image: Image.Image,
    sample: Sample,
    result: SampleResult,
    strategy: str,
    *,
    max_width: int = 960,
) -> Image.Image:
    """A thumbnail of the screenshot with the target, every candidate and the strategy's pick drawn.

    Args:
        image: The screenshot (the original, or a resized copy); it is not modified.
        sample: The sample: its region and ``image_size`` (the pixel space of points and regions).
        result: The scored result: candidates in proposer order, their hits, the picks.
        strategy: The selection strategy whose pick is ringed.
        max_width: Largest width of the result.

    Returns:
        A new RGB image at most ``max_width`` wide (see the module docstring for the conventions).

    Example:
        >>> from PIL import Image
        >>> from gge.scoring.scoring import score_sample
        >>> from gge.types import Box, Candidate, Prediction, Sample
        >>> s = Sample("demo", "0", "/x.png", (400, 800), "click OK", Box(10, 10, 100, 50))
        >>> p = Prediction("demo", "0", (Candidate((50, 30), 0.2), Candidate((300, 600), 0.7)))
        >>> img = draw_overlay(Image.new("RGB", (400, 800), "gray"), s, score_sample(s, p, k=2), "critic")
        >>> img.size, img.getpixel((50, 30)), img.getpixel((300, 600))
        ((400, 800), (0, 200, 0), (220, 0, 0))
    """
    thumb, _ = thumbnail(image, max_width)
    scale = point_scale(sample.image_size, thumb.size)
    draw = ImageDraw.Draw(thumb)
    _draw_target(draw, sample.region, scale, thumb.size)

    radius = marker_radius(thumb.size)
    legend = [_pick_legend(result, strategy)]  # under the markers: they matter more
    abstained = [rank for rank, c in enumerate(result.candidates, start=1) if c.point is None]
    if abstained:
        legend.append("abstain: " + ", ".join(f"#{r}" for r in abstained))
    off = [
        rank
        for rank, c in enumerate(result.candidates, start=1)
        if c.point is not None and thumb_point(c.point, scale, thumb.size)[2]
    ]
    if off:
        legend.append("off image (drawn at the edge): " + ", ".join(f"#{r}" for r in off))
    size = max(11, radius * 2)
    _draw_text_tag(draw, (4, thumb.size[1] - size - 6), "   ".join(legend), OUTLINE_COLOUR, size)

    pick = result.picks.get(strategy)
    if pick is not None and pick.point is not None:  # under the markers, so their tags stay readable
        x, y, _ = thumb_point(pick.point, scale, thumb.size)
        ring = radius * 2
        width = _line_width(thumb.size)
        draw.ellipse(
            (x - ring - 1, y - ring - 1, x + ring + 1, y + ring + 1), outline=OUTLINE_COLOUR, width=1
        )
        draw.ellipse((x - ring, y - ring, x + ring, y + ring), outline=PICK_COLOUR, width=width)

    font_size = max(10, round(radius * 1.6))
    ranked = list(enumerate(zip(result.candidates, result.hits, strict=True), start=1))
    tags: list[tuple[float, float, str, RGB]] = []
    for rank, (cand, hit) in reversed(ranked):  # rank 1 ends on top
        if cand.point is None:
            continue
        x, y, outside = thumb_point(cand.point, scale, thumb.size)
        colour = HIT_COLOUR if hit else MISS_COLOUR
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=colour, outline=OUTLINE_COLOUR)
        tags.append((x, y, f"{rank} off" if outside else str(rank), colour))
    # Tags after every disc, rank 1 first: none hidden under a marker, none on top of another.
    tags.reverse()
    for (_, _, text, colour), xy in zip(
        tags, place_tags(draw, tags, radius, font_size, thumb.size), strict=True
    ):
        _draw_text_tag(draw, xy, text, colour, font_size)
    return thumb


def place_tags(
    draw: ImageDraw.ImageDraw,
    tags: Sequence[tuple[float, float, str, RGB]],
    radius: int,
    font_size: int,
    size: tuple[int, int],
) -> list[tuple[float, float]]:
    """Top-left corners for the markers' rank tags, in order, so that no two tags overlap.

    Each tag goes beside its marker (right and above; left / below at the right / top edge); when that
    spot is taken by an earlier tag (clustered candidates), it moves down, then up, a tag height at a
    time, staying on the image, and falls back to its first spot only when every try is taken.

    Args:
        draw: The drawing (measures the text).
        tags: ``(x, y, text, colour)`` per marker, in the order tags get their spots.
        radius: Marker radius.
        font_size: Tag font size.
        size: Image (width, height).

    Returns:
        One ``(x, y)`` per tag.
    """
    font = tag_font(font_size)
    taken: list[tuple[float, float, float, float]] = []
    out = []
    for x, y, text, _ in tags:
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        w, h = right - left + 4, bottom - top + 4
        tx = x + radius + 2 if x + radius + 2 + w < size[0] else x - radius - 2 - w
        ty = y - radius - font_size if y > font_size + radius else y + radius
        spot = (tx, ty)
        for step in [0, *(s for i in range(1, 2 * len(tags) + 2) for s in (i, -i))]:
            cy = ty + step * (h + 1)
            box = (tx + left - 2, cy + top - 2, tx + left - 2 + w, cy + top - 2 + h)
            if box[1] < 0 or box[3] > size[1]:
                continue
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
                spot = (tx, cy)
                taken.append(box)
                break
        out.append(spot)
    return out


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
    "tag_font",
    "target_thumbnail",
    "thumb_point",
    "thumbnail",
]
