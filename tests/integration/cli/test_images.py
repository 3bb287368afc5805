"""One bad screenshot is that sample's counted failure, not the end of the run (issue 13, point 3)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gge.benchmarks import get_benchmark
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Sample


@pytest.fixture
def broken(demo_suite: Path, tmp_path: Path) -> tuple[Path, list[Sample]]:
    """A copy of the demo ScreenSpot-v2 with one screenshot missing and one that is not an image."""
    root = tmp_path / "data"
    shutil.copytree(demo_suite / "screenspot_v2", root / "screenspot_v2")
    bench = get_benchmark("screenspot_v2")
    samples = bench.load(root / "screenspot_v2", bench.options_type()).samples[:12]
    images = sorted({s.image_path for s in samples})
    assert len(images) >= 2
    Path(images[0]).unlink()
    Path(images[1]).write_bytes(b"not a png")
    return root, [s for s in samples if s.image_path in images[:2]]


def _run(root: Path, out: Path, *extra: str) -> tuple[dict[str, Any], str]:
    buf = io.StringIO()
    args = [f"data_root={root}", f"output_dir={out}", "benchmarks=[screenspot_v2]", "max_samples=12", *extra]
    return run(parse_args(args), out=buf), buf.getvalue()


def test_bad_screenshots_are_counted_misses_and_listed(
    broken: tuple[Path, list[Sample]], tmp_path: Path
) -> None:
    root, bad = broken
    doc, printed = _run(root, tmp_path / "out")
    e = doc["benchmarks"]["screenspot_v2"]
    assert e["samples"] == 12  # kept in the denominator
    listed = {x["id"]: x["error"] for x in e["image_errors"]}
    assert set(listed) == {s.id for s in bad}
    for s in bad:
        assert s.image_path in listed[s.id]
    assert e["format_errors"] == 0  # counted apart from format errors
    records = [json.loads(x) for x in (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    failed = [r for r in records if "image_error" in r]
    assert {r["id"] for r in failed} == {s.id for s in bad}
    assert all(r["candidates"] == [] and r["top1"]["critic"] is False for r in failed)
    missing = [s for s in bad if not Path(s.image_path).exists()]
    assert "warning: missing screenshots: 1 files (6 samples, scored as misses" in printed
    assert all(s.image_path in printed for s in missing)
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"Unreadable screenshots (the model was not asked; scored as misses): {len(bad)}" in report
    # a rerun resumes them from the log: the same numbers
    again, printed = _run(root, tmp_path / "out")
    assert "resuming: 12 samples" in printed
    assert again["benchmarks"]["screenspot_v2"]["image_errors"] == e["image_errors"]


def test_strict_images_stops_and_lists_every_missing_file(
    broken: tuple[Path, list[Sample]], tmp_path: Path
) -> None:
    root, bad = broken
    Path(next(s for s in bad if Path(s.image_path).exists()).image_path).unlink()  # now both are missing
    with pytest.raises(GgeError) as e:
        _run(root, tmp_path / "strict", "strict_images=true")
    msg = str(e.value)
    assert msg.startswith("missing screenshots: 2 files (12 samples, strict_images=true):")
    assert all(s.image_path in msg for s in bad)


def test_strict_images_stops_at_an_undecodable_file(
    broken: tuple[Path, list[Sample]], tmp_path: Path
) -> None:
    root, bad = broken
    corrupt = next(s for s in bad if Path(s.image_path).exists())
    gone = next(s for s in bad if not Path(s.image_path).exists())
    shutil.copy(corrupt.image_path, gone.image_path)  # the missing one is back, as garbage
    with pytest.raises(GgeError, match=r"cannot read image .*\(strict_images=true\)"):
        _run(root, tmp_path / "strict", "strict_images=true")


def test_a_replay_run_lists_the_bad_screenshots_as_any_run_does(
    broken: tuple[Path, list[Sample]], demo_suite: Path, tmp_path: Path
) -> None:
    """A replay scores answers on screenshots: one it cannot read is a miss listed, not a hit replayed."""
    root, bad = broken
    doc, printed = _run(root, tmp_path / "replay", f"model.predictions={demo_suite / 'predictions.jsonl'}")
    assert {e["id"] for e in doc["benchmarks"]["screenspot_v2"]["image_errors"]} == {s.id for s in bad}
    assert "missing screenshots" in printed


def test_the_callback_counts_them_and_training_goes_on(
    broken: tuple[Path, list[Sample]], tmp_path: Path
) -> None:
    from gge.callbacks import GroundingEvalCallback
    from lightning_fit import NoVal, _fit

    from gge.models.demo import load_demo_policy

    root, bad = broken
    cb = GroundingEvalCallback(
        benchmarks={"screenspot_v2": root / "screenspot_v2"},
        policy=lambda module: load_demo_policy(),
        max_samples_per_benchmark=36,
        every_n_epochs=1,
    )
    trainer = _fit(NoVal(), tmp_path, cb, max_epochs=1)
    assert trainer.current_epoch == 1 and len(cb.history) == 1
    assert float(trainer.callback_metrics["grounding/screenspot_v2/image_errors"]) == len(bad)
    strict = GroundingEvalCallback(
        benchmarks={"screenspot_v2": root / "screenspot_v2"},
        policy=lambda module: load_demo_policy(),
        strict_images=True,
    )
    with pytest.raises(GgeError, match=r"strict_images=true"):
        _fit(NoVal(), tmp_path / "strict", strict, max_epochs=1)
