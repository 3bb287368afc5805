"""GroundUI-1K / -18K: the release layout, ids by line, the strict hit rule, and the real records.

Fixture lines are built from the release's schema (FORMATS.md, section 14); the real-record tests
(skipped without ../shared) lay placeholder screenshots of each line's ``resolution`` and compare the
loader and a replay with counts computed here from the raw lines by the strict rule written out.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from real_records import SHARED, Placeholders, link

from gge.benchmarks import get_benchmark
from gge.benchmarks.groundui import GroundUIOptions
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box

REAL = SHARED / "groundui_1k" / "gui_grounding" / "metadata_1k.jsonl"


def _line(
    image: str, instruction: str, bbox: list[float], platform: str = "web", **more: Any
) -> dict[str, Any]:
    return {
        "image": image,
        "instruction": instruction,
        "bbox": bbox,
        "source": "omniact",
        "platform": platform,
        "resolution": [200, 100],
        "raw_instruction": more.pop("raw", "raw_" + instruction),
        **more,
    }


def _write(root: Path, lines: list[dict[str, Any]], file: str = "metadata_1k.jsonl") -> Path:
    folder = root / "gui_grounding"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text("".join(json.dumps(x) + "\n" for x in lines))
    raw = [{**x, "instruction": x["raw_instruction"]} for x in lines]
    (folder / file.replace("metadata", "metadata_raw")).write_text("".join(json.dumps(x) + "\n" for x in raw))
    return root


LINES = [
    _line("web_a.png", "open menu", [10, 10, 30, 20]),
    _line("web_a.png", "flat", [40, 50, 60, 50]),  # zero height: never hit when the edges are excluded
    _line("desk_b.png", "past the edge", [150, 10, 230, 40], platform="desktop"),  # x2 past the width
    _line("web_a.png", "open menu", [10, 10, 30, 20]),  # the first line's (image, instruction) again
    _line("mob_c.png", "search", [0.5, 1.25, 20.75, 9.5], platform="mobile"),  # float corners
]


def test_the_release_layout_reads_by_line_with_the_strict_rule(tmp_path: Path) -> None:
    bench = get_benchmark("groundui_1k")
    loaded = bench.load(_write(tmp_path, LINES), GroundUIOptions())
    assert [s.id for s in loaded.samples] == ["0", "1", "2", "3", "4"]
    first = loaded.samples[0]
    assert first.image_path == str(tmp_path / "gui_grounding" / "images" / "web_a.png")
    assert first.image_size == (200, 100) and first.labels == {"platform": "web", "source": "omniact"}
    assert first.region == Box(10, 10, 30, 20, strict=True)
    # the edges are not inside; just within them is
    assert not first.region.contains(10, 15) and not first.region.contains(20, 20)
    assert first.region.contains(10.001, 19.999)
    assert loaded.samples[4].region == Box(0.5, 1.25, 20.75, 9.5, strict=True)
    s = loaded.summary
    assert s["degenerate_ids"] == ["1"] and s["outside_image_ids"] == ["2"]
    assert s["variant"] == {"instructions": "recaptioned", "edges": "excluded"}
    assert bench.headline_caveat(GroundUIOptions()) is None
    # the root may be the gui_grounding folder itself
    assert len(bench.load(tmp_path / "gui_grounding", GroundUIOptions()).samples) == 5


def test_the_variants_are_labelled_not_official(tmp_path: Path) -> None:
    bench = get_benchmark("groundui_1k")
    _write(tmp_path, LINES)
    raw = bench.load(tmp_path, GroundUIOptions(instructions="raw"))
    assert raw.samples[0].instruction == "raw_open menu"
    assert raw.summary["files"] == ["gui_grounding/metadata_raw_1k.jsonl"]
    included = bench.load(tmp_path, GroundUIOptions(edges="included"))
    assert included.samples[0].region.contains(10, 15)  # an edge point hits when the edges are included
    caveat = bench.headline_caveat(GroundUIOptions(instructions="raw", edges="included"))
    assert caveat == (
        "the raw instructions (metadata_raw_1k.jsonl), an ablation; the box's edges included (the official "
        "scorer excludes them)"
    )
    with pytest.raises(GgeError, match=r"unknown groundui_1k edges 'inclusive'"):
        bench.load(tmp_path, GroundUIOptions(edges="inclusive"))


def test_groundui_18k_is_read_by_the_same_loader(tmp_path: Path) -> None:
    loaded = get_benchmark("groundui_18k").load(_write(tmp_path, LINES, "metadata.jsonl"), GroundUIOptions())
    assert len(loaded.samples) == 5 and loaded.summary["files"] == ["gui_grounding/metadata.jsonl"]
    assert loaded.samples[0].benchmark == "groundui_18k"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({k: v for k, v in LINES[0].items() if k != "resolution"}, r"record 1 has no field 'resolution'"),
        ({**LINES[0], "bbox": [1, 2, 3]}, r"record 1: field 'bbox' must be 4 numbers"),
        ({**LINES[0], "platform": None}, r"record 1: field 'platform' must be a string"),
        ({**LINES[0], "image": "../../etc/passwd"}, r"record 1: image path escapes the benchmark folder"),
    ],
)
def test_a_bad_line_is_named_by_file_and_line(tmp_path: Path, line: dict[str, Any], message: str) -> None:
    _write(tmp_path, [LINES[0], line])
    with pytest.raises(GgeError, match=r"gui_grounding/metadata_1k\.jsonl:2: " + message):
        get_benchmark("groundui_1k").load(tmp_path, GroundUIOptions())


# -- the real records ---------------------------------------------------------------------------------
real = pytest.mark.skipif(not REAL.is_file(), reason=f"real annotation records not present ({REAL})")


def _real_lines() -> list[dict[str, Any]]:
    return [json.loads(x) for x in REAL.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def real_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("groundui") / "groundui_1k"
    link(REAL, root / "gui_grounding" / "metadata_1k.jsonl")
    lay = Placeholders(tmp_path_factory.mktemp("pngs")).lay
    for x in _real_lines():
        lay(root / "gui_grounding" / "images" / x["image"], x["resolution"])
    return root


@real
def test_the_real_records_count_as_the_release_says(real_root: Path) -> None:
    lines = _real_lines()
    loaded = get_benchmark("groundui_1k").load(real_root, GroundUIOptions())
    assert len(loaded.samples) == len(lines) == 1000
    assert Counter(s.labels["platform"] for s in loaded.samples) == {
        "web": 400,
        "desktop": 300,
        "mobile": 300,
    }
    flat = [
        str(i) for i, x in enumerate(lines) if x["bbox"][3] <= x["bbox"][1] or x["bbox"][2] <= x["bbox"][0]
    ]
    assert flat == ["67"] and loaded.summary["degenerate_ids"] == flat  # y1 == y2 == 652
    past = [
        str(i)
        for i, x in enumerate(lines)
        if min(x["bbox"][:2]) < 0 or x["bbox"][2] > x["resolution"][0] or x["bbox"][3] > x["resolution"][1]
    ]
    assert len(past) == 26 and loaded.summary["boxes_outside_image"] == 26
    assert loaded.summary["outside_image_ids"] == past
    pairs = Counter((x["image"], x["instruction"]) for x in lines)
    repeated = sum(n - 1 for n in pairs.values() if n > 1)
    assert repeated == 4  # four lines repeat an earlier (image, instruction) pair: each its own sample
    assert len({(s.image_path, s.instruction) for s in loaded.samples}) == 1000 - repeated


def _point(i: int, x1: float, y1: float, x2: float, y2: float) -> list[float]:
    """Line i's planted answer: the centre, an edge, just inside an edge, or outside."""
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    return [[cx, cy], [x1, cy], [x1 + 0.25, cy], [x2 + 5, cy], [cx, y2]][i % 5]


