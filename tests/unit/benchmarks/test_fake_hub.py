"""The fake Hub (tests/helpers/fake_hub.py) as the real ``huggingface_hub`` client sees it.

Each test drives the installed client against the fake, so what a ``gge data fetch`` test builds on
(requests, headers, errors, resumes) is what the client does, not what the fake assumes.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from fake_hub import FakeHub, fake_hub_env, git_blob_id, lfs_pointer
from huggingface_hub import HfApi, constants, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    GatedRepoError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

REPO = "ns/tiny"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # LFS by its suffix
FIRST = {"README.md": b"# v1\n", "data/a.png": PNG, "data/sub/b.txt": b"b v1", "other.txt": b"o"}
SECOND = {
    "README.md": b"# v2\n",
    "data/a.png": PNG[::-1],
    "data/c.json": b"{}",
    "data/big.bin": os.urandom(12_000),  # LFS by its size
    "other.txt": b"o2",
}


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as running:
        yield running


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but the client's own ``.cache`` folder."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".cache" not in p.relative_to(root).parts
    }


def _download(hub: FakeHub, tmp_path: Path, filename: str, **kwargs: object) -> Path:
    path = hf_hub_download(
        REPO,
        filename,
        repo_type="dataset",
        local_dir=tmp_path / "out",
        cache_dir=tmp_path / "cache",
        endpoint=hub.url,
        token=False,
        **kwargs,  # type: ignore[arg-type]
    )
    return Path(path)


def test_snapshot_download_gets_each_commits_files(hub: FakeHub, tmp_path: Path) -> None:
    first = hub.add_commit(REPO, FIRST)
    second = hub.add_commit(REPO, SECOND)
    wanted = ["README.md", "data/*"]

    def snapshot(revision: str | None, out: Path) -> dict[str, bytes]:
        snapshot_download(
            REPO,
            repo_type="dataset",
            revision=revision,
            local_dir=out,
            cache_dir=tmp_path / "cache",
            allow_patterns=wanted,
            endpoint=hub.url,
            token=False,
        )
        return _files(out)

    assert snapshot(None, tmp_path / "main") == {k: v for k, v in SECOND.items() if k != "other.txt"}
    # the client resolves the branch once, lists the commit's tree, then HEADs and GETs each file by sha
    calls = {(m, re.sub(r"[0-9a-f]{40}", "<sha>", p)) for m, p, _ in hub.requests}
    assert calls == {
        ("GET", f"/api/datasets/{REPO}/revision/main"),
        ("GET", f"/api/datasets/{REPO}/tree/<sha>?recursive=true&expand=false"),
    } | {
        (m, f"/datasets/{REPO}/resolve/<sha>/{f}")
        for m in ("HEAD", "GET")
        for f in SECOND
        if f != "other.txt"
    }
    assert all(second in p for _, p, _ in hub.requests[1:])
    # its own state lives in local_dir/.cache/huggingface (one metadata file per file, the tree listing)
    meta = tmp_path / "main/.cache/huggingface"
    assert (meta / f"trees/{second}.json").is_file()
    assert (meta / "download/data/big.bin.metadata").read_text().splitlines()[:2] == [
        second,
        hashlib.sha256(SECOND["data/big.bin"]).hexdigest(),  # an LFS file's etag is its sha256
    ]
    assert (meta / "download/README.md.metadata").read_text().splitlines()[1] == git_blob_id(b"# v2\n")

    # a commit sha needs no resolution: the tree of that commit straight away
    hub.requests.clear()
    assert snapshot(first, tmp_path / "first") == {k: v for k, v in FIRST.items() if k != "other.txt"}
    assert hub.requests[0][1] == f"/api/datasets/{REPO}/tree/{first}?recursive=true&expand=false"


def test_list_repo_tree_pages_and_entries(tmp_path: Path) -> None:
    with FakeHub(page_size=3) as hub:
        sha = hub.add_commit(REPO, SECOND)
        api = HfApi(endpoint=hub.url, token=False)
        listed = list(api.list_repo_tree(REPO, repo_type="dataset", recursive=True))
        pages = [p for m, p, _ in hub.requests if "/tree/" in p]
        info = api.get_paths_info(REPO, ["data/a.png", "data", "nope"], repo_type="dataset")
        top = list(api.list_repo_tree(REPO, repo_type="dataset"))
        sub = list(api.list_repo_tree(REPO, "data", repo_type="dataset", revision=sha))

    # 5 files and 1 folder, 3 a page: the client follows the Link header once
    assert len(pages) == 2 and "cursor=3" in pages[1]
    files = {e.path: e for e in listed if e.__class__.__name__ == "RepoFile"}
    assert [e.path for e in listed if e.__class__.__name__ == "RepoFolder"] == ["data"]
    assert set(files) == set(SECOND)
    for path, content in SECOND.items():
        entry = files[path]
        assert entry.size == len(content)
        if path in ("data/a.png", "data/big.bin"):
            assert entry.lfs is not None
            assert entry.lfs.sha256 == hashlib.sha256(content).hexdigest()
            assert entry.lfs.size == len(content)
            assert entry.lfs.pointer_size == len(lfs_pointer(content))
            assert entry.blob_id == git_blob_id(lfs_pointer(content))  # git stores the pointer
        else:
            assert entry.lfs is None
            assert entry.blob_id == git_blob_id(content)
    assert [e.path for e in info] == ["data/a.png", "data"]  # unknown paths are left out
    assert sorted(e.path for e in top) == ["README.md", "data", "other.txt"]
    assert sorted(e.path for e in sub) == ["data/a.png", "data/big.bin", "data/c.json"]


def test_a_cut_download_is_resumed_with_a_range_inside_the_call(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short body (FIN) is retried by the client itself, after 1 s, from the last whole chunk it wrote."""
    content = os.urandom(5000)
    hub.add_commit(REPO, {"f.bin": content}, lfs=lambda path: True)
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 1024)  # 10 MiB otherwise
    hub.cut_once("/f.bin", 2048)

    assert _download(hub, tmp_path, "f.bin").read_bytes() == content
    gets = [h.get("Range") for m, _, h in hub.requests if m == "GET"]
    assert gets == [None, "bytes=2048-"]


