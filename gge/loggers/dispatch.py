"""Per-sample evaluation views for the trainer's loggers: W&B tables, TensorBoard images, or JPEG files.

:func:`log_evaluation` sends one benchmark's evaluation to every logger that can show images,
choosing by the logger's class name, so nothing here imports wandb, Lightning or TensorBoard:

* ``WandbLogger``: :func:`gge.loggers.wandb.log_evaluation_wandb` on ``logger.experiment`` (the
  samples table with box layers, the breakdown table, the Oracle@k curve), stepped by Lightning's
  ``trainer/global_step`` metric;
* ``TensorBoardLogger``: one overlay image per id (:func:`gge.drawing.draw_overlay`) under
  the tag ``grounding/<benchmark>/<id>``;
* no logger that takes images (``CSVLogger``, no logger at all...): the overlays as JPEG files
  ``<log_dir>/grounding/<benchmark>/step_<step>/<id>.jpg``.

Scalars are not logged here (the caller logs them), and only rank zero may call this.

Example:
    >>> safe_file_name("apps/a b:1")
    'apps_a_b_1'
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from gge.benchmarks.base import Benchmark
from gge.benchmarks.images import open_image
from gge.documents.results import BenchmarkEntry
from gge.drawing import draw_overlay, thumbnail
from gge.loggers.wandb import log_evaluation_wandb
from gge.types import Sample, SampleResult

LIGHTNING_STEP_KEY = "trainer/global_step"
"""The step metric Lightning's WandbLogger logs with every row (and defines as every key's x axis)."""

JPEG_QUALITY = 90


def _class_names(logger: Any) -> set[str]:
    return {cls.__name__ for cls in type(logger).__mro__}


def is_wandb_logger(logger: Any) -> bool:
    """Whether ``logger`` is (a subclass of) Lightning's ``WandbLogger``, without importing it.

    Example:
        >>> class WandbLogger: ...
        >>> class MyLogger(WandbLogger): ...
        >>> is_wandb_logger(MyLogger()), is_wandb_logger(object())
        (True, False)
    """
    return "WandbLogger" in _class_names(logger)


def is_tensorboard_logger(logger: Any) -> bool:
    """Whether ``logger`` is (a subclass of) Lightning's ``TensorBoardLogger``, without importing it.

    Example:
        >>> class TensorBoardLogger: ...
        >>> is_tensorboard_logger(TensorBoardLogger()), is_tensorboard_logger(None)
        (True, False)
    """
    return "TensorBoardLogger" in _class_names(logger)


def safe_file_name(sample_id: str) -> str:
    """A file name stem for a sample id: runs of characters other than ``[A-Za-z0-9._-]`` become ``_``.

    Example:
        >>> safe_file_name("../x"), safe_file_name("")
        ('.._x', '_')
    """
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", sample_id)
    return "_" if stem in ("", ".", "..") else stem


def _overlays(
    samples: Mapping[str, Sample],
    results: Sequence[SampleResult],
    table_ids: Sequence[str],
    strategy: str,
    max_width: int,
) -> Iterator[tuple[str, Image.Image]]:
    """(id, overlay) for each id of ``table_ids`` that has a sample and a result, in that order."""
    by_id = {r.id: r for r in results}
    for sid in table_ids:
        result = by_id.get(sid)
        sample = samples.get(sid)
        if result is None or sample is None:
            continue
        try:
            with open_image(sample.image_path) as im:
                small, _ = thumbnail(im, max_width)
        except (OSError, ValueError) as e:
            warnings.warn(f"gge: cannot read image of sample {sid!r}: {e}", stacklevel=3)
            continue
        yield sid, draw_overlay(small, sample, result, strategy, max_width=max_width)


def _fallback_dir(loggers: Sequence[Any], log_dir: str | Path | None) -> Path | None:
    if log_dir is not None:
        return Path(log_dir)
    for logger in loggers:
        folder = getattr(logger, "log_dir", None)
        if isinstance(folder, (str, Path)):
            return Path(folder)
    return None


def log_evaluation(
    loggers: Sequence[Any],
    *,
    step: int,
    benchmark: Benchmark,
    entry: BenchmarkEntry,
    samples: Mapping[str, Sample],
    results: Sequence[SampleResult],
    table_ids: Sequence[str],
    k: int,
    strategy: str,
    log_dir: str | Path | None,
    max_width: int = 960,
    variant: str | None = None,
) -> list[Path]:
    """Show one benchmark's evaluation in every logger that takes images, else write JPEG overlays.

    Args:
        loggers: The trainer's loggers (``trainer.loggers``); any may be absent.
        step: The training step (``trainer.global_step``).
        benchmark: The benchmark (its ``name`` keys everything, its ``title`` heads the plots).
        entry: The benchmark's results.json entry (:func:`gge.scoring.metrics.benchmark_metrics`).
        samples: Samples by id.
        results: The scored results.
        table_ids: The ids shown, in this order (keep them the same every evaluation); ids without
            a result or sample are skipped.
        k: The K of Oracle@K.
        strategy: The selection strategy whose pick is "Top-1".
        log_dir: Folder for the JPEG fallback; None takes the first logger's ``log_dir``, and
            without one nothing is written.
        max_width: Largest image width in pixels.
        variant: The benchmark's variant for the W&B tables' ``variant`` column
            (:func:`gge.documents.caveats.variant_text`); None reads the entry's ``load.variant``.

    Returns:
        The JPEG files written (empty when a logger took the images).
    """
    took_images = False
    tensorboard = [lg for lg in loggers if is_tensorboard_logger(lg)]
    for logger in loggers:
        if is_wandb_logger(logger):
            log_evaluation_wandb(
                logger.experiment,
                step=step,
                benchmark_name=benchmark.name,
                title=benchmark.title,
                entry=entry,
                samples=samples,
                results=results,
                table_ids=table_ids,
                k=k,
                strategy=strategy,
                max_width=max_width,
                step_key=LIGHTNING_STEP_KEY,
                variant=variant,
            )
            took_images = True
    if tensorboard:
        for sid, overlay in _overlays(samples, results, table_ids, strategy, max_width):
            array = np.asarray(overlay)
            for logger in tensorboard:
                logger.experiment.add_image(
                    f"grounding/{benchmark.name}/{sid}", array, step, dataformats="HWC"
                )
        took_images = True
    if took_images:
        return []
    folder = _fallback_dir(loggers, log_dir)
    if folder is None:
        return []
    out_dir = folder / "grounding" / safe_file_name(benchmark.name) / f"step_{step}"
    written: list[Path] = []
    used: set[str] = set()
    for sid, overlay in _overlays(samples, results, table_ids, strategy, max_width):
        stem = safe_file_name(sid)
        n = 1
        while stem in used:  # two ids that map to one name
            n += 1
            stem = f"{safe_file_name(sid)}-{n}"
        used.add(stem)
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{stem}.jpg"
        overlay.save(path, "JPEG", quality=JPEG_QUALITY)
        written.append(path)
    return written


__all__ = [
    "LIGHTNING_STEP_KEY",
    "is_tensorboard_logger",
    "is_wandb_logger",
    "log_evaluation",
    "log_evaluation_wandb",
    "safe_file_name",
]
