"""An endpoint run over client processes (``client_procs=2``) against the scripted server, end to end.

Pinned, each counted from the scripted server's own request log (tests/helpers/scripted_endpoint.py,
whose answers depend on each request's content alone): two processes ask every request a one-process
run asks, each once, and give the same predictions; results.json's usage, window and image counts
cover both processes (the probe's requests and the run's); a sample whose request never succeeds is a
server error either way and a rerun asks it alone; the server-error share over both processes' samples
stops the run; ``strict_server=true`` stops it at the first, and a process whose policy cannot be built
stops it with that error; Ctrl-C to the process group stops every process, keeps what finished and
the command it prints resumes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from scripted_endpoint import Scripted, demo_args

from gge.benchmarks.loading import load_benchmarks
from gge.cli.eval import main
from gge.errors import GgeError
from gge.models.registry import kind_of
from gge.run.client_procs import evaluate_in_processes
from gge.run.settings import bench_options, parse_args

pytestmark = pytest.mark.slow  # each starts client processes (about a second each)

MARKING = ["model.proposer=sampling", "model.critic=pointwise", "k=3"]


def _args(srv: Scripted, demo: Path, out: Path, samples: int, *more: str) -> list[str]:
    return demo_args(srv, demo, out, samples, "model.max_retries=1", "progress_s=0", *more)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _answers(out: Path) -> dict[str, tuple[Any, ...]]:
    """Each sample's answers as predictions.jsonl has them (no timings: those differ run to run)."""
    return {
        x["id"]: (
            x.get("raw"),
            json.dumps(x.get("candidates")),
            json.dumps(x.get("picks")),
            x.get("critic_raw"),
        )
        for x in _lines(out / "predictions.jsonl")
    }


