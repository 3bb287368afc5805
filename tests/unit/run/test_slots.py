"""Shared-memory slots: screenshots from DataLoader workers to the model's process (gge.run.slots)."""

from __future__ import annotations

import copy
import dataclasses
import errno
import gc
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from PIL import Image

import gge.run.data
from gge.run.data import Item, ItemLoader, SampleDataset, collate_items, make_loader, part_size
from gge.run.slots import SlotFolder, SlotGone, SlotTicket, SlotWriter, shm_root, take_pixels
from gge.types import Box, Sample


def _elsewhere(ticket: SlotTicket | None) -> SlotTicket:
    """The ticket as if another process had written it (unpickling here then takes the pixels)."""
    assert ticket is not None
    return dataclasses.replace(ticket, writer=-1)


def _noise(w: int, h: int, seed: int) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[SlotFolder]:
    made = SlotFolder.create(tmp_path)
    assert made is not None
    yield made
    made.close()


def test_round_trip_reuse_and_growth(folder: SlotFolder) -> None:
    writer = SlotWriter(folder.path, slots=2)
    small, big = _noise(7, 5, 0), _noise(20, 11, 1)
    first = writer.put(small)
    assert isinstance(first, SlotTicket) and first.shape == (5, 7, 3)
    assert writer.free() == 0
    # Unpickled in the process that wrote it, a ticket stays a ticket and the slot stays busy.
    assert pickle.loads(pickle.dumps(first)) == first and copy.deepcopy(first) == first
    assert writer.free() == 0
    # Unpickled in another process, it takes the pixels out and frees the slot.
    pixels = pickle.loads(pickle.dumps(_elsewhere(first)))
    assert isinstance(pixels, torch.Tensor) and pixels.dtype == torch.uint8
    assert np.array_equal(pixels.numpy(), np.asarray(small))
    assert writer.free() == 1
    # The free slot is reused, and grown for a bigger image.
    second = writer.put(big)
    assert second is not None and second.path == first.path
    third = writer.put(small)
    assert third is not None and third.path != first.path
    # Both slots wait: a third image gets no slot (the caller sends a tensor instead).
    assert writer.put(small) is None and not writer.broken
    assert np.array_equal(pickle.loads(pickle.dumps(_elsewhere(second))).numpy(), np.asarray(big))
    assert np.array_equal(pickle.loads(pickle.dumps(_elsewhere(third))).numpy(), np.asarray(small))
    assert writer.free() == 2
    names = ["lock", *(os.path.basename(p) for p in (first.path, third.path))]
    assert sorted(os.listdir(folder.path)) == sorted(names)
    writer.close()
    assert os.listdir(folder.path) == ["lock"]


def test_a_ticket_is_taken_once_and_a_missing_slot_is_named(folder: SlotFolder, tmp_path: Path) -> None:
    writer = SlotWriter(folder.path, slots=1)
    ticket = _elsewhere(writer.put(_noise(3, 2, 0)))
    ticket.take()
    with pytest.raises(SlotGone, match=r"does not hold image 1 \(state 0, image 1"):
        ticket.take()  # taken before: the slot is free
    again = _elsewhere(writer.put(_noise(3, 2, 1)))  # the slot now holds image 2
    with pytest.raises(SlotGone, match=r"does not hold image 1 \(state 1, image 2"):
        ticket.take()
    assert again.take().shape == (2, 3, 3)
    with pytest.raises(SlotGone, match=r"slot .*gone could not be opened"):
        take_pixels(str(tmp_path / "gone"), (2, 2, 3), 1)
    short = tmp_path / "short"
    short.write_bytes(b"\x01" + bytes(7) + (1).to_bytes(8, "little") + bytes(48 + 7))
    with pytest.raises(SlotGone, match=r"7 bytes for 12"):
        take_pixels(str(short), (2, 2, 3), 1)
    writer.close()


