"""compare.json as types (:class:`CompareDocument`), re-exported by :mod:`gge.documents.results`.

Its one producer is :func:`gge.compare.pairing.compare_runs`; its readers (``gge compare``'s text, the
compare page) take these TypedDicts, so mypy checks them against this one schema. It records
:data:`gge.documents.results.SCHEMA_VERSION` as results.json does.
"""

from __future__ import annotations

import sys
from typing import Any, TypedDict

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover - Python 3.10 (typing_extensions comes with torch)
    from typing_extensions import NotRequired

__all__ = [
    "Bootstrap",
    "CompareDocument",
    "CompareEntry",
    "CompareMean",
    "DistanceSpread",
    "Drift",
    "DriftExample",
    "ErrorCounts",
    "FlipCounts",
    "HeadlineDiff",
    "InputCheck",
    "MatchedBudget",
    "MatchedPoint",
    "MatchedSide",
    "MatchedSpread",
    "PairStat",
    "PairedCell",
    "PairedFigures",
    "PairedTable",
    "RunSummary",
    "SetupComparison",
    "SetupDifference",
]


class RunSummary(TypedDict):
    """One of the two runs compared."""

    path: str
    label: str
    selection: str
    k: int
    protocol: str


class Bootstrap(TypedDict):
    """How the intervals were resampled."""

    resamples: int
    seed: int
    cluster: str
    level: float


class PairStat(TypedDict):
    """Paired micro statistics of one figure (percent and points; None without samples)."""

    a: float | None
    b: float | None
    diff: float | None
    ci: list[float] | None
    mcnemar_p: float
    mdd: float | None
    b_only: int
    a_only: int
    samples: int
    screenshots: int


class HeadlineDiff(TypedDict):
    """One official headline of A and B, their difference and its interval."""

    rule: str
    a: float | None
    b: float | None
    diff: float | None
    ci: list[float] | None


class PairedFigures(TypedDict):
    """The micro PairStats: ``top1``, plus ``"oracle@K"`` (K > 1)."""

    top1: PairStat


class PairedCell(TypedDict):
    """The PairStats of one official table cell: ``top1``, plus ``"oracle@K"`` (K > 1)."""

    row: str
    col: str | None
    samples: int
    top1: PairStat


class PairedTable(TypedDict):
    """One official table's cells, paired."""

    title: str
    rows: str
    cols: str | None
    cells: list[PairedCell]


class ErrorCounts(TypedDict):
    """A count of run A and of run B."""

    a: int
    b: int


class MatchedPoint(TypedDict):
    """One point of a run's budget curve in compare.json: its micro Top-1 and cost per sample."""

    j: int
    top1: float | None
    tokens: float | None
    seconds: float | None
    cost: str


class MatchedSide(TypedDict):
    """One run at the matched budget: its strategy's curve and the point matched."""

    strategy: str
    k: int
    method: str
    critic: str | None
    j: int
    top1: float | None
    tokens: float | None
    seconds: float | None
    cost: str
    curve: list[MatchedPoint]


class MatchedSpread(TypedDict):
    """How uncertain the seconds measured on the two runs are, and which pairings that leaves apart.

    A run's mean seconds per sample is measured on a loaded machine, so it is known only to within
    the interval of a mean; two pairings (jA, jB) whose relative differences are closer than the
    uncertainty of a difference of two such costs cannot be told apart by the measurement
    (:func:`gge.compare.matched.matched_budget`). The pair stays the closest measured cost.

    Attributes:
        measure: How ``a`` and ``b`` are measured (:data:`gge.compare.matched.SPREAD_MEASURE`).
        a: A's relative uncertainty: the half-width of the 95% interval of its mean seconds per
            sample over the paired samples, ``1.96 · sd / √n / mean`` (``sd`` with ddof = 1; 0
            under two samples or with a mean of 0); None: no sample has seconds.
        b: B's, the same way.
        tolerance: ``√(a² + b²)`` (an unknown one counts 0): the relative uncertainty of the
            difference of the two measured costs.
        pairings: ``[jA, jB]`` of the pair (the closest measured cost) first, then every other whose
            relative difference is at most the pair's plus ``tolerance``, from the closest: the
            pairings the measurement cannot tell apart from the pair.
        inside: Whether there is more than one such pairing (the pairing cannot be told apart).
        policy: What compare does then (:data:`gge.compare.matched.SPREAD_POLICY`): ``flag``, keep
            the pair and say so; never refuse, never pick another pair.
    """

    measure: str
    a: float | None
    b: float | None
    tolerance: float
    pairings: list[list[int]]
    inside: bool
    policy: str


