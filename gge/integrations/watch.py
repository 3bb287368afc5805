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
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / "checkpoint-20").mkdir()
    >>> (root / "global_step_10" / "actor" / "huggingface").mkdir(parents=True)
    >>> [(c.step, c.layout, c.path.relative_to(root).as_posix()) for c in find_checkpoints(root)]
    [(10, 'verl', 'global_step_10/actor/huggingface'), (20, 'hf', 'checkpoint-20')]
"""

from __future__ import annotations

import argparse
import csv
import gc
import importlib.util
import io
import json
import os
import re
import secrets
import signal
import string
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from gge.errors import GgeError, TransientError, unknown_name
from gge.run.predlog import existing_logs
from gge.run.runstate import LOCK_FILE, atomic_write, check_output_dir, output_dir_lock

WATCH_FILE = "watch.json"
"""The watcher's state file in the output folder."""

METRICS_FILE = "metrics.csv"
"""The per-step scalars in the output folder."""

DEFAULT_OUT_NAME = "gge_watch"
"""The output folder's name under the watched folder when ``--out`` is not given."""

DEFAULT_POLL_S = 60.0
DEFAULT_SETTLE_S = 30.0
DEFAULT_ATTEMPTS = 3
STEP_KEY = "trainer/global_step"
"""The W&B step metric (Lightning's, so the watcher's curves line up with the gge callback's)."""

WATCH_LOGGERS = ("csv", "wandb")
_SET_BY_WATCH = ("ckpt", "output_dir", "logger", "wandb_project", "dry_run")

_HF_DIR = re.compile(r"checkpoint-(\d+)")
_VERL_DIR = re.compile(r"global_step_?(\d+)")
_VERL_MODEL_DIRS = ("actor/huggingface", "actor/hf", "huggingface", "hf", ".")
_SHARD = re.compile(r".*-\d{5}-of-(\d{5})\.(safetensors|bin)")
_IN_FLIGHT = re.compile(r".*\.(tmp|temp|part|partial|incomplete)|\..+\.[A-Za-z0-9]{6}")
_WEIGHT_BIN = re.compile(r"(pytorch_model|model)([-.].*)?\.bin")
_TRANSIENT_CAUSES = (OSError, MemoryError, RuntimeError, TimeoutError, ConnectionError)
"""Causes that make a wrapped GgeError an environment failure, which can pass, not a configuration error.

A ``FileNotFoundError`` is not one: a missing file is a wrong path in the arguments."""

_clock: Callable[[], float] = time.time
"""The clock the settle rule reads (a test sets it)."""


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint folder a trainer saved.

    Attributes:
        step: The training step, from the folder's name.
        path: The Hugging Face model folder evaluated (``ckpt=``).
        root: The folder the trainer saved (``checkpoint-N/`` or ``global_step_N/``): watched for
            changes as a whole.
        layout: ``hf`` (``checkpoint-N/``) or ``verl`` (``global_step_N/...``, also EasyR1).
    """

    step: int
    path: Path
    root: Path
    layout: str


def _verl_model_folder(root: Path) -> Path:
    """The model folder of a ``global_step_N/``: the first holding weights, else config, else the default."""
    folders = [root / sub if sub != "." else root for sub in _VERL_MODEL_DIRS]
    with_config = [f for f in folders if (f / "config.json").is_file()]
    with_weights = [f for f in with_config if _weight_files(f)]
    return (with_weights or with_config or folders)[0]


def find_checkpoints(root: str | Path) -> list[Checkpoint]:
    """The checkpoints directly under ``root``, complete or not, in step order.

    Args:
        root: The folder a trainer saves checkpoints into.

    Returns:
        One :class:`Checkpoint` per ``checkpoint-<N>/`` and ``global_step_<N>/`` folder, sorted by
        step (then name: two folders with one step are both listed).

    Raises:
        GgeError: ``root`` is not a folder.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> for name in ("checkpoint-300", "checkpoint-25", "tmp-checkpoint-400", "runs"):
        ...     (root / name).mkdir()
        >>> [c.step for c in find_checkpoints(root)]
        [25, 300]
    """
    folder = Path(root)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise GgeError(f"{folder} {what}: name the folder the trainer saves checkpoints into")
    found: list[Checkpoint] = []
    for child in folder.iterdir():
        if not child.is_dir():
            continue
        hf, verl = _HF_DIR.fullmatch(child.name), _VERL_DIR.fullmatch(child.name)
        if hf:
            found.append(Checkpoint(int(hf.group(1)), child, child, "hf"))
        elif verl:
            found.append(Checkpoint(int(verl.group(1)), _verl_model_folder(child), child, "verl"))
    return sorted(found, key=lambda c: (c.step, c.root.name))


def _weight_files(folder: Path) -> list[Path]:
    try:
        files = [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return []
    return sorted(
        p
        for p in files
        if (p.suffix == ".safetensors" and not p.name.startswith("adapter_")) or _WEIGHT_BIN.fullmatch(p.name)
    )


def _safetensors_short(path: Path) -> str | None:
    """Why a ``.safetensors`` file is not whole yet (shorter than its header says), or None."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return f"{path.name} is still being written ({size} bytes)"
            n = int.from_bytes(head, "little")
            if n > size - 8:
                return f"{path.name} is still being written (its header alone is {n} bytes)"
            header = json.loads(f.read(n))
    except OSError as e:
        return f"{path.name} cannot be read yet ({e.strerror or e})"
    except ValueError:
        return f"{path.name} has an unreadable header (still being written?)"
    ends = [
        int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)
    ]
    expected = 8 + n + max(ends, default=0)
    if size < expected:
        return f"{path.name} is still being written ({size} of {expected} bytes)"
    return None


