"""GroundingPolicy over a scripted backend (modes, coordinates, markers, critic); what policies declare."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import pytorch_lightning as pl
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import Benchmark, LoadedBenchmark
from gge.documents.records import encode
from gge.errors import GgeError
from gge.geometry import CONVENTIONS, from_original, smart_resize, to_original
from gge.models.base import (
    Backend,
    Generation,
    GenerationRequest,
    Policy,
    Predictor,
    answers_per_sample,
    capabilities,
    policy_analysis_options,
    settings_record,
)
from gge.models.markers import DEFAULT_COLORS, MarkerStyle, draw_markers
from gge.models.policy import SAMPLE_SEPARATOR, AdapterSettings, GroundingPolicy, Prompts
from gge.models.replay import parse_line
from gge.run.data import make_loader
from gge.run.evaluate import evaluate_batches, evaluate_samples
from gge.run.lightning import GroundingEvalModule, move_policy
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, Prediction, Sample


class _Bench(Benchmark):
    name = title = directory = "b"
    label_keys = ()
    tables = ()

    def load(self, root: Path, options: Any) -> LoadedBenchmark:
        raise NotImplementedError


class Scripted:
    """A backend answering from a queue of texts; records every request."""

    def __init__(
        self, answers: list[list[str]], seen: tuple[float, float] = (0.5, 0.5), yes: Sequence[float] = ()
    ):
        self.answers = list(answers)
        self.scale = seen
        self.yes = list(yes)
        self.generate_calls: list[list[GenerationRequest]] = []
        self.yes_calls: list[list[GenerationRequest]] = []

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        return round(width * self.scale[0]), round(height * self.scale[1])

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.generate_calls.append(list(requests))
        return [
            Generation(self.answers.pop(0), {"prompt_tokens": 10, "completion_tokens": 3}) for _ in requests
        ]

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        self.yes_calls.append(list(requests))
        return [self.yes.pop(0) for _ in requests]

    def settings(self) -> dict[str, Any]:
        return {"backend": "scripted"}


def _sample(i: int = 0, size: tuple[int, int] = (400, 200), box: Box | None = None) -> Sample:
    return Sample("b", str(i), "", size, f"click thing {i}", box or Box(100, 50, 140, 90))


def _img(size: tuple[int, int] = (400, 200)) -> Image.Image:
    return Image.new("RGB", size, "white")


def test_backend_protocol() -> None:
    assert isinstance(Scripted([]), Backend)
    assert isinstance(GroundingPolicy(Scripted([]), AdapterSettings()), Policy)


def test_single_pass_converts_from_the_seen_resolution() -> None:
    backend = Scripted([["1. (60, 35)\n2. (10, 10)\n3. (-1, -1)\n4. (1,1)\n5. (2,2)\n6. (3,3)"]])
    policy = GroundingPolicy(backend, AdapterSettings(convention="abs_resized", critic="none", k=5))
    (prop,) = policy.propose([_sample()], [_img()])
    assert [c.point for c in prop.candidates] == [(120.0, 70.0), (20.0, 20.0), None, (2.0, 2.0), (4.0, 4.0)]
    (req,) = backend.generate_calls[0]
    assert req.image.size == (200, 100)  # the model sees the resized image
    assert "5 different candidate" in req.messages[-1]["content"][1]["text"]
    assert req.num_sequences == 1 and not req.do_sample


@pytest.mark.parametrize(
    ("convention", "answer", "expected"),
    [
        ("norm_1000", "(500, 250)", (200.0, 50.0)),
        ("norm_999", "(999, 999)", (400.0, 200.0)),
        ("norm_1", "(0.25, 0.5)", (100.0, 100.0)),
        ("abs_original", "(123, 45)", (123.0, 45.0)),
        ("abs_resized", '{"bbox_2d": [50, 20, 70, 30]}', (120.0, 50.0)),
    ],
)
def test_conventions(convention: str, answer: str, expected: tuple[float, float]) -> None:
    policy = GroundingPolicy(Scripted([[answer]]), AdapterSettings(convention=convention, critic="none"))
    (prop,) = policy.propose([_sample()], [_img()])
    assert prop.candidates[0].point == pytest.approx(expected)


def test_sampling_one_call_greedy_first_and_unparsed_texts_keep_their_slot() -> None:
    texts = ["(10, 10)", "no idea", "click(x=20, y=30)", "[40, 50]", "(1, 2) (3, 4)"]
    backend = Scripted([texts, list(texts)])
    s = AdapterSettings(convention="abs_original", proposer="sampling", critic="none", k=5, temperature=0.7)
    policy = GroundingPolicy(backend, s)
    props = policy.propose([_sample(0), _sample(1)], [_img(), _img()])
    assert len(backend.generate_calls) == 1  # one call for the batch, one request per sample
    req = backend.generate_calls[0][0]
    assert req.num_sequences == 5 and req.do_sample and req.greedy_first and req.temperature == 0.7
    assert [c.point for c in props[0].candidates] == [(10, 10), None, (20, 30), (40, 50), (1, 2)]
    assert [c.parsed for c in props[0].candidates] == [True, False, True, True, True]
    assert not props[0].candidates[1].abstains and props[0].candidates[1].raw == "no idea"
    assert props[0].raw == SAMPLE_SEPARATOR.join(texts) and not props[0].format_error
    # the slot counts as a miss in proposer order, and in the report
    sample = _sample(0, box=Box(0, 0, 15, 15))
    r = score_sample(sample, Prediction("b", "0", props[0].candidates), k=5)
    assert r.hits == (True, False, False, False, True) and r.hit_at(1)
    entry = benchmark_metrics(_Bench(), [r], k=5, strategy="critic")
    assert entry["unparsed_candidates"] == 1 and entry["format_errors"] == 0
    rec = encode(r)
    assert rec["candidates"][1] == "unparsed"
    again = parse_line(rec, "x:1")
    assert [c.parsed for c in again.candidates] == [True, False, True, True, True]


def test_all_sampled_texts_unparsed_is_a_format_error() -> None:
    backend = Scripted([["?", "??", "???"]])
    s = AdapterSettings(convention="abs_original", proposer="sampling", critic="none", k=3)
    (prop,) = GroundingPolicy(backend, s).propose([_sample()], [_img()])
    assert prop.format_error and len(prop.candidates) == 3
    r = score_sample(_sample(), Prediction("b", "0", prop.candidates), k=3)
    assert r.format_error and not any(r.top1.values()) and not r.abstained("mean")


def test_greedy_and_format_error() -> None:
    backend = Scripted([["I cannot help with that"], ["(5, 5) (6, 6)"]])
    policy = GroundingPolicy(
        backend, AdapterSettings(convention="abs_original", proposer="greedy", critic="none")
    )
    bad, good = policy.propose([_sample(0), _sample(1)], [_img(), _img()])
    assert bad.format_error and bad.raw == "I cannot help with that"
    assert [(c.point, c.parsed) for c in bad.candidates] == [(None, False)]
    assert [c.point for c in good.candidates] == [(5.0, 5.0)]
    assert backend.generate_calls[0][0].num_sequences == 1


def test_listwise_critic_draws_markers_where_the_candidates_are() -> None:
    backend = Scripted([["(60, 35) (10, 10) (-1, -1) (150, 80)"], ["3, 1"]])
    style = MarkerStyle(numbered=False, size=0.02)
    policy = GroundingPolicy(backend, AdapterSettings(convention="abs_resized", k=4, markers=style))
    preds = policy.predict_images([_sample()], [_img()])
    (req,) = backend.generate_calls[1]
    assert req.image.size == (200, 100)
    # markers at the seen resolution, colours in candidate order (abstention not drawn)
    assert req.image.getpixel((60, 35)) == Image.new("RGB", (1, 1), DEFAULT_COLORS[0]).getpixel((0, 0))
    assert req.image.getpixel((150, 80)) == Image.new("RGB", (1, 1), DEFAULT_COLORS[2]).getpixel((0, 0))
    assert "3 numbered candidate" in req.messages[-1]["content"][1]["text"]
    (pred,) = preds
    # ranking "3, 1": third drawn point best, then first, then the rest in proposer order
    assert [c.score for c in pred.candidates] == [2.0, 1.0, None, 3.0]
    assert not pred.critic_format_error and pred.critic_raw == "3, 1"


class TakesMarks(Scripted):
    """A backend that declares it takes marked views (as an endpoint does)."""

    takes_marked_views = True


@pytest.mark.parametrize("critic", ["listwise", "pointwise"])
def test_a_backend_that_takes_marks_gets_the_view_and_its_marks_and_others_the_marked_image(
    critic: str,
) -> None:
    style = MarkerStyle(numbered=False, size=0.02)
    settings = AdapterSettings(convention="abs_resized", k=2, critic=critic, markers=style)
    answers, yes = [["(60, 35) (150, 80)"], ["2, 1"]], [0.3, 0.6]
    calls = []
    for backend in (
        Scripted([list(a) for a in answers], yes=list(yes)),
        TakesMarks([list(a) for a in answers], yes=list(yes)),
    ):
        GroundingPolicy(backend, settings).predict_images([_sample()], [_img()])
        calls.append(backend.generate_calls[1] if critic == "listwise" else backend.yes_calls[0])
    plain, marked = calls
    points = [[(60.0, 35.0), (150.0, 80.0)]] if critic == "listwise" else [[(60.0, 35.0)], [(150.0, 80.0)]]
    assert len(plain) == len(marked) == len(points)
    for pts, p, m in zip(points, plain, marked, strict=True):
        drawn = draw_markers(_img((200, 100)), pts, style)
        assert p.marks is None and p.image.tobytes() == drawn.tobytes()
        assert m.marks is not None and m.marks.image().tobytes() == drawn.tobytes()
        assert m.image.tobytes() == _img((200, 100)).tobytes() and m.marks.base is m.image


def test_listwise_unparseable_ranking_falls_back_to_proposer_order() -> None:
    backend = Scripted([["(60, 35) (10, 10)"], ["the first one looks fine"]])
    policy = GroundingPolicy(backend, AdapterSettings(convention="abs_resized", k=2))
    (pred,) = policy.predict_images([_sample()], [_img()])
    assert pred.critic_format_error
    assert [c.score for c in pred.candidates] == [2.0, 1.0]


def test_pointwise_critic_one_batched_call_per_sample() -> None:
    backend = Scripted([["(60, 35) (10, 10) (70, 40)"]], yes=[0.2, 0.9, 0.5])
    policy = GroundingPolicy(backend, AdapterSettings(convention="abs_resized", k=3, critic="pointwise"))
    (pred,) = policy.predict_images([_sample()], [_img()])
    assert len(backend.yes_calls) == 1 and len(backend.yes_calls[0]) == 3
    assert [c.score for c in pred.candidates] == [0.2, 0.9, 0.5]
    assert all(r.image.size == (200, 100) for r in backend.yes_calls[0])


def test_critic_skipped_with_fewer_than_two_points() -> None:
    backend = Scripted([["(60, 35)"], ["not present"]])
    policy = GroundingPolicy(backend, AdapterSettings(convention="abs_resized"))
    preds = policy.predict_images([_sample(0), _sample(1)], [_img(), _img()])
    assert len(backend.generate_calls) == 1  # no critic generation
    assert [c.score for c in preds[0].candidates] == [None]
    assert [c.point for c in preds[1].candidates] == [None]  # an abstention


def test_end_to_end_scoring_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "s.png"
    _img().save(path)
    sample = Sample("b", "0", str(path), (400, 200), "click", Box(100, 50, 140, 90))
    # candidate 2 hits; the critic ranks it first
    backend = Scripted([["(10, 10) (60, 35)"], ["2"]])
    policy = GroundingPolicy(backend, AdapterSettings(convention="abs_resized", k=5))
    (r,) = evaluate_samples(policy, [sample], k=5)
    assert r.hits == (False, True) and r.top1["critic"] and not r.top1["first"]
    rec = policy.settings()
    assert rec["adapter"]["convention"] == "abs_resized" and rec["backend"] == {"backend": "scripted"}
    assert set(rec["adapter"]["prompts"]["sha256"]) >= {"propose_k", "rank_list"}
    assert rec["calls"] == {"propose": 1, "rank": 1} and rec["usage"]["prompt_tokens"] == 20


def test_bad_settings() -> None:
    with pytest.raises(GgeError, match="coordinate convention"):
        AdapterSettings(convention="pixels")
    with pytest.raises(GgeError, match="proposer mode"):
        AdapterSettings(proposer="beam")
    with pytest.raises(GgeError, match=r"prompts\.propose_k: bad placeholder \{nope\}"):
        Prompts(propose_k="{nope}")
    with pytest.raises(GgeError, match=r"prompts\.variants\.osworld_g\.system: bad placeholder \{w\}"):
        Prompts(variants={"osworld_g": {"system": "{w}"}})


def test_markers_are_pure_and_sized_by_the_longer_side() -> None:
    img = _img((1000, 500))
    out = draw_markers(img, [(100, 100)], MarkerStyle(shape="square", size=0.02, numbered=False))
    assert img.getpixel((100, 100)) == (255, 255, 255)
    assert out.getpixel((100 + 15, 100)) != (255, 255, 255)  # radius 20 px = 0.02 * 1000
    assert out.getpixel((100 + 25, 100)) == (255, 255, 255)
    for shape in ("circle", "cross"):
        assert draw_markers(img, [(10, 10), (900, 400)], MarkerStyle(shape=shape)).size == (1000, 500)
    with pytest.raises(ValueError):
        MarkerStyle(shape="star")


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.sampled_from(CONVENTIONS),
    st.floats(0, 5000),
    st.floats(0, 5000),
    st.integers(1, 6000),
    st.integers(1, 4000),
    st.integers(1, 6000),
    st.integers(1, 4000),
)
def test_convention_round_trip(conv: str, x: float, y: float, w: int, h: int, sw: int, sh: int) -> None:
    back = to_original(*from_original(x, y, conv, (w, h), (sw, sh)), conv, (w, h), (sw, sh))
    assert back == pytest.approx((x, y), rel=1e-9, abs=1e-6)


@pytest.mark.parametrize(
    ("size", "kwargs", "expected"),
    [
        ((1280, 720), {}, (1288, 728)),
        ((6016, 3384), {"max_pixels": 12845056}, (4760, 2688)),
        ((20, 10), {}, (84, 56)),
        ((1920, 1080), {"factor": 32, "max_pixels": 16777216}, (1920, 1088)),
    ],
)
def test_smart_resize_known_values(
    size: tuple[int, int], kwargs: dict[str, int], expected: tuple[int, int]
) -> None:
    h, w = smart_resize(size[1], size[0], **kwargs)
    assert (w, h) == expected
    assert w % kwargs.get("factor", 28) == 0 and h % kwargs.get("factor", 28) == 0


def test_smart_resize_tall_image_floors_the_height_under_max_pixels() -> None:
    # 1000 x 3000 (w x h), factor 28, max 1_000_000 pixels. Rounded: h = 107 * 28 = 2996,
    # w = 36 * 28 = 1008; 2996 * 1008 = 3_019_968 > 1_000_000, so both sides are scaled by
    # beta = sqrt(3000 * 1000 / 1_000_000) = sqrt(3) = 1.7320508...
    # h: 3000 / 1.7320508 = 1732.05; / 28 = 61.86 -> floor 61 -> 1708 (rounding would give 1736)
    # w: 1000 / 1.7320508 = 577.35; / 28 = 20.62 -> floor 20 -> 560
    assert smart_resize(3000, 1000, factor=28, max_pixels=1_000_000) == (1708, 560)
    assert 1708 * 560 <= 1_000_000
    # the same image lying on its side: the branches swap roles
    assert smart_resize(1000, 3000, factor=28, max_pixels=1_000_000) == (560, 1708)
    # factor 32: h 3000 / 1.7320508 / 32 = 54.13 -> 54 * 32 = 1728; w 577.35 / 32 = 18.04 -> 576
    assert smart_resize(3000, 1000, factor=32, max_pixels=1_000_000) == (1728, 576)


def test_pre_resized_screenshot_still_gives_original_pixels() -> None:
    """The data pipeline may decode a smaller copy: points map to the sample's recorded size."""
    backend = Scripted([["(500, 250)"], ["(500, 250)"]])
    policy = GroundingPolicy(backend, AdapterSettings(convention="norm_1000", critic="none"))
    full, small = (policy.propose([_sample()], [_img(size)])[0] for size in ((400, 200), (200, 100)))
    assert full.candidates[0].point == small.candidates[0].point == (200.0, 50.0)


