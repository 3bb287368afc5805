"""One golden answer per preset: a raw answer in the family's own format, read back to original pixels.

Each case writes the same original-screen point of a 3840x2160 screenshot, (960, 1620) (a quarter
across, three quarters down), in the units the family answers in: pixels of the image the model sees
(``abs_resized``: that size is written out below, computed by hand from the preset's ``patch_factor``,
``min_pixels`` and ``max_pixels`` with Qwen's smart_resize rule), 0..1000 of the image (``norm_1000``),
or pixels of the screenshot (an endpoint that sends it as it is). The policy reads it through the
preset's settings (convention, ``box_pairs``, prefill, proposer) and must give back that point.

How each seen size follows (smart_resize: round each side to the factor; above max_pixels, scale both
sides by sqrt(area / max_pixels) and floor to the factor):

* factor 28, max >= 8.3 MP (gta1, gui_g2, opencua, qwen2_5_vl, qwen2_vl, ui_tars_1_5): 2160/28 = 77.1
  -> 77*28 = 2156, 3840/28 = 137.1 -> 137*28 = 3836: 3836x2156 (8.27 MP, under every max);
* factor 32, max >= 10 MP (gui_owl_1_5, qwen3_vl, ui_venus_1_5): 2160/32 = 67.5 -> 68*32 = 2176 and
  3840 = 120*32: 3840x2176;
* holo1_5 (max 2560*1440 = 3,686,400): beta = sqrt(8,294,400 / 3,686,400) = 1.5; 1440/28 -> 51*28 =
  1428, 2560/28 -> 91*28 = 2548: 2548x1428;
* infigui_g1 (max 4,390,400): beta = sqrt(8,294,400 / 4,390,400) = 1.3745; 1571.5/28 -> 56*28 = 1568,
  2793.8/28 -> 99*28 = 2772: 2772x1568;
* mai_ui (factor 32, max 6,553,600): beta = 1.125; 1920/32 = 60 -> 1920, 3413.3/32 -> 106*32 = 3392:
  3392x1920;
* se_gui (max 7,049,280): beta = 1.0847; 1991.3/28 -> 71*28 = 1988, 3540.1/28 -> 126*28 = 3528:
  3528x1988;
* ui_venus_ground (max 4,800,000): beta = 1.3145; 1643.2/28 -> 58*28 = 1624, 2921.2/28 -> 104*28 =
  2912: 2912x1624.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from omegaconf import DictConfig
from paths import DATA
from PIL import Image

from gge.geometry import smart_resize
from gge.models.base import Generation, GenerationRequest
from gge.models.factory import preset_config, preset_names, preset_settings
from gge.models.policy import GroundingPolicy
from gge.models.registry import preset_request
from gge.types import Absent, Sample

SCREEN = (3840, 2160)
TARGET = (960.0, 1620.0)  # W/4, 3H/4

# the size each preset's model sees for a 3840x2160 screenshot (worked out in the module docstring)
SEEN: dict[str, tuple[int, int]] = {
    "gta1": (3836, 2156),
    "gui_g2": (3836, 2156),
    "gui_owl_1_5": (3840, 2176),
    "holo1_5": (2548, 1428),
    "infigui_g1": (2772, 1568),
    "mai_ui": (3392, 1920),
    "openai_api": (3840, 2160),  # no resize declared: the screenshot is sent as it is
    "opencua": (3836, 2156),
    "qwen2_5_vl": (3836, 2156),
    "qwen2_vl": (3836, 2156),
    "qwen3_vl": (3840, 2176),
    "se_gui": (3528, 1988),
    "ui_tars_1_5": (3836, 2156),
    "ui_venus_1_5": (3840, 2176),
    "ui_venus_ground": (2912, 1624),
}


def _tool_call(action: str, x: float, y: float) -> str:
    args = json.dumps({"action": action, "coordinate": [x, y]})
    return f'<tool_call>\n{{"name": "computer_use", "arguments": {args}}}\n</tool_call>'


# (preset, the model's raw answer after any prefill, the point in original pixels, computed by hand)
GOLDEN: list[tuple[str, str, tuple[float, float]]] = [
    # abs_resized (x, y) in 3836x2156: 959 * 3840 / 3836 = 960, 1617 * 2160 / 2156 = 1620
    ("gta1", "(959,1617)", TARGET),
    # abs_resized box [x1,y1,x2,y2] in 3836x2156, its centre (959, 1617)
    ("gui_g2", "[900,1600,1018,1634]", TARGET),
    # norm_1000 tool calls; a mouse_move then a left_click is the click: 250/1000*3840, 750/1000*2160
    ("gui_owl_1_5", _tool_call("mouse_move", 100, 100) + "\n" + _tool_call("left_click", 250, 750), TARGET),
    # abs_resized click_absolute in 2548x1428: 637 * 3840 / 2548 = 960, 1071 * 2160 / 1428 = 1620
    ("holo1_5", '{"action": "click_absolute", "x": 637, "y": 1071}', TARGET),
    # abs_resized point_2d after </think>, in 2772x1568: 693 * 3840 / 2772, 1176 * 2160 / 1568
    ("infigui_g1", '<think>the filter icon, top right</think>\n[{"point_2d": [693, 1176]}]', TARGET),
    # norm_1000 inside <answer> (the reasoning's own numbers are not read)
    (
        "mai_ui",
        "<grounding_think>it is left of (40, 40)</grounding_think>\n<answer>\n"
        '{"coordinate": [250,750]}\n</answer>',
        TARGET,
    ),
    # abs_resized pyautogui call in 3836x2156
    ("opencua", "pyautogui.click(x=959, y=1617)", TARGET),
    # the prefill opens the tool call; the model writes the rest, abs_resized in 3836x2156
    ("qwen2_5_vl", "959, 1617]}}\n</tool_call>", TARGET),
    # norm_1000 box tokens, the box's centre (250, 750)
    ("qwen2_vl", "<|box_start|>(200,700),(300,800)<|box_end|>", TARGET),
    # box_pairs: a server stripped the box tokens; the two pairs are still one box, not its first corner
    ("qwen2_vl", "(200,700),(300,800)", TARGET),
    # norm_1000 tool call
    ("qwen3_vl", _tool_call("left_click", 250, 750), TARGET),
    # abs_resized tool call in 3528x1988: 882 * 3840 / 3528 = 960, 1491 * 2160 / 1988 = 1620
    ("se_gui", _tool_call("left_click", 882, 1491), TARGET),
    # abs_resized start_box in 3836x2156
    (
        "ui_tars_1_5",
        "Thought: the filter icon.\nAction: click(start_box='<|box_start|>(959,1617)<|box_end|>')",
        TARGET,
    ),
    # norm_1000 [x,y]
    ("ui_venus_1_5", "[250,750]", TARGET),
    # abs_resized box in 2912x1624, centre (728, 1218): 728 * 3840 / 2912 = 960, 1218 * 2160 / 1624 = 1620
    ("ui_venus_ground", "[700,1200,756,1236]", TARGET),
    # gge's own endpoint prompt, single_pass: candidates in screenshot pixels, in order
    ("openai_api", "1. (960, 1620)\n2. (100, 200)", TARGET),
]


class Answering:
    """A backend that sees what the preset's processor would and answers one text (after the prefill)."""

    def __init__(self, m: DictConfig, answer: str) -> None:
        self.m = m
        self.answer = answer
        self.requests: list[GenerationRequest] = []

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        if self.m.backend == "openai" and not self.m.resize_factor:
            return (width, height)
        h, w = smart_resize(
            height,
            width,
            factor=int(self.m.patch_factor),
            min_pixels=int(self.m.min_pixels),
            max_pixels=int(self.m.max_pixels),
        )
        return (w, h)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.requests += requests
        return [Generation([(r.prefill or "") + self.answer]) for r in requests]

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        raise AssertionError("no critic is asked")

    def settings(self) -> dict[str, Any]:
        return {"backend": "answering"}


