"""The cached demo suite's identity does not depend on whether pyarrow (``gge[hub]``) is installed.

Without pyarrow the suite has no ``webclick/`` folder; installing it later adds that folder to the
same cache folder, the bytes a whole generation writes, and leaves every other file as it was: a run
into an existing output folder resumes as the same run. pyarrow's presence is simulated by the one
detection the writers consult (:func:`gge.benchmarks.demo.suite.writers_sets.pyarrow_installed`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from gge.benchmarks import DEFAULT_BENCHMARKS, get_benchmark
from gge.benchmarks.demo import demo_root
from gge.benchmarks.demo.suite import VERSION, writers_sets
from gge.run.runstate import samples_digest
from gge.run.settings import parse_args
from gge.run.standalone import run


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("GGE_CACHE", str(tmp_path / "cache"))
    yield tmp_path / "cache"


def hashes(base: Path) -> dict[str, str]:
    return {
        p.relative_to(base).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }


def records_digests(root: Path) -> dict[str, str]:
    """Each default benchmark's samples digest, read from the suite's folder."""
    out = {}
    for name in DEFAULT_BENCHMARKS:
        bench = get_benchmark(name)
        out[name] = samples_digest(bench.load(root / bench.directory, bench.options_type()).samples)
    return out


def test_installing_pyarrow_adds_webclick_to_the_same_folder_and_changes_no_record(
    cache: Path, demo_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")  # the whole generation compared with writes webclick/
    monkeypatch.setattr(writers_sets, "pyarrow_installed", lambda: False)
    without = demo_root(seed=0)
    assert without == cache / f"demo-v{VERSION}-seed0"
    assert not (without / "webclick").exists()
    before, digests = hashes(without), records_digests(without)
    monkeypatch.setattr(writers_sets, "pyarrow_installed", lambda: True)
    with_hub = demo_root(seed=0)
    assert with_hub == without  # one folder
    after = hashes(with_hub)
    assert {k: v for k, v in after.items() if not k.startswith("webclick/")} == before  # nothing else moved
    assert records_digests(with_hub) == digests
    # the suite completed later is the suite generated whole (the session's, pyarrow installed)
    assert after == hashes(demo_suite)
    assert sorted(p.name for p in cache.iterdir()) == [without.name]
    assert not [p for p in with_hub.iterdir() if p.name.startswith(".")]  # no temporary folder left
    assert demo_root(seed=0) == with_hub and hashes(with_hub) == after  # added once


def test_a_demo_run_resumes_into_its_folder_after_pyarrow_is_installed(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")  # the rerun writes webclick/'s parquet
    args = [f"output_dir={tmp_path / 'o'}", "max_samples=3"]
    monkeypatch.setattr(writers_sets, "pyarrow_installed", lambda: False)
    first = run(parse_args(args), out=io.StringIO())
    monkeypatch.setattr(writers_sets, "pyarrow_installed", lambda: True)
    out = io.StringIO()
    again = run(parse_args([*args, "resume=true"]), out=out)
    assert (demo_root(seed=0) / "webclick").is_dir()
    n = 3 * len(DEFAULT_BENCHMARKS)  # every sample of the first run, none evaluated again
    assert f"resuming: {n} samples already finished" in out.getvalue()
    for name in DEFAULT_BENCHMARKS:
        a, b = first["benchmarks"][name], again["benchmarks"][name]
        assert (b["samples"], b["top1"], b["samples_digest"]) == (
            a["samples"],
            a["top1"],
            a["samples_digest"],
        )
