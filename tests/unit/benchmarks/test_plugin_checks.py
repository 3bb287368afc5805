"""check_benchmark: a plugin benchmark's averages and tables may only name its own label keys."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from gge.benchmarks.base import Average, Benchmark, BenchmarkOptions, LoadedBenchmark, TableSpec
from gge.benchmarks.plugins import check_benchmark
from gge.errors import GgeError


class _Bench(Benchmark):
    """A valid benchmark over label keys ``split`` and ``kind`` (each test changes one attribute)."""

    name = "my_bench"
    title = "My Bench"
    directory = "my_bench"
    label_keys: ClassVar[tuple[str, ...]] = ("split", "kind")
    tables: ClassVar[tuple[TableSpec, ...]] = (TableSpec("T", rows="split", cols="kind"),)

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


def test_a_valid_benchmark_passes() -> None:
    check_benchmark(_Bench(), "my_bench")  # the baseline the refusals below differ from by one attribute


def test_the_official_average_over_an_unknown_key_is_refused() -> None:
    class BadOfficial(_Bench):
        official = Average("macro_x", ("nope",))

    with pytest.raises(GgeError) as e:
        check_benchmark(BadOfficial(), "my_bench")
    assert str(e.value) == (
        "BadOfficial: average 'macro_x' is over ['nope'], which are not in label_keys ('split', 'kind')"
    )


def test_an_extra_average_over_an_unknown_key_is_refused() -> None:
    class BadExtra(_Bench):
        extra_averages = (Average("macro_split", ("split",)), Average("macro_y", ("kind", "nope")))

    with pytest.raises(GgeError, match=r"average 'macro_y' is over \['nope'\]"):
        check_benchmark(BadExtra(), "my_bench")


def test_a_tables_unknown_column_key_is_refused() -> None:
    class BadCols(_Bench):
        tables = (TableSpec("T", rows="split", cols="nope"),)

    with pytest.raises(GgeError) as e:
        check_benchmark(BadCols(), "my_bench")
    assert str(e.value) == "BadCols: table 'T' uses ['nope'], which are not in label_keys ('split', 'kind')"


def test_a_tables_unknown_row_key_is_refused() -> None:
    class BadRows(_Bench):
        tables = (TableSpec("T", rows="nope"),)

    with pytest.raises(GgeError, match=r"table 'T' uses \['nope'\]"):
        check_benchmark(BadRows(), "my_bench")
