"""What the reports say of a benchmark's data: its variant and denominator, a differing copy, its interval.

Hand-built documents (``helpers/report_documents.py``): report.md's heading and report.html's
section heading name ``load.variant`` the same way ("refusals: scored · denominator: 564"); a benchmark
read from a Hub copy that differs from the release, run with ``allow_copy_differences=true``, is
flagged as not the official headline; a declared ``headline_interval`` is printed beside the official
Top-1 with its method, resamples and seed.
"""

from __future__ import annotations

import copy
import html
from typing import Any

import pytest
from report_documents import make_document

from gge.report.html import render_report_html
from gge.report.markdown import render_benchmark
from gge.types import STRATEGIES

OSWORLD_VARIANT = {"instructions": "original", "refusals": "scored", "denominator": 564}
COPY_WARNING = (
    "Hub copy that differs from the release (allow_copy_differences=true): not the official headline"
)
BOOT = "95% CI (percentile bootstrap, 9999 resamples, seed 0)"


def provenance(matches: bool | None, allowed: bool) -> dict[str, Any]:
    return {
        "source": "parquet",
        "files": [{"path": "data/test-00000.parquet", "sha256": "ab" * 32, "bytes": 123}],
        "copy": {"repository": "someone/ScreenSpot-Pro", "file": "data/test-00000.parquet"},
        "release_check": {"matches": matches, "differences": ["1 box differs"] if matches is False else []},
        "allowed_differences": allowed,
    }


def document(**entries: dict[str, Any]) -> dict[str, Any]:
    doc = make_document()
    for entry in doc["benchmarks"].values():  # report.md names every strategy
        entry["selection"] = {s: entry["selection"].get(s, 10.0) for s in STRATEGIES}
    for name, extra in entries.items():
        doc["benchmarks"][name] = copy.deepcopy(doc["benchmarks"][name]) | extra
    return doc


def md_heading(doc: dict[str, Any], name: str, title: str) -> str:
    return render_benchmark(title, doc["benchmarks"][name], k=doc["k"], strategy="critic").splitlines()[0]


def html_heading(doc: dict[str, Any], name: str) -> str:
    page = render_report_html(doc, [])
    start = page.index(f'<section class="bench" id="bench-{name}">')
    return page[start : page.index("</h2>", start) + 5]


def test_the_variant_and_denominator_in_both_headings() -> None:
    doc = document(osworld_g={"load": {"variant": OSWORLD_VARIANT}})
    named = "instructions: original · refusals: scored · denominator: 564"
    assert md_heading(doc, "osworld_g", "OSWorld-G") == (
        f"## OSWorld-G — 5 samples · {named} · Top-1 by `critic` · K=3"
    )
    assert html_heading(doc, "osworld_g") == (
        '<section class="bench" id="bench-osworld_g"><h2>OSWorld-G '
        f'<span class="muted">(osworld_g · {named})</span></h2>'
    )


@pytest.mark.parametrize("variant", [None, {}])
def test_without_a_variant_the_headings_are_as_before(variant: dict[str, Any] | None) -> None:
    extra = {} if variant is None else {"load": {"variant": variant}}
    doc = document(osworld_g=extra)
    assert md_heading(doc, "osworld_g", "OSWorld-G") == "## OSWorld-G — 5 samples · Top-1 by `critic` · K=3"
    assert html_heading(doc, "osworld_g") == (
        '<section class="bench" id="bench-osworld_g"><h2>OSWorld-G '
        '<span class="muted">(osworld_g)</span></h2>'
    )


def test_a_variant_value_is_escaped_in_html() -> None:
    doc = document(osworld_g={"load": {"variant": {"language": "<b>cn</b>"}}})
    heading = html_heading(doc, "osworld_g")
    assert "(osworld_g · language: &lt;b&gt;cn&lt;/b&gt;)" in heading and "<b>cn" not in heading


