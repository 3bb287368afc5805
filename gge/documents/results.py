"""The documents a run writes, as types: results.json (:class:`ResultsDocument`) and compare.json.

Their one producer each (:func:`gge.scoring.metrics.benchmark_metrics` and
:func:`gge.run.assemble.build_document` for results.json, :func:`gge.compare.pairing.compare_runs` for
compare.json) returns these TypedDicts and every reader (report.md and report.html, ``gge compare``,
the loggers, ``gge watch``) takes them, so mypy checks all of them against this one schema. The cost
types (``cost``, ``budget``, ``refine``) live in :mod:`gge.documents.cost` and compare.json's in
:mod:`gge.documents.compare`; both are re-exported here. A key that only some runs write is
``NotRequired``; a section that can be empty is ``... | None``.

Keys that name a number (``oracle@1`` ... ``oracle@K``, ``pass@1`` ... ``pass@n``, an outcome
kind's percentage) cannot be TypedDict fields: the TypedDicts list the fixed keys, and
:func:`oracle_at`, :func:`pass_at` and :func:`share` read the others.

Each document records :data:`SCHEMA_VERSION` as its first key; a reader of a file checks it
(:func:`check_version`) and refuses another version, or none, in one line saying how to re-score.

Example:
    >>> check_version({"schema_version": SCHEMA_VERSION}, "out/results.json")
    >>> check_version({"gge_version": "0.0.9"}, "old/results.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gge.errors.GgeError: old/results.json: no schema_version (written by gge 0.0.9), but this gge ...
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar, cast

from gge.documents.compare import (  # compare.json's types, re-exported
    Bootstrap,
    CompareDocument,
    CompareEntry,
    CompareMean,
    ErrorCounts,
    HeadlineDiff,
    MatchedBudget,
    MatchedPoint,
    MatchedSide,
    MatchedSpread,
    PairedCell,
    PairedFigures,
    PairedTable,
    PairStat,
    RunSummary,
)
from gge.documents.cost import (  # results.json's cost types, re-exported
    BudgetCurves,
    BudgetPoint,
    CostSetup,
    CostSummary,
    Invocation,
    InvocationEnd,
    PointCost,
    RefinedPoint,
    RefineSummary,
    SecondsSpread,
    Spread,
    StageCost,
    TokenCounts,
)
from gge.documents.critic import CriticPool, Occlusion, RunRescue  # the entry's (their parts: there)
from gge.errors import GgeError

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:  # pragma: no cover - Python 3.10 (typing_extensions comes with torch)
    from typing_extensions import NotRequired

__all__ = [
    "SCHEMA_VERSION",
    "AverageStats",
    "BenchmarkEntry",
    "Bootstrap",
    "BudgetCurves",
    "BudgetPoint",
    "CompareDocument",
    "CompareEntry",
    "CompareMean",
    "CostSetup",
    "CostSummary",
    "CriticPool",
    "DecoyClicks",
    "DecoyStats",
    "ErrorCounts",
    "GroupStats",
    "HeadlineDiff",
    "HeadlineInterval",
    "ImportedLog",
    "Invocation",
    "InvocationEnd",
    "MatchedBudget",
    "MatchedPoint",
    "MatchedSide",
    "MatchedSpread",
    "NotInFile",
    "Occlusion",
    "PairStat",
    "PairedCell",
    "PairedFigures",
    "PairedTable",
    "PointCost",
    "RefineSummary",
    "RefinedPoint",
    "ResultsDocument",
    "RunSummary",
    "SecondsSpread",
    "Spread",
    "StageCost",
    "TokenCounts",
    "check_version",
    "insert_after",
    "oracle_at",
    "pass_at",
    "read_results",
    "share",
]

SCHEMA_VERSION = 1
"""The layout of results.json and compare.json this gge writes and reads (their first key)."""

Interval = Sequence[float]
"""``[low, high]`` in percent (a tuple when computed, a list once read back from JSON)."""


# -- results.json: the pieces of a benchmark's entry ------------------------------------------------
class GroupStats(TypedDict):
    """A group's micro figures (:func:`gge.scoring.grouping.group_stats`), plus ``"oracle@K"``."""

    samples: int
    top1: float | None


class AverageStats(TypedDict):
    """An average by one rule (:func:`gge.scoring.grouping.average`), plus ``"oracle@K"``."""

    rule: str
    top1: float | None
    groups: NotRequired[int]  # macro rules: the label values averaged over


class Figures(TypedDict):
    """Micro means: ``top1``, plus ``"oracle@1"`` ... ``"oracle@K"``."""

    top1: float | None


