"""Model calls per sample and samples/s: gge's proposer/critic modes against a naive loop.

The naive loop asks for K candidates the way many evaluators would: K separate generate calls per
sample, one sample at a time. gge's modes ask once per batch of samples (``single_pass``: one
generation listing K points; ``sampling``: K sequences from one prompt) and the critic once per
sample (listwise: one generation; pointwise: one batched forward over the K marked images).
Everything runs on a tiny random Qwen2.5-VL checkpoint built offline, on one CPU thread; the ratios
are measured in the same run.

It also measures the one-prefill sampling path (``sampling`` mode: the greedy answer and K-1
samples continue one prefill of the prompt) on a screenshot of at least 1,500 image tokens, against
one greedy call and against K separate greedy calls (target: K=5 within 1.6x of one greedy call).

    python bench/model_calls.py [--samples 24] [--k 5] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import transformers
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
from tiny_checkpoints import build_tiny_qwen2_5_vl

from gge.benchmarks import get_benchmark
from gge.benchmarks.demo import write_demo_suite
from gge.benchmarks.images import decode_image
from gge.models.base import Generation, GenerationRequest, Proposal
from gge.models.hf import TransformersBackend
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.run.evaluate import evaluate_samples
from gge.types import Candidate, Sample


class Counting:
    """Wraps a backend and counts its calls and the prompts it prefills."""

    def __init__(self, inner: TransformersBackend) -> None:
        self.inner = inner
        self.calls = 0
        self.prompts = 0
        self.rows = 0

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        return self.inner.seen_size(width, height)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.calls += 1
        self.prompts += len(requests)
        self.rows += sum(r.num_sequences for r in requests)
        return self.inner.generate(requests)

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        self.calls += 1
        self.prompts += len(requests)
        self.rows += len(requests)
        return self.inner.yes_probability(requests, yes, no)

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()


def naive(backend: Counting, samples: Sequence[Sample], k: int, settings: AdapterSettings) -> None:
    """K separate greedy calls per sample, one sample at a time (critic: none)."""
    policy = GroundingPolicy(
        backend,
        AdapterSettings(
            convention=settings.convention,
            proposer="greedy",
            critic="none",
            max_new_tokens=settings.max_new_tokens,  # the same decoding budget as gge's modes
        ),
    )
    for s in samples:
        for _ in range(k):
            policy.predict([s])


def jittered(sample: Sample, k: int) -> Proposal:
    """K candidates spread around the target's centre (fixed, so every critic sees the same)."""
    box = sample.region.pixel_box() or (0.0, 0.0, 10.0, 10.0)
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return Proposal(tuple(Candidate((cx + 15.0 * j, cy - 10.0 * j)) for j in range(k)))


