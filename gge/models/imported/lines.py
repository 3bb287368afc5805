"""A published log's lines in one shape, and how each finds its benchmark sample.

A line is matched to the release's sample by its id where it has one and the id's sample agrees
with what the line says (its screenshot's file name and its instruction, where it records them);
else by screenshot file name and instruction, the longest shared path tail and then the log's own box
breaking ties. A line that names no screenshot (lmms-eval's) is matched by its instruction alone;
where several samples share it, its ``position`` (a row number in the harness's copy) picks the
sample at that place in the loaded order, only if that sample is one of them (the benchmark loaded
from the same copy, in its order): counted as matched by position. A line that matches no sample,
or several that differ (whichever of them earlier lines took), is listed by line number and never
guessed; lines whose candidates are the same screenshot, instruction and box are matched in order
(either way scores the same) and counted. A sample no line matched is *not in the file*.

Example:
    >>> from gge.types import Box, Sample
    >>> s = [Sample("b", "a-0", "/d/img/a.png", (10, 10), "click OK", Box(1, 1, 4, 4))]
    >>> line = LogLine("log:1", 1, None, "x/img/a.png", "click  OK", (1, 1, 4, 4), (2.0, 2.0), "", True)
    >>> m = match_lines([line], s)
    >>> list(m.lines), m.unmatched, m.missing
    (['a-0'], [], [])
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath

from gge.types import Absent, Polygon, Region, Sample

BOX_TOLERANCE = 0.5
"""Pixels by which a log's box may differ from the release's and still name the same target."""


@dataclass(frozen=True)
class LogLine:
    """One sample's line of a published log, as every format is read into.

    Attributes:
        where: ``file:line`` (JSONL) or ``file: details[i]`` (a JSON list) for messages.
        line: The line (JSONL) or the record's 1-based position (JSON).
        id: The log's sample id, or None.
        image: The screenshot path as the log writes it (relative or absolute), or None.
        instruction: The instruction the log says it asked, or None.
        box: The log's own target in original pixels: ``(x1, y1, x2, y2)``, a flat polygon, or None.
        point: The log's predicted point in original pixels, or None.
        raw: The model's text as the log keeps it ("" when it keeps none).
        correct: The log's own verdict, or None where it records none.
        format_error: The log says the answer gave no point.
        refused: The model said the target is not there (a refusal or negative answer).
        counted: The harness counted the line in its accuracy.
        fields: The line's other fields the format knows (``gt_type``, ``ui_type``...).
    """

    where: str
    line: int
    id: str | None
    image: str | None
    instruction: str | None
    box: tuple[float, ...] | None
    point: tuple[float, float] | None
    raw: str
    correct: bool | None
    format_error: bool = False
    refused: bool = False
    counted: bool = True
    fields: dict[str, object] = field(default_factory=dict)


@dataclass
class Matched:
    """Which sample each line is.

    Attributes:
        lines: Sample id -> its line.
        unmatched: Lines no sample fits, each with why.
        ambiguous: Lines several differing samples fit, each with their ids.
        interchangeable: Lines matched in order among samples with the same screenshot, instruction
            and box.
        by_position: Lines without a screenshot matched among samples that share their instruction
            by their position in the harness's copy.
        positions: Why positions were not used (a line's position names a sample with another
            instruction: the samples are not loaded in the copy's order), or "".
        missing: Ids of the samples no line matched (not in the file), in sample order.
    """

    lines: dict[str, LogLine] = field(default_factory=dict)
    unmatched: list[tuple[LogLine, str]] = field(default_factory=list)
    ambiguous: list[tuple[LogLine, list[str]]] = field(default_factory=list)
    interchangeable: int = 0
    by_position: int = 0
    positions: str = ""
    missing: list[str] = field(default_factory=list)


def _path_parts(path: str) -> tuple[str, ...]:
    """A path's components, whichever separator the log's machine used."""
    return PureWindowsPath(path).parts if "\\" in path else PurePosixPath(path).parts


def file_name(path: str) -> str:
    """The file name at the end of a path written on any machine."""
    parts = _path_parts(path)
    return parts[-1] if parts else path


def _shared_tail(a: str, b: str) -> int:
    """How many trailing path components two paths share."""
    pa, pb = _path_parts(a), _path_parts(b)
    n = 0
    while n < min(len(pa), len(pb)) and pa[-1 - n] == pb[-1 - n]:
        n += 1
    return n


def same_text(text: str) -> str:
    """An instruction as matching compares it: whitespace runs as one space, ends stripped."""
    return re.sub(r"\s+", " ", text).strip()


def region_agrees(region: Region, box: Sequence[float] | None) -> bool:
    """Whether a log's box names the release's target (within :data:`BOX_TOLERANCE` pixels)."""
    if box is None:
        return False
    if isinstance(region, Absent):
        return all(v == 0 for v in box)
    if isinstance(region, Polygon):
        ours = [c for v in region.vertices for c in v]
    else:
        ours = list(region.pixel_box())
    return len(ours) == len(box) and all(abs(a - b) <= BOX_TOLERANCE for a, b in zip(ours, box, strict=True))


def _key(sample: Sample) -> tuple[str, str]:
    return (file_name(sample.image_path), same_text(sample.instruction))


def _shape(sample: Sample) -> tuple[str, str, str]:
    """What a line can tell samples apart by: the screenshot, the instruction and the target."""
    return (sample.image_path, same_text(sample.instruction), repr(sample.region))


def _disagreement(line: LogLine, sample: Sample) -> str | None:
    """How a line that names a sample's id says otherwise about it, or None."""
    if line.image is not None and file_name(line.image) != file_name(sample.image_path):
        return f"its screenshot {file_name(line.image)} is not the sample's {file_name(sample.image_path)}"
    if line.instruction is not None and same_text(line.instruction) != same_text(sample.instruction):
        return f"its instruction {line.instruction!r:.60} is not the sample's {sample.instruction!r:.60}"
    return None


def _positions_disagree(lines: Sequence[LogLine], samples: Sequence[Sample]) -> str:
    """Why the lines' positions are not known to follow the loaded order, or "" (they are).

    Positions are trusted for the whole file or not at all, and only where the file shows it: every
    line's position names a sample with the line's instruction, and at least one line whose
    instruction only one sample has is at that sample's place. One line whose position names a
    sample with another instruction shows the samples are not loaded in the copy's order; without a
    line of an instruction of its own nothing shows that they are, and a position that only happened
    to fit would pick a sample sharing an instruction by chance.
    """
    counts: dict[str, int] = defaultdict(int)
    for s in samples:
        counts[same_text(s.instruction)] += 1
    anchored = False
    for line in lines:
        position = line.fields.get("position")
        if not isinstance(position, int) or line.instruction is None:
            continue
        if not 0 <= position < len(samples):
            return f"{line.where}: its position {position} is past the {len(samples)} samples loaded"
        if same_text(samples[position].instruction) != same_text(line.instruction):
            return (
                f"{line.where}: its position {position} is sample {samples[position].id}, whose instruction "
                "is another: the samples are not loaded in the harness copy's order"
            )
        anchored = anchored or counts[same_text(line.instruction)] == 1
    if not anchored and any(isinstance(line.fields.get("position"), int) for line in lines):
        return "no line whose instruction only one sample has shows the samples in the harness copy's order"
    return ""


def match_lines(lines: Sequence[LogLine], samples: Sequence[Sample]) -> Matched:
    """Match each line to its sample (rules in the module docstring).

    Args:
        lines: The log's lines in file order.
        samples: The benchmark's samples as the release has them.

    Returns:
        The matches, the lines not matched (with why), and the samples not in the file.
    """
    by_id = {s.id: s for s in samples}
    by_name: dict[tuple[str, str], list[Sample]] = defaultdict(list)
    by_text: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        by_name[_key(s)].append(s)
        by_text[same_text(s.instruction)].append(s)
    taken: dict[str, LogLine] = {}
    out = Matched()
    out.positions = _positions_disagree(lines, samples)
    placed: set[int] = set()  # the lines matched by position (counted once taken)
    for line in lines:
        candidates: list[Sample] = []
        why = ""
        named = by_id.get(line.id) if line.id is not None else None
        if named is not None and _disagreement(line, named) is None:
            candidates = [named]
        elif line.image is not None and line.instruction is not None:
            candidates = list(by_name.get((file_name(line.image), same_text(line.instruction)), []))
            if not candidates:
                name = file_name(line.image)
                why = f"no sample has screenshot {name} and instruction {line.instruction!r:.80}"
                if named is not None:
                    why = f"its id {line.id} names a sample, but {_disagreement(line, named)}; and {why}"
        elif named is not None:
            why = f"its id {line.id} names a sample, but {_disagreement(line, named)}"
        elif line.image is None and line.instruction is not None:
            candidates = list(by_text.get(same_text(line.instruction), []))
            why = f"no sample has instruction {line.instruction!r:.80}"
            position = line.fields.get("position")
            if len(candidates) > 1 and not out.positions and isinstance(position, int):
                candidates = [samples[position]]  # the file's positions all follow the loaded order
                placed.add(id(line))
        else:
            why = (
                f"its id {line.id} is no sample's" if line.id is not None else "it has no id"
            ) + " and it does not name both a screenshot and an instruction"
        if len(candidates) > 1 and line.image is not None:
            image = line.image
            best = max(_shared_tail(image, c.image_path) for c in candidates)
            candidates = [c for c in candidates if _shared_tail(image, c.image_path) == best]
        if len(candidates) > 1 and line.box is not None:
            fitting = [c for c in candidates if region_agrees(c.region, line.box)]
            candidates = fitting or candidates
        if not candidates:
            out.unmatched.append((line, why))
            continue
        if len({_shape(c) for c in candidates}) > 1:
            out.ambiguous.append((line, [c.id for c in candidates]))  # never settled by elimination
            continue
        free = [c for c in candidates if c.id not in taken]
        if not free:
            first = taken[candidates[0].id]
            out.unmatched.append((line, f"its sample {candidates[0].id} is already line {first.line}'s"))
            continue
        if len(candidates) > 1:
            out.interchangeable += 1
        out.by_position += id(line) in placed
        taken[free[0].id] = line
    out.lines = {s.id: taken[s.id] for s in samples if s.id in taken}
    out.missing = [s.id for s in samples if s.id not in taken]
    return out
