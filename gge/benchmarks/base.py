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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from PIL import Image

from gge.errors import GgeError
from gge.types import Sample


@dataclass
class BenchmarkOptions:
    """Options every benchmark accepts (``bench.<name>.<option>=...`` on the command line).

    Attributes:
        root: The folder the user unpacked the benchmark into; default ``<data_root>/<directory>``.
    """

    root: str | None = None


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
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise GgeError(f"{path}: line {e.lineno}, column {e.colno}: malformed JSON: {e.msg}") from None
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
    """The absolute path of a record's image, which must exist and stay inside ``root``.

    The check is lexical (``..`` and absolute paths are rejected), so a root whose image folder
    is a symbolic link to another disk still works.

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
    if not os.path.isfile(full):
        raise GgeError(f"{where}: record {sample_id}: image not found: {full}")
    return full


def image_size_from_header(path: str, *, where: str, sample_id: str) -> tuple[int, int]:
    """Width and height read from the image header, without decoding the pixels.

    Args:
        path: The image file.
        where: The file (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        (width, height).
    """
    try:
        with Image.open(path) as im:
            return int(im.size[0]), int(im.size[1])
    except (OSError, ValueError) as e:
        raise GgeError(f"{where}: record {sample_id}: cannot read image header of {path}: {e}") from None
