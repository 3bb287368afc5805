"""``gge data fetch`` and ``gge data check`` on hosts laid from the real records, then a run on the fetch.

Each benchmark's host is laid on a fake Hub (tests/helpers/fake_hub.py), or served as a GitHub-like
archive, from the real annotation records of ../shared/benchmarks (skipped where absent) exactly as
the host publishes them (FORMATS.md), with placeholder screenshots of the recorded sizes (one small
image per size, its bytes shared by every path of that size) and files a run does not read beside
them. A pinned host is served at gge's pinned commit with a newer commit on ``main``; an unpinned one
at two commits, the newer on ``main``. The real command then fetches it in a subprocess and checks it.

Pinned, each against what this file laid and counted itself (not through gge's patterns or loaders):
the fetch's last line names the repository and the commit; the benchmark's folder holds exactly the
files a run reads, byte for byte (zips unpacked, distractors left on the host); the manifest's commit
and every file's sha256; ``gge data check`` exits 0, says the records are the release digests' with
the record count of the real files, and that every screenshot is present, decodable and of its size.
Last, a replay run with no ``data_root`` reads the fetched ScreenSpot-Pro from ``GGE_DATA``: results.json
records the pinned commit and a Top-1 counted by hand.

UI-Vision's check is an expected failure (strict): gge's digests of it hash the ``app_category`` label,
which comes from ``mapdict_cat2platform.json``, a file its Hub repository does not hold.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_hub import FakeHub, fake_hub_env  # type: ignore[import-not-found, unused-ignore]
from paths import ROOT  # type: ignore[import-not-found, unused-ignore]
from PIL import Image
from real_records import SHARED, load_json  # type: ignore[import-not-found, unused-ignore]

from gge.benchmarks import get_benchmark

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SHARED.is_dir(), reason="the real records (../shared/benchmarks) are absent"),
]

MANIFEST = ".gge-fetch.json"
WHOLE = "all present, decodable and of the size their records give"
README = b"# a dataset card\n\nNot read by gge.\n"


@functools.cache
def _image(w: int, h: int, fmt: str) -> bytes:
    """A uniform placeholder of ``w`` x ``h`` (small: one colour compresses to almost nothing)."""
    buf = io.BytesIO()
    if fmt == "PNG":
        Image.new("1", (w, h)).save(buf, format=fmt)
    else:  # lossless WebP decodes faster than lossy; JPEG has no lossless mode
        Image.new("L", (w, h)).save(buf, format=fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    return buf.getvalue()


def _shot(path: str, size: Any) -> bytes:
    """The placeholder for a screenshot at ``path`` (its format by its suffix) of ``size`` [w, h]."""
    fmt = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP"}[Path(path).suffix.lower()]
    w, h = (int(v) for v in size)
    return _image(w, h, fmt)


def _zip(entries: dict[str, bytes]) -> bytes:
    """A zip of ``entries`` (stored, as image zips are: PNGs do not deflate further), folders listed."""
    buf = io.BytesIO()
    folders = sorted({f"{parent}/" for p in entries for parent in Path(p).parents if parent != Path(".")})
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for folder in folders:
            z.writestr(folder, b"")
        for path, content in entries.items():
            z.writestr(path, content)
    return buf.getvalue()


def _github_tarball(top: str, files: dict[str, bytes], commit: str) -> bytes:
    """A tar.gz as GitHub's codeload serves it: a pax header naming the commit, one top folder."""
    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": commit}
    ) as t:
        folders = {top}
        for path in files:
            parts = path.split("/")[:-1]
            folders.update(f"{top}/" + "/".join(parts[: i + 1]) for i in range(len(parts)))
        for folder in sorted(folders):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o775
            t.addfile(info)
        for path, content in sorted(files.items()):
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size, info.mode = len(content), 0o664
            t.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Laid:
    """One benchmark's host as laid, and what a fetch of it must give (counted here, not by gge).

    Attributes:
        name: The benchmark.
        repo: The repository's files at the commit fetched (path -> bytes).
        expected: The files of ``DATA/<directory>`` a run reads (path -> bytes), the manifest aside.
        records: The records of the real files.
        screenshots: The distinct screenshots they name.
        zips: Each zip in ``repo`` a fetch unpacks -> the files of ``expected`` it holds.
        also: Further benchmarks read from the same folder -> their records.
    """

    name: str
    repo: dict[str, bytes]
    expected: dict[str, bytes]
    records: int
    screenshots: int
    zips: dict[str, set[str]] = field(default_factory=dict)
    also: dict[str, int] = field(default_factory=dict)


