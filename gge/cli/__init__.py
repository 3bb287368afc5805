"""The command line: ``python eval.py key=value ...`` (:mod:`.eval`) and ``gge ...`` (:mod:`.commands`)."""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python eval.py`` with ``argv`` (default ``sys.argv[1:]``); see :func:`gge.cli.eval.main`.

    Args:
        argv: The ``key=value`` arguments.

    Returns:
        The exit status.
    """
    from gge.cli.eval import main as eval_main

    return eval_main(argv)
