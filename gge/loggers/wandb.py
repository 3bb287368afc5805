"""Evaluation results to Weights & Biases: per-sample tables with screenshots and box layers, curves.

This is the only gge module that imports :mod:`wandb`, and only inside
:func:`log_evaluation_wandb`: importing this module (and running the pure helpers below) works
without wandb installed. Every evaluation logs, under ``grounding/<benchmark>/``:

* ``samples``: one row per id of ``table_ids`` (the same ids every evaluation, so rows can be
  compared across steps): the screenshot thumbnail (JPEG, at most ``max_width`` wide) with box
  layers ``ground_truth``, ``candidates`` and ``pick`` in thumbnail pixels, and the candidates,
  scores, pick and raw output as JSON text;
* ``breakdown``: Top-1 and Oracle@K per label value (``entry["breakdown"]``);
* ``oracle_at_k``: the Oracle@k curve for k = 1..K (a line plot; its data table is logged by
  wandb as ``oracle_at_k_table``).
* why it misses (:mod:`gge.scoring.analysis`), where the entry has them: ``decomposition`` (percent of
  samples per outcome, for the whole benchmark and each official table cell) and the ``outcomes``
  bar plot; ``size_buckets`` (Top-1 and Oracle@K per target-area bucket) and the ``top1_by_size``
  bar plot; ``pass_at_k`` (a line plot, sampling runs); ``calibration/reliability`` (table and
  ``calibration/reliability_plot``) and ``calibration/risk_coverage`` (a line plot) for a critic
  giving probabilities. The samples table's ``outcome`` column names each sample's kind.
* what j of the K candidates buy (``entry["budget"]``): ``budget/points`` (a row per j: tokens and
  seconds per sample of the proposer's requests and of the critic's pick, measured, replayed or
  derived, Oracle@j and every strategy's Top-1; then the refined point) and the budget plots
  ``budget/top1_vs_tokens`` and ``budget/top1_vs_seconds`` (``wandb.plot.line_series``: the critic's
  curve at the critic's cost, the vote's (``cluster``) and ``first``'s at the proposer's).

The cost ledger's scalars (``grounding/<benchmark>/cost/...``) are scalars: the caller logs them
with the others (:func:`gge.scoring.metrics.scalar_metrics`).

Where the benchmark's variant is known (``load.variant`` of its entry, or the ``variant`` argument:
the instruction file, language, how refusals count and the denominator), every table named above
ends with a ``variant`` column holding it in the report's wording (``instructions: original ·
refusals: scored · denominator: 564``); a benchmark without variant keys gets no such column.

Box layers and their class ids: ``ground_truth`` 0 "target" (a polygon's bounding box; its outline
is drawn into the pixels; an absent target has no box and a banner drawn into the pixels);
``candidates`` 1 "hit" / 2 "miss" (a small box centred on each non-abstaining candidate, caption
``#<rank> score=<score>``); ``pick`` 3 "pick hit" / 4 "pick miss" (centred on the pick's point).

Example:
    >>> from gge.types import Box, Candidate, Prediction, Sample
    >>> from gge.scoring.scoring import score_sample
    >>> s = Sample("demo", "a", "/a.png", (1280, 720), "click OK", Box(100, 100, 300, 200))
    >>> r = score_sample(s, Prediction("demo", "a", (Candidate((200, 150), 0.5),)), k=1)
    >>> candidates_json(r), scores_json(r), sample_columns(1)[4:6]
    ('[[200, 150]]', '[0.5]', ['hit@1', 'top1'])
"""

from __future__ import annotations

import importlib
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gge.benchmarks.images import open_image
from gge.documents.caveats import entry_description
from gge.documents.results import BenchmarkEntry, BudgetCurves, oracle_at, pass_at, share
from gge.drawing import marker_radius, pick_rank, scaled_region_box, target_thumbnail, thumb_point
from gge.report.cost_tables import Axis, budget_curves, critic_cost
from gge.scoring.analysis import OUTCOMES, outcome
from gge.types import STRATEGIES, Candidate, Polygon, Sample, SampleResult

Scale = tuple[float, float]

