"""A read-only output folder is a one-line error naming the folder, not a PermissionError traceback.

Tests here may run as root, where ``chmod`` does not stop writes: the read-only folder is simulated by
making the OS call raise the PermissionError a read-only folder gives (``os.open`` of the lock file,
``Path.mkdir`` of a subfolder, the write of run.json), and a real ``chmod`` is tried where it takes
effect (``os.access`` says so).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from unwritable import denied, read_only_folder

from gge.errors import GgeError
from gge.run.runstate import LOCK_FILE, output_dir_lock, prepare_output_dir


def _one_line(e: pytest.ExceptionInfo[GgeError], folder: Path) -> str:
    msg = str(e.value)
    assert "\n" not in msg and str(folder) in msg and "choose a writable output_dir" in msg
    assert e.value.__cause__ is None and e.value.__suppress_context__  # no chained traceback
    return msg


def test_the_lock_file_of_a_read_only_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def fake_open(path: Any, flags: int, mode: int = 0o777) -> int:
        if Path(path).name == LOCK_FILE:
            raise denied(path)
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", fake_open)  # runstate's os.open is this one
    with pytest.raises(GgeError) as e, output_dir_lock(tmp_path):
        pass
    msg = _one_line(e, tmp_path)
    assert f"cannot create its lock file {LOCK_FILE} (Permission denied)" in msg


def test_a_subfolder_of_a_read_only_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read_only = tmp_path / "ro"
    read_only.mkdir()
    real_mkdir = Path.mkdir

    def fake_mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        if self.parent == read_only and not self.exists():
            raise denied(self)
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", fake_mkdir)
    out = read_only / "run" / "deeper"
    with pytest.raises(GgeError) as e, output_dir_lock(out):
        pass
    assert f"cannot create the folder (Permission denied: {read_only / 'run'})" in _one_line(e, out)
    with pytest.raises(GgeError) as e:
        prepare_output_dir(out, {}, resume=True)
    assert f"cannot create the folder (Permission denied: {read_only / 'run'})" in _one_line(e, out)
    assert not (read_only / "run").exists()


def test_run_json_in_a_read_only_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = Path.open

    def fake_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name.startswith(".run.json."):  # atomic_write's temporary file beside run.json
            raise denied(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", fake_open)
    with pytest.raises(GgeError) as e:
        prepare_output_dir(tmp_path, {"k": 5}, resume=True)
    assert "cannot write run.json (Permission denied)" in _one_line(e, tmp_path)


def test_a_real_read_only_folder(tmp_path: Path) -> None:
    """The same through ``chmod``, where it takes effect (not as root)."""
    with read_only_folder(tmp_path) as folder:
        with pytest.raises(GgeError) as e, output_dir_lock(folder):
            pass
        assert "lock file" in _one_line(e, folder)
        with pytest.raises(GgeError) as e, output_dir_lock(folder / "sub"):
            pass
        assert "cannot create the folder" in _one_line(e, folder / "sub")
