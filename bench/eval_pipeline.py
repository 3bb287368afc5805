"""The evaluation data pipeline: decoding overlapped with the model, throughput, memory, idle callback cost.

Four measures, each a ratio taken within one run (the machine may be slow or noisy; only ratios are
compared with targets):

1. overlap: a policy that sleeps ``t`` per batch, fed full-size PNG screenshots by
   ``make_loader(num_workers=W)``: wall time / (batches x t). Decoding happens in the workers while
   the model "works", so only the first batch (worker start-up + decoding one batch, which the
   workers share: ``ItemLoader`` parts) is not hidden.
   That start-up (about 0.25 s on 2 cores) is paid once per evaluation, so its share of the ratio
   depends only on how many batches follow: the run has 512 samples (64 batches of 8; ``--quick``:
   256), still fewer than a real benchmark shard (ScreenSpot-v2 has 1272 samples, ScreenSpot-Pro
   1581: 150-200 batches of 8). The steady state after the first batch, (wall - first) / ideal, is
   printed and tabled too, with the same target.
   ``t`` is 1.5 x (the measured decode time of one batch) / W: the workers have 1.5x headroom
   (``--overlap-t`` sets it). Hiding decoding needs the pipeline to deliver batch / t samples/s, which
   the throughput line reports next to what it delivers with a zero-time model.
2. throughput: a policy that takes no time, samples/s through ``make_loader`` + ``evaluate_batches``
   (and through ``GroundingEvalModule`` under a Lightning Trainer) / samples/s of a plain PIL loop in
   this process (open + convert RGB + load). For information, the pipeline also runs with gge's
   shared-memory slots off (``GGE_SHM_DIR=``: workers hand over torch shared tensors instead).
3. memory: peak RSS of the zero-time pipeline over many samples / over few, each in a fresh
   interpreter: its own peak (``VmHWM``, see :func:`peak_rss_kib`) + its largest worker's.
4. idle callback: a small ``Trainer.fit`` (4 epochs) with ``GroundingEvalCallback(every_n_epochs=1000)``
   attached (never evaluates) / the same fit without it: the median epoch (the target: an epoch in
   which the callback does not run costs nothing more) and, for information, the whole fit (which
   also pays the callback's one-off setup); median of alternating repeats, with an empty
   ``pl.Callback`` as a control (Lightning's own cost of one more callback).

Screenshots are 1920x1080 PNGs with GUI-like windows, text and a noisy wallpaper, drawn by PIL in a
temporary folder; many samples are hard links to a few files (the loader decodes every path anyway).

    python bench/eval_pipeline.py [--quick] [--workers 2] [--batch-size 8] [--overlap-t SECONDS]

About 2 minutes on 2 cores (``--quick``: about 45 s). Exits 0 when a target is missed: it is a report.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import logging
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytorch_lightning as pl
import torch
from PIL import Image, ImageDraw, ImageFont

from gge.benchmarks.images import decode_image
from gge.run.data import make_loader
from gge.run.evaluate import evaluate_batches
from gge.run.lightning import GroundingEvalModule
from gge.run.slots import SlotFolder, shm_root
from gge.types import Box, Candidate, Prediction, Sample

REPO = Path(__file__).resolve().parents[1]
SIZE = (1920, 1080)
BENCH = "pipeline_bench"
WORDS = ("the", "open", "file", "edit", "view", "help", "save", "search", "cancel", "settings")

# Lightning's start-up chatter is not the subject.
warnings.filterwarnings("ignore", ".*does not have many workers.*")
warnings.filterwarnings("ignore", ".*treespec, LeafSpec.*")
warnings.filterwarnings("ignore", ".*LeafSpec.*")
for _name in ("pytorch_lightning", "lightning.pytorch", "lightning.fabric", "lightning_fabric"):
    logging.getLogger(_name).setLevel(logging.ERROR)


# -- screenshots -------------------------------------------------------------------------------------
def draw_screenshot(seed: int, size: tuple[int, int] = SIZE) -> Image.Image:
    """A desktop: noisy gradient wallpaper, a taskbar, 2-4 windows with a sidebar, text and buttons."""
    rng = random.Random(seed)
    w, h = size
    ys = np.linspace(0, 1, h, dtype=np.float32)[:, None]
    xs = np.linspace(0, 1, w, dtype=np.float32)[None, :]
    zero = np.zeros((h, w), dtype=np.float32)
    base = np.stack([60 + 120 * xs + zero, 90 + 100 * ys + zero, 160 - 80 * xs * ys], axis=-1)
    noise = np.random.default_rng(seed).normal(0, 6, (h, w, 3)).astype(np.float32)
    im = Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8), "RGB")
    d = ImageDraw.Draw(im)
    font = ImageFont.load_default(14)
    d.rectangle((0, h - 40, w, h), fill=(32, 32, 36))
    for i in range(12):
        colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        d.rectangle((10 + i * 48, h - 34, 46 + i * 48, h - 6), fill=colour)
    for _ in range(rng.randint(2, 4)):
        x1, y1 = rng.randrange(0, w // 2), rng.randrange(0, h // 3)
        x2, y2 = min(w - 1, x1 + rng.randrange(700, 1300)), min(h - 50, y1 + rng.randrange(400, 750))
        d.rectangle((x1, y1, x2, y2), fill=(250, 250, 250), outline=(120, 120, 120))
        d.rectangle((x1, y1, x2, y1 + 30), fill=(225, 228, 232))
        d.text(
            (x1 + 10, y1 + 8), f"Window {rng.randrange(1000)} - Document.txt", fill=(20, 20, 20), font=font
        )
        d.rectangle((x1, y1 + 30, x1 + 200, y2), fill=(240, 242, 245))
        for j in range((y2 - y1 - 40) // 22):
            d.text((x1 + 10, y1 + 40 + 22 * j), f"Item {rng.randrange(10**6)}", fill=(40, 40, 40), font=font)
        for j in range((y2 - y1 - 80) // 20):
            line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
            d.text((x1 + 215, y1 + 40 + 20 * j), line, fill=(30, 30, 30), font=font)
        for j in range(rng.randint(2, 6)):
            bx = x1 + 215 + j * 110
            d.rounded_rectangle((bx, y2 - 40, bx + 100, y2 - 12), 6, fill=(26, 115, 232))
            d.text((bx + 20, y2 - 33), "OK", fill=(255, 255, 255), font=font)
    return im


def write_screenshots(folder: Path, n: int) -> list[Path]:
    """``n`` distinct screenshots as PNG files."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = folder / f"source_{i}.png"
        draw_screenshot(i).save(path)
        paths.append(path)
    return paths


