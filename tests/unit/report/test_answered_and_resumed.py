"""Who answered, a resumed run's invocations and usage, and the image-token warning, on every surface.

Issue 36: report.md, report.html and the console summary of ``python eval.py`` say who answered, that a
run was resumed (each invocation with its window in report.html), the usage summed over the
invocations, and, per benchmark whose image-token check found answers off the preset's expectation, a
warning with the ratio and an example. The documents are written here by hand (through the one
document builder, :func:`gge.run.assemble.build_document`) and every expected text is typed out by hand;
report.html is parsed (``html.parser``) and its texts read back, not searched as markup. A run without
these facts shows none of them.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from gge.benchmarks import get_benchmark
from gge.documents.results import ResultsDocument
from gge.loggers.standalone import console_summary
from gge.report.html import render_report_html
from gge.run.assemble import build_document
from gge.types import Candidate, SampleResult

TITLES = {"screenspot_pro": "ScreenSpot-Pro", "osworld_g": "OSWorld-G"}

# -- the hand-written facts -------------------------------------------------------------------------
ENDPOINT = {
    "backend": {
        "backend": "openai",
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "qwen",
        "usage": {"requests": 303, "retries": 58, "overloads": 14, "failed": 1, "outages": 1},
        "probe": {"engine": {"name": "vLLM 0.11.0"}, "answers": {"model": ["Qwen/Qwen2.5-VL-7B"]}},
    }
}
ANSWERED = "Answered by: vLLM 0.11.0 at http://127.0.0.1:8000/v1, model Qwen/Qwen2.5-VL-7B (asked as qwen)"
WINDOW_1 = {
    "mode": "adaptive", "start": 64, "max": 256, "final": 32, "peak_in_flight": 64, "mean_in_flight": 30.6,
    "sent": 250, "overloads": 14, "decreases": 2, "busy_seconds": 80.5,
}  # fmt: skip
WINDOW_2 = {
    "mode": "fixed", "start": 8, "max": 8, "final": 8, "peak_in_flight": 8, "mean_in_flight": 7.5,
    "sent": 53, "overloads": 0, "decreases": 0, "busy_seconds": 20.0,
}  # fmt: skip
INVOCATIONS: list[dict[str, Any]] = [
    {
        "started": "2025-06-01T10:00:00Z",
        "ended": "2025-06-01T10:05:00Z",
        "end": "stopped",
        "why": "POST http://127.0.0.1:8000/v1/chat/completions: <b>HTTP 500</b>",
        "restored": 0,
        "samples": 3,
        "counters": {"backend.usage": {"requests": 250, "retries": 44, "overloads": 14}},
        "window": WINDOW_1,
    },
    {
        "started": "2025-06-01T11:00:00Z",
        "ended": "2025-06-01T11:01:00Z",
        "end": "finished",
        "restored": 3,
        "samples": 1,
        "counters": {"backend.usage": {"requests": 53, "retries": 14, "failed": 1, "outages": 1}},
        "window": WINDOW_2,
    },
]
RESUMED = (
    "resumed: 2 invocations (#1 stopped (POST http://127.0.0.1:8000/v1/chat/completions: <b>HTTP 500</b>), "
    "3 samples; #2 finished, 1 samples)"
)
USAGE = (
    "usage, summed over the 2 invocations: 303 requests answered, 58 retries, 14 overloads, "
    "1 failed for good, 1 outage"
)
INVOCATION_ROWS = [
    [
        "#1",
        "2025-06-01T10:00:00Z",
        "2025-06-01T10:05:00Z",
        "stopped: POST http://127.0.0.1:8000/v1/chat/completions: <b>HTTP 500</b>",
        "3",
        "250 requests answered, 44 retries, 14 overloads",
        "adaptive 64 -> 32 (at most 256), 30.6 requests in flight on average, 64 at most, 14 overloads",
    ],
    [
        "#2",
        "2025-06-01T11:00:00Z",
        "2025-06-01T11:01:00Z",
        "finished",
        "1",
        "53 requests answered, 14 retries, 1 failed for good, 1 outage",
        "fixed 8, 7.5 requests in flight on average, 8 at most, 0 overloads",
    ],
]
# ScreenSpot-Pro's check: 2 of 4 answers off; observed 396 + 400 over expected 1196 + 1196 = 0.3328
SHRUNK = {
    "source": "prompt",
    "factor": 28,
    "requests": 4,
    "differ": 2,
    "unchecked": 0,
    "ratio": 0.3328,
    "tolerance": "prompt tokens less the probe's 104 text tokens, within ...",
    "example": {"id": "1", "size": [1288, 728], "expected": 1196, "observed": 396},
}
SHRUNK_TEXT = (
    "the model saw fewer image tokens than the preset expects in 2 of 4 proposer answers "
    "(observed/expected 0.33; e.g. 1: 396 for its 1288x728 screenshot, 1196 expected): "
    "the server likely resizes with its own max_pixels/min_pixels (start it with the preset's)"
)
AGREES = SHRUNK | {"differ": 0, "ratio": None, "example": None}  # OSWorld-G's: every answer as expected


def _results(name: str) -> list[SampleResult]:
    two = (Candidate((1.0, 1.0), 0.9), Candidate((2.0, 2.0), 0.1))
    hits = [(True, False), (False, True), (False, False), (True, True)]
    return [SampleResult(name, str(i), {}, 2, two, h, top1={"critic": h[0]}) for i, h in enumerate(hits)]


def _run(
    model: dict[str, Any],
    invocations: list[dict[str, Any]] | None,
    checks: dict[str, dict[str, Any]],
) -> tuple[ResultsDocument, str]:
    names = ("screenspot_pro", "osworld_g")
    return build_document(
        {name: get_benchmark(name) for name in names},
        {name: _results(name) for name in names},
        k=2,
        strategy="critic",
        protocol="p",
        model=model,
        config={},
        extras={name: {"image_tokens": check} for name, check in checks.items()},
        invocations=invocations,  # type: ignore[arg-type]
    )


# -- reading report.html back -------------------------------------------------------------------------
_VOID = {"meta", "br", "img", "input", "link", "hr", "source", "wbr", "col", "area", "base", "embed"}


class _Texts(HTMLParser):
    """Every element's text (its children's included) with its tag and class, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, str, list[str]]] = []
        self.closed: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID:
            self.open.append((tag, dict(attrs).get("class") or "", []))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass  # <x/>: no text

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            name, cls, parts = self.open.pop()
            self.closed.append((name, cls, "".join(parts)))
            if name == tag:
                return

    def handle_data(self, data: str) -> None:
        for _, _, parts in self.open:
            parts.append(data)


