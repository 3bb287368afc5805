"""``logger=`` in a standalone ``python eval.py`` run: the scalars, tables and overlays a trainer logs."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig

from gge.benchmarks.base import Benchmark
from gge.documents.results import ResultsDocument
from gge.scoring.metrics import scalar_metrics
from gge.types import Sample, SampleResult

LOGGERS = ("wandb", "tensorboard", "csv")


def log_standalone(
    stack: ExitStack,
    cfg: DictConfig,
    output_dir: Path,
    document: ResultsDocument,
    benches: dict[str, Benchmark],
    samples: dict[str, list[Sample]],
    results: list[SampleResult],
    out: TextIO,
) -> None:
    """``logger=``: the scalars, tables and overlays a training run would log, for a standalone run."""
    from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger, WandbLogger

    from gge.benchmarks.sampling import stratified_subset
    from gge.loggers.dispatch import log_evaluation

    k = document["k"]
    logger: Any
    if cfg.logger == "wandb":
        # W&B stages table images (and caches artifacts) under the home folder unless told otherwise:
        # keep them with the run, under output_dir/wandb
        for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR"):
            if var not in os.environ:
                os.environ[var] = str((output_dir / "wandb").resolve())
                stack.callback(os.environ.pop, var, None)
        logger = WandbLogger(project=cfg.wandb_project, save_dir=str(output_dir), name=output_dir.name)
    elif cfg.logger == "tensorboard":
        logger = TensorBoardLogger(save_dir=str(output_dir), name="tensorboard")
    else:
        logger = CSVLogger(save_dir=str(output_dir), name="csv")
    try:
        logger.log_hyperparams(document["config"])
        scalars = scalar_metrics(document["benchmarks"], k)
        logger.log_metrics(scalars, step=0)
        for name, bench in benches.items():
            mine = [r for r in results if r.benchmark == name]
            shown = stratified_subset(samples[name], cfg.table_samples, (), seed=int(cfg.seed))
            log_evaluation(
                [logger],
                step=0,
                benchmark=bench,
                entry=document["benchmarks"][name],
                samples={s.id: s for s in samples[name]},
                results=mine,
                table_ids=[s.id for s in shown],
                k=k,
                strategy=str(cfg.selection),
                log_dir=output_dir,
            )
        logger.save()
    finally:
        if cfg.logger == "wandb":
            logger.experiment.finish()  # the run this command opened
    print(f"logged to {cfg.logger}", file=out)
