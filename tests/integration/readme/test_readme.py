"""The README's callback snippet runs as written, under a real Trainer.fit on a tiny Qwen3-VL checkpoint."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import pytorch_lightning as pl
import torch
from answered import Noting, critic_pick, hits
from paths import ROOT
from pytorch_lightning.loggers import CSVLogger
from tiny_checkpoints import build_tiny_qwen3_vl
from torch.utils.data import DataLoader, TensorDataset

from gge.models.hf_loading import load_model
from gge.types import Prediction, Sample

pytestmark = pytest.mark.slow

README = ROOT / "README.md"


def _snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    (block,) = [b for b in blocks if "GroundingEvalCallback(" in b]
    return block


class Trained(pl.LightningModule):
    """A module holding an HF model as ``module.model`` (what the snippet's policy wraps)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self.w = torch.nn.Parameter(torch.zeros(1))

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return (self.w - 1).pow(2).sum()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_loss", self.w.sum())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD([self.w], lr=0.1)

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=2)

    def val_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=2)


def test_callback_snippet_runs_as_written(demo_suite: Path, tmp_path: Path, one_thread: None) -> None:
    ckpt = build_tiny_qwen3_vl(tmp_path / "Qwen3-VL-tiny")
    code = _snippet()
    # the only change: the two paths the snippet asks the reader to set
    code, n_ckpt = re.subn(r'^CKPT = ".*?"', f"CKPT = {str(ckpt)!r}", code, flags=re.MULTILINE)
    code, n_data = re.subn(r'^DATA = ".*?"', f"DATA = {str(demo_suite)!r}", code, flags=re.MULTILINE)
    assert n_ckpt == n_data == 1
    namespace: dict[str, Any] = {}
    exec(compile(code, str(README), "exec"), namespace)
    callback, trainer = namespace["callback"], namespace["trainer"]
    assert isinstance(trainer, pl.Trainer)

    callback.max_samples = 2  # keep the tiny run short: 2 samples per benchmark
    answered: list[tuple[Sample, Prediction]] = []
    snippet_policy = callback.policy_fn
    assert snippet_policy is not None

    callback.policy_fn = lambda module: Noting(snippet_policy(module), answered)  # notes what it answered
    module = Trained(load_model(ckpt))
    fit = pl.Trainer(
        default_root_dir=str(tmp_path),
        accelerator="cpu",
        max_epochs=1,
        logger=CSVLogger(str(tmp_path)),
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=0,
        callbacks=[callback],
    )
    fit.fit(module)
    metrics = fit.callback_metrics
    # Top-1 and Oracle@5 per benchmark against the benchmark's own hit test of what the model answered
    for name in ("screenspot_pro", "osworld_g"):
        mine = [(s, p) for s, p in answered if s.benchmark == name]
        assert len(mine) == 2
        top1 = oracle = 0
        for sample, pred in mine:
            top1 += hits(sample, critic_pick(pred))
            oracle += any(hits(sample, c) for c in pred.candidates[:5])
        assert float(metrics[f"grounding/{name}/top1"]) == pytest.approx(100 * top1 / 2)
        assert float(metrics[f"grounding/{name}/oracle@5"]) == pytest.approx(100 * oracle / 2)
    (entry,) = callback.history
    assert entry["epoch"] == 0 and set(entry) >= {"screenspot_pro", "osworld_g"}
