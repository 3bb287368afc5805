"""The probe of an endpoint before a run, against a fake engine on 127.0.0.1.

The fake engine (tests/helpers/probe_engine.py) counts each request's prompt tokens from the request
itself, resizing its image with its own ``max_pixels``; it serves requests one at a time or together.
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

from gge.errors import GgeError
from gge.models.openai_api import OpenAIBackend
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.models.window import ADAPTIVE_START
from gge.run.probe import COPIES, SERIAL_START, probe_server, serves_one_at_a_time
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
    # each request takes 0.25 s of the engine's time: 4 at once take 1 s one at a time, 0.25 s together
    engine.delay_s, engine.serial = 0.25, serial
    policy = _policy(engine.root + "/v1")
    found, _ = _probe(policy, _sample(tmp_path))
    window = found.record["window"]
    assert (window["one_at_a_time"], window["start"]) == ((True, SERIAL_START) if serial else (False, None))
    summary = policy.backend.window_summary()
    assert summary["start"] == (SERIAL_START if serial else ADAPTIVE_START)
    if serial:
        assert "one at a time" in str(summary["start_reason"])
