"""A PNG file's chunks, read independently of gge's writer (each chunk's CRC checked with Python's zlib)."""

from __future__ import annotations

import struct
import zlib

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """``(tag, body)`` of each chunk of a PNG file, in order; asserts the signature and every CRC."""
    assert data[:8] == PNG_MAGIC
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        tag, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length : at + 12 + length])[0] == zlib.crc32(tag + body)
        chunks.append((tag, body))
        at += 12 + length
    return chunks
