"""Where each benchmark is published, the folder ``gge data fetch`` fills, and what a fetch recorded.

Each benchmark's module names its host once, as :class:`Host` (``Benchmark.host``): the Hub dataset or
GitHub repository, the revision gge pins (or none: the branch head at fetch time, recorded), the files
a run reads (``fnmatch`` patterns of the repository's paths), the archives to unpack, and the size and
licence the host states. :mod:`gge.benchmarks.fetch` fetches by it, ``gge data list`` prints it.

A fetch writes :data:`MANIFEST` into the benchmark's folder: the repository, the revision asked, the
commit it resolved to, and every file with its size and sha256. A run that reads the folder records
that in ``provenance.fetched`` and refuses an annotation file whose sha256 is no longer the one fetched
(a file edited or corrupted since); ``gge data check`` re-hashes every file it lists.

The default data folder (:func:`data_home`) is ``$GGE_DATA``, else ``$XDG_CACHE_HOME/gge/data``
(``~/.cache/gge/data``): ``gge data fetch`` fills it and a run with no ``data_root`` reads a benchmark
fetched there.

Example:
    >>> Host("hub", "a/b", None, "", ("x.json",)).revision_said
    'branch head at fetch'
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gge.errors import GgeError

ENV = "GGE_DATA"
"""The environment variable naming the default data folder."""

MANIFEST = ".gge-fetch.json"
"""The file a fetch writes into the benchmark's folder."""

KINDS = ("hub", "github", "manual")
"""``Host.kind``: a Hugging Face dataset, a GitHub repository's archive, or fetched by hand."""


@dataclass(frozen=True)
class Unpack:
    """A zip a host ships screenshots in, and the folder gge reads from it.

    Attributes:
        archive: The zip's path in the repository.
        folder: The folder (under the benchmark's) the loader reads.
        also: Other names the folder has been seen under inside the zip; the shallowest folder of
            any of these names is moved to ``folder``.
    """

    archive: str
    folder: str
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Host:
    """Where a benchmark is published and how ``gge data fetch`` gets it.

    Attributes:
        kind: ``hub`` (a Hugging Face dataset repository), ``github`` (a GitHub repository, fetched as
            its archive at a commit) or ``manual`` (no automatic download: ``note`` says how).
        repository: ``owner/name`` on the host (for ``manual``, what the host is).
        revision: The full commit sha gge pins, or None: the default branch's head at fetch time,
            resolved to its commit and recorded.
        pinned_by: Where the pin comes from: ``host`` (the host's head when gge pinned it) or ``third
            party`` (other projects' scripts pin it; gge could not list the host's commits).
        files: ``fnmatch`` patterns (``*`` crosses ``/``) of the repository paths a run reads; each
            must match some file, or the fetch refuses (the layout is not the one gge reads).
        optional: Patterns fetched where the revision has them (a layout that changed between
            revisions).
        unpack: Zips in the repository and the folder gge reads from each.
        size: The download's size as the host states it ("" = not stated).
        licence: The licence as the host states it ("" = not stated).
        note: For ``manual``: how to get it; otherwise anything a user should know.
    """

    kind: str
    repository: str
    revision: str | None
    pinned_by: str
    files: tuple[str, ...]
    optional: tuple[str, ...] = ()
    unpack: tuple[Unpack, ...] = ()
    size: str = ""
    licence: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Host.kind must be one of {', '.join(KINDS)}, not {self.kind!r}")

    @property
    def revision_said(self) -> str:
        """The revision as ``gge data list`` prints it."""
        if self.kind == "manual":
            return "not versioned"
        if self.revision is None:
            return "branch head at fetch"
        return self.revision[:12] + (" (3rd party)" if self.pinned_by == "third party" else "")

    @property
    def where(self) -> str:
        """The host in one phrase: ``Hub likaixin/ScreenSpot-Pro``, ``GitHub xlang-ai/OSWorld-G``."""
        return {"hub": "Hub ", "github": "GitHub ", "manual": ""}[self.kind] + self.repository


def data_home() -> Path:
    """The default data folder: ``$GGE_DATA``, else ``$XDG_CACHE_HOME/gge/data`` (``~/.cache/gge/data``).

    Returns:
        The folder (not created).
    """
    given = os.environ.get(ENV)
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(cache) / "gge" / "data"


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The fetch manifest of a benchmark folder, or None when no fetch wrote one.

    Args:
        folder: The benchmark's folder.

    Returns:
        The manifest.

    Raises:
        GgeError: The manifest is there but cannot be read (names the file).
    """
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise GgeError(f"{path}: cannot be read ({e}): fetch the benchmark again (gge data fetch)") from e
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise GgeError(f"{path}: not a gge fetch manifest (no 'files' list): fetch the benchmark again")
    return data


def fetched_files(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every file a fetch wrote (``{path, bytes, sha256}``): those downloaded and those unpacked."""
    unpacked = [f for u in manifest.get("unpacked", []) if isinstance(u, dict) for f in u.get("files", [])]
    return [f for f in [*manifest["files"], *unpacked] if isinstance(f, dict)]


