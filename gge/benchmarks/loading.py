"""The one loader of a benchmark set: roots, options, ``max_samples`` and the screenshot check.

Every caller that reads benchmarks (``eval.py``, the trainer callbacks'
:class:`~gge.run.online.OnlineEvaluator`, ``gge export verl``, and ``gge watch`` through eval) reads
them through :func:`load_benchmarks`, so a benchmark's root, its options (``source``: the release
layout or a Hub copy, :mod:`gge.benchmarks.hub`) and the first-``max_samples`` cut mean the same
everywhere.

Example:
    >>> import tempfile
    >>> from gge.benchmarks.demo import write_demo_suite
    >>> root = write_demo_suite(Path(tempfile.mkdtemp()), per_benchmark=12)
    >>> loaded = load_benchmarks(["osworld_g"], root, max_samples=1)
    >>> [len(v) for v in loaded.samples.values()], loaded.subset()["benchmarks"]["osworld_g"]["total"]
    ([1], 12)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import Benchmark, BenchmarkOptions, LoadedBenchmark
from gge.benchmarks.hub import load_source
from gge.benchmarks.images import image_exists
from gge.documents.results import COPY_SOURCES
from gge.errors import GgeError
from gge.types import Sample


@dataclass(frozen=True)
class BenchmarkSet:
    """The benchmarks of one run, what each loaded, and the samples it evaluates.

    Attributes:
        benchmarks: The benchmarks by name, in the run's order.
        loads: What each benchmark's files held (all its samples and the load summary).
        samples: The samples evaluated per benchmark (the first ``max_samples``, or all).
        roots: The folder each benchmark was read from.
        max_samples: The cut applied, or None.
    """

    benchmarks: dict[str, Benchmark]
    loads: dict[str, LoadedBenchmark]
    samples: dict[str, list[Sample]]
    roots: dict[str, Path]
    max_samples: int | None = None

    def subset(self) -> dict[str, Any] | None:
        """results.json ``subset``: None when every benchmark ran whole (see :func:`subset_record`)."""
        return subset_record(self.max_samples, self.loads, self.samples)

    def titles(self) -> dict[str, str]:
        """Each benchmark's display title, by name."""
        return {name: b.title for name, b in self.benchmarks.items()}

    def by_key(self) -> dict[tuple[str, str], Sample]:
        """The evaluated samples by ``(benchmark, id)``."""
        return {(s.benchmark, s.id): s for group in self.samples.values() for s in group}


def benchmark_root(bench: Benchmark, data_root: Path | None, options: BenchmarkOptions) -> Path:
    """Where ``bench`` is read from: its ``root`` option, else ``data_root/<directory>``.

    Args:
        bench: The benchmark.
        data_root: The folder holding every benchmark's folder (None: the option must be set).
        options: The benchmark's options.

    Returns:
        The benchmark's folder.

    Raises:
        GgeError: Neither is set.
    """
    if options.root:
        return Path(options.root)
    if data_root is None:
        raise GgeError(f"{bench.name}: no data_root and no bench.{bench.name}.root: where are its files?")
    return Path(data_root) / bench.directory


def load_benchmarks(
    names: Sequence[str],
    data_root: Path | None,
    options: Mapping[str, BenchmarkOptions] | None = None,
    *,
    max_samples: int | None = None,
    out: TextIO | None = None,
) -> BenchmarkSet:
    """Read every named benchmark from its root, with its options, cut to its first ``max_samples``.

    Args:
        names: Benchmark names, in the order the run reports them.
        data_root: The folder holding each benchmark's folder (``<data_root>/<directory>``).
        options: Per benchmark, its options (default: the benchmark's defaults); ``root`` overrides
            ``data_root``; ``source`` picks the release layout or a Hub copy (:mod:`gge.benchmarks.hub`).
        max_samples: Evaluate only the first N samples of each benchmark (None: all).
        out: Where to print one line per benchmark (its count, root and odd boxes), or None.

    Returns:
        The benchmark set.

    Raises:
        GgeError: An unknown name, or a benchmark's files are unreadable (naming the file and record).
    """
    benches: dict[str, Benchmark] = {}
    loads: dict[str, LoadedBenchmark] = {}
    samples: dict[str, list[Sample]] = {}
    roots: dict[str, Path] = {}
    for name in names:
        bench = get_benchmark(name)
        opts = (options or {}).get(name) or bench.options_type()
        bench = bench.configured(opts)
        root = benchmark_root(bench, data_root, opts)
        loaded = load_source(bench, root, opts)
        caveat = bench.headline_caveat(opts)
        if caveat is not None:
            loaded.summary["headline_caveat"] = caveat
        if out is not None:
            n_odd = loaded.summary["degenerate_boxes"]
            odd = f" ({n_odd} degenerate boxes kept as released)" if n_odd else ""
            note = copy_note(loaded)
            print(f"{name}: {len(loaded.samples)} samples from {loaded.root}{odd}{note}", file=out)
            if caveat is not None:
                print(f"  {name}: not official: {caveat}", file=out)
            if not loaded.samples:
                print(f"warning: {name}: the annotation files hold no samples", file=out)
        benches[name], loads[name], roots[name] = bench, loaded, root
        samples[name] = loaded.samples if max_samples is None else loaded.samples[:max_samples]
    return BenchmarkSet(benches, loads, samples, roots, max_samples)


def copy_note(loaded: LoadedBenchmark) -> str:
    """`` (a parquet copy ...: matches the release)`` for a load read from a Hub copy, else ``""``.

    Example:
        >>> copy_note(LoadedBenchmark("b", "/d", [], {"provenance": {"source": "release"}}))
        ''
    """
    prov = loaded.summary.get("provenance") or {}
    if prov.get("source") not in COPY_SOURCES:
        return ""
    copy = prov.get("copy") or {}
    check = prov.get("release_check") or {}
    matches = check.get("matches")
    said = {
        True: "matches the release",
        False: "DIFFERS from the release",
        None: "not checked against the release",
    }
    return f" ({prov['source']} copy {copy.get('repository') or 'of unknown origin'}: {said[matches]})"


def subset_record(
    max_samples: int | None, loads: Mapping[str, LoadedBenchmark], samples: Mapping[str, Sequence[Sample]]
) -> dict[str, Any] | None:
    """results.json ``subset``: None when every benchmark ran whole, else what ``max_samples`` kept.

    Args:
        max_samples: The run's ``max_samples``.
        loads: What each benchmark loaded (all its samples).
        samples: The samples evaluated per benchmark.

    Returns:
        ``None``, or ``{"max_samples": N, "benchmarks": {name: {"evaluated": n, "total": M}}}`` (every
        benchmark of the run, cut or not).

    Example:
        >>> from gge.benchmarks.base import LoadedBenchmark
        >>> loads = {"b": LoadedBenchmark("b", "/data/b", [1, 2, 3])}
        >>> subset_record(2, loads, {"b": [1, 2]})
        {'max_samples': 2, 'benchmarks': {'b': {'evaluated': 2, 'total': 3}}}
        >>> subset_record(5, loads, {"b": [1, 2, 3]}) is None
        True
    """
    counts = {name: {"evaluated": len(samples[name]), "total": len(loads[name].samples)} for name in samples}
    if max_samples is None or all(c["evaluated"] == c["total"] for c in counts.values()):
        return None
    return {"max_samples": int(max_samples), "benchmarks": counts}


def check_images(samples: Mapping[str, Sequence[Sample]], *, strict: bool, out: TextIO) -> None:
    """List every missing screenshot at once (each file with its samples); ``strict`` stops the run.

    Args:
        samples: The samples evaluated, by benchmark.
        strict: Raise instead of warning.
        out: Where the warning goes.

    Raises:
        GgeError: ``strict`` and some screenshot is missing (every one listed).
    """
    missing: dict[str, list[str]] = {}
    for group in samples.values():
        for s in group:
            if not image_exists(s.image_path):
                missing.setdefault(s.image_path, []).append(f"{s.benchmark} {s.id}")
    if not missing:
        return
    n = sum(len(ids) for ids in missing.values())
    listed = "\n".join(f"  {path} ({', '.join(ids)})" for path, ids in missing.items())
    head = f"missing screenshots: {len(missing)} files ({n} samples"
    if strict:
        raise GgeError(f"{head}, strict_images=true):\n{listed}")
    print(
        f"warning: {head}, scored as misses and listed under image_errors; strict_images=true "
        f"stops instead):\n{listed}",
        file=out,
    )
