"""Files a run writes: ``results.json``, per-sample ``predictions.jsonl``, ``report.md`` and ``report.html``.

``predictions.jsonl`` is a valid replay file (``model=replay model.predictions=...``): re-scoring it
with another selection strategy or K needs no model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks.base import Benchmark
from gge.run.records import result_record
from gge.run.runstate import atomic_write
from gge.scoring.scoring import SampleResult
from gge.types import Sample


def write_outputs(
    output_dir: Path, results_json: dict[str, Any], records: Iterable[SampleResult], report: str
) -> None:
    """Write results.json, predictions.jsonl and report.md into ``output_dir`` (created if needed).

    Args:
        output_dir: The run's folder.
        results_json: The whole results document.
        records: Every sample's result.
        report: The rendered tables.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(result_record(r), ensure_ascii=False) + "\n" for r in records)
    atomic_write(output_dir / "predictions.jsonl", lines)
    atomic_write(output_dir / "report.md", report + "\n")
    atomic_write(output_dir / "results.json", json.dumps(results_json, indent=2, ensure_ascii=False) + "\n")


def write_html_report(
    output_dir: Path,
    document: Mapping[str, Any],
    samples: Mapping[tuple[str, str], Sample],
    results: Sequence[SampleResult],
    benchmarks: Mapping[str, Benchmark],
    *,
    misses: int,
) -> Path:
    """Write ``output_dir/report.html``: the document's tables and charts and a gallery of misses.

    Args:
        output_dir: The run's folder.
        document: The results document (as written to results.json).
        samples: Samples by (benchmark, id).
        results: Every sample's result.
        benchmarks: The benchmarks by name (the first official table is the gallery's cell filter).
        misses: Misses per benchmark in the gallery (0: none).

    Returns:
        The page's path.
    """
    from gge.report.gallery import gallery_entries
    from gge.report.html import render_report_html, write_report_html

    gallery = (
        gallery_entries(
            samples,
            results,
            strategy=str(document["selection"]),
            tables={name: b.tables[0] if b.tables else None for name, b in benchmarks.items()},
            limit_per_benchmark=misses,
        )
        if misses > 0
        else []
    )
    return write_report_html(output_dir / "report.html", render_report_html(document, gallery))
