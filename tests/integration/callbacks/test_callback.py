"""GroundingEvalCallback on a real Trainer.fit: when it runs, what it logs, checkpoints, DDP, W&B.

Its fixed subset follows its seed and the official tables' cells; ``pad_batches`` under ``ddp_fork``
gives the numbers of one process.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import pytorch_lightning as pl
import torch
from gge.callbacks import GroundingEvalCallback
from lightning_fit import _trainer
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

from gge.benchmarks import get_benchmark
from gge.benchmarks.sampling import stratified_subset
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.analysis import OUTCOMES, WHEN_PRESENT
from gge.types import Candidate, Prediction, Sample


class Toy(pl.LightningModule):
    """A trainable toy grounder: clicks each target's centre plus an offset that training shrinks."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = torch.nn.Parameter(torch.tensor([40.0, 30.0]))
        self.modes: list[bool] = []
        self.asked: list[tuple[Sample, float, float]] = []  # each sample asked, with the offset then

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return (self.offset**2).sum() * 0.01

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_loss", (self.offset**2).sum())

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.5)

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(4, 1)), batch_size=2)

    def val_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=2)

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        self.modes.append(self.training)
        dx, dy = (float(v) for v in self.offset.detach())
        out = []
        for s in samples:
            self.asked.append((s, dx, dy))
            box = s.region.pixel_box()
            if box is None:
                cands: tuple[Candidate, ...] = (Candidate(None),)
            else:
                cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
                cands = (Candidate((cx + dx, cy + dy), 0.2), Candidate((cx + dx / 4, cy + dy / 4), 0.9))
            out.append(Prediction(s.benchmark, s.id, cands))
        return out


def _cb(demo: Path, **kw: Any) -> GroundingEvalCallback:
    return GroundingEvalCallback(
        benchmarks=["screenspot_v2", "osworld_g"], data_root=demo, max_samples_per_benchmark=10, **kw
    )


def test_fit_logs_on_the_expected_epochs_and_checkpoint_monitors(demo_suite: Path, tmp_path: Path) -> None:
    cb = _cb(demo_suite, every_n_epochs=2, table_samples=3)
    ckpt = ModelCheckpoint(
        dirpath=tmp_path / "ckpt", monitor="grounding/mean/top1", mode="max", every_n_epochs=2
    )
    model = Toy()
    trainer = _trainer(tmp_path, [cb, ckpt])
    trainer.fit(model)
    assert [h["epoch"] for h in cb.history] == [1, 3]  # every second epoch, not the sanity check
    assert model.modes and not any(model.modes)  # evaluated in eval mode...
    assert model.training  # ...and put back in training mode
    metrics = trainer.callback_metrics
    for key in ("grounding/screenspot_v2/top1", "grounding/osworld_g/oracle@5", "grounding/mean/top1"):
        assert key in metrics, key
    assert float(metrics["grounding/screenspot_v2/top1"]) == pytest.approx(
        cb.history[-1]["screenspot_v2"]["top1"]
    )
    # why it misses, as scalars: the outcome split sums to 100 and Top-1 is its "hit" share
    # (not_in_file is a replay's kind, logged only where a sample has it)
    split = [float(metrics[f"grounding/osworld_g/{kind}"]) for kind in OUTCOMES if kind not in WHEN_PRESENT]
    assert "grounding/osworld_g/not_in_file" not in metrics
    assert sum(split) == pytest.approx(100.0)
    hit, top1 = metrics["grounding/osworld_g/hit"], metrics["grounding/osworld_g/top1"]
    assert float(hit) == pytest.approx(float(top1))
    assert "grounding/osworld_g/critic_gain/over_first" in metrics
    assert "grounding/osworld_g/calibration/auroc" in metrics
    # training shrinks the offset (SGD, lr 0.5 on 0.01 |o|^2: o *= 0.99 a step, 2 steps an epoch), so
    # the evaluations after epochs 1 and 3 click at the offsets 0.99^4 and 0.99^8 of (40, 30); their
    # numbers follow from the boxes: the critic picks (centre + offset / 4), Oracle@5 either point
    asked = [(s, dx, dy) for s, dx, dy in model.asked if s.benchmark == "screenspot_v2"]
    assert len(asked) == 2 * 10
    for i, evaluation in enumerate((asked[:10], asked[10:])):
        shrink = 0.99 ** (4 * (i + 1))
        assert [(dx, dy) for _, dx, dy in evaluation] == [pytest.approx((40 * shrink, 30 * shrink))] * 10
        top1 = oracle = 0
        for s, dx, dy in evaluation:
            x1, y1, x2, y2 = s.region.pixel_box()  # type: ignore[misc]
            cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
            inside = [x1 <= cx + f * dx <= x2 and y1 <= cy + f * dy <= y2 for f in (1.0, 0.25)]
            top1 += inside[1]
            oracle += any(inside)
        assert cb.history[i]["screenspot_v2"]["top1"] == pytest.approx(100 * top1 / 10)
        assert cb.history[i]["screenspot_v2"]["oracle@5"] == pytest.approx(100 * oracle / 10)
    assert ckpt.best_model_path and ckpt.best_model_score is not None
    # the logged curve is in the CSV metrics, at the evaluated steps only
    csv = (Path(trainer.logger.log_dir) / "metrics.csv").read_text().splitlines()  # type: ignore[union-attr]
    column = csv[0].split(",").index("grounding/mean/top1")
    assert sum(1 for line in csv[1:] if line.split(",")[column]) == 2
    # without W&B or TensorBoard the overlays are files under the log folder
    overlays = sorted((Path(trainer.log_dir) / "grounding").rglob("*.jpg"))  # type: ignore[arg-type]
    assert len(overlays) == 2 * 2 * 3  # 2 evaluations x 2 benchmarks x 3 table samples


