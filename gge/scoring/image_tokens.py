"""What the model saw: the image tokens a Qwen-VL screenshot should cost, checked against what it cost.

gge sends each screenshot already at the size the preset's processor resizes it to (``smart_resize``
with the preset's factor, ``min_pixels`` and ``max_pixels``), so the image tokens the model should
see are known: a Qwen2/2.5-VL image of W x H pixels is cut into 14 x 14 patches, merged 2 x 2 into
one token each, ``(W / 28) * (H / 28)`` tokens (Qwen3-VL: 16 x 16 patches, ``(W / 32) * (H / 32)``),
framed by a vision-start and a vision-end token that gge counts with the text (as an in-process
run's ``image_grid_thw`` does). A server started with its own ``max_pixels`` (or a processor with a
token-budget bug) resizes again and the model sees fewer (or more) tokens than gge sent, silently.

Two checks, pure:

- **the probe** (:func:`split_prompt`): the same text with two images of known sizes; the
  difference of the server's ``usage.prompt_tokens`` is the difference of their image tokens,
  exactly, so the server's count for the screenshot and the prompt's text tokens come out exact.
- **each request of a run** (:func:`check_requests`): an in-process run counts its image tokens
  itself (``CostRecord.image_tokens``) and is compared exactly; an endpoint reports only its
  prompt's total, so its image tokens are that total less the probe's text tokens, within a
  tolerance for the text that differs between samples: each sample's own text (its instruction and
  the screen size the prompt states, as often as the preset's templates hold them; the caller counts
  its bytes) plus :data:`TEXT_SLACK` (:func:`tolerance`).

Example:
    >>> image_tokens_for(1288, 728, 28)  # 46 x 26 tokens
    1196
    >>> s = split_prompt(1300, 120, expected_big=1196, expected_small=16)
    >>> (s.image_tokens, s.text_tokens, s.matches)
    (1196, 104, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gge.documents.results import ImageTokenCheck, ImageTokenExample, ImageTokenSource
from gge.types import CostRecord

TEXT_SLACK = 16
"""Tokens of text a request may have beyond its own text's difference from the probe's prompt (the
instruction and the stated screen size are counted in ``instruction_bytes``): chat-template
whitespace and punctuation merging differently around them (a few tokens at each of their places)."""


def answers_paid(record: CostRecord, proposer_mode: str | None) -> int:
    """The answer texts a proposer request's record paid its prompt for (its prompt counted once each).

    An in-process prefill shared by n sequences, an endpoint request for n choices, a greedy-first
    pair (:class:`~gge.types.CostRecord`) count the prompt once per answer text. A record's
    ``candidates`` are its texts where the proposer draws one point per text (``greedy``,
    ``sampling``, or a mode not recorded); a ``single_pass`` answer is one text listing several points
    (its ``candidates``, the points parsed): one answer.

    Example:
        >>> r = CostRecord("propose", input_tokens=900, candidates=3)
        >>> answers_paid(r, "sampling"), answers_paid(r, "single_pass"), answers_paid(r, None)
        (3, 1, 3)
    """
    return 1 if proposer_mode == "single_pass" else max(1, record.candidates)


def image_tokens_for(width: int, height: int, factor: int) -> int:
    """The image tokens of an image sent at ``width`` x ``height`` (multiples of ``factor``).

    Args:
        width: The width sent (a multiple of ``factor``: the ``smart_resize`` size).
        height: The height sent.
        factor: Patch size times spatial merge (28 for Qwen2/2.5-VL, 32 for Qwen3-VL).

    Returns:
        ``(width / factor) * (height / factor)``: one token per merged patch (the vision start and
        end tokens not included).

    Raises:
        ValueError: A side is not a positive multiple of ``factor``.

    Example:
        >>> image_tokens_for(1920, 1088, 32)
        2040
    """
    if factor < 1 or width < factor or height < factor or width % factor or height % factor:
        raise ValueError(f"{width}x{height} is not a size in whole {factor}-pixel patches")
    return (width // factor) * (height // factor)


@dataclass(frozen=True)
class TokenSplit:
    """A prompt's tokens split into the screenshot's and the rest, from the probe's two requests.

    Attributes:
        image_tokens: The tokens the server counted for the screenshot.
        text_tokens: The prompt's other tokens (text, template, the vision start and end tokens).
        expected: The image tokens the preset expects for the screenshot.
    """

    image_tokens: int
    text_tokens: int
    expected: int

    @property
    def matches(self) -> bool:
        """Whether the server counted the image tokens the preset expects."""
        return self.image_tokens == self.expected

    @property
    def ratio(self) -> float:
        """The server's image tokens over the expected ones."""
        return self.image_tokens / self.expected if self.expected else float("nan")


