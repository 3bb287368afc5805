"""A box tested on the integer pixel point (showdown-clicks) keeps that rule through the verl export.

region_to_json writes ``integer_point`` only when it is set (every other box exports byte for byte as
before), region_from_json reads it back, and the reward applies it: x=100.6 hits x2=100 there.
"""

from __future__ import annotations

import json

import pytest

from gge.errors import GgeError
from gge.integrations.verl import compute_score_batch, region_from_json, region_to_json
from gge.integrations.verl.ground_truth import GroundTruth
from gge.types import Box

SIZE = (280, 280)  # a multiple of the patch factor: the model sees the screenshot unresized


def test_integer_point_round_trips_and_is_written_only_when_set() -> None:
    box = Box(0, 0, 100, 10, integer_point=True)
    obj = json.loads(json.dumps(region_to_json(box)))
    assert obj == {
        "type": "bbox",
        "x1": 0,
        "y1": 0,
        "x2": 100,
        "y2": 10,
        "space": "pixel",
        "size": None,
        "integer_point": True,
    }
    back = region_from_json(obj)
    assert back == box and back.contains(100.6, 5) and not back.contains(101.0, 5)
    plain = region_to_json(Box(0, 0, 100, 10))
    assert list(plain) == ["type", "x1", "y1", "x2", "y2", "space", "size"]  # unchanged for the others
    assert region_from_json(plain) == Box(0, 0, 100, 10)
    with pytest.raises(GgeError, match="integer_point and strict must be true or false"):
        region_from_json({**plain, "integer_point": 1})


@pytest.mark.parametrize(
    ("region", "reward"),
    [
        (Box(0, 0, 100, 10, integer_point=True), 1.0),  # int(100.6) = 100 <= x2
        (Box(0, 0, 100, 10), 0.0),  # as given: 100.6 > x2
        (Box(101, 0, 200, 10, integer_point=True), 0.0),  # int(100.6) = 100 < x1
    ],
)
def test_the_reward_applies_the_integer_point_rule(region: Box, reward: float) -> None:
    gt = GroundTruth("showdown_clicks", "0123456789abcdef", region, SIZE, SIZE, SIZE, SIZE)
    out = compute_score_batch([{"response": "(100.6, 5)", "ground_truth": gt.to_json()}])
    assert out[0]["overall"] == reward
