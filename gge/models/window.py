"""The request window of an endpoint run: how many requests are in flight at once, fixed or adaptive.

Every request an OpenAI-compatible backend sends takes a place in one :class:`RequestWindow` for the
whole run (all samples, stages and benchmarks), so the server always has up to ``limit`` requests to
work on and never more.

- **fixed** (``model.concurrency=N``): at most N requests in flight.
- **adaptive** (``model.concurrency`` unset): AIMD, as TCP does. The window starts at
  :data:`ADAPTIVE_START` and, until its first decrease, grows by one request per answer (slow start:
  it doubles every round trip while the server keeps up); after that by one request per window of
  answers (``+1/limit`` per answer); never above ``max_limit``, and only on the answers to requests
  sent while the window was full (a client that does not fill its window learns nothing about the
  server from it). An overload (HTTP 429, 503 or 504, a
  timeout) halves it. Latency that has grown past :data:`LATENCY_FACTOR` times the lowest the run has
  seen for requests of the same kind (the server is queueing the requests, not serving them: more in
  flight only makes each one wait longer) takes off a tenth, but never below where the window
  started: only a server that says it is overloaded takes it lower. At most one decrease per round
  trip: the answers to requests sent before the last decrease do not decrease it again.

The window records what it did: its limit over time, the requests in flight (peak, and mean over the
time any request was in flight), and the decreases. :meth:`RequestWindow.summary` is results.json
``cost.window``.

Example:
    >>> w = RequestWindow(limit=2)
    >>> a, b = w.acquire(), w.acquire()
    >>> w.in_flight, w.limit
    (2, 2)
    >>> w.release(a, "ok"); w.release(b, "ok")
    >>> w.summary()["peak_in_flight"], w.summary()["mode"]
    (2, 'fixed')
    >>> w = RequestWindow(adaptive=True, max_limit=8)
    >>> w.limit
    8
    >>> t = w.acquire(); w.release(t, "overload"); w.limit
    4
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Literal

from gge.documents.cost import WindowSummary
from gge.errors import GgeError

ADAPTIVE_START = 64
"""Where an adaptive window starts: enough to fill a vLLM server serving one 7B VLM on one GPU (its
scheduler runs up to ``max_num_seqs`` = 256 sequences, but image prefill keeps a grounding request's
useful concurrency below that), and few enough that a hosted API's rate limit is found within a
second or two of halvings."""

DEFAULT_MAX = 256
"""The most requests an adaptive window keeps in flight by default (``model.max_concurrency``): vLLM's
default ``max_num_seqs``; beyond it a server only queues."""

LATENCY_FACTOR = 2.0
"""A smoothed latency this many times the run's lowest means queueing: a continuous-batching server
slows each request down a little as it batches more of them, but not twice over unless it queues them
(and a request the client holds in a server's queue holds its images in the client's memory)."""

_EWMA = 0.1
"""Weight of the newest answer in the smoothed latency."""

_WARMUP = 8
"""Answers before the smoothed latency counts as the baseline."""

Outcome = Literal["ok", "overload", "error"]
"""What became of one try: answered, refused for load (429, 503, a timeout), or failed otherwise."""


@dataclass(frozen=True)
class Ticket:
    """A place in the window, held by one try from :meth:`RequestWindow.acquire` to its release.

    Attributes:
        sent: When it was taken (``time.perf_counter``).
        epoch: The window's decrease count then (a later decrease is not this try's to repeat).
        limit: The window's limit when it was taken (the ledger's ``window``).
        in_flight: Requests in flight with it (itself included).
        kind: The request's kind, whose latencies alone are compared with each other.
    """

    sent: float
    epoch: int
    limit: int
    in_flight: int = 1
    kind: Hashable = None


class RequestWindow:
    """At most ``limit`` requests in flight across threads; adaptive (AIMD) or fixed.

    Args:
        limit: The fixed window (or, adaptive, where it starts: default :data:`ADAPTIVE_START`, at most
            ``max_limit``).
        adaptive: Grow on answers and shrink on overloads and queueing latency.
        max_limit: The most an adaptive window grows to (default :data:`DEFAULT_MAX`).
        clock: The time source (tests pass their own).
        latency_floor: The least the latency rule takes an adaptive window down to (default: where it
            started; an overload takes it lower, down to one request).

    Raises:
        GgeError: A limit below 1.
    """

    def __init__(
        self,
        limit: int | None = None,
        *,
        adaptive: bool = False,
        max_limit: int | None = None,
        clock: Callable[[], float] | None = None,
        latency_floor: int | None = None,
    ) -> None:
        top = DEFAULT_MAX if max_limit is None else int(max_limit)
        if top < 1:
            raise GgeError(f"model.max_concurrency must be at least 1, got {top}")
        if limit is None:
            if not adaptive:
                raise GgeError("a fixed request window needs its limit (model.concurrency)")
            limit = min(ADAPTIVE_START, top)
        if limit < 1:
            raise GgeError(f"model.concurrency must be at least 1, got {limit}")
        self.adaptive = adaptive
        self.max_limit = top if adaptive else int(limit)
        self._limit = float(min(limit, self.max_limit))
        self.start = int(self._limit)
        self._clock = clock or time.perf_counter
        self._cond = threading.Condition()
        self.in_flight = 0
        self.waiting = 0
        """Tries waiting for a place now (requests ready to go: the demand beyond the window)."""
        self._epoch = 0
        self._latency: dict[Hashable, float] = {}
        self._baseline: dict[Hashable, float] = {}
        self._answers: dict[Hashable, int] = {}
        self.latency_floor = self.start if latency_floor is None else max(1, int(latency_floor))
        self._slow_start = True
        self._decreases = 0
        self._peak = 0
        self._sent = 0
        self._overloads = 0
        self._area = 0.0
        self._busy = 0.0
        self._last = self._clock()
        self.history: list[tuple[float, int]] = [(0.0, self.start)]
        self._t0 = self._last

    @property
    def limit(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self._limit))

    def _tick(self) -> None:
        """Add the time since the last change to the in-flight integral (holding the lock)."""
        now = self._clock()
        if self.in_flight > 0:
            self._area += self.in_flight * (now - self._last)
            self._busy += now - self._last
        self._last = now

    def acquire(self, cancelled: threading.Event | None = None, kind: Hashable = None) -> Ticket | None:
        """Wait for a place in the window and take it.

        Args:
            cancelled: Stop waiting when this is set (returns None).
            kind: What kind of request it is (an endpoint: its token budget and body size): latency
                is compared within a kind only, as a one-token judge of a small screenshot is not a
                256-token answer about a 4K one.

        Returns:
            The place, to hand back to :meth:`release`; None when ``cancelled`` was set first.
        """
        with self._cond:
            self.waiting += 1
            try:
                while self.in_flight >= self.limit:
                    if cancelled is not None and cancelled.is_set():
                        return None
                    self._cond.wait(0.1 if cancelled is not None else None)
            finally:
                self.waiting -= 1
            self._tick()
            self.in_flight += 1
            self._sent += 1
            self._peak = max(self._peak, self.in_flight)
            return Ticket(self._clock(), self._epoch, self.limit, self.in_flight, kind)

    def release(self, ticket: Ticket, outcome: Outcome) -> None:
        """Give a place back, with what became of its try (an adaptive window learns from it).

        Args:
            ticket: The place :meth:`acquire` gave.
            outcome: ``ok`` (answered), ``overload`` (429, 503, a timeout) or ``error``.
        """
        with self._cond:
            self._tick()
            self.in_flight -= 1
            if outcome == "overload":
                self._overloads += 1
            if self.adaptive:
                self._learn(ticket, outcome)
            self._cond.notify_all()

    def _learn(self, ticket: Ticket, outcome: Outcome) -> None:
        before = self.limit
        if outcome == "overload":
            self._decrease(ticket, 0.5)
        elif outcome == "ok":
            kind = ticket.kind
            latency = self._clock() - ticket.sent
            smooth = self._latency.get(kind)
            now = latency if smooth is None else (1 - _EWMA) * smooth + _EWMA * latency
            self._latency[kind] = now
            self._answers[kind] = self._answers.get(kind, 0) + 1
            if self._answers[kind] >= _WARMUP:
                self._baseline[kind] = min(self._baseline.get(kind, now), now)
            lowest = self._baseline.get(kind)
            if lowest is not None and now > LATENCY_FACTOR * lowest:
                if self._limit > self.latency_floor:
                    self._decrease(ticket, 0.9, floor=self.latency_floor)
            elif ticket.in_flight >= ticket.limit:  # grown only while the window was full
                step = 1.0 if self._slow_start else 1.0 / self._limit
                self._limit = min(float(self.max_limit), self._limit + step)
        if self.limit != before:
            self.history.append((round(self._clock() - self._t0, 3), self.limit))

    def _decrease(self, ticket: Ticket, factor: float, floor: int = 1) -> None:
        if ticket.epoch != self._epoch:  # sent before the last decrease: already answered for
            return
        self._epoch += 1
        self._slow_start = False
        before = self.limit
        self._limit = max(float(floor), 1.0, self._limit * factor)
        if self.limit < before:
            self._decreases += 1

    def owns(self, ticket: Ticket) -> bool:
        """Whether a server's "too busy" answer to this try is the window's to answer, not the request's.

        True for an adaptive window with other requests in flight beside the try: the window was too
        large, and it shrinks. False for a request alone or in a fixed window: the try failed.
        """
        return self.adaptive and ticket.in_flight > 1

    def summary(self) -> WindowSummary:
        """What the window did so far (results.json ``cost.window``)."""
        with self._cond:
            self._tick()
            return {
                "mode": "adaptive" if self.adaptive else "fixed",
                "start": self.start,
                "max": self.max_limit,
                "final": self.limit,
                "peak_in_flight": self._peak,
                "mean_in_flight": round(self._area / self._busy, 2) if self._busy > 0 else 0.0,
                "sent": self._sent,
                "overloads": self._overloads,
                "decreases": self._decreases,
                "busy_seconds": round(self._busy, 3),
            }
