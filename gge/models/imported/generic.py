"""``gge import generic``: any per-sample table, its columns declared (``--columns``).

A JSONL file (one object per line), a JSON list of objects, or a CSV/TSV file (by its extension,
with a header row) whose columns the user names, as ``field=column`` pairs:

- ``id``: the sample id; ``image``: the screenshot's path or file name; ``instruction``: its text
  (``id`` or both ``image`` and ``instruction`` are needed to match a line);
- ``point`` (``[x, y]`` in original pixels, JSON), or ``x`` and ``y``; ``raw``: the model's text
  (read with ``--preset``/``--convention`` where the table has no point);
- ``correct``: the table's own verdict (true/false, 1/0, correct/wrong); ``box``: its target,
  ``[x1, y1, x2, y2]`` pixels (JSON).

Example:
    >>> parse_columns("id=sample_id,point=pred,correct=ok")
    {'id': 'sample_id', 'point': 'pred', 'correct': 'ok'}
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gge.errors import GgeError
from gge.models.imported.formats import read_log_text
from gge.models.imported.lines import LogLine

FIELDS = ("id", "image", "instruction", "point", "x", "y", "raw", "correct", "box")
"""The fields a column can be declared for."""

_TRUE = {"true", "1", "correct", "yes"}
_FALSE = {"false", "0", "wrong", "incorrect", "no", "wrong_format"}


def parse_columns(spec: str) -> dict[str, str]:
    """``field=column,...`` as a mapping, checked.

    Args:
        spec: The ``--columns`` value.

    Returns:
        Field -> column name.

    Raises:
        GgeError: An unknown field, a pair without ``=``, or columns too few to match a line or to
            give it a point.
    """
    out: dict[str, str] = {}
    for pair in (p.strip() for p in spec.split(",") if p.strip()):
        field, sep, column = pair.partition("=")
        if not sep or not column.strip():
            raise GgeError(f"--columns: {pair!r} is not field=column")
        if field.strip() not in FIELDS:
            raise GgeError(f"--columns: unknown field {field.strip()!r}; known: {', '.join(FIELDS)}")
        out[field.strip()] = column.strip()
    if "id" not in out and not ("image" in out and "instruction" in out):
        raise GgeError("--columns: name id=..., or both image=... and instruction=..., to match lines")
    if ("x" in out) != ("y" in out):
        given, lacking = ("x", "y") if "x" in out else ("y", "x")
        raise GgeError(
            f"--columns: {given}={out[given]} without {lacking}=...: name both coordinates' columns"
        )
    if not ({"point", "raw"} & set(out) or {"x", "y"} <= set(out)):
        raise GgeError("--columns: name point=..., or x=... and y=..., or raw=... (read with --preset)")
    return out


def table_rows(path: Path) -> list[tuple[int, Mapping[str, Any]]]:
    """A table's rows with the line each ends on: CSV/TSV by extension, else JSON lines or a JSON list."""
    text = read_log_text(path, "utf-8-sig")
    if path.suffix.lower() in (".csv", ".tsv"):
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # a raw answer or an image may be long
        reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
        rows: list[tuple[int, Mapping[str, Any]]] = []
        try:
            for record in reader:
                rows.append((reader.line_num, record))  # the line the row ends on (the header is line 1)
        except csv.Error as e:
            raise GgeError(f"{path}:{reader.line_num}: not a {path.suffix[1:].upper()} row: {e}") from None
        return rows
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as e:
        if text.lstrip().startswith("["):  # a JSON list that does not parse: say where
            raise GgeError(f"{path}:{e.lineno}: not JSON: {e.msg}") from None
        whole = None
    if isinstance(whole, list):
        rows = list(enumerate(whole, start=1))
    elif isinstance(whole, dict):
        rows = [(1, whole)]
    else:
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise GgeError(f"{path}:{n}: not a JSON line: {e.msg}") from None
    for n, row in rows:
        if not isinstance(row, dict):
            raise GgeError(f"{path}:{n}: a row must be a JSON object, got {row!r:.60}")
    return rows


def _value(row: Mapping[str, Any], columns: Mapping[str, str], field: str, where: str) -> Any:
    column = columns.get(field)
    if column is None:
        return None
    if column not in row:
        raise GgeError(f"{where}: no column {column!r} (declared as {field}={column})")
    value = row[column]
    return None if value == "" else value


def _json(value: Any, column: str, where: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise GgeError(f"{where}: {column} is not JSON: {value!r:.60}") from None
    return value


def _number(value: Any, column: str, where: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise GgeError(f"{where}: {column} must be a number, got {value!r:.40}") from None
    if not math.isfinite(number):
        raise GgeError(f"{where}: {column} must be finite, got {value!r:.40}")
    return number


def _numbers(value: Any, n: int | None, column: str, where: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    value = _json(value, column, where)
    if value is None:
        return None
    if not isinstance(value, list) or (n is not None and len(value) != n) or len(value) < 2:
        raise GgeError(f"{where}: {column} must be a list of {n or 'at least 4'} numbers, got {value!r:.60}")
    return tuple(_number(v, column, where) for v in value)


def _verdict(value: Any, column: str, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):  # a spreadsheet's 1 / 1.0 / 0.0
        return bool(value)
    if isinstance(value, str) and value.strip() in ("1.0", "0.0"):  # pandas writes a float column so
        return value.strip() == "1.0"
    word = str(value).strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise GgeError(f"{where}: {column} must be true/false, 1/0 or correct/wrong, got {value!r:.40}")


def read_generic(path: Path, columns: Mapping[str, str]) -> list[LogLine]:
    """A table whose columns are declared (module docstring).

    Args:
        path: A ``.jsonl``/``.json`` file of objects, or a ``.csv``/``.tsv`` file with a header.
        columns: Field -> column (:func:`parse_columns`).

    Returns:
        Its rows as lines, in file order.

    Raises:
        GgeError: naming the file, the line and the column at fault.
    """
    out = []
    for n, row in table_rows(path):
        where = f"{path}:{n}"

        def get(field: str, row: Mapping[str, Any] = row, where: str = where) -> Any:
            return _value(row, columns, field, where)

        point = _numbers(get("point"), 2, columns.get("point", ""), where)
        if point is None and get("x") is not None and get("y") is not None:
            point = (_number(get("x"), columns["x"], where), _number(get("y"), columns["y"], where))
        box = _numbers(get("box"), None, columns.get("box", ""), where)
        if box is not None and len(box) < 4:
            raise GgeError(f"{where}: {columns['box']} must hold at least 4 numbers, got {list(box)}")
        ident, image, instruction, raw = get("id"), get("image"), get("instruction"), get("raw")
        out.append(
            LogLine(
                where=where,
                line=n,
                id=None if ident is None else str(ident),
                image=None if image is None else str(image),
                instruction=None if instruction is None else str(instruction),
                box=box,
                point=None if point is None else (point[0], point[1]),
                raw="" if raw is None else (raw if isinstance(raw, str) else json.dumps(raw)),
                correct=_verdict(get("correct"), columns.get("correct", ""), where),
                format_error=point is None and "raw" not in columns,
                fields={"needs_reading": True} if "point" not in columns and "x" not in columns else {},
            )
        )
    return out
