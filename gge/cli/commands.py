"""The ``gge`` command: one table of subcommands.

``gge eval key=value ...`` evaluates a model (the same as ``python eval.py key=value ...``; plain
``gge key=value ...`` does too); ``gge compare A B`` pairs two runs (:mod:`gge.compare`);
``gge import FORMAT FILE`` reads another harness's published log (:mod:`gge.cli.importing`) and
``gge explain A B`` walks from one figure to another (:mod:`gge.cli.explaining`);
``gge export verl``, ``gge summarize-verl`` (:mod:`gge.integrations.verl`) and ``gge watch``
(:mod:`gge.integrations.watch`) serve trainers gge has no callback in. A new
subcommand is one function taking its arguments and returning an exit code, plus one line in
:data:`COMMANDS`. Bad input (:class:`~gge.errors.GgeError`) prints ``gge: error: ...`` on stderr
and exits with 2.

Example:
    >>> sorted(COMMANDS)
    ['compare', 'data', 'eval', 'explain', 'export', 'import', 'summarize-verl', 'watch']
    >>> main(["--help"])  # doctest: +ELLIPSIS
    usage: gge <command> [arguments]
    ...
    0
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gge.errors import GgeError, did_you_mean


@dataclass(frozen=True)
class Command:
    """One subcommand.

    Attributes:
        name: What follows ``gge``.
        summary: One line for ``gge --help``.
        run: Takes the arguments after the name; returns the exit code.
    """

    name: str
    summary: str
    run: Callable[[list[str]], int]


def _eval(args: list[str]) -> int:
    from gge.cli.eval import main as eval_main

    return eval_main(args, prog="gge eval")


def compare_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge compare``.

    Returns:
        The parser.

    Example:
        >>> compare_parser().parse_args(["runA", "runB", "--seed", "3"]).seed
        3
    """
    p = argparse.ArgumentParser(
        prog="gge compare",
        description=(
            "Paired comparison of two runs on the same samples: per benchmark and table cell, the "
            "difference B - A in Top-1 and Oracle@K with a paired bootstrap interval (screenshots "
            "resampled together), the exact McNemar p-value, the minimum detectable difference and "
            "the samples won and lost. Writes compare.json, compare.md and compare.html. Refuses runs "
            "it cannot pair: other benchmarks, variants, sample ids or samples digests (run.json), a "
            "predictions.jsonl that does not reproduce its results.json, or an impossible line."
        ),
    )
    p.add_argument("a", metavar="A", help="baseline run: an eval.py output folder, or its results.json")
    p.add_argument("b", metavar="B", help="run compared with A (same benchmarks, variants and samples)")
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="output folder, created if needed (default: B/compare-vs-<A>)",
    )
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument(
        "--labels", nargs=2, metavar=("NAME_A", "NAME_B"), default=None, help="names shown for A and B"
    )
    return p


def _compare(args: list[str]) -> int:
    from gge.compare import run_compare

    ns = compare_parser().parse_args(args)
    run_compare(ns.a, ns.b, out_dir=ns.out, resamples=ns.resamples, seed=ns.seed, labels=ns.labels)
    return 0


def _export(args: list[str]) -> int:
    if not args or args[0] != "verl":
        got = f"'{args[0]}'" if args else "nothing"
        raise GgeError(f"gge export: the target is 'verl' (gge export verl key=value ...), got {got}")
    from gge.integrations.verl import export_main

    return export_main(args[1:])


def _summarize_verl(args: list[str]) -> int:
    from gge.integrations.verl import summarize_main

    return summarize_main(args)


def _explain(args: list[str]) -> int:
    from gge.cli.explaining import explain_main

    return explain_main(args)


def _import(args: list[str]) -> int:
    from gge.cli.importing import import_main

    return import_main(args)


def _data(args: list[str]) -> int:
    from gge.cli.data import data_main

    return data_main(args)


def _watch(args: list[str]) -> int:
    from gge.integrations.watch import watch_main

    return watch_main(args)


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("eval", "evaluate a model: gge eval key=value ... (as python eval.py; eval --help)", _eval),
        Command(
            "compare", "paired comparison of two runs: gge compare A B [--out DIR] (compare --help)", _compare
        ),
        Command(
            "export", "validation files for verl / EasyR1: gge export verl key=value ... (--help)", _export
        ),
        Command(
            "summarize-verl",
            "verl's dumped validation generations -> results.json, tables, report (--help)",
            _summarize_verl,
        ),
        Command(
            "explain", "why two figures for one checkpoint differ: gge explain A B ... (--help)", _explain
        ),
        Command(
            "import",
            "another harness's prediction log as replay lines: gge import FORMAT FILE ... (--help)",
            _import,
        ),
        Command("watch", "evaluate each checkpoint a trainer saves: gge watch DIR ... (--help)", _watch),
        Command(
            "data", "check a benchmark folder: every screenshot present, decodable, its size (--help)", _data
        ),
    )
}
"""The subcommands, by name."""


def usage() -> str:
    """``gge --help``: the subcommands.

    Returns:
        The text.
    """
    lines = [
        "usage: gge <command> [arguments]",
        "       gge key=value ...   (same as gge eval)",
        "",
        "commands:",
    ]
    width = max(len(n) for n in COMMANDS)
    lines += [f"  {c.name.ljust(width)}  {c.summary}" for c in COMMANDS.values()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``gge`` console script: dispatch to a subcommand.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0 on success, 2 on bad input (with ``gge: error: ...`` on stderr).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    if "=" in name:  # gge key=value ...: an evaluation
        name, rest = "eval", args
    command = COMMANDS.get(name)
    if command is None:
        known = ", ".join(COMMANDS)
        print(
            f"gge: error: unknown command '{name}'{did_you_mean(name, COMMANDS)}; known: {known}",
            file=sys.stderr,
        )
        return 2
    try:
        return command.run(rest)
    except GgeError as e:
        print(f"gge: error: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:  # argparse: --help (0) or a usage error (2, message already printed)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except BrokenPipeError:  # the reader went away (gge data list | head): stop quietly, as a shell tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        return 141  # 128 + SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
