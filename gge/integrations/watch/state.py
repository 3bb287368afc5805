"""The watcher's state: ``watch.json``, and what a step's output folder says about its evaluation.

:class:`_State` loads and saves ``watch.json``; :func:`evaluated_steps` and
:func:`is_configuration_error` decide what may be redone and what is retried.
"""

from __future__ import annotations

import json
import secrets
import string
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.documents.files import atomic_write
from gge.errors import GgeError, TransientError
from gge.run.predlog import existing_logs

WATCH_FILE = "watch.json"
"""The watcher's state file in the output folder."""

_TRANSIENT_CAUSES = (OSError, MemoryError, RuntimeError, TimeoutError, ConnectionError)
"""Causes that make a wrapped GgeError an environment failure, which can pass, not a configuration error.

A ``FileNotFoundError`` is not one: a missing file is a wrong path in the arguments."""


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
