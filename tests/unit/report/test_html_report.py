"""The self-contained report.html: gallery entries from real images, every section, escaping, compare page.

The fixtures (``helpers/report_documents.py``, shared with ``test_browser.py``) are real
:class:`~gge.types.Sample` / :class:`~gge.types.SampleResult` objects scored by
:func:`gge.scoring.scoring.score_sample` over small PNGs written with pillow, and hand-built documents
that follow the issue-11 schema (research/ISSUE11_SCHEMA.md) exactly.
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from report_documents import (
    EVIL,
    base_entry,
    empty_document,
    make_compare,
    make_document,
    make_run,
    plain_sections,
)

from gge.drawing import HIT_COLOUR, MISS_COLOUR, TARGET_COLOUR
from gge.report.compare_page import render_compare_html
from gge.report.gallery import gallery_entries
from gge.report.html import render_report_html, write_report_html
from gge.report.html_format import GALLERY_BACKGROUND, KIND_COLOURS, TABLE_HEADER_COLOUR, asset
from gge.scoring.analysis import MISS_KINDS
from gge.scoring.scoring import score_sample
from gge.types import Sample


def _decode(uri: str) -> Image.Image:
    assert uri.startswith("data:image/jpeg;base64,")
    return Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))


def _near(img: Image.Image, colour: tuple[int, int, int], tol: int = 60) -> int:
    pixels = np.asarray(img.convert("RGB"), dtype=np.int16)
    return int((np.abs(pixels - np.array(colour, dtype=np.int16)).max(axis=2) <= tol).sum())


def assert_self_contained(page: str) -> None:
    low = page.lower()
    for bad in (
        'src="http',
        "src='http",
        'href="http',
        "href='http",
        "<link",
        "@import",
        "url(http",
        "//cdn",
    ):
        assert bad not in low, bad
    srcs = re.findall(r"<img[^>]*\ssrc=\"([^\"]*)\"", page)
    assert all(s.startswith("data:image/") for s in srcs), srcs
    assert not re.search(r"<script[^>]*\ssrc=", low)


# -- gallery_entries --------------------------------------------------------------------------------
def test_gallery_entries_kinds_cells_and_thumbnails(tmp_path: Path) -> None:
    samples, results, specs = make_run(tmp_path)
    gallery = gallery_entries(samples, results, strategy="critic", tables=specs)
    by_id = {e["id"]: e for e in gallery}
    assert "p0" not in by_id  # the hit is no miss
    assert len(gallery) == len(results) - 1
    kinds = {i: e["kind"] for i, e in by_id.items()}
    assert kinds == {
        "p1": "critic_miss",
        "id<b>2": "proposer_miss",
        "p3": "abstained",
        "p4": "format_error",
        "p5": "image_error",
        "p6": "proposer_miss",
        "p7": "critic_miss",
        "p8": "proposer_miss",
        "o0": "proposer_miss",
    }
    assert by_id["p1"]["cell"] == {"row": "CAD", "col": "text"}
    assert by_id["p7"]["cell"] == {"row": "Dev", "col": "icon"}  # multi-label: the first value
    assert by_id["o0"]["cell"] == {"row": "text_matching", "col": None}
    # pick and hits summary
    assert by_id["p1"]["pick"] == {"rank": 1, "point": [600.0, 350.0], "hit": False}
    assert by_id["p1"]["hit_ranks"] == [2] and by_id["p1"]["oracle"] and by_id["p1"]["candidates"] == 2
    assert by_id["p3"]["pick"]["point"] is None and by_id["p3"]["pick"]["rank"] == 1
    assert by_id["p4"]["pick"] == {"rank": None, "point": None, "hit": False}
    assert by_id["id<b>2"]["raw"] == f"answer {EVIL}" and by_id["id<b>2"]["instruction"] == f"press {EVIL}"
    assert by_id["o0"]["critic_raw"] == "critic says 1"
    # thumbnails: real JPEGs with the overlay drawn; None for unreadable images and a missing one that
    # was the sample's image error; a missing file whose sample was scored (its size known: a replay
    # without screenshots, issue 37) is drawn on a blank canvas of its size
    for i in ("p5", "p8"):
        assert by_id[i]["thumb"] is None and by_id[i]["thumb_size"] is None, i
    blank = _decode(by_id["p6"]["thumb"])
    assert by_id["p6"]["blank"] and blank.size == (480, 270) == tuple(by_id["p6"]["thumb_size"])
    assert _near(blank, TARGET_COLOUR) > 100 and _near(blank, MISS_COLOUR) > 30
    assert not any(by_id[i]["blank"] for i in by_id if i != "p6")
    wide = _decode(by_id["p1"]["thumb"])
    assert wide.format == "JPEG" and wide.size == (480, 270) == tuple(by_id["p1"]["thumb_size"])
    assert _near(wide, TARGET_COLOUR) > 100 and _near(wide, MISS_COLOUR) > 30 and _near(wide, HIT_COLOUR) > 30
    tall = _decode(by_id["p7"]["thumb"])
    assert tall.size == (240, 480)  # a portrait screenshot fits a 480 square
    small = gallery_entries(samples, results, strategy="critic", tables=specs, max_width=200)
    assert _decode(small[0]["thumb"]).size[0] == 200


def test_gallery_entries_limit_is_round_robin_over_kinds_and_deterministic(tmp_path: Path) -> None:
    samples, results, specs = make_run(tmp_path)
    first = gallery_entries(samples, results, strategy="critic", tables=specs, limit_per_benchmark=6)
    again = gallery_entries(samples, results, strategy="critic", tables=specs, limit_per_benchmark=6)
    assert first == again
    pro = [e for e in first if e["benchmark"] == "screenspot_pro"]
    assert [e["kind"] for e in pro] == [
        "critic_miss", "proposer_miss", "abstained", "format_error", "image_error", "critic_miss",
    ]  # fmt: skip
    assert [e["id"] for e in pro] == ["p1", "id<b>2", "p3", "p4", "p5", "p7"]
    assert [e["id"] for e in first if e["benchmark"] == "osworld_g"] == ["o0"]
    two = gallery_entries(samples, results, strategy="critic", tables=specs, limit_per_benchmark=2)
    assert [e["id"] for e in two] == ["p1", "id<b>2", "o0"]
    assert gallery_entries(samples, results, strategy="critic", tables=specs, limit_per_benchmark=0) == []
    assert set(MISS_KINDS) >= {e["kind"] for e in first}
    # the "first" strategy picks the proposer's first answer: p1's miss stays a critic miss, no hit shows
    firsts = gallery_entries(samples, results, strategy="first", tables=specs)
    assert all(e["pick"]["rank"] in (1, None) for e in firsts)


def test_gallery_entries_without_sample_or_table(tmp_path: Path) -> None:
    samples, results, _ = make_run(tmp_path)
    gallery = gallery_entries({}, results, strategy="critic", tables={})
    p1 = next(e for e in gallery if e["id"] == "p1")
    assert p1["instruction"] == "" and p1["cell"] == {"row": None, "col": None}
    assert p1["thumb"] is not None  # rebuilt from the result's own image path, size and region
    with pytest.raises(ValueError, match="limit_per_benchmark"):
        gallery_entries(samples, results, strategy="critic", tables={}, limit_per_benchmark=-1)


# -- results page -----------------------------------------------------------------------------------
def test_page_is_one_self_contained_file_and_escapes_everything(tmp_path: Path) -> None:
    samples, results, specs = make_run(tmp_path)
    gallery = gallery_entries(samples, results, strategy="critic", tables=specs)
    page = render_report_html(make_document(), gallery)
    assert_self_contained(page)
    assert page.count("<img ") == sum(e["thumb"] is not None for e in gallery) == 7
    assert page.count('<figure class="card"') == len(gallery)
    assert page.count("screenshot unavailable") == 2  # p5, p8 (p6: a blank canvas)
    assert page.count("screenshot not present: drawn on a blank canvas of its size") == 1
    # escaping: nothing from the data becomes markup
    assert EVIL not in page and "<b>vscode" not in page and "id<b>2" not in page
    assert "press &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "answer &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "id&lt;b&gt;2" in page and "&lt;b&gt;vscode&lt;/b&gt;" in page
    assert "By application &lt;i&gt;" in page
    # only our own two scripts, and the gallery's filters with a count
    assert page.count("<script>") == 2
    for sel in ("filter-benchmark", "filter-cell", "filter-kind"):
        assert f'<select id="{sel}">' in page
    assert f"showing {len(gallery)} of {len(gallery)}" in page
    assert '<option value="critic_miss">critic miss (2)</option>' in page
    assert '<option value="screenspot_pro · CAD / text">CAD / text (' in page
    assert "window.onerror" in page and "dataset.ready" in page and "jsErrors" in page
    path = write_report_html(tmp_path / "report.html", page)
    assert path.read_text(encoding="utf-8") == page
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    size = path.stat().st_size
    assert size < 200_000, size  # six 480-pixel JPEGs of a flat screenshot


def test_summary_and_official_tables() -> None:
    page = render_report_html(make_document(), [])
    assert TABLE_HEADER_COLOUR in page
    summary = page[page.index('id="summary"') : page.index("</section>")]
    # one row per benchmark: official rule, Top-1, Oracle@K, gap, format errors, image errors; the mean
    assert "<th>format errors</th><th>image errors</th>" in summary
    assert (
        "<td>10</td><td>micro</td><td>56.43</td><td>78.96</td><td>22.5</td><td>1</td><td>1</td></tr>"
        in summary
    )
    assert (
        "<td>5</td><td>micro</td><td>20.00</td><td>30.00</td><td>10.0</td><td>1</td><td>1</td></tr>"
        in summary
    )
    assert "mean of 2 official headlines" in summary
    assert "<td>38.22</td><td>54.48</td><td>16.3</td><td></td><td></td></tr>" in summary  # two decimals
    assert ">ScreenSpot-Pro</a>" in summary and ">OSWorld-G</a>" in summary  # registry titles
    assert "<b>protocol</b>: demo protocol" in page and "<b>model</b>: replay" in page
    # 2-D grid of "Top-1 / Oracle@K", 1-D list with counts
    assert "<th>group \\ ui_type</th><th>text</th><th>icon</th><th>avg</th>" in page
    assert '<span title="n=6">50.0 / 66.7</span>' in page
    assert '<td>CAD</td><td><span title="n=6">50.0 / 66.7</span></td><td><span class="muted">–</span>' in page
    assert "<td>autocad</td><td>6</td><td>50.0</td><td>66.7</td>" in page
    assert "Top-1 by selection strategy" in page and "<td><b>critic</b></td><td>56.4</td>" in page
    # the micro means, with their intervals
    assert "micro Top-1 56.4 (95% CI [30.1, 70.2])" in page
    assert "micro Oracle@3 79.0 (95% CI [40.0, 80.0])" in page


def test_every_new_section_is_drawn() -> None:
    page = render_report_html(make_document(), [])
    pro = page[page.index('id="bench-screenspot_pro"') : page.index('id="bench-osworld_g"')]
    # Oracle@k curve with Top-1 and pass@k, as inline SVG
    assert "Oracle@k curve" in pro and "pass@k: 3 → 51.0" in pro and "Oracle@k: 2 → 55.0" in pro
    # decomposition: overall and per cell
    assert "Outcomes" in pro and "overall — critic miss: 30.0% (3)" in pro
    assert "CAD / text — proposer miss: 16.7% (1)" in pro and "Dev / icon — hit: 50.0% (2)" in pro
    # size buckets: grouped bars with counts
    assert "By target size" in pro and "0.01–0.03% — Top-1: 42.9% (n=7)" in pro
    assert "≥10% — Oracle@3: 100.0% (n=3)" in pro and ">n=0</text>" in pro
    assert "no target area (absent targets, or a screenshot of unknown size): 2" in pro
    # miss distance quartiles
    assert "<td>target sizes (×)</td><td>0.4</td><td>1.8</td><td>6.7</td>" in pro
    assert "<td>screen diagonal (%)</td><td>1.2</td><td>3.5</td><td>25.0</td>" in pro
    # calibration numbers and charts
    assert "<td>AUROC</td><td>0.812</td>" in pro and "<td>ECE</td><td>0.057</td>" in pro
    assert "<td>Brier</td><td>0.179</td>" in pro and "<td>AURC (%)</td><td>21.5</td>" in pro
    assert "reliability diagram" in pro and "risk-coverage" in pro and "accuracy: 0.8 → 0.7" in pro
    assert "critic gain: +12.3 over first, -3.2 over best spatial (medoid)" in pro
    assert pro.count("<svg") == 1 + 2 + 1 + 2  # curve, 2 decompositions, sizes, reliability, risk


def test_sections_that_are_none_or_empty_are_skipped() -> None:
    doc = make_document()
    doc["benchmarks"]["screenspot_pro"] |= plain_sections(10)
    page = render_report_html(doc, [])
    for absent in (
        "By target size",
        "Critic calibration",
        "pass@k",
        "critic gain",
        "misses with a point pick",
    ):
        assert absent not in page.replace("0 misses with a point pick", ""), absent
    assert page.count("<h3>Outcomes") == 2 and page.count("<h3>Miss distance</h3>") == 2
    assert (
        page.count("<h3>Oracle@k curve</h3>") == 2
        and "showing 0 of 0" in page
        and "No misses to show." in page
    )
    # pass@k of a ranked list, no critic scores: None sections beside the others
    doc = make_document()
    doc["benchmarks"]["screenspot_pro"] |= {"pass_at_k": None, "calibration": None}
    page = render_report_html(doc, [])
    assert "pass@k" not in page and "Critic calibration" not in page and "Outcomes" in page
    # a benchmark without samples: its percentages are en dashes
    nothing = {"top1": None, "oracle@1": None, "oracle@2": None, "oracle@3": None}
    empty = base_entry(0.0, 0.0, samples=0) | nothing | {"official": {"rule": "micro"} | nothing}
    bare = render_report_html(empty_document() | {"benchmarks": {"x": empty}}, [], title="t <1>")
    assert "<title>t &lt;1&gt;</title>" in bare and "<td>0</td><td>micro</td><td>–</td>" in bare
    assert_self_contained(bare)


def test_report_from_a_real_demo_run(demo_suite: Path, tmp_path: Path) -> None:
    from gge.benchmarks import get_benchmark
    from gge.models.replay import parse_line
    from gge.run.settings import parse_args
    from gge.run.standalone import run
    from gge.scoring.analysis import analyse

    names = ["screenspot_v2", "osworld_g"]
    args = [
        f"data_root={demo_suite}",
        f"model.predictions={demo_suite / 'predictions.jsonl'}",
        f"output_dir={tmp_path / 'out'}",
        f"benchmarks=[{','.join(names)}]",
        "max_samples=12",
    ]
    doc = run(parse_args(args), out=io.StringIO())
    samples: dict[tuple[str, str], Sample] = {}
    for name in names:
        bench = get_benchmark(name)
        for s in bench.load(demo_suite / bench.directory, bench.options_type()).samples:
            samples[(s.benchmark, s.id)] = s
    lines = (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()
    preds = [parse_line(json.loads(x), f"predictions.jsonl:{i}") for i, x in enumerate(lines, 1)]
    results = [score_sample(samples[(p.benchmark, p.id)], p, k=doc["k"]) for p in preds]
    for name, entry in doc["benchmarks"].items():  # until results.json carries them itself
        mine = [r for r in results if r.benchmark == name]
        extra = analyse(mine, tables=get_benchmark(name).tables, k=doc["k"], strategy=doc["selection"],
                        selection=entry["selection"])  # fmt: skip
        for key, value in extra.items():
            entry.setdefault(key, value)
    specs = {n: get_benchmark(n).tables[0] for n in names}
    gallery = gallery_entries(samples, results, strategy=doc["selection"], tables=specs)
    misses = sum(not r.top1[doc["selection"]] for r in results)
    assert len(gallery) == misses > 0 and all(e["thumb"] for e in gallery)
    page = render_report_html(doc, gallery)
    assert_self_contained(page)
    for name in names:
        entry = doc["benchmarks"][name]
        k = doc["k"]
        off = entry["official"]
        row = f"<td>{entry['samples']}</td><td>{off['rule']}</td><td>{off['top1']:.2f}</td>"
        assert row + f"<td>{off[f'oracle@{k}']:.2f}</td>" in page
        assert f'id="bench-{name}"' in page
    assert "Outcomes" in page and "By target size" in page
    assert page.count('<figure class="card"') == misses


# -- compare page -----------------------------------------------------------------------------------
def test_compare_page_shows_the_paired_numbers() -> None:
    page = render_compare_html(make_compare())
    assert_self_contained(page)
    assert EVIL not in page and "candidate &lt;new&gt;" in page and "w&lt;script&gt;" in page
    row = (
        '<td>micro Top-1</td><td>40.0</td><td>46.0</td><td><span class="pos">+6.0</span></td>'
        "<td>[+2.2, +9.8]</td><td>&lt;0.001</td><td>4.4</td><td>17</td><td>5</td><td>200</td>"
    )
    assert row in page
    assert (
        "<td>micro Oracle@5</td><td>60.0</td><td>59.0</td><td><span>-1.0</span></td><td>[-4.5, +2.5]</td>"
        in page
    )
    assert "<td>0.612</td>" in page
    assert "<td>official Top-1 (micro)</td><td>40.0</td><td>46.0</td>" in page
    assert "<td>official Oracle@5 (micro)</td><td>60.0</td><td>59.0</td>" in page
    cell = '<td>CAD / icon</td><td>50</td><td>20.0</td><td>33.3</td><td><span class="pos">+13.3</span></td>'
    assert cell in page and "<td>0.020</td>" in page
    assert "<summary>won: B hits, A misses (2)</summary>" in page and "<li><code>w1</code></li>" in page
    assert "<summary>lost: A hits, B misses (1)</summary>" in page
    assert "screenspot_pro Top-1: +6.0 [+2.2, +9.8]" in page  # the forest plot's tooltip
    assert "200 samples on 120 screenshots" in page and "2000 resamples" in page
    assert "<td>40.0</td><td>46.0</td><td>+6.0</td>" in page  # mean of the official headlines
    assert 'dataset.ready = "1"' in page
    empty = render_compare_html(make_compare() | {"benchmarks": {}})
    assert "<svg" not in empty and 'dataset.ready = "1"' in empty


def test_compare_page_without_tables_or_wins() -> None:
    doc = make_compare()
    doc["benchmarks"]["screenspot_pro"] |= {"tables": [], "won": []}
    page = render_compare_html(doc)
    assert page.count("<table") == 2 and "won: B hits, A misses (0)" in page


def test_compare_page_shows_warnings_and_notes() -> None:
    doc = make_compare() | {
        "benchmarks": {},
        "warnings": ["the runs pick Top-1 by different strategies: A critic, B <first>"],
        "notes": ["K differs: Oracle@5 compared"],
    }
    page = render_compare_html(doc)
    warning = "warning: the runs pick Top-1 by different strategies: A critic, B &lt;first&gt;"
    assert f'<p class="warning">{warning}</p>' in page
    assert "note: K differs: Oracle@5 compared" in page


# -- assets: the styles and scripts, inlined --------------------------------------------------------
ASSETS = resources.files("gge.report") / "assets"
ASSET_NAMES = sorted(f.name for f in ASSETS.iterdir() if f.is_file())
TAG = re.compile(r"<[a-zA-Z][^>]*>")
REFERENCE = re.compile(
    r"""\s(?:src|href|srcset|action|poster|formaction)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I
)


