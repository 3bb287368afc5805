"""``gge data check``: is a benchmark's folder whole? Every record's screenshot present, decodable, its size.

A download that lost files, truncated one or replaced one with a resized copy is scored silently wrong
(or as many image errors) by any harness; this reads a benchmark's folder as a run does and then every
screenshot its records name, once each:

- **missing**: no file at the path the records give;
- **undecodable**: the file is there but its pixels do not decode (a truncated download);
- **wrong size**: it decodes to another size than its records give (a resized copy: its boxes are the
  record's pixels, :func:`gge.benchmarks.images.check_size`).

One line per problem (the file, what is wrong, its samples), then one summary line per benchmark.
Screenshots are decoded on every core (Pillow decodes without the interpreter lock).

Example:
    >>> import tempfile
    >>> from PIL import Image
    >>> from gge.types import Box, Sample
    >>> folder = tempfile.mkdtemp()
    >>> Image.new("RGB", (8, 6)).save(f"{folder}/a.png")
    >>> samples = [Sample("b", "1", f"{folder}/a.png", (8, 6), "x", Box(0, 0, 1, 1)),
    ...            Sample("b", "2", f"{folder}/gone.png", (8, 6), "x", Box(0, 0, 1, 1))]
    >>> report = check_screenshots("b", samples)
    >>> [(p.kind, p.samples) for p in report.problems], report.screenshots
    ([('missing', ('2',))], 2)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from gge.benchmarks.base import Benchmark, BenchmarkOptions, LoadedBenchmark
from gge.benchmarks.hosts import covering_manifest, fetched_files, sha256_file
from gge.benchmarks.images import UNKNOWN_SIZE, image_exists, open_image
from gge.types import Sample

DEMO_MANIFEST = "demo_manifest.json"
"""The file at the root of gge's synthetic demo suite."""

MAX_IDS = 5
"""Sample ids named on a problem's line at most (then how many more)."""


@dataclass(frozen=True)
class Problem:
    """One screenshot that is not as its records say.

    Attributes:
        path: The screenshot (as the records resolve it).
        kind: ``missing``, ``undecodable`` or ``wrong size`` (a screenshot); ``changed since fetched``,
            ``fetch not finished`` (a file of a fetch); ``records differ from the release digests``.
        detail: What was found (the decoder's error, both sizes, both digests).
        samples: The ids of the samples on it (none for a file no sample names).
    """

    path: str
    kind: str
    detail: str
    samples: tuple[str, ...]

    def line(self, benchmark: str) -> str:
        """The problem as one line: ``benchmark: path: kind (detail); samples a, b, c``."""
        detail = f" ({self.detail})" if self.detail else ""
        if not self.samples:
            return f"{benchmark}: {self.path}: {self.kind}{detail}"
        ids = ", ".join(self.samples[:MAX_IDS])
        more = f" and {len(self.samples) - MAX_IDS} more" if len(self.samples) > MAX_IDS else ""
        noun = "sample" if len(self.samples) == 1 else "samples"
        return f"{benchmark}: {self.path}: {self.kind}{detail}; {noun} {ids}{more}"


@dataclass
class Report:
    """What :func:`check_screenshots` found for one benchmark.

    Attributes:
        benchmark: Its name.
        samples: Records read.
        screenshots: Distinct screenshots they name.
        problems: The screenshots that are not as their records say, in the records' order.
    """

    benchmark: str
    samples: int
    screenshots: int
    problems: list[Problem] = field(default_factory=list)

    def summary(self) -> str:
        """One line: all good, or how many screenshots of each kind of problem."""
        head = f"{self.benchmark}: {self.samples} records, {self.screenshots} screenshots"
        if not self.problems:
            return f"{head}: all present, decodable and of the size their records give"
        counts: dict[str, int] = {}
        for p in self.problems:
            counts[p.kind] = counts.get(p.kind, 0) + 1
        said = ", ".join(kind if kind.startswith("records") else f"{n} {kind}" for kind, n in counts.items())
        return f"{head}: {said}"


def _check_one(path: str, sizes: set[tuple[int, int]]) -> tuple[str, str] | None:
    """What is wrong with one screenshot (kind, detail), or None: decoded whole, of the size given."""
    if not image_exists(path):
        return "missing", ""
    try:
        with open_image(path) as im:
            im.load()
            got = (int(im.size[0]), int(im.size[1]))
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        return "undecodable", str(e) or type(e).__name__
    wanted = sizes - {UNKNOWN_SIZE}
    if wanted and got not in wanted:
        said = " or ".join(f"{w}x{h}" for w, h in sorted(wanted))
        return "wrong size", f"the file is {got[0]}x{got[1]}, its records say {said}"
    return None


