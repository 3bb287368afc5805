"""The overlay drawing sits below the report and the loggers, and no two of gge's packages import
each other (issue "Nothing silently wrong, round three", item 8).

The report and the loggers share a floor (DESIGN.md, "Layout"), and the loggers stand on the report
(W&B's cost tables are the report's): the report's gallery drawing through :mod:`gge.loggers` closed
a circle between the two packages that the module-level floor check cannot see.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from paths import ROOT

import gge.drawing
import gge.loggers.wandb
import gge.report.gallery

GGE = ROOT / "gge"


def module_name(path: Path) -> str:
    """``gge/report/gallery.py`` -> ``gge.report.gallery`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in GGE.rglob("*.py")}


def imported(path: Path) -> set[str]:
    """The gge modules ``path`` imports anywhere (in functions, and type-only imports too).

    ``from gge.a import b`` is ``gge.a.b`` where that is a module, else ``gge.a``.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                for a in node.names
            }
    return {m for m in found if m in MODULES}


def package(module: str) -> str:
    """The package of gge a module belongs to: ``gge.report.gallery`` -> ``gge.report``;
    a module directly under gge is its own (``gge.drawing``)."""
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, set[str]]:
    """Which of gge's packages each imports (itself left out)."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        mine = package(name)
        graph.setdefault(mine, set()).update(package(m) for m in imported(path) if package(m) != mine)
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every loop a depth-first walk finds (each as its nodes, the first again at the end)."""
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return found


def test_the_reader_sees_the_edges_it_must() -> None:
    """Else the checks below would pass on an empty graph."""
    assert "gge.report.cost_tables" in imported(GGE / "loggers" / "wandb.py")
    assert "gge.report.markdown" in imported(GGE / "loggers" / "standalone.py")
    assert "gge.drawing" in imported(GGE / "report" / "gallery.py")
    graph = package_graph()
    assert "gge.report" in graph["gge.loggers"] and "gge.drawing" in graph["gge.report"]


def test_the_circle_finder_finds_a_circle_of_two_and_of_three() -> None:
    assert circles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_report_module_imports_the_loggers() -> None:
    """The loggers stand on the report (their cost tables are the report's), not the other way."""
    up = sorted(
        f"{name} -> {m}"
        for name, path in MODULES.items()
        if package(name) == "gge.report"
        for m in imported(path)
        if package(m) == "gge.loggers"
    )
    assert up == []


def test_no_two_packages_of_gge_import_each_other() -> None:
    """The floor check over packages: a circle between two packages of one floor is a floor too few."""
    assert circles(package_graph()) == []


def test_the_drawing_stands_on_the_value_types_only() -> None:
    """Floor 0, beside gge.types: nothing of the benchmarks, scoring, report or loggers."""
    assert imported(GGE / "drawing.py") == {"gge.types"}


def test_the_gallery_and_the_wandb_tables_draw_with_the_one_drawing() -> None:
    assert gge.report.gallery.draw_overlay is gge.drawing.draw_overlay
    assert gge.report.gallery.pick_rank is gge.loggers.wandb.pick_rank is gge.drawing.pick_rank
    assert gge.loggers.wandb.target_thumbnail is gge.drawing.target_thumbnail
