"""Each invocation of a run into its output folder, so that a resumed run's record covers the whole run.

A run stopped (Ctrl-C, an error) and rerun into the same ``output_dir`` resumes from its prediction
logs; its backend's counters (requests, retries, overloads, tokens, images encoded) and its request
window, though, start again from zero in the new process. This module keeps, beside ``run.json``, the
file :data:`INVOCATIONS_FILE`: one entry per invocation (:class:`~gge.documents.cost.Invocation`: when it
started and ended, how it ended, the samples it answered, its counters and its window), so that
results.json records the counters summed over every invocation (:func:`with_summed`), the window over
the whole run (:func:`merged_window`) and each invocation with its own window (``invocations``).

The entry is written when the invocation starts, every :data:`UPDATE_EVERY_S` seconds while an endpoint
run goes on (:meth:`InvocationLedger.keep_updated`) and on every way it ends: finished, interrupted
(Ctrl-C) or stopped by an error. A process killed outright (SIGKILL, a power cut) cannot write its
end: its entry stays ``running`` with the counters of its last update (up to :data:`UPDATE_EVERY_S`
seconds of requests are lost from the sums), and the next invocation marks it ``killed`` and counts
the samples it answered from the logs. An invocation's ``samples`` are the samples it answered, a
sample whose request failed for good (a ``server_error`` record, which a resume asks again) left out,
however it ends: finished (its results), stopped or interrupted (the logs' answered samples less those
restored), killed (likewise, from the next invocation's restored count). A rerun with
``resume=false``, or of another run (``run.json`` records another fingerprint), starts the list over.

Example:
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> first = InvocationLedger.start(folder, restored=0, resume=True, now=lambda: "t0")
    >>> _ = first.end("interrupted", samples=3, counters={"backend.usage": {"requests": 4}})
    >>> second = InvocationLedger.start(folder, restored=3, resume=True, now=lambda: "t1")
    >>> done = second.end("finished", samples=2, counters={"backend.usage": {"requests": 2}})
    >>> [(i["end"], i["samples"]) for i in done], summed_counters(done)
    ([('interrupted', 3), ('finished', 2)], {'backend.usage': {'requests': 6}})
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from gge.documents.cost import Invocation, InvocationEnd, WindowSummary
from gge.documents.files import atomic_write
from gge.errors import GgeError
from gge.models.openai_reading import SEEN_AT_MOST
from gge.run.runstate import RUN_FILE

__all__ = [
    "COUNTER_GROUPS",
    "INVOCATIONS_FILE",
    "SEEN_WORDS",
    "UPDATE_EVERY_S",
    "InvocationLedger",
    "Snapshot",
    "counters_of",
    "merged_window",
    "summed_counters",
    "with_summed",
]

log = logging.getLogger(__name__)

INVOCATIONS_FILE = "invocations.json"
"""The output folder's record of the run's invocations (beside ``run.json``)."""

UPDATE_EVERY_S = 30.0
"""Seconds between updates of a running invocation's counters: what a killed process loses at most."""

COUNTER_GROUPS = (
    ("backend", "usage"),
    ("backend", "images"),
    ("backend", "answers"),
    ("critic_backend", "usage"),
    ("critic_backend", "images"),
    ("critic_backend", "answers"),
    ("calls",),
    ("usage",),
)
"""Where a model record (results.json ``model``: a policy's ``settings()``) holds counters of what the
process did: each a mapping of counts that start from zero in every invocation and are summed over them.
A number anywhere else in the record is a setting, never summed."""

SEEN_WORDS = {
    "model": (),
    "system_fingerprint": (),
    "n": ("ignored", "honoured"),
    "prefill": ("continued",),
}
"""The words an ``answers`` group (:data:`COUNTER_GROUPS`; :class:`gge.models.openai_reading.ReadingRecord`)
records of who answered and what the server showed it supports, with how they merge over invocations.
Each is counted as ``{"<group>.<field>": {word: 1}}`` (the invocations that saw the word, once summed).
A list (``model``, ``system_fingerprint``: no precedence) merges to the distinct words in the order
first seen, at most :data:`gge.models.openai_reading.SEEN_AT_MOST`; a single word takes the first of
its precedence seen in any invocation (``n``: ``ignored`` sticks once seen, as within one invocation;
``prefill``: ``continued``)."""

