r"""The replay model: predictions read from a JSONL file instead of a network.

One line per sample::

    {"benchmark": "screenspot_pro", "id": "vscode_macos_0",
     "candidates": [[x, y], null, ...], "scores": [0.9, 0.1, ...]}

Points are in original-image pixels. ``null``, or a point whose two coordinates are both negative,
is an abstention ("the element is not there"); the string ``"unparsed"`` keeps the slot of an
answer that could not be parsed (it never hits). ``scores`` (critic scores, one per candidate, numbers
or null) is optional; so are ``raw`` (the model's text) and ``format_error`` (true when the model's
answer could not be parsed). Other keys are ignored, so gge's own ``predictions.jsonl`` replays.
A sample with no line counts as a format error; a line whose id no loaded sample has is counted and
reported, not an error.

Example:
    >>> import json, tempfile, os
    >>> from gge.types import Box, Sample
    >>> path = os.path.join(tempfile.mkdtemp(), "p.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write(json.dumps({"benchmark": "b", "id": 1, "candidates": [[5, 5], [-1, -1]]}) + "\n")
    >>> model = ReplayModel(path)
    >>> s = Sample("b", "1", "/x.png", (10, 10), "click", Box(0, 0, 9, 9))
    >>> [c.point for c in model.predict([s])[0].candidates]
    [(5.0, 5.0), None]
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gge.errors import GgeError
from gge.types import Candidate, Point, Prediction, Sample


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _candidate(value: Any, score: float | None, where: str) -> Candidate:
    if value == "unparsed":
        return Candidate(None, score, parsed=False)
    return Candidate(_point(value, where), score)


def _point(value: Any, where: str) -> Point | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(_number(v) for v in value)):
        raise GgeError(
            f'{where}: a candidate must be [x, y] with finite numbers, null or "unparsed"; got {value!r}'
        )
    x, y = float(value[0]), float(value[1])
    return None if x < 0 and y < 0 else (x, y)


def parse_line(obj: Any, where: str) -> Prediction:
    """Validate one replay record and turn it into a Prediction.

    Args:
        obj: The parsed JSON value of the line.
        where: ``file:line`` for messages.

    Returns:
        The prediction.

    Raises:
        GgeError: naming the file, line and field at fault.
    """
    if not isinstance(obj, dict):
        raise GgeError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for key in ("benchmark", "id", "candidates"):
        if key not in obj:
            raise GgeError(f"{where}: missing field '{key}'")
    bench, sid = obj["benchmark"], obj["id"]
    if not isinstance(bench, str):
        raise GgeError(f"{where}: field 'benchmark' must be a string, got {bench!r}")
    if isinstance(sid, bool) or not isinstance(sid, (str, int)):
        raise GgeError(f"{where}: field 'id' must be a string or an integer, got {sid!r}")
    cands = obj["candidates"]
    if not isinstance(cands, list):
        raise GgeError(f"{where}: field 'candidates' must be a list, got {cands!r}")
    scores = obj.get("scores")
    if scores is not None and not (
        isinstance(scores, list)
        and len(scores) == len(cands)
        and all(s is None or _number(s) for s in scores)
    ):
        raise GgeError(
            f"{where}: field 'scores' must be a list of {len(cands)} numbers or nulls (one per candidate), "
            f"got {scores!r}"
        )
    raw = obj.get("raw", "")
    if not isinstance(raw, str):
        raise GgeError(f"{where}: field 'raw' must be a string, got {raw!r}")
    fmt = obj.get("format_error", False)
    if not isinstance(fmt, bool):
        raise GgeError(f"{where}: field 'format_error' must be true or false, got {fmt!r}")
    image_error = obj.get("image_error")
    if image_error is not None and not isinstance(image_error, str):
        raise GgeError(f"{where}: field 'image_error' must be a string, got {image_error!r}")
    truncated = obj.get("truncated", False)
    if not isinstance(truncated, bool):
        raise GgeError(f"{where}: field 'truncated' must be true or false, got {truncated!r}")
    critic_raw = obj.get("critic_raw", "")
    critic_fmt = obj.get("critic_format_error", False)
    if not isinstance(critic_raw, str) or not isinstance(critic_fmt, bool):
        raise GgeError(f"{where}: 'critic_raw' must be a string and 'critic_format_error' true or false")
    candidates = tuple(
        _candidate(c, None if scores is None or scores[i] is None else float(scores[i]), where)
        for i, c in enumerate(cands)
    )
    return Prediction(
        bench,
        str(sid),
        candidates,
        format_error=fmt,
        raw=raw,
        critic_format_error=critic_fmt,
        critic_raw=critic_raw,
        truncated=truncated,
        image_error=image_error,
    )


class ReplayModel:
    """A policy that answers from a predictions file (no model needed).

    Args:
        predictions: Path of the JSONL file.
        delay_s: Seconds to sleep per ``predict`` call, to stand in for a model's latency in
            benchmarks and interruption tests (0 by default).

    Raises:
        GgeError: for a missing file, a malformed line or a duplicated (benchmark, id).
    """

    needs_images = False
    proposer_mode: str | None = None
    """None: a replayed run's mode is its configuration's (``model.proposer``), not the file's."""
    critic_mode: str | None = None
    score_kind: str | None = None
    """None: inferred from the file's scores."""

    def __init__(self, predictions: str | Path, *, delay_s: float = 0.0) -> None:
        self.delay_s = float(delay_s)
        self.path = Path(predictions)
        if not self.path.is_file():
            raise GgeError(f"replay predictions file not found: {self.path}")
        self._by_key: dict[tuple[str, str], Prediction] = {}
        first_line: dict[tuple[str, str], int] = {}
        digest = hashlib.sha256()
        with self.path.open("rb") as f:
            for lineno, line_bytes in enumerate(f, start=1):
                digest.update(line_bytes)
                where = f"{self.path}:{lineno}"
                try:
                    line = line_bytes.decode("utf-8")
                except UnicodeDecodeError:
                    raise GgeError(f"{where}: not UTF-8 text") from None
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise GgeError(f"{where}: malformed JSON line: {e.msg}") from None
                pred = parse_line(obj, where)
                key = (pred.benchmark, pred.id)
                if key in first_line:
                    raise GgeError(
                        f"{where}: duplicate prediction for {pred.benchmark} id {pred.id} "
                        f"(first at line {first_line[key]})"
                    )
                first_line[key] = lineno
                self._by_key[key] = pred
        self.sha256 = digest.hexdigest()
        self._most = max((len(p.candidates) for p in self._by_key.values()), default=0)

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """The file's prediction for each sample; a sample without a line is a format error."""
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        out = []
        for s in samples:
            pred = self._by_key.get((s.benchmark, s.id))
            if pred is None:
                pred = Prediction(s.benchmark, s.id, format_error=True, raw="")
            out.append(pred)
        return out

    def unknown_ids(self, benchmark: str, known: Iterable[str]) -> list[str]:
        """Ids the file has for ``benchmark`` that no loaded sample has, in file order."""
        known_set = set(known)
        return [sid for (b, sid) in self._by_key if b == benchmark and sid not in known_set]

    def missing_ids(self, benchmark: str, ids: Iterable[str]) -> list[str]:
        """The given ids of ``benchmark`` that have no line in the file."""
        return [sid for sid in ids if (benchmark, sid) not in self._by_key]

    def benchmarks(self) -> set[str]:
        """The benchmark names the file has lines for."""
        return {b for b, _ in self._by_key}

    def max_candidates(self) -> int:
        """The most candidates any line of the file carries (0 for a file without candidates)."""
        return self._most

    def device_modules(self) -> tuple[Any, ...]:
        """None: no model."""
        return ()

    def settings(self) -> dict[str, Any]:
        """The reproducibility record: the file and its content hash."""
        return {"model": "replay", "predictions": str(self.path), "sha256": self.sha256}
