"""Reusable shared-memory slots that carry decoded screenshots from DataLoader workers to the model.

A worker that hands a decoded screenshot to the model's process as a torch tensor pays for a fresh
shared-memory segment per screenshot: the pages are allocated, zeroed and faulted in by the worker,
the file descriptor crosses to the other process through a socket handshake, and the pages are
faulted in again there. For a full-HD screenshot that costs about as much CPU as a fifth of decoding
it, which matters when the workers must keep up with a fast model on few cores.

Instead, each worker writes its screenshots into a few *slots*: files in a private folder under
``/dev/shm`` (memory, not disk) that it reuses. An item sent to the model's process carries a
:class:`SlotTicket` (the slot's path and the image's shape) instead of the pixels; unpickling the
ticket in the model's process copies the pixels out into an ordinary tensor and marks the slot free
(byte 0 of the slot file: 1 while the pixels wait, 0 once taken). All reads and writes go through
``pread``/``pwrite``, so the two processes see each other's writes in order on every architecture.

Nothing is lost when the slots are unavailable: no ``/dev/shm`` (macOS, Windows), a full one (a
container's default 64 MB), or every slot still waiting. The worker then hands over a tensor as
before. The environment variable ``GGE_SHM_DIR`` names another memory-backed folder to use, or, set
empty, turns slots off. The folder belongs to the loader (:func:`SlotFolder.create`) and is removed
with it; a folder left by a process that was killed is removed by the next one (its lock is free).

Example:
    >>> import pickle
    >>> from PIL import Image
    >>> folder = SlotFolder.create()
    >>> if folder is not None:
    ...     writer = SlotWriter(folder.path, slots=2)
    ...     ticket = writer.put(Image.new("RGB", (4, 3), (1, 2, 3)))
    ...     pixels = pickle.loads(pickle.dumps(ticket))  # what the model's process does
    ...     print(tuple(pixels.shape), pixels[0, 0].tolist(), writer.free())
    ...     writer.close()
    ...     folder.close()
    ... else:
    ...     print((3, 4, 3), [1, 2, 3], 1)
    (3, 4, 3) [1, 2, 3] 1
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

from gge.errors import GgeError

__all__ = ["SlotFolder", "SlotTicket", "SlotWriter", "shm_root", "take_pixels"]


def shm_root() -> Path | None:
    """Where slot folders go: ``$GGE_SHM_DIR`` if set (empty: nowhere), else ``/dev/shm``."""
    value = os.environ.get("GGE_SHM_DIR")
    if value is None:
        return Path("/dev/shm")
    return Path(value) if value.strip() else None


_PREFIX = "gge-slots-"
_HEADER = 64  # byte 0: the busy flag; the pixels start here
_FREE, _BUSY = b"\x00", b"\x01"


def take_pixels(path: str, shape: tuple[int, int, int]) -> torch.Tensor:
    """Copy the pixels out of a slot into a new uint8 tensor and mark the slot free.

    Args:
        path: The slot file.
        shape: (height, width, 3) of the image in the slot.

    Returns:
        The pixels, owned by this process.

    Raises:
        GgeError: when the slot file is gone or shorter than the image (naming the file).
    """
    pixels = np.empty(shape, dtype=np.uint8)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as e:
        raise GgeError(f"the screenshot slot {path} could not be opened: {e}") from e
    try:
        got = os.preadv(fd, [pixels.data.cast("B")], _HEADER)
        if got != pixels.nbytes:
            raise GgeError(f"the screenshot slot {path} holds {got} bytes, expected {pixels.nbytes}")
        os.pwrite(fd, _FREE, 0)
    finally:
        os.close(fd)
    return torch.from_numpy(pixels)


@dataclass(frozen=True)
class SlotTicket:
    """A screenshot waiting in a slot; unpickled, it *is* the pixels (a tensor), taken from the slot.

    Attributes:
        path: The slot file.
        shape: (height, width, 3).
    """

    path: str
    shape: tuple[int, int, int]

    def __reduce__(self) -> tuple[Any, ...]:
        return (take_pixels, (self.path, self.shape))


class SlotFolder:
    """A private folder of slots under :func:`shm_root`, held (locked) by the process that made it.

    Attributes:
        path: The folder.
    """

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = str(path)
        self._lock_fd: int | None = lock_fd

    @classmethod
    def create(cls, root: str | os.PathLike[str] | None = None) -> SlotFolder | None:
        """Make a new folder, after removing folders whose owner died.

        Args:
            root: Where (default :func:`shm_root`).

        Returns:
            The folder, or None when slots are off or ``root`` is not a writable folder.
        """
        root = shm_root() if root is None else Path(root)
        if root is None or not hasattr(os, "preadv") or not root.is_dir():
            return None
        if not os.access(root, os.W_OK | os.X_OK):
            return None
        import fcntl  # POSIX only; no /dev/shm elsewhere

        _sweep(root)
        path = root / f"{_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        fd = -1
        try:
            path.mkdir(mode=0o700)
            fd = os.open(path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if fd >= 0:
                os.close(fd)
            shutil.rmtree(path, ignore_errors=True)
            return None
        return cls(path, fd)

    def close(self) -> None:
        """Remove the folder and every slot in it (idempotent)."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None


