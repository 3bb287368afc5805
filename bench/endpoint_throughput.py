"""Does gge keep a serving engine full? ``python eval.py model=openai_api`` against a fake engine.

The engine is a local fake of a continuous-batching OpenAI-compatible server (``/v1/chat/completions``
on 127.0.0.1, served from threads of this process): ``C`` slots, at most ``C`` requests served at
once and the rest queued in arrival order; each request holds its slot ``L`` seconds (fixed, or drawn
from a lognormal of mean ``L`` with a seed). It answers like a served grounding model asked with the
``openai_api`` preset's prompts: a parseable ``(x, y)`` point (or ``k`` lines of them for the
single-pass request), ``n`` choices, a listwise ranking ``1, 2, 3, ...`` for the critic's ranking
request, ``Yes`` with ``logprobs.content[0].top_logprobs`` for a pointwise judge (``logprobs`` asked),
and a ``usage`` block. The record's target is written into its instruction (``[target nx ny WxH]``)
so that the answers hit. It logs every request: arrival (its headers read), start (a slot taken),
finish (the slot freed), sent (the answer written), the service time drawn, the body's bytes, and
each image's format and size read from the data URL's PNG or JPEG header (a body with any other
image is refused with HTTP 400).

The client is gge as a user runs it: ``python eval.py model=openai_api model.base_url=... benchmarks=[records]
bench.records.path=...`` in a subprocess (start-up measured), over a records file of ``--samples``
rows on a few screenshots reused across rows (UI screens drawn by :mod:`gge.benchmarks.demo.screens` at
1920x1080, 2560x1440 and 3840x2160, RGB, each with a photo-like panel so that a PNG costs what a real
screenshot's does), once per mode:

- ``greedy``: ``model.proposer=greedy model.critic=none k=1``;
- ``sampling``: ``model.proposer=sampling model.critic=none k=5``;
- ``sampling_pointwise``: ``model.proposer=sampling model.critic=pointwise k=5``;
- ``single_pass_listwise``: ``model.proposer=single_pass model.critic=listwise k=5``;
- ``refine_zoom``: ``model.proposer=greedy model.critic=none k=1 model.refine=zoom``.

Figures per mode and setting (from the engine's log, this process's clocks and ``getrusage``):

- ``limit``: the sum of the service times drawn / C, the least wall time any client could take;
- ``wall``: the subprocess's start to its exit; ``startup``: its start to the first request's
  arrival; ``tail``: the last answer sent to its exit;
- ``wall / limit`` and ``wall / (limit + startup + L)`` (target <= 1.1: a client that keeps the
  engine full from its first request to its last pays only its start-up and one request's latency);
- requests in flight (arrived, not yet answered): mean over the first arrival to the last answer
  (the sum of every request's time in flight / that span) and peak (target: mean >= 0.9 C); the
  slots busy on average the same way (the engine's own use);
- client CPU: the gge process tree's user + system seconds (read from ``/proc``, data-loader workers
  included) from the first request's arrival to the last answer, per request and per 1080p request
  (the CPU / the pixels sent in all images / 1920x1080), and per 4K request (/ 3840x2160);
- the rate: requests answered per second from the first request's arrival to the last answer;
- engine CPU: this process's user + system seconds during the run (the engine must not be the
  bottleneck), per request.

The runs come in four phases (``--phases``), each measuring the targets of issue 36 (a 64-slot
engine at 0.5 s is 128 requests/s: 13-18 H100s of 1080p grounding traffic):

- ``fill`` (``--settings``, the realistic mix of screens): wall / (limit + startup + L) <= 1.1 and
  mean in flight >= 0.9 C, for greedy and sampling at C=64, L=0.5 s, and for every mode at C=16,
  L=2 s. The marking modes (sampling + pointwise, single_pass + listwise, refine=zoom) are not run
  here at C >= 64: the ``cores`` phase runs them there;
- ``cores`` (``--cores-setting``, default C=128, L=0.25 s, 1080p records): each marking mode with the
  client pinned to one core (the engine's threads on the others, ``client_procs=1``), then to two
  (``client_procs=2``: a client process per core, :mod:`gge.run.client_procs`): the rate on 2 cores /
  the rate on 1 >= 1.8 (a 16-core client node then feeds 8 GPUs). The engine's limit there (512
  requests/s) is above 1.8x any marking mode's one-core rate (sampling + pointwise's is 100-120
  requests/s, which C=64, L=0.5 s, 128 requests/s, would cap at 1.07-1.28x whatever the client did).
  The walls on 2 cores are printed, not targets;
- ``cpu``: the client's CPU on one core per 1080p request <= 30 ms in every mode (1080p records;
  one core then feeds about 4 H100s of 1080p traffic) and per 4K request <= 120 ms (4K records).
  A marking mode's 1080p figure is its one-core run of the ``cores`` phase;
- ``short`` (``--short``): 216 greedy requests at C=32, L=1 s keep mean in flight >= 0.9 C from the
  first request to the last answer (the first wave goes out at once).

The client is pinned with ``os.sched_setaffinity`` in a small wrapper that then ``exec``s eval.py
(:data:`PIN`); where the machine has no core left over, the engine shares the client's (the line
says so: a 2-core machine's 2-core run has the engine's 2-5 ms of CPU per request on the same cores).

Lines with a target end in ``PASS`` or ``FAIL``; every ratio line starts with ``ratio:``; the end
lists every target again and counts those met. ``--json PATH`` writes every figure; ``--log-dir
DIR`` each run's request log (JSONL) and gge's output; ``--gge-root CHECKOUT`` runs another
checkout's ``eval.py`` (a BEFORE run of ``git archive <commit>``, or a committed tree while the
working one is being edited); ``--profile`` runs it with every thread under its own cProfile (merged;
wall seconds, so a thread's wait for the GIL shows as time in the function that waited).

    python bench/endpoint_throughput.py [--quick] [--phases fill,cores,cpu,short] [--samples 1000]
        [--samples-small 400] [--settings 64:0.5,16:2] [--cores-setting 128:0.25] [--samples-cores 300]
        [--samples-cpu 200] [--samples-4k 60] [--short 216:32:1] [--modes greedy,...]
        [--latency fixed|lognormal] [--sigma 0.5] [--gge-arg KEY=VALUE ...] [--gge-root CHECKOUT]
        [--profile] [--json PATH] [--log-dir DIR]

``--samples-small`` is the sample count for settings with C < 64 (their limit is long: 400 greedy
samples at C=16, L=2 s are 50 s). ``--quick`` is the smoke run: every phase at C=4, L=0.05 s on 12
samples (4 at 4K; the short run at C=3), whose figures check the arithmetic, not the targets. Exits
0 when a target is missed: it is a report. A full run (every mode, every phase) takes about 25
minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import json
import math
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODES: dict[str, tuple[str, ...]] = {
    "greedy": ("model.proposer=greedy", "model.critic=none", "k=1"),
    "sampling": ("model.proposer=sampling", "model.critic=none", "k=5"),
    "sampling_pointwise": ("model.proposer=sampling", "model.critic=pointwise", "k=5"),
    "single_pass_listwise": ("model.proposer=single_pass", "model.critic=listwise", "k=5"),
    "refine_zoom": ("model.proposer=greedy", "model.critic=none", "k=1", "model.refine=zoom"),
}
SCREENS: tuple[tuple[str, tuple[int, int], str, str, str, str], ...] = (
    # key, size, style, platform, profile, theme
    ("office_1080p", (1920, 1080), "desktop", "windows", "office", "light"),
    ("shop_1080p", (1920, 1080), "web", "linux", "w_shop", "light_green"),
    ("code_1440p", (2560, 1440), "desktop", "macos", "code", "dark"),
    ("graphics_4k", (3840, 2160), "desktop", "windows", "graphics", "light"),
)
RECORD_SETS: dict[str, tuple[str, ...]] = {
    "mix": tuple(s[0] for s in SCREENS),  # the realistic mix: the fill and short phases
    "1080p": ("office_1080p", "shop_1080p"),  # per 1080p request, on one core; the cores phase
    "4k": ("graphics_4k",),  # per 4K request, on one core
}
PIXELS_1080P = 1920 * 1080
PIXELS_4K = 3840 * 2160
MARKING = ("sampling_pointwise", "single_pass_listwise", "refine_zoom")
FILL_AT_FULL_C = ("greedy", "sampling")  # the wall and in-flight targets at C >= 64 are theirs alone
FULL_C = 64
TARGET_WALL = 1.1
TARGET_IN_FLIGHT = 0.9
TARGET_CPU_1080P_MS = 30.0  # one client core feeds about 4 H100s of 1080p traffic (~33 requests/s)
TARGET_CPU_4K_MS = 120.0
TARGET_SCALING = 1.8  # 2 cores' rate / 1 core's: a 16-core client node feeds 8 GPUs
MODEL_NAME = "fake-vl"
_TARGET_RE = re.compile(r"\[target ([0-9.]+) ([0-9.]+) (\d+)x(\d+)\]")
_K_RE = re.compile(r"Give (\d+) different candidate")
_RANK_RE = re.compile(r"shows (\d+) numbered")
_DATA_URL_RE = re.compile(r"data:(image/[a-z]+);base64,")


# --------------------------------------------------------------------------------------------------
# the fake engine


@dataclass
class Logged:
    """One request as the engine saw it (``perf_counter`` seconds of this process)."""

    arrival: float
    start: float
    finish: float
    sent: float
    service: float
    body_bytes: int
    kind: str
    n: int
    images: list[tuple[str, int, int]]
    status: int = 200
    target: str = ""  # the record's ``[target ...]`` tag in the request's text: whose request it is


def image_header(url: str) -> tuple[str, int, int]:
    """(format, width, height) of a base64 data URL, read from its PNG IHDR or JPEG SOF header.

    Raises:
        ValueError: Not a data URL, or neither a PNG nor a JPEG, or its header is unreadable.
    """
    m = _DATA_URL_RE.match(url)
    if not m:
        raise ValueError(f"not a base64 image data URL: {url[:40]!r}")
    payload = url[m.end() :]
    head = base64.b64decode(payload[:32])
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        if m.group(1) != "image/png":
            raise ValueError(f"PNG bytes sent as {m.group(1)}")
        return "png", int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    if head.startswith(b"\xff\xd8"):
        if m.group(1) != "image/jpeg":
            raise ValueError(f"JPEG bytes sent as {m.group(1)}")
        for data in (base64.b64decode(payload[:8192]), base64.b64decode(payload)):
            i = 2
            while i + 9 < len(data) and data[i] == 0xFF:
                marker, size = data[i + 1], int.from_bytes(data[i + 2 : i + 4], "big")
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a frame header
                    height = int.from_bytes(data[i + 5 : i + 7], "big")
                    return "jpeg", int.from_bytes(data[i + 7 : i + 9], "big"), height
                i += 2 + size
        raise ValueError("JPEG without a frame header")
    raise ValueError(f"image is neither PNG nor JPEG (starts {head[:8]!r})")


class FakeEngine:
    """A fake continuous-batching chat-completions server: ``slots`` at once, the rest queue.

    Args:
        slots: Requests served at once (C).
        latency: Seconds a request holds its slot (L), or the mean of the lognormal.
        sigma: The lognormal's sigma (0: every request takes exactly ``latency``).
        seed: Seeds the service times and the sampled answers.
    """

    def __init__(self, slots: int, latency: float, sigma: float = 0.0, seed: int = 0) -> None:
        self.slots = slots
        self.latency = latency
        self.sigma = sigma
        self._rng = random.Random(seed)  # service times
        self._answers = random.Random(seed + 1)
        self._sem = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self.log: list[Logged] = []
        self._server: ThreadingHTTPServer | None = None

    def draw(self) -> float:
        """One service time: ``latency``, or lognormal with mean ``latency``."""
        with self._lock:
            if self.sigma <= 0:
                return self.latency
            return self.latency * math.exp(self._rng.gauss(-(self.sigma**2) / 2, self.sigma))

    @contextlib.contextmanager
    def serving(self) -> Iterator[int]:
        """Serve on 127.0.0.1 (a free port, yielded) until the block ends."""
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                engine.handle(self)

            def do_GET(self) -> None:
                engine.handle_get(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 1024

        server = Server(("127.0.0.1", 0), Handler)
        self._server = server
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield int(server.server_address[1])
        finally:
            server.shutdown()
            server.server_close()
            thread.join()

    def handle_get(self, h: BaseHTTPRequestHandler) -> None:
        """``GET /v1/models`` lists the served model (what a client's probe asks first); else HTTP 404.

        Not logged: the log holds the chat requests, whose slots and images the figures count.
        """
        answer: dict[str, Any]
        if h.path.rstrip("/") == "/v1/models":
            status, answer = 200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]}
        else:
            status, answer = 404, {"error": {"message": f"not found: {h.path}"}}
        data = json.dumps(answer).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        """Read, queue for a slot, hold it the service time, answer; log the request."""
        arrival = time.perf_counter()
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length)
        status, answer, kind, n, target = 200, b"", "?", 1, ""
        images: list[tuple[str, int, int]] = []
        try:
            if h.path.rstrip("/") != "/v1/chat/completions":
                raise LookupError(h.path)
            body, text, images = self._read(raw)
            kind = "judge" if body.get("logprobs") else ("rank" if _RANK_RE.search(text) else "propose")
            n = int(body.get("n") or 1)
            tagged = _TARGET_RE.search(text)
            target = tagged.group(0) if tagged else ""
        except LookupError:
            status, answer = 404, b'{"error": {"message": "not found"}}'
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            status, answer = 400, json.dumps({"error": {"message": str(e)}}).encode()
        start = finish = service = time.perf_counter()
        service = 0.0
        if status == 200:
            with self._sem:
                start = time.perf_counter()
                service = self.draw()
                time.sleep(service)
                finish = time.perf_counter()
            answer = json.dumps(self._answer(body, text, images, kind, n)).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(answer)))
        h.end_headers()
        h.wfile.write(answer)
        h.wfile.flush()
        sent = time.perf_counter()
        entry = Logged(arrival, start, finish, sent, service, length, kind, n, images, status, target)
        with self._lock:
            self.log.append(entry)

    @staticmethod
    def _read(raw: bytes) -> tuple[dict[str, Any], str, list[tuple[str, int, int]]]:
        """The body, all the text of its messages, and each image's (format, width, height).

        The data URLs are cut out of the bytes before the JSON is parsed (their headers read
        first): parsing megabytes of base64 would make the engine, not gge, the bottleneck.
        """
        images: list[tuple[str, int, int]] = []
        pieces: list[bytes] = []
        at = 0
        while (i := raw.find(b'"data:', at)) >= 0:
            end = raw.find(b'"', i + 1)
            if end < 0:
                raise ValueError("unterminated string")
            images.append(image_header(raw[i + 1 : end].decode("ascii")))
            pieces += [raw[at : i + 1], b"image:%d" % (len(images) - 1)]
            at = end
        body = json.loads(b"".join([*pieces, raw[at:]]))
        texts: list[str] = []
        seen = 0
        for message in body["messages"]:
            content = message["content"]
            if isinstance(content, str):
                texts.append(content)
                continue
            for part in content:
                if part["type"] == "text":
                    texts.append(part["text"])
                elif part["type"] == "image_url":
                    if part["image_url"]["url"] != f"image:{seen}":
                        raise ValueError("an image_url that is not a data URL")
                    seen += 1
                else:
                    raise ValueError(f"unknown content part {part['type']!r}")
        if seen != len(images):
            raise ValueError("a data URL outside an image_url part")
        return body, "\n".join(texts), images

    def _answer(
        self, body: dict[str, Any], text: str, images: list[tuple[str, int, int]], kind: str, n: int
    ) -> dict[str, Any]:
        with self._lock:
            rng = random.Random(self._answers.random())
        sampled = float(body.get("temperature") or 0) > 0
        choices: list[dict[str, Any]] = []
        for i in range(n):
            logprobs: dict[str, Any] | None = None
            if kind == "judge":
                p = 0.05 + 0.9 * rng.random()
                content = "Yes" if p >= 0.5 else "No"
                top: list[dict[str, Any]] = [
                    {"token": "Yes", "logprob": math.log(p)},
                    {"token": "No", "logprob": math.log(1 - p)},
                ]
                logprobs = {
                    "content": [{"token": content, "logprob": math.log(max(p, 1 - p)), "top_logprobs": top}]
                }
            elif kind == "rank":
                m = _RANK_RE.search(text)
                content = ", ".join(str(j + 1) for j in range(int(m.group(1)) if m else 1))
            else:
                km = _K_RE.search(text)
                points = [
                    self._point(text, images, rng, sampled or j > 0)
                    for j in range(int(km.group(1)) if km else 1)
                ]
                content = "\n".join(f"({x}, {y})" for x, y in points)
            choice: dict[str, Any] = {
                "index": i,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
            if logprobs is not None:
                choice["logprobs"] = logprobs
            choices.append(choice)
        prompt_tokens = sum(w * h // (28 * 28) for _, w, h in images) + len(text) // 4
        completion = sum(len(c["message"]["content"]) // 3 + 1 for c in choices)
        return {
            "id": f"fake-{rng.getrandbits(48):x}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", MODEL_NAME),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
            },
        }

    @staticmethod
    def _point(
        text: str, images: list[tuple[str, int, int]], rng: random.Random, jitter: bool
    ) -> tuple[int, int]:
        """The target in the pixels of the image sent (a crop of it: its centre); jittered if sampled."""
        w, h = images[0][1:] if images else (1000, 1000)
        m = _TARGET_RE.search(text)
        if m and (int(m.group(3)), int(m.group(4))) == (w, h):
            x, y = float(m.group(1)) * w, float(m.group(2)) * h
        else:  # a crop (the refine stage), or no target written: its centre
            x, y = w / 2, h / 2
        if jitter:
            x, y = x + rng.gauss(0, 0.01 * w), y + rng.gauss(0, 0.01 * h)
        return min(max(round(x), 0), w - 1), min(max(round(y), 0), h - 1)


# --------------------------------------------------------------------------------------------------
# figures from a log


@dataclass
class Figures:
    """What one run of gge against the engine measured."""

    mode: str
    slots: int
    latency: float
    samples: int
    requests: int
    failed: int
    limit_s: float
    wall_s: float
    startup_s: float
    tail_s: float
    mean_in_flight: float
    peak_in_flight: int
    mean_busy: float
    client_cpu_s: float
    engine_cpu_s: float
    pixels_1080p: float
    body_mib: float
    kinds: dict[str, int] = field(default_factory=dict)
    formats: dict[str, int] = field(default_factory=dict)
    returncode: int = 0
    client_requests: int | None = None
    top1: float | None = None
    client_cpu_span_s: float = math.nan
    load: tuple[float, float] = (math.nan, math.nan)
    cpu_trace: list[tuple[float, float]] = field(default_factory=list)
    peak_rss_mib: float = math.nan  # gge's main process (VmHWM), sampled with its CPU
    probe_requests: int = 0  # gge's probe's requests before the run (in ``requests``, not in the run's)
    probe_s: float = 0.0  # the probe's first request's arrival to the run's first request's
    span_s: float = math.nan  # the first request's arrival to the last answer sent
    phase: str = "fill"
    records: str = "mix"  # the key of RECORD_SETS the run's records cycle over
    cores: int | None = None  # the client pinned to this many cores (None: not pinned)
    engine_cpus: str = "shared"  # the cores the engine's threads ran on, or "shared" (not pinned)

    @property
    def bound_s(self) -> float:
        """limit + startup + one L: what a client that keeps the engine full takes."""
        return self.limit_s + self.startup_s + self.latency

    @property
    def run_requests(self) -> int:
        """The run's own requests (the probe's left out)."""
        return self.requests - self.probe_requests

    @property
    def rate(self) -> float:
        """The run's requests answered per second from its first request's arrival to the last answer."""
        return self.run_requests / self.span_s if self.span_s > 0 else math.nan

    @property
    def label(self) -> str:
        """The run's name in file names (:func:`run_label`)."""
        return run_label(self.mode, self.slots, self.latency, self.records, self.cores, self.phase)

    @property
    def tag(self) -> str:
        """The run's name in printed lines."""
        tag = f"{self.mode} C={self.slots} L={self.latency:g}"
        if self.records != "mix":
            tag += f" {self.records}"
        if self.cores is not None:
            tag += f" on {self.cores} core{'s' if self.cores > 1 else ''}"
        return tag