TARGET_CLASS = 0
HIT_CLASS = 1
MISS_CLASS = 2
PICK_HIT_CLASS = 3
PICK_MISS_CLASS = 4

LAYER_CLASS_LABELS: dict[str, dict[int, str]] = {
    "ground_truth": {TARGET_CLASS: "target"},
    "candidates": {HIT_CLASS: "hit", MISS_CLASS: "miss"},
    "pick": {PICK_HIT_CLASS: "pick hit", PICK_MISS_CLASS: "pick miss"},
}
"""Class labels of each box layer (ids are distinct across layers, as W&B merges them per image)."""

BREAKDOWN_COLUMNS = ("label", "value", "samples", "top1")
"""Leading columns of the breakdown table (``oracle@K`` follows)."""


def _import_wandb() -> Any:
    try:
        return importlib.import_module("wandb")
    except ImportError as e:  # pragma: no cover - exercised only without wandb installed
        raise ImportError("logging to W&B needs the wandb package: pip install wandb") from e


def _finite(value: float | None) -> float | None:
    """A JSON-safe number: None for None, NaN and infinities."""
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def _num(value: float) -> float | int:
    """An integral float as an int (so JSON reads ``200`` rather than ``200.0``)."""
    v = float(value)
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


def _point(candidate: Candidate | None) -> list[float | int] | None:
    if candidate is None or candidate.point is None:
        return None
    x, y = candidate.point
    if not (math.isfinite(x) and math.isfinite(y)):
        return None
    return [_num(x), _num(y)]


def sample_columns(k: int) -> list[str]:
    """The columns of the ``samples`` table (``hit@K`` is left out when K is 1: it is ``hit@1``).

    Example:
        >>> sample_columns(5)[3:]
        ['image', 'hit@1', 'hit@5', 'top1', 'candidates', 'scores', 'pick', 'raw', 'format_error', 'outcome']
    """
    hits = ["hit@1"] if k == 1 else ["hit@1", f"hit@{k}"]
    return [
        "step",
        "id",
        "instruction",
        "image",
        *hits,
        "top1",
        "candidates",
        "scores",
        "pick",
        "raw",
        "format_error",
        "outcome",
    ]


def candidates_json(result: SampleResult) -> str:
    """The scored candidates as JSON text: ``[[x, y] | null, ...]`` in proposer order (null: abstain).

    Example:
        >>> from gge.types import Box, Candidate, Prediction, Sample
        >>> from gge.scoring.scoring import score_sample
        >>> s = Sample("demo", "a", "/a.png", (100, 100), "click", Box(0, 0, 10, 10))
        >>> p = Prediction("demo", "a", (Candidate((5, 5.5)), Candidate(None)))
        >>> candidates_json(score_sample(s, p, k=2))
        '[[5, 5.5], null]'
    """
    return json.dumps([_point(c) for c in result.candidates])


def scores_json(result: SampleResult) -> str:
    """The critic scores as JSON text: ``[score | null, ...]`` in proposer order (NaN reads null).

    Example:
        >>> from gge.types import Box, Candidate, Prediction, Sample
        >>> from gge.scoring.scoring import score_sample
        >>> s = Sample("demo", "a", "/a.png", (100, 100), "click", Box(0, 0, 10, 10))
        >>> cands = (Candidate((5, 5), 0.25), Candidate((9, 9)), Candidate((1, 1), float("nan")))
        >>> p = Prediction("demo", "a", cands)
        >>> scores_json(score_sample(s, p, k=3))
        '[0.25, null, null]'
    """
    return json.dumps([_finite(c.score) for c in result.candidates])


def pick_json(result: SampleResult, strategy: str) -> str:
    """The strategy's pick as JSON text.

    ``{"strategy", "point": [x, y] | null, "abstain": bool, "rank": int | null, "hit": bool}``;
    ``rank`` is the pick's proposer rank (null for a point no candidate has, or no pick at all).

    Example:
        >>> from gge.types import Box, Candidate, Prediction, Sample
        >>> from gge.scoring.scoring import score_sample
        >>> s = Sample("demo", "a", "/a.png", (100, 100), "click", Box(0, 0, 10, 10))
        >>> r = score_sample(s, Prediction("demo", "a", (Candidate((5, 5), 0.1), Candidate(None, 0.9))), k=2)
        >>> pick_json(r, "critic")
        '{"strategy": "critic", "point": null, "abstain": true, "rank": 2, "hit": false}'
    """
    pick = result.picks.get(strategy)
    return json.dumps(
        {
            "strategy": strategy,
            "point": _point(pick),
            "abstain": pick is not None and pick.abstains,
            "rank": pick_rank(result, strategy),
            "hit": bool(result.top1.get(strategy, False)),
        }
    )


