"""A small synthetic demo suite: the six benchmarks in their official layouts, plus a replay file.

The code lives in :mod:`gge.demo.suite.writers` (split into modules next).
"""

from __future__ import annotations

from gge.demo.suite.writers import OSWORLD_CATEGORIES, VERSION, cache_dir, demo_root, main, write_demo_suite

__all__ = ["OSWORLD_CATEGORIES", "VERSION", "cache_dir", "demo_root", "main", "write_demo_suite"]
