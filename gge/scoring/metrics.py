"""From per-sample results to a benchmark's numbers: Top-1, Oracle@k, official averages, tables, intervals.

One generic grouped computation serves every benchmark: a benchmark declares its label keys, its
official average (micro, or macro over label values) and its tables as data
(:mod:`gge.benchmarks.base`). Percentages are unrounded floats in [0, 100]; an empty group gives
``None``.

The grouped computation itself is :mod:`gge.scoring.grouping`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from gge.benchmarks.base import Average, Benchmark, BootstrapCI
from gge.documents.results import (
    AverageStats,
    BenchmarkEntry,
    DecoyClicks,
    DecoyStats,
    Figures,
    GroupStats,
    HeadlineInterval,
    Intervals,
    MeanStats,
    NotInFile,
    OfficialTable,
    insert_after,
    oracle_at,
    pass_at,
    share,
)
from gge.errors import GgeError
from gge.scoring.analysis import OUTCOMES, WHEN_PRESENT, analyse
from gge.scoring.budget import budget_curves
from gge.scoring.calibration import ScoreKind
from gge.scoring.cost import TOTAL, cost_summary, refine_summary, refined_hits
from gge.scoring.grouping import average, group_by, group_stats, pct, table, wilson_interval
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS, REFINED
from gge.scoring.stats import HEADLINE_SEED, percentile_bootstrap
from gge.types import STRATEGIES, SampleResult


def benchmark_metrics(
    benchmark: Benchmark,
    results: Sequence[SampleResult],
    *,
    k: int,
    strategy: str,
    exchangeable_from: int | None = None,
    score_kind: ScoreKind | None = None,
    cost_source: str = "measured",
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
) -> BenchmarkEntry:
    """Every number gge reports for one benchmark (the ``results.json`` entry).

    Args:
        benchmark: The benchmark (its label keys, averages and tables).
        results: One result per sample.
        k: The K of Oracle@K.
        strategy: The selection strategy whose pick is "Top-1".
        exchangeable_from: First candidate slot of exchangeable sampled answers (``sampling`` mode),
            for the unbiased pass@k; None for a ranked list (see :func:`gge.scoring.analysis.analyse`).
        score_kind: How to read the critic's scores (``probability`` or ``rank``; None infers it).
        cost_source: Where the cost records come from: ``measured`` or ``replayed``.
        cluster_radius: The run's ``cluster`` radius (the budget curves run it on fewer candidates).

    Returns:
        The benchmark's entry of results.json (:class:`gge.documents.results.BenchmarkEntry`; see the
        docs/results.md for the names). Its unqualified ``top1`` and ``oracle@1`` .. ``oracle@K`` are the
        benchmark's official headline (its ``official`` rule: micro or a macro mean over label
        values; ``official`` holds the same with the rule's name); ``micro`` holds the micro means
        (hits over samples) under the same names, and ``intervals`` are the Wilson intervals of the
        micro ``top1`` and ``oracle@K``. A benchmark that declares its own headline interval
        (``headline_ci``) also gets ``headline_interval`` (:func:`headline_interval`). ``critic_gap``
        is the headline Oracle@K minus the headline Top-1. With ``k == 1`` (a one-answer run)
        ``critic_gap``, ``top1_given_oracle``, ``critic_gain`` and ``budget`` are None. ``budget`` is
        the Top-1 of every strategy against the candidates used and their cost
        (:func:`gge.scoring.budget.budget_curves`).
    """
    n = len(results)
    if strategy == REFINED:
        check_refined(benchmark.name, results)
    top1_hits = sum(r.top1.get(strategy, False) for r in results)
    oracle_hits = sum(r.hit_at(k) for r in results)
    both = sum(r.top1.get(strategy, False) and r.hit_at(k) for r in results)
    official = cast(AverageStats, average(results, benchmark.official, k, strategy))
    headline = {
        f"oracle@{j}": oracle_at(official if j == k else average(results, benchmark.official, j, strategy), j)
        for j in range(1, k + 1)
    }
    micro = {"top1": pct(top1_hits, n)}
    micro.update({f"oracle@{j}": pct(sum(r.hit_at(j) for r in results), n) for j in range(1, k + 1)})
    top1 = official["top1"]
    oracle = oracle_at(official, k)
    one_answer = k == 1  # a one-answer run: no critic chose, Oracle@1 is Top-1
    refined = refine_summary(results)
    selection = {s: pct(sum(r.top1.get(s, False) for r in results), n) for s in STRATEGIES}
    if refined is not None:
        selection[REFINED] = pct(sum(refined_hits(results)), n)
    analysis = analyse(
        results,
        tables=benchmark.tables,
        k=k,
        strategy=strategy,
        selection=selection,
        exchangeable_from=exchangeable_from,
        score_kind=score_kind,
    )
    entry: BenchmarkEntry = {
        "samples": n,
        "top1": top1,
        "micro": cast(Figures, micro),
        "official": official,
        "averages": {
            a.name: cast(AverageStats, average(results, a, k, strategy))
            for a in (Average("micro"), *benchmark.extra_averages)
        },
        "intervals": cast(
            Intervals, {"top1": wilson_interval(top1_hits, n), f"oracle@{k}": wilson_interval(oracle_hits, n)}
        ),
        "format_errors": sum(r.format_error for r in results),
        "truncated": sum(r.truncated for r in results),
        "image_errors": [{"id": r.id, "error": r.image_error} for r in results if r.image_error is not None],
        "server_errors": [
            {"id": r.id, "error": r.server_error} for r in results if r.server_error is not None
        ],
        "unparsed_candidates": sum(not c.parsed for r in results for c in r.candidates),
        "critic_format_errors": sum(r.critic_format_error for r in results),
        "abstentions": sum(r.abstained(strategy) for r in results),
        "critic_gap": None if one_answer or top1 is None or oracle is None else oracle - top1,
        "top1_given_oracle": None if one_answer else pct(both, oracle_hits),
        "selection": selection,
        "breakdown": {
            key: {
                value[0]: cast(GroupStats, group_stats(group, k, strategy))
                for value, group in sorted(group_by(results, [key]).items())
            }
            for key in benchmark.label_keys
            if any(key in r.labels for r in results)
        },
        "tables": [
            cast(OfficialTable, table(results, spec, k, strategy))
            for spec in benchmark.tables
            if any(spec.rows in r.labels for r in results)
        ],
        "decomposition": analysis["decomposition"],
        "critic_gain": analysis["critic_gain"],
        "pass_at_k": analysis["pass_at_k"],
        "size_buckets": analysis["size_buckets"],
        "miss_distance": analysis["miss_distance"],
        "calibration": analysis["calibration"],
        "cost": cost_summary(results, source=cost_source),
        "budget": budget_curves(
            results,
            k=k,
            exchangeable_from=exchangeable_from,
            score_kind=score_kind,
            cluster_radius=cluster_radius,
            cost_source=cost_source,
        ),
    }
    if refined is not None:
        entry["refine"] = refined
    decoys = decoy_clicks(results)
    if decoys is not None:
        entry = insert_after(entry, "abstentions", {"decoy_clicks": decoys})
    absent = [r for r in results if r.not_in_file]
    if absent:
        present = [r for r in results if not r.not_in_file]
        top1_present = average(present, benchmark.official, k, strategy)["top1"] if present else None
        not_in_file: NotInFile = {
            "samples": len(absent),
            "ids": [r.id for r in absent],
            "lines": len(present),
            "top1": top1_present,
        }
        entry = insert_after(entry, "image_errors", {"not_in_file": not_in_file})
    if benchmark.headline_ci is not None:
        hits = [bool(r.top1.get(strategy, False)) for r in results]
        extra = {"headline_interval": headline_interval(benchmark.headline_ci, hits)}
        entry = insert_after(entry, "intervals", extra)
    return insert_after(entry, "top1", headline)


DECOY_RULE = "gge's rule (no official box scorer): the pick inside the decoy box and not on the target"
"""How results.json and the report name the deceptive-click rule."""


def decoy_clicks(results: Sequence[SampleResult]) -> DecoyClicks | None:
    """Each strategy's deceptive clicks: its pick inside the sample's decoy and not a hit (None: no decoys).

    Args:
        results: A benchmark's scored samples.

    Returns:
        The counts and rates per strategy (over the samples with a decoy, and over all), or None when
        no sample has a decoy.

    Example:
        >>> from gge.types import Box, Candidate
        >>> pick = Candidate((5.0, 5.0))
        >>> r = SampleResult("b", "0", {}, 1, (pick,), (False,), {"first": pick}, {"first": False},
        ...                  decoy=Box(0, 0, 9, 9))
        >>> decoy_clicks([r])["by_strategy"]["first"]
        {'clicks': 1, 'over_decoy_samples': 100.0, 'over_all': 100.0}
    """
    with_decoy = [r for r in results if r.decoy is not None]
    if not with_decoy:
        return None
    strategies = list(dict.fromkeys(name for r in results for name in r.picks))
    by_strategy: dict[str, DecoyStats] = {}
    for name in strategies:
        clicks = 0
        for r in with_decoy:
            pick = r.picks.get(name)
            point = None if pick is None else pick.point
            assert r.decoy is not None
            if point is not None and not r.top1.get(name, False) and r.decoy.contains(*point):
                clicks += 1
        by_strategy[name] = {
            "clicks": clicks,
            "over_decoy_samples": pct(clicks, len(with_decoy)),
            "over_all": pct(clicks, len(results)),
        }
    return {
        "rule": DECOY_RULE,
        "decoy_samples": len(with_decoy),
        "samples": len(results),
        "by_strategy": by_strategy,
    }


def check_refined(benchmark: str, results: Sequence[SampleResult]) -> None:
    """Refuse ``selection=refined`` over samples without a refine answer (it would score them as misses).

    A sample whose screenshot could not be read, whose request failed for good, or that a replayed file
    has no line for, has none and is a miss anyway; any other sample without one (a replayed file of
    a run without the stage, or with lines missing it) stops the run.

    Raises:
        GgeError: naming the benchmark, how many samples lack one and the first of them.
    """
    lacking = [
        r.id
        for r in results
        if r.refine is None and r.image_error is None and r.server_error is None and not r.not_in_file
    ]
    if lacking:
        raise GgeError(
            f"{benchmark}: selection=refined, but {len(lacking)} of {len(results)} samples have no refine "
            f"answer (first: {lacking[0]}); replay a predictions.jsonl of a model.refine=zoom run, or "
            "choose another selection"
        )


def headline_interval(
    spec: BootstrapCI, hits: Sequence[bool], *, seed: int = HEADLINE_SEED
) -> HeadlineInterval:
    """A benchmark's declared bootstrap interval of its micro Top-1, seeded (``headline_interval``).

    Args:
        spec: The benchmark's ``headline_ci`` (resamples, confidence, method).
        hits: Whether each sample's Top-1 hits (a miss for format errors, abstentions that miss...).
        seed: The seed (:data:`gge.scoring.stats.HEADLINE_SEED`, written into the entry).

    Returns:
        The method, resamples, confidence and seed, and ``top1: [low, high]`` in percent (None
        without samples).

    Example:
        >>> headline_interval(BootstrapCI(), [True] * 4)["top1"]
        [100.0, 100.0]
    """
    if spec.method != "percentile":
        raise ValueError(f"headline_ci: only the percentile method is implemented, got {spec.method!r}")
    bounds: list[float] | None = None
    if hits:
        lo, hi = percentile_bootstrap(
            np.asarray(hits, dtype=float), resamples=spec.resamples, confidence=spec.confidence, seed=seed
        )
        bounds = [100.0 * lo, 100.0 * hi]
    return {
        "method": spec.method,
        "resamples": spec.resamples,
        "confidence": spec.confidence,
        "seed": seed,
        "top1": bounds,
    }


def mean_over_benchmarks(entries: Mapping[str, BenchmarkEntry], k: int) -> MeanStats:
    """The unweighted mean of the benchmarks' official headlines (the "average over six" papers print).

    Args:
        entries: results.json entries by benchmark name.
        k: The K of Oracle@K.

    Returns:
        ``{"benchmarks": [...], "top1": pct, "oracle@K": pct}`` over the benchmarks with samples.
    """
    names = [n for n, e in entries.items() if e["official"]["top1"] is not None]
    out: dict[str, Any] = {"benchmarks": names}
    for key in ("top1", f"oracle@{k}"):
        out[key] = (
            sum(cast(Mapping[str, Any], entries[n]["official"])[key] for n in names) / len(names)
            if names
            else None
        )
    return cast(MeanStats, out)


def cost_scalars(entry: BenchmarkEntry) -> list[tuple[str, Any]]:
    """The cost and refine scalars of one entry (``cost/...``, ``refine/...``: see :func:`scalar_metrics`)."""
    pairs: list[tuple[str, Any]] = []
    cost = entry.get("cost")
    if cost is not None:
        for stage, figures in [*cost["stages"].items(), (TOTAL, cost["total"])]:
            head = "cost" if stage == TOTAL else f"cost/{stage}"
            tokens, seconds = figures["tokens"]["total"], figures["seconds"]
            pairs.append((f"{head}/calls_per_sample", figures["calls_per_sample"]))
            if tokens is not None:
                pairs.append((f"{head}/tokens_per_sample", tokens["mean"]))
            if seconds is not None:
                pairs += [
                    (f"{head}/seconds_per_sample", seconds["mean"]),
                    (f"{head}/seconds_p90", seconds["p90"]),
                ]
    refine = entry.get("refine")
    if refine is not None:
        pairs += [
            ("refine/before", refine["before"]),
            ("refine/after", refine["after"]),
            ("refine/fixed", refine["fixed"]),
            ("refine/broken", refine["broken"]),
            ("refine/trigger_rate", refine["trigger_rate"]),
        ]
    return pairs


def scalar_metrics(entries: Mapping[str, BenchmarkEntry], k: int) -> dict[str, float]:
    """The scalars a logger plots: ``grounding/<benchmark>/<name>`` for each benchmark, and the mean.

    Per benchmark: ``top1`` and ``oracle@K`` (the official headline), ``micro/top1`` and
    ``micro/oracle@K`` (hits over samples), ``official/top1`` and ``official/oracle@K`` (aliases of the
    headline), ``top1_ci_low`` and ``top1_ci_high`` (the benchmark's declared headline interval, only
    where it declares one), ``format_errors``, ``image_errors``, the outcome split (``hit``,
    ``critic_miss``, ``proposer_miss``, ``abstained``, ``format_error``, ``image_error``, and an endpoint
    run's ``server_error`` and a replay's ``not_in_file`` where some sample has them; percent of
    samples; ``server_errors`` counted where some sample has one), RUC's ``decoy_clicks/<strategy>``
    (percent of the samples with a decoy), ``critic_gain/over_first`` and
    ``critic_gain/over_best_spatial`` (points), ``pass@K`` when reported, the cost ledger's
    ``cost/calls_per_sample``, ``cost/tokens_per_sample``, ``cost/seconds_per_sample`` and
    ``cost/seconds_p90`` (the same per stage under ``cost/<stage>/...``), a refine stage's
    ``refine/before``, ``refine/after``, ``refine/fixed``, ``refine/broken`` and ``refine/trigger_rate``,
    and the critic's ``calibration/auroc`` (``/ece``, ``/brier``, ``/aurc`` for probabilities). Missing
    values are left out. With ``k == 1`` (a one-answer run) the scalars are Top-1 only: no ``oracle@1``,
    no ``critic_miss`` (no other answer could have hit), no critic gain.

    Args:
        entries: results.json entries by benchmark name.
        k: The K of Oracle@K.

    Returns:
        Metric name to value.
    """
    one_answer = k == 1
    values: dict[str, float] = {}
    for name, e in entries.items():
        off = e["official"]
        micro = e["micro"]
        pairs: list[tuple[str, Any]] = [
            ("top1", off["top1"]),
            ("micro/top1", micro["top1"]),
            ("official/top1", off["top1"]),
        ]
        if not one_answer:
            pairs += [
                (f"oracle@{k}", oracle_at(off, k)),
                (f"micro/oracle@{k}", oracle_at(micro, k)),
                (f"official/oracle@{k}", oracle_at(off, k)),
            ]
        decoys = e.get("decoy_clicks")
        if decoys is not None:  # RUC: how often each strategy's pick lands on the decoy
            pairs += [
                (f"decoy_clicks/{s}", d["over_decoy_samples"]) for s, d in decoys["by_strategy"].items()
            ]
        bounds = e["headline_interval"]["top1"] if "headline_interval" in e else None
        if bounds is not None:
            pairs += [("top1_ci_low", bounds[0]), ("top1_ci_high", bounds[1])]
        pairs += [("format_errors", e["format_errors"]), ("image_errors", len(e["image_errors"]))]
        if e.get("server_errors"):
            pairs.append(("server_errors", len(e.get("server_errors", []))))
        dec = e["decomposition"]["overall"]
        kinds = [
            kind
            for kind in OUTCOMES
            if not (one_answer and kind == "critic_miss") and (kind in dec or kind not in WHEN_PRESENT)
        ]
        pairs += [(kind, share(dec, kind)) for kind in kinds]
        gain = None if one_answer else e["critic_gain"]
        if gain is not None:
            pairs += [
                ("critic_gain/over_first", gain["over_first"]),
                ("critic_gain/over_best_spatial", gain["over_best_spatial"]),
            ]
        pk = e["pass_at_k"]
        if pk:
            pairs.append((f"pass@{pk['n']}", pass_at(pk, pk["n"])))
        pairs += cost_scalars(e)
        cal = e["calibration"]
        if cal is not None:
            pairs += [
                ("calibration/auroc", cal["auroc"]),
                ("calibration/ece", cal["ece"]),
                ("calibration/brier", cal["brier"]),
                ("calibration/aurc", cal["aurc"]),
            ]
        for key, value in pairs:
            if value is not None:
                values[f"grounding/{name}/{key}"] = float(value)
    mean = mean_over_benchmarks(entries, k)
    if mean["top1"] is not None:
        values["grounding/mean/top1"] = float(mean["top1"])
    if not one_answer and oracle_at(mean, k) is not None:
        values[f"grounding/mean/oracle@{k}"] = float(oracle_at(mean, k))
    return values
