"""How the endpoint backend classifies what goes wrong, against a real HTTP server on loopback.

One request's failure (its retries spent, an HTTP 400/413/422, a malformed answer) is
:class:`~gge.errors.RequestFailed`; what every request would meet (a wrong URL, key or model name,
nothing listening) is a plain GgeError naming the option that fixes it. Also: the backend's
``status()`` and usage counters, ``get()``, who answered (the answers' ``model`` and
``system_fingerprint``), the model option ``model.server_wait_s``, and the request window's start
and ramp (a scripted clock, no wall time).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PIL import Image

from gge.errors import GgeError, RequestFailed
from gge.models.base import GenerationRequest
from gge.models.openai_api import OpenAIBackend
from gge.models.registry import build_policy
from gge.models.window import RequestWindow
from gge.run.settings import parse_args

MODEL = "served-m"
KEY_ENV = "GGE_TEST_ENDPOINT_FAILURES_KEY"

Reply = tuple[int, Any]
"""A scripted answer: HTTP status and body (a dict is sent as JSON, bytes as they are)."""


def completion(text: str = "(5, 6)", **extra: Any) -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2},
        **extra,
    }


class Server(ThreadingHTTPServer):
    """Answers each POST with the next scripted reply (then ``default``); logs every request it got."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.script: list[Reply] = []
        self.default: Reply = (200, completion())
        self.log: list[tuple[str, str, str | None]] = []  # (method, path, Authorization)
        self.get_reply: Reply = (200, {"object": "list", "data": [{"id": MODEL}]})
        self.route: Callable[[str], Reply | None] = lambda text: None  # a reply by prompt, before the script

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        del format, args

    def _send(self, reply: Reply) -> None:
        status, body = reply
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.log.append(("GET", self.path, self.headers.get("Authorization")))
        self._send(self.server.get_reply)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = next(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
        with self.server.lock:
            self.server.log.append(("POST", self.path, self.headers.get("Authorization")))
        routed = self.server.route(text)
        with self.server.lock:
            reply = routed or (self.server.script.pop(0) if self.server.script else self.server.default)
        self._send(reply)


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def backend(base_url: str, **kwargs: Any) -> OpenAIBackend:
    kwargs.setdefault("backoff_s", 0.0)
    kwargs.setdefault("timeout_s", 10.0)
    kwargs.setdefault("concurrency", 1)
    return OpenAIBackend(base_url, MODEL, api_key_env=KEY_ENV, **kwargs)


def request(text: str = "click OK") -> GenerationRequest:
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    return GenerationRequest(Image.new("RGB", (4, 3), (9, 9, 9)), messages)


def posts(srv: Server) -> int:
    return sum(method == "POST" for method, _, _ in srv.log)


# -- one request's failure -------------------------------------------------------------------------


def test_a_body_that_is_not_json_is_a_retried_try_not_an_overload(server: Server) -> None:
    server.script = [(200, b"<html>proxy error</html>"), (200, b"[1, 2]")]
    b = backend(server.root + "/v1", max_retries=5)
    [gen] = b.generate([request()])
    assert gen.texts == ["(5, 6)"]
    assert posts(server) == 3  # two garbled answers, then the good one
    usage = b.settings()["usage"]
    assert (usage["requests"], usage["retries"], usage["overloads"], usage["failed"]) == (1, 2, 0, 0)


def test_a_request_failing_past_its_retries_raises_request_failed_in_the_old_shape(server: Server) -> None:
    server.default = (500, {"error": {"message": "engine crashed"}})
    b = backend(server.root + "/v1", max_retries=2)
    with pytest.raises(RequestFailed) as e:
        b.generate([request()])
    url = server.root + "/v1/chat/completions"
    assert str(e.value) == f"POST {url} (model '{MODEL}'): HTTP 500: engine crashed (after 2 retries)"
    assert posts(server) == 3
    status = b.status()
    assert (status["requests"], status["retries"], status["overloads"], status["failed"]) == (0, 2, 0, 1)


def test_overloads_count_429_503_504_apart_from_other_failures(server: Server) -> None:
    busy = {"error": {"message": "busy"}}
    server.script = [(429, busy), (500, busy), (503, busy), (504, busy), (502, busy)]
    b = backend(server.root + "/v1", max_retries=5)
    b.generate([request()])
    assert posts(server) == 6
    usage = b.settings()["usage"]
    assert (usage["requests"], usage["retries"], usage["overloads"], usage["failed"]) == (1, 5, 3, 0)


@pytest.mark.parametrize("status", [400, 413, 422])
def test_a_refusal_of_one_request_is_that_requests_failure_at_once(server: Server, status: int) -> None:
    server.default = (status, {"error": {"message": "image too large"}})
    b = backend(server.root + "/v1", max_retries=5)
    with pytest.raises(RequestFailed, match=rf"\): HTTP {status}: image too large$"):
        b.generate([request()])
    assert posts(server) == 1
    assert b.status()["failed"] == 1


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"id": "x"}, "missing 'choices' list"),
        ({"choices": []}, "'choices' is empty"),
        (
            {"choices": [{"index": 0, "message": {"content": 5}}]},
            "choices[0].message.content is not a string",
        ),
    ],
)
def test_a_json_answer_without_usable_choices_fails_the_request(
    server: Server, body: dict[str, Any], needle: str
) -> None:
    server.default = (200, body)
    b = backend(server.root + "/v1", max_retries=5)
    with pytest.raises(RequestFailed) as e:
        b.generate([request()])
    assert needle in str(e.value)
    assert posts(server) == 1 and b.status()["failed"] == 1


