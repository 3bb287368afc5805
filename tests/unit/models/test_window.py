"""The request window: a fixed bound across threads, and the adaptive (AIMD) rules, on a fake clock.

Every expected limit, smoothed latency and time-weighted mean below is computed here from the rules
as the module's docstring states them, not read back from the window.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

import numpy as np
import pytest

from gge.errors import GgeError
from gge.models import window as window_module
from gge.models.window import LATENCY_FACTOR, Outcome, RequestWindow, Ticket

WAIT_S = 5.0
"""How long a test waits for a thread's step before it fails (never reached when the window works)."""


class FakeClock:
    """A clock that moves only when the test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _answer(window: RequestWindow, clock: FakeClock, latency: float, outcome: Outcome = "ok") -> None:
    """One request sent while the window was full (the others of that round are not modelled): sent
    now, answered ``latency`` seconds later."""
    ticket = window.acquire()
    assert ticket is not None
    clock.advance(latency)
    window.release(dataclasses.replace(ticket, in_flight=ticket.limit), outcome)


def test_answers_to_a_window_that_was_not_full_do_not_grow_it() -> None:
    """A client that keeps 1 of 8 places busy learns nothing about the server: the window stays 8."""
    clock = FakeClock()
    window = RequestWindow(8, adaptive=True, max_limit=64, clock=clock)
    for _ in range(20):
        ticket = window.acquire()
        assert ticket is not None and ticket.in_flight == 1
        clock.advance(0.5)
        window.release(ticket, "ok")
    assert window.limit == 8
    tickets = [window.acquire() for _ in range(8)]  # the 8th fills it: its answer grows it by one
    assert [t.in_flight for t in tickets if t is not None] == list(range(1, 9))
    for ticket in tickets:
        assert ticket is not None
        window.release(ticket, "ok")
    assert window.limit == 9


# -- a fixed window --------------------------------------------------------------------------------


def test_a_fixed_window_never_lets_more_than_its_limit_in() -> None:
    limit, threads_n = 3, 9
    window = RequestWindow(limit)
    lock = threading.Condition()
    holding: list[int] = []  # threads between acquire() returning and their release()
    most = 0
    go = [threading.Event() for _ in range(threads_n)]

    def worker(i: int) -> None:
        nonlocal most
        ticket = window.acquire()
        assert ticket is not None
        with lock:
            holding.append(i)
            most = max(most, len(holding))
            lock.notify_all()
        go[i].wait(WAIT_S)
        with lock:
            holding.remove(i)
            lock.notify_all()
        window.release(ticket, "ok")

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads_n)]
    for t in threads:
        t.start()

    def holding_at_least(n: int) -> Callable[[], bool]:
        return lambda: len(holding) >= n

    def gone(i: int) -> Callable[[], bool]:
        return lambda: i not in holding

    released = 0
    while released < threads_n:
        want = min(limit, threads_n - released)
        with lock:
            assert lock.wait_for(holding_at_least(want), WAIT_S), "the window let too few in"
            # one more than the limit would show up here if the window let it in
            assert not lock.wait_for(holding_at_least(want + 1), 0.05), holding
            assert window.in_flight == want
            first = holding[0]
        go[first].set()
        with lock:
            assert lock.wait_for(gone(first), WAIT_S)
        threads[first].join(WAIT_S)  # its release() done: the window's count no longer holds it
        assert not threads[first].is_alive()
        released += 1
    for t in threads:
        t.join(WAIT_S)
        assert not t.is_alive()
    assert most == limit
    summary = window.summary()
    assert (summary["peak_in_flight"], summary["sent"], window.in_flight) == (limit, threads_n, 0)
    assert (summary["mode"], summary["start"], summary["max"], summary["final"]) == ("fixed", 3, 3, 3)


def test_a_fixed_window_ignores_what_became_of_its_requests() -> None:
    clock = FakeClock()
    window = RequestWindow(4, clock=clock)
    for outcome in ("ok", "overload", "error", "overload", "ok"):
        _answer(window, clock, 1.0, outcome)
        assert window.limit == 4
    summary = window.summary()
    assert (summary["overloads"], summary["decreases"], summary["final"]) == (2, 0, 4)
    assert window.history == [(0.0, 4)]


def test_a_waiter_gets_the_place_a_release_frees() -> None:
    window = RequestWindow(1)
    first = window.acquire()
    assert first is not None
    got: list[Ticket | None] = []
    started = threading.Event()

    def wait() -> None:
        started.set()
        got.append(window.acquire(threading.Event()))

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    assert started.wait(WAIT_S)
    thread.join(0.2)
    assert thread.is_alive() and got == []  # still waiting: the one place is taken
    window.release(first, "ok")
    thread.join(WAIT_S)
    assert not thread.is_alive() and len(got) == 1 and isinstance(got[0], Ticket)
    assert window.in_flight == 1


def test_acquire_returns_none_when_cancelled_while_waiting() -> None:
    window = RequestWindow(2)
    held = [window.acquire(), window.acquire()]
    cancelled = threading.Event()
    got: list[Ticket | None] = []
    started = threading.Event()

    def wait() -> None:
        started.set()
        got.append(window.acquire(cancelled))

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    assert started.wait(WAIT_S)
    thread.join(0.3)
    assert thread.is_alive() and got == []  # blocked, not refused
    cancelled.set()
    thread.join(WAIT_S)
    assert not thread.is_alive()
    assert got == [None]
    assert window.in_flight == 2 and window.summary()["sent"] == 2
    # cancelled before it waits: None at once; with a free place: a ticket whatever the event says
    assert window.acquire(cancelled) is None
    ticket = held[0]
    assert ticket is not None
    window.release(ticket, "ok")
    assert isinstance(window.acquire(cancelled), Ticket)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: RequestWindow(0), "at least 1, got 0"),
        (lambda: RequestWindow(-3), "at least 1, got -3"),
        (lambda: RequestWindow(), "needs its limit"),
        (lambda: RequestWindow(adaptive=True, max_limit=0), "max_concurrency must be at least 1, got 0"),
        (lambda: RequestWindow(0, adaptive=True), "concurrency must be at least 1, got 0"),
    ],
)
def test_bad_limits_raise(make: Callable[[], RequestWindow], match: str) -> None:
    with pytest.raises(GgeError, match=match):
        make()


# -- an adaptive window ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "max_limit", "start"),
    [(None, None, 64), (None, 10, 10), (None, 64, 64), (None, 300, 64), (5, 3, 3), (5, None, 5)],
)
def test_an_adaptive_window_starts_at_64_or_its_max(
    limit: int | None, max_limit: int | None, start: int
) -> None:
    window = RequestWindow(limit, adaptive=True, max_limit=max_limit)
    assert window.limit == start
    assert window.summary()["start"] == start
    assert window.summary()["max"] == (256 if max_limit is None else max_limit)
    assert window.history == [(0.0, start)]


def test_slow_start_grows_the_window_by_one_per_answer_up_to_its_max() -> None:
    clock = FakeClock()
    window = RequestWindow(3, adaptive=True, max_limit=7, clock=clock)
    got = []
    for _ in range(6):
        _answer(window, clock, 1.0)
        got.append(window.limit)
    assert got == [4, 5, 6, 7, 7, 7]
    assert window.history == [(0.0, 3), (1.0, 4), (2.0, 5), (3.0, 6), (4.0, 7)]


def test_after_the_first_decrease_ok_answers_add_one_over_limit_up_to_its_max() -> None:
    clock = FakeClock()
    window = RequestWindow(24, adaptive=True, max_limit=24, clock=clock)
    _answer(window, clock, 1.0, "overload")  # 12: slow start is over
    expected = 12.0
    history = [(0.0, 24), (1.0, 12)]
    n = 0
    while expected < 24.0:
        n += 1
        _answer(window, clock, 1.0)  # the same latency each time: never queueing
        before = int(expected)
        expected = min(24.0, expected + 1.0 / expected)
        if int(expected) != before:
            history.append((1.0 + n, int(expected)))
        assert window.limit == int(expected), n
        assert n < 1000
    # from 12 to 24 by one per window of answers: about (24^2 - 12^2) / 2 answers
    assert abs(n - (24**2 - 12**2) / 2) < 12, n
    for _ in range(5):
        _answer(window, clock, 1.0)
    assert window.limit == 24  # capped
    assert window.history == history
    summary = window.summary()
    assert (summary["final"], summary["decreases"], summary["overloads"]) == (24, 1, 1)
    assert summary["sent"] == n + 6


def test_an_overload_halves_the_window_down_to_one() -> None:
    clock = FakeClock()
    window = RequestWindow(adaptive=True, max_limit=100, clock=clock)  # starts at 64
    _answer(window, clock, 1.0)  # slow start: 65
    assert window.limit == 65
    expected = 65.0
    seen = []
    for _ in range(8):
        _answer(window, clock, 1.0, "overload")
        expected = max(1.0, expected * 0.5)
        seen.append(window.limit)
        assert window.limit == int(expected)
    assert seen == [32, 16, 8, 4, 2, 1, 1, 1]
    assert [limit for _, limit in window.history] == [64, 65, 32, 16, 8, 4, 2, 1]
    assert window.summary()["overloads"] == 8
    # and grows back from the floor: 1 -> 2 on the next answer, then +1/2 (slow start is over)
    _answer(window, clock, 1.0)
    assert window.limit == 2
    _answer(window, clock, 1.0)
    assert window.limit == int(2.0 + 1 / 2.0) == 2
    _answer(window, clock, 1.0)
    assert window.limit == int(2.5 + 1 / 2.5) == 2
    _answer(window, clock, 1.0)
    assert window.limit == int(2.9 + 1 / 2.9) == 3


def test_an_error_neither_grows_nor_shrinks_the_window() -> None:
    clock = FakeClock()
    window = RequestWindow(10, adaptive=True, max_limit=20, clock=clock)
    for _ in range(30):
        _answer(window, clock, 1.0, "error")
    summary = window.summary()
    assert (window.limit, summary["overloads"], summary["decreases"]) == (10, 0, 0)
    _answer(window, clock, 1.0)  # still in slow start: an error is no decrease
    assert window.limit == 11


def test_answers_to_tickets_taken_before_a_decrease_do_not_decrease_again() -> None:
    clock = FakeClock()
    window = RequestWindow(40, adaptive=True, max_limit=64, clock=clock)
    old = [window.acquire() for _ in range(5)]  # all sent under epoch 0
    tickets = [t for t in old if t is not None]
    assert [(t.epoch, t.limit, t.in_flight) for t in tickets] == [(0, 40, k) for k in range(1, 6)]
    window.release(tickets[0], "overload")
    assert window.limit == 20
    window.release(tickets[1], "overload")  # the same congestion: already answered for
    window.release(tickets[2], "overload")
    assert window.limit == 20
    new = window.acquire()  # sent after the decrease
    assert new is not None and (new.epoch, new.limit, new.in_flight) == (1, 20, 3)
    window.release(tickets[3], "overload")  # still an old one
    assert window.limit == 20
    window.release(new, "overload")  # news: halve again
    assert window.limit == 10
    # an old ticket's ok answer grows the window by 1/limit, not 1: slow start ended
    window.release(tickets[4], "ok")
    assert window.limit == 10
    summary = window.summary()
    assert (summary["overloads"], summary["decreases"], summary["sent"]) == (5, 2, 6)
    assert [limit for _, limit in window.history] == [40, 20, 10]


def test_a_busy_answer_is_the_windows_only_beside_other_requests_in_an_adaptive_window() -> None:
    adaptive = RequestWindow(4, adaptive=True)
    alone = adaptive.acquire()
    beside = adaptive.acquire()
    assert alone is not None and beside is not None
    assert (adaptive.owns(alone), adaptive.owns(beside)) == (False, True)
    fixed = RequestWindow(4)
    first, second = fixed.acquire(), fixed.acquire()
    assert first is not None and second is not None
    assert (fixed.owns(first), fixed.owns(second)) == (False, False)


def _simulate(latencies: list[float], start: float, top: float) -> tuple[list[int], int]:
    """The adaptive rules on answers one at a time: the limit after each, and the decreases.

    Smoothed latency s = 0.9 s + 0.1 x (the first answer: s = x); from the 8th answer on, the
    baseline is the lowest s so far; s above LATENCY_FACTOR x the baseline takes 10% off (counted as
    a decrease where the whole-request limit went down), otherwise the limit grows by 1 (slow start,
    until the rule first fires) or by 1/limit.
    """
    limit, smooth, lows, decreases, slow_start = start, 0.0, [], 0, True
    limits = []
    for k, x in enumerate(latencies):
        smooth = x if k == 0 else 0.9 * smooth + 0.1 * x
        if k + 1 >= 8:
            lows.append(smooth)
        if lows and smooth > LATENCY_FACTOR * min(lows):
            before = max(1, int(limit))
            limit, slow_start = max(1.0, limit * 0.9), False
            decreases += max(1, int(limit)) < before  # a decrease is a limit that went down
        else:
            limit = min(top, limit + (1.0 if slow_start else 1.0 / limit))
        limits.append(max(1, int(limit)))
    return limits, decreases


def test_the_default_latency_factor_is_two() -> None:
    """Twice the lowest smoothed latency is queueing (a batching server is slower, not twice)."""
    assert LATENCY_FACTOR == 2.0


@pytest.fixture
def factor_three(monkeypatch: pytest.MonkeyPatch) -> None:
    """The latency rule's arithmetic worked by hand with a factor of 3."""
    monkeypatch.setattr(window_module, "LATENCY_FACTOR", 3.0)