def _read(*parts: str) -> bytes:
    return Path(SHARED, *parts).read_bytes()


def _under(files: dict[str, bytes], *prefixes: str) -> dict[str, bytes]:
    return {p: c for p, c in files.items() if p.startswith(prefixes)}


def _screenspot_pro() -> Laid:
    """likaixin/ScreenSpot-Pro: annotations/<app>_<os>.json, images/<img_filename> (FORMATS.md, 2)."""
    repo = {"README.md": README, "annotate.html": b"<html><body>an annotation tool</body></html>\n"}
    records = 0
    for src in sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json")):
        repo[f"annotations/{src.name}"] = src.read_bytes()
        for rec in load_json(src):
            repo[f"images/{rec['img_filename']}"] = _shot(rec["img_filename"], rec["img_size"])
            records += 1
    shots = len(_under(repo, "images/"))
    return Laid("screenspot_pro", repo, _under(repo, "annotations/", "images/"), records, shots)


def _mmbench_gui() -> Laid:
    """OpenGVLab/MMBench-GUI: L2_annotations.json, the screenshots in a zip (FORMATS.md, 5)."""
    records = load_json(SHARED / "mmbench_gui" / "L2_annotations.json")
    images = {
        f"offline_images/{r['platform']}/{r['image_path']}": _shot(r["image_path"], r["image_size"])
        for r in records
    }
    l1 = [{"index": 0, "image_path": "a.png", "question": "Which app is open?", "options": ["A", "B"]}]
    repo = {
        "README.md": README,
        "L1_annotations.json": json.dumps(l1).encode(),  # level 1 (GUI content understanding)
        "L2_annotations.json": _read("mmbench_gui", "L2_annotations.json"),
        "MMBench-GUI-OfflineImages.zip": _zip(
            {f"MMBench-GUI-OfflineImages/{p}": c for p, c in images.items()}
        ),
    }
    expected = {"L2_annotations.json": repo["L2_annotations.json"], **images}
    zips = {"MMBench-GUI-OfflineImages.zip": set(images)}
    return Laid("mmbench_gui", repo, expected, len(records), len(images), zips)


def _screenspot_v2() -> Laid:
    """OS-Copilot/ScreenSpot-v2: three split files, screenspotv2_image.zip (FORMATS.md, 1)."""
    sizes = load_json(SHARED / "screenspot_v2" / "image_sizes.json")
    repo = {"README.md": README}
    images: dict[str, bytes] = {}
    records = 0
    for split in ("mobile", "desktop", "web"):
        name = f"screenspot_{split}_v2.json"
        repo[name] = _read("screenspot_v2", name)
        for rec in load_json(SHARED / "screenspot_v2" / name):
            filename = rec["img_filename"]
            images[f"screenspotv2_image/{filename}"] = _shot(filename, sizes[filename])
            records += 1
    repo["screenspotv2_image.zip"] = _zip(images)
    expected = {p: c for p, c in repo.items() if p.endswith("_v2.json")} | images
    return Laid(
        "screenspot_v2", repo, expected, records, len(images), {"screenspotv2_image.zip": set(images)}
    )


