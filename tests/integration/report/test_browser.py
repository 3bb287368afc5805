"""report.html in a real headless Chromium: it loads without console errors and shows tables and gallery.

Two channels report a script error, and both are checked: the page's own ``window.onerror`` writes
``data-js-errors`` on ``<body>`` (read from ``--dump-dom``), and Chromium logs every console message
(errors and uncaught exceptions included) to stderr under ``--enable-logging=stderr`` as a line with
``:CONSOLE`` in it (``...:INFO:CONSOLE:1] "Uncaught Error: ...", source: file:///... (1)``; older builds
write ``CONSOLE(1)``). Our pages write nothing to the console, so any such line fails the test;
:func:`test_a_thrown_error_is_detected` proves both channels catch a deliberate ``throw``.

Skipped only when no Chromium binary is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from report_documents import empty_document, make_compare, make_document, make_run

from gge.drawing import HIT_COLOUR, MISS_COLOUR, TARGET_COLOUR
from gge.report.compare_page import render_compare_html
from gge.report.gallery import gallery_entries
from gge.report.html import render_report_html, write_report_html
from gge.report.html_format import GALLERY_BACKGROUND, KIND_COLOURS, TABLE_HEADER_COLOUR

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None, reason="no Chromium binary (chromium, chromium-browser or google-chrome) on PATH"
    ),
]

CONSOLE = re.compile(r":CONSOLE[:(]")
WIDTH, HEIGHT = 1280, 4000


def _chromium(url: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    args = [
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=1",
        *extra,
        url.resolve().as_uri(),
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)


def console_lines(stderr: str) -> list[str]:
    """Chromium's console messages in its stderr log (every level: our pages log nothing)."""
    return [line for line in stderr.splitlines() if CONSOLE.search(line)]


