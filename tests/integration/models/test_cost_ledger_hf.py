"""The transformers backend's cost ledger against the processor's and tokenizer's own counts.

Tiny real Qwen2.5-VL and Qwen3-VL checkpoints, overfitted to a known answer: every request's image
tokens are the ``<|image_pad|>`` ids of its own processed prompt (``prod(image_grid_thw) / merge**2``),
its input tokens that prompt's length, its output tokens the answer's tokens and the end token; in a
batch of mixed image sizes each request keeps its own counts, not the padded batch's. Batching in
order of image-token count changes no greedy answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

import torch
from PIL import Image
from tiny_checkpoints import boxes_image, build_tiny_qwen2_5_vl, build_tiny_qwen3_vl, overfit, user_turn

from gge.models.base import Generation, GenerationRequest
from gge.models.hf import TransformersBackend
from gge.models.hf_loading import load_model, load_processor
from gge.types import CostRecord

pytestmark = pytest.mark.slow

BUILDERS = {"qwen2_5_vl": build_tiny_qwen2_5_vl, "qwen3_vl": build_tiny_qwen3_vl}
MIN, PIXELS = 3136, 60_000
ANSWER = "(123,45)"
TRAINED = "Click the blue button. Answer with the point (x,y) in pixels."
OTHER = "open the filter settings of this long list please"


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


TRAINED_IMAGE = boxes_image(224, 224, boxes=3)  # a multiple of 28 and 32: a policy sends it as it is


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny checkpoint of each family that answers ANSWER to TRAINED on TRAINED_IMAGE."""
    kind = str(request.param)
    folder = BUILDERS[kind](tmp_path_factory.mktemp(kind) / kind, seed=0)
    overfit(folder, TRAINED_IMAGE, user_turn(TRAINED), ANSWER, min_pixels=MIN, max_pixels=PIXELS)
    return folder


class Reference:
    """The checkpoint's processor and model used directly, independent of the backend."""

    def __init__(self, folder: Path) -> None:
        self.processor = load_processor(folder, min_pixels=MIN, max_pixels=PIXELS)
        self.model = load_model(folder)
        self.tokenizer = self.processor.tokenizer
        self.end = self.tokenizer.convert_tokens_to_ids("<|im_end|>")

    def encode(self, request: GenerationRequest) -> Any:
        text = self.processor.apply_chat_template(
            request.messages, tokenize=False, add_generation_prompt=True
        )
        return self.processor(text=[text], images=[request.image], return_tensors="pt")

    def counts(self, request: GenerationRequest) -> tuple[int, int]:
        """(input tokens, image tokens) of the request processed alone."""
        enc = self.encode(request)
        ids = enc["input_ids"][0]
        pads = int((ids == self.tokenizer.convert_tokens_to_ids("<|image_pad|>")).sum())
        t, h, w = (int(v) for v in enc["image_grid_thw"][0])
        merge = self.processor.image_processor.merge_size
        assert pads == t * h * w // merge**2 > 0
        return len(ids), pads

    def greedy_length(self, request: GenerationRequest) -> int:
        """Tokens the model generates greedily for the request alone, up to and including its end."""
        enc = self.encode(request)
        with torch.no_grad():
            out = self.model.generate(**enc, max_new_tokens=request.max_new_tokens, do_sample=False)
        new = out[0, enc["input_ids"].shape[1] :].tolist()
        return new.index(self.end) + 1 if self.end in new else len(new)

    def yes(self, request: GenerationRequest) -> float:
        enc = self.encode(request)
        with torch.no_grad():
            logits = self.model(**enc).logits[0, -1].float()
        (yes,) = self.tokenizer.encode("Yes", add_special_tokens=False)
        return float(torch.softmax(logits, -1)[yes])


def _request(image: Image.Image, text: str, **kw: Any) -> GenerationRequest:
    return GenerationRequest(image, user_turn(text), **{"max_new_tokens": 12, **kw})


def _tokens(g: Generation) -> tuple[Any, ...]:
    c = g.cost
    assert c is not None
    return (c.input_tokens, c.image_tokens, c.output_tokens, c.cached_tokens)


