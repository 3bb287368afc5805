"""Core value types shared by every part of gge.

All types are frozen dataclasses: a sample, a target region, a model's candidates and a scored
result can be passed between processes, hashed and compared without surprises.

Example:
    >>> box = Box(10, 20, 30, 40)
    >>> box.contains(30, 40), box.contains(30.5, 40)
    (True, False)
    >>> Candidate((12.0, 25.0), score=0.9).abstains
    False
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from gge.geometry import point_in_box, point_in_polygon

Point = tuple[float, float]
FAR = 1e9
"""Candidate coordinates are clamped to ``[-FAR, FAR]`` pixels: far off any screen, and small enough that
every sum, mean and distance over candidates stays finite (a policy emitting ``1e19`` or ``1e308``
must not overflow selection, scoring or drawing)."""
LabelValue = str | tuple[str, ...]
"""A breakdown label: one value, or several for multi-label keys (OSWorld-G categories)."""


def label_values(value: LabelValue | None) -> tuple[str, ...]:
    """The values of a label as a tuple (a multi-label key gives several; a missing key none).

    Example:
        >>> label_values("web"), label_values(("a", "b")), label_values(None)
        (('web',), ('a', 'b'), ())
    """
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True)
class Box:
    """An axis-aligned target box, tested with inclusive edges.

    Coordinates are stored as the benchmark gives them, after its official load-time rule (xywh
    converted, corners swapped where the benchmark swaps them, never otherwise). ``space`` says how
    the official scorer compares: ``"pixel"`` tests the pixel point against the pixel box;
    ``"normalized"`` divides the point by ``size`` and tests it against a box in [0, 1] units.
    ``integer_point`` makes the test take the point's integer pixel first, as a scorer that only
    accepts int points does (showdown-clicks): each coordinate truncated toward zero, Python's
    ``int()``, so x=100.6 tests as 100 (a hit against x2=100, a miss against x1=101). ``strict``
    excludes the edges, ``x1 < x < x2 and y1 < y < y2``, as GroundUI's scorer does.

    Attributes:
        x1: Left edge.
        y1: Top edge.
        x2: Right edge.
        y2: Bottom edge.
        space: ``"pixel"`` or ``"normalized"`` (the box's own units).
        size: Image (width, height); required when ``space`` is ``"normalized"``.
        integer_point: Test ``(int(x), int(y))`` instead of the point itself (before any
            normalisation); False for every benchmark whose official scorer tests the point as given.
        strict: The edges are not inside (GroundUI); False: they are (every other benchmark).

    Example:
        >>> Box(0, 0, 100, 10).contains(100.6, 5), Box(0, 0, 100, 10, integer_point=True).contains(100.6, 5)
        (False, True)
        >>> Box(0, 0, 100, 10).contains(100, 5), Box(0, 0, 100, 10, strict=True).contains(100, 5)
        (True, False)
    """

    x1: float
    y1: float
    x2: float
    y2: float
    space: Literal["pixel", "normalized"] = "pixel"
    size: tuple[int, int] | None = None
    integer_point: bool = False
    strict: bool = False

    def __post_init__(self) -> None:
        if self.space == "normalized" and self.size is None:
            raise ValueError("a normalized Box needs the image size")

    def contains(self, x: float, y: float) -> bool:
        """Whether the pixel point (x, y) hits the box under the benchmark's official test."""
        if self.integer_point:
            x, y = float(math.trunc(x)), float(math.trunc(y))
        if self.space == "normalized":
            assert self.size is not None
            x, y = x / self.size[0], y / self.size[1]
        if self.strict:
            return self.x1 < x < self.x2 and self.y1 < y < self.y2
        return point_in_box(x, y, self.x1, self.y1, self.x2, self.y2)

    def pixel_box(self) -> tuple[float, float, float, float]:
        """The box in pixels of the original image (for drawing and reporting)."""
        if self.space == "normalized":
            assert self.size is not None
            w, h = self.size
            return (self.x1 * w, self.y1 * h, self.x2 * w, self.y2 * h)
        return (self.x1, self.y1, self.x2, self.y2)

    @property
    def degenerate(self) -> bool:
        """True for inverted or zero-area boxes (kept with the official semantics)."""
        return self.x2 <= self.x1 or self.y2 <= self.y1

    @property
    def kind(self) -> str:
        """Short name of the region kind."""
        return "bbox"


@dataclass(frozen=True)
class Polygon:
    """A polygon target, tested by even-odd ray casting (OSWorld-G's official rule).

    Attributes:
        vertices: The vertices in pixels, in order; the polygon closes itself.
    """

    vertices: tuple[Point, ...]

    def contains(self, x: float, y: float) -> bool:
        """Whether the pixel point (x, y) lies inside by the even-odd rule."""
        return point_in_polygon(x, y, self.vertices)

    def pixel_box(self) -> tuple[float, float, float, float]:
        """The bounding box of the polygon in pixels."""
        xs = [v[0] for v in self.vertices]
        ys = [v[1] for v in self.vertices]
        return (min(xs), min(ys), max(xs), max(ys))

    @property
    def degenerate(self) -> bool:
        """True when fewer than three vertices are given."""
        return len(self.vertices) < 3

    @property
    def kind(self) -> str:
        """Short name of the region kind."""
        return "polygon"


@dataclass(frozen=True)
class Absent:
    """The target is not on the screen: only an abstention is correct (OSWorld-G refusal).

    Example:
        >>> Absent() == Absent(abstention_hits=True), Absent(abstention_hits=False).kind
        (True, 'refusal')

    Attributes:
        abstention_hits: Whether an abstention hits it: True is the official rule; False makes the
            sample a plain miss that nothing hits, not even an abstention (OSWorld-G's
            ``refusals=miss``, as harnesses that keep refusals as ``[0, 0, 0, 0]`` boxes count them).
    """

    abstention_hits: bool = True

    def contains(self, x: float, y: float) -> bool:
        """No point hits an absent target."""
        return False

    def pixel_box(self) -> None:
        """An absent target has no box."""
        return None

    @property
    def degenerate(self) -> bool:
        """An absent target is never degenerate."""
        return False

    @property
    def kind(self) -> str:
        """Short name of the region kind."""
        return "refusal"


Region = Box | Polygon | Absent


@dataclass(frozen=True)
class Sample:
    """One grounding task: a screenshot, an instruction and the target region.

    Attributes:
        benchmark: Registered benchmark name (``screenspot_pro``...).
        id: Native id, unique within the benchmark (FORMATS.md, "Sample ids").
        image_path: Absolute path of the screenshot.
        image_size: (width, height) in pixels: from the record, else from the image header.
        instruction: The text the model grounds.
        region: The target, with the benchmark's official hit test.
        labels: Breakdown labels named after the official record fields.
        decoy: A deceptive region beside the target (RUC's ``dark_box``), or None: a pick inside it
            and not on the target is a deceptive click (gge's rule, :mod:`gge.scoring.metrics`).
    """

    benchmark: str
    id: str
    image_path: str
    image_size: tuple[int, int]
    instruction: str
    region: Region
    labels: Mapping[str, LabelValue] = field(default_factory=dict)
    decoy: Region | None = None


@dataclass(frozen=True)
class Candidate:
    """One proposed click point in original-image pixels, or an abstention.

    Attributes:
        point: (x, y) in pixels of the original screenshot; ``None`` means the model abstained
            (said the element is not there).
        score: The critic's score for this candidate, if a critic ran.
        raw: The model text this candidate was parsed from (kept for inspection).
        parsed: False for the slot of an answer that could not be parsed (one of K sampled texts):
            it keeps its place in proposer order, never hits and is not an abstention.

    A coordinate beyond :data:`FAR` (infinite included) is clamped to it, so the point stays a miss
    off the screen; a NaN coordinate makes the slot unparsed.

    Example:
        >>> Candidate((1e19, -float("inf"))).point
        (1000000000.0, -1000000000.0)
        >>> Candidate((float("nan"), 3.0)).parsed
        False
    """

    point: Point | None
    score: float | None = None
    raw: str = ""
    parsed: bool = True

    def __post_init__(self) -> None:
        if self.point is None:
            return
        x, y = self.point
        if math.isnan(x) or math.isnan(y):
            object.__setattr__(self, "point", None)
            object.__setattr__(self, "parsed", False)
        elif not (-FAR <= x <= FAR and -FAR <= y <= FAR):
            object.__setattr__(self, "point", (min(max(x, -FAR), FAR), min(max(y, -FAR), FAR)))

    @property
    def abstains(self) -> bool:
        """True when the candidate is an abstention (a parsed answer saying the target is absent)."""
        return self.point is None and self.parsed


STAGES: tuple[str, ...] = ("propose", "rank", "judge", "refine")
"""The stages a model request belongs to: the proposer's answers, a listwise critic's ranking, a
pointwise critic's judgement of one candidate, the zoom-in refine request."""


@dataclass(frozen=True)
class CostRecord:
    """What one model request of one sample cost (the cost ledger's line).

    A request that ran in a batch records this sample's own tokens (its unpadded prompt and answers,
    never the batch's padding) and an equal share of the batch's wall time.

    Attributes:
        stage: One of :data:`STAGES`.
        input_tokens: Prompt tokens as the request's answers consumed them, image tokens included:
            a request for n sequences from one prefill counts its prompt n times, as n separate
            calls (or an endpoint's greedy-first pair of requests) would (None: the backend does not
            say).
        image_tokens: The image tokens among ``input_tokens`` (None: unknown, e.g. an endpoint that
            reports only its prompt's total).
        output_tokens: Generated tokens, every returned sequence counted (0 for a forward that
            reads one token's probability).
        cached_tokens: The tokens among ``input_tokens`` served from a cache instead of computed: an
            endpoint's ``usage.prompt_tokens_details.cached_tokens``, or on the one-prefill sampling
            path the prompt its n continuations read from the one prefill, ``(n - 1) x (prompt - 1)``
            (None: the backend does not say). Never more than ``input_tokens``.
        seconds: This sample's share of the request's wall time (CUDA-synchronised on a GPU).
        prefill_seconds: The part of ``seconds`` spent on the prompt (paid whatever the number of
            candidates), where the backend times it apart; None: not split.
        batch_size: Requests in the batch the request ran in.
        slot: The first candidate slot (0-based, proposer order) the request answered or judged.
        candidates: How many slots from ``slot`` it answered or judged; 0: a request about all of
            them at once whose cost does not grow with them (a listwise ranking, a refine request).
        window: An endpoint's request window when the request was sent: the requests it let be in
            flight at once (:mod:`gge.models.window`; the ledger's record of the window over the run);
            None for a backend without one.

    Example:
        >>> r = CostRecord("judge", input_tokens=120, image_tokens=100, seconds=0.5, slot=2, candidates=1)
        >>> r.text_tokens, r.total_tokens
        (20, 120)
        >>> two = CostRecord("propose", input_tokens=200, output_tokens=14, cached_tokens=99, candidates=2)
        >>> two.computed_input_tokens, two.total_tokens  # the second answer read the prompt from a cache
        (101, 115)
    """

    stage: str
    input_tokens: int | None = None
    image_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    seconds: float | None = None
    prefill_seconds: float | None = None
    batch_size: int = 1
    slot: int = 0
    candidates: int = 0
    window: int | None = None

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"unknown cost stage {self.stage!r}; known: {', '.join(STAGES)}")
        for part in ("image_tokens", "cached_tokens"):
            n = getattr(self, part)
            if n is not None and self.input_tokens is not None and n > self.input_tokens:
                raise ValueError(f"{part} ({n}) cannot exceed input_tokens ({self.input_tokens})")

    @property
    def text_tokens(self) -> int | None:
        """Prompt tokens that are not image tokens (None when either count is unknown)."""
        if self.input_tokens is None or self.image_tokens is None:
            return None
        return self.input_tokens - self.image_tokens

    @property
    def computed_input_tokens(self) -> int | None:
        """Prompt tokens the model computed: ``input_tokens`` less those served from a cache."""
        if self.input_tokens is None:
            return None
        return self.input_tokens - (self.cached_tokens or 0)

    @property
    def total_tokens(self) -> int | None:
        """The tokens the model computed: prompt tokens not served from a cache, plus generated ones.

        The ledger's unit of token cost, the same on every backend: an endpoint's greedy-first pair
        and the transformers one-prefill path both count one prompt computed for K answers (None
        when the prompt's count is unknown).
        """
        computed = self.computed_input_tokens
        return None if computed is None else computed + (self.output_tokens or 0)


