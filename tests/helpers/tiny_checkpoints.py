"""Tiny random Qwen2.5-VL and Qwen3-VL checkpoints, built offline for tests (about 1 MB each).

No real weights are reachable offline, so tests build complete checkpoint folders instead: model
weights, ``config.json``, ``generation_config.json``, a byte-level BPE tokenizer, the image processor
(``preprocessor_config.json``), ``processor_config.json`` and a ChatML chat template. They load with
``transformers``' ``from_pretrained`` and with :mod:`gge.models.hf_loading`; the same seed gives the
same bytes.

Tokenizer (both models): byte-level BPE trained with ``tokenizers`` on a small built-in English corpus
with Qwen2's pre-tokenizer split (digits one by one) and the 256 ByteLevel characters as initial
alphabet, so no text is unknown; 512 text tokens (ids 0-511), then Qwen's special tokens at ids
512-525 (``<|endoftext|>`` 512, ``<|im_start|>`` 513, ``<|im_end|>`` 514, ..., ``<|vision_start|>``
521, ``<|vision_end|>`` 522, ``<|vision_pad|>`` 523, ``<|image_pad|>`` 524, ``<|video_pad|>`` 525),
wrapped in ``Qwen2Tokenizer``. eos ``<|im_end|>``, pad ``<|endoftext|>``. ``"Yes"`` and ``"No"`` are
single tokens (a pointwise critic reads the ``"Yes"`` logit). Chat template: Qwen2.5-VL's ChatML
template (default system prompt "You are a helpful assistant."; image parts render as
``<|vision_start|><|image_pad|><|vision_end|>``); Qwen3-VL's is the same without a default system
prompt, like the real one.

Qwen2.5-VL (``model_type`` ``qwen2_5_vl``, float32):
    text: vocab 526, hidden 64, intermediate 128, 2 layers, 4 heads, 2 kv heads (head_dim 16),
    M-RoPE sections [2, 3, 3] (sum = head_dim / 2), rope theta 1e6, untied embeddings;
    vision: depth 2, hidden 32, intermediate 64, 2 heads, patch 14, spatial merge 2, temporal patch 2,
    window 112, ``fullatt_block_indexes`` [1], ``out_hidden_size`` 64;
    image processor: patch 14, merge 2 (factor 28), CLIP mean/std, limits as the real checkpoints
    (``size`` shortest_edge 3136, longest_edge 12845056).

Qwen3-VL (``model_type`` ``qwen3_vl``, float32):
    text: vocab 526, hidden 64, intermediate 128, 2 layers, 4 heads, 2 kv heads, head_dim 16,
    interleaved M-RoPE sections [2, 3, 3], rope theta 5e6, untied embeddings;
    vision: depth 2, hidden 32, intermediate 64, 2 heads, patch 16, spatial merge 2, temporal patch 2,
    256 position embeddings (16 x 16), deepstack layer [0], ``out_hidden_size`` 64;
    image processor: patch 16, merge 2 (factor 32), mean/std 0.5, limits as the real checkpoints
    (shortest_edge 65536, longest_edge 16777216).

Token ids in the configs (``image_token_id``, ``vision_start_token_id``, eos, pad...) are the
tokenizer's. :func:`overfit` trains a saved checkpoint on one (image, chat) -> answer pair until greedy
generation reproduces the answer exactly, for end-to-end checks with known outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import PIL.Image
import PIL.ImageDraw

from gge.models.hf_loading import _image_only_processor_class, load_model, load_processor

TEXT_VOCAB_SIZE = 512

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# Qwen2's pre-tokenizer split: contractions, letter runs, single digits, punctuation runs, spaces.
_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

_CORPUS = """\
You are a helpful assistant. You are a GUI agent: look at the screenshot and find the element
that the instruction describes. Answer with the click point as (x, y) in pixels of the image, or
with a list of candidate points. Is the marked point on the target element? Answer Yes or No.
Yes. No. Yes, the point is inside the box. No, the point is outside the element.
Click the search button in the top right corner of the window. Open the file menu and select
save as. Close the dialog. Type the address into the text field below the toolbar. Scroll down
to the settings panel and enable the dark mode switch. Select the third item in the list.
Press the green play icon next to the timeline. Drag the slider to the left. Check the box that
says remember me, then sign in with your account. Where is the download link on this page?
The element is a small icon with a gear, labelled preferences, at the bottom of the sidebar.
Candidate points are drawn as numbered markers on the image; rank them from best to worst.
The best candidate is number one. Which marker is on the target? The target is the red tab.
Find the terminal, the browser, the editor, the spreadsheet, the calendar and the mail client.
Desktop, mobile and web screenshots: buttons, menus, icons, text, images, links, inputs, tabs.
The user wants to copy the selected cell, paste it into the next column and undo the change.
system user assistant system user assistant point box click image instruction answer
"""

# Qwen2.5-VL's chat template (ChatML, default system prompt, image and video parts).
_QWEN2_5_VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Qwen3-VL's template has no default system prompt (the real one adds tools and reasoning parts).
_QWEN3_VL_CHAT_TEMPLATE = _QWEN2_5_VL_CHAT_TEMPLATE.replace(
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}",
    "",
)


def build_tokenizer() -> Any:
    """Train the tiny byte-level BPE tokenizer and wrap it in ``Qwen2Tokenizer``.

    Returns:
        The tokenizer: 512 text tokens, then :data:`SPECIAL_TOKENS`; "Yes" and "No" single tokens.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import Qwen2Tokenizer

    bpe = Tokenizer(BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TEXT_VOCAB_SIZE,
        min_frequency=1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    lines = _CORPUS.splitlines()
    bpe.train_from_iterator(lines + ["Yes", "No"] * 20, trainer=trainer)
    model = json.loads(bpe.to_str())["model"]
    vocab: dict[str, int] = model["vocab"]
    if len(vocab) != TEXT_VOCAB_SIZE:
        raise AssertionError(f"the corpus gave {len(vocab)} text tokens, not {TEXT_VOCAB_SIZE}")

    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=[tuple(merge) for merge in model["merges"]],
        unk_token=None,
        eos_token=None,
        pad_token=None,
    )
    tokenizer.add_tokens([AddedToken(token, special=True, normalized=False) for token in SPECIAL_TOKENS])
    tokenizer.add_special_tokens({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"})
    tokenizer.model_max_length = 32768
    ids = tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS))
    if ids != list(range(TEXT_VOCAB_SIZE, TEXT_VOCAB_SIZE + len(SPECIAL_TOKENS))):
        raise AssertionError(f"special token ids {ids} do not follow the text vocabulary")
    for word in ("Yes", "No"):
        if len(tokenizer.encode(word, add_special_tokens=False)) != 1:
            raise AssertionError(f"{word!r} is not a single token")
    return tokenizer