class Intervals(TypedDict):
    """95% Wilson intervals of the micro ``top1``, plus ``"oracle@K"`` (None without samples)."""

    top1: Interval | None


class HeadlineInterval(TypedDict):
    """A benchmark's own interval of its headline (:attr:`gge.benchmarks.base.Benchmark.headline_ci`).

    The percentile bootstrap of the micro Top-1 (hits over samples, percent) over the samples, drawn
    as ``scipy.stats.bootstrap(..., method="percentile", n_resamples=resamples,
    rng=np.random.default_rng(seed))`` draws it (:func:`gge.scoring.stats.percentile_bootstrap`), so
    it is reproducible from results.json alone. ``top1`` is None without samples.
    """

    method: str
    resamples: int
    confidence: float
    seed: int
    top1: Interval | None


class ImageError(TypedDict):
    """An unreadable screenshot, or a request that failed for good (scored as a miss)."""

    id: str
    error: str


class NotInFile(TypedDict):
    """The samples a replayed predictions file has no line for (misses, apart from format errors).

    The entry's headline stays over every sample; ``top1`` is the same rule over the samples with a
    line: the figure a harness prints that left them out (dropped refusals, a subset).
    """

    samples: int
    ids: list[str]
    lines: int
    top1: float | None
    """The official headline's Top-1 over the ``lines`` samples that have a line (None: none has)."""


class DecoyStats(TypedDict):
    """One selection strategy's deceptive clicks: picks inside the decoy and not on the target."""

    clicks: int
    over_decoy_samples: float | None
    """Percent of the samples that have a decoy."""
    over_all: float | None
    """Percent of every sample."""


class DecoyClicks(TypedDict):
    """How often the pick lands on a sample's decoy (RUC's ``dark_box``): gge's rule, no official scorer."""

    rule: str
    decoy_samples: int
    samples: int
    by_strategy: dict[str, DecoyStats]


class ImportedLog(TypedDict):
    """How a published log replayed with ``model.format`` matched the samples (its import's counts)."""

    format: str
    file: str
    lines: int
    matched: int
    unmatched: list[str]
    """Each line no sample fits: ``where: why``."""
    ambiguous: list[str]
    """Each line several differing samples fit: ``where: ids``."""


class OfficialTable(TypedDict):
    """One official table (:func:`gge.scoring.grouping.table`); a 1-D table has no columns."""

    title: str
    rows: str
    cols: str | None
    row_values: list[str]
    row_avg: dict[str, GroupStats]
    all: GroupStats
    col_values: NotRequired[list[str]]
    cells: NotRequired[dict[str, dict[str, GroupStats]]]
    col_avg: NotRequired[dict[str, GroupStats]]


class OutcomeSplit(TypedDict):
    """How a group's samples split over the outcome kinds (:func:`gge.scoring.analysis.decompose`)."""

    samples: int
    counts: dict[str, int]
    hit: float | None
    critic_miss: float | None
    proposer_miss: float | None
    abstained: float | None
    format_error: float | None
    image_error: float | None
    server_error: NotRequired[float | None]  # only where some sample's request failed for good
    not_in_file: NotRequired[float | None]  # only where some sample has no line in a replayed file


class OutcomeCell(OutcomeSplit):
    """The outcome split of one official table cell."""

    row: str
    col: str | None


class OutcomeTable(TypedDict):
    """The outcome split of every cell of one official table."""

    title: str
    rows: str
    cols: str | None
    cells: list[OutcomeCell]


class Decomposition(TypedDict):
    """Where the misses are: overall and per official table cell."""

    strategy: str
    overall: OutcomeSplit
    tables: list[OutcomeTable]


class CriticGain(TypedDict):
    """The critic's Top-1 minus that of ``first`` and of the best spatial baseline, in points."""

    over_first: float | None
    over_best_spatial: float | None
    best_spatial: str | None


class PassAtK(TypedDict):
    """Unbiased pass@k of sampled answers, plus ``"pass@1"`` ... ``"pass@n"``."""

    n: int
    first_slot: int


class SizeBucket(TypedDict):
    """Top-1 (and ``"oracle@K"``) of the targets of one size bucket."""

    label: str
    low: float
    high: float
    samples: int
    top1: float | None
    median_area: float | None


class SizeBuckets(TypedDict):
    """Results by target size (:func:`gge.scoring.analysis.size_buckets`)."""

    edges: list[float]
    buckets: list[SizeBucket]
    no_area: int
    unreadable: int


