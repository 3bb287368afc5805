"""An endpoint run over several client processes: what each process's backend did, added up.

With ``client_procs=N`` (:mod:`gge.run.client_procs`) the run's samples are asked from N processes,
each with its own :class:`~gge.models.openai_api.OpenAIBackend` and a share of the request window.
Each sends its backend's :meth:`~gge.models.openai_api.OpenAIBackend.snapshot` to the parent, whose
own backend (the one that probed the server) keeps the latest of each
(:meth:`~gge.models.openai_api.OpenAIBackend.absorb`) and reports the run as a whole: its
``settings()``, ``status()`` and ``window_summary()`` fold the parts in by the rules here.

- **usage** (``model.backend.usage``): tokens, requests, retries, overloads and failed requests are
  summed; ``outages`` and ``unreachable_s`` are the parent's (during the probe) plus the largest of
  the processes' (the processes wait for the same server: one restart is one outage, not N).
- **images**: every count and ``encode_seconds`` (CPU seconds) summed.
- **logprobs**: ``unavailable`` if any process's judge answers lacked them, else ``available`` if any.
- **answers**: ``n`` is ``ignored`` if any process saw it ignored, else ``honoured`` if any saw it
  honoured; ``prefill`` ``continued`` if any; counts summed; ``model`` and ``system_fingerprint`` the
  distinct values in the order first seen.
- **window** (results.json ``cost.window``): the processes' windows run side by side after the
  parent's (whose only requests are the probe's). ``mode``, ``start``, ``start_reason`` and ``max``
  are the parent's (the window the run was given and where the probe started it); ``final`` is the
  sum of the processes' limits; ``sent``, ``overloads``, ``decreases`` and ``ramp_stalls`` are summed;
  ``busy_seconds`` is the parent's plus the longest process's (they were busy at the same time);
  ``mean_in_flight`` is every request's time in flight over that; ``peak_in_flight`` the sum of the
  processes' peaks (an upper bound: the peaks need not have been at the same moment), or the parent's
  where larger; ``processes`` says how many there were.
- **status** (the progress line): requests in flight, the window's limit and the counters summed over
  the processes; the server unreachable since the earliest process saw it go.

Example:
    >>> a = {"prompt_tokens": 10, "requests": 2, "outages": 1, "unreachable_s": 4.0}
    >>> merged_usage({"prompt_tokens": 0, "requests": 0}, [a, {**a, "requests": 3, "unreachable_s": 5.0}])
    {'prompt_tokens': 20, 'requests': 5, 'outages': 1, 'unreachable_s': 5.0}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast

from gge.documents.cost import WindowSummary
from gge.models.counters import summed

_LARGEST = frozenset(("outages", "unreachable_s"))
"""Usage keys every process counts for the same server: the largest, not the sum."""


class Snapshot(TypedDict):
    """What one process's backend did so far (:meth:`gge.models.openai_api.OpenAIBackend.snapshot`).

    Attributes:
        usage: ``settings()["usage"]``.
        images: ``settings()["images"]``.
        answers: ``settings()["answers"]``.
        window: ``window_summary()``.
        status: ``status()``.
        logprobs: ``settings()["logprobs"]``: whether a pointwise judge's answers carried logprobs.
    """

    usage: dict[str, Any]
    images: dict[str, Any]
    answers: dict[str, Any]
    window: WindowSummary
    status: dict[str, Any]
    logprobs: str | None


def merged_usage(own: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The parent's usage and its processes', summed.

    ``outages`` and ``unreachable_s``: the parent's (the probe's, before any process) plus the
    largest process's.

    Example:
        >>> own = {"requests": 5, "outages": 1, "unreachable_s": 2.0}
        >>> parts = [{"requests": 3, "outages": 1, "unreachable_s": 4.0}, {"requests": 4, "outages": 1}]
        >>> merged_usage(own, parts)
        {'requests': 12, 'outages': 2, 'unreachable_s': 6.0}
    """
    return summed([own, summed(parts, _LARGEST)])