def _token_ids(tokenizer: Any) -> dict[str, int]:
    """The config fields that hold token ids, from the tokenizer."""
    ids = dict(zip(SPECIAL_TOKENS, tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)), strict=True))
    return {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }


def _text_config(tokenizer: Any, ids: dict[str, int], **extra: Any) -> dict[str, Any]:
    """The tiny text config shared by both models."""
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "bos_token_id": ids["bos_token_id"],
        "eos_token_id": ids["eos_token_id"],
        "pad_token_id": ids["pad_token_id"],
        "tie_word_embeddings": False,
        **extra,
    }


def _save(
    folder: Path,
    model: Any,
    tokenizer: Any,
    image_processor: Any,
    processor_class: str,
    chat_template: str,
    ids: dict[str, int],
) -> Path:
    """Write a complete checkpoint folder: model, generation config, tokenizer, processor files."""
    from transformers import GenerationConfig

    folder.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(
        bos_token_id=ids["bos_token_id"],
        eos_token_id=[ids["eos_token_id"], ids["pad_token_id"]],
        pad_token_id=ids["pad_token_id"],
    )
    model.save_pretrained(folder)
    tokenizer.chat_template = chat_template
    # The image-only processor writes the same files as the real one, but its own class name.
    processor = _image_only_processor_class(processor_class)(
        image_processor=image_processor, tokenizer=tokenizer, chat_template=chat_template
    )
    processor.save_pretrained(folder)
    image_processor.save_pretrained(folder)  # preprocessor_config.json, which AutoProcessor reads
    for name in ("processor_config.json", "tokenizer_config.json"):
        config = json.loads((folder / name).read_text(encoding="utf-8"))
        config["processor_class"] = processor_class
        (folder / name).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder


def build_tiny_qwen2_5_vl(folder: Path, *, seed: int = 0) -> Path:
    """Save a tiny random Qwen2.5-VL checkpoint (see the module docstring) into ``folder``.

    Args:
        folder: The folder to write (created if missing).
        seed: Seed of the random weights.

    Returns:
        ``folder``.
    """
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = build_tokenizer()
    ids = _token_ids(tokenizer)
    config = Qwen2_5_VLConfig(
        text_config=_text_config(
            tokenizer,
            ids,
            rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [2, 3, 3]},
        ),
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 112,
            "fullatt_block_indexes": [1],
            "out_hidden_size": 64,
            "tokens_per_second": 2,
        },
        image_token_id=ids["image_token_id"],
        video_token_id=ids["video_token_id"],
        vision_start_token_id=ids["vision_start_token_id"],
        vision_end_token_id=ids["vision_end_token_id"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config).to(torch.float32)
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=14,
        merge_size=2,
        temporal_patch_size=2,
        size={"shortest_edge": 3136, "longest_edge": 12845056},
    )
    return _save(
        Path(folder), model, tokenizer, image_processor, "Qwen2_5_VLProcessor", _QWEN2_5_VL_CHAT_TEMPLATE, ids
    )


