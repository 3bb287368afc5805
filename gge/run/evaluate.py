"""The evaluation loop shared by the CLI and the training callback.

samples -> model predictions -> per-sample results, on one rank's shard; results are gathered once
at the end (every rank calls the collective) and merged by sample id, so no sample counts twice.

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

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from PIL import Image

from gge.errors import GgeError
from gge.models.base import Capabilities, Predictor, capabilities
from gge.scoring.scoring import score_sample
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS
from gge.types import Prediction, Sample, SampleResult


def needs_images(policy: object) -> bool:
    """Whether a policy looks at screenshots (a replay model does not: nothing is decoded for it)."""
    return capabilities(policy).needs_images


def predict_batch(
    policy: Predictor, samples: Sequence[Sample], images: Sequence[Image.Image] | None
) -> list[Prediction]:
    """Ask a policy about a batch, handing it decoded screenshots when it takes them."""
    return _predict(policy, capabilities(policy), samples, images)


def _predict(
    policy: Predictor, caps: Capabilities, samples: Sequence[Sample], images: Sequence[Image.Image] | None
) -> list[Prediction]:
    if images is not None and caps.predict_images is not None:
        out = caps.predict_images(samples, images)
    else:
        out = policy.predict(samples)
    if len(out) != len(samples):
        raise GgeError(f"the model returned {len(out)} predictions for {len(samples)} samples")
    for sample, pred in zip(samples, out, strict=True):
        if (pred.benchmark, pred.id) != (sample.benchmark, sample.id):
            raise GgeError(
                f"the model answered {pred.benchmark}/{pred.id} for sample {sample.benchmark}/{sample.id}"
            )
    return out


def evaluate_batches(
    policy: Predictor,
    batches: Iterable[Sequence[Any]],
    *,
    k: int,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
    on_results: Callable[[list[SampleResult]], None] | None = None,
    strict_images: bool = False,
) -> list[SampleResult]:
    """Run a policy over batches of :class:`gge.run.data.Item` (decoded screenshots) and score them.

    Padding items (which keep every rank running the same number of forwards under sharded
    strategies) are run like the others and their results dropped. An item whose screenshot could
    not be read is not shown to the model: it is scored as a miss carrying its ``image_error``
    (counted apart, its path listed), unless ``strict_images`` stops the run there.

    Args:
        policy: The model.
        batches: Batches of items, e.g. from :func:`gge.run.data.make_loader`.
        k: Candidates scored at most per sample.
        cluster_radius: Radius of the ``cluster`` selection strategy.
        on_results: Called with each batch's results (e.g. to append them to the resume log).
        strict_images: Raise on the first unreadable screenshot instead.

    Returns:
        The results of the real (non-padding) items, in loader order.
    """
    from gge.run.data import Prefetch

    caps = capabilities(policy)
    if caps.needs_images and not isinstance(batches, Prefetch):
        batches = Prefetch(batches)  # screenshots received and converted while the model works
    results: list[SampleResult] = []
    for batch in batches:
        if not batch:
            continue
        bad = [it for it in batch if it.image_error is not None]
        if bad and strict_images:
            raise GgeError(f"{bad[0].image_error} (strict_images=true)")
        ok = [it for it in batch if it.image_error is None]
        answered = iter(
            _predict(
                policy, caps, [it.sample for it in ok], [it.image for it in ok] if caps.needs_images else None
            )
            if ok
            else []
        )
        preds = [
            next(answered)
            if it.image_error is None
            else Prediction(it.sample.benchmark, it.sample.id, image_error=it.image_error)
            for it in batch
        ]
        scored = [
            score_sample(it.sample, pred, k=k, cluster_radius=cluster_radius)
            for it, pred in zip(batch, preds, strict=True)
            if not it.padding
        ]
        if on_results is not None and scored:
            on_results(scored)
        results += scored
    return results


def gather_results(local: list[SampleResult], order: Sequence[Sample]) -> list[SampleResult]:
    """Every rank's results, merged by (benchmark, id) and put in sample order.

    Uses ``torch.distributed.all_gather_object`` when a process group is running (every rank must
    call this); otherwise returns the local results in sample order. A sample evaluated on two
    ranks counts once.

    Args:
        local: This rank's results.
        order: The samples, in the order results should come back.

    Returns:
        The merged results.
    """
    import torch.distributed as dist

    parts: list[list[SampleResult]] = [local]
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, local)
        parts = [list(p or []) for p in gathered]
    return merge_results(parts, order)


def merge_results(parts: Iterable[Iterable[SampleResult]], order: Sequence[Sample]) -> list[SampleResult]:
    """Merge result lists by (benchmark, id), first occurrence wins, in the order of ``order``.

    Results for samples not in ``order`` are dropped.
    """
    by_key: dict[tuple[str, str], SampleResult] = {}
    for part in parts:
        for r in part:
            by_key.setdefault((r.benchmark, r.id), r)
    return [by_key[(s.benchmark, s.id)] for s in order if (s.benchmark, s.id) in by_key]


def evaluate_samples(
    policy: Predictor,
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
    caps = capabilities(policy)
    results: list[SampleResult] = []
    for start in range(0, len(samples), batch_size):
        batch = samples[start : start + batch_size]
        predictions = _predict(policy, caps, batch, None)
        results += [
            score_sample(s, p, k=k, cluster_radius=cluster_radius)
            for s, p in zip(batch, predictions, strict=True)
        ]
    return results
