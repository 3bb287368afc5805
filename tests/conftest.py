"""Shared fixtures: the synthetic demo suite, written once per test session."""

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
