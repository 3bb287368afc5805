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
from collections.abc import Mapping, Sequence, Set
from typing import Any

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
        return {group: summed([p.get(group, {}) for p in parts]) for group in own}


def summed(parts: Sequence[Mapping[str, Any]], largest: Set[str] = frozenset()) -> dict[str, Any]:
    """Numbers summed key by key (the ``largest`` keys: their largest), anything else the first seen.

    Floats are rounded to 3 decimals (seconds to the millisecond). The counters of client processes
    (:class:`PartCounters`) and their backends' usage and images (:mod:`gge.models.openai_parts`).

    Example:
        >>> parts = [{"requests": 2, "outages": 1, "deflate": "zlib"}, {"requests": 3, "outages": 2}]
        >>> summed(parts, {"outages"})
        {'requests': 5, 'outages': 2, 'deflate': 'zlib'}
    """
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key not in out or not isinstance(value, int | float) or isinstance(value, bool):
                out.setdefault(key, value)
            else:
                out[key] = max(out[key], value) if key in largest else out[key] + value
    for key, value in out.items():
        if isinstance(value, float):
            out[key] = round(value, 3)
    return out
