"""A resumed endpoint run's record covers the whole run: its usage is the server's count over both runs.

The scripted chat-completions server on loopback answers HTTP 500 to every 4th request it receives and
429 to every 4th after that (before looking at it), and holds one sample's proposer request: the run
(a window of one request) is interrupted (Ctrl-C: ``KeyboardInterrupt`` in the main thread) once that
request has arrived, so the one request in flight is the held one, whose answer the client never
reads. The rerun into the folder finishes the run. results.json's usage must then be what the server's
own log says, counted here by hand: requests answered (less the abandoned one), the 500s and 429s it
sent (each a retry), and the prompt and completion tokens of the answers, from the server's own rule
(``50 + len(text) % 7`` prompt tokens, 4 per choice).
"""

from __future__ import annotations

import _thread
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_endpoint import Scripted, _Handler

from gge.run.invocations import INVOCATIONS_FILE
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.run.stops import RunInterrupted

pytestmark = pytest.mark.slow  # two endpoint runs end to end (a few seconds)


class _Failing(_Handler):
    """The scripted handler, but every 4th request gets HTTP 500 and every 4th after it 429, unread."""

    def do_POST(self) -> None:
        srv = self.server
        assert isinstance(srv, _Counting)
        with srv.lock:
            srv.arrivals += 1
            code = {1: 500, 3: 429}.get(srv.arrivals % 4)
            if code is not None:
                srv.sent[code] += 1
        if code is None:
            super().do_POST()
            return
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send(code, {"error": {"message": f"scripted {code}"}}, {"Retry-After": "0"})


class _Counting(Scripted):
    def __init__(self) -> None:
        super().__init__()
        self.arrivals = 0
        self.sent = {500: 0, 429: 0}


@pytest.fixture
def server() -> Iterator[_Counting]:
    srv = _Counting()
    srv.RequestHandlerClass = _Failing  # type: ignore[assignment]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.unheld.set()
        srv.shutdown()
        srv.server_close()


def _args(srv: Scripted, demo: Path, out: Path) -> list[str]:
    return [
        f"data_root={demo}",
        "benchmarks=[screenspot_v2]",
        "max_samples=8",
        f"output_dir={out}",
        "model=openai_api",
        f"model.base_url={srv.url}",
        "model.api_model=scripted",
        "model.concurrency=1",
        "model.max_retries=8",
    ]


def _instruction(demo: Path, index: int) -> str:
    from gge.benchmarks import get_benchmark

    bench = get_benchmark("screenspot_v2")
    return bench.load(demo / bench.directory, bench.options_type()).samples[index].instruction


def _interrupt_when_held(srv: Scripted, key: str) -> threading.Thread:
    """Ctrl-C in the main thread once the held request (the one whose text has ``key``) has arrived."""

    def watch() -> None:
        with srv.paired:
            if srv.paired.wait_for(lambda: any(key in e["key"] for e in srv.log), timeout=60):
                _thread.interrupt_main()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _expected(log: list[dict[str, Any]]) -> dict[str, int]:
    """The usage the client read, from the server's own log of the answers it gave (its usage rule)."""
    return {
        "requests": len(log),
        "prompt_tokens": sum(50 + len(e["key"]) % 7 for e in log),
        "completion_tokens": sum(4 * (int(e["n"]) if e["kind"] == "propose" else 1) for e in log),
    }