def fetched_commit(root: Path, named: str | None, option: str) -> str | None:
    """The revision a benchmark folder holds: the one named in its options, else the commit fetched.

    Args:
        root: The folder read.
        named: The revision the run's options name (``bench.<name>.revision``), or None.
        option: That option's name (for the message).

    Returns:
        The revision, or None when neither says.

    Raises:
        GgeError: The option names another commit than the one ``gge data fetch`` wrote there.
    """
    covered = covering_manifest(root)
    commit = covered[1].get("commit") if covered is not None else None
    if named and commit and named != commit:
        raise GgeError(
            f"{option}={named}, but gge data fetch wrote {root} at commit {commit}: name that commit, "
            f"or leave {option} out"
        )
    return named or (str(commit) if commit else None)


def covering_manifest(root: Path) -> tuple[Path, dict[str, Any]] | None:
    """The fetch manifest that covers ``root`` and the folder holding it: ``root`` itself or its parent.

    A loader may read a folder below the one fetched (OSWorld-G's ``benchmark/``).

    Raises:
        GgeError: The manifest is there but cannot be read (:func:`read_manifest`).
    """
    for folder in (root, root.parent):
        manifest = read_manifest(folder)
        if manifest is not None:
            return folder, manifest
    return None


def fetched_provenance(root: Path, files_read: Mapping[str, str]) -> dict[str, Any] | None:
    """``provenance.fetched`` of a folder ``gge data fetch`` wrote, checking the files a run read.

    Args:
        root: The folder the loader read.
        files_read: Absolute path -> sha256 of each annotation file the loader read.

    Returns:
        ``{kind, repository, revision, commit, fetched_at, manifest_sha256}``, or None when no fetch
        wrote the folder.

    Raises:
        GgeError: The fetch did not finish, or a file read is not the one fetched (its sha256
            differs), naming it and what to do.
    """
    covered = covering_manifest(root)
    if covered is None:
        return None
    folder, manifest = covered
    fetched = {str((folder / f["path"]).resolve()): f for f in fetched_files(manifest)}
    name = manifest.get("benchmark", "the benchmark")
    if not manifest.get("complete"):
        raise GgeError(
            f"{folder}: gge data fetch {name} did not finish there (its screenshots would be scored as "
            f"misses): run it again to go on, or see gge data check {name}"
        )
    for path, sha in files_read.items():
        entry = fetched.get(str(Path(path).resolve()))
        if entry is not None and entry.get("sha256") != sha:
            raise GgeError(
                f"{path}: not the file gge data fetch wrote (sha256 {sha[:12]}, fetched "
                f"{str(entry.get('sha256'))[:12]}): it was edited or corrupted since; fetch it again "
                f"(gge data fetch {name}) or see gge data check {name}"
            )
    return {
        "kind": manifest.get("kind"),
        "repository": manifest.get("repository"),
        "revision": manifest.get("revision"),
        "commit": manifest.get("commit"),
        "fetched_at": manifest.get("fetched_at"),
        "complete": bool(manifest.get("complete")),
        "manifest_sha256": sha256_file(folder / MANIFEST),
    }


def fetched_root(directories: Mapping[str, str]) -> Path | None:
    """The default data folder when every benchmark named was fetched there, else None.

    A run with no ``data_root`` reads :func:`data_home` only when it holds a finished fetch of every
    benchmark it asks; a real set beside a synthetic one would be two kinds of number in one run.

    Args:
        directories: Benchmark name -> its folder name (``Benchmark.directory``).

    Returns:
        :func:`data_home`, or None when none of them was fetched there.

    Raises:
        GgeError: Some were fetched there and some not (names both, and the ways out), or a
            fetch there did not finish.
    """
    home = data_home()
    fetched: list[str] = []
    not_fetched: list[str] = []
    for name, directory in directories.items():
        manifest = read_manifest(home / directory)
        if manifest is not None and not manifest.get("complete"):
            raise GgeError(
                f"data_root not set: the fetch of {name} into {home / directory} did not finish: "
                f"gge data fetch {name} goes on where it stopped (or set data_root=DIR)"
            )
        (fetched if manifest is not None else not_fetched).append(name)
    if not fetched:
        return None
    if not_fetched:
        raise GgeError(
            f"data_root not set: {', '.join(fetched)} fetched in {home}, but not {', '.join(not_fetched)}: "
            f"fetch them (gge data fetch {' '.join(not_fetched)}), name only the fetched ones "
            f"(benchmarks=[{','.join(fetched)}]), set data_root=DIR, or data_root=demo (the synthetic suite)"
        )
    return home
