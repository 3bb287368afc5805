"""Rules an outside audit found untested (issue 13): each test here fails on a one-line mutation.

Unparsed sampled answers never hit a refusal target; the callback's stratified subset follows its
seed and the official table's cells; replay under ``max_samples``; two benchmarks sharing ids in
one run; ``merge_results`` with conflicting duplicates; padding through the callback; and the height
branch of ``smart_resize`` under ``max_pixels``.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import pytorch_lightning as pl
import torch
from gge.callbacks import GroundingEvalCallback
from torch.utils.data import DataLoader, TensorDataset

from gge.benchmarks import get_benchmark
from gge.benchmarks.sampling import stratified_subset
from gge.geometry import smart_resize
from gge.models.base import Generation, GenerationRequest
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.run.evaluate import evaluate_samples, merge_results
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import SampleResult
from gge.types import Absent, Candidate, Prediction, Sample


def _load(demo: Path, name: str) -> list[Sample]:
    bench = get_benchmark(name)
    return bench.load(demo / bench.directory, bench.options_type()).samples


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _cli(
    demo: Path, predictions: Path, out: Path, *extra: str, buf: io.StringIO | None = None
) -> dict[str, Any]:
    args = [f"data_root={demo}", f"model.predictions={predictions}", f"output_dir={out}", *extra]
    return run(parse_args(args), out=buf if buf is not None else io.StringIO())


# -- 1. an unparsed answer never hits a refusal target ------------------------------------------


def _slot_hits(sample: Sample, slot: Any) -> bool:
    """The replay file's slot against the sample, by the README's rules (written out here)."""
    if slot == "unparsed":
        return False
    if slot is None or (slot[0] < 0 and slot[1] < 0):
        return isinstance(sample.region, Absent)
    return sample.region.contains(float(slot[0]), float(slot[1]))


def test_unparsed_slots_on_refusals_do_not_raise_oracle_end_to_end(demo_suite: Path, tmp_path: Path) -> None:
    samples = _load(demo_suite, "osworld_g")
    refusals = [s.id for s in samples if isinstance(s.region, Absent)]
    assert len(refusals) >= 2
    by_id = {r["id"]: r for r in _lines(demo_suite / "predictions.jsonl") if r["benchmark"] == "osworld_g"}
    # every refusal answered by garbage only, except one whose abstention comes third
    for sid in refusals:
        by_id[sid] = {
            "benchmark": "osworld_g",
            "id": sid,
            "candidates": ["unparsed"] * 5,
            "scores": [0.9, 0.8, 0.7, 0.6, 0.5],
        }
    by_id[refusals[-1]]["candidates"] = ["unparsed", "unparsed", None, "unparsed", "unparsed"]
    path = _write(tmp_path / "p.jsonl", list(by_id.values()))
    doc = _cli(demo_suite, path, tmp_path / "o", "benchmarks=[osworld_g]")
    e = doc["benchmarks"]["osworld_g"]

    n = len(samples)
    for j in range(1, 6):
        hits = sum(any(_slot_hits(s, c) for c in by_id[s.id]["candidates"][:j]) for s in samples)
        assert e[f"oracle@{j}"] == pytest.approx(100 * hits / n), j
    refusal = e["breakdown"]["category"]["refusal"]
    assert refusal["samples"] == len(refusals)
    assert refusal["oracle@5"] == pytest.approx(100 / len(refusals))  # the one real abstention
    assert refusal["top1"] == 0.0  # the critic picks the first (unparsed) slot everywhere
    assert e["unparsed_candidates"] == 5 * len(refusals) - 1


class _Garbage:
    """A sampling backend whose every sampled text is unparseable."""

    TEXTS = ("I am not sure", "lorem ipsum", "((", "the button", "?")

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        return width, height

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        return [Generation([self.TEXTS[i % 5] for i in range(r.num_sequences)]) for r in requests]

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        return [0.5] * len(requests)

    def settings(self) -> dict[str, Any]:
        return {"backend": "garbage"}


def test_sampling_proposer_garbage_on_refusals_scores_zero(demo_suite: Path) -> None:
    bench = get_benchmark("osworld_g")
    refusals = [s for s in _load(demo_suite, "osworld_g") if isinstance(s.region, Absent)]
    settings = AdapterSettings(convention="abs_original", proposer="sampling", critic="none", k=5)
    results = evaluate_samples(GroundingPolicy(_Garbage(), settings), refusals, k=5)
    assert all(len(r.candidates) == 5 and not any(c.parsed for c in r.candidates) for r in results)
    e = benchmark_metrics(bench, results, k=5, strategy="critic")
    assert e["samples"] == len(refusals)
    assert e["oracle@5"] == 0.0 and e["top1"] == 0.0 and e["official"]["oracle@5"] == 0.0
    assert all(v == 0.0 for v in e["selection"].values())
    assert e["format_errors"] == len(refusals) and e["abstentions"] == 0
    assert e["unparsed_candidates"] == 5 * len(refusals)


# -- 4. the callback's fixed subset ---------------------------------------------------------------


TABLE_CELLS = {  # the first official table of each benchmark: rows, columns
    "screenspot_v2": ("split", "data_type"),
    "screenspot_pro": ("group", "ui_type"),
    "mmbench_gui": ("platform", "grounding_type"),
    "osworld_g": ("category",),
}


def _cell(sample: Sample, keys: Sequence[str]) -> tuple[str, ...]:
    out = []
    for key in keys:
        value = sample.labels[key]
        out.append(value if isinstance(value, str) else value[0])  # multi-label: its first value
    return tuple(out)


def _callback_subset(demo: Path, n: int, seed: int) -> dict[str, list[str]]:
    cb = GroundingEvalCallback(
        benchmarks=list(TABLE_CELLS), data_root=demo, max_samples_per_benchmark=n, seed=seed
    )
    cb.setup(None, None, "validate")  # type: ignore[arg-type]  # setup reads only the files
    chosen = cb._select()
    assert cb.sample_ids == {name: [s.id for s in chosen[name]] for name in TABLE_CELLS}
    return cb.sample_ids


def test_callback_subset_follows_the_seed_and_the_table_cells(demo_suite: Path) -> None:
    n = 12
    a, b = _callback_subset(demo_suite, n, 0), _callback_subset(demo_suite, n, 1)
    for name, keys in TABLE_CELLS.items():
        samples = {s.id: s for s in _load(demo_suite, name)}
        assert len(a[name]) == len(b[name]) == n
        assert a[name] != b[name], name  # another seed, another draw
        expected = Counter(_cell(s, keys) for s in stratified_subset(list(samples.values()), n, keys, seed=5))
        for ids in (a[name], b[name]):
            assert Counter(_cell(samples[i], keys) for i in ids) == expected, name


# -- 5. replay under max_samples -----------------------------------------------------------------


def test_replay_under_max_samples_reports_only_the_evaluated_samples(
    demo_suite: Path, tmp_path: Path
) -> None:
    m = 5
    names = ("screenspot_v2", "osworld_g")
    src = _lines(demo_suite / "predictions.jsonl")
    firsts = {name: [s.id for s in _load(demo_suite, name)] for name in names}
    # drop one evaluated sample's line and one beyond max_samples, per benchmark
    dropped = {(name, firsts[name][1]) for name in names} | {(name, firsts[name][m + 2]) for name in names}
    kept = [r for r in src if (r["benchmark"], r["id"]) not in dropped]
    buf = io.StringIO()
    doc = _cli(
        demo_suite,
        _write(tmp_path / "p.jsonl", kept),
        tmp_path / "o",
        f"benchmarks=[{','.join(names)}]",
        f"max_samples={m}",
        buf=buf,
    )
    text = buf.getvalue()
    assert "match no sample" not in text
    for name in names:
        e = doc["benchmarks"][name]
        assert e["samples"] == m
        assert e["unmatched_predictions"] == []
        assert e["missing_predictions"] == 1
        assert f"warning: {name}: 1 samples have no prediction" in text


# -- 6. two benchmarks sharing ids ----------------------------------------------------------------


def test_osworld_g_and_refined_with_shared_ids_keep_their_own_numbers(
    demo_suite: Path, tmp_path: Path
) -> None:
    plain = [r for r in _lines(demo_suite / "predictions.jsonl") if r["benchmark"] == "osworld_g"]
    refined = []
    for s in _load(demo_suite, "osworld_g_refined"):  # a near-perfect model on the refined variant
        box = s.region.pixel_box()
        centre = None if box is None else [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]
        refined.append({"benchmark": "osworld_g_refined", "id": s.id, "candidates": [centre]})
    assert {r["id"] for r in plain} == {r["id"] for r in refined}
    path = _write(tmp_path / "p.jsonl", plain + refined)
    both = _cli(demo_suite, path, tmp_path / "both", "benchmarks=[osworld_g,osworld_g_refined]")
    for name in ("osworld_g", "osworld_g_refined"):
        alone = _cli(demo_suite, path, tmp_path / name, f"benchmarks=[{name}]")
        assert both["benchmarks"][name] == alone["benchmarks"][name], name
    buf = io.StringIO()  # a rerun into the same folder restores both from the log, apart
    again = _cli(demo_suite, path, tmp_path / "both", "benchmarks=[osworld_g,osworld_g_refined]", buf=buf)
    assert f"resuming: {2 * len(plain)} samples already finished" in buf.getvalue()
    assert again["benchmarks"] == both["benchmarks"]
    g, r = both["benchmarks"]["osworld_g"], both["benchmarks"]["osworld_g_refined"]
    assert r["top1"] == 100.0 > g["top1"]  # the two really differ
    recs = _lines(tmp_path / "both" / "predictions.jsonl")
    assert Counter(x["benchmark"] for x in recs) == {
        "osworld_g": len(plain),
        "osworld_g_refined": len(refined),
    }


def _result(bench: str, sid: str, hit: bool) -> SampleResult:
    c = Candidate((1.0, 1.0))
    return SampleResult(bench, sid, {}, 1, (c,), (hit,), {"critic": c}, {"critic": hit})


def test_merge_results_first_occurrence_wins_per_benchmark_and_id() -> None:
    order = [Sample(b, i, "/x.png", (9, 9), "x", Absent()) for b in ("a", "b") for i in ("0", "1")]
    first = [_result("a", "0", True), _result("b", "0", False)]
    later = [
        _result("a", "0", False),
        _result("b", "0", True),
        _result("a", "1", True),
        _result("c", "0", True),
    ]
    merged = merge_results([first, later, [_result("a", "1", False)]], order)
    assert [(r.benchmark, r.id, r.hits[0]) for r in merged] == [
        ("a", "0", True),  # first part wins over the later conflicting one
        ("a", "1", True),  # first occurrence, not the last
        ("b", "0", False),  # same id, other benchmark: its own result
    ]  # ("b", "1") has no result; ("c", "0") is not in order


# -- 7. padding through the callback --------------------------------------------------------------


class _Counting(pl.LightningModule):
    """Clicks each target's centre; appends each predict call's size to a file per rank."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.folder = folder

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        return (self.w**2).sum()

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        pass

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1)

    def val_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1)

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        with (self.folder / f"calls.{self.global_rank}").open("a") as f:
            f.write(" ".join(s.id for s in samples) + "\n")
        out = []
        for s in samples:  # a hit first for two samples in three, second otherwise
            box = s.region.pixel_box()
            hit = None if box is None else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            miss = (0.5, 0.5) if box is None else None
            pts = (hit, miss) if int(s.id.rsplit("_", 1)[-1]) % 3 else (miss, hit)
            out.append(Prediction(s.benchmark, s.id, tuple(Candidate(p) for p in pts)))
        return out


