"""A server that goes away after answering is waited for, against a real server stopped and restarted.

The server listens on 127.0.0.1 and is stopped and started again on the same port. The backend's
clock and its wait between polls are the test's own: the wait between polls advances the clock by
what it was asked (and may start the server again), so no test waits for wall time. Counts come from
the server's own request log: nothing answered twice, nothing lost; one warning and one info line per
outage, whatever the number of requests waiting.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PIL import Image

from gge.errors import GgeError, RequestFailed, ServerGone
from gge.models.base import GenerationRequest
from gge.models.openai_api import OpenAIBackend
from gge.models.openai_requests import Cancelled

MODEL = "m"
LOGGER = "gge.models.openai_api"


class Restartable:
    """A chat-completions server on one port, stopped and started again; its log outlives each start.

    Each POST is answered with its prompt's text as the answer; ``log`` holds the prompt of every POST
    it answered, ``polls`` the paths of the GETs.
    """

    def __init__(self) -> None:
        self.log: list[str] = []
        self.polls: list[str] = []
        self.lock = threading.Lock()
        self.httpd: Any = None
        self.port = 0
        self.start()

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with outer.lock:
                    outer.polls.append(self.path)
                self._send(200, {"object": "list", "data": [{"id": MODEL}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = next(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
                with outer.lock:
                    outer.log.append(text)
                message = {"role": "assistant", "content": text}
                self._send(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.httpd = server

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()  # the port refuses connections from now on

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


class Time:
    """The backend's clock and its wait between polls: a wait advances the clock by what it asks.

    ``on_wait`` runs after each wait with the waits so far (it may start the server again).
    """

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start
        self.waits: list[float] = []
        self.on_wait: Any = lambda waits: None
        self.seen: list[dict[str, Any]] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        self.on_wait(self.waits)
        return False


def request(text: str) -> GenerationRequest:
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    return GenerationRequest(Image.new("RGB", (4, 3), (9, 9, 9)), messages)


@pytest.fixture
def server() -> Any:
    srv = Restartable()
    yield srv
    srv.stop()


def backend(srv: Restartable, t: Time, **kwargs: Any) -> OpenAIBackend:
    kwargs.setdefault("concurrency", 4)
    kwargs.setdefault("timeout_s", 10.0)
    kwargs.setdefault("backoff_s", 0.0)
    return OpenAIBackend(srv.url, MODEL, clock=t.clock, sleep=t.sleep, **kwargs)


def lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


def test_a_server_restarted_inside_the_wait_gets_every_request_once(
    server: Restartable, caplog: pytest.LogCaptureFixture
) -> None:
    t = Time()
    b = backend(server, t, server_wait_s=600.0)
    assert b.generate([request("first")])[0].texts == ["first"]  # it has answered once
    server.stop()
    went = t.now

    def on_wait(waits: list[float]) -> None:
        if len(waits) == 1:  # still away at the first poll: what a progress line reads meanwhile
            t.seen.append(dict(b.status()))
        if len(waits) == 2:
            server.start()  # back before the second poll

    t.on_wait = on_wait
    prompts = [f"p{i}" for i in range(10)]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        answers = b.generate([request(p) for p in prompts])
    assert [a.texts for a in answers] == [[p] for p in prompts]
    assert sorted(server.log) == sorted(
        ["first", *prompts]
    )  # each answered once: nothing twice, nothing lost
    assert t.waits == [1.0, 2.0]  # polled after 1 s (still away), then after 2 s more (back)
    assert server.polls == ["/v1/models"]  # the first poll met a closed port; the second one answered
    [status] = t.seen
    assert (status["unreachable_since"], status["server_wait_s"]) == (went, 600.0)
    [warning] = lines(caplog, logging.WARNING)  # one warning for the outage, not one per request
    assert warning.startswith("server unreachable since ") and "connection refused" in warning
    assert "waiting up to 600 s for it (model.server_wait_s)" in warning
    [info] = lines(caplog, logging.INFO)
    assert info.startswith("server back after 3 s; re-sending ")
    usage = b.settings()["usage"]
    assert (usage["requests"], usage["retries"], usage["failed"]) == (11, 0, 0)  # the wait spent no retry
    assert (usage["outages"], usage["unreachable_s"]) == (1, 3.0)
    assert b.status()["unreachable_since"] is None


def test_a_server_away_past_the_wait_raises_server_gone_for_every_request(
    server: Restartable, caplog: pytest.LogCaptureFixture
) -> None:
    t = Time()
    b = backend(server, t, server_wait_s=10.0)
    b.generate([request("first")])
    server.stop()
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(ServerGone) as e:
        b.generate([request(f"p{i}") for i in range(6)])
    assert str(e.value) == (
        f"the server at {server.url} stayed unreachable for 10 s, past model.server_wait_s=10 "
        "(connection error: connection refused)"
    )
    assert t.waits == [1.0, 2.0, 4.0, 3.0]  # 1, 2, 4, then the 3 s left of the 10 (not 8)
    assert server.log == ["first"]
    with pytest.raises(ServerGone):  # a later request is not sent into a wait of its own
        b.generate([request("later")])
    assert t.waits == [1.0, 2.0, 4.0, 3.0]
    assert len(lines(caplog, logging.WARNING)) == 1 and lines(caplog, logging.INFO) == []
    usage = b.settings()["usage"]
    assert (usage["outages"], usage["unreachable_s"], usage["retries"]) == (1, 10.0, 0)


def test_the_wait_between_polls_doubles_up_to_30_s(server: Restartable) -> None:
    t = Time()
    b = backend(server, t, server_wait_s=200.0, concurrency=1)
    b.generate([request("first")])
    server.stop()
    with pytest.raises(ServerGone):
        b.generate([request("p")])
    assert t.waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0, 30.0, 19.0]
    assert sum(t.waits) == 200.0


def test_two_outages_are_two_warnings_and_two_infos(
    server: Restartable, caplog: pytest.LogCaptureFixture
) -> None:
    t = Time()
    b = backend(server, t, concurrency=2)
    b.generate([request("first")])
    t.on_wait = lambda waits: server.start() if len(waits) in (1, 2) else None
    with caplog.at_level(logging.INFO, logger=LOGGER):
        server.stop()
        b.generate([request("a"), request("b")])
        server.stop()
        b.generate([request("c"), request("d")])
    assert sorted(server.log) == ["a", "b", "c", "d", "first"]
    assert len(lines(caplog, logging.WARNING)) == 2 and len(lines(caplog, logging.INFO)) == 2
    usage = b.settings()["usage"]
    assert (usage["outages"], usage["unreachable_s"]) == (2, 2.0)


def test_with_no_wait_a_server_gone_is_retried_then_server_gone(server: Restartable) -> None:
    t = Time()
    b = backend(server, t, server_wait_s=0.0, max_retries=2, concurrency=1)
    b.generate([request("first")])
    server.stop()
    with pytest.raises(ServerGone) as e:
        b.generate([request("p")])
    assert str(e.value).endswith(
        "connection error: connection refused (after 2 retries); model.server_wait_s=0: not waited for"
    )
    assert t.waits == [] and b.settings()["usage"]["retries"] == 2


def test_before_the_first_answer_a_closed_port_is_a_configuration_error_not_a_wait(
    server: Restartable,
) -> None:
    t = Time()
    b = backend(server, t, max_retries=5)
    server.stop()
    with pytest.raises(GgeError) as e:
        b.generate([request("p")])
    assert not isinstance(e.value, (RequestFailed, ServerGone))
    assert str(e.value).startswith(f"nothing answers at {server.url} (connection refused)")
    assert t.waits == [] and b.settings()["usage"]["retries"] == 1


def test_a_run_that_stops_ends_the_wait_and_the_polls(server: Restartable) -> None:
    """The real wait between polls (no injected one) ends when the run stops, not when it would poll."""
    b = OpenAIBackend(server.url, MODEL, concurrency=2, backoff_s=0.0, server_wait_s=600.0)
    b.generate([request("first")])
    server.stop()
    raised: list[BaseException] = []

    def run() -> None:
        try:
            b.generate([request("a"), request("b")])
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while b.status()["unreachable_since"] is None and thread.is_alive():
        threading.Event().wait(0.01)
    b.cancel()
    thread.join(60)  # a safety net: the wait would be 600 s
    assert not thread.is_alive()
    [error] = raised
    assert isinstance(error, Cancelled) and str(error).endswith("cancelled: the run is stopping")
    assert server.log == ["first"] and b.status()["unreachable_since"] is None
