"""Issue 19 in report.md / the console and report.html: official headlines beside the micro means (S1),
image errors beside format errors in the summary tables (S4), a one-answer run shown as Top-1 only
(S3), and the subset banner (S2).

The entries are built from hand-made results; the expected figures are worked out by hand.
"""

from __future__ import annotations

import re
from typing import Any

from headline_results import HIT, MACRO, MISS, Macro, Micro, _result

from gge.documents.results import SCHEMA_VERSION
from gge.report.html import render_report_html
from gge.report.markdown import fmt, render_benchmark, render_summary
from gge.scoring.grouping import wilson_interval
from gge.scoring.metrics import benchmark_metrics, mean_over_benchmarks

# two hits, one format error, two unreadable screenshots
BROKEN = [
    _result("a", "x", [HIT, MISS], [0.9, 0.1], k=2),
    _result("b", "x", [HIT], [0.9], k=2),
    _result("c", "x", [], [], k=2, format_error=True),
    _result("d", "x", [], [], k=2, image_error="/img/d.png: cannot identify image file"),
    _result("e", "x", [], [], k=2, image_error="/img/e.png: truncated"),
]
MACRO_TOP1, MACRO_ORACLE = 100 * (1 + 1 / 3) / 2, 100 * (1 + 2 / 3) / 2