def _cagui_grounding() -> Laid:
    """openbmb/CAGUI, folder CAGUI_grounding/: code/{cap,ocr}.jsonl, images/{cap,ocr}/ (FORMATS.md, 9)."""
    sizes = load_json(SHARED / "cagui_grounding" / "image_sizes.json")
    prefix = "grounding_eval/dataset/images/"  # the records' paths: cap <n>.jpeg, ocr ocr/<n>.jpeg
    repo = {"README.md": README, "CAGUI_agent/x.json": b'{"episode": 0}\n'}
    records = 0
    for file, folder in (("cap.jsonl", "images/cap/"), ("ocr.jsonl", "images/")):
        repo[f"CAGUI_grounding/code/{file}"] = _read("cagui_grounding", "code", file)
        for rec in _jsonl(SHARED / "cagui_grounding" / "code" / file):
            assert rec["image"].startswith(prefix)
            path = f"CAGUI_grounding/{folder}{rec['image'][len(prefix) :]}"
            repo[path] = _shot(path, sizes[rec["image"]])
            records += 1
    shots = len(_under(repo, "CAGUI_grounding/images/"))
    return Laid("cagui_grounding", repo, _under(repo, "CAGUI_grounding/"), records, shots)


def _ui_vision() -> Laid:
    """ServiceNow/ui-vision: annotations/element_grounding/*.json, images/<image_path> (FORMATS.md, 4)."""
    folder = SHARED / "ui_vision" / "annotations" / "element_grounding"
    repo = {"README.md": README, "annotations/layout_grounding/layout_grounding.json": b"[]\n"}
    records = 0
    for setting in ("basic", "functional", "spatial"):
        name = f"element_grounding_{setting}.json"
        repo[f"annotations/element_grounding/{name}"] = (folder / name).read_bytes()
        for rec in load_json(folder / name):
            repo[f"images/{rec['image_path']}"] = _shot(rec["image_path"], rec["image_size"])
            records += 1
    shots = len(_under(repo, "images/"))
    return Laid("ui_vision", repo, _under(repo, "annotations/element_grounding/", "images/"), records, shots)


def _ui_i2e_bench() -> Laid:
    """vaundys/I2E-Bench: I2E-bench-annotation.jsonl, screenshot/folder_<k>/<name>.png (FORMATS.md, 6)."""
    sizes = load_json(SHARED / "ui_i2e_bench" / "image_sizes.json")
    records = _jsonl(SHARED / "ui_i2e_bench" / "I2E-bench-annotation.jsonl")
    images = {r["image"]: _shot(r["image"], sizes[r["image"]]) for r in records}
    annotations = {"I2E-bench-annotation.jsonl": _read("ui_i2e_bench", "I2E-bench-annotation.jsonl")}
    repo = {"README.md": README, **annotations, **images}
    return Laid("ui_i2e_bench", repo, {**annotations, **images}, len(records), len(images))


def _showdown_clicks() -> Laid:
    """generalagents/showdown-clicks: showdown-clicks-dev/data.csv and frames/ (FORMATS.md, 8)."""
    data = _read("showdown_clicks", "showdown-clicks-dev", "data.csv")
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
    frames = {f"showdown-clicks-dev/{r['image']}": _shot(r["image"], (r["width"], r["height"])) for r in rows}
    repo = {"README.md": README, "showdown-clicks-dev/data.csv": data, **frames}
    return Laid("showdown_clicks", repo, _under(repo, "showdown-clicks-dev/"), len(rows), len(frames))


def _osworld_g() -> Laid:
    """xlang-ai/OSWorld-G's archive: benchmark/ holds the records and images/ (FORMATS.md, 3)."""
    folder = SHARED / "osworld_g" / "benchmark"
    repo = {
        "README.md": README,
        "evaluation/eval.py": b"print('the official scorer')\n",
        "benchmark/README.md": b"records and screenshots\n",
    }
    counts: dict[str, int] = {}
    for name, bench in (("OSWorld-G.json", "osworld_g"), ("OSWorld-G_refined.json", "osworld_g_refined")):
        repo[f"benchmark/{name}"] = (folder / name).read_bytes()
        records = load_json(folder / name)
        counts[bench] = len(records)
        for rec in records:
            repo[f"benchmark/images/{rec['image_path']}"] = _shot(rec["image_path"], rec["image_size"])
    expected = {p: c for p, c in _under(repo, "benchmark/").items() if p != "benchmark/README.md"}
    shots = len(_under(repo, "benchmark/images/"))
    also = {"osworld_g_refined": counts["osworld_g_refined"]}
    return Laid("osworld_g", repo, expected, counts["osworld_g"], shots, also=also)


