"""MMBench-GUI, level 2 (element grounding): official headline = mean of Basic and Advanced.

Layout (FORMATS.md, section 5)::

    MMBench-GUI/
      L2_annotations.json
      offline_images/<platform>/<image_path>

A record's ``bbox`` is ``[x1, y1, x2, y2]`` already normalised to [0, 1]; the official scorer turns a
coordinate of exactly -1 into 0 and tests the normalised point with inclusive edges. Ids are the
records' ``index`` as a string.

Example:
    >>> official_box([-1, 0.2, 0.5, 0.6], (200, 100)).x1
    0.0
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gge.benchmarks.base import (
    Average,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_under,
    read_json_list,
    require,
    require_numbers,
    require_root,
    require_size,
    require_str,
    str_labels,
)
from gge.benchmarks.hosts import Host, Unpack
from gge.errors import GgeError
from gge.types import Box, Sample

ANNOTATION_FILE = "L2_annotations.json"
PLATFORMS = ("os_windows", "os_mac", "os_linux", "os_ios", "os_android", "os_web")


def official_box(values: Sequence[float], size: tuple[int, int]) -> Box:
    """The official box: a coordinate of exactly -1 becomes 0; tested in normalised units.

    Args:
        values: ``[x1, y1, x2, y2]`` in [0, 1].
        size: Image (width, height).

    Returns:
        The normalized box.
    """
    x1, y1, x2, y2 = (0.0 if v == -1 else float(v) for v in values)
    return Box(x1, y1, x2, y2, space="normalized", size=size)


class MMBenchGUI(Benchmark):
    """MMBench-GUI L2 element grounding: 3594 samples on six platforms, basic and advanced."""

    name = "mmbench_gui"
    title = "MMBench-GUI L2"
    directory = "mmbench_gui"
    host = Host(
        "hub",
        "OpenGVLab/MMBench-GUI",
        "e27757e3910e0d5995b811f916b509b4e34a4690",
        "host",
        ("L2_annotations.json",),
        unpack=(Unpack("MMBench-GUI-OfflineImages.zip", "offline_images"),),
        size="1.09 GB",
        licence="apache-2.0",
    )
    label_keys = ("grounding_type", "platform", "data_type", "app_name")
    official = Average("macro_grounding_type", ("grounding_type",))
    tables = (
        TableSpec(
            "By platform and grounding type",
            rows="platform",
            cols="grounding_type",
            row_order=PLATFORMS,
            col_order=("basic", "advanced"),
        ),
        TableSpec(
            "By platform and data type",
            rows="platform",
            cols="data_type",
            row_order=PLATFORMS,
            col_order=("text", "icon"),
        ),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the annotation list and check the images (see the module docstring).

        Args:
            root: The benchmark folder.
            options: Common options (none specific).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        out = LoadCollector(self.name, root)
        path = out.file(root / ANNOTATION_FILE)
        where = str(path)
        for i, rec in enumerate(read_json_list(path)):
            index = require(rec, "index", where=where, sample_id=f"#{i}")
            if isinstance(index, bool) or not isinstance(index, (int, str)):
                raise GgeError(f"{where}: record #{i}: field 'index' must be an integer, got {index!r}")
            sid = str(index)
            size = require_size(rec, "image_size", where=where, sample_id=sid)
            labels = str_labels(rec, self.label_keys, where=where, sample_id=sid)
            filename = require_str(rec, "image_path", where=where, sample_id=sid)
            sample = Sample(
                benchmark=self.name,
                id=sid,
                image_path=image_under(
                    root, "offline_images", str(labels["platform"]), filename, where=where, sample_id=sid
                ),
                image_size=size,
                instruction=require_str(rec, "instruction", where=where, sample_id=sid),
                region=official_box(require_numbers(rec, "bbox", 4, where=where, sample_id=sid), size),
                labels=labels,
            )
            out.add(sample, f"{path.name} record {i}")
        return out.result()