class Quartiles(TypedDict):
    """First quartile, median and third quartile."""

    q1: float
    median: float
    q3: float


class MissDistance(TypedDict):
    """How far missing picks land from the target (:func:`gge.scoring.analysis.miss_distances`)."""

    misses: int
    target_sizes: Quartiles | None
    screen: Quartiles | None


class ReliabilityBin(TypedDict):
    """One bin of the reliability diagram."""

    low: float
    high: float
    count: int
    confidence: float | None
    accuracy: float | None


class RiskCoveragePoint(TypedDict):
    """One point of the risk-coverage curve."""

    threshold: float
    coverage: float
    kept: int
    top1: float


class Calibration(TypedDict):
    """The critic's calibration (:func:`gge.scoring.calibration.calibration`); probabilities only: ECE..."""

    score_kind: str
    candidates: int
    positives: int
    auroc: float | None
    ece: float | None
    brier: float | None
    reliability: list[ReliabilityBin] | None
    risk_coverage: list[RiskCoveragePoint] | None
    aurc: float | None
    unscored_samples: int | None


class ProvenanceFile(TypedDict):
    """One file a benchmark was read from, with its digest."""

    path: str
    """Relative to the benchmark's root."""
    sha256: str
    bytes: int


COPY_SOURCES: tuple[str, ...] = ("parquet", "tsv")
"""The Hub-copy kinds gge reads: a :class:`Provenance` ``source`` that is a copy of a release."""


class Fetched(TypedDict):
    """``provenance.fetched``: what ``gge data fetch`` got, from its manifest in the benchmark's folder."""

    kind: str
    """``hub`` or ``github``."""
    repository: str
    revision: str | None
    """The revision asked (gge's pin or ``--revision``; None: the branch head)."""
    commit: str | None
    """The commit the files came from."""
    fetched_at: str | None
    complete: bool
    """False: the fetch did not finish (``gge data fetch`` goes on)."""
    manifest_sha256: str
    """The sha256 of the manifest (every file fetched, with its sha256)."""


class Provenance(TypedDict):
    """Where a benchmark's records came from and whether they are the release's.

    ``source`` is ``release`` (the official layout), ``parquet`` or ``tsv`` (a Hub copy), or
    ``records`` (a user's own file). ``copy`` names the known Hub copy it was identified as (None for
    the release layout). ``release_check`` says whether the records match the release: ``matches``
    (True, False, or None when gge cannot tell), ``differences`` (one line each) and what they were
    checked against. ``allowed_differences`` is ``allow_copy_differences``: a differing copy ran only
    because it was set, and its headline is then not the official one.
    """

    source: str
    files: list[ProvenanceFile]
    copy: dict[str, Any] | None
    release_check: dict[str, Any]
    allowed_differences: bool
    fetched: NotRequired[Fetched]
    """Present when ``gge data fetch`` wrote the folder; its annotation files were checked against it."""


class LoadSummary(TypedDict):
    """What a benchmark's files held (:meth:`gge.benchmarks.base.LoadCollector.result`)."""

    files: list[str]
    records: int
    degenerate_boxes: int
    degenerate_ids: NotRequired[list[str]]
    boxes_outside_image: int
    outside_image_ids: NotRequired[list[str]]
    unreadable_images: int
    unreadable_image_ids: NotRequired[list[str]]
    variant: dict[str, Any]
    notes: list[str]
    left_out: NotRequired[dict[str, list[str]]]
    """Records the loader left out on purpose, by why: their prediction lines are not stray."""
    provenance: NotRequired[Provenance]
    headline_caveat: NotRequired[str]
    """Why the run's headline is not the published one (``Benchmark.headline_caveat``)."""


class ResponseCounts(TypedDict):
    """Responses per sample in a trainer's dump (summarize-verl)."""

    min: int
    max: int


ImageTokenSource = Literal["measured", "prompt", "none"]
"""Where a run's image tokens were read: the engine's own count (in process), a server's prompt tokens
less the probe's text tokens, or nowhere."""


class ImageTokenExample(TypedDict):
    """One proposer answer whose image tokens differ from the preset's expectation."""

    id: str
    size: list[int]
    """The (width, height) the screenshot was sent at."""
    expected: int
    observed: int


class ImageTokenCheck(TypedDict):
    """What the model saw: a benchmark's proposer answers whose image tokens differ from the expected.

    :func:`gge.scoring.image_tokens.check_requests`; ``ratio`` is observed over expected image tokens
    summed over the answers that differ (None: none differ).
    """

    source: ImageTokenSource
    factor: int
    requests: int
    differ: int
    unchecked: int
    ratio: float | None
    tolerance: str
    example: ImageTokenExample | None


