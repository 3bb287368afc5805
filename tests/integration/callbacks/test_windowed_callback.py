"""An endpoint policy in a training run's callback: windowed over every benchmark's shard, 1 = 2 ranks.

The callback's ``policy=`` is a :class:`gge.models.policy.GroundingPolicy` over an OpenAI-compatible
endpoint (a scripted server on loopback, answering from each request's content), so each rank runs
its shard of every benchmark through one request window; ``ddp_fork`` on two ranks gives the numbers
of one process, and every sample is asked once across the ranks.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from gge.callbacks import GroundingEvalCallback
from lightning_fit import NoVal, _trainer
from scripted_endpoint import Scripted, serving

from gge.models.openai_api import OpenAIBackend
from gge.models.policy import AdapterSettings, GroundingPolicy


def _policy(url: str) -> GroundingPolicy:
    settings = AdapterSettings(proposer="sampling", critic="pointwise", k=3)
    return GroundingPolicy(OpenAIBackend(url, "scripted"), settings)


def _fit(demo: Path, out: Path, srv: Scripted, **kw: object) -> dict[str, float]:
    cb = GroundingEvalCallback(
        benchmarks=["screenspot_v2", "osworld_g"],
        data_root=demo,
        max_samples_per_benchmark=8,
        every_n_epochs=1,
        policy=lambda module: _policy(srv.url),
    )
    trainer = _trainer(out, [cb], max_epochs=1, enable_checkpointing=False, **kw)
    trainer.fit(NoVal())
    metrics = trainer.callback_metrics.items()  # the measured seconds aside: they are the run's own
    return {k: float(v) for k, v in metrics if k.startswith("grounding/") and "seconds" not in k}


@pytest.mark.slow
@pytest.mark.distributed
def test_two_ranks_give_the_single_process_numbers(demo_suite: Path, tmp_path: Path) -> None:
    with serving() as srv:
        one = _fit(demo_suite, tmp_path / "one", srv)
        asked_once = Counter(e["key"] for e in srv.log if e["kind"] == "propose")
        srv.log.clear()
        two = _fit(demo_suite, tmp_path / "two", srv, devices=2, strategy="ddp_fork")
        asked_twice = Counter(e["key"] for e in srv.log if e["kind"] == "propose")
    assert one and one.keys() == two.keys()
    for key, value in one.items():
        assert two[key] == pytest.approx(value), key
    # each of the 16 samples' proposer pair asked once over the two ranks, as in one process
    assert asked_twice == asked_once and sum(asked_once.values()) == 2 * 16