def run_label(
    mode: str, slots: int, latency: float, records: str = "mix", cores: int | None = None, phase: str = "fill"
) -> str:
    """A run's name in file names: mode, C, L, then the records and the client's cores if not the
    default (``_short`` for the short run)."""
    base = f"{mode}_C{slots}_L{latency:g}"
    if phase == "short":
        return f"{base}_short"
    if records == "mix" and cores is None:
        return base
    return f"{base}_{records}_{cores or 'all'}core"


def in_flight(log: Sequence[Logged]) -> tuple[float, int, float]:
    """Mean and peak requests in flight (arrival to sent) and mean slots busy (start to finish).

    Means are over the first arrival to the last answer sent.
    """
    if not log:
        return 0.0, 0, 0.0
    span = max(e.sent for e in log) - min(e.arrival for e in log)
    events = sorted([(e.arrival, 1) for e in log] + [(e.sent, -1) for e in log], key=lambda t: (t[0], t[1]))
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    if span <= 0:
        return float(len(log)), peak, float(len(log))
    mean = sum(e.sent - e.arrival for e in log) / span
    busy = sum(e.finish - e.start for e in log) / span
    return mean, peak, busy


def probe_prefix(log: Sequence[Logged]) -> int:
    """How many requests at the head of ``log`` (ordered by arrival) gge's probe sent before the run.

    gge's probe (``gge/run/probe.py``) asks the server with the first record's requests, and has its
    answers, before the run sends any: its requests are the longest head of the log whose requests
    all carry one record's tag and were all answered before the next request arrived (0: no probe).
    """
    answered = -math.inf
    head = 0
    for k, e in enumerate(log[:-1]):
        if e.target != log[0].target:
            break
        answered = max(answered, e.sent)
        if answered <= log[k + 1].arrival:
            head = k + 1
    return head


