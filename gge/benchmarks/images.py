"""Where a sample's screenshot is, and the one way gge opens it.

A :class:`~gge.types.Sample`'s ``image_path`` is an *image reference*: a plain file path (the release
layouts), or an image embedded in a Hub copy's file (a parquet cell of image bytes, a TSV cell of
base64), written ``<file>::<kind>:<locator>``. Every reader of a screenshot (the data workers, the
policies, the exports, the loggers, the galleries) opens it through :func:`open_image` or
:func:`image_bytes`, so an embedded image is decoded only where and when it is needed (in the data
workers), never extracted to disk.

Two kinds are registered here: ``parquet`` (locator ``<row>/<column>``: an HF datasets ``Image`` struct
or a plain binary cell; the file is opened once per process and only the row group holding the row is
read) and ``tsv`` (locator ``<offset>/<column>``: the byte offset of a VLMEvalKit TSV record and the
index of its base64 image cell; the reader seeks there and decodes that one cell).

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "s.png")
    >>> Image.new("RGB", (40, 10)).save(path)
    >>> with open_image(path) as im:
    ...     im.size
    (40, 10)
    >>> image_exists(path), image_exists(path + ".missing"), image_name(path)
    (True, False, 's.png')
"""

from __future__ import annotations

import base64
import binascii
import bisect
import csv
import io
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import IO, Any

from PIL import Image

from gge.errors import GgeError
from gge.types import Sample

EMBEDDED = "::"
"""Separates an embedded image's file from its ``<kind>:<locator>``."""

EmbeddedReader = Callable[[str, str], bytes]
"""Reads the bytes of the image at ``locator`` inside ``file``: ``reader(file, locator)``."""

_READERS: dict[str, EmbeddedReader] = {}


def register_reader(kind: str, reader: EmbeddedReader) -> None:
    """Register how images embedded in one kind of file are read.

    Args:
        kind: The ``<kind>`` of ``<file>::<kind>:<locator>`` references.
        reader: ``reader(file, locator) -> bytes``; raises OSError when the image cannot be read.
    """
    _READERS[kind] = reader


def embedded_ref(file: str, kind: str, locator: str) -> str:
    """The reference of an image embedded in ``file``.

    Args:
        file: The file holding the image (absolute path).
        kind: Its kind (a registered reader).
        locator: Where in the file (the reader's own format).

    Returns:
        ``<file>::<kind>:<locator>``.

    Example:
        >>> embedded_ref("/d/test.parquet", "parquet", "3/image")
        '/d/test.parquet::parquet:3/image'
    """
    return f"{file}{EMBEDDED}{kind}:{locator}"


def split_ref(ref: str) -> tuple[str, str, str] | None:
    """``(file, kind, locator)`` of an embedded reference, None for a plain path.

    Args:
        ref: An image reference.

    Returns:
        The parts, or None.
    """
    file, sep, rest = ref.rpartition(EMBEDDED)
    if not sep or ":" not in rest:
        return None
    kind, _, locator = rest.partition(":")
    if kind not in _READERS:
        return None
    return file, kind, locator


def image_bytes(ref: str) -> bytes:
    """The encoded bytes of the screenshot at ``ref`` (a file's contents, or the embedded image).

    Args:
        ref: An image reference.

    Returns:
        The bytes.

    Raises:
        OSError: The image cannot be read.
    """
    parts = split_ref(ref)
    if parts is None:
        with open(ref, "rb") as f:
            return f.read()
    file, kind, locator = parts
    return _READERS[kind](file, locator)


def open_image(ref: str) -> Image.Image:
    """Open the screenshot at ``ref`` (lazily: PIL reads the header now, the pixels on ``load()``).

    Args:
        ref: An image reference.

    Returns:
        The PIL image (usable as a context manager).

    Raises:
        OSError: The image cannot be read (PIL's ``UnidentifiedImageError`` is one).
    """
    if split_ref(ref) is None:
        return Image.open(ref)
    return Image.open(io.BytesIO(image_bytes(ref)))


def image_exists(ref: str) -> bool:
    """Whether the screenshot at ``ref`` exists (for an embedded image: whether its file does).

    Args:
        ref: An image reference.

    Returns:
        True when the file is there.
    """
    parts = split_ref(ref)
    return os.path.isfile(ref if parts is None else parts[0])


