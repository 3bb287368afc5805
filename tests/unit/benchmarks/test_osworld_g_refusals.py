"""OSWorld-G's three denominators (``bench.osworld_g.refusals=scored|miss|excluded``) on one set of answers.

A tiny OSWorld-G folder (3 bbox, 2 polygon and 3 refusal records) and one fixed answer per sample:

======  ==========================  ========  ======  ==========
id      answer                      scored    miss    excluded
======  ==========================  ========  ======  ==========
b0      a point inside the box      hit       hit     hit
b1      a point outside             miss      miss    miss
b2      abstains (null)             miss      miss    miss
p0      a point inside the polygon  hit       hit     hit
p1      a point outside it          miss      miss    miss
r0      abstains (null)             hit       miss    (dropped)
r1      abstains ([-1, -1])         hit       miss    (dropped)
r2      a point                     miss      miss    (dropped)
======  ==========================  ========  ======  ==========

By hand: scored 4 / 8 = 50%, miss 2 / 8 = 25%, excluded 2 / 5 = 40%. FORMATS.md sections 3 and 11.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from osworld_g_folder import ANSWERS, EXPECTED, RECORDS, replay, write_folder, write_predictions
from paths import ROOT

from gge.benchmarks import get_benchmark
from gge.benchmarks.osworld_g import OSWorldGOptions
from gge.errors import GgeError
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import candidate_hits, score_sample
from gge.types import Absent, Box, Candidate, Polygon, Prediction

SHARED = ROOT.parent / "shared" / "benchmarks"


def _candidate(point: list[float] | None) -> Candidate:
    return Candidate(None if point is None or (point[0] < 0 and point[1] < 0) else (point[0], point[1]))


def _refusal_row(entry: Any) -> tuple[int, float] | None:
    (table,) = [t for t in entry["tables"] if t["rows"] == "box_type"]
    row = table["row_avg"].get("refusal")
    return None if row is None else (row["samples"], row["top1"])


@pytest.mark.parametrize("refusals", ["scored", "miss", "excluded"])
def test_three_denominators_through_the_metrics(tmp_path: Path, refusals: str) -> None:
    bench = get_benchmark("osworld_g")
    loaded = bench.load(write_folder(tmp_path), OSWorldGOptions(refusals=refusals))
    results = [
        score_sample(s, Prediction("osworld_g", s.id, (_candidate(ANSWERS[s.id]),)), k=1)
        for s in loaded.samples
    ]
    entry = benchmark_metrics(bench, results, k=1, strategy="first")
    samples, hits, top1, abstentions, refusal_row = EXPECTED[refusals]
    assert entry["samples"] == samples
    assert entry["top1"] == pytest.approx(top1, abs=1e-12)
    assert sum(r.top1["first"] for r in results) == hits
    assert entry["abstentions"] == abstentions
    assert _refusal_row(entry) == (None if refusal_row is None else pytest.approx(refusal_row))


def test_three_denominators_on_one_predictions_file(tmp_path: Path) -> None:
    """One predictions file replayed under each option: the headline, the variant and the report."""
    write_folder(tmp_path / "data")
    predictions = write_predictions(tmp_path / "p.jsonl")
    for refusals, (samples, _hits, top1, _abst, _row) in EXPECTED.items():
        extra = (
            [] if refusals == "scored" else [f"bench.osworld_g.refusals={refusals}"]
        )  # scored: the default
        out = tmp_path / refusals
        doc = replay(tmp_path / "data", predictions, out, *extra)
        entry = doc["benchmarks"]["osworld_g"]
        assert entry["samples"] == samples, refusals
        assert entry["top1"] == pytest.approx(top1, abs=1e-12), refusals
        variant = {"instructions": "original", "refusals": refusals, "denominator": samples}
        assert entry["load"]["variant"] == variant
        assert (
            json.loads((out / "results.json").read_text())["benchmarks"]["osworld_g"]["load"]["variant"]
            == variant
        )
        heading = f"instructions: original · refusals: {refusals} · denominator: {samples}"
        report = (out / "report.md").read_text(encoding="utf-8")
        assert f"## OSWorld-G — {samples} samples · {heading} · " in report
        assert f"({'osworld_g'} · {heading})" in (out / "report.html").read_text(encoding="utf-8")


def test_the_note_says_what_the_choice_means_and_which_is_official(tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    notes = {
        r: get_benchmark("osworld_g").load(folder, OSWorldGOptions(refusals=r)).summary["notes"]
        for r in ("scored", "miss", "excluded")
    }
    (scored,) = [n for n in notes["scored"] if n.startswith("refusals=")]
    (miss,) = [n for n in notes["miss"] if n.startswith("refusals=")]
    (excluded,) = [n for n in notes["excluded"] if n.startswith("refusals=")]
    assert "3 refusal samples are scored, only an abstention hits them (denominator 8)" in scored
    assert "the official rule" in scored and "not the official rule" not in scored
    assert "never hit, not even by an abstention (denominator 8)" in miss and "MAI-UI" in miss
    assert "not the official rule" in miss and "refusals=scored" in miss
    assert "3 refusal records are left out (denominator 5)" in excluded and "Gelato" in excluded
    assert "not the official rule" in excluded and "refusals=scored" in excluded


def test_the_refined_variant_takes_the_option(tmp_path: Path) -> None:
    bench = get_benchmark("osworld_g_refined")
    assert bench.options_type is OSWorldGOptions
    loaded = bench.load(write_folder(tmp_path), OSWorldGOptions(refusals="excluded"))
    assert [s.id for s in loaded.samples] == [sid for sid, kind, _ in RECORDS if kind != "refusal"]
    assert loaded.summary["variant"] == {"instructions": "refined", "refusals": "excluded", "denominator": 5}


def test_regions_of_each_option(tmp_path: Path) -> None:
    folder = write_folder(tmp_path)
    bench = get_benchmark("osworld_g")
    by = {r: bench.load(folder, OSWorldGOptions(refusals=r)).samples for r in ("scored", "miss", "excluded")}
    assert [s.region for s in by["scored"] if s.labels["box_type"] == "refusal"] == [Absent()] * 3
    assert [s.region for s in by["miss"] if s.labels["box_type"] == "refusal"] == [Absent(False)] * 3
    assert not any(isinstance(s.region, Absent) for s in by["excluded"])
    for r in ("miss", "excluded"):  # the other targets are the same
        others = [s for s in by["scored"] if s.labels["box_type"] != "refusal"]
        assert [(s.id, s.region) for s in by[r] if s.labels["box_type"] != "refusal"] == [
            (s.id, s.region) for s in others
        ]
    assert isinstance(by["scored"][3].region, Polygon) and by["scored"][0].region == Box(20, 10, 60, 40)


def test_an_absent_target_that_abstentions_do_not_hit() -> None:
    official, as_miss = Absent(), Absent(abstention_hits=False)
    assert candidate_hits(official, Candidate(None)) is True
    assert candidate_hits(as_miss, Candidate(None)) is False
    for region in (official, as_miss):
        assert candidate_hits(region, Candidate((0.0, 0.0))) is False  # a point never hits an absent target
        assert candidate_hits(region, Candidate(None, parsed=False)) is False  # nor an unparsed answer
        assert candidate_hits(region, None) is False
        assert region.kind == "refusal" and region.pixel_box() is None and not region.degenerate


@pytest.mark.parametrize("value", ["missed", "", "Scored"])
def test_an_unknown_value_is_refused_naming_the_option_and_the_choices(tmp_path: Path, value: str) -> None:
    folder = write_folder(tmp_path)
    for name in ("osworld_g", "osworld_g_refined"):
        with pytest.raises(GgeError) as e:
            get_benchmark(name).load(folder, OSWorldGOptions(refusals=value))
        msg = str(e.value)
        assert msg.startswith(f"bench.{name}.refusals={value!r}") and "\n" not in msg
        assert msg.endswith("must be scored, miss or excluded")


def test_an_unknown_value_on_the_command_line(tmp_path: Path) -> None:
    write_folder(tmp_path / "data")
    with pytest.raises(
        GgeError, match=r"bench\.osworld_g\.refusals='none': must be scored, miss or excluded"
    ):
        replay(
            tmp_path / "data",
            write_predictions(tmp_path / "p.jsonl"),
            tmp_path / "o",
            "bench.osworld_g.refusals=none",
        )


@pytest.mark.skipif(
    not (SHARED / "osworld_g").is_dir(), reason=f"real annotation records not present ({SHARED})"
)
@pytest.mark.parametrize("name", ["osworld_g", "osworld_g_refined"])
def test_real_records_564_564_510(name: str) -> None:
    """The real records: 564 with refusals scored or missed, 510 without; 54 refusals (FORMATS.md 3, 11).

    Every sample answered with an abstention: 54 / 564 hits when refusals are scored, none otherwise.
    """
    bench = get_benchmark(name)
    root = SHARED / "osworld_g"
    expected = {"scored": 564, "miss": 564, "excluded": 510}
    hits = {"scored": 54, "miss": 0, "excluded": 0}
    for refusals, n in expected.items():
        loaded = bench.load(root, OSWorldGOptions(refusals=refusals))
        assert len(loaded.samples) == n
        assert loaded.summary["variant"]["refusals"] == refusals
        assert loaded.summary["variant"]["denominator"] == n
        refusal_samples = [s for s in loaded.samples if s.labels["box_type"] == "refusal"]
        assert len(refusal_samples) == (0 if refusals == "excluded" else 54)
        note = next(x for x in loaded.summary["notes"] if x.startswith("refusals="))
        assert "the 54 refusal" in note and f"(denominator {n})" in note
        results = [score_sample(s, Prediction(name, s.id, (Candidate(None),)), k=1) for s in loaded.samples]
        entry = benchmark_metrics(bench, results, k=1, strategy="first")
        assert entry["top1"] == pytest.approx(100 * hits[refusals] / n, abs=1e-12)
