"""The evaluation loop: samples -> model predictions -> per-sample results.

Example:
    >>> from gge.types import Box, Prediction, Sample, Candidate
    >>> class Centre:
    ...     def predict(self, samples):
    ...         return [Prediction(s.benchmark, s.id, (Candidate((5.0, 5.0)),)) for s in samples]
    >>> s = Sample("b", "0", "/x.png", (10, 10), "click", Box(0, 0, 9, 9))
    >>> [r.oracle for r in evaluate_samples(Centre(), [s], k=5)]
    [True]
"""

from __future__ import annotations

from collections.abc import Sequence

from gge.errors import GgeError
from gge.models.base import Policy
from gge.scoring import SampleResult, score_sample
from gge.selection import DEFAULT_CLUSTER_RADIUS
from gge.types import Sample


def evaluate_samples(
    policy: Policy,
    samples: Sequence[Sample],
    *,
    k: int,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
    batch_size: int = 16,
) -> list[SampleResult]:
    """Run a policy over samples in batches and score every answer.

    Args:
        policy: The model.
        samples: The samples, all of one benchmark or several.
        k: Candidates scored at most per sample.
        cluster_radius: Radius of the ``cluster`` selection strategy (fraction of the image diagonal).
        batch_size: Samples per ``policy.predict`` call.

    Returns:
        One result per sample, in order.
    """
    results: list[SampleResult] = []
    for start in range(0, len(samples), batch_size):
        batch = samples[start : start + batch_size]
        predictions = policy.predict(batch)
        if len(predictions) != len(batch):
            raise GgeError(f"the model returned {len(predictions)} predictions for {len(batch)} samples")
        for sample, pred in zip(batch, predictions, strict=True):
            if (pred.benchmark, pred.id) != (sample.benchmark, sample.id):
                raise GgeError(
                    f"the model answered {pred.benchmark}/{pred.id} for sample {sample.benchmark}/{sample.id}"
                )
            results.append(score_sample(sample, pred, k=k, cluster_radius=cluster_radius))
    return results