def test_resume_keeps_the_fixed_subset_and_history(demo_suite: Path, tmp_path: Path) -> None:
    cb = _cb(demo_suite, every_n_epochs=1)
    ckpt = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    _trainer(tmp_path, [cb, ckpt], max_epochs=2).fit(Toy())
    assert cb.sample_ids is not None and all(len(ids) == 10 for ids in cb.sample_ids.values())

    again = _cb(demo_suite, every_n_epochs=1, seed=7)  # another seed would pick another subset...
    _trainer(tmp_path, [again], max_epochs=3).fit(Toy(), ckpt_path=str(tmp_path / "ckpt" / "last.ckpt"))
    assert again.sample_ids == cb.sample_ids  # ...but the checkpoint's subset wins
    assert [h["epoch"] for h in again.history] == [0, 1, 2]


def test_every_n_steps(demo_suite: Path, tmp_path: Path) -> None:
    cb = _cb(demo_suite, every_n_steps=3)
    _trainer(tmp_path, [cb], max_epochs=2).fit(Toy())  # 4 steps
    assert [h["step"] for h in cb.history] == [3]


def test_stratified_subset_is_fixed_and_proportional(demo_suite: Path) -> None:
    from gge.benchmarks import get_benchmark

    bench = get_benchmark("screenspot_v2")
    samples = bench.load(demo_suite / "screenspot_v2", bench.options_type()).samples
    a = stratified_subset(samples, 12, ("split", "data_type"), seed=0)
    assert [s.id for s in a] == [s.id for s in stratified_subset(samples, 12, ("split", "data_type"), seed=0)]
    assert [s.id for s in a] != [s.id for s in stratified_subset(samples, 12, ("split", "data_type"), seed=1)]
    for split in ("mobile", "desktop", "web"):
        assert sum(s.labels["split"] == split for s in a) == 4  # 12 of each split's 12 -> a third each
    assert len(stratified_subset(samples, 5, ("split",), seed=3)) == 5
    assert stratified_subset(samples, None, ("split",), seed=3) == samples


@pytest.mark.distributed
def test_ddp_fork_gives_the_single_process_numbers(demo_suite: Path, tmp_path: Path) -> None:
    single = _trainer(tmp_path / "one", [_cb(demo_suite, every_n_epochs=1)], max_epochs=1)
    single.fit(Toy())
    ddp = _trainer(
        tmp_path / "two", [_cb(demo_suite, every_n_epochs=1)], max_epochs=1, devices=2, strategy="ddp_fork"
    )
    ddp.fit(Toy())
    keys = [k for k in single.callback_metrics if k.startswith("grounding/")]
    assert keys
    for key in keys:
        assert float(ddp.callback_metrics[key]) == pytest.approx(float(single.callback_metrics[key])), key


