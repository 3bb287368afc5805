"""An endpoint run where one sample's request never succeeds, end to end through ``eval.py``'s main.

Against the scripted chat-completions server on loopback (tests/helpers/scripted_endpoint.py), whose
``broken`` knob answers HTTP 500 to every proposer request of the samples it picks. Pinned, counting
the server's own request log: the run finishes with that sample a ``server_error`` (counted in
results.json, listed in report.md, its line in predictions.jsonl carrying the error); a rerun into
the folder with the server healed asks that sample alone and the results have it answered, one
record per sample; ``strict_server=true`` stops at it, and a server that fails every request stops
the run once 20 samples have finished, each with one error line that says what is kept and the
command that resumes; so does a server gone past model.server_wait_s.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from scripted_endpoint import Scripted, demo_args

from gge.benchmarks.loading import load_benchmarks
from gge.cli.eval import main
from gge.run.settings import bench_options, parse_args

pytestmark = pytest.mark.slow  # each runs gge end to end against the server (a few seconds)

RETRIES = 2


def _args(srv: Scripted, demo: Path, out: Path, samples: int, *more: str) -> list[str]:
    # probe=false: the server's log holds the run's requests alone
    return demo_args(srv, demo, out, samples, f"model.max_retries={RETRIES}", "probe=false", *more)


def _instructions(srv: Scripted, demo: Path, tmp_path: Path, samples: int) -> list[tuple[str, str]]:
    cfg = parse_args(_args(srv, demo, tmp_path / "o", samples))
    loaded = load_benchmarks(["screenspot_v2"], demo, bench_options(cfg), max_samples=samples)
    return [(s.id, s.instruction) for s in loaded.samples["screenspot_v2"]]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _error_line(err: str) -> str:
    (line,) = [x for x in err.splitlines() if x.startswith("gge: error: ")]
    return line


def test_a_sample_whose_request_never_succeeds_is_a_server_error_and_a_rerun_asks_it_alone(
    server: Scripted, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _instructions(server, demo_suite, tmp_path, 6)
    instructions = [text for _, text in samples]
    bad_id, bad = next((i, t) for i, t in samples[2:] if instructions.count(t) == 1)
    key = "Instruction: " + bad
    server.broken = lambda text: key in text
    out = tmp_path / "run"
    assert main(_args(server, demo_suite, out, 6)) == 0
    # by hand: the broken sample's one proposer request was sent 1 + RETRIES times, every one failed
    sent = [e for e in server.log if key in e["key"]]
    assert len(sent) == 1 + RETRIES and all(e.get("failed") for e in sent)
    first_requests = len(server.log)
    assert first_requests == 5 + 1 + RETRIES  # greedy: one request a sample
    entry = json.loads((out / "results.json").read_text())["benchmarks"]["screenspot_v2"]
    assert [e["id"] for e in entry["server_errors"]] == [bad_id]
    error = entry["server_errors"][0]["error"]
    assert error.startswith(f"POST {server.url}/chat/completions") and "HTTP 500" in error
    assert error.endswith(f"(after {RETRIES} retries)")
    assert entry["samples"] == 6 and entry["format_errors"] == 0
    assert entry["decomposition"]["overall"]["counts"]["server_error"] == 1
    lines = {x["id"]: x for x in _lines(out / "predictions.jsonl")}
    assert len(lines) == 6 and lines[bad_id]["server_error"] == error
    assert f"  - {bad_id}: {error}" in (out / "report.md").read_text()
    capsys.readouterr()

    server.broken = lambda text: False  # healed
    assert main(_args(server, demo_suite, out, 6)) == 0
    printed = capsys.readouterr().out
    assert "resuming: 5 samples already finished" in printed
    assert "asking again 1 sample whose request failed (server_error)" in printed
    asked = server.log[first_requests:]
    assert [key in e["key"] for e in asked] == [True]  # that sample alone, once
    entry = json.loads((out / "results.json").read_text())["benchmarks"]["screenspot_v2"]
    assert entry["server_errors"] == [] and "server_error" not in entry["decomposition"]["overall"]
    final = _lines(out / "predictions.jsonl")
    assert sorted(x["id"] for x in final) == sorted(i for i, _ in samples)  # one record per sample
    answered = next(x for x in final if x["id"] == bad_id)
    assert "server_error" not in answered and answered["raw"] and not answered["format_error"]
    assert "Server errors" not in (out / "report.md").read_text()


def test_strict_server_stops_at_the_first_and_says_what_is_kept(
    server: Scripted, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _instructions(server, demo_suite, tmp_path, 4)
    key = "Instruction: " + samples[0][1]
    server.broken = lambda text: key in text
    out = tmp_path / "strict"
    args = _args(server, demo_suite, out, 4, "strict_server=true")
    assert main(args) == 2
    err = capsys.readouterr().err
    kept = len(_lines(out / "predictions.rank0.jsonl")) if (out / "predictions.rank0.jsonl").exists() else 0
    logs = "predictions.rank0.jsonl" if kept else "no prediction log"
    line = _error_line(err)
    assert line.startswith(f"gge: error: POST {server.url}/chat/completions")
    assert line.endswith(
        f"(strict_server=true): {kept} of 4 samples are kept in {out} ({logs}); "
        "the same command resumes from them:"
    )
    command = err.splitlines()[err.splitlines().index(line) + 1]
    assert f" output_dir={out} " in command and command.endswith(" strict_server=true resume=true")
    assert "Traceback" not in err


def test_a_server_that_fails_every_request_stops_the_run_at_the_share(
    server: Scripted, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.broken = lambda text: True
    out = tmp_path / "broken"
    assert main(_args(server, demo_suite, out, 30, "model.max_retries=0")) == 2
    err = capsys.readouterr().err
    logged = _lines(out / "predictions.rank0.jsonl")
    assert len(logged) >= 20 and all(x["server_error"] for x in logged)  # others may end with the 20th
    line = _error_line(err)
    assert line.startswith("gge: error: 20 of the 20 samples finished failed at the server (more than ")
    assert "max_server_error_share=0.1): the server looks broken, not flaky; last error: POST " in line
    assert line.endswith(
        f": 0 of 30 samples are kept in {out} (predictions.rank0.jsonl); the same command resumes from them, "
        f"asking the {len(logged)} server errors again:"
    )
    assert "Traceback" not in err


def test_a_server_gone_stops_the_run_saying_what_is_kept(
    server: Scripted, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server stops while the first sample's request is held (a window of 1: nothing else out)."""
    samples = _instructions(server, demo_suite, tmp_path, 30)
    server.held_key = "Instruction: " + samples[0][1]
    out = tmp_path / "gone"
    args = _args(
        server, demo_suite, out, 30, "model.concurrency=1", "model.server_wait_s=0", "model.max_retries=0"
    )
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(main(args)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not any(server.held_key in e["key"] for e in list(server.log)) and time.monotonic() < deadline:
        time.sleep(0.01)
    server.shutdown()
    server.server_close()  # nothing listens there now: the next request's connection is refused
    server.unheld.set()  # the held request is answered on its open connection
    thread.join(60)
    assert codes == [2]
    err = capsys.readouterr().err
    kept = len(_lines(out / "predictions.rank0.jsonl"))
    assert kept == len([e for e in server.log if e["answered"] is not None])  # every answer was kept
    line = _error_line(err)
    assert line.startswith(f"gge: error: POST {server.url}/chat/completions")
    assert line.endswith(
        f"(after 0 retries); model.server_wait_s=0: not waited for: {kept} of 30 samples are kept in {out} "
        "(predictions.rank0.jsonl); the same command resumes from them:"
    )
    assert "Traceback" not in err
