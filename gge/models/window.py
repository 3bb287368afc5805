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

Where an adaptive window starts: :data:`ADAPTIVE_START`, or what a probe of the server measured
(:meth:`RequestWindow.start_at`, e.g. one request at a time for a server that generates one at a
time), recorded with its reason.

A timeout during the ramp does not throw away answers the server is still computing. Until the
window learns the server's limit (slow start), the first waves may queue behind each other on a
server slower than the start assumed; a try sent then waits :data:`RAMP_TIMEOUT_FACTOR` times the
usual timeout for its answer (the backend reads :attr:`Ticket.ramp`), and once any try has been out
longer than the usual timeout (``stall_s``: the server queues them), slow start ends and the window
halves at once, so no more pile up while those already sent are answered. (A server that does not
cancel what a client gave up on, such as ``transformers serve``, otherwise computes every timed-out
answer for nothing, and its retry queues again.)

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

RAMP_TIMEOUT_FACTOR = 4.0
"""How many usual timeouts a try sent during slow start waits for its answer: the first wave of 64
queued on a server that serves one request at a time in 3.75 s is answered within 4 x 60 s."""

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
        ramp: Taken while an adaptive window was in slow start: its try waits
            :data:`RAMP_TIMEOUT_FACTOR` times the usual timeout.
        serial: Its number among the window's tickets.
    """

    sent: float
    epoch: int
    limit: int
    in_flight: int = 1
    kind: Hashable = None
    ramp: bool = False
    serial: int = 0


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
        stall_s: During slow start, a try out longer than this ends slow start and halves the
            window (the endpoint's usual timeout); None: never.

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
        stall_s: float | None = None,
    ) -> None:
        top = DEFAULT_MAX if max_limit is None else int(max_limit)
        if top < 1:
            raise GgeError(f"model.max_concurrency must be at least 1, got {top}")
        given = "given"
        if limit is None:
            if not adaptive:
                raise GgeError("a fixed request window needs its limit (model.concurrency)")
            limit = min(ADAPTIVE_START, top)
            given = "default"
        if limit < 1:
            raise GgeError(f"model.concurrency must be at least 1, got {limit}")
        self.adaptive = adaptive
        self.max_limit = top if adaptive else int(limit)
        self._limit = float(min(limit, self.max_limit))
        self.start = int(self._limit)
        self.start_reason = "model.concurrency" if not adaptive else given
        self.stall_s = stall_s
        self._out: dict[int, float] = {}  # the tickets in flight: serial -> sent
        self._stalls = 0
        self._clock = clock or time.perf_counter
        self._cond = threading.Condition()
        self.in_flight = 0
        self.waiting = 0
        """Tries waiting for a place now (requests ready to go: the demand beyond the window)."""
        self._epoch = 0
        self._latency: dict[Hashable, float] = {}
        self._baseline: dict[Hashable, float] = {}
        self._answers: dict[Hashable, int] = {}
        self._floor_given = latency_floor is not None
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
            self._check_stall()
            try:
                while self.in_flight >= self.limit:
                    if cancelled is not None and cancelled.is_set():
                        return None
                    self._cond.wait(0.1 if cancelled is not None or self.stall_s is not None else None)
                    self._check_stall()
            finally:
                self.waiting -= 1
            self._tick()
            self.in_flight += 1
            self._sent += 1
            self._peak = max(self._peak, self.in_flight)
            now = self._clock()
            ramp = self.adaptive and self._slow_start
            self._out[self._sent] = now
            return Ticket(now, self._epoch, self.limit, self.in_flight, kind, ramp, self._sent)

    def release(self, ticket: Ticket, outcome: Outcome) -> None:
        """Give a place back, with what became of its try (an adaptive window learns from it).

        Args:
            ticket: The place :meth:`acquire` gave.
            outcome: ``ok`` (answered), ``overload`` (429, 503, a timeout) or ``error``.
        """
        with self._cond:
            self._tick()
            self.in_flight -= 1
            self._out.pop(ticket.serial, None)
            self._check_stall()
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

    def _check_stall(self) -> None:
        """End slow start and halve, once, when a try has been out past ``stall_s`` (holding the lock)."""
        if not (self.adaptive and self._slow_start and self.stall_s is not None and self._out):
            return
        if self._clock() - min(self._out.values()) <= self.stall_s:
            return
        self._slow_start = False
        self._epoch += 1
        self._stalls += 1
        before = self.limit
        self._limit = max(1.0, self._limit * 0.5)
        if self.limit < before:
            self._decreases += 1
            self.history.append((round(self._clock() - self._t0, 3), self.limit))

    def start_at(self, limit: int, reason: str) -> None:
        """Start an adaptive window at ``limit`` (clamped to 1..``max_limit``) instead of its default.

        Meant for before the run's requests (a probe of the server calls it with what it measured:
        ``start_at(1, "the server answered 4 requests one after another")``); the latency rule's
        floor moves with the start unless it was given. A fixed window keeps the limit it was given
        (``model.concurrency``): the call does nothing.

        Args:
            limit: Requests in flight to start with.
            reason: Why, recorded in :meth:`summary` (``start_reason``).
        """
        with self._cond:
            if not self.adaptive:
                return
            start = max(1, min(int(limit), self.max_limit))
            self._limit = float(start)
            self.start = start
            self.start_reason = reason
            self._slow_start = True
            if not self._floor_given:
                self.latency_floor = start
            self.history.append((round(self._clock() - self._t0, 3), start))
            self._cond.notify_all()

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
                "start_reason": self.start_reason,
                "max": self.max_limit,
                "final": self.limit,
                "peak_in_flight": self._peak,
                "mean_in_flight": round(self._area / self._busy, 2) if self._busy > 0 else 0.0,
                "sent": self._sent,
                "overloads": self._overloads,
                "decreases": self._decreases,
                "busy_seconds": round(self._busy, 3),
                "ramp_stalls": self._stalls,
            }
