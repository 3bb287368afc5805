"""The progress line of an endpoint run (gge.run.progress), driven by a fake clock.

Every rate, ETA and line count below is computed by hand in the test from the numbers it feeds; no
test reads the wall clock.
"""

from __future__ import annotations

import io
import re
import sys
import threading
import time
from types import SimpleNamespace
from typing import Any, cast

import pytest

from gge.run.progress import (
    CLEAR,
    Progress,
    RequestStatus,
    duration,
    eta_seconds,
    read_status,
    recent_rate,
    start_progress,
    unknown_status,
)

EPOCH = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


def utc(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(epoch))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeServer:
    """What a backend's status() says, set by the test."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = dict(unknown_status())

    def __call__(self) -> RequestStatus:
        return cast(RequestStatus, dict(self.values))


# --- the rules, against hand computations


def test_recent_rate_is_the_growth_over_the_recent_window() -> None:
    history = [(0.0, 0.0), (30.0, 6.0), (60.0, 15.0), (90.0, 30.0), (150.0, 50.0)]
    # recent = t >= 150 - 120 = 30: from (30, 6) to (150, 50)
    assert recent_rate(history, 150.0, window_s=120.0) == pytest.approx((50 - 6) / (150 - 30))
    # a shorter window: from (90, 30)
    assert recent_rate(history, 150.0, window_s=60.0) == pytest.approx((50 - 30) / 60)
    # everything recent: from (0, 0)
    assert recent_rate(history, 150.0, window_s=1000.0) == pytest.approx(50 / 150)


def test_no_rate_from_too_little_of_the_run() -> None:
    assert recent_rate([], 10.0) is None
    assert recent_rate([(10.0, 3.0)], 10.0) is None
    assert recent_rate([(0.0, 0.0), (4.0, 8.0)], 4.0, min_span_s=5.0) is None
    assert recent_rate([(0.0, 0.0), (5.0, 8.0)], 5.0, min_span_s=5.0) == pytest.approx(1.6)


def test_eta_is_what_is_left_over_the_rate() -> None:
    assert eta_seconds(110, 0.5) == 220.0
    assert eta_seconds(7, 0.25) == 28.0
    assert eta_seconds(5, None) is None
    assert eta_seconds(5, 0.0) is None  # nothing finished recently: no estimate
    assert eta_seconds(0, None) == 0.0  # done


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0, "0 s"),
        (59.4, "59 s"),
        (60, "1 min"),
        (61, "1 min 1 s"),
        (220, "3 min 40 s"),
        (600, "10 min"),
        (3599, "59 min 59 s"),
        (3600, "1 h 0 min"),
        (2 * 3600 + 5 * 60 + 59, "2 h 5 min"),
    ],
)
def test_duration(seconds: float, said: str) -> None:
    assert duration(seconds) == said


# --- where the request numbers come from


class StatusBackend:
    def __init__(self, **values: Any) -> None:
        self.values = values

    def status(self) -> dict[str, Any]:
        return dict(self.values)


class Policy:
    def __init__(self, backend: object, critic_backend: object | None = None) -> None:
        self.backend = backend
        self.critic_backend = critic_backend or backend


def full(**values: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "in_flight": 0,
        "limit": 0,
        "requests": 0,
        "retries": 0,
        "overloads": 0,
        "failed": 0,
        "unreachable_since": None,
        "server_wait_s": 600.0,
    }
    return base | values


def test_one_backend_is_read_once_even_as_proposer_and_critic() -> None:
    backend = StatusBackend(**full(in_flight=3, limit=8, requests=40, retries=2, overloads=1))
    assert read_status(Policy(backend)) == full(in_flight=3, limit=8, requests=40, retries=2, overloads=1)


def test_a_separate_critic_backend_adds_its_counts() -> None:
    a = StatusBackend(**full(in_flight=3, limit=8, requests=40, retries=2, failed=1))
    b = StatusBackend(**full(in_flight=5, limit=16, requests=7, overloads=4, unreachable_since=EPOCH + 9))
    got = read_status(Policy(a, b))
    assert got == full(
        in_flight=8, limit=24, requests=47, retries=2, overloads=4, failed=1, unreachable_since=EPOCH + 9
    )
    a.values["unreachable_since"] = EPOCH  # the earliest of the two
    assert read_status(Policy(a, b))["unreachable_since"] == EPOCH


def test_a_backend_without_status_gives_its_window_and_nothing_else() -> None:
    class Window:
        in_flight, limit = 5, 64

    class Bare:
        window = Window()

    assert read_status(Policy(Bare())) == unknown_status() | {"in_flight": 5, "limit": 64}
    assert read_status(object()) == unknown_status()


# --- the line in a pipe


def feed(p: Progress, clock: Clock, server: FakeServer, until: float, *, every: float = 2.0) -> None:
    """Tick once a second up to ``until``; one screenspot_pro sample finishes every ``every`` s."""
    while clock.now < until:
        clock.now += 1.0
        if clock.now % every == 0:
            p.add_done("screenspot_pro")
        server.values["requests"] = int(1.5 * clock.now)
        p.tick()


def test_the_plain_line_says_each_number_as_computed_by_hand() -> None:
    clock, server, out = Clock(), FakeServer(), io.StringIO()
    server.values.update(in_flight=12, limit=16, requests=0, retries=3, overloads=1)
    p = Progress(
        {"screenspot_pro": 100, "osworld_g": 50},
        {"screenspot_pro": 10},
        stream=out,
        is_tty=False,
        interval_s=60,
        status=server,
        clock=clock,
    )
    feed(p, clock, server, 59)
    assert out.getvalue() == ""  # nothing before the first interval
    # results read with getattr (a SampleResult's benchmark and server_error)
    p.add(SimpleNamespace(benchmark="screenspot_pro", server_error="HTTP 500"))
    p.add(SimpleNamespace(benchmark="screenspot_pro", server_error="timed out"))
    feed(p, clock, server, 60)
    # 30 samples finished from t=2 to t=60 (one every 2 s), plus the two server errors: 32 in 60 s
    # since the start (the oldest recent snapshot is the start, 0 samples): 32/60 per second;
    # left: 150 - 10 resumed - 32 = 108 -> 108 / (32/60) = 202.5 s
    # requests: snapshots from t=1 (1 answered) to t=60 (90): 89/59 per second
    eta = duration(108 / (32 / 60))
    assert eta == "3 min 22 s"  # 202.5 rounds to even
    first = (
        "progress [1 min]: screenspot_pro 42/100, osworld_g 0/50 (10 resumed) | "
        f"12/16 in flight, {89 / 59:.1f} req/s | 3 retries, 1 overload | 2 server errors | ETA {eta}"
    )
    assert out.getvalue() == first + "\n"
    feed(p, clock, server, 120)
    # recent = the last 120 s = everything since the start (0 at t=0, 62 at t=120)
    # requests from (1, 1) to (120, 180); left 150 - 10 - 62 = 78 at 62/120 per second
    second = (
        "progress [2 min]: screenspot_pro 72/100, osworld_g 0/50 | "
        f"12/16 in flight, {179 / 119:.1f} req/s | 3 retries, 1 overload | 2 server errors | "
        f"ETA {duration(78 / (62 / 120))}"
    )
    assert out.getvalue().splitlines() == [first, second]  # "resumed" is said once
    feed(p, clock, server, 150)
    # recent = from t=30: samples (30, 15) to (150, 77) at 62/120; requests (30, 45) to (150, 225)
    p.close()
    final = (
        "progress [2 min 30 s]: screenspot_pro 87/100, osworld_g 0/50 | "
        f"12/16 in flight, {180 / 120:.1f} req/s | 3 retries, 1 overload | 2 server errors | "
        f"ETA {duration(63 / (62 / 120))}"
    )
    assert out.getvalue().splitlines() == [first, second, final]


def test_a_pipe_gets_one_line_an_interval_over_an_hour_and_two_per_outage() -> None:
    clock, server, out = Clock(), FakeServer(), io.StringIO()
    server.values.update(in_flight=4, limit=4, requests=0, server_wait_s=600.0)
    p = Progress(
        {"screenspot_pro": 5000}, stream=out, is_tty=False, interval_s=60, status=server, clock=clock
    )
    feed(p, clock, server, 1000)
    server.values["unreachable_since"] = EPOCH
    feed(p, clock, server, 1045)
    server.values["unreachable_since"] = None
    feed(p, clock, server, 3600)
    p.close()
    lines = out.getvalue().splitlines()
    # 3600 / 60 periodic lines, one when the server went (t=1001), one when it was back (t=1046), the final
    assert len(lines) == 3600 // 60 + 2 + 1
    went = [x for x in lines if "server unreachable since" in x]
    # the one at t=1001 and the periodic one at t=1020 (17 x 60) while it was away
    assert [x.split("]")[0] for x in went] == ["progress [16 min 41 s", "progress [17 min"]
    back = [x for x in lines if "server back after" in x]
    assert len(back) == 1 and back[0].startswith("progress [17 min 26 s]: ")
    assert back[0].endswith("(server back after 45 s)")  # seen going at t=1001, back at t=1046


def test_the_unreachable_line_says_since_when_and_how_long_it_is_waited_for() -> None:
    clock, server, out = Clock(), FakeServer(), io.StringIO()
    server.values.update(in_flight=0, limit=8, requests=0, retries=0, overloads=0, server_wait_s=600.0)
    p = Progress(
        {"osworld_g": 10},
        stream=out,
        is_tty=False,
        interval_s=60,
        status=server,
        clock=clock,
        clock_text=utc,
    )
    clock.now = 20.0
    for _ in range(4):
        p.add_done("osworld_g")
    p.tick()
    assert out.getvalue() == ""
    server.values["unreachable_since"] = EPOCH + 3600  # 23:13:20 UTC
    clock.now = 21.0
    p.tick()
    assert out.getvalue() == (
        "progress [21 s]: osworld_g 4/10 | server unreachable since 23:13:20, waiting up to 10 min | "
        "0 retries, 0 overloads | 0 server errors | ETA ?\n"
    )


def test_a_run_shorter_than_one_interval_prints_nothing() -> None:
    clock, out = Clock(), io.StringIO()
    p = Progress({"screenspot_v2": 3}, stream=out, is_tty=False, interval_s=60, clock=clock)
    for t in (10.0, 20.0, 30.0):
        clock.now = t
        p.add_done("screenspot_v2")
        p.tick()
    p.close()
    assert out.getvalue() == ""


def test_progress_s_0_turns_the_line_off() -> None:
    out = io.StringIO()
    p = start_progress(object(), {"a": ["1", "2"]}, {}, 0, stream=out)
    p.counting(None)("not a result")
    p.tick()
    p.close()
    assert out.getvalue() == "" and p._thread is None


# --- the line on a terminal


def test_a_terminal_gets_one_line_redrawn_in_place_then_ended() -> None:
    clock, server, out = Clock(), FakeServer(), io.StringIO()
    server.values.update(in_flight=2, limit=4)  # a backend that says its window only
    p = Progress(
        {"a": 4, "b": 2}, {"a": 1}, stream=out, is_tty=True, interval_s=60, status=server, clock=clock
    )
    for step in range(1, 9):  # every 0.25 s for 2 s: drawn at 0.5, 1.0, 1.5 and 2.0
        clock.now = step * 0.25
        if step in (3, 7):
            p.add_done("a")
        p.tick()
    p.add_done("a")
    p.add_done("b")
    p.add_done("b")
    p.close()

    def drawn(elapsed: str, a: int, b: int) -> str:
        head = f"\rprogress [{elapsed}]: a {a}/4, b {b}/2 (1 resumed)"
        return f"{head} | 2/4 in flight | 0 server errors | ETA ?{CLEAR}"

    # no ETA: 2 s of the run is less than MIN_SPAN_S; at the end everything is done: 0 s left
    final = "\rprogress [2 s]: a 4/4, b 2/2 (1 resumed) | 2/4 in flight | 0 server errors | ETA 0 s" + CLEAR
    assert out.getvalue() == (
        drawn("0 s", 1, 0) + drawn("1 s", 2, 0) + drawn("2 s", 2, 0) + drawn("2 s", 3, 0) + final + "\n"
    )
    assert p.lines == 5


def test_a_terminal_line_is_cut_to_the_width() -> None:
    out = io.StringIO()
    p = Progress(
        {"screenspot_pro": 1581}, stream=out, is_tty=True, interval_s=60, clock=Clock(), columns=lambda: 20
    )
    p.close()
    assert out.getvalue() == "\r" + "progress [0 s]: scr" + CLEAR + "\n"  # 19 columns: the cursor stays on it


# --- a progress failure never breaks a run


def test_a_failing_status_stops_the_line_not_the_run() -> None:
    out = io.StringIO()
    calls: list[str] = []

    def broken() -> RequestStatus:
        raise RuntimeError("status broke")

    p = Progress({"a": 2}, stream=out, is_tty=True, interval_s=60, status=broken, redraw_s=0.001)
    p.start()
    assert p._thread is not None
    p._thread.join(timeout=30)  # the ticker ends itself on the failure
    assert not p._thread.is_alive() and not p.enabled
    p.counting(lambda r: calls.append(r))("result")  # still handed on
    p.close()
    assert calls == ["result"] and out.getvalue() == ""


def test_a_stream_that_cannot_be_written_does_not_raise() -> None:
    class Closed(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError("gone")

    p = Progress({"a": 2}, stream=Closed(), is_tty=True, interval_s=60, clock=Clock())
    p.counting(None)(object())  # not a SampleResult: counted under no benchmark, without raising
    p.close()  # the final draw fails quietly
    assert not p.enabled


def test_the_ticker_thread_is_a_daemon_and_stops_on_close() -> None:
    p = Progress({"a": 2}, stream=io.StringIO(), is_tty=False, interval_s=60)
    with p:
        assert p._thread is not None and p._thread.daemon and p._thread.is_alive()
    assert not p._thread.is_alive()
    assert threading.active_count() >= 1


# --- what else is written while a terminal's line is up


def test_a_line_written_while_the_line_is_up_gets_its_own_line_and_the_line_comes_back() -> None:
    clock, out = Clock(), io.StringIO()
    p = Progress({"a": 4}, stream=out, is_tty=True, interval_s=60, clock=clock)
    p.above("before the first draw\n")  # nothing to clear yet
    clock.now = 0.5
    p.tick()
    p.above("warning: server unreachable\n")
    clock.now = 0.75  # a quarter second after the last draw: drawn again because it was cleared
    p.tick()
    clock.now = 1.0  # not due: the last draw was 0.25 s ago
    p.tick()

    def line(elapsed: str) -> str:
        return f"\rprogress [{elapsed}]: a 0/4 | 0 server errors | ETA ?{CLEAR}"

    assert out.getvalue() == (  # 0.5 s and 0.75 s said rounded: 0 s and 1 s
        "before the first draw\n" + line("0 s") + f"\r{CLEAR}" + "warning: server unreachable\n" + line("1 s")
    )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_stderr_goes_above_the_line_while_it_is_up_and_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    p = start_progress(object(), {"a": ["1", "2"]}, {}, 60)
    assert sys.stderr is not terminal and sys.stderr.isatty()
    print("warning: a retry", file=sys.stderr)
    p.close()
    assert sys.stderr is terminal
    # the ticker may have drawn the line (every 0.5 s) before the warning: without its draws and
    # clears, what is left is the warning's line and the final line's end
    drawn = re.compile(r"\r[^\r\n]*?" + re.escape(CLEAR))
    assert drawn.sub("", terminal.getvalue()) == "warning: a retry\n\n"
    assert terminal.getvalue().endswith("\rprogress [0 s]: a 0/2 | 0 server errors | ETA ?" + CLEAR + "\n")


def test_a_line_stopped_half_way_is_ended_at_close() -> None:
    clock, out = Clock(), io.StringIO()
    broken = [False]

    def status() -> RequestStatus:
        if broken[0]:
            raise RuntimeError("status broke")
        return unknown_status()

    p = Progress({"a": 2}, stream=out, is_tty=True, interval_s=60, status=status, clock=clock)
    clock.now = 0.5
    p.tick()
    broken[0] = True
    with pytest.raises(RuntimeError):
        p.tick()
    p.enabled = False  # what the ticker thread does on a failure
    p.close()
    assert out.getvalue() == f"\rprogress [0 s]: a 0/2 | 0 server errors | ETA ?{CLEAR}\n"
