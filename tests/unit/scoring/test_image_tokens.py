"""The image tokens a Qwen-VL screenshot should cost, and the checks of what a server counted.

Expected counts are the Qwen processors' rule computed here on its own terms: 14-pixel patches
(16 for Qwen3-VL), merged 2 x 2 into one token.
"""

from __future__ import annotations

import pytest

from gge.scoring.image_tokens import (
    TEXT_SLACK,
    SeenRequest,
    check_requests,
    image_tokens_for,
    mismatch_line,
    split_prompt,
    tolerance,
)


def _qwen(width: int, height: int, patch: int, merge: int = 2) -> int:
    """Patches of ``patch`` pixels, merged ``merge`` x ``merge`` per token (the processor's grid)."""
    return (width // patch) * (height // patch) // (merge * merge)


@pytest.mark.parametrize(
    ("size", "factor", "patch"),
    [((1288, 728), 28, 14), ((56, 56), 28, 14), ((1920, 1088), 32, 16), ((3836, 2156), 28, 14)],
)
def test_image_tokens_are_the_processors_merged_patches(
    size: tuple[int, int], factor: int, patch: int
) -> None:
    assert image_tokens_for(*size, factor) == _qwen(*size, patch)


def test_image_tokens_by_hand() -> None:
    assert image_tokens_for(1288, 728, 28) == 46 * 26 == 1196
    assert image_tokens_for(1920, 1088, 32) == 60 * 34 == 2040


@pytest.mark.parametrize("size", [(1280, 728), (27, 56), (0, 28)])
def test_a_size_off_the_grid_is_refused(size: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="patches"):
        image_tokens_for(*size, 28)


def test_split_reads_the_screenshot_from_the_difference() -> None:
    # a server that counts 100 text tokens (markers included), 16 for the small image, 396 for the screenshot
    s = split_prompt(100 + 396, 100 + 16, expected_big=1196, expected_small=16)
    assert (s.image_tokens, s.text_tokens, s.expected, s.matches) == (396, 100, 1196, False)
    assert s.ratio == pytest.approx(396 / 1196)
    same = split_prompt(100 + 1196, 116, expected_big=1196, expected_small=16)
    assert same.matches and same.ratio == 1.0


def test_the_mismatch_line_names_the_counts_and_the_fix() -> None:
    s = split_prompt(100 + 396, 116, expected_big=1196, expected_small=16)
    line = mismatch_line(s, (1288, 728), 28, 3136, 1003520)
    assert line == (
        "the model saw fewer image tokens than gge sent: the server counts 396 image tokens for a 1288x728 "
        "screenshot where the preset expects 1196 "
        "(ratio 0.33; about 310,464 pixels seen of 937,664 sent): it likely resizes with its own "
        "max_pixels/min_pixels (start the server with the preset's: min_pixels=3136, max_pixels=1003520)"
    )
    assert (
        mismatch_line(split_prompt(1296, 116, expected_big=1196, expected_small=16), (1288, 728), 28, 1, 2)
        is None
    )
    # a server that resizes up (its own min_pixels above the preset's): 4 x 4 tokens sent, 8 x 8 counted
    more = mismatch_line(
        split_prompt(100 + 64, 116, expected_big=16, expected_small=16), (112, 112), 28, 1, 2
    )
    assert more is not None and more.startswith(
        "the model saw more image tokens than gge sent: the server counts 64 image tokens for a 112x112 "
        "screenshot where the preset expects 16 (ratio 4.00; about 50,176 pixels seen of 12,544 sent)"
    )


def test_measured_counts_are_compared_exactly() -> None:
    r = [
        SeenRequest("a", (56, 56), 4, prompt_tokens=90, image_tokens=4),
        SeenRequest("b", (112, 56), 8, prompt_tokens=90, image_tokens=7),  # one token off: differs
        SeenRequest("c", (112, 112), 16, prompt_tokens=90, image_tokens=4),
        SeenRequest("d", (56, 56), 4),  # nothing counted: not checked
    ]
    check = check_requests(r, factor=28, text_tokens=999)
    assert check == {
        "source": "measured",
        "factor": 28,
        "requests": 3,
        "differ": 2,
        "unchecked": 1,
        "ratio": round((7 + 4) / (8 + 16), 4),
        "tolerance": "exact (the engine's own image token count)",
        "example": {"id": "b", "size": [112, 56], "expected": 8, "observed": 7},
    }


def test_prompt_counts_are_compared_within_the_instructions_bytes() -> None:
    # probe: 100 text tokens for a 20-byte instruction; allowed off: the longer instruction's bytes + slack
    assert tolerance(30, 20) == 30 + TEXT_SLACK
    edge = 100 + 1196 + 30 + TEXT_SLACK  # 30-byte instruction: at most 46 tokens over
    r = [
        SeenRequest("in", (1288, 728), 1196, prompt_tokens=edge, instruction_bytes=30),
        SeenRequest("out", (1288, 728), 1196, prompt_tokens=edge + 1, instruction_bytes=30),
        SeenRequest("low", (1288, 728), 1196, prompt_tokens=100 + 396, instruction_bytes=10),
        SeenRequest("none", (1288, 728), 1196, instruction_bytes=10),
    ]
    check = check_requests(r, factor=28, text_tokens=100, probe_bytes=20)
    assert (check["source"], check["requests"], check["differ"], check["unchecked"]) == ("prompt", 3, 2, 1)
    seen = (1196 + 30 + TEXT_SLACK + 1) + 396
    assert check["ratio"] == round(seen / (2 * 1196), 4)
    assert check["example"] == {"id": "out", "size": [1288, 728], "expected": 1196, "observed": 1196 + 47}


def test_without_counts_or_probe_nothing_is_checked() -> None:
    r = [SeenRequest("a", (56, 56), 4, prompt_tokens=90)]
    check = check_requests(r, factor=28)
    assert (check["source"], check["requests"], check["differ"], check["unchecked"], check["ratio"]) == (
        "none",
        0,
        0,
        1,
        None,
    )