def test_a_cut_inside_the_first_chunk_restarts_from_zero(hub: FakeHub, tmp_path: Path) -> None:
    """Bytes of a chunk not yet whole (10 MiB) are dropped: the retry asks for the whole file again."""
    content = os.urandom(5000)
    hub.add_commit(REPO, {"f.bin": content})
    hub.cut_once("/f.bin", 3000)

    assert _download(hub, tmp_path, "f.bin").read_bytes() == content
    assert [h.get("Range") for m, _, h in hub.requests if m == "GET"] == [None, None]


def test_a_reset_fails_the_call_and_the_next_one_starts_over(hub: FakeHub, tmp_path: Path) -> None:
    """A reset (not a short body) escapes as httpx2.ReadError; the partial file is deleted, not resumed."""
    content = os.urandom(200_000)
    hub.add_commit(REPO, {"f.bin": content})
    hub.cut_once("/f.bin", 100_000, reset=True)

    with pytest.raises(httpx2.ReadError):
        _download(hub, tmp_path, "f.bin")
    assert not any(p.name.endswith(".incomplete") for p in tmp_path.rglob("*"))
    assert not (tmp_path / "out/f.bin").exists()
    assert _download(hub, tmp_path, "f.bin").read_bytes() == content
    assert [(m, h.get("Range")) for m, _, h in hub.requests] == [("HEAD", None), ("GET", None)] * 2


