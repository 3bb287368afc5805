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
between the two points where both have one: how many are within 0.5 px, the median and the largest).
Each step carries the figure before it and after it (:attr:`Step.start`, :attr:`Step.end`): the
walk passes through A's printed figure, gge's rule on A's points over N, gge's rule on B's, and B's
printed figure.

Where the benchmark's official headline is a macro mean (``official``), a gge run's printed figure is
that mean over its samples; its walk starts with *aggregation*, the step from that mean to the micro
figure over the same samples (a harness's log prints micro: its walk has none). A ``--published``
figure within the printing of B's (rounded or cut to one or two decimals) is said to be so; its
step says what it is set against: B's printed figure, by which rule, over how many of the N samples.

Example:
    >>> from gge.types import Box, Sample
    >>> s = [Sample("b", str(i), f"/{i}.png", (10, 10), "x", Box(0, 0, 5, 5)) for i in range(4)]
    >>> a = {"0": Side.Line((1.0, 1.0), True, True, (1.0, 1.0), None)}
    >>> b = {str(i): Side.Line((1.0, 1.0), None, True, None, None) for i in range(4)}
    >>> steps = explain(s, Side("A", a), Side("B", b))
    >>> [(st.name, st.start, st.end) for st in steps.steps if st.points]
    [('A: denominator', 100.0, 25.0), ('answer', 25.0, 100.0)]
    >>> steps.total == steps.b_figure - steps.a_figure
    True
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from gge.benchmarks.base import MICRO, Average
from gge.documents.records import decode, json_lines
from gge.errors import GgeError
from gge.models.imported import as_answer, hits
from gge.models.imported.formats import utf8_text
from gge.models.imported.lines import region_agrees
from gge.report.explain_page import CARDS
from gge.report.gallery import overlay_data_uri
from gge.scoring.scoring import score_sample
from gge.types import Candidate, Prediction, Sample, label_values

SHOWN = 5
"""Sample ids named per step."""


@dataclass
class Side:
    """One side's lines, by sample id.

    Attributes:
        name: How the report names it.
        lines: Sample id -> its line.
        scored_by: Which answer of a run's line gge scores (its selection's pick, or its first candidate).
        log: The side is a harness's log (a ``gge import`` output), with or without verdicts: it
            printed micro; a gge run printed the benchmark's official rule.
        absent: Samples a run counted as misses because its replayed file had no line for them
            (``not_in_file``): in its printed figure's denominator, without an answer.
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
    scored_by: str = "its first candidate"
    log: bool = False
    absent: set[str] = field(default_factory=set)

    @property
    def imported(self) -> bool:
        """Whether the side carries a log's own verdicts (an import of a log that judged its lines)."""
        return any(line.own is not None for line in self.lines.values())

    @property
    def is_log(self) -> bool:
        """Whether the side is a harness's log (it printed micro), judged or not."""
        return self.log or self.imported


@dataclass(frozen=True)
class Step:
    """One step of the walk from A's figure to B's.

    Attributes:
        name: ``A: denominator``, ..., ``answer``, ..., ``printed``.
        start: The figure before the step (A's printed figure before the first).
        end: The figure after it (B's printed figure, or the published one, after the last).
        to_hit: Samples the step turns into hits.
        to_miss: Samples it turns into misses.
        note: A line more (the drift of the answers, what the published figure is set against).
    """

    name: str
    start: float
    end: float
    to_hit: tuple[str, ...] = ()
    to_miss: tuple[str, ...] = ()
    note: str = ""

    @property
    def points(self) -> float:
        """Its effect on the headline, in points (B minus A direction): ``end - start``."""
        return self.end - self.start


@dataclass(frozen=True)
class Moved:
    """A sample some step moves: what each side wrote for it and gge's verdicts at the walk's end.

    Attributes:
        id: The sample id.
        steps: The steps that move it, each ``name: to hit`` or ``name: to miss``.
        a_point: A's point written (None: no point, or an abstention).
        b_point: B's point written.
        a_hit: gge's verdict of A's point.
        b_hit: gge's verdict of B's point.
    """

    id: str
    steps: tuple[str, ...]
    a_point: tuple[float, float] | None
    b_point: tuple[float, float] | None
    a_hit: bool
    b_hit: bool


@dataclass
class Explanation:
    """The walk: the two figures, the steps and their sum.

    Attributes:
        benchmark: The benchmark.
        samples: The release's samples (N).
        a_figure: A's figure as its harness printed it (its own verdicts and denominator).
        b_figure: B's figure, the same way (or the published figure where one is given).
        steps: The steps, in order.
        official: The benchmark's official averaging rule (what a gge run prints).
        moved: Every sample a step moves (:func:`explain`).
        files: The A and B files as the user named them (``gge explain``), shown by the reports; None
            where the sides were not read from files.
    """

    benchmark: str
    samples: int
    a_figure: float
    b_figure: float
    steps: list[Step]
    official: str = "micro"
    moved: list[Moved] = field(default_factory=list)
    files: tuple[str, str] | None = None

    @property
    def total(self) -> float:
        """The steps' sum: B's figure minus A's (to rounding of floating point only)."""
        return math.fsum(s.points for s in self.steps)

    def gge_rule(self) -> tuple[float, float] | None:
        """The figures of gge's rule on A's points and on B's over the N samples (the answer step's ends)."""
        answer = next((s for s in self.steps if s.name == "answer"), None)
        return None if answer is None else (answer.start, answer.end)

    def markdown(self, a: str, b: str) -> str:
        """The walk as markdown: the files, the figures, then a row per step that moves or says something.

        Each row gives the figure before the step and after it, the step's points, the samples it
        turns to hits and to misses (the first :data:`SHOWN` named) and its note.
        """
        rows = [
            f"| {s.name} | {s.start:.2f} | {s.end:.2f} | {_signed(s.points)} | {len(s.to_hit)} | "
            f"{len(s.to_miss)} | "
            f"{', '.join([*s.to_hit, *s.to_miss][:SHOWN])}{(' ' + s.note) if s.note else ''} |"
            for s in self.steps
            if s.points or s.to_hit or s.to_miss or s.note
        ]
        files = [f"{a}: {self.files[0]} · {b}: {self.files[1]}", ""] if self.files is not None else []
        rule = self.gge_rule()
        ours = (
            [f"gge's rule on the {self.samples} samples: {a} {rule[0]:.2f} · {b} {rule[1]:.2f}", ""]
            if rule is not None
            else []
        )
        return "\n".join(
            [
                f"# {a} -> {b}: {self.benchmark}, {self.samples} samples",
                "",
                *files,
                f"{a}: {self.a_figure:.2f} · {b}: {self.b_figure:.2f} · difference "
                f"{_signed(self.b_figure - self.a_figure)} points, the steps' sum {_signed(self.total)}",
                "",
                *ours,
                "| step | from | to | points | to hit | to miss | first samples |",
                "|---|---|---|---|---|---|---|",
                *rows,
                "",
            ]
        )

    def document(self) -> dict[str, Any]:
        """The walk as JSON (every figure unrounded; ``a_file``/``b_file`` null where not read from files)."""
        rule = self.gge_rule()
        return {
            "benchmark": self.benchmark,
            "samples": self.samples,
            "official": self.official,
            "a_file": None if self.files is None else self.files[0],
            "b_file": None if self.files is None else self.files[1],
            "a_figure": self.a_figure,
            "b_figure": self.b_figure,
            "gge_rule": None if rule is None else {"a": rule[0], "b": rule[1]},
            "total": self.total,
            "steps": [
                {
                    "name": s.name,
                    "from": s.start,
                    "to": s.end,
                    "points": s.points,
                    "to_hit": list(s.to_hit),
                    "to_miss": list(s.to_miss),
                    "note": s.note,
                }
                for s in self.steps
            ],
            "moved": [
                {
                    "id": m.id,
                    "steps": list(m.steps),
                    "a_point": None if m.a_point is None else list(m.a_point),
                    "b_point": None if m.b_point is None else list(m.b_point),
                    "a_hit": m.a_hit,
                    "b_hit": m.b_hit,
                }
                for m in self.moved
            ],
        }


def _signed(value: float) -> str:
    """Points with a sign and two decimals; a float-rounding residue reads as +0.00."""
    return f"{(value if abs(value) >= 0.005 else 0.0):+.2f}"


def _pct(k: float, n: int) -> float:
    return 100.0 * k / n if n else 0.0


def aggregate(samples: Sequence[Sample], verdicts: Mapping[str, bool], rule: Average) -> float:
    """The figure of ``verdicts`` (over the samples they name) by an averaging rule.

    Micro is hits over those samples; a macro rule the unweighted mean of the hit rate of each
    combination of its label values present (a multi-valued label counts in each of its values).

    Example:
        >>> from gge.types import Box, Sample
        >>> s = [Sample("b", str(i), "/a.png", (9, 9), "x", Box(0, 0, 1, 1), {"g": g})
        ...      for i, g in enumerate("xxxy")]
        >>> aggregate(s, {"0": True, "1": False, "2": False, "3": True}, Average("macro", ("g",)))
        66.66666666666667
    """
    if not rule.over:
        return _pct(sum(verdicts[s.id] for s in samples if s.id in verdicts), len(verdicts))
    groups: dict[tuple[str, ...], list[bool]] = {}
    for s in samples:
        if s.id not in verdicts:
            continue
        combos: list[tuple[str, ...]] = [()]
        for key in rule.over:
            combos = [(*c, str(v)) for c in combos for v in label_values(s.labels.get(key))]
        for combo in combos:
            groups.setdefault(combo, []).append(verdicts[s.id])
    return math.fsum(_pct(sum(g), len(g)) for g in groups.values()) / len(groups) if groups else 0.0


def _walk(
    samples: Sequence[Sample], side: Side, rule: Average
) -> tuple[float, float, int, list[tuple[str, dict[str, bool]]]]:
    """A side's printed and micro figures, how many samples they are over, its verdicts after each step."""
    lines = side.lines
    judged = side.imported
    # the printed figure: the log's verdicts over the lines its harness counted and judged; for a run
    # (or a log without verdicts), gge's verdict of the point written, over the lines present
    own: dict[str, bool] = {}
    for s in samples:
        line = lines.get(s.id)
        if line is None:
            continue
        if not judged:
            own[s.id] = hits(s, *as_answer(line.point, line.refused))
        elif line.counted and line.own is not None:
            own[s.id] = line.own
    micro = _pct(sum(own.values()), len(own))
    printed = micro if side.is_log else aggregate(samples, own, rule)  # a gge run prints its official rule
    # 1. the same verdicts over the N samples; a line the harness did not count or judge is judged by gge
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
        if line is None or s.id not in own or not judged or line.log_point is None:
            continue  # no verdict of the log's to replace, or no point of its own (its raw text: step 4)
        ours = hits(s, *as_answer(line.log_point, line.refused))
        if line.log_box is not None and not region_agrees(s.region, line.log_box):
            v2[s.id] = ours
        v3[s.id] = ours
    # 4. the point written (read again from the raw answer)
    v4 = {
        s.id: s.id in lines and hits(s, *as_answer(lines[s.id].point, lines[s.id].refused)) for s in samples
    }
    steps = [("denominator", v1), ("data", v2), ("verdict rule", v3), ("parse / frame", v4)]
    return printed, micro, len(own), steps


def _outside(side: Side, order: Sequence[str]) -> str:
    """What a side's own denominator leaves out: samples not in its file, lines it did not count."""
    absent = [i for i in order if i not in side.lines]
    uncounted = (
        [i for i in order if i in side.lines and (not side.lines[i].counted or side.lines[i].own is None)]
        if side.imported
        else []
    )
    if not (absent or uncounted):
        return ""
    parts = [f"{len(absent)} not in the file"] if absent else []
    parts += [f"{len(uncounted)} not counted or judged by its harness"] if uncounted else []
    return "(" + "; ".join(parts) + ": " + ", ".join([*absent, *uncounted][:SHOWN]) + ")"


def _step(
    name: str, before: Mapping[str, bool], after: Mapping[str, bool], order: Sequence[str], n: int
) -> Step:
    to_hit = tuple(i for i in order if after[i] and not before[i])
    to_miss = tuple(i for i in order if before[i] and not after[i])
    return Step(name, _pct(sum(before.values()), n), _pct(sum(after.values()), n), to_hit, to_miss)


def _covers(side: Side, official: Average, counted: int, n: int) -> str:
    """What a side's printed figure is: by which rule, over how many of the N samples."""
    if side.imported:
        rule = f"its harness's verdicts (micro) over the {counted} lines it counted and judged"
    elif side.is_log:
        rule = f"gge's verdicts of its points (micro) over its {counted} lines"
    else:
        rule = f"gge's rule ({official.name}) over its {counted} lines"
    return f"{side.name}'s printed figure: {rule}, of the {n} samples"


def _printing(published: float, computed: float) -> str:
    """How a published figure is the computed one printed (rounded or cut), or ""."""
    for digits in (2, 1):
        scale = 10**digits
        if abs(published - round(computed, digits)) < 1e-9:
            return f"; {computed:.4f} rounded to {digits} decimals"
        if abs(published - math.floor(computed * scale) / scale) < 1e-9:
            return f"; {computed:.4f} cut to {digits} decimals"
    return ""


def explain(
    samples: Sequence[Sample],
    a: Side,
    b: Side,
    published: float | None = None,
    official: Average = MICRO,
) -> Explanation:
    """The walk from A's printed figure to B's (module docstring).

    Args:
        samples: The benchmark's release samples.
        a: The first side.
        b: The second side.
        published: A figure the user has for B (a paper's), placed as the last step.
        official: The benchmark's official averaging rule (what a gge run prints).

    Returns:
        The explanation; its steps sum to B's figure minus A's.
    """
    n = len(samples)
    order = [s.id for s in samples]
    a_printed, a_micro, _, a_steps = _walk(samples, a, official)
    b_printed, b_micro, b_counted, b_steps = _walk(samples, b, official)
    steps: list[Step] = []
    # A: from its printed figure to gge's rule on its points over N
    previous_points = a_printed
    if official.over and not a.is_log:
        note = f"({official.name} over its {sum(1 for i in order if i in a.lines)} samples -> micro)"
        steps.append(Step(f"{a.name}: aggregation", a_printed, a_micro, note=note))
        previous_points = a_micro
    previous: dict[str, bool] | None = None
    for name, verdicts in a_steps:
        figure = _pct(sum(verdicts.values()), n)
        if previous is None:  # the denominator: the figure changes with the samples counted
            steps.append(Step(f"{a.name}: {name}", previous_points, figure, note=_outside(a, order)))
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
    notes = []
    if drift:
        same = sum(1 for d in drift if d <= 0.5)
        notes.append(
            f"points: {same} of {len(drift)} the same; median drift {statistics.median(drift):.1f} px, "
            f"{max(drift):.1f} px at most"
        )
    for side in (a, b):
        unanswered = [i for i in (*answer.to_hit, *answer.to_miss) if i in side.absent]
        if unanswered:
            shown = ", ".join(unanswered[:SHOWN])
            notes.append(f"{len(unanswered)} of them not in {side.name}'s replayed file: {shown}")
    if notes:
        answer = replace(answer, note="(" + "; ".join(notes) + ")")
    steps.append(answer)
    # B: back from gge's rule on its points to its printed figure
    for (name, verdicts), (_, earlier) in zip(reversed(b_steps[1:]), reversed(b_steps[:-1]), strict=True):
        steps.append(_step(f"{b.name}: {name} (back)", verdicts, earlier, order, n))
    b_n_figure = _pct(sum(b_steps[0][1].values()), n)
    steps.append(Step(f"{b.name}: denominator (back)", b_n_figure, b_micro, note=_outside(b, order)))
    if official.over and not b.is_log:
        note = f"(micro -> {official.name} over its {sum(1 for i in order if i in b.lines)} samples)"
        steps.append(Step(f"{b.name}: aggregation (back)", b_micro, b_printed, note=note))
    b_figure = b_printed
    if published is not None:
        steps.append(
            Step(
                "printed",
                b_printed,
                published,
                note=f"(published {published:.2f} against {b_printed:.2f} computed, "
                f"{_covers(b, official, b_counted, n)}{_printing(published, b_printed)})",
            )
        )
        b_figure = published
    benchmark = samples[0].benchmark if samples else ""
    walk = Explanation(benchmark, n, a_printed, b_figure, steps, official.name)
    walk.moved = _moved(order, steps, a, b, a_final, b_final)
    return walk


def _moved(
    order: Sequence[str],
    steps: Sequence[Step],
    a: Side,
    b: Side,
    a_final: Mapping[str, bool],
    b_final: Mapping[str, bool],
) -> list[Moved]:
    """Every sample a step moves, in sample order, with both sides' points."""
    by_id: dict[str, list[str]] = {}
    for step in steps:
        for i in step.to_hit:
            by_id.setdefault(i, []).append(f"{step.name}: to hit")
        for i in step.to_miss:
            by_id.setdefault(i, []).append(f"{step.name}: to miss")

    def point(side: Side, i: str) -> tuple[float, float] | None:
        line = side.lines.get(i)
        return None if line is None else line.point

    return [
        Moved(i, tuple(by_id[i]), point(a, i), point(b, i), a_final[i], b_final[i])
        for i in order
        if i in by_id
    ]


def draw_moved(
    walk: Explanation, samples: Sequence[Sample], limit: int = CARDS
) -> dict[str, tuple[str, tuple[int, int]]]:
    """The screenshots of the samples the walk moves, the target and both sides' points drawn.

    Args:
        walk: The walk.
        samples: The benchmark's samples (their screenshots).
        limit: How many to draw at most.

    Returns:
        Sample id -> ``(JPEG data: URI, (width, height))``; a screenshot that cannot be read is left out.
    """
    by_id = {s.id: s for s in samples}
    out: dict[str, tuple[str, tuple[int, int]]] = {}
    for moved in walk.moved[:limit]:
        sample = by_id.get(moved.id)
        if sample is None:
            continue
        answers = (Candidate(moved.a_point), Candidate(moved.b_point))  # 1 = A's (ringed), 2 = B's
        result = score_sample(sample, Prediction(sample.benchmark, sample.id, answers), k=2)
        drawn = overlay_data_uri(sample, result, "first")
        if drawn is not None:
            out[moved.id] = drawn
    return out


def _checked_point(value: Any, key: str, where: str, n: int) -> tuple[float, ...] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) < n
        or (n == 2 and len(value) != 2)
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    ):
        what = "[x, y]" if n == 2 else "a list of at least 4 numbers"
        raise GgeError(f"{where}: imported.{key} must be {what} or null, got {value!r:.60}")
    return tuple(float(v) for v in value)


