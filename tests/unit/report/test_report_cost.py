"""report.md and report.html show the cost, refine and budget sections of issue 20, and the budget plot.

The documents are hand-built (``helpers/cost_documents.py``) with values whose formatting is known;
the expected cells are written out by hand. The budget plot's marks are checked against the axis the
SVG draws: its tick labels give the value-to-pixel mapping, and every point must sit where that
mapping puts its cost and Top-1. One test runs real scored samples with cost records through
:func:`gge.run.assemble.build_document` and checks the cells against sums done by hand.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

import pytest
from cost_documents import (
    BUDGET_HEADER,
    BUDGET_ROWS,
    COST_HEADER,
    COST_ROWS,
    REFINE_ROW,
    SETUP_LINE,
    budget,
    cost,
    cost_document,
    cost_entry,
)

from gge.benchmarks import get_benchmark
from gge.report.cost_html import BUDGET_COLOURS, REFINED_COLOUR
from gge.report.html import render_report_html
from gge.report.markdown import render_benchmark
from gge.run.assemble import build_document
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, CostRecord, Prediction, Sample


# -- reading the reports back ---------------------------------------------------------------------
def markdown_section(text: str, heading: str) -> tuple[str, list[list[str]], list[str]]:
    """``(title, [header, *rows], notes)`` of the ``### <heading>...`` section of report.md."""
    lines = text.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith(f"### {heading}")]
    table = []
    i = start + 2
    while i < len(lines) and lines[i].startswith("|"):
        table.append(lines[i])
        i += 1
    assert set(table[1]) <= {"|", "-"}, table[1]  # the separator
    rows = [[c.strip() for c in line.strip()[1:-1].split("|")] for line in [table[0], *table[2:]]]
    notes = []
    i += 1
    while i < len(lines) and lines[i].startswith("- "):
        notes.append(lines[i][2:])
        i += 1
    return lines[start][4:], rows, notes