@real
@pytest.mark.parametrize("edges", ["excluded", "included"])
def test_a_replay_of_the_real_records_scores_as_counted_by_hand(
    real_root: Path, tmp_path: Path, edges: str
) -> None:
    lines = _real_lines()
    preds = tmp_path / "p.jsonl"
    points = [_point(i, *x["bbox"]) for i, x in enumerate(lines)]
    preds.write_text(
        "".join(
            json.dumps({"benchmark": "groundui_1k", "id": str(i), "candidates": [p]}) + "\n"
            for i, p in enumerate(points)
        )
    )

    def hit(p: list[float], b: list[float]) -> bool:
        if edges == "excluded":
            return b[0] < p[0] < b[2] and b[1] < p[1] < b[3]
        return b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3]

    hits = [hit(p, x["bbox"]) for p, x in zip(points, lines, strict=True)]
    args = [f"bench.groundui_1k.root={real_root}", f"bench.groundui_1k.edges={edges}"]
    args += [f"model.predictions={preds}", f"output_dir={tmp_path / 'o'}", "benchmarks=[groundui_1k]"]
    doc = run(parse_args(args), out=io.StringIO())
    e = doc["benchmarks"]["groundui_1k"]
    assert e["samples"] == 1000 and e["top1"] == pytest.approx(100.0 * sum(hits) / 1000)
    platform = {t["title"]: t for t in e["tables"]}["By platform"]
    for row in ("web", "desktop", "mobile"):
        mine = [h for h, x in zip(hits, lines, strict=True) if x["platform"] == row]
        cell = platform["row_avg"][row]
        assert cell["samples"] == len(mine) and cell["top1"] == pytest.approx(100.0 * sum(mine) / len(mine))
    if edges == "excluded":
        assert sum(hits) == sum(1 for i in range(1000) if i % 5 in (0, 2)) - 1  # the flat box's centre misses


def test_the_strict_rule_survives_every_file_that_writes_a_target() -> None:
    from gge.benchmarks.hub_digests import region_key
    from gge.documents.records import _target, target_json

    strict, inclusive = Box(10, 10, 30, 20, strict=True), Box(10, 10, 30, 20)
    written = json.loads(json.dumps(target_json(strict)))
    assert written == {"box": [10, 10, 30, 20], "strict": True} and "strict" not in target_json(inclusive)
    back = _target(written, "p.jsonl:1")
    assert back == strict and back is not None and not back.contains(10, 15)
    assert region_key(strict) != region_key(inclusive)  # the samples digest tells the rules apart
    with pytest.raises(GgeError, match=r"p\.jsonl:1: field 'target' must be"):
        _target({**written, "strict": "yes"}, "p.jsonl:1")
