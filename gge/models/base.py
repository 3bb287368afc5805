"""What the evaluation loop asks of a model, and what a model backend must provide.

The loop needs a :class:`Policy`: samples in, one :class:`~gge.types.Prediction` per sample out, and
what it declares about itself (whether it looks at screenshots, how many answers it gives, how its
scores read, its reproducibility record, the torch models to put on each rank's device). A policy of
your own needs only ``predict`` (a :class:`Predictor`): :func:`capabilities` is the one place that
reads a policy's declarations, giving the documented default for each one it leaves out.
Two-stage models are built from a :class:`Proposer` and a :class:`Critic`
(:class:`gge.models.policy.GroundingPolicy` bundles them), which in turn talk to a
:class:`Backend`: the thing that turns chat messages with an image into text (transformers, an
OpenAI-compatible endpoint, or the model being trained).

Example:
    >>> from gge.types import Prediction
    >>> class Nothing:
    ...     def predict(self, samples):
    ...         return [Prediction(s.benchmark, s.id, format_error=True) for s in samples]
    >>> isinstance(Nothing(), Predictor), isinstance(Nothing(), Policy)
    (True, False)
    >>> caps = capabilities(Nothing())
    >>> caps.needs_images, caps.max_candidates, caps.record()
    (False, None, {'type': 'Nothing'})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from gge.models.markers import MarkedView
from gge.scoring.analysis import analysis_options
from gge.types import Candidate, CostRecord, Prediction, Sample

PredictImages = Callable[[Sequence[Sample], Sequence[Image.Image]], list[Prediction]]
"""A policy's ``predict_images(samples, images)``: predictions for decoded screenshots."""


@runtime_checkable
class Predictor(Protocol):
    """The least a policy is: samples in, predictions out (all a policy of your own must have)."""

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """One prediction per sample, in order, with points in original-image pixels."""
        ...


@runtime_checkable
class Policy(Predictor, Protocol):
    """A grounding model as the loop sees it, with what it declares about itself.

    gge's policies declare every member; for an object that declares only some (a :class:`Predictor`),
    :func:`capabilities` gives the default of each missing one. A policy that sets ``needs_images``
    may also have ``predict_images(samples, images)``, which the loop then calls with the decoded
    screenshots instead of ``predict``.
    """

    @property
    def needs_images(self) -> bool:
        """The loop decodes the screenshots for it (default False: ``predict`` reads what it needs)."""
        ...

    @property
    def proposer_mode(self) -> str | None:
        """How its answers are drawn, a gge proposer mode; default None: none of them.

        ``sampling``: the answers after the first are exchangeable draws, so pass@k is reported.
        """
        ...

    @property
    def critic_mode(self) -> str | None:
        """Its critic's mode (``listwise``: ranks, ``pointwise``: probabilities); default None."""
        ...

    @property
    def score_kind(self) -> str | None:
        """How its scores read (``probability``, ``rank`` or ``score``); default None.

        None: the critic mode says, else the kind is inferred from the scores.
        """
        ...

    def max_candidates(self) -> int | None:
        """The most candidates a prediction carries; default None: as many as the run's K.

        1 makes a one-answer policy, scored Top-1 only.
        """
        ...

    def settings(self) -> dict[str, Any]:
        """The reproducibility record of results.json ``model``; default ``{"type": <class name>}``."""
        ...

    def device_modules(self) -> tuple[Any, ...]:
        """The torch modules the evaluation puts on each rank's device; default none."""
        ...


@dataclass(frozen=True)
class Capabilities:
    """What a policy declares (see :class:`Policy`), with the default for what it does not.

    Attributes:
        type_name: The policy's class name (the record of a policy without ``settings``).
        needs_images: Decode the screenshots for it.
        predict_images: Its ``predict_images``, or None: the loop calls ``predict``.
        proposer_mode: Its proposer mode, or None.
        critic_mode: Its critic mode, or None.
        score_kind: How its scores read, or None.
        max_candidates: The most candidates a prediction carries, or None (the run's K).
        device_modules: The torch modules to put on each rank's device.
        settings: Its ``settings`` method, or None.
        cost_source: ``measured`` (its requests' own costs) or ``replayed``: a policy that declares
            ``cost_source = "replayed"`` (a replay) answers with cost records read back from a file.
        concurrent: It declares ``concurrent = True``: its ``predict_images`` may be called from many
            threads at once, one sample each, and its requests then share one request window (an
            endpoint's): the run keeps the window full sample by sample (:mod:`gge.run.windowed`)
            instead of batch by batch.
    """

    type_name: str
    needs_images: bool = False
    predict_images: PredictImages | None = None
    proposer_mode: str | None = None
    critic_mode: str | None = None
    score_kind: str | None = None
    max_candidates: int | None = None
    device_modules: tuple[Any, ...] = ()
    settings: Callable[[], dict[str, Any]] | None = field(default=None, compare=False)
    cost_source: str = "measured"
    concurrent: bool = False

    def record(self) -> dict[str, Any]:
        """The reproducibility record: the policy's ``settings()`` now, or its class name."""
        return dict(self.settings()) if self.settings is not None else {"type": self.type_name}

    def answers(self, k: int) -> int:
        """How many answers per sample a run with ``k`` scores: ``k``, capped by ``max_candidates``."""
        return k if self.max_candidates is None else max(1, min(k, int(self.max_candidates)))


