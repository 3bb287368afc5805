"""Files a run writes: ``results.json``, per-sample ``predictions.jsonl``, ``report.md`` and ``report.html``.

``predictions.jsonl`` is a valid replay file (``model=replay model.predictions=...``): re-scoring it
with another selection strategy or K needs no model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from gge.benchmarks.base import Benchmark
from gge.documents.files import atomic_write
from gge.documents.records import encode
from gge.documents.results import (
    SCHEMA_VERSION,
    BenchmarkEntry,
    CostSetup,
    Invocation,
    ResultsDocument,
    Subset,
)
from gge.report.cost_tables import setup_text
from gge.types import Sample, SampleResult


def write_outputs(
    output_dir: Path, results_json: ResultsDocument, records: Iterable[SampleResult], report: str
) -> None:
    """Write results.json, predictions.jsonl and report.md into ``output_dir`` (created if needed).

    Args:
        output_dir: The run's folder.
        results_json: The whole results document.
        records: Every sample's result.
        report: The rendered tables.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(encode(r), ensure_ascii=False) + "\n" for r in records)
    atomic_write(output_dir / "predictions.jsonl", lines)
    atomic_write(output_dir / "report.md", report + "\n")
    atomic_write(output_dir / "results.json", json.dumps(results_json, indent=2, ensure_ascii=False) + "\n")


def write_html_report(
    output_dir: Path,
    document: ResultsDocument,
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
            strategy=document["selection"],
            tables={name: b.tables[0] if b.tables else None for name, b in benchmarks.items()},
            limit_per_benchmark=misses,
        )
        if misses > 0
        else []
    )
    return write_report_html(output_dir / "report.html", render_report_html(document, gallery))


_ABSENT: Any = object()
"""``subset`` not given: the document has no ``subset`` field (summaries of a trainer's dump)."""


def build_document(
    benchmarks: Mapping[str, Benchmark],
    results: Mapping[str, Sequence[SampleResult]],
    *,
    k: int,
    strategy: str,
    protocol: str,
    model: Mapping[str, Any],
    config: Mapping[str, Any],
    extras: Mapping[str, Mapping[str, Any]] | None = None,
    notes: Sequence[str] | None = None,
    subset: dict[str, Any] | None = _ABSENT,
    metrics_options: Mapping[str, Any] | None = None,
    cost: CostSetup | None = None,
    invocations: Sequence[Invocation] | None = None,
) -> tuple[ResultsDocument, str]:
    """The results document and report.md's text of one run: the ONE place a results document is made.

    Each benchmark's entry is :func:`~gge.scoring.metrics.benchmark_metrics` of its results, then its
    ``extras`` (what only this kind of run knows: load summaries, digests, pass@k of a dump...).

    Args:
        benchmarks: The benchmarks by name, in the order the document lists them.
        results: Each benchmark's scored results.
        k: The answers scored per sample.
        strategy: The Top-1 selection strategy.
        protocol: How the model was asked (the report's first line).
        model: The document's ``model`` record.
        config: The document's ``config`` record.
        extras: Per benchmark, fields added to (or replacing) its entry.
        notes: What differs from a full evaluation; a ``notes`` field and a ``Note:`` line each
            (None: no field).
        subset: What ``max_samples`` kept (:func:`gge.benchmarks.loading.subset_record`); not given:
            no ``subset`` field.
        metrics_options: Keyword arguments of ``benchmark_metrics`` (``exchangeable_from``,
            ``score_kind``, ``cost_source``).
        cost: What the run's costs were measured on (:func:`gge.run.hardware.cost_setup`): a ``cost``
            field and a ``Costs:`` line under the protocol (None: neither).
        invocations: Each invocation of the run (:mod:`gge.run.invocations`): an ``invocations``
            field, and the report's usage lines and, past one, its ``Resumed:`` line
            (:func:`gge.report.markdown.invocation_lines`; None: neither).

    Returns:
        The document (as results.json holds it: :data:`~gge.documents.results.SCHEMA_VERSION` first) and
        the report's text.
    """
    import gge
    from gge.report.markdown import (
        answered_line,
        head_lines,
        invocation_lines,
        render_benchmark,
        render_summary,
    )
    from gge.scoring.metrics import benchmark_metrics, mean_over_benchmarks

    entries: dict[str, BenchmarkEntry] = {}
    titles: dict[str, str] = {}
    sections: list[str] = []
    for name, bench in benchmarks.items():
        entry = benchmark_metrics(bench, results[name], k=k, strategy=strategy, **(metrics_options or {}))
        # the extras replace a field in place (pass_at_k of a dump) or follow the computed ones
        entry = cast(BenchmarkEntry, {**entry, **(extras or {}).get(name, {})})
        entries[name], titles[name] = entry, bench.title
        sections.append(render_benchmark(bench.title, entry, k=k, strategy=strategy))
    mean = mean_over_benchmarks(entries, k)
    shown = None if subset is _ABSENT else cast(Subset | None, subset)
    head = head_lines(protocol, shown, titles, notes or (), setup_text(cost) if cost is not None else None)
    who = answered_line(model)
    if who is not None:  # who answered, under the protocol line
        head.insert(1, who)
    if invocations is not None:
        head += invocation_lines(invocations, model)
    report = "\n\n".join(["\n".join(head), *sections, render_summary(titles, entries, mean, k=k)])
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "gge_version": gge.__version__,
        "protocol": protocol,
    }
    if notes is not None:
        document["notes"] = list(notes)
    document.update(benchmarks=entries, mean=mean, k=k)
    if subset is not _ABSENT:
        document["subset"] = subset
    document["selection"] = strategy
    if cost is not None:
        document["cost"] = cost
    document.update(model=dict(model), config=dict(config))
    if invocations is not None:
        document["invocations"] = list(invocations)
    return cast(ResultsDocument, document), report


def write_run(
    output_dir: Path,
    document: ResultsDocument,
    report: str,
    results: Sequence[SampleResult],
    samples: Mapping[tuple[str, str], Sample],
    benchmarks: Mapping[str, Benchmark],
    *,
    misses: int,
) -> Path:
    """Write a run's folder: results.json, predictions.jsonl, report.md and report.html.

    Args:
        output_dir: The run's folder (created if needed).
        document: The results document (:func:`build_document`).
        report: report.md's text.
        results: Every sample's result.
        samples: Samples by (benchmark, id), for the report's gallery.
        benchmarks: The benchmarks by name.
        misses: Misses per benchmark in report.html's gallery (0: none).

    Returns:
        The path of results.json.
    """
    write_outputs(output_dir, document, results, report)
    write_html_report(output_dir, document, samples, results, benchmarks, misses=misses)
    return output_dir / "results.json"