def _texts(page: str, tag: str, cls: str | None = None) -> list[str]:
    parser = _Texts()
    parser.feed(page)
    parser.close()
    return [text for name, c, text in parser.closed if name == tag and (cls is None or cls in c.split())]


def _invocation_rows(page: str) -> list[list[str]]:
    """The body rows of the invocations table, as cell texts ([] without the table)."""
    parser = _Texts()
    parser.feed(page)
    rows: list[list[str]] = []
    cells: list[str] = []
    for name, cls, text in parser.closed:  # closed in order: a row's cells, the row, at last its table
        if name == "td":
            cells.append(text)
        elif name == "tr":
            rows += [cells] if cells else []  # the header row has no td
            cells = []
        elif name == "table":
            if "invocations" in cls.split():
                return rows
            rows = []
    return []


# -- tests ----------------------------------------------------------------------------------------------
def test_report_md_says_who_answered_that_the_run_resumed_its_usage_and_the_image_token_warning() -> None:
    _, report = _run(ENDPOINT, INVOCATIONS, {"screenspot_pro": SHRUNK, "osworld_g": AGREES})
    lines = report.splitlines()
    assert lines[:4] == ["Protocol: p", ANSWERED, RESUMED, USAGE]
    warnings = [line for line in lines if line.startswith("- Warning: ")]
    assert warnings == [f"- Warning: {SHRUNK_TEXT}"]  # ScreenSpot-Pro's only: OSWorld-G's agrees
    pro, osw = report.index("## ScreenSpot-Pro"), report.index("## OSWorld-G")
    assert pro < report.index(warnings[0]) < osw


def test_report_html_shows_the_same_facts_at_the_top_and_each_invocation_with_its_window() -> None:
    document, _ = _run(ENDPOINT, INVOCATIONS, {"screenspot_pro": SHRUNK, "osworld_g": AGREES})
    page = render_report_html(document, [])
    protocol = _texts(page, "p", "protocol")
    assert protocol[1:] == [ANSWERED, RESUMED, USAGE]  # after the protocol line, in report.md's order
    assert _texts(page, "p").count(ANSWERED) == 1  # one answered line
    assert _invocation_rows(page) == INVOCATION_ROWS
    # the invocations table is headed as written
    header = _texts(page, "th")
    at = header.index("invocation")
    assert header[at : at + 7] == [
        "invocation", "started", "ended", "how it ended", "samples", "requests", "request window",
    ]  # fmt: skip
    # the why's markup is text, not markup
    assert "<b>HTTP 500</b>" not in page and "&lt;b&gt;HTTP 500&lt;/b&gt;" in page
    # the image-token warning: a banner at the top, and in ScreenSpot-Pro's section
    assert _texts(page, "p", "image-tokens") == [f"ScreenSpot-Pro: {SHRUNK_TEXT}"]
    assert _texts(page, "li", "image-tokens") == [SHRUNK_TEXT]
    banner, summary = page.index('class="warning banner image-tokens"'), page.index('id="summary"')
    section = page.index('id="bench-screenspot_pro"')
    assert banner < summary < section < page.index('<li class="warning image-tokens">')


