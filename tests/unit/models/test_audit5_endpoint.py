"""The endpoint backend's rules the audit found unpinned (audit-5 WN07, WN08, OA02-OA17, OH, OR, EN).

A scripted chat-completions server on 127.0.0.1 answers each request by its prompt, from a script of
replies (a status, a body, headers, and what must have arrived before it answers); no test sleeps or
asserts on seconds: a wait on the server is for other requests to arrive, and a retry that would wait
is cut short by cancelling the backend once its delay is logged.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from gge.errors import GgeError, TransientError
from gge.models import openai_api, openai_requests
from gge.models.base import GenerationRequest
from gge.models.encoding import ImageUrls
from gge.models.openai_api import OpenAIBackend
from gge.models.openai_http import (
    MAX_DELAY_S,
    is_loopback,
    request_body,
    retry_after,
    server_message,
    truncate,
)
from gge.models.openai_reading import WINDOW_KEY, MalformedAnswer, message_text, request_cost, with_prefill
from gge.models.window import RequestWindow

WAIT_S = 10.0
"""The most a scripted reply waits for other requests (a safety net: on the code it never waits that long)."""

MODEL = "m"


@dataclass
class Reply:
    """One scripted answer: ``status`` and ``body`` (None: a completion of ``text``) once ``after`` holds.

    ``after`` is asked about the prompts arrived so far (this one's included).
    """

    status: int = 200
    text: str = "(5, 6)"
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    after: Callable[[list[str]], bool] | None = None
    logprobs: Any = None
    drop: bool = False  # close the connection without an answer (a connection error)


def _completion(text: str, logprobs: Any = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}}
    choice["finish_reason"] = "stop"
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return {"id": "x", "choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 3}}


class Server(ThreadingHTTPServer):
    """Answers each request by its prompt (the last text part): the next of ``script[prompt]``, else 200."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: dict[str, list[Reply]] = {}
        self.arrived: list[str] = []
        self.changed = threading.Condition()
        self.release = threading.Event()  # set at teardown: every wait ends

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_reply(self, prompt: str) -> Reply:
        with self.changed:
            self.arrived.append(prompt)
            self.changed.notify_all()
            replies = self.script.get(prompt, [])
            reply = replies.pop(0) if replies else Reply()
        if reply.after is not None:
            after = reply.after
            with self.changed:
                self.changed.wait_for(lambda: after(self.arrived) or self.release.is_set(), WAIT_S)
        return reply


class _Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
        texts = [p["text"] for p in parts if p["type"] == "text"]
        reply = self.server.next_reply(texts[-1] if texts else "")
        if reply.drop:
            self.close_connection = True
            return
        payload = reply.body if reply.body is not None else _completion(reply.text, reply.logprobs)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    with srv.changed:
        srv.release.set()
        srv.changed.notify_all()
    srv.shutdown()
    srv.server_close()
    thread.join(WAIT_S)


def _backend(url: str, **kwargs: Any) -> OpenAIBackend:
    kwargs.setdefault("backoff_s", 0.0)
    kwargs.setdefault("timeout_s", 30.0)
    return OpenAIBackend(url, MODEL, api_key_env="GGE_TEST_AUDIT5_NO_KEY", **kwargs)


def _request(prompt: str = "click", **fields: Any) -> GenerationRequest:
    image = Image.new("RGB", (8, 8), (200, 10, 10))
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
    return GenerationRequest(image, messages, **fields)


def _error(status: int) -> Reply:
    return Reply(status, body={"error": {"message": f"status {status}"}})


# -- OA02: which statuses are signs of load ----------------------------------------------------------


@pytest.mark.parametrize(("status", "overload"), [(429, True), (503, True), (504, True), (500, False)])
def test_429_503_and_504_shrink_an_adaptive_window_500_does_not(
    server: Server, status: int, overload: bool
) -> None:
    server.script["click"] = [_error(status)]
    backend = _backend(server.url)  # adaptive, starting at 64; the request alone: a counted retry
    [gen] = backend.generate([_request()])
    assert gen.texts == ["(5, 6)"]
    summary = backend.window_summary()
    final = 32 if overload else 64  # halved from where an adaptive window starts, or left there
    assert (summary["overloads"], summary["final"], summary["sent"]) == (int(overload), final, 2)
    assert backend.settings()["usage"]["retries"] == 1


# -- OA03-OA05: the window-owned retry ---------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 503])
def test_a_busy_answer_beside_other_requests_is_retried_without_counting(server: Server, status: int) -> None:
    server.script["click"] = [_error(status)]
    backend = _backend(server.url, max_retries=0)
    held = backend.window.acquire()  # another request in flight beside it
    assert held is not None
    try:
        [gen] = backend.generate([_request()])
    finally:
        backend.window.release(held, "ok")
    assert gen.texts == ["(5, 6)"] and server.arrived == ["click", "click"]
    assert backend.window_summary()["final"] == 32  # the window shrank for it instead


@pytest.mark.parametrize("status", [500, 502, 504])
def test_a_failure_that_is_not_busy_counts_beside_other_requests(server: Server, status: int) -> None:
    server.script["click"] = [_error(status)]
    backend = _backend(server.url, max_retries=0)
    held = backend.window.acquire()
    assert held is not None
    try:
        with pytest.raises(TransientError, match=rf"HTTP {status}: status {status} \(after 0 retries\)$"):
            backend.generate([_request()])
    finally:
        backend.window.release(held, "ok")
    assert server.arrived == ["click"]


def test_a_connection_error_beside_other_requests_counts_and_does_not_shrink_the_window(
    server: Server,
) -> None:
    server.script["click"] = [Reply(drop=True)]
    backend = _backend(server.url, max_retries=0)
    held = backend.window.acquire()
    assert held is not None
    try:
        with pytest.raises(TransientError, match=r": connection error: .* \(after 0 retries\)$"):
            backend.generate([_request()])
    finally:
        backend.window.release(held, "ok")
    summary = backend.window_summary()
    assert (summary["overloads"], summary["final"]) == (0, 64)  # not a sign of load


@pytest.mark.parametrize("concurrency", [None, 4])
def test_a_busy_answer_counts_for_a_request_alone_or_in_a_fixed_window(
    server: Server, concurrency: int | None
) -> None:
    server.script["click"] = [_error(429)]
    backend = _backend(server.url, max_retries=0, concurrency=concurrency)
    held = backend.window.acquire() if concurrency is not None else None  # beside another, but fixed
    try:
        with pytest.raises(TransientError, match=r"HTTP 429: status 429 \(after 0 retries\)$"):
            backend.generate([_request()])
    finally:
        if held is not None:
            backend.window.release(held, "ok")
    assert server.arrived == ["click"]


# -- OA06: the Retry-After cap -----------------------------------------------------------------------


class _CancelOnRetry(logging.Handler):
    """Keeps the retry messages and cancels the backend at the first: its wait ends at once."""

    def __init__(self, backend: OpenAIBackend) -> None:
        super().__init__(logging.INFO)
        self.backend = backend
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        self.backend.cancel()


class _FrozenMonotonic:
    """The backend's ``time`` with a monotonic clock that never moves (``perf_counter`` the real one).

    A retry's wait then ends only by being cut short (cancel); one that kept waiting would read the
    clock again and again: past ``most`` reads it fails the call instead of hanging.
    """

    perf_counter = staticmethod(time.perf_counter)

    def __init__(self, most: int = 10) -> None:
        self.reads = 0
        self.most = most

    def monotonic(self) -> float:
        self.reads += 1
        if self.reads > self.most:
            raise AssertionError("a cancelled retry kept waiting")
        return 500.0


def _first_retry_message(backend: OpenAIBackend, caplog: pytest.LogCaptureFixture) -> list[str]:
    caplog.set_level(logging.INFO, logger=openai_api.log.name)
    handler = _CancelOnRetry(backend)
    openai_api.log.addHandler(handler)
    try:
        with pytest.raises(GgeError, match="cancelled after another request failed"):
            backend.generate([_request()])
    finally:
        openai_api.log.removeHandler(handler)
    return handler.messages


@pytest.mark.parametrize(
    ("headers", "backoff_s", "delay"),
    [
        ({"Retry-After": "120"}, 0.0, "60.0"),  # the server's hour is cut to the cap
        ({"Retry-After": "7"}, 0.0, "7.0"),  # under the cap: the server's own
        ({}, 100.0, "60.0"),  # a long backoff is capped too
    ],
)
def test_a_retry_waits_at_most_max_delay_s(
    server: Server,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    headers: dict[str, str],
    backoff_s: float,
    delay: str,
) -> None:
    assert MAX_DELAY_S == 60.0
    server.script["click"] = [Reply(429, body={"error": {"message": "slow down"}}, headers=headers)]
    backend = _backend(server.url, backoff_s=backoff_s, max_retries=2)
    monkeypatch.setattr(openai_requests, "time", _FrozenMonotonic())  # the wait ends on the cancel alone
    messages = _first_retry_message(backend, caplog)
    assert messages == [f"POST {backend.url}: HTTP 429: slow down; retry 1/2 in {delay} s"]


def test_the_smallest_screenshot_is_sent_as_it_is() -> None:
    backend = OpenAIBackend("http://127.0.0.1:1/v1", MODEL)
    assert backend.seen_size(1, 1) == (1, 1)
    with pytest.raises(GgeError, match="image size must be positive, got 0x1"):
        backend.seen_size(0, 1)


# -- OA07: the ledger's window is the one the request went out under -------------------------------


def test_a_cost_records_the_window_its_request_was_sent_under(server: Server) -> None:
    # "slow" goes out at 64; "busy" is refused once "slow" is in flight (the window halves to 32),
    # and "slow" is answered only after busy's retry arrived
    server.script["busy"] = [Reply(429, body={}, after=lambda arrived: "slow" in arrived)]
    server.script["slow"] = [Reply(after=lambda arrived: arrived.count("busy") == 2)]
    backend = _backend(server.url)
    slow, busy = backend.generate([_request("slow"), _request("busy")])
    assert slow.cost is not None and busy.cost is not None
    assert (slow.cost.window, busy.cost.window) == (64, 32)
    assert backend.window_summary()["final"] == 32


# -- OA09: greedy_first with one sequence is the greedy request alone ------------------------------


def test_greedy_first_with_one_sequence_is_one_greedy_request_in_one_part(server: Server) -> None:
    backend = _backend(server.url, concurrency=2)
    request = _request(num_sequences=1, do_sample=True, temperature=0.7, greedy_first=True)
    [gen] = backend.generate([request])
    assert gen.texts == ["(5, 6)"] and server.arrived == ["click"]
    assert gen.part_costs == ()  # one part: its cost is the request's, not split
    assert backend.settings()["usage"]["requests"] == 1


# -- OA14: a malformed answer to a prefilled request is not blamed on the prefill -------------------


def test_a_malformed_answer_to_a_prefilled_request_is_not_blamed_on_the_prefill(server: Server) -> None:
    server.script["click"] = [Reply(body=b"[1, 2]")]
    backend = _backend(server.url, concurrency=1, max_retries=0)
    with pytest.raises(GgeError, match=r"malformed response, expected a JSON object, got '\[1, 2\]'") as err:
        backend.generate([_request(prefill="(")])
    assert "prefill" not in str(err.value) and server.arrived == ["click"]  # no probe without it


# -- OA17, OR05: P(yes) from log-probabilities -------------------------------------------------------


def _judge(server: Server, logprobs: Any) -> tuple[float, OpenAIBackend]:
    server.script["judge"] = [Reply(text="Yes", logprobs=logprobs)]
    backend = _backend(server.url, concurrency=1)
    [p] = backend.yes_probability([_request("judge")], "Yes", "No")
    return p, backend


def _top(*pairs: tuple[str, float]) -> dict[str, Any]:
    top = [{"token": t, "logprob": lp} for t, lp in pairs]
    return {"content": [{**top[0], "top_logprobs": top}]}


def test_yes_spellings_summing_past_one_read_as_one(server: Server) -> None:
    assert math.exp(-0.5) + math.exp(-0.6) > 1  # 1.155: tokens that read alike, each counted
    p, _ = _judge(server, _top(("Yes", -0.5), (" yes", -0.6)))
    assert p == 1.0


def test_yes_spellings_under_one_are_summed(server: Server) -> None:
    p, _ = _judge(server, _top(("No", -0.2), ("Yes", -2.0), (" yes", -3.0)))
    assert p == math.exp(-2.0) + math.exp(-3.0)


@pytest.mark.parametrize(("token", "expected"), [("Yes", math.exp(-0.25)), ("No", 0.0)])
def test_only_the_sampled_tokens_logprob_is_read_without_top_logprobs(
    server: Server, token: str, expected: float
) -> None:
    for content in (
        {"token": token, "logprob": -0.25},
        {"token": token, "logprob": -0.25, "top_logprobs": []},
    ):
        p, backend = _judge(server, {"content": [content]})
        assert p == expected and backend.logprobs == "available"


# -- OR04: a text answer that starts like the prefill is still prefixed ------------------------------


def test_a_text_answer_starting_with_the_prefills_characters_is_prefixed(server: Server) -> None:
    server.script["click"] = [Reply(text="(5, 6)")]
    [gen] = _backend(server.url, concurrency=1).generate([_request(prefill="(")])
    assert gen.texts == ["((5, 6)"]  # the server's text continues the prefill: the parser reads both
    assert with_prefill("<tool_call>\n{}", "<tool_call>") == "<tool_call>\n{}"  # parsed over both
    assert with_prefill("<tool_call>\n{}", "<tool") == "<tool_call>\n{}"
    assert with_prefill("5, 6)", "(") == "(5, 6)" and with_prefill("x", None) == "x"


# -- OR09: the largest window of a request's answers -------------------------------------------------


def test_a_request_answered_in_several_tries_records_the_largest_window() -> None:
    answers: list[dict[str, Any]] = [{WINDOW_KEY: 8, "choices": [{}]}, {WINDOW_KEY: 16, "choices": [{}]}]
    answers.append({"choices": [{}]})  # an answer without the note
    assert request_cost("propose", answers, 1.0).window == 16
    assert request_cost("propose", answers[::-1], 1.0).window == 16
    assert request_cost("propose", [{"choices": [{}]}], 1.0).window is None


@pytest.mark.parametrize("cached", [True, "5", 2.0])
def test_cached_tokens_that_are_not_an_integer_are_not_reported(cached: Any) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": cached}}
    cost = request_cost("propose", [{"usage": usage, "choices": [{}]}], 1.0)
    assert (cost.input_tokens, cost.output_tokens, cost.cached_tokens) == (10, 2, None)
    usage["prompt_tokens_details"] = {"cached_tokens": 4}
    assert request_cost("propose", [{"usage": usage, "choices": [{}]}], 1.0).cached_tokens == 4


# -- OH01-OH03: the HTTP helpers ---------------------------------------------------------------------


def test_a_retry_after_in_the_past_is_no_wait() -> None:
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after("-5") == 0.0 and retry_after("3") == 3.0
    assert retry_after("inf") is None and retry_after("soon") is None


def test_a_message_of_exactly_the_limit_is_not_cut() -> None:
    assert truncate("x" * 300) == "x" * 300
    assert truncate("x" * 301) == "x" * 300 + "..."
    assert truncate("a \n  b", limit=3) == "a b"


def test_localhost_and_loopback_addresses_are_this_machine() -> None:
    assert is_loopback("localhost") and is_loopback("127.0.0.1") and is_loopback("::1")
    assert not is_loopback("example.com") and not is_loopback("10.0.0.1") and not is_loopback(None)


def test_a_localhost_endpoint_is_not_reached_through_the_proxy(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = dead.server_address[1]
    dead.server_close()  # nothing listens there: a request through this proxy fails
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    url = server.url.replace("127.0.0.1", "localhost")
    [gen] = _backend(url, concurrency=1, max_retries=0).generate([_request()])
    assert gen.texts == ["(5, 6)"]


# -- WN07, WN08: the latency rule at its boundaries --------------------------------------------------


class FakeClock:
    """A clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _warm(window: RequestWindow, clock: FakeClock) -> None:
    """Eight answers of 1 s each, sent while the window was full: the baseline is 1 s."""
    for _ in range(8):
        ticket = window.acquire()
        assert ticket is not None
        clock.now += 1.0
        window.release(ticket, "ok")


def _answer_after(window: RequestWindow, clock: FakeClock, seconds: float) -> None:
    ticket = window.acquire()
    assert ticket is not None
    clock.now += seconds
    window.release(ticket, "ok")


@pytest.mark.parametrize(("seconds", "limit"), [(11.0, 10), (11.5, 9)])
def test_latency_exactly_twice_the_lowest_is_not_past_it(seconds: float, limit: int) -> None:
    clock = FakeClock()
    window = RequestWindow(10, adaptive=True, max_limit=10, latency_floor=1, clock=clock)
    _warm(window, clock)
    assert 0.9 * 1.0 + 0.1 * 11.0 == 2.0  # the smoothed latency after 11 s: exactly twice the lowest
    _answer_after(window, clock, seconds)
    assert window.limit == limit  # only latency past twice the lowest takes a tenth off


def test_at_its_latency_floor_the_latency_rule_leaves_the_next_overload_its_halving() -> None:
    clock = FakeClock()
    window = RequestWindow(adaptive=True, max_limit=8, clock=clock)  # starts at 8 = its floor = its max
    _warm(window, clock)
    earlier = window.acquire()  # sent before the slow answer comes
    assert earlier is not None
    _answer_after(window, clock, 100.0)  # queueing, but the window is at its floor: nothing to take off
    assert window.limit == 8
    window.release(earlier, "overload")
    summary = window.summary()
    assert (window.limit, summary["decreases"], summary["overloads"]) == (4, 1, 1)


# -- EN04, EN13: the encoding's file rule and quality range ------------------------------------------


def test_a_jpeg_with_bytes_after_its_end_marker_is_sent_as_it_is(tmp_path: Path) -> None:
    image = Image.new("RGB", (16, 8), (10, 120, 30))
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=90)
    data = buf.getvalue() + b"camera-tail!"  # 12 bytes after the end-of-image marker
    path = tmp_path / "s.jpg"
    path.write_bytes(data)
    urls = ImageUrls("jpeg")
    with Image.open(path) as im:
        decoded = im.convert("RGB")
    url = urls.url(decoded, str(path))
    assert (urls.counts.file_bytes, urls.counts.encoded) == (1, 0)
    assert url == "data:image/jpeg;base64," + base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize("quality", [1, 100])
def test_jpeg_quality_takes_1_to_100_inclusive(quality: int) -> None:
    assert ImageUrls("jpeg", quality).jpeg_quality == quality


@pytest.mark.parametrize("quality", [0, 101])
def test_jpeg_quality_outside_1_to_100_is_refused(quality: int) -> None:
    with pytest.raises(GgeError, match=rf"^model.jpeg_quality must be within 1-100, got {quality}$"):
        ImageUrls("jpeg", quality)


# -- encoding: the screenshot's parts made once, the recent files kept ------------------------------


def test_eight_judges_of_one_screenshot_at_once_compress_its_parts_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gge.models import encoding
    from gge.models.markers import MarkerStyle, mark_view

    calls: list[int] = []
    real = encoding._parts

    def slow_parts(pixels: Any) -> Any:
        calls.append(1)
        time.sleep(0.1)  # long enough for the other judges to arrive while it compresses
        return real(pixels)

    monkeypatch.setattr(encoding, "_parts", slow_parts)
    rng = np.random.default_rng(6)
    screen = Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8))
    views = [mark_view(screen, [(5.0 + 7 * i, 4.0 + 5 * i)], MarkerStyle()) for i in range(8)]
    urls = ImageUrls()
    barrier = threading.Barrier(8)
    got: dict[int, str] = {}

    def judge(i: int) -> None:
        barrier.wait(WAIT_S)
        got[i] = urls.url(views[i])

    threads = [threading.Thread(target=judge, args=(i,), daemon=True) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
        assert not thread.is_alive()
    assert calls == [1] and sorted(got) == list(range(8))
    for i, view in enumerate(views):
        with Image.open(io.BytesIO(base64.b64decode(got[i].split(",", 1)[1]))) as im:
            assert np.array_equal(np.asarray(im.convert("RGB")), np.asarray(view.image()))


def test_the_sixteen_most_recently_sent_files_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gge.models import encoding

    reads: list[str] = []
    real_open = open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(Path(file).stem)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(encoding, "open", counting_open, raising=False)
    names = ["a", *(f"b{i}" for i in range(1, 16)), "c"]
    for i, name in enumerate(names):
        Image.new("RGB", (8, 8), (i * 10, 0, 0)).save(tmp_path / f"{name}.png")
    urls = ImageUrls()
    kept: list[Image.Image] = []  # each request's own image object, alive to the end

    def send(name: str) -> None:
        kept.append(Image.new("RGB", (8, 8)))
        urls.url(kept[-1], str(tmp_path / f"{name}.png"))

    for name in names[:16]:  # a, b1..b15: sixteen files, each read
        send(name)
    send("a")  # sent again: the most recent now
    send("c")  # a seventeenth: the least recently sent (b1) is dropped, not a
    send("a")
    send("b1")
    assert reads == [*names[:16], "c", "b1"]
    assert urls.counts.file_bytes == 20


# -- from an unbiased mutant sample (seed 11) --------------------------------------------------------


def test_a_failure_cuts_short_another_requests_retry_wait(server: Server) -> None:
    """b is told to come back in 30 s; a then fails for good: b's wait ends at once, b is not sent again."""
    server.script["b"] = [Reply(429, body={"error": {"message": "busy"}}, headers={"Retry-After": "30"})]
    server.script["a"] = [
        Reply(400, body={"error": {"message": "bad"}}, after=lambda arrived: "b" in arrived)
    ]
    backend = _backend(server.url, concurrency=2)
    with pytest.raises(GgeError, match="HTTP 400"):
        backend.generate([_request("a"), _request("b")])
    assert sorted(server.arrived) == ["a", "b"]


def test_a_smart_resize_honours_min_pixels() -> None:
    """100x100 at factor 28: 112x112 by default; at least 200x200 px asked: scaled by 2, ceiled to 224."""
    assert OpenAIBackend("http://127.0.0.1:1/v1", MODEL, resize_factor=28).seen_size(100, 100) == (112, 112)
    backend = OpenAIBackend("http://127.0.0.1:1/v1", MODEL, resize_factor=28, min_pixels=200 * 200)
    assert backend.seen_size(100, 100) == (224, 224)


def test_a_servers_detail_is_its_message() -> None:
    """FastAPI-style servers (vLLM's errors among them) answer ``{"detail": ...}``."""
    assert server_message(b'{"detail": "Model not found"}') == "Model not found"
    assert server_message(b'{"error": {"message": "too long"}}') == "too long"
    assert server_message(b'{"error": {"code": 400}, "detail": "bad image"}') == "bad image"


def test_a_body_with_a_text_only_message_beside_an_image_is_sent_as_it_is() -> None:
    url = "data:image/png;base64," + base64.b64encode(b"\x89PNG tiny").decode()
    image = {"type": "image_url", "image_url": {"url": url}}
    body = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "answer with a point"},
            {"role": "user", "content": [image, {"type": "text", "text": "click OK"}]},
        ],
    }
    assert json.loads(request_body(body)) == body


