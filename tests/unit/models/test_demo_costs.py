"""The demo policy's cost ledger: a propose and a judge request per sample, and unchanged answers."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from PIL import Image, ImageDraw

from gge.models.demo import DemoNet, DemoPolicy, _candidates, make_view
from gge.types import Box, Prediction, Sample


@pytest.fixture
def policy() -> DemoPolicy:
    torch.manual_seed(0)
    return DemoPolicy(DemoNet(), k=4, seed=3)


def _shots() -> tuple[list[Sample], list[Image.Image]]:
    sizes = [(640, 360), (1920, 1080), (360, 780)]
    samples, images = [], []
    for i, size in enumerate(sizes):
        image = Image.new("RGB", size, "white")
        ImageDraw.Draw(image).rectangle((40 + 30 * i, 20, 200, 90), fill=(26, 115, 232))
        samples.append(Sample("b", str(i), "", size, f"Click the blue button {i}", Box(40, 20, 200, 90)))
        images.append(image)
    return samples, images


def _reference(policy: DemoPolicy, samples: list[Sample], images: list[Image.Image]) -> list[Prediction]:
    """The predictions computed from the networks directly, as the policy did before its ledger."""
    views = [make_view(im, s.image_size) for s, im in zip(samples, images, strict=True)]
    q = policy.net.instruction([s.instruction for s in samples])
    out = []
    with torch.no_grad():
        for i, (sample, view) in enumerate(zip(samples, views, strict=True)):
            points = policy._propose_one(sample, view, q[i : i + 1])
            scores = policy.net.critic_scores(view, points, q[i : i + 1]).tolist()
            cands = _candidates(view, points, scores)
            out.append(Prediction(sample.benchmark, sample.id, cands, raw=" ".join(c.raw for c in cands)))
    return out


def test_each_prediction_records_a_propose_and_a_judge_request(policy: DemoPolicy) -> None:
    samples, images = _shots()
    preds = policy.predict_images(samples, images)
    for pred in preds:
        propose, judge = pred.costs
        assert (propose.stage, propose.slot, propose.candidates, propose.batch_size) == ("propose", 0, 4, 3)
        assert (judge.stage, judge.slot, judge.candidates, judge.batch_size) == ("judge", 0, 4, 1)
        for cost in pred.costs:  # not a token model
            assert (cost.input_tokens, cost.image_tokens, cost.output_tokens, cost.cached_tokens) == (
                None,
            ) * 4
            assert cost.seconds is not None and cost.seconds > 0 and cost.prefill_seconds is None
    # the answers are bit for bit those of the networks run directly
    assert [replace(p, costs=()) for p in preds] == _reference(policy, samples, images)


def test_propose_and_rank_record_their_own_requests(policy: DemoPolicy) -> None:
    samples, images = _shots()
    proposals = policy.propose(samples, images)
    judgements = policy.rank(samples, images, proposals)
    reference = _reference(policy, samples, images)
    for prop, judged, ref in zip(proposals, judgements, reference, strict=True):
        assert [c.point for c in prop.candidates] == [c.point for c in ref.candidates]
        assert list(judged.scores) == pytest.approx([c.score for c in ref.candidates], abs=1e-5)
        ((p,), (j,)) = prop.costs, judged.costs
        assert (p.stage, p.slot, p.candidates, p.batch_size) == ("propose", 0, 4, 3)
        assert (j.stage, j.slot, j.candidates, j.batch_size) == ("judge", 0, 4, 1)
        assert p.seconds is not None and p.seconds > 0 and j.seconds is not None and j.seconds > 0
