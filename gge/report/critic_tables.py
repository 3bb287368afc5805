"""The report's critic sections: a critic judged on a frozen pool, and the targets its markers hide.

Built once as :class:`~gge.report.cost_tables.Section` objects from a benchmark's entry, so report.md
(:func:`gge.report.markdown.render_section`) and report.html (:func:`gge.report.cost_html.section_html`)
print the same tables: ``critic_pool`` (results.json ``critic_pool``: accuracy against chance, the
first-position preference, consistency over the orders), what the critic picked by kind, its accuracy
by the gold's position and by target size, and ``occlusion`` (how much of the target the markers hid,
with Top-1 by how much).

Example:
    >>> entry = {"occlusion": {"critic": "listwise", "samples": 3, "mean_cover": 40.0,
    ...          "buckets": {"none": {"samples": 1, "top1": 100.0}, "over 50%": {"samples": 2, "top1": 0.0}}}}
    >>> [(s.key, s.rows) for s in critic_sections(entry)]
    [('occlusion', [['none', '1', '100.0'], ['over 50%', '2', '0.0']])]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gge.report.cost_tables import Section
from gge.report.numbers import fmt


def _pool_sections(pool: Mapping[str, Any]) -> list[Section]:
    recipe = pool["pool"]
    n = "/".join(str(c) for c in pool["candidates"])
    orders = "every cyclic order" if pool["orders"] == "rotate" else "one order"
    over = pool["first_position_over_chance"]
    rows = [
        ["accuracy (the pick is gold)", f"{fmt(pool['accuracy'])}%", f"chance {fmt(pool['chance'])}%"],
        [
            "first shown picked",
            f"{fmt(pool['first_position_rate'])}%",
            f"{'+' if over is not None and over >= 0 else ''}{fmt(over)} points over chance",
        ],
        [
            "consistency (one candidate in every order)",
            "–" if pool["consistency"] is None else f"{fmt(pool['consistency'])}%",
            "needs orders=rotate" if pool["consistency"] is None else f"{pool['pools']} pools",
        ],
        ["critic format errors", str(pool["critic_format_errors"]), ""],
    ]
    if pool.get("label_one_rate") is not None:
        one = pool["label_one_over_chance"]
        rows.insert(
            2,
            [
                "number 1 picked (markers numbered by a shuffle)",
                f"{fmt(pool['label_one_rate'])}%",
                f"{'+' if one is not None and one >= 0 else ''}{fmt(one)} points over chance",
            ],
        )
    rescue = pool.get("critic_rescue")
    if rescue is not None:
        rows.append(
            [
                "critic rescue (the proposer missed: the gold put in)",
                f"{fmt(rescue['rate'])}%",
                f"{rescue['asks']} asks; {fmt(rescue['proposer_hit_accuracy'])}% where the proposer hit",
            ]
        )
    skipped = ", ".join(f"{count} {why}" for why, count in recipe["skipped"].items())
    summary = Section(
        "critic_pool",
        f"The critic on a frozen pool: {pool['pools']} pools of {n} candidates, {orders} "
        f"({pool['asks']} asks)",
        ["figure", "value", "against"],
        rows,
        [
            f"Pool {recipe['source']} (seed {recipe['seed']}, digest {recipe['digest'][:12]}…, "
            f"{recipe['file']}): every model asked on it sees the same candidates, so this moves with "
            "the critic alone. Top-1 above is this accuracy; Oracle@K is 100% by construction.",
            *([f"Samples without a pool: {skipped}."] if skipped else []),
            *(
                [
                    "Each pool is asked in every order: the asks of one pool are not independent, so the "
                    "headline's interval (it counts asks) is narrower than it should be; gge compare "
                    "resamples screenshots."
                ]
                if pool["orders"] == "rotate"
                else []
            ),
        ],
    )
    kinds = Section(
        "critic_pool_kinds",
        "What the critic picked (% of asks)",
        ["kind", "% of asks"],
        [[kind, fmt(share)] for kind, share in pool["picked_kind"].items()],
        [
            "A distractor kind picked often is what fools the critic: near_miss (just outside the target), "
            "other_element (another target on the screen), random, proposer (a run's own candidate)."
        ],
    )
    out = [summary, kinds]
    if pool["by_gold_position"]:
        out.append(
            Section(
                "critic_pool_positions",
                "Accuracy by where the gold was shown",
                ["gold at", "asks", "accuracy"],
                [
                    [str(int(p) + 1), str(g["asks"]), fmt(g["accuracy"])]
                    for p, g in pool["by_gold_position"].items()
                ],
                ["1 is the first marker shown; a critic with no position bias is as accurate at each place."],
            )
        )
    if pool.get("by_candidates"):
        out.append(
            Section(
                "critic_pool_candidates",
                "Accuracy by the number of candidates (nested pools)",
                ["candidates", "asks", "accuracy", "chance"],
                [
                    [n, str(g["asks"]), fmt(g["accuracy"]), fmt(g["chance"])]
                    for n, g in pool["by_candidates"].items()
                ],
                [
                    "Each smaller pool is the next one less a distractor, on the same points: how the "
                    "critic's accuracy falls as it is offered more."
                ],
            )
        )
    if pool["by_target_size"]:
        out.append(
            Section(
                "critic_pool_sizes",
                "Accuracy by target size",
                ["target area", "asks", "accuracy"],
                [[name, str(g["asks"]), fmt(g["accuracy"])] for name, g in pool["by_target_size"].items()],
                ["small: under 0.1% of the screen; medium: under 1%; large: the rest."],
            )
        )
    return out


def critic_sections(entry: Mapping[str, Any]) -> list[Section]:
    """The critic sections of one benchmark's entry (those it has: ``critic_pool``, ``occlusion``)."""
    out: list[Section] = []
    pool = entry.get("critic_pool")
    if pool is not None:
        out += _pool_sections(pool)
    rescue = entry.get("critic_rescue")
    if rescue is not None:
        out.append(
            Section(
                "critic_rescue",
                "The critic offered the target it missed (critic_rescue)",
                ["samples asked", "picked the target", "rate"],
                [[str(rescue["asked"]), str(rescue["rescued"]), f"{fmt(rescue['rate'])}%"]],
                [
                    "Where every candidate missed, the critic asked again with a point inside the target in "
                    "place of one: beside the critic gap, whether better proposals alone would have helped."
                ],
            )
        )
    covered = entry.get("occlusion")
    if covered is not None and covered["samples"]:
        out.append(
            Section(
                "occlusion",
                f"Targets under the critic's markers ({covered['critic']}, "
                f"mean {fmt(covered['mean_cover'])}% hidden)",
                ["share of the target hidden", "n", "Top-1"],
                [[name, str(b["samples"]), fmt(b["top1"])] for name, b in covered["buckets"].items()],
                [
                    "The markers drawn at the resolution the model sees (listwise: all on one view; "
                    "pointwise: the worst single-marker view) over the target's box: a small target under "
                    "its markers may be lost to the critic."
                ],
            )
        )
    return out