def test_a_differing_hub_copy_is_not_the_official_headline() -> None:
    load = {"variant": {"language": "en"}, "provenance": provenance(False, True)}
    doc = document(screenspot_pro={"load": load})
    assert md_heading(doc, "screenspot_pro", "ScreenSpot-Pro") == (
        f"## ScreenSpot-Pro — 10 samples · language: en · Top-1 by `critic` · K=3 · {COPY_WARNING}"
    )
    assert html_heading(doc, "screenspot_pro") == (
        '<section class="bench" id="bench-screenspot_pro"><h2>ScreenSpot-Pro '
        '<span class="muted">(screenspot_pro · language: en)</span>'
        f' <span class="warning copy-differs">{COPY_WARNING}</span></h2>'
    )
    assert COPY_WARNING not in md_heading(doc, "osworld_g", "OSWorld-G")
    assert COPY_WARNING not in html_heading(doc, "osworld_g")


@pytest.mark.parametrize(("matches", "allowed"), [(True, False), (None, False), (True, True)])
def test_a_copy_that_matches_is_not_flagged(matches: bool | None, allowed: bool) -> None:
    doc = document(screenspot_pro={"load": {"variant": {}, "provenance": provenance(matches, allowed)}})
    for heading in (md_heading(doc, "screenspot_pro", "ScreenSpot-Pro"), html_heading(doc, "screenspot_pro")):
        assert "not the official headline" not in heading


def test_a_copy_run_unchecked_is_not_the_official_headline() -> None:
    unchecked = (
        "Hub copy not checked against the release (allow_copy_differences=true): not the official headline"
    )
    doc = document(screenspot_pro={"load": {"variant": {}, "provenance": provenance(None, True)}})
    assert md_heading(doc, "screenspot_pro", "ScreenSpot-Pro").endswith(f" · {unchecked}")
    assert f'<span class="warning copy-differs">{unchecked}</span>' in html_heading(doc, "screenspot_pro")


def test_a_release_load_is_never_flagged() -> None:
    release = provenance(None, True) | {"source": "release", "copy": None}
    doc = document(screenspot_pro={"load": {"variant": {}, "provenance": release}})
    assert "not the official headline" not in md_heading(doc, "screenspot_pro", "ScreenSpot-Pro")


def interval(top1: list[float] | None) -> dict[str, Any]:
    return {"method": "percentile", "resamples": 9999, "confidence": 0.95, "seed": 0, "top1": top1}


def test_the_declared_interval_beside_the_official_headline() -> None:
    doc = document(screenspot_pro={"headline_interval": interval([52.31, 60.77])})
    lines = render_benchmark("S", doc["benchmarks"]["screenspot_pro"], k=3, strategy="critic").splitlines()
    assert lines[2] == (
        f"- Official headline (micro): Top-1 **56.43** [52.3, 60.8] {BOOT} · Oracle@3 **78.96** [40.0, 80.0] "
        "(95% Wilson) · critic gap 22.5 · P(Top-1 hit | Oracle@3 hit) 77.7%"
    )
    one = render_benchmark("S", doc["benchmarks"]["screenspot_pro"], k=1, strategy="critic").splitlines()
    assert one[2] == f"- Official headline (micro): Top-1 **56.43** [52.3, 60.8] {BOOT}"
    page = render_report_html(doc, [])
    assert f'official (micro): Top-1 <b>56.43</b> <span class="ci">([52.3, 60.8] {BOOT})</span>' in page
    # the other benchmark declares none: its lines are the Wilson ones
    other = render_benchmark("O", doc["benchmarks"]["osworld_g"], k=3, strategy="critic").splitlines()
    assert other[2].startswith(
        "- Official headline (micro): Top-1 **20.00** [30.1, 70.2] · Oracle@3 **30.00**"
    )
    assert BOOT not in other[2] and page.count(BOOT) == 1


def test_a_declared_interval_without_samples_prints_none() -> None:
    doc = document(screenspot_pro={"headline_interval": interval(None)})
    text = render_benchmark("S", doc["benchmarks"]["screenspot_pro"], k=3, strategy="critic")
    assert BOOT not in text and BOOT not in render_report_html(doc, [])


CAVEAT = (
    "refusals left out (Gelato's and ClawGUI's 510); the official headline scores them (refusals=scored, 564)"
)


