"""The report's gallery and the W&B tables draw with the one overlay drawing, gge.drawing (issue
"Nothing silently wrong, round three", item 8; its floor and the package circle it closed are checked
by tests/integration/packaging/test_layout.py)."""

from __future__ import annotations

import gge.drawing
import gge.loggers.wandb
import gge.report.gallery


def test_the_gallery_and_the_wandb_tables_draw_with_the_one_drawing() -> None:
    assert gge.report.gallery.draw_overlay is gge.drawing.draw_overlay
    assert gge.report.gallery.pick_rank is gge.loggers.wandb.pick_rank is gge.drawing.pick_rank
    assert gge.loggers.wandb.target_thumbnail is gge.drawing.target_thumbnail
