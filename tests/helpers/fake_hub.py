"""A fake Hugging Face Hub on loopback that the real ``huggingface_hub`` client talks to; an archive host too.

:class:`FakeHub` serves what ``huggingface_hub`` (2.x, with Xet absent) asks of the Hub to resolve a
revision, list a tree and download files: ``/api/{models,datasets,spaces}/{repo_id}[/revision/{rev}]``,
``/api/.../tree/{rev}[/{path}]`` (paged through a ``Link: <...>; rel="next"`` header),
``POST /api/.../paths-info/{rev}`` and ``HEAD``/``GET`` of
``[/datasets|/spaces]/{repo_id}/resolve/{rev}/{path}`` (with ``Range``), each with the headers and the
``X-Error-Code`` that the client maps to its error classes. It never sends ``X-Xet-*`` headers, so the
client downloads over plain HTTP. It also serves archives at any path (like GitHub's codeload
tarballs), can cut a download short (``cut_once``), and records every request.

Tree entries are the Hub's: ``oid`` is the git blob id of what git stores, the content for a plain file
and the LFS pointer for an LFS file (whose ``lfs.oid`` is the content's sha256); folders are ``directory``
entries with their git tree id. :func:`fake_hub_env` gives the environment that points the client at it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import socket
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

# extensions that are LFS by default, whatever their size (as a Hub repo's .gitattributes makes them)
LFS_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".zip", ".parquet", ".tar", ".gz"})
LFS_MIN_SIZE = 10_000  # bytes; larger files are LFS by default
_URL_PREFIXES = {"model": "", "dataset": "datasets/", "space": "spaces/"}
_API_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
_LOGGED_HEADERS = ("Range", "Authorization", "Accept-Encoding", "If-None-Match", "Content-Type")


def git_blob_id(content: bytes) -> str:
    """The git object id of a blob with ``content`` (sha1 of ``b"blob <size>\\0" + content``)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def lfs_pointer(content: bytes) -> bytes:
    """The Git LFS pointer file that git stores in place of an LFS file with ``content``."""
    sha256 = hashlib.sha256(content).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {len(content)}\n".encode()


def default_lfs(path: str, content: bytes) -> bool:
    """Whether a file is LFS by default: over :data:`LFS_MIN_SIZE` bytes, or an image/archive/parquet."""
    return len(content) > LFS_MIN_SIZE or PurePosixPath(path).suffix.lower() in LFS_SUFFIXES


@dataclass(frozen=True)
class Blob:
    """What the Hub knows of one file content: size, git blob id and (as LFS) sha256 and pointer."""

    size: int
    git_oid: str  # of the content
    sha256: str
    pointer_oid: str  # git blob id of its LFS pointer
    pointer_size: int


@dataclass
class FakeCommit:
    """One commit of a fake repo: its 40-hex sha and its whole tree (path -> content)."""

    sha: str
    files: dict[str, bytes]
    lfs: frozenset[str] = frozenset()  # the paths stored in LFS
    title: str = ""
    date: str = ""  # ISO 8601, as the Hub writes it
    _index: _TreeIndex | None = field(default=None, repr=False, compare=False)


@dataclass
class _Repo:
    repo_type: str
    repo_id: str
    commits: list[FakeCommit] = field(default_factory=list)
    branches: dict[str, str] = field(default_factory=dict)  # name -> sha
    gated: bool = False
    gated_files_only: bool = False

    def resolve(self, revision: str) -> FakeCommit | None:
        """The commit a branch name or a full commit sha names, or None."""
        sha = self.branches.get(revision, revision)
        return next((c for c in self.commits if c.sha == sha), None)


@dataclass
class _TreeIndex:
    """A commit's tree as the Hub lists it: one JSON entry per file and folder, children per folder."""

    entries: dict[str, dict[str, Any]]  # path -> its tree entry (the root has none)
    children: dict[str, list[str]]  # folder ("" the root) -> its direct children's paths, sorted
    ordered: list[str]  # every path, sorted (a recursive listing's order)


