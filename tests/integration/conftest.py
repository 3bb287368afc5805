"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted_endpoint import Scripted, serving


@pytest.fixture
def server() -> Iterator[Scripted]:
    """The scripted chat-completions server on loopback (a module's own ``server`` fixture wins)."""
    with serving() as srv:
        yield srv