def _sample(size: tuple[int, int]) -> Sample:
    return Sample("screenspot_pro", "0", "", size, "open the filter settings", Absent())


def test_every_preset_has_a_golden_answer() -> None:
    assert {name for name, _, _ in GOLDEN} == set(preset_names()) == set(SEEN)


@pytest.mark.parametrize(
    ("name", "answer", "want"), GOLDEN, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(GOLDEN)]
)
def test_a_golden_answer_maps_to_the_original_pixel(
    name: str, answer: str, want: tuple[float, float]
) -> None:
    m = preset_config(name)
    backend = Answering(m, answer)
    policy = GroundingPolicy(backend, preset_settings(name, critic="none"))
    (proposal,) = policy.propose([_sample(SCREEN)], [Image.new("RGB", SCREEN, "white")])
    assert not proposal.format_error, proposal.raw
    (request,) = backend.requests
    assert request.image.size == SEEN[name]  # the preset's factor / min / max pixels give that size
    first = proposal.candidates[0].point
    assert first is not None
    assert first == pytest.approx(want, abs=1e-9)
    if name == "openai_api":  # single_pass: every candidate, in order
        assert [c.point for c in proposal.candidates] == [TARGET, (100.0, 200.0)]
    else:  # the official presets answer once
        assert len(proposal.candidates) == 1


