"""The whole path on real model classes: prompt -> generate -> parse -> convert -> score.

Tiny random Qwen2.5-VL and Qwen3-VL checkpoints are built offline and loaded with ``from_pretrained``;
``python eval.py ckpt=...`` runs for every preset and every proposer x critic mode; one checkpoint
overfitted to a fixed answer checks the resized -> original mapping exactly; the OpenAI-compatible
preset runs against a chat-completions server on loopback.
"""

from __future__ import annotations

import io
import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw
from tiny_checkpoints import build_tiny_qwen2_5_vl, build_tiny_qwen3_vl, overfit

from gge.benchmarks import get_benchmark
from gge.models.factory import load_preset
from gge.models.hf import TransformersBackend
from gge.models.hf_loading import load_processor
from gge.models.policy import SAMPLE_SEPARATOR, AdapterSettings, GroundingPolicy
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box, Sample

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("ckpts")
    return {
        "qwen2_5_vl": build_tiny_qwen2_5_vl(base / "Qwen2.5-VL-tiny"),  # named: ckpt= detects by name
        "qwen3_vl": build_tiny_qwen3_vl(base / "Qwen3-VL-tiny"),
    }


SMALL = [
    "model.max_pixels=50000",
    "model.min_pixels=3136",
    "model.max_new_tokens=12",
    "model.critic_max_new_tokens=6",
    "model.device=cpu",
]


def _eval(args: list[str], demo: Path, out: Path) -> dict[str, Any]:
    base = [f"data_root={demo}", "benchmarks=[screenspot_v2]", "max_samples=3", f"output_dir={out}"]
    return run(parse_args([*base, *args]), out=io.StringIO())