@pytest.mark.usefixtures("factor_three")
def test_latency_three_times_the_lowest_smoothed_takes_a_tenth_off() -> None:
    clock = FakeClock()
    window = RequestWindow(50, adaptive=True, max_limit=200, clock=clock, latency_floor=1)
    # eight answers of 1 s (the warm-up: baseline 1.0; slow start: 58), then one of 30 s:
    # s = 0.9 + 3.0 = 3.9 > 3
    for _ in range(8):
        _answer(window, clock, 1.0)
    assert window.limit == 58
    _answer(window, clock, 30.0)
    assert window.limit == int(58 * 0.9) == 52
    assert window.summary()["decreases"] == 1
    # 1 s again: s = 0.9 * 3.9 + 0.1 = 3.61, still > 3: another tenth (a fresh ticket, a new epoch)
    _answer(window, clock, 1.0)
    assert window.limit == int(58 * 0.9 * 0.9) == 46
    # and then s = 3.349, 3.1141 (two more tenths), 2.90269: that one grows, by 1/limit
    _answer(window, clock, 1.0)
    _answer(window, clock, 1.0)
    low = 58 * 0.9**4
    assert window.limit == int(low) == 38
    # from here every answer grows the window by 1/limit (s falls towards 1 s): 39 after n answers
    expected, n = low, 0
    while int(expected) < 39:
        expected += 1 / expected
        n += 1
    for k in range(1, n + 1):
        _answer(window, clock, 1.0)
        assert window.limit == (39 if k == n else 38), k
    assert window.summary()["decreases"] == 4


