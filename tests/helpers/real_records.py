"""The real annotation records beside the clone (``../shared/benchmarks``) and placeholder screenshots.

Tests that read the real records skip when the folder is absent (a user's clone has none). The records
carry no screenshots: :class:`Placeholders` lays one small PNG per true size, hard-linked to every path
of that size (thousands of screenshots in seconds).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from paths import ROOT
from PIL import Image

SHARED = ROOT.parent / "shared" / "benchmarks"
"""The folder of the real records (FORMATS.md and README.md there)."""


class Placeholders:
    """Lays true-size placeholder screenshots: one PNG per size, hard-linked to every path."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.by_size: dict[tuple[int, int], Path] = {}

    def lay(self, path: Path, size: Iterable[int]) -> None:
        """A placeholder of ``size`` at ``path`` (nothing when a file is there already)."""
        w, h = (int(v) for v in size)
        src = self.by_size.get((w, h))
        if src is None:
            src = self.folder / f"{w}x{h}.png"
            Image.new("1", (w, h)).save(src, optimize=False)
            self.by_size[(w, h)] = src
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.link(src, path)


def load_json(path: Path) -> Any:
    """A JSON file's value."""
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def link(src: Path, dst: Path) -> None:
    """A symbolic link at ``dst`` to a real annotation file."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(src, dst)