class Sections(HTMLParser):
    """The tables of report.html's ``<div data-section=...>`` blocks, cell texts unescaped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.titles: dict[str, str] = {}
        self.notes: dict[str, list[str]] = {}
        self._section: str | None = None
        self._depth = 0
        self._cell: list[str] | None = None
        self._where: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "div":
            if self._section is not None:
                self._depth += 1
            elif named.get("data-section"):
                self._section = str(named["data-section"])
                self.tables[self._section], self.notes[self._section] = [], []
                self._depth = 0
        if self._section is None:
            return
        if tag == "tr":
            self.tables[self._section].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "h3":
            self._where = "title"
            self.titles[self._section] = ""
        elif tag == "p":
            self._where = "note"
            self.notes[self._section].append("")

    def handle_endtag(self, tag: str) -> None:
        if self._section is None:
            return
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._section][-1].append("".join(self._cell))
            self._cell = None
        elif tag in ("h3", "p"):
            self._where = None
        elif tag == "div":
            if self._depth == 0:
                self._section = None
            else:
                self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._section is None:
            return
        if self._cell is not None:
            self._cell.append(data)
        elif self._where == "title":
            self.titles[self._section] += data
        elif self._where == "note":
            self.notes[self._section][-1] += data


def html_sections(page: str) -> Sections:
    parser = Sections()
    parser.feed(page)
    return parser


def budget_svg(page: str, axis: str) -> ET.Element:
    found = re.search(rf'<figure class="budget-plot" data-axis="{axis}">(<svg.*?</svg>)', page, re.S)
    assert found is not None, f"no {axis} plot"
    return ET.fromstring(found.group(1))


def cells(line: str) -> list[str]:
    """A table row written as its cells separated by spaces."""
    return line.split(" ")


def _report(entry: dict[str, Any], k: int = 3) -> str:
    return render_benchmark("OSWorld-G", entry, k=k, strategy="critic")  # type: ignore[arg-type]


# -- report.md ------------------------------------------------------------------------------------
def test_markdown_cost_table_has_the_ledger_values() -> None:
    title, rows, notes = markdown_section(_report(cost_entry()), "Cost per sample")
    assert title == "Cost per sample (measured in this run; 40 samples with cost records; 2 without)"
    assert rows == [COST_HEADER, *COST_ROWS]
    assert "cached mean" not in rows[0]  # no stage reports cached tokens
    assert any("percentiles over the samples" in n for n in notes)


def test_markdown_refine_table() -> None:
    title, rows, notes = markdown_section(_report(cost_entry()), "Refine stage")
    assert title == "Refine stage (zoom-in)"
    assert rows[0][:5] == ["refines", "samples", "Top-1 before", "Top-1 after", "change"]
    assert rows[0][5:7] == ["fixed (miss → hit)", "broken (hit → miss)"]
    assert rows[1:] == [REFINE_ROW]
    assert "`critic` pick" in notes[0] and "model.refine_when" in notes[0]


def test_markdown_budget_table_and_its_footnotes() -> None:
    title, rows, notes = markdown_section(_report(cost_entry()), "Budget")
    assert title == "Budget: Top-1 against the candidates used (j = 1..3)"
    assert rows == [BUDGET_HEADER, *BUDGET_ROWS]
    method, costs, who, refined, own = notes
    assert "method subsets: the exact expectation over the j-subsets of the 3 candidates" in method
    assert "the first 1 candidate (before the sampled ones) always kept" in method
    assert "its pick on a subset is exact" in method
    assert (
        costs.startswith("Costs per sample: unmarked, measured (what the run paid)") and "† derived" in costs
    )
    assert who.startswith("tokens/seconds: the proposer's requests") and "not at j = 1" in who
    assert refined.startswith("Refined (the refine stage on the pick, at the run's whole cost, measured)")
    assert "Top-1 67.5 at 2,600 tokens, 0.75 s per sample" in refined
    assert own == budget()["notes"][0]


def test_markdown_budget_of_a_listwise_critic_on_a_prefix_says_induced_order() -> None:
    b = budget() | {"method": "prefix", "first_slot": None, "critic": "induced"}
    _, _, notes = markdown_section(_report(cost_entry(budget=b)), "Budget")
    assert "method prefix: the first j candidates in proposer order;" in notes[0]
    assert "the induced order, not a new call" in notes[0]


def test_markdown_budget_of_subsets_drawn_at_random_says_so() -> None:
    b = budget() | {
        "method": "sampled",
        "notes": ["j = 2: 1000 of its 1200 subsets drawn at random (seed 0)"],
    }
    _, _, notes = markdown_section(_report(cost_entry(budget=b)), "Budget")
    assert "method sampled: the expectation over the j-subsets" in notes[0]
    assert "drawn at random where a j has too many" in notes[0]
    assert notes[-1] == "j = 2: 1000 of its 1200 subsets drawn at random (seed 0)"


def test_markdown_budget_without_a_critic_has_no_critic_column() -> None:
    b = budget() | {"critic": None}
    _, rows, notes = markdown_section(_report(cost_entry(budget=b)), "Budget")
    assert rows[0] == [h for h in BUDGET_HEADER if not h.startswith("critic")]
    assert rows[3] == ["3", "1,040", "0.25", "50.0", "40.0", "47.5 (median)", "70.0"]
    assert "no critic" in notes[0]
    assert not any(n.startswith("tokens/seconds: the proposer's") for n in notes)


def test_markdown_cached_column_and_replayed_source() -> None:
    ledger = cost()
    ledger["source"] = "replayed"
    ledger["unrecorded"] = 0
    ledger["stages"]["propose"]["tokens"]["cached"] = {"mean": 512.0, "p50": 512.0, "p90": 512.0}
    title, rows, _ = markdown_section(_report(cost_entry(cost=ledger)), "Cost per sample")
    assert title == "Cost per sample (replayed from the predictions file; 40 samples with cost records)"
    column = rows[0].index("cached mean")
    assert [r[column] for r in rows[1:]] == ["512", "–", "–", "–"]  # the total does not know it either


def test_the_cost_heading_names_the_candidates_paid_for() -> None:
    """A K = 5 file rescored with k = 3: the ledger is K = 5's, and the heading says so."""
    ledger = cost() | {"candidates": 5}
    title, _, _ = markdown_section(_report(cost_entry(cost=ledger)), "Cost per sample")
    assert title == (
        "Cost per sample (measured in this run; measured for 5 candidates; this run scores 3; 40 samples "
        "with cost records; 2 without)"
    )
    page = render_report_html(cost_document(cost=ledger), [])  # type: ignore[arg-type]
    assert html_sections(page).titles["cost"] == title  # k read from the entry's oracle@1..3
    same = cost() | {"candidates": 3}
    title, _, _ = markdown_section(_report(cost_entry(cost=same)), "Cost per sample")
    assert title == "Cost per sample (measured in this run; 40 samples with cost records; 2 without)"


def _replayed_budget() -> dict[str, Any]:
    b = budget()
    b["points"][-1]["cost"] = "replayed"
    b["refined"]["cost"] = "replayed"
    return b


