"""``gge import FORMAT FILE --benchmark B --out preds.jsonl``: a published log as a replay file.

The log's lines are matched to the benchmark's release samples (:mod:`gge.models.imported`) and
written as replay lines (``python eval.py model=replay model.predictions=preds.jsonl ...`` scores
them); the summary says what matched, what did not (each line named), which samples are not in the
file, and where gge's rule gives another verdict than the log's own, with the cause the log shows.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks import get_benchmark
from gge.benchmarks.loading import load_benchmarks
from gge.errors import GgeError
from gge.models.imported import format_names, import_log
from gge.models.imported.generic import parse_columns
from gge.models.imported.reread import reading
from gge.run.runstate import check_output_dir, make_output_dir

OUT_FOLDER = "--out folder"
"""How messages name the folder of ``--out`` (:func:`~gge.run.runstate.make_output_dir`'s option)."""


def import_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge import``.

    Example:
        >>> ns = import_parser().parse_args(["gelato", "g.json", "--benchmark", "osworld_g", "--out", "p"])
        >>> ns.format, ns.benchmark, ns.data_root
        ('gelato', 'osworld_g', None)
    """
    p = argparse.ArgumentParser(
        prog="gge import",
        description=(
            "Read a prediction log another harness published, match each line to its benchmark "
            "sample (by id, else screenshot file name and instruction, the log's box breaking ties; "
            "an unmatched or ambiguous line is listed, never guessed) and write gge replay lines. "
            "Says which samples are not in the file and where gge's rule gives another verdict than "
            "the log's, and why where the log shows it."
        ),
    )
    p.add_argument("format", choices=format_names(), help="the log's format")
    p.add_argument("file", help="the log file")
    p.add_argument("--benchmark", required=True, help="the benchmark the log is of (a gge benchmark name)")
    p.add_argument("--data-root", default=None, help="folder holding the benchmark's folder (as data_root)")
    p.add_argument("--root", default=None, help="the benchmark's own folder (as bench.<name>.root)")
    p.add_argument(
        "--preset",
        default=None,
        help="read each raw answer again with this preset's parser and convention, and write those points",
    )
    p.add_argument(
        "--convention",
        default=None,
        help="the raw answers' coordinate convention (overrides the preset's; alone: gge's default parser)",
    )
    p.add_argument(
        "--columns",
        default=None,
        help="generic only: field=column pairs (id, image, instruction, point or x and y, raw, correct, box)",
    )
    p.add_argument("--out", required=True, help="the replay file to write (refused if it exists)")
    p.add_argument("--force", action="store_true", help="overwrite --out")
    return p


def import_main(args: list[str]) -> int:
    """Run ``gge import``; returns the exit code (0)."""
    ns = import_parser().parse_args(args)
    out = Path(ns.out)
    check_output_dir(out.parent, option=OUT_FOLDER)  # a file above it: refused before any work
    if out.is_dir():
        raise GgeError(f"--out {out} is a folder: name the replay file to write in it")
    if out.exists() and not ns.force:
        raise GgeError(f"{out} exists: gge import does not overwrite a replay file (--force to replace it)")
    bench = get_benchmark(ns.benchmark)
    options = {ns.benchmark: bench.options_type(root=ns.root)} if ns.root else {}
    loaded = load_benchmarks(
        [ns.benchmark], Path(ns.data_root) if ns.data_root else None, options, out=sys.stdout
    )
    how = None if ns.preset is None and ns.convention is None else reading(ns.preset, ns.convention)
    columns = parse_columns(ns.columns) if ns.columns is not None else None
    report = import_log(ns.format, ns.file, loaded.samples[ns.benchmark], how, columns)
    write_replay(out, report.records)
    for line in report.summary():
        print(line)
    print(f"wrote {len(report.records)} replay lines to {out}")
    return 0


def write_replay(out: Path, records: Sequence[dict[str, Any]]) -> None:
    """Write replay lines to ``out`` through a temporary file beside it, creating its folder.

    Args:
        out: The replay file.
        records: Its lines.

    Raises:
        GgeError: the folder cannot be created or written (one line naming it and the reason).
    """
    make_output_dir(out.parent, option=OUT_FOLDER)
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            for record in records:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
        tmp.replace(out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise GgeError(
            f"--out {out}: cannot write the replay file in {out.parent} ({e.strerror or e}); "
            f"choose a writable {OUT_FOLDER}"
        ) from None