def capabilities(policy: object) -> Capabilities:
    """What ``policy`` declares, each member it leaves out at its default (the one place that reads them).

    gge's policies declare all of :class:`Policy`; an object with only ``predict`` (a model of your own
    handed to a callback) gets every default: no screenshots decoded for it, ``predict`` called, the
    run's K answers, no mode (no pass@k, the score kind inferred from the scores), its class name as
    its record, nothing moved to a device. Declaring any member (``needs_images = True`` with a
    ``predict_images``, ``max_candidates()``...) is enough for the loop to use it.

    A wrapper that forwards only the settings object (``settings_``, with ``proposer`` / ``critic``) and
    the backends (``backend`` / ``critic_backend``, each with a torch ``model``) of a
    :class:`~gge.models.policy.GroundingPolicy` is read through them, as before the members were
    declared: its modes are the settings', a ``greedy`` proposer gives one answer, and the backends'
    models are the ones put on the device. So wrapping a policy never changes what is scored.
    """

    def declared(name: str) -> Any:
        return getattr(policy, name, None)

    def called(name: str) -> Any:
        method = declared(name)
        return method() if callable(method) else None

    predict_images = declared("predict_images")
    settings = declared("settings")
    inner = declared("settings_")  # a GroundingPolicy's settings, forwarded by a wrapper
    proposer = (
        declared("proposer_mode") if hasattr(policy, "proposer_mode") else getattr(inner, "proposer", None)
    )
    critic = declared("critic_mode") if hasattr(policy, "critic_mode") else getattr(inner, "critic", None)
    most = called("max_candidates")
    if most is None and proposer == "greedy":
        most = 1  # one greedy answer per sample, whatever K the run asks
    modules = called("device_modules")
    if modules is None:  # not declared: the backends' torch models
        backends = (declared("backend"), declared("critic_backend"))
        modules = tuple(m for b in backends if (m := getattr(b, "model", None)) is not None)
    return Capabilities(
        type_name=type(policy).__name__,
        needs_images=bool(declared("needs_images")),
        predict_images=predict_images if callable(predict_images) else None,
        proposer_mode=proposer,
        critic_mode=critic,
        score_kind=declared("score_kind"),
        max_candidates=None if most is None else int(most),
        device_modules=tuple(modules),
        settings=settings if callable(settings) else None,
        cost_source="replayed" if declared("cost_source") == "replayed" else "measured",
        concurrent=declared("concurrent") is True and predict_images is not None,
    )


def policy_analysis_options(policy: object) -> dict[str, Any]:
    """:func:`gge.scoring.analysis.analysis_options` of a policy, from what it declares.

    Its proposer and critic modes, its ``score_kind`` where it declares one (the demo's critic gives
    plain scores) and a ``cost_source`` other than ``measured`` (a replay); what it does not declare
    (:func:`capabilities`): no pass@k, the score kind inferred.
    """
    caps = capabilities(policy)
    options = analysis_options(caps.proposer_mode, caps.critic_mode)
    if caps.score_kind in ("probability", "rank", "score"):
        options["score_kind"] = caps.score_kind
    if caps.cost_source != "measured":
        options["cost_source"] = caps.cost_source
    return options