def _sweep(root: Path) -> None:
    """Remove slot folders whose lock nobody holds: their owner died without cleaning up."""
    import fcntl

    try:
        entries = [p for p in root.iterdir() if p.name.startswith(_PREFIX)]
    except OSError:
        return
    for folder in entries:
        try:
            fd = os.open(folder / "lock", os.O_RDWR)
        except OSError:
            continue  # being created, or not ours
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # alive
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)


class SlotWriter:
    """A worker's slots: writes screenshots into free ones, grows their number up to ``slots``.

    Args:
        folder: The loader's :class:`SlotFolder` path.
        slots: At most this many slots (enough for the items in flight from one worker).
    """

    def __init__(self, folder: str, slots: int) -> None:
        self.folder = folder
        self.limit = slots
        self.broken = False
        self._slots: list[tuple[str, int, int]] = []  # (path, fd, capacity in bytes)

    def free(self) -> int:
        """How many of the slots made so far are free."""
        return sum(os.pread(fd, 1, 0) == _FREE for _, fd, _ in self._slots)

    def put(self, image: Image.Image) -> SlotTicket | None:
        """Write an RGB image into a free slot; None when none is free and no more can be made."""
        if self.broken:
            return None
        data = image.tobytes()
        shape = (image.height, image.width, 3)
        for i, (path, fd, capacity) in enumerate(self._slots):
            if os.pread(fd, 1, 0) != _FREE:
                continue
            if capacity < len(data) and not self._reserve(fd, len(data)):
                return None
            self._slots[i] = (path, fd, max(capacity, len(data)))
            return self._write(path, fd, data, shape)
        if len(self._slots) >= self.limit:
            return None
        path = os.path.join(self.folder, f"{os.getpid()}-{len(self._slots)}")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            self.broken = True  # the folder is gone (the loader ended) or not writable
            return None
        if not self._reserve(fd, len(data)):
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
            return None
        self._slots.append((path, fd, len(data)))
        return self._write(path, fd, data, shape)

    def _reserve(self, fd: int, size: int) -> bool:
        """Allocate the slot's memory now, so that a full /dev/shm is an error here, not a crash later."""
        try:
            os.posix_fallocate(fd, 0, _HEADER + size)
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.EINVAL, errno.EOPNOTSUPP, errno.EFBIG):
                raise
            self.broken = True
            return False
        return True

    @staticmethod
    def _write(path: str, fd: int, data: bytes, shape: tuple[int, int, int]) -> SlotTicket:
        view = memoryview(data)
        done = 0
        while done < len(data):
            done += os.pwrite(fd, view[done:], _HEADER + done)
        os.pwrite(fd, _BUSY, 0)
        return SlotTicket(path, shape)

    def close(self) -> None:
        """Remove this worker's slot files."""
        for path, fd, _ in self._slots:
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._slots = []
