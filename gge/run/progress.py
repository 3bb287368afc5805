r"""The progress line of an endpoint run: how far it is, what its requests are doing, how long is left.

An endpoint run (:mod:`gge.run.windowed`) can take hours and prints nothing of its own between the
load lines and the report. :class:`Progress` says, in one line: the samples done out of each
benchmark's total (those an earlier invocation finished count as done: the first plain line says how
many, a terminal's line all along), the requests in flight and the window's limit, requests per
second (recent), the retries, overloads and server errors so far, and an ETA from the recent sample
rate ("ETA ?" until there is one). While the server is unreachable the request part says so and since when.

- On a terminal (``is_tty``): one live line, redrawn in place (``\r``, the line, clear to its end) at
  most every :data:`REDRAW_S`; closing it draws the final state and ends it with a newline, so the
  report's lines start clean. What else the run writes to stderr meanwhile (a retry warning) gets a
  row of its own above the line (:meth:`Progress.above`).
- Elsewhere (a pipe, a log file): one plain line every ``interval_s`` (``progress_s``), plus one when
  the server becomes unreachable and one when it is back; nothing else while the server is healthy.
  A run shorter than one interval prints nothing at all (not even a final line: a 3-sample test run
  gets no noise); one that printed a line ends with a final one.

Numbers come from two places: the finished samples from the run's ``on_result`` callback
(:meth:`Progress.counting` wraps it), the request counters from the endpoint backend's ``status()``
(:func:`read_status`, which degrades to what a backend exposes). Time is injected (a clock, and how
a clock time is said), so tests drive :meth:`Progress.tick` with a fake clock and pin the text; a daemon
ticker thread calls it in a real run. A progress failure never breaks a run: the line stops, the run
goes on.

Example:
    >>> import io
    >>> now = [0.0]
    >>> out = io.StringIO()
    >>> p = Progress({"osworld_g": 4}, stream=out, is_tty=False, interval_s=60, clock=lambda: now[0])
    >>> p.add_done("osworld_g")
    >>> now[0] = 60.0
    >>> p.tick()
    >>> out.getvalue()
    'progress [1 min]: osworld_g 1/4 | 0 server errors | ETA 3 min\n'
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO, TypedDict, cast

REDRAW_S = 0.5
"""A terminal's line is redrawn at most this often (twice a second: live, and cheap to draw)."""

RATE_WINDOW_S = 120.0
"""The recent rates (samples and requests per second) are measured over the last two minutes: long
enough to smooth a window's bursts of answers, short enough to follow a server that slowed down."""

MIN_SPAN_S = 5.0
"""No rate (and no ETA) from less than this much of the run: a few answers say nothing yet."""

CLEAR = "\x1b[K"
"""Clear from the cursor to the end of the line (ANSI; every terminal gge runs in understands it)."""


class RequestStatus(TypedDict):
    """What the progress line knows of the run's requests (None: the backend does not say).

    The endpoint backend's ``status()`` (:class:`gge.models.openai_api.OpenAIBackend`) gives each
    of these; :func:`read_status` sums them over a policy's backends.

    Attributes:
        in_flight: Requests in flight now.
        limit: The request window's limit now.
        requests: Requests answered so far.
        retries: Requests retried so far.
        overloads: Overloads so far (HTTP 429/503/504, timeouts).
        failed: Requests that failed for good.
        unreachable_since: When the server became unreachable (epoch seconds), None while it answers.
        server_wait_s: How long an unreachable server is waited for.
    """

    in_flight: int | None
    limit: int | None
    requests: int | None
    retries: int | None
    overloads: int | None
    failed: int | None
    unreachable_since: float | None
    server_wait_s: float | None


_COUNTS = ("in_flight", "limit", "requests", "retries", "overloads", "failed")


def unknown_status() -> RequestStatus:
    """A status that knows nothing (a policy without an endpoint backend)."""
    return RequestStatus(
        in_flight=None,
        limit=None,
        requests=None,
        retries=None,
        overloads=None,
        failed=None,
        unreachable_since=None,
        server_wait_s=None,
    )


def _backends(policy: object) -> list[object]:
    """The distinct backends of a policy (proposer, then a separate critic), or the policy itself."""
    found: list[object] = []
    for name in ("backend", "critic_backend"):
        backend = getattr(policy, name, None)
        if backend is not None and all(backend is not b for b in found):
            found.append(backend)
    return found or [policy]


