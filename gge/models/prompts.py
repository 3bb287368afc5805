"""Prompt templates and the chat messages of a request: what a model family's evaluation sends.

:class:`Prompts` holds a family's templates (system prompt, tool schema, the official one-point
request, gge's own K-point, ranking and judging requests, the assistant prefill, the user turn's
layout); :func:`render` fills their placeholders literally and :func:`build_messages` turns a rendered
text into the chat messages of one request. :mod:`gge.models.policy` sends them.

Example:
    >>> msgs = build_messages(Prompts(), render("find {instruction}", {"instruction": "OK"}), {}, (100, 50))
    >>> msgs[0]["content"]
    [{'type': 'image', 'width': 100, 'height': 50}, {'type': 'text', 'text': 'find OK'}]
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gge.errors import GgeError

USER_LAYOUTS = ("image_text", "text_image", "text_then_image_message")
"""How the user turn holds the screenshot and the text: one message with the image first or the text
first, or a text message followed by a message holding only the image (UI-TARS)."""
PLACEHOLDERS = ("tools", "width", "height", "k", "labels", "instruction")
"""Placeholders of the templates, replaced literally in this order (no other brace is special, so a
tool schema's JSON needs no escaping; the instruction goes in last, so its text is never expanded)."""
_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_]\w*)\}")
PROMPT_FIELDS = ("system", "tools", "propose_one", "propose_k", "rank_list", "judge_one", "prefill")
"""The template fields a per-benchmark variant may replace."""


def render(template: str, values: dict[str, Any]) -> str:
    """Fill ``{name}`` placeholders literally (see :data:`PLACEHOLDERS`).

    Example:
        >>> render('{"w": {width}} find {instruction}', {"width": 1932, "instruction": "{width}"})
        '{"w": 1932} find {width}'
    """
    out = template
    for key in PLACEHOLDERS:
        if key in values:
            out = out.replace("{" + key + "}", str(values[key]))
    return out


@dataclass(frozen=True)
class Prompts:
    """Prompt templates: the whole request a model family's official evaluation sends.

    Placeholders (replaced literally, see :func:`render`): ``{instruction}``, ``{k}``, ``{width}``,
    ``{height}`` (the screen size written into the prompt: of the image the model sees, or what
    ``AdapterSettings.prompt_max_pixels`` declares), ``{labels}`` (the markers' labels, e.g.
    ``1, 2, 3``), and in ``system`` also ``{tools}`` (the tool schema text).

    Attributes:
        name: Name recorded with every result.
        system: Optional system message.
        tools: A tool schema's text, inserted verbatim where ``system`` says ``{tools}``.
        propose_one: Ask for one point (``greedy`` and ``sampling`` proposers): the official request.
        propose_k: Ask for ``{k}`` candidate points in one answer (``single_pass``; gge's own).
        rank_list: Ask to rank the numbered markers (``listwise`` critic; gge's own).
        judge_one: Ask whether the one marker hits the target, answered Yes/No (``pointwise``; gge's own).
        prefill: The assistant turn starts with this text; generation continues after it and the
            parser reads prefill + answer (proposer requests only).
        user_layout: One of :data:`USER_LAYOUTS`.
        variants: Per benchmark name, fields of :data:`PROMPT_FIELDS` that replace these for its
            samples (e.g. OSWorld-G's sentence about infeasible tasks).
    """

    name: str = "default"
    system: str | None = None
    tools: str | None = None
    propose_one: str = (
        "Output the click point of the UI element described below as (x, y).\nInstruction: {instruction}"
    )
    propose_k: str = (
        "Propose {k} different candidate click points for the UI element described below, most likely "
        "first, one per line as (x, y).\nInstruction: {instruction}"
    )
    rank_list: str = (
        "The screenshot shows {k} numbered candidate click points ({labels}) for the instruction below. "
        "Rank them from best to worst, answering with the numbers separated by commas.\n"
        "Instruction: {instruction}"
    )
    judge_one: str = (
        "Does the marked point hit the UI element described below? Answer Yes or No.\n"
        "Instruction: {instruction}"
    )
    prefill: str | None = None
    user_layout: str = "image_text"
    variants: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        texts = [(k, v) for k, v in asdict(self).items() if isinstance(v, str) and k != "name"]
        texts += [(f"variants.{b}.{k}", v) for b, f in self.variants.items() for k, v in f.items() if v]
        for key, text in texts:
            unknown = sorted(set(_PLACEHOLDER_RE.findall(text)) - set(PLACEHOLDERS))
            if unknown:
                raise GgeError(
                    f"prompts.{key}: bad placeholder {{{unknown[0]}}}; known: "
                    + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                )
        if self.user_layout not in USER_LAYOUTS:
            raise GgeError(
                f"unknown prompts.user_layout {self.user_layout!r}; known: {', '.join(USER_LAYOUTS)}"
            )
        for bench, fields in self.variants.items():
            bad = sorted(set(fields) - set(PROMPT_FIELDS))
            if bad:
                raise GgeError(
                    f"prompts.variants.{bench}: unknown field {bad[0]!r}; known: {', '.join(PROMPT_FIELDS)}"
                )

    def for_benchmark(self, benchmark: str) -> Prompts:
        """These prompts with the benchmark's variant applied (itself when it has none)."""
        fields = self.variants.get(benchmark)
        return replace(self, **fields) if fields else self  # type: ignore[arg-type]

    def hashes(self) -> dict[str, str]:
        """A short SHA-256 of each template's text (recorded with results)."""
        return {
            key: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
            for key, value in asdict(self).items()
            if key != "name" and value not in (None, {})
        }


def build_messages(
    prompts: Prompts, text: str, values: dict[str, Any], image_size: tuple[int, int]
) -> list[dict[str, Any]]:
    """The chat messages of one request: the system prompt (with the tool schema) and the user turn.

    Args:
        prompts: The templates (a benchmark's variant already applied).
        text: The user text, already rendered.
        values: Placeholder values for the system prompt (``width``, ``height``...).
        image_size: (width, height) of the image the model sees, recorded on the image part.

    Returns:
        Messages whose image part is ``{"type": "image", "width": w, "height": h}``.
    """
    messages: list[dict[str, Any]] = []
    if prompts.system is not None:
        system = render(prompts.system, {**values, "tools": prompts.tools or ""})
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    image = {"type": "image", "width": image_size[0], "height": image_size[1]}
    part = {"type": "text", "text": text}
    if prompts.user_layout == "image_text":
        messages.append({"role": "user", "content": [image, part]})
    elif prompts.user_layout == "text_image":
        messages.append({"role": "user", "content": [part, image]})
    else:
        messages += [{"role": "user", "content": [part]}, {"role": "user", "content": [image]}]
    return messages
