"""A Lightning ``Trainer`` on CPU and a module without a validation loop, for the callback's tests.

:func:`_trainer` is the CPU trainer of the callback tests (CSV logger, no progress bar); :class:`NoVal`
trains and answers each target's centre (and, with ``garbage=True``, far-off garbage points first);
:func:`_fit` fits a module under one callback. Used by ``test_callback.py``, ``test_callback_safety.py``
and ``test_images.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from gge.callbacks import GroundingEvalCallback
from pytorch_lightning.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset

from gge.types import Candidate, Prediction, Sample


def _trainer(tmp_path: Path, callbacks: list[Any], **kw: Any) -> pl.Trainer:
    args: dict[str, Any] = {
        "default_root_dir": str(tmp_path),
        "accelerator": "cpu",
        "devices": 1,
        "max_epochs": 4,
        "logger": CSVLogger(str(tmp_path)),
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 1,
        "log_every_n_steps": 1,
        **kw,
    }
    return pl.Trainer(callbacks=callbacks, **args)


GARBAGE = (1e19, 1e308, -float("inf"), float("inf"))


class NoVal(pl.LightningModule):
    """Trains, has no validation loop; answers each target's centre and far-off garbage points."""

    def __init__(self, garbage: bool = False) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.garbage = garbage

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return (self.w**2).sum() + 1.0

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=2)

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        out = []
        for s in samples:
            box = s.region.pixel_box()
            centre = (0.0, 0.0) if box is None else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            cands = [Candidate(centre, 0.1)]
            if self.garbage:  # an RL policy emitting garbage, picked by the critic
                cands = [Candidate((g, -g), 0.9) for g in GARBAGE] + cands
            out.append(Prediction(s.benchmark, s.id, tuple(cands)))
        return out


def _fit(module: pl.LightningModule, tmp_path: Path, cb: GroundingEvalCallback, **kw: Any) -> pl.Trainer:
    trainer = _trainer(tmp_path, [cb], enable_checkpointing=False, **kw)
    trainer.fit(module)
    return trainer
