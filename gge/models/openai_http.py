"""HTTP for the OpenAI-compatible backend: which failures are retried, how long to wait, what to say.

A try that failed with HTTP 429 or 5xx, a connection error, a timeout or an HTTP 200 whose body is
not a JSON object is :class:`Retryable`; an HTTP 400, 413 or 422 is that request's own failure
(:class:`Refused`); any other 4xx is a configuration every request meets (:func:`config_hint` says
what to fix). The wait before a retry is the server's ``Retry-After`` (seconds or an HTTP date) when
it sends one, at most :data:`MAX_DELAY_S`. A server's error message is read from its JSON
(``error.message``, ``message``, ``detail``) and cut to :data:`MESSAGE_CHARS`.

A server that stops answering connections after it has answered once (restarted, reloading a model)
is waited for, not retried to death: :class:`ServerWait` holds every request while one thread polls
the server, and lets them all go again once it answers (or raises :class:`~gge.errors.ServerGone`
past ``model.server_wait_s``).

Example:
    >>> retry_after("2.5"), retry_after(None), is_loopback("127.0.0.1"), is_loopback("example.com")
    (2.5, None, True, False)
    >>> server_message(b'{"error": {"message": "busy"}}')
    'busy'
"""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import json
import logging
import math
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from gge.errors import RequestFailed, ServerGone
from gge.models.encoding import DataUrl

log = logging.getLogger("gge.models.openai_api")

MAX_DELAY_S = 60.0
"""The longest wait between two tries, whatever the backoff or a ``Retry-After`` header asks."""

MESSAGE_CHARS = 300
"""How much of a server's error message goes into a GgeError."""


class Retryable(Exception):
    """One failed try that may succeed when repeated (429, 5xx, connection error, timeout, a garbled body)."""

    def __init__(
        self,
        what: str,
        retry_after: float | None = None,
        overload: bool = False,
        busy: bool = False,
        connection: bool = False,
        unreached: bool = False,
    ) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after
        self.overload = overload  # a sign of load: the window shrinks (429, 503, 504, a timeout)
        self.busy = busy  # the server said so at once (429, 503): retried uncounted while the window shrinks
        self.connection = connection  # nothing answered (refused, reset, closed): not a timeout nor a status
        self.unreached = unreached  # never connected (refused, no route, unknown host)


def connection_reason(error: BaseException | str) -> str:
    """A connection error in words: ``connection refused``, ``connection reset``, or its type and text.

    Example:
        >>> connection_reason(ConnectionRefusedError(111, "Connection refused"))
        'connection refused'
    """
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, http.client.RemoteDisconnected):
        return "the server closed the connection without an answer"
    if isinstance(error, ConnectionResetError):
        return "connection reset"
    if isinstance(error, http.client.IncompleteRead):
        return "the server closed the connection in the middle of its answer"
    if isinstance(error, str):
        return error
    return f"{type(error).__name__}: {error}"


class Refused(RequestFailed):
    """An HTTP 400, 413 or 422 to one request: that request's own failure (``status`` says which)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


REQUEST_REFUSALS = (400, 413, 422)
"""HTTP statuses that refuse one request (too large, invalid) rather than every request of the run."""

_NO_MODEL = re.compile(
    r"model\b.*\b(does not exist|not exist|not found|no such|unknown|not served|is not available)"
    r"|\b(unknown|no such|invalid) model\b",
    re.IGNORECASE,
)


def names_a_missing_model(message: str) -> bool:
    """Whether a server's error message says the requested model does not exist.

    Example:
        >>> names_a_missing_model("The model `qwen` does not exist."), names_a_missing_model("Not Found")
        (True, False)
    """
    return bool(_NO_MODEL.search(message))


def config_hint(status: int, message: str, base_url: str, api_key_env: str, key_set: bool) -> str | None:
    """What to fix for an HTTP 4xx that every request of the run would meet, or None for another 4xx.

    Args:
        status: The HTTP status.
        message: The server's error message.
        base_url: The API root the backend was given (``/chat/completions`` already taken off).
        api_key_env: The environment variable ``model.api_key_env`` names.
        key_set: Whether that variable is set (its value is never read here).

    Returns:
        A hint naming the option that fixes it, or None.

    Example:
        >>> config_hint(404, "Not Found", "http://h:8000", "KEY", False)
        'base_url should be the API root ending in /v1 (e.g. http://h:8000/v1): set model.base_url'
    """
    if status in (400, 404) and names_a_missing_model(message):
        return "the server serves no model by that name: set model.api_model to one its GET /v1/models lists"
    if status == 404:
        if not base_url.rstrip("/").endswith("/v1"):
            root = base_url.split("://", 1)
            host = root[1].split("/", 1)[0] if len(root) == 2 else base_url
            example = f"{root[0]}://{host}/v1" if len(root) == 2 else "http://host:8000/v1"
            return f"base_url should be the API root ending in /v1 (e.g. {example}): set model.base_url"
        return (
            "the server serves no chat completions there, or not that model: check model.base_url "
            "(the API root) and model.api_model"
        )
    if status in (401, 403):
        if not key_set:
            return (
                f"the server wants an API key: set the environment variable {api_key_env} "
                "(named by model.api_key_env)"
            )
        return (
            f"the server refused the API key in the environment variable {api_key_env} "
            "(named by model.api_key_env): set it to a key the server takes"
        )
    return None


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date); None if absent or bad."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def server_message(body: bytes) -> str:
    """The error message of a server's answer: ``error.message`` (or ``message``/``detail``) or the text."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for key in ("message", "detail", "msg"):
                if isinstance(err.get(key), str):
                    return str(err[key])
        elif isinstance(err, str):
            return err
        if isinstance(data.get("detail"), str):
            return str(data["detail"])
    return text