def test_an_answer_without_content_reads_as_no_text() -> None:
    """A refusal or a tool call leaves ``content`` null: no text, not a malformed answer."""
    assert message_text({"content": None}) == ("", False)
    call = {"type": "function", "function": {"name": "click", "arguments": '{"x": 1}'}}
    text = '<tool_call>\n{"name": "click", "arguments": {"x": 1}}\n</tool_call>'
    assert message_text({"content": None, "tool_calls": [call]}) == (text, True)


def test_content_that_is_not_text_is_a_malformed_answer() -> None:
    with pytest.raises(MalformedAnswer, match=r"\.message\.content is not a string"):
        message_text({"content": [{"type": "text", "text": "(5, 6)"}]})


def test_a_body_without_messages_gains_none() -> None:
    body = {"model": MODEL, "prompt": "click OK"}
    assert json.loads(request_body(body)) == body


def test_the_latency_floor_is_the_one_asked_at_least_one_else_where_the_window_starts() -> None:
    """From an unbiased mutant sample (seed 37)."""
    assert RequestWindow(adaptive=True, latency_floor=4).latency_floor == 4
    assert RequestWindow(adaptive=True, latency_floor=0).latency_floor == 1
    window = RequestWindow(adaptive=True)
    assert window.latency_floor == window.start


def test_a_connection_that_times_out_is_a_sign_of_load(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From an unbiased mutant sample (seed 37): a timeout while connecting (urllib wraps it in a
    URLError) shrinks an adaptive window as a timeout while reading does."""
    real = urllib.request.OpenerDirector.open
    calls: list[int] = []

    def open_(self: urllib.request.OpenerDirector, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise urllib.error.URLError(TimeoutError("timed out"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", open_)
    backend = _backend(server.url)
    [gen] = backend.generate([_request()])
    summary = backend.window_summary()
    assert gen.texts == ["(5, 6)"] and (summary["overloads"], summary["final"]) == (1, 32)
