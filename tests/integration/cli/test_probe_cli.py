"""An endpoint run probes its server first and records who answered and what the model saw.

Against the fake engine of tests/helpers/probe_engine.py, which counts each request's prompt tokens
from the request itself and resizes its image with its own ``max_pixels``: a faithful engine's run
records its identity and no differing request; an engine with a smaller ``max_pixels`` is one probe
line, and results.json's ``image_tokens`` counts every proposer request of the run as differing, with
the ratio summed from the engine's own log. A run interrupted after its first benchmark and resumed
keeps that benchmark's check and who answered (the probe's record kept in the output folder); Ctrl-C
during the probe and a server that does not answer are the run's one-line stops.
"""

from __future__ import annotations

import _thread
import io
import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from probe_engine import Engine, running

from gge.errors import TransientError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.run.stops import RunInterrupted, RunStopped

pytestmark = pytest.mark.slow  # gge end to end against the engine (a few seconds)


def _run(engine: Engine, demo: Path, out: Path, *more: str) -> tuple[dict[str, Any], str]:
    args = [
        f"data_root={demo}",
        "benchmarks=[screenspot_v2]",
        "max_samples=3",
        f"output_dir={out}",
        "model=openai_api",
        f"model.base_url={engine.root}/v1",
        "model.api_model=qwen",
        "model.resize_factor=28",
        "model.proposer=greedy",
        "model.critic=none",
        "model.concurrency=2",
        *more,
    ]
    printed = io.StringIO()
    return run(parse_args(args), out=printed), printed.getvalue()


def test_a_faithful_engine_is_named_and_checked(demo_suite: Path, tmp_path: Path) -> None:
    with running() as engine:
        document, said = _run(engine, demo_suite, tmp_path / "ok")
    assert "probe" not in said
    probe = document["model"]["backend"]["probe"]
    assert probe["engine"]["name"] == "vLLM 0.11.0" and probe["served_models"] == ["qwen"]
    check = document["benchmarks"]["screenspot_v2"]["image_tokens"]
    assert (check["source"], check["requests"], check["differ"], check["ratio"]) == ("prompt", 3, 0, None)
    head = (tmp_path / "ok" / "report.md").read_text().splitlines()[1]
    assert head == f"Answered by: vLLM 0.11.0 at {engine.root}/v1, model qwen"
    assert head in (tmp_path / "ok" / "report.html").read_text()


