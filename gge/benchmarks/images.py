"""Where a sample's screenshot is, and the one way gge opens it.

A :class:`~gge.types.Sample`'s ``image_path`` is an *image reference*: a plain file path (the release
layouts), or an image embedded in a Hub copy's file (a parquet cell of image bytes, a TSV cell of
base64), written ``<file>::<kind>:<locator>``. Every reader of a screenshot (the data workers, the
policies, the exports, the loggers, the galleries) opens it through :func:`open_image` or
:func:`image_bytes`, so an embedded image is decoded only where and when it is needed (in the data
workers), never extracted to disk.

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

import io
import os
from collections.abc import Callable

from PIL import Image

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
        >>> embedded_ref("/d/test.parquet", "parquet", "row=3;col=image")
        '/d/test.parquet::parquet:row=3;col=image'
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
        The name (used in sample digests and messages).
    """
    return os.path.basename(ref)