def test_bad_arguments(demo_suite: Path, tmp_path: Path) -> None:
    with pytest.raises(GgeError, match="did you mean 'screenspot_pro'"):
        GroundingEvalCallback(benchmarks=["screenspot_pr"])
    with pytest.raises(GgeError, match="every_n_epochs"):
        GroundingEvalCallback(benchmarks=["screenspot_v2"], every_n_epochs=0)
    with pytest.raises(GgeError, match="selection"):
        GroundingEvalCallback(benchmarks=["screenspot_v2"], selection="best")

    class NoPredict(Toy):
        predict = None  # type: ignore[assignment]

    with pytest.raises(GgeError, match="no predict"):
        _trainer(tmp_path, [_cb(demo_suite, every_n_epochs=1)], max_epochs=1).fit(NoPredict())


def test_wandb_tables_from_a_training_run(demo_suite: Path, wandb_env: Path) -> None:
    import wandb
    from pytorch_lightning.loggers import WandbLogger
    from wandb_reader import find_run_dirs, read_run

    save = wandb_env / "runs"
    save.mkdir()
    logger = WandbLogger(offline=True, save_dir=str(save), project="gge-test")
    cb = _cb(demo_suite, every_n_epochs=1, table_samples=4)
    try:
        _trainer(wandb_env, [cb], max_epochs=2, logger=logger).fit(Toy())
    finally:
        wandb.finish()
    (run_dir,) = find_run_dirs(save)
    run = read_run(run_dir)
    tables = run.tables("grounding/screenspot_v2/samples")
    assert len(tables) == 2
    first, second = ([row["id"] for row in t.rows()] for t in tables)
    assert first == second == cb.table_ids["screenspot_v2"] and len(first) == 4  # the same samples each time
    image = tables[0].rows()[0]["image"]
    assert image.width <= 960 and {"ground_truth", "candidates", "pick"} <= set(image.boxes)
    # a training run's tables name the variant and its denominator as eval's do (all 36 loaded)
    (osworld, *_) = run.tables("grounding/osworld_g/samples")
    assert {row["variant"] for row in osworld.rows()} == {
        "instructions: original · refusals: scored · denominator: 36"
    }
    assert "variant" not in tables[0].rows()[0]  # ScreenSpot-v2 has no variant
    history_keys = set().union(*(row.keys() for row in run.history))
    assert "grounding/mean/top1" in history_keys


def test_standalone_eval_logs_to_wandb_and_finishes_its_run(demo_suite: Path, wandb_env: Path) -> None:

    import wandb
    from wandb_reader import find_run_dirs, read_run

    out = wandb_env / "eval"
    args = [
        f"data_root={demo_suite}",
        f"model.predictions={demo_suite / 'predictions.jsonl'}",
        f"output_dir={out}",
        "benchmarks=[screenspot_v2,osworld_g]",
        "logger=wandb",
        "table_samples=3",
    ]
    doc = run(parse_args(args), out=io.StringIO())
    assert wandb.run is None  # the run eval.py opened is finished
    (run_dir,) = find_run_dirs(out)
    logged = read_run(run_dir)
    for name in ("screenspot_v2", "osworld_g"):
        (table,) = logged.tables(f"grounding/{name}/samples")
        assert len(table.rows()) == 3
    values = {k: v for row in logged.history for k, v in row.items() if k.startswith("grounding/")}
    assert values["grounding/mean/top1"] == pytest.approx(doc["mean"]["top1"])


def test_standalone_eval_logs_to_csv(demo_suite: Path, tmp_path: Path) -> None:

    args = [
        f"data_root={demo_suite}",
        f"model.predictions={demo_suite / 'predictions.jsonl'}",
        f"output_dir={tmp_path}",
        "benchmarks=[screenspot_v2]",
        "logger=csv",
        "table_samples=2",
    ]
    run(parse_args(args), out=io.StringIO())
    (metrics,) = tmp_path.rglob("metrics.csv")
    assert "grounding/mean/top1" in metrics.read_text().splitlines()[0]
    assert len(list((tmp_path / "grounding" / "screenspot_v2").rglob("*.jpg"))) == 2


# -- the callback's fixed subset follows its seed and the official table's cells -------------------


def _load(demo: Path, name: str) -> list[Sample]:
    bench = get_benchmark(name)
    return bench.load(demo / bench.directory, bench.options_type()).samples


