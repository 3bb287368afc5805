"""``gge data check``: a benchmark folder checked the way a run reads it (:mod:`gge.benchmarks.check`).

Reads each benchmark from ``--data-root`` (``DIR/<name>``, as ``data_root=DIR`` does; default
``$GGE_DATA``) with its default options, then every screenshot its records name: present, decodable,
of the size the records give. One line per problem, one summary line per benchmark; exit 0 when every
benchmark checked is whole, 1 when some screenshot is not, 2 when a benchmark cannot be read at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from gge.errors import GgeError

ENV = "GGE_DATA"
"""The environment variable naming the default data folder."""


def data_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge data``.

    Returns:
        The parser.

    Example:
        >>> ns = data_parser().parse_args(["check", "groundui_1k", "--data-root", "/d"])
        >>> ns.action, ns.names, ns.data_root
        ('check', ['groundui_1k'], '/d')
    """
    p = argparse.ArgumentParser(
        prog="gge data",
        description=(
            "check: read each benchmark as a run does and every screenshot its records name, once each; "
            "say which are missing, undecodable or of another size than their records give (a wrong or "
            "resized download), one line each, and a summary line per benchmark. Exit 0: every "
            "benchmark whole; 1: some screenshot is not; 2: a benchmark cannot be read."
        ),
    )
    p.add_argument("action", choices=["check"], help="what to do (check)")
    p.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="benchmarks (default: every benchmark with a folder under the data root)",
    )
    p.add_argument("--data-root", default=None, help=f"the folder holding DIR/<name> (default: ${ENV})")
    p.add_argument("--workers", type=int, default=None, help="threads decoding (default: the cores)")
    return p


def _present(root: Path) -> list[str]:
    """The benchmarks whose folder is under ``root`` (their release layout or a Hub copy)."""
    from gge.benchmarks import REGISTRY, get_benchmark

    return [name for name in REGISTRY if (root / get_benchmark(name).directory).is_dir()]


def data_main(argv: Sequence[str], out: TextIO | None = None) -> int:
    """``gge data check [NAME ...] [--data-root DIR]``.

    Args:
        argv: The arguments after ``gge data``.
        out: Where the lines go (default stdout).

    Returns:
        0, 1 or 2 (see the module).

    Raises:
        GgeError: No data root given, or a name that is no benchmark.
    """
    from gge.benchmarks import get_benchmark
    from gge.benchmarks.check import check_screenshots
    from gge.benchmarks.loading import load_benchmarks

    out = out or sys.stdout
    ns = data_parser().parse_args(list(argv))
    given = ns.data_root or os.environ.get(ENV)
    if not given:
        raise GgeError(f"gge data check: name the data folder with --data-root DIR (or set {ENV})")
    root = Path(given).expanduser()
    names = list(ns.names) or _present(root)
    for name in names:
        get_benchmark(name)  # an unknown name: one line naming the known ones
    if not names:
        raise GgeError(f"gge data check: no benchmark folder under {root}")
    code = 0
    for name in names:
        try:
            samples = load_benchmarks([name], root).samples[name]
        except GgeError as e:
            print(f"{name}: cannot be read: {e}", file=out)
            code = 2
            continue
        report = check_screenshots(name, samples, workers=ns.workers)
        for problem in report.problems:
            print(problem.line(name), file=out)
        print(report.summary(), file=out)
        if report.problems and code == 0:
            code = 1
    return code
