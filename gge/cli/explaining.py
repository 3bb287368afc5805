"""``gge explain A B --benchmark NAME``: the walk from A's figure to B's (:mod:`gge.compare.explain`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gge.benchmarks import get_benchmark
from gge.benchmarks.loading import load_benchmarks
from gge.compare.explain import draw_moved, explain, read_side
from gge.documents.files import atomic_write
from gge.report.explain_page import render_explain_html


def explain_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge explain``.

    Example:
        >>> ns = explain_parser().parse_args(["a.jsonl", "b", "--benchmark", "b1", "--published", "60.9"])
        >>> ns.a, ns.b, ns.published
        ('a.jsonl', 'b', 60.9)
    """
    p = argparse.ArgumentParser(
        prog="gge explain",
        description=(
            "Why two figures for one checkpoint on one benchmark differ: the walk from A's printed "
            "figure to B's, one cause at a time (denominator, data, verdict rule, parse / frame, the "
            "answers), each step with its effect in points and the samples it moves; the steps sum "
            "to the difference. A and B are replay files: a gge import output (the log's own "
            "verdicts, points and boxes) or a run's folder or predictions.jsonl."
        ),
    )
    p.add_argument("a", metavar="A", help="a gge import output, or a run's folder or predictions.jsonl")
    p.add_argument("b", metavar="B", help="the other side, the same way")
    p.add_argument("--benchmark", required=True, help="the benchmark both are of (a gge benchmark name)")
    p.add_argument("--data-root", default=None, help="folder holding the benchmark's folder (as data_root)")
    p.add_argument("--root", default=None, help="the benchmark's own folder (as bench.<name>.root)")
    p.add_argument("--published", type=float, default=None, help="a figure published for B, placed last")
    p.add_argument("--labels", nargs=2, metavar=("NAME_A", "NAME_B"), default=("A", "B"), help="names shown")
    p.add_argument(
        "--out", default=None, help="write explain.md, explain.json and explain.html into this folder"
    )
    return p


def explain_main(args: list[str]) -> int:
    """Run ``gge explain``; prints the walk, and writes it with ``--out``.

    Args:
        args: The arguments after ``explain``.

    Returns:
        The exit code (0).
    """
    ns = explain_parser().parse_args(args)
    bench = get_benchmark(ns.benchmark)
    options = {ns.benchmark: bench.options_type(root=ns.root)} if ns.root else {}
    loaded = load_benchmarks([ns.benchmark], Path(ns.data_root) if ns.data_root else None, options)
    samples = loaded.samples[ns.benchmark]
    a, b = (read_side(path, ns.benchmark, name) for path, name in zip((ns.a, ns.b), ns.labels, strict=True))
    walk = explain(samples, a, b, ns.published, bench.official)
    text = walk.markdown(*ns.labels)
    print(text, file=sys.stdout)
    if ns.out is not None:
        out = Path(ns.out)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(out / "explain.md", text)
        document = walk.document()
        atomic_write(out / "explain.json", json.dumps(document, indent=2) + "\n")
        page = render_explain_html(document, draw_moved(walk, samples), tuple(ns.labels))
        atomic_write(out / "explain.html", page)
        print(f"wrote {out / 'explain.md'}, {out / 'explain.json'} and {out / 'explain.html'}")
    return 0
