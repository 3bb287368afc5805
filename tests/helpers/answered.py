"""What a policy answered, noted for tests that recompute Top-1 / Oracle@K by the benchmark's own hit test."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gge.types import Absent, Candidate, Prediction, Sample


def hits(sample: Sample, c: Candidate) -> bool:
    """A point in the target, or an abstention where the target is absent (OSWorld-G's infeasible tasks)."""
    if c.point is None:
        return c.abstains and isinstance(sample.region, Absent)
    return sample.region.contains(*c.point)


def critic_pick(pred: Prediction) -> Candidate:
    """The critic's pick: the first candidate of the highest score (the first when none is scored)."""
    scored = [c for c in pred.candidates if c.score is not None]
    return max(scored, key=lambda c: c.score or 0.0) if scored else pred.candidates[0]


class Noting:
    """A policy wrapped so that every (sample, prediction) it gives is appended to ``answered``."""

    def __init__(self, inner: Any, answered: list[tuple[Sample, Prediction]]) -> None:
        self.inner = inner
        self.answered = answered
        self.settings_ = inner.settings_
        # what the loop asks a policy (gge.models.base.Policy), forwarded: the wrapper evaluates as it
        self.needs_images = inner.needs_images
        self.proposer_mode = inner.proposer_mode
        self.critic_mode = inner.critic_mode
        self.score_kind = inner.score_kind
        self.max_candidates = inner.max_candidates
        self.settings = inner.settings
        self.device_modules = inner.device_modules

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        out = self.inner.predict(samples)
        self.answered.extend(zip(samples, out, strict=True))
        return list(out)
