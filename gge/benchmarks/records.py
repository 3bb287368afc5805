"""The ``records`` benchmark: a user's own grounding data in one JSONL, CSV or parquet file, no code.

``bench.records.path=my.jsonl`` (relative to the working directory), or by default the one
``records.jsonl`` / ``records.csv`` / ``records.parquet`` in the root folder (``<data_root>/records``
or ``bench.records.root``). One row per sample (docs/extending.md, "A records file"):

* ``image``: the screenshot, relative to the records file's folder (or absolute); in parquet also a
  Hugging Face ``Image`` struct ``{bytes, path}`` (the image embedded in the file);
* ``instruction``: the text to ground;
* exactly one target: ``bbox`` (4 numbers, in the declared ``box_format`` xyxy|xywh and ``units``
  pixels|norm_1|norm_1000), ``polygon`` (a flat ``[x1, y1, x2, y2, ...]`` or a list of ``[x, y]``
  pairs, in the declared ``units``), or ``absent: true`` (the target is not on the screen: only an
  abstention hits);
* optional ``id`` (default: the 0-based row number; unique), ``width`` and ``height`` (default: the
  image header), ``box_format`` and ``units`` (per row, instead of or agreeing with the options), and
  the label columns named in ``bench.records.tables`` (each a breakdown key and a one-column table).

Nothing is guessed: a bbox with no declared format or units, a row value contradicting the option,
a bad row of any kind is one error naming ``file:line`` and the column (JSONL: the line; CSV: the
line, the header being line 1; parquet: ``file:row N``, the 0-based row). Targets in other units or
another format than declared are refused too (:mod:`gge.benchmarks.records_targets`): a
normalised coordinate outside [0, 1] (``norm_1``) or [0, 1000] (``norm_1000``) by more than
1e-6 of the range, an inverted box (x2 < x1 or y2 < y1 after the ``xywh`` conversion:
typically xywh data declared xyxy), a polygon of fewer than 3 vertices, and a pixel box or polygon
lying entirely outside the image (when its size is known). Boxes in ``pixels`` are
pixel boxes; ``norm_1`` boxes are normalised boxes (the point is divided by the image size);
``norm_1000`` ones are divided by 1000 first; ``xywh`` is converted to corners first. Polygons are
stored in pixels (normalised vertices are multiplied by the image size).

Example:
    >>> RecordsBenchmark(RecordsOptions(tables=["app"])).tables[0].rows
    'app'
    >>> unit_box([100, 50, 20, 10], "xywh", "pixels", (200, 100)).pixel_box()
    (100.0, 50.0, 120.0, 60.0)
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gge.benchmarks.base import (
    UNKNOWN_SIZE,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    file_record,
    image_size_from_header,
    read_jsonl,
    require_root,
)
from gge.benchmarks.images import embedded_ref, split_ref
from gge.benchmarks.records_targets import check_box, check_polygon, unit_box, unit_polygon
from gge.errors import GgeError
from gge.types import Absent, LabelValue, Point, Region, Sample

FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}
"""The file formats, by file extension."""
DEFAULT_FILES = tuple(f"records{ext}" for ext in FORMATS)
BOX_FORMATS = ("xyxy", "xywh")
UNITS = ("pixels", "norm_1", "norm_1000")
TARGETS = ("bbox", "polygon", "absent")
COLUMNS = ("image", "instruction", *TARGETS, "id", "width", "height", "box_format", "units")
"""The columns a row may have besides its label columns."""


@dataclass
class RecordsOptions(BenchmarkOptions):
    """Options of the ``records`` benchmark (``bench.records.<option>=``).

    Attributes:
        path: The records file (``.jsonl``, ``.csv`` or ``.parquet``), relative to the working
            directory; default: the one ``records.jsonl|csv|parquet`` in the root folder.
        tables: Label columns to break down by (each a label key and a one-column table).
        box_format: How every ``bbox`` reads: ``xyxy`` (corners) or ``xywh``; unset: each bbox row
            says so in its ``box_format`` column.
        units: The units of every ``bbox`` and ``polygon``: ``pixels``, ``norm_1`` ([0, 1]) or
            ``norm_1000`` ([0, 1000]); unset: each such row says so in its ``units`` column.
        name: The title tables print (default ``Records``).
    """

    path: str | None = None
    tables: list[str] = field(default_factory=list)
    box_format: str | None = None
    units: str | None = None
    name: str | None = None

    NOT_PREDICTIVE: ClassVar[tuple[str, ...]] = (*BenchmarkOptions.NOT_PREDICTIVE, "path", "tables", "name")


class RecordsBenchmark(Benchmark):
    """A user's own records file (see the module docstring).

    The registered instance has no label keys; :meth:`configured` gives the instance for one run's
    options, whose label keys and tables are the ``tables`` columns and whose title is ``name``.

    Args:
        options: The run's options (None: the registered instance, no tables).
    """

    name = "records"
    title = "Records"
    directory = "records"
    options_type = RecordsOptions
    label_keys = ()
    tables = ()

    def __init__(self, options: RecordsOptions | None = None) -> None:
        if options is not None:
            keys = tuple(check_options(options).tables)
            # this instance's own label keys, tables and title shadow the class's (the registered
            # instance keeps none): a run's metrics read them from the instance it loaded with
            self.__dict__.update(
                title=options.name or type(self).title,
                label_keys=keys,
                tables=tuple(TableSpec(f"By {key}", rows=key) for key in keys),
            )

    def configured(self, options: BenchmarkOptions) -> RecordsBenchmark:
        """The benchmark for one run's options: its label keys and tables are ``options.tables``.

        Args:
            options: The run's options (a :class:`RecordsOptions`).

        Returns:
            A new instance (the registered one is left unchanged).
        """
        return RecordsBenchmark(_records_options(options))

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the records file (see the module docstring).

        Args:
            root: The folder holding ``records.jsonl|csv|parquet`` (not read when ``path`` is set).
            options: A :class:`RecordsOptions`.

        Returns:
            The samples and the load summary (``variant``: path, format, box_format, units;
            ``provenance``: source ``records`` with the file's sha256 and size).
        """
        opts = check_options(_records_options(options))
        path = records_file(root, opts)
        fmt = FORMATS[path.suffix.lower()]
        folder = path.resolve().parent
        out = LoadCollector(self.name, folder)
        out.file(path.resolve())
        reader = _Rows(folder, opts)
        unknown: set[str] = set()
        for index, (where, row) in enumerate(_read(path, fmt)):
            unknown.update(k for k in row if k not in COLUMNS and k not in opts.tables)
            out.add(reader.sample(row, index, where), where)
        if unknown:
            out.notes.append(
                f"columns not read: {', '.join(sorted(unknown))} (bench.{self.name}.tables=[...] "
                "breaks the results down by label columns)"
            )
        variant = {
            "path": str(path),
            "format": fmt,
            "box_format": opts.box_format or "per row",
            "units": opts.units or "per row",
        }
        out.provenance = {  # set before result(), so the file is hashed once
            "source": "records",
            "files": [file_record(path.resolve(), folder)],
            "copy": None,
            "release_check": {
                "matches": None,
                "differences": [],
                "checked_against": "not checked: a user's own records have no release",
            },
            "allowed_differences": bool(opts.allow_copy_differences),
        }
        return out.result(variant)