@pytest.mark.parametrize(
    "latencies",
    [
        [1.0] * 6 + [50.0],  # s jumps to 5.9 on the 7th answer: no baseline yet
        [1.0] * 7 + [30.0],  # s = 3.9 on the 8th: the baseline starts there, with s itself
    ],
)
@pytest.mark.usefixtures("factor_three")
def test_slow_answers_in_the_warm_up_do_not_decrease(latencies: list[float]) -> None:
    clock = FakeClock()
    window = RequestWindow(20, adaptive=True, max_limit=200, clock=clock, latency_floor=1)
    for x in latencies:
        _answer(window, clock, x)
    assert window.summary()["decreases"] == 0
    assert window.limit == 20 + len(latencies)  # one per answer: slow start


def test_the_latency_rule_against_a_simulation_of_random_latencies() -> None:
    rng = np.random.default_rng(27)
    # a fast phase, a queueing phase, a recovery: lognormal around 0.5 s, 4 s, 0.5 s
    phases = [(0.5, 40), (4.0, 30), (0.5, 60)]
    latencies = [
        round(float(x), 3) for x in np.concatenate([rng.lognormal(np.log(m), 0.3, n) for m, n in phases])
    ]
    limits, decreases = _simulate(latencies, 30.0, 100.0)
    clock = FakeClock()
    window = RequestWindow(30, adaptive=True, max_limit=100, clock=clock, latency_floor=1)
    got = []
    for x in latencies:
        _answer(window, clock, x)
        got.append(window.limit)
    assert got == limits
    assert window.summary()["decreases"] == decreases
    assert decreases > 0 and max(limits) > 30  # both rules fired in this run


