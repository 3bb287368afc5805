"""The new benchmarks' headlines through the real scoring path, on hand-made folders and answers.

- CAGUI: the headline is the mean of the two subtasks, not the micro mean (unequal subtask sizes make
  them differ: 1 of 3 Fun2Point hits and 1 of 1 Text2Point hits is (33.3 + 100) / 2 = 66.7, micro 50).
- ScreenSpot (v1): the headline is SeeClick's mean of the split x data_type cells present.
- showdown-clicks: its headline carries the official percentile bootstrap interval (9999 resamples).
- VenusBench-GD: a refusal target is hit only when the model's answer is the abstention ``(-1, -1)``
  read by the answer parser (FORMATS.md section 10: both coordinates negative), never by a point.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_new_loaders import (
    COLUMNS,
    PREFIX,
    ROWS,
    cagui_line,
    v1_record,
    venus_record,
    write_cagui,
    write_showdown,
    write_v1,
    write_venus,
)

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import BenchmarkOptions
from gge.models.parsing import parse_points
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import score_sample
from gge.types import Candidate, Prediction


def _answer(sample_id: str, text: str) -> Prediction:
    parsed = parse_points(text)  # the model's units are pixels here: the point is used as it reads
    assert not parsed.format_error, text
    return Prediction("b", sample_id, (Candidate(parsed.points[0], raw=text),))


def test_cagui_headline_is_the_mean_of_the_two_subtasks(tmp_path: Path) -> None:
    cap = [cagui_line(f"{PREFIX}0.jpeg") for _ in range(3)]  # box <10, 20, 110, 220> on each
    base = write_cagui(tmp_path / "CAGUI_grounding", cap=cap)
    bench = get_benchmark("cagui_grounding")
    samples = bench.load(base, BenchmarkOptions()).samples
    assert [s.id for s in samples] == ["fun2point_0", "fun2point_1", "fun2point_2", "text2point_0"]
    inside, outside = "(60, 100)", "(300, 500)"
    texts = {"fun2point_0": inside, "fun2point_1": outside, "fun2point_2": outside, "text2point_0": inside}
    results = [score_sample(s, _answer(s.id, texts[s.id]), k=1) for s in samples]
    entry = benchmark_metrics(bench, results, k=1, strategy="first")
    assert entry["official"]["rule"] == "macro_subtask"
    assert entry["top1"] == pytest.approx((100 / 3 + 100) / 2)
    assert entry["micro"]["top1"] == pytest.approx(50.0)


def test_cagui_edges_are_inclusive(tmp_path: Path) -> None:
    base = write_cagui(tmp_path / "CAGUI_grounding", cap=[cagui_line(f"{PREFIX}0.jpeg")])
    bench = get_benchmark("cagui_grounding")
    (sample, _) = bench.load(base, BenchmarkOptions()).samples
    hits = {
        text: score_sample(sample, _answer(sample.id, text), k=1).top1["first"]
        for text in ("(10, 20)", "(110, 220)", "(9.9, 20)", "(110, 220.1)")
    }
    assert hits == {"(10, 20)": True, "(110, 220)": True, "(9.9, 20)": False, "(110, 220.1)": False}


def test_venus_refusal_is_hit_only_by_the_parsed_abstention(tmp_path: Path) -> None:
    refusal = venus_record(bbox=[-1, -1, -1, -1])
    root = write_venus(tmp_path / "venus", {"refusal_grounding": [refusal, venus_record()]})
    bench = get_benchmark("venusbench_gd")
    refusal_sample, target = bench.load(root, bench.options_type()).samples
    answers = {"[-1, -1]": True, "(-1, -1)": True, "(-1, 5)": False, "(0, 0)": False, "(40, 20)": False}
    for text, hit in answers.items():
        assert score_sample(refusal_sample, _answer(refusal_sample.id, text), k=1).top1["first"] is hit, text
    # the ordinary target next to it: box [20, 10, 60, 30] in a 200 x 100 screenshot, an abstention misses
    assert score_sample(target, _answer(target.id, "(40, 20)"), k=1).top1["first"] is True
    assert score_sample(target, _answer(target.id, "(-1, -1)"), k=1).top1["first"] is False


def test_v1_headline_is_the_mean_of_the_cells(tmp_path: Path) -> None:
    # mobile/icon: 2 samples, 1 hit; mobile/text: 1 sample, 1 hit; desktop/text: 1 sample, 0 hits (write_v1)
    write_v1(tmp_path, [v1_record(), v1_record(), v1_record(data_type="text")])
    bench = get_benchmark("screenspot_v1")
    samples = bench.load(tmp_path, BenchmarkOptions()).samples  # box [10, 5, 30, 15] on 200 x 100
    texts = {"mobile_0": "(20, 10)", "mobile_1": "(100, 90)", "mobile_2": "(30, 15)", "desktop_0": "(0, 0)"}
    results = [score_sample(s, _answer(s.id, texts[s.id]), k=1) for s in samples]
    entry = benchmark_metrics(bench, results, k=1, strategy="first")
    assert entry["official"]["rule"] == "macro_cells"
    assert entry["top1"] == pytest.approx((50 + 100 + 0) / 3)
    assert entry["micro"]["top1"] == pytest.approx(50.0)


def test_showdown_headline_has_the_official_bootstrap_interval(tmp_path: Path) -> None:
    write_showdown(tmp_path, COLUMNS, ROWS)
    for frame in ("REC-A/1", "REC-A/2", "REC-B/9"):
        (tmp_path / "showdown-clicks-dev" / "frames" / f"{frame}.webp").parent.mkdir(
            parents=True, exist_ok=True
        )
    bench = get_benchmark("showdown_clicks")
    samples = bench.load(tmp_path, BenchmarkOptions()).samples
    inside = {s.id: f"({s.region.pixel_box()[0]}, {s.region.pixel_box()[1]})" for s in samples}
    results = [score_sample(s, _answer(s.id, inside[s.id]), k=1) for s in samples]
    entry = benchmark_metrics(bench, results, k=1, strategy="first")
    interval = entry["headline_interval"]
    assert interval == {
        "method": "percentile",
        "resamples": 9999,
        "confidence": 0.95,
        "seed": 0,
        "top1": [100.0, 100.0],
    }
