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
A sample with no line is *not in the file*: a miss counted apart from format errors (results.json's
``missing_predictions`` and ``not_in_file``; the headline stays over every sample and says so); a line
whose id no loaded sample has is counted and reported, not an error.

A line is checked against the sample it is scored on: where it records its screenshot (``image``)
and ``size``, as gge's own lines do, a sample whose screenshot has another size, or another file name
(both the line's and the sample's being files: a Hub copy's embedded screenshot is named by its row,
not by a file), refuses the file in one line naming the line, the sample, what differs and how many
lines differ (:meth:`ReplayModel.check_samples`): the file was made on other data. A sample whose
screenshot is missing or unreadable here is scored as a miss carrying its ``image_error``, as in any
run (``strict_images=true`` stops instead). A run of negatives alone (ScreenSpot-Pro's
``gt_type=negative``: the negative copy of record X is sample ``X_negative``) refuses a file none of
whose lines answers a negative and whose ids are the records' positive ones, naming the variant: it
was made with ``gt_type=positive`` and would score 0 with every sample not in the file.

Example:
    >>> import json, tempfile, os
    >>> from PIL import Image
    >>> from gge.types import Box, Sample
    >>> folder = tempfile.mkdtemp()
    >>> path, shot = os.path.join(folder, "p.jsonl"), os.path.join(folder, "a.png")
    >>> Image.new("RGB", (10, 10)).save(shot)
    >>> with open(path, "w") as f:
    ...     _ = f.write(json.dumps({"benchmark": "b", "id": 1, "candidates": [[5, 5], [-1, -1]]}) + "\n")
    >>> model = ReplayModel(path)
    >>> s = Sample("b", "1", shot, (10, 10), "click", Box(0, 0, 9, 9))
    >>> [c.point for c in model.predict([s])[0].candidates]
    [(5.0, 5.0), None]
    >>> model.predict([Sample("b", "1", "/gone.png", (1, 1), "click", Box(0, 0, 9, 9))])[0].image_error
    'b: sample 1: cannot read image /gone.png: not found'
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks.base import UNKNOWN_SIZE
from gge.benchmarks.images import absent_but_sized, image_exists, image_name, size_error, split_ref
from gge.benchmarks.screenspot_pro import NEGATIVE_SUFFIX
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


def screenshot_error(sample: Sample, *, strict: bool = False) -> str | None:
    """Why a sample's screenshot cannot be scored on here, or None.

    A replay needs no pixels, only the screenshot's size: a sample whose record gives it is scored
    without the file (:func:`~gge.benchmarks.images.absent_but_sized`), unless ``strict``
    (``strict_images=true``: every screenshot must be there). Otherwise: missing, its header
    unreadable, or a file of another size than its record's (:func:`gge.benchmarks.images.check_size`).

    Example:
        >>> from gge.types import Absent
        >>> screenshot_error(Sample("b", "7", "/gone.png", (1, 1), "click", Absent()))
        'b: sample 7: cannot read image /gone.png: not found'
        >>> screenshot_error(Sample("b", "7", "/gone.png", (1440, 900), "click", Absent())) is None
        True
    """
    if absent_but_sized(sample) and not strict:
        return None
    if not image_exists(sample.image_path):
        why = "not found"
    elif sample.image_size == UNKNOWN_SIZE:
        why = "its header is unreadable"
    else:
        return size_error(sample)  # a file of another size than its record's (the boxes are the record's)
    return f"{sample.benchmark}: sample {sample.id}: cannot read image {sample.image_path}: {why}"


def _shown(image: str | None, size: tuple[int, int] | None) -> str:
    """A screenshot as a message names it: ``name (WxH)``."""
    name = "an unnamed screenshot" if image is None else image_name(image)
    return name if size is None else f"{name} ({size[0]}x{size[1]})"


