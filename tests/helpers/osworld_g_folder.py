"""A tiny OSWorld-G folder and one fixed answer per sample: the three denominators by hand.

3 bbox, 2 polygon and 3 refusal records (FORMATS.md section 3) over one placeholder screenshot, and a
predictions file answering each one (see ``tests/unit/benchmarks/test_osworld_g_refusals.py`` for the
table of outcomes): 4 / 8 hits with refusals scored, 2 / 8 with refusals as misses, 2 / 5 without them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from PIL import Image

from gge.run.settings import parse_args
from gge.run.standalone import run

SIZE = (200, 100)

RECORDS: list[tuple[str, str, list[float]]] = [
    ("AAAAAAAAAA-0", "bbox", [20, 10, 40, 30]),  # [20, 10, 60, 40]
    ("AAAAAAAAAA-1", "bbox", [20, 10, 40, 30]),
    ("AAAAAAAAAA-2", "bbox", [20, 10, 40, 30]),
    ("BBBBBBBBBB-0", "polygon", [100, 10, 150, 10, 150, 60, 100, 60]),
    ("BBBBBBBBBB-1", "polygon", [100, 10, 150, 10, 150, 60, 100, 60]),
    ("CCCCCCCCCC-0", "refusal", [0, 0, 0, 0]),
    ("CCCCCCCCCC-1", "refusal", [0, 0, 0, 0]),
    ("CCCCCCCCCC-2", "refusal", [0, 0, 0, 0]),
]
ANSWERS: dict[str, list[float] | None] = {
    "AAAAAAAAAA-0": [30, 20],
    "AAAAAAAAAA-1": [180, 90],
    "AAAAAAAAAA-2": None,
    "BBBBBBBBBB-0": [120, 30],
    "BBBBBBBBBB-1": [30, 20],  # inside the bbox samples' box, not in this polygon
    "CCCCCCCCCC-0": None,
    "CCCCCCCCCC-1": [-1, -1],  # both coordinates negative: an abstention (FORMATS.md section 3)
    "CCCCCCCCCC-2": [30, 20],
}
EXPECTED = {
    # refusals: (samples, hits, Top-1 %, abstentions, refusal row of the box-type table or None)
    "scored": (8, 4, 100 * 4 / 8, 3, (3, 100 * 2 / 3)),
    "miss": (8, 2, 100 * 2 / 8, 3, (3, 0.0)),
    "excluded": (5, 2, 100 * 2 / 5, 1, None),
}


def write_folder(root: Path) -> Path:
    """The OSWorld-G layout of :data:`RECORDS` under ``root/osworld_g`` (one placeholder screenshot)."""
    folder = root / "osworld_g"
    (folder / "images").mkdir(parents=True)
    Image.new("RGB", SIZE).save(folder / "images" / "shot.png")
    records = [
        {
            "id": sid,
            "image_path": "shot.png",
            "image_size": list(SIZE),
            "instruction": f"click {sid}",
            "box_type": kind,
            "box_coordinates": coords,
            "GUI_types": ["Button"],
        }
        for sid, kind, coords in RECORDS
    ]
    for name in ("OSWorld-G.json", "OSWorld-G_refined.json"):
        (folder / name).write_text(json.dumps(records), encoding="utf-8")
    return folder


def write_predictions(path: Path, benchmark: str = "osworld_g") -> Path:
    lines = [{"benchmark": benchmark, "id": sid, "candidates": [point]} for sid, point in ANSWERS.items()]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def replay(root: Path, predictions: Path, out: Path, *extra: str) -> dict[str, Any]:
    """``python eval.py`` replaying ``predictions`` over OSWorld-G under ``root`` into ``out``."""
    args = [
        f"data_root={root}",
        f"model.predictions={predictions}",
        f"output_dir={out}",
        "benchmarks=[osworld_g]",
        *extra,
    ]
    return run(parse_args(args), out=io.StringIO())
