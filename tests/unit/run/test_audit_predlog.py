"""Mutation-audit pins of dropping malformed log lines (:func:`gge.run.predlog.read_records`)."""

from __future__ import annotations

import json
from pathlib import Path

from gge.run.predlog import bad_lines_path, rank_log_path, read_records


def _line(i: int) -> str:
    return json.dumps({"benchmark": "b", "id": str(i), "candidates": []})


def test_a_dropped_line_adds_no_record_and_no_duplicate(tmp_path: Path) -> None:
    path = rank_log_path(tmp_path, 0)
    path.write_text(f"{{oops\n{_line(0)}\n{{bad\n{_line(1)}\n")  # the first line is malformed too
    records = read_records([path], repair=False, drop_malformed=True)
    assert list(records) == [("b", "0"), ("b", "1")]
    assert records.duplicates == 0 and records.duplicate_keys == []


def test_dropped_lines_are_appended_to_the_bad_file_not_overwriting_it(tmp_path: Path) -> None:
    path = rank_log_path(tmp_path, 0)
    path.write_text(f"{_line(0)}\n{{first\n{_line(1)}\n")
    read_records([path], drop_malformed=True)
    with path.open("a") as f:
        f.write(f"{{second\n{_line(2)}\n")
    read_records([path], drop_malformed=True)
    assert bad_lines_path(path).read_text() == "{first\n{second\n"
    assert path.read_text() == f"{_line(0)}\n{_line(1)}\n{_line(2)}\n"


def test_moving_lines_out_does_not_bring_back_a_cut_tail(tmp_path: Path) -> None:
    path = rank_log_path(tmp_path, 0)
    path.write_text(f"{_line(0)}\n{{bad\n{_line(1)}\n{{trunc")  # a malformed middle line and a cut tail
    records = read_records([path], drop_malformed=True)
    assert list(records) == [("b", "0"), ("b", "1")] and records.dropped == [path]
    assert path.read_text() == f"{_line(0)}\n{_line(1)}\n"
    assert bad_lines_path(path).read_text() == "{bad\n"
