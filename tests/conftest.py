"""Shared fixtures (the synthetic demo suite, written once per test session; W&B offline) and the test layout.

tests/unit/<package> tests one package of gge; tests/integration/<surface> a surface a user meets (the
CLI, the callbacks, verl, watch, the report in a browser, real model classes, the README, the wheel);
tests/helpers holds what tests of several folders share, imported by module name (this file puts it on
``sys.path``); tests/data the official requests of each preset.

Markers (registered in pyproject.toml, ``--strict-markers``):

- ``slow``: takes over about 5 s on a CPU machine; ``python -m pytest -m "not slow"`` leaves them out.
- ``distributed``: starts several processes of one DDP run (``ddp_fork``, forked gloo ranks, or
  ``eval.py trainer.devices=2``).
- ``browser``: opens report.html in a real headless Chromium; skips where none is on ``PATH``.
- ``verl``: runs the real verl package in the Python that ``GGE_VERL_PYTHON`` names; skips without it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
# the modules that tests of several folders share (tiny_checkpoints, wandb_reader, paths, ...), by name
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))


@pytest.fixture(scope="session")
def demo_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gge.demo import write_demo_suite

    return write_demo_suite(tmp_path_factory.mktemp("demo"), seed=0)


@pytest.fixture
def wandb_env(tmp_path: Path) -> Iterator[Path]:
    """W&B in offline mode with every folder under ``tmp_path``; torn down afterwards."""
    pytest.importorskip("wandb")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_DISABLE_CODE", "true")
        for var in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            mp.setenv(var, str(tmp_path / "wandb"))
        yield tmp_path
        if "wandb" in sys.modules:
            sys.modules["wandb"].teardown()
