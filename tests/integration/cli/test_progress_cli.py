"""``python eval.py`` against the scripted endpoint: the progress line on a terminal and in a pipe.

The run's last sample is held by the server until the test has seen the line say the other two are
done with exactly one request in flight (the held one): the line's states are reached by events,
not by sleeping. On a pseudo-terminal (``pty.openpty()``) stderr holds only the line's in-place
redraws (``\\r``, the line, clear to its end) and one final newline; in a pipe with ``progress_s=0.2``
it holds plain lines, no carriage return, ending with the final state. Retry warnings logged while
the terminal's line is up each get a row of their own (the line cleared first), never its end.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest
from paths import ROOT
from scripted_endpoint import Scripted

from gge.benchmarks.loading import load_benchmarks
from gge.run.progress import CLEAR
from gge.run.settings import bench_options, parse_args

pytestmark = pytest.mark.slow  # two eval.py processes against the server (a few seconds each)

TOTAL = 3
LINE = re.compile(
    r"progress \[\d+ (s|min|min \d+ s)\]: screenspot_v2 (?P<done>\d)/3 \| "
    r"(?P<requests>(?P<in_flight>\d+)/\d+ in flight[^|]*) \| (?:[^|]* \| )?"
    r"(?P<errors>\d+) server errors? \| ETA (?P<eta>.+)"
)


def _args(srv: Scripted, demo: Path, out: Path, *more: str) -> list[str]:
    return [
        f"data_root={demo}",
        "benchmarks=[screenspot_v2]",
        f"max_samples={TOTAL}",
        f"output_dir={out}",
        "model=openai_api",
        f"model.base_url={srv.url}",
        "model.api_model=scripted",
        "model.proposer=greedy",
        "model.critic=none",
        *more,
    ]


def _hold_last(srv: Scripted, demo: Path, tmp_path: Path) -> None:
    """The server holds the last sample's proposer request until ``srv.unheld`` is set."""
    cfg = parse_args(_args(srv, demo, tmp_path / "o"))
    loaded = load_benchmarks(["screenspot_v2"], demo, bench_options(cfg), max_samples=TOTAL)
    srv.held_key = "Instruction: " + loaded.samples["screenspot_v2"][-1].instruction


def _command(srv: Scripted, demo: Path, out: Path, *more: str) -> list[str]:
    return [sys.executable, str(ROOT / "eval.py"), *_args(srv, demo, out, *more)]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _read_until_eof(fd: int, seen: list[bytes], wanted: re.Pattern[str], found: threading.Event) -> None:
    """Read a stream to its end, setting ``found`` once its text so far matches ``wanted`` (or it ends)."""
    try:
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # a pseudo-terminal whose other end closed
                return
            if not chunk:
                return
            seen.append(chunk)
            if wanted.search(b"".join(seen).decode(errors="replace")):
                found.set()
    finally:
        found.set()  # a run that ended without it: the test's assertion says what it printed


# the state the held run shows: two samples done, the held request alone in flight
HELD = re.compile(r"screenspot_v2 2/3 \| 1/\d+ in flight")