def build_tiny_qwen3_vl(folder: Path, *, seed: int = 0) -> Path:
    """Save a tiny random Qwen3-VL checkpoint (see the module docstring) into ``folder``.

    Args:
        folder: The folder to write (created if missing).
        seed: Seed of the random weights.

    Returns:
        ``folder``.
    """
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = build_tokenizer()
    ids = _token_ids(tokenizer)
    config = Qwen3VLConfig(
        text_config=_text_config(
            tokenizer,
            ids,
            head_dim=16,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 5_000_000.0,
                "mrope_section": [2, 3, 3],
                "mrope_interleaved": True,
            },
        ),
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "num_position_embeddings": 256,
            "deepstack_visual_indexes": [0],
            "out_hidden_size": 64,
        },
        image_token_id=ids["image_token_id"],
        video_token_id=ids["video_token_id"],
        vision_start_token_id=ids["vision_start_token_id"],
        vision_end_token_id=ids["vision_end_token_id"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config).to(torch.float32)
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        size={"shortest_edge": 65536, "longest_edge": 16777216},
    )
    return _save(
        Path(folder), model, tokenizer, image_processor, "Qwen3VLProcessor", _QWEN3_VL_CHAT_TEMPLATE, ids
    )


def overfit(
    folder: Path,
    image: PIL.Image.Image,
    prompt_messages: list[dict[str, Any]],
    answer: str,
    *,
    steps: int = 300,
    lr: float = 1e-2,
    min_pixels: int | None = None,
    max_pixels: int | None = None,
) -> None:
    """Train a saved checkpoint on one example until greedy generation reproduces ``answer`` exactly.

    Trains all weights with AdamW on the chat ``prompt_messages`` (with ``image``) followed by
    ``answer`` and ``<|im_end|>``, loss on the answer tokens only. Stops once every answer token has
    probability above 0.999 (so sampled generations reproduce it too) and greedy generation returns
    ``answer``; then saves the weights back into ``folder``.

    Args:
        folder: A checkpoint folder from :func:`build_tiny_qwen2_5_vl` or :func:`build_tiny_qwen3_vl`.
        image: The image of the example.
        prompt_messages: Chat messages with one image part, e.g.
            ``[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "..."}]}]``.
        answer: The assistant text to learn.
        steps: The most optimiser steps.
        lr: AdamW learning rate.
        min_pixels: Image limits of the processor while training (None: the checkpoint's); evaluate
            with the same limits, since they decide the image tokens.
        max_pixels: See ``min_pixels``.

    Raises:
        AssertionError: Greedy generation does not return ``answer`` after ``steps`` steps.
    """
    import torch

    folder = Path(folder)
    processor = load_processor(folder, min_pixels=min_pixels, max_pixels=max_pixels)
    model = load_model(folder)
    prompt = processor.apply_chat_template(prompt_messages, add_generation_prompt=True, tokenize=False)
    end = processor.tokenizer.eos_token
    inputs = processor(text=[prompt + answer + end], images=[image], return_tensors="pt")
    prompt_inputs = processor(text=[prompt], images=[image], return_tensors="pt")
    n_prompt = prompt_inputs["input_ids"].shape[1]
    input_ids = inputs["input_ids"]
    if not torch.equal(input_ids[:, :n_prompt], prompt_inputs["input_ids"]):
        raise AssertionError("the prompt tokens are not a prefix of the prompt + answer tokens")
    labels = input_ids.clone()
    labels[:, :n_prompt] = -100
    targets = input_ids[0, n_prompt:]
    n_answer = len(processor.tokenizer.encode(answer + end, add_special_tokens=False))

    def greedy() -> str:
        model.eval()
        with torch.no_grad():
            out = model.generate(**prompt_inputs, max_new_tokens=n_answer + 2, do_sample=False)
        model.train()
        return str(processor.tokenizer.decode(out[0, n_prompt:], skip_special_tokens=True))

    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    done = False
    for _ in range(steps):
        output = model(**inputs, labels=labels)
        with torch.no_grad():
            probs = output.logits[0, n_prompt - 1 : -1].float().softmax(-1)
            lowest = probs.gather(1, targets[:, None]).min().item()
        if lowest > 0.999 and greedy() == answer:
            done = True
            break
        output.loss.backward()
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
    model.eval()
    if not done and greedy() != answer:
        raise AssertionError(f"after {steps} steps greedy generation gives {greedy()!r}, not {answer!r}")
    model.save_pretrained(folder)


def boxes_image(width: int, height: int, seed: int = 0, boxes: int = 4) -> PIL.Image.Image:
    """A light screenshot with ``boxes`` coloured rectangles placed by ``seed`` (something to look at)."""
    image = PIL.Image.new("RGB", (width, height), (240, 240, 240))
    draw = PIL.ImageDraw.Draw(image)
    for i in range(boxes):
        x, y = (37 * (i + seed) + 11) % width, (53 * (i + seed) + 7) % height
        draw.rectangle((x, y, x + width // 5, y + height // 7), fill=(60 * i, 90, 200 - 40 * i))
    return image


def user_turn(text: str) -> list[dict[str, Any]]:
    """One user message: the image, then ``text`` (the chat an overfit checkpoint is trained on)."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
