"""How a document reaches disk: atomically, so a reader sees the old file or the whole new one."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, text: str) -> Path:
    """Write a UTF-8 text file so that readers see the old file or the whole new one, never a part.

    The text goes to a hidden temporary file beside ``path`` (named with this process's id), is
    flushed to disk, and replaces ``path`` in one rename; on failure the temporary file is removed.

    Args:
        path: The destination.
        text: The contents.

    Returns:
        ``path``.

    Example:
        >>> import tempfile
        >>> atomic_write(Path(tempfile.mkdtemp()) / "a.txt", "hello").read_text()
        'hello'
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
