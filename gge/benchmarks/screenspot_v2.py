"""ScreenSpot-v2, and the small helpers the other benchmark loaders share.

Layout (FORMATS.md, section 1)::

    ScreenSpot-v2/
      screenspot_mobile_v2.json  screenspot_desktop_v2.json  screenspot_web_v2.json
      screenspotv2_image/<img_filename>

A record's ``bbox`` is ``[x, y, w, h]`` in pixels; the official scorer tests ``[x, y, x+w, y+h]`` with
inclusive edges. Ids are ``<split>_<i>`` (``mobile_0``). The image size comes from the image header.

Example:
    >>> xywh_box([10, 20, 30, 40])
    Box(x1=10, y1=20, x2=40, y2=60, space='pixel', size=None)
    >>> normalized_box(50, 25, 100, 50, (100, 50)).contains(100, 50)
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks.base import (
    Average,
    Benchmark,
    BenchmarkOptions,
    LoadedBenchmark,
    TableSpec,
    image_size_from_header,
    read_json_list,
    require_numbers,
    require_root,
    require_str,
    resolve_image,
)
from gge.errors import GgeError
from gge.types import Absent, Box, LabelValue, Polygon, Region, Sample

MAX_LISTED_IDS = 50
"""Summaries list the ids of odd samples only when there are at most this many."""

# ----------------------------------------------------------------------------------------------
# Helpers shared by the loaders of this package.


class LoadCollector:
    """Collects the samples of one load, rejects duplicate ids, and builds the load summary.

    Example:
        >>> out = LoadCollector("demo", Path("/data/demo"))
        >>> out.add(Sample("demo", "a", "/data/demo/a.png", (10, 10), "click", Box(0, 0, 1, 1)), "f.json #0")
        >>> out.result().summary["records"]
        1

    Attributes:
        name: Benchmark name.
        root: The folder the user gave; file paths in the summary are relative to it.
        samples: Samples in the order they were added.
        files: Relative paths of the files read.
        notes: Notes for the summary.
    """

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.samples: list[Sample] = []
        self.files: list[str] = []
        self.notes: list[str] = []
        self._origin: dict[str, str] = {}

    def file(self, path: Path) -> Path:
        """Record that ``path`` is read (its path relative to the root goes into the summary).

        Args:
            path: The file.

        Returns:
            The path, unchanged.
        """
        self.files.append(os.path.relpath(path, self.root))
        return path

    def add(self, sample: Sample, origin: str) -> None:
        """Add a sample; an id seen before raises, naming both records.

        Args:
            sample: The sample.
            origin: Where the record was read (file and record number or line), for the message.
        """
        first = self._origin.get(sample.id)
        if first is not None:
            raise GgeError(f"{self.name}: duplicate sample id '{sample.id}': {first} and {origin}")
        self._origin[sample.id] = origin
        self.samples.append(sample)

    def result(self, variant: Mapping[str, str] | None = None) -> LoadedBenchmark:
        """The loaded benchmark with its summary.

        Args:
            variant: What variant of the benchmark was read (instruction file, language).

        Returns:
            The samples and the summary (files, records, degenerate and out-of-image boxes, notes).
        """
        degenerate = [s.id for s in self.samples if s.region.degenerate]
        outside = [s.id for s in self.samples if region_outside_image(s.region, s.image_size)]
        summary: dict[str, Any] = {
            "files": list(self.files),
            "records": len(self.samples),
            "degenerate_boxes": len(degenerate),
        }
        if len(degenerate) <= MAX_LISTED_IDS:
            summary["degenerate_ids"] = degenerate
        summary["boxes_outside_image"] = len(outside)
        if len(outside) <= MAX_LISTED_IDS:
            summary["outside_image_ids"] = outside
        summary["variant"] = dict(variant or {})
        summary["notes"] = list(self.notes)
        return LoadedBenchmark(self.name, str(self.root), self.samples, summary)


def region_outside_image(region: Region, size: tuple[int, int]) -> bool:
    """Whether a region runs outside the image, tested in the region's own units.

    Args:
        region: The target region.
        size: Image (width, height).

    Returns:
        True when a coordinate lies left of / above 0 or right of / below the image edge.

    Example:
        >>> region_outside_image(Box(0, 0, 101, 10), (100, 50))
        True
    """
    if isinstance(region, Absent):
        return False
    if isinstance(region, Polygon):
        xs = [v[0] for v in region.vertices]
        ys = [v[1] for v in region.vertices]
        w, h = float(size[0]), float(size[1])
    else:
        xs, ys = [region.x1, region.x2], [region.y1, region.y2]
        w, h = (1.0, 1.0) if region.space == "normalized" else (float(size[0]), float(size[1]))
    return min(xs) < 0 or min(ys) < 0 or max(xs) > w or max(ys) > h


def require_files(paths: Iterable[Path], *, name: str) -> None:
    """Check that every annotation file exists, naming all the missing ones at once.

    Args:
        paths: The files the benchmark needs.
        name: Benchmark name, for the message.
    """
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise GgeError(f"{name}: annotation file not found: {', '.join(missing)}")


def image_under(root: Path, *parts: str, where: str, sample_id: str) -> str:
    """A record's image at ``root/<parts...>``, which must exist and stay inside ``root``.

    Args:
        root: The benchmark folder.
        *parts: Path parts below the root (image folder, then the record's path).
        where: The file (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        The absolute image path.
    """
    return resolve_image(root, os.path.join(*parts), where=where, sample_id=sample_id)


def str_labels(
    record: Mapping[str, Any], keys: Sequence[str], *, where: str, sample_id: str
) -> dict[str, LabelValue]:
    """Labels copied from mandatory string fields of the same name.

    Args:
        record: The record.
        keys: Field names.
        where: The file (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        ``{key: record[key]}`` for every key.
    """
    return {k: require_str(record, k, where=where, sample_id=sample_id) for k in keys}


def xywh_box(values: Sequence[float]) -> Box:
    """A pixel box from ``[x, y, w, h]``: ``[x, y, x + w, y + h]``.

    Args:
        values: Four numbers.

    Returns:
        The box.
    """
    x, y, w, h = values
    return Box(x, y, x + w, y + h)


def normalized_box(x1: float, y1: float, x2: float, y2: float, size: tuple[int, int]) -> Box:
    """A pixel box divided by the image size, tested in [0, 1] units as the official scorers do.

    Args:
        x1: Left edge in pixels.
        y1: Top edge in pixels.
        x2: Right edge in pixels.
        y2: Bottom edge in pixels.
        size: Image (width, height).

    Returns:
        The normalized box.
    """
    w, h = size
    return Box(x1 / w, y1 / h, x2 / w, y2 / h, space="normalized", size=size)


# ----------------------------------------------------------------------------------------------

SPLITS = ("mobile", "desktop", "web")


class ScreenSpotV2(Benchmark):
    """ScreenSpot-v2: 1272 samples in three splits, text and icon targets."""

    name = "screenspot_v2"
    title = "ScreenSpot-v2"
    directory = "screenspot_v2"
    label_keys = ("split", "data_type", "data_source")
    extra_averages = (Average("macro_cells", ("split", "data_type")),)
    tables = (
        TableSpec("By split", rows="split", cols="data_type", row_order=SPLITS, col_order=("text", "icon")),
        TableSpec(
            "By data source",
            rows="data_source",
            row_order=("ios", "android", "windows", "macos", "gitlab", "shop", "forum", "tool"),
        ),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the three split files and the flat image folder (see the module docstring).

        Args:
            root: The benchmark folder.
            options: Common options (none specific).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        paths = {split: root / f"screenspot_{split}_v2.json" for split in SPLITS}
        require_files(paths.values(), name=self.name)
        out = LoadCollector(self.name, root)
        for split, path in paths.items():
            where = str(out.file(path))
            for i, rec in enumerate(read_json_list(path)):
                sid = f"{split}_{i}"
                filename = require_str(rec, "img_filename", where=where, sample_id=sid)
                image = image_under(root, "screenspotv2_image", filename, where=where, sample_id=sid)
                labels: dict[str, LabelValue] = {"split": split}
                labels.update(str_labels(rec, ("data_type", "data_source"), where=where, sample_id=sid))
                sample = Sample(
                    benchmark=self.name,
                    id=sid,
                    image_path=image,
                    image_size=image_size_from_header(image, where=where, sample_id=sid),
                    instruction=require_str(rec, "instruction", where=where, sample_id=sid),
                    region=xywh_box(require_numbers(rec, "bbox", 4, where=where, sample_id=sid)),
                    labels=labels,
                )
                out.add(sample, f"{path.name} record {i}")
        return out.result()
