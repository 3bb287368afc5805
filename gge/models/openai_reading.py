r"""Reading chat-completion answers as real engines write them, and recording what a server supports.

Used by :mod:`gge.models.openai_api`. Real servers differ from the OpenAI API in ways that change
what an evaluator reads:

- A server that parses tool calls (``transformers serve`` for every Qwen model, vLLM started with a
  tool-call parser) returns a Qwen ``<tool_call>...</tool_call>`` answer as ``message.tool_calls``
  with empty ``content``, even when the request has no ``tools``. gge's parsers read the model's
  text, so :func:`message_text` writes each call back as the model writes it.
- A server may ignore ``n`` (one choice whatever is asked), ``logprobs``, or refuse an assistant
  prefill (``transformers serve`` answers HTTP 422 to ``continue_final_message``).
  :class:`ReadingRecord` keeps what the answers showed, for the backend's settings.
- What a request cost is read from its answers' ``usage`` (:func:`request_cost`).

Example:
    >>> call = {"function": {"name": "click", "arguments": '{"coordinate": [5, 6]}'}}
    >>> message_text({"content": "", "tool_calls": [call]})
    ('<tool_call>\n{"name": "click", "arguments": {"coordinate": [5, 6]}}\n</tool_call>', True)
"""

from __future__ import annotations

import contextlib
import json
import threading
from typing import Any, TypedDict

from gge.types import CostRecord

SEEN_AT_MOST = 4
"""How many distinct ``model`` and ``system_fingerprint`` values of the answers are recorded."""


class EndpointStatus(TypedDict):
    """An endpoint backend's state now, for a progress line (``OpenAIBackend.status``).

    Attributes:
        in_flight: Requests in flight now.
        limit: The request window's limit now.
        requests: Requests answered so far.
        retries: Tries sent again so far (after a failure, or uncounted after a busy answer).
        overloads: Tries answered HTTP 429, 503 or 504, or timed out.
        failed: Requests that failed for good (:class:`~gge.errors.RequestFailed`).
        unreachable_since: When the server went away (epoch seconds), None while it answers.
        server_wait_s: How long a server that went away is waited for (``model.server_wait_s``).
    """

    in_flight: int
    limit: int
    requests: int
    retries: int
    overloads: int
    failed: int
    unreachable_since: float | None
    server_wait_s: float


class MalformedAnswer(ValueError):
    """An answer that is not what the chat-completions API says (the message says what is wrong)."""


def tool_call_text(call: Any) -> str:
    r"""One OpenAI tool call as the Qwen text it was parsed from.

    ``arguments`` (a JSON string in the API) is decoded and written as JSON again (a string that is
    not JSON is written as that string).

    Args:
        call: One entry of ``message.tool_calls``.

    Returns:
        ``<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>``.

    Raises:
        MalformedAnswer: The call has no function name.
    """
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise MalformedAnswer("tool_calls has no function name")
    arguments: Any = function.get("arguments") if isinstance(function, dict) else None
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # not JSON: written back as the string it is
            arguments = json.loads(arguments)
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def message_text(message: Any) -> tuple[str, bool]:
    """The text of an answer's ``message``: its content, then its tool calls written back.

    Args:
        message: A choice's ``message``.

    Returns:
        The text (``content``, then each tool call, one newline apart; None content reads as "")
        and whether tool calls were written back into it.

    Raises:
        MalformedAnswer: No ``content`` nor ``tool_calls``, a content that is not a string, or
            tool calls that are not a list of named calls (the message, put after ``choices[i]``,
            names the field).
    """
    if not isinstance(message, dict) or ("content" not in message and "tool_calls" not in message):
        raise MalformedAnswer(" has no 'message.content'")
    content = message.get("content")
    if content is None:  # a refusal or a tool call: no text
        content = ""
    if not isinstance(content, str):
        raise MalformedAnswer(".message.content is not a string")
    calls = message.get("tool_calls")
    if calls is None or calls == []:
        return content, False
    if not isinstance(calls, list):
        raise MalformedAnswer(".message.tool_calls is not a list")
    try:
        written = [tool_call_text(call) for call in calls]
    except MalformedAnswer as error:
        raise MalformedAnswer(f".message.{error}") from None
    return "\n".join(([content] if content else []) + written), True


