"""The page of ``gge compare A B``: paired differences of two runs, with intervals, as HTML.

:func:`render_compare_html` turns a compare.json document into one self-contained page (both runs, a
forest plot of the differences, per benchmark and per official table cell the paired statistics,
the won and lost ids), built from the same pieces as the results page (:mod:`gge.report.html_format`).
"""

from __future__ import annotations

from collections.abc import Sequence

from gge.documents.caveats import describe
from gge.documents.compare import Drift, DriftExample, MatchedSpread
from gge.documents.results import (
    CompareDocument,
    CompareEntry,
    HeadlineDiff,
    MatchedBudget,
    PairStat,
    RunSummary,
    oracle_at,
)
from gge.report.gallery import cell_label
from gge.report.html_format import (
    _READY_SCRIPT,
    ORACLE_COLOUR,
    TOP1_COLOUR,
    _anchor,
    _ci,
    _count,
    _num,
    _one_answer,
    _page,
    _pct,
    _pvalue,
    _signed,
    _table,
    _title_of,
    esc,
)
from gge.report.numbers import COST_WORDS, cost_text, spread_text
from gge.report.svg import Series, forest_plot_svg, line_chart_svg


# -- compare page -----------------------------------------------------------------------------------
def px(value: float | None) -> str:
    """A distance in pixels: one decimal, two significant digits under 0.1, – for None.

    Example:
        >>> px(12.345), px(0.0123), px(0.0), px(None)
        ('12.3', '0.012', '0', '–')
    """
    if value is None:
        return "–"
    if value == 0:
        return "0"
    return f"{value:.1f}" if value >= 0.1 else f"{value:.2g}"


def _diff_cell(diff: float | None, ci: Sequence[float] | None) -> str:
    lo = _num(ci[0]) if ci is not None and len(ci) == 2 else None
    hi = _num(ci[1]) if ci is not None and len(ci) == 2 else None
    cls = "pos" if lo is not None and lo > 0 else "neg" if hi is not None and hi < 0 else ""
    attr = f' class="{cls}"' if cls else ""
    return f"<span{attr}>{_signed(diff)}</span>"


def _pair_row(name: str, s: PairStat) -> list[str]:
    return [
        esc(name),
        _pct(s["a"]),
        _pct(s["b"]),
        _diff_cell(s["diff"], s["ci"]),
        _ci(s["ci"]),
        _pvalue(s["mcnemar_p"]),
        _pct(s["mdd"]),
        _count(s["b_only"]),
        _count(s["a_only"]),
        _count(s["samples"]),
    ]


def _side(label: str, side: RunSummary) -> str:
    bits = [f"<b>{label}</b>: {esc(side['label'] or side['path'] or '–')}"]
    if side["path"]:
        bits.append(f"<code>{esc(side['path'])}</code>")
    bits += [
        f"selection {esc(side['selection'])}",
        f"k {esc(side['k'])}",
        f"protocol {esc(side['protocol'])}",
    ]
    return '<p class="protocol">' + " · ".join(bits) + "</p>"


def _ids(title: str, ids: Sequence[str]) -> str:
    lis = "".join(f"<li><code>{esc(i)}</code></li>" for i in ids)
    body = f'<ul class="ids">{lis}</ul>' if ids else '<p class="muted">none</p>'
    return f"<details><summary>{esc(title)} ({len(ids)})</summary>{body}</details>"


def _headline_row(name: str, h: HeadlineDiff) -> list[str]:
    return [
        esc(name),
        _pct(h["a"]),
        _pct(h["b"]),
        _diff_cell(h["diff"], h["ci"]),
        _ci(h["ci"]),
        *(["–"] * 5),
    ]


def _errors_line(b: CompareEntry) -> str:
    bits = [
        f"{label} A {_count(v['a'])} · B {_count(v['b'])}"
        for label, v in (("format errors", b["format_errors"]), ("image errors", b["image_errors"]))
    ]
    served = b.get("server_errors")
    if served is not None:
        bits.append(f"server errors A {_count(served['a'])} · B {_count(served['b'])} (misses)")
    absent = b.get("not_in_file")
    if absent is not None:
        bits.append(f"not in the predictions file A {_count(absent['a'])} · B {_count(absent['b'])} (misses)")
    return " · " + " · ".join(bits)


def _variant_label(b: CompareEntry) -> str:
    """`` · key: value ...`` of the runs' variant (and why the headline is not official), escaped."""
    words = describe(b.get("variant") or {}, b.get("caveat"))
    return f" · {esc(words)}" if words else ""


