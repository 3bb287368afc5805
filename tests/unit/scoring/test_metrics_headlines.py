"""Issue 19 S1/S3: an entry's unqualified top1 / oracle@K are the official headline, micro moves to
``micro``; the scalars follow; a one-answer run (K = 1) is Top-1 only.

Expected numbers are worked out by hand from hand-built results (hits over samples, the mean of the
per-group means), never read back from the code.
"""

from __future__ import annotations

import pytest

# the hand-built benchmarks and results that report.md's tests use too
from headline_results import BOX, HIT, MACRO, MISS, Macro, Micro, _result

from gge.scoring.grouping import wilson_interval
from gge.scoring.metrics import benchmark_metrics, mean_over_benchmarks, scalar_metrics
from gge.scoring.scoring import score_sample
from gge.types import Candidate, Prediction, Sample


def test_unqualified_names_are_the_official_headline_and_micro_moves() -> None:
    e = benchmark_metrics(Macro(), MACRO, k=2, strategy="critic")
    # per group: x top1 1/1, oracle@1 1/1, oracle@2 1/1; y top1 1/3, oracle@1 1/3, oracle@2 2/3
    assert e["top1"] == pytest.approx(100 * (1 + 1 / 3) / 2)
    assert e["oracle@1"] == pytest.approx(100 * (1 + 1 / 3) / 2)
    assert e["oracle@2"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert (e["official"]["top1"], e["official"]["oracle@2"]) == pytest.approx((e["top1"], e["oracle@2"]))
    # micro: hits over the 4 samples (top1: x0, y0; oracle@1: x0, y1; oracle@2: x0, y0, y1)
    assert e["micro"] == pytest.approx({"top1": 50.0, "oracle@1": 50.0, "oracle@2": 75.0})
    # the intervals are the micro mean's
    assert e["intervals"]["top1"] == pytest.approx(wilson_interval(2, 4))
    assert e["intervals"]["oracle@2"] == pytest.approx(wilson_interval(3, 4))
    assert e["critic_gap"] == pytest.approx(100 * (1 + 2 / 3) / 2 - 100 * (1 + 1 / 3) / 2)
    assert e["top1_given_oracle"] == pytest.approx(100 * 2 / 3)  # x0, y0 of x0, y0, y1


def test_a_micro_benchmark_has_the_same_headline_and_micro() -> None:
    e = benchmark_metrics(Micro(), MACRO, k=2, strategy="critic")
    assert (e["top1"], e["oracle@1"], e["oracle@2"]) == pytest.approx((50.0, 50.0, 75.0))
    assert e["micro"] == pytest.approx({"top1": 50.0, "oracle@1": 50.0, "oracle@2": 75.0})


def test_scalars_name_the_headline_and_micro() -> None:
    entries = {
        "macro": benchmark_metrics(Macro(), MACRO, k=2, strategy="critic"),
        "micro": benchmark_metrics(Micro(), MACRO[:2], k=2, strategy="critic"),
    }
    v = scalar_metrics(entries, 2)
    macro_top1, macro_oracle = 100 * (1 + 1 / 3) / 2, 100 * (1 + 2 / 3) / 2
    want = {
        "grounding/macro/top1": macro_top1,
        "grounding/macro/oracle@2": macro_oracle,
        "grounding/macro/official/top1": macro_top1,
        "grounding/macro/official/oracle@2": macro_oracle,
        "grounding/macro/micro/top1": 50.0,
        "grounding/macro/micro/oracle@2": 75.0,
        "grounding/micro/top1": 100.0,  # x0 and y0 both hit with the critic
        "grounding/micro/micro/top1": 100.0,
        "grounding/micro/oracle@2": 100.0,
        # the mean of the official headlines
        "grounding/mean/top1": (macro_top1 + 100.0) / 2,
        "grounding/mean/oracle@2": (macro_oracle + 100.0) / 2,
    }
    for key, value in want.items():
        assert v[key] == pytest.approx(value), key
    mean = mean_over_benchmarks(entries, 2)
    assert mean["top1"] == pytest.approx((macro_top1 + 100.0) / 2)


ONE = [
    _result("x0", "x", [HIT], [0.9], k=1),
    _result("y0", "y", [MISS], [0.2], k=1),
    _result("y1", "y", [HIT], [0.3], k=1),
]


def test_a_one_answer_run_is_top1_only_in_the_entry_and_the_scalars() -> None:
    e = benchmark_metrics(Micro(), ONE, k=1, strategy="critic", exchangeable_from=1)
    assert e["top1"] == pytest.approx(200 / 3)
    assert e["critic_gap"] is None and e["top1_given_oracle"] is None
    assert e["critic_gain"] is None and e["pass_at_k"] is None
    assert e["decomposition"]["overall"]["counts"] == {
        "hit": 2,
        "critic_miss": 0,
        "proposer_miss": 1,
        "abstained": 0,
        "format_error": 0,
        "image_error": 0,
    }
    v = scalar_metrics({"micro": e}, 1)
    # no oracle@1 (it is Top-1), no critic_miss (no other answer could hit), no critic gain
    assert set(v) == {
        "grounding/micro/top1",
        "grounding/micro/micro/top1",
        "grounding/micro/official/top1",
        "grounding/micro/format_errors",
        "grounding/micro/image_errors",
        "grounding/micro/hit",
        "grounding/micro/proposer_miss",
        "grounding/micro/abstained",
        "grounding/micro/format_error",
        "grounding/micro/image_error",
        "grounding/micro/calibration/auroc",
        "grounding/micro/calibration/ece",
        "grounding/micro/calibration/brier",
        "grounding/micro/calibration/aurc",
        "grounding/mean/top1",
    }
    assert v["grounding/micro/top1"] == pytest.approx(200 / 3)
    assert v["grounding/micro/hit"] == pytest.approx(200 / 3)
    assert v["grounding/micro/proposer_miss"] == pytest.approx(100 / 3)
    assert v["grounding/mean/top1"] == pytest.approx(200 / 3)


def test_a_sample_not_in_the_file_is_a_miss_over_every_sample_and_apart_from_format_errors() -> None:
    absent = score_sample(
        Sample("b", "x9", "/img/x9.png", (100, 100), "click", BOX, {"group": "x", "kind": "text"}),
        Prediction("b", "x9", not_in_file=True),
        k=2,
    )
    assert not absent.format_error and absent.not_in_file
    e = benchmark_metrics(Macro(), [*MACRO, absent], k=2, strategy="critic")
    # the headline over every sample: x 1/2 (x9 a miss), y 1/3; the same rule over the lines: x 1/1, y 1/3
    assert e["top1"] == pytest.approx(100 * (1 / 2 + 1 / 3) / 2)
    assert e["not_in_file"] == {
        "samples": 1,
        "ids": ["x9"],
        "lines": 4,
        "top1": pytest.approx(100 * (1 + 1 / 3) / 2),
    }
    assert e["format_errors"] == 0 and e["micro"]["top1"] == pytest.approx(100 * 2 / 5)
    overall = e["decomposition"]["overall"]
    assert overall["counts"]["not_in_file"] == 1 and overall["not_in_file"] == pytest.approx(20.0)
    assert "not_in_file" not in benchmark_metrics(Macro(), MACRO, k=2, strategy="critic")


def test_selection_refined_takes_a_sample_not_in_the_file_as_the_miss_it_is() -> None:
    from gge.errors import GgeError
    from gge.scoring.metrics import check_refined

    sample = Sample("b", "x9", "/img/x9.png", (100, 100), "click", BOX, {"group": "x", "kind": "text"})
    absent = score_sample(sample, Prediction("b", "x9", not_in_file=True), k=2)
    check_refined("b", [absent])  # no refine answer, but no line either: not a run without the stage
    unrefined = score_sample(sample, Prediction("b", "x9", (Candidate(HIT),)), k=2)
    with pytest.raises(GgeError, match=r"b: selection=refined, but 1 of 2 samples have no refine answer"):
        check_refined("b", [absent, unrefined])
