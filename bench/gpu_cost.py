"""What each stage costs on a GPU: a Qwen2.5-VL-7B-shaped model with random weights on 3840x2160 screenshots.

The model is built from its config on the device, in bf16 (no download, no host copy of the weights):
every field of the public Qwen2.5-VL-7B-Instruct ``config.json`` set explicitly, since
``transformers.Qwen2_5_VLConfig``'s own defaults are not the 7B's (its text defaults are the 72B's
shape, hidden 8192 and 80 layers, and its vision ``hidden_size`` is 3584 where the 7B's is 1280):

- text: vocab 152064, hidden 3584, intermediate 18944, 28 layers, 28 heads, 4 kv heads, RMS eps 1e-6,
  rope theta 1e6, M-RoPE sections [16, 24, 24], untied embeddings (8.29B parameters in all);
- vision: depth 32, hidden 1280, intermediate 3420, 16 heads, patch 14, spatial merge 2, temporal
  patch 2, window 112, full attention in blocks [7, 15, 23, 31], out hidden 3584.

The processor is the tiny test checkpoint's (``tests/helpers/tiny_checkpoints.py``): its image
processor has the real Qwen2.5-VL settings (patch 14, merge 2, CLIP mean/std, min 3136 and max
12845056 pixels), so a screenshot makes the real number of image tokens (3840x2160: 137 x 77 =
10549); its tokenizer has 526 tokens where the model has 152064 rows. With random weights that
mismatch changes nothing that is timed: the prompt's ids are the tiny tokenizer's (the model's
image-token id is set to its ``<|image_pad|>``), the answers are noise either way, and ids past the
tokenizer's vocabulary decode to nothing. A random model rarely emits an end token, so every answer
runs the whole ``--max-new-tokens`` budget: decoding lengths are equal across cases.

Cases (each through ``GroundingPolicy`` over ``TransformersBackend``, as a run calls them):

1. greedy, batch 1: ``--samples`` screenshots one call each;
2. greedy, batch 8: the same screenshots in one call;
3. sampling K=5 through the one prefill (the greedy answer and K-1 samples continue one prefill of
   the prompt), against 4. five greedy calls, on ``--few`` screenshots one at a time;
5. the pointwise critic on K=5 fixed candidates (one forward over the 5 marked screenshots a sample);
6. the refine stage (``refine="zoom"``, ``refine_zoom=2``: a 1920x1080 crop around the first
   candidate) over the ``--samples`` screenshots in one call.

Printed and written (``--out DIR``: ``figures.json`` and ``figures.txt``): per case samples/s from
``torch.cuda.Event`` timings around the calls, image tokens per sample, peak GPU memory
(``torch.cuda.max_memory_allocated``, reset before each case), and the ledger's own figures
(``Prediction.costs``: seconds, prefill seconds, input/output/cached tokens) beside the events'
seconds. ``--tiny --device cpu`` runs the same code on the tiny test config and small screenshots,
timed with ``time.perf_counter`` (the suite runs it so that the script cannot rot).

    python bench/gpu_cost.py --out DIR                       # one H200: sized for under 5 minutes
    python bench/gpu_cost.py --tiny --device cpu --out DIR   # CPU smoke run, under a minute
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "helpers"))

import torch  # noqa: E402

from gge.models.base import Proposal  # noqa: E402
from gge.models.hf import TransformersBackend  # noqa: E402
from gge.models.hf_loading import load_processor  # noqa: E402
from gge.models.policy import AdapterSettings, GroundingPolicy  # noqa: E402
from gge.types import Box, Candidate, CostRecord, Prediction, Sample  # noqa: E402

TEXT_7B: dict[str, Any] = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "hidden_act": "silu",
    "max_position_embeddings": 128000,
    "rms_norm_eps": 1e-6,
    "use_sliding_window": False,
    "sliding_window": 32768,
    "max_window_layers": 28,
    "tie_word_embeddings": False,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [16, 24, 24]},
}
VISION_7B: dict[str, Any] = {
    "depth": 32,
    "hidden_size": 1280,
    "intermediate_size": 3420,
    "num_heads": 16,
    "hidden_act": "silu",
    "in_channels": 3,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "window_size": 112,
    "fullatt_block_indexes": [7, 15, 23, 31],
    "out_hidden_size": 3584,
    "tokens_per_second": 2,
}
SCREEN = (3840, 2160)
TINY_SCREEN = (448, 252)
INSTRUCTION = "click the OK button of the settings window"


# -- the model -------------------------------------------------------------------------------------------
def token_ids(tokenizer: Any) -> dict[str, int]:
    """The config's token ids, from the tokenizer (Qwen's special tokens)."""
    names = {
        "image_token_id": "<|image_pad|>",
        "video_token_id": "<|video_pad|>",
        "vision_start_token_id": "<|vision_start|>",
        "vision_end_token_id": "<|vision_end|>",
        "bos_token_id": "<|endoftext|>",
        "eos_token_id": "<|im_end|>",
        "pad_token_id": "<|endoftext|>",
    }
    return {key: int(tokenizer.convert_tokens_to_ids(token)) for key, token in names.items()}


def build_model(
    tiny_folder: Path, tokenizer: Any, *, tiny: bool, device: str, dtype: torch.dtype, attn: str
) -> Any:
    """A random Qwen2.5-VL built on ``device`` in ``dtype``: the 7B's shape, or the tiny test config's."""
    from transformers import GenerationConfig, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    ids = token_ids(tokenizer)
    if tiny:
        config = Qwen2_5_VLConfig.from_pretrained(tiny_folder)
    else:
        text = {**TEXT_7B, **{k: ids[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id")}}
        config = Qwen2_5_VLConfig(
            text_config=text,
            vision_config=VISION_7B,
            tie_word_embeddings=False,
            image_token_id=ids["image_token_id"],
            video_token_id=ids["video_token_id"],
            vision_start_token_id=ids["vision_start_token_id"],
            vision_end_token_id=ids["vision_end_token_id"],
        )
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(  # type: ignore[no-untyped-call]
            config, dtype=dtype, attn_implementation=attn
        )
    model.generation_config = GenerationConfig(  # type: ignore[no-untyped-call]
        bos_token_id=ids["bos_token_id"],
        eos_token_id=[ids["eos_token_id"], ids["pad_token_id"]],
        pad_token_id=ids["pad_token_id"],
    )
    return model.eval()


# -- timing ----------------------------------------------------------------------------------------------
class Clock:
    """Seconds of a call: ``torch.cuda.Event`` pairs on a CUDA device, ``time.perf_counter`` elsewhere."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")

    def time(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        """``fn()`` and its seconds (the device's queued work finished before and after)."""
        if not self.cuda:
            start = time.perf_counter()
            out = fn()
            return out, time.perf_counter() - start
        torch.cuda.synchronize()
        begin = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        begin.record()
        out = fn()
        end.record()
        torch.cuda.synchronize()
        return out, begin.elapsed_time(end) / 1000

    def reset_peak(self) -> None:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()

    def peak_gib(self) -> float | None:
        return torch.cuda.max_memory_allocated() / 2**30 if self.cuda else None


def ledger(costs: Sequence[CostRecord], samples: int) -> dict[str, Any]:
    """The ledger's figures of a case: sums over its requests, per sample where it says so."""

    def total(key: str) -> float | None:
        values = [getattr(c, key) for c in costs]
        return None if not values or any(v is None for v in values) else float(sum(values))

    image = total("image_tokens")
    return {
        "requests": len(costs),
        "seconds": total("seconds"),
        "prefill_seconds": total("prefill_seconds"),
        "input_tokens_per_sample": None if total("input_tokens") is None else total("input_tokens") / samples,  # type: ignore[operator]
        "image_tokens_per_sample": None if image is None else image / samples,
        "output_tokens_per_sample": None
        if total("output_tokens") is None
        else total("output_tokens") / samples,  # type: ignore[operator]
        "cached_tokens_per_sample": None
        if total("cached_tokens") is None
        else total("cached_tokens") / samples,  # type: ignore[operator]
        "batch_sizes": sorted({c.batch_size for c in costs if c.batch_size is not None}),
    }


# -- the cases -------------------------------------------------------------------------------------------
def screenshots(n: int, size: tuple[int, int], folder: Path) -> tuple[list[Sample], list[Any]]:
    """``n`` drawn desktop screenshots of ``size`` (bench/eval_pipeline.py's drawer), as samples."""
    from eval_pipeline import draw_screenshot

    samples, images = [], []
    w, h = size
    for i in range(n):
        image = draw_screenshot(i, size)
        path = folder / f"{i}.png"
        image.save(path)
        box = Box(w * 0.45, h * 0.45, w * 0.5, h * 0.5)
        samples.append(Sample("gpu_cost", str(i), str(path), size, INSTRUCTION, box))
        images.append(image)
    return samples, images


def fixed_candidates(sample: Sample, k: int) -> tuple[Candidate, ...]:
    """K points around the target's centre (fixed: a random model rarely answers two points)."""
    w, h = sample.image_size
    return tuple(
        Candidate((w * (0.4 + 0.04 * j), h * (0.45 + 0.02 * j)), score=1.0 - 0.1 * j) for j in range(k)
    )


def run_cases(
    backend: TransformersBackend,
    samples: list[Sample],
    images: list[Any],
    args: argparse.Namespace,
    clock: Clock,
) -> list[dict[str, Any]]:
    """Every case: its seconds, samples/s, peak memory and ledger figures."""
    tokens = args.max_new_tokens
    greedy = GroundingPolicy(
        backend, AdapterSettings(proposer="greedy", critic="none", k=1, max_new_tokens=tokens)
    )
    sampling = GroundingPolicy(
        backend, AdapterSettings(proposer="sampling", critic="none", k=args.k, max_new_tokens=tokens)
    )
    pointwise = GroundingPolicy(backend, AdapterSettings(proposer="greedy", critic="pointwise", k=args.k))
    few = samples[: args.few], images[: args.few]
    cases: list[dict[str, Any]] = []

    def case(name: str, n: int, batch: int, calls: Callable[[], list[Sequence[CostRecord]]]) -> None:
        backend.batch_size = batch
        clock.reset_peak()
        costs, seconds = clock.time(calls)
        flat = [c for group in costs for c in group]
        cases.append(
            {
                "case": name,
                "samples": n,
                "backend_batch": batch,
                "seconds": seconds,
                "samples_per_s": n / seconds,
                "peak_gib": clock.peak_gib(),
                "ledger": ledger(flat, n),
            }
        )
        print(f"  {name}: {seconds:.2f} s", flush=True)

    def predict(
        policy: GroundingPolicy, ss: Sequence[Sample], ims: Sequence[Any], repeat: int = 1
    ) -> list[Sequence[CostRecord]]:
        out: list[Sequence[CostRecord]] = []
        for _ in range(repeat):
            out += [p.costs for p in policy.predict_images(ss, ims)]
        return out

    n = len(samples)
    predict(greedy, samples[:1], images[:1])  # warm-up: kernels, allocator (not timed)
    case(
        "greedy, batch 1",
        n,
        1,
        lambda: [c for i in range(n) for c in predict(greedy, samples[i : i + 1], images[i : i + 1])],
    )
    case(f"greedy, batch {n}", n, n, lambda: predict(greedy, samples, images))
    m = len(few[0])
    case(
        f"sampling K={args.k}, one prefill",
        m,
        1,
        lambda: [c for i in range(m) for c in predict(sampling, few[0][i : i + 1], few[1][i : i + 1])],
    )
    case(
        f"{args.k} greedy calls",
        m,
        1,
        lambda: [
            c for i in range(m) for c in predict(greedy, few[0][i : i + 1], few[1][i : i + 1], repeat=args.k)
        ],
    )
    proposals = [Proposal(fixed_candidates(s, args.k)) for s in few[0]]
    case(
        f"pointwise critic, K={args.k}",
        m,
        args.k,
        lambda: [
            j.costs
            for i in range(m)
            for j in pointwise.rank(few[0][i : i + 1], few[1][i : i + 1], proposals[i : i + 1])
        ],
    )
    fields = {f.name for f in dataclasses.fields(AdapterSettings)}
    if "refine" not in fields or not hasattr(GroundingPolicy, "refine"):
        print(
            "  refine: skipped, this gge has no refine stage (AdapterSettings.refine, GroundingPolicy.refine)"
        )
        return cases
    refine = GroundingPolicy(
        backend,
        AdapterSettings(
            proposer="greedy", critic="none", k=1, max_new_tokens=tokens, refine="zoom", refine_zoom=2.0
        ),
    )
    base = [Prediction(s.benchmark, s.id, fixed_candidates(s, 1)) for s in samples]

    def refined() -> list[Sequence[CostRecord]]:
        return [[c for c in p.costs if c.stage == "refine"] for p in refine.refine(samples, images, base)]

    case("refine (zoom x2)", n, n, refined)
    return cases


# -- the report ------------------------------------------------------------------------------------------
def text_report(facts: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    """The table and ratio lines."""
    lines = [
        f"{facts['model']} ({facts['parameters']:,} parameters, {facts['dtype']}, {facts['attn']}) "
        f"on {facts['device_name']}; screenshots {facts['screen'][0]}x{facts['screen'][1]}, "
        f"{facts['max_new_tokens']} new tokens per answer; weights {facts['weights_gib']:.1f} GiB",
        "",
        "| case                        | samples | seconds (events) | samples/s | image tok/sample "
        "| peak GiB | ledger s | ledger prefill s | ledger in/out/cached tok per sample |",
        "|-----------------------------|---------|------------------|-----------|------------------|----------"
        "|----------|------------------|-------------------------------------|",
    ]

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    for c in cases:
        led = c["ledger"]
        toks = "/".join(
            num(led[key], ".0f")
            for key in ("input_tokens_per_sample", "output_tokens_per_sample", "cached_tokens_per_sample")
        )
        lines.append(
            f"| {c['case']:27} | {c['samples']:7} | {c['seconds']:16.3f} | {c['samples_per_s']:9.3f} "
            f"| {num(led['image_tokens_per_sample'], '16.0f'):>16} | {num(c['peak_gib'], '8.1f'):>8} "
            f"| {num(led['seconds'], '8.3f'):>8} | {num(led['prefill_seconds'], '16.3f'):>16} | {toks:>35} |"
        )
    by = {c["case"]: c for c in cases}
    one, batch, shared, separate = cases[0], cases[1], cases[2], cases[3]

    def ratio(name: str, value: float) -> None:
        lines.append(f"ratio: {name} = {value:.3f}")

    lines.append("")
    ratio(f"{batch['case']} / {one['case']} samples/s", batch["samples_per_s"] / one["samples_per_s"])
    ratio(f"{shared['case']} / {separate['case']} seconds", shared["seconds"] / separate["seconds"])
    for c in cases:
        if c["ledger"]["seconds"]:
            ratio(f"ledger seconds / event seconds, {c['case']}", c["ledger"]["seconds"] / c["seconds"])
    if "refine (zoom x2)" in by:
        ratio(f"refine / {batch['case']} seconds", by["refine (zoom x2)"]["seconds"] / batch["seconds"])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for figures.json and figures.txt")
    parser.add_argument("--tiny", action="store_true", help="the tiny test config and small screenshots")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default=None, help="default bfloat16 on CUDA, float32 elsewhere")
    parser.add_argument("--attn", default="sdpa", help="attn_implementation (sdpa, flash_attention_2, eager)")
    parser.add_argument("--samples", type=int, default=8, help="screenshots of the greedy and refine cases")
    parser.add_argument("--few", type=int, default=2, help="screenshots of the sampling and critic cases")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default 16 (tiny: 4)")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device here: run it on a GPU machine, or with --tiny --device cpu")
    args.max_new_tokens = args.max_new_tokens or (4 if args.tiny else 16)
    dtype = getattr(torch, args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import transformers
    from tiny_checkpoints import build_tiny_qwen2_5_vl  # type: ignore[import-not-found]

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    clock = Clock(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        tiny = build_tiny_qwen2_5_vl(Path(tmp) / "tiny")
        processor = load_processor(str(tiny))
        model = build_model(
            tiny, processor.tokenizer, tiny=args.tiny, device=args.device, dtype=dtype, attn=args.attn
        )
        weights = clock.peak_gib() or 0.0
        backend = TransformersBackend(
            model, processor, batch_size=1, extra={"dtype": str(dtype), "device": args.device}
        )
        screen = TINY_SCREEN if args.tiny else SCREEN
        samples, images = screenshots(args.samples, screen, Path(tmp))
        built = time.perf_counter() - started
        print(f"built in {built:.1f} s; cases:", flush=True)
        cases = run_cases(backend, samples, images, args, clock)
    facts = {
        "model": "tiny Qwen2.5-VL (test config)" if args.tiny else "Qwen2.5-VL-7B-shaped, random weights",
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": str(dtype).removeprefix("torch."),
        "attn": args.attn,
        "device": args.device,
        "device_name": torch.cuda.get_device_name()
        if clock.cuda
        else platform.processor() or platform.machine(),
        "screen": list(screen),
        "max_new_tokens": args.max_new_tokens,
        "k": args.k,
        "weights_gib": weights,
        "setup_seconds": built,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "timer": "torch.cuda.Event" if clock.cuda else "time.perf_counter",
    }
    text = text_report(facts, cases)
    print("\n" + text, end="")
    (out / "figures.json").write_text(
        json.dumps({"facts": facts, "cases": cases}, indent=2) + "\n", encoding="utf-8"
    )
    (out / "figures.txt").write_text(text, encoding="utf-8")
    print(f"wrote {out / 'figures.json'} and {out / 'figures.txt'}")


if __name__ == "__main__":
    main()
