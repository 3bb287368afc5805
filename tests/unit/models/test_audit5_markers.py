"""MarkerStyle's checks: a style a critic could not read, or that draws past half the image, is refused."""

from __future__ import annotations

import pytest

from gge.models.markers import SHAPES, MarkerStyle


def test_an_unknown_shape_is_refused_by_name() -> None:
    assert "star" not in SHAPES
    with pytest.raises(ValueError, match=r"unknown marker shape 'star'; known: circle, cross, square"):
        MarkerStyle(shape="star")
    for shape in SHAPES:
        assert MarkerStyle(shape=shape).shape == shape


@pytest.mark.parametrize("size", [0.0, -0.01, 0.5, 1.0])
def test_a_size_outside_the_open_interval_to_half_the_side_is_refused(size: float) -> None:
    said = rf"marker size must be in \(0, 0.5\) of the longer side, got {size}"
    with pytest.raises(ValueError, match=said):
        MarkerStyle(size=size)


def test_sizes_just_inside_the_interval_are_kept() -> None:
    assert MarkerStyle(size=0.49).size == 0.49 and MarkerStyle(size=1e-6).size == 1e-6


def test_an_empty_palette_is_refused() -> None:
    with pytest.raises(ValueError, match="marker colors must not be empty"):
        MarkerStyle(colors=())