def _centred_box(x: float, y: float, size: float, class_id: int, caption: str) -> dict[str, Any]:
    return {
        "position": {"middle": [x, y], "width": size, "height": size},
        "domain": "pixel",
        "class_id": class_id,
        "box_caption": caption,
    }


def _fmt_score(score: float | None) -> str:
    value = _finite(score)
    return "none" if value is None else f"{value:.4g}"


def box_layers(
    sample: Sample, result: SampleResult, strategy: str, scale: Scale, thumb_size: tuple[int, int]
) -> dict[str, dict[str, Any]]:
    """The W&B box layers of one sample, in thumbnail pixels (``domain: "pixel"``).

    Args:
        sample: The sample (its region, in original pixels).
        result: Its scored result (candidates, hits, picks).
        strategy: The selection strategy whose pick forms the ``pick`` layer.
        scale: Per-axis factors from original pixels to thumbnail pixels.
        thumb_size: The thumbnail's (width, height): sizes the candidate and pick boxes.

    Returns:
        ``{"ground_truth": ..., "candidates": ..., "pick": ...}``, each
        ``{"box_data": [...], "class_labels": {...}}`` as :class:`wandb.Image` takes them.

    Example:
        >>> from gge.types import Box, Candidate, Prediction, Sample
        >>> from gge.scoring.scoring import score_sample
        >>> s = Sample("demo", "a", "/a.png", (1280, 720), "click OK", Box(100, 100, 300, 200))
        >>> r = score_sample(s, Prediction("demo", "a", (Candidate((900, 500), 0.7),)), k=1)
        >>> layers = box_layers(s, r, "critic", (0.75, 0.75), (960, 540))
        >>> layers["ground_truth"]["box_data"][0]["position"]
        {'minX': 75.0, 'minY': 75.0, 'maxX': 225.0, 'maxY': 150.0}
        >>> box = layers["candidates"]["box_data"][0]
        >>> box["position"]["middle"], box["class_id"], box["box_caption"]
        ([675.0, 375.0], 2, '#1 score=0.7')
    """
    radius = marker_radius(thumb_size)
    truth: list[dict[str, Any]] = []
    scaled = scaled_region_box(sample.region, scale)
    if scaled is not None:
        x1, y1, x2, y2 = scaled
        caption = "target (polygon bounding box)" if isinstance(sample.region, Polygon) else "target"
        truth.append(
            {
                "position": {
                    "minX": min(x1, x2),
                    "minY": min(y1, y2),
                    "maxX": max(x1, x2),
                    "maxY": max(y1, y2),
                },
                "domain": "pixel",
                "class_id": TARGET_CLASS,
                "box_caption": caption,
            }
        )
    candidates: list[dict[str, Any]] = []
    for rank, (cand, hit) in enumerate(zip(result.candidates, result.hits, strict=True), start=1):
        point = _point(cand)
        if point is None:
            continue
        x, y, outside = thumb_point((point[0], point[1]), scale, thumb_size)
        box = _centred_box(
            x,
            y,
            2 * radius,
            HIT_CLASS if hit else MISS_CLASS,
            f"#{rank} score={_fmt_score(cand.score)}" + (" (off image)" if outside else ""),
        )
        score = _finite(cand.score)
        if score is not None:
            box["scores"] = {"score": score}
        candidates.append(box)
    picks: list[dict[str, Any]] = []
    pick_point = _point(result.picks.get(strategy))
    if pick_point is not None:
        hit = bool(result.top1.get(strategy, False))
        picked = pick_rank(result, strategy)
        x, y, outside = thumb_point((pick_point[0], pick_point[1]), scale, thumb_size)
        caption = f"{strategy} pick" + (f" #{picked}" if picked is not None else "")
        caption += " (off image)" if outside else ""
        picks.append(
            _centred_box(
                x,
                y,
                4 * radius,
                PICK_HIT_CLASS if hit else PICK_MISS_CLASS,
                caption,
            )
        )
    data = {"ground_truth": truth, "candidates": candidates, "pick": picks}
    return {
        name: {"box_data": data[name], "class_labels": dict(labels)}
        for name, labels in LAYER_CLASS_LABELS.items()
    }


