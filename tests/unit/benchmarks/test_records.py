"""The ``records`` benchmark: a user's own JSONL/CSV/parquet file.

Every kind of bad row is one error naming ``file:line`` and the column; the three formats read the
same rows to the same samples; every box_format x units declaration maps to the hand-computed pixel
box; absent targets are hit only by an abstention; ``python eval.py 'benchmarks=[records]'
bench.records.path=...`` gives the hand-counted numbers and tables.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT
from PIL import Image

from gge.benchmarks.base import BenchmarkOptions
from gge.benchmarks.demo.suite.records_demo import SCREENS, write_records_demo
from gge.benchmarks.images import image_bytes
from gge.benchmarks.records import RecordsBenchmark, RecordsOptions
from gge.errors import GgeError
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import score_sample
from gge.types import Absent, Box, Candidate, Polygon, Prediction, Sample

SIZE = (200, 100)


def _image(folder: Path, name: str = "a.png", size: tuple[int, int] = SIZE) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (255, 255, 255)).save(folder / name)
    return name


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    """The rows as CSV: lists as JSON text, booleans as true/false, missing values as empty cells."""
    columns = list(dict.fromkeys(k for r in rows for k in r))

    def cell(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return json.dumps(v) if isinstance(v, list) else str(v)

    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([cell(r[c]) if c in r else "" for c in columns])
    return path


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows]), path)
    return path


def _at(path: Path, line: int | str) -> str:
    """``file:line`` as a regular expression."""
    return re.escape(f"{path}:{line}")


def _load(path: Path, **options: Any) -> list[Sample]:
    opts = RecordsOptions(path=str(path), **options)
    return RecordsBenchmark().load(path.parent, opts).samples


GOOD = {"image": "a.png", "instruction": "click", "bbox": [1, 2, 3, 4]}
PIXELS = {"box_format": "xyxy", "units": "pixels"}
NORM_1 = {"box_format": "xyxy", "units": "norm_1"}


# ----------------------------------------------------------------------------------------------
# Bad rows: each is one error naming file:line and the column.

BAD_ROWS: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("missing image", {"instruction": "x", "bbox": [1, 2, 3, 4]}, PIXELS, "no column 'image'"),
    ("empty image", {**GOOD, "image": ""}, PIXELS, "column 'image' must be a path string"),
    ("missing instruction", {"image": "a.png", "bbox": [1, 2, 3, 4]}, PIXELS, "no column 'instruction'"),
    ("blank instruction", {**GOOD, "instruction": "  "}, PIXELS, "column 'instruction' must be a non-empty"),
    (
        "two targets",
        {**GOOD, "polygon": [0, 0, 1, 0, 1, 1]},
        PIXELS,
        "exactly one target column is needed (bbox, polygon or absent: true), got 2 (bbox, polygon)",
    ),
    ("bbox and absent", {**GOOD, "absent": True}, PIXELS, "got 2 (bbox, absent)"),
    ("no target", {"image": "a.png", "instruction": "x"}, PIXELS, "exactly one target column is needed"),
    ("absent false only", {"image": "a.png", "instruction": "x", "absent": False}, PIXELS, "got none"),
    ("absent not a bool", {"image": "a.png", "instruction": "x", "absent": "yes"}, PIXELS, "column 'absent'"),
    ("bbox of 3", {**GOOD, "bbox": [1, 2, 3]}, PIXELS, "column 'bbox' must be 4 numbers"),
    ("bbox of 5", {**GOOD, "bbox": [1, 2, 3, 4, 5]}, PIXELS, "column 'bbox' must be 4 numbers"),
    ("bbox not numbers", {**GOOD, "bbox": [1, "2", 3, 4]}, PIXELS, "column 'bbox' must be a list of numbers"),
    ("bbox a string", {**GOOD, "bbox": "1,2,3,4"}, PIXELS, "column 'bbox' must be a list of numbers"),
    (
        "bbox with a bool",
        {**GOOD, "bbox": [1, True, 3, 4]},
        PIXELS,
        "column 'bbox' must be a list of numbers",
    ),
    ("undeclared units", GOOD, {"box_format": "xyxy"}, "column 'bbox': no units declared"),
    ("undeclared box_format", GOOD, {"units": "pixels"}, "column 'bbox': no box_format declared"),
    (
        "polygon undeclared units",
        {**GOOD, "bbox": None, "polygon": [0, 0, 1, 0, 1, 1]},
        {},
        "no units declared",
    ),
    (
        "row contradicts units",
        {**GOOD, "units": "norm_1"},
        PIXELS,
        "column 'units' is 'norm_1', which contradicts bench.records.units=pixels",
    ),
    (
        "row contradicts box_format",
        {**GOOD, "box_format": "xywh"},
        PIXELS,
        "column 'box_format' is 'xywh', which contradicts bench.records.box_format=xyxy",
    ),
    (
        "unknown box_format value",
        {**GOOD, "box_format": "yxyx", "units": "pixels"},
        {},
        "column 'box_format' must be one of xyxy, xywh, got 'yxyx'",
    ),
    ("unknown units value", {**GOOD, "units": "px"}, {"box_format": "xyxy"}, "column 'units' must be one of"),
    (
        "polygon odd",
        {**GOOD, "bbox": None, "polygon": [0, 0, 1]},
        PIXELS,
        "column 'polygon' must hold an even",
    ),
    (
        "polygon bad pair",
        {**GOOD, "bbox": None, "polygon": [[0, 0], [1]]},
        PIXELS,
        "every vertex must be [x, y]",
    ),
    # targets in other units or another format than declared (the image is 200 x 100)
    (
        "norm_1 over 1",
        {**GOOD, "bbox": [0.1, 0.2, 1.2, 0.5], **NORM_1},
        {},
        "column 'bbox': [0.1, 0.2, 1.2, 0.5] read as xyxy has x2 = 1.2, outside [0, 1] for units=norm_1",
    ),
    (
        "norm_1 given pixels",
        {**GOOD, **NORM_1},
        {},
        "read as xyxy has y1 = 2, outside [0, 1]",
    ),  # x1 = 1 is in
    (
        "norm_1 negative",
        {**GOOD, "bbox": [-0.01, 0, 0.5, 0.5], **NORM_1},
        {},
        "has x1 = -0.01, outside [0, 1]",
    ),
    (
        "norm_1 xywh past the edge",
        {**GOOD, "bbox": [0.5, 0.5, 0.6, 0.1], "box_format": "xywh", "units": "norm_1"},
        {},
        "[0.5, 0.5, 0.6, 0.1] read as xywh has x2 = 1.1, outside [0, 1]",
    ),
    (
        "norm_1000 over 1000",
        {**GOOD, "bbox": [0, 0, 10, 1000.5], "box_format": "xyxy", "units": "norm_1000"},
        {},
        "has y2 = 1000.5, outside [0, 1000] for units=norm_1000",
    ),
    (
        "xywh declared xyxy",
        {**GOOD, "bbox": [100, 50, 20, 10]},
        PIXELS,
        "column 'bbox': [100, 50, 20, 10] read as xyxy is inverted (x2 20 < x1 100): xywh boxes declared "
        "xyxy read this way (set box_format=xywh)",
    ),
    ("inverted in y", {**GOOD, "bbox": [10, 50, 20, 10]}, PIXELS, "is inverted (y2 10 < y1 50)"),
    (
        "xywh negative width",
        {**GOOD, "bbox": [10, 10, -5, 5], "box_format": "xywh"},
        {"units": "pixels"},
        "[10, 10, -5, 5] read as xywh is inverted (x2 5 < x1 10): a negative width or height",
    ),
    (
        "polygon of 2 pairs",
        {**GOOD, "bbox": None, "polygon": [[0, 0], [10, 10]]},
        PIXELS,
        "column 'polygon' has 2 vertices: a polygon needs at least 3",
    ),
    ("polygon of 1 flat", {**GOOD, "bbox": None, "polygon": [5, 5]}, PIXELS, "has 1 vertices"),
    (
        "polygon norm_1 outside",
        {**GOOD, "bbox": None, "polygon": [[0, 0], [1.5, 0], [0, 1]], "units": "norm_1"},
        {},
        "column 'polygon': vertex 1 [1.5, 0] lies outside [0, 1] for units=norm_1",
    ),
    (
        "pixel box right of the image",
        {**GOOD, "bbox": [250, 10, 300, 20]},
        PIXELS,
        "column 'bbox': the pixel box [250, 10, 300, 20] lies entirely outside the 200x100 image",
    ),
    (
        "pixel box below the image",
        {**GOOD, "bbox": [10, 101, 20, 160]},
        PIXELS,
        "entirely outside the 200x100",
    ),
    ("pixel box above the image", {**GOOD, "bbox": [10, -20, 20, -0.5]}, PIXELS, "entirely outside"),
    (
        "pixel polygon outside",
        {**GOOD, "bbox": None, "polygon": [300, 0, 400, 0, 300, 50]},
        PIXELS,
        "column 'polygon' lies entirely outside the 200x100 image",
    ),
    (
        "outside the size the row gives",
        {**GOOD, "image": "gone.png", "bbox": [250, 10, 300, 20], "width": 200, "height": 100},
        PIXELS,
        "the pixel box [250, 10, 300, 20] lies entirely outside the 200x100 image",
    ),
    ("width only", {**GOOD, "width": 200}, PIXELS, "column 'height' is missing"),
    ("width not positive", {**GOOD, "width": 0, "height": 100}, PIXELS, "column 'width' must be a positive"),
    ("size not the image's", {**GOOD, "width": 300, "height": 100}, PIXELS, "say 300x100, but the image"),
    ("size swapped", {**GOOD, "width": 100, "height": 200}, PIXELS, "say 100x200, but the image"),
    (
        "width with a fraction",  # int(200.5) would be the header's 200: refused, not truncated
        {**GOOD, "width": 200.5, "height": 100},
        PIXELS,
        "column 'width' must be a positive whole number, got 200.5",
    ),
    ("id a list", {**GOOD, "id": [1]}, PIXELS, "column 'id' must be a non-empty string or an integer"),
    ("label missing", GOOD, {**PIXELS, "tables": ["app"]}, "no column 'app' (named in bench.records.tables)"),
    (
        "label a float",
        {**GOOD, "app": 1.5},
        {**PIXELS, "tables": ["app"]},
        "column 'app' must be a non-empty",
    ),
]


@pytest.mark.parametrize(("case", "row", "options", "message"), BAD_ROWS, ids=[c[0] for c in BAD_ROWS])
def test_a_bad_jsonl_row_names_its_line_and_column(
    tmp_path: Path, case: str, row: dict[str, Any], options: dict[str, Any], message: str
) -> None:
    _image(tmp_path)
    row = {k: v for k, v in row.items() if v is not None}
    good = {**GOOD, **PIXELS, "app": "x"}  # agrees with every case's options
    path = _jsonl(tmp_path / "my.jsonl", [good, "", row])  # line 2 is blank: the bad row is line 3
    with pytest.raises(GgeError) as e:
        _load(path, **options)
    text = str(e.value)
    assert text.startswith(f"{path}:3: "), text
    assert message in text and "\n" not in text


@pytest.mark.parametrize(
    ("case", "row", "message"),
    [
        ("malformed JSON", '{"image": ', "malformed JSON line"),
        ("not an object", "[1, 2]", "the line is a JSON list, expected an object"),
    ],
)
def test_a_jsonl_line_that_is_not_an_object(tmp_path: Path, case: str, row: str, message: str) -> None:
    _image(tmp_path)
    path = _jsonl(tmp_path / "my.jsonl", [{**GOOD, **PIXELS}, row])
    with pytest.raises(GgeError, match=rf"^{_at(path, 2)}: {message}"):
        _load(path)


def test_a_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    _image(tmp_path)
    rows = [{**GOOD, "id": "a"}, {**GOOD, "id": "b"}, {**GOOD, "id": "a"}]
    path = _jsonl(tmp_path / "my.jsonl", rows)
    with pytest.raises(GgeError, match=rf"duplicate sample id 'a': {_at(path, 1)} and {_at(path, 3)}"):
        _load(path, **PIXELS)
    # a default id (the row number) clashing with an explicit one
    path = _jsonl(tmp_path / "my.jsonl", [{**GOOD, "id": "1"}, GOOD])
    with pytest.raises(GgeError, match=rf"duplicate sample id '1': {_at(path, 1)} and {_at(path, 2)}"):
        _load(path, **PIXELS)


def test_bad_csv_lines_count_the_header_as_line_1(tmp_path: Path) -> None:
    _image(tmp_path)
    path = tmp_path / "my.csv"
    header = "image,instruction,bbox,box_format,units\n"
    good = 'a.png,click,"[1, 2, 3, 4]",xyxy,pixels\n'
    path.write_text(header + good + good + 'a.png,click,"[1, 2, 3, 4]",xyxy,pixels,extra\n')
    with pytest.raises(GgeError, match=rf"^{_at(path, 4)}: 6 fields, but the header has 5$"):
        _load(path)
    path.write_text(header + good + "a.png,click\n")
    with pytest.raises(GgeError, match=rf"^{_at(path, 3)}: 2 fields, but the header has 5$"):
        _load(path)
    path.write_text(header + 'a.png,click,"1, 2, 3, 4",xyxy,pixels\n')
    with pytest.raises(GgeError, match=rf"^{_at(path, 2)}: column 'bbox' must be a JSON list"):
        _load(path)
    path.write_text(header + 'a.png,click,"[1, 2, 3, 4]",xyxy,pixels\n' + "a.png,,[1],xyxy,pixels\n")
    with pytest.raises(GgeError, match=rf"^{_at(path, 3)}: no column 'instruction'"):
        _load(path)
    path.write_text("image,instruction,absent,width\n" + "a.png,x,maybe,\n")
    with pytest.raises(
        GgeError, match=rf"^{_at(path, 2)}: column 'absent' must be true or false, got 'maybe'"
    ):
        _load(path)
    path.write_text("image,instruction,absent,width,height\n" + "a.png,x,true,wide,100\n")
    with pytest.raises(
        GgeError, match=rf"^{_at(path, 2)}: column 'width' must be a positive whole number, got 'wide'"
    ):
        _load(path)


def test_a_bad_parquet_row_names_its_row_index(tmp_path: Path) -> None:
    _image(tmp_path)
    path = _parquet(tmp_path / "my.parquet", [GOOD, {**GOOD, "bbox": [1.0, 2.0, 3.0]}])
    with pytest.raises(GgeError, match=rf"^{_at(path, 'row 1')}: column 'bbox' must be 4 numbers"):
        _load(path, **PIXELS)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"box_format": "xyz"}, "bench.records.box_format must be one of xyxy, xywh, got 'xyz'"),
        (
            {"units": "norm_100"},
            "bench.records.units must be one of pixels, norm_1, norm_1000, got 'norm_100'",
        ),
        ({"tables": ["bbox"]}, "bench.records.tables: 'bbox' is a records column, not a label column"),
        ({"tables": ["app", "app"]}, "bench.records.tables names a column twice"),
        ({"source": "parquet"}, "bench.records.source does not apply"),
        ({"name": " "}, "bench.records.name must be a non-empty title"),
    ],
)
def test_bad_options(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    _image(tmp_path)
    path = _jsonl(tmp_path / "my.jsonl", [GOOD])
    with pytest.raises(GgeError) as e:
        _load(path, **options)
    assert message in str(e.value)


def test_which_file_is_read(tmp_path: Path) -> None:
    _image(tmp_path)
    with pytest.raises(GgeError, match=r"must end in \.jsonl, \.csv, \.parquet"):
        _load(_jsonl(tmp_path / "my.json", [GOOD]))
    with pytest.raises(GgeError, match="records file not found"):
        RecordsBenchmark().load(tmp_path, RecordsOptions(path=str(tmp_path / "none.jsonl")))
    with pytest.raises(
        GgeError, match=r"must hold exactly one of records.jsonl, records.csv, records.parquet \(found none\)"
    ):
        RecordsBenchmark().load(tmp_path, RecordsOptions(**PIXELS))
    _jsonl(tmp_path / "records.jsonl", [GOOD])
    assert len(RecordsBenchmark().load(tmp_path, RecordsOptions(**PIXELS)).samples) == 1
    _csv(tmp_path / "records.csv", [GOOD])
    with pytest.raises(GgeError, match=r"\(found records.jsonl, records.csv\)"):
        RecordsBenchmark().load(tmp_path, RecordsOptions(**PIXELS))
    # the base options (a caller that knows only root) read the default file with the defaults
    (tmp_path / "records.csv").unlink()
    with pytest.raises(GgeError, match="no box_format declared"):
        RecordsBenchmark().load(tmp_path, BenchmarkOptions())


def test_a_relative_path_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _image(tmp_path / "data" / "shots")
    _jsonl(tmp_path / "data" / "my.jsonl", [{**GOOD, "image": "shots/a.png"}])
    monkeypatch.chdir(tmp_path)
    loaded = RecordsBenchmark().load(tmp_path / "elsewhere", RecordsOptions(path="data/my.jsonl", **PIXELS))
    # the image is relative to the records file's folder, made absolute
    assert loaded.samples[0].image_path == str(tmp_path / "data" / "shots" / "a.png")
    assert loaded.summary["variant"] == {
        "path": "data/my.jsonl",
        "format": "jsonl",
        "box_format": "xyxy",
        "units": "pixels",
    }


# ----------------------------------------------------------------------------------------------
# What a good file reads to.

ROWS: list[dict[str, Any]] = [
    {"image": "a.png", "instruction": "save", "bbox": [20, 10, 60, 30], "app": "editor", "platform": "mac"},
    {
        "image": "shots/b.png",
        "instruction": "open",
        "polygon": [[0, 0], [50, 0], [50, 40]],
        "id": "poly",
        "app": "shop",
        "platform": "web",
    },
    {"image": "a.png", "instruction": "find the ghost", "absent": True, "app": "editor", "platform": "mac"},
    {
        "image": "a.png",
        "instruction": "norm",
        "bbox": [0.1, 0.1, 0.3, 0.3],
        "units": "norm_1",
        "width": 200,
        "height": 100,
        "id": "n1",
        "app": "shop",
        "platform": "web",
        "note": "kept out",
    },
    {
        "image": "a.png",
        "instruction": "wide",
        "bbox": [0, 0, 10, 10],
        "box_format": "xywh",
        "app": "x",
        "platform": "y",
    },
]


def _rows_folder(tmp_path: Path) -> Path:
    _image(tmp_path)
    _image(tmp_path / "shots", "b.png", (64, 48))
    return tmp_path


def test_the_three_formats_read_the_same_rows_to_the_same_samples(tmp_path: Path) -> None:
    folder = _rows_folder(tmp_path)
    rows = [dict(r) for r in ROWS]
    for r in rows:
        if "bbox" in r:
            r.setdefault("box_format", "xyxy")
        if "bbox" in r or "polygon" in r:
            r.setdefault("units", "pixels")
    samples = {
        fmt: _load(write(folder / f"my.{fmt}", rows), tables=["app", "platform"])
        for fmt, write in (("jsonl", _jsonl), ("csv", _csv), ("parquet", _parquet))
    }
    assert samples["jsonl"] == samples["csv"] == samples["parquet"]
    a, b = str(folder / "a.png"), str(folder / "shots" / "b.png")
    labels = [("editor", "mac"), ("shop", "web"), ("editor", "mac"), ("shop", "web"), ("x", "y")]
    expected = [
        Sample("records", "0", a, SIZE, "save", Box(20, 10, 60, 30)),
        Sample("records", "poly", b, (64, 48), "open", Polygon(((0, 0), (50, 0), (50, 40)))),
        Sample("records", "2", a, SIZE, "find the ghost", Absent()),
        Sample("records", "n1", a, SIZE, "norm", Box(0.1, 0.1, 0.3, 0.3, space="normalized", size=SIZE)),
        Sample("records", "4", a, SIZE, "wide", Box(0, 0, 10, 10)),
    ]
    for s, e, (app, platform) in zip(samples["jsonl"], expected, labels, strict=True):
        assert s == Sample(
            e.benchmark,
            e.id,
            e.image_path,
            e.image_size,
            e.instruction,
            e.region,
            {"app": app, "platform": platform},
        )


def test_ids_labels_and_the_summary(tmp_path: Path) -> None:
    folder = _rows_folder(tmp_path)
    path = _jsonl(folder / "my.jsonl", [{**GOOD, "id": 7, "level": 2, "extra": 1}, {**GOOD, "other": "x"}])
    loaded = RecordsBenchmark().load(folder, RecordsOptions(path=str(path), **PIXELS))
    assert [s.id for s in loaded.samples] == ["7", "1"]
    assert loaded.summary["notes"] == [
        "columns not read: extra, level, other (bench.records.tables=[...] breaks the results down by "
        "label columns)"
    ]
    data = path.read_bytes()
    assert loaded.summary["provenance"] == {
        "source": "records",
        "files": [{"path": "my.jsonl", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}],
        "copy": None,
        "release_check": {
            "matches": None,
            "differences": [],
            "checked_against": "not checked: a user's own records have no release",
        },
        "allowed_differences": False,
    }
    assert loaded.summary["files"] == ["my.jsonl"] and loaded.summary["records"] == 2
    # an integer label is written out; labels are only the tables' columns
    path = _jsonl(folder / "my.jsonl", [{**GOOD, "level": 2, "extra": 1}])
    (s,) = _load(path, tables=["level"], **PIXELS)
    assert s.labels == {"level": "2"}


def test_an_absolute_image_path_and_a_missing_image(tmp_path: Path) -> None:
    folder = _rows_folder(tmp_path)
    rows = [{**GOOD, "image": str(folder / "shots" / "b.png")}, {**GOOD, "image": "gone.png"}]
    loaded = RecordsBenchmark().load(
        folder, RecordsOptions(path=str(_jsonl(folder / "r.jsonl", rows)), **PIXELS)
    )
    assert loaded.samples[0].image_path == str(folder / "shots" / "b.png")
    assert loaded.samples[0].image_size == (64, 48)
    # a missing screenshot is kept and listed (a counted miss when evaluated), as every loader does
    assert loaded.summary["unreadable_image_ids"] == ["1"]


# The same pixel box (x 20..60, y 10..30 in a 200 x 100 image) in every declaration.
DECLARED = [
    ("xyxy", "pixels", [20, 10, 60, 30]),
    ("xywh", "pixels", [20, 10, 40, 20]),
    ("xyxy", "norm_1", [0.1, 0.1, 0.3, 0.3]),
    ("xywh", "norm_1", [0.1, 0.1, 0.2, 0.2]),
    ("xyxy", "norm_1000", [100, 100, 300, 300]),
    ("xywh", "norm_1000", [100, 100, 200, 200]),
]


@pytest.mark.parametrize(("box_format", "units", "bbox"), DECLARED)
@pytest.mark.parametrize("declared_by", ["options", "rows"])
def test_every_declaration_maps_to_the_pixel_box(
    tmp_path: Path, box_format: str, units: str, bbox: list[float], declared_by: str
) -> None:
    _image(tmp_path)
    declared = {"box_format": box_format, "units": units}
    row = {**GOOD, "bbox": bbox, **(declared if declared_by == "rows" else {})}
    (s,) = _load(_jsonl(tmp_path / "r.jsonl", [row]), **(declared if declared_by == "options" else {}))
    assert isinstance(s.region, Box)
    assert s.region.space == ("pixel" if units == "pixels" else "normalized")
    assert s.region.pixel_box() == pytest.approx((20, 10, 60, 30))
    inside = [(20, 10), (60, 30), (40, 20), (21, 29)]
    outside = [(19, 20), (61, 20), (40, 9), (40, 31)]
    assert all(s.region.contains(x, y) for x, y in inside)
    assert not any(s.region.contains(x, y) for x, y in outside)


@pytest.mark.parametrize(
    ("units", "polygon"),
    [
        ("pixels", [20, 10, 60, 10, 60, 30]),
        ("norm_1", [[0.1, 0.1], [0.3, 0.1], [0.3, 0.3]]),
        ("norm_1000", [100, 100, 300, 100, 300, 300]),
    ],
)
def test_polygon_units_map_to_pixels(tmp_path: Path, units: str, polygon: list[Any]) -> None:
    _image(tmp_path)
    row = {**GOOD, "bbox": None, "polygon": polygon, "units": units}
    (s,) = _load(_jsonl(tmp_path / "r.jsonl", [{k: v for k, v in row.items() if v is not None}]))
    assert isinstance(s.region, Polygon)
    assert [tuple(v) for v in s.region.vertices] == [pytest.approx(v) for v in ((20, 10), (60, 10), (60, 30))]
    assert s.region.contains(55, 12) and not s.region.contains(25, 28)  # above / below the diagonal


@pytest.mark.parametrize(
    ("bbox", "units", "kept"),
    [
        ([0, 0, 1 + 9e-7, 1], "norm_1", True),  # within 1e-6 of the range: rounding, kept
        ([0, 0, 1 + 2e-6, 1], "norm_1", False),
        ([-9e-7, 0, 0.5, 0.5], "norm_1", True),
        ([-2e-6, 0, 0.5, 0.5], "norm_1", False),
        ([0, 0, 1000.0009, 1000], "norm_1000", True),  # 1e-6 of 1000
        ([0, 0, 1000.002, 1000], "norm_1000", False),
        ([0, 0, 1, 1], "norm_1000", True),  # a tiny box in norm_1000 is not refused: it is in range
    ],
)
def test_normalised_range_tolerance(tmp_path: Path, bbox: list[float], units: str, kept: bool) -> None:
    _image(tmp_path)
    path = _jsonl(tmp_path / "r.jsonl", [{**GOOD, "bbox": bbox}])
    if kept:
        (s,) = _load(path, box_format="xyxy", units=units)
        assert isinstance(s.region, Box)
    else:
        with pytest.raises(GgeError, match=rf"^{_at(path, 1)}: column 'bbox': .* outside \[0, "):
            _load(path, box_format="xyxy", units=units)


def test_boxes_at_the_limits_are_kept(tmp_path: Path) -> None:
    # not refused: a zero-area box (degenerate, counted), a box touching the image's edge from outside
    # (it shares the edge line), a box partly outside (counted), any box of an unreadable image
    _image(tmp_path)
    rows = [
        {**GOOD, "bbox": [10, 10, 10, 20]},
        {**GOOD, "bbox": [200, 0, 250, 10]},
        {**GOOD, "bbox": [-10, -10, 0, 0]},
        {**GOOD, "bbox": [190, 90, 250, 150]},
        {**GOOD, "image": "gone.png", "bbox": [250, 10, 300, 20]},
        {**GOOD, "bbox": None, "polygon": [[200, 100], [300, 100], [300, 200]]},
    ]
    rows = [{k: v for k, v in r.items() if v is not None} for r in rows]
    loaded = RecordsBenchmark().load(
        tmp_path, RecordsOptions(path=str(_jsonl(tmp_path / "r.jsonl", rows)), **PIXELS)
    )
    assert [s.region.pixel_box() for s in loaded.samples[:5]] == [
        (10, 10, 10, 20),
        (200, 0, 250, 10),
        (-10, -10, 0, 0),
        (190, 90, 250, 150),
        (250, 10, 300, 20),
    ]
    assert loaded.summary["degenerate_boxes"] == 1
    assert loaded.summary["unreadable_image_ids"] == ["4"]


def test_an_embedded_images_size_is_checked_against_the_row(tmp_path: Path) -> None:
    import io

    png = io.BytesIO()
    Image.new("RGB", (120, 60)).save(png, format="PNG")
    image = {"bytes": png.getvalue(), "path": "inside.png"}
    path = _parquet(tmp_path / "my.parquet", [{**GOOD, "image": image, "width": 120, "height": 60}])
    (s,) = _load(path, **PIXELS)
    assert s.image_size == (120, 60)
    path = _parquet(tmp_path / "bad.parquet", [{**GOOD, "image": image, "width": 240, "height": 60}])
    with pytest.raises(GgeError) as e:
        _load(path, **PIXELS)
    assert str(e.value) == (
        f"{path}:row 0: columns 'width'/'height' say 240x60, but the image embedded in the file is 120x60"
    )


def test_an_absent_target_is_hit_only_by_an_abstention(tmp_path: Path) -> None:
    _image(tmp_path)
    path = _jsonl(tmp_path / "r.jsonl", [{"image": "a.png", "instruction": "x", "absent": True}])
    (s,) = _load(path)
    assert s.region == Absent()
    hits = {
        name: score_sample(s, Prediction("records", s.id, (c,)), k=1).hits[0]
        for name, c in {
            "abstention": Candidate(None),
            "a point": Candidate((1.0, 1.0)),
            "the centre": Candidate((100.0, 50.0)),
            "unparsed": Candidate(None, parsed=False),
        }.items()
    }
    assert hits == {"abstention": True, "a point": False, "the centre": False, "unparsed": False}


def test_configured_gives_the_tables_and_the_title(tmp_path: Path) -> None:
    registered = RecordsBenchmark()
    bench = registered.configured(RecordsOptions(tables=["app", "platform"], name="My held-out set"))
    assert bench.label_keys == ("app", "platform") and bench.title == "My held-out set"
    assert [(t.title, t.rows, t.cols) for t in bench.tables] == [
        ("By app", "app", None),
        ("By platform", "platform", None),
    ]
    assert registered.label_keys == () and registered.tables == () and registered.title == "Records"
    assert RecordsBenchmark.label_keys == ()
    # its metrics: a one-column table per label column, hits counted by hand
    folder = _rows_folder(tmp_path)
    rows = [
        {**GOOD, "bbox": [0, 0, 10, 10], "app": app, "platform": p}
        for app, p in [("a", "mac"), ("a", "web"), ("b", "web")]
    ]
    samples = _load(_jsonl(folder / "r.jsonl", rows), tables=["app", "platform"], **PIXELS)
    points = [(5.0, 5.0), (50.0, 50.0), (5.0, 5.0)]  # hit, miss, hit
    results = [
        score_sample(s, Prediction("records", s.id, (Candidate(p),)), k=1)
        for s, p in zip(samples, points, strict=True)
    ]
    entry = benchmark_metrics(bench, results, k=1, strategy="first")
    assert entry["top1"] == pytest.approx(200 / 3)
    tables = {t["rows"]: {v: c["top1"] for v, c in t["row_avg"].items()} for t in entry["tables"]}
    assert tables == {"app": {"a": 50.0, "b": 100.0}, "platform": {"mac": 100.0, "web": 50.0}}


# ----------------------------------------------------------------------------------------------
# The demo folder.


def test_the_demo_folder_reads_with_the_default_options(tmp_path: Path) -> None:
    write_records_demo(tmp_path)
    first = (tmp_path / "records" / "records.jsonl").read_bytes()
    write_records_demo(tmp_path)
    assert (tmp_path / "records" / "records.jsonl").read_bytes() == first  # the same bytes every time
    bench = RecordsBenchmark()
    loaded = bench.load(tmp_path / bench.directory, bench.options_type())
    assert len(loaded.samples) == 12 and sum(isinstance(s.region, Absent) for s in loaded.samples) == 3
    assert {s.labels.__len__() for s in loaded.samples} == {0}  # the contract: labels == label_keys == ()
    for s in loaded.samples:
        with Image.open(s.image_path) as im:
            assert im.size == s.image_size
            rgb = im.convert("RGB")
            background = SCREENS[os.path.basename(s.image_path)][3]
            box = s.region.pixel_box()
            if box is None:
                continue
            # each target is a drawn button: its centre is inside the region and not the background
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            assert s.region.contains(cx, cy)
            assert rgb.getpixel((int(cx), int(cy))) != background, s.id
    tabled = bench.configured(RecordsOptions(tables=["app", "platform"]))
    loaded = tabled.load(tmp_path / "records", RecordsOptions(tables=["app", "platform"]))
    assert {s.labels["platform"] for s in loaded.samples} == {"desktop", "mobile", "web"}


# ----------------------------------------------------------------------------------------------
# End to end: python eval.py over a user's own file.

E2E_ROWS = [
    # (row, replay candidate, hit?)
    ({"bbox": [10, 10, 50, 30], "app": "mail", "platform": "desktop"}, [30, 20], True),
    ({"bbox": [10, 10, 50, 30], "app": "mail", "platform": "desktop"}, [80, 20], False),
    (
        {
            "bbox": [0.5, 0.5, 0.2, 0.2],
            "box_format": "xywh",
            "units": "norm_1",
            "app": "mail",
            "platform": "mobile",
        },
        [110, 60],
        True,
    ),
    ({"polygon": [0, 0, 100, 0, 0, 100], "app": "maps", "platform": "mobile"}, [10, 10], True),
    ({"absent": True, "app": "maps", "platform": "mobile"}, None, True),
    ({"absent": True, "app": "maps", "platform": "desktop"}, [5, 5], False),
]


def _e2e_files(tmp_path: Path) -> tuple[Path, Path]:
    _image(tmp_path / "shots")
    rows, lines = [], []
    for i, (target, point, _) in enumerate(E2E_ROWS):
        rows.append({"id": f"s{i}", "image": "shots/a.png", "instruction": f"task {i}", **target})
        lines.append({"benchmark": "records", "id": f"s{i}", "candidates": [point]})
    _jsonl(tmp_path / "my.jsonl", rows)
    return tmp_path / "my.jsonl", _jsonl(tmp_path / "preds.jsonl", lines)


@pytest.mark.slow
def test_eval_py_on_a_users_file(tmp_path: Path) -> None:
    records, preds = _e2e_files(tmp_path)
    cmd = [
        sys.executable,
        str(ROOT / "eval.py"),
        "benchmarks=[records]",
        "bench.records.path=my.jsonl",  # relative to the working directory
        "bench.records.box_format=xyxy",
        "bench.records.units=pixels",
        f"model.predictions={preds}",
        "output_dir=out",
        f"data_root={tmp_path}",  # records does not read it when path is set (and no demo suite is made)
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # norm_1 on a row contradicts units=pixels: the one-line error names the file and line
    p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "gge: error: my.jsonl:3: column 'box_format' is 'xywh', which contradicts "
        "bench.records.box_format=xyxy"
    ]
    cmd = [c for c in cmd if not c.startswith(("bench.records.box_format", "bench.records.units"))]
    rows = [json.loads(x) for x in records.read_text().splitlines()]
    for r in rows:
        if "bbox" in r or "polygon" in r:
            r.setdefault("units", "pixels")
        if "bbox" in r:
            r.setdefault("box_format", "xyxy")
    _jsonl(records, rows)
    p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    entry = doc["benchmarks"]["records"]
    hits = sum(hit for _, _, hit in E2E_ROWS)
    assert entry["samples"] == 6 and entry["top1"] == pytest.approx(100 * hits / 6)
    assert entry["abstentions"] == 1
    assert entry["load"]["variant"] == {
        "path": "my.jsonl",
        "format": "jsonl",
        "box_format": "per row",
        "units": "per row",
    }
    assert entry["load"]["provenance"]["source"] == "records"
    assert (
        entry["load"]["provenance"]["files"][0]["sha256"] == hashlib.sha256(records.read_bytes()).hexdigest()
    )
    assert entry["tables"] == []


@pytest.mark.slow
def test_eval_tables_break_down_by_label_columns(tmp_path: Path) -> None:
    from gge.cli.eval import main

    records, preds = _e2e_files(tmp_path)
    rows = [json.loads(x) for x in records.read_text().splitlines()]
    for r in rows:
        if "bbox" in r or "polygon" in r:
            r.setdefault("units", "pixels")
        if "bbox" in r:
            r.setdefault("box_format", "xyxy")
    _jsonl(records, rows)
    out = tmp_path / "out"
    code = main(
        [
            "benchmarks=[records]",
            f"bench.records.path={records}",
            "bench.records.tables=[app,platform]",
            "bench.records.name=My set",
            f"model.predictions={preds}",
            f"output_dir={out}",
            f"data_root={tmp_path}",
        ]
    )
    assert code == 0
    entry = json.loads((out / "results.json").read_text())["benchmarks"]["records"]
    # by hand from E2E_ROWS: mail 2/3, maps 2/3; desktop 1/3, mobile 3/3
    tables = {
        t["rows"]: {v: (c["samples"], c["top1"]) for v, c in t["row_avg"].items()} for t in entry["tables"]
    }
    assert tables == {
        "app": {"mail": (3, pytest.approx(200 / 3)), "maps": (3, pytest.approx(200 / 3))},
        "platform": {"desktop": (3, pytest.approx(100 / 3)), "mobile": (3, 100.0)},
    }
    assert [t["title"] for t in entry["tables"]] == ["By app", "By platform"]
    assert "My set" in (out / "report.md").read_text()


def test_parquet_images_embedded_as_hf_image_structs(tmp_path: Path) -> None:
    import io

    png = io.BytesIO()
    Image.new("RGB", (120, 60), (1, 2, 3)).save(png, format="PNG")
    _image(tmp_path)
    rows = [
        {**GOOD, "image": {"bytes": png.getvalue(), "path": "inside.png"}},
        {**GOOD, "image": {"bytes": None, "path": "a.png"}},  # an Image struct that only names a file
    ]
    path = _parquet(tmp_path / "my.parquet", rows)
    embedded, by_path = _load(path, **PIXELS)
    assert embedded.image_path == f"{path.resolve()}::parquet:0/image" and embedded.image_size == (120, 60)
    assert image_bytes(embedded.image_path) == png.getvalue()
    assert by_path.image_path == str(tmp_path / "a.png") and by_path.image_size == SIZE
    # a plain binary image column is embedded too
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"image": [png.getvalue()], "instruction": ["x"], "absent": [True]}), path)
    (s,) = _load(path)
    assert s.image_path == f"{path.resolve()}::parquet:0/image" and s.image_size == (120, 60)
