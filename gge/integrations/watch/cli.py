"""The command line of ``gge watch``: its argument parser and :func:`watch_main`."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from gge.errors import GgeError
from gge.integrations.watch.scan import DEFAULT_SETTLE_S
from gge.integrations.watch.watcher import (
    DEFAULT_ATTEMPTS,
    DEFAULT_OUT_NAME,
    DEFAULT_POLL_S,
    WATCH_LOGGERS,
    watch,
)


def watch_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge watch``.

    Returns:
        The parser (parse with ``parse_intermixed_args``: options and ``key=value`` mix freely).

    Example:
        >>> a = watch_parser().parse_intermixed_args(["ckpts", "k=3", "--once", "max_samples=2"])
        >>> a.dir, a.eval_args, a.once
        ('ckpts', ['k=3', 'max_samples=2'], True)
    """
    p = argparse.ArgumentParser(
        prog="gge watch",
        description=(
            "Evaluate every Hugging Face checkpoint a trainer saves into DIR (checkpoint-N/, "
            "global_step_N/actor/huggingface/), once each, in step order, and log Top-1 and Oracle@K "
            "against the step (OUT/metrics.csv; --logger wandb: one W&B run). State is kept in "
            "OUT/watch.json: a restarted watcher continues. Trailing key=value arguments are eval.py's."
        ),
        epilog=(
            "A configuration error (a gge error such as a bad value or an ambiguous model family, "
            "raised before any sample of the step was evaluated, by this attempt or an earlier one, and "
            "not a transient failure: a server down, an output folder another run holds, a failed file "
            "read, memory) uses no attempt: it is said once, recorded as config_error and not retried "
            "with these arguments; restart with corrected key=value arguments (accepted while nothing "
            "was evaluated with the old ones). Other errors are transient: retried --attempts times."
        ),
    )
    p.add_argument("dir", metavar="DIR", help="the folder the trainer saves checkpoints into")
    p.add_argument("eval_args", metavar="key=value", nargs="*", help="eval.py options (see gge eval --help)")
    p.add_argument(
        "--out", metavar="OUT", default=None, help=f"output folder (default DIR/{DEFAULT_OUT_NAME})"
    )
    p.add_argument(
        "--poll", type=float, default=DEFAULT_POLL_S, metavar="S", help="seconds between scans (default 60)"
    )
    p.add_argument(
        "--settle",
        type=float,
        default=DEFAULT_SETTLE_S,
        metavar="S",
        help="seconds a checkpoint must stay unchanged before it is evaluated (default 30)",
    )
    p.add_argument("--once", action="store_true", help="evaluate what is complete now, then exit")
    p.add_argument("--logger", choices=WATCH_LOGGERS, default="csv", help="csv (default) or wandb (and csv)")
    p.add_argument("--wandb-project", default="gge", metavar="P", help="W&B project (default gge)")
    p.add_argument(
        "--attempts",
        type=int,
        default=DEFAULT_ATTEMPTS,
        metavar="N",
        help=(
            "evaluations tried per checkpoint before it is left as failed (default 3; a configuration "
            "error uses none)"
        ),
    )
    p.add_argument("--retry-failed", action="store_true", help="give checkpoints left as failed new attempts")
    return p


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def watch_main(argv: Sequence[str]) -> int:
    """``gge watch DIR [options] [key=value ...]``: parse, watch, and turn bad input into exit code 2.

    Args:
        argv: The arguments after ``watch``.

    Returns:
        0; 1 when a ``--once`` run saw a checkpoint fail; 2 for bad input and when a ``--once`` run
        met a configuration error; 130 when interrupted.

    Example:
        >>> watch_main(["/nonexistent/run", "--once"])
        2
    """
    args = watch_parser().parse_intermixed_args([a for a in argv if a != "--"])
    for arg in args.eval_args:
        if "=" not in arg:
            print(
                f"gge: error: gge watch takes one DIR, then key=value eval options; got {arg!r}",
                file=sys.stderr,
            )
            return 2
    try:
        with _sigterm_as_interrupt():
            report = watch(
                args.dir,
                args.eval_args,
                out=args.out,
                poll_s=args.poll,
                settle_s=args.settle,
                once=args.once,
                logger=args.logger,
                wandb_project=args.wandb_project,
                attempts=args.attempts,
                retry_failed=args.retry_failed,
            )
    except GgeError as e:
        print(f"gge: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "gge watch: interrupted; the state is saved: rerun the same command to continue", file=sys.stderr
        )
        return 130
    return 2 if report.config_errors else 1 if report.failed else 0
