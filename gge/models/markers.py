"""Candidate markers drawn on a screenshot for the critic (a pure function of image, points and style).

The COPC paper does not publish its marker style, so every aspect is configurable: shape, size
relative to the image's longer side, colours, outline and numbering. Markers are drawn on the image
at the resolution the model sees, so their size relative to what the model perceives does not
depend on the screenshot's original resolution.

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

from gge.models.encoding import note_copy

SHAPES = ("circle", "cross", "square")

DEFAULT_COLORS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")


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
    out = image.convert("RGB") if image.mode != "RGB" else image.copy()
    if image.mode == "RGB":
        note_copy(out, image)  # an endpoint's PNG of it reuses the screenshot's unchanged rows
    draw = ImageDraw.Draw(out)
    r = max(2.0, style.size * max(out.size))
    width = max(1, round(r / 4))
    font = ImageFont.load_default(size=max(8.0, r * style.label_scale))
    names = list(labels) if labels is not None else [str(i + 1) for i in range(len(points))]
    for i, (x, y) in enumerate(points):
        color = style.colors[i % len(style.colors)]
        box = (x - r, y - r, x + r, y + r)
        if style.shape == "circle":
            draw.ellipse(box, fill=color, outline=style.outline, width=width)
        elif style.shape == "square":
            draw.rectangle(box, fill=color, outline=style.outline, width=width)
        else:
            draw.line((x - r, y - r, x + r, y + r), fill=style.outline, width=width + 2)
            draw.line((x - r, y + r, x + r, y - r), fill=style.outline, width=width + 2)
            draw.line((x - r, y - r, x + r, y + r), fill=color, width=width)
            draw.line((x - r, y + r, x + r, y - r), fill=color, width=width)
        if style.numbered:
            # beside the marker, kept inside the image so the critic can read every label
            left, top, right, bottom = draw.textbbox((0, 0), names[i], font=font, stroke_width=width)
            tx = x + r + 1 if x + r + 1 + right <= out.size[0] else x - r - 1 - right
            ty = min(max(y - r - 1 - bottom, 0 - top), out.size[1] - bottom)
            draw.text(
                (max(tx, -left), ty),
                names[i],
                fill=color,
                font=font,
                stroke_width=width,
                stroke_fill=style.outline,
            )
    return out
