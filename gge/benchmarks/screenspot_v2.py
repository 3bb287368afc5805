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

from pathlib import Path

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
from gge.types import LabelValue, Sample

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
