"""verl and EasyR1: gge's benchmarks as RL validation sets, gge's official scoring as their reward.

``gge export verl`` (:mod:`~gge.integrations.verl.export`) writes the validation parquet files;
:func:`compute_score` (verl) and :func:`compute_score_batch` (EasyR1) are the reward
(:mod:`~gge.integrations.verl.reward`); ``gge summarize-verl`` (:mod:`~gge.integrations.verl.summarize`)
turns the trainer's dumped generations into gge's results. None of it imports verl or EasyR1. The
manual (the trainers' formats from their sources, the size the model sees, what cannot be carried,
training data in the same run) is docs/verl.md.

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
from gge.integrations.verl.trainer_options import trainer_notes, trainer_options

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
