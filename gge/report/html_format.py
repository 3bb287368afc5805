"""Shared pieces of the HTML pages: colours, small formatters and the page skeleton.

:mod:`gge.report.html` (the results page), :mod:`gge.report.compare_page` (the ``gge compare``
page), :mod:`gge.report.svg` (the charts) and :mod:`gge.report.gallery` (the gallery of misses) all
build on these: HTML escaping, number formatting ("–" for none), the table helper, the colours, the
page's styles and scripts and the ``<!DOCTYPE html>`` wrapper.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gge.report.markdown import fmt, fmt_signed

TABLE_HEADER_COLOUR = "#1d3557"
"""Background of every table header row (the browser test looks for it in a screenshot)."""
GALLERY_BACKGROUND = "#f1ecfa"
"""Background of the gallery section (the browser test finds the gallery by it)."""
KIND_COLOURS: dict[str, str] = {
    "hit": "#1b9e77",
    "critic_miss": "#e6a100",
    "proposer_miss": "#9b2226",
    "abstained": "#7570b3",
    "format_error": "#6b6b6b",
    "image_error": "#a6761d",
}
"""Colour of each outcome kind in the decomposition bars and the gallery's badges (none is close
to an overlay colour of :mod:`gge.loggers.overlays`)."""
TOP1_COLOUR = "#3b6fb6"
ORACLE_COLOUR = "#e07b39"
PASS_COLOUR = "#5e9c5e"


# -- small formatting helpers -----------------------------------------------------------------------
def esc(value: Any) -> str:
    """HTML-escape any value (quotes included), ``None`` as an empty string.

    Example:
        >>> esc('<script>alert("x")</script>')
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    """
    return "" if value is None else html.escape(str(value), quote=True)


def _mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (tolerates hand-edited documents)."""
    return value if isinstance(value, Mapping) else {}


