"""The OpenAI-compatible endpoint backend: a vision-language model served over ``/chat/completions``.

Works with vLLM, SGLang, TGI, LM Studio, Ollama's OpenAI API and hosted APIs. Only the standard
library speaks HTTP. :class:`OpenAIBackend` is the gge ``Backend``: what to ask (the screenshot's
size, the body: :mod:`gge.models.openai_wire`) and how to read the answers (choices, texts,
log-probabilities, costs: :mod:`gge.models.openai_reading`). Sending is apart:
:mod:`gge.models.openai_requests` is the request loop (one request window shared by every thread's
calls, the requests of one call sent together, retries with backoff, the wait for a server that went
away), :mod:`gge.models.openai_transport` one try over HTTP (the API key, a GET for a probe).

What fails is told apart (:mod:`gge.models.openai_http`): one request's failure (its retries spent,
an HTTP 400/413/422, an answer without usable choices) raises :class:`~gge.errors.RequestFailed`,
that sample's failure; what every request would meet (HTTP 404: a base_url without ``/v1`` or a
model not served; 401/403: the key; nothing listening before the server has answered once, after
one retry) is a plain GgeError naming the option that fixes it. A server that stops answering
connections after it has answered once is waited for (``server_wait_s``): the requests wait while
one thread polls it, and are sent again when it is back, or raise :class:`~gge.errors.ServerGone`
past the wait. :meth:`OpenAIBackend.status` is what a progress line reads; :meth:`OpenAIBackend.get`
is a GET for a probe of the server.

Images: each request image is encoded once however many requests send it, lossless PNG by default,
or JPEG, or the screenshot file's own bytes where the image is the file unchanged
(:mod:`gge.models.encoding`).

Screenshot size: the policy resizes each screenshot to :meth:`OpenAIBackend.seen_size` before
prompting. With ``max_pixels`` the image is downscaled (never upscaled) to at most that area, which
keeps huge screenshots (6016x3384) under the frame limits of hosted APIs instead of failing. With
``resize_factor`` (a Qwen-VL model whose server resizes by ``smart_resize``), the image is sent
already at the size the server would resize it to, so ``abs_resized`` answers map back exactly.

Each answer's cost (:class:`~gge.types.CostRecord`) is the server's ``usage`` for it (prompt,
completion and, where reported, cached prompt tokens; image tokens are not reported apart) and the
request's own wall time: requests run concurrently, so a request's seconds are its latency, not
a share of the batch, and their sum can exceed the batch's wall time up to ``concurrency`` times.

The API key (``api_key_env``) is never logged, recorded or put in an error message
(:mod:`gge.models.openai_transport`).

Example:
    >>> backend = OpenAIBackend("http://127.0.0.1:8000/v1", "qwen", max_pixels=1_000_000)
    >>> backend.seen_size(6016, 3384)
    (1333, 750)
    >>> backend.seen_size(800, 600)  # never upscaled
    (800, 600)
    >>> OpenAIBackend("http://127.0.0.1:8000/v1", "qwen", resize_factor=28).seen_size(1280, 720)
    (1288, 728)
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
import urllib.parse
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, cast

from gge.errors import GgeError
from gge.geometry import smart_resize
from gge.models.base import Generation, GenerationRequest
from gge.models.encoding import ImageUrls
from gge.models.openai_http import Refused, truncate
from gge.models.openai_parts import (
    Snapshot,
    merged_answers,
    merged_images,
    merged_logprobs,
    merged_status,
    merged_usage,
    merged_window,
)
from gge.models.openai_reading import (
    WINDOW_KEY,
    EndpointStatus,
    MalformedAnswer,
    ReadingRecord,
    message_text,
    prefill_refusal,
    request_cost,
    top_logprobs,
    usage_of,
    with_prefill,
)
from gge.models.openai_requests import RequestLoop, results_in_order
from gge.models.openai_transport import Transport
from gge.models.openai_wire import chat_body
from gge.models.window import RequestWindow
from gge.types import CostRecord

log = logging.getLogger(__name__)
"""The backend's logger (:mod:`gge.models.openai_requests` and :mod:`gge.models.openai_http` log under it)."""

_DEFAULT_MIN_PIXELS = 56 * 56
_DEFAULT_MAX_PIXELS = 14 * 14 * 4 * 1280

