"""A log's raw answers read again with a named preset's parser and convention (``gge import --preset``).

A log that keeps the model's text is re-scored from what the model said, not only from the
harness's parse: each raw answer is read as gge reads that preset's answers
(:func:`gge.models.policy.answer_candidates`: its parser, ``box_pairs`` and coordinate convention)
and mapped to original pixels. An ``abs_resized`` answer is read in the frame the log records for its
line (Gelato's ``resized_resolution``), else in the frame gge's own run of the preset uses
(:meth:`gge.models.policy.GroundingPolicy.prompt_size`): the screenshot resized by
:func:`gge.geometry.smart_resize` with the preset's ``patch_factor`` and ``min_pixels`` and its
``prompt_max_pixels``, else its ``max_pixels``, else the Qwen-VL processors' default
(:data:`PROCESSOR_MAX_PIXELS`). The summary names the frame rule used.

Each re-read point is set against the log's own: equal (within half a pixel), or differing by how
many pixels, or by the ratio between the frame and the screenshot (the log mapped its point in the
wrong frame: the signature of a coordinate-frame bug).

Example:
    >>> from gge.types import Box, Sample
    >>> from gge.models.imported.lines import LogLine
    >>> r = reading("qwen3_vl")
    >>> s = Sample("b", "1", "/a.png", (2000, 1000), "x", Box(0, 0, 1, 1))
    >>> r.read(LogLine("l:1", 1, None, None, None, None, None, "(500, 250)", None), s)
    ((1000.0, 250.0), False)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from gge.errors import GgeError
from gge.geometry import CONVENTIONS, smart_resize
from gge.models.imported.lines import LogLine
from gge.models.policy import answer_candidates
from gge.types import Sample

SAME_PX = 0.5
"""Pixels within which a re-read point is the log's own."""

PROCESSOR_MAX_PIXELS = 16384 * 28 * 28
"""The Qwen-VL image processors' default pixel ceiling (12,845,056): a preset that sets none sees this."""


@dataclass(frozen=True)
class Reading:
    """How raw answers are read: a convention, box pairs, and the resize that gives their frame.

    Attributes:
        name: What the user named (``preset ui_tars_1_5`` or ``convention norm_1000``).
        convention: The coordinate convention (:data:`gge.geometry.CONVENTIONS`).
        box_pairs: Read ``(x1,y1),(x2,y2)`` as one box (its centre).
        factor: ``abs_resized``: the resize's patch factor.
        min_pixels: ``abs_resized``: the resize's pixel floor.
        max_pixels: ``abs_resized``: the resize's pixel ceiling.
    """

    name: str
    convention: str
    box_pairs: bool = False
    factor: int = 28
    min_pixels: int = 56 * 56
    max_pixels: int = PROCESSOR_MAX_PIXELS

    @property
    def described(self) -> str:
        """The reading as the summary names it, with the frame rule of ``abs_resized`` answers."""
        if self.convention != "abs_resized":
            return self.name
        rule = f"factor {self.factor}, min_pixels {self.min_pixels}, max_pixels {self.max_pixels}"
        return f"{self.name}; frame: the log's resized size, else smart_resize {rule}"

    def frame(self, sample: Sample, line: LogLine) -> tuple[int, int]:
        """The size the line's ``abs_resized`` coordinates refer to: the log's record, else the resize."""
        recorded = line.fields.get("resized")
        if isinstance(recorded, list | tuple) and len(recorded) == 2:
            return (int(recorded[0]), int(recorded[1]))
        w, h = sample.image_size
        rh, rw = smart_resize(
            h, w, factor=self.factor, min_pixels=self.min_pixels, max_pixels=self.max_pixels
        )
        return (rw, rh)

    def read(self, line: LogLine, sample: Sample) -> tuple[tuple[float, float] | None, bool]:
        """The line's raw answer read again: its point in original pixels, and whether it abstains.

        An abstention is an answer the preset's parser reads as "not there" (a point with both
        coordinates negative); it has no point and is no format error.
        """
        frame = self.frame(sample, line) if self.convention == "abs_resized" else sample.image_size
        (candidate,) = answer_candidates(
            [line.raw],
            proposer="greedy",
            k=1,
            box_pairs=self.box_pairs,
            convention=self.convention,
            image_size=sample.image_size,
            frame=frame,
        )
        return candidate.point, candidate.point is None and candidate.parsed