def test_a_calls_failed_request_is_raised_as_itself_not_as_an_earlier_requests_cancellation(
    server: Server,
) -> None:
    """Request 0 waits out a retry when request 1 is refused: the call raises the refusal, not 0's cancel."""
    waiting = threading.Event()

    def route(text: str) -> Reply:
        if text == "a":
            waiting.set()
            return (500, {"error": {"message": "hiccup"}})  # retried after a long backoff: cut short
        waiting.wait(10)  # a safety net: "a" arrives at once
        return (422, {"error": {"message": "bad image"}})

    server.route = route
    b = backend(server.root + "/v1", concurrency=2, max_retries=5, backoff_s=30.0)
    with pytest.raises(RequestFailed, match=r"HTTP 422: bad image$"):
        b.generate([request("a"), request("b")])
    assert posts(server) == 2  # "a" was not sent again
    assert b.status()["failed"] == 1


# -- what every request would meet: a plain GgeError naming the fix ---------------------------------


def test_a_404_at_a_base_url_without_v1_says_to_end_it_in_v1(server: Server) -> None:
    server.default = (404, {"detail": "Not Found"})
    with pytest.raises(GgeError) as e:
        backend(server.root).generate([request()])
    assert not isinstance(e.value, RequestFailed)
    assert str(e.value) == (
        f"POST {server.root}/chat/completions (model '{MODEL}'): HTTP 404: Not Found; base_url should be "
        f"the API root ending in /v1 (e.g. {server.root}/v1): set model.base_url"
    )


def test_a_404_at_a_v1_base_url_says_the_path_or_model_is_not_served(server: Server) -> None:
    server.default = (404, {"detail": "Not Found"})
    with pytest.raises(GgeError) as e:
        backend(server.root + "/v1").generate([request()])
    assert not isinstance(e.value, RequestFailed)
    assert str(e.value).endswith(
        "HTTP 404: Not Found; the server serves no chat completions there, or not that model: check "
        "model.base_url (the API root) and model.api_model"
    )


@pytest.mark.parametrize("status", [400, 404])
def test_a_model_the_server_does_not_know_names_model_api_model(server: Server, status: int) -> None:
    server.default = (status, {"object": "error", "message": f"The model `{MODEL}` does not exist."})
    with pytest.raises(GgeError) as e:
        backend(server.root + "/v1").generate([request()])
    assert not isinstance(e.value, RequestFailed)
    assert "set model.api_model to one its GET /v1/models lists" in str(e.value)
    assert posts(server) == 1