def _imported_line(block: Any, point: tuple[float, float] | None, refused: bool, where: str) -> Side.Line:
    """A ``gge import`` line's ``imported`` block, checked key by key."""
    if not isinstance(block, dict):
        raise GgeError(f"{where}: imported must be an object, got {block!r:.60}")
    own, counted = block.get("correct"), block.get("counted", True)
    if own is not None and not isinstance(own, bool):
        raise GgeError(f"{where}: imported.correct must be true, false or null, got {own!r:.40}")
    if not isinstance(counted, bool):
        raise GgeError(f"{where}: imported.counted must be true or false, got {counted!r:.40}")
    log_point = _checked_point(block.get("point"), "point", where, 2)
    log_box = _checked_point(block.get("box"), "box", where, 4)
    return Side.Line(
        point,
        own,
        counted,
        None if log_point is None else (log_point[0], log_point[1]),
        log_box,
        refused,
    )


def run_results(path: str | Path) -> Mapping[str, Any] | None:
    """The results.json of the run whose folder or ``predictions.jsonl`` ``path`` is, or None.

    None where ``path`` is no run's (a ``gge import`` output, a folder without results.json) or its
    results.json cannot be read as a JSON object.
    """
    file = Path(path)
    results = file / "results.json" if file.is_dir() else file.parent / "results.json"
    if not (file.is_dir() or file.name == "predictions.jsonl") or not results.is_file():
        return None
    try:
        document = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, Mapping) else None


