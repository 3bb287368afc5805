"""OSWorld-G, with its original and its refined instructions (two registered benchmarks).

Layout (FORMATS.md, section 3); the root is ``benchmark/`` itself or a folder that contains it::

    benchmark/
      OSWorld-G.json  OSWorld-G_refined.json   # same 564 ids; refined rewrites 507 instructions
      classification_result.json               # optional: {"classified": {<category>: [{"id": ...}]}}
      images/<image_path>

``box_type`` says how ``box_coordinates`` reads: ``bbox`` ``[x, y, w, h]`` pixels (inclusive rectangle),
``polygon`` a flat ``[x1, y1, x2, y2, ...]`` (even-odd ray casting), ``refusal`` (only an abstention is
correct). Ids are the records' ``id``, the same in both variants.

Example:
    >>> polygon_from_flat([0, 0, 4, 0, 4, 4]).vertices
    ((0.0, 0.0), (4.0, 0.0), (4.0, 4.0))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_under,
    read_json,
    read_json_list,
    require,
    require_numbers,
    require_root,
    require_size,
    require_str,
    xywh_box,
)
from gge.errors import GgeError
from gge.types import Absent, LabelValue, Polygon, Region, Sample

CLASSIFICATION_FILE = "classification_result.json"
CATEGORIES = (
    "text_matching",
    "element_recognition",
    "layout_understanding",
    "fine_grained_manipulation",
    "refusal",
    "unclassified",
)
UNCLASSIFIED = ("unclassified",)


def polygon_from_flat(values: Sequence[float]) -> Polygon:
    """A polygon from a flat ``[x1, y1, x2, y2, ...]`` list (the length must be even).

    Args:
        values: The coordinates.

    Returns:
        The polygon.
    """
    return Polygon(tuple((float(values[i]), float(values[i + 1])) for i in range(0, len(values), 2)))


def benchmark_folder(root: Path, annotation_file: str) -> Path:
    """The folder holding the annotation file: ``root`` itself, else ``root/benchmark``.

    Args:
        root: The folder the user gave.
        annotation_file: The instruction file to find.

    Returns:
        The benchmark folder (``root`` when neither holds the file, so the error names it there).
    """
    if not (root / annotation_file).is_file() and (root / "benchmark" / annotation_file).is_file():
        return root / "benchmark"
    return root


def read_categories(path: Path) -> dict[str, set[str]]:
    """Read ``classification_result.json``: sample id -> the categories that list it.

    Args:
        path: The file.

    Returns:
        The categories of every listed id.
    """
    data = read_json(path)
    classified = data.get("classified") if isinstance(data, dict) else None
    if not isinstance(classified, dict):
        raise GgeError(f'{path}: expected {{"classified": {{<category>: [{{"id": ...}}, ...]}}}}')
    categories: dict[str, set[str]] = {}
    for category, items in classified.items():
        if not isinstance(items, list):
            raise GgeError(f"{path}: category '{category}' must be a list of records")
        for j, item in enumerate(items):
            if isinstance(item, Mapping):
                sid = str(require(item, "id", where=f"{path}: category '{category}'", sample_id=f"#{j}"))
            elif isinstance(item, str):
                sid = item
            else:
                raise GgeError(f"{path}: category '{category}' item {j} must be an object with an 'id'")
            categories.setdefault(sid, set()).add(str(category))
    return categories


def osworld_region(rec: Mapping[str, Any], *, where: str, sample_id: str) -> Region:
    """The target of a record, by its ``box_type``.

    Args:
        rec: The record.
        where: The file (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        A pixel Box, a Polygon or Absent.
    """
    box_type = require_str(rec, "box_type", where=where, sample_id=sample_id)
    if box_type == "refusal":
        return Absent()
    if box_type == "bbox":
        return xywh_box(require_numbers(rec, "box_coordinates", 4, where=where, sample_id=sample_id))
    if box_type == "polygon":
        values = require_numbers(rec, "box_coordinates", None, where=where, sample_id=sample_id)
        if not values or len(values) % 2:
            raise GgeError(
                f"{where}: record {sample_id}: field 'box_coordinates' of a polygon must be a flat "
                f"list of x, y pairs, got {len(values)} numbers"
            )
        return polygon_from_flat(values)
    raise GgeError(
        f"{where}: record {sample_id}: field 'box_type' must be bbox, polygon or refusal, got {box_type!r}"
    )


class OSWorldG(Benchmark):
    """OSWorld-G with its original instructions (564 samples: bbox, polygon and refusal targets)."""

    name = "osworld_g"
    title = "OSWorld-G"
    directory = "osworld_g"
    annotation_file: ClassVar[str] = "OSWorld-G.json"
    instructions: ClassVar[str] = "original"
    label_keys = ("box_type", "category")
    tables = (
        TableSpec("By category", rows="category", row_order=CATEGORIES),
        TableSpec("By box type", rows="box_type", row_order=("bbox", "polygon", "refusal")),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the instruction file, the optional categories and check the images.

        Args:
            root: The ``benchmark/`` folder, or a folder containing it.
            options: Common options (none specific).

        Returns:
            The samples and the load summary (``variant.instructions`` says which file).
        """
        require_root(root, self.name)
        folder = benchmark_folder(root, self.annotation_file)
        out = LoadCollector(self.name, root)
        path = out.file(folder / self.annotation_file)
        records = read_json_list(path)
        categories: dict[str, set[str]] | None = None
        classification = folder / CLASSIFICATION_FILE
        if classification.is_file():
            categories = read_categories(out.file(classification))
        else:
            out.notes.append(
                f"{CLASSIFICATION_FILE} not found in {folder}: no 'category' label, "
                "so the per-category table is not shown (see the per-box_type table)"
            )
        where = str(path)
        for i, rec in enumerate(records):
            sid = require_str(rec, "id", where=where, sample_id=f"#{i}")
            region = osworld_region(rec, where=where, sample_id=sid)
            labels: dict[str, LabelValue] = {"box_type": region.kind}
            if categories is not None:
                found = categories.get(sid)
                labels["category"] = tuple(sorted(found)) if found else UNCLASSIFIED
            image_path = require_str(rec, "image_path", where=where, sample_id=sid)
            sample = Sample(
                benchmark=self.name,
                id=sid,
                image_path=image_under(folder, "images", image_path, where=where, sample_id=sid),
                image_size=require_size(rec, "image_size", where=where, sample_id=sid),
                instruction=require_str(rec, "instruction", where=where, sample_id=sid),
                region=region,
                labels=labels,
            )
            out.add(sample, f"{path.name} record {i}")
        if categories is not None:
            unknown = set(categories) - {s.id for s in out.samples}
            if unknown:
                out.notes.append(
                    f"{CLASSIFICATION_FILE} lists {len(unknown)} id(s) not in {self.annotation_file}"
                )
        return out.result({"instructions": self.instructions})


class OSWorldGRefined(OSWorldG):
    """OSWorld-G with the refined instructions (same samples and ids, read from the same folder)."""

    name = "osworld_g_refined"
    title = "OSWorld-G (refined)"
    directory = "osworld_g"
    annotation_file = "OSWorld-G_refined.json"
    instructions = "refined"
