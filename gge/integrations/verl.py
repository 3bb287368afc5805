r"""verl and EasyR1: gge's benchmarks as RL validation sets, gge's official scoring as their reward.

Three pieces, none importing verl or EasyR1:

* ``gge export verl key=value ...`` (:func:`export_verl`, :func:`export_main`) writes one parquet file
  per benchmark in the RL dataset schema the trainers read, asking each sample exactly as
  ``python eval.py model=<preset>`` asks it (the preset's messages, image size and convention);
* :func:`compute_score` is verl's custom reward function, :func:`compute_score_batch` EasyR1's: both
  read the answer with the preset's parser and convention, map it back to original pixels from the
  size the model saw, and apply the benchmark's official hit test;
* ``gge summarize-verl DUMP`` (:func:`summarize_verl`, :func:`summarize_main`) turns the trainer's dumped
  validation generations into gge's ``results.json``, ``report.md`` and ``report.html``.

**The formats, from the trainers' sources** (verl: volcengine/verl at b178a3cd, 2026-01-29, and PyPI
verl 0.9.1; EasyR1: hiyouga/EasyR1 at b44b311b):

* verl dataset (``verl/utils/dataset/rl_dataset.py``, ``RLHFDataset``): parquet rows with
  ``data_source``, ``prompt`` (chat messages whose string content holds ``<image>`` placeholders,
  split by ``_build_messages`` into ``{"type": "image"}`` / ``{"type": "text"}`` parts), ``images``
  (a list of ``{"bytes": ...}`` dicts or PIL images), ``ability``, ``reward_model``
  (``{"style": "rule", "ground_truth": ...}``) and ``extra_info`` (``index`` is read). Files are read
  with ``datasets.load_dataset("parquet")`` and concatenated, so every file gets one schema.
* verl image resizing: ``verl/utils/dataset/vision_utils.py`` ``process_image`` and the agent loop's
  ``RLHFDataset.process_vision_info`` call ``qwen_vl_utils.fetch_image`` (``qwen_vl_utils/
  vision_process.py``), which resizes every image with ``smart_resize(factor=2*patch_size,
  min_pixels, max_pixels)``, the limits read from the image dict (default 4 and 16384 times
  factor squared). gge writes the limits into each image dict, so verl applies exactly them.
* EasyR1 dataset (``verl/utils/dataset.py``, ``RLHFDataset``): ``data.prompt_key`` (default
  ``prompt``) is one string split at ``<image>`` into a single user turn (no system message),
  ``data.answer_key`` (default ``answer``) becomes the reward's ``ground_truth``, ``data.image_key``
  (default ``images``) holds paths, ``{"bytes"}`` dicts or images. ``process_image`` shrinks an image
  above ``data.max_pixels`` (default 4194304, ``verl/trainer/config.py``) by
  ``sqrt(max_pixels / area)`` with ``int()`` truncation (and grows one below ``data.min_pixels``,
  default 262144) *before* the processor, whose own ``smart_resize`` gives the size the model sees.
* verl reward (``verl/trainer/ppo/reward.py`` ``get_custom_reward_fn``: ``custom_reward_function.path``
  is a file or ``pkg://module``, ``.name`` the function, ``.reward_kwargs`` extra keyword arguments;
  ``verl/workers/reward_manager/naive.py`` and ``verl/experimental/reward_loop/reward_manager/naive.py``):
  ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)`` returns a float or a
  dict whose ``"score"`` is the reward and whose every key becomes a ``reward_extra_info`` list.
* verl validation (``verl/trainer/ppo/ray_trainer.py`` ``_validate``): each prompt is repeated
  ``actor_rollout_ref.rollout.val_kwargs.n`` times (interleaved); ``_val_metrics_update`` with
  ``verl/trainer/ppo/metric_utils.py`` ``process_validation_metrics`` logs, per data source and
  reward key, ``val-core/<data_source>/acc/mean@N`` (``acc`` when the dict has it, else ``reward``)
  and ``best@N/mean``, ``worst@N/mean``. **best@N is a bootstrap estimate** (N draws *with
  replacement* from the N responses, 1000 times), so it is below the exact Oracle@N whenever a
  sample has some but not all responses right; ``mean@N`` is exactly the unbiased pass@1.
  ``gge summarize-verl`` computes the exact Oracle@N and unbiased pass@k.
* verl dump (``trainer.validation_data_dir``; ``_dump_generations``): ``<global_step>.jsonl``, one line
  per response with ``input``, ``output``, ``gts`` (the ground truth; verl >= 0.5, PR #2353),
  ``score``, ``step`` and every reward key.
* EasyR1 reward (``verl/workers/reward/function.py`` ``AutoRewardManager``):
  ``worker.reward.reward_function=FILE.py:NAME``; with the module's ``REWARD_TYPE = "batch"`` the
  function takes a list of ``{"response", "response_length", "ground_truth"}`` and returns one dict
  per response whose ``"overall"`` is the reward. It passes no data source: validation logs
  ``val/<key>_reward``, the mean of each key over the responses that returned it
  (``verl/trainer/ray_trainer.py`` ``_validate``), so :func:`compute_score_batch` adds
  ``<benchmark>/accuracy``. EasyR1 dumps no full generations: its ``file`` generation logger
  (``verl/utils/logger/gen_logger.py``) appends ``trainer.val_generations_to_log`` shuffled responses
  to ``generations.log`` as ``[prompt] / [output] / [ground_truth] / [score]`` blocks, unmarked by
  step, which ``gge summarize-verl`` also reads, as a sample of the validation (it says so).

**The size the model sees.** By default the exported screenshot is already resized (bicubic, as
``eval.py`` resizes it) to the size ``eval.py`` would feed the model, capped by the trainer's
pixel limits; both trainers leave such an image as it is, so the model sees exactly the exported
pixels and the prompt states their size. ``resize_images=false`` exports the original file
instead: the ground truth then records the size the trainer's own resize gives. Each ground truth
records the original size, the exported size, the size seen and the frame of ``abs_resized``
answers; if a trainer runs with other pixel limits than the export assumed, pass them to the reward
(``reward_kwargs``/``reward_function_kwargs`` ``max_pixels=``/``min_pixels=``) and
:func:`compute_score` recomputes the size seen by that trainer's rule.

**What cannot be carried.** Neither trainer can prefill the assistant turn (verl applies the chat
template with ``add_generation_prompt=True``): a preset's prefill (Qwen2.5-VL's opening of the
``computer_use`` call) is left out, recorded as ``prefill_dropped``, and the answer, which then
holds the whole call, is parsed alone. EasyR1 builds one user turn: a preset with a system prompt or
two user messages needs ``fold_system=true`` (the turns joined into one; the request then differs
from eval's and the manifest says so).

**Training data and gge's validation in one run.** Both trainers score training and validation with
the one reward function configured (verl builds both reward managers from
``custom_reward_function``; EasyR1's ``worker.reward`` serves both), so :func:`compute_score` also
scores the training rows: a row whose ``data_source`` is not ``gge/<benchmark>`` goes to the
reward kwarg ``fallback`` (``custom_reward_function.reward_kwargs.fallback=pkg.module:function`` or
``=path/to/file.py:function``, called as verl calls a custom reward), else to verl's own
``verl.utils.reward_score.default_compute_score`` (imported only when such a row comes); only when
neither can score it does it raise :class:`~gge.errors.GgeError` (a silent 0 would pass for a miss).
:func:`compute_score_batch` hands the items whose ground truth is not gge's to its ``fallback``
(``worker.reward.reward_function_kwargs.fallback=path/to/file.py:function``, a batch function unless
its module says ``REWARD_TYPE = "sequential"``) and raises without one.

Example:
    >>> from gge.types import Box
    >>> gt = GroundTruth(
    ...     "screenspot_v2", "7", region=Box(100, 100, 200, 150), image_size=(1000, 500),
    ...     exported_size=(500, 250), seen_size=(500, 250), frame=(500, 250), convention="abs_resized",
    ... )
    >>> d = compute_score("gge/screenspot_v2", "click(x=75, y=60)", gt.to_json())
    >>> d["score"], d["hit"], d["format_error"]
    (1.0, 1.0, 0.0)
    >>> compute_score("gge/screenspot_v2", "no idea", gt.to_json())["format_error"]
    1.0
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import importlib.util
import io
import json
import math
import os
import re
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gge.benchmarks import DEFAULT_BENCHMARKS, REGISTRY, get_benchmark
from gge.benchmarks.base import read_text
from gge.errors import GgeError, unknown_name
from gge.geometry import smart_resize
from gge.models.policy import SAMPLE_SEPARATOR, answer_candidates
from gge.run.records import json_lines
from gge.run.runstate import check_output_dir
from gge.scoring.scoring import SampleResult, score_sample
from gge.types import Absent, Box, LabelValue, Polygon, Prediction, Region, Sample

FLAVORS = ("verl", "easyr1")
"""The trainers :func:`export_verl` writes for."""
DATA_SOURCE_PREFIX = "gge/"
"""Every exported row's ``data_source`` is this prefix and the benchmark name."""
IMAGE_TOKEN = "<image>"
"""The placeholder both trainers split prompts at."""
ABILITY = "gui_grounding"
GROUND_TRUTH_VERSION = 1
EASYR1_MIN_PIXELS = 262144
"""EasyR1's default ``data.min_pixels`` (``verl/trainer/config.py`` ``DataConfig``)."""
EASYR1_MAX_PIXELS = 4194304
"""EasyR1's default ``data.max_pixels``."""
QWEN_VL_UTILS_MIN_TOKENS = 4
QWEN_VL_UTILS_MAX_TOKENS = 16384
"""``qwen_vl_utils``' default limits in tokens (``IMAGE_MIN_TOKEN_NUM``, ``IMAGE_MAX_TOKEN_NUM``)."""
REWARD_NAME = "gge"
"""EasyR1 prints it when it loads this module as its reward function."""
REWARD_TYPE = "batch"
"""EasyR1 calls :func:`compute_score_batch` with a list of responses (``AutoRewardManager``)."""
SELECTION = "first"
"""The trainers run no critic: Top-1 is the proposer's first answer."""


# ------------------------------------------------------------------------------------- regions


