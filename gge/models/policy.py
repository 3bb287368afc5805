"""The proposer/critic policy shared by every backend: prompts, parsing, coordinates, markers.

A backend (transformers, an OpenAI-compatible endpoint, the model being trained) only turns an
image and chat messages into text or a yes-probability. Everything that decides what gge measures
lives here, once:

- **proposer modes**: ``single_pass`` (one generation listing K points, as in COPC), ``sampling``
  (K sequences sampled from one prompt, sharing the prefill), ``greedy`` (one point, K = 1);
- **critic modes**: ``listwise`` (the candidates drawn as numbered markers on one image, one
  generation returns a ranking; unparseable -> proposer order and a counted critic format error),
  ``pointwise`` (one marked image per candidate, the score is P("Yes") from one batched forward),
  ``none``;
- **coordinates**: the model's points are converted once, from the preset's convention, to
  original-image pixels.

The image is resized to the size the model sees (``backend.seen_size``) before prompting, so markers
are drawn at the model's resolution and ``abs_resized`` answers map back exactly. Points are mapped
to the sample's recorded ``image_size``, so a screenshot decoded at a reduced size (the data pipeline
may pre-resize) still yields original-pixel candidates.

Example:
    >>> from PIL import Image
    >>> from gge.types import Box, Sample
    >>> class Echo:  # a backend that always answers the same text
    ...     def seen_size(self, w, h): return (w // 2, h // 2)
    ...     def generate(self, requests): return [Generation(["(10, 20) (30, 40)"]) for _ in requests]
    ...     def yes_probability(self, requests, yes, no): return [0.5] * len(requests)
    ...     def settings(self): return {"backend": "echo"}
    >>> policy = GroundingPolicy(Echo(), AdapterSettings(convention="abs_resized", critic="none"))
    >>> s = Sample("b", "0", "", (200, 100), "click OK", Box(0, 0, 50, 50))
    >>> [c.point for c in policy.propose([s], [Image.new("RGB", (200, 100))])[0].candidates]
    [(20.0, 40.0), (60.0, 80.0)]
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from PIL import Image

from gge.benchmarks.images import open_image
from gge.errors import GgeError
from gge.geometry import CONVENTIONS, smart_resize, to_original
from gge.models.base import Backend, Generation, GenerationRequest, Judgement, Proposal
from gge.models.markers import MarkerStyle, draw_markers
from gge.models.parsing import parse_points, parse_ranking
from gge.types import Candidate, CostRecord, Prediction, Sample

PROPOSER_MODES = ("single_pass", "sampling", "greedy")
CRITIC_MODES = ("listwise", "pointwise", "none")
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


SAMPLE_SEPARATOR = "\n<|gge-sample|>\n"
"""Joins the texts of a sampling proposer in a prediction's ``raw`` field."""


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


