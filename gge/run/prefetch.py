"""Batches prepared ahead of the model: a background thread receives them and builds the PIL images.

:func:`gge.run.evaluate.evaluate_batches` wraps a loader of screenshots in :class:`Prefetch`, so neither
the transfer from the DataLoader's workers nor the conversion to PIL waits on the model.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = ["Prefetch"]


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetch:
    """Iterate batches of items in a background thread, ``depth`` batches ahead of the model.

    The thread receives each batch from the DataLoader (its workers decode) and turns the pixels
    into PIL images, so the model's thread finds batches ready: neither the transfer from the
    workers nor the conversion waits on the model, or the model on them.

    Args:
        loader: Batches of items (e.g. :func:`gge.run.data.make_loader`); its length, if any, is kept.
        depth: Batches prepared ahead.

    Example:
        >>> [len(b) for b in Prefetch([[], [1, 2]], depth=1, convert=False)]
        [0, 2]
    """

    def __init__(self, loader: Iterable[Sequence[Any]], *, depth: int = 2, convert: bool = True) -> None:
        self.loader = loader
        self.depth = max(1, depth)
        self.convert = convert

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Sequence[Any]]:
        ready: queue.Queue[Any] = queue.Queue(self.depth)
        stop = threading.Event()
        done = object()

        def put(value: Any) -> bool:
            while not stop.is_set():
                try:
                    ready.put(value, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def work() -> None:
            try:
                for batch in self.loader:
                    out = [it.with_image() for it in batch] if self.convert else batch
                    if not put(out):
                        return
            except BaseException as e:  # handed to the consumer, raised there
                put(_Failure(e))
            finally:
                put(done)

        thread = threading.Thread(target=work, name="gge-prefetch", daemon=True)
        thread.start()
        try:
            while True:
                value = ready.get()
                if value is done:
                    break
                if isinstance(value, _Failure):
                    raise value.error
                yield value
        finally:
            stop.set()
            thread.join(timeout=5)
