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

from PIL import Image

from gge.benchmarks.images import UNKNOWN_SIZE, image_exists, open_image
from gge.types import Sample

MAX_IDS = 5
"""Sample ids named on a problem's line at most (then how many more)."""


@dataclass(frozen=True)
class Problem:
    """One screenshot that is not as its records say.

    Attributes:
        path: The screenshot (as the records resolve it).
        kind: ``missing``, ``undecodable`` or ``wrong size``.
        detail: What was found (the decoder's error, both sizes).
        samples: The ids of the samples on it.
    """

    path: str
    kind: str
    detail: str
    samples: tuple[str, ...]

    def line(self, benchmark: str) -> str:
        """The problem as one line: ``benchmark: path: kind (detail); samples a, b, c``."""
        ids = ", ".join(self.samples[:MAX_IDS])
        more = f" and {len(self.samples) - MAX_IDS} more" if len(self.samples) > MAX_IDS else ""
        detail = f" ({self.detail})" if self.detail else ""
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
        said = ", ".join(f"{n} {kind}" for kind, n in counts.items())
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
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    def one(path: str) -> tuple[str, str] | None:
        return _check_one(path, {(int(s.image_size[0]), int(s.image_size[1])) for s in on[path]})

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths) or 1))) as pool:
        found = list(pool.map(one, paths))
    report = Report(benchmark, len(samples), len(paths))
    for path, wrong in zip(paths, found, strict=True):
        if wrong is not None:
            report.problems.append(Problem(path, wrong[0], wrong[1], tuple(s.id for s in on[path])))
    return report