class MatchedBudget(TypedDict):
    """The two runs at the closest common cost (:func:`gge.compare.matched.matched_budget`).

    ``unit`` is ``tokens`` or ``seconds`` (per sample), ``rule`` how the pair was chosen, ``diff``
    B − A of the micro Top-1 at the matched points (points) and ``ci`` its paired bootstrap interval
    over the per-sample expected hits (None under 5 screenshots). ``spread`` (seconds only; None
    for tokens, which are counted, not measured) says whether the measured seconds can tell the
    pairing apart from others (:class:`MatchedSpread`).
    """

    unit: str
    rule: str
    relative_difference: float
    spread: MatchedSpread | None
    a: MatchedSide
    b: MatchedSide
    diff: float | None
    ci: list[float] | None
    samples: int
    screenshots: int


class DistanceSpread(TypedDict):
    """The distribution of a distance in original pixels (numpy's linear percentiles)."""

    min: float
    median: float
    p90: float
    max: float
    mean: float


class FlipCounts(TypedDict):
    """Samples whose hit flipped between the runs, each way."""

    a_hit_b_miss: int
    a_miss_b_hit: int


class DriftExample(TypedDict):
    """One sample whose Top-1 flipped: both runs' raw answers and first points (original pixels)."""

    id: str
    flip: str  # "a_hit_b_miss" or "a_miss_b_hit"
    a_raw: str
    b_raw: str
    a_point: list[float] | None
    b_point: list[float] | None
    distance: float | None


class Drift(TypedDict):
    """How the two runs' answers differ on one benchmark (:func:`gge.compare.drift.benchmark_drift`).

    Attributes:
        samples: The paired samples.
        raw_differs: Samples whose raw answer texts differ once leading and trailing whitespace is
            stripped (a sampling run's raw holds all its answers: any of them differing counts).
        candidates_differ: Samples whose candidate lists differ as predictions.jsonl writes them
            (their number, or any point, abstention or unparsed slot, compared exactly).
        both_points: Samples where both runs' first candidate (proposer order: the official answer)
            is a point.
        moved: Of those, the samples whose two points lie apart (distance > 0 in original pixels).
        a_only_point: Samples where A's first candidate is a point and B's is none (B abstained,
            its answer did not parse, or it has no candidate).
        b_only_point: The other way round.
        neither_point: Samples where neither run's first candidate is a point.
        distance: The distance between the two first points over the ``both_points`` samples,
            in original pixels (None without such samples).
        top1_flips: Samples whose Top-1 (each run's own selection) flipped, each way.
        first_flips: Samples whose first candidate's hit flipped, each way.
        examples: The first :data:`gge.compare.drift.FLIP_EXAMPLES` Top-1 flips, in the order
            compare pairs the samples (A's predictions.jsonl order).
    """

    samples: int
    raw_differs: int
    candidates_differ: int
    both_points: int
    moved: int
    a_only_point: int
    b_only_point: int
    neither_point: int
    distance: DistanceSpread | None
    top1_flips: FlipCounts
    first_flips: FlipCounts
    examples: list[DriftExample]


class SetupDifference(TypedDict):
    """One recorded setting that differs between the runs (dotted path into results.json)."""

    key: str
    a: Any
    b: Any


