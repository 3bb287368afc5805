from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from PIL import Image

from gge.errors import GgeError
from gge.models.replay import ReplayModel
from gge.types import Box, Sample


def _write(tmp_path: Path, lines: Sequence[object]) -> Path:
    p = tmp_path / "p.jsonl"
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return p


def _s(sid: str, bench: str = "b", image: str = "") -> Sample:
    return Sample(bench, sid, image, (10, 10), "click", Box(0, 0, 9, 9))


def _shot(tmp_path: Path, name: str, size: tuple[int, int]) -> str:
    path = tmp_path / name
    Image.new("RGB", size, "white").save(path)
    return str(path)


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
    shot = _shot(tmp_path, "a.png", (10, 10))
    a, b, c = m.predict([_s("7", image=shot), _s("x", image=shot), _s("gone", image=shot)])
    assert [c.point for c in a.candidates] == [(1.0, 2.0), None, None, (-1.0, 5.0)]
    assert [c.score for c in a.candidates] == [0.5, None, 1.0, 2.0]
    assert b.format_error and b.raw == "no idea" and b.candidates == ()
    assert c.not_in_file and not c.format_error and m.missing_ids("b", ["7", "x", "gone"]) == ["gone"]
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


def _line(sid: str, image: str | None = None, size: list[int] | None = None) -> dict[str, object]:
    line: dict[str, object] = {"benchmark": "b", "id": sid, "candidates": [[5, 5]]}
    if image is not None:
        line["image"] = image
    if size is not None:
        line["size"] = size
    return line


def test_lines_naming_other_screenshots_or_sizes_are_refused(tmp_path: Path) -> None:
    a = _s("0", image=_shot(tmp_path, "a.png", (10, 10)))
    b = _s("1", image=_shot(tmp_path, "b.png", (10, 10)))
    c = _s("2", image=_shot(tmp_path, "c.png", (10, 10)))
    lines = [
        _line("0", "/elsewhere/a.png", [10, 10]),  # the same file name and size: agrees
        _line("1", "/elsewhere/other.png", [10, 10]),  # another screenshot
        _line("2", "/elsewhere/c.png", [1920, 1080]),  # another size
    ]
    p = _write(tmp_path, lines)
    with pytest.raises(GgeError) as e:
        ReplayModel(p).predict([a, b, c])
    assert str(e.value) == (
        f"{p}:2: b 1: the line's screenshot is other.png (10x10), the sample's b.png (10x10) "
        "(2 of the 3 lines checked name another screenshot or size than their sample: predictions made "
        "on other data; replay them on the data they were made on)"
    )
    assert (
        ReplayModel(p).differences(c)
        == "the line's screenshot is c.png (1920x1080), the sample's c.png (10x10)"
    )
    assert ReplayModel(p).differences(a) is None
    ReplayModel(p).check_samples([a])  # the agreeing line alone passes
    assert [x.candidates[0].point for x in ReplayModel(p).predict([a])] == [(5.0, 5.0)]


def test_what_is_not_compared(tmp_path: Path) -> None:
    shot = _shot(tmp_path, "a.png", (10, 10))
    embedded = f"{tmp_path / 'test.parquet'}::parquet:3/image"
    lines = [
        _line("0"),  # a hand-written line: no image, no size
        _line("1", "/x/other.png", [1, 1]),  # the writing run could not read its screenshot: size unknown
        _line("2", embedded, [10, 10]),  # a Hub copy's row: named by its row, the size still compared
    ]
    model = ReplayModel(_write(tmp_path, lines))
    s0, s1, s2 = _s("0", image=shot), _s("1", image=shot), _s("2", image=shot)
    assert model.differences(s0) is None
    assert model.differences(s1) == "the line's screenshot is other.png (1x1), the sample's a.png (10x10)"
    assert model.differences(s2) is None
    wide = _s("2", image=shot)
    wide = Sample(wide.benchmark, wide.id, wide.image_path, (20, 10), wide.instruction, wide.region)
    assert model.differences(wide) == (
        "the line's screenshot is test.parquet::parquet:3/image (10x10), the sample's a.png (20x10)"
    )


def test_a_missing_screenshot_is_an_image_error_not_a_hit(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone.png")
    sample = Sample("b", "0", gone, (1, 1), "click", Box(0, 0, 9, 9))  # the loaders' unknown size
    p = _write(tmp_path, [_line("0")])
    (pred,) = ReplayModel(p).predict([sample])
    assert pred.image_error == f"b: sample 0: cannot read image {gone}: not found"
    assert pred.candidates == ()
    with pytest.raises(GgeError) as e:
        ReplayModel(p, strict_images=True).predict([sample])
    assert str(e.value) == f"b: sample 0: cannot read image {gone}: not found (strict_images=true)"
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not a png")
    unreadable = Sample("b", "0", str(junk), (1, 1), "click", Box(0, 0, 9, 9))
    (pred,) = ReplayModel(p).predict([unreadable])
    assert pred.image_error == f"b: sample 0: cannot read image {junk}: its header is unreadable"