class ReadingRecord:
    """What a server's answers showed about what it supports (thread-safe).

    Attributes (see :meth:`as_dict`): ``n``, ``n_reasks``, ``prefill``, ``tool_call_answers``,
    ``model``, ``system_fingerprint``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n: str | None = None
        self._n_reasks = 0
        self._prefill: str | None = None
        self._tool_calls = 0
        self._models: list[str] = []
        self._fingerprints: list[str] = []

    def answered(self, data: dict[str, Any]) -> None:
        """One answer: who answered it (its ``model`` and ``system_fingerprint``, where given)."""
        for key, seen in (("model", self._models), ("system_fingerprint", self._fingerprints)):
            value = data.get(key)
            if isinstance(value, str) and value and value not in seen and len(seen) < SEEN_AT_MOST:
                with self._lock:
                    if value not in seen and len(seen) < SEEN_AT_MOST:
                        seen.append(value)

    def choices(self, want: int, got: int, *, again: bool) -> None:
        """One answer of ``got`` choices to a request for ``want`` (``again``: asked for missing ones)."""
        with self._lock:
            self._n_reasks += again
            if want > 1 and got < want:
                self._n = "ignored"  # sticks once seen
            elif want > 1 and self._n is None:
                self._n = "honoured"

    def tool_call_answer(self) -> None:
        """One answer came back as ``tool_calls`` and was written back as text."""
        with self._lock:
            self._tool_calls += 1

    def prefill_continued(self) -> None:
        """A request with an assistant prefill was answered."""
        with self._lock:
            self._prefill = "continued"

    def as_dict(self) -> dict[str, Any]:
        """The record.

        Returns:
            ``n``: ``"honoured"`` (every answer had the choices asked for), ``"ignored"`` (some had
            fewer, and gge asked again for the rest) or None (no request asked for more than one);
            ``n_reasks``: the requests sent for missing choices; ``prefill``: ``"continued"`` (the
            server took an assistant prefill) or None (none sent; a server that refuses one stops
            the run); ``tool_call_answers``: answers read from ``tool_calls``; ``model``: the
            distinct ``model`` fields of the answers (who the server says answered), in the order
            first seen, at most :data:`SEEN_AT_MOST`; ``system_fingerprint``: the distinct
            ``system_fingerprint`` values of the answers, likewise (empty lists where none was given).
        """
        with self._lock:
            return {
                "n": self._n,
                "n_reasks": self._n_reasks,
                "prefill": self._prefill,
                "tool_call_answers": self._tool_calls,
                "model": list(self._models),
                "system_fingerprint": list(self._fingerprints),
            }


def with_prefill(text: str, prefill: str | None) -> str:
    """The prefill (the text an answer continues), then the answer's text.

    A tool call written back from ``tool_calls`` that already starts with the prefill (a server that
    parsed prefill and answer together) is not prefixed again.

    Example:
        >>> with_prefill("5, 6)", "(")
        '(5, 6)'
    """
    if not prefill or (text.startswith(prefill) and text.startswith("<tool_call>")):
        return text
    return prefill + text


def prefill_refusal(prefill: str, refused: str) -> str:
    """The one-line error for a server that refused an assistant prefill but answers without it.

    Args:
        prefill: The prefill sent.
        refused: The server's refusal (``HTTP 422: ...``).

    Returns:
        The message, naming ``model.prompts.prefill`` and what to do.
    """
    return (
        f"the server refused the assistant prefill (model.prompts.prefill={prefill!r:.60}, sent as an "
        f"assistant message with continue_final_message) but answers without it: {refused}; serve the "
        "model with an engine that continues a final assistant message (vLLM, SGLang) or set "
        "model.prompts.prefill=null (the answers are then not the preset's protocol)"
    )


def top_logprobs(choice: dict[str, Any]) -> list[tuple[str, float]] | None:
    """The first token's top log-probabilities as (token, logprob), or None if there are none."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = content[0]
        entries = first.get("top_logprobs")
        if not isinstance(entries, list) or not entries:  # only the sampled token
            entries = [first]
        out = [
            (e["token"], float(e["logprob"]))
            for e in entries
            if isinstance(e, dict)
            and isinstance(e.get("token"), str)
            and isinstance(e.get("logprob"), int | float)
        ]
        return out or None
    legacy = logprobs.get("top_logprobs")  # completions style: [{token: logprob, ...}, ...]
    if isinstance(legacy, list) and legacy and isinstance(legacy[0], dict):
        return [(t, float(v)) for t, v in legacy[0].items() if isinstance(v, int | float)] or None
    return None


WINDOW_KEY = "_gge_window"
"""Where the backend notes, in an answer, the request window its request was sent under."""


def usage_of(data: dict[str, Any]) -> dict[str, int]:
    """``usage.prompt_tokens`` and ``usage.completion_tokens`` of an answer, where it reports them."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return {}
    return {k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens") if isinstance(usage.get(k), int)}


def cached_of(data: dict[str, Any]) -> int | None:
    """``usage.prompt_tokens_details.cached_tokens`` of an answer, or None where not reported."""
    usage = data.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return cached if isinstance(cached, int) and not isinstance(cached, bool) else None


def request_cost(stage: str, answers: list[dict[str, Any]], seconds: float) -> CostRecord:
    """The cost of one request from its answers' ``usage`` (summed), that took ``seconds``.

    Its ``window`` is the request window the answers' tries went out under (noted in each answer at
    :data:`WINDOW_KEY`), the largest where there were several.

    One answer of c choices computed its prompt once for c answers: as on the transformers
    one-prefill path, its prompt counts c times in ``input_tokens``, and the c - 1 copies the
    choices shared count as cached, on top of what the server says its cache served (so the
    tokens computed, ``total_tokens``, are the server's own).
    """
    usages = [usage_of(a) for a in answers]
    cached = [cached_of(a) for a in answers]
    choices = [max(1, len(a.get("choices") or [])) for a in answers]

    def total(key: str, times: list[int] | None = None) -> int | None:
        values = [u.get(key) for u in usages]
        if None in values:
            return None
        weights = times or [1] * len(values)
        return sum(int(v or 0) * w for v, w in zip(values, weights, strict=True))

    shared = [(c - 1) * int(u.get("prompt_tokens") or 0) for u, c in zip(usages, choices, strict=True)]
    reported = None if None in cached else sum(c for c in cached if c is not None)
    more = sum(shared)
    windows = [a[WINDOW_KEY] for a in answers if isinstance(a.get(WINDOW_KEY), int)]
    return CostRecord(
        stage,
        input_tokens=total("prompt_tokens", choices),
        output_tokens=total("completion_tokens"),
        cached_tokens=(None if more == 0 else more) if reported is None else reported + more,
        seconds=seconds,
        window=max(windows) if windows else None,
    )
