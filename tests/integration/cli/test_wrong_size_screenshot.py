"""A screenshot file of another size than its record says is that sample's image error, naming both sizes.

GroundUI-1K's records give each screenshot's ``resolution``: a file replaced by a smaller one (a wrong or
resized download) was scored as before against boxes in the record's pixels. Pinned on the demo suite's
GroundUI-1K, one screenshot shrunk to half its size, through the three paths that read screenshots: the
demo model in process, an endpoint (the scripted server on loopback: no request for that sample reaches
it) and a replay of the demo's predictions file; ``strict_images=true`` stops at it; a dry run says
so and writes no request for it.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from scripted_endpoint import Scripted

from gge.benchmarks import get_benchmark
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Sample

SAMPLES = 8
Shrunk = tuple[Path, list[Sample], tuple[int, int]]
"""The data root, the samples on the shrunk file, and its new size."""


@pytest.fixture
def shrunk(demo_suite: Path, tmp_path: Path) -> Shrunk:
    """A copy of the demo GroundUI-1K whose first sample's screenshot is half its recorded size.

    Returns the data root, the samples on that file, and its new size.
    """
    root = tmp_path / "data"
    shutil.copytree(demo_suite / "groundui_1k", root / "groundui_1k")
    bench = get_benchmark("groundui_1k")
    samples = bench.load(root / "groundui_1k", bench.options_type()).samples[:SAMPLES]
    bad = samples[0]
    on_it = [s for s in samples if s.image_path == bad.image_path]
    assert len(on_it) < SAMPLES
    with Image.open(bad.image_path) as im:
        assert im.size == bad.image_size  # the file was its record's size
        small = (im.size[0] // 2, im.size[1] // 2)
        im.convert("RGB").resize(small).save(bad.image_path)
    return root, on_it, small


def _run(root: Path, out: Path, *extra: str) -> dict[str, Any]:
    args = [f"data_root={root}", f"output_dir={out}", "benchmarks=[groundui_1k]", f"max_samples={SAMPLES}"]
    return run(parse_args([*args, *extra]), out=io.StringIO())


def _said(doc: dict[str, Any], bad: list[Sample], small: tuple[int, int]) -> None:
    entry = doc["benchmarks"]["groundui_1k"]
    assert entry["samples"] == SAMPLES  # kept in the denominator, as a missing file is
    listed = {x["id"]: x["error"] for x in entry["image_errors"]}
    assert set(listed) == {s.id for s in bad}
    for s in bad:
        w, h = s.image_size
        assert listed[s.id].startswith(
            f"groundui_1k: sample {s.id}: screenshot {s.image_path} is {small[0]}x{small[1]} pixels, "
            f"but its record says {w}x{h}"
        )


def test_in_process(shrunk: Shrunk, tmp_path: Path) -> None:
    root, bad, small = shrunk
    _said(_run(root, tmp_path / "out"), bad, small)


def test_endpoint(shrunk: Shrunk, tmp_path: Path, server: Scripted) -> None:
    root, bad, small = shrunk
    endpoint = ["model=openai_api", f"model.base_url={server.url}", "model.api_model=scripted", "probe=false"]
    doc = _run(root, tmp_path / "out", *endpoint, "progress_s=0")
    _said(doc, bad, small)
    assert len(server.log) == SAMPLES - len(bad)  # one request a sample, none for those


def test_replay(shrunk: Shrunk, demo_suite: Path, tmp_path: Path) -> None:
    root, bad, small = shrunk
    doc = _run(root, tmp_path / "out", f"model.predictions={demo_suite / 'predictions.jsonl'}")
    _said(doc, bad, small)


def test_strict_images_stops_at_it(shrunk: Shrunk, tmp_path: Path) -> None:
    root, _, small = shrunk
    with pytest.raises(GgeError, match=f"is {small[0]}x{small[1]} pixels, but its record says"):
        _run(root, tmp_path / "out", "strict_images=true")


def test_the_log_keeps_the_image_error(shrunk: Shrunk, tmp_path: Path) -> None:
    root, bad, _ = shrunk
    _run(root, tmp_path / "out")
    lines = [json.loads(x) for x in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    failed = [x for x in lines if "image_error" in x]
    assert {x["id"] for x in failed} == {s.id for s in bad} and all(x["candidates"] == [] for x in failed)


def test_a_dry_run_says_so_and_writes_no_request_for_it(shrunk: Shrunk, tmp_path: Path) -> None:
    root, bad, small = shrunk
    out = io.StringIO()
    args = [
        f"data_root={root}",
        f"output_dir={tmp_path / 'dry'}",
        "benchmarks=[groundui_1k]",
        f"max_samples={SAMPLES}",
    ]
    run(parse_args([*args, "model=qwen2_5_vl", "dry_run=true"]), out=out)
    requests = [json.loads(x) for x in (tmp_path / "dry" / "requests.jsonl").read_text().splitlines()]
    ids = {r["id"] for r in requests}
    assert ids.isdisjoint(s.id for s in bad) and len(ids) == SAMPLES - len(bad)
    printed = out.getvalue()
    assert f"warning: {len(bad)} screenshot" in printed
    assert f"is {small[0]}x{small[1]} pixels, but its record says" in printed