TABLE_CELLS = {  # the first official table of each benchmark: rows, columns
    "screenspot_v2": ("split", "data_type"),
    "screenspot_pro": ("group", "ui_type"),
    "mmbench_gui": ("platform", "grounding_type"),
    "osworld_g": ("category",),
}


def _cell(sample: Sample, keys: Sequence[str]) -> tuple[str, ...]:
    out = []
    for key in keys:
        value = sample.labels[key]
        out.append(value if isinstance(value, str) else value[0])  # multi-label: its first value
    return tuple(out)


def _callback_subset(demo: Path, n: int, seed: int) -> dict[str, list[str]]:
    cb = GroundingEvalCallback(
        benchmarks=list(TABLE_CELLS), data_root=demo, max_samples_per_benchmark=n, seed=seed
    )
    cb.setup(None, None, "validate")  # type: ignore[arg-type]  # setup reads only the files
    chosen = cb._select()
    assert cb.sample_ids == {name: [s.id for s in chosen[name]] for name in TABLE_CELLS}
    return cb.sample_ids


def test_callback_subset_follows_the_seed_and_the_table_cells(demo_suite: Path) -> None:
    n = 12
    a, b = _callback_subset(demo_suite, n, 0), _callback_subset(demo_suite, n, 1)
    for name, keys in TABLE_CELLS.items():
        samples = {s.id: s for s in _load(demo_suite, name)}
        assert len(a[name]) == len(b[name]) == n
        assert a[name] != b[name], name  # another seed, another draw
        expected = Counter(_cell(s, keys) for s in stratified_subset(list(samples.values()), n, keys, seed=5))
        for ids in (a[name], b[name]):
            assert Counter(_cell(samples[i], keys) for i in ids) == expected, name


# -- padding through the callback ------------------------------------------------------------------


class _Counting(pl.LightningModule):
    """Clicks each target's centre; appends each predict call's size to a file per rank."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.folder = folder

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return (self.w**2).sum()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        pass

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1)

    def val_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1)

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        with (self.folder / f"calls.{self.global_rank}").open("a") as f:
            f.write(" ".join(s.id for s in samples) + "\n")
        out = []
        for s in samples:  # a hit first for two samples in three, second otherwise
            box = s.region.pixel_box()
            hit = None if box is None else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            miss = (0.5, 0.5) if box is None else None
            pts = (hit, miss) if int(s.id.rsplit("_", 1)[-1]) % 3 else (miss, hit)
            out.append(Prediction(s.benchmark, s.id, tuple(Candidate(p) for p in pts)))
        return out


def _fit(folder: Path, demo: Path, devices: int, pad: bool | None) -> dict[str, float]:
    folder.mkdir(parents=True)
    cb = GroundingEvalCallback(
        benchmarks=["screenspot_v2"],
        data_root=demo,
        max_samples_per_benchmark=5,
        batch_size=2,
        pad_batches=pad,
    )
    trainer = pl.Trainer(
        default_root_dir=str(folder),
        accelerator="cpu",
        devices=devices,
        strategy="ddp_fork" if devices > 1 else "auto",
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[cb],
    )
    trainer.fit(_Counting(folder))
    return {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("grounding/")}


@pytest.mark.distributed
def test_callback_pad_batches_equals_no_padding(demo_suite: Path, tmp_path: Path) -> None:
    single = _fit(tmp_path / "one", demo_suite, 1, None)
    padded = _fit(tmp_path / "pad", demo_suite, 2, True)
    assert single and padded == single
    calls = {
        r: [line.split() for line in (tmp_path / "pad" / f"calls.{r}").read_text().splitlines()]
        for r in (0, 1)
    }
    # 5 samples, batches of 2: rank 0 has 3 (2 batches), rank 1 has 2 (1 batch), padded to 2
    assert [len(c) for c in calls[0]] == [2, 1] and [len(c) for c in calls[1]] == [2, 1]
    assert calls[1][1] == calls[1][0][:1]  # the padding item repeats the rank's first sample
    real = [i for c in calls[0] for i in c] + [i for c in calls[1][:1] for i in c]
    assert len(real) == len(set(real)) == 5
    assert 0 < single["grounding/screenspot_v2/top1"] < 100  # the numbers can tell a wrong merge
