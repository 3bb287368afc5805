"""GroundingEvalCallback's ``critic_pool``: the critic judged alone on the same frozen pools every epoch.

A real ``Trainer.fit`` with a module whose critic answers the first candidate shown in its first epoch
and the gold (the candidate inside the target) after it, over two validation epochs, each pool asked in
its four cyclic orders: the logged curve is the one a hand count gives (accuracy 25 -> 100,
first-position rate 100 -> 25, consistency 0 -> 100), on the same candidates both times (the critic saw
the same points), and the proposer's own figures are logged beside it as before.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from gge.callbacks import GroundingEvalCallback
from lightning_fit import NoVal, _trainer
from PIL import Image

from gge.models.base import Judgement, Proposal
from gge.types import Candidate, Prediction, Sample


class Learns(NoVal):
    """A proposer that clicks each target's centre, and a critic that learns: first shown, then the gold."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, str, tuple[tuple[float, float], ...]]] = []  # epoch, id, candidates

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        out = []
        for s in samples:
            box = s.region.pixel_box()
            point = None if box is None else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            out.append(Prediction(s.benchmark, s.id, (Candidate(point, 1.0), Candidate((1.0, 1.0), 0.0))))
        return out

    def rank(
        self, samples: Sequence[Sample], images: Sequence[Image.Image], proposals: Sequence[Proposal]
    ) -> list[Judgement]:
        out = []
        for s, p in zip(samples, proposals, strict=True):
            points = tuple(c.point for c in p.candidates if c.point is not None)
            self.seen.append((self.current_epoch, s.id, points))
            if self.current_epoch == 0:
                scores = [float(len(points) - i) for i in range(len(points))]  # the first shown
            else:
                scores = [1.0 if s.region.contains(*pt) else 0.0 for pt in points]  # the gold
            out.append(Judgement(tuple(scores)))
        return out


def _logged(folder: Path) -> dict[str, list[float]]:
    (metrics,) = folder.rglob("metrics.csv")
    rows = list(csv.DictReader(metrics.open()))
    out: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith("grounding/") and value not in ("", None):
                out.setdefault(key, []).append(float(value))
    return out


def test_the_critic_curve_on_the_same_pools_over_two_epochs(demo_suite: Path, tmp_path: Path) -> None:
    cb = GroundingEvalCallback(
        benchmarks=["screenspot_pro"],
        data_root=demo_suite,
        max_samples_per_benchmark=6,
        critic_pool={"n": 4, "seed": 2},
    )
    module = Learns()
    _trainer(tmp_path, [cb], max_epochs=2, num_sanity_val_steps=0, limit_val_batches=0).fit(module)
    logged = _logged(tmp_path)
    pool = "grounding/screenspot_pro/critic_pool/"
    assert logged[pool + "accuracy"] == [25.0, 100.0]
    assert logged[pool + "first_position_rate"] == [100.0, 25.0]
    assert logged[pool + "consistency"] == [0.0, 100.0]
    assert logged[pool + "chance"] == [25.0, 25.0]
    assert logged["grounding/screenspot_pro/top1"] == [100.0, 100.0]  # the proposer's own, as before
    # the critic saw the same candidates in both epochs: 6 pools x 4 orders, each the same points
    by_epoch: dict[int, dict[str, tuple[tuple[float, float], ...]]] = {}
    for epoch, sid, points in module.seen:
        if "~" in sid:
            by_epoch.setdefault(epoch, {})[sid] = points
    assert len(by_epoch[0]) == 24 and by_epoch[0] == by_epoch[1]