class BenchmarkEntry(TypedDict):
    """One benchmark of results.json (:func:`gge.scoring.metrics.benchmark_metrics`, then extras).

    ``top1`` and ``"oracle@1"`` ... ``"oracle@K"`` (read with :func:`oracle_at`) are the official
    headline; ``micro`` the micro means. Eval adds ``load`` and ``samples_digest`` (and, replaying,
    ``unmatched_predictions``, ``missing_predictions`` and ``images``: ``read``, ``not read`` or
    ``partly read`` with ``images_not_read``); summarize-verl adds
    ``responses_per_sample`` (and, with its export, ``missing_responses``) and may replace
    ``pass_at_k``.
    """

    samples: int
    top1: float | None
    micro: Figures
    official: AverageStats
    averages: dict[str, AverageStats]
    intervals: Intervals
    headline_interval: NotRequired[HeadlineInterval]  # only a benchmark that declares headline_ci
    format_errors: int
    truncated: int
    image_errors: list[ImageError]
    server_errors: NotRequired[list[ImageError]]
    """The samples whose request failed for good (``error``: the server's last error), misses apart
    from format and image errors; a rerun into the folder asks them again. Always written; a
    results.json written before it existed has none."""
    not_in_file: NotRequired[NotInFile]
    """Only a replay whose file lacks some samples' lines."""
    decoy_clicks: NotRequired[DecoyClicks]
    """Only a benchmark whose samples carry a decoy (RUC)."""
    unparsed_candidates: int
    critic_format_errors: int
    abstentions: int
    critic_gap: float | None
    top1_given_oracle: float | None
    selection: dict[str, float | None]
    breakdown: dict[str, dict[str, GroupStats]]
    tables: list[OfficialTable]
    decomposition: Decomposition
    critic_gain: CriticGain | None
    pass_at_k: PassAtK | None
    size_buckets: SizeBuckets
    miss_distance: MissDistance
    calibration: Calibration | None
    load: NotRequired[LoadSummary]
    samples_digest: NotRequired[str]
    """``v2:<sha256>`` of the samples evaluated: ids, instructions, targets with their hit rules, image
    sizes (:func:`gge.run.runstate.samples_digest`); compare refuses two runs whose digests differ."""
    origin: NotRequired[dict[str, str]]
    """A benchmark from an installed package: its distribution, version and entry point."""
    cost: NotRequired[CostSummary | None]
    """The cost ledger (None: no sample has cost records)."""
    budget: NotRequired[BudgetCurves | None]
    """Top-1 against the candidates used and their cost (None: one answer per sample)."""
    image_tokens: NotRequired[ImageTokenCheck]
    """Only a run whose preset declares its image tokens (a Qwen-VL factor): what the model saw."""
    refine: NotRequired[RefineSummary]
    """Only a run with a refine stage."""
    critic_pool: NotRequired[CriticPool]
    """Only a critic-only run on frozen pools (``pool.source``)."""
    critic_rescue: NotRequired[RunRescue]
    """Only a run with ``critic_rescue=true``."""
    occlusion: NotRequired[Occlusion]
    """Only a run whose critic draws markers (listwise, pointwise)."""
    unmatched_predictions: NotRequired[list[str]]
    missing_predictions: NotRequired[int]
    images: NotRequired[str]  # a replay: read, not read (scored from the records' sizes), partly read
    images_not_read: NotRequired[int]
    imported_log: NotRequired[ImportedLog]
    """A published log's replay (``model.format``): its lines, matched, unmatched and ambiguous."""
    responses_per_sample: NotRequired[ResponseCounts]
    missing_responses: NotRequired[int]


class MeanStats(TypedDict):
    """The unweighted mean of the official headlines, plus ``"oracle@K"``."""

    benchmarks: list[str]
    top1: float | None


class SubsetCounts(TypedDict):
    """Samples a subset run evaluated of a benchmark's total."""

    evaluated: int
    total: int


class Subset(TypedDict):
    """What ``max_samples`` kept (:func:`gge.benchmarks.loading.subset_record`)."""

    max_samples: int
    benchmarks: dict[str, SubsetCounts]


