"""The transformers backend's ledger arithmetic: image tokens, answer lengths, batch order."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("transformers")

import torch
from PIL import Image
from tiny_checkpoints import build_tiny_qwen3_vl

from gge.errors import GgeError
from gge.models.base import GenerationRequest
from gge.models.hf import TransformersBackend
from gge.models.hf_loading import image_tokens, load_processor, merge_size


@pytest.fixture(scope="module")
def processor(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_processor(
        build_tiny_qwen3_vl(tmp_path_factory.mktemp("q3") / "tiny"), min_pixels=1024, max_pixels=40_000
    )


def test_image_tokens_are_the_grid_over_the_merged_patches(processor: Any) -> None:
    placeholder = "<|vision_start|><|image_pad|><|vision_end|>"
    images = [Image.new("RGB", (300, 200)), Image.new("RGB", (97, 411))]
    batch = processor(text=[placeholder] * 2, images=images, padding=True, return_tensors="pt")
    pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    # the processor's own expansion of each placeholder, counted in its unpadded row
    expected = [int((row == pad).sum()) for row in batch["input_ids"]]
    assert image_tokens(batch["image_grid_thw"], merge_size(processor)) == expected
    assert expected[0] != expected[1]
    assert image_tokens([[2, 6, 8]], 2) == [24]  # two frames of 6 x 8 patches, 2 x 2 merged


def test_merge_size_falls_back_on_the_model_config() -> None:
    model = SimpleNamespace(config=SimpleNamespace(vision_config=SimpleNamespace(spatial_merge_size=4)))
    assert merge_size(SimpleNamespace(merge_size=2), model) == 2
    assert merge_size(SimpleNamespace(), model) == 4
    with pytest.raises(GgeError, match="no merge_size"):
        merge_size(SimpleNamespace(), SimpleNamespace(config=SimpleNamespace()))


def test_answer_length_counts_up_to_the_end_token() -> None:
    stops = {7, 9}
    assert TransformersBackend._answer_length(torch.tensor([3, 4, 7, 9, 9]), stops) == 3
    assert TransformersBackend._answer_length(torch.tensor([9, 9, 9]), stops) == 1  # ended at once
    assert TransformersBackend._answer_length(torch.tensor([3, 4, 5]), stops) == 3  # cut by the budget


def test_requests_are_ordered_by_the_processors_resized_area(processor: Any) -> None:
    backend = TransformersBackend(SimpleNamespace(), processor)
    sizes = [(800, 600), (64, 64), (160, 96), (96, 160), (50, 50)]
    requests = [GenerationRequest(Image.new("RGB", s), []) for s in sizes]
    # by hand: each size's resized area (rounded to multiples of 32, within 1,024..40,000 pixels)
    areas = []
    for w, h in sizes:
        grid = processor.image_processor(images=[Image.new("RGB", (w, h))])["image_grid_thw"][0]
        areas.append(int(grid[1]) * int(grid[2]))
    assert areas[2] == areas[3] and areas[1] == areas[4]  # ties keep request order
    expected = sorted(range(5), key=lambda i: (areas[i], i))
    assert backend._by_image_size(requests, range(5)) == expected == [1, 4, 2, 3, 0]
    assert backend._by_image_size(requests, [3, 0, 2]) == [2, 3, 0]
    backend.group_by_size = False
    assert backend._by_image_size(requests, [3, 0, 2]) == [3, 0, 2]


def test_a_processor_without_the_qwen_resize_rule_orders_by_the_image_area() -> None:
    tokenizer = SimpleNamespace(padding_side="right")
    backend = TransformersBackend(
        SimpleNamespace(), SimpleNamespace(tokenizer=tokenizer, image_processor=None)
    )
    requests = [GenerationRequest(Image.new("RGB", s), []) for s in [(30, 30), (10, 10), (20, 20)]]
    assert backend._by_image_size(requests, range(3)) == [1, 2, 0]
