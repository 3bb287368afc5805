"""The zoom-in refine stage: its window, trigger and mapping rules by hand, and GroundingPolicy's stage.

The rules of :mod:`gge.models.refine` are checked against values worked out by hand; the policy's stage
runs over a scripted backend (what it sends, in one call, and how it reads the answer); the options are
checked where a run reads them (``validate``, ``AdapterSettings``) and the protocol line says cascade.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
from PIL import Image

from gge.errors import GgeError
from gge.models.base import Generation, GenerationRequest
from gge.models.factory import preset_settings
from gge.models.policy import AdapterSettings, GroundingPolicy, Prompts
from gge.models.protocol import protocol_statement
from gge.models.refine import Crop, crop_region, from_crop, should_refine, zoom_window
from gge.models.registry import kind_of
from gge.run.settings import parse_args, validate
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, Prediction, Refinement, Sample


# -- the window ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("point", "size", "zoom", "window"),
    [
        # 100 x 50 centred on (100, 50)
        ((100.0, 50.0), (200, 100), 2.0, (50, 25, 150, 75)),
        # 301/2 = 150.5 -> 151, 203/2 = 101.5 -> 102 (half up); 150.5 - 75.5 = 75, 101.5 - 51 = 50.5 -> 51
        ((150.5, 101.5), (301, 203), 2.0, (75, 51, 226, 153)),
        # right / top edge: 300 - 75.5 = 224.5 -> 225, beyond 301 - 151 = 150; 0 - 51 -> 0
        ((300.0, 0.0), (301, 203), 2.0, (150, 0, 301, 102)),
        # left / bottom edge: -75.5 -> -75 -> 0; 203 - 51 = 152, beyond 203 - 102 = 101
        ((0.0, 203.0), (301, 203), 2.0, (0, 101, 151, 203)),
        # zoom 3 on a full HD screen, centred
        ((960.0, 540.0), (1920, 1080), 3.0, (640, 360, 1280, 720)),
        # zoom 2.5: 400 x 133.2 -> 133; an off-screen pick is shifted inside
        ((-500.0, 1e9), (1000, 333), 2.5, (0, 200, 400, 333)),
        # a 3 x 3 image at zoom 4: 0.75 -> 1 pixel
        ((2.9, 0.2), (3, 3), 4.0, (2, 0, 3, 1)),
    ],
)
def test_the_window_is_w_over_zoom_centred_and_shifted_inside(
    point: tuple[float, float], size: tuple[int, int], zoom: float, window: tuple[int, int, int, int]
) -> None:
    assert zoom_window(point, size, zoom) == window
    crop = crop_region(point, size, size, zoom)  # decoded at its size: the window itself
    assert crop.box == window and crop.window == tuple(float(v) for v in window)
    assert crop.size == (window[2] - window[0], window[3] - window[1])


def test_a_screenshot_decoded_at_half_size_is_cut_in_its_own_pixels() -> None:
    # window (200, 0, 400, 100) of 400 x 200; decoded 200 x 100: the box is half of it
    crop = crop_region((310.0, 20.0), (400, 200), (200, 100), 2.0)
    assert crop == Crop((100, 0, 200, 50), (200.0, 0.0, 400.0, 100.0), (200, 100))
    assert from_crop((50.0, 25.0), crop) == (250.0, 25.0)


def test_a_screenshot_decoded_at_an_uneven_size_records_the_window_its_crop_shows() -> None:
    # 301 x 203 decoded as 150 x 101; the window (75, 51, 226, 153) scaled: 37.375 -> 37, 112.625 -> 113,
    # 25.37 -> 25, 76.12 -> 76; back in original pixels: 37 * 301 / 150, 113 * 301 / 150, 25 * 203 / 101 ...
    crop = crop_region((150.5, 101.5), (301, 203), (150, 101), 2.0)
    assert crop.box == (37, 25, 113, 76)
    x1, x2, y1, y2 = 37 * 301 / 150, 113 * 301 / 150, 25 * 203 / 101, 76 * 203 / 101
    assert crop.window == pytest.approx((x1, y1, x2, y2), abs=1e-12)
    assert crop.size == (153, 103)  # 152.51 and 102.50 rounded half up
    # the crop's far corner (its original size) is the window's far corner
    assert from_crop((153.0, 103.0), crop) == pytest.approx((x2, y2), abs=1e-12)
    assert from_crop((0.0, 0.0), crop) == pytest.approx((x1, y1), abs=1e-12)


# -- the trigger -----------------------------------------------------------------------------------
def test_disagree_is_another_point_strictly_beyond_the_radius() -> None:
    pick, other = Candidate((0.0, 0.0), 0.9), Candidate((30.0, 40.0), 0.1)  # 50 px apart
    size = (60, 80)  # diagonal 100: the boundary is radius 0.5
    cands = [pick, other, Candidate(None), Candidate(None, parsed=False)]
    assert should_refine("disagree", pick, cands, size, radius=0.49, threshold=0.0)
    assert not should_refine("disagree", pick, cands, size, radius=0.5, threshold=0.0)
    assert not should_refine("disagree", pick, [pick], size, radius=0.0, threshold=0.0)  # alone
    # the pick itself never disagrees, an equal point elsewhere in the list neither
    twin = Candidate((0.0, 0.0), 0.2)
    assert not should_refine("disagree", pick, [pick, twin], size, radius=0.0, threshold=0.0)
    assert should_refine("always", pick, [pick], size, radius=0.0, threshold=0.0)


def test_low_score_is_a_critic_score_under_the_threshold_or_no_score() -> None:
    def low(score: float | None) -> bool:
        c = Candidate((1.0, 1.0), score)
        return should_refine("low_score", c, [c], (10, 10), radius=0.0, threshold=0.5)

    assert low(0.49) and not low(0.5) and not low(0.9)
    assert low(None)  # nothing vouched for the pick: refined
    assert low(float("nan"))


# -- the options -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["model.refine=crop"], "unknown model.refine 'crop'"),
        (["model.refine=zoom", "model.refine_zoom=1"], "model.refine_zoom must be a number above 1"),
        (["model.refine=zoom", "model.refine_when=sometimes"], "unknown model.refine_when 'sometimes'"),
        (["model.refine=zoom", "model.refine_radius=-0.1"], "model.refine_radius must be a fraction >= 0"),
        (["model.refine=zoom", "model.refine_when=low_score"], "model.refine_when=low_score reads"),
        (
            ["model.refine=zoom", "model.refine_when=low_score", "model.critic=listwise"],
            "model.critic=listwise gives none",
        ),
    ],
)
def test_bad_refine_options_stop_the_run_naming_the_key(args: list[str], named: str) -> None:
    with pytest.raises(GgeError) as e:
        validate(parse_args(["model=qwen2_5_vl", "ckpt=/nowhere", *args]))
    assert named in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(GgeError, match=r"model\.refine"):  # and so do settings built in code
        preset_settings("qwen2_5_vl", **dict(a.removeprefix("model.").split("=") for a in args))


def test_low_score_with_a_pointwise_critic_is_accepted() -> None:
    zoom = ["model.refine=zoom", "model.refine_when=low_score", "model.critic=pointwise"]
    validate(parse_args(["model=qwen2_5_vl", "ckpt=/x", *zoom]))


@pytest.mark.parametrize("args", [["model=demo"], ["model=replay", "model.predictions=/p.jsonl"]])
def test_a_model_that_cannot_refine_refuses_model_refine(args: list[str]) -> None:
    cfg = parse_args([*args, "model.refine=zoom"])
    with pytest.raises(GgeError) as e:
        validate(cfg)
    assert str(e.value).startswith(f"model.refine=zoom: model={cfg.model.name} ")
    assert "set model.refine=none" in str(e.value)


def test_the_settings_record_the_refine_options() -> None:
    s = preset_settings("qwen3_vl", refine="zoom", refine_zoom=3.0, refine_when="disagree", refine_radius=0.1)
    rec = s.record()
    assert (rec["refine"], rec["refine_zoom"], rec["refine_when"], rec["refine_radius"]) == (
        "zoom",
        3.0,
        "disagree",
        0.1,
    )
    assert rec["refine_threshold"] == 0.5
    assert AdapterSettings().record()["refine"] == "none"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["model=qwen2_5_vl", "model.refine=zoom"], "gge cascade (zoom x2 on first)"),
        (
            ["model=qwen2_5_vl", "model.refine=zoom", "model.critic=pointwise"],
            "gge cascade (zoom x2 on critic)",
        ),
        (
            ["model=qwen3_vl", "model.refine=zoom", "model.refine_zoom=2.5"],
            "gge cascade (zoom x2.5 on first)",
        ),
        (["model=openai_api", "model.refine=zoom", "model.refine_zoom=3"], "gge cascade (zoom x3 on critic)"),
    ],
)
def test_the_protocol_line_of_a_cascade(args: list[str], line: str) -> None:
    m = parse_args(args).model
    expected = f"{line}: not comparable to published numbers"
    assert protocol_statement(m) == expected and kind_of(m).protocol(m) == expected
    # the same preset without the stage is the official protocol again (or gge's own)
    m.refine = "none"
    assert "cascade" not in protocol_statement(m)


# -- the policy's stage ----------------------------------------------------------------------------
class Scripted:
    """A backend answering from a queue of texts (one list per request); records every call."""

    def __init__(self, answers: list[list[str]], yes: Sequence[float] = (), truncated: bool = False) -> None:
        self.answers = list(answers)
        self.yes = list(yes)
        self.truncated = truncated
        self.generate_calls: list[list[GenerationRequest]] = []

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        return round(width * 0.5), round(height * 0.5)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.generate_calls.append(list(requests))
        out = []
        for _ in requests:
            texts = self.answers.pop(0)
            cut = [self.truncated] * len(texts) if len(texts) == 1 else []
            out.append(Generation(texts, {"prompt_tokens": 10, "completion_tokens": 3}, truncated=cut))
        return out

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        return [self.yes.pop(0) for _ in requests]

    def settings(self) -> dict[str, Any]:
        return {"backend": "scripted"}


PROMPTS = Prompts(
    system="S {width}x{height}", propose_one="find {instruction} on {width}x{height}", prefill="at ("
)


def _settings(**kw: Any) -> AdapterSettings:
    base: dict[str, Any] = {
        "convention": "abs_resized",
        "proposer": "sampling",
        "critic": "pointwise",
        "k": 3,
        "refine": "zoom",
        "prompts": PROMPTS,
        "max_new_tokens": 40,
    }
    return AdapterSettings(**{**base, **kw})


def _noise(size: tuple[int, int], seed: int = 0) -> Image.Image:
    rng = random.Random(seed)
    image = Image.new("RGB", size)
    image.putdata(
        [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(size[0] * size[1])]
    )
    return image


def _sample(i: int, size: tuple[int, int] = (400, 200)) -> Sample:
    return Sample("b", str(i), "", size, f"thing {i}", Box(240, 170, 260, 190))


def test_the_stage_asks_the_family_s_request_on_the_crop_and_maps_the_answer_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # sample 0: candidates (100, 50), (300, 150), (20, 20) (abs_resized in 200 x 100); the critic picks
    # the second (0.9); window 200 x 100 around (300, 150): x1 = 200, y1 = 100 (clamped), the crop
    # 200 x 100 seen at 100 x 50; its answer (25, 40) is (50, 80) in the crop, (250, 180) in the screenshot.
    # sample 1: nothing parseable, no pick: not refined. sample 2: one candidate (50, 50) -> (100, 100),
    # unscored (a lone point): window (0, 50, 200, 150); an unparseable answer.
    backend = Scripted(
        [
            ["at (50, 25)", "at (150, 75)", "at (10, 10)"],
            ["no", "idea", "here"],
            ["at (50, 50)", "?", "?"],
            ["at (25, 40)"],
            ["nowhere"],
        ],
        yes=[0.2, 0.9, 0.1],
    )
    policy = GroundingPolicy(backend, _settings())
    images = [_noise((400, 200), seed) for seed in range(3)]
    # a scripted clock: the policy times each call of a backend without a ledger, an equal share each;
    # the proposals (3 requests) take 6 s, the pointwise judgements (sample 0's 3 candidates) 3 s, the
    # refine call (2 requests) 3 s
    readings = iter([0.0, 6.0, 6.0, 9.0, 10.0, 13.0])
    monkeypatch.setattr("gge.models.policy.time.perf_counter", lambda: next(readings))
    preds = policy.predict_images([_sample(0), _sample(1), _sample(2)], images)
    monkeypatch.undo()
    assert next(readings, None) is None  # every reading used: no call timed twice or left out

    assert len(backend.generate_calls) == 2  # the proposals, then every refine request in one call
    first, third = backend.generate_calls[1]
    expected = images[0].crop((200, 100, 400, 200)).resize((100, 50), Image.Resampling.BICUBIC)
    assert first.image.size == (100, 50) and first.image.tobytes() == expected.tobytes()
    assert first.messages == [
        {"role": "system", "content": [{"type": "text", "text": "S 100x50"}]},
        {
            "role": "user",
            "content": [
                {"type": "image", "width": 100, "height": 50},
                {"type": "text", "text": "find thing 0 on 100x50"},
            ],
        },
    ]
    assert first.prefill == "at (" and first.num_sequences == 1 and not first.do_sample
    assert first.max_new_tokens == 40
    expected = images[2].crop((0, 50, 200, 150)).resize((100, 50), Image.Resampling.BICUBIC)
    assert third.image.tobytes() == expected.tobytes()

    zero, one, two = preds
    assert zero.refine == Refinement(
        "critic", True, (250.0, 180.0), (200.0, 100.0, 400.0, 200.0), "at (25, 40)"
    )
    assert one.refine == Refinement(triggered=False)
    assert two.refine == Refinement(
        "critic", True, None, (0.0, 50.0, 200.0, 150.0), "nowhere", format_error=True
    )
    # the ledger: one refine request each, about the whole sample (candidates 0), in a batch of 2
    for pred in (zero, two):
        refine = [c for c in pred.costs if c.stage == "refine"]
        assert len(refine) == 1 and pred.costs[-1] is refine[0]
        (cost,) = refine
        assert (cost.input_tokens, cost.output_tokens, cost.batch_size, cost.slot, cost.candidates) == (
            10,
            3,
            2,
            0,
            0,
        )
        assert cost.seconds == 1.5  # 3 s of the refine call over its 2 requests
    assert [(c.stage, c.seconds) for c in zero.costs if c.stage != "refine"] == [
        ("propose", 2.0),
        *[("judge", 1.0)] * 3,
    ]
    assert [(c.stage, c.seconds) for c in two.costs if c.stage != "refine"] == [("propose", 2.0)]
    assert not [c for c in one.costs if c.stage == "refine"]
    assert policy.calls == {"propose": 1, "rank": 1, "refine": 1}
    # scored: the refined pick is its own strategy, the critic's stays
    result = score_sample(_sample(0), zero, k=3)
    assert result.picks["refined"] is not None and result.picks["refined"].point == (250.0, 180.0)
    assert result.top1["refined"] and not result.top1["critic"]


def test_a_screenshot_decoded_smaller_is_cropped_in_its_pixels_and_mapped_in_the_original_s() -> None:
    # sample 400 x 200 decoded at 200 x 100, seen at 100 x 50: "(75, 40)" is (300, 160) of the original.
    # window (200, 100, 400, 200) -> box (100, 50, 200, 100) of the decoded image, 100 x 50, seen 50 x 25;
    # the crop's original size 200 x 100: its answer (10, 5) of 50 x 25 is (40, 20), at (240, 120).
    backend = Scripted([["at (75, 40)"], ["at (10, 5)"]])
    policy = GroundingPolicy(backend, _settings(proposer="greedy", critic="none", k=1))
    decoded = _noise((200, 100))
    (pred,) = policy.predict_images([_sample(0)], [decoded])
    (request,) = backend.generate_calls[1]
    expected = decoded.crop((100, 50, 200, 100)).resize((50, 25), Image.Resampling.BICUBIC)
    assert request.image.tobytes() == expected.tobytes()
    assert request.messages[-1]["content"][1]["text"] == "find thing 0 on 50x25"
    assert pred.refine == Refinement(
        "critic", True, (240.0, 120.0), (200.0, 100.0, 400.0, 200.0), "at (10, 5)"
    )


def test_a_stated_screen_size_is_the_crop_s_original_size() -> None:
    """prompt_max_pixels: the prompt states smart_resize of the crop's original size, not the view's."""
    backend = Scripted([["at (150, 50)"], ["at (56, 28)"]])
    policy = GroundingPolicy(
        backend, _settings(proposer="greedy", critic="none", k=1, prompt_max_pixels=10**8, patch_factor=28)
    )
    # the stated size of 400 x 200 is 392 x 196 (multiples of 28): (150, 50) -> (153.06, 51.02)
    (pred,) = policy.predict_images([_sample(0)], [_noise((400, 200))])
    # window 200 x 100 around it: x1 = 153.06 - 100 -> 53, y1 = 51.02 - 50 -> 1; stated 196 x 112
    (request,) = backend.generate_calls[1]
    assert request.messages[-1]["content"][1]["text"] == "find thing 0 on 196x112"
    assert request.image.size == (100, 50)
    assert pred.refine is not None and pred.refine.window == (53.0, 1.0, 253.0, 101.0)
    # (56, 28) of 196 x 112 is (57.14, 25) of the 200 x 100 crop
    assert pred.refine.point == pytest.approx((53 + 56 * 200 / 196, 1 + 28 * 100 / 112), abs=1e-9)


def test_a_cut_answer_is_a_format_error_and_the_base_pick_stands() -> None:
    backend = Scripted([["at (10, 5)"]], truncated=True)
    policy = GroundingPolicy(backend, _settings(proposer="greedy", critic="none", k=1))
    base = Prediction("b", "0", (Candidate((300.0, 160.0)),))
    (pred,) = policy.refine([_sample(0)], [_noise((400, 200))], [base])
    assert pred.refine == Refinement("critic", True, None, (200.0, 100.0, 400.0, 200.0), "at (10, 5)", True)
    assert score_sample(_sample(0), pred, k=1).picks["refined"] == base.candidates[0]


def test_a_refusal_on_the_crop_is_no_point_and_no_format_error() -> None:
    """An answer that says the target is not there parses (an abstention): the base pick stands."""
    backend = Scripted([["not found"]])
    policy = GroundingPolicy(backend, _settings(proposer="greedy", critic="none", k=1))
    base = Prediction("b", "0", (Candidate((300.0, 160.0)),))
    (pred,) = policy.refine([_sample(0)], [_noise((400, 200))], [base])
    assert pred.refine == Refinement("critic", True, None, (200.0, 100.0, 400.0, 200.0), "not found")
    assert pred.refine.point is None and not pred.refine.format_error
    assert score_sample(_sample(0), pred, k=1).picks["refined"] == base.candidates[0]


def test_an_abstaining_or_missing_pick_is_not_refined_and_costs_nothing() -> None:
    backend = Scripted([])
    policy = GroundingPolicy(backend, _settings())
    preds = [
        Prediction("b", "0", (Candidate(None), Candidate((1.0, 1.0)))),  # the first abstains, unscored
        Prediction("b", "1", ()),
        Prediction("b", "2", (Candidate(None, parsed=False),)),
    ]
    out = policy.refine([_sample(i) for i in range(3)], [_noise((400, 200))] * 3, preds)
    assert [p.refine for p in out] == [Refinement(triggered=False)] * 3
    assert not backend.generate_calls and all(p.costs == () for p in out)


def test_the_trigger_decides_which_samples_are_asked() -> None:
    backend = Scripted([["at (5, 5)"]])
    policy = GroundingPolicy(backend, _settings(refine_when="disagree", refine_radius=0.1))
    near = (Candidate((100.0, 100.0), 0.9), Candidate((120.0, 100.0), 0.1))  # 20 px: under 0.1 x 447
    far = (Candidate((100.0, 100.0), 0.9), Candidate((200.0, 100.0), 0.1))  # 100 px: beyond
    preds = [Prediction("b", "0", near), Prediction("b", "1", far)]
    out = policy.refine([_sample(0), _sample(1)], [_noise((400, 200))] * 2, preds)
    assert [len(c) for c in backend.generate_calls] == [1]
    assert out[0].refine == Refinement(triggered=False)
    assert (
        out[1].refine is not None
        and out[1].refine.triggered
        and out[1].refine.window == (0.0, 50.0, 200.0, 150.0)
    )
    # low_score: 0.9 is not under 0.5, 0.3 is
    backend = Scripted([["at (5, 5)"]])
    policy = GroundingPolicy(backend, _settings(refine_when="low_score", refine_threshold=0.5))
    sure = (Candidate((100.0, 100.0), 0.9), Candidate((120.0, 100.0), 0.1))
    unsure = (Candidate((100.0, 100.0), 0.3), Candidate((120.0, 100.0), 0.1))
    out = policy.refine(
        [_sample(0), _sample(1)],
        [_noise((400, 200))] * 2,
        [Prediction("b", "0", sure), Prediction("b", "1", unsure)],
    )
    assert [p.refine is not None and p.refine.triggered for p in out] == [False, True]


def test_without_the_stage_nothing_changes() -> None:
    backend = Scripted([["at (75, 40)"]])
    policy = GroundingPolicy(backend, _settings(proposer="greedy", critic="none", k=1, refine="none"))
    (pred,) = policy.predict_images([_sample(0)], [_noise((400, 200))])
    assert pred.refine is None and len(backend.generate_calls) == 1
    assert policy.calls == {"propose": 1, "rank": 0}
