"""``gge data fetch``: a benchmark downloaded from its host and laid out exactly as gge reads it.

The host is the benchmark module's :class:`~gge.benchmarks.hosts.Host`:

- **Hub** datasets are listed at one commit (the pin, the ``--revision`` given, or the branch head
  resolved once, so every file comes from the same commit), and the files a run reads are downloaded
  with huggingface_hub's own client (``HF_ENDPOINT``, ``HF_TOKEN``). A rerun skips every file already
  fetched and checked; an archive or a file over :data:`RANGED_FROM` bytes goes on from its last byte
  (a ``Range`` request on the Hub's own URL and headers: huggingface_hub starts a file over). Each
  file's sha256 (git blob sha1 for a file kept in git) is checked against the Hub's listing; a zip the
  host ships screenshots in is unpacked to the folder gge reads and then removed.
- **GitHub** repositories are fetched as their archive at the commit (``GGE_GITHUB_ENDPOINT``, default
  codeload.github.com), resumed with a ``Range`` request, and the files a run reads are extracted,
  each hashed as it is written.
- **Manual** hosts (a Google Drive or university share) are not fetched: the one-line error says where
  the files are.

What was fetched is :data:`~gge.benchmarks.hosts.MANIFEST` in the benchmark's folder, written before
the first byte (so a rerun resumes the same commit) and completed at the end. A rerun of a finished
fetch at the same commit does nothing; a fetch of another commit into a folder that holds one, or into
a folder of files gge did not fetch, refuses (two revisions mixed are neither). Files of one fetch
are checked again by ``gge data check``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import http.client
import json
import os
import re
import shutil
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gge.benchmarks.base import Benchmark
from gge.benchmarks.hosts import MANIFEST, Host, Unpack, read_manifest, sha256_file
from gge.errors import GgeError

GITHUB_ENV = "GGE_GITHUB_ENDPOINT"
"""Where GitHub archives are fetched from (default :data:`GITHUB_DEFAULT`; a test server stands in)."""

GITHUB_DEFAULT = "https://codeload.github.com"

PARTS = ".gge-download"
"""The folder (inside the benchmark's) holding archives while they download and unpack."""

COMMIT = re.compile(r"[0-9a-f]{40}")

BLOCK = 1 << 16
"""Bytes read at a time by gge's own downloads (what an interrupted one keeps, at most, lost)."""

RANGED_FROM = 64 << 20
"""A Hub file this large (or an archive to unpack) is downloaded by gge with ``Range`` resumes."""

Progress = Callable[[int, int, int, int], None]
"""``progress(files_done, files_total, bytes_done, bytes_total)``, called after each file."""


@dataclass(frozen=True)
class Wanted:
    """One repository file to fetch: its path, size, and the digest the host lists for it."""

    path: str
    size: int
    sha256: str | None
    """The LFS object's sha256 (None for a file kept in git: then ``blob_id``)."""
    blob_id: str | None
    """The git blob sha1 (checked when no sha256 is listed)."""


def git_blob_sha1(path: Path) -> str:
    """The git blob id of a file (sha1 of ``blob <size>``, a NUL byte, and its bytes)."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode(), usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def selected(paths: Sequence[str], host: Host) -> list[str]:
    """The repository paths a run reads: those matching a ``files`` pattern or an archive to unpack.

    Example:
        >>> h = Host("hub", "a/b", None, "", ("annotations/*.json",), unpack=(Unpack("img.zip", "img"),))
        >>> selected(["annotations/a.json", "README.md", "img.zip", "x/annotations/b.json"], h)
        ['annotations/a.json', 'img.zip']
    """
    patterns = (*host.files, *host.optional, *(u.archive for u in host.unpack))
    return [p for p in paths if any(fnmatch.fnmatchcase(p, pat) for pat in patterns)]


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def _start(
    bench: Benchmark, dest: Path, host: Host, revision: str | None, commit: str | None
) -> dict[str, Any]:
    """The manifest to fetch into ``dest`` with (a resumed one, or a new one written now); refuses a mix."""
    old = read_manifest(dest)
    if old is not None:
        if old.get("repository") != host.repository or old.get("commit") != commit:
            raise GgeError(
                f"{dest} holds {old.get('repository')} at {str(old.get('commit'))[:12]} (fetched "
                f"{old.get('fetched_at')}); fetching {host.repository} at {str(commit)[:12]} into it "
                f"would mix two revisions: fetch into another folder (--to DIR) or remove {dest} first"
            )
        return old
    if dest.is_dir() and any(p.name != PARTS for p in dest.iterdir()):
        raise GgeError(
            f"{dest} holds files gge data fetch did not write (no {MANIFEST}): gge will not mix a fetch "
            f"into them; fetch into another folder (--to DIR), or check them as they are with "
            f"gge data check {bench.name}"
        )
    dest.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "benchmark": bench.name,
        "kind": host.kind,
        "repository": host.repository,
        "revision": revision,
        "commit": commit,
        "fetched_at": None,
        "complete": False,
        "files": [],
        "unpacked": [],
    }
    _write_manifest(dest, manifest)
    return manifest


def _finish(dest: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["files"].sort(key=lambda f: f["path"])
    manifest["complete"] = True
    manifest["fetched_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _write_manifest(dest, manifest)
    shutil.rmtree(dest / PARTS, ignore_errors=True)
    shutil.rmtree(dest / ".cache" / "huggingface", ignore_errors=True)
    cache = dest / ".cache"
    if cache.is_dir() and not any(cache.iterdir()):
        cache.rmdir()
    return manifest


def fetch(
    bench: Benchmark,
    data_root: Path,
    revision: str | None = None,
    *,
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
    workers: int = 8,
) -> dict[str, Any]:
    """Fetch ``bench`` from its host into ``data_root/<directory>``, resuming what a fetch left.

    Args:
        bench: The benchmark (its ``host`` says where from).
        data_root: The data folder (the benchmark's folder is made under it).
        revision: A commit, branch or tag to fetch instead of the pin (None: the pin, else the head).
        progress: Called after each file.
        say: Where one-line notes go (an archive unpacked, a large file started).
        workers: Files downloaded at once.

    Returns:
        The manifest written.

    Raises:
        GgeError: No host, a manual host, a repository or revision the host does not have, a gated
            repository without access, a file whose digest differs from the host's listing, or a
            folder that holds another revision.
    """
    host = bench.host
    if host is None:
        raise GgeError(f"{bench.name}: gge knows no host for it (a user's own records): nothing to fetch")
    if host.kind == "manual":
        raise GgeError(f"{bench.name}: gge cannot fetch it from {host.repository}: {host.note}")
    dest = data_root / bench.directory
    if host.kind == "github":
        return _fetch_github(bench, dest, host, revision, progress)
    return _fetch_hub(bench, dest, host, revision, progress, say, workers)


# ----------------------------------------------------------------------------------------------
# The Hub


def _hub_error(e: Exception, host: Host, revision: str) -> GgeError:
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    if isinstance(e, GatedRepoError):
        return GgeError(
            f"{host.repository}: the Hub says the dataset is gated: accept its terms on its page and "
            f"log in (hf auth login, or HF_TOKEN)"
        )
    if isinstance(e, RevisionNotFoundError):
        return GgeError(f"{host.repository}: the Hub has no revision {revision} (--revision names another)")
    if isinstance(e, RepositoryNotFoundError):
        return GgeError(
            f"{host.repository}: the Hub has no such dataset (or it is private: log in, HF_TOKEN)"
        )
    return GgeError(f"{host.repository}: the Hub did not answer: {str(e).splitlines()[0] if str(e) else e!r}")


def _hub_listing(host: Host, revision: str | None) -> tuple[str, list[Wanted]]:
    """The commit fetched and the files a run reads at it, as the Hub lists them."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
    asked = revision or host.revision
    try:
        if asked is not None and COMMIT.fullmatch(asked):
            commit = asked
        else:
            info = api.dataset_info(host.repository, revision=asked)
            commit = str(info.sha)
        entries = [
            e
            for e in api.list_repo_tree(host.repository, revision=commit, recursive=True, repo_type="dataset")
            if hasattr(e, "size") and hasattr(e, "blob_id")
        ]
    except HfHubHTTPError as e:
        raise _hub_error(e, host, asked or "main") from None
    except Exception as e:  # the client's network errors (httpx's are not OSError): nothing answered
        raise GgeError(
            f"{host.repository}: the Hub at {api.endpoint} did not answer ({type(e).__name__}: {e}): "
            f"check the network or HF_ENDPOINT, then run the same fetch again"
        ) from None
    by_path = {entry.path: entry for entry in entries}
    chosen = selected(sorted(by_path), host)
    required = (*host.files, *(u.archive for u in host.unpack))
    missing = [p for p in required if not any(fnmatch.fnmatchcase(c, p) for c in chosen)]
    if missing:
        raise GgeError(
            f"{host.repository} at {commit[:12]} has no file matching {', '.join(missing)}: its layout is "
            f"not the one gge reads (another revision? --revision names one)"
        )
    wanted = []
    for p in chosen:
        entry = by_path[p]
        lfs = getattr(entry, "lfs", None)
        sha = getattr(lfs, "sha256", None) if lfs else None
        wanted.append(Wanted(p, int(entry.size), sha, entry.blob_id))
    return commit, wanted


def _verify(path: Path, w: Wanted) -> str:
    """The file's sha256 after checking it against the host's digest (removes it when it differs)."""
    sha = sha256_file(path)
    if w.sha256 is not None:
        ok, said = sha == w.sha256, f"sha256 {sha[:12]}, the host lists {w.sha256[:12]}"
    else:
        blob = git_blob_sha1(path)
        ok, said = blob == w.blob_id, f"git blob {blob[:12]}, the host lists {str(w.blob_id)[:12]}"
    if not ok or path.stat().st_size != w.size:
        path.unlink(missing_ok=True)
        raise GgeError(
            f"{path}: not the file the host lists ({said}; {path.name} removed): run the fetch again"
        )
    return sha


def _ranged_hub_file(host: Host, commit: str, w: Wanted, dest: Path, endpoint: str | None) -> Path:
    """A Hub file downloaded by gge into ``PARTS`` with ``Range`` resumes, then moved to its place."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

    url = hf_hub_url(host.repository, w.path, repo_type="dataset", revision=commit, endpoint=endpoint)
    part = dest / PARTS / (w.path.replace("/", "__") + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    if part.exists() and part.stat().st_size > w.size:
        part.unlink()
    if not part.exists() or part.stat().st_size < w.size:
        _download(url, part, dict(build_hf_headers()))
    target = dest / w.path
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, target)
    return target


def _fetch_hub(
    bench: Benchmark,
    dest: Path,
    host: Host,
    revision: str | None,
    progress: Progress | None,
    say: Callable[[str], None] | None,
    workers: int,
) -> dict[str, Any]:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import disable_progress_bars  # type: ignore[attr-defined]

    disable_progress_bars()  # a bar per file, eight at once: the caller's progress line says it once
    old = read_manifest(dest)
    mine = old if old is not None and old.get("repository") == host.repository else None
    pinned = revision or host.revision
    if mine is not None and mine.get("complete") and pinned and mine.get("commit") == pinned:
        return mine  # fetched whole at that commit already: nothing to ask the Hub
    if mine is not None and not mine.get("complete") and revision is None and mine.get("commit"):
        revision = str(mine["commit"])  # an unfinished fetch goes on at its commit, where the branch moved
    commit, wanted = _hub_listing(host, revision)
    manifest = _start(bench, dest, host, revision or host.revision, commit)
    if manifest["complete"]:
        return manifest
    done = {f["path"]: f for f in manifest["files"]}
    unpacked = {u["archive"] for u in manifest["unpacked"]}
    kept = [
        w
        for w in wanted
        if w.path in done and (dest / w.path).is_file() and (dest / w.path).stat().st_size == w.size
    ]
    manifest["files"] = [done[w.path] for w in kept]
    skip = unpacked | {w.path for w in kept}
    todo = [w for w in wanted if w.path not in skip]
    total_bytes = sum(w.size for w in wanted if w.path not in unpacked)
    count = [len(wanted) - len(todo), sum(f["bytes"] for f in manifest["files"])]
    lock = threading.Lock()
    last_write = [time.monotonic()]
    endpoint = os.environ.get("HF_ENDPOINT") or None

    archives = {u.archive for u in host.unpack}

    def one(w: Wanted) -> None:
        if say is not None and w.size > 100 << 20:
            say(f"{bench.name}: downloading {w.path} ({w.size / 2**30:.2f} GiB)")
        try:
            if w.size >= RANGED_FROM or w.path in archives:
                got = _ranged_hub_file(host, commit, w, dest, endpoint)
            else:
                got = Path(
                    hf_hub_download(
                        host.repository,
                        w.path,
                        repo_type="dataset",
                        revision=commit,
                        local_dir=str(dest),
                        cache_dir=str(dest / PARTS / "hub-cache"),
                        endpoint=endpoint,
                    )
                )
        except HfHubHTTPError as e:
            raise _hub_error(e, host, commit) from None
        except GgeError:
            raise
        except Exception as e:  # the client's network errors (httpx, OSError): a rerun goes on
            raise GgeError(
                f"{host.repository}: the download of {w.path} stopped ({type(e).__name__}: {e}): "
                f"run the same fetch again to go on ({count[0]} of {len(wanted)} files kept)"
            ) from None
        sha = _verify(got, w)
        with lock:
            manifest["files"].append({"path": w.path, "bytes": w.size, "sha256": sha})
            count[0] += 1
            count[1] += w.size
            if time.monotonic() - last_write[0] > 5:  # a resume skips what is recorded
                _write_manifest(dest, manifest)
                last_write[0] = time.monotonic()
        if progress is not None:
            progress(count[0], len(wanted), count[1], total_bytes)

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        for _ in pool.map(one, todo):  # the first failure raises here: the files queued behind it wait
            pass
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _write_manifest(dest, manifest)
    for u in host.unpack:
        entry = next((f for f in manifest["files"] if f["path"] == u.archive), None)
        if entry is None or u.archive in unpacked:
            continue
        if say is not None:
            say(f"{bench.name}: unpacking {u.archive} into {u.folder}/")
        files = _unpack_zip(dest / u.archive, dest, u)
        manifest["unpacked"].append(
            {"archive": u.archive, "sha256": entry["sha256"], "into": u.folder, "files": files}
        )
        manifest["files"].remove(entry)
        _write_manifest(dest, manifest)  # recorded first: a crash now costs no download
        (dest / u.archive).unlink()
    return _finish(dest, manifest)


# ----------------------------------------------------------------------------------------------
# Archives


def _safe_member(name: str, archive: Path) -> PurePosixPath:
    p = PurePosixPath(name)
    if p.is_absolute() or ".." in p.parts:
        raise GgeError(f"{archive}: member {name!r} would be written outside the benchmark's folder: refused")
    return p


def _find_folder(top: Path, names: Sequence[str]) -> Path | None:
    """The shallowest directory with one of ``names`` under ``top`` (``__MACOSX`` skipped)."""
    level = [top]
    while level:
        nxt: list[Path] = []
        for d in level:
            for child in sorted(d.iterdir()):
                if child.is_dir() and child.name != "__MACOSX":
                    if child.name in names:
                        return child
                    nxt.append(child)
        level = nxt
    return None


def _unpack_zip(archive: Path, dest: Path, unpack: Unpack) -> list[dict[str, Any]]:
    """Unpack ``archive``'s folder gge reads to ``dest/<folder>``; its files (path, bytes, sha256)."""
    work = dest / PARTS / "unpack"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                _safe_member(info.filename, archive)
            z.extractall(work)
    except zipfile.BadZipFile as e:
        raise GgeError(f"{archive}: not a readable zip ({e}): remove it and fetch again") from None
    names = (unpack.folder, *unpack.also)
    found = _find_folder(work, names)
    if found is None:
        raise GgeError(
            f"{archive}: no folder named {' or '.join(names)} inside: its layout is not the one gge reads"
        )
    target = dest / unpack.folder
    if target.exists():
        shutil.rmtree(target)
    os.replace(found, target)
    shutil.rmtree(work, ignore_errors=True)
    return [
        {"path": str(p.relative_to(dest)), "bytes": p.stat().st_size, "sha256": sha256_file(p)}
        for p in sorted(target.rglob("*"))
        if p.is_file()
    ]


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects, dropping ``Authorization`` when one leads to another host (the Hub's CDN)."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if (
            new is not None
            and urllib.parse.urlsplit(newurl).netloc != urllib.parse.urlsplit(req.full_url).netloc
        ):
            new.remove_header("Authorization")
        return new


def _download(url: str, part: Path, headers: dict[str, str] | None = None) -> None:
    """Download ``url`` into ``part``, going on from its size with a Range request when it exists."""
    have = part.stat().st_size if part.exists() else 0
    sent = {**(headers or {}), **({"Range": f"bytes={have}-"} if have else {})}
    req = urllib.request.Request(url, headers=sent)
    try:
        with urllib.request.build_opener(_Redirects).open(req, timeout=60) as r:
            mode = "ab" if have and r.status == 206 else "wb"
            length = r.headers.get("Content-Length")
            got = 0
            with open(part, mode) as f:  # what came is kept: the next fetch goes on from it
                try:
                    while block := r.read(BLOCK):
                        f.write(block)
                        got += len(block)
                except http.client.IncompleteRead as e:
                    f.write(e.partial)
                    got += len(e.partial)
                    raise OSError(f"the connection closed after {f.tell()} bytes") from None
            if length is not None and got < int(length):  # a read of a closed connection ends quietly
                raise OSError(f"the connection closed after {have + got if mode == 'ab' else got} bytes")
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:  # the part is whole already
            return
        raise GgeError(f"{url}: HTTP {e.code} {e.reason} (--revision names another commit?)") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise GgeError(f"{url}: the download stopped ({e}): run the same fetch again to go on") from None


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> str:
    """Write one archive member to ``target``; its sha256."""
    src = tar.extractfile(member)
    assert src is not None
    h = hashlib.sha256()
    with src, open(target, "wb") as f:
        for block in iter(lambda: src.read(1 << 20), b""):
            h.update(block)
            f.write(block)
    return h.hexdigest()


def _fetch_github(
    bench: Benchmark, dest: Path, host: Host, revision: str | None, progress: Progress | None
) -> dict[str, Any]:
    asked = revision or host.revision
    if asked is None or not COMMIT.fullmatch(asked):
        raise GgeError(
            f"{bench.name}: name a commit of {host.repository} with --revision (its full 40-hex sha): a "
            f"branch or tag moves, and a GitHub archive does not say which commit it holds"
        )
    commit = asked
    manifest = _start(bench, dest, host, asked, commit)
    if manifest["complete"]:
        return manifest
    base = os.environ.get(GITHUB_ENV, GITHUB_DEFAULT).rstrip("/")
    parts = dest / PARTS
    parts.mkdir(exist_ok=True)
    part = parts / f"{asked}.tar.gz.part"
    _download(f"{base}/{host.repository}/tar.gz/{asked}", part)
    manifest["unpacked"] = [{"archive": f"{host.repository}/tar.gz/{asked}", "sha256": sha256_file(part)}]
    files: list[dict[str, Any]] = []
    try:
        with tarfile.open(part, "r:gz") as tar:
            for m in tar:
                rel = PurePosixPath(*_safe_member(m.name, part).parts[1:])  # below the archive's top folder
                if not m.isfile() or not rel.parts or not selected([str(rel)], host):
                    continue
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                files.append({"path": str(rel), "bytes": m.size, "sha256": _extract(tar, m, target)})
    except (tarfile.TarError, EOFError) as e:
        part.unlink(missing_ok=True)
        raise GgeError(f"{part}: not a readable archive ({e}; removed): run the fetch again") from None
    except OSError as e:  # the disk, not the archive: it stays for the next fetch
        raise GgeError(f"{dest}: cannot write the archive's files ({e}): run the fetch again") from None
    if not files:
        raise GgeError(
            f"{host.repository} at {asked[:12]}: the archive has no file matching {', '.join(host.files)}"
        )
    manifest["files"] = files
    if progress is not None:
        total = sum(f["bytes"] for f in files)
        progress(len(files), len(files), total, total)
    return _finish(dest, manifest)
