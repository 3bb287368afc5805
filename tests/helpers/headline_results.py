"""Hand-made results of a two-group benchmark averaged macro over groups or micro, for headline tests.

:class:`Macro` averages its official figures over ``group`` (two tables); :class:`Micro` is the same
benchmark averaged over samples. ``MACRO`` is four results at K = 2 whose figures are worked out by hand
in the tests (group x: one hit; group y: three samples, the pick hits once, a second answer once more).
Used by ``test_report_outputs.py`` and ``test_metrics_headlines.py``.
"""

from __future__ import annotations

from pathlib import Path

from gge.benchmarks.base import Average, Benchmark, BenchmarkOptions, LoadedBenchmark, TableSpec
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, Prediction, Sample, SampleResult

BOX = Box(0, 0, 10, 10)
HIT, MISS = (5.0, 5.0), (50.0, 50.0)


class Macro(Benchmark):
    name = "macro"
    title = "Macro"
    directory = "macro"
    label_keys = ("group",)
    official = Average("macro_group", ("group",))
    tables = (TableSpec("By group", rows="group"), TableSpec("Group by kind", rows="group", cols="kind"))

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


class Micro(Macro):
    name = "micro"
    title = "Micro"
    official = Average("micro")


def _result(
    sid: str,
    group: str,
    points: list[tuple[float, float]],
    scores: list[float],
    *,
    k: int,
    image_error: str | None = None,
    format_error: bool = False,
) -> SampleResult:
    sample = Sample("b", sid, f"/img/{sid}.png", (100, 100), "click", BOX, {"group": group, "kind": "text"})
    cands = tuple(Candidate(p, s) for p, s in zip(points, scores, strict=True))
    pred = Prediction("b", sid, cands, image_error=image_error, format_error=format_error)
    return score_sample(sample, pred, k=k)


# x: one sample, hits; y: three, the pick hits once, a second answer hits once more
MACRO = [
    _result("x0", "x", [HIT, MISS], [0.9, 0.1], k=2),
    _result("y0", "y", [MISS, HIT], [0.2, 0.8], k=2),
    _result("y1", "y", [HIT, MISS], [0.3, 0.7], k=2),
    _result("y2", "y", [MISS, MISS], [0.5, 0.4], k=2),
]
