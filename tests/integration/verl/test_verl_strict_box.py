"""GroundUI's strict box (edges excluded) keeps its rule through the verl export and the reward.

region_to_json writes ``strict`` only when it is set (every other box exports as before),
region_from_json reads it back, and the reward applies it: a point on the edge scores 0 there.
"""

from __future__ import annotations

import json

import pytest

from gge.errors import GgeError
from gge.integrations.verl import compute_score_batch, region_from_json, region_to_json
from gge.integrations.verl.ground_truth import GroundTruth
from gge.types import Box

SIZE = (280, 280)  # a multiple of the patch factor: the model sees the screenshot unresized


def test_strict_round_trips_and_is_written_only_when_set() -> None:
    box = Box(0, 0, 100, 10, strict=True)
    obj = json.loads(json.dumps(region_to_json(box)))
    assert obj == {
        "type": "bbox",
        "x1": 0,
        "y1": 0,
        "x2": 100,
        "y2": 10,
        "space": "pixel",
        "size": None,
        "strict": True,
    }
    back = region_from_json(obj)
    assert back == box and not back.contains(100.0, 5) and back.contains(99.5, 5)
    plain = region_to_json(Box(0, 0, 100, 10))
    assert "strict" not in plain
    with pytest.raises(GgeError, match="integer_point and strict must be true or false"):
        region_from_json({**plain, "strict": "yes"})


@pytest.mark.parametrize(
    ("region", "reward"),
    [
        (Box(0, 0, 100, 10, strict=True), 0.0),  # x = 100 is the right edge: excluded
        (Box(0, 0, 100, 10), 1.0),  # included
        (Box(0, 0, 100.5, 10, strict=True), 1.0),  # inside
    ],
)
def test_the_reward_applies_the_strict_rule(region: Box, reward: float) -> None:
    gt = GroundTruth("groundui_1k", "7", region, SIZE, SIZE, SIZE, SIZE)
    out = compute_score_batch([{"response": "(100, 5)", "ground_truth": gt.to_json()}])
    assert out[0]["overall"] == reward