# -- what the window records -----------------------------------------------------------------------


def test_summary_mean_in_flight_is_the_time_weighted_mean_while_busy() -> None:
    # (start, end) of each request in seconds from the window's creation: overlaps, and idle gaps
    schedule = [(0.0, 4.0), (1.0, 2.5), (1.5, 6.0), (2.0, 3.0), (9.0, 10.0), (9.5, 12.0), (20.0, 20.5)]
    clock = FakeClock(500.0)
    window = RequestWindow(8, clock=clock)
    events = sorted(
        [(s, 1, i) for i, (s, _) in enumerate(schedule)] + [(e, 0, i) for i, (_, e) in enumerate(schedule)]
    )  # at equal times, a release (0) before an acquire (1)
    tickets: dict[int, Ticket] = {}
    for t, kind, i in events:
        clock.now = 500.0 + t
        if kind == 1:
            ticket = window.acquire()
            assert ticket is not None
            tickets[i] = ticket
        else:
            window.release(tickets.pop(i), "ok")
    clock.advance(7.0)  # idle time after the last answer counts for nothing
    # brute force: in each 0.5 s slot (every start and end is on the grid), the requests covering it
    slots = [k * 0.5 for k in range(int(max(e for _, e in schedule) / 0.5))]
    covering = [sum(1 for s, e in schedule if s <= t < e) for t in slots]
    area = sum(0.5 * c for c in covering)
    busy = sum(0.5 for c in covering if c > 0)
    assert (area, busy) == (15.0, 9.5)  # the sum of the durations; 6 + 3 + 0.5 s busy
    summary = window.summary()
    assert summary["mean_in_flight"] == round(area / busy, 2) == 1.58
    assert summary["busy_seconds"] == busy
    assert summary["peak_in_flight"] == max(covering) == 4
    assert summary["sent"] == len(schedule)
    assert (summary["overloads"], summary["decreases"]) == (0, 0)


