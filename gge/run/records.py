"""The per-sample record: how one :class:`~gge.scoring.scoring.SampleResult` is written to predictions.jsonl.

``predictions.jsonl`` is a valid replay file (``model=replay model.predictions=...``): re-scoring it
with another selection strategy or K needs no model.

Example:
    >>> from gge.types import Candidate
    >>> from gge.scoring.scoring import SampleResult
    >>> r = SampleResult("b", "1", {}, 5, (Candidate((1.0, 2.0), 0.5),), (True,))
    >>> result_record(r)["candidates"]
    [[1.0, 2.0]]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gge.errors import GgeError
from gge.scoring.scoring import SampleResult
from gge.types import Candidate

UNPARSED = "unparsed"
"""How predictions.jsonl writes the slot of an unparseable sampled answer (replay reads it back)."""


def _point(c: Candidate | None) -> list[float] | str | None:
    if c is not None and not c.parsed:
        return UNPARSED
    return None if c is None or c.point is None else [c.point[0], c.point[1]]


def result_record(r: SampleResult) -> dict[str, Any]:
    """One line of predictions.jsonl: the replay fields plus the per-sample outcome."""
    rec: dict[str, Any] = {
        "benchmark": r.benchmark,
        "id": r.id,
        "candidates": [_point(c) for c in r.candidates],
    }
    if any(c.score is not None for c in r.candidates):
        rec["scores"] = [c.score for c in r.candidates]
    rec["raw"] = r.raw
    rec["format_error"] = r.format_error
    if r.truncated:
        rec["truncated"] = True
    if r.image_error is not None:
        rec["image_error"] = r.image_error
    if r.critic_raw or r.critic_format_error:
        rec["critic_raw"] = r.critic_raw
        rec["critic_format_error"] = r.critic_format_error
    rec["hits"] = list(r.hits)
    if r.image_path:
        rec["image"] = r.image_path
    if r.labels:
        rec["labels"] = {key: v if isinstance(v, str) else list(v) for key, v in r.labels.items()}
    rec["top1"] = dict(r.top1)
    rec["picks"] = {name: _point(p) for name, p in r.picks.items()}
    return rec


def json_lines(text: str, file: str | Path) -> Iterator[tuple[int, str, Any]]:
    r"""``(line number, "file:line", object)`` of each non-blank line of a JSON-lines text.

    Raises:
        GgeError: naming ``file:line``, for a line that is not JSON.

    Example:
        >>> [(n, obj) for n, _, obj in json_lines('{"a": 1}\n\n[2]\n', "x.jsonl")]
        [(1, {'a': 1}), (3, [2])]
    """
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise GgeError(f"{where}: malformed JSON line: {e.msg}") from None
        yield lineno, where, obj
