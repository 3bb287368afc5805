"""Writers of Hub-copy files for tests: HF datasets parquet (an ``Image`` struct column) and VLMEvalKit TSVs.

They write what the Hub copies hold, from records the test gives (real records with placeholder
images, or tiny synthetic ones); the loaders under test read them back. A tiny ScreenSpot-v2 (four
records) is here too, in its release layout (:func:`tiny_release`) and as the HongxinLi parquet copy
(:func:`tiny_parquet`).
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image


def png_bytes(size: tuple[int, int], mode: str = "1") -> bytes:
    """A small PNG of ``size`` (1-bit black by default: a few hundred bytes even for a big screen)."""
    buf = io.BytesIO()
    Image.new(mode, size).save(buf, format="PNG")
    return buf.getvalue()


class PngCache:
    """One encoded PNG per size."""

    def __init__(self) -> None:
        self.by_size: dict[tuple[int, int], bytes] = {}

    def __call__(self, size: Sequence[float]) -> bytes:
        key = (int(size[0]), int(size[1]))
        if key not in self.by_size:
            self.by_size[key] = png_bytes(key)
        return self.by_size[key]


def write_hf_parquet(
    path: Path,
    rows: Sequence[Mapping[str, Any]],
    *,
    image_column: str = "image",
    row_group_size: int = 64,
    struct: bool = True,
) -> Path:
    """A parquet file as ``datasets.push_to_hub`` writes it: ``image`` an ``{bytes, path}`` struct.

    Args:
        path: Where to write.
        rows: The rows; ``rows[i][image_column]`` is ``(bytes, name)``.
        image_column: The image column.
        row_group_size: Rows per row group.
        struct: False writes the image as a plain binary column.

    Returns:
        The path.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, list[Any]] = {k: [r[k] for r in rows] for k in rows[0] if k != image_column}
    images = [r[image_column] for r in rows]
    arrays = {k: pa.array(v) for k, v in columns.items()}
    if struct:
        arrays[image_column] = pa.array(
            [{"bytes": b, "path": name} for b, name in images],
            type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]),
        )
    else:
        arrays[image_column] = pa.array([b for b, _ in images], type=pa.binary())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(arrays), path, row_group_size=row_group_size)
    return path


def tsv_cell(value: Any) -> str:
    """A value as VLMEvalKit's TSV writes it (pandas ``to_csv(sep='\\t')``: lists as their repr)."""
    text = str(value)
    if any(c in text for c in '\t\n"'):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_vlmevalkit_tsv(
    path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, share_images: bool = True
) -> Path:
    """A VLMEvalKit TSV: a header, an ``index`` column, base64 images in ``image``.

    Args:
        path: Where to write.
        rows: The rows; ``row["image"]`` is the encoded image bytes.
        columns: The columns after ``index`` and ``image``, in order.
        share_images: A row whose image equals an earlier row's holds that row's ``index`` instead
            (VLMEvalKit's "for saving space").

    Returns:
        The path.
    """
    first: dict[bytes, str] = {}
    lines = ["\t".join(["index", "image", *columns])]
    for i, row in enumerate(rows):
        index = str(row.get("index", i))
        data: bytes = row["image"]
        if share_images and data in first:
            image = first[data]
        else:
            image = base64.b64encode(data).decode("ascii")
            first.setdefault(data, index)
        lines.append("\t".join([index, image, *(tsv_cell(row[c]) for c in columns)]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------
# A tiny ScreenSpot-v2: its release layout and copies of it


RECORDS = {
    "mobile": [
        {
            "img_filename": "mobile_m.png",
            "bbox": [10, 20, 30, 40],
            "instruction": "tap a",
            "data_type": "text",
            "data_source": "ios",
        },
        {
            "img_filename": "mobile_m.png",
            "bbox": [0, 0, 5, 5],
            "instruction": "tap b",
            "data_type": "icon",
            "data_source": "android",
        },
    ],
    "desktop": [
        {
            "img_filename": "pc_d.png",
            "bbox": [100, 50, 20, 10],
            "instruction": "click c",
            "data_type": "icon",
            "data_source": "macos",
        },
    ],
    "web": [
        {
            "img_filename": "web_w.png",
            "bbox": [7, 9, 11, 13],
            "instruction": "open d",
            "data_type": "text",
            "data_source": "shop",
        },
    ],
}
SIZES = {"mobile_m.png": (117, 253), "pc_d.png": (320, 200), "web_w.png": (128, 96)}


def screenspot_hf_row(rec: Mapping[str, Any], size: tuple[int, int], png: PngCache) -> dict[str, Any]:
    """A ScreenSpot release record as a row of the HongxinLi / rootsautomation parquet copies.

    Their schema: ``file_name`` for ``img_filename``, the xywh pixel box as [0, 1] corners, and the
    screenshot embedded (a placeholder of ``size``).
    """
    w, h = size
    x, y, bw, bh = rec["bbox"]
    return {
        "file_name": rec["img_filename"],
        "bbox": [x / w, y / h, (x + bw) / w, (y + bh) / h],
        "instruction": rec["instruction"],
        "data_type": rec["data_type"],
        "data_source": rec["data_source"],
        "image": (png(size), rec["img_filename"]),
    }


def tiny_release(root: Path) -> Path:
    """:data:`RECORDS` in ScreenSpot-v2's release layout under ``root`` (black screenshots, :data:`SIZES`)."""
    for split, recs in RECORDS.items():
        root.mkdir(parents=True, exist_ok=True)
        (root / f"screenspot_{split}_v2.json").write_text(json.dumps(recs), encoding="utf-8")
    for name, size in SIZES.items():
        (root / "screenspotv2_image").mkdir(exist_ok=True)
        Image.new("1", size).save(root / "screenspotv2_image" / name)
    return root


def tiny_parquet(root: Path, mutate: dict[str, Any] | None = None) -> Path:
    """:data:`RECORDS` as the HongxinLi/ScreenSpot_v2 parquet copy (two shards under ``root/data``).

    ``mutate`` updates the row of ``mobile_1`` (box [0, 0, 5, 5] pixels on 117 x 253).
    """
    png = PngCache()
    rows = [
        screenspot_hf_row(rec, SIZES[rec["img_filename"]], png)
        for split in ("mobile", "desktop", "web")
        for rec in RECORDS[split]
    ]
    rows[1].update(mutate or {})
    write_hf_parquet(root / "data" / "test-00000-of-00002.parquet", rows[:2])
    write_hf_parquet(root / "data" / "test-00001-of-00002.parquet", rows[2:])
    return root


def screenspot_pro_release(
    root: Path, records: Sequence[tuple[str, list[int]]], size: tuple[int, int], mode: str = "1"
) -> Path:
    """A one-screenshot ScreenSpot-Pro release (``annotations/app_windows.json``, ``images/shot.png``).

    Each ``(id, bbox)`` is a record on the one screenshot of ``size`` (drawn in PIL ``mode``), its
    instruction ``click <id>`` (Chinese ``点击 <id>``), of the Office group, an icon, on Windows.
    """
    (root / "annotations").mkdir(parents=True)
    (root / "images").mkdir()
    Image.new(mode, size).save(root / "images" / "shot.png")
    rows = [
        {
            "id": sid,
            "img_filename": "shot.png",
            "img_size": list(size),
            "bbox": bbox,
            "instruction": f"click {sid}",
            "instruction_cn": f"点击 {sid}",
            "group": "Office",
            "ui_type": "icon",
            "platform": "windows",
            "application": "app",
        }
        for sid, bbox in records
    ]
    (root / "annotations" / "app_windows.json").write_text(json.dumps(rows), encoding="utf-8")
    return root
