"""``gge compare`` pairs runs on what their samples are, targets included (issue 26, items 1 and 2).

A tiny ScreenSpot-v2 (:mod:`hub_writers`: four records) in its release layout, a copy of it with one
box moved, and its HongxinLi parquet copy. Runs over them are hand-built output folders: the lines
of one set of predictions (the same candidates and outcomes on every side, as a replay gives), each
with its data's target; results.json with its data's ``samples_digest`` and ``load`` (the loaders'
own summary, provenance included). One slow test runs the demo and replays its predictions on the
moved copy and the parquet copy, as a user would.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hub_writers import tiny_parquet, tiny_release

from gge.benchmarks import get_benchmark
from gge.benchmarks.hub import load_source
from gge.cli.commands import main
from gge.compare import compare_runs, load_run
from gge.documents.records import target_json
from gge.documents.results import SCHEMA_VERSION
from gge.errors import GgeError
from gge.run.runstate import samples_digest
from gge.types import Sample

needs_pyarrow = pytest.mark.skipif(
    importlib.util.find_spec("pyarrow") is None,
    reason="pyarrow (the hub extra) is not installed: no parquet copy",
)

BENCH = "screenspot_v2"
SEL = "critic"
OUTCOMES = {
    "mobile_0": (True, True),
    "mobile_1": (False, True),
    "desktop_0": (False, False),
    "web_0": (True, True),
}
"""Per id (Top-1, Oracle@2): the one set of predictions written on every side."""


def _load(root: Path, **options: Any) -> tuple[list[Sample], dict[str, Any]]:
    bench = get_benchmark(BENCH)
    loaded = load_source(bench, root, bench.options_type(**options))
    return list(loaded.samples), dict(loaded.summary)


def _moved(release: Path, dest: Path, dx: float = 30) -> Path:
    """A copy of the release whose one web box (web_0) is moved ``dx`` pixels right."""
    shutil.copytree(release, dest)
    web = dest / "screenspot_web_v2.json"
    records = json.loads(web.read_text())
    records[0]["bbox"][0] += dx
    web.write_text(json.dumps(records))
    return dest


def _write_run(
    folder: Path,
    samples: list[Sample],
    summary: dict[str, Any] | None,
    *,
    digest: str | None,
    targets: bool = True,
) -> Path:
    """results.json (micro figures by formula) and predictions.jsonl: :data:`OUTCOMES` on ``samples``."""
    folder.mkdir(parents=True)
    lines = []
    for s in samples:
        top1, oracle = OUTCOMES[s.id]
        hits = [top1, oracle and not top1]
        cands = [[1.0, 1.0], [2.0, 2.0]]
        rec: dict[str, Any] = {
            "benchmark": BENCH,
            "id": s.id,
            "candidates": cands,
            "hits": hits,
            "image": s.image_path,
            "labels": dict(s.labels),
            "top1": {SEL: top1},
            "picks": {SEL: cands[0] if top1 else cands[1] if not hits[1] else None},
        }
        if targets:
            rec["target"] = target_json(s.region)
        lines.append(rec)
    n = len(lines)
    top1_pct = 100 * sum(OUTCOMES[s.id][0] for s in samples) / n
    oracle_pct = 100 * sum(OUTCOMES[s.id][1] for s in samples) / n
    entry: dict[str, Any] = {
        "samples": n,
        "top1": top1_pct,
        "oracle@2": oracle_pct,
        "micro": {"top1": top1_pct, "oracle@2": oracle_pct},
        "format_errors": 0,
        "image_errors": [],
        "load": summary if summary is not None else {"variant": {}},
    }
    if digest is not None:
        entry["samples_digest"] = digest
    doc = {
        "schema_version": SCHEMA_VERSION,
        "k": 2,
        "selection": SEL,
        "protocol": "hand-built",
        "benchmarks": {BENCH: entry},
    }
    (folder / "results.json").write_text(json.dumps(doc))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def _refusal(a: Path, b: Path) -> str:
    with pytest.raises(GgeError) as e:
        compare_runs(load_run(a), load_run(b), resamples=20)
    msg = str(e.value)
    assert "\n" not in msg and str(a) in msg and str(b) in msg
    return msg


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- item 1: one target moved --------------------------------------------------------------------------


def test_runs_on_data_that_differs_in_one_target_are_refused_naming_the_target_and_the_file(
    tmp_path: Path,
) -> None:
    release = tiny_release(tmp_path / "release")
    moved = _moved(release, tmp_path / "moved")
    (sa, la), (sb, lb) = _load(release), _load(moved)
    assert [(s.id, s.instruction, s.image_size) for s in sa] == [
        (s.id, s.instruction, s.image_size) for s in sb
    ]
    assert samples_digest(sa) != samples_digest(sb)  # the one box is in the digest
    a = _write_run(tmp_path / "A", sa, la, digest=samples_digest(sa))
    b = _write_run(tmp_path / "B", sb, lb, digest=samples_digest(sb))
    msg = _refusal(a, b)
    # web_0: [7, 9, 11, 13] xywh in the release, x moved by 30 pixels in the copy
    assert (
        f"{BENCH}: different samples behind the same ids: the targets differ for 1 of 4 samples ('web_0'; "
        "web_0: A 'bbox/pixel 7.000 9.000 18.000 22.000' vs B 'bbox/pixel 37.000 9.000 48.000 22.000')"
    ) in msg
    web = "screenspot_web_v2.json"
    assert (
        f"load.provenance: {web} sha256 {_sha(release / web)[:12]}… in A vs {_sha(moved / web)[:12]}… in B"
    ) in msg
    # the CLI says the same in one line
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 2


def test_lines_without_targets_are_refused_by_the_samples_digest(tmp_path: Path) -> None:
    """An older predictions.jsonl records no targets: the digests still tell the data apart."""
    release = tiny_release(tmp_path / "release")
    moved = _moved(release, tmp_path / "moved")
    (sa, la), (sb, lb) = _load(release), _load(moved)
    da, db = samples_digest(sa), samples_digest(sb)
    a = _write_run(tmp_path / "A", sa, la, digest=da, targets=False)
    b = _write_run(tmp_path / "B", sb, lb, digest=db, targets=False)
    msg = _refusal(a, b)
    assert f"{BENCH}: different samples behind the same ids: samples digest {da[:16]}… in " in msg
    assert "other targets, instructions or screenshot sizes" in msg
    assert f"{db[:16]}… in {b / 'results.json'}" in msg  # the file each digest was read from
    assert f"screenspot_web_v2.json sha256 {_sha(release / 'screenspot_web_v2.json')[:12]}…" in msg
    # without load.provenance the message says it cannot point at a file
    c = _write_run(tmp_path / "C", sb, None, digest=db, targets=False)
    assert "no load.provenance in both results.json" in _refusal(a, c)


def test_a_box_moved_below_1e3_pixel_is_the_same_target(tmp_path: Path) -> None:
    release = tiny_release(tmp_path / "release")
    nudged = _moved(release, tmp_path / "nudged", dx=1e-5)
    (sa, la), (sb, lb) = _load(release), _load(nudged)
    assert samples_digest(sa) == samples_digest(sb)
    a = _write_run(tmp_path / "A", sa, la, digest=samples_digest(sa))
    b = _write_run(tmp_path / "B", sb, lb, digest=samples_digest(sb))
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    assert doc["benchmarks"][BENCH]["samples"] == 4


def test_an_older_digest_on_one_side_is_a_note_and_targets_are_still_checked(tmp_path: Path) -> None:
    release = tiny_release(tmp_path / "release")
    sa, la = _load(release)
    old = hashlib.sha256(b"ids, instructions, screenshot names").hexdigest()  # gge before v2
    a = _write_run(tmp_path / "A", sa, la, digest=old)
    b = _write_run(tmp_path / "B", sa, la, digest=samples_digest(sa))
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    notes = [n for n in doc["notes"] if "digest" in n]
    assert notes == [
        f"{BENCH}: the samples digests cannot be compared (A's covers ids, instructions and screenshot "
        "names (an older gge), B's ids, instructions, targets and image sizes): samples paired by id "
        "and recorded targets only"
    ]
    sb, lb = _load(_moved(release, tmp_path / "moved"))
    c = _write_run(tmp_path / "C", sb, lb, digest=samples_digest(sb))
    assert "the targets differ for 1 of 4 samples ('web_0'" in _refusal(a, c)


# -- item 2: a Hub copy that matches the release -------------------------------------------------------


@needs_pyarrow
def test_a_hub_copy_matching_the_release_has_the_release_digest_and_pairs(tmp_path: Path) -> None:
    release = tiny_release(tmp_path / "release")
    copy = tiny_parquet(tmp_path / "copy")
    sa, la = _load(release)
    sb, lb = _load(copy, source="parquet", release_root=str(release))
    assert lb["provenance"]["release_check"]["matches"] is True
    # the copy names its screenshots by parquet row, the release by file
    assert {Path(s.image_path).name for s in sa} == {"mobile_m.png", "pc_d.png", "web_w.png"}
    assert all("::parquet:" in s.image_path for s in sb)
    assert samples_digest(sb) == samples_digest(sa)
    a = _write_run(tmp_path / "A", sa, la, digest=samples_digest(sa))
    b = _write_run(tmp_path / "B", sb, lb, digest=samples_digest(sb))
    for x, y in ((a, b), (b, a)):
        doc = compare_runs(load_run(x), load_run(y), resamples=20)
        assert not any("digest" in n for n in doc["notes"])
        entry = doc["benchmarks"][BENCH]
        assert entry["samples"] == 4
        # clustered by the release's screenshots (two samples share mobile_m.png), whichever side it is
        assert entry["screenshots"] == 3
    # a copy with one box moved is another digest, and refused naming the box
    w, h = 117, 253  # mobile_1: [0, 0, 5, 5] pixels on mobile_m.png
    moved = tiny_parquet(tmp_path / "moved", {"bbox": [0.0, 0.0, 9 / w, 5 / h]})
    sc, lc = _load(moved, source="parquet", release_root=str(release), allow_copy_differences=True)
    assert samples_digest(sc) != samples_digest(sa)
    c = _write_run(tmp_path / "C", sc, lc, digest=samples_digest(sc))
    msg = _refusal(a, c)
    assert (
        "the targets differ for 1 of 4 samples ('mobile_1'; mobile_1: A 'bbox/pixel 0.000 0.000 5.000 5.000'"
        in msg
    )
    assert "vs B 'bbox/pixel 0.000 0.000 9.000 5.000')" in msg
    assert (
        "load.provenance: A read 'screenspot_desktop_v2.json', 'screenspot_mobile_v2.json', ..., B read "
        in msg
    )


# -- as a user runs it ---------------------------------------------------------------------------------


@needs_pyarrow
@pytest.mark.slow
def test_replays_on_a_moved_copy_and_a_hub_copy_compare_as_they_should(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gge.run.settings import parse_args
    from gge.run.standalone import run

    release = tiny_release(tmp_path / "release" / BENCH)
    _moved(release, tmp_path / "moved" / BENCH)
    tiny_parquet(tmp_path / "hub" / BENCH)

    def evaluate(name: str, data: str, *extra: str) -> Path:
        argv = [f"data_root={tmp_path / data}", f"benchmarks=[{BENCH}]", f"output_dir={tmp_path / name}"]
        run(parse_args([*argv, "report_misses=0", *extra]), out=io.StringIO())
        return tmp_path / name

    a = evaluate("A", "release")  # the demo model
    replay = f"model.predictions={a / 'predictions.jsonl'}"
    b = evaluate("B", "moved", replay)
    c = evaluate("C", "hub", replay, f"bench.{BENCH}.source=parquet", f"bench.{BENCH}.release_root={release}")
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the targets differ for 1 of 4 samples ('web_0';" in err
    assert main(["compare", str(a), str(c), "--resamples", "20"]) == 0
