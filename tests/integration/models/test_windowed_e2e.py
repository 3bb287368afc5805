"""The windowed endpoint run end to end against a scripted chat-completions server on loopback.

The server answers each request from its own content only (a point from the instruction, a ranking
from the prompt, a P(Yes) from the marked image), after a delay drawn from the request's content, so
requests finish out of the order they were sent; it records when each one arrived and was answered.
Pinned: the windowed run and a window of 1 give the same per-sample records and documents; the
pointwise critic, the sampling pair and the next benchmark's requests go out while another sample's
proposer request is still unanswered (no batch, stage or benchmark barrier); a server that answers
429 above its capacity shrinks the window and the run completes with every sample; a run killed by
a failing server resumes to the fresh run's numbers.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from scripted_endpoint import Scripted, h

from gge.benchmarks.loading import load_benchmarks
from gge.errors import GgeError
from gge.run.settings import bench_options, parse_args
from gge.run.standalone import run
from gge.types import Sample

pytestmark = pytest.mark.slow  # each runs gge end to end against the server (5-15 s)


BENCHES = "benchmarks=[screenspot_v2,screenspot_pro]"


def _args(srv: Scripted, demo: Path, out: Path, *more: str) -> list[str]:
    return [
        f"data_root={demo}",
        BENCHES,
        "max_samples=6",
        f"output_dir={out}",
        "model=openai_api",
        f"model.base_url={srv.url}",
        "model.api_model=scripted",
        "model.max_retries=8",
        "probe=false",  # the server's log is the run's own requests (the probe has its own tests)
        *more,
    ]


def _eval(srv: Scripted, demo: Path, out: Path, *more: str) -> tuple[dict[str, Any], str]:
    printed = io.StringIO()
    return run(parse_args(_args(srv, demo, out, *more)), out=printed), printed.getvalue()


def _records(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The prediction log by sample, without what a run measures (seconds, window)."""
    lines = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    for line in lines:
        for c in line.get("cost", []):
            for key in ("seconds", "prefill_seconds", "window"):
                c.pop(key, None)
    return {(r["benchmark"], r["id"]): r for r in lines}


def _untimed(value: Any) -> Any:
    """A document without what a run measures: every ``seconds`` figure (and the window's own record)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in ("seconds", "window")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _figures(doc: dict[str, Any]) -> dict[str, Any]:
    """What a run found, per benchmark, its token costs included, without its timing."""
    return {name: _untimed(entry) for name, entry in doc["benchmarks"].items()}


def _first(srv: Scripted, demo: Path, tmp_path: Path) -> Sample:
    """The first screenspot_v2 sample of the runs these tests make."""
    cfg = parse_args(_args(srv, demo, tmp_path / "o"))
    loaded = load_benchmarks(["screenspot_v2"], demo, bench_options(cfg), max_samples=1)
    return loaded.samples["screenspot_v2"][0]


def _first_key(srv: Scripted, demo: Path, tmp_path: Path, first: Sample | None = None) -> str:
    """What the scripted server finds in the first screenspot_v2 sample's proposer prompt."""
    return "Instruction: " + (first or _first(srv, demo, tmp_path)).instruction


MODES = {
    "sampling+pointwise": ["model.proposer=sampling", "model.critic=pointwise", "k=3"],
    "single_pass+listwise": ["model.proposer=single_pass", "model.critic=listwise", "k=3"],
    "greedy+zoom": ["model.proposer=greedy", "model.critic=none", "model.refine=zoom"],
}


@pytest.mark.parametrize("mode", list(MODES))
def test_the_window_changes_no_result(mode: str, server: Scripted, demo_suite: Path, tmp_path: Path) -> None:
    one, _ = _eval(server, demo_suite, tmp_path / "one", *MODES[mode], "model.concurrency=1")
    wide, _ = _eval(server, demo_suite, tmp_path / "wide", *MODES[mode])
    assert _records(tmp_path / "one") == _records(tmp_path / "wide")
    assert _figures(one) == _figures(wide)
    assert len(_records(tmp_path / "wide")) == 12
    assert one["cost"]["window"]["mode"] == "fixed" and one["cost"]["window"]["peak_in_flight"] == 1
    assert wide["cost"]["window"]["mode"] == "adaptive" and wide["cost"]["window"]["start"] == 64
    # the ledger records the window each request went out under
    lines = [json.loads(x) for x in (tmp_path / "wide" / "predictions.jsonl").read_text().splitlines()]
    assert {c["window"] for r in lines for c in r["cost"]} >= {64}


