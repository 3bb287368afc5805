"""A self-contained ``report.html``: tables, charts and a gallery of misses in one offline file.

The page is written beside ``results.json`` (and by ``gge compare`` beside ``compare.json``). It
holds everything it shows: the charts are inline SVG drawn here, the screenshots are JPEG ``data:``
URIs, the styles and the small filtering script are embedded. Nothing is fetched: no CDN, no web
font, no image by URL, so the file can be mailed, archived or opened on a machine without network.

What a results page shows (sections missing from an older ``results.json`` are skipped):

* the protocol line and a summary table, one row per benchmark (official rule, Top-1, Oracle@K, the
  gap between them, format errors) and the mean;
* per benchmark: the headline numbers, the official tables ("Top-1 / Oracle@K" grid cells or a
  1-D list), Top-1 by selection strategy, the Oracle@k curve (with pass@k when sampled), the outcome
  decomposition as stacked bars (overall and per table cell), Top-1 and Oracle@K by target size,
  miss distance quartiles and the critic's calibration (reliability diagram, risk-coverage curve);
* a gallery of misses: the screenshot with the target, the candidates and the pick drawn
  (:func:`gge.loggers.overlays.draw_overlay`), the instruction and the raw answer, filterable by
  benchmark, table cell and kind of miss.

Percentages are printed with one decimal and "–" for none; AUROC, ECE and Brier (fractions) with
three. Every string from the data (ids, instructions, raw answers, labels) is HTML-escaped.

The embedded script records uncaught errors in ``document.body.dataset.jsErrors`` and sets
``document.body.dataset.ready = "1"`` once it has initialised (the browser test reads both).

Example:
    >>> page = render_report_html({"k": 5, "protocol": "demo", "benchmarks": {}}, [])
    >>> page.startswith("<!DOCTYPE html>"), "showing 0 of 0" in page
    (True, True)
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from gge.benchmarks.base import TableSpec
from gge.loggers.overlays import draw_overlay, pick_rank
from gge.report.markdown import fmt, fmt_signed, subset_text
from gge.run.runstate import atomic_write
from gge.scoring.analysis import MISS_KINDS, OUTCOMES, outcome
from gge.scoring.metrics import label_values, micro_of
from gge.scoring.scoring import SampleResult
from gge.types import LabelValue, Sample

TABLE_HEADER_COLOUR = "#1d3557"
"""Background of every table header row (the browser test looks for it in a screenshot)."""
GALLERY_BACKGROUND = "#f1ecfa"
"""Background of the gallery section (the browser test finds the gallery by it)."""
KIND_COLOURS: dict[str, str] = {
    "hit": "#1b9e77",
    "critic_miss": "#e6a100",
    "proposer_miss": "#9b2226",
    "abstained": "#7570b3",
    "format_error": "#6b6b6b",
    "image_error": "#a6761d",
}
"""Colour of each outcome kind in the decomposition bars and the gallery's badges (none is close
to an overlay colour of :mod:`gge.loggers.overlays`)."""
TOP1_COLOUR = "#3b6fb6"
ORACLE_COLOUR = "#e07b39"
PASS_COLOUR = "#5e9c5e"
JPEG_QUALITY = 80
"""Quality of the gallery's JPEG thumbnails (about 20-40 kB per 480-pixel screenshot)."""


def kind_label(kind: str) -> str:
    """A human label for an outcome kind.

    Example:
        >>> kind_label("critic_miss")
        'critic miss'
    """
    return kind.replace("_", " ")


# -- gallery ----------------------------------------------------------------------------------------
def _first(value: LabelValue | None) -> str | None:
    """A label's value; the first one of a multi-label value (None when there is none)."""
    values = label_values(value)
    return str(values[0]) if values else None


def cell_of(labels: Mapping[str, LabelValue], spec: TableSpec | None) -> dict[str, str | None]:
    """The official table cell a sample falls in: ``{"row": value | None, "col": value | None}``.

    Args:
        labels: The sample's breakdown labels.
        spec: The benchmark's first official table, or None.

    Returns:
        The row and column values (the first value of a multi-label key; None when absent).

    Example:
        >>> cell_of({"group": "CAD", "ui_type": ("icon", "text")}, TableSpec("t", "group", "ui_type"))
        {'row': 'CAD', 'col': 'icon'}
    """
    if spec is None:
        return {"row": None, "col": None}
    return {
        "row": _first(labels.get(spec.rows)),
        "col": _first(labels.get(spec.cols)) if spec.cols is not None else None,
    }


def cell_label(cell: Mapping[str, Any] | None) -> str:
    """``"row / col"``, ``"row"``, or ``"–"`` for a gallery entry's cell.

    Example:
        >>> cell_label({"row": "CAD", "col": "icon"}), cell_label({"row": None, "col": None})
        ('CAD / icon', '–')
    """
    if not cell:
        return "–"
    parts = [str(v) for v in (cell.get("row"), cell.get("col")) if v is not None]
    return " / ".join(parts) if parts else "–"


def _select_round_robin(
    misses: Sequence[tuple[str, SampleResult]], limit: int
) -> list[tuple[str, SampleResult]]:
    """At most ``limit`` misses, taking one of each kind in turn (kinds in MISS_KINDS order)."""
    queues: dict[str, list[tuple[str, SampleResult]]] = {}
    for kind, r in misses:
        queues.setdefault(kind, []).append((kind, r))
    order = [k for k in MISS_KINDS if k in queues] + sorted(k for k in queues if k not in MISS_KINDS)
    chosen: list[tuple[str, SampleResult]] = []
    depth = 0
    while len(chosen) < limit:
        took = False
        for kind in order:
            if depth < len(queues[kind]) and len(chosen) < limit:
                chosen.append(queues[kind][depth])
                took = True
        if not took:
            break
        depth += 1
    return chosen


