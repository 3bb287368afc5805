from __future__ import annotations

import json
from pathlib import Path

import pytest

from gge.errors import GgeError
from gge.models.replay import ReplayModel
from gge.types import Box, Sample


def _write(tmp_path: Path, lines: list[object | str]) -> Path:
    p = tmp_path / "p.jsonl"
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return p


def _s(sid: str, bench: str = "b") -> Sample:
    return Sample(bench, sid, "/x.png", (10, 10), "click", Box(0, 0, 9, 9))


def test_parse_points_abstentions_scores(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        [
            {
                "benchmark": "b",
                "id": 7,
                "candidates": [[1, 2], None, [-3, -4], [-1, 5]],
                "scores": [0.5, None, 1, 2],
            },
            "",
            {
                "benchmark": "b",
                "id": "x",
                "candidates": [],
                "format_error": True,
                "raw": "no idea",
                "extra": 1,
            },
        ],
    )
    m = ReplayModel(p)
    a, b, c = m.predict([_s("7"), _s("x"), _s("gone")])
    assert [c.point for c in a.candidates] == [(1.0, 2.0), None, None, (-1.0, 5.0)]
    assert [c.score for c in a.candidates] == [0.5, None, 1.0, 2.0]
    assert b.format_error and b.raw == "no idea" and b.candidates == ()
    assert c.format_error and m.missing_ids("b", ["7", "x", "gone"]) == ["gone"]
    assert m.unknown_ids("b", ["7", "gone"]) == ["x"]
    assert m.settings()["sha256"] and m.benchmarks() == {"b"}


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{not json", "malformed JSON line"),
        ("[1, 2]", "expected a JSON object"),
        ({"id": "1", "candidates": []}, "missing field 'benchmark'"),
        ({"benchmark": "b", "id": True, "candidates": []}, "field 'id'"),
        ({"benchmark": "b", "id": "1", "candidates": [[1]]}, "[x, y]"),
        ({"benchmark": "b", "id": "1", "candidates": [[1, "a"]]}, "[x, y]"),
        ({"benchmark": "b", "id": "1", "candidates": {"x": 1}}, "'candidates' must be a list"),
        ({"benchmark": "b", "id": "1", "candidates": [[1, 2]], "scores": [1, 2]}, "one per candidate"),
        ({"benchmark": "b", "id": "1", "candidates": [], "format_error": "yes"}, "format_error"),
        ({"benchmark": "b", "id": "1", "candidates": [], "raw": 3}, "'raw'"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: object, needle: str) -> None:
    p = _write(tmp_path, [{"benchmark": "b", "id": "0", "candidates": []}, line])
    with pytest.raises(GgeError) as e:
        ReplayModel(p)
    assert f"{p}:2" in str(e.value) and needle in str(e.value)


def test_nan_rejected(tmp_path: Path) -> None:
    p = tmp_path / "p.jsonl"
    p.write_text('{"benchmark": "b", "id": "1", "candidates": [[NaN, 1]]}\n')
    with pytest.raises(GgeError, match="finite"):
        ReplayModel(p)


def test_duplicate_and_missing_file(tmp_path: Path) -> None:
    line = {"benchmark": "b", "id": "1", "candidates": []}
    p = _write(tmp_path, [line, line])
    with pytest.raises(GgeError, match=r"p.jsonl:2: duplicate prediction for b id 1 \(first at line 1\)"):
        ReplayModel(p)
    with pytest.raises(GgeError, match="not found"):
        ReplayModel(tmp_path / "nope.jsonl")
    assert ReplayModel(_write(tmp_path, [line, {**line, "benchmark": "c"}])).benchmarks() == {"b", "c"}
