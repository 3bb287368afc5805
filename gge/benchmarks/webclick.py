"""WebClick (H Company): 1,639 web screenshots in parquet, images embedded; headline = micro over all rows.

Layout (FORMATS.md, section 12; the Hub dataset Hcompany/WebClick as released)::

    webclick/                             # the root: the dataset's folder (or its data/ folder)
      data/test-00000-of-0000N.parquet    # every row: image (embedded), instruction, bbox, bucket

A row's ``bbox`` is ``[x1, y1, x2, y2]`` normalised to [0, 1] (the card: "same format as
ScreenSpot"); whether every copy keeps it so is not certain, so ``bbox=auto`` (the default) reads the
boxes as normalised only when every row's values lie in [0, 1] and refuses a mix, naming a row
(``bbox=norm_1|pixels`` says it instead). The image size is read from the embedded image's header.
Ids are ``test_<i>``, the 0-based row over the files in name order. There is no official scorer: gge
scores as ScreenSpot does (the point normalised by the image size, inclusive edges; an unparsed
answer a miss in the denominator), and the headline is the micro accuracy over every row, as the
card's single column. The card describes three buckets (agentbrowse, humanbrowse, calendars) but
publishes no number per bucket: the table by bucket is gge's own, and says so.

The card's numbers changed between its revisions without a data change (re-runs): every result
records the files' sha256 (``provenance``) and the dataset revision the user names
(``bench.webclick.revision=<sha>``, in ``load.variant``; unnamed: "not named").

Reading needs pyarrow (``pip install 'gge[hub]'``).

Example:
    >>> WebClick().tables[0].title
    'By bucket (gge; the card publishes no number per bucket)'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from gge.benchmarks.base import (
    UNKNOWN_SIZE,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    require_root,
)
from gge.benchmarks.hosts import Host, fetched_commit
from gge.benchmarks.hub_files import CopyRow, read_parquet_rows
from gge.documents.caveats import gge_rule
from gge.errors import GgeError, unknown_name
from gge.types import Box, Sample

BUCKETS = ("agentbrowse", "humanbrowse", "calendars")
UNITS = ("auto", "norm_1", "pixels")
NOT_NAMED = "not named"
BUCKET_TABLE = "By bucket (gge; the card publishes no number per bucket)"


@dataclass
class WebClickOptions(BenchmarkOptions):
    """Options of WebClick (``bench.webclick.<option>=``).

    Attributes:
        revision: The dataset revision the files are of (a Hub commit sha), recorded with the result;
            gge cannot check it (the files' sha256 are recorded too).
        bbox: ``auto`` (normalised when every row's box lies in [0, 1]), ``norm_1`` or ``pixels``.
    """

    revision: str | None = None
    bbox: str = "auto"

    NOT_PREDICTIVE: ClassVar[tuple[str, ...]] = (*BenchmarkOptions.NOT_PREDICTIVE, "revision")
    """``revision`` only labels the run (the samples digest covers what was read)."""


CAVEAT = gge_rule(
    "WebClick",
    "a hit is the point in the box normalised by the image size, edges included (ScreenSpot's rule)",
)
"""Every WebClick headline's label: the card publishes figures but no scorer."""


def parquet_files(root: Path) -> list[Path]:
    """The dataset's parquet files in name order: ``root/data/*.parquet``, else ``root/*.parquet``."""
    data = root / "data"
    files = sorted(data.glob("*.parquet")) if data.is_dir() else []
    return files or sorted(root.glob("*.parquet"))


class WebClick(Benchmark):
    """WebClick: 1,639 web screenshots (agent browsing, human browsing, calendars), images embedded."""

    name = "webclick"
    title = "WebClick"
    directory = "webclick"
    host = Host(
        "hub",
        "Hcompany/WebClick",
        "9482a7d5aaa8f4cd5d28d9ed0c8e0c48d20b1e4a",
        "third party",
        ("data/test-*.parquet",),
        size="560 MB",
        licence="apache-2.0",
    )
    label_keys = ("bucket",)
    options_type = WebClickOptions
    tables = (
        TableSpec(
            "By bucket (gge; the card publishes no number per bucket)", rows="bucket", row_order=BUCKETS
        ),
    )

    def headline_caveat(self, options: BenchmarkOptions) -> str | None:
        """Always: the rule is gge's (WebClick publishes no scorer)."""
        return CAVEAT

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read every row of the parquet files (see the module docstring).

        Args:
            root: The dataset folder (or its ``data/`` folder).
            options: :class:`WebClickOptions`.

        Returns:
            The samples and the load summary (its variant: the revision named and how boxes read).
        """
        units = str(getattr(options, "bbox", "auto"))
        if units not in UNITS:
            raise unknown_name("webclick bbox", units, list(UNITS))
        revision = fetched_commit(root, getattr(options, "revision", None), "bench.webclick.revision")
        require_root(root, self.name)
        files = parquet_files(root)
        if not files:
            where = f"{root / 'data'} or {root}"
            raise GgeError(f"{self.name}: no parquet file in {where} (the dataset's data/test-*.parquet)")
        out = LoadCollector(self.name, root)
        rows: list[CopyRow] = []
        for path in files:
            rows += read_parquet_rows(out.file(path), ["instruction", "bbox", "bucket"], "image")
        boxes = [_box(row) for row in rows]
        if units == "auto":
            units = _units(rows, boxes)
            out.notes.append(f"bbox read as {units} (bbox=auto: the boxes' values)")
        for i, (row, box) in enumerate(zip(rows, boxes, strict=True)):
            instruction, bucket = row.values.get("instruction"), row.values.get("bucket")
            if not isinstance(instruction, str) or not isinstance(bucket, str):
                got = f"{instruction!r:.60}, {bucket!r:.40}"
                raise GgeError(f"{row.where}: instruction and bucket must be text, got {got}")
            if units == "norm_1" and row.size == UNKNOWN_SIZE:
                raise GgeError(
                    f"{row.where}: its image's header cannot be read (a normalised box needs its size)"
                )
            x1, y1, x2, y2 = box
            region = Box(x1, y1, x2, y2, "normalized", row.size) if units == "norm_1" else Box(x1, y1, x2, y2)
            sample = Sample(
                self.name, f"test_{i}", row.image, row.size, instruction, region, {"bucket": bucket}
            )
            out.add(sample, row.origin)
        return out.result({"revision": revision or NOT_NAMED, "bbox": units})


def _units(rows: list[CopyRow], boxes: list[tuple[float, float, float, float]]) -> str:
    """``norm_1`` when every box lies in [0, 1], ``pixels`` when none does; a mix is refused."""
    inside = [all(0.0 <= v <= 1.0 for v in box) for box in boxes]
    if all(inside):
        return "norm_1"
    if not any(inside):
        return "pixels"
    first, other = rows[0], rows[inside.index(not inside[0])]
    a, b = ("in", "not in") if inside[0] else ("not in", "in")
    raise GgeError(
        f"{other.where}: its bbox is {b} [0, 1], {first.where}'s {a}: the boxes mix units; "
        "say bench.webclick.bbox=norm_1|pixels"
    )


def _box(row: CopyRow) -> tuple[float, float, float, float]:
    """A row's ``bbox``, four numbers, or an error naming the row."""
    value = row.values.get("bbox")
    if (
        not isinstance(value, list | tuple)
        or len(value) != 4
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise GgeError(f"{row.where}: bbox must be 4 numbers, got {value!r:.80}")
    x1, y1, x2, y2 = (float(v) for v in value)
    return (x1, y1, x2, y2)
