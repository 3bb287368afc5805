"""gge: a GUI-grounding evaluator for proposer/critic models (Oracle@K and Top-1).

Example:
    >>> from gge.types import Box
    >>> Box(0, 0, 10, 10).contains(10, 10)
    True
"""

__version__ = "0.1.0"
