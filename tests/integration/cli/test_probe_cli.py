"""An endpoint run probes its server first and records who answered and what the model saw.

Against the fake engine of tests/helpers/probe_engine.py, which counts each request's prompt tokens
from the request itself and resizes its image with its own ``max_pixels``: a faithful engine's run
records its identity and no differing request; an engine with a smaller ``max_pixels`` is one probe
line, and results.json's ``image_tokens`` counts every proposer request of the run as differing, with
the ratio summed from the engine's own log.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from probe_engine import Engine, running

from gge.run.settings import parse_args
from gge.run.standalone import run

pytestmark = pytest.mark.slow  # gge end to end against the engine (a few seconds)


def _run(engine: Engine, demo: Path, out: Path, *more: str) -> tuple[dict[str, Any], str]:
    args = [
        f"data_root={demo}",
        "benchmarks=[screenspot_v2]",
        "max_samples=3",
        f"output_dir={out}",
        "model=openai_api",
        f"model.base_url={engine.root}/v1",
        "model.api_model=qwen",
        "model.resize_factor=28",
        "model.proposer=greedy",
        "model.critic=none",
        "model.concurrency=2",
        *more,
    ]
    printed = io.StringIO()
    return run(parse_args(args), out=printed), printed.getvalue()


def test_a_faithful_engine_is_named_and_checked(demo_suite: Path, tmp_path: Path) -> None:
    with running() as engine:
        document, said = _run(engine, demo_suite, tmp_path / "ok")
    assert "probe" not in said
    probe = document["model"]["backend"]["probe"]
    assert probe["engine"]["name"] == "vLLM 0.11.0" and probe["served_models"] == ["qwen"]
    check = document["benchmarks"]["screenspot_v2"]["image_tokens"]
    assert (check["source"], check["requests"], check["differ"], check["ratio"]) == ("prompt", 3, 0, None)
    head = (tmp_path / "ok" / "report.md").read_text().splitlines()[1]
    assert head == f"Answered by: vLLM 0.11.0 at {engine.root}/v1, model qwen"
    assert head in (tmp_path / "ok" / "report.html").read_text()


def test_an_engine_that_shrinks_screenshots_is_caught(demo_suite: Path, tmp_path: Path) -> None:
    with running() as engine:
        engine.max_pixels = 28 * 28 * 100  # far below the preset's 1,003,520
        document, said = _run(engine, demo_suite, tmp_path / "small")
    probe_lines = [x for x in said.splitlines() if x.startswith("warning: probe: ")]
    assert len(probe_lines) == 1 and "image tokens for a" in probe_lines[0]
    # the run's proposer requests: the engine's log after the probe's (first-sample request, two of the
    # token split, and none for the window: a fixed window is not probed), by hand
    run_requests = engine.log[3:]
    assert len(run_requests) == 3
    expected = [(w // 28) * (h // 28) for w, h in (c["size"] for c in run_requests)]
    # an endpoint's image tokens are its prompt tokens less the probe's text tokens (the small image's
    # request has the probe's text)
    probe_text = next(c["text"] for c in engine.log[:3] if c["size"] == (112, 112))
    seen = [c["text"] + c["image"] - probe_text for c in run_requests]
    assert all(c["image"] < e for c, e in zip(run_requests, expected, strict=True))
    check = document["benchmarks"]["screenspot_v2"]["image_tokens"]
    assert (check["requests"], check["differ"]) == (3, 3)
    assert check["ratio"] == round(sum(seen) / sum(expected), 4)
    results = json.loads((tmp_path / "small" / "results.json").read_text())
    assert results["benchmarks"]["screenspot_v2"]["image_tokens"] == check