def _compare_bench(name: str, b: CompareEntry, k: int) -> str:
    one = _one_answer(k)
    micro = b["micro"]
    rule = esc(b["top1"]["rule"])
    rows = [_headline_row(f"official Top-1 ({rule})", b["top1"])]
    if not one:
        rows.append(_headline_row(f"official Oracle@{k} ({rule})", oracle_at(b, k)))
    rows.append(_pair_row("micro Top-1", micro["top1"]))
    if not one:
        rows.append(_pair_row(f"micro Oracle@{k}", oracle_at(micro, k)))
    header = ["", "A", "B", "B − A", "95% CI", "McNemar p", "MDD", "won (B only)", "lost (A only)", "n"]
    out = [
        f'<section class="bench" id="{_anchor(name)}"><h2>{esc(b["title"] or _title_of(name))} '
        f'<span class="muted">({esc(name)}{_variant_label(b)})</span></h2>'
        f'<p class="muted">{_count(b["samples"])} samples on '
        f"{_count(b['screenshots'])} screenshots{_errors_line(b)}</p>",
        _table(header, rows),
    ]
    for t in b["tables"]:
        cell_rows = []
        for c in t["cells"]:
            stats = [c["top1"]] + ([] if one else [oracle_at(c, k)])
            cell_rows.append(
                [
                    esc(cell_label(c)),
                    _count(c["samples"]),
                    *(
                        v
                        for s in stats
                        for v in (
                            _pct(s["a"]),
                            _pct(s["b"]),
                            _diff_cell(s["diff"], s["ci"]),
                            _ci(s["ci"]),
                            _pvalue(s["mcnemar_p"]),
                        )
                    ),
                ]
            )
        if cell_rows:
            head = ["cell", "n", "Top-1 A", "Top-1 B", "B − A", "95% CI", "p"]
            if not one:
                head += [f"Oracle@{k} A", f"Oracle@{k} B", "B − A", "95% CI", "p"]
            out.append(f"<h3>{esc(t['title'])}</h3>" + _table(head, cell_rows))
    if "budget" in b:
        out.append(_budget_html(b.get("budget")))
    out.append(_ids("won: B hits, A misses", b["won"]))
    out.append(_ids("lost: A hits, B misses", b["lost"]))
    out.append("</section>")
    return "".join(out)


def _spread_html(spread: MatchedSpread | None) -> str:
    """What the measured seconds say of the pairing: a warning where inside ("" for tokens)."""
    if spread is None:
        return ""
    cls = "warning" if spread["inside"] else "muted"
    return f'<p class="{cls}">{esc(spread_text(spread))}</p>'


def _budget_html(budget: MatchedBudget | None) -> str:
    """The comparison at matched budget: the matched pair, Δ with its interval, both curves as a chart."""
    title = "<h3>At matched budget (the runs differ in K, critic or refine stage)</h3>"
    if budget is None:
        return title + '<p class="muted">no comparison at matched budget: the notes above say why</p>'
    unit = budget["unit"]
    rows = []
    for label, side in (("A", budget["a"]), ("B", budget["b"])):
        rows.append(
            [
                label,
                esc(side["strategy"]),
                f"{_count(side['j'])} of {_count(side['k'])}",
                esc(side["method"]),
                esc(side["critic"] or "–"),
                esc(cost_text(side["tokens"], "tokens")),
                esc(cost_text(side["seconds"], "seconds")),
                esc(side["cost"]),
                _pct(side["top1"]),
            ]
        )
    head = ["", "strategy", "candidates", "j drawn as", "critic", "tokens", "seconds", "cost", "Top-1"]
    diff = (
        f"<p>B − A at matched budget: <b>{_diff_cell(budget['diff'], budget['ci'])}</b> points, "
        f"95% CI {_ci(budget['ci'])} over {_count(budget['samples'])} samples on "
        f"{_count(budget['screenshots'])} screenshots; costs per sample differ by "
        f"{100 * budget['relative_difference']:.0f}% ({esc(unit)})</p>"
        f"{_spread_html(budget.get('spread'))}"
        f'<p class="muted">{esc(budget["rule"])}; {esc(COST_WORDS)}; '
        "Top-1 is the micro mean of each sample's expected hit over the j-candidate subsets</p>"
    )
    series = []
    xs: list[float] = []
    for label, side, colour in (("A", budget["a"], TOP1_COLOUR), ("B", budget["b"], ORACLE_COLOUR)):
        costs = [(p["tokens"] if unit == "tokens" else p["seconds"], p["top1"]) for p in side["curve"]]
        points = [(float(c), top1) for c, top1 in costs if c is not None]
        xs += [x for x, _ in points]
        series.append(Series(f"{label}: {side['strategy']} (K={side['k']})", colour, points))
    chart = ""
    if xs:
        span = (max(xs) - min(xs)) or max(xs) or 1.0
        lo, hi = max(0.0, min(xs) - 0.05 * span), max(xs) + 0.05 * span
        digits = 3 if hi < 10 else 0
        ticks = [round(lo + (hi - lo) * t / 4, digits) for t in range(5)]
        chart = line_chart_svg(
            series,
            title=f"Top-1 against {unit} per sample",
            x_range=(lo, hi),
            x_ticks=ticks,
            x_label=f"{unit} per sample",
            y_label="Top-1 (%)",
            width=480,
        )
    return title + _table(head, rows) + diff + chart


