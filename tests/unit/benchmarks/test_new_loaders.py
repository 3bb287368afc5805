"""The four loaders added for issue 18 on small fixtures written here (FORMATS.md, sections 7-10).

Every kind of bad record is refused with a message naming the file and line (or record) and the field;
the CAGUI path mapping, VenusBench-GD's refusal records and its Chinese-instruction fallback, and the
showdown-clicks header order are pinned against hand-written expectations.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import UNKNOWN_SIZE, BenchmarkOptions
from gge.benchmarks.venusbench_gd import VenusBenchOptions
from gge.errors import GgeError
from gge.scoring.scoring import score_sample
from gge.types import Absent, Box, Candidate, Prediction, Sample


def png(path: Path, size: tuple[int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size).save(path)


def dump(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")


def jsonl(path: Path, lines: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")


def load(name: str, root: Path, options: BenchmarkOptions | None = None) -> list[Sample]:
    bench = get_benchmark(name)
    return bench.load(root, options or bench.options_type()).samples


def refused(name: str, root: Path, *parts: str, options: BenchmarkOptions | None = None) -> str:
    """Loading raises a one-line GgeError containing every part."""
    with pytest.raises(GgeError) as e:
        load(name, root, options)
    message = str(e.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)
    return message


# ------------------------------------------------------------------------------------------------
# ScreenSpot (v1)


def v1_record(**over: Any) -> dict[str, Any]:
    rec = {"img_filename": "a.png", "bbox": [10, 5, 20, 10], "instruction": "open it"}
    rec |= {"data_type": "icon", "data_source": "ios"}
    return {**rec, **over}


def write_v1(root: Path, mobile: list[dict[str, Any]]) -> None:
    dump(root / "screenspot_mobile.json", mobile)
    dump(root / "screenspot_desktop.json", [v1_record(data_type="text", data_source="macos")])
    dump(root / "screenspot_web.json", [])
    png(root / "screenspot_imgs" / "a.png", (200, 100))


def test_v1_reads_the_seeclick_layout(tmp_path: Path) -> None:
    write_v1(tmp_path, [v1_record(), v1_record(bbox=[0, 0, 200, 100])])
    samples = load("screenspot_v1", tmp_path)
    assert [s.id for s in samples] == ["mobile_0", "mobile_1", "desktop_0"]
    s = samples[0]
    assert s.image_size == (200, 100)
    assert s.region == Box(10 / 200, 5 / 100, 30 / 200, 15 / 100, space="normalized", size=(200, 100))
    assert dict(s.labels) == {"split": "mobile", "data_type": "icon", "data_source": "ios"}
    loaded = get_benchmark("screenspot_v1").load(tmp_path, BenchmarkOptions())
    assert loaded.summary["variant"] == {"version": "v1"}


@pytest.mark.parametrize(
    ("record", "parts"),
    [
        (v1_record(bbox=[1, 2, 3]), ["screenspot_mobile.json", "mobile_1", "'bbox'", "4 numbers"]),
        ({k: v for k, v in v1_record().items() if k != "bbox"}, ["mobile_1", "no field 'bbox'"]),
        (v1_record(instruction=3), ["mobile_1", "'instruction' must be a string"]),
        (v1_record(data_type=None), ["mobile_1", "'data_type'"]),
        (v1_record(img_filename="../../a.png"), ["mobile_1", "escapes the benchmark folder"]),
    ],
)
def test_v1_bad_records(tmp_path: Path, record: dict[str, Any], parts: list[str]) -> None:
    write_v1(tmp_path, [v1_record(), record])
    refused("screenspot_v1", tmp_path, *parts)


def test_v1_missing_split_file(tmp_path: Path) -> None:
    write_v1(tmp_path, [v1_record()])
    (tmp_path / "screenspot_web.json").unlink()
    refused("screenspot_v1", tmp_path, "annotation file not found", "screenspot_web.json")


# ------------------------------------------------------------------------------------------------
# showdown-clicks

COLUMNS = ["id", "recording_id", "image", "instruction", "x1", "y1", "x2", "y2", "width", "height"]
ROWS = [
    ["0123456789abcdef", "REC-A", "frames/REC-A/1.webp", "click send", "10", "20", "30", "40", "1280", "800"],
    [
        "fedcba9876543210",
        "REC-A",
        "frames/REC-A/2.webp",
        "open, then close",
        "0",
        "0",
        "5",
        "5",
        "1280",
        "800",
    ],
    [
        "00000000ffffffff",
        "REC-B",
        "frames/REC-B/9.webp",
        "react as thumbs up",
        "1",
        "2",
        "3",
        "4",
        "1440",
        "900",
    ],
]


def write_showdown(root: Path, columns: list[str], rows: list[list[str]], folder: bool = True) -> Path:
    dev = root / "showdown-clicks-dev" if folder else root
    dev.mkdir(parents=True, exist_ok=True)
    with (dev / "data.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    return dev


def shuffled(order: list[str], rows: list[list[str]]) -> list[list[str]]:
    return [[dict(zip(COLUMNS, row, strict=True))[c] for c in order] for row in rows]


def test_showdown_reads_rows_by_header_name(tmp_path: Path) -> None:
    write_showdown(tmp_path / "a", COLUMNS, ROWS)
    order = ["height", "instruction", "x2", "id", "width", "image", "y1", "recording_id", "y2", "x1"]
    write_showdown(tmp_path / "b", order, shuffled(order, ROWS))
    a = load("showdown_clicks", tmp_path / "a")
    b = load("showdown_clicks", tmp_path / "b")
    assert [s.id for s in a] == ["0123456789abcdef", "fedcba9876543210", "00000000ffffffff"]
    assert a[0].region == Box(10, 20, 30, 40, integer_point=True) and a[0].image_size == (1280, 800)
    assert a[1].instruction == "open, then close"
    assert dict(a[2].labels) == {"frame_size": "1440x900", "recording_id": "REC-B"}
    assert a[2].image_path == str(tmp_path / "a" / "showdown-clicks-dev" / "frames" / "REC-B" / "9.webp")
    strip = [(s.id, s.image_path.replace(str(tmp_path / "b"), ""), s.region, s.labels) for s in b]
    assert strip == [(s.id, s.image_path.replace(str(tmp_path / "a"), ""), s.region, s.labels) for s in a]


def test_showdown_accepts_the_dev_folder_and_no_recording_column(tmp_path: Path) -> None:
    order = [c for c in COLUMNS if c != "recording_id"]
    dev = write_showdown(tmp_path, order, shuffled(order, ROWS), folder=False)
    loaded = get_benchmark("showdown_clicks").load(dev, BenchmarkOptions())
    assert [s.labels["recording_id"] for s in loaded.samples] == ["unknown"] * 3
    assert any("no 'recording_id' column" in n for n in loaded.summary["notes"])


def bad_row(column: str, value: str) -> list[list[str]]:
    rows = [list(r) for r in ROWS]
    rows[1][COLUMNS.index(column)] = value
    return rows


@pytest.mark.parametrize(
    ("column", "value", "parts"),
    [
        ("x1", "12.5", ["data.csv:3", "'x1'", "integer"]),
        ("y2", "", ["data.csv:3", "'y2'", "integer"]),
        ("width", "0", ["data.csv:3", "'width'", "positive"]),
        ("height", "-800", ["data.csv:3", "'height'", "positive"]),
        ("height", "800.0", ["data.csv:3", "'height'", "integer"]),
        ("id", "xyz", ["data.csv:3", "'id'", "16 hexadecimal"]),
        ("id", "0123456789abcdef0", ["data.csv:3", "'id'", "16 hexadecimal"]),  # 16 hex, then one more
        ("id", "", ["data.csv:3", "'id'", "empty"]),
        ("instruction", " ", ["data.csv:3", "'instruction'", "empty"]),
        ("image", "", ["data.csv:3", "'image'", "empty"]),
        ("image", "../../x.webp", ["data.csv:3", "escapes the benchmark folder"]),
        ("recording_id", "", ["data.csv:3", "'recording_id'", "empty"]),
        ("id", ROWS[0][0], ["duplicate sample id", "data.csv:2", "data.csv:3"]),
    ],
)
def test_showdown_bad_cells(tmp_path: Path, column: str, value: str, parts: list[str]) -> None:
    write_showdown(tmp_path, COLUMNS, bad_row(column, value))
    refused("showdown_clicks", tmp_path, *parts)


def test_showdown_bad_shapes(tmp_path: Path) -> None:
    write_showdown(tmp_path / "a", [c for c in COLUMNS if c != "x2"], [r[:6] + r[7:] for r in ROWS])
    refused("showdown_clicks", tmp_path / "a", "data.csv:1", "'x2'")
    write_showdown(tmp_path / "b", COLUMNS, [ROWS[0], [*ROWS[1], "extra"]])
    refused("showdown_clicks", tmp_path / "b", "data.csv:3", "more cells")
    write_showdown(tmp_path / "c", COLUMNS, [ROWS[0], ROWS[1][:-1]])
    refused("showdown_clicks", tmp_path / "c", "data.csv:3", "'height'")
    refused("showdown_clicks", tmp_path / "nowhere", "benchmark folder not found")
    (tmp_path / "d").mkdir()
    refused("showdown_clicks", tmp_path / "d", "annotation file not found", "data.csv")


def test_showdown_refuses_a_column_named_twice(tmp_path: Path) -> None:
    # csv.DictReader keeps the last of two 'x1' cells without a word: the header is refused instead
    columns = [*COLUMNS[:4], "x1", *COLUMNS[4:]]
    write_showdown(tmp_path, columns, [[*r[:4], "999", *r[4:]] for r in ROWS])
    message = refused("showdown_clicks", tmp_path, "data.csv:1", "'x1'", "more than once")
    assert "'y1'" not in message


@pytest.mark.parametrize(
    ("point", "hit"),
    [
        ((30.6, 25.0), True),  # int(30.6) = 30 = x2: a hit officially (as given, 30.6 > x2)
        ((40.9, 40.99), False),  # int(40.9) = 40 > x2 = 30
        ((9.6, 25.0), False),  # int(9.6) = 9 < x1 = 10 (rounding would give 10)
        ((10.0, 20.0), True),  # the corners are inside (inclusive)
        ((20.0, 40.7), True),  # int(40.7) = 40 = y2
        ((20.0, 19.99), False),  # int(19.99) = 19 < y1 = 20
    ],
)
def test_showdown_tests_the_integer_pixel_point(
    tmp_path: Path, point: tuple[float, float], hit: bool
) -> None:
    # the official is_point_in_bbox takes int points (generalagents/showdown @ 86cbd20d): gge truncates
    write_showdown(tmp_path, COLUMNS, ROWS[:1])  # box (10, 20) - (30, 40)
    sample = load("showdown_clicks", tmp_path)[0]
    prediction = Prediction("showdown_clicks", sample.id, (Candidate(point),))
    assert score_sample(sample, prediction, k=1).top1["first"] is hit


def test_integer_point_is_truncation_toward_zero() -> None:
    box = Box(0, 0, 100, 10, integer_point=True)
    assert box.contains(100.6, 5) and not Box(0, 0, 100, 10).contains(100.6, 5)
    assert not Box(101, 0, 200, 10, integer_point=True).contains(100.6, 5)
    assert box.contains(-0.5, 0.0)  # int(-0.5) = 0 (Python's int(), not floor)
    assert not box.contains(-1.0, 0.0)
    norm = Box(0.5, 0.0, 1.0, 1.0, space="normalized", size=(200, 100), integer_point=True)
    assert norm.contains(99.9 + 0.5, 50) and not norm.contains(99.9, 50)  # int(100.4) = 100 -> 0.5


def test_showdown_line_numbers_follow_a_quoted_newline(tmp_path: Path) -> None:
    rows = [list(r) for r in ROWS]
    rows[0][COLUMNS.index("instruction")] = "two\nlines"
    rows[2][COLUMNS.index("x1")] = "x"
    write_showdown(tmp_path, COLUMNS, rows)
    refused("showdown_clicks", tmp_path, "data.csv:5", "'x1'")  # header 1, row 2-3, row 4, row 5


# ------------------------------------------------------------------------------------------------
# CAGUI grounding

PREFIX = "grounding_eval/dataset/images/"


def cagui_line(image: str, abs_position: Any = "<10, 20, 110, 220>", **over: Any) -> dict[str, Any]:
    rec = {"task": "bbox2function", "image": image, "id": 0, "abs_position": abs_position}
    rec |= {"rel_position": "<0.1, 0.1, 0.55, 0.55>", "text": "打开菜单"}
    return {**rec, **over}


def write_cagui(base: Path, cap: list[Any] | None = None, ocr: list[Any] | None = None) -> Path:
    jsonl(base / "code" / "cap.jsonl", cap or [cagui_line(f"{PREFIX}0.jpeg"), cagui_line(f"{PREFIX}1.jpeg")])
    jsonl(
        base / "code" / "ocr.jsonl", ocr or [cagui_line(f"{PREFIX}ocr/0.jpeg", task="bbox2text", text="设置")]
    )
    png(base / "images" / "cap" / "0.jpeg", (200, 400))
    png(base / "images" / "ocr" / "0.jpeg", (300, 600))
    return base


def test_cagui_maps_the_record_paths_and_numbers_the_lines(tmp_path: Path) -> None:
    base = write_cagui(tmp_path / "CAGUI_grounding")
    for root in (tmp_path, base):  # the folder holding CAGUI_grounding/, or CAGUI_grounding/ itself
        loaded = get_benchmark("cagui_grounding").load(root, BenchmarkOptions())
        s = {x.id: x for x in loaded.samples}
        assert list(s) == [
            "fun2point_0",
            "fun2point_1",
            "text2point_0",
        ]  # the record ids (all 0) are not used
        assert s["fun2point_0"].image_path == str(base / "images" / "cap" / "0.jpeg")
        assert s["fun2point_1"].image_path == str(base / "images" / "cap" / "1.jpeg")
        assert s["text2point_0"].image_path == str(base / "images" / "ocr" / "0.jpeg")
        assert s["fun2point_0"].region == Box(10, 20, 110, 220)
        assert s["fun2point_0"].image_size == (200, 400)  # the header
        assert s["text2point_0"].image_size == (300, 600)
        assert s["fun2point_1"].image_size == (200, 400)  # no screenshot: 110 / 0.55, 220 / 0.55
        assert s["text2point_0"].instruction == "设置" and s["fun2point_0"].instruction == "打开菜单"
        assert {x.labels["subtask"] for x in loaded.samples} == {"fun2point", "text2point"}
        assert loaded.summary["unreadable_images"] == 1
        assert any(n.startswith("bbox2text answers with text") for n in loaded.summary["notes"])


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        (cagui_line("images/1.jpeg"), ["cap.jsonl:2", "'image'", PREFIX]),
        (cagui_line("/abs/grounding_eval/dataset/images/1.jpeg"), ["cap.jsonl:2", "'image'"]),
        (cagui_line(f"{PREFIX}../../../x.jpeg"), ["cap.jsonl:2", "escapes the benchmark folder"]),
        (cagui_line(f"{PREFIX}1.jpeg", "<1, 2, 3>"), ["cap.jsonl:2", "'abs_position'"]),
        (cagui_line(f"{PREFIX}1.jpeg", "1, 2, 3, 4"), ["cap.jsonl:2", "'abs_position'"]),
        (cagui_line(f"{PREFIX}1.jpeg", "<1.5, 2, 3, 4>"), ["cap.jsonl:2", "'abs_position'", "integers"]),
        (cagui_line(f"{PREFIX}1.jpeg", "<a, 2, 3, 4>"), ["cap.jsonl:2", "'abs_position'"]),
        (cagui_line(f"{PREFIX}1.jpeg", "<1, 2, 3, 4, 5>"), ["cap.jsonl:2", "'abs_position'"]),
        (cagui_line(f"{PREFIX}1.jpeg", [1, 2, 3, 4]), ["cap.jsonl:2", "'abs_position'"]),
        (cagui_line(f"{PREFIX}1.jpeg", rel_position="<0.1, x, 0.5, 0.5>"), ["cap.jsonl:2", "'rel_position'"]),
        (cagui_line(f"{PREFIX}1.jpeg", text=None), ["cap.jsonl:2", "'text'"]),
        ({k: v for k, v in cagui_line(f"{PREFIX}1.jpeg").items() if k != "abs_position"}, ["cap.jsonl:2"]),
        ([1, 2], ["cap.jsonl:2", "expected a JSON object"]),
    ],
)
def test_cagui_bad_lines(tmp_path: Path, line: Any, parts: list[str]) -> None:
    write_cagui(tmp_path, cap=[cagui_line(f"{PREFIX}0.jpeg"), line])
    refused("cagui_grounding", tmp_path, *parts)


def test_cagui_an_unreadable_screenshot_keeps_the_unknown_size(tmp_path: Path) -> None:
    """Only a screenshot that is not there takes abs / rel_position; one that is there but unreadable stays
    unknown (an unreadable screenshot, a counted miss), not a size guessed for a file gge cannot show."""
    # every line has rel_position <0.1, 0.1, 0.55, 0.55>; cap/1.jpeg is not there, cap/2.jpeg is junk
    write_cagui(tmp_path, cap=[cagui_line(f"{PREFIX}{n}.jpeg") for n in range(3)])
    (tmp_path / "images" / "cap" / "2.jpeg").write_bytes(b"not an image at all")
    loaded = get_benchmark("cagui_grounding").load(tmp_path, BenchmarkOptions())
    s = {x.id: x.image_size for x in loaded.samples}
    assert s == {
        "fun2point_0": (200, 400),  # the header
        "fun2point_1": (200, 400),  # no screenshot: 110 / 0.55, 220 / 0.55
        "fun2point_2": UNKNOWN_SIZE,  # there, but unreadable
        "text2point_0": (300, 600),
    }
    assert "1 image sizes from abs_position / rel_position (no screenshot)" in loaded.summary["notes"]
    assert loaded.summary["unreadable_images"] == 2


def test_cagui_malformed_json_and_missing_file(tmp_path: Path) -> None:
    write_cagui(tmp_path)
    with (tmp_path / "code" / "ocr.jsonl").open("a", encoding="utf-8") as f:
        f.write("{not json\n")
    refused("cagui_grounding", tmp_path, "ocr.jsonl:2", "malformed JSON")
    (tmp_path / "code" / "cap.jsonl").unlink()
    refused("cagui_grounding", tmp_path, "annotation file not found", "cap.jsonl")


# ------------------------------------------------------------------------------------------------
# VenusBench-GD


def venus_record(**over: Any) -> dict[str, Any]:
    rec = {"img_filename": "web/a.png", "bbox": [20, 10, 60, 30], "instruction": "Click the cart"}
    rec |= {"instruction_zh": "点击购物车", "platform": "web", "application": "Shop", "group": "Shopping"}
    rec |= {"ui_type": "icon"}
    return {**rec, **over}


def write_venus(root: Path, files: dict[str, list[dict[str, Any]]]) -> Path:
    for stem, records in files.items():
        dump(root / "instruction" / f"{stem}.json", records)
    png(root / "images" / "web" / "a.png", (200, 100))
    return root


def test_venus_reads_every_file_with_refusals(tmp_path: Path) -> None:
    refusal = venus_record(bbox=[-1, -1, -1, -1])
    no_box = {k: v for k, v in venus_record().items() if k not in ("bbox", "ui_type")}
    write_venus(tmp_path, {"spatial_grounding": [venus_record()], "refusal_grounding": [refusal, no_box]})
    loaded = get_benchmark("venusbench_gd").load(tmp_path, VenusBenchOptions())
    s = {x.id: x for x in loaded.samples}
    assert list(s) == ["refusal_grounding_0", "refusal_grounding_1", "spatial_grounding_0"]  # sorted files
    box = s["spatial_grounding_0"]
    assert box.region == Box(0.1, 0.1, 0.3, 0.3, space="normalized", size=(200, 100))
    assert dict(box.labels) == {
        "subtask": "spatial_grounding",
        "ui_type": "icon",
        "platform": "web",
        "application": "Shop",
        "group": "Shopping",
    }
    assert s["refusal_grounding_0"].region == Absent() and s["refusal_grounding_1"].region == Absent()
    assert s["refusal_grounding_1"].labels["ui_type"] == "unknown"
    assert "1 records have no 'ui_type': label 'unknown'" in loaded.summary["notes"]
    assert any(n.startswith("2 refusal samples") for n in loaded.summary["notes"])
    assert loaded.summary["variant"] == {"language": "en"}
    assert box.instruction == "Click the cart"
    # only an abstention hits a refusal target; a point on the screen misses it
    sample = s["refusal_grounding_0"]
    abstain = score_sample(sample, Prediction(sample.benchmark, sample.id, (Candidate(None),)), k=1)
    click = score_sample(sample, Prediction(sample.benchmark, sample.id, (Candidate((40.0, 20.0)),)), k=1)
    assert abstain.hits == (True,) and click.hits == (False,)


def test_venus_chinese_instructions_fall_back_to_instruction_cn(tmp_path: Path) -> None:
    cn_only = {k: v for k, v in venus_record(instruction_cn="点击旧名").items() if k != "instruction_zh"}
    both = venus_record(instruction_cn="不读这个")
    write_venus(tmp_path, {"element_grounding": [both, cn_only]})
    loaded = get_benchmark("venusbench_gd").load(tmp_path, VenusBenchOptions(language="zh"))
    assert [x.instruction for x in loaded.samples] == ["点击购物车", "点击旧名"]
    assert loaded.summary["variant"] == {"language": "zh"}
    assert "instruction fields read: instruction_cn 1, instruction_zh 1" in loaded.summary["notes"]
    neither = {k: v for k, v in venus_record().items() if k != "instruction_zh"}
    write_venus(tmp_path, {"element_grounding": [both, neither]})
    refused(
        "venusbench_gd",
        tmp_path,
        "element_grounding.json",
        "element_grounding_1",
        "'instruction_zh' or 'instruction_cn'",
        options=VenusBenchOptions(language="zh"),
    )
    refused("venusbench_gd", tmp_path, "language", "'fr'", options=VenusBenchOptions(language="fr"))


def test_venus_a_null_label_is_unknown_as_a_missing_one(tmp_path: Path) -> None:
    """A label key present with null reads as absent (``unknown``, counted), as ``rec.get(key) is None``."""
    records = [venus_record(), venus_record(platform=None, group=None), venus_record(group=None)]
    write_venus(tmp_path, {"a": records})
    loaded = get_benchmark("venusbench_gd").load(tmp_path, VenusBenchOptions())
    assert [(x.labels["platform"], x.labels["group"]) for x in loaded.samples] == [
        ("web", "Shopping"),
        ("unknown", "unknown"),
        ("web", "unknown"),
    ]
    notes = loaded.summary["notes"]
    assert "1 records have no 'platform': label 'unknown'" in notes
    assert "2 records have no 'group': label 'unknown'" in notes


@pytest.mark.parametrize(
    ("record", "parts"),
    [
        (venus_record(bbox=[1, 2, 3]), ["a.json", "a_1", "'bbox'", "4 numbers"]),
        (venus_record(bbox=None), ["a.json", "a_1", "'bbox'"]),
        (venus_record(group=7), ["a.json", "a_1", "'group' must be a string"]),
        (venus_record(instruction=None), ["a_1", "'instruction' must be a string"]),
        ({k: v for k, v in venus_record().items() if k != "instruction"}, ["a_1", "no field 'instruction'"]),
        ({k: v for k, v in venus_record().items() if k != "img_filename"}, ["a_1", "'img_filename'"]),
        (venus_record(img_filename="../../a.png"), ["a_1", "escapes the benchmark folder"]),
    ],
)
def test_venus_bad_records(tmp_path: Path, record: dict[str, Any], parts: list[str]) -> None:
    write_venus(tmp_path, {"a": [venus_record(), record]})
    refused("venusbench_gd", tmp_path, *parts)


def test_venus_missing_folders(tmp_path: Path) -> None:
    tmp_path.joinpath("v").mkdir()
    refused("venusbench_gd", tmp_path / "v", "instruction folder not found")
    tmp_path.joinpath("v", "instruction").mkdir()
    refused("venusbench_gd", tmp_path / "v", "no instruction file")
