"""The OpenAI-compatible backend against a real HTTP server on loopback speaking chat completions."""

from __future__ import annotations

import base64
import io
import json
import logging
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PIL import Image

from gge.errors import GgeError, RequestFailed
from gge.geometry import smart_resize
from gge.models import openai_api
from gge.models.base import Backend, GenerationRequest
from gge.models.openai_api import OpenAIBackend

KEY_ENV = "GGE_TEST_OPENAI_KEY"
SECRET = "sk-gge-test-5ecret-DO-NOT-LEAK-42"
MODEL = "test-model"


class FakeServer:
    """A chat-completions server: validates each request, records it, answers by script.

    ``script`` holds the behaviours of successive calls; ``default`` applies once it is exhausted.
    """

    def __init__(self) -> None:
        self.script: list[str] = []
        self.default = "ok"
        self.answer: str | None = None
        self.expected_size: tuple[int, int] | None = None
        self.expected_mime = "image/png"
        self.hold_s = 10.0  # "hold" and "gate" answer after this long at the latest
        self.gate = 4  # "gate" answers once this many requests were in flight together
        self.release = threading.Event()  # set at teardown: held requests answer at once
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.in_flight = 0  # received and not yet answered
        self.max_in_flight = 0
        self.arrivals: list[tuple[float, int]] = []  # (monotonic time, requests in flight then)
        self.usage: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # usage of a request body
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def next_behaviour(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else self.default

    def validate(self, body: Any) -> list[str]:
        """What is wrong with a request body (empty when it is a valid chat-completions request)."""
        if not isinstance(body, dict):
            return ["body is not a JSON object"]
        bad = []
        if body.get("model") != MODEL:
            bad.append(f"model {body.get('model')!r}")
        n, temperature, max_tokens = body.get("n"), body.get("temperature"), body.get("max_tokens")
        if not (isinstance(n, int) and n >= 1):
            bad.append(f"n {n!r}")
        if not (isinstance(temperature, int | float) and temperature >= 0):
            bad.append(f"temperature {temperature!r}")
        if not (isinstance(max_tokens, int) and max_tokens >= 1):
            bad.append(f"max_tokens {max_tokens!r}")
        messages = body.get("messages")
        if not (isinstance(messages, list) and messages):
            return [*bad, "no messages"]
        images = 0
        for m in messages:
            if m.get("role") not in ("system", "user", "assistant"):
                bad.append(f"role {m.get('role')!r}")
            content = m.get("content")
            if isinstance(content, str):
                continue
            for part in content:
                if part.get("type") == "text" and isinstance(part.get("text"), str):
                    continue
                if part.get("type") != "image_url":
                    bad.append(f"part {part!r:.60}")
                    continue
                images += 1
                url = part["image_url"]["url"]
                prefix = f"data:{self.expected_mime};base64,"
                if not url.startswith(prefix):
                    bad.append(f"image url {url[:40]!r}")
                    continue
                with Image.open(io.BytesIO(base64.b64decode(url[len(prefix) :], validate=True))) as im:
                    im.load()
                    if self.expected_size is not None and im.size != self.expected_size:
                        bad.append(f"image size {im.size}, expected {self.expected_size}")
        if images != 1:
            bad.append(f"{images} images")
        return bad


def _prompt(body: dict[str, Any]) -> str:
    """The last text part of the last user message."""
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    texts = [p["text"] for p in content if p.get("type") == "text"]
    return texts[-1] if texts else ""


def _completion(
    body: dict[str, Any], texts: list[str], logprobs: Any = None, usage: dict[str, Any] | None = None
) -> dict[str, Any]:
    choices = []
    for i, text in enumerate(texts):
        choice: dict[str, Any] = {"index": i, "message": {"role": "assistant", "content": text}}
        choice["finish_reason"] = "stop"
        if logprobs is not None:
            choice["logprobs"] = logprobs
        choices.append(choice)
    choices.reverse()  # the client must order by index
    if usage is None:
        usage = {
            "prompt_tokens": 10,
            "completion_tokens": 3 * len(texts),
            "total_tokens": 10 + 3 * len(texts),
        }
    return {
        "id": "x",
        "object": "chat.completion",
        "model": body["model"],
        "choices": choices,
        "usage": usage,
    }


def _yes_logprobs(p: float) -> dict[str, Any]:
    """First-token top log-probabilities with P(yes) = p, split over two spellings of yes."""
    top = [{"token": "No", "logprob": math.log(1 - p) if p < 1 else -50.0}]
    if p > 0:
        top += [
            {"token": "Yes", "logprob": math.log(0.75 * p)},
            {"token": " yes", "logprob": math.log(0.25 * p)},
        ]
    top.append({"token": "Maybe", "logprob": -30.0})
    return {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _leave(self) -> None:
        """The request stops counting as in flight (once), before its answer is written."""
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        with fake.lock:
            if not getattr(self, "left", True):
                self.left = True
                fake.in_flight -= 1

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self._leave()  # the client cannot send its next request before reading this answer
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout)
            pass

    def do_POST(self) -> None:
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        with fake.lock:
            self.left = False
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            fake.arrivals.append((time.monotonic(), fake.in_flight))
            fake.changed.notify_all()
        try:
            self._handle(fake)
        finally:
            self._leave()

    def _handle(self, fake: FakeServer) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        body = json.loads(raw)
        with fake.lock:
            fake.bodies.append(body)
            fake.auth.append(self.headers.get("Authorization"))
        problems = fake.validate(body)
        if problems:
            with fake.lock:
                fake.problems.extend(problems)
            self._send(422, {"error": {"message": "; ".join(problems)}})
            return
        behaviour = fake.next_behaviour()
        n = body["n"]
        prompt = _prompt(body)
        texts = [fake.answer if fake.answer is not None else f"{prompt}#{i}" for i in range(n)]
        usage = fake.usage(body) if fake.usage is not None else None
        if behaviour == "429":
            self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": "0"})
        elif behaviour == "500":
            self._send(500, {"error": {"message": "boom, the server broke"}})
        elif behaviour == "400":
            auth = self.headers.get("Authorization")
            self._send(400, {"error": {"message": f"image too large (your header was {auth})"}})
        elif behaviour == "garbage":
            self._send(200, b"<html>not json</html>")
        elif behaviour == "nochoices":
            self._send(200, {"id": "x", "usage": {"prompt_tokens": 1}})
        elif behaviour == "nocontent":
            self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant"}}]})
        elif behaviour == "one_choice":
            self._send(200, _completion(body, texts[:1], usage=usage))
        elif behaviour in ("logprobs", "nologprobs"):
            p = float(re.findall(r"p=([\d.]+)", prompt)[0])
            if behaviour == "logprobs":
                assert body["logprobs"] is True and body["top_logprobs"] == 20
                answer = ["No" if p < 0.5 else "Yes"]
                self._send(200, _completion(body, answer, _yes_logprobs(p), usage))
            else:
                self._send(200, _completion(body, [" yes." if p > 0.5 else "No"], usage=usage))
        elif behaviour == "hold":  # answer late: long after any client timeout in these tests
            fake.release.wait(fake.hold_s)
            self._send(200, _completion(body, texts))
        elif behaviour == "gate":  # answer once `gate` requests were in flight together
            with fake.changed:
                fake.changed.wait_for(
                    lambda: fake.max_in_flight >= fake.gate or fake.release.is_set(), timeout=fake.hold_s
                )
            fake.release.wait(0.2)  # time for one request too many to show up, if the client sends it
            self._send(200, _completion(body, texts))
        elif behaviour == "slow":
            time.sleep(0.2)
            self._send(200, _completion(body, texts))
        else:
            self._send(200, _completion(body, texts, usage=usage))


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    fake.thread.start()
    yield fake
    with fake.changed:
        fake.release.set()
        fake.changed.notify_all()
    fake.httpd.shutdown()
    fake.httpd.server_close()
    fake.thread.join(timeout=5)
    assert not fake.problems, fake.problems


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def _backend(server: FakeServer, **kwargs: Any) -> OpenAIBackend:
    kwargs.setdefault("backoff_s", 0.01)
    kwargs.setdefault("timeout_s", 5.0)
    return OpenAIBackend(server.url, MODEL, api_key_env=KEY_ENV, **kwargs)


def _request(
    backend: OpenAIBackend, text: str = "click OK", size: tuple[int, int] = (64, 48), **kwargs: Any
) -> GenerationRequest:
    """A request as the policy builds it: the screenshot resized to what the backend's model sees."""
    seen = backend.seen_size(*size)
    image = Image.new("RGB", seen, (200, 30, 30))
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    return GenerationRequest(image, messages, **kwargs)


# -- requests and answers ------------------------------------------------------------------------


def test_generate_greedy_and_sampling(server: FakeServer) -> None:
    backend = _backend(server, max_pixels=1000, extra_body={"top_k": 5})
    assert isinstance(backend, Backend)
    server.expected_size = backend.seen_size(64, 48)
    assert server.expected_size == (36, 27)
    greedy = _request(backend, "first", max_new_tokens=40)
    system = {"role": "system", "content": [{"type": "text", "text": "You are a GUI agent."}]}
    sampled = _request(backend, "second", num_sequences=3, do_sample=True, temperature=0.7, top_p=0.9)
    sampled = GenerationRequest(
        sampled.image, [system, *sampled.messages], 3, True, 0.7, 0.9, sampled.max_new_tokens
    )
    a, b = backend.generate([greedy, sampled])
    assert a.texts == ["first#0"] and a.usage == {"prompt_tokens": 10, "completion_tokens": 3}
    assert b.texts == ["second#0", "second#1", "second#2"]
    assert b.usage == {"prompt_tokens": 10, "completion_tokens": 9}
    bodies = {_prompt(body): body for body in server.bodies}
    assert bodies["first"]["temperature"] == 0 and bodies["first"]["n"] == 1
    assert bodies["first"]["max_tokens"] == 40 and bodies["first"]["top_k"] == 5
    assert bodies["second"]["temperature"] == 0.7 and bodies["second"]["top_p"] == 0.9
    assert bodies["second"]["n"] == 3 and bodies["second"]["max_tokens"] == 128
    assert bodies["second"]["messages"][0] == {
        "role": "system",
        "content": [{"type": "text", "text": "You are a GUI agent."}],
    }
    assert len(server.bodies) == 2 and server.auth == [None, None]
    usage = backend.settings()["usage"]
    assert usage == {
        "prompt_tokens": 20,
        "completion_tokens": 12,
        "requests": 2,
        "retries": 0,
        "overloads": 0,
        "failed": 0,
        "outages": 0,
        "unreachable_s": 0.0,
    }
    assert backend.generate([]) == []


def test_greedy_first_and_prefill(server: FakeServer) -> None:
    backend = _backend(server)
    server.expected_size = backend.seen_size(64, 48)
    request = _request(backend, "third", num_sequences=3, do_sample=True, temperature=0.7, greedy_first=True)
    (g,) = backend.generate([request])
    assert g.texts == ["third#0", "third#0", "third#1"]  # the greedy answer, then 2 samples
    greedy, sampled = sorted(server.bodies, key=lambda b: b["n"])
    assert (greedy["n"], greedy["temperature"]) == (1, 0) and (sampled["n"], sampled["temperature"]) == (
        2,
        0.7,
    )
    assert greedy["messages"] == sampled["messages"]
    server.bodies.clear()
    (p,) = backend.generate([_request(backend, "fourth", prefill='{"coordinate": [')])
    assert p.texts == ['{"coordinate": [fourth#0']  # the prefill + what the server continued
    (body,) = server.bodies
    assert body["messages"][-1] == {"role": "assistant", "content": '{"coordinate": ['}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False


def test_screenshots_go_at_their_own_size_unless_asked(server: FakeServer) -> None:
    from gge.models.factory import load_preset

    assert load_preset("openai_api").get("max_pixels") is None  # the preset asks for no downscale
    assert _backend(server).seen_size(3840, 2160) == (3840, 2160)
    with pytest.warns(UserWarning, match=r"downscaled on the client before sending \(3840x2160 -> "):
        _backend(server, max_pixels=1_000_000).seen_size(3840, 2160)


def test_huge_screenshot_is_sent_downscaled(server: FakeServer) -> None:
    backend = _backend(server, max_pixels=50_000)
    with pytest.warns(UserWarning, match="downscaled on the client"):
        w, h = backend.seen_size(6016, 3384)
    assert w * h <= 50_000 and abs(w / h - 6016 / 3384) < 0.01
    server.expected_size = (w, h)
    (g,) = backend.generate([_request(backend, size=(6016, 3384))])
    assert g.texts == ["click OK#0"]


def test_jpeg_images(server: FakeServer) -> None:
    backend = _backend(server, image_format="jpeg")
    server.expected_mime = "image/jpeg"
    server.expected_size = (64, 48)
    req = _request(backend)
    rgba = GenerationRequest(req.image.convert("RGBA"), req.messages)
    assert backend.generate([rgba])[0].texts == ["click OK#0"]
    assert backend.settings()["image_format"] == "jpeg"


def test_a_request_with_marks_sends_the_marked_view_never_the_bare_screenshot(server: FakeServer) -> None:
    from gge.models.markers import MarkerStyle, draw_markers, mark_view

    backend = _backend(server)
    req = _request(backend)
    view = mark_view(req.image, [(20.0, 24.0)], MarkerStyle())
    marked = GenerationRequest(req.image, req.messages, marks=view)
    assert backend.generate([marked])[0].texts == ["click OK#0"]
    (part,) = [p for p in server.bodies[0]["messages"][-1]["content"] if p["type"] == "image_url"]
    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
    with Image.open(io.BytesIO(data)) as sent:
        pixels = sent.convert("RGB").tobytes()
    assert pixels == draw_markers(req.image, [(20.0, 24.0)], MarkerStyle()).tobytes() != req.image.tobytes()


def test_seen_size() -> None:
    def seen(w: int, h: int, **kwargs: Any) -> tuple[int, int]:
        return OpenAIBackend("http://127.0.0.1:1/v1", MODEL, **kwargs).seen_size(w, h)

    assert seen(6016, 3384) == (6016, 3384)  # no limit: as is
    assert seen(200, 100, max_pixels=1_000_000) == (200, 100)  # never upscaled
    for w, h, cap in ((6016, 3384, 1_000_000), (1920, 1080, 12_345), (3000, 7, 999), (7, 7, 1)):
        sw, sh = seen(w, h, max_pixels=cap)
        assert sw * sh <= cap and 1 <= sw <= w and 1 <= sh <= h
        assert sw * sh > cap * 0.95 or min(sw, sh) < 10  # as large as fits
    assert seen(1280, 720, resize_factor=28, max_pixels=10_000_000) == (1288, 728)
    assert seen(1280, 720, resize_factor=28) == (1288, 728)
    assert seen(6016, 3384, resize_factor=32, max_pixels=1_000_000, min_pixels=1024) == tuple(
        reversed(smart_resize(3384, 6016, factor=32, min_pixels=1024, max_pixels=1_000_000))
    )
    assert seen(10, 10, resize_factor=28) == (56, 56)  # the server upscales tiny images: mirror it


def test_policy_maps_abs_resized_answers_back(server: FakeServer) -> None:
    from gge.models.policy import AdapterSettings, GroundingPolicy
    from gge.types import Box, Sample

    backend = _backend(server, resize_factor=28)
    server.expected_size = (1288, 728)
    server.answer = "(644, 364)"
    policy = GroundingPolicy(
        backend, AdapterSettings(convention="abs_resized", proposer="greedy", critic="none")
    )
    sample = Sample("b", "0", "", (1280, 720), "click OK", Box(600, 300, 700, 400))
    (proposal,) = policy.propose([sample], [Image.new("RGB", (1280, 720))])
    assert [c.point for c in proposal.candidates] == [(640.0, 360.0)]


def test_bad_settings() -> None:
    for kwargs, needle in (
        ({"base_url": "127.0.0.1:8000/v1"}, "http(s) URL"),
        ({"concurrency": 0}, "concurrency"),
        ({"image_format": "gif"}, "png or jpeg"),
        ({"max_pixels": 0}, "max_pixels"),
        ({"timeout_s": 0}, "timeout_s"),
    ):
        args: dict[str, Any] = {"base_url": "http://127.0.0.1:8000/v1", "model": MODEL, **kwargs}
        with pytest.raises(GgeError, match=re.escape(needle)):
            OpenAIBackend(**args)


# -- retries, timeouts, errors -------------------------------------------------------------------


def test_429_honours_retry_after(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    backend = _backend(server, backoff_s=5.0)  # Retry-After: 0 replaces the 5 s backoff
    server.script = ["429"]
    with caplog.at_level(logging.WARNING, logger="gge.models.openai_api"):
        (g,) = backend.generate([_request(backend, "hello")])
    assert "HTTP 429" in caplog.text and "retry 1/5 in 0.0 s" in caplog.text
    (first, _), (second, _) = server.arrivals
    assert second - first < 5.0  # the retry did not wait out the backoff
    assert g.texts == ["hello#0"]
    assert len(server.bodies) == 2 and backend.settings()["usage"]["retries"] == 1
    assert backend.settings()["usage"]["requests"] == 1


def test_500_twice_then_success(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    backend = _backend(server)
    server.script = ["500", "500"]
    with caplog.at_level(logging.WARNING, logger="gge.models.openai_api"):
        (g,) = backend.generate([_request(backend, "again", num_sequences=2, do_sample=True)])
    assert g.texts == ["again#0", "again#1"]
    assert len(server.bodies) == 3 and backend.settings()["usage"]["retries"] == 2
    assert "HTTP 500" in caplog.text and "retry 2/5" in caplog.text


def test_timeout_then_success(server: FakeServer) -> None:
    backend = _backend(server, timeout_s=1.0)  # the retry's own answer well inside it on a loaded machine
    server.script = ["hold"]  # the first request is answered only at teardown
    (g,) = backend.generate([_request(backend, "late")])
    assert g.texts == ["late#0"] and len(server.bodies) == 2
    assert [n for _, n in server.arrivals] == [1, 2]  # retried while the first was still unanswered
    assert backend.settings()["usage"]["retries"] == 1


def test_always_timing_out_fails_after_max_retries(server: FakeServer) -> None:
    backend = _backend(server, timeout_s=0.2, max_retries=2)
    server.default = "hold"
    with pytest.raises(GgeError) as e:
        backend.generate([_request(backend)])
    assert [n for _, n in server.arrivals] == [1, 2, 3]  # each try given up while still unanswered
    msg = str(e.value)
    assert "timed out after 0.2 s" in msg and "after 2 retries" in msg and server.url in msg
    assert len(server.bodies) == 3


def test_500_forever_names_url_status_and_message(server: FakeServer) -> None:
    backend = _backend(server, max_retries=3)
    server.default = "500"
    with pytest.raises(GgeError) as e:
        backend.generate([_request(backend)])
    msg = str(e.value)
    assert f"{server.url}/chat/completions" in msg and "HTTP 500" in msg
    assert "boom, the server broke" in msg and "after 3 retries" in msg
    assert len(server.bodies) == 4 and backend.settings()["usage"]["retries"] == 3


def test_400_fails_at_once(server: FakeServer) -> None:
    backend = _backend(server)
    server.script = ["400"]
    with pytest.raises(GgeError, match=r"HTTP 400: image too large") as e:
        backend.generate([_request(backend)])
    assert "model 'test-model'" in str(e.value)
    assert len(server.bodies) == 1 and backend.settings()["usage"]["retries"] == 0


def test_nothing_listening_fails_fast_with_one_retry() -> None:
    """Before the server has answered once, a refused connection is a wrong URL: one retry, then a hint."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    backend = OpenAIBackend(f"http://127.0.0.1:{port}/v1", MODEL, max_retries=5, backoff_s=0.01)
    with pytest.raises(GgeError) as e:
        backend.generate([_request(backend)])
    assert str(e.value) == (
        f"nothing answers at http://127.0.0.1:{port}/v1 (connection refused): is the server up, and is "
        "base_url's port right?"
    )
    assert not isinstance(e.value, RequestFailed)  # every request would meet it: the run stops
    assert backend.settings()["usage"]["retries"] == 1


def test_a_body_that_is_not_json_is_retried_then_fails_the_request(server: FakeServer) -> None:
    backend = _backend(server, max_retries=2)
    server.default = "garbage"
    with pytest.raises(RequestFailed, match=r"malformed response, not JSON: .* \(after 2 retries\)$"):
        backend.generate([_request(backend)])
    assert len(server.bodies) == 3  # the try and its 2 retries
    usage = backend.settings()["usage"]
    assert (usage["retries"], usage["overloads"], usage["failed"]) == (2, 0, 1)


@pytest.mark.parametrize(
    ("behaviour", "needle"),
    [
        ("nochoices", "'choices'"),
        ("nocontent", "choices[0] has no 'message.content'"),
    ],
)
def test_malformed_answers(server: FakeServer, behaviour: str, needle: str) -> None:
    backend = _backend(server)
    server.default = behaviour
    with pytest.raises(RequestFailed, match=re.escape(needle)):
        backend.generate([_request(backend)])
    assert len(server.bodies) == 1  # not retried
    assert backend.status()["failed"] == 1


def test_server_ignoring_n_is_asked_again(server: FakeServer) -> None:
    backend = _backend(server)
    server.default = "one_choice"
    (g,) = backend.generate([_request(backend, "x", num_sequences=3, do_sample=True)])
    assert g.texts == ["x#0", "x#0", "x#0"] and [b["n"] for b in server.bodies] == [3, 2, 1]
    assert g.usage == {"prompt_tokens": 30, "completion_tokens": 9}


# -- the key -------------------------------------------------------------------------------------


def test_key_sent_as_bearer_and_never_leaked(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    backend = _backend(server, max_retries=1)
    backend.generate([_request(backend)])
    assert server.auth == [None]  # unset: no header
    monkeypatch.setenv(KEY_ENV, "")
    backend.generate([_request(backend)])
    assert server.auth == [None, None]  # empty: no header
    monkeypatch.setenv(KEY_ENV, SECRET)  # read at request time
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG):
        server.script = ["500"]
        backend.generate([_request(backend)])
        assert server.auth[-2:] == [f"Bearer {SECRET}"] * 2
        for behaviour in ("400", "500", "garbage"):  # the 400 answer echoes the Authorization header
            server.default = behaviour
            with pytest.raises(GgeError) as e:
                backend.generate([_request(backend)])
            texts += [str(e.value), repr(e.value), repr(e.value.__cause__), repr(e.value.__context__)]
    assert "your header was Bearer ***" in texts[0]
    texts += [json.dumps(backend.settings()), repr(backend.__dict__), caplog.text]
    assert backend.settings()["api_key_env"] == KEY_ENV
    for text in texts:
        assert SECRET not in text


# -- concurrency ---------------------------------------------------------------------------------


def test_bounded_concurrency_keeps_order(server: FakeServer) -> None:
    backend = _backend(server, concurrency=4)
    server.default = "gate"  # nothing is answered before 4 requests are in flight together
    server.hold_s = 3.0
    requests = [_request(backend, f"r{i}") for i in range(8)]
    out = backend.generate(requests)
    assert [g.texts for g in out] == [[f"r{i}#0"] for i in range(8)]
    assert server.max_in_flight == 4  # reached, never exceeded
    assert [n for _, n in server.arrivals[:4]] == [1, 2, 3, 4]
    assert backend.settings()["usage"]["requests"] == 8


def test_failure_stops_the_batch(server: FakeServer) -> None:
    backend = _backend(server, concurrency=2, max_retries=0)
    server.script = ["400"]
    server.default = "slow"
    with pytest.raises(GgeError, match="HTTP 400"):
        backend.generate([_request(backend, f"r{i}") for i in range(20)])
    assert len(server.bodies) < 20  # the rest were cancelled


# -- yes probability -----------------------------------------------------------------------------


def test_yes_probability_from_logprobs(server: FakeServer) -> None:
    backend = _backend(server)
    server.default = "logprobs"
    ps = [0.3, 0.9, 0.0, 1.0]
    requests = [_request(backend, f"Does it hit? p={p}", max_new_tokens=64) for p in ps]
    out = backend.yes_probability(requests, "Yes", "No")
    assert out == pytest.approx(ps, abs=1e-9)
    for body in server.bodies:
        assert body["max_tokens"] == 1 and body["temperature"] == 0 and body["n"] == 1
        assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert backend.settings()["logprobs"] == "available"


def test_yes_probability_without_logprobs_falls_back_to_text(server: FakeServer) -> None:
    backend = _backend(server)
    server.default = "nologprobs"
    assert backend.settings()["logprobs"] is None
    requests = [_request(backend, f"p={p}") for p in (0.2, 0.8, 0.6)]
    assert backend.yes_probability(requests, "Yes", "No") == [0.0, 1.0, 1.0]
    assert backend.settings()["logprobs"] == "unavailable"


# -- the cost ledger -----------------------------------------------------------------------------


def _reported(cached: int | None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Usage a server reports for a body: prompt 100 + its prompt's length, 7 per choice, cached."""

    def usage(body: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"prompt_tokens": 100 + len(_prompt(body)), "completion_tokens": 7 * body["n"]}
        if cached is not None:
            out["prompt_tokens_details"] = {"cached_tokens": cached}
        return out

    return usage


@pytest.mark.parametrize("cached", [64, None])
def test_costs_are_the_servers_usage(server: FakeServer, cached: int | None) -> None:
    backend = _backend(server, concurrency=2)
    server.usage = _reported(cached)
    plain = _request(backend, "plain")
    pair = _request(backend, "pair!", num_sequences=3, do_sample=True, greedy_first=True)
    a, b = backend.generate([plain, pair])
    assert a.cost is not None and b.cost is not None
    # one request: what the server said about it
    assert (a.cost.input_tokens, a.cost.output_tokens, a.cost.cached_tokens) == (105, 7, cached)
    # greedy-first: the greedy request (n=1) and the samples' (n=2), sent together, summed
    assert sorted(body["n"] for body in server.bodies if _prompt(body) == "pair!") == [1, 2]
    # the samples' request computed its prompt once for its 2 choices: counted twice, one copy cached
    shared = 105 if cached is None else 2 * cached + 105
    assert (b.cost.input_tokens, b.cost.output_tokens, b.cost.cached_tokens) == (315, 21, shared)
    assert b.cost.total_tokens == 105 + 105 - 2 * (cached or 0) + 21  # what the server computed
    # and each part apart, for the ledger: the greedy request answers slot 0, the samples' slots 1-2
    parts = [(c.slot, c.candidates, c.input_tokens, c.output_tokens, c.cached_tokens) for c in b.part_costs]
    assert parts == [(0, 1, 105, 7, cached), (1, 2, 210, 14, 105 + (cached or 0))]
    assert a.part_costs == ()  # one request, one part
    for g in (a, b):
        assert g.cost is not None
        assert (g.cost.stage, g.cost.image_tokens, g.cost.batch_size) == ("propose", None, 1)
    assert a.usage == {"prompt_tokens": 105, "completion_tokens": 7}  # kept as it was
    assert b.usage == {"prompt_tokens": 210, "completion_tokens": 21}
    # a server that ignores n: each follow-up request counted too
    server.default = "one_choice"
    (c,) = backend.generate([_request(backend, "x", num_sequences=3, do_sample=True)])
    assert [body["n"] for body in server.bodies if _prompt(body) == "x"] == [3, 2, 1]
    assert c.cost is not None and (c.cost.input_tokens, c.cost.output_tokens) == (3 * 101, 7 * (3 + 2 + 1))
    # no usage at all: unknown, never 0
    server.usage = lambda body: {}
    server.default = "ok"
    (d,) = backend.generate([plain])
    assert d.cost is not None and (d.cost.input_tokens, d.cost.output_tokens, d.cost.cached_tokens) == (
        None,
        None,
        None,
    )


@pytest.mark.parametrize("cached", [32, None])
def test_policy_ledger_carries_stages_and_slots(
    server: FakeServer, cached: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gge.models.policy import AdapterSettings, GroundingPolicy
    from gge.types import Box, Sample

    backend = _backend(server, concurrency=1)  # one request at a time: the clock's readings in order
    server.answer = "(30, 20)"
    server.usage = _reported(cached)
    settings = AdapterSettings(convention="abs_resized", proposer="sampling", k=3, critic="pointwise")
    policy = GroundingPolicy(backend, settings)
    sample = Sample("b", "0", "", (64, 48), "click OK", Box(0, 0, 63, 47))
    # the proposal: began 0, its greedy part 0 -> 1 s, its samples' part 1 -> 3 s, ended 3;
    # the three judgements: 5 -> 5.5, 6 -> 6.25, 7 -> 7.125
    clock = _ScriptedClock(0.0, 0.0, 1.0, 1.0, 3.0, 3.0, 5.0, 5.5, 6.0, 6.25, 7.0, 7.125)
    monkeypatch.setattr(openai_api, "time", clock)
    (pred,) = policy.predict_images([sample], [Image.new("RGB", (64, 48))])
    assert clock.readings == []
    judged = [body for body in server.bodies if body.get("logprobs")]
    proposed = [body for body in server.bodies if not body.get("logprobs")]
    assert [body["n"] for body in proposed] == [1, 2] and len(judged) == 3
    greedy, sampled, *judges = pred.costs
    # the greedy request answers slot 0, the samples' request slots 1-2: two records, each its own usage
    assert [(c.stage, c.slot, c.candidates, c.batch_size) for c in (greedy, sampled)] == [
        ("propose", 0, 1, 1),
        ("propose", 1, 2, 1),
    ]
    prompt = 100 + len(_prompt(proposed[0]))
    assert (greedy.input_tokens, sampled.input_tokens) == (prompt, 2 * prompt)  # once per answer served
    assert (greedy.output_tokens, sampled.output_tokens) == (7, 14)
    assert (greedy.cached_tokens, sampled.cached_tokens) == (cached, prompt + (cached or 0))
    assert [(c.stage, c.slot, c.candidates) for c in judges] == [("judge", j, 1) for j in range(3)]
    for cost in judges:
        assert (cost.input_tokens, cost.output_tokens) == (100 + len(_prompt(judged[0])), 7)
        assert cost.cached_tokens == cached and cost.image_tokens is None
    assert [c.seconds for c in pred.costs] == [1.0, 2.0, 0.5, 0.25, 0.125]
    assert sorted(len(_prompt(body)) for body in judged) == [len(_prompt(judged[0]))] * 3


class _ScriptedClock:
    """``time`` as gge.models.openai_api sees it, its ``perf_counter`` reading the next of ``readings``.

    Only that module's readings are scripted (the fake server and pytest keep the real clock).
    """

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def perf_counter(self) -> float:
        return self.readings.pop(0)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_each_request_s_seconds_are_its_own_time_on_a_scripted_clock(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _backend(server, concurrency=1)
    plain = _request(backend, "plain")
    pair = _request(backend, "pair!", num_sequences=3, do_sample=True, greedy_first=True)
    # plain: began 0, its one request 0.25 -> 1.75, ended 2; the pair: began 10, its greedy request
    # 10.5 -> 11.5, its samples' 11.5 -> 14, ended 14.5
    clock = _ScriptedClock(0.0, 0.25, 1.75, 2.0, 10.0, 10.5, 11.5, 11.5, 14.0, 14.5)
    monkeypatch.setattr(openai_api, "time", clock)
    a, b = backend.generate([plain, pair])
    assert a.cost is not None and b.cost is not None
    assert (a.cost.seconds, b.cost.seconds) == (2.0, 4.5)  # from its start to its end, waits included
    assert [(c.slot, c.candidates, c.seconds) for c in b.part_costs] == [(0, 1, 1.0), (1, 2, 2.5)]
    # the pointwise critic: each request timed on its own, recorded as a judgement
    server.default = "logprobs"
    clock.readings = [20.0, 20.5, 21.0, 22.0]
    probs, costs = backend.yes_probability_with_costs(
        [_request(backend, "p=0.3"), _request(backend, "p=0.9")], "Yes", "No"
    )
    assert probs == pytest.approx([0.3, 0.9], abs=1e-9)
    assert [(c.stage, c.seconds, c.slot, c.candidates) for c in costs] == [
        ("judge", 0.5, 0, 0),
        ("judge", 1.0, 0, 0),
    ]
    assert clock.readings == []


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "n": 2, "messages": [{"role": "user", "content": "plain"}]},
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": 'a NUL \u0000gge-0 and "quotes" \\ é'},
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD+/=="}},
                        {"type": "text", "text": "ünïcode \u0000gge-x-0"},
                        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                        {"type": "image_url", "image_url": {"url": 'data:odd"url\\'}},  # escaped as JSON
                    ],
                },
                {"role": "assistant", "content": "Point:"},
            ],
            "continue_final_message": True,
        },
    ],
)
def test_a_request_body_is_the_json_of_the_request(body: dict[str, Any]) -> None:
    """The bytes sent parse to the body (data URLs put in whole, everything else as JSON writes it)."""
    from gge.models.openai_http import request_body

    assert json.loads(request_body(body)) == body