def breakdown_rows(entry: BenchmarkEntry, k: int) -> list[list[Any]]:
    """Rows ``[label, value, samples, top1, oracle@K]`` of ``entry["breakdown"]``, in its order.

    With ``k == 1`` (a one-answer run) the rows end at ``top1``.

    Example:
        >>> stats = {"samples": 2, "top1": 50.0, "oracle@5": 100.0}
        >>> breakdown_rows({"breakdown": {"group": {"CAD": stats}}}, 5)
        [['group', 'CAD', 2, 50.0, 100.0]]
    """
    rows: list[list[Any]] = []
    for label, values in entry["breakdown"].items():
        for value, stats in values.items():
            row = [label, value, stats["samples"], stats["top1"]]
            rows.append(row if k == 1 else [*row, oracle_at(stats, k)])
    return rows


def oracle_curve_rows(entry: BenchmarkEntry, k: int) -> list[list[Any]]:
    """Rows ``[k, oracle]`` of the Oracle@k curve for k = 1..K (percent; None when undefined).

    Example:
        >>> oracle_curve_rows({"oracle@1": 40.0, "oracle@2": 55.0}, 2)
        [[1, 40.0], [2, 55.0]]
    """
    return [[j, oracle_at(entry, j)] for j in range(1, k + 1)]


DECOMPOSITION_COLUMNS = ("cell", "samples", *OUTCOMES)
"""Columns of the ``decomposition`` table: ``all`` then each official table cell, percent per outcome."""
SIZE_COLUMNS = ("bucket", "low", "high", "samples", "top1")
"""Leading columns of the ``size_buckets`` table (``oracle@K`` follows)."""
RELIABILITY_COLUMNS = ("low", "high", "count", "confidence", "accuracy")
"""Columns of the ``calibration/reliability`` table (confidence and accuracy as fractions)."""
RISK_COVERAGE_COLUMNS = ("threshold", "coverage", "kept", "top1")
"""Columns of the ``calibration/risk_coverage`` table (coverage and Top-1 in percent)."""


def decomposition_rows(entry: BenchmarkEntry) -> list[list[Any]]:
    """Rows ``[cell, samples, hit, critic_miss, ...]``: the whole benchmark, then each official table cell.

    Example:
        >>> d = {"samples": 2, "hit": 50.0, "critic_miss": 50.0, "proposer_miss": 0.0, "abstained": 0.0,
        ...      "format_error": 0.0, "image_error": 0.0}
        >>> decomposition_rows({"decomposition": {"overall": d, "tables": []}})[0][:4]
        ['all', 2, 50.0, 50.0]
    """
    dec = entry["decomposition"]
    rows = [["all", dec["overall"]["samples"], *(share(dec["overall"], kind) for kind in OUTCOMES)]]
    for t in dec["tables"]:
        for c in t["cells"]:
            name = f"{t['rows']}={c['row']}" + ("" if c["col"] is None else f" · {t['cols']}={c['col']}")
            rows.append([name, c["samples"], *(share(c, kind) for kind in OUTCOMES)])
    return rows


def size_rows(entry: BenchmarkEntry, k: int) -> list[list[Any]]:
    """Rows ``[bucket, low, high, samples, top1, oracle@K]`` of the size buckets (no oracle@1 for k = 1)."""
    return [
        [b["label"], b["low"], b["high"], b["samples"], b["top1"]] + ([] if k == 1 else [oracle_at(b, k)])
        for b in entry["size_buckets"]["buckets"]
    ]


VARIANT_COLUMN = "variant"
"""The trailing column naming the benchmark's variant (only where it has one)."""