def test_summary_counts_the_requests_still_in_flight_up_to_now() -> None:
    clock = FakeClock()
    window = RequestWindow(4, clock=clock)
    assert window.summary()["mean_in_flight"] == 0.0 and window.summary()["busy_seconds"] == 0.0
    window.acquire()
    clock.advance(2.0)
    window.acquire()
    clock.advance(1.0)
    summary = window.summary()  # 1 for 2 s, 2 for 1 s: 4 request-seconds over 3 s
    assert summary["busy_seconds"] == 3.0 and summary["mean_in_flight"] == round(4 / 3, 2)
    assert summary["peak_in_flight"] == 2 and window.in_flight == 2


def test_history_records_each_change_of_the_limit_with_its_time() -> None:
    clock = FakeClock(100.0)
    window = RequestWindow(2, adaptive=True, max_limit=4, clock=clock)
    _answer(window, clock, 0.25)  # slow start: 3 at 0.25 s
    _answer(window, clock, 0.25)  # 4 at 0.5 s
    _answer(window, clock, 0.25)  # 4 (the max): no change
    _answer(window, clock, 0.5, "overload")  # 2 at 1.25 s
    _answer(window, clock, 0.125)  # 2.5: no change
    _answer(window, clock, 0.125)  # 2.9: no change
    _answer(window, clock, 0.125)  # 3.245: 3 at 1.625 s
    assert int(2.0 + 1 / 2.0 + 1 / 2.5 + 1 / 2.9) == 3
    assert window.history == [(0.0, 2), (0.25, 3), (0.5, 4), (1.25, 2), (1.625, 3)]


def test_an_overload_at_one_request_is_no_decrease() -> None:
    """At the floor the limit cannot go down: three overloads there count as overloads, not decreases."""
    window = RequestWindow(2, adaptive=True, max_limit=2)
    ticket = window.acquire()
    assert ticket is not None
    window.release(ticket, "overload")  # 2 -> 1: a decrease
    for _ in range(3):
        ticket = window.acquire()
        assert ticket is not None
        window.release(ticket, "overload")
    summary = window.summary()
    assert (summary["final"], summary["overloads"], summary["decreases"]) == (1, 4, 1)


def test_the_latency_rule_stops_where_the_window_started() -> None:
    """Slow answers take it back to its start at most; an overload takes it lower."""
    clock = FakeClock()
    window = RequestWindow(20, adaptive=True, max_limit=100, clock=clock)
    for _ in range(8):
        _answer(window, clock, 1.0)  # slow start: 28, the baseline 1 s
    for _ in range(40):
        _answer(window, clock, 30.0)  # queueing: a tenth off each time, down to 20 and no lower
    assert window.limit == 20
    _answer(window, clock, 1.0, "overload")
    assert window.limit == 10


def test_latencies_are_compared_within_a_kind() -> None:
    """A steady slow kind (4K screenshots) after a fast one (small screenshots) is no queueing."""
    clock = FakeClock()
    window = RequestWindow(10, adaptive=True, max_limit=100, clock=clock, latency_floor=1)
    for i in range(40):
        kind, latency = ("small", 0.2) if i < 20 else ("4k", 3.0)
        ticket = window.acquire(kind=kind)
        assert ticket is not None
        clock.advance(latency)
        window.release(dataclasses.replace(ticket, in_flight=ticket.limit), "ok")
    assert window.summary()["decreases"] == 0 and window.limit == 50  # slow start, +1 per answer
    # the same latencies with no kind: the 4K answers read as queueing after the small ones
    mixed = RequestWindow(10, adaptive=True, max_limit=100, clock=clock, latency_floor=1)
    for i in range(40):
        ticket = mixed.acquire()
        assert ticket is not None
        clock.advance(0.2 if i < 20 else 3.0)
        mixed.release(dataclasses.replace(ticket, in_flight=ticket.limit), "ok")
    assert mixed.limit < 50
