"""Mutation-audit pins of the resume check's older-digest rule (:func:`gge.run.runstate.prepare_output_dir`).

Each test kills a mutant the other runstate tests let through; the digests are written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from gge.errors import GgeError
from gge.run.runstate import prepare_output_dir

V1_A = "a" * 64  # a first-scheme digest: 64 hex characters, no prefix
V1_B = "b" * 64
ASKED = "asked:" + "0" * 64


def _with_logs(out: Path, old: Mapping[str, object]) -> None:
    prepare_output_dir(out, old, resume=True)
    (out / "predictions.rank0.jsonl").write_text('{"benchmark": "x", "id": "1"}\n')


def test_an_unchanged_first_scheme_record_is_not_an_older_digest(tmp_path: Path) -> None:
    """Only an old v1 digest against a new one of another scheme is stale: v1 against the same v1 resumes."""
    fp = {"k": 5, "benchmarks": {"x": {"options": {}, "samples": V1_A}}}
    _with_logs(tmp_path, fp)
    prepare_output_dir(tmp_path, fp, resume=True)  # no first_digests: nothing to vouch, nothing stale
    assert (tmp_path / "predictions.rank0.jsonl").exists()


def test_a_benchmark_without_a_digest_does_not_hide_the_next_ones(tmp_path: Path) -> None:
    old = {"benchmarks": {"a": {"options": {}}, "b": {"options": {}, "samples": V1_B}}}
    new = {"benchmarks": {"a": {"options": {}}, "b": {"options": {}, "samples": ASKED}}}
    _with_logs(tmp_path, old)
    with pytest.raises(GgeError, match=r"older gge \(b: ids, instructions and screenshot names\)"):
        prepare_output_dir(tmp_path, new, resume=True)


def test_an_old_record_without_benchmarks_is_a_different_run_not_a_crash(tmp_path: Path) -> None:
    _with_logs(tmp_path, {"k": 5})
    new = {"k": 5, "benchmarks": {"x": {"options": {}, "samples": ASKED}}}
    with pytest.raises(GgeError, match=r"holds predictions of a different run") as e:
        prepare_output_dir(tmp_path, new, resume=True)
    assert "\n" not in str(e.value)
    assert json.loads((tmp_path / "run.json").read_text())["fingerprint"] == {"k": 5}


def test_every_benchmark_with_an_older_digest_is_named(tmp_path: Path) -> None:
    old = {"benchmarks": {"a": {"samples": V1_A}, "b": {"samples": V1_B}}}
    new = {"benchmarks": {"a": {"samples": ASKED}, "b": {"samples": ASKED}}}
    _with_logs(tmp_path, old)
    with pytest.raises(GgeError, match=r"older gge \(a, b: ids, instructions and screenshot names\)"):
        prepare_output_dir(tmp_path, new, resume=True)
    # one vouched for by its first-scheme digest, the other not: only the other is named
    with pytest.raises(GgeError, match=r"older gge \(b: ids, instructions and screenshot names\)"):
        prepare_output_dir(tmp_path, new, resume=True, first_digests={"a": V1_A, "b": V1_A})
