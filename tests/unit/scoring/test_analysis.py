"""gge.scoring.analysis against independent computations on hand-built cases.

pass@k against brute-force enumeration of subsets (also when a screenshot could not be read); AUROC
against counting ordered pairs; ECE, Brier and the reliability table against direct formulas (a score of
exactly 0 is a probability); the outcome split against its definition (and its identity with Oracle@K);
size buckets and miss distances on boxes, polygons and absent targets, for the selected strategy;
risk-coverage by hand, without the critic's unreadable answers; and the sections end to end in
results.json, report.md and a replayed ``sampling`` run.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gge.benchmarks.base import TableSpec
from gge.scoring.analysis import (
    OUTCOMES,
    SIZE_EDGES,
    analyse,
    analysis_options,
    bucket_labels,
    critic_gain,
    decompose,
    miss_distance,
    miss_distances,
    outcome,
    pass_at_k,
    pass_at_k_table,
    region_area,
    size_bucket,
    size_buckets,
    target_area_fraction,
)
from gge.scoring.calibration import (
    auroc,
    brier_score,
    calibration,
    candidate_scores,
    expected_calibration_error,
    infer_score_kind,
    reliability,
    risk_coverage,
)
from gge.scoring.scoring import score_sample
from gge.types import Absent, Box, Candidate, Polygon, Prediction, Region, Sample, SampleResult


def _result(
    region: Region,
    points: list[tuple[float, float] | None],
    scores: list[float | None] | None = None,
    *,
    size: tuple[int, int] = (1000, 500),
    sid: str = "0",
    labels: dict[str, str] | None = None,
    k: int = 5,
    format_error: bool = False,
    image_error: str | None = None,
) -> SampleResult:
    scores = scores or [None] * len(points)
    sample = Sample("b", sid, f"/img/{sid}.png", size, "click", region, labels or {})
    cands = tuple(Candidate(p, s) for p, s in zip(points, scores, strict=True))
    return score_sample(
        sample, Prediction("b", sid, cands, format_error=format_error, image_error=image_error), k=k
    )


BOX = Box(100, 100, 200, 150)


# -- pass@k ---------------------------------------------------------------------------------------
def _brute_pass(n: int, c: int, k: int) -> float:
    answers = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(answers[i] for i in sub) for sub in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_brute_force_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(_brute_pass(n, c, k), abs=1e-12)


def test_pass_at_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="n=3, c=4"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 0)


def test_pass_at_k_table_uses_the_exchangeable_slots_only() -> None:
    # slot 0 (greedy) hits; the 4 sampled slots hold one hit -> pass@1 over the samples is 1/4
    r = _result(BOX, [(150, 120), (0, 0), (150, 125), (0, 0), (0, 0)])
    table = pass_at_k_table([r], n=4, first_slot=1)
    assert table is not None
    assert table["pass@1"] == pytest.approx(25.0)
    assert table["pass@4"] == pytest.approx(100.0)
    assert table["pass@2"] == pytest.approx(100 * _brute_pass(4, 1, 2))
    # a missing slot (fewer answers than drawn) is a miss, not a smaller n
    short = _result(BOX, [(0, 0), (150, 120)])
    assert pass_at_k_table([short], n=4, first_slot=1)["pass@1"] == pytest.approx(25.0)  # type: ignore[index]
    assert pass_at_k_table([], n=4) is None and pass_at_k_table([r], n=0) is None


# -- AUROC, ECE, Brier ------------------------------------------------------------------------------
def _pairwise_auroc(pairs: list[tuple[float, bool]]) -> float:
    pos = [s for s, h in pairs if h]
    neg = [s for s, h in pairs if not h]
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0]), st.booleans()),
        min_size=2,
        max_size=40,
    )
)
def test_auroc_equals_counting_ordered_pairs(pairs: list[tuple[float, bool]]) -> None:
    got = auroc(pairs)
    if all(h for _, h in pairs) or not any(h for _, h in pairs):
        assert got is None
    else:
        assert got == pytest.approx(_pairwise_auroc(pairs))


def test_ece_brier_reliability_against_direct_formulas() -> None:
    rng = random.Random(3)
    pairs = [(rng.random(), rng.random() < 0.4) for _ in range(300)] + [(1.0, True), (0.0, False)]
    # direct ECE: ten bins [b/10, (b+1)/10), the last closed
    bins: dict[int, list[tuple[float, bool]]] = {}
    for p, h in pairs:
        bins.setdefault(min(int(p * 10), 9), []).append((p, h))
    direct = sum(
        len(g) * abs(sum(h for _, h in g) / len(g) - sum(p for p, _ in g) / len(g)) for g in bins.values()
    ) / len(pairs)
    assert expected_calibration_error(pairs) == pytest.approx(direct)
    assert brier_score(pairs) == pytest.approx(sum((p - h) ** 2 for p, h in pairs) / len(pairs))
    table = reliability(pairs)
    assert [row["count"] for row in table] == [len(bins.get(b, [])) for b in range(10)]
    assert table[9]["high"] == 1.0 and table[0]["low"] == 0.0
    # a perfectly calibrated toy: confidence equals accuracy in each bin
    perfect = [(0.25, True)] + [(0.25, False)] * 3 + [(0.75, True)] * 3 + [(0.75, False)]
    assert expected_calibration_error(perfect) == pytest.approx(0.0)
    assert expected_calibration_error([]) is None and brier_score([]) is None


def test_listwise_ranks_become_fractions_of_the_ranked_count() -> None:
    # listwise scores are m - position: 3, 2, 1 for three ranked candidates
    r = _result(BOX, [(0, 0), (150, 120), (5, 5)], [2.0, 3.0, 1.0])
    assert candidate_scores(r, "rank") == [(2 / 3, False), (1.0, True), (1 / 3, False)]
    cal = calibration([r])
    assert cal is not None and cal["score_kind"] == "rank" and cal["auroc"] == 1.0
    assert cal["ece"] is None and cal["brier"] is None and cal["risk_coverage"] is None


def test_calibration_of_probabilities_and_without_scores() -> None:
    rs = [
        _result(BOX, [(150, 120), (0, 0)], [0.9, 0.2], sid="a"),
        _result(BOX, [(0, 0), (150, 120)], [0.6, 0.3], sid="b"),
        _result(BOX, [(0, 0)], sid="c"),  # one candidate: the critic did not judge
    ]
    cal = calibration(rs)
    assert cal is not None and cal["score_kind"] == "probability"
    pairs = [(0.9, True), (0.2, False), (0.6, False), (0.3, True)]
    assert cal["candidates"] == 4 and cal["positives"] == 2
    assert cal["auroc"] == pytest.approx(_pairwise_auroc(pairs))
    assert cal["brier"] == pytest.approx(brier_score(pairs))
    assert cal["unscored_samples"] == 1
    assert calibration([_result(BOX, [(0, 0)])]) is None


def test_risk_coverage_by_hand() -> None:
    # top scores 0.9 (pick hits), 0.8 (miss), 0.8 (hit), 0.4 (miss): the two 0.8 are kept together
    rs = [
        _result(BOX, [(150, 120), (0, 0)], [0.9, 0.1], sid="a"),
        _result(BOX, [(0, 0), (150, 120)], [0.8, 0.1], sid="b"),
        _result(BOX, [(150, 120), (0, 0)], [0.8, 0.2], sid="c"),
        _result(BOX, [(0, 0), (1, 1)], [0.4, 0.3], sid="d"),
    ]
    curve, aurc, left_out = risk_coverage(rs)
    assert left_out == 0
    assert [(p["kept"], p["top1"]) for p in curve] == [(1, 100.0), (3, pytest.approx(200 / 3)), (4, 50.0)]
    assert [p["threshold"] for p in curve] == [0.9, 0.8, 0.4]
    # AURC: each sample counted at the risk of the first threshold that keeps it
    assert aurc == pytest.approx((0.0 * 1 + (100 - 200 / 3) * 2 + 50.0 * 1) / 4)
    many = [_result(BOX, [(150, 120), (0, 0)], [i / 100, 0.0], sid=str(i)) for i in range(1, 60)]
    short, _, _ = risk_coverage(many, points=5)
    assert len(short) == 5 and short[-1]["coverage"] == 100.0 and short[0]["kept"] == 1


# -- outcomes -------------------------------------------------------------------------------------
def test_each_outcome_kind_by_hand() -> None:
    hit = _result(BOX, [(150, 120), (0, 0)], [0.9, 0.1])
    critic_miss = _result(BOX, [(150, 120), (0, 0)], [0.1, 0.9])
    proposer_miss = _result(BOX, [(0, 0), (1, 1)], [0.1, 0.9])
    abstained = _result(BOX, [None, (1, 1)], [0.9, 0.1])
    right_abstention = _result(Absent(), [None, (1, 1)], [0.9, 0.1])
    fmt = _result(BOX, [], format_error=True)
    img = _result(BOX, [], image_error="cannot read /img/0.png")
    got = [
        outcome(r, "critic") for r in (hit, critic_miss, proposer_miss, abstained, right_abstention, fmt, img)
    ]
    assert got == ["hit", "critic_miss", "proposer_miss", "abstained", "hit", "format_error", "image_error"]
    # an abstaining pick while another candidate hits: the critic chose wrong
    assert outcome(_result(BOX, [None, (150, 120)], [0.9, 0.1]), "critic") == "critic_miss"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(st.none(), st.tuples(st.integers(0, 300), st.integers(0, 200))), min_size=0, max_size=5
        ),
        min_size=1,
        max_size=25,
    ),
    st.randoms(use_true_random=False),
)
def test_outcome_split_is_a_partition_and_hit_plus_critic_miss_is_oracle(
    point_lists: list[list[tuple[int, int] | None]], rng: random.Random
) -> None:
    results = [
        _result(BOX, list(pts), [rng.random() for _ in pts], sid=str(i), format_error=not pts)
        for i, pts in enumerate(point_lists)
    ]
    for strategy in ("critic", "first"):
        d = decompose(results, strategy)
        assert sum(d["counts"].values()) == len(results)
        assert sum(d.get(kind) or 0.0 for kind in OUTCOMES) == pytest.approx(100.0)
        assert "not_in_file" not in d and "not_in_file" not in d["counts"]  # only where a sample has it
        assert d["counts"]["hit"] == sum(r.top1[strategy] for r in results)
        assert d["counts"]["hit"] + d["counts"]["critic_miss"] == sum(r.oracle for r in results)


def test_critic_gain() -> None:
    sel = {"critic": 50.0, "first": 45.0, "mean": 40.0, "median": 52.0, "geomedian": None}
    assert critic_gain(sel) == {"over_first": 5.0, "over_best_spatial": -2.0, "best_spatial": "median"}
    assert critic_gain({}) == {"over_first": None, "over_best_spatial": None, "best_spatial": None}


# -- target sizes and distances -------------------------------------------------------------------
def test_areas_and_buckets() -> None:
    assert region_area(Box(0, 0, 10, 20)) == 200
    assert region_area(Box(0, 0, 0.5, 0.5, "normalized", (100, 40))) == pytest.approx(50 * 20)
    assert region_area(Polygon(((0, 0), (10, 0), (10, 10), (0, 10)))) == 100  # shoelace, either winding
    assert region_area(Polygon(((0, 0), (0, 10), (10, 0)))) == 50
    assert region_area(Absent()) is None
    assert region_area(Box(10, 10, 5, 20)) == 0.0  # inverted: zero area, kept as official
    labels = bucket_labels()
    assert len(labels) == len(SIZE_EDGES) - 1 and len(set(labels)) == len(labels)
    assert size_bucket(0.0) == "<0.01%" and size_bucket(1e-4) == "0.01–0.03%"
    assert size_bucket(0.0007) == "0.03–0.1%" and size_bucket(0.5) == "≥10%" and size_bucket(1.7) == "≥10%"
    r = _result(Box(0, 0, 10, 10), [(5, 5)], size=(100, 100))
    assert target_area_fraction(r) == pytest.approx(0.01)
    assert target_area_fraction(_result(Absent(), [None])) is None


def test_size_buckets_count_every_target_once() -> None:
    rs = [
        _result(Box(0, 0, 10, 10), [(5, 5)], size=(1000, 1000), sid="tiny-hit"),  # 1e-4
        _result(Box(0, 0, 10, 10), [(50, 50)], size=(1000, 1000), sid="tiny-miss"),
        _result(Box(0, 0, 500, 500), [(50, 50)], size=(1000, 1000), sid="big"),  # 0.25
        _result(Absent(), [None], sid="absent"),
    ]
    out = size_buckets(rs, 5, "critic")
    by = {b["label"]: b for b in out["buckets"]}
    assert by["0.01–0.03%"]["samples"] == 2 and by["0.01–0.03%"]["top1"] == 50.0
    assert by["≥10%"]["samples"] == 1 and by["≥10%"]["oracle@5"] == 100.0
    assert by["<0.01%"]["top1"] is None and out["no_area"] == 1
    assert sum(b["samples"] for b in out["buckets"]) + out["no_area"] == len(rs)


def test_miss_distance_by_hand() -> None:
    # target 100x50 box at (100,100)-(200,150), diagonal sqrt(12500); pick 30 px right of its edge
    r = _result(BOX, [(230, 120)], size=(1000, 500))
    in_targets, screen = miss_distance(r, "critic")  # type: ignore[misc]
    assert in_targets == pytest.approx(30 / math.hypot(100, 50))
    assert screen == pytest.approx(30 / math.hypot(1000, 500))
    assert miss_distance(_result(BOX, [(150, 120)]), "critic") is None  # a hit
    assert miss_distance(_result(BOX, [None]), "critic") is None  # abstention
    # inside the polygon's bounding box but outside the triangle: distance 0
    tri = Polygon(((0, 0), (100, 0), (0, 100)))
    assert miss_distance(_result(tri, [(90, 90)]), "critic") == (0.0, 0.0)
    # a zero-size target: no distance in target sizes, still one in screen fractions
    flat = miss_distance(_result(Box(10, 10, 10, 10), [(13, 14)], size=(30, 40)), "critic")
    assert flat == (None, pytest.approx(5 / 50))


# -- assembled ------------------------------------------------------------------------------------
def test_analyse_gives_the_decomposition_per_official_table_cell() -> None:
    rs = [
        _result(BOX, [(150, 120)], sid="1", labels={"group": "A", "ui_type": "text"}),
        _result(BOX, [(0, 0), (150, 120)], [0.9, 0.1], sid="2", labels={"group": "A", "ui_type": "icon"}),
        _result(BOX, [(0, 0)], sid="3", labels={"group": "B", "ui_type": "icon"}),
    ]
    spec = TableSpec("By group", rows="group", cols="ui_type", col_order=("text", "icon"))
    out = analyse(
        rs, tables=[spec, TableSpec("By app", rows="app")], k=5, strategy="critic", selection={"critic": 1.0}
    )
    (table,) = out["decomposition"]["tables"]  # no sample has "app": that table is left out
    cells = {(c["row"], c["col"]): c for c in table["cells"]}
    assert set(cells) == {("A", "text"), ("A", "icon"), ("B", "icon")}
    assert cells[("A", "icon")]["counts"]["critic_miss"] == 1 and cells[("A", "icon")]["critic_miss"] == 100.0
    assert cells[("B", "icon")]["proposer_miss"] == 100.0
    assert out["pass_at_k"] is None and out["calibration"]["score_kind"] == "probability"
    assert analysis_options("single_pass", "listwise") == {"exchangeable_from": None, "score_kind": "rank"}


def test_a_replayed_sampling_run_reports_pass_at_k_in_results_json(tmp_path: Path) -> None:
    from gge.run.settings import parse_args
    from gge.run.standalone import run

    first = tmp_path / "first"
    run(
        parse_args([f"output_dir={first}", "benchmarks=[screenspot_v2]", "max_samples=8"]),
        io.StringIO(),
    )
    preds = first / "predictions.jsonl"
    out = io.StringIO()
    doc = run(
        parse_args(
            [
                f"output_dir={tmp_path / 'replayed'}",
                "benchmarks=[screenspot_v2]",
                "max_samples=8",
                "model=replay",
                f"model.predictions={preds}",
                "model.proposer=sampling",
            ]
        ),
        out,
    )
    entry = doc["benchmarks"]["screenspot_v2"]
    lines = [json.loads(line) for line in preds.read_text().splitlines()]
    k = doc["k"]
    hits = [line["hits"][1:k] + [False] * (k - len(line["hits"][1:k])) for line in lines]
    expected = 100 * sum(pass_at_k(k - 1, sum(h), 2) for h in hits) / len(hits)
    assert entry["pass_at_k"]["n"] == k - 1 and entry["pass_at_k"]["first_slot"] == 1
    assert entry["pass_at_k"]["pass@2"] == pytest.approx(expected)
    assert "pass@k (unbiased" in (tmp_path / "replayed" / "report.md").read_text()  # the detail: report.md
    # the single_pass run has no pass@k, and both carry the other sections, printed too
    single = json.loads((first / "results.json").read_text())["benchmarks"]["screenspot_v2"]
    assert single["pass_at_k"] is None
    for key in ("decomposition", "critic_gain", "size_buckets", "miss_distance", "calibration"):
        assert key in single
    assert "Where the misses are" in (first / "report.md").read_text()
    assert single["decomposition"]["overall"]["samples"] == 8


def test_wandb_decomposition_rows_name_every_cell() -> None:
    from gge.loggers.wandb import decomposition_rows

    rs = [
        _result(BOX, [(150, 120)], sid="1", labels={"group": "A", "ui_type": "text"}),
        _result(BOX, [(0, 0)], sid="2", labels={"group": "B", "ui_type": "icon"}),
    ]
    spec = TableSpec("By group", rows="group", cols="ui_type")
    entry = analyse(rs, tables=[spec], k=5, strategy="critic", selection={})
    rows = decomposition_rows(entry)
    assert [r[0] for r in rows] == ["all", "group=A · ui_type=text", "group=B · ui_type=icon"]
    assert rows[1][2] == 100.0 and rows[2][2 + OUTCOMES.index("proposer_miss")] == 100.0


def test_score_kind_is_read_off_the_scores_or_declared_by_the_policy() -> None:
    from gge.models.base import policy_analysis_options
    from gge.models.demo import load_demo_policy
    from gge.scoring.calibration import infer_score_kind

    ranked = [_result(BOX, [(0, 0), (150, 120), (5, 5)], [2.0, 3.0, 1.0], sid="r")]
    probs = [_result(BOX, [(0, 0), (150, 120)], [0.2, 1.0], sid="p")]
    logits = [_result(BOX, [(0, 0), (150, 120)], [-1.5, 2.0], sid="l")]
    assert infer_score_kind(ranked) == "rank" and infer_score_kind(probs) == "probability"
    assert infer_score_kind(logits) == "score" and infer_score_kind([_result(BOX, [(1, 1)])]) is None
    cal = calibration(logits)
    assert cal is not None and cal["auroc"] == 1.0 and cal["ece"] is None  # an order, not a probability
    # the demo's critic gives logits, and says so: calibration never reads them as probabilities
    assert policy_analysis_options(load_demo_policy())["score_kind"] == "score"


def test_review_edge_cases_of_sizes_pass_at_k_calibration_and_outcomes() -> None:
    from gge.benchmarks.base import UNKNOWN_SIZE

    # an unreadable screenshot belongs to no size bucket, and an unknown size gives no area
    unreadable = _result(Box(10, 10, 50, 30), [], size=UNKNOWN_SIZE, sid="u", image_error="cannot read x")
    unknown = _result(Box(10, 10, 50, 30), [(0, 0)], size=UNKNOWN_SIZE, sid="v")
    out = size_buckets([unreadable, unknown], 5, "critic")
    assert out["unreadable"] == 1 and out["no_area"] == 1 and all(b["samples"] == 0 for b in out["buckets"])
    assert miss_distance(unknown, "critic") is None
    # pass@k counts the draws made, not the K scored: a greedy answer and 4 draws scored with k=10
    r = _result(BOX, [(0, 0), (150, 120), (0, 0), (0, 0), (0, 0)], k=10)
    pk = analyse([r], tables=[], k=10, strategy="critic", selection={}, exchangeable_from=1)["pass_at_k"]
    assert pk["n"] == 4 and pk["pass@1"] == pytest.approx(25.0) and "pass@5" not in pk
    # an unparseable ranking stood in the proposer order: not the critic's judgement
    sample = Sample("b", "c", "/c.png", (1000, 500), "click", BOX)
    bad = score_sample(
        sample,
        Prediction("b", "c", (Candidate((150, 120), 2.0), Candidate((0, 0), 1.0)), critic_format_error=True),
        k=5,
    )
    assert candidate_scores(bad, "rank") == [] and calibration([bad]) is None
    # a replayed line flagged as a format error whose unpicked candidate hits is a critic miss
    flagged = _result(BOX, [(0, 0), (150, 120)], [0.9, 0.1], format_error=True)
    assert outcome(flagged, "critic") == "critic_miss"


# -- the selected strategy, unreadable screenshots, critic format errors, a zero probability -------
SIZE = (1000, 500)  # BOX (100 x 50 px) is 1% of this screen
HIT, MISS = (150.0, 120.0), (500.0, 400.0)


def _boxed(
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


def _brute_pass_of(answers: list[bool], k: int) -> float:
    subsets = list(itertools.combinations(range(len(answers)), k))
    return sum(any(answers[i] for i in sub) for sub in subsets) / len(subsets)


def _analyse(results: list[SampleResult], strategy: str, **kw: object) -> dict[str, object]:
    return analyse(results, tables=(), k=5, strategy=strategy, selection={}, **kw)  # type: ignore[arg-type]


def test_pass_at_k_survives_an_unreadable_screenshot() -> None:
    # a greedy answer then 4 sampled ones; the third screenshot could not be read (no answers at all)
    a = _boxed([HIT, HIT, MISS, MISS, MISS], sid="a")
    b = _boxed([MISS, MISS, HIT, HIT, MISS], sid="b")
    broken = _boxed([], sid="c", image_error="/img/c.png: cannot identify image file")
    pk = _analyse([a, b, broken], "first", exchangeable_from=1)["pass_at_k"]
    assert isinstance(pk, dict)
    assert pk["n"] == 4 and pk["first_slot"] == 1  # drawn 4 after the greedy one, whatever one sample lacks
    draws = [[True, False, False, False], [False, True, True, False], [False] * 4]
    for j in range(1, 5):
        want = 100 * sum(_brute_pass_of(d, j) for d in draws) / 3
        assert pk[f"pass@{j}"] == pytest.approx(want), j
    assert pk["pass@1"] == pytest.approx(100 * (1 / 4 + 2 / 4 + 0) / 3)


def test_size_buckets_follow_the_selected_strategy() -> None:
    # "first" picks the hit (slot 0); the critic picks the higher-scored miss
    rs = [_boxed([HIT, MISS], [0.1, 0.9], sid=str(i)) for i in range(3)]
    rs.append(_boxed([MISS, HIT], [0.1, 0.9], sid="3"))  # first misses, the critic hits
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
    r = _boxed([(500.0, 125.0), HIT], [0.1, 0.9])
    assert r.top1["critic"] and not r.top1["first"]
    first = _analyse([r], "first")["miss_distance"]
    assert first["misses"] == 1  # type: ignore[index]
    assert first["target_sizes"]["median"] == pytest.approx(300 / math.hypot(100, 50))  # type: ignore[index]
    assert first["screen"]["median"] == pytest.approx(300 / math.hypot(1000, 500))  # type: ignore[index]
    critic = _analyse([r], "critic")["miss_distance"]
    assert critic == {"misses": 0, "target_sizes": None, "screen": None}


def test_misses_counts_misses_only() -> None:
    rs = [
        _boxed([HIT], sid="hit1"),
        _boxed([HIT], sid="hit2"),
        _boxed([(100.0, 250.0)], sid="below"),  # 100 px under the box's bottom edge
        _boxed([None], sid="noanswer"),  # a pick without a point: no distance
    ]
    d = miss_distances(rs, "first")
    assert d["misses"] == 1
    assert d["screen"] == pytest.approx({q: 100 / math.hypot(1000, 500) for q in ("q1", "median", "q3")})


def test_risk_coverage_leaves_out_critic_format_errors() -> None:
    rs = [
        _boxed([HIT, MISS], [0.9, 0.1], sid="a"),  # critic picks the hit at 0.9
        _boxed([MISS, HIT], [0.7, 0.2], sid="b"),  # picks the miss at 0.7
        # the critic's answer could not be read: its highest "score" (0.95) is no judgement
        _boxed([MISS, HIT], [0.95, 0.1], sid="c", critic_format_error=True),
    ]
    curve, aurc, left_out = risk_coverage(rs)
    assert left_out == 1
    assert [(p["threshold"], p["kept"], p["top1"]) for p in curve] == [(0.9, 1, 100.0), (0.7, 2, 50.0)]
    assert [p["coverage"] for p in curve] == [50.0, 100.0]
    assert aurc == pytest.approx((0.0 + 50.0) / 2)


def test_a_probability_of_exactly_zero_is_a_probability() -> None:
    rs = [_boxed([HIT, MISS], [0.0, 0.6], sid="a"), _boxed([MISS, HIT], [0.3, 0.0], sid="b")]
    assert infer_score_kind(rs) == "probability"
    cal = _analyse(rs, "critic")["calibration"]
    assert cal["score_kind"] == "probability"  # type: ignore[index]
    # Brier over the four candidates: (0 - 1)^2, (0.6 - 0)^2, (0.3 - 0)^2, (0 - 1)^2
    assert cal["brier"] == pytest.approx((1 + 0.36 + 0.09 + 1) / 4)  # type: ignore[index]
