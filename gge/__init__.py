"""gge: a GUI-grounding evaluator for proposer/critic models (Oracle@K and Top-1).

The top-level ``callbacks/`` and ``configs/`` folders ship as ``gge.callbacks`` and ``gge.configs``
(``pyproject.toml``'s ``package-dir``). Run from a clone's root (``python eval.py``, a script or
``python -c`` there), Python imports this ``gge/`` folder, not the installed copy, and that folder
holds neither: :class:`_SourceTreeFinder` maps both names onto the clone's folders, as the installed
wheel does. It is consulted last, so an installed or editable copy is found first.

Example:
    >>> from gge.types import Box
    >>> Box(0, 0, 10, 10).contains(10, 10)
    True
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__version__ = "0.2.0"

# gge.<name> -> the source tree's folder that pyproject's package-dir installs under that name
_PACKAGE_DIR = {"gge.callbacks": "callbacks", "gge.configs": "configs"}


class _SourceTreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``gge.callbacks`` / ``gge.configs`` in the source tree beside this ``gge/`` folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        folder = _PACKAGE_DIR.get(fullname)
        if folder is None:
            return None
        init = self.root / folder / "__init__.py"
        if not init.is_file():
            return None
        return importlib.util.spec_from_file_location(
            fullname, init, submodule_search_locations=[str(init.parent)]
        )


def _source_root() -> Path | None:
    """The clone's root when this ``gge/`` is a source tree's (``pyproject.toml`` beside it), else None."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "callbacks").is_dir() else None


_root = _source_root()
if _root is not None and not any(isinstance(f, _SourceTreeFinder) for f in sys.meta_path):
    sys.meta_path.append(_SourceTreeFinder(_root))