def test_counts_are_the_processors_own_and_each_requests_own_in_a_batch(trained: Path) -> None:
    ref = Reference(trained)
    backend = TransformersBackend.from_pretrained(
        str(trained), min_pixels=MIN, max_pixels=PIXELS, batch_size=2
    )
    a = _request(TRAINED_IMAGE, TRAINED)
    b = _request(boxes_image(520, 130, seed=3, boxes=3), OTHER)  # another image size and prompt length
    (a_in, a_img), (b_in, b_img) = ref.counts(a), ref.counts(b)
    assert a_in != b_in and a_img != b_img  # the batch pads one of them
    answer = len(ref.tokenizer.encode(ANSWER, add_special_tokens=False)) + 1  # overfit ends with <|im_end|>

    ga, gb = backend.generate([a, b])
    assert ga.texts == [ANSWER]
    assert _tokens(ga) == (a_in, a_img, answer, 0)
    assert ref.greedy_length(a) == answer
    assert _tokens(gb) == (b_in, b_img, ref.greedy_length(b), 0)
    for g in (ga, gb):
        assert g.cost is not None and g.cost.stage == "propose" and g.cost.batch_size == 2
        assert g.cost.seconds is not None and g.cost.seconds > 0 and g.cost.prefill_seconds is None
    assert ga.usage["prompt_tokens"] == a_in and gb.usage["prompt_tokens"] == b_in  # kept as it was
    # equal to running each alone
    (alone_a,), (alone_b,) = backend.generate([a]), backend.generate([b])
    assert (_tokens(alone_a), _tokens(alone_b)) == (_tokens(ga), _tokens(gb))
    assert alone_a.cost is not None and alone_a.cost.batch_size == 1


def test_the_one_prefill_path_counts_the_prompt_it_shares(trained: Path) -> None:
    ref = Reference(trained)
    backend = TransformersBackend.from_pretrained(
        str(trained), min_pixels=MIN, max_pixels=PIXELS, batch_size=2
    )
    answer = len(ref.tokenizer.encode(ANSWER, add_special_tokens=False)) + 1
    sampled = {"num_sequences": 3, "do_sample": True, "temperature": 0.5}
    a = _request(TRAINED_IMAGE, TRAINED, greedy_first=True, **sampled)
    b = _request(boxes_image(520, 130, seed=3, boxes=3), OTHER, greedy_first=True, **sampled)
    (a_in, a_img), (b_in, b_img) = ref.counts(a), ref.counts(b)
    torch.manual_seed(0)
    ga, gb = backend.generate([a, b])
    assert ga.texts == [ANSWER] * 3  # greedy, then two draws of an answer held at p > 0.999
    # 3 continuations consume the prompt 3 times; the prompt but its last token is computed once, so
    # (3 - 1) * (input - 1) of them come from the cache, and the model computed one prompt and 2 tokens
    assert _tokens(ga) == (3 * a_in, 3 * a_img, 3 * answer, 2 * (a_in - 1))
    assert gb.cost is not None
    assert (gb.cost.input_tokens, gb.cost.image_tokens, gb.cost.cached_tokens) == (
        3 * b_in,
        3 * b_img,
        2 * (b_in - 1),
    )
    assert gb.cost.total_tokens == b_in + 2 + (gb.cost.output_tokens or 0)
    for g in (ga, gb):
        assert g.cost is not None and g.cost.seconds is not None and g.cost.prefill_seconds is not None
        assert 0 < g.cost.prefill_seconds < g.cost.seconds
    # plain sampling (transformers' num_return_sequences): every sequence computes its prompt, nothing shared
    torch.manual_seed(0)
    (plain,) = backend.generate([_request(TRAINED_IMAGE, TRAINED, **sampled)])
    assert plain.texts == [ANSWER] * 3
    assert _tokens(plain) == (3 * a_in, 3 * a_img, 3 * answer, 0)
    assert plain.cost is not None and plain.cost.prefill_seconds is None


def test_yes_probability_with_costs(trained: Path) -> None:
    ref = Reference(trained)
    backend = TransformersBackend.from_pretrained(
        str(trained), min_pixels=MIN, max_pixels=PIXELS, batch_size=4
    )
    requests = [
        _request(
            boxes_image(520, 130, seed=3, boxes=3), "Is the marked point on the target? Answer Yes or No."
        ),
        _request(TRAINED_IMAGE, "Is it on OK?"),
    ]
    probs, costs = backend.yes_probability_with_costs(requests, "Yes", "No")
    assert probs == backend.yes_probability(requests, "Yes", "No")
    assert probs == pytest.approx([ref.yes(r) for r in requests], abs=1e-5)
    for request, cost in zip(requests, costs, strict=True):
        assert (cost.input_tokens, cost.image_tokens) == ref.counts(request)
        assert (cost.stage, cost.output_tokens, cost.batch_size) == ("judge", 0, 2)
        assert cost.seconds is not None and cost.seconds > 0


