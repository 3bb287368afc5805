"""The four loaders added for issue 18 against the real records in ../shared/benchmarks (skipped when absent).

ScreenSpot (v1), showdown-clicks and CAGUI grounding come without screenshots: a module fixture lays
placeholder PNGs of the true sizes (one small PNG per distinct size, hard-linked to every path) beside
symbolic links to the real annotation files. The expected counts are FORMATS.md's (sections 7-9), and
the v1 / v2 overlap and the cell means are recomputed here from the raw records, not from the loader.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from real_records import SHARED, Placeholders, link, load_json

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import BenchmarkOptions, LoadedBenchmark
from gge.benchmarks.cagui_grounding import BBOX2TEXT_NOTE
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, Prediction, Sample

NEW = ("screenspot_v1", "showdown_clicks", "cagui_grounding")

if not all((SHARED / name).is_dir() for name in NEW):
    pytest.skip(f"real annotation records not present ({SHARED})", allow_module_level=True)

SPLITS = ("mobile", "desktop", "web")


def raw_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("real_new")
    pngs = base / "pngs"
    pngs.mkdir()
    lay = Placeholders(pngs).lay

    v1 = base / "screenspot_v1"
    for split in SPLITS:
        link(SHARED / "screenspot_v1" / f"screenspot_{split}.json", v1 / f"screenspot_{split}.json")
    for name, size in load_json(SHARED / "screenspot_v1" / "image_sizes.json").items():
        lay(v1 / "screenspot_imgs" / name, size)

    v2 = base / "screenspot_v2"
    for split in SPLITS:
        link(SHARED / "screenspot_v2" / f"screenspot_{split}_v2.json", v2 / f"screenspot_{split}_v2.json")
    for name, size in load_json(SHARED / "screenspot_v2" / "image_sizes.json").items():
        lay(v2 / "screenspotv2_image" / name, size)

    showdown = base / "showdown_clicks"
    dev = SHARED / "showdown_clicks" / "showdown-clicks-dev"
    link(dev / "data.csv", showdown / "showdown-clicks-dev" / "data.csv")
    with (dev / "data.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            lay(showdown / "showdown-clicks-dev" / row["image"], (int(row["width"]), int(row["height"])))

    cagui = base / "cagui" / "CAGUI_grounding"  # the root given is the folder holding CAGUI_grounding/
    for name in ("cap", "ocr"):
        link(SHARED / "cagui_grounding" / "code" / f"{name}.jsonl", cagui / "code" / f"{name}.jsonl")
    prefix = "grounding_eval/dataset/images/"
    for record_path, size in load_json(SHARED / "cagui_grounding" / "image_sizes.json").items():
        rest = record_path[len(prefix) :]
        lay(cagui / "images" / (rest if rest.startswith("ocr/") else f"cap/{rest}"), size)

    bare = base / "cagui_bare" / "CAGUI_grounding"  # records only: sizes from abs / rel
    for name in ("cap", "ocr"):
        link(SHARED / "cagui_grounding" / "code" / f"{name}.jsonl", bare / "code" / f"{name}.jsonl")
    return {
        "screenspot_v1": v1,
        "screenspot_v2": v2,
        "showdown_clicks": showdown,
        "cagui_grounding": base / "cagui",
        "cagui_bare": bare,
    }


def load(roots: dict[str, Path], key: str, name: str | None = None) -> LoadedBenchmark:
    bench = get_benchmark(name or key)
    return bench.load(roots[key], bench.options_type())


# ------------------------------------------------------------------------------------------------
# ScreenSpot (v1)


def test_v1_counts_per_cell_images_and_sources(roots: dict[str, Path]) -> None:
    loaded = load(roots, "screenspot_v1")
    s = loaded.samples
    assert len(s) == 1272
    cells = Counter((x.labels["split"], x.labels["data_type"]) for x in s)
    assert cells == {
        ("mobile", "text"): 273,
        ("mobile", "icon"): 229,
        ("desktop", "text"): 194,
        ("desktop", "icon"): 140,
        ("web", "text"): 230,
        ("web", "icon"): 206,
    }
    images = {split: {x.image_path for x in s if x.labels["split"] == split} for split in SPLITS}
    assert [len(images[k]) for k in SPLITS] == [201, 210, 199]
    assert len(set().union(*images.values())) == 610
    assert Counter(x.labels["data_source"] for x in s) == {
        "ios": 255,
        "android": 247,
        "macos": 172,
        "windows": 162,
        "tool": 139,
        "shop": 119,
        "gitlab": 89,
        "forum": 89,
    }
    assert [x.id for x in s[:2]] == ["mobile_0", "mobile_1"] and s[-1].id == "web_435"
    assert loaded.summary["variant"] == {"version": "v1"}
    # image_sizes.json covers 586 of the 610 images: the samples on the other 24 are listed as unreadable
    sized = set(load_json(SHARED / "screenspot_v1" / "image_sizes.json"))
    unreadable = [x for x in s if os.path.basename(x.image_path) not in sized]
    assert len({x.image_path for x in unreadable}) == 24
    assert loaded.summary["unreadable_images"] == len(unreadable)


def test_v1_boxes_are_xywh_normalised_by_the_header_size(roots: dict[str, Path]) -> None:
    s = {x.id: x for x in load(roots, "screenspot_v1").samples}
    rec = load_json(SHARED / "screenspot_v1" / "screenspot_mobile.json")[0]
    size = tuple(load_json(SHARED / "screenspot_v1" / "image_sizes.json")[rec["img_filename"]])
    x, y, w, h = rec["bbox"]
    sample = s["mobile_0"]
    assert sample.image_size == size
    assert isinstance(sample.region, Box) and sample.region.space == "normalized"
    assert (sample.region.x1, sample.region.y1) == (x / size[0], y / size[1])
    assert (sample.region.x2, sample.region.y2) == ((x + w) / size[0], (y + h) / size[1])
    # the SeeClick test on [0, 1] points: a pixel point on the far edge hits, one pixel beyond misses
    assert sample.region.contains(x + w, y + h) and not sample.region.contains(x + w + 1, y + h)


def test_v1_is_not_v2(roots: dict[str, Path]) -> None:
    def key(x: Sample) -> tuple[str, tuple[float, ...], str]:
        assert isinstance(x.region, Box)
        return os.path.basename(x.image_path), tuple(round(v, 6) for v in x.region.pixel_box()), x.instruction

    v1 = Counter(key(x) for x in load(roots, "screenspot_v1").samples)
    v2 = Counter(key(x) for x in load(roots, "screenspot_v2").samples)
    assert sum(v1.values()) == sum(v2.values()) == 1272
    assert sum((v1 & v2).values()) == 829
    v2_splits = Counter(x.labels["split"] for x in load(roots, "screenspot_v2").samples)
    assert (v2_splits["mobile"], v2_splits["web"]) == (501, 437)


def test_v1_headline_is_the_mean_of_the_six_cells(roots: dict[str, Path]) -> None:
    bench = get_benchmark("screenspot_v1")
    samples = load(roots, "screenspot_v1").samples
    wanted = {  # hits chosen per cell: the first h samples of the cell are hit (their box centre)
        ("mobile", "text"): 200,
        ("mobile", "icon"): 100,
        ("desktop", "text"): 150,
        ("desktop", "icon"): 40,
        ("web", "text"): 170,
        ("web", "icon"): 60,
    }
    cell_sizes = {  # FORMATS.md, section 7
        ("mobile", "text"): 273,
        ("mobile", "icon"): 229,
        ("desktop", "text"): 194,
        ("desktop", "icon"): 140,
        ("web", "text"): 230,
        ("web", "icon"): 206,
    }
    seen: Counter[tuple[str, str]] = Counter()
    results = []
    for x in samples:
        cell = (str(x.labels["split"]), str(x.labels["data_type"]))
        assert isinstance(x.region, Box)
        x1, y1, x2, y2 = x.region.pixel_box()
        hit = seen[cell] < wanted[cell]
        seen[cell] += 1
        point = ((x1 + x2) / 2, (y1 + y2) / 2) if hit else (x2 + 40.0, y2 + 40.0)
        pred = Prediction(x.benchmark, x.id, (Candidate(point),))
        result = score_sample(x, pred, k=1)
        assert result.hits == (hit,), x.id
        results.append(result)
    entry = benchmark_metrics(bench, results, k=1, strategy="first")
    macro = sum(100 * wanted[cell] / n for cell, n in cell_sizes.items()) / 6
    micro = 100 * sum(wanted.values()) / 1272
    assert entry["top1"] == pytest.approx(macro)
    assert entry["official"]["rule"] == "macro_cells"
    assert entry["micro"]["top1"] == pytest.approx(micro)
    assert macro != pytest.approx(micro)


# ------------------------------------------------------------------------------------------------
# showdown-clicks


def test_showdown_counts_ids_sizes_and_boxes(roots: dict[str, Path]) -> None:
    loaded = load(roots, "showdown_clicks")
    s = loaded.samples
    assert len(s) == 557
    assert all(re.fullmatch(r"[0-9a-f]{16}", x.id) for x in s)
    assert len({x.labels["recording_id"] for x in s}) == 488
    assert len({x.image_path for x in s}) == 557
    assert Counter(x.labels["frame_size"] for x in s) == {"1280x800": 309, "1440x900": 201, "1470x956": 47}
    with (SHARED / "showdown_clicks" / "showdown-clicks-dev" / "data.csv").open(encoding="utf-8") as f:
        rows = {row["id"]: row for row in csv.DictReader(f)}
    for x in s:
        row = rows[x.id]
        assert x.image_size == (int(row["width"]), int(row["height"]))
        assert isinstance(x.region, Box) and x.region.space == "pixel" and x.region.integer_point
        assert x.region.pixel_box() == tuple(float(row[c]) for c in ("x1", "y1", "x2", "y2"))
        assert x.instruction == row["instruction"]
        assert x.image_path.endswith(os.path.join("showdown-clicks-dev", *row["image"].split("/")))
        assert x.labels["recording_id"] == row["recording_id"]
    assert loaded.summary["unreadable_images"] == 0 and loaded.summary["degenerate_boxes"] == 0
    assert loaded.summary["boxes_outside_image"] == 0


def test_showdown_reads_the_dev_folder_itself(roots: dict[str, Path]) -> None:
    bench = get_benchmark("showdown_clicks")
    nested = bench.load(roots["showdown_clicks"], BenchmarkOptions()).samples
    direct = bench.load(roots["showdown_clicks"] / "showdown-clicks-dev", BenchmarkOptions()).samples
    assert direct == nested


def test_showdown_declares_its_bootstrap_interval() -> None:
    ci = get_benchmark("showdown_clicks").headline_ci
    assert ci is not None and (ci.resamples, ci.confidence, ci.method) == (9999, 0.95, "percentile")


# ------------------------------------------------------------------------------------------------
# CAGUI grounding


def test_cagui_counts_ids_and_sizes(roots: dict[str, Path]) -> None:
    loaded = load(roots, "cagui_grounding")
    s = loaded.samples
    assert Counter(x.labels["subtask"] for x in s) == {"fun2point": 1500, "text2point": 1500}
    assert [x.id for x in s[:2]] == ["fun2point_0", "fun2point_1"]
    assert s[1500].id == "text2point_0" and s[-1].id == "text2point_1499"
    assert len({x.id for x in s}) == 3000
    raw = {f: raw_jsonl(SHARED / "cagui_grounding" / "code" / f"{f}.jsonl") for f in ("cap", "ocr")}
    assert len({r["id"] for r in raw["cap"]}) == 1410 and len({r["id"] for r in raw["ocr"]}) == 1447
    sizes = Counter(x.image_size for x in s)
    assert len(sizes) == 15 and sizes[(1080, 2400)] == 1254
    assert len({x.image_path for x in s}) == 3000
    assert loaded.summary["unreadable_images"] == 0
    assert BBOX2TEXT_NOTE in loaded.summary["notes"]
    assert get_benchmark("cagui_grounding").official.over == ("subtask",)


def test_cagui_image_paths_boxes_and_texts(roots: dict[str, Path]) -> None:
    s = {x.id: x for x in load(roots, "cagui_grounding").samples}
    base = roots["cagui_grounding"] / "CAGUI_grounding" / "images"
    for f, subtask, folder in (("cap", "fun2point", "cap"), ("ocr", "text2point", "ocr")):
        for i, rec in enumerate(raw_jsonl(SHARED / "cagui_grounding" / "code" / f"{f}.jsonl")):
            x = s[f"{subtask}_{i}"]
            assert x.image_path == str(base / folder / f"{i}.jpeg")  # n is the 0-based line number
            x1, y1, x2, y2 = (int(v) for v in rec["abs_position"].strip("<>").split(","))
            assert isinstance(x.region, Box) and x.region.pixel_box() == (x1, y1, x2, y2)
            assert x.instruction == rec["text"]
    assert s["text2point_416"].instruction == ""  # the one empty text, kept in the denominator


def test_cagui_sizes_from_the_positions_when_there_is_no_screenshot(roots: dict[str, Path]) -> None:
    loaded = get_benchmark("cagui_grounding").load(roots["cagui_bare"], BenchmarkOptions())
    sizes = load_json(SHARED / "cagui_grounding" / "image_sizes.json")
    by_path = {}
    for f, subtask in (("cap", "fun2point"), ("ocr", "text2point")):
        for i, rec in enumerate(raw_jsonl(SHARED / "cagui_grounding" / "code" / f"{f}.jsonl")):
            by_path[f"{subtask}_{i}"] = tuple(sizes[rec["image"]])
    assert {x.id: x.image_size for x in loaded.samples} == by_path
    assert loaded.summary["unreadable_images"] == 3000
    assert any("3000 image sizes from abs_position / rel_position" in n for n in loaded.summary["notes"])
