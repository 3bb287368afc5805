"""ScreenSpot-Pro: professional high-resolution screenshots, one target per image.

Layout (FORMATS.md, section 2)::

    ScreenSpot-Pro/
      annotations/<app>_<os>.json          # every *.json is read, sorted by name
      images/<img_filename>

A record's ``bbox`` is ``[x1, y1, x2, y2]`` in pixels; the official scorer divides it by ``img_size``
and tests the normalised point with inclusive edges (``inventor_windows_60`` keeps its y1 = -1).
Ids are the records' ``id``. The ``language`` option picks ``instruction`` (``en``) or
``instruction_cn`` (``cn``).

Example:
    >>> ScreenSpotProOptions(language="cn").language
    'cn'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_under,
    normalized_box,
    read_json_list,
    require_numbers,
    require_root,
    require_size,
    require_str,
    str_labels,
)
from gge.errors import GgeError, unknown_name
from gge.types import Sample

INSTRUCTION_FIELDS = {"en": "instruction", "cn": "instruction_cn"}
"""Instruction field read for each language."""

GROUPS = ("Dev", "Creative", "CAD", "Scientific", "Office", "OS")


@dataclass
class ScreenSpotProOptions(BenchmarkOptions):
    """Options of ScreenSpot-Pro.

    Attributes:
        language: ``en`` reads ``instruction``; ``cn`` reads ``instruction_cn``.
    """

    language: str = "en"


class ScreenSpotPro(Benchmark):
    """ScreenSpot-Pro: 1581 samples over 26 applications in six groups."""

    name = "screenspot_pro"
    title = "ScreenSpot-Pro"
    directory = "screenspot_pro"
    options_type = ScreenSpotProOptions
    label_keys = ("group", "ui_type", "platform", "application")
    tables = (
        TableSpec("By group", rows="group", cols="ui_type", row_order=GROUPS, col_order=("text", "icon")),
        TableSpec("By application", rows="application"),
        TableSpec("By platform", rows="platform", row_order=("macos", "windows", "linux")),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read every annotation file and check the images (see the module docstring).

        Args:
            root: The benchmark folder.
            options: A :class:`ScreenSpotProOptions` (a plain BenchmarkOptions reads English).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        language = getattr(options, "language", "en")
        if language not in INSTRUCTION_FIELDS:
            raise unknown_name(f"{self.name} language", str(language), INSTRUCTION_FIELDS)
        instruction_field = INSTRUCTION_FIELDS[language]
        folder = root / "annotations"
        if not folder.is_dir():
            raise GgeError(f"{self.name}: annotation folder not found: {folder}")
        paths = sorted(folder.glob("*.json"))
        if not paths:
            raise GgeError(f"{self.name}: no annotation file (*.json) in {folder}")
        out = LoadCollector(self.name, root)
        for path in paths:
            where = str(out.file(path))
            for i, rec in enumerate(read_json_list(path)):
                sid = require_str(rec, "id", where=where, sample_id=f"#{i}")
                size = require_size(rec, "img_size", where=where, sample_id=sid)
                filename = require_str(rec, "img_filename", where=where, sample_id=sid)
                x1, y1, x2, y2 = require_numbers(rec, "bbox", 4, where=where, sample_id=sid)
                sample = Sample(
                    benchmark=self.name,
                    id=sid,
                    image_path=image_under(root, "images", filename, where=where, sample_id=sid),
                    image_size=size,
                    instruction=require_str(rec, instruction_field, where=where, sample_id=sid),
                    region=normalized_box(x1, y1, x2, y2, size),
                    labels=str_labels(rec, self.label_keys, where=where, sample_id=sid),
                )
                out.add(sample, f"{path.name} record {i}")
        return out.result({"language": language})
