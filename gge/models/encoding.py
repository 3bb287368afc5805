"""How an endpoint request carries its image: encoded once, fast, or the screenshot file's own bytes.

- ``png`` (the default): lossless, the pixels the model sees are exactly the ones gge drew and
  resized, as an in-process run hands them to the processor. gge writes the PNG itself
  (:func:`encode_png`: no row filter, deflate level 1), about 4x faster than PIL's encoder at its
  default level on a 1920x1080 screenshot (18 ms against 80-90 ms of one core, with zlib) for a
  file about 15% larger; the deflate releases the GIL, so threads encode in parallel. The deflate
  is zlib-ng's (the ``zlib-ng`` package, a dependency: 2.5-3x faster than zlib at level 1, a file
  about 9% larger, other bytes for the same pixels) where it is installed, else Python's zlib
  (:data:`DEFLATE` says which).
- ``jpeg`` (``model.image_format=jpeg``, ``model.jpeg_quality``, default 90): 4-8x smaller and
  faster still, but lossy: the model sees other pixels than in-process (a real cause of engine
  drift), and results.json says so.
- **the file's own bytes**: where the image sent is the screenshot itself (no resize, no marker) and
  its file is a plain RGB or greyscale PNG or JPEG without an EXIF rotation, the file is sent
  unchanged: no encoding at all, and exactly what an official evaluation that sends the file sends.
  A file is sent so only in the format asked: a PNG file under ``png``, a JPEG file under ``jpeg``
  (a JPEG file under ``png`` is decoded by gge and sent as a PNG of those pixels: another decoder, a
  server's, may upsample its chroma otherwise); and only whole (a PNG that ends with its IEND chunk,
  a JPEG with its end-of-image marker): a truncated file is decoded, and fails as the sample's
  counted unreadable screenshot.

:class:`ImageUrls` keeps each image's data URL while the image lives, so every request that sends
the same image object (a sampling proposer's greedy and sampled requests, a retry, a re-ask for
missing choices) encodes it once; and the data URLs of the last 16 screenshot files sent as they
are, so the samples that share a screenshot (several instructions on one screen) read it once.
Each URL it makes is a :class:`DataUrl`: JSON-safe by construction, so
:func:`gge.models.openai_http.request_body` puts it into a request's bytes without scanning it.

Example:
    >>> from PIL import Image
    >>> im = Image.new("RGB", (3, 2), (10, 20, 30))
    >>> back = Image.open(io.BytesIO(encode_png(im)))
    >>> back.size, back.getpixel((2, 1))
    ((3, 2), (10, 20, 30))
"""

from __future__ import annotations

import base64
import io
import os
import re
import struct
import threading
import time
import weakref
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
from PIL import Image

from gge.benchmarks.images import open_image, split_ref
from gge.errors import GgeError
from gge.models.markers import MarkedView

FORMATS = ("png", "jpeg")
"""The image formats a request can carry."""

_MIME = {"png": "image/png", "jpeg": "image/jpeg"}
_FILE_FORMATS = {"PNG": "png", "JPEG": "jpeg"}
_PNG_LEVEL = 1
_RECENT_FILES = 16
"""Screenshot files whose data URLs are kept (benchmarks ask several instructions per screenshot)."""


def _deflate_module() -> tuple[ModuleType, str]:
    try:
        from zlib_ng import zlib_ng
    except ImportError:  # zlib-ng is a dependency, but a platform may lack its wheel
        return zlib, f"zlib {zlib.ZLIB_RUNTIME_VERSION}"
    return zlib_ng, f"zlib-ng {zlib_ng.ZLIBNG_VERSION}"


_deflate, DEFLATE = _deflate_module()
"""The deflate a PNG is compressed with and its name: ``zlib-ng 2.x`` where installed, else ``zlib 1.x``.

Both write standard zlib streams (any PNG decoder reads either); the bytes differ, the pixels do not.
"""