# -- Qwen2.5-VL over 12.8 MP: the prompt states the uncapped size, the model sees the capped one ---------
BIG = (5120, 2880)  # 14.7 MP, over the processor's 12,845,056
# uncapped (prompt_max_pixels 99,999,999): 2880/28 = 102.9 -> 103*28 = 2884, 5120/28 = 182.9 -> 183*28 = 5124
BIG_PROMPT = (5124, 2884)
# capped: beta = sqrt(14,745,600 / 12,845,056) = 1.0714; 2688/28 = 96 -> 2688, 4778.7/28 -> 170*28 = 4760
BIG_SEEN = (4760, 2688)


def test_qwen2_5_vl_over_12_8_mp_states_the_uncapped_size() -> None:
    official = DATA / "official" / "qwen2_5_vl.json"
    case = json.loads(official.read_text(encoding="utf-8"))["cases"][0]
    assert case["image_size"] == [1920, 1080] and case["seen_size"] == [1932, 1092]
    seen, (spec,) = preset_request("qwen2_5_vl", case["benchmark"], case["instruction"], BIG)
    assert seen == BIG_SEEN
    system = "".join(part["text"] for part in spec.messages[0]["content"])
    official_system = "".join(part["text"] for part in case["messages"][0]["content"])
    # the official request at this size: the same text with the uncapped size as the screen's resolution
    assert "The screen's resolution is 1932x1092." in official_system
    assert system == official_system.replace("1932x1092", "{}x{}".format(*BIG_PROMPT))
    (image,) = [part for part in spec.messages[-1]["content"] if part["type"] == "image"]
    assert (image["width"], image["height"]) == BIG_SEEN


def test_qwen2_5_vl_over_12_8_mp_reads_answers_in_the_stated_frame() -> None:
    m = preset_config("qwen2_5_vl")
    backend = Answering(m, "2562, 1442]}}\n</tool_call>")  # the centre of the 5124x2884 screen it was told of
    policy = GroundingPolicy(backend, preset_settings("qwen2_5_vl"))
    (proposal,) = policy.propose([_sample(BIG)], [Image.new("RGB", BIG, "white")])
    (request,) = backend.requests
    assert request.image.size == BIG_SEEN
    # 2562 * 5120 / 5124 = 2560, 1442 * 2880 / 2884 = 1440 (read in the seen frame it would be 2755.8, 1545.0)
    assert proposal.candidates[0].point == pytest.approx((2560.0, 1440.0), abs=1e-9)


def test_a_small_screenshot_is_read_in_the_upscaled_frame() -> None:
    # ui_venus_ground's min_pixels (2,000,000) upscales a 1280x720 screenshot: beta = sqrt(2e6 / 921,600)
    # = 1.4731; 720 * beta / 28 = 37.9 -> 38*28 = 1064, 1280 * beta / 28 = 67.3 -> 68*28 = 1904 (ceiled)
    small = (1280, 720)
    backend = Answering(preset_config("ui_venus_ground"), "[466,788,486,808]")  # centre (476, 798)
    policy = GroundingPolicy(backend, preset_settings("ui_venus_ground"))
    (proposal,) = policy.propose([_sample(small)], [Image.new("RGB", small, "white")])
    assert backend.requests[0].image.size == (1904, 1064)
    # 476 * 1280 / 1904 = 320, 798 * 720 / 1064 = 540
    assert proposal.candidates[0].point == pytest.approx((320.0, 540.0), abs=1e-9)
