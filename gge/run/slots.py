"""Reusable shared-memory slots that carry decoded screenshots from DataLoader workers to the model.

A worker that hands a decoded screenshot to the model's process as a torch tensor pays for a fresh
shared-memory segment per screenshot: the pages are allocated, zeroed and faulted in by the worker,
the file descriptor crosses to the other process through a socket handshake, and the pages are
faulted in again there. For a full-HD screenshot that costs about as much CPU as a fifth of decoding
it, which matters when the workers must keep up with a fast model on few cores.

Instead, each worker writes its screenshots into a few *slots*: files in a private folder under
``/dev/shm`` (memory, not disk) that it reuses. An item sent to the model's process carries a
:class:`SlotTicket` (the slot's path, the image's shape and number) instead of the pixels;
unpickling the ticket in the model's process copies the pixels out into an ordinary tensor and marks
the slot free. A slot's header says whether it is busy and which image it holds, so a ticket taken
twice, or a slot file removed under the run, is detected (:class:`SlotGone`) rather than read as
another image. All reads and writes go through ``pread``/``pwrite``, so the two processes see each
other's writes in order on every architecture.

Nothing is lost when the slots are unavailable: no ``/dev/shm`` (macOS, Windows), a full one (a
container's default 64 MB), or every slot still waiting. The worker then hands over a tensor as
before (torch's sharing, which needs room in ``/dev/shm`` too: a writer that ran out of room gives
its free slots back). The environment variable ``GGE_SHM_DIR`` names another memory-backed folder to
use, or, set empty, turns slots off. The folder belongs to the loader's dataset (see
:func:`gge.run.data.make_loader`) and is removed when that is garbage-collected or the process exits; a
folder left by a process that was killed is removed by the next process that makes a folder in the
same place, once the dead owner's workers have exited too (they hold its lock).

Example:
    >>> from PIL import Image
    >>> folder = SlotFolder.create()
    >>> if folder is not None:
    ...     writer = SlotWriter(folder.path, slots=2)
    ...     ticket = writer.put(Image.new("RGB", (4, 3), (1, 2, 3)))
    ...     # A worker pickles the ticket; the model's process unpickles it:
    ...     pixels = take_pixels(ticket.path, ticket.shape, ticket.number)
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

__all__ = ["SlotFolder", "SlotGone", "SlotTicket", "SlotWriter", "shm_root", "take_pixels"]


def shm_root() -> Path | None:
    """Where slot folders go: ``$GGE_SHM_DIR`` if set (empty: nowhere), else ``/dev/shm``."""
    value = os.environ.get("GGE_SHM_DIR")
    if value is None:
        return Path("/dev/shm")
    return Path(value) if value.strip() else None


_PREFIX = "gge-slots-"
_PARTIAL = ".gge-partial-"  # a folder being made; the sweep ignores it
_HEADER = 64  # byte 0: the busy flag; bytes 8-15: the number of the image in the slot; then the pixels
_FREE, _BUSY = 0, 1


class SlotGone(GgeError):
    """A ticket's image is no longer in its slot (the file was removed, or the ticket was taken before)."""


def take_pixels(path: str, shape: tuple[int, int, int], number: int) -> torch.Tensor:
    """Copy the pixels out of a slot into a new uint8 tensor and mark the slot free.

    Args:
        path: The slot file.
        shape: (height, width, 3) of the image in the slot.
        number: The image's number in its writer (the ticket's), checked against the slot's header.

    Returns:
        The pixels, owned by this process.

    Raises:
        SlotGone: when the slot file is gone, or holds another image or none (naming the file).
    """
    header = bytearray(_HEADER)
    pixels = np.empty(shape, dtype=np.uint8)
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as e:
        raise SlotGone(f"the screenshot slot {path} could not be opened: {e}") from e
    try:
        got = os.preadv(fd, [header, pixels.data.cast("B")], 0)
        state, held = header[0], int.from_bytes(header[8:16], "little")
        if state != _BUSY or held != number or got != _HEADER + pixels.nbytes:
            raise SlotGone(
                f"the screenshot slot {path} does not hold image {number}"
                f" (state {state}, image {held}, {got - _HEADER} bytes for {pixels.nbytes})"
            )
        os.pwrite(fd, bytes([_FREE]), 0)
    finally:
        os.close(fd)
    return torch.from_numpy(pixels)


