"""Model adapters: a registry from the ``model=`` name to a factory.

Example:
    >>> sorted(MODELS)
    ['replay']
"""

from __future__ import annotations

from gge.models.base import Policy, settings_record
from gge.models.replay import ReplayModel

MODELS = {"replay": ReplayModel}

__all__ = ["MODELS", "Policy", "ReplayModel", "settings_record"]
