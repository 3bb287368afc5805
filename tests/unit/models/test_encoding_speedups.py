"""The client's CPU per request, cut without changing what a server reads: gge's own data URLs go into
a request's bytes unscanned (the bytes are still exactly the JSON encoder's), and PNGs are deflated by
zlib-ng where installed (other bytes, the same pixels; with Python's zlib, the very bytes of before).

The references are independent of the code under test: ``json.dumps`` of the whole body, Pillow's
decoder, and a copy of the PNG writer as it was before (zlib, one ``tobytes`` per part, byte joins).
"""

from __future__ import annotations

import base64
import io
import json
import struct
import sys
import zlib
from typing import Any

import numpy as np
import pytest
from PIL import Image
from png_chunks import png_chunks

from gge.errors import GgeError
from gge.models import encoding
from gge.models.encoding import DataUrl, ImageUrls, _parts, data_url, encode_marked_png, encode_png
from gge.models.markers import MarkerStyle, draw_markers, mark_view
from gge.models.openai_http import request_body


def _noise(w: int, h: int, mode: str = "RGB", seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    shape = (h, w) if mode == "L" else (h, w, 3)
    return Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode)


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        assert im.format == "PNG"
        return np.asarray(im.convert(im.mode))


# -- the PNG writer as it was before (Python's zlib), the reference of the fallback's bytes ----------


def _old_chunk(tag: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


def _old_file(width: int, height: int, colour: int, stream: bytes) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _old_chunk(b"IHDR", header)
        + _old_chunk(b"IDAT", stream)
        + _old_chunk(b"IEND", b"")
    )


def _old_encode_png(image: Image.Image) -> bytes:
    pixels = np.asarray(image)
    h, w = pixels.shape[:2]
    channels = 1 if image.mode == "L" else 3
    rows = np.zeros((h, w * channels + 1), np.uint8)
    rows[:, 1:] = pixels.reshape(h, w * channels)
    return _old_file(w, h, 0 if channels == 1 else 2, zlib.compress(rows.tobytes(), 1))