LAYERS: dict[str, Callable[[], Laid]] = {
    "screenspot_pro": _screenspot_pro,
    "mmbench_gui": _mmbench_gui,
    "osworld_g": _osworld_g,
    "screenspot_v2": _screenspot_v2,
    "cagui_grounding": _cagui_grounding,
    "ui_vision": _ui_vision,
    "ui_i2e_bench": _ui_i2e_bench,
    "showdown_clicks": _showdown_clicks,
}


@dataclass
class Fetched:
    """A fetch of one laid host into ``data`` and the check after it."""

    laid: Laid
    commit: str
    archives: dict[str, str]  # the manifest's unpacked archive -> the sha256 of what was served
    data: Path
    fetch: subprocess.CompletedProcess[str]
    check: subprocess.CompletedProcess[str]


def _serve(hub: FakeHub, laid: Laid) -> tuple[str, dict[str, str]]:
    """Serve ``laid`` where gge's host names it: the commit a fetch must get, the archives it unpacks."""
    host = get_benchmark(laid.name).host
    assert host is not None
    sha256 = {z: hashlib.sha256(laid.repo[z]).hexdigest() for z in laid.zips}
    first = min(set(laid.expected) & set(laid.repo))
    other = {**laid.repo, "README.md": README + b"\nAnother commit.\n", first: laid.repo[first] + b"\n"}
    if host.kind == "github":  # codeload: /{repo}/tar.gz/{sha}, one top folder <name>-<sha>/
        assert host.revision is not None
        tarball = _github_tarball(
            f"{host.repository.split('/')[1]}-{host.revision}", laid.repo, host.revision
        )
        archive = f"{host.repository}/tar.gz/{host.revision}"
        hub.add_archive(archive, tarball)
        return host.revision, {archive: hashlib.sha256(tarball).hexdigest()}
    if host.revision is not None:  # the pin, then a newer head on main that a fetch must not take
        sha = hub.add_commit(host.repository, laid.repo, sha=host.revision)
        hub.add_commit(host.repository, other)
        return sha, sha256
    hub.add_commit(host.repository, other)  # an older commit, then the head at fetch time
    return hub.add_commit(host.repository, laid.repo), sha256


def _gge(hub: FakeHub, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **fake_hub_env(hub, home=tmp / "hf"), "GGE_GITHUB_ENDPOINT": hub.url}
    env.pop("HF_TOKEN", None)
    # glibc gives a thread's arena back to the system after each large free: every screenshot check
    # decodes in a worker thread would page-fault its whole buffer anew (twice the time, on WebP)
    env.setdefault("MALLOC_TOP_PAD_", str(64 << 20))
    return subprocess.run(
        [sys.executable, "-m", "gge.cli.commands", "data", *args],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    with FakeHub() as running:
        yield running


@pytest.fixture(scope="module")
def fetched(hub: FakeHub, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Fetched]:
    """Lay, serve, fetch and check one benchmark (once per module)."""
    done: dict[str, Fetched] = {}

    def get(name: str) -> Fetched:
        if name not in done:
            laid = LAYERS[name]()
            commit, archives = _serve(hub, laid)
            tmp = tmp_path_factory.mktemp(name)
            data = tmp / "data"
            fetch = _gge(hub, tmp, "fetch", name, "--to", str(data))
            check = _gge(hub, tmp, "check", name, *laid.also, "--data-root", str(data))
            done[name] = Fetched(laid, commit, archives, data, fetch, check)
        return done[name]

    return get


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but the manifest (path relative to it -> bytes)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST
    }


