"""What the cost ledger itself costs: its own work on a demo run's results, against that run's time.

The run is ``python eval.py``'s default job (the demo model on the bundled suite, K = 5, every default
benchmark; ``--quick``: the first few samples of each), run in this process through
:func:`gge.run.standalone.run` and timed whole (start-up, loading, the Lightning loop, scoring,
writing results.json, predictions.jsonl and the reports). The bundled suite is generated before
the clock starts (a first run on a machine generates it once).

The ledger's own work is then timed on the same results (the run's predictions.jsonl read back and
scored against the same samples; their ``cost`` fields, which the script checks against the run's
results.json, are the run's own records):

- records: making every ``CostRecord`` the run made (a constructor call per request, two clock reads
  per request, which over-counts the demo's one pair per batch part, and the tuple a prediction
  carries);
- summary: :func:`gge.scoring.cost.cost_summary` per benchmark (results.json ``cost``) and
  :func:`gge.scoring.metrics.cost_scalars` (the loggers' ``cost/...`` scalars);
- encoding: every record through :func:`gge.documents.records.cost_json` and ``json.dumps`` twice (the
  rank log and predictions.jsonl both carry it);
- report sections: report.html (:func:`gge.report.html.render_report_html`, no gallery) and each
  benchmark's report.md section (:func:`gge.report.markdown.render_benchmark`) rendered from the
  run's document, less the same rendered from it without ``cost`` and ``budget`` (the cost table,
  the budget plot);
- budget curves: :func:`gge.scoring.budget.budget_curves` per benchmark (results.json ``budget``;
  timed apart, since most of its work is the Top-1 of every strategy on every subset, which needs
  the ledger only for the cost column).

Each part is the median of ``--repeats`` passes. Printed: the run's seconds, each part's, and the
ratios ledger / run with and without the budget curves (target: under 2% of the run's time), with
a ``ratio:`` prefix, measured in this run.

Why not time two runs, one with the ledger's calls made no-ops? The ledger's work is milliseconds
against a run of tens of seconds whose own spread between two runs on a shared machine is seconds:
the difference of two such runs cannot resolve 2%, let alone the real figure. And no-op'ing the
ledger means patching the demo policy, scoring and the writers, a code path no real run takes.
Timing the ledger's own functions on the run's own records measures exactly its work; what it cannot
see is an indirect cost (more garbage for the collector, caches), which is of the same small order.

    python bench/ledger_overhead.py [--quick] [--repeats 5]

About a minute on 2 cores (``--quick``: about 20 s). Exits 0 when the target is missed: it is a report.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks import get_benchmark
from gge.documents.records import cost_json
from gge.models.base import policy_analysis_options
from gge.models.replay import parse_line
from gge.report.html import render_report_html
from gge.report.markdown import render_benchmark
from gge.run.predlog import read_records
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.cost import cost_summary
from gge.scoring.metrics import cost_scalars
from gge.scoring.scoring import score_sample
from gge.types import CostRecord, Sample, SampleResult

QUICK_SAMPLES = 6


def demo_run(output_dir: Path, max_samples: int | None) -> tuple[float, dict[str, Any]]:
    """``python eval.py``'s default job into ``output_dir``: wall seconds and the results document."""
    from gge.benchmarks.demo import demo_root

    demo_root(0)  # the bundled suite, generated now if missing (not the subject)
    argv = [f"output_dir={output_dir}"] + ([f"max_samples={max_samples}"] if max_samples else [])
    start = time.perf_counter()
    quiet = io.StringIO()
    with contextlib.redirect_stderr(quiet), contextlib.redirect_stdout(quiet):  # Lightning's chatter
        document = run(parse_args(argv), out=io.StringIO())
    return time.perf_counter() - start, document


def read_results(output_dir: Path, document: Mapping[str, Any]) -> dict[str, list[SampleResult]]:
    """The run's results per benchmark: its predictions.jsonl scored against the same samples."""
    from gge.benchmarks.demo import demo_root

    root = demo_root(0)
    records = read_records([output_dir / "predictions.jsonl"], repair=False)
    k, radius = int(document["k"]), float(document["config"]["cluster_radius"])
    out: dict[str, list[SampleResult]] = {}
    for name in document["benchmarks"]:
        bench = get_benchmark(name)
        samples: Sequence[Sample] = bench.load(root / bench.directory, bench.options_type()).samples
        out[name] = [
            score_sample(
                s, parse_line(records[(s.benchmark, s.id)], f"{name}/{s.id}"), k=k, cluster_radius=radius
            )
            for s in samples
            if (s.benchmark, s.id) in records
        ]
    return out


