"""Run one-statement mutants of a gge module against chosen tests, in a private copy of the tree.

Each mutant changes one node of the module's syntax tree: a comparison operator swapped with its
neighbour (``<`` and ``<=``, ``==`` and ``!=``, ``in`` and ``not in``, ``is`` and ``is not``), ``and``
and ``or`` swapped, a ``not`` dropped, an ``if``/``while`` condition replaced by ``True`` or ``False``,
a number moved by one, ``True`` and ``False`` swapped, ``min`` and ``max`` swapped, a ``continue``,
``break`` or a bare call statement replaced by ``pass``, ``any`` and ``all`` swapped. Docstrings and
the lines under ``if TYPE_CHECKING:`` are left alone.

The tree (``git ls-files`` plus untracked files git does not ignore) is copied to a temporary folder
once; each mutant is written there, the tests run there (``python -m pytest -x -q`` with the copy
first on ``sys.path``), and the file is put back. The working tree is never touched, so mutants can
run while others edit and test it.

Usage::

    python tools/mutants.py gge/run/windowed.py --tests tests/unit/run/test_windowed.py \
        [--lines 150-310] [--sample 30 --seed 0] [--list] [--timeout 120]
    python tools/mutants.py gge/x.py --tests T --replace 'LINE:OLD:NEW'   # the audit's own mutant

Prints one line per mutant (``killed``, ``SURVIVED``, ``timeout``) and the score; exits 0.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

SWAP_CMP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
SWAP_NAMES = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclass(frozen=True)
class Mutant:
    """One change: where it is and what it does."""

    line: int
    what: str
    source: str


def _docstring_nodes(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0]))
    return found


def _skipped(tree: ast.Module) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:`` and docstrings."""
    skip: set[int] = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _edits(node: ast.AST) -> Iterator[tuple[str, Callable[[ast.AST], None]]]:
    """The one-node edits of ``node``: (description, a function applying it to a copy of the node)."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            other = SWAP_CMP.get(type(op))
            if other is not None:

                def swap(n: ast.AST, i: int = i, other: type[ast.cmpop] = other) -> None:
                    assert isinstance(n, ast.Compare)
                    n.ops[i] = other()

                yield f"{type(op).__name__} -> {other.__name__}", swap
    elif isinstance(node, ast.BoolOp):
        flip: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And

        def boolop(n: ast.AST, flip: type[ast.boolop] = flip) -> None:
            assert isinstance(n, ast.BoolOp)
            n.op = flip()

        yield f"{type(node.op).__name__.lower()} -> {flip.__name__.lower()}", boolop
    elif isinstance(node, ast.If | ast.While | ast.IfExp):
        for value in (True, False):

            def cond(n: ast.AST, value: bool = value) -> None:
                assert isinstance(n, ast.If | ast.While | ast.IfExp)
                n.test = ast.Constant(value)

            yield f"condition -> {value}", cond
    elif isinstance(node, ast.Constant) and not isinstance(node.value, str | bytes):
        if isinstance(node.value, bool):

            def negate(n: ast.AST) -> None:
                assert isinstance(n, ast.Constant)
                n.value = not n.value

            yield f"{node.value} -> {not node.value}", negate
        elif isinstance(node.value, int | float):

            def plus(n: ast.AST) -> None:
                assert isinstance(n, ast.Constant)
                if isinstance(n.value, int | float):
                    n.value = n.value + 1

            yield f"{node.value} -> {node.value + 1}", plus
    elif isinstance(node, ast.Name) and node.id in SWAP_NAMES and isinstance(node.ctx, ast.Load):

        def rename(n: ast.AST) -> None:
            assert isinstance(n, ast.Name)
            n.id = SWAP_NAMES[n.id]

        yield f"{node.id} -> {SWAP_NAMES[node.id]}", rename


def _statement_edits(node: ast.stmt) -> Iterator[str]:
    if isinstance(node, ast.Continue | ast.Break):
        yield f"{type(node).__name__.lower()} -> pass"
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        yield "call statement -> pass"


def _unary_not(node: ast.AST | None) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def mutants(source: str, lines: tuple[int, int] | None) -> list[Mutant]:
    """Every one-node mutant of ``source`` (within ``lines``, inclusive, when given)."""
    tree = ast.parse(source)
    skip = _skipped(tree)
    found: list[Mutant] = []
    nodes = [n for n in ast.walk(tree) if id(n) not in skip and hasattr(n, "lineno")]
    for index, node in enumerate(nodes):
        line = int(getattr(node, "lineno", 0))
        if lines is not None and not lines[0] <= line <= lines[1]:
            continue
        if isinstance(node, ast.arg | ast.keyword | ast.alias):
            continue
        for what, apply in _edits(node):
            found.append(Mutant(line, what, _rewrite(tree, index, nodes, apply)))
        if isinstance(node, ast.stmt):
            for what in _statement_edits(node):
                found.append(Mutant(line, what, _rewrite(tree, index, nodes, _to_pass)))
        if _unary_not(getattr(node, "test", None)):
            found.append(Mutant(line, "not dropped", _rewrite(tree, index, nodes, _drop_not)))
    return found


def _to_pass(n: ast.AST) -> None:
    raise NotImplementedError  # replaced in _rewrite


def _drop_not(n: ast.AST) -> None:
    test = getattr(n, "test")  # noqa: B009
    assert isinstance(test, ast.UnaryOp)
    n.test = test.operand  # type: ignore[attr-defined]


def _rewrite(tree: ast.Module, index: int, nodes: list[ast.AST], apply: Callable[[ast.AST], None]) -> str:
    mutated = copy.deepcopy(tree)
    skip_ids = _skipped(tree)
    walked = [n for n in ast.walk(mutated) if hasattr(n, "lineno")]
    original = [n for n in ast.walk(tree) if hasattr(n, "lineno")]
    position = {id(n): i for i, n in enumerate(original)}
    target_original = [n for n in original if id(n) not in skip_ids][index]
    target = walked[position[id(target_original)]]
    if apply is _to_pass:
        _replace_statement(mutated, target)
    else:
        apply(target)
    return ast.unparse(ast.fix_missing_locations(mutated)) + "\n"


def _replace_statement(tree: ast.AST, target: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and any(s is target for s in block):
                block[next(i for i, s in enumerate(block) if s is target)] = ast.Pass()
                return
    raise AssertionError("statement not found")


def replaced(source: str, spec: str) -> Mutant:
    """The mutant ``LINE:OLD:NEW``: ``OLD`` replaced once by ``NEW`` on line ``LINE``."""
    line_text, old, new = spec.split(":", 2)
    line = int(line_text)
    rows = source.splitlines(keepends=True)
    if old not in rows[line - 1]:
        raise SystemExit(f"mutants: line {line} does not hold {old!r}: {rows[line - 1].strip()!r}")
    rows[line - 1] = rows[line - 1].replace(old, new, 1)
    try:  # a mutant that does not parse is killed by any test: it would say nothing
        ast.parse("".join(rows))
    except SyntaxError as e:
        raise SystemExit(f"mutants: {spec!r} does not parse ({e.msg}): {rows[line - 1].strip()!r}") from None
    return Mutant(line, f"{old!r} -> {new!r}", "".join(rows))


def copy_tree(root: Path) -> Path:
    """A private copy of the files git tracks or would track under ``root``."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    target = Path(tempfile.mkdtemp(prefix="gge-mutants-"))
    for name in listed:
        if not name:
            continue
        src = root / os.fsdecode(name)
        if src.is_file():
            dst = target / os.fsdecode(name)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    return target


