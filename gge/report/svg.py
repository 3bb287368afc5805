"""The report's charts as inline SVG: line charts, stacked and grouped bars, forest plots.

Each function returns one ``<svg>`` element (with an accessible title and a tooltip per mark) that
the pages of :mod:`gge.report.html` and :mod:`gge.report.compare_page` embed as is; nothing is
fetched and no plotting library is needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gge.report.cost_tables import Curve
from gge.report.gallery import kind_label
from gge.report.html_format import KIND_COLOURS, _ci, _count, _num, _signed, esc
from gge.scoring.analysis import OUTCOMES, WHEN_PRESENT


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


def _axes(
    f: _Frame,
    x_ticks: Sequence[float],
    y_ticks: Sequence[float],
    x_label: str,
    y_label: str,
    x_format: Callable[[float], str] = _tick,
) -> str:
    parts = []
    for t in y_ticks:
        y = f.y(t)
        parts.append(
            f'<line x1="{f.left:.1f}" y1="{y:.1f}" x2="{f.width - f.right:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{f.left - 4:.1f}" y="{y + 3.5:.1f}" text-anchor="end" class="tick y">{_tick(t)}</text>'
        )
    base = f.height - f.bottom
    for t in x_ticks:
        x = f.x(t)
        parts.append(
            f'<line x1="{x:.1f}" y1="{base:.1f}" x2="{x:.1f}" y2="{base + 4:.1f}" class="axis"/>'
            f'<text x="{x:.1f}" y="{base + 15:.1f}" text-anchor="middle" class="tick x">{x_format(t)}</text>'
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
        if kind in WHEN_PRESENT and not any(d.get(kind) for _, d in rows):
            continue
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


# -- the budget plot --------------------------------------------------------------------------------
_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)


def nice_ticks(lo: float, hi: float, *, count: int = 5) -> list[float]:
    """Round, evenly spaced ticks from at or below ``lo`` to at or above ``hi`` (about ``count`` steps).

    A step is 1, 2, 2.5 or 5 times a power of ten; an empty span is widened by 10% of its value
    (or by 1 at zero) on each side.

    Example:
        >>> nice_ticks(1040, 1360)
        [1000.0, 1100.0, 1200.0, 1300.0, 1400.0]
        >>> nice_ticks(0.42, 0.42)
        [0.36, 0.38, 0.4, 0.42, 0.44, 0.46, 0.48]
    """
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(1, count)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in _STEPS if m * power >= raw * (1 - 1e-9))
    first = math.floor(lo / step + 1e-9)
    last = math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def _y_ticks(values: Sequence[float]) -> list[float]:
    """Ticks of a percent axis covering ``values``, kept inside [0, 100]."""
    lo, hi = (min(values), max(values)) if values else (0.0, 100.0)
    if hi - lo < 10:  # a few points apart: show at least ten
        mid = (lo + hi) / 2
        lo, hi = min(lo, mid - 5), max(hi, mid + 5)
    pad = max(2.0, 0.05 * (hi - lo))  # no point on the frame
    lo, hi = max(0.0, lo - pad), min(100.0, hi + pad)
    ticks = [t for t in nice_ticks(lo, hi) if -1e-9 <= t <= 100 + 1e-9]
    return ticks if len(ticks) >= 2 else [0.0, 100.0]


def _marker(x: float, y: float, colour: str, paid: bool, attrs: str, tip: str) -> str:
    fill = colour if paid else "#fff"
    return (
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{fill}" stroke="{colour}" stroke-width="1.5" '
        f"{attrs}><title>{esc(tip)}</title></circle>"
    )


def _diamond(x: float, y: float, size: float = 6.0) -> str:
    corners = ((x, y - size), (x + size, y), (x, y + size), (x - size, y))
    return "M" + " L".join(f"{cx:.1f},{cy:.1f}" for cx, cy in corners) + " Z"


def budget_chart_svg(
    curves: Sequence[Curve],
    *,
    title: str,
    x_label: str,
    x_format: Callable[[float], str],
    colours: Mapping[str, str],
    refined: tuple[float, float] | None = None,
    refined_colour: str = "#2e7d32",
    refined_cost: str = "measured",
    faint: Sequence[str] = ("first",),
    width: int = 420,
    height: int = 270,
) -> str:
    """Top-1 against a cost per sample: one line per strategy, paid points filled, derived hollow.

    Each point is a ``<circle>`` with ``data-strategy``, ``data-j`` and ``data-cost`` (``measured``,
    ``replayed``: what the run paid, or ``derived``) and a tooltip saying which; the refined point is
    a diamond (``data-strategy="refined"``). The x
    axis spans round ticks around the costs (:func:`nice_ticks`), the y axis the Top-1 values (percent,
    inside 0-100, with a margin so that no point sits on the frame). The ``<desc>`` lists every point
    in words. The curves are drawn in reverse order, so the first (the critic's) is on top.

    Args:
        curves: The strategies' curves (:func:`gge.report.cost_tables.budget_curves`).
        title: Accessible title.
        x_label: The cost axis's label.
        x_format: How a cost tick reads.
        colours: Colour by strategy (``#555`` for one not named).
        refined: The refined point ``(cost, Top-1)``, or None.
        refined_colour: Its colour.
        refined_cost: Its cost's label (``measured`` or ``replayed``).
        faint: Strategies drawn faint.
        width: Pixels.
        height: Pixels.

    Returns:
        ``<svg ...>...</svg>``.

    Example:
        >>> from gge.report.cost_tables import Curve, CurvePoint
        >>> points = (CurvePoint(1, 100.0, 40.0, "derived"), CurvePoint(2, 200.0, 60.0, "replayed"))
        >>> c = Curve("critic", "critic", points)
        >>> svg = budget_chart_svg([c], title="t", x_label="tokens", x_format=str, colours={})
        >>> svg.count('data-cost="derived"'), svg.count('data-cost="replayed"'), "<polyline" in svg
        (1, 1, True)
        >>> "j=2: 200.0 → 60.0% (replayed cost)" in svg, ">replayed</text>" in svg
        (True, True)
    """
    xs = [p.x for c in curves for p in c.points] + ([refined[0]] if refined else [])
    ys = [p.y for c in curves for p in c.points] + ([refined[1]] if refined else [])
    x_ticks = nice_ticks(min(xs), max(xs)) if xs else [0.0, 1.0]
    y_ticks = _y_ticks(ys)
    f = _Frame(width, height, 46, 24, 44, 36, x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1])
    parts = [_svg_open(width, height, title)]
    words = [
        f"{c.label}: " + "; ".join(f"j={p.j} {x_format(p.x)} → {p.y:.1f}% ({p.cost})" for p in c.points)
        for c in curves
    ]
    if refined is not None:
        words.append(f"refined: {x_format(refined[0])} → {refined[1]:.1f}% ({refined_cost})")
    paid = {p.cost for c in curves for p in c.points if not p.derived}
    paid_word = "replayed" if "replayed" in paid else "measured"
    parts.append(f"<desc>{esc('. '.join(words))}</desc>")
    parts.append(_axes(f, x_ticks, y_ticks, x_label, "Top-1 %", x_format))
    legend = [(c.label, colours.get(c.strategy, "#555"), False) for c in curves]
    for c in reversed(curves):  # the first curve (the critic's) drawn last, on top
        colour = colours.get(c.strategy, "#555")
        opacity = ' opacity="0.45"' if c.strategy in faint else ""
        parts.append(f'<g class="curve" data-strategy="{esc(c.strategy)}"{opacity}>')
        if len(c.points) > 1:
            pts = " ".join(f"{f.x(p.x):.1f},{f.y(p.y):.1f}" for p in c.points)
            parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for p in c.points:
            attrs = f'data-strategy="{esc(c.strategy)}" data-j="{p.j}" data-cost="{esc(p.cost)}"'
            tip = f"{c.label}, j={p.j}: {x_format(p.x)} → {p.y:.1f}% ({p.cost} cost)"
            parts.append(_marker(f.x(p.x), f.y(p.y), colour, not p.derived, attrs, tip))
        parts.append("</g>")
    if refined is not None:
        rx, ry = f.x(refined[0]), f.y(refined[1])
        parts.append(
            f'<path d="{_diamond(rx, ry)}" fill="{refined_colour}" data-strategy="refined" '
            f'data-x="{rx:.1f}" data-y="{ry:.1f}" data-cost="{esc(refined_cost)}">'
            f"<title>{esc(f'refined: {x_format(refined[0])} → {refined[1]:.1f}% ({refined_cost} cost)')}"
            "</title></path>"
        )
    parts.append(_legend(legend, f.left + 4, 14))
    y2 = 31.0
    x = f.left + 4
    parts.append(_marker(x + 4, y2 - 4, "#555", True, 'class="key"', f"{paid_word} cost"))
    parts.append(f'<text x="{x + 12:.1f}" y="{y2:.1f}">{paid_word}</text>')
    x += 76
    parts.append(_marker(x + 4, y2 - 4, "#555", False, 'class="key"', "derived cost"))
    parts.append(f'<text x="{x + 12:.1f}" y="{y2:.1f}">derived</text>')
    if refined is not None:
        x += 70
        parts.append(f'<path d="{_diamond(x + 4, y2 - 4, 4.5)}" fill="{refined_colour}"/>')
        parts.append(f'<text x="{x + 12:.1f}" y="{y2:.1f}">refined</text>')
    parts.append("</svg>")
    return "".join(parts)


__all__ = [
    "Series",
    "budget_chart_svg",
    "forest_plot_svg",
    "grouped_bars_svg",
    "line_chart_svg",
    "nice_ticks",
    "stacked_bars_svg",
]
