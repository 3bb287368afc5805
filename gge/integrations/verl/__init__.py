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

from gge.integrations.verl.cli import (
    export_help,
    export_main,
    parse_export_args,
    summarize_main,
    summarize_parser,
)
from gge.integrations.verl.export import (
    ABILITY,
    IMAGE_TOKEN,
    REWARD_MODULE,
    ExportConfig,
    export_verl,
    prepare_out,
    trainer_notes,
    trainer_options,
)
from gge.integrations.verl.ground_truth import (
    DATA_SOURCE_PREFIX,
    GROUND_TRUTH_VERSION,
    GroundTruth,
    is_gge_ground_truth,
    read_ground_truth,
)
from gge.integrations.verl.regions import (
    region_from_json,
    region_to_json,
)
from gge.integrations.verl.resize import (
    EASYR1_MAX_PIXELS,
    EASYR1_MIN_PIXELS,
    FLAVORS,
    QWEN_VL_UTILS_MAX_TOKENS,
    QWEN_VL_UTILS_MIN_TOKENS,
    easyr1_resize,
    easyr1_seen_size,
    trainer_seen_size,
    verl_seen_size,
)
from gge.integrations.verl.reward import (
    REWARD_KEYS,
    REWARD_NAME,
    REWARD_TYPE,
    SELECTION,
    compute_score,
    compute_score_batch,
    reward_values,
)
from gge.integrations.verl.summarize import (
    Dump,
    DumpRecord,
    read_dump,
    summarize_verl,
)

__all__ = [
    "ABILITY",
    "DATA_SOURCE_PREFIX",
    "EASYR1_MAX_PIXELS",
    "EASYR1_MIN_PIXELS",
    "FLAVORS",
    "GROUND_TRUTH_VERSION",
    "IMAGE_TOKEN",
    "QWEN_VL_UTILS_MAX_TOKENS",
    "QWEN_VL_UTILS_MIN_TOKENS",
    "REWARD_KEYS",
    "REWARD_MODULE",
    "REWARD_NAME",
    "REWARD_TYPE",
    "SELECTION",
    "Dump",
    "DumpRecord",
    "ExportConfig",
    "GroundTruth",
    "compute_score",
    "compute_score_batch",
    "easyr1_resize",
    "easyr1_seen_size",
    "export_help",
    "export_main",
    "export_verl",
    "is_gge_ground_truth",
    "parse_export_args",
    "prepare_out",
    "read_dump",
    "read_ground_truth",
    "region_from_json",
    "region_to_json",
    "reward_values",
    "summarize_main",
    "summarize_parser",
    "summarize_verl",
    "trainer_notes",
    "trainer_options",
    "trainer_seen_size",
    "verl_seen_size",
]
