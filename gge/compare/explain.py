"""``gge explain A B``: why two figures for one checkpoint on one benchmark differ, step by step.

A and B are replay files: a ``gge import`` output (its lines keep the log's own verdict, point and
box under ``imported``) or a run's ``predictions.jsonl`` (its first candidate, judged by gge). Each
side's figure is walked from the number its harness printed to gge's rule on what the model said,
over the release's samples, one cause at a time; B's walk is then taken back. Every step is the
difference of two headlines computed on the same samples, so the steps sum to B's figure minus A's
exactly (a figure the user gives, ``--published``, adds the step from B's computed figure to it: the
printing, an aggregation, or what the files do not show). A side's walk (each headline over the
release's N samples unless said):

1. *denominator*: its own verdicts over its counted lines -> the same verdicts over the N samples
   (a sample not in the file is a miss; a line the harness did not count enters with gge's verdict
   of its point);
2. *data*: on the samples where the log's box is not the release's target, gge's verdict of the
   log's own point instead of the log's;
3. *verdict rule*: the same on every other sample (an edge, a rounding, a refusal rule);
4. *parse / frame*: the point written (read again from the raw answer) instead of the log's own;

then *answer*: B's points instead of A's, by gge's rule (the hits flipped each way, and the distance
between the two points where both have one).

Example:
    >>> from gge.types import Box, Sample
    >>> s = [Sample("b", str(i), f"/{i}.png", (10, 10), "x", Box(0, 0, 5, 5)) for i in range(4)]
    >>> a = {"0": Side.Line((1.0, 1.0), True, True, (1.0, 1.0), None)}
    >>> b = {str(i): Side.Line((1.0, 1.0), None, True, None, None) for i in range(4)}
    >>> steps = explain(s, Side("A", a), Side("B", b))
    >>> [(st.name, round(st.points, 2)) for st in steps.steps if st.points]
    [('A: denominator', -75.0), ('answer', 75.0)]
    >>> steps.total == steps.b_figure - steps.a_figure
    True
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from gge.errors import GgeError
from gge.models.imported import as_answer, hits
from gge.models.imported.lines import region_agrees
from gge.types import Sample

SHOWN = 5
"""Sample ids named per step."""


@dataclass
class Side:
    """One side's lines, by sample id.

    Attributes:
        name: How the report names it.
        lines: Sample id -> its line.
    """

    class Line(NamedTuple):
        """What a file says of one sample."""

        point: tuple[float, float] | None  # the point written (scored by gge)
        own: bool | None  # the log's own verdict (None: a gge run's line, or a log without one)
        counted: bool  # the harness counted it
        log_point: tuple[float, float] | None  # the log's own point (None: as ``point``)
        log_box: tuple[float, ...] | None  # the log's own target, where it keeps one
        refused: bool = False  # the answer is an abstention

    name: str
    lines: dict[str, Line] = field(default_factory=dict)

    @property
    def imported(self) -> bool:
        """Whether the side carries a log's own verdicts (an import)."""
        return any(line.own is not None for line in self.lines.values())


@dataclass(frozen=True)
class Step:
    """One step of the walk from A's figure to B's.

    Attributes:
        name: ``A: denominator``, ..., ``answer``, ..., ``printed``.
        points: Its effect on the headline, in points (B minus A direction).
        to_hit: Samples the step turns into hits.
        to_miss: Samples it turns into misses.
        note: A line more (the drift of the answers, the published figure).
    """

    name: str
    points: float
    to_hit: tuple[str, ...] = ()
    to_miss: tuple[str, ...] = ()
    note: str = ""


