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

from collections.abc import Mapping, Sequence
from typing import ClassVar

from gge.benchmarks.base import MICRO, Average, TableSpec, normalized_box
from gge.benchmarks.hosts import Host
from gge.benchmarks.screenspot_v2 import SPLITS, ScreenSpotV2
from gge.types import Region

IMAGE_FOLDER = "screenspot_imgs"
DATA_SOURCES = ("ios", "android", "windows", "macos", "gitlab", "shop", "forum", "tool")


class ScreenSpotV1(ScreenSpotV2):
    """ScreenSpot (v1): SeeClick's 1272 samples in three splits, text and icon targets."""

    name = "screenspot_v1"
    title = "ScreenSpot (v1)"
    directory = "screenspot_v1"
    host = Host(
        "manual",
        "SeeClick's download links",
        None,
        "",
        (),
        note=(
            "download screenspot_imgs and the three screenspot_*.json from the links in "
            "njucckevin/SeeClick's readme.md into DIR/screenspot_v1 (or read the Hub copy "
            "rootsautomation/ScreenSpot with bench.screenspot_v1.source=parquet)"
        ),
    )
    label_keys = ("split", "data_type", "data_source")
    official = Average("macro_cells", ("split", "data_type"))
    extra_averages = (MICRO,)
    tables = (
        TableSpec("By split", rows="split", cols="data_type", row_order=SPLITS, col_order=("text", "icon")),
        TableSpec("By data source", rows="data_source", row_order=DATA_SOURCES),
    )

    file_suffix = ""
    image_folder = IMAGE_FOLDER
    variant: ClassVar[Mapping[str, str]] = {"version": "v1"}

    def region(self, xywh: Sequence[float], size: tuple[int, int]) -> Region:
        """The target as SeeClick tests it: ``[x, y, x+w, y+h]`` divided by the image size.

        Args:
            xywh: The record's ``[x, y, w, h]`` pixel box.
            size: The image size (from the header).

        Returns:
            The normalised box.
        """
        x, y, w, h = xywh
        return normalized_box(x, y, x + w, y + h, size)