def test_marker_labels_stay_inside_the_image() -> None:
    img = _img((200, 100))
    style = MarkerStyle(size=0.03, colors=("#ff0000",), outline="#ff0000")
    out = draw_markers(img, [(196.0, 3.0)], style)
    red = [
        (x, y)
        for x in range(200)
        for y in range(100)
        if out.getpixel((x, y))[1] < 100 and out.getpixel((x, y))[0] > 200
    ]
    # the marker reaches x 190..200; the label is drawn to its left, not cut off at the right edge
    assert min(x for x, _ in red) < 185 and max(y for _, y in red) < 100


def test_critic_labels_are_one_based_like_the_markers() -> None:
    """``{labels}`` names the markers as drawn ("1", "2", "3"), and a ranking by those names picks them."""
    backend = Scripted([["(60, 35) (10, 10) (150, 80)"], ["3"]])
    prompts = Prompts(rank_list="Candidates {labels} of {k}: rank them. {instruction}")
    policy = GroundingPolicy(backend, AdapterSettings(convention="abs_resized", k=3, prompts=prompts))
    (pred,) = policy.predict_images([_sample()], [_img()])
    (req,) = backend.generate_calls[1]
    assert req.messages[-1]["content"][1]["text"] == "Candidates 1, 2, 3 of 3: rank them. click thing 0"
    # the critic's image is the view with markers named "1", "2", "3" (the names the prompt states)
    view = _img().resize((200, 100))
    style = MarkerStyle()
    drawn = draw_markers(view, [(60.0, 35.0), (10.0, 10.0), (150.0, 80.0)], style, labels=["1", "2", "3"])
    assert req.image.tobytes() == drawn.tobytes()
    assert [c.score for c in pred.candidates] == [2.0, 1.0, 3.0]  # "3" is the third candidate