@dataclass(frozen=True)
class AdapterSettings:
    """How a policy prompts, decodes and interprets a model.

    Attributes:
        preset: Name of the preset these settings came from.
        convention: The coordinate convention of the model's answers (:data:`gge.geometry.CONVENTIONS`).
        proposer: ``single_pass``, ``sampling`` or ``greedy``.
        critic: ``listwise``, ``pointwise`` or ``none``.
        k: Candidates asked for (``greedy`` always gives one).
        temperature: Sampling temperature (``sampling``).
        top_p: Nucleus mass (``sampling``).
        top_k: Top-k (``sampling``; 0 = off).
        repetition_penalty: Repetition penalty of every generation (1.0 = off; None = the
            checkpoint's generation config).
        max_new_tokens: Proposer generation budget.
        critic_max_new_tokens: Listwise critic generation budget.
        prompts: Prompt templates.
        markers: Marker style for the critic.
        yes: The pointwise critic's positive answer word.
        no: Its negative answer word.
        prompt_max_pixels: When set, ``{width}``/``{height}`` in the prompt (and the frame of
            ``abs_resized`` answers) are ``smart_resize`` of the screenshot with this max area,
            ``patch_factor`` and ``min_pixels``, whatever the model sees (the ScreenSpot-Pro
            evaluator's Qwen2.5-VL code states an uncapped size while the processor caps the image).
        patch_factor: The model's resize factor (patch x merge: 28, or 32 for Qwen3-VL).
        min_pixels: Smallest area (with ``prompt_max_pixels``).
        box_pairs: Read ``(x1,y1),(x2,y2)`` as one box (Qwen2-VL boxes whose special tokens a server
            stripped), see :func:`gge.models.parsing.parse_points`.
    """

    preset: str = "custom"
    convention: str = "abs_resized"
    proposer: str = "single_pass"
    critic: str = "listwise"
    k: int = 5
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float | None = 1.0
    max_new_tokens: int = 256
    critic_max_new_tokens: int = 32
    prompts: Prompts = field(default_factory=Prompts)
    markers: MarkerStyle = field(default_factory=MarkerStyle)
    yes: str = "Yes"
    no: str = "No"
    prompt_max_pixels: int | None = None
    patch_factor: int = 28
    min_pixels: int = 3136
    box_pairs: bool = False

    def __post_init__(self) -> None:
        for value, known, what in (
            (self.convention, CONVENTIONS, "coordinate convention"),
            (self.proposer, PROPOSER_MODES, "proposer mode"),
            (self.critic, CRITIC_MODES, "critic mode"),
        ):
            if value not in known:
                raise GgeError(f"unknown {what} {value!r}; known: {', '.join(known)}")
        if self.k < 1:
            raise GgeError(f"k must be at least 1, got {self.k}")

    def record(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict, with the prompt hashes."""
        out = asdict(self)
        out["prompts"] = {"name": self.prompts.name, "sha256": self.prompts.hashes()}
        out["markers"]["colors"] = list(self.markers.colors)
        return out


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


@dataclass(frozen=True)
class RequestSpec:
    """A proposer request before it has pixels: what :meth:`GroundingPolicy.propose` sends.

    Attributes:
        messages: Chat messages (:func:`build_messages`).
        prefill: The assistant prefill, or None.
        generation: Decoding settings (``GenerationRequest`` keyword arguments).
    """

    messages: list[dict[str, Any]]
    prefill: str | None
    generation: dict[str, Any]


def answer_candidates(
    texts: Sequence[str],
    *,
    proposer: str,
    k: int,
    box_pairs: bool,
    convention: str,
    image_size: tuple[int, int],
    frame: tuple[int, int],
    cut: Sequence[bool] | None = None,
) -> tuple[Candidate, ...]:
    """A sample's candidates in original pixels, read from the proposer's answers.

    ``single_pass``: the points of the first answer (at most ``k``). Other modes: one candidate per
    answer, in order; an unparseable or cut answer keeps its slot as an unparsed candidate (never a
    hit). Points are read in the preset's ``convention`` (``abs_resized`` in ``frame``) and mapped to
    ``image_size``. The one reading of an answer, for the policy and for trainers' rewards
    (:mod:`gge.integrations.verl`).

    Args:
        texts: The answers, one per generated sequence.
        proposer: ``single_pass``, ``sampling`` or ``greedy``.
        k: Points read from a ``single_pass`` answer at most.
        box_pairs: Read ``(x1,y1),(x2,y2)`` as one box.
        convention: The coordinate convention of the answers.
        image_size: The sample's original (width, height).
        frame: The size ``abs_resized`` coordinates refer to.
        cut: Per answer, whether the token budget cut it (a cut answer is never parsed).

    Returns:
        The candidates, in proposer order.

    Example:
        >>> [c.point for c in answer_candidates(["(10, 20)", "no idea"], proposer="sampling", k=2,
        ...     box_pairs=False, convention="abs_resized", image_size=(200, 100), frame=(100, 50))]
        [(20.0, 40.0), None]
    """
    cut = [False] * len(texts) if cut is None else cut

    def point(p: tuple[float, float] | None) -> Candidate:
        if p is None:
            return Candidate(None)
        return Candidate(to_original(p[0], p[1], convention, image_size, frame))

    if proposer == "single_pass":
        first = texts[0] if texts and not cut[0] else ""
        return tuple(point(p) for p in parse_points(first, max_points=k, box_pairs=box_pairs).points)
    slots = [parse_points(t, max_points=1, box_pairs=box_pairs) for t in texts]
    return tuple(
        Candidate(None, raw=t, parsed=False) if p.format_error or c else point(p.points[0])
        for p, t, c in zip(slots, texts, cut, strict=True)
    )


class GroundingPolicy:
    """A proposer and a critic over one backend (or a separate critic backend).

    Args:
        backend: The proposer's model.
        settings: Prompts, modes, convention, markers.
        critic_backend: A separate critic model (default: the same backend, as in COPC).
    """

    needs_images = True
    score_kind: str | None = None
    """None: the critic mode says how the scores read."""

    def __init__(
        self, backend: Backend, settings: AdapterSettings, critic_backend: Backend | None = None
    ) -> None:
        self.backend = backend
        self.critic_backend = critic_backend or backend
        self.settings_ = settings
        self.calls = {"propose": 0, "rank": 0}
        self.usage: dict[str, int] = {}

    # -- what it declares (gge.models.base.Policy) --------------------------------------------
    @property
    def proposer_mode(self) -> str:
        """The proposer mode of its settings."""
        return self.settings_.proposer

    @property
    def critic_mode(self) -> str:
        """The critic mode of its settings."""
        return self.settings_.critic

    def max_candidates(self) -> int | None:
        """1 for a ``greedy`` proposer; otherwise None: the K it is asked for is the run's."""
        return 1 if self.settings_.proposer == "greedy" else None

    def device_modules(self) -> tuple[Any, ...]:
        """The models of its backends (a separate critic's too), each once: any backend's ``model``.

        Every backend with a ``model`` counts (a :class:`~gge.models.base.TorchBackend`, or one of your
        own that has only some of its methods), as before the member was declared; the loop moves
        those that are torch modules.
        """
        modules: list[Any] = []
        for backend in (self.backend, self.critic_backend):
            model = getattr(backend, "model", None)
            if model is not None and all(m is not model for m in modules):
                modules.append(model)
        return tuple(modules)

    # -- helpers --------------------------------------------------------------------------------
    def _view(self, backend: Backend, image: Image.Image) -> Image.Image:
        """The screenshot at the resolution the model sees."""
        image = image.convert("RGB") if image.mode != "RGB" else image
        seen = backend.seen_size(*image.size)
        return image if seen == image.size else image.resize(seen, Image.Resampling.BICUBIC)

    def prompt_size(self, sample: Sample, view_size: tuple[int, int]) -> tuple[int, int]:
        """The screen size the prompt states, and the frame of ``abs_resized`` answers."""
        s = self.settings_
        if s.prompt_max_pixels is None:
            return view_size
        w, h = sample.image_size
        rh, rw = smart_resize(
            h, w, factor=s.patch_factor, min_pixels=s.min_pixels, max_pixels=s.prompt_max_pixels
        )
        return (rw, rh)

    def _values(self, sample: Sample, view_size: tuple[int, int], k: int) -> dict[str, Any]:
        w, h = self.prompt_size(sample, view_size)
        labels = ", ".join(str(i + 1) for i in range(k))
        return {"instruction": sample.instruction, "k": k, "width": w, "height": h, "labels": labels}

    def critic_messages(
        self, field: str, sample: Sample, view_size: tuple[int, int], k: int
    ) -> list[dict[str, Any]]:
        """The messages of a critic request, as :meth:`rank` sends them (``dry_run`` shows them too).

        Args:
            field: ``rank_list`` (listwise: every candidate in one request) or ``judge_one``.
            sample: The sample asked about.
            view_size: Size of the marked image the critic sees (the messages name it).
            k: Candidates drawn on it (1 for ``judge_one``).

        Returns:
            Chat messages; the image part is a placeholder the backend fills with the marked image.
        """
        prompts = self.settings_.prompts.for_benchmark(sample.benchmark)
        values = self._values(sample, view_size, k)
        return build_messages(prompts, render(getattr(prompts, field), values), values, view_size)

    def proposer_requests(self, sample: Sample, view_size: tuple[int, int]) -> list[RequestSpec]:
        """The proposer's request for one sample (a list: a backend call takes several).

        In ``greedy`` and ``sampling`` modes the request is the preset's official one
        (``propose_one`` with its system prompt, tools, layout and prefill); in ``sampling`` mode it
        asks for K texts, the greedy answer first (``greedy_first``), from one prefill. ``single_pass``
        asks for K points with gge's own ``propose_k`` (no prefill).
        """
        s = self.settings_
        prompts = s.prompts.for_benchmark(sample.benchmark)
        common = {"repetition_penalty": s.repetition_penalty, "max_new_tokens": s.max_new_tokens}
        if s.proposer == "single_pass":
            values = self._values(sample, view_size, s.k)
            text = render(prompts.propose_k, values)
            return [RequestSpec(build_messages(prompts, text, values, view_size), None, common)]
        values = self._values(sample, view_size, 1)
        messages = build_messages(prompts, render(prompts.propose_one, values), values, view_size)
        prefill = render(prompts.prefill, values) if prompts.prefill else None
        if s.proposer == "sampling" and s.k > 1:
            sampled = {
                **common,
                "num_sequences": s.k,
                "do_sample": True,
                "greedy_first": True,
                "temperature": s.temperature,
                "top_p": s.top_p,
                "top_k": s.top_k,
            }
            return [RequestSpec(messages, prefill, sampled)]
        return [RequestSpec(messages, prefill, {**common, "num_sequences": 1, "do_sample": False})]

    def _generate(
        self, backend: Backend, requests: list[GenerationRequest], what: str
    ) -> tuple[list[Generation], list[CostRecord]]:
        """The backend's answers to ``requests`` and each request's cost (stage ``what``, slot 0).

        A backend that measured a request's cost (``Generation.cost``) gives it; otherwise the call
        is timed here, each request taking an equal share, with the ``usage`` counts it reports.
        """
        self.calls[what] += 1
        start = time.perf_counter()
        out = backend.generate(requests)
        share = (time.perf_counter() - start) / max(1, len(requests))
        costs = []
        for g in out:
            for key, value in g.usage.items():
                self.usage[key] = self.usage.get(key, 0) + value
            measured = g.cost or CostRecord(
                "propose",
                input_tokens=g.usage.get("prompt_tokens"),
                output_tokens=g.usage.get("completion_tokens"),
                cached_tokens=g.usage.get("cached_tokens"),
                seconds=share,
                batch_size=len(requests),
            )
            costs.append(replace(measured, stage=what, slot=0, candidates=0))
        return out, costs

    def _yes_probability(
        self, backend: Backend, requests: list[GenerationRequest]
    ) -> tuple[list[float], list[CostRecord]]:
        """The pointwise critic's probabilities and each request's cost (stage ``judge``)."""
        s = self.settings_
        self.calls["rank"] += 1
        with_costs = getattr(backend, "yes_probability_with_costs", None)
        if callable(with_costs):
            probs, costs = with_costs(requests, s.yes, s.no)
            return list(probs), [replace(c, stage="judge") for c in costs]
        start = time.perf_counter()
        probs = backend.yes_probability(requests, s.yes, s.no)
        share = (time.perf_counter() - start) / max(1, len(requests))
        return probs, [CostRecord("judge", seconds=share, batch_size=len(requests)) for _ in requests]

    # -- proposer -------------------------------------------------------------------------------
    def propose(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Proposal]:
        """Candidates for each sample, batched over the samples.

        ``sampling``: candidate 1 is the greedy answer (the official protocol's), candidates 2..K are
        sampled, so ``selection.first`` equals the official number within the same run. An answer cut
        by the token budget is never parsed: its slot is unparsed and the prediction is marked
        ``truncated``.
        """
        s = self.settings_
        views = [self._view(self.backend, im) for im in images]
        requests: list[GenerationRequest] = []
        owners: list[int] = []
        for i, (sample, view) in enumerate(zip(samples, views, strict=True)):
            for spec in self.proposer_requests(sample, view.size):
                requests.append(
                    GenerationRequest(view, spec.messages, prefill=spec.prefill, **spec.generation)
                )
                owners.append(i)
        generations, request_costs = self._generate(self.backend, requests, "propose")
        texts: list[list[str]] = [[] for _ in samples]
        cut: list[list[bool]] = [[] for _ in samples]
        costs: list[list[CostRecord]] = [[] for _ in samples]
        for i, gen, cost in zip(owners, generations, request_costs, strict=True):
            # the request answered the slots after the earlier requests' (a single_pass answer: K)
            answered = s.k if s.proposer == "single_pass" else len(gen.texts)
            costs[i].append(replace(cost, slot=len(texts[i]), candidates=answered))
            texts[i] += gen.texts
            cut[i] += [bool(t) for t in gen.truncated] if gen.truncated else [False] * len(gen.texts)
        out = []
        for sample, view, ts, cs, spent in zip(samples, views, texts, cut, costs, strict=True):
            cands = answer_candidates(
                ts,
                proposer=s.proposer,
                k=s.k,
                box_pairs=s.box_pairs,
                convention=s.convention,
                image_size=sample.image_size,
                frame=self.prompt_size(sample, view.size),
                cut=cs,
            )
            ok = any(c.parsed for c in cands)
            out.append(
                Proposal(
                    cands,
                    raw=SAMPLE_SEPARATOR.join(ts),
                    format_error=not ok,
                    truncated=any(cs),
                    costs=tuple(spent),
                )
            )
        return out

    # -- critic ---------------------------------------------------------------------------------
    def rank(
        self, samples: Sequence[Sample], images: Sequence[Image.Image], proposals: Sequence[Proposal]
    ) -> list[Judgement]:
        """Critic scores for each sample's candidates (None for abstentions and skipped samples)."""
        s = self.settings_
        if s.critic == "none":
            return [Judgement(tuple(None for _ in p.candidates)) for p in proposals]
        backend = self.critic_backend
        # Only point candidates are drawn; a sample with fewer than two needs no critic.
        todo = [
            (i, [j for j, c in enumerate(p.candidates) if c.point is not None])
            for i, p in enumerate(proposals)
        ]
        todo = [(i, js) for i, js in todo if len(js) >= 2]
        results = [Judgement(tuple(None for _ in p.candidates)) for p in proposals]
        if not todo:
            return results
        if s.critic == "listwise":
            requests, marked = [], []
            for i, js in todo:
                view = self._view(backend, images[i])
                sx, sy = view.size[0] / samples[i].image_size[0], view.size[1] / samples[i].image_size[1]
                pts = [proposals[i].candidates[j].point for j in js]
                drawn = draw_markers(view, [(p[0] * sx, p[1] * sy) for p in pts if p is not None], s.markers)
                messages = self.critic_messages("rank_list", samples[i], view.size, len(js))
                requests.append(GenerationRequest(drawn, messages, max_new_tokens=s.critic_max_new_tokens))
                marked.append(js)
            gens, rank_costs = self._generate(backend, requests, "rank")
            for (i, js), gen, cost in zip(todo, gens, rank_costs, strict=True):
                text = gen.texts[0] if gen.texts else ""
                order = parse_ranking(text, len(js))
                bad = order is None
                order = list(range(len(js))) if order is None else order
                scores: list[float | None] = [None] * len(proposals[i].candidates)
                for pos, local in enumerate(order):
                    scores[js[local]] = float(len(js) - pos)
                results[i] = Judgement(tuple(scores), raw=text, format_error=bad, costs=(cost,))
            return results
        # pointwise: one marked image per candidate, one batched forward per sample
        for i, js in todo:
            view = self._view(backend, images[i])
            sx, sy = view.size[0] / samples[i].image_size[0], view.size[1] / samples[i].image_size[1]
            messages = self.critic_messages("judge_one", samples[i], view.size, 1)
            requests = []
            for j in js:
                p = proposals[i].candidates[j].point
                assert p is not None
                drawn = draw_markers(view, [(p[0] * sx, p[1] * sy)], s.markers)
                requests.append(GenerationRequest(drawn, messages, max_new_tokens=1))
            probs, judge_costs = self._yes_probability(backend, requests)
            scores = [None] * len(proposals[i].candidates)
            for j, prob in zip(js, probs, strict=True):
                scores[j] = float(prob)
            spent = tuple(replace(c, slot=j, candidates=1) for j, c in zip(js, judge_costs, strict=True))
            results[i] = Judgement(tuple(scores), costs=spent)
        return results

    # -- the loop's interface -------------------------------------------------------------------
    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """Propose, then rank, for a batch of samples read from their image files."""
        images = []
        for sample in samples:
            try:
                with open_image(sample.image_path) as im:
                    images.append(im.convert("RGB"))
            except OSError as e:
                raise GgeError(
                    f"{sample.benchmark} {sample.id}: cannot read {sample.image_path}: {e}"
                ) from None
        return self.predict_images(samples, images)

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        """Propose and rank for samples whose screenshots are already decoded."""
        proposals = self.propose(samples, images)
        judgements = self.rank(samples, images, proposals)
        out = []
        for sample, prop, judge in zip(samples, proposals, judgements, strict=True):
            cands = tuple(
                Candidate(c.point, score, c.raw, c.parsed)
                for c, score in zip(prop.candidates, judge.scores, strict=True)
            )
            out.append(
                Prediction(
                    sample.benchmark,
                    sample.id,
                    cands,
                    format_error=prop.format_error,
                    raw=prop.raw,
                    critic_format_error=judge.format_error,
                    critic_raw=judge.raw,
                    truncated=prop.truncated,
                    costs=prop.costs + judge.costs,
                )
            )
        return out

    def settings(self) -> dict[str, Any]:
        """The reproducibility record: adapter settings, backends, model calls and token usage."""
        rec: dict[str, Any] = {"adapter": self.settings_.record(), "backend": self.backend.settings()}
        if self.critic_backend is not self.backend:
            rec["critic_backend"] = self.critic_backend.settings()
        rec["calls"] = dict(self.calls)
        rec["usage"] = dict(self.usage)
        return rec
