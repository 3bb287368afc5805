"""What the evaluation loop asks of a model, and what a model backend must provide.

The loop needs a :class:`Policy`: samples in, one :class:`~gge.types.Prediction` per sample out.
Two-stage models are built from a :class:`Proposer` and a :class:`Critic`
(:class:`gge.models.policy.GroundingPolicy` bundles them), which in turn talk to a
:class:`Backend`: the thing that turns chat messages with an image into text (transformers, an
OpenAI-compatible endpoint, or the model being trained).

Example:
    >>> from gge.types import Prediction
    >>> class Nothing:
    ...     def predict(self, samples):
    ...         return [Prediction(s.benchmark, s.id, format_error=True) for s in samples]
    >>> isinstance(Nothing(), Policy)
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from gge.types import Candidate, Prediction, Sample


@runtime_checkable
class Policy(Protocol):
    """A grounding model as the loop sees it: samples in, candidates (with critic scores) out."""

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """One prediction per sample, in order, with points in original-image pixels."""
        ...


@dataclass(frozen=True)
class Proposal:
    """A proposer's answer for one sample.

    Attributes:
        candidates: Candidate points in original pixels (or abstentions), proposer order.
        raw: The model's text (several sampled texts joined by a separator line).
        format_error: Nothing parseable in the answer.
        truncated: An answer was cut by the token budget (its slot is unparsed).
    """

    candidates: tuple[Candidate, ...]
    raw: str = ""
    format_error: bool = False
    truncated: bool = False


@dataclass(frozen=True)
class Judgement:
    """A critic's answer for one sample.

    Attributes:
        scores: One score per candidate (higher is better); None where the critic gave none.
        raw: The critic's text.
        format_error: The critic's answer was unparseable (proposer order was used instead).
    """

    scores: tuple[float | None, ...]
    raw: str = ""
    format_error: bool = False


@runtime_checkable
class Proposer(Protocol):
    """Turns screenshots and instructions into up to K candidates per sample."""

    def propose(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Proposal]:
        """One proposal per sample (``images[i]`` is the screenshot of ``samples[i]``)."""
        ...


@runtime_checkable
class Critic(Protocol):
    """Scores each sample's candidates."""

    def rank(
        self, samples: Sequence[Sample], images: Sequence[Image.Image], proposals: Sequence[Proposal]
    ) -> list[Judgement]:
        """One judgement per sample, with one score per candidate of its proposal."""
        ...


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt for a backend: an image and chat messages, and how to decode.

    ``messages`` follow the chat-template convention of the Qwen-VL processors: the user turn's
    content is a list of parts, ``{"type": "image"}`` standing for ``image``.

    Attributes:
        image: The image the model sees (already resized and marked where that matters).
        messages: Chat messages.
        num_sequences: Sequences to return (sampled from one prefill when > 1).
        do_sample: Sample instead of greedy decoding.
        temperature: Sampling temperature.
        top_p: Nucleus sampling mass.
        top_k: Top-k sampling (0: off). Set explicitly so a checkpoint's generation config (Qwen2.5-VL
            ships ``top_k=1``, which turns sampling into greedy decoding) cannot override it.
        repetition_penalty: Repetition penalty (1.0: off), also set explicitly; None: the checkpoint's
            generation config decides (what an official evaluation that passes none gets).
        max_new_tokens: Generation budget.
        prefill: Text the assistant turn starts with; generation continues after it, and each
            returned text starts with it (the parser reads prefill + answer).
        greedy_first: With ``do_sample`` and ``num_sequences`` = K: text 1 is the greedy answer and
            texts 2..K are sampled, all continuing one prefill of the prompt (the transformers
            backend computes the prompt's KV cache once; an endpoint gets two requests with the same
            prompt, which its prefix cache serves).
    """

    image: Image.Image
    messages: list[dict[str, Any]]
    num_sequences: int = 1
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float | None = 1.0
    max_new_tokens: int = 128
    prefill: str | None = None
    greedy_first: bool = False


@dataclass(frozen=True)
class Generation:
    """A backend's answer to one request.

    Attributes:
        texts: ``num_sequences`` decoded texts (starting with the request's prefill, if any).
        usage: Token counts (``prompt_tokens``, ``completion_tokens``) where known.
        truncated: Per text, whether generation stopped at the token budget instead of ending its
            answer (empty: unknown, read as not truncated).
    """

    texts: list[str]
    usage: dict[str, int] = field(default_factory=dict)
    truncated: list[bool] = field(default_factory=list)


@runtime_checkable
class Backend(Protocol):
    """A vision-language model that generates text, and reads a yes/no probability."""

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        """(width, height) of the image the model actually sees for a screenshot of this size."""
        ...

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate for a batch of requests (one prefill per request)."""
        ...

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        """P(answer starts with ``yes``) for each request, from the first answer token's distribution."""
        ...

    def settings(self) -> dict[str, Any]:
        """The reproducibility record of the backend (checkpoint, versions, resize limits...)."""
        ...


def settings_record(policy: object) -> dict[str, Any]:
    """The reproducibility record of a policy (its ``settings()`` if it has one)."""
    settings = getattr(policy, "settings", None)
    return dict(settings()) if callable(settings) else {"type": type(policy).__name__}


def answers_per_sample(policy: object, k: int) -> int:
    """The K a run of ``policy`` scores (results.json ``k``): how many answers per sample it gives.

    One for a one-answer policy: a :class:`gge.models.policy.GroundingPolicy` whose
    ``settings_.proposer`` is ``greedy`` (its Oracle@k and selection strategies would all restate
    Top-1). A policy that knows its most candidates (a replay file's ``max_candidates()``) scores at
    most that many, and at least one. Any other policy answers ``k``.

    Example:
        >>> from gge.models.policy import AdapterSettings
        >>> class Greedy:
        ...     settings_ = AdapterSettings(proposer="greedy", critic="none")
        >>> class TwoEach:
        ...     def max_candidates(self) -> int:
        ...         return 2
        >>> answers_per_sample(Greedy(), 5), answers_per_sample(TwoEach(), 5), answers_per_sample(object(), 5)
        (1, 2, 5)
    """
    settings = getattr(policy, "settings_", None)
    if getattr(settings, "proposer", None) == "greedy":
        return 1
    most = getattr(policy, "max_candidates", None)
    if callable(most):
        return max(1, min(k, int(most())))
    return k
