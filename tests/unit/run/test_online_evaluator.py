"""OnlineEvaluator, as the trainer callbacks use it: settings, the module's own modes, one-answer runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from gge.errors import GgeError
from gge.models.base import Generation, GenerationRequest, answers_per_sample
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.run.online import OnlineEvaluator
from gge.types import Candidate, Prediction, Sample


class Grounder(torch.nn.Module):
    """A model with a frozen part; clicks each box's centre and notes the modes it was asked in."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.vision = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
        self.head = torch.nn.Linear(2, 2)
        self.fail = fail
        self.asked: list[tuple[bool, bool, bool, bool]] = []

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        self.asked.append((self.training, self.vision.training, self.head.training, torch.is_grad_enabled()))
        if self.fail:
            raise RuntimeError("out of memory")
        out = []
        for s in samples:
            box = s.region.pixel_box()
            centre = (0.0, 0.0) if box is None else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            out.append(Prediction(s.benchmark, s.id, (Candidate(centre),)))
        return out


def _modes(m: torch.nn.Module) -> dict[str, bool]:
    return {name: sub.training for name, sub in m.named_modules()}


def _evaluator(demo: Path, **kw: Any) -> OnlineEvaluator:
    return OnlineEvaluator(["screenspot_v2"], data_root=demo, max_samples_per_benchmark=4, batch_size=2, **kw)


@pytest.mark.parametrize("mode", ["train", "eval", "mixed"])
def test_the_module_gets_its_own_modes_back(demo_suite: Path, mode: str) -> None:
    model = Grounder()
    model.train(mode != "eval")
    if mode == "mixed":  # a frozen vision tower kept in eval mode inside a training model
        model.vision.eval()
    before = _modes(model)
    assert (mode == "mixed") == (len(set(before.values())) == 2)
    evaluation = _evaluator(demo_suite).run(model, module=model)
    assert model.asked and all(a == (False, False, False, False) for a in model.asked)  # eval, no grad
    assert _modes(model) == before
    assert evaluation.entries["screenspot_v2"]["top1"] == 100.0  # every centre hits: it did run


@pytest.mark.parametrize("mode", ["train", "eval", "mixed"])
def test_the_module_gets_its_own_modes_back_when_the_policy_raises(demo_suite: Path, mode: str) -> None:
    model = Grounder(fail=True)
    model.train(mode != "eval")
    if mode == "mixed":
        model.vision.eval()
    before = _modes(model)
    with pytest.raises(RuntimeError, match="out of memory"):
        _evaluator(demo_suite).run(model, module=model)
    assert model.asked == [(False, False, False, False)]
    assert _modes(model) == before


# -- one-answer runs --------------------------------------------------------------------------------
class Answers:
    """A backend that answers each instruction with a fixed point (in screenshot pixels)."""

    def __init__(self, points: dict[str, tuple[float, float]]) -> None:
        self.points = points

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        return (width, height)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        out = []
        for r in requests:
            text = str(r.messages[-1]["content"][-1]["text"])
            x, y = next(p for instruction, p in self.points.items() if instruction in text)
            out.append(Generation([f"({x}, {y})"] * r.num_sequences))
        return out

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        raise AssertionError("no critic")

    def settings(self) -> dict[str, Any]:
        return {"backend": "answers"}


def _half_right(ev: OnlineEvaluator) -> tuple[Answers, float]:
    """Box centres for every other sample, (0, 0) (in no box) for the rest; the Top-1 that gives."""
    samples = ev.select()["screenspot_v2"]
    assert len({s.instruction for s in samples}) == len(samples) == 4
    points: dict[str, tuple[float, float]] = {}
    hits = 0
    for i, s in enumerate(samples):
        x1, y1, x2, y2 = s.region.pixel_box()  # type: ignore[misc]
        assert x1 > 0 and y1 > 0  # (0, 0) misses every box
        points[s.instruction] = ((x1 + x2) / 2, (y1 + y2) / 2) if i % 2 == 0 else (0.0, 0.0)
        hits += i % 2 == 0
    return Answers(points), 100.0 * hits / len(samples)


