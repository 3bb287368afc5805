"""The request loop of the OpenAI-compatible backend: every try of every request, in one window.

Every request takes a place in the backend's one :class:`~gge.models.window.RequestWindow`
(``concurrency`` requests in flight, or an adaptive window that finds the server's limit), whichever
thread sends it: calls from many threads at once (the windowed run, :mod:`gge.run.windowed`) share
it, so the window holds across samples, stages and benchmarks. The requests of one call go out
together (:meth:`RequestLoop.map`; results come back in request order); each retries with
exponential backoff on HTTP 429, 5xx, timeouts and answers that are not a JSON object
(:meth:`RequestLoop.post`). One try is :class:`~gge.models.openai_transport.Transport`'s.

A connection error after the server has answered once waits for the server (``server_wait_s``) and
sends the try again, spending no retry; before it has answered once, nothing listening there fails
fast (one retry). A request that failed for good raises :class:`~gge.errors.RequestFailed` (that
sample's failure) and is counted in ``failed``; one not sent, or no longer waited for, because another
failed or the run is stopping raises :class:`Cancelled`.

Example:
    >>> from gge.models.openai_reading import ReadingRecord
    >>> from gge.models.openai_transport import Transport
    >>> from gge.models.window import RequestWindow
    >>> t = Transport("http://127.0.0.1:8000/v1", "m", "OPENAI_API_KEY", 60.0, 600.0)
    >>> loop = RequestLoop(t, RequestWindow(4), max_retries=5, backoff_s=1.0, reading=ReadingRecord())
    >>> loop.map(lambda request, stop: request, []), loop.counts()["requests"], loop.window.limit
    ([], 0, 4)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any

from gge.errors import GgeError, RequestFailed, ServerGone, TransientError
from gge.models.base import GenerationRequest
from gge.models.openai_http import MAX_DELAY_S, Retryable, request_body
from gge.models.openai_reading import WINDOW_KEY, ReadingRecord
from gge.models.openai_transport import Transport
from gge.models.window import RAMP_TIMEOUT_FACTOR, RequestWindow

log = logging.getLogger("gge.models.openai_api")
"""The backend's logger (the retry warnings and the server wait's lines are all under its name)."""


class Cancelled(GgeError):
    """A request not sent, or no longer waited for, because another one failed or the run is stopping."""


def results_in_order(futures: Sequence[Future[Any]], stop: threading.Event) -> list[Any]:
    """The futures' results in order; on a failure, ``stop`` is set and the first real failure raised.

    The requests cancelled because of it (:class:`Cancelled`) do not hide it: a sample's one failed
    request is raised as what it is (a :class:`~gge.errors.RequestFailed`, say), whatever its place.
    """
    wait(futures, return_when=FIRST_EXCEPTION)
    if any(f.done() and f.exception() is not None for f in futures):
        stop.set()
        wait(futures)
        errors = [e for f in futures if (e := f.exception()) is not None]
        raise next((e for e in errors if not isinstance(e, Cancelled)), errors[0])
    return [f.result() for f in futures]


class RequestLoop:
    """The tries of every request of one backend, in its request window, and what they added up to.

    Args:
        transport: Sends one try.
        window: The requests in flight at once, across every call from every thread.
        max_retries: Retries after the first try on 429, 5xx, connection errors and timeouts (an
            HTTP 429 or 503 that shrinks an adaptive window is retried without counting).
        backoff_s: First retry delay; doubled on each retry, at most
            :data:`~gge.models.openai_http.MAX_DELAY_S`; a ``Retry-After`` header replaces it.
        reading: What the answers show about the server (each answer is read into it).
    """

    def __init__(
        self,
        transport: Transport,
        window: RequestWindow,
        *,
        max_retries: int,
        backoff_s: float,
        reading: ReadingRecord,
    ) -> None:
        self.transport = transport
        self.window = window
        self.max_retries = max_retries
        self.backoff_s = float(backoff_s)
        self.reading = reading
        self.cancelled = threading.Event()
        """Set while the run is stopping: requests waiting for the window or a retry fail at once."""
        self._lock = threading.Lock()
        self._usage = {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "requests": 0,
            "retries": 0,
            "overloads": 0,
            "failed": 0,
        }

    def counts(self) -> dict[str, int]:
        """The usage so far: tokens, requests answered, retries, overloads and requests failed for good."""
        with self._lock:
            return dict(self._usage)

    def map(self, fn: Any, requests: Sequence[GenerationRequest]) -> list[Any]:
        """``fn(request, stop)`` over the requests, all at once, results in request order.

        Each request's tries wait for their place in the window, so the requests of one call and of
        every other thread's calls share it. On the first failure the requests not yet sent are
        cancelled, retry waits are cut short, and the failure is raised (:func:`results_in_order`:
        the failure itself, never a cancellation it caused).
        """
        stop = threading.Event()
        if not requests:
            return []
        if self.window.max_limit == 1 or len(requests) == 1:
            return [fn(r, stop) for r in requests]
        pool = ThreadPoolExecutor(
            max_workers=min(self.window.max_limit, len(requests)), thread_name_prefix="gge-openai"
        )
        try:
            futures: list[Future[Any]] = [pool.submit(fn, r, stop) for r in requests]
            return results_in_order(futures, stop)
        except BaseException:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)

    def request_failed(self, what: str) -> RequestFailed:
        """One request failed for good (counted in ``failed``): that sample's failure, not the run's."""
        with self._lock:
            self._usage["failed"] += 1
        error = self.transport.fail(what, RequestFailed)
        assert isinstance(error, RequestFailed)
        return error

    def _pause(self, delay: float, stop: threading.Event) -> bool:
        """Wait ``delay`` seconds before a retry; True (at once) when the call or the run is cancelled."""
        end = time.monotonic() + delay
        while (left := end - time.monotonic()) > 0:
            if stop.wait(min(left, 0.1)) or self.cancelled.is_set():
                return True
        return stop.is_set() or self.cancelled.is_set()

    def post(self, body: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        """POST with retries: exponential backoff (or ``Retry-After``) on retryable failures.

        A connection error after the server has answered once waits for the server
        (:class:`~gge.models.openai_http.ServerWait`) and sends the try again, spending no retry;
        before it has answered once, nothing listening there fails fast (one retry).
        """
        payload = request_body(body)
        kind = (body.get("max_tokens"), len(payload).bit_length())  # latencies compared within a kind
        attempt = 0  # the tries that failed on their own (an overload the window shrinks for is not one)

        def stopping() -> bool:
            return stop.is_set() or self.cancelled.is_set()

        while True:
            if stopping():
                raise self.transport.fail("cancelled after another request failed", Cancelled)
            seen = self.transport.server.hold(stopping)
            if stopping():
                continue
            ticket = self.window.acquire(self.cancelled, kind=kind)
            if ticket is None:
                raise self.transport.fail("cancelled: the run is stopping", Cancelled)
            timeout_s = self.transport.timeout_s * (RAMP_TIMEOUT_FACTOR if ticket.ramp else 1.0)
            try:
                data = self.transport.post_once(payload, timeout_s)
            except Retryable as e:
                heard = self.transport.answered.is_set()
                waits = e.connection and heard and self.transport.server_wait_s > 0
                owned = e.busy and self.window.owns(ticket)
                fast = e.unreached and not heard and attempt >= min(1, self.max_retries)
                retried = not waits and not fast and (attempt < self.max_retries or owned)
                # counted before the window's place is given back: whoever reads the counters once the
                # next request is out (a Ctrl-C's record of the invocation) sees this try's
                with self._lock:
                    self._usage["overloads"] += e.overload
                    self._usage["retries"] += retried
                self.window.release(ticket, "overload" if e.overload else "error")
                if waits:
                    if self.transport.server.wait(e.what, seen, self.transport.poll, stopping):
                        continue  # the server is back: sent again, no retry spent
                    raise self.transport.fail("cancelled: the run is stopping", Cancelled) from None
                if fast:
                    reason = e.what.removeprefix("connection error: ")
                    raise TransientError(  # a server still starting: `gge watch` tries the step again
                        f"nothing answers at {self.transport.base_url} ({reason}): is the server up, and is "
                        "base_url's port right?"
                    ) from None
                if not retried:
                    what = f"{e.what} (after {self.max_retries} retries)"
                    if e.connection and heard:  # model.server_wait_s=0: no wait
                        what += "; model.server_wait_s=0: not waited for"
                        raise self.transport.fail(what, ServerGone) from None
                    raise self.request_failed(what) from None
                delay = min(
                    self.backoff_s * 2**attempt if e.retry_after is None else e.retry_after, MAX_DELAY_S
                )
                if owned:
                    limit = self.window.limit
                    log.info(
                        "POST %s: %s; the request window shrinks to %d", self.transport.url, e.what, limit
                    )
                else:
                    attempt += 1
                    what, most = e.what, self.max_retries
                    log.warning(
                        "POST %s: %s; retry %d/%d in %.1f s", self.transport.url, what, attempt, most, delay
                    )
                if delay > 0 and self._pause(delay, stop):
                    raise self.transport.fail("cancelled after another request failed", Cancelled) from None
                continue
            except RequestFailed:
                self.window.release(ticket, "error")
                with self._lock:
                    self._usage["failed"] += 1
                raise
            except BaseException:
                self.window.release(ticket, "error")
                raise
            try:
                data[WINDOW_KEY] = ticket.limit
                self.reading.answered(data)
                usage = data.get("usage")
                with self._lock:  # counted before the place is given back, as a failed try is
                    self._usage["requests"] += 1
                    if isinstance(usage, dict):
                        for k in ("prompt_tokens", "completion_tokens"):
                            if isinstance(usage.get(k), int):
                                self._usage[k] += usage[k]
            finally:
                self.window.release(ticket, "ok")
            return data