def _one_status(backend: object) -> dict[str, Any]:
    """One backend's ``status()``, or what its window and usage show when it has none."""
    status = getattr(backend, "status", None)
    if callable(status):
        got = status()
        return dict(got) if isinstance(got, Mapping) else {}
    known: dict[str, Any] = {}
    window = getattr(backend, "window", None)
    if window is not None:
        known["in_flight"] = getattr(window, "in_flight", None)
        known["limit"] = getattr(window, "limit", None)
    return known


def read_status(policy: object) -> RequestStatus:
    """The request counters of a policy's endpoint backends, summed (proposer and a separate critic).

    Each backend's ``status()`` where it has one; otherwise its request window's ``in_flight`` and
    ``limit`` where it has a window; None for whatever no backend says. The server is unreachable
    since the earliest of its backends' ``unreachable_since``.

    Args:
        policy: The run's policy (:class:`gge.models.policy.GroundingPolicy`, or a backend itself).

    Returns:
        The counters, None where unknown.

    Example:
        >>> class Backend:
        ...     def status(self):
        ...         return {"in_flight": 3, "limit": 8, "requests": 40, "retries": 2, "overloads": 1,
        ...                 "failed": 0, "unreachable_since": None, "server_wait_s": 600.0}
        >>> class Policy:
        ...     backend = critic_backend = Backend()
        >>> s = read_status(Policy())
        >>> s["in_flight"], s["limit"], s["requests"], s["server_wait_s"]
        (3, 8, 40, 600.0)
    """
    out = unknown_status()
    for backend in _backends(policy):
        got = _one_status(backend)
        for key in _COUNTS:
            value = got.get(key)
            if isinstance(value, int | float):
                before = out[key]  # type: ignore[literal-required]
                out[key] = int(value) + (before or 0)  # type: ignore[literal-required]
        since = got.get("unreachable_since")
        if isinstance(since, int | float):
            before_since = out["unreachable_since"]
            out["unreachable_since"] = float(since) if before_since is None else min(before_since, since)
        wait = got.get("server_wait_s")
        if isinstance(wait, int | float):
            out["server_wait_s"] = max(float(wait), out["server_wait_s"] or 0.0)
    return out


# --- the rules: pure functions


def recent_rate(
    history: Sequence[tuple[float, float]],
    now: float,
    window_s: float = RATE_WINDOW_S,
    min_span_s: float = MIN_SPAN_S,
) -> float | None:
    """A count's rate per second over the recent past, from snapshots of its running total.

    The rate is the growth of the total from the oldest snapshot no older than ``window_s`` to the
    newest, divided by the time between them; None when they span less than ``min_span_s``.

    Args:
        history: ``(time, running total)`` snapshots, oldest first.
        now: The time now (snapshots before ``now - window_s`` are not recent).
        window_s: How far back "recent" reaches.
        min_span_s: The least time the snapshots used must span.

    Returns:
        Counts per second, or None.

    Example:
        >>> recent_rate([(0.0, 0), (50.0, 10), (100.0, 30), (150.0, 70)], now=150.0, window_s=120)
        0.6
        >>> recent_rate([(0.0, 0), (3.0, 4)], now=3.0) is None
        True
    """
    recent = [(t, total) for t, total in history if t >= now - window_s]
    if len(recent) < 2:
        return None
    (t0, c0), (t1, c1) = recent[0], recent[-1]
    if t1 - t0 < min_span_s:
        return None
    return (c1 - c0) / (t1 - t0)


def eta_seconds(remaining: int, rate: float | None) -> float | None:
    """Seconds left for ``remaining`` samples at ``rate`` samples per second (None: no rate, or 0).

    Example:
        >>> eta_seconds(90, 0.5), eta_seconds(90, 0.0), eta_seconds(0, None)
        (180.0, None, 0.0)
    """
    if remaining <= 0:
        return 0.0
    if rate is None or rate <= 0:
        return None
    return remaining / rate


def duration(seconds: float) -> str:
    """A duration as the progress line says it: seconds, minutes and seconds, or hours and minutes.

    Example:
        >>> duration(42.4), duration(192), duration(600), duration(3725)
        ('42 s', '3 min 12 s', '10 min', '1 h 2 min')
    """
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min" if rest == 0 else f"{minutes} min {rest} s"
    hours, rest = divmod(whole, 3600)
    return f"{hours} h {rest // 60} min"


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one}" if count == 1 else f"{count} {many}"


