"""The probe of an endpoint before a run, against a fake engine on 127.0.0.1.

The fake engine (tests/helpers/probe_engine.py) counts each request's prompt tokens from the request
itself, resizing its image with its own ``max_pixels``; it serves requests one at a time or together,
in simulated time (the window probe's clock: no wall-clock timing).
"""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from probe_engine import Engine, running

from gge.errors import GgeError, TransientError
from gge.models.factory import preset_settings
from gge.models.openai_api import OpenAIBackend
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.models.window import ADAPTIVE_START
from gge.run.probe import (
    COPIES,
    SERIAL_START,
    SMALL_SIDE,
    probe_server,
    sample_text_bytes,
    serves_one_at_a_time,
)
from gge.types import Box, Sample


@pytest.fixture
def engine() -> Iterator[Engine]:
    with running() as e:
        yield e


def _sample(tmp_path: Path) -> Sample:
    path = tmp_path / "shot.png"
    Image.new("RGB", (300, 200), (200, 210, 220)).save(path)
    return Sample("screenspot_v2", "s1", str(path), (300, 200), "click the OK button", Box(0, 0, 50, 50))


def _policy(base_url: str, model: str = "qwen", **adapter: Any) -> GroundingPolicy:
    backend = OpenAIBackend(base_url, model, resize_factor=28, max_retries=0, backoff_s=0)
    settings = AdapterSettings(
        convention="abs_resized", **{"proposer": "greedy", "critic": "none", **adapter}
    )
    return GroundingPolicy(backend, settings)


def _probe(policy: GroundingPolicy, sample: Sample, **kw: Any) -> tuple[Any, str]:
    out = io.StringIO()
    found = probe_server(policy, {sample.benchmark: [sample]}, out=out, **kw)
    return found, out.getvalue()


