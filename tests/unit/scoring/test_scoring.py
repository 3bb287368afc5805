"""The hit test and score_sample: box edges, polygons, abstentions, unparsed answers, Top-1 strategies.

An unparsed answer never hits, not even a refusal target: on one sample, through a replayed run, and
through a sampling proposer whose every answer is garbage.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from replay_runs import load_samples, read_lines, replay_run, write_lines

from gge.benchmarks import get_benchmark
from gge.geometry import point_in_box, point_in_polygon
from gge.models.base import Generation, GenerationRequest
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.run.evaluate import evaluate_samples
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import candidate_hits, score_sample
from gge.types import Absent, Box, Candidate, Polygon, Prediction, Sample


def _sample(region, size=(100, 100)) -> Sample:
    return Sample("b", "0", "/x.png", size, "click", region)


@pytest.mark.parametrize(
    ("x", "y", "hit"),
    [
        (10, 20, True),  # top-left corner
        (30, 40, True),  # bottom-right corner
        (10, 40, True),
        (30, 20, True),
        (20, 20, True),  # on the top edge
        (20, 40, True),  # on the bottom edge
        (10, 30, True),  # on the left edge
        (30, 30, True),  # on the right edge
        (9.999, 30, False),
        (30.001, 30, False),
        (20, 19.999, False),
        (20, 40.001, False),
    ],
)
def test_box_edges_inclusive(x: float, y: float, hit: bool) -> None:
    assert Box(10, 20, 30, 40).contains(x, y) is hit


def test_inverted_box_hits_nothing_and_zero_area_box_hits_its_line() -> None:
    inverted = Box(30, 20, 10, 40)
    assert inverted.degenerate
    assert not any(inverted.contains(x, 30) for x in (10, 20, 30))
    line = Box(10, 20, 10, 40)
    assert line.degenerate
    assert line.contains(10, 30) and line.contains(10, 20) and not line.contains(10.01, 30)
    dot = Box(5, 5, 5, 5)
    assert dot.contains(5, 5) and not dot.contains(5, 5.0001)


def test_normalized_box_divides_the_point_like_the_official_scorer() -> None:
    box = Box(0.1, 0.2, 0.5, 0.6, space="normalized", size=(200, 100))
    assert box.contains(20, 20) and box.contains(100, 60)  # exactly on corners
    assert not box.contains(100.01, 60)
    assert box.pixel_box() == pytest.approx((20, 20, 100, 60))
    with pytest.raises(ValueError):
        Box(0, 0, 1, 1, space="normalized")


def test_negative_edge_kept() -> None:
    box = Box(0.1, -1 / 100, 0.2, 0.1, space="normalized", size=(100, 100))
    assert box.contains(15, -0.5) and box.contains(15, -1)


CONCAVE = ((0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (5.0, 4.0), (0.0, 10.0))  # a "V" notch from below


def test_polygon_concave() -> None:
    assert point_in_polygon(5, 2, CONCAVE)
    assert point_in_polygon(1, 8, CONCAVE) and point_in_polygon(9, 8, CONCAVE)
    assert not point_in_polygon(5, 8, CONCAVE)  # inside the notch
    assert not point_in_polygon(-1, 5, CONCAVE) and not point_in_polygon(11, 5, CONCAVE)


def test_polygon_boundary_follows_ray_casting_arithmetic() -> None:
    square = ((0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0))
    # vertices: only the one with smallest x and y is inside (half-open rule)
    assert point_in_polygon(0, 0, square)
    assert not point_in_polygon(4, 0, square)
    assert not point_in_polygon(4, 4, square)
    assert not point_in_polygon(0, 4, square)
    # edges of smaller x / smaller y in, larger x / larger y out
    assert point_in_polygon(0, 2, square) and point_in_polygon(2, 0, square)
    assert not point_in_polygon(4, 2, square) and not point_in_polygon(2, 4, square)
    # the reflex vertex (the notch tip) lies on the boundary: the arithmetic puts it inside
    assert point_in_polygon(5, 4, CONCAVE)
    assert not point_in_polygon(5, 4.001, CONCAVE)
    assert Polygon(CONCAVE).contains(5, 2)


def test_point_in_box_is_literal() -> None:
    assert point_in_box(1, 1, 1, 1, 1, 1)
    assert not point_in_box(1, 1, 2, 2, 0, 0)


def test_abstention_hits_only_absent_targets() -> None:
    assert candidate_hits(Absent(), Candidate(None))
    assert not candidate_hits(Absent(), Candidate((1.0, 1.0)))
    assert not candidate_hits(Box(0, 0, 10, 10), Candidate(None))
    assert not candidate_hits(Box(0, 0, 10, 10), None)


def test_unparsed_slot_never_hits_not_even_a_refusal() -> None:
    unparsed = Candidate(None, raw="no idea", parsed=False)
    assert not unparsed.abstains
    assert candidate_hits(Absent(), unparsed) is False
    assert candidate_hits(Box(0, 0, 10, 10), unparsed) is False
    r = score_sample(_sample(Absent()), Prediction("b", "0", (unparsed, unparsed, Candidate(None))), k=5)
    assert r.hits == (False, False, True)
    assert [r.hit_at(j) for j in (1, 2, 3)] == [False, False, True]
    assert not r.top1["first"] and not r.top1["critic"] and not r.format_error


def test_score_sample_hits_at_k_and_strategies() -> None:
    s = _sample(Box(40, 40, 60, 60))
    cands = (
        Candidate((10.0, 10.0), 0.2),
        Candidate((50.0, 50.0), 0.9),
        Candidate((52.0, 52.0), 0.1),
        Candidate((90.0, 90.0), 0.95),
        Candidate((55.0, 45.0), 0.0),
        Candidate((45.0, 45.0), 1.0),  # beyond K=5: ignored by every measure
    )
    r = score_sample(s, Prediction("b", "0", cands), k=5)
    assert r.hits == (False, True, True, False, True)
    assert [r.hit_at(j) for j in range(1, 6)] == [False, True, True, True, True]
    assert r.oracle and not r.format_error
    assert r.top1["critic"] is False  # 0.95 wins among the first 5
    assert r.top1["first"] is False
    assert r.top1["medoid"] is True
    assert len(r.candidates) == 5


def test_missing_answer_is_a_counted_miss() -> None:
    s = _sample(Box(0, 0, 100, 100))
    r = score_sample(s, Prediction("b", "0", (), format_error=True, raw="garbage"), k=5)
    assert r.format_error and not r.oracle and not any(r.top1.values()) and r.raw == "garbage"
    r2 = score_sample(s, Prediction("b", "0", ()), k=5)
    assert r2.format_error


def test_refusal_sample() -> None:
    s = _sample(Absent())
    r = score_sample(s, Prediction("b", "0", (Candidate((5.0, 5.0)), Candidate(None), Candidate(None))), k=5)
    assert r.hits == (False, True, True)
    assert not r.top1["first"] and r.top1["mean"]  # majority abstains -> spatial strategies abstain
    assert r.abstained("mean") and not r.abstained("first")


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError):
        score_sample(_sample(Absent()), Prediction("b", "0"), k=0)


# -- an unparsed answer never hits a refusal target, through a run ---------------------------------


def _slot_hits(sample: Sample, slot: Any) -> bool:
    """The replay file's slot against the sample, by docs/replay-import-explain.md's rules (written here)."""
    if slot == "unparsed":
        return False
    if slot is None or (slot[0] < 0 and slot[1] < 0):
        return isinstance(sample.region, Absent)
    return sample.region.contains(float(slot[0]), float(slot[1]))


def test_unparsed_slots_on_refusals_do_not_raise_oracle_end_to_end(demo_suite: Path, tmp_path: Path) -> None:
    samples = load_samples(demo_suite, "osworld_g")
    refusals = [s.id for s in samples if isinstance(s.region, Absent)]
    assert len(refusals) >= 2
    by_id = {
        r["id"]: r for r in read_lines(demo_suite / "predictions.jsonl") if r["benchmark"] == "osworld_g"
    }
    # every refusal answered by garbage only, except one whose abstention comes third
    for sid in refusals:
        by_id[sid] = {
            "benchmark": "osworld_g",
            "id": sid,
            "candidates": ["unparsed"] * 5,
            "scores": [0.9, 0.8, 0.7, 0.6, 0.5],
        }
    by_id[refusals[-1]]["candidates"] = ["unparsed", "unparsed", None, "unparsed", "unparsed"]
    path = write_lines(tmp_path / "p.jsonl", list(by_id.values()))
    doc = replay_run(demo_suite, path, tmp_path / "o", "benchmarks=[osworld_g]")
    e = doc["benchmarks"]["osworld_g"]

    n = len(samples)
    for j in range(1, 6):
        hits = sum(any(_slot_hits(s, c) for c in by_id[s.id]["candidates"][:j]) for s in samples)
        assert e[f"oracle@{j}"] == pytest.approx(100 * hits / n), j
    refusal = e["breakdown"]["category"]["refusal"]
    assert refusal["samples"] == len(refusals)
    assert refusal["oracle@5"] == pytest.approx(100 / len(refusals))  # the one real abstention
    assert refusal["top1"] == 0.0  # the critic picks the first (unparsed) slot everywhere
    assert e["unparsed_candidates"] == 5 * len(refusals) - 1


class _Garbage:
    """A sampling backend whose every sampled text is unparseable."""

    TEXTS = ("I am not sure", "lorem ipsum", "((", "the button", "?")

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        return width, height

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        return [Generation([self.TEXTS[i % 5] for i in range(r.num_sequences)]) for r in requests]

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        return [0.5] * len(requests)

    def settings(self) -> dict[str, Any]:
        return {"backend": "garbage"}


def test_sampling_proposer_garbage_on_refusals_scores_zero(demo_suite: Path) -> None:
    bench = get_benchmark("osworld_g")
    refusals = [s for s in load_samples(demo_suite, "osworld_g") if isinstance(s.region, Absent)]
    settings = AdapterSettings(convention="abs_original", proposer="sampling", critic="none", k=5)
    results = evaluate_samples(GroundingPolicy(_Garbage(), settings), refusals, k=5)
    assert all(len(r.candidates) == 5 and not any(c.parsed for c in r.candidates) for r in results)
    e = benchmark_metrics(bench, results, k=5, strategy="critic")
    assert e["samples"] == len(refusals)
    assert e["oracle@5"] == 0.0 and e["top1"] == 0.0 and e["official"]["oracle@5"] == 0.0
    assert all(v == 0.0 for v in e["selection"].values())
    assert e["format_errors"] == len(refusals) and e["abstentions"] == 0
    assert e["unparsed_candidates"] == 5 * len(refusals)
