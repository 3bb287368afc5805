"""Reading a Hub copy's files into rows: parquet tables (pyarrow) and VLMEvalKit TSVs, images left embedded.

A :class:`CopyRow` holds one row's plain columns and an image *reference*
(:func:`gge.benchmarks.images.embedded_ref`) with the size read from the embedded image's header: the
pixels stay in the file and are decoded by the data workers. A parquet copy's image column is an
HF datasets ``Image`` struct ``{bytes, path}`` or a plain binary column. A VLMEvalKit TSV's ``image``
cell is base64, or (at most 64 characters) the ``index`` of another row whose cell holds the image,
which VLMEvalKit resolves the same way (``ImageBaseDataset``: ``len(image) <= 64`` is an index).

Example:
    >>> header_size(b"not an image") == UNKNOWN_SIZE
    True
"""

from __future__ import annotations

import base64
import binascii
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from gge.benchmarks.base import UNKNOWN_SIZE
from gge.benchmarks.images import (
    cell_image_bytes,
    embedded_ref,
    open_binary,
    parse_tsv_record,
    require_pyarrow,
    tsv_record_lines,
)
from gge.errors import GgeError, TransientError

TSV_INDEX_LENGTH = 64
"""A TSV ``image`` cell this long or shorter is the ``index`` of the row holding the image (VLMEvalKit)."""

HEADER_BASE64 = 1 << 16
"""Base64 characters decoded to read an image's header (the whole cell when the header lies further)."""


@dataclass(frozen=True)
class CopyRow:
    """One row of a copy file.

    Attributes:
        file: The copy file.
        row: The 0-based row in that file (data rows; a TSV's header is not counted).
        values: The row's other columns (parquet: pyarrow's Python values; TSV: strings).
        image: The embedded image's reference.
        size: The image's (width, height) from its header, or ``UNKNOWN_SIZE`` when unreadable.
        line: A TSV row's physical line in its file (1-based, the header is line 1; a quoted cell
            may hold newlines, so a record can span lines); None for parquet.
    """

    file: Path
    row: int
    values: dict[str, Any]
    image: str
    size: tuple[int, int]
    line: int | None = None

    @property
    def where(self) -> str:
        """``<file>:<line>`` (TSV) or ``<file>: row <n>`` (parquet), the start of a row's messages."""
        return f"{self.file}:{self.line}" if self.line is not None else f"{self.file}: row {self.row}"

    @property
    def origin(self) -> str:
        """``<file name>:<line>`` or ``<file name> row <n>``, for the load summary."""
        return (
            f"{self.file.name}:{self.line}" if self.line is not None else f"{self.file.name} row {self.row}"
        )


def header_size(data: bytes) -> tuple[int, int]:
    """An encoded image's (width, height) from its header, ``UNKNOWN_SIZE`` when unreadable.

    Args:
        data: The image bytes (a prefix holding the header is enough).

    Returns:
        The size.
    """
    try:
        with Image.open(io.BytesIO(data)) as im:
            return int(im.size[0]), int(im.size[1])
    except (OSError, ValueError, SyntaxError):
        return UNKNOWN_SIZE


def base64_header_size(cell: str) -> tuple[int, int]:
    """The size of a base64-encoded image, decoding only a prefix when its header lies there.

    Args:
        cell: The base64 text.

    Returns:
        The size, or ``UNKNOWN_SIZE``.
    """
    for chars in (HEADER_BASE64, len(cell)):
        prefix = cell[: chars - chars % 4] if chars < len(cell) else cell
        try:
            size = header_size(base64.b64decode(prefix, validate=True))
        except (binascii.Error, ValueError):
            return UNKNOWN_SIZE
        if size != UNKNOWN_SIZE or chars >= len(cell):
            return size
    return UNKNOWN_SIZE


# ----------------------------------------------------------------------------------------------
# Parquet


def parquet_columns(path: Path) -> list[str]:
    """The column names of a parquet file (its schema only).

    Args:
        path: The file.

    Returns:
        The names.
    """
    pq = require_pyarrow()
    try:
        return list(pq.read_schema(path).names)
    except OSError as e:
        raise TransientError(f"{path}: cannot read: {e}") from None
    except Exception as e:  # pyarrow's ArrowInvalid: not a parquet file
        raise GgeError(f"{path}: not a parquet file: {e}") from None


def read_parquet_rows(path: Path, columns: list[str], image_column: str) -> list[CopyRow]:
    """Every row of a parquet copy: ``columns`` as values, the image as a reference and its size.

    Each image's size is read from its header (one pass over the image column, a row group at a
    time), also when the copy has a size column: the two are compared (a copy's downscaled images
    must not pass for the release's).

    Args:
        path: The file.
        columns: The plain columns to read.
        image_column: The image column.

    Returns:
        The rows in file order.
    """
    pq = require_pyarrow()
    try:
        table = pq.read_table(path, columns=columns)
        n = table.num_rows
        values = {c: table.column(c).to_pylist() for c in columns}
        found = sizes_of(path, image_column)
    except OSError as e:
        raise TransientError(f"{path}: cannot read: {e}") from None
    except Exception as e:  # pyarrow's ArrowInvalid / KeyError on a bad schema
        raise GgeError(f"{path}: cannot read columns {[*columns, image_column]}: {e}") from None
    file = str(path.resolve())
    return [
        CopyRow(
            path,
            i,
            {c: values[c][i] for c in columns},
            embedded_ref(file, "parquet", f"{i}/{image_column}"),
            found[i],
        )
        for i in range(n)
    ]


