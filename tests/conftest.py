"""Shared fixtures: the synthetic demo suite, written once per test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def demo_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gge.demo import write_demo_suite

    return write_demo_suite(tmp_path_factory.mktemp("demo"), seed=0)
