"""What the evaluation loop asks of a model.

Issue-level note: the Proposer / Critic split of the model adapters builds on this; the loop only
needs a batch of samples in and one :class:`~gge.types.Prediction` per sample out.

Example:
    >>> from gge.types import Prediction
    >>> class Nothing:
    ...     def predict(self, samples):
    ...         return [Prediction(s.benchmark, s.id, format_error=True) for s in samples]
    >>> isinstance(Nothing(), Policy)
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from gge.types import Prediction, Sample


@runtime_checkable
class Policy(Protocol):
    """A grounding model as the loop sees it: samples in, candidates (with critic scores) out."""

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """One prediction per sample, in order, with points in original-image pixels."""
        ...


def settings_record(policy: object) -> dict[str, Any]:
    """The reproducibility record of a policy (its ``settings()`` if it has one)."""
    settings = getattr(policy, "settings", None)
    return dict(settings()) if callable(settings) else {"type": type(policy).__name__}
