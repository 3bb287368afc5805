"""ScreenSpot (v1), SeeClick's release: three split files of xywh boxes; headline = mean of the 6 cells.

Layout (FORMATS.md, section 7)::

    ScreenSpot/
      screenspot_mobile.json  screenspot_desktop.json  screenspot_web.json
      screenspot_imgs/<img_filename>

The record schema is ScreenSpot-v2's (``img_filename``, ``bbox`` ``[x, y, w, h]`` in pixels,
``instruction``, ``data_type``, ``data_source``), but the records are not v2's: only 829 of the 1272 are
identical (same image, box and instruction), so the results name ``{"version": "v1"}``. Ids are
``<split>_<i>`` (``mobile_0``). The image size comes from the image header.

The official scorer (SeeClick ``pretrain/screenspot_test.py``) turns the box into ``[x, y, x+w, y+h]``,
divides it by the image size and tests the model's point in [0, 1] with inclusive edges: the boxes are
normalised here the same way (the pixel test gives the same answers up to float rounding). The
official "Average" is the macro mean of the six split x data_type cells; the micro mean is shown
beside it.

Example:
    >>> ScreenSpotV1().official.over
    ('split', 'data_type')
"""

from __future__ import annotations

from pathlib import Path

from gge.benchmarks.base import (
    MICRO,
    Average,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_size_from_header,
    image_under,
    normalized_box,
    read_json_list,
    require_files,
    require_numbers,
    require_root,
    require_str,
    str_labels,
)
from gge.types import LabelValue, Sample

SPLITS = ("mobile", "desktop", "web")
IMAGE_FOLDER = "screenspot_imgs"
DATA_SOURCES = ("ios", "android", "windows", "macos", "gitlab", "shop", "forum", "tool")


class ScreenSpotV1(Benchmark):
    """ScreenSpot (v1): SeeClick's 1272 samples in three splits, text and icon targets."""

    name = "screenspot_v1"
    title = "ScreenSpot (v1)"
    directory = "screenspot_v1"
    label_keys = ("split", "data_type", "data_source")
    official = Average("macro_cells", ("split", "data_type"))
    extra_averages = (MICRO,)
    tables = (
        TableSpec("By split", rows="split", cols="data_type", row_order=SPLITS, col_order=("text", "icon")),
        TableSpec("By data source", rows="data_source", row_order=DATA_SOURCES),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the three split files and the flat image folder (see the module docstring).

        Args:
            root: The benchmark folder.
            options: Common options (none specific).

        Returns:
            The samples and the load summary (variant ``{"version": "v1"}``).
        """
        require_root(root, self.name)
        paths = {split: root / f"screenspot_{split}.json" for split in SPLITS}
        require_files(paths.values(), name=self.name)
        out = LoadCollector(self.name, root)
        for split, path in paths.items():
            where = str(out.file(path))
            for i, rec in enumerate(read_json_list(path)):
                sid = f"{split}_{i}"
                filename = require_str(rec, "img_filename", where=where, sample_id=sid)
                image = image_under(root, IMAGE_FOLDER, filename, where=where, sample_id=sid)
                size = image_size_from_header(image, where=where, sample_id=sid)
                x, y, w, h = require_numbers(rec, "bbox", 4, where=where, sample_id=sid)
                labels: dict[str, LabelValue] = {"split": split}
                labels.update(str_labels(rec, ("data_type", "data_source"), where=where, sample_id=sid))
                sample = Sample(
                    benchmark=self.name,
                    id=sid,
                    image_path=image,
                    image_size=size,
                    instruction=require_str(rec, "instruction", where=where, sample_id=sid),
                    region=normalized_box(x, y, x + w, y + h, size),
                    labels=labels,
                )
                out.add(sample, f"{path.name} record {i}")
        return out.result({"version": "v1"})