def test_console_prints_the_answered_and_resumed_lines_and_the_warning_one_line_each(tmp_path: Path) -> None:
    document, _ = _run(ENDPOINT, INVOCATIONS, {"screenspot_pro": SHRUNK, "osworld_g": AGREES})
    text = console_summary(document, TITLES, tmp_path)
    blocks = text.split("\n\n")
    assert blocks[0].splitlines() == ["Protocol: p", ANSWERED, RESUMED, "Top-1 by `critic` · K=2"]
    warnings = [block for block in blocks if block.startswith("warning: ")]
    assert warnings == [f"warning: ScreenSpot-Pro: {SHRUNK_TEXT}"]
    assert USAGE not in text  # the console stays short: report.md has the usage


def test_a_processor_that_gave_more_image_tokens_is_named_and_an_example_may_be_absent(
    tmp_path: Path,
) -> None:
    # an in-process run counts its own image tokens: 1 of 3 answers off, 3 tokens where 2 were expected
    grown = SHRUNK | {"source": "measured", "requests": 3, "differ": 1, "ratio": 1.5, "example": None}
    in_process = {
        "backend": {"backend": "transformers", "checkpoint": "/ckpt/qwen", "transformers": "4.57.1"}
    }
    document, report = _run(in_process, None, {"osworld_g": grown})
    said = (
        "the model saw more image tokens than the preset expects in 1 of 3 proposer answers "
        "(observed/expected 1.50): the processor likely resizes with its own max_pixels/min_pixels "
        "(start it with the preset's)"
    )
    answered = "Answered by: /ckpt/qwen, in process (transformers 4.57.1)"
    assert report.splitlines()[:2] == ["Protocol: p", answered]
    assert [line for line in report.splitlines() if line.startswith("- Warning:")] == [f"- Warning: {said}"]
    page = render_report_html(document, [])
    assert _texts(page, "p", "protocol")[1:] == [answered]
    assert _texts(page, "p", "image-tokens") == [f"OSWorld-G: {said}"]
    console = console_summary(document, TITLES, tmp_path)
    assert console.split("\n\n")[0].splitlines()[:2] == ["Protocol: p", answered]
    assert [b for b in console.split("\n\n") if b.startswith("warning: ")] == [f"warning: OSWorld-G: {said}"]


def test_one_invocation_gives_its_usage_but_no_resumed_line_nor_table(tmp_path: Path) -> None:
    one = [INVOCATIONS[1] | {"restored": 0}]
    model = {
        "backend": {"backend": "openai", "base_url": "http://h:1/v1", "model": "m", "usage": {"requests": 53}}
    }
    document, report = _run(model, one, {})
    answered = "Answered by: an OpenAI-compatible server at http://h:1/v1, model m"
    assert report.splitlines()[:3] == ["Protocol: p", answered, "usage: 53 requests answered"]
    page = render_report_html(document, [])
    assert _texts(page, "p", "protocol")[1:] == [answered, "usage: 53 requests answered"]
    assert _invocation_rows(page) == []
    assert "resumed:" not in report and "resumed:" not in page
    console = console_summary(document, TITLES, tmp_path)
    assert console.split("\n\n")[0].splitlines() == ["Protocol: p", answered, "Top-1 by `critic` · K=2"]


def test_a_run_without_these_facts_shows_none_of_them(tmp_path: Path) -> None:
    document, report = _run({"model": "replay"}, None, {"screenspot_pro": AGREES})
    for word in ("Answered by", "resumed:", "usage", "Warning", "image tokens"):
        assert word not in report
    page = render_report_html(document, [])
    assert _texts(page, "p", "protocol") == [_texts(page, "p", "protocol")[0]]  # the protocol line alone
    assert "image-tokens" not in page and "invocations" not in page and "Answered by" not in page
    console = console_summary(document, TITLES, tmp_path)
    assert console.split("\n\n")[0].splitlines() == ["Protocol: p", "Top-1 by `critic` · K=2"]
    assert not [block for block in console.split("\n\n") if block.startswith("warning")]


def test_a_killed_invocation_without_an_end_or_a_window_is_a_row_of_dashes() -> None:
    killed = {"started": "t0", "ended": None, "end": "killed", "restored": 0, "samples": 2, "counters": {}}
    document, report = _run(ENDPOINT, [killed, INVOCATIONS[1]], {})
    resumed = "resumed: 2 invocations (#1 killed, 2 samples; #2 finished, 1 samples)"
    assert report.splitlines()[2] == resumed
    page = render_report_html(document, [])
    assert _texts(page, "p", "invocations")[0] == resumed
    assert _invocation_rows(page) == [["#1", "t0", "–", "killed", "2", "–", "–"], INVOCATION_ROWS[1]]
