"""Where the tests find the repository: its root, and the test data kept beside the tests."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # tests/helpers/paths.py -> the repository's root
DATA = ROOT / "tests" / "data"