def _no_weights_hint(ckpt: Checkpoint) -> str:
    if ckpt.layout == "verl":
        return (
            "verl saves weights there only with trainer.checkpoint.save_contents including hf_model; "
            "otherwise merge them into it: python -m verl.model_merger merge --backend fsdp "
            f"--local_dir {ckpt.root / 'actor'} --target_dir {ckpt.path} "
            f"(EasyR1: python scripts/model_merger.py --local_dir {ckpt.root / 'actor'})"
        )
    return (
        "sharded trainer states (DeepSpeed ZeRO-3 without stage3_gather_16bit_weights_on_model_save, "
        "FSDP SHARDED_STATE_DICT) leave none there: save full weights, or consolidate them into it"
    )


def _newest_change(root: Path) -> float | None:
    newest: float | None = None
    for folder, _dirs, files in os.walk(root):
        for path in (folder, *(os.path.join(folder, name) for name in files)):
            try:
                mtime = os.stat(path).st_mtime
            except OSError:  # removed meanwhile
                continue
            newest = mtime if newest is None else max(newest, mtime)
    return newest


def pending_reason(
    ckpt: Checkpoint, settle_s: float = DEFAULT_SETTLE_S, now: float | None = None
) -> str | None:
    r"""Why a checkpoint is not complete yet (see the module docstring for the rule), or None.

    Args:
        ckpt: The checkpoint.
        settle_s: Seconds without any change under ``ckpt.root`` before it counts as written.
        now: The time to compare modification times with (default: now).

    Returns:
        None when the checkpoint can be evaluated; otherwise one line saying what is missing.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "checkpoint-1").mkdir()
        >>> (ck,) = find_checkpoints(root)
        >>> pending_reason(ck, 0)
        'no config.json yet'
        >>> _ = (ck.path / "config.json").write_text("{}")
        >>> _ = (ck.path / "model-00001-of-00002.safetensors").write_bytes(b"\x02" + bytes(7) + b"{}")
        >>> pending_reason(ck, 0)
        'model-00001-of-00002.safetensors: a shard of 2 with no index yet'
        >>> _ = (ck.path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        ...     "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
        >>> pending_reason(ck, 0)
        'model-00002-of-00002.safetensors is missing (1 of 2 shards in model.safetensors.index.json)'
        >>> _ = (ck.path / "model-00002-of-00002.safetensors").write_bytes(b"\x02" + bytes(7) + b"{}")
        >>> pending_reason(ck, 0) is None
        True
        >>> pending_reason(ck, 30)  # doctest: +ELLIPSIS
        'changed ...s ago: waiting until nothing changes for 30s'
    """
    folder = ckpt.path
    if not (folder / "config.json").is_file():
        if (folder / "adapter_config.json").is_file():
            return "a LoRA adapter without config.json: gge evaluates full models (merge the adapter first)"
        return "no config.json yet"
    try:
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
    except OSError as e:
        return f"cannot list it ({e.strerror or e})"
    in_flight = [n for n in names if _IN_FLIGHT.fullmatch(n)]
    if in_flight:
        return f"{in_flight[0]} is being written"
    indexes = [n for n in names if n.endswith(".index.json")]
    for index in indexes:
        try:
            weight_map = json.loads((folder / index).read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"{index} is unreadable (still being written?)"
        missing = [s for s in shards if s not in names]
        if missing:
            return (
                f"{missing[0]} is missing ({len(shards) - len(missing)} of {len(shards)} shards in {index})"
            )
    weights = _weight_files(folder)
    if not indexes:
        for w in weights:
            shard = _SHARD.fullmatch(w.name)
            if shard is not None:
                return f"{w.name}: a shard of {int(shard.group(1))} with no index yet"
    if not weights:
        return f"config.json but no model weights yet ({_no_weights_hint(ckpt)})"
    for w in weights:
        if w.suffix == ".safetensors":
            short = _safetensors_short(w)
            if short:
                return short
    if settle_s > 0:
        newest = _newest_change(ckpt.root)
        age = (_clock() if now is None else now) - (newest if newest is not None else 0.0)
        if age < settle_s:
            return f"changed {max(age, 0):.0f}s ago: waiting until nothing changes for {settle_s:g}s"
    return None


# --- state -------------------------------------------------------------------------------------------


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _run_id() -> str:
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


class _State:
    """``watch.json``: loaded, checked against this watcher's arguments, saved after every change."""

    def __init__(self, out: Path, root: Path, eval_args: Sequence[str]) -> None:
        self.path = out / WATCH_FILE
        self.data: dict[str, Any] = {
            "version": 1,
            "dir": str(root.resolve()),
            "eval_args": list(eval_args),
            "wandb_run_id": None,
            "steps": {},
        }
        self.replaced: str | None = None  # the old and new eval arguments, when new ones replaced them
        if self.path.is_file():
            try:
                old = json.loads(self.path.read_text(encoding="utf-8"))
                assert isinstance(old, dict) and isinstance(old.get("steps"), dict)
            except (OSError, ValueError, AssertionError) as e:
                raise GgeError(
                    f"{self.path}: unreadable watcher state ({e}); move it away to start over"
                ) from None
            if old.get("dir") not in (None, self.data["dir"]):
                raise GgeError(
                    f"{self.path.parent} holds the evaluations of {old['dir']}, not {self.data['dir']}: "
                    f'choose another --out (if the trainer\'s folder moved, edit "dir" in {self.path})'
                )
            before, now = sorted(old.get("eval_args") or []), sorted(eval_args)
            if before != now:
                gone = [a for a in before if a not in now] or ["(none)"]
                new = [a for a in now if a not in before] or ["(none)"]
                changed = f"(then: {' '.join(gone)}; now: {' '.join(new)})"
                evaluated = evaluated_steps(out, old["steps"])
                if evaluated:
                    raise GgeError(
                        f"{self.path.parent} holds evaluations made with other eval arguments {changed} "
                        f"(step {evaluated[0]} was evaluated with them); rerun with the same ones, "
                        "or choose another --out"
                    )
                # nothing was evaluated with the old arguments: the new ones replace them, and the
                # steps that waited or failed under the old ones start afresh
                old["eval_args"] = list(eval_args)
                old["steps"] = {k: v for k, v in old["steps"].items() if v.get("status") == "vanished"}
                self.replaced = changed
            self.data.update(old)

    @property
    def steps(self) -> dict[str, dict[str, Any]]:
        steps: dict[str, dict[str, Any]] = self.data["steps"]
        return steps

    def save(self) -> None:
        ordered = dict(sorted(self.steps.items(), key=lambda kv: int(kv[0])))
        self.data["steps"] = ordered
        atomic_write(self.path, json.dumps(self.data, indent=2, ensure_ascii=False) + "\n")


def evaluated_steps(out: Path, steps: Mapping[str, Mapping[str, Any]]) -> list[int]:
    r"""The steps with something evaluated in ``out``: done in ``steps``, or a sample in ``step_<N>/``.

    Args:
        out: The watcher's output folder.
        steps: ``watch.json``'s ``steps``.

    Returns:
        Those steps, ascending: a step is evaluated when ``watch.json`` says ``done`` or its folder
        (``out/step_<N>/``) holds a non-empty ``predictions.rank*.jsonl``, ``predictions.jsonl`` or
        ``results.json``.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp())
        >>> (out / "step_7").mkdir()
        >>> _ = (out / "step_7" / "predictions.rank0.jsonl").write_text('{"id": "a"}\n')
        >>> (out / "step_8").mkdir()
        >>> _ = (out / "step_8" / "run.json").write_text("{}")
        >>> evaluated_steps(out, {"3": {"status": "done"}, "8": {"status": "config_error"}})
        [3, 7]
    """
    found = {int(key) for key, entry in steps.items() if entry.get("status") == "done"}
    for folder in out.glob("step_*"):
        if not (folder.is_dir() and folder.name[5:].isdigit()):
            continue
        results = folder / "results.json"
        if _has_samples(folder) or (results.is_file() and results.stat().st_size > 0):
            found.add(int(folder.name[5:]))
    return sorted(found)


def _log_marks(step_dir: Path) -> dict[str, tuple[int, int, int]]:
    """(inode, size, mtime) of each prediction log in ``step_dir``: compared after an attempt."""
    marks: dict[str, tuple[int, int, int]] = {}
    for path in existing_logs(step_dir):
        try:
            st = path.stat()
        except OSError:
            continue
        marks[path.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return marks


def _has_samples(step_dir: Path) -> bool:
    """Whether ``step_dir`` holds an evaluated sample: a non-empty prediction log or ``predictions.jsonl``."""
    files = [*existing_logs(step_dir), step_dir / "predictions.jsonl"]
    return any(f.is_file() and f.stat().st_size > 0 for f in files)


def _samples_added(step_dir: Path, before: Mapping[str, tuple[int, int, int]]) -> bool:
    """Whether a prediction log in ``step_dir`` is non-empty and changed since ``before``."""
    return any(mark[1] > 0 and before.get(name) != mark for name, mark in _log_marks(step_dir).items())


def is_configuration_error(error: BaseException, samples_added: bool) -> bool:
    """Whether an evaluation's error is a configuration error (permanent), not a transient one.

    A configuration error is a :class:`~gge.errors.GgeError` (gge's bad-input error) raised before
    any sample of the step was evaluated, that is not a :class:`~gge.errors.TransientError` and does
    not wrap an environment failure (an ``OSError`` other than ``FileNotFoundError``, a
    ``MemoryError`` or a ``RuntimeError`` anywhere in its ``__cause__``/``__context__`` chain, which
    ``raise ... from None`` keeps in ``__context__``). The same settings would give it again, so the
    watcher spends no attempt on it and does not retry it.

    Args:
        error: What the evaluation raised.
        samples_added: Whether the step has an evaluated sample: added by this attempt, or left in
            its prediction logs by an earlier one.

    Returns:
        True for a configuration error.

    Example:
        >>> is_configuration_error(GgeError("k must be at least 1, got 0"), samples_added=False)
        True
        >>> is_configuration_error(GgeError("k must be at least 1, got 0"), samples_added=True)
        False
        >>> is_configuration_error(RuntimeError("CUDA out of memory"), samples_added=False)
        False
        >>> is_configuration_error(TransientError("POST ...: connection refused"), samples_added=False)
        False
    """
    return (
        isinstance(error, GgeError)
        and not isinstance(error, TransientError)
        and not samples_added
        and not _wraps_environment_failure(error)
    )


def _wraps_environment_failure(error: BaseException) -> bool:
    """Whether ``error``'s ``__cause__``/``__context__`` chain holds an environment failure."""
    seen: set[int] = set()
    todo = [error.__cause__, error.__context__]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, _TRANSIENT_CAUSES) and not isinstance(e, FileNotFoundError):
            return True
        todo += [e.__cause__, e.__context__]
    return False


# --- logging -----------------------------------------------------------------------------------------


def _write_metrics_csv(path: Path, step: int, scalars: Mapping[str, float], subset: str = "") -> None:
    """Put ``step``'s row into the CSV (replacing an earlier row of that step), sorted by step.

    ``subset`` is the step's :func:`gge.report.markdown.subset_text` ("" for a full run).
    """
    rows: list[dict[str, str]] = []
    header: list[str] = ["step"]
    if path.is_file():
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or header)
            rows = [r for r in reader if r.get("step") != str(step)]
    header += [k for k in ("subset", *sorted(scalars)) if k not in header]
    rows.append({"step": str(step), "subset": subset, **{k: repr(float(v)) for k, v in scalars.items()}})
    rows.sort(key=lambda r: int(r["step"]))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, buf.getvalue())


