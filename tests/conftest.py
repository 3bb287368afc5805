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

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
# the default data folder, empty: a benchmark fetched on this machine (~/.cache/gge/data) is not read
# by the runs that read the demo suite
os.environ["GGE_DATA"] = tempfile.mkdtemp(prefix="gge-data-")
atexit.register(shutil.rmtree, os.environ["GGE_DATA"], True)
# the modules that tests of several folders share (tiny_checkpoints, wandb_reader, paths, ...), by name
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))


@pytest.fixture(scope="session")
def demo_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gge.benchmarks.demo import write_demo_suite

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


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """torch on one thread for the test (tiny models run faster so on 2 cores, and in step with others)."""
    with _torch_threads(1):
        yield


@pytest.fixture(scope="module")
def one_thread_per_module() -> Iterator[None]:
    """torch on one thread for a module's tests (``pytestmark = pytest.mark.usefixtures(...)``)."""
    with _torch_threads(1):
        yield
