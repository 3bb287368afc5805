"""Batches that do not pay for padding: samples/s and memory at batch 1 and 8, grouped by size or not.

48 samples in ScreenSpot-Pro's layout (``annotations/<app>.json``, ``images/<app>/...``), one screenshot
each, of two screen sizes shuffled within every application as in the real set, run by a tiny random
Qwen2.5-VL (``tests/helpers/tiny_checkpoints.py``) through the library path a real run takes:
``gge.run.data.make_loader`` (no workers) + ``gge.run.evaluate.evaluate_batches`` with a
``GroundingPolicy`` (greedy proposer, no critic) over ``TransformersBackend``: the same prompt, pixels
and decoding (greedy, ``--max-new-tokens``) in every configuration. Configurations:

- batch 1;
- batch 8, grouped: ``make_loader(group_sizes=True)`` (the default) and the backend's
  ``group_by_size=True``, so every batch holds one screen size;
- batch 8, not grouped: both off, batches in the benchmark's order, mixing the two sizes.

Each configuration runs in its own interpreter (the parent imports neither torch nor transformers, so
the children's ``ru_maxrss``, which Linux carries over from a parent through ``fork`` and ``exec``,
starts below their own figures). Figures:

- samples/s: samples / wall seconds of ``evaluate_batches`` over all of them, after a warm-up request
  on one sample; the configurations run in turn for ``--rounds`` rounds (each a fresh interpreter),
  and each one's fastest round is shown (the least disturbed by other work on the machine); beside
  it samples per CPU second of the process (``time.process_time``; with one thread, less moved by
  other processes on a shared machine);
- memory per sample: (peak RSS at the end of the run - peak RSS once the model and processor are
  loaded, before any request), both ``resource.getrusage(RUSAGE_SELF).ru_maxrss``, divided by the
  batch size: what one more sample in a batch adds to the process's peak, the model itself left out
  (the median of the rounds);
- padded tokens: the share of the prompt rows that is left padding, from the ledger's unpadded
  ``input_tokens`` of each sample and the longest prompt of its batch; and the ledger's mean tokens
  per sample (the same grouped or not: a sample's cost is its own, not its padded batch's).

Printed as ratios measured in this run (targets on a CPU: batch 8 grouped at least as fast as batch 1,
its memory per sample not above batch 1's), with a ``ratio:`` prefix on each ratio line. On a machine
other work shares, wall time moves with that work; the CPU-time ratio is printed beside it. On a CPU
the tiny model's time goes mostly to the vision tower, which works image by image whatever the
batch, so batching buys little there and grouping mostly saves the text model's padding and memory.

    python bench/batch_grouping.py [--quick] [--samples 48] [--batch-size 8] [--threads 1]

About 3 minutes on 2 idle cores (``--quick``: 16 smaller samples, one round, about 35 s). Exits 0
when a target is missed: it is a report.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
APPS = ("vscode_macos", "photoshop_windows", "autocad_windows", "matlab_macos", "excel_windows", "linux_os")
SIZES = ((1280, 720), (640, 360))
QUICK_SIZES = ((896, 504), (448, 252))


# -- the data (a child: PIL, torch and transformers stay out of the parent) ------------------------------
def prepare(folder: Path, n: int, sizes: list[tuple[int, int]], seed: int) -> None:
    """Write the tiny checkpoint (``folder/ckpt``) and the benchmark folder (``folder/screenspot_pro``)."""
    sys.path.insert(0, str(REPO / "bench"))
    sys.path.insert(0, str(REPO / "tests" / "helpers"))
    from eval_pipeline import draw_screenshot
    from tiny_checkpoints import build_tiny_qwen2_5_vl  # type: ignore[import-not-found]

    build_tiny_qwen2_5_vl(folder / "ckpt", seed=seed)
    root = folder / "screenspot_pro"
    rng = random.Random(seed)
    shapes = [sizes[j % len(sizes)] for j in range(n)]  # as many of each size
    rng.shuffle(shapes)  # every application has screenshots of both monitors, in no order
    per_app = [n // len(APPS) + (1 if i < n % len(APPS) else 0) for i in range(len(APPS))]
    for a, app in enumerate(APPS):
        records = []
        mine = shapes[sum(per_app[:a]) : sum(per_app[: a + 1])]
        for j, (w, h) in enumerate(mine):
            rel = f"{app}/shot_{j:03d}.png"
            path = root / "images" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            draw_screenshot(1000 * a + j, (w, h)).save(path)
            x, y = rng.randrange(w - 60), rng.randrange(h - 30)
            records.append(
                {
                    "id": f"{app}_{j}",
                    "img_filename": rel,
                    "img_size": [w, h],
                    "bbox": [x, y, x + 60, y + 30],
                    "instruction": "click the OK button of the settings window",
                    "instruction_cn": "click OK",
                    "application": app.split("_")[0],
                    "platform": app.split("_")[1],
                    "group": "Dev",
                    "ui_type": "icon",
                }
            )
        (root / "annotations").mkdir(parents=True, exist_ok=True)
        (root / "annotations" / f"{app}.json").write_text(json.dumps(records), encoding="utf-8")


# -- one configuration (a child) -------------------------------------------------------------------------
def peak_kib() -> int:
    """This process's peak RSS so far, KiB (Linux's ``ru_maxrss`` unit)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def run_config(folder: Path, batch: int, group: bool, max_new_tokens: int, threads: int) -> dict[str, Any]:
    """Evaluate every sample with one configuration; its figures (see the module docstring)."""
    import torch
    import transformers

    from gge.benchmarks import get_benchmark
    from gge.benchmarks.images import decode_image
    from gge.models.hf import TransformersBackend
    from gge.models.policy import AdapterSettings, GroundingPolicy
    from gge.run.data import make_loader
    from gge.run.evaluate import evaluate_batches

    torch.set_num_threads(threads)
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    bench = get_benchmark("screenspot_pro")
    samples = bench.load(folder / "screenspot_pro", bench.options_type()).samples
    backend = TransformersBackend.from_pretrained(str(folder / "ckpt"), batch_size=batch, group_by_size=group)
    settings = AdapterSettings(proposer="greedy", critic="none", k=1, max_new_tokens=max_new_tokens)
    policy = GroundingPolicy(backend, settings)
    loaded = peak_kib()
    policy.predict_images(samples[:1], [decode_image(samples[0])])  # warm-up (first-call costs)
    start, cpu = time.perf_counter(), time.process_time()
    results = evaluate_batches(policy, make_loader(samples, batch_size=batch, group_sizes=group), k=1)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = peak_kib()
    if len(results) != len(samples):
        raise RuntimeError(f"{len(results)} results for {len(samples)} samples")
    rows = [sum((c.input_tokens or 0 for c in r.costs), 0) for r in results]  # one request per sample
    padded = sum(max(rows[i : i + batch]) * len(rows[i : i + batch]) for i in range(0, len(rows), batch))
    mixed = sum(len({r.image_size for r in results[i : i + batch]}) > 1 for i in range(0, len(rows), batch))
    return {
        "batch": batch,
        "grouped": group,
        "samples": len(results),
        "seconds": wall,
        "samples_per_s": len(results) / wall,
        "samples_per_cpu_s": len(results) / cpu,
        "loaded_kib": loaded,
        "peak_kib": peak,
        "kib_per_sample": (peak - loaded) / batch,
        "padding_share": 1 - sum(rows) / padded,
        "mixed_batches": mixed,
        "batches": -(-len(results) // batch),
        "input_tokens": sum(rows) / len(rows),
        "image_tokens": sum(c.image_tokens or 0 for r in results for c in r.costs) / len(results),
        "ledger_seconds": sum(c.seconds for r in results for c in r.costs),
        "answers": {r.id: r.raw for r in results},
    }


# -- the parent ------------------------------------------------------------------------------------------
def child(args: list[str]) -> dict[str, Any]:
    """Run this script with ``args`` in a fresh interpreter; its last stdout line, parsed."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args[:2]} failed:\n{proc.stderr[-3000:]}")
    lines = proc.stdout.strip().splitlines()
    out: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    return out


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Print the table and the ratio lines."""
    b = args.batch_size
    by = {(r["batch"], r["grouped"]): r for r in rows}
    one, grouped, plain = by[(1, True)], by[(b, True)], by[(b, False)]
    sizes = " and ".join(f"{w}x{h}" for w, h in args.sizes)
    print(
        f"{one['samples']} ScreenSpot-Pro-layout samples ({sizes}), tiny Qwen2.5-VL, greedy, "
        f"{args.max_new_tokens} new tokens at most, {args.threads} CPU thread(s), "
        f"image tokens per sample {one['image_tokens']:.0f} (mean)\n"
    )
    head = "| configuration        | samples/s | samples/CPU s | MiB/sample | mixed batches | padded tokens "
    head += "| ledger tokens/sample |"
    print(head)
    print("|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|")
    for name, r in (("batch 1", one), (f"batch {b}, grouped", grouped), (f"batch {b}, not grouped", plain)):
        print(
            f"| {name:20} | {r['samples_per_s']:9.2f} | {r['samples_per_cpu_s']:13.2f} "
            f"| {r['kib_per_sample'] / 1024:10.1f} "
            f"| {r['mixed_batches']:>6} of {r['batches']:<4} | {100 * r['padding_share']:12.1f}% "
            f"| {r['input_tokens']:20.1f} |"
        )

    def ratio(a: dict[str, Any], key: str) -> float:
        return float(a[key]) / max(float(one[key]), 1e-9)

    speed, memory = ratio(grouped, "samples_per_s"), ratio(grouped, "kib_per_sample")
    print(
        f"\nratio: batch {b} grouped / batch 1 samples/s = {speed:.2f} (target >= 1: {verdict(speed >= 1)})"
    )
    print(
        f"ratio: batch {b} grouped / batch 1 memory per sample = {memory:.2f} "
        f"(target <= 1: {verdict(memory <= 1)})"
    )
    cpu = ratio(grouped, "samples_per_cpu_s")
    print(
        f"ratio: batch {b} grouped / batch 1 samples per CPU second = {cpu:.2f} "
        f"(the same target in CPU time: {verdict(cpu >= 1)})"
    )
    vs_plain = grouped["samples_per_s"] / plain["samples_per_s"]
    print(f"ratio: batch {b} grouped / not grouped samples/s = {vs_plain:.2f}")
    print(
        f"ratio: batch {b} not grouped / batch 1 samples/s = {ratio(plain, 'samples_per_s'):.2f}, "
        f"memory per sample = {ratio(plain, 'kib_per_sample'):.2f}"
    )
    same = sum(grouped["answers"][k] == plain["answers"][k] for k in plain["answers"])
    equal = grouped["input_tokens"] == plain["input_tokens"] == one["input_tokens"]
    print(
        f"\ngreedy answers equal grouped and not grouped: {same} of {len(plain['answers'])} (a batch's "
        f"left padding may move a random model's float results); ledger tokens per sample equal: {equal}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("--prepare", "--config"):
        folder = Path(sys.argv[2])
        if sys.argv[1] == "--prepare":
            sizes = json.loads(sys.argv[4])
            prepare(folder, int(sys.argv[3]), [tuple(s) for s in sizes], seed=0)
            print("{}")
        else:
            batch, group, tokens, threads = (int(v) for v in sys.argv[3:7])
            print(json.dumps(run_config(folder, batch, bool(group), tokens, threads)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 smaller samples, 4 new tokens")
    parser.add_argument("--samples", type=int, default=None, help="default 48 (quick: 16)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default 12 (quick: 4)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each child")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of the three (default 3; quick: 1)")
    args = parser.parse_args()
    args.samples = args.samples or (16 if args.quick else 48)
    args.max_new_tokens = args.max_new_tokens or (4 if args.quick else 12)
    args.sizes = QUICK_SIZES if args.quick else SIZES
    args.rounds = args.rounds or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory() as tmp:
        child(["--prepare", tmp, str(args.samples), json.dumps(args.sizes)])
        runs: dict[tuple[int, bool], list[dict[str, Any]]] = {}
        for _ in range(args.rounds):  # round-robin, so a busy spell of the machine hits every one
            for batch, group in ((1, True), (args.batch_size, True), (args.batch_size, False)):
                config = [str(batch), str(int(group)), str(args.max_new_tokens), str(args.threads)]
                runs.setdefault((batch, group), []).append(child(["--config", tmp, *config]))
    # the fastest round of each (the one least disturbed), its memory the median of the rounds
    rows = []
    for found in runs.values():
        best = dict(max(found, key=lambda r: r["samples_per_s"]))
        best["kib_per_sample"] = statistics.median(r["kib_per_sample"] for r in found)
        rows.append(best)
    report(rows, args)


if __name__ == "__main__":
    main()
