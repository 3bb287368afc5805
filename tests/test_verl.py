"""verl / EasyR1: export, reward and summary reproduce ``eval.py`` on the same answers.

The answers are the demo suite's replay candidates written as the preset's text answers (points in the
frame the model sees, rounded as a model writes them); ``eval.py model=replay`` scores the same points
in original pixels. The trainers' side is checked against their documented contract (their source,
cited in :mod:`gge.integrations.verl`) in-process, and through the real verl package in a subprocess
when ``GGE_VERL_PYTHON`` names a Python that has verl installed (gge is put on its path).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.analysis import pass_at_k
from gge.benchmarks import get_benchmark
from gge.cli import parse_args, run
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
    read_ground_truth,
    region_from_json,
    region_to_json,
    summarize_main,
    summarize_verl,
    verl_seen_size,
)
from gge.types import Absent, Box, Polygon

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

BENCH = ["screenspot_v2", "osworld_g", "ui_vision"]
N_PER = 18
K = 5
REPO = Path(__file__).resolve().parents[1]
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
    ):
        back = region_from_json(json.loads(json.dumps(region_to_json(region))))
        assert back == region
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
        assert sum(first[f"gge/{name}"]) == pytest.approx(entry["top1"] * n / 100)
        assert 100 * sum(best[f"gge/{name}"]) / n == pytest.approx(entry[f"oracle@{K}"])
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
        assert 100 * sum(by_key[f"{name}/accuracy"]) / entry["samples"] == pytest.approx(entry["top1"])
    assert [o["overall"] for o in out] == [
        compute_score(r["data_source"], t[0], r["reward_model"]["ground_truth"])["score"]
        for r, t in zip(rows, texts, strict=True)
    ]


def test_reward_errors_say_what_is_wrong(world: dict[str, Any]) -> None:
    gt_text = world["rows"][0]["reward_model"]["ground_truth"]
    with pytest.raises(GgeError, match="not a gge benchmark"):
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


def write_verl_dump(world: dict[str, Any], folder: Path, step: int) -> Path:
    """A dump as verl's _dump_generations writes it: val_kwargs.n = K responses per prompt, interleaved."""
    lines = []
    for row, texts in zip(world["rows"], world["texts"], strict=True):
        gt_text = row["reward_model"]["ground_truth"]
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
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{step}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


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


def check_summary(doc: dict[str, Any], world: dict[str, Any]) -> None:
    assert list(doc["benchmarks"]) == BENCH and doc["k"] == K
    for name in BENCH:
        mine, theirs = doc["benchmarks"][name], world["doc"]["benchmarks"][name]
        for key in SAME:
            assert mine[key] == theirs[key], (name, key)
        hits = [world["hits"][(name, gt_id)] for (b, gt_id) in world["hits"] if b == name]
        expected = {
            f"pass@{j}": 100 * sum(pass_at_k(K, sum(h), j) for h in hits) / len(hits) for j in range(1, K + 1)
        }
        table = mine["pass_at_k"]
        assert table["n"] == K
        for key, value in expected.items():
            assert table[key] == pytest.approx(value)
        assert table[f"pass@{K}"] == pytest.approx(mine[f"oracle@{K}"])
        assert mine["responses_per_sample"] == {"min": K, "max": K}


def test_summarize_verl_dump_reproduces_eval(
    world: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dumps = tmp_path / "val"
    write_verl_dump(world, dumps, step=3)
    write_verl_dump(world, dumps, step=10)
    out = tmp_path / "summary"
    assert summarize_main([str(dumps), "--out", str(out), "--report-misses", "2"]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["step"] == 10  # the latest step by default
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
    assert entry["missing_responses"] == 1 and entry["samples"] == N_PER and entry["format_errors"] >= 1


def test_summarize_reads_easyr1_generations_log(world: dict[str, Any], tmp_path: Path) -> None:
    blocks = []
    for row, texts in zip(world["rows"], world["texts"], strict=True):
        gt_text = row["reward_model"]["ground_truth"]
        for t in texts:  # gen_logger.py FileGenerationLogger
            score = compute_score(row["data_source"], t, gt_text)["score"]
            blocks.append(
                f"[prompt] user\nsays <image>\n[output] {t}\n[ground_truth] {gt_text}\n[score] {score}\n\n"
            )
    log = tmp_path / "generations.log"
    log.write_text("".join(blocks))
    doc = summarize_verl(tmp_path, tmp_path / "out", report_misses=0)
    assert doc["config"]["format"] == "easyr1"
    check_summary(doc, world)


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
    old["gts"] = "72"
    bad.write_text(lines[0] + "\n" + json.dumps(old) + "\n")
    with pytest.raises(GgeError, match=r"bad\.jsonl:2: field 'gts': ground truth must be a JSON object"):
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
found = {"rows": rows, "metrics": {k: float(v) for k, v in metrics.items()}, "loop_agrees": loop_agrees}
json.dump(found, open(sys.argv[2], "w"))
"""


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
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_DEDUP_LOGS": "0"}
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
    metrics = got["metrics"]
    for name in BENCH:
        entry = world["doc"]["benchmarks"][name]
        core = f"val-core/gge/{name}/acc"
        if n == 1:
            assert 100 * metrics[f"{core}/mean@1"] == pytest.approx(entry["top1"])
        else:
            doc = summarize_verl(tmp_path / "dump", tmp_path / "summary", report_misses=0)
            pass1 = doc["benchmarks"][name]["pass_at_k"]["pass@1"]
            assert 100 * metrics[f"{core}/mean@{K}"] == pytest.approx(pass1)
            # verl's best@N is a bootstrap with replacement: at most the exact Oracle@N
            assert 100 * metrics[f"{core}/best@{K}/mean"] <= entry[f"oracle@{K}"] + 1e-9
            assert doc["benchmarks"][name][f"oracle@{K}"] == entry[f"oracle@{K}"]
    if n == K:
        check_summary(summarize_verl(tmp_path / "dump", tmp_path / "summary2", report_misses=0), world)
