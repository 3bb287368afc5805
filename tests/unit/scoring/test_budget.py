"""Budget curves (gge.scoring.budget) against brute-force enumeration and hand-computed costs."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from gge.benchmarks.base import Average, Benchmark, BenchmarkOptions, LoadedBenchmark
from gge.scoring.budget import budget_curves, point_slots, sample_costs, sample_hits, subset_plan
from gge.scoring.cost import cost_summary
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import candidate_hits, score_sample
from gge.scoring.selection import select
from gge.types import STRATEGIES, Box, Candidate, CostRecord, Prediction, Refinement, Sample, SampleResult

K = 5
SIZE = (400, 300)


class Micro(Benchmark):
    name = "fake"
    title = "Fake"
    directory = "fake"
    label_keys = ()
    official = Average("micro")
    tables = ()

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


def _candidate(rng: random.Random) -> Candidate:
    roll = rng.random()
    if roll < 0.08:
        return Candidate(None, score=rng.random())  # an abstention
    if roll < 0.12:
        return Candidate(None, parsed=False)  # an unparsed slot
    score = rng.choice([None, rng.random(), 0.5])  # ties and unscored ones too
    return Candidate((rng.gauss(120, 40), rng.gauss(100, 40)), score=score)


def _results(n: int, seed: int, k: int = K) -> list[SampleResult]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sample = Sample("fake", str(i), "", SIZE, "x", Box(90, 70, 150, 130))
        cands = tuple(_candidate(rng) for _ in range(rng.choice([k, k, k, k - 2, 0])))
        out.append(score_sample(sample, Prediction("fake", str(i), cands), k=k))
    return out


def _brute_subsets(k: int, j: int, first: int | None) -> list[tuple[int, ...]]:
    """The j-subsets written out: the first j, or the head kept and each combination of the rest."""
    if first is None or j <= first:
        return [tuple(range(j))]
    return [tuple(range(first)) + c for c in itertools.combinations(range(first, k), j - first)]


def _brute_top1(results: list[SampleResult], k: int, j: int, first: int | None, strategy: str) -> float:
    total = 0.0
    for r in results:
        subsets = _brute_subsets(k, j, first)
        hits = 0
        for subset in subsets:
            chosen = [r.candidates[s] for s in subset if s < len(r.candidates)]
            assert r.region is not None and r.image_size is not None
            if strategy == "critic" and sum(c.point is not None for c in chosen) < 2:
                # a critic run on fewer than two point candidates does not run: no scores, the first
                chosen = [Candidate(c.point, None, c.raw, c.parsed) for c in chosen]
            hits += candidate_hits(r.region, select(strategy, chosen, r.image_size))
        total += hits / len(subsets)
    return 100.0 * total / len(results)


def _brute_oracle(results: list[SampleResult], k: int, j: int, first: int | None) -> float:
    total = 0.0
    for r in results:
        subsets = _brute_subsets(k, j, first)
        total += sum(any(r.hits[s] for s in subset if s < len(r.hits)) for subset in subsets) / len(subsets)
    return 100.0 * total / len(results)


@pytest.mark.parametrize("first", [None, 0, 1, 2])
def test_curves_equal_brute_force_enumeration(first: int | None) -> None:
    results = _results(60, seed=7)
    curves = budget_curves(results, k=K, exchangeable_from=first)
    assert curves is not None
    assert curves["method"] == ("prefix" if first is None else "subsets")
    assert curves["first_slot"] == first
    for point in curves["points"]:
        j = point["j"]
        assert point["subsets"] == len(_brute_subsets(K, j, first))
        for s in STRATEGIES:
            assert point["top1"][s] == pytest.approx(_brute_top1(results, K, j, first, s), abs=1e-9), (j, s)
        assert point["oracle"] == pytest.approx(_brute_oracle(results, K, j, first), abs=1e-9)


def test_j_equals_k_is_the_runs_own_top1_and_oracle() -> None:
    results = _results(80, seed=3)
    entry = benchmark_metrics(Micro(), results, k=K, strategy="critic", exchangeable_from=1)
    budget = entry["budget"]
    assert budget is not None
    last = budget["points"][-1]
    assert last["j"] == K
    assert last["top1"] == entry["selection"]
    assert last["oracle"] == pytest.approx(100.0 * sum(r.hit_at(K) for r in results) / len(results))


def test_prefix_and_subsets_differ_by_hand() -> None:
    # candidates: a miss first, then two hits; scores favour the first
    sample = Sample("fake", "0", "", SIZE, "x", Box(0, 0, 10, 10))
    cands = (Candidate((50.0, 50.0), 0.9), Candidate((5.0, 5.0), 0.5), Candidate((6.0, 6.0), 0.1))
    r = score_sample(sample, Prediction("fake", "0", cands), k=3)
    prefix = sample_hits(r, subset_plan(3, None), ("first", "critic"))
    subsets = sample_hits(r, subset_plan(3, 0), ("first", "critic"))
    assert prefix == {"first": [0.0, 0.0, 0.0], "critic": [0.0, 0.0, 0.0], "oracle": [0.0, 1.0, 1.0]}
    # j=1: {0} {1} {2} -> 0, 1, 1; j=2: {0,1} {0,2} {1,2}: first 0, 0, 1; critic picks 0, 0, 1
    assert subsets["first"] == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert subsets["critic"] == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert subsets["oracle"] == pytest.approx([2 / 3, 1.0, 1.0])


def test_pointwise_and_listwise_critics() -> None:
    sample = Sample("fake", "0", "", SIZE, "x", Box(0, 0, 10, 10))
    # a ranking stored as m - position: candidate 1 first, then 0, then 2 (the hit)
    ranked = (Candidate((50.0, 50.0), 2.0), Candidate((60.0, 60.0), 3.0), Candidate((5.0, 5.0), 1.0))
    r = score_sample(sample, Prediction("fake", "0", ranked), k=3)
    curves = budget_curves([r], k=3, exchangeable_from=0, score_kind="rank")
    assert curves is not None and curves["critic"] == "induced"
    # the induced order on {0, 2} picks 0, on {1, 2} picks 1: only {2} alone hits at j = 1
    assert [p["top1"]["critic"] for p in curves["points"]] == pytest.approx([100 / 3, 0.0, 0.0])
    inferred = budget_curves([r], k=3, exchangeable_from=0)
    assert inferred is not None and inferred["critic"] == "induced"  # 1..m: read as a ranking
    probs = tuple(Candidate(c.point, p) for c, p in zip(ranked, (0.2, 0.3, 0.9), strict=True))
    rp = score_sample(sample, Prediction("fake", "0", probs), k=3)
    pointwise = budget_curves([rp], k=3, exchangeable_from=0, score_kind="probability")
    assert pointwise is not None and pointwise["critic"] == "pointwise"
    # P(yes) 0.9 belongs to the hit: every subset holding slot 2 picks it (1/3, 2/3, 1)
    assert [p["top1"]["critic"] for p in pointwise["points"]] == pytest.approx([100 / 3, 200 / 3, 100.0])
    unscored = tuple(Candidate(c.point) for c in ranked)
    ru = score_sample(sample, Prediction("fake", "0", unscored), k=3)
    none = budget_curves([ru], k=3)
    assert none is not None and none["critic"] is None


def test_one_answer_runs_have_no_curves() -> None:
    results = _results(5, seed=1, k=1)
    assert benchmark_metrics(Micro(), results, k=1, strategy="critic")["budget"] is None


def test_too_many_subsets_are_sampled_and_named() -> None:
    plan = subset_plan(8, 1, cap=20)
    # C(7, j - 1): 1, 7, 21, 35, 35, 21, 7, 1
    assert plan.counts == (1, 7, 21, 35, 35, 21, 7, 1)
    assert plan.sampled == (3, 4, 5, 6)
    assert plan.method == "sampled"
    for j in range(1, 9):
        subsets = plan.subsets(j)
        assert len(subsets) == min(plan.counts[j - 1], 20)
        for s in subsets:
            assert len(s) == j and s[0] == 0 and list(s) == sorted(set(s)) and s[-1] < 8
    assert subset_plan(8, 1, cap=20).subsets(4) == plan.subsets(4)  # seeded: the same draws
    assert any("j = 4: 20 of its 35 subsets drawn at random (seed 0)" in n for n in plan.notes())
    assert subset_plan(8, 1).method == "subsets"  # under the default cap: all of them


def test_sampled_curve_is_close_to_the_exact_one_and_says_so() -> None:
    results = _results(30, seed=11, k=8)
    exact = budget_curves(results, k=8, exchangeable_from=1)
    assert exact is not None and exact["method"] == "subsets"
    plan = subset_plan(8, 1, cap=10)
    sampled = [sample_hits(r, plan, ("first",))["first"] for r in results]
    # j = 3 was drawn (C(7, 2) = 21 > 10): the mean over the draws, each draw a real subset
    drawn = plan.subsets(3)
    region = Box(90, 70, 150, 130)
    want = 0.0
    for r in results:
        picks = [select("first", [r.candidates[s] for s in d if s < len(r.candidates)], SIZE) for d in drawn]
        want += 100.0 * sum(candidate_hits(region, p) for p in picks) / len(drawn) / len(results)
    got = 100.0 * sum(h[2] for h in sampled if h[2] is not None) / len(results)
    assert got == pytest.approx(want)


# -- costs ------------------------------------------------------------------------------------------
LEDGER = (
    CostRecord(
        "propose", input_tokens=100, output_tokens=10, seconds=1.0, prefill_seconds=0.4, slot=0, candidates=1
    ),
    CostRecord("propose", input_tokens=100, output_tokens=30, seconds=2.0, slot=1, candidates=2),
    CostRecord("judge", input_tokens=50, output_tokens=0, seconds=0.2, slot=0, candidates=1),
    CostRecord("judge", input_tokens=50, output_tokens=0, seconds=0.2, slot=1, candidates=1),
    CostRecord("judge", input_tokens=50, output_tokens=0, seconds=0.2, slot=2, candidates=1),
    CostRecord("rank", input_tokens=80, output_tokens=5, seconds=0.5, candidates=0),
    CostRecord("refine", input_tokens=60, output_tokens=8, seconds=0.3, candidates=0),
)


def test_derived_costs_by_hand_exchangeable() -> None:
    got = sample_costs(LEDGER, subset_plan(3, 1))
    assert got is not None
    # j = 1: slot 0 only: the first proposal; the critic does not run on one candidate
    assert got[0].proposer == pytest.approx((110, 1.0))
    assert got[0].critic == pytest.approx((110, 1.0))
    # j = 2: {0,1} or {0,2}: the sampling request is always made (prompt 100) and serves 1 of its 2
    # slots (15 of 30 output tokens, 1.0 of 2.0 s, no prefill timed apart)
    assert got[1].proposer == pytest.approx((110 + 100 + 15, 1.0 + 1.0))
    # the critic's: slot 0's judge always, each later judge 1/2, the ranking (about all) in full
    tokens = 110 + (100 + 15) + 50 + 0.5 * 50 + 0.5 * 50 + 85
    seconds = 1.0 + 1.0 + 0.2 + 0.1 + 0.1 + 0.5
    assert got[1].critic == pytest.approx((tokens, seconds))
    # j = K: what the run paid, the refine stage left out; the proposer's requests alone for the others
    assert got[2].proposer == pytest.approx((110 + 130, 1.0 + 2.0))
    assert got[2].critic == pytest.approx((110 + 130 + 150 + 85, 1.0 + 2.0 + 0.6 + 0.5))


def test_derived_costs_by_hand_prefix_and_prefill() -> None:
    ledger = (
        CostRecord(
            "propose", input_tokens=200, output_tokens=40, seconds=3.0, prefill_seconds=1.0, candidates=4
        ),
    )
    got = sample_costs(ledger, subset_plan(4, None))
    # j of 4 answers: the prompt and its prefill always, j/4 of the answers and of the other 2 s
    assert got is not None
    assert [c.proposer[0] for c in got] == pytest.approx([210.0, 220.0, 230.0, 240.0])
    assert [c.proposer[1] for c in got] == pytest.approx([1.5, 2.0, 2.5, 3.0])
    assert [c.critic for c in got] == [c.proposer for c in got]  # no critic requests: the same


def test_the_fixed_part_is_the_prompt_the_model_computed() -> None:
    """One prefill for 5 sequences of a 200-token prompt: 1000 consumed, 796 = 4 x 199 from its cache."""
    ledger = (
        CostRecord(
            "propose",
            input_tokens=1000,
            cached_tokens=796,
            output_tokens=50,
            seconds=2.5,
            prefill_seconds=1.0,
            candidates=5,
        ),
    )
    got = sample_costs(ledger, subset_plan(5, 0))
    assert got is not None
    # computed: 1000 - 796 = 204 (the prompt once, and each continuation's last token); 10 per answer
    assert [c.proposer[0] for c in got] == pytest.approx([214.0, 224.0, 234.0, 244.0, 254.0])
    assert [c.proposer[1] for c in got] == pytest.approx([1.3, 1.6, 1.9, 2.2, 2.5])


def test_the_critic_runs_only_on_subsets_of_two_points() -> None:
    """Slot 1 abstains (no judge request): of the 2-subsets only {0, 2} holds two points to judge."""
    ledger = (
        CostRecord("propose", input_tokens=300, output_tokens=30, seconds=0.6, candidates=3),
        CostRecord("judge", input_tokens=50, output_tokens=0, seconds=0.3, slot=0, candidates=1),
        CostRecord("judge", input_tokens=50, output_tokens=0, seconds=0.3, slot=2, candidates=1),
    )
    got = sample_costs(ledger, subset_plan(3, 0), (True, False, True))
    assert got is not None
    assert [v for c in got for v in c.proposer] == pytest.approx([310, 0.2, 320, 0.4, 330, 0.6])
    assert got[0].critic == pytest.approx((310, 0.2))  # one candidate: no critic
    # {0,1} and {1,2}: one point, no critic; {0,2}: both judges; so each judge 1/3 of the time
    assert got[1].critic == pytest.approx((320 + 2 * 50 / 3, 0.4 + 2 * 0.3 / 3))
    assert got[2].critic == pytest.approx((430, 1.2))  # measured
    # every slot a point: each judge in 2 of the 3 subsets
    every = sample_costs(ledger, subset_plan(3, 0))
    assert every is not None and every[1].critic == pytest.approx((320 + 2 * 50 * 2 / 3, 0.4 + 2 * 0.2))


def test_unknown_counts_and_no_records() -> None:
    plan = subset_plan(2, None)
    assert sample_costs((), plan) is None
    got = sample_costs((CostRecord("propose", seconds=1.0, candidates=2),), plan)
    assert got is not None
    assert [(c.proposer, c.critic) for c in got] == [((None, 0.5), (None, 0.5)), ((None, 1.0), (None, 1.0))]


def test_curve_costs_and_refined_point() -> None:
    sample = Sample("fake", "0", "", SIZE, "x", Box(0, 0, 10, 10))
    cands = (Candidate((50.0, 50.0), 0.9), Candidate((5.0, 5.0), 0.5), Candidate((6.0, 6.0), 0.1))
    zoom = Refinement(triggered=True, point=(5.0, 5.0))
    with_costs = score_sample(sample, Prediction("fake", "0", cands, costs=LEDGER, refine=zoom), k=3)
    without = score_sample(sample, Prediction("fake", "1", cands, refine=Refinement()), k=3)
    curves = budget_curves([with_costs, without], k=3, exchangeable_from=1)
    assert curves is not None
    points = curves["points"]
    assert [p["cost"] for p in points] == ["derived", "derived", "measured"]
    # the one sample with records: the proposer's requests for first, the vote and the spatial picks
    assert [p["tokens"] for p in points] == pytest.approx([110, 225, 240])
    assert [p["seconds"] for p in points] == pytest.approx([1.0, 2.0, 3.0])
    # the critic's adds its requests (none at j = 1)
    assert [(p["critic"] or {}).get("tokens") for p in points] == pytest.approx([110, 410, 475])
    assert [(p["critic"] or {}).get("seconds") for p in points] == pytest.approx([1.0, 2.9, 4.1])
    assert any("1 of 2 samples with cost records" in n for n in curves["notes"])
    assert "refined" in curves
    refined = curves["refined"]
    assert refined["top1"] == 50.0  # sample 0 refined onto the box, sample 1's base pick (critic) misses
    assert refined["tokens"] == pytest.approx(475.0 + 68.0)
    assert refined["seconds"] == pytest.approx(4.1 + 0.3)
    assert refined["cost"] == "measured"


def test_a_run_without_a_critic_has_no_critic_cost() -> None:
    sample = Sample("fake", "0", "", SIZE, "x", Box(0, 0, 10, 10))
    cands = (Candidate((50.0, 50.0)), Candidate((5.0, 5.0)), Candidate((6.0, 6.0)))
    ledger = (CostRecord("propose", input_tokens=90, output_tokens=30, seconds=0.3, candidates=3),)
    r = score_sample(sample, Prediction("fake", "0", cands, costs=ledger), k=3)
    curves = budget_curves([r], k=3, exchangeable_from=0)
    assert curves is not None and curves["critic"] is None
    assert [p["critic"] for p in curves["points"]] == [None, None, None]
    assert [p["tokens"] for p in curves["points"]] == pytest.approx([100, 110, 120])


def test_a_replay_labels_what_the_run_paid_replayed() -> None:
    results = [r for r in _results(6, seed=2) if r.candidates]
    ledger = (CostRecord("propose", input_tokens=50, output_tokens=5, seconds=0.5, candidates=K),)
    with_costs = [
        score_sample(
            Sample("fake", r.id, "", SIZE, "x", Box(90, 70, 150, 130)),
            Prediction("fake", r.id, r.candidates, costs=ledger, refine=Refinement()),
            k=K,
        )
        for r in results
    ]
    entry = benchmark_metrics(Micro(), with_costs, k=K, strategy="critic", cost_source="replayed")
    budget = entry["budget"]
    assert budget is not None
    assert [p["cost"] for p in budget["points"]] == ["derived"] * (K - 1) + ["replayed"]
    assert budget["refined"]["cost"] == "replayed"
    measured = budget_curves(with_costs, k=K)
    assert measured is not None and measured["points"][-1]["cost"] == "measured"


def test_a_rescore_at_a_smaller_k_derives_every_cost() -> None:
    """A K = 5 ledger scored with k = 3: j = 3 pays slots 0-2 of requests made for 5, none measured."""
    sample = Sample("fake", "0", "", SIZE, "x", Box(0, 0, 10, 10))
    ledger = (
        CostRecord("propose", input_tokens=100, output_tokens=10, seconds=1.0, slot=0, candidates=1),
        CostRecord("propose", input_tokens=100, output_tokens=40, seconds=2.0, slot=1, candidates=4),
        *(
            CostRecord("judge", input_tokens=50, output_tokens=0, seconds=0.2, slot=i, candidates=1)
            for i in range(5)
        ),
    )
    cands = tuple(Candidate((float(x), 5.0), 0.1 * x) for x in (5, 6, 7, 50, 60))
    r = score_sample(sample, Prediction("fake", "0", cands, costs=ledger), k=3)
    got = sample_costs(r.costs, subset_plan(3, 1), point_slots(r.candidates))
    assert got is not None
    # j = 3 of 3: slots 0-2, so 2 of the sampling request's 4 slots (20 of 40 tokens, 1.0 of 2.0 s)
    assert got[2].proposer == pytest.approx((110 + 100 + 20, 1.0 + 1.0))
    assert got[2].critic == pytest.approx((230 + 3 * 50, 2.0 + 3 * 0.2))  # judges 3 and 4 never made
    curves = budget_curves([r], k=3, exchangeable_from=1)
    assert curves is not None
    assert [p["cost"] for p in curves["points"]] == ["derived"] * 3
    assert any("made for 5 candidates and this run scores 3" in n for n in curves["notes"])
    summary = cost_summary([r])
    assert summary is not None and summary["candidates"] == 5
    plain = cost_summary([score_sample(sample, Prediction("fake", "0", cands, costs=ledger), k=5)])
    assert plain is not None and plain["candidates"] == 5


def test_the_refined_top1_is_one_rule_everywhere() -> None:
    """A sample without a refine answer keeps its base pick in metrics, the budget and refine's after."""
    sample = Sample("fake", "0", "", SIZE, "x", Box(0, 0, 10, 10))
    cands = (Candidate((50.0, 50.0), 0.9), Candidate((5.0, 5.0), 0.1))
    fixed = score_sample(
        sample, Prediction("fake", "0", cands, refine=Refinement(triggered=True, point=(5.0, 5.0))), k=2
    )
    hits = (Candidate((5.0, 5.0), 0.9), Candidate((50.0, 50.0), 0.1))
    unanswered = score_sample(sample, Prediction("fake", "1", hits), k=2)  # its critic pick hits
    misses = score_sample(sample, Prediction("fake", "2", cands), k=2)  # its critic pick misses
    results = [fixed, unanswered, misses]
    # by hand: refined hits on 0 (refined onto the box) and 1 (its base pick stands), not on 2
    want = 100 * 2 / 3
    entry = benchmark_metrics(Micro(), results, k=2, strategy="critic")
    assert entry["selection"]["refined"] == pytest.approx(want)
    assert entry["refine"]["after"] == pytest.approx(want)
    assert entry["budget"] is not None and entry["budget"]["refined"]["top1"] == pytest.approx(want)


