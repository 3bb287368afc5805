from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import pytest
import torch.utils.data
from PIL import Image

from gge.benchmarks.images import decode_image
from gge.errors import GgeError
from gge.run.data import Item, SampleDataset, batches_per_rank, collate_items, make_loader, shard_indices
from gge.types import Box, Sample


def _samples(tmp_path: Path, n: int, size: tuple[int, int] = (32, 24), mode: str = "RGB") -> list[Sample]:
    out = []
    for i in range(n):
        path = tmp_path / f"img{i}.png"
        # Each image's colour encodes its index, so a test can tell which file was decoded.
        Image.new(mode, size, color=(i * 20 % 256, 7, 9) if mode == "RGB" else i).save(path)
        out.append(Sample("demo", f"s{i}", str(path), size, f"click {i}", Box(0, 0, 5, 5)))
    return out


def _flat(loader: torch.utils.data.DataLoader[Item]) -> list[list[Item]]:
    return [list(batch) for batch in loader]


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("n", range(13))
def test_shard_indices_partition(n: int, world: int) -> None:
    shards = [shard_indices(n, r, world) for r in range(world)]
    everything = [i for s in shards for i in s]
    assert sorted(everything) == list(range(n))
    assert len(everything) == len(set(everything))
    sizes = [len(s) for s in shards]
    assert max(sizes) - min(sizes) <= 1
    assert all(s == sorted(s) for s in shards)
    if n < world:
        assert sizes.count(0) == world - n
    per_rank = [-(-len(s) // 2) for s in shards]
    assert batches_per_rank(n, world, 2) == max(per_rank)


def test_shard_indices_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        shard_indices(3, 2, 2)
    with pytest.raises(ValueError):
        shard_indices(3, 0, 0)
    with pytest.raises(ValueError):
        shard_indices(-1, 0, 1)
    with pytest.raises(ValueError):
        batches_per_rank(3, 1, 0)


@dataclass(frozen=True)
class PidItem(Item):
    pid: int = 0
    in_worker: bool = False


class PidDataset(SampleDataset):
    def __getitem__(self, i: int) -> Item:
        item = super().__getitem__(i)
        values = {f.name: getattr(item, f.name) for f in fields(Item)}
        in_worker = torch.utils.data.get_worker_info() is not None
        return PidItem(**values, pid=os.getpid(), in_worker=in_worker)


def test_workers_decode_in_shard_order(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 7, size=(30, 20))
    indices = shard_indices(7, 1, 2)
    loader = torch.utils.data.DataLoader(
        PidDataset(samples, indices), batch_size=2, num_workers=2, collate_fn=collate_items
    )
    items = [item for batch in loader for item in batch]
    assert [it.index for it in items] == indices == [1, 3, 5]
    assert all(isinstance(it, PidItem) and it.in_worker and it.pid != os.getpid() for it in items)
    for it in items:
        assert it.sample is not samples[it.index] and it.sample == samples[it.index]
        assert it.image.mode == "RGB" and it.image.size == (30, 20)
        assert it.image.getpixel((0, 0)) == (it.index * 20, 7, 9)
        assert not it.padding


def test_make_loader_with_workers(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 5, mode="L")
    loader = make_loader(samples, rank=0, world=2, batch_size=2, num_workers=2)
    assert loader.num_workers == 2 and not loader.persistent_workers and not loader.pin_memory
    assert isinstance(loader.sampler, torch.utils.data.SequentialSampler)
    batches = _flat(loader)
    assert [[it.index for it in b] for b in batches] == [[0, 2], [4]]
    assert all(it.image.mode == "RGB" and it.image.size == (32, 24) for b in batches for it in b)


def test_max_pixels_downscales_and_keeps_image_size(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 2, size=(400, 300))
    items = [it for b in make_loader(samples, max_pixels=30_000) for it in b]
    for it in items:
        w, h = it.image.size
        assert w * h <= 30_000 and (w, h) == (200, 150)
        assert it.sample.image_size == (400, 300)
    # Never upscaled.
    assert decode_image(samples[0], max_pixels=10**7).size == (400, 300)
    # Extreme aspect ratios still fit the area.
    path = tmp_path / "thin.png"
    Image.new("RGB", (1000, 2)).save(path)
    thin = Sample("demo", "thin", str(path), (1000, 2), "x", Box(0, 0, 1, 1))
    w, h = decode_image(thin, max_pixels=50).size
    assert w * h <= 50 and h >= 1 and w >= 1


def test_decoded_image_is_detached_from_the_file(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 1)
    image = decode_image(samples[0])
    os.remove(samples[0].image_path)
    assert image.getpixel((1, 1)) == (0, 7, 9)


def test_skip_ids_after_sharding(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 7)
    loader = make_loader(samples, rank=1, world=3, batch_size=2, skip_ids={"s1", "s2", "s6"})
    assert [[it.index for it in b] for b in _flat(loader)] == [[4]]
    everything = make_loader(samples, rank=0, world=1, batch_size=3, skip_ids=[s.id for s in samples])
    assert _flat(everything) == []


def _pad_run(
    samples: list[Sample], world: int, batch_size: int, skip: frozenset[str] = frozenset()
) -> list[list[list[Item]]]:
    return [
        _flat(
            make_loader(samples, rank=r, world=world, batch_size=batch_size, pad_batches=True, skip_ids=skip)
        )
        for r in range(world)
    ]


def test_pad_batches_equalises_ranks(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 7)
    runs = _pad_run(samples, world=3, batch_size=2)
    target = batches_per_rank(7, 3, 2)
    assert target == 2
    assert [len(r) for r in runs] == [target] * 3
    for rank, batches in enumerate(runs):
        items = [it for b in batches for it in b]
        real = [it for it in items if not it.padding]
        pads = [it for it in items if it.padding]
        assert [it.index for it in real] == shard_indices(7, rank, 3)
        assert [it.sample for it in real] == [samples[i] for i in shard_indices(7, rank, 3)]
        # Padding only fills the shortfall: none when the shard already needs `target` batches.
        assert len(pads) == (0 if rank == 0 else (target - 1) * 2 + 1 - len(real))
        assert all(it.index == real[0].index and it.image.size == (32, 24) for it in pads)
        # Real items come first, padding after.
        assert items[: len(real)] == real
    # Without padding the ranks are uneven and nothing is flagged.
    plain = [_flat(make_loader(samples, rank=r, world=3, batch_size=2)) for r in range(3)]
    assert [len(r) for r in plain] == [2, 1, 1]
    assert not any(it.padding for r in plain for b in r for it in b)


def test_pad_batches_with_empty_rank_and_skips(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 2)
    runs = _pad_run(samples, world=3, batch_size=2)
    assert [len(r) for r in runs] == [1, 1, 1]
    assert [(it.index, it.padding) for it in runs[2][0]] == [(0, True)]
    assert [(it.index, it.padding) for it in runs[1][0]] == [(1, False)]
    # skip_ids never changes the target: it comes from the full sample count.
    skipped = _pad_run(_samples(tmp_path, 7), world=3, batch_size=2, skip=frozenset({"s0", "s3", "s6"}))
    assert [len(r) for r in skipped] == [2, 2, 2]
    assert all(it.padding for b in skipped[0] for it in b)
    assert [it.index for it in skipped[0][0]] == [0, 0]


def test_zero_samples(tmp_path: Path) -> None:
    for pad in (False, True):
        for rank in range(3):
            assert _flat(make_loader([], rank=rank, world=3, batch_size=2, pad_batches=pad)) == []
    assert batches_per_rank(0, 3, 2) == 0


def test_dataset_argument_checks(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 3)
    with pytest.raises(ValueError, match="out of range"):
        SampleDataset(samples, [3])
    with pytest.raises(ValueError, match="fewer"):
        SampleDataset(samples, [0, 1, 2], pad_to=1, batch_size=2)
    with pytest.raises(ValueError, match="no sample"):
        SampleDataset([], [], pad_to=1)
    with pytest.raises(IndexError):
        SampleDataset(samples, [0])[1]


def test_missing_and_corrupt_images_name_the_sample(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 2)
    missing = Sample("bench_x", "id-42", str(tmp_path / "nope.png"), (8, 8), "x", Box(0, 0, 1, 1))
    with pytest.raises(GgeError, match=r"bench_x.*id-42.*nope\.png"):
        decode_image(missing)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    corrupt = Sample("bench_x", "id-43", str(bad), (8, 8), "x", Box(0, 0, 1, 1))
    with pytest.raises(GgeError, match=r"bench_x.*id-43.*bad\.png"):
        decode_image(corrupt)
    # In a worker it is that item's error (the run scores the sample as a counted miss), naming it.
    ((good, failed),) = _flat(
        make_loader([samples[0], missing], batch_size=2, num_workers=1, group_sizes=False)
    )
    assert good.image_error is None and good.image is not None
    assert failed.image is None and failed.image_error is not None
    assert (
        "bench_x" in failed.image_error and "id-42" in failed.image_error and "nope.png" in failed.image_error
    )


def test_prefetch_keeps_order_converts_and_propagates_errors(tmp_path: Path) -> None:
    import threading

    from gge.run.data import Prefetch

    samples = _samples(tmp_path, 5, size=(30, 20))
    batches = list(Prefetch(make_loader(samples, batch_size=2, num_workers=2)))
    assert [[it.index for it in b] for b in batches] == [[0, 1], [2, 3], [4]]
    assert all(it.decoded is not None and it.image.size == (30, 20) for b in batches for it in b)
    assert all(it.pixels is None for b in batches for it in b)  # the image holds them; not twice

    def broken() -> Iterator[list[Item]]:
        yield []
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError, match="worker died"):
        list(Prefetch(broken()))

    before = threading.active_count()
    for _ in Prefetch(make_loader(samples, batch_size=1), depth=1):
        break  # leaving early stops the thread
    assert threading.active_count() <= before


def _undecoded(n: int) -> list[Sample]:
    """Samples whose screenshots are never opened (``decode=False``)."""
    return [Sample("demo", str(i), f"/nowhere/{i}.png", (8, 8), "click", Box(0, 0, 1, 1)) for i in range(n)]


def test_min_batches_never_cuts_the_batches_the_shard_needs() -> None:
    # 7 samples in batches of 2 need ceil(7 / 2) = 4 batches, the last of one item; min_batches=1 adds none
    loader = make_loader(_undecoded(7), batch_size=2, decode=False, min_batches=1)
    batches = [[(it.index, it.padding) for it in b] for b in loader]
    assert [len(b) for b in batches] == [2, 2, 2, 1]
    assert not any(padding for b in batches for _, padding in b)
    # more batches asked than needed: padding items fill them, repeating the first sample
    padded = [
        [(it.index, it.padding) for it in b]
        for b in make_loader(_undecoded(3), batch_size=2, decode=False, min_batches=3)
    ]
    assert padded == [[(0, False), (1, False)], [(2, False), (0, True)], [(0, True)]]


def test_min_batches_keeps_the_pad_batches_target() -> None:
    # the docstring's case: rank 2 of 3 holds samples 2 and 5, 5 skipped; pad_batches wants
    # batches_per_rank(7, 3, 2) = 2 batches, min_batches=1 asks for at least 1: still 2
    samples = _undecoded(7)
    loader = make_loader(
        samples, rank=2, world=3, batch_size=2, pad_batches=True, skip_ids={"5"}, decode=False, min_batches=1
    )
    assert [[(it.index, it.padding) for it in b] for b in loader] == [[(2, False), (2, True)], [(2, True)]]
