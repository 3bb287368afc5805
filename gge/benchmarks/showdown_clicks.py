"""showdown-clicks, dev split: one CSV of clicks on recorded frames; headline = micro with a bootstrap CI.

Layout (FORMATS.md, section 8)::

    showdown-clicks/                                   # the root (the dev folder itself is accepted too)
      showdown-clicks-dev/data.csv
      showdown-clicks-dev/frames/<recording>/<n>.webp  # a row's ``image`` is relative to showdown-clicks-dev/

``data.csv`` is read by header name (the column order is not certain): ``id`` (16 hex characters, the
sample id), ``image``, ``instruction``, ``x1, y1, x2, y2`` (integer pixel corners), ``width``,
``height`` (the frame size, taken as the image size and checked against nothing else) and, when the
header has it, ``recording_id`` (a label; ``unknown`` on every sample when the column is absent). A
header naming a column twice is refused (csv.DictReader would silently keep the last one). Every
malformed row is refused, naming ``data.csv:<line>`` and the column. The headline is hits / rows with a
95% percentile bootstrap interval (9999 resamples; gge seeds it).

The hit test takes the point's integer pixel (``Box(integer_point=True)``: ``int()``, truncation toward
zero), then ``x1 <= x <= x2 and y1 <= y <= y2``. Read in the official code (generalagents/showdown @
``86cbd20d``): ``clicks/src/clicks/evaluate/utils.py`` ``is_point_in_bbox`` takes ``Optional[int]``
points, and every prediction reaches it through pydantic int fields (``ParsedPrediction.pred_x``,
``Coordinate.x`` in ``evaluate/models.py``, pydantic 2.10.6 in uv.lock, which refuses a float with a
fraction rather than truncating it). So the scorer only ever tests an int; each model client makes it:
``int()`` (truncation) in the gemini (``int(x / 1000 * width)``), molmo and omniparser clients and on
qwen's raw coordinate; ``round()`` in the ui_tars client and qwen's rescaling to the frame; ace,
claude, openai (a tool schema of type integer) and openai_cua answer ints already. gge's point is the
model's answer mapped to frame pixels (a float): gge applies ``int()``, the scorer-side conversion most
clients use and the pixel a positive point lies in; for a client that rounds, a point within half a
pixel outside an edge can differ.

Example:
    >>> ShowdownClicks().headline_ci.resamples
    9999
    >>> Box(0, 0, 100, 10, integer_point=True).contains(100.6, 5)  # int(100.6) = 100 <= x2
    True
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from pathlib import Path

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    BootstrapCI,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    require_root,
    resolve_image,
)
from gge.benchmarks.hosts import Host
from gge.errors import GgeError, TransientError
from gge.types import Box, LabelValue, Sample

DEV_FOLDER = "showdown-clicks-dev"
DATA_FILE = "data.csv"
REQUIRED = ("id", "image", "instruction", "x1", "y1", "x2", "y2", "width", "height")
"""Columns every row must fill (``recording_id`` is optional)."""
RECORDING = "recording_id"
UNKNOWN = "unknown"
FRAME_SIZES = ("1280x800", "1440x900", "1470x956")
_ID = re.compile(r"[0-9a-fA-F]{16}")
_INT = re.compile(r"[+-]?\d+")


def dev_folder(root: Path) -> Path:
    """The folder holding ``data.csv``: ``root/showdown-clicks-dev``, else ``root`` itself.

    Args:
        root: The benchmark folder (or the dev folder).

    Returns:
        The dev folder.
    """
    nested = root / DEV_FOLDER
    if (nested / DATA_FILE).is_file() or not (root / DATA_FILE).is_file():
        return nested
    return root


def _int_cell(row: Mapping[str, str | None], column: str, where: str) -> int:
    """An integer cell (digits with an optional sign); anything else raises naming the column."""
    value = (row.get(column) or "").strip()
    if not _INT.fullmatch(value):
        raise GgeError(f"{where}: column '{column}' must be an integer, got {row.get(column)!r}")
    return int(value)


def _text_cell(row: Mapping[str, str | None], column: str, where: str) -> str:
    """A non-empty text cell; an empty or missing one raises naming the column."""
    value = row.get(column)
    if value is None or not value.strip():
        raise GgeError(f"{where}: column '{column}' is empty")
    return value


class ShowdownClicks(Benchmark):
    """showdown-clicks (dev): 557 clicks on 488 recordings of macOS desktop use."""

    name = "showdown_clicks"
    title = "showdown-clicks (dev)"
    directory = "showdown_clicks"
    host = Host(
        "hub",
        "generalagents/showdown-clicks",
        None,
        "",
        ("showdown-clicks-dev/data.csv", "showdown-clicks-dev/frames/*"),
        licence="MIT (GitHub)",
    )
    label_keys = ("frame_size", RECORDING)
    headline_ci = BootstrapCI()
    tables = (TableSpec("By frame size", rows="frame_size", row_order=FRAME_SIZES),)

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read ``data.csv`` by header name (see the module docstring).

        Args:
            root: The benchmark folder, or the ``showdown-clicks-dev`` folder itself.
            options: Common options (none specific).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        folder = dev_folder(root)
        path = folder / DATA_FILE
        if not path.is_file():
            raise GgeError(f"{self.name}: annotation file not found: {path} (or {root / DATA_FILE})")
        out = LoadCollector(self.name, root)
        where_file = str(out.file(path))
        try:
            with path.open(encoding="utf-8-sig", newline="") as f:
                reader = csv.DictReader(f)
                header = reader.fieldnames or []
                twice = sorted({c for c in header if header.count(c) > 1})
                if twice:
                    raise GgeError(
                        f"{where_file}:1: header names column {', '.join(repr(c) for c in twice)} more "
                        "than once (which one holds the value is not known)"
                    )
                missing = [c for c in REQUIRED if c not in header]
                if missing:
                    raise GgeError(
                        f"{where_file}:1: header has no column {', '.join(repr(c) for c in missing)} "
                        f"(columns: {', '.join(header) or 'none'})"
                    )
                has_recording = RECORDING in header
                start = reader.line_num + 1
                for row in reader:
                    where = f"{where_file}:{start}"
                    start = reader.line_num + 1
                    out.add(self._sample(folder, row, has_recording, where), where)
        except csv.Error as e:
            raise GgeError(f"{where_file}:{reader.line_num}: malformed CSV: {e}") from None
        except UnicodeDecodeError as e:
            raise GgeError(f"{where_file}: not UTF-8 text: {e}") from None
        except OSError as e:
            raise TransientError(f"{where_file}: cannot read: {e.strerror or e}") from None
        if not has_recording:
            out.notes.append(f"{DATA_FILE} has no '{RECORDING}' column: label '{UNKNOWN}' on every sample")
        return out.result()

    def _sample(self, folder: Path, row: dict[str, str | None], has_recording: bool, where: str) -> Sample:
        """One row as a sample; a malformed cell raises naming the line and column."""
        if None in row:
            raise GgeError(f"{where}: more cells than the header has columns: {row[None]!r}")  # type: ignore[index]
        for column in REQUIRED:
            if row.get(column) is None:
                raise GgeError(f"{where}: column '{column}' is missing (fewer cells than the header)")
        sid = _text_cell(row, "id", where).strip()
        if not _ID.fullmatch(sid):
            raise GgeError(f"{where}: column 'id' must be 16 hexadecimal characters, got {row['id']!r}")
        width, height = _int_cell(row, "width", where), _int_cell(row, "height", where)
        for column, value in (("width", width), ("height", height)):
            if value <= 0:
                raise GgeError(f"{where}: column '{column}' must be a positive integer, got {value}")
        x1, y1, x2, y2 = (_int_cell(row, c, where) for c in ("x1", "y1", "x2", "y2"))
        labels: dict[str, LabelValue] = {"frame_size": f"{width}x{height}", RECORDING: UNKNOWN}
        if has_recording:
            labels[RECORDING] = _text_cell(row, RECORDING, where).strip()
        image = resolve_image(folder, _text_cell(row, "image", where).strip(), where=where, sample_id=sid)
        return Sample(
            benchmark=self.name,
            id=sid,
            image_path=image,
            image_size=(width, height),
            instruction=_text_cell(row, "instruction", where),
            region=Box(x1, y1, x2, y2, integer_point=True),
            labels=labels,
        )
