"""verl / EasyR1: export, reward and summary reproduce ``eval.py`` on the same answers.

The answers are the demo suite's replay candidates written as the preset's text answers (points in the
frame the model sees, rounded as a model writes them); ``eval.py model=replay`` scores the same points
in original pixels. The trainers' side is checked against their documented contract (their source,
cited in docs/verl.md) in-process, and through the real verl package in a subprocess
when ``GGE_VERL_PYTHON`` names a Python that has verl installed (gge is put on its path).
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import re
import subprocess
import sys
import types
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT
from PIL import Image

from gge.benchmarks import get_benchmark
from gge.errors import GgeError
from gge.geometry import from_original, smart_resize, to_original
from gge.integrations.verl import (
    EASYR1_MAX_PIXELS,
    GroundTruth,
    compute_score,
    compute_score_batch,
    easyr1_seen_size,
    export_main,
    export_verl,
    read_dump,
    read_ground_truth,
    region_from_json,
    region_to_json,
    summarize_main,
    summarize_verl,
    verl_seen_size,
)
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.analysis import pass_at_k
from gge.types import Absent, Box, Polygon

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

BENCH = ["screenspot_v2", "osworld_g", "ui_vision"]
N_PER = 18
K = 5
REFUSAL = "The element is not visible on the screen."
GARBLED = "I cannot tell where that is."


# ----------------------------------------------------------------------------------------- helpers


def rows_of(files: list[Path]) -> list[dict[str, Any]]:
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def image_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as im:
        return im.size


def verl_messages(prompt: list[dict[str, str]], sizes: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """verl's RLHFDataset._build_messages (rl_dataset.py), image parts shown as eval shows them."""
    out, it = [], iter(sizes)
    for m in prompt:
        parts: list[dict[str, Any]] = []
        for seg in [s for s in re.split("(<image>|<video>)", m["content"]) if s != ""]:
            if seg == "<image>":
                w, h = next(it)
                parts.append({"type": "image", "width": w, "height": h})
            else:
                parts.append({"type": "text", "text": seg})
        out.append({"role": m["role"], "content": parts})
    return out


def answer_text(preset: str, x: int, y: int) -> str:
    """A model's answer in the preset's own format."""
    if preset == "qwen2_5_vl":  # the computer_use tool call (the prefill is not sent: the whole call)
        args = {"action": "left_click", "coordinate": [x, y]}
        return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": args}) + "\n</tool_call>"
    return f"({x}, {y})"


def micro(entry: dict[str, Any]) -> dict[str, Any]:
    """A benchmark entry's micro means: ``entry["micro"]``, or the entry of a results.json before it
    (whose unqualified ``top1`` / ``oracle@K`` were the micro means)."""
    found: dict[str, Any] = entry.get("micro", entry)
    return found


def eval_run(args: list[str]) -> dict[str, Any]:
    return run(parse_args(args), out=io.StringIO())