def test_a_headline_with_a_caveat_never_reads_as_official() -> None:
    from gge.report.markdown import render_summary

    doc = document(osworld_g={"load": {"variant": OSWORLD_VARIANT, "headline_caveat": CAVEAT}})
    lines = render_benchmark("OSWorld-G", doc["benchmarks"]["osworld_g"], k=3, strategy="critic").splitlines()
    assert lines[2].startswith(f"- Headline (micro; not official: {CAVEAT}): Top-1 **20.00**")
    titles = {"screenspot_pro": "ScreenSpot-Pro", "osworld_g": "OSWorld-G"}
    summary = render_summary(titles, doc["benchmarks"], doc["mean"], k=3)
    rows = {line.split("|")[1].strip(): line for line in summary.splitlines() if line.startswith("| ")}
    assert "| micro (not official) |" in rows["OSWorld-G"].replace("  ", "")
    assert "not official" not in rows["ScreenSpot-Pro"]
    assert summary.endswith(
        f"\n\n- OSWorld-G: not official: {CAVEAT}\n- mean of 2: 1 of its headlines not official (OSWorld-G)"
    )
    assert "| mean of 2 (1 not official) |" in summary.replace("  ", "")
    page = render_report_html(doc, [])
    escaped = html.escape(CAVEAT, quote=True)
    headline = f'headline (micro; <span class="warning">not official: {escaped}</span>): Top-1 <b>20.00</b>'
    assert headline in page
    assert page.count("(not official)</span>") == 1  # the summary row of OSWorld-G only
    assert "<td>mean of 2 headlines (1 not official)</td>" in page and "official headlines</td>" not in page
    # the other benchmark keeps its official line
    other = render_benchmark("S", doc["benchmarks"]["screenspot_pro"], k=3, strategy="critic").splitlines()
    assert other[2].startswith("- Official headline (micro): Top-1 **56.43**")


def test_the_loaders_caveats(demo_suite: Any) -> None:
    from gge.benchmarks.loading import load_benchmarks
    from gge.benchmarks.osworld_g import OSWorldGOptions

    def caveat(name: str, **options: Any) -> str | None:
        opts = {name: OSWorldGOptions(**options)} if options else None
        return load_benchmarks([name], demo_suite, opts).loads[name].summary.get("headline_caveat")

    assert caveat("osworld_g") is None and caveat("osworld_g", refusals="scored") is None
    assert caveat("osworld_g", refusals="excluded") == CAVEAT
    assert caveat("osworld_g_refined", refusals="miss") == (
        "refusals counted as misses (MAI-UI's count); the official headline scores them (refusals=scored)"
    )
    assert caveat("cagui_grounding") == (
        "the mean of Fun2Point and Text2Point; the published average also includes Bbox2Text (a text "
        "answer, not evaluated)"
    )
    assert caveat("screenspot_v2") is None and caveat("screenspot_v1") is None


def test_the_console_load_line_says_a_headline_is_not_official(demo_suite: Any) -> None:
    import io

    from gge.benchmarks.loading import load_benchmarks
    from gge.benchmarks.osworld_g import OSWorldGOptions

    out = io.StringIO()
    options = {"osworld_g": OSWorldGOptions(refusals="excluded")}
    load_benchmarks(["osworld_g", "screenspot_v2"], demo_suite, options, out=out)
    lines = out.getvalue().splitlines()
    assert lines[1] == f"  osworld_g: not official: {CAVEAT}"
    assert lines[0].startswith("osworld_g: ") and lines[2].startswith("screenspot_v2: ") and len(lines) == 3


def test_a_training_runs_tables_name_the_caveat(demo_suite: Any) -> None:
    from gge.run.online import OnlineEvaluator

    ev = OnlineEvaluator(["cagui_grounding", "screenspot_v2"], data_root=demo_suite)
    ev.load()
    assert ev.variants == {
        "cagui_grounding": "not official: the mean of Fun2Point and Text2Point; the published average also "
        "includes Bbox2Text (a text answer, not evaluated)",
        "screenspot_v2": "",
    }
