"""What a benchmark module declares, and the checked file helpers every loader uses.

A benchmark is one module with one subclass of :class:`Benchmark`: it reads the official on-disk
layout under a root folder into :class:`~gge.types.Sample` objects and declares, as data, its
breakdown label keys, its official headline average and its official tables. Everything else
(scoring, metrics, tables, files) is generic.

Example:
    >>> TableSpec("By group", rows="group", cols="ui_type").cols
    'ui_type'
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gge.benchmarks.hosts import Host, fetched_provenance, sha256_file
from gge.benchmarks.images import UNKNOWN_SIZE as UNKNOWN_SIZE
from gge.benchmarks.images import image_exists, open_image
from gge.errors import GgeError, TransientError
from gge.types import Absent, Box, LabelValue, Polygon, Region, Sample


@dataclass
class BenchmarkOptions:
    """Options every benchmark accepts (``bench.<name>.<option>=...`` on the command line).

    Attributes:
        root: The folder the user unpacked the benchmark into; default ``<data_root>/<directory>``.
        source: Which layout the folder holds: ``release`` (the official files), ``parquet`` or
            ``tsv`` (a Hub copy, images embedded), or ``auto`` (detected from what the folder holds).
        allow_copy_differences: Evaluate a Hub copy whose records differ from the release, or that
            cannot be checked against it (the differences are recorded in ``provenance``; without it
            such a copy is refused).
        release_root: A folder holding the release layout too: a copy is then compared with it record
            by record (the differences name the first ids), not only with gge's release digests.
    """

    root: str | None = None
    source: str = "auto"
    allow_copy_differences: bool = False
    release_root: str | None = None

    NOT_PREDICTIVE: ClassVar[tuple[str, ...]] = ("root", "source", "allow_copy_differences", "release_root")
    """Options left out of a run's fingerprint: where the records are read from, not what is asked
    (the samples digest covers what was read)."""


@dataclass(frozen=True)
class TableSpec:
    """One official table: rows by one label key, optionally columns by another.

    Attributes:
        title: Heading printed above the table.
        rows: Label key whose values make the rows.
        cols: Label key whose values make the columns, or None for a one-column table.
        row_order: Preferred row order; values not listed follow, sorted.
        col_order: Preferred column order; values not listed follow, sorted.
    """

    title: str
    rows: str
    cols: str | None = None
    row_order: tuple[str, ...] = ()
    col_order: tuple[str, ...] = ()


@dataclass(frozen=True)
class Average:
    """How an overall number is averaged.

    ``over=()`` is micro (hits / samples). Otherwise the samples are grouped by the values of the
    ``over`` label keys (one group per combination present) and the group accuracies are averaged
    with equal weight (macro).

    Attributes:
        name: Name used in results.json and tables (``micro``, ``macro_setting``...).
        over: Label keys whose value combinations are averaged.
    """

    name: str
    over: tuple[str, ...] = ()


MICRO = Average("micro")


@dataclass(frozen=True)
class BootstrapCI:
    """A benchmark's official bootstrap interval of its headline accuracy (seeded in gge).

    Attributes:
        resamples: Bootstrap resamples.
        confidence: Confidence level.
        method: ``percentile`` (scipy.stats.bootstrap's ``method``).
    """

    resamples: int = 9999
    confidence: float = 0.95
    method: str = "percentile"


@dataclass
class LoadedBenchmark:
    """The samples of one benchmark and what the loader noticed on the way.

    Attributes:
        name: Registered benchmark name.
        root: The folder read.
        samples: Samples in file order.
        summary: Load summary written to results.json (files read, records, degenerate boxes,
            the instruction variant, notes).
    """

    name: str
    root: str
    samples: list[Sample]
    summary: dict[str, Any] = field(default_factory=dict)


class Benchmark(ABC):
    """A benchmark: its official layout, label keys, headline average and tables.

    Subclasses set the class attributes and implement :meth:`load`.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    directory: ClassVar[str]
    """Folder name under ``data_root`` (``osworld_g_refined`` reads ``osworld_g``)."""
    options_type: ClassVar[type[BenchmarkOptions]] = BenchmarkOptions
    label_keys: ClassVar[tuple[str, ...]]
    official: ClassVar[Average] = MICRO
    """The official headline average."""
    extra_averages: ClassVar[tuple[Average, ...]] = ()
    """Other averages papers report (shown beside the official one and labelled as such)."""
    tables: ClassVar[tuple[TableSpec, ...]]
    """Official tables; a table whose row key no sample carries is not shown."""
    derived_labels: ClassVar[tuple[str, ...]] = ()
    """Label keys taken from a side file the host may not ship with the records (UI-Vision's category
    map, OSWorld-G's classification): left out of the release digests, so a folder without the file
    still checks as the release."""
    host: ClassVar[Host | None] = None
    """Where the benchmark is published and how ``gge data fetch`` gets it (None: nothing to fetch)."""
    headline_ci: ClassVar[BootstrapCI | None] = None
    """The official headline's interval when the benchmark's own code gives one (a bootstrap); None:
    gge's Wilson interval of the micro mean."""

    def headline_caveat(self, options: BenchmarkOptions) -> str | None:
        """Why this run's headline is not the benchmark's published one, or None when it is.

        Written into the load summary (``headline_caveat``) and printed on the headline line of every
        report, so a number that papers cannot be compared with never reads as official.

        Args:
            options: The run's options for this benchmark.

        Returns:
            One line, or None.
        """
        return None

    def configured(self, options: BenchmarkOptions) -> Benchmark:
        """The benchmark as one run's options shape it (its label keys and tables); default: itself.

        ``records`` builds its breakdown from ``bench.records.tables``; the registered instance is
        left unchanged.

        Args:
            options: The run's options for this benchmark.

        Returns:
            The benchmark the run scores with.
        """
        return self

    @abstractmethod
    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the official layout under ``root``.

        Args:
            root: The benchmark folder.
            options: This benchmark's options.

        Returns:
            The samples and a load summary.

        Raises:
            GgeError: naming the file, line, record or field at fault.
        """


# ----------------------------------------------------------------------------------------------
# Checked helpers: each raises GgeError with a message naming the file / record / field.


def require_root(root: Path, name: str) -> Path:
    """Check that a benchmark root folder exists.

    Args:
        root: The folder.
        name: Benchmark name, for the message.

    Returns:
        The root, unchanged.
    """
    if not root.is_dir():
        raise GgeError(
            f"{name}: benchmark folder not found: {root} "
            f"(set data_root=DIR, which reads DIR/<benchmark>, or bench.{name}.root=DIR)"
        )
    return root


def read_json(path: Path) -> Any:
    """Read a JSON file, naming the file and position on failure.

    Args:
        path: The file.

    Returns:
        The parsed value.
    """
    if not path.is_file():
        raise GgeError(f"annotation file not found: {path}")
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise GgeError(f"{path}: line {e.lineno}, column {e.colno}: malformed JSON: {e.msg}") from None


def read_text(path: Path) -> str:
    """A UTF-8 text file's contents, naming the file when it cannot be read or is not UTF-8.

    Args:
        path: The file.

    Returns:
        The text.
    """
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise TransientError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise GgeError(f"{path}: not UTF-8 text: {e}") from None


def read_json_list(path: Path) -> list[Any]:
    """Read a JSON file whose top level must be a list of objects.

    Args:
        path: The file.

    Returns:
        The records.
    """
    data = read_json(path)
    if not isinstance(data, list):
        raise GgeError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise GgeError(f"{path}: record {i} is {type(rec).__name__}, expected an object")
    return data


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """Read a JSON-lines file; empty lines are skipped.

    Args:
        path: The file.

    Returns:
        (1-based line number, parsed value) for every non-empty line.
    """
    if not path.is_file():
        raise GgeError(f"annotation file not found: {path}")
    out: list[tuple[int, Any]] = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                out.append((lineno, json.loads(line)))
            except json.JSONDecodeError as e:
                raise GgeError(f"{path}:{lineno}: malformed JSON line: {e.msg}") from None
    return out


def require(record: Mapping[str, Any], key: str, *, where: str, sample_id: str) -> Any:
    """A mandatory field of a record.

    Args:
        record: The record.
        key: Field name.
        where: The file (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        The value.
    """
    if key not in record:
        raise GgeError(f"{where}: record {sample_id} has no field '{key}'")
    return record[key]


def require_str(record: Mapping[str, Any], key: str, *, where: str, sample_id: str) -> str:
    """A mandatory string field (see :func:`require`)."""
    value = require(record, key, where=where, sample_id=sample_id)
    if not isinstance(value, str):
        raise GgeError(f"{where}: record {sample_id}: field '{key}' must be a string, got {value!r}")
    return value


def require_numbers(
    record: Mapping[str, Any], key: str, n: int | None, *, where: str, sample_id: str
) -> list[float]:
    """A mandatory list of numbers, of length ``n`` when given (see :func:`require`)."""
    value = require(record, key, where=where, sample_id=sample_id)
    ok = isinstance(value, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
    )
    if not ok or (n is not None and len(value) != n):
        size = f"{n} numbers" if n is not None else "a list of numbers"
        raise GgeError(f"{where}: record {sample_id}: field '{key}' must be {size}, got {value!r}")
    return [float(v) for v in value]


def require_size(record: Mapping[str, Any], key: str, *, where: str, sample_id: str) -> tuple[int, int]:
    """A mandatory [width, height] field with positive values (see :func:`require`)."""
    w, h = require_numbers(record, key, 2, where=where, sample_id=sample_id)
    if w <= 0 or h <= 0:
        raise GgeError(f"{where}: record {sample_id}: field '{key}' must be positive, got {[w, h]}")
    return int(w), int(h)


def resolve_image(root: Path, relative: str, *, where: str, sample_id: str) -> str:
    """The absolute path of a record's image, which must stay inside ``root``.

    The check is lexical (``..`` and absolute paths are rejected), so a root whose image folder
    is a symbolic link to another disk still works. A missing file is not an error here: the sample
    is kept, the load summary lists it (``unreadable_images``), and the run scores it as a miss
    counted apart, or stops with ``strict_images=true``.

    Args:
        root: The folder the record's path is relative to.
        relative: The record's image path.
        where: The file (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        The image path as a string.
    """
    base = os.path.normpath(os.path.abspath(root))
    full = os.path.normpath(os.path.join(base, relative))
    if os.path.isabs(relative) or not (full == base or full.startswith(base + os.sep)):
        raise GgeError(f"{where}: record {sample_id}: image path escapes the benchmark folder: {relative!r}")
    return full


def image_size_from_header(path: str, *, where: str, sample_id: str) -> tuple[int, int]:
    """Width and height read from the image header, without decoding the pixels.

    Args:
        path: The image file.
        where: The file (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        (width, height); :data:`UNKNOWN_SIZE` when the file is missing or its header unreadable (the
        sample is then an unreadable screenshot: listed, and a counted miss when evaluated).
    """
    try:
        with open_image(path) as im:
            return int(im.size[0]), int(im.size[1])
    except (OSError, ValueError):
        return UNKNOWN_SIZE


# ----------------------------------------------------------------------------------------------
# Shared pieces of the loaders: sample collection with the load summary, box builders.

MAX_LISTED_IDS = 50
"""Summaries list the ids of odd samples only when there are at most this many."""


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
        left_out: The records left out on purpose, by why (as the release's own code leaves them
            out): their prediction lines are not stray (``load.left_out``; written only when some are).
        provenance: The whole ``provenance`` when the loader builds it (a Hub copy's, a records
            file's); None: the release layout's, built here from the files read.
    """

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.samples: list[Sample] = []
        self.files: list[str] = []
        self.notes: list[str] = []
        self.left_out: dict[str, list[str]] = {}
        self.provenance: dict[str, Any] | None = None
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
        unreadable = [s.id for s in self.samples if not _header_readable(s)]
        outside = [  # a size from the record is known without the screenshot; from its header, not
            s.id
            for s in self.samples
            if s.image_size != UNKNOWN_SIZE and region_outside_image(s.region, s.image_size)
        ]
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
        summary["unreadable_images"] = len(unreadable)
        if len(unreadable) <= MAX_LISTED_IDS:
            summary["unreadable_image_ids"] = unreadable
        summary["variant"] = dict(variant or {})
        summary["notes"] = list(self.notes)
        if self.left_out:
            summary["left_out"] = {why: list(ids) for why, ids in self.left_out.items()}
        summary["provenance"] = self.provenance or self.release_provenance()
        return LoadedBenchmark(self.name, str(self.root), self.samples, summary)

    def release_provenance(self) -> dict[str, Any]:
        """``provenance`` of a load read from its own layout: the files read with their digests.

        Returns:
            A :class:`gge.documents.results.Provenance` (screenshots are not hashed; the records are not
            checked against the release: they are read as the release). A folder ``gge data fetch``
            wrote adds ``fetched``: the repository, revision and commit.

        Raises:
            GgeError: A file read is not the one fetched (edited or corrupted since).
        """
        files = [file_record(self.root / rel, self.root) for rel in dict.fromkeys(self.files)]
        provenance: dict[str, Any] = {
            "source": "release",
            "files": files,
            "copy": None,
            "release_check": {
                "matches": None,
                "differences": [],
                "checked_against": "not checked: the release layout is read as it is",
            },
            "allowed_differences": False,
        }
        read = {str(self.root / f["path"]): f["sha256"] for f in files if f["sha256"] is not None}
        fetched = fetched_provenance(self.root, read)  # a file changed since gge data fetch: refused
        if fetched is not None:
            provenance["fetched"] = fetched
        return provenance


def file_record(path: Path, root: Path) -> dict[str, Any]:
    """``{path, sha256, bytes}`` of a file read (``provenance.files``): its path relative to ``root``.

    Args:
        path: The file.
        root: The benchmark's folder.

    Returns:
        The record (``sha256`` and ``bytes`` are None for a file that cannot be read).
    """
    try:
        return {
            "path": os.path.relpath(path, root),
            "sha256": sha256_file(path),
            "bytes": path.stat().st_size,
        }
    except OSError:
        return {"path": os.path.relpath(path, root), "sha256": None, "bytes": None}


def _header_readable(sample: Sample) -> bool:
    """Whether a sample's screenshot exists (and, for a size read from it, its header was readable)."""
    return image_exists(sample.image_path) and sample.image_size != UNKNOWN_SIZE


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


def json_files(folder: Path, *, name: str, kind: str, folder_needed: bool = True) -> list[Path]:
    """Every ``*.json`` of a release's folder, sorted by name; refused in one line when there is none.

    Args:
        folder: The folder.
        name: The benchmark's name (for the message).
        kind: What the files are (``annotation``, ``instruction``), for the message.
        folder_needed: Say first that the folder itself is missing (a folder of its own in the
            layout); False where the folder is the root, which exists.

    Returns:
        The files.
    """
    if folder_needed and not folder.is_dir():
        raise GgeError(f"{name}: {kind} folder not found: {folder}")
    paths = sorted(folder.glob("*.json"))
    if not paths:
        raise GgeError(f"{name}: no {kind} file (*.json) in {folder}")
    return paths


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