def test_greedy_points_are_the_servers(server: Scripted, demo_suite: Path, tmp_path: Path) -> None:
    """The greedy answers are the points the server derived from each prompt (computed here from its log)."""
    _eval(server, demo_suite, tmp_path / "g", "model.proposer=greedy", "model.critic=none")
    asked = sorted(
        (float(h(e["key"]) % e["size"][0]), float((h(e["key"]) // e["size"][0]) % e["size"][1]))
        for e in server.log
    )
    got = sorted(tuple(r["candidates"][0]) for r in _records(tmp_path / "g").values())
    assert len(asked) == 12 and got == asked


def test_no_barrier_between_samples_stages_or_benchmarks(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    server.slow_first = 30.0  # until a critic request about a screenspot_pro screenshot arrives
    server.release_on = lambda e: e["kind"] == "judge" and e["size"] == (3840, 1080)
    first = _first(server, demo_suite, tmp_path)
    server.slow_key = _first_key(server, demo_suite, tmp_path, first)
    _eval(server, demo_suite, tmp_path / "o", "model.proposer=sampling", "model.critic=pointwise", "k=3")
    slow = next(e for e in server.log if server.slow_key in e["key"] and "released" in e)
    # the second benchmark's critic requests went out while the first benchmark's first sample's
    # proposer request was unanswered: no batch, stage or benchmark barrier
    assert slow["released"] is True
    log = [json.loads(x) for x in (tmp_path / "o" / "predictions.rank0.jsonl").read_text().splitlines()]
    order = [(r["benchmark"], r["id"]) for r in log]
    held = order.index(("screenspot_v2", first.id))
    assert held > 0 and len(order) == 12  # others finished first; every sample is logged
    assert sorted(e["n"] for e in server.log if e["key"] == slow["key"]) == [1, 2]


def test_refine_requests_go_out_while_another_sample_is_still_proposing(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    """The first sample's proposer request is held until a refine request (a crop) arrives."""
    server.slow_key = _first_key(server, demo_suite, tmp_path)
    screens = {(390, 844), (3840, 1080)}  # the two benchmarks' screenshots: anything else is a crop
    server.slow_first = 30.0
    server.release_on = lambda e: e["kind"] == "propose" and e["size"] not in screens
    _eval(server, demo_suite, tmp_path / "o", *MODES["greedy+zoom"])
    slow = next(e for e in server.log if server.slow_key in e["key"] and "released" in e)
    assert slow["released"] is True


def test_a_sampling_pair_goes_out_together(server: Scripted, demo_suite: Path, tmp_path: Path) -> None:
    """The server holds each proposer request until its pair arrives (5 s at most): none waits alone."""
    server.pairs = True
    _eval(server, demo_suite, tmp_path / "o", "model.proposer=sampling", "model.critic=none", "k=3")
    proposes = [e for e in server.log if e["kind"] == "propose"]
    assert len(proposes) == 24 and sorted({e["n"] for e in proposes}) == [1, 2]
    assert all(e["together"] for e in proposes)


def test_429_shrinks_the_window_and_nothing_is_lost(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    plain, _ = _eval(server, demo_suite, tmp_path / "plain", *MODES["sampling+pointwise"])
    server.capacity = 3
    busy, _ = _eval(server, demo_suite, tmp_path / "busy", *MODES["sampling+pointwise"])
    assert server.refused > 0
    window = busy["cost"]["window"]
    assert window["overloads"] == server.refused and window["decreases"] >= 1
    assert window["final"] < window["start"]
    assert _records(tmp_path / "busy") == _records(tmp_path / "plain")
    assert _figures(busy) == _figures(plain)


def test_a_killed_windowed_run_resumes_to_the_fresh_numbers(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    fresh, _ = _eval(server, demo_suite, tmp_path / "fresh", *MODES["sampling+pointwise"])
    # the second run's server fails the first sample's proposer requests once every other sample's
    # requests (as many as the fresh run's) are answered: the run stops with 11 samples finished
    server.fail_key = _first_key(server, demo_suite, tmp_path)
    others = sum(server.fail_key not in e["key"] for e in server.log)
    server.fail_after = len(server.log) + others  # every fresh request is answered (counted a little after)
    with pytest.raises(GgeError, match="HTTP 400"):  # strict_server: the failed request stops the run
        _eval(server, demo_suite, tmp_path / "again", *MODES["sampling+pointwise"], "strict_server=true")
    kept = (tmp_path / "again" / "predictions.rank0.jsonl").read_text().splitlines()
    assert len(kept) == 11  # every sample that finished before the failure is logged
    server.fail_after, server.fail_key = None, ""
    again, printed = _eval(
        server, demo_suite, tmp_path / "again", *MODES["sampling+pointwise"], "strict_server=true"
    )
    assert f"resuming: {len(kept)} samples already finished" in printed
    assert _records(tmp_path / "again") == _records(tmp_path / "fresh")
    assert _figures(again) == _figures(fresh)


def test_a_windowed_run_killed_by_sigkill_resumes_to_the_fresh_numbers(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    """``python eval.py`` killed (SIGKILL) mid-run; the same command again finishes what it left."""
    import signal
    import subprocess
    import sys
    import time

    mode = MODES["sampling+pointwise"]
    fresh, _ = _eval(server, demo_suite, tmp_path / "fresh", *mode)
    before = server.answered
    server.held_key = _first_key(server, demo_suite, tmp_path)  # that sample cannot finish before the kill
    root = Path(__file__).resolve().parents[3]
    command = [sys.executable, str(root / "eval.py"), *_args(server, demo_suite, tmp_path / "killed", *mode)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = tmp_path / "killed" / "predictions.rank0.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= 4:
            break
        time.sleep(0.01)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    server.held_key = ""
    server.unheld.set()
    kept = len([x for x in log.read_text().splitlines() if x.endswith("}")])
    assert 4 <= kept < 12 and server.answered > before
    again, printed = _eval(server, demo_suite, tmp_path / "killed", *mode)
    assert f"resuming: {kept} samples already finished" in printed
    assert _records(tmp_path / "killed") == _records(tmp_path / "fresh")
    assert _figures(again) == _figures(fresh)


def test_the_windowed_loop_and_the_batched_loop_score_alike(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    """One endpoint policy through evaluate_windowed and through evaluate_batches: the same results."""
    from dataclasses import replace

    from gge.models.openai_api import OpenAIBackend
    from gge.models.policy import AdapterSettings, GroundingPolicy
    from gge.run.data import make_loader
    from gge.run.evaluate import evaluate_batches
    from gge.run.windowed import evaluate_windowed

    cfg = parse_args(_args(server, demo_suite, tmp_path / "o"))
    loaded = load_benchmarks(
        ["screenspot_v2", "screenspot_pro"], demo_suite, bench_options(cfg), max_samples=4
    )
    samples = [s for group in loaded.samples.values() for s in group]
    settings = AdapterSettings(proposer="sampling", critic="pointwise", k=3)

    def policy() -> GroundingPolicy:
        return GroundingPolicy(OpenAIBackend(server.url, "scripted"), settings)

    windowed = evaluate_windowed(policy(), samples, k=3)
    batched = []
    for group in loaded.samples.values():
        batched += evaluate_batches(policy(), make_loader(group, rank=0, world=1, batch_size=3), k=3)

    def untimed(results: list[Any]) -> dict[tuple[str, str], Any]:
        return {(r.benchmark, r.id): replace(r, costs=()) for r in results}

    assert len(windowed) == 8 and untimed(windowed) == untimed(batched)
    tokens = {
        (r.benchmark, r.id): [(c.stage, c.input_tokens, c.output_tokens) for c in r.costs] for r in windowed
    }
    assert tokens == {
        (r.benchmark, r.id): [(c.stage, c.input_tokens, c.output_tokens) for c in r.costs] for r in batched
    }


def test_an_endpoint_run_under_a_launcher_is_refused(
    server: Scripted, demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(GgeError, match="runs in one process: its request window is its parallelism"):
        _eval(server, demo_suite, tmp_path / "o", "model.proposer=greedy", "model.critic=none")
    assert not any(e["kind"] == "propose" for e in server.log)


def test_eval_py_sends_jpeg_when_asked_and_loads_no_torch(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    """``python eval.py ... model.image_format=jpeg`` as a user runs it: the server decodes a JPEG of the
    screenshot's own size in every request (proposals and marked critic views), results.json records
    the format and quality, and the process never imports torch or Lightning (``-X importtime``)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    more = [*MODES["sampling+pointwise"], "model.image_format=jpeg", "model.jpeg_quality=80"]
    command = [sys.executable, "-X", "importtime", str(root / "eval.py")]
    command += _args(server, demo_suite, tmp_path / "o", *more)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(server.log) > 12 and {e["kind"] for e in server.log} == {"propose", "judge"}
    assert {(e["format"], e["media"]) for e in server.log} == {("JPEG", "data:image/jpeg")}
    assert {e["size"] for e in server.log} == {(390, 844), (3840, 1080)}  # the two benchmarks' screenshots
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    backend = doc["model"]["backend"]
    assert (backend["image_format"], backend["jpeg_quality"]) == ("jpeg", 80)
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "json" in imported  # the listing is there
    assert not imported & {"torch", "lightning", "pytorch_lightning", "transformers"}