def image_name(ref: str) -> str:
    """A short name of the screenshot: the file name, with the locator of an embedded image.

    Args:
        ref: An image reference.

    Returns:
        The name (used in the resume fingerprint's digest and in messages).

    Example:
        >>> image_name("/d/test.parquet::parquet:3/image")
        'test.parquet::parquet:3/image'
    """
    parts = split_ref(ref)
    if parts is None:
        return os.path.basename(ref)
    file, kind, locator = parts
    return f"{os.path.basename(file)}{EMBEDDED}{kind}:{locator}"


# ----------------------------------------------------------------------------------------------
# Embedded readers: parquet cells (pyarrow) and VLMEvalKit TSV cells (base64).

HUB_EXTRA = "pip install 'gge[hub]'"
"""What to install for the parquet reader."""


def require_pyarrow() -> Any:
    """``pyarrow.parquet``, or a one-line GgeError saying what to install.

    Returns:
        The module.
    """
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        from gge.errors import GgeError

        raise GgeError(f"reading parquet files needs pyarrow: {HUB_EXTRA}") from None
    return pq


def open_binary(path: str) -> IO[bytes]:
    """Open a file for reading bytes (one place, so a test can count what a reader reads).

    Args:
        path: The file.

    Returns:
        The open file.
    """
    return open(path, "rb")


class _ParquetHandle:
    """One parquet file opened once per process: its row-group starts and the last row group read."""

    def __init__(self, path: str) -> None:
        pq = require_pyarrow()
        self.file = pq.ParquetFile(open_binary(path))
        starts, n = [], 0
        for i in range(self.file.metadata.num_row_groups):
            starts.append(n)
            n += self.file.metadata.row_group(i).num_rows
        self.starts, self.rows = starts, n
        self.last: tuple[int, str, Any] | None = None
        self.lock = threading.Lock()

    def cell(self, row: int, column: str) -> Any:
        """The value at ``row`` of ``column``, reading only the row group that holds it."""
        if not 0 <= row < self.rows:
            raise OSError(f"row {row} is not in the file ({self.rows} rows)")
        group = bisect.bisect_right(self.starts, row) - 1
        with self.lock:  # the windowed run's sample threads share one handle: one read at a time
            last = self.last
            if last is None or last[:2] != (group, column):
                if column not in self.file.schema_arrow.names:
                    raise OSError(f"no column '{column}'")
                table = self.file.read_row_group(group, columns=[column])
                last = self.last = (group, column, table.column(0))
            return last[2][row - self.starts[group]].as_py()


_PARQUET: dict[tuple[int, str], _ParquetHandle] = {}


def _parquet_handle(path: str) -> _ParquetHandle:
    """The process's handle of ``path`` (keyed by process id: a forked worker opens its own)."""
    key = (os.getpid(), os.path.abspath(path))
    handle = _PARQUET.get(key)
    if handle is None:
        handle = _PARQUET[key] = _ParquetHandle(path)
    return handle


def cell_image_bytes(value: Any) -> bytes:
    """The image bytes of a parquet cell: an HF datasets ``Image`` struct ``{bytes, path}`` or plain bytes.

    Args:
        value: The cell, as pyarrow gives it (``as_py()``).

    Returns:
        The encoded image.

    Raises:
        OSError: The cell holds no bytes (an ``Image`` whose bytes were not embedded, or a null).

    Example:
        >>> cell_image_bytes({"bytes": b"PNG", "path": "a.png"})
        b'PNG'
    """
    if isinstance(value, dict):
        data = value.get("bytes")
        if isinstance(data, bytes) and data:
            return data
        raise OSError(f"the image cell holds no bytes (path {value.get('path')!r}: not embedded)")
    if isinstance(value, bytes) and value:
        return value
    raise OSError(f"the image cell is {type(value).__name__}, not image bytes")


def read_parquet_image(file: str, locator: str) -> bytes:
    """The image at ``<row>/<column>`` of a parquet file (reads one row group, cached per process).

    Args:
        file: The parquet file.
        locator: ``<row>/<column>``: the 0-based row in the file and the image column.

    Returns:
        The encoded image.

    Raises:
        OSError: The row, column or bytes are not there.
    """
    row, _, column = locator.partition("/")
    if not row.isdigit() or not column:
        raise OSError(f"{file}: bad parquet image locator {locator!r} (expected <row>/<column>)")
    try:
        return cell_image_bytes(_parquet_handle(file).cell(int(row), column))
    except OSError as e:
        raise OSError(f"{file}: row {row}, column {column}: {e}") from None


