"""Unit tests of the six benchmark loaders on tiny layouts written by each test."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks import REGISTRY, get_benchmark
from gge.benchmarks.base import LoadedBenchmark
from gge.benchmarks.screenspot_pro import ScreenSpotProOptions
from gge.errors import GgeError
from gge.types import Absent, Box, Polygon, Region

SIZE = (200, 100)
"""Every test image is 200 x 100; every default target is the pixel box (20, 10)-(60, 40)."""


def png(path: Path, size: tuple[int, int] = SIZE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size).save(path)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def load(name: str, root: Path, **options: Any) -> LoadedBenchmark:
    bench = get_benchmark(name)
    return bench.load(root, bench.options_type(**options))


def assert_edges(region: Region, x1: float, y1: float, x2: float, y2: float) -> None:
    """Every point on the edges of the pixel box is a hit; a point just outside each edge is not."""
    xm, ym = (x1 + x2) / 2, (y1 + y2) / 2
    for x, y in [(x1, y1), (x2, y1), (x1, y2), (x2, y2), (xm, y1), (xm, y2), (x1, ym), (x2, ym)]:
        assert region.contains(x, y), (x, y)
    for x, y in [(x1 - 0.01, ym), (x2 + 0.01, ym), (xm, y1 - 0.01), (xm, y2 + 0.01)]:
        assert not region.contains(x, y), (x, y)


# ------------------------------------------------------------------------------------------------
# One tiny layout per benchmark: `write(root, records)` lays the records in the (first) annotation
# file, the other required files empty, and the default image.


@dataclass(frozen=True)
class Layout:
    name: str
    record: dict[str, Any]
    first_id: str
    annotation: str  # the file the records go to, relative to the root
    image_dir: str  # the folder the record's image path is joined to, relative to the root
    image_key: str
    write: Callable[[Path, list[dict[str, Any]]], None]

    def records(self, n: int = 1) -> list[dict[str, Any]]:
        return [copy.deepcopy(self.record) for _ in range(n)]

    def make(self, tmp: Path, records: list[dict[str, Any]] | None = None) -> Path:
        root = tmp / self.name
        self.write(root, self.records() if records is None else records)
        return root


def write_screenspot_v2(root: Path, records: list[dict[str, Any]]) -> None:
    write_json(root / "screenspot_mobile_v2.json", records)
    write_json(root / "screenspot_desktop_v2.json", [])
    write_json(root / "screenspot_web_v2.json", [])
    png(root / "screenspotv2_image" / "s.png")


def write_screenspot_pro(root: Path, records: list[dict[str, Any]]) -> None:
    write_json(root / "annotations" / "app_macos.json", records)
    png(root / "images" / "app_macos" / "shot.png")


def write_osworld_g(root: Path, records: list[dict[str, Any]]) -> None:
    write_json(root / "OSWorld-G.json", records)
    refined = copy.deepcopy(records)
    for r in refined:
        r["instruction"] = "refined " + str(r.get("instruction"))
    write_json(root / "OSWorld-G_refined.json", refined)
    png(root / "images" / "shot.png")


def write_ui_vision(root: Path, records: list[dict[str, Any]]) -> None:
    eg = root / "annotations" / "element_grounding"
    write_json(eg / "element_grounding_basic.json", records)
    write_json(eg / "element_grounding_functional.json", [])
    write_json(eg / "element_grounding_spatial.json", [])
    png(root / "images" / "eg" / "shot.png")


def write_mmbench_gui(root: Path, records: list[dict[str, Any]]) -> None:
    write_json(root / "L2_annotations.json", records)
    png(root / "offline_images" / "os_mac" / "shot.png")


def write_ui_i2e_bench(root: Path, records: list[dict[str, Any]]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records]
    (root / "I2E-bench-annotation.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    png(root / "screenshot" / "folder_1" / "a.png")


LAYOUTS = {
    "screenspot_v2": Layout(
        "screenspot_v2",
        {
            "img_filename": "s.png",
            "bbox": [20, 10, 40, 30],
            "instruction": "click",
            "data_type": "text",
            "data_source": "ios",
        },
        "mobile_0",
        "screenspot_mobile_v2.json",
        "screenspotv2_image",
        "img_filename",
        write_screenspot_v2,
    ),
    "screenspot_pro": Layout(
        "screenspot_pro",
        {
            "img_filename": "app_macos/shot.png",
            "bbox": [20, 10, 60, 40],
            "instruction": "click",
            "instruction_cn": "点击",
            "id": "app_macos_0",
            "application": "app",
            "platform": "macos",
            "img_size": list(SIZE),
            "ui_type": "text",
            "group": "Dev",
        },
        "app_macos_0",
        "annotations/app_macos.json",
        "images",
        "img_filename",
        write_screenspot_pro,
    ),
    "osworld_g": Layout(
        "osworld_g",
        {
            "id": "AAAAAAAAAA-0",
            "image_path": "shot.png",
            "image_size": list(SIZE),
            "instruction": "click",
            "box_type": "bbox",
            "box_coordinates": [20, 10, 40, 30],
            "GUI_types": ["Button"],
        },
        "AAAAAAAAAA-0",
        "OSWorld-G.json",
        "images",
        "image_path",
        write_osworld_g,
    ),
    "ui_vision": Layout(
        "ui_vision",
        {
            "image_path": "eg/shot.png",
            "prompt_to_evaluate": "click",
            "bbox": [20, 10, 60, 40],
            "image_size": list(SIZE),
            "platform": "VSCode",
            "element_type": "button",
            "category": "x",
        },
        "basic_0",
        "annotations/element_grounding/element_grounding_basic.json",
        "images",
        "image_path",
        write_ui_vision,
    ),
    "mmbench_gui": Layout(
        "mmbench_gui",
        {
            "index": 0,
            "image_path": "shot.png",
            "instruction": "click",
            "bbox": [0.1, 0.1, 0.3, 0.4],
            "image_size": list(SIZE),
            "data_type": "icon",
            "platform": "os_mac",
            "app_name": "finder",
            "grounding_type": "basic",
        },
        "0",
        "L2_annotations.json",
        "offline_images/os_mac",
        "image_path",
        write_mmbench_gui,
    ),
    "ui_i2e_bench": Layout(
        "ui_i2e_bench",
        {
            "image": "screenshot/folder_1/a.png",
            "instruction": "click",
            "bounding_box": [20, 10, 60, 40],
            "annotations": {"instr_type": "implicit"},
            "el_type": "Button",
            "source": "web",
        },
        "0",
        "I2E-bench-annotation.jsonl",
        "",
        "image",
        write_ui_i2e_bench,
    ),
}
NAMES = list(LAYOUTS)


# ------------------------------------------------------------------------------------------------
# Registry


def test_registry_holds_gges_benchmarks() -> None:
    new = {
        "screenspot_v1",
        "showdown_clicks",
        "cagui_grounding",
        "venusbench_gd",
        "groundui_1k",
        "groundui_18k",
        "webclick",
        "ruc",
        "screenspot_v2_variants",
    }
    new.add("records")
    assert set(REGISTRY) == {*NAMES, "osworld_g_refined", *new}
    for name, bench in REGISTRY.items():
        assert bench.name == name
        assert bench.directory == ("osworld_g" if name == "osworld_g_refined" else name)
        for table in bench.tables:
            assert table.rows in bench.label_keys
            assert table.cols is None or table.cols in bench.label_keys
        for avg in (bench.official, *bench.extra_averages):
            assert set(avg.over) <= set(bench.label_keys)
    assert REGISTRY["ui_vision"].official.over == ("setting",)
    assert REGISTRY["mmbench_gui"].official.over == ("grounding_type",)
    assert REGISTRY["screenspot_v2"].extra_averages[0].over == ("split", "data_type")
    assert REGISTRY["screenspot_pro"].official.over == ()


def test_unknown_benchmark_suggests_a_name() -> None:
    with pytest.raises(
        GgeError, match=r"unknown benchmark 'screenspot_pr' \(did you mean 'screenspot_pro'\?\)"
    ):
        get_benchmark("screenspot_pr")


@pytest.mark.parametrize("name", NAMES)
def test_default_layout_loads_with_a_summary(tmp_path: Path, name: str) -> None:
    layout = LAYOUTS[name]
    result = load(name, layout.make(tmp_path))
    (sample,) = result.samples
    assert sample.id == layout.first_id
    assert sample.benchmark == name
    assert sample.image_size == SIZE
    assert Path(sample.image_path).is_absolute() and Path(sample.image_path).is_file()
    assert sample.instruction == "click"
    assert all(isinstance(v, str) for v in sample.labels.values())
    assert_edges(sample.region, 20, 10, 60, 40)
    s = result.summary
    assert s["records"] == 1 and s["degenerate_boxes"] == 0 and s["boxes_outside_image"] == 0
    assert layout.annotation in s["files"]
    assert isinstance(s["variant"], dict) and isinstance(s["notes"], list)
    assert json.loads(json.dumps(s)) == s
    assert result.name == name and result.root == str(tmp_path / name)


# ------------------------------------------------------------------------------------------------
# Per-benchmark semantics


def test_screenspot_v2_ids_labels_and_xywh(tmp_path: Path) -> None:
    lay = LAYOUTS["screenspot_v2"]
    root = lay.make(tmp_path, lay.records(2))
    write_json(root / "screenspot_web_v2.json", [dict(lay.record, data_type="icon", data_source="gitlab")])
    result = load("screenspot_v2", root)
    assert [s.id for s in result.samples] == ["mobile_0", "mobile_1", "web_0"]
    assert result.samples[0].region == Box(20, 10, 60, 40)
    assert dict(result.samples[2].labels) == {"split": "web", "data_type": "icon", "data_source": "gitlab"}


def test_screenspot_v2_box_past_the_edge_is_kept_and_counted(tmp_path: Path) -> None:
    lay = LAYOUTS["screenspot_v2"]
    result = load("screenspot_v2", lay.make(tmp_path, [dict(lay.record, bbox=[150, 10, 51, 30])]))
    assert result.samples[0].region == Box(150, 10, 201, 40)
    assert result.samples[0].region.contains(201, 40)
    assert result.summary["boxes_outside_image"] == 1
    assert result.summary["outside_image_ids"] == ["mobile_0"]


def test_screenspot_v2_needs_all_three_files(tmp_path: Path) -> None:
    root = LAYOUTS["screenspot_v2"].make(tmp_path)
    (root / "screenspot_web_v2.json").unlink()
    (root / "screenspot_desktop_v2.json").unlink()
    with pytest.raises(GgeError, match=r"screenspot_desktop_v2\.json.*screenspot_web_v2\.json"):
        load("screenspot_v2", root)


def test_screenspot_pro_normalises_by_img_size(tmp_path: Path) -> None:
    lay = LAYOUTS["screenspot_pro"]
    odd = dict(lay.record, id="app_macos_1", bbox=[20, -1, 60, 40])
    result = load("screenspot_pro", lay.make(tmp_path, [lay.record, odd]))
    first, second = result.samples
    assert first.region == Box(0.1, 0.1, 0.3, 0.4, space="normalized", size=SIZE)
    assert dict(first.labels) == {
        "group": "Dev",
        "ui_type": "text",
        "platform": "macos",
        "application": "app",
    }
    assert second.region.y1 == -1 / 100  # kept as written, like inventor_windows_60
    assert second.region.contains(20, 0)
    assert result.summary["outside_image_ids"] == ["app_macos_1"]
    assert result.summary["variant"] == {"language": "en"}


def test_screenspot_pro_reads_every_file_sorted(tmp_path: Path) -> None:
    lay = LAYOUTS["screenspot_pro"]
    root = lay.make(tmp_path)
    write_json(root / "annotations" / "aaa_windows.json", [dict(lay.record, id="aaa_windows_0")])
    result = load("screenspot_pro", root)
    assert [s.id for s in result.samples] == ["aaa_windows_0", "app_macos_0"]
    assert result.summary["files"] == ["annotations/aaa_windows.json", "annotations/app_macos.json"]


def test_screenspot_pro_language_cn(tmp_path: Path) -> None:
    lay = LAYOUTS["screenspot_pro"]
    root = lay.make(tmp_path)
    result = load("screenspot_pro", root, language="cn")
    assert result.samples[0].instruction == "点击"
    assert result.summary["variant"] == {"language": "cn"}


def test_screenspot_pro_cn_without_instruction_cn(tmp_path: Path) -> None:
    lay = LAYOUTS["screenspot_pro"]
    rec = lay.records()[0]
    del rec["instruction_cn"]
    root = lay.make(tmp_path, [rec])
    with pytest.raises(GgeError, match=r"app_macos\.json: record app_macos_0 has no field 'instruction_cn'"):
        load("screenspot_pro", root, language="cn")


def test_screenspot_pro_unknown_language(tmp_path: Path) -> None:
    root = LAYOUTS["screenspot_pro"].make(tmp_path)
    with pytest.raises(GgeError, match=r"language 'fr'.*known: cn, en"):
        get_benchmark("screenspot_pro").load(root, ScreenSpotProOptions(language="fr"))


def test_screenspot_pro_needs_annotation_files(tmp_path: Path) -> None:
    root = tmp_path / "pro"
    (root / "annotations").mkdir(parents=True)
    with pytest.raises(GgeError, match=r"no annotation file \(\*\.json\) in .*annotations"):
        load("screenspot_pro", root)
    (root / "annotations").rmdir()
    with pytest.raises(GgeError, match=r"annotation folder not found: .*pro/annotations"):
        load("screenspot_pro", root)


def osworld_records() -> list[dict[str, Any]]:
    base = LAYOUTS["osworld_g"].record
    polygon = dict(
        base,
        id="AAAAAAAAAA-1",
        box_type="polygon",
        box_coordinates=[10, 10, 50, 10, 50, 50, 10, 50],
    )
    refusal = dict(base, id="AAAAAAAAAA-2", box_type="refusal", box_coordinates=[0, 0, 0, 0])
    return [copy.deepcopy(base), polygon, refusal]


def test_osworld_g_regions(tmp_path: Path) -> None:
    result = load("osworld_g", LAYOUTS["osworld_g"].make(tmp_path, osworld_records()))
    box, polygon, refusal = (s.region for s in result.samples)
    assert box == Box(20, 10, 60, 40)
    assert isinstance(polygon, Polygon)
    assert polygon.vertices == ((10, 10), (50, 10), (50, 50), (10, 50))
    # Even-odd ray casting: the smaller-x and smaller-y edges are in, the others out.
    assert polygon.contains(30, 30) and polygon.contains(10, 30) and polygon.contains(30, 10)
    assert not polygon.contains(50, 30) and not polygon.contains(30, 50)
    assert isinstance(refusal, Absent) and not refusal.contains(0, 0)
    assert [s.labels["box_type"] for s in result.samples] == ["bbox", "polygon", "refusal"]
    assert all("category" not in s.labels for s in result.samples)
    assert any("classification_result.json" in n for n in result.summary["notes"])
    assert result.summary["variant"] == {"instructions": "original", "refusals": "scored", "denominator": 3}


def test_osworld_g_categories(tmp_path: Path) -> None:
    root = LAYOUTS["osworld_g"].make(tmp_path, osworld_records())
    write_json(
        root / "classification_result.json",
        {
            "classified": {
                "text_matching": [{"id": "AAAAAAAAAA-0"}],
                "layout_understanding": [{"id": "AAAAAAAAAA-1"}, {"id": "AAAAAAAAAA-0"}],
            }
        },
    )
    result = load("osworld_g", root)
    assert [s.labels["category"] for s in result.samples] == [
        ("layout_understanding", "text_matching"),
        ("layout_understanding",),
        ("unclassified",),
    ]
    assert [n for n in result.summary["notes"] if not n.startswith("refusals=")] == []
    assert "classification_result.json" in result.summary["files"]


def test_osworld_g_bad_classification_file(tmp_path: Path) -> None:
    root = LAYOUTS["osworld_g"].make(tmp_path)
    write_json(root / "classification_result.json", {"text_matching": []})
    with pytest.raises(GgeError, match=r"classification_result\.json: expected \{\"classified\""):
        load("osworld_g", root)


def test_osworld_g_refined_variant_same_ids(tmp_path: Path) -> None:
    root = LAYOUTS["osworld_g"].make(tmp_path, osworld_records())
    original = load("osworld_g", root)
    refined = load("osworld_g_refined", root)
    assert [s.id for s in refined.samples] == [s.id for s in original.samples]
    assert refined.samples[0].instruction == "refined click"
    assert {s.benchmark for s in refined.samples} == {"osworld_g_refined"}
    assert refined.summary["variant"] == {"instructions": "refined", "refusals": "scored", "denominator": 3}
    assert refined.summary["files"] == ["OSWorld-G_refined.json"]


def test_osworld_g_root_may_contain_benchmark_folder(tmp_path: Path) -> None:
    repo = tmp_path / "OSWorld-G"
    write_osworld_g(repo / "benchmark", osworld_records())
    for name in ("osworld_g", "osworld_g_refined"):
        result = load(name, repo)
        assert len(result.samples) == 3
        assert result.samples[0].image_path == str(repo / "benchmark" / "images" / "shot.png")
    assert result.summary["files"] == ["benchmark/OSWorld-G_refined.json"]


def test_osworld_g_odd_polygon_is_rejected(tmp_path: Path) -> None:
    lay = LAYOUTS["osworld_g"]
    rec = dict(lay.record, box_type="polygon", box_coordinates=[1, 2, 3])
    with pytest.raises(GgeError, match=r"AAAAAAAAAA-0.*'box_coordinates'.*3 numbers"):
        load("osworld_g", lay.make(tmp_path, [rec]))
    rec = dict(lay.record, box_type="circle")
    with pytest.raises(GgeError, match=r"AAAAAAAAAA-0.*'box_type'.*'circle'"):
        load("osworld_g", lay.make(tmp_path, [rec]))


def test_ui_vision_swaps_inverted_corners(tmp_path: Path) -> None:
    lay = LAYOUTS["ui_vision"]
    inverted = dict(lay.record, bbox=[60, 40, 20, 10])
    half = dict(lay.record, bbox=[60, 10, 20, 40])
    result = load("ui_vision", lay.make(tmp_path, [inverted, half]))
    for sample in result.samples:
        assert sample.region == Box(0.1, 0.1, 0.3, 0.4, space="normalized", size=SIZE)
        assert_edges(sample.region, 20, 10, 60, 40)
    assert result.summary["degenerate_boxes"] == 0
    assert [s.id for s in result.samples] == ["basic_0", "basic_1"]


@pytest.mark.parametrize("where", [".", "annotations", "annotations/element_grounding"])
def test_ui_vision_app_category(tmp_path: Path, where: str) -> None:
    lay = LAYOUTS["ui_vision"]
    recs = [dict(lay.record, platform=p) for p in ("vscode", "LibreOffice Calc", "Nautilus")]
    root = lay.make(tmp_path, recs)
    write_json(
        root / where / "mapdict_cat2platform.json",
        {"Development": ["VSCode"], "Productivity": ["LibreOffice Calc"]},
    )
    result = load("ui_vision", root)
    assert [s.labels["app_category"] for s in result.samples] == ["Development", "Productivity", "other"]
    assert [s.labels["platform"] for s in result.samples] == ["vscode", "LibreOffice Calc", "Nautilus"]
    assert dict(result.samples[0].labels) == {
        "setting": "basic",
        "platform": "vscode",
        "element_type": "button",
        "app_category": "Development",
    }
    assert os.path.normpath(f"{where}/mapdict_cat2platform.json") in result.summary["files"]
    assert any("Nautilus" in n for n in result.summary["notes"])


def test_ui_vision_without_category_map(tmp_path: Path) -> None:
    result = load("ui_vision", LAYOUTS["ui_vision"].make(tmp_path))
    assert "app_category" not in result.samples[0].labels
    assert any("mapdict_cat2platform.json" in n for n in result.summary["notes"])


def test_ui_vision_image_path_relative_to_root(tmp_path: Path) -> None:
    lay = LAYOUTS["ui_vision"]
    root = lay.make(tmp_path, [dict(lay.record, image_path="element_grounding/x.png")])
    png(root / "element_grounding" / "x.png")
    assert load("ui_vision", root).samples[0].image_path == str(root / "element_grounding" / "x.png")
    png(root / "images" / "element_grounding" / "x.png")  # images/<p> wins when both exist
    assert load("ui_vision", root).samples[0].image_path == str(
        root / "images" / "element_grounding" / "x.png"
    )


def test_ui_vision_needs_all_three_settings(tmp_path: Path) -> None:
    root = LAYOUTS["ui_vision"].make(tmp_path)
    (root / "annotations" / "element_grounding" / "element_grounding_spatial.json").unlink()
    with pytest.raises(GgeError, match=r"annotation file not found: .*element_grounding_spatial\.json"):
        load("ui_vision", root)


def test_mmbench_gui_minus_one_becomes_zero(tmp_path: Path) -> None:
    lay = LAYOUTS["mmbench_gui"]
    rec = dict(lay.record, index=7, bbox=[-1, -1, 0.3, 0.4])
    result = load("mmbench_gui", lay.make(tmp_path, [lay.record, rec]))
    first, second = result.samples
    assert first.region == Box(0.1, 0.1, 0.3, 0.4, space="normalized", size=SIZE)
    assert second.id == "7"
    assert second.region == Box(0.0, 0.0, 0.3, 0.4, space="normalized", size=SIZE)
    assert second.region.contains(0, 0) and second.region.contains(60, 40)
    assert not second.region.contains(-1, 5)  # -1 kept would have been a hit
    assert result.summary["boxes_outside_image"] == 0
    assert dict(first.labels) == {
        "grounding_type": "basic",
        "platform": "os_mac",
        "data_type": "icon",
        "app_name": "finder",
    }
    assert first.image_path == str(tmp_path / "mmbench_gui" / "offline_images" / "os_mac" / "shot.png")


def test_ui_i2e_bench_boxes_as_written(tmp_path: Path) -> None:
    lay = LAYOUTS["ui_i2e_bench"]
    inverted = dict(lay.record, bounding_box=[60, 40, 20, 10])
    zero = dict(lay.record, bounding_box=[30, 30, 30, 30])
    result = load("ui_i2e_bench", lay.make(tmp_path, [lay.record, inverted, zero]))
    box, inv, pt = (s.region for s in result.samples)
    assert box == Box(20, 10, 60, 40)
    assert inv == Box(60, 40, 20, 10)
    assert not any(inv.contains(x, y) for x in (20, 40, 60) for y in (10, 25, 40))
    assert pt.contains(30, 30)
    assert not any(pt.contains(30 + dx, 30 + dy) for dx, dy in [(0.01, 0), (-0.01, 0), (0, 0.01), (0, -0.01)])
    assert result.summary["degenerate_boxes"] == 2
    assert result.summary["degenerate_ids"] == ["1", "2"]


def test_ui_i2e_bench_ids_and_labels(tmp_path: Path) -> None:
    lay = LAYOUTS["ui_i2e_bench"]
    root = lay.make(tmp_path, [])
    recs = [
        dict(lay.record, annotations={"instr_type": 2}, el_type="Checkbox", source="mobile"),
        dict(lay.record, annotations={"instr_type": 1}, el_type="radio"),
        dict(lay.record, annotations={"instr_type": "Explicit"}, el_type="Input"),
    ]
    text = f"{json.dumps(recs[0])}\n\n   \n{json.dumps(recs[1])}\n{json.dumps(recs[2])}\n\n"
    (root / "I2E-bench-annotation.jsonl").write_text(text, encoding="utf-8")
    result = load("ui_i2e_bench", root)
    assert [s.id for s in result.samples] == ["0", "1", "2"]
    assert [dict(s.labels) for s in result.samples] == [
        {"source": "mobile", "instr_type": "implicit", "el_type": "checkbox", "el_type_merged": "toggle"},
        {"source": "web", "instr_type": "explicit", "el_type": "radio", "el_type_merged": "toggle"},
        {"source": "web", "instr_type": "explicit", "el_type": "input", "el_type_merged": "input"},
    ]


def test_ui_i2e_bench_bad_instr_type(tmp_path: Path) -> None:
    lay = LAYOUTS["ui_i2e_bench"]
    root = lay.make(tmp_path, [lay.record, dict(lay.record, annotations={"instr_type": "sometimes"})])
    with pytest.raises(GgeError, match=r"jsonl:2: record 1: field 'annotations.instr_type'.*'sometimes'"):
        load("ui_i2e_bench", root)
    root = lay.make(tmp_path, [dict(lay.record, annotations={})])
    with pytest.raises(GgeError, match=r"jsonl:1: record 0 has no field 'annotations.instr_type'"):
        load("ui_i2e_bench", root)


# ------------------------------------------------------------------------------------------------
# Bad input: every message names the thing at fault.


@pytest.mark.parametrize("name", [*NAMES, "osworld_g_refined"])
def test_missing_root(tmp_path: Path, name: str) -> None:
    with pytest.raises(GgeError, match=rf"{name}: benchmark folder not found: .*nowhere"):
        load(name, tmp_path / "nowhere")


@pytest.mark.parametrize("name", NAMES)
def test_missing_annotation_file(tmp_path: Path, name: str) -> None:
    layout = LAYOUTS[name]
    root = layout.make(tmp_path)
    (root / layout.annotation).unlink()
    if name == "screenspot_pro":  # every *.json of annotations/ is read: an empty folder is the error
        expected = r"no annotation file \(\*\.json\) in .*screenspot_pro/annotations"
    else:
        expected = r"annotation file not found: .*" + re.escape(layout.annotation)
    with pytest.raises(GgeError, match=expected):
        load(name, root)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "ui_i2e_bench"])
def test_malformed_json(tmp_path: Path, name: str) -> None:
    layout = LAYOUTS[name]
    root = layout.make(tmp_path)
    (root / layout.annotation).write_text('[\n  {"bbox": [1, 2,, 3]}\n]\n', encoding="utf-8")
    with pytest.raises(
        GgeError, match=rf"{Path(layout.annotation).name}: line 2, column \d+: malformed JSON"
    ):
        load(name, root)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "ui_i2e_bench"])
def test_json_that_is_not_a_list(tmp_path: Path, name: str) -> None:
    layout = LAYOUTS[name]
    root = layout.make(tmp_path)
    write_json(root / layout.annotation, {"records": []})
    with pytest.raises(GgeError, match=rf"{Path(layout.annotation).name}: expected a JSON list"):
        load(name, root)


def test_malformed_jsonl_line(tmp_path: Path) -> None:
    layout = LAYOUTS["ui_i2e_bench"]
    root = layout.make(tmp_path)
    good = json.dumps(layout.record)
    (root / layout.annotation).write_text(f"{good}\n\n{{broken\n{good}\n", encoding="utf-8")
    with pytest.raises(GgeError, match=r"I2E-bench-annotation\.jsonl:3: malformed JSON line"):
        load("ui_i2e_bench", root)
    (root / layout.annotation).write_text(f"{good}\n[1, 2]\n", encoding="utf-8")
    with pytest.raises(GgeError, match=r"I2E-bench-annotation\.jsonl:2: record 1 is list"):
        load("ui_i2e_bench", root)


MISSING_FIELDS = [
    ("screenspot_v2", "bbox"),
    ("screenspot_v2", "data_source"),
    ("screenspot_pro", "img_size"),
    ("screenspot_pro", "group"),
    ("osworld_g", "box_coordinates"),
    ("osworld_g", "image_size"),
    ("ui_vision", "prompt_to_evaluate"),
    ("ui_vision", "element_type"),
    ("mmbench_gui", "grounding_type"),
    ("mmbench_gui", "bbox"),
    ("ui_i2e_bench", "bounding_box"),
    ("ui_i2e_bench", "source"),
]


@pytest.mark.parametrize(("name", "field"), MISSING_FIELDS)
def test_record_missing_a_field(tmp_path: Path, name: str, field: str) -> None:
    layout = LAYOUTS[name]
    rec = layout.records()[0]
    del rec[field]
    root = layout.make(tmp_path, [rec])
    with pytest.raises(
        GgeError, match=rf"{Path(layout.annotation).name}.*record {layout.first_id} has no field '{field}'"
    ):
        load(name, root)


@pytest.mark.parametrize(
    ("name", "field"), [("screenspot_pro", "id"), ("osworld_g", "id"), ("mmbench_gui", "index")]
)
def test_record_missing_its_id(tmp_path: Path, name: str, field: str) -> None:
    layout = LAYOUTS[name]
    rec = layout.records()[0]
    del rec[field]
    with pytest.raises(GgeError, match=rf"record #0 has no field '{field}'"):
        load(name, layout.make(tmp_path, [rec]))


@pytest.mark.parametrize("name", NAMES)
def test_wrong_field_type(tmp_path: Path, name: str) -> None:
    layout = LAYOUTS[name]
    key = {"screenspot_v2": "bbox", "ui_i2e_bench": "bounding_box", "osworld_g": "box_coordinates"}.get(
        name, "bbox"
    )
    rec = dict(layout.record, **{key: [1, 2, "3", 4]})
    with pytest.raises(GgeError, match=rf"record {layout.first_id}: field '{key}' must be 4 numbers"):
        load(name, layout.make(tmp_path, [rec]))


@pytest.mark.parametrize("name", NAMES)
def test_image_missing_is_kept_and_listed(tmp_path: Path, name: str) -> None:
    # the run decides: a counted miss, or a stop with strict_images=true (integration/cli/test_images.py)
    layout = LAYOUTS[name]
    rec = dict(layout.record, **{layout.image_key: "gone.png"})
    loaded = load(name, layout.make(tmp_path, [rec]))
    (sample,) = loaded.samples
    assert sample.image_path.endswith("gone.png") and not Path(sample.image_path).exists()
    assert loaded.summary["unreadable_images"] == 1
    assert loaded.summary["unreadable_image_ids"] == [layout.first_id]
    assert loaded.summary["boxes_outside_image"] == 0


@pytest.mark.parametrize("name", NAMES)
def test_image_path_escaping_the_root(tmp_path: Path, name: str) -> None:
    layout = LAYOUTS[name]
    root = layout.make(tmp_path / "deep")
    outside = root.parent / "x.png"
    png(outside)  # it exists: the check is lexical, not a not-found
    depth = len(Path(layout.image_dir).parts)
    for bad in ["../" * (depth + 1) + "x.png", str(outside)]:
        layout.write(root, [dict(layout.record, **{layout.image_key: bad})])
        escapes = rf"record {layout.first_id}: image path escapes the benchmark folder"
        with pytest.raises(GgeError, match=rf"{escapes}: '[^']*{re.escape(bad)}'"):
            load(name, root)


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    lay = LAYOUTS["screenspot_pro"]
    root = lay.make(tmp_path)
    write_json(root / "annotations" / "zzz_linux.json", [lay.record])
    with pytest.raises(
        GgeError,
        match=r"duplicate sample id 'app_macos_0': app_macos\.json record 0 and zzz_linux\.json record 0",
    ):
        load("screenspot_pro", root)


@pytest.mark.parametrize("name", ["osworld_g", "mmbench_gui"])
def test_duplicate_ids_in_one_file(tmp_path: Path, name: str) -> None:
    layout = LAYOUTS[name]
    with pytest.raises(
        GgeError, match=rf"{name}: duplicate sample id '{layout.first_id}': .*record 0 and .*record 1"
    ):
        load(name, layout.make(tmp_path, layout.records(2)))
