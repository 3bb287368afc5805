"""The demo suite's ``records`` folder: a user's own records file, every target kind and declaration.

:func:`write_records_demo` writes ``<root>/records/records.jsonl`` and three small screenshots under
``<root>/records/images/`` (flat PIL drawings: a few coloured "buttons" on a plain background, no text
and no randomness, so the bytes are the same on every machine). Each row declares its own
``box_format`` and ``units`` (so the default options read it), and the rows cover every way a target
can be written: ``xyxy`` and ``xywh`` boxes in ``pixels``, ``norm_1`` and ``norm_1000``, a polygon
(flat and as pairs, pixels and normalised), and ``absent: true``; ``app`` and ``platform`` are label
columns (``bench.records.tables=[app,platform]`` breaks the results down by them).

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> write_records_demo(root)
    >>> sorted(p.name for p in (root / "records").iterdir())
    ['images', 'records.jsonl']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

PixelBox = tuple[int, int, int, int]

SCREENS: dict[str, tuple[tuple[int, int], str, str, tuple[int, int, int], dict[str, PixelBox]]] = {
    # file: ((width, height), app, platform, background, {element: xyxy pixel box})
    "editor.png": (
        (320, 200),
        "editor",
        "desktop",
        (236, 238, 242),
        {"save": (8, 8, 48, 28), "run": (56, 8, 96, 28), "panel": (200, 40, 312, 190)},
    ),
    "phone.png": (
        (200, 400),
        "chat",
        "mobile",
        (250, 250, 250),
        {"send": (150, 350, 190, 390), "back": (10, 10, 50, 40), "avatar": (80, 100, 120, 140)},
    ),
    "shop.png": (
        (400, 250),
        "shop",
        "web",
        (255, 255, 255),
        {"cart": (340, 10, 390, 40), "buy": (150, 180, 250, 220), "search": (20, 10, 300, 40)},
    ),
}
"""The three screenshots: size, labels, background and the buttons drawn on them."""

COLOURS = ((52, 120, 246), (40, 167, 69), (220, 53, 69))


def _row(image: str, instruction: str, **target: Any) -> dict[str, Any]:
    """One record: the image, the instruction, its screen's labels, then the target columns."""
    _, app, platform, _, _ = SCREENS[image]
    return {
        "image": f"images/{image}",
        "instruction": instruction,
        **target,
        "app": app,
        "platform": platform,
    }


def _rows() -> list[dict[str, Any]]:
    """The demo records: each target kind, format and unit at least once.

    The normalised targets are the buttons of :data:`SCREENS` divided by the screen size.
    """
    e, s = SCREENS["editor.png"][4], SCREENS["shop.png"][4]
    x1, y1, x2, y2 = e["run"]
    rows = [
        _row("editor.png", "save the file", bbox=list(e["save"]), box_format="xyxy", units="pixels"),
        _row(
            "editor.png",
            "run the program",
            bbox=[x1, y1, x2 - x1, y2 - y1],
            box_format="xywh",
            units="pixels",
        ),
        _row(
            "editor.png",
            "open the side panel",
            bbox=[200 / 320, 40 / 200, 312 / 320, 190 / 200],
            box_format="xyxy",
            units="norm_1",
        ),
        _row("editor.png", "close the terminal", absent=True),
        _row(
            "phone.png", "send the message", bbox=[750, 875, 950, 975], box_format="xyxy", units="norm_1000"
        ),
        _row("phone.png", "go back", bbox=[50, 25, 200, 75], box_format="xywh", units="norm_1000"),
        _row(
            "phone.png",
            "open the contact's profile",
            polygon=[100, 100, 120, 120, 100, 140, 80, 120],
            units="pixels",
        ),
        _row("phone.png", "start a video call", absent=True),
        _row("shop.png", "open the cart", bbox=list(s["cart"]), box_format="xyxy", units="pixels"),
        _row(
            "shop.png",
            "buy now",
            polygon=[[0.375, 0.72], [0.625, 0.72], [0.625, 0.88], [0.375, 0.88]],
            units="norm_1",
        ),
        _row("shop.png", "search the shop", bbox=[20, 10, 280, 30], box_format="xywh", units="pixels"),
        _row("shop.png", "sign in with a passkey", absent=True),
    ]
    for i, row in enumerate(rows):
        row["id"] = f"demo_{i}"
    return rows


def write_records_demo(root: Path) -> None:
    """Write ``<root>/records/records.jsonl`` and its screenshots under ``<root>/records/images/``.

    The output is the same bytes on every call (no randomness, no text rendering).

    Args:
        root: The demo suite's folder (``records/`` is created in it; existing files are overwritten).
    """
    folder = Path(root) / "records"
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    for name, (size, _, _, background, elements) in SCREENS.items():
        im = Image.new("RGB", size, background)
        draw = ImageDraw.Draw(im)
        for i, box in enumerate(elements.values()):
            draw.rectangle(box, fill=COLOURS[i % len(COLOURS)], outline=(30, 30, 30))
        im.save(images / name, format="PNG")
    lines = "".join(json.dumps(row, sort_keys=False) + "\n" for row in _rows())
    (folder / "records.jsonl").write_text(lines, encoding="utf-8")
