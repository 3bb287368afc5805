"""WebClick: the Hub parquet as released (images embedded), ids by row, boxes' units, revision, a replay.

The fixture files are built from the card's features (FORMATS.md, section 12): ``image`` (the HF image
struct), ``instruction``, ``bbox`` ``[x1, y1, x2, y2]`` in [0, 1], ``bucket``; two files, read in name
order. Expected numbers are counted by hand from the planted points.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks import get_benchmark
from gge.benchmarks.webclick import BUCKET_TABLE, WebClickOptions
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 210, 220)).save(buf, "PNG")
    return buf.getvalue()


def _row(
    instruction: str, bbox: list[float], bucket: str, size: tuple[int, int] = (200, 100)
) -> dict[str, Any]:
    return {
        "image": {"bytes": _png(size), "path": None},
        "instruction": instruction,
        "bbox": bbox,
        "bucket": bucket,
    }


ROWS = [
    [
        _row("open menu", [0.1, 0.1, 0.2, 0.3], "agentbrowse"),
        _row("pick a date", [0.5, 0.5, 0.75, 1.0], "calendars"),
    ],
    [_row("search", [0.0, 0.0, 0.5, 0.5], "humanbrowse", (400, 300))],
]


def _write(root: Path, parts: list[list[dict[str, Any]]] = ROWS) -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    for k, part in enumerate(parts):
        pq.write_table(
            pa.Table.from_pylist(part), root / "data" / f"test-{k:05d}-of-{len(parts):05d}.parquet"
        )
    return root


def test_the_release_reads_by_row_with_normalised_boxes_and_its_revision(tmp_path: Path) -> None:
    root = _write(tmp_path / "webclick")
    loaded = get_benchmark("webclick").load(root, WebClickOptions(revision="9482a7d5"))
    assert [s.id for s in loaded.samples] == [
        "test_0",
        "test_1",
        "test_2",
    ]  # rows over the files in name order
    a, c = loaded.samples[0], loaded.samples[2]
    assert a.image_size == (200, 100) and c.image_size == (400, 300)
    assert a.region == Box(0.1, 0.1, 0.2, 0.3, "normalized", (200, 100))
    assert (
        a.region.contains(20, 10) and a.region.contains(40, 30) and not a.region.contains(40.5, 30)
    )  # inclusive
    assert c.labels == {"bucket": "humanbrowse"} and c.instruction == "search"
    s = loaded.summary
    assert s["variant"] == {"revision": "9482a7d5", "bbox": "norm_1"}
    assert s["notes"] == ["bbox read as norm_1 (bbox=auto: the boxes' values)"]
    files = sorted((root / "data").glob("*.parquet"))
    want = [
        {
            "path": f"data/{f.name}",
            "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
            "bytes": f.stat().st_size,
        }
        for f in files
    ]
    assert s["provenance"]["files"] == want
    assert (
        get_benchmark("webclick").load(root, WebClickOptions()).summary["variant"]["revision"] == "not named"
    )
    assert get_benchmark("webclick").tables[0].title == BUCKET_TABLE


def test_pixel_boxes_read_as_pixels_and_a_mix_is_refused(tmp_path: Path) -> None:
    pixels = [[_row("open menu", [20, 10, 40, 30], "agentbrowse")]]
    loaded = get_benchmark("webclick").load(_write(tmp_path / "p", pixels), WebClickOptions())
    assert loaded.samples[0].region == Box(20, 10, 40, 30) and loaded.summary["variant"]["bbox"] == "pixels"
    mixed = [[_row("a", [0.1, 0.1, 0.2, 0.2], "calendars"), _row("b", [20, 10, 40, 30], "calendars")]]
    root = _write(tmp_path / "m", mixed)
    with pytest.raises(
        GgeError, match=r"test-00000-of-00001\.parquet: row 1: its bbox is not in \[0, 1\], .*row 0's in"
    ):
        get_benchmark("webclick").load(root, WebClickOptions())
    forced = get_benchmark("webclick").load(root, WebClickOptions(bbox="pixels"))
    assert forced.samples[0].region == Box(0.1, 0.1, 0.2, 0.2)


def test_bad_rows_are_named(tmp_path: Path) -> None:
    root = _write(tmp_path / "b", [[_row("a", [0.1, 0.1, 0.2], "calendars")]])
    with pytest.raises(GgeError, match=r"test-00000-of-00001\.parquet: row 0: bbox must be 4 numbers"):
        get_benchmark("webclick").load(root, WebClickOptions())
    with pytest.raises(GgeError, match=r"webclick: no parquet file in"):
        get_benchmark("webclick").load(tmp_path, WebClickOptions())
    with pytest.raises(GgeError, match=r"unknown webclick bbox 'norm1'"):
        get_benchmark("webclick").load(root, WebClickOptions(bbox="norm1"))


def test_a_replay_scores_by_hand(tmp_path: Path) -> None:
    root = _write(tmp_path / "webclick")
    # test_0 (200x100, box 20..40 x 10..30): on the corner (40, 30) hits; test_1 (box 100..150 x 50..100):
    # (99, 60) misses; test_2 (400x300, box 0..200 x 0..150): (200, 150) on the corner hits
    lines = [("test_0", [40, 30]), ("test_1", [99, 60]), ("test_2", [200, 150])]
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        "".join(json.dumps({"benchmark": "webclick", "id": i, "candidates": [p]}) + "\n" for i, p in lines)
    )
    args = [f"bench.webclick.root={root}", "bench.webclick.revision=abc123", f"model.predictions={preds}"]
    doc = run(parse_args([*args, f"output_dir={tmp_path / 'o'}", "benchmarks=[webclick]"]), out=io.StringIO())
    e = doc["benchmarks"]["webclick"]
    assert e["samples"] == 3 and e["top1"] == pytest.approx(200 / 3)
    table = e["tables"][0]
    assert table["title"] == BUCKET_TABLE
    assert {v: table["row_avg"][v]["top1"] for v in table["row_values"]} == {
        "agentbrowse": 100.0,
        "humanbrowse": 100.0,
        "calendars": 0.0,
    }
    assert e["load"]["variant"] == {"revision": "abc123", "bbox": "norm_1"}