def link_samples(sources: Sequence[Path], folder: Path, n: int) -> list[Sample]:
    """``n`` samples whose screenshots are hard links (or copies) to the sources, in turn."""
    folder.mkdir(parents=True, exist_ok=True)
    samples = []
    for i in range(n):
        path = folder / f"{i}.png"
        if not path.exists():
            try:
                os.link(sources[i % len(sources)], path)
            except OSError:
                path.write_bytes(sources[i % len(sources)].read_bytes())
        samples.append(Sample(BENCH, str(i), str(path), SIZE, "click OK", Box(900, 500, 1000, 560)))
    return samples


def folder_samples(folder: Path, n: int) -> list[Sample]:
    """The first ``n`` samples of a folder written by :func:`link_samples`."""
    return [
        Sample(BENCH, str(i), str(folder / f"{i}.png"), SIZE, "click OK", Box(900, 500, 1000, 560))
        for i in range(n)
    ]


# -- policies and runs -------------------------------------------------------------------------------
class SleepPolicy:
    """Looks at the screenshots and takes ``seconds`` per batch; one candidate per sample."""

    needs_images = True

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        return [Prediction(s.benchmark, s.id, (Candidate((950.0, 530.0)),)) for s in samples]

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        for image in images:
            if image is None or image.size != SIZE:
                raise RuntimeError(f"the policy got {image!r}, not a decoded {SIZE} screenshot")
        if self.seconds > 0:
            time.sleep(self.seconds)
        return self.predict(samples)


