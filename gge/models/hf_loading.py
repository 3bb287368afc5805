"""Loading Qwen-VL family checkpoints (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) with transformers.

The functions take a local checkpoint folder (download hub models first, e.g. with
``huggingface-cli download``) and return the transformers objects the model adapters use:

- :func:`load_processor`: ``AutoProcessor`` when torchvision imports; otherwise an image-only
  processor (the Qwen-VL processors of transformers 5 insist on a video processor, which needs
  torchvision), whose image processor runs on the PIL backend. Left padding for batched generation;
  optional ``min_pixels`` / ``max_pixels`` limits.
- :func:`load_model`: ``AutoModelForImageTextToText`` in eval mode on a device.
- :func:`model_type`, :func:`image_patch_factor`, :func:`resized_size`: what a grounding adapter
  needs to map coordinates between the original screenshot and the image the model saw;
  :func:`merge_size`, :func:`image_tokens`: what the cost ledger counts as an image's tokens.

transformers is imported inside the functions only, so that gge imports without it.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
from pathlib import Path
from typing import Any

from gge.errors import GgeError

# The processor class of each model type whose processor insists on a video processor.
_PROCESSOR_CLASSES = {
    "qwen2_vl": "Qwen2VLProcessor",
    "qwen2_5_vl": "Qwen2_5_VLProcessor",
    "qwen3_vl": "Qwen3VLProcessor",
}


def _checkpoint_folder(path: str | Path) -> Path:
    """The checkpoint folder ``path`` as a Path, or a GgeError saying why it is not one.

    Args:
        path: A local checkpoint folder.

    Returns:
        The folder.

    Raises:
        GgeError: ``path`` does not exist, is not a folder, or holds no ``config.json``.
    """
    folder = Path(path)
    if not folder.exists():
        raise GgeError(f"checkpoint folder {folder} does not exist (gge loads local folders only)")
    if not folder.is_dir():
        raise GgeError(f"checkpoint path {folder} is not a folder")
    if not (folder / "config.json").is_file():
        raise GgeError(f"{folder} is not a checkpoint folder: it holds no config.json")
    return folder


def model_type(path: str | Path) -> str:
    """The ``model_type`` field of a checkpoint folder's ``config.json``.

    Args:
        path: A local checkpoint folder.

    Returns:
        The model type, e.g. ``"qwen2_5_vl"`` or ``"qwen3_vl"``.

    Raises:
        GgeError: The folder or its ``config.json`` is missing or unreadable, or the file has no
            string ``model_type``; the message names the file.
    """
    config_file = _checkpoint_folder(path) / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GgeError(f"{config_file}: cannot read the checkpoint config: {error}") from error
    kind = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(kind, str) or not kind:
        raise GgeError(f"{config_file}: no 'model_type' string in the checkpoint config")
    return kind


@functools.cache
def _torchvision_usable() -> bool:
    """Whether torchvision imports (it can be installed yet fail to import beside another torch build).

    Returns:
        True when ``import torchvision`` succeeds.
    """
    try:
        importlib.import_module("torchvision")
    except Exception:
        return False
    return True


@functools.cache
def _image_only_processor_class(base_name: str) -> Any:
    """A subclass of the transformers processor ``base_name`` that needs no video processor.

    ``ProcessorMixin`` builds its list of sub-processors from the ``__init__`` signature, so a
    signature without ``video_processor`` makes a processor of images and text only.

    Args:
        base_name: The transformers processor class name, e.g. ``"Qwen2_5_VLProcessor"``.

    Returns:
        The subclass.
    """
    import transformers

    base: Any = getattr(transformers, base_name)

    def __init__(
        self: Any,
        image_processor: Any = None,
        tokenizer: Any = None,
        chat_template: Any = None,
        **kwargs: Any,
    ) -> None:
        base.__init__(self, image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    return type(f"ImageOnly{base_name}", (base,), {"__init__": __init__, "__module__": __name__})


def load_processor(
    path: str | Path,
    *,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    trust_remote_code: bool = False,
) -> Any:
    """Load the processor of a checkpoint folder, ready for batched generation.

    With torchvision importable this is ``AutoProcessor.from_pretrained``. Without it, Qwen2-VL,
    Qwen2.5-VL and Qwen3-VL checkpoints get an image-only subclass of their processor class, with the
    PIL image processor (the same resizing and pixel values, no video support); other model types
    still go through ``AutoProcessor``.

    Args:
        path: A local checkpoint folder (``config.json``, tokenizer, ``preprocessor_config.json``).
        min_pixels: Lower limit on the pixels of a resized image (the image processor's
            ``size["shortest_edge"]``); None keeps the checkpoint's, lowered to ``max_pixels`` where it
            is above (Qwen3-VL's is 65536).
        max_pixels: Upper limit on the pixels of a resized image (``size["longest_edge"]``); None keeps
            the checkpoint's, raised to ``min_pixels`` where it is below. Set through ``size``, so
            no deprecation warning is printed at call time.
        trust_remote_code: Passed to transformers, for checkpoints that ship their own code.

    Returns:
        The processor, its tokenizer padding on the left.

    Raises:
        GgeError: ``path`` is not a checkpoint folder, the limits are not positive or out of order,
            or transformers cannot load the processor (the message names the folder and the cause).
    """
    folder = _checkpoint_folder(path)
    kind = model_type(folder)
    for name, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise GgeError(f"{name} must be a positive integer, got {value!r}")

    import transformers

    auto_processor: Any = transformers.AutoProcessor  # typed loosely: Any
    try:
        if _torchvision_usable() or kind not in _PROCESSOR_CLASSES:
            processor: Any = auto_processor.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
        else:
            processor = _load_image_only_processor(folder, kind, trust_remote_code=trust_remote_code)
    except GgeError:
        raise
    except Exception as error:
        raise GgeError(f"cannot load the processor of {folder}: {type(error).__name__}: {error}") from error

    image_processor = getattr(processor, "image_processor", None)
    if min_pixels is not None or max_pixels is not None:
        if image_processor is None:
            raise GgeError(f"the processor of {folder} has no image processor to take min/max pixels")
        _set_pixel_limits(image_processor, min_pixels, max_pixels, folder)
    tokenizer = getattr(processor, "tokenizer", processor)
    tokenizer.padding_side = "left"
    return processor


def _load_image_only_processor(folder: Path, kind: str, *, trust_remote_code: bool) -> Any:
    """Build the image-only processor of a Qwen-VL checkpoint folder without torchvision.

    Args:
        folder: The checkpoint folder.
        kind: Its model type, a key of ``_PROCESSOR_CLASSES``.
        trust_remote_code: Passed to transformers.

    Returns:
        The processor.
    """
    import transformers

    auto_image_processor: Any = transformers.AutoImageProcessor
    auto_tokenizer: Any = transformers.AutoTokenizer

    processor_class = _image_only_processor_class(_PROCESSOR_CLASSES[kind])
    image_processor = auto_image_processor.from_pretrained(
        str(folder), backend="pil", trust_remote_code=trust_remote_code
    )
    tokenizer = auto_tokenizer.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
    chat_template = _chat_template(folder, tokenizer)
    return processor_class(image_processor=image_processor, tokenizer=tokenizer, chat_template=chat_template)


def _chat_template(folder: Path, tokenizer: Any) -> str | None:
    """The chat template of a checkpoint folder.

    Its ``chat_template.jinja``, else its legacy ``chat_template.json``, else the tokenizer's.

    Args:
        folder: The checkpoint folder.
        tokenizer: Its tokenizer.

    Returns:
        The template, or None when the checkpoint has none.
    """
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    legacy = folder / "chat_template.json"
    if legacy.is_file():
        template = json.loads(legacy.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(template, str):
            return template
    template = getattr(tokenizer, "chat_template", None)
    return template if isinstance(template, str) else None


def _set_pixel_limits(
    image_processor: Any, min_pixels: int | None, max_pixels: int | None, folder: Path
) -> None:
    """Set an image processor's pixel limits through ``size`` (call-time min/max_pixels are deprecated).

    Args:
        image_processor: A Qwen-VL image processor.
        min_pixels: The new ``size["shortest_edge"]``, or None to keep it.
        max_pixels: The new ``size["longest_edge"]``, or None to keep it.
        folder: The checkpoint folder, for error messages.

    Raises:
        GgeError: ``min_pixels`` is above ``max_pixels``.
    """
    from transformers.image_utils import SizeDict

    size = image_processor.size
    if min_pixels is not None and max_pixels is not None and min_pixels > max_pixels:
        raise GgeError(f"{folder}: min_pixels {min_pixels} is above max_pixels {max_pixels}")
    # A limit given alone moves the checkpoint's other limit where they would cross (Qwen3-VL's
    # min_pixels is 65536, above the max_pixels often used for small screenshots).
    shortest = min_pixels if min_pixels is not None else min(size["shortest_edge"], max_pixels or 0)
    longest = max_pixels if max_pixels is not None else max(size["longest_edge"], min_pixels or 0)
    image_processor.size = SizeDict(shortest_edge=shortest, longest_edge=longest)
    # Older image processors also read these attributes.
    for name, value in (("min_pixels", shortest), ("max_pixels", longest)):
        if hasattr(image_processor, name):
            setattr(image_processor, name, value)


def load_model(
    path: str | Path,
    *,
    dtype: str = "auto",
    device: str = "cpu",
    attn_implementation: str | None = None,
    trust_remote_code: bool = False,
) -> Any:
    """Load an image-text-to-text model from a checkpoint folder, in eval mode, on a device.

    Args:
        path: A local checkpoint folder.
        dtype: ``"auto"`` (the checkpoint's dtype) or a torch dtype name such as ``"bfloat16"``.
        device: A torch device, e.g. ``"cpu"`` or ``"cuda:0"``.
        attn_implementation: ``"sdpa"``, ``"eager"``, ``"flash_attention_2"``..., or None for the
            transformers default.
        trust_remote_code: Passed to transformers.

    Returns:
        The model (``AutoModelForImageTextToText``, or ``AutoModelForVision2Seq`` on transformers
        versions that lack the former).

    Raises:
        GgeError: ``path`` is not a checkpoint folder, ``dtype`` is unknown, or transformers cannot load
            the model.
    """
    folder = _checkpoint_folder(path)
    import torch
    import transformers

    torch_dtype: Any = "auto"
    if dtype != "auto":
        torch_dtype = getattr(torch, dtype, None)
        if not isinstance(torch_dtype, torch.dtype):
            raise GgeError(f"unknown dtype '{dtype}': use 'auto' or a torch dtype name such as 'bfloat16'")
    auto_class: Any = getattr(transformers, "AutoModelForImageTextToText", None) or getattr(
        transformers, "AutoModelForVision2Seq", None
    )
    if auto_class is None:
        raise GgeError("this transformers has neither AutoModelForImageTextToText nor AutoModelForVision2Seq")
    kwargs: dict[str, Any] = {"dtype": torch_dtype, "trust_remote_code": trust_remote_code}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    try:
        model: Any = auto_class.from_pretrained(str(folder), **kwargs)
    except Exception as error:
        raise GgeError(f"cannot load the model of {folder}: {type(error).__name__}: {error}") from error
    return model.to(device).eval()


def image_patch_factor(processor: Any) -> int:
    """The side in pixels that resized images are a multiple of: patch size times merge size.

    Args:
        processor: A Qwen-VL processor (or its image processor).

    Returns:
        28 for Qwen2-VL and Qwen2.5-VL, 32 for Qwen3-VL.

    Raises:
        GgeError: The image processor has no ``patch_size`` / ``merge_size``.
    """
    image_processor = getattr(processor, "image_processor", processor)
    patch = getattr(image_processor, "patch_size", None)
    merge = getattr(image_processor, "merge_size", None)
    if not isinstance(patch, int) or not isinstance(merge, int):
        raise GgeError(f"{type(image_processor).__name__} has no integer patch_size and merge_size")
    return patch * merge


def merge_size(processor: Any, model: Any = None) -> int:
    """How many patches per side merge into one image token (2 for the Qwen-VL families).

    Read from the image processor's ``merge_size``, else from the model config's
    ``vision_config.spatial_merge_size``.

    Args:
        processor: A Qwen-VL processor (or its image processor).
        model: The model, whose config is read when the image processor does not say.

    Returns:
        The merge size.

    Raises:
        GgeError: Neither says.

    Example:
        >>> class ImageProcessor:
        ...     merge_size = 2
        >>> merge_size(ImageProcessor())
        2
    """
    image_processor = getattr(processor, "image_processor", processor)
    merge = getattr(image_processor, "merge_size", None)
    if isinstance(merge, int) and merge > 0:
        return merge
    vision = getattr(getattr(model, "config", None), "vision_config", None)
    merge = getattr(vision, "spatial_merge_size", None)
    if isinstance(merge, int) and merge > 0:
        return merge
    raise GgeError(
        f"{type(image_processor).__name__} has no merge_size and the model config no "
        "vision_config.spatial_merge_size: cannot count image tokens"
    )


def image_tokens(grid_thw: Any, merge: int) -> list[int]:
    """Image tokens of each image from the processor's ``image_grid_thw`` rows: ``t * h * w // merge**2``.

    Args:
        grid_thw: One (t, h, w) row of patches per image (a tensor or nested lists).
        merge: :func:`merge_size`.

    Returns:
        One count per image, in order.

    Example:
        >>> image_tokens([[1, 10, 20], [1, 4, 4]], 2)
        [50, 4]
    """
    rows = grid_thw.tolist() if hasattr(grid_thw, "tolist") else grid_thw
    return [int(t) * int(h) * int(w) // merge**2 for t, h, w in rows]


def resized_size(processor: Any, width: int, height: int) -> tuple[int, int]:
    """The size a Qwen-VL processor resizes an image of ``width`` x ``height`` to.

    The same arithmetic as transformers' ``smart_resize``: both sides rounded to a multiple of
    :func:`image_patch_factor`, scaled down (or up) when the area is above the processor's
    ``size["longest_edge"]`` (or below ``size["shortest_edge"]``). It equals the processor's
    ``image_grid_thw`` times the patch size.

    Args:
        processor: A Qwen-VL processor (or its image processor).
        width: The image width in pixels.
        height: The image height in pixels.

    Returns:
        ``(width, height)`` of the resized image.

    Raises:
        GgeError: A side is not positive, or the aspect ratio is 200 or more (the processor refuses).

    Example:
        >>> class ImageProcessor:
        ...     patch_size, merge_size = 14, 2
        ...     size = {"shortest_edge": 3136, "longest_edge": 50_000}
        >>> resized_size(ImageProcessor(), 1280, 720)
        (280, 140)
        >>> resized_size(ImageProcessor(), 300, 200)
        (252, 168)
    """
    if width <= 0 or height <= 0:
        raise GgeError(f"image size must be positive, got {width}x{height}")
    if max(width, height) / min(width, height) >= 200:
        raise GgeError(f"image {width}x{height}: aspect ratio must be below 200")
    image_processor = getattr(processor, "image_processor", processor)
    factor = image_patch_factor(image_processor)
    size = image_processor.size
    min_pixels, max_pixels = size["shortest_edge"], size["longest_edge"]
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return w_bar, h_bar