def test_a_faithful_engine_is_recorded_and_checked(engine: Engine, tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    found, said = _probe(_policy(engine.root + "/v1"), sample)
    assert said == ""
    rec = found.record
    assert rec["endpoint"] == engine.root + "/v1"
    assert rec["served_models"] == ["qwen"]
    assert rec["engine"]["name"] == "vLLM 0.11.0"
    assert rec["answers"] == {"model": ["qwen"], "system_fingerprint": ["fp-1"]}
    # 300x200 is sent at smart_resize size 308x196: 22 x 14 patches of 14 px, merged 2x2: 77 tokens
    split = rec["image_tokens"]["screenspot_v2"]
    assert (split["size"], split["expected"], split["image_tokens"]) == ([308, 196], 77, 77)
    big = next(c for c in engine.log if c["size"] == (308, 196))
    assert split["text_tokens"] == big["text"]  # the engine's own text count (markers included)
    assert found.splits == {"screenspot_v2": (big["text"], len(b"click the OK button"))}


def test_an_engine_with_its_own_max_pixels_is_one_line(engine: Engine, tmp_path: Path) -> None:
    engine.max_pixels = 28 * 28 * 20  # 15,680: a 308x196 image becomes 140x84, 5 x 3 = 15 tokens
    sample = _sample(tmp_path)
    found, said = _probe(_policy(engine.root + "/v1"), sample)
    assert said == (
        "warning: probe: screenspot_v2: the model saw fewer image tokens than gge sent: the server counts 15 "
        "image tokens for a 308x196 screenshot where the "
        "preset expects 77 (ratio 0.19; about 11,760 pixels seen of 60,368 sent): it likely resizes with its "
        "own max_pixels/min_pixels (start the server with the preset's: min_pixels=3136, "
        "max_pixels=1003520)\n"
    )
    split = found.record["image_tokens"]["screenspot_v2"]
    assert (split["image_tokens"], split["expected"], split["ratio"]) == (15, 77, round(15 / 77, 4))
    with pytest.raises(GgeError, match=r"counts 15 image tokens .* \(strict_server=true\)$"):
        _probe(_policy(engine.root + "/v1"), sample, strict=True)


def test_nothing_answering_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(
        GgeError, match=rf"^probe: nothing answers at http://127.0.0.1:{port}/v1/models: is the"
    ):
        _probe(_policy(f"http://127.0.0.1:{port}/v1"), _sample(tmp_path))


def test_a_missing_v1_is_named(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(GgeError) as e:
        _probe(_policy(engine.root), _sample(tmp_path))
    assert str(e.value) == (
        f"probe: GET {engine.root}/models answered HTTP 404 but {engine.root}/v1/models answers: add /v1 "
        f"(model.base_url={engine.root}/v1)"
    )
    assert engine.log == []  # nothing was asked of the model


def test_a_model_not_served_lists_the_served_ones(engine: Engine, tmp_path: Path) -> None:
    engine.served = ["qwen", "qwen-7b"]
    with pytest.raises(GgeError) as e:
        _probe(_policy(engine.root + "/v1", model="gpt"), _sample(tmp_path))
    assert str(e.value) == (
        f"probe: the server at {engine.root}/v1 serves 'qwen', 'qwen-7b', not 'gpt': set model.api_model to "
        "the served name"
    )


def test_an_engine_that_ignores_n_is_said(engine: Engine, tmp_path: Path) -> None:
    engine.choices_at_most = 1
    policy = _policy(engine.root + "/v1", proposer="sampling", k=3)
    _, said = _probe(policy, _sample(tmp_path))
    assert said.startswith("warning: probe: the server ignores n (one answer per request)")
    assert said.count("\n") == 1


def test_an_engine_without_logprobs_is_said_for_a_pointwise_critic(engine: Engine, tmp_path: Path) -> None:
    engine.logprobs = False
    engine.served = ["qwen"]
    policy = _policy(engine.root + "/v1", proposer="single_pass", critic="pointwise", k=2)
    # single_pass reads the points it lists: answer two
    sample = _sample(tmp_path)
    engine.answer = "(10, 20) (40, 50)"
    _, said = _probe(policy, sample)
    assert said.startswith("warning: probe: the server returns no log-probabilities")


def test_the_parallelism_rule() -> None:
    assert serves_one_at_a_time(1.0, 0.6 * COPIES * 1.0)
    assert not serves_one_at_a_time(1.0, 0.6 * COPIES * 1.0 - 0.01)


@pytest.mark.parametrize("serial", [True, False])
def test_a_serial_engine_starts_the_window_small(engine: Engine, tmp_path: Path, serial: bool) -> None:
    # each request takes 1 simulated second: 4 at once take 4 one at a time, 1 together (no wall clock)
    engine.sim_s, engine.serial = 1.0, serial
    policy = _policy(engine.root + "/v1")
    found, _ = _probe(policy, _sample(tmp_path), clock=engine.clock)
    window = found.record["window"]
    expected = (COPIES * 1.0, True, SERIAL_START) if serial else (1.0, False, None)
    assert (window["ratio"], window["one_at_a_time"], window["start"]) == expected
    summary = policy.backend.window_summary()
    assert summary["start"] == (SERIAL_START if serial else ADAPTIVE_START)
    if serial:
        assert "one at a time" in str(summary["start_reason"])


def test_a_preset_without_resize_factor_starts_small_too(engine: Engine, tmp_path: Path) -> None:
    # the openai_api preset sends screenshots as they are: no token check, but the window probe still runs,
    # with the first sample's own request and the small image
    engine.sim_s, engine.serial = 1.0, True
    backend = OpenAIBackend(engine.root + "/v1", "qwen", max_retries=0, backoff_s=0)
    policy = GroundingPolicy(backend, preset_settings("openai_api", proposer="greedy", critic="none"))
    found, said = _probe(policy, _sample(tmp_path), clock=engine.clock)
    assert said == "" and found.record["image_tokens"] == {} and found.splits == {}
    assert (found.record["window"]["one_at_a_time"], found.record["window"]["start"]) == (True, SERIAL_START)
    assert backend.window_summary()["start"] == SERIAL_START
    # the engine's log: the first sample's request at its size, then 1 + COPIES of the small one
    assert [c["size"] for c in engine.log] == [(300, 200)] + [(SMALL_SIDE, SMALL_SIDE)] * (1 + COPIES)
    first = engine.log[0]["text"]
    assert all(c["text"] == first for c in engine.log)  # the same prompt, the small image


def test_the_probes_own_usage_is_recorded(engine: Engine, tmp_path: Path) -> None:
    engine.sim_s, engine.serial = 1.0, True
    policy = _policy(engine.root + "/v1")
    found, _ = _probe(policy, _sample(tmp_path), clock=engine.clock)
    # counted from the engine's own log: every chat request it answered, its prompt-token rule, 3
    # completion tokens per answer
    assert len(engine.log) == 1 + 2 + 1 + COPIES
    assert found.record["usage"] == {
        "requests": len(engine.log),
        "retries": 0,
        "prompt_tokens": sum(c["text"] + c["image"] for c in engine.log),
        "completion_tokens": 3 * len(engine.log),
    }
    # the backend's own usage is the server's count: the probe's requests are in it
    usage = policy.backend.settings()["usage"]
    assert (usage["requests"], usage["prompt_tokens"]) == (
        len(engine.log),
        sum(c["text"] + c["image"] for c in engine.log),
    )


def test_nothing_answering_is_a_transient_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(TransientError, match=r"^probe: nothing answers at "):
        _probe(_policy(f"http://127.0.0.1:{port}/v1"), _sample(tmp_path))


def _text_bytes(policy: GroundingPolicy, sample: Sample, size: tuple[int, int]) -> int:
    """The UTF-8 bytes of every text of the sample's proposer request as rendered (prefill included)."""
    spec = policy.proposer_requests(sample, size)[0]
    texts = [p["text"] for m in spec.messages for p in m["content"] if p.get("type") == "text"]
    return sum(len(t.encode()) for t in [*texts, spec.prefill or ""])


@pytest.mark.parametrize("proposer", ["greedy", "single_pass"])
def test_a_samples_own_text_counts_each_place_the_templates_hold_it(tmp_path: Path, proposer: str) -> None:
    # Qwen2.5-VL's tool schema (its system prompt) states the screen size; its single_pass prompt states it
    # again and holds the instruction once: two samples' rendered prompts differ by exactly the difference
    # of their own text's bytes
    policy = GroundingPolicy(
        OpenAIBackend("http://127.0.0.1:9/v1", "qwen", resize_factor=28),
        preset_settings("qwen2_5_vl", proposer=proposer, critic="none"),
    )
    a = _sample(tmp_path)
    b = Sample(
        "screenspot_v2", "s2", a.image_path, (1288, 10080), "open the settings of the first tab", a.region
    )
    size_a, size_b = (308, 196), (1288, 10080)
    own_a, own_b = (sample_text_bytes(policy, s, z) for s, z in ((a, size_a), (b, size_b)))
    assert own_b - own_a == _text_bytes(policy, b, size_b) - _text_bytes(policy, a, size_a)
    places = 2 if proposer == "single_pass" else 1  # the size: the tool schema, and propose_k
    assert own_a == len(b"click the OK button") + places * len("308196")
    assert own_b == len(b"open the settings of the first tab") + places * len("128810080")