def _num(value: Any) -> float | None:
    """A finite float, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _pct(value: Any) -> str:
    return fmt(_num(value))


def _signed(value: Any) -> str:
    return fmt_signed(_num(value))


def _frac(value: Any, digits: int = 3) -> str:
    v = _num(value)
    return "–" if v is None else f"{v:.{digits}f}"


def _count(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return str(len(value))
    return "–" if value is None else esc(value)


def _pvalue(value: Any) -> str:
    v = _num(value)
    if v is None:
        return "–"
    return "&lt;0.001" if v < 0.001 else f"{v:.3f}"


def _ci(ci: Any, signed: bool = True) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return "–"
    f = _signed if signed else _pct
    return f"[{f(ci[0])}, {f(ci[1])}]"


def _k_of(entry: Mapping[str, Any], document_k: Any) -> int:
    """The K of a benchmark entry: the document's, else the largest ``oracle@n`` key present."""
    if isinstance(document_k, int) and not isinstance(document_k, bool) and document_k >= 1:
        return document_k
    ks = [int(key[7:]) for key in entry if key.startswith("oracle@") and key[7:].isdigit()]
    return max(ks) if ks else 1


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "") -> str:
    """An HTML table; ``header`` and cells are already-escaped HTML."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _title_of(name: str) -> str:
    from gge.benchmarks import REGISTRY

    bench = REGISTRY.get(name)
    return bench.title if bench is not None else name


def _anchor(name: str) -> str:
    return "bench-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in name)


def _one_answer(k: Any) -> bool:
    """Whether a document's (or a renderer's) K is 1: a one-answer run, shown as Top-1 only."""
    return isinstance(k, int) and not isinstance(k, bool) and k == 1


# -- page skeleton ----------------------------------------------------------------------------------
_CSS = f"""
*{{box-sizing:border-box}}
body{{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
 color:#1c1c1c;background:#fff}}
main{{max-width:1280px;margin:0 auto;padding:12px 20px 40px}}
h1{{font-size:22px;margin:6px 0}} h2{{font-size:19px;margin:18px 0 6px;border-bottom:2px solid #ddd}}
h3{{font-size:15px;margin:12px 0 4px}}
.protocol{{color:#444;margin:2px 0 8px}}
nav{{margin:6px 0 10px;font-size:13px}} nav a{{margin-right:12px;color:#2a4d8f}}
table{{border-collapse:collapse;margin:4px 0 10px;font-variant-numeric:tabular-nums}}
th{{background:{TABLE_HEADER_COLOUR};color:#fff;font-weight:600;padding:4px 9px;text-align:left}}
td{{padding:3px 9px;border-bottom:1px solid #e4e4e4}}
tbody tr:nth-child(even){{background:#f7f8fa}}
tr.mean td,tr.all td{{font-weight:600;border-top:2px solid #bbb}}
td.num,th.num{{text-align:right}}
.grid{{display:flex;flex-wrap:wrap;gap:10px 28px;align-items:flex-start}}
.grid>div{{min-width:300px}}
.headline{{font-size:15px;margin:4px 0}} .headline b{{font-size:17px}}
.muted{{color:#777}} .pos{{color:#1a7f37;font-weight:600}} .neg{{color:#b42318;font-weight:600}}
.warning{{color:#b42318}}
.banner{{background:#fdecea;border:1px solid #f3b8b2;border-radius:4px;padding:6px 10px;margin:8px 0}}
svg.chart{{display:block;font-size:11px;fill:#222;margin:4px 0 8px;max-width:100%;height:auto}}
svg .grid{{stroke:#e5e5e5}} svg .axis{{stroke:#777}} svg .label{{fill:#555}}
svg .onbar{{fill:#fff;font-weight:600}} svg .small{{font-size:10px}} svg .muted{{fill:#777}}
#gallery{{background:{GALLERY_BACKGROUND};padding:10px 14px 16px;margin-top:16px;border-radius:6px}}
#gallery h2{{border-bottom-color:#d5cbea}}
.filters{{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center;margin:6px 0 10px}}
.filters select{{font-size:13px;padding:2px 4px;max-width:320px}}
.cards{{display:grid;grid-template-columns:repeat(auto-fill,minmax(380px,1fr));gap:12px}}
.card{{background:#fff;border:1px solid #d9d2e9;border-radius:6px;padding:8px;margin:0;min-width:0}}
.card img{{display:block;max-width:100%;height:auto;margin:0 auto;border:1px solid #ccc}}
.noimg{{padding:30px 8px;text-align:center;color:#777;border:1px dashed #bbb}}
.card .meta{{margin:6px 0 2px;font-size:13px;overflow-wrap:anywhere}}
.kind{{display:inline-block;color:#fff;border-radius:3px;padding:0 6px;font-size:12px;font-weight:600}}
.instr{{margin:3px 0;font-weight:500;overflow-wrap:anywhere}}
.pick{{font-size:12px;color:#444}}
pre{{background:#f6f6f6;border:1px solid #e2e2e2;padding:5px;margin:4px 0 0;max-height:9em;overflow:auto;
 white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px}}
details{{margin:3px 0}} summary{{cursor:pointer;color:#2a4d8f}}
ul.ids{{columns:4 160px;font-size:12px;margin:4px 0}}
[hidden]{{display:none !important}}
"""

_ERROR_CAPTURE = """<script>
(function () {
  var errors = [];
  function record(message) {
    errors.push(String(message));
    if (document.body) { document.body.dataset.jsErrors = errors.join("\\n"); }
  }
  window.onerror = function (message, source, line, column) {
    record(message + " (" + line + ":" + column + ")");
    return false;
  };
  window.addEventListener("unhandledrejection", function (event) {
    record("unhandled rejection: " + event.reason);
  });
})();
</script>"""

_GALLERY_SCRIPT = """<script>
(function () {
  var root = document.getElementById("gallery");
  var cards = root ? Array.prototype.slice.call(root.querySelectorAll(".card")) : [];
  var bench = document.getElementById("filter-benchmark");
  var cell = document.getElementById("filter-cell");
  var kind = document.getElementById("filter-kind");
  var count = document.getElementById("gallery-count");
  function value(select) { return select ? select.value : ""; }
  function apply() {
    var b = value(bench), c = value(cell), k = value(kind), shown = 0;
    cards.forEach(function (card) {
      var ok = (!b || card.dataset.benchmark === b) && (!c || card.dataset.cell === c) &&
               (!k || card.dataset.kind === k);
      card.hidden = !ok;
      if (ok) { shown += 1; }
    });
    if (count) { count.textContent = "showing " + shown + " of " + cards.length; }
  }
  function benchChanged() {
    var b = value(bench);
    if (cell) {
      Array.prototype.forEach.call(cell.querySelectorAll("optgroup"), function (group) {
        group.hidden = !!b && group.dataset.benchmark !== b;
      });
      var selected = cell.options[cell.selectedIndex];
      if (b && selected && selected.value && selected.parentNode.dataset.benchmark !== b) {
        cell.value = "";
      }
    }
    apply();
  }
  if (bench) { bench.addEventListener("change", benchChanged); }
  if (cell) { cell.addEventListener("change", apply); }
  if (kind) { kind.addEventListener("change", apply); }
  benchChanged();
  document.body.dataset.ready = "1";
})();
</script>"""

_READY_SCRIPT = """<script>
(function () { document.body.dataset.ready = "1"; })();
</script>"""


def _page(title: str, body: str, script: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>{_ERROR_CAPTURE}\n<main>\n{body}\n</main>\n{script}\n</body></html>\n"
    )


__all__ = [
    "GALLERY_BACKGROUND",
    "KIND_COLOURS",
    "TABLE_HEADER_COLOUR",
    "esc",
]
