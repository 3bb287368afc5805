"""predictions.jsonl's codec (gge.documents.records): fields a mutation audit found unpinned (issue 26).

Each test writes a line, reads it back and compares with the record it started from; each was checked
to fail on the audit's mutant of its rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gge.documents.records import PredictionRecord, decode, encode
from gge.types import Absent, Candidate, Refinement, SampleResult


def _round_trip(line: Mapping[str, Any]) -> PredictionRecord:
    return decode(json.loads(json.dumps(line)), "p.jsonl:1")


def test_a_critic_format_error_without_critic_text_is_written_and_read_back() -> None:
    # the critic answered nothing at all: no text, and that is a format error of its own
    r = SampleResult(
        "b", "0", {}, 1, (Candidate((1.0, 2.0)),), (True,), critic_format_error=True, critic_raw=""
    )
    line = encode(r)
    assert line["critic_format_error"] is True and line["critic_raw"] == ""
    back = _round_trip(line)
    assert back.critic_format_error is True and back.critic_raw == ""
    # neither: neither field is written, and both read back as their defaults
    plain = encode(SampleResult("b", "1", {}, 1, (Candidate((1.0, 2.0)),), (True,)))
    assert "critic_format_error" not in plain and "critic_raw" not in plain
    assert _round_trip(plain).critic_format_error is False


def test_an_absent_target_without_its_abstention_rule_is_one_an_abstention_hits() -> None:
    line = {"benchmark": "b", "id": "1", "candidates": [None], "target": {"absent": True}}
    assert _round_trip(line).target == Absent(abstention_hits=True)
    never = {**line, "target": {"absent": True, "abstention_hits": False}}
    assert _round_trip(never).target == Absent(abstention_hits=False)


def test_a_refine_format_error_is_read_back() -> None:
    cut = Refinement("critic", True, None, (0.0, 0.0, 50.0, 50.0), "(12, ", format_error=True)
    r = SampleResult("b", "0", {}, 1, (Candidate((1.0, 2.0)),), (True,), refine=cut)
    line = encode(r)
    assert line["refine"]["format_error"] is True
    assert _round_trip(line).refine == cut
    answered = Refinement("critic", True, (5.0, 6.0), (0.0, 0.0, 50.0, 50.0), "(5, 6)")
    back = _round_trip(encode(SampleResult("b", "1", {}, 1, (), (), refine=answered)))
    assert back.refine == answered and back.refine is not None and back.refine.format_error is False
