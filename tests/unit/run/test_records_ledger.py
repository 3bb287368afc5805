"""predictions.jsonl's target, size and refine fields read back with their rules; a run's cost setup.

The target must come back with its official hit rule (a reader scores picks that are no candidate
with it), so each kind is checked point by point against the original region's own test.
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from gge.documents.records import decode, encode
from gge.errors import GgeError
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.report.cost_tables import setup_text
from gge.run.hardware import cost_setup
from gge.scoring.scoring import score_sample
from gge.types import Absent, Box, Candidate, Polygon, Prediction, Region, Sample

REGIONS: list[Region] = [
    Box(10, 20, 30, 40),
    Box(0.1, 0.2, 0.3, 0.4, space="normalized", size=(100, 100)),
    Box(0, 0, 30, 10, integer_point=True),
    Polygon(((10.0, 10.0), (40.0, 12.0), (25.0, 35.0))),
    Absent(),
    Absent(abstention_hits=False),
]
POINTS = [(x + 0.6, y + 0.6) for x, y in itertools.product(range(0, 50, 3), repeat=2)] + [(30.6, 5.0)]


@pytest.mark.parametrize("region", REGIONS, ids=lambda r: type(r).__name__)
def test_the_target_comes_back_with_its_hit_rule(region: Region) -> None:
    sample = Sample("b", "1", "/s.png", (100, 100), "x", region)
    pred = Prediction("b", "1", (Candidate((12.0, 22.0)), Candidate(None)))
    line = json.loads(json.dumps(encode(score_sample(sample, pred, k=2))))
    back = decode(line, "p.jsonl:1")
    assert back.size == (100, 100)
    assert back.target is not None and back.target.kind == region.kind
    assert [back.target.contains(*p) for p in POINTS] == [region.contains(*p) for p in POINTS]
    if isinstance(region, Absent):
        assert back.target == region  # abstention_hits kept: a refusal scored as a miss stays one


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("target", {"box": [1, 2, 3]}, "p.jsonl:4: field 'target' must be a box, polygon or absent target"),
        ("target", {"box": [0, 0, 0.5, 0.5], "space": "normalized"}, "p.jsonl:4: field 'target' must be"),
        ("size", [100, 0], "p.jsonl:4: field 'size' must be [width, height] in whole pixels"),
        ("refine", {"base": "best"}, "p.jsonl:4: refine 'base' must be the selection strategy it refined"),
    ],
)
def test_bad_fields_are_refused_naming_the_line(field: str, value: object, message: str) -> None:
    with pytest.raises(GgeError, match=re.escape(message)):
        decode({"benchmark": "b", "id": "1", "candidates": [], field: value}, "p.jsonl:4")


def test_a_single_pass_answer_records_the_points_it_listed() -> None:
    """Asked for K=5, the answer lists 2 points: its request answered 2 slots, not 5."""
    from gge.models.base import Generation, GenerationRequest

    class Two:
        def seen_size(self, w: int, h: int) -> tuple[int, int]:
            return (w, h)

        def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
            return [Generation(["(1, 2) (3, 4)"]) for _ in requests]

        def yes_probability(self, requests: list[GenerationRequest], yes: str, no: str) -> list[float]:
            return [0.5] * len(requests)

        def settings(self) -> dict[str, str]:
            return {"backend": "two"}

    from PIL import Image

    policy = GroundingPolicy(
        Two(), AdapterSettings(convention="abs_original", proposer="single_pass", k=5, critic="none")
    )
    (pred,) = policy.predict_images(
        [Sample("b", "0", "", (9, 9), "x", Box(0, 0, 1, 1))], [Image.new("RGB", (9, 9))]
    )
    assert len(pred.candidates) == 2
    assert [(c.stage, c.slot, c.candidates) for c in pred.costs] == [("propose", 0, 2)]


def test_the_cost_setup_of_a_replay_says_nothing_was_measured_here() -> None:
    measured = cost_setup((), backend="demo", batch_size=16)
    replayed = cost_setup((), backend="replay", batch_size=16, replayed_from="runs/a/predictions.jsonl")
    assert (measured["source"], replayed["source"]) == ("measured", "replayed")
    assert replayed["hardware"] == "not measured here: costs read back from runs/a/predictions.jsonl"
    assert setup_text(replayed) == "Costs: not measured here: costs read back from runs/a/predictions.jsonl"
    assert setup_text(measured).startswith("Costs: measured on ") and "backend demo, batch 16" in setup_text(
        measured
    )
    bare = cost_setup((), backend="replay", batch_size=1, replayed_from="old.jsonl", recorded=False)
    assert (
        setup_text(bare)
        == "Costs: none: old.jsonl has no cost records (written before gge kept them, or by hand)"
    )


def test_a_document_given_an_empty_notes_list_has_an_empty_notes_field() -> None:
    """``notes=[]`` (nothing differs from a full evaluation) is said, ``notes=None`` leaves the field out."""
    from gge.benchmarks import get_benchmark
    from gge.documents.results import ResultsDocument
    from gge.run.assemble import build_document

    sample = Sample("osworld_g", "a", "", (100, 100), "click", Box(0, 0, 50, 50))
    result = score_sample(sample, Prediction("osworld_g", "a", (Candidate((10.0, 10.0)),)), k=1)

    def build(notes: list[str] | None) -> tuple[ResultsDocument, str]:
        return build_document(
            {"osworld_g": get_benchmark("osworld_g")},
            {"osworld_g": [result]},
            k=1,
            strategy="first",
            protocol="p",
            model={},
            config={},
            notes=notes,
        )

    document, report = build([])
    assert document["notes"] == [] and "Note:" not in report
    document, report = build(["only 1 sample"])
    assert document["notes"] == ["only 1 sample"] and "Note: only 1 sample" in report
    document, _ = build(None)
    assert "notes" not in document