class FakeHub:
    """A fake Hugging Face Hub (and archive host) on ``127.0.0.1``; start it, or use it as a context manager.

    Attributes:
        requests: ``(method, path with query, selected headers)`` of every request, in arrival order;
            the headers kept are ``Range``, ``Authorization``, ``Accept-Encoding``, ``If-None-Match`` and
            ``Content-Type`` where sent.
        page_size: Entries per page of a tree listing (the Hub's is 1000); more come through ``Link``.
        lfs_redirect: Answer an LFS file's ``/resolve`` with a 302 to a CDN-like URL on another host name
            (``localhost`` instead of ``127.0.0.1``), as the Hub does; False serves it directly.
    """

    def __init__(self, *, page_size: int = 1000, lfs_redirect: bool = False) -> None:
        self.page_size = page_size
        self.lfs_redirect = lfs_redirect
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._repos: dict[tuple[str, str], _Repo] = {}
        self._archives: dict[str, bytes] = {}
        self._cuts: list[tuple[str, int, bool]] = []
        self._blobs: dict[bytes, Blob] = {}  # by content: many paths sharing one bytes object cost one hash
        self._cdn: dict[str, bytes] = {}  # sha256 -> content, for lfs_redirect
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- content -----------------------------------------------------------------------------------

    def add_commit(
        self,
        repo_id: str,
        files: Mapping[str, bytes | Path],
        *,
        repo_type: str = "dataset",
        branch: str = "main",
        lfs: Callable[[str], bool] | None = None,
        sha: str | None = None,
    ) -> str:
        """Add a commit whose whole tree is ``files`` to a repo (created on first use); move ``branch`` to it.

        Args:
            repo_id: ``namespace/name`` (or a bare name).
            files: Path in the repo -> content; a ``Path`` is read now. The same ``bytes`` object may be
                given for many paths: its hashes are computed once.
            repo_type: ``"dataset"``, ``"model"`` or ``"space"``.
            branch: The branch that moves to the new commit.
            lfs: Which paths are LFS files; by default those :func:`default_lfs` picks.
            sha: The commit's sha (a real repository's pinned commit); default: derived as below.

        Returns:
            The new commit's sha (40 hex digits, from the repo and the commit's number: deterministic).
        """
        if repo_type not in _URL_PREFIXES:
            raise ValueError(f"unknown repo type {repo_type!r}")
        contents = {
            path.strip("/"): (value.read_bytes() if isinstance(value, Path) else value)
            for path, value in files.items()
        }
        with self._lock:
            repo = self._repos.setdefault((repo_type, repo_id), _Repo(repo_type, repo_id))
            number = len(repo.commits)
            sha = sha or hashlib.sha1(f"{repo_type}:{repo_id}:{number}".encode()).hexdigest()
            in_lfs = frozenset(
                p for p, c in contents.items() if (lfs(p) if lfs is not None else default_lfs(p, c))
            )
            minutes, seconds = divmod(number, 60)
            date = f"2024-01-01T00:{minutes % 60:02d}:{seconds:02d}.000Z"
            repo.commits.append(FakeCommit(sha, contents, in_lfs, f"commit {number}", date))
            repo.branches[branch] = sha
        return sha

    def gate(self, repo_id: str, *, repo_type: str = "dataset", files_only: bool = False) -> None:
        """Gate a repo: requests answer 401 with ``X-Error-Code: GatedRepo`` (the client's GatedRepoError).

        Args:
            repo_id: An existing repo.
            repo_type: Its type.
            files_only: Only file downloads (``/resolve``) are refused, as on the real Hub, where a gated
                repo's info (``"gated": "manual"``) and file listings stay visible; False refuses every
                request.
        """
        with self._lock:
            repo = self._repos[(repo_type, repo_id)]
            repo.gated, repo.gated_files_only = True, files_only

    def add_archive(self, path: str, content: bytes) -> None:
        """Serve ``content`` at ``GET``/``HEAD {url}/{path}`` with ``Range``, ``Content-Length``, ``ETag``."""
        with self._lock:
            self._archives[path.strip("/")] = content

    def cut_once(self, url_suffix: str, after_bytes: int, *, reset: bool = False) -> None:
        """Cut the next ``GET`` whose path ends with ``url_suffix``: full headers, some bytes, then close.

        The path is compared both as sent (percent-encoded) and decoded, without its query; a cut is used
        once, and several may be queued. Later GETs of it are whole.

        Args:
            url_suffix: The end of the path.
            after_bytes: The body bytes sent before the connection closes.
            reset: Abort the connection (TCP RST) instead of closing it (FIN): the client sees a reset
                (``httpx`` ``ReadError``) rather than a short body (``RemoteProtocolError``), and bytes in
                flight may be lost.
        """
        with self._lock:
            self._cuts.append((url_suffix, after_bytes, reset))

    def commits(self, repo_id: str, *, repo_type: str = "dataset") -> list[FakeCommit]:
        """A repo's commits, oldest first."""
        with self._lock:
            return list(self._repos[(repo_type, repo_id)].commits)

    def blob(self, content: bytes) -> Blob:
        """The size, git blob id, sha256 and LFS pointer id of ``content`` (computed once per content)."""
        with self._lock:
            found = self._blobs.get(content)
        if found is None:
            pointer = lfs_pointer(content)
            found = Blob(
                size=len(content),
                git_oid=git_blob_id(content),
                sha256=hashlib.sha256(content).hexdigest(),
                pointer_oid=git_blob_id(pointer),
                pointer_size=len(pointer),
            )
            with self._lock:
                self._blobs.setdefault(content, found)
        return found

    # -- server ------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (the Hub endpoint and the archive host)."""
        if self._server is None:
            raise RuntimeError("the fake hub is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeHub:
        """Start serving on a free loopback port, in a daemon thread."""
        if self._server is None:
            self._server = _Server(self)
            serve = functools.partial(self._server.serve_forever, poll_interval=0.02)  # stop() waits one poll
            self._thread = threading.Thread(target=serve, name="fake-hub", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- what the handler asks ---------------------------------------------------------------------

    def _log(self, method: str, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append((method, path, headers))

    def _take_cut(self, raw_path: str) -> tuple[int, bool] | None:
        decoded = unquote(raw_path)
        with self._lock:
            for i, (suffix, after, reset) in enumerate(self._cuts):
                if raw_path.endswith(suffix) or decoded.endswith(suffix):
                    del self._cuts[i]
                    return after, reset
        return None

    def _repo(self, repo_type: str, repo_id: str) -> _Repo | None:
        with self._lock:
            return self._repos.get((repo_type, repo_id))

    def _match_repo(self, repo_type: str, rest: str) -> tuple[_Repo, str] | None:
        """The known repo whose id ``rest`` (a decoded path) starts with, and what follows it."""
        with self._lock:
            ids = sorted((rid for t, rid in self._repos if t == repo_type), key=len, reverse=True)
        for rid in ids:
            if rest == rid or rest.startswith(rid + "/"):
                repo = self._repo(repo_type, rid)
                assert repo is not None
                return repo, rest[len(rid) :]
        return None

    def _index(self, commit: FakeCommit) -> _TreeIndex:
        with self._lock:
            index = commit._index
        if index is None:
            index = self._build_index(commit)
            with self._lock:
                commit._index = index
        return index

    def _build_index(self, commit: FakeCommit) -> _TreeIndex:
        entries: dict[str, dict[str, Any]] = {}
        children: dict[str, set[str]] = {"": set()}
        for path, content in commit.files.items():
            blob = self.blob(content)
            entry: dict[str, Any] = {"type": "file", "oid": blob.git_oid, "size": blob.size, "path": path}
            if path in commit.lfs:
                entry["oid"] = blob.pointer_oid
                entry["lfs"] = {"oid": blob.sha256, "size": blob.size, "pointerSize": blob.pointer_size}
            entries[path] = entry
            parts = path.split("/")
            for depth in range(len(parts)):
                parent = "/".join(parts[:depth])
                child = "/".join(parts[: depth + 1])
                children.setdefault(parent, set()).add(child)
        for folder in sorted((f for f in children if f), key=lambda f: f.count("/"), reverse=True):
            oid = self._tree_oid(folder, children, entries)
            entries[folder] = {"type": "directory", "oid": oid, "size": 0, "path": folder}
        return _TreeIndex(
            entries=entries,
            children={folder: sorted(kids) for folder, kids in children.items()},
            ordered=sorted(entries),
        )

    @staticmethod
    def _tree_oid(folder: str, children: dict[str, set[str]], entries: dict[str, dict[str, Any]]) -> str:
        """The git tree id of ``folder`` from its children's ids (deepest folders are computed first)."""

        def key(child: str) -> str:  # git orders a folder as if its name ended with "/"
            name = child.rsplit("/", 1)[-1]
            return name + "/" if child in children else name

        body = b""
        for child in sorted(children[folder], key=key):
            mode = b"40000" if child in children else b"100644"
            body += (
                mode + b" " + child.rsplit("/", 1)[-1].encode() + b"\0" + bytes.fromhex(entries[child]["oid"])
            )
        return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, hub: FakeHub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hub = hub


class _Refusal(Exception):
    """An error answer: status, X-Error-Code, message and extra headers."""

    def __init__(self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = headers or {}


def _param(query: Mapping[str, list[str]], name: str, default: str = "") -> str:
    """The first value of a query or form field."""
    return (query.get(name) or [default])[0]


def _flag(value: str) -> bool:
    return value.lower() in ("1", "true", "yes")


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``(start, end)`` (end exclusive) of one ``bytes=`` range, None for none; a 416 if unsatisfiable."""
    if not header or not header.strip().lower().startswith("bytes=") or "," in header:
        return None
    first, _, last = header.split("=", 1)[1].strip().partition("-")
    first, last = first.strip(), last.strip()
    if not first:  # the last N bytes
        if not last or int(last) == 0:
            raise _Refusal(416, None, "Range Not Satisfiable", {"Content-Range": f"bytes */{size}"})
        return max(size - int(last), 0), size
    start = int(first)
    end = min(int(last) + 1, size) if last else size
    if start >= size or end <= start:
        raise _Refusal(416, None, "Range Not Satisfiable", {"Content-Range": f"bytes */{size}"})
    return start, end


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: every answer has a Content-Length
    disable_nagle_algorithm = True  # headers and body go in separate writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    # -- dispatch ----------------------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        hub = self.server.hub
        body = b""
        if method == "POST":
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        hub._log(method, self.path, {k: v for k in _LOGGED_HEADERS if (v := self.headers.get(k)) is not None})
        split = urlsplit(self.path)
        raw_path, query = split.path, parse_qs(split.query)
        try:
            self._route(method, raw_path, query, body)
        except _Refusal as refusal:
            headers = {"X-Error-Message": refusal.message, **refusal.headers}
            if refusal.code:
                headers["X-Error-Code"] = refusal.code
            self._json(refusal.status, {"error": refusal.message}, headers, head=method == "HEAD")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, method: str, raw_path: str, query: dict[str, list[str]], body: bytes) -> None:
        hub = self.server.hub
        key = unquote(raw_path).strip("/")
        with hub._lock:
            archive = hub._archives.get(key)
            cdn = hub._cdn.get(key[len("cdn/") :]) if key.startswith("cdn/") else None
        if method in ("GET", "HEAD") and (archive is not None or cdn is not None):
            content = archive if archive is not None else cdn
            assert content is not None
            etag = f'"{hashlib.sha256(content).hexdigest()}"'
            self._content(
                method, raw_path, content, {"ETag": etag, "Content-Type": "application/octet-stream"}
            )
            return
        if raw_path.startswith("/api/"):
            self._api(method, raw_path, query, body)
            return
        if "/resolve/" in raw_path and method in ("GET", "HEAD"):
            self._resolve(method, raw_path)
            return
        raise _Refusal(404, None, f"no route for {method} {raw_path}")

    # -- /api --------------------------------------------------------------------------------------

    def _api(self, method: str, raw_path: str, query: dict[str, list[str]], body: bytes) -> None:
        hub = self.server.hub
        parts = raw_path.split("/")  # "", "api", "datasets", ns, name, ...
        repo_type = _API_TYPES.get(parts[2]) if len(parts) > 2 else None
        if repo_type is None:
            raise _Refusal(404, None, f"no route for {method} {raw_path}")
        matched = hub._match_repo(repo_type, unquote("/".join(parts[3:])))
        if matched is None:
            raise _Refusal(404, "RepoNotFound", "Repository not found")
        repo, _ = matched
        # the part after the repo id, split on the raw path so an encoded "/" stays inside its segment
        tail = [unquote(p) for p in parts[3 + len(repo.repo_id.split("/")) :]]
        if repo.gated and not repo.gated_files_only:
            raise self._gated(repo)
        if not tail and method == "GET":
            self._info(repo, _param(query, "revision", "main"), query)
        elif len(tail) == 2 and tail[0] == "revision" and method == "GET":
            self._info(repo, tail[1], query)
        elif len(tail) >= 2 and tail[0] == "tree" and method == "GET":
            self._tree(raw_path, repo, tail[1], "/".join(tail[2:]).strip("/"), query)
        elif len(tail) == 2 and tail[0] == "paths-info" and method == "POST":
            self._paths_info(repo, tail[1], body)
        else:
            raise _Refusal(404, None, f"no route for {method} {raw_path}")

    @staticmethod
    def _gated(repo: _Repo) -> _Refusal:
        kind = {"model": "model", "dataset": "dataset", "space": "space"}[repo.repo_type]
        return _Refusal(
            401,
            "GatedRepo",
            f"Access to {kind} {repo.repo_id} is restricted. You must have access to it and be authenticated "
            "to access it. Please log in.",
        )

    @staticmethod
    def _commit(repo: _Repo, revision: str) -> FakeCommit:
        commit = repo.resolve(revision)
        if commit is None:
            raise _Refusal(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return commit

    def _info(self, repo: _Repo, revision: str, query: dict[str, list[str]]) -> None:
        hub = self.server.hub
        commit = self._commit(repo, revision)
        blobs = _flag(_param(query, "blobs"))
        siblings: list[dict[str, Any]] = []
        for path in sorted(commit.files):
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                entry = hub._index(commit).entries[path]
                sibling.update(size=entry["size"], blobId=entry["oid"])
                if "lfs" in entry:
                    lfs = entry["lfs"]
                    sibling["lfs"] = {
                        "sha256": lfs["oid"],
                        "size": lfs["size"],
                        "pointerSize": lfs["pointerSize"],
                    }
            siblings.append(sibling)
        author = repo.repo_id.split("/")[0] if "/" in repo.repo_id else None
        info: dict[str, Any] = {
            "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "author": author,
            "sha": commit.sha,
            "lastModified": commit.date,
            "createdAt": repo.commits[0].date,
            "private": False,
            "gated": "manual" if repo.gated else False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "cardData": {},
            "siblings": siblings,
            "usedStorage": sum(len(c) for c in commit.files.values()),
        }
        self._json(200, info)

    def _listed(self, commit: FakeCommit, entry: dict[str, Any], expand: bool) -> dict[str, Any]:
        if not expand:
            return entry
        last = {"id": commit.sha, "title": commit.title, "date": commit.date}
        return {**entry, "lastCommit": last}

    def _tree(
        self, raw_path: str, repo: _Repo, revision: str, folder: str, query: dict[str, list[str]]
    ) -> None:
        hub = self.server.hub
        commit = self._commit(repo, revision)
        index = hub._index(commit)
        recursive = _flag(_param(query, "recursive"))
        expand = _flag(_param(query, "expand"))
        if folder and index.entries.get(folder, {}).get("type") != "directory":
            raise _Refusal(
                404, "EntryNotFound", f"{folder} does not exist on {revision}", self._commit_header(commit)
            )
        if recursive:
            paths = [p for p in index.ordered if not folder or p.startswith(folder + "/")]
        else:
            paths = index.children[folder]
        cursor = int(_param(query, "cursor", "0"))
        page = paths[cursor : cursor + hub.page_size]
        headers = self._commit_header(commit)
        if cursor + hub.page_size < len(paths):
            params = urlencode(
                {
                    "recursive": str(recursive).lower(),
                    "expand": str(expand).lower(),
                    "cursor": cursor + hub.page_size,
                }
            )
            headers["Link"] = f'<{hub.url}{raw_path}?{params}>; rel="next"'
        self._json(200, [self._listed(commit, index.entries[p], expand) for p in page], headers)

    def _paths_info(self, repo: _Repo, revision: str, body: bytes) -> None:
        hub = self.server.hub
        commit = self._commit(repo, revision)
        index = hub._index(commit)
        if self.headers.get("Content-Type", "").startswith("application/json"):
            form = json.loads(body or b"{}")
            paths, expand = list(form.get("paths", [])), bool(form.get("expand", False))
        else:
            fields = parse_qs(body.decode())
            paths, expand = fields.get("paths", []), _flag(_param(fields, "expand"))
        found = [index.entries[p.strip("/")] for p in paths if p.strip("/") in index.entries]
        self._json(200, [self._listed(commit, e, expand) for e in found], self._commit_header(commit))

    @staticmethod
    def _commit_header(commit: FakeCommit) -> dict[str, str]:
        return {"X-Repo-Commit": commit.sha}

    # -- /resolve ----------------------------------------------------------------------------------

    def _resolve(self, method: str, raw_path: str) -> None:
        hub = self.server.hub
        repo_part, _, after = raw_path.strip("/").partition("/resolve/")
        repo_type = "model"
        for kind, prefix in _URL_PREFIXES.items():
            if prefix and repo_part.startswith(prefix):
                repo_type, repo_part = kind, repo_part[len(prefix) :]
        repo = hub._repo(repo_type, unquote(repo_part))
        if repo is None:
            raise _Refusal(404, "RepoNotFound", "Repository not found")
        if repo.gated:
            raise self._gated(repo)
        raw_revision, _, raw_file = after.partition("/")
        revision, filename = unquote(raw_revision), unquote(raw_file)
        commit = self._commit(repo, revision)
        if filename not in commit.files:
            raise _Refusal(404, "EntryNotFound", "Entry not found", self._commit_header(commit))
        content = commit.files[filename]
        blob = hub.blob(content)
        headers = {**self._commit_header(commit), "Content-Type": "application/octet-stream"}
        if filename in commit.lfs:
            headers.update({"ETag": f'"{blob.pointer_oid}"', "X-Linked-Etag": f'"{blob.sha256}"'})
            headers["X-Linked-Size"] = str(blob.size)
            if hub.lfs_redirect:
                with hub._lock:
                    hub._cdn[blob.sha256] = content
                location = f"http://localhost:{hub.url.rsplit(':', 1)[1]}/cdn/{blob.sha256}"
                self._send(302, b"", {**headers, "Location": location}, head=method == "HEAD")
                return
        else:
            headers["ETag"] = f'"{blob.git_oid}"'
        self._content(method, raw_path, content, headers)

    # -- answers -----------------------------------------------------------------------------------

    def _content(self, method: str, raw_path: str, content: bytes, headers: dict[str, str]) -> None:
        """Answer with ``content`` (or the part a ``Range`` asks), cut short if a cut is pending."""
        size = len(content)
        span = _byte_range(self.headers.get("Range"), size)
        headers = {**headers, "Accept-Ranges": "bytes"}
        status, (start, end) = 200, (0, size)
        if span is not None:
            status, (start, end) = 206, span
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        cut = self.server.hub._take_cut(raw_path) if method == "GET" else None
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(end - start))
        self.end_headers()
        if method == "HEAD":
            return
        view = memoryview(content)[start:end]
        if cut is not None:
            after, reset = cut
            self.wfile.write(view[:after])
            self.wfile.flush()
            self.close_connection = True  # the client sees the connection close mid-body
            if reset:  # SO_LINGER 0: close() sends RST, not FIN
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            return
        self.wfile.write(view)

    def _json(
        self, status: int, payload: Any, headers: dict[str, str] | None = None, *, head: bool = False
    ) -> None:
        data = json.dumps(payload).encode()
        self._send(
            status, data, {"Content-Type": "application/json; charset=utf-8", **(headers or {})}, head=head
        )

    def _send(self, status: int, data: bytes, headers: dict[str, str], *, head: bool = False) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)


def fake_hub_env(hub: FakeHub, *, home: Path | None = None) -> dict[str, str]:
    """Environment that points ``huggingface_hub`` (in a new process) at ``hub``, quiet and offline-safe.

    ``huggingface_hub`` reads them when it is imported: in this process pass ``endpoint=hub.url`` instead.
    ``HF_TOKEN`` is left to the caller (unset it to send no token; ``HF_HUB_DISABLE_IMPLICIT_TOKEN`` keeps a
    saved token from being sent unless asked).

    Args:
        hub: A started fake hub.
        home: If given, ``HF_HOME`` (the cache and the saved token) under it.

    Returns:
        The variables to set.
    """
    env = {
        "HF_ENDPOINT": hub.url,
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",  # huggingface_hub >= 1.0; no X-Xet-* headers are sent anyway
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
        "HF_HUB_DISABLE_SYMLINKS_WARNING": "1",
        "HF_HUB_DISABLE_EXPERIMENTAL_WARNING": "1",
        "HF_HUB_ETAG_TIMEOUT": "5",
        "HF_HUB_DOWNLOAD_TIMEOUT": "10",
    }
    if home is not None:
        env["HF_HOME"] = str(home)
    return env
