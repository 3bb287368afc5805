"""``gge import --out``: a replay file that cannot be written is one line naming its folder, no traceback.

These tests may run as root, where ``chmod`` does not stop a write: a folder above ``--out`` that is
a regular file is real everywhere; a read-only folder is simulated by making the OS call raise the
PermissionError a read-only folder gives (the temporary file's open, the subfolder's mkdir), and a
real ``chmod`` is tried where it takes effect (``os.access`` says so).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT
from unwritable import denied, read_only_folder

from gge.benchmarks.demo import write_demo_suite
from gge.cli.commands import main


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_suite(tmp_path_factory.mktemp("demo"), per_benchmark=12)


def _log(suite: Path, tmp_path: Path) -> Path:
    """An official-script log of one of the suite's ScreenSpot-Pro samples, answered at its box's centre."""
    [first] = json.loads(sorted((suite / "screenspot_pro" / "annotations").glob("*.json"))[0].read_text())[:1]
    x1, y1, x2, y2 = first["bbox"]
    detail = {
        "id": first["id"],
        "img_path": first["img_filename"],
        "prompt_to_evaluate": first["instruction"],
        "pred": [(x1 + x2) / 2, (y1 + y2) / 2],
        "bbox": first["bbox"],
        "correctness": "correct",
    }
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"details": [detail]}))
    return log


def _args(suite: Path, log: Path, out: Path) -> list[str]:
    return ["import", "sspro_log", str(log), "--benchmark", "screenspot_pro", "--data-root", str(suite),
            "--out", str(out)]  # fmt: skip


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``gge`` wrote on stderr (nothing else there)."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gge: error: ") and "Traceback" not in err, err
    return err.strip()


def test_an_out_under_a_regular_file_names_that_file(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _log(suite, tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("")
    for out in (afile / "preds.jsonl", afile / "sub" / "preds.jsonl"):
        assert main(_args(suite, log, out)) == 2
        assert _error(capsys) == f"gge: error: --out folder {out.parent}: {afile} is a file, not a folder"
    assert afile.read_text() == ""
    # refused before any work: a data root that is not there is never looked at
    assert main(_args(tmp_path / "no_data", log, afile / "preds.jsonl")) == 2
    assert f"--out folder {afile}: {afile} is a file, not a folder" in _error(capsys)


def test_the_console_script_prints_one_line_not_a_traceback(suite: Path, tmp_path: Path) -> None:
    log = _log(suite, tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "gge.cli.commands", *_args(suite, log, afile / "preds.jsonl")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == f"gge: error: --out folder {afile}: {afile} is a file, not a folder\n"


def test_an_out_that_is_a_folder_is_refused(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "replays"
    folder.mkdir()
    assert main([*_args(suite, _log(suite, tmp_path), folder), "--force"]) == 2
    assert _error(capsys) == f"gge: error: --out {folder} is a folder: name the replay file to write in it"


def test_a_read_only_folder_names_the_folder(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(suite, tmp_path)
    read_only = tmp_path / "ro"
    read_only.mkdir()
    real_open, real_mkdir = Path.open, Path.mkdir

    def fake_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.parent == read_only:
            raise denied(self)
        return real_open(self, *args, **kwargs)

    def fake_mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        if self.parent == read_only and not self.exists():
            raise denied(self)
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", fake_open)
    monkeypatch.setattr(Path, "mkdir", fake_mkdir)
    out = read_only / "preds.jsonl"
    assert main(_args(suite, log, out)) == 2
    assert _error(capsys) == (
        f"gge: error: --out {out}: cannot write the replay file in {read_only} (Permission denied); "
        "choose a writable --out folder"
    )
    deeper = read_only / "sub" / "preds.jsonl"
    assert main(_args(suite, log, deeper)) == 2
    assert _error(capsys) == (
        f"gge: error: --out folder {deeper.parent}: cannot create the folder "
        f"(Permission denied: {deeper.parent}); choose a writable --out folder"
    )
    assert list(read_only.iterdir()) == []


def test_a_failed_write_leaves_no_temporary_file(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: Path, target: Any) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "replace", full)
    out = tmp_path / "replays" / "preds.jsonl"
    assert main(_args(suite, _log(suite, tmp_path), out)) == 2
    assert _error(capsys) == (
        f"gge: error: --out {out}: cannot write the replay file in {out.parent} (No space left on device); "
        "choose a writable --out folder"
    )
    assert list(out.parent.iterdir()) == []


def test_a_real_read_only_folder(suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same through ``chmod``, where it takes effect (not as root)."""
    log = _log(suite, tmp_path)
    with read_only_folder(tmp_path) as folder:
        assert main(_args(suite, log, folder / "preds.jsonl")) == 2
        assert f"cannot write the replay file in {folder} (Permission denied)" in _error(capsys)
        assert main(_args(suite, log, folder / "sub" / "preds.jsonl")) == 2
        assert f"--out folder {folder / 'sub'}: cannot create the folder" in _error(capsys)
