"""Where two runs' annotation files differ, as compare's refusal names it (audit of issue 26's new code).

``_annotations`` reads only each run's results.json ``load.provenance.files``; a run here is that
document alone.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gge.compare.pairing import _annotations


def _run(files: list[dict[str, Any]]) -> Any:
    return SimpleNamespace(document={"benchmarks": {"b": {"load": {"provenance": {"files": files}}}}})


def test_one_differing_file_is_named_without_a_count_of_more() -> None:
    a = _run([{"path": "web.json", "sha256": "a" * 64}, {"path": "mobile.json", "sha256": "c" * 64}])
    b = _run([{"path": "web.json", "sha256": "b" * 64}, {"path": "mobile.json", "sha256": "c" * 64}])
    assert _annotations(a, b, "b") == f"load.provenance: web.json sha256 {'a' * 12}… in A vs {'b' * 12}… in B"


def test_two_differing_files_name_the_first_and_count_the_other() -> None:
    a = _run([{"path": "web.json", "sha256": "a" * 64}, {"path": "mobile.json", "sha256": "c" * 64}])
    b = _run([{"path": "web.json", "sha256": "b" * 64}, {"path": "mobile.json", "sha256": "d" * 64}])
    assert _annotations(a, b, "b").endswith(f"{'b' * 12}… in B (+1 more files)")


def test_a_file_without_a_sha256_reads_as_unread() -> None:
    a = _run([{"path": "web.json", "sha256": None}])
    b = _run([{"path": "web.json", "sha256": "b" * 64}])
    assert _annotations(a, b, "b") == f"load.provenance: web.json sha256 unread… in A vs {'b' * 12}… in B"