def _point_html(p: Sequence[float] | None) -> str:
    return "no point" if p is None else f"({p[0]:.1f}, {p[1]:.1f})"


def _example_row(x: DriftExample) -> list[str]:
    way = "A hit, B miss" if x["flip"] == "a_hit_b_miss" else "A miss, B hit"
    return [
        f"<code>{esc(x['id'])}</code>",
        esc(way),
        f"<code>{esc(x['a_raw'])}</code>",
        esc(_point_html(x["a_point"])),
        f"<code>{esc(x['b_raw'])}</code>",
        esc(_point_html(x["b_point"])),
        esc(px(x["distance"])),
    ]


def _drift_html(compare: CompareDocument) -> str:
    """How the answers differ: the setups' statement, one row per benchmark, the first flips."""
    entries: list[tuple[str, Drift]] = [
        (e["title"] or _title_of(n), e["drift"]) for n, e in compare["benchmarks"].items() if "drift" in e
    ]
    if not entries:
        return ""
    setup = compare.get("setup")
    cls = "warning" if setup is not None and setup["relation"] == "engine" else "protocol"
    statement = f'<p class="{cls}">{esc(setup["statement"])}</p>' if setup is not None else ""
    rows = []
    for title, d in entries:
        dist = d["distance"]
        rows.append(
            [
                esc(title),
                _count(d["samples"]),
                _count(d["raw_differs"]),
                _count(d["candidates_differ"]),
                f"{_count(d['moved'])} of {_count(d['both_points'])}",
                *(esc(px(None if dist is None else dist[key])) for key in ("min", "median", "p90", "max")),
                f"{_count(d['a_only_point'])} / {_count(d['b_only_point'])}",
                f"{_count(d['top1_flips']['a_hit_b_miss'])} / {_count(d['top1_flips']['a_miss_b_hit'])}",
                f"{_count(d['first_flips']['a_hit_b_miss'])} / {_count(d['first_flips']['a_miss_b_hit'])}",
            ]
        )
    head = [
        "benchmark",
        "n",
        "raw differs",
        "candidates differ",
        "moved",
        "drift min (px)",
        "median",
        "p90",
        "max",
        "point A only / B only",
        "Top-1 flips A✓B✗ / A✗B✓",
        "first-candidate flips A✓B✗ / A✗B✓",
    ]
    words = (
        '<p class="muted">raw differs: the raw answers differ after stripping surrounding whitespace; '
        "candidates differ: the candidate lists differ (exactly); drift: the distance in original pixels "
        "between the runs' first candidates where both are points (moved: &gt; 0; p90: linear "
        "percentile); point A only / B only: one run's first candidate is a point, the other's is none; "
        "flips: a hit in one run, a miss in the other</p>"
    )
    examples = []
    for title, d in entries:
        if d["examples"]:
            ex_head = ["sample", "flip", "A raw", "A point", "B raw", "B point", "apart (px)"]
            examples.append(
                f"<details><summary>{esc(title)}: the first {len(d['examples'])} Top-1 flips</summary>"
                + _table(ex_head, [_example_row(x) for x in d["examples"]])
                + "</details>"
            )
    return (
        '<section id="drift"><h2>Answers that differ</h2>'
        + statement
        + _table(head, rows)
        + words
        + "".join(examples)
        + "</section>"
    )


def _mean_label(compare: CompareDocument) -> str:
    """``mean of 8 headlines (1 not official)``: the headlines the mean is over (a caveat: not official)."""
    heads = [e for e in compare["benchmarks"].values() if e["top1"]["diff"] is not None]
    unofficial = sum(bool(e.get("caveat")) for e in heads)
    n = compare["mean"]["benchmarks"]
    label = f"mean of {n} headline" + ("" if n == 1 else "s")
    return label + (f" ({unofficial} not official)" if unofficial else "")


