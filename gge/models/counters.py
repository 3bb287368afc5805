"""The counters of a run's client processes, kept by process, added to one's own (gge.run.client_procs).

Example:
    >>> parts = PartCounters()
    >>> parts.keep("proc0", {"calls": {"propose": 2}, "usage": {"prompt_tokens": 10}})
    >>> parts.keep("proc0", {"calls": {"propose": 3}, "usage": {"prompt_tokens": 12}})  # the latest wins
    >>> parts.summed({"calls": {"propose": 1, "rank": 0}, "usage": {}})
    {'calls': {'propose': 4, 'rank': 0}, 'usage': {'prompt_tokens': 12}}
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

Counters = dict[str, dict[str, int]]
"""Groups of counters by name (``calls``: model calls by stage, ``usage``: tokens...)."""


class PartCounters:
    """The latest counters of each client process, summed with the parent's own on demand."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: dict[str, Counters] = {}

    def keep(self, key: str, part: Mapping[str, Mapping[str, int]]) -> None:
        """Keep a process's counters (replacing its earlier ones).

        Args:
            key: The process (``proc0``...).
            part: Its counters by group.
        """
        with self._lock:
            self._parts[key] = {group: dict(values) for group, values in part.items()}

    def summed(self, own: Mapping[str, Mapping[str, int]]) -> Counters:
        """``own`` plus every kept process's, group by group and key by key (in the order first seen)."""
        with self._lock:
            parts = [own, *self._parts.values()]
        return {group: _summed([p.get(group, {}) for p in parts]) for group in own}


def _summed(parts: Sequence[Mapping[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for key, value in part.items():
            out[key] = out.get(key, 0) + int(value)
    return out