Snapshot = tuple[dict[str, dict[str, float]], WindowSummary | None]
"""A running invocation's counters (:func:`counters_of`) and its window summary (None: no window)."""


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def counters_of(model: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The counters of a model record (:data:`COUNTER_GROUPS`), by dotted group; their numbers only.

    Args:
        model: A policy's ``settings()`` (results.json ``model``).

    Returns:
        Each group the record has, as ``{"backend.usage": {"requests": 3, ...}, ...}``.

    Example:
        >>> counters_of({"backend": {"usage": {"requests": 3, "note": "x"}, "timeout_s": 60}, "calls": {}})
        {'backend.usage': {'requests': 3}, 'calls': {}}
    """
    out: dict[str, dict[str, float]] = {}
    for path in COUNTER_GROUPS:
        value: Any = model
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, Mapping):
            out[".".join(path)] = {str(k): v for k, v in value.items() if _number(v)}
            if path[-1] == "answers":
                out.update(_seen_words(".".join(path), value))
    return out


def _seen_words(group: str, answers: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The words of an ``answers`` group (:data:`SEEN_WORDS`), each counted once."""
    out: dict[str, dict[str, float]] = {}
    for field in SEEN_WORDS:
        value = answers.get(field)
        words = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        out[f"{group}.{field}"] = {w: 1 for w in words if isinstance(w, str)}
    return out


def _merged_words(field: str, seen: Mapping[str, float], own: Any) -> Any:
    """An ``answers`` field over every invocation from the words they saw (:data:`SEEN_WORDS`)."""
    if isinstance(own, list):
        return list(seen)[:SEEN_AT_MOST]
    return next((w for w in SEEN_WORDS[field] if w in seen), own)


def summed_counters(invocations: Sequence[Invocation]) -> dict[str, dict[str, float]]:
    """Every invocation's counters summed, group by group and key by key (floats rounded to 3 places).

    Example:
        >>> summed_counters([{"counters": {"u": {"a": 1, "s": 0.25}}}, {"counters": {"u": {"a": 2, "b": 1}}}])
        {'u': {'a': 3, 's': 0.25, 'b': 1}}
    """
    out: dict[str, dict[str, float]] = {}
    for inv in invocations:
        for group, counts in inv.get("counters", {}).items():
            total = out.setdefault(group, {})
            for key, value in counts.items():
                if _number(value):
                    total[key] = total.get(key, 0) + value
    return {g: {k: round(v, 3) if isinstance(v, float) else v for k, v in c.items()} for g, c in out.items()}


def with_summed(model: Mapping[str, Any], invocations: Sequence[Invocation]) -> dict[str, Any]:
    """A model record whose counters are the sums over ``invocations`` instead of the last one's.

    Only the counters' numbers are replaced, and the words of the ``answers`` groups merged by their
    rules (:data:`SEEN_WORDS`); every other field is the record's own.

    Args:
        model: The last invocation's model record.
        invocations: Every invocation of the run, the last included.

    Returns:
        A copy of ``model`` with each group of :data:`COUNTER_GROUPS` it has summed.

    Example:
        >>> invs = [{"counters": {"backend.usage": {"requests": n}}} for n in (2, 1)]
        >>> with_summed({"backend": {"usage": {"requests": 1}, "model": "m"}}, invs)
        {'backend': {'usage': {'requests': 3}, 'model': 'm'}}
    """
    out: dict[str, Any] = json.loads(json.dumps(model))
    for group, counts in summed_counters(invocations).items():
        *parents, last = group.split(".")
        holder: Any = out
        for key in parents:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and isinstance(holder.get(last), dict):
            holder[last] = {**holder[last], **counts}
        elif (
            isinstance(holder, dict) and parents[-1:] == ["answers"] and last in SEEN_WORDS and last in holder
        ):
            holder[last] = _merged_words(last, counts, holder[last])
    return out


def merged_window(windows: Sequence[WindowSummary]) -> WindowSummary | None:
    """What the request window did over the whole run, from each invocation's window.

    Each key of :class:`~gge.documents.cost.WindowSummary` by its rule: ``mode``, ``start`` and
    ``start_reason`` are the first's (how the run began); ``final`` the last's; ``max`` and
    ``peak_in_flight`` the largest; ``sent``, ``overloads``, ``decreases``, ``busy_seconds`` and
    ``ramp_stalls`` are summed (``ramp_stalls`` over the windows that record it: absent where none
    does); ``mean_in_flight`` is the mean over all the busy time (each invocation's mean weighted by its
    busy seconds). A key no rule names (one a later gge adds) keeps the last value recorded.

    Args:
        windows: The invocations' windows, oldest first.

    Returns:
        The run's window (None: no invocation had one).

    Example:
        >>> w = {"mode": "adaptive", "start": 8, "max": 64, "final": 8, "peak_in_flight": 8,
        ...      "mean_in_flight": 6.0, "sent": 30, "overloads": 2, "decreases": 0, "busy_seconds": 3.0,
        ...      "start_reason": "default", "ramp_stalls": 1}
        >>> m = merged_window([w, {**w, "peak_in_flight": 1, "mean_in_flight": 1.0, "busy_seconds": 1.0,
        ...                        "start": 1, "start_reason": "probe", "ramp_stalls": 2}])
        >>> m["mean_in_flight"], m["peak_in_flight"], m["sent"], m["busy_seconds"]
        (4.75, 8, 60, 4.0)
        >>> m["start"], m["start_reason"], m["ramp_stalls"]
        (8, 'default', 3)
    """
    if not windows:
        return None
    first, last = windows[0], windows[-1]
    busy = sum(w["busy_seconds"] for w in windows)
    weighted = sum(w["mean_in_flight"] * w["busy_seconds"] for w in windows)
    kept: dict[str, Any] = {}
    for w in windows:  # a key no rule below names: the last value recorded
        kept.update({k: v for k, v in w.items() if k not in _WINDOW_RULES})
    out: dict[str, Any] = {
        "mode": first["mode"],
        "start": first["start"],
        "max": max(w["max"] for w in windows),
        "final": last["final"],
        "peak_in_flight": max(w["peak_in_flight"] for w in windows),
        "mean_in_flight": round(weighted / busy, 3) if busy > 0 else 0.0,
        "sent": sum(w["sent"] for w in windows),
        "overloads": sum(w["overloads"] for w in windows),
        "decreases": sum(w["decreases"] for w in windows),
        "busy_seconds": round(busy, 3),
    }
    if "start_reason" in first:
        out["start_reason"] = first["start_reason"]
    stalls = [w["ramp_stalls"] for w in windows if "ramp_stalls" in w]
    if stalls:
        out["ramp_stalls"] = sum(stalls)
    return cast(WindowSummary, {**kept, **out})


_WINDOW_RULES = frozenset(
    (
        "mode",
        "start",
        "start_reason",
        "max",
        "final",
        "peak_in_flight",
        "mean_in_flight",
        "sent",
        "overloads",
        "decreases",
        "busy_seconds",
        "ramp_stalls",
    )
)
"""The window keys :func:`merged_window` merges by a rule of its own."""


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _run_key(folder: Path) -> str | None:
    """A digest of the fingerprint ``run.json`` records (None: no readable run.json)."""
    try:
        fingerprint = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]