def check_screenshots(benchmark: str, samples: Sequence[Sample], workers: int | None = None) -> Report:
    """Check every screenshot a benchmark's samples name, once each, decoding each whole.

    Args:
        benchmark: The benchmark's name (for the report).
        samples: Its samples, as a run loads them.
        workers: Threads decoding (default: the cores this process may use).

    Returns:
        The report: the problems in the order the records first name their screenshots.
    """
    on: dict[str, list[Sample]] = {}
    for s in samples:
        on.setdefault(s.image_path, []).append(s)
    paths = list(on)
    workers = _workers(workers)

    def one(path: str) -> tuple[str, str] | None:
        return _check_one(path, {(int(s.image_size[0]), int(s.image_size[1])) for s in on[path]})

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths) or 1))) as pool:
        found = list(pool.map(one, paths))
    report = Report(benchmark, len(samples), len(paths))
    for path, wrong in zip(paths, found, strict=True):
        if wrong is not None:
            report.problems.append(Problem(path, wrong[0], wrong[1], tuple(s.id for s in on[path])))
    return report


def _workers(workers: int | None) -> int:
    if workers is not None:
        return max(1, workers)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def check_fetched(folder: Path, workers: int | None = None) -> tuple[list[Problem], list[str]]:
    """A folder ``gge data fetch`` wrote, against its manifest: every file there, with the sha256 fetched.

    Args:
        folder: The benchmark's folder (holding :data:`~gge.benchmarks.hosts.MANIFEST`), or one below it.
        workers: Threads hashing (default: the cores).

    Returns:
        The problems (a file missing or changed since the fetch, a fetch not finished) and one note
        saying what was fetched (none when no fetch wrote the folder).
    """
    covered = covering_manifest(folder)
    if covered is None:
        return [], []
    home, manifest = covered
    name = manifest.get("benchmark", "")
    where = f"{manifest.get('kind')} {manifest.get('repository')} at {str(manifest.get('commit'))[:12]}"
    problems: list[Problem] = []
    if not manifest.get("complete"):
        problems.append(Problem(str(home), "fetch not finished", f"gge data fetch {name} goes on", ()))
    files = fetched_files(manifest)

    def one(f: dict[str, Any]) -> Problem | None:
        path = home / str(f["path"])
        if not path.is_file():
            return Problem(str(path), "missing", "fetched, since removed", ())
        got = sha256_file(path)
        if got != f.get("sha256"):
            said = f"sha256 {got[:12]}, fetched {str(f.get('sha256'))[:12]}"
            return Problem(str(path), "changed since fetched", said, ())
        return None

    with ThreadPoolExecutor(max_workers=min(_workers(workers), max(1, len(files)))) as pool:
        problems.extend(p for p in pool.map(one, files) if p is not None)
    note = f"fetched from {where} ({manifest.get('fetched_at')}): {len(files)} files hashed"
    return problems, [note]


def check_records(
    bench: Benchmark, loaded: LoadedBenchmark, options: BenchmarkOptions
) -> tuple[list[Problem], str]:
    """A release folder's records against the digests gge ships (ids, boxes, instructions, sizes, labels).

    Args:
        bench: The benchmark.
        loaded: It as a run loads it.
        options: Its options.

    Returns:
        One problem when they differ (the first differences), and a note saying what was compared.
        A Hub copy was compared when it was read; a benchmark gge has no digest of is said so.
    """
    from gge.benchmarks.hub import release_check

    provenance = loaded.summary.get("provenance") or {}
    root = Path(loaded.root)
    if any((up / DEMO_MANIFEST).is_file() for up in (root.parent, root.parent.parent)):
        return [], "records: gge's synthetic demo suite (not the release: not compared with its digests)"
    if provenance.get("source") != "release":
        check = provenance.get("release_check") or {}
        return [], f"records: a copy, checked against {check.get('checked_against')} when read"
    check = release_check(bench, loaded.summary.get("variant") or {}, loaded.samples, options)
    if check["matches"] is None:
        return [], f"records: not checked ({'; '.join(check['differences'])})"
    if check["matches"]:
        return [], f"records: as gge's release digests give them ({len(loaded.samples)} records)"
    diffs = list(check["differences"])
    more = f"; and {len(diffs) - 3} more" if len(diffs) > 3 else ""
    problem = Problem(loaded.root, "records differ from the release digests", "; ".join(diffs[:3]) + more, ())
    return [problem], "records: not those of gge's release digests"