def sizes_of(path: Path, image_column: str) -> list[tuple[int, int]]:
    """Each row's image size from the image headers, reading the image column a row group at a time."""
    pq = require_pyarrow()
    out: list[tuple[int, int]] = []
    with open_binary(str(path)) as f:
        pf = pq.ParquetFile(f)
        for group in range(pf.metadata.num_row_groups):
            column = pf.read_row_group(group, columns=[image_column]).column(0)
            for cell in column.to_pylist():
                try:
                    out.append(header_size(cell_image_bytes(cell)))
                except OSError:
                    out.append(UNKNOWN_SIZE)
    return out


# ----------------------------------------------------------------------------------------------
# TSV


def tsv_columns(path: Path) -> list[str]:
    """The header of a TSV file.

    Args:
        path: The file.

    Returns:
        The column names.
    """
    with _open(path) as f:
        first = next(tsv_record_lines(f), None)
    if first is None:
        raise GgeError(f"{path}: empty file (expected a header row)")
    return _cells(path, first[1], 1)


def read_tsv_rows(path: Path, image_column: str = "image") -> tuple[list[CopyRow], list[str]]:
    """Every row of a VLMEvalKit TSV: the other columns as strings, the image as a reference.

    A short ``image`` cell (at most 64 characters) is resolved to the row whose ``index`` it names; an
    empty one (VLMEvalKit drops such rows) drops the row, with a note. Messages name a row by its
    physical line in the file (a record whose quoted cells hold newlines spans several).

    Args:
        path: The file.
        image_column: The base64 column.

    Returns:
        The rows in file order, and notes.
    """
    rows: list[CopyRow] = []
    notes: list[str] = []
    pending: list[tuple[int, int, dict[str, str], str]] = []  # (row, line, values, index it names)
    by_index: dict[str, tuple[str, tuple[int, int]]] = {}
    file = str(path.resolve())
    with _open(path) as f:
        records = tsv_record_lines(f)
        head = next(records, None)
        if head is None:
            raise GgeError(f"{path}: empty file (expected a header row)")
        header = _cells(path, head[1], 1)
        if image_column not in header:
            raise GgeError(f"{path}: no '{image_column}' column (header: {', '.join(header)})")
        col = header.index(image_column)
        next_line = 1 + head[1].count(b"\n")
        for offset, raw in records:
            line, next_line = next_line, next_line + raw.count(b"\n")
            if not raw.strip():
                continue
            cells = _cells(path, raw, line)
            if len(cells) != len(header):
                raise GgeError(f"{path}:{line}: {len(cells)} cells, the header has {len(header)}")
            values = {k: v for k, v in zip(header, cells, strict=True) if k != image_column}
            cell = cells[col]
            n = len(rows) + len(pending)
            if not cell:
                notes.append(f"{path.name}:{line}: empty image cell: row dropped (as VLMEvalKit does)")
                continue
            if len(cell) <= TSV_INDEX_LENGTH:
                pending.append((n, line, values, cell))
                continue
            ref, size = embedded_ref(file, "tsv", f"{offset}/{col}"), base64_header_size(cell)
            if "index" in values:
                by_index[values["index"]] = (ref, size)
            rows.append(CopyRow(path, n, values, ref, size, line))
    for n, line, values, target in pending:
        if target not in by_index:
            raise GgeError(f"{path}:{line}: image cell '{target}' names no row whose 'index' holds an image")
        ref, size = by_index[target]
        rows.append(CopyRow(path, n, values, ref, size, line))
    rows.sort(key=lambda r: r.row)
    return rows, notes


def _open(path: Path) -> Any:
    try:
        return open_binary(str(path))
    except OSError as e:
        raise TransientError(f"{path}: cannot read: {e.strerror or e}") from None


def _cells(path: Path, raw: bytes, line: int) -> list[str]:
    try:
        return parse_tsv_record(raw)
    except UnicodeDecodeError as e:
        raise GgeError(f"{path}:{line}: not UTF-8 text: {e}") from None


# ----------------------------------------------------------------------------------------------

ColumnReader = Callable[[Path], list[str]]
COLUMN_READERS: dict[str, ColumnReader] = {"parquet": parquet_columns, "tsv": tsv_columns}
"""How to read the columns of each kind of copy file."""

SUFFIXES: dict[str, str] = {".parquet": "parquet", ".tsv": "tsv"}
"""File suffix -> copy kind."""


def copy_files(root: Path) -> dict[str, list[Path]]:
    """The copy files in a folder (recursively: a Hub snapshot keeps them under ``data/``), by kind.

    Args:
        root: The folder.

    Returns:
        ``{kind: sorted paths}`` for the kinds found.
    """
    out: dict[str, list[Path]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            kind = SUFFIXES.get(os.path.splitext(name)[1].lower())
            if kind is not None:
                out.setdefault(kind, []).append(Path(dirpath) / name)
    return {kind: sorted(paths) for kind, paths in out.items()}
