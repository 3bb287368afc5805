"""A smaller rerun never replaces a larger result; a subset run says so everywhere (issue 19, item 2)."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gge.benchmarks.loading import subset_record
from gge.errors import GgeError
from gge.report.markdown import subset_text
from gge.run.settings import parse_args
from gge.run.standalone import run

BENCHES = ["screenspot_v2", "osworld_g"]
TITLES = {"screenspot_v2": "ScreenSpot-v2", "osworld_g": "OSWorld-G"}


def _args(demo: Path, out: Path, *extra: str) -> list[str]:
    return [
        f"data_root={demo}",
        f"model.predictions={demo / 'predictions.jsonl'}",
        f"output_dir={out}",
        f"benchmarks=[{','.join(BENCHES)}]",
        *extra,
    ]


def _run(demo: Path, out: Path, *extra: str) -> tuple[dict[str, Any], str]:
    buf = io.StringIO()
    doc = run(parse_args(_args(demo, out, *extra)), out=buf)
    return doc, buf.getvalue()


def _totals(demo: Path) -> Counter[str]:
    """Samples per benchmark, counted from the demo's replay file (one line per sample)."""
    lines = (demo / "predictions.jsonl").read_text().splitlines()
    return Counter(json.loads(x)["benchmark"] for x in lines)


def _outputs(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in ("results.json", "report.html", "report.md")}


@pytest.fixture(scope="module")
def finished(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("finished")
    doc, _ = _run(demo_suite, out)
    return out, doc


def test_a_smaller_rerun_refuses_and_leaves_the_finished_run(
    demo_suite: Path, finished: tuple[Path, dict[str, Any]]
) -> None:
    out, _ = finished
    before = _outputs(out)
    totals = _totals(demo_suite)
    with pytest.raises(GgeError) as e:
        _run(demo_suite, out, "max_samples=5")
    msg = str(e.value)
    assert "\n" not in msg
    assert f"output_dir {out} " in msg
    assert f"(screenspot_v2 {totals['screenspot_v2']}, osworld_g {totals['osworld_g']})" in msg
    assert "max_samples=5 evaluates (screenspot_v2 5, osworld_g 5)" in msg
    assert "Choose another output_dir" in msg
    assert _outputs(out) == before  # nothing replaced


def test_a_rerun_on_fewer_benchmarks_is_another_run(
    demo_suite: Path, finished: tuple[Path, dict[str, Any]]
) -> None:
    out, _ = finished
    before = _outputs(out)
    args = [
        f"data_root={demo_suite}",
        f"model.predictions={demo_suite / 'predictions.jsonl'}",
        f"output_dir={out}",
        "benchmarks=[screenspot_v2]",
    ]
    with pytest.raises(
        GgeError, match=r"different run, .*benchmarks\.osworld_g\.options: \{\} -> \(absent\)"
    ):
        run(parse_args(args), out=io.StringIO())
    assert _outputs(out) == before


def test_the_same_rerun_resumes_to_the_same_result(
    demo_suite: Path, finished: tuple[Path, dict[str, Any]]
) -> None:
    out, doc = finished
    again, printed = _run(demo_suite, out)
    assert f"resuming: {sum(_totals(demo_suite)[b] for b in BENCHES)} samples already finished" in printed
    assert again["benchmarks"] == json.loads(json.dumps(doc["benchmarks"]))
    assert again["subset"] is None


def test_a_larger_rerun_resumes_and_a_smaller_one_with_resume_false_starts_over(
    demo_suite: Path, tmp_path: Path, finished: tuple[Path, dict[str, Any]]
) -> None:
    _, full = finished
    out = tmp_path / "grow"
    small, _ = _run(demo_suite, out, "max_samples=5")
    _, printed = _run(demo_suite, out, "max_samples=7")
    assert "resuming: 10 samples already finished" in printed
    grown, printed = _run(demo_suite, out)
    assert "resuming: 14 samples already finished" in printed
    assert grown["benchmarks"] == json.loads(json.dumps(full["benchmarks"]))
    # resume=false discards the finished run on purpose: the subset may then replace it
    again, _ = _run(demo_suite, out, "max_samples=5", "resume=false")
    assert again["benchmarks"] == json.loads(json.dumps(small["benchmarks"]))


def test_a_subset_run_says_so_in_results_json_report_md_and_the_console(
    demo_suite: Path, tmp_path: Path
) -> None:
    totals = _totals(demo_suite)
    doc, printed = _run(demo_suite, tmp_path, "max_samples=5")
    assert doc["subset"] == {
        "max_samples": 5,
        "benchmarks": {b: {"evaluated": 5, "total": totals[b]} for b in BENCHES},
    }
    assert json.loads((tmp_path / "results.json").read_text())["subset"] == doc["subset"]
    line = (
        f"subset: first 5 of {totals['screenspot_v2']} samples (ScreenSpot-v2), "
        f"first 5 of {totals['osworld_g']} samples (OSWorld-G); "
        "max_samples=5: not comparable with published numbers"
    )
    report = (tmp_path / "report.md").read_text().splitlines()
    assert report[0].startswith("Protocol: ") and report[1] == line
    assert line in printed.splitlines()


def test_a_full_run_and_a_max_samples_that_cuts_nothing_are_no_subset(
    demo_suite: Path, tmp_path: Path, finished: tuple[Path, dict[str, Any]]
) -> None:
    out, doc = finished
    assert doc["subset"] is None
    assert json.loads((out / "results.json").read_text())["subset"] is None
    assert "subset:" not in (out / "report.md").read_text()
    n = max(_totals(demo_suite)[b] for b in BENCHES)
    whole, _ = _run(demo_suite, tmp_path, f"max_samples={n}")
    assert whole["subset"] is None
    assert "subset:" not in (tmp_path / "report.md").read_text()


def test_the_subset_line_names_only_the_benchmarks_it_cut() -> None:
    from gge.benchmarks.base import LoadedBenchmark

    loads = {
        "a": LoadedBenchmark("a", "/a", list(range(10))),  # type: ignore[arg-type]
        "b": LoadedBenchmark("b", "/b", list(range(4))),  # type: ignore[arg-type]
    }
    subset = subset_record(4, loads, {"a": list(range(4)), "b": list(range(4))})
    assert subset == {
        "max_samples": 4,
        "benchmarks": {"a": {"evaluated": 4, "total": 10}, "b": {"evaluated": 4, "total": 4}},
    }
    assert subset_text(subset, {"a": "A", "b": "B"}) == (
        "subset: first 4 of 10 samples (A); max_samples=4: not comparable with published numbers"
    )
    assert subset_record(None, loads, {"a": list(range(10)), "b": list(range(4))}) is None