@dataclass(frozen=True)
class SlotTicket:
    """A screenshot waiting in a slot; unpickled in another process, it *is* the pixels (a tensor).

    Unpickling in the process that wrote the slot (``copy.deepcopy`` in a worker, say) gives the
    ticket back, leaving the slot to the original. A ticket is taken once: the first take frees the
    slot, and a second raises :class:`SlotGone` rather than return another image's pixels.

    Attributes:
        path: The slot file.
        shape: (height, width, 3).
        writer: The pid of the process that wrote the slot.
        number: The image's number in its writer (written to the slot's header too).
    """

    path: str
    shape: tuple[int, int, int]
    writer: int
    number: int

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickle_ticket, (self.path, self.shape, self.writer, self.number))

    def take(self) -> torch.Tensor | SlotTicket:
        """The pixels, taken from the slot; this ticket in the process that wrote it.

        Raises:
            SlotGone: see :func:`take_pixels`.
        """
        if os.getpid() == self.writer:
            return self
        return take_pixels(self.path, self.shape, self.number)


def _unpickle_ticket(path: str, shape: tuple[int, int, int], writer: int, number: int) -> Any:
    return SlotTicket(path, shape, writer, number).take()


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
        if root is None or not root.is_dir():
            return None
        if not (hasattr(os, "preadv") and hasattr(os, "posix_fallocate")):
            return None  # macOS has /tmp-like folders but no posix_fallocate
        if not os.access(root, os.W_OK | os.X_OK):
            return None
        import fcntl  # POSIX only; no /dev/shm elsewhere

        _sweep(root)
        # Made under a name the sweep ignores, locked, then renamed: a sweep never sees it unlocked.
        token = f"{os.getpid()}-{secrets.token_hex(6)}"
        partial, path = root / f"{_PARTIAL}{token}", root / f"{_PREFIX}{token}"
        fd = -1
        try:
            partial.mkdir(mode=0o700)
            fd = os.open(partial / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(partial, path)
        except OSError:
            if fd >= 0:
                os.close(fd)
            shutil.rmtree(partial, ignore_errors=True)
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
        self._name = f"{os.getpid()}-{secrets.token_hex(4)}"  # a reused pid never meets old files
        self._count = 0
        self._slots: list[tuple[str, int, int]] = []  # (path, fd, capacity in bytes)

    def free(self) -> int:
        """How many of the slots made so far are free."""
        return sum(os.pread(fd, 1, 0)[0] == _FREE for _, fd, _ in self._slots)

    def put(self, image: Image.Image) -> SlotTicket | None:
        """Write an RGB image into a free slot; None when none is free and no more can be made."""
        if self.broken:
            self._release_free()
            return None
        data = image.tobytes()
        shape = (image.height, image.width, 3)
        for i, (path, fd, capacity) in enumerate(self._slots):
            if os.pread(fd, 1, 0)[0] != _FREE:
                continue
            if capacity < len(data) and not self._reserve(fd, len(data)):
                return None
            self._slots[i] = (path, fd, max(capacity, len(data)))
            return self._write(path, fd, data, shape)
        if len(self._slots) >= self.limit:
            return None
        path = os.path.join(self.folder, f"{self._name}-{len(self._slots)}")
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
            self.broken = True  # torch's own sharing takes over; it needs the space back
            self._release_free()
            return False
        return True

    def _release_free(self) -> None:
        """Remove the free slots (once broken, the space is better left to torch's sharing)."""
        keep = []
        for path, fd, capacity in self._slots:
            if os.pread(fd, 1, 0)[0] == _FREE:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(path)
            else:
                keep.append((path, fd, capacity))
        self._slots = keep

    def _write(self, path: str, fd: int, data: bytes, shape: tuple[int, int, int]) -> SlotTicket:
        view = memoryview(data)
        done = 0
        while done < len(data):
            done += os.pwrite(fd, view[done:], _HEADER + done)
        self._count += 1
        os.pwrite(fd, bytes([_BUSY]) + bytes(7) + self._count.to_bytes(8, "little"), 0)
        return SlotTicket(path, shape, os.getpid(), self._count)

    def close(self) -> None:
        """Remove this worker's slot files."""
        for path, fd, _ in self._slots:
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._slots = []
