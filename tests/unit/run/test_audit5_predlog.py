"""A prediction log reopened after a crash, and closed: what is kept on disk and what is let go."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gge.run.predlog import PredictionLog


def _record(i: int) -> dict[str, object]:
    return {"benchmark": "b", "id": f"s{i}", "candidates": [[i, i]]}


def test_a_torn_last_line_behind_blank_lines_is_dropped_when_the_log_reopens(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    good = json.dumps(_record(0)) + "\n"
    path.write_bytes(good.encode() + b'{"benchmark": "b", "id": "s1", "cand\n' + b"\n  \n")
    with PredictionLog(path) as log:
        log.append([_record(2)])
    # the malformed line (the last with content) and the blank lines after it are gone; s2 follows s0
    assert path.read_text() == good + json.dumps(_record(2)) + "\n"


def _fds_on(path: Path) -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc")
def test_close_lets_the_file_go(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    log = PredictionLog(path)
    log.append([_record(0)])
    assert _fds_on(path) == 1
    log.close()
    assert _fds_on(path) == 0
    log.close()  # a second close is a no-op
    log.append([_record(1)])  # and a later append opens it again
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["s0", "s1"]
    log.close()
    assert _fds_on(path) == 0