def _fit(folder: Path, demo: Path, devices: int, pad: bool | None) -> dict[str, float]:
    folder.mkdir(parents=True)
    cb = GroundingEvalCallback(
        benchmarks=["screenspot_v2"],
        data_root=demo,
        max_samples_per_benchmark=5,
        batch_size=2,
        pad_batches=pad,
    )
    trainer = pl.Trainer(
        default_root_dir=str(folder),
        accelerator="cpu",
        devices=devices,
        strategy="ddp_fork" if devices > 1 else "auto",
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[cb],
    )
    trainer.fit(_Counting(folder))
    return {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("grounding/")}


def test_callback_pad_batches_equals_no_padding(demo_suite: Path, tmp_path: Path) -> None:
    single = _fit(tmp_path / "one", demo_suite, 1, None)
    padded = _fit(tmp_path / "pad", demo_suite, 2, True)
    assert single and padded == single
    calls = {
        r: [line.split() for line in (tmp_path / "pad" / f"calls.{r}").read_text().splitlines()]
        for r in (0, 1)
    }
    # 5 samples, batches of 2: rank 0 has 3 (2 batches), rank 1 has 2 (1 batch), padded to 2
    assert [len(c) for c in calls[0]] == [2, 1] and [len(c) for c in calls[1]] == [2, 1]
    assert calls[1][1] == calls[1][0][:1]  # the padding item repeats the rank's first sample
    real = [i for c in calls[0] for i in c] + [i for c in calls[1][:1] for i in c]
    assert len(real) == len(set(real)) == 5
    assert 0 < single["grounding/screenspot_v2/top1"] < 100  # the numbers can tell a wrong merge