def with_variant(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], variant: str
) -> tuple[list[str], list[list[Any]]]:
    """A table's columns and rows with a trailing ``variant`` column, or unchanged when ``variant`` is "".

    Example:
        >>> with_variant(["k"], [[1], [2]], "refusals: miss · denominator: 564")[1]
        [[1, 'refusals: miss · denominator: 564'], [2, 'refusals: miss · denominator: 564']]
        >>> with_variant(["k"], [[1]], "")
        (['k'], [[1]])
    """
    if not variant:
        return list(columns), [list(r) for r in rows]
    return [*columns, VARIANT_COLUMN], [[*r, variant] for r in rows]


def _image_cell(wandb: Any, sample: Sample, result: SampleResult, strategy: str, max_width: int) -> Any:
    """The wandb.Image of one sample (JPEG thumbnail with box layers), or None if it cannot be read."""
    try:
        with open_image(sample.image_path) as im:
            thumb, scale = target_thumbnail(im, sample, max_width=max_width)
    except (OSError, ValueError) as e:
        warnings.warn(f"gge: W&B table: cannot read image of sample {sample.id!r}: {e}", stacklevel=3)
        return None
    layers = box_layers(sample, result, strategy, scale, thumb.size)
    return wandb.Image(thumb, file_type="jpg", boxes=layers, caption=sample.instruction)


def log_evaluation_wandb(
    run: Any,
    *,
    step: int,
    benchmark_name: str,
    title: str,
    entry: BenchmarkEntry,
    samples: Mapping[str, Sample],
    results: Sequence[SampleResult],
    table_ids: Sequence[str],
    k: int,
    strategy: str,
    max_width: int = 960,
    step_key: str | None = None,
    variant: str | None = None,
) -> None:
    """Log one benchmark's evaluation to a W&B run: the samples table, the breakdown, the Oracle@k curve.

    Everything goes into one ``run.log`` call. Scalars are not logged here. With ``k == 1`` (a
    one-answer run) there is no Oracle@k curve and the tables have no ``oracle@1`` column.

    Args:
        run: A ``wandb`` Run (``wandb.init(...)``, or ``WandbLogger.experiment``).
        step: The training step of this evaluation (also the ``step`` column of the samples table).
        benchmark_name: The benchmark's registered name (the key prefix ``grounding/<name>/``).
        title: The benchmark's display title (plot title).
        entry: The benchmark's results.json entry (:func:`gge.scoring.metrics.benchmark_metrics`).
        samples: Samples by id (image path, instruction, region).
        results: The scored results; only those whose id is in ``table_ids`` get a row.
        table_ids: The ids shown, in this order, every evaluation; ids without a result (or
            sample) are skipped.
        k: The K of Oracle@K.
        strategy: The selection strategy whose pick is "Top-1".
        max_width: Largest thumbnail width in pixels.
        step_key: None to log with ``run.log(..., step=step)``; a metric name (Lightning's
            ``"trainer/global_step"``) to log ``{step_key: step, ...}`` without ``step=``, so that
            W&B's own step counter, which Lightning advances on every ``log_metrics`` call, is never
            asked to go back (W&B drops such rows with only a debug-log warning).
        variant: The benchmark's variant as :func:`gge.documents.caveats.entry_description` words it; None
            reads the entry's ``load.variant`` (an entry without ``load`` then names none).
    """
    wandb = _import_wandb()
    named = entry_description(entry) if variant is None else variant

    def table(columns: Sequence[str], data: Sequence[Sequence[Any]]) -> Any:
        cols, rows = with_variant(columns, data, named)
        return wandb.Table(columns=cols, data=rows)

    by_id = {r.id: r for r in results}
    rows: list[list[Any]] = []
    for sid in table_ids:
        result = by_id.get(sid)
        sample = samples.get(sid)
        if result is None or sample is None:
            continue
        hits = [result.hit_at(1)] if k == 1 else [result.hit_at(1), result.hit_at(k)]
        rows.append(
            [
                step,
                sid,
                sample.instruction,
                _image_cell(wandb, sample, result, strategy, max_width),
                *hits,
                bool(result.top1.get(strategy, False)),
                candidates_json(result),
                scores_json(result),
                pick_json(result, strategy),
                result.raw,
                result.format_error,
                outcome(result, strategy),
            ]
        )
    prefix = f"grounding/{benchmark_name}/"
    oracle_column = [] if k == 1 else [f"oracle@{k}"]
    payload: dict[str, Any] = {
        prefix + "samples": table(sample_columns(k), rows),
        prefix + "breakdown": table([*BREAKDOWN_COLUMNS, *oracle_column], breakdown_rows(entry, k)),
    }
    if k > 1:  # a one-answer run has no Oracle@k curve
        curve = wandb.Table(columns=["k", "oracle"], data=oracle_curve_rows(entry, k))
        payload[prefix + "oracle_at_k"] = wandb.plot.line(
            curve, "k", "oracle", title=f"{title}: Oracle@k (%)"
        )
    payload.update(_analysis_payload(wandb, prefix, title, entry, k, table))
    if step_key is None:
        run.log(payload, step=step)
    else:
        payload[step_key] = step
        run.log(payload)