class _LoggerError(GgeError):
    """The logger failed (not the checkpoint): the watcher stops rather than count it as a failure."""


class _WandbRun:
    """One W&B run for the watcher's life, opened at the first row, resumed by id after a restart."""

    def __init__(self, out: Path, project: str, state: _State, name: str) -> None:
        self.out, self.project, self.state, self.name = out, project, state, name
        self._logger: Any = None
        self._env: list[str] = []

    def _open(self) -> Any:
        from pytorch_lightning.loggers import WandbLogger

        if not self.state.data.get("wandb_run_id"):
            self.state.data["wandb_run_id"] = _run_id()
            self.state.save()
        # table images and artifacts would go under the home folder: keep them with the run
        for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR"):
            if var not in os.environ:
                os.environ[var] = str((self.out / "wandb").resolve())
                self._env.append(var)
        logger = WandbLogger(
            project=self.project,
            save_dir=str(self.out),
            name=self.name,
            id=self.state.data["wandb_run_id"],
            resume="allow",
        )
        run = logger.experiment
        run.define_metric(STEP_KEY)
        run.define_metric("grounding/*", step_metric=STEP_KEY)
        logger.log_hyperparams(
            {"watch": {"dir": self.state.data["dir"], "eval_args": self.state.data["eval_args"]}}
        )
        return logger

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        try:
            if self._logger is None:
                self._logger = self._open()
            self._logger.log_metrics(dict(scalars), step=step)
        except Exception as e:
            if not type(e).__module__.startswith("wandb"):
                raise
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise _LoggerError(
                f"--logger wandb: {first} (the results are in {self.out}); run `wandb login`, or set "
                "WANDB_MODE=offline and sync later with `wandb sync`"
            ) from None

    def close(self) -> None:
        if self._logger is not None:
            self._logger.experiment.finish()
            self._logger = None
        for var in self._env:
            os.environ.pop(var, None)
        self._env = []


