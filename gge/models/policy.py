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
- **refine** (``refine=zoom``, off by default): after the critic, the family's own one-point request
  again on a crop around the critic's pick (rules in :mod:`gge.models.refine`), batched;
- **coordinates**: the model's points are converted once, from the preset's convention, to
  original-image pixels (a refine answer from the crop's frame).

The templates and the chat messages they make are :mod:`gge.models.prompts`'s.

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

import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from PIL import Image

from gge.benchmarks.images import open_image
from gge.errors import GgeError
from gge.geometry import CONVENTIONS, smart_resize
from gge.models.answers import answer_candidates as answer_candidates
from gge.models.base import Backend, Generation, GenerationRequest, Judgement, Proposal
from gge.models.counters import PartCounters
from gge.models.markers import MarkedView, MarkerStyle, mark_view
from gge.models.parsing import parse_ranking
from gge.models.prompts import PLACEHOLDERS as PLACEHOLDERS
from gge.models.prompts import PROMPT_FIELDS as PROMPT_FIELDS
from gge.models.prompts import USER_LAYOUTS as USER_LAYOUTS
from gge.models.prompts import Prompts as Prompts
from gge.models.prompts import build_messages as build_messages
from gge.models.prompts import render as render
from gge.models.refine import Crop, check_refine, crop_region, from_crop, should_refine
from gge.scoring.selection import select
from gge.types import Candidate, CostRecord, Prediction, Refinement, Sample

PROPOSER_MODES = ("single_pass", "sampling", "greedy")
CRITIC_MODES = ("listwise", "pointwise", "none")
SAMPLE_SEPARATOR = "\n<|gge-sample|>\n"
"""Joins the texts of a sampling proposer in a prediction's ``raw`` field."""


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
        refine: ``none`` or ``zoom``: after the critic, a second look at a crop around its pick (the
            first candidate when nothing is scored), asked with the family's own grounding request
            (rules in :mod:`gge.models.refine`); its answer is ``Prediction.refine``.
        refine_zoom: The crop is the screenshot's width and height divided by this (> 1).
        refine_when: ``always``, ``disagree`` or ``low_score`` (:data:`gge.models.refine.REFINE_WHEN`).
        refine_radius: ``disagree``: the fraction of the image diagonal (>= 0).
        refine_threshold: ``low_score``: the pointwise critic's probability under which it runs.
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
    refine: str = "none"
    refine_zoom: float = 2.0
    refine_when: str = "always"
    refine_radius: float = 0.05
    refine_threshold: float = 0.5

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
        check_refine(
            self.refine,
            self.refine_zoom,
            self.refine_when,
            self.refine_radius,
            self.refine_threshold,
            self.critic,
        )

    def record(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict, with the prompt hashes."""
        out = asdict(self)
        out["prompts"] = {"name": self.prompts.name, "sha256": self.prompts.hashes()}
        out["markers"]["colors"] = list(self.markers.colors)
        return out


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


def _marked_request(
    backend: Backend, view: MarkedView, messages: list[dict[str, Any]], **generation: Any
) -> GenerationRequest:
    """A critic's request for a marked view, as the backend takes it.

    As marks on the screenshot where its class says ``takes_marked_views`` (no copy of the whole
    screenshot is made), else as the whole marked image.
    """
    if getattr(type(backend), "takes_marked_views", False) is True:
        return GenerationRequest(view.base, messages, marks=view, **generation)
    return GenerationRequest(view.image(), messages, **generation)


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
        self.calls = {"propose": 0, "rank": 0, **({"refine": 0} if settings.refine != "none" else {})}
        self.usage: dict[str, int] = {}
        self._parts = PartCounters()  # client processes' counters (absorb)
        self._lock = threading.Lock()  # calls and usage, counted from many threads in a windowed run

    # -- what it declares (gge.models.base.Policy) --------------------------------------------
    @property
    def proposer_mode(self) -> str:
        """The proposer mode of its settings."""
        return self.settings_.proposer

    @property
    def critic_mode(self) -> str:
        """The critic mode of its settings."""
        return self.settings_.critic

    @property
    def concurrent(self) -> bool:
        """Whether every backend it calls declares ``concurrent`` (endpoints).

        It may then be called from many threads at once, one sample each, its requests sharing their
        window.
        """
        return all(getattr(b, "concurrent", False) is True for b in (self.backend, self.critic_backend))

    def window_summary(self) -> dict[str, Any] | None:
        """What its proposer backend's request window did (None: a backend without one)."""
        summary = getattr(self.backend, "window_summary", None)
        return summary() if callable(summary) else None

    def cancel(self, on: bool = True) -> None:
        """Tell its backends to stop sending (those that can: an endpoint's waiting requests fail).

        Args:
            on: False lets them send again.
        """
        for backend in (self.backend, self.critic_backend):
            stop = getattr(backend, "cancel", None)
            if callable(stop):
                stop(on)

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
        (:meth:`official_request`); in ``sampling`` mode it asks for K texts, the greedy answer first
        (``greedy_first``), from one prefill. ``single_pass`` asks for K points with gge's own
        ``propose_k`` (no prefill).
        """
        s = self.settings_
        common = {"repetition_penalty": s.repetition_penalty, "max_new_tokens": s.max_new_tokens}
        if s.proposer == "single_pass":
            prompts = s.prompts.for_benchmark(sample.benchmark)
            values = self._values(sample, view_size, s.k)
            text = render(prompts.propose_k, values)
            return [RequestSpec(build_messages(prompts, text, values, view_size), None, common)]
        official = self.official_request(sample, view_size)
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
            return [replace(official, generation=sampled)]
        return [official]

    def official_request(self, sample: Sample, view_size: tuple[int, int]) -> RequestSpec:
        """The family's own one-point request, greedy (a ``greedy`` proposer's, a refine request's).

        ``propose_one`` with its system prompt, tools, layout and prefill; a refine request sends it with
        the crop standing for the screenshot.
        """
        s = self.settings_
        prompts = s.prompts.for_benchmark(sample.benchmark)
        values = self._values(sample, view_size, 1)
        messages = build_messages(prompts, render(prompts.propose_one, values), values, view_size)
        prefill = render(prompts.prefill, values) if prompts.prefill else None
        greedy = {"num_sequences": 1, "do_sample": False}
        common = {"repetition_penalty": s.repetition_penalty, "max_new_tokens": s.max_new_tokens}
        return RequestSpec(messages, prefill, {**common, **greedy})

    def refine_request(self, sample: Sample, crop: Crop, view_size: tuple[int, int]) -> RequestSpec:
        """The refine stage's request for one sample: :meth:`official_request` on the crop.

        The crop stands for the screenshot: ``view_size`` is the size the model sees it at (the pixel
        budget applied to the crop) and ``crop.size`` its original size (what a ``prompt_max_pixels``
        preset states), so its answer reads as a proposer's answer on a screenshot of that size.
        """
        return self.official_request(replace(sample, image_size=crop.size), view_size)

    def _generate(
        self, backend: Backend, requests: list[GenerationRequest], what: str
    ) -> tuple[list[Generation], list[CostRecord]]:
        """The backend's answers to ``requests`` and each request's cost (stage ``what``, slot 0).

        A backend that measured a request's cost (``Generation.cost``) gives it; otherwise the call
        is timed here, each request taking an equal share, with the ``usage`` counts it reports.
        """
        with self._lock:
            self.calls[what] += 1
        start = time.perf_counter()
        out = backend.generate(requests)
        share = (time.perf_counter() - start) / max(1, len(requests))
        costs = []
        for g in out:
            with self._lock:
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
        with self._lock:
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
        for i, (sample, image, view) in enumerate(zip(samples, images, views, strict=True)):
            # the screenshot as decoded, unchanged: an endpoint may send its file's bytes
            unchanged = view is image or (view.size == image.size and image.mode != "RGB")
            file = sample.image_path if unchanged and image.size == sample.image_size else None
            for spec in self.proposer_requests(sample, view.size):
                requests.append(
                    GenerationRequest(
                        view, spec.messages, prefill=spec.prefill, image_file=file, **spec.generation
                    )
                )
                owners.append(i)
        generations, request_costs = self._generate(self.backend, requests, "propose")
        texts: list[list[str]] = [[] for _ in samples]
        cut: list[list[bool]] = [[] for _ in samples]
        costs: list[list[CostRecord]] = [[] for _ in samples]
        for i, gen, cost in zip(owners, generations, request_costs, strict=True):
            # the request answered the slots after the earlier requests' (a single_pass answer: the
            # points it lists, set once they are read below)
            answered = len(gen.texts)
            if gen.part_costs:  # answered in parts (an endpoint's greedy answer, then the samples)
                costs[i] += [replace(c, stage="propose", slot=len(texts[i]) + c.slot) for c in gen.part_costs]
            else:
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
            if s.proposer == "single_pass":  # its one answer gave the points it listed, up to K
                spent = [replace(c, candidates=len(cands)) for c in spent]
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
        self,
        samples: Sequence[Sample],
        images: Sequence[Image.Image],
        proposals: Sequence[Proposal],
        labels: Sequence[Sequence[str]] | None = None,
    ) -> list[Judgement]:
        """Critic scores for each sample's candidates (None for abstentions and skipped samples).

        ``labels``: a listwise critic's marker numbers per sample, over its point candidates (default
        1..n; a permutation draws candidate j with another number, and the answer's numbers are read
        back to the candidates that bore them: the label probe of :mod:`gge.run.pool_run`).
        """
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
            requests = []
            for i, js in todo:
                view = self._view(backend, images[i])
                sx, sy = view.size[0] / samples[i].image_size[0], view.size[1] / samples[i].image_size[1]
                pts = [
                    (p[0] * sx, p[1] * sy) for j in js if (p := proposals[i].candidates[j].point) is not None
                ]
                drawn = mark_view(view, pts, s.markers, None if labels is None else list(labels[i]))
                messages = self.critic_messages("rank_list", samples[i], view.size, len(js))
                budget = s.critic_max_new_tokens
                requests.append(_marked_request(backend, drawn, messages, max_new_tokens=budget))
            gens, rank_costs = self._generate(backend, requests, "rank")
            for (i, js), gen, cost in zip(todo, gens, rank_costs, strict=True):
                text = gen.texts[0] if gen.texts else ""
                order = parse_ranking(text, len(js))
                if (
                    order is not None and labels is not None
                ):  # the numbers named -> the candidates bearing them
                    order = [list(labels[i]).index(str(o + 1)) for o in order]
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
                drawn = mark_view(view, [(p[0] * sx, p[1] * sy)], s.markers)
                requests.append(_marked_request(backend, drawn, messages, max_new_tokens=1))
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
        """Propose, rank and (with ``refine=zoom``) refine for samples whose screenshots are decoded."""
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
        return self.refine(samples, images, out) if self.settings_.refine != "none" else out

    # -- refine ---------------------------------------------------------------------------------
    def refine(
        self, samples: Sequence[Sample], images: Sequence[Image.Image], predictions: Sequence[Prediction]
    ) -> list[Prediction]:
        """The predictions with the zoom-in stage's answer (``Prediction.refine``) and its cost.

        The base pick is the ``critic`` strategy's (the first candidate when nothing is scored); a
        sample without a pick, with an abstaining pick, or whose trigger (``refine_when``) says no is
        not refined. The others' requests (:meth:`refine_request` on the crop, :mod:`gge.models.refine`)
        go to the proposer's backend in one call; each answer is read in the preset's convention in
        the crop's frame and mapped to original pixels here, once.
        """
        s = self.settings_
        out = [replace(p, refine=Refinement(triggered=False)) for p in predictions]
        requests: list[GenerationRequest] = []
        jobs: list[tuple[int, Crop, tuple[int, int]]] = []
        for i, (sample, image, pred) in enumerate(zip(samples, images, predictions, strict=True)):
            pick = select("critic", pred.candidates, sample.image_size)
            if pick is None or pick.point is None:
                continue
            if not should_refine(
                s.refine_when,
                pick,
                pred.candidates,
                sample.image_size,
                radius=s.refine_radius,
                threshold=s.refine_threshold,
            ):
                continue
            crop = crop_region(pick.point, sample.image_size, image.size, s.refine_zoom)
            view = self._view(self.backend, image.crop(crop.box))
            spec = self.refine_request(sample, crop, view.size)
            requests.append(GenerationRequest(view, spec.messages, prefill=spec.prefill, **spec.generation))
            jobs.append((i, crop, view.size))
        if not requests:
            return out
        generations, costs = self._generate(self.backend, requests, "refine")
        for (i, crop, seen), gen, cost in zip(jobs, generations, costs, strict=True):
            text = gen.texts[0] if gen.texts else ""
            (answer,) = answer_candidates(
                [text],
                proposer="greedy",
                k=1,
                box_pairs=s.box_pairs,
                convention=s.convention,
                image_size=crop.size,
                frame=self.prompt_size(replace(samples[i], image_size=crop.size), seen),
                cut=[bool(gen.truncated and gen.truncated[0])],
            )
            point = None if answer.point is None else from_crop(answer.point, crop)
            refined = Refinement("critic", True, point, crop.window, text, format_error=not answer.parsed)
            out[i] = replace(out[i], refine=refined, costs=(*out[i].costs, cost))
        return out

    def settings(self) -> dict[str, Any]:
        """The reproducibility record: adapter settings, backends, model calls and token usage.

        ``calls`` and ``usage`` count this policy's calls and those of the client processes' policies
        it absorbed (:meth:`absorb`).
        """
        rec: dict[str, Any] = {"adapter": self.settings_.record(), "backend": self.backend.settings()}
        if self.critic_backend is not self.backend:
            rec["critic_backend"] = self.critic_backend.settings()
        rec.update(self._parts.summed(self.counters()))
        return rec

    def counters(self) -> dict[str, dict[str, int]]:
        """This policy's own model calls by stage and token usage (``settings()`` without its parts)."""
        return {"calls": dict(self.calls), "usage": dict(self.usage)}

    def absorb(self, key: str, part: dict[str, dict[str, int]]) -> None:
        """Keep a client process's policy's latest :meth:`counters` (:mod:`gge.run.client_procs`)."""
        self._parts.keep(key, part)