@dataclass
class Explanation:
    """The walk: the two figures, the steps and their sum.

    Attributes:
        benchmark: The benchmark.
        samples: The release's samples (N).
        a_figure: A's figure as its harness printed it (its own verdicts and denominator).
        b_figure: B's figure, the same way (or the published figure where one is given).
        steps: The steps, in order.
    """

    benchmark: str
    samples: int
    a_figure: float
    b_figure: float
    steps: list[Step]

    @property
    def total(self) -> float:
        """The steps' sum: B's figure minus A's (to rounding of floating point only)."""
        return math.fsum(s.points for s in self.steps)

    def markdown(self, a: str, b: str) -> str:
        """The walk as markdown: the two figures, then one row per step that moves a sample."""
        rows = [
            f"| {s.name} | {s.points:+.2f} | {len(s.to_hit)} | {len(s.to_miss)} | "
            f"{', '.join([*s.to_hit, *s.to_miss][:SHOWN])}{(' ' + s.note) if s.note else ''} |"
            for s in self.steps
            if s.points or s.to_hit or s.to_miss or s.note
        ]
        return "\n".join(
            [
                f"# {a} -> {b}: {self.benchmark}, {self.samples} samples",
                "",
                f"{a}: {self.a_figure:.2f} · {b}: {self.b_figure:.2f} · difference "
                f"{self.b_figure - self.a_figure:+.2f} points, the steps' sum {self.total:+.2f}",
                "",
                "| step | points | to hit | to miss | first samples |",
                "|---|---|---|---|---|",
                *rows,
                "",
            ]
        )

    def document(self) -> dict[str, Any]:
        """The walk as JSON (every figure unrounded)."""
        return {
            "benchmark": self.benchmark,
            "samples": self.samples,
            "a_figure": self.a_figure,
            "b_figure": self.b_figure,
            "total": self.total,
            "steps": [
                {
                    "name": s.name,
                    "points": s.points,
                    "to_hit": list(s.to_hit),
                    "to_miss": list(s.to_miss),
                    "note": s.note,
                }
                for s in self.steps
            ],
        }


def _pct(k: float, n: int) -> float:
    return 100.0 * k / n if n else 0.0


def _walk(samples: Sequence[Sample], side: Side) -> tuple[float, list[tuple[str, dict[str, bool]]], float]:
    """A side's printed figure, its verdict vector after each step, and its own denominator's size."""
    n = len(samples)
    lines = side.lines
    if side.imported:
        # the harness's figure: its verdicts over the lines it counted (a line without one it never judged)
        own = {
            s.id: bool(lines[s.id].own)
            for s in samples
            if s.id in lines and lines[s.id].counted and lines[s.id].own is not None
        }
        printed = _pct(sum(own.values()), len(own))
    else:
        own = {}
        for s in samples:
            line = lines.get(s.id)
            own[s.id] = line is not None and hits(s, line.point, line.refused)
        printed = _pct(sum(own.values()), n)
    # 1. the same verdicts over the N samples; a line the harness did not count is judged by gge
    v1 = {}
    for s in samples:
        line = lines.get(s.id)
        if s.id in own:
            v1[s.id] = own[s.id]
        else:
            v1[s.id] = line is not None and hits(s, *as_answer(line.log_point or line.point, line.refused))
    # 2./3. gge's verdict of the log's own point: first where the log's box is not the release's
    v2, v3 = dict(v1), dict(v1)
    for s in samples:
        line = lines.get(s.id)
        if line is None or not line.counted:
            continue
        point = line.log_point if line.log_point is not None else line.point
        ours = hits(s, *as_answer(point, line.refused))
        data = line.log_box is not None and not region_agrees(s.region, line.log_box)
        if data:
            v2[s.id] = ours
        v3[s.id] = ours
    # 4. the point written (read again from the raw answer)
    v4 = {s.id: s.id in lines and hits(s, lines[s.id].point, lines[s.id].refused) for s in samples}
    steps = [("denominator", v1), ("data", v2), ("verdict rule", v3), ("parse / frame", v4)]
    return printed, steps, float(n)


def _outside(side: Side, order: Sequence[str]) -> str:
    """What a side's own denominator leaves out: samples not in its file, lines it did not count."""
    absent = [i for i in order if i not in side.lines]
    uncounted = [
        i for i in order if i in side.lines and (not side.lines[i].counted or side.lines[i].own is None)
    ]
    if not side.imported or not (absent or uncounted):
        return ""
    parts = [f"{len(absent)} not in the file"] if absent else []
    parts += [f"{len(uncounted)} not counted by its harness"] if uncounted else []
    return "(" + "; ".join(parts) + ": " + ", ".join([*absent, *uncounted][:SHOWN]) + ")"


def _step(
    name: str, before: Mapping[str, bool], after: Mapping[str, bool], order: Sequence[str], n: int
) -> Step:
    to_hit = tuple(i for i in order if after[i] and not before[i])
    to_miss = tuple(i for i in order if before[i] and not after[i])
    return Step(name, _pct(len(to_hit) - len(to_miss), n), to_hit, to_miss)