def _pages(tmp_path: Path) -> dict[str, str]:
    samples, results, specs = make_run(tmp_path)
    gallery = gallery_entries(samples, results, strategy="critic", tables=specs)
    return {
        "report": render_report_html(make_document(), gallery),
        "empty report": render_report_html(empty_document(), []),
        "compare": render_compare_html(make_compare()),
    }


def test_the_assets_are_the_styles_and_the_three_scripts() -> None:
    assert ASSET_NAMES == ["error_capture.js", "gallery_filter.js", "ready.js", "report.css"]
    for name in ASSET_NAMES:
        text = asset(name)
        assert text == (ASSETS / name).read_text(encoding="utf-8") and text.endswith("\n")
        assert "</script" not in text.lower() and "</style" not in text.lower()  # safe to inline
    css = asset("report.css")
    assert "{{" not in css and TABLE_HEADER_COLOUR not in css and GALLERY_BACKGROUND not in css
    assert "var(--table-header)" in css and "var(--gallery-bg)" in css


def test_every_page_inlines_its_assets_and_references_nothing_outside(tmp_path: Path) -> None:
    pages = _pages(tmp_path)
    wanted = {
        "report": ["report.css", "error_capture.js", "gallery_filter.js"],
        "empty report": ["report.css", "error_capture.js", "gallery_filter.js"],
        "compare": ["report.css", "error_capture.js", "ready.js"],
    }
    assert sorted({n for names in wanted.values() for n in names}) == ASSET_NAMES  # each one is used
    for what, page in pages.items():
        style = re.findall(r"<style>(.*?)</style>", page, re.S)
        assert len(style) == 1 and asset("report.css") in style[0], what
        scripts = re.findall(r"<script>\n(.*?)</script>", page, re.S)
        assert scripts == [asset(n) for n in wanted[what] if n.endswith(".js")], what
        assert_self_contained(page)
        # every src / href of every tag: a fragment of the page or a data: URI, never a file or a URL
        refs = [
            next(v for v in m.groups() if v is not None)
            for tag in TAG.findall(page)
            for m in REFERENCE.finditer(tag)
        ]
        assert refs, what
        outside = [r for r in refs if not (r.startswith("#") or r.startswith("data:"))]
        assert outside == [], (what, outside)
        urls = re.findall(r"url\(\s*['\"]?([^'\")]*)", page)
        assert all(u.startswith("data:") for u in urls), urls
        assert "@import" not in page and "<link" not in page.lower()
        assert not re.search(r"(?<![\w-])file:", page.lower())  # a file: URL (not a --not-in-file: colour)


