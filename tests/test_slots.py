"""Shared-memory slots: screenshots from DataLoader workers to the model's process (gge.slots)."""

from __future__ import annotations

import errno
import gc
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from PIL import Image

from gge.data import Item, ItemLoader, SampleDataset, collate_items, make_loader, part_size
from gge.errors import GgeError
from gge.slots import SlotFolder, SlotTicket, SlotWriter, shm_root, take_pixels
from gge.types import Box, Sample


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
    pixels = pickle.loads(pickle.dumps(first))  # unpickling takes the pixels out and frees the slot
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
    assert np.array_equal(pickle.loads(pickle.dumps(second)).numpy(), np.asarray(big))
    assert np.array_equal(pickle.loads(pickle.dumps(third)).numpy(), np.asarray(small))
    assert writer.free() == 2
    names = ["lock", *(os.path.basename(p) for p in (first.path, third.path))]
    assert sorted(os.listdir(folder.path)) == sorted(names)
    writer.close()
    assert os.listdir(folder.path) == ["lock"]


def test_taking_a_missing_slot_names_it(tmp_path: Path) -> None:
    with pytest.raises(GgeError, match=r"slot .*gone"):
        take_pixels(str(tmp_path / "gone"), (2, 2, 3))
    short = tmp_path / "short"
    short.write_bytes(b"\x01" + b"\x00" * 70)
    with pytest.raises(GgeError, match=r"short holds 7 bytes, expected 12"):
        take_pixels(str(short), (2, 2, 3))


def test_no_space_falls_back(folder: SlotFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    writer = SlotWriter(folder.path, slots=4)
    assert writer.put(_noise(4, 4, 0)) is None and writer.broken
    assert os.listdir(folder.path) == ["lock"]  # the half-made slot is gone


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
        from gge.slots import SlotFolder, SlotWriter
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
    new = SlotFolder.create(tmp_path)
    assert new is not None
    assert not dead.exists() and Path(live.path).is_dir()
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
    loader = make_loader(samples, batch_size=4, num_workers=2)
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
    loader = make_loader(_samples(tmp_path, 12), batch_size=2, num_workers=2)
    folder = loader.dataset.slot_folder  # type: ignore[attr-defined]
    for _ in loader:
        break
    del loader
    gc.collect()
    assert folder is not None and not Path(folder).exists()


def test_loader_without_slots_gives_the_same_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _samples(tmp_path, 5)
    with_slots = [it for b in make_loader(samples, batch_size=2, num_workers=2) for it in b]
    monkeypatch.setenv("GGE_SHM_DIR", "")
    loader = make_loader(samples, batch_size=2, num_workers=2)
    assert loader.dataset.slot_folder is None  # type: ignore[attr-defined]
    without = [it for b in loader for it in b]
    for a, b in zip(with_slots, without, strict=True):
        assert (a.index, a.sample, a.padding) == (b.index, b.sample, b.padding)
        assert a.pixels is not None and b.pixels is not None and torch.equal(a.pixels, b.pixels)


def test_an_item_pickles_as_its_ticket(tmp_path: Path) -> None:
    made = SlotFolder.create(tmp_path)
    assert made is not None
    image = _noise(6, 4, 3)
    ticket = SlotWriter(made.path, 1).put(image)
    assert ticket is not None
    sample = Sample("demo", "a", "a.png", (6, 4), "x", Box(0, 0, 1, 1))
    item = Item(3, sample, None, padding=True, slot=ticket)
    back = pickle.loads(pickle.dumps(item))
    assert (back.index, back.sample, back.padding, back.slot) == (3, sample, True, None)
    assert back.pixels is not None and np.array_equal(back.pixels.numpy(), np.asarray(image))
    assert back.image is not None and back.image.tobytes() == image.tobytes()
    plain = pickle.loads(pickle.dumps(Item(1, sample, torch.ones(2, 2, 3, dtype=torch.uint8))))
    assert plain.index == 1 and plain.pixels is not None and int(plain.pixels.sum()) == 12
    made.close()


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize(("batch_size", "workers"), [(8, 2), (8, 3), (6, 4), (7, 2), (3, 1)])
@pytest.mark.parametrize("pad", [False, True])
def test_parts_join_into_the_same_batches(tmp_path: Path, batch_size: int, workers: int, pad: bool) -> None:
    samples = _samples(tmp_path, 11)

    def ids(loader: object) -> list[list[tuple[int, bool]]]:
        return [[(it.index, it.padding) for it in b] for b in loader]  # type: ignore[attr-defined]

    for rank in range(3):
        kwargs = {"rank": rank, "world": 3, "batch_size": batch_size, "pad_batches": pad, "decode": False}
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


class _Recorder(pl.LightningModule):
    """Records the batches Lightning's predict loop hands it; makes its loader as users do."""

    def __init__(self, samples: list[Sample]) -> None:
        super().__init__()
        self.samples = samples
        self.batches: list[list[int]] = []
        self.folder: str | None = None

    def predict_dataloader(self) -> object:
        loader = make_loader(self.samples, batch_size=4, num_workers=2)
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
