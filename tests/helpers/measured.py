"""What two runs of the same predictions may differ in: the wall time their requests took.

Identity checks (1 = N workers, a killed run resumed, a rerun) compare everything a run wrote except
the seconds it measured and the batch each request ran in, which depend on the machine's load and on
how the samples were batched, never on what the model answered or how it was scored.
"""

from __future__ import annotations

from typing import Any

MEASURED = frozenset({"seconds", "prefill_seconds", "batch_size"})
"""Keys that hold measured wall time, or the batch a request ran in (a cost record's, a spread's)."""


def unmeasured(value: Any) -> Any:
    """A copy of a JSON value without the :data:`MEASURED` keys, at any depth.

    Example:
        >>> unmeasured({"cost": [{"stage": "propose", "seconds": 0.2, "input_tokens": 9}], "k": 5})
        {'cost': [{'stage': 'propose', 'input_tokens': 9}], 'k': 5}
    """
    if isinstance(value, dict):
        return {k: unmeasured(v) for k, v in value.items() if k not in MEASURED}
    if isinstance(value, list):
        return [unmeasured(v) for v in value]
    return value