def test_pointwise_labels_name_the_one_marker() -> None:
    backend = Scripted([["(60, 35) (10, 10)"]], yes=[0.3, 0.6])
    prompts = Prompts(judge_one="Marker {labels} ({k} shown). {instruction}")
    policy = GroundingPolicy(
        backend, AdapterSettings(convention="abs_resized", k=2, critic="pointwise", prompts=prompts)
    )
    policy.predict_images([_sample()], [_img()])
    assert {r.messages[-1]["content"][1]["text"] for r in backend.yes_calls[0]} == {
        "Marker 1 (1 shown). click thing 0"
    }


class OnlyPredict:
    """A policy of one's own: ``predict`` and nothing else (it opens its screenshots itself)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        out = []
        for s in samples:
            with Image.open(s.image_path) as im:  # a screenshot it reads itself
                w, h = im.size
            self.seen.append(s.id)
            out.append(Prediction(s.benchmark, s.id, (Candidate((w / 2, h / 2)),)))
        return out


def test_a_policy_with_only_predict_gets_every_default() -> None:
    policy = OnlyPredict()
    assert isinstance(policy, Predictor) and not isinstance(policy, Policy)
    caps = capabilities(policy)
    assert (caps.needs_images, caps.predict_images, caps.max_candidates, caps.device_modules) == (
        False,
        None,
        None,
        (),
    )
    assert (caps.proposer_mode, caps.critic_mode, caps.score_kind) == (None, None, None)
    assert settings_record(policy) == {"type": "OnlyPredict"} and answers_per_sample(policy, 4) == 4
    assert policy_analysis_options(policy) == {"exchangeable_from": None, "score_kind": None}
    move_policy(policy, torch.device("cpu"))  # nothing to move


def test_a_policy_with_only_predict_is_evaluated_through_the_loop(demo_suite: Path) -> None:
    """The loop and the Lightning module run it as they run gge's own policies (no screenshot decoded)."""

    bench = get_benchmark("screenspot_v2")
    samples = bench.load(demo_suite / bench.directory, bench.options_type()).samples[:5]
    policy = OnlyPredict()
    batches = make_loader(samples, batch_size=2, decode=capabilities(policy).needs_images)
    looped = evaluate_batches(policy, batches, k=5)
    assert [r.id for r in looped] == [s.id for s in samples] == policy.seen
    assert [r.hits for r in looped] == [r.hits for r in evaluate_samples(policy, samples, k=5)]
    module = GroundingEvalModule(policy, {"screenspot_v2": samples}, k=5, batch_size=2)
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False)
    trainer.predict(module, return_predictions=False)
    assert [(r.id, r.hits) for r in module.gathered] == [(r.id, r.hits) for r in looped]