def truncate(text: str, limit: int = MESSAGE_CHARS) -> str:
    """The text on one line (whitespace runs as one space), cut to ``limit`` characters and ``...``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def is_loopback(host: str | None) -> bool:
    """Whether a URL's host is this machine (``localhost`` or a loopback address): no proxy for it."""
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def request_body(body: dict[str, Any]) -> bytes:
    """The JSON bytes of a request body, its image data URLs put in as they are.

    A base64 data URL is ASCII without a character JSON escapes, so it goes into the bytes whole
    instead of through the JSON encoder (megabytes scanned, and copied twice, while every other thread
    waits for the GIL). A URL gge made (a :class:`~gge.models.encoding.DataUrl`) is so by
    construction and goes in unscanned; any other ``data:`` URL is checked first. The bytes are one
    join of the encoded skeleton's pieces and the URLs. The result parses to ``body``.
    """
    urls: list[str] = []
    tag = f"\u0000gge-{uuid.uuid4().hex}-"

    def holder(part: Any) -> Any:
        if (
            isinstance(part, dict)
            and part.get("type") == "image_url"
            and isinstance(part.get("image_url"), dict)
        ):
            url = part["image_url"].get("url")
            if isinstance(url, DataUrl) or (
                isinstance(url, str) and url.startswith("data:") and _JSON_SAFE.fullmatch(url)
            ):
                urls.append(url)
                return {**part, "image_url": {**part["image_url"], "url": f"{tag}{len(urls) - 1}"}}
        return part

    messages = [
        {**m, "content": [holder(p) for p in m["content"]]}
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        else m
        for m in body.get("messages", [])
    ]
    text = json.dumps({**body, "messages": messages} if "messages" in body else body)
    escaped = json.dumps(tag)[1:-1]  # the tag as the encoder wrote it
    pieces: list[bytes] = []
    at = 0
    for i, url in enumerate(urls):
        start = text.index(f'"{escaped}{i}"', at) + 1  # in order: the encoder writes them as made
        pieces += [text[at:start].encode("utf-8"), url.encode("ascii")]
        at = text.index('"', start)
    pieces.append(text[at:].encode("utf-8"))
    return b"".join(pieces)


_JSON_SAFE = re.compile(r"[A-Za-z0-9+/=:;,._-]*")
"""The characters of a data URL that JSON writes as they are (checked in a URL gge did not make)."""


POLL_FIRST_S = 1.0
"""The first wait before polling a server that went away; doubled after each poll it does not answer."""

POLL_MOST_S = 30.0
"""The longest wait between two polls of a server that went away."""