def test_a_greedy_policy_is_scored_as_a_one_answer_run(demo_suite: Path) -> None:
    ev = _evaluator(demo_suite)
    backend, top1 = _half_right(ev)
    assert top1 == 50.0
    policy = GroundingPolicy(
        backend, AdapterSettings(convention="abs_original", proposer="greedy", critic="none")
    )
    evaluation = ev.run(policy)
    assert evaluation.k == 1 and ev.k == 5
    entry = evaluation.entries["screenspot_v2"]
    assert entry["top1"] == top1 and "oracle@5" not in entry and "oracle@2" not in entry
    scalars = evaluation.scalars
    assert scalars["grounding/screenspot_v2/top1"] == top1 and scalars["grounding/mean/top1"] == top1
    assert not [key for key in scalars if "oracle@" in key or "critic_miss" in key or "critic_gain" in key]
    assert ev.record(evaluation, step=3, epoch=1.0) == {
        "epoch": 1.0,
        "step": 3,
        "screenspot_v2": {"top1": top1},
    }


def test_a_sampling_policy_keeps_its_k_answers(demo_suite: Path) -> None:
    ev = _evaluator(demo_suite, k=3)
    backend, top1 = _half_right(ev)
    policy = GroundingPolicy(
        backend, AdapterSettings(convention="abs_original", proposer="sampling", critic="none", k=3)
    )
    evaluation = ev.run(policy)
    assert evaluation.k == 3
    # the same answer three times: Oracle@3 is Top-1
    assert evaluation.scalars["grounding/screenspot_v2/oracle@3"] == top1
    assert evaluation.scalars["grounding/screenspot_v2/top1"] == top1
    assert ev.record(evaluation, step=1, epoch=0.0)["screenspot_v2"] == {"top1": top1, "oracle@3": top1}


def test_answers_per_sample() -> None:
    def policy(proposer: str) -> GroundingPolicy:
        return GroundingPolicy(Answers({}), AdapterSettings(proposer=proposer, critic="none"))

    assert answers_per_sample(policy("greedy"), 5) == 1
    assert answers_per_sample(policy("sampling"), 5) == 5
    assert answers_per_sample(policy("single_pass"), 4) == 4
    assert answers_per_sample(Grounder(), 5) == 5  # a model of its own: its K is the evaluator's


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"benchmarks": []}, "Cb: benchmarks is empty: name at least one"),
        ({"benchmarks": "screenspot_v2"}, "Cb: benchmarks must be a list of names, got the string"),
        ({"k": 0}, "Cb: k must be at least 1, got 0"),
        ({"batch_size": 0}, "Cb: batch_size must be at least 1, got 0"),
        ({"max_samples_per_benchmark": 0}, "Cb: max_samples_per_benchmark must be at least 1, got 0"),
        ({"num_workers": -1}, "Cb: num_workers must be >= 0, got -1"),
        ({"table_samples": -1}, "Cb: table_samples must be >= 0, got -1"),
        ({"cluster_radius": -0.5}, "Cb: cluster_radius must be >= 0, got -0.5"),
    ],
)
def test_the_settings_are_checked_as_run_settings_words_them(kw: dict[str, Any], message: str) -> None:
    args = {"benchmarks": ["screenspot_v2"], **kw}
    with pytest.raises(GgeError) as caught:
        OnlineEvaluator(args.pop("benchmarks"), owner="Cb", **args)
    assert str(caught.value).startswith(message)


def test_a_list_naming_a_benchmark_twice_evaluates_it_once() -> None:
    ev = OnlineEvaluator(["screenspot_v2", "osworld_g", "screenspot_v2"], data_root="/data")
    assert list(ev.specs) == ["screenspot_v2", "osworld_g"]


def test_each_spec_gives_its_benchmark_a_root_and_options(demo_suite: Path) -> None:
    specs = {
        "screenspot_pro": {"root": demo_suite / "screenspot_pro", "language": "cn"},  # options
        "osworld_g": str(demo_suite / "osworld_g"),  # a root
        "screenspot_v2": None,  # data_root/<folder>
    }
    ev = OnlineEvaluator(specs, data_root=demo_suite)
    ev.load()
    assert list(ev.samples) == list(specs) and all(ev.samples.values())
    chinese = OnlineEvaluator({"screenspot_pro": demo_suite / "screenspot_pro"})
    chinese.load()  # English by default; the options' language picks the other instruction
    english = [s.instruction for s in chinese.samples["screenspot_pro"]]
    assert [s.instruction for s in ev.samples["screenspot_pro"]] != english
    assert chinese.data_root is None  # every benchmark had its root: the demo suite is not needed


def test_a_bad_option_names_the_owner_and_the_benchmark_before_reading(tmp_path: Path) -> None:
    ev = OnlineEvaluator({"screenspot_v2": {"root": tmp_path / "absent", "langauge": "cn"}}, owner="Cb")
    with pytest.raises(GgeError, match=r"^Cb: options of screenspot_v2: .*langauge"):
        ev.load()
    assert ev.samples == {}
