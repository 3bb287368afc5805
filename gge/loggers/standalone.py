"""What a standalone ``python eval.py`` run reports besides its folder.

The console's summary of a finished run, and ``logger=``: the scalars, tables and overlays a trainer
logs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig

from gge.benchmarks.base import Benchmark
from gge.documents.caveats import copy_warning, headline_caveat
from gge.documents.results import ResultsDocument
from gge.report.markdown import (
    answered_line,
    head_lines,
    image_tokens_text,
    invocation_lines,
    render_summary,
    scored_text,
)
from gge.scoring.metrics import scalar_metrics
from gge.types import Sample, SampleResult

LOGGERS = ("wandb", "tensorboard", "csv")


def console_summary(document: ResultsDocument, titles: Mapping[str, str], output_dir: Path) -> str:
    """What the console shows of a finished run: its caveats, the headlines, where the detail is.

    The protocol line, who answered (:func:`~gge.report.markdown.answered_line`), the ``subset:``
    and ``Note:`` lines and a resumed run's ``resumed: N invocations`` line where the run has them,
    how Top-1 is chosen, report.md's summary table (each benchmark's headline and the mean), a warning
    for each Hub copy run with differences where the table's caveat is the variant's and for each
    benchmark whose image-token check found answers off the preset's expectation
    (:func:`~gge.report.markdown.image_tokens_text`), then the files written
    and where every other table is (splits, misses, target sizes, cost, budget: report.md and
    report.html). The summary is on screen at the end of the run, not a few hundred lines up.

    Args:
        document: The run's results document.
        titles: Each benchmark's title, by name.
        output_dir: The run's output folder.

    Returns:
        The text, without a final newline.

    Example:
        >>> entry = {"samples": 4, "official": {"rule": "micro", "top1": 50.0, "oracle@1": 50.0},
        ...          "format_errors": 0, "image_errors": []}
        >>> doc = {"protocol": "demo", "k": 1, "selection": "critic", "benchmarks": {"b": entry},
        ...        "mean": {"benchmarks": ["b"], "top1": 50.0, "oracle@1": 50.0}}
        >>> print(console_summary(doc, {"b": "B"}, Path("out")))
        Protocol: demo
        one answer per sample (Top-1 only)
        <BLANKLINE>
        ## Summary (headlines: official unless marked)
        <BLANKLINE>
        | benchmark | samples | official rule | Top-1 | format errors | image errors |
        |-----------|---------|---------------|-------|---------------|--------------|
        | B         | 4       | micro         | 50.00 | 0             | 0            |
        <BLANKLINE>
        wrote out/results.json, predictions.jsonl, report.md and report.html
        every table (by split, misses, size, cost, budget): report.md and report.html (open it in a browser)
    """
    k = document["k"]
    head = head_lines(document["protocol"], document.get("subset"), titles, document.get("notes", ()))
    who = answered_line(document.get("model") or {})
    if who is not None:  # under the protocol line, as in report.md
        head.insert(1, who)
    invocations = document.get("invocations") or []
    if len(invocations) > 1:  # the resumed line alone: report.md has the usage
        head.append(invocation_lines(invocations, {})[0])
    head.append(scored_text(k, document["selection"]))
    summary = render_summary(titles, document["benchmarks"], document["mean"], k=k)
    for name, entry in document["benchmarks"].items():  # the summary's caveat is the variant's, if any
        copy = copy_warning(entry)
        if copy and copy != headline_caveat(entry):
            summary += f"\n\nwarning: {titles.get(name, name)}: {copy}"
    for name, entry in document["benchmarks"].items():  # what the model saw, where it differs
        check = entry.get("image_tokens")
        seen = None if check is None else image_tokens_text(check)
        if seen is not None:
            summary += f"\n\nwarning: {titles.get(name, name)}: {seen}"
    written = [
        f"wrote {output_dir / 'results.json'}, predictions.jsonl, report.md and report.html",
        "every table (by split, misses, size, cost, budget): report.md and report.html "
        "(open it in a browser)",
    ]
    return "\n\n".join(["\n".join(head), summary, "\n".join(written)])


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