@dataclass(frozen=True)
class Proposal:
    """A proposer's answer for one sample.

    Attributes:
        candidates: Candidate points in original pixels (or abstentions), proposer order.
        raw: The model's text (several sampled texts joined by a separator line).
        format_error: Nothing parseable in the answer.
        truncated: An answer was cut by the token budget (its slot is unparsed).
        costs: The cost ledger of its requests (stage ``propose``).
    """

    candidates: tuple[Candidate, ...]
    raw: str = ""
    format_error: bool = False
    truncated: bool = False
    costs: tuple[CostRecord, ...] = ()


@dataclass(frozen=True)
class Judgement:
    """A critic's answer for one sample.

    Attributes:
        scores: One score per candidate (higher is better); None where the critic gave none.
        raw: The critic's text.
        format_error: The critic's answer was unparseable (proposer order was used instead).
        costs: The cost ledger of its requests (``rank`` or ``judge``).
    """

    scores: tuple[float | None, ...]
    raw: str = ""
    format_error: bool = False
    costs: tuple[CostRecord, ...] = ()


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
            backend computes the prompt's KV cache once; an endpoint gets the two requests with the
            same prompt at once, which its prefix cache serves).
        image_file: The screenshot file ``image`` is, unchanged (decoded at its own size, not resized
            or marked), or None: an endpoint may send the file's own bytes instead of encoding the
            image (:func:`gge.models.encoding.file_format` says when).
        marks: A critic's markers drawn on ``image`` (:func:`gge.models.markers.mark_view`): the
            model sees ``marks.image()``, not ``image``. Only a backend whose class sets
            ``takes_marked_views = True`` is sent requests with marks (an endpoint then encodes the
            marked rows alone); every other backend gets the marked image as ``image`` and None here.
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
    image_file: str | None = None
    marks: MarkedView | None = None


@dataclass(frozen=True)
class Generation:
    """A backend's answer to one request.

    Attributes:
        texts: ``num_sequences`` decoded texts (starting with the request's prefill, if any).
        usage: Token counts (``prompt_tokens``, ``completion_tokens``) where known.
        truncated: Per text, whether generation stopped at the token budget instead of ending its
            answer (empty: unknown, read as not truncated).
        cost: What the request cost (its tokens, this request's share of its batch's seconds), as
            the backend measured it; None: the policy times the call itself (seconds only, and the
            ``usage`` counts). Its stage and slots are the policy's to set.
        part_costs: Where the backend answered the request in parts (an endpoint's greedy answer,
            then a request for the K-1 samples), each part's cost, its ``slot`` and ``candidates``
            counted within the request's texts; the ledger records these instead of ``cost`` (their
            sum), so a budget curve using fewer candidates does not pay for a part it would not ask.
    """

    texts: list[str]
    usage: dict[str, int] = field(default_factory=dict)
    truncated: list[bool] = field(default_factory=list)
    cost: CostRecord | None = None
    part_costs: tuple[CostRecord, ...] = ()


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
        """P(answer starts with ``yes``) for each request, from the first answer token's distribution.

        A backend that measures what each request cost may also have
        ``yes_probability_with_costs(requests, yes, no) -> (probabilities, [CostRecord, ...])``, which
        the pointwise critic then calls instead (otherwise it times the call itself).
        """
        ...

    def settings(self) -> dict[str, Any]:
        """The reproducibility record of the backend (checkpoint, versions, resize limits...)."""
        ...


@runtime_checkable
class TorchBackend(Backend, Protocol):
    """A :class:`Backend` over a torch model (a transformers backend), which an evaluation moves."""

    @property
    def model(self) -> Any:
        """The ``torch.nn.Module`` it runs."""
        ...


def settings_record(policy: object) -> dict[str, Any]:
    """The reproducibility record of a policy (its ``settings()`` if it has one)."""
    return capabilities(policy).record()


def answers_per_sample(policy: object, k: int) -> int:
    """The K a run of ``policy`` scores (results.json ``k``): how many answers per sample it gives.

    A policy that declares its most candidates (``max_candidates()``: 1 for a
    :class:`gge.models.policy.GroundingPolicy` whose proposer is ``greedy``, whose Oracle@k and
    selection strategies would all restate Top-1; a replay file's most per line) scores at most that
    many, and at least one. Any other policy answers ``k``.

    Example:
        >>> class Greedy:
        ...     def max_candidates(self) -> int:
        ...         return 1
        >>> class TwoEach:
        ...     def max_candidates(self) -> int:
        ...         return 2
        >>> answers_per_sample(Greedy(), 5), answers_per_sample(TwoEach(), 5), answers_per_sample(object(), 5)
        (1, 2, 5)
    """
    return capabilities(policy).answers(k)