def test_an_engine_that_shrinks_screenshots_is_caught(demo_suite: Path, tmp_path: Path) -> None:
    with running() as engine:
        engine.max_pixels = 28 * 28 * 100  # far below the preset's 1,003,520
        document, said = _run(engine, demo_suite, tmp_path / "small")
    probe_lines = [x for x in said.splitlines() if x.startswith("warning: probe: ")]
    assert len(probe_lines) == 1 and "image tokens for a" in probe_lines[0]
    # the run's proposer requests: the engine's log after the probe's (first-sample request, two of the
    # token split, and none for the window: a fixed window is not probed), by hand
    run_requests = engine.log[3:]
    assert len(run_requests) == 3
    expected = [(w // 28) * (h // 28) for w, h in (c["size"] for c in run_requests)]
    # an endpoint's image tokens are its prompt tokens less the probe's text tokens (the small image's
    # request has the probe's text)
    probe_text = next(c["text"] for c in engine.log[:3] if c["size"] == (112, 112))
    seen = [c["text"] + c["image"] - probe_text for c in run_requests]
    assert all(c["image"] < e for c, e in zip(run_requests, expected, strict=True))
    check = document["benchmarks"]["screenspot_v2"]["image_tokens"]
    assert (check["requests"], check["differ"]) == (3, 3)
    assert check["ratio"] == round(sum(seen) / sum(expected), 4)
    results = json.loads((tmp_path / "small" / "results.json").read_text())
    assert results["benchmarks"]["screenspot_v2"]["image_tokens"] == check


def test_a_resumed_run_keeps_what_the_first_invocations_probe_found(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "resumed"
    more = ("benchmarks=[screenspot_v2,screenspot_pro]", "max_samples=2", "model.concurrency=1")
    with running() as engine:
        # the first invocation's probe: the first request, then each benchmark's token split (2 each);
        # the run then asks screenspot_v2's 2 samples: Ctrl-C when screenspot_pro's first arrives
        engine.on_chat = lambda n: _thread.interrupt_main() if n == 1 + 2 * 2 + 2 + 1 else None
        with pytest.raises(RunInterrupted) as stop:
            _run(engine, demo_suite, out, *more)
        engine.on_chat = None
        # a request the first had on its way when Ctrl-C landed may still arrive (never logged as an
        # answer): the first's requests are those the engine has once it has heard nothing for 0.5 s
        quiet = threading.Event()
        while True:
            seen = len(engine.log)
            quiet.wait(0.5)
            if len(engine.log) == seen:
                break
        first_log = list(engine.log)
        # the benchmarks the first left samples of (which sample takes the window first is the threads'
        # race: screenspot_pro's first may go before screenspot_v2's second), read off the logs
        answered: dict[str, int] = {}
        for path in sorted(out.glob("predictions*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                name = json.loads(line)["benchmark"]
                answered[name] = answered.get(name, 0) + 1
        left = [name for name in ("screenspot_v2", "screenspot_pro") if answered.get(name, 0) < 2]
        assert sum(answered.values()) == stop.value.kept
        document, _ = _run(engine, demo_suite, out, *more)
        # the second asks the benchmarks left: its probe (the first request and each one's split) and
        # the samples the first left (the held one's answer may have come in before the Ctrl-C did)
        asked = len(engine.log) - len(first_log)
        assert asked == 1 + 2 * len(left) + (4 - stop.value.kept)
        again, _ = _run(engine, demo_suite, out, *more)  # nothing left to do: nothing asked
        assert len(engine.log) == len(first_log) + asked
    for doc in (document, again):
        probe = doc["model"]["backend"]["probe"]
        assert sorted(probe["image_tokens"]) == ["screenspot_pro", "screenspot_v2"]
        assert probe["engine"]["name"] == "vLLM 0.11.0"
        # screenspot_v2's samples were answered by the first invocation: its check survives
        check = doc["benchmarks"]["screenspot_v2"]["image_tokens"]
        assert (check["source"], check["requests"], check["differ"]) == ("prompt", 2, 0)
    head = (out / "report.md").read_text().splitlines()[1]
    assert head == f"Answered by: vLLM 0.11.0 at {engine.root}/v1, model qwen"


def test_ctrl_c_during_the_probe_is_the_one_line_interruption(demo_suite: Path, tmp_path: Path) -> None:
    with running() as engine:
        engine.on_chat = lambda n: _thread.interrupt_main() if n == 1 else None  # the probe's first request
        with pytest.raises(RunInterrupted) as e:
            _run(engine, demo_suite, tmp_path / "stopped")
    assert str(e.value).startswith("interrupted: 0 of 3 samples are kept in ")
    assert len(engine.log) == 1  # nothing asked after the probe's request


def test_nothing_answering_is_one_line_and_a_transient_error(demo_suite: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [
        f"data_root={demo_suite}",
        "benchmarks=[screenspot_v2]",
        "max_samples=1",
        f"output_dir={tmp_path / 'down'}",
        "model=openai_api",
        f"model.base_url=http://127.0.0.1:{port}/v1",
        "model.api_model=qwen",
    ]
    with pytest.raises(TransientError) as e:  # gge watch tries again
        run(parse_args(args), out=io.StringIO())
    assert not isinstance(e.value, RunStopped)  # nothing kept: nothing to resume, the error alone
    assert str(e.value).startswith(f"probe: nothing answers at http://127.0.0.1:{port}/v1/models: ")
    assert "samples are kept" not in str(e.value)