def _records_options(options: BenchmarkOptions) -> RecordsOptions:
    """``options`` as RecordsOptions (the defaults plus ``root`` when given the base options)."""
    if isinstance(options, RecordsOptions):
        return options
    return RecordsOptions(
        root=options.root, source=options.source, allow_copy_differences=options.allow_copy_differences
    )


def check_options(options: RecordsOptions) -> RecordsOptions:
    """Check the options' values (one-line GgeError naming ``bench.records.<option>``).

    Args:
        options: The options.

    Returns:
        The options, unchanged.
    """
    for key, allowed in (("box_format", BOX_FORMATS), ("units", UNITS)):
        value = getattr(options, key)
        if value is not None and value not in allowed:
            raise GgeError(f"bench.records.{key} must be one of {', '.join(allowed)}, got {value!r}")
    if options.source != "auto":
        raise GgeError(
            f"bench.records.source does not apply (the file's extension says how it reads), got "
            f"{options.source!r}"
        )
    if options.name is not None and not (isinstance(options.name, str) and options.name.strip()):
        raise GgeError(f"bench.records.name must be a non-empty title, got {options.name!r}")
    tables = list(options.tables)
    for key in tables:
        if not isinstance(key, str) or not key:
            raise GgeError(f"bench.records.tables must name label columns, got {tables!r}")
        if key in COLUMNS:
            raise GgeError(f"bench.records.tables: '{key}' is a records column, not a label column")
    if len(set(tables)) != len(tables):
        raise GgeError(f"bench.records.tables names a column twice: {tables}")
    return options


