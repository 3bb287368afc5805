"""The demo model's ``model`` options: ``critic=none`` honoured, every option it does not read refused.

issue 26 item 3: ``model.critic=none`` was recorded but the critic still ran (a ``judge`` stage, the
same picks), and a backend, convention or proposer the demo does not use was recorded as if it had.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf
from PIL import Image

from gge.benchmarks.loading import load_benchmarks
from gge.cli.eval import main
from gge.errors import GgeError
from gge.models.demo import DemoPolicy
from gge.models.factory import ModelConfig
from gge.models.registry import kind_of, set_options
from gge.run.settings import parse_args
from gge.types import Prediction

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gge.benchmarks.demo import write_demo_suite

    return write_demo_suite(tmp_path_factory.mktemp("demo"), per_benchmark=12, seed=0)


def _policy_predictions(suite: Path, *args: str) -> list[Prediction]:
    cfg = parse_args([f"data_root={suite}", "benchmarks=[screenspot_v2]", *args])
    policy = kind_of(cfg.model).build(cfg)
    assert isinstance(policy, DemoPolicy)
    samples = load_benchmarks(["screenspot_v2"], suite, max_samples=4).samples["screenspot_v2"]
    images = [Image.open(s.image_path).convert("RGB") for s in samples]
    return policy.predict_images(samples, images)


def test_critic_none_runs_no_critic_and_keeps_the_proposer(suite: Path) -> None:
    with_critic = _policy_predictions(suite)
    without = _policy_predictions(suite, "model.critic=none")
    for on, off in zip(with_critic, without, strict=True):
        assert [c.point for c in off.candidates] == [c.point for c in on.candidates]
        assert all(c.score is not None for c in on.candidates)
        assert all(c.score is None for c in off.candidates)
        assert [c.stage for c in on.costs] == ["propose", "judge"]
        assert [c.stage for c in off.costs] == ["propose"]


def test_critic_none_through_eval_py(suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    args = [f"data_root={suite}", "benchmarks=[screenspot_v2]", "max_samples=4", f"output_dir={out}"]
    assert main([*args, "model.critic=none"]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(lines) == 4
    for line in lines:
        assert "scores" not in line  # nothing scored
        assert [c["stage"] for c in line["cost"]] == ["propose"]  # no judge stage in the ledger
        assert line["picks"]["critic"] == line["candidates"][0]  # the critic's pick is the first
    document = json.loads((out / "results.json").read_text())
    assert document["model"]["critic"] == "none"
    assert document["protocol"].startswith("gge demo proposer, no critic")


@pytest.mark.parametrize(
    ("arg", "named"),
    [
        ("model.backend=openai", "model.backend=openai"),
        ("model.convention=norm_1000", "model.convention=norm_1000"),
        ("model.proposer=sampling", "model.proposer=sampling"),
        ("model.temperature=0.7", "model.temperature=0.7"),
        ("model.prompts.system=Be brief.", "model.prompts.system=Be brief."),
        ("model.predictions=p.jsonl", "model.predictions=p.jsonl"),
    ],
)
def test_an_option_the_demo_does_not_read_is_refused(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], arg: str, named: str
) -> None:
    args = [f"data_root={suite}", "benchmarks=[screenspot_v2]", f"output_dir={tmp_path}", "model=demo", arg]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"gge: error: {named}: model=demo does not use it (a preset's or a replay's option); the demo "
        "takes ckpt=, k=, seed= and model.critic=none: unset it, or name a preset with model=NAME"
    )
    assert not (tmp_path / "results.json").exists()


def test_several_options_are_named_in_one_line(suite: Path) -> None:
    cfg = parse_args(["model.backend=openai", "model.max_new_tokens=9"])
    with pytest.raises(GgeError) as e:
        kind_of(cfg.model).build(cfg)
    assert str(e.value).startswith(
        "model.backend=openai, model.max_new_tokens=9: model=demo does not use them"
    )


def test_a_critic_the_demo_has_not_is_refused() -> None:
    cfg = parse_args(["model.critic=pointwise"])
    with pytest.raises(
        GgeError, match=r"^model\.critic=pointwise: model=demo has one critic, its own network"
    ):
        kind_of(cfg.model).build(cfg)


def test_the_default_configuration_sets_nothing() -> None:
    assert set_options(parse_args([]).model, ("name", "critic")) == []


def test_set_options_against_the_schema_defaults() -> None:
    m = OmegaConf.merge(
        OmegaConf.structured(ModelConfig),
        {"critic": "none", "backend": "openai", "markers": {"size": 9.0}, "model_types": ["x"]},
    )
    assert isinstance(m, DictConfig)
    assert set_options(m, ("name", "critic")) == ["backend=openai", "markers.size=9.0", "model_types=['x']"]
    assert set_options(m, ("name", "critic", "backend", "markers", "model_types")) == []


def test_recorded_options_of_the_demo_are_the_ones_it_reads() -> None:
    demo = parse_args(["model.critic=none"]).model
    assert kind_of("demo").recorded_options(demo) == {"name": "demo", "critic": "none"}
    # its critic on is its own network, not the schema's listwise default
    assert kind_of("demo").recorded_options(parse_args([]).model) == {"name": "demo", "critic": "own"}
    replay = parse_args(["model=replay", "model.predictions=p.jsonl", "model.critic=none"]).model
    assert kind_of("replay").recorded_options(replay) == {
        "name": "replay",
        "predictions": "p.jsonl",
        "delay_s": ModelConfig.delay_s,
        "proposer": ModelConfig.proposer,
        "critic": "none",
    }
    preset = parse_args(["model=qwen2_5_vl"]).model  # a preset's kind records every option
    assert set(kind_of(preset).recorded_options(preset)) == set(ModelConfig.__dataclass_fields__)


@pytest.mark.parametrize(
    "arg", ["model.convention=norm_1000", "model.backend=openai", "model.temperature=0.9"]
)
def test_an_option_a_replay_does_not_read_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arg: str
) -> None:
    args = [
        "model=replay",
        f"model.predictions={tmp_path / 'p.jsonl'}",
        f"output_dir={tmp_path / 'out'}",
        arg,
    ]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"gge: error: {arg}: model=replay does not use it (it sends no request: the answers are the "
        "file's); it takes model.predictions=, model.format= (with model.read_preset=, "
        "model.read_convention=, model.columns=), model.delay_s= and, describing the run that made the "
        "file, model.proposer= and model.critic=: unset it"
    )
    assert not (tmp_path / "out").exists()


def test_a_default_run_is_unchanged() -> None:
    cfg = parse_args([])
    assert kind_of(cfg.model).protocol(cfg.model) == (
        "gge demo proposer/critic (synthetic suite): not comparable to published numbers"
    )
