"""The page of ``gge compare A B``: paired differences of two runs, with intervals, as HTML.

:func:`render_compare_html` turns a compare.json document into one self-contained page (both runs, a
forest plot of the differences, per benchmark and per official table cell the paired statistics,
the won and lost ids), built from the same pieces as the results page (:mod:`gge.report.html_format`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gge.report.gallery import cell_label
from gge.report.html_format import (
    _READY_SCRIPT,
    ORACLE_COLOUR,
    TOP1_COLOUR,
    _anchor,
    _ci,
    _count,
    _mapping,
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
from gge.report.svg import forest_plot_svg


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


__all__ = [
    "render_compare_html",
]
