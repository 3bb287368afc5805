"""The ``records`` benchmark: a user's own JSONL/CSV/parquet file (STUB: being written)."""

from __future__ import annotations

from pathlib import Path

from gge.benchmarks.base import Benchmark, BenchmarkOptions, LoadedBenchmark
from gge.errors import GgeError


class RecordsBenchmark(Benchmark):
    """A user's own records (STUB)."""

    name = "records"
    title = "Records"
    directory = "records"
    label_keys = ()
    tables = ()

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Not written yet."""
        raise GgeError("records: not written yet")
