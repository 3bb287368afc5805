"""The probe's requests against servers that refuse some answers (tests/helpers/probe_engine.py's fake).

``transformers serve`` parses a Qwen model's answer for tool calls and answers HTTP 500 to one cut
after its first token (``<tool_call>``), so one-token requests fail there every time: the probe asks
its token split and its window requests with the run's own budget, and the split comes out, counted
from the engine's own log. A window probe that fails leaves the window where it starts without one.
A server that lists its models with a ``status`` (``transformers serve``: its cache and what it has
loaded) loads others on demand: a model it does not list is not refused.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from probe_engine import Engine, running

from gge.errors import GgeError
from gge.models.openai_api import OpenAIBackend
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.models.window import ADAPTIVE_START
from gge.run.probe import COPIES, SMALL_SIDE, probe_server
from gge.types import Box, Sample

BUDGET = 40  # the run's proposer budget (model.max_new_tokens)


@pytest.fixture
def engine() -> Iterator[Engine]:
    with running() as e:
        yield e


def _policy(engine: Engine, retries: int) -> GroundingPolicy:
    backend = OpenAIBackend(
        engine.root + "/v1", "qwen", resize_factor=28, max_retries=retries, backoff_s=0
    )  # an adaptive window: the probe measures its start
    settings = AdapterSettings(
        convention="abs_resized", proposer="greedy", critic="none", max_new_tokens=BUDGET
    )
    return GroundingPolicy(backend, settings)


def _sample(tmp_path: Path) -> Sample:
    path = tmp_path / "shot.png"
    Image.new("RGB", (300, 200), (200, 210, 220)).save(path)
    return Sample("screenspot_v2", "s1", str(path), (300, 200), "click the OK button", Box(0, 0, 50, 50))


def test_the_token_split_asks_with_the_run_budget_so_a_parsing_server_answers(
    engine: Engine, tmp_path: Path
) -> None:
    engine.refuse_one_token = True
    engine.max_pixels = 28 * 28 * 20  # 308x196 sent becomes 140x84 there: 15 tokens where 77 are sent
    policy = _policy(engine, retries=0)
    out = io.StringIO()
    found = probe_server(policy, {"screenspot_v2": [_sample(tmp_path)]}, out=out)
    # the probe's requests in the engine's log, each with the run's budget: the first sample's own,
    # the token pair (sent together: in the engine's order), the window's small request alone and
    # COPIES copies of it
    big, small = (308, 196), (SMALL_SIDE, SMALL_SIDE)
    got = [(c["size"], c["max_tokens"]) for c in engine.log]
    assert got[0] == (big, BUDGET)
    assert sorted(got[1:3]) == sorted([(big, BUDGET), (small, BUDGET)])
    assert got[3:] == [(small, BUDGET)] * (1 + COPIES)
    assert "window" in found.record and "failed" not in out.getvalue()
    split = found.record["image_tokens"]["screenspot_v2"]
    # the engine's own counts: the same text for both images, the image tokens its own resize's
    small_count = next(c for c in engine.log if c["size"] == small)
    big_count = next(c for c in engine.log if c["size"] == big)
    assert big_count["image"] == 15 and small_count["image"] == (SMALL_SIDE // 28) ** 2
    assert (split["max_new_tokens"], split["image_tokens"], split["expected"]) == (BUDGET, 15, 77)
    assert split["text_tokens"] == small_count["text"] == big_count["text"]
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "warning: probe: screenspot_v2: the model saw fewer image tokens than gge sent: the server counts 15 "
    )


def test_a_window_probe_that_fails_is_a_warning_not_a_crash(engine: Engine, tmp_path: Path) -> None:
    engine.fail_after = 3  # the first sample's request and the token pair answered; the window's not
    out = io.StringIO()
    policy = _policy(engine, retries=0)
    found = probe_server(policy, {"screenspot_v2": [_sample(tmp_path)]}, out=out)
    assert "window" not in found.record
    assert found.record["image_tokens"]["screenspot_v2"]["image_tokens"] == 77
    [line] = out.getvalue().splitlines()
    assert line.startswith("warning: probe: the window probe failed: ") and "HTTP 500" in line, line
    assert policy.backend.window_summary()["start"] == ADAPTIVE_START


def test_a_server_that_lists_model_status_loads_others_on_demand(engine: Engine, tmp_path: Path) -> None:
    # transformers serve lists its cache and the models it has loaded ("status"), and loads any folder
    # it is asked for: a model it does not list yet is no reason to stop
    engine.served, engine.model_status = ["/ckpt/loaded-before"], True
    found = probe_server(
        _policy(engine, retries=0), {"screenspot_v2": [_sample(tmp_path)]}, out=io.StringIO()
    )
    assert found.record["served_models"] == ["/ckpt/loaded-before"]
    assert found.record["engine"]["loads_models"] == "on demand"
    assert found.record["image_tokens"]["screenspot_v2"]["image_tokens"] == 77
    engine.model_status = False  # a list without status: the name must be among them
    with pytest.raises(GgeError, match=r"serves '/ckpt/loaded-before', not 'qwen': set model.api_model"):
        probe_server(_policy(engine, retries=0), {"screenspot_v2": [_sample(tmp_path)]}, out=io.StringIO())
