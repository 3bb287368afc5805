"""The loaders against the real annotation records in ../shared/benchmarks (skipped when absent).

The records come without screenshots: a session fixture lays placeholder PNGs of the true size
(one small 1-bit PNG per distinct size, hard-linked to every path of that size) beside symbolic links
to the real annotation files, so the loaders read the official layout unchanged.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from real_records import SHARED, Placeholders, link, load_json

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import BenchmarkOptions, LoadedBenchmark
from gge.benchmarks.screenspot_pro import ScreenSpotProOptions
from gge.errors import GgeError
from gge.types import Absent, Box, Polygon

if not SHARED.is_dir():
    pytest.skip(f"real annotation records not present ({SHARED})", allow_module_level=True)


@pytest.fixture(scope="session")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("real")
    pngs = base / "pngs"
    pngs.mkdir()
    lay = Placeholders(pngs).lay

    ss2 = base / "screenspot_v2"
    for split in ("mobile", "desktop", "web"):
        link(SHARED / "screenspot_v2" / f"screenspot_{split}_v2.json", ss2 / f"screenspot_{split}_v2.json")
    for name, size in load_json(SHARED / "screenspot_v2" / "image_sizes.json").items():
        lay(ss2 / "screenspotv2_image" / name, size)

    pro = base / "screenspot_pro"
    for f in sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json")):
        link(f, pro / "annotations" / f.name)
        for rec in load_json(f):
            lay(pro / "images" / rec["img_filename"], rec["img_size"])

    osw = base / "osworld_g"  # a repository folder holding benchmark/
    for name in ("OSWorld-G.json", "OSWorld-G_refined.json"):
        link(SHARED / "osworld_g" / "benchmark" / name, osw / "benchmark" / name)
    for rec in load_json(SHARED / "osworld_g" / "benchmark" / "OSWorld-G.json"):
        lay(osw / "benchmark" / "images" / rec["image_path"], rec["image_size"])

    mm = base / "mmbench_gui"
    link(SHARED / "mmbench_gui" / "L2_annotations.json", mm / "L2_annotations.json")
    for rec in load_json(SHARED / "mmbench_gui" / "L2_annotations.json"):
        lay(mm / "offline_images" / rec["platform"] / rec["image_path"], rec["image_size"])

    i2e = base / "ui_i2e_bench"
    link(SHARED / "ui_i2e_bench" / "I2E-bench-annotation.jsonl", i2e / "I2E-bench-annotation.jsonl")
    for name, size in load_json(SHARED / "ui_i2e_bench" / "image_sizes.json").items():
        lay(i2e / name, size)

    # UI-Vision: no public records; a few synthetic records in the official schema, with the real map.
    uiv = base / "ui_vision"
    eg = uiv / "annotations" / "element_grounding"
    link(SHARED / "ui_vision" / "mapdict_cat2platform.json", eg / "mapdict_cat2platform.json")
    lay(uiv / "images" / "a.png", (1920, 1080))
    platforms = ["vscode", "LIBREOFFICE CALC", "Mozilla Firefox", "gimp", "Kodi", "anki", "Nautilus"]
    for setting in ("basic", "functional", "spatial"):
        records = [
            {
                "image_path": "a.png",
                "prompt_to_evaluate": f"click {p}",
                "bbox": [10, 10, 50, 50],
                "image_size": [1920, 1080],
                "platform": p,
                "element_type": "button",
                "category": "x",
            }
            for p in platforms
        ]
        (eg / f"element_grounding_{setting}.json").write_text(json.dumps(records), encoding="utf-8")
    return {
        "screenspot_v2": ss2,
        "screenspot_pro": pro,
        "osworld_g": osw,
        "osworld_g_refined": osw,
        "mmbench_gui": mm,
        "ui_i2e_bench": i2e,
        "ui_vision": uiv,
    }


@pytest.fixture(scope="session")
def loaded(roots: dict[str, Path]) -> dict[str, LoadedBenchmark]:
    out = {}
    for name, root in roots.items():
        bench = get_benchmark(name)
        out[name] = bench.load(root, bench.options_type())
    return out


def counts(result: LoadedBenchmark, *keys: str) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(s.labels[k] for k in keys) for s in result.samples)


def one(result: LoadedBenchmark, sid: str) -> Any:
    (sample,) = [s for s in result.samples if s.id == sid]
    return sample


# ------------------------------------------------------------------------------------------------


def test_screenspot_v2(loaded: dict[str, LoadedBenchmark]) -> None:
    r = loaded["screenspot_v2"]
    assert len(r.samples) == r.summary["records"] == 1272
    assert counts(r, "split", "data_type") == {
        ("mobile", "text"): 290,
        ("mobile", "icon"): 211,
        ("desktop", "text"): 194,
        ("desktop", "icon"): 140,
        ("web", "text"): 234,
        ("web", "icon"): 203,
    }
    assert len({s.image_path for s in r.samples}) == 730
    assert {s.labels["data_source"] for s in r.samples} == {
        "ios",
        "android",
        "windows",
        "macos",
        "gitlab",
        "shop",
        "forum",
        "tool",
    }
    for split, n in (("mobile", 501), ("desktop", 334), ("web", 437)):
        ids = [s.id for s in r.samples if s.labels["split"] == split]
        assert ids == [f"{split}_{i}" for i in range(n)]
    # The one box past the image edge: kept as written, counted.
    edge = one(r, "mobile_449")
    assert edge.image_size == (2360, 1640)
    assert edge.region == Box(645, 625, 645 + 1716, 625 + 965)
    assert edge.region.contains(2361, 1590)
    assert r.summary["boxes_outside_image"] == 1
    assert r.summary["outside_image_ids"] == ["mobile_449"]
    assert r.summary["degenerate_boxes"] == 0
    assert r.summary["variant"] == {}
    assert sorted(r.summary["files"]) == [
        "screenspot_desktop_v2.json",
        "screenspot_mobile_v2.json",
        "screenspot_web_v2.json",
    ]


def test_screenspot_pro(loaded: dict[str, LoadedBenchmark]) -> None:
    r = loaded["screenspot_pro"]
    assert len(r.samples) == 1581
    assert counts(r, "group", "ui_type") == {
        ("Dev", "text"): 154,
        ("Dev", "icon"): 145,
        ("Creative", "text"): 198,
        ("Creative", "icon"): 143,
        ("CAD", "text"): 197,
        ("CAD", "icon"): 64,
        ("Scientific", "text"): 144,
        ("Scientific", "icon"): 110,
        ("Office", "text"): 177,
        ("Office", "icon"): 53,
        ("OS", "text"): 107,
        ("OS", "icon"): 89,
    }
    assert counts(r, "ui_type") == {("text",): 977, ("icon",): 604}
    assert len({s.image_path for s in r.samples}) == 1581
    assert {s.labels["platform"] for s in r.samples} == {"macos", "windows", "linux"}
    assert len(r.summary["files"]) == 26
    stems = {Path(f).stem for f in r.summary["files"]}
    assert all(re.fullmatch(r".+_\d+", s.id) and s.id.rsplit("_", 1)[0] in stems for s in r.samples)
    assert max(max(s.image_size) for s in r.samples) == 6016
    assert all(isinstance(s.region, Box) and s.region.space == "normalized" for s in r.samples)
    odd = one(r, "inventor_windows_60")
    assert odd.image_size == (3840, 1080)
    assert odd.region.y1 == -1 / 1080
    assert odd.region.pixel_box()[1] == pytest.approx(-1)
    assert odd.region.contains(143, 0)
    assert r.summary["outside_image_ids"] == ["inventor_windows_60"]
    assert r.summary["variant"] == {"language": "en"}


def test_screenspot_pro_cn_is_missing(roots: dict[str, Path]) -> None:
    bench = get_benchmark("screenspot_pro")
    with pytest.raises(GgeError, match=r"android_studio_macos\.json.*android_studio_macos_0.*instruction_cn"):
        bench.load(roots["screenspot_pro"], ScreenSpotProOptions(language="cn"))


@pytest.mark.parametrize("name", ["osworld_g", "osworld_g_refined"])
def test_osworld_g(loaded: dict[str, LoadedBenchmark], name: str) -> None:
    r = loaded[name]
    assert len(r.samples) == len({s.id for s in r.samples}) == 564
    assert counts(r, "box_type") == {("bbox",): 470, ("polygon",): 40, ("refusal",): 54}
    assert all(re.fullmatch(r"[A-Za-z0-9]{10}-\d+", s.id) for s in r.samples)
    kinds = Counter(type(s.region) for s in r.samples)
    assert kinds == {Box: 470, Polygon: 40, Absent: 54}
    sizes = [len(s.region.vertices) for s in r.samples if isinstance(s.region, Polygon)]
    assert min(sizes) == 5 and max(sizes) == 21
    assert all("category" not in s.labels for s in r.samples)
    assert any("classification_result.json" in n for n in r.summary["notes"])
    expected = "refined" if name.endswith("refined") else "original"
    assert r.summary["variant"] == {"instructions": expected, "refusals": "scored", "denominator": 564}
    assert r.summary["files"] == [f"benchmark/OSWorld-G{'_refined' if expected == 'refined' else ''}.json"]
    first = one(r, "0FOB4CLBT2-0")
    assert first.region == Box(1422.9, 326.4, 1422.9 + 26.679999999999836, 326.4 + 28.400000000000034)
    assert first.image_size == (1920, 1080)


def test_osworld_g_refined_rewrites_507(loaded: dict[str, LoadedBenchmark]) -> None:
    original = {s.id: s for s in loaded["osworld_g"].samples}
    refined = {s.id: s for s in loaded["osworld_g_refined"].samples}
    assert list(original) == list(refined)
    assert sum(original[i].instruction != refined[i].instruction for i in original) == 507
    assert all(original[i].region == refined[i].region for i in original)


def test_osworld_g_benchmark_folder_as_root(roots: dict[str, Path]) -> None:
    r = get_benchmark("osworld_g").load(roots["osworld_g"] / "benchmark", BenchmarkOptions())
    assert len(r.samples) == 564
    assert r.summary["files"] == ["OSWorld-G.json"]


def test_mmbench_gui(loaded: dict[str, LoadedBenchmark]) -> None:
    r = loaded["mmbench_gui"]
    assert len(r.samples) == 3594
    assert [s.id for s in r.samples] == [str(i) for i in range(3594)]
    assert counts(r, "grounding_type") == {("basic",): 1787, ("advanced",): 1807}
    assert counts(r, "data_type") == {("icon",): 1994, ("text",): 1600}
    assert counts(r, "platform") == {
        ("os_android",): 711,
        ("os_ios",): 644,
        ("os_linux",): 387,
        ("os_mac",): 691,
        ("os_web",): 618,
        ("os_windows",): 543,
    }
    assert all(isinstance(s.region, Box) and s.region.space == "normalized" for s in r.samples)
    assert all(f"/offline_images/{s.labels['platform']}/" in s.image_path for s in r.samples)
    assert r.summary["degenerate_boxes"] == 0
    assert r.summary["boxes_outside_image"] == 0


def test_ui_i2e_bench(loaded: dict[str, LoadedBenchmark]) -> None:
    r = loaded["ui_i2e_bench"]
    assert len(r.samples) == 1477
    assert [s.id for s in r.samples] == [str(i) for i in range(1477)]
    assert counts(r, "instr_type") == {("implicit",): 917, ("explicit",): 560}
    assert counts(r, "source") == {("mobile",): 705, ("desktop",): 519, ("web",): 253}
    assert {s.labels["el_type"] for s in r.samples} == {
        "button",
        "icon",
        "input",
        "dropdown",
        "toggle",
        "checkbox",
        "radio",
    }
    assert {s.labels["el_type_merged"] for s in r.samples} == {
        "button",
        "icon",
        "input",
        "dropdown",
        "toggle",
    }
    odd = ["309", "497", "555", "787", "1084", "1354"]
    assert r.summary["degenerate_boxes"] == 6
    assert r.summary["degenerate_ids"] == odd
    assert [s.id for s in r.samples if s.region.degenerate] == odd
    # Scored as written: zero-area boxes hit only on their point, inverted ones never.
    assert one(r, "497").region == Box(1587, 273, 1587, 273)
    assert one(r, "497").region.contains(1587, 273)
    assert not one(r, "497").region.contains(1587.5, 273)
    for sid in ("309", "1084", "1354"):
        box = one(r, sid).region
        corners = [(x, y) for x in (box.x1, box.x2) for y in (box.y1, box.y2)]
        assert not any(box.contains(x, y) for x, y in corners)
    assert one(r, "309").region == Box(1005, 473, 987, 473)
    sizes = load_json(SHARED / "ui_i2e_bench" / "image_sizes.json")
    first = r.samples[0]
    assert list(first.image_size) == sizes["screenshot/folder_1/13_3.png"]
    assert r.summary["outside_image_ids"] == ["309", "428"]


def test_ui_vision_real_category_map(loaded: dict[str, LoadedBenchmark]) -> None:
    r = loaded["ui_vision"]
    assert len(r.samples) == 21
    got = {
        s.labels["platform"]: s.labels["app_category"] for s in r.samples if s.labels["setting"] == "basic"
    }
    assert got == {
        "vscode": "Development",
        "LIBREOFFICE CALC": "Productivity",
        "Mozilla Firefox": "Browsers",
        "gimp": "Creativity",
        "Kodi": "Entertainment",
        "anki": "Education",
        "Nautilus": "other",
    }
    assert any("Nautilus" in n for n in r.summary["notes"])
    assert "annotations/element_grounding/mapdict_cat2platform.json" in r.summary["files"]
    assert [s.id for s in r.samples][:2] == ["basic_0", "basic_1"]


def test_summaries_are_json(loaded: dict[str, LoadedBenchmark]) -> None:
    for r in loaded.values():
        assert json.loads(json.dumps(r.summary)) == r.summary


@pytest.mark.slow
def test_eval_cli_on_real_layouts(
    roots: dict[str, Path], loaded: dict[str, LoadedBenchmark], tmp_path: Path
) -> None:
    """``eval.py model=replay`` on the real records: counts, headlines recomputed from the raw files."""
    import io

    from gge.benchmarks import DEFAULT_BENCHMARKS
    from gge.run.settings import parse_args
    from gge.run.standalone import run

    lines = []
    for name in DEFAULT_BENCHMARKS:
        for i, s in enumerate(loaded[name].samples):
            box = s.region.pixel_box()
            if isinstance(s.region, Absent):
                cands: list[Any] = [None]
            elif (i % 2 == 0 or name == "ui_i2e_bench") and isinstance(s.region, Box):
                cands = [[(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]]  # type: ignore[index]
            else:
                cands = [[s.image_size[0] + 100, s.image_size[1] + 100]]
            lines.append(json.dumps({"benchmark": name, "id": s.id, "candidates": cands, "scores": [1.0]}))
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    doc = run(
        parse_args(
            [
                f"data_root={roots['screenspot_v2'].parent}",
                f"model.predictions={preds}",
                f"output_dir={tmp_path / 'o'}",
            ]
        ),
        out=out,
    )
    b = doc["benchmarks"]
    assert {
        n: b[n]["samples"]
        for n in ("screenspot_v2", "screenspot_pro", "osworld_g", "mmbench_gui", "ui_i2e_bench")
    } == {
        "screenspot_v2": 1272,
        "screenspot_pro": 1581,
        "osworld_g": 564,
        "mmbench_gui": 3594,
        "ui_i2e_bench": 1477,
    }
    assert all(e["format_errors"] == 0 and not e["unmatched_predictions"] for e in b.values())

    # recomputed from the raw records, with nothing from gge
    pro_n = sum(len(load_json(f)) for f in (SHARED / "screenspot_pro" / "annotations").glob("*.json"))
    assert b["screenspot_pro"]["top1"] == pytest.approx(100 * ((pro_n + 1) // 2) / pro_n)

    osw = load_json(SHARED / "osworld_g" / "benchmark" / "OSWorld-G.json")
    hits = [r["box_type"] == "refusal" or (r["box_type"] == "bbox" and i % 2 == 0) for i, r in enumerate(osw)]
    assert b["osworld_g"]["top1"] == pytest.approx(100 * sum(hits) / len(osw))
    assert b["osworld_g"]["abstentions"] == 54

    mm = load_json(SHARED / "mmbench_gui" / "L2_annotations.json")
    per: dict[str, list[bool]] = {}
    for i, r in enumerate(mm):
        per.setdefault(r["grounding_type"], []).append(i % 2 == 0)
    official = sum(100 * sum(v) / len(v) for v in per.values()) / len(per)
    micro = 100 * sum(h for v in per.values() for h in v) / len(mm)
    assert official != pytest.approx(micro)  # macro is not micro on these records
    # the unqualified headline is the official (macro) one; hits over samples are under "micro"
    assert b["mmbench_gui"]["official"]["top1"] == pytest.approx(official)
    assert b["mmbench_gui"]["top1"] == pytest.approx(official)
    assert b["mmbench_gui"]["micro"]["top1"] == pytest.approx(micro)

    i2e = [
        json.loads(x)
        for x in (SHARED / "ui_i2e_bench" / "I2E-bench-annotation.jsonl").read_text().splitlines()
        if x.strip()
    ]
    # inverted boxes are never hit (no corner swap); a zero-area box is hit at its own centre
    i2e_hits = [
        r["bounding_box"][0] <= r["bounding_box"][2] and r["bounding_box"][1] <= r["bounding_box"][3]
        for r in i2e
    ]
    assert i2e_hits.count(False) == 3  # the release has three inverted boxes
    assert b["ui_i2e_bench"]["top1"] == pytest.approx(100 * sum(i2e_hits) / len(i2e))
    assert "## Summary" in out.getvalue()  # the console's summary; the tables are report.md's
    assert "By group" in (tmp_path / "o" / "report.md").read_text()