def test_batches_in_order_of_image_tokens_change_no_answer(tmp_path: Path) -> None:
    folder = build_tiny_qwen2_5_vl(tmp_path / "tiny", seed=4)
    ref = Reference(folder)
    sizes = [(400, 300), (120, 90), (300, 200), (150, 100), (520, 130)]
    texts = ["ok", OTHER, "click the search button", "close", "open the file menu"]
    requests = [
        _request(boxes_image(w, h, seed=i, boxes=3), t, max_new_tokens=6)
        for i, ((w, h), t) in enumerate(zip(sizes, texts, strict=True))
    ]
    counts = [ref.counts(r) for r in requests]
    images = [img for _, img in counts]
    assert len(set(images)) == 4 and images[0] == images[2]  # mixed sizes, one tie

    def run(group: bool) -> tuple[list[Generation], list[tuple[int, int]]]:
        backend = TransformersBackend.from_pretrained(
            str(folder), min_pixels=MIN, max_pixels=PIXELS, batch_size=2, group_by_size=group
        )
        calls: list[tuple[int, int]] = []  # (rows, padded prompt length) of each generate call
        real = backend.model.generate

        def spy(**kw: Any) -> Any:
            calls.append(tuple(kw["input_ids"].shape))
            return real(**kw)

        backend.model.generate = spy  # type: ignore[method-assign]
        return backend.generate(requests), calls

    grouped, grouped_calls = run(True)
    plain, plain_calls = run(False)
    assert [g.texts for g in grouped] == [g.texts for g in plain]
    assert [g.truncated for g in grouped] == [g.truncated for g in plain]
    assert [_tokens(g) for g in grouped] == [_tokens(g) for g in plain]
    assert [_tokens(g)[:2] for g in grouped] == counts

    # chunks of two: by image tokens (ties by request order), or in request order
    by_size = sorted(range(len(requests)), key=lambda i: (counts[i][1], i))

    def padded(order: list[int]) -> list[tuple[int, int]]:
        chunks = [order[s : s + 2] for s in range(0, len(order), 2)]
        return [(len(c), max(counts[i][0] for i in c)) for c in chunks]

    assert grouped_calls == padded(by_size)
    assert plain_calls == padded(list(range(len(requests))))
    assert sum(r * n for r, n in grouped_calls) < sum(r * n for r, n in plain_calls)  # less padding


def test_a_grounding_policy_ledger_has_its_stages_slots_and_tokens(trained: Path) -> None:
    from gge.models.policy import AdapterSettings, GroundingPolicy, Prompts
    from gge.types import Box, Sample

    ref = Reference(trained)
    backend = TransformersBackend.from_pretrained(str(trained), min_pixels=MIN, max_pixels=PIXELS)
    asked: dict[str, list[GenerationRequest]] = {"propose": [], "judge": []}
    generate, judge = backend.generate, backend.yes_probability_with_costs

    def spy_generate(requests: list[GenerationRequest]) -> list[Generation]:
        asked["propose"] += requests
        return generate(requests)

    def spy_judge(requests: list[GenerationRequest], yes: str, no: str) -> Any:
        asked["judge"] += requests
        return judge(requests, yes, no)

    backend.generate = spy_generate  # type: ignore[method-assign]
    backend.yes_probability_with_costs = spy_judge  # type: ignore[method-assign]
    settings = AdapterSettings(
        proposer="sampling",
        k=3,
        critic="pointwise",
        temperature=0.5,
        max_new_tokens=12,
        prompts=Prompts(propose_one="{instruction}"),
    )
    sample = Sample("b", "0", "", TRAINED_IMAGE.size, TRAINED, Box(0, 0, 223, 223))
    torch.manual_seed(0)
    (pred,) = GroundingPolicy(backend, settings).predict_images([sample], [TRAINED_IMAGE])
    assert pred.raw.count(ANSWER) == 3  # the greedy answer and two draws: three points to judge
    (proposed,) = asked["propose"]
    assert proposed.image is TRAINED_IMAGE and proposed.greedy_first  # sent as it is, one prefill
    propose, *judges = pred.costs
    p_in, p_img = ref.counts(proposed)
    answer = len(ref.tokenizer.encode(ANSWER, add_special_tokens=False)) + 1
    assert (propose.stage, propose.slot, propose.candidates, propose.batch_size) == ("propose", 0, 3, 1)
    assert (propose.input_tokens, propose.image_tokens) == (3 * p_in, 3 * p_img)
    assert (propose.output_tokens, propose.cached_tokens) == (3 * answer, 2 * (p_in - 1))
    assert propose.prefill_seconds is not None and 0 < propose.prefill_seconds < (propose.seconds or 0)
    assert len(asked["judge"]) == len(judges) == 3
    for j, (request, cost) in enumerate(zip(asked["judge"], judges, strict=True)):
        assert (cost.stage, cost.slot, cost.candidates, cost.batch_size) == ("judge", j, 1, 3)
        assert (cost.input_tokens, cost.image_tokens) == ref.counts(request)
        assert cost.output_tokens == 0 and cost.seconds is not None and cost.seconds > 0


