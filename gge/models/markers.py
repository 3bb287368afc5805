"""Candidate markers drawn on a screenshot for the critic (a pure function of image, points and style).

The COPC paper does not publish its marker style, so every aspect is configurable: shape, size
relative to the image's longer side, colours, outline and numbering. Markers are drawn on the image
at the resolution the model sees, so their size relative to what the model perceives does not
depend on the screenshot's original resolution.

:func:`mark_view` draws them on the few rows they cover (a :class:`MarkedView`: the screenshot and
its marked bands); :func:`draw_markers` is the whole marked image. Both give the same pixels: PIL
draws from integer pixel positions (and a text's fractional offset), and a band starts at a row at or
above every coordinate drawn in it, so a marker drawn on its band lands where it would on the whole
image. An endpoint sends a marked view without ever copying the whole screenshot
(:class:`gge.models.encoding.ImageUrls`: the screenshot's compressed rows and the bands' own).

Example:
    >>> from PIL import Image
    >>> img = Image.new("RGB", (200, 100), "white")
    >>> out = draw_markers(img, [(50.0, 50.0), (150.0, 50.0)], MarkerStyle())
    >>> out.size, img.getpixel((50, 50)), out.getpixel((50, 50)) != (255, 255, 255)
    ((200, 100), (255, 255, 255), True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from PIL import Image, ImageDraw, ImageFont

SHAPES = ("circle", "cross", "square")

DEFAULT_COLORS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")

_MARGIN = 2
"""Rows kept above and below a marker's drawn extent (its outline, stroke and antialiasing)."""


@dataclass(frozen=True)
class MarkerStyle:
    """How candidates are drawn.

    Attributes:
        shape: ``circle``, ``cross`` or ``square``.
        size: Marker radius as a fraction of the image's longer side.
        colors: Fill colours, cycled over candidates (distinct per candidate up to their number).
        outline: Outline colour drawn around each marker for contrast on any background.
        numbered: Draw the candidate's 1-based label next to its marker.
        label_scale: Label font height relative to the marker radius.
    """

    shape: str = "circle"
    size: float = 0.012
    colors: tuple[str, ...] = field(default=DEFAULT_COLORS)
    outline: str = "white"
    numbered: bool = True
    label_scale: float = 2.0

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"unknown marker shape {self.shape!r}; known: {', '.join(SHAPES)}")
        if not 0 < self.size < 0.5:
            raise ValueError(f"marker size must be in (0, 0.5) of the longer side, got {self.size}")
        if not self.colors:
            raise ValueError("marker colors must not be empty")


@dataclass(frozen=True, eq=False)
class MarkedView:
    """A screenshot with markers drawn on it, kept as the screenshot and the bands of rows they cover.

    Attributes:
        base: The unmarked image (RGB), left as it is.
        bands: ``(top, band)`` pairs in row order, not overlapping: ``band`` is rows ``top`` to
            ``top + band.height`` of the marked image, full width. Every other row is ``base``'s.
    """

    base: Image.Image
    bands: tuple[tuple[int, Image.Image], ...]

    @property
    def size(self) -> tuple[int, int]:
        """The marked image's size (the base's)."""
        return self.base.size

    def image(self) -> Image.Image:
        """The whole marked image: a copy of the base with the bands in place.

        Returns:
            A new RGB image.
        """
        out = self.base.copy()
        for top, band in self.bands:
            out.paste(band, (0, top))
        return out


@dataclass(frozen=True)
class _Marker:
    """One candidate's marker and label, in the whole image's pixels."""

    x: float
    y: float
    color: str
    label: tuple[float, float, str] | None  # the label's anchor and text
    first: int  # rows it may touch: first to last, inclusive
    last: int


