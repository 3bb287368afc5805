"""``gge explain A B --benchmark NAME``: the walk from A's figure to B's (:mod:`gge.compare.explain`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import Benchmark
from gge.benchmarks.loading import load_benchmarks
from gge.compare.explain import draw_moved, explain, read_side, run_results
from gge.documents.files import atomic_write
from gge.errors import GgeError
from gge.report.explain_page import render_explain_html
from gge.run.runstate import check_output_dir, make_output_dir


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
    p.add_argument(
        "--data-root",
        default=None,
        help="folder holding the benchmark's folder (as data_root; default: where A's run, else B's, "
        "read it, as its results.json records: the demo suite for a demo run)",
    )
    p.add_argument("--root", default=None, help="the benchmark's own folder (as bench.<name>.root)")
    p.add_argument("--published", type=float, default=None, help="a figure published for B, placed last")
    p.add_argument("--labels", nargs=2, metavar=("NAME_A", "NAME_B"), default=("A", "B"), help="names shown")
    p.add_argument(
        "--out", default=None, help="write explain.md, explain.json and explain.html into this folder"
    )
    return p


def _run_config(path: str) -> Mapping[str, Any] | None:
    """The ``config`` of the run whose folder or predictions.jsonl ``path`` is, or None.

    None where ``path`` is no run's, or its results.json records no ``config``.
    """
    config = (run_results(path) or {}).get("config")
    return config if isinstance(config, Mapping) else None


def _recorded_roots(
    bench: Benchmark, paths: Sequence[str], labels: Sequence[str]
) -> tuple[str | None, str | None]:
    """``(data_root, root)`` as the first run among ``paths`` recorded them, said on stderr.

    A run's results.json records the folder it read its benchmarks from (``config.data_root``: the
    synthetic demo suite's where the run was given none, as ``eval.py`` falls back to it) and each
    benchmark's own folder (``config.bench.<name>.root``).

    Raises:
        GgeError: neither side is a run that recorded where the benchmark's files are, or the folder
            it recorded is not one here.
    """
    for path, label in zip(paths, labels, strict=True):
        config = _run_config(path)
        if config is None:
            continue
        bench_options = (config.get("bench") or {}).get(bench.name) or {}
        root = bench_options.get("root") if isinstance(bench_options, Mapping) else None
        data_root = config.get("data_root")
        if isinstance(root, str) and root:
            folder, key = Path(root), f"bench.{bench.name}.root"
        elif isinstance(data_root, str) and data_root:
            folder, key = Path(data_root) / bench.directory, "data_root"
        else:
            continue
        if not folder.is_absolute():
            raise GgeError(
                f"{path}: {label}'s run recorded {bench.name}'s folder as {folder} ({key}), relative to "
                "the folder it ran from, which gge explain cannot know: give --data-root or --root"
            )
        if not folder.is_dir():
            raise GgeError(
                f"{path}: {label}'s run read {bench.name} from {folder} (its results.json {key}), which is "
                "not a folder here: give --data-root or --root"
            )
        print(
            f"--data-root not given: reading {bench.name} from {folder}, as {label}'s run did",
            file=sys.stderr,
        )
        return (None, str(folder)) if key != "data_root" else (data_root, None)
    raise GgeError(
        f"gge explain: where are {bench.name}'s files? Give --data-root (the folder holding "
        f"{bench.directory}/) or --root: neither {labels[0]} nor {labels[1]} is a run whose results.json "
        "records them"
    )


def _write(out: Path, files: Mapping[str, str]) -> list[Path]:
    """Write each named file into ``out`` (created); an unwritable folder is one line naming it."""
    make_output_dir(out, option="--out")
    written = []
    for name, text in files.items():
        try:
            written.append(atomic_write(out / name, text))
        except OSError as e:
            raise GgeError(f"--out {out}: cannot write {out / name}: {e.strerror or e}") from None
    return written


def explain_main(args: list[str]) -> int:
    """Run ``gge explain``; prints the walk, and writes it with ``--out``.

    Without ``--data-root`` and ``--root``, the benchmark is read where A's run (else B's) read it,
    as its results.json records (:func:`_recorded_roots`).

    Args:
        args: The arguments after ``explain``.

    Returns:
        The exit code (0).

    Raises:
        GgeError: the benchmark's files cannot be found, a side cannot be read, or ``--out`` is a file,
            lies under one, or cannot be written (one line naming the folder).
    """
    ns = explain_parser().parse_args(args)
    bench = get_benchmark(ns.benchmark)
    out = check_output_dir(ns.out, option="--out") if ns.out is not None else None  # before any work
    data_root, root = ns.data_root, ns.root
    if data_root is None and root is None:
        data_root, root = _recorded_roots(bench, (ns.a, ns.b), ns.labels)
    options = {ns.benchmark: bench.options_type(root=root)} if root else {}
    loaded = load_benchmarks([ns.benchmark], Path(data_root) if data_root else None, options)
    samples = loaded.samples[ns.benchmark]
    a, b = (read_side(path, ns.benchmark, name) for path, name in zip((ns.a, ns.b), ns.labels, strict=True))
    walk = explain(samples, a, b, ns.published, bench.official)
    walk.files = (ns.a, ns.b)
    text = walk.markdown(*ns.labels)
    print(text, file=sys.stdout)
    if out is not None:
        document = walk.document()
        page = render_explain_html(document, draw_moved(walk, samples), tuple(ns.labels))
        names = {
            "explain.md": text,
            "explain.json": json.dumps(document, indent=2) + "\n",
            "explain.html": page,
        }
        _write(out, names)
        print(f"wrote {out / 'explain.md'}, {out / 'explain.json'} and {out / 'explain.html'}")
    return 0
