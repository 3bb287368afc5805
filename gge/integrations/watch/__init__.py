r"""``gge watch DIR``: evaluate every checkpoint a trainer saves, once each, in step order.

For trainers gge has no hook in (verl, EasyR1, a plain Hugging Face ``Trainer``, a loop of your own):
point the watcher at the folder the trainer saves into. Each new Hugging Face checkpoint goes through
the normal eval path (``gge eval ckpt=<checkpoint> output_dir=OUT/step_<N> ...``: the preset is
picked from the checkpoint's config, the outputs are eval's), and its scalars are logged against the
checkpoint's step, so critic Top-1 and Oracle@K curves exist for any trainer::

    gge watch checkpoints/grpo_run --out evals/grpo_run --logger wandb \
        data_root=/data/gui 'benchmarks=[screenspot_pro,osworld_g]' max_samples=200

Syntax: ``gge watch DIR [--out OUT] [--poll S] [--settle S] [--once] [--logger csv|wandb]
[--wandb-project P] [--attempts N] [--retry-failed] [key=value ...]`` (``python -m
gge.integrations.watch`` takes the same). The ``key=value`` arguments are ``eval.py``'s (see
``gge eval --help``), except ``ckpt``, ``output_dir``, ``logger``, ``wandb_project`` and
``dry_run``, which the watcher sets or replaces. ``--once`` evaluates what is complete now and exits
(cron, scripts); otherwise the watcher scans DIR every ``--poll`` seconds (default 60) until Ctrl-C
or SIGTERM.

**Checkpoints found** (folders directly under DIR; the step is the number in the name):

* ``checkpoint-<N>/``: Hugging Face ``Trainer``, TRL, accelerate scripts;
* ``global_step_<N>/actor/huggingface/``: verl and EasyR1 (also ``actor/hf``, ``huggingface``,
  ``hf`` under ``global_step_<N>/``, and ``global_step_<N>/`` itself; the first holding weights
  wins). verl writes the model config and tokenizer there at every save but the weights only when
  ``trainer.checkpoint.save_contents`` includes ``hf_model``; EasyR1 never does. Otherwise merge
  them into that folder (verl: ``python -m verl.model_merger merge --backend fsdp --local_dir
  DIR/global_step_N/actor --target_dir DIR/global_step_N/actor/huggingface``; EasyR1: ``python
  scripts/model_merger.py --local_dir DIR/global_step_N/actor``). Until weights are there the
  watcher waits and says why.

**When a checkpoint is complete.** Trainers write a checkpoint file by file, and copies (rsync, cp)
arrive in any order, so no marker file (``trainer_state.json``, verl's tracker) is trusted alone. A
checkpoint is evaluated once all of this holds:

1. its model folder has ``config.json`` and weights (``*.safetensors`` other than adapters,
   ``pytorch_model*.bin`` / ``model*.bin``);
2. no file in it looks in flight (``*.tmp``, ``*.part``, ``*.partial``, ``*.incomplete``, rsync's
   ``.<name>.XXXXXX``);
3. a sharded checkpoint has its index (``*.index.json``, readable) and every shard the index lists,
   and no ``-0000k-of-0000n`` shard lies there without an index;
4. every ``.safetensors`` file is as long as its header says (a file still being written is short);
5. nothing under the checkpoint's folder (``checkpoint-N/``, ``global_step_N/``, recursively)
   changed for ``--settle`` seconds (default 30; optimizer states and ``.bin`` files have no
   length to check).

A checkpoint that is not complete yet never holds up the others: complete ones are evaluated in
ascending step order, rescanning after each, and a late one is evaluated when it completes (rows
are keyed by step, so curves are right either way).

**State and resume.** ``OUT`` (default ``DIR/gge_watch``) holds ``watch.json``: per step its
status (``running``, ``done`` with its headline numbers (``top1``, and ``oracle@K`` unless the run
scored one answer per sample) and output folder, ``config_error``, ``retry`` or ``failed``
with the error, ``vanished`` when the trainer removed it before it was evaluated: a warning is
printed, see ``save_total_limit``; ``seen`` lists every step any scan found), attempts, the
checkpoint's path, and the eval arguments and W&B run id of the
watcher. It is rewritten atomically (a temporary file renamed over it) after every change, and
``OUT`` is locked (``flock`` on ``OUT/.gge.lock``, as eval locks its output folder): a second
watcher on it is refused; a killed one leaves no stale lock. A restarted watcher skips the done
steps, and a step it was killed in the middle of is evaluated again into the same ``OUT/step_<N>/``,
where eval's own resume keeps the samples already finished (after checking with ``run.json`` that
the run is the same). A restart with other eval arguments, or on another DIR, is refused (a curve
is one protocol on one run), unless nothing was evaluated with the old ones: no step done and no
``OUT/step_<N>/`` holding a finished sample (``predictions.rank*.jsonl``, ``predictions.jsonl`` or
``results.json``). Then the new arguments replace the old, the steps that waited or failed under the
old ones start afresh, and the watcher says so (the usual case: correcting a configuration error).

**Configuration errors are permanent.** A configuration error is a :class:`~gge.errors.GgeError`
(gge's one-line bad-input error: a bad value, no preset or an ambiguous model family for the
checkpoint, missing data...) raised before any sample of the step was evaluated (neither that
attempt nor an earlier one left a sample in ``OUT/step_<N>/predictions.rank*.jsonl`` or
``predictions.jsonl``), unless it is a :class:`~gge.errors.TransientError` (a server down after its
retries, a step folder locked by another run, a read the file system failed) or wraps an environment
failure (an ``OSError`` other than a missing file, ``MemoryError`` or ``RuntimeError`` in its
``__cause__``/``__context__`` chain): see :func:`is_configuration_error`. Retrying it with the
same settings gives the same error, so it uses no attempt: the step is recorded as
``config_error`` with the error, said once (``step N: configuration error: ...``), and not evaluated
again with these eval arguments (a restarted watcher says it once more). Fix the eval
arguments and restart (accepted, see above), or, once the checkpoint itself is fixed, rerun with
``--retry-failed``.

**Failures and retries.** Any other error (a runtime failure, an error after samples were
evaluated) is transient: the step is recorded with the error and the watcher goes on with the
next; it is tried again at the next scan (polling mode) or the next ``--once`` run,
``--attempts`` times in all (default 3; a watcher killed during an evaluation counts that attempt,
Ctrl-C and a logger error do not), then left as ``failed``. ``--retry-failed`` gives the failed
steps (and the configuration errors) new attempts.

**Subset runs.** A step evaluated with ``max_samples`` says so in its line (``step N: Top-1 ...
(mean of 1 benchmarks; subset: first 200 of 1272 samples (ScreenSpot-v2); ...)``, the wording of
:func:`gge.report.markdown.subset_text`), keeps results.json's ``subset`` record in its ``watch.json`` entry
(``null`` for a full run) and that text in the ``subset`` column of ``metrics.csv`` (empty for a full run).

**Logging.** Every evaluated step adds a row to ``OUT/metrics.csv``: ``step``, ``subset``, then the scalars of
:func:`gge.scoring.metrics.scalar_metrics` (``grounding/<benchmark>/top1``,
``grounding/<benchmark>/oracle@K``,
``grounding/<benchmark>/critic_miss``, ...; ``grounding/mean/...``). The file is rewritten atomically,
sorted by step, one row per step. ``--logger wandb`` also logs them to one W&B run (project
``--wandb-project``, run files under ``OUT/wandb``) with ``trainer/global_step`` = the step, declared
the x axis of every ``grounding/*`` metric (``define_metric``), as Lightning's logger and the gge
callback do. The run id is kept in ``watch.json``: a restarted watcher resumes the same run. Offline
(``WANDB_MODE=offline``) each watcher session writes its own ``offline-run-*`` folder with that id:
sync the first with ``wandb sync`` and the later ones with ``wandb sync --append``. A W&B error
(not logged in...) stops the watcher (exit 2) without counting an attempt against the checkpoint.
A step killed after logging and before ``watch.json`` says done is evaluated again from its
finished predictions and logged again (the CSV keeps one row; W&B gets the same point twice).

Evaluations run in the watcher's process, one at a time (``trainer.devices`` above 1 needs
``trainer.strategy=ddp_spawn``: a ``ddp`` launcher would start the watcher again in every process).
Exit codes: 0; 1 when a ``--once`` run saw a checkpoint fail; 2 for bad input (one line naming the
folder or argument) and when a ``--once`` run met a configuration error; 130 when interrupted (the
state is saved: rerun the command to continue).

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