def test_on_a_terminal_the_line_is_redrawn_in_place_and_ended_once(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    _hold_last(server, demo_suite, tmp_path)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 400, 0, 0))  # wide: no line is cut
    proc = subprocess.Popen(
        _command(server, demo_suite, tmp_path / "tty"),
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    seen: list[bytes] = []
    held = threading.Event()
    reader = threading.Thread(target=_read_until_eof, args=(master, seen, HELD, held), daemon=True)
    reader.start()
    try:
        held.wait(120)
        assert HELD.search(b"".join(seen).decode(errors="replace")), b"".join(seen).decode(errors="replace")
    finally:
        server.unheld.set()
    stdout, _ = proc.communicate(timeout=120)
    reader.join(timeout=30)
    os.close(master)
    assert proc.returncode == 0, b"".join(seen).decode(errors="replace")

    text = b"".join(seen).decode().replace("\r\n", "\n")  # the terminal's own end of line
    assert text.count("\n") == 1 and text.endswith(CLEAR + "\n")  # one line, ended once
    draws = text[:-1].split("\r")
    assert draws[0] == ""  # every draw starts at the line's start
    draws = draws[1:]
    assert len(draws) >= 2 and all(d.endswith(CLEAR) for d in draws)
    states = [LINE.fullmatch(d[: -len(CLEAR)]) for d in draws]
    assert all(states), draws
    held_draws = [d for d in draws if HELD.search(d)]
    assert held_draws  # seen while the last sample was held
    final = states[-1]
    assert final is not None
    assert (final["done"], final["in_flight"], final["errors"], final["eta"]) == ("3", "0", "0", "0 s")
    done = [int(s["done"]) for s in states if s is not None]
    assert done == sorted(done)  # never backwards
    report = stdout.decode()
    assert "\r" not in report and CLEAR not in report and "screenspot_v2" in report


def test_in_a_pipe_plain_lines_every_progress_s_and_a_final_one(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    _hold_last(server, demo_suite, tmp_path)
    proc = subprocess.Popen(
        _command(server, demo_suite, tmp_path / "pipe", "progress_s=0.2"),
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stderr is not None
    seen: list[bytes] = []
    held = threading.Event()
    reader = threading.Thread(
        target=_read_until_eof, args=(proc.stderr.fileno(), seen, HELD, held), daemon=True
    )
    reader.start()
    try:
        held.wait(120)
        assert HELD.search(b"".join(seen).decode(errors="replace")), b"".join(seen).decode(errors="replace")
    finally:
        server.unheld.set()
    assert proc.stdout is not None
    stdout = proc.stdout.read()  # stderr is the reader's alone (communicate would take part of it)
    proc.wait(timeout=120)
    reader.join(timeout=30)
    text = b"".join(seen).decode()
    assert proc.returncode == 0, text
    assert "\r" not in text and CLEAR not in text
    lines = [x for x in text.splitlines() if x.startswith("progress [")]
    assert len(lines) >= 2  # at least the one seen while held, and the final one
    states = [LINE.fullmatch(x) for x in lines]
    assert all(states), lines
    final = states[-1]
    assert final is not None
    assert (final["done"], final["in_flight"], final["errors"], final["eta"]) == ("3", "0", "0", "0 s")
    assert "\r" not in stdout.decode()


def test_on_a_terminal_retry_warnings_get_lines_of_their_own_above_the_line(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    """The last sample's request is held, then answered HTTP 500 every time: its two retries are logged
    while the line is up, each on a line of its own (the line cleared first), and it ends a server error."""
    _hold_last(server, demo_suite, tmp_path)
    key = server.held_key
    server.broken = lambda text: key in text
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 400, 0, 0))
    command = _command(server, demo_suite, tmp_path / "retries", "model.max_retries=2")
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL
    )
    os.close(slave)
    seen: list[bytes] = []
    held = threading.Event()
    reader = threading.Thread(target=_read_until_eof, args=(master, seen, HELD, held), daemon=True)
    reader.start()
    try:
        held.wait(120)
        assert HELD.search(b"".join(seen).decode(errors="replace")), b"".join(seen).decode(errors="replace")
    finally:
        server.unheld.set()
    proc.communicate(timeout=120)
    reader.join(timeout=30)
    os.close(master)
    text = b"".join(seen).decode().replace("\r\n", "\n")
    assert proc.returncode == 0, text
    asked = [e for e in server.log if key in e["key"] and e["kind"] == "propose"]
    assert len(asked) == 3 and all(e.get("failed") for e in asked)  # the first try and 2 retries
    rows = text.split("\n")
    warned = [row for row in rows if "retry" in row]
    assert len(warned) == len(asked) - 1
    # the line was up when the first came: cleared, then the warning from the row's start; the next
    # came before the line was drawn again; none lands at the end of a progress line
    assert warned[0].split("\r")[-1].startswith(CLEAR + "POST "), warned[0]
    assert all(row.split("\r")[-1].removeprefix(CLEAR).startswith("POST ") for row in warned), warned
    final = LINE.fullmatch(rows[-2].split("\r")[-1].removesuffix(CLEAR))
    assert rows[-1] == "" and final is not None, rows[-2:]
    assert (final["done"], final["in_flight"], final["errors"], final["eta"]) == ("3", "0", "1", "0 s")
