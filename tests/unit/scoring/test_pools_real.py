"""Synthetic pools built from the real records of ../shared/benchmarks (skipped where absent).

Loaded as a run loads them (the screenshots are not needed: these records give each image's size), a
pool is built for every sample with a target, and on every benchmark: each gold hits and each
distractor misses by the benchmark's own rule (ScreenSpot-Pro's normalised boxes, OSWorld-G's
polygons, GroundUI's strict edges, showdown-clicks' integer points), every point lies on the screen,
and the samples whose screenshot holds another sample's target get ``other_element`` distractors:
who shares a screenshot is counted here from the record files themselves (grouped by the screenshot's
name, refusals and zero-area boxes left out), and a sample sharing one that got none is allowed only
where every other target on its screen overlaps its own (the other's point may fall inside it).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from real_records import SHARED, load_json

from gge.benchmarks import get_benchmark
from gge.scoring.pools import synthetic_pool, why_no_pool

pytestmark = pytest.mark.skipif(
    not SHARED.is_dir(), reason="the real records (../shared/benchmarks) are absent"
)


def _area(box: list[float]) -> bool:
    """Whether a corner box ``[x1, y1, x2, y2]`` has an area (a point box has none: no pool)."""
    return box[0] != box[2] and box[1] != box[3]


def _screens(name: str) -> list[tuple[str, bool]]:
    """Per record, in no particular order: its screenshot's name and whether it has a target (raw files)."""
    root = SHARED / name
    if name == "screenspot_pro":
        return [
            (r["img_filename"], True)
            for f in sorted((root / "annotations").glob("*.json"))
            for r in load_json(f)
        ]
    if name == "osworld_g":
        return [
            (r["image_path"], r["box_type"] != "refusal")
            for r in load_json(root / "benchmark" / "OSWorld-G.json")
        ]
    if name == "ui_vision":
        files = sorted((root / "annotations" / "element_grounding").glob("*.json"))
        return [(r["image_path"], _area(r["bbox"])) for f in files for r in load_json(f)]
    if name == "mmbench_gui":
        return [(f"{r['platform']}/{r['image_path']}", True) for r in load_json(root / "L2_annotations.json")]
    if name == "groundui_1k":
        lines = (root / "gui_grounding" / "metadata_1k.jsonl").read_text().splitlines()
        return [(r["image"], _area(r["bbox"])) for r in (json.loads(x) for x in lines if x.strip())]
    with (root / "showdown-clicks-dev" / "data.csv").open() as f:
        return [
            (r["image"], _area([float(r[k]) for k in ("x1", "y1", "x2", "y2")])) for r in csv.DictReader(f)
        ]


def _expected_with_others(screens: list[tuple[str, bool]]) -> int:
    """Samples with a target whose screenshot holds at least one other sample with a target."""
    per = Counter(name for name, target in screens if target)
    return sum(1 for name, target in screens if target and per[name] >= 2)


@pytest.mark.parametrize(
    "name", ["screenspot_pro", "osworld_g", "ui_vision", "mmbench_gui", "groundui_1k", "showdown_clicks"]
)
def test_every_gold_hits_every_distractor_misses_and_other_elements_come_from_the_same_screen(
    name: str, tmp_path: Path
) -> None:
    bench = get_benchmark(name)
    samples = bench.load(SHARED / bench.directory, bench.options_type()).samples
    entries, skipped = synthetic_pool(samples, n=4, kinds=("other_element", "near_miss", "random"), seed=0)
    by_id = {s.id: s for s in samples}
    assert len(entries) + sum(len(v) for v in skipped.values()) == len(samples)
    no_point = {"no point inside the target on the screen", "no point on the screen misses the target"}
    for why, ids in skipped.items():
        assert all(why == why_no_pool(by_id[i]) or why in no_point for i in ids), (name, why)
    for e in entries:
        s = by_id[e.id]
        w, h = s.image_size
        for i, (x, y) in enumerate(e.points):
            assert 0 <= x < w and 0 <= y < h, (name, e.id, i)
            assert s.region.contains(x, y) == (i in e.gold), (name, e.id, i, e.kinds[i])
    # who shares a screenshot with another target: counted from the record files, then per sample
    poolable = [x for x in samples if why_no_pool(x) is None]
    on: dict[str, list[Any]] = {}
    for x in poolable:
        on.setdefault(x.image_path, []).append(x)
    sharing = {x.id for group in on.values() if len(group) >= 2 for x in group}
    assert len(sharing) == _expected_with_others(_screens(name))
    for e in entries:
        s = by_id[e.id]
        if e.id not in sharing:
            assert "other_element" not in e.kinds  # alone on its screen: a random point instead
        elif "other_element" not in e.kinds:  # allowed only where every other target overlaps this one
            box = s.region.pixel_box()
            for o in on[s.image_path]:
                ob = o.region.pixel_box()
                if o.id != s.id:
                    assert ob[0] <= box[2] and box[0] <= ob[2] and ob[1] <= box[3] and box[1] <= ob[3], (
                        name,
                        e.id,
                    )
