"""A fake vLLM-like engine on 127.0.0.1 that counts each request's prompt tokens from the request itself.

It lists its models (``/v1/models``), tells its version (as vLLM's ``/version``), and answers each
chat request with ``usage.prompt_tokens`` counted from what it received: its text (one token per 4
bytes of the text parts, plus 2 vision markers) and its image as the engine would resize it with its
own ``max_pixels`` (Qwen's 28-pixel merged patches). It logs what it counted (and the request's
``max_tokens``), and serves requests one at a time (``serial``) or together; ``refuse_one_token``
answers HTTP 500 to a one-token request, as ``transformers serve`` does a Qwen tool call cut after
its first token; ``fail_after`` answers HTTP 500 to every chat request after that many;
``model_status`` lists each model with a ``status`` as ``transformers serve`` does; ``on_chat`` is
called with each chat request's count (a test's Ctrl-C). Its simulated time (:meth:`Engine.clock`)
makes the window probe's decision without a wall clock: each chat request takes ``sim_s`` simulated
seconds from the last time the clock was read (a serial engine: from when it is free, one after the
other), and the clock reads the end of the last one served. Used by the probe's tests.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image

from gge.geometry import smart_resize


class Engine(ThreadingHTTPServer):
    """A fake vLLM-like engine (see the module)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.served = ["qwen"]
        self.models_path = "/v1/models"
        self.version: str | None = "0.11.0"
        self.max_pixels = 12845056  # the engine's own limit
        self.choices_at_most: int | None = None  # an engine that ignores n
        self.logprobs = True
        self.delay_s = 0.0
        self.serial = False
        self.serving = threading.Lock()
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []  # per chat request: text tokens, image size, image tokens
        self.answer = "(10, 20)"  # the answer text of a proposer request
        self.refuse_one_token = False  # HTTP 500 to max_tokens=1 (transformers serve, a cut Qwen tool call)
        self.fail_after: int | None = None  # HTTP 500 to every chat request after this many
        self.model_status = False  # each listed model with transformers serve's "status" (loads on demand)
        self.on_chat: Callable[[int], None] | None = None  # called with each chat request's count
        self.sim_s = 0.0  # simulated seconds per chat request (see clock)
        self.sim_now = 0.0  # the end of the last request served, in simulated time
        self.sim_read = 0.0  # when the clock was last read: requests sent after it start there
        self.sim_free = 0.0  # when a serial engine is free again

    def clock(self) -> float:
        """Simulated seconds: the end of the last request served (the client sends its next ones now)."""
        with self.lock:
            self.sim_read = self.sim_now
            return self.sim_now

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Engine

    def do_GET(self) -> None:
        e = self.server
        if self.path == e.models_path:
            listed: list[dict[str, Any]] = [{"id": m, "owned_by": "vllm"} for m in e.served]
            if e.model_status:
                listed = [{**m, "status": {"value": "loaded"}} for m in listed]
            self._send(200, {"object": "list", "data": listed})
        elif self.path == "/version" and e.version:
            self._send(200, {"version": e.version})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        e = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text, size = "", (0, 0)
        for message in body["messages"]:
            parts = (
                message["content"]
                if isinstance(message["content"], list)
                else [{"type": "text", "text": message["content"]}]
            )
            for part in parts:
                if part["type"] == "text":
                    text += part["text"]
                else:
                    data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                    size = Image.open(io.BytesIO(data)).size
        h, w = smart_resize(size[1], size[0], factor=28, max_pixels=e.max_pixels)
        counted = {"text": len(text.encode()) // 4 + 2, "size": size, "image": (h // 28) * (w // 28)}
        counted["max_tokens"] = body.get("max_tokens")
        with e.lock:
            e.log.append(counted)
            arrived = len(e.log)
            start = max(e.sim_read, e.sim_free) if e.serial else e.sim_read
            if e.serial:
                e.sim_free = start + e.sim_s
            e.sim_now = max(e.sim_now, start + e.sim_s)
        if e.on_chat is not None:
            e.on_chat(arrived)
        failing = e.fail_after is not None and len(e.log) > e.fail_after
        if failing or (e.refuse_one_token and body.get("max_tokens") == 1):
            self._send(500, {"error": {"message": "json parser could not parse region as JSON."}})
            return
        if e.serial:
            with e.serving:
                time.sleep(e.delay_s)
        else:
            time.sleep(e.delay_s)
        n = int(body.get("n", 1))
        if e.choices_at_most is not None:
            n = min(n, e.choices_at_most)
        choice: dict[str, Any] = {"message": {"content": e.answer}, "finish_reason": "stop"}
        if body.get("logprobs") and e.logprobs:
            top = [{"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": -2.4}]
            choice = {
                "message": {"content": "Yes"},
                "logprobs": {"content": [{"token": "Yes", "top_logprobs": top}]},
            }
        self._send(
            200,
            {
                "model": "qwen",
                "system_fingerprint": "fp-1",
                "choices": [{**choice, "index": i} for i in range(n)],
                "usage": {"prompt_tokens": counted["text"] + counted["image"], "completion_tokens": 3},
            },
        )

    def _send(self, code: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def running() -> Iterator[Engine]:
    """An engine serving on a thread for the block."""
    e = Engine()
    thread = threading.Thread(target=e.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield e
    finally:
        e.shutdown()
        e.server_close()
