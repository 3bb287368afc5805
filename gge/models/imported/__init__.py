"""Published prediction logs read into gge's replay format (``gge import``).

:data:`FORMATS` names the formats read (and ``generic``, a table whose columns the user names);
each line is matched to its release sample (:mod:`gge.models.imported.lines`) and written as a
replay line whose candidate is the log's point, with the log's own verdict kept beside it
(``imported``). :func:`import_log` also scores each matched point by gge's rule for the benchmark and
counts where that verdict differs from the log's, naming why where the log shows it (its box is not
the release's target).

Example:
    >>> import json, tempfile, os
    >>> from gge.types import Box, Sample
    >>> folder = tempfile.mkdtemp()
    >>> log = os.path.join(folder, "g.json")
    >>> result = {"img_filename": "a.png", "instruction": "click OK", "response": "(2, 2)",
    ...           "is_correct": True, "predicted_click": [2, 2], "bbox": [1, 1, 4, 4]}
    >>> with open(log, "w") as f:
    ...     json.dump({"sample_results": [result]}, f)
    >>> s = Sample("b", "a-0", "/d/a.png", (10, 10), "click OK", Box(1, 1, 4, 4))
    >>> report = import_log("gelato", log, [s])
    >>> report.records[0]["candidates"], report.agree, report.disagree
    ([[2.0, 2.0]], 1, [])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gge.errors import GgeError, unknown_name
from gge.models.imported.formats import FORMATS as LOG_FORMATS
from gge.models.imported.generic import read_generic
from gge.models.imported.harnesses import read_lmms_eval, read_vlmevalkit, settle_boxes
from gge.models.imported.lines import LogLine, Matched, match_lines, region_agrees
from gge.models.imported.reread import Reading, Reread
from gge.types import Absent, Sample

SHOWN = 5
"""Ids or lines named in a summary line before "+N more"."""

CAUSES = {
    "data": "the log's box is not the release's target",
    "rounded": "the log stores its point in whole pixels, within a pixel of the target's edge",
    "rule": "the same point and target",
    "reading": "gge's reading of the raw answer (the log keeps no point of its own)",
}
"""Why a log's verdict and gge's differ, as far as the log shows."""


@dataclass(frozen=True)
class Disagreement:
    """A matched line whose verdict by gge's rule is not the log's.

    Attributes:
        sample: The sample's id.
        line: The log's line.
        log: The log's verdict.
        gge: gge's verdict on the same point.
        cause: A key of :data:`CAUSES`: ``data`` (the log's box is not the release's target),
            ``rounded`` (the log's point is whole pixels at the target's edge: the harness judged
            the point before rounding it), ``rule`` (same point and target, another verdict) or
            ``reading`` (a log without points: gge read the raw answer otherwise than the harness).
    """

    sample: str
    line: int
    log: bool
    gge: bool
    cause: str


@dataclass
class ImportReport:
    """What ``gge import`` read, matched and found.

    Attributes:
        format: The format's name.
        path: The log file.
        benchmark: The benchmark its lines were matched to.
        read: The lines read, in file order.
        matched: The matching (:class:`~gge.models.imported.lines.Matched`).
        records: The replay lines, in sample order.
        agree: Matched lines whose verdict gge's rule gives too.
        disagree: The others.
        unjudged: Matched lines the log gives no verdict for.
        hits: Matched lines whose written point hits by gge's rule.
        samples: The benchmark's samples (the release's denominator).
        reread: With a reading, how the raw answers read again compare with the log's points (the
            replay lines then carry the points read again).
    """

    format: str
    path: Path
    benchmark: str
    read: list[LogLine]
    matched: Matched
    records: list[dict[str, Any]] = field(default_factory=list)
    agree: int = 0
    disagree: list[Disagreement] = field(default_factory=list)
    unjudged: int = 0
    hits: int = 0
    samples: int = 0
    reread: Reread | None = None

    def headlines(self) -> str:
        """The log's own accuracy and gge's, each with its denominator named (two decimals)."""
        counted = [ln for ln in self.read if ln.counted and ln.correct is not None]
        own = sum(1 for ln in counted if ln.correct)
        hits = self.hits
        n, total = len(self.records), self.samples
        parts = []
        if counted:
            parts.append(
                f"the log's own: {_pct(own, len(counted))} ({own}/{len(counted)} of its counted lines)"
            )
        parts.append(f"gge's rule: {_pct(hits, n)} ({hits}/{n} matched lines)")
        if total != n:
            parts.append(f"{_pct(hits, total)} over the release's {total} samples (not in the file: a miss)")
        return "accuracy: " + "; ".join(parts)

    def summary(self) -> list[str]:
        """The report as lines for a terminal: counts first, then what to look at, each named."""
        m = self.matched
        placed = f", {m.by_position} by their position in the harness's copy" if m.by_position else ""
        out = [
            f"gge import {self.format}: {self.path}: {len(self.read)} lines, {len(m.lines)} matched to "
            f"{self.benchmark} samples ({m.interchangeable} among interchangeable samples{placed}), "
            f"{len(m.unmatched)} unmatched, {len(m.ambiguous)} ambiguous; "
            f"{len(m.missing)} samples not in the file"
        ]
        for line, why in m.unmatched[:SHOWN]:
            out.append(f"  unmatched {line.where}: {why}")
        if len(m.unmatched) > SHOWN:
            out.append(f"  +{len(m.unmatched) - SHOWN} more unmatched lines")
        for line, ids in m.ambiguous[:SHOWN]:
            out.append(f"  ambiguous {line.where}: fits {', '.join(ids[:SHOWN])} (never guessed)")
        if len(m.ambiguous) > SHOWN:
            out.append(f"  +{len(m.ambiguous) - SHOWN} more ambiguous lines")
        if m.positions:
            out.append(f"  positions not used: {m.positions} (lines sharing an instruction are ambiguous)")
        if m.missing:
            out.append(f"  not in the file: {_named(m.missing)}")
        out.append(self.headlines())
        judged = self.agree + len(self.disagree)
        said = f"the log's own verdicts: gge's rule gives the same on {self.agree} of {judged} matched lines"
        if self.unjudged:
            said += f" ({self.unjudged} lines carry no verdict)"
        out.append(said)
        for cause, what in CAUSES.items():
            ids = [d.sample for d in self.disagree if d.cause == cause]
            if ids:
                out.append(f"  {len(ids)} differ where {what}: {_named(ids)}")
        if self.reread is not None:
            out += self.reread.summary()
        return out


def _pct(k: int, n: int) -> str:
    return f"{100.0 * k / n:.2f}%" if n else "n/a"


def _named(ids: Sequence[str]) -> str:
    more = f" +{len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(ids[:SHOWN]) + more


def hits(sample: Sample, point: tuple[float, float] | None, refused: bool) -> bool:
    """Whether an answer hits the sample by gge's rule for its benchmark.

    A point hits a box or polygon as the benchmark's official test says; a refusal hits only an
    absent target that counts abstentions (:class:`gge.types.Absent`); no point and no refusal never
    hits.

    Args:
        sample: The sample.
        point: The answer's point in original pixels, or None.
        refused: The answer says the target is not there.

    Returns:
        Whether it hits.
    """
    if point is not None:
        return sample.region.contains(*point)
    return refused and isinstance(sample.region, Absent) and sample.region.abstention_hits


def as_answer(point: tuple[float, float] | None, refused: bool) -> tuple[tuple[float, float] | None, bool]:
    """A point as gge's replay reads it: one with both coordinates negative is an abstention.

    Example:
        >>> as_answer((-1.28, -0.72), False), as_answer((3.0, -1.0), False)
        ((None, True), ((3.0, -1.0), False))
    """
    if point is not None and point[0] < 0 and point[1] < 0:
        return None, True
    return point, refused


def _cause(sample: Sample, line: LogLine) -> str:
    """Why the log's verdict is not gge's, as far as the line shows (a key of :data:`CAUSES`)."""
    if line.box is not None and not region_agrees(sample.region, line.box):
        return "data"
    box = sample.region.pixel_box()
    if line.point is not None and box is not None and all(float(v).is_integer() for v in line.point):
        x, y = line.point
        x1, y1, x2, y2 = box
        near = x1 - 1 <= x <= x2 + 1 and y1 - 1 <= y <= y2 + 1  # on the box or a pixel off it
        if near and min(abs(x - x1), abs(x - x2), abs(y - y1), abs(y - y2)) <= 1:
            return "rounded"
    return "rule"


def _record(
    benchmark: str,
    sample: Sample,
    line: LogLine,
    point: tuple[float, float] | None,
    reread: bool,
    fmt: str,
    path: Path,
) -> dict[str, Any]:
    if point is not None:
        candidate: Any = [point[0], point[1]]
    else:
        candidate = None if line.refused else "unparsed"
    return {
        "benchmark": benchmark,
        "id": sample.id,
        "candidates": [candidate],
        "raw": line.raw,
        "format_error": candidate == "unparsed" or (not reread and line.format_error),
        "imported": {
            "format": fmt,
            "file": str(path),
            "line": line.line,
            "correct": line.correct,
            "counted": line.counted,
            "point": None if line.point is None else list(line.point),
            "box": None if line.box is None else list(line.box),
        },
    }


FORMATS: dict[str, Callable[[Path], list[LogLine]]] = {
    **LOG_FORMATS,
    "vlmevalkit": read_vlmevalkit,
    "lmms_eval": read_lmms_eval,
}
"""Every format with a reader of its own, by name (:mod:`~gge.models.imported.formats`,
:mod:`~gge.models.imported.harnesses`)."""

GENERIC = "generic"
"""The format whose columns the user declares (:mod:`gge.models.imported.generic`)."""


def format_names() -> list[str]:
    """Every format ``gge import`` reads, sorted."""
    return sorted([*FORMATS, GENERIC])


def import_log(
    fmt: str,
    path: str | Path,
    samples: Sequence[Sample],
    reading: Reading | None = None,
    columns: Mapping[str, str] | None = None,
) -> ImportReport:
    """Read a published log, match its lines to ``samples`` and check its verdicts by gge's rule.

    Args:
        fmt: A name in :data:`FORMATS`, or ``generic``.
        path: The log file.
        samples: One benchmark's samples, as the release has them.
        reading: Read each raw answer again this way (:func:`~gge.models.imported.reread.reading`)
            and write the points read (a refusal the log records stays one); None: the log's points.
        columns: ``generic`` only: field -> column (:func:`~gge.models.imported.generic.parse_columns`).

    Returns:
        The report, with the replay lines (``records``) of the matched samples in sample order.

    Raises:
        GgeError: an unknown format, a file that is not one, or a line at fault (named).
    """
    if fmt not in format_names():
        raise unknown_name("log format", fmt, format_names())
    file = Path(path)
    if fmt == GENERIC:
        if not columns:
            raise GgeError(
                "gge import generic needs --columns field=column,... (id or image and instruction)"
            )
        lines = read_generic(file, columns)
    elif columns:
        raise GgeError(f"--columns is for gge import generic; a {fmt} log's columns are known")
    else:
        lines = FORMATS[fmt](file)
    if reading is None and any(ln.fields.get("needs_reading") for ln in lines):
        raise GgeError(
            f"{file}: a {fmt} log keeps the model's raw answers but no parsed point: "
            "name --preset NAME or --convention NAME to read them"
        )
    benchmark = samples[0].benchmark if samples else ""
    lines = settle_boxes(lines, benchmark)
    matched = match_lines(lines, samples)
    report = ImportReport(fmt, file, benchmark, lines, matched, samples=len(samples))
    report.reread = None if reading is None else Reread(reading)
    for sample in samples:
        line = matched.lines.get(sample.id)
        if line is None:
            continue
        point, reread, refused = line.point, False, line.refused
        keeps_raw = bool(line.raw.strip()) or bool(line.fields.get("needs_reading"))
        if report.reread is not None and reading is not None and not line.refused and keeps_raw:
            (point, refused), reread = reading.read(line, sample), True
            if not line.fields.get("needs_reading"):
                report.reread.add(sample, line, point)
        report.records.append(
            _record(benchmark, sample, replace(line, refused=refused), point, reread, fmt, file)
        )
        report.hits += hits(sample, *as_answer(point, refused))
        if line.correct is None:
            report.unjudged += 1
            continue
        # the log judged its own point, or the raw answer where it keeps no point (read by gge here)
        if line.fields.get("needs_reading"):
            ours, cause = hits(sample, *as_answer(point, refused)), "reading"
        else:
            ours, cause = hits(sample, *as_answer(line.point, line.refused)), _cause(sample, line)
        if ours == line.correct:
            report.agree += 1
            continue
        report.disagree.append(Disagreement(sample.id, line.line, line.correct, ours, cause))
    if not matched.lines and lines:
        first, why = matched.unmatched[0] if matched.unmatched else (lines[0], "ambiguous")
        raise GgeError(f"{first.where}: no line of the log matches a {benchmark} sample ({why})")
    return report
