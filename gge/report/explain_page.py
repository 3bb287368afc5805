"""The page of ``gge explain A B``: the walk from A's figure to B's, and the samples it moves drawn.

:func:`render_explain_html` renders an explain.json document
(:meth:`gge.compare.explain.Explanation.document`) as one offline page beside compare's: the A and
B files, the two figures and their difference, one row per step (the figure before and after it, its
points, the samples it turns to hits and to misses, its note), then a card per moved sample with its
screenshot, the target outlined and both sides' points drawn (1 = A's, ringed; 2 = B's), the steps
that move it and gge's verdict of each point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gge.report.html_format import _READY_SCRIPT, _count, _frac, _page, _table, esc

__all__ = ["render_explain_html"]

SHOWN = 8
"""Sample ids listed per step in the table (all of them are in explain.json)."""
CARDS = 60
"""Moved samples drawn as cards at most, in sample order (explain.json lists them all)."""


def _points(value: Any) -> str:
    v = float(value)
    v = v if abs(v) >= 0.005 else 0.0
    cls = "pos" if v > 0 else "neg" if v < 0 else "muted"
    return f'<span class="{cls}">{v:+.2f}</span>'


def _where(point: Any) -> str:
    if not isinstance(point, Sequence) or len(point) != 2:
        return "no point"
    return f"({_frac(point[0], 1)}, {_frac(point[1], 1)})"


def _verdict(hit: Any) -> str:
    return '<span class="pos">hit</span>' if hit else '<span class="neg">miss</span>'


def _card(moved: Mapping[str, Any], thumb: tuple[str, tuple[int, int]] | None, a: str, b: str) -> str:
    sid = esc(moved.get("id"))
    if thumb is not None and thumb[0].startswith("data:image/"):
        (w, h) = thumb[1]
        img = (
            f'<img src="{esc(thumb[0])}" width="{int(w)}" height="{int(h)}" '
            f"alt=\"screenshot of {sid}: the target, 1 = {esc(a)}'s point, 2 = {esc(b)}'s\">"
        )
    else:
        img = '<div class="noimg">screenshot unavailable</div>'
    steps = "".join(f"<li>{esc(step)}</li>" for step in moved.get("steps") or [])
    return (
        f'<figure class="card" data-id="{sid}">{img}<figcaption>'
        f'<div class="meta"><code>{sid}</code></div>'
        f'<div class="pick">1 = {esc(a)}: {_where(moved.get("a_point"))} {_verdict(moved.get("a_hit"))} · '
        f"2 = {esc(b)}: {_where(moved.get('b_point'))} {_verdict(moved.get('b_hit'))}</div>"
        f'<ul class="steps">{steps}</ul></figcaption></figure>'
    )


def render_explain_html(
    document: Mapping[str, Any],
    thumbs: Mapping[str, tuple[str, tuple[int, int]]],
    labels: tuple[str, str] = ("A", "B"),
) -> str:
    """The explain page (module docstring).

    Args:
        document: An explain.json document.
        thumbs: Sample id -> its drawn screenshot (a JPEG ``data:`` URI and its size); of the first
            :data:`CARDS` moved samples, one without it gets a card saying its screenshot is
            unavailable; the rest are counted.
        labels: How the page names A and B.

    Returns:
        The HTML page.

    Example:
        >>> doc = {"benchmark": "b", "samples": 4, "official": "micro", "a_figure": 50.0, "b_figure": 75.0,
        ...        "a_file": "a.jsonl", "b_file": "runs/b", "total": 25.0,
        ...        "steps": [{"name": "answer", "from": 50.0, "to": 75.0, "points": 25.0, "to_hit": ["3"],
        ...        "to_miss": [], "note": ""}], "moved": [{"id": "3", "steps": ["answer: to hit"],
        ...        "a_point": [1.0, 1.0], "b_point": [5.0, 5.0], "a_hit": False, "b_hit": True}]}
        >>> page = render_explain_html(doc, {})
        >>> '<span class="pos">+25.00</span>' in page, "screenshot unavailable" in page
        (True, True)
        >>> "<td>50.00</td><td>75.00</td>" in page, "A: <code>a.jsonl</code>" in page
        (True, True)
    """
    a, b = labels
    title = f"gge explain — {a} → {b}: {document.get('benchmark')}"
    diff = float(document["b_figure"]) - float(document["a_figure"])
    files = (
        f'<p class="protocol">{esc(a)}: <code>{esc(document["a_file"])}</code> · '
        f"{esc(b)}: <code>{esc(document['b_file'])}</code></p>"
        if document.get("a_file") is not None and document.get("b_file") is not None
        else ""
    )
    head = (
        f"<header><h1>{esc(title)}</h1>{files}"
        f'<p class="protocol">{_count(document.get("samples"))} samples · official rule '
        f"{esc(document.get('official', 'micro'))} · {esc(a)} {float(document['a_figure']):.2f} · "
        f"{esc(b)} {float(document['b_figure']):.2f} · difference {_points(diff)} points, the steps' sum "
        f"{_points(document['total'])}</p></header>"
    )
    rows = []
    for step in document.get("steps") or []:
        moved = [*step.get("to_hit", []), *step.get("to_miss", [])]
        if not (float(step["points"]) or moved or step.get("note")):
            continue
        shown = ", ".join(esc(i) for i in moved[:SHOWN]) + (" …" if len(moved) > SHOWN else "")
        rows.append(
            [
                esc(step["name"]),
                f"{float(step['from']):.2f}",
                f"{float(step['to']):.2f}",
                _points(step["points"]),
                _count(len(step.get("to_hit", []))),
                _count(len(step.get("to_miss", []))),
                shown + (f' <span class="muted">{esc(step["note"])}</span>' if step.get("note") else ""),
            ]
        )
    table = _table(["step", "from", "to", "points", "to hit", "to miss", "samples"], rows)
    moved = document.get("moved") or []
    cards = "".join(_card(m, thumbs.get(str(m.get("id"))), a, b) for m in moved[:CARDS])
    more = (
        f'<p class="muted">and {_count(len(moved) - CARDS)} more, listed in explain.json</p>'
        if len(moved) > CARDS
        else ""
    )
    gallery = (
        f'<section id="gallery"><h2>The samples the steps move ({_count(len(moved))})</h2>'
        f"<p class=\"muted\">the target outlined; 1 = {esc(a)}'s point (ringed), 2 = {esc(b)}'s point</p>"
        f'<div class="cards">{cards}</div>{more}</section>'
        if moved
        else '<p class="muted">No step moves a sample.</p>'
    )
    body = f'{head}<section id="summary"><h2>The walk</h2>{table}</section>{gallery}'
    return _page(title, body, _READY_SCRIPT)
