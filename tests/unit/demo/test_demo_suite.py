"""The synthetic demo suite: determinism, official layouts, special records, replay file, cache folder.

The records are read back here with a small independent reader that follows FORMATS.md (not gge's
loaders), so that these tests also cross-check the expected scores the generator writes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks.demo import demo_root, write_demo_suite
from gge.benchmarks.demo import suite as demo_suite
from gge.benchmarks.demo.suite import generate as suite_generate

NAMES = (
    "screenspot_v2",
    "screenspot_pro",
    "osworld_g",
    "osworld_g_refined",
    "ui_vision",
    "mmbench_gui",
    "ui_i2e_bench",
)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_suite(tmp_path_factory.mktemp("demo") / "suite", seed=0)


def tree_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------------
# An independent reader of the six layouts (FORMATS.md): id -> (image path, record size, region).
# A region is ("box", x1, y1, x2, y2) in pixels, ("poly", [(x, y), ...]) or ("absent",).


def samples(root: Path, name: str) -> dict[str, tuple[Path, tuple[int, int] | None, tuple[Any, ...]]]:
    out: dict[str, tuple[Path, tuple[int, int] | None, tuple[Any, ...]]] = {}
    if name == "screenspot_v2":
        base = root / "screenspot_v2"
        for split in ("mobile", "desktop", "web"):
            for i, r in enumerate(load_json(base / f"screenspot_{split}_v2.json")):
                x, y, w, h = r["bbox"]
                out[f"{split}_{i}"] = (
                    base / "screenspotv2_image" / r["img_filename"],
                    None,
                    ("box", x, y, x + w, y + h),
                )
    elif name == "screenspot_pro":
        base = root / "screenspot_pro"
        for f in sorted((base / "annotations").glob("*.json")):
            for r in load_json(f):
                size = tuple(r["img_size"])
                out[r["id"]] = (base / "images" / r["img_filename"], size, ("box", *r["bbox"]))
    elif name in ("osworld_g", "osworld_g_refined"):
        base = root / "osworld_g"
        file = "OSWorld-G.json" if name == "osworld_g" else "OSWorld-G_refined.json"
        for r in load_json(base / file):
            c = r["box_coordinates"]
            region: tuple[Any, ...]
            if r["box_type"] == "bbox":
                region = ("box", c[0], c[1], c[0] + c[2], c[1] + c[3])
            elif r["box_type"] == "polygon":
                region = ("poly", list(zip(c[::2], c[1::2], strict=True)))
            else:
                region = ("absent",)
            out[r["id"]] = (base / "images" / r["image_path"], tuple(r["image_size"]), region)
    elif name == "ui_vision":
        base = root / "ui_vision"
        for setting in ("basic", "functional", "spatial"):
            path = base / "annotations" / "element_grounding" / f"element_grounding_{setting}.json"
            for i, r in enumerate(load_json(path)):
                x1, y1, x2, y2 = r["bbox"]
                box = ("box", min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2))
                out[f"{setting}_{i}"] = (base / "images" / r["image_path"], tuple(r["image_size"]), box)
    elif name == "mmbench_gui":
        base = root / "mmbench_gui"
        for r in load_json(base / "L2_annotations.json"):
            w, h = r["image_size"]
            x1, y1, x2, y2 = (0 if v == -1 else v for v in r["bbox"])
            path = base / "offline_images" / r["platform"] / r["image_path"]
            out[str(r["index"])] = (path, (w, h), ("box", x1 * w, y1 * h, x2 * w, y2 * h))
    elif name == "ui_i2e_bench":
        base = root / "ui_i2e_bench"
        lines = [
            s
            for s in (base / "I2E-bench-annotation.jsonl").read_text(encoding="utf-8").splitlines()
            if s.strip()
        ]
        for i, line in enumerate(lines):
            r = json.loads(line)
            out[str(i)] = (base / r["image"], None, ("box", *r["bounding_box"]))
    return out


def in_polygon(x: float, y: float, vs: list[tuple[float, float]]) -> bool:
    inside, j = False, len(vs) - 1
    for i in range(len(vs)):
        (xi, yi), (xj, yj) = vs[i], vs[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            inside = not inside
        j = i
    return inside


def hit(region: tuple[Any, ...], point: list[float] | None) -> bool:
    if point is None:
        return bool(region[0] == "absent")
    x, y = point
    if region[0] == "box":
        return bool(region[1] <= x <= region[3] and region[2] <= y <= region[4])
    if region[0] == "poly":
        return in_polygon(x, y, list(region[1]))
    return False


def near_edge(region: tuple[Any, ...], point: list[float] | None) -> bool:
    """A point within 1 px of a box edge (an outcome that rounding could flip)."""
    if point is None or region[0] != "box" or region[1] > region[3] or region[2] > region[4]:
        return False
    x, y = point
    _, x1, y1, x2, y2 = region
    inside_band = x1 - 1 <= x <= x2 + 1 and y1 - 1 <= y <= y2 + 1
    deep = x1 + 1 <= x <= x2 - 1 and y1 + 1 <= y <= y2 - 1
    return inside_band and not deep


def predictions(root: Path) -> list[dict[str, Any]]:
    text = (root / "predictions.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def concave(vs: list[tuple[float, float]]) -> bool:
    signs = set()
    for i in range(len(vs)):
        (ax, ay), (bx, by), (cx, cy) = vs[i - 2], vs[i - 1], vs[i]
        cross = (bx - ax) * (cy - by) - (by - ay) * (cx - bx)
        if abs(cross) > 1e-9:
            signs.add(cross > 0)
    return len(signs) == 2


# --------------------------------------------------------------------------------------------------


def test_same_seed_gives_identical_bytes(root: Path, tmp_path: Path) -> None:
    again = write_demo_suite(tmp_path / "again", seed=0)
    assert tree_hashes(again) == tree_hashes(root)


def test_other_seed_differs(root: Path, tmp_path: Path) -> None:
    other = tree_hashes(write_demo_suite(tmp_path / "other", seed=1))
    mine = tree_hashes(root)
    assert other != mine
    assert other["predictions.jsonl"] != mine["predictions.jsonl"]


def test_per_benchmark_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="per_benchmark"):
        write_demo_suite(tmp_path / "x", per_benchmark=3)


def test_layout_files_where_formats_puts_them(root: Path) -> None:
    expected = [
        "screenspot_v2/screenspot_mobile_v2.json",
        "screenspot_v2/screenspot_desktop_v2.json",
        "screenspot_v2/screenspot_web_v2.json",
        "osworld_g/OSWorld-G.json",
        "osworld_g/OSWorld-G_refined.json",
        "osworld_g/classification_result.json",
        "ui_vision/annotations/element_grounding/element_grounding_basic.json",
        "ui_vision/annotations/element_grounding/element_grounding_functional.json",
        "ui_vision/annotations/element_grounding/element_grounding_spatial.json",
        "ui_vision/mapdict_cat2platform.json",
        "mmbench_gui/L2_annotations.json",
        "ui_i2e_bench/I2E-bench-annotation.jsonl",
        "predictions.jsonl",
    ]
    for rel in expected:
        assert (root / rel).is_file(), rel
    assert (root / "screenspot_v2" / "screenspotv2_image").is_dir()
    stems = {p.stem for p in (root / "screenspot_pro" / "annotations").glob("*.json")}
    folders = {p.name for p in (root / "screenspot_pro" / "images").iterdir()}
    assert len(stems) >= 5 and len(folders - stems) >= 3  # most folder names differ from the stems
    groups = {
        r["group"] for f in (root / "screenspot_pro" / "annotations").glob("*.json") for r in load_json(f)
    }
    assert groups == {"Dev", "Creative", "CAD", "Scientific", "Office", "OS"}
    assert {p.parent.name for p in (root / "ui_i2e_bench" / "screenshot").rglob("*.png")} == {
        "folder_1",
        "folder_2",
    }
    for p in root.rglob("*.json"):
        load_json(p)


@pytest.mark.parametrize("name", NAMES)
def test_images_exist_are_png_and_match_sizes(root: Path, name: str) -> None:
    seen: dict[Path, tuple[int, int]] = {}
    for sid, (path, size, _) in samples(root, name).items():
        assert path.is_file(), (sid, path)
        if path not in seen:
            assert path.read_bytes()[:8] == PNG_MAGIC
            with Image.open(path) as im:
                im.verify()
            with Image.open(path) as im:
                seen[path] = im.size
        if size is not None:
            assert seen[path] == size, sid
    assert len(seen) < len(samples(root, name))  # several samples per screenshot


def test_predictions_one_line_per_sample(root: Path) -> None:
    lines = predictions(root)
    keys = [(line["benchmark"], line["id"]) for line in lines]
    assert len(keys) == len(set(keys))
    assert {b for b, _ in keys} == set(NAMES)
    for name in NAMES:
        assert {i for b, i in keys if b == name} == set(samples(root, name)), name
    errors = 0
    for line in lines:
        assert isinstance(line["id"], str)
        assert len(line["candidates"]) <= 5
        assert len(line["scores"]) == len(line["candidates"])
        if line.get("format_error"):
            errors += 1
            assert line["candidates"] == [] and line["raw"]
        else:
            assert len(line["candidates"]) == 5
    assert len(NAMES) <= errors <= 2 * len(NAMES)  # about 1 in 40


def test_special_records(root: Path) -> None:
    osw = load_json(root / "osworld_g" / "OSWorld-G.json")
    polygons = [r["box_coordinates"] for r in osw if r["box_type"] == "polygon"]
    assert polygons and all(10 <= len(c) <= 42 and len(c) % 2 == 0 for c in polygons)
    assert any(concave(list(zip(c[::2], c[1::2], strict=True))) for c in polygons)
    refusals = [r for r in osw if r["box_type"] == "refusal"]
    assert refusals and all(r["box_coordinates"] == [0, 0, 0, 0] for r in refusals)
    refined = load_json(root / "osworld_g" / "OSWorld-G_refined.json")
    assert [r["id"] for r in refined] == [r["id"] for r in osw]
    assert 0 < sum(a["instruction"] != b["instruction"] for a, b in zip(osw, refined, strict=True)) < len(osw)
    classified = load_json(root / "osworld_g" / "classification_result.json")["classified"]
    assert set(classified) == set(demo_suite.OSWORLD_CATEGORIES)
    labelled = [e["id"] for ids in classified.values() for e in ids]
    assert len(labelled) > len(set(labelled))  # multi-label
    assert 0 < len({r["id"] for r in osw} - set(labelled)) < 5  # a few unclassified
    assert {e["id"] for e in classified["refusal"]} == {r["id"] for r in refusals}

    mmb = load_json(root / "mmbench_gui" / "L2_annotations.json")
    coords = [v for r in mmb for v in r["bbox"]]
    assert -1 in coords and all(v == -1 or 0 <= v <= 1 for v in coords)

    uiv = root / "ui_vision" / "annotations" / "element_grounding"
    boxes = [
        r["bbox"]
        for s in ("basic", "functional", "spatial")
        for r in load_json(uiv / f"element_grounding_{s}.json")
    ]
    assert any(b[0] > b[2] for b in boxes)
    platforms = {
        r["platform"]
        for s in ("basic", "functional", "spatial")
        for r in load_json(uiv / f"element_grounding_{s}.json")
    }
    mapped = {
        p for names in load_json(root / "ui_vision" / "mapdict_cat2platform.json").values() for p in names
    }
    assert {p.lower() for p in platforms} <= {p.lower() for p in mapped}
    assert platforms - mapped  # one platform differs in letter case only

    i2e = [
        json.loads(s) for s in (root / "ui_i2e_bench" / "I2E-bench-annotation.jsonl").read_text().splitlines()
    ]
    assert any(r["bounding_box"][0] == r["bounding_box"][2] for r in i2e)
    assert any(r["bounding_box"][0] > r["bounding_box"][2] for r in i2e)
    assert {r["el_type"] for r in i2e} != {r["el_type"].lower() for r in i2e}  # mixed case kept

    pro = [r for f in (root / "screenspot_pro" / "annotations").glob("*.json") for r in load_json(f)]
    assert sum(r["bbox"][1] == -1 for r in pro) == 1
    assert all(r["instruction_cn"] for r in pro)


def test_expected_scores_match_an_independent_reading(root: Path) -> None:
    manifest = load_json(root / "demo_manifest.json")["benchmarks"]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for line in predictions(root):
        by_name.setdefault(line["benchmark"], []).append(line)
    for name in NAMES:
        regions = {sid: region for sid, (_, _, region) in samples(root, name).items()}
        oracle = first = top = 0
        for line in by_name[name]:
            region = regions[line["id"]]
            cands = line["candidates"]
            assert not any(near_edge(region, p) for p in cands), (name, line["id"])
            hits = [hit(region, p) for p in cands]
            if hits:
                oracle += any(hits)
                first += hits[0]
                top += hits[max(range(len(hits)), key=lambda i: line["scores"][i])]
        n = len(by_name[name])
        got = (round(oracle / n, 4), round(first / n, 4), round(top / n, 4))
        exp = manifest[name]
        assert got == (exp["oracle_at_5"], exp["first"], exp["max_score"]), name
        assert exp["first"] < exp["max_score"] < exp["oracle_at_5"], name
    assert 0.8 <= manifest["screenspot_v2"]["oracle_at_5"] <= 0.95
    assert 0.4 <= manifest["screenspot_pro"]["oracle_at_5"] <= 0.6


def test_refusals_mostly_get_several_abstentions(root: Path) -> None:
    osw = {r["id"]: r for r in load_json(root / "osworld_g" / "OSWorld-G.json")}
    lines = [
        x
        for x in predictions(root)
        if x["benchmark"] == "osworld_g" and osw[x["id"]]["box_type"] == "refusal"
    ]
    several = [sum(p is None for p in x["candidates"]) >= 2 for x in lines]
    assert lines and sum(several) > len(lines) / 2


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("GGE_CACHE", str(tmp_path))
    yield tmp_path


def test_demo_root_generates_once(cache: Path) -> None:
    first = demo_root(seed=0)
    assert first == cache / f"demo-v{demo_suite.VERSION}-seed0"
    assert (first / "predictions.jsonl").is_file()
    stamp = (first / "predictions.jsonl").stat().st_mtime_ns
    assert demo_root(seed=0) == first
    assert (first / "predictions.jsonl").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in cache.iterdir()) == [first.name]  # no temporary folder left


def test_demo_root_uses_the_winner_of_a_race(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    final = cache / f"demo-v{demo_suite.VERSION}-seed7"

    def other_process_wins(out: Path, seed: int = 0, per_benchmark: int = 36) -> Path:
        (out / "mine.txt").write_text("loser")
        final.mkdir()
        (final / "theirs.txt").write_text("winner")
        return out

    monkeypatch.setattr(suite_generate, "write_demo_suite", other_process_wins)
    assert demo_root(seed=7) == final
    assert sorted(os.listdir(final)) == ["theirs.txt"]
    assert sorted(p.name for p in cache.iterdir()) == [final.name]


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_suite.main(["--out", str(tmp_path / "cli"), "--seed", "2", "--per-benchmark", "12"]) == 0
    assert str(tmp_path / "cli") in capsys.readouterr().out
    assert len(predictions(tmp_path / "cli")) == 7 * 12