def test_401_without_a_key_names_the_variable_to_set(server: Server) -> None:
    server.default = (401, {"error": {"message": "missing key"}})
    with pytest.raises(GgeError) as e:
        backend(server.root + "/v1").generate([request()])
    assert not isinstance(e.value, RequestFailed)
    assert str(e.value).endswith(
        f"HTTP 401: missing key; the server wants an API key: set the environment variable {KEY_ENV} "
        "(named by model.api_key_env)"
    )


def test_403_with_a_key_says_the_key_in_that_variable_was_refused(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-wrong-key-7")
    server.default = (403, {"error": {"message": "bad key sk-wrong-key-7"}})
    with pytest.raises(GgeError) as e:
        backend(server.root + "/v1").generate([request()])
    assert "sk-wrong-key-7" not in str(e.value)  # the server's echo of the key is redacted
    assert str(e.value).endswith(
        f"HTTP 403: bad key ***; the server refused the API key in the environment variable {KEY_ENV} "
        "(named by model.api_key_env): set it to a key the server takes"
    )


def test_nothing_listening_costs_one_retry_then_says_to_check_the_port() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    b = backend(f"http://127.0.0.1:{port}/v1", max_retries=5)
    with pytest.raises(GgeError) as e:
        b.generate([request()])
    assert str(e.value) == (
        f"nothing answers at http://127.0.0.1:{port}/v1 (connection refused): is the server up, and is "
        "base_url's port right?"
    )
    assert b.settings()["usage"]["retries"] == 1


# -- status, get, who answered ----------------------------------------------------------------------


def test_status_has_exactly_the_progress_lines_fields(server: Server) -> None:
    b = backend(server.root + "/v1", concurrency=3, server_wait_s=42.0)
    b.generate([request("a"), request("b")])
    assert b.status() == {
        "in_flight": 0,
        "limit": 3,
        "requests": 2,
        "retries": 0,
        "overloads": 0,
        "failed": 0,
        "unreachable_since": None,
        "server_wait_s": 42.0,
    }


def test_get_reads_paths_from_the_server_root_or_the_api_root_with_the_key(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-k")
    b = backend(server.root + "/v1")
    status, headers, body = b.get("/version")
    assert (status, headers["content-type"], json.loads(body)["data"]) == (
        200,
        "application/json",
        [{"id": MODEL}],
    )
    server.get_reply = (404, {"detail": "Not Found"})
    status, _, body = b.get("models")
    assert (status, json.loads(body)) == (404, {"detail": "Not Found"})  # returned, not raised
    assert server.log == [("GET", "/version", "Bearer sk-k"), ("GET", "/v1/models", "Bearer sk-k")]


def test_get_with_nothing_listening_names_the_url() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(GgeError) as e:
        backend(f"http://127.0.0.1:{port}/v1").get("models", timeout_s=5)
    assert str(e.value) == f"GET http://127.0.0.1:{port}/v1/models: nothing answers (connection refused)"


def test_the_answers_model_and_distinct_fingerprints_are_recorded(server: Server) -> None:
    prints = ["fp_a", "fp_a", "fp_b", None, "fp_c", "fp_d", "fp_e", "fp_b"]
    server.script = [
        (200, completion(model="org/ckpt-7b", **({} if p is None else {"system_fingerprint": p})))
        for p in prints
    ]
    b = backend(server.root + "/v1")
    for i in range(len(prints)):
        b.generate([request(str(i))])
    answers = b.settings()["answers"]
    assert answers["model"] == ["org/ckpt-7b"]
    assert answers["system_fingerprint"] == ["fp_a", "fp_b", "fp_c", "fp_d"]  # distinct, the first four


# -- the option -------------------------------------------------------------------------------------


OPENAI = ["model=openai_api", "model.base_url=http://127.0.0.1:9/v1", "model.api_model=served"]


@pytest.mark.parametrize(("args", "wait"), [([], 600.0), (["model.server_wait_s=45"], 45.0)])
def test_model_server_wait_s_reaches_the_backend_and_its_settings(args: list[str], wait: float) -> None:
    b = build_policy(parse_args([*OPENAI, *args])).backend  # type: ignore[attr-defined]
    assert b.server_wait_s == wait and b.settings()["server_wait_s"] == wait


def test_a_negative_server_wait_is_refused() -> None:
    with pytest.raises(GgeError, match=r"model.server_wait_s must be at least 0 seconds, got -1"):
        OpenAIBackend("http://127.0.0.1:9/v1", MODEL, server_wait_s=-1)


# -- the window's start and ramp (a scripted clock) -------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_start_at_moves_an_adaptive_windows_start_and_records_why() -> None:
    w = RequestWindow(adaptive=True, max_limit=16)
    assert (w.summary()["start"], w.summary()["start_reason"]) == (16, "default")
    w.start_at(1, "the server answered 4 requests one after another")
    assert w.limit == 1 and w.latency_floor == 1
    summary = w.summary()
    assert (summary["start"], summary["start_reason"]) == (
        1,
        "the server answered 4 requests one after another",
    )
    w.start_at(99, "clamped")
    assert w.limit == 16
    w.start_at(0, "clamped")
    assert w.limit == 1


def test_start_at_leaves_a_fixed_window_as_the_user_set_it() -> None:
    w = RequestWindow(4)
    w.start_at(1, "probe")
    assert (w.limit, w.summary()["start"], w.summary()["start_reason"]) == (4, 4, "model.concurrency")


def test_a_try_out_past_the_usual_timeout_in_slow_start_halves_the_window_once() -> None:
    clock = Clock()
    w = RequestWindow(8, adaptive=True, max_limit=64, clock=clock, stall_s=60.0)
    tickets = [w.acquire() for _ in range(8)]
    assert all(t is not None and t.ramp for t in tickets)  # sent in slow start: the longer timeout
    held = [t for t in tickets if t is not None]
    clock.now = 30.0
    w.release(held[7], "ok")  # sent with the window full: slow start grows it by one
    assert w.limit == 9
    clock.now = 60.5  # the six still out have waited past 60 s: the server queues them
    w.release(held[6], "ok")
    assert w.limit == 4  # 9 halved, floored: no more pile up while those six are answered
    for t in held[:6]:
        clock.now += 1.0
        w.release(t, "ok")  # their answers arrive: nothing thrown away, and no second halving
    after = w.acquire()
    assert after is not None and not after.ramp  # slow start is over: the usual timeout
    summary = w.summary()
    assert (summary["ramp_stalls"], summary["decreases"], summary["final"]) == (1, 1, 4)
    assert w.history == [(0.0, 8), (30.0, 9), (60.5, 4)]


def test_a_fixed_window_never_stalls() -> None:
    clock = Clock()
    w = RequestWindow(2, clock=clock, stall_s=1.0)
    t = w.acquire()
    assert t is not None and not t.ramp
    clock.now = 100.0
    assert w.acquire() is not None
    assert (w.limit, w.summary()["ramp_stalls"]) == (2, 0)


@pytest.mark.parametrize(("concurrency", "factor"), [(None, 4.0), (3, 1.0)])
def test_a_try_sent_during_slow_start_waits_four_timeouts(
    server: Server, concurrency: int | None, factor: float
) -> None:
    b = backend(server.root + "/v1", concurrency=concurrency, timeout_s=7.0)
    waits: list[float] = []
    send = b._transport.post_once

    def recorded(payload: bytes, timeout_s: float) -> dict[str, Any]:
        waits.append(timeout_s)
        return send(payload, timeout_s)

    b._transport.post_once = recorded  # type: ignore[method-assign]
    b.generate([request()])
    assert waits == [7.0 * factor]  # adaptive: sent in slow start; fixed: the usual timeout