def test_gge_s_policies_declare_every_capability(tmp_path: Path) -> None:
    from gge.models.demo import load_demo_policy
    from gge.models.replay import ReplayModel

    answers = tmp_path / "p.jsonl"
    answers.write_text('{"benchmark": "b", "id": "0", "candidates": [[1, 2], [3, 4]]}\n')
    greedy = GroundingPolicy(Scripted([]), AdapterSettings(proposer="greedy", critic="none"))
    sampling = GroundingPolicy(Scripted([]), AdapterSettings(proposer="sampling", critic="pointwise"))
    demo, replay = load_demo_policy(k=3), ReplayModel(answers)
    for policy in (greedy, sampling, demo, replay):
        assert isinstance(policy, Policy)
        members = [m for m in Policy.__dict__ if not m.startswith("_")]
        assert {"needs_images", "max_candidates", "settings", "device_modules"} <= set(members)
        assert all(hasattr(policy, m) for m in members), type(policy).__name__
    caps = [capabilities(p) for p in (greedy, sampling, demo, replay)]
    assert [c.needs_images for c in caps] == [True, True, True, False]
    assert [c.predict_images is not None for c in caps] == [True, True, True, False]
    assert [c.max_candidates for c in caps] == [1, None, None, 2]
    assert [(c.proposer_mode, c.critic_mode, c.score_kind) for c in caps] == [
        ("greedy", "none", None),
        ("sampling", "pointwise", None),
        (None, None, "score"),
        (None, None, None),
    ]
    assert [c.device_modules for c in caps] == [(), (), (), ()]  # a scripted backend has no torch model
    assert policy_analysis_options(sampling) == {"exchangeable_from": 1, "score_kind": "probability"}
    assert policy_analysis_options(demo) == {"exchangeable_from": None, "score_kind": "score"}
    assert settings_record(replay)["predictions"] == str(answers)