def region_to_json(region: Region) -> dict[str, Any]:
    """A region as plain JSON, in its official space (rebuilt by :func:`region_from_json`).

    Example:
        >>> region_to_json(Box(0.1, 0.2, 0.3, 0.4, "normalized", (100, 50)))
        {'type': 'bbox', 'x1': 0.1, 'y1': 0.2, 'x2': 0.3, 'y2': 0.4, 'space': 'normalized', 'size': [100, 50]}
        >>> region_from_json(region_to_json(Polygon(((0, 0), (4, 0), (4, 4))))).contains(3, 1)
        True
    """
    if isinstance(region, Box):
        return {
            "type": "bbox",
            "x1": region.x1,
            "y1": region.y1,
            "x2": region.x2,
            "y2": region.y2,
            "space": region.space,
            "size": None if region.size is None else [region.size[0], region.size[1]],
        }
    if isinstance(region, Polygon):
        return {"type": "polygon", "vertices": [[x, y] for x, y in region.vertices]}
    return {"type": "refusal"}


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _size(value: Any, what: str) -> tuple[int, int]:
    if not (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise GgeError(f"{what} must be [width, height] in positive integers, got {value!r}")
    return (int(value[0]), int(value[1]))


def region_from_json(obj: Any) -> Region:
    """The region :func:`region_to_json` wrote, with the same official hit test.

    Raises:
        GgeError: for a malformed region.
    """
    if not isinstance(obj, Mapping) or "type" not in obj:
        raise GgeError(f"region must be an object with a 'type', got {obj!r}")
    kind = obj["type"]
    if kind == "bbox":
        coords = [obj.get(key) for key in ("x1", "y1", "x2", "y2")]
        space = obj.get("space", "pixel")
        if not all(_num(c) for c in coords) or space not in ("pixel", "normalized"):
            raise GgeError(
                f"region: a bbox needs finite x1, y1, x2, y2 and space pixel|normalized, got {obj!r}"
            )
        size = None if obj.get("size") is None else _size(obj["size"], "region.size")
        try:
            x1, y1, x2, y2 = (float(c) for c in coords)  # type: ignore[arg-type]
            return Box(x1, y1, x2, y2, space=space, size=size)
        except ValueError as e:
            raise GgeError(f"region: {e}") from None
    if kind == "polygon":
        verts = obj.get("vertices")
        if not isinstance(verts, list) or not all(
            isinstance(v, list) and len(v) == 2 and all(_num(c) for c in v) for v in verts
        ):
            raise GgeError(f"region: a polygon needs vertices [[x, y], ...], got {verts!r}")
        return Polygon(tuple((float(v[0]), float(v[1])) for v in verts))
    if kind == "refusal":
        return Absent()
    raise GgeError(f"region: unknown type {kind!r}; known: bbox, polygon, refusal")


# ------------------------------------------------------------------------- the trainers' resizing


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


# ---------------------------------------------------------------------------------- ground truth


@dataclass(frozen=True)
class GroundTruth:
    """Everything the reward needs about one sample, stored as the row's ground truth (a JSON string).

    Attributes:
        benchmark: Benchmark name.
        id: Native sample id.
        region: The target, with its official hit test.
        image_size: (width, height) of the original screenshot (the sample's record).
        exported_size: (width, height) of the image written into the parquet file.
        seen_size: (width, height) the model sees under the trainer's limits of the export.
        frame: (width, height) of the frame ``abs_resized`` answers are read in (the size the
            prompt states: ``seen_size``, or the preset's ``prompt_max_pixels`` rule).
        labels: Breakdown labels.
        instruction: The instruction (for reports).
        image_path: The original screenshot's path at export time (for report galleries).
        preset: The preset whose request was exported.
        convention: The coordinate convention of the answers.
        proposer: The preset's proposer mode (``single_pass`` answers hold K points).
        k: Points read from one ``single_pass`` answer.
        box_pairs: Read ``(x1,y1),(x2,y2)`` as one box.
        patch_factor: The model's resize factor.
        prompt_max_pixels: The preset's ``prompt_max_pixels``.
        processor_min_pixels: The processor's smallest area (the preset's ``min_pixels``).
        processor_max_pixels: The processor's largest area (the preset's ``max_pixels``).
        flavor: ``verl`` or ``easyr1``.
        trainer_min_pixels: The trainer's ``min_pixels`` the export assumed.
        trainer_max_pixels: The trainer's ``max_pixels`` the export assumed.
    """

    benchmark: str
    id: str
    region: Region
    image_size: tuple[int, int]
    exported_size: tuple[int, int]
    seen_size: tuple[int, int]
    frame: tuple[int, int]
    labels: Mapping[str, LabelValue] = field(default_factory=dict)
    instruction: str = ""
    image_path: str = ""
    preset: str = "custom"
    convention: str = "abs_resized"
    proposer: str = "greedy"
    k: int = 1
    box_pairs: bool = False
    patch_factor: int = 28
    prompt_max_pixels: int | None = None
    processor_min_pixels: int = 3136
    processor_max_pixels: int = 12845056
    flavor: str = "verl"
    trainer_min_pixels: int | None = None
    trainer_max_pixels: int | None = None

    def to_json(self) -> str:
        """The ground truth as one line of JSON (what the parquet row and the dump hold)."""
        obj: dict[str, Any] = {"gge": GROUND_TRUTH_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "region":
                value = region_to_json(value)
            elif f.name == "labels":
                value = {key: v if isinstance(v, str) else list(v) for key, v in value.items()}
            elif isinstance(value, tuple):
                value = list(value)
            obj[f.name] = value
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> GroundTruth:
        """Rebuild from the parsed JSON (raises GgeError naming the bad field)."""
        if obj.get("gge") != GROUND_TRUTH_VERSION:
            raise GgeError(
                'not a gge ground truth (no "gge": 1 field): score only rows written by `gge export verl`'
            )
        names = {f.name for f in fields(cls)}
        for key in ("benchmark", "id", "region", "image_size", "exported_size", "seen_size", "frame"):
            if key not in obj:
                raise GgeError(f"ground truth lacks field '{key}'")
        kw: dict[str, Any] = {key: obj[key] for key in names if key in obj}
        for key in ("benchmark", "id", "instruction", "image_path", "preset", "convention", "proposer"):
            if key in kw and not isinstance(kw[key], str):
                raise GgeError(f"ground truth field '{key}' must be a string, got {kw[key]!r}")
        kw["region"] = region_from_json(obj["region"])
        for key in ("image_size", "exported_size", "seen_size", "frame"):
            kw[key] = _size(obj[key], f"ground truth field '{key}'")
        labels = obj.get("labels") or {}
        if not isinstance(labels, Mapping):
            raise GgeError(f"ground truth field 'labels' must be an object, got {labels!r}")
        kw["labels"] = {
            str(key): v if isinstance(v, str) else tuple(str(x) for x in v) for key, v in labels.items()
        }
        for key in ("k", "patch_factor", "processor_min_pixels", "processor_max_pixels"):
            if key in kw and not (isinstance(kw[key], int) and kw[key] > 0):
                raise GgeError(f"ground truth field '{key}' must be a positive integer, got {kw[key]!r}")
        if "flavor" in kw:
            _check_flavor(kw["flavor"])
        return cls(**kw)

    def sample(self) -> Sample:
        """The sample this ground truth describes (for the official scoring)."""
        return Sample(
            self.benchmark,
            self.id,
            self.image_path,
            self.image_size,
            self.instruction,
            self.region,
            self.labels,
        )

    def view(
        self, *, flavor: str | None = None, min_pixels: int | None = None, max_pixels: int | None = None
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """``(seen_size, frame)``: as exported, or for a trainer run with other pixel limits.

        Args:
            flavor: The trainer (default: the export's).
            min_pixels: The trainer's ``min_pixels``, when it differs from the export's assumption.
            max_pixels: The trainer's ``max_pixels``, when it differs from the export's assumption.

        Returns:
            The size the model sees and the frame of ``abs_resized`` answers.
        """
        if flavor is None and min_pixels is None and max_pixels is None:
            return self.seen_size, self.frame
        seen = trainer_seen_size(
            flavor or self.flavor,
            self.exported_size,
            factor=self.patch_factor,
            min_pixels=self.trainer_min_pixels if min_pixels is None else min_pixels,
            max_pixels=self.trainer_max_pixels if max_pixels is None else max_pixels,
            processor_min_pixels=self.processor_min_pixels,
            processor_max_pixels=self.processor_max_pixels,
        )
        return seen, (seen if self.prompt_max_pixels is None else self.frame)

    def score(self, texts: Sequence[str], *, k: int | None = None, **view: Any) -> SampleResult:
        """Score answers to this sample with the official rule (``texts``: one per response).

        One-point modes: each answer is one candidate, in order (Oracle@n over the n answers).
        ``single_pass``: the first answer's points.

        Args:
            texts: The responses.
            k: Candidates scored (default: all of them; ``single_pass``: the preset's K).
            **view: Trainer settings for :meth:`view`.

        Returns:
            The scored result (Top-1: the first candidate).
        """
        _, frame = self.view(**view)
        cands = answer_candidates(
            texts,
            proposer=self.proposer,
            k=self.k,
            box_pairs=self.box_pairs,
            convention=self.convention,
            image_size=self.image_size,
            frame=frame,
        )
        if k is None:
            k = self.k if self.proposer == "single_pass" else max(1, len(cands))
        pred = Prediction(
            self.benchmark,
            self.id,
            cands,
            format_error=not any(c.parsed for c in cands),
            raw=SAMPLE_SEPARATOR.join(texts),
        )
        return score_sample(self.sample(), pred, k=k)


@functools.lru_cache(maxsize=1 << 16)
def _from_text(text: str) -> GroundTruth:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise GgeError(
            f"ground truth is not JSON ({e.msg}): score only rows written by `gge export verl`"
        ) from None
    if not isinstance(obj, dict):
        raise GgeError(
            f"ground truth must be a JSON object (got {type(obj).__name__}): score only rows written by "
            "`gge export verl`"
        )
    return GroundTruth.from_dict(obj)


def read_ground_truth(value: Any) -> GroundTruth:
    """A row's ground truth (its JSON text, the parsed object, or a GroundTruth).

    Raises:
        GgeError: when it is not one ``gge export verl`` wrote.
    """
    if isinstance(value, GroundTruth):
        return value
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, str):
        return _from_text(value)
    if isinstance(value, Mapping):
        return GroundTruth.from_dict(value)
    raise GgeError(f"ground truth must be the JSON text gge export wrote, got {type(value).__name__}")


@functools.lru_cache(maxsize=1 << 16)
def _text_is_gge(text: str) -> bool:
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(obj, dict) and "gge" in obj


def is_gge_ground_truth(value: Any) -> bool:
    """Whether a row's ground truth is one ``gge export verl`` wrote (a JSON object with ``"gge"``).

    Other data (``"72"`` of gsm8k, a math answer) is not; a gge ground truth that is malformed still
    is, so that reading it reports what is wrong rather than passing it on.

    Example:
        >>> is_gge_ground_truth('{"gge": 1, "benchmark": "osworld_g"}'), is_gge_ground_truth("72")
        (True, False)
    """
    if isinstance(value, GroundTruth):
        return True
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if isinstance(value, str):
        return _text_is_gge(value)
    return isinstance(value, Mapping) and "gge" in value


# ---------------------------------------------------------------------------------------- reward

_VIEW_KEYS = ("flavor", "min_pixels", "max_pixels")
_OWN_KEYS = (*_VIEW_KEYS, "fallback")
"""The reward keyword arguments gge reads itself (the rest go on to a fallback)."""
REWARD_KEYS = ("score", "acc", "hit", "oracle", "format_error", "abstained")
"""The keys :func:`compute_score` returns for every row."""


def _view_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The trainer settings among a reward call's keyword arguments (others are the trainer's own)."""
    view = {key: kwargs[key] for key in _VIEW_KEYS if kwargs.get(key) is not None}
    for key in ("min_pixels", "max_pixels"):
        if key in view and not (isinstance(view[key], int) and view[key] > 0):
            raise GgeError(f"reward keyword {key} must be a positive integer, got {view[key]!r}")
    if "flavor" in view:
        _check_flavor(view["flavor"])
    return view


def reward_values(result: SampleResult) -> dict[str, float]:
    """The numbers one scored response reports (every key always present, as verl needs).

    ``hit``: the answer's (first) point hits under the official rule, or it abstains on an absent
    target; ``oracle``: some point of the answer hits (``single_pass`` answers hold several);
    ``format_error``: nothing could be read; ``abstained``: the answer says the target is absent.
    """
    hit = float(result.top1.get(SELECTION, False))
    return {
        "score": hit,
        "acc": hit,
        "hit": hit,
        "oracle": float(result.oracle),
        "format_error": float(result.format_error),
        "abstained": float(result.abstained(SELECTION)),
    }


@functools.lru_cache(maxsize=64)
def _load_function(spec: str, what: str) -> tuple[Callable[..., Any], Any]:
    """``"pkg.module:function"`` or ``"path/to/file.py:function"`` -> (the function, its module)."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise GgeError(
            f"{what} must be 'package.module:function' or 'path/to/file.py:function', got {spec!r}"
        )
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where).expanduser()
        if not path.is_file():
            raise GgeError(f"{what} {spec!r}: no file {path}")
        module_name = "gge_fallback_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise GgeError(f"{what} {spec!r}: cannot load {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise GgeError(f"{what} {spec!r}: cannot import {where}: {e}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise GgeError(f"{what} {spec!r}: {where} has no function {name!r}")
    return fn, module


def _verl_default_compute_score() -> Callable[..., Any] | None:
    """The ``default_compute_score`` of verl, imported now (None without verl)."""
    try:
        module = importlib.import_module("verl.utils.reward_score")
    except ImportError:
        return None
    fn = getattr(module, "default_compute_score", None)
    return fn if callable(fn) else None


def _same_keys(result: Any) -> dict[str, Any]:
    """A fallback's result as a dict holding :data:`REWARD_KEYS` (what verl needs of every row)."""
    values: dict[str, Any] = dict(result) if isinstance(result, Mapping) else {"score": result}
    if "score" not in values:
        raise GgeError(f"the fallback reward returned a dict without 'score': {sorted(values)}")
    acc = values.setdefault("acc", values["score"])
    for key in ("hit", "oracle"):
        values.setdefault(key, acc)
    for key in ("format_error", "abstained"):
        values.setdefault(key, 0.0)
    return values


def _fallback_score(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Score a row that is not gge's with the ``fallback`` reward kwarg, else verl's default."""
    spec = kwargs.get("fallback")
    rest = {key: value for key, value in kwargs.items() if key not in _OWN_KEYS}
    fn: Callable[..., Any] | None
    if spec is None or spec == "":
        fn = _verl_default_compute_score()
        if fn is None:
            raise GgeError(
                f"data_source {data_source!r} is not a gge benchmark, and no reward can score it: gge's "
                "compute_score scores rows of `gge export verl` (data_source gge/<benchmark>) and passes "
                "others to the reward kwarg fallback (custom_reward_function.reward_kwargs.fallback="
                "pkg.module:function or path/to/file.py:function), else to verl's default_compute_score, "
                "which cannot be imported here (is verl installed?)"
            )
        try:
            result = fn(
                data_source=data_source,
                solution_str=solution_str,
                ground_truth=ground_truth,
                extra_info=extra_info,
                **rest,
            )
        except NotImplementedError:
            raise GgeError(
                f"data_source {data_source!r} is neither a gge benchmark nor one verl's "
                "default_compute_score knows: give its reward function as custom_reward_function."
                "reward_kwargs.fallback=pkg.module:function (or path/to/file.py:function)"
            ) from None
        return _same_keys(result)
    fn = spec if callable(spec) else _load_function(str(spec), "reward kwarg fallback")[0]
    result = fn(
        data_source=data_source,
        solution_str=solution_str,
        ground_truth=ground_truth,
        extra_info=extra_info,
        **rest,
    )
    return _same_keys(result)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The custom reward function of verl: one response scored by the benchmark's official rule.

    Configure verl with ``custom_reward_function.path=pkg://gge.integrations.verl`` (or the
    ``gge_reward.py`` the export writes) and ``custom_reward_function.name=compute_score``.

    Args:
        data_source: The row's ``data_source``: ``gge/<benchmark>``.
        solution_str: The model's response (decoded without special tokens).
        ground_truth: The row's ``reward_model.ground_truth`` (the JSON text the export wrote).
        extra_info: The row's ``extra_info`` (not needed: the ground truth is self-contained).
        **kwargs: Through ``custom_reward_function.reward_kwargs``: ``max_pixels`` / ``min_pixels`` /
            ``flavor`` when the trainer resizes images with other limits than the export assumed;
            ``fallback`` (``"pkg.module:function"``, ``"path/to/file.py:function"`` or a callable), the
            reward of rows that are not gge's (training data). gge's rows ignore anything else verl
            passes; a fallback gets it.

    Returns:
        ``score`` (1.0 for a hit, else 0.0: the reward), ``acc`` (the same, so verl's
        ``val-core/gge/<benchmark>/acc/mean@N`` is the micro Top-1), ``hit``, ``oracle``,
        ``format_error``, ``abstained`` (all floats, every key always present). Another data source's
        row gets its fallback's result as a dict holding these keys too (``score`` and ``acc`` the
        fallback's, ``hit`` and ``oracle`` its ``acc``, ``format_error`` and ``abstained`` 0.0, unless
        the fallback returns them): verl needs every row of a validation to return the same keys, so a
        validation set mixing gge's benchmarks with data whose fallback returns a float (or a dict of
        these keys) works; a fallback returning other keys needs its data validated in another run.

    Raises:
        GgeError: for a ground truth gge did not write under a ``gge/<benchmark>`` data source, or
            another data source no fallback can score (no ``fallback`` given, and verl is not installed
            or its ``default_compute_score`` does not know it).

    Example:
        >>> def exact(data_source, solution_str, ground_truth, extra_info=None):
        ...     return float(solution_str.strip() == ground_truth)
        >>> compute_score("openai/gsm8k", "72", "72", fallback=exact)["score"]
        1.0
    """
    if not isinstance(data_source, str) or not data_source.startswith(DATA_SOURCE_PREFIX):
        return _fallback_score(data_source, solution_str, ground_truth, extra_info, kwargs)
    gt = read_ground_truth(ground_truth)
    if data_source != DATA_SOURCE_PREFIX + gt.benchmark:
        raise GgeError(
            f"data_source {data_source!r} does not match its ground truth's benchmark {gt.benchmark!r}"
        )
    if not isinstance(solution_str, str):
        raise GgeError(f"solution_str must be a string, got {type(solution_str).__name__}")
    return reward_values(gt.score([solution_str], **_view_kwargs(kwargs)))


def compute_score_batch(reward_inputs: Sequence[Mapping[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    """EasyR1's batch reward function: ``worker.reward.reward_function=gge_reward.py:compute_score_batch``.

    EasyR1 scores training and validation with this one function: items whose ground truth is not
    gge's (training data) go to ``fallback``.

    Args:
        reward_inputs: ``{"response", "response_length", "ground_truth"}`` per response.
        **kwargs: ``worker.reward.reward_function_kwargs``: ``max_pixels`` / ``min_pixels`` when
            ``data.max_pixels`` / ``data.min_pixels`` differ from what the export assumed;
            ``fallback``: the reward of items that are not gge's, ``"path/to/file.py:function"``,
            ``"pkg.module:function"`` or a callable, called as EasyR1 calls a reward function (with
            the list of those items, or one item at a time when its module sets
            ``REWARD_TYPE = "sequential"``) and with the other keyword arguments.

    Returns:
        Per response: ``overall`` (the reward: 1.0 for a hit), ``accuracy`` (the same),
        ``format`` (1.0 when the answer could be read), the keys of :func:`reward_values`, and
        ``<benchmark>/accuracy``, so EasyR1's ``val/<benchmark>/accuracy_reward`` is the benchmark's
        micro Top-1; the fallback's result for the other items (EasyR1 averages each key over the
        responses that return it).

    Raises:
        GgeError: for a malformed input, or an item that is not gge's without a ``fallback``.

    Example:
        >>> gt = GroundTruth("osworld_g", "3", Absent(), (800, 600), (800, 600), (812, 588), (812, 588))
        >>> item = {"response": "The element is not visible.", "ground_truth": gt.to_json()}
        >>> out = compute_score_batch([item])
        >>> out[0]["overall"], out[0]["osworld_g/accuracy"], out[0]["abstained"]
        (1.0, 1.0, 1.0)
    """
    view = _view_kwargs(kwargs)
    out: list[dict[str, Any] | None] = []
    others: list[int] = []
    for i, item in enumerate(reward_inputs):
        try:
            truth = item["ground_truth"]
            response = item["response"]
        except (KeyError, TypeError) as e:
            raise GgeError(f"reward input {i}: needs 'response' and 'ground_truth' ({e})") from None
        if not is_gge_ground_truth(truth):
            others.append(i)
            out.append(None)
            continue
        try:
            gt = read_ground_truth(truth)
        except GgeError as e:
            raise GgeError(f"reward input {i}: {e}") from None
        values = reward_values(gt.score([str(response)], **view))
        out.append(
            {
                "overall": values["score"],
                "accuracy": values["hit"],
                "format": 1.0 - values["format_error"],
                **values,
                f"{gt.benchmark}/accuracy": values["hit"],
            }
        )
    if others:
        scored = _batch_fallback([reward_inputs[i] for i in others], others[0], kwargs)
        for i, result in zip(others, scored, strict=True):
            out[i] = result
    return [o for o in out if o is not None]


def _batch_fallback(
    items: list[Mapping[str, Any]], first: int, kwargs: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """EasyR1: score the items that are not gge's with the ``fallback`` kwarg (one list, in order)."""
    spec = kwargs.get("fallback")
    if spec is None or spec == "":
        raise GgeError(
            f"reward input {first}: the ground truth is not one `gge export verl` wrote (training data?): "
            "give the reward function of other data as worker.reward.reward_function_kwargs.fallback="
            "path/to/file.py:function (EasyR1 scores training and validation with one function)"
        )
    rest = {key: value for key, value in kwargs.items() if key not in _OWN_KEYS}
    if callable(spec):
        fn, kind = spec, "batch"
    else:
        fn, module = _load_function(str(spec), "reward kwarg fallback")
        kind = getattr(module, "REWARD_TYPE", "batch")
    sequential = kind == "sequential"
    results = [fn(item, **rest) for item in items] if sequential else list(fn(items, **rest))
    if len(results) != len(items) or not all(isinstance(r, Mapping) for r in results):
        raise GgeError(
            f"the fallback reward returned {len(results)} results for {len(items)} inputs; EasyR1 needs "
            "one dict per input"
        )
    return [dict(r) for r in results]


# ---------------------------------------------------------------------------------------- export


def _pyarrow() -> Any:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise GgeError("gge export verl needs pyarrow: pip install 'gge[verl]'") from None
    return pa, pq


def _flat_messages(messages: Sequence[Mapping[str, Any]], where: str) -> list[dict[str, str]]:
    """The chat messages of eval with string contents, the image parts as ``<image>`` placeholders."""
    out = []
    for m in messages:
        parts = []
        for part in m["content"]:
            if part["type"] == "image":
                parts.append(IMAGE_TOKEN)
                continue
            text = str(part["text"])
            if IMAGE_TOKEN in text or "<video>" in text:
                raise GgeError(
                    f"{where}: the request's text holds '<image>' or '<video>', which the trainers "
                    "would read as a placeholder"
                )
            parts.append(text)
        out.append({"role": str(m["role"]), "content": "".join(parts)})
    return out


def _easyr1_prompt(messages: list[dict[str, str]], fold_system: bool, preset: str) -> str:
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    if not fold_system:
        roles = ", ".join(m["role"] for m in messages)
        raise GgeError(
            f"model={preset} sends {len(messages)} messages ({roles}), and EasyR1 builds one user turn from "
            "the prompt (verl/utils/dataset.py, RLHFDataset._build_messages): export with flavor=verl, or "
            "add fold_system=true to join them into one user turn (then the request differs from eval's)"
        )
    return "\n\n".join(m["content"] for m in messages)


@dataclass
class ExportConfig:
    """What ``gge export verl`` accepts (``key=value``; also ``model.<key>=``, ``bench.<name>.<key>=``).

    Attributes:
        benchmarks: Benchmarks to export.
        data_root: Folder holding one folder per benchmark (unset: the synthetic demo suite).
        out: The output folder (required).
        model: The preset whose request is exported.
        flavor: ``verl`` or ``easyr1``.
        k: Candidates of a ``single_pass`` / ``sampling`` preset (as eval's ``k``).
        max_samples: Export only the first N samples of each benchmark.
        max_pixels: The trainer's largest image area (verl: default the preset's ``max_pixels``;
            EasyR1: its ``data.max_pixels``, default 4194304).
        min_pixels: The trainer's smallest image area (verl: the preset's; EasyR1: ``data.min_pixels``,
            default 262144).
        resize_images: Write each screenshot at the size the model sees (as eval resizes it), so the
            trainer does not resize it again; false writes the original files.
        fold_system: EasyR1: join a system prompt and several user messages into one user turn.
        overwrite: Clear ``out`` first when it is not empty: everything in it is deleted, not only
            the files an export writes (without it a non-empty ``out`` is refused, so that no file
            of an earlier export is left beside the new ones).
        seed: Seed of the demo suite.
    """

    benchmarks: list[str] = field(default_factory=lambda: list(DEFAULT_BENCHMARKS))
    data_root: str | None = None
    out: str | None = None
    model: str = "qwen2_5_vl"
    flavor: str = "verl"
    k: int = 5
    max_samples: int | None = None
    max_pixels: int | None = None
    min_pixels: int | None = None
    resize_images: bool = True
    fold_system: bool = False
    overwrite: bool = False
    seed: int = 0


def _encode_png(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _schema(pa: Any, flavor: str) -> Any:
    if flavor == "easyr1":
        return pa.schema(
            [
                ("prompt", pa.string()),
                ("answer", pa.string()),
                ("images", pa.list_(pa.struct([("bytes", pa.binary())]))),
                ("data_source", pa.string()),
            ]
        )
    image = pa.struct([("bytes", pa.binary()), ("min_pixels", pa.int64()), ("max_pixels", pa.int64())])
    extra = pa.struct(
        [
            ("index", pa.int64()),
            ("split", pa.string()),
            ("benchmark", pa.string()),
            ("sample_id", pa.string()),
            ("instruction", pa.string()),
            ("image_size", pa.list_(pa.int64())),
            ("seen_size", pa.list_(pa.int64())),
            ("preset", pa.string()),
            ("convention", pa.string()),
            ("prefill_dropped", pa.string()),
        ]
    )
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("images", pa.list_(image)),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", extra),
        ]
    )


def _listing(folder: Path, limit: int = 8) -> str:
    """The names in ``folder`` for a message: sorted, folders with a trailing ``/``, the first ``limit``."""
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names)} entries)"


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both resolved)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def _has_content(folder: Path) -> bool:
    """Whether ``folder`` holds anything but empty folders (an export that stopped before writing).

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> (folder / "data" / "sub").mkdir(parents=True)
        >>> _has_content(folder)
        False
    """
    return any(c.is_symlink() or not c.is_dir() or _has_content(c) for c in folder.iterdir())


def prepare_out(out: Path, *, overwrite: bool, keep: Sequence[Path] = ()) -> None:
    """Make ``out`` an empty folder for an export (refusing a file, or content without ``overwrite``).

    A folder holding only empty folders (an export that stopped before writing) counts as empty.
    With ``overwrite`` the folder's whole content is deleted (not only the files an export writes);
    a folder holding one of ``keep`` (the data being exported) or the working directory is refused
    rather than cleared.

    Args:
        out: The export's folder.
        overwrite: Clear a non-empty ``out``.
        keep: Paths that must survive (the benchmarks' folders).

    Raises:
        GgeError: ``out`` is a file, is not empty (without ``overwrite``), holds ``keep`` or the working
            directory, or cannot be created or cleared.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "old.parquet").write_bytes(b"")
        >>> prepare_out(folder, overwrite=True)
        >>> sorted(p.name for p in folder.iterdir())
        ['data']
    """
    if out.exists() and not out.is_dir():
        raise GgeError(f"out={out} is a file, not a folder: give the folder the export goes to")
    if out.is_dir() and _has_content(out):
        if not overwrite:
            raise GgeError(
                f"out={out} is not empty ({_listing(out)}): give a new or empty folder, or add "
                "overwrite=true to delete its content first (an earlier export's files left beside the "
                "new ones would be read as part of it)"
            )
        for path, what in [(Path.cwd(), "the working directory"), *((k, "the data") for k in keep)]:
            if _inside(path, out):
                raise GgeError(
                    f"out={out} holds {what} ({path}): overwrite=true would delete it; give another folder"
                )
        for child in list(out.iterdir()):
            try:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            except OSError as e:
                raise GgeError(f"out={out}: cannot delete {child.name}: {e.strerror or e}") from None
    try:
        (out / "data").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GgeError(f"out={out}: cannot create the folder: {e.strerror or e}") from None


def export_verl(
    benchmarks: Sequence[str],
    data_root: str | Path,
    out: str | Path,
    *,
    model: str = "qwen2_5_vl",
    model_overrides: Mapping[str, Any] | None = None,
    flavor: str = "verl",
    k: int = 5,
    max_samples: int | None = None,
    max_pixels: int | None = None,
    min_pixels: int | None = None,
    resize_images: bool = True,
    fold_system: bool = False,
    bench_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Write the benchmarks as validation parquet files for verl or EasyR1.

    Each sample is asked exactly as ``python eval.py model=<model>`` asks it (``dry_run=true`` shows
    the same messages), except the assistant prefill, which the trainers cannot send (see the module
    notes). Files: ``out/data/<benchmark>.parquet``, ``out/manifest.json`` (settings, counts, the
    trainer options to set) and ``out/gge_reward.py`` (the reward module to point the trainer at).

    Args:
        benchmarks: Benchmark names.
        data_root: Folder holding one folder per benchmark.
        out: Output folder.
        model: The preset (``configs/models/<model>.yaml``).
        model_overrides: ``model.<key>`` values, e.g. ``{"proposer": "sampling"}``.
        flavor: ``verl`` or ``easyr1``.
        k: Candidates of ``single_pass`` / ``sampling`` presets.
        max_samples: Only the first N samples of each benchmark.
        max_pixels: The trainer's largest image area (see :class:`ExportConfig`).
        min_pixels: The trainer's smallest image area.
        resize_images: Write screenshots at the size the model sees (default) or as they are.
        fold_system: EasyR1: join the request's messages into one user turn.
        bench_options: Per benchmark, its options object (``bench.<name>.<option>``).
        overwrite: Delete the content of a non-empty ``out`` first (see :func:`prepare_out`); without
            it a non-empty ``out`` is refused.

    Returns:
        The parquet files, one per benchmark, in order.

    Raises:
        GgeError: for an unknown benchmark, preset or flavor, an unreadable screenshot, a request
            EasyR1 cannot carry, an ``out`` that is a file or not empty (without ``overwrite``).

    Example:
        >>> import tempfile
        >>> from gge.demo import write_demo_suite
        >>> root = write_demo_suite(Path(tempfile.mkdtemp()), per_benchmark=12)
        >>> files = export_verl(["osworld_g"], root, Path(tempfile.mkdtemp()), max_samples=2)
        >>> [f.name for f in files]
        ['osworld_g.parquet']
    """
    from PIL import Image

    from gge.cli.eval import protocol_statement
    from gge.models.factory import PROCESSOR_MAX_PIXELS, dry_run_policy, preset_config, preset_names

    pa, pq = _pyarrow()
    _check_flavor(flavor)
    if model not in preset_names():
        raise unknown_name("preset (model=)", model, preset_names())
    if not benchmarks:
        raise GgeError("benchmarks is empty: name at least one, e.g. 'benchmarks=[screenspot_v2]'")
    if len(set(benchmarks)) != len(benchmarks):
        raise GgeError(f"benchmarks lists a name twice: {list(benchmarks)}")
    if max_samples is not None and max_samples < 1:
        raise GgeError(f"max_samples must be at least 1, got {max_samples}")
    for name, value in (("max_pixels", max_pixels), ("min_pixels", min_pixels)):
        if value is not None and value < 1:
            raise GgeError(f"{name} must be a positive integer, got {value}")
    benches = [get_benchmark(b) for b in benchmarks]
    m = preset_config(model, dict(model_overrides or {}))
    policy = dry_run_policy(m, k)
    settings = policy.settings_
    factor = settings.patch_factor
    proc_min = settings.min_pixels
    proc_max = int(m.max_pixels) if m.max_pixels is not None else PROCESSOR_MAX_PIXELS
    if flavor == "verl":
        t_min = proc_min if min_pixels is None else min_pixels
        t_max = proc_max if max_pixels is None else max_pixels
    else:
        t_min = EASYR1_MIN_PIXELS if min_pixels is None else min_pixels
        t_max = EASYR1_MAX_PIXELS if max_pixels is None else max_pixels
    lo, hi = max(proc_min, t_min), min(proc_max, t_max)
    if lo > hi:
        raise GgeError(f"min_pixels {lo} exceeds max_pixels {hi} (trainer and model {model} limits together)")

    roots = []
    for bench in benches:
        given = getattr((bench_options or {}).get(bench.name), "root", None)
        roots.append(Path(str(given)) if given else Path(data_root) / bench.directory)
    out = Path(out)
    prepare_out(out, overwrite=overwrite, keep=roots)
    schema = _schema(pa, flavor)
    files: list[Path] = []
    counts: dict[str, int] = {}
    prefills: set[str] = set()
    tokens = 0
    folded = False
    for bench, root in zip(benches, roots, strict=True):
        opts = (bench_options or {}).get(bench.name) or bench.options_type()
        samples = bench.load(root, opts).samples
        samples = samples if max_samples is None else samples[:max_samples]
        rows: list[dict[str, Any]] = []
        for index, sample in enumerate(samples):
            where = f"{bench.name} {sample.id}"
            try:
                with Image.open(sample.image_path) as im:
                    rgb = im.convert("RGB")
                    decoded = rgb.size
            except OSError as e:
                raise GgeError(f"{where}: cannot read {sample.image_path}: {e}") from None
            if resize_images:
                h, w = smart_resize(decoded[1], decoded[0], factor=factor, min_pixels=lo, max_pixels=hi)
                seen = (w, h)
                image = rgb if seen == rgb.size else rgb.resize(seen, Image.Resampling.BICUBIC)
                data, exported = _encode_png(image), seen
            else:
                data, exported = Path(sample.image_path).read_bytes(), decoded
                seen = trainer_seen_size(
                    flavor,
                    decoded,
                    factor=factor,
                    min_pixels=t_min,
                    max_pixels=t_max,
                    processor_min_pixels=proc_min,
                    processor_max_pixels=proc_max,
                )
            frame = policy.prompt_size(sample, seen)
            (spec,) = policy.proposer_requests(sample, seen)
            messages = _flat_messages(spec.messages, where)
            if spec.prefill:
                prefills.add(spec.prefill)
            # image tokens (one per factor x factor patch) + text: a byte-level BPE token (Qwen's) is at
            # least one UTF-8 byte, so the bytes bound the text's tokens; 64 for the chat template's own
            text_bytes = sum(len(msg["content"].encode("utf-8")) for msg in messages)
            tokens = max(tokens, (seen[0] // factor) * (seen[1] // factor) + text_bytes + 64)
            gt = GroundTruth(
                benchmark=bench.name,
                id=sample.id,
                region=sample.region,
                image_size=sample.image_size,
                exported_size=exported,
                seen_size=seen,
                frame=frame,
                labels=sample.labels,
                instruction=sample.instruction,
                image_path=str(sample.image_path),
                preset=model,
                convention=settings.convention,
                proposer=settings.proposer,
                k=settings.k,
                box_pairs=settings.box_pairs,
                patch_factor=factor,
                prompt_max_pixels=settings.prompt_max_pixels,
                processor_min_pixels=proc_min,
                processor_max_pixels=proc_max,
                flavor=flavor,
                trainer_min_pixels=t_min,
                trainer_max_pixels=t_max,
            ).to_json()
            source = DATA_SOURCE_PREFIX + bench.name
            if flavor == "easyr1":
                prompt = _easyr1_prompt(messages, fold_system, model)
                folded = folded or len(messages) > 1
                rows.append(
                    {"prompt": prompt, "answer": gt, "images": [{"bytes": data}], "data_source": source}
                )
                continue
            rows.append(
                {
                    "data_source": source,
                    "prompt": messages,
                    "images": [{"bytes": data, "min_pixels": t_min, "max_pixels": t_max}],
                    "ability": ABILITY,
                    "reward_model": {"style": "rule", "ground_truth": gt},
                    "extra_info": {
                        "index": index,
                        "split": "test",
                        "benchmark": bench.name,
                        "sample_id": sample.id,
                        "instruction": sample.instruction,
                        "image_size": list(sample.image_size),
                        "seen_size": list(seen),
                        "preset": model,
                        "convention": settings.convention,
                        "prefill_dropped": spec.prefill,
                    },
                }
            )
        path = out / "data" / f"{bench.name}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        files.append(path)
        counts[bench.name] = len(rows)
    (out / "gge_reward.py").write_text(REWARD_MODULE, encoding="utf-8")
    manifest = {
        "gge_export": GROUND_TRUTH_VERSION,
        "flavor": flavor,
        "preset": model,
        "model_overrides": dict(model_overrides or {}),
        "protocol": protocol_statement(m),
        "settings": settings.record(),
        "files": {b.name: str(f) for b, f in zip(benches, files, strict=True)},
        "samples": counts,
        "data_root": str(data_root),
        "max_samples": max_samples,
        "image": {
            "resized": resize_images,
            "factor": factor,
            "trainer_min_pixels": t_min,
            "trainer_max_pixels": t_max,
            "processor_min_pixels": proc_min,
            "processor_max_pixels": proc_max,
        },
        "prefill_dropped": sorted(prefills)[0] if len(prefills) == 1 else sorted(prefills) or None,
        "request_changed": (
            "the preset's assistant prefill is not sent (the trainers cannot prefill)" if prefills else None
        ),
        "folded_messages": folded,
        "trainer_options": trainer_options(
            flavor,
            out,
            files,
            settings.proposer,
            settings.k,
            t_min,
            t_max,
            settings.max_new_tokens,
            -(-tokens // 256) * 256,
            temperature=settings.temperature,
            top_p=settings.top_p,
            top_k=settings.top_k,
        ),
        "trainer_notes": trainer_notes(flavor, settings.proposer, settings.k, sum(counts.values())),
    }
    if folded:
        notes = [
            str(manifest["request_changed"] or ""),
            "the request's messages are joined into one user turn",
        ]
        manifest["request_changed"] = "; ".join(x for x in notes if x)
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return files


REWARD_MODULE = '''"""gge's reward for verl and EasyR1 (written by `gge export verl`).

verl:   custom_reward_function.path=THIS_FILE custom_reward_function.name=compute_score
EasyR1: worker.reward.reward_function=THIS_FILE:compute_score_batch
"""

from gge.integrations.verl import REWARD_NAME, REWARD_TYPE, compute_score, compute_score_batch

__all__ = ["REWARD_NAME", "REWARD_TYPE", "compute_score", "compute_score_batch"]
'''
"""The reward module the export writes next to the data (``gge_reward.py``)."""


def trainer_options(
    flavor: str,
    out: Path,
    files: Sequence[Path],
    proposer: str,
    k: int,
    min_pixels: int | None,
    max_pixels: int | None,
    max_new_tokens: int = 256,
    prompt_tokens: int = 1024,
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
) -> list[str]:
    """The trainer's command-line options that use an export (printed and put in the manifest).

    ``prompt_tokens`` is an upper bound of the longest prompt (image tokens, plus the text's UTF-8 bytes:
    a byte-level BPE token holds at least one byte, plus 64 for the chat template's own tokens): both
    trainers drop longer prompts silently (``filter_overlong_prompts``), so ``data.max_prompt_length``
    must reach it (``gge summarize-verl --export`` counts dropped samples as misses).

    The validation's decoding is the preset's: a ``sampling`` preset asks for K responses at its
    ``temperature`` / ``top_p`` / ``top_k`` (``top_k`` -1 when the preset leaves it off), any other
    one response at temperature 0. verl reads ``actor_rollout_ref.rollout.val_kwargs.{n, do_sample,
    temperature, top_p, top_k}`` (``trainer/config/rollout/rollout.yaml``; its agent loop samples at
    ``val_kwargs.temperature``, default 0, whatever ``do_sample`` says); EasyR1 sets every key of
    ``worker.rollout.val_override_config`` that vLLM's ``SamplingParams`` has (``n``, ``temperature``,
    ``top_p``, ``top_k``: ``verl/workers/rollout/vllm_rollout_spmd.py``), its example config
    validating at temperature 0.6.

    Example:
        >>> opts = trainer_options("verl", Path("x"), [Path("x/a.parquet")], "sampling", 4, None, None,
        ...                        temperature=0.7, top_p=0.9)
        >>> [o.split("val_kwargs.")[1] for o in opts if "val_kwargs" in o]
        ['n=4', 'do_sample=True', 'temperature=0.7', 'top_p=0.9', 'top_k=-1']
    """
    reward = out / "gge_reward.py"
    n = k if proposer == "sampling" else 1
    if n > 1:
        sampling = {"temperature": temperature, "top_p": top_p, "top_k": top_k if top_k > 0 else -1}
    else:
        sampling = {"temperature": 0}
    if flavor == "verl":
        listed = ",".join(str(f) for f in files)
        val = "actor_rollout_ref.rollout.val_kwargs"
        return [
            f"data.val_files=[{listed}]",
            "data.prompt_key=prompt",
            "data.image_key=images",
            f"data.max_prompt_length={prompt_tokens}",
            f"custom_reward_function.path={reward}",
            "custom_reward_function.name=compute_score",
            f"{val}.n={n}",
            f"{val}.do_sample={'True' if n > 1 else 'False'}",
            *(f"{val}.{key}={value}" for key, value in sampling.items()),
            f"data.max_response_length={max_new_tokens}",
            "trainer.validation_data_dir=DIR  (then: gge summarize-verl DIR)",
        ]
    return [
        f"data.val_files={out / 'data'}",
        "data.prompt_key=prompt",
        "data.answer_key=answer",
        "data.image_key=images",
        "data.format_prompt=null",
        f"data.max_prompt_length={prompt_tokens}",
        f"data.min_pixels={min_pixels}",
        f"data.max_pixels={max_pixels}",
        f"worker.reward.reward_function={reward}:compute_score_batch",
        f"worker.rollout.val_override_config.n={n}",
        *(f"worker.rollout.val_override_config.{key}={value}" for key, value in sampling.items()),
        f"data.max_response_length={max_new_tokens}",
    ]


def trainer_notes(flavor: str, proposer: str, k: int, rows: int) -> list[str]:
    """What to know when using the printed options (printed under them and put in the manifest).

    Args:
        flavor: ``verl`` or ``easyr1``.
        proposer: The preset's proposer mode.
        k: Its K.
        rows: Samples exported (all benchmarks).
    """
    n = k if proposer == "sampling" else 1
    if flavor == "verl":
        notes = [
            "training on other data in the same run: verl scores training and validation with "
            "custom_reward_function, so gge's compute_score passes rows whose data_source is not gge/... "
            "to verl's default_compute_score, or to your reward given as "
            "custom_reward_function.reward_kwargs.fallback=pkg.module:function (or path/to/file.py:function)",
        ]
    else:
        notes = [
            "training on other data in the same run: EasyR1 scores training and validation with one "
            "reward function, so give your reward of the training data as "
            "worker.reward.reward_function_kwargs.fallback=path/to/file.py:function (a batch function, or "
            'sequential when its module sets REWARD_TYPE = "sequential"); without it a non-gge item raises',
            "EasyR1 dumps no full generations: with trainer.logger including file, it appends "
            "trainer.val_generations_to_log shuffled responses to <trainer.save_checkpoint_path>/"
            "generations.log at each validation, unmarked by step; "
            f"trainer.val_generations_to_log={rows * n} logs every response. gge summarize-verl reads one "
            "validation's blocks of it as a sample of the validation set",
        ]
    if proposer == "sampling" and k > 1:
        notes.append(
            f"the trainer samples all {k} responses (eval's sampling proposer answers greedily first): "
            "the summary's Top-1 is the first sampled response; export a greedy preset for eval's Top-1"
        )
    return notes


def parse_export_args(argv: Sequence[str]) -> tuple[ExportConfig, dict[str, Any], dict[str, Any]]:
    """``key=value`` arguments of ``gge export verl`` -> (config, model overrides, benchmark options).

    Example:
        >>> args = ["benchmarks=[osworld_g]", "out=/tmp/x", "model.proposer=sampling"]
        >>> cfg, over, _ = parse_export_args(args)
        >>> cfg.benchmarks, cfg.out, over
        (['osworld_g'], '/tmp/x', {'proposer': 'sampling'})
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from gge.cli.eval import BenchConfig

    plain: list[str] = []
    model_args: list[str] = []
    bench_args: list[str] = []
    for arg in argv:
        if "=" not in arg:
            raise GgeError(
                f"arguments are key=value pairs, got {arg!r} (e.g. 'benchmarks=[screenspot_pro]' out=DIR)"
            )
        key = arg.split("=", 1)[0]
        if key.startswith("model."):
            model_args.append(arg[len("model.") :])
        elif key.startswith("bench."):
            bench_args.append(arg[len("bench.") :])
        else:
            plain.append(arg)
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(ExportConfig), OmegaConf.from_dotlist(plain))
        bench = OmegaConf.merge(OmegaConf.structured(BenchConfig), OmegaConf.from_dotlist(bench_args))
        overrides = OmegaConf.to_container(OmegaConf.from_dotlist(model_args), resolve=True)
    except OmegaConfBaseException as e:
        bad = getattr(e, "full_key", None) or "arguments"
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise GgeError(f"bad export option ({bad}): {msg}") from None
    config = OmegaConf.to_object(cfg)
    assert isinstance(config, ExportConfig) and isinstance(overrides, dict)
    options = {str(name): OmegaConf.to_object(value) for name, value in bench.items()}
    return config, {str(k): v for k, v in overrides.items()}, options


def export_help() -> str:
    """``gge export verl --help``: how to call it, every key with its default and meaning, the names.

    Example:
        >>> text = export_help()
        >>> "  flavor=verl" in text and "  k=5" in text and "Models (model=):" in text
        True
    """
    from omegaconf import OmegaConf

    from gge.models.factory import preset_names

    meaning: dict[str, str] = {}
    last = ""
    doc = (ExportConfig.__doc__ or "").split("Attributes:", 1)[-1]
    for line in doc.splitlines():
        m = re.match(r"\s{8}(\w+): (.*)", line)
        if m:
            last = m[1]
            meaning[last] = m[2].strip()
        elif line.strip() and last:
            meaning[last] += " " + line.strip()
    defaults = OmegaConf.to_container(OmegaConf.structured(ExportConfig))
    assert isinstance(defaults, dict)
    lines = [
        "usage: gge export verl key=value ... [model.<key>=value ...] [bench.<name>.<option>=value ...]",
        "",
        "Write gge's benchmarks as validation parquet files for verl or EasyR1",
        "(out/data/<benchmark>.parquet), out/gge_reward.py (the reward) and out/manifest.json, asking",
        "each sample as `python eval.py model=<preset>` asks it, and print the trainer options to use.",
        "",
        "Keys (key=default):",
    ]
    for key, value in defaults.items():
        name = str(key)
        shown = json.dumps(value) if value is None or isinstance(value, (bool, list, dict)) else str(value)
        lines.append(f"  {name}={shown}")
        if meaning.get(name):
            lines.append(f"      {meaning[name]}")
    lines += [
        "",
        "model.<key>=value overrides a key of the preset (e.g. model.proposer=sampling), as in eval.py;",
        "bench.<name>.<option>=value sets a benchmark's option (e.g. bench.screenspot_pro.root=DIR).",
        "",
        f"Models (model=): {', '.join(preset_names())}",
        "Benchmarks: " + ", ".join(REGISTRY),
    ]
    return "\n".join(lines)


def export_main(argv: Sequence[str]) -> int:
    """``gge export verl key=value ...``: write the parquet files, print where and how to use them.

    Returns:
        0 on success (bad input raises :class:`~gge.errors.GgeError`).
    """
    args = list(argv)
    if args and args[0] == "verl":
        args = args[1:]
    elif args and "=" not in args[0] and args[0] not in ("-h", "--help"):
        raise GgeError(f"unknown export target {args[0]!r}; known: verl (gge export verl key=value ...)")
    if any(a in ("-h", "--help") for a in args):
        print(export_help())
        return 0
    cfg, overrides, options = parse_export_args(args)
    if not cfg.out:
        raise GgeError("out=DIR is required: the folder the parquet files go to")
    if cfg.data_root is None:
        from gge.demo import demo_root

        data_root = demo_root(cfg.seed)
        print(f"data_root not set: using the synthetic demo suite at {data_root}")
    else:
        data_root = Path(cfg.data_root)
    files = export_verl(
        cfg.benchmarks,
        data_root,
        cfg.out,
        model=cfg.model,
        model_overrides=overrides,
        flavor=cfg.flavor,
        k=cfg.k,
        max_samples=cfg.max_samples,
        max_pixels=cfg.max_pixels,
        min_pixels=cfg.min_pixels,
        resize_images=cfg.resize_images,
        fold_system=cfg.fold_system,
        bench_options=options,
        overwrite=cfg.overwrite,
    )
    manifest = json.loads((Path(cfg.out) / "manifest.json").read_text(encoding="utf-8"))
    for name, n in manifest["samples"].items():
        print(f"{name}: {n} samples -> {manifest['files'][name]}")
    if manifest.get("request_changed"):
        print(f"note: {manifest['request_changed']}")
    print(f"\n{cfg.flavor} options:\n  " + "\n  ".join(manifest["trainer_options"]))
    for note in manifest["trainer_notes"]:
        print(f"note: {note}")
    print(f"\nwrote {len(files)} files and {Path(cfg.out) / 'manifest.json'}")
    return 0


# ------------------------------------------------------------------------------------- summarize


@dataclass(frozen=True)
class DumpRecord:
    """One response read from a trainer's validation dump.

    Attributes:
        where: ``file:line`` (or ``file: block N``) for messages.
        output: The model's response.
        ground_truth: The sample's ground truth.
        step: The training step, when the dump says it.
    """

    where: str
    output: str
    ground_truth: GroundTruth
    step: int | None


@dataclass(frozen=True)
class Dump:
    """The responses :func:`read_dump` read from one dump file.

    Attributes:
        file: The file read.
        records: The responses to gge's samples, in the file's order.
        format: ``verl`` (``<step>.jsonl``) or ``easyr1`` (``generations.log``).
        step: The training step (None when the file has none, or several).
        skipped: Responses whose ground truth is not gge's (other data validated alongside).
        repaired: Where (``file:line``) a response held lone surrogates, replaced by U+FFFD.
    """

    file: Path
    records: list[DumpRecord]
    format: str
    step: int | None
    skipped: int = 0
    repaired: tuple[str, ...] = ()

    @property
    def steps(self) -> list[int | None]:
        """The distinct steps of the records, in order (None: the file does not say)."""
        return sorted({r.step for r in self.records}, key=lambda x: (x is not None, x or 0))


_EASYR1_BLOCK = re.compile(
    r"\[prompt\] (?P<prompt>.*?)\n\[output\] (?P<output>.*?)\n"
    r"\[ground_truth\] (?P<gt>.*?)\n\[score\] (?P<score>[^\n]*)(?:\n|\Z)",
    re.DOTALL,
)
"""One ``[prompt] / [output] / [ground_truth] / [score]`` block of EasyR1's ``generations.log`` (the last
one may end the file without a newline)."""


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone UTF-16 surrogate (JSON's ``"\\ud800"``): a Python string can hold it, UTF-8 cannot."""


def _dump_truth(value: Any, where: str, what: str) -> GroundTruth:
    """A dumped ground truth, read; errors name the line (a gge one holds no lone surrogate)."""
    try:
        gt = read_ground_truth(value)
    except GgeError as e:
        raise GgeError(f"{where}: {what}: {e}") from None
    if _SURROGATE.search(gt.to_json()):
        raise GgeError(
            f"{where}: {what}: holds a lone surrogate (invalid Unicode, e.g. \\ud800), which `gge export "
            "verl` never writes: the dump was altered"
        )
    return gt


def _dump_file(path: Path, step: int | None) -> tuple[Path, int | None]:
    """The file to read: ``path`` itself, or in a ``validation_data_dir`` the step's ``<step>.jsonl``."""
    if path.is_file():
        return path, step
    if not path.is_dir():
        raise GgeError(f"dump not found: {path}")
    steps = {int(p.stem): p for p in path.glob("*.jsonl") if p.stem.isdigit()}
    if steps:
        listed = ", ".join(map(str, sorted(steps)))
        if step is None and len(steps) > 1:
            raise GgeError(
                f"{path} holds the validations of {len(steps)} training steps ({listed}): summarize one at "
                "a time, choosing its step with --step N (summarize_verl(step=N))"
            )
        chosen = next(iter(steps)) if step is None else step
        if chosen not in steps:
            raise GgeError(f"{path}: no {chosen}.jsonl; steps dumped: {listed}")
        return steps[chosen], chosen
    if (path / "generations.log").is_file():
        return path / "generations.log", step
    raise GgeError(
        f"{path}: no <step>.jsonl (verl trainer.validation_data_dir) and no generations.log (EasyR1)"
    )


def read_dump(path: str | Path, *, step: int | None = None) -> Dump:
    """Read the responses of one validation from a verl dump or an EasyR1 ``generations.log``.

    Responses whose ground truth is not gge's (another data set validated alongside) are skipped and
    counted; a malformed line, or a gge ground truth that does not read, is an error.

    Args:
        path: A ``<step>.jsonl`` file, verl's ``trainer.validation_data_dir`` (its one step, or
            ``step`` when it holds several), or EasyR1's ``generations.log`` (or the folder holding
            it: EasyR1 appends every validation's ``trainer.val_generations_to_log`` shuffled
            responses to it, unmarked by step, so give it a file holding one validation).
        step: The training step to read (verl).

    Returns:
        The file's responses to gge's samples.

    Raises:
        GgeError: naming the file and line (or block) at fault, or when no response is gge's.
    """
    file, step = _dump_file(Path(path), step)
    text = read_text(file)
    records: list[DumpRecord] = []
    skipped = 0
    if text.startswith("[prompt] "):
        for i, block in enumerate(_EASYR1_BLOCK.finditer(text), start=1):
            where = f"{file}: block {i}"
            if not is_gge_ground_truth(block["gt"]):
                skipped += 1
                continue
            gt = _dump_truth(block["gt"], where, "[ground_truth]")
            records.append(DumpRecord(where, block["output"], gt, None))
        if not records:
            what = "no [prompt]/[output]/[ground_truth]/[score] blocks"
            if skipped:
                plural = "s" if skipped > 1 else ""
                what = f"{skipped} block{plural}, none with a ground truth `gge export verl` wrote"
            raise GgeError(f"{file}: {what}")
        return Dump(file, records, "easyr1", None, skipped)
    seen_steps: set[int] = set()
    repaired: list[str] = []
    for _, where, obj in json_lines(text, file):
        if not isinstance(obj, dict) or not isinstance(obj.get("output"), str):
            raise GgeError(f"{where}: expected a JSON object with a string 'output' (verl's dump format)")
        if "gts" not in obj:
            raise GgeError(
                f"{where}: no 'gts' field: verl dumps the ground truth from v0.5 on (PR #2353); "
                "upgrade verl to summarize its generations"
            )
        line_step = obj.get("step")
        if isinstance(line_step, int):
            seen_steps.add(line_step)
        if step is not None and line_step != step:
            continue
        if not is_gge_ground_truth(obj["gts"]):
            skipped += 1
            continue
        gt = _dump_truth(obj["gts"], where, "field 'gts'")
        output = obj["output"]
        if _SURROGATE.search(output):  # JSON's "\ud800" escape: UTF-8 cannot write it into the outputs
            repaired.append(where)
            output = _SURROGATE.sub("\ufffd", output)
        records.append(DumpRecord(where, output, gt, line_step if isinstance(line_step, int) else None))
    if not records:
        hint = f"; steps in it: {', '.join(map(str, sorted(seen_steps)))}" if seen_steps else ""
        of_step = f" of step {step}" if step is not None else ""
        if skipped:
            raise GgeError(
                f"{file}: no responses to gge's samples{of_step}: its {skipped} responses have ground truths "
                "that `gge export verl` did not write"
            )
        raise GgeError(f"{file}: no responses{of_step}{hint}")
    steps = {r.step for r in records}
    if step is None and len(steps) == 1:
        step = next(iter(steps))
    return Dump(file, records, "verl", step, skipped, tuple(repaired))


def _export_ground_truths(export: Path) -> list[GroundTruth]:
    """The ground truths of every row of an export folder (to count samples the trainer dropped).

    A folder without ``manifest.json`` (an export that stopped before the end) is refused, and so is a
    parquet file its ``manifest.json`` does not list (left by an earlier export into the folder): its
    samples would count as dropped by the trainer.
    """
    _, pq = _pyarrow()
    files = sorted((export / "data").glob("*.parquet"))
    if not files:
        raise GgeError(f"{export}: no data/*.parquet (an output folder of `gge export verl`)")
    manifest = export / "manifest.json"
    if not manifest.is_file():
        raise GgeError(
            f"--export {export}: not a finished gge export: no manifest.json (the export stopped before "
            f"writing it?); rerun gge export verl ... out={export} overwrite=true"
        )
    try:
        listed = json.loads(read_text(manifest)).get("files")
    except (json.JSONDecodeError, AttributeError):
        listed = None
    if not isinstance(listed, dict):
        raise GgeError(f"{manifest}: not the manifest `gge export verl` writes (no 'files' object)")
    names = {Path(str(f)).name for f in listed.values()}
    stale = [f.name for f in files if f.name not in names]
    if stale:
        raise GgeError(
            f"{export / 'data'} holds {', '.join(stale)}, which its manifest.json does not list (left "
            "by an earlier export into the folder?): their samples would count as dropped by the "
            "trainer; export again into a new folder, or with overwrite=true"
        )
    out = []
    for f in files:
        table = pq.read_table(f)
        if "answer" in table.column_names:
            values = table.column("answer").to_pylist()
        else:
            values = [rm["ground_truth"] for rm in table.column("reward_model").to_pylist()]
        for i, value in enumerate(values):
            try:
                out.append(read_ground_truth(value))
            except GgeError as e:
                raise GgeError(f"{f}: row {i}: {e}") from None
    return out


def _step_name(step: int | None) -> str:
    return "no step" if step is None else f"step {step}"


def _check_summary_out(out: str | Path) -> Path:
    """``out`` as a Path, or a one-line error when it cannot be a folder written to (checked first).

    ``out`` or a parent is a file, or the nearest existing folder above it is not writable.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "x"
        >>> _ = f.write_text("")
        >>> _check_summary_out(f / "sub")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: --out .../x/sub: .../x is a file, not a folder: give the folder the ...
    """
    path = Path(out)
    try:
        check_output_dir(path, option="--out")
    except GgeError as e:
        raise GgeError(f"{e}: give the folder the summary goes to") from None
    existing = next((p for p in (path, *path.parents) if p.exists()), Path.cwd())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GgeError(f"--out {path}: {existing} is not writable: give a folder the summary can go to")
    return path


def summarize_verl(
    dump: str | Path | Sequence[str | Path],
    out: str | Path,
    *,
    k: int | None = None,
    step: int | None = None,
    export: str | Path | None = None,
    max_pixels: int | None = None,
    min_pixels: int | None = None,
    allow_uneven: bool = False,
    report_misses: int = 20,
) -> dict[str, Any]:
    """Turn a trainer's dumped validation generations into gge's results, with the official rules.

    One validation (one training step) at a time: dumps spanning several steps are refused (choose
    one with ``step``). The n responses to a sample are its n candidates, exchangeable (sampled from
    one prompt): Oracle@K is "some response among the first K hits", ``pass_at_k`` the unbiased pass@k
    of each sample from its own n responses, averaged (k = 1..n, ``pass@1`` being verl's
    ``mean@n``), Top-1 the first response. Every sample must have the same n (a prompt listed twice
    in ``val_files`` has 2n; EasyR1's log holds a random subset of the responses) unless
    ``allow_uneven``: then pass@k is reported for k up to the smallest n, and Oracle@K (K: the
    smallest n by default) reads each sample's first K responses. Samples the ``export`` finds
    without any response count as misses (pass@k 0). Official averages (macro where the benchmark's
    paper uses one) and tables are computed as ``eval.py`` computes them. The document's ``notes``
    say what differs from a full validation (skipped non-gge responses, EasyR1's sample, uneven n).

    Args:
        dump: verl dump file(s) or folder, or EasyR1 ``generations.log`` (see :func:`read_dump`).
        out: Output folder: ``results.json``, ``predictions.jsonl``, ``report.md``, ``report.html``.
        k: Responses scored per sample (default: the fewest any sample has, which is all of them
            when every sample has the same number; ``single_pass``: the preset's K), at most the
            most any sample has (a one-response dump: ``k`` 1, a Top-1-only summary).
        step: The training step to read.
        export: The export folder: samples with no response in the dump (e.g. dropped by the
            trainer's prompt-length filter) are counted as misses with a format error.
        max_pixels: The trainer's ``max_pixels``, when it differs from what the export assumed.
        min_pixels: The trainer's ``min_pixels``, likewise.
        allow_uneven: Score samples with different numbers of responses (see above).
        report_misses: Misses per benchmark in ``report.html``'s gallery.

    Returns:
        The results document (also written to ``out/results.json``).

    Raises:
        GgeError: for unreadable dumps (naming the file and line), dumps of several steps, the same
            file given twice, unequal numbers of responses without ``allow_uneven``, a ``k`` above
            the responses (or ``single_pass`` points) any sample has, an ``out`` that is (or lies under)
            a file or is not writable (checked before any dump is read), or an ``export`` folder
            without ``manifest.json``.
    """
    import gge
    from gge.report.markdown import render_benchmark, render_summary
    from gge.run.assemble import write_html_report, write_outputs
    from gge.scoring.analysis import pass_at_k
    from gge.scoring.metrics import benchmark_metrics, mean_over_benchmarks

    paths = [dump] if isinstance(dump, (str, Path)) else list(dump)
    if not paths:
        raise GgeError("no dump given")
    out = _check_summary_out(out)
    dumps = [read_dump(p, step=step) for p in paths]
    files = [d.file.resolve() for d in dumps]
    for i, f in enumerate(files):
        if f in files[:i]:
            raise GgeError(f"{dumps[i].file} is given twice: its responses would count twice")
    steps = {st for d in dumps for st in d.steps}
    if len(steps) > 1:
        listed = "; ".join(f"{d.file}: {', '.join(_step_name(st) for st in d.steps)}" for d in dumps)
        raise GgeError(
            f"the dump spans {len(steps)} training steps ({listed}): summarize one validation at a time, "
            "choosing its step with --step N (summarize_verl(step=N))"
        )
    records = [r for d in dumps for r in d.records]
    formats = sorted({d.format for d in dumps})
    skipped = sum(d.skipped for d in dumps)
    view = _view_kwargs({"max_pixels": max_pixels, "min_pixels": min_pixels})
    grouped: dict[tuple[int | None, str, str], tuple[GroundTruth, list[str]]] = {}
    for r in records:
        key = (r.step, r.ground_truth.benchmark, r.ground_truth.id)
        grouped.setdefault(key, (r.ground_truth, []))[1].append(r.output)
    the_step = next(iter(steps))
    missing: dict[str, int] = {}
    if export is not None:
        for gt in _export_ground_truths(Path(export)):
            if (the_step, gt.benchmark, gt.id) not in grouped:
                grouped[(the_step, gt.benchmark, gt.id)] = (gt, [])
                missing[gt.benchmark] = missing.get(gt.benchmark, 0) + 1
    one_point = all(gt.proposer != "single_pass" for gt, _ in grouped.values())
    sizes = Counter(len(texts) for _, texts in grouped.values() if texts)
    n_min, n_max = min(sizes), max(sizes)
    if one_point and len(sizes) > 1 and not allow_uneven:
        by_count = sorted(sizes, key=lambda n: (-sizes[n], n))
        counts = "; ".join(f"{sizes[n]} sample{'s' if sizes[n] > 1 else ''} with n={n}" for n in by_count)
        common = max(sizes, key=lambda n: sizes[n])
        odd = next((key, texts) for key, (_, texts) in grouped.items() if texts and len(texts) != common)
        raise GgeError(
            f"samples have different numbers of responses ({counts}; e.g. {odd[0][1]} {odd[0][2]} has "
            f"{len(odd[1])}): a prompt listed twice in val_files, dumps pooled, or EasyR1's log of a random "
            "subset. Pass --allow-uneven (allow_uneven=True) to score each sample with its own n: pass@k "
            f"for k up to the smallest n ({n_min}), Oracle@K over each sample's first K responses"
        )
    kk = k if k is not None else (n_min if one_point else max(gt.k for gt, _ in grouped.values()))
    if kk < 1:
        raise GgeError(f"k must be at least 1, got {kk}")
    most = n_max if one_point else max(gt.k for gt, _ in grouped.values())
    if kk > most:
        what = "responses" if one_point else "points a single_pass answer holds"
        raise GgeError(
            f"k={kk}, but no sample has more than {most} {what}: Oracle@{kk} would be Oracle@{most} "
            f"under another name; give --k {most} or less (or leave it out)"
        )
    by_bench: dict[str, list[SampleResult]] = {}
    hits_of: dict[tuple[str, str], tuple[int, int]] = {}
    samples: dict[tuple[str, str], Sample] = {}
    for (_, name, sid), (gt, texts) in grouped.items():
        scored = gt.score(texts, k=kk, **view)
        by_bench.setdefault(name, []).append(scored)
        samples[(name, sid)] = gt.sample()
        if one_point:  # every response, for pass@k from the sample's own n
            every = scored if kk == max(1, len(texts)) else gt.score(texts, k=max(1, len(texts)), **view)
            hits_of[(name, sid)] = (len(texts), sum(every.hits))
    pass_n = min(kk, n_min)
    entries: dict[str, dict[str, Any]] = {}
    titles: dict[str, str] = {}
    sections: list[str] = []
    all_results: list[SampleResult] = []
    benches = {}
    exchangeable = 0 if one_point else None
    order = list(REGISTRY)  # the order gge reports benchmarks in
    for name in sorted(by_bench, key=lambda b: (b not in order, order.index(b) if b in order else 0, b)):
        bench = get_benchmark(name)
        benches[name] = bench
        results = by_bench[name]
        entry = benchmark_metrics(bench, results, k=kk, strategy=SELECTION, exchangeable_from=exchangeable)
        if one_point:
            nc = [hits_of[(name, r.id)] for r in results]
            table: dict[str, Any] = {"n": pass_n, "first_slot": 0}
            for j in range(1, pass_n + 1):
                total = sum(pass_at_k(n, c, j) for n, c in nc if n)  # no response: a miss
                table[f"pass@{j}"] = 100.0 * total / len(nc)
            entry["pass_at_k"] = table
        got = [len(grouped[(the_step, name, r.id)][1]) for r in results]
        entry["responses_per_sample"] = {"min": min(got), "max": max(got)}
        if export is not None:
            entry["missing_responses"] = missing.get(name, 0)
        entries[name], titles[name] = entry, bench.title
        all_results += results
        sections.append(render_benchmark(bench.title, entry, k=kk, strategy=SELECTION))
    mean = mean_over_benchmarks(entries, kk)
    gts = [gt for gt, _ in grouped.values()]
    preset = sorted({gt.preset for gt in gts})
    fmt = "/".join(formats)
    easyr1 = "easyr1" in formats
    per_sample = f"{n_min}" if n_min == n_max else f"{n_min} to {n_max}"
    protocol = (
        f"{fmt} validation generations ({per_sample} per sample) of the {', '.join(preset)} request "
        "exported by gge; "
        + (
            "one answer scored per sample: Top-1 only"
            if kk == 1
            else "Top-1 is the first response, Oracle@K some response among the first K"
        )
    )
    notes: list[str] = []
    if easyr1:
        protocol += (
            "; EasyR1's generations.log holds a random sample of the validation's responses: the numbers "
            "are over the logged responses only, and each sample's Top-1 is its first logged response, "
            "a random one of its responses"
        )
        notes.append(
            "EasyR1 logs only trainer.val_generations_to_log responses per validation, chosen by a "
            "(fixed-seed) shuffle of all of them, and appends each validation to generations.log without "
            "its step: this summary is over a random sample of the validation's responses (all of them "
            "only when trainer.val_generations_to_log reaches their number), pooling every validation in "
            "the file (keep one validation's blocks in it), and each sample's Top-1 is whichever of its "
            "responses was logged first, not the model's first answer"
        )
    if n_min != n_max:
        notes.append(
            f"responses per sample differ (n = {n_min} to {n_max}; "
            + ", ".join(f"{sizes[n]} with n={n}" for n in sorted(sizes))
            + f"): pass@k is each sample's unbiased estimate from its own n, for k up to {pass_n}; "
            f"Oracle@K reads each sample's first K={kk} responses"
        )
    if missing:
        notes.append(
            f"{sum(missing.values())} exported samples have no response in the dump and count as misses "
            "(pass@k 0)"
            + (
                ": right only when the log holds every response of the validation"
                if easyr1
                else " (dropped by the trainer, e.g. by its prompt-length filter)"
            )
        )
    if skipped:
        notes.append(
            f"skipped {skipped} response{'s' if skipped > 1 else ''} whose ground truth is not gge's "
            "(other data validated alongside)"
        )
    repaired = [where for d in dumps for where in d.repaired]
    if repaired:
        notes.append(
            f"{len(repaired)} response{'s' if len(repaired) > 1 else ''} held lone surrogates (invalid "
            f"Unicode, first at {repaired[0]}), each replaced by U+FFFD to be written as UTF-8; the "
            "answers were read and scored with the rest of their text as dumped"
        )
    head = [f"Protocol: {protocol}", *(f"Note: {n}" for n in notes)]
    report = "\n\n".join(["\n".join(head), *sections, render_summary(titles, entries, mean, k=kk)])
    document: dict[str, Any] = {
        "gge_version": gge.__version__,
        "protocol": protocol,
        "notes": notes,
        "benchmarks": entries,
        "mean": mean,
        "k": kk,
        "selection": SELECTION,
        "model": {
            "preset": preset,
            "convention": sorted({gt.convention for gt in gts}),
            "proposer": sorted({gt.proposer for gt in gts}),
            "flavor": sorted({gt.flavor for gt in gts}),
        },
        "config": {
            "dump": [str(p) for p in paths],
            "format": fmt,
            "step": the_step,
            "export": None if export is None else str(export),
            "max_pixels": max_pixels,
            "min_pixels": min_pixels,
            "allow_uneven": allow_uneven,
            "skipped_responses": skipped,
            "repaired_responses": len(repaired),
            "sample_of_validation": easyr1,
        },
    }
    try:
        write_outputs(out, document, all_results, report)
        write_html_report(out, document, samples, all_results, benches, misses=report_misses)
        loaded: dict[str, Any] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    except OSError as e:
        where = e.filename2 or e.filename or out  # os.replace: filename2 is the destination
        raise GgeError(f"--out {out}: cannot write {where}: {e.strerror or e}") from None
    return loaded  # as written (what eval.py's run returns too)


def summarize_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge summarize-verl``.

    Example:
        >>> summarize_parser().parse_args(["dumps", "--step", "40"]).step
        40
    """
    p = argparse.ArgumentParser(
        prog="gge summarize-verl",
        description=(
            "Turn verl's dumped validation generations (trainer.validation_data_dir) or EasyR1's "
            "generations.log of an export by `gge export verl` into gge's results.json, report.md and "
            "report.html, with each benchmark's official rules and the unbiased pass@k. One training "
            "step at a time; responses to other data are skipped and counted."
        ),
    )
    p.add_argument(
        "dump", metavar="DUMP", nargs="+", help="a <step>.jsonl file, the dump folder, or generations.log"
    )
    p.add_argument("--out", metavar="DIR", default=None, help="output folder (default: beside the dump)")
    p.add_argument(
        "--step",
        type=int,
        default=None,
        help="training step to read (needed when the dump holds several; they are refused otherwise)",
    )
    p.add_argument(
        "--k", type=int, default=None, help="responses scored per sample (default: all, or the fewest)"
    )
    p.add_argument("--export", metavar="DIR", default=None, help="the export folder: count missing samples")
    p.add_argument(
        "--max-pixels", type=int, default=None, help="the trainer's max_pixels, if not the export's"
    )
    p.add_argument(
        "--min-pixels", type=int, default=None, help="the trainer's min_pixels, if not the export's"
    )
    p.add_argument(
        "--allow-uneven",
        action="store_true",
        help="score samples with different numbers of responses (each sample's pass@k from its own n)",
    )
    p.add_argument("--report-misses", type=int, default=20, help="misses per benchmark in report.html")
    return p


def summarize_main(argv: Sequence[str]) -> int:
    """``gge summarize-verl DUMP [--out DIR] [--step N]``: write the results, print the tables.

    Returns:
        0 on success (bad input raises :class:`~gge.errors.GgeError`).
    """
    ns = summarize_parser().parse_args(list(argv))
    first = Path(ns.dump[0])
    if ns.out is None:
        base = first if first.is_dir() else first.parent
        ns.out = str(
            base / (f"gge-step{ns.step}" if ns.step is not None else f"gge-{first.stem or 'summary'}")
        )
    doc = summarize_verl(
        ns.dump,
        ns.out,
        k=ns.k,
        step=ns.step,
        export=ns.export,
        max_pixels=ns.max_pixels,
        min_pixels=ns.min_pixels,
        allow_uneven=ns.allow_uneven,
        report_misses=ns.report_misses,
    )
    print((Path(ns.out) / "report.md").read_text(encoding="utf-8").rstrip("\n"))
    for note in doc.get("notes") or []:
        print(f"note: {note}")
    print(f"\nwrote {Path(ns.out) / 'results.json'} (step {doc['config']['step']}; and report.html)")
    return 0


def _main(argv: Iterable[str] | None = None) -> int:  # pragma: no cover - python -m entry
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "summarize":
            return summarize_main(args[1:])
        return export_main(args)
    except GgeError as e:
        print(f"gge: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
