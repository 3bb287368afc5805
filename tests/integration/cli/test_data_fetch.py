"""``gge data fetch`` and ``list`` against a fake Hub on 127.0.0.1 (the real huggingface_hub client).

The repositories are laid from the demo suite's folders as each host lays its release (ScreenSpot-Pro's
loose files, ScreenSpot-v2's screenshots in a zip, OSWorld-G as a GitHub archive), with files a run
does not read beside them. Each test compares what lands with what was laid, byte for byte, computed
here, not through gge's patterns: the fetch at gge's pinned commit, a revision asked, an interrupted
download resumed (the files kept are not asked again; an archive goes on from its last byte), a
file whose digest is not the host's, a gated repository, a manual host, a folder that holds another
revision or files gge did not fetch. Then what a fetch wrote is read: ``list`` and ``check``, a file
changed afterwards (check and a run each refuse it), and a run with no ``data_root`` reading the
default data folder (figures equal to the same run on the demo suite's folder; ``provenance.fetched``
names the commit), refusing a mix of fetched and unfetched benchmarks.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_hub import FakeHub, fake_hub_env

from gge.benchmarks import fetch as fetch_module
from gge.benchmarks import get_benchmark
from gge.benchmarks.hosts import MANIFEST, Host
from gge.cli.commands import main
from gge.cli.data import data_main
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run


def _host(name: str) -> Host:
    host = get_benchmark(name).host
    assert host is not None and host.revision is not None
    return host


PRO, V2, OSW = _host("screenspot_pro"), _host("screenspot_v2"), _host("osworld_g")
PIN, OSW_PIN = str(PRO.revision), str(OSW.revision)


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (path relative to it -> bytes)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _fetched(folder: Path) -> dict[str, bytes]:
    return {k: v for k, v in _tree(folder).items() if k != MANIFEST}


def _data(*argv: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = data_main(list(argv), out=out)
    return code, out.getvalue().splitlines()


def _resolves(hub: FakeHub, path: str) -> list[dict[str, str]]:
    """The headers of each GET of a file's ``/resolve`` URL (path as in the repository)."""
    return [h for m, p, h in hub.requests if m == "GET" and "/resolve/" in p and p.endswith("/" + path)]


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    with FakeHub() as h:
        for key, value in fake_hub_env(h, home=tmp_path / "hf").items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv(fetch_module.GITHUB_ENV, h.url)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        yield h


@pytest.fixture
def pro_files(demo_suite: Path) -> dict[str, bytes]:
    """ScreenSpot-Pro's release as the Hub lays it: annotations/*.json and images/<folder>/*.png."""
    return _tree(demo_suite / "screenspot_pro")


def _lay_pro(hub: FakeHub, files: dict[str, bytes], sha: str | None = None) -> str:
    extra = {"README.md": b"# ScreenSpot-Pro\n", "annotate.html": b"<html></html>", ".DS_Store": b"\0"}
    return hub.add_commit(PRO.repository, {**files, **extra}, sha=sha or PRO.revision)


@pytest.fixture
def data(tmp_path: Path, demo_suite: Path) -> Path:
    """The data folder, marked as holding the demo suite's records (check compares no release digest)."""
    root = tmp_path / "data"
    root.mkdir()
    shutil.copy(demo_suite / "demo_manifest.json", root)
    return root