@lru_cache(maxsize=1)
def raise_csv_field_limit() -> None:
    """Let the csv module read cells of any size (a base64 screenshot is megabytes, the limit 128 KiB).

    Once per process (every TSV image read asks for it).
    """
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 10


def tsv_record_lines(f: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(byte offset, raw bytes)`` of each record of a TSV file from the current position.

    A record ends at a newline outside quotes (a quoted cell may hold newlines; ``""`` is a quote).

    Args:
        f: The file, opened in binary mode.

    Yields:
        The offset where the record starts and its bytes (with the line ending).
    """
    start = f.tell()
    pending: list[bytes] = []
    quotes = 0
    for line in iter(f.readline, b""):
        pending.append(line)
        quotes += line.count(b'"')
        if quotes % 2 == 0:
            record = b"".join(pending)
            yield start, record
            start += len(record)
            pending, quotes = [], 0
    if pending:
        yield start, b"".join(pending)


def parse_tsv_record(raw: bytes) -> list[str]:
    r"""The cells of one TSV record (tab-separated, csv quoting).

    Args:
        raw: The record's bytes.

    Returns:
        The cells.

    Raises:
        UnicodeDecodeError: The record is not UTF-8.

    Example:
        >>> parse_tsv_record(b'1\t"a\tb"\tc\n')
        ['1', 'a\tb', 'c']
    """
    raise_csv_field_limit()
    text = raw.decode("utf-8").rstrip("\r\n")
    return next(csv.reader(io.StringIO(text, newline=""), delimiter="\t"), [])


def decode_base64(cell: str) -> bytes:
    """The bytes of a base64 cell (raises OSError, as an unreadable image does, when it is not base64).

    Args:
        cell: The cell.

    Returns:
        The decoded bytes.
    """
    try:
        return base64.b64decode(cell, validate=True)
    except (binascii.Error, ValueError) as e:
        raise OSError(f"not base64: {e}") from None


def read_tsv_image(file: str, locator: str) -> bytes:
    """The base64 image at ``<offset>/<column>`` of a TSV file (seeks to the record, decodes one cell).

    Args:
        file: The TSV file.
        locator: ``<offset>/<column>``: the byte offset where the record starts and the 0-based index
            of the image column.

    Returns:
        The encoded image.

    Raises:
        OSError: The record or cell is not there.
    """
    offset, _, column = locator.partition("/")
    if not offset.isdigit() or not column.isdigit():
        raise OSError(f"{file}: bad tsv image locator {locator!r} (expected <offset>/<column>)")
    with open_binary(file) as f:
        f.seek(int(offset))
        raw = next(tsv_record_lines(f), (0, b""))[1]
    try:
        cells = parse_tsv_record(raw)
    except UnicodeDecodeError as e:
        raise OSError(f"{file}: byte {offset}: not UTF-8: {e}") from None
    if int(column) >= len(cells):
        raise OSError(f"{file}: byte {offset}: the record has no column {column}")
    try:
        return decode_base64(cells[int(column)])
    except OSError as e:
        raise OSError(f"{file}: byte {offset}, column {column}: {e}") from None


register_reader("parquet", read_parquet_image)
register_reader("tsv", read_tsv_image)


def _fit_area(size: tuple[int, int], max_pixels: int) -> tuple[int, int]:
    """The largest size with the same aspect ratio and at most ``max_pixels`` pixels (never larger)."""
    w, h = size
    if w * h <= max_pixels:
        return w, h
    scale = math.sqrt(max_pixels / (w * h))
    nh = max(1, math.floor(h * scale))
    nw = max(1, min(math.floor(w * scale), max_pixels // nh))
    nh = max(1, min(nh, max_pixels // nw))
    return nw, nh


UNKNOWN_SIZE = (1, 1)
"""The image size of a sample whose screenshot header cannot be read (it is never shown to a model)."""


def check_size(sample: Sample, size: tuple[int, int]) -> None:
    """Raise where a screenshot file is not the size its record gives (a wrong or resized download).

    The boxes are in the record's pixels: a file of another size would be scored against boxes that
    are not its own, silently. So such a file is that sample's unreadable screenshot (a counted image
    error naming both sizes), as a missing file is.

    Args:
        sample: The sample (its ``image_size`` is its record's, or the file's own where no record gives one).
        size: The file's (width, height), from its header.

    Raises:
        GgeError: The sizes differ, naming the benchmark, the sample, the file and both sizes.

    Example:
        >>> from gge.types import Box, Sample
        >>> s = Sample("groundui", "7", "/d/7.png", (1440, 900), "click", Box(0, 0, 9, 9))
        >>> check_size(s, (1440, 900))
        >>> try:
        ...     check_size(s, (1000, 600))
        ... except GgeError as e:
        ...     print(str(e).split(" (")[0])
        groundui: sample 7: screenshot /d/7.png is 1000x600 pixels, but its record says 1440x900
    """
    want = (int(sample.image_size[0]), int(sample.image_size[1]))
    got = (int(size[0]), int(size[1]))
    if want == UNKNOWN_SIZE or got == want:
        return
    raise GgeError(
        f"{sample.benchmark}: sample {sample.id}: screenshot {sample.image_path} is {got[0]}x{got[1]} "
        f"pixels, but its record says {want[0]}x{want[1]} (a wrong or resized download: its boxes are in the "
        "record's pixels)"
    )


def absent_but_sized(sample: Sample) -> bool:
    """Whether a sample's screenshot file is absent while its size is known: scorable from its record.

    A loader gives a sample the size its record states (GroundUI's ``resolution``, OSWorld-G's
    ``image_size``, ScreenSpot-Pro's ``img_size``...), or the file's header's where the record has
    none: an absent file's size is then unknown (:data:`UNKNOWN_SIZE`). A replay scores such a sample
    without the file (:func:`gge.models.replay.screenshot_error`); the report draws it on a blank
    canvas of that size (:func:`gge.report.gallery.blank_canvas`).

    Example:
        >>> from gge.types import Box, Sample
        >>> absent_but_sized(Sample("b", "7", "/gone.png", (1440, 900), "x", Box(0, 0, 1, 1)))
        True
        >>> absent_but_sized(Sample("b", "7", "/gone.png", UNKNOWN_SIZE, "x", Box(0, 0, 1, 1)))
        False
    """
    return sample.image_size != UNKNOWN_SIZE and not image_exists(sample.image_path)


def size_error(sample: Sample) -> str | None:
    """Why a sample's screenshot file is not its record's size (:func:`check_size`), from its header.

    Returns:
        The message, or None: the sizes agree, or the file is missing or unreadable (another error).
    """
    try:
        with open_image(sample.image_path) as im:
            check_size(sample, im.size)
    except GgeError as e:
        return str(e)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    return None


def decode_image(sample: Sample, *, max_pixels: int | None = None) -> Image.Image:
    """Open a sample's screenshot: RGB, fully loaded, file closed, optionally downscaled.

    Args:
        sample: The sample whose ``image_path`` is read.
        max_pixels: When given, an image with more pixels is downscaled (bicubic, aspect ratio kept)
            to at most this area; smaller images are never upscaled.

    Returns:
        The decoded image.

    Raises:
        GgeError: naming the benchmark, the sample id and the path, for a missing or unreadable image.
        ValueError: for ``max_pixels < 1``.

    Example:
        >>> import tempfile, os
        >>> from gge.types import Box, Sample
        >>> path = os.path.join(tempfile.mkdtemp(), "s.png")
        >>> Image.new("L", (400, 100)).save(path)
        >>> s = Sample("demo", "7", path, (400, 100), "click", Box(0, 0, 9, 9))
        >>> im = decode_image(s, max_pixels=10_000)
        >>> im.mode, im.size
        ('RGB', (200, 50))
    """
    if max_pixels is not None and max_pixels < 1:
        raise ValueError(f"max_pixels must be >= 1, got {max_pixels}")
    try:
        with open_image(sample.image_path) as im:
            check_size(sample, im.size)
            im.load()
            # convert() of an RGB image is a copy (8 MB of fresh pages for a screenshot): skip it.
            rgb: Image.Image = im if im.mode == "RGB" else im.convert("RGB")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        raise GgeError(
            f"{sample.benchmark}: sample {sample.id}: cannot read image {sample.image_path}: {e}"
        ) from None
    if max_pixels is not None:
        size = _fit_area(rgb.size, max_pixels)
        if size != rgb.size:
            rgb = rgb.resize(size, Image.Resampling.BICUBIC)
    return rgb
