"""dry_run=true: the preset chosen and why, the model_type warning, the critic's requests (issue 19, 6)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from gge.benchmarks import get_benchmark
from gge.errors import GgeError
from gge.models.base import Generation, GenerationRequest, Proposal
from gge.models.factory import adapter_settings, load_preset
from gge.models.policy import GroundingPolicy, render
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Candidate, Sample

BENCH = "screenspot_v2"


def _folder(root: Path, name: str, model_type: str, **config: Any) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, **config}))
    return folder


def _dry(demo: Path, out: Path, *extra: str) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    args = [
        f"data_root={demo}",
        f"output_dir={out}",
        f"benchmarks=[{BENCH}]",
        "max_samples=2",
        "dry_run=true",
    ]
    buf = io.StringIO()
    doc = run(parse_args([*args, *extra]), out=buf)
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    return doc, buf.getvalue(), lines


def _samples(demo: Path, n: int = 2) -> list[Sample]:
    bench = get_benchmark(BENCH)
    return bench.load(demo / bench.directory, bench.options_type()).samples[:n]


def test_dry_run_says_which_preset_ckpt_chose_and_why(demo_suite: Path, tmp_path: Path) -> None:
    ckpt = _folder(tmp_path, "UI-TARS-1.5-7B", "qwen2_5_vl")
    _, printed, _ = _dry(demo_suite, tmp_path / "out", f"ckpt={ckpt}")
    lines = printed.splitlines()
    assert lines[0] == (
        "preset: model=ui_tars_1_5 (chosen by ckpt=: model_type 'qwen2_5_vl' and the name "
        "'UI-TARS-1.5-7B' matches /ui[-_ ]?tars[-_ ]?1\\.5/)"
    )
    _, printed, _ = _dry(demo_suite, tmp_path / "named", "model=qwen2_vl", f"ckpt={ckpt}")
    assert printed.splitlines()[0] == "preset: model=qwen2_vl (named with model=)"


def test_dry_run_gives_the_model_type_warning_a_real_run_gives(demo_suite: Path, tmp_path: Path) -> None:
    ckpt = _folder(tmp_path, "some-ckpt", "qwen3_vl")
    _, printed, _ = _dry(demo_suite, tmp_path / "dry", "model=ui_tars_1_5", f"ckpt={ckpt}")
    expected = (
        f"warning: model=ui_tars_1_5 is for UI-TARS-1.5 checkpoints (model_type qwen2_5_vl), but {ckpt} "
        "is a 'qwen3_vl' checkpoint: its answers may be read in the wrong format"
    )
    assert expected in printed.splitlines()
    # a real run prints the same line before it tries to load the (weightless) folder
    real = io.StringIO()
    args = [f"data_root={demo_suite}", f"output_dir={tmp_path / 'real'}", f"benchmarks=[{BENCH}]"]
    with pytest.raises(GgeError, match="cannot load the model"):
        run(parse_args([*args, "model=ui_tars_1_5", f"ckpt={ckpt}", "model.device=cpu"]), out=real)
    assert expected in real.getvalue().splitlines()
    # a matching checkpoint gets no warning
    ok = _folder(tmp_path, "fine", "qwen2_5_vl")
    _, printed, _ = _dry(demo_suite, tmp_path / "ok2", "model=ui_tars_1_5", f"ckpt={ok}")
    assert "warning:" not in printed


class _Recorder:
    """A backend that records the critic requests a real run sends (and answers them)."""

    def __init__(self, seen: tuple[int, int]) -> None:
        self.seen = seen
        self.requests: list[GenerationRequest] = []

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        return self.seen

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        self.requests += requests
        return [Generation(["1, 2, 3"]) for _ in requests]

    def yes_probability(self, requests: list[GenerationRequest], yes: str, no: str) -> list[float]:
        self.requests += requests
        return [0.5] * len(requests)

    def settings(self) -> dict[str, Any]:
        return {"backend": "recorder"}


def _real_critic_requests(
    cfg_args: list[str], sample: Sample, seen: tuple[int, int], markers: list[list[float]]
) -> list[GenerationRequest]:
    """What GroundingPolicy.rank sends for candidates drawn at ``markers`` (pixels of the seen image)."""
    cfg = parse_args(cfg_args)
    backend = _Recorder(seen)
    policy = GroundingPolicy(backend, adapter_settings(cfg.model, int(cfg.k)))
    sx, sy = sample.image_size[0] / seen[0], sample.image_size[1] / seen[1]
    cands = tuple(Candidate((x * sx, y * sy)) for x, y in markers)
    with Image.open(sample.image_path) as im:
        image = im.convert("RGB")
    policy.rank([sample], [image], [Proposal(cands)])
    return backend.requests


@pytest.mark.parametrize("critic", ["listwise", "pointwise"])
def test_dry_run_writes_the_critic_requests_a_real_run_sends(
    critic: str, demo_suite: Path, tmp_path: Path
) -> None:
    model = ["model=ui_tars_1_5", "model.proposer=sampling", f"model.critic={critic}", "k=3"]
    doc, printed, lines = _dry(demo_suite, tmp_path, *model)
    stage = {"listwise": "rank", "pointwise": "judge"}[critic]
    per_sample = {"listwise": 1, "pointwise": 3}[critic]
    assert [x["stage"] for x in lines] == (["propose"] + [stage] * per_sample) * 2
    assert doc["dry_run"]["requests"] == len(lines) == 2 * (1 + per_sample)
    assert doc["dry_run"]["stages"] == {"propose": 2, stage: 2 * per_sample}
    placeholder = (
        "placeholder candidates: 3 points evenly placed on the image diagonal (a real run draws the "
        "proposer's answers)"
    )
    first = _samples(demo_suite)[0]
    for shown in ("propose", f"{stage}"):
        head = f"the first {shown} request" + (f", over {placeholder}:" if shown != "propose" else ":")
        after = printed.split(head + "\n", 1)[1].splitlines()[0]
        assert after.startswith(f"{BENCH} {first.id}: the model sees ")  # the first sample's, not a later one
    preset = load_preset("ui_tars_1_5")
    for sample in _samples(demo_suite):
        mine = [x for x in lines if x["id"] == sample.id and x["stage"] == stage]
        (propose,) = [x for x in lines if x["id"] == sample.id and x["stage"] == "propose"]
        w, h = seen = tuple(propose["image_size"])
        quarter = [[w / 4, h / 4], [w / 2, h / 2], [3 * w / 4, 3 * h / 4]]  # 3 points at 1/4, 2/4, 3/4
        assert [m for x in mine for m in x["markers"]] == quarter
        assert all(x["placeholder"] == placeholder and x["image_size"] == [w, h] for x in mine)
        template = preset.prompts.rank_list if critic == "listwise" else preset.prompts.judge_one
        values = {"instruction": sample.instruction, "k": 3, "labels": "1, 2, 3"}
        if critic == "pointwise":
            values = {"instruction": sample.instruction, "k": 1, "labels": "1"}
        texts = [p["text"] for x in mine for m in x["messages"] for p in m["content"] if p["type"] == "text"]
        assert texts == [render(template, {**values, "width": w, "height": h})] * per_sample
        real = _real_critic_requests(model, sample, seen, quarter)  # type: ignore[arg-type]
        assert [x["messages"] for x in mine] == [r.messages for r in real]
        if critic == "listwise":
            assert mine[0]["generation"]["max_new_tokens"] == real[0].max_new_tokens == 32
        else:
            assert all(x["generation"] == {"yes_probability": {"yes": "Yes", "no": "No"}} for x in mine)


def test_dry_run_of_a_greedy_proposer_has_no_critic_request(demo_suite: Path, tmp_path: Path) -> None:
    _, printed, lines = _dry(demo_suite, tmp_path, "model=ui_tars_1_5", "model.critic=listwise")
    assert [x["stage"] for x in lines] == ["propose", "propose"]
    assert (
        "critic: no requests (model.proposer=greedy gives one candidate; the critic ranks two or more)"
        in printed.splitlines()
    )
    _, printed, lines = _dry(demo_suite, tmp_path / "none", "model=ui_tars_1_5")
    assert [x["stage"] for x in lines] == ["propose", "propose"] and "critic:" not in printed
    # K candidates and no critic: nothing ranks them
    sampled = ["model=ui_tars_1_5", "model.proposer=sampling", "model.critic=none", "k=3"]
    _, printed, lines = _dry(demo_suite, tmp_path / "sampled", *sampled)
    assert [x["stage"] for x in lines] == ["propose", "propose"] and "critic:" not in printed
