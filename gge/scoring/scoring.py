"""Per-sample outcomes as pure functions: hit@k, Top-1 per selection strategy, abstentions, format errors.

A candidate hits when it lies in the sample's region by the benchmark's official rule
(:meth:`gge.types.Box.contains` and friends); an abstention hits only an :class:`~gge.types.Absent`
target (OSWorld-G refusals), and not one whose ``abstention_hits`` is False (refusals scored as
misses). Only the first ``k`` candidates, in proposer order, are scored; every selection strategy
picks among those same ``k``.

Example:
    >>> from gge.types import Box, Candidate, Prediction, Sample
    >>> s = Sample("demo", "0", "/x.png", (100, 100), "click OK", Box(10, 10, 20, 20))
    >>> p = Prediction("demo", "0", (Candidate((50, 50), 0.1), Candidate((15, 15), 0.9)))
    >>> r = score_sample(s, p, k=5)
    >>> r.hit_at(1), r.hit_at(2), r.top1["critic"], r.top1["first"]
    (False, True, True, False)

A prediction with a refine stage's answer (:class:`~gge.types.Refinement`) also gets the ``refined``
pick: the refined point, or the base strategy's pick where the stage gave none.
"""

from __future__ import annotations

from gge.errors import GgeError
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS, REFINED, select_all
from gge.types import Absent, Candidate, Prediction, Refinement, Region, Sample, SampleResult


def candidate_hits(region: Region, candidate: Candidate | None) -> bool:
    """Whether one candidate hits the region (official rule; abstentions hit only absent targets).

    An absent target with ``abstention_hits=False`` (OSWorld-G ``refusals=miss``) is hit by nothing.

    Args:
        region: The sample's target.
        candidate: A candidate, or None for "no answer".

    Returns:
        True on a hit.
    """
    if candidate is None or not candidate.parsed:
        return False
    if candidate.point is None:
        return isinstance(region, Absent) and region.abstention_hits
    return region.contains(candidate.point[0], candidate.point[1])


def score_sample(
    sample: Sample,
    prediction: Prediction,
    *,
    k: int,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
) -> SampleResult:
    """Score one sample: hits of the first ``k`` candidates and the Top-1 of every strategy.

    Args:
        sample: The sample, with its official region.
        prediction: The model's candidates for it.
        k: Candidates scored at most (later ones are ignored).
        cluster_radius: Radius of the ``cluster`` strategy, as a fraction of the image diagonal.

    Returns:
        The per-sample result.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    candidates = tuple(prediction.candidates[:k])
    hits = tuple(candidate_hits(sample.region, c) for c in candidates)
    picks = select_all(candidates, sample.image_size, cluster_radius=cluster_radius)
    if prediction.refine is not None:
        if len(prediction.candidates) > k:
            raise GgeError(
                f"{sample.benchmark} {sample.id}: the refine stage refined a pick among "
                f"{len(prediction.candidates)} candidates, but the run scores the first {k}: evaluate with "
                f"the K the model was asked for (k={len(prediction.candidates)})"
            )
        picks[REFINED] = refined_pick(prediction.refine, picks.get(prediction.refine.base))
    top1 = {name: candidate_hits(sample.region, pick) for name, pick in picks.items()}
    return SampleResult(
        benchmark=sample.benchmark,
        id=sample.id,
        labels=sample.labels,
        k=k,
        candidates=candidates,
        hits=hits,
        picks=picks,
        top1=top1,
        format_error=prediction.format_error
        or (
            prediction.image_error is None
            and prediction.server_error is None
            and not prediction.not_in_file
            and not any(c.parsed for c in candidates)
        ),
        raw=prediction.raw,
        critic_format_error=prediction.critic_format_error,
        critic_raw=prediction.critic_raw,
        truncated=prediction.truncated,
        image_error=prediction.image_error,
        image_path=sample.image_path,
        image_size=sample.image_size,
        region=sample.region,
        costs=prediction.costs,
        refine=prediction.refine,
        not_in_file=prediction.not_in_file,
        decoy=sample.decoy,
        server_error=prediction.server_error,
        rescue=prediction.rescue,
    )


def refined_pick(refine: Refinement, base: Candidate | None) -> Candidate | None:
    """The ``refined`` strategy's pick: the refined point, or the base pick where the stage gave none.

    Example:
        >>> refined_pick(Refinement(triggered=True, point=(3.0, 4.0)), Candidate((1.0, 1.0))).point
        (3.0, 4.0)
        >>> refined_pick(Refinement(triggered=False), Candidate((1.0, 1.0))).point
        (1.0, 1.0)
    """
    if refine.point is None:
        return base
    return Candidate(refine.point, raw=refine.raw)