_FINAL_BLOCK = _deflate.compressobj(_PNG_LEVEL, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
"""An empty final deflate block: it ends a stream of parts that each end on a full flush."""


_MIME_SAFE = re.compile(r"[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+")


class DataUrl(str):
    """A data URL gge made: ``data:<mime>;base64,`` and base64, so JSON writes it as it is.

    :func:`gge.models.openai_http.request_body` puts such a URL into a request's bytes unscanned
    (any other string is checked first). Make one with :func:`data_url`.
    """

    __slots__ = ()


def data_url(mime: str, data: bytes) -> DataUrl:
    """The :class:`DataUrl` of a file's bytes.

    Args:
        mime: The file's media type (``image/png``): letters, digits, ``.+-`` and one ``/``.
        data: The file's bytes.

    Returns:
        ``data:<mime>;base64,<data in base64>``.

    Raises:
        GgeError: A media type with another character (the URL would not be JSON-safe).

    Example:
        >>> data_url("image/png", b"ab")
        'data:image/png;base64,YWI='
    """
    if not _MIME_SAFE.fullmatch(mime):
        raise GgeError(f"a data URL's media type must be like image/png, got {mime!r}")
    return DataUrl(b"data:" + mime.encode("ascii") + b";base64," + base64.b64encode(data), "ascii")


def _chunk(tag: bytes, body: list[bytes]) -> list[bytes]:
    """A PNG chunk as pieces (its body's pieces as they are, not joined)."""
    crc = _deflate.crc32(tag)
    for piece in body:
        crc = _deflate.crc32(piece, crc)
    return [struct.pack(">I", sum(len(p) for p in body)), tag, *body, struct.pack(">I", crc)]


def _png_file(width: int, height: int, colour: int, stream: list[bytes]) -> bytes:
    """A PNG file of 8-bit samples (``colour`` 0: greyscale, 2: RGB) whose one IDAT is ``stream`` joined.

    The file is one join of its pieces: the compressed rows are copied once.
    """
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return b"".join(
        [b"\x89PNG\r\n\x1a\n", *_chunk(b"IHDR", [header]), *_chunk(b"IDAT", stream), *_chunk(b"IEND", [])]
    )


def encode_png(image: Image.Image) -> bytes:
    """A lossless PNG of an RGB (or greyscale) image: filter type 0 on every row, deflate level 1.

    Args:
        image: The image (any other mode is converted to RGB first).

    Returns:
        The PNG file's bytes.
    """
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    pixels = np.asarray(image)
    height, width = pixels.shape[:2]
    channels = 1 if image.mode == "L" else 3
    rows = np.empty((height, width * channels + 1), np.uint8)
    rows[:, 0] = 0  # filter type None
    rows[:, 1:] = pixels.reshape(height, width * channels)
    return _png_file(width, height, 0 if channels == 1 else 2, [_deflate.compress(rows, _PNG_LEVEL)])


_BLOCK_ROWS = 16
"""Rows per independently compressed part of a PNG that marked views of its image reuse."""

_ADLER_BASE = 65521


def adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of two byte strings joined, from each one's Adler-32 and the second's length.

    Example:
        >>> adler32_combine(zlib.adler32(b"ab"), zlib.adler32(b"cde"), 3) == zlib.adler32(b"abcde")
        True
    """
    a1, b1 = first & 0xFFFF, first >> 16
    a2, b2 = second & 0xFFFF, second >> 16
    a = (a1 + a2 - 1) % _ADLER_BASE
    b = (b1 + b2 + second_length * (a1 - 1)) % _ADLER_BASE
    return (b << 16) | a


@dataclass(frozen=True)
class _Part:
    """Rows of a PNG compressed on their own: raw deflate ending on a full flush, and their checksum."""

    data: bytes
    adler: int
    length: int


def _rows(pixels: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The PNG scanlines of rows ``start:stop`` (filter type 0 before each row), C-contiguous."""
    block = pixels[start:stop]
    rows = np.empty((block.shape[0], block.shape[1] * 3 + 1), np.uint8)
    rows[:, 0] = 0
    rows[:, 1:] = block.reshape(block.shape[0], -1)
    return rows


def _part(raw: np.ndarray) -> _Part:
    """Scanlines compressed on their own (read in place: the deflate takes the array's buffer)."""
    compressor = _deflate.compressobj(_PNG_LEVEL, zlib.DEFLATED, -15)
    data = compressor.compress(raw) + compressor.flush(zlib.Z_FULL_FLUSH)
    return _Part(data, _deflate.adler32(raw), raw.nbytes)


def _parts(pixels: np.ndarray) -> list[_Part]:
    """An RGB image's scanlines in parts of :data:`_BLOCK_ROWS` rows, each compressed on its own."""
    return [_part(_rows(pixels, y, y + _BLOCK_ROWS)) for y in range(0, pixels.shape[0], _BLOCK_ROWS)]


def _png_of_parts(width: int, height: int, parts: list[_Part]) -> bytes:
    """The PNG whose one zlib stream is the parts' deflate joined (each part starts afresh)."""
    adler = 1
    for part in parts:
        adler = adler32_combine(adler, part.adler, part.length)
    stream = [b"\x78\x01", *(p.data for p in parts), _FINAL_BLOCK, adler.to_bytes(4, "big")]
    return _png_file(width, height, 2, stream)


def encode_marked_png(view: MarkedView, base: np.ndarray, base_parts: list[_Part]) -> bytes:
    """A lossless PNG of a marked view: the base's parts as they are, those under a band compressed again.

    Args:
        view: The view (:func:`gge.models.markers.mark_view`).
        base: The pixels of ``view.base``.
        base_parts: ``base``'s parts (:func:`_parts`).

    Returns:
        The PNG file's bytes; it decodes to ``view.image()``'s pixels.
    """
    touched: dict[int, np.ndarray] = {}  # part -> its rows, the bands written over the base's
    for top, band in view.bands:
        pixels = np.asarray(band)
        stop = top + pixels.shape[0]
        for i in range(top // _BLOCK_ROWS, (stop - 1) // _BLOCK_ROWS + 1):
            start = i * _BLOCK_ROWS
            rows = touched.get(i)
            if rows is None:
                rows = touched[i] = base[start : start + _BLOCK_ROWS].copy()
            lo, hi = max(top, start), min(stop, start + _BLOCK_ROWS)
            rows[lo - start : hi - start] = pixels[lo - top : hi - top]
    parts = list(base_parts)
    for i, rows in touched.items():
        parts[i] = _part(_rows(rows, 0, rows.shape[0]))
    return _png_of_parts(view.size[0], view.size[1], parts)


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """A JPEG of the image at ``quality`` (RGB; 4:2:0 subsampling, PIL's default).

    Args:
        image: The image.
        quality: JPEG quality, 1-100.

    Returns:
        The JPEG file's bytes.
    """
    if image.mode != "RGB":
        image = image.convert("RGB")
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def _whole(data: bytes, fmt: str) -> bool:
    """Whether a PNG or JPEG file's bytes end as a whole file does (its IEND chunk, its EOI marker)."""
    if fmt == "png":
        return data.endswith(b"IEND\xaeB`\x82")
    return b"\xff\xd9" in data[-4096:]  # some cameras append bytes after the marker


def file_format(path: str, size: tuple[int, int]) -> str | None:
    """``png`` or ``jpeg`` if the screenshot file at ``path`` can be sent as it is for an image of ``size``.

    It can when it is a plain file (not a screenshot embedded in a parquet or archive), a PNG or JPEG
    of exactly that size, in RGB or greyscale (a server converts nothing else the way gge does), and
    without an EXIF orientation (which a server may or may not apply).

    Args:
        path: The screenshot's path (``Sample.image_path``).
        size: The size of the image the request would send.

    Returns:
        The file's format, or None where it must be encoded.
    """
    if split_ref(path) is not None:
        return None
    try:
        with open_image(path) as im:
            fmt = _FILE_FORMATS.get(im.format or "")
            if fmt is None or im.size != size or im.mode not in ("RGB", "L"):
                return None
            # A PNG's getexif() decodes the whole image to look past its pixels: read only the
            # eXIf chunk met before them (a later one is as rare as it is ignored by servers)
            if (fmt == "jpeg" or "exif" in im.info) and im.getexif().get(0x0112, 1) != 1:
                return None
            return fmt
    except (OSError, ValueError, SyntaxError):
        return None


@dataclass
class EncodeCounts:
    """How the images of a backend's requests were made (its ``settings()["images"]``).

    Attributes:
        encoded: Images encoded (once each, however many requests sent them).
        file_bytes: Images sent as their screenshot file's own bytes.
        reused: Requests that sent an image already encoded for another request.
        encode_seconds: CPU seconds the client spent encoding: each encoding thread's own CPU time
            (``time.thread_time``) summed, not wall time (threads waiting for the GIL or the
            processor count nothing), so it is comparable with the run's wall time times its cores.
        deflate: The deflate of the PNGs encoded (:data:`DEFLATE`).
    """

    encoded: int = 0
    file_bytes: int = 0
    reused: int = 0
    encode_seconds: float = 0.0
    deflate: str = field(default=DEFLATE)


class ImageUrls:
    """The data URL of each image a request sends, made once per image object while it lives.

    Args:
        image_format: ``png`` or ``jpeg``.
        jpeg_quality: The quality of ``jpeg``.

    Raises:
        GgeError: An unknown format or a quality outside 1-100.
    """

    def __init__(self, image_format: str = "png", jpeg_quality: int = 90) -> None:
        fmt = "jpeg" if image_format.lower() == "jpg" else image_format.lower()
        if fmt not in FORMATS:
            raise GgeError(f"model.image_format must be png or jpeg, got {image_format!r}")
        if not 1 <= int(jpeg_quality) <= 100:
            raise GgeError(f"model.jpeg_quality must be within 1-100, got {jpeg_quality}")
        self.image_format = fmt
        self.jpeg_quality = int(jpeg_quality)
        self.counts = EncodeCounts()
        self._lock = threading.Lock()
        self._urls: dict[int, DataUrl] = {}
        self._pending: dict[int, threading.Event] = {}
        self._files: OrderedDict[tuple[str, int, int], DataUrl] = OrderedDict()  # recent files' URLs
        self._parts: dict[int, tuple[np.ndarray, list[_Part]]] = {}  # images marked views are drawn on
        self._making: dict[int, threading.Event] = {}

    def url(self, image: Image.Image | MarkedView, file: str | None = None) -> DataUrl:
        """The data URL of ``image``; ``file``: the screenshot file it is, unchanged, if it is one.

        Concurrent calls for one image wait for the first one's encoding instead of repeating it.

        Args:
            image: The image the request sends, or a marked view (sent as its whole marked image; a
                PNG of it reuses its screenshot's compressed rows outside the marked bands).
            file: The path of a screenshot whose decoded pixels ``image`` is, as they are (no resize,
                no marker), or None.

        Returns:
            ``data:<mime>;base64,...`` (a :class:`DataUrl`).
        """
        key = id(image)
        with self._lock:
            if key in self._urls:
                self.counts.reused += 1
                return self._urls[key]
            waiting = self._pending.get(key)
            if waiting is None:
                self._pending[key] = threading.Event()
        if waiting is not None:
            waiting.wait()
            with self._lock:
                known = self._urls.get(key)
                if known is not None:
                    self.counts.reused += 1
                    return known
            return self.url(image, file)  # the first encoding failed: this call tries (and says why)
        try:
            url = self._make(image, file)
            weakref.finalize(image, self._forget, key)  # before the entry: never one without its finalizer
        except BaseException:
            with self._lock:
                self._pending.pop(key).set()
            raise
        with self._lock:
            self._urls[key] = url
            self._pending.pop(key).set()
        return url

    def _base_parts(self, base: Image.Image) -> tuple[np.ndarray, list[_Part]]:
        """The pixels and PNG parts of an image marked views are drawn on (made once while it lives)."""
        key = id(base)
        with self._lock:
            known = self._parts.get(key)
            if known is not None:
                return known
            making = self._making.get(key)
            if making is None:
                self._making[key] = threading.Event()
        if making is not None:  # another judge of the same sample is compressing it: wait for it
            making.wait()
            return self._base_parts(base)
        try:
            pixels = np.asarray(base)
            made = (pixels, _parts(pixels))
            with self._lock:
                self._parts[key] = made
                weakref.finalize(base, self._parts.pop, key, None)
            return made
        finally:
            with self._lock:
                self._making.pop(key).set()

    def _forget(self, key: int) -> None:
        # No lock: a finalizer may run in a thread that holds it (a garbage collection inside url()),
        # and one dict operation is atomic.
        self._urls.pop(key, None)

    def _make(self, image: Image.Image | MarkedView, file: str | None) -> DataUrl:
        began = time.thread_time()
        if isinstance(image, MarkedView):
            if self.image_format == "png":
                data = encode_marked_png(image, *self._base_parts(image.base))
            else:
                data = encode_jpeg(image.image(), self.jpeg_quality)
            return self._encoded(data, began)
        fmt = file_format(file, image.size) if file is not None else None
        if file is not None and fmt is not None and fmt == self.image_format:
            stat = os.stat(file)
            key = (file, stat.st_mtime_ns, stat.st_size)
            with self._lock:
                self.counts.file_bytes += 1
                known = self._files.get(key)
                if known is not None:  # another instruction on the same screenshot
                    self._files.move_to_end(key)
                    return known
            with open(file, "rb") as f:
                data = f.read()
            if _whole(data, fmt):
                url = data_url(_MIME[fmt], data)
                with self._lock:
                    self._files[key] = url
                    while len(self._files) > _RECENT_FILES:
                        self._files.popitem(last=False)
                return url
            with self._lock:
                self.counts.file_bytes -= 1  # cut short: encoded from its pixels (which fail to load)
        began = time.thread_time()
        data = encode_png(image) if self.image_format == "png" else encode_jpeg(image, self.jpeg_quality)
        return self._encoded(data, began)

    def _encoded(self, data: bytes, began: float) -> DataUrl:
        with self._lock:
            self.counts.encoded += 1
            self.counts.encode_seconds += time.thread_time() - began
        return data_url(_MIME[self.image_format], data)
