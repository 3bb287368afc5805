"""A scripted chat-completions server on loopback whose answers depend on each request's content alone.

It answers a point from the prompt (greedy) or from the prompt, seed and choice (sampled), a ranking
from the prompt, a P(Yes) from the marked image, after a delay drawn from the request's content, so
requests finish out of the order they were sent; it records when each one arrived and was answered,
and can hold, refuse (429 above a capacity) or fail (HTTP 400 after some answers, all requests or
one sample's; ``broken_status`` to every proposer request ``broken`` picks, each time) requests.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from PIL import Image


def h(text: str) -> int:
    """A stable integer from a text."""
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)


class Scripted(ThreadingHTTPServer):
    """A chat-completions server whose answers depend on each request's content alone."""

    daemon_threads = True
    request_queue_size = 256  # a window's burst of connections is not reset by a short backlog

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        # per request: kind, key, arrived, replied (an answer's first byte not yet written), answered (its
        # last written), n, size, format, media (and what a hold or pair did)
        self.log: list[dict[str, Any]] = []
        self.in_flight = 0
        self.capacity: int | None = None  # above it: 429
        self.refused = 0
        self.slow_first = 0.0  # the first proposer request of ``slow_key`` is held (at most this long)
        self.release_on: Callable[[dict[str, Any]], bool] = lambda entry: False  # until a request like this
        self.slow_key = ""
        self.fail_after: int | None = None  # answers after which requests get HTTP 400 (all, or fail_key's)
        # with fail_key: only proposer requests with it fail, each once fail_after answers are in (waits 30 s)
        self.fail_key = ""
        self.held_key = ""  # proposer requests with it are held until ``unheld`` is set (120 s at most)
        self.unheld = threading.Event()
        self.answered = 0
        # a listwise critic's ranking of k markers from the request's text (default: drawn from the text)
        self.rank_order: Callable[[str, int], list[int]] | None = None
        self.delay_ms = 12
        self.pairs = False  # hold each proposer request until a second one with its prompt and image
        # proposer requests whose prompt text it picks get broken_status every time (logged, "failed": True)
        self.broken: Callable[[str], bool] = lambda text: False
        self.broken_status = 500
        self.seen: dict[str, int] = {}
        self.paired = threading.Condition(self.lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def _kind(body: dict[str, Any], text: str) -> str:
    if body.get("logprobs"):
        return "judge"
    if "Rank" in text:
        return "rank"
    return "propose"


class _Handler(BaseHTTPRequestHandler):
    server: Scripted

    def do_POST(self) -> None:
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        parts = body["messages"][-1]["content"]
        text = next(p["text"] for p in parts if p["type"] == "text")
        url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
        kind = _kind(body, text)
        arrived = time.monotonic()
        with srv.lock:
            first_propose = kind == "propose" and srv.slow_key in text
            first_propose = first_propose and not any(srv.slow_key in e["key"] for e in srv.log)
            entry = {"kind": kind, "key": text, "arrived": arrived, "answered": None, "n": body.get("n", 1)}
            sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))  # decoded once, read lazily
            entry["size"], entry["format"], entry["media"] = sent.size, sent.format, url.split(";", 1)[0]
            if srv.capacity is not None and srv.in_flight >= srv.capacity:
                srv.refused += 1
                refuse = True
            else:
                refuse = False
                srv.in_flight += 1
                srv.log.append(entry)
                srv.paired.notify_all()
            keyed = kind == "propose" and bool(srv.fail_key) and srv.fail_key in text
            failing = srv.fail_after is not None and srv.answered >= srv.fail_after and not srv.fail_key
            held = kind == "propose" and bool(srv.held_key) and srv.held_key in text
            broken = kind == "propose" and not refuse and srv.broken(text)
            if broken:
                entry["failed"] = True
        if refuse:
            self._send(429, {"error": {"message": "too many requests"}}, {"Retry-After": "0.02"})
            return
        if kind == "propose" and srv.pairs:
            with srv.paired:
                srv.seen[text + url] = srv.seen.get(text + url, 0) + 1
                srv.paired.notify_all()
                entry["together"] = srv.paired.wait_for(lambda: srv.seen[text + url] >= 2, timeout=5)
        if first_propose and srv.slow_first:
            with srv.paired:
                entry["released"] = srv.paired.wait_for(
                    lambda: any(srv.release_on(e) for e in srv.log),
                    timeout=srv.slow_first,
                )
        if keyed and srv.fail_after is not None:
            with srv.paired:
                srv.paired.wait_for(lambda: srv.answered >= (srv.fail_after or 0), timeout=30)
            failing = True
        if held:
            entry["held"] = srv.unheld.wait(120)
        try:
            time.sleep((2 + h(text + url) % 4) * srv.delay_ms / 1000)
            if failing:
                self._send(400, {"error": {"message": "the server broke"}})
                return
            if broken:
                message = {"error": {"message": f"HTTP {srv.broken_status} every time"}}
                self._send(srv.broken_status, message, {"Retry-After": "0"})  # retried at once
                return
            n = int(body.get("n", 1))
            greedy = body.get("temperature", 0) == 0
            if kind == "judge":
                p = (h(_pixels(sent)) % 97) / 100 + 0.01  # from what the model sees, not the file's bytes
                top = [{"token": "Yes", "logprob": _log(p)}, {"token": "No", "logprob": _log(1 - p)}]
                choices = [
                    {
                        "message": {"content": "Yes"},
                        "logprobs": {"content": [{"token": "Yes", "top_logprobs": top}]},
                    }
                ]
            elif kind == "rank":
                k = int(re.search(r"shows (\d+) numbered", text).group(1))  # type: ignore[union-attr]
                order = sorted(range(1, k + 1), key=lambda i: h(f"{text}{i}"))
                if srv.rank_order is not None:
                    order = srv.rank_order(text, k)
                choices = [{"message": {"content": ", ".join(map(str, order))}}]
            else:
                width, height = entry["size"]
                choices = []
                for i in range(n):
                    seed = h(text) if greedy else h(f"{text}|{body.get('seed')}|{i}")
                    choices.append({"message": {"content": f"({seed % width}, {(seed // width) % height})"}})
            for i, c in enumerate(choices):
                c["index"] = i
            usage = {"prompt_tokens": 50 + len(text) % 7, "completion_tokens": 4 * len(choices)}
            entry["replied"] = time.monotonic()  # before the answer is written: the client has none yet
            self._send(200, {"choices": choices, "usage": usage})
        finally:
            with srv.lock:
                srv.in_flight -= 1
                srv.answered += 1
                entry["answered"] = time.monotonic()
                srv.paired.notify_all()

    def _send(self, code: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def _pixels(image: Image.Image) -> str:
    """A digest of the pixels an image decodes to (two encodings of one image agree)."""
    return hashlib.sha256(image.convert("RGB").tobytes()).hexdigest() + str(image.size)


def _log(p: float) -> float:
    return math.log(max(p, 1e-9))


@contextmanager
def serving() -> Iterator[Scripted]:
    """A started :class:`Scripted` server, shut down afterwards."""
    srv = Scripted()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def demo_args(srv: Scripted, demo: str | Path, out: str | Path, samples: int, *more: str) -> list[str]:
    """``python eval.py`` arguments for an endpoint run of the demo ScreenSpot-v2 against ``srv``.

    Args:
        srv: The scripted server.
        demo: The demo suite's folder.
        out: The output folder.
        samples: ``max_samples``.
        more: Further ``key=value`` arguments.
    """
    return [
        f"data_root={demo}",
        "benchmarks=[screenspot_v2]",
        f"max_samples={samples}",
        f"output_dir={out}",
        "model=openai_api",
        f"model.base_url={srv.url}",
        "model.api_model=scripted",
        *more,
    ]
