"""How an endpoint request carries its image: the encoders, when a file is sent as it is, the URL cache,
and the OpenAI backend's request bodies as a real HTTP server on loopback receives them."""

from __future__ import annotations

import base64
import gc
import io
import json
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from png_chunks import PNG_MAGIC, png_chunks

from gge.benchmarks.images import embedded_ref, open_image, split_ref
from gge.errors import GgeError
from gge.models import encoding
from gge.models.base import GenerationRequest
from gge.models.encoding import ImageUrls, encode_jpeg, encode_png, file_format
from gge.models.openai_api import OpenAIBackend

JPEG_MAGIC = b"\xff\xd8\xff"
MODEL = "m"
WAIT_S = 3.0
"""How long the server holds a request for its partner before it gives up (and the test fails)."""


def _noise(size: tuple[int, int], mode: str = "RGB", seed: int = 0) -> Image.Image:
    """An image of random pixels (nothing a lossy codec could keep exactly)."""
    rng = np.random.default_rng(seed)
    w, h = size
    if mode == "L":
        return Image.fromarray(rng.integers(0, 256, (h, w), dtype=np.uint8), "L")
    if mode == "RGBA":
        return Image.fromarray(rng.integers(0, 256, (h, w, 4), dtype=np.uint8), "RGBA")
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")


