r"""The replay model: predictions read from a JSONL file instead of a network.

One line per sample::

    {"benchmark": "screenspot_pro", "id": "vscode_macos_0",
     "candidates": [[x, y], null, ...], "scores": [0.9, 0.1, ...]}

Points are in original-image pixels. ``null``, or a point whose two coordinates are both negative,
is an abstention ("the element is not there"); the string ``"unparsed"`` keeps the slot of an
answer that could not be parsed (it never hits). ``scores`` (critic scores, one per candidate, numbers
or null) is optional; so are ``raw`` (the model's text) and ``format_error`` (true when the model's
answer could not be parsed). gge's own ``predictions.jsonl`` replays: its other fields (hits, picks,
image, labels) are checked for their shape (:class:`gge.documents.records.PredictionRecord`), unknown keys are
ignored.
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
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gge.documents.records import decode
from gge.errors import GgeError
from gge.types import Prediction, Sample


def parse_line(obj: Any, where: str) -> Prediction:
    """Validate one replay record and turn it into a Prediction.

    The line is read by the one codec of predictions.jsonl (:func:`gge.documents.records.decode`).

    Args:
        obj: The parsed JSON value of the line.
        where: ``file:line`` for messages.

    Returns:
        The prediction.

    Raises:
        GgeError: naming the file, line and field at fault.
    """
    return decode(obj, where).prediction()


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
    cost_source = "replayed"
    """Its predictions carry the cost records of the run that wrote the file (or none), not its own."""

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
