"""A replay checks its file against the data it is scored on (issue 26 item 5).

A predictions file made on one demo suite, replayed on another whose screenshots have other names and
sizes, is refused in one line naming the file, the line, the sample, what differs and how many lines
differ; a replay over samples whose screenshots are missing scores them as misses listed under
``image_errors`` (not as hits on a 1x1 screenshot), and ``strict_images=true`` stops it.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from replay_runs import load_samples, read_lines, replay_run, write_lines

from gge.errors import GgeError
from gge.models.replay import ReplayModel

pytestmark = pytest.mark.usefixtures("one_thread_per_module")

N = 12
"""Samples per benchmark: fewer than a batch (16), so a run checks every line at once."""


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two demo suites of other seeds: the same ids, other screenshots."""
    from gge.benchmarks.demo import write_demo_suite

    root = tmp_path_factory.mktemp("suites")
    return (
        write_demo_suite(root / "zero", per_benchmark=N, seed=0),
        write_demo_suite(root / "one", per_benchmark=N, seed=1),
    )


@pytest.fixture(scope="module")
def written(suites: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The predictions.jsonl gge writes over suite zero (its lines carry ``image``, ``size``, ``target``)."""
    zero, _ = suites
    out = tmp_path_factory.mktemp("written")
    replay_run(zero, zero / "predictions.jsonl", out, "benchmarks=[screenspot_v2,screenspot_v1]")
    return out / "predictions.jsonl"


def _lines(written: Path, bench: str) -> list[dict[str, Any]]:
    return [r for r in read_lines(written) if r["benchmark"] == bench]


def test_a_file_of_other_screenshots_is_refused(
    suites: tuple[Path, Path], written: Path, tmp_path: Path
) -> None:
    _, one = suites
    lines = _lines(written, "screenspot_v2")
    theirs = {s.id: s for s in load_samples(one, "screenspot_v2")}
    # what differs, computed from the two suites' own records: every line's image name or size
    differ = [
        r
        for r in lines
        if Path(r["image"]).name != Path(theirs[r["id"]].image_path).name
        or tuple(r["size"]) != theirs[r["id"]].image_size
    ]
    assert len(differ) >= 2  # the seeds draw other screenshots
    predictions = write_lines(tmp_path / "zero.jsonl", lines)
    with pytest.raises(GgeError) as e:
        replay_run(one, predictions, tmp_path / "run", "benchmarks=[screenspot_v2]")
    message = str(e.value)
    first = differ[0]  # the file's first such line
    number = lines.index(first) + 1
    sample = theirs[first["id"]]
    w, h = first["size"]
    sw, sh = sample.image_size
    assert "\n" not in message
    assert message == (
        f"{predictions}:{number}: screenspot_v2 {first['id']}: the line's screenshot is "
        f"{Path(first['image']).name} ({w}x{h}), the sample's {Path(sample.image_path).name} ({sw}x{sh}) "
        f"({len(differ)} of the {N} lines checked name another screenshot or size than their sample: "
        "predictions made on other data; replay them on the data they were made on)"
    )
    assert not (tmp_path / "run" / "results.json").exists()


def test_a_line_of_another_size_only_is_refused(
    suites: tuple[Path, Path], written: Path, tmp_path: Path
) -> None:
    zero, _ = suites
    lines = _lines(written, "screenspot_v2")
    w, h = lines[3]["size"]
    lines[3] = {**lines[3], "size": [w + 1, h]}
    predictions = write_lines(tmp_path / "p.jsonl", lines)
    with pytest.raises(GgeError) as e:
        replay_run(zero, predictions, tmp_path / "run", "benchmarks=[screenspot_v2]")
    name = Path(lines[3]["image"]).name
    assert str(e.value).startswith(
        f"{predictions}:4: screenspot_v2 {lines[3]['id']}: the line's screenshot is {name} ({w + 1}x{h}), "
        f"the sample's {name} ({w}x{h}) (1 of the {N} lines checked"
    )


def test_its_own_file_replays(suites: tuple[Path, Path], written: Path, tmp_path: Path) -> None:
    zero, _ = suites
    predictions = write_lines(tmp_path / "p.jsonl", _lines(written, "screenspot_v2"))
    doc = replay_run(zero, predictions, tmp_path / "run", "benchmarks=[screenspot_v2]")
    entry = doc["benchmarks"]["screenspot_v2"]
    unparsed = sum(r["format_error"] for r in _lines(written, "screenspot_v2"))
    assert entry["image_errors"] == [] and entry["format_errors"] == unparsed


def _centre(line: dict[str, Any]) -> list[float]:
    """The centre of the line's target box, in pixels of its screenshot (a normalized box scaled)."""
    x1, y1, x2, y2 = line["target"]["box"]
    w, h = line["size"] if line["target"].get("space") == "normalized" else (1, 1)
    return [(x1 + x2) / 2 * w, (y1 + y2) / 2 * h]


def _without_screenshots(suite: Path, tmp_path: Path, bench: str, gone: int) -> tuple[Path, list[str]]:
    """A copy of the suite without the screenshots of ``bench``'s first ``gone`` samples; whose they were."""
    copy = tmp_path / "suite"
    shutil.copytree(suite, copy)
    samples = load_samples(copy, bench)
    files = {s.image_path for s in samples[:gone]}
    for path in files:
        Path(path).unlink()
    return copy, [s.id for s in samples if s.image_path in files]  # samples may share a screenshot


def test_missing_screenshots_are_listed_as_missing_not_scored(
    suites: tuple[Path, Path], written: Path, tmp_path: Path
) -> None:
    zero, _ = suites
    copy, removed = _without_screenshots(zero, tmp_path, "screenspot_v1", 3)
    # every line points at its target's centre: a missing screenshot scored from its line would hit
    lines = [{**r, "candidates": [_centre(r)]} for r in _lines(written, "screenspot_v1")]
    predictions = write_lines(tmp_path / "p.jsonl", lines)
    doc = replay_run(copy, predictions, tmp_path / "run", "benchmarks=[screenspot_v1]", buf=io.StringIO())
    entry = doc["benchmarks"]["screenspot_v1"]
    assert sorted(e["id"] for e in entry["image_errors"]) == sorted(removed)
    logged = {r["id"]: r for r in read_lines(tmp_path / "run" / "predictions.jsonl")}
    for sid in removed:
        assert not any(logged[sid]["hits"]) and logged[sid]["candidates"] == []
        assert "cannot read image" in logged[sid]["image_error"]
    kept = [r for r in lines if r["id"] not in removed]
    for r in kept:
        assert (logged[r["id"]]["candidates"], logged[r["id"]]["hits"]) == (r["candidates"], [True]), r


def test_strict_images_stops_a_replay(suites: tuple[Path, Path], written: Path, tmp_path: Path) -> None:
    zero, _ = suites
    copy, removed = _without_screenshots(zero, tmp_path, "screenspot_v1", 2)
    predictions = write_lines(tmp_path / "p.jsonl", _lines(written, "screenspot_v1"))
    with pytest.raises(GgeError) as e:
        replay_run(copy, predictions, tmp_path / "run", "benchmarks=[screenspot_v1]", "strict_images=true")
    assert "strict_images=true" in str(e.value)
    gone = {s.id: s.image_path for s in load_samples(copy, "screenspot_v1")}
    assert gone[removed[0]] in str(e.value)
    assert not (tmp_path / "run" / "results.json").exists()


def test_the_kind_checks_every_line_at_once(suites: tuple[Path, Path], written: Path, tmp_path: Path) -> None:
    """The check before evaluating (:meth:`ReplayKind.check_data`) counts every differing line."""
    from gge.models.registry import kind_of

    zero, one = suites
    lines = _lines(written, "screenspot_v2")
    model = ReplayModel(write_lines(tmp_path / "p.jsonl", lines))
    theirs = load_samples(one, "screenspot_v2")
    by_id = {s.id: s for s in theirs}
    differ = sum(
        Path(r["image"]).name != Path(by_id[r["id"]].image_path).name
        or tuple(r["size"]) != by_id[r["id"]].image_size
        for r in lines
    )
    with pytest.raises(GgeError, match=rf"\({differ} of the {N} lines checked"):
        kind_of("replay").check_data(model, {"screenspot_v2": theirs}, strict_images=False, out=io.StringIO())
    out = io.StringIO()
    ours = load_samples(zero, "screenspot_v2")
    kind_of("replay").check_data(model, {"screenspot_v2": ours}, strict_images=False, out=out)
    assert out.getvalue() == ""