def _analysis_payload(
    wandb: Any,
    prefix: str,
    title: str,
    entry: BenchmarkEntry,
    k: int,
    named: Callable[[Sequence[str], Sequence[Sequence[Any]]], Any],
) -> dict[str, Any]:
    """Tables and plots of the "why" sections (pass@k and calibration when not None).

    ``named(columns, rows)`` makes the tables shown as tables (with the variant column); the tables
    behind plots are plain.
    """
    out: dict[str, Any] = {}
    dec_rows = decomposition_rows(entry)
    if dec_rows:
        out[prefix + "decomposition"] = named(list(DECOMPOSITION_COLUMNS), dec_rows)
        overall = wandb.Table(
            columns=["outcome", "percent"],
            data=[[kind, dec_rows[0][2 + i] or 0.0] for i, kind in enumerate(OUTCOMES)],
        )
        out[prefix + "outcomes"] = wandb.plot.bar(
            overall, "outcome", "percent", title=f"{title}: outcomes (% of samples)"
        )
    s_rows = size_rows(entry, k)
    if any(r[3] for r in s_rows):
        out[prefix + "size_buckets"] = named([*SIZE_COLUMNS, *([] if k == 1 else [f"oracle@{k}"])], s_rows)
        shown = wandb.Table(columns=["bucket", "top1"], data=[[r[0], r[4]] for r in s_rows if r[3]])
        out[prefix + "top1_by_size"] = wandb.plot.bar(
            shown, "bucket", "top1", title=f"{title}: Top-1 by target area (% of screen)"
        )
    pk = entry["pass_at_k"]
    if pk:
        curve = wandb.Table(columns=["k", "pass"], data=[[j, pass_at(pk, j)] for j in range(1, pk["n"] + 1)])
        out[prefix + "pass_at_k"] = wandb.plot.line(
            curve, "k", "pass", title=f"{title}: pass@k (unbiased, %)"
        )
    cal = entry["calibration"]
    reliability = cal["reliability"] if cal is not None else None
    if reliability:
        rel = [[r["low"], r["high"], r["count"], r["confidence"], r["accuracy"]] for r in reliability]
        out[prefix + "calibration/reliability"] = named(list(RELIABILITY_COLUMNS), rel)
        pts = wandb.Table(columns=["confidence", "accuracy"], data=[[r[3], r[4]] for r in rel if r[2]])
        out[prefix + "calibration/reliability_plot"] = wandb.plot.line(
            pts, "confidence", "accuracy", title=f"{title}: critic reliability"
        )
    risk_coverage = cal["risk_coverage"] if cal is not None else None
    if risk_coverage:
        rc = [[p["threshold"], p["coverage"], p["kept"], p["top1"]] for p in risk_coverage]
        table = wandb.Table(columns=list(RISK_COVERAGE_COLUMNS), data=rc)
        out[prefix + "calibration/risk_coverage"] = wandb.plot.line(
            table, "coverage", "top1", title=f"{title}: Top-1 against coverage (%)"
        )
    budget = entry.get("budget")
    if budget:
        columns, points = budget_rows(budget)
        out[prefix + "budget/points"] = named(columns, points)
        for axis in ("tokens", "seconds"):
            xs, ys, keys = budget_series(budget, axis)
            if keys:
                out[prefix + f"budget/top1_vs_{axis}"] = wandb.plot.line_series(
                    xs,
                    ys,
                    keys=keys,
                    title=f"{title}: Top-1 vs {axis} per sample",
                    xname=f"{axis} per sample",
                )
    return out