def probe_requests_of(output_dir: Path) -> int | None:
    """The requests gge's probe had answered, as the run recorded them (results.json
    ``model.backend.probe.usage.requests``), or None where it wrote none."""
    path = output_dir / "results.json"
    if not path.exists():
        return None
    model = json.loads(path.read_text(encoding="utf-8")).get("model") or {}
    usage = ((model.get("backend") or {}).get("probe") or {}).get("usage") or {}
    requests = usage.get("requests")
    return requests if isinstance(requests, int) else None


def figures_of(
    mode: str,
    engine: FakeEngine,
    samples: int,
    began: float,
    ended: float,
    client_cpu: float,
    engine_cpu: float,
    returncode: int,
    probe: int | None = None,
) -> Figures:
    """The figures of one run from the engine's log and the run's clocks.

    The probe's requests are start-up: the limit, the requests in flight, the span and the pixels are
    the run's own requests'; ``requests`` counts them all (as gge does). The probe has its answers
    before the run sends anything, so its requests are the first ``probe`` to arrive: the count gge
    recorded (:func:`probe_requests_of`), else the head the log shows (:func:`probe_prefix`, which a
    run's first requests answered before the next arrived can lengthen).
    """
    served = sorted((e for e in engine.log if e.status == 200), key=lambda e: e.arrival)
    probe = probe_prefix(served) if probe is None else probe
    log = served[probe:]
    mean, peak, busy = in_flight(log)
    kinds: dict[str, int] = {}
    formats: dict[str, int] = {}
    for e in served:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
        for fmt, _, _ in e.images:
            formats[fmt] = formats.get(fmt, 0) + 1
    return Figures(
        mode=mode,
        slots=engine.slots,
        latency=engine.latency,
        samples=samples,
        requests=len(served),
        failed=len(engine.log) - len(served),
        probe_requests=probe,
        probe_s=(log[0].arrival - served[0].arrival) if probe and log else 0.0,
        limit_s=sum(e.service for e in log) / engine.slots if log else math.nan,
        wall_s=ended - began,
        startup_s=(min(e.arrival for e in log) - began) if log else math.nan,
        tail_s=(ended - max(e.sent for e in log)) if log else math.nan,
        span_s=(max(e.sent for e in log) - min(e.arrival for e in log)) if log else math.nan,
        mean_in_flight=mean,
        peak_in_flight=peak,
        mean_busy=busy,
        client_cpu_s=client_cpu,
        engine_cpu_s=engine_cpu,
        pixels_1080p=sum(w * h for e in log for _, w, h in e.images) / PIXELS_1080P,
        body_mib=sum(e.body_bytes for e in served) / 2**20,
        kinds=kinds,
        formats=formats,
        returncode=returncode,
    )


