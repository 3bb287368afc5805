"""The record of a run's invocations (gge.run.invocations): sums by hand, the ledger's life on real files."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, cast

import pytest

from gge.documents.cost import Invocation, WindowSummary
from gge.errors import GgeError
from gge.run.invocations import (
    INVOCATIONS_FILE,
    InvocationLedger,
    counters_of,
    merged_window,
    summed_counters,
    with_summed,
)
from gge.run.runstate import RUN_FILE


def _inv(counters: dict[str, dict[str, float]]) -> Invocation:
    return {
        "started": "t",
        "ended": "t",
        "end": "finished",
        "restored": 0,
        "samples": 1,
        "counters": counters,
    }


def _window(mean: float, busy: float, peak: int, sent: int) -> WindowSummary:
    return {
        "mode": "adaptive",
        "start": 64,
        "max": 256,
        "final": 32,
        "peak_in_flight": peak,
        "mean_in_flight": mean,
        "sent": sent,
        "overloads": 1,
        "decreases": 2,
        "busy_seconds": busy,
    }


def test_counters_are_summed_key_by_key_and_only_they_replace_the_record() -> None:
    model = {
        "backend": {"usage": {"requests": 1, "retries": 0}, "timeout_s": 60.0, "images": {"encoded": 1}},
        "calls": {"propose": 1},
        "adapter": {"max_pixels": 1000},
    }
    first = _inv(
        {"backend.usage": {"requests": 302, "retries": 58, "unreachable_s": 0.5}, "calls": {"propose": 5}}
    )
    last = _inv(counters_of(model))
    summed = with_summed(model, [first, last])
    assert summed["backend"]["usage"] == {"requests": 303, "retries": 58, "unreachable_s": 0.5}
    assert summed["backend"]["images"] == {"encoded": 1}
    assert summed["calls"] == {"propose": 6}
    assert summed["backend"]["timeout_s"] == 60.0 and summed["adapter"] == {"max_pixels": 1000}
    assert model["backend"]["usage"] == {"requests": 1, "retries": 0}  # the record itself is not changed
    assert summed_counters([]) == {}


def test_the_runs_window_weights_each_mean_by_its_busy_time() -> None:
    a, b = _window(30.0, 10.0, 64, 300), _window(1.0, 30.0, 1, 3)
    merged = merged_window([a, b])
    assert merged is not None
    assert merged["mean_in_flight"] == pytest.approx((30 * 10 + 1 * 30) / 40)  # 8.25
    assert (merged["peak_in_flight"], merged["sent"], merged["overloads"], merged["decreases"]) == (
        64,
        303,
        2,
        4,
    )
    assert merged["busy_seconds"] == 40.0
    assert merged_window([]) is None


def _folder(tmp_path: Path, fingerprint: dict[str, Any]) -> Path:
    (tmp_path / RUN_FILE).write_text(json.dumps({"fingerprint": fingerprint}))
    return tmp_path


def _ticks() -> Any:
    n = iter(range(100))
    return lambda: f"t{next(n)}"


def test_a_killed_invocation_is_marked_and_its_samples_counted_from_the_logs(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"k": 1})
    first = InvocationLedger.start(folder, restored=2, resume=True, now=_ticks())
    first.update({"backend.usage": {"requests": 7}})  # then SIGKILL: no end
    second = InvocationLedger.start(folder, restored=9, resume=True, now=_ticks())
    done = second.end("finished", samples=1, counters={"backend.usage": {"requests": 1}})
    assert [(i["end"], i["samples"], i["restored"], i["ended"]) for i in done] == [
        ("killed", 7, 2, None),
        ("finished", 1, 9, "t1"),
    ]
    assert summed_counters(done) == {"backend.usage": {"requests": 8}}


def test_an_end_is_recorded_once_and_an_update_after_it_changes_nothing(tmp_path: Path) -> None:
    ledger = InvocationLedger.start(_folder(tmp_path, {"k": 1}), restored=0, resume=True, now=_ticks())
    ledger.end("stopped", samples=3, counters={"u": {"a": 1}}, why="the server broke")
    ledger.update({"u": {"a": 5}})
    again = ledger.end("finished", samples=9, counters={"u": {"a": 9}})
    assert [(i["end"], i["samples"], i["counters"], i.get("why")) for i in again] == [
        ("stopped", 3, {"u": {"a": 1}}, "the server broke")
    ]


@pytest.mark.parametrize("how", ["resume=false", "another run"])
def test_a_new_run_starts_the_list_over(tmp_path: Path, how: str) -> None:
    folder = _folder(tmp_path, {"k": 1})
    InvocationLedger.start(folder, restored=0, resume=True).end("interrupted", samples=1, counters={})
    if how == "another run":
        _folder(tmp_path, {"k": 2})
    ledger = InvocationLedger.start(folder, restored=0, resume=how != "resume=false")
    assert [i["end"] for i in ledger.invocations()] == ["running"]


def test_an_unreadable_record_is_one_line_naming_the_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"k": 1})
    (folder / INVOCATIONS_FILE).write_text("{not json")
    with pytest.raises(GgeError, match=rf"{INVOCATIONS_FILE}: unreadable .* resume=false"):
        InvocationLedger.start(folder, restored=0, resume=True)


def test_the_running_invocation_is_updated_on_its_thread(tmp_path: Path) -> None:
    ledger = InvocationLedger.start(_folder(tmp_path, {"k": 1}), restored=0, resume=True)
    calls: list[int] = []
    twice = threading.Event()

    def snapshot() -> tuple[dict[str, dict[str, float]], WindowSummary | None]:
        calls.append(1)
        if len(calls) >= 2:
            twice.set()
        return {"backend.usage": {"requests": len(calls)}}, _window(2.0, 1.0, 2, len(calls))

    with ledger.keep_updated(snapshot, every_s=0.001):
        assert twice.wait(30)
    (entry,) = ledger.invocations()
    assert entry["end"] == "running"
    assert entry["counters"]["backend.usage"]["requests"] == len(calls)  # the last snapshot written
    assert entry["window"]["sent"] == len(calls)


def test_the_runs_window_keeps_the_first_start_and_sums_the_ramp_stalls() -> None:
    one: WindowSummary = {
        **_window(4.0, 2.0, 6, 10),
        "start": 8,
        "start_reason": "probe: a serial server",
        "ramp_stalls": 2,
        "max": 64,
        "final": 16,
        "overloads": 1,
        "decreases": 1,
    }
    two: WindowSummary = {
        **_window(1.0, 6.0, 3, 5),
        "start": 64,
        "start_reason": "default",
        "ramp_stalls": 3,
        "max": 128,
        "final": 32,
        "overloads": 4,
        "decreases": 2,
    }
    # by hand: start and its reason the first's, stalls 2 + 3, max the larger, final the last's,
    # mean (4*2 + 1*6) / (2 + 6) = 1.75
    assert merged_window([one, two]) == {
        "mode": "adaptive",
        "start": 8,
        "start_reason": "probe: a serial server",
        "max": 128,
        "final": 32,
        "peak_in_flight": 6,
        "mean_in_flight": 1.75,
        "sent": 15,
        "overloads": 5,
        "decreases": 3,
        "busy_seconds": 8.0,
        "ramp_stalls": 5,
    }
    # one invocation: its own window, every key kept
    assert merged_window([one]) == one
    # an older window without ramp_stalls: summed over those that record it
    old = {k: v for k, v in two.items() if k != "ramp_stalls"}
    merged = merged_window([one, cast(WindowSummary, old)])
    assert merged is not None and merged["ramp_stalls"] == 2
    # a key no rule names (a later gge's): the last value recorded
    later = cast(WindowSummary, {**two, "shrink_cause": "latency"})
    merged = merged_window([cast(WindowSummary, {**one, "shrink_cause": "overloads"}), later])
    assert merged is not None and cast(dict[str, Any], merged)["shrink_cause"] == "latency"


def _answers(n: str | None, reasks: int, tools: int, models: list[str], prints: list[str]) -> dict[str, Any]:
    return {
        "n": n,
        "n_reasks": reasks,
        "prefill": None,
        "tool_call_answers": tools,
        "model": models,
        "system_fingerprint": prints,
    }


def test_the_answers_counts_are_summed_and_their_words_merged_over_invocations(tmp_path: Path) -> None:
    first = {"backend": {"answers": _answers("ignored", 3, 1, ["m-a", "m-b"], ["fp1"])}}
    second = {
        "backend": {"answers": _answers("honoured", 2, 4, ["m-b", "m-c"], ["fp2", "fp1"])},
        "critic_backend": {"answers": {**_answers(None, 0, 5, ["critic"], []), "prefill": "continued"}},
    }
    (tmp_path / RUN_FILE).write_text(json.dumps({"fingerprint": {"x": 1}}), encoding="utf-8")
    ledger = InvocationLedger.start(tmp_path, restored=0, resume=True, now=lambda: "t0")
    ledger.end("interrupted", samples=1, counters=counters_of(first))
    ledger = InvocationLedger.start(tmp_path, restored=1, resume=True, now=lambda: "t1")
    done = ledger.end("finished", samples=1, counters=counters_of(second))
    model = with_summed(second, done)
    # by hand: reasks 3 + 2, tool calls 1 + 4; models and fingerprints distinct in first-seen order;
    # n "ignored" in the first invocation sticks although the last honoured it
    assert model["backend"]["answers"] == {
        "n": "ignored",
        "n_reasks": 5,
        "prefill": None,
        "tool_call_answers": 5,
        "model": ["m-a", "m-b", "m-c"],
        "system_fingerprint": ["fp1", "fp2"],
    }
    # the critic answered in the last invocation only: its own record
    assert model["critic_backend"]["answers"] == second["critic_backend"]["answers"]


def test_the_answers_models_merged_are_capped_as_one_invocation_caps_them() -> None:
    invs = [
        _inv(counters_of({"backend": {"answers": _answers(None, 0, 0, [f"m{i}"], [])}})) for i in range(6)
    ]
    model = with_summed({"backend": {"answers": _answers(None, 0, 0, ["m5"], [])}}, invs)
    assert model["backend"]["answers"]["model"] == ["m0", "m1", "m2", "m3"]  # SEEN_AT_MOST = 4
