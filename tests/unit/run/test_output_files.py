"""``resume=false`` starts the output folder over: every file an earlier run wrote there goes.

Pinned with real files: the logs, the documents, the reports, run.json, and the two records beside
it that a resume reads back (the invocations, :mod:`gge.run.invocations`; the probe,
:mod:`gge.run.probe_store`), whose names the folder's list must hold; a file the run did not write stays.
"""

from __future__ import annotations

from pathlib import Path

from gge.run.invocations import INVOCATIONS_FILE
from gge.run.probe_store import PROBE_FILE
from gge.run.runstate import OUTPUT_FILES, prepare_output_dir

WRITTEN = [
    "predictions.rank0.jsonl",
    "predictions.jsonl",
    "results.json",
    "report.md",
    "report.html",
    "run.json",
    "invocations.json",
    "probe.json",
]


def test_the_records_a_resume_reads_back_are_output_files() -> None:
    assert INVOCATIONS_FILE in OUTPUT_FILES and PROBE_FILE in OUTPUT_FILES


def test_starting_over_removes_what_an_earlier_run_wrote_and_nothing_else(tmp_path: Path) -> None:
    for name in [*WRITTEN, "notes.txt"]:
        (tmp_path / name).write_text("{}\n")
    prepare_output_dir(tmp_path, {"k": 1, "model": {"name": "demo"}}, resume=False)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["notes.txt", "run.json"]  # run.json: the new run's fingerprint, written afresh
    assert '"k": 1' in (tmp_path / "run.json").read_text()