# --- the watcher ---------------------------------------------------------------------------------------


@dataclass
class WatchReport:
    """What one :func:`watch` call did.

    Attributes:
        evaluated: Steps evaluated by this call, in the order evaluated.
        failed: Steps whose evaluation failed in this call (recorded in ``watch.json``).
        config_errors: Steps that met a configuration error in this call, with the error (recorded
            as ``config_error``; see :func:`is_configuration_error`).
        pending: Steps not complete at the last scan, with the reason.
        state: ``watch.json`` as saved last.
    """

    evaluated: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    config_errors: dict[int, str] = field(default_factory=dict)
    pending: dict[int, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


def _check_eval_args(eval_args: Sequence[str]) -> None:
    """Refuse what the watcher sets itself, and bad keys, before any checkpoint is waited for."""
    from gge.cli.eval import parse_args

    for arg in eval_args:
        key = arg.split("=", 1)[0]
        if "=" in arg and key in _SET_BY_WATCH:
            hint = {"logger": "use --logger", "wandb_project": "use --wandb-project"}.get(
                key, "set per checkpoint"
            )
            raise GgeError(f"gge watch: {key}= is set by the watcher ({hint}); leave it out")
    cfg = parse_args(list(eval_args))  # unknown keys and wrong types, now rather than at the first checkpoint
    t = cfg.trainer
    devices = t.devices
    several = (
        (isinstance(devices, int) and devices > 1)
        or (isinstance(devices, str) and "," in devices.strip(","))
        or (not isinstance(devices, (int, str)) and len(devices) > 1)
    )
    if (several or int(t.num_nodes) > 1) and not any(s in str(t.strategy) for s in ("spawn", "fork")):
        raise GgeError(
            f"gge watch evaluates in its own process: with trainer.devices={devices} set "
            "trainer.strategy=ddp_spawn (a ddp launcher would start the watcher again in every process)"
        )


@contextmanager
def _watch_lock(out: Path) -> Iterator[None]:
    try:
        with output_dir_lock(out):
            yield
    except GgeError as e:
        if "in use by another" not in str(e):
            raise
        try:
            holder = (out / LOCK_FILE).read_text(encoding="utf-8").strip() or "another process"
        except OSError:
            holder = "another process"
        raise GgeError(
            f"{out} is in use by another gge watch ({holder}): one watcher per output folder; "
            "stop that one, or choose another --out"
        ) from None


def _titles(benchmarks: Mapping[str, Any]) -> dict[str, str]:
    """Each benchmark's title (its name when this gge does not know it), for the subset line."""
    from gge.benchmarks import REGISTRY

    return {name: REGISTRY[name].title if name in REGISTRY else name for name in benchmarks}


def _release_memory() -> None:
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return first if isinstance(e, GgeError) else f"{type(e).__name__}: {first}".rstrip(": ")


class _Watcher:
    def __init__(
        self,
        root: Path,
        eval_args: Sequence[str],
        out: Path,
        *,
        settle_s: float,
        logger: str,
        wandb_project: str,
        attempts: int,
        polling: bool,
        stdout: TextIO,
    ) -> None:
        self.root, self.eval_args, self.out, self.polling = root, list(eval_args), out, polling
        self.settle_s, self.attempts, self.stdout = settle_s, attempts, stdout
        self.state = _State(out, root, eval_args)
        self.wandb = (
            _WandbRun(out, wandb_project, self.state, f"watch-{root.resolve().name}")
            if logger == "wandb"
            else None
        )
        self.report = WatchReport()
        self._said: dict[int, str] = {}  # the reason last printed, per waiting step
        self._duplicates: set[int] = set()

    def say(self, text: str) -> None:
        print(f"gge watch: {text}", file=self.stdout, flush=True)

    def start(self, retry_failed: bool) -> None:
        """Settle what a killed or earlier watcher left: steps killed mid-run, failures to retry."""
        if self.state.replaced is not None:
            self.say(
                f"the eval arguments changed {self.state.replaced}; nothing was evaluated with the old "
                "ones: continuing with the new ones"
            )
        for key, entry in self.state.steps.items():
            status = entry.get("status")
            if status == "running":  # the watcher died during this evaluation: that attempt counts
                if entry.get("attempts", 0) >= self.attempts:
                    entry.update(
                        status="failed", error=entry.get("error") or "the watcher died while evaluating it"
                    )
                else:
                    entry["status"] = "retry"
                    entry.setdefault("error", "the watcher died while evaluating it")
            if retry_failed and entry.get("status") in ("failed", "config_error"):
                entry.update(status="retry", attempts=0)
                self.say(f"step {key}: failed before ({entry.get('error')}); trying again (--retry-failed)")
            elif entry.get("status") == "config_error":
                self.say(
                    f"step {key}: not evaluated: configuration error with these eval arguments "
                    f"({entry.get('error')}); correct them and restart, or --retry-failed once the "
                    "checkpoint is fixed"
                )
        self.state.save()
        self.report.state = self.state.data

    def scan(self, skip: set[int]) -> Checkpoint | None:
        """The first complete checkpoint to evaluate (ascending step), noting why others wait."""
        seen: dict[int, Checkpoint] = {}
        pending: dict[int, str] = {}
        chosen: Checkpoint | None = None
        for ck in find_checkpoints(self.root):
            if ck.step in seen:
                if ck.step not in self._duplicates:
                    self._duplicates.add(ck.step)
                    self.say(
                        f"step {ck.step}: {ck.root} and {seen[ck.step].root} have one step; using the first"
                    )
                continue
            seen[ck.step] = ck
            entry = self.state.steps.get(str(ck.step), {})
            if entry.get("status") in ("done", "failed", "config_error") or ck.step in skip:
                continue
            reason = pending_reason(ck, self.settle_s)
            if reason is None:
                chosen = chosen or ck
                continue
            pending[ck.step] = reason
            if self.polling and self._said.get(ck.step) != reason and not reason.startswith("changed "):
                self.say(f"step {ck.step} ({ck.path}): waiting: {reason}")
            self._said[ck.step] = reason
        self.report.pending = pending
        # A checkpoint seen before, not evaluated, and gone now: the trainer rotated it away
        # (save_total_limit, max_actor_ckpt_to_keep) faster than it could be evaluated.
        known = set(self.state.data.get("seen", []))
        for step in sorted(known - set(seen)):
            entry = self.state.steps.get(str(step), {})
            if entry.get("status") not in ("done", "failed", "config_error", "vanished"):
                self.say(
                    f"step {step}: the checkpoint was removed before it could be evaluated (the trainer "
                    "keeps only its latest checkpoints? raise save_total_limit / max_actor_ckpt_to_keep, "
                    "or evaluate with a shorter --settle)"
                )
                self.state.steps[str(step)] = {**entry, "status": "vanished", "vanished": _now()}
                self.state.save()
        if not set(seen) <= known:
            self.state.data["seen"] = sorted(known | set(seen))
            self.state.save()
        return chosen

    def evaluate(self, ck: Checkpoint) -> bool:
        """Evaluate one checkpoint through eval, log its scalars, record it; False when it failed."""
        from gge.cli import eval as cli
        from gge.report.markdown import subset_text
        from gge.scoring.metrics import scalar_metrics

        key = str(ck.step)
        entry = self.state.steps.setdefault(key, {"attempts": 0})
        step_dir = self.out / f"step_{ck.step}"
        entry.update(
            status="running",
            path=str(ck.path),
            output_dir=step_dir.name,
            attempts=int(entry.get("attempts", 0)) + 1,
            started=_now(),
        )
        self.state.save()
        again = f" (attempt {entry['attempts']} of {self.attempts})" if entry["attempts"] > 1 else ""
        self.say(f"step {ck.step}: evaluating {ck.path}{again}")
        logs_before = _log_marks(step_dir)
        evaluated_before = _has_samples(step_dir)  # an earlier attempt's samples, resumed by this one
        try:
            cfg = cli.parse_args([*self.eval_args, f"ckpt={ck.path}", f"output_dir={step_dir}"])
            document = cli.run(cfg, out=self.stdout)
            k = int(document["k"])
            scalars = scalar_metrics(document["benchmarks"], k)
            subset = subset_text(document.get("subset"), _titles(document["benchmarks"]))
            _write_metrics_csv(self.out / METRICS_FILE, ck.step, scalars, subset)
            if self.wandb is not None:
                self.wandb.log(ck.step, scalars)
        except _LoggerError:  # not the checkpoint's fault: stop the watcher, that attempt not counted
            entry.update(status="retry", attempts=entry["attempts"] - 1)
            self.state.save()
            raise
        except (KeyboardInterrupt, SystemExit):  # Lightning turns Ctrl-C into SystemExit(1)
            entry["attempts"] -= 1
            entry["status"] = "interrupted"
            self.state.save()
            raise KeyboardInterrupt from None
        except Exception as e:
            error = _one_line(e)
            if is_configuration_error(e, evaluated_before or _samples_added(step_dir, logs_before)):
                entry.update(
                    status="config_error", attempts=entry["attempts"] - 1, error=error, finished=_now()
                )
                self.state.save()
                self.say(
                    f"step {ck.step}: configuration error: {error}; not evaluated again with these eval "
                    "arguments (correct them and restart the watcher)"
                )
                self.report.config_errors[ck.step] = error
                _release_memory()
                return False
            given_up = entry["attempts"] >= self.attempts
            entry.update(status="failed" if given_up else "retry", error=error, finished=_now())
            self.state.save()
            if not isinstance(e, GgeError):
                traceback.print_exc(file=sys.stderr)
            then = "not retried (--retry-failed to try again)" if given_up else "tried again later"
            self.say(f"step {ck.step}: failed: {error}; {then}")
            self.report.failed.append(ck.step)
            _release_memory()
            return False
        mean = document["mean"]
        # the headlines; a one-answer run (k == 1) has Top-1 only, no Oracle@K
        keys = ["top1"] if k == 1 else ["top1", f"oracle@{k}"]
        entry.pop("error", None)
        entry.update(
            status="done",
            finished=_now(),
            k=k,
            subset=document.get("subset"),
            **{key: mean.get(key) for key in keys},
            benchmarks={
                name: {key: e.get(key) for key in keys} for name, e in document["benchmarks"].items()
            },
        )
        self.state.save()
        self.report.evaluated.append(ck.step)

        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.1f}"

        oracle = "" if k == 1 else f", Oracle@{k} {pct(mean.get(f'oracle@{k}'))}"
        self.say(
            f"step {ck.step}: Top-1 {pct(mean['top1'])}{oracle} "
            f"(mean of {len(mean['benchmarks'])} benchmarks{'; ' + subset if subset else ''}) -> {step_dir}"
        )
        _release_memory()
        return True