def test_a_replays_budget_says_replayed() -> None:
    _, rows, notes = markdown_section(_report(cost_entry(budget=_replayed_budget())), "Budget")
    assert rows[1:] == BUDGET_ROWS  # what the run paid is unmarked, as measured
    replayed = "replayed (what the replayed run paid, read back from its predictions file)"
    assert notes[1].startswith(f"Costs per sample: unmarked, {replayed}")
    assert not any("unmarked, measured" in n for n in notes)
    assert notes[3].startswith("Refined (the refine stage on the pick, at the run's whole cost, replayed)")
    page = render_report_html(cost_document(budget=_replayed_budget()), [])  # type: ignore[arg-type]
    for axis in ("tokens", "seconds"):
        svg = budget_svg(page, axis)
        last = [c for c in svg.iter("circle") if c.get("data-j") == "3"]
        assert {c.get("data-cost") for c in last} == {"replayed"}
        assert all((c.findtext("title") or "").endswith("(replayed cost)") for c in last)
        (refined,) = [p for p in svg.iter("path") if p.get("data-strategy") == "refined"]
        assert (refined.findtext("title") or "").endswith("% (replayed cost)")
        assert "replayed" in [t.text for t in svg.iter("text")]  # the legend's key
        assert "measured" not in [t.text for t in svg.iter("text")]
        assert "(measured" not in ET.tostring(svg, encoding="unicode")


@pytest.mark.parametrize(
    "sections",
    [{}, {"cost": None, "budget": None}],
    ids=["keys absent", "None"],
)
def test_sections_are_left_out_when_absent(sections: dict[str, Any]) -> None:
    entry = {k: v for k, v in cost_entry().items() if k not in ("cost", "refine", "budget")} | sections
    text = _report(entry)
    for heading in ("### Cost per sample", "### Refine stage", "### Budget"):
        assert heading not in text
    document = cost_document()
    document["benchmarks"]["osworld_g"] = entry
    del document["cost"]
    page = render_report_html(document, [])  # type: ignore[arg-type]
    assert 'class="cost-section"' not in page and '<figure class="budget-plot"' not in page
    assert 'class="protocol setup"' not in page


def test_a_build_document_of_scored_samples_shows_their_costs() -> None:
    """Two samples' cost records through the real scoring and assembly; the cells summed by hand."""
    samples = [Sample("osworld_g", i, "", (100, 100), "click", Box(0, 0, 50, 50)) for i in ("a", "b")]
    costs = {
        "a": (CostRecord("propose", input_tokens=100, image_tokens=80, output_tokens=10, seconds=0.5),),
        "b": (
            CostRecord("propose", input_tokens=120, image_tokens=80, output_tokens=6, seconds=0.3),
            CostRecord("judge", input_tokens=90, image_tokens=80, output_tokens=0, seconds=0.1, candidates=1),
        ),
    }
    results = [
        score_sample(s, Prediction("osworld_g", s.id, (Candidate((10.0, 10.0)),), costs=costs[s.id]), k=1)
        for s in samples
    ]
    _, report = build_document(
        {"osworld_g": get_benchmark("osworld_g")},
        {"osworld_g": results},
        k=1,
        strategy="first",
        protocol="p",
        model={},
        config={},
    )
    title, rows, _ = markdown_section(report, "Cost per sample")
    assert title == "Cost per sample (measured in this run; 2 samples with cost records)"
    assert rows[0] == COST_HEADER
    # a: propose 110 tokens (80 image, 20 text, 10 output), 0.5 s; b: propose 126 (80, 40, 6), 0.3 s and
    # judge 90 (80, 10, 0), 0.1 s. Totals 110 and 216 tokens (326), 0.5 and 0.4 s (0.9).
    assert rows[1:] == [
        cells("propose 1.00 118 118 124 80.0 30.0 8.0 0.4 0.4 0.48 0.498 72.4 88.9"),
        cells("judge 0.50 45.0 45.0 81.0 40.0 5.0 0.0 0.05 0.05 0.09 0.099 27.6 11.1"),
        cells("total 1.50 163 163 205 120 35.0 8.0 0.45 0.45 0.49 0.499 100.0 100.0"),
    ]
    assert "### Refine stage" not in report and "### Budget" not in report


