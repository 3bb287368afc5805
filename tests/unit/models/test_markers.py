"""Markers drawn on their bands are the pixels drawn on the whole image, and the bands hold them all."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from gge.models.markers import SHAPES, MarkerStyle, draw_markers, mark_view


def _whole_image_reference(
    image: Image.Image, points: Sequence[tuple[float, float]], style: MarkerStyle
) -> Image.Image:
    """The markers drawn straight onto a copy of the whole image (gge's drawing before bands)."""
    out = image.convert("RGB")
    draw = ImageDraw.Draw(out)
    r = max(2.0, style.size * max(out.size))
    width = max(1, round(r / 4))
    font = ImageFont.load_default(size=max(8.0, r * style.label_scale))
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
            name = str(i + 1)
            left, top, right, bottom = draw.textbbox((0, 0), name, font=font, stroke_width=width)
            tx = x + r + 1 if x + r + 1 + right <= out.size[0] else x - r - 1 - right
            ty = min(max(y - r - 1 - bottom, 0 - top), out.size[1] - bottom)
            ink = {"fill": color, "font": font, "stroke_width": width, "stroke_fill": style.outline}
            draw.text((max(tx, -left), ty), name, **ink)
    return out


def _case(n: int) -> tuple[Image.Image, list[tuple[float, float]], MarkerStyle]:
    rng = random.Random(n)
    w, h = rng.choice([(200, 100), (640, 480), (300, 900), (37, 23), (1000, 64)])
    image = Image.fromarray(np.random.default_rng(n).integers(0, 256, (h, w, 3), dtype=np.uint8))
    style = MarkerStyle(
        shape=rng.choice(SHAPES), size=rng.choice([0.005, 0.012, 0.03, 0.1]), numbered=rng.random() < 0.8
    )

    def y() -> float:  # anywhere, near and past the top and bottom edges, on a whole row
        return rng.choice(
            [rng.uniform(0, h), rng.uniform(-20, 30), rng.uniform(h - 30, h + 20), float(rng.randint(0, h))]
        )

    points = [(rng.uniform(-5, w + 5), y()) for _ in range(rng.choice([1, 1, 2, 3, 5, 8]))]
    return image, points, style


@pytest.mark.parametrize("chunk", range(4))
def test_markers_on_bands_are_the_pixels_drawn_on_the_whole_image(chunk: int) -> None:
    """600 random screens, shapes, sizes, label settings and points (near and past both edges)."""
    for n in range(chunk * 150, (chunk + 1) * 150):
        image, points, style = _case(n)
        expected = np.asarray(_whole_image_reference(image, points, style))
        view = mark_view(image, points, style)
        assert np.array_equal(np.asarray(view.image()), expected), (n, image.size, style, points)
        # every row outside the bands is the screenshot's own, and the bands do not overlap
        inside = np.zeros(image.size[1], bool)
        last = -1
        for top, band in view.bands:
            assert top > last and band.size[0] == image.size[0]
            inside[top : top + band.size[1]] = True
            last = top + band.size[1] - 1
        assert np.array_equal(expected[~inside], np.asarray(image)[~inside])


def test_the_screenshot_is_left_untouched_and_a_band_is_the_rows_a_marker_changes() -> None:
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (1080, 1920, 3), dtype=np.uint8))
    before = image.tobytes()
    view = mark_view(image, [(900.5, 500.25)], MarkerStyle())
    assert image.tobytes() == before and view.base is image and view.size == (1920, 1080)
    reference = np.asarray(_whole_image_reference(image, [(900.5, 500.25)], MarkerStyle()))
    changed = np.flatnonzero((reference != np.asarray(image)).any(axis=(1, 2)))
    [(top, band)] = view.bands
    # the band holds every changed row, with at most the outline's reach and a margin to spare
    assert top <= changed[0] and changed[-1] < top + band.size[1]
    assert changed[0] - top <= 12 and top + band.size[1] - 1 - changed[-1] <= 12


def test_markers_far_apart_get_a_band_each_and_overlapping_ones_share_one() -> None:
    image = Image.new("RGB", (400, 1000), "white")
    apart = mark_view(image, [(100.0, 100.0), (100.0, 900.0)], MarkerStyle(numbered=False))
    assert len(apart.bands) == 2
    close = mark_view(image, [(100.0, 100.0), (110.0, 105.0)], MarkerStyle(numbered=False))
    assert len(close.bands) == 1
    # the second marker is drawn over the first where they overlap, as on the whole image
    reference = _whole_image_reference(image, [(100.0, 100.0), (110.0, 105.0)], MarkerStyle(numbered=False))
    assert close.image().tobytes() == reference.tobytes()


def test_a_marker_wholly_outside_the_rows_draws_nothing_and_the_rest_are_drawn() -> None:
    image = Image.new("RGB", (200, 100), "white")
    style = MarkerStyle(numbered=False)
    view = mark_view(image, [(50.0, -500.0), (50.0, 50.0)], style)
    assert len(view.bands) == 1
    reference = _whole_image_reference(image, [(50.0, -500.0), (50.0, 50.0)], style)
    assert view.image().tobytes() == reference.tobytes()
    assert draw_markers(image, [(50.0, 5000.0)], style).tobytes() == image.tobytes()


def test_a_greyscale_screenshot_is_marked_in_rgb() -> None:
    grey = Image.new("L", (120, 80), 128)
    view = mark_view(grey, [(60.0, 40.0)], MarkerStyle())
    assert view.base.mode == "RGB" and view.image().mode == "RGB"
    assert view.image().tobytes() == _whole_image_reference(grey, [(60.0, 40.0)], MarkerStyle()).tobytes()
