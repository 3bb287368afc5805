"""Trainer callbacks shipped with gge (installed as ``gge.callbacks``).

* :class:`GroundingEvalCallback`: a PyTorch Lightning ``Callback``;
* :class:`GroundingEvalTrainerCallback`: a transformers ``TrainerCallback`` (also for TRL's trainers),
  imported on first use, so ``gge.callbacks`` imports without transformers installed.

Both are thin adapters over :class:`gge.run.online.OnlineEvaluator`: one evaluation, two trainers.

Example:
    >>> from gge.callbacks import GroundingEvalCallback
    >>> GroundingEvalCallback.__name__
    'GroundingEvalCallback'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .grounding import GroundingEvalCallback

if TYPE_CHECKING:
    from .hf_trainer import GroundingEvalTrainerCallback

__all__ = ["GroundingEvalCallback", "GroundingEvalTrainerCallback"]


def __getattr__(name: str) -> Any:
    if name == "GroundingEvalTrainerCallback":
        from .hf_trainer import GroundingEvalTrainerCallback

        return GroundingEvalTrainerCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
