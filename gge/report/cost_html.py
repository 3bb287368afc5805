"""report.html's cost, refine and budget sections, and the budget plot (Top-1 against tokens and seconds).

The tables are those of report.md (:mod:`gge.report.cost_tables`), escaped; the budget plot is two
inline SVG charts (:func:`gge.report.svg.budget_chart_svg`), "Top-1 vs tokens per sample" and "Top-1
vs seconds per sample": the critic's curve (at the critic's cost) beside the vote's (``cluster``, at
the proposer's), ``first`` faint, points the run paid for (measured or replayed) filled, derived ones
hollow, the refined point a diamond. Nothing is fetched.

Example:
    >>> html = setup_html({"cost": {"source": "measured", "hardware": "a CPU", "device": "cpu",
    ...     "backend": "demo", "dtype": None, "batch_size": 4, "batch_grouping": "image size"}})
    >>> html[:56]
    '<p class="protocol setup">Costs: measured on a CPU (cpu)'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gge.documents.results import BudgetCurves
from gge.report.cost_tables import (
    Axis,
    Section,
    budget_curves,
    cost_sections,
    refined_mark,
    setup_text,
)
from gge.report.html_format import TOP1_COLOUR, _table, esc
from gge.report.numbers import fmt_seconds, fmt_tokens
from gge.report.svg import budget_chart_svg

BUDGET_COLOURS = {"critic": TOP1_COLOUR, "cluster": "#d95f02", "first": "#7a7a7a"}
"""The budget plot's colour of each strategy (the critic in the Top-1 colour)."""
REFINED_COLOUR = "#2e7d32"
"""The budget plot's refined point."""

_CODE = re.compile(r"`([^`]+)`")


def _note(text: str) -> str:
    """A note's text escaped, its ``code`` spans as ``<code>``."""
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", esc(text))


def setup_html(document: Mapping[str, Any]) -> str:
    """The line under the protocol naming what the costs were measured on, or "" without ``cost``.

    The words are report.md's (:func:`gge.report.cost_tables.setup_text`).
    """
    setup = document.get("cost")
    return f'<p class="protocol setup">{esc(setup_text(setup))}</p>' if setup else ""


def section_html(section: Section) -> str:
    """One section: ``<h3>``, the table and its notes, in a ``<div data-section=...>``.

    Example:
        >>> html = section_html(Section("refine", "Refine <stage>", ["a"], [["<1>"]], ["`critic` pick"]))
        >>> "<h3>Refine &lt;stage&gt;</h3>" in html, "<td>&lt;1&gt;</td>" in html
        (True, True)
        >>> "<code>critic</code>" in html
        True
    """
    table = _table([esc(h) for h in section.header], [[esc(c) for c in row] for row in section.rows])
    notes = "".join(f'<p class="muted note">{_note(n)}</p>' for n in section.notes)
    return (
        f'<div class="cost-section" data-section="{esc(section.key)}">'
        f"<h3>{esc(section.title)}</h3>{table}{notes}</div>"
    )


_AXES: tuple[tuple[Axis, str, str], ...] = (
    ("tokens", "Top-1 vs tokens per sample", "tokens per sample"),
    ("seconds", "Top-1 vs seconds per sample", "seconds per sample"),
)


def budget_plots_html(budget: BudgetCurves, title: str) -> str:
    """The budget plot: Top-1 against tokens and against seconds per sample (an axis without costs: none).

    Args:
        budget: results.json ``budget`` of one benchmark.
        title: The benchmark's title, in the charts' accessible titles.

    Returns:
        ``<h3>`` and one ``<figure>`` per cost axis with points, or "" when neither has any.
    """
    charts = []
    for axis, heading, label in _AXES:
        curves = budget_curves(budget, axis)
        refined = refined_mark(budget, axis)
        if not curves and refined is None:
            continue
        svg = budget_chart_svg(
            curves,
            title=f"{title}: {heading}",
            x_label=label,
            x_format=fmt_tokens if axis == "tokens" else fmt_seconds,
            colours=BUDGET_COLOURS,
            refined=refined,
            refined_colour=REFINED_COLOUR,
            refined_cost=str(budget.get("refined", {}).get("cost", "measured")),
        )
        charts.append(
            f'<figure class="budget-plot" data-axis="{axis}">{svg}<figcaption class="muted">{esc(heading)}'
            "</figcaption></figure>"
        )
    if not charts:
        return ""
    return '<h3>Budget plot</h3><div class="grid">' + "".join(charts) + "</div>"


def cost_blocks(entry: Mapping[str, Any], title: str, k: int | None = None) -> list[str]:
    """The cost, refine and budget blocks of one benchmark's section (those its entry has).

    The budget block holds the budget table and, under it, the budget plot. ``k`` is the run's K
    (None: read from the entry).
    """
    blocks = []
    for section in cost_sections(entry, k):
        html = section_html(section)
        if section.key == "budget":
            html += budget_plots_html(entry["budget"], title)
        blocks.append(html)
    return blocks


__all__ = [
    "BUDGET_COLOURS",
    "REFINED_COLOUR",
    "budget_plots_html",
    "cost_blocks",
    "section_html",
    "setup_html",
]
