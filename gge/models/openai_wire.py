"""The request body of the OpenAI-compatible backend: gge's chat messages as ``/chat/completions`` JSON.

Pure functions: a :class:`~gge.models.base.GenerationRequest` becomes the body a server is asked
(the model name, the messages with each ``{"type": "image"}`` part as one data URL, the decoding
settings, the assistant prefill continued where one is set, then the caller's overrides and the
user's ``extra_body``, which win). The image's data URL is made by the caller's function, once, and
only when a message shows the image.

Example:
    >>> from PIL import Image
    >>> from gge.models.base import GenerationRequest
    >>> request = GenerationRequest(
    ...     Image.new("RGB", (4, 4)),
    ...     [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "click OK"}]}],
    ...     max_new_tokens=8,
    ... )
    >>> body = chat_body(request, "qwen", lambda: "data:image/png;base64,AA==", {"top_k": 1}, n=1)
    >>> body["messages"][0]["content"][0], body["max_tokens"], body["top_k"]
    ({'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,AA=='}}, 8, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gge.errors import GgeError
from gge.models.base import GenerationRequest


def chat_body(
    request: GenerationRequest,
    model: str,
    image_url: Callable[[], str],
    extra_body: Mapping[str, Any],
    **overrides: Any,
) -> dict[str, Any]:
    """The ``/chat/completions`` body of one request.

    Greedy decoding (``do_sample`` False) is sent as temperature 0 and top-p 1. A prefill is sent as
    a last assistant message to continue (``continue_final_message``, as vLLM and SGLang read it).

    Args:
        request: The prompt, its image and how to decode.
        model: The served model name.
        image_url: Makes the data URL of the request's image (called at most once).
        extra_body: The user's fields, merged last: they override every field gge sets.
        **overrides: Fields that replace gge's own (``n``, ``max_tokens``, ``logprobs``...).

    Returns:
        The body, ready for :func:`gge.models.openai_http.request_body`.

    Raises:
        GgeError: A message's content is neither a string nor a list of image and text parts.
    """
    greedy = not request.do_sample
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request.messages, image_url),
        "max_tokens": request.max_new_tokens,
        "temperature": 0.0 if greedy else request.temperature,
        "top_p": 1.0 if greedy else request.top_p,
        "n": request.num_sequences,
    }
    if request.prefill:
        # vLLM / SGLang: continue the last (assistant) message instead of opening a new turn
        body["messages"].append({"role": "assistant", "content": request.prefill})
        body.update(continue_final_message=True, add_generation_prompt=False)
    body.update(overrides)
    body.update(extra_body)
    return body


def chat_messages(
    messages: Sequence[Mapping[str, Any]], image_url: Callable[[], str]
) -> list[dict[str, Any]]:
    """The gge chat messages as OpenAI messages: ``{"type": "image"}`` parts become data URLs.

    Args:
        messages: gge's chat messages (a string content, or a list of ``image`` and ``text`` parts).
        image_url: Makes the data URL of the image (called once, at the first image part).

    Returns:
        The OpenAI messages, in order.

    Raises:
        GgeError: A content that is neither a string nor a list, or a part neither image nor text;
            the message names the message's index.

    Example:
        >>> chat_messages([{"role": "system", "content": "be brief"}], lambda: "unused")
        [{'role': 'system', 'content': 'be brief'}]
    """
    url: str | None = None
    out: list[dict[str, Any]] = []
    for m, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": message.get("role", "user"), "content": content})
            continue
        if not isinstance(content, list):
            raise GgeError(f"message {m}: content must be a string or a list of parts, got {content!r:.80}")
        parts: list[dict[str, Any]] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "image":
                if url is None:
                    url = image_url()
                parts.append({"type": "image_url", "image_url": {"url": url}})
            elif kind == "text":
                parts.append({"type": "text", "text": str(part.get("text", ""))})
            else:
                raise GgeError(f"message {m}: unsupported content part {part!r:.80} (expected image or text)")
        out.append({"role": message.get("role", "user"), "content": parts})
    return out
