"""GroundingEvalCallback with a refine stage: a GroundingPolicy with refine=zoom over the module's model.

A real Lightning fit on CPU; the module holds a tiny Qwen3-VL trained to point at the first ScreenSpot-v2
demo sample (tests/helpers/pointing_checkpoint; training touches only another parameter). The entry has
``refine`` and the logged scalars carry ``grounding/<b>/refine/...`` and the refine stage's cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytorch_lightning as pl
import torch
from answered import Noting
from gge.callbacks import GroundingEvalCallback
from lightning_fit import _trainer
from pointing_checkpoint import OVERRIDES, first_sample, pointing_qwen3_vl
from torch.utils.data import DataLoader, TensorDataset

from gge.documents.results import BenchmarkEntry
from gge.models.factory import preset_settings
from gge.models.hf import TransformersBackend
from gge.models.hf_loading import load_model, load_processor
from gge.models.policy import GroundingPolicy
from gge.types import Prediction, Sample

pytestmark = pytest.mark.usefixtures("one_thread")

BENCH = "screenspot_v2"


class Holding(pl.LightningModule):
    """Trains a parameter of its own; holds the pointing Qwen3-VL the callback evaluates."""

    def __init__(self, ckpt: Path) -> None:
        super().__init__()
        self.vl = load_model(ckpt)
        self.w = torch.nn.Parameter(torch.zeros(1))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return (self.w**2).sum() + 1.0

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD([self.w], lr=0.1)

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=2)


class Keeping(GroundingEvalCallback):
    """The callback, keeping the entries of each evaluation."""

    entries: list[dict[str, BenchmarkEntry]]

    def evaluate(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict[str, BenchmarkEntry]:
        out = super().evaluate(trainer, pl_module)
        self.entries.append(out)
        return out


@pytest.mark.slow
def test_the_callback_refines_and_logs_the_refine_scalars(demo_suite: Path, tmp_path: Path) -> None:
    ckpt = pointing_qwen3_vl(tmp_path / "Qwen3-VL-tiny", demo_suite)
    processor = load_processor(ckpt, min_pixels=OVERRIDES["min_pixels"], max_pixels=OVERRIDES["max_pixels"])
    settings = preset_settings("qwen3_vl", k=1, refine="zoom", **OVERRIDES)
    answered: list[tuple[Sample, Prediction]] = []

    def policy(module: pl.LightningModule) -> Noting:
        return Noting(GroundingPolicy(TransformersBackend(module.vl, processor), settings), answered)

    cb = Keeping(benchmarks=[BENCH], data_root=demo_suite, policy=policy, k=1, batch_size=8, table_samples=0)
    cb.entries = []
    trainer = _trainer(tmp_path, [cb], max_epochs=1, enable_checkpointing=False)
    trainer.fit(Holding(ckpt))

    (entries,) = cb.entries
    entry = entries[BENCH]
    refine = entry["refine"]
    assert len(answered) == refine["samples"] == entry["samples"] == 36
    # a sample is refined where its one candidate has a point (refine_when=always)
    pointed = [s.id for s, p in answered if p.candidates and p.candidates[0].point is not None]
    assert [s.id for s, p in answered if p.refine is not None and p.refine.triggered] == pointed
    assert refine["triggered"] == len(pointed) and refine["trigger_rate"] == pytest.approx(
        100 * len(pointed) / 36
    )
    # the trained sample: (500, 500) of 0..1000 is (195, 422) of 390 x 844; the window 195 x 422 around it
    # starts at 195 - 97.5 = 97.5 -> 98 and 422 - 211 = 211
    trained = next(p for s, p in answered if s.id == first_sample(demo_suite).id)
    assert trained.candidates[0].point == (195.0, 422.0)
    assert trained.refine is not None and trained.refine.window == (98.0, 211.0, 293.0, 633.0)
    assert [c.stage for c in trained.costs] == ["propose", "refine"]
    # the scalars a logger gets: the refine entry's, and the refine stage's cost
    logged = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith(f"grounding/{BENCH}/")}
    for name in ("before", "after", "fixed", "broken", "trigger_rate"):
        assert logged[f"grounding/{BENCH}/refine/{name}"] == pytest.approx(float(refine[name])), name
    assert logged[f"grounding/{BENCH}/cost/refine/calls_per_sample"] == pytest.approx(len(pointed) / 36)
    assert entry["cost"]["stages"]["refine"]["calls_per_sample"] == pytest.approx(len(pointed) / 36)