def timed_batches(batches: Iterable[Any], marks: list[float]) -> Iterator[Any]:
    """Yield the batches, appending the time each one arrived to ``marks``."""
    for batch in batches:
        marks.append(time.perf_counter())
        yield batch


def run_pipeline(
    samples: Sequence[Sample], policy: SleepPolicy, batch_size: int, workers: int
) -> tuple[float, float]:
    """make_loader + evaluate_batches: (wall seconds, seconds until the first batch arrived)."""
    marks: list[float] = []
    start = time.perf_counter()
    loader = make_loader(samples, batch_size=batch_size, num_workers=workers)
    results = evaluate_batches(policy, timed_batches(loader, marks), k=1)
    wall = time.perf_counter() - start
    if len(results) != len(samples):
        raise RuntimeError(f"{len(results)} results for {len(samples)} samples")
    return wall, (marks[0] - start) if marks else wall


def run_lightning(samples: Sequence[Sample], batch_size: int, workers: int) -> float:
    """GroundingEvalModule under trainer.predict with a zero-time policy: wall seconds of predict()."""
    module = GroundingEvalModule(
        SleepPolicy(0.0), {BENCH: samples}, k=1, batch_size=batch_size, num_workers=workers
    )
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    start = time.perf_counter()
    trainer.predict(module, return_predictions=False)
    wall = time.perf_counter() - start
    if len(module.gathered) != len(samples):
        raise RuntimeError(f"{len(module.gathered)} results for {len(samples)} samples")
    return wall


@contextlib.contextmanager
def no_slots() -> Iterator[None]:
    """Workers hand screenshots over as torch shared tensors, not through gge's slots (for comparison)."""
    before = os.environ.get("GGE_SHM_DIR")
    os.environ["GGE_SHM_DIR"] = ""
    try:
        yield
    finally:
        if before is None:
            del os.environ["GGE_SHM_DIR"]
        else:
            os.environ["GGE_SHM_DIR"] = before


def handover(workers: int) -> str:
    """How the workers hand screenshots to this process in this run."""
    if workers == 0:
        return "none (decoded in this process)"
    folder = SlotFolder.create()
    if folder is None:
        return f"torch's shared tensors (no slot folder at {shm_root()})"
    folder.close()
    return f"reusable shared-memory slots in {Path(folder.path).parent}"


def pil_loop(samples: Sequence[Sample]) -> float:
    """Decode every screenshot with PIL in this process, one after the other: wall seconds."""
    start = time.perf_counter()
    for s in samples:
        with Image.open(s.image_path) as im:
            im.convert("RGB").load()
    return time.perf_counter() - start


def decode_seconds(samples: Sequence[Sample]) -> float:
    """Median seconds gge's decode_image takes for one screenshot, in this process."""
    times = []
    for s in samples:
        start = time.perf_counter()
        decode_image(s)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# -- memory (child processes) ------------------------------------------------------------------------
def peak_rss_kib() -> int:
    """This process's peak RSS in KiB: ``VmHWM`` where Linux gives it, else ``ru_maxrss``.

    Linux keeps ``ru_maxrss`` across ``execve``, so a child started by a 700 MiB parent reports at least
    700 MiB from its first line; ``VmHWM`` belongs to the new address space and starts from zero.
    """
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def memory_child(folder: Path, n: int, batch_size: int, workers: int) -> None:
    """Run the zero-time pipeline over ``n`` samples and print peak RSS (KiB) as JSON.

    ``children_kib`` is ``RUSAGE_CHILDREN``'s ``ru_maxrss``: the peak of the largest worker (forked from
    this process, so it counts the pages it shares with it).
    """
    torch.set_num_threads(1)
    samples = folder_samples(folder, n)
    before = peak_rss_kib()
    wall, _ = run_pipeline(samples, SleepPolicy(0.0), batch_size, workers)
    own = peak_rss_kib()
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    record = {"n": n, "before_kib": before, "self_kib": own, "children_kib": children, "seconds": wall}
    print(json.dumps(record))


