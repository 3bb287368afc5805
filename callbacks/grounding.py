"""GroundingEvalCallback: evaluate the model being trained on GUI-grounding benchmarks.

Attach it to any ``Trainer``: on validation epochs (or every n training steps) it runs the
benchmarks on the model being trained, sharded across the training's processes, and logs
``grounding/<benchmark>/top1``, ``grounding/<benchmark>/oracle@K``, ``grounding/mean/top1``... so that
``ModelCheckpoint(monitor=...)`` and ``EarlyStopping`` can use them; with a ``WandbLogger`` it also logs
tables of screenshots with the target, the candidates and the pick drawn (TensorBoard gets the
overlays as images; other loggers get them as files under the log folder).

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
import torch
from pytorch_lightning.utilities import rank_zero_warn
from pytorch_lightning.utilities.model_helpers import is_overridden

from gge.analysis import policy_analysis_options
from gge.benchmarks import get_benchmark
from gge.benchmarks.base import Benchmark
from gge.data import make_loader
from gge.errors import GgeError
from gge.evaluate import evaluate_batches, gather_results, needs_images
from gge.metrics import benchmark_metrics, scalar_metrics
from gge.models.base import Policy
from gge.sampling import strata_keys, stratified_subset
from gge.selection import DEFAULT_CLUSTER_RADIUS, check_strategy
from gge.types import Sample

BenchmarkSpec = str | Path | Mapping[str, Any] | None


def _has_validation_loop(trainer: pl.Trainer, pl_module: pl.LightningModule) -> bool:
    """Whether this fit will run validation epochs (a validation_step, a val dataloader, batches > 0)."""
    if not is_overridden("validation_step", pl_module) or trainer.limit_val_batches == 0:
        return False
    source = getattr(getattr(trainer.fit_loop.epoch_loop, "val_loop", None), "_data_source", None)
    is_defined = getattr(source, "is_defined", None)
    return bool(is_defined()) if callable(is_defined) else True


class GroundingEvalCallback(pl.Callback):
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
    """

    def __init__(
        self,
        benchmarks: Sequence[str] | Mapping[str, BenchmarkSpec],
        *,
        data_root: str | Path | None = None,
        policy: Callable[[pl.LightningModule], Policy] | None = None,
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
    ) -> None:
        specs = dict(benchmarks) if isinstance(benchmarks, Mapping) else {name: None for name in benchmarks}
        if not specs:
            raise GgeError("GroundingEvalCallback: name at least one benchmark")
        for name in specs:
            get_benchmark(name)
        check_strategy(selection)
        if every_n_steps is not None:
            every_n_epochs = None
        if every_n_epochs is None and every_n_steps is None:
            raise GgeError("GroundingEvalCallback: set every_n_epochs or every_n_steps")
        for label, value in (("every_n_epochs", every_n_epochs), ("every_n_steps", every_n_steps)):
            if value is not None and value < 1:
                raise GgeError(f"GroundingEvalCallback: {label} must be at least 1, got {value}")
        for label, value in (("k", k), ("batch_size", batch_size)):
            if value < 1:
                raise GgeError(f"GroundingEvalCallback: {label} must be at least 1, got {value}")
        if max_samples_per_benchmark is not None and max_samples_per_benchmark < 1:
            raise GgeError(
                "GroundingEvalCallback: max_samples_per_benchmark must be >= 1, "
                f"got {max_samples_per_benchmark}"
            )
        self.specs = specs
        self.data_root = None if data_root is None else Path(data_root)
        self.policy_fn = policy
        self.every_n_epochs = every_n_epochs
        self.every_n_steps = every_n_steps
        self.max_samples = max_samples_per_benchmark
        self.k = k
        self.selection = selection
        self.cluster_radius = cluster_radius
        self.seed = seed
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.table_samples = table_samples
        self.pad_batches = pad_batches
        self.log_dir = log_dir
        self.strict_images = strict_images
        self.benchmarks: dict[str, Benchmark] = {}
        self.samples: dict[str, list[Sample]] = {}
        self.sample_ids: dict[str, list[str]] | None = None
        self.table_ids: dict[str, list[str]] = {}
        self.history: list[dict[str, Any]] = []
        self._last_step: int | None = None
        self._on_train_epochs = False  # no validation loop: evaluate at training epoch ends

    # -- set-up ---------------------------------------------------------------------------------
    def _root(self, name: str, spec: BenchmarkSpec) -> tuple[Path, dict[str, Any]]:
        bench = get_benchmark(name)
        options: dict[str, Any] = {}
        if isinstance(spec, Mapping):
            options = dict(spec)
        elif spec is not None:
            options = {"root": str(spec)}
        root = options.pop("root", None)
        if root is not None:
            return Path(root), options
        if self.data_root is None:
            from gge.demo import demo_root

            self.data_root = demo_root(self.seed)
        return self.data_root / bench.directory, options

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        """Read the benchmarks once (every rank reads the same files)."""
        if self.samples:
            return
        for name, spec in self.specs.items():
            bench = get_benchmark(name)
            root, options = self._root(name, spec)
            try:
                opts = bench.options_type(**options)
            except TypeError as e:
                raise GgeError(f"GroundingEvalCallback: options of {name}: {e}") from None
            self.benchmarks[name] = bench
            self.samples[name] = bench.load(root, opts).samples

    def _select(self) -> dict[str, list[Sample]]:
        """The fixed subset of each benchmark (chosen once, or restored from a checkpoint)."""
        if self.sample_ids is None:
            self.sample_ids = {}
            for name, samples in self.samples.items():
                spec = self.benchmarks[name].tables[0] if self.benchmarks[name].tables else None
                keys = strata_keys(
                    self.benchmarks[name].label_keys, spec.rows if spec else None, spec.cols if spec else None
                )
                chosen = stratified_subset(samples, self.max_samples, keys, seed=self.seed)
                self.sample_ids[name] = [s.id for s in chosen]
        out: dict[str, list[Sample]] = {}
        for name, samples in self.samples.items():
            by_id = {s.id: s for s in samples}
            ids = self.sample_ids.get(name, [])
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise GgeError(
                    f"GroundingEvalCallback: {name}: {len(missing)} sample ids saved in the checkpoint "
                    f"are not in the benchmark files any more (e.g. {missing[0]})"
                )
            out[name] = [by_id[i] for i in ids]
            if name not in self.table_ids:
                keys = strata_keys(self.benchmarks[name].label_keys, None, None)
                picked = stratified_subset(out[name], self.table_samples, keys, seed=self.seed)
                self.table_ids[name] = [s.id for s in picked]
        return out

    # -- when to run ----------------------------------------------------------------------------
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """With ``every_n_epochs`` and no validation loop, fall back to training epoch ends (warned once)."""
        self._on_train_epochs = self.every_n_epochs is not None and not _has_validation_loop(
            trainer, pl_module
        )
        if self._on_train_epochs:
            rank_zero_warn(
                "GroundingEvalCallback: this fit has no validation loop (no validation_step, no val "
                "dataloader, or limit_val_batches=0), so there are no validation epochs: with "
                f"every_n_epochs={self.every_n_epochs} it evaluates at the end of training epochs instead"
            )

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Evaluate at the end of every n-th validation epoch (never during the sanity check)."""
        if trainer.sanity_checking or self.every_n_epochs is None or self._on_train_epochs:
            return
        if (trainer.current_epoch + 1) % self.every_n_epochs == 0:
            self.evaluate(trainer, pl_module)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Evaluate at the end of every n-th training epoch when the fit has no validation loop."""
        n = self.every_n_epochs
        if self._on_train_epochs and n is not None and (trainer.current_epoch + 1) % n == 0:
            self.evaluate(trainer, pl_module)

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Evaluate every n training steps, when configured by steps."""
        step = trainer.global_step
        if (
            self.every_n_steps is not None
            and step > 0
            and step % self.every_n_steps == 0
            and step != self._last_step
        ):
            self.evaluate(trainer, pl_module)

    # -- the evaluation -------------------------------------------------------------------------
    def _policy(self, pl_module: pl.LightningModule) -> Policy:
        policy = self.policy_fn(pl_module) if self.policy_fn is not None else pl_module
        if not callable(getattr(policy, "predict", None)):
            raise GgeError(
                f"GroundingEvalCallback: {type(pl_module).__name__} has no predict(samples); pass "
                "policy=lambda module: <a Policy> (e.g. gge.models.policy.GroundingPolicy over the "
                "module's model)"
            )
        return policy  # type: ignore[return-value]

    def evaluate(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> dict[str, dict[str, Any]]:
        """Run every benchmark now, log the numbers, and return the results.json-style entries.

        Every rank must call this (it gathers results across ranks). The module is put in eval mode
        under ``torch.no_grad`` and back in its previous mode afterwards.
        """
        self._last_step = trainer.global_step
        subsets = self._select()
        policy = self._policy(pl_module)
        strategy_name = type(trainer.strategy).__name__.lower()
        pad = (
            self.pad_batches
            if self.pad_batches is not None
            else ("fsdp" in strategy_name or "deepspeed" in strategy_name)
        )
        was_training = pl_module.training
        pl_module.eval()
        entries: dict[str, dict[str, Any]] = {}
        all_results: dict[str, Any] = {}
        try:
            with torch.no_grad():
                for name, samples in subsets.items():
                    loader = make_loader(
                        samples,
                        rank=trainer.global_rank,
                        world=trainer.world_size,
                        batch_size=self.batch_size,
                        num_workers=self.num_workers,
                        pad_batches=pad,
                        decode=needs_images(policy),
                    )
                    local = evaluate_batches(
                        policy,
                        loader,
                        k=self.k,
                        cluster_radius=self.cluster_radius,
                        strict_images=self.strict_images,
                    )
                    results = gather_results(local, samples)  # a collective: every rank calls it
                    entries[name] = benchmark_metrics(
                        self.benchmarks[name],
                        results,
                        k=self.k,
                        strategy=self.selection,
                        **policy_analysis_options(policy),
                    )
                    all_results[name] = results
        finally:
            pl_module.train(was_training)
        self._log_scalars(pl_module, entries)
        # trainer.log_dir broadcasts (a collective): read it on every rank, use it on rank 0.
        log_dir = self.log_dir or (trainer.log_dir if trainer.loggers else trainer.default_root_dir)
        if trainer.is_global_zero:
            # Tables and overlays are a view of the numbers: a failure there (a logger's network,
            # a disk, an odd image) is reported and never raised into training.
            try:
                self._log_media(trainer, subsets, all_results, entries, log_dir)
            except Exception as e:
                rank_zero_warn(
                    f"GroundingEvalCallback: logging the tables and overlays failed at step "
                    f"{trainer.global_step} ({type(e).__name__}: {e}); the scalars were logged, "
                    "training goes on"
                )
        self.history.append(
            {
                "epoch": trainer.current_epoch,
                "step": trainer.global_step,
                **{
                    n: {"top1": e["top1"], f"oracle@{self.k}": e[f"oracle@{self.k}"]}
                    for n, e in entries.items()
                },
            }
        )
        return entries

    def _log_scalars(self, pl_module: pl.LightningModule, entries: dict[str, dict[str, Any]]) -> None:
        """The same values on every rank (results are gathered first), so no sync is needed."""
        for key, value in scalar_metrics(entries, self.k).items():
            pl_module.log(key, value, sync_dist=False, rank_zero_only=False)

    def _log_media(
        self,
        trainer: pl.Trainer,
        subsets: dict[str, list[Sample]],
        results: dict[str, Any],
        entries: dict[str, dict[str, Any]],
        log_dir: str | Path | None,
    ) -> None:
        from gge.loggers import log_evaluation

        for name, samples in subsets.items():
            log_evaluation(
                trainer.loggers,
                step=trainer.global_step,
                benchmark=self.benchmarks[name],
                entry=entries[name],
                samples={s.id: s for s in samples},
                results=results[name],
                table_ids=self.table_ids[name],
                k=self.k,
                strategy=self.selection,
                log_dir=log_dir,
            )

    # -- checkpoints ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The fixed subset, the table ids and the history of evaluations."""
        return {
            "sample_ids": self.sample_ids,
            "table_ids": self.table_ids,
            "history": self.history,
            "seed": self.seed,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the subset (so curves stay comparable across a resume) and the history."""
        self.sample_ids = state_dict.get("sample_ids")
        self.table_ids = dict(state_dict.get("table_ids") or {})
        self.history = list(state_dict.get("history") or [])
