"""Benchmarks outside gge: the ``gge.benchmarks`` entry-point group (STUB: being written)."""

from __future__ import annotations

from collections.abc import Mapping

from gge.benchmarks.base import Benchmark


def entry_point_benchmarks(builtin: Mapping[str, Benchmark]) -> dict[str, Benchmark]:
    """The benchmarks installed packages register (STUB: none yet)."""
    return {}
