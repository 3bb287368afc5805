"""``gge explain`` as a user runs it: an unwritable ``--out``, a demo-suite run without ``--data-root``,
and the walk's files, figures and published figure said in full (issue "Nothing silently wrong, round
three", items 3 and 5).

The figures are counted by hand from a tiny suite (12 ScreenSpot-v2 samples): A is a harness's log of
4 of them, B answers every sample at its target's centre.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from unwritable import denied, read_only_folder

from gge.benchmarks.demo import write_demo_suite
from gge.benchmarks.loading import load_benchmarks
from gge.cli.commands import main
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Sample

BENCH = "screenspot_v2"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_suite(tmp_path_factory.mktemp("demo"), per_benchmark=12)


def _samples(suite: Path) -> list[Sample]:
    return load_benchmarks([BENCH], suite, {}).samples[BENCH]


def _centre(s: Sample) -> list[float]:
    x1, y1, x2, y2 = s.region.pixel_box()  # type: ignore[union-attr]
    return [(x1 + x2) / 2, (y1 + y2) / 2]


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _sides(suite: Path, folder: Path) -> tuple[list[Sample], Path, Path]:
    """A: a log of the first 4 samples (3 judged right at the centre, 1 wrong far off); B: every centre."""
    samples = _samples(suite)
    log = []
    for i, s in enumerate(samples[:4]):
        point = _centre(s) if i < 3 else [-5.0, 3.0]  # outside every screenshot: a miss
        block = {
            "format": "gelato",
            "file": "g",
            "line": i + 1,
            "correct": i < 3,
            "counted": True,
            "point": point,
        }
        log.append({"benchmark": BENCH, "id": s.id, "candidates": [point], "imported": block})
    a = _write(folder / "a.jsonl", log)
    b = _write(
        folder / "b.jsonl", [{"benchmark": BENCH, "id": s.id, "candidates": [_centre(s)]} for s in samples]
    )
    return samples, a, b


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["explain", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# --- item 5: the files, the figures the walk passes through, what the published figure is set against ---


def test_the_walk_names_its_files_and_prints_each_steps_figures(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    samples, _, _ = _sides(suite, tmp_path)
    assert len(samples) == 12
    args = ["a.jsonl", "b.jsonl", "--benchmark", BENCH, "--data-root", str(suite), "--published", "99.5"]
    assert main(["explain", *args, "--out", "explained"]) == 0
    text = (tmp_path / "explained" / "explain.md").read_text()
    assert text in capsys.readouterr().out
    # A printed 3 of its 4 counted lines (75); over the 12 samples 3 hits (25); B hits all 12 (100),
    # printed over its 12 lines (100); the published 99.5 is 0.5 under it
    assert "A: a.jsonl · B: b.jsonl" in text  # the paths as given
    assert "A: 75.00 · B: 99.50 · difference +24.50 points" in text
    assert "gge's rule on the 12 samples: A 25.00 · B 100.00" in text
    assert "| A: denominator | 75.00 | 25.00 | -50.00 | 0 | 0 | " in text
    assert "| answer | 25.00 | 100.00 | +75.00 | 9 | 0 | " in text
    assert (
        "| printed | 100.00 | 99.50 | -0.50 | 0 | 0 |  (published 99.50 against 100.00 computed, B's printed "
        "figure: gge's rule (micro) over its 12 lines, of the 12 samples) |" in text
    )
    doc = json.loads((tmp_path / "explained" / "explain.json").read_text())
    assert (doc["a_file"], doc["b_file"]) == ("a.jsonl", "b.jsonl")
    assert doc["gge_rule"] == {"a": 25.0, "b": 100.0}
    figures = {s["name"]: (s["from"], s["to"]) for s in doc["steps"]}
    assert figures["A: denominator"] == (75.0, 25.0)
    assert figures["A: data"] == figures["A: verdict rule"] == figures["A: parse / frame"] == (25.0, 25.0)
    assert figures["answer"] == (25.0, 100.0)
    assert figures["B: denominator (back)"] == (100.0, 100.0)
    assert figures["printed"] == (100.0, 99.5)
    page = (tmp_path / "explained" / "explain.html").read_text()
    assert "A: <code>a.jsonl</code> · B: <code>b.jsonl</code>" in page
    assert "<td>answer</td><td>25.00</td><td>100.00</td>" in page


def test_the_published_step_of_a_log_says_its_harnesss_verdicts_and_lines(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, a, b = _sides(suite, tmp_path)
    # the log on the B side: it printed its own verdicts over the 4 lines it counted and judged
    assert (
        main(
            ["explain", str(b), str(a), "--benchmark", BENCH, "--data-root", str(suite), "--published", "75"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "| printed | 75.00 | 75.00 | +0.00 | 0 | 0 |  (published 75.00 against 75.00 computed, B's printed "
        "figure: its harness's verdicts (micro) over the 4 lines it counted and judged, of the 12 samples; "
        "75.0000 rounded to 2 decimals) |" in out
    )


@pytest.mark.parametrize("recorded", ["data_root", "root", "gone", "relative"])
def test_without_data_root_the_benchmark_is_read_where_the_run_read_it(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], recorded: str
) -> None:
    """A run's results.json records its data_root (the demo suite's, where it was given none) and each
    benchmark's root: A is no run (an import), so B's is used."""
    samples, a, _ = _sides(suite, tmp_path)
    gone = tmp_path / "gone"
    data_root = {"data_root": str(suite), "root": None, "gone": str(gone), "relative": "suite"}[recorded]
    root = str(suite / BENCH) if recorded == "root" else None
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"data_root": data_root, "bench": {BENCH: {"root": root}}}
    (folder / "results.json").write_text(json.dumps({"selection": "first", "config": config}))
    _write(
        folder / "predictions.jsonl",
        [{"benchmark": BENCH, "id": s.id, "candidates": [_centre(s)]} for s in samples],
    )
    args = ["explain", str(a), str(folder), "--benchmark", BENCH]
    if recorded == "gone":
        err = _error(capsys, *args[1:])
        assert err == (
            f"gge: error: {folder}: B's run read {BENCH} from {gone / BENCH} (its results.json data_root), "
            "which is not a folder here: give --data-root or --root"
        )
        return
    if recorded == "relative":  # relative to the folder the run ran from, which explain cannot know
        err = _error(capsys, *args[1:])
        assert err == (
            f"gge: error: {folder}: B's run recorded {BENCH}'s folder as {Path('suite') / BENCH} "
            "(data_root), relative to the folder it ran from, which gge explain cannot know: "
            "give --data-root or --root"
        )
        return
    assert main(args) == 0
    captured = capsys.readouterr()
    assert f"--data-root not given: reading {BENCH} from {suite / BENCH}, as B's run did" in captured.err
    assert "gge's rule on the 12 samples: A 25.00 · B 100.00" in captured.out


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A replay run given no data_root: eval reads the demo suite, generated into the cache on first use
    (here of 12 samples a benchmark, for speed)."""
    from gge.benchmarks.demo.suite import generate

    folder = tmp_path_factory.mktemp("demo_run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GGE_CACHE", str(folder / "cache"))
        mp.setattr(generate, "write_demo_suite", partial(write_demo_suite, per_benchmark=12))
        out = folder / "run"
        args = ["model=replay", f"benchmarks=[{BENCH}]", "max_samples=4", f"output_dir={out}"]
        run(parse_args(args), out=io.StringIO())
        yield out