@dataclass(frozen=True)
class Refinement:
    """What a refine stage (``model.refine=zoom``) answered for one sample.

    Attributes:
        base: The selection strategy whose pick was refined (``critic``; its pick is the first
            candidate when no critic scored).
        triggered: Whether the stage ran for this sample (``model.refine_when``).
        point: The refined point in original pixels; None: the base pick stands (the stage did
            not run, the base pick abstains or is missing, or the refine answer was unparseable).
        window: The crop (x1, y1, x2, y2) in original pixels the refine request saw, or None.
        raw: The refine request's text.
        format_error: The refine answer was unparseable (the base pick stands).
    """

    base: str = "critic"
    triggered: bool = False
    point: Point | None = None
    window: tuple[float, float, float, float] | None = None
    raw: str = ""
    format_error: bool = False


@dataclass(frozen=True)
class Prediction:
    """What a model answered for one sample.

    Attributes:
        benchmark: Benchmark name.
        id: Native sample id.
        candidates: Candidates in proposer order (at most K are scored).
        format_error: The model's answer could not be parsed (or is missing): the sample stays in the
            denominator as a miss and is counted.
        raw: The model's raw output, kept for inspection.
        critic_format_error: The critic's answer could not be parsed (proposer order was used).
        critic_raw: The critic's raw output.
        truncated: The answer was cut by the token budget (then also a format error).
        image_error: The screenshot could not be read (the message names the path); the model was
            not asked, the sample is a miss counted apart from format errors.
        costs: The cost ledger of its model requests (empty: nothing recorded).
        refine: The refine stage's answer, or None (no refine stage).
        not_in_file: A replayed predictions file has no line for the sample: the model was not asked
            there; a miss counted apart from format errors (the headline stays over every sample).
        server_error: The sample's request failed for good (the server's last error, one line): a
            miss counted apart from format and image errors; a rerun into the folder asks it again.
        rescue: ``critic_rescue=true``, where no candidate hit: whether the critic, asked again with
            the target's point put in among the candidates, picked it (None: not asked).
    """

    benchmark: str
    id: str
    candidates: tuple[Candidate, ...] = ()
    format_error: bool = False
    raw: str = ""
    critic_format_error: bool = False
    critic_raw: str = ""
    truncated: bool = False
    image_error: str | None = None
    costs: tuple[CostRecord, ...] = ()
    refine: Refinement | None = None
    not_in_file: bool = False
    server_error: str | None = None
    rescue: bool | None = None