def _old_marked_png(marked: np.ndarray, block: int = 16) -> bytes:
    """The old writer's PNG of a marked image: every part of ``block`` rows deflated on its own.

    The old writer reused the base's untouched parts and deflated again those under a band: both are
    the deflate of the marked image's rows of that part, so this is byte-for-byte its output.
    """
    h, w = marked.shape[:2]
    data, adler = b"", 1
    for y in range(0, h, block):
        rows = np.zeros((min(block, h - y), w * 3 + 1), np.uint8)
        rows[:, 1:] = marked[y : y + block].reshape(rows.shape[0], -1)
        raw = rows.tobytes()
        c = zlib.compressobj(1, zlib.DEFLATED, -15)
        data += c.compress(raw) + c.flush(zlib.Z_FULL_FLUSH)
        adler = zlib.adler32(raw, adler)
    tail = zlib.compressobj(1, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
    return _old_file(w, h, 2, b"\x78\x01" + data + tail + adler.to_bytes(4, "big"))


@pytest.fixture(params=["installed", "zlib"])
def deflate(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: with the deflate gge found (zlib-ng here), and with Python's zlib."""
    if request.param == "zlib":
        monkeypatch.setattr(encoding, "_deflate", zlib)
        monkeypatch.setattr(
            encoding, "_FINAL_BLOCK", zlib.compressobj(1, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
        )
    return str(request.param)


# -- the PNGs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("w", "h", "mode"), [(1, 1, "RGB"), (37, 5, "RGB"), (64, 50, "L"), (19, 33, "RGB")])
def test_encode_png_decodes_to_the_source_pixels(deflate: str, w: int, h: int, mode: str) -> None:
    image = _noise(w, h, mode, seed=w * h)
    data = encode_png(image)
    assert [tag for tag, _ in png_chunks(data)] == [b"IHDR", b"IDAT", b"IEND"]
    assert np.array_equal(_pixels(data), np.asarray(image))
    if deflate == "zlib":
        assert data == _old_encode_png(image)  # the fallback sends the very bytes of before


@pytest.mark.parametrize("h", [16, 45, 70])
def test_a_marked_png_decodes_to_the_marked_image(deflate: str, h: int) -> None:
    """Bands across part boundaries (16 rows), a last part shorter than the others."""
    screen = _noise(52, h, seed=h)
    view = mark_view(screen, [(10.0, 14.0), (40.0, h - 9.0), (25.0, h / 2)], MarkerStyle())
    pixels = np.asarray(view.base)
    data = encode_marked_png(view, pixels, _parts(pixels))
    drawn = np.asarray(draw_markers(screen, [(10.0, 14.0), (40.0, h - 9.0), (25.0, h / 2)], MarkerStyle()))
    assert not np.array_equal(drawn, pixels)  # the markers are there to be kept
    idat = b"".join(body for tag, body in png_chunks(data) if tag == b"IDAT")
    raw = zlib.decompress(idat)  # Python's zlib checks the stream's Adler-32
    assert len(raw) == h * (52 * 3 + 1)
    assert np.array_equal(_pixels(data), drawn)
    if deflate == "zlib":
        assert data == _old_marked_png(drawn)


def test_the_deflate_is_named_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    zlib_ng = pytest.importorskip("zlib_ng.zlib_ng")
    assert f"zlib-ng {zlib_ng.ZLIBNG_VERSION}" == encoding.DEFLATE
    assert ImageUrls().counts.deflate == encoding.DEFLATE
    monkeypatch.setitem(sys.modules, "zlib_ng", None)  # not installed: Python's zlib
    module, name = encoding._deflate_module()
    assert module is zlib and name == f"zlib {zlib.ZLIB_RUNTIME_VERSION}"


# -- the data URLs and the request's bytes -------------------------------------------------------------


def test_every_url_gge_makes_is_a_data_url_of_its_bytes(tmp_path: Any) -> None:
    image = _noise(21, 9, seed=3)
    image.save(tmp_path / "s.png")
    urls = ImageUrls()
    made = [
        urls.url(image),
        urls.url(_noise(21, 9, seed=3), file=str(tmp_path / "s.png")),
        urls.url(mark_view(image, [(5.0, 4.0)], MarkerStyle())),
    ]
    assert all(type(u) is DataUrl for u in made)
    assert made[1] == "data:image/png;base64," + base64.b64encode((tmp_path / "s.png").read_bytes()).decode()
    assert data_url("image/jpeg", b"\x00\xff") == "data:image/jpeg;base64,AP8="


@pytest.mark.parametrize("mime", ['image/png"', "image/pné", "image", "image/png;x=1"])
def test_a_media_type_that_would_not_be_json_safe_is_refused(mime: str) -> None:
    with pytest.raises(GgeError, match="media type"):
        data_url(mime, b"x")


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url, "detail": "high"}}


def _bodies() -> list[dict[str, Any]]:
    png = encode_png(_noise(30, 20, seed=1))
    ours = data_url("image/png", png)
    plain = str(ours)  # the same URL, not marked as gge's: scanned, then put in whole
    return [
        {
            "model": "m",
            "messages": [{"role": "user", "content": [_image(ours), {"type": "text", "text": "x"}]}],
        },
        {
            "model": "m",
            "n": 5,
            "messages": [
                {"role": "system", "content": 'say "1" \\ \u0000 é 日本'},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": 'a "quoted" é'}, _image(ours), _image(plain)],
                },
                {"role": "assistant", "content": [{"type": "text", "text": "(3, 4)"}]},
                {"role": "user", "content": [_image('data:image/png;base64,AA==\u2028"x'), _image(ours)]},
                {"role": "user", "content": [_image("https://example.com/a.png"), _image("data:é")]},
            ],
            "logprobs": True,
        },
        {"model": "m", "prompt": "no messages"},
    ]


@pytest.mark.parametrize("index", range(3))
def test_a_request_body_is_byte_for_byte_the_json_encoders(index: int) -> None:
    """The URLs put in whole (gge's unscanned, others checked): the bytes json.dumps writes."""
    body = _bodies()[index]
    sent = request_body(body)
    assert sent == json.dumps(body).encode("utf-8")
    assert json.loads(sent) == body


def test_a_url_gge_did_not_make_is_still_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted by hand: the second body holds 6 image URLs; gge made 2 of them (not scanned), 3 others are
    ``data:`` URLs (each scanned once), 1 is not a data URL (not scanned)."""
    from gge.models import openai_http

    scanned: list[str] = []
    real = openai_http._JSON_SAFE

    class Counting:
        def fullmatch(self, text: str) -> Any:
            scanned.append(text)
            return real.fullmatch(text)

    monkeypatch.setattr(openai_http, "_JSON_SAFE", Counting())
    body = _bodies()[1]
    assert request_body(body) == json.dumps(body).encode("utf-8")
    assert len(scanned) == 3
    assert not any(type(u) is DataUrl for u in scanned)
