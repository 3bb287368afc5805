"""The house plan holds: no import runs up a floor or closes a circle, only the entry points import
gge.cli, no huge module.

The floors are DESIGN.md's, lowest first. The synthetic demo suite (``gge.benchmarks.demo``, its
``suite`` and ``screens``) writes benchmark files in their official layouts and reads nothing above the
benchmarks: it is one of them, where the run (which picks it when no ``data_root`` is given) can reach
it; ``gge.demo`` (its ``train``) drives a Lightning trainer through the callbacks and stands on theirs.
"""

from __future__ import annotations

import ast
from pathlib import Path

from paths import ROOT

GGE = ROOT / "gge"
MAX_LINES = 700  # "about 700": a file past it usually holds two ideas (DESIGN.md)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in GGE.rglob("*.py")} | {
    "gge.callbacks" + module_name(p).removeprefix("callbacks"): p for p in (ROOT / "callbacks").rglob("*.py")
}

FLOORS = {
    "gge": 0,
    "gge.types": 0,
    "gge.geometry": 0,
    "gge.errors": 0,
    "gge.documents": 0,
    "gge.drawing": 0,
    "gge.benchmarks": 1,
    "gge.scoring": 2,
    "gge.models": 3,
    "gge.report": 4,
    "gge.loggers": 4,
    "gge.run": 5,
    "gge.compare": 6,
    "gge.integrations": 6,
    "gge.demo": 6,
    "gge.callbacks": 6,
    "gge.cli": 7,
}
"""A module's floor is that of the longest name here that is it or a package above it."""


def floor(module: str) -> int:
    """The floor of a gge module."""
    owners = [name for name in FLOORS if module == name or module.startswith(name + ".")]
    return FLOORS[max(owners, key=len)]


def imported(path: Path, *, top_level_only: bool, name: str | None = None) -> set[str]:
    """The gge modules ``path`` imports (``from gge.a import b`` is gge.a.b when that is a module).

    ``top_level_only`` reads the module's own statements, outside ``if TYPE_CHECKING:``; else every
    import anywhere in it (in functions, and type-only ones too). A relative import is read against
    ``name``, the module's name (default: the one :data:`MODULES` gives its path).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = tree.body if top_level_only else list(ast.walk(tree))
    own = name if name is not None else next((m for m, p in MODULES.items() if p == path), "")
    package = own.split(".") if path.name == "__init__.py" else own.split(".")[:-1]
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("gge")}
        elif isinstance(node, ast.ImportFrom):
            base = (
                node.module or ""
                if node.level == 0
                else ".".join(
                    [*package[: len(package) - node.level + 1], *([node.module] if node.module else [])]
                )
            )
            if not base.startswith("gge"):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in MODULES else base)
    return {m for m in found if m in MODULES}


def test_a_module_graph_is_what_this_test_reads() -> None:
    """The reader sees the edges it must (else the two tests below would pass on an empty graph)."""
    assert "gge.run.settings" in imported(GGE / "run" / "standalone.py", top_level_only=True)
    assert "gge.scoring.grouping" in imported(GGE / "scoring" / "metrics.py", top_level_only=True)


def test_a_floor_is_read_from_the_longest_name() -> None:
    assert (
        floor("gge.benchmarks.demo.suite.writers"),
        floor("gge.demo.train"),
        floor("gge.documents.records"),
    ) == (
        1,
        6,
        0,
    )
    assert (floor("gge.callbacks.grounding"), floor("gge.cli.eval"), floor("gge.types")) == (6, 7, 0)


def test_no_import_runs_up_a_floor() -> None:
    """Imports inside functions count: a module may import its own floor or lower ones only."""
    up = sorted(
        f"{name} ({floor(name)}) -> {m} ({floor(m)})"
        for name, path in MODULES.items()
        for m in imported(path, top_level_only=False)
        if floor(m) > floor(name)
    )
    assert not up, f"imports that run up a floor: {up}"


def test_the_floor_test_sees_an_upward_import(tmp_path: Path) -> None:
    """The reader finds an import inside a function, a type-only one and a relative one."""
    module = tmp_path / "m.py"
    module.write_text("def f() -> None:\n    from gge.run.settings import bench_options\n", encoding="utf-8")
    assert imported(module, top_level_only=False) == {"gge.run.settings"}
    assert imported(module, top_level_only=True) == set()
    typed = tmp_path / "t.py"
    typed.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gge.cli.eval\n", encoding="utf-8"
    )
    assert imported(typed, top_level_only=False) == {"gge.cli.eval"}
    relative = tmp_path / "r.py"
    relative.write_text("from ..run import settings\nfrom . import markdown\n", encoding="utf-8")
    assert imported(relative, top_level_only=False, name="gge.report.r") == {
        "gge.run.settings",
        "gge.report.markdown",
    }
    assert "gge.callbacks.grounding" in imported(ROOT / "callbacks" / "__init__.py", top_level_only=False)


def find_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every loop a depth-first walk of ``graph`` finds, each as its nodes with the first again last.

    An edge between a package and its own submodule is no loop (Python imports the package first).
    """
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt.startswith(node + ".") or node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                circles.append([*stack[stack.index(nxt) :], nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    return circles


def test_the_circle_finder_finds_a_circle_of_two_and_of_three() -> None:
    assert find_circles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert find_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_circles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []
    assert find_circles({"p": {"p.m"}, "p.m": {"p"}}) == []  # a package and its own module


def test_no_import_circle_among_gge_modules() -> None:
    """Imports inside functions count: no two modules (or longer loops) import each other."""
    graph = {name: imported(path, top_level_only=False) - {name} for name, path in MODULES.items()}
    circles = find_circles(graph)
    assert not circles, f"import circles: {circles}"


def package(module: str) -> str:
    """The package of gge a module is in (``gge.report.gallery`` -> ``gge.report``; ``gge.drawing``)."""
    return ".".join(module.split(".")[:2])


def test_no_two_packages_of_gge_import_each_other() -> None:
    """The floor check over packages: two packages of one floor (the report and the loggers) that
    import each other make a circle the module-level checks cannot see (the report's gallery drew
    through gge.loggers, whose W&B tables stand on the report). Imports anywhere count."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        mine = package(name)
        graph.setdefault(mine, set()).update(package(m) for m in imported(path, top_level_only=False))
        graph[mine].discard(mine)
    assert "gge.report" in graph["gge.loggers"] and "gge.drawing" in graph["gge.report"]  # edges seen
    circles = find_circles(graph)
    assert not circles, f"package circles: {circles}"


def test_the_overlay_drawing_stands_on_the_value_types_only() -> None:
    """Floor 0, beside gge.types, below both its users (the report's gallery, the loggers)."""
    assert imported(GGE / "drawing.py", top_level_only=False) == {"gge.types"}
    assert floor("gge.drawing") == 0


def test_only_the_entry_points_import_gge_cli() -> None:
    offenders = {
        name
        for name, path in MODULES.items()
        if not name.startswith("gge.cli")
        and any(m == "gge.cli" or m.startswith("gge.cli.") for m in imported(path, top_level_only=False))
    }
    assert not offenders, f"library modules importing gge.cli: {sorted(offenders)}"


def test_no_library_module_is_huge() -> None:
    sizes = {name: len(p.read_text(encoding="utf-8").splitlines()) for name, p in MODULES.items()}
    big = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"
