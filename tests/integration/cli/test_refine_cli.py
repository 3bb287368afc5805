"""eval.py with the refine stage: results.json's ``refine`` and per-stage ``cost``, resume, DDP, dry run.

A tiny Qwen3-VL trained to point at the first ScreenSpot-v2 demo sample (tests/helpers/pointing_checkpoint)
runs ``ckpt=<tiny> model.proposer=sampling model.critic=pointwise model.refine=zoom`` over two samples;
another refine setting refuses to resume into its folder; the stage over two ``ddp_fork`` processes
writes what one process writes; ``dry_run=true`` writes the refine request a real run sends.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from pointing_checkpoint import ANSWER, ARGS, first_sample, pointing_qwen3_vl

from gge.benchmarks import get_benchmark
from gge.errors import GgeError
from gge.geometry import smart_resize
from gge.models.base import Generation, GenerationRequest
from gge.models.factory import adapter_settings
from gge.models.policy import GroundingPolicy
from gge.run.predlog import existing_logs
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Candidate, Prediction

pytestmark = pytest.mark.usefixtures("one_thread_per_module")

CASCADE = ["model.proposer=sampling", "model.critic=pointwise", "model.refine=zoom", "k=3"]


@pytest.fixture(scope="module")
def ckpt(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pointing_qwen3_vl(tmp_path_factory.mktemp("ckpt") / "Qwen3-VL-tiny", demo_suite)


def _eval(demo: Path, out: Path, *extra: str) -> dict[str, Any]:
    # a replay sends no request: it takes none of the checkpoint's model options (it refuses them)
    own = [] if "model=replay" in extra else ARGS
    base = [f"data_root={demo}", "benchmarks=[screenspot_v2]", "max_samples=2", f"output_dir={out}", *own]
    return run(parse_args([*base, *extra]), out=io.StringIO())


def _lines(out: Path) -> dict[str, dict[str, Any]]:
    lines = [json.loads(x) for p in existing_logs(out) for x in p.read_text().splitlines()]
    return {r["id"]: r for r in lines}


def _half_up(v: float) -> int:
    return math.floor(v + 0.5)


@pytest.mark.slow
def test_a_cascade_run_writes_the_refine_entry_and_the_cost_of_each_stage(
    ckpt: Path, demo_suite: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _eval(demo_suite, out, f"ckpt={ckpt}", *CASCADE, "model.temperature=0.1")
    doc = json.loads((out / "results.json").read_text())
    assert doc["protocol"] == "gge cascade (zoom x2 on critic): not comparable to published numbers"
    adapter = doc["model"]["adapter"]
    assert (adapter["refine"], adapter["refine_zoom"], adapter["refine_when"]) == ("zoom", 2.0, "always")
    calls = doc["model"]["calls"]
    assert (calls["propose"], calls["refine"]) == (1, 1)  # one batch: one call each (judge: per sample)
    entry = doc["benchmarks"]["screenspot_v2"]
    stages = entry["cost"]["stages"]
    assert {"propose", "judge", "refine"} <= set(stages)
    lines = _lines(out)
    sample = first_sample(demo_suite)
    trained = lines[sample.id]
    # the trained sample: three sampled answers (500, 500) of 0..1000, judged; the pick is refined on the
    # window W/2 x H/2 around it, and the refined point is the crop's answer mapped into that window
    w, h = sample.image_size
    centre = [w / 2, h / 2]
    assert trained["candidates"] == [centre] * 3
    refine = trained["refine"]
    cw, ch = _half_up(w / 2), _half_up(h / 2)
    x1, y1 = _half_up(centre[0] - cw / 2), _half_up(centre[1] - ch / 2)
    assert refine["triggered"] and refine["window"] == [x1, y1, x1 + cw, y1 + ch]
    stages_of = [c["stage"] for c in trained["cost"]]
    assert stages_of == ["propose", "judge", "judge", "judge", "refine"]
    # the crop's answer (the checkpoint answers (500, 500) on it too), read in 0..1000 of the crop
    assert refine["point"] is not None and not refine["format_error"], refine["raw"]
    x, y = (float(v) for v in refine["raw"].split("(")[-1].split(")")[0].split(","))
    assert refine["point"] == pytest.approx([x1 + x / 1000 * cw, y1 + y / 1000 * ch], abs=1e-6)
    assert trained["picks"]["refined"] == refine["point"]
    # the entry counts what the lines say
    summary = entry["refine"]
    triggered = sum(r["refine"]["triggered"] for r in lines.values())
    assert (summary["base"], summary["samples"], summary["triggered"]) == ("critic", 2, triggered)
    assert summary["trigger_rate"] == pytest.approx(100 * triggered / 2)
    assert stages["refine"]["calls_per_sample"] == pytest.approx(triggered / 2)
    # report.html shows the budget plot (against tokens and seconds) and the refine table; report.md both
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count('<figure class="budget-plot" data-axis="tokens">') == 1
    assert html.count('<figure class="budget-plot" data-axis="seconds">') == 1
    assert "Refine stage (zoom-in)" in html and "Cost per sample" in html
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "### Refine stage (zoom-in)" in md and "### Budget: Top-1 against the candidates used" in md


@pytest.mark.slow
def test_another_refine_setting_refuses_to_resume_into_the_folder(
    ckpt: Path, demo_suite: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    zoom = [f"ckpt={ckpt}", "model.refine=zoom", "max_samples=1"]
    _eval(demo_suite, out, *zoom)
    _eval(demo_suite, out, *zoom)  # the same run resumes
    for changed, named in (
        ("model.refine_zoom=3", "model.refine_zoom: 2.0 -> 3.0"),
        ("model.refine=none", 'model.refine: "zoom" -> "none"'),
        ("model.refine_when=disagree", 'model.refine_when: "always" -> "disagree"'),
    ):
        with pytest.raises(GgeError) as e:
            _eval(demo_suite, out, *zoom, changed)
        assert named in str(e.value) and str(e.value).count(" -> ") == 1, str(e.value)


def _refine_fields(out: Path) -> dict[str, Any]:
    return {i: (r["refine"], r["picks"]) for i, r in _lines(out).items()}


@pytest.mark.slow
@pytest.mark.distributed
def test_the_refine_stage_under_two_processes_equals_one(
    ckpt: Path, demo_suite: Path, tmp_path: Path
) -> None:
    args = [f"ckpt={ckpt}", "model.refine=zoom", "batch_size=1", "trainer.accelerator=cpu"]
    one = _eval(demo_suite, tmp_path / "one", *args)
    two = _eval(demo_suite, tmp_path / "two", *args, "trainer.devices=2", "trainer.strategy=ddp_fork")
    assert len(existing_logs(tmp_path / "two")) == 2  # each rank wrote its shard
    assert _refine_fields(tmp_path / "two") == _refine_fields(tmp_path / "one")
    assert any(r["triggered"] for r, _ in _refine_fields(tmp_path / "one").values())

    def summary(doc: dict[str, Any]) -> dict[str, Any]:
        s = json.loads(json.dumps(doc["benchmarks"]["screenspot_v2"]["refine"]))
        s["cost_share"].pop("seconds")  # wall time: measured, never equal
        return s

    assert summary(two) == summary(one)
    assert two["benchmarks"]["screenspot_v2"]["top1"] == one["benchmarks"]["screenspot_v2"]["top1"]


class _Recorder:
    """A backend that records what a real refine stage sends, seeing images as the preset's processor."""

    def __init__(self, factor: int, min_pixels: int, max_pixels: int) -> None:
        self.limits = (factor, min_pixels, max_pixels)
        self.requests: list[GenerationRequest] = []

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        factor, low, high = self.limits
        h, w = smart_resize(height, width, factor=factor, min_pixels=low, max_pixels=high)
        return (w, h)

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        self.requests += requests
        return [Generation([ANSWER]) for _ in requests]

    def yes_probability(self, requests: list[GenerationRequest], yes: str, no: str) -> list[float]:
        raise AssertionError("no critic here")

    def settings(self) -> dict[str, Any]:
        return {"backend": "recorder"}


