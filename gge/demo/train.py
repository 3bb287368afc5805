"""Train the demo proposer/critic by reinforcement learning, with gge attached as a callback.

The shape of a proposer/critic RL recipe (COPC-style) in miniature, on 2 CPU cores in a few minutes:

- **Data.** Training screens are the synthetic suite (:func:`gge.benchmarks.demo.suite.write_demo_suite`)
  drawn with other seeds (:data:`TRAIN_SEEDS`) than the evaluation split (seed 0, the suite
  ``python eval.py`` evaluates), read back through gge's own benchmark loaders; samples whose target
  is absent are left out (the demo model never abstains).
- **Proposer** (:class:`DemoRL`). For each instruction, ``sets`` draws of ``k`` distinct cells
  (Plackett-Luce sampling from the cell softmax). Each candidate is rewarded for a hit, plus a small
  proximity term (``exp(-distance / 96 normalised px)``, zero inside the target) that gives the
  first steps a gradient; each *set* is rewarded for covering the target (any hit). Advantages are
  group-relative: candidate rewards are normalised over the sample's ``sets x k`` candidates, set
  rewards over its sets, and every candidate's log-likelihood term is weighted by its own advantage
  plus ``coverage`` times its set's. A small entropy bonus keeps the distribution from collapsing.
- **Critic.** Scores the candidates of each set (detached from the proposer); its reward is the hit
  of the candidate it ranks first, optimised in expectation under the softmax of its scores
  (``sum_i softmax(s)_i (hit_i - mean hit)``): exact policy gradient over the set.
- **gge attached.** :class:`~gge.callbacks.GroundingEvalCallback` evaluates the policy on the
  evaluation split at every epoch end and logs ``grounding/...`` to W&B (offline without network)
  or CSV; ``ModelCheckpoint`` keeps the last state.

Command line (docs/demo.md names it)::

    python -m gge.demo.train --out runs/demo [--logger csv|wandb] [--epochs 8] [--ship]

``--ship`` also writes the trained weights over the package's default checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from gge.benchmarks import DEFAULT_BENCHMARKS
from gge.benchmarks.demo.suite import cache_dir, write_demo_suite
from gge.benchmarks.demo.suite.constants import BENCHMARKS as SUITE_BENCHMARKS
from gge.benchmarks.loading import load_benchmarks
from gge.models.demo import DemoNet, DemoPolicy, View, cell_points, make_view, sample_cells, save_checkpoint
from gge.types import Absent, Region, Sample

__all__ = ["TRAIN_SEEDS", "DemoRL", "TrainConfig", "load_training_samples", "main", "train"]

TRAIN_SEEDS = tuple(range(1001, 1017))
"""Seeds of the training screens (the evaluation split is the demo suite of seed 0)."""

TRAIN_BENCHMARKS = SUITE_BENCHMARKS
"""Training reads the seven sets of the first release (OSWorld-G twice: original and refined instructions)."""

EVAL_BENCHMARKS = DEFAULT_BENCHMARKS
"""The callback evaluates what ``python eval.py`` does: its ``grounding/mean/*`` is the README's mean of 6."""


@dataclass
class TrainConfig:
    """Settings of a training run (saved in the checkpoint).

    Attributes:
        seeds: Suite seeds of the training split.
        per_benchmark: Samples per benchmark and seed.
        epochs: Training epochs.
        steps_per_epoch: Optimizer steps per epoch.
        batch_size: Screenshots per step.
        per_screen: Instructions per screenshot per step.
        k: Candidates per set.
        sets: Candidate sets drawn per instruction.
        lr: Adam learning rate.
        proximity: Weight of the proximity reward.
        coverage: Weight of the set (coverage) advantage.
        entropy: Weight of the entropy bonus.
        critic_weight: Weight of the critic's loss.
        clip: Gradient norm clipping.
        eval_k: Candidates per sample when evaluating (Oracle@K of the callback and of the shipped policy).
        eval_samples: Samples per benchmark evaluated by the callback at each epoch end.
        seed: Seed of everything random in training.
    """

    seeds: tuple[int, ...] = TRAIN_SEEDS
    per_benchmark: int = 36
    epochs: int = 16
    steps_per_epoch: int = 40
    batch_size: int = 4
    per_screen: int = 4
    k: int = 8
    sets: int = 8
    lr: float = 3e-3
    proximity: float = 0.5
    coverage: float = 0.5
    entropy: float = 0.02
    critic_weight: float = 2.0
    eval_k: int = 5
    clip: float = 1.0
    eval_samples: int = 18
    seed: int = 0


SUITE_SECONDS = 2
"""About how long one training suite takes to draw on 2 CPU cores: the first progress line's estimate
(measured on the development machine, 2026-12-07: 16 suites drawn in 32 s, beside another job)."""

_clock: Callable[[], float] = time.perf_counter
"""The clock the progress lines read (a test sets it)."""


def duration(seconds: float) -> str:
    """A duration as the progress lines say it.

    Example:
        >>> duration(42.4), duration(192)
        ('42 s', '3 min 12 s')
    """
    whole = round(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


def load_training_samples(
    seeds: Sequence[int], per_benchmark: int, progress: TextIO | None = None
) -> list[Sample]:
    """The training split: the suite drawn with ``seeds``, read through the benchmark loaders.

    Suites are generated once into the gge cache (``$GGE_CACHE``, else ``~/.cache/gge``). Drawing
    them takes minutes, so with ``progress`` a line first says what is drawn, where and about how
    long it takes (:data:`SUITE_SECONDS` a suite), then one line per suite drawn says the time
    spent and about how much is left (the mean so far times the suites left).

    Args:
        seeds: Suite seeds.
        per_benchmark: Samples per benchmark and seed.
        progress: Where the progress lines go (None: nowhere).

    Returns:
        The samples whose target is on the screen.
    """

    def say(text: str) -> None:
        if progress is not None:
            print(text, file=progress, flush=True)

    roots = {seed: cache_dir() / f"demo-train-{per_benchmark}-seed{seed}" for seed in seeds}
    to_draw = [seed for seed, root in roots.items() if not (root / "demo_manifest.json").is_file()]
    if to_draw:
        say(
            f"training split: drawing {len(to_draw)} of {len(roots)} synthetic suites "
            f"({per_benchmark} samples per benchmark each) into {cache_dir()}, once (later runs read "
            f"them back): about {duration(SUITE_SECONDS * len(to_draw))} on 2 CPU cores"
        )
    started = _clock()
    drawn = 0
    out: list[Sample] = []
    for seed, root in roots.items():
        if seed in to_draw:
            write_demo_suite(root, seed=seed, per_benchmark=per_benchmark)
            drawn += 1
            spent = _clock() - started
            left = spent / drawn * (len(to_draw) - drawn)
            say(
                f"  suite {drawn} of {len(to_draw)} drawn (seed {seed}): {duration(spent)} so far, "
                f"about {duration(left)} left"
            )
        loaded = load_benchmarks(TRAIN_BENCHMARKS, root)
        for name in TRAIN_BENCHMARKS:
            out += [s for s in loaded.samples[name] if not isinstance(s.region, Absent)]
    return out


class ScreenSet(Dataset[tuple[View, list[Sample]]]):
    """Screenshots with the instructions about them; each screenshot decoded once (uint8 in memory).

    Instructions are drawn from the dataset's own generator, so load it with ``num_workers=0`` (workers
    would each copy the generator and repeat the same draws every epoch).

    Args:
        samples: Samples; those sharing a screenshot are grouped.
        per_screen: Instructions drawn per screenshot each time it is fetched (all when fewer).
        seed: Seed of those draws.
    """

    def __init__(self, samples: Sequence[Sample], per_screen: int = 4, seed: int = 0) -> None:
        from gge.benchmarks.images import decode_image

        groups: dict[tuple[str, tuple[int, int]], list[Sample]] = {}
        for s in samples:
            groups.setdefault((s.image_path, s.image_size), []).append(s)
        self.screens = [
            (make_view(decode_image(group[0]), group[0].image_size).to_uint8(), group)
            for group in groups.values()
        ]
        self.per_screen = per_screen
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.screens)

    def __getitem__(self, i: int) -> tuple[View, list[Sample]]:
        view, group = self.screens[i]
        if len(group) <= self.per_screen:
            return view, group
        chosen = torch.randperm(len(group), generator=self.generator)[: self.per_screen]
        return view, [group[j] for j in chosen.tolist()]


def _proximity(region: Region, points: torch.Tensor, scale: float) -> torch.Tensor:
    """exp(-d / 96) with d the distance from each point to the target's box, in normalised pixels."""
    box = region.pixel_box()
    if box is None:
        return torch.zeros(len(points))
    x1, y1, x2, y2 = (v / scale for v in box)
    dx = torch.clamp(torch.maximum(x1 - points[:, 0], points[:, 0] - x2), min=0)
    dy = torch.clamp(torch.maximum(y1 - points[:, 1], points[:, 1] - y2), min=0)
    return torch.exp(-torch.sqrt(dx * dx + dy * dy) / 96)


def _normalise(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean()) / (x.std(unbiased=False) + 1e-6)


class DemoRL(pl.LightningModule):
    """The RL training of :class:`~gge.models.demo.DemoNet` (see the module docstring).

    Args:
        config: Training settings.
    """

    def __init__(self, config: TrainConfig | None = None) -> None:
        super().__init__()
        self.config = config or TrainConfig()
        self.net = DemoNet()
        self.save_hyperparameters({"train": asdict(self.config)})

    def policy(self) -> DemoPolicy:
        """The policy the callback evaluates (the same weights, sampling as at inference)."""
        return DemoPolicy(self.net, k=self.config.eval_k, seed=self.config.seed)

    def _screen_loss(
        self, view: View, samples: Sequence[Sample]
    ) -> tuple[torch.Tensor, list[dict[str, float]]]:
        c = self.config
        view = view.to_float()
        q = self.net.instruction([s.instruction for s in samples])
        all_logits = self.net.cell_logits(view.small, q)
        columns = all_logits.shape[2]
        losses, stats = [], []
        for i, sample in enumerate(samples):
            logits = all_logits[i]
            logp_sets, points_sets = [], []
            for _ in range(c.sets):
                idx, logp = sample_cells(logits, c.k)
                points_sets.append(cell_points(idx, columns, torch.rand(len(idx), 2), view.extent))
                logp_sets.append(logp)
            logp = torch.stack(logp_sets)  # (sets, k)
            flat = torch.cat(points_sets)  # (sets * k, 2) normalised pixels
            hits = torch.tensor(
                [float(sample.region.contains(x * view.scale, y * view.scale)) for x, y in flat.tolist()]
            ).reshape(c.sets, -1)
            reward = hits + c.proximity * _proximity(sample.region, flat, view.scale).reshape(c.sets, -1)
            covered = hits.amax(dim=1)
            advantage = _normalise(reward) + c.coverage * _normalise(covered)[:, None]
            probs = torch.softmax(logits.flatten(), 0)
            entropy = -(probs * torch.log(probs + 1e-12)).sum()
            proposer_loss = -(advantage.detach() * logp).mean() - c.entropy * entropy

            scores = self.net.critic_scores(view, flat, q[i : i + 1]).reshape(c.sets, -1)
            pick = torch.softmax(scores, dim=1)
            critic_loss = -(pick * (hits - hits.mean(dim=1, keepdim=True))).sum(dim=1).mean()
            first = scores.argmax(dim=1)
            losses.append(proposer_loss + c.critic_weight * critic_loss)
            stats.append(
                {
                    "hit": float(hits.mean()),
                    "oracle": float(covered.mean()),
                    "critic_top1": float(hits.gather(1, first[:, None]).mean()),
                    "entropy": float(entropy.detach()),
                }
            )
        return torch.stack(losses).sum(), stats

    def training_step(self, batch: list[tuple[View, list[Sample]]], batch_idx: int) -> torch.Tensor:
        """One RL step over a batch of screenshots and instructions about them."""
        total, stats = [], []
        for view, samples in batch:
            loss, st = self._screen_loss(view, samples)
            total.append(loss)
            stats.extend(st)
        loss = torch.stack(total).sum() / len(stats)
        for key in stats[0]:
            self.log(f"train/{key}", sum(s[key] for s in stats) / len(stats), batch_size=len(stats))
        self.log("train/loss", loss.detach(), prog_bar=True, batch_size=len(stats))
        return loss

    def validation_step(self, batch: list[tuple[View, list[Sample]]], batch_idx: int) -> None:
        """Held-out training-distribution screens: how often the proposer's best cell hits."""
        hits = []
        for view, samples in batch:
            v = view.to_float()
            all_logits = self.net.cell_logits(v.small, self.net.instruction([s.instruction for s in samples]))
            for sample, logits in zip(samples, all_logits, strict=True):
                idx = logits.flatten().argmax()[None]
                x, y = cell_points(idx, logits.shape[1], torch.full((1, 2), 0.5), v.extent)[0].tolist()
                hits.append(float(sample.region.contains(x * v.scale, y * v.scale)))
        self.log("val/argmax_hit", sum(hits) / len(hits), batch_size=len(hits))

    def transfer_batch_to_device(self, batch: Any, device: torch.device, dataloader_idx: int) -> Any:
        """Batches stay as they are (samples and views; the demo trains on the CPU)."""
        return batch

    def configure_optimizers(self) -> torch.optim.Optimizer:
        """Adam over both networks."""
        return torch.optim.Adam(self.net.parameters(), lr=self.config.lr)


def _collate(items: list[tuple[View, list[Sample]]]) -> list[tuple[View, list[Sample]]]:
    return items


def _logger(kind: str, out: Path) -> Any:
    from pytorch_lightning.loggers import CSVLogger

    if kind == "csv":
        return CSVLogger(str(out), name="logs")
    if kind == "wandb":
        from pytorch_lightning.loggers import WandbLogger

        mode = os.environ.get("WANDB_MODE", "offline")
        return WandbLogger(project="gge-demo", save_dir=str(out), offline=mode != "online")
    raise SystemExit(f"unknown logger {kind!r}; use csv or wandb")


def train(
    config: TrainConfig,
    out: Path,
    *,
    logger: str = "csv",
    ship: bool = False,
    data_root: Path | None = None,
) -> dict[str, Any]:
    """Train, evaluate with the callback at every epoch end, save ``out/demo_policy.pt``.

    Args:
        config: Training settings.
        out: Output folder (logs, Lightning checkpoints, ``demo_policy.pt``, ``train_summary.json``).
        logger: ``csv`` or ``wandb`` (offline unless ``WANDB_MODE`` says otherwise).
        ship: Also overwrite the packaged default checkpoint.
        data_root: The evaluation split in the six layouts (default: the demo suite of seed 0).

    Returns:
        The checkpoint's metadata (settings, final callback metrics, time taken).
    """
    from gge.callbacks import GroundingEvalCallback
    from gge.models.demo import default_checkpoint

    started = time.perf_counter()
    print(
        f"demo training: {config.epochs} epochs of {config.steps_per_epoch} steps on CPU, gge evaluating "
        f"the policy at each epoch's end; outputs in {out}",
        file=sys.stderr,
        flush=True,
    )
    pl.seed_everything(config.seed, workers=True, verbose=False)
    samples = load_training_samples(config.seeds, config.per_benchmark, progress=sys.stderr)
    screens = sorted({s.image_path for s in samples})
    held_out = set(screens[::20])
    train_set = ScreenSet(
        [s for s in samples if s.image_path not in held_out], config.per_screen, config.seed
    )
    val_set = ScreenSet([s for s in samples if s.image_path in held_out], per_screen=1000)
    prepared = time.perf_counter() - started
    print(f"training split: {len(train_set)} screenshots ({prepared:.0f} s to prepare)", file=sys.stderr)
    generator = torch.Generator().manual_seed(config.seed)
    loader = DataLoader(
        train_set, batch_size=config.batch_size, shuffle=True, collate_fn=_collate, generator=generator
    )
    val_loader = DataLoader(val_set, batch_size=8, collate_fn=_collate)
    module = DemoRL(config)
    callback = GroundingEvalCallback(
        benchmarks=list(EVAL_BENCHMARKS),
        data_root=data_root,
        policy=lambda m: m.policy(),
        every_n_epochs=1,
        max_samples_per_benchmark=config.eval_samples,
        k=config.eval_k,
        seed=0,
        table_samples=4,
    )
    trainer = pl.Trainer(
        max_epochs=config.epochs,
        limit_train_batches=config.steps_per_epoch,
        accelerator="cpu",
        devices=1,
        logger=_logger(logger, out),
        callbacks=[callback, pl.callbacks.ModelCheckpoint(dirpath=str(out / "checkpoints"), save_last=True)],
        num_sanity_val_steps=0,
        log_every_n_steps=min(5, config.steps_per_epoch),
        gradient_clip_val=config.clip,
        enable_model_summary=False,
        deterministic=True,
    )
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", ".*does not have many workers.*")
            trainer.fit(module, loader, val_loader)
    finally:
        if logger == "wandb":
            trainer.logger.experiment.finish()  # type: ignore[union-attr]  # the run this command opened
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("grounding/")}
    meta = {
        "train": asdict(config),
        "epochs_run": trainer.current_epoch,
        "final_callback_metrics": metrics,
        "seconds": round(time.perf_counter() - started, 1),
        "torch": str(torch.__version__),
    }
    save_checkpoint(module.net, out / "demo_policy.pt", meta)
    if ship:
        save_checkpoint(module.net, default_checkpoint(), meta)
    (out / "train_summary.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m gge.demo.train``: train the demo policy (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m gge.demo.train", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/demo"), help="output folder")
    parser.add_argument("--logger", choices=("csv", "wandb"), default="csv")
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    parser.add_argument("--steps-per-epoch", type=int, default=TrainConfig.steps_per_epoch)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ship", action="store_true", help="also overwrite the packaged default checkpoint")
    args = parser.parse_args(argv)
    # the shipped checkpoint was trained with 2 threads (results depend on the thread count); set
    # here, not in train(), which may run in a process that forks later (threads do not survive a fork)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    config = TrainConfig(epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, seed=args.seed)
    meta = train(config, args.out, logger=args.logger, ship=args.ship)
    print(
        json.dumps({"seconds": meta["seconds"], **meta["final_callback_metrics"]}, indent=2, sort_keys=True)
    )


if __name__ == "__main__":
    main()
