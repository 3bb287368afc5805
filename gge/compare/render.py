"""Laying a compare.json document out and writing the files of ``gge compare``.

:func:`render_markdown` gives the printed table (compare.md); :func:`write_compare` writes compare.json,
compare.md and compare.html into the folder :func:`default_out_dir` names by default.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path

from gge.compare.matched import RULE, SPREAD_MEASURE
from gge.compare.pairing import MIN_CLUSTERS
from gge.compare.runs import Run
from gge.documents.caveats import describe
from gge.documents.compare import Drift, DriftExample, MatchedSpread
from gge.documents.results import (
    CompareDocument,
    CompareEntry,
    ErrorCounts,
    HeadlineDiff,
    MatchedBudget,
    MatchedSide,
    PairedCell,
    PairedFigures,
    PairStat,
    oracle_at,
)
from gge.errors import GgeError
from gge.report.compare_page import px
from gge.report.markdown import fmt, fmt_signed, markdown_table
from gge.report.numbers import COST_WORDS, cost_text, fmt_share, spread_text
from gge.run.runstate import check_output_dir
from gge.scoring.selection import REFINED

__all__ = ["default_out_dir", "drift_section", "render_markdown", "side_text", "write_compare"]


def _ci(ci: Sequence[float] | None) -> str:
    if ci is None or any(math.isnan(v) for v in ci):
        return "–"
    return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def _p(p: float) -> str:
    return "1" if p >= 1.0 else f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _stat_cells(s: PairStat, *, won_lost: bool) -> list[str]:
    cells = [fmt(s["a"]), fmt(s["b"]), f"{fmt_signed(s['diff'])} {_ci(s['ci'])}", _p(s["mcnemar_p"])]
    if won_lost:
        cells += [fmt(s["mdd"]), f"{s['b_only']}/{s['a_only']}"]
    return cells


def _ids(ids: Sequence[str], limit: int = 20) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:limit])
    return f"{shown}, … (+{len(ids) - limit} more in compare.json)" if len(ids) > limit else shown


def _errors(counts: ErrorCounts) -> str:
    return f"{counts['a']}/{counts['b']}"


def render_markdown(doc: CompareDocument) -> str:
    """The printed paired table (compare.md) of a compare.json document.

    First the headlines: per benchmark its official rule, Top-1 (and Oracle@K) of A and B with the
    difference and its interval, the format and image errors of each run, and the mean of the
    headlines. Then the micro paired results (every sample counts once: micro Top-1 of A and B, Δ
    with its interval, McNemar p, MDD, won/lost, then micro Oracle@K), then every benchmark's table
    cells and its won and lost samples. With a common K of 1 the tables are Top-1 only.

    Args:
        doc: A :func:`gge.compare.pairing.compare_runs` document.

    Returns:
        Markdown text.
    """
    k = doc["k"]
    one = k == 1
    a, b, boot = doc["a"], doc["b"], doc["bootstrap"]
    level = round(100 * boot["level"])
    out = [
        f"# gge compare: {a['label']} (A) vs {b['label']} (B)",
        "",
        f"- A: {a['path']} (selection {a['selection']}, K={a['k']})",
        f"- B: {b['path']} (selection {b['selection']}, K={b['k']})",
        f"- Δ = B − A in points; [{level}% paired bootstrap interval, {boot['resamples']} resamples of "
        f"{'screenshots' if boot['cluster'] == 'screenshot' else boot['cluster'] + ' clusters'}, "
        f"seed {boot['seed']}]; p: exact McNemar; MDD: minimum detectable difference (alpha 0.05, "
        f"power 0.8); won/lost: samples only B / only A gets right; – for the interval and MDD: "
        f"fewer than {MIN_CLUSTERS} screenshots (in a group, for a macro headline)",
    ]
    if one:
        out.append("- K = 1 (one answer per sample): Top-1 only")
    out += [f"- warning: {w}" for w in doc["warnings"]]
    out += [f"- note: {n}" for n in doc["notes"]]

    def diff(s: HeadlineDiff) -> str:
        return f"{fmt_signed(s['diff'])} {_ci(s['ci'])}"

    def headlines(e: CompareEntry) -> list[HeadlineDiff]:
        return [e["top1"]] if one else [e["top1"], oracle_at(e, k)]

    head = ["benchmark", "rule", "n", "Top-1 A", "Top-1 B", "Δ Top-1"]
    head += [] if one else [f"Oracle@{k} A", f"Oracle@{k} B", f"Δ Oracle@{k}"]
    head += ["format errors A/B", "image errors A/B"]
    hrows = []
    for e in doc["benchmarks"].values():
        row = [e["title"], e["top1"]["rule"], str(e["samples"])]
        for h in headlines(e):
            row += [fmt(h["a"]), fmt(h["b"]), diff(h)]
        hrows.append([*row, _errors(e["format_errors"]), _errors(e["image_errors"])])
    m = doc["mean"]
    mean_row = [
        f"mean of {m['benchmarks']}",
        "unweighted",
        "",
        fmt(m["a"]),
        fmt(m["b"]),
        fmt_signed(m["diff"]),
    ]
    hrows.append(mean_row + ([] if one else ["", "", ""]) + ["", ""])
    out += ["", "## Headlines (each benchmark's official rule)", "", markdown_table(head, hrows)]

    def stat_head(first: Sequence[str]) -> list[str]:
        cols = [*first, "micro Top-1 A", "micro Top-1 B", "Δ micro Top-1", "p", "MDD", "won/lost"]
        return (
            cols if one else [*cols, f"micro Oracle@{k} A", f"micro Oracle@{k} B", f"Δ micro Oracle@{k}", "p"]
        )

    def stat_cells(s: PairedFigures | PairedCell) -> list[str]:
        cells = _stat_cells(s["top1"], won_lost=True)
        return cells if one else [*cells, *_stat_cells(oracle_at(s, k), won_lost=False)]

    rows = [
        [e["title"], str(e["samples"]), str(e["screenshots"]), *stat_cells(e["micro"])]
        for e in doc["benchmarks"].values()
    ]
    out += [
        "",
        "## Paired results (micro: every sample counts once)",
        "",
        markdown_table(stat_head(["benchmark", "n", "shots"]), rows),
    ]
    out += drift_section(doc)
    out += _budget_section(doc)
    for name, e in doc["benchmarks"].items():
        variant = describe(e.get("variant") or {}, e.get("caveat"))
        out += ["", f"## {e['title']} ({name}{' · ' + variant if variant else ''})"]
        for t in e["tables"]:
            two = t["cols"] is not None
            th = stat_head([t["rows"], *([] if t["cols"] is None else [t["cols"]]), "n"])
            trows = [
                [c["row"], *([str(c["col"])] if two else []), str(c["samples"]), *stat_cells(c)]
                for c in t["cells"]
            ]
            out += ["", f"### {t['title']}", "", markdown_table(th, trows)]
        budget = e.get("budget")
        if budget is not None:
            out += ["", "### Budget curves (micro Top-1 and cost per sample, j candidates used)", ""]
            out.append(_curves_table(budget))
        served = e.get("server_errors")
        if served is not None:
            out += ["", f"server errors (requests failed for good; misses): A {_errors(served)} B"]
        absent = e.get("not_in_file")
        if absent is not None:
            out += ["", f"not in the predictions file (misses, not format errors): A {_errors(absent)} B"]
        out += [
            "",
            f"won ({len(e['won'])}, B right and A wrong): {_ids(e['won'])}",
            "",
            f"lost ({len(e['lost'])}, A right and B wrong): {_ids(e['lost'])}",
        ]
    return "\n".join(out)


DRIFT_WORDS = (
    "raw differs: the raw answer texts differ after stripping surrounding whitespace; candidates "
    "differ: the candidate lists differ (any point, abstention or unparsed slot, exactly); drift: the "
    "distance in original pixels between the runs' first candidates where both are points (moved: "
    "> 0; p90: linear percentile); point A/B only: one run's first candidate is a point, the other's "
    "is none (abstained, unparsed, no answer); flips: Top-1 hit in one run and miss in the other"
)
"""The definitions printed under compare.md's drift table (:mod:`gge.compare.drift`)."""


