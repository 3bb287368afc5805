"""A critic's figures on frozen pools (:mod:`gge.scoring.pools`): accuracy against chance, and its biases.

One *ask* is one pool shown in one order (:func:`gge.scoring.pools.orders`); the critic's pick is its
highest-scored candidate (the ``critic`` strategy's rule: ties to the earlier, unscored below scored).
Per benchmark (:func:`pool_figures`):

- ``accuracy``: asks whose pick is gold, in %; ``chance``: the mean of gold / N over the asks (a pick
  drawn at random), in %;
- ``picked_kind``: the share of asks whose pick is of each kind (gold, near_miss, other_element,
  random, proposer): which distractor fools the critic;
- ``by_gold_position``: accuracy of the asks whose (one) gold is shown at each position, 0-based;
- ``first_position_rate``: the share of asks whose pick is the first shown, and ``first_position_over
  _chance`` that share minus the mean of 1 / N (points): a preference for the first marker, apart
  from what it marks, when the orders rotate the gold through every position;
- ``consistency`` (orders ``rotate`` only): the share of pools whose pick is the same candidate in
  every order (None with one order: nothing to compare);
- ``by_target_size``: accuracy by the target's area as a share of the screen (:data:`SIZE_BUCKETS`);
- ``critic_format_errors``: asks whose critic answer did not parse (a listwise critic then keeps the
  shown order: its pick is the first shown, which the first-position rate counts too);
- ``label_one_rate`` and ``label_one_over_chance`` (``pool.labels=shuffled``, a listwise critic): the
  share of asks whose pick bears the number 1; with the numbers shuffled apart from the order shown,
  a bias to the label reads here and a bias to the first marker drawn (its place in the list, its
  colour) in ``first_position_rate``, and a bias to a place on the screen in ``consistency``;
- ``by_candidates`` (``pool.nested=true``): accuracy and chance by the number of candidates, over
  each pool's nested sub-pools of 2..N-1 (:func:`gge.scoring.pools.sub_pools`) and the full pools;
  every other figure is over the full pools only;
- ``critic_rescue`` (a pool from a run): the *rescue rate*, accuracy on the asks whose gold was put in
  because the proposer missed (would the critic have picked the target had it been offered?), beside
  the accuracy where the proposer's own candidate hit.

Example:
    >>> from gge.scoring.pools import PoolEntry
    >>> e = PoolEntry("b", "0", ((1.0, 1.0), (5.0, 5.0)), ("gold", "random"), (0,))
    >>> asks = [Ask(e, (0, 1), 0, 0.01), Ask(e, (1, 0), 0, 0.01)]  # always the first shown
    >>> f = pool_figures(asks, "rotate")
    >>> f["accuracy"], f["chance"], f["first_position_rate"], f["consistency"]
    (50.0, 50.0, 100.0, 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gge.scoring.pools import PoolEntry

SIZE_BUCKETS: tuple[tuple[str, float], ...] = (("small", 0.001), ("medium", 0.01), ("large", float("inf")))
"""Target-area buckets: below 0.1% of the screen, below 1%, the rest (ScreenSpot-Pro's targets are
mostly small; a 1920x1080 screen's 0.1% is a 45x45 icon)."""


@dataclass(frozen=True)
class Ask:
    """One pool asked in one order, and what the critic picked.

    Attributes:
        entry: The pool.
        order: Shown position -> pool index.
        picked: The shown position the critic picked, or None (no candidate scored or chosen).
        area: The target's area as a share of the screen.
        format_error: The critic's answer did not parse.
        labels: The markers' numbers (shown position -> number), None: numbered as shown.
        nested: The pool is a nested sub-pool of a sample's pool (``pool.nested``).
    """

    entry: PoolEntry
    order: tuple[int, ...]
    picked: int | None
    area: float
    format_error: bool = False
    labels: tuple[str, ...] | None = None
    nested: bool = False

    @property
    def picked_index(self) -> int | None:
        """The pool index of the pick."""
        return None if self.picked is None else self.order[self.picked]

    @property
    def correct(self) -> bool:
        """Whether the pick is gold."""
        return self.picked_index is not None and self.picked_index in self.entry.gold


def _pct(num: float, den: int) -> float | None:
    return None if den == 0 else round(100.0 * num / den, 4)


def _bucket(area: float) -> str:
    return next(name for name, below in SIZE_BUCKETS if area < below)


def _by_candidates(asks: Sequence[Ask]) -> dict[str, dict[str, Any]]:
    """Accuracy and chance by the number of candidates shown (nested sub-pools and the full pools)."""
    groups: dict[int, list[Ask]] = {}
    for a in asks:
        groups.setdefault(len(a.entry.points), []).append(a)
    return {
        str(n): {
            "asks": len(g),
            "accuracy": _pct(sum(a.correct for a in g), len(g)),
            "chance": _pct(sum(len(a.entry.gold) / n for a in g), len(g)),
        }
        for n, g in sorted(groups.items())
    }


def pool_figures(asks: Sequence[Ask], orders: str) -> dict[str, Any]:
    """The critic's figures over one benchmark's asks (see the module).

    Args:
        asks: Every ask of the benchmark.
        orders: The pool's ``orders`` (``rotate`` gives consistency).

    Returns:
        The figures (percentages to 4 decimals; None where nothing is counted).
    """
    nested = _by_candidates(asks) if any(a.nested for a in asks) else None
    asks = [a for a in asks if not a.nested]  # the figures below: the full pools
    n_asks = len(asks)
    pools: dict[str, list[Ask]] = {}
    for a in asks:
        pools.setdefault(a.entry.id, []).append(a)
    kinds: dict[str, int] = {}
    for a in asks:
        i = a.picked_index
        kind = "none" if i is None else a.entry.kinds[i]
        kinds[kind] = kinds.get(kind, 0) + 1
    positions: dict[int, list[bool]] = {}
    for a in asks:
        if len(a.entry.gold) == 1:
            positions.setdefault(a.order.index(a.entry.gold[0]), []).append(a.correct)
    sizes: dict[str, list[bool]] = {}
    for a in asks:
        sizes.setdefault(_bucket(a.area), []).append(a.correct)
    chance = sum(len(a.entry.gold) / len(a.entry.points) for a in asks)
    first_chance = sum(1 / len(a.entry.points) for a in asks)
    firsts = sum(1 for a in asks if a.picked == 0)
    consistent = sum(
        1
        for group in pools.values()
        if len({a.picked_index for a in group}) == 1 and group[0].picked is not None
    )
    return {
        "pools": len(pools),
        "asks": n_asks,
        "candidates": sorted({len(a.entry.points) for a in asks}),
        "orders": orders,
        "accuracy": _pct(sum(a.correct for a in asks), n_asks),
        "chance": _pct(chance, n_asks),
        "picked_kind": {k: _pct(v, n_asks) for k, v in sorted(kinds.items())},
        "by_gold_position": {
            str(p): {"asks": len(v), "accuracy": _pct(sum(v), len(v))} for p, v in sorted(positions.items())
        },
        "first_position_rate": _pct(firsts, n_asks),
        "first_position_over_chance": (
            None if n_asks == 0 else round(100.0 * (firsts - first_chance) / n_asks, 4)
        ),
        "consistency": _pct(consistent, len(pools)) if orders == "rotate" else None,
        "by_target_size": {
            name: {"asks": len(sizes[name]), "accuracy": _pct(sum(sizes[name]), len(sizes[name]))}
            for name, _ in SIZE_BUCKETS
            if name in sizes
        },
        "critic_format_errors": sum(a.format_error for a in asks),
        "critic_rescue": _rescue(asks),
        "by_candidates": nested,
        **_label_one(asks, first_chance),
    }


def _label_one(asks: Sequence[Ask], chance: float) -> dict[str, Any]:
    """The label probe's figures: asks whose pick bears number 1 (None: markers numbered as shown)."""
    if not any(a.labels is not None for a in asks):
        return {"label_one_rate": None, "label_one_over_chance": None}
    ones = sum(
        1 for a in asks if a.picked is not None and (a.labels or ())[a.picked : a.picked + 1] == ("1",)
    )
    n = len(asks)
    return {"label_one_rate": _pct(ones, n), "label_one_over_chance": round(100.0 * (ones - chance) / n, 4)}


def _rescue(asks: Sequence[Ask]) -> dict[str, Any] | None:
    """A pool from a run: accuracy where the gold was put in (the proposer missed) and where it was its own.

    None for a pool with no ``proposer`` candidates (synthetic, a file).
    """
    if not any("proposer" in a.entry.kinds for a in asks):
        return None
    injected = [a for a in asks if any(a.entry.kinds[g] == "gold" for g in a.entry.gold)]
    own = [a for a in asks if a not in injected]
    return {
        "asks": len(injected),
        "rate": _pct(sum(a.correct for a in injected), len(injected)),
        "proposer_hit_asks": len(own),
        "proposer_hit_accuracy": _pct(sum(a.correct for a in own), len(own)),
    }