@pytest.mark.parametrize("name", list(LAYERS))
def test_a_fetch_lays_exactly_the_files_a_run_reads(name: str, fetched: Callable[[str], Fetched]) -> None:
    got = fetched(name)
    laid, bench = got.laid, get_benchmark(name)
    host = bench.host
    assert host is not None
    assert got.fetch.returncode == 0, got.fetch.stdout + got.fetch.stderr
    last = got.fetch.stdout.splitlines()[-1]
    assert last.startswith(f"{name}: ") and f" from {host.where} at {got.commit[:12]} in " in last, last
    folder = got.data / bench.directory
    on_disk = _files(folder)
    assert sorted(on_disk) == sorted(laid.expected)  # nothing more, nothing less: then byte for byte
    assert on_disk == laid.expected
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    assert (manifest["repository"], manifest["commit"], manifest["complete"]) == (
        host.repository,
        got.commit,
        True,
    )
    unpacked = {u["archive"]: u for u in manifest["unpacked"]}
    assert {a: u["sha256"] for a, u in unpacked.items()} == got.archives
    for archive, paths in laid.zips.items():
        assert {f["path"] for f in unpacked[archive]["files"]} == paths
    from_zips = {p for paths in laid.zips.values() for p in paths}
    assert {f["path"] for f in manifest["files"]} == set(laid.expected) - from_zips
    every = [*manifest["files"], *(f for u in unpacked.values() for f in u.get("files", []))]
    assert {f["path"]: (f["bytes"], f["sha256"]) for f in every} == {
        p: (len(c), hashlib.sha256(c).hexdigest()) for p, c in laid.expected.items()
    }


@pytest.mark.parametrize("name", list(LAYERS))
def test_gge_data_check_finds_the_fetch_whole_and_the_release_records(
    name: str, fetched: Callable[[str], Fetched]
) -> None:
    got = fetched(name)
    laid, host = got.laid, get_benchmark(name).host
    assert host is not None and got.fetch.returncode == 0
    lines = got.check.stdout.splitlines()
    assert got.check.returncode == 0, got.check.stdout + got.check.stderr
    for bench, records in {name: laid.records, **laid.also}.items():
        assert f"{bench}: records: as gge's release digests give them ({records} records)" in lines, lines
        assert f"{bench}: {records} records, {laid.screenshots} screenshots: {WHOLE}" in lines, lines
        said = f"{bench}: fetched from {host.kind} {host.repository} at {got.commit[:12]} ("
        assert any(line.startswith(said) for line in lines), lines
    assert len(lines) == 3 * (1 + len(laid.also)), lines  # those three lines each, and no problem


def test_a_run_with_no_data_root_reads_the_fetched_screenspot_pro(
    fetched: Callable[[str], Fetched], tmp_path: Path
) -> None:
    got = fetched("screenspot_pro")
    assert got.fetch.returncode == 0, got.fetch.stderr
    host = get_benchmark("screenspot_pro").host
    assert host is not None and host.revision is not None
    lines, hits, total = [], 0, 0
    for src in sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json")):
        for rec in load_json(src):
            x1, y1, x2, y2 = rec["bbox"]
            w, h = rec["img_size"]
            if total % 3:  # two in three: the box's centre
                point = [(x1 + x2) / 2, (y1 + y2) / 2]
            else:  # else the image's corner farthest from the box
                point = [0.0 if x1 + x2 > w else w - 1.0, 0.0 if y1 + y2 > h else h - 1.0]
            hits += x1 <= point[0] <= x2 and y1 <= point[1] <= y2
            total += 1
            lines.append(json.dumps({"benchmark": "screenspot_pro", "id": rec["id"], "candidates": [point]}))
    assert 0 < hits < total
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    env = {**os.environ, "GGE_DATA": str(got.data), "OMP_NUM_THREADS": "1"}
    argv = [f"model.predictions={predictions}", "benchmarks=[screenspot_pro]", f"output_dir={out}"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "eval.py"), *argv, "report_misses=0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = json.loads((out / "results.json").read_text())["benchmarks"]["screenspot_pro"]
    fetched_from = entry["load"]["provenance"]["fetched"]
    assert (fetched_from["repository"], fetched_from["commit"]) == (host.repository, host.revision)
    assert entry["samples"] == total
    assert entry["top1"] == pytest.approx(100 * hits / total)