def _point(p: Sequence[float] | None) -> str:
    return "no point" if p is None else f"({p[0]:.1f}, {p[1]:.1f})"


def example_text(x: DriftExample) -> str:
    """One flipped sample: its id, which way it flipped, both raw answers (JSON-quoted) and points."""
    way = "A hit, B miss" if x["flip"] == "a_hit_b_miss" else "A miss, B hit"
    apart = "" if x["distance"] is None else f", {px(x['distance'])} px apart"
    return (
        f"{x['id']} ({way}{apart}): A {json.dumps(x['a_raw'], ensure_ascii=False)} → {_point(x['a_point'])}; "
        f"B {json.dumps(x['b_raw'], ensure_ascii=False)} → {_point(x['b_point'])}"
    )


def drift_row(title: str, d: Drift, *, first: bool) -> list[str]:
    """The drift table's row of one benchmark (``first``: with the first candidate's flips)."""
    dist = d["distance"]
    cells = [
        title,
        str(d["samples"]),
        str(d["raw_differs"]),
        str(d["candidates_differ"]),
        f"{d['moved']}/{d['both_points']}",
        *(px(None if dist is None else dist[key]) for key in ("min", "median", "p90", "max")),
        f"{d['a_only_point']}/{d['b_only_point']}",
        f"{d['top1_flips']['a_hit_b_miss']}/{d['top1_flips']['a_miss_b_hit']}",
    ]
    if first:
        cells.append(f"{d['first_flips']['a_hit_b_miss']}/{d['first_flips']['a_miss_b_hit']}")
    return cells


