"""A tiny Qwen3-VL checkpoint that points: overfitted on one ScreenSpot-v2 demo sample's proposer request.

The refine stage runs only where there is a pick with a point, and a random tiny checkpoint answers
text that seldom parses; :func:`pointing_qwen3_vl` trains one (:func:`tiny_checkpoints.overfit`) to
answer :data:`ANSWER` to the ``qwen3_vl`` preset's request for the first ``screenspot_v2`` sample of
the demo suite, asked with :data:`ARGS` (small pixel and token budgets, no system prompt, so training
takes seconds). Other samples get whatever the checkpoint answers them. Used by the refine tests of
the CLI and of the Lightning callback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image
from tiny_checkpoints import build_tiny_qwen3_vl, overfit

from gge.benchmarks import get_benchmark
from gge.benchmarks.images import open_image
from gge.models.registry import preset_request
from gge.types import Sample

ANSWER = "(500,500)"
"""What the checkpoint answers the trained request (0..1000: the screenshot's centre)."""
LIMITS = {"min_pixels": 3136, "max_pixels": 50000}
OVERRIDES: dict[str, Any] = {**LIMITS, "max_new_tokens": 12, "prompts": {"system": None}, "device": "cpu"}
"""The ``model.<key>`` options the checkpoint is trained and evaluated with."""
ARGS = [
    "model.min_pixels=3136",
    "model.max_pixels=50000",
    "model.max_new_tokens=12",
    "model.prompts.system=null",
    "model.device=cpu",
]
"""The same options as eval.py arguments."""


def first_sample(demo: Path) -> Sample:
    """The demo suite's first ``screenspot_v2`` sample (the one the checkpoint is trained on)."""
    bench = get_benchmark("screenspot_v2")
    return bench.load(demo / bench.directory, bench.options_type()).samples[0]


def pointing_qwen3_vl(folder: Path, demo: Path) -> Path:
    """Build a tiny Qwen3-VL into ``folder`` and train it to answer :data:`ANSWER` to the first sample.

    Args:
        folder: The checkpoint folder (its name should say Qwen3-VL, for ``ckpt=`` detection).
        demo: The demo suite's folder.

    Returns:
        ``folder``.
    """
    build_tiny_qwen3_vl(folder)
    sample = first_sample(demo)
    seen, (spec,) = preset_request(
        "qwen3_vl", "screenspot_v2", sample.instruction, sample.image_size, OVERRIDES
    )
    with open_image(sample.image_path) as im:
        view = im.convert("RGB").resize(seen, Image.Resampling.BICUBIC)
    overfit(
        folder, view, spec.messages, ANSWER, min_pixels=LIMITS["min_pixels"], max_pixels=LIMITS["max_pixels"]
    )
    return folder
