"""``gge compare``'s "differ only by engine" requires the models to have seen the same inputs (issue 36).

Two run folders written here: replays of hand-written predictions files whose proposer cost records
carry known prompt token counts, their results.json then made to record an in-process transformers run
(A) and an endpoint run (B) of one checkpoint. The verdicts and their numbers are computed here from
the counts written (means, ratio, samples), never from compare's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gge.compare import compare_runs, load_run
from tests.helpers.replay_runs import load_samples, replay_run, write_lines

BENCH = "screenspot_v2"
N = 10
ENDPOINT = "http://127.0.0.1:8000/v1"


def _folder(
    demo: Path, root: Path, name: str, costs: list[list[dict[str, Any]]], image_tokens: dict[str, Any] | None
) -> Path:
    samples = load_samples(demo, BENCH)[:N]
    lines = []
    for s, cost in zip(samples, costs, strict=True):
        box = s.region.pixel_box()
        assert box is not None
        centre = [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]
        lines.append(
            {"benchmark": BENCH, "id": s.id, "candidates": [centre, centre], "raw": "", "cost": cost}
        )
    predictions = write_lines(root / f"{name}.jsonl", lines)
    out = root / name
    replay_run(demo, predictions, out, f"benchmarks=[{BENCH}]", f"max_samples={N}", "k=2", "report_misses=0")
    doc = json.loads((out / "results.json").read_text())
    if name.startswith("a"):
        doc["model"] = {"backend": {"backend": "transformers", "checkpoint": "/ckpts/q"}}
    else:
        doc["model"] = {"backend": {"backend": "openai", "base_url": ENDPOINT, "model": "q"}}
    doc["model"]["adapter"] = {"proposer": "sampling"}  # both sides' records: K answers, K candidates
    if image_tokens is not None:
        doc["benchmarks"][BENCH]["image_tokens"] = image_tokens
    (out / "results.json").write_text(json.dumps(doc))
    return out


def _in_process(tokens: list[float]) -> list[list[dict[str, Any]]]:
    """One prefill for both answers: the prompt counted twice, 2 candidates."""
    return [
        [{"stage": "propose", "input_tokens": int(2 * t), "output_tokens": 8, "candidates": 2}]
        for t in tokens
    ]


def _endpoint(tokens: list[float]) -> list[list[dict[str, Any]]]:
    """A greedy request and a sampled one: the prompt once each, one candidate each."""
    return [
        [
            {"stage": "propose", "input_tokens": int(t), "candidates": 1, "slot": 0},
            {"stage": "propose", "input_tokens": int(t), "candidates": 1, "slot": 1},
        ]
        for t in tokens
    ]


A_TOKENS = [7000 + 10 * i for i in range(N)]  # mean 7045


def _setup(demo: Path, root: Path, b_costs: list[list[dict[str, Any]]], **b: Any) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    a = _folder(demo, root, "a", _in_process([float(t) for t in A_TOKENS]), None)
    bb = _folder(demo, root, "b", b_costs, b.get("image_tokens"))
    return dict(compare_runs(load_run(a), load_run(bb), resamples=20)["setup"])


ENGINE = (
    f"the runs differ only by engine (A: transformers: /ckpts/q; B: openai endpoint {ENDPOINT} (model 'q'); "
    "differing: config.model.predictions): the answers that differ are engine drift (B: an endpoint run "
    "records the model name served, not the checkpoint behind it)"
)


def test_a_server_that_shrank_the_screenshots_is_not_engine_drift(demo_suite: Path, tmp_path: Path) -> None:
    b_tokens = [2000 + 10 * i for i in range(N)]  # mean 2045
    setup = _setup(demo_suite, tmp_path, _endpoint([float(t) for t in b_tokens]))
    ratio = (sum(b_tokens) / N) / (sum(A_TOKENS) / N)  # 2045 / 7045 = 0.290...
    assert setup["relation"] == "inputs"
    assert setup["statement"] == (
        "the runs' recorded setups differ only by engine, but the models saw different inputs: A 7,045 vs "
        f"B 2,045 prompt tokens per proposer request on 10 of 10 matched samples (B/A {ratio:.2f}): the "
        "engines prepared the screenshots differently, not engine drift"
    )
    inputs = setup["inputs"]
    assert (inputs["status"], inputs["matched"], inputs["checked"], inputs["differing"]) == (
        "differ",
        N,
        N,
        N,
    )
    assert inputs["a_tokens"] == pytest.approx(7045) and inputs["b_tokens"] == pytest.approx(2045)
    assert inputs["ratio"] == pytest.approx(ratio)


def test_tokens_within_one_percent_agree_and_one_sample_in_ten_off_does_not(
    demo_suite: Path, tmp_path: Path
) -> None:
    close = [t * 1.009 for t in A_TOKENS]  # 0.9% above A's: within 1% of the larger
    setup = _setup(demo_suite, tmp_path / "close", _endpoint(close))
    assert (setup["relation"], setup["statement"]) == ("engine", ENGINE)
    assert (setup["inputs"]["status"], setup["inputs"]["differing"]) == ("agree", 0)

    one_off = [float(t) for t in A_TOKENS]
    one_off[3] = A_TOKENS[3] * 0.5  # 7030 -> 3515: 9 of 10 agree, under 99%
    setup = _setup(demo_suite, tmp_path / "one", _endpoint(one_off))
    assert setup["relation"] == "inputs"
    assert (
        "A 7,030 vs B 3,515 prompt tokens per proposer request on 1 of 10 matched samples (B/A 0.50)"
        in (setup["statement"])
    )


def test_no_token_counts_cannot_be_checked_and_a_runs_own_image_token_check_is_named(
    demo_suite: Path, tmp_path: Path
) -> None:
    untimed = [[{"stage": "propose", "seconds": 0.5, "candidates": 2}] for _ in range(N)]
    check = {"source": "prompt", "factor": 28, "requests": 10, "differ": 7, "unchecked": 0, "ratio": 0.328}
    check.update(tolerance="x", example=None)
    setup = _setup(demo_suite, tmp_path, untimed, image_tokens=check)
    assert setup["relation"] == "engine"
    assert setup["statement"] == (
        f"{ENGINE}; whether the models saw the same inputs cannot be checked: B records no prompt token "
        f"counts for the matched samples' proposer requests; B's {BENCH}: 7 of 10 proposer answers cost "
        "other image tokens than its preset expects (observed/expected 0.33)"
    )
    assert (setup["inputs"]["status"], setup["inputs"]["checked"], setup["inputs"]["ratio"]) == (
        "unknown",
        0,
        None,
    )


P_TOKENS = [3000 + 7 * i for i in range(N)]  # one prompt's tokens per sample; mean 3031.5


def _endpoint_pair(
    demo: Path,
    root: Path,
    costs: tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]]],
    modes: tuple[str, str],
    probes: tuple[dict[str, Any] | None, dict[str, Any] | None],
) -> dict[str, Any]:
    """Two endpoint runs of one server (the same recorded setup but the proposer mode and the probe)."""
    root.mkdir(parents=True, exist_ok=True)
    folders = []
    for name, cost, mode, probe in zip(("a", "b"), costs, modes, probes, strict=True):
        out = _folder(demo, root, f"b{name}", cost, None)  # "b...": recorded as an endpoint run
        doc = json.loads((out / "results.json").read_text())
        doc["model"]["adapter"] = {"proposer": mode}
        doc["config"]["model"]["predictions"] = "the same file"
        if probe is not None:
            doc["model"]["backend"]["probe"] = probe
        (out / "results.json").write_text(json.dumps(doc))
        folders.append(out)
    return dict(compare_runs(load_run(folders[0]), load_run(folders[1]), resamples=20)["setup"])


def _single_pass(points: int) -> list[list[dict[str, Any]]]:
    """One answer listing ``points`` points: the prompt counted once, ``points`` candidates recorded."""
    return [[{"stage": "propose", "input_tokens": t, "candidates": points}] for t in P_TOKENS]


def test_single_pass_answers_listing_other_numbers_of_points_saw_the_same_prompt(
    demo_suite: Path, tmp_path: Path
) -> None:
    setup = _endpoint_pair(
        demo_suite, tmp_path, (_single_pass(3), _single_pass(5)), ("single_pass", "single_pass"), (None, None)
    )
    inputs = setup["inputs"]
    assert (setup["relation"], inputs["status"], inputs["checked"], inputs["differing"]) == (
        "same",
        "agree",
        N,
        0,
    )
    # every sample agrees, so the means are over all of them: the prompt itself, 3031.5
    assert inputs["a_tokens"] == pytest.approx(3031.5) and inputs["b_tokens"] == pytest.approx(3031.5)


def test_a_sampling_proposers_records_are_divided_by_the_answers_they_paid_for(
    demo_suite: Path, tmp_path: Path
) -> None:
    # an endpoint's greedy-first pair (the greedy answer, then 4 choices: the prompt counted 4 times)
    # against one in-process prefill for 5 sequences (the prompt counted 5 times)
    pair = [
        [
            {"stage": "propose", "input_tokens": t, "candidates": 1, "slot": 0},
            {"stage": "propose", "input_tokens": 4 * t, "candidates": 4, "slot": 1},
        ]
        for t in P_TOKENS
    ]
    prefill = [[{"stage": "propose", "input_tokens": 5 * t, "candidates": 5}] for t in P_TOKENS]
    setup = _endpoint_pair(
        demo_suite, tmp_path / "s", (pair, prefill), ("sampling", "sampling"), (None, None)
    )
    assert (setup["inputs"]["status"], setup["inputs"]["differing"]) == ("agree", 0)
    assert setup["inputs"]["a_tokens"] == pytest.approx(3031.5)
    assert setup["inputs"]["b_tokens"] == pytest.approx(3031.5)
    # the same single_pass records read as a sampling run's: 3 and 5 answers, P/3 against P/5
    setup = _endpoint_pair(
        demo_suite, tmp_path / "w", (_single_pass(3), _single_pass(5)), ("sampling", "sampling"), (None, None)
    )
    assert (setup["relation"], setup["inputs"]["differing"]) == ("inputs", N)
    assert setup["inputs"]["a_tokens"] == pytest.approx(3031.5 / 3)
    assert setup["inputs"]["b_tokens"] == pytest.approx(3031.5 / 5)
    assert setup["inputs"]["ratio"] == pytest.approx(0.6)


PROBE = {
    "endpoint": ENDPOINT,
    "engine": {"name": "vllm 0.11.0", "server": "uvicorn"},
    "served_models": ["q"],
    "answers": {"model": ["q"], "system_fingerprint": []},
    "usage": {"requests": 3},
    "warnings": [],
}


def test_a_probe_on_one_side_only_is_no_engine_difference(demo_suite: Path, tmp_path: Path) -> None:
    costs = (_single_pass(2), _single_pass(2))
    modes = ("single_pass", "single_pass")
    setup = _endpoint_pair(demo_suite, tmp_path / "one", costs, modes, (PROBE, None))
    assert (setup["relation"], setup["engine_differences"], setup["differences"]) == ("same", [], [])
    setup = _endpoint_pair(demo_suite, tmp_path / "other", costs, modes, (None, PROBE))
    assert (setup["relation"], setup["engine_differences"]) == ("same", [])
    # both probed: the models it listed, who answered it and its own requests are no difference ...
    seen = {**PROBE, "served_models": ["q", "r"], "answers": {"model": ["q-2"]}, "usage": {"requests": 5}}
    setup = _endpoint_pair(demo_suite, tmp_path / "both", costs, modes, (PROBE, seen))
    assert (setup["relation"], setup["engine_differences"]) == ("same", [])
    # ... but the engine it found is
    sglang = {**PROBE, "engine": {"name": "sglang 0.5.2", "server": "uvicorn"}}
    setup = _endpoint_pair(demo_suite, tmp_path / "engine", costs, modes, (PROBE, sglang))
    assert setup["relation"] == "engine"
    assert setup["engine_differences"] == [
        {"key": "model.backend.probe.engine.name", "a": "vllm 0.11.0", "b": "sglang 0.5.2"}
    ]
