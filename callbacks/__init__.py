"""Lightning callbacks shipped with gge (installed as ``gge.callbacks``).

Example:
    >>> from gge.callbacks import GroundingEvalCallback
    >>> GroundingEvalCallback.__name__
    'GroundingEvalCallback'
"""

from .grounding import GroundingEvalCallback

__all__ = ["GroundingEvalCallback"]
