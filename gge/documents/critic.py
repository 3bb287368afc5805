"""results.json's critic types: a critic judged on frozen pools, and how much its markers hide.

Re-exported by :mod:`gge.documents.results` (``critic_pool`` and ``occlusion`` of a benchmark's entry).
"""

from __future__ import annotations

from typing import TypedDict


class PoolRecord(TypedDict):
    """``critic_pool.pool``: how the pools were made (:class:`gge.scoring.pools.PoolRecipe`)."""

    source: str
    """``synthetic``, ``run`` or ``file``."""
    n: int
    kinds: list[str]
    near: list[float]
    seed: int
    orders: str
    """``none`` (each pool asked once) or ``rotate`` (once per cyclic shift)."""
    path: str | None
    labels: str
    """``order`` or ``shuffled`` (the label probe)."""
    nested: bool
    digest: str
    """The sha256 of the run's ``pool.jsonl``: gge compare pairs two critics only on the same pool."""
    file: str
    skipped: dict[str, int]
    """Samples with no pool, by why (a refusal, a degenerate target, not in the pool file)."""


class AskGroup(TypedDict):
    """Asks of one group (a gold position, a target size) and the critic's accuracy on them."""

    asks: int
    accuracy: float | None


class Rescue(TypedDict):
    """``critic_pool.critic_rescue``: a pool from a run, where the gold was put in and where it was not."""

    asks: int
    rate: float | None
    """Asks whose gold was put in (the proposer missed) that the critic got right, in %."""
    proposer_hit_asks: int
    proposer_hit_accuracy: float | None


class CriticPool(TypedDict):
    """``critic_pool``: the critic judged alone on frozen pools (:mod:`gge.scoring.pool_figures`)."""

    pool: PoolRecord
    pools: int
    asks: int
    """Pools x orders: each ask is a sample of the run (Top-1 is the critic's accuracy on them)."""
    candidates: list[int]
    orders: str
    accuracy: float | None
    """Asks whose pick is gold, in %."""
    chance: float | None
    """The mean of gold / N over the asks, in %: a pick at random."""
    picked_kind: dict[str, float | None]
    """Share of asks whose pick is of each kind (gold, near_miss, other_element, random, proposer)."""
    by_gold_position: dict[str, AskGroup]
    first_position_rate: float | None
    first_position_over_chance: float | None
    """Points above the mean of 1 / N: a preference for the first marker shown, whatever it marks."""
    consistency: float | None
    """``rotate``: pools whose pick is the same candidate in every order, in %; None with one order."""
    by_target_size: dict[str, AskGroup]
    critic_format_errors: int
    critic_rescue: Rescue | None
    """A pool from a run only (None otherwise)."""
    by_candidates: dict[str, dict[str, float | int | None]] | None
    """``pool.nested=true``: ``{N: {asks, accuracy, chance}}`` over the nested sub-pools and full pools."""
    label_one_rate: float | None
    """``pool.labels=shuffled``: asks whose pick bears the number 1, in % (None: numbered as shown)."""
    label_one_over_chance: float | None


class RunRescue(TypedDict):
    """``critic_rescue`` of an ordinary run (``critic_rescue=true``): the critic offered what it missed."""

    asked: int
    """Samples whose candidates all missed, asked again with a gold point in place of one."""
    rescued: int
    rate: float
    """``rescued`` / ``asked`` in %: beside the critic gap, what the critic would have done."""


class CoverGroup(TypedDict):
    """Samples whose target the markers hid by so much, and the critic's Top-1 on them."""

    samples: int
    top1: float


class Occlusion(TypedDict):
    """``occlusion``: how much of each target a marking critic's markers hid (:mod:`gge.models.occlusion`)."""

    critic: str
    """``listwise`` (every marker on one view) or ``pointwise`` (the worst single-marker view)."""
    samples: int
    mean_cover: float | None
    """The mean share of the target's box the markers cover, in %."""
    buckets: dict[str, CoverGroup]
    """``none``, ``under 25%``, ``25-50%``, ``over 50%``."""