class InvocationLedger:
    """The output folder's record of the run's invocations, and the current one's entry in it.

    Made by :meth:`start`; thread-safe (the periodic updates run on a thread of their own). Only the
    process that started the run (rank 0) keeps one.

    Attributes:
        path: The file (:data:`INVOCATIONS_FILE` in the output folder).
        index: The current invocation's place in the list.
    """

    def __init__(self, path: Path, run_key: str | None, index: int, now: Callable[[], str]) -> None:
        self.path, self.index = path, index
        self._key, self._now = run_key, now
        self._lock = threading.Lock()

    @classmethod
    def start(
        cls, folder: Path, *, restored: int, resume: bool, now: Callable[[], str] = _utc_now
    ) -> InvocationLedger:
        """Record a new invocation (``running``) after the earlier ones of the same run.

        An earlier entry still ``running`` was killed: it becomes ``killed``, with the samples it
        finished counted from ``restored`` (what the logs hold now less what they held when it started).

        Args:
            folder: The output folder (prepared: its ``run.json`` written).
            restored: Samples already finished in the folder's logs.
            resume: False: the run starts over (the earlier invocations are forgotten).
            now: The clock (UTC ISO 8601 text).

        Returns:
            The ledger of this invocation.

        Raises:
            GgeError: the file cannot be read or written (naming it).
        """
        path = folder / INVOCATIONS_FILE
        key = _run_key(folder)
        earlier: list[Invocation] = []
        if resume and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                same = isinstance(data, dict) and data.get("run") == key
                earlier = list(data["invocations"]) if same else []
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise GgeError(
                    f"{path}: unreadable record of the run's invocations ({e}); delete it (its earlier "
                    "invocations' counters are then left out of the sums) or rerun with resume=false"
                ) from None
        for inv in earlier:
            if inv.get("end") == "running":
                inv["end"] = "killed"
                if inv is earlier[-1]:
                    inv["samples"] = max(int(inv.get("samples", 0)), restored - int(inv.get("restored", 0)))
        current: Invocation = {
            "started": now(),
            "ended": None,
            "end": "running",
            "restored": restored,
            "samples": 0,
            "counters": {},
        }
        ledger = cls(path, key, len(earlier), now)
        try:
            ledger._write([*earlier, current])
        except OSError as e:
            raise GgeError(f"{path}: cannot write the record of the run's invocations ({e})") from None
        return ledger

    def invocations(self) -> list[Invocation]:
        """Every invocation recorded in the file, oldest first (the current one last)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return cast(list[Invocation], list(data["invocations"]))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise GgeError(f"{self.path}: unreadable record of the run's invocations ({e})") from None

    def _write(self, invocations: Sequence[Invocation]) -> None:
        doc = {"run": self._key, "invocations": list(invocations)}
        atomic_write(self.path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")

    def _set(self, fields: Mapping[str, Any], *, end: bool) -> list[Invocation]:
        """Update the current entry while it is ``running`` (an ended one is kept as it is)."""
        with self._lock:
            invocations = self.invocations()
            if self.index >= len(invocations):
                raise GgeError(f"{self.path}: the current invocation ({self.index + 1}) is not recorded")
            entry = invocations[self.index]
            if entry["end"] == "running":
                entry.update(cast(Invocation, fields))
                if end:
                    entry["ended"] = self._now()
                self._write(invocations)
            return invocations

    def update(
        self, counters: Mapping[str, Mapping[str, float]], window: WindowSummary | None = None
    ) -> None:
        """Record the running invocation's counters and window so far (a kill keeps them).

        Args:
            counters: Its counters (:func:`counters_of` of its model record).
            window: Its request window's summary (None: none).
        """
        fields: dict[str, Any] = {"counters": {g: dict(c) for g, c in counters.items()}}
        if window is not None:
            fields["window"] = dict(window)
        self._set(fields, end=False)

    def end(
        self,
        end: InvocationEnd,
        *,
        samples: int,
        counters: Mapping[str, Mapping[str, float]],
        window: WindowSummary | None = None,
        why: str | None = None,
    ) -> list[Invocation]:
        """Record how the current invocation ended (once: a later call changes nothing).

        Args:
            end: ``finished``, ``interrupted`` or ``stopped``.
            samples: Samples it answered, server errors left out (as a resume counts them).
            counters: Its counters (:func:`counters_of`).
            window: Its request window's summary (None: none).
            why: What stopped it (``stopped``).

        Returns:
            Every invocation of the run, this one last.
        """
        fields: dict[str, Any] = {
            "end": end,
            "samples": samples,
            "counters": {g: dict(c) for g, c in counters.items()},
        }
        if window is not None:
            fields["window"] = dict(window)
        if why is not None:
            fields["why"] = why
        return self._set(fields, end=True)

    @contextmanager
    def keep_updated(
        self, snapshot: Callable[[], Snapshot], every_s: float = UPDATE_EVERY_S
    ) -> Iterator[None]:
        """Update the running invocation from ``snapshot()`` every ``every_s`` seconds, on a thread.

        A snapshot or a write that fails is logged and skipped: the run goes on.

        Args:
            snapshot: The counters and window so far.
            every_s: Seconds between updates.
        """
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(every_s):
                try:
                    self.update(*snapshot())
                except Exception as e:  # a record that fails must not stop the run it records
                    log.warning("%s: invocation not updated: %s", self.path, e)

        thread = threading.Thread(target=loop, name="gge-invocation", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