def test_no_space_falls_back(folder: SlotFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    writer = SlotWriter(folder.path, slots=4)
    waiting = writer.put(_noise(4, 4, 0))
    writer.put(_noise(4, 4, 1))
    _elsewhere(writer.put(_noise(4, 4, 2))).take()
    assert len(os.listdir(folder.path)) == 4 and writer.free() == 1
    monkeypatch.setattr(os, "posix_fallocate", full)
    assert writer.put(_noise(8, 8, 3)) is None and writer.broken  # the free slot is too small
    # Torch's sharing takes over and needs the space: free slots are removed, waiting ones kept.
    assert len(os.listdir(folder.path)) == 3 and writer.free() == 0
    assert _elsewhere(waiting).take().shape == (4, 4, 3)
    assert writer.put(_noise(4, 4, 4)) is None
    assert len(os.listdir(folder.path)) == 2
    fresh = SlotWriter(folder.path, slots=4)
    assert fresh.put(_noise(4, 4, 0)) is None and fresh.broken
    assert len(os.listdir(folder.path)) == 2  # the half-made slot is gone


def test_folder_off_missing_and_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GGE_SHM_DIR", "")
    assert shm_root() is None and SlotFolder.create() is None
    monkeypatch.setenv("GGE_SHM_DIR", str(tmp_path))
    assert shm_root() == tmp_path
    monkeypatch.delenv("GGE_SHM_DIR")
    assert shm_root() == Path("/dev/shm")
    assert SlotFolder.create(tmp_path / "absent") is None
    made = SlotFolder.create(tmp_path)
    assert made is not None and Path(made.path).parent == tmp_path
    made.close()
    made.close()
    assert not Path(made.path).exists()


def test_a_dead_owners_folder_is_swept_a_live_one_kept(tmp_path: Path) -> None:
    live = SlotFolder.create(tmp_path)
    assert live is not None
    # A process that made a folder and a slot, then was killed before it could clean up.
    script = textwrap.dedent(
        f"""
        import os, signal
        from PIL import Image
        from gge.run.slots import SlotFolder, SlotWriter
        folder = SlotFolder.create({str(tmp_path)!r})
        SlotWriter(folder.path, 1).put(Image.new("RGB", (3, 3)))
        print(folder.path, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == -9, proc.stderr
    dead = Path(proc.stdout.strip())
    assert dead.is_dir() and len(os.listdir(dead)) == 2
    partial = tmp_path / ".gge-partial-1-ab"  # a folder another process is making right now
    partial.mkdir()
    (partial / "lock").touch()
    new = SlotFolder.create(tmp_path)
    assert new is not None
    assert not dead.exists() and Path(live.path).is_dir() and partial.is_dir()
    new.close()
    live.close()


def _samples(tmp_path: Path, n: int) -> list[Sample]:
    out = []
    for i in range(n):
        path = tmp_path / f"{i}.png"
        size = (30 + 7 * (i % 4), 20 + 3 * (i % 3))  # sizes vary, so slots are grown and reused
        _noise(*size, seed=i).save(path)
        out.append(Sample("demo", f"s{i}", str(path), size, "x", Box(0, 0, 1, 1)))
    return out


def test_loader_with_workers_hands_pixels_over_in_slots(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 11)
    loader = make_loader(samples, batch_size=4, num_workers=2, group_sizes=False)
    folder = loader.dataset.slot_folder  # type: ignore[attr-defined]
    assert folder is not None and Path(folder).is_dir()
    seen_slots: set[str] = set()
    batches = []
    for batch in loader:
        seen_slots.update(name for name in os.listdir(folder) if name != "lock")
        batches.append(batch)
    assert [[it.index for it in b] for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    for it in (it for b in batches for it in b):
        assert it.slot is None and it.pixels is not None
        assert np.array_equal(it.pixels.numpy(), np.asarray(Image.open(samples[it.index].image_path)))
    # Both workers wrote slots (named after their pids), and removed them when they exited.
    assert len({name.split("-")[0] for name in seen_slots}) == 2
    assert os.listdir(folder) == ["lock"]
    del loader, batches
    gc.collect()
    assert not Path(folder).exists()


def test_leaving_a_loader_early_removes_its_slots(tmp_path: Path) -> None:
    loader = make_loader(_samples(tmp_path, 12), batch_size=2, num_workers=2, group_sizes=False)
    folder = loader.dataset.slot_folder  # type: ignore[attr-defined]
    for _ in loader:
        break
    del loader
    gc.collect()
    assert folder is not None and not Path(folder).exists()


def test_loader_without_slots_gives_the_same_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _samples(tmp_path, 5)
    with_slots = [
        it for b in make_loader(samples, batch_size=2, num_workers=2, group_sizes=False) for it in b
    ]
    monkeypatch.setenv("GGE_SHM_DIR", "")
    loader = make_loader(samples, batch_size=2, num_workers=2, group_sizes=False)
    assert loader.dataset.slot_folder is None  # type: ignore[attr-defined]
    without = [it for b in loader for it in b]
    for a, b in zip(with_slots, without, strict=True):
        assert (a.index, a.sample, a.padding) == (b.index, b.sample, b.padding)
        assert a.pixels is not None and b.pixels is not None and torch.equal(a.pixels, b.pixels)


@dataclasses.dataclass(frozen=True)
class _Tagged(Item):
    area: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "area", self.sample.image_size[0] * self.sample.image_size[1])


def test_an_item_pickles_as_its_ticket(tmp_path: Path) -> None:
    made = SlotFolder.create(tmp_path)
    assert made is not None
    writer = SlotWriter(made.path, 2)
    image = _noise(6, 4, 3)
    sample = Sample("demo", "a", "a.png", (6, 4), "x", Box(0, 0, 1, 1))
    item = _Tagged(3, sample, None, padding=True, slot=writer.put(image))
    object.__setattr__(item, "note", "set in the worker")
    # A copy made in the worker leaves the slot to the item that will be sent.
    same = copy.deepcopy(item)
    assert type(same) is _Tagged and same.slot == item.slot and same.pixels is None
    assert writer.free() == 0
    # Sent to another process, the item carries its pixels; everything else is as it was.
    sent = dataclasses.replace(item, slot=_elsewhere(item.slot))
    object.__setattr__(sent, "note", "set in the worker")
    back = pickle.loads(pickle.dumps(sent))
    assert type(back) is _Tagged and back.slot is None and writer.free() == 1
    assert (back.index, back.sample, back.padding, back.area, back.note) == (3, sample, True, 24, sent.note)
    assert back.pixels is not None and np.array_equal(back.pixels.numpy(), np.asarray(image))
    assert back.image is not None and back.image.tobytes() == image.tobytes()
    plain = pickle.loads(pickle.dumps(Item(1, sample, torch.ones(2, 2, 3, dtype=torch.uint8))))
    assert plain.index == 1 and plain.pixels is not None and int(plain.pixels.sum()) == 12
    made.close()


def test_a_copy_made_in_a_worker_does_not_free_the_slot(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 12)

    def copying_collate(items: list[Item]) -> list[Item]:
        for it in items:
            copy.deepcopy(it)  # e.g. a collate function that keeps a record
        return list(items)

    folder = SlotFolder.create()
    assert folder is not None
    dataset = SampleDataset(samples, list(range(12)), slot_folder=folder.path, slots=8)
    loader = ItemLoader(
        dataset, batch_size=2, parts_per_batch=2, num_workers=1, collate_fn=copying_collate, prefetch_factor=4
    )
    for batch in loader:
        time.sleep(0.1)  # the model is busy; the worker runs ahead and reuses free slots
        for it in batch:
            assert it.pixels is not None
            assert np.array_equal(it.pixels.numpy(), np.asarray(Image.open(samples[it.index].image_path)))
    folder.close()


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize(("batch_size", "workers"), [(8, 2), (8, 3), (6, 4), (7, 2), (3, 1)])
@pytest.mark.parametrize("pad", [False, True])
def test_parts_join_into_the_same_batches(tmp_path: Path, batch_size: int, workers: int, pad: bool) -> None:
    samples = _samples(tmp_path, 11)

    def ids(loader: object) -> list[list[tuple[int, bool]]]:
        return [[(it.index, it.padding) for it in b] for b in loader]  # type: ignore[attr-defined]

    for rank in range(3):
        kwargs = {"rank": rank, "world": 3, "batch_size": batch_size, "pad_batches": pad}
        serial = make_loader(samples, **kwargs)  # type: ignore[arg-type]
        parallel = make_loader(samples, num_workers=workers, **kwargs)  # type: ignore[arg-type]
        assert ids(parallel) == ids(serial)
        assert len(parallel) == len(serial) == len(ids(serial))
    part = part_size(batch_size, workers)
    assert batch_size % part == 0 and part <= -(-batch_size // workers)


class _PidDataset(SampleDataset):
    def __getitem__(self, i: int) -> Item:
        return Item(i, self.samples[i], torch.tensor([os.getpid()]))


def test_every_worker_loads_part_of_the_first_batch(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 8)
    dataset = _PidDataset(samples, list(range(8)))
    loader = ItemLoader(dataset, batch_size=4, parts_per_batch=2, num_workers=2, collate_fn=collate_items)
    first = next(iter(loader))
    assert [it.index for it in first] == list(range(8))
    assert len({int(it.pixels[0]) for it in first}) == 2  # type: ignore[index]
    with pytest.raises(ValueError, match="parts_per_batch"):
        ItemLoader(dataset, batch_size=8, parts_per_batch=0)
    with pytest.raises(ValueError, match="needs a batch_size"):
        ItemLoader(dataset, batch_size=None, parts_per_batch=2)


def test_drop_last_drops_the_short_joined_batch(tmp_path: Path) -> None:
    dataset = _PidDataset(_samples(tmp_path, 10), list(range(10)))
    for drop, want in ((True, [[0, 1, 2, 3], [4, 5, 6, 7]]), (False, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]])):
        loader = ItemLoader(
            dataset, batch_size=2, parts_per_batch=2, drop_last=drop, collate_fn=collate_items
        )
        assert [[it.index for it in b] for b in loader] == want and len(loader) == len(want)


def test_a_removed_slot_is_decoded_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _samples(tmp_path, 6)
    for max_pixels in (None, 500):
        monkeypatch.setattr(gge.run.data, "_warned_slot_gone", False)
        loader = make_loader(samples, batch_size=2, num_workers=1, max_pixels=max_pixels, group_sizes=False)
        folder = loader.dataset.slot_folder  # type: ignore[attr-defined]
        got: list[Item] = []
        with pytest.warns(RuntimeWarning, match="could not be opened.*decoding the screenshots"):
            for batch in loader:
                got.extend(batch)
                if len(got) == 2:
                    time.sleep(0.3)  # the worker has written the next items' slots by now
                    shutil.rmtree(folder)  # e.g. systemd's RemoveIPC at logout
        serial = [
            it
            for b in make_loader(samples, batch_size=2, max_pixels=max_pixels, group_sizes=False)
            for it in b
        ]
        assert [it.index for it in got] == list(range(6))
        for a, b in zip(got, serial, strict=True):
            assert a.pixels is not None and b.pixels is not None and torch.equal(a.pixels, b.pixels)


class _Recorder(pl.LightningModule):
    """Records the batches Lightning's predict loop hands it; makes its loader as users do."""

    def __init__(self, samples: list[Sample]) -> None:
        super().__init__()
        self.samples = samples
        self.batches: list[list[int]] = []
        self.folder: str | None = None

    def predict_dataloader(self) -> object:
        loader = make_loader(self.samples, batch_size=4, num_workers=2, group_sizes=False)
        assert isinstance(loader, ItemLoader) and loader.parts_per_batch == 2
        self.folder = loader.dataset.slot_folder  # type: ignore[attr-defined]
        return loader

    def transfer_batch_to_device(self, batch: object, device: torch.device, dataloader_idx: int) -> object:
        return batch  # items are frozen dataclasses; GroundingEvalModule does the same

    def predict_step(self, batch: list[Item], batch_idx: int) -> None:
        gc.collect()  # the loader Lightning replaced is gone; its slots must not be
        assert all(it.pixels is not None and it.pixels.shape[2] == 3 for it in batch)
        self.batches.append([it.index for it in batch])


def test_lightning_predict_gets_whole_batches(tmp_path: Path) -> None:
    module = _Recorder(_samples(tmp_path, 11))
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
    )
    trainer.predict(module, return_predictions=False)
    assert isinstance(trainer.predict_dataloaders, ItemLoader)
    assert module.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    assert module.folder is not None and Path(module.folder).is_dir()
    trainer.predict_loop._combined_loader = None  # Lightning's last reference to the loader
    gc.collect()
    assert not Path(module.folder).exists()
