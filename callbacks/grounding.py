"""GroundingEvalCallback: evaluate the model being trained on GUI-grounding benchmarks.

Attach it to any ``Trainer``: on validation epochs (or every n training steps) it runs the
benchmarks on the model being trained, sharded across the training's processes, and logs
``grounding/<benchmark>/top1``, ``grounding/<benchmark>/oracle@K``, ``grounding/mean/top1``... so that
``ModelCheckpoint(monitor=...)`` and ``EarlyStopping`` can use them; with a ``WandbLogger`` it also logs
tables of screenshots with the target, the candidates and the pick drawn (TensorBoard gets the
overlays as images; other loggers get them as files under the log folder).

It is the Lightning adapter over :class:`gge.run.online.OnlineEvaluator`, which it shares with the
transformers / TRL callback (:class:`gge.callbacks.GroundingEvalTrainerCallback`).

Example:
    >>> cb = GroundingEvalCallback(benchmarks=["screenspot_v2"], data_root="/data/gui", every_n_epochs=2)
    >>> cb.every_n_epochs, cb.k
    (2, 5)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.utilities import rank_zero_warn
from pytorch_lightning.utilities.model_helpers import is_overridden

from gge.documents.results import BenchmarkEntry
from gge.errors import GgeError
from gge.models.base import Predictor
from gge.run.online import BenchmarkSpec, EvaluatorViews, OnlineEvaluator, check_every, check_policy, is_due
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS
from gge.types import Sample

OWNER = "GroundingEvalCallback"


def _has_validation_loop(trainer: pl.Trainer, pl_module: pl.LightningModule) -> bool:
    """Whether this fit will run validation epochs (a validation_step, a val dataloader, batches > 0)."""
    if not is_overridden("validation_step", pl_module) or trainer.limit_val_batches == 0:
        return False
    source = getattr(getattr(trainer.fit_loop.epoch_loop, "val_loop", None), "_data_source", None)
    is_defined = getattr(source, "is_defined", None)
    return bool(is_defined()) if callable(is_defined) else True


class GroundingEvalCallback(EvaluatorViews, pl.Callback):
    """Evaluate the module being trained on grounding benchmarks during training.

    Args:
        benchmarks: Benchmark names (read from ``data_root/<folder>``), or a mapping from name to
            its root folder, or to its options (``{"root": ..., "language": "cn"}``).
        data_root: Folder holding one folder per benchmark; None with no root given: the synthetic
            demo suite (generated on first use).
        policy: A function from the LightningModule to a policy (something with
            ``predict(samples)``, e.g. a :class:`gge.models.policy.GroundingPolicy` over a
            :class:`gge.models.hf.TransformersBackend` wrapping the module's HF model and processor).
            Default: the module itself, which must then implement ``predict``.
        every_n_epochs: Evaluate at the end of every n-th validation epoch (None: not by epoch). A fit
            with no validation loop (no ``validation_step``, no val dataloader, or
            ``limit_val_batches=0``) has no validation epochs: the callback then evaluates at the end of
            every n-th training epoch instead, and says so once when the fit starts.
        every_n_steps: Evaluate every n training steps instead (None: not by step).
        max_samples_per_benchmark: Evaluate a fixed, seeded subset of this many samples per
            benchmark, stratified by the benchmark's official table cells; the same samples every
            time (saved in checkpoints).
        k: Candidates scored per sample (Oracle@1..K).
        selection: The selection strategy reported as Top-1.
        cluster_radius: Radius of the ``cluster`` strategy.
        seed: Seed of the subset and of the demo suite.
        batch_size: Samples per model call.
        num_workers: DataLoader workers decoding screenshots.
        table_samples: Samples per benchmark shown as images in the logged tables (same ids every time).
        pad_batches: Give every rank the same number of batches (FSDP / DeepSpeed ZeRO-3, where every
            forward is a collective); padding results are dropped. Default: on for strategies whose
            name says they shard parameters.
        log_dir: Where overlays go when no logger takes images (default: the trainer's log folder).
        strict_images: Stop at the first unreadable screenshot (default: that sample is a miss,
            counted under ``image_errors``; training goes on).
        critic_pool: Also judge the critic alone on a frozen synthetic pool per sample each evaluation
            (``{"n": 4, "orders": "rotate", "seed": 0, "kinds": [...], "near": [...]}``, every key
            optional; ``{}`` for the defaults): ``grounding/<name>/critic_pool/accuracy``,
            ``consistency``, ``first_position_rate`` on the same candidates every time.
    """

    def __init__(
        self,
        benchmarks: Sequence[str] | Mapping[str, BenchmarkSpec],
        *,
        data_root: str | Path | None = None,
        policy: Callable[[pl.LightningModule], Predictor] | None = None,
        every_n_epochs: int | None = 1,
        every_n_steps: int | None = None,
        max_samples_per_benchmark: int | None = None,
        k: int = 5,
        selection: str = "critic",
        cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
        seed: int = 0,
        batch_size: int = 8,
        num_workers: int = 0,
        table_samples: int = 8,
        pad_batches: bool | None = None,
        log_dir: str | Path | None = None,
        strict_images: bool = False,
        critic_pool: Mapping[str, Any] | None = None,
    ) -> None:
        self.evaluator = OnlineEvaluator(
            benchmarks,
            owner=OWNER,
            data_root=data_root,
            max_samples_per_benchmark=max_samples_per_benchmark,
            k=k,
            selection=selection,
            cluster_radius=cluster_radius,
            seed=seed,
            batch_size=batch_size,
            num_workers=num_workers,
            table_samples=table_samples,
            strict_images=strict_images,
            critic_pool=critic_pool,
        )
        if every_n_steps is not None:
            every_n_epochs = None
        if every_n_epochs is None and every_n_steps is None:
            raise GgeError(f"{OWNER}: set every_n_epochs or every_n_steps")
        check_every(OWNER, every_n_epochs=every_n_epochs, every_n_steps=every_n_steps)
        self.policy_fn = policy
        self.every_n_epochs = every_n_epochs
        self.every_n_steps = every_n_steps
        self.pad_batches = pad_batches
        self.log_dir = log_dir
        self._last_step: int | None = None
        self._on_train_epochs = False  # no validation loop: evaluate at training epoch ends

    # -- set-up ---------------------------------------------------------------------------------
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        """Read the benchmarks once (every rank reads the same files)."""
        self.evaluator.load()

    def _select(self) -> dict[str, list[Sample]]:
        """The fixed subset of each benchmark (chosen once, or restored from a checkpoint)."""
        return self.evaluator.select()

    # -- when to run ----------------------------------------------------------------------------
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """With ``every_n_epochs`` and no validation loop, fall back to training epoch ends (warned once)."""
        self._on_train_epochs = self.every_n_epochs is not None and not _has_validation_loop(
            trainer, pl_module
        )
        if self._on_train_epochs:
            rank_zero_warn(
                f"{OWNER}: this fit has no validation loop (no validation_step, no val "
                "dataloader, or limit_val_batches=0), so there are no validation epochs: with "
                f"every_n_epochs={self.every_n_epochs} it evaluates at the end of training epochs instead"
            )

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Evaluate at the end of every n-th validation epoch (never during the sanity check)."""
        if trainer.sanity_checking or self._on_train_epochs:
            return
        if is_due(trainer.current_epoch + 1, self.every_n_epochs):
            self.evaluate(trainer, pl_module)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Evaluate at the end of every n-th training epoch when the fit has no validation loop."""
        if self._on_train_epochs and is_due(trainer.current_epoch + 1, self.every_n_epochs):
            self.evaluate(trainer, pl_module)

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Evaluate every n training steps, when configured by steps."""
        step = trainer.global_step
        if is_due(step, self.every_n_steps) and step != self._last_step:
            self.evaluate(trainer, pl_module)

    # -- the evaluation -------------------------------------------------------------------------
    def _policy(self, pl_module: pl.LightningModule) -> Predictor:
        policy = self.policy_fn(pl_module) if self.policy_fn is not None else pl_module
        return check_policy(
            policy,
            OWNER,
            type(pl_module).__name__,
            "policy=lambda module: <a Policy> (e.g. gge.models.policy.GroundingPolicy over the "
            "module's model)",
        )

    def evaluate(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict[str, BenchmarkEntry]:
        """Run every benchmark now, log the numbers, and return the results.json-style entries.

        Every rank must call this (it gathers results across ranks). The module is put in eval mode
        under ``torch.no_grad`` and afterwards every submodule is back in its own mode.
        """
        self._last_step = trainer.global_step
        subsets = self.evaluator.select()
        policy = self._policy(pl_module)
        strategy_name = type(trainer.strategy).__name__.lower()
        pad = (
            self.pad_batches
            if self.pad_batches is not None
            else ("fsdp" in strategy_name or "deepspeed" in strategy_name)
        )
        evaluation = self.evaluator.run(
            policy,
            rank=trainer.global_rank,
            world=trainer.world_size,
            pad_batches=pad,
            module=pl_module,
            subsets=subsets,
        )
        # The same values on every rank (results are gathered first), so no sync is needed.
        for key, value in evaluation.scalars.items():
            pl_module.log(key, value, sync_dist=False, rank_zero_only=False)
        # trainer.log_dir broadcasts (a collective): read it on every rank, use it on rank 0.
        log_dir = self.log_dir or (trainer.log_dir if trainer.loggers else trainer.default_root_dir)
        if trainer.is_global_zero:
            self.evaluator.log_media_safely(
                evaluation, step=trainer.global_step, loggers=trainer.loggers, log_dir=log_dir
            )
        self.evaluator.record(evaluation, step=trainer.global_step, epoch=trainer.current_epoch)
        return evaluation.entries

    # -- checkpoints ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The fixed subset, the table ids and the history of evaluations."""
        return self.evaluator.state_dict()

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the subset (so curves stay comparable across a resume) and the history."""
        self.evaluator.load_state_dict(state_dict)
