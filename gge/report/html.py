"""A self-contained ``report.html``: tables, charts and a gallery of misses in one offline file.

The page is written beside ``results.json`` (and by ``gge compare`` beside ``compare.json``). It
holds everything it shows: the charts are inline SVG drawn here, the screenshots are JPEG ``data:``
URIs, the styles and the small scripts (files in ``gge/report/assets/``) are inlined. Nothing is
fetched: no CDN, no web font, no image by URL, so the file can be mailed, archived or opened on a
machine without network.

What a results page shows (of a :class:`~gge.documents.results.ResultsDocument`; a section that is None is
skipped):

* the protocol line and a summary table, one row per benchmark (official rule, Top-1, Oracle@K, the
  gap between them, format errors) and the mean;
* per benchmark: the headline numbers, the official tables ("Top-1 / Oracle@K" grid cells or a
  1-D list), Top-1 by selection strategy, the Oracle@k curve (with pass@k when sampled), the outcome
  decomposition as stacked bars (overall and per table cell), Top-1 and Oracle@K by target size,
  miss distance quartiles and the critic's calibration (reliability diagram, risk-coverage curve);
* per benchmark, where its entry has them: the cost table (per stage: calls, tokens and seconds per
  sample, share of the cost), the refine table (Top-1 before and after, fixed, broken, trigger rate)
  and the budget table with the budget plot (Top-1 against tokens and seconds per sample, the
  critic's curve beside the vote's: :mod:`gge.report.cost_html`), and under the protocol line what
  the costs were measured on (``document["cost"]``);
* a gallery of misses: the screenshot with the target, the candidates and the pick drawn
  (:func:`gge.drawing.draw_overlay`), the instruction and the raw answer, filterable by
  benchmark, table cell and kind of miss.

Percentages are printed with one decimal and "–" for none; AUROC, ECE and Brier (fractions) with
three. Every string from the data (ids, instructions, raw answers, labels) is HTML-escaped.

The inlined scripts record uncaught errors in ``document.body.dataset.jsErrors`` and set
``document.body.dataset.ready = "1"`` once initialised (the browser test reads both).

This module draws the results page's sections; the charts are :mod:`gge.report.svg`, the gallery
:mod:`gge.report.gallery`, the compare page :mod:`gge.report.compare_page`, and the colours,
formatters and page skeleton they share :mod:`gge.report.html_format`.

Example:
    >>> doc = {"schema_version": 1, "gge_version": "0.1.0", "protocol": "demo", "benchmarks": {},
    ...        "mean": {"benchmarks": [], "top1": None, "oracle@5": None}, "k": 5, "selection": "critic",
    ...        "model": {}, "config": {}}
    >>> page = render_report_html(doc, [])
    >>> page.startswith("<!DOCTYPE html>"), "showing 0 of 0" in page
    (True, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.documents.caveats import copy_warning, data_notes, headline_caveat, variant_text
from gge.documents.files import atomic_write
from gge.documents.results import (
    BenchmarkEntry,
    GroupStats,
    OfficialTable,
    Quartiles,
    ResultsDocument,
    oracle_at,
    pass_at,
)
from gge.report.cost_html import cost_blocks, section_html, setup_html
from gge.report.cost_tables import window_text
from gge.report.critic_tables import critic_sections
from gge.report.gallery import _gallery, cell_label
from gge.report.html_format import (
    _GALLERY_SCRIPT,
    ORACLE_COLOUR,
    PASS_COLOUR,
    TOP1_COLOUR,
    _anchor,
    _ci,
    _count,
    _frac,
    _num,
    _one_answer,
    _page,
    _pct,
    _signed,
    _table,
    _title_of,
    esc,
)
from gge.report.markdown import (
    answered_line,
    bootstrap_label,
    image_tokens_text,
    invocation_lines,
    subset_text,
    usage_text,
)
from gge.report.numbers import fmt_headline
from gge.report.svg import Series, grouped_bars_svg, line_chart_svg, stacked_bars_svg


# -- results page -----------------------------------------------------------------------------------
def _protocol_line(document: ResultsDocument) -> str:
    bits = []
    if document["protocol"]:
        bits.append(f"<b>protocol</b>: {esc(document['protocol'])}")
    model = document["model"]  # each kind of model records itself under its own names
    name = model.get("name") or model.get("model") or model.get("preset") or model.get("path")
    if name:
        bits.append(f"<b>model</b>: {esc(name)}")
    if _one_answer(document["k"]):
        bits.append("<b>one answer per sample</b> (Top-1 only)")
    else:
        if document["selection"]:
            bits.append(f"<b>selection</b>: {esc(document['selection'])}")
        bits.append(f"<b>K</b> = {esc(document['k'])}")
    if document["gge_version"]:
        bits.append(f"gge {esc(document['gge_version'])}")
    line = '<p class="protocol">' + " · ".join(bits) + "</p>" if bits else ""
    who = answered_line(document["model"])  # who answered: engine, endpoint, served model
    line += f'<p class="protocol answered">{esc(who)}</p>' if who else ""
    return line + setup_html(document) + invocations_html(document)


def invocations_html(document: ResultsDocument) -> str:
    """The run's invocations and its endpoint usage, as report.md says them, or "" without ``invocations``.

    report.md's lines (:func:`gge.report.markdown.invocation_lines`: ``resumed: N invocations (...)``
    past one invocation, then the usage summed over them); a resumed run adds a table of its
    invocations: when each started and ended, how it ended, the samples it finished, its own requests
    (:func:`gge.report.markdown.usage_text` of its counters) and its request window
    (:func:`gge.report.cost_tables.window_text`).

    Example:
        >>> doc = {"model": {"backend": {"usage": {"requests": 9}}}, "invocations": [
        ...     {"started": "t0", "ended": "t1", "end": "interrupted", "restored": 0, "samples": 5,
        ...      "counters": {"backend.usage": {"requests": 6}}},
        ...     {"started": "t2", "ended": "t3", "end": "finished", "restored": 5, "samples": 3,
        ...      "counters": {"backend.usage": {"requests": 3}}}]}
        >>> html = invocations_html(doc)
        >>> "resumed: 2 invocations (#1 interrupted, 5 samples; #2 finished, 3 samples)" in html
        True
        >>> "<td>#2</td><td>t2</td><td>t3</td><td>finished</td><td>3</td><td>3 requests answered</td>" in html
        True
    """
    invocations = document.get("invocations")
    if not invocations:
        return ""
    lines = invocation_lines(invocations, document["model"])
    out = "".join(f'<p class="protocol invocations">{esc(text)}</p>' for text in lines)
    if len(invocations) < 2:
        return out
    rows = []
    for i, inv in enumerate(invocations, 1):
        usage = inv.get("counters", {}).get("backend.usage")
        window = inv.get("window")
        why = inv.get("why")
        rows.append(
            [
                f"#{i}",
                esc(inv.get("started")),
                esc(inv.get("ended") or "–"),
                esc(inv["end"]) + (f": {esc(why)}" if why else ""),
                _count(inv["samples"]),
                esc(usage_text(usage)) if usage else "–",
                esc(window_text(window)) if window else "–",
            ]
        )
    header = ["invocation", "started", "ended", "how it ended", "samples", "requests", "request window"]
    return out + _table(header, rows, cls="invocations")


def image_tokens_banner(document: ResultsDocument) -> str:
    """A warning per benchmark whose image-token check found answers off the expectation, or "".

    The words are report.md's (:func:`gge.report.markdown.image_tokens_text`), after the benchmark's
    title, linked to its section.

    Example:
        >>> check = {"source": "prompt", "requests": 8, "differ": 8, "ratio": 0.25, "example": None}
        >>> html = image_tokens_banner({"benchmarks": {"b": {"image_tokens": check}}})
        >>> "the model saw fewer image tokens than the preset expects in 8 of 8 proposer answers" in html
        True
        >>> image_tokens_banner({"benchmarks": {"b": {}}})
        ''
    """
    out = []
    for name, entry in document["benchmarks"].items():
        check = entry.get("image_tokens")
        text = None if check is None else image_tokens_text(check)
        if text is not None:
            out.append(
                f'<p class="warning banner image-tokens"><b><a href="#{_anchor(name)}">'
                f"{esc(_title_of(name))}</a>: {esc(text)}</b></p>"
            )
    return "".join(out)


def subset_banner(document: ResultsDocument) -> str:
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
    names = subset["benchmarks"] if subset is not None else {}
    text = subset_text(subset, {str(n): _title_of(str(n)) for n in names})
    return f'<p class="warning banner" id="subset"><b>{esc(text)}</b></p>' if text else ""


def _official(entry: BenchmarkEntry, k: int) -> tuple[str, float | None, float | None]:
    off = entry["official"]
    return off["rule"], off["top1"], oracle_at(off, k)


def _gap(top1: Any, oracle: Any) -> Any:
    t, o = _num(top1), _num(oracle)
    return None if t is None or o is None else o - t


def _summary(document: ResultsDocument) -> str:
    k = document["k"]
    one = _one_answer(k)
    rows = []
    absent = any("not_in_file" in e for e in document["benchmarks"].values())
    served = any(e.get("server_errors") for e in document["benchmarks"].values())
    for name, entry in document["benchmarks"].items():
        rule, top1, oracle = _official(entry, k)
        caveat = headline_caveat(entry)
        row = [
            f'<a href="#{_anchor(name)}">{esc(_title_of(name))}</a>',
            _count(entry["samples"]),
            esc(rule)
            if not caveat
            else f'{esc(rule)} <span class="warning" title="{esc(caveat)}">(not official)</span>',
            _headline(top1),
        ]
        if not one:
            row += [_headline(oracle), _pct(_gap(top1, oracle))]
        rows.append([*row, _count(entry["format_errors"]), _count(entry["image_errors"])])
        if served:
            rows[-1].append(_count(entry.get("server_errors") or []))
        if absent:
            rows[-1].append(_count(entry["not_in_file"]["samples"] if "not_in_file" in entry else 0))
    mean = document["mean"]
    header = ["benchmark", "samples", "official rule", "Top-1"]
    header += [] if one else [f"Oracle@{k}", "gap"]
    header += ["format errors", "image errors"] + (["server errors"] if served else [])
    header += ["not in the file"] if absent else []
    table = _table(header, rows, cls="summary")
    m_top1 = mean["top1"]
    n = len(mean["benchmarks"])
    entries = document["benchmarks"]
    unofficial = sum(1 for name in mean["benchmarks"] if name in entries and headline_caveat(entries[name]))
    label = (
        f"mean of {n} official headlines"
        if not unofficial
        else f"mean of {n} headlines ({unofficial} not official)"
    )
    oracle_cells = (
        ""
        if one
        else f"<td>{_headline(oracle_at(mean, k))}</td><td>{_pct(_gap(m_top1, oracle_at(mean, k)))}</td>"
    )
    mean_row = (
        f'<tr class="mean"><td>{esc(label)}</td><td></td><td></td>'
        f"<td>{_headline(m_top1)}</td>{oracle_cells}<td></td><td></td>{'<td></td>' * (served + absent)}</tr>"
    )
    table = table.replace("</tbody>", mean_row + "</tbody>")
    return f'<section id="summary"><h2>Summary</h2>{table}</section>'


def _pair(stats: GroupStats, k: int) -> str:
    if not stats["samples"]:
        return '<span class="muted">–</span>'
    if _one_answer(k):
        return f'<span title="n={_count(stats["samples"])}">{_pct(stats["top1"])}</span>'
    return (
        f'<span title="n={_count(stats["samples"])}">{_pct(stats["top1"])} / '
        f"{_pct(oracle_at(stats, k))}</span>"
    )


def official_table_html(t: OfficialTable, k: int) -> str:
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
    row_avg = t["row_avg"]
    row_values = t["row_values"]
    all_ = t["all"]
    one = _one_answer(k)
    if t["cols"] is None:

        def line(stats: GroupStats) -> list[str]:
            out = [_count(stats["samples"]), _pct(stats["top1"])]
            return out if one else [*out, _pct(oracle_at(stats, k))]

        rows = [[esc(v), *line(row_avg[v])] for v in row_values]
        table = _table([esc(t["rows"]), "n", "Top-1", *([] if one else [f"Oracle@{k}"])], rows)
        total = '<tr class="all"><td>all</td>' + "".join(f"<td>{c}</td>" for c in line(all_)) + "</tr>"
        heading = f"<h3>{esc(t['title'])}</h3>"
    else:
        cols = t["col_values"]
        cells = t["cells"]
        col_avg = t["col_avg"]
        rows = [
            [esc(rv), *(_pair(cells[rv][cv], k) for cv in cols), _pair(row_avg[rv], k)] for rv in row_values
        ]
        table = _table([f"{esc(t['rows'])} \\ {esc(t['cols'])}", *map(esc, cols), "avg"], rows)
        total = (
            '<tr class="all"><td>avg</td>'
            + "".join(f"<td>{_pair(col_avg[cv], k)}</td>" for cv in cols)
            + f"<td>{_pair(all_, k)}</td></tr>"
        )
        what = "Top-1" if one else f"Top-1 / Oracle@{k}"
        heading = f'<h3>{esc(t["title"])} <span class="muted">({what}, %)</span></h3>'
    return heading + table.replace("</tbody>", total + "</tbody>")


def _headline(value: Any) -> str:
    """A headline figure as report.md prints it (two decimals)."""
    return fmt_headline(_num(value))


def _headline_line(entry: BenchmarkEntry, k: int) -> str:
    rule, top1, oracle = _official(entry, k)
    one = _one_answer(k)
    intervals = entry["intervals"]
    micro = entry["micro"]
    caveat = headline_caveat(entry)
    named = (
        f"official ({esc(rule)})"
        if not caveat
        else f'headline ({esc(rule)}; <span class="warning">not official: {esc(caveat)}</span>)'
    )
    bits = [f"{named}: Top-1 <b>{_headline(top1)}</b>"]
    boot = entry.get("headline_interval")
    if boot is not None and boot["top1"] is not None:
        of = "" if rule == "micro" else "micro Top-1 "
        bits[0] += (
            f' <span class="ci">({of}{_ci(boot["top1"], signed=False)} {esc(bootstrap_label(boot))})</span>'
        )
    if not one:
        bits += [f"Oracle@{k} <b>{_headline(oracle)}</b>", f"gap {_pct(_gap(top1, oracle))}"]
    line2 = [f"n = {_count(entry['samples'])}"]
    figures = [("Top-1", micro["top1"], intervals["top1"])]
    if not one:
        figures.append((f"Oracle@{k}", oracle_at(micro, k), oracle_at(intervals, k)))
    for label, value, ci in figures:
        line2.append(f"micro {label} {_pct(value)} (95% CI {_ci(ci, signed=False)})")
    if not one and entry["top1_given_oracle"] is not None:
        line2.append(f"micro Top-1 given Oracle {_pct(entry['top1_given_oracle'])}")
    decoys = entry.get("decoy_clicks")
    if decoys is not None:
        by = ", ".join(f"{esc(k)} {_pct(v['over_decoy_samples'])}%" for k, v in decoys["by_strategy"].items())
        bits.append(
            f"deceptive clicks of the {_count(decoys['decoy_samples'])} samples with a decoy: {by} "
            f'<span class="muted">({esc(decoys["rule"])})</span>'
        )
    absent = entry.get("not_in_file")
    if absent is not None:
        bits[0] += (
            f" over all {_count(entry['samples'])} samples, {_count(absent['samples'])} not in the "
            f"predictions file (misses; over the {_count(absent['lines'])} with a line: "
            f"{_headline(absent['top1'])})"
        )
    line2 += [
        f"format errors {_count(entry['format_errors'])}",
        f"image errors {_count(entry['image_errors'])}",
        *([f"server errors {_count(entry['server_errors'])}"] if entry.get("server_errors") else []),
        f"truncated {_count(entry['truncated'])}",
        f"abstentions {_count(entry['abstentions'])}",
        f"critic format errors {_count(entry['critic_format_errors'])}",
    ]
    gain = entry["critic_gain"]
    if gain is not None and not one:
        line2.append(
            f"critic gain: {_signed(gain['over_first'])} over first, "
            f"{_signed(gain['over_best_spatial'])} over best spatial "
            f"({esc(gain['best_spatial'] or '–')})"
        )
    return f'<p class="headline">{" · ".join(bits)}</p><p class="muted">{" · ".join(line2)}</p>'


def _selection_table(entry: BenchmarkEntry, strategy: str) -> str:
    sel = entry["selection"]
    if not sel:
        return ""
    rows = [[f"<b>{esc(s)}</b>" if s == strategy else esc(s), _pct(v)] for s, v in sel.items()]
    return "<h3>Top-1 by selection strategy</h3>" + _table(["strategy", "Top-1"], rows)


def _curve(entry: BenchmarkEntry, k: int) -> str:
    if _one_answer(k):
        return ""  # one answer per sample: no curve to draw
    oracle = [(float(j), _num(oracle_at(entry, j))) for j in range(1, k + 1)]
    series = [Series("Oracle@k", ORACLE_COLOUR, oracle)]
    top1 = _num(entry["top1"])  # the same average as the Oracle@k points: the headline
    if top1 is not None:
        series.append(Series("Top-1", TOP1_COLOUR, [(1.0, top1), (float(max(k, 2)), top1)], dashed=True))
    n = k
    pak = entry["pass_at_k"]
    if pak is not None and pak["n"] >= 1:
        n = max(n, pak["n"])
        series.append(
            Series(
                "pass@k",
                PASS_COLOUR,
                [(float(j), _num(pass_at(pak, j))) for j in range(1, pak["n"] + 1)],
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


def _decomposition(entry: BenchmarkEntry) -> str:
    dec = entry["decomposition"]
    out = [f'<h3>Outcomes <span class="muted">(Top-1 by {esc(dec["strategy"])})</span></h3>']
    out.append(stacked_bars_svg([("overall", dec["overall"])], title="outcome decomposition, overall"))
    for t in dec["tables"]:
        rows = [(cell_label(c), c) for c in t["cells"]]
        if rows:
            out.append(f"<h3>Outcomes: {esc(t['title'])}</h3>")
            out.append(stacked_bars_svg(rows, title=f"outcome decomposition, {t['title']}"))
    return "".join(out)


def _size_buckets(entry: BenchmarkEntry, k: int) -> str:
    sb = entry["size_buckets"]
    if not sb["buckets"]:
        return ""
    one = _one_answer(k)
    groups = [
        (b["label"], b["samples"], [_num(b["top1"])] + ([] if one else [_num(oracle_at(b, k))]))
        for b in sb["buckets"]
    ]
    svg = grouped_bars_svg(
        groups,
        series=[("Top-1", TOP1_COLOUR)] + ([] if one else [(f"Oracle@{k}", ORACLE_COLOUR)]),
        title="Top-1 by target size" if one else "Top-1 and Oracle@K by target size",
        x_label="target area / screenshot area",
    )
    no_area = "no target area (absent targets, or a screenshot of unknown size)"
    note = f'<p class="muted">{no_area}: {_count(sb["no_area"])}'
    if sb["unreadable"]:
        note += f" · unreadable screenshots: {_count(sb['unreadable'])}"
    note += "</p>"
    return f"<h3>By target size</h3>{svg}{note}"


def _quartiles(q: Quartiles) -> tuple[float, float, float]:
    return q["q1"], q["median"], q["q3"]


def _miss_distance(entry: BenchmarkEntry) -> str:
    md = entry["miss_distance"]
    rows = []
    ts = md["target_sizes"]
    if ts is not None:
        rows.append(["target sizes (×)", *(_frac(v, 1) for v in _quartiles(ts))])
    sc = md["screen"]
    if sc is not None:
        rows.append(
            ["screen diagonal (%)", *(_pct(None if _num(v) is None else 100 * v) for v in _quartiles(sc))]
        )
    table = _table(["distance in", "q1", "median", "q3"], rows) if rows else ""
    return (
        f'<h3>Miss distance</h3><p class="muted">{_count(md["misses"])} misses with a point pick, '
        f"distance to the target's box</p>{table}"
    )


def _calibration(entry: BenchmarkEntry) -> str:
    cal = entry["calibration"]
    if cal is None:
        return ""
    rows = [
        ["score kind", esc(cal["score_kind"])],
        ["candidates (hits)", f"{_count(cal['candidates'])} ({_count(cal['positives'])})"],
        ["AUROC", _frac(cal["auroc"])],
        ["ECE", _frac(cal["ece"])],
        ["Brier", _frac(cal["brier"])],
        ["AURC (%)", _pct(cal["aurc"])],
        ["unscored samples", _count(cal["unscored_samples"])],
    ]
    charts = [_table(["", "value"], rows)]
    rel = cal["reliability"]
    if rel:
        pts = [
            (float(_num(b["confidence"]) or 0.0), _num(b["accuracy"]))
            for b in rel
            if b["count"] and _num(b["confidence"]) is not None
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
    rc = cal["risk_coverage"]
    if rc:
        pts = [
            (float(_num(p["coverage"]) or 0.0), _num(p["top1"]))
            for p in rc
            if _num(p["coverage"]) is not None
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


def _benchmark_section(name: str, entry: BenchmarkEntry, document: ResultsDocument) -> str:
    k = document["k"]
    tables = "".join(official_table_html(t, k) for t in entry["tables"])
    blocks = [
        tables + ("" if _one_answer(k) else _selection_table(entry, document["selection"])),
        _curve(entry, k) + _miss_distance(entry),
        _decomposition(entry),
        _size_buckets(entry, k),
        _calibration(entry),
        *(section_html(s) for s in critic_sections(entry)),
        *cost_blocks(entry, _title_of(name)),
    ]
    grid = "".join(f"<div>{b}</div>" for b in blocks if b)
    seen = entry.get("image_tokens")  # what the model saw: report.md's warning, in the section too
    seen_text = None if seen is None else image_tokens_text(seen)
    notes = "".join(f"<li>{esc(note)}</li>" for note in data_notes(entry))
    notes += f'<li class="warning image-tokens">{esc(seen_text)}</li>' if seen_text else ""
    notes = f'<ul class="muted data-notes">{notes}</ul>' if notes else ""
    variant = variant_text(entry)
    label = f"{esc(name)} · {esc(variant)}" if variant else esc(name)
    copy = copy_warning(entry)
    warning = f' <span class="warning copy-differs">{esc(copy)}</span>' if copy else ""
    return (
        f'<section class="bench" id="{_anchor(name)}"><h2>{esc(_title_of(name))} '
        f'<span class="muted">({label})</span>{warning}</h2>{_headline_line(entry, k)}{notes}'
        f'<div class="grid">{grid}</div></section>'
    )


def render_report_html(
    document: ResultsDocument, gallery: Sequence[Mapping[str, Any]], *, title: str | None = None
) -> str:
    """The whole results page, as one self-contained HTML string.

    Args:
        document: A results.json document (:class:`~gge.documents.results.ResultsDocument`). A benchmark's
            headline is its ``official`` figure, the micro means come from ``micro``; the sections
            that can be None (``critic_gain``, ``pass_at_k``, ``calibration``: no critic choice, no
            sampled answers, no critic scores) are skipped when None. With ``k == 1`` (a one-answer
            run) the page is Top-1 only: no Oracle@k column or curve, no strategies table, no critic
            gain. A non-null ``subset`` gives a banner ("subset: first N of M samples").
        gallery: Entries from :func:`gallery_entries` (may be empty).
        title: The page title (default: "gge report" and the model's protocol).

    Returns:
        The HTML page.

    Example:
        >>> from gge.benchmarks import get_benchmark
        >>> from gge.run.assemble import build_document
        >>> from gge.types import SampleResult
        >>> from gge.types import Candidate
        >>> two = (Candidate((1.0, 1.0), 0.9), Candidate((2.0, 2.0), 0.1))
        >>> results = [SampleResult("screenspot_pro", str(i), {}, 2, two, hits, top1={"critic": hits[0]})
        ...            for i, hits in enumerate([(True, False), (False, True), (False, False), (True, True)])]
        >>> doc, _ = build_document({"screenspot_pro": get_benchmark("screenspot_pro")},
        ...                         {"screenspot_pro": results}, k=2, strategy="critic", protocol="p",
        ...                         model={}, config={})
        >>> page = render_report_html(doc, [])
        >>> "<td>50.00</td><td>75.00</td><td>25.0</td>" in page, "<polyline" in page
        (True, True)
    """
    benchmarks = document["benchmarks"]
    page_title = title or "gge report"
    nav = (
        '<nav><a href="#summary">summary</a>'
        + "".join(f'<a href="#{_anchor(n)}">{esc(n)}</a>' for n in benchmarks)
        + '<a href="#gallery">gallery of misses</a></nav>'
    )
    sections = "".join(_benchmark_section(name, entry, document) for name, entry in benchmarks.items())
    body = (
        f"<header><h1>{esc(page_title)}</h1>{_protocol_line(document)}{nav}</header>"
        f"{subset_banner(document)}{image_tokens_banner(document)}{_summary(document)}{sections}"
        f"{_gallery(gallery)}"
    )
    return _page(page_title, body, _GALLERY_SCRIPT)


def write_report_html(path: Path, html: str) -> Path:
    """Write the page atomically (:func:`gge.documents.files.atomic_write`).

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
    "official_table_html",
    "render_report_html",
    "write_report_html",
]
