"""The trainers' image resizing: the size a Qwen-VL model sees in verl and in EasyR1.

Each function follows the trainer's source (cited in its docstring), so the reward reads an answer
in the frame the model saw.
"""

from __future__ import annotations

import math

from gge.errors import GgeError
from gge.geometry import smart_resize

FLAVORS = ("verl", "easyr1")
"""The trainers :func:`gge.integrations.verl.export.export_verl` writes for."""
EASYR1_MIN_PIXELS = 262144
"""EasyR1's default ``data.min_pixels`` (``verl/trainer/config.py`` ``DataConfig``)."""
EASYR1_MAX_PIXELS = 4194304
"""EasyR1's default ``data.max_pixels``."""
QWEN_VL_UTILS_MIN_TOKENS = 4
QWEN_VL_UTILS_MAX_TOKENS = 16384
"""``qwen_vl_utils``' default limits in tokens (``IMAGE_MIN_TOKEN_NUM``, ``IMAGE_MAX_TOKEN_NUM``)."""


def verl_seen_size(
    size: tuple[int, int],
    *,
    factor: int,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    processor_min_pixels: int | None = None,
    processor_max_pixels: int | None = None,
) -> tuple[int, int]:
    """The size a Qwen-VL model sees in verl: ``qwen_vl_utils.fetch_image`` then the processor.

    ``fetch_image`` resizes with ``smart_resize(factor, min_pixels, max_pixels)`` (limits from the
    image dict, default 4 and 16384 tokens); the processor's own ``smart_resize`` follows (a no-op
    on an image already within its limits).

    Args:
        size: (width, height) of the image in the dataset.
        factor: ``2 * patch_size`` (28 for Qwen2/2.5-VL, 32 for Qwen3-VL).
        min_pixels: The image dict's ``min_pixels`` (None: qwen_vl_utils' default).
        max_pixels: The image dict's ``max_pixels`` (None: qwen_vl_utils' default).
        processor_min_pixels: The processor's limit (None: no second resize).
        processor_max_pixels: The processor's limit (None: no second resize).

    Returns:
        (width, height) the model sees.

    Example:
        >>> verl_seen_size((1920, 1080), factor=28)
        (1932, 1092)
        >>> verl_seen_size((1920, 1080), factor=28, max_pixels=1_000_000)
        (1316, 728)
    """
    lo = min_pixels if min_pixels is not None else QWEN_VL_UTILS_MIN_TOKENS * factor * factor
    hi = max_pixels if max_pixels is not None else QWEN_VL_UTILS_MAX_TOKENS * factor * factor
    h, w = smart_resize(size[1], size[0], factor=factor, min_pixels=lo, max_pixels=hi)
    if processor_min_pixels is not None and processor_max_pixels is not None:
        h, w = smart_resize(
            h, w, factor=factor, min_pixels=processor_min_pixels, max_pixels=processor_max_pixels
        )
    return (w, h)


def easyr1_resize(
    size: tuple[int, int], *, min_pixels: int | None, max_pixels: int | None
) -> tuple[int, int]:
    """EasyR1's ``process_image`` (``verl/utils/dataset.py``): the size it hands the processor.

    Example:
        >>> easyr1_resize((3840, 2160), min_pixels=262144, max_pixels=4194304)
        (2730, 1536)
        >>> easyr1_resize((300, 200), min_pixels=262144, max_pixels=None)
        (627, 418)
    """
    w, h = size
    if max_pixels is not None and w * h > max_pixels:
        r = math.sqrt(max_pixels / (w * h))
        w, h = int(w * r), int(h * r)
    if min_pixels is not None and w * h < min_pixels:
        r = math.sqrt(min_pixels / (w * h))
        w, h = int(w * r), int(h * r)
    return (w, h)


def easyr1_seen_size(
    size: tuple[int, int],
    *,
    factor: int,
    min_pixels: int | None,
    max_pixels: int | None,
    processor_min_pixels: int,
    processor_max_pixels: int,
) -> tuple[int, int]:
    """The size a Qwen-VL model sees in EasyR1: :func:`easyr1_resize`, then the processor's resize.

    Example:
        >>> easyr1_seen_size((3840, 2160), factor=28, min_pixels=262144, max_pixels=4194304,
        ...                  processor_min_pixels=3136, processor_max_pixels=12845056)
        (2744, 1540)
    """
    w, h = easyr1_resize(size, min_pixels=min_pixels, max_pixels=max_pixels)
    rh, rw = smart_resize(
        h, w, factor=factor, min_pixels=processor_min_pixels, max_pixels=processor_max_pixels
    )
    return (rw, rh)


def _check_flavor(flavor: str) -> str:
    if flavor not in FLAVORS:
        raise GgeError(f"unknown flavor {flavor!r}; known: {', '.join(FLAVORS)}")
    return flavor


def trainer_seen_size(
    flavor: str,
    size: tuple[int, int],
    *,
    factor: int,
    min_pixels: int | None,
    max_pixels: int | None,
    processor_min_pixels: int,
    processor_max_pixels: int,
) -> tuple[int, int]:
    """The size the model sees when ``flavor``'s trainer reads an image of ``size`` (see above)."""
    if _check_flavor(flavor) == "verl":
        return verl_seen_size(
            size,
            factor=factor,
            min_pixels=min_pixels,
            max_pixels=max_pixels,
            processor_min_pixels=processor_min_pixels,
            processor_max_pixels=processor_max_pixels,
        )
    return easyr1_seen_size(
        size,
        factor=factor,
        min_pixels=min_pixels,
        max_pixels=max_pixels,
        processor_min_pixels=processor_min_pixels,
        processor_max_pixels=processor_max_pixels,
    )
