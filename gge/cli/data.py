"""``gge data list | fetch | check``: the benchmarks' hosts, their download, and a folder checked.

- ``list``: every benchmark with its host, the revision gge pins, its size and licence as the host
  states them, and what the data folder holds of it (fetched at which commit, or files gge did not
  fetch), with a quick look: its records read and every screenshot they name present.
- ``fetch NAME...``: each benchmark from its host into ``DIR/<name>``, laid out as gge reads it
  (:mod:`gge.benchmarks.fetch`); a rerun goes on where an interrupted one stopped.
- ``check [NAME...]``: each benchmark read as a run reads it, then every screenshot its records name
  decoded (present, decodable, of the size the records give), every file of a fetch re-hashed, and
  a release's records compared with the digests gge ships (:mod:`gge.benchmarks.check`). One line per
  problem, a summary line per benchmark; exit 0 when every benchmark checked is whole, 1 when some
  file is not, 2 when a benchmark cannot be read at all.

The data folder is ``--data-root`` / ``--to``, else the default (``$GGE_DATA``, else
``~/.cache/gge/data``): where a run with no ``data_root`` finds what was fetched.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from gge.benchmarks.hosts import ENV, MANIFEST, data_home, read_manifest
from gge.errors import GgeError

ACTIONS = ("list", "fetch", "check")


def data_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge data``.

    Returns:
        The parser.

    Example:
        >>> ns = data_parser().parse_args(["check", "groundui_1k", "--data-root", "/d"])
        >>> ns.action, ns.names, ns.data_root
        ('check', ['groundui_1k'], '/d')
    """
    p = argparse.ArgumentParser(
        prog="gge data",
        description=(
            "list: every benchmark's host, pinned revision, size and licence, and what the data folder "
            "holds of it. fetch: download benchmarks from their hosts, laid out as gge reads them "
            "(resumes an interrupted fetch). check: read each benchmark as a run does and every "
            "screenshot its records name, once each; re-hash a fetch's files; compare a release's "
            "records with gge's digests; one line per problem, a summary line per benchmark. Exit 0: "
            "every benchmark whole; 1: some file is not; 2: a benchmark cannot be read."
        ),
    )
    p.add_argument("action", choices=ACTIONS, help="what to do")
    p.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="benchmarks (check: default every benchmark with a folder under the data folder)",
    )
    p.add_argument(
        "--data-root",
        "--to",
        dest="data_root",
        default=None,
        help=f"the folder holding DIR/<name> (default: ${ENV}, else ~/.cache/gge/data)",
    )
    p.add_argument("--revision", default=None, help="fetch: a commit, branch or tag instead of gge's pin")
    p.add_argument("--workers", type=int, default=None, help="files fetched, or screenshots decoded, at once")
    return p


def _present(root: Path) -> list[str]:
    """The benchmarks whose folder is under ``root`` (their release layout or a Hub copy)."""
    from gge.benchmarks import REGISTRY, get_benchmark

    return [
        name for name in REGISTRY if name != "records" and (root / get_benchmark(name).directory).is_dir()
    ]


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