def _layout(
    size: tuple[int, int],
    points: Sequence[tuple[float, float]],
    style: MarkerStyle,
    labels: Sequence[str] | None,
) -> tuple[list[_Marker], float, int, ImageFont.FreeTypeFont | ImageFont.ImageFont]:
    """Where each marker and label goes in an image of ``size``, and the rows each may touch."""
    w, h = size
    r = max(2.0, style.size * max(size))
    width = max(1, round(r / 4))
    font = ImageFont.load_default(size=max(8.0, r * style.label_scale))
    names = list(labels) if labels is not None else [str(i + 1) for i in range(len(points))]
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    out = []
    for i, (x, y) in enumerate(points):
        # a cross's outline line is width + 2 wide across its ends; a circle's and square's outline
        # is drawn inside their box
        reach = r + width + 2
        ys = [y - reach, y + reach]
        label = None
        if style.numbered:
            # beside the marker, kept inside the image so the critic can read every label
            left, top, right, bottom = measure.textbbox((0, 0), names[i], font=font, stroke_width=width)
            tx = x + r + 1 if x + r + 1 + right <= w else x - r - 1 - right
            ty = min(max(y - r - 1 - bottom, 0 - top), h - bottom)
            label = (max(tx, -left), ty, names[i])
            ys += [ty, ty + top, ty + bottom]  # the anchor too: every coordinate drawn lies in the band
        first = max(0, int(min(ys)) - 1 - _MARGIN)
        last = min(h - 1, int(max(ys)) + 1 + _MARGIN)
        out.append(_Marker(x, y, style.colors[i % len(style.colors)], label, first, last))
    return out, r, width, font


def _bands(markers: Sequence[_Marker]) -> list[tuple[int, int]]:
    """The markers' row spans merged where they overlap or touch: ``(first, last)`` in row order."""
    spans: list[tuple[int, int]] = []
    for first, last in sorted((m.first, m.last) for m in markers if m.first <= m.last):
        if spans and first <= spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], max(spans[-1][1], last))
        else:
            spans.append((first, last))
    return spans


def mark_view(
    image: Image.Image,
    points: Sequence[tuple[float, float]],
    style: MarkerStyle,
    labels: Sequence[str] | None = None,
) -> MarkedView:
    """One marker per point drawn on the rows they cover, the screenshot left untouched.

    Args:
        image: The screenshot at the resolution the model sees.
        points: Marker centres in this image's pixels, in candidate order.
        style: The marker style.
        labels: Text drawn beside each marker (default ``"1"``, ``"2"``...).

    Returns:
        The view: ``image`` (as RGB) and its marked bands; ``.image()`` is :func:`draw_markers`'s image.
    """
    base = image.convert("RGB") if image.mode != "RGB" else image
    w, _ = base.size
    markers, r, width, font = _layout(base.size, points, style, labels)
    spans = _bands(markers)
    bands = [(first, base.crop((0, first, w, last + 1))) for first, last in spans]
    draws = [ImageDraw.Draw(band) for _, band in bands]
    for m in markers:
        if m.first > m.last:  # wholly above or below the image: nothing of it is drawn
            continue
        which = next(i for i, (first, last) in enumerate(spans) if first <= m.first and m.last <= last)
        draw, top = draws[which], bands[which][0]
        x, y0, y1 = m.x, (m.y - r) - top, (m.y + r) - top  # exact: top <= every coordinate drawn
        box = (x - r, y0, x + r, y1)
        if style.shape == "circle":
            draw.ellipse(box, fill=m.color, outline=style.outline, width=width)
        elif style.shape == "square":
            draw.rectangle(box, fill=m.color, outline=style.outline, width=width)
        else:
            draw.line((x - r, y0, x + r, y1), fill=style.outline, width=width + 2)
            draw.line((x - r, y1, x + r, y0), fill=style.outline, width=width + 2)
            draw.line((x - r, y0, x + r, y1), fill=m.color, width=width)
            draw.line((x - r, y1, x + r, y0), fill=m.color, width=width)
        if m.label is not None:
            tx, ty, text = m.label
            draw.text(
                (tx, ty - top), text, fill=m.color, font=font, stroke_width=width, stroke_fill=style.outline
            )
    return MarkedView(base, tuple(bands))


def draw_markers(
    image: Image.Image,
    points: Sequence[tuple[float, float]],
    style: MarkerStyle,
    labels: Sequence[str] | None = None,
) -> Image.Image:
    """A copy of ``image`` with one marker per point (points in this image's pixels).

    Args:
        image: The screenshot at the resolution the model sees.
        points: Marker centres in this image's pixels, in candidate order.
        style: The marker style.
        labels: Text drawn beside each marker (default ``"1"``, ``"2"``...).

    Returns:
        A new RGB image; the input is not modified.
    """
    return mark_view(image, points, style, labels).image()
