"""A replay scores without the screenshots where the records give their sizes, figure for figure as with them.

A replay needs no pixels, only each screenshot's size, which ScreenSpot-Pro's, OSWorld-G's and
GroundUI's records state. Pinned: the same replay with the screenshots and with none gives the same
figures (every number of every benchmark entry), results.json says ``images: not read`` (``read``
with them, ``partly read`` with some), the console says how many were not present, and the report's
gallery draws the misses on blank canvases of the recorded sizes. On the real records of
../shared/benchmarks (skipped where absent): true-size placeholder screenshots against none, over a
predictions file of hits and misses made from the records' own targets.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from real_records import SHARED, Placeholders, load_json

from gge.benchmarks import get_benchmark
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box, Polygon

pytestmark = pytest.mark.slow

SAME_SIZE_KEYS = ("images", "images_not_read", "load")
"""Entry keys that say what was read, not what was scored (``load`` names the files present)."""


def _replay(
    root: Path, predictions: Path, out: Path, benchmarks: list[str], *more: str
) -> tuple[dict[str, Any], str]:
    buf = io.StringIO()
    args = [
        f"data_root={root}",
        f"model.predictions={predictions}",
        f"benchmarks=[{','.join(benchmarks)}]",
        f"output_dir={out}",
        "report_misses=4",
        *more,
    ]
    return run(parse_args(args), out=buf), buf.getvalue()


def _figures(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b: {k: v for k, v in e.items() if k not in SAME_SIZE_KEYS} for b, e in doc["benchmarks"].items()}


def _images(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.suffix.lower() in (".png", ".jpg", ".jpeg")]


def test_the_demo_sets_without_their_screenshots(demo_suite: Path, tmp_path: Path) -> None:
    benchmarks = ["screenspot_pro", "osworld_g"]
    root = tmp_path / "data"
    for name in benchmarks:
        shutil.copytree(demo_suite / name, root / name)
    predictions = demo_suite / "predictions.jsonl"
    with_files, _ = _replay(root, predictions, tmp_path / "with", benchmarks)
    assert {e["images"] for e in with_files["benchmarks"].values()} == {"read"}
    shots = _images(root)
    assert shots
    shots[0].unlink()  # one absent: partly read
    partly, printed = _replay(root, predictions, tmp_path / "partly", benchmarks)
    assert _figures(partly) == _figures(with_files)
    said = [e.get("images_not_read") for e in partly["benchmarks"].values() if e["images"] == "partly read"]
    assert said and all(n >= 1 for n in said)
    for shot in shots[1:]:
        shot.unlink()
    without, printed = _replay(root, predictions, tmp_path / "without", benchmarks)
    assert _figures(without) == _figures(with_files)
    for name in benchmarks:
        entry = without["benchmarks"][name]
        assert entry["images"] == "not read" and entry["image_errors"] == []
        assert (
            f"{name}: {entry['samples']} of {entry['samples']} screenshots not present: scored from"
            in printed
        )
    assert "missing screenshots" not in printed
    html = (tmp_path / "without" / "report.html").read_text()
    assert "screenshot not present: drawn on a blank canvas of its size" in html


def _real_roots(folder: Path) -> dict[str, Path]:
    """ScreenSpot-Pro and OSWorld-G's real records laid out with true-size placeholder screenshots."""
    lay = Placeholders(folder / "pngs").lay
    (folder / "pngs").mkdir(parents=True)
    roots: dict[str, Path] = {}
    pro = folder / "data" / "screenspot_pro"
    (pro / "annotations").mkdir(parents=True)
    for src in sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json")):
        shutil.copy(src, pro / "annotations" / src.name)
        for rec in load_json(src):
            lay(pro / "images" / rec["img_filename"], rec["img_size"])
    roots["screenspot_pro"] = pro
    osw = folder / "data" / "osworld_g"
    (osw / "benchmark").mkdir(parents=True)
    for src in sorted((SHARED / "osworld_g" / "benchmark").glob("*.json")):
        shutil.copy(src, osw / "benchmark" / src.name)
        for rec in load_json(src):
            lay(osw / "benchmark" / "images" / rec["image_path"], rec["image_size"])
    roots["osworld_g"] = osw
    return roots


def _predictions(roots: dict[str, Path], path: Path) -> dict[str, tuple[int, int]]:
    """One line per sample: its box's centre (a hit) for two samples in three, else a far corner.

    Returns each benchmark's boxes given their centre, and its samples.
    """
    lines = []
    centred: dict[str, tuple[int, int]] = {}
    for name, root in roots.items():
        bench = get_benchmark(name)
        samples = bench.load(root, bench.options_type()).samples
        hits = 0
        for i, s in enumerate(samples):
            region = s.region
            if isinstance(region, Box) and i % 3:
                w, h = region.size if region.space == "normalized" and region.size else (1, 1)
                point = [(region.x1 + region.x2) / 2 * w, (region.y1 + region.y2) / 2 * h]
                hits += 1
            elif isinstance(region, Polygon) and i % 3:
                xs, ys = [v[0] for v in region.vertices], [v[1] for v in region.vertices]
                point = [sum(xs) / len(xs), sum(ys) / len(ys)]
            else:
                point = [s.image_size[0] - 1.0, s.image_size[1] - 1.0]
            lines.append(json.dumps({"benchmark": name, "id": s.id, "candidates": [point]}))
        centred[name] = (hits, len(samples))
    path.write_text("\n".join(lines) + "\n")
    return centred


@pytest.mark.skipif(not SHARED.is_dir(), reason="the real records (../shared/benchmarks) are absent")
def test_the_real_records_without_screenshots(tmp_path: Path) -> None:
    roots = _real_roots(tmp_path)
    predictions = tmp_path / "predictions.jsonl"
    centred = _predictions(roots, predictions)
    root = tmp_path / "data"
    benchmarks = list(roots)
    with_files, _ = _replay(root, predictions, tmp_path / "with", benchmarks, "report_misses=0")
    for shot in _images(root):
        shot.unlink()
    without, _ = _replay(root, predictions, tmp_path / "without", benchmarks, "report_misses=0")
    assert _figures(without) == _figures(with_files)
    assert {e["images"] for e in without["benchmarks"].values()} == {"not read"}
    hits, n = centred["screenspot_pro"]  # boxes only: each centre a hit, each far corner a miss
    assert without["benchmarks"]["screenspot_pro"]["micro"]["top1"] == pytest.approx(100 * hits / n)
    assert all(e["image_errors"] == [] for e in without["benchmarks"].values())