# -- report.html ----------------------------------------------------------------------------------
def test_html_tables_match_the_markdown_values() -> None:
    page = render_report_html(cost_document(), [])  # type: ignore[arg-type]
    found = html_sections(page)
    assert found.tables["cost"] == [COST_HEADER, *COST_ROWS]
    assert found.tables["refine"][1:] == [REFINE_ROW]
    assert found.tables["budget"] == [BUDGET_HEADER, *BUDGET_ROWS]
    assert found.titles["budget"] == "Budget: Top-1 against the candidates used (j = 1..3)"
    assert any("† derived" in n for n in found.notes["budget"])
    assert "<code>critic</code> pick" in page  # the refine note's code span


def test_html_setup_line_under_the_protocol() -> None:
    page = render_report_html(cost_document(), [])  # type: ignore[arg-type]
    protocol = page.index('<p class="protocol">')
    setup = page.index(f'<p class="protocol setup">{SETUP_LINE}</p>')
    assert protocol < setup < page.index("<nav>")


def _ticks(svg: ET.Element, axis: str) -> list[tuple[float, float]]:
    """(value, pixel) of the axis's ticks: x from the labels, y from the grid lines beside the labels."""
    labels = [t for t in svg.iter("text") if t.get("class") == f"tick {axis}"]
    values = [float((t.text or "").replace(",", "")) for t in labels]
    if axis == "x":
        return [(v, float(t.get("x", "nan"))) for v, t in zip(values, labels, strict=True)]
    grid = [float(line.get("y1", "nan")) for line in svg.iter("line") if line.get("class") == "grid"]
    return list(zip(values, grid, strict=True))


def _mapping(ticks: list[tuple[float, float]]) -> Any:
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    return lambda v: p0 + (v - v0) * (p1 - p0) / (v1 - v0)


@pytest.mark.parametrize(
    ("axis", "x_ticks"),
    [("tokens", [500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]), ("seconds", [0.0, 0.2, 0.4, 0.6, 0.8])],
)
def test_budget_plot_points_sit_on_the_drawn_axes(axis: str, x_ticks: list[float]) -> None:
    page = render_report_html(cost_document(), [])  # type: ignore[arg-type]
    svg = budget_svg(page, axis)
    heading = f"Top-1 vs {axis} per sample"
    assert svg.get("role") == "img" and svg.get("aria-label") == f"OSWorld-G: {heading}"
    assert svg.findtext("title") == f"OSWorld-G: {heading}" and "critic: j=1" in (svg.findtext("desc") or "")
    xt, yt = _ticks(svg, "x"), _ticks(svg, "y")
    # the costs run from 840.3 (0.15 s) to the refined 2600 (0.75 s): round steps of 500 (0.2); Top-1 from
    # 40 to 67.5, 2 points of margin: 38 to 69.5, steps of 10
    assert [v for v, _ in xt] == pytest.approx(x_ticks)
    assert [v for v, _ in yt] == [30.0, 40.0, 50.0, 60.0, 70.0]
    x_of, y_of = _mapping(xt), _mapping(yt)
    for v, p in xt + yt:  # evenly spaced: the mapping is linear
        assert (x_of if (v, p) in xt else y_of)(v) == pytest.approx(p, abs=0.11)
    points = {p["j"]: p for p in budget()["points"]}
    marks = [c for c in svg.iter("circle") if c.get("data-strategy")]
    assert sorted((c.get("data-strategy"), c.get("data-j")) for c in marks) == sorted(
        (s, str(j)) for s in ("critic", "cluster", "first") for j in (1, 2, 3)
    )
    for mark in marks:
        strategy, point = str(mark.get("data-strategy")), points[int(str(mark.get("data-j")))]
        # each strategy at what it pays: the critic its requests included, the vote and first without
        paid = point["critic"][axis] if strategy == "critic" else point[axis]
        assert float(str(mark.get("cx"))) == pytest.approx(x_of(paid), abs=0.15)
        assert float(str(mark.get("cy"))) == pytest.approx(y_of(point["top1"][strategy]), abs=0.15)
        colour = BUDGET_COLOURS[strategy]
        assert mark.get("stroke") == colour
        measured = point["cost"] == "measured"
        assert mark.get("data-cost") == point["cost"]
        assert mark.get("fill") == (colour if measured else "#fff")  # measured filled, derived hollow
    (refined,) = [p for p in svg.iter("path") if p.get("data-strategy") == "refined"]
    top = re.match(r"M([\d.]+),([\d.]+) L", str(refined.get("d")))
    assert top is not None and refined.get("fill") == REFINED_COLOUR
    cost_of_refined = {"tokens": 2600.0, "seconds": 0.75}[axis]
    assert float(top.group(1)) == pytest.approx(x_of(cost_of_refined), abs=0.15)
    assert float(top.group(2)) + 6 == pytest.approx(y_of(67.5), abs=0.15)  # the diamond's top corner
    groups = {g.get("data-strategy"): g for g in svg.iter("g") if g.get("class") == "curve"}
    assert groups["first"].get("opacity") == "0.45" and groups["critic"].get("opacity") is None
    assert len(list(groups["critic"].iter("polyline"))) == 1