def split_prompt(prompt_big: int, prompt_small: int, *, expected_big: int, expected_small: int) -> TokenSplit:
    """The screenshot's tokens and the text's, from one text sent with two images.

    The two requests differ only by their image, so the difference of their prompt tokens is the
    difference of their image tokens, exactly. The small image (a few patches, far inside any
    server's pixel limits) is taken to cost what it should; the screenshot then costs the rest.

    Args:
        prompt_big: ``usage.prompt_tokens`` of the request with the screenshot.
        prompt_small: ``usage.prompt_tokens`` of the same text with the small image.
        expected_big: The screenshot's expected image tokens (:func:`image_tokens_for`).
        expected_small: The small image's.

    Returns:
        The split.

    Example:
        >>> split_prompt(500, 120, expected_big=1196, expected_small=16).image_tokens  # shrunk
        396
    """
    image = prompt_big - prompt_small + expected_small
    return TokenSplit(image_tokens=image, text_tokens=prompt_small - expected_small, expected=expected_big)


def mismatch_line(
    split: TokenSplit, size: tuple[int, int], factor: int, min_pixels: int, max_pixels: int
) -> str | None:
    """The one line that says the server saw another screenshot than gge sent (None: it did not).

    Args:
        split: The probe's split of a screenshot's prompt.
        size: The (width, height) the screenshot was sent at.
        factor: The preset's patch factor.
        min_pixels: The preset's smallest area (what the server should be started with).
        max_pixels: The preset's largest area.

    Returns:
        ``the model saw fewer`` (or ``more``) ``image tokens than gge sent: the server counts ...``,
        with the ratio, the pixels seen and the likely fix; None when the counts agree.

    Example:
        >>> mismatch_line(TokenSplit(396, 104, 1196), (1288, 728), 28, 3136, 1003520)[:61]
        'the model saw fewer image tokens than gge sent: the server co'
    """
    if split.matches:
        return None
    w, h = size
    saw = "fewer" if split.image_tokens < split.expected else "more"
    seen = split.image_tokens * factor * factor
    return (
        f"the model saw {saw} image tokens than gge sent: the server counts {split.image_tokens} image "
        f"tokens for a {w}x{h} screenshot where the preset expects {split.expected} "
        f"(ratio {split.ratio:.2f}; about {seen:,} pixels seen of {w * h:,} sent): it likely resizes with "
        f"its own max_pixels/min_pixels (start the server with the preset's: min_pixels={min_pixels}, "
        f"max_pixels={max_pixels})"
    )


@dataclass(frozen=True)
class SeenRequest:
    """One proposer answer of a run, as far as its image tokens go.

    Attributes:
        id: The sample's id.
        size: The (width, height) its screenshot was sent at.
        expected: The image tokens the preset expects for it (:func:`image_tokens_for`).
        prompt_tokens: The answer's prompt tokens as the server counted them (None: not reported).
        image_tokens: Its image tokens as the engine counted them itself (an in-process run's
            processor; None: not counted apart).
        instruction_bytes: UTF-8 bytes of the sample's own text in the prompt: its instruction and
            the screen size the prompt states, as often as the templates hold them
            (:func:`gge.run.probe.sample_text_bytes`; the instruction's bytes alone for a template
            that states no size).
    """

    id: str
    size: tuple[int, int]
    expected: int
    prompt_tokens: int | None = None
    image_tokens: int | None = None
    instruction_bytes: int = 0


