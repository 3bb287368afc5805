"""How well the critic's scores tell hits from misses: AUROC, calibration error, Brier, risk-coverage.

**Calibration** (:func:`calibration`): AUROC of the critic's score for hit against miss over every
scored candidate; for probabilities (pointwise P(yes)) also the expected calibration error over
:data:`CALIBRATION_BINS` equal-width bins, the Brier score, a reliability table and risk-coverage
(Top-1 among the samples whose highest score reaches a threshold, against the fraction kept). A
listwise ranking of ``m`` candidates is turned into scores ``(m - position) / m`` (1 for the
first-ranked, ``1/m`` for the last); it gives AUROC only, since a rank is no probability.

Pure functions over scored results (:class:`gge.types.SampleResult`);
:func:`gge.scoring.analysis.analyse` puts :func:`calibration` in each benchmark's entry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from gge.types import SampleResult

Stats = dict[str, Any]

CALIBRATION_BINS = 10
"""Equal-width confidence bins of the ECE and the reliability table."""
RISK_COVERAGE_POINTS = 20
"""At most this many points of the risk-coverage curve are reported (evenly spaced in coverage)."""

ScoreKind = Literal["probability", "rank", "score"]
"""How critic scores read: ``probability`` (P(yes) of a pointwise critic), ``rank`` (a listwise ranking,
stored as ``m - position``), ``score`` (any other higher-is-better number, e.g. a logit)."""


# -- critic calibration -----------------------------------------------------------------------------
def _finite(score: float | None) -> bool:
    return score is not None and math.isfinite(score)


def candidate_scores(result: SampleResult, kind: ScoreKind) -> list[tuple[float, bool]]:
    """(score, hit) of each scored candidate of a sample; rank scores become ``(m - position) / m``.

    Probabilities and plain scores are kept as they are. A sample whose critic answer could not be
    parsed gives none (the policy stood in the proposer order, which is no judgement of the critic).

    Listwise scores are stored as ``m - position`` (``m`` the number of ranked candidates), so the
    largest stored score is ``m``; dividing by it gives 1 for the first-ranked and ``1/m`` for the last.
    """
    if result.critic_format_error:
        return []  # the critic's answer was unreadable: its "scores" are the proposer order
    pairs = [
        (float(c.score), hit)
        for c, hit in zip(result.candidates, result.hits, strict=False)
        if c.score is not None and math.isfinite(c.score)
    ]
    if kind == "rank" and pairs:
        m = max(s for s, _ in pairs)
        pairs = [(s / m if m > 0 else 0.0, hit) for s, hit in pairs]
    return pairs


def infer_score_kind(results: Sequence[SampleResult]) -> ScoreKind | None:
    """The kind of the critic's scores, read off the data; None without scores.

    ``rank`` when each sample's scores are exactly 1..m (what a listwise ranking stores), else
    ``probability`` when every score lies in [0, 1], else ``score``. A policy that knows says so
    instead (:func:`analysis_options`, a policy's ``score_kind`` attribute).
    """
    per_sample = [
        sorted(c.score for c in r.candidates if c.score is not None and _finite(c.score)) for r in results
    ]
    per_sample = [scores for scores in per_sample if scores]
    if not per_sample:
        return None
    if all(scores == [float(i) for i in range(1, len(scores) + 1)] for scores in per_sample):
        return "rank"
    if all(0.0 <= s <= 1.0 for scores in per_sample for s in scores):
        return "probability"
    return "score"


def auroc(pairs: Sequence[tuple[float, bool]]) -> float | None:
    """The area under the ROC curve of score for hit (positive) against miss (Mann–Whitney, ties 1/2).

    Example:
        >>> auroc([(0.9, True), (0.8, False), (0.3, True), (0.1, False)])
        0.75
    """
    ranked = sorted(pairs, key=lambda t: t[0])
    n_pos = sum(hit for _, hit in ranked)
    n_neg = len(ranked) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    rank_sum = 0.0  # sum of the (mid)ranks of the positives, 1-based
    i = 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        mid = (i + j) / 2.0 + 1.0
        rank_sum += mid * sum(hit for _, hit in ranked[i : j + 1])
        i = j + 1
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def _bin(p: float, bins: int) -> int:
    return min(int(p * bins), bins - 1)


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = CALIBRATION_BINS) -> list[Stats]:
    """Per equal-width bin of [0, 1]: count, mean confidence and accuracy (None when empty).

    Bin ``b`` holds ``b/bins <= p < (b+1)/bins``; the last one includes 1.
    """
    groups: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for p, hit in pairs:
        groups[_bin(p, bins)].append((p, hit))
    return [
        {
            "low": b / bins,
            "high": (b + 1) / bins,
            "count": len(g),
            "confidence": sum(p for p, _ in g) / len(g) if g else None,
            "accuracy": sum(hit for _, hit in g) / len(g) if g else None,
        }
        for b, g in enumerate(groups)
    ]


def expected_calibration_error(
    pairs: Sequence[tuple[float, bool]], bins: int = CALIBRATION_BINS
) -> float | None:
    """ECE: the count-weighted mean of |accuracy - confidence| over equal-width bins.

    Example:
        >>> expected_calibration_error([(0.9, True), (0.9, False)])
        0.4
    """
    if not pairs:
        return None
    total = 0.0
    for row in reliability(pairs, bins):
        if row["count"]:
            total += row["count"] * abs(row["accuracy"] - row["confidence"])
    return total / len(pairs)


def brier_score(pairs: Sequence[tuple[float, bool]]) -> float | None:
    """The mean squared difference between the probability and the outcome (1 hit, 0 miss)."""
    if not pairs:
        return None
    return sum((p - float(hit)) ** 2 for p, hit in pairs) / len(pairs)


def risk_coverage(
    results: Sequence[SampleResult], points: int = RISK_COVERAGE_POINTS
) -> tuple[list[Stats], float | None, int]:
    """Top-1 of the critic among the samples it is most confident about, against the fraction kept.

    A sample's confidence is the highest critic probability among its candidates (the critic's pick);
    samples are kept from the most confident down, a tie kept or dropped together. Samples without a
    score (one candidate, an abstention, a format error: the critic did not judge) or with an
    unparseable critic answer are left out.

    Args:
        results: The group.
        points: At most this many curve points (evenly spaced in coverage; the full coverage last).

    Returns:
        (curve, area under the risk-coverage curve, samples left out). Each curve point is
        ``{"threshold", "coverage", "kept", "top1"}`` (coverage and Top-1 in percent); the area is the
        mean risk (100 - Top-1) over every distinct threshold, weighted by the samples it adds (AURC,
        in percent; lower is better), None without scored samples.
    """
    scored = []
    for r in results:
        scores = [c.score for c in r.candidates if c.score is not None and math.isfinite(c.score)]
        if scores and not r.critic_format_error:
            scored.append((max(scores), bool(r.top1.get("critic", False))))
    left_out = len(results) - len(scored)
    if not scored:
        return [], None, left_out
    scored.sort(key=lambda t: -t[0])
    n = len(scored)
    full: list[Stats] = []
    hits = 0
    aurc = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and scored[j + 1][0] == scored[i][0]:
            j += 1
        hits += sum(h for _, h in scored[i : j + 1])
        kept = j + 1
        top1 = 100.0 * hits / kept
        aurc += (100.0 - top1) * (kept - i)
        full.append({"threshold": scored[i][0], "coverage": 100.0 * kept / n, "kept": kept, "top1": top1})
        i = j + 1
    if len(full) > points:
        picks = sorted({round(q * (len(full) - 1) / (points - 1)) for q in range(points)})
        full = [full[p] for p in picks]
    return full, aurc / n, left_out


def calibration(results: Sequence[SampleResult], kind: ScoreKind | None = None) -> Stats | None:
    """The critic's calibration over a group, or None when the critic gave no scores.

    Args:
        results: The group.
        kind: ``probability`` (pointwise P(yes)), ``rank`` (a listwise ranking) or ``score`` (an
            uncalibrated number); None infers it (:func:`infer_score_kind`).

    Returns:
        ``{"score_kind", "candidates", "positives", "auroc", "ece", "brier", "reliability",
        "risk_coverage", "aurc", "unscored_samples"}``; the probability-only fields are None for
        ranks and plain scores (AUROC only needs an order).
    """
    kind = kind or infer_score_kind(results)
    if kind is None:
        return None
    pairs = [pair for r in results for pair in candidate_scores(r, kind)]
    if not pairs:
        return None
    out: Stats = {
        "score_kind": kind,
        "candidates": len(pairs),
        "positives": sum(hit for _, hit in pairs),
        "auroc": auroc(pairs),
        "ece": None,
        "brier": None,
        "reliability": None,
        "risk_coverage": None,
        "aurc": None,
        "unscored_samples": None,
    }
    if kind == "probability":
        curve, area, left_out = risk_coverage(results)
        out.update(
            ece=expected_calibration_error(pairs),
            brier=brier_score(pairs),
            reliability=reliability(pairs),
            risk_coverage=curve,
            aurc=area,
            unscored_samples=left_out,
        )
    return out