STRATEGIES: tuple[str, ...] = ("critic", "first", "mean", "median", "geomedian", "medoid", "cluster")
"""The selection strategy names, in the order :func:`gge.scoring.selection.select_all` reports them."""


@dataclass(frozen=True)
class SampleResult:
    """The scored outcome of one sample.

    Attributes:
        benchmark: Benchmark name.
        id: Native sample id.
        labels: The sample's breakdown labels.
        k: How many candidates were scored at most.
        candidates: The scored candidates (the first ``k``), proposer order.
        hits: Whether each scored candidate hits.
        picks: The Top-1 candidate chosen by each selection strategy (None: no answer).
        top1: Whether each strategy's pick hits.
        format_error: The model's answer was unparseable or missing.
        raw: The model's raw output.
        critic_format_error: The critic's answer was unparseable.
        critic_raw: The critic's raw output.
        truncated: The answer was cut by the token budget (a format error of its own kind).
        image_error: The screenshot could not be read (a miss, counted apart from format errors).
        image_path: The sample's screenshot (samples sharing one move together in paired bootstraps).
        image_size: The sample's (width, height) in pixels.
        region: The sample's target (for target sizes and miss distances); None when unknown.
        costs: The cost ledger of the sample's model requests (empty: none recorded).
        refine: The refine stage's answer (its pick is ``picks["refined"]``), or None.
        not_in_file: A replayed predictions file has no line for the sample (a miss, counted apart
            from format errors).
        decoy: The sample's deceptive region (:attr:`Sample.decoy`), or None.
        server_error: The sample's request failed for good (the server's last error, one line): a
            miss counted apart from format and image errors.
    """

    benchmark: str
    id: str
    labels: Mapping[str, LabelValue]
    k: int
    candidates: tuple[Candidate, ...]
    hits: tuple[bool, ...]
    picks: Mapping[str, Candidate | None] = field(default_factory=dict)
    top1: Mapping[str, bool] = field(default_factory=dict)
    format_error: bool = False
    raw: str = ""
    critic_format_error: bool = False
    critic_raw: str = ""
    truncated: bool = False
    image_error: str | None = None
    image_path: str = ""
    image_size: tuple[int, int] | None = None
    region: Region | None = None
    costs: tuple[CostRecord, ...] = ()
    refine: Refinement | None = None
    not_in_file: bool = False
    decoy: Region | None = None
    server_error: str | None = None
    rescue: bool | None = None

    def hit_at(self, k: int) -> bool:
        """Whether a candidate among the first ``k`` hits (Oracle@k for this sample)."""
        return any(self.hits[:k])

    @property
    def oracle(self) -> bool:
        """Oracle@K for this sample, K being the number of candidates scored at most."""
        return self.hit_at(self.k)

    def abstained(self, strategy: str) -> bool:
        """Whether the given strategy's pick is an abstention."""
        pick = self.picks.get(strategy)
        return pick is not None and pick.abstains