def test_dry_run_writes_the_refine_request_a_real_run_sends(demo_suite: Path, tmp_path: Path) -> None:
    model = ["model=qwen2_5_vl", "model.refine=zoom", "model.refine_zoom=2.5", "model.max_pixels=50000"]
    args = [
        f"data_root={demo_suite}",
        f"output_dir={tmp_path}",
        "benchmarks=[screenspot_v2]",
        "max_samples=2",
    ]
    buf = io.StringIO()
    doc = run(parse_args([*args, *model, "dry_run=true"]), out=buf)
    lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [x["stage"] for x in lines] == ["propose", "refine"] * 2
    assert doc["dry_run"]["stages"] == {"propose": 2, "refine": 2}
    cfg = parse_args([*args, *model])
    bench = get_benchmark("screenspot_v2")
    samples = bench.load(demo_suite / bench.directory, bench.options_type()).samples[:2]
    for sample, request in zip(samples, [x for x in lines if x["stage"] == "refine"], strict=True):
        # the placeholder pick is the centre: a window W/2.5 x H/2.5 centred on it
        w, h = sample.image_size
        cw, ch = _half_up(w / 2.5), _half_up(h / 2.5)
        x1, y1 = _half_up(w / 2 - cw / 2), _half_up(h / 2 - ch / 2)
        assert request["window"] == [x1, y1, x1 + cw, y1 + ch] and request["crop_size"] == [cw, ch]
        assert request["placeholder"].startswith("placeholder pick: the image centre")
        # what GroundingPolicy.refine sends for a pick at the centre, over the preset's own resize
        backend = _Recorder(28, 3136, 50000)
        policy = GroundingPolicy(backend, adapter_settings(cfg.model, int(cfg.k)))
        with Image.open(sample.image_path) as im:
            image = im.convert("RGB")
        policy.refine(
            [sample], [image], [Prediction(sample.benchmark, sample.id, (Candidate((w / 2, h / 2)),))]
        )
        (real,) = backend.requests
        assert request["image_size"] == list(real.image.size) == list(backend.seen_size(cw, ch))
        assert request["messages"] == real.messages and request["prefill"] == real.prefill
        assert request["generation"] == {
            "repetition_penalty": real.repetition_penalty,
            "max_new_tokens": real.max_new_tokens,
            "num_sequences": 1,
            "do_sample": False,
        }
        stated = request["messages"][0]["content"][0]["text"]  # the preset states the crop's screen size
        sh, sw = smart_resize(ch, cw, factor=28, min_pixels=3136, max_pixels=99999999)
        assert f"The screen's resolution is {sw}x{sh}." in stated
    printed = buf.getvalue()
    first = samples[0]
    head = "the first refine request, over placeholder pick: the image centre"
    after = printed.split(head, 1)[1].splitlines()
    assert after[1].startswith(f"screenspot_v2 {first.id}: the model sees ")
    w, h = first.image_size
    cw, ch = _half_up(w / 2.5), _half_up(h / 2.5)
    x1, y1 = _half_up(w / 2 - cw / 2), _half_up(h / 2 - ch / 2)
    assert f"[the crop ({x1}, {y1})-({x1 + cw}, {y1 + ch}) of the screenshot, {cw}x{ch} px]" in after


