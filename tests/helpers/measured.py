"""What two runs of the same predictions may differ in: the wall time their requests took.

Identity checks (1 = N workers, a killed run resumed, a rerun) compare everything a run wrote except
the seconds it measured and the batch each request ran in, which depend on the machine's load and on
how the samples were batched, never on what the model answered or how it was scored. Those values are
masked, not deleted: a figure present in one run and missing (None) in the other still differs.
"""

from __future__ import annotations

from typing import Any

TIMES = frozenset({"seconds", "prefill_seconds"})
"""Keys that hold measured wall time (a cost record's, a spread's, a share's, a budget point's)."""
MEASURED = "<measured>"
"""What a measured value is replaced with (None stays None)."""


def unmeasured(value: Any) -> Any:
    """A copy of a JSON value with its measured times masked, and the batch of each cost record.

    ``seconds`` and ``prefill_seconds`` at any depth, and ``batch_size`` inside a cost record (an
    object with a ``stage``), become :data:`MEASURED` where they hold a value; everything else (the
    run's configured ``batch_size`` included) is kept.

    Example:
        >>> unmeasured({"cost": [{"stage": "propose", "seconds": 0.2, "batch_size": 3}], "batch_size": 8})
        {'cost': [{'stage': 'propose', 'seconds': '<measured>', 'batch_size': '<measured>'}], 'batch_size': 8}
        >>> unmeasured({"seconds": None})
        {'seconds': None}
    """
    if isinstance(value, dict):
        record = "stage" in value
        return {
            k: (MEASURED if v is not None else None)
            if k in TIMES or (record and k == "batch_size")
            else unmeasured(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [unmeasured(v) for v in value]
    return value
