"""``model=replay model.format=FORMAT``: a published log replayed as ``gge import`` would write it.

The log is read and matched to the run's samples when they are loaded (:meth:`ImportedReplay.load`),
with the same formats, matching, raw re-reading and summary as ``gge import``; the run then scores
the lines as it scores any replay file. A log is of one benchmark, so the run names exactly one.

Example:
    >>> import json, tempfile, os
    >>> from PIL import Image
    >>> from gge.types import Box, Sample
    >>> folder = tempfile.mkdtemp()
    >>> log, shot = os.path.join(folder, "log.json"), os.path.join(folder, "a.png")
    >>> Image.new("RGB", (10, 10)).save(shot)
    >>> rec = {"img_filename": "a.png", "instruction": "click", "response": "(500, 500)",
    ...        "is_correct": True, "predicted_click": [5.0, 5.0], "bbox": [0, 0, 9, 9]}
    >>> with open(log, "w") as f:
    ...     json.dump({"sample_results": [rec], "metadata": {}}, f)
    >>> model = ImportedReplay(log, "gelato")
    >>> sample = Sample("b", "s0", shot, (10, 10), "click", Box(0, 0, 9, 9))
    >>> model.load({"b": [sample]}).agree
    1
    >>> [c.point for c in model.predict([sample])[0].candidates]
    [(5.0, 5.0)]
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.documents.results import ImportedLog
from gge.errors import GgeError, unknown_name
from gge.models.imported import ImportReport, format_names, import_log
from gge.models.imported.lines import Matched
from gge.models.imported.reread import Reading
from gge.models.replay import ReplayModel
from gge.types import Sample

__all__ = ["ImportedReplay"]


class ImportedReplay(ReplayModel):
    """A replay whose answers are a published log's, read when the samples are known.

    Args:
        log: The log file.
        fmt: Its format (a ``gge import`` format name).
        reading: Read raw answers again this way (``model.read_preset`` / ``model.read_convention``),
            or None: the log's own points.
        columns: ``generic`` only: field -> column.
        delay_s: As :class:`~gge.models.replay.ReplayModel`.
        strict_images: As :class:`~gge.models.replay.ReplayModel`.

    Raises:
        GgeError: an unknown format, a missing file, or ``columns`` for a format that has its own.
    """

    def __init__(
        self,
        log: str | Path,
        fmt: str,
        *,
        reading: Reading | None = None,
        columns: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
        strict_images: bool = False,
    ) -> None:
        if fmt not in format_names():
            raise unknown_name("model.format", fmt, ["gge", *format_names()])
        self.format = fmt
        self.reading = reading
        self.columns = dict(columns) if columns else None
        self.report: ImportReport | None = None
        super().__init__(log, delay_s=delay_s, strict_images=strict_images)

    def _read_lines(self) -> str:
        """Nothing yet (the lines are matched in :meth:`load`); the sha256 of the log's bytes."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    def load(self, samples: Mapping[str, Sequence[Sample]]) -> ImportReport:
        """Match the log to the run's one benchmark and take its lines as the answers.

        Args:
            samples: The run's samples by benchmark (exactly one benchmark).

        Returns:
            The import's report (its :meth:`~gge.models.imported.ImportReport.summary` is what
            ``gge import`` prints).

        Raises:
            GgeError: the run has another number of benchmarks than one, or the log is at fault.
        """
        if len(samples) != 1:
            raise GgeError(
                f"model.format={self.format}: a log is of one benchmark, and this run has "
                f"{len(samples)} ({', '.join(samples)}): name it alone, benchmarks=[NAME]"
            )
        (group,) = samples.values()
        report = import_log(self.format, self.path, group, self.reading, self.columns)
        for i, record in enumerate(report.records, start=1):
            self.add(record, report.matched.lines[record["id"]].where, i)
        self.report = report
        return report

    def imported_log(self) -> ImportedLog:
        """The import's counts for results.json (``imported_log``); none matched before :meth:`load`."""
        read = self.report.read if self.report is not None else []
        m = self.report.matched if self.report is not None else Matched()
        return {
            "format": self.format,
            "file": str(self.path),
            "lines": len(read),
            "matched": len(m.lines),
            "unmatched": [f"{line.where}: {why}" for line, why in m.unmatched],
            "ambiguous": [f"{line.where}: fits {', '.join(ids)}" for line, ids in m.ambiguous],
        }

    def max_candidates(self) -> int:
        """One: a log keeps one answer per sample."""
        return 1

    def settings(self) -> dict[str, Any]:
        """The reproducibility record: the log, its hash, its format and how it was read."""
        out = super().settings()
        out["format"] = self.format
        if self.reading is not None:
            out["read_as"] = self.reading.name
        if self.columns:
            out["columns"] = dict(self.columns)
        return out