DRIFT_HEAD = [
    "benchmark",
    "n",
    "raw differs",
    "candidates differ",
    "moved/both points",
    "drift min px",
    "median",
    "p90",
    "max",
    "point A/B only",
    "Top-1 flips A✓B✗/A✗B✓",
]
"""The drift table's columns (one more, the first candidate's flips, where K > 1)."""


def drift_section(doc: CompareDocument) -> list[str]:
    """How the runs' answers differ (compare.md): what differs in their setups, then per benchmark.

    Args:
        doc: A compare.json document.

    Returns:
        The section's lines (none for a document without drift entries, written before them).
    """
    entries = [(e["title"], e["drift"]) for e in doc["benchmarks"].values() if "drift" in e]
    if not entries:
        return []
    # the first candidate's flips are Top-1's unless a run picks among several answers or refines
    sides = (doc["a"], doc["b"])
    first = any(side["k"] > 1 or side["selection"] == REFINED for side in sides)
    head = [*DRIFT_HEAD, "first-candidate flips A✓B✗/A✗B✓"] if first else DRIFT_HEAD
    setup = doc.get("setup")
    out = ["", "## Answers that differ", ""]
    if setup is not None:
        out += [f"- setup: {setup['statement']}"]
    out += [f"- {DRIFT_WORDS}", "", markdown_table(head, [drift_row(t, d, first=first) for t, d in entries])]
    for title, d in entries:
        if d["examples"]:
            flips = d["top1_flips"]["a_hit_b_miss"] + d["top1_flips"]["a_miss_b_hit"]
            shown = (
                f"the first {len(d['examples'])} of {flips}" if flips > len(d["examples"]) else f"all {flips}"
            )
            out += ["", f"{title}: Top-1 flips ({shown}, in A's order):", ""]
            out += [f"- {example_text(x)}" for x in d["examples"]]
    return out


def side_text(side: MatchedSide) -> str:
    """``critic j=3/5 (derived)``: a run's strategy and point at the matched budget."""
    return f"{side['strategy']} j={side['j']}/{side['k']} ({side['cost']})"


def _cost_of(side: MatchedSide, unit: str) -> float | None:
    return side["tokens"] if unit == "tokens" else side["seconds"]


def _budget_section(doc: CompareDocument) -> list[str]:
    """The comparison at matched budget, where the runs differ in K, critic or refine stage."""
    entries = [(e["title"], e["budget"]) for e in doc["benchmarks"].values() if "budget" in e]
    if not entries:
        return []
    level = round(100 * doc["bootstrap"]["level"])
    rule = next((b["rule"] for _, b in entries if b is not None), RULE)
    head = [
        "benchmark",
        "unit",
        "A at",
        "A cost",
        "A Top-1",
        "B at",
        "B cost",
        "B Top-1",
        "Δ Top-1",
        "cost Δ",
        "seconds ±",
    ]
    rows = []
    inside: list[str] = []
    for title, b in entries:
        if b is None:
            rows.append([title, *(["–"] * 10)])
            continue
        spread = b.get("spread")
        if spread is not None and spread["inside"]:
            inside.append(f"- {title}: {spread_text(spread)}")
        unit = b["unit"]
        rows.append(
            [
                title,
                unit,
                side_text(b["a"]),
                cost_text(_cost_of(b["a"], unit), unit),
                fmt(b["a"]["top1"]),
                side_text(b["b"]),
                cost_text(_cost_of(b["b"], unit), unit),
                fmt(b["b"]["top1"]),
                f"{fmt_signed(b['diff'])} {_ci(b['ci'])}",
                f"{100 * b['relative_difference']:.0f}%",
                _spread_cell(spread),
            ]
        )
    return [
        "",
        "## At matched budget (the runs differ in K, critic or refine stage)",
        "",
        f"- each run's curve of its own selection strategy; the pair: {rule}; {COST_WORDS}; "
        f"Δ = B − A of the micro Top-1 there, "
        f"[{level}% paired bootstrap interval over the per-sample expected hits]; cost Δ: "
        f"|A − B| / max(A, B); seconds ±: the uncertainty of a difference of two measured costs, "
        f"√(a² + b²) of the runs' a, b: {SPREAD_MEASURE} (tokens are counted: –), 'inside' where other "
        "pairings lie within it of the closest, which the measurement cannot tell apart from it; – : no "
        "comparison (the notes say why)",
        "",
        markdown_table(head, rows),
        *(["", *inside] if inside else []),
    ]