def _md_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table line (separator lines left out)."""
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|") and not line.startswith("|-")
    ]


def _entries(k: int = 2) -> dict[str, Any]:
    return {
        "macro": benchmark_metrics(Macro(), MACRO, k=k, strategy="critic"),
        "micro": benchmark_metrics(Micro(), BROKEN, k=k, strategy="critic"),
    }


def _ci(hits: int, n: int) -> str:
    lo, hi = wilson_interval(hits, n)  # type: ignore[misc]
    return f"[{fmt(lo)}, {fmt(hi)}]"


# -- report.md / console --------------------------------------------------------------------------
def test_summary_table_counts_image_errors_beside_format_errors() -> None:
    entries = _entries()
    text = render_summary(
        {"macro": "Macro", "micro": "Micro"}, entries, mean_over_benchmarks(entries, 2), k=2
    )
    rows = _md_rows(text)
    assert rows[0] == [
        "benchmark",
        "samples",
        "official rule",
        "Top-1",
        "Oracle@2",
        "gap",
        "format errors",
        "image errors",
    ]
    assert rows[1] == [
        "Macro",
        "4",
        "macro_group",
        "66.67",
        "83.33",
        "16.7",
        "0",
        "0",
    ]  # headlines: 2 decimals
    assert rows[2] == ["Micro", "5", "micro", "40.00", "40.00", "0.0", "1", "2"]
    mean_top1, mean_oracle = (MACRO_TOP1 + 40.0) / 2, (MACRO_ORACLE + 40.0) / 2
    assert rows[3] == ["mean of 2", "", "unweighted", f"{mean_top1:.2f}", f"{mean_oracle:.2f}", "", "", ""]


def test_benchmark_section_counts_image_errors_beside_format_errors() -> None:
    text = render_benchmark("Micro", _entries()["micro"], k=2, strategy="critic")
    line = next(x for x in text.splitlines() if x.startswith("- Format errors"))
    assert line.endswith(": 1 (20.0%) · image errors (unreadable screenshots): 2")
    assert "- Unreadable screenshots (the model was not asked; scored as misses): 2" in text
    assert "  - /img/d.png: cannot identify image file" in text and "  - /img/e.png: truncated" in text


def test_benchmark_section_leads_with_the_official_headline_then_micro() -> None:
    text = render_benchmark("Macro", _entries()["macro"], k=2, strategy="critic")
    lines = text.splitlines()
    assert lines[0] == "## Macro — 4 samples · Top-1 by `critic` · K=2"
    assert lines[2] == (
        "- Official headline (macro_group): Top-1 **66.67** · Oracle@2 **83.33** · critic gap 16.7 · "
        "P(Top-1 hit | Oracle@2 hit) 66.7% (micro)"
    )
    # micro: 2 of 4 picks hit, 3 of 4 samples have a hitting answer; Wilson intervals beside them
    assert (
        lines[3]
        == f"- Micro (hits over samples): Top-1 50.0 {_ci(2, 4)} · Oracle@2 75.0 {_ci(3, 4)} (95% Wilson)"
    )
    # a micro headline carries the intervals itself, and no separate micro line
    micro = render_benchmark("Micro", _entries()["micro"], k=2, strategy="critic").splitlines()
    assert micro[2].startswith(
        f"- Official headline (micro): Top-1 **40.00** {_ci(2, 5)} · Oracle@2 **40.00** "
    )
    assert not any(x.startswith("- Micro") for x in micro)


def test_a_one_answer_run_is_top1_only_in_report_md() -> None:
    one = [
        _result("x0", "x", [HIT], [0.9], k=1),
        _result("y0", "y", [MISS], [0.2], k=1),
        _result("y1", "y", [HIT], [0.3], k=1),
    ]
    entry = benchmark_metrics(Macro(), one, k=1, strategy="critic")
    text = render_benchmark("Macro", entry, k=1, strategy="critic")
    lines = text.splitlines()
    assert lines[0] == "## Macro — 3 samples · one answer per sample (Top-1 only)"
    assert lines[2] == "- Official headline (macro_group): Top-1 **75.00**"  # (1 + 1/2) / 2
    assert lines[3] == f"- Micro (hits over samples): Top-1 66.7 {_ci(2, 3)} (95% Wilson)"
    for absent in ("Oracle", "selection", "critic gap", "Critic's gain", "K=", "critic miss"):
        assert absent not in text, absent
    rows = _md_rows(text)
    assert ["group", "n", "Top-1"] in rows and ["x", "1", "100.0"] in rows and ["all", "3", "66.7"] in rows
    assert ["group \\ kind", "text", "avg"] in rows and ["y", "50.0", "50.0"] in rows
    assert "### Group by kind (Top-1, %)" in text
    entries = {"macro": entry}
    summary = render_summary({"macro": "Macro"}, entries, mean_over_benchmarks(entries, 1), k=1)
    rows = _md_rows(summary)
    assert rows == [
        ["benchmark", "samples", "official rule", "Top-1", "format errors", "image errors"],
        ["Macro", "3", "macro_group", "75.00", "0", "0"],
    ]


# -- report.html ----------------------------------------------------------------------------------
def _document(entries: dict[str, Any], k: int, **extra: Any) -> dict[str, Any]:
    """A results document (every required field) of these entries."""
    return {
        "schema_version": SCHEMA_VERSION,
        "gge_version": "0.1.0",
        "protocol": "p",
        "benchmarks": entries,
        "mean": mean_over_benchmarks(entries, k),
        "k": k,
        **extra,
        "selection": "critic",
        "model": {},
        "config": {},
    }


def _summary(page: str) -> str:
    return page[page.index('<section id="summary">') : page.index("</section>")]


def test_html_summary_counts_image_errors_and_leads_with_the_headline() -> None:
    page = render_report_html(_document(_entries(), 2), [])
    summary = _summary(page)
    assert "<th>gap</th><th>format errors</th><th>image errors</th>" in summary
    assert (
        "<td>4</td><td>macro_group</td><td>66.67</td><td>83.33</td><td>16.7</td><td>0</td><td>0</td>"
        in summary
    )
    assert "<td>5</td><td>micro</td><td>40.00</td><td>40.00</td><td>0.0</td><td>1</td><td>2</td>" in summary
    # the section's headline is the official figure, the micro mean follows with its interval
    assert "official (macro_group): Top-1 <b>66.67</b> · Oracle@2 <b>83.33</b> · gap 16.7" in page
    assert (
        f"micro Top-1 50.0 (95% CI {_ci(2, 4)})" in page
        and f"micro Oracle@2 75.0 (95% CI {_ci(3, 4)})" in page
    )
    assert "format errors 1 · image errors 2" in page


def test_html_of_a_one_answer_run_is_top1_only() -> None:
    one = [
        _result("x0", "x", [HIT], [0.9], k=1),
        _result("y0", "y", [MISS], [0.2], k=1),
        _result("y1", "y", [HIT], [0.3], k=1, image_error=None),
    ]
    entries = {"macro": benchmark_metrics(Macro(), one, k=1, strategy="critic")}
    # a K=1 results.json written at 4dd5585 still carried a critic gain: it is not shown either
    entries["macro"]["critic_gain"] = {"over_first": 0.0, "over_best_spatial": 0.0, "best_spatial": "mean"}
    page = render_report_html(_document(entries, 1), [])
    summary = _summary(page)
    header = re.findall(r"<th>([^<]*)</th>", summary)
    assert header == ["benchmark", "samples", "official rule", "Top-1", "format errors", "image errors"]
    assert "<td>3</td><td>macro_group</td><td>75.00</td><td>0</td><td>0</td>" in summary
    for absent in ("Oracle", "Top-1 by selection strategy", "critic gain", "<b>selection</b>", "<b>K</b>"):
        assert absent not in page, absent
    assert "<b>one answer per sample</b> (Top-1 only)" in page
    assert "<td>x</td><td>1</td><td>100.0</td></tr>" in page  # the 1-D table: n and Top-1
    assert '<td>y</td><td><span title="n=2">50.0</span></td>' in page  # the 2-D grid: Top-1 cells
    assert "(Top-1, %)" in page
    assert "official (macro_group): Top-1 <b>75.00</b></p>" in page


def test_html_subset_banner() -> None:
    subset = {
        "max_samples": 5,
        "benchmarks": {"screenspot_v2": {"evaluated": 5, "total": 36}, "micro": {"evaluated": 5, "total": 5}},
    }
    page = render_report_html(_document(_entries(), 2, subset=subset), [])
    banner = re.search(r'<p class="warning banner" id="subset">(.*?)</p>', page)
    assert banner is not None
    assert banner.group(1) == (
        "<b>subset: first 5 of 36 samples (ScreenSpot-v2); max_samples=5: not comparable with "
        "published numbers</b>"
    )
    assert page.index('id="subset"') < page.index('<section id="summary">')
    for full in (None, "absent"):
        doc = _document(_entries(), 2) if full == "absent" else _document(_entries(), 2, subset=None)
        assert 'id="subset"' not in render_report_html(doc, [])


def test_html_one_answer_follows_the_document_k() -> None:
    for k in (1, 2):
        entries = {"micro": benchmark_metrics(Micro(), BROKEN, k=k, strategy="critic")}
        page = render_report_html(_document(entries, k), [])
        assert ("<h3>Oracle@k curve</h3>" in page) is (k > 1), k
        assert ("Top-1 by selection strategy" in page) is (k > 1), k
        assert ("critic gain" in page) is (k > 1), k


# -- compare page ---------------------------------------------------------------------------------
def _pair_stat(a: float, b: float, lo: float, hi: float) -> dict[str, Any]:
    return {"a": a, "b": b, "diff": b - a, "ci": [lo, hi], "mcnemar_p": 0.25, "mdd": 9.5, "b_only": 4,
            "a_only": 2, "samples": 40, "screenshots": 20}  # fmt: skip


def _compare_doc(k: int) -> dict[str, Any]:
    """A compare.json as gge compare writes it with the headlines moved: official first, micro beside."""
    head = {"rule": "macro_group", "a": 30.0, "b": 35.0, "diff": 5.0, "ci": [-1.0, 11.0]}
    bench: dict[str, Any] = {
        "title": "Macro",
        "samples": 40,
        "screenshots": 20,
        "cluster": "screenshot",
        "top1": head,
        "official": head,
        "micro": {"top1": _pair_stat(40.0, 42.5, -3.0, 8.0)},
        "format_errors": {"a": 3, "b": 1},
        "image_errors": {"a": 2, "b": 0},
        "tables": [
            {
                "title": "By group",
                "rows": "group",
                "cols": None,
                "cells": [
                    {"row": "x", "col": None, "samples": 10, "top1": _pair_stat(10.0, 20.0, 0.0, 20.0)}
                ],
            }
        ],
        "won": ["w"],
        "lost": [],
    }
    if k > 1:
        bench[f"oracle@{k}"] = head | {"a": 50.0, "b": 52.0, "diff": 2.0, "ci": [-2.0, 6.0]}
        bench["micro"][f"oracle@{k}"] = _pair_stat(55.0, 57.5, -1.0, 6.0)
        bench["tables"][0]["cells"][0][f"oracle@{k}"] = _pair_stat(30.0, 30.0, -5.0, 5.0)
    side = {"path": "runs/a", "label": "A", "selection": "critic", "k": k, "protocol": "p"}
    return {
        "schema_version": SCHEMA_VERSION,
        "a": side,
        "b": side | {"path": "runs/b", "label": "B"},
        "k": k,
        "bootstrap": {"resamples": 2000, "seed": 0, "cluster": "screenshot", "level": 0.95},
        "benchmarks": {"macro": bench},
        "mean": {"benchmarks": 1, "a": 30.0, "b": 35.0, "diff": 5.0},
        "warnings": [],
        "notes": [],
    }


def test_compare_page_shows_the_official_headline_micro_and_error_counts() -> None:
    from gge.report.compare_page import render_compare_html

    page = render_compare_html(_compare_doc(5))
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>", page)
    assert rows[:5] == [
        ("mean of 1 headline", "30.0", "35.0"),
        ("official Top-1 (macro_group)", "30.0", "35.0"),
        ("official Oracle@5 (macro_group)", "50.0", "52.0"),
        ("micro Top-1", "40.0", "42.5"),
        ("micro Oracle@5", "55.0", "57.5"),
    ]
    assert (
        "<td>micro Top-1</td><td>40.0</td><td>42.5</td><td><span>+2.5</span></td><td>[-3.0, +8.0]</td>"
        in page
    )
    assert "20 screenshots · format errors A 3 · B 1 · image errors A 2 · B 0</p>" in page
    assert "<th>Oracle@5 A</th>" in page


def test_compare_page_of_one_answer_runs_is_top1_only() -> None:
    from gge.report.compare_page import render_compare_html

    page = render_compare_html(_compare_doc(1))
    assert "Oracle" not in page
    assert "<td>official Top-1 (macro_group)</td><td>30.0</td><td>35.0</td>" in page
    assert "<td>micro Top-1</td><td>40.0</td><td>42.5</td>" in page
    head = re.findall(r"<th>([^<]*)</th>", page[page.index("<h3>By group</h3>") :])
    assert head[:7] == ["cell", "n", "Top-1 A", "Top-1 B", "B − A", "95% CI", "p"] and len(head) == 7
    cell = re.search(r"<tr><td>x</td>(.*?)</tr>", page)
    assert cell is not None and cell.group(1).count("<td>") == 6  # n, then A, B, B − A, CI, p of Top-1
