"""Every registered benchmark honours the same contract, checked on the demo suite."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gge.benchmarks import REGISTRY, get_benchmark
from gge.benchmarks.base import BenchmarkOptions
from gge.benchmarks.images import open_image, split_ref
from gge.types import Absent, Box, Polygon


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_benchmark_contract(name: str, demo_suite: Path) -> None:
    if name == "webclick":  # its demo folder is a parquet file: written only where pyarrow is
        pytest.importorskip("pyarrow")
    bench = get_benchmark(name)
    assert bench.name == name and bench.title and bench.directory
    assert dataclasses.is_dataclass(bench.options_type) and issubclass(bench.options_type, BenchmarkOptions)
    keys = set(bench.label_keys)
    assert set(bench.official.over) <= keys
    for avg in bench.extra_averages:
        assert set(avg.over) <= keys
    for spec in bench.tables:
        assert spec.rows in keys and (spec.cols is None or spec.cols in keys)

    loaded = bench.load(demo_suite / bench.directory, bench.options_type())
    assert loaded.name == name and loaded.samples
    ids = [s.id for s in loaded.samples]
    assert len(set(ids)) == len(ids) and all(isinstance(i, str) for i in ids)
    for s in loaded.samples:
        assert s.benchmark == name and s.instruction
        ref = split_ref(s.image_path)  # an image embedded in a file the set ships (WebClick's parquet)
        assert Path(ref[0] if ref else s.image_path).is_absolute()
        assert Path(ref[0] if ref else s.image_path).is_file()
        with open_image(s.image_path) as im:
            assert im.size == s.image_size
        assert isinstance(s.region, (Box, Polygon, Absent))
        assert set(s.labels) == keys, (s.id, set(s.labels) ^ keys)
        for v in s.labels.values():
            assert isinstance(v, str) or (isinstance(v, tuple) and all(isinstance(x, str) for x in v))
    summary = json.loads(json.dumps(loaded.summary))
    assert {"files", "records", "degenerate_boxes", "variant", "notes"} <= set(summary)
    assert summary["records"] == len(loaded.samples)