def measure_memory(folder: Path, n: int, batch_size: int, workers: int) -> dict[str, Any]:
    """Run :func:`memory_child` in a fresh interpreter."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-child", str(folder), str(n)]
    cmd += ["--batch-size", str(batch_size), "--workers", str(workers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child for {n} samples failed:\n{proc.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


# -- idle cost of the training callback --------------------------------------------------------------
class TinyModule(pl.LightningModule):
    """A linear layer on random tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(16, 1)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("val_loss", loss)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


def import_callback() -> tuple[type | None, str]:
    """GroundingEvalCallback and a note on where it came from (None and the reason when absent)."""
    try:
        from gge.callbacks import GroundingEvalCallback

        return GroundingEvalCallback, "gge.callbacks"
    except ImportError as e:
        reason = f"{type(e).__name__}: {e}"
    init = REPO / "callbacks" / "__init__.py"
    if not (REPO / "callbacks" / "grounding.py").is_file() or not init.is_file():
        return None, f"from gge.callbacks import GroundingEvalCallback failed ({reason})"
    # The package maps callbacks/ to gge.callbacks; an editable install made before that change does
    # not know it yet. Load the folder under that name, as the installed package would.
    spec = importlib.util.spec_from_file_location(
        "gge.callbacks", init, submodule_search_locations=[str(REPO / "callbacks")]
    )
    if spec is None or spec.loader is None:
        return None, f"cannot load {init} ({reason})"
    module = importlib.util.module_from_spec(spec)
    sys.modules["gge.callbacks"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules["gge.callbacks"]
        return None, f"loading {init} failed: {type(e).__name__}: {e}"
    return module.GroundingEvalCallback, "callbacks/ loaded as gge.callbacks (package not reinstalled)"


class EpochTimer(pl.Callback):
    """Wall seconds of each training epoch, from its start to its end (its validation included)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._start = 0.0

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._start = time.perf_counter()

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.seconds.append(time.perf_counter() - self._start)


def fit_seconds(callbacks: list[pl.Callback], steps: int, epochs: int, root: Path) -> tuple[float, float]:
    """Wall seconds of a small Trainer.fit (``steps`` batches over ``epochs`` epochs), and the median
    seconds of one of its epochs (what an epoch costs once the fit is set up)."""
    torch.manual_seed(0)
    per_epoch = max(1, steps // epochs)
    data = torch.utils.data.TensorDataset(torch.randn(per_epoch * 8, 16), torch.randn(per_epoch * 8, 1))
    train = torch.utils.data.DataLoader(data, batch_size=8)
    val = torch.utils.data.DataLoader(data, batch_size=8)
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=epochs,
        limit_val_batches=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_progress_bar=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
        callbacks=[*callbacks, timer := EpochTimer()],
        default_root_dir=str(root),
    )
    start = time.perf_counter()
    trainer.fit(TinyModule(), train, val)
    return time.perf_counter() - start, statistics.median(timer.seconds)


@dataclass
class CallbackCost:
    """Fit seconds per repeat (no callback, an empty ``pl.Callback``, GroundingEvalCallback)."""

    note: str
    runs: list[tuple[float, float, float]] = field(default_factory=list)
    epochs: list[tuple[float, float, float]] = field(default_factory=list)
    setup_s: float = math.nan


def callback_cost(root: Path, repeats: int, steps: int) -> CallbackCost:
    """Time small fits with and without the callback, in alternating order, after one warm-up of each.

    An empty ``pl.Callback`` runs too, as a control: Lightning calls every hook of every callback, so
    part of any callback's cost is Lightning's own. ``setup_s`` is the callback's ``setup`` alone (NaN
    when it cannot be called without a trainer).
    """
    cls, note = import_callback()
    if cls is None:
        return CallbackCost(note)
    demo = root / "demo"
    from gge.benchmarks.demo import write_demo_suite

    write_demo_suite(demo)
    epochs = 4

    def make() -> pl.Callback:
        cb: pl.Callback = cls(benchmarks=["screenspot_v2"], data_root=demo, every_n_epochs=1000)
        return cb

    try:
        make()
    except Exception as e:
        return CallbackCost(f"constructing GroundingEvalCallback failed: {type(e).__name__}: {e}")
    out = CallbackCost(note)
    kinds = ("none", "empty", "gge")
    for kind in kinds:  # warm-up
        fit_seconds(fit_callbacks(kind, make), steps, epochs, root)
    for i in range(repeats):
        seconds, epoch = {}, {}
        for kind in kinds if i % 2 == 0 else kinds[::-1]:
            seconds[kind], epoch[kind] = fit_seconds(fit_callbacks(kind, make), steps, epochs, root)
        out.runs.append((seconds["none"], seconds["empty"], seconds["gge"]))
        out.epochs.append((epoch["none"], epoch["empty"], epoch["gge"]))
    cb = make()
    start = time.perf_counter()
    with contextlib.suppress(Exception):
        cb.setup(cast(pl.Trainer, None), cast(pl.LightningModule, None), "fit")
        out.setup_s = time.perf_counter() - start
    return out


def fit_callbacks(kind: str, make: Callable[[], pl.Callback]) -> list[pl.Callback]:
    """The callbacks of one fit: none, an empty ``pl.Callback``, or a fresh GroundingEvalCallback."""
    if kind == "none":
        return []
    return [pl.Callback()] if kind == "empty" else [make()]


# -- main --------------------------------------------------------------------------------------------
def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and repeats (~45 s on 2 cores)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--overlap-samples", type=int, help="default 512 (quick: 256)")
    parser.add_argument("--throughput-samples", type=int, help="default 128 (quick: 64)")
    parser.add_argument(
        "--memory-samples", type=int, nargs=2, metavar=("FEW", "MANY"), help="200 2000 (quick: 32 160)"
    )
    parser.add_argument(
        "--overlap-t", type=float, help="the model's seconds per batch (default: 1.5 x decode time / workers)"
    )
    parser.add_argument("--fit-steps", type=int, default=400, help="training steps of the callback's fit")
    parser.add_argument(
        "--repeats", type=int, help="alternating repeats (default 3; quick: 1 for throughput)"
    )
    parser.add_argument("--memory-child", nargs=2, metavar=("FOLDER", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(Path(args.memory_child[0]), int(args.memory_child[1]), args.batch_size, args.workers)
        return
    quick = args.quick
    n_overlap = args.overlap_samples or (256 if quick else 512)
    n_through = args.throughput_samples or (64 if quick else 128)
    few, many = args.memory_samples or ((32, 160) if quick else (200, 2000))
    repeats = args.repeats or (1 if quick else 3)
    bs, workers = args.batch_size, args.workers
    torch.set_num_threads(1)
    rows: list[tuple[str, str, str, str]] = []
    notes: list[str] = []
    t_all = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="gge_bench_") as tmp:
        root = Path(tmp)
        sources = write_screenshots(root / "sources", 4)
        size_mb = sum(p.stat().st_size for p in sources) / len(sources) / 1e6
        samples = link_samples(sources, root / "shots", max(n_overlap, n_through, many))
        print(
            f"screenshots: {len(sources)} distinct {SIZE[0]}x{SIZE[1]} PNGs, {size_mb:.2f} MB each on average"
        )
        print(f"{workers} workers, batch {bs}, torch threads 1, {os.cpu_count()} CPUs\n")

        # 1. overlap
        decode_s = decode_seconds(samples[: 2 * len(sources)])
        batch_decode = bs * decode_s
        t = args.overlap_t or 1.5 * batch_decode / max(1, workers)
        t_rule = (
            f"{t * 1e3:.0f} ms (--overlap-t)"
            if args.overlap_t
            else (f"1.5 x {batch_decode * 1e3:.0f} ms / {workers} workers = {t * 1e3:.0f} ms")
        )
        n_batches = -(-n_overlap // bs)
        ideal = n_batches * t
        policy = SleepPolicy(t)
        wall, first = run_pipeline(samples[:n_overlap], policy, bs, workers)
        overlap = wall / ideal
        print(f"overlap: decode_image {decode_s * 1e3:.1f} ms/screenshot, {batch_decode * 1e3:.0f} ms/batch")
        print(
            f"  t = {t_rule} per batch; "
            f"{n_overlap} samples = {n_batches} batches, ideal {ideal:.2f} s, wall {wall:.2f} s"
        )
        print(
            f"  first batch after {first:.2f} s (worker start-up + one batch decoded and sent, never hidden);"
            f" after it: (wall - first) / ideal = {(wall - first) / ideal:.3f}"
        )
        name = f"overlap: wall / ideal ({n_batches} batches x t)"
        rows.append((name, f"{overlap:.3f}", "<= 1.10", verdict(overlap <= 1.10)))
        steady = (wall - first) / ideal
        name = "overlap: steady state, (wall - first batch) / ideal"
        rows.append((name, f"{steady:.3f}", "<= 1.10", verdict(steady <= 1.10)))

        # 2. throughput (alternating repeats, fastest of each)
        sub = samples[:n_through]
        pil_loop(sub)  # page cache warm
        pil_t, pipe_t, light_t, plain_t = [], [], [], []
        run_lightning(sub[: 2 * bs], bs, workers)  # first-use costs of Lightning
        for _ in range(repeats):
            pil_t.append(pil_loop(sub))
            pipe_t.append(run_pipeline(sub, SleepPolicy(0.0), bs, workers)[0])
            light_t.append(run_lightning(sub, bs, workers))
            with no_slots():
                plain_t.append(run_pipeline(sub, SleepPolicy(0.0), bs, workers)[0])
        pil_rate, pipe_rate, light_rate, plain_rate = (
            n_through / min(ts) for ts in (pil_t, pipe_t, light_t, plain_t)
        )
        print(
            f"\nthroughput over {n_through} samples (fastest of {repeats}):"
            f" PIL loop {pil_rate:.1f} samples/s, pipeline {pipe_rate:.1f} samples/s,"
            f" Lightning predict {light_rate:.1f} samples/s"
        )
        print(
            f"  handover: {handover(workers)}; with slots off (GGE_SHM_DIR=, torch's shared tensors)"
            f" the pipeline delivers {plain_rate:.1f} samples/s (slots: {pipe_rate / plain_rate:.2f}x that)"
        )
        r_pipe, r_light = pipe_rate / pil_rate, light_rate / pil_rate
        print(
            f"  (the overlap above needs the pipeline to deliver >= batch / t = {bs / t:.1f} samples/s"
            f" while the model waits; with a zero-time model it delivers {pipe_rate:.1f})"
        )
        rows.append(("throughput: pipeline / PIL loop", f"{r_pipe:.3f}", ">= 0.8", verdict(r_pipe >= 0.8)))
        rows.append(
            ("throughput: Lightning predict / PIL loop", f"{r_light:.3f}", ">= 0.8", verdict(r_light >= 0.8))
        )

        # 3. memory
        mem_few = measure_memory(root / "shots", few, bs, workers)
        mem_many = measure_memory(root / "shots", many, bs, workers)
        peak_few = mem_few["self_kib"] + mem_few["children_kib"]
        peak_many = mem_many["self_kib"] + mem_many["children_kib"]
        print("\nmemory (peak RSS of the main process + of its largest worker; separate processes):")
        for m in (mem_few, mem_many):
            print(
                f"  {m['n']:5d} samples: {m['self_kib'] / 1024:.0f} MiB + {m['children_kib'] / 1024:.0f} MiB"
                f" (main process after imports: {m['before_kib'] / 1024:.0f} MiB;"
                f" {m['n'] / m['seconds']:.1f} samples/s)"
            )
        r_mem = peak_many / peak_few
        grow_few, grow_many = (m["self_kib"] - m["before_kib"] for m in (mem_few, mem_many))
        batch_mib = bs * SIZE[0] * SIZE[1] * 3 / 2**20
        print(
            f"  main process grew by {grow_few / 1024:.0f} MiB, {grow_many / 1024:.0f} MiB during the runs"
            f" (one batch of decoded screenshots is {batch_mib:.0f} MiB)"
        )
        rows.append(
            (f"memory: peak RSS {many} / {few} samples", f"{r_mem:.3f}", "<= 1.2", verdict(r_mem <= 1.2))
        )

        # 4. idle callback
        cost = callback_cost(root, args.repeats or 3, args.fit_steps)
        if cost.runs:
            ratios = [gge / none for none, _, gge in cost.runs]
            r_cb = statistics.median(ratios)
            r_empty = statistics.median(empty / none for none, empty, _ in cost.runs)
            print(f"\nidle callback ({cost.note}): {args.fit_steps} steps, 4 epochs, every_n_epochs=1000")
            for none, empty, gge in cost.runs:
                print(
                    f"  no callback {none * 1e3:.0f} ms, empty pl.Callback {empty * 1e3:.0f} ms,"
                    f" GroundingEvalCallback {gge * 1e3:.0f} ms: {gge / none:.3f}"
                )
            extra = statistics.median(gge - none for none, _, gge in cost.runs)
            print(
                f"  median extra {extra * 1e3:.1f} ms per fit (an empty pl.Callback: ratio {r_empty:.3f});"
                f" the callback's setup() alone (reads the benchmark): {cost.setup_s * 1e3:.1f} ms"
            )
            r_epoch = statistics.median(gge / none for none, _, gge in cost.epochs)
            for none, empty, gge in cost.epochs:
                print(
                    f"  one epoch: no callback {none * 1e3:.1f} ms, empty pl.Callback {empty * 1e3:.1f} ms,"
                    f" GroundingEvalCallback {gge * 1e3:.1f} ms: {gge / none:.3f}"
                )
            # The target is per epoch (the issue: "adds nothing to a training epoch in which it does not
            # run"); the whole fit also pays the callback's one-off setup (reading the benchmark, so
            # that a wrong path fails at the start of training rather than at the first evaluation).
            name = f"callback idle: epoch with / without (median of {len(cost.epochs)})"
            rows.append((name, f"{r_epoch:.3f}", "<= 1.05", verdict(r_epoch <= 1.05)))
            name = f"callback idle: whole fit, one-off setup included (median of {len(cost.runs)})"
            rows.append((name, f"{r_cb:.3f}", "", "info"))
        else:
            notes.append(f"callback idle cost skipped: {cost.note}")
            rows.append(("callback idle: fit with / without", "skipped", "<= 1.05", "skipped"))

    print(f"\ntotal {time.perf_counter() - t_all:.0f} s\n")
    for n in notes:
        print(n)
    width = max(len(r[0]) for r in rows)
    print(f"| {'measure':{width}} | value   | target  | ok     |")
    print(f"|{'-' * (width + 2)}|---------|---------|--------|")
    for name, value, target, ok in rows:
        print(f"| {name:{width}} | {value:7} | {target:7} | {ok:6} |")


if __name__ == "__main__":
    main()
