"""ScreenSpot-v2: three split files of xywh boxes, image sizes from the image headers.

Layout (FORMATS.md, section 1)::

    ScreenSpot-v2/
      screenspot_mobile_v2.json  screenspot_desktop_v2.json  screenspot_web_v2.json
      screenspotv2_image/<img_filename>

A record's ``bbox`` is ``[x, y, w, h]`` in pixels; the official scorer tests ``[x, y, x+w, y+h]`` with
inclusive edges. Ids are ``<split>_<i>`` (``mobile_0``). The image size comes from the image header.

Example:
    >>> ScreenSpotV2().label_keys
    ('split', 'data_type', 'data_source')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from gge.benchmarks.base import (
    Average,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_size_from_header,
    image_under,
    read_json_list,
    require_files,
    require_numbers,
    require_root,
    require_str,
    str_labels,
    xywh_box,
)
from gge.benchmarks.hosts import Host, Unpack
from gge.types import LabelValue, Region, Sample

SPLITS = ("mobile", "desktop", "web")


class ScreenSpotV2(Benchmark):
    """ScreenSpot-v2: 1272 samples in three splits, text and icon targets."""

    name = "screenspot_v2"
    title = "ScreenSpot-v2"
    directory = "screenspot_v2"
    host = Host(
        "hub",
        "OS-Copilot/ScreenSpot-v2",
        "5efbb1f1b5463a575f2eb7bc30fe29e49c15f93c",
        "host",
        ("screenspot_*_v2.json",),
        unpack=(Unpack("screenspotv2_image.zip", "screenspotv2_image", also=("screenspot_imgs",)),),
        size="1.33 GB",
        licence="apache-2.0",
    )
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

    file_suffix: ClassVar[str] = "_v2"
    """The split files are ``screenspot_<split><suffix>.json``."""
    image_folder: ClassVar[str] = "screenspotv2_image"
    variant: ClassVar[Mapping[str, str]] = {}
    """What the load summary records as the variant."""

    def region(self, xywh: Sequence[float], size: tuple[int, int]) -> Region:
        """The target of a record's ``[x, y, w, h]`` pixel box: ``[x, y, x+w, y+h]`` in pixels.

        Args:
            xywh: The record's box.
            size: The image size (not used: v2's scorer tests pixels).

        Returns:
            The box.
        """
        return xywh_box(xywh)

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the three split files and the flat image folder (see the module docstring).

        Args:
            root: The benchmark folder.
            options: Common options (none specific).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        paths = {split: root / f"screenspot_{split}{self.file_suffix}.json" for split in SPLITS}
        require_files(paths.values(), name=self.name)
        out = LoadCollector(self.name, root)
        for split, path in paths.items():
            where = str(out.file(path))
            for i, rec in enumerate(read_json_list(path)):
                sid = f"{split}_{i}"
                filename = require_str(rec, "img_filename", where=where, sample_id=sid)
                image = image_under(root, self.image_folder, filename, where=where, sample_id=sid)
                size = image_size_from_header(image, where=where, sample_id=sid)
                labels: dict[str, LabelValue] = {"split": split}
                labels.update(str_labels(rec, ("data_type", "data_source"), where=where, sample_id=sid))
                sample = Sample(
                    benchmark=self.name,
                    id=sid,
                    image_path=image,
                    image_size=size,
                    instruction=require_str(rec, "instruction", where=where, sample_id=sid),
                    region=self.region(require_numbers(rec, "bbox", 4, where=where, sample_id=sid), size),
                    labels=labels,
                )
                out.add(sample, f"{path.name} record {i}")
        return out.result(self.variant)