def without_ledger(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document without what the ledger adds: the run's ``cost`` and each entry's ``cost``/``budget``."""
    bare = {key: value for key, value in document.items() if key != "cost"}
    bare["benchmarks"] = {
        name: {key: value for key, value in entry.items() if key not in ("cost", "budget")}
        for name, entry in document["benchmarks"].items()
    }
    return bare


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """The median wall seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_records(values: Sequence[Sequence[dict[str, Any]]]) -> None:
    """Make again, from their fields, every CostRecord the run made, reading the clock twice for each."""
    clocked = 0.0
    for sample in values:
        own = []
        for fields in sample:
            began = time.perf_counter()
            own.append(CostRecord(**fields))
            clocked += time.perf_counter() - began
        tuple(own)  # a prediction carries its records as a tuple


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"the first {QUICK_SAMPLES} samples per benchmark"
    )
    parser.add_argument("--max-samples", type=int, default=None, help="samples per benchmark (default all)")
    parser.add_argument("--repeats", type=int, default=5, help="passes of each ledger part (median)")
    args = parser.parse_args()
    max_samples = args.max_samples or (QUICK_SAMPLES if args.quick else None)
    from gge.models.demo import load_demo_policy
    from gge.scoring.budget import budget_curves

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        wall, document = demo_run(out, max_samples)
        results = read_results(out, document)
    entries = document["benchmarks"]
    for name, rs in results.items():  # the records read back are the run's own
        if cost_summary(rs) != entries[name].get("cost"):
            raise RuntimeError(f"{name}: the cost read back from predictions.jsonl is not results.json's")
    k, radius = int(document["k"]), float(document["config"]["cluster_radius"])
    options = policy_analysis_options(load_demo_policy(k=k))
    budget_options = {key: options[key] for key in ("exchangeable_from", "score_kind") if key in options}
    every = [r for rs in results.values() for r in rs]
    n_records = sum(len(r.costs) for r in every)
    names = [f.name for f in dataclasses.fields(CostRecord)]
    values = [[{n: getattr(c, n) for n in names} for c in r.costs] for r in every]  # what the run knew

    def summary() -> None:
        for rs in results.values():
            entry = {"cost": cost_summary(rs)}
            cost_scalars(entry)  # type: ignore[arg-type]

    def encoding() -> None:
        for _ in range(2):  # predictions.rank0.jsonl and predictions.jsonl
            for r in every:
                json.dumps([cost_json(c) for c in r.costs])

    bare = without_ledger(document)

    def report(doc: Mapping[str, Any]) -> Callable[[], None]:
        def render() -> None:
            render_report_html(doc, [])  # type: ignore[arg-type]
            for name, entry in doc["benchmarks"].items():
                render_benchmark(name, entry, k=k, strategy=str(doc["selection"]))

        return render

    def budget() -> None:
        for rs in results.values():
            budget_curves(rs, k=k, cluster_radius=radius, **budget_options)

    parts = {
        "records": median_seconds(lambda: make_records(values), args.repeats),
        "summary": median_seconds(summary, args.repeats),
        "encoding": median_seconds(encoding, args.repeats),
        "budget curves": median_seconds(budget, args.repeats),
        "report sections": median_seconds(report(document), args.repeats)
        - median_seconds(report(bare), args.repeats),
    }
    own = parts["records"] + parts["summary"] + parts["encoding"] + parts["report sections"]
    print(
        f"demo run (python eval.py's default job): {len(results)} benchmarks, {len(every)} samples, "
        f"K={k}, {n_records} cost records; the run took {wall:.2f} s\n"
    )
    print("| ledger part     | seconds  | share of the run |")
    print("|-----------------|----------|------------------|")
    for name, seconds in parts.items():
        print(f"| {name:15} | {seconds:8.5f} | {100 * seconds / wall:15.3f}% |")
    ledger = sum((c.seconds or 0.0 for r in every for c in r.costs), 0.0)
    print(
        f"\nthe ledger's own seconds (what it measured of the model's work): {ledger:.2f} s of {wall:.2f} s"
    )
    share, with_budget = own / wall, (own + parts["budget curves"]) / wall
    verdict = "met" if with_budget < 0.02 else "MISSED"
    print(f"ratio: ledger (records, summary, encoding, report) / run = {100 * share:.3f}%")
    print(f"ratio: ledger with budget curves / run = {100 * with_budget:.3f}% (target < 2%: {verdict})")


if __name__ == "__main__":
    main()