def progress_text(
    done: Mapping[str, int],
    totals: Mapping[str, int],
    status: RequestStatus,
    *,
    request_rate: float | None,
    eta: float | None,
    server_errors: int,
    resumed: int = 0,
    clock_text: Callable[[float], str] | None = None,
) -> str:
    """The progress line's text (no prefix, no line end).

    ``benchmark done/total`` for each benchmark; ``N resumed`` where an earlier invocation finished
    some; the requests in flight of the window's limit and requests per second; retries and
    overloads; server errors (samples whose requests failed for good); the ETA. What the backend does
    not say is left out. While the server is unreachable the request part says since when (through
    ``clock_text``) and how long it is waited for, and the ETA is "?".

    Args:
        done: Samples done per benchmark (those resumed included).
        totals: Samples per benchmark, in run order.
        status: The requests' counters (:func:`read_status`).
        request_rate: Requests answered per second, recently (None: not known yet).
        eta: Seconds left (None: "?").
        server_errors: Samples that are server errors so far.
        resumed: Samples an earlier invocation finished (said when above 0).
        clock_text: Turns an epoch time into the clock time said (default ``HH:MM:SS`` local).

    Returns:
        The line.

    Example:
        >>> s = unknown_status() | {"in_flight": 30, "limit": 32, "requests": 500, "retries": 4}
        >>> line = progress_text({"a": 10, "b": 0}, {"a": 20, "b": 5}, s | {"overloads": 1},
        ...                      request_rate=12.34, eta=3725, server_errors=1, resumed=3)
        >>> for part in line.split(" | "): print(part)
        a 10/20, b 0/5 (3 resumed)
        30/32 in flight, 12.3 req/s
        4 retries, 1 overload
        1 server error
        ETA 1 h 2 min
    """
    parts = [", ".join(f"{name} {done.get(name, 0)}/{total}" for name, total in totals.items())]
    if resumed > 0:
        parts[0] += f" ({resumed} resumed)"
    since = status["unreachable_since"]
    if since is not None:
        said = (clock_text or _local_clock)(since)
        wait = status["server_wait_s"]
        parts.append(
            f"server unreachable since {said}"
            + (f", waiting up to {duration(wait)}" if wait is not None else "")
        )
        eta = None
    else:
        requests: list[str] = []
        if status["in_flight"] is not None:
            limit = status["limit"]
            requests.append(
                f"{status['in_flight']}/{limit} in flight"
                if limit is not None
                else f"{status['in_flight']} in flight"
            )
        if status["requests"] is not None:
            requests.append(f"{request_rate:.1f} req/s" if request_rate is not None else "? req/s")
        if requests:
            parts.append(", ".join(requests))
    trouble = [
        _plural(int(value), one, many)
        for value, one, many in (
            (status["retries"], "retry", "retries"),
            (status["overloads"], "overload", "overloads"),
        )
        if value is not None
    ]
    if trouble:
        parts.append(", ".join(trouble))
    parts.append(_plural(server_errors, "server error", "server errors"))
    parts.append(f"ETA {duration(eta)}" if eta is not None else "ETA ?")
    return " | ".join(parts)


def _local_clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))


# --- the line


