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
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from PIL import Image

from gge.errors import GgeError
from gge.geometry import CONVENTIONS, to_original
from gge.models.base import Backend, Generation, GenerationRequest, Judgement, Proposal
from gge.models.markers import MarkerStyle, draw_markers
from gge.models.parsing import parse_points, parse_ranking
from gge.types import Candidate, Prediction, Sample

PROPOSER_MODES = ("single_pass", "sampling", "greedy")
CRITIC_MODES = ("listwise", "pointwise", "none")
SAMPLE_SEPARATOR = "\n<|gge-sample|>\n"
"""Joins the texts of a sampling proposer in a prediction's ``raw`` field."""


@dataclass(frozen=True)
class Prompts:
    """Prompt templates.

    Placeholders: ``{instruction}``, ``{k}``, ``{width}``, ``{height}`` (of the image the model
    sees), ``{labels}`` (the markers' labels, e.g. ``1, 2, 3``).

    Attributes:
        name: Name recorded with every result.
        system: Optional system message.
        propose_one: Ask for one point (``greedy`` and ``sampling`` proposers).
        propose_k: Ask for ``{k}`` candidate points in one answer (``single_pass``).
        rank_list: Ask to rank the numbered markers (``listwise`` critic).
        judge_one: Ask whether the one marker hits the target, answered Yes/No (``pointwise``).
    """

    name: str = "default"
    system: str | None = None
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

    def hashes(self) -> dict[str, str]:
        """A short SHA-256 of each template's text (recorded with results)."""
        return {
            key: hashlib.sha256(str(value).encode()).hexdigest()[:16]
            for key, value in asdict(self).items()
            if key != "name" and value is not None
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
        repetition_penalty: Repetition penalty of every generation (1.0 = off).
        max_new_tokens: Proposer generation budget.
        critic_max_new_tokens: Listwise critic generation budget.
        prompts: Prompt templates.
        markers: Marker style for the critic.
        yes: The pointwise critic's positive answer word.
        no: Its negative answer word.
    """

    preset: str = "custom"
    convention: str = "abs_resized"
    proposer: str = "single_pass"
    critic: str = "listwise"
    k: int = 5
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float = 1.0
    max_new_tokens: int = 256
    critic_max_new_tokens: int = 32
    prompts: Prompts = field(default_factory=Prompts)
    markers: MarkerStyle = field(default_factory=MarkerStyle)
    yes: str = "Yes"
    no: str = "No"

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


def _messages(prompts: Prompts, text: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if prompts.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": prompts.system}]})
    messages.append({"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]})
    return messages


class GroundingPolicy:
    """A proposer and a critic over one backend (or a separate critic backend).

    Args:
        backend: The proposer's model.
        settings: Prompts, modes, convention, markers.
        critic_backend: A separate critic model (default: the same backend, as in COPC).
    """

    needs_images = True

    def __init__(
        self, backend: Backend, settings: AdapterSettings, critic_backend: Backend | None = None
    ) -> None:
        self.backend = backend
        self.critic_backend = critic_backend or backend
        self.settings_ = settings
        self.calls = {"propose": 0, "rank": 0}
        self.usage: dict[str, int] = {}

    # -- helpers --------------------------------------------------------------------------------
    def _view(self, backend: Backend, image: Image.Image) -> Image.Image:
        """The screenshot at the resolution the model sees."""
        image = image.convert("RGB") if image.mode != "RGB" else image
        seen = backend.seen_size(*image.size)
        return image if seen == image.size else image.resize(seen, Image.Resampling.BICUBIC)

    def _prompt(self, template: str, sample: Sample, view: Image.Image, k: int) -> str:
        labels = ", ".join(str(i + 1) for i in range(k))
        try:
            return template.format(
                instruction=sample.instruction, k=k, width=view.size[0], height=view.size[1], labels=labels
            )
        except (KeyError, IndexError, ValueError) as e:
            raise GgeError(f"prompt template {template[:60]!r}...: bad placeholder {e}") from None

    def _generate(self, backend: Backend, requests: list[GenerationRequest], what: str) -> list[Generation]:
        self.calls[what] += 1
        out = backend.generate(requests)
        for g in out:
            for key, value in g.usage.items():
                self.usage[key] = self.usage.get(key, 0) + value
        return out

    # -- proposer -------------------------------------------------------------------------------
    def _candidate(self, p: tuple[float, float] | None, sample: Sample, view: Image.Image) -> Candidate:
        """A parsed point (model units) as a candidate in original pixels; None stays an abstention."""
        if p is None:
            return Candidate(None)
        return Candidate(to_original(p[0], p[1], self.settings_.convention, sample.image_size, view.size))

    def propose(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Proposal]:
        """Candidates for each sample: one generation per sample, batched over the samples."""
        s = self.settings_
        views = [self._view(self.backend, im) for im in images]
        requests = []
        for sample, view in zip(samples, views, strict=True):
            if s.proposer == "single_pass":
                text = self._prompt(s.prompts.propose_k, sample, view, s.k)
                req = GenerationRequest(
                    view,
                    _messages(s.prompts, text),
                    max_new_tokens=s.max_new_tokens,
                    repetition_penalty=s.repetition_penalty,
                )
            else:
                text = self._prompt(s.prompts.propose_one, sample, view, 1)
                sampling = s.proposer == "sampling"
                req = GenerationRequest(
                    view,
                    _messages(s.prompts, text),
                    num_sequences=s.k if sampling else 1,
                    do_sample=sampling,
                    temperature=s.temperature,
                    top_p=s.top_p,
                    top_k=s.top_k,
                    repetition_penalty=s.repetition_penalty,
                    max_new_tokens=s.max_new_tokens,
                )
            requests.append(req)
        generations = self._generate(self.backend, requests, "propose")
        out = []
        for sample, view, gen in zip(samples, views, generations, strict=True):
            cands: tuple[Candidate, ...]
            if s.proposer == "single_pass":
                parsed = parse_points(gen.texts[0] if gen.texts else "", max_points=s.k)
                cands = tuple(self._candidate(p, sample, view) for p in parsed.points)
            else:
                # One candidate per sampled text; an unparseable text keeps its slot (never a hit).
                slots = [parse_points(text, max_points=1) for text in gen.texts]
                cands = tuple(
                    Candidate(None, raw=text, parsed=False)
                    if p.format_error
                    else self._candidate(p.points[0], sample, view)
                    for p, text in zip(slots, gen.texts, strict=True)
                )
            ok = any(c.parsed for c in cands)
            out.append(Proposal(cands, raw=SAMPLE_SEPARATOR.join(gen.texts), format_error=not ok))
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
                text = self._prompt(s.prompts.rank_list, samples[i], view, len(js))
                requests.append(
                    GenerationRequest(
                        drawn, _messages(s.prompts, text), max_new_tokens=s.critic_max_new_tokens
                    )
                )
                marked.append(js)
            gens = self._generate(backend, requests, "rank")
            for (i, js), gen in zip(todo, gens, strict=True):
                text = gen.texts[0] if gen.texts else ""
                order = parse_ranking(text, len(js))
                bad = order is None
                order = list(range(len(js))) if order is None else order
                scores: list[float | None] = [None] * len(proposals[i].candidates)
                for pos, local in enumerate(order):
                    scores[js[local]] = float(len(js) - pos)
                results[i] = Judgement(tuple(scores), raw=text, format_error=bad)
            return results
        # pointwise: one marked image per candidate, one batched forward per sample
        for i, js in todo:
            view = self._view(backend, images[i])
            sx, sy = view.size[0] / samples[i].image_size[0], view.size[1] / samples[i].image_size[1]
            text = self._prompt(s.prompts.judge_one, samples[i], view, 1)
            requests = []
            for j in js:
                p = proposals[i].candidates[j].point
                assert p is not None
                drawn = draw_markers(view, [(p[0] * sx, p[1] * sy)], s.markers)
                requests.append(GenerationRequest(drawn, _messages(s.prompts, text), max_new_tokens=1))
            self.calls["rank"] += 1
            probs = backend.yes_probability(requests, s.yes, s.no)
            scores = [None] * len(proposals[i].candidates)
            for j, prob in zip(js, probs, strict=True):
                scores[j] = float(prob)
            results[i] = Judgement(tuple(scores))
        return results

    # -- the loop's interface -------------------------------------------------------------------
    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """Propose, then rank, for a batch of samples read from their image files."""
        images = []
        for sample in samples:
            try:
                with Image.open(sample.image_path) as im:
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
