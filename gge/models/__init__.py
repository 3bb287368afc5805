"""Model adapters: the replay model, presets over transformers and OpenAI-compatible backends.

Example:
    >>> "replay" in model_names() and "qwen3_vl" in model_names()
    True
"""

from __future__ import annotations

from gge.models.base import Backend, Critic, Policy, Proposer, settings_record
from gge.models.registry import build_policy, kind_of, model_names
from gge.models.replay import ReplayModel

__all__ = [
    "Backend",
    "Critic",
    "Policy",
    "Proposer",
    "ReplayModel",
    "build_policy",
    "kind_of",
    "model_names",
    "settings_record",
]
