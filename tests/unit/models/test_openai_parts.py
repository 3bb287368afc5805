"""Client processes' backend counts added up (gge.models.openai_parts), as the parent's backend reports them.

Every figure is computed by hand from the snapshots written here.
"""

from __future__ import annotations

from typing import Any

from gge.models.openai_api import OpenAIBackend
from gge.models.openai_parts import Snapshot, merged_answers, merged_usage, merged_window


def _window(**over: Any) -> dict[str, Any]:
    base = {
        "mode": "adaptive",
        "start": 32,
        "start_reason": "default",
        "max": 128,
        "final": 32,
        "peak_in_flight": 0,
        "mean_in_flight": 0.0,
        "sent": 0,
        "overloads": 0,
        "decreases": 0,
        "busy_seconds": 0.0,
        "ramp_stalls": 0,
    }
    return {**base, **over}


def _snapshot(
    requests: int, retries: int, outages: int, unreachable: float, window: dict[str, Any]
) -> Snapshot:
    return {
        "usage": {
            "prompt_tokens": 100 * requests,
            "completion_tokens": 5 * requests,
            "requests": requests,
            "retries": retries,
            "overloads": 1,
            "failed": 0,
            "outages": outages,
            "unreachable_s": unreachable,
        },
        "images": {
            "encoded": requests,
            "file_bytes": 2,
            "reused": 1,
            "encode_seconds": 0.25,
            "deflate": "zlib-ng",
        },
        "answers": {
            "n": "honoured",
            "n_reasks": 0,
            "prefill": None,
            "tool_call_answers": 0,
            "model": ["served"],
            "system_fingerprint": ["fp-b" if requests > 10 else "fp-a"],
        },
        "window": window,  # type: ignore[typeddict-item]
        "status": {
            "in_flight": requests // 10,
            "limit": window["final"],
            "requests": requests,
            "retries": retries,
            "overloads": 1,
            "failed": 0,
            "unreachable_since": 1000.0 + requests if outages else None,
            "server_wait_s": 600.0,
        },
        "logprobs": "available",
    }


def test_the_parent_reports_its_own_requests_and_every_process_as_one_run() -> None:
    backend = OpenAIBackend("http://127.0.0.1:9/v1", "served")  # never asked: its own counts are zero
    a = _window(final=40, peak_in_flight=30, mean_in_flight=20.0, sent=100, busy_seconds=10.0, overloads=1)
    b = _window(final=24, peak_in_flight=25, mean_in_flight=10.0, sent=60, busy_seconds=8.0, decreases=2)
    backend.absorb("proc0", _snapshot(7, 2, 1, 30.0, a))
    backend.absorb("proc1", _snapshot(12, 0, 1, 45.0, b))
    backend.absorb("proc0", _snapshot(10, 2, 1, 30.0, a))  # a later snapshot replaces the earlier one
    settings = backend.settings()
    usage = settings["usage"]
    assert (usage["requests"], usage["retries"], usage["overloads"]) == (22, 2, 2)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (2200, 110)
    assert (usage["outages"], usage["unreachable_s"]) == (1, 45.0)  # one restart both waited for
    images = settings["images"]
    assert (images["encoded"], images["file_bytes"], images["reused"], images["encode_seconds"]) == (
        22,
        4,
        2,
        0.5,
    )
    assert settings["answers"]["system_fingerprint"] == ["fp-a", "fp-b"]
    assert settings["logprobs"] == "available"
    status = backend.status()
    assert (status["in_flight"], status["limit"], status["requests"]) == (1 + 1, 64, 22)
    assert status["unreachable_since"] == 1010.0  # the earlier of 1010 and 1012
    window = backend.window_summary()
    # the parent's window sent nothing: busy 0 + the longer process's 10 s
    assert window["busy_seconds"] == 10.0 and window["processes"] == 2
    assert window["mean_in_flight"] == round((20.0 * 10 + 10.0 * 8) / 10.0, 3)
    assert (window["sent"], window["overloads"], window["decreases"], window["final"]) == (160, 1, 2, 64)
    assert window["peak_in_flight"] == 55 and window["max"] == 256  # the window the run was given


def test_usage_and_answers_rules() -> None:
    # the parent's probe met one outage before the processes started; both processes met the next one
    own = {"requests": 5, "outages": 1, "unreachable_s": 10.0}
    parts = [
        {"requests": 3, "outages": 1, "unreachable_s": 1.5},
        {"requests": 4, "outages": 1, "unreachable_s": 2.5},
    ]
    assert merged_usage(own, parts) == {"requests": 12, "outages": 2, "unreachable_s": 12.5}
    honoured = {"n": "honoured", "prefill": None, "model": [], "system_fingerprint": []}
    asked_none = {"n": None, "prefill": "continued", "model": [], "system_fingerprint": []}
    answers = merged_answers([asked_none, honoured])
    assert (answers["n"], answers["prefill"]) == ("honoured", "continued")
    assert merged_answers([asked_none])["n"] is None


def test_the_parents_probe_window_comes_first() -> None:
    own = _window(
        start=2, start_reason="probe", max=256, sent=5, mean_in_flight=4.0, busy_seconds=1.0, peak_in_flight=4
    )
    part = _window(sent=10, mean_in_flight=2.0, busy_seconds=3.0, peak_in_flight=3, final=1)
    merged = merged_window(own, [part])  # type: ignore[arg-type]
    assert (merged["start"], merged["start_reason"], merged["sent"]) == (2, "probe", 15)
    assert merged["busy_seconds"] == 4.0 and merged["mean_in_flight"] == (4.0 * 1 + 2.0 * 3) / 4.0
    assert merged["peak_in_flight"] == 4  # the parent's own peak was the larger