def _decode(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def _split_url(url: str) -> tuple[str, bytes]:
    """(mime, payload bytes) of a base64 data URL."""
    head, sep, b64 = url.partition(",")
    assert sep and head.startswith("data:") and head.endswith(";base64"), url[:40]
    return head[len("data:") : -len(";base64")], base64.b64decode(b64, validate=True)


def _mime_of(data: bytes) -> str:
    """The mime type a payload's magic bytes say."""
    if data.startswith(PNG_MAGIC):
        return "image/png"
    if data.startswith(JPEG_MAGIC):
        return "image/jpeg"
    return "unknown"


# -- the encoders ----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(1, 1), (7, 5), (33, 17), (101, 3)])
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_encode_png_is_lossless(size: tuple[int, int], mode: str) -> None:
    image = _noise(size, mode, seed=size[0])
    data = encode_png(image)
    assert data.startswith(PNG_MAGIC)
    back = _decode(data)
    assert (back.format, back.mode, back.size) == ("PNG", mode, size)
    assert np.array_equal(np.asarray(back), np.asarray(image))


def test_encode_png_writes_unfiltered_rows_at_zlib_level_1() -> None:
    """The fast encoder: filter type 0 on every row, zlib's fastest level (its header says which)."""
    image = _noise((13, 4))
    data = encode_png(image)
    chunks = png_chunks(data)
    assert [tag for tag, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    idat = chunks[1][1]
    assert idat[0] == 0x78 and idat[1] >> 6 == 0  # deflate, FLEVEL 0: the fastest (level 1)
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(4, 1 + 13 * 3)
    assert (rows[:, 0] == 0).all()
    assert np.array_equal(rows[:, 1:].reshape(4, 13, 3), np.asarray(image))


def _palette_image(size: tuple[int, int]) -> Image.Image:
    rng = np.random.default_rng(5)
    im = Image.fromarray(rng.integers(0, 16, (size[1], size[0]), dtype=np.uint8), "P")
    im.putpalette([int(v) for v in rng.integers(0, 256, 16 * 3)] + [0] * (256 - 16) * 3)
    return im


@pytest.mark.parametrize("make", [lambda: _noise((9, 7), "RGBA"), lambda: _palette_image((11, 5))])
def test_encode_png_of_other_modes_is_their_rgb_conversion(make: Any) -> None:
    image = make()
    back = _decode(encode_png(image))
    assert (back.mode, back.size) == ("RGB", image.size)
    assert np.array_equal(np.asarray(back), np.asarray(image.convert("RGB")))


def test_encode_jpeg_is_a_jpeg_whose_size_follows_its_quality_and_loses_pixels() -> None:
    image = _noise((64, 48))
    low, high = encode_jpeg(image, 50), encode_jpeg(image, 95)
    for data in (low, high):
        assert data.startswith(JPEG_MAGIC)
        back = _decode(data)
        assert (back.format, back.mode, back.size) == ("JPEG", "RGB", (64, 48))
        assert not np.array_equal(np.asarray(back), np.asarray(image))
    assert len(low) < len(high)
    # the lower quality loses more
    error = [
        np.abs(np.asarray(_decode(d), np.int16) - np.asarray(image, np.int16)).mean() for d in (low, high)
    ]
    assert error[0] > error[1]
    # a greyscale image goes out as RGB
    assert _decode(encode_jpeg(_noise((8, 8), "L"), 90)).mode == "RGB"


# -- when a file is sent as it is ------------------------------------------------------------------


def _save(path: Path, image: Image.Image, fmt: str, **kwargs: Any) -> str:
    image.save(path, format=fmt, **kwargs)
    return str(path)


@pytest.mark.parametrize(
    ("mode", "fmt", "expected"),
    [("RGB", "PNG", "png"), ("L", "PNG", "png"), ("RGB", "JPEG", "jpeg"), ("L", "JPEG", "jpeg")],
)
def test_file_format_of_a_plain_png_or_jpeg(tmp_path: Path, mode: str, fmt: str, expected: str) -> None:
    path = _save(tmp_path / f"shot.{fmt.lower()}", _noise((30, 20), mode), fmt)
    assert file_format(path, (30, 20)) == expected
    assert file_format(path, (20, 30)) is None  # another size: the image was resized
    assert file_format(path, (30, 21)) is None


def _exif(orientation: int) -> Image.Exif:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif


def test_file_format_refuses_what_a_server_might_decode_otherwise(tmp_path: Path) -> None:
    size = (30, 20)
    rgba = _save(tmp_path / "rgba.png", _noise(size, "RGBA"), "PNG")
    palette = _save(tmp_path / "p.png", _palette_image(size), "PNG")
    cmyk = _save(tmp_path / "cmyk.jpg", _noise(size).convert("CMYK"), "JPEG")
    rotated = _save(tmp_path / "rotated.jpg", _noise(size), "JPEG", exif=_exif(6))
    upright = _save(tmp_path / "upright.jpg", _noise(size), "JPEG", exif=_exif(1))
    rotated_png = _save(tmp_path / "rotated.png", _noise(size), "PNG", exif=_exif(3))
    bmp = _save(tmp_path / "shot.bmp", _noise(size), "BMP")
    (tmp_path / "notes.png").write_text("not an image at all\n")
    (tmp_path / "truncated.png").write_bytes(PNG_MAGIC + b"\x00\x00")
    for path in (rgba, palette, cmyk, rotated, rotated_png, bmp):
        with Image.open(path) as im:
            assert im.size == size  # refused for what it is, not for its size
        assert file_format(path, size) is None, path
    for name in ("notes.png", "truncated.png", "missing.png"):
        assert file_format(str(tmp_path / name), size) is None, name
    assert file_format(upright, size) == "jpeg"  # orientation 1 is no rotation


def test_file_format_refuses_an_image_embedded_in_another_file(tmp_path: Path) -> None:
    size = (30, 20)
    png = io.BytesIO()
    _noise(size).save(png, format="PNG")
    header = b"index\timage\n"
    (tmp_path / "data.tsv").write_bytes(header + b"0\t" + base64.b64encode(png.getvalue()) + b"\n")
    ref = embedded_ref(str(tmp_path / "data.tsv"), "tsv", f"{len(header)}/1")
    assert split_ref(ref) is not None
    with open_image(ref) as im:  # a plain RGB PNG of the right size, but inside a TSV file
        assert (im.format, im.mode, im.size) == ("PNG", "RGB", size)
    assert file_format(ref, size) is None


# -- the URL cache ---------------------------------------------------------------------------------


class _EncodeClock:
    """A ``time`` for the encoding module whose ``thread_time`` (CPU) moves only while an image is encoded."""

    def __init__(self, seconds_per_encoding: float) -> None:
        self.now = 100.0
        self.step = seconds_per_encoding

    def thread_time(self) -> float:
        return self.now


def test_the_same_image_is_encoded_once_another_with_equal_pixels_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _EncodeClock(0.25)
    real = encoding.encode_png

    def timed_encode(image: Image.Image) -> bytes:
        clock.now += clock.step  # each encoding takes 0.25 s of CPU on the module's clock
        return real(image)

    monkeypatch.setattr(encoding, "time", clock)
    monkeypatch.setattr(encoding, "encode_png", timed_encode)
    urls = ImageUrls()
    image = _noise((20, 10))
    first = urls.url(image)
    assert urls.url(image) == first and urls.url(image) == first
    assert (urls.counts.encoded, urls.counts.reused, urls.counts.file_bytes) == (1, 2, 0)
    mime, data = _split_url(first)
    assert mime == _mime_of(data) == "image/png"
    assert np.array_equal(np.asarray(_decode(data)), np.asarray(image))
    twin = image.copy()  # equal pixels, another object: the cache is per object, not per content
    assert urls.url(twin) == first
    assert (urls.counts.encoded, urls.counts.reused) == (2, 2)
    assert urls.counts.encode_seconds == 2 * 0.25  # the two encodings' time, none for the reuses


def test_eight_threads_asking_for_one_image_at_once_encode_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = encoding.encode_png

    def slow_encode(image: Image.Image) -> bytes:
        calls.append(id(image))
        time.sleep(0.1)  # long enough for the other threads to arrive while it encodes
        return real(image)

    monkeypatch.setattr(encoding, "encode_png", slow_encode)
    urls = ImageUrls()
    image = _noise((40, 30))
    barrier = threading.Barrier(8)
    got: list[str] = []
    lock = threading.Lock()

    def ask() -> None:
        barrier.wait(WAIT_S)
        url = urls.url(image)
        with lock:
            got.append(url)

    threads = [threading.Thread(target=ask, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive()
    assert calls == [id(image)]
    assert len(got) == 8 and len(set(got)) == 1
    assert (urls.counts.encoded, urls.counts.reused) == (1, 7)
    assert np.array_equal(np.asarray(_decode(_split_url(got[0])[1])), np.asarray(image))


def test_a_failed_encoding_lets_the_next_ask_try_again(monkeypatch: pytest.MonkeyPatch) -> None:
    real = encoding.encode_png
    failures = [OSError("disk on fire")]

    def flaky(image: Image.Image) -> bytes:
        if failures:
            raise failures.pop()
        return real(image)

    monkeypatch.setattr(encoding, "encode_png", flaky)
    urls = ImageUrls()
    image = _noise((5, 5))
    with pytest.raises(OSError, match="disk on fire"):
        urls.url(image)
    assert _split_url(urls.url(image))[0] == "image/png"
    assert (urls.counts.encoded, urls.counts.reused) == (1, 0)


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_a_matching_png_file_is_sent_as_its_own_bytes(tmp_path: Path) -> None:
    path = _save(tmp_path / "shot.png", _noise((30, 20)), "PNG", optimize=True)
    with Image.open(path) as im:
        image = im.convert("RGB")
    assert encode_png(image) != _file_bytes(path)  # so a re-encoding would show
    urls = ImageUrls("png")
    mime, data = _split_url(urls.url(image, file=path))
    assert data == _file_bytes(path) and mime == _mime_of(data) == "image/png"
    assert (urls.counts.file_bytes, urls.counts.encoded) == (1, 0)


def test_a_file_of_another_size_is_not_sent(tmp_path: Path) -> None:
    path = _save(tmp_path / "shot.png", _noise((30, 20)), "PNG")
    with Image.open(path) as im:
        image = im.convert("RGB").resize((15, 10))
    urls = ImageUrls("png")
    mime, data = _split_url(urls.url(image, file=path))
    assert data == encode_png(image) and mime == "image/png"
    assert (urls.counts.file_bytes, urls.counts.encoded) == (0, 1)


def test_under_jpeg_a_png_file_is_re_encoded_and_a_jpeg_file_sent_as_it_is(tmp_path: Path) -> None:
    png = _save(tmp_path / "shot.png", _noise((30, 20), seed=1), "PNG")
    jpg = _save(tmp_path / "shot.jpg", _noise((30, 20), seed=2), "JPEG", quality=70)
    with Image.open(png) as im:
        png_image = im.convert("RGB")
    with Image.open(jpg) as im:
        jpg_image = im.convert("RGB")
    urls = ImageUrls("jpeg", jpeg_quality=80)
    mime, data = _split_url(urls.url(png_image, file=png))
    assert mime == _mime_of(data) == "image/jpeg"
    assert data == encode_jpeg(png_image, 80)
    assert (urls.counts.file_bytes, urls.counts.encoded) == (0, 1)
    mime, data = _split_url(urls.url(jpg_image, file=jpg))
    assert mime == _mime_of(data) == "image/jpeg" and data == _file_bytes(jpg)
    assert (urls.counts.file_bytes, urls.counts.encoded) == (1, 1)
    # under png a JPEG file goes as a PNG of the pixels gge decoded (a server's decoder may differ)
    lossless = ImageUrls("png")
    mime, data = _split_url(lossless.url(jpg_image, file=jpg))
    assert mime == _mime_of(data) == "image/png"
    with Image.open(io.BytesIO(data)) as back:
        assert np.array_equal(np.asarray(back.convert("RGB")), np.asarray(jpg_image))
    assert (lossless.counts.file_bytes, lossless.counts.encoded) == (0, 1)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_a_truncated_file_is_not_sent_as_its_bytes(tmp_path: Path, fmt: str) -> None:
    """Its header reads, its pixels do not: encoded instead, which fails to load (a counted failure)."""
    path = Path(_save(tmp_path / f"shot.{fmt.lower()}", _noise((64, 64), seed=4), fmt))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with Image.open(path) as im:
        lazy_size = im.size
    urls = ImageUrls("png" if fmt == "PNG" else "jpeg")
    with Image.open(path) as lazy:
        assert lazy.size == lazy_size
        with pytest.raises(OSError):
            urls.url(lazy, file=str(path))
    assert urls.counts.file_bytes == 0


def test_an_entry_is_dropped_once_its_image_is_garbage_collected() -> None:
    urls = ImageUrls()
    image = _noise((6, 6))
    urls.url(image)
    assert len(urls._urls) == 1  # the cache is private: its size is the only way to see the drop
    del image
    gc.collect()
    assert urls._urls == {}


@pytest.mark.parametrize(
    ("fmt", "quality", "match"),
    [
        ("gif", 90, "must be png or jpeg, got 'gif'"),
        ("jpeg", 0, "within 1-100, got 0"),
        ("png", 101, "got 101"),
    ],
)
def test_bad_settings_raise(fmt: str, quality: int, match: str) -> None:
    with pytest.raises(GgeError, match=match):
        ImageUrls(fmt, quality)


def test_jpg_names_jpeg() -> None:
    assert ImageUrls("JPG").image_format == "jpeg"


# -- through the OpenAI backend and a real HTTP server ---------------------------------------------


class Server:
    """A chat-completions server that records each body; ``pair`` holds a request for its partner."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.in_flight = 0
        self.most_in_flight = 0
        self.pair = False
        self.waited_out = False  # a held request's partner never came
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def image_urls(self) -> list[str]:
        """The image data URL of each body received."""
        out = []
        for body in self.bodies:
            for message in body["messages"]:
                content = message["content"]
                if isinstance(content, list):
                    out += [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]
        return out


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        server: Server = self.server.owner  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with server.cond:
            server.bodies.append(body)
            server.in_flight += 1
            server.most_in_flight = max(server.most_in_flight, server.in_flight)
            server.cond.notify_all()
            if server.pair and not server.cond.wait_for(lambda: server.most_in_flight >= 2, WAIT_S):
                server.waited_out = True
            server.in_flight -= 1
        n = body["n"]
        choices = [
            {"index": i, "message": {"role": "assistant", "content": f"(1, {i})"}, "finish_reason": "stop"}
            for i in range(n)
        ]
        data = json.dumps(
            {"choices": choices, "usage": {"prompt_tokens": 10, "completion_tokens": 2 * n}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()
    srv.thread.join(timeout=5)


def _backend(server: Server, **kwargs: Any) -> OpenAIBackend:
    return OpenAIBackend(server.url, MODEL, api_key_env="GGE_TEST_NO_KEY", timeout_s=5.0, **kwargs)


def _request(image: Image.Image, **kwargs: Any) -> GenerationRequest:
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "click OK"}]}]
    return GenerationRequest(image, messages, **kwargs)


def test_the_default_png_carries_the_request_image_exactly(server: Server) -> None:
    backend = _backend(server)
    image = _noise((37, 23), seed=3)
    backend.generate([_request(image)])
    [url] = server.image_urls()
    mime, data = _split_url(url)
    assert mime == _mime_of(data) == "image/png"
    back = _decode(data)
    assert back.size == (37, 23) and np.array_equal(np.asarray(back), np.asarray(image))
    assert backend.settings()["image_format"] == "png" and backend.settings()["jpeg_quality"] is None


def test_image_format_jpeg_sends_a_jpeg(server: Server) -> None:
    backend = _backend(server, image_format="jpeg", jpeg_quality=75)
    image = _noise((37, 23), seed=4)
    backend.generate([_request(image)])
    [url] = server.image_urls()
    mime, data = _split_url(url)
    assert mime == _mime_of(data) == "image/jpeg"
    assert data == encode_jpeg(image, 75)
    back = _decode(data)
    assert (back.format, back.size) == ("JPEG", (37, 23))
    assert backend.settings()["jpeg_quality"] == 75


def test_a_greedy_first_request_sends_one_encoding_twice_both_in_flight_at_once(server: Server) -> None:
    server.pair = True  # the first request is answered only once the second has arrived
    backend = _backend(server)
    image = _noise((40, 30), seed=5)
    [generation] = backend.generate([_request(image, num_sequences=3, do_sample=True, greedy_first=True)])
    assert not server.waited_out, "the second request of the pair did not come while the first was held"
    assert server.most_in_flight == 2
    assert sorted(body["n"] for body in server.bodies) == [1, 2]
    assert len(generation.texts) == 3
    first, second = server.image_urls()
    assert first == second  # the same string: one encoding
    assert np.array_equal(np.asarray(_decode(_split_url(first)[1])), np.asarray(image))
    images = backend.settings()["images"]
    assert (images["encoded"], images["file_bytes"]) == (1, 0)
    try:  # which deflate wrote the PNGs is recorded: zlib-ng where installed, else the standard library's
        from zlib_ng import zlib_ng

        assert images["deflate"] == f"zlib-ng {zlib_ng.ZLIBNG_VERSION}"
    except ImportError:
        import zlib

        assert images["deflate"] == f"zlib {zlib.ZLIB_RUNTIME_VERSION}"


@pytest.mark.parametrize("greedy_first", [False, True])
def test_each_request_sent_is_one_encoding_or_one_reuse(server: Server, greedy_first: bool) -> None:
    """``reused`` counts the requests that sent an image already encoded for another request."""
    backend = _backend(server)
    kwargs: dict[str, Any] = {"num_sequences": 3, "do_sample": True} if greedy_first else {}
    backend.generate([_request(_noise((20, 20), seed=6), greedy_first=greedy_first, **kwargs)])
    images = backend.settings()["images"]
    sent = len(server.bodies)
    assert sent == (2 if greedy_first else 1)
    assert (images["encoded"], images["reused"]) == (1, sent - 1)


def test_a_request_for_a_matching_png_file_sends_the_files_bytes(server: Server, tmp_path: Path) -> None:
    path = _save(tmp_path / "shot.png", _noise((30, 20), seed=7), "PNG", optimize=True)
    with Image.open(path) as im:
        image = im.convert("RGB")
    backend = _backend(server)
    backend.generate([_request(image, image_file=path)])
    [url] = server.image_urls()
    mime, data = _split_url(url)
    assert data == _file_bytes(path) and mime == _mime_of(data) == "image/png"
    assert data != encode_png(image)
    images = backend.settings()["images"]
    assert (images["file_bytes"], images["encoded"]) == (1, 0)


def test_a_judge_request_for_a_matching_file_sends_the_files_bytes(server: Server, tmp_path: Path) -> None:
    path = _save(tmp_path / "shot.jpg", _noise((30, 20), seed=8), "JPEG", quality=85)
    with Image.open(path) as im:
        image = im.convert("RGB")
    backend = _backend(server, image_format="jpeg")
    backend.yes_probability([_request(image, image_file=path)], "yes", "no")
    [url] = server.image_urls()
    mime, data = _split_url(url)
    assert data == _file_bytes(path) and mime == _mime_of(data) == "image/jpeg"
    assert backend.settings()["images"]["file_bytes"] == 1


# -- marked copies: a PNG made of the screenshot's unchanged parts ---------------------------------


def _decoded(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        assert im.format == "PNG"
        return np.asarray(im.convert("RGB"))


@pytest.mark.parametrize(
    ("size", "bands"),
    [
        ((37, 50), [(0, 1)]),  # the first row
        ((37, 50), [(49, 1)]),  # the last row, in the last (partial) part of 2 rows
        ((40, 33), [(15, 2)]),  # on both sides of a part boundary
        ((40, 33), [(3, 2), (10, 3), (30, 3)]),  # two bands in one part, one in the last part
        ((24, 70), [(0, 70)]),  # every row
        ((24, 70), []),  # nothing marked
    ],
)
def test_a_marked_view_decodes_to_its_own_pixels(size: tuple[int, int], bands: list[tuple[int, int]]) -> None:
    from gge.models.encoding import _parts, encode_marked_png
    from gge.models.markers import MarkedView

    rng = np.random.default_rng(len(bands))
    base = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
    expected = np.asarray(base).copy()
    drawn = []
    for top, height in bands:
        band = rng.integers(0, 256, (height, size[0], 3), dtype=np.uint8)
        expected[top : top + height] = band
        drawn.append((top, Image.fromarray(band)))
    pixels = np.asarray(base)
    data = encode_marked_png(MarkedView(base, tuple(drawn)), pixels, _parts(pixels))
    assert np.array_equal(_decoded(data), expected)
    # the one zlib stream, its final block and Adler-32 trailer checked as libpng checks them
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    rows = zlib.decompress(idat)
    assert rows == b"".join(b"\x00" + expected[y].tobytes() for y in range(size[1]))


def test_a_marked_view_goes_as_its_whole_image_in_jpeg() -> None:
    from gge.models.markers import MarkerStyle, mark_view

    screen = Image.fromarray(np.random.default_rng(4).integers(0, 256, (60, 90, 3), dtype=np.uint8))
    view = mark_view(screen, [(40.0, 30.0)], MarkerStyle())
    urls = ImageUrls("jpeg", 85)
    assert _payload_of(urls.url(view)) == encode_jpeg(view.image(), 85)
    assert urls.url(view) == urls.url(view) and (urls.counts.encoded, urls.counts.reused) == (1, 2)


def _payload_of(url: str) -> bytes:
    return base64.b64decode(url.split(",", 1)[1])


def test_marked_views_reuse_the_screenshots_parts_and_decode_exactly() -> None:
    """A pointwise critic's K marked views: each PNG is its own pixels, its unchanged parts the base's."""
    from gge.models.markers import MarkerStyle, mark_view

    rng = np.random.default_rng(5)
    screen = Image.fromarray(rng.integers(0, 256, (160, 200, 3), dtype=np.uint8))
    urls = ImageUrls()
    views = [mark_view(screen, [(20.0 + 30 * i, 15.0 + 25 * i)], MarkerStyle()) for i in range(5)]
    payloads = [_payload_of(urls.url(v)) for v in views]
    for view, data in zip(views, payloads, strict=True):
        assert np.array_equal(_decoded(data), np.asarray(view.image()))
    assert urls.counts.encoded == 5
    # the first view's marker is drawn near the top: the screenshot's bottom part goes in as it was
    # compressed for the screenshot, and the part under the marker does not
    from gge.models.encoding import _parts

    parts = _parts(np.asarray(screen))
    assert parts[-1].data in payloads[0] and parts[0].data not in payloads[0]
