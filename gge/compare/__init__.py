"""Paired comparison of two runs on the same samples: ``gge compare A B``.

Two output folders of ``python eval.py`` (or two ``results.json`` files, each with the
``predictions.jsonl`` written beside it) are paired sample by sample. For every benchmark, and for
every cell of its official tables, the comparison gives the difference B − A in Top-1 and in
Oracle@K with a 95% interval from a **paired bootstrap that resamples screenshots** (samples that
share a screenshot move together, since their outcomes are correlated), the **exact McNemar**
p-value, the **minimum detectable difference** at this sample size, and the samples won and lost.
The document written is ``compare.json`` (its schema is in :func:`compare_runs`; as in
results.json, a benchmark's unqualified ``top1`` / ``oracle@K`` are its official headline and the
micro figures are under ``micro``); :func:`render_markdown` lays it out as the printed table
``compare.md``. With a common K of 1 (a one-answer run) everything is Top-1 only.

Runs that cannot be paired are refused with a one-line :class:`~gge.errors.GgeError` naming both
paths: different benchmarks, different benchmark variants (``load.variant`` in results.json, also
when only one side records one), different sample ids, or different samples behind the same ids (the
samples digests differ: ids, instructions, targets with their hit rules and image sizes, results.json
``samples_digest``, else the run's ``run.json``; or the targets recorded on the predictions lines
differ; a run without either is paired by id with a note). Each run is checked on its own first
(:func:`load_run`, naming the file and line): its
results.json must be of this gge's ``schema_version`` (:func:`gge.documents.results.check_version`:
another or none is refused, saying how to re-score the run), its predictions.jsonl must reproduce
its results.json (micro Top-1 and Oracle@K of each benchmark, the same number of lines, no line
twice), and no line may be impossible (a Top-1 hit of the critic, first or medoid pick when no
candidate hits, such a pick that is not one of the candidates or whose hit contradicts Top-1, a
Top-1 hit with no answer, hits that do not match the candidates).

The statistics (paired cluster bootstrap, exact McNemar, minimum detectable difference) are the
pure functions of :mod:`gge.scoring.stats`.

When the runs differ in K, in critic or in refine stage (a critic at K = 5 against voting at K = 8),
each benchmark also gets the comparison at matched budget (:mod:`gge.compare.matched`): each run's
budget curve of its own selection strategy, the pair of points of closest cost per sample, and there
Δ Top-1 with its paired interval and each run's cost; compare warns where the two runs' costs were
measured on setups that make them another unit (or were replayed).

Every comparison also says how the two runs' answers differ (:mod:`gge.compare.drift`): per
benchmark the samples whose raw answers and candidates differ, the distance in original pixels
between the runs' first candidates (min, median, p90, max), the samples where only one run has a
point, the Top-1 and first-candidate hit flips each way and the first flips' raw answers
(compare.json ``drift``); and whether the runs' recorded setups differ only by engine (backend,
endpoint, dtype, library versions: two runs of one checkpoint through transformers and an endpoint,
or two engines) or by more, which it names (compare.json ``setup``).

The package: :mod:`gge.compare.runs` reads a run back (:func:`load_run`), :mod:`gge.compare.pairing`
pairs two (:func:`compare_runs`), :mod:`gge.compare.drift` measures how their answers differ,
:mod:`gge.compare.matched` matches their budgets,
:mod:`gge.compare.render` lays the document out and writes the files and :mod:`gge.compare.cli` is
the command (:func:`run_compare`); the names are re-exported here.
"""

from __future__ import annotations

from gge.compare.cli import run_compare
from gge.compare.pairing import MIN_CLUSTERS, compare_runs
from gge.compare.render import default_out_dir, render_markdown, write_compare
from gge.compare.runs import Run, load_run
from gge.scoring.stats import (
    MDD_FACTOR,
    Statistic,
    macro_statistic,
    mcnemar_exact,
    mean_statistic,
    min_detectable_difference,
    paired_bootstrap,
    resample_weights,
)

__all__ = [
    "MDD_FACTOR",
    "MIN_CLUSTERS",
    "Run",
    "Statistic",
    "compare_runs",
    "default_out_dir",
    "load_run",
    "macro_statistic",
    "mcnemar_exact",
    "mean_statistic",
    "min_detectable_difference",
    "paired_bootstrap",
    "render_markdown",
    "resample_weights",
    "run_compare",
    "write_compare",
]