class ResultsDocument(TypedDict):
    """results.json (:func:`gge.run.assemble.build_document`); see docs/results.md.

    ``notes`` is written when the run differs from a full evaluation (summarize-verl), ``subset`` by
    eval (None for a full run).
    """

    schema_version: int
    gge_version: str
    protocol: str
    notes: NotRequired[list[str]]
    benchmarks: dict[str, BenchmarkEntry]
    mean: MeanStats
    k: int
    subset: NotRequired[Subset | None]
    selection: str
    cost: NotRequired[CostSetup]
    model: dict[str, Any]
    config: dict[str, Any]
    invocations: NotRequired[list[Invocation]]  # each invocation of the run, oldest first


# -- keys a TypedDict cannot name -------------------------------------------------------------------
def oracle_at(figures: Mapping[str, Any], k: int) -> Any:
    """``figures["oracle@<k>"]``: Oracle@k of an entry, a group, an average, a mean or a pairing.

    Example:
        >>> oracle_at({"top1": 40.0, "oracle@5": 60.0}, 5)
        60.0
    """
    return figures[f"oracle@{k}"]


def pass_at(table: PassAtK, j: int) -> float | None:
    """pass@j of a pass@k table (``table["pass@<j>"]``)."""
    return cast("float | None", cast(Mapping[str, Any], table)[f"pass@{j}"])


def share(split: OutcomeSplit, kind: str) -> float | None:
    """The percentage of the samples of an outcome split whose outcome is ``kind``.

    A kind written only where some sample has it (``not_in_file``) and absent from a split is 0 there
    (None for an empty split, as every kind is).

    Example:
        >>> split, empty = {"samples": 4, "counts": {"hit": 1}, "hit": 25.0}, {"samples": 0, "counts": {}}
        >>> share(split, "hit"), share(split, "not_in_file"), share(empty, "not_in_file")
        (25.0, 0.0, None)
    """
    values = cast(Mapping[str, Any], split)
    if kind not in values:
        return 0.0 if values.get("samples") else None
    return cast("float | None", values[kind])


_D = TypeVar("_D", bound=Mapping[str, Any])


def insert_after(document: _D, key: str, extra: Mapping[str, Any]) -> _D:
    """``document`` with the keys of ``extra`` placed right after ``key`` (where results.json has them).

    Example:
        >>> insert_after({"samples": 2, "top1": 50.0, "micro": {}}, "top1", {"oracle@1": 50.0})
        {'samples': 2, 'top1': 50.0, 'oracle@1': 50.0, 'micro': {}}
    """
    out: dict[str, Any] = {}
    for name, value in document.items():
        out[name] = value
        if name == key:
            out.update(extra)
    return cast(_D, out)


# -- reading by version -----------------------------------------------------------------------------
def check_version(document: Mapping[str, Any], path: str | Path) -> None:
    """Refuse a document (results.json) of another layout than this gge's, naming the file.

    Args:
        document: The parsed JSON object.
        path: Its file, for the message.

    Raises:
        GgeError: one line: the file, the version found (or that there is none, with the gge that
            wrote it) and how to re-score the run with this gge (a replay of its predictions.jsonl,
            which needs no model).
    """
    version = document.get("schema_version")
    if version == SCHEMA_VERSION and type(version) is int:
        return
    import gge

    wrote = document.get("gge_version")
    by = f"written by gge {wrote}" if wrote is not None else "no gge_version: not written by gge?"
    found = f"no schema_version ({by})" if version is None else f"schema_version {version!r} ({by})"
    predictions = Path(path).parent / "predictions.jsonl"
    raise GgeError(
        f"{path}: {found}, but this gge ({gge.__version__}) reads schema_version {SCHEMA_VERSION}: re-score "
        f"the run with it, `python eval.py model=replay model.predictions={predictions}` with the run's "
        "benchmarks and data_root (no model needed), and use that output folder"
    )


def read_results(path: str | Path) -> ResultsDocument:
    """Read a results.json of this gge's layout (:func:`check_version`).

    Args:
        path: The file.

    Returns:
        The document.

    Raises:
        GgeError: naming the file, for a missing or malformed file, one that is not a JSON object, or
            one of another schema_version.
    """
    file = Path(path)
    if not file.is_file():
        raise GgeError(f"results file not found: {file}")
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise GgeError(f"{file}: cannot be read ({type(e).__name__}: {e})") from None
    except json.JSONDecodeError as e:
        raise GgeError(f"{file}: line {e.lineno}, column {e.colno}: malformed JSON: {e.msg}") from None
    if not isinstance(document, dict):
        raise GgeError(f"{path}: expected a JSON object (gge results.json), got {type(document).__name__}")
    check_version(document, path)
    return cast(ResultsDocument, document)