@pytest.mark.parametrize("ckpt_name", ["qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize("proposer", ["single_pass", "sampling", "greedy"])
@pytest.mark.parametrize("critic", ["listwise", "pointwise", "none"])
def test_every_mode_runs_on_a_real_checkpoint(
    ckpt_name: str, proposer: str, critic: str, ckpts: dict[str, Path], demo_suite: Path, tmp_path: Path
) -> None:
    ckpt = ckpts[ckpt_name]
    doc = _eval(
        [f"ckpt={ckpt}", *SMALL, f"model.proposer={proposer}", f"model.critic={critic}"], demo_suite, tmp_path
    )
    e = doc["benchmarks"]["screenspot_v2"]
    model = doc["model"]
    adapter, backend = model["adapter"], model["backend"]
    assert adapter["preset"] == ckpt_name  # picked from config.json model_type
    assert adapter["convention"] == {"qwen2_5_vl": "abs_resized", "qwen3_vl": "norm_1000"}[ckpt_name]
    assert (adapter["proposer"], adapter["critic"]) == (proposer, critic)
    assert adapter["k"] == (1 if proposer == "greedy" else 5)
    assert set(adapter["prompts"]["sha256"]) >= {"propose_one", "propose_k", "rank_list", "judge_one"}
    assert backend["checkpoint"] == str(ckpt) and len(backend["config_sha256"]) == 64
    assert backend["transformers"] and backend["max_pixels"] == 50000 and backend["device"] == "cpu"
    assert model["calls"]["propose"] == 1  # one batched generation for the 3 samples
    assert model["usage"]["prompt_tokens"] > 0 and model["usage"]["completion_tokens"] > 0
    records = [json.loads(x) for x in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 3
    for rec in records:
        assert isinstance(rec["raw"], str)
        if proposer == "sampling":
            assert rec["raw"].count(SAMPLE_SEPARATOR) == 4  # 5 sequences from one prompt
        assert len(rec["candidates"]) <= adapter["k"]
    # Top-1 against the benchmark's own hit test of each record's pick, done here
    bench = get_benchmark("screenspot_v2")
    samples = {x.id: x for x in bench.load(demo_suite / bench.directory, bench.options_type()).samples}
    picks = [rec["picks"]["critic"] for rec in records]
    hits = sum(
        isinstance(p, list) and samples[rec["id"]].region.contains(p[0], p[1])
        for rec, p in zip(records, picks, strict=True)
    )
    assert e["samples"] == 3 and e["top1"] == pytest.approx(100 * hits / 3)


@pytest.mark.parametrize("preset", ["ui_tars_1_5", "qwen2_vl"])
def test_presets_named_explicitly(
    preset: str, ckpts: dict[str, Path], demo_suite: Path, tmp_path: Path
) -> None:
    doc = _eval([f"model={preset}", f"ckpt={ckpts['qwen2_5_vl']}", *SMALL], demo_suite, tmp_path)
    assert doc["model"]["adapter"]["preset"] == preset
    assert doc["model"]["adapter"]["prompts"]["name"] == load_preset(preset).prompts.name
    # the tiny budgets of this test change the official request, and results.json says so
    protocol = doc["protocol"]
    assert protocol.startswith("gge proposer/critic: not comparable to published numbers (changed from")
    assert "max_new_tokens" in protocol and "max_pixels" in protocol


def test_overfitted_checkpoint_maps_resized_pixels_back_exactly(
    ckpts: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "overfit"
    shutil.copytree(ckpts["qwen2_5_vl"], folder)
    size = (301, 203)  # not a multiple of the patch factor 28
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).rectangle((100, 10, 160, 40), fill="navy")
    path = tmp_path / "shot.png"
    image.save(path)

    settings = AdapterSettings(preset="t", convention="abs_resized", proposer="greedy", critic="none")
    backend = TransformersBackend.from_pretrained(str(folder), max_pixels=50000, dtype="float32")
    sw, sh = backend.seen_size(*size)
    view = image.resize((sw, sh), Image.Resampling.BICUBIC)
    text = settings.prompts.propose_one.format(
        instruction="open the menu", k=1, width=sw, height=sh, labels="1"
    )
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    overfit(folder, view, messages, "(123,45)", max_pixels=50000)

    # independent of gge: the processor's own grid gives the size the model saw
    grid = load_processor(folder, max_pixels=50000).image_processor(images=[image])["image_grid_thw"][0]
    grid_w, grid_h = int(grid[2]) * 14, int(grid[1]) * 14
    assert (grid_w, grid_h) == (sw, sh) and (sw, sh) != size
    expected = (123 * size[0] / grid_w, 45 * size[1] / grid_h)

    policy = GroundingPolicy(TransformersBackend.from_pretrained(str(folder), max_pixels=50000), settings)
    box = Box(expected[0] - 1, expected[1] - 1, expected[0] + 1, expected[1] + 1)
    sample = Sample("b", "0", str(path), size, "open the menu", box)
    (pred,) = policy.predict([sample])
    assert pred.raw == "(123,45)"
    assert pred.candidates[0].point == pytest.approx(expected, abs=1e-9)
    assert box.contains(*pred.candidates[0].point)  # type: ignore[misc]
    assert not box.contains(123, 45)  # reading the answer as original pixels would miss

    # an in-memory model in training mode (as the training-time callback sees it) answers the same
    # and is put back in training mode afterwards
    trained = TransformersBackend.from_pretrained(str(folder), max_pixels=50000)
    trained.model.train()
    in_memory = GroundingPolicy(TransformersBackend(trained.model, trained.processor), settings)
    (again,) = in_memory.predict([sample])
    assert again.candidates == pred.candidates
    assert trained.model.training
    assert all(p.grad is None for p in trained.model.parameters())


class _ChatServer(BaseHTTPRequestHandler):
    """A chat-completions endpoint: proposals, rankings and yes-logprobs by what is asked."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"][-1]["text"]
        choice: dict[str, Any]
        if body.get("logprobs"):
            top = [{"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": -2.4}]
            choice = {
                "message": {"content": "Yes"},
                "logprobs": {"content": [{"token": "Yes", "top_logprobs": top}]},
            }
        elif "Rank" in text:
            choice = {"message": {"content": "2, 1"}}
        else:
            choice = {"message": {"content": "(30, 20)\n(200, 100)"}}
        choices = [dict(choice, index=i) for i in range(body.get("n", 1))]
        payload = json.dumps(
            {"choices": choices, "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.parametrize("critic", ["listwise", "pointwise"])
def test_openai_preset_through_the_cli(critic: str, demo_suite: Path, tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        doc = _eval(
            ["model=openai_api", f"model.base_url={url}", "model.api_model=tiny", f"model.critic={critic}"],
            demo_suite,
            tmp_path,
        )
    finally:
        server.shutdown()
        server.server_close()
    model = doc["model"]
    assert model["backend"]["backend"] == "openai" and model["backend"]["usage"]["requests"] >= 3
    records = [json.loads(x) for x in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert all(len(r["candidates"]) == 2 and not r["format_error"] for r in records)
    if critic == "listwise":
        assert all(r["scores"] == [1.0, 2.0] for r in records)  # "2, 1": the second candidate first
    else:
        assert all(r["scores"][0] == pytest.approx(0.9048, abs=1e-4) for r in records)


def test_box_tokens_survive_decoding(ckpts: dict[str, Path]) -> None:
    """A Qwen2-VL box answer keeps its box tokens through decoding and is read as one centre."""
    from gge.models.parsing import parse_points

    backend = TransformersBackend.from_pretrained(str(ckpts["qwen2_5_vl"]))
    tok = backend.processor.tokenizer
    answer = "<|box_start|>(100,200),(300,400)<|box_end|><|im_end|><|endoftext|>"
    ids = tok.encode(answer, add_special_tokens=False)
    text = backend.decode(ids)
    assert text == "<|box_start|>(100,200),(300,400)<|box_end|>"
    assert parse_points(text).points == ((200.0, 300.0),)


def test_sampling_is_not_overridden_by_the_checkpoint_generation_config(
    ckpts: dict[str, Path], demo_suite: Path, tmp_path: Path
) -> None:
    """Qwen2.5-VL checkpoints ship top_k=1, which would make K samples identical."""
    folder = tmp_path / "Qwen2.5-VL-topk1"
    shutil.copytree(ckpts["qwen2_5_vl"], folder)
    gen_path = folder / "generation_config.json"
    gen = json.loads(gen_path.read_text())
    gen.update(top_k=1, repetition_penalty=1.05, do_sample=True)
    gen_path.write_text(json.dumps(gen))
    args = [f"ckpt={folder}", *SMALL, "model.proposer=sampling", "model.critic=none"]
    doc = _eval(args, demo_suite, tmp_path / "o")
    backend = doc["model"]["backend"]
    assert backend["generation_config"]["top_k"] == 1  # recorded, and not applied:
    assert doc["model"]["adapter"]["top_k"] == 0
    # the repetition penalty is the one knob the official Qwen2.5-VL evaluation takes from the
    # checkpoint's generation config: the preset does the same, and records it
    assert doc["model"]["adapter"]["repetition_penalty"] is None
    assert backend["generation_config"]["repetition_penalty"] == 1.05
    assert backend["image_processor_size"]["longest_edge"] == 50000
    records = [json.loads(x) for x in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines()]
    distinct = [len(set(r["raw"].split(SAMPLE_SEPARATOR))) for r in records]
    assert max(distinct) >= 3, distinct


@pytest.mark.parametrize("critic", ["listwise", "pointwise"])
def test_a_real_checkpoints_critic_alone_on_a_frozen_pool(
    critic: str, ckpts: dict[str, Path], demo_suite: Path, tmp_path: Path
) -> None:
    """A tiny Qwen2.5-VL's critic on a synthetic pool: no proposer call, its scores on the pool's points."""
    args = [
        f"ckpt={ckpts['qwen2_5_vl']}",
        *SMALL,
        f"model.critic={critic}",
        "pool.source=synthetic",
        "pool.n=3",
    ]
    doc = _eval(args, demo_suite, tmp_path)
    calls = doc["model"]["calls"]
    assert "propose" not in calls or calls["propose"] == 0
    assert calls["rank"] >= 1  # the critic's calls (a pointwise yes-probability counts here too)
    pools = {p["id"]: p for p in (json.loads(x) for x in (tmp_path / "pool.jsonl").read_text().splitlines())}
    records = [json.loads(x) for x in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 3
    correct = 0
    for rec in records:
        pool = pools[rec["id"]]
        assert [[round(x, 3), round(y, 3)] for x, y in rec["candidates"]] == pool["points"]
        assert all(s is not None for s in rec["scores"])
        best = max(range(3), key=lambda i: (rec["scores"][i], -i))  # highest, the earlier on a tie
        correct += best in pool["gold"]
    figures = doc["benchmarks"]["screenspot_v2"]["critic_pool"]
    assert figures["accuracy"] == pytest.approx(100 * correct / 3, abs=1e-3)
    assert figures["chance"] == pytest.approx(100 / 3, abs=1e-3)
    assert doc["benchmarks"]["screenspot_v2"]["occlusion"]["samples"] == 3
