"""The callback never silently does nothing and never kills training (issue 13, point 2)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from gge.callbacks import GroundingEvalCallback
from lightning_fit import GARBAGE, NoVal, _fit
from PIL import Image
from pytorch_lightning.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset

from gge.drawing import HIT_COLOUR, MISS_COLOUR, draw_overlay, thumb_point
from gge.loggers.wandb import box_layers
from gge.scoring.scoring import score_sample
from gge.types import FAR, Box, Candidate, Prediction, Sample


class WithVal(NoVal):
    def validation_step(self, batch: Any, batch_idx: int) -> None:
        self.log("val_loss", self.w.sum())

    def val_dataloader(self) -> DataLoader[Any]:
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=2)


def _cb(demo: Path, **kw: Any) -> GroundingEvalCallback:
    return GroundingEvalCallback(
        benchmarks=["screenspot_v2", "osworld_g"], data_root=demo, max_samples_per_benchmark=6, **kw
    )


@pytest.mark.parametrize(
    ("module", "extra"),
    [(NoVal, {}), (WithVal, {"limit_val_batches": 0})],
    ids=["no-validation-step", "limit-val-batches-0"],
)
def test_no_validation_loop_evaluates_on_training_epochs_and_warns_once(
    demo_suite: Path, tmp_path: Path, module: type[NoVal], extra: dict[str, Any]
) -> None:
    cb = _cb(demo_suite, every_n_epochs=2)
    with pytest.warns(UserWarning, match="no validation loop") as caught:
        _fit(module(), tmp_path, cb, **extra)
    assert sum("no validation loop" in str(w.message) for w in caught) == 1
    assert [h["epoch"] for h in cb.history] == [1, 3]
    # the centre of every box target hits: the numbers are real, not placeholders
    assert cb.history[0]["screenspot_v2"]["top1"] == 100.0


def test_with_a_validation_loop_it_evaluates_on_validation_epochs_only(
    demo_suite: Path, tmp_path: Path
) -> None:
    cb = _cb(demo_suite, every_n_epochs=2)
    _fit(WithVal(), tmp_path, cb, num_sanity_val_steps=0)
    assert [h["epoch"] for h in cb.history] == [1, 3]
    assert not cb._on_train_epochs


def test_garbage_coordinates_do_not_stop_training_and_are_drawn_at_the_edge(
    demo_suite: Path, tmp_path: Path
) -> None:
    cb = _cb(demo_suite, every_n_epochs=1, table_samples=3)
    trainer = _fit(NoVal(garbage=True), tmp_path, cb, max_epochs=2)
    assert trainer.current_epoch == 2 and len(cb.history) == 2
    # the critic picks a garbage point: a miss, never an overflow; the centre is still in Oracle@K
    assert cb.history[-1]["screenspot_v2"]["top1"] == 0.0
    assert cb.history[-1]["screenspot_v2"]["oracle@5"] == 100.0
    jpgs = sorted(Path(tmp_path).rglob("grounding/screenspot_v2/step_*/*.jpg"))
    assert len(jpgs) == 2 * 3


def test_a_failing_logger_is_reported_and_training_goes_on(demo_suite: Path, tmp_path: Path) -> None:
    class Broken:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def add_image(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("disk full")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    class TensorBoardLogger(CSVLogger):  # taken for a TensorBoard logger by its class name
        @property
        def experiment(self) -> Any:
            return Broken(super().experiment)

    cb = _cb(demo_suite, every_n_epochs=1)
    with pytest.warns(UserWarning, match=re.escape("(OSError: disk full)")):
        trainer = _fit(NoVal(), tmp_path, cb, max_epochs=2, logger=TensorBoardLogger(str(tmp_path)))
    assert trainer.current_epoch == 2 and len(cb.history) == 2
    assert trainer.callback_metrics["grounding/screenspot_v2/top1"] == 100.0


def test_candidates_far_off_the_screen_are_clamped_and_stay_misses() -> None:
    s = Sample("demo", "0", "/x.png", (400, 800), "click OK", Box(10, 10, 100, 50))
    cands = (*tuple(Candidate((g, 30.0), 1.0) for g in GARBAGE), Candidate((50, 30), 0.5))
    assert [c.point for c in cands[:4]] == [(FAR, 30.0), (FAR, 30.0), (-FAR, 30.0), (FAR, 30.0)]
    r = score_sample(s, Prediction("demo", "0", cands), k=5)
    assert r.hits == (False, False, False, False, True)
    assert all(p.point is None or all(math.isfinite(v) for v in p.point) for p in r.picks.values())
    nan = Candidate((float("nan"), 1.0))
    assert nan.point is None and not nan.parsed and not nan.abstains


def test_off_image_points_are_drawn_clipped_and_marked() -> None:
    s = Sample("demo", "0", "/x.png", (400, 800), "click OK", Box(10, 10, 100, 50))
    p = Prediction("demo", "0", (Candidate((1e19, 400), 0.9), Candidate((50, 30), 0.1)))
    r = score_sample(s, p, k=2)
    img = draw_overlay(Image.new("RGB", (400, 800), "gray"), s, r, "critic")
    assert img.getpixel((397, 400)) == MISS_COLOUR  # the off-image pick's disc, at the right edge
    assert img.getpixel((50, 30)) == HIT_COLOUR
    assert thumb_point((-5, 900), (1.0, 1.0), (400, 800)) == (0.0, 799.0, True)
    layers = box_layers(s, r, "critic", (1.0, 1.0), (400, 800))
    far = layers["candidates"]["box_data"][0]
    assert far["position"]["middle"] == [399.0, 400.0]
    assert far["box_caption"].endswith("(off image)")
    assert layers["pick"]["box_data"][0]["box_caption"] == "critic pick #1 (off image)"


def test_tags_of_clustered_candidates_do_not_overlap() -> None:
    from PIL import ImageDraw

    from gge.drawing import place_tags, tag_font

    img = Image.new("RGB", (400, 300))
    draw = ImageDraw.Draw(img)
    tags = [(200.0 + i, 150.0 + i, str(i + 1), MISS_COLOUR) for i in range(6)]  # within 6 px
    spots = place_tags(draw, tags, radius=5, font_size=12, size=img.size)
    boxes = [
        draw.textbbox(xy, text, font=tag_font(12)) for xy, (_, _, text, _) in zip(spots, tags, strict=True)
    ]
    for i, a in enumerate(boxes):
        assert a[1] >= 0 and a[3] <= 300
        for b in boxes[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    assert spots[0] == (200 + 5 + 2, 150 - 5 - 12)  # rank 1 keeps its spot beside its marker