def explain(samples: Sequence[Sample], a: Side, b: Side, published: float | None = None) -> Explanation:
    """The walk from A's printed figure to B's (module docstring).

    Args:
        samples: The benchmark's release samples.
        a: The first side.
        b: The second side.
        published: A figure the user has for B (a paper's), placed as the last step.

    Returns:
        The explanation; its steps sum to B's figure minus A's.
    """
    n = len(samples)
    order = [s.id for s in samples]
    a_printed, a_steps, _ = _walk(samples, a)
    b_printed, b_steps, _ = _walk(samples, b)
    steps: list[Step] = []
    # A: from its printed figure to gge's rule on its points over N
    previous_points = a_printed
    previous: dict[str, bool] | None = None
    for name, verdicts in a_steps:
        figure = _pct(sum(verdicts.values()), n)
        if previous is None:  # the denominator: the figure changes with the samples counted
            steps.append(Step(f"{a.name}: {name}", figure - previous_points, note=_outside(a, order)))
        else:
            steps.append(_step(f"{a.name}: {name}", previous, verdicts, order, n))
        previous, previous_points = verdicts, figure
    # the answers: B's points instead of A's
    a_final, b_final = a_steps[-1][1], b_steps[-1][1]
    answer = _step("answer", a_final, b_final, order, n)
    drift = [
        math.dist(a.lines[i].point, b.lines[i].point)  # type: ignore[arg-type]
        for i in order
        if i in a.lines and i in b.lines and a.lines[i].point is not None and b.lines[i].point is not None
    ]
    if drift:
        drift.sort()
        same = sum(1 for d in drift if d <= 0.5)
        answer = Step(
            answer.name, answer.points, answer.to_hit, answer.to_miss,
            f"(points: {same} of {len(drift)} the same; median drift {drift[len(drift) // 2]:.1f} px, "
            f"{drift[-1]:.1f} px at most)",
        )  # fmt: skip
    steps.append(answer)
    # B: back from gge's rule on its points to its printed figure
    for (name, verdicts), (_, earlier) in zip(reversed(b_steps[1:]), reversed(b_steps[:-1]), strict=True):
        steps.append(_step(f"{b.name}: {name} (back)", verdicts, earlier, order, n))
    b_n_figure = _pct(sum(b_steps[0][1].values()), n)
    steps.append(Step(f"{b.name}: denominator (back)", b_printed - b_n_figure, note=_outside(b, order)))
    b_figure = b_printed
    if published is not None:
        steps.append(
            Step(
                "printed",
                published - b_printed,
                note=f"(published {published:.2f} against {b_printed:.2f} computed)",
            )
        )
        b_figure = published
    return Explanation(samples[0].benchmark if samples else "", n, a_printed, b_figure, steps)


def read_side(path: str | Path, benchmark: str, name: str) -> Side:
    """A replay file's lines of one benchmark as a side (:class:`Side`).

    Args:
        path: A ``gge import`` output or a run's ``predictions.jsonl``.
        benchmark: The benchmark whose lines are read.
        name: How the report names the side.

    Returns:
        The side.

    Raises:
        GgeError: the file is missing, or a line is malformed (named by file and line).
    """
    from gge.documents.records import decode

    file = Path(path)
    if file.is_dir():
        file = file / "predictions.jsonl"
    if not file.is_file():
        raise GgeError(f"{file}: no such replay file")
    side = Side(name)
    with file.open(encoding="utf-8") as f:
        for n, text in enumerate(f, start=1):
            if not text.strip():
                continue
            where = f"{file}:{n}"
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise GgeError(f"{where}: malformed JSON line: {e.msg}") from None
            record = decode(obj, where)
            if record.benchmark != benchmark:
                continue
            first = record.candidates[0] if record.candidates else None
            point = first.point if first is not None else None
            refused = first is not None and first.point is None and first.parsed
            imported = obj.get("imported") if isinstance(obj, dict) else None
            if isinstance(imported, dict):
                log_point = imported.get("point")
                log_box = imported.get("box")
                side.lines[record.id] = Side.Line(
                    point,
                    imported.get("correct"),
                    imported.get("counted", True) is not False,
                    None if log_point is None else (float(log_point[0]), float(log_point[1])),
                    None if log_box is None else tuple(float(v) for v in log_box),
                    refused,
                )
            else:
                side.lines[record.id] = Side.Line(point, None, True, None, None, refused)
    return side
