"""The console of ``python eval.py`` ends with the summary; the long tables are left to report.md
(issue "Nothing silently wrong, round three", item 4).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gge.benchmarks import DEFAULT_BENCHMARKS, REGISTRY
from gge.cli.eval import main

SAMPLES = 3
"""Samples of each benchmark the runs evaluate (of the demo suite's 36)."""
DEMO_TOTAL = 36


def _eval(demo: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[str]:
    """``python eval.py`` in this process on the demo suite (the default demo model): its stdout lines."""
    args = [f"data_root={demo}", f"output_dir={out}", f"max_samples={SAMPLES}", *extra]
    assert main(args) == 0
    return capsys.readouterr().out.splitlines()


def _summary_block(report: str) -> list[str]:
    """report.md's summary section: its heading to the end of the file."""
    lines = report.splitlines()
    return lines[lines.index("## Summary (headlines: official unless marked)") :]


def test_a_first_run_ends_with_the_summary_and_points_at_report_md(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _eval(demo_suite, tmp_path, capsys)
    doc = json.loads((tmp_path / "results.json").read_text())
    report = (tmp_path / "report.md").read_text()
    titles = [REGISTRY[name].title for name in DEFAULT_BENCHMARKS]

    # the end of the console, line by line: caveats, how Top-1 is chosen, report.md's summary table
    # (a header, a separator, a row per benchmark, the mean), the files and where the tables are
    cut = ", ".join(f"first {SAMPLES} of {DEMO_TOTAL} samples ({t})" for t in titles)
    table = _summary_block(report)
    assert len(table) == 2 + 2 + len(titles) + 1  # heading, blank, header, separator, rows, mean
    tail = [
        f"Protocol: {doc['protocol']}",
        f"subset: {cut}; max_samples={SAMPLES}: not comparable with published numbers",
        "Top-1 by `critic` · K=5",
        "",
        *table,
        "",
        f"wrote {tmp_path / 'results.json'}, predictions.jsonl, report.md and report.html",
        "every table (by split, misses, size, cost, budget): report.md and report.html "
        "(open it in a browser)",
    ]
    assert lines[-len(tail) :] == tail
    rows = [line.split("|")[1].strip() for line in table[4:]]
    assert rows == [*titles, f"mean of {len(titles)}"]
    # before it: a load line per benchmark, then the progress bar (its redraws end in \r): nothing else
    head = lines[: -len(tail)]
    assert [line.split(":")[0] for line in head[: len(titles)]] == list(DEFAULT_BENCHMARKS)
    progress = head[len(titles) :]
    assert all(line.strip().startswith("Predicting") or not line.strip() for line in progress), progress


def test_the_cost_budget_and_size_tables_are_in_report_md_not_on_the_console(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _eval(demo_suite, tmp_path, capsys, "benchmarks=[screenspot_v2]")
    report = (tmp_path / "report.md").read_text().splitlines()
    for heading in ("### Cost per sample", "### Budget: Top-1 against", "### By target size", "### By split"):
        assert any(line.startswith(heading) for line in report), heading
        assert not any(heading in line for line in lines), heading
    assert not any(line.startswith("#") and not line.startswith("## Summary") for line in lines)
    assert "- Top-1 by selection (micro): " not in "\n".join(lines)


def test_a_one_answer_run_names_no_critic_on_the_console(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _eval(demo_suite, tmp_path, capsys, "k=1", "benchmarks=[screenspot_v2]")
    assert json.loads((tmp_path / "results.json").read_text())["k"] == 1
    assert "one answer per sample (Top-1 only)" in lines
    assert not any("by `" in line or "Oracle@" in line for line in lines), lines
    report = (tmp_path / "report.md").read_text()  # nor does report.md: one answer, no strategy chose it
    assert "- Where the misses are (Top-1, % of samples): " in report and "by `" not in report