def watch(
    root: str | Path,
    eval_args: Sequence[str] = (),
    *,
    out: str | Path | None = None,
    poll_s: float = DEFAULT_POLL_S,
    settle_s: float = DEFAULT_SETTLE_S,
    once: bool = False,
    logger: str = "csv",
    wandb_project: str = "gge",
    attempts: int = DEFAULT_ATTEMPTS,
    retry_failed: bool = False,
    stdout: TextIO | None = None,
) -> WatchReport:
    """Evaluate every complete checkpoint under ``root`` once, in step order; keep watching unless ``once``.

    Args:
        root: The folder the trainer saves checkpoints into.
        eval_args: ``eval.py`` ``key=value`` arguments (all but ckpt, output_dir, logger,
            wandb_project, dry_run).
        out: The output folder (default ``root/gge_watch``): ``watch.json``, ``metrics.csv``,
            ``step_<N>/``.
        poll_s: Seconds between scans when nothing is left to evaluate.
        settle_s: Seconds without any change before a checkpoint counts as written.
        once: Evaluate what is complete now and return.
        logger: ``csv`` (``metrics.csv`` only) or ``wandb`` (also one W&B run).
        wandb_project: The W&B project.
        attempts: Evaluations tried per checkpoint before it is left as failed.
        retry_failed: Give the checkpoints left as failed new attempts.
        stdout: Where progress and eval's tables are printed (default ``sys.stdout``).

    Returns:
        What this call evaluated, what failed, what waits.

    Raises:
        GgeError: bad arguments, ``root`` missing, ``out`` used by another watcher or made with
            other eval arguments. Checkpoints that fail are recorded, not raised.
        KeyboardInterrupt: on Ctrl-C (the state is saved: a rerun continues).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> report = watch(root, ["benchmarks=[screenspot_v2]"], once=True, stdout=io.StringIO())
        >>> report.evaluated, json.loads((root / "gge_watch" / WATCH_FILE).read_text())["steps"]
        ([], {})
    """
    folder = Path(root).absolute()
    find_checkpoints(folder)  # root must be a folder
    if logger not in WATCH_LOGGERS:
        raise unknown_name("logger", logger, WATCH_LOGGERS)
    if logger == "wandb" and importlib.util.find_spec("wandb") is None:
        raise GgeError(
            "--logger wandb needs the wandb package, which is not installed: pip install 'gge[wandb]'"
        )
    if attempts < 1:
        raise GgeError(f"--attempts must be at least 1, got {attempts}")
    if poll_s <= 0 or settle_s < 0:
        raise GgeError(f"--poll must be > 0 and --settle >= 0, got {poll_s:g} and {settle_s:g}")
    _check_eval_args(eval_args)
    out_dir = check_output_dir(out if out is not None else folder / DEFAULT_OUT_NAME)
    stream = stdout or sys.stdout
    with ExitStack() as stack:
        stack.enter_context(_watch_lock(out_dir))
        watcher = _Watcher(
            folder,
            eval_args,
            out_dir,
            settle_s=settle_s,
            logger=logger,
            wandb_project=wandb_project,
            attempts=attempts,
            polling=not once,
            stdout=stream,
        )
        if watcher.wandb is not None:
            stack.callback(watcher.wandb.close)
        watcher.start(retry_failed)
        mode = "once" if once else f"every {poll_s:g}s until Ctrl-C"
        watcher.say(f"watching {folder} ({mode}); results in {out_dir}")
        tried: set[int] = set()  # failed in this burst: tried again after the next wait
        while True:
            ck = watcher.scan(tried)
            if ck is not None:
                if not watcher.evaluate(ck):
                    tried.add(ck.step)
                continue
            if once:
                break
            time.sleep(poll_s)
            tried.clear()
        for step, reason in sorted(watcher.report.pending.items()):
            watcher.say(f"step {step}: not complete yet, not evaluated: {reason}")
        return watcher.report


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


if __name__ == "__main__":
    sys.exit(watch_main(sys.argv[1:]))
