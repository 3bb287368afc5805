"""The ground truth of one exported row: everything the reward needs, as one line of JSON.

:class:`GroundTruth` is written by the export, read back by the reward and the summary, and
scores answers with the benchmark's official rule.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from gge.errors import GgeError
from gge.integrations.verl.regions import _size, region_from_json, region_to_json
from gge.integrations.verl.resize import _check_flavor, trainer_seen_size
from gge.models.policy import SAMPLE_SEPARATOR, answer_candidates
from gge.scoring.scoring import score_sample
from gge.types import LabelValue, Prediction, Region, Sample, SampleResult

DATA_SOURCE_PREFIX = "gge/"
"""Every exported row's ``data_source`` is this prefix and the benchmark name."""
GROUND_TRUTH_VERSION = 1


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