class InputCheck(TypedDict):
    """Whether the two runs' models saw the same inputs (:func:`gge.compare.drift.input_check`).

    Attributes:
        status: ``agree`` (the matched samples' proposer prompt tokens agree), ``differ`` or
            ``unknown`` (a run records no prompt token counts).
        matched: Samples paired between the runs.
        checked: Of them, samples both runs record prompt token counts for.
        differing: Of those, samples whose prompt tokens per proposer request differ by more than
            ``tolerance`` (a fraction of the larger).
        a_tokens: A's mean prompt tokens per proposer request over the differing samples (over the
            checked ones when none differ; None: none checked).
        b_tokens: B's, alike.
        ratio: ``b_tokens / a_tokens`` (None: unknown).
        tolerance: The per-sample tolerance.
        image_tokens: What each run's own image-token check (results.json ``image_tokens``) says
            where it found answers whose image tokens differ from the expectation.
        statement: The sentence compare adds to the setup's.
    """

    status: str
    matched: int
    checked: int
    differing: int
    a_tokens: float | None
    b_tokens: float | None
    ratio: float | None
    tolerance: float
    image_tokens: list[str]
    statement: str


class SetupComparison(TypedDict):
    """What differs between the two runs' recorded setups (:func:`gge.compare.drift.compare_setups`).

    Attributes:
        relation: ``same`` (no recorded setting differs, the engine included), ``engine`` (only the
            engine's settings differ: :data:`gge.compare.drift.ENGINE_KEYS`), ``inputs`` (the recorded
            setups are the same or differ only by engine, but the models saw other prompt token counts:
            ``inputs``), ``other`` (something
            that changes predictions differs too: ``differences``) or ``replay`` (a run replays a
            predictions file, whose engine and protocol are not recorded, and something differs).
        engine: How each run's answers were produced, in words (``a``, ``b``).
        engine_differences: The engine settings that differ.
        differences: The other settings that differ (empty unless ``relation`` is ``other``).
        statement: The sentence compare prints.
        inputs: Whether the models saw the same inputs (:class:`InputCheck`).
    """

    relation: str
    engine: dict[str, str]
    engine_differences: list[SetupDifference]
    differences: list[SetupDifference]
    statement: str
    inputs: NotRequired[InputCheck]


class CompareEntry(TypedDict):
    """One benchmark of compare.json: ``top1`` (and ``"oracle@K"``) are the official headlines.

    ``budget`` is there when the runs differ in K, critic or refine stage: the comparison at matched budget
    (None: it could not be made; compare.json's notes say why).
    """

    title: str
    variant: NotRequired[dict[str, Any]]  # the runs' load.variant (the same on both), where it has keys
    caveat: NotRequired[str]  # why the runs' headline is not the published one (headline_caveat)
    samples: int
    screenshots: int
    cluster: str
    top1: HeadlineDiff
    official: HeadlineDiff
    micro: PairedFigures
    format_errors: ErrorCounts
    image_errors: ErrorCounts
    server_errors: NotRequired[ErrorCounts]  # only where a side's request failed for good for some samples
    not_in_file: NotRequired[ErrorCounts]  # only where a side replayed a file without some samples' lines
    tables: list[PairedTable]
    won: list[str]
    lost: list[str]
    budget: NotRequired[MatchedBudget | None]
    drift: NotRequired[Drift]  # how the answers differ (always written by compare_runs)


class CompareMean(TypedDict):
    """The mean of the official Top-1 headlines over the benchmarks that have one."""

    benchmarks: int
    a: float | None
    b: float | None
    diff: float | None


class CompareDocument(TypedDict):
    """compare.json (:func:`gge.compare.pairing.compare_runs`)."""

    schema_version: int
    a: RunSummary
    b: RunSummary
    k: int
    bootstrap: Bootstrap
    benchmarks: dict[str, CompareEntry]
    mean: CompareMean
    setup: NotRequired[SetupComparison]  # what differs in the runs' setups (always written)
    warnings: list[str]
    notes: list[str]
