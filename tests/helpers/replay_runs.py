"""Replay files written by hand and eval runs over them (the tests of replay's rules through a run)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from gge.benchmarks import get_benchmark
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Sample


def load_samples(demo: Path, name: str) -> list[Sample]:
    """A benchmark's samples in the demo suite, read by its loader."""
    bench = get_benchmark(name)
    return bench.load(demo / bench.directory, bench.options_type()).samples


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a file."""
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    """``records`` as a JSON-lines file at ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def replay_run(
    demo: Path, predictions: Path, out: Path, *extra: str, buf: io.StringIO | None = None
) -> dict[str, Any]:
    """``python eval.py`` replaying ``predictions`` over the demo suite into ``out``."""
    args = [f"data_root={demo}", f"model.predictions={predictions}", f"output_dir={out}", *extra]
    return run(parse_args(args), out=buf if buf is not None else io.StringIO())
