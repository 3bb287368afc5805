"""The demo-suite folders of the four benchmarks added after the six (FORMATS.md, sections 7-10).

They are written in their release layouts (WebP frames, JPEG screenshots, refusal records), and adding
them leaves the six original folders and the replay file byte for byte as they were.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks.demo import write_demo_suite
from gge.benchmarks.demo.suite import generate as suite_generate

SIX = ("screenspot_v2", "screenspot_pro", "osworld_g", "ui_vision", "mmbench_gui", "ui_i2e_bench")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_suite(tmp_path_factory.mktemp("demo_more") / "suite", seed=0, per_benchmark=12)


def hashes(base: Path) -> dict[str, str]:
    return {
        p.relative_to(base).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_six_folders_do_not_depend_on_the_new_writers(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite_generate, "MORE_WRITERS", ())
    monkeypatch.setattr(suite_generate, "SET_WRITERS", ())
    monkeypatch.setattr(suite_generate, "write_records_demo", lambda out: None)
    alone = write_demo_suite(tmp_path / "six", seed=0, per_benchmark=12)
    assert sorted(p.name for p in alone.iterdir()) == sorted(
        [*SIX, "predictions.jsonl", "demo_manifest.json"]
    )
    for name in (*SIX, "predictions.jsonl", "demo_manifest.json"):
        path = root / name
        if path.is_file():
            assert path.read_bytes() == (alone / name).read_bytes(), name
        else:
            assert hashes(path) == hashes(alone / name), name


def test_screenspot_v1_layout(root: Path) -> None:
    base = root / "screenspot_v1"
    records = {s: load_json(base / f"screenspot_{s}.json") for s in ("mobile", "desktop", "web")}
    assert sum(len(r) for r in records.values()) == 12
    for rec in (r for rs in records.values() for r in rs):
        assert set(rec) == {"img_filename", "bbox", "instruction", "data_type", "data_source"}
        x, y, w, h = rec["bbox"]
        assert all(isinstance(v, int) for v in rec["bbox"]) and w > 0 and h > 0
        with Image.open(base / "screenspot_imgs" / rec["img_filename"]) as im:
            assert im.format == "PNG" and x + w <= im.size[0] and y + h <= im.size[1]


def test_showdown_layout(root: Path) -> None:
    dev = root / "showdown_clicks" / "showdown-clicks-dev"
    with (dev / "data.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 12 and len({r["id"] for r in rows}) == 12
    assert {r["width"] + "x" + r["height"] for r in rows} == {"1280x800", "1440x900", "1470x956"}
    for r in rows:
        assert len(r["id"]) == 16 and int(r["id"], 16) >= 0
        assert r["image"] == f"frames/{r['recording_id']}/{Path(r['image']).name}"
        with Image.open(dev / r["image"]) as im:
            assert im.format == "WEBP" and im.size == (int(r["width"]), int(r["height"]))
        assert 0 <= int(r["x1"]) < int(r["x2"]) <= int(r["width"])


def test_cagui_layout(root: Path) -> None:
    base = root / "cagui_grounding"
    for name, folder in (("cap", ""), ("ocr", "ocr/")):
        lines = [json.loads(x) for x in (base / "code" / f"{name}.jsonl").read_text("utf-8").splitlines()]
        assert len(lines) == 6
        for n, rec in enumerate(lines):
            assert rec["image"] == f"grounding_eval/dataset/images/{folder}{n}.jpeg"
            x1, y1, x2, y2 = (int(v) for v in rec["abs_position"].strip("<>").split(","))
            with Image.open(base / "images" / name / f"{n}.jpeg") as im:
                assert im.format == "JPEG"
                rel = [float(v) for v in rec["rel_position"].strip("<>").split(",")]
                assert rel == [x1 / im.size[0], y1 / im.size[1], x2 / im.size[0], y2 / im.size[1]]
            assert rec["task"] == ("bbox2function" if name == "cap" else "bbox2text") and rec["text"]


def test_venusbench_layout_has_refusals(root: Path) -> None:
    base = root / "venusbench_gd"
    files = {p.stem: load_json(p) for p in sorted((base / "instruction").glob("*.json"))}
    assert sum(len(v) for v in files.values()) == 12
    refusals = files["refusal_grounding"]
    assert len(refusals) >= 2
    assert any(r.get("bbox") == [-1, -1, -1, -1] for r in refusals) and any("bbox" not in r for r in refusals)
    for rec in (r for rs in files.values() for r in rs):
        assert rec["instruction"] and rec["instruction_zh"]
        assert (base / "images" / rec["img_filename"]).is_file()
        assert rec["img_filename"].split("/")[0] == rec["platform"]
