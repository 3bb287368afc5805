"""HTTP for the OpenAI-compatible backend: which failures are retried, how long to wait, what to say.

A try that failed with HTTP 429 or 5xx, a connection error or a timeout is :class:`Retryable`; any
other 4xx is the request's own failure. The wait before a retry is the server's ``Retry-After``
(seconds or an HTTP date) when it sends one, at most :data:`MAX_DELAY_S`. A server's error message is
read from its JSON (``error.message``, ``message``, ``detail``) and cut to :data:`MESSAGE_CHARS`.

Example:
    >>> retry_after("2.5"), retry_after(None), is_loopback("127.0.0.1"), is_loopback("example.com")
    (2.5, None, True, False)
    >>> server_message(b'{"error": {"message": "busy"}}')
    'busy'
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import math
import re
import time
import uuid
from typing import Any

MAX_DELAY_S = 60.0
"""The longest wait between two tries, whatever the backoff or a ``Retry-After`` header asks."""

MESSAGE_CHARS = 300
"""How much of a server's error message goes into a GgeError."""


class Retryable(Exception):
    """One failed try that may succeed when repeated (429, 5xx, connection error, timeout)."""

    def __init__(
        self, what: str, retry_after: float | None = None, overload: bool = False, busy: bool = False
    ) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after
        self.overload = overload  # a sign of load: the window shrinks (429, 503, 504, a timeout)
        self.busy = busy  # the server said so at once (429, 503): retried uncounted while the window shrinks


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
    waits for the GIL). The result parses to ``body``.
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
            if isinstance(url, str) and url.startswith("data:") and _JSON_SAFE.fullmatch(url):
                urls.append(url)
                return {**part, "image_url": {**part["image_url"], "url": f"{tag}{len(urls) - 1}"}}
        return part

    messages = [
        {**m, "content": [holder(p) for p in m["content"]]}
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        else m
        for m in body.get("messages", [])
    ]
    text = json.dumps({**body, "messages": messages} if "messages" in body else body).encode("utf-8")
    escaped = json.dumps(tag)[1:-1].encode("ascii")  # the tag as the encoder wrote it
    for i, url in enumerate(urls):
        text = text.replace(b'"' + escaped + str(i).encode() + b'"', b'"' + url.encode("ascii") + b'"', 1)
    return text


_JSON_SAFE = re.compile(r"[A-Za-z0-9+/=:;,._-]*")
"""The characters of a data URL that JSON writes as they are."""