def test_a_fetch_lays_the_release_at_the_pinned_commit_and_checks_each_file(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path
) -> None:
    _lay_pro(hub, pro_files)
    code, lines = _data("fetch", "screenspot_pro", "--to", str(data))
    assert code == 0
    folder = data / "screenspot_pro"
    assert _fetched(folder) == pro_files  # README.md, annotate.html, .DS_Store: not read, not fetched
    manifest = json.loads((folder / MANIFEST).read_text())
    assert (manifest["repository"], manifest["commit"], manifest["revision"]) == (
        PRO.repository,
        PRO.revision,
        PRO.revision,
    )
    assert manifest["complete"] is True
    assert {f["path"]: (f["bytes"], f["sha256"]) for f in manifest["files"]} == {
        p: (len(b), hashlib.sha256(b).hexdigest()) for p, b in pro_files.items()
    }
    assert lines[-1].startswith(f"screenspot_pro: {len(pro_files)} files (")
    assert f"from Hub {PRO.repository} at {PIN[:12]} in {folder}" in lines[-1]
    # every file asked once, at the commit (not at a branch that may move)
    gets = [p for m, p, _ in hub.requests if m == "GET" and "/resolve/" in p]
    assert len(gets) == len(pro_files) and all(f"/resolve/{PRO.revision}/" in p for p in gets)
    # a rerun of a finished fetch at the pinned commit asks the Hub nothing at all
    before = len(hub.requests)
    assert _data("fetch", "screenspot_pro", "--to", str(data))[0] == 0
    assert len(hub.requests) == before
    # list and check read what it wrote
    code, lines = _data("list", "--data-root", str(data))
    row = next(x for x in lines if x.startswith("screenspot_pro "))
    n = sum(len(json.loads(b)) for p, b in pro_files.items() if p.startswith("annotations/"))
    assert row.endswith(f"fetched {PIN[:12]}; {n} records, every screenshot present")
    code, lines = _data("check", "screenspot_pro", "--data-root", str(data))
    assert code == 0
    assert lines[0].startswith(f"screenspot_pro: fetched from hub {PRO.repository} at {PIN[:12]} (")
    assert lines[0].endswith(f"): {len(pro_files)} files hashed")


def test_a_revision_asked_is_fetched_and_recorded_and_another_is_not_mixed_into_it(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path
) -> None:
    first = sorted(p for p in pro_files if p.startswith("annotations/"))[0]
    old_files = {p: b for p, b in pro_files.items() if p != first}
    old = _lay_pro(hub, old_files, sha="1" * 40)
    _lay_pro(hub, pro_files)  # the pin, laid after: main points at it
    assert _data("fetch", "screenspot_pro", "--to", str(data), "--revision", old)[0] == 0
    folder = data / "screenspot_pro"
    assert _fetched(folder) == old_files
    manifest = json.loads((folder / MANIFEST).read_text())
    assert (manifest["revision"], manifest["commit"]) == (old, old)
    with pytest.raises(GgeError, match=f"holds {PRO.repository} at {old[:12]} .* at {PIN[:12]} into it"):
        _data("fetch", "screenspot_pro", "--to", str(data))
    assert _fetched(folder) == old_files  # nothing mixed in
    # a branch asked is resolved to its commit once, and that commit recorded
    branch = data / "by_branch"
    assert _data("fetch", "screenspot_pro", "--to", str(branch), "--revision", "main")[0] == 0
    manifest = json.loads((branch / "screenspot_pro" / MANIFEST).read_text())
    assert (manifest["revision"], manifest["commit"]) == ("main", PRO.revision)


def test_files_gge_did_not_fetch_are_not_mixed_with_a_fetch(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path
) -> None:
    _lay_pro(hub, pro_files)
    (data / "screenspot_pro" / "annotations").mkdir(parents=True)
    (data / "screenspot_pro" / "annotations" / "mine.json").write_text("[]")
    with pytest.raises(GgeError, match=r"holds files gge data fetch did not write \(no \.gge-fetch\.json\)"):
        _data("fetch", "screenspot_pro", "--to", str(data))