class ReplayModel:
    """A policy that answers from a predictions file (no model needed).

    Args:
        predictions: Path of the JSONL file.
        delay_s: Seconds to sleep per ``predict`` call, to stand in for a model's latency in
            benchmarks and interruption tests (0 by default).
        strict_images: Stop at a sample whose screenshot is missing or unreadable, even one a replay
            could score from its record's size (else it is scored
            as a miss carrying its ``image_error``).

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

    def __init__(self, predictions: str | Path, *, delay_s: float = 0.0, strict_images: bool = False) -> None:
        self.delay_s = float(delay_s)
        self.strict_images = strict_images
        self.path = Path(predictions)
        if not self.path.is_file():
            raise GgeError(f"replay predictions file not found: {self.path}")
        self._by_key: dict[tuple[str, str], Prediction] = {}
        self._shot: dict[tuple[str, str], tuple[str | None, tuple[int, int] | None]] = {}
        self._line: dict[tuple[str, str], int] = {}
        self._most = 0
        self.sha256 = self._read_lines()

    def _read_lines(self) -> str:
        """Read the file's replay lines (:meth:`add`); returns the sha256 of its bytes."""
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
                self.add(obj, where, lineno)
        return digest.hexdigest()

    def add(self, obj: Any, where: str, lineno: int) -> None:
        """Take one replay line (a JSON object) as the answer of its sample.

        Args:
            obj: The line's object.
            where: How an error names the line (``file:line``).
            lineno: The line's number (a second line for the sample names the first).

        Raises:
            GgeError: a malformed line, or a second line for one (benchmark, id).
        """
        record = decode(obj, where)
        key = (record.benchmark, record.id)
        if key in self._line:
            raise GgeError(
                f"{where}: duplicate prediction for {record.benchmark} id {record.id} "
                f"(first at line {self._line[key]})"
            )
        self._line[key] = lineno
        self._by_key[key] = record.prediction()
        self._shot[key] = (record.image, record.size)
        self._most = max(self._most, len(self._by_key[key].candidates))

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """The file's prediction for each sample, the batch's screenshots checked first.

        A sample without a line is *not in the file* (a miss, not a format error); a sample whose
        screenshot is missing or unreadable is a miss carrying its ``image_error``
        (:func:`screenshot_error`), whatever its line says.

        Raises:
            GgeError: a line names another screenshot or size than its sample; with
                ``strict_images``, a screenshot is missing or unreadable.
        """
        if self.delay_s > 0:
            time.sleep(self.delay_s)
        self._check_screenshots(samples)  # the run's variant is checked on all its samples at once
        out = []
        for s in samples:
            error = screenshot_error(s, strict=self.strict_images)
            if error is not None and self.strict_images:
                raise GgeError(f"{error} (strict_images=true)")
            pred = self._by_key.get((s.benchmark, s.id))
            if error is not None:
                pred = Prediction(s.benchmark, s.id, image_error=error)
            elif pred is None:
                pred = Prediction(s.benchmark, s.id, not_in_file=True)
            out.append(pred)
        return out

    def differences(self, sample: Sample) -> str | None:
        """How the sample's line names another screenshot or size than the sample has, or None.

        Sizes are compared where both are known (an unreadable screenshot has none), names where
        both are files (a Hub copy's embedded screenshot is named by its row, not by a file).

        Args:
            sample: A sample the file is scored on.

        Returns:
            ``the line's screenshot is a.png (10x10), the sample's b.png (20x10)``, or None (it
            agrees, or the line records neither, or there is no line).
        """
        key = (sample.benchmark, sample.id)
        if key not in self._shot:
            return None
        image, size = self._shot[key]
        other_size = (
            size is not None and UNKNOWN_SIZE not in (size, sample.image_size) and size != sample.image_size
        )
        files = image is not None and split_ref(image) is None and split_ref(sample.image_path) is None
        other_name = files and image_name(str(image)) != image_name(sample.image_path)
        if not (other_size or other_name):
            return None
        return (
            f"the line's screenshot is {_shown(image, size)}, "
            f"the sample's {_shown(sample.image_path, sample.image_size)}"
        )

    def check_samples(self, samples: Iterable[Sample]) -> None:
        """Refuse the file when it answers other samples than the run's (the run's samples at once).

        Two checks: a run of negatives alone refuses a file of the positive ids
        (:meth:`check_negatives`), then each line's screenshot and size against its sample's.

        Args:
            samples: The samples the file is scored on (every benchmark of the run).

        Raises:
            GgeError: one line: the file's ids are the positive copies' under a run of negatives;
                or it names the file, the first line (in the file's order) naming another screenshot
                or size than its sample, what differs, and how many of the lines checked differ.
        """
        every = list(samples)
        self.check_negatives(every)
        self._check_screenshots(every)

    def check_negatives(self, samples: Sequence[Sample]) -> None:
        """Refuse a file of positive ids replayed on a benchmark read as negatives alone.

        A benchmark whose samples are all negative copies (``gt_type`` label ``negative``, as
        ScreenSpot-Pro's ``gt_type=negative`` reads them: record X's copy is ``X_negative``) and none
        of which has a line, while some line's id is a record whose copy is loaded (``X``), was
        made with ``gt_type=positive`` (or by a gge that read negatives under X): every sample would
        be not in the file, the headline 0.

        Args:
            samples: The run's samples (every benchmark).

        Raises:
            GgeError: one line naming the file, the benchmark, the variant and a positive id.
        """
        groups: dict[str, list[Sample]] = {}
        for s in samples:
            groups.setdefault(s.benchmark, []).append(s)
        for bench, group in groups.items():
            kinds = {s.labels.get("gt_type") for s in group}
            if kinds != {"negative"} or any((bench, s.id) in self._by_key for s in group):
                continue
            negatives = {s.id for s in group}
            positive = [sid for (b, sid) in self._by_key if b == bench and sid + NEGATIVE_SUFFIX in negatives]
            if positive:
                first = positive[0]
                raise GgeError(
                    f"{self.path}:{self._line[(bench, first)]}: {bench} is read with gt_type=negative, whose "
                    f"samples are the records' negative copies ({first}{NEGATIVE_SUFFIX}), and none of the "
                    f"file's lines answers one: its {len(positive)} {bench} ids are the positive copies' "
                    f"({first}): a gt_type=positive file, or one written before gge named the negative "
                    f"copies so; replay it with bench.{bench}.gt_type=positive (or all), or name its "
                    f"negative lines <id>{NEGATIVE_SUFFIX}"
                )

    def _check_screenshots(self, samples: Iterable[Sample]) -> None:
        """Refuse the file when a line names another screenshot or size than the sample it answers."""
        checked = 0
        found: list[tuple[Sample, str]] = []
        for s in samples:
            checked += (s.benchmark, s.id) in self._shot
            why = self.differences(s)
            if why is not None:
                found.append((s, why))
        if not found:
            return
        s, why = min(found, key=lambda f: self._line[(f[0].benchmark, f[0].id)])  # the file's first
        raise GgeError(
            f"{self.path}:{self._line[(s.benchmark, s.id)]}: {s.benchmark} {s.id}: {why} "
            f"({len(found)} of the {checked} lines checked name another screenshot or size than their "
            "sample: predictions made on other data; replay them on the data they were made on)"
        )

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