# --------------------------------------------------------------------------------------------------
# the data and the client


def write_records(folder: Path, samples: int, screens: Sequence[str] = RECORD_SETS["mix"]) -> Path:
    """``samples`` records cycling over the ``screens`` (keys of :data:`SCREENS`), written into ``folder``."""
    import numpy as np
    from PIL import Image

    from gge.benchmarks.demo.screens import ScreenSpec, render

    folder.mkdir(parents=True, exist_ok=True)
    targets: list[tuple[str, tuple[int, int], list[tuple[str, tuple[int, int, int, int]]]]] = []
    for s, (key, size, style, platform, profile, theme) in enumerate(SCREENS):
        if key not in screens:
            continue
        screen = render(ScreenSpec(key, style, platform, size, profile, theme), seed=7)
        image = screen.image.convert("RGB")
        w, h = size
        panel_box = (int(0.6 * w), int(0.5 * h), int(0.95 * w), int(0.9 * h))
        rng = np.random.default_rng(s)
        low = Image.fromarray((rng.random((9, 16, 3)) * 255).astype(np.uint8))
        pw, ph = panel_box[2] - panel_box[0], panel_box[3] - panel_box[1]
        panel = np.asarray(low.resize((pw, ph), Image.Resampling.BICUBIC)).astype(np.int16)
        panel = np.clip(panel + rng.normal(0, 5, panel.shape), 0, 255).astype(np.uint8)
        image.paste(Image.fromarray(panel), panel_box[:2])
        name = f"{key}.png"
        image.save(folder / name)
        kept = []
        for el in screen.elements:
            x1, y1, x2, y2 = (int(v) for v in el.box)
            if x2 < panel_box[0] or y2 < panel_box[1]:  # not under the photo panel
                kept.append((f"{el.label} {el.kind}", (x1, y1, x2, y2)))
        targets.append((name, size, kept))
    path = folder / "records.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(samples):
            name, (w, h), kept = targets[i % len(targets)]
            what, (x1, y1, x2, y2) = kept[(i // len(targets)) % len(kept)]
            cx, cy = (x1 + x2) / 2 / w, (y1 + y2) / 2 / h
            row = {
                "id": i,
                "image": name,
                "instruction": f"click the {what} [target {cx:.5f} {cy:.5f} {w}x{h}]",
                "bbox": [x1, y1, x2, y2],
                "box_format": "xyxy",
                "units": "pixels",
            }
            f.write(json.dumps(row) + "\n")
    return path


PROFILER = """
import cProfile, pstats, runpy, sys, threading
profiles = []
_run = threading.Thread.run
def run(self):
    p = cProfile.Profile()
    profiles.append(p)
    p.enable()
    try:
        _run(self)
    finally:
        p.disable()
threading.Thread.run = run
out, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
sys.path[0] = __import__("os").path.dirname(script)  # gge from the script's checkout, as python eval.py
main = cProfile.Profile()
profiles.append(main)
try:
    main.enable()
    runpy.run_path(script, run_name="__main__")
finally:
    main.disable()
    stats = pstats.Stats(profiles[0])
    for p in profiles[1:]:
        stats.add(p)
    stats.dump_stats(out)
"""
"""Runs eval.py with every thread under its own cProfile, the profiles merged into one file."""


def client_command(
    port: int,
    mode: str,
    records: Path,
    output_dir: Path,
    extra: Sequence[str],
    root: Path = ROOT,
    profile: Path | None = None,
) -> list[str]:
    """The command line a user types in the checkout ``root``, for one mode (``profile``: profiled)."""
    wrapper: list[str] = []
    if profile is not None:
        (profile.parent / "profiler.py").write_text(PROFILER, encoding="utf-8")
        wrapper = [str(profile.parent / "profiler.py"), str(profile)]
    return [
        sys.executable,
        *wrapper,
        str(root / "eval.py"),
        "model=openai_api",
        f"model.base_url=http://127.0.0.1:{port}/v1",
        f"model.api_model={MODEL_NAME}",
        "benchmarks=[records]",
        f"bench.records.path={records}",
        f"output_dir={output_dir}",
        *MODES[mode],
        *extra,
    ]


def client_view(output_dir: Path) -> tuple[int | None, float | None]:
    """gge's own request count (results.json ``model.usage.requests``) and Top-1, where written."""
    path = output_dir / "results.json"
    if not path.exists():
        return None, None
    doc = json.loads(path.read_text(encoding="utf-8"))

    def find(obj: Any, key: str) -> Any:
        if isinstance(obj, dict):
            if key in obj and isinstance(obj[key], dict) and "requests" in obj[key]:
                return obj[key]["requests"]
            for v in obj.values():
                got = find(v, key)
                if got is not None:
                    return got
        return None

    requests = find(doc.get("model", doc), "usage")
    top1 = None
    entry = (doc.get("benchmarks") or {}).get("records")
    if isinstance(entry, dict):
        for key in ("top1", "headline"):
            if isinstance(entry.get(key), int | float):
                top1 = float(entry[key])
                break
    return (int(requests) if isinstance(requests, int) else None), top1


def run_mode(
    engine: FakeEngine,
    port: int,
    mode: str,
    records: Path,
    samples: int,
    work: Path,
    extra: Sequence[str],
    timeout_s: float,
    root: Path = ROOT,
    profile: bool = False,
    *,
    phase: str = "fill",
    records_set: str = "mix",
    cores: int | None = None,
) -> Figures:
    """One gge run against the engine; its figures.

    ``cores``: the client runs pinned to the first ``cores`` of this process's allowed cores (its
    client processes too, with ``client_procs=cores`` unless ``extra`` sets it) and the engine's
    threads to the others where any are left.
    """
    label = run_label(mode, engine.slots, engine.latency, records_set, cores, phase)
    out = work / f"out_{label}"
    if cores is not None and not any(a.startswith("client_procs=") for a in extra):
        extra = [*extra, f"client_procs={cores}"]  # a client process per core (gge.run.client_procs)
    shutil.rmtree(out, ignore_errors=True)  # a fresh run each time, never a resumed one
    prof = work / f"{out.name}.prof" if profile else None
    cmd = client_command(port, mode, records, out, extra, root, prof)
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    engine_cpus = "shared"
    restore: set[int] | None = None
    if cores is not None:
        if not allowed or len(allowed) < cores:
            raise SystemExit(f"--cores: {cores} cores asked, {len(allowed)} allowed here")
        cmd = [sys.executable, "-c", PIN, ",".join(map(str, allowed[:cores])), *cmd]
        if allowed[cores:]:
            restore = set(allowed)
            pin_threads(set(allowed[cores:]))
            engine_cpus = ",".join(map(str, allowed[cores:]))
    engine.log = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with contextlib.ExitStack() as unpin, (work / f"{out.name}.log").open("wb") as console:
        if restore is not None:
            unpin.callback(pin_threads, restore)
        load0 = os.getloadavg()[0]
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self0 = resource.getrusage(resource.RUSAGE_SELF)
        began = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=console, stderr=subprocess.STDOUT, cwd=root, env=env)
        tree = TreeCpu(proc.pid)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        ended = time.perf_counter()
        tree.stop()
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self1 = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
    engine_cpu = (self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime)
    fig = figures_of(mode, engine, samples, began, ended, client_cpu, engine_cpu, rc, probe_requests_of(out))
    fig.phase, fig.records, fig.cores, fig.engine_cpus = phase, records_set, cores, engine_cpus
    fig.client_requests, fig.top1 = client_view(out)
    fig.load = (load0, os.getloadavg()[0])
    fig.peak_rss_mib = tree.peak_rss_kb / 1024 if tree.peak_rss_kb else math.nan
    if prof is not None and prof.exists():
        import io as _io
        import pstats

        text = _io.StringIO()
        stats = pstats.Stats(str(prof), stream=text)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(40)
        (work / f"{out.name}.prof.txt").write_text(text.getvalue(), encoding="utf-8")
        print(f"profile: {work / (out.name + '.prof.txt')} (every thread, merged; seconds are wall)")
    served = sorted((e for e in engine.log if e.status == 200), key=lambda e: e.arrival)[fig.probe_requests :]
    if served:
        first, last = min(e.arrival for e in served), max(e.sent for e in served)
        fig.client_cpu_span_s = tree.at(last) - tree.at(first)
        # the engine's own share of this process's CPU in that span is not separable; the whole run's is
    fig.cpu_trace = [(round(t - began, 3), round(c, 3)) for t, c in tree.samples]
    if rc != 0:
        tail = (work / f"{out.name}.log").read_text(encoding="utf-8", errors="replace")[-1500:]
        print(f"!! {mode}: gge exited {rc}:\n{tail}", flush=True)
    return fig


PIN = (
    "import os, sys; os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(',')}); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)
"""Runs argv[2:] pinned to the cores listed in argv[1] (the same process: its pid is the client's)."""


def pin_threads(cpus: set[int]) -> None:
    """Pins every thread of this process (the engine's) to ``cpus``; threads started later inherit it."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(tid), cpus)


class TreeCpu:
    """Samples a process tree's user + system CPU seconds (reaped children included) every ``every`` s.

    Read from ``/proc`` (Linux; elsewhere there are no samples and the span's CPU is unknown).
    """

    _TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self._pid = pid
        self.samples: list[tuple[float, float]] = []
        self.peak_rss_kb = 0  # the root process's VmHWM at the last sample that read it
        self._stop = threading.Event()
        self._every = every
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    @classmethod
    def _stat(cls, pid: str) -> tuple[int, float] | None:
        """(parent pid, utime + stime + cutime + cstime in seconds) of one process, or None."""
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
        ppid = int(fields[1])
        ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        return ppid, ticks / cls._TICK

    def _read(self) -> float | None:
        stats: dict[int, tuple[int, float]] = {}
        try:
            names = [n for n in os.listdir("/proc") if n.isdigit()]
        except OSError:
            return None
        for name in names:
            st = self._stat(name)
            if st is not None:
                stats[int(name)] = st
        if self._pid not in stats:
            return None
        try:
            status = Path(f"/proc/{self._pid}/status").read_text()
            hwm = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
            self.peak_rss_kb = max(self.peak_rss_kb, int(hwm.split()[1]))
        except (OSError, StopIteration, ValueError, IndexError):
            pass
        tree, frontier = {self._pid}, [self._pid]
        while frontier:
            parent = frontier.pop()
            for pid, (ppid, _) in stats.items():
                if ppid == parent and pid not in tree:
                    tree.add(pid)
                    frontier.append(pid)
        return sum(stats[pid][1] for pid in tree)

    def _loop(self) -> None:
        while not self._stop.is_set():
            now, cpu = time.perf_counter(), self._read()
            if cpu is not None:
                self.samples.append((now, cpu))
            self._stop.wait(self._every)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()

    def at(self, when: float) -> float:
        """CPU seconds at ``when``, interpolated between the samples around it."""
        pts = self.samples
        if not pts:
            return math.nan
        if when <= pts[0][0]:
            return pts[0][1]
        for (t0, c0), (t1, c1) in itertools.pairwise(pts):
            if t0 <= when <= t1:
                return c0 + (c1 - c0) * (when - t0) / (t1 - t0) if t1 > t0 else c1
        return pts[-1][1]


# --------------------------------------------------------------------------------------------------
# the report


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


@dataclass(frozen=True)
class Check:
    """One target: a measured figure against its bound (``at_most``: the figure must not exceed it)."""

    name: str
    value: float
    bound: float
    at_most: bool
    digits: int = 2

    @property
    def ok(self) -> bool:
        """Met (a figure that could not be measured, NaN, is not)."""
        return self.value <= self.bound if self.at_most else self.value >= self.bound

    def line(self) -> str:
        """``ratio: NAME = VALUE (target <= BOUND: PASS)``."""
        sign = "<=" if self.at_most else ">="
        value = f"{self.value:.{self.digits}f}"
        return f"ratio: {self.name} = {value} (target {sign} {self.bound:g}: {verdict(self.ok)})"


def cpu_ms_per_1080p(fig: Figures) -> float:
    """The client's CPU from the first request's arrival to the last answer, per 1080p request."""
    return fig.client_cpu_span_s / fig.pixels_1080p * 1000 if fig.pixels_1080p else math.nan


def cpu_ms_per_4k(fig: Figures) -> float:
    """The same per 4K request (3840x2160 pixels sent)."""
    return cpu_ms_per_1080p(fig) * PIXELS_4K / PIXELS_1080P


def fill_targeted(fig: Figures) -> bool:
    """Whether the wall and in-flight targets hold for this run.

    Every mode at C < 64 in the fill phase, greedy and sampling at C >= 64, the short run's in flight.
    The marking modes' walls at C = 64 are printed, not targets (their client is CPU-bound on 2 cores).
    """
    return fig.phase == "fill" and (fig.slots < FULL_C or fig.mode in FILL_AT_FULL_C)


def checks_of(fig: Figures) -> list[Check]:
    """The targets one run measures (the cores phase's scaling target is :func:`scaling_check`)."""
    tag = fig.tag
    out: list[Check] = []
    if fill_targeted(fig):
        out.append(Check(f"{tag}: wall / (limit + startup + L)", fig.wall_s / fig.bound_s, TARGET_WALL, True))
    if fill_targeted(fig) or fig.phase == "short":
        out.append(
            Check(f"{tag}: mean in flight / C", fig.mean_in_flight / fig.slots, TARGET_IN_FLIGHT, False)
        )
    if fig.cores == 1 and fig.records == "1080p":
        out.append(
            Check(
                f"{tag}: client CPU ms per 1080p request", cpu_ms_per_1080p(fig), TARGET_CPU_1080P_MS, True, 1
            )
        )
    if fig.cores == 1 and fig.records == "4k":
        out.append(
            Check(f"{tag}: client CPU ms per 4K request", cpu_ms_per_4k(fig), TARGET_CPU_4K_MS, True, 1)
        )
    return out


def scaling_check(one: Figures, two: Figures) -> tuple[Check, str]:
    """The rate on 2 cores over the rate on 1 (requests answered per second of the span), and its line."""
    name = f"{one.mode} C={one.slots} L={one.latency:g} {one.records}: rate on {two.cores} cores / on 1 core"
    check = Check(name, two.rate / one.rate, TARGET_SCALING, False)
    head, _, tail = check.line().partition(" = ")
    return check, f"{head} = {two.rate:.1f} / {one.rate:.1f} requests/s = {tail}"


def scaling_why(one: Figures, two: Figures) -> str:
    """What the rate is made of on 1 core and on 2: the rate is the client's cores busy over the span
    divided by its CPU per request, so a ratio under 2 is either cores left idle (the GIL, waits, a
    machine busy with other work: its load) or more CPU per request (contention)."""

    def part(f: Figures) -> str:
        busy = f.client_cpu_span_s / f.span_s if f.span_s > 0 else math.nan
        cpu = f.client_cpu_span_s / max(f.run_requests, 1) * 1000
        engine = f.engine_cpu_s / f.wall_s if f.wall_s > 0 else math.nan
        return (
            f"{busy:.2f} client cores busy, {cpu:.1f} ms CPU per request, engine {engine:.2f} of a core on "
            f"cores {f.engine_cpus}, machine load {f.load[0]:.1f} -> {f.load[1]:.1f}"
        )

    tag = f"{one.mode} C={one.slots} L={one.latency:g} {one.records}"
    return f"{tag}: on 1 core {part(one)}; on {two.cores} cores {part(two)}"


def report(fig: Figures) -> list[str]:
    """The lines printed for one run (a ``ratio:`` prefix on every ratio; targets end in PASS or FAIL)."""
    tag = fig.tag
    checks = {c.name.rpartition(": ")[2]: c for c in checks_of(fig)}
    requests = max(fig.requests, 1)
    cpu_req = fig.client_cpu_s / requests * 1000
    cpu_span_req = fig.client_cpu_span_s / max(fig.run_requests, 1) * 1000
    cpu_1080 = cpu_ms_per_1080p(fig)
    cpu_1080_all = fig.client_cpu_s / fig.pixels_1080p * 1000 if fig.pixels_1080p else math.nan
    wall_bound = fig.wall_s / fig.bound_s
    span = max(fig.wall_s - fig.startup_s - fig.tail_s, 1e-9)
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(fig.kinds.items()))
    formats = ", ".join(f"{k} {v}" for k, v in sorted(fig.formats.items())) or "none"
    counted = fig.client_requests if fig.client_requests is not None else "?"
    placement = "" if fig.cores is None else f", engine on cores {fig.engine_cpus}"

    def targeted(name: str, text: str) -> str:
        check = checks.get(name)
        return check.line() if check is not None else f"ratio: {tag}: {name} = {text}"

    lines = [
        f"{tag}: {fig.samples} samples, {fig.requests} requests ({kinds}; gge counted {counted}; "
        f"{fig.probe_requests} of them gge's probe's), "
        f"{fig.failed} refused, images {formats}, {fig.body_mib:.0f} MiB sent, exit {fig.returncode}, "
        f"machine load {fig.load[0]:.1f} -> {fig.load[1]:.1f} on {os.cpu_count()} cores{placement}, "
        f"gge peak RSS {fig.peak_rss_mib:.0f} MiB"
        + (f", Top-1 {fig.top1:g}" if fig.top1 is not None else ""),
        f"{tag}: wall {fig.wall_s:.1f} s, limit {fig.limit_s:.1f} s, startup {fig.startup_s:.1f} s "
        f"(gge's probe: {fig.probe_requests} requests, {fig.probe_s:.1f} s of it), "
        f"tail {fig.tail_s:.1f} s, in flight mean {fig.mean_in_flight:.1f} peak {fig.peak_in_flight}, "
        f"slots busy mean {fig.mean_busy:.1f}, {fig.rate:.1f} requests/s over the span",
        f"{tag}: client CPU {fig.client_cpu_s:.1f} s whole process ({cpu_req:.1f} ms per request, "
        f"{cpu_1080_all:.1f} ms per 1080p request), {fig.client_cpu_span_s:.1f} s from the first request to "
        f"the last answer ({cpu_span_req:.1f} ms per request; {fig.pixels_1080p:.0f} 1080p-equivalents "
        "sent); "
        f"engine CPU {fig.engine_cpu_s:.1f} s ({fig.engine_cpu_s / requests * 1000:.1f} ms per request, "
        f"{fig.engine_cpu_s / fig.wall_s:.2f} of a core)",
        f"ratio: {tag}: wall / limit = {fig.wall_s / fig.limit_s:.2f}",
        targeted("wall / (limit + startup + L)", f"{wall_bound:.2f} (printed, not a target)"),
        targeted("mean in flight / C", f"{fig.mean_in_flight / fig.slots:.2f}"),
        f"ratio: {tag}: peak in flight / C = {fig.peak_in_flight / fig.slots:.2f}",
        f"ratio: {tag}: mean slots busy / C = {fig.mean_busy / fig.slots:.2f}",
        targeted("client CPU ms per 1080p request", f"{cpu_1080:.1f}"),
    ]
    if fig.records == "4k":
        lines.append(targeted("client CPU ms per 4K request", f"{cpu_ms_per_4k(fig):.1f}"))
    return [
        *lines,
        f"ratio: {tag}: client CPU ms per request = {cpu_span_req:.1f} (whole process: {cpu_req:.1f})",
        f"ratio: {tag}: client cores busy over the span = {fig.client_cpu_span_s / span:.2f} "
        f"(of {fig.cores or os.cpu_count()}; machine load {fig.load[0]:.1f} -> {fig.load[1]:.1f})",
        f"ratio: {tag}: startup / wall = {fig.startup_s / fig.wall_s:.2f}, tail / wall = "
        f"{fig.tail_s / fig.wall_s:.2f}",
    ]


def parse_settings(text: str) -> list[tuple[int, float]]:
    out = []
    for item in text.split(","):
        c, _, latency = item.partition(":")
        out.append((int(c), float(latency)))
    return out


@dataclass(frozen=True)
class Plan:
    """Every run of one invocation, by phase (each entry: mode, C, L, samples, records, client cores)."""

    fill: list[tuple[str, int, float, int]]
    cores: list[tuple[str, int, float, int, int]]  # the last item: the cores of the wider run
    cpu: list[tuple[str, int, float, int, str]]
    short: list[tuple[str, int, float, int]]


def plan_of(args: argparse.Namespace, modes: Sequence[str], phases: Sequence[str], allowed: int) -> Plan:
    """The runs the arguments ask for (see the module docstring's phases)."""
    fill = []
    if "fill" in phases:
        for slots, latency in parse_settings(args.settings):
            for mode in modes:
                if slots < FULL_C or mode in FILL_AT_FULL_C:
                    fill.append(
                        (mode, slots, latency, args.samples if slots >= FULL_C else args.samples_small)
                    )
    c, latency = parse_settings(args.cores_setting)[0]
    wide = min(2, allowed)
    cores = (
        [(m, c, latency, args.samples_cores, wide) for m in modes if m in MARKING]
        if "cores" in phases
        else []
    )
    cpu: list[tuple[str, int, float, int, str]] = []
    if "cpu" in phases:
        for m in modes:
            if not (cores and m in MARKING):  # the cores phase's run on one core is the 1080p one
                cpu.append((m, c, latency, args.samples_cpu, "1080p"))
            cpu.append((m, c, latency, args.samples_4k, "4k"))
    short = []
    if "short" in phases:
        n, _, rest = args.short.partition(":")
        ((sc, sl),) = parse_settings(rest)
        short.append(("greedy", sc, sl, int(n)))
    return Plan(fill, cores if wide > 1 else [], cpu, short)


PHASES = ("fill", "cores", "cpu", "short")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke run: a few samples a run, C=4, L=0.05 s")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"some of {','.join(PHASES)}")
    parser.add_argument("--samples", type=int, default=1000, help="fill: samples where C >= 64")
    parser.add_argument("--samples-small", type=int, default=400, help="fill: samples where C < 64")
    parser.add_argument("--settings", default="64:0.5,16:2", help="fill: C:L pairs, comma-separated")
    parser.add_argument("--cores-setting", default="128:0.25", help="cores and cpu: C:L")
    parser.add_argument("--samples-cores", type=int, default=300, help="cores: samples a run")
    parser.add_argument("--samples-cpu", type=int, default=200, help="cpu: samples of a 1080p run")
    parser.add_argument("--samples-4k", type=int, default=60, help="cpu: samples of a 4K run")
    parser.add_argument("--short", default="216:32:1", help="short: SAMPLES:C:L of greedy")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--latency", choices=("fixed", "lognormal"), default="fixed")
    parser.add_argument("--sigma", type=float, default=0.5, help="the lognormal's sigma")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gge-arg", action="append", default=[], help="KEY=VALUE passed to eval.py")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--log-dir", type=Path, default=None, help="keep request logs and gge's output here")
    parser.add_argument("--gge-root", type=Path, default=ROOT, help="the checkout whose eval.py runs")
    parser.add_argument("--profile", action="store_true", help="cProfile every thread of gge (slower)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per gge run")
    args = parser.parse_args(argv)
    if args.quick:
        args.samples = args.samples_small = args.samples_cores = args.samples_cpu = 12
        args.samples_4k = 4
        args.settings = args.cores_setting = "4:0.05"
        args.short = "12:3:0.05"
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; choose from {list(MODES)}")
    phases = [p for p in args.phases.split(",") if p]
    if [p for p in phases if p not in PHASES]:
        parser.error(f"unknown phases in {args.phases!r}; choose from {list(PHASES)}")
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    plan = plan_of(args, modes, phases, allowed)
    results: list[Figures] = []
    checks: list[Check] = []
    scaling_lines: list[str] = []
    with contextlib.ExitStack() as stack:
        work = args.log_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gge-endpoint-")))
        work.mkdir(parents=True, exist_ok=True)
        data: dict[tuple[str, int], Path] = {}

        def records(which: str, n: int) -> Path:
            if (which, n) not in data:
                folder = work / (f"records_{n}" if which == "mix" else f"records_{which}_{n}")
                data[which, n] = write_records(folder, n, RECORD_SETS[which])
            return data[which, n]

        def one(
            phase: str, mode: str, slots: int, latency: float, n: int, which: str, cores: int | None
        ) -> Figures:
            engine = FakeEngine(slots, latency, args.sigma if args.latency == "lognormal" else 0.0, args.seed)
            with engine.serving() as port:
                fig = run_mode(
                    engine,
                    port,
                    mode,
                    records(which, n),
                    n,
                    work,
                    args.gge_arg,
                    args.timeout,
                    args.gge_root,
                    args.profile,
                    phase=phase,
                    records_set=which,
                    cores=cores,
                )
            results.append(fig)
            checks.extend(checks_of(fig))
            for line in report(fig):
                print(line, flush=True)
            if args.log_dir:
                with (work / f"requests_{fig.label}.jsonl").open("w") as f:
                    for e in engine.log:
                        f.write(json.dumps(asdict(e)) + "\n")
            return fig

        print(
            f"screens: {', '.join(f'{s[0]} {s[1][0]}x{s[1][1]}' for s in SCREENS)} (reused across records); "
            f"latency {args.latency}{f' sigma {args.sigma}' if args.latency == 'lognormal' else ''}; "
            f"gge args: {' '.join(args.gge_arg) or '(defaults)'}; gge at {args.gge_root}; "
            f"{allowed} cores allowed",
            flush=True,
        )
        if plan.fill:
            print("== fill: the wall and the requests in flight ==", flush=True)
        for mode, slots, latency, n in plan.fill:
            one("fill", mode, slots, latency, n, "mix", None)
        if "cores" in phases and not plan.cores:
            print("== cores: skipped (one core allowed, or no marking mode asked) ==", flush=True)
        if plan.cores:
            print("== cores: the marking modes' rate on 1 core and on 2 (1080p records) ==", flush=True)
        for mode, slots, latency, n, wide in plan.cores:
            narrow = one("cores", mode, slots, latency, n, "1080p", 1)
            both = one("cores", mode, slots, latency, n, "1080p", wide)
            check, line = scaling_check(narrow, both)
            checks.append(check)
            scaling_lines.append(line)
            print(line, flush=True)
            print(scaling_why(narrow, both), flush=True)
        if plan.cpu:
            print("== cpu: the client's CPU per request on one core ==", flush=True)
        for mode, slots, latency, n, which in plan.cpu:
            one("cpu", mode, slots, latency, n, which, 1)
        if plan.short:
            print("== short: a short run is full from its first second ==", flush=True)
        for mode, slots, latency, n in plan.short:
            one("short", mode, slots, latency, n, "mix", None)
    walls = [f for f in results if f.phase == "cores" and f.cores != 1]
    if walls:
        print("== the marking modes' walls at C=64 on 2 cores (printed, not targets) ==")
        for f in walls:
            print(
                f"ratio: {f.tag}: wall / (limit + startup + L) = {f.wall_s / f.bound_s:.2f}, "
                f"mean in flight / C = {f.mean_in_flight / f.slots:.2f}"
            )
    print("== targets ==")
    for check in checks:
        print(check.line())
    all_ok = bool(checks) and all(c.ok for c in checks)
    print(f"all targets: {verdict(all_ok)} ({sum(c.ok for c in checks)} of {len(checks)} met)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "settings": [{"slots": c, "latency": lat} for c, lat in parse_settings(args.settings)],
            "phases": phases,
            "latency": args.latency,
            "gge_args": args.gge_arg,
            "targets": {
                "wall_over_bound": TARGET_WALL,
                "in_flight_over_c": TARGET_IN_FLIGHT,
                "cpu_ms_per_1080p_one_core": TARGET_CPU_1080P_MS,
                "cpu_ms_per_4k_one_core": TARGET_CPU_4K_MS,
                "rate_2_cores_over_1": TARGET_SCALING,
            },
            "runs": [
                {
                    **asdict(f),
                    "bound_s": f.bound_s,
                    "rate": f.rate,
                    "label": f.label,
                    "cpu_ms_per_1080p": cpu_ms_per_1080p(f),
                    "cpu_ms_per_4k": cpu_ms_per_4k(f),
                }
                for f in results
            ],
            "checks": [{**asdict(c), "ok": c.ok} for c in checks],
            "all_targets": all_ok,
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
