"""When a server that went away is back: the poll's rule, against real servers on loopback.

Any HTTP answer below 500 is a server that is up, and so is 501 (a server without a ``GET /v1/models``
route, such as a minimal OpenAI-compatible one, answers that); a 502, 503 or 504 is a proxy in front
of a server still away, or a server still loading; nothing listening is away.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gge.models.openai_transport import Transport


@contextmanager
def answering(status: int | None) -> Iterator[str]:
    """A server whose ``GET`` answers ``status`` (None: no GET route at all, Python's own 501)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    if status is not None:

        def do_GET(self: BaseHTTPRequestHandler) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        Handler.do_GET = do_GET  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def transport(url: str) -> Transport:
    return Transport(url, "m", "OPENAI_API_KEY", 5.0, 600.0)


@pytest.mark.parametrize(
    ("status", "back"),
    [
        *[(status, True) for status in (200, 401, 404, None)],
        *[(status, False) for status in (500, 502, 503, 504)],
    ],
)
def test_a_server_is_back_when_it_answers_anything_but_a_proxy_or_loading_error(
    status: int | None, back: bool
) -> None:
    with answering(status) as url:
        assert transport(url).poll() is back


def test_nothing_listening_is_not_back() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert transport(f"http://127.0.0.1:{port}/v1").poll() is False