def merged_images(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Image counts of several processes: every number summed (``encode_seconds`` rounded to ms).

    Example:
        >>> merged_images([{"encoded": 2, "encode_seconds": 0.5, "deflate": "zlib-ng 2.2.4"},
        ...                {"encoded": 3, "encode_seconds": 0.25, "deflate": "zlib-ng 2.2.4"}])
        {'encoded': 5, 'encode_seconds': 0.75, 'deflate': 'zlib-ng 2.2.4'}
    """
    return summed(parts)


def merged_answers(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What several processes' answers showed (:class:`~gge.models.openai_reading.ReadingRecord`).

    Example:
        >>> a = {"n": "honoured", "n_reasks": 0, "prefill": None, "tool_call_answers": 1,
        ...      "model": ["m"], "system_fingerprint": []}
        >>> m = merged_answers([a, {**a, "n": "ignored", "n_reasks": 2, "model": ["m", "m2"]}])
        >>> m["n"], m["n_reasks"], m["tool_call_answers"], m["model"]
        ('ignored', 2, 2, ['m', 'm2'])
    """
    ns = [p.get("n") for p in parts]
    out: dict[str, Any] = {
        "n": "ignored" if "ignored" in ns else ("honoured" if "honoured" in ns else None),
        "n_reasks": sum(int(p.get("n_reasks", 0)) for p in parts),
        "prefill": "continued" if any(p.get("prefill") == "continued" for p in parts) else None,
        "tool_call_answers": sum(int(p.get("tool_call_answers", 0)) for p in parts),
    }
    for key in ("model", "system_fingerprint"):
        seen: list[str] = []
        for part in parts:
            seen += [v for v in part.get(key, []) if v not in seen]
        out[key] = seen
    return out


def merged_logprobs(parts: Sequence[str | None]) -> str | None:
    """Whether the judges' answers carried logprobs: ``unavailable`` if any process saw none.

    Else ``available`` if any did, else None (no judge asked).

    Example:
        >>> merged_logprobs([None, "available", "unavailable"]), merged_logprobs([None, "available"])
        ('unavailable', 'available')
    """
    return "unavailable" if "unavailable" in parts else ("available" if "available" in parts else None)


def merged_window(own: WindowSummary, parts: Sequence[WindowSummary]) -> WindowSummary:
    """The run's window: the parent's (the probe's requests), then the processes' side by side.

    Example:
        >>> w = {"mode": "adaptive", "start": 64, "start_reason": "default", "max": 256, "final": 64,
        ...      "peak_in_flight": 4, "mean_in_flight": 2.0, "sent": 5, "overloads": 0, "decreases": 0,
        ...      "busy_seconds": 1.0, "ramp_stalls": 0}
        >>> p = {**w, "start": 32, "max": 128, "final": 40, "peak_in_flight": 30, "mean_in_flight": 20.0,
        ...      "sent": 100, "busy_seconds": 10.0}
        >>> m = merged_window(w, [p, {**p, "busy_seconds": 8.0, "mean_in_flight": 10.0}])
        >>> m["start"], m["max"], m["final"], m["peak_in_flight"], m["sent"], m["busy_seconds"]
        (64, 256, 80, 60, 205, 11.0)
        >>> m["mean_in_flight"], m["processes"]  # (2*1 + 20*10 + 10*8) / (1 + 10)
        (25.636, 2)
    """
    if not parts:
        return own
    busy = own["busy_seconds"] + max(p["busy_seconds"] for p in parts)
    area = own["mean_in_flight"] * own["busy_seconds"] + sum(
        p["mean_in_flight"] * p["busy_seconds"] for p in parts
    )
    out: dict[str, Any] = dict(own)
    out.update(
        final=sum(p["final"] for p in parts),
        peak_in_flight=max(own["peak_in_flight"], sum(p["peak_in_flight"] for p in parts)),
        mean_in_flight=round(area / busy, 3) if busy > 0 else 0.0,
        sent=own["sent"] + sum(p["sent"] for p in parts),
        overloads=own["overloads"] + sum(p["overloads"] for p in parts),
        decreases=own["decreases"] + sum(p["decreases"] for p in parts),
        busy_seconds=round(busy, 3),
        processes=len(parts),
    )
    if "ramp_stalls" in own:
        out["ramp_stalls"] = own["ramp_stalls"] + sum(p.get("ramp_stalls", 0) for p in parts)
    return cast(WindowSummary, out)


def merged_status(own: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The progress line's counters: the processes' in flight and limits, everyone's counts summed.

    Example:
        >>> own = {"in_flight": 0, "limit": 64, "requests": 5, "retries": 0, "overloads": 0, "failed": 0,
        ...        "unreachable_since": None, "server_wait_s": 600.0}
        >>> s = merged_status(own, [{**own, "in_flight": 30, "limit": 32, "requests": 100,
        ...                          "unreachable_since": 7.0}, {**own, "limit": 32, "requests": 90}])
        >>> s["in_flight"], s["limit"], s["requests"], s["unreachable_since"]
        (30, 64, 195, 7.0)
    """
    if not parts:
        return dict(own)
    out = dict(own)
    out["in_flight"] = sum(int(p["in_flight"]) for p in parts)
    out["limit"] = sum(int(p["limit"]) for p in parts)
    for key in ("requests", "retries", "overloads", "failed"):
        out[key] = int(own[key]) + sum(int(p[key]) for p in parts)
    since = [
        s
        for s in [own.get("unreachable_since"), *(p.get("unreachable_since") for p in parts)]
        if s is not None
    ]
    out["unreachable_since"] = min(since) if since else None
    return out