def _load(page: Path, tmp: Path) -> tuple[str, str, list[str]]:
    """``(dom, <body> tag, console lines)`` of the page after load."""
    proc = _chromium(page, tmp, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    body = re.search(r"<body[^>]*>", proc.stdout)
    assert body is not None, proc.stdout[:2000]
    return proc.stdout, body.group(0), console_lines(proc.stderr)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A report with every section and a gallery of real overlays, written to disk."""
    tmp = tmp_path_factory.mktemp("report")
    samples, results, specs = make_run(tmp)
    gallery = gallery_entries(samples, results, strategy="critic", tables=specs)
    path = write_report_html(tmp / "report.html", render_report_html(make_document(), gallery))
    return path, len(gallery)


def test_a_thrown_error_is_detected(report: tuple[Path, int], tmp_path: Path) -> None:
    page, _ = report
    broken = page.read_text(encoding="utf-8").replace(
        "</main>", "<script>throw new Error('deliberate failure 4711');</script></main>"
    )
    path = tmp_path / "broken.html"
    path.write_text(broken, encoding="utf-8")
    _, body, console = _load(path, tmp_path)
    assert "deliberate failure 4711" in body  # window.onerror -> data-js-errors
    assert 'data-js-errors="' in body
    assert any("deliberate failure 4711" in line for line in console), console  # Chromium's log
    assert 'data-ready="1"' in body  # the gallery script still ran after the error


def test_report_loads_without_errors(report: tuple[Path, int], tmp_path: Path) -> None:
    page, cards = report
    dom, body, console = _load(page, tmp_path)
    assert console == []
    assert 'data-ready="1"' in body and "data-js-errors" not in body
    assert dom.count('<figure class="card"') == cards == 9  # make_run: p0 hits, the other nine miss
    assert "<table" in dom and 'id="summary"' in dom and 'id="gallery"' in dom
    assert f"showing {cards} of {cards}" in dom  # the script's count
    # screenspot_pro: Oracle@k curve, 2 outcome charts, sizes, reliability, risk-coverage; osworld_g: curve,
    # its outcomes overall
    assert dom.count("<svg") == 6 + 2 and dom.count('src="data:image/jpeg;base64,') == 7
    # p6's file is missing but it was scored (its size known): drawn on a blank canvas (issue 37)
    assert dom.count("screenshot not present: drawn on a blank canvas of its size") == 1


def test_empty_report_and_compare_page_load_without_errors(tmp_path: Path) -> None:
    empty = write_report_html(tmp_path / "empty.html", render_report_html(empty_document(), []))
    dom, body, console = _load(empty, tmp_path)
    assert console == [] and 'data-ready="1"' in body and "data-js-errors" not in body
    assert "showing 0 of 0" in dom
    compare = write_report_html(tmp_path / "compare.html", render_compare_html(make_compare()))
    dom, body, console = _load(compare, tmp_path)
    assert console == [] and 'data-ready="1"' in body and "data-js-errors" not in body
    assert "<table" in dom and "<svg" in dom and "<details>" in dom


def _near(pixels: np.ndarray, colour: tuple[int, int, int], tol: int) -> np.ndarray:
    return np.abs(pixels - np.array(colour, dtype=np.int16)).max(axis=2) <= tol  # type: ignore[no-any-return]


def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_screenshot_shows_the_tables_and_the_gallery(report: tuple[Path, int], tmp_path: Path) -> None:
    page, _ = report
    shot = tmp_path / "shot.png"
    proc = _chromium(page, tmp_path, f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}")
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    assert console_lines(proc.stderr) == []
    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    # the gallery: rows whose left margin has the gallery's background
    gallery_rows = np.flatnonzero(_near(pixels[:, 22:30], _hex(GALLERY_BACKGROUND), 2).all(axis=1))
    assert gallery_rows.size > 300, "no gallery in the screenshot"
    top, bottom = int(gallery_rows.min()), int(gallery_rows.max())
    # tables: header rows in their colour, above the gallery (summary, official tables...)
    headers = _near(pixels[:top], _hex(TABLE_HEADER_COLOUR), 3)
    assert headers.sum() > 20_000, headers.sum()
    assert np.flatnonzero(headers.any(axis=1)).min() < 400  # the summary table is near the top
    # the overlays: the target box and the candidate discs drawn into the gallery's thumbnails
    inside = pixels[top : bottom + 1]
    target, miss, hit = (int(_near(inside, c, 45).sum()) for c in (TARGET_COLOUR, MISS_COLOUR, HIT_COLOUR))
    assert target > 500 and miss > 100 and hit > 20, (target, miss, hit)
    assert int(_near(pixels[:top], TARGET_COLOUR, 45).sum()) < 50  # nothing like it outside


_DRIVE_FILTERS = """<script>
(function () {
  var out = [];
  function pick(id, value) {
    var select = document.getElementById(id);
    select.value = value;
    select.dispatchEvent(new Event("change"));
    var shown = document.querySelectorAll("#gallery .card:not([hidden])").length;
    out.push(id + "=" + value + ":" + shown + ":" + document.getElementById("gallery-count").textContent);
  }
  pick("filter-kind", "critic_miss");
  pick("filter-kind", "");
  pick("filter-cell", "screenspot_pro · Dev / icon");
  pick("filter-benchmark", "osworld_g");
  var hiddenGroups = document.querySelectorAll("#filter-cell optgroup[hidden]").length;
  out.push("cell=" + document.getElementById("filter-cell").value + ":hiddenGroups=" + hiddenGroups);
  document.body.dataset.filterLog = out.join("|");
})();
</script>"""


def test_the_filters_filter(report: tuple[Path, int], tmp_path: Path) -> None:
    page, cards = report
    driven = page.read_text(encoding="utf-8").replace("</body>", _DRIVE_FILTERS + "</body>")
    path = tmp_path / "driven.html"
    path.write_text(driven, encoding="utf-8")
    _, body, console = _load(path, tmp_path)
    assert console == [] and "data-js-errors" not in body
    log = re.search(r'data-filter-log="([^"]*)"', body)
    assert log is not None, body
    steps = log.group(1).replace("&amp;", "&").split("|")
    assert steps == [
        f"filter-kind=critic_miss:2:showing 2 of {cards}",
        f"filter-kind=:{cards}:showing {cards} of {cards}",
        f"filter-cell=screenspot_pro · Dev / icon:4:showing 4 of {cards}",
        f"filter-benchmark=osworld_g:1:showing 1 of {cards}",  # the other benchmark's cell is reset
        "cell=:hiddenGroups=1",
    ]


_READ_COLOURS = """<script>
(function () {
  function colour(el, what) { return el ? getComputedStyle(el)[what] : "none"; }
  var out = ["th=" + colour(document.querySelector("th"), "backgroundColor"),
             "gallery=" + colour(document.getElementById("gallery"), "backgroundColor")];
  Array.prototype.forEach.call(document.querySelectorAll("#gallery .card"), function (card) {
    out.push(card.dataset.kind + "=" + colour(card.querySelector(".kind"), "backgroundColor"));
  });
  document.body.dataset.colours = out.join("|");
})();
</script>"""


def _rgb(colour: str) -> str:
    r, g, b = _hex(colour)
    return f"rgb({r}, {g}, {b})"


def test_the_custom_properties_resolve(report: tuple[Path, int], tmp_path: Path) -> None:
    """report.css's var(--table-header) and --gallery-bg, and the badges' var(--<kind>), are the colours."""
    page, cards = report
    path = tmp_path / "colours.html"
    path.write_text(
        page.read_text(encoding="utf-8").replace("</body>", _READ_COLOURS + "</body>"), encoding="utf-8"
    )
    _, body, console = _load(path, tmp_path)
    assert console == [] and "data-js-errors" not in body
    found = re.search(r'data-colours="([^"]*)"', body)
    assert found is not None, body
    steps = found.group(1).split("|")
    assert steps[:2] == [f"th={_rgb(TABLE_HEADER_COLOUR)}", f"gallery={_rgb(GALLERY_BACKGROUND)}"]
    badges = dict(step.split("=", 1) for step in steps[2:])
    assert len(steps) - 2 == cards and len(badges) >= 4, steps
    assert badges == {kind: _rgb(KIND_COLOURS[kind]) for kind in badges}


_READ_BUDGET_PLOTS = """<script>
(function () {
  var out = [];
  Array.prototype.forEach.call(document.querySelectorAll("figure.budget-plot"), function (figure) {
    var svg = figure.querySelector("svg"), box = svg.getBoundingClientRect();
    var marks = svg.querySelectorAll("circle[data-strategy]"), inside = 0, drawn = 0;
    Array.prototype.forEach.call(marks, function (mark) {
      var r = mark.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) { drawn += 1; }
      var within = r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom;
      if (within) { inside += 1; }
    });
    var refined = svg.querySelector('path[data-strategy="refined"]').getBoundingClientRect();
    var centre = function (strategy, j) {
      var r = svg.querySelector('circle[data-strategy="' + strategy + '"][data-j="' + j + '"]')
        .getBoundingClientRect();
      return r.left + r.width / 2;
    };
    // the critic's marks at its own cost: on the vote's at j = 1, to its right from j = 2
    var apart = [1, 2, 3].map(function (j) {
      var d = centre("critic", j) - centre("cluster", j);
      return Math.abs(d) < 0.5 ? "on" : (d > 0 ? "right" : "left");
    }).join(",");
    out.push([figure.dataset.axis, Math.round(box.width) + "x" + Math.round(box.height), marks.length, drawn,
              inside, refined.width > 0 ? "refined" : "none",
              svg.querySelectorAll("polyline").length, apart].join(":"));
  });
  document.body.dataset.budgetPlots = out.join("|");
})();
</script>"""


def test_the_budget_plot_renders(tmp_path: Path) -> None:
    """report.html's budget plots lay out in Chromium: every mark drawn inside its chart, no script error."""
    from cost_documents import cost_document

    page = write_report_html(tmp_path / "cost.html", render_report_html(cost_document(), []))  # type: ignore[arg-type]
    path = tmp_path / "budget.html"
    path.write_text(
        page.read_text(encoding="utf-8").replace("</body>", _READ_BUDGET_PLOTS + "</body>"), encoding="utf-8"
    )
    _, body, console = _load(path, tmp_path)
    assert console == [] and "data-js-errors" not in body and 'data-ready="1"' in body
    found = re.search(r'data-budget-plots="([^"]*)"', body)
    assert found is not None, body
    # two plots of 420 x 270 pixels; 3 strategies x 3 points each, all drawn inside; a line per strategy;
    # the critic's marks at its own cost (its judges from j = 2), right of the vote's
    assert found.group(1).split("|") == [
        f"{axis}:420x270:9:9:9:refined:3:on,right,right" for axis in ("tokens", "seconds")
    ]
