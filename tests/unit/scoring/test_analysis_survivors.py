"""Rules of gge.scoring.analysis that a one-statement change broke without a failing test (issue 19, item 10).

Each test compares with a direct computation on hand-built results: pass@k by enumerating subsets,
distances by Pythagoras on a box, risk-coverage by sorting the confidences by hand.
"""

from __future__ import annotations

import itertools
import math

import pytest

from gge.scoring.analysis import analyse, infer_score_kind, miss_distances, risk_coverage
from gge.scoring.scoring import SampleResult, score_sample
from gge.types import Box, Candidate, Prediction, Region, Sample

BOX = Box(100, 100, 200, 150)  # 100 x 50 px, inside a 1000 x 500 screenshot: area 1% of the screen
SIZE = (1000, 500)
HIT, MISS = (150.0, 120.0), (500.0, 400.0)


def _result(
    points: list[tuple[float, float] | None],
    scores: list[float | None] | None = None,
    *,
    region: Region = BOX,
    sid: str = "0",
    k: int = 5,
    image_error: str | None = None,
    critic_format_error: bool = False,
) -> SampleResult:
    scores = scores or [None] * len(points)
    sample = Sample("b", sid, f"/img/{sid}.png", SIZE, "click", region, {})
    cands = tuple(Candidate(p, s) for p, s in zip(points, scores, strict=True))
    pred = Prediction("b", sid, cands, image_error=image_error, critic_format_error=critic_format_error)
    return score_sample(sample, pred, k=k)


def _brute_pass(answers: list[bool], k: int) -> float:
    subsets = list(itertools.combinations(range(len(answers)), k))
    return sum(any(answers[i] for i in sub) for sub in subsets) / len(subsets)


def _analyse(results: list[SampleResult], strategy: str, **kw: object) -> dict[str, object]:
    return analyse(results, tables=(), k=5, strategy=strategy, selection={}, **kw)  # type: ignore[arg-type]


def test_pass_at_k_survives_an_unreadable_screenshot() -> None:
    # a greedy answer then 4 sampled ones; the third screenshot could not be read (no answers at all)
    a = _result([HIT, HIT, MISS, MISS, MISS], sid="a")
    b = _result([MISS, MISS, HIT, HIT, MISS], sid="b")
    broken = _result([], sid="c", image_error="/img/c.png: cannot identify image file")
    pk = _analyse([a, b, broken], "first", exchangeable_from=1)["pass_at_k"]
    assert isinstance(pk, dict)
    assert pk["n"] == 4 and pk["first_slot"] == 1  # drawn 4 after the greedy one, whatever one sample lacks
    draws = [[True, False, False, False], [False, True, True, False], [False] * 4]
    for j in range(1, 5):
        want = 100 * sum(_brute_pass(d, j) for d in draws) / 3
        assert pk[f"pass@{j}"] == pytest.approx(want), j
    assert pk["pass@1"] == pytest.approx(100 * (1 / 4 + 2 / 4 + 0) / 3)


def test_size_buckets_follow_the_selected_strategy() -> None:
    # "first" picks the hit (slot 0); the critic picks the higher-scored miss
    rs = [_result([HIT, MISS], [0.1, 0.9], sid=str(i)) for i in range(3)]
    rs.append(_result([MISS, HIT], [0.1, 0.9], sid="3"))  # first misses, the critic hits
    assert [r.top1["first"] for r in rs] == [True, True, True, False]
    assert [r.top1["critic"] for r in rs] == [False, False, False, True]
    for strategy, want in (("first", 75.0), ("critic", 25.0)):
        buckets = _analyse(rs, strategy)["size_buckets"]["buckets"]  # type: ignore[index]
        (full,) = [b for b in buckets if b["samples"]]
        assert full["label"] == "1–3%" and full["samples"] == 4  # 100 * 50 / (1000 * 500) = 1%
        assert full["top1"] == pytest.approx(want), strategy
        assert full["oracle@5"] == pytest.approx(100.0)


def test_miss_distance_follows_the_selected_strategy() -> None:
    # the critic's pick hits; "first" lands 300 px right of the box's right edge, level with it
    r = _result([(500.0, 125.0), HIT], [0.1, 0.9])
    assert r.top1["critic"] and not r.top1["first"]
    first = _analyse([r], "first")["miss_distance"]
    assert first["misses"] == 1  # type: ignore[index]
    assert first["target_sizes"]["median"] == pytest.approx(300 / math.hypot(100, 50))  # type: ignore[index]
    assert first["screen"]["median"] == pytest.approx(300 / math.hypot(1000, 500))  # type: ignore[index]
    critic = _analyse([r], "critic")["miss_distance"]
    assert critic == {"misses": 0, "target_sizes": None, "screen": None}


def test_misses_counts_misses_only() -> None:
    rs = [
        _result([HIT], sid="hit1"),
        _result([HIT], sid="hit2"),
        _result([(100.0, 250.0)], sid="below"),  # 100 px under the box's bottom edge
        _result([None], sid="noanswer"),  # a pick without a point: no distance
    ]
    d = miss_distances(rs, "first")
    assert d["misses"] == 1
    assert d["screen"] == pytest.approx({q: 100 / math.hypot(1000, 500) for q in ("q1", "median", "q3")})


def test_risk_coverage_leaves_out_critic_format_errors() -> None:
    rs = [
        _result([HIT, MISS], [0.9, 0.1], sid="a"),  # critic picks the hit at 0.9
        _result([MISS, HIT], [0.7, 0.2], sid="b"),  # picks the miss at 0.7
        # the critic's answer could not be read: its highest "score" (0.95) is no judgement
        _result([MISS, HIT], [0.95, 0.1], sid="c", critic_format_error=True),
    ]
    curve, aurc, left_out = risk_coverage(rs)
    assert left_out == 1
    assert [(p["threshold"], p["kept"], p["top1"]) for p in curve] == [(0.9, 1, 100.0), (0.7, 2, 50.0)]
    assert [p["coverage"] for p in curve] == [50.0, 100.0]
    assert aurc == pytest.approx((0.0 + 50.0) / 2)


def test_a_probability_of_exactly_zero_is_a_probability() -> None:
    rs = [_result([HIT, MISS], [0.0, 0.6], sid="a"), _result([MISS, HIT], [0.3, 0.0], sid="b")]
    assert infer_score_kind(rs) == "probability"
    cal = _analyse(rs, "critic")["calibration"]
    assert cal["score_kind"] == "probability"  # type: ignore[index]
    # Brier over the four candidates: (0 - 1)^2, (0.6 - 0)^2, (0.3 - 0)^2, (0 - 1)^2
    assert cal["brier"] == pytest.approx((1 + 0.36 + 0.09 + 1) / 4)  # type: ignore[index]
