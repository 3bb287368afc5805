"""VenusBench-GD: one JSON list per subtask, refusal samples included; headline = micro over every file.

Layout (FORMATS.md, section 10)::

    VenusBench-GD/
      instruction/<subtask>.json      # every *.json is read, sorted by name
      images/<img_filename>           # web/, mobile/, desktop/ below
      meta.json                       # not read

A record's ``bbox`` is ``[x1, y1, x2, y2]`` in pixels; the official scorer divides it by the image size
(read here from the image header) and tests the model's point in [0, 1] with inclusive edges. A
``bbox`` of ``[-1, -1, -1, -1]``, or no ``bbox`` key (the official default), is a refusal target: only an
abstention hits it (gge reads a point with both coordinates negative, the official refusal answer, as
an abstention). Ids are ``<file stem>_<i>``. Labels: ``subtask`` (the file stem), ``ui_type``,
``platform``, ``application`` and ``group``; a record without one of the last four gets ``unknown``
(counted in the load summary). The ``language`` option picks ``instruction`` (``en``) or
``instruction_zh`` (``zh``; ``instruction_cn``, UI-Venus-1.5's name, when a record has no
``instruction_zh``).

Example:
    >>> VenusBenchOptions(language="zh").language
    'zh'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_size_from_header,
    image_under,
    json_files,
    normalized_box,
    read_json_list,
    require_numbers,
    require_root,
    require_str,
)
from gge.benchmarks.hosts import Host
from gge.errors import GgeError, unknown_name
from gge.types import Absent, LabelValue, Region, Sample

LANGUAGES = {"en": ("instruction",), "zh": ("instruction_zh", "instruction_cn")}
"""Instruction fields read for each language, in order of preference."""
OPTIONAL_LABELS = ("ui_type", "platform", "application", "group")
UNKNOWN = "unknown"
REFUSAL_BOX = [-1.0, -1.0, -1.0, -1.0]


@dataclass
class VenusBenchOptions(BenchmarkOptions):
    """Options of VenusBench-GD.

    Attributes:
        language: ``en`` reads ``instruction``; ``zh`` reads ``instruction_zh`` (else ``instruction_cn``).
    """

    language: str = "en"


def _instruction(
    rec: Mapping[str, Any], fields: tuple[str, ...], *, where: str, sample_id: str
) -> tuple[str, str]:
    """The first of ``fields`` the record has (a string), and its name."""
    for key in fields:
        if key in rec:
            return require_str(rec, key, where=where, sample_id=sample_id), key
    raise GgeError(f"{where}: record {sample_id} has no field {' or '.join(repr(k) for k in fields)}")


class VenusBenchGD(Benchmark):
    """VenusBench-GD: bilingual grounding over web, mobile and desktop, with refusal samples."""

    name = "venusbench_gd"
    title = "VenusBench-GD"
    directory = "venusbench_gd"
    host = Host(
        "hub",
        "inclusionAI/VenusBench-GD",
        "7e5714566f912203c9989b06ef4c08bdf913e3fa",
        "third party",
        ("instruction/*.json", "images/*"),
        optional=("meta.json",),
        licence="mit",
    )
    options_type = VenusBenchOptions
    label_keys = ("subtask", *OPTIONAL_LABELS)
    tables = (
        TableSpec("By platform", rows="platform", cols="ui_type", col_order=("text", "icon")),
        TableSpec("By subtask", rows="subtask", cols="ui_type", col_order=("text", "icon")),
        TableSpec("By group", rows="group", cols="ui_type", col_order=("text", "icon")),
        TableSpec("By application", rows="application"),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read every instruction file (see the module docstring).

        Args:
            root: The benchmark folder.
            options: A :class:`VenusBenchOptions` (a plain BenchmarkOptions reads English).

        Returns:
            The samples and the load summary (variant ``{"language": ...}``).
        """
        require_root(root, self.name)
        language = getattr(options, "language", "en")
        if language not in LANGUAGES:
            raise unknown_name(f"{self.name} language", str(language), LANGUAGES)
        paths = json_files(root / "instruction", name=self.name, kind="instruction")
        out = LoadCollector(self.name, root)
        missing: Counter[str] = Counter()
        fields_read: Counter[str] = Counter()
        refusals = 0
        for path in paths:
            where = str(out.file(path))
            for i, rec in enumerate(read_json_list(path)):
                sid = f"{path.stem}_{i}"
                filename = require_str(rec, "img_filename", where=where, sample_id=sid)
                image = image_under(root, "images", filename, where=where, sample_id=sid)
                size = image_size_from_header(image, where=where, sample_id=sid)
                region = self._region(rec, size, where=where, sample_id=sid)
                refusals += isinstance(region, Absent)
                text, field = _instruction(rec, LANGUAGES[language], where=where, sample_id=sid)
                fields_read[field] += 1
                labels: dict[str, LabelValue] = {"subtask": path.stem}
                for key in OPTIONAL_LABELS:
                    if rec.get(key) is None:
                        missing[key] += 1
                        labels[key] = UNKNOWN
                    else:
                        labels[key] = require_str(rec, key, where=where, sample_id=sid)
                sample = Sample(
                    benchmark=self.name,
                    id=sid,
                    image_path=image,
                    image_size=size,
                    instruction=text,
                    region=region,
                    labels=labels,
                )
                out.add(sample, f"{path.name} record {i}")
        out.notes.append(
            f"{refusals} refusal samples (bbox [-1, -1, -1, -1] or none: only an abstention hits)"
        )
        for key in OPTIONAL_LABELS:
            if missing[key]:
                out.notes.append(f"{missing[key]} records have no '{key}': label '{UNKNOWN}'")
        if len(fields_read) > 1:
            out.notes.append(
                "instruction fields read: " + ", ".join(f"{k} {n}" for k, n in sorted(fields_read.items()))
            )
        return out.result({"language": language})

    @staticmethod
    def _region(rec: Mapping[str, Any], size: tuple[int, int], *, where: str, sample_id: str) -> Region:
        """The target of a record (:func:`venus_target` of its ``bbox``, None when it has none)."""
        values = require_numbers(rec, "bbox", 4, where=where, sample_id=sample_id) if "bbox" in rec else None
        return venus_target(values, size)


def venus_target(values: Sequence[float] | None, size: tuple[int, int]) -> Region:
    """The official target of a ``bbox``: no box or ``[-1, -1, -1, -1]`` is a refusal (Absent).

    Else the pixel ``[x1, y1, x2, y2]`` box divided by the image size, as the official code tests it.

    Args:
        values: The record's four numbers, or None when it has no ``bbox``.
        size: The image size (from the header).

    Returns:
        The region.

    Example:
        >>> venus_target([-1, -1, -1, -1], (100, 50)), venus_target(None, (100, 50)).kind
        (Absent(abstention_hits=True), 'refusal')
    """
    if values is None or list(values) == REFUSAL_BOX:
        return Absent()
    x1, y1, x2, y2 = values
    return normalized_box(x1, y1, x2, y2, size)
