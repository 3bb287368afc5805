"""The watcher: :func:`watch` scans the folder and evaluates each complete checkpoint through eval.

Each step's result is recorded in ``watch.json`` and logged (:mod:`.metrics_log`).
"""

from __future__ import annotations

import gc
import importlib.util
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast

from gge.documents.results import BenchmarkEntry, MeanStats, ResultsDocument, check_version, oracle_at
from gge.errors import GgeError, unknown_name
from gge.integrations.watch.metrics_log import (
    METRICS_FILE,
    _LoggerError,
    _WandbRun,
    _write_metrics_csv,
)
from gge.integrations.watch.scan import (
    DEFAULT_SETTLE_S,
    Checkpoint,
    find_checkpoints,
    pending_reason,
)
from gge.integrations.watch.state import (
    _has_samples,
    _log_marks,
    _now,
    _samples_added,
    _State,
    is_configuration_error,
)
from gge.run.runstate import LOCK_FILE, check_output_dir, output_dir_lock

DEFAULT_OUT_NAME = "gge_watch"
"""The output folder's name under the watched folder when ``--out`` is not given."""

DEFAULT_POLL_S = 60.0
DEFAULT_ATTEMPTS = 3
WATCH_LOGGERS = ("csv", "wandb")
_SET_BY_WATCH = ("ckpt", "output_dir", "logger", "wandb_project", "dry_run")


@dataclass
class WatchReport:
    """What one :func:`watch` call did.

    Attributes:
        evaluated: Steps evaluated by this call, in the order evaluated.
        failed: Steps whose evaluation failed in this call (recorded in ``watch.json``).
        config_errors: Steps that met a configuration error in this call, with the error (recorded
            as ``config_error``; see :func:`gge.integrations.watch.state.is_configuration_error`).
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
    from gge.run.settings import parse_args

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


def _results(document: Mapping[str, Any], step_dir: Path) -> ResultsDocument:
    """The document eval returned, read from ``step_dir/results.json``: refused unless of this schema."""
    check_version(document, step_dir / "results.json")
    return cast(ResultsDocument, document)


def _headlines(figures: BenchmarkEntry | MeanStats, k: int) -> dict[str, float | None]:
    """``top1`` and ``oracle@K`` of an entry or the mean (Top-1 only for a one-answer run, k == 1)."""
    heads = {"top1": figures["top1"]}
    if k != 1:
        heads[f"oracle@{k}"] = oracle_at(figures, k)
    return heads


def _titles(benchmarks: Mapping[str, Any]) -> dict[str, str]:
    """Each benchmark's title (its name when this gge does not know it), for the subset line."""
    from gge.benchmarks import REGISTRY

    return {name: REGISTRY[name].title if name in REGISTRY else name for name in benchmarks}


def no_checkpoints(root: Path, out: Path) -> str:
    """What a scan that found no checkpoint says: the folder, the names looked for, and a nested run.

    A folder one level down that holds checkpoints (the run's folder inside the one named) is
    named, since watching it is likely what was meant.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "run1" / "checkpoint-5").mkdir(parents=True)
        >>> said = no_checkpoints(root, root / "gge_watch").replace(str(root), "DIR")
        >>> print(said)  # doctest: +NORMALIZE_WHITESPACE
        no checkpoints in DIR (no checkpoint-<N>/ or global_step_<N>/ folder directly in it;
            DIR/run1 holds some: watch that folder)
    """
    said = f"no checkpoints in {root} (no checkpoint-<N>/ or global_step_<N>/ folder directly in it"
    try:
        below = sorted(
            child for child in root.iterdir() if child.is_dir() and child != out and find_checkpoints(child)
        )
    except (OSError, GgeError):
        below = []
    if below:
        which = ", ".join(str(p) for p in below[:3]) + (", ..." if len(below) > 3 else "")
        said += f"; {which} holds some: watch that folder" if len(below) == 1 else f"; {which} hold some"
    return said + ")"


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
        self._said_none = False  # "no checkpoints" said: once a watch

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
        if not seen and not self._said_none:
            self._said_none = True
            then = "waiting for the trainer's first save" if self.polling else "nothing to evaluate"
            self.say(f"{no_checkpoints(self.root, self.out)}: {then}")
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
        from gge.report.markdown import subset_text
        from gge.run import settings, standalone
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
            cfg = settings.parse_args([*self.eval_args, f"ckpt={ck.path}", f"output_dir={step_dir}"])
            document = _results(standalone.run(cfg, out=self.stdout), step_dir)
            k = document["k"]
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
        entry.pop("error", None)
        entry.update(
            status="done",
            finished=_now(),
            k=k,
            subset=document.get("subset"),
            **_headlines(mean, k),
            benchmarks={name: _headlines(e, k) for name, e in document["benchmarks"].items()},
        )
        self.state.save()
        self.report.evaluated.append(ck.step)

        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.1f}"

        oracle = "" if k == 1 else f", Oracle@{k} {pct(oracle_at(mean, k))}"
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
        >>> import io
        >>> import json
        >>> import tempfile
        >>> from gge.integrations.watch.state import WATCH_FILE
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
