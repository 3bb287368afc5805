"""Folders a run cannot write, for the one-line error tests: a real read-only one, or a simulated denial."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def denied(path: object) -> PermissionError:
    """The error the OS raises writing ``path`` in a folder without write permission."""
    return PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))


@contextmanager
def read_only_folder(parent: Path) -> Iterator[Path]:
    """``parent/ro``, readable but not writable, for the test's duration; the test skips where chmod
    does not stop writes (as root), and the folder is made writable again after it."""
    folder = parent / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("chmod does not stop writes here (running as root)")
        yield folder
    finally:
        folder.chmod(stat.S_IRWXU)
