"""The one exception type gge raises for bad input, with a message that names what is wrong."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GgeError(Exception):
    """Bad input or configuration: the message names the file, line, record or key at fault."""


class TransientError(GgeError):
    """A bad state of the world, not of the arguments: a retry may succeed.

    A server down or restarting, a file system that failed a read, a folder locked by another run.
    It is a :class:`GgeError` (one line, no traceback); ``gge watch`` spends an attempt on it and
    tries the step again instead of recording a configuration error.
    """


class RequestFailed(TransientError):
    """One request of one sample failed for good: its retries ran out, or the server refused or garbled it.

    An HTTP 429/5xx, a timeout or a body that is not a JSON answer, still failing after the backend's
    retries; an HTTP 4xx refusal of that request alone (400, 413, 422). A windowed run scores the
    sample as a ``server_error`` miss and goes on (unless ``strict_server=true``); a rerun into the
    folder asks it again. A failure that every request would meet (a wrong URL or model name, a key
    refused, a prefill the server does not take) is a plain :class:`GgeError` and stops the run.
    """


class ServerGone(TransientError):
    """The server stayed unreachable past ``model.server_wait_s``: the run stops, keeping what finished."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``" (did you mean 'x'?)"`` suffix for an unknown name, or ``""`` when nothing is close.

    Example:
        >>> did_you_mean("screenspot_pr", ["screenspot_pro", "osworld_g"])
        " (did you mean 'screenspot_pro'?)"
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_name(kind: str, word: str, choices: Iterable[str]) -> GgeError:
    """A GgeError for an unknown name of some kind, listing the known ones.

    Example:
        >>> str(unknown_name("selection strategy", "firts", ["first", "mean"]))
        "unknown selection strategy 'firts' (did you mean 'first'?); known: first, mean"
    """
    known = sorted(choices)
    return GgeError(f"unknown {kind} '{word}'{did_you_mean(word, known)}; known: {', '.join(known)}")