class _Clock:
    """A scripted clock: each reading is the next of ``times`` (what the backend's batches took is known)."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def test_each_request_takes_an_equal_share_of_its_batchs_time(trained: Path) -> None:
    backend = TransformersBackend.from_pretrained(
        str(trained), min_pixels=MIN, max_pixels=PIXELS, batch_size=2
    )
    same = [_request(TRAINED_IMAGE, TRAINED), _request(TRAINED_IMAGE, OTHER), _request(TRAINED_IMAGE, "x")]
    # greedy, 3 requests of one size in batches of 2: the first batch took 6 s (3 s each), the second 5 s
    backend._clock = _Clock(10.0, 16.0, 20.0, 25.0)  # type: ignore[method-assign]
    costs = [g.cost for g in backend.generate(same)]
    assert [(c.seconds, c.batch_size, c.prefill_seconds) for c in costs if c is not None] == [
        (3.0, 2, None),
        (3.0, 2, None),
        (5.0, 1, None),
    ]
    # the one-prefill path: the batch began at 0, its prefill took 0.5 to 2.5 (1 s each of 2), it ended at 8
    pair = [
        _request(TRAINED_IMAGE, t, num_sequences=3, do_sample=True, greedy_first=True)
        for t in (TRAINED, OTHER)
    ]
    backend._clock = _Clock(0.0, 0.5, 2.5, 8.0)  # type: ignore[method-assign]
    costs = [g.cost for g in backend.generate(pair)]
    assert [(c.seconds, c.prefill_seconds, c.batch_size) for c in costs if c is not None] == [
        (4.0, 1.0, 2)
    ] * 2
    # the pointwise critic: one forward of 3 requests in batches of 2, 0 -> 3 s and 3 -> 4 s
    backend._clock = _Clock(0.0, 3.0, 3.0, 4.0)  # type: ignore[method-assign]
    _, judged = backend.yes_probability_with_costs(same, "Yes", "No")
    assert [(c.seconds, c.batch_size) for c in judged] == [(1.5, 2), (1.5, 2), (1.0, 1)]


def test_a_backend_without_a_ledger_is_timed_by_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend of one's own that reports no cost: the policy times the call, an equal share each."""
    from gge.models import policy as policy_module
    from gge.models.policy import AdapterSettings, GroundingPolicy
    from gge.types import Box, Sample

    class Plain:
        def seen_size(self, w: int, h: int) -> tuple[int, int]:
            return (w, h)

        def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
            return [Generation(["(5, 5)"], {"prompt_tokens": 40, "completion_tokens": 4}) for _ in requests]

        def yes_probability(self, requests: list[GenerationRequest], yes: str, no: str) -> list[float]:
            return [0.5] * len(requests)

        def settings(self) -> dict[str, Any]:
            return {"backend": "plain"}

    readings = iter([100.0, 106.0])  # the propose call of 2 samples took 6 s
    monkeypatch.setattr(policy_module.time, "perf_counter", lambda: next(readings, 106.0))
    policy = GroundingPolicy(
        Plain(), AdapterSettings(convention="abs_original", proposer="greedy", critic="none")
    )
    samples = [Sample("b", str(i), "", (20, 20), "x", Box(0, 0, 9, 9)) for i in range(2)]
    preds = policy.predict_images(samples, [Image.new("RGB", (20, 20))] * 2)
    assert [p.costs for p in preds] == [
        (CostRecord("propose", input_tokens=40, output_tokens=4, seconds=3.0, batch_size=2, candidates=1),)
    ] * 2