def records_file(root: Path, options: RecordsOptions) -> Path:
    """The records file a load reads: ``path``, else the one default-named file in ``root``.

    Args:
        root: The benchmark folder.
        options: The options.

    Returns:
        The file (as given: relative paths stay relative to the working directory).
    """
    if options.path:
        path = Path(options.path)
        if path.suffix.lower() not in FORMATS:
            raise GgeError(
                f"bench.records.path: {path}: the file must end in {', '.join(FORMATS)} (how it is read)"
            )
        if not path.is_file():
            raise GgeError(f"bench.records.path: records file not found: {path}")
        return path
    require_root(root, "records")
    found = [root / name for name in DEFAULT_FILES if (root / name).is_file()]
    if len(found) != 1:
        what = "none" if not found else ", ".join(p.name for p in found)
        raise GgeError(
            f"records: {root} must hold exactly one of {', '.join(DEFAULT_FILES)} (found {what}); "
            "or set bench.records.path=FILE"
        )
    return found[0]


# ----------------------------------------------------------------------------------------------
# One row to one Sample.


class _Rows:
    """Turns checked rows into samples (the options and the records file's folder)."""

    def __init__(self, folder: Path, options: RecordsOptions) -> None:
        self.folder = folder
        self.options = options

    def sample(self, row: Mapping[str, Any], index: int, where: str) -> Sample:
        """The sample of one row (GgeError naming ``where`` and the column at fault)."""
        image = self._image(row, where)
        instruction = row.get("instruction")
        if instruction is None:
            raise GgeError(f"{where}: no column 'instruction' (the text to ground)")
        if not isinstance(instruction, str) or not instruction.strip():
            raise GgeError(
                f"{where}: column 'instruction' must be a non-empty string, got {_show(instruction)}"
            )
        sid = _sample_id(row.get("id"), index, where)
        box_format = _declared(row, "box_format", self.options.box_format, BOX_FORMATS, where)
        units = _declared(row, "units", self.options.units, UNITS, where)
        targets = [t for t in TARGETS if row.get(t) is not None and not (t == "absent" and row[t] is False)]
        if len(targets) != 1:
            got = "none" if not targets else f"{len(targets)} ({', '.join(targets)})"
            raise GgeError(
                f"{where}: exactly one target column is needed (bbox, polygon or absent: true), got {got}"
            )
        target = targets[0]
        size, known = self._size(row, image, where)
        labels = self._labels(row, where)
        region: Region
        if target == "absent":
            if row["absent"] is not True:
                raise GgeError(f"{where}: column 'absent' must be true or false, got {_show(row['absent'])}")
            region = Absent()
        elif target == "bbox":
            values = _numbers(row["bbox"], "bbox", where)
            if len(values) != 4:
                raise GgeError(f"{where}: column 'bbox' must be 4 numbers, got {_show(row['bbox'])}")
            if box_format is None:
                raise GgeError(
                    f"{where}: column 'bbox': no box_format declared (set bench.records.box_format=xyxy|xywh "
                    "or give the row a 'box_format' column)"
                )
            bbox_units = _units_for(units, "bbox", where)
            check_box(values, box_format, bbox_units, size if known else None, where)
            region = unit_box(values, box_format, bbox_units, size)
        else:
            vertices = _vertices(row["polygon"], where)
            polygon_units = _units_for(units, "polygon", where)
            check_polygon(vertices, polygon_units, size if known else None, where)
            region = unit_polygon(vertices, polygon_units, size)
        return Sample("records", sid, image, size, instruction, region, labels)

    def _image(self, row: Mapping[str, Any], where: str) -> str:
        """The row's image reference: a path (made absolute) or an image embedded in the file."""
        value = row.get("image")
        if value is None:
            raise GgeError(f"{where}: no column 'image' (the screenshot's path)")
        if isinstance(value, _Embedded):
            return value.ref
        if not isinstance(value, str) or not value.strip():
            raise GgeError(f"{where}: column 'image' must be a path string, got {_show(value)}")
        return os.path.normpath(os.path.join(self.folder, value))

    def _size(self, row: Mapping[str, Any], image: str, where: str) -> tuple[tuple[int, int], bool]:
        """``width``/``height`` (both or neither), else the image header; and whether it is known.

        Given sizes are checked against the image's readable header, a file's or one embedded in a
        parquet file alike. The size is unknown when neither the row nor a readable header gives it.
        """
        given = [row.get("width"), row.get("height")]
        if given == [None, None]:
            header = image_size_from_header(image, where=where, sample_id=where)
            return header, header != UNKNOWN_SIZE
        if None in given:
            missing = "width" if given[0] is None else "height"
            raise GgeError(f"{where}: column '{missing}' is missing (give both width and height, or neither)")
        size = (_positive_int(given[0], "width", where), _positive_int(given[1], "height", where))
        header = image_size_from_header(image, where=where, sample_id=where)
        if header not in (UNKNOWN_SIZE, size):
            what = "the image embedded in the file" if split_ref(image) is not None else f"the image {image}"
            raise GgeError(
                f"{where}: columns 'width'/'height' say {size[0]}x{size[1]}, but {what} is "
                f"{header[0]}x{header[1]}"
            )
        return size, True

    def _labels(self, row: Mapping[str, Any], where: str) -> dict[str, LabelValue]:
        """The label columns named in ``tables``: each a non-empty string (an integer is written out)."""
        labels: dict[str, LabelValue] = {}
        for key in self.options.tables:
            value = row.get(key)
            if value is None:
                raise GgeError(f"{where}: no column '{key}' (named in bench.records.tables)")
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str) or not value:
                raise GgeError(f"{where}: column '{key}' must be a non-empty string, got {_show(value)}")
            labels[key] = value
        return labels