def render_compare_html(compare: CompareDocument) -> str:
    """The page of ``gge compare A B``: paired differences with intervals, per benchmark and cell.

    Args:
        compare: A compare.json document (:class:`~gge.documents.results.CompareDocument`).

    Returns:
        The HTML page: both runs, a forest plot of the Top-1 and Oracle@K differences with their 95%
        intervals, then per benchmark a table (the official headline differences, then the micro
        PairStats: A, B, B − A, CI, McNemar p, MDD, won/lost counts), the same per official table
        cell, the format and image error counts of A and B, and the won and lost ids (collapsible).
        Where the runs differ in K, critic or refine stage, each benchmark also shows the comparison
        at matched budget (the matched points, B − A with its interval, both budget curves as a chart
        of Top-1 against cost per sample). A section says what differs in the runs' setups (only the
        engine, where that is so) and how their answers differ per benchmark (compare.json
        ``drift``: raw texts, candidates, the first points' distance in original pixels, flips each
        way, the first flips' raw answers). With a common K of 1 the page is Top-1 only.

    Example:
        >>> pair = {"a": 50.0, "b": 60.0, "diff": 10.0, "ci": [2.0, 18.0], "mcnemar_p": 0.01,
        ...         "mdd": 7.5, "b_only": 12, "a_only": 2, "samples": 100, "screenshots": 40}
        >>> head = {"rule": "micro", "a": 50.0, "b": 60.0, "diff": 10.0, "ci": [2.0, 18.0]}
        >>> side = {"path": "runs/a", "label": "A", "selection": "critic", "k": 1, "protocol": "p"}
        >>> bench = {"title": "X", "samples": 100, "screenshots": 40, "cluster": "screenshot",
        ...          "top1": head, "official": head, "micro": {"top1": pair},
        ...          "format_errors": {"a": 0, "b": 0}, "image_errors": {"a": 0, "b": 0},
        ...          "tables": [], "won": [], "lost": []}
        >>> doc = {"schema_version": 1, "a": side, "b": side, "k": 1,
        ...        "bootstrap": {"resamples": 50, "seed": 0, "cluster": "screenshot", "level": 0.95},
        ...        "benchmarks": {"x": bench}, "mean": {"benchmarks": 1, "a": 50.0, "b": 60.0, "diff": 10.0},
        ...        "warnings": [], "notes": []}
        >>> '<span class="pos">+10.0</span>' in render_compare_html(doc)
        True
    """
    k = compare["k"]
    benchmarks = compare["benchmarks"]
    a, b = compare["a"], compare["b"]
    title = f"gge compare — {a['label'] or 'A'} vs {b['label'] or 'B'}"
    forest_rows: list[tuple[str, str, float | None, Sequence[float] | None]] = []
    for name, bench in benchmarks.items():
        heads = [("Top-1", TOP1_COLOUR, bench["top1"])]
        if not _one_answer(k):
            heads.append(("Oracle", ORACLE_COLOUR, oracle_at(bench, k)))
        for what, colour, s in heads:
            forest_rows.append((f"{name} {what}", colour, _num(s["diff"]), s["ci"]))
    boot = compare["bootstrap"]
    boot_line = (
        f'<p class="muted">95% intervals: paired bootstrap, {_count(boot["resamples"])} resamples '
        f"clustered by {esc(boot['cluster'])}, seed {_count(boot['seed'])}; McNemar exact p; "
        "MDD: minimum detectable difference (alpha 0.05, power 0.8); – where a group spans fewer than 5 "
        "screenshots.</p>"
    )
    mean = compare["mean"]
    mean_html = _table(
        ["", "A", "B", "B − A"],
        [[esc(_mean_label(compare)), _pct(mean["a"]), _pct(mean["b"]), _signed(mean["diff"])]],
    )
    forest = (
        "<h2>Differences (B − A) with 95% intervals</h2>"
        + forest_plot_svg(forest_rows, title="differences B − A with 95% intervals")
        if forest_rows
        else ""
    )
    nav = "<nav>" + "".join(f'<a href="#{_anchor(n)}">{esc(n)}</a>' for n in benchmarks) + "</nav>"
    sections = "".join(_compare_bench(name, bench, k) for name, bench in benchmarks.items())
    remarks = "".join(
        f'<p class="{cls}">{what}: {esc(text)}</p>'
        for texts, cls, what in (
            (compare["warnings"], "warning", "warning"),
            (compare["notes"], "muted", "note"),
        )
        for text in texts
    )
    body = (
        f"<header><h1>{esc(title)}</h1>{_side('A', a)}{_side('B', b)}"
        f'<p class="protocol">common K = {esc(k)}</p>{boot_line}{remarks}{nav}</header>'
        f'<section id="summary">{mean_html}{forest}</section>{_drift_html(compare)}{sections}'
    )
    return _page(title, body, _READY_SCRIPT)


__all__ = [
    "px",
    "render_compare_html",
]