def run_tests(tree: Path, tests: list[str], timeout: float) -> str:
    """``killed``, ``SURVIVED`` or ``timeout`` for the tests run in ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-x",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",
                *tests,
            ],
            cwd=tree,
            env=env,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    return "SURVIVED" if done.returncode == 0 else "killed"


def main(argv: list[str] | None = None) -> int:
    """Run the mutants the arguments ask for and print each verdict and the score."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("file")
    parser.add_argument("--tests", nargs="+", required=True)
    parser.add_argument("--lines", help="FIRST-LAST, inclusive")
    parser.add_argument("--sample", type=int, help="run this many, drawn at random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replace", action="append", default=[], help="LINE:OLD:NEW (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    source = (root / args.file).read_text()
    if args.replace:
        chosen = [replaced(source, spec) for spec in args.replace]
    else:
        span = None
        if args.lines:
            first, last = args.lines.split("-")
            span = (int(first), int(last))
        chosen = mutants(source, span)
        if args.sample is not None and args.sample < len(chosen):
            chosen = sorted(random.Random(args.seed).sample(chosen, args.sample), key=lambda m: m.line)
    if args.list:
        for m in chosen:
            print(f"{args.file}:{m.line}: {m.what}")
        print(f"{len(chosen)} mutants")
        return 0
    tree = copy_tree(root)
    try:
        if not args.replace:  # the mutants are unparsed trees: the unparsed original must pass too
            (tree / args.file).write_text(ast.unparse(ast.parse(source)) + "\n")
        baseline = run_tests(tree, args.tests, args.timeout)
        (tree / args.file).write_text(source)
        if baseline != "SURVIVED":
            print(f"mutants: the tests do not pass unmutated ({baseline}); nothing run")
            return 1
        killed = 0
        for m in chosen:
            (tree / args.file).write_text(m.source)
            verdict = run_tests(tree, args.tests, args.timeout)
            (tree / args.file).write_text(source)
            killed += verdict != "SURVIVED"
            print(f"{verdict:8} {args.file}:{m.line}: {m.what}", flush=True)
        share = 100.0 * killed / len(chosen) if chosen else 100.0
        print(f"{killed}/{len(chosen)} killed ({share:.0f}%)")
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
