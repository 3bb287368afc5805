"""Asking each family as its authors do: detection, dry runs, prefill, greedy-first sampling, truncation."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw
from tiny_checkpoints import build_tiny_qwen2_5_vl, overfit

from gge.errors import GgeError
from gge.models.base import Generation, GenerationRequest
from gge.models.factory import load_preset, preset_for_checkpoint
from gge.models.hf import TransformersBackend
from gge.models.policy import SAMPLE_SEPARATOR, AdapterSettings, GroundingPolicy, Prompts
from gge.models.protocol import protocol_statement
from gge.models.registry import preset_request
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box, Sample

NAMES = {
    "qwen2_5_vl": "Qwen2.5-VL-7B-Instruct",
    "qwen3_vl": "Qwen3-VL-8B-Instruct",
    "qwen2_vl": "Qwen2-VL-7B-Instruct",
    "ui_tars_1_5": "UI-TARS-1.5-7B",
    "gta1": "GTA1-7B",
    "ui_venus_ground": "UI-Venus-Ground-7B",
    "ui_venus_1_5": "UI-Venus-1.5-8B",
    "gui_g2": "GUI-G2-7B",
    "gui_owl_1_5": "GUI-Owl-1.5-8B",
    "holo1_5": "Holo1.5-7B",
    "infigui_g1": "InfiGUI-G1-7B",
    "mai_ui": "MAI-UI-8B",
    "se_gui": "SE-GUI-7B",
    "opencua": "OpenCUA-7B",
}


def _folder(root: Path, name: str, model_type: str, **config: Any) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, **config}))
    return folder


@pytest.mark.parametrize("preset", sorted(NAMES))
def test_a_folder_named_like_a_family_picks_it(preset: str, tmp_path: Path) -> None:
    model_type = load_preset(preset).model_types[0]
    chosen, why = preset_for_checkpoint(str(_folder(tmp_path, NAMES[preset], model_type)))
    assert chosen == preset
    assert NAMES[preset] in why


def test_a_checkpoint_step_folder_is_named_by_its_parent_or_config(tmp_path: Path) -> None:
    step = _folder(tmp_path / "UI-TARS-1.5-7B", "checkpoint-200", "qwen2_5_vl")
    assert preset_for_checkpoint(str(step))[0] == "ui_tars_1_5"
    named = _folder(tmp_path, "run7", "qwen2_5_vl", _name_or_path="Salesforce/GTA1-7B")
    assert preset_for_checkpoint(str(named))[0] == "gta1"


def test_an_unnamed_fine_tune_stops_and_lists_the_families(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "my-grpo-run", "qwen2_5_vl")
    with pytest.raises(GgeError) as e:
        preset_for_checkpoint(str(folder))
    msg = str(e.value)
    sharing = [p for p in NAMES if "qwen2_5_vl" in load_preset(p).model_types]
    assert len(sharing) >= 5
    for preset in sharing:
        assert f"model={preset}" in msg
    with pytest.raises(GgeError, match="model=qwen2_5_vl"):
        parse_args([f"ckpt={folder}"])
    # the choice and its reason go into the configuration recorded in results.json
    cfg = parse_args([f"ckpt={_folder(tmp_path, 'UI-TARS-1.5-7B', 'qwen2_5_vl')}"])
    assert cfg.model.name == "ui_tars_1_5" and "UI-TARS-1.5-7B" in cfg.model.selected_by


def test_remote_code_families_say_so(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "OpenCUA-7B", load_preset("opencua").model_types[0])
    cfg = parse_args([f"ckpt={folder}"])
    from gge.models.registry import build_policy

    with pytest.raises(GgeError, match=r"model\.trust_remote_code=true"):
        build_policy(cfg)


def test_dry_run_writes_the_requests_and_loads_nothing(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "dry"
    buf = io.StringIO()
    args = [
        "model=qwen2_5_vl",
        "ckpt=/nowhere",
        "dry_run=true",
        f"data_root={demo_suite}",
        f"output_dir={out}",
        "benchmarks=[screenspot_pro,osworld_g]",
        "max_samples=3",
    ]
    doc = run(parse_args(args), out=buf)
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    assert doc["dry_run"]["requests"] == len(lines) == 6
    first = lines[0]
    assert set(first) == {"benchmark", "id", "stage", "image_size", "messages", "prefill", "generation"}
    assert first["stage"] == "propose" and first["generation"]["do_sample"] is False
    # the same request preset_request renders for that screenshot
    from gge.benchmarks import get_benchmark

    bench = get_benchmark("screenspot_pro")
    sample = bench.load(demo_suite / bench.directory, bench.options_type()).samples[0]
    seen, specs = preset_request("qwen2_5_vl", "screenspot_pro", sample.instruction, sample.image_size)
    assert first["image_size"] == list(seen) and first["messages"] == specs[0].messages
    assert first["prefill"] == specs[0].prefill
    printed = buf.getvalue()
    assert "--- system ---" in printed and "--- assistant (prefill; generation continues) ---" in printed
    assert f"[image {seen[0]}x{seen[1]}]" in printed
    assert not (out / "results.json").exists()


def test_protocol_is_stated() -> None:
    official = protocol_statement(parse_args(["model=ui_tars_1_5"]).model)
    assert official.startswith("official UI-TARS") and load_preset("ui_tars_1_5").source in official
    changed = protocol_statement(parse_args(["model=ui_tars_1_5", "model.max_new_tokens=8"]).model)
    assert changed.startswith("gge proposer/critic: not comparable") and "max_new_tokens" in changed
    critic = protocol_statement(parse_args(["model=ui_tars_1_5", "model.critic=listwise"]).model)
    assert critic == "gge proposer/critic: not comparable to published numbers"


class Scripted:
    """A backend answering from a script, recording the requests."""

    def __init__(self, texts: Sequence[Sequence[str]], truncated: Sequence[Sequence[bool]] | None = None):
        self.texts, self.truncated = list(texts), list(truncated or [])
        self.requests: list[GenerationRequest] = []

    def seen_size(self, w: int, h: int) -> tuple[int, int]:
        return (w, h)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.requests += requests
        out = []
        for _ in requests:
            texts = self.texts.pop(0)
            cut = self.truncated.pop(0) if self.truncated else []
            out.append(Generation(list(texts), {}, list(cut)))
        return out

    def yes_probability(self, requests: Any, yes: str, no: str) -> list[float]:
        return [0.5] * len(requests)

    def settings(self) -> dict[str, Any]:
        return {}


SAMPLE = Sample("b", "0", "", (200, 100), "click OK", Box(0, 0, 50, 50))


def test_sampling_asks_the_greedy_answer_first_then_k_minus_1_samples() -> None:
    backend = Scripted([["(10, 10)", "(90, 90)", "nonsense"]])
    settings = AdapterSettings(convention="abs_original", proposer="sampling", critic="none", k=3)
    (prop,) = GroundingPolicy(backend, settings).propose([SAMPLE], [Image.new("RGB", (200, 100))])
    (request,) = backend.requests
    assert (request.do_sample, request.num_sequences, request.greedy_first) == (True, 3, True)
    assert [c.point for c in prop.candidates] == [(10.0, 10.0), (90.0, 90.0), None]
    assert [c.parsed for c in prop.candidates] == [True, True, False]


def test_an_answer_cut_by_the_budget_is_a_truncated_format_error() -> None:
    cut = "<|box_start|>(501,10),(99"
    backend = Scripted([[cut]], [[True]])
    settings = AdapterSettings(convention="norm_1000", proposer="greedy", critic="none", box_pairs=True)
    (pred,) = GroundingPolicy(backend, settings).predict_images([SAMPLE], [Image.new("RGB", (200, 100))])
    assert pred.format_error and pred.truncated and pred.raw == cut
    assert not pred.candidates[0].parsed
    # the same complete answer parses, as one box (special tokens stripped by a server)
    backend = Scripted([["(500,10),(990,40)"]], [[False]])
    (pred,) = GroundingPolicy(backend, settings).predict_images([SAMPLE], [Image.new("RGB", (200, 100))])
    assert pred.candidates[0].point == pytest.approx((149.0, 2.5)) and not pred.truncated


def test_per_benchmark_variant_and_placeholders() -> None:
    prompts = Prompts(
        system='{"size": "{width}x{height}"} {tools}',
        tools="TOOL {width}",
        propose_one="{instruction}",
        variants={"osworld_g": {"system": "infeasible? say so"}},
    )
    backend = Scripted([["(1, 1)"], ["(1, 1)"]])
    policy = GroundingPolicy(backend, AdapterSettings(proposer="greedy", critic="none", prompts=prompts))
    img = Image.new("RGB", (200, 100))
    policy.propose([SAMPLE], [img])
    policy.propose([Sample("osworld_g", "1", "", (200, 100), "{width}", Box(0, 0, 1, 1))], [img])
    a, b = backend.requests
    assert a.messages[0]["content"][0]["text"] == '{"size": "200x100"} TOOL 200'
    assert b.messages[0]["content"][0]["text"] == "infeasible? say so"
    assert b.messages[1]["content"][1]["text"] == "{width}"  # an instruction is never expanded


@pytest.mark.slow
def test_prefill_and_greedy_first_on_a_real_checkpoint(one_thread: None, tmp_path: Path) -> None:
    folder = build_tiny_qwen2_5_vl(tmp_path / "tiny")
    prefill = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": ['
    answer = prefill + "123, 45]}}\n</tool_call>"
    image = Image.new("RGB", (301, 203), "white")
    ImageDraw.Draw(image).rectangle((100, 10, 160, 40), fill="navy")
    path = tmp_path / "shot.png"
    image.save(path)
    prompts = Prompts(system="You click.", propose_one="{instruction}", prefill=prefill)
    backend = TransformersBackend.from_pretrained(str(folder), max_pixels=50000, dtype="float32")
    sw, sh = backend.seen_size(*image.size)
    view = image.resize((sw, sh), Image.Resampling.BICUBIC)
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "You click."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "open the menu"}]},
    ]
    overfit(folder, view, messages, answer, max_pixels=50000)
    sample = Sample("b", "0", str(path), image.size, "open the menu", Box(0, 0, 300, 200))

    def policy(**kw: Any) -> GroundingPolicy:
        settings = AdapterSettings(convention="abs_resized", critic="none", prompts=prompts, **kw)
        return GroundingPolicy(TransformersBackend.from_pretrained(str(folder), max_pixels=50000), settings)

    (pred,) = policy(proposer="greedy").predict([sample])
    assert pred.raw == answer  # prefill + what the model generated after it
    assert pred.candidates[0].point == pytest.approx((123 * 301 / sw, 45 * 203 / sh))
    # cut by the budget: a truncated format error, never a partial point
    (cut,) = policy(proposer="greedy", max_new_tokens=3).predict([sample])
    assert cut.truncated and cut.format_error and not cut.candidates[0].parsed

    # a checkpoint that was not trained on the prompt: sampling's first answer is the greedy one
    fresh = tmp_path / "fresh"
    shutil.copytree(build_tiny_qwen2_5_vl(tmp_path / "fresh-src", seed=3), fresh)
    plain = AdapterSettings(convention="abs_resized", critic="none", max_new_tokens=6, proposer="greedy")
    greedy = GroundingPolicy(TransformersBackend.from_pretrained(str(fresh), max_pixels=50000), plain)
    sampled = GroundingPolicy(
        TransformersBackend.from_pretrained(str(fresh), max_pixels=50000),
        AdapterSettings(convention="abs_resized", critic="none", max_new_tokens=6, proposer="sampling", k=3),
    )
    (g,) = greedy.predict([sample])
    (s,) = sampled.predict([sample])
    texts = s.raw.split(SAMPLE_SEPARATOR)
    assert len(texts) == 3 and texts[0] == g.raw


@pytest.mark.parametrize("build", ["qwen2_5_vl", "qwen3_vl"])
def test_greedy_first_shares_one_prefill_and_its_first_text_is_the_greedy_answer(
    one_thread: None, tmp_path: Path, build: str
) -> None:
    import tiny_checkpoints

    folder = getattr(tiny_checkpoints, f"build_tiny_{build}")(tmp_path / build, seed=5)
    backend = TransformersBackend.from_pretrained(str(folder), max_pixels=60000)
    images = [Image.new("RGB", (320, 180), c) for c in ("white", "navy")]
    texts = ["click ok", "open the filter settings of this long list please"]  # unequal: left padding

    def requests(**kw: Any) -> list[GenerationRequest]:
        return [
            GenerationRequest(
                im, [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": t}]}], **kw
            )
            for im, t in zip(images, texts, strict=True)
        ]

    prefilled: list[int] = []  # prompt rows the language model runs over the whole prompt, per call

    def count(module: Any, args: Any, kwargs: Any) -> None:
        embeds = kwargs.get("inputs_embeds")
        if embeds is not None and embeds.shape[1] > 1:
            prefilled.append(int(embeds.shape[0]))

    hook = backend.model.model.language_model.register_forward_pre_hook(count, with_kwargs=True)
    try:
        greedy = backend.generate(requests(max_new_tokens=8))
        prefilled.clear()
        shared = backend.generate(
            requests(max_new_tokens=8, num_sequences=4, do_sample=True, greedy_first=True)
        )
        assert prefilled == [2]  # one prefill per prompt, not 4
        prefilled.clear()
        backend.generate(requests(max_new_tokens=8, num_sequences=4, do_sample=True))
        assert prefilled == [8]  # what plain num_return_sequences costs
    finally:
        hook.remove()
    for g, s in zip(greedy, shared, strict=True):
        assert len(s.texts) == 4 and len(s.truncated) == 4
        assert s.texts[0] == g.texts[0]


def test_a_null_repetition_penalty_leaves_it_to_the_checkpoint(one_thread: None, tmp_path: Path) -> None:
    backend = TransformersBackend.from_pretrained(
        str(build_tiny_qwen2_5_vl(tmp_path / "t")), max_pixels=30000
    )
    seen: list[dict[str, Any]] = []
    real = backend.model.generate
    backend.model.generate = lambda **kw: seen.append(kw) or real(**kw)  # type: ignore[method-assign]
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "ok"}]}]
    image = Image.new("RGB", (100, 80))
    backend.generate([GenerationRequest(image, messages, max_new_tokens=2, repetition_penalty=None)])
    backend.generate([GenerationRequest(image, messages, max_new_tokens=2)])
    assert "repetition_penalty" not in seen[0] and seen[1]["repetition_penalty"] == 1.0
