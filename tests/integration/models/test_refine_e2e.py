"""The refine stage on real model classes: a constant answer on a crop maps to the expected pixel.

Tiny Qwen3-VL (answers in 0..1000, ``norm_1000``) and Qwen2.5-VL (answers in the pixels of the image it
sees, ``abs_resized``, after a prefill) checkpoints are overfitted on the refine request of one crop:
the crop of a known window, resized as the processor itself resizes it, asked with the family's
request (the prompt states the crop's seen size). Three screenshots hold that crop at a clamped
bottom-right window, a clamped top-left one and an inner one (white elsewhere, so a crop cut at the
wrong place is another image); each refined point must be the window's corner plus the answer in the
crop's frame, worked out here by hand.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from PIL import Image
from tiny_checkpoints import build_tiny_qwen2_5_vl, build_tiny_qwen3_vl, overfit

from gge.models.hf import TransformersBackend
from gge.models.hf_loading import load_processor
from gge.models.policy import AdapterSettings, GroundingPolicy, Prompts
from gge.types import Box, Candidate, Prediction, Sample

pytestmark = pytest.mark.usefixtures("one_thread_per_module")

SIZE = (301, 203)
CROP = (151, 102)  # 301 / 2 = 150.5 and 203 / 2 = 101.5, rounded half up
PICKS = {
    # pick -> window corner: 300 - 75.5 = 224.5 -> 225, beyond 301 - 151 = 150;
    # 202 - 51 = 151, beyond 203 - 102 = 101
    (300.0, 202.0): (150, 101),
    # 3 - 75.5 -> -72 and 1 - 51 -> -50: both shifted to 0
    (3.0, 1.0): (0, 0),
    # 140.2 - 75.5 = 64.7 -> 65; 90.7 - 51 = 39.7 -> 40
    (140.2, 90.7): (65, 40),
}
LIMITS = {"min_pixels": 3136, "max_pixels": 50000}


def _pattern() -> Image.Image:
    rng = random.Random(7)
    image = Image.new("RGB", CROP)
    image.putdata(
        [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(CROP[0] * CROP[1])]
    )
    return image


def _screens(tmp_path: Path) -> list[tuple[Sample, Image.Image]]:
    out = []
    for i, corner in enumerate(PICKS.values()):
        screen = Image.new("RGB", SIZE, "white")
        screen.paste(_pattern(), corner)
        path = tmp_path / f"screen{i}.png"
        screen.save(path)
        out.append((Sample("b", str(i), str(path), SIZE, "open the menu", Box(0, 0, 1, 1)), screen))
    return out


def _seen(folder: Path, image: Image.Image, patch: int) -> tuple[int, int]:
    """The size the processor resizes ``image`` to, from its own grid (independent of gge)."""
    grid = load_processor(folder, **LIMITS).image_processor(images=[image])["image_grid_thw"][0]
    return int(grid[2]) * patch, int(grid[1]) * patch


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "convention", "answer", "prefill"),
    [
        ("qwen3_vl", "norm_1000", "(600,300)", None),
        ("qwen2_5_vl", "abs_resized", "Click (56,28)", "Click ("),
    ],
)
def test_a_constant_answer_on_the_crop_maps_to_the_window_plus_the_answer(
    family: str, convention: str, answer: str, prefill: str | None, tmp_path: Path
) -> None:
    build = {"qwen3_vl": build_tiny_qwen3_vl, "qwen2_5_vl": build_tiny_qwen2_5_vl}[family]
    patch = {"qwen3_vl": 16, "qwen2_5_vl": 14}[family]
    folder = build(tmp_path / f"{family}-tiny")
    crop = _pattern()
    seen = _seen(folder, crop, patch)
    assert seen != CROP  # the model sees the crop at another size: abs_resized must map it back
    view = crop.resize(seen, Image.Resampling.BICUBIC)
    text = f"Click open the menu on {seen[0]}x{seen[1]}"  # the family's request, stating the seen size
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    # the prefill starts the assistant turn: the model learns the answer after it
    overfit(folder, view, messages, answer, **LIMITS)

    prompts = Prompts(propose_one="Click {instruction} on {width}x{height}", prefill=prefill)
    settings = AdapterSettings(
        preset="t",
        convention=convention,
        proposer="greedy",
        critic="none",
        k=1,
        refine="zoom",
        prompts=prompts,
    )
    backend = TransformersBackend.from_pretrained(str(folder), dtype="float32", **LIMITS)
    policy = GroundingPolicy(backend, settings)
    screens = _screens(tmp_path)
    bases = [Prediction("b", s.id, (Candidate(pick),)) for (s, _), pick in zip(screens, PICKS, strict=True)]
    # a scripted clock: the three crops (one size) go in one batch, timed 4 -> 10 s: 2 s each
    readings = [4.0, 10.0]
    backend._clock = lambda: readings.pop(0)  # type: ignore[method-assign]
    refined = policy.refine([s for s, _ in screens], [im for _, im in screens], bases)
    assert readings == []  # one batch: read once at its start, once at its end

    ax, ay = (600 / 1000 * CROP[0], 300 / 1000 * CROP[1]) if convention == "norm_1000" else (56, 28)
    if convention == "abs_resized":  # pixels of the seen crop, in the crop's original pixels
        ax, ay = ax * CROP[0] / seen[0], ay * CROP[1] / seen[1]
    for pred, (x1, y1) in zip(refined, PICKS.values(), strict=True):
        r = pred.refine
        assert r is not None and r.triggered and not r.format_error, r
        assert r.raw == answer
        assert r.window == (x1, y1, x1 + CROP[0], y1 + CROP[1])
        assert r.point is not None
        assert r.point == pytest.approx((x1 + ax, y1 + ay), abs=1e-9)
        assert Box(x1 + ax - 1, y1 + ay - 1, x1 + ax + 1, y1 + ay + 1).contains(*r.point)
        (cost,) = pred.costs
        assert (cost.stage, cost.candidates, cost.batch_size) == ("refine", 0, 3)
        assert cost.seconds == 2.0
    assert policy.calls["refine"] == 1  # the three refine requests went in one call


@pytest.mark.slow
def test_the_whole_path_reads_the_screenshot_and_refines_the_proposer_s_pick(tmp_path: Path) -> None:
    """predict(): the proposer's answer on the screenshot, then the crop's around it, one after the other.

    A white 600 x 400 screenshot and its 300 x 200 crop both exceed max_pixels with one aspect ratio,
    so the processor resizes both to one size: the refine request is the proposer's own request, and
    the checkpoint overfitted on that one answers both.
    """
    folder = build_tiny_qwen3_vl(tmp_path / "Qwen3-VL-tiny")
    screen = Image.new("RGB", (600, 400), "white")
    seen = _seen(folder, screen, 16)
    assert _seen(folder, screen.crop((300, 0, 600, 200)), 16) == seen
    text = f"Click open the menu on {seen[0]}x{seen[1]}"
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
    overfit(folder, screen.resize(seen, Image.Resampling.BICUBIC), messages, "(900,100)", **LIMITS)
    path = tmp_path / "white.png"
    screen.save(path)
    prompts = Prompts(propose_one="Click {instruction} on {width}x{height}")
    settings = AdapterSettings(
        convention="norm_1000", proposer="greedy", critic="none", refine="zoom", prompts=prompts
    )
    policy = GroundingPolicy(TransformersBackend.from_pretrained(str(folder), **LIMITS), settings)
    (pred,) = policy.predict([Sample("b", "0", str(path), (600, 400), "open the menu", Box(0, 0, 1, 1))])
    # the proposer's (900, 100) of 0..1000 is (540, 40); the window 300 x 200 around it: 540 - 150 = 390,
    # beyond 600 - 300 = 300; 40 - 100 -> 0. Its (900, 100) is (270, 20) of the crop: (570, 20).
    assert pred.raw == "(900,100)" and pred.candidates[0].point == pytest.approx((540.0, 40.0), abs=1e-9)
    r = pred.refine
    assert r is not None and r.triggered and r.window == (300, 0, 600, 200) and r.raw == "(900,100)"
    assert r.point == pytest.approx((570.0, 20.0), abs=1e-9)
    assert [c.stage for c in pred.costs] == ["propose", "refine"]