@pytest.mark.slow
def test_a_replay_scores_the_refined_picks_of_its_file_and_refuses_a_file_without_them(
    ckpt: Path, demo_suite: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _eval(demo_suite, out, f"ckpt={ckpt}", *CASCADE)
    lines = _lines(out)
    replayed = _eval(
        demo_suite,
        tmp_path / "replay",
        "model=replay",
        f"model.predictions={out / 'predictions.jsonl'}",
        "selection=refined",
    )
    entry = replayed["benchmarks"]["screenspot_v2"]
    # Top-1 is the share of the file's refined picks that hit, and its cost the file's (not measured here)
    assert entry["micro"]["top1"] == pytest.approx(
        100 * sum(r["top1"]["refined"] for r in lines.values()) / 2
    )
    assert entry["cost"]["source"] == "replayed" and replayed["cost"]["source"] == "replayed"
    assert "refine" in entry["cost"]["stages"]
    # a file of a run without the stage: refused, not scored as misses
    plain = tmp_path / "plain"
    _eval(demo_suite, plain, f"ckpt={ckpt}")
    with pytest.raises(
        GgeError, match=r"screenspot_v2: selection=refined, but 2 of 2 samples have no refine answer"
    ):
        _eval(
            demo_suite,
            tmp_path / "replay2",
            "model=replay",
            f"model.predictions={plain / 'predictions.jsonl'}",
            "selection=refined",
        )
