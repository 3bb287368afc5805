"""The data pipeline: shard a benchmark's samples by rank, decode screenshots in workers, batch them.

Sharding is ``range(rank, n, world)``: every sample goes to exactly one rank, none twice (Lightning's
distributed sampler would repeat samples to equalise ranks; a grounding eval must not), and a rank may
get no sample at all. Within its shard a rank runs its samples ordered by screenshot size
(:func:`size_order`), so a batch holds screenshots of one size, or of neighbouring sizes, and no sample
pays for a larger one's padded image tokens. Screenshots are decoded in
:meth:`SampleDataset.__getitem__`, so the DataLoader's workers do the work. A batch is a plain
``list[Item]``.

Strategies that shard parameters (FSDP, DeepSpeed ZeRO-3) make every forward a collective, so every
rank must run the same number of batches: ``make_loader(..., pad_batches=True)`` tops each rank up
with *padding* items (a real sample run again, flagged ``padding=True``); run them and drop their
results.

Example:
    >>> import tempfile, os
    >>> from PIL import Image
    >>> from gge.types import Box, Sample
    >>> folder = tempfile.mkdtemp()
    >>> samples = []
    >>> for i in range(5):
    ...     path = os.path.join(folder, f"{i}.png")
    ...     Image.new("RGB", (40, 30)).save(path)
    ...     samples.append(Sample("demo", str(i), path, (40, 30), "click", Box(0, 0, 9, 9)))
    >>> shard_indices(5, rank=1, world=2)
    [1, 3]
    >>> for batch in make_loader(samples, rank=0, world=2, batch_size=2):
    ...     print([(item.index, item.image.size) for item in batch])
    [(0, (40, 30)), (2, (40, 30))]
    [(4, (40, 30))]
"""

from __future__ import annotations

import math
import multiprocessing.util
import os
import warnings
import weakref
from collections.abc import Collection, Iterator, Sequence
from dataclasses import astuple, dataclass, field, replace
from typing import Any

import numpy as np
import torch
import torch.utils.data
from PIL import Image

from gge.benchmarks.images import decode_image
from gge.errors import GgeError
from gge.run.prefetch import Prefetch
from gge.run.slots import SlotFolder, SlotGone, SlotTicket, SlotWriter
from gge.types import Sample

__all__ = [
    "Item",
    "ItemLoader",
    "Prefetch",
    "SampleDataset",
    "batches_per_rank",
    "collate_items",
    "decode_image",
    "make_loader",
    "part_size",
    "shard_indices",
    "size_order",
]


