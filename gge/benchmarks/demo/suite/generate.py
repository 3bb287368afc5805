"""A small synthetic demo suite: the benchmarks in their official layouts, plus a replay file.

:func:`write_demo_suite` draws GUI-like screenshots (:mod:`gge.benchmarks.demo.screens`), writes a few
dozen samples of each benchmark exactly as FORMATS.md lays the official release out (so that gge's
loaders read them unchanged), and writes ``predictions.jsonl``: the candidates and critic scores of a
simulated proposer/critic model, in original-image pixels, for every sample of the six benchmarks (the
four added after them, :data:`~gge.benchmarks.demo.suite.writers_more.MORE_WRITERS`, have folders but no
replay lines, so that the replay file and the six folders keep their bytes). :func:`demo_root` keeps one
generated copy per generator version and seed in the user's cache.

The simulated model is fixed by the seed and tuned so that the demo tables are informative: some
candidate hits more often than the first one (Oracle@5 above first-candidate accuracy), and the critic's
top score beats the first candidate without reaching Oracle@5. Intended hits lie strictly inside their
region and intended misses clearly outside, so the expected scores (``demo_manifest.json``) are exact.

Example:
    >>> import tempfile
    >>> root = write_demo_suite(Path(tempfile.mkdtemp()) / "demo", seed=0, per_benchmark=12)
    >>> sorted(p.name for p in root.iterdir())[:3]
    ['cagui_grounding', 'demo_manifest.json', 'groundui_18k']

Command line: ``python -m gge.benchmarks.demo.suite --out DIR [--seed N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks.demo.suite import writers_sets
from gge.benchmarks.demo.suite.cases import Case, _dump
from gge.benchmarks.demo.suite.constants import (
    BENCHMARKS,
    FOLDERS,
    MAX_PER_BENCHMARK,
    MIN_PER_BENCHMARK,
    VERSION,
    K,
)
from gge.benchmarks.demo.suite.records_demo import write_records_demo
from gge.benchmarks.demo.suite.simulation import expected_scores, simulate
from gge.benchmarks.demo.suite.writers import _WRITERS
from gge.benchmarks.demo.suite.writers_more import MORE_WRITERS
from gge.benchmarks.demo.suite.writers_sets import SET_WRITERS

DEFAULT_PER_BENCHMARK = 36
"""Samples per benchmark of :func:`write_demo_suite` by default (the cached suite's)."""


def write_demo_suite(out: Path, seed: int = 0, per_benchmark: int = DEFAULT_PER_BENCHMARK) -> Path:
    """Write the demo suite: the benchmark folders in their official layouts and a replay file.

    The output depends only on ``seed`` and ``per_benchmark`` (same bytes every time). Layout under ``out``:
    ``screenspot_v2/``, ``screenspot_pro/``, ``osworld_g/`` (the official ``benchmark/`` folder),
    ``ui_vision/``, ``mmbench_gui/``, ``ui_i2e_bench/``, then ``screenspot_v1/``, ``showdown_clicks/``,
    ``cagui_grounding/``, ``venusbench_gd/``, ``groundui_1k/``, ``groundui_18k/`` and ``records/``;
    ``predictions.jsonl`` (one line per sample of the first six folders under seven benchmark names,
    OSWorld-G original and refined) and
    ``demo_manifest.json`` (counts and the expected Oracle@5 / first / top-score accuracy of the replay).

    Args:
        out: Folder to write into (created; existing files of the same names are overwritten).
        seed: Seed of every random choice.
        per_benchmark: Samples per benchmark (12 to 120).

    Returns:
        ``out``.

    Raises:
        ValueError: ``per_benchmark`` is out of range.

    Example:
        >>> import tempfile
        >>> root = write_demo_suite(Path(tempfile.mkdtemp()), per_benchmark=12)
        >>> (root / "osworld_g" / "OSWorld-G_refined.json").is_file()
        True
    """
    if not MIN_PER_BENCHMARK <= per_benchmark <= MAX_PER_BENCHMARK:
        raise ValueError(
            f"per_benchmark must be in [{MIN_PER_BENCHMARK}, {MAX_PER_BENCHMARK}], got {per_benchmark}"
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cases: dict[str, list[Case]] = {}
    for name, writer in _WRITERS:
        cases[name] = writer(out / name, seed, per_benchmark)
    cases["osworld_g_refined"] = cases["osworld_g"]
    # The benchmarks added after the six: their own random streams, written after the six (whose bytes,
    # and the replay file's, must not change).
    for name, writer in (*MORE_WRITERS, *SET_WRITERS):
        writer(out / name, seed, per_benchmark)
    # The ``records`` benchmark's folder (a user's own file; no randomness), after the others.
    write_records_demo(out)
    lines: list[dict[str, Any]] = []
    manifest: dict[str, Any] = {
        "version": VERSION,
        "seed": seed,
        "per_benchmark": per_benchmark,
        "k": K,
        "benchmarks": {},
    }
    for name in BENCHMARKS:
        bench_lines = simulate(name, cases[name], seed)
        lines += bench_lines
        manifest["benchmarks"][name] = {"root": FOLDERS[name], **expected_scores(cases[name], bench_lines)}
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    (out / "predictions.jsonl").write_text(text, encoding="utf-8")
    _dump(out / "demo_manifest.json", manifest)
    return out


def cache_dir() -> Path:
    """The gge cache folder: ``$GGE_CACHE``, else ``~/.cache/gge``."""
    env = os.environ.get("GGE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "gge"


def demo_root(seed: int = 0) -> Path:
    """The demo suite for this generator version and seed, generated on first use.

    Generation writes into a temporary sibling folder and renames it into place, so concurrent callers
    never see a partial suite; when another process wins the race its copy is used.

    One folder whether pyarrow is installed or not (the suite's identity does not depend on it):
    without pyarrow it has no ``webclick/``; once pyarrow is installed, the first call adds that
    folder (the bytes a whole generation writes, through a temporary sibling renamed into place) and
    leaves every other file as it was, so a run into an existing output folder resumes as the same run.

    Args:
        seed: Suite seed.

    Returns:
        ``<cache>/demo-v<VERSION>-seed<seed>``.

    Example:
        >>> root = demo_root()  # doctest: +SKIP
        >>> (root / "predictions.jsonl").is_file()  # doctest: +SKIP
        True
    """
    final = cache_dir() / f"demo-v{VERSION}-seed{seed}"
    if final.is_dir():
        _add_webclick(final, seed)
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    _write_into_place(final, lambda tmp: write_demo_suite(tmp, seed))
    return final


def _write_into_place(final: Path, write: Callable[[Path], object]) -> None:
    """``write`` a folder into a temporary sibling of ``final``, then rename it to ``final``.

    No caller sees a partial folder; where a concurrent caller's rename wins the race, its folder is
    kept and this one dropped.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        write(tmp)
        try:
            os.replace(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _add_webclick(root: Path, seed: int) -> None:
    """Write ``root/webclick`` where pyarrow is installed now and the suite was written without it.

    The folder is drawn from its own random stream, so it holds the bytes a whole generation of the
    suite writes (``per_benchmark`` the default, as :func:`demo_root` generates); it is written into a
    temporary folder beside it and renamed into place (a concurrent caller's copy wins a race).
    """
    target = root / "webclick"
    if target.is_dir() or not writers_sets.pyarrow_installed():
        return
    _write_into_place(target, lambda tmp: dict(SET_WRITERS)["webclick"](tmp, seed, DEFAULT_PER_BENCHMARK))


def _files(root: Path) -> Iterable[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m gge.benchmarks.demo.suite --out DIR [--seed N] [--per-benchmark N]``.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        Exit code 0.
    """
    parser = argparse.ArgumentParser(
        prog="python -m gge.benchmarks.demo.suite", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="folder to write the suite into")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    parser.add_argument(
        "--per-benchmark",
        type=int,
        default=DEFAULT_PER_BENCHMARK,
        help=f"samples per benchmark (default {DEFAULT_PER_BENCHMARK})",
    )
    args = parser.parse_args(argv)
    root = write_demo_suite(args.out, seed=args.seed, per_benchmark=args.per_benchmark)
    files = list(_files(root))
    size = sum(p.stat().st_size for p in files)
    print(f"wrote the gge demo suite (seed {args.seed}) to {root}: {len(files)} files, {size / 1e6:.2f} MB")
    return 0