def tolerance(instruction_bytes: int, probe_bytes: int) -> int:
    """Tokens a request's prompt may differ by from the probe's text plus its expected image tokens.

    Its text differs from the probe's prompt by the sample's own text (the instruction and the screen
    size stated, at each place the templates hold them): a byte-level BPE token covers at least one
    byte, so each sample's own text is at most its bytes in tokens and the two differ by at most the
    longer one's bytes; plus :data:`TEXT_SLACK`.

    Args:
        instruction_bytes: The request's own text's UTF-8 bytes (:attr:`SeenRequest.instruction_bytes`).
        probe_bytes: The probe sample's.

    Example:
        >>> tolerance(40, 25)
        56
    """
    return max(instruction_bytes, probe_bytes) + TEXT_SLACK


def check_requests(
    requests: Sequence[SeenRequest],
    *,
    factor: int,
    text_tokens: int | None = None,
    probe_bytes: int = 0,
) -> ImageTokenCheck:
    """How many of a benchmark's proposer answers cost other image tokens than the preset expects.

    Where the engine counted image tokens itself (``image_tokens``: an in-process run) they are
    compared exactly. Otherwise the server's prompt tokens less ``text_tokens`` (the probe's exact
    text split of the benchmark's prompt) are compared within :func:`tolerance`. An answer with
    neither count (or without the probe's split) is not checked.

    Args:
        requests: The answers.
        factor: The preset's patch factor.
        text_tokens: The probe's text tokens for this benchmark's prompt (None: no probe).
        probe_bytes: The UTF-8 bytes of the probe sample's own text (as ``instruction_bytes``).

    Returns:
        The check: ``source`` (``measured``: the engine's own image counts; ``prompt``: prompt tokens
        less the probe's text; ``none``), the answers checked and those that ``differ``, the
        ``ratio`` of their image tokens to the expected ones (summed over those that differ; None
        when none do), the first that differs as an ``example``, and the ``tolerance`` rule.

    Example:
        >>> r = [SeenRequest("a", (56, 56), 4, image_tokens=4), SeenRequest("b", (56, 56), 4, image_tokens=2)]
        >>> c = check_requests(r, factor=28)
        >>> c["differ"], c["ratio"], c["example"]["id"]
        (1, 0.5, 'b')
    """
    measured = [r for r in requests if r.image_tokens is not None]
    checked: list[tuple[SeenRequest, int, int]] = []  # request, image tokens seen, tokens allowed off
    source: ImageTokenSource
    if measured:
        source = "measured"
        rule = "exact (the engine's own image token count)"
        checked = [(r, int(r.image_tokens or 0), 0) for r in measured]
    elif text_tokens is not None:
        source = "prompt"
        rule = (
            f"prompt tokens less the probe's {text_tokens} text tokens, within the longer sample text's "
            f"UTF-8 bytes (instruction and stated size) + {TEXT_SLACK}"
        )
        checked = [
            (r, r.prompt_tokens - text_tokens, tolerance(r.instruction_bytes, probe_bytes))
            for r in requests
            if r.prompt_tokens is not None
        ]
    else:
        source, rule = "none", "not checked: no image token count and no probe split"
    off = [(r, seen) for r, seen, allowed in checked if abs(seen - r.expected) > allowed]
    example: ImageTokenExample | None = None
    if off:
        r, seen = off[0]
        example = {"id": r.id, "size": [r.size[0], r.size[1]], "expected": r.expected, "observed": seen}
    expected_off = sum(r.expected for r, _ in off)
    return {
        "source": source,
        "factor": factor,
        "requests": len(checked),
        "differ": len(off),
        "unchecked": len(requests) - len(checked),
        "ratio": round(sum(seen for _, seen in off) / expected_off, 4) if off and expected_off else None,
        "tolerance": rule,
        "example": example,
    }
