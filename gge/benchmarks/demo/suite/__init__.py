"""A small synthetic demo suite: the benchmarks in their official layouts, plus a replay file.

Modules: :mod:`~gge.benchmarks.demo.suite.constants`, :mod:`~gge.benchmarks.demo.suite.instructions`
(instruction texts), :mod:`~gge.benchmarks.demo.suite.cases` (the written sample and the writers'
helpers), :mod:`~gge.benchmarks.demo.suite.writers` (the six benchmark writers),
:mod:`~gge.benchmarks.demo.suite.writers_more` (the four added after them),
:mod:`~gge.benchmarks.demo.suite.simulation` (the simulated proposer/critic) and
:mod:`~gge.benchmarks.demo.suite.generate` (:func:`write_demo_suite`, :func:`demo_root` and the command
line, ``python -m gge.benchmarks.demo.suite``).
"""

from __future__ import annotations

from gge.benchmarks.demo.suite.cases import Case
from gge.benchmarks.demo.suite.constants import (
    BENCHMARKS,
    FOLDERS,
    MAX_PER_BENCHMARK,
    MIN_PER_BENCHMARK,
    VERSION,
    K,
    Point,
)
from gge.benchmarks.demo.suite.generate import cache_dir, demo_root, main, write_demo_suite
from gge.benchmarks.demo.suite.instructions import (
    FUNCTION,
    KIND_CN,
    KIND_WORD,
    basic_instruction,
    chinese_instruction,
    describe,
    functional_instruction,
    instruction,
    spatial_instruction,
)
from gge.benchmarks.demo.suite.simulation import (
    DIFFICULTY,
    FORMAT_ERROR_RATE,
    Difficulty,
    expected_scores,
    official_hit,
    simulate,
)
from gge.benchmarks.demo.suite.writers import OSWORLD_CATEGORIES, UI_VISION_CATEGORIES, UI_VISION_SETTINGS

__all__ = [
    "BENCHMARKS",
    "DIFFICULTY",
    "FOLDERS",
    "FORMAT_ERROR_RATE",
    "FUNCTION",
    "KIND_CN",
    "KIND_WORD",
    "MAX_PER_BENCHMARK",
    "MIN_PER_BENCHMARK",
    "OSWORLD_CATEGORIES",
    "UI_VISION_CATEGORIES",
    "UI_VISION_SETTINGS",
    "VERSION",
    "Case",
    "Difficulty",
    "K",
    "Point",
    "basic_instruction",
    "cache_dir",
    "chinese_instruction",
    "demo_root",
    "describe",
    "expected_scores",
    "functional_instruction",
    "instruction",
    "main",
    "official_hit",
    "simulate",
    "spatial_instruction",
    "write_demo_suite",
]