@dataclass(frozen=True)
class Item:
    """One sample with its decoded screenshot.

    The pixels travel from the DataLoader workers through shared memory: in a reusable slot (see
    :mod:`gge.run.slots`; the item pickles as a ticket and the model's process copies the pixels out when
    it unpickles it), or, when no slot is available, as a uint8 tensor that torch shares. A PIL image
    would be pickled through a pipe (about 6 MB per full-HD screenshot), a cost the model's process
    would pay for every batch.

    Attributes:
        index: Position of the sample in the benchmark's sample list (the list given to the dataset).
        sample: The sample; its ``image_size`` stays the original size even when the pixels were
            downscaled (the model adapter maps points back to it).
        pixels: The screenshot, RGB, as a uint8 tensor of shape (height, width, 3); None when the
            loader was asked not to decode (a policy that does not look at screenshots, e.g. replay),
            and once the PIL image is built (:meth:`with_image`), which then holds the pixels.
        padding: A padding item (``make_loader(pad_batches=True)``): run it, drop its result.
        decoded: The PIL image, once built (:meth:`with_image`); :attr:`image` either way.
        slot: In a worker only: the slot holding the pixels (``pixels`` is None until unpickled).
        image_error: Why the screenshot could not be read (missing or undecodable file; the message
            names the sample and the path); the sample is then a counted failure, not the end of the run.
    """

    index: int
    sample: Sample
    pixels: torch.Tensor | None
    padding: bool = False
    decoded: Image.Image | None = field(default=None, compare=False, repr=False)
    slot: SlotTicket | None = field(default=None, compare=False, repr=False)
    image_error: str | None = None

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickle as usual, or, for pixels waiting in a slot, as the ticket (unpickled: the pixels)."""
        if self.slot is None:
            return super().__reduce_ex__(protocol)
        state = {k: v for k, v in vars(self).items() if k not in ("pixels", "slot")}
        return (_item_from_slot, (type(self), state, astuple(self.slot)))

    @property
    def image(self) -> Image.Image | None:
        """The screenshot as a PIL image (built by :class:`Prefetch`, else from the pixels), or None."""
        if self.decoded is not None:
            return self.decoded
        if self.pixels is None:
            return None
        return Image.fromarray(self.pixels.numpy(), mode="RGB")

    def with_image(self) -> Item:
        """A copy carrying its PIL image, built now (so that the model's thread need not).

        The copy drops the tensor: the image holds the same pixels, and a batch in flight holds
        them once.
        """
        return self if self.pixels is None else replace(self, decoded=self.image, pixels=None)


def _item_from_slot(cls: type[Item], state: dict[str, Any], ticket: tuple[Any, ...]) -> Item:
    """Rebuild an item pickled with its pixels in a slot, as default unpickling would (no ``__init__``).

    In another process the pixels are taken out of the slot; in the worker that wrote it (a copy
    made there) the item keeps the ticket and leaves the slot to the original. Should the slot no
    longer hold the image (its file removed under the run, e.g. by systemd's ``RemoveIPC`` at
    logout), the screenshot is decoded again here, with a warning: slower, never wrong.
    """
    slot = SlotTicket(*ticket)
    try:
        pixels = slot.take()
    except SlotGone as e:
        sample = state["sample"]
        _warn_once(f"{e}; decoding the screenshots of such items in the main process instead")
        h, w, _ = slot.shape
        image = decode_image(sample)
        if image.size != (w, h):  # the worker downscaled it (max_pixels): the same resize again
            image = image.resize((w, h), Image.Resampling.BICUBIC)
        pixels = torch.from_numpy(np.asarray(image).copy())
    item = object.__new__(cls)
    for key, value in state.items():
        object.__setattr__(item, key, value)
    kept = pixels if isinstance(pixels, SlotTicket) else None
    object.__setattr__(item, "pixels", None if kept is not None else pixels)
    object.__setattr__(item, "slot", kept)
    return item


_warned_slot_gone = False


def _warn_once(message: str) -> None:
    global _warned_slot_gone
    if not _warned_slot_gone:
        _warned_slot_gone = True
        warnings.warn(message, RuntimeWarning, stacklevel=2)


def _check_rank(rank: int, world: int) -> None:
    if world < 1:
        raise ValueError(f"world must be >= 1, got {world}")
    if not 0 <= rank < world:
        raise ValueError(f"rank must be in [0, {world}), got {rank}")


def shard_indices(n: int, rank: int, world: int) -> list[int]:
    """The sample indices one rank evaluates: ``range(rank, n, world)``.

    Over all ranks the shards are disjoint and cover ``range(n)``; their sizes differ by at most one,
    and a rank gets ``[]`` when ``n < world``. No sample is repeated to equalise ranks.

    Args:
        n: Number of samples.
        rank: This process's rank, ``0 <= rank < world``.
        world: Number of processes.

    Returns:
        The indices, ascending.

    Raises:
        ValueError: for a negative ``n`` or a rank outside ``[0, world)``.

    Example:
        >>> [shard_indices(5, r, 3) for r in range(3)]
        [[0, 3], [1, 4], [2]]
        >>> shard_indices(1, rank=1, world=2)
        []
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    _check_rank(rank, world)
    return list(range(rank, n, world))


def size_order(samples: Sequence[Sample], indices: Sequence[int]) -> list[int]:
    """``indices`` ordered by their samples' screenshot size: area, then width, then height, then position.

    The size decides how many image tokens a Qwen-VL-style processor makes of a screenshot, so batches
    cut from this order hold equal (or neighbouring) image-token counts and little padding. The order is
    a plain sort on the recorded ``Sample.image_size``: the same on every rerun, no image opened.

    Example:
        >>> from gge.types import Box, Sample
        >>> sizes = [(1920, 1080), (390, 844), (1080, 1920), (390, 844)]
        >>> samples = [Sample("demo", str(i), "", wh, "click", Box(0, 0, 1, 1)) for i, wh in enumerate(sizes)]
        >>> size_order(samples, [0, 1, 2, 3])
        [1, 3, 2, 0]
    """

    def key(i: int) -> tuple[int, int, int, int]:
        w, h = samples[i].image_size
        return w * h, w, h, i

    return sorted(indices, key=key)


def batches_per_rank(n: int, world: int, batch_size: int) -> int:
    """The most batches any rank needs for ``n`` samples: ``max_r ceil(len(shard_r) / batch_size)``.

    Every rank computes the same number from ``n`` alone, with no collective. Rank 0 has the largest
    shard (``ceil(n / world)`` samples).

    Args:
        n: Number of samples (all ranks together).
        world: Number of processes.
        batch_size: Samples per batch.

    Returns:
        The number of batches; 0 for no samples.

    Raises:
        ValueError: for a negative ``n``, ``world < 1`` or ``batch_size < 1``.

    Example:
        >>> batches_per_rank(7, world=3, batch_size=2)
        2
        >>> batches_per_rank(0, world=3, batch_size=2)
        0
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if world < 1:
        raise ValueError(f"world must be >= 1, got {world}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return math.ceil(math.ceil(n / world) / batch_size)


class SampleDataset(torch.utils.data.Dataset[Item]):
    """The samples at ``indices``, decoded on access (in the DataLoader's workers), plus padding.

    Args:
        samples: The benchmark's whole sample list (``Item.index`` refers to it).
        indices: Positions in ``samples`` this dataset serves, in order (a rank's shard).
        max_pixels: Downscale images above this area (:func:`gge.benchmarks.images.decode_image`); None:
            kept.
        pad_to: Pad with padding items so that a sequential loader with ``batch_size`` yields exactly
            this many batches; None pads nothing. When the real items need fewer batches, the dataset
            grows to ``(pad_to - 1) * batch_size + 1`` items: padding first completes the last real
            batch, then fills whole batches, and the last batch holds one item (the fewest padding
            items that give ``pad_to`` batches). The padding sample is ``indices[0]``, or sample 0
            when ``indices`` is empty.
        batch_size: The loader's batch size (used only with ``pad_to``).
        decode: Decode the screenshots (False: items carry no pixels).
        slot_folder: A :class:`gge.run.slots.SlotFolder` path: in DataLoader workers, hand the pixels over
            through reusable slots there (None: as shared tensors).
        slots: Slots per worker (the items one worker may have in flight).

    Raises:
        ValueError: for an index out of range, ``batch_size < 1``, ``pad_to`` smaller than the batches
            the real items need, or padding requested with no sample to pad with.

    Example:
        >>> import tempfile, os
        >>> from gge.types import Box, Sample
        >>> path = os.path.join(tempfile.mkdtemp(), "s.png")
        >>> Image.new("RGB", (8, 8)).save(path)
        >>> samples = [Sample("demo", str(i), path, (8, 8), "click", Box(0, 0, 1, 1)) for i in range(3)]
        >>> ds = SampleDataset(samples, [1], pad_to=2, batch_size=2)
        >>> [(ds[i].index, ds[i].padding) for i in range(len(ds))]
        [(1, False), (1, True), (1, True)]
    """

    def __init__(
        self,
        samples: Sequence[Sample],
        indices: Sequence[int],
        *,
        max_pixels: int | None = None,
        pad_to: int | None = None,
        batch_size: int = 1,
        decode: bool = True,
        slot_folder: str | None = None,
        slots: int = 0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_pixels is not None and max_pixels < 1:
            raise ValueError(f"max_pixels must be >= 1, got {max_pixels}")
        bad = [i for i in indices if not 0 <= i < len(samples)]
        if bad:
            raise ValueError(f"indices out of range for {len(samples)} samples: {bad[:5]}")
        self.samples = samples
        self.indices = list(indices)
        self.max_pixels = max_pixels
        self.decode = decode
        self.slot_folder = slot_folder
        self.slots = slots
        self.n_padding = 0
        self.pad_index = self.indices[0] if self.indices else 0
        if pad_to is not None:
            needed = math.ceil(len(self.indices) / batch_size)
            if pad_to < needed:
                raise ValueError(f"pad_to={pad_to} batches is fewer than the {needed} the samples need")
            if pad_to > needed:
                if not samples:
                    raise ValueError("cannot pad: there is no sample to pad with")
                self.n_padding = (pad_to - 1) * batch_size + 1 - len(self.indices)

    def __len__(self) -> int:
        return len(self.indices) + self.n_padding

    def __getitem__(self, i: int) -> Item:
        """Decode the ``i``-th item (a real sample, or a padding item past the real ones)."""
        if not 0 <= i < len(self):
            raise IndexError(f"item {i} out of range for {len(self)} items")
        padding = i >= len(self.indices)
        index = self.pad_index if padding else self.indices[i]
        sample = self.samples[index]
        if not self.decode:
            return Item(index, sample, None, padding=padding)
        try:
            image = decode_image(sample, max_pixels=self.max_pixels)
        except GgeError as e:  # one bad screenshot is that sample's failure, not the run's
            return Item(index, sample, None, padding=padding, image_error=str(e))
        writer = self._slot_writer()
        ticket = writer.put(image) if writer is not None else None
        if ticket is not None:
            return Item(index, sample, None, padding=padding, slot=ticket)
        return Item(index, sample, torch.from_numpy(np.asarray(image).copy()), padding=padding)

    def _slot_writer(self) -> SlotWriter | None:
        """This worker's slots (None in the main process, or without a slot folder)."""
        if self.slot_folder is None or self.slots < 1 or torch.utils.data.get_worker_info() is None:
            return None
        key = (os.getpid(), self.slot_folder)
        writer = _WRITERS.get(key)
        if writer is None:
            writer = _WRITERS[key] = SlotWriter(self.slot_folder, self.slots)
            # Run when the worker exits (DataLoader workers are multiprocessing processes).
            multiprocessing.util.Finalize(writer, writer.close, exitpriority=0)
        return writer


_WRITERS: dict[tuple[int, str], SlotWriter] = {}


def collate_items(items: list[Item]) -> list[Item]:
    """The DataLoader's collate function: a batch is the list of its items, unchanged.

    Example:
        >>> collate_items([])
        []
    """
    return list(items)


def make_loader(
    samples: Sequence[Sample],
    *,
    rank: int = 0,
    world: int = 1,
    batch_size: int = 8,
    num_workers: int = 0,
    max_pixels: int | None = None,
    pad_batches: bool = False,
    skip_ids: Collection[str] = (),
    decode: bool = True,
    min_batches: int = 0,
    group_sizes: bool = True,
) -> torch.utils.data.DataLoader[Item]:
    """A DataLoader over this rank's shard of ``samples``, yielding ``list[Item]`` batches.

    The shard is :func:`shard_indices`; samples whose id is in ``skip_ids`` (finished by an earlier
    run: resume) are removed *after* sharding, so a rank's assignment is the same on every rerun with
    the same world size. What is left is ordered by screenshot size (:func:`size_order`; with
    ``group_sizes=False``, kept in shard order), so that batches do not mix sizes; the results do not
    depend on the order (they are merged by sample id). The sampler is then plain sequential (no
    repeats, no shuffling).
    Under Lightning, iterate the loader yourself or set ``use_distributed_sampler=False``: Lightning
    would otherwise swap in its own distributed sampler, which repeats samples.

    Args:
        samples: One benchmark's samples (ids are unique within a benchmark, and ``skip_ids`` are
            compared with ``Sample.id`` only).
        rank: This process's rank.
        world: Number of processes.
        batch_size: Items per batch.
        num_workers: DataLoader worker processes that decode images (0: decode in this process).
        max_pixels: Downscale screenshots above this area (see :func:`gge.benchmarks.images.decode_image`).
        pad_batches: Make every rank yield exactly ``batches_per_rank(len(samples), world, batch_size)``
            batches, filling the shortfall with padding items (see :class:`SampleDataset`). The target
            is always computed from the FULL sample count, ignoring ``skip_ids``, so ranks agree
            without communicating even if their skip sets differ; a resumed run therefore still runs
            that many batches per rank, mostly padding when most samples are done.
        skip_ids: Sample ids to leave out.
        decode: Decode the screenshots (False: items carry no image, for policies that ignore them).
        min_batches: Pad with padding items up to this many batches (e.g. 1, so that a rank with
            nothing left still takes part in the collectives at the end of a Lightning loop).
        group_sizes: Order the rank's samples by screenshot size (False: shard order). Padding
            items come after the real ones either way, and repeat the first sample of that order.

    Returns:
        The loader (``persistent_workers=False``, ``pin_memory=False``, the default start method), an
        :class:`ItemLoader`: with several workers decoding, each batch is loaded in parts (its
        ``batch_size`` attribute is the part's size; :func:`part_size`). With workers, screenshots
        reach this process through reusable shared-memory slots (:mod:`gge.run.slots`) in a folder that
        is removed when the loader's dataset is garbage-collected.

    Raises:
        ValueError: for a bad rank, world, batch size or worker count.

    Example:
        >>> import tempfile, os
        >>> from PIL import Image
        >>> from gge.types import Box, Sample
        >>> path = os.path.join(tempfile.mkdtemp(), "s.png")
        >>> Image.new("RGB", (8, 8)).save(path)
        >>> samples = [Sample("demo", str(i), path, (8, 8), "click", Box(0, 0, 1, 1)) for i in range(7)]
        >>> loader = make_loader(samples, rank=2, world=3, batch_size=2, pad_batches=True, skip_ids={"5"})
        >>> [[(item.index, item.padding) for item in batch] for batch in loader]
        [[(2, False), (2, True)], [(2, True)]]
        >>> samples[3] = replace(samples[3], image_size=(4, 4))  # recorded smaller: it comes first
        >>> [[item.index for item in batch] for batch in make_loader(samples, batch_size=4, decode=False)]
        [[3, 0, 1, 2], [4, 5, 6]]
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if num_workers < 0:
        raise ValueError(f"num_workers must be >= 0, got {num_workers}")
    shard = shard_indices(len(samples), rank, world)
    skip = frozenset(skip_ids)
    indices = [i for i in shard if samples[i].id not in skip] if skip else shard
    if group_sizes:
        indices = size_order(samples, indices)
    pad_to = batches_per_rank(len(samples), world, batch_size) if pad_batches else None
    if min_batches > 0 and samples:
        needed = math.ceil(len(indices) / batch_size)
        pad_to = max(pad_to or needed, needed, min_batches)
    part = part_size(batch_size, num_workers) if decode else batch_size  # nothing to share out otherwise
    # Each worker keeps _PREFETCH whole batches' worth of parts in flight, as a plain DataLoader would.
    prefetch = _PREFETCH * (batch_size // part)
    folder = SlotFolder.create() if decode and num_workers > 0 else None
    dataset = SampleDataset(
        samples,
        indices,
        max_pixels=max_pixels,
        pad_to=pad_to,
        batch_size=batch_size,
        decode=decode,
        slot_folder=folder.path if folder is not None else None,
        slots=(prefetch + 1) * part,
    )
    loader = ItemLoader(
        dataset,
        batch_size=part,
        parts_per_batch=batch_size // part,
        shuffle=False,
        num_workers=num_workers,
        collate_fn=collate_items,
        pin_memory=False,
        drop_last=False,
        persistent_workers=False,
        prefetch_factor=prefetch if num_workers > 0 else None,
    )
    if folder is not None:
        # Owned by the dataset, which a loader Lightning re-creates (with its own sampler) shares.
        weakref.finalize(dataset, folder.close)
    return loader


_PREFETCH = 2  # batches each worker keeps in flight (the DataLoader's default)


def part_size(batch_size: int, num_workers: int) -> int:
    """How many items of a batch one worker loads, so that the workers load every batch together.

    The largest divisor of ``batch_size`` that is at most ``ceil(batch_size / num_workers)``.

    Example:
        >>> [part_size(8, w) for w in (0, 1, 2, 3, 4, 8, 16)]
        [8, 8, 4, 2, 2, 1, 1]
        >>> part_size(7, 2)
        1
    """
    if num_workers <= 1:
        return batch_size
    most = math.ceil(batch_size / num_workers)
    return max(d for d in range(1, most + 1) if batch_size % d == 0)


class ItemLoader(torch.utils.data.DataLoader[Item]):
    """A DataLoader whose workers load batches in parts, yielding whole batches (``list[Item]``).

    A plain DataLoader gives each batch to one worker, so the first batch arrives only after one
    worker has decoded all of it while the others wait for theirs. Here the DataLoader's own batches
    (``batch_size``) are *parts*, spread over the workers, and iterating joins ``parts_per_batch``
    consecutive parts into one batch: the same batches, in the same order, with the first ready sooner.
    Lightning may re-create the loader with its own batch sampler; the parts are joined the same way,
    but the ``batch_indices`` Lightning hands a prediction writer then count parts, not batches.

    Args:
        dataset: The items.
        parts_per_batch: Parts joined into one yielded batch (the last batch may be shorter).
        **kwargs: Passed to ``torch.utils.data.DataLoader`` (``batch_size`` is the part's size).

    Raises:
        ValueError: when ``parts_per_batch < 1``, or above 1 without batching (``batch_size=None``).
    """

    def __init__(
        self, dataset: torch.utils.data.Dataset[Item], *, parts_per_batch: int = 1, **kwargs: Any
    ) -> None:
        if parts_per_batch < 1:
            raise ValueError(f"parts_per_batch must be >= 1, got {parts_per_batch}")
        super().__init__(dataset, **kwargs)
        if parts_per_batch > 1 and self.batch_sampler is None:
            raise ValueError("parts_per_batch > 1 needs a batch_size (parts are batches)")
        self.parts_per_batch = parts_per_batch

    def __len__(self) -> int:
        parts = super().__len__()
        return parts // self.parts_per_batch if self.drop_last else math.ceil(parts / self.parts_per_batch)

    def __iter__(self) -> Iterator[list[Item]]:  # type: ignore[override]
        parts: Iterator[list[Item]] = super().__iter__()
        return parts if self.parts_per_batch == 1 else self._join(parts)

    def _join(self, parts: Iterator[list[Item]]) -> Iterator[list[Item]]:
        batch: list[Item] = []
        for i, part in enumerate(parts, 1):
            batch.extend(part)
            if i % self.parts_per_batch == 0:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch
