"""ScreenSpot-Pro's ``gt_type`` (positive, negative, all) and ``inst_style``, as its official script.

On the demo suite's ScreenSpot-Pro folder: negatives are the records with their target absent (only an
abstention hits), ``all`` holds both (the negative copy as ``<id>_negative``), positives and negatives
are tabled apart beside the official blended tables, and a replay's numbers are counted by hand.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gge.benchmarks import get_benchmark
from gge.benchmarks.screenspot_pro import BLENDED, ScreenSpotProOptions
from gge.compare import compare_runs, load_run
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Absent, Box


def _bench_and_samples(demo_suite: Path, **options: str):  # type: ignore[no-untyped-def]
    opts = ScreenSpotProOptions(**options)
    bench = get_benchmark("screenspot_pro").configured(opts)
    return bench, bench.load(demo_suite / "screenspot_pro", opts)


def test_negative_reads_every_record_with_its_target_absent(demo_suite: Path) -> None:
    _, positive = _bench_and_samples(demo_suite)
    bench, negative = _bench_and_samples(demo_suite, gt_type="negative")
    assert [s.id for s in negative.samples] == [f"{s.id}_negative" for s in positive.samples]
    assert all(s.region == Absent() and s.labels["gt_type"] == "negative" for s in negative.samples)
    assert negative.summary["variant"] == {
        "language": "en",
        "gt_type": "negative",
        "inst_style": "instruction",
    }
    assert "gt_type" in bench.label_keys and "gt_type" not in get_benchmark("screenspot_pro").label_keys
    caveat = bench.headline_caveat(ScreenSpotProOptions(gt_type="negative"))
    assert caveat == (
        "negative instructions only (the official script's negative pass: only an abstention hits); gge asks "
        "with the model's own prompt, which offers no 'not there' answer unless its preset's does"
    )
    assert get_benchmark("screenspot_pro").headline_caveat(ScreenSpotProOptions()) is None


def test_all_holds_both_and_tables_them_apart_beside_the_blended_ones(demo_suite: Path) -> None:
    _, positive = _bench_and_samples(demo_suite)
    bench, both = _bench_and_samples(demo_suite, gt_type="all")
    n = len(positive.samples)
    assert len(both.samples) == 2 * n
    ids = [s.id for s in both.samples]
    assert ids[0::2] == [s.id for s in positive.samples]
    assert ids[1::2] == [f"{s.id}_negative" for s in positive.samples]
    assert isinstance(both.samples[0].region, Box) and both.samples[1].region == Absent()
    titles = [t.title for t in bench.tables]
    assert titles[:2] == ["By gt_type", "By group and gt_type"]
    assert titles[2:] == [t.title + BLENDED for t in get_benchmark("screenspot_pro").tables]


def test_inst_style_only_labels_the_run(demo_suite: Path) -> None:
    _, styled = _bench_and_samples(demo_suite, inst_style="action")
    _, plain = _bench_and_samples(demo_suite)
    assert [s.instruction for s in styled.samples] == [s.instruction for s in plain.samples]
    assert styled.summary["variant"]["inst_style"] == "action"
    assert styled.summary["notes"][-1].startswith("inst_style=action labels the run only")
    assert "inst_style" in ScreenSpotProOptions.NOT_PREDICTIVE
    with pytest.raises(GgeError, match=r"unknown screenspot_pro gt_type 'negatives'"):
        _bench_and_samples(demo_suite, gt_type="negatives")


def test_a_replay_of_both_counts_positives_and_negatives_by_hand(demo_suite: Path, tmp_path: Path) -> None:
    _, positive = _bench_and_samples(demo_suite)
    lines, pos_hits, neg_hits = [], 0, 0
    for i, s in enumerate(positive.samples):
        assert isinstance(s.region, Box)
        x1, y1, x2, y2 = s.region.pixel_box()
        centre = [(x1 + x2) / 2, (y1 + y2) / 2]
        hit_positive = i % 3 != 0  # every third positive answered far away
        lines.append({"id": s.id, "candidates": [centre if hit_positive else [-5000.0, 5.0]]})
        pos_hits += hit_positive
        abstains = i % 2 == 0  # every other negative abstains (a point with both coordinates negative)
        lines.append({"id": f"{s.id}_negative", "candidates": [[-1, -1] if abstains else centre]})
        neg_hits += abstains
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"benchmark": "screenspot_pro", **x}) + "\n" for x in lines))
    args = [f"data_root={demo_suite}", "bench.screenspot_pro.gt_type=all", f"model.predictions={preds}"]
    doc = run(
        parse_args([*args, f"output_dir={tmp_path / 'o'}", "benchmarks=[screenspot_pro]"]), out=io.StringIO()
    )
    e = doc["benchmarks"]["screenspot_pro"]
    n = len(positive.samples)
    assert e["samples"] == 2 * n and e["top1"] == pytest.approx(100.0 * (pos_hits + neg_hits) / (2 * n))
    by_type = e["tables"][0]
    assert by_type["title"] == "By gt_type"
    assert by_type["row_avg"]["positive"]["top1"] == pytest.approx(100.0 * pos_hits / n)
    assert by_type["row_avg"]["negative"]["top1"] == pytest.approx(100.0 * neg_hits / n)
    assert e["load"]["headline_caveat"].startswith("positives and negatives blended")
    # compare tables the runs as they were read: positives and negatives apart, the blended ones labelled
    run(
        parse_args([*args, f"output_dir={tmp_path / 'o2'}", "benchmarks=[screenspot_pro]"]), out=io.StringIO()
    )
    doc_c = compare_runs(load_run(tmp_path / "o"), load_run(tmp_path / "o2"), resamples=20)
    titles = [t["title"] for t in doc_c["benchmarks"]["screenspot_pro"]["tables"]]
    assert titles[:2] == ["By gt_type", "By group and gt_type"] and titles[2] == "By group" + BLENDED


def test_a_copy_is_not_read_as_negatives(tmp_path: Path) -> None:
    (tmp_path / "train-00000.parquet").write_bytes(b"PAR1")
    opts = ScreenSpotProOptions(gt_type="negative", source="parquet")
    from gge.benchmarks.hub import load_source

    with pytest.raises(
        GgeError, match=r"bench.screenspot_pro.gt_type=negative: reads the release's annotation"
    ):
        load_source(get_benchmark("screenspot_pro").configured(opts), tmp_path, opts)


def test_the_v2_variants_read_both_layouts_and_take_gt_type(demo_suite: Path, tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2_variants")
    loaded = bench.load(demo_suite / "screenspot_v2_variants", ScreenSpotProOptions())
    assert loaded.summary["files"] == ["desktop.json", "mobile.json", "web.json"]  # at the root, imgs/
    first = loaded.samples[0]
    assert "/imgs/" in first.image_path and set(first.labels) == {"ui_type", "platform", "application"}
    # the later layout: annotations/*.json and images/
    rec = {"img_filename": "a.png", "bbox": [10, 10, 30, 20], "img_size": [100, 50], "instruction": "open",
           "id": "web_0", "ui_type": "icon", "application": "shop", "platform": "web"}  # fmt: skip
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "web.json").write_text(json.dumps([rec]))
    later = bench.load(tmp_path, ScreenSpotProOptions())
    assert later.samples[0].image_path == str(tmp_path / "images" / "a.png")
    assert later.samples[0].region.contains(10, 10)  # ScreenSpot-Pro's rule: inclusive, normalised
    opts = ScreenSpotProOptions(gt_type="all")
    both = bench.configured(opts)
    assert [t.title for t in both.tables][:2] == ["By gt_type", "By platform and gt_type"]
    samples = both.load(tmp_path, opts).samples
    assert [(s.id, s.region) for s in samples][1] == ("web_0_negative", Absent())
