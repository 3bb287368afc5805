"""``gge watch DIR``: evaluate every checkpoint a trainer saves, once each, in step order.

For trainers gge has no hook in (verl, EasyR1, a Hugging Face ``Trainer``, a loop of your own): each
complete checkpoint (:mod:`.scan`) goes through eval, its state is kept in ``watch.json`` (:mod:`.state`)
and its scalars are logged against its step (:mod:`.metrics_log`); :func:`watch` (:mod:`.watcher`) is
the loop, :func:`watch_main` (:mod:`.cli`) the command. The manual (which checkpoints are found, when
one is complete, resume, configuration errors, retries, logging, exit codes) is docs/watch.md.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "checkpoint-20").mkdir()
    >>> (root / "global_step_10" / "actor" / "huggingface").mkdir(parents=True)
    >>> [(c.step, c.layout, c.path.relative_to(root).as_posix()) for c in find_checkpoints(root)]
    [(10, 'verl', 'global_step_10/actor/huggingface'), (20, 'hf', 'checkpoint-20')]
"""

from __future__ import annotations

from gge.integrations.watch.cli import watch_main, watch_parser
from gge.integrations.watch.metrics_log import METRICS_FILE, STEP_KEY
from gge.integrations.watch.scan import DEFAULT_SETTLE_S, Checkpoint, find_checkpoints, pending_reason
from gge.integrations.watch.state import WATCH_FILE, evaluated_steps, is_configuration_error
from gge.integrations.watch.watcher import (
    DEFAULT_ATTEMPTS,
    DEFAULT_OUT_NAME,
    DEFAULT_POLL_S,
    WATCH_LOGGERS,
    WatchReport,
    watch,
)

__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_OUT_NAME",
    "DEFAULT_POLL_S",
    "DEFAULT_SETTLE_S",
    "METRICS_FILE",
    "STEP_KEY",
    "WATCH_FILE",
    "WATCH_LOGGERS",
    "Checkpoint",
    "WatchReport",
    "evaluated_steps",
    "find_checkpoints",
    "is_configuration_error",
    "pending_reason",
    "watch",
    "watch_main",
    "watch_parser",
]