def test_an_interrupted_fetch_goes_on_without_asking_again_for_what_it_kept(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_pro(hub, pro_files)
    images = sorted(p for p in pro_files if p.startswith("images/"))
    cut = images[-1]
    hub.cut_once(cut, 100, reset=True)
    with pytest.raises(
        GgeError, match=f"the download of {cut} stopped .*: run the same fetch again to go on"
    ):
        _data("fetch", "screenspot_pro", "--to", str(data), "--workers", "1")
    folder = data / "screenspot_pro"
    manifest = json.loads((folder / MANIFEST).read_text())
    kept = {f["path"] for f in manifest["files"]}
    assert manifest["complete"] is False and cut not in kept and kept  # files before the cut: recorded
    # what the folder holds now is said; a run with no data_root refuses it rather than read the demo
    row = next(x for x in _data("list", "--data-root", str(data))[1] if x.startswith("screenspot_pro "))
    assert row.endswith("fetch not finished (gge data fetch screenspot_pro goes on)")
    monkeypatch.setenv("GGE_DATA", str(data))
    with pytest.raises(GgeError, match=r"the fetch of screenspot_pro into .* did not finish"):
        run(
            parse_args(["benchmarks=[screenspot_pro]", f"output_dir={data.parent / 'out'}"]),
            out=io.StringIO(),
        )
    with pytest.raises(GgeError, match="did not finish there"):  # named as data_root: refused too
        run(
            parse_args(
                [f"data_root={data}", "benchmarks=[screenspot_pro]", f"output_dir={data.parent / 'o'}"]
            )
        )
    assert _data("fetch", "screenspot_pro", "--to", str(data), "--workers", "1")[0] == 0
    assert _fetched(folder) == pro_files
    for path in pro_files:  # kept files once; the cut one twice, whole the second time
        assert len(_resolves(hub, path)) == (2 if path == cut else 1), path


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, blob in entries.items():
            z.writestr(name, blob)
    return buf.getvalue()


def test_screenshots_in_a_zip_are_unpacked_where_gge_reads_them_and_resumed_byte_wise(
    hub: FakeHub, demo_suite: Path, data: Path
) -> None:
    src = demo_suite / "screenspot_v2"
    records = {p: b for p, b in _tree(src).items() if not p.startswith("screenspotv2_image/")}
    images = {p: b for p, b in _tree(src).items() if p.startswith("screenspotv2_image/")}
    padding = os.urandom(3 * fetch_module.BLOCK)  # stored: the zip is larger than one read block
    archive = _zip(
        {**images, "__MACOSX/screenspotv2_image/._x.png": b"junk", "screenspotv2_image/.pad": padding}
    )
    assert set(records) == {f"screenspot_{s}_v2.json" for s in ("mobile", "desktop", "web")}
    hub.add_commit(
        V2.repository, {**records, "screenspotv2_image.zip": archive, "README.md": b"x"}, sha=V2.revision
    )
    after = 2 * fetch_module.BLOCK + 100
    hub.cut_once("screenspotv2_image.zip", after)  # the connection closes: what came is kept
    with pytest.raises(GgeError, match="the download stopped"):
        _data("fetch", "screenspot_v2", "--to", str(data))
    assert _data("fetch", "screenspot_v2", "--to", str(data))[0] == 0
    gets = _resolves(hub, "screenspotv2_image.zip")
    assert [g.get("Range") for g in gets] == [None, f"bytes={after}-"]
    folder = data / "screenspot_v2"
    assert _fetched(folder) == {
        **records,
        **images,
        "screenspotv2_image/.pad": padding,
    }  # no zip, no __MACOSX
    manifest = json.loads((folder / MANIFEST).read_text())
    unpacked = {**images, "screenspotv2_image/.pad": padding}
    assert manifest["unpacked"] == [
        {
            "archive": "screenspotv2_image.zip",
            "sha256": hashlib.sha256(archive).hexdigest(),
            "into": "screenspotv2_image",
            "files": [
                {"path": p, "bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                for p, b in sorted(unpacked.items())
            ],
        }
    ]
    assert _data("check", "screenspot_v2", "--data-root", str(data))[0] == 0


def _targz(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, blob in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return buf.getvalue()


def test_a_github_archive_is_fetched_at_its_commit_and_resumed(
    hub: FakeHub, demo_suite: Path, data: Path
) -> None:
    files = {f"benchmark/{p}": b for p, b in _tree(demo_suite / "osworld_g").items()}
    top = f"OSWorld-G-{OSW_PIN}"
    noise = os.urandom(4 * fetch_module.BLOCK)  # incompressible: the archive spans several read blocks
    archive = _targz(
        {**{f"{top}/{p}": b for p, b in files.items()}, f"{top}/README.md": b"x", f"{top}/a.bin": noise}
    )
    path = f"{OSW.repository}/tar.gz/{OSW_PIN}"
    hub.add_archive(path, archive)
    hub.cut_once(path, 2 * fetch_module.BLOCK + 7)
    with pytest.raises(GgeError, match="the download stopped"):
        _data("fetch", "osworld_g", "--to", str(data))
    assert _data("fetch", "osworld_g", "--to", str(data))[0] == 0
    ranges = [h.get("Range") for m, p, h in hub.requests if m == "GET" and p.endswith(path)]
    assert ranges == [None, f"bytes={2 * fetch_module.BLOCK + 7}-"]
    folder = data / "osworld_g"
    assert _fetched(folder) == files
    manifest = json.loads((folder / MANIFEST).read_text())
    assert (manifest["kind"], manifest["commit"]) == ("github", OSW_PIN)
    assert manifest["unpacked"][0]["sha256"] == hashlib.sha256(archive).hexdigest()
    assert _data("check", "osworld_g", "--data-root", str(data))[0] == 0


def test_a_file_that_is_not_the_hosts_is_removed_and_named(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_pro(hub, pro_files)
    bad = sorted(p for p in pro_files if p.startswith("images/"))[0]
    listing = fetch_module._hub_listing

    def lying(host: Any, revision: str | None) -> tuple[str, list[fetch_module.Wanted]]:
        commit, wanted = listing(host, revision)
        return commit, [
            w if w.path != bad else fetch_module.Wanted(w.path, w.size, "0" * 64, None) for w in wanted
        ]

    monkeypatch.setattr(fetch_module, "_hub_listing", lying)
    with pytest.raises(
        GgeError, match=f"{bad}: not the file the host lists \\(sha256 .*, the host lists 000000000000"
    ):
        _data("fetch", "screenspot_pro", "--to", str(data))
    assert not (data / "screenspot_pro" / bad).exists()


def test_what_cannot_be_fetched_says_why_in_one_line(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path
) -> None:
    with pytest.MonkeyPatch.context() as mp:  # nothing listening: one line, no traceback
        mp.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
        with pytest.raises(GgeError, match=f"{PRO.repository}: the Hub at http://127.0.0.1:9 did not answer"):
            _data("fetch", "screenspot_pro", "--to", str(data))
    with pytest.raises(GgeError, match=f"{PRO.repository}: the Hub has no such dataset"):
        _data("fetch", "screenspot_pro", "--to", str(data))
    _lay_pro(hub, pro_files, sha="2" * 40)  # the pin is not there
    with pytest.raises(GgeError, match=f"the Hub has no revision {PRO.revision}"):
        _data("fetch", "screenspot_pro", "--to", str(data))
    hub.gate(PRO.repository)
    with pytest.raises(GgeError, match="the Hub says the dataset is gated: accept its terms"):
        _data("fetch", "screenspot_pro", "--to", str(data), "--revision", "2" * 40)
    with pytest.raises(GgeError, match="gge cannot fetch it from SeeClick's download links: download"):
        _data("fetch", "screenspot_v1", "--to", str(data))
    assert main(["data", "fetch", "groundui_1k", "--to", str(data)]) == 2  # the gge command: one line, exit 2
    with pytest.raises(GgeError, match="nothing to fetch"):
        _data("fetch", "records", "--to", str(data))


def test_a_file_changed_after_the_fetch_is_caught_by_check_and_by_a_run(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path
) -> None:
    _lay_pro(hub, pro_files)
    assert _data("fetch", "screenspot_pro", "--to", str(data))[0] == 0
    folder = data / "screenspot_pro"
    shot = sorted(p for p in pro_files if p.startswith("images/"))[0]
    blob = pro_files[shot]
    (folder / shot).write_bytes(blob[: len(blob) // 2])  # a truncated screenshot
    code, lines = _data("check", "screenspot_pro", "--data-root", str(data))
    assert code == 1
    said = hashlib.sha256(blob[: len(blob) // 2]).hexdigest()[:12]
    assert f"screenspot_pro: {folder / shot}: changed since fetched (sha256 {said}, fetched " in "\n".join(
        lines
    )
    assert any(x.startswith(f"screenspot_pro: {folder / shot}: undecodable") for x in lines)
    (folder / shot).write_bytes(blob)
    records = sorted(p for p in pro_files if p.startswith("annotations/"))[0]
    edited = json.loads(pro_files[records])
    edited[0]["bbox"] = [0, 0, 1, 1]
    (folder / records).write_text(json.dumps(edited))
    code, lines = _data("check", "screenspot_pro", "--data-root", str(data))
    assert code == 2
    assert lines[0].startswith(
        f"screenspot_pro: cannot be read: {folder / records}: not the file gge data fetch wrote"
    )
    assert lines[1].startswith(f"screenspot_pro: {folder / records}: changed since fetched (sha256 ")
    with pytest.raises(GgeError, match=f"{folder / records}: not the file gge data fetch wrote"):
        run(
            parse_args(
                [f"data_root={data}", "benchmarks=[screenspot_pro]", f"output_dir={data.parent / 'o'}"]
            )
        )


def _headline(result: dict[str, Any]) -> dict[str, Any]:
    entry = result["benchmarks"]["screenspot_pro"]
    return {
        k: v for k, v in entry.items() if k not in ("load", "timing", "images", "cost", "budget")
    }  # not timings


def test_a_run_with_no_data_root_reads_what_was_fetched_to_the_default_folder(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path, demo_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_pro(hub, pro_files)
    monkeypatch.setenv("GGE_DATA", str(data))
    assert _data("fetch", "screenspot_pro")[0] == 0  # no --to: the default data folder
    assert (data / "screenspot_pro" / MANIFEST).is_file()
    buf = io.StringIO()
    fetched = run(parse_args(["benchmarks=[screenspot_pro]", f"output_dir={data.parent / 'a'}"]), out=buf)
    assert f"data_root not set: reading screenspot_pro as gge data fetch put them in {data}" in buf.getvalue()
    direct = run(
        parse_args(
            [f"data_root={demo_suite}", "benchmarks=[screenspot_pro]", f"output_dir={data.parent / 'b'}"]
        ),
        out=io.StringIO(),
    )
    assert _headline(fetched) == _headline(direct)  # the same files, the same figures
    provenance = fetched["benchmarks"]["screenspot_pro"]["load"]["provenance"]
    manifest = (data / "screenspot_pro" / MANIFEST).read_bytes()
    assert provenance["fetched"] == {
        "kind": "hub",
        "repository": PRO.repository,
        "revision": PRO.revision,
        "commit": PRO.revision,
        "fetched_at": json.loads(manifest)["fetched_at"],
        "complete": True,
        "manifest_sha256": hashlib.sha256(manifest).hexdigest(),
    }
    assert "fetched" not in direct["benchmarks"]["screenspot_pro"]["load"]["provenance"]
    with pytest.raises(GgeError, match=r"screenspot_pro fetched in .*, but not osworld_g: fetch them"):
        run(parse_args(["benchmarks=[screenspot_pro,osworld_g]", f"output_dir={data.parent / 'c'}"]))
    monkeypatch.setenv("GGE_DATA", str(data.parent / "nothing"))
    buf = io.StringIO()
    run(parse_args(["benchmarks=[screenspot_pro]", f"output_dir={data.parent / 'd'}"]), out=buf)
    assert "data_root not set: using the synthetic demo suite" in buf.getvalue()


def test_data_root_demo_reads_the_synthetic_suite_whatever_was_fetched(
    hub: FakeHub, pro_files: dict[str, bytes], data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lay_pro(hub, pro_files)
    monkeypatch.setenv("GGE_DATA", str(data))
    assert _data("fetch", "screenspot_pro")[0] == 0
    with pytest.raises(GgeError, match=r"or data_root=demo \(the synthetic suite\)"):
        run(parse_args(["benchmarks=[screenspot_pro,osworld_g]", f"output_dir={data.parent / 'a'}"]))
    buf = io.StringIO()
    result = run(
        parse_args(
            ["data_root=demo", "benchmarks=[screenspot_pro,osworld_g]", f"output_dir={data.parent / 'b'}"]
        ),
        out=buf,
    )
    assert "data_root not set: using the synthetic demo suite" in buf.getvalue()
    assert "fetched" not in result["benchmarks"]["screenspot_pro"]["load"]["provenance"]


def test_a_github_fetch_names_a_commit(hub: FakeHub, data: Path) -> None:
    with pytest.raises(
        GgeError, match=r"name a commit of xlang-ai/OSWorld-G with --revision .*: a branch or tag"
    ):
        _data("fetch", "osworld_g", "--to", str(data), "--revision", "main")
    assert not any(m == "GET" for m, _, _ in hub.requests)


def test_an_unfinished_fetch_of_an_unpinned_set_goes_on_at_its_commit_after_the_branch_moved(
    hub: FakeHub, demo_suite: Path, data: Path
) -> None:
    host = get_benchmark("ui_i2e_bench").host
    assert host is not None and host.revision is None  # the branch head at fetch time
    files = _tree(demo_suite / "ui_i2e_bench")
    first = hub.add_commit(host.repository, files)
    shot = sorted(p for p in files if p.endswith(".png"))[-1]
    hub.cut_once(shot, 10, reset=True)
    with pytest.raises(GgeError, match="run the same fetch again"):
        _data("fetch", "ui_i2e_bench", "--to", str(data), "--workers", "1")
    moved = {**files, "I2E-bench-annotation.jsonl": b"{}\n"}
    assert hub.add_commit(host.repository, moved) != first  # main moves on
    assert _data("fetch", "ui_i2e_bench", "--to", str(data))[0] == 0
    manifest = json.loads((data / "ui_i2e_bench" / MANIFEST).read_text())
    assert (manifest["revision"], manifest["commit"]) == (None, first)  # the head asked, its commit then
    assert _fetched(data / "ui_i2e_bench") == files
    # finished, a fetch of the head now would mix two commits: refused
    with pytest.raises(GgeError, match=f"holds {host.repository} at {first[:12]}"):
        _data("fetch", "ui_i2e_bench", "--to", str(data))


def test_the_revision_of_a_fetched_webclick_is_recorded_and_a_contradicting_one_refused(
    hub: FakeHub, demo_suite: Path, data: Path
) -> None:
    host = _host("webclick")
    files = _tree(demo_suite / "webclick")
    hub.add_commit(host.repository, {**files, "examples/1.png": b"x"}, sha=host.revision)
    assert _data("fetch", "webclick", "--to", str(data))[0] == 0
    assert _fetched(data / "webclick") == files
    bench = get_benchmark("webclick")
    loaded = bench.load(data / "webclick", bench.options_type())
    assert loaded.summary["variant"]["revision"] == host.revision
    with pytest.raises(GgeError, match=f"bench.webclick.revision={'f' * 40}, but gge data fetch wrote"):
        bench.load(data / "webclick", replace(bench.options_type(), revision="f" * 40))  # type: ignore[call-arg]
