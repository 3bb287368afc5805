"""Shared pieces of the HTML pages: colours, small formatters and the page skeleton.

:mod:`gge.report.html` (the results page), :mod:`gge.report.compare_page` (the ``gge compare``
page), :mod:`gge.report.svg` (the charts) and :mod:`gge.report.gallery` (the gallery of misses) all
build on these: HTML escaping, number formatting ("–" for none), the table helper, the colours and
the ``<!DOCTYPE html>`` wrapper. The page's styles and scripts are files in ``gge/report/assets/``
(``report.css``, ``error_capture.js``, ``gallery_filter.js``, ``ready.js``), read when a page is
rendered and inlined into it, so the page stays one offline file.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
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
    "server_error": "#c2185b",
    "not_in_file": "#b8b8b8",
}
"""Colour of each outcome kind in the decomposition bars and the gallery's badges (none is close
to an overlay colour of :mod:`gge.drawing`)."""
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
_STYLES = "report.css"
_ERROR_CAPTURE = "error_capture.js"
"""The first script of every page: records uncaught errors in ``document.body.dataset.jsErrors``."""
_GALLERY_SCRIPT = "gallery_filter.js"
"""The results page's script: the gallery's filters; sets ``document.body.dataset.ready``."""
_READY_SCRIPT = "ready.js"
"""The compare page's script: it only sets ``document.body.dataset.ready``."""


def asset(name: str) -> str:
    """The text of one of the pages' asset files, ``gge/report/assets/<name>``, read now.

    Args:
        name: The file's name, e.g. ``"report.css"``.

    Returns:
        Its text (UTF-8).

    Example:
        >>> "var(--table-header)" in asset("report.css")
        True
    """
    return (resources.files("gge.report") / "assets" / name).read_text(encoding="utf-8")


def _kind_property(kind: str) -> str:
    return "--" + kind.replace("_", "-")


def kind_colour(kind: str) -> str:
    """The CSS colour of an outcome kind: its custom property (see :func:`colour_properties`).

    Args:
        kind: An outcome kind (a key of :data:`KIND_COLOURS`).

    Returns:
        ``var(--<kind>)``, or ``#555`` for a kind without a colour.

    Example:
        >>> kind_colour("critic_miss"), kind_colour("<odd>")
        ('var(--critic-miss)', '#555')
    """
    return f"var({_kind_property(kind)})" if kind in KIND_COLOURS else "#555"


def colour_properties() -> str:
    """The ``:root`` rule setting the custom properties of the colours the Python code knows.

    ``--table-header`` (:data:`TABLE_HEADER_COLOUR`), ``--gallery-bg`` (:data:`GALLERY_BACKGROUND`)
    and one per outcome kind (:data:`KIND_COLOURS`, ``--hit``, ``--critic-miss``...): the page writes
    it before ``report.css``, which uses them.

    Example:
        >>> colour_properties()[:49]
        ':root{--table-header:#1d3557;--gallery-bg:#f1ecfa'
    """
    props = {"--table-header": TABLE_HEADER_COLOUR, "--gallery-bg": GALLERY_BACKGROUND}
    props.update((_kind_property(kind), colour) for kind, colour in KIND_COLOURS.items())
    return ":root{" + "".join(f"{name}:{value};" for name, value in props.items()) + "}"


def _script(name: str) -> str:
    return f"<script>\n{asset(name)}</script>"


def _page(title: str, body: str, script: str) -> str:
    """The whole page: ``body`` inside ``<main>``, with the styles and the asset ``script`` inlined."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>\n{colour_properties()}\n{asset(_STYLES)}</style></head>\n"
        f"<body>{_script(_ERROR_CAPTURE)}\n<main>\n{body}\n</main>\n{_script(script)}\n</body></html>\n"
    )


__all__ = [
    "GALLERY_BACKGROUND",
    "KIND_COLOURS",
    "TABLE_HEADER_COLOUR",
    "asset",
    "colour_properties",
    "esc",
    "kind_colour",
]
