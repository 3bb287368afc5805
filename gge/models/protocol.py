"""What a run's numbers are comparable with: the ``protocol`` line of results.json and report.md.

Each kind of model states its own (:meth:`gge.models.registry.ModelKind.protocol`): a family preset
compares the run's request with its authors' official one.
"""

from __future__ import annotations

from omegaconf import DictConfig

from gge.models.registry import kind_of


def protocol_statement(m: DictConfig) -> str:
    """What the numbers of this run are comparable with (results.json ``protocol``, report.md).

    ``official <family>, <source>`` when a family preset runs as its authors evaluate it (greedy, no
    critic, its requests unchanged); otherwise ``gge proposer/critic: not comparable to published
    numbers`` (naming what differs from the official request, if anything); with a refine stage
    (``model.refine=zoom``) ``gge cascade (zoom x<Z> on <pick>): not comparable to published numbers``
    (:func:`gge.models.registry.cascade_protocol`).
    """
    return kind_of(m).protocol(m)