def _median_time(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def one_prefill(ckpt: Path, k: int, max_new_tokens: int, repeats: int = 5) -> list[tuple[str, float]]:
    """Seconds per call for one screenshot of >= 1,500 image tokens: the ways to get K candidates."""
    backend = TransformersBackend.from_pretrained(str(ckpt), max_pixels=1_300_000)
    image = Image.new("RGB", (1288, 952), "white")
    w, h = backend.seen_size(*image.size)
    tokens = (w // 28) * (h // 28)
    assert tokens >= 1500, tokens
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "open the settings"}]}
    ]

    def call(**kw: Any) -> Any:
        return lambda: backend.generate(
            [GenerationRequest(image, messages, max_new_tokens=max_new_tokens, **kw)]
        )

    call()()  # warm-up
    ways = [
        ("one greedy call", call()),
        (f"sampling K={k}, one prefill (gge)", call(num_sequences=k, do_sample=True, greedy_first=True)),
        (f"{k} separate greedy calls", lambda: [call()() for _ in range(k)]),
        (f"num_return_sequences={k} ({k} prefills)", call(num_sequences=k, do_sample=True)),
    ]
    print(
        f"\nOne prefill for K: a {image.size[0]}x{image.size[1]} screenshot, {tokens} image tokens, "
        f"{max_new_tokens} new tokens at most, median of {repeats}\n"
    )
    return [(name, _median_time(fn, repeats)) for name, fn in ways]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=24)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ckpt = build_tiny_qwen2_5_vl(root / "ckpt")
        demo = write_demo_suite(root / "demo")
        bench = get_benchmark("screenspot_v2")
        samples = bench.load(demo / bench.directory, bench.options_type()).samples[: args.samples]
        inner = TransformersBackend.from_pretrained(str(ckpt), max_pixels=50_000, batch_size=args.batch_size)
        common = {"convention": "abs_resized", "k": args.k, "max_new_tokens": args.max_new_tokens}
        modes: list[tuple[str, AdapterSettings | None]] = [
            ("naive: K greedy calls/sample", None),
            ("gge single_pass", AdapterSettings(proposer="single_pass", critic="none", **common)),  # type: ignore[arg-type]
            (
                "gge sampling (K seqs, 1 prompt)",
                AdapterSettings(proposer="sampling", critic="none", **common),
            ),  # type: ignore[arg-type]
        ]
        # warm-up (first-call costs are not the subject)
        GroundingPolicy(inner, AdapterSettings(**common)).predict(samples[:2])  # type: ignore[arg-type]
        rows = []
        for name, settings in modes:
            backend = Counting(inner)
            start = time.perf_counter()
            if settings is None:
                naive(backend, samples, args.k, AdapterSettings(**common))  # type: ignore[arg-type]
            else:
                evaluate_samples(
                    GroundingPolicy(backend, settings), samples, k=args.k, batch_size=args.batch_size
                )
            elapsed = time.perf_counter() - start
            rows.append(
                (name, backend.calls / len(samples), backend.prompts / len(samples), len(samples) / elapsed)
            )
        # The critic alone, on K fixed candidates per sample (a random model rarely proposes two points).
        images = [decode_image(s) for s in samples]
        proposals = [jittered(s, args.k) for s in samples]
        critic_rows = []
        for critic in ("listwise", "pointwise"):
            backend = Counting(inner)
            policy = GroundingPolicy(backend, AdapterSettings(critic=critic, **common))  # type: ignore[arg-type]
            start = time.perf_counter()
            for i in range(0, len(samples), args.batch_size):
                sl = slice(i, i + args.batch_size)
                policy.rank(samples[sl], images[sl], proposals[sl])
            elapsed = time.perf_counter() - start
            critic_rows.append(
                (critic, backend.calls / len(samples), backend.rows / len(samples), len(samples) / elapsed)
            )
    base = rows[0][3]
    print(f"{len(samples)} samples, K={args.k}, batch {args.batch_size}, tiny Qwen2.5-VL, 1 CPU thread\n")
    print(f"| {'mode':34} | model calls/sample | prompts/sample | samples/s | speed vs naive |")
    print(f"|{'-' * 36}|--------------------|----------------|-----------|----------------|")
    for name, calls, prompts, rate in rows:
        print(f"| {name:34} | {calls:18.3f} | {prompts:14.2f} | {rate:9.2f} | {rate / base:13.2f}x |")
    print(f"\nCritic alone, {args.k} candidates per sample:\n")
    print("| critic    | model calls/sample | images scored/sample | samples/s |")
    print("|-----------|--------------------|----------------------|-----------|")
    for name, calls, rows_, rate in critic_rows:
        print(f"| {name:9} | {calls:18.3f} | {rows_:20.2f} | {rate:9.2f} |")
    print(
        "\nprompts/sample counts prompts sent to the model; with sampling, the greedy answer and K-1"
        " samples continue one prefill of each prompt (one call)."
    )
    with tempfile.TemporaryDirectory() as tmp:
        timings = one_prefill(build_tiny_qwen2_5_vl(Path(tmp) / "ckpt"), args.k, args.max_new_tokens)
    one = timings[0][1]
    print("| way to get the candidates              | s/call | vs one greedy call |")
    print("|----------------------------------------|--------|--------------------|")
    for name, seconds in timings:
        print(f"| {name:38} | {seconds:6.3f} | {seconds / one:17.2f}x |")
    ratio = timings[1][1] / one
    verdict = "met" if ratio <= 1.6 else "MISSED"
    print(
        f"\nsampling K={args.k} with one prefill / one greedy call = {ratio:.2f} (target <= 1.6: {verdict})"
    )


if __name__ == "__main__":
    main()