def test_a_transformers_backend_s_model_is_declared_once_for_the_device() -> None:
    class Torch(Scripted):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__([])
            self.model = model

    net = torch.nn.Linear(2, 2)
    shared = GroundingPolicy(Torch(net), AdapterSettings(), Torch(net))
    assert shared.device_modules() == (net,)
    other = torch.nn.Linear(2, 2)
    assert GroundingPolicy(Torch(net), AdapterSettings(), Torch(other)).device_modules() == (net, other)
    assert GroundingPolicy(Scripted([]), AdapterSettings(), Torch(other)).device_modules() == (other,)


def test_a_wrapper_forwarding_only_settings_and_backends_evaluates_as_the_policy() -> None:
    """What a wrapper of one's own forwards (settings_, backend) keeps K, pass@k and the device move."""

    class Wrapper:
        def __init__(self, inner: GroundingPolicy) -> None:
            self.inner, self.settings_, self.backend = inner, inner.settings_, inner.backend

        def predict(self, samples: Any) -> Any:
            return self.inner.predict(samples)

    class Torch(Scripted):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__([])
            self.model = model

    net = torch.nn.Linear(2, 2)
    greedy = Wrapper(GroundingPolicy(Torch(net), AdapterSettings(proposer="greedy", critic="none")))
    sampling = Wrapper(
        GroundingPolicy(Scripted([]), AdapterSettings(proposer="sampling", critic="pointwise"))
    )
    assert answers_per_sample(greedy, 5) == 1  # one greedy answer, whatever K the run asks
    assert answers_per_sample(sampling, 5) == 5
    assert policy_analysis_options(sampling) == {"exchangeable_from": 1, "score_kind": "probability"}
    assert policy_analysis_options(greedy) == {"exchangeable_from": None, "score_kind": None}
    assert capabilities(greedy).device_modules == (net,)
