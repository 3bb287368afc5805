"""UI-Vision, element grounding: three settings, official headline = macro mean of the settings.

Layout (FORMATS.md, section 4)::

    ui-vision/
      annotations/element_grounding/element_grounding_{basic,functional,spatial}.json
      images/<image_path>          # a path that exists only relative to the root is accepted too
      mapdict_cat2platform.json    # optional; also looked for in annotations/[element_grounding/]

A record's ``bbox`` is ``[x1, y1, x2, y2]`` in pixels; the official scorer swaps inverted corners,
divides by ``image_size`` and tests with inclusive edges. Ids are ``<setting>_<i>`` (``basic_0``).
``app_category`` maps the record's ``platform`` through the category map (case-insensitive;
``other`` when no category lists it).

Example:
    >>> swapped_box([30, 40, 10, 20], (100, 100)).pixel_box()
    (10.0, 20.0, 30.0, 40.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks.base import (
    Average,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_under,
    normalized_box,
    read_json,
    read_json_list,
    require_files,
    require_numbers,
    require_root,
    require_size,
    require_str,
    str_labels,
)
from gge.benchmarks.hosts import Host
from gge.errors import GgeError
from gge.types import Box, LabelValue, Sample

SETTINGS = ("basic", "functional", "spatial")
MAP_FILE = "mapdict_cat2platform.json"
MAP_PLACES = (".", "annotations", "annotations/element_grounding")
"""Folders under the root searched for the category map, in order."""
APP_CATEGORIES = ("Education", "Browsers", "Development", "Productivity", "Creativity", "Entertainment")
OTHER = "other"


def swapped_box(values: Sequence[float], size: tuple[int, int]) -> Box:
    """The official box: corners swapped where inverted, then normalised by the image size.

    Args:
        values: ``[x1, y1, x2, y2]`` in pixels.
        size: Image (width, height).

    Returns:
        The normalized box.
    """
    x1, y1, x2, y2 = values
    return normalized_box(min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2), size)


def read_category_map(path: Path) -> dict[str, str]:
    """Read the category map: lower-cased platform name -> category (the first listing wins).

    Args:
        path: ``mapdict_cat2platform.json``.

    Returns:
        The platform -> category lookup.
    """
    data = read_json(path)
    if not isinstance(data, dict):
        raise GgeError(f"{path}: expected an object {{<category>: [<platform>, ...]}}")
    lookup: dict[str, str] = {}
    for category, platforms in data.items():
        if not (isinstance(platforms, list) and all(isinstance(p, str) for p in platforms)):
            raise GgeError(f"{path}: category '{category}' must be a list of platform names")
        for platform in platforms:
            lookup.setdefault(platform.lower(), str(category))
    return lookup


class UIVision(Benchmark):
    """UI-Vision element grounding (basic, functional and spatial settings)."""

    name = "ui_vision"
    title = "UI-Vision"
    directory = "ui_vision"
    host = Host(
        "hub",
        "ServiceNow/ui-vision",
        "766c66aeffef16608d4916525902d9fb2598d7ce",
        "host",
        ("annotations/element_grounding/*.json", "images/element_grounding/*"),
        size="784 MB (repo)",
        licence="mit",
        note="mapdict_cat2platform.json (the paper's category table) is in GitHub's uivision/UI-Vision",
    )
    label_keys = ("setting", "app_category", "platform", "element_type")
    derived_labels = ("app_category",)  # from mapdict_cat2platform.json, on GitHub, not the Hub
    official = Average("macro_setting", ("setting",))
    tables = (
        TableSpec("By setting", rows="setting", row_order=SETTINGS),
        TableSpec(
            "By app category",
            rows="app_category",
            cols="setting",
            row_order=(*APP_CATEGORIES, OTHER),
            col_order=SETTINGS,
        ),
        TableSpec("By element type", rows="element_type"),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the three setting files, the optional category map, and check the images.

        Args:
            root: The benchmark folder.
            options: Common options (none specific).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        folder = root / "annotations" / "element_grounding"
        paths = {s: folder / f"element_grounding_{s}.json" for s in SETTINGS}
        require_files(paths.values(), name=self.name)
        out = LoadCollector(self.name, root)
        category_of: dict[str, str] | None = None
        map_path = next((root / d / MAP_FILE for d in MAP_PLACES if (root / d / MAP_FILE).is_file()), None)
        if map_path is not None:
            category_of = read_category_map(out.file(map_path))
        else:
            out.notes.append(
                f"{MAP_FILE} not found (looked in {', '.join(MAP_PLACES)}): no 'app_category' label"
            )
        unmapped: set[str] = set()
        for setting, path in paths.items():
            where = str(out.file(path))
            for i, rec in enumerate(read_json_list(path)):
                sid = f"{setting}_{i}"
                size = require_size(rec, "image_size", where=where, sample_id=sid)
                labels: dict[str, LabelValue] = {"setting": setting}
                labels.update(str_labels(rec, ("platform", "element_type"), where=where, sample_id=sid))
                if category_of is not None:
                    platform = str(labels["platform"])
                    labels["app_category"] = category_of.get(platform.lower(), OTHER)
                    if platform.lower() not in category_of:
                        unmapped.add(platform)
                sample = Sample(
                    benchmark=self.name,
                    id=sid,
                    image_path=self._image(root, rec, where=where, sample_id=sid),
                    image_size=size,
                    instruction=require_str(rec, "prompt_to_evaluate", where=where, sample_id=sid),
                    region=swapped_box(require_numbers(rec, "bbox", 4, where=where, sample_id=sid), size),
                    labels=labels,
                )
                out.add(sample, f"{path.name} record {i}")
        if unmapped:
            out.notes.append(
                f"platforms in no category of {MAP_FILE} (counted as '{OTHER}'): "
                + ", ".join(sorted(unmapped))
            )
        return out.result()

    @staticmethod
    def _image(root: Path, rec: Mapping[str, Any], *, where: str, sample_id: str) -> str:
        """The image at ``images/<image_path>``, else at ``<image_path>`` below the root."""
        relative = require_str(rec, "image_path", where=where, sample_id=sample_id)
        if not (root / "images" / relative).is_file() and (root / relative).is_file():
            return image_under(root, relative, where=where, sample_id=sample_id)
        return image_under(root, "images", relative, where=where, sample_id=sample_id)