def _spread_cell(spread: MatchedSpread | None) -> str:
    """``±2.9%, inside``: the tolerance of the measured seconds, and whether the pairing is inside it."""
    if spread is None:
        return "–"
    return f"±{fmt_share(spread['tolerance'])}" + (", inside" if spread["inside"] else "")


def _curves_table(b: MatchedBudget) -> str:
    """Both runs' curves side by side, one row per j."""
    a_points = {p["j"]: p for p in b["a"]["curve"]}
    b_points = {p["j"]: p for p in b["b"]["curve"]}
    head = ["j", f"A Top-1 ({b['a']['strategy']})", "A tokens", "A seconds"]
    head += [f"B Top-1 ({b['b']['strategy']})", "B tokens", "B seconds"]
    rows = []
    for j in sorted(set(a_points) | set(b_points)):
        row = [str(j)]
        for points, side in ((a_points, b["a"]), (b_points, b["b"])):
            p = points.get(j)
            if p is None:
                row += ["", "", ""]
                continue
            mark = " ◀" if j == side["j"] else ""
            row += [
                fmt(p["top1"]) + mark,
                cost_text(p["tokens"], "tokens"),
                cost_text(p["seconds"], "seconds"),
            ]
        rows.append(row)
    return markdown_table(head, rows) + "\n\n◀: the matched point"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "A"


def default_out_dir(a: Run, b: Run) -> Path:
    """Where compare writes by default: ``<B's folder>/compare-vs-<A's label>``.

    B is the run under study and A its baseline, so the comparison is kept with B; nothing is
    ever written into A.

    Args:
        a: The baseline.
        b: The run compared.

    Returns:
        The folder.
    """
    return b.folder / f"compare-vs-{_slug(a.label)}"


def _write_html(doc: CompareDocument, out_dir: Path) -> Path:
    from gge.report.compare_page import render_compare_html
    from gge.report.html import write_report_html

    return write_report_html(out_dir / "compare.html", render_compare_html(doc))


def write_compare(doc: CompareDocument, out_dir: Path, markdown: str | None = None) -> list[Path]:
    """Write compare.json, compare.md and compare.html (:func:`gge.report.compare_page.render_compare_html`).

    Args:
        doc: A :func:`gge.compare.pairing.compare_runs` document.
        out_dir: The folder (created if needed).
        markdown: The rendered table (default: :func:`render_markdown` of ``doc``).

    Returns:
        The files written.

    Raises:
        GgeError: naming the folder and the file, when ``out_dir`` (or a folder above it) is a file
            or a file cannot be written.
    """
    _check_out_dir(out_dir)
    written = [out_dir / "compare.json", out_dir / "compare.md"]
    target = out_dir
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        target = written[0]
        written[0].write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        target = written[1]
        written[1].write_text(
            (markdown if markdown is not None else render_markdown(doc)) + "\n", encoding="utf-8"
        )
        target = out_dir / "compare.html"
        written.append(_write_html(doc, out_dir))
    except OSError as e:
        raise GgeError(f"--out {out_dir}: cannot write {target}: {e.strerror or e}") from None
    return written


def _check_out_dir(out_dir: Path) -> None:
    """Refuse an output folder that is a file or lies under one (one line, before anything is computed)."""
    check_output_dir(out_dir, option="--out")