def _selection(file: Path) -> str | None:
    """The selection strategy of the run whose predictions.jsonl this is (its results.json), or None."""
    strategy = (run_results(file) or {}).get("selection")
    return strategy if isinstance(strategy, str) else None


def read_side(path: str | Path, benchmark: str, name: str) -> Side:
    """A replay file's lines of one benchmark as a side (:class:`Side`).

    A run's line is scored by its selection strategy's pick (the run's results.json ``selection``,
    where the file is a run's ``predictions.jsonl``), else by its first candidate; an imported
    line by the point written, beside the log's own verdict, point and box. A run's line marked
    ``not_in_file`` (it replayed a file without that sample) is a miss without an answer, as the run
    counted it (:attr:`Side.absent`).

    Args:
        path: A ``gge import`` output, or a run's folder or ``predictions.jsonl``.
        benchmark: The benchmark whose lines are read.
        name: How the report names the side.

    Returns:
        The side (``scored_by`` says which answer of a run's line it scores).

    Raises:
        GgeError: the file is missing, not UTF-8, or has no line for the benchmark; a line is
            malformed or repeats an id (named by file, line and key).
    """
    file = Path(path)
    if file.is_dir():
        file = file / "predictions.jsonl"
    if not file.is_file():
        raise GgeError(f"{file}: no such replay file")
    strategy = _selection(file)
    side = Side(name)
    seen: dict[str, int] = {}
    for n, where, obj in json_lines(utf8_text(file), file):
        record = decode(obj, where)
        if record.benchmark != benchmark:
            continue
        if record.id in seen:
            raise GgeError(
                f"{where}: a second line for {benchmark} {record.id} (the first at line {seen[record.id]})"
            )
        seen[record.id] = n
        if record.not_in_file:  # a run's replay of a file without the line: a miss in its figure
            side.lines[record.id] = Side.Line(None, None, True, None, None)
            side.absent.add(record.id)
            continue
        if strategy is not None and record.picks is not None and strategy in record.picks:
            answer = record.picks[strategy]
            side.scored_by = f"its {strategy} pick"
            # a null pick is no pick or an abstention: the run's own verdict says which
            top1 = record.top1 or {}
            abstained = answer is None and top1.get(strategy) is True
        else:
            answer = record.candidates[0] if record.candidates else None
            side.scored_by = "its first candidate"
            abstained = False
        point = answer.point if answer is not None else None
        refused = abstained or (answer is not None and answer.point is None and answer.parsed)
        block = obj.get("imported")
        if block is not None:
            side.log = True
            side.lines[record.id] = _imported_line(block, point, refused, where)
        else:
            side.lines[record.id] = Side.Line(point, None, True, None, None, refused)
    if not side.lines:
        raise GgeError(f"{file}: no line for {benchmark}")
    return side
