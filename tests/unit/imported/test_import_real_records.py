"""``gge import`` against the real ScreenSpot-Pro and OSWorld-G records (skipped without ../shared).

The logs are built here in each harness's layout from the records themselves (never copies of
published logs), the way a harness writes them: the official parallel script's layout has no id
and relative paths; Gelato drops OSWorld-G's refusal items. Expected counts come from the records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_records import SHARED, load_json

from gge.benchmarks import get_benchmark
from gge.models.imported import import_log
from gge.types import Sample

if not SHARED.is_dir():
    pytest.skip(f"real annotation records not present ({SHARED})", allow_module_level=True)


def _samples(name: str) -> list[Sample]:
    bench = get_benchmark(name)
    return bench.load(SHARED / bench.directory, bench.options_type()).samples


def _inside(x: float, y: float, box: list[float]) -> bool:
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def test_an_official_parallel_script_log_without_ids_matches_all_1581_samples(tmp_path: Path) -> None:
    details, expected_hits = [], 0
    files = sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json"))
    for f in files:
        for i, rec in enumerate(load_json(f)):
            x1, y1, x2, y2 = rec["bbox"]
            pred = [[(x1 + x2) / 2, (y1 + y2) / 2], [x2 + 1, y2 + 1], None][i % 3]
            hit = pred is not None and _inside(pred[0], pred[1], rec["bbox"])
            expected_hits += hit
            details.append(
                {
                    "img_path": f"./data/ScreenSpot-Pro/images/{rec['img_filename']}",
                    "prompt_to_evaluate": rec["instruction"],
                    "gt_type": "positive",
                    "task_filename": f.stem,
                    "pred": pred,
                    "bbox": rec["bbox"],
                    "correctness": "wrong_format" if pred is None else ("correct" if hit else "wrong"),
                }
            )
    log = tmp_path / "results.json"
    log.write_text(json.dumps({"details": details, "metrics": {}}))
    report = import_log("sspro_log", log, _samples("screenspot_pro"))
    m = report.matched
    assert (len(details), len(m.lines), m.unmatched, m.ambiguous, m.missing) == (1581, 1581, [], [], [])
    assert report.agree == 1581 and report.hits == expected_hits
    # each line went to the sample of its own record (same instruction and box)
    samples = {s.id: s for s in _samples("screenspot_pro")}
    for sid, line in m.lines.items():
        assert line.instruction == samples[sid].instruction
        assert line.box is not None and samples[sid].region.pixel_box() == pytest.approx(line.box)


def test_a_gelato_osworld_g_log_without_refusals_leaves_the_54_refusal_items_not_in_the_file(
    tmp_path: Path,
) -> None:
    records = load_json(SHARED / "osworld_g" / "benchmark" / "OSWorld-G.json")
    refusals = [r["id"] for r in records if r["box_type"] == "refusal"]
    results = []
    for r in records:
        if r["box_type"] == "refusal":
            continue  # the harness drops them unless --include-refusal
        c = r["box_coordinates"]
        bbox = [c[0], c[1], c[0] + c[2], c[1] + c[3]] if r["box_type"] == "bbox" else c
        results.append(
            {
                "img_filename": r["image_path"],
                "instruction": r["instruction"],
                "response": "(1, 1)",
                "is_correct": False,
                "predicted_click": [-1.0, -1.0],
                "error_msg": None,
                "bbox": bbox,
            }
        )
    log = tmp_path / "grounding_eval_osworld-g.json"
    log.write_text(json.dumps({"accuracy": 0.0, "sample_results": results}))
    report = import_log("gelato", log, _samples("osworld_g"))
    m = report.matched
    assert len(refusals) == 54 and len(results) == 510
    assert (len(m.lines), m.unmatched, m.ambiguous) == (510, [], [])
    assert sorted(m.missing) == sorted(refusals)
    assert report.agree == 510 and report.disagree == []
    assert "over the release's 564 samples (not in the file: a miss)" in report.headlines()