# ---------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def world(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An export, the texts answering each row, and eval's run on the same answers."""
    tmp = tmp_path_factory.mktemp("verl")
    files = export_verl(BENCH, demo_suite, tmp / "export", model="qwen2_5_vl", max_samples=N_PER)
    rows = rows_of(files)
    replay = {}
    for line in (demo_suite / "predictions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        replay[(rec["benchmark"], rec["id"])] = rec["candidates"]
    texts: list[list[str]] = []
    lines = []
    for row in rows:
        gt = read_ground_truth(row["reward_model"]["ground_truth"])
        mine, points = [], []
        for c in replay[(gt.benchmark, gt.id)][:K]:
            if c is None:
                mine.append(REFUSAL)
                points.append(None)
            elif c == "unparsed":
                mine.append(GARBLED)
                points.append("unparsed")
            else:
                mx, my = (round(v) for v in from_original(c[0], c[1], gt.convention, gt.image_size, gt.frame))
                mine.append(answer_text("qwen2_5_vl", mx, my))
                ox, oy = to_original(mx, my, gt.convention, gt.image_size, gt.frame)
                points.append(None if ox < 0 and oy < 0 else [ox, oy])
        texts.append(mine)
        lines.append(json.dumps({"benchmark": gt.benchmark, "id": gt.id, "candidates": points}))
    predictions = tmp / "answers.jsonl"
    predictions.write_text("\n".join(lines) + "\n")
    out = tmp / "eval"
    doc = eval_run(
        [
            "model=replay",
            f"model.predictions={predictions}",
            f"data_root={demo_suite}",
            f"benchmarks=[{','.join(BENCH)}]",
            f"max_samples={N_PER}",
            "selection=first",
            f"k={K}",
            "report_misses=0",
            f"output_dir={out}",
        ]
    )
    hits = {}
    for line in (out / "predictions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        hits[(rec["benchmark"], rec["id"])] = rec["hits"]
    return {"tmp": tmp, "files": files, "rows": rows, "texts": texts, "doc": doc, "hits": hits}


# ------------------------------------------------------------------------------------------ export


def test_regions_round_trip_as_plain_json() -> None:
    for region in (
        Box(1.5, 2, 30, 40.25),
        Box(0.1, 0.2, 0.3, 0.4, "normalized", (1920, 1080)),
        Box(5, 5, 1, 1),  # inverted: kept, hits nothing
        Polygon(((0, 0), (10, 0), (10, 10), (0, 10))),
        Absent(),
        Absent(abstention_hits=False),  # OSWorld-G refusals=miss
    ):
        back = region_from_json(json.loads(json.dumps(region_to_json(region))))
        assert back == region
    assert region_to_json(Absent()) == {"type": "refusal"}  # the official rule writes what it always did
    with pytest.raises(GgeError, match="abstention_hits must be true or false"):
        region_from_json({"type": "refusal", "abstention_hits": "no"})


def test_a_refusal_counted_as_a_miss_is_not_rewarded_for_abstaining() -> None:
    from gge.integrations.verl import compute_score_batch
    from gge.integrations.verl.ground_truth import GroundTruth

    sizes = ((800, 600), (800, 600), (812, 588), (812, 588))
    rewards = []
    for region in (Absent(), Absent(abstention_hits=False)):
        gt = GroundTruth("osworld_g", "3", region, *sizes)
        item = {"response": REFUSAL, "ground_truth": gt.to_json()}
        rewards.append(compute_score_batch([item])[0]["overall"])
    assert rewards == [1.0, 0.0]
    with pytest.raises(GgeError, match="unknown type"):
        region_from_json({"type": "circle"})


def test_parquet_schema_and_ground_truth(world: dict[str, Any], demo_suite: Path) -> None:
    files = world["files"]
    assert [f.name for f in files] == [f"{b}.parquet" for b in BENCH]
    schemas = {str(pq.read_schema(f)) for f in files}
    assert len(schemas) == 1  # verl concatenates the files: one schema
    table = pq.read_table(files[1])
    assert table.column_names == ["data_source", "prompt", "images", "ability", "reward_model", "extra_info"]
    samples = {
        s.id: s
        for s in get_benchmark("osworld_g")
        .load(demo_suite / "osworld_g", get_benchmark("osworld_g").options_type())
        .samples
    }
    kinds = set()
    for i, row in enumerate(table.to_pylist()):
        assert row["data_source"] == "gge/osworld_g" and row["ability"] == "gui_grounding"
        assert row["reward_model"]["style"] == "rule"
        gt = read_ground_truth(row["reward_model"]["ground_truth"])
        sample = samples[gt.id]
        assert (
            gt.region == sample.region and gt.labels == sample.labels and gt.image_size == sample.image_size
        )
        kinds.add(gt.region.kind)
        extra = row["extra_info"]
        assert extra["index"] == i and extra["sample_id"] == gt.id and extra["benchmark"] == "osworld_g"
        assert extra["prefill_dropped"].startswith("<tool_call>")
        (image,) = row["images"]
        assert image_size(image["bytes"]) == gt.exported_size == gt.seen_size == tuple(extra["seen_size"])
        # verl's qwen_vl_utils resize with the limits in the image dict leaves the image as it is
        assert (
            verl_seen_size(
                gt.exported_size, factor=28, min_pixels=image["min_pixels"], max_pixels=image["max_pixels"]
            )
            == gt.seen_size
        )
        assert gt.convention == "abs_resized" and gt.preset == "qwen2_5_vl"
    assert kinds == {"bbox", "polygon", "refusal"}
    manifest = json.loads((world["tmp"] / "export" / "manifest.json").read_text())
    assert manifest["samples"] == {b: N_PER for b in BENCH} and manifest["flavor"] == "verl"
    assert "prefill" in manifest["request_changed"]
    assert any(o.startswith("custom_reward_function.path=") for o in manifest["trainer_options"])


def test_datasets_reads_the_files_as_verl_and_easyr1_do(world: dict[str, Any], tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    # verl: load_dataset("parquet", data_files=...) per file, then concatenate_datasets
    parts = [
        datasets.load_dataset("parquet", data_files=str(f), cache_dir=str(tmp_path))["train"]
        for f in world["files"]
    ]
    ds = datasets.concatenate_datasets(parts)
    row = ds[0]
    assert isinstance(row["images"][0], dict) and isinstance(row["images"][0]["bytes"], bytes)
    assert isinstance(row["prompt"], list) and row["prompt"][1]["content"].startswith("<image>")
    assert len(ds) == len(BENCH) * N_PER
    # EasyR1: data.val_files=<export>/data (a folder, split "train")
    folder = datasets.load_dataset(
        "parquet", data_dir=str(world["files"][0].parent), split="train", cache_dir=str(tmp_path)
    )
    assert len(folder) == len(BENCH) * N_PER


@pytest.mark.parametrize("preset", ["qwen2_5_vl", "ui_tars_1_5", "qwen3_vl"])
def test_exported_prompt_is_evals_request(preset: str, demo_suite: Path, tmp_path: Path) -> None:
    benches = ["screenspot_pro", "osworld_g"]
    files = export_verl(benches, demo_suite, tmp_path / "x", model=preset, max_samples=3)
    eval_run(
        [
            f"model={preset}",
            "ckpt=/nowhere",
            "dry_run=true",
            f"data_root={demo_suite}",
            f"output_dir={tmp_path / 'dry'}",
            f"benchmarks=[{','.join(benches)}]",
            "max_samples=3",
        ]
    )
    requests = [json.loads(x) for x in (tmp_path / "dry" / "requests.jsonl").read_text().splitlines()]
    rows = rows_of(files)
    assert len(rows) == len(requests) == 6
    for row, req in zip(rows, requests, strict=True):
        gt = read_ground_truth(row["reward_model"]["ground_truth"])
        assert (gt.benchmark, gt.id) == (req["benchmark"], req["id"])
        sizes = [image_size(im["bytes"]) for im in row["images"]]
        assert sizes == [tuple(req["image_size"])] == [gt.seen_size]
        assert verl_messages(row["prompt"], sizes) == req["messages"]
        assert row["extra_info"]["prefill_dropped"] == req["prefill"]


# ------------------------------------------------------------------------------------------ reward


def test_compute_score_reproduces_eval(world: dict[str, Any]) -> None:
    """One response per prompt: verl's per-data_source mean is eval's Top-1; n = K responses: Oracle@K."""
    first: dict[str, list[float]] = defaultdict(list)
    best: dict[str, list[float]] = defaultdict(list)
    for row, texts in zip(world["rows"], world["texts"], strict=True):
        source, gt_text = row["data_source"], row["reward_model"]["ground_truth"]
        gt = read_ground_truth(gt_text)
        scores = [compute_score(source, t, gt_text, row["extra_info"]) for t in texts]
        assert all(set(s) == {"score", "acc", "hit", "oracle", "format_error", "abstained"} for s in scores)
        # per candidate, the same hit as eval's official scoring of the same point
        assert [s["hit"] == 1.0 for s in scores] == world["hits"][(gt.benchmark, gt.id)]
        first[source].append(scores[0]["score"])
        best[source].append(max(s["score"] for s in scores))
    for name in BENCH:
        entry = world["doc"]["benchmarks"][name]
        n = entry["samples"]
        assert sum(first[f"gge/{name}"]) == pytest.approx(micro(entry)["top1"] * n / 100)
        assert 100 * sum(best[f"gge/{name}"]) / n == pytest.approx(micro(entry)[f"oracle@{K}"])
    assert world["doc"]["benchmarks"]["osworld_g"]["abstentions"] > 0  # refusals are scored too


def test_easyr1_batch_reward_and_per_benchmark_keys(world: dict[str, Any]) -> None:
    rows, texts = world["rows"], world["texts"]
    inputs = [
        {"response": t[0], "response_length": 9, "ground_truth": r["reward_model"]["ground_truth"]}
        for r, t in zip(rows, texts, strict=True)
    ]
    out = compute_score_batch(inputs)
    by_key: dict[str, list[float]] = defaultdict(list)
    for item in out:  # EasyR1's reduce_metrics: the mean of each key over the responses that have it
        for key, value in item.items():
            by_key[key].append(value)
    for name in BENCH:
        entry = world["doc"]["benchmarks"][name]
        assert 100 * sum(by_key[f"{name}/accuracy"]) / entry["samples"] == pytest.approx(micro(entry)["top1"])
    # per response, eval's official scoring of the same first point (not the reward code again)
    first_hits = [
        world["hits"][(gt.benchmark, gt.id)][0]
        for gt in (read_ground_truth(r["reward_model"]["ground_truth"]) for r in rows)
    ]
    assert [o["overall"] for o in out] == [o["accuracy"] for o in out] == [float(h) for h in first_hits]
    assert [o["format"] for o in out] == [float(t[0] != GARBLED) for t in texts]
    # EasyR1's format key: 1.0 when the answer reads (a refusal reads), 0.0 when nothing can be read
    gt_text = rows[0]["reward_model"]["ground_truth"]
    odd = compute_score_batch(
        [{"response": r, "ground_truth": gt_text} for r in (GARBLED, REFUSAL, texts[0][0])]
    )
    assert [o["format"] for o in odd] == [0.0, 1.0, 1.0] and odd[0]["format_error"] == 1.0


def hide_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if verl were not installed (``import verl.utils.reward_score`` fails)."""
    monkeypatch.setitem(sys.modules, "verl.utils.reward_score", None)


def test_reward_errors_say_what_is_wrong(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gt_text = world["rows"][0]["reward_model"]["ground_truth"]
    hide_verl(monkeypatch)
    with pytest.raises(GgeError, match=r"not a gge benchmark, and no reward can score it.*fallback="):
        compute_score("openai/gsm8k", "72", "72")
    with pytest.raises(GgeError, match=r"must be a JSON object \(got int\): score only rows written by"):
        compute_score("gge/screenspot_v2", "(1, 2)", "72")
    with pytest.raises(GgeError, match="not JSON"):
        compute_score("gge/screenspot_v2", "(1, 2)", "{oops")
    with pytest.raises(GgeError, match="does not match"):
        compute_score("gge/osworld_g", "(1, 2)", gt_text)
    with pytest.raises(GgeError, match=r"not a gge ground truth"):
        compute_score("gge/screenspot_v2", "(1, 2)", json.dumps({"answer": 3}))
    with pytest.raises(GgeError, match="max_pixels must be a positive integer"):
        compute_score("gge/screenspot_v2", "(1, 2)", gt_text, max_pixels="big")
    with pytest.raises(GgeError, match="reward input 1"):
        compute_score_batch([{"response": "x", "ground_truth": gt_text}, {"response": "x"}])


FALLBACK_MODULE = """
REWARD_TYPE = "sequential"
calls = []


def score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    calls.append((data_source, kwargs))
    return 1.0 if solution_str.strip() == ground_truth else 0.0


def rich(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return {"score": 0.5, "acc": 1.0, "pred": solution_str}


def easyr1_one(item, **kwargs):
    return {"overall": float(item["response"] == item["ground_truth"]), "accuracy": 1.0, **kwargs}
"""


def test_other_data_sources_go_to_a_fallback(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training rows (not gge's) share the reward function: a fallback scores them (verl trains on them)."""
    hide_verl(monkeypatch)
    module = tmp_path / "my_reward.py"
    module.write_text(FALLBACK_MODULE)
    spec = f"{module}:score"
    row = world["rows"][0]
    gt_text = row["reward_model"]["ground_truth"]
    gge_row = compute_score(row["data_source"], world["texts"][0][0], gt_text, fallback=spec)
    assert gge_row == compute_score(row["data_source"], world["texts"][0][0], gt_text)
    right = compute_score("openai/gsm8k", "72", "72", {"index": 1}, fallback=spec, max_pixels=10, temp=3)
    wrong = compute_score("openai/gsm8k", "71", "72", fallback=spec)
    # the same keys as gge's rows: verl needs them on every row of a validation
    assert set(right) == set(gge_row)
    assert (right["score"], right["acc"], wrong["score"], wrong["format_error"]) == (1.0, 1.0, 0.0, 0.0)
    called = next(m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == str(module))
    assert called.calls[0] == ("openai/gsm8k", {"temp": 3})  # gge's own kwargs are not passed on
    rich = compute_score("openai/gsm8k", "x", "72", fallback=f"{module}:rich")
    assert rich["score"] == 0.5 and rich["acc"] == rich["hit"] == 1.0 and rich["pred"] == "x"
    assert compute_score("openai/gsm8k", "72", "72", fallback=lambda **kw: 0.25)["score"] == 0.25
    with pytest.raises(GgeError, match="has no function 'nothing'"):
        compute_score("openai/gsm8k", "72", "72", fallback=f"{module}:nothing")
    with pytest.raises(GgeError, match=r"must be 'package\.module:function'"):
        compute_score("openai/gsm8k", "72", "72", fallback="my_reward")


def test_verls_default_reward_scores_other_data_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def default_compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(data_source)
        if data_source != "openai/gsm8k":
            raise NotImplementedError(data_source)
        return 1.0

    fake = types.ModuleType("verl.utils.reward_score")
    fake.default_compute_score = default_compute_score  # type: ignore[attr-defined]
    for name in ("verl", "verl.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "verl.utils.reward_score", fake)
    assert compute_score("openai/gsm8k", "#### 72", "72")["score"] == 1.0 and seen == ["openai/gsm8k"]
    with pytest.raises(GgeError, match="neither a gge benchmark nor one verl's default_compute_score knows"):
        compute_score("my/data", "72", "72")


def test_easyr1_batch_hands_other_items_to_its_fallback(world: dict[str, Any], tmp_path: Path) -> None:
    rows, texts = world["rows"], world["texts"]
    gge_items = [
        {"response": t[0], "response_length": 9, "ground_truth": r["reward_model"]["ground_truth"]}
        for r, t in zip(rows[:3], texts[:3], strict=True)
    ]
    other = [{"response": "72", "response_length": 2, "ground_truth": "72"}]
    mixed = [gge_items[0], other[0], gge_items[1], {**other[0], "response": "7"}, gge_items[2]]
    calls = []

    def batch(items: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, float]]:
        calls.append((len(items), kwargs))
        return [{"overall": float(i["response"] == i["ground_truth"]), "accuracy": 0.0} for i in items]

    out = compute_score_batch(mixed, fallback=batch, max_pixels=None, extra=1)
    alone = compute_score_batch(gge_items)
    assert [out[0], out[2], out[4]] == alone
    assert (out[1]["overall"], out[3]["overall"]) == (1.0, 0.0) and calls == [(2, {"extra": 1})]
    module = tmp_path / "easy_reward.py"
    module.write_text(FALLBACK_MODULE)  # REWARD_TYPE = "sequential": one item per call
    out = compute_score_batch(mixed, fallback=f"{module}:easyr1_one", extra=2)
    assert (out[1], out[3]["overall"]) == ({"overall": 1.0, "accuracy": 1.0, "extra": 2}, 0.0)
    with pytest.raises(
        GgeError, match=r"reward input 1: the ground truth is not one `gge export verl` wrote"
    ):
        compute_score_batch(mixed)
    with pytest.raises(GgeError, match="1 results for 2 inputs"):
        compute_score_batch(mixed, fallback=lambda items, **kw: [{"overall": 0.0}])


# ------------------------------------------------------------------------------------ EasyR1 sizes


def easyr1_process_image(image: Image.Image, min_pixels: int | None, max_pixels: int | None) -> Image.Image:
    """EasyR1's verl/utils/dataset.py process_image, as written there."""
    if max_pixels is not None and (image.width * image.height) > max_pixels:
        resize_factor = math.sqrt(max_pixels / (image.width * image.height))
        width, height = int(image.width * resize_factor), int(image.height * resize_factor)
        image = image.resize((width, height))
    if min_pixels is not None and (image.width * image.height) < min_pixels:
        resize_factor = math.sqrt(min_pixels / (image.width * image.height))
        width, height = int(image.width * resize_factor), int(image.height * resize_factor)
        image = image.resize((width, height))
    return image


def centre_text(gt: GroundTruth, frame: tuple[int, int]) -> str:
    if isinstance(gt.region, Absent):
        return REFUSAL
    x1, y1, x2, y2 = gt.region.pixel_box()
    mx, my = from_original((x1 + x2) / 2, (y1 + y2) / 2, gt.convention, gt.image_size, frame)
    return f"({mx:.4f}, {my:.4f})"


@pytest.mark.parametrize("resize_images", [True, False])
def test_easyr1_maps_points_back_from_the_size_the_model_saw(
    resize_images: bool, demo_suite: Path, tmp_path: Path
) -> None:
    low, limit = 50_000, 200_000  # below every screenshot's area: EasyR1 shrinks them
    files = export_verl(
        ["screenspot_v2", "osworld_g"],
        demo_suite,
        tmp_path,
        model="holo1_5",
        flavor="easyr1",
        max_samples=6,
        max_pixels=limit,
        min_pixels=low,
        resize_images=resize_images,
    )
    table = pq.read_table(files[0])
    assert table.column_names == ["prompt", "answer", "images", "data_source"]
    inputs, shrunk = [], 0
    for f in files:
        for row in pq.read_table(f).to_pylist():
            gt = read_ground_truth(row["answer"])
            assert row["prompt"].count("<image>") == 1 and gt.flavor == "easyr1"
            with Image.open(io.BytesIO(row["images"][0]["bytes"])) as im:
                assert im.size == gt.exported_size
                # what EasyR1 hands the processor, then the processor's smart_resize
                w, h = easyr1_process_image(im, low, limit).size
            rh, rw = smart_resize(
                h, w, factor=28, min_pixels=gt.processor_min_pixels, max_pixels=gt.processor_max_pixels
            )
            assert (rw, rh) == gt.seen_size == gt.frame
            shrunk += gt.seen_size[0] * gt.seen_size[1] < gt.image_size[0] * gt.image_size[1]
            inputs.append({"response": centre_text(gt, gt.frame), "ground_truth": row["answer"]})
            # the trainer ran with a smaller data.max_pixels than the export assumed: pass it to the reward
            smaller = easyr1_seen_size(
                gt.exported_size,
                factor=28,
                min_pixels=low,
                max_pixels=120_000,
                processor_min_pixels=gt.processor_min_pixels,
                processor_max_pixels=gt.processor_max_pixels,
            )
            assert smaller != gt.seen_size
            again = compute_score_batch(
                [{"response": centre_text(gt, smaller), "ground_truth": row["answer"]}], max_pixels=120_000
            )
            assert again[0]["overall"] == 1.0
    assert shrunk == len(inputs) == 12
    assert all(o["overall"] == 1.0 for o in compute_score_batch(inputs))


def test_easyr1_cannot_carry_a_system_prompt_unless_folded(demo_suite: Path, tmp_path: Path) -> None:
    with pytest.raises(GgeError, match="fold_system=true"):
        export_verl(["osworld_g"], demo_suite, tmp_path / "a", flavor="easyr1", max_samples=1)
    (f,) = export_verl(
        ["osworld_g"], demo_suite, tmp_path / "b", flavor="easyr1", max_samples=1, fold_system=True
    )
    prompt = pq.read_table(f).to_pylist()[0]["prompt"]
    assert prompt.startswith("You are a helpful assistant.") and prompt.count("<image>") == 1
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["folded_messages"] and "one user turn" in manifest["request_changed"]
    assert f"data.max_pixels={EASYR1_MAX_PIXELS}" in manifest["trainer_options"]


# --------------------------------------------------------------------------------------- summarize


def dump_groups(world: dict[str, Any], step: int) -> list[list[dict[str, Any]]]:
    """Per prompt, its K lines as verl's _dump_generations writes them."""
    groups = []
    for row, texts in zip(world["rows"], world["texts"], strict=True):
        gt_text = row["reward_model"]["ground_truth"]
        lines = []
        for t in texts:
            s = compute_score(row["data_source"], t, gt_text)
            lines.append(
                {
                    "input": "user ...",
                    "output": t,
                    "gts": gt_text,
                    "score": s["score"],
                    "step": step,
                    "reward": s["score"],
                    **s,
                }
            )
        groups.append(lines)
    return groups


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def write_verl_dump(world: dict[str, Any], folder: Path, step: int) -> Path:
    """A dump as verl's _dump_generations writes it: val_kwargs.n = K responses per prompt, interleaved."""
    return write_lines(folder / f"{step}.jsonl", [x for g in dump_groups(world, step) for x in g])


SAME = (
    "samples",
    "top1",
    *[f"oracle@{j}" for j in range(1, K + 1)],
    "official",
    "averages",
    "intervals",
    "format_errors",
    "abstentions",
    "unparsed_candidates",
    "critic_gap",
    "selection",
    "breakdown",
    "tables",
    "decomposition",
)


def expected_pass(world: dict[str, Any], name: str, upto: int = K) -> dict[str, float]:
    hits = [world["hits"][(name, gt_id)] for (b, gt_id) in world["hits"] if b == name]
    return {
        f"pass@{j}": 100 * sum(pass_at_k(K, sum(h), j) for h in hits) / len(hits) for j in range(1, upto + 1)
    }


def check_summary(
    doc: dict[str, Any], world: dict[str, Any], responses: dict[str, dict[str, int]] | None = None
) -> None:
    """The summary is eval's run on the same answers (``responses``: per benchmark, when not K each)."""
    assert list(doc["benchmarks"]) == BENCH and doc["k"] == K
    for name in BENCH:
        mine, theirs = doc["benchmarks"][name], world["doc"]["benchmarks"][name]
        for key in SAME:
            assert mine[key] == theirs[key], (name, key)
        assert mine.get("micro") == theirs.get("micro"), name
        table = mine["pass_at_k"]
        assert table["n"] == K
        for key, value in expected_pass(world, name).items():
            assert table[key] == pytest.approx(value)
        assert table[f"pass@{K}"] == pytest.approx(micro(mine)[f"oracle@{K}"])
        assert mine["responses_per_sample"] == (responses or {}).get(name, {"min": K, "max": K})


def test_summarize_verl_dump_reproduces_eval(
    world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dumps = tmp_path / "val"
    write_verl_dump(world, dumps, step=3)
    write_verl_dump(world, dumps, step=10)
    out = tmp_path / "summary"
    with pytest.raises(GgeError, match=r"holds the validations of 2 training steps \(3, 10\).*--step N"):
        summarize_main([str(dumps), "--out", str(out)])  # never one of them silently
    assert not out.exists()
    assert summarize_main([str(dumps), "--out", str(out), "--step", "10", "--report-misses", "2"]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["step"] == 10
    check_summary(doc, world)
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert sum(1 for _ in (out / "predictions.jsonl").open()) == len(BENCH) * N_PER
    assert "UI-Vision" in capsys.readouterr().out
    assert summarize_verl(dumps, tmp_path / "s3", step=3, report_misses=0)["config"]["step"] == 3


def test_summarize_counts_samples_the_trainer_dropped(world: dict[str, Any], tmp_path: Path) -> None:
    path = write_verl_dump(world, tmp_path / "val", step=1)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[K:]) + "\n")  # the first prompt was filtered out (too long)
    doc = summarize_verl(path, tmp_path / "out", export=world["tmp"] / "export", report_misses=0)
    entry = doc["benchmarks"][BENCH[0]]
    assert entry["missing_responses"] == 1 and entry["samples"] == N_PER
    # by hand: the dropped sample is a miss with a format error, every other one scores as eval scored it
    dropped = read_ground_truth(world["rows"][0]["reward_model"]["ground_truth"]).id
    kept = [h for (b, sid), h in world["hits"].items() if b == BENCH[0] and sid != dropped]
    assert len(kept) == N_PER - 1
    assert micro(entry)["top1"] == pytest.approx(100 * sum(h[0] for h in kept) / N_PER)
    assert micro(entry)[f"oracle@{K}"] == pytest.approx(100 * sum(any(h) for h in kept) / N_PER)
    for j in range(1, K + 1):  # unbiased pass@j = 1 - C(n-c, j) / C(n, j); the dropped sample's is 0
        own = [1 - math.comb(K - sum(h), j) / math.comb(K, j) for h in kept]
        assert entry["pass_at_k"][f"pass@{j}"] == pytest.approx(100 * sum(own) / N_PER), j
    theirs = world["doc"]["benchmarks"][BENCH[0]]
    was_unreadable = all(t == GARBLED for t in world["texts"][0])
    assert entry["format_errors"] == theirs["format_errors"] - was_unreadable + 1
    assert any("1 exported samples have no response" in n for n in doc["notes"])


def test_summarize_refuses_several_steps(world: dict[str, Any], tmp_path: Path) -> None:
    one = write_verl_dump(world, tmp_path / "val", step=1)
    two = write_verl_dump(world, tmp_path / "val", step=2)
    with pytest.raises(
        GgeError, match=r"spans 2 training steps \(.*1\.jsonl: step 1; .*2\.jsonl: step 2\).*--step"
    ):
        summarize_verl([one, two], tmp_path / "o")
    with pytest.raises(GgeError, match="given twice"):
        summarize_verl([one, tmp_path / "val" / ".." / "val" / "1.jsonl"], tmp_path / "o")
    both = write_lines(
        tmp_path / "both.jsonl", [x for st in (1, 2) for g in dump_groups(world, st) for x in g]
    )
    with pytest.raises(GgeError, match=r"spans 2 training steps \(.*both\.jsonl: step 1, step 2\)"):
        summarize_verl(both, tmp_path / "o")
    doc = summarize_verl(both, tmp_path / "o", step=2, report_misses=0)
    assert doc["config"]["step"] == 2
    check_summary(doc, world)


def test_summarize_scores_uneven_groups_only_when_allowed(
    world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A prompt listed twice in val_files has 2n responses: refused, or each sample scored with its own n."""
    groups = dump_groups(world, 4)
    path = write_lines(tmp_path / "val" / "4.jsonl", [x for g in groups + groups[:1] for x in g])
    with pytest.raises(
        GgeError, match=rf"different numbers of responses \({len(groups) - 1} samples with n={K}; "
    ):
        summarize_verl(path, tmp_path / "o")
    out = tmp_path / "o"
    assert summarize_main([str(path), "--out", str(out), "--allow-uneven", "--report-misses", "0"]) == 0
    doc = json.loads((out / "results.json").read_text())
    # the repeated prompt's 2n responses hit as often as its n: every number is the even dump's
    check_summary(doc, world, {BENCH[0]: {"min": K, "max": 2 * K}})
    assert doc["config"]["allow_uneven"] and any(f"n = {K} to {2 * K}" in n for n in doc["notes"])
    assert f"n = {K} to {2 * K}" in capsys.readouterr().out
    # fewer responses to some samples: pass@k up to the smallest n, each sample from its own n
    short = [g[:3] if i % 4 == 0 else g for i, g in enumerate(groups)]
    path = write_lines(tmp_path / "val" / "4.jsonl", [x for g in short for x in g])
    doc = summarize_verl(path, tmp_path / "o2", allow_uneven=True, report_misses=0)
    assert doc["k"] == 3
    for name in BENCH:
        own = []
        for g in short:
            gt = read_ground_truth(g[0]["gts"])
            if gt.benchmark == name:
                own.append((len(g), sum(x["hit"] == 1.0 for x in g)))
        table = doc["benchmarks"][name]["pass_at_k"]
        assert table["n"] == 3 and "pass@4" not in table
        for j in (1, 2, 3):
            assert table[f"pass@{j}"] == pytest.approx(
                100 * sum(pass_at_k(n, c, j) for n, c in own) / len(own)
            )


def test_summarize_skips_other_data_validated_alongside(
    world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    groups = dump_groups(world, 6)
    gsm8k = {
        "input": "q",
        "output": "#### 72",
        "gts": "72",
        "score": 1.0,
        "step": 6,
        "reward": 1.0,
        "acc": 1.0,
    }
    lines = [x for i, g in enumerate(groups) for x in ([gsm8k] if i % 10 == 0 else []) + g]
    path = write_lines(tmp_path / "val" / "6.jsonl", lines)
    skipped = sum(1 for x in lines if x is gsm8k)
    out = tmp_path / "o"
    assert summarize_main([str(path), "--out", str(out), "--report-misses", "0"]) == 0
    doc = json.loads((out / "results.json").read_text())
    check_summary(doc, world)
    assert doc["config"]["skipped_responses"] == skipped
    assert f"skipped {skipped} responses whose ground truth is not gge's" in " ".join(doc["notes"])
    assert f"skipped {skipped} responses" in capsys.readouterr().out


def easyr1_blocks(world: dict[str, Any]) -> list[str]:
    """The blocks EasyR1's FileGenerationLogger (gen_logger.py) writes, K responses per prompt."""
    blocks = []
    for row, texts in zip(world["rows"], world["texts"], strict=True):
        gt_text = row["reward_model"]["ground_truth"]
        for t in texts:
            score = compute_score(row["data_source"], t, gt_text)["score"]
            blocks.append(
                f"[prompt] user\nsays <image>\n[output] {t}\n[ground_truth] {gt_text}\n[score] {score}\n\n"
            )
    return blocks


def test_summarize_reads_easyr1_generations_log(world: dict[str, Any], tmp_path: Path) -> None:
    blocks = easyr1_blocks(world)
    log = tmp_path / "generations.log"
    log.write_text("".join(blocks))
    doc = summarize_verl(tmp_path, tmp_path / "out", report_misses=0)
    assert doc["config"]["format"] == "easyr1"
    check_summary(doc, world)


def test_summary_of_easyr1_log_says_it_is_a_sample(world: dict[str, Any], tmp_path: Path) -> None:
    """EasyR1 logs val_generations_to_log shuffled responses: never a silent random Top-1."""
    blocks = easyr1_blocks(world)
    log = tmp_path / "generations.log"
    log.write_text("".join(blocks))
    doc = summarize_verl(log, tmp_path / "out", report_misses=0)
    assert doc["config"]["sample_of_validation"]
    assert "random sample" in doc["protocol"] and "a random one of its responses" in doc["protocol"]
    assert any("val_generations_to_log" in n and "not the model's first answer" in n for n in doc["notes"])
    assert "Note: EasyR1 logs only" in (tmp_path / "out" / "report.md").read_text()
    # a subset of the responses: groups differ in size
    logged = random.Random(0).sample(blocks, len(blocks) // 2)
    log.write_text("".join(logged))
    with pytest.raises(GgeError, match=r"different numbers of responses.*--allow-uneven"):
        summarize_verl(log, tmp_path / "sub", report_misses=0)
    doc = summarize_verl(log, tmp_path / "sub", report_misses=0, allow_uneven=True)
    n_min = min(e["responses_per_sample"]["min"] for e in doc["benchmarks"].values())
    assert doc["k"] == n_min and all(e["pass_at_k"]["n"] == n_min for e in doc["benchmarks"].values())
    assert any("responses per sample differ" in n for n in doc["notes"])


def test_easyr1_log_without_a_final_newline_keeps_its_last_block(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A copied or cut log may end right after the last [score] value."""
    log = tmp_path / "generations.log"
    blocks = easyr1_blocks(world)
    log.write_text("".join(blocks).rstrip("\n"))
    doc = summarize_verl(log, tmp_path / "out", report_misses=0)
    assert doc["benchmarks"][BENCH[-1]]["responses_per_sample"] == {"min": K, "max": K}
    check_summary(doc, world)
    dump = read_dump(log)
    assert len(dump.records) == len(blocks) and dump.records[-1].output == world["texts"][-1][-1]


def test_dump_errors_name_the_file_and_line(world: dict[str, Any], tmp_path: Path) -> None:
    path = write_verl_dump(world, tmp_path / "val", step=2)
    lines = path.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n{not json\n")
    with pytest.raises(GgeError, match=r"bad\.jsonl:2: malformed JSON"):
        summarize_verl(bad, tmp_path / "o")
    old = json.loads(lines[0])
    del old["gts"]
    bad.write_text(json.dumps(old) + "\n")
    with pytest.raises(
        GgeError, match=r"bad\.jsonl:1: no 'gts' field: verl dumps the ground truth from v0\.5"
    ):
        summarize_verl(bad, tmp_path / "o")
    old["gts"] = json.dumps({"gge": 1, "benchmark": "osworld_g"})  # gge's, but broken: an error
    bad.write_text(lines[0] + "\n" + json.dumps(old) + "\n")
    with pytest.raises(GgeError, match=r"bad\.jsonl:2: field 'gts': ground truth lacks field 'id'"):
        summarize_verl(bad, tmp_path / "o")
    old["gts"] = "72"  # another data set's: skipped, but not when nothing else is left
    bad.write_text(json.dumps(old) + "\n" + json.dumps(old) + "\n")
    with pytest.raises(GgeError, match=r"bad\.jsonl: no responses to gge's samples: its 2 responses"):
        summarize_verl(bad, tmp_path / "o")
    bad.write_text("[prompt] p\n[output] 72\n[ground_truth] 72\n[score] 1.0\n\n")
    with pytest.raises(GgeError, match=r"bad\.jsonl: 1 block, none with a ground truth `gge export"):
        summarize_verl(bad, tmp_path / "o")
    with pytest.raises(GgeError, match=r"no 7\.jsonl; steps dumped: 2"):
        summarize_verl(tmp_path / "val", tmp_path / "o", step=7)
    with pytest.raises(GgeError, match="dump not found"):
        summarize_verl(tmp_path / "nothing", tmp_path / "o")


def test_export_command_line(demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    args = [
        "verl",
        "benchmarks=[ui_vision]",
        f"data_root={demo_suite}",
        f"out={out}",
        "max_samples=2",
        "model=qwen3_vl",
        "model.proposer=sampling",
        "k=3",
    ]
    assert export_main(args) == 0
    printed = capsys.readouterr().out
    assert "ui_vision: 2 samples" in printed and "val_kwargs.n=3" in printed
    gt = read_ground_truth(
        pq.read_table(out / "data" / "ui_vision.parquet").to_pylist()[0]["reward_model"]["ground_truth"]
    )
    assert gt.proposer == "sampling" and gt.convention == "norm_1000" and gt.patch_factor == 32
    with pytest.raises(GgeError, match="out=DIR is required"):
        export_main(["verl", "benchmarks=[ui_vision]"])
    with pytest.raises(GgeError, match="unknown preset"):
        export_main(["verl", f"out={out}", "model=qwen9"])
    with pytest.raises(GgeError, match=r"bad export option \(flavour\)"):
        export_main(["verl", f"out={out}", "flavour=verl"])
    with pytest.raises(GgeError, match="unknown flavor"):
        export_main(["verl", f"out={out}", "flavor=trl", "benchmarks=[ui_vision]"])
    with pytest.raises(GgeError, match="unknown export target"):
        export_main(["trl"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["benchmarks=[]"], r"benchmarks is empty: name at least one"),
        (
            ["benchmarks=[ui_vision,ui_vision]"],
            r"benchmarks lists a name twice: \['ui_vision', 'ui_vision'\]",
        ),
        (["benchmarks=[ui_visoin]"], r"unknown benchmark 'ui_visoin'"),
        (["max_samples=0"], r"^max_samples must be at least 1, got 0$"),
        (["k=0"], r"^k must be at least 1, got 0$"),
    ],
)
def test_export_checks_the_shared_options_as_eval_does(
    demo_suite: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    """benchmarks, k and max_samples are checked by RunSettings, worded as eval.py words them, and
    before out is touched."""
    out = tmp_path / "x"
    with pytest.raises(GgeError, match=message):
        export_main(["verl", f"data_root={demo_suite}", f"out={out}", *args])
    assert not out.exists()


def test_trainer_options_carry_the_presets_decoding(demo_suite: Path, tmp_path: Path) -> None:
    """verl validates at val_kwargs.temperature (default 0: n copies of the greedy answer); EasyR1's example
    config at 0.6: the printed options set the preset's decoding."""

    def options(flavor: str, *overrides: str) -> list[str]:
        out = tmp_path / f"{flavor}{len(overrides)}"
        common = ["benchmarks=[ui_vision]", f"data_root={demo_suite}", "max_samples=1", "model=holo1_5"]
        export_main(["verl", *common, f"out={out}", f"flavor={flavor}", *overrides])
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["trainer_notes"]
        return list(manifest["trainer_options"])

    val = "actor_rollout_ref.rollout.val_kwargs"
    sampling = ["model.proposer=sampling", "model.temperature=0.7", "model.top_p=0.9", "model.top_k=20"]
    sampling.append("k=4")
    opts = options("verl", *sampling)
    for o in ("n=4", "do_sample=True", "temperature=0.7", "top_p=0.9", "top_k=20"):
        assert f"{val}.{o}" in opts
    opts = options("verl", "model.proposer=sampling", "k=3")  # top_k 0 (off): -1, verl's off
    assert f"{val}.top_k=-1" in opts and f"{val}.temperature=1.0" in opts
    opts = options("verl")
    assert {f"{val}.n=1", f"{val}.do_sample=False", f"{val}.temperature=0"} <= set(opts)
    assert not any(o.startswith((f"{val}.top_p", f"{val}.top_k")) for o in opts)
    ez = "worker.rollout.val_override_config"
    opts = options("easyr1", *sampling)
    assert {f"{ez}.n=4", f"{ez}.temperature=0.7", f"{ez}.top_p=0.9", f"{ez}.top_k=20"} <= set(opts)
    assert {f"{ez}.n=1", f"{ez}.temperature=0"} <= set(options("easyr1"))


def test_export_help_lists_the_keys(capsys: pytest.CaptureFixture[str]) -> None:
    from gge.cli.commands import main as gge_main

    assert gge_main(["export", "verl", "--help"]) == 0
    text = capsys.readouterr().out
    assert "usage: gge export verl key=value" in text
    for key in ("  benchmarks=", "  out=null", "  flavor=verl", "  k=5", "  resize_images=true"):
        assert key in text
    assert "Models (model=):" in text and "qwen2_5_vl" in text and "Benchmarks: screenspot_v2" in text
    assert export_main(["verl", "out=/nowhere", "-h"]) == 0
    assert "  fold_system=false" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------- real verl

VERL_SCRIPT = r"""
import asyncio, json, sys, types
import numpy as np, torch

from omegaconf import OmegaConf
from verl import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.workers.reward_manager.naive import NaiveRewardManager
from verl.trainer.ppo.ray_trainer import RayPPOTrainer

try:  # qwen_vl_utils imports torchvision for videos only; a CPU torch may have no matching torchvision
    import torchvision  # noqa: F401
except Exception:
    for name in ("torchvision", "torchvision.io", "torchvision.transforms"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["torchvision"].__version__ = "0.0"
    sys.modules["torchvision"].io = sys.modules["torchvision.io"]
    sys.modules["torchvision"].transforms = sys.modules["torchvision.transforms"]
    sys.modules["torchvision.transforms"].InterpolationMode = types.SimpleNamespace(BICUBIC=3)

job = json.load(open(sys.argv[1]))
cfg = OmegaConf.create({"prompt_key": "prompt", "image_key": "images", "filter_overlong_prompts": False,
                        "cache_dir": job["cache_dir"], "image_patch_size": 14})
ds = RLHFDataset(data_files=job["files"], tokenizer=None, config=cfg, processor=object())


async def vision(messages):
    return await RLHFDataset.process_vision_info(messages, image_patch_size=14, config=cfg)


rows = []
for i in range(len(ds)):
    item = ds[i]
    images, _ = asyncio.run(vision(item["raw_prompt"]))
    it = iter(images or [])
    shown = []
    for m in item["raw_prompt"]:
        parts = []
        for p in m["content"]:
            if p["type"] == "image":
                w, h = next(it).size
                parts.append({"type": "image", "width": w, "height": h})
            else:
                parts.append({"type": "text", "text": p["text"]})
        shown.append({"role": m["role"], "content": parts})
    rows.append({"data_source": item["data_source"], "messages": shown,
                 "ground_truth": item["reward_model"]["ground_truth"], "extra_info": item["extra_info"]})

texts = [t for _, t in job["responses"]]
owner = [r for r, _ in job["responses"]]


class Tok:
    def decode(self, ids, skip_special_tokens=True):
        return texts[int(ids[0])]


n = len(texts)
column = lambda f: np.array([f(rows[r]) for r in owner], dtype=object)  # noqa: E731
data = DataProto.from_dict(
    tensors={"prompts": torch.zeros((n, 2), dtype=torch.long), "responses": torch.arange(n).unsqueeze(1),
             "attention_mask": torch.ones((n, 3), dtype=torch.long)},
    non_tensors={"data_source": column(lambda row: row["data_source"]),
                 "reward_model": column(lambda row: {"style": "rule", "ground_truth": row["ground_truth"]}),
                 "extra_info": column(lambda row: dict(row["extra_info"]))},
)
reward_cfg = {"path": job["reward_path"], "name": "compute_score"}
# verl >= 0.9 reads reward.custom_reward_function (the trainer migrates the legacy top-level key to it)
config = {"custom_reward_function": reward_cfg, "reward": {"custom_reward_function": reward_cfg}}
fn = get_custom_reward_fn(OmegaConf.create(config))
result = NaiveRewardManager(tokenizer=Tok(), num_examine=0, compute_score=fn)(data, return_dict=True)
scores = result["reward_tensor"].sum(-1).tolist()
# verl >= 0.7's default path: the reward loop's manager, one response at a time
loop_agrees = None
try:
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager as LoopManager
except ImportError:
    pass
else:
    loop_manager = LoopManager(config=OmegaConf.create({}), tokenizer=Tok(), compute_score=fn)
    run = loop_manager.loop.run_until_complete
    loop_out = [run(loop_manager.run_single(data[i : i + 1])) for i in range(n)]
    extra = result["reward_extra_info"]
    loop_agrees = [o["reward_score"] for o in loop_out] == scores and all(
        o["reward_extra_info"] == {k: v[i] for k, v in extra.items()} for i, o in enumerate(loop_out)
    )
infos = {"reward": scores}
for key, values in result["reward_extra_info"].items():
    infos[key] = list(values)
sources = np.array([rows[r]["data_source"] for r in owner], dtype=object)
metrics = RayPPOTrainer._val_metrics_update(None, sources, [str(r) for r in owner], infos, [])
gts = [rows[r]["ground_truth"] for r in owner]
inputs = ["user ..."] * n
if hasattr(RayPPOTrainer, "_write_generations"):
    RayPPOTrainer._write_generations(inputs, texts, gts, scores, infos, job["dump_dir"], job["step"])
else:
    trainer = types.SimpleNamespace(global_steps=job["step"])
    RayPPOTrainer._dump_generations(trainer, inputs, texts, gts, scores, infos, job["dump_dir"])
# training data in the same run: a gsm8k row beside a gge row, scored through gge's compute_score
mixed_texts = [texts[0], "She sold 48 + 24 = 72 clips. #### 72"]


class MixedTok:
    def decode(self, ids, skip_special_tokens=True):
        return mixed_texts[int(ids[0])]


first = rows[owner[0]]
mixed = DataProto.from_dict(
    tensors={"prompts": torch.zeros((2, 2), dtype=torch.long), "responses": torch.arange(2).unsqueeze(1),
             "attention_mask": torch.ones((2, 3), dtype=torch.long)},
    non_tensors={"data_source": np.array([first["data_source"], "openai/gsm8k"], dtype=object),
                 "reward_model": np.array([{"style": "rule", "ground_truth": first["ground_truth"]},
                                           {"style": "rule", "ground_truth": "72"}], dtype=object),
                 "extra_info": np.array([dict(first["extra_info"]), {}], dtype=object)},
)
mixed_out = NaiveRewardManager(tokenizer=MixedTok(), num_examine=0, compute_score=fn)(mixed, return_dict=True)
mixed_infos = {"reward": mixed_out["reward_tensor"].sum(-1).tolist()}
mixed_infos.update({k: list(v) for k, v in mixed_out["reward_extra_info"].items()})
assert all(len(v) == 2 for v in mixed_infos.values()), mixed_infos  # verl's _validate asserts this
mixed_metrics = RayPPOTrainer._val_metrics_update(
    None, mixed.non_tensor_batch["data_source"], ["0", "1"], mixed_infos, []
)
mixed_loop = None
if loop_agrees is not None:
    mixed_manager = LoopManager(config=OmegaConf.create({}), tokenizer=MixedTok(), compute_score=fn)
    mixed_loop = [mixed_manager.loop.run_until_complete(mixed_manager.run_single(mixed[i : i + 1]))
                  for i in range(2)]
    mixed_loop = [sorted(o["reward_extra_info"]) for o in mixed_loop]
found = {"rows": rows, "metrics": {k: float(v) for k, v in metrics.items()}, "loop_agrees": loop_agrees,
         "mixed_rewards": mixed_infos["reward"], "mixed_loop_keys": mixed_loop,
         "mixed_metrics": {k: float(v) for k, v in mixed_metrics.items()}}
json.dump(found, open(sys.argv[2], "w"))
"""


@pytest.mark.verl
@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("GGE_VERL_PYTHON"), reason="GGE_VERL_PYTHON (a Python with verl) is not set"
)
@pytest.mark.parametrize("n", [1, K])
def test_real_verl_reads_the_export_and_calls_compute_score(
    n: int, world: dict[str, Any], tmp_path: Path
) -> None:
    rows, texts = world["rows"], world["texts"]
    job = {
        "files": [str(f) for f in world["files"]],
        "cache_dir": str(tmp_path / "cache"),
        "reward_path": str(world["tmp"] / "export" / "gge_reward.py")
        if n == 1
        else "pkg://gge.integrations.verl",
        "responses": [[i, t] for i, ts in enumerate(texts) for t in ts[:n]],  # val_kwargs.n, interleaved
        "dump_dir": str(tmp_path / "dump"),
        "step": 5,
    }
    (tmp_path / "job.json").write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_DEDUP_LOGS": "0"}
    proc = subprocess.run(
        [
            os.environ["GGE_VERL_PYTHON"],
            "-c",
            VERL_SCRIPT,
            str(tmp_path / "job.json"),
            str(tmp_path / "out.json"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads((tmp_path / "out.json").read_text())
    assert len(got["rows"]) == len(rows)
    # verl's own reading of the files: the messages and image size eval sends (prefill aside)
    for row, seen in zip(rows, got["rows"], strict=True):
        sizes = [image_size(im["bytes"]) for im in row["images"]]
        assert seen["messages"] == verl_messages(row["prompt"], sizes)
        assert seen["ground_truth"] == row["reward_model"]["ground_truth"]
    assert got["loop_agrees"] in (True, None)  # None: a verl without the reward loop
    # a gsm8k row beside gge's: verl's default_compute_score scores it, with the keys gge's rows have
    assert got["mixed_rewards"][1] == 1.0
    assert any("openai/gsm8k/acc/mean@1" in key for key in got["mixed_metrics"])
    if got["mixed_loop_keys"] is not None:
        assert got["mixed_loop_keys"][0] == got["mixed_loop_keys"][1]
    metrics = got["metrics"]
    for name in BENCH:
        entry = world["doc"]["benchmarks"][name]
        core = f"val-core/gge/{name}/acc"
        if n == 1:
            assert 100 * metrics[f"{core}/mean@1"] == pytest.approx(micro(entry)["top1"])
        else:
            doc = summarize_verl(tmp_path / "dump", tmp_path / "summary", report_misses=0)
            pass1 = doc["benchmarks"][name]["pass_at_k"]["pass@1"]
            assert 100 * metrics[f"{core}/mean@{K}"] == pytest.approx(pass1)
            # verl's best@N is a bootstrap with replacement: at most the exact Oracle@N
            assert 100 * metrics[f"{core}/best@{K}/mean"] <= micro(entry)[f"oracle@{K}"] + 1e-9
            assert doc["benchmarks"][name][f"oracle@{K}"] == entry[f"oracle@{K}"]
    if n == K:
        check_summary(summarize_verl(tmp_path / "dump", tmp_path / "summary2", report_misses=0), world)