class Progress:
    r"""The progress line of one run: counts finished samples, reads the requests, draws or prints.

    Args:
        totals: Samples per benchmark in this run, in run order.
        done: Samples per benchmark an earlier invocation finished (counted as done, said once).
        stream: Where the line goes (the console's stderr).
        is_tty: Whether ``stream`` is a terminal: a live line redrawn in place; else plain lines.
        interval_s: Seconds between plain lines (not on a terminal); 0 turns the line off
            everywhere.
        status: Reads the requests' counters (:func:`read_status` over the run's policy); None: none.
        clock: Monotonic seconds (injected by tests).
        clock_text: How an epoch time is said (default local ``HH:MM:SS``; tests pass a fixed rule).
        redraw_s: A terminal's line is redrawn at most this often.
        window_s: How far back the recent rates reach.
        columns: The terminal's width, read before each draw (None or 0: do not cut the line).

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> with Progress({"a": 2}, stream=out, is_tty=True, interval_s=60, clock=lambda: 0.0) as p:
        ...     p.add_done("a"); p.add_done("a")
        >>> out.getvalue()
        '\rprogress [0 s]: a 2/2 | 0 server errors | ETA 0 s\x1b[K\n'
    """

    def __init__(
        self,
        totals: Mapping[str, int],
        done: Mapping[str, int] | None = None,
        *,
        stream: TextIO,
        is_tty: bool,
        interval_s: float,
        status: Callable[[], RequestStatus] | None = None,
        clock: Callable[[], float] = time.monotonic,
        clock_text: Callable[[float], str] | None = None,
        redraw_s: float = REDRAW_S,
        window_s: float = RATE_WINDOW_S,
        columns: Callable[[], int | None] | None = None,
    ) -> None:
        self.totals = dict(totals)
        self.resumed = {name: int((done or {}).get(name, 0)) for name in self.totals}
        self.done = dict(self.resumed)
        self.stream = stream
        self.is_tty = is_tty
        self.enabled = interval_s > 0
        self.interval_s = float(interval_s)
        self.redraw_s = float(redraw_s)
        self.window_s = float(window_s)
        self.server_errors = 0
        self.lines = 0  # plain lines printed (not on a terminal), or draws made (on a terminal)
        self._status = status
        self._clock = clock
        self._clock_text = clock_text
        self._columns = columns
        self._lock = threading.RLock()  # RLock: a line written above ours from inside a tick
        self._drawn = False  # a terminal's line is on the screen, the cursor at its end
        self._redraw = False  # something was written above it: draw it again at the next tick
        self._undo: list[Callable[[], None]] = []  # run at close (stderr put back)
        self._started = clock()
        self._last = self._started  # the last draw (on a terminal)
        self._due = self._started + max(self.interval_s, 1e-9)  # the next periodic line (elsewhere)
        self._finished = 0
        self._samples: deque[tuple[float, float]] = deque([(self._started, 0.0)])
        self._requests: deque[tuple[float, float]] = deque()
        self._said_resumed = False
        self._unreachable: float | None = None
        self._went_at = 0.0  # when this line first saw the server unreachable (``clock``)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- fed by the run

    def add(self, result: object) -> None:
        """Count one finished sample (a :class:`~gge.types.SampleResult`; a server error apart)."""
        server_error = getattr(result, "server_error", None) is not None
        self.add_done(str(getattr(result, "benchmark", "")), server_error=server_error)

    def add_done(self, benchmark: str, *, server_error: bool = False) -> None:
        """Count one finished sample of ``benchmark`` (``server_error``: its requests failed for good)."""
        with self._lock:
            self.done[benchmark] = self.done.get(benchmark, 0) + 1
            self._finished += 1
            self.server_errors += int(server_error)

    def counting(self, on_result: Callable[[Any], None] | None) -> Callable[[Any], None]:
        """``on_result`` wrapped to also count each result here (after it is handed on).

        A failure to count is swallowed (the line stops); ``on_result``'s own failures are the run's.
        """

        def counted(result: Any) -> None:
            if on_result is not None:
                on_result(result)
            if self.enabled:
                try:
                    self.add(result)
                except Exception:
                    self.enabled = False

        return counted

    # --- the line

    def tick(self) -> None:
        """Take the time and the counters; draw or print the line if it is due (see the module)."""
        if not self.enabled:
            return
        with self._lock:
            now = self._clock()
            status = self._status() if self._status is not None else unknown_status()
            self._remember(now, status)
            since = status["unreachable_since"]
            went = since is not None and self._unreachable is None
            back = since is None and self._unreachable is not None
            if self.is_tty:
                if now - self._last >= self.redraw_s or went or back or self._redraw:
                    self._draw(now, status)
            else:
                due = now >= self._due
                while self._due <= now:  # the periodic lines keep their schedule, whatever else is said
                    self._due += self.interval_s
                if due or went or back:
                    self._print(now, status, back_after=now - self._went_at if back else None)
            if went:
                self._went_at = now
            self._unreachable = since

    def close(self) -> None:
        """Stop the ticker; the final state (a terminal's line ended, a log's last line if it has one)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        try:
            with self._lock:
                if self.enabled:
                    now = self._clock()
                    status = self._status() if self._status is not None else unknown_status()
                    self._remember(now, status)
                    if self.is_tty:
                        self._draw(now, status, end="\n")
                    elif self.lines > 0:
                        self._print(now, status)
                elif self._drawn:  # a line that stopped half-way: ended, so the report starts clean
                    self.stream.write("\n")
                    self._drawn = False
        except Exception:
            pass
        finally:
            self.enabled = False
            for undo in self._undo:
                undo()
            self._undo.clear()

    def start(self) -> Progress:
        """Start the daemon ticker thread (not when the line is off); returns self."""
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._tick_until_closed, name="gge-progress", daemon=True)
            self._thread.start()
        return self

    def __enter__(self) -> Progress:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- inside

    def _tick_until_closed(self) -> None:
        period = self.redraw_s if self.is_tty else min(1.0, self.interval_s)
        while not self._stop.wait(period):
            try:
                self.tick()
            except Exception:  # a progress failure never breaks a run: the line stops
                self.enabled = False
                return

    def _remember(self, now: float, status: RequestStatus) -> None:
        """Keep this moment's running totals; forget what is no longer recent."""
        self._samples.append((now, float(self._finished)))
        if status["requests"] is not None:
            self._requests.append((now, float(status["requests"])))
        for history in (self._samples, self._requests):
            while len(history) > 2 and history[1][0] < now - self.window_s:
                history.popleft()

    def _text(self, now: float, status: RequestStatus, *, resumed: int) -> str:
        remaining = sum(self.totals.values()) - sum(self.done.get(name, 0) for name in self.totals)
        eta = eta_seconds(remaining, recent_rate(self._samples, now, self.window_s))
        body = progress_text(
            self.done,
            self.totals,
            status,
            request_rate=recent_rate(self._requests, now, self.window_s),
            eta=eta,
            server_errors=self.server_errors,
            resumed=resumed,
            clock_text=self._clock_text,
        )
        return f"progress [{duration(now - self._started)}]: {body}"

    def _draw(self, now: float, status: RequestStatus, end: str = "") -> None:
        text = self._text(now, status, resumed=sum(self.resumed.values()))
        width = self._columns() if self._columns is not None else None
        if width:
            text = text[: max(1, width - 1)]
        self.stream.write(f"\r{text}{CLEAR}{end}")
        self.stream.flush()
        self._last = now
        self._drawn, self._redraw = not end, False
        self.lines += 1

    def above(self, text: str) -> None:
        """Write ``text`` above a terminal's live line: the line is cleared first, drawn again after.

        What the rest of the run writes to stderr while the line is up (a warning, a retry line) goes
        through here (:func:`start_progress`), so it gets a clean line of its own instead of landing
        at the end of the progress line. Elsewhere, or before the line is drawn, ``text`` is written
        as it is.
        """
        with self._lock:
            if self._drawn and text:
                self.stream.write(f"\r{CLEAR}")
                self._drawn = False
                self._redraw = True
            self.stream.write(text)

    def _print(self, now: float, status: RequestStatus, back_after: float | None = None) -> None:
        resumed = 0 if self._said_resumed else sum(self.resumed.values())
        self._said_resumed = True
        text = self._text(now, status, resumed=resumed)
        if back_after is not None:
            text += f" (server back after {duration(back_after)})"
        self.stream.write(text + "\n")
        self.stream.flush()
        self._last = now
        self.lines += 1