def test_regionless_results_know_only_candidate_picks() -> None:
    """A line read back (no region): picks that are candidates are known, built points are not."""
    cands = (Candidate((1.0, 1.0), 0.2), Candidate((2.0, 2.0), 0.9), Candidate((3.0, 3.0), 0.5))
    r = SampleResult("b", "0", {}, 3, cands, (False, True, False))
    got = sample_hits(r, subset_plan(3, None), ("critic", "medoid", "mean", "cluster"))
    assert got["critic"] == [0.0, 1.0, 1.0]
    assert got["medoid"] == [0.0, 0.0, 1.0]  # medoid of 2 points: the first; of 3: the middle one
    assert got["mean"] == [0.0, None, 1.0]  # one point: itself; the mean of two: unknown; of 3: (2, 2)
    assert got["cluster"] == [0.0, None, None]  # no image size: the radius of several points is unknown
    abstain = (Candidate(None), Candidate(None), Candidate((3.0, 3.0)))
    ra = SampleResult("b", "1", {}, 3, abstain, (True, True, False))  # a refusal target
    assert sample_hits(ra, subset_plan(3, None), ("mean",))["mean"] == [1.0, 1.0, 1.0]


def test_another_cluster_radius_is_named() -> None:
    results = [r for r in _results(40, seed=5) if len(r.candidates) == K]
    rescored = [
        score_sample(
            Sample("fake", r.id, "", SIZE, "x", Box(90, 70, 150, 130)),
            Prediction("fake", r.id, r.candidates),
            k=K,
            cluster_radius=0.2,
        )
        for r in results
    ]
    curves = budget_curves(rescored, k=K)
    assert curves is not None and any("cluster_radius was another" in n for n in curves["notes"])
    right = budget_curves(rescored, k=K, cluster_radius=0.2)
    assert right is not None and not any("cluster_radius" in n for n in right["notes"])


def test_a_request_that_answered_no_slot_is_paid_in_full_at_every_j() -> None:
    """A single_pass answer that listed no point (candidates=0): its cost is paid whatever j, no crash."""
    region = Box(0, 0, 10, 10)
    sample = Sample("b", "0", "", (100, 100), "x", region)
    ledger = (CostRecord("propose", input_tokens=100, output_tokens=8, seconds=2.0, candidates=0),)
    pred = Prediction("b", "0", (Candidate(None, parsed=False),) * 3, format_error=True, costs=ledger)
    curves = budget_curves([score_sample(sample, pred, k=3)], k=3, exchangeable_from=None)
    assert curves is not None
    assert [(p["tokens"], p["seconds"]) for p in curves["points"]] == [(108.0, 2.0)] * 3
