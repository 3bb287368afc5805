"""GroundingEvalModule: a LightningModule that evaluates a policy with ``trainer.predict``.

``python eval.py`` runs it through a Lightning Trainer, so one code path serves one CPU, one GPU or
many (``trainer.devices``, ``trainer.num_nodes``, ``trainer.strategy``). Each rank evaluates its own
shard of every benchmark (no padding, no sample twice; a rank may have none), appends every finished
sample to its own ``predictions.rank<r>.jsonl`` (a rerun skips what is there), and the results are
gathered once at the end and merged by sample id.

Example:
    >>> GroundingEvalModule.__name__
    'GroundingEvalModule'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import TQDMProgressBar
from pytorch_lightning.callbacks.progress.tqdm_progress import convert_inf

from gge.documents.records import encode
from gge.models.base import Predictor, capabilities
from gge.run.data import Item, Prefetch, make_loader
from gge.run.evaluate import evaluate_batches, gather_results, needs_images
from gge.run.predlog import PredictionLog, rank_log_path
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS
from gge.types import Sample, SampleResult


def move_policy(policy: object, device: torch.device) -> None:
    """Put the torch models a policy declares (``device_modules()``) on ``device`` (each rank's own).

    ``Module.to`` returns at once for a model already there.
    """
    for module in capabilities(policy).device_modules:
        if isinstance(module, torch.nn.Module):
            module.to(device)


class GroundingEvalModule(pl.LightningModule):
    """Evaluate a policy on benchmarks' samples under ``trainer.predict``.

    Run it with ``Trainer(use_distributed_sampler=False)``: the module shards the samples itself.

    Args:
        policy: The model (proposer and critic) to evaluate.
        samples: Samples per benchmark name, in benchmark order.
        k: Candidates scored per sample.
        cluster_radius: Radius of the ``cluster`` selection strategy.
        batch_size: Samples per model call.
        num_workers: DataLoader workers decoding screenshots.
        decode_max_pixels: Downscale screenshots above this area while decoding (the model adapter
            still maps points to the original size).
        strict_images: Stop at the first unreadable screenshot (default: it is that sample's counted
            failure).
        output_dir: Where each rank appends its ``predictions.rank<r>.jsonl``; None keeps no log.
        done_ids: Ids already finished per benchmark (resume): not evaluated again.
        pad_batches: Give every rank the same number of batches (sharded-parameter strategies,
            where every forward is a collective); padding results are dropped.
        on_gathered: Called on rank 0 with every rank's results once they are gathered (under the
            fork/spawn launchers rank 0 is a child process: write results to disk there).
    """

    def __init__(
        self,
        policy: Predictor,
        samples: Mapping[str, Sequence[Sample]],
        *,
        k: int = 5,
        cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
        batch_size: int = 8,
        num_workers: int = 0,
        decode_max_pixels: int | None = None,
        strict_images: bool = False,
        output_dir: str | Path | None = None,
        done_ids: Mapping[str, set[str]] | None = None,
        pad_batches: bool = False,
        on_gathered: Callable[[list[SampleResult]], None] | None = None,
    ) -> None:
        super().__init__()
        # A rank may have no sample (fewer samples than ranks, or all finished before a resume).
        self.allow_zero_length_dataloader_with_multiple_devices = True
        self.on_gathered = on_gathered
        self.policy = policy
        self.samples = {name: list(s) for name, s in samples.items()}
        self.names = list(self.samples)
        self.k = k
        self.cluster_radius = cluster_radius
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.decode_max_pixels = decode_max_pixels
        self.strict_images = strict_images
        self.output_dir = None if output_dir is None else Path(output_dir)
        self.done_ids = {name: set(ids) for name, ids in (done_ids or {}).items()}
        self.pad_batches = pad_batches
        self.local: list[SampleResult] = []
        self.gathered: list[SampleResult] = []
        self.samples_done = 0
        self._log: PredictionLog | None = None
        self._start = 0.0

    def _loader(self, name: str, min_batches: int = 0) -> torch.utils.data.DataLoader[Item]:
        return make_loader(
            self.samples[name],
            rank=self.global_rank,
            world=self.trainer.world_size if self._trainer is not None else 1,
            batch_size=self.batch_size,
            num_workers=self.num_workers,
            max_pixels=self.decode_max_pixels,
            pad_batches=self.pad_batches,
            skip_ids=self.done_ids.get(name, set()),
            decode=needs_images(self.policy),
            min_batches=min_batches,
        )

    def predict_dataloader(self) -> list[Any]:
        """One loader per benchmark over this rank's shard, finished samples left out.

        Lightning skips the whole loop (and its end-of-loop hooks, where results are gathered) on a
        rank without batches, which would leave the other ranks waiting in the collective. So while
        any benchmark has samples, a rank with nothing to do gets one padding batch (its result is
        dropped); every rank then runs the loop, or none does.
        """
        loaders = [self._loader(name) for name in self.names]
        if sum(len(dl) for dl in loaders) == 0:
            first = next((i for i, name in enumerate(self.names) if self.samples[name]), None)
            if first is not None:
                loaders[first] = self._loader(self.names[first], min_batches=1)
        if needs_images(self.policy):  # screenshots received and converted while the model works
            return [Prefetch(dl) for dl in loaders]
        return list(loaders)

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        """Batches are lists of samples and PIL images: the policy moves what it needs."""
        return batch

    def on_predict_start(self) -> None:
        """Open this rank's resume log and put the policy's model on this rank's device."""
        move_policy(self.policy, self.device)
        if self.output_dir is not None:
            self._log = PredictionLog(rank_log_path(self.output_dir, self.global_rank))
        self.local, self.gathered, self.samples_done = [], [], 0
        self._start = time.perf_counter()

    def _append(self, results: list[SampleResult]) -> None:
        if self._log is not None:
            self._log.append(encode(r) for r in results)

    def predict_step(self, batch: list[Item], batch_idx: int, dataloader_idx: int = 0) -> int:
        """Propose, rank and score one batch; append the results to this rank's log."""
        with torch.no_grad():
            results = evaluate_batches(
                self.policy,
                [batch],
                k=self.k,
                cluster_radius=self.cluster_radius,
                on_results=self._append,
                strict_images=self.strict_images,
            )
        self.local += results
        self.samples_done += len(results)
        return len(results)

    @property
    def samples_per_second(self) -> float:
        """Samples this rank finished per second since the run started."""
        elapsed = time.perf_counter() - self._start
        return self.samples_done / elapsed if elapsed > 0 else 0.0

    def close_log(self) -> None:
        """Close this rank's resume log (what is appended is on disk already; a no-op without one)."""
        if self._log is not None:
            self._log.close()

    def on_predict_epoch_end(self) -> None:
        """Close the log and gather every rank's results (a collective: every rank calls it)."""
        self.close_log()
        order = [s for name in self.names for s in self.samples[name]]
        self.gathered = gather_results(self.local, order)
        if self.global_rank == 0 and self.on_gathered is not None:
            self.on_gathered(self.gathered)


class BenchmarkProgressBar(TQDMProgressBar):
    """Lightning's tqdm bar, naming the benchmark being evaluated instead of ``DataLoader <i>``."""

    def on_predict_batch_start(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Reset the bar for each benchmark, as Lightning does per dataloader, titled with its name."""
        if not isinstance(pl_module, GroundingEvalModule):
            super().on_predict_batch_start(trainer, pl_module, batch, batch_idx, dataloader_idx)
            return
        if not self.has_dataloader_changed(dataloader_idx):
            return
        bar = self.predict_progress_bar
        bar.reset()
        bar.total = convert_inf(self.total_predict_batches_current_dataloader)
        bar.initial = 0
        bar.set_description(f"{self.predict_description} {pl_module.names[dataloader_idx]}")


class SamplesPerSecond(pl.Callback):
    """Shows samples/s in the progress bar of ``trainer.predict``."""

    def on_predict_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        """Update the bar's postfix."""
        bar = getattr(trainer.progress_bar_callback, "predict_progress_bar", None)
        if bar is not None and isinstance(pl_module, GroundingEvalModule):
            bar.set_postfix({"samples/s": f"{pl_module.samples_per_second:.2f}"}, refresh=False)
