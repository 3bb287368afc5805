"""``python eval.py key=value ...``: a typed configuration, one ``run(cfg)``, an exit code.

Configuration is an OmegaConf dotlist over a dataclass schema: unknown keys are rejected with a
did-you-mean, wrong types are rejected. ``model=NAME`` picks a model (``model.<option>=`` then sets
its options); ``bench.<benchmark>.<option>=`` sets a benchmark's options (``root``, and e.g.
``bench.screenspot_pro.language=cn``). Quote lists in bash: ``'benchmarks=[screenspot_pro,osworld_g]'``.

Example:
    >>> cfg = parse_args(["model=replay", "model.predictions=p.jsonl", "benchmarks=[osworld_g]", "k=3"])
    >>> cfg.model.name, list(cfg.benchmarks), cfg.k
    ('replay', ['osworld_g'], 3)
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import OmegaConf

from gge.benchmarks import REGISTRY
from gge.benchmarks.hub_copies import layouts_of
from gge.benchmarks.plugins import plugin_problems
from gge.documents.results import COPY_SOURCES
from gge.errors import GgeError
from gge.models import model_names
from gge.run.settings import EvalConfig, parse_args
from gge.run.standalone import run
from gge.run.stops import Rerun, RunInterrupted

COPY_OPTIONS = ("source", "allow_copy_differences", "release_root")
"""The options of every benchmark that only a benchmark with Hub copies gge reads has use for."""


def reads_copies(name: str) -> bool:
    """Whether gge reads a Hub copy of the benchmark ``name`` (``bench.<name>.source=parquet|tsv``).

    Example:
        >>> reads_copies("screenspot_v2"), reads_copies("records")
        (True, False)
    """
    return any(layouts_of(name, kind) for kind in COPY_SOURCES)


def help_text() -> str:
    """``--help``: how to call eval.py, then every key with its default, and the models.

    Example:
        >>> "  k=5" in help_text().splitlines()
        True
    """

    def flat(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
        if isinstance(node, dict):
            return [item for key, value in node.items() for item in flat(value, f"{prefix}{key}.")]
        return [(prefix[:-1], node)]

    defaults = OmegaConf.to_container(OmegaConf.structured(EvalConfig))
    copies = [name for name in REGISTRY if reads_copies(name)]
    lines = [
        (__doc__ or "").split("Example:")[0].strip(),
        "",
        "Keys (key=default; model.* keys are set by the preset model= names):",
    ]
    for key, value in flat(defaults):
        parts = key.split(".")
        if parts[0] == "bench" and parts[-1] in COPY_OPTIONS and parts[1] not in copies:
            continue  # a benchmark gge reads no Hub copy of: its copy options mean nothing
        shown = json.dumps(value) if value is None or isinstance(value, (bool, list, dict)) else str(value)
        if isinstance(value, str) and ("\n" in value or len(value) > 60):
            shown = json.dumps(value)[:57] + "..."
        lines.append(f"  {key}={shown}")
    lines += [
        f"  (bench.<name>.{', '.join(COPY_OPTIONS)}: a Hub copy instead of the release, for "
        f"{', '.join(copies) or 'no benchmark'})",
        "",
        f"Models (model=): {', '.join(model_names())}",
        "Benchmarks: " + ", ".join(REGISTRY),
    ]
    left_out = plugin_problems()
    if left_out:
        lines += ["Benchmark packages left out (gge.benchmarks entry points):", *(f"  {p}" for p in left_out)]
    return "\n".join(lines)


def rerun_command(prog: str, args: Sequence[str], rerun: Mapping[str, str]) -> str:
    """The command line that reruns ``prog args`` with the ``key=value`` pairs of ``rerun`` set.

    Each key of ``rerun`` replaces the argument that sets it, or is added at the end; every argument
    is quoted for a POSIX shell as needed.

    Example:
        >>> rerun_command("python eval.py", ["k=3", "resume=false", "benchmarks=[a,b]"], {"resume": "true"})
        "python eval.py k=3 resume=true 'benchmarks=[a,b]'"
    """
    todo = dict(rerun)
    out = []
    for arg in args:
        key = arg.split("=", 1)[0]
        if key in rerun:
            if key not in todo:
                continue  # set twice: the first one stands for both
            arg = f"{key}={todo.pop(key)}"
        out.append(arg)
    out += [f"{key}={value}" for key, value in todo.items()]
    return " ".join([prog, *(shlex.quote(a) for a in out)])


def main(argv: Sequence[str] | None = None, prog: str = "python eval.py") -> int:
    """Command-line entry point: parse, run, and turn bad input into one message and exit code 2.

    Ctrl-C during the evaluation says how many samples are kept and the command that resumes
    (exit code 130); bad input that a rerun with other arguments gets past names that command too.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).
        prog: How the user called it (in the commands it prints): ``python eval.py`` or ``gge eval``.

    Returns:
        0 on success, 2 on bad input or configuration, 130 when interrupted.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(help_text())
        return 0
    try:
        run(parse_args(args))
    except RunInterrupted as e:
        print(f"gge: {e}:\n  {rerun_command(prog, args, e.rerun)}", file=sys.stderr)
        return 130
    except Rerun as e:
        print(f"gge: error: {e}:\n  {rerun_command(prog, args, e.rerun)}", file=sys.stderr)
        return 2
    except GgeError as e:
        print(f"gge: error: {e}", file=sys.stderr)
        return 2
    return 0