def test_errors_map_to_the_clients_classes(hub: FakeHub, tmp_path: Path) -> None:
    hub.add_commit(REPO, FIRST)
    hub.add_commit("ns/gated", FIRST)
    hub.add_commit("ns/gated-files", FIRST)
    hub.gate("ns/gated")
    hub.gate("ns/gated-files", files_only=True)
    api = HfApi(endpoint=hub.url, token=False)

    def snapshot(repo_id: str, revision: str = "main") -> None:
        snapshot_download(
            repo_id,
            repo_type="dataset",
            revision=revision,
            local_dir=tmp_path / repo_id,
            cache_dir=tmp_path / "cache",
            endpoint=hub.url,
            token=False,
        )

    for gated in ("ns/gated", "ns/gated-files"):
        with pytest.raises(GatedRepoError):
            snapshot(gated)
    with pytest.raises(GatedRepoError):
        api.dataset_info("ns/gated")
    assert api.dataset_info("ns/gated-files").gated == "manual"  # the real Hub's way: only files are refused
    assert issubclass(GatedRepoError, RepositoryNotFoundError)  # so catch GatedRepoError first
    with pytest.raises(RevisionNotFoundError):
        snapshot(REPO, "no-such-branch")
    with pytest.raises(RevisionNotFoundError):
        snapshot(REPO, "0" * 40)
    with pytest.raises(RepositoryNotFoundError) as missing:
        snapshot("ns/missing")
    assert not isinstance(missing.value, GatedRepoError)
    with pytest.raises(RemoteEntryNotFoundError):
        _download(hub, tmp_path, "no-such-file.txt")
    with pytest.raises(RevisionNotFoundError):
        _download(hub, tmp_path, "README.md", revision="no-such-branch")


def test_resolve_headers_and_lfs_redirect(tmp_path: Path) -> None:
    with FakeHub(lfs_redirect=True) as hub:
        sha = hub.add_commit(REPO, SECOND)
        url = f"{hub.url}/datasets/{REPO}/resolve/main/data%2Fc.json"  # an encoded "/" is fine too
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD")) as plain:
            headers = dict(plain.headers)
        assert headers["X-Repo-Commit"] == sha
        assert headers["ETag"] == f'"{git_blob_id(b"{}")}"'
        assert headers["Content-Length"] == "2"
        assert not any(k.lower().startswith("x-xet") for k in headers)

        # an LFS file answers 302 to another host name: the client keeps the Hub's headers, GETs the CDN
        path = _download(hub, tmp_path, "data/big.bin")
        assert path.read_bytes() == SECOND["data/big.bin"]
        assert [m + " " + p.split("/")[1] for m, p, _ in hub.requests[1:]] == ["HEAD datasets", "GET cdn"]


def test_many_identical_files_list_cheaply(tmp_path: Path) -> None:
    with FakeHub() as hub:
        hub.add_commit(REPO, {f"images/{i:04d}.png": PNG for i in range(2500)})
        listed = list(
            HfApi(endpoint=hub.url, token=False).list_repo_tree(REPO, repo_type="dataset", recursive=True)
        )
        assert len(listed) == 2501 and len(hub.requests) == 3  # 1000 a page
        assert {e.blob_id for e in listed if e.path != "images"} == {git_blob_id(lfs_pointer(PNG))}


def test_archive_with_a_range(hub: FakeHub) -> None:
    archive = bytes(range(100))
    path = "xlang-ai/OSWorld-G/tar.gz/" + "a" * 40
    hub.add_archive(path, archive)
    ranged = urllib.request.Request(f"{hub.url}/{path}", headers={"Range": "bytes=10-"})
    with urllib.request.urlopen(ranged) as answer:
        assert answer.status == 206
        assert answer.headers["Content-Range"] == "bytes 10-99/100"
        assert answer.read() == archive[10:]
    with urllib.request.urlopen(urllib.request.Request(f"{hub.url}/{path}", method="HEAD")) as head:
        assert head.headers["Content-Length"] == "100"
        assert head.headers["ETag"] == f'"{hashlib.sha256(archive).hexdigest()}"'
    hub.cut_once("/" + "a" * 40, 30)
    with urllib.request.urlopen(f"{hub.url}/{path}") as cut, pytest.raises(http.client.IncompleteRead):
        cut.read()
    with urllib.request.urlopen(f"{hub.url}/{path}") as whole:
        assert whole.read() == archive
    assert [h.get("Range") for _, _, h in hub.requests] == ["bytes=10-", None, None, None]


def test_env_names_variables_the_client_reads(hub: FakeHub, tmp_path: Path) -> None:
    env = fake_hub_env(hub, home=tmp_path)
    assert env["HF_ENDPOINT"] == hub.url and env["HF_HOME"] == str(tmp_path)
    source = Path(constants.__file__).read_text()
    assert all(f'"{name}"' in source for name in env), "a variable huggingface_hub does not read"