def test_budget_plot_without_a_critic_or_without_token_counts() -> None:
    b = budget()
    b["critic"] = None
    for p in b["points"]:
        p["tokens"] = None
    b["refined"]["tokens"] = None
    page = render_report_html(cost_document(budget=b), [])  # type: ignore[arg-type]
    assert 'data-axis="tokens"' not in page
    svg = budget_svg(page, "seconds")
    assert {c.get("data-strategy") for c in svg.iter("circle") if c.get("data-strategy")} == {
        "cluster",
        "first",
    }
    assert html_sections(page).tables["budget"][1][:3] == ["1", "–", "0.15†"]


def test_the_page_with_cost_sections_fetches_nothing() -> None:
    page = render_report_html(cost_document(), [])  # type: ignore[arg-type]
    low = page.lower()
    for bad in ('src="http', 'href="http', "<link", "@import", "url(http", "//cdn", "<img"):
        assert bad not in low, bad


def test_the_budget_table_of_scored_samples_ends_at_what_the_run_measured() -> None:
    """K = 3 through the real scoring, budget curves and assembly: the j = K row is the run itself.

    Its cost is measured (unmarked): the critic pick's equals the cost table's total (no refine stage),
    the others' its propose row; its critic Top-1 is the run's ``critic`` selection and its Oracle@j
    the run's Oracle@3; below K the costs are marked derived.
    """
    samples = [Sample("osworld_g", str(i), "", (100, 100), "click", Box(0, 0, 50, 50)) for i in range(4)]
    hit, miss = (10.0, 10.0), (90.0, 90.0)
    answers = [(hit, miss, miss), (miss, hit, miss), (miss, miss, hit), (miss, miss, miss)]
    scores = [(0.9, 0.1, 0.2), (0.3, 0.8, 0.1), (0.7, 0.1, 0.2), (0.5, 0.4, 0.3)]
    results = []
    for s, points, scored in zip(samples, answers, scores, strict=True):
        ledger = (
            CostRecord(
                "propose", input_tokens=100 + 2 * int(s.id), output_tokens=30, seconds=0.3, candidates=3
            ),
            *(
                CostRecord("judge", input_tokens=90, output_tokens=0, seconds=0.1, slot=i, candidates=1)
                for i in range(3)
            ),
        )
        candidates = tuple(Candidate(p, score) for p, score in zip(points, scored, strict=True))
        results.append(score_sample(s, Prediction("osworld_g", s.id, candidates, costs=ledger), k=3))
    document, report = build_document(
        {"osworld_g": get_benchmark("osworld_g")},
        {"osworld_g": results},
        k=3,
        strategy="critic",
        protocol="p",
        model={},
        config={},
    )
    _, cost_rows, _ = markdown_section(report, "Cost per sample")
    _, rows, _ = markdown_section(report, "Budget")
    header, last = rows[0], rows[-1]
    assert [r[0] for r in rows[1:]] == ["1", "2", "3"]
    # by hand: the proposer's 130, 132, 134, 136 tokens (mean 133) and 0.3 s; the judges 270 and 0.3 s more
    tokens, seconds = cost_rows[0].index("tokens mean"), cost_rows[0].index("s mean")
    assert last[header.index("tokens/sample")] == cost_rows[1][tokens] == "133"
    assert last[header.index("seconds/sample")] == cost_rows[1][seconds] == "0.3"
    assert last[header.index("critic tokens/sample")] == cost_rows[-1][tokens] == "403"
    assert last[header.index("critic seconds/sample")] == cost_rows[-1][seconds] == "0.6"
    assert all(c.endswith("†") for r in rows[1:3] for c in r[1:5])
    # the critic picks the highest score: hits on samples 0 and 1 of 4; some candidate hits on 0, 1, 2
    assert last[header.index("critic")] == "50.0" and last[header.index("Oracle@j")] == "75.0"
    assert document["benchmarks"]["osworld_g"]["selection"]["critic"] == 50.0
    page = render_report_html(document, [])
    assert html_sections(page).tables["budget"] == rows
    for axis in ("tokens", "seconds"):
        svg = budget_svg(page, axis)
        assert {c.get("data-cost") for c in svg.iter("circle") if c.get("data-j") == "3"} == {"measured"}
