"""The zoom-in refine stage's rules (``model.refine=zoom``), as pure functions.

A second look at a crop around the current pick: :func:`zoom_window` is the crop in original pixels,
:func:`crop_region` the same cut from a screenshot decoded at another size, :func:`should_refine` says
whether a sample gets the second look (``model.refine_when``), and :func:`from_crop` maps an answer
from the crop's frame back to original pixels. :class:`gge.models.policy.GroundingPolicy` sends the
request (the family's own grounding request, on the crop).

Rules (gge's choices, kept stable):

* **window**: ``w = W / zoom`` and ``h = H / zoom`` of the screenshot's original size ``W x H``, each
  rounded half up to whole pixels (at least 1); the left edge is ``x - w / 2`` rounded half up, then
  shifted into ``[0, W - w]`` (the top edge likewise): centred on the pick ``(x, y)`` within half a
  pixel, moved to stay inside the screenshot.
* **decoded at another size**: a screenshot decoded at ``dW x dH`` (the data pipeline may shrink it)
  is cut in its own pixels, at the window's edges times ``dW / W`` (``dH / H``) rounded half up (at
  least one pixel); the window recorded and used to map back is that cut's edges in original pixels,
  exactly what the crop shows. Its size in original pixels, rounded half up, is the crop's "original
  size" (the frame of its ``abs_original`` answers and of a stated ``prompt_max_pixels`` size).
* **triggers**: ``always``; ``disagree``: another point candidate lies strictly farther than
  ``radius`` times the image diagonal from the pick (a lone candidate never disagrees);
  ``low_score``: the pick's critic score is under ``threshold``, and a pick without a score (the
  critic skips a sample with fewer than two point candidates) counts as low: nothing vouched for it.
* **mapping back**: a point ``(u, v)`` in the crop's original-size frame is
  ``(x1 + u * (x2 - x1) / cw, y1 + v * (y2 - y1) / ch)`` for the window ``(x1, y1, x2, y2)`` and the
  crop's original size ``cw x ch`` (``(x1 + u, y1 + v)`` when the screenshot is decoded at its size).

Example:
    >>> zoom_window((10.0, 50.0), (200, 100), 2.0)
    (0, 25, 100, 75)
    >>> crop = crop_region((150.0, 50.0), (200, 100), (200, 100), 2.0)
    >>> crop.box, crop.size, from_crop((50.0, 25.0), crop)
    ((100, 25, 200, 75), (100, 50), (150.0, 50.0))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gge.errors import GgeError
from gge.types import Candidate, Point

REFINE_MODES = ("none", "zoom")
"""``model.refine``: no refine stage (the official protocols), or the zoom-in second look."""
REFINE_WHEN = ("always", "disagree", "low_score")
"""``model.refine_when``: which samples get the second look (see the module docstring)."""


def check_refine(refine: str, zoom: float, when: str, radius: float, threshold: float, critic: str) -> None:
    """Refuse refine options that cannot run, naming the ``model.<key>``.

    ``low_score`` reads the pointwise critic's probability: a listwise critic's top score is always the
    number of candidates ranked, and no critic scores nothing, so it needs ``model.critic=pointwise``.

    Raises:
        GgeError: an unknown mode or trigger, ``refine_zoom`` not above 1, ``refine_radius`` negative,
            a non-finite value, or ``low_score`` without a pointwise critic.

    Example:
        >>> check_refine("zoom", 1.0, "always", 0.05, 0.5, "none")
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: model.refine_zoom must be a number above 1 (the crop is W/zoom x H/zoom), got 1.0
    """
    if refine not in REFINE_MODES:
        raise GgeError(f"unknown model.refine {refine!r}; known: {', '.join(REFINE_MODES)}")
    if when not in REFINE_WHEN:
        raise GgeError(f"unknown model.refine_when {when!r}; known: {', '.join(REFINE_WHEN)}")
    if not (math.isfinite(zoom) and zoom > 1):
        raise GgeError(
            f"model.refine_zoom must be a number above 1 (the crop is W/zoom x H/zoom), got {zoom}"
        )
    if not (math.isfinite(radius) and radius >= 0):
        raise GgeError(f"model.refine_radius must be a fraction >= 0 of the image diagonal, got {radius}")
    if not math.isfinite(threshold):
        raise GgeError(f"model.refine_threshold must be a finite number, got {threshold}")
    if refine == "zoom" and when == "low_score" and critic != "pointwise":
        raise GgeError(
            f"model.refine_when=low_score reads the pointwise critic's probability; model.critic={critic} "
            "gives none (set model.critic=pointwise, or another model.refine_when)"
        )


def _half_up(value: float) -> int:
    return math.floor(value + 0.5)


def zoom_window(point: Point, size: tuple[int, int], zoom: float) -> tuple[int, int, int, int]:
    """The crop ``(x1, y1, x2, y2)`` around ``point`` in a ``size`` image (rules in the module docstring).

    Args:
        point: The pick, in the image's pixels (anywhere: off-screen picks are shifted inside too).
        size: The image's (width, height).
        zoom: The crop is ``1 / zoom`` of the width and of the height (> 1).

    Example:
        >>> zoom_window((1900.0, 10.0), (1920, 1080), 4.0)
        (1440, 0, 1920, 270)
    """
    out: list[int] = []
    for centre, extent in zip(point, size, strict=True):
        length = min(extent, max(1, _half_up(extent / zoom)))
        low = min(max(_half_up(centre - length / 2), 0), extent - length)
        out += [low, low + length]
    return (out[0], out[2], out[1], out[3])


@dataclass(frozen=True)
class Crop:
    """Where a refine request looks.

    Attributes:
        box: The crop ``(x1, y1, x2, y2)`` in the decoded screenshot's pixels (``Image.crop``'s box).
        window: The same region in the screenshot's original pixels (what the crop shows).
        size: The crop's original size: the window's width and height, rounded half up.
    """

    box: tuple[int, int, int, int]
    window: tuple[float, float, float, float]
    size: tuple[int, int]


def crop_region(
    point: Point, image_size: tuple[int, int], decoded_size: tuple[int, int], zoom: float
) -> Crop:
    """The crop of a screenshot decoded at ``decoded_size`` around a pick in original pixels.

    Args:
        point: The pick in original pixels.
        image_size: The screenshot's original (width, height) (``Sample.image_size``).
        decoded_size: The size it was decoded at (equal, or smaller where the pipeline shrank it).
        zoom: As for :func:`zoom_window`.

    Example:
        >>> c = crop_region((100.0, 50.0), (200, 100), (100, 50), 2.0)  # decoded at half the size
        >>> c.box, c.window, c.size
        ((25, 13, 75, 38), (50.0, 26.0, 150.0, 76.0), (100, 50))
    """
    window = zoom_window(point, image_size, zoom)
    if tuple(decoded_size) == tuple(image_size):
        x1, y1, x2, y2 = window
        return Crop(window, (float(x1), float(y1), float(x2), float(y2)), (x2 - x1, y2 - y1))
    edges: list[int] = []
    covered: list[float] = []
    for axis in (0, 1):
        scale = decoded_size[axis] / image_size[axis]
        low = min(_half_up(window[axis] * scale), decoded_size[axis] - 1)
        high = min(decoded_size[axis], max(low + 1, _half_up(window[axis + 2] * scale)))
        edges += [low, high]
        covered += [low / scale, high / scale]
    size = (max(1, _half_up(covered[1] - covered[0])), max(1, _half_up(covered[3] - covered[2])))
    return Crop(
        (edges[0], edges[2], edges[1], edges[3]), (covered[0], covered[2], covered[1], covered[3]), size
    )


def from_crop(point: Point, crop: Crop) -> Point:
    """A point in the crop's original-size frame (``crop.size``), in the screenshot's original pixels.

    Example:
        >>> from_crop((10.0, 5.0), Crop((25, 12, 75, 38), (50.0, 24.0, 150.0, 76.0), (100, 52)))
        (60.0, 29.0)
    """
    x1, y1, x2, y2 = crop.window
    return (x1 + point[0] * (x2 - x1) / crop.size[0], y1 + point[1] * (y2 - y1) / crop.size[1])


def should_refine(
    when: str,
    pick: Candidate,
    candidates: Sequence[Candidate],
    image_size: tuple[int, int],
    *,
    radius: float,
    threshold: float,
) -> bool:
    """Whether a sample whose pick is ``pick`` gets the second look (rules in the module docstring).

    Args:
        when: One of :data:`REFINE_WHEN`.
        pick: The base pick (one of ``candidates``, with a point).
        candidates: The sample's candidates, the critic's scores on them.
        image_size: The screenshot's (width, height) (its diagonal scales ``radius``).
        radius: ``disagree``: the fraction of the diagonal beyond which another candidate disagrees.
        threshold: ``low_score``: the score under which the pick is refined.

    Example:
        >>> a, b = Candidate((0.0, 0.0), 0.9), Candidate((30.0, 40.0), 0.1)
        >>> [should_refine("disagree", a, [a, b], (60, 80), radius=r, threshold=0.5) for r in (0.49, 0.5)]
        [True, False]
        >>> should_refine("low_score", a, [a, b], (60, 80), radius=0.0, threshold=0.95)
        True
    """
    if when == "always":
        return True
    if when == "low_score":
        return pick.score is None or not pick.score >= threshold
    if when != "disagree":
        raise GgeError(f"unknown model.refine_when {when!r}; known: {', '.join(REFINE_WHEN)}")
    if pick.point is None:
        return False
    reach = radius * math.hypot(image_size[0], image_size[1])
    px, py = pick.point
    return any(
        c is not pick and c.point is not None and math.hypot(c.point[0] - px, c.point[1] - py) > reach
        for c in candidates
    )