class _Progress:
    """The fetch's progress: redrawn in place on a terminal (twice a second at most), else a line a minute."""

    def __init__(self, name: str, out: TextIO) -> None:
        self.name, self.out = name, out
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.every = 0.5 if self.tty else 60.0
        self.last = time.monotonic()
        self.drawn = False

    def __call__(self, files: int, total: int, done: int, size: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every and files < total:
            return
        self.last = now
        line = f"{self.name}: {files}/{total} files, {_size(done)} of {_size(size)}"
        if self.tty:
            print(f"\r{line}\x1b[K", end="", file=self.out, flush=True)
            self.drawn = True
        elif files < total:
            print(line, file=self.out, flush=True)

    def say(self, line: str) -> None:
        if self.drawn:
            print(file=self.out)
            self.drawn = False
        print(line, file=self.out, flush=True)


def _fetch(names: Sequence[str], root: Path, revision: str | None, workers: int | None, out: TextIO) -> int:
    from gge.benchmarks import get_benchmark
    from gge.benchmarks.fetch import fetch

    benches = [get_benchmark(n) for n in names]
    if not benches:
        raise GgeError("gge data fetch: name the benchmarks to fetch (gge data list shows them)")
    if revision is not None and len(benches) > 1:
        raise GgeError("gge data fetch: --revision is one benchmark's revision: name one benchmark")
    for bench in benches:
        started = time.monotonic()
        progress = _Progress(bench.name, out)
        manifest = fetch(bench, root, revision, progress=progress, say=progress.say, workers=workers or 8)
        files = manifest["files"]
        unpacked = sum(len(u.get("files", [])) for u in manifest["unpacked"])
        more = f" and {unpacked} unpacked from {len(manifest['unpacked'])} archive(s)" if unpacked else ""
        host = bench.host
        assert host is not None
        progress.say(
            f"{bench.name}: {len(files)} files ({_size(sum(f['bytes'] for f in files))}){more} from "
            f"{host.where} at {str(manifest['commit'] or manifest['revision'])[:12]} in "
            f"{root / bench.directory} ({time.monotonic() - started:.0f} s); "
            f"check it: gge data check {bench.name}"
        )
    return 0


def _here(name: str, root: Path) -> str:
    """What the data folder holds of a benchmark, with a quick look (records read, screenshots present)."""
    from gge.benchmarks import get_benchmark
    from gge.benchmarks.images import image_exists
    from gge.benchmarks.loading import load_benchmarks

    folder = root / get_benchmark(name).directory
    if not folder.is_dir():
        return "-"
    try:
        manifest = read_manifest(folder)
    except GgeError:
        return f"{MANIFEST} unreadable: fetch again"
    if manifest is not None and not manifest.get("complete"):
        return f"fetch not finished (gge data fetch {name} goes on)"
    said = (
        f"fetched {str(manifest.get('commit') or manifest.get('revision'))[:12]}"
        if manifest
        else "present, not fetched by gge"
    )
    try:
        samples = load_benchmarks([name], root).samples[name]
    except GgeError as e:
        return f"{said}; cannot be read: {str(e)[:80]}"
    paths = {s.image_path for s in samples}
    missing = sum(1 for p in paths if not image_exists(p))
    if missing:
        return f"{said}; {missing} of {len(paths)} screenshots missing (gge data check {name})"
    return f"{said}; {len(samples)} records, every screenshot present"


def _list(root: Path, out: TextIO) -> int:
    from gge.benchmarks import REGISTRY

    rows = [("benchmark", "host", "revision", "size", "licence", f"in {root}")]
    for name, bench in REGISTRY.items():
        host = bench.host
        if host is None:
            continue
        rows.append(
            (name, host.where, host.revision_said, host.size or "?", host.licence or "?", _here(name, root))
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1], file=out)
    print(
        "fetch: gge data fetch NAME (into the folder above, or --to DIR); manual hosts: gge data fetch NAME "
        "says where",
        file=out,
    )
    return 0


def _check(names: Sequence[str], root: Path, workers: int | None, out: TextIO) -> int:
    from gge.benchmarks import get_benchmark
    from gge.benchmarks.check import check_fetched, check_records, check_screenshots
    from gge.benchmarks.loading import load_benchmarks

    names = list(names) or _present(root)
    for name in names:
        get_benchmark(name)  # an unknown name: one line naming the known ones
    if not names:
        raise GgeError(
            f"gge data check: no benchmark folder under {root} (gge data fetch NAME puts one there)"
        )
    code = 0
    for name in names:
        bench = get_benchmark(name)
        try:
            loaded = load_benchmarks([name], root)
        except GgeError as e:
            print(f"{name}: cannot be read: {e}", file=out)
            for problem in check_fetched(root / bench.directory, workers)[0]:  # what a fetch left changed
                print(problem.line(name), file=out)
            code = 2
            continue
        samples = loaded.samples[name]
        report = check_screenshots(name, samples, workers=workers)
        fetched, notes = check_fetched(loaded.roots[name], workers)
        differ, said = check_records(bench, loaded.loads[name], bench.options_type())
        report.problems.extend([*fetched, *differ])
        for problem in report.problems:
            print(problem.line(name), file=out)
        for note in (*notes, said):
            print(f"{name}: {note}", file=out)
        print(report.summary(), file=out)
        if report.problems and code == 0:
            code = 1
    return code


def data_main(argv: Sequence[str], out: TextIO | None = None) -> int:
    """``gge data list | fetch NAME... | check [NAME...]``.

    Args:
        argv: The arguments after ``gge data``.
        out: Where the lines go (default stdout).

    Returns:
        0, 1 or 2 (see the module).

    Raises:
        GgeError: A name that is no benchmark, a fetch that cannot be done (one line saying why), no
            benchmark folder to check.
    """
    out = out or sys.stdout
    ns = data_parser().parse_args(list(argv))
    root = Path(ns.data_root).expanduser() if ns.data_root else data_home()
    if ns.action == "list":
        if ns.names:
            raise GgeError("gge data list takes no names: it lists every benchmark")
        return _list(root, out)
    if ns.action == "fetch":
        return _fetch(ns.names, root, ns.revision, ns.workers, out)
    if ns.revision is not None:
        raise GgeError("gge data check: --revision is fetch's option")
    return _check(ns.names, root, ns.workers, out)
