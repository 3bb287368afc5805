"""The cost ledger's aggregation (gge.scoring.cost), its codec in predictions.jsonl, and the refine pick.

Expected values are computed here by hand or with plain Python (sorted-list percentiles written out),
never with the code under test.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from gge.benchmarks import get_benchmark
from gge.documents.records import decode, encode
from gge.errors import GgeError
from gge.scoring.cost import cost_summary, refine_summary, sample_totals
from gge.scoring.metrics import benchmark_metrics, scalar_metrics
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, CostRecord, Prediction, Refinement, Sample, SampleResult


def _linear_percentile(values: list[float], q: float) -> float:
    """The percentile with linear interpolation between closest ranks (numpy's default), by hand."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


TARGET = Box(40, 40, 60, 60)


def _sample(i: int, box: Box = TARGET) -> Sample:
    return Sample("screenspot_v2", str(i), f"/img/{i}.png", (100, 100), "click", box)


def _result(i: int, costs: tuple[CostRecord, ...], refine: Refinement | None = None) -> SampleResult:
    cands = (Candidate((10.0, 10.0), 0.9), Candidate((50.0, 50.0), 0.1))
    return score_sample(
        _sample(i), Prediction("screenspot_v2", str(i), cands, costs=costs, refine=refine), k=2
    )


LEDGER = [
    # sample 0: a proposer call, two pointwise judgements
    (
        CostRecord("propose", input_tokens=100, image_tokens=80, output_tokens=10, seconds=1.0, candidates=2),
        CostRecord("judge", input_tokens=90, image_tokens=80, output_tokens=0, seconds=0.25, candidates=1),
        CostRecord(
            "judge", input_tokens=90, image_tokens=80, output_tokens=0, seconds=0.25, slot=1, candidates=1
        ),
    ),
    # sample 1: a proposer call only (its candidates needed no critic)
    (CostRecord("propose", input_tokens=200, image_tokens=160, output_tokens=20, seconds=3.0, candidates=2),),
    # sample 2: a proposer call with a cached prefix, one judgement
    (
        CostRecord(
            "propose",
            input_tokens=50,
            image_tokens=40,
            output_tokens=5,
            cached_tokens=30,
            seconds=0.5,
            candidates=2,
        ),
        CostRecord("judge", input_tokens=45, image_tokens=40, output_tokens=0, seconds=0.5, candidates=1),
    ),
]


def test_sample_totals_sum_each_stage_and_the_whole() -> None:
    per = sample_totals(LEDGER[0])
    assert per["propose"].calls == 1 and per["judge"].calls == 2 and per["total"].calls == 3
    assert per["judge"].tokens["input"] == 180 and per["judge"].tokens["text"] == 20
    assert per["total"].tokens["total"] == 100 + 10 + 90 + 90
    assert per["total"].seconds == pytest.approx(1.5)
    # a count one request does not report makes the sum unknown, not smaller
    assert per["propose"].tokens["cached"] is None


def test_cost_summary_per_stage_against_hand_computation() -> None:
    results = [_result(i, c) for i, c in enumerate(LEDGER)] + [_result(3, ())]
    summary = cost_summary(results)
    assert summary is not None
    assert summary["samples"] == 3 and summary["unrecorded"] == 1 and summary["source"] == "measured"
    assert list(summary["stages"]) == ["propose", "judge"]
    judge = summary["stages"]["judge"]
    # a stage a sample did not run counts 0 for it: judge calls are 2, 0, 1
    assert judge["calls_per_sample"] == pytest.approx(1.0)
    judge_tokens = [180.0, 0.0, 45.0]
    tokens = judge["tokens"]["total"]
    assert tokens is not None
    assert tokens["mean"] == pytest.approx(sum(judge_tokens) / 3)
    assert tokens["p50"] == pytest.approx(_linear_percentile(judge_tokens, 50))
    assert tokens["p90"] == pytest.approx(_linear_percentile(judge_tokens, 90))
    seconds = [1.5, 3.0, 1.0]
    total = summary["total"]
    assert total["seconds"] is not None
    # mean 5.5 / 3 = 1.833..., median 1.5: a mean taken for the median (or back) shows
    assert total["seconds"]["mean"] == pytest.approx(5.5 / 3)
    assert total["seconds"]["p50"] == pytest.approx(1.5)
    assert total["calls_per_sample"] == pytest.approx((3 + 1 + 2) / 3)
    for q in (50, 90, 99):
        assert total["seconds"][f"p{q}"] == pytest.approx(_linear_percentile(seconds, q))  # type: ignore[literal-required]
    # shares of the whole: judge tokens 225 of 580 computed, seconds 1.0 of 5.5
    whole_tokens = 110 + 180 + 220 + (50 - 30 + 5) + 45  # sample 2 computed 20 of its 50 prompt tokens
    assert judge["share"]["tokens"] == pytest.approx(100 * 225 / whole_tokens)
    assert judge["share"]["seconds"] == pytest.approx(100 * 1.0 / 5.5)
    assert total["share"]["tokens"] == pytest.approx(100.0)
    # cached tokens: only sample 2's propose request says, so the stage's figure is unknown
    assert summary["stages"]["propose"]["tokens"]["cached"] is None
    assert summary["stages"]["propose"]["tokens"]["image"] is not None


def test_no_records_no_summary() -> None:
    assert cost_summary([_result(0, ())]) is None


def test_refined_pick_and_refine_summary() -> None:
    # critic pick (10, 10) misses; refined (50, 50) hits -> fixed
    fixed = _result(0, (), Refinement(triggered=True, point=(50.0, 50.0), window=(25, 25, 75, 75)))
    # refined point misses where... the critic's pick missed too: no change
    unchanged = _result(1, (), Refinement(triggered=True, point=(90.0, 90.0)))
    # not triggered: the base pick stands
    skipped = _result(2, (), Refinement(triggered=False))
    # the critic's pick hits and the refined point hits too: kept, neither fixed nor broken
    kept = score_sample(
        _sample(4),
        Prediction(
            "screenspot_v2",
            "4",
            (Candidate((45.0, 45.0), 0.9),),
            refine=Refinement(triggered=True, point=(55.0, 55.0)),
        ),
        k=1,
    )
    # triggered, its answer unreadable: a format error, the base pick (a miss) stands
    unreadable = _result(5, (), Refinement(triggered=True, raw="(50,", format_error=True))
    assert fixed.picks["refined"] is not None and fixed.picks["refined"].point == (50.0, 50.0)
    assert fixed.top1["refined"] and not fixed.top1["critic"]
    assert skipped.picks["refined"] == skipped.picks["critic"]
    broken_sample = score_sample(
        _sample(3, Box(0, 0, 20, 20)),
        Prediction(
            "screenspot_v2",
            "3",
            (Candidate((10.0, 10.0), 0.9),),
            refine=Refinement(triggered=True, point=(50.0, 50.0), raw="(50, 50)"),
        ),
        k=1,
    )
    summary = refine_summary([fixed, unchanged, skipped, broken_sample, kept, unreadable])
    assert summary is not None
    assert summary["base"] == "critic" and summary["samples"] == 6 and summary["triggered"] == 5
    assert summary["trigger_rate"] == pytest.approx(100 * 5 / 6)
    assert summary["before"] == pytest.approx(100 * 2 / 6)  # the critic picks of samples 3 and 4 hit
    assert summary["after"] == pytest.approx(100 * 2 / 6)  # the refined picks of samples 0 and 4 hit
    assert (summary["fixed"], summary["broken"]) == (1, 1)  # sample 0 fixed, 3 broken, 4 kept
    assert summary["format_errors"] == 1  # sample 5 only: neither the untriggered 2 nor a point
    assert refine_summary([_result(0, ())]) is None


def test_refine_cost_share() -> None:
    costs = (
        CostRecord("propose", input_tokens=100, output_tokens=0, seconds=3.0),
        CostRecord("refine", input_tokens=50, output_tokens=0, seconds=1.0),
    )
    summary = refine_summary([_result(0, costs, Refinement(triggered=True, point=(50.0, 50.0)))])
    assert summary is not None
    assert summary["cost_share"] == {"tokens": pytest.approx(100 * 50 / 150), "seconds": pytest.approx(25.0)}


def test_codec_round_trip_keeps_the_ledger_and_the_refinement() -> None:
    refine = Refinement(triggered=True, point=(50.0, 50.0), window=(25.0, 25.0, 75.0, 75.0), raw="(1, 2)")
    r = _result(0, LEDGER[2], refine)
    line = json.loads(json.dumps(encode(r)))
    assert line["picks"]["refined"] == [50.0, 50.0]
    assert line["cost"][0] == {
        "stage": "propose",
        "input_tokens": 50,
        "image_tokens": 40,
        "output_tokens": 5,
        "cached_tokens": 30,
        "seconds": 0.5,
        "batch_size": 1,
        "slot": 0,
        "candidates": 2,
    }
    back = decode(line, "p.jsonl:1")
    assert back.costs == LEDGER[2] and back.refine == refine
    # replay re-scores with them: the refined pick comes back from the answer, not from the outcome field
    again = score_sample(_sample(0), back.prediction(), k=2)
    assert again.picks["refined"] is not None and again.picks["refined"].point == (50.0, 50.0)
    assert again.costs == LEDGER[2]


@pytest.mark.parametrize(
    ("cost", "message"),
    [
        ({"stage": "decode"}, "p.jsonl:3: cost[0]: 'stage' must be one of propose, rank, judge, refine"),
        ({"stage": "propose", "input_tokens": -1}, "cost[0]: 'input_tokens' must be a whole number >= 0"),
        ({"stage": "propose", "output_tokens": 1.5}, "cost[0]: 'output_tokens' must be a whole number"),
        ({"stage": "propose", "seconds": "1"}, "cost[0]: 'seconds' must be a number of seconds >= 0"),
        ("propose", "cost[0] must be an object"),
        (
            {"stage": "propose", "input_tokens": 5, "cached_tokens": 9},
            "p.jsonl:3: cost[0]: cached_tokens (9) cannot exceed input_tokens (5)",
        ),
    ],
)
def test_codec_refuses_a_bad_ledger_naming_the_line(cost: object, message: str) -> None:
    with pytest.raises(GgeError, match=re.escape(message)):
        decode({"benchmark": "b", "id": "1", "candidates": [], "cost": [cost]}, "p.jsonl:3")


def test_codec_refuses_a_bad_refinement() -> None:
    with pytest.raises(GgeError, match=re.escape("p.jsonl:2: refine 'window' must be")):
        decode({"benchmark": "b", "id": "1", "candidates": [], "refine": {"window": [1, 2]}}, "p.jsonl:2")


def test_entry_and_scalars_carry_cost_and_refine() -> None:
    bench = get_benchmark("screenspot_v2")
    results = [_result(0, LEDGER[0], Refinement(triggered=True, point=(50.0, 50.0)))]
    entry = benchmark_metrics(bench, results, k=2, strategy="critic")
    assert entry["cost"] is not None and entry["cost"]["stages"]["judge"]["calls_per_sample"] == 2.0
    assert entry["selection"]["refined"] == 100.0 and entry["selection"]["critic"] == 0.0
    scalars = scalar_metrics({"screenspot_v2": entry}, 2)
    assert scalars["grounding/screenspot_v2/cost/calls_per_sample"] == 3.0
    assert scalars["grounding/screenspot_v2/cost/judge/tokens_per_sample"] == 180.0
    assert scalars["grounding/screenspot_v2/cost/seconds_per_sample"] == pytest.approx(1.5)
    assert scalars["grounding/screenspot_v2/refine/fixed"] == 1.0
    # selection=refined reports the refined pick as Top-1
    assert benchmark_metrics(bench, results, k=2, strategy="refined")["micro"]["top1"] == 100.0
    replayed = benchmark_metrics(bench, results, k=2, strategy="critic", cost_source="replayed")
    assert replayed["cost"] is not None and replayed["cost"]["source"] == "replayed"


def test_a_run_without_refine_has_no_refined_strategy(tmp_path: Path) -> None:
    entry = benchmark_metrics(get_benchmark("screenspot_v2"), [_result(0, ())], k=2, strategy="critic")
    assert "refined" not in entry["selection"] and "refine" not in entry and entry["cost"] is None


def test_a_run_with_another_cluster_radius_votes_with_it_on_fewer_candidates(tmp_path: Path) -> None:
    """eval.py hands its cluster_radius to the budget curves: no note that the votes below K used another."""
    from io import StringIO

    from gge.run.settings import parse_args
    from gge.run.standalone import run

    args = ["benchmarks=[screenspot_v2]", "max_samples=8", "cluster_radius=0.2", f"output_dir={tmp_path}"]
    doc = run(parse_args(args), out=StringIO())
    budget = doc["benchmarks"]["screenspot_v2"]["budget"]
    assert not any("cluster_radius" in note for note in budget["notes"])
    assert (
        budget["points"][-1]["top1"]["cluster"] == doc["benchmarks"]["screenspot_v2"]["selection"]["cluster"]
    )


def test_a_refine_answer_scored_on_fewer_candidates_than_it_chose_among_is_refused() -> None:
    cands = (Candidate((10.0, 10.0), 0.1), Candidate((50.0, 50.0), 0.9))
    p = Prediction("screenspot_v2", "0", cands, refine=Refinement(triggered=True, point=(50.0, 50.0)))
    with pytest.raises(
        GgeError, match=r"screenspot_v2 0: the refine stage refined a pick among 2 candidates"
    ):
        score_sample(_sample(0), p, k=1)