BUDGET_COLUMNS = ("point", "j", "tokens", "seconds", "critic_tokens", "critic_seconds", "cost", "oracle")
"""Leading columns of the ``budget/points`` table (Top-1 of each strategy follows, then ``refined``).

``tokens``/``seconds``: the proposer's requests (what ``first``, the vote and the spatial picks pay);
``critic_tokens``/``critic_seconds``: the critic's pick, its requests included (None without a critic).
"""


def budget_rows(budget: BudgetCurves) -> tuple[list[str], list[list[Any]]]:
    """The columns and rows of the ``budget/points`` table: one row per j, then the refined point.

    Each row: ``j=<j>``, j, tokens and seconds per sample (the proposer's, then the critic pick's),
    ``measured``, ``replayed`` or ``derived``, Oracle@j, and the Top-1 of every strategy the points
    have (then ``refined``, only on its own row, at the run's whole cost).

    Example:
        >>> p = {"j": 1, "top1": {"critic": 40.0, "first": 30.0}, "oracle": 50.0, "tokens": 900.0,
        ...      "seconds": 0.5, "critic": {"tokens": 900.0, "seconds": 0.5}, "cost": "derived",
        ...      "subsets": 1}
        >>> columns, rows = budget_rows({"k": 1, "method": "prefix", "first_slot": None,
        ...                              "critic": "pointwise", "points": [p], "notes": []})
        >>> columns[7:], rows
        (['oracle', 'critic', 'first'], [['j=1', 1, 900.0, 0.5, 900.0, 0.5, 'derived', 50.0, 40.0, 30.0]])
    """
    seen = [s for p in budget["points"] for s in p["top1"]]
    strategies = [s for s in STRATEGIES if s in seen] + sorted(set(seen) - set(STRATEGIES))
    refined = budget.get("refined")
    columns = [*BUDGET_COLUMNS, *strategies, *(["refined"] if refined is not None else [])]
    rows: list[list[Any]] = []
    for p in budget["points"]:
        judged = critic_cost(p) if budget["critic"] is not None else None
        row = [f"j={p['j']}", p["j"], p["tokens"], p["seconds"]]
        row += [None, None] if judged is None else [judged["tokens"], judged["seconds"]]
        row += [p["cost"], p["oracle"]]
        rows.append(row + [p["top1"].get(s) for s in strategies] + ([None] if refined is not None else []))
    if refined is not None:
        whole = [refined["tokens"], refined["seconds"], None, None]  # the run's whole cost
        head = ["refined", None, *whole, refined.get("cost", "measured"), None]
        rows.append(head + [None] * len(strategies) + [refined["top1"]])
    return columns, rows


def budget_series(budget: BudgetCurves, axis: Axis) -> tuple[list[list[float]], list[list[float]], list[str]]:
    """``xs``, ``ys`` and ``keys`` of the budget line series on ``axis``: critic, vote (``cluster``), first.

    Each curve has its own x-values: the critic's at the critic pick's cost, the others at the
    proposer's. Points without a cost on ``axis`` or a Top-1 are left out
    (:func:`gge.report.cost_tables.budget_curves`).
    """
    curves = budget_curves(budget, axis)
    return (
        [[p.x for p in c.points] for c in curves],
        [[p.y for p in c.points] for c in curves],
        [c.label for c in curves],
    )


__all__ = [
    "BUDGET_COLUMNS",
    "LAYER_CLASS_LABELS",
    "VARIANT_COLUMN",
    "box_layers",
    "breakdown_rows",
    "budget_rows",
    "budget_series",
    "candidates_json",
    "decomposition_rows",
    "log_evaluation_wandb",
    "oracle_curve_rows",
    "pick_json",
    "sample_columns",
    "scores_json",
    "size_rows",
    "with_variant",
]