class _AboveTheLine:
    """A terminal stream whose writes go above the live progress line (:meth:`Progress.above`)."""

    def __init__(self, progress: Progress, stream: TextIO) -> None:
        self._progress = progress
        self._stream = stream

    def write(self, text: str) -> int:
        if self._progress.enabled:
            self._progress.above(text)
        else:
            self._stream.write(text)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding...: the terminal's own
        return getattr(self._stream, name)


def _terminal_columns(stream: TextIO) -> Callable[[], int | None]:
    def columns() -> int | None:
        try:
            return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return None

    return columns


def start_progress(
    policy: object,
    samples: Mapping[str, Iterable[Any]],
    done_ids: Mapping[str, Iterable[str]],
    interval_s: float,
    stream: TextIO | None = None,
) -> Progress:
    """The started progress line of a windowed run (off when ``interval_s`` is 0).

    Args:
        policy: The run's policy (its backends' ``status()`` feed the request part).
        samples: Every sample of the run per benchmark (objects with an ``id``), those done included.
        done_ids: The ids per benchmark an earlier invocation finished.
        interval_s: ``progress_s``: seconds between plain lines; 0 turns the line off.
        stream: Where it goes (default ``sys.stderr``; a terminal gets the live line).

    On a terminal that is ``sys.stderr``, what else the run writes to ``sys.stderr`` while the line is
    up (a logged warning, a retry line) is written above the line (:meth:`Progress.above`) until the
    line is closed.

    Returns:
        The line, ticking; close it when the run ends (``with`` does).
    """
    out = stream if stream is not None else sys.stderr
    totals: dict[str, int] = {}
    done: dict[str, int] = {}
    for name, group in samples.items():
        ids = [str(getattr(s, "id", s)) for s in group]
        finished = set(done_ids.get(name, ()))
        totals[name] = len(ids)
        done[name] = sum(i in finished for i in ids)
    try:
        is_tty = bool(out.isatty())
    except (AttributeError, ValueError):
        is_tty = False
    progress = Progress(
        totals,
        done,
        stream=out,
        is_tty=is_tty,
        interval_s=interval_s,
        status=lambda: read_status(policy),
        columns=_terminal_columns(out) if is_tty else None,
    )
    if is_tty and progress.enabled and out is sys.stderr:
        above = _AboveTheLine(progress, out)
        sys.stderr = cast(TextIO, above)

        def put_back() -> None:
            if sys.stderr is cast(TextIO, above):  # unless someone replaced it since
                sys.stderr = out

        progress._undo.append(put_back)
    return progress.start()
