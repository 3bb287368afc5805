"""Tiny offline Qwen2.5-VL / Qwen3-VL checkpoints and gge.models.hf_loading on them."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import torch
from tiny_checkpoints import (
    boxes_image,
    build_tiny_qwen2_5_vl,
    build_tiny_qwen3_vl,
    overfit,
    user_turn,
)

from gge.errors import GgeError
from gge.models.hf_loading import (
    _torchvision_usable,
    image_patch_factor,
    load_model,
    load_processor,
    model_type,
    resized_size,
)

BUILDERS = {"qwen2_5_vl": build_tiny_qwen2_5_vl, "qwen3_vl": build_tiny_qwen3_vl}
FACTORS = {"qwen2_5_vl": 28, "qwen3_vl": 32}
SMALL = 50_000  # max_pixels: a 1280x720 screenshot becomes about 60 image tokens


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    # Tiny-model timings swing 10-50x with 2 threads on 2 cores; outputs are the same.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny_checkpoints")
    return {kind: build(root / kind, seed=0) for kind, build in BUILDERS.items()}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_build_and_reload(checkpoints: dict[str, Path], kind: str) -> None:
    folder = checkpoints[kind]
    assert model_type(folder) == kind
    for name in ("config.json", "model.safetensors", "tokenizer.json", "preprocessor_config.json"):
        assert (folder / name).is_file(), name
    assert json.loads((folder / "processor_config.json").read_text())["processor_class"] in {
        "Qwen2_5_VLProcessor",
        "Qwen3VLProcessor",
    }
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert 0.5e6 < size < 2e6

    processor = load_processor(folder)
    model = load_model(folder)
    assert image_patch_factor(processor) == FACTORS[kind]
    assert image_patch_factor(processor.image_processor) == FACTORS[kind]
    assert not model.training
    assert model.config.model_type == kind
    assert processor.tokenizer.padding_side == "left"
    if not _torchvision_usable():
        assert type(processor).__name__.startswith("ImageOnly")

    # The config's token ids are the tokenizer's.
    tokenizer = processor.tokenizer
    ids = tokenizer.convert_tokens_to_ids
    assert model.config.image_token_id == ids("<|image_pad|>") == processor.image_token_id
    assert model.config.video_token_id == ids("<|video_pad|>")
    assert model.config.vision_start_token_id == ids("<|vision_start|>")
    assert model.config.vision_end_token_id == ids("<|vision_end|>")
    assert model.config.text_config.vocab_size == len(tokenizer)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert ids("<|im_end|>") in model.generation_config.eos_token_id

    prompt = processor.apply_chat_template(user_turn("Click OK."), add_generation_prompt=True, tokenize=False)
    assert "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Click OK.<|im_end|>\n" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    assert prompt.startswith("<|im_start|>system\n") == (kind == "qwen2_5_vl")


def test_plain_transformers_loading(checkpoints: dict[str, Path], kind: str) -> None:
    from transformers import AutoConfig, AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer

    folder = checkpoints[kind]
    assert AutoConfig.from_pretrained(folder).model_type == kind
    assert type(AutoModelForImageTextToText.from_pretrained(folder)).__name__.endswith(
        "ForConditionalGeneration"
    )
    assert AutoImageProcessor.from_pretrained(folder).patch_size * 2 == FACTORS[kind]
    assert AutoTokenizer.from_pretrained(folder).chat_template


def test_deterministic_by_seed(tmp_path: Path) -> None:
    a = build_tiny_qwen2_5_vl(tmp_path / "a", seed=0)
    b = build_tiny_qwen2_5_vl(tmp_path / "b", seed=0)
    c = build_tiny_qwen2_5_vl(tmp_path / "c", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()


def test_batched_generation_left_padding(checkpoints: dict[str, Path], kind: str) -> None:
    processor = load_processor(checkpoints[kind], max_pixels=SMALL)
    model = load_model(checkpoints[kind])
    texts = [
        processor.apply_chat_template(user_turn(text), add_generation_prompt=True, tokenize=False)
        for text in ("Click the search button in the top right corner of the window.", "Close it.")
    ]
    images = [boxes_image(1000, 700), boxes_image(300, 200, seed=1)]
    inputs = processor(text=texts, images=images, padding=True, return_tensors="pt")
    mask = inputs["attention_mask"]
    assert mask[:, -1].all()  # left padding: every row ends with a real token
    assert not mask[1, 0]  # the shorter row is padded on the left
    length = inputs["input_ids"].shape[1]

    torch.manual_seed(0)
    with torch.no_grad():
        out = model.generate(**inputs, do_sample=True, num_return_sequences=5, max_new_tokens=8)
    assert out.shape[0] == 2 * 5
    assert length < out.shape[1] <= length + 8
    # The 5 sequences of a prompt share its prompt tokens (one prefill, expanded).
    assert torch.equal(out[:5, :length], inputs["input_ids"][:1].expand(5, -1))
    assert torch.equal(out[5:, :length], inputs["input_ids"][1:].expand(5, -1))


@pytest.mark.parametrize("max_pixels", [SMALL, None])
def test_resized_size_matches_image_grid(
    checkpoints: dict[str, Path], kind: str, max_pixels: int | None
) -> None:
    processor = load_processor(checkpoints[kind], max_pixels=max_pixels)
    factor = image_patch_factor(processor)
    patch = processor.image_processor.patch_size
    limits = processor.image_processor.size
    placeholder = "<|vision_start|><|image_pad|><|vision_end|>"
    # Sizes that are no multiple of 28 or 32; big ones scaled down, the small one scaled up.
    for width, height in [(1000, 700), (333, 517), (1283, 721), (300, 200), (61, 45)]:
        assert width % factor or height % factor
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no deprecation warning about min/max pixels
            grid = processor(text=[placeholder], images=[boxes_image(width, height)])["image_grid_thw"][0]
        resized = resized_size(processor, width, height)
        assert resized == (int(grid[2]) * patch, int(grid[1]) * patch), (width, height)
        assert resized[0] % factor == 0 and resized[1] % factor == 0
        if width * height >= limits["longest_edge"]:
            assert resized[0] * resized[1] <= limits["longest_edge"]
        elif width * height <= limits["shortest_edge"]:
            assert resized[0] * resized[1] >= limits["shortest_edge"]
    if max_pixels is not None:
        assert limits["longest_edge"] == max_pixels
        assert resized_size(processor, 1000, 700) < (1000, 700)
    else:
        assert resized_size(processor, 1000, 700) in {(1008, 700), (992, 704)}


def test_yes_is_one_token_and_its_logit_is_readable(checkpoints: dict[str, Path], kind: str) -> None:
    processor = load_processor(checkpoints[kind], max_pixels=SMALL)
    model = load_model(checkpoints[kind])
    tokenizer = processor.tokenizer
    (yes,) = tokenizer.encode("Yes", add_special_tokens=False)
    (no,) = tokenizer.encode("No", add_special_tokens=False)
    assert yes != no

    texts = [
        processor.apply_chat_template(user_turn(text), add_generation_prompt=True, tokenize=False)
        for text in ("Is the marked point on the search button?", "Is it on OK?")
    ]
    # The answer's first token, right after the generation prompt, is the "Yes" token.
    alone = tokenizer.encode(texts[0], add_special_tokens=False)
    assert tokenizer.encode(texts[0] + "Yes", add_special_tokens=False) == [*alone, yes]

    images = [boxes_image(640, 400), boxes_image(320, 500, seed=2)]
    inputs = processor(text=texts, images=images, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits
    assert logits.shape[:2] == inputs["input_ids"].shape
    assert logits.shape[2] >= len(tokenizer)
    yes_logits = logits[:, -1, yes]
    assert yes_logits.shape == (2,) and torch.isfinite(yes_logits).all()
    p_yes = logits[:, -1, [yes, no]].softmax(-1)[:, 0]
    assert ((p_yes > 0) & (p_yes < 1)).all()


def test_overfit_reproduces_answer(tmp_path: Path, kind: str) -> None:
    folder = BUILDERS[kind](tmp_path / kind, seed=0)
    image = boxes_image(300, 200)
    messages = user_turn("Click the blue button. Answer with the point (x,y) in pixels.")
    overfit(folder, image, messages, "(123,45)")

    processor = load_processor(folder)
    model = load_model(folder)
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    inputs = processor(text=[prompt], images=[image], return_tensors="pt")
    start = inputs["input_ids"].shape[1]
    with torch.no_grad():
        greedy = model.generate(**inputs, do_sample=False, max_new_tokens=16)
        torch.manual_seed(0)
        sampled = model.generate(**inputs, do_sample=True, num_return_sequences=5, max_new_tokens=16)
    assert processor.batch_decode(greedy[:, start:], skip_special_tokens=True) == ["(123,45)"]
    assert processor.batch_decode(sampled[:, start:], skip_special_tokens=True) == ["(123,45)"] * 5


def test_errors_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nothing"
    with pytest.raises(GgeError, match="does not exist"):
        model_type(missing)
    with pytest.raises(GgeError, match="does not exist"):
        load_processor(missing)
    with pytest.raises(GgeError, match="does not exist"):
        load_model(missing)

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(GgeError, match=r"no config\.json"):
        model_type(empty)
    with pytest.raises(GgeError, match=r"no config\.json"):
        load_processor(empty)

    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(GgeError, match="not a folder"):
        load_model(a_file)

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(GgeError, match=r"broken.config\.json: cannot read"):
        model_type(broken)
    (broken / "config.json").write_text('{"architectures": []}')
    with pytest.raises(GgeError, match=r"config\.json: no 'model_type'"):
        model_type(broken)

    # A config but no processor files: transformers' error, wrapped and naming the folder.
    (broken / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    with pytest.raises(GgeError, match=r"cannot load the processor of .*broken"):
        load_processor(broken)


def test_bad_arguments(checkpoints: dict[str, Path]) -> None:
    folder = checkpoints["qwen2_5_vl"]
    with pytest.raises(GgeError, match="above max_pixels"):
        load_processor(folder, min_pixels=100_000, max_pixels=50_000)
    with pytest.raises(GgeError, match="positive integer"):
        load_processor(folder, max_pixels=0)
    with pytest.raises(GgeError, match="unknown dtype 'float9'"):
        load_model(folder, dtype="float9")
    with pytest.raises(GgeError, match="aspect ratio"):
        resized_size(load_processor(folder), 1000, 4)
    # A limit given alone moves the other one where they would cross.
    processor = load_processor(folder, min_pixels=20_000_000)
    assert processor.image_processor.size["longest_edge"] == 20_000_000
    assert load_model(folder, dtype="bfloat16").dtype == torch.bfloat16