class ServerWait:
    """The wait for a server that went away, shared by every thread of one backend.

    A try that meets a connection error after the server has answered once calls :meth:`wait`. The
    first such thread records :attr:`since`, logs one warning and polls (``poll()``, the backend's
    ``GET <base_url>/models``) after 1, 2, 4 ... seconds (at most :data:`POLL_MOST_S`) until the
    server answers; every other thread, and every try about to be sent (:meth:`hold`), waits
    meanwhile instead of retrying. When the server answers, one info line says so and they all go
    again (the wait spends none of their retries). Past ``wait_s`` each of them raises
    :class:`~gge.errors.ServerGone`, and so does every later try until the server answers again.

    Args:
        wait_s: How long to wait for the server (``model.server_wait_s``).
        url: The endpoint, for the messages.
        clock: Epoch seconds (tests pass their own).
        sleep: Waits between two polls; returns True when the wait was cut short because the run is
            stopping (tests pass their own, which may stop and start their server). Default: a wait
            that ends early when the poller's call or the run stops.

    Example:
        >>> w = ServerWait(600.0, "http://127.0.0.1:8000/v1")
        >>> w.since is None, w.outages
        (True, 0)
    """

    def __init__(
        self,
        wait_s: float,
        url: str,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self.wait_s = float(wait_s)
        self.url = url
        self._clock = clock
        self._sleep = sleep or self._wait_unless_stopping
        self._stopping: Callable[[], bool] = lambda: False  # the poller's, while it polls
        self._cond = threading.Condition()
        self.since: float | None = None
        """When the server went away (epoch seconds); None while it answers."""
        self.outages = 0
        """Times it went away."""
        self.unreachable_s = 0.0
        """Seconds spent waiting for it (the outages that ended, and the one now, so far)."""
        self._ended = 0  # outages over (back, or given up on)
        self._gone: str | None = None  # the ServerGone message, once the wait ran out
        self._waiting = 0

    def now_unreachable_s(self) -> float:
        """:attr:`unreachable_s`, the outage going on included."""
        with self._cond:
            running = 0.0 if self.since is None or self._gone is not None else self._clock() - self.since
            return self.unreachable_s + running

    def hold(self, stopping: Callable[[], bool]) -> int:
        """Before a try: wait while the server is away (returns at once when it answers).

        Args:
            stopping: True when the run or the call is stopping (the wait ends; the caller checks).

        Returns:
            The count of outages over, to hand to :meth:`wait` should this try meet a connection error.

        Raises:
            ServerGone: The server stayed away past the wait.
        """
        with self._cond:
            while self.since is not None and self._gone is None and not stopping():
                self._cond.wait(0.1)
            if self._gone is not None:
                raise ServerGone(self._gone)
            return self._ended

    def answered(self) -> None:
        """The server answered a try: a server given up on is back."""
        with self._cond:
            if self._gone is not None:
                self._gone = None
                self.since = None
                self._cond.notify_all()

    def wait(self, error: str, seen: int, poll: Callable[[], bool], stopping: Callable[[], bool]) -> bool:
        """A try met a connection error: wait until the server answers again.

        Args:
            error: What the try met (``connection refused``...), for the warning.
            seen: What :meth:`hold` returned before the try: an outage that ended since sent it, so
                it is sent again at once.
            poll: One poll of the server: True when it answered with an HTTP status below 500.
            stopping: True when the run or the call is stopping.

        Returns:
            True when the server is back (send the try again); False when the run is stopping.

        Raises:
            ServerGone: Past the wait.
        """
        with self._cond:
            if self._gone is not None:
                raise ServerGone(self._gone)
            if self._ended > seen:  # sent before the server came back: send it again
                return True
            self._waiting += 1
            poller = self.since is None
            if poller:
                self.since = self._clock()
                self.outages += 1
                log.warning(
                    "server unreachable since %s (%s): waiting up to %g s for it (model.server_wait_s); "
                    "requests wait meanwhile",
                    time.strftime("%H:%M:%S", time.localtime(self.since)),
                    error,
                    self.wait_s,
                )
        try:
            if poller:
                self._poll(error, poll, stopping)
            else:
                with self._cond:
                    while self.since is not None and self._gone is None and not stopping():
                        self._cond.wait(0.1)
        finally:
            with self._cond:
                self._waiting -= 1
        with self._cond:
            if self._gone is not None:
                raise ServerGone(self._gone)
        return not stopping()

    def _wait_unless_stopping(self, seconds: float) -> bool:
        """Wait ``seconds`` (monotonic time); True at once when the poller's call or the run stops."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self._stopping():
                return True
            threading.Event().wait(min(left, 0.1))
        return self._stopping()

    def _poll(self, error: str, poll: Callable[[], bool], stopping: Callable[[], bool]) -> None:
        """Poll the server with backoff until it answers, the wait runs out or the run stops."""
        self._stopping = stopping
        since = self.since
        assert since is not None
        delay = POLL_FIRST_S
        while True:
            left = since + self.wait_s - self._clock()
            cut = left > 0 and self._sleep(min(delay, left))
            back = not cut and not stopping() and left > 0 and poll()
            waited = self._clock() - since
            with self._cond:
                if back:
                    self.unreachable_s += waited
                    log.info("server back after %.0f s; re-sending %d requests", waited, self._waiting)
                elif cut or stopping():
                    self.unreachable_s += waited
                elif waited >= self.wait_s:
                    self.unreachable_s += waited
                    self._gone = (
                        f"the server at {self.url} stayed unreachable for {waited:.0f} s, past "
                        f"model.server_wait_s={self.wait_s:g} ({error})"
                    )
                else:
                    delay = min(delay * 2, POLL_MOST_S)
                    continue
                if self._gone is None:
                    self.since = None
                self._ended += 1
                self._cond.notify_all()
                return