def overlay_data_uri(
    sample: Sample, result: SampleResult, strategy: str, *, max_width: int = 480
) -> tuple[str, tuple[int, int]] | None:
    """The screenshot with the target, candidates and pick drawn, as a JPEG ``data:`` URI.

    Args:
        sample: The sample (its ``image_path``, ``image_size`` and region).
        result: Its scored result.
        strategy: The selection strategy whose pick is ringed.
        max_width: Largest width of the thumbnail; a portrait screenshot is fitted into a
            ``max_width`` square (its height is bounded too, so phone screens stay small).

    Returns:
        ``(uri, (width, height))``, or None when the image cannot be read or drawn (never raises
        for a missing, truncated or otherwise unreadable file).
    """
    try:
        with Image.open(sample.image_path) as im:
            w, h = im.size
            width = max(1, min(max_width, max_width * w // h)) if h > w else max_width
            if im.format == "JPEG":
                im.draft("RGB", (width, 1))  # decode at a reduced scale: much faster
            thumb = draw_overlay(im, sample, result, strategy, max_width=width)
        buf = io.BytesIO()
        thumb.save(buf, "JPEG", quality=JPEG_QUALITY, optimize=True)
    except Exception:  # any unreadable image (OSError, bomb, bad header, odd mode): no thumbnail
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii"), thumb.size


def _point(point: tuple[float, float] | None) -> list[float] | None:
    return None if point is None else [round(float(point[0]), 1), round(float(point[1]), 1)]


def gallery_entries(
    samples: Mapping[tuple[str, str], Sample],
    results: Sequence[SampleResult],
    *,
    strategy: str,
    tables: Mapping[str, TableSpec | None],
    limit_per_benchmark: int = 60,
    max_width: int = 480,
) -> list[dict[str, Any]]:
    """The gallery of misses: one entry per missed sample, with its overlay as a JPEG data URI.

    **Which misses** (deterministic): a benchmark's misses (outcome other than ``hit``, see
    :func:`gge.scoring.analysis.outcome`) are queued by kind in the order of ``results``; entries are taken
    round-robin over the kinds in :data:`gge.scoring.analysis.MISS_KINDS` order (the first critic miss, the
    first proposer miss, ..., then the second of each...) until ``limit_per_benchmark`` are taken or
    none is left. Entries come out benchmark by benchmark (in order of first appearance) in that
    round-robin order, so the first cards of a benchmark show every kind of miss it has.

    Args:
        samples: The samples, keyed by ``(benchmark, id)``. A result without its sample is rebuilt
            from the result's own ``image_path``, ``image_size`` and ``region`` (no instruction);
            without those it gets no thumbnail.
        results: The scored results, in sample order.
        strategy: The selection strategy whose pick is Top-1.
        tables: Each benchmark's first official table (None: no table); gives the entry's cell.
        limit_per_benchmark: Entries kept per benchmark at most.
        max_width: Largest thumbnail width in pixels (a portrait one fits a square of that side).

    Returns:
        Dicts with ``benchmark``, ``id``, ``instruction``, ``kind`` (an outcome kind), ``cell``
        (``{"row", "col"}``, see :func:`cell_of`), ``thumb`` (a ``data:image/jpeg;base64,...`` URI or
        None when the image cannot be read), ``thumb_size`` (``[w, h]`` or None), ``raw``,
        ``critic_raw``, ``candidates`` (how many were scored), ``hit_ranks`` (1-based ranks of the
        candidates that hit), ``pick`` (``{"rank", "point", "hit"}``: proposer rank or None for an
        aggregated point, the point or None for an abstention or no pick), ``oracle`` (some
        candidate hits), ``format_error`` and ``image_error``.

    Example:
        >>> from gge.scoring.scoring import score_sample
        >>> from gge.types import Box, Candidate, Prediction
        >>> s = Sample("demo", "0", "/no/such.png", (100, 100), "click OK", Box(0, 0, 10, 10))
        >>> r = score_sample(s, Prediction("demo", "0", (Candidate((50, 50), 0.9),)), k=1)
        >>> (e,) = gallery_entries({("demo", "0"): s}, [r], strategy="critic", tables={})
        >>> e["kind"], e["thumb"], e["pick"]
        ('proposer_miss', None, {'rank': 1, 'point': [50.0, 50.0], 'hit': False})
    """
    if limit_per_benchmark < 0:
        raise ValueError(f"limit_per_benchmark must be >= 0, got {limit_per_benchmark}")
    by_bench: dict[str, list[tuple[str, SampleResult]]] = {}
    for r in results:
        kind = outcome(r, strategy)
        if kind != "hit":
            by_bench.setdefault(r.benchmark, []).append((kind, r))
        else:
            by_bench.setdefault(r.benchmark, [])
    out: list[dict[str, Any]] = []
    for bench, misses in by_bench.items():
        spec = tables.get(bench)
        for kind, r in _select_round_robin(misses, limit_per_benchmark):
            sample = samples.get((r.benchmark, r.id))
            if sample is None and r.region is not None and r.image_size is not None and r.image_path:
                sample = Sample(r.benchmark, r.id, r.image_path, r.image_size, "", r.region, r.labels)
            drawn = overlay_data_uri(sample, r, strategy, max_width=max_width) if sample else None
            pick = r.picks.get(strategy)
            out.append(
                {
                    "benchmark": bench,
                    "id": r.id,
                    "instruction": sample.instruction if sample is not None else "",
                    "kind": kind,
                    "cell": cell_of(sample.labels if sample is not None else r.labels, spec),
                    "thumb": drawn[0] if drawn else None,
                    "thumb_size": list(drawn[1]) if drawn else None,
                    "raw": r.raw,
                    "critic_raw": r.critic_raw,
                    "candidates": len(r.candidates),
                    "hit_ranks": [i for i, hit in enumerate(r.hits, start=1) if hit],
                    "pick": {
                        "rank": pick_rank(r, strategy),
                        "point": _point(pick.point) if pick is not None else None,
                        "hit": bool(r.top1.get(strategy, False)),
                    },
                    "oracle": any(r.hits),
                    "format_error": r.format_error,
                    "image_error": r.image_error,
                }
            )
    return out


# -- small formatting helpers -----------------------------------------------------------------------
def esc(value: Any) -> str:
    """HTML-escape any value (quotes included), ``None`` as an empty string.

    Example:
        >>> esc('<script>alert("x")</script>')
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    """
    return "" if value is None else html.escape(str(value), quote=True)


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (tolerates hand-edited documents)."""
    return value if isinstance(value, Mapping) else {}


def _num(value: Any) -> float | None:
    """A finite float, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _pct(value: Any) -> str:
    return fmt(_num(value))


def _signed(value: Any) -> str:
    return fmt_signed(_num(value))


def _frac(value: Any, digits: int = 3) -> str:
    v = _num(value)
    return "–" if v is None else f"{v:.{digits}f}"


def _count(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return str(len(value))
    return "–" if value is None else esc(value)


def _pvalue(value: Any) -> str:
    v = _num(value)
    if v is None:
        return "–"
    return "&lt;0.001" if v < 0.001 else f"{v:.3f}"


def _ci(ci: Any, signed: bool = True) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return "–"
    f = _signed if signed else _pct
    return f"[{f(ci[0])}, {f(ci[1])}]"


def _k_of(entry: Mapping[str, Any], document_k: Any) -> int:
    """The K of a benchmark entry: the document's, else the largest ``oracle@n`` key present."""
    if isinstance(document_k, int) and not isinstance(document_k, bool) and document_k >= 1:
        return document_k
    ks = [int(key[7:]) for key in entry if key.startswith("oracle@") and key[7:].isdigit()]
    return max(ks) if ks else 1


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "") -> str:
    """An HTML table; ``header`` and cells are already-escaped HTML."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# -- SVG charts -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Series:
    """One line of a line chart.

    Attributes:
        name: Legend text.
        colour: CSS colour.
        points: ``(x, y)`` pairs; a None ``y`` breaks the line.
        dashed: Draw dashed.
    """

    name: str
    colour: str
    points: Sequence[tuple[float, float | None]]
    dashed: bool = False


@dataclass(frozen=True)
class _Frame:
    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    x0: float
    x1: float
    y0: float
    y1: float

    def x(self, v: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return self.left + (v - self.x0) / span * (self.width - self.left - self.right)

    def y(self, v: float) -> float:
        span = (self.y1 - self.y0) or 1.0
        return self.height - self.bottom - (v - self.y0) / span * (self.height - self.top - self.bottom)


def _tick(v: float) -> str:
    return f"{v:g}"


def _svg_open(width: float, height: float, label: str) -> str:
    return (
        f'<svg class="chart" width="{width:g}" height="{height:g}" '
        f'viewBox="0 0 {width:g} {height:g}" role="img" aria-label="{esc(label)}">'
        f"<title>{esc(label)}</title>"
    )


def _axes(f: _Frame, x_ticks: Sequence[float], y_ticks: Sequence[float], x_label: str, y_label: str) -> str:
    parts = []
    for t in y_ticks:
        y = f.y(t)
        parts.append(
            f'<line x1="{f.left:.1f}" y1="{y:.1f}" x2="{f.width - f.right:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{f.left - 4:.1f}" y="{y + 3.5:.1f}" text-anchor="end">{_tick(t)}</text>'
        )
    base = f.height - f.bottom
    for t in x_ticks:
        x = f.x(t)
        parts.append(
            f'<line x1="{x:.1f}" y1="{base:.1f}" x2="{x:.1f}" y2="{base + 4:.1f}" class="axis"/>'
            f'<text x="{x:.1f}" y="{base + 15:.1f}" text-anchor="middle">{_tick(t)}</text>'
        )
    parts.append(
        f'<line x1="{f.left:.1f}" y1="{base:.1f}" x2="{f.width - f.right:.1f}" y2="{base:.1f}" class="axis"/>'
        f'<line x1="{f.left:.1f}" y1="{f.top:.1f}" x2="{f.left:.1f}" y2="{base:.1f}" class="axis"/>'
        f'<text x="{(f.left + f.width - f.right) / 2:.1f}" y="{f.height - 4:.1f}" '
        f'text-anchor="middle" class="label">{esc(x_label)}</text>'
        f'<text transform="translate(12 {(f.top + base) / 2:.1f}) rotate(-90)" text-anchor="middle" '
        f'class="label">{esc(y_label)}</text>'
    )
    return "".join(parts)


def _legend(items: Sequence[tuple[str, str, bool]], x: float, y: float) -> str:
    """Legend entries ``(name, colour, dashed)`` laid out left to right from ``(x, y)``."""
    parts = []
    for name, colour, dashed in items:
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        parts.append(
            f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 16:.1f}" y2="{y - 4:.1f}" stroke="{colour}" '
            f'stroke-width="2.5"{dash}/><text x="{x + 20:.1f}" y="{y:.1f}">{esc(name)}</text>'
        )
        x += 28 + 6.5 * len(name)
    return "".join(parts)


def line_chart_svg(
    series: Sequence[Series],
    *,
    title: str,
    x_range: tuple[float, float],
    y_range: tuple[float, float] = (0.0, 100.0),
    x_ticks: Sequence[float] = (),
    y_ticks: Sequence[float] = (0, 25, 50, 75, 100),
    x_label: str = "",
    y_label: str = "",
    diagonal: bool = False,
    width: int = 400,
    height: int = 250,
) -> str:
    """A line chart with point markers, as an inline SVG element.

    Args:
        series: The lines.
        title: Accessible title (a tooltip in browsers).
        x_range: ``(min, max)`` of the x axis.
        y_range: ``(min, max)`` of the y axis.
        x_ticks: x values with a tick and a label.
        y_ticks: y values with a grid line and a label.
        x_label: Axis label.
        y_label: Axis label.
        diagonal: Draw the dashed ``y = x`` reference (reliability diagrams).
        width: Pixels.
        height: Pixels.

    Returns:
        ``<svg ...>...</svg>``.

    Example:
        >>> svg = line_chart_svg([Series("Oracle@k", "#000", [(1, 40.0), (2, 55.0)])],
        ...                      title="curve", x_range=(1, 2), x_ticks=(1, 2))
        >>> svg.startswith("<svg") and "<polyline" in svg
        True
    """
    f = _Frame(width, height, 46, 12, 26, 34, x_range[0], x_range[1], y_range[0], y_range[1])
    parts = [_svg_open(width, height, title), _axes(f, x_ticks, y_ticks, x_label, y_label)]
    if diagonal:
        lo, hi = max(x_range[0], y_range[0]), min(x_range[1], y_range[1])
        parts.append(
            f'<line x1="{f.x(lo):.1f}" y1="{f.y(lo):.1f}" x2="{f.x(hi):.1f}" y2="{f.y(hi):.1f}" '
            'stroke="#999" stroke-dasharray="4 3"/>'
        )
    for s in series:
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        runs: list[list[tuple[float, float]]] = [[]]
        for x, y in s.points:
            if y is None:
                runs.append([])
            else:
                runs[-1].append((f.x(x), f.y(y)))
        for run in runs:
            if len(run) > 1:
                pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
                parts.append(
                    f'<polyline points="{pts}" fill="none" stroke="{s.colour}" stroke-width="2"{dash}/>'
                )
        for x, y in s.points:
            if y is not None:
                parts.append(
                    f'<circle cx="{f.x(x):.1f}" cy="{f.y(y):.1f}" r="3" fill="{s.colour}">'
                    f"<title>{esc(s.name)}: {_tick(x)} → {y:.1f}</title></circle>"
                )
    parts.append(_legend([(s.name, s.colour, s.dashed) for s in series], f.left + 4, 14))
    parts.append("</svg>")
    return "".join(parts)


def stacked_bars_svg(rows: Sequence[tuple[str, Mapping[str, Any]]], *, title: str, width: int = 580) -> str:
    """Horizontal bars split by outcome kind (one bar per row of a decomposition).

    Args:
        rows: ``(label, D)`` with D a decomposition (``samples``, ``counts`` and a percent per kind).
        title: Accessible title.
        width: Pixels.

    Returns:
        ``<svg ...>...</svg>``: a legend of the kinds, then a bar per row with its sample count.

    Example:
        >>> d = {"samples": 4, "counts": {"hit": 3, "critic_miss": 1}, "hit": 75.0, "critic_miss": 25.0}
        >>> "critic miss: 25.0% (1)" in stacked_bars_svg([("overall", d)], title="decomposition")
        True
    """
    label_w, count_w, bar_h, gap, top = 160.0, 56.0, 16.0, 5.0, 28.0
    bar_w = width - label_w - count_w
    height = top + len(rows) * (bar_h + gap) + 6
    parts = [_svg_open(width, height, title)]
    x = 4.0
    for kind in OUTCOMES:
        parts.append(
            f'<rect x="{x:.1f}" y="6" width="11" height="11" fill="{KIND_COLOURS[kind]}"/>'
            f'<text x="{x + 14:.1f}" y="16">{esc(kind_label(kind))}</text>'
        )
        x += 24 + 6.3 * len(kind_label(kind))
    for i, (label, d) in enumerate(rows):
        y = top + i * (bar_h + gap)
        short = label if len(label) <= 26 else label[:25] + "…"
        parts.append(
            f'<text x="{label_w - 6:.1f}" y="{y + bar_h - 4:.1f}" text-anchor="end">'
            f"<title>{esc(label)}</title>{esc(short)}</text>"
        )
        counts = d.get("counts") or {}
        x = label_w
        for kind in OUTCOMES:
            pct = _num(d.get(kind))
            if not pct:
                continue
            w = bar_w * pct / 100.0
            parts.append(
                f'<rect x="{x:.2f}" y="{y:.1f}" width="{w:.2f}" height="{bar_h:.1f}" '
                f'fill="{KIND_COLOURS[kind]}"><title>{esc(label)} — {esc(kind_label(kind))}: '
                f"{pct:.1f}% ({_count(counts.get(kind))})</title></rect>"
            )
            if w >= 30:
                parts.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + bar_h - 4:.1f}" text-anchor="middle" '
                    f'class="onbar">{pct:.0f}</text>'
                )
            x += w
        if not _num(d.get("samples")):
            parts.append(
                f'<rect x="{label_w:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{bar_h:.1f}" '
                'fill="none" stroke="#ccc"/>'
            )
        parts.append(
            f'<text x="{width - count_w + 6:.1f}" y="{y + bar_h - 4:.1f}">n={_count(d.get("samples"))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def grouped_bars_svg(
    groups: Sequence[tuple[str, int | None, Sequence[float | None]]],
    *,
    series: Sequence[tuple[str, str]],
    title: str,
    x_label: str = "",
    y_label: str = "%",
    width: int = 580,
    height: int = 260,
) -> str:
    """Vertical grouped bars on a 0-100 scale, with each group's sample count under its label.

    Args:
        groups: ``(label, samples, values)``, one value per series (None: no bar).
        series: ``(name, colour)`` of each bar in a group.
        title: Accessible title.
        x_label: Axis label.
        y_label: Axis label.
        width: Pixels.
        height: Pixels.

    Returns:
        ``<svg ...>...</svg>``.

    Example:
        >>> svg = grouped_bars_svg(
        ...     [("<0.01%", 3, [33.3, 66.7])], series=[("Top-1", "#00f"), ("Oracle", "#f80")], title="by size"
        ... )
        >>> svg.count("<rect"), "n=3" in svg
        (2, True)
    """
    f = _Frame(width, height, 46, 10, 26, 50, 0, max(1, len(groups)), 0, 100)
    parts = [_svg_open(width, height, title), _axes(f, (), (0, 25, 50, 75, 100), "", y_label)]
    slot = (f.x(1) - f.x(0)) if groups else 0.0
    bar = slot * 0.8 / max(1, len(series))
    base = f.y(0)
    for i, (label, n, values) in enumerate(groups):
        x0 = f.x(i) + slot * 0.1
        for j, ((name, colour), v) in enumerate(zip(series, values, strict=False)):
            vv = _num(v)
            if vv is None:
                continue
            top = f.y(vv)
            parts.append(
                f'<rect x="{x0 + j * bar:.1f}" y="{top:.1f}" width="{bar - 1:.1f}" '
                f'height="{max(0.0, base - top):.1f}" fill="{colour}"><title>{esc(label)} — {esc(name)}: '
                f"{vv:.1f}% (n={_count(n)})</title></rect>"
            )
        cx = f.x(i) + slot / 2
        parts.append(
            f'<text x="{cx:.1f}" y="{base + 14:.1f}" text-anchor="middle" class="small">{esc(label)}</text>'
            f'<text x="{cx:.1f}" y="{base + 27:.1f}" text-anchor="middle" class="small muted">'
            f"n={_count(n)}</text>"
        )
    parts.append(
        f'<text x="{(f.left + width - f.right) / 2:.1f}" y="{height - 4:.1f}" text-anchor="middle" '
        f'class="label">{esc(x_label)}</text>'
    )
    parts.append(_legend([(n, c, False) for n, c in series], f.left + 4, 14))
    parts.append("</svg>")
    return "".join(parts)


def forest_plot_svg(
    rows: Sequence[tuple[str, str, float | None, Sequence[float] | None]],
    *,
    title: str,
    x_label: str = "B − A (points)",
    width: int = 640,
) -> str:
    """Differences with confidence intervals, one row each, around a zero line.

    Args:
        rows: ``(label, colour, diff, [lo, hi])`` (a None diff draws no marker, a None CI no whisker).
        title: Accessible title.
        x_label: Axis label.
        width: Pixels.

    Returns:
        ``<svg ...>...</svg>``.

    Example:
        >>> svg = forest_plot_svg([("demo Top-1", "#00f", 2.5, [-1.0, 6.0])], title="diffs")
        >>> "demo Top-1: +2.5 [-1.0, +6.0]" in svg
        True
    """
    bounds = [abs(x) for _, _, d, ci in rows for v in [d, *(ci or [])] if (x := _num(v)) is not None]
    span = max([5.0, *bounds]) * 1.1
    label_w, row_h = 190.0, 20.0
    height = 30 + len(rows) * row_h + 34
    f = _Frame(width, height, label_w, 70, 30, 34, -span, span, 0, 1)
    step = 10 ** math.floor(math.log10(span)) if span > 0 else 1.0
    if span / step < 3:
        step /= 2
    ticks = [t * step for t in range(-int(span / step), int(span / step) + 1)]
    parts = [_svg_open(width, height, title), _axes(f, ticks, (), x_label, "")]
    parts.append(
        f'<line x1="{f.x(0):.1f}" y1="{f.top - 6:.1f}" x2="{f.x(0):.1f}" y2="{height - f.bottom:.1f}" '
        'stroke="#555" stroke-dasharray="3 3"/>'
    )
    for i, (label, colour, diff, ci) in enumerate(rows):
        y = f.top + i * row_h + row_h / 2
        parts.append(f'<text x="{label_w - 8:.1f}" y="{y + 4:.1f}" text-anchor="end">{esc(label)}</text>')
        lo = _num(ci[0]) if ci is not None and len(ci) == 2 else None
        hi = _num(ci[1]) if ci is not None and len(ci) == 2 else None
        tip = f"{label}: {_signed(diff)} {_ci(ci)}"
        if lo is not None and hi is not None:
            parts.append(
                f'<line x1="{f.x(lo):.1f}" y1="{y:.1f}" x2="{f.x(hi):.1f}" y2="{y:.1f}" stroke="{colour}" '
                f'stroke-width="2"/><line x1="{f.x(lo):.1f}" y1="{y - 5:.1f}" x2="{f.x(lo):.1f}" '
                f'y2="{y + 5:.1f}" stroke="{colour}"/><line x1="{f.x(hi):.1f}" y1="{y - 5:.1f}" '
                f'x2="{f.x(hi):.1f}" y2="{y + 5:.1f}" stroke="{colour}"/>'
            )
        d = _num(diff)
        if d is not None:
            parts.append(
                f'<rect x="{f.x(d) - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}">'
                f"<title>{esc(tip)}</title></rect>"
            )
        parts.append(f'<text x="{width - f.right + 6:.1f}" y="{y + 4:.1f}">{_signed(diff)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- page skeleton ----------------------------------------------------------------------------------
_CSS = f"""
*{{box-sizing:border-box}}
body{{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
 color:#1c1c1c;background:#fff}}
main{{max-width:1280px;margin:0 auto;padding:12px 20px 40px}}
h1{{font-size:22px;margin:6px 0}} h2{{font-size:19px;margin:18px 0 6px;border-bottom:2px solid #ddd}}
h3{{font-size:15px;margin:12px 0 4px}}
.protocol{{color:#444;margin:2px 0 8px}}
nav{{margin:6px 0 10px;font-size:13px}} nav a{{margin-right:12px;color:#2a4d8f}}
table{{border-collapse:collapse;margin:4px 0 10px;font-variant-numeric:tabular-nums}}
th{{background:{TABLE_HEADER_COLOUR};color:#fff;font-weight:600;padding:4px 9px;text-align:left}}
td{{padding:3px 9px;border-bottom:1px solid #e4e4e4}}
tbody tr:nth-child(even){{background:#f7f8fa}}
tr.mean td,tr.all td{{font-weight:600;border-top:2px solid #bbb}}
td.num,th.num{{text-align:right}}
.grid{{display:flex;flex-wrap:wrap;gap:10px 28px;align-items:flex-start}}
.grid>div{{min-width:300px}}
.headline{{font-size:15px;margin:4px 0}} .headline b{{font-size:17px}}
.muted{{color:#777}} .pos{{color:#1a7f37;font-weight:600}} .neg{{color:#b42318;font-weight:600}}
.warning{{color:#b42318}}
.banner{{background:#fdecea;border:1px solid #f3b8b2;border-radius:4px;padding:6px 10px;margin:8px 0}}
svg.chart{{display:block;font-size:11px;fill:#222;margin:4px 0 8px;max-width:100%;height:auto}}
svg .grid{{stroke:#e5e5e5}} svg .axis{{stroke:#777}} svg .label{{fill:#555}}
svg .onbar{{fill:#fff;font-weight:600}} svg .small{{font-size:10px}} svg .muted{{fill:#777}}
#gallery{{background:{GALLERY_BACKGROUND};padding:10px 14px 16px;margin-top:16px;border-radius:6px}}
#gallery h2{{border-bottom-color:#d5cbea}}
.filters{{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center;margin:6px 0 10px}}
.filters select{{font-size:13px;padding:2px 4px;max-width:320px}}
.cards{{display:grid;grid-template-columns:repeat(auto-fill,minmax(380px,1fr));gap:12px}}
.card{{background:#fff;border:1px solid #d9d2e9;border-radius:6px;padding:8px;margin:0;min-width:0}}
.card img{{display:block;max-width:100%;height:auto;margin:0 auto;border:1px solid #ccc}}
.noimg{{padding:30px 8px;text-align:center;color:#777;border:1px dashed #bbb}}
.card .meta{{margin:6px 0 2px;font-size:13px;overflow-wrap:anywhere}}
.kind{{display:inline-block;color:#fff;border-radius:3px;padding:0 6px;font-size:12px;font-weight:600}}
.instr{{margin:3px 0;font-weight:500;overflow-wrap:anywhere}}
.pick{{font-size:12px;color:#444}}
pre{{background:#f6f6f6;border:1px solid #e2e2e2;padding:5px;margin:4px 0 0;max-height:9em;overflow:auto;
 white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px}}
details{{margin:3px 0}} summary{{cursor:pointer;color:#2a4d8f}}
ul.ids{{columns:4 160px;font-size:12px;margin:4px 0}}
[hidden]{{display:none !important}}
"""

_ERROR_CAPTURE = """<script>
(function () {
  var errors = [];
  function record(message) {
    errors.push(String(message));
    if (document.body) { document.body.dataset.jsErrors = errors.join("\\n"); }
  }
  window.onerror = function (message, source, line, column) {
    record(message + " (" + line + ":" + column + ")");
    return false;
  };
  window.addEventListener("unhandledrejection", function (event) {
    record("unhandled rejection: " + event.reason);
  });
})();
</script>"""

_GALLERY_SCRIPT = """<script>
(function () {
  var root = document.getElementById("gallery");
  var cards = root ? Array.prototype.slice.call(root.querySelectorAll(".card")) : [];
  var bench = document.getElementById("filter-benchmark");
  var cell = document.getElementById("filter-cell");
  var kind = document.getElementById("filter-kind");
  var count = document.getElementById("gallery-count");
  function value(select) { return select ? select.value : ""; }
  function apply() {
    var b = value(bench), c = value(cell), k = value(kind), shown = 0;
    cards.forEach(function (card) {
      var ok = (!b || card.dataset.benchmark === b) && (!c || card.dataset.cell === c) &&
               (!k || card.dataset.kind === k);
      card.hidden = !ok;
      if (ok) { shown += 1; }
    });
    if (count) { count.textContent = "showing " + shown + " of " + cards.length; }
  }
  function benchChanged() {
    var b = value(bench);
    if (cell) {
      Array.prototype.forEach.call(cell.querySelectorAll("optgroup"), function (group) {
        group.hidden = !!b && group.dataset.benchmark !== b;
      });
      var selected = cell.options[cell.selectedIndex];
      if (b && selected && selected.value && selected.parentNode.dataset.benchmark !== b) {
        cell.value = "";
      }
    }
    apply();
  }
  if (bench) { bench.addEventListener("change", benchChanged); }
  if (cell) { cell.addEventListener("change", apply); }
  if (kind) { kind.addEventListener("change", apply); }
  benchChanged();
  document.body.dataset.ready = "1";
})();
</script>"""

_READY_SCRIPT = """<script>
(function () { document.body.dataset.ready = "1"; })();
</script>"""


def _page(title: str, body: str, script: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>{_ERROR_CAPTURE}\n<main>\n{body}\n</main>\n{script}\n</body></html>\n"
    )


# -- results page -----------------------------------------------------------------------------------
def _title_of(name: str) -> str:
    from gge.benchmarks import REGISTRY

    bench = REGISTRY.get(name)
    return bench.title if bench is not None else name


def _anchor(name: str) -> str:
    return "bench-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in name)


def _protocol_line(document: Mapping[str, Any]) -> str:
    bits = []
    if document.get("protocol"):
        bits.append(f"<b>protocol</b>: {esc(document['protocol'])}")
    model = document.get("model")
    if isinstance(model, Mapping):
        name = model.get("name") or model.get("model") or model.get("preset") or model.get("path")
        if name:
            bits.append(f"<b>model</b>: {esc(name)}")
    elif model:
        bits.append(f"<b>model</b>: {esc(model)}")
    if _one_answer(document.get("k")):
        bits.append("<b>one answer per sample</b> (Top-1 only)")
    else:
        if document.get("selection"):
            bits.append(f"<b>selection</b>: {esc(document['selection'])}")
        if document.get("k") is not None:
            bits.append(f"<b>K</b> = {esc(document['k'])}")
    if document.get("gge_version"):
        bits.append(f"gge {esc(document['gge_version'])}")
    return '<p class="protocol">' + " · ".join(bits) + "</p>" if bits else ""


def _one_answer(k: Any) -> bool:
    """Whether a document's (or a renderer's) K is 1: a one-answer run, shown as Top-1 only."""
    return isinstance(k, int) and not isinstance(k, bool) and k == 1


def subset_banner(document: Mapping[str, Any]) -> str:
    """The banner of a subset run (``document["subset"]``, written by the cli), or "" for a full run.

    Example:
        >>> banner = subset_banner({"subset": {"max_samples": 5, "benchmarks": {"b": {"evaluated": 5,
        ...                                                                          "total": 36}}}})
        >>> "<b>subset: first 5 of 36 samples (b); max_samples=5" in banner
        True
        >>> subset_banner({"subset": None})
        ''
    """
    subset = document.get("subset")
    names = _mapping(subset.get("benchmarks")) if isinstance(subset, Mapping) else {}
    text = subset_text(subset, {str(n): _title_of(str(n)) for n in names})
    return f'<p class="warning banner" id="subset"><b>{esc(text)}</b></p>' if text else ""


def _official(entry: Mapping[str, Any], k: int) -> tuple[str, Any, Any]:
    off = entry.get("official")
    if isinstance(off, Mapping):
        return str(off.get("rule", "micro")), off.get("top1"), off.get(f"oracle@{k}")
    return "micro", entry.get("top1"), entry.get(f"oracle@{k}")


def _gap(top1: Any, oracle: Any) -> Any:
    t, o = _num(top1), _num(oracle)
    return None if t is None or o is None else o - t


def _summary(document: Mapping[str, Any], benchmarks: Mapping[str, Any]) -> str:
    k = _k_of({}, document.get("k"))
    one = _one_answer(k)
    rows = []
    for name, entry in benchmarks.items():
        if not isinstance(entry, Mapping):
            continue
        kk = _k_of(entry, document.get("k"))
        rule, top1, oracle = _official(entry, kk)
        row = [
            f'<a href="#{_anchor(name)}">{esc(_title_of(name))}</a>',
            _count(entry.get("samples")),
            esc(rule),
            _pct(top1),
        ]
        if not one:
            row += [_pct(oracle), _pct(_gap(top1, oracle))]
        rows.append([*row, _count(entry.get("format_errors")), _count(entry.get("image_errors"))])
    mean = document.get("mean")
    header = ["benchmark", "samples", "official rule", "Top-1"]
    header += [] if one else [f"Oracle@{k}", "gap"]
    table = _table([*header, "format errors", "image errors"], rows, cls="summary")
    if isinstance(mean, Mapping):
        m_top1, m_oracle = mean.get("top1"), mean.get(f"oracle@{k}")
        n = len(mean.get("benchmarks") or [])
        oracle_cells = "" if one else f"<td>{_pct(m_oracle)}</td><td>{_pct(_gap(m_top1, m_oracle))}</td>"
        mean_row = (
            f'<tr class="mean"><td>mean of {n} official headlines</td><td></td><td></td>'
            f"<td>{_pct(m_top1)}</td>{oracle_cells}<td></td><td></td></tr>"
        )
        table = table.replace("</tbody>", mean_row + "</tbody>")
    return f'<section id="summary"><h2>Summary</h2>{table}</section>'


def _pair(stats: Any, k: int) -> str:
    if not isinstance(stats, Mapping) or not stats.get("samples"):
        return '<span class="muted">–</span>'
    if _one_answer(k):
        return f'<span title="n={_count(stats.get("samples"))}">{_pct(stats.get("top1"))}</span>'
    return (
        f'<span title="n={_count(stats.get("samples"))}">{_pct(stats.get("top1"))} / '
        f"{_pct(stats.get(f'oracle@{k}'))}</span>"
    )


def official_table_html(t: Mapping[str, Any], k: int) -> str:
    """One official table: a 2-D grid of "Top-1 / Oracle@K" cells, or a 1-D list with counts.

    With ``k == 1`` (a one-answer run) the cells are Top-1 only.

    Args:
        t: One of results.json's ``tables`` (``title``, ``rows``, ``cols``, ``row_values``,
            ``col_values``, ``cells``, ``row_avg``, ``col_avg``, ``all``).
        k: The K of Oracle@K.

    Returns:
        An ``<h3>`` and a ``<table>``.

    Example:
        >>> t = {"title": "By app", "rows": "app", "cols": None, "row_values": ["x"],
        ...      "row_avg": {"x": {"samples": 2, "top1": 50.0, "oracle@5": 100.0}},
        ...      "all": {"samples": 2, "top1": 50.0, "oracle@5": 100.0}}
        >>> "<td>50.0</td><td>100.0</td>" in official_table_html(t, 5)
        True
    """
    row_avg = t.get("row_avg") or {}
    row_values = list(t.get("row_values") or row_avg)
    all_ = t.get("all") or {}
    one = _one_answer(k)
    if t.get("cols") is None:

        def line(stats: Any) -> list[str]:
            stats = _mapping(stats)
            out = [_count(stats.get("samples")), _pct(stats.get("top1"))]
            return out if one else [*out, _pct(stats.get(f"oracle@{k}"))]

        rows = [[esc(v), *line(row_avg.get(v))] for v in row_values]
        table = _table([esc(t.get("rows")), "n", "Top-1", *([] if one else [f"Oracle@{k}"])], rows)
        total = '<tr class="all"><td>all</td>' + "".join(f"<td>{c}</td>" for c in line(all_)) + "</tr>"
        heading = f"<h3>{esc(t.get('title'))}</h3>"
    else:
        cols = list(t.get("col_values") or [])
        cells = t.get("cells") or {}
        col_avg = t.get("col_avg") or {}
        rows = [
            [esc(rv), *(_pair((cells.get(rv) or {}).get(cv), k) for cv in cols), _pair(row_avg.get(rv), k)]
            for rv in row_values
        ]
        table = _table([f"{esc(t.get('rows'))} \\ {esc(t.get('cols'))}", *map(esc, cols), "avg"], rows)
        total = (
            '<tr class="all"><td>avg</td>'
            + "".join(f"<td>{_pair(col_avg.get(cv), k)}</td>" for cv in cols)
            + f"<td>{_pair(all_, k)}</td></tr>"
        )
        what = "Top-1" if one else f"Top-1 / Oracle@{k}"
        heading = f'<h3>{esc(t.get("title"))} <span class="muted">({what}, %)</span></h3>'
    return heading + table.replace("</tbody>", total + "</tbody>")


def _headline(entry: Mapping[str, Any], k: int) -> str:
    rule, top1, oracle = _official(entry, k)
    one = _one_answer(k)
    intervals = _mapping(entry.get("intervals"))
    micro = micro_of(entry)  # an entry written before the headlines moved: its top1 is micro
    bits = [f"official ({esc(rule)}): Top-1 <b>{_pct(top1)}</b>"]
    if not one:
        bits += [f"Oracle@{k} <b>{_pct(oracle)}</b>", f"gap {_pct(_gap(top1, oracle))}"]
    line2 = [f"n = {_count(entry.get('samples'))}"]
    keys = [("top1", "Top-1")] + ([] if one else [(f"oracle@{k}", f"Oracle@{k}")])
    for key, label in keys:
        if key in intervals or key in micro:
            line2.append(
                f"micro {label} {_pct(micro.get(key))} (95% CI {_ci(intervals.get(key), signed=False)})"
            )
    if not one and entry.get("top1_given_oracle") is not None:
        line2.append(f"micro Top-1 given Oracle {_pct(entry.get('top1_given_oracle'))}")
    for key, label in (
        ("format_errors", "format errors"),
        ("image_errors", "image errors"),
        ("truncated", "truncated"),
        ("abstentions", "abstentions"),
        ("critic_format_errors", "critic format errors"),
    ):
        if key in entry:
            line2.append(f"{label} {_count(entry.get(key))}")
    gain = entry.get("critic_gain")
    if isinstance(gain, Mapping) and not one:
        line2.append(
            f"critic gain: {_signed(gain.get('over_first'))} over first, "
            f"{_signed(gain.get('over_best_spatial'))} over best spatial "
            f"({esc(gain.get('best_spatial') or '–')})"
        )
    return f'<p class="headline">{" · ".join(bits)}</p><p class="muted">{" · ".join(line2)}</p>'


def _selection_table(entry: Mapping[str, Any], strategy: Any) -> str:
    sel = entry.get("selection")
    if not isinstance(sel, Mapping) or not sel:
        return ""
    rows = [[f"<b>{esc(s)}</b>" if s == strategy else esc(s), _pct(v)] for s, v in sel.items()]
    return "<h3>Top-1 by selection strategy</h3>" + _table(["strategy", "Top-1"], rows)


def _curve(entry: Mapping[str, Any], k: int) -> str:
    if _one_answer(k):
        return ""  # one answer per sample: no curve to draw
    oracle = [(float(j), _num(entry.get(f"oracle@{j}"))) for j in range(1, k + 1)]
    series = [Series("Oracle@k", ORACLE_COLOUR, oracle)]
    # the same average as the Oracle@k points: the headline, or micro in a document written before
    # the headlines moved
    top1 = _num(entry.get("top1"))
    if top1 is not None:
        series.append(Series("Top-1", TOP1_COLOUR, [(1.0, top1), (float(max(k, 2)), top1)], dashed=True))
    n = k
    pak = entry.get("pass_at_k")
    if isinstance(pak, Mapping) and isinstance(pak.get("n"), int) and pak["n"] >= 1:
        n = max(n, pak["n"])
        series.append(
            Series(
                "pass@k",
                PASS_COLOUR,
                [(float(j), _num(pak.get(f"pass@{j}"))) for j in range(1, pak["n"] + 1)],
            )
        )
    if all(y is None for s in series for _, y in s.points):
        return ""
    hi = float(max(n, 2))
    step = max(1, math.ceil(hi / 10))
    svg = line_chart_svg(
        series,
        title="Oracle@k curve",
        x_range=(1.0, hi),
        x_ticks=[float(t) for t in range(1, int(hi) + 1, step)],
        x_label="k (candidates)",
        y_label="% hit",
        width=400,
        height=240,
    )
    return f"<h3>Oracle@k curve</h3>{svg}"


def _decomposition(entry: Mapping[str, Any]) -> str:
    dec = entry.get("decomposition")
    if not isinstance(dec, Mapping):
        return ""
    out = [f'<h3>Outcomes <span class="muted">(Top-1 by {esc(dec.get("strategy", "–"))})</span></h3>']
    overall = dec.get("overall")
    if isinstance(overall, Mapping):
        out.append(stacked_bars_svg([("overall", overall)], title="outcome decomposition, overall"))
    for t in dec.get("tables") or []:
        if not isinstance(t, Mapping):
            continue
        rows = [(cell_label(c), c) for c in t.get("cells") or [] if isinstance(c, Mapping)]
        if rows:
            out.append(f"<h3>Outcomes: {esc(t.get('title'))}</h3>")
            out.append(stacked_bars_svg(rows, title=f"outcome decomposition, {t.get('title')}"))
    return "".join(out)


def _size_buckets(entry: Mapping[str, Any], k: int) -> str:
    sb = entry.get("size_buckets")
    if not isinstance(sb, Mapping) or not sb.get("buckets"):
        return ""
    one = _one_answer(k)
    groups = [
        (
            str(b.get("label", "")),
            b.get("samples") if isinstance(b.get("samples"), int) else None,
            [_num(b.get("top1"))] + ([] if one else [_num(b.get(f"oracle@{k}"))]),
        )
        for b in sb["buckets"]
        if isinstance(b, Mapping)
    ]
    svg = grouped_bars_svg(
        groups,
        series=[("Top-1", TOP1_COLOUR)] + ([] if one else [(f"Oracle@{k}", ORACLE_COLOUR)]),
        title="Top-1 by target size" if one else "Top-1 and Oracle@K by target size",
        x_label="target area / screenshot area",
    )
    note = f'<p class="muted">no target area (absent targets): {_count(sb.get("no_area"))}'
    if sb.get("unreadable"):
        note += f" · unreadable screenshots: {_count(sb.get('unreadable'))}"
    note += "</p>"
    return f"<h3>By target size</h3>{svg}{note}"


def _miss_distance(entry: Mapping[str, Any]) -> str:
    md = entry.get("miss_distance")
    if not isinstance(md, Mapping):
        return ""
    rows = []
    ts = md.get("target_sizes")
    if isinstance(ts, Mapping):
        rows.append(["target sizes (×)", *(_frac(ts.get(q), 1) for q in ("q1", "median", "q3"))])
    sc = md.get("screen")
    if isinstance(sc, Mapping):
        rows.append(
            [
                "screen diagonal (%)",
                *(_pct(None if _num(sc.get(q)) is None else 100 * sc[q]) for q in ("q1", "median", "q3")),
            ]
        )
    table = _table(["distance in", "q1", "median", "q3"], rows) if rows else ""
    return (
        f'<h3>Miss distance</h3><p class="muted">{_count(md.get("misses"))} misses with a point pick, '
        f"distance to the target's box</p>{table}"
    )


def _calibration(entry: Mapping[str, Any]) -> str:
    cal = entry.get("calibration")
    if not isinstance(cal, Mapping):
        return ""
    rows = [
        ["score kind", esc(cal.get("score_kind", "–"))],
        ["candidates (hits)", f"{_count(cal.get('candidates'))} ({_count(cal.get('positives'))})"],
        ["AUROC", _frac(cal.get("auroc"))],
        ["ECE", _frac(cal.get("ece"))],
        ["Brier", _frac(cal.get("brier"))],
        ["AURC (%)", _pct(cal.get("aurc"))],
        ["unscored samples", _count(cal.get("unscored_samples"))],
    ]
    charts = [_table(["", "value"], rows)]
    rel = cal.get("reliability")
    if isinstance(rel, list) and rel:
        pts = [
            (float(_num(b.get("confidence")) or 0.0), _num(b.get("accuracy")))
            for b in rel
            if isinstance(b, Mapping) and b.get("count") and _num(b.get("confidence")) is not None
        ]
        charts.append(
            line_chart_svg(
                [Series("accuracy", TOP1_COLOUR, pts)],
                title="reliability diagram",
                x_range=(0.0, 1.0),
                y_range=(0.0, 1.0),
                x_ticks=(0, 0.25, 0.5, 0.75, 1),
                y_ticks=(0, 0.25, 0.5, 0.75, 1),
                x_label="critic confidence",
                y_label="fraction hit",
                diagonal=True,
                width=300,
                height=240,
            )
        )
    rc = cal.get("risk_coverage")
    if isinstance(rc, list) and rc:
        pts = [
            (float(_num(p.get("coverage")) or 0.0), _num(p.get("top1")))
            for p in rc
            if isinstance(p, Mapping) and _num(p.get("coverage")) is not None
        ]
        charts.append(
            line_chart_svg(
                [Series("Top-1 of kept", TOP1_COLOUR, pts)],
                title="risk-coverage",
                x_range=(0.0, 100.0),
                x_ticks=(0, 25, 50, 75, 100),
                x_label="coverage (% samples kept, most confident first)",
                y_label="Top-1 %",
                width=340,
                height=240,
            )
        )
    return (
        '<h3>Critic calibration</h3><div class="grid">'
        + "".join(f"<div>{c}</div>" for c in charts)
        + "</div>"
    )


def _benchmark_section(name: str, entry: Mapping[str, Any], document: Mapping[str, Any]) -> str:
    k = _k_of(entry, document.get("k"))
    tables = "".join(official_table_html(t, k) for t in entry.get("tables") or [] if isinstance(t, Mapping))
    blocks = [
        tables + ("" if _one_answer(k) else _selection_table(entry, document.get("selection"))),
        _curve(entry, k) + _miss_distance(entry),
        _decomposition(entry),
        _size_buckets(entry, k),
        _calibration(entry),
    ]
    grid = "".join(f"<div>{b}</div>" for b in blocks if b)
    return (
        f'<section class="bench" id="{_anchor(name)}"><h2>{esc(_title_of(name))} '
        f'<span class="muted">({esc(name)})</span></h2>{_headline(entry, k)}<div class="grid">{grid}</div>'
        "</section>"
    )


def _cell_key(entry: Mapping[str, Any]) -> str:
    return f"{entry.get('benchmark', '')} · {cell_label(entry.get('cell'))}"


def _card(entry: Mapping[str, Any]) -> str:
    kind = str(entry.get("kind", ""))
    thumb = entry.get("thumb")
    if isinstance(thumb, str) and thumb.startswith("data:image/"):
        size = entry.get("thumb_size")
        dims = ""
        if isinstance(size, (list, tuple)) and len(size) == 2 and all(_num(v) for v in size):
            dims = f' width="{int(size[0])}" height="{int(size[1])}"'
        alt = f"screenshot of {esc(entry.get('id'))} with the target and candidates"
        img = f'<img src="{esc(thumb)}"{dims} alt="{alt}">'
    else:
        img = '<div class="noimg">screenshot unavailable</div>'
    pick = _mapping(entry.get("pick"))
    point = pick.get("point")
    if point is None:
        what = "abstains" if pick.get("rank") is not None else "no pick"
    else:
        rank = pick.get("rank")
        where = f"({_frac(point[0], 0)}, {_frac(point[1], 0)})" if isinstance(point, (list, tuple)) else ""
        what = f"#{esc(rank)} {where}" if rank is not None else f"new point {where}"
    hits = entry.get("hit_ranks") or []
    n = entry.get("candidates")
    hit_text = ", ".join(f"#{esc(h)}" for h in hits) if hits else "none"
    colour = KIND_COLOURS.get(kind, "#555")
    raw = entry.get("raw") or ""
    critic = entry.get("critic_raw") or ""
    critic_html = (
        f"<details><summary>critic answer</summary><pre>{esc(critic)}</pre></details>" if critic else ""
    )
    image_error = entry.get("image_error")
    err = f'<div class="pick">image error: {esc(image_error)}</div>' if image_error else ""
    return (
        f'<figure class="card" data-benchmark="{esc(entry.get("benchmark"))}" '
        f'data-cell="{esc(_cell_key(entry))}" data-kind="{esc(kind)}">{img}<figcaption>'
        f'<div class="meta"><span class="kind" style="background:{colour}">{esc(kind_label(kind))}</span> '
        f"<b>{esc(entry.get('benchmark'))}</b> · <code>{esc(entry.get('id'))}</code> · "
        f"cell: {esc(cell_label(entry.get('cell')))}</div>"
        f'<p class="instr">{esc(entry.get("instruction"))}</p>'
        f'<div class="pick">pick: {what} · hits: {hit_text} · '
        f"{_count(n)} candidate{'' if n == 1 else 's'}</div>"
        f"{err}<pre>{esc(raw) if raw else '(no raw answer)'}</pre>{critic_html}</figcaption></figure>"
    )


def _gallery(gallery: Sequence[Mapping[str, Any]]) -> str:
    benches: dict[str, int] = {}
    cells: dict[str, dict[str, int]] = {}
    kinds: dict[str, int] = {}
    for e in gallery:
        b = str(e.get("benchmark", ""))
        benches[b] = benches.get(b, 0) + 1
        per = cells.setdefault(b, {})
        key = _cell_key(e)
        per[key] = per.get(key, 0) + 1
        kind = str(e.get("kind", ""))
        kinds[kind] = kinds.get(kind, 0) + 1
    bench_opts = "".join(f'<option value="{esc(b)}">{esc(b)} ({n})</option>' for b, n in benches.items())
    cell_opts = "".join(
        f'<optgroup label="{esc(b)}" data-benchmark="{esc(b)}">'
        + "".join(
            f'<option value="{esc(key)}">{esc(key.split(" · ", 1)[1])} ({n})</option>'
            for key, n in sorted(per.items())
        )
        + "</optgroup>"
        for b, per in cells.items()
    )
    ordered = [k for k in OUTCOMES if k in kinds] + sorted(k for k in kinds if k not in OUTCOMES)
    kind_opts = "".join(
        f'<option value="{esc(k)}">{esc(kind_label(k))} ({kinds[k]})</option>' for k in ordered
    )
    n = len(gallery)
    cards = "".join(_card(e) for e in gallery)
    empty = '<p class="muted">No misses to show.</p>' if not gallery else ""
    return (
        '<section id="gallery"><h2>Gallery of misses</h2>'
        '<p class="muted">Target in blue, candidates as discs (green hit, red miss) with their proposer '
        "rank, the pick ringed in yellow.</p>"
        '<div class="filters">'
        '<label>benchmark <select id="filter-benchmark">'
        f'<option value="">all</option>{bench_opts}</select></label>'
        f'<label>cell <select id="filter-cell"><option value="">all</option>{cell_opts}</select></label>'
        f'<label>kind <select id="filter-kind"><option value="">all</option>{kind_opts}</select></label>'
        f'<span id="gallery-count">showing {n} of {n}</span></div>'
        f'{empty}<div class="cards">{cards}</div></section>'
    )


def render_report_html(
    document: Mapping[str, Any], gallery: Sequence[Mapping[str, Any]], *, title: str | None = None
) -> str:
    """The whole results page, as one self-contained HTML string.

    Args:
        document: A results.json document (``protocol``, ``k``, ``selection``, ``benchmarks``,
            ``mean``...). The issue-11 sections of a benchmark entry (``decomposition``,
            ``critic_gain``, ``pass_at_k``, ``size_buckets``, ``miss_distance``, ``calibration``)
            are drawn when present and skipped when absent or None. A benchmark's headline is its
            ``official`` figure; the micro means come from ``micro`` (a document without it, written
            before the headlines moved, has them as its unqualified ``top1`` / ``oracle@K``). With
            ``k == 1`` (a one-answer run) the page is Top-1 only: no Oracle@k column or curve, no
            strategies table, no critic gain. A non-null ``subset`` gives a banner ("subset: first N
            of M samples").
        gallery: Entries from :func:`gallery_entries` (may be empty).
        title: The page title (default: "gge report" and the model's protocol).

    Returns:
        The HTML page.

    Example:
        >>> doc = {"k": 2, "protocol": "p", "mean": {"benchmarks": ["b"], "top1": 50.0, "oracle@2": 75.0},
        ...        "benchmarks": {"b": {"samples": 4, "top1": 50.0, "oracle@1": 50.0, "oracle@2": 75.0,
        ...                             "official": {"rule": "micro", "top1": 50.0, "oracle@2": 75.0}}}}
        >>> page = render_report_html(doc, [])
        >>> "<td>50.0</td><td>75.0</td><td>25.0</td>" in page, "<polyline" in page
        (True, True)
    """
    benchmarks = document.get("benchmarks") or {}
    if not isinstance(benchmarks, Mapping):
        benchmarks = {}
    page_title = title or "gge report"
    nav = (
        '<nav><a href="#summary">summary</a>'
        + "".join(f'<a href="#{_anchor(n)}">{esc(n)}</a>' for n in benchmarks)
        + '<a href="#gallery">gallery of misses</a></nav>'
    )
    sections = "".join(
        _benchmark_section(name, entry, document)
        for name, entry in benchmarks.items()
        if isinstance(entry, Mapping)
    )
    body = (
        f"<header><h1>{esc(page_title)}</h1>{_protocol_line(document)}{nav}</header>"
        f"{subset_banner(document)}{_summary(document, benchmarks)}{sections}{_gallery(gallery)}"
    )
    return _page(page_title, body, _GALLERY_SCRIPT)


# -- compare page -----------------------------------------------------------------------------------
def _oracle_key(d: Mapping[str, Any], k: Any) -> str:
    if isinstance(k, int) and f"oracle@{k}" in d:
        return f"oracle@{k}"
    if "oracle@K" in d:
        return "oracle@K"
    keys = [key for key in d if key.startswith("oracle@")]
    return keys[0] if keys else f"oracle@{k}"


def _diff_cell(diff: Any, ci: Any) -> str:
    lo = _num(ci[0]) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None
    hi = _num(ci[1]) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None
    cls = "pos" if lo is not None and lo > 0 else "neg" if hi is not None and hi < 0 else ""
    attr = f' class="{cls}"' if cls else ""
    return f"<span{attr}>{_signed(diff)}</span>"


def _pair_row(name: str, s: Any) -> list[str]:
    if not isinstance(s, Mapping):
        return [esc(name), *(["–"] * 9)]
    return [
        esc(name),
        _pct(s.get("a")),
        _pct(s.get("b")),
        _diff_cell(s.get("diff"), s.get("ci")),
        _ci(s.get("ci")),
        _pvalue(s.get("mcnemar_p")),
        _pct(s.get("mdd")),
        _count(s.get("b_only")),
        _count(s.get("a_only")),
        _count(s.get("samples")),
    ]


def _side(label: str, side: Any) -> str:
    if not isinstance(side, Mapping):
        return ""
    bits = [f"<b>{label}</b>: {esc(side.get('label') or side.get('path') or '–')}"]
    if side.get("path"):
        bits.append(f"<code>{esc(side['path'])}</code>")
    for key in ("selection", "k", "protocol"):
        if side.get(key) is not None:
            bits.append(f"{key} {esc(side[key])}")
    return '<p class="protocol">' + " · ".join(bits) + "</p>"


def _ids(title: str, ids: Any) -> str:
    items = list(ids) if isinstance(ids, (list, tuple)) else []
    lis = "".join(f"<li><code>{esc(i)}</code></li>" for i in items)
    body = f'<ul class="ids">{lis}</ul>' if items else '<p class="muted">none</p>'
    return f"<details><summary>{esc(title)} ({len(items)})</summary>{body}</details>"


def _headline_row(name: str, h: Any) -> list[str]:
    h = _mapping(h)
    return [
        esc(name),
        _pct(h.get("a")),
        _pct(h.get("b")),
        _diff_cell(h.get("diff"), h.get("ci")),
        _ci(h.get("ci")),
        *(["–"] * 5),
    ]


def _errors_line(b: Mapping[str, Any]) -> str:
    bits = []
    for key, label in (("format_errors", "format errors"), ("image_errors", "image errors")):
        v = b.get(key)
        if isinstance(v, Mapping):
            bits.append(f"{label} A {_count(v.get('a'))} · B {_count(v.get('b'))}")
    return " · " + " · ".join(bits) if bits else ""


def _compare_bench(name: str, b: Mapping[str, Any], k: Any) -> str:
    one = _one_answer(k)
    ok = _oracle_key(b, k)
    label_k = ok.split("@", 1)[1]
    micro = b.get("micro")
    if isinstance(micro, Mapping):  # a compare.json with the headlines moved (S1)
        rule = esc(_mapping(b.get("top1")).get("rule", "–"))
        rows = [_headline_row(f"official Top-1 ({rule})", b.get("top1"))]
        if not one:
            rows.append(_headline_row(f"official Oracle@{label_k} ({rule})", b.get(ok)))
        rows.append(_pair_row("micro Top-1", micro.get("top1")))
        if not one:
            rows.append(_pair_row(f"micro Oracle@{label_k}", micro.get(_oracle_key(micro, k))))
    else:  # an older compare.json: top1 / oracle@K are the micro PairStats
        rows = [_pair_row("Top-1", b.get("top1"))]
        if not one:
            rows.append(_pair_row(f"Oracle@{label_k}", b.get(ok)))
        off = b.get("official")
        if isinstance(off, Mapping):
            rows.append(_headline_row(f"official ({esc(off.get('rule', '–'))})", off))
    header = ["", "A", "B", "B − A", "95% CI", "McNemar p", "MDD", "won (B only)", "lost (A only)", "n"]
    out = [
        f'<section class="bench" id="{_anchor(name)}"><h2>{esc(b.get("title") or _title_of(name))} '
        f'<span class="muted">({esc(name)})</span></h2>'
        f'<p class="muted">{_count(b.get("samples"))} samples on '
        f"{_count(b.get('screenshots'))} screenshots{_errors_line(b)}</p>",
        _table(header, rows),
    ]
    for t in b.get("tables") or []:
        if not isinstance(t, Mapping):
            continue
        cell_rows = []
        for c in t.get("cells") or []:
            if not isinstance(c, Mapping):
                continue
            stats = [_mapping(c.get("top1"))] + ([] if one else [_mapping(c.get(_oracle_key(c, k)))])
            cell_rows.append(
                [
                    esc(cell_label(c)),
                    _count(c.get("samples")),
                    *(
                        v
                        for s in stats
                        for v in (
                            _pct(s.get("a")),
                            _pct(s.get("b")),
                            _diff_cell(s.get("diff"), s.get("ci")),
                            _ci(s.get("ci")),
                            _pvalue(s.get("mcnemar_p")),
                        )
                    ),
                ]
            )
        if cell_rows:
            head = ["cell", "n", "Top-1 A", "Top-1 B", "B − A", "95% CI", "p"]
            if not one:
                head += [f"Oracle@{label_k} A", f"Oracle@{label_k} B", "B − A", "95% CI", "p"]
            out.append(f"<h3>{esc(t.get('title'))}</h3>" + _table(head, cell_rows))
    out.append(_ids("won: B hits, A misses", b.get("won")))
    out.append(_ids("lost: A hits, B misses", b.get("lost")))
    out.append("</section>")
    return "".join(out)


def render_compare_html(compare: Mapping[str, Any]) -> str:
    """The page of ``gge compare A B``: paired differences with intervals, per benchmark and cell.

    Args:
        compare: A compare.json document (``a``, ``b``, ``k``, ``bootstrap``, ``benchmarks``,
            ``mean``).

    Returns:
        The HTML page: both runs, a forest plot of the Top-1 and Oracle@K differences with their 95%
        intervals, then per benchmark a table (A, B, B − A, CI, McNemar p, MDD, won/lost counts), the
        same per official table cell, and the won and lost ids (collapsible). A document whose
        benchmarks carry ``micro`` (the headlines moved) has the official headline differences as
        ``top1`` / ``oracle@K`` and the micro PairStats under ``micro``: both are shown, the
        headline first; an older one has the micro PairStats as ``top1`` / ``oracle@K``. Each
        benchmark's format and image error counts of A and B are shown when present; with a common
        K of 1 the page is Top-1 only.

    Example:
        >>> pair = {"a": 50.0, "b": 60.0, "diff": 10.0, "ci": [2.0, 18.0], "mcnemar_p": 0.01,
        ...         "mdd": 7.5, "b_only": 12, "a_only": 2, "samples": 100}
        >>> doc = {"k": 5, "a": {"label": "A"}, "b": {"label": "B"},
        ...        "benchmarks": {"x": {"samples": 100, "top1": pair, "oracle@5": pair}}}
        >>> '<span class="pos">+10.0</span>' in render_compare_html(doc)
        True
    """
    k = compare.get("k")
    benchmarks = compare.get("benchmarks") or {}
    if not isinstance(benchmarks, Mapping):
        benchmarks = {}
    a, b = compare.get("a") or {}, compare.get("b") or {}
    a_label = a.get("label") if isinstance(a, Mapping) else None
    b_label = b.get("label") if isinstance(b, Mapping) else None
    title = f"gge compare — {a_label or 'A'} vs {b_label or 'B'}"
    forest_rows: list[tuple[str, str, float | None, Sequence[float] | None]] = []
    for name, bench in benchmarks.items():
        if not isinstance(bench, Mapping):
            continue
        for key, colour, what in (
            ("top1", TOP1_COLOUR, "Top-1"),
            (_oracle_key(bench, k), ORACLE_COLOUR, "Oracle"),
        )[: 1 if _one_answer(k) else 2]:
            s = bench.get(key)
            if isinstance(s, Mapping):
                forest_rows.append((f"{name} {what}", colour, _num(s.get("diff")), s.get("ci")))
    boot = compare.get("bootstrap")
    boot_line = (
        f'<p class="muted">95% intervals: paired bootstrap, {_count(boot.get("resamples"))} resamples '
        f"clustered by {esc(boot.get('cluster', '–'))}, seed {_count(boot.get('seed'))}; McNemar exact p; "
        "MDD: minimum detectable difference (alpha 0.05, power 0.8); – where a group spans fewer than 5 "
        "screenshots.</p>"
        if isinstance(boot, Mapping)
        else ""
    )
    mean = compare.get("mean")
    mean_html = (
        _table(
            ["", "A", "B", "B − A"],
            [
                [
                    "mean of official headlines",
                    _pct(mean.get("a")),
                    _pct(mean.get("b")),
                    _signed(mean.get("diff")),
                ]
            ],
        )
        if isinstance(mean, Mapping)
        else ""
    )
    forest = (
        "<h2>Differences (B − A) with 95% intervals</h2>"
        + forest_plot_svg(forest_rows, title="differences B − A with 95% intervals")
        if forest_rows
        else ""
    )
    nav = "<nav>" + "".join(f'<a href="#{_anchor(n)}">{esc(n)}</a>' for n in benchmarks) + "</nav>"
    sections = "".join(
        _compare_bench(name, bench, k) for name, bench in benchmarks.items() if isinstance(bench, Mapping)
    )
    remarks = "".join(
        f'<p class="{cls}">{what}: {esc(text)}</p>'
        for key, cls, what in (("warnings", "warning", "warning"), ("notes", "muted", "note"))
        for text in (compare.get(key) or [])
    )
    body = (
        f"<header><h1>{esc(title)}</h1>{_side('A', a)}{_side('B', b)}"
        f'<p class="protocol">common K = {esc(k)}</p>{boot_line}{remarks}{nav}</header>'
        f'<section id="summary">{mean_html}{forest}</section>{sections}'
    )
    return _page(title, body, _READY_SCRIPT)


def write_report_html(path: Path, html: str) -> Path:
    """Write the page atomically (:func:`gge.run.runstate.atomic_write`).

    Args:
        path: Destination, e.g. ``output_dir / "report.html"``.
        html: The page.

    Returns:
        ``path``.

    Example:
        >>> import tempfile
        >>> p = write_report_html(Path(tempfile.mkdtemp()) / "report.html", "<!DOCTYPE html>")
        >>> p.read_text()
        '<!DOCTYPE html>'
    """
    return atomic_write(Path(path), html)


__all__ = [
    "GALLERY_BACKGROUND",
    "KIND_COLOURS",
    "TABLE_HEADER_COLOUR",
    "Series",
    "cell_label",
    "cell_of",
    "esc",
    "forest_plot_svg",
    "gallery_entries",
    "grouped_bars_svg",
    "kind_label",
    "line_chart_svg",
    "official_table_html",
    "overlay_data_uri",
    "render_compare_html",
    "render_report_html",
    "stacked_bars_svg",
    "write_report_html",
]