def test_every_custom_property_the_page_uses_is_set(tmp_path: Path) -> None:
    pages = _pages(tmp_path)
    for what, page in pages.items():
        roots = re.findall(r":root\{([^}]*)\}", page)
        assert len(roots) == 2, what  # the Python colours, then report.css's own
        defined = dict(re.findall(r"(--[\w-]+):([^;]+);", "".join(roots)))
        used = set(re.findall(r"var\((--[\w-]+)\)", page))
        assert used and used <= set(defined), (what, used - set(defined))
        assert defined["--table-header"] == TABLE_HEADER_COLOUR
        assert defined["--gallery-bg"] == GALLERY_BACKGROUND
        for kind, colour in KIND_COLOURS.items():
            assert defined["--" + kind.replace("_", "-")] == colour
    assert 'class="kind" style="background:var(--critic-miss)"' in pages["report"]  # the badges use them


@pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH")
def test_the_scripts_parse() -> None:
    node = shutil.which("node")
    assert node is not None
    for name in ASSET_NAMES:
        if name.endswith(".js"):
            with resources.as_file(ASSETS / name) as path:
                proc = subprocess.run(
                    [node, "--check", str(path)], capture_output=True, text=True, check=False
                )
            assert proc.returncode == 0, (name, proc.stderr)