DEFAULT_SERVER_WAIT_S = 600.0
"""How long a run waits for a server that went away (``model.server_wait_s``): ten minutes. A vLLM or
SGLang restart loads a 7-8B VLM's weights and captures its CUDA graphs in one to five minutes (a
72B model on several GPUs, or weights read from a network disk, take longer); ``transformers serve``
came back in about 45 s. Ten minutes survives a model reload with room to spare, and is short
against the hours of a full run that waiting keeps."""


class OpenAIBackend:
    """A model served by an OpenAI-compatible ``/chat/completions`` endpoint, as a gge ``Backend``.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is appended).
        model: The served model name sent in each request.
        api_key_env: Name of the environment variable holding the API key (read at request time;
            no ``Authorization`` header when it is unset or empty).
        concurrency: Requests in flight at once, across every call from every thread (a fixed
            window); None: an adaptive window (:class:`~gge.models.window.RequestWindow`) starting at
            :data:`~gge.models.window.ADAPTIVE_START`, growing up to ``max_concurrency``, halved on
            HTTP 429/503 and timeouts.
        max_concurrency: The most an adaptive window grows to (default
            :data:`~gge.models.window.DEFAULT_MAX`).
        max_retries: Retries after the first try on 429, 5xx, connection errors and timeouts. An
            HTTP 429 or 503 to a try sent beside other requests in an adaptive window is retried without
            counting: the window was too large, and it shrinks.
        timeout_s: Per-request timeout (on connecting and on each wait for the server's bytes).
        backoff_s: First retry delay; doubled on each retry (``backoff_s * 2**attempt``), at most
            :data:`~gge.models.openai_http.MAX_DELAY_S`; a ``Retry-After`` header replaces it.
        max_pixels: Largest image area sent (downscaled to fit, never upscaled); with
            ``resize_factor``, the ``max_pixels`` of ``smart_resize`` (default 1,003,520).
        min_pixels: Smallest area; used only with ``resize_factor`` (default 3,136).
        resize_factor: Send images at ``smart_resize`` size with this factor (28 for Qwen2/2.5-VL,
            32 for Qwen3-VL), the size a Qwen-VL server resizes to itself.
        image_format: ``png`` (lossless, the default: the model sees the pixels gge prepared) or
            ``jpeg`` (smaller and lossy).
        jpeg_quality: The quality of ``jpeg`` images (1-100).
        extra_body: More fields merged into each request body (e.g. ``{"top_k": 1}``); they override
            the fields gge sets.
        server_wait_s: How long to wait for a server that stops answering connections after it has
            answered once (restarted, reloading its model): requests wait, not retry, while one
            thread polls ``GET <base_url>/models``, and are sent again when it answers; past the
            wait they raise :class:`~gge.errors.ServerGone`. 0: no wait (a connection error is
            retried as any failure, then raises ServerGone). Default :data:`DEFAULT_SERVER_WAIT_S`.
            Before the server has answered once, a connection error fails fast (one retry).
        clock: Epoch seconds for the server wait (tests pass their own).
        sleep: The wait between two polls of a server that went away, returning True when cut short
            (default: a wait that ends when the run or the call stops; tests pass their own).

    Raises:
        GgeError: A setting is out of range or the URL is not http(s).
    """

    concurrent = True
    """Its calls may come from many threads at once: they share its request window."""
    takes_marked_views = True
    """A critic's marked views come as marks on the screenshot (``GenerationRequest.marks``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int | None = None,
        max_concurrency: int | None = None,
        max_retries: int = 5,
        timeout_s: float = 60.0,
        backoff_s: float = 1.0,
        max_pixels: int | None = None,
        min_pixels: int | None = None,
        resize_factor: int | None = None,
        image_format: str = "png",
        jpeg_quality: int = 90,
        extra_body: dict[str, Any] | None = None,
        server_wait_s: float = DEFAULT_SERVER_WAIT_S,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GgeError(f"base_url must be an http(s) URL like http://127.0.0.1:8000/v1, got {base_url!r}")
        if not model:
            raise GgeError("model must name the served model")
        if concurrency is not None and concurrency < 1:
            raise GgeError(f"concurrency must be at least 1, got {concurrency}")
        if max_retries < 0:
            raise GgeError(f"max_retries must be at least 0, got {max_retries}")
        if not timeout_s > 0:
            raise GgeError(f"timeout_s must be positive, got {timeout_s}")
        if not backoff_s >= 0:
            raise GgeError(f"backoff_s must be at least 0, got {backoff_s}")
        if not (math.isfinite(server_wait_s) and server_wait_s >= 0):
            raise GgeError(f"model.server_wait_s must be at least 0 seconds, got {server_wait_s}")
        for name, value in (("max_pixels", max_pixels), ("min_pixels", min_pixels)):
            if value is not None and value < 1:
                raise GgeError(f"{name} must be positive, got {value}")
        if resize_factor is not None and resize_factor < 1:
            raise GgeError(f"resize_factor must be positive, got {resize_factor}")
        self._images = ImageUrls(image_format, jpeg_quality)
        self.window = RequestWindow(
            concurrency, adaptive=concurrency is None, max_limit=max_concurrency, stall_s=float(timeout_s)
        )
        self._transport = Transport(
            base_url, model, api_key_env, float(timeout_s), float(server_wait_s), clock=clock, sleep=sleep
        )
        self.base_url = self._transport.base_url
        self.url = self._transport.url
        self.model = model
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.max_concurrency = self.window.max_limit
        self.max_retries = max_retries
        self.timeout_s = float(timeout_s)
        self.backoff_s = float(backoff_s)
        self.max_pixels = max_pixels
        self._warned_downscale = False
        self.min_pixels = min_pixels
        self.resize_factor = resize_factor
        self.image_format = self._images.image_format
        self.jpeg_quality = self._images.jpeg_quality
        self._reading_state = ReadingRecord()
        self.extra_body = dict(extra_body or {})
        self.logprobs: str | None = None
        self._lock = threading.Lock()
        self._loop = RequestLoop(
            self._transport,
            self.window,
            max_retries=max_retries,
            backoff_s=float(backoff_s),
            reading=self._reading_state,
        )
        self.server_wait_s = float(server_wait_s)
        self._parts: dict[str, Snapshot] = {}

    # -- Backend API ----------------------------------------------------------------------------
    def resize_limits(self) -> tuple[int, int]:
        """The (min_pixels, max_pixels) of ``smart_resize`` under ``resize_factor``: as set, or the defaults.

        Example:
            >>> backend = OpenAIBackend("http://localhost:8000/v1", "m", resize_factor=28, max_pixels=50176)
            >>> backend.resize_limits()
            (3136, 50176)
        """
        low = self.min_pixels if self.min_pixels is not None else _DEFAULT_MIN_PIXELS
        high = self.max_pixels if self.max_pixels is not None else _DEFAULT_MAX_PIXELS
        return low, high

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        """(width, height) of the image sent for a screenshot of this size.

        Args:
            width: Screenshot width.
            height: Screenshot height.

        Returns:
            The ``smart_resize`` size when ``resize_factor`` is set; otherwise the screenshot
            downscaled (aspect kept, floored) to at most ``max_pixels``, or unchanged.

        Example:
            >>> OpenAIBackend("http://localhost:8000/v1", "m", max_pixels=100).seen_size(40, 10)
            (20, 5)
        """
        if width < 1 or height < 1:
            raise GgeError(f"image size must be positive, got {width}x{height}")
        if self.resize_factor is not None:
            low, high = self.resize_limits()
            h, w = smart_resize(height, width, factor=self.resize_factor, min_pixels=low, max_pixels=high)
            return w, h
        if self.max_pixels is None or width * height <= self.max_pixels:
            return width, height
        scale = math.sqrt(self.max_pixels / (width * height))
        w, h = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
        while w * h > self.max_pixels and (w > 1 or h > 1):  # guard against rounding up in sqrt
            w, h = (w - 1, h) if w * height >= h * width else (w, h - 1)
        if not self._warned_downscale:
            self._warned_downscale = True
            warnings.warn(
                f"gge: screenshots are downscaled on the client before sending ({width}x{height} -> "
                f"{w}x{h}, model.max_pixels={self.max_pixels}): the served model sees fewer pixels than "
                "it would on its own; unset model.max_pixels to send them at their own size",
                stacklevel=2,
            )
        return w, h

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """One chat completion per request (``n = num_sequences`` choices from one prompt).

        Each generation's ``cost`` (stage ``propose``, ``batch_size`` 1) is the server's ``usage``:
        ``prompt_tokens`` as input tokens, ``completion_tokens`` as output tokens,
        ``prompt_tokens_details.cached_tokens`` as cached tokens (None when the server reports no
        details), image tokens None (not reported apart); and its ``seconds`` the request's own wall
        time, retries and their waits included. With ``concurrency`` above 1 the requests overlap:
        each one's seconds are its latency, and their sum is more than the batch's wall time. A
        ``greedy_first`` request is two requests sent together (the greedy answer and the K-1
        samples; one after the other under a window of one, greedy first; a server with a prefix
        cache may serve one prompt from the other and say so in its cached tokens): their tokens and
        seconds are summed into the one generation's cost, as are the follow-up requests to a server
        that returned fewer choices than asked.

        Args:
            requests: Prompts with their images (already at :meth:`seen_size`).

        Returns:
            One generation per request, in request order, with the server's token usage and cost.

        Raises:
            RequestFailed: A request failed after its retries, was refused (HTTP 400/413/422), or its
                answer was malformed: that sample's failure.
            ServerGone: The server went away and stayed away past ``server_wait_s``.
            GgeError: What every request would meet (a wrong URL, key or model name; a prefill the
                server refuses).
        """
        return self._loop.map(self._generate_one, requests)

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        """P(first answer token is ``yes``) from the top-20 log-probabilities of one generated token.

        The probabilities of all top tokens whose stripped, lowercased text equals ``yes.lower()``
        are summed (" Yes", "yes", "YES" alike). A server that returns no log-probabilities gets a
        hard answer instead: 1.0 if the text starts with ``yes`` (case-insensitive), else 0.0, and
        ``settings()["logprobs"]`` records ``"unavailable"``.

        Args:
            requests: Prompts with their images.
            yes: The positive answer word.
            no: The negative answer word (not needed: only ``yes`` is read).

        Returns:
            One probability per request, in request order.
        """
        return self.yes_probability_with_costs(requests, yes, no)[0]

    def yes_probability_with_costs(
        self, requests: Sequence[GenerationRequest], yes: str, no: str
    ) -> tuple[list[float], list[CostRecord]]:
        """:meth:`yes_probability` and each request's cost (stage ``judge``), as :meth:`generate` records.

        Returns:
            One probability and one cost per request, in request order.
        """
        del no
        word = yes.strip().lower()
        answers = self._loop.map(lambda r, stop: self._yes_one(r, word, stop), requests)
        return [p for p, _ in answers], [c for _, c in answers]

    def settings(self) -> dict[str, Any]:
        """Endpoint, model, limits and accumulated usage (never the API key, only its variable's name).

        ``window`` is ``fixed`` (``concurrency`` requests in flight) or ``adaptive`` (up to
        ``max_concurrency``); ``images`` counts how the request images were made (encoded once each,
        or sent as their file's own bytes) and the seconds spent encoding. What the window did is
        results.json ``cost.window`` (:meth:`window_summary`). ``answers`` is what the server's
        answers showed it supports (:class:`~gge.models.openai_reading.ReadingRecord`: ``n`` honoured
        or ignored and re-asked, a prefill continued, tool-call answers written back as text, and who
        answered: the answers' ``model`` and ``system_fingerprint``). ``images.encode_seconds`` is the
        client's CPU seconds spent encoding (:class:`~gge.models.encoding.EncodeCounts`).

        ``usage`` holds ``prompt_tokens``, ``completion_tokens``, ``requests`` (answered), ``retries``,
        ``overloads`` (tries answered HTTP 429, 503 or 504, or timed out), ``failed`` (requests that
        failed for good: :class:`~gge.errors.RequestFailed`), ``outages`` (times the server went away
        after answering) and ``unreachable_s`` (seconds spent waiting for it).
        """
        usage, images, answers = self._own_usage(), self._own_images(), self._reading_record()
        with self._lock:
            parts = list(self._parts.values())
        if parts:  # client processes (gge.run.client_procs): the run as a whole
            usage = merged_usage(usage, [p["usage"] for p in parts])
            images = merged_images([images, *(p["images"] for p in parts)])
            answers = merged_answers([answers, *(p["answers"] for p in parts)])
            logprobs = merged_logprobs([self.logprobs, *(p["logprobs"] for p in parts)])
        else:
            logprobs = self.logprobs
        return {
            "backend": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "window": "adaptive" if self.window.adaptive else "fixed",
            "concurrency": self.concurrency,
            "max_concurrency": self.max_concurrency,
            "max_retries": self.max_retries,
            "timeout_s": self.timeout_s,
            "backoff_s": self.backoff_s,
            "server_wait_s": self.server_wait_s,
            "max_pixels": self.max_pixels,
            "min_pixels": self.min_pixels,
            "resize_factor": self.resize_factor,
            "image_format": self.image_format,
            "jpeg_quality": self.jpeg_quality if self.image_format == "jpeg" else None,
            "images": images,
            "extra_body": dict(self.extra_body),
            "logprobs": logprobs,
            "answers": answers,
            "usage": usage,
        }

    def _own_usage(self) -> dict[str, Any]:
        """This process's usage (``settings()["usage"]`` without client processes)."""
        usage: dict[str, Any] = self._loop.counts()
        usage["outages"] = self._transport.server.outages
        usage["unreachable_s"] = round(self._transport.server.now_unreachable_s(), 3)
        return usage

    def _own_images(self) -> dict[str, Any]:
        """How this process made its request images (``settings()["images"]`` without client processes)."""
        counts = self._images.counts
        return {
            "encoded": counts.encoded,
            "file_bytes": counts.file_bytes,
            "reused": counts.reused,
            "encode_seconds": round(counts.encode_seconds, 3),
            "deflate": counts.deflate,
        }

    def snapshot(self) -> Snapshot:
        """What this backend did so far, for the parent of a client process (:mod:`gge.run.client_procs`).

        Returns:
            Its own usage, images, answers, window and status (never a part it absorbed).
        """
        return {
            "usage": self._own_usage(),
            "images": self._own_images(),
            "answers": self._reading_record(),
            "window": dict(self.window.summary()),  # type: ignore[typeddict-item]
            "status": dict(self._own_status()),
            "logprobs": self.logprobs,
        }

    def absorb(self, key: str, part: Snapshot) -> None:
        """Keep a client process's latest :meth:`snapshot` (replacing its earlier one) as part of this run.

        From then on :meth:`settings`, :meth:`status` and :meth:`window_summary` report this backend
        and its parts as one run (:mod:`gge.models.openai_parts`).

        Args:
            key: The process (``proc0``...).
            part: Its snapshot.
        """
        with self._lock:
            self._parts[key] = part

    def has_answered(self) -> bool:
        """Whether the server has answered this backend (a connection error is then waited out)."""
        return self._transport.answered.is_set()

    def assume_answered(self) -> None:
        """Treat the server as one that has answered this run (a client process whose parent probed it).

        A connection error is then waited out (``server_wait_s``) rather than failing fast.
        """
        self._transport.heard()

    def status(self) -> EndpointStatus:
        """Where the backend stands now, for a progress line (cheap: counters read under a lock).

        Returns:
            Requests in flight and the window's limit, requests answered, retries, overloads (HTTP
            429/503/504 and timeouts), requests failed for good, when the server went away (epoch
            seconds; None while it answers) and how long it is waited for.

        Example:
            >>> OpenAIBackend("http://127.0.0.1:8000/v1", "m", concurrency=4).status()["limit"]
            4
        """
        with self._lock:
            parts = [p["status"] for p in self._parts.values()]
        own = self._own_status()
        return cast(EndpointStatus, merged_status(own, parts)) if parts else own

    def _own_status(self) -> EndpointStatus:
        usage = self._loop.counts()
        return {
            "in_flight": self.window.in_flight,
            "limit": self.window.limit,
            "requests": usage["requests"],
            "retries": usage["retries"],
            "overloads": usage["overloads"],
            "failed": usage["failed"],
            "unreachable_since": self._transport.server.since,
            "server_wait_s": self.server_wait_s,
        }

    def window_summary(self) -> dict[str, Any]:
        """What the request window did so far (:meth:`gge.models.window.RequestWindow.summary`).

        With client processes, the parent's window (the probe's requests) and then theirs side by side
        (:func:`gge.models.openai_parts.merged_window`).
        """
        with self._lock:
            parts = [p["window"] for p in self._parts.values()]
        return dict(merged_window(self.window.summary(), parts))

    def cancel(self, on: bool = True) -> None:
        """Stop sending: requests waiting for the window or a retry fail at once (a run that stops).

        Args:
            on: False lets it send again (the next evaluation of a training run).
        """
        if on:
            self._loop.cancelled.set()
        else:
            self._loop.cancelled.clear()

    def get(self, path: str, timeout_s: float | None = None) -> tuple[int, dict[str, str], bytes]:
        """One GET to the server, no retries, as the POSTs are sent (``Transport.get``, openai_transport).

        Args:
            path: ``/version`` (from the server root) or ``models`` (from the API root).
            timeout_s: How long to wait for the answer (default: ``timeout_s``).

        Returns:
            The HTTP status, the headers (names lowercased) and the body.

        Raises:
            TransientError: Nothing answered; the message names the URL.

        Example:
            >>> OpenAIBackend("http://127.0.0.1:9/v1", "m").get_url("/version")
            'http://127.0.0.1:9/version'
        """
        return self._transport.get(path, timeout_s)

    def get_url(self, path: str) -> str:
        """The URL :meth:`get` asks for ``path`` (``/x``: from the server root; ``x``: from the API root)."""
        return self._transport.get_url(path)

    # -- asking and reading ----------------------------------------------------------------------
    def _body(self, request: GenerationRequest, **overrides: Any) -> dict[str, Any]:
        """The request's body (:func:`~gge.models.openai_wire.chat_body`), its image's URL made once."""
        return chat_body(request, self.model, lambda: self.image_url(request), self.extra_body, **overrides)

    def image_url(self, request: GenerationRequest) -> str:
        """The data URL of a request's image, made once per image (:class:`~gge.models.encoding.ImageUrls`).

        The screenshot file's own bytes where the request says the image is that file unchanged
        (``GenerationRequest.image_file``) and its format allows; otherwise ``image_format``. A
        request with marks sends its marked view (``GenerationRequest.marks``), never the bare image.
        """
        if request.marks is not None:
            return self._images.url(request.marks)
        return self._images.url(request.image, request.image_file)

    def _choices(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        choices = data.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
            shown = {k: v for k, v in data.items() if k != WINDOW_KEY}
            shown_text = truncate(json.dumps(shown))
            raise self._loop.request_failed(f"malformed response, missing 'choices' list: {shown_text!r}")
        return sorted(choices, key=lambda c: c["index"] if isinstance(c.get("index"), int) else 0)

    def _text(self, choice: dict[str, Any], i: int) -> str:
        """The answer text of a choice; parsed tool calls are written back as Qwen text and counted.

        See :func:`gge.models.openai_reading.message_text` (``transformers serve`` returns every
        Qwen ``<tool_call>`` answer as ``message.tool_calls`` with empty ``content``).
        """
        try:
            text, from_calls = message_text(choice.get("message"))
        except MalformedAnswer as error:
            raise self._loop.request_failed(f"malformed response, choices[{i}]{error}") from None
        if from_calls:
            self._reading().tool_call_answer()
        return text

    def _reading(self) -> ReadingRecord:
        """What the answers showed about the server."""
        return self._reading_state

    def _reading_record(self) -> dict[str, Any]:
        """What the server's answers showed it supports, for :meth:`settings` (``ReadingRecord.as_dict``)."""
        return self._reading().as_dict()

    def _generate_one(self, request: GenerationRequest, stop: threading.Event) -> Generation:
        began = time.perf_counter()
        parts = [request]
        if request.greedy_first:  # the greedy answer and K-1 samples of the same prompt, sent together
            parts = [replace(request, num_sequences=1, do_sample=False, greedy_first=False)]
            if request.num_sequences > 1:
                parts.append(replace(request, num_sequences=request.num_sequences - 1, greedy_first=False))
        asked: list[list[dict[str, Any]]] = [[] for _ in parts]

        def ask(i: int) -> tuple[list[str], list[bool], CostRecord]:
            part_began = time.perf_counter()
            more, more_cut = self._ask(parts[i], stop, asked[i])
            return more, more_cut, request_cost("propose", asked[i], time.perf_counter() - part_began)

        if len(parts) == 1 or self.window.max_limit == 1:  # a window of one sends in order, as _map does
            done = [ask(i) for i in range(len(parts))]
        else:
            with ThreadPoolExecutor(max_workers=len(parts), thread_name_prefix="gge-openai-part") as pool:
                futures = [pool.submit(ask, i) for i in range(len(parts))]
                try:
                    done = results_in_order(futures, stop)
                except BaseException:
                    stop.set()
                    raise
        texts: list[str] = []
        cut: list[bool] = []
        part_costs: list[CostRecord] = []
        for more, more_cut, cost in done:
            part_costs.append(replace(cost, slot=len(texts), candidates=len(more)))
            texts += more
            cut += more_cut
        answers = [a for part_answers in asked for a in part_answers]
        usage: dict[str, int] = {}
        for data in answers:
            for k, v in usage_of(data).items():
                usage[k] = usage.get(k, 0) + v
        split = tuple(part_costs) if len(part_costs) > 1 else ()
        whole = request_cost("propose", answers, time.perf_counter() - began)
        return Generation(texts, usage, cut, whole, split)

    def _ask(
        self, request: GenerationRequest, stop: threading.Event, answers: list[dict[str, Any]]
    ) -> tuple[list[str], list[bool]]:
        """The ``num_sequences`` texts of one request and whether each was cut; answers appended.

        A server that ignores ``n`` returns fewer choices: gge asks again for the rest (recorded as
        ``n: "ignored"`` with the extra requests in ``n_reasks``). A server that refuses the
        assistant prefill (``transformers serve`` answers HTTP 422 to ``continue_final_message``)
        stops the run with one line naming ``model.prompts.prefill`` and the server's answer: the
        prefill is part of the preset's protocol, and answers without it are not the protocol's.
        """
        n = request.num_sequences
        texts: list[str] = []
        cut: list[bool] = []
        while len(texts) < n:
            want = n - len(texts)
            data = self._post_prefilled(request, want, stop)
            answers.append(data)
            choices = self._choices(data)
            if not choices:
                raise self._loop.request_failed("malformed response, 'choices' is empty")
            self._reading().choices(want, len(choices), again=len(texts) > 0)
            texts.extend(
                with_prefill(self._text(c, i), request.prefill) for i, c in enumerate(choices[:want])
            )
            cut.extend(c.get("finish_reason") == "length" for c in choices[:want])
        if request.prefill:
            self._reading().prefill_continued()
        return texts, cut

    def _post_prefilled(self, request: GenerationRequest, want: int, stop: threading.Event) -> dict[str, Any]:
        """POST a request for ``want`` choices; a 4xx refusal of its prefill becomes a one-line error.

        Where a request with a prefill is refused (HTTP 400, 413, 422: :class:`Refused`), the same
        request is sent once without the prefill: if that one is answered, the prefill was what the
        server refused (a run-stopping GgeError); otherwise the refusal is the request's own failure.
        """
        try:
            return self._loop.post(self._body(request, n=want), stop)
        except Refused as refused:
            if not request.prefill:
                raise
            try:
                self._loop.post(self._body(replace(request, prefill=None), n=1), stop)
            except GgeError:
                raise refused from None
            raise self._transport.fail(
                prefill_refusal(request.prefill, str(refused).split("): ", 1)[-1])
            ) from None

    def _yes_one(
        self, request: GenerationRequest, word: str, stop: threading.Event
    ) -> tuple[float, CostRecord]:
        began = time.perf_counter()
        body = self._body(
            request, max_tokens=1, temperature=0.0, top_p=1.0, n=1, logprobs=True, top_logprobs=20
        )
        data = self._loop.post(body, stop)
        cost = request_cost("judge", [data], time.perf_counter() - began)
        choices = self._choices(data)
        if not choices:
            raise self._loop.request_failed("malformed response, 'choices' is empty")
        top = top_logprobs(choices[0])
        if top is None:
            with self._lock:
                self.logprobs = "unavailable"
            return (1.0 if self._text(choices[0], 0).strip().lower().startswith(word) else 0.0), cost
        with self._lock:
            if self.logprobs is None:
                self.logprobs = "available"
        # fsum of no terms is the float 0.0 (the built-in sum's is the int 0)
        p = math.fsum(math.exp(lp) for token, lp in top if token.strip().lower() == word)
        return min(1.0, p), cost