def _show(value: Any) -> str:
    """A value for a message: its repr, cut to 80 characters (a cell may hold a whole image)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _sample_id(value: Any, index: int, where: str) -> str:
    """The row's id: its ``id`` (a non-empty string or an integer), else its 0-based row number."""
    if value is None:
        return str(index)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value:
        return value
    raise GgeError(f"{where}: column 'id' must be a non-empty string or an integer, got {_show(value)}")


def _declared(
    row: Mapping[str, Any], key: str, option: str | None, allowed: Sequence[str], where: str
) -> str | None:
    """A row's ``box_format``/``units``: its own value (agreeing with the option), else the option."""
    value = row.get(key)
    if value is None:
        return option
    if value not in allowed:
        raise GgeError(f"{where}: column '{key}' must be one of {', '.join(allowed)}, got {_show(value)}")
    if option is not None and value != option:
        raise GgeError(
            f"{where}: column '{key}' is {_show(value)}, which contradicts bench.records.{key}={option}"
        )
    return str(value)


def _units_for(units: str | None, column: str, where: str) -> str:
    """The declared units of a bbox/polygon row (an error when none are)."""
    if units is None:
        raise GgeError(
            f"{where}: column '{column}': no units declared (set bench.records.units=pixels|norm_1|norm_1000 "
            "or give the row a 'units' column)"
        )
    return units


def _numbers(value: Any, column: str, where: str) -> list[float]:
    """A list of finite numbers."""
    ok = isinstance(value, (list, tuple)) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not ok:
        raise GgeError(f"{where}: column '{column}' must be a list of numbers, got {_show(value)}")
    return [float(v) for v in value]


def _vertices(value: Any, where: str) -> list[Point]:
    """A polygon's vertices: a flat ``[x1, y1, x2, y2, ...]`` or a list of ``[x, y]`` pairs."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (list, tuple)) for v in value):
        pairs = [_numbers(v, "polygon", where) for v in value]
        if any(len(p) != 2 for p in pairs):
            raise GgeError(f"{where}: column 'polygon': every vertex must be [x, y], got {_show(value)}")
        return [(p[0], p[1]) for p in pairs]
    flat = _numbers(value, "polygon", where)
    if not flat or len(flat) % 2:
        raise GgeError(
            f"{where}: column 'polygon' must hold an even number of coordinates, got {_show(value)}"
        )
    return list(zip(flat[::2], flat[1::2], strict=True))


def _positive_int(value: Any, column: str, where: str) -> int:
    """A positive whole number (``1920`` or ``1920.0``)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value <= 0 or value != int(value):
        raise GgeError(f"{where}: column '{column}' must be a positive whole number, got {_show(value)}")
    return int(value)


# ----------------------------------------------------------------------------------------------
# Reading the three formats into typed rows: (where, {column: value}); a missing value is None.


@dataclass(frozen=True)
class _Embedded:
    """An image embedded in the records file (a parquet ``{bytes, path}`` cell)."""

    ref: str