@pytest.mark.slow
def test_a_demo_suite_run_is_explained_without_data_root(
    demo_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = json.loads((demo_run / "results.json").read_text())
    demo = Path(results["config"]["data_root"])
    assert demo.parent == demo_run.parent / "cache"  # the run read the demo suite
    lines = [json.loads(x) for x in (demo_run / "predictions.jsonl").read_text().splitlines()]
    hits = sum(x["top1"][results["selection"]] for x in lines)  # the run's own verdicts of its 4 samples
    assert main(["explain", str(demo_run), str(demo_run / "predictions.jsonl"), "--benchmark", BENCH]) == 0
    captured = capsys.readouterr()
    assert f"--data-root not given: reading {BENCH} from {demo / BENCH}, as A's run did" in captured.err
    # the suite's ScreenSpot-v2: 12 samples, of which the run answered 4
    assert f"# A -> B: {BENCH}, 12 samples" in captured.out
    assert f"A: {100 * hits / 4:.2f} · B: {100 * hits / 4:.2f} · difference +0.00 points" in captured.out
    assert f"| A: denominator | {100 * hits / 4:.2f} | {100 * hits / 12:.2f} |" in captured.out


def test_without_data_root_two_files_that_are_no_runs_are_one_line(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, a, b = _sides(suite, tmp_path)
    err = _error(capsys, str(a), str(b), "--benchmark", BENCH)
    assert err == (
        f"gge: error: gge explain: where are {BENCH}'s files? Give --data-root (the folder holding "
        f"screenspot_v2/) or --root: neither A nor B is a run whose results.json records them"
    )


# --- item 3: an output folder that cannot be written is one line naming it ---------------------------


def test_out_under_a_file_is_one_line_naming_the_folder(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, a, b = _sides(suite, tmp_path)
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "explained"
    err = _error(capsys, str(a), str(b), "--benchmark", BENCH, "--data-root", str(suite), "--out", str(out))
    assert err == f"gge: error: --out {out}: {tmp_path / 'file'} is a file, not a folder"


def test_a_folder_that_cannot_be_created_is_one_line_naming_it(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, a, b = _sides(suite, tmp_path)
    out = tmp_path / "ro" / "explained"
    real_mkdir = Path.mkdir

    def fake_mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        if self == out:  # what a read-only parent answers (root is not stopped by chmod)
            raise denied(self)
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", fake_mkdir)
    err = _error(capsys, str(a), str(b), "--benchmark", BENCH, "--data-root", str(suite), "--out", str(out))
    said = f"cannot create the folder (Permission denied: {out}); choose a writable --out"
    assert err == f"gge: error: --out {out}: {said}"


def test_a_file_that_cannot_be_written_is_one_line_naming_the_folder_and_file(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, a, b = _sides(suite, tmp_path)
    out = tmp_path / "explained"
    real_open = Path.open

    def fake_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name.startswith(".explain.json."):  # atomic_write's temporary file beside explain.json
            raise denied(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", fake_open)
    err = _error(capsys, str(a), str(b), "--benchmark", BENCH, "--data-root", str(suite), "--out", str(out))
    assert err == f"gge: error: --out {out}: cannot write {out / 'explain.json'}: Permission denied"


def test_a_real_read_only_folder(suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same through ``chmod``, where it takes effect (not as root)."""
    _, a, b = _sides(suite, tmp_path)
    with read_only_folder(tmp_path) as folder:
        out = folder / "explained"
        err = _error(
            capsys, str(a), str(b), "--benchmark", BENCH, "--data-root", str(suite), "--out", str(out)
        )
        assert err.startswith(f"gge: error: --out {out}: cannot create the folder (Permission denied")
        err = _error(
            capsys, str(a), str(b), "--benchmark", BENCH, "--data-root", str(suite), "--out", str(folder)
        )
        assert err == f"gge: error: --out {folder}: cannot write {folder / 'explain.md'}: Permission denied"