def reading(preset: str | None = None, convention: str | None = None) -> Reading:
    """The reading a user names: a preset (its parser settings and convention) or a bare convention.

    Args:
        preset: A gge preset name (``gge.models.factory``).
        convention: A convention, overriding the preset's (or alone: gge's default parser).

    Returns:
        The reading.

    Raises:
        GgeError: Neither named, an unknown preset or convention.
    """
    if preset is None and convention is None:
        raise GgeError("re-reading raw answers needs --preset NAME or --convention NAME")
    if convention is not None and convention not in CONVENTIONS:
        raise GgeError(f"unknown convention {convention!r}; known: {', '.join(CONVENTIONS)}")
    if preset is None:
        assert convention is not None
        return Reading(f"convention {convention}", convention)
    from gge.models.factory import preset_config

    m = preset_config(preset)
    name = f"preset {preset}" + ("" if convention is None else f", convention {convention}")
    ceiling = m.prompt_max_pixels if m.prompt_max_pixels is not None else m.max_pixels
    return Reading(
        name,
        convention or str(m.convention),
        bool(m.box_pairs),
        int(m.patch_factor) if m.patch_factor is not None else 28,
        int(m.min_pixels) if m.min_pixels is not None else 56 * 56,
        int(ceiling) if ceiling is not None else PROCESSOR_MAX_PIXELS,
    )


@dataclass
class Reread:
    """How the re-read points compare with the log's own.

    Attributes:
        reading: The reading used.
        lines: Lines re-read (matched, with raw text).
        same: Re-read points equal to the log's (within :data:`SAME_PX`), both none included.
        differ: ``(sample id, distance in pixels or None where one side has no point)``.
        frame: Sample ids whose two points differ by the frame's ratio to the screenshot.
        clamped: Sample ids whose answer lies outside the screenshot and the log's point on its edge
            (the harness clamped it).
    """

    reading: Reading
    lines: int = 0
    same: int = 0
    differ: list[tuple[str, float | None]] = field(default_factory=list)
    frame: list[str] = field(default_factory=list)
    clamped: list[str] = field(default_factory=list)

    def add(self, sample: Sample, line: LogLine, point: tuple[float, float] | None) -> None:
        """Count one line's re-read point against the log's."""
        self.lines += 1
        ours, theirs = point, line.point
        if ours is None or theirs is None:
            if ours is None and theirs is None:
                self.same += 1
            else:
                self.differ.append((sample.id, None))
            return
        distance = math.dist(ours, theirs)
        if distance <= SAME_PX:
            self.same += 1
            return
        self.differ.append((sample.id, distance))
        w, h = sample.image_size
        outside = not (0 <= ours[0] <= w and 0 <= ours[1] <= h)
        if outside and (theirs[0] in (0, w) or theirs[1] in (0, h)):
            self.clamped.append(sample.id)
            return
        if self.reading.convention == "abs_resized" or line.fields.get("resized") is not None:
            fw, fh = self.reading.frame(sample, line)
            for rx, ry in ((fw / w, fh / h), (w / fw, h / fh)):
                if abs(ours[0] * rx - theirs[0]) <= 1 and abs(ours[1] * ry - theirs[1]) <= 1:
                    self.frame.append(sample.id)
                    break

    def summary(self) -> list[str]:
        """Lines for the import summary."""
        if not self.lines:
            none = "the log keeps no point of its own to compare"
            return [f"raw answers read ({self.reading.described}): {none}"]
        same = f"{self.same} of {self.lines} points are the log's own"
        out = [f"raw answers read again ({self.reading.described}): {same}"]
        distances = sorted(d for _, d in self.differ if d is not None)
        if self.differ:
            ids = ", ".join(sid for sid, _ in self.differ[:5]) + (
                f" +{len(self.differ) - 5} more" if len(self.differ) > 5 else ""
            )
            spread = (
                f"; by {statistics.median(distances):.1f} px (median), {distances[-1]:.1f} px at most"
                if distances
                else ""
            )
            pointless = sum(1 for _, d in self.differ if d is None)
            some = f"; {pointless} where one side has no point" if pointless else ""
            out.append(f"  {len(self.differ)} differ{spread}{some}: {ids}")
        if self.clamped:
            what = "are answers outside the screenshot that the log clamped to its edge"
            out.append(f"  {len(self.clamped)} {what}: " + ", ".join(self.clamped[:5]))
        if self.frame:
            what = "differ by the frame's ratio to the screenshot (a coordinate-frame bug)"
            out.append(f"  {len(self.frame)} {what}: " + ", ".join(self.frame[:5]))
        return out