def test_two_processes_ask_each_request_once_and_agree_with_one(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(_args(server, demo_suite, one, 12, *MARKING, "probe=false")) == 0
    asked_one = Counter((e["kind"], e["key"]) for e in server.log)
    start = len(server.log)
    assert main(_args(server, demo_suite, two, 12, *MARKING, "client_procs=2")) == 0
    log_two = server.log[start:]
    results = json.loads((two / "results.json").read_text())
    backend = results["model"]["backend"]
    probe = backend["probe"]["usage"]["requests"]
    asked_two = Counter((e["kind"], e["key"]) for e in log_two[probe:])
    assert asked_two == asked_one  # the same requests, each asked as often (once: no key twice)
    assert _answers(two) == _answers(one)
    # the record covers the parent's probe and both processes, by the server's count
    assert backend["usage"]["requests"] == len(log_two)
    window = results["cost"]["window"]
    assert window["processes"] == 2 and window["sent"] == len(log_two)
    assert window["start"] == 64 and window["max"] == 256  # the window the run was given
    images_one = json.loads((one / "results.json").read_text())["model"]["backend"]["images"]
    assert backend["images"]["encoded"] >= images_one["encoded"]  # each process encodes its own images
    assert backend["logprobs"] == "available"
    one_model = json.loads((one / "results.json").read_text())["model"]
    # the processes' policies' calls summed with the parent's: the probe's one proposer call
    calls = one_model["calls"]
    assert results["model"]["calls"] == {**calls, "propose": calls["propose"] + 1}
    assert results["model"]["usage"]["prompt_tokens"] >= one_model["usage"]["prompt_tokens"] > 0
    assert [e["id"] for e in results["benchmarks"]["screenspot_v2"]["server_errors"]] == []


def test_a_server_error_in_a_process_is_the_samples_and_a_rerun_asks_it_alone(
    server: Scripted, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = parse_args(_args(server, demo_suite, tmp_path / "o", 8))
    loaded = load_benchmarks(["screenspot_v2"], demo_suite, bench_options(cfg), max_samples=8)
    samples = [(s.id, s.instruction) for s in loaded.samples["screenspot_v2"]]
    texts = [t for _, t in samples]
    bad_id, bad = next((i, t) for i, t in samples[2:] if texts.count(t) == 1)
    key = "Instruction: " + bad
    server.broken = lambda text: key in text
    out = tmp_path / "run"
    args = _args(server, demo_suite, out, 8, "client_procs=2", "probe=false")
    assert main(args) == 0
    assert len([e for e in server.log if key in e["key"]]) == 2  # its one request, tried twice
    assert len(server.log) == 7 + 2
    entry = json.loads((out / "results.json").read_text())["benchmarks"]["screenspot_v2"]
    assert [e["id"] for e in entry["server_errors"]] == [bad_id] and entry["samples"] == 8
    usage = json.loads((out / "results.json").read_text())["model"]["backend"]["usage"]
    assert (usage["requests"], usage["retries"], usage["failed"]) == (7, 1, 1)
    capsys.readouterr()
    server.broken = lambda text: False
    first = len(server.log)
    assert main(args) == 0
    assert "asking again 1 sample whose request failed (server_error)" in capsys.readouterr().out
    assert [key in e["key"] for e in server.log[first:]] == [True]
    final = _lines(out / "predictions.jsonl")
    assert sorted(x["id"] for x in final) == sorted(i for i, _ in samples)
    assert all("server_error" not in x for x in final)


def test_the_server_error_share_counts_every_process_and_strict_server_stops(
    server: Scripted, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.broken = lambda text: True
    server.delay_ms = 50  # two requests out at a time, each 0.1-0.25 s: the stop comes long before the 40th
    out = tmp_path / "broken"
    args = _args(
        server,
        demo_suite,
        out,
        40,
        "client_procs=2",
        "probe=false",
        "model.max_retries=0",
        "model.concurrency=2",
    )
    assert main(args) == 2
    err = capsys.readouterr().err
    logged = _lines(out / "predictions.rank0.jsonl")
    assert len(logged) >= 20 and all(x["server_error"] for x in logged)
    assert len(logged) < 40  # it stopped: not every sample was asked
    # one request a sample (no retries); those the stop cut short are not logged (a rerun asks them)
    assert len(logged) <= len(server.log) < 40
    (line,) = [x for x in err.splitlines() if x.startswith("gge: error: ")]
    assert line.startswith("gge: error: 20 of the 20 samples finished failed at the server (more than ")
    assert "Traceback" not in err

    server.delay_ms = 12
    strict = tmp_path / "strict"
    assert (
        main(_args(server, demo_suite, strict, 6, "client_procs=2", "probe=false", "strict_server=true")) == 2
    )
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("gge: error: ")]
    assert line.startswith(f"gge: error: POST {server.url}/chat/completions")
    assert line.endswith("(after 1 retries) (strict_server=true)")  # nothing kept: the error alone
    assert not (strict / "predictions.rank0.jsonl").exists() or not _lines(strict / "predictions.rank0.jsonl")


def test_a_process_that_cannot_build_its_policy_stops_the_run_with_its_error(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    cfg = parse_args(_args(server, demo_suite, tmp_path / "o", 4))
    kind = kind_of(cfg.model)
    kind.fill_defaults(cfg, None)
    policy = kind.build(cfg)
    loaded = load_benchmarks(["screenspot_v2"], demo_suite, bench_options(cfg), max_samples=4)
    cfg.model.api_model = ""  # what the processes build from: no model name
    with pytest.raises(
        GgeError, match=re.escape("the openai backend needs model.base_url=URL and model.api_model")
    ):
        evaluate_in_processes(cfg, policy, loaded.samples["screenspot_v2"], 2, k=1, cluster_radius=0.05)
    assert server.log == []


def test_ctrl_c_stops_every_process_and_the_same_command_resumes(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    """Ctrl-C as a terminal sends it: SIGINT to the whole process group (the processes ignore it)."""
    out = tmp_path / "run"
    args = _args(server, demo_suite, out, 30, "client_procs=2", "probe=false", "model.concurrency=2")
    server.delay_ms = 300  # about 2 x 2 answers a 0.3 s: the run takes about 2 s
    proc = _launched(args, server, answered=6)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert _group_ends(proc.pid), "a client process is left running"
    kept = len(_lines(out / "predictions.rank0.jsonl"))
    assert 1 <= kept < 30  # what had reached the parent when Ctrl-C came
    lines = err.splitlines()
    assert lines[-2] == (
        f"gge: interrupted: {kept} of 30 samples are kept in {out} (predictions.rank0.jsonl); the same "
        "command resumes from them:"
    )
    assert "Traceback" not in err
    server.delay_ms = 12
    assert main(shlex.split(lines[-1])[2:]) == 0
    final = _lines(out / "predictions.jsonl")
    assert len(final) == 30 and len({x["id"] for x in final}) == 30


def _launched(args: list[str], server: Scripted, answered: int) -> subprocess.Popen[str]:
    """``python eval.py ARGS`` in a process group of its own, as a terminal starts it.

    Returned once the server has answered ``answered`` of its requests.
    """
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [sys.executable, "eval.py", *args],
        cwd=root,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while sum(e["answered"] is not None for e in list(server.log)) < answered and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc


def _group_ends(pgid: int, within_s: float = 10.0) -> bool:
    """Whether every process of the group ends (multiprocessing's resource tracker ends just after)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _peak(log: list[dict[str, Any]]) -> int:
    """The most requests the client had out at once, from the server's log.

    From each request's arrival to the moment before its answer was written (``replied``): the client
    cannot have sent the request that the answer freed a place for before then. (``answered`` is
    stamped after the answer is written, so an interval to it can overlap the next request's.)
    """
    events = sorted(
        [(e["arrived"], 1) for e in log] + [(e["replied"], -1) for e in log], key=lambda t: (t[0], t[1])
    )
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_a_fixed_window_is_split_between_the_processes(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    server.delay_ms = 50
    out = tmp_path / "fixed"
    assert (
        main(_args(server, demo_suite, out, 16, "client_procs=2", "probe=false", "model.concurrency=3")) == 0
    )
    assert len(server.log) == 16 and _peak(server.log) <= 3  # 2 + 1 requests, never more
    window = json.loads((out / "results.json").read_text())["cost"]["window"]
    assert (window["mode"], window["max"], window["final"], window["processes"]) == ("fixed", 3, 3, 2)


def test_a_process_that_dies_stops_the_run_saying_so(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = _args(server, demo_suite, out, 30, "client_procs=2", "probe=false", "model.concurrency=2")
    server.delay_ms = 300
    proc = _launched(args, server, answered=2)
    spawned = [
        pid
        for pid in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()
    ]
    assert len(spawned) == 2
    os.kill(int(spawned[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert _group_ends(proc.pid), "a client process is left running"
    (line,) = [x for x in err.splitlines() if x.startswith("gge: error: ")]
    assert re.match(
        r"gge: error: client process [01] ended \(exit code -9\) before its samples were done", line
    )
    assert "Traceback" not in err


def test_fewer_processes_than_asked_says_so(
    server: Scripted, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _args(
        server, demo_suite, tmp_path / "out", 6, "client_procs=5", "probe=false", "model.concurrency=3"
    )
    assert main(args) == 0
    line = "client_procs=5: 3 client processes (at most the request window's start and the samples to ask)"
    assert line in capsys.readouterr().out
    window = json.loads((tmp_path / "out" / "results.json").read_text())["cost"]["window"]
    assert window["processes"] == 3 and len(server.log) == 6
