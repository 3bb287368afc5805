"""The commands the README and docs/ mark as running offline run, as written, from the clone's root.

A page marks a ``bash`` block with the line :data:`MARKER` just above it: every command of that block
(a ``python eval.py`` or ``gge`` command that needs no network, no weights and no placeholder path: help
texts, dry runs on the demo suite) must exit 0 when run from the clone's root with the Python running
the tests. The demo suite is generated into a temporary ``GGE_CACHE``, and what the commands write
under ``outputs/`` is removed afterwards (only entries that were not there before). Together they took
5 s on the 2-core development machine, most of it generating the demo suite once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

pytestmark = pytest.mark.slow

MARKER = "<!-- runs offline: tests/integration/readme/test_docs_commands.py -->"
"""The line that marks the next fenced block as commands that run offline."""
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""The Markdown files searched for marked blocks."""
MIN_COMMANDS = 6
"""At least this many marked commands (the README's two, options.md's two, models.md's and endpoints.md's
dry runs): a marker lost in an edit fails here instead of passing with nothing to run."""


def marked_commands(page: Path) -> list[str]:
    """The commands of the blocks a page marks, each joined across its ``\\`` continuation lines.

    Args:
        page: A Markdown file.

    Returns:
        Each command as one line, comments and blank lines left out.
    """
    lines = page.read_text(encoding="utf-8").splitlines()
    commands: list[str] = []
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        assert i + 1 < len(lines) and lines[i + 1].startswith("```bash"), f"{page}:{i + 1}: no bash block"
        block: list[str] = []
        for body in lines[i + 2 :]:
            if body.startswith("```"):
                break
            block.append(body)
        text = re.sub(r"\\\n\s*", " ", "\n".join(block))
        commands += [c.strip() for c in text.splitlines() if c.strip() and not c.lstrip().startswith("#")]
    return commands


def all_commands() -> list[tuple[str, str]]:
    """Every marked command with the page it is on.

    Returns:
        (page relative to the root, command) in page order.
    """
    return [(p.relative_to(ROOT).as_posix(), c) for p in PAGES for c in marked_commands(p)]


def test_the_pages_mark_commands() -> None:
    found = all_commands()
    assert len(found) >= MIN_COMMANDS, found
    for page, command in found:
        assert command.startswith(("python eval.py", "gge ")), f"{page}: {command}"
        assert "/data/" not in command and "/models/" not in command, f"{page}: {command}"


def test_marked_commands_run_from_the_clone_root(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GGE_CACHE": str(tmp_path / "cache"),
        "OMP_NUM_THREADS": "1",
        # the Python running the tests is the set-up's: its python and its gge command come first
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    outputs = ROOT / "outputs"
    existed = outputs.is_dir()
    before = set(outputs.iterdir()) if existed else set()
    failed: list[str] = []
    try:
        for page, command in all_commands():
            proc = subprocess.run(
                ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
            )
            if proc.returncode != 0:
                failed.append(f"{page}: {command}\n  exit {proc.returncode}: {proc.stderr.strip()[-800:]}")
    finally:
        for entry in (set(outputs.iterdir()) if outputs.is_dir() else set()) - before:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        if not existed and outputs.is_dir() and not any(outputs.iterdir()):
            outputs.rmdir()
    assert not failed, "\n".join(failed)
