"""``gge data check``: every record's screenshot present, decodable and of the size its record gives.

Pinned on copies of the demo suite's GroundUI-1K and ScreenSpot-Pro, counted from their own records
files (not through gge's loaders): a whole folder passes with one summary line per benchmark (records
and distinct screenshots as the files hold them); a missing file, a truncated one and a resized one
are each one line naming the file, what is wrong and its samples, the summary counts them and the
exit code is 1; an empty data folder, an unknown name and an unreadable benchmark each say so. On the
real records of ../shared/benchmarks (skipped where absent): true-size placeholders pass, their
records are the release digests' records, and one shrunk placeholder is caught.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image
from real_records import SHARED, Placeholders, load_json

from gge.cli.commands import main
from gge.cli.data import data_main
from gge.errors import GgeError

GROUNDUI = Path("groundui_1k") / "gui_grounding"
DEMO = "records: gge's synthetic demo suite (not the release: not compared with its digests)"


@pytest.fixture
def data(demo_suite: Path, tmp_path: Path) -> Path:
    root = tmp_path / "data"
    for name in ("groundui_1k", "screenspot_pro"):
        shutil.copytree(demo_suite / name, root / name)
    shutil.copy(demo_suite / "demo_manifest.json", root)  # the synthetic suite says what it is
    return root


def _groundui(root: Path) -> tuple[list[dict[str, object]], dict[str, list[int]]]:
    """GroundUI-1K's records as its file holds them, and each image's record indices."""
    records = [json.loads(x) for x in (root / GROUNDUI / "metadata_1k.jsonl").read_text().splitlines()]
    on: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        on.setdefault(str(r["image"]), []).append(i)
    return records, on


def _pro_counts(root: Path) -> tuple[int, int]:
    records = [
        r for f in sorted((root / "screenspot_pro" / "annotations").glob("*.json")) for r in load_json(f)
    ]
    return len(records), len({r["img_filename"] for r in records})


def _check(*argv: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = data_main(["check", *argv], out=out)
    return code, out.getvalue().splitlines()


def test_a_whole_folder_passes(data: Path) -> None:
    code, lines = _check("--data-root", str(data))
    records, on = _groundui(data)
    n, shots = _pro_counts(data)
    assert code == 0
    assert lines == [  # the registry's order: screenspot_pro before groundui_1k
        f"screenspot_pro: {DEMO}",
        f"screenspot_pro: {n} records, {shots} screenshots: all present, decodable and of the size their "
        "records give",
        f"groundui_1k: {DEMO}",
        f"groundui_1k: {len(records)} records, {len(on)} screenshots: all present, decodable and of the size "
        "their records give",
    ]


def test_a_missing_a_truncated_and_a_resized_screenshot_are_named(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records, on = _groundui(data)
    gone, cut, small = sorted(on)[:3]
    images = data / GROUNDUI / "images"
    (images / gone).unlink()
    blob = (images / cut).read_bytes()
    (images / cut).write_bytes(blob[: len(blob) // 2])  # a download cut in the middle
    w, h = records[on[small][0]]["resolution"]  # type: ignore[misc]
    Image.new("RGB", (w // 2, h // 2)).save(images / small)
    monkeypatch.setenv("GGE_DATA", str(data))
    code, lines = _check("groundui_1k")  # the data folder from GGE_DATA
    assert code == 1

    def ids(name: str) -> str:
        return ", ".join(str(i) for i in on[name][:5])  # GroundUI's id is the record's line index

    assert lines[-2] == f"groundui_1k: {DEMO}"
    by_path = {line.split(": ")[1]: line for line in lines[:-2]}
    assert set(by_path) == {str(images / gone), str(images / cut), str(images / small)}
    assert by_path[str(images / gone)].startswith(f"groundui_1k: {images / gone}: missing; sample")
    assert by_path[str(images / cut)].startswith(f"groundui_1k: {images / cut}: undecodable (")
    assert by_path[str(images / small)].startswith(
        f"groundui_1k: {images / small}: wrong size (the file is {w // 2}x{h // 2}, its records say {w}x{h});"
    )
    for name in (gone, cut, small):
        assert ids(name) in by_path[str(images / name)]
    assert lines[-1] == (
        f"groundui_1k: {len(records)} records, {len(on)} screenshots: 1 missing, 1 undecodable, 1 wrong size"
    )
    assert main(["data", "check", "groundui_1k"]) == 1  # the gge command, the same exit code


def test_what_cannot_be_checked_says_so(data: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GGE_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the default data folder: nothing there
    with pytest.raises(GgeError, match=f"no benchmark folder under {tmp_path / 'cache' / 'gge' / 'data'}"):
        _check()
    with pytest.raises(GgeError, match="screenspot_pr"):
        _check("screenspot_pr", "--data-root", str(data))
    (data / GROUNDUI / "metadata_1k.jsonl").write_text("not json\n")
    code, lines = _check("groundui_1k", "--data-root", str(data))
    assert code == 2 and lines[0].startswith("groundui_1k: cannot be read: ")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(GgeError, match=f"no benchmark folder under {empty}"):
        _check("--data-root", str(empty))


@pytest.mark.skipif(not SHARED.is_dir(), reason="the real records (../shared/benchmarks) are absent")
def test_the_real_screenspot_pro_records(tmp_path: Path) -> None:
    lay = Placeholders(tmp_path / "pngs").lay
    (tmp_path / "pngs").mkdir()
    pro = tmp_path / "data" / "screenspot_pro"
    (pro / "annotations").mkdir(parents=True)
    sizes: dict[str, tuple[int, int]] = {}
    for src in sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json")):
        shutil.copy(src, pro / "annotations" / src.name)
        for rec in load_json(src):
            lay(pro / "images" / rec["img_filename"], rec["img_size"])
            sizes[rec["img_filename"]] = tuple(rec["img_size"])
    n, shots = _pro_counts(tmp_path / "data")
    code, lines = _check("screenspot_pro", "--data-root", str(tmp_path / "data"))
    whole = "all present, decodable and of the size their records give"
    assert (code, lines) == (
        0,
        [
            f"screenspot_pro: records: as gge's release digests give them ({n} records)",
            f"screenspot_pro: {n} records, {shots} screenshots: {whole}",
        ],
    )
    name, (w, h) = sorted(sizes.items())[0]
    target = pro / "images" / name
    target.unlink()  # a hard link: replaced, the others untouched
    Image.new("1", (w - 1, h)).save(target)
    code, lines = _check("screenspot_pro", "--data-root", str(tmp_path / "data"))
    assert code == 1 and lines[0].startswith(f"screenspot_pro: {target}: wrong size (the file is {w - 1}x{h}")


def test_a_reader_that_goes_away_gets_no_traceback(data: Path) -> None:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "gge.cli.commands", "data", "check", "--data-root", str(data)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # gone before the first line is written: every write meets a closed pipe
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141 and "Traceback" not in err, err