def test_a_resumed_runs_usage_is_the_servers_count_over_both_invocations(
    server: _Counting, demo_suite: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    key = _instruction(demo_suite, 4)
    server.held_key = key
    watcher = _interrupt_when_held(server, key)
    with pytest.raises(RunInterrupted) as stopped:
        run(parse_args(_args(server, demo_suite, out)), out=io.StringIO())
    watcher.join(5)
    kept = stopped.value.kept
    first = json.loads((out / INVOCATIONS_FILE).read_text())["invocations"]
    assert [(i["end"], i["samples"], i["restored"]) for i in first] == [("interrupted", kept, 0)]

    with server.lock:  # the held request is answered now, but its client is gone: it never read it
        abandoned = [e for e in server.log if key in e["key"]]
        server.held_key = ""
    server.unheld.set()
    assert len(abandoned) == 1

    document = run(parse_args(_args(server, demo_suite, out)), out=io.StringIO())
    with server.lock:
        read = [e for e in server.log if e is not abandoned[0]]
        sent = dict(server.sent)
    usage = document["model"]["backend"]["usage"]
    expected = _expected(read)
    assert {k: usage[k] for k in expected} == expected
    assert usage["retries"] == sent[500] + sent[429]
    assert sent[500] > 0 and sent[429] > 0  # both kinds of failure happened (the counts are the server's)

    invocations = document["invocations"]
    assert [(i["end"], i["samples"], i["restored"]) for i in invocations] == [
        ("interrupted", kept, 0),
        ("finished", 8 - kept, kept),
    ]
    per = [i["counters"]["backend.usage"]["requests"] for i in invocations]
    assert sum(per) == expected["requests"]
    assert [i["window"]["mode"] for i in invocations] == ["fixed", "fixed"]
    assert [i["window"]["peak_in_flight"] for i in invocations] == [1, 1]
    assert document["cost"]["window"]["sent"] == sum(i["window"]["sent"] for i in invocations)
    report = (out / "report.md").read_text()
    assert (
        f"resumed: 2 invocations (#1 interrupted, {kept} samples; #2 finished, {8 - kept} samples)" in report
    )
    assert f"usage, summed over the 2 invocations: {expected['requests']:,} requests answered" in report


def test_an_in_process_run_records_one_invocation_without_a_window(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    args = [f"data_root={demo_suite}", "benchmarks=[screenspot_v2]", "max_samples=3", f"output_dir={out}"]
    document = run(parse_args([*args, "trainer.accelerator=cpu"]), out=io.StringIO())
    (only,) = document["invocations"]
    assert (only["end"], only["samples"], only["restored"]) == ("finished", 3, 0)
    assert "window" not in only
    assert "resumed:" not in (out / "report.md").read_text()


def _logged(out: Path) -> tuple[set[str], set[str]]:
    """The ids the folder's prediction logs answer and those they record as server errors (the last line
    of an id wins), read here line by line."""
    last: dict[str, dict[str, Any]] = {}
    for path in sorted(out.glob("predictions*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                last[record["id"]] = record
    errors = {i for i, r in last.items() if r.get("server_error") is not None}
    return set(last) - errors, errors


def _interrupt_when_held_and_logged(srv: Scripted, key: str, out: Path) -> threading.Thread:
    """Ctrl-C once the held request has arrived and a server error is in the folder's logs."""

    def watch() -> None:
        with srv.paired:
            if not srv.paired.wait_for(lambda: any(key in e["key"] for e in srv.log), timeout=60):
                return
        done = threading.Event()
        for _ in range(1200):  # the sample's thread logs it as it finishes (at most a minute here)
            if _logged(out)[1]:
                _thread.interrupt_main()
                return
            done.wait(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_an_invocations_samples_leave_out_server_errors_however_it_ends(
    demo_suite: Path, tmp_path: Path
) -> None:
    srv = Scripted()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        out = tmp_path / "run"
        bad, held = _instruction(demo_suite, 0), _instruction(demo_suite, 5)
        srv.broken = lambda text: bad in text  # HTTP 500 every time: sample 0 fails for good
        srv.held_key = held
        # a window of two: sample 0 goes on beside the held request, whichever sample takes a place first
        args = [
            *_args(srv, demo_suite, out),
            "model.max_retries=0",
            "max_server_error_share=1.0",
            "model.concurrency=2",
        ]
        watcher = _interrupt_when_held_and_logged(srv, held, out)
        with pytest.raises(RunInterrupted) as stopped:
            run(parse_args(args), out=io.StringIO())
        watcher.join(5)
        answered, errors = _logged(out)
        assert len(errors) == 1  # sample 0, logged as a server error while the held request was out
        first = json.loads((out / INVOCATIONS_FILE).read_text())["invocations"]
        assert [(i["end"], i["samples"]) for i in first] == [("interrupted", len(answered))]
        assert stopped.value.kept == len(answered)

        with srv.lock:
            srv.held_key = ""
        srv.unheld.set()
        document = run(parse_args(args), out=io.StringIO())
        after, errors_after = _logged(out)
        assert len(errors_after) == 1 and len(after) == 7  # sample 0 asked again, failed again
        # by hand: the second answered the 7 answerable samples less the first's; the server error
        # it met again (one of its results) is no sample of either
        assert [(i["end"], i["samples"], i["restored"]) for i in document["invocations"]] == [
            ("interrupted", len(answered), 0),
            ("finished", 7 - len(answered), len(answered)),
        ]
    finally:
        srv.unheld.set()
        srv.shutdown()
        srv.server_close()
