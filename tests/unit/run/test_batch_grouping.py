"""make_loader groups each rank's samples by screenshot size: same items, same padding, same results.

The expected order is written here from the rule (area, then width, then height, then position in the
benchmark's list), and every check compares the loader with it or with the ungrouped loader.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import torch.utils.data
from measured import TIMES
from PIL import Image

from gge.run.data import Item, make_loader, shard_indices, size_order
from gge.run.evaluate import evaluate_batches, merge_results
from gge.types import Box, Sample, SampleResult

# ScreenSpot-like: a 16:9 desktop, a tall phone, the phone turned (same area, other width), a square.
SIZES = [(64, 36), (18, 40), (40, 18), (30, 30), (48, 27)]


def _samples(n: int, seed: int = 0, sizes: list[tuple[int, int]] = SIZES) -> list[Sample]:
    rng = random.Random(seed)
    return [
        Sample("b", f"s{i}", f"/none/{i}.png", rng.choice(sizes), "click", Box(0, 0, 1, 1)) for i in range(n)
    ]


def _batches(loader: torch.utils.data.DataLoader[Item]) -> list[list[Item]]:
    return [list(b) for b in loader]


def _expected_order(samples: list[Sample], indices: list[int]) -> list[int]:
    """The rule, by brute force: repeatedly take the smallest remaining (area, width, height, index)."""
    left = list(indices)
    out = []
    while left:
        best = left[0]
        for i in left[1:]:
            (w, h), (bw, bh) = samples[i].image_size, samples[best].image_size
            if (w * h, w, h, i) < (bw * bh, bw, bh, best):
                best = i
        out.append(best)
        left.remove(best)
    return out


@pytest.mark.parametrize("world", [1, 2, 3])
@pytest.mark.parametrize("batch_size", [1, 3, 4])
@pytest.mark.parametrize("seed", [0, 1])
def test_batches_follow_the_size_order_of_the_shard(world: int, batch_size: int, seed: int) -> None:
    samples = _samples(23, seed)
    skip = {"s2", "s7", "s11"} if seed else set()
    for rank in range(world):
        shard = [i for i in shard_indices(len(samples), rank, world) if samples[i].id not in skip]
        want = _expected_order(samples, shard)
        assert size_order(samples, shard) == want
        got = _batches(
            make_loader(samples, rank=rank, world=world, batch_size=batch_size, skip_ids=skip, decode=False)
        )
        assert [[it.index for it in b] for b in got] == [
            want[j : j + batch_size] for j in range(0, len(want), batch_size)
        ]
        # The same items as without grouping, each once; only their order differs.
        plain = _batches(
            make_loader(
                samples,
                rank=rank,
                world=world,
                batch_size=batch_size,
                skip_ids=skip,
                decode=False,
                group_sizes=False,
            )
        )
        assert [it.index for b in plain for it in b] == shard
        assert sorted(it.index for b in got for it in b) == sorted(shard)


def test_a_batch_holds_one_size_when_the_counts_allow_it() -> None:
    """Each size 4 or 8 times, interleaved, batches of 4: every batch one size (ungrouped: mixed)."""
    sizes = [SIZES[0]] * 8 + [SIZES[1]] * 4 + [SIZES[2]] * 4 + [SIZES[3]] * 8
    random.Random(3).shuffle(sizes)
    samples = [Sample("b", f"s{i}", "", wh, "x", Box(0, 0, 1, 1)) for i, wh in enumerate(sizes)]
    got = _batches(make_loader(samples, batch_size=4, decode=False))
    assert [len({it.sample.image_size for it in b}) for b in got] == [1] * 6
    # smallest area first (18x40 and 40x18 have one area: the narrower first), each batch in list order
    assert [b[0].sample.image_size for b in got] == [
        (18, 40),
        (40, 18),
        (30, 30),
        (30, 30),
        (64, 36),
        (64, 36),
    ]
    assert all([it.index for it in b] == sorted(it.index for it in b) for b in got)
    plain = _batches(make_loader(samples, batch_size=4, decode=False, group_sizes=False))
    assert sum(len({it.sample.image_size for it in b}) for b in plain) > 6


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("skip", [frozenset(), frozenset({"s0", "s1", "s5", "s6"})])
def test_padding_counts_and_place_are_unchanged(world: int, skip: frozenset[str]) -> None:
    samples = _samples(11, seed=2)
    for rank in range(world):
        kw = {"rank": rank, "world": world, "batch_size": 2, "pad_batches": True, "skip_ids": skip}
        got = _batches(make_loader(samples, decode=False, **kw))  # type: ignore[arg-type]
        plain = _batches(make_loader(samples, decode=False, group_sizes=False, **kw))  # type: ignore[arg-type]
        assert [len(b) for b in got] == [len(b) for b in plain]
        flags = [it.padding for b in got for it in b]
        assert flags == [it.padding for b in plain for it in b]
        assert flags == sorted(flags)  # padding after every real item
        real = [it.index for b in got for it in b if not it.padding]
        pads = [it.index for b in got for it in b if it.padding]
        # a padding item repeats the first sample the rank runs (or sample 0 when it runs none)
        assert set(pads) <= {real[0] if real else 0}


def _unmeasured(r: SampleResult) -> SampleResult:
    """The result without what its requests measured (tests/helpers/measured.py: the seconds, and the
    batch each request ran in, which grouping changes by design)."""
    assert {"seconds", "prefill_seconds"} == TIMES  # and each cost record's batch_size
    costs = tuple(replace(c, seconds=0.0, prefill_seconds=None, batch_size=0) for c in r.costs)
    return replace(r, costs=costs)


def test_demo_results_are_the_same_grouped_or_not(demo_suite: Path) -> None:
    """The demo policy on a benchmark of six screen sizes, 1 and 2 ranks: grouping changes no result."""
    from gge.benchmarks import get_benchmark
    from gge.models.demo import load_demo_policy

    bench = get_benchmark("screenspot_v2")
    samples = bench.load(demo_suite / bench.directory, bench.options_type()).samples[:20]
    assert len({s.image_size for s in samples}) >= 4
    policy = load_demo_policy(k=3)

    def run(world: int, group: bool) -> list[SampleResult]:
        parts = [
            evaluate_batches(
                policy,
                make_loader(samples, rank=r, world=world, batch_size=4, group_sizes=group),
                k=3,
            )
            for r in range(world)
        ]
        return [_unmeasured(r) for r in merge_results(parts, samples)]

    grouped = run(1, True)
    assert [r.id for r in grouped] == [s.id for s in samples]
    assert run(1, False) == grouped
    assert run(2, True) == grouped
    # the loader did run them in another order (else the comparison above would prove nothing)
    order = [it.sample.id for b in make_loader(samples, batch_size=4, decode=False) for it in b]
    assert order != [s.id for s in samples] and Counter(order) == Counter(s.id for s in samples)
    for s, r in zip(samples, grouped, strict=True):
        assert r.image_size == s.image_size


def test_recorded_size_decides_not_the_file(tmp_path: Path) -> None:
    """The order reads Sample.image_size (no file opened): a file of another size does not move it."""
    samples = []
    for i, (recorded, real) in enumerate([((50, 50), (8, 8)), ((10, 10), (60, 60))]):
        path = tmp_path / f"{i}.png"
        Image.new("RGB", real).save(path)
        samples.append(Sample("b", str(i), str(path), recorded, "x", Box(0, 0, 1, 1)))
    ((first, second),) = _batches(make_loader(samples, batch_size=2))
    assert (first.index, second.index) == (1, 0)
    # and such a file is that sample's image error, naming both sizes (issue 37): not decoded as it is
    assert first.image is None and first.image_error is not None
    assert "is 60x60 pixels, but its record says 10x10" in first.image_error
