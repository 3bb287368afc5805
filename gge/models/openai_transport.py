"""HTTP for the OpenAI-compatible backend: one try of a POST, a GET, the API key, whether the server is up.

:class:`Transport` sends one try and tells what came back apart (:mod:`gge.models.openai_http`): the
parsed JSON answer; :class:`~gge.models.openai_http.Retryable` for a try that may succeed when
repeated (HTTP 429, 5xx, a connection error, a timeout, a body that is not a JSON object);
:class:`~gge.models.openai_http.Refused` for a request the server refuses (HTTP 400/413/422); a plain
GgeError naming the option that fixes what every request would meet (HTTP 404, 401/403). It retries
nothing: the request loop (:mod:`gge.models.openai_requests`) decides. Any HTTP status from the
server marks it up (:attr:`Transport.answered`); the wait for a server that went away after that
(:class:`~gge.models.openai_http.ServerWait`, ``model.server_wait_s``) is kept here, beside the poll
it makes (``GET <base_url>/models``). :meth:`Transport.get` is a GET for a probe of the server.

The API key is read from the environment variable named by ``api_key_env`` at request time and sent
as ``Authorization: Bearer ...`` only when set. It is never logged, recorded or put in an error
message (any echo of it in a server's message is redacted). A loopback server is reached without a
proxy; any other follows the environment.

Example:
    >>> t = Transport("http://127.0.0.1:8000/v1/", "qwen", "OPENAI_API_KEY", 60.0, 600.0)
    >>> t.url, t.get_url("/version"), t.get_url("models")
    ('http://127.0.0.1:8000/v1/chat/completions', 'http://127.0.0.1:8000/version', 'http://127.0.0.1:8000/v1/models')
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from gge.errors import GgeError, TransientError
from gge.models.openai_http import (
    REQUEST_REFUSALS,
    Refused,
    Retryable,
    ServerWait,
    config_hint,
    connection_reason,
    is_loopback,
    retry_after,
    server_message,
    truncate,
)

POLL_TIMEOUT_S = 10.0
"""The longest a poll of a server that went away waits for its answer."""


class Transport:
    """One try over HTTP to an OpenAI-compatible server, and the state of the server's being up.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is appended
            unless it ends so already; a trailing ``/`` is dropped).
        model: The served model name (for the messages).
        api_key_env: Name of the environment variable holding the API key.
        timeout_s: The timeout of a GET unless it names its own.
        server_wait_s: How long to wait for a server that went away after answering once.
        clock: Epoch seconds for the server wait (tests pass their own).
        sleep: The wait between two polls of a server that went away (tests pass their own).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str,
        timeout_s: float,
        server_wait_s: float,
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = (
            self.base_url
            if self.base_url.endswith("/chat/completions")
            else self.base_url + "/chat/completions"
        )
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.server_wait_s = float(server_wait_s)
        self.answered = threading.Event()
        """Set once the server answered (an HTTP status, any): a connection error is then waited out."""
        self.server = ServerWait(
            self.server_wait_s,
            self.base_url,
            clock=clock or time.time,
            sleep=sleep,
        )
        # A local server is never reached through a proxy; anything else follows the environment.
        hostname = urllib.parse.urlsplit(base_url).hostname
        handlers = [urllib.request.ProxyHandler({})] if is_loopback(hostname) else []
        self._opener = urllib.request.build_opener(*handlers)

    def redact(self, text: str) -> str:
        """``text`` with the API key (where its variable is set) written as ``***``."""
        key = os.environ.get(self.api_key_env)
        return text.replace(key, "***") if key else text

    def fail(self, what: str, kind: type[GgeError] = GgeError) -> GgeError:
        """An error of ``kind`` naming the POST URL and the model, the API key redacted."""
        return kind(self.redact(f"POST {self.url} (model {self.model!r}): {what}"))

    def auth_headers(self) -> dict[str, str]:
        """The headers of every request: JSON accepted, and the API key where its variable is set."""
        headers = {"Accept": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def heard(self) -> None:
        """The server answered with an HTTP status: it is up (a connection error is now waited out)."""
        self.answered.set()
        self.server.answered()

    def post_once(self, payload: bytes, timeout_s: float) -> dict[str, Any]:
        """One try: the parsed JSON answer, or Retryable, or a GgeError (refused / a configuration)."""
        headers = {"Content-Type": "application/json", **self.auth_headers()}
        req = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        try:
            with self._opener.open(req, timeout=timeout_s) as resp:
                self.heard()
                raw = resp.read()
        except urllib.error.HTTPError as e:
            self.heard()
            body = _error_body(e)
            message = truncate(self.redact(server_message(body)) or str(e.reason))
            what = f"HTTP {e.code}: {message}"
            if e.code == 429 or e.code >= 500:
                raise Retryable(
                    what,
                    retry_after(e.headers.get("Retry-After") if e.headers else None),
                    overload=e.code in (429, 503, 504),
                    busy=e.code in (429, 503),
                ) from None
            key_set = bool(os.environ.get(self.api_key_env))
            hint = config_hint(e.code, message, self.api_root(), self.api_key_env, key_set)
            if hint is not None:
                raise self.fail(f"{what}; {hint}") from None
            if e.code in REQUEST_REFUSALS:
                message = self.redact(f"POST {self.url} (model {self.model!r}): {what}")
                raise Refused(message, e.code) from None
            raise self.fail(what) from None
        except TimeoutError:
            raise Retryable(f"timed out after {timeout_s:g} s", overload=True) from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, TimeoutError):
                raise Retryable(f"timed out after {timeout_s:g} s", overload=True) from None
            # never connected (refused, no route, a name that does not resolve) or cut while sending
            what = f"connection error: {connection_reason(e.reason)}"
            raise Retryable(what, connection=True, unreached=True) from None
        except (ConnectionError, http.client.IncompleteRead) as e:  # reset, closed without an answer
            raise Retryable(f"connection error: {connection_reason(e)}", connection=True) from None
        except (OSError, http.client.HTTPException) as e:
            raise Retryable(f"connection error: {type(e).__name__}: {e}") from None
        try:
            data = json.loads(raw)
        except ValueError:
            text = truncate(raw.decode("utf-8", "replace"))
            raise Retryable(f"malformed response, not JSON: {self.redact(text)!r}") from None
        if not isinstance(data, dict):
            raise Retryable(f"malformed response, expected a JSON object, got {truncate(str(data))!r}")
        return data

    def api_root(self) -> str:
        """The API root the user gave (``base_url`` without ``/chat/completions``)."""
        root = self.base_url
        return root[: -len("/chat/completions")] if root.endswith("/chat/completions") else root

    def get(self, path: str, timeout_s: float | None = None) -> tuple[int, dict[str, str], bytes]:
        """One GET to the server, without retries (a probe of what it serves and says about itself).

        Sent as the POSTs are: the same proxy rule (none for a loopback host) and the API key header
        where its variable is set.

        Args:
            path: Starting with ``/``: relative to the server root (``scheme://host:port``, e.g.
                ``/version`` for vLLM, ``/get_server_info`` for SGLang); otherwise relative to the
                API root (``models`` -> ``<base_url>/models``).
            timeout_s: How long to wait for the answer (default: ``timeout_s``).

        Returns:
            The HTTP status, the headers (names lowercased) and the body; an HTTP error status is
            returned as any other (no exception).

        Raises:
            TransientError: Nothing answered (a connection error or a timeout); the message names the URL.

        Example:
            >>> Transport("http://127.0.0.1:9/v1", "m", "OPENAI_API_KEY", 60.0, 0.0).get_url("/version")
            'http://127.0.0.1:9/version'
        """
        url = self.get_url(path)
        req = urllib.request.Request(url, headers=self.auth_headers(), method="GET")
        wait = self.timeout_s if timeout_s is None else float(timeout_s)
        try:
            with self._opener.open(req, timeout=wait) as resp:
                self.heard()
                status, headers, body = resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            self.heard()
            body = _error_body(e)
            status, headers = e.code, e.headers
        except TimeoutError:
            raise TransientError(f"GET {url}: timed out after {wait:g} s") from None
        except urllib.error.URLError as e:
            reason = "timed out" if isinstance(e.reason, TimeoutError) else connection_reason(e.reason)
            raise TransientError(f"GET {url}: nothing answers ({reason})") from None
        except (OSError, http.client.HTTPException) as e:
            raise TransientError(f"GET {url}: {connection_reason(e)}") from None
        named = {k.lower(): v for k, v in headers.items()} if headers is not None else {}
        return int(status), named, body

    def get_url(self, path: str) -> str:
        """The URL :meth:`get` asks for ``path`` (``/x``: from the server root; ``x``: from the API root)."""
        if path.startswith("/"):
            parsed = urllib.parse.urlsplit(self.base_url)
            return f"{parsed.scheme}://{parsed.netloc}{path}"
        return f"{self.api_root()}/{path}"

    def poll(self) -> bool:
        """One poll of a server that went away: True when ``GET <base_url>/models`` says it is back.

        Back: any status below 500, or 501 (a server without that route answers it: it is up); a
        502, 503 or 504 is a proxy in front of a server still away, or a server still loading.
        """
        try:
            status, _, _ = self.get("models", timeout_s=min(self.timeout_s, POLL_TIMEOUT_S))
        except GgeError:
            return False
        return status < 500 or status == 501


def _error_body(error: urllib.error.HTTPError) -> bytes:
    """The body of an HTTP error answer (empty where it cannot be read)."""
    try:
        return error.read()
    except (OSError, http.client.HTTPException):
        return b""