def _read(path: Path, fmt: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The rows of a records file, each with its ``file:line`` (parquet: ``file:row N``)."""
    if fmt == "jsonl":
        for lineno, value in read_jsonl(path):
            where = f"{path}:{lineno}"
            if not isinstance(value, dict):
                raise GgeError(f"{where}: the line is a JSON {type(value).__name__}, expected an object")
            yield where, value
    elif fmt == "csv":
        yield from _read_csv(path)
    else:
        yield from _read_parquet(path)


CSV_JSON = ("bbox", "polygon")
CSV_NUMBERS = ("width", "height")


def _read_csv(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """CSV rows, each cell typed as JSON would hold it (an empty cell is a missing value).

    ``bbox``/``polygon`` cells are JSON lists, ``width``/``height`` numbers, ``absent`` true/false.
    """
    try:
        f = path.open(encoding="utf-8-sig", newline="")
    except OSError as e:
        raise GgeError(f"{path}: cannot read: {e.strerror or e}") from None
    with f:
        reader = csv.DictReader(f, strict=True)
        try:
            header = reader.fieldnames or []
            for raw in reader:
                where = f"{path}:{reader.line_num}"
                if None in raw or any(v is None for v in raw.values()):
                    n = len(header) + len(raw.get(None) or []) - sum(v is None for v in raw.values())
                    raise GgeError(f"{where}: {n} fields, but the header has {len(header)}")
                yield where, {k: _csv_value(k, v, where) for k, v in raw.items() if v != ""}
        except csv.Error as e:
            raise GgeError(f"{path}:{reader.line_num}: malformed CSV: {e}") from None
        except UnicodeDecodeError as e:
            raise GgeError(f"{path}: not UTF-8 text: {e}") from None


def _csv_value(column: str, text: str, where: str) -> Any:
    """One CSV cell as the value the same row would hold in JSON."""
    if column in CSV_JSON:
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise GgeError(
                f"{where}: column '{column}' must be a JSON list (\"[1, 2, 3, 4]\"), got {_show(text)}"
            ) from None
        return value
    if column in CSV_NUMBERS:
        try:
            return float(text) if "." in text or "e" in text.lower() else int(text)
        except ValueError:
            return text  # the row's check names it
    if column == "absent":
        return {"true": True, "false": False}.get(text.strip().lower(), text)
    return text


def _read_parquet(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Parquet rows; an ``image`` struct cell with bytes is an embedded image."""
    try:
        import pyarrow.compute as pc  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise GgeError(f"{path}: reading parquet needs pyarrow: pip install 'gge[hub]'") from None
    try:
        table = pq.read_table(path, memory_map=True)
    except Exception as e:  # pyarrow's own errors: not a parquet file, truncated...
        raise GgeError(f"{path}: cannot read the parquet file: {e}") from None
    names = [n for n in table.column_names if n != "image"]
    rows = table.select(names).to_pylist() if names else [{} for _ in range(table.num_rows)]
    images = _parquet_images(table, path, pc) if "image" in table.column_names else [None] * len(rows)
    for i, row in enumerate(rows):
        where = f"{path}:row {i}"
        row["image"] = images[i]
        yield where, {k: v for k, v in row.items() if v is not None}


def _parquet_images(table: Any, path: Path, pc: Any) -> list[Any]:
    """The ``image`` column's cells: paths, or references to the images embedded in the file.

    An ``{bytes, path}`` struct with bytes, or a binary cell, is embedded (its bytes stay in the file).
    """
    column = table.column("image")
    kind = column.type
    names = {kind.field(i).name for i in range(kind.num_fields)} if kind.num_fields else set()
    resolved = str(path.resolve())
    if {"bytes", "path"} <= names:
        has_bytes = pc.is_valid(pc.struct_field(column, "bytes")).to_pylist()
        paths = pc.struct_field(column, "path").to_pylist()
        return [
            _embedded(resolved, i, path) if has else p
            for i, (has, p) in enumerate(zip(has_bytes, paths, strict=True))
        ]
    if str(kind) in ("binary", "large_binary"):
        valid = pc.is_valid(column).to_pylist()
        return [_embedded(resolved, i, path) if ok else None for i, ok in enumerate(valid)]
    return list(column.to_pylist())


def _embedded(file: str, row: int, path: Path) -> _Embedded:
    """The reference of the image in row ``row`` of a parquet file (needs the parquet reader)."""
    ref = embedded_ref(file, "parquet", f"{row}/image")
    if split_ref(ref) is None:
        raise GgeError(
            f"{path}:row {row}: column 'image': images embedded in parquet cannot be read by this gge"
        )
    return _Embedded(ref)