# -- 8. smart_resize, height branch under max_pixels ----------------------------------------------


def test_smart_resize_tall_image_floors_the_height_under_max_pixels() -> None:
    # 1000 x 3000 (w x h), factor 28, max 1_000_000 pixels. Rounded: h = 107 * 28 = 2996,
    # w = 36 * 28 = 1008; 2996 * 1008 = 3_019_968 > 1_000_000, so both sides are scaled by
    # beta = sqrt(3000 * 1000 / 1_000_000) = sqrt(3) = 1.7320508...
    # h: 3000 / 1.7320508 = 1732.05; / 28 = 61.86 -> floor 61 -> 1708 (rounding would give 1736)
    # w: 1000 / 1.7320508 = 577.35; / 28 = 20.62 -> floor 20 -> 560
    assert smart_resize(3000, 1000, factor=28, max_pixels=1_000_000) == (1708, 560)
    assert 1708 * 560 <= 1_000_000
    # the same image lying on its side: the branches swap roles
    assert smart_resize(1000, 3000, factor=28, max_pixels=1_000_000) == (560, 1708)
    # factor 32: h 3000 / 1.7320508 / 32 = 54.13 -> 54 * 32 = 1728; w 577.35 / 32 = 18.04 -> 576
    assert smart_resize(3000, 1000, factor=32, max_pixels=1_000_000) == (1728, 576)
