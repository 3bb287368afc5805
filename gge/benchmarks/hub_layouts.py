"""How each Hub-copy layout's rows map onto exactly the Samples the release loader gives.

One :class:`CopyLayout` per layout, keyed ``<benchmark>/<layout>`` in :data:`LAYOUTS` (the known-copies
table, :mod:`gge.benchmarks.hub_copies`, points at them): the columns it reads, the image column, where
the image size comes from, the row mapping (ids, labels, region type and space, instruction, as the
release loader builds them) and the release variant it is checked against.

Example:
    >>> from_normalized([0.1, 0.5, 0.2, 1.0], (1170, 2532))
    [117.0, 1266.0, 234.0, 2532.0]
"""

from __future__ import annotations

import ast
import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gge.benchmarks.base import BenchmarkOptions, normalized_box, xywh_box
from gge.benchmarks.hub_files import CopyRow
from gge.benchmarks.osworld_g import polygon_from_flat, refusals_option
from gge.errors import GgeError
from gge.types import Absent, Box, LabelValue, Region


@dataclass(frozen=True)
class Mapped:
    """One copy row as the release loader would give it (without the image reference).

    Attributes:
        id: The release id.
        instruction: The instruction.
        region: The target, as the release loader builds it.
        labels: The release labels.
        size: The image (width, height).
    """

    id: str
    instruction: str
    region: Region
    labels: dict[str, LabelValue]
    size: tuple[int, int]


RowMapper = Callable[[Sequence[CopyRow], BenchmarkOptions], list[Mapped]]
"""Maps every row of a copy (all its files, in order) onto the release's fields."""


@dataclass(frozen=True)
class CopyLayout:
    """How one copy layout's columns map onto the release's Samples.

    Attributes:
        kind: ``parquet`` or ``tsv``.
        columns: The plain columns it reads (all must be in the file: that identifies the layout).
        image_column: The embedded image column.
        header_sizes: Whether the image size comes from each image's header (False: a size column).
        rows: The mapping.
        variant: The release loader's ``variant`` summary for the options and the number of samples
            read (what the copy is checked against).
        file_order: Sort key of the copy's files (default: by name), so the samples come in the
            release's order.
    """

    kind: str
    columns: tuple[str, ...]
    image_column: str
    header_sizes: bool
    rows: RowMapper
    variant: Callable[[BenchmarkOptions, int], dict[str, Any]] = field(default=lambda options, n: {})
    file_order: Callable[[Path], Any] = field(default=lambda path: path.name)


# ----------------------------------------------------------------------------------------------
# Cell readers (one-line errors naming the file, row and column)


def cell(row: CopyRow, column: str) -> Any:
    """A mandatory cell of a row.

    Args:
        row: The row.
        column: Its column.

    Returns:
        The value.
    """
    value = row.values.get(column)
    if value is None:
        raise GgeError(f"{row.file}: row {row.row}: no value in column '{column}'")
    return value


def text(row: CopyRow, column: str) -> str:
    """A mandatory string cell (see :func:`cell`)."""
    value = cell(row, column)
    if not isinstance(value, str):
        raise GgeError(f"{row.file}: row {row.row}: column '{column}' must be a string, got {value!r}")
    return value


def numbers(row: CopyRow, column: str, n: int) -> list[float]:
    """A cell of ``n`` numbers: a list (parquet) or its text ``"[x, y, ...]"`` (TSV).

    Args:
        row: The row.
        column: Its column.
        n: How many numbers.

    Returns:
        The numbers.
    """
    value = cell(row, column)
    if isinstance(value, str):
        with contextlib.suppress(ValueError, SyntaxError):
            value = ast.literal_eval(value.strip())
    ok = isinstance(value, (list, tuple)) and len(value) == n
    ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    if not ok or not all(math.isfinite(v) for v in value):
        raise GgeError(f"{row.file}: row {row.row}: column '{column}' must be {n} numbers, got {value!r}")
    return [float(v) for v in value]


def known_size(row: CopyRow) -> tuple[int, int]:
    """The row's image size from the embedded image's header.

    An unreadable image gives ``UNKNOWN_SIZE``: the sample is kept and listed as an unreadable
    screenshot (a counted miss), as the release loaders keep a missing file.
    """
    return row.size


PIXEL_DECIMALS = 3
"""Pixel coordinates recovered from a copy's [0, 1] boxes are rounded to this many decimals, so
integer release boxes come back as the integers they were (the product leaves a 1e-13 residue)."""


def from_normalized(values: Sequence[float], size: tuple[int, int]) -> list[float]:
    """Pixel ``[x1, y1, x2, y2]`` from a box in [0, 1] units.

    Example:
        >>> from_normalized([0.1, 0.5, 0.2, 1.0], (1170, 2532))
        [117.0, 1266.0, 234.0, 2532.0]
    """
    w, h = size
    return [round(v * s, PIXEL_DECIMALS) for v, s in zip(values, (w, h, w, h), strict=True)]


# ----------------------------------------------------------------------------------------------
# ScreenSpot (v1, v2): ids <split>_<i>, labels split / data_type / data_source

SPLITS = ("mobile", "desktop", "web")
SPLIT_OF_PREFIX = {"mobile": "mobile", "pc": "desktop", "web": "web"}
"""The split of a ScreenSpot screenshot by its file name's prefix (``mobile_``, ``pc_``, ``web_``): every
release record's file name starts so, in both versions. ``data_source`` does not say the split:
ScreenSpot-v2 has 52 ``shop`` records in mobile and 28 in desktop (mapping sources to splits, as
GUI-Actor's ``domain_dict`` does for HongxinLi/ScreenSpot_v2, puts those 80 in web)."""

SPLIT_OF_TSV = {
    f"ScreenSpot{version}_{split.capitalize()}.tsv": split for version in ("", "_v2") for split in SPLITS
}
"""VLMEvalKit's ScreenSpot TSV file names and the split each holds."""

ScreenSpotTarget = Callable[[list[float], tuple[int, int], "list[float] | None"], Region]
"""The release region from a pixel ``[x1, y1, x2, y2]``, the size, and the copy's [0, 1] box if it had one."""


def pixel_target(xyxy: list[float], size: tuple[int, int], norm: list[float] | None) -> Region:
    """ScreenSpot-v2's release region: a pixel box."""
    return Box(xyxy[0], xyxy[1], xyxy[2], xyxy[3])


def normalized_target(xyxy: list[float], size: tuple[int, int], norm: list[float] | None) -> Region:
    """ScreenSpot v1's release region: the box divided by the image size.

    The copy's own [0, 1] box is used when it has one, so the floats are the ones the release's
    division gives.
    """
    if norm is not None:
        return Box(norm[0], norm[1], norm[2], norm[3], space="normalized", size=size)
    return normalized_box(xyxy[0], xyxy[1], xyxy[2], xyxy[3], size)


def _screenspot_mapped(
    row: CopyRow, split: str, counters: dict[str, int], instruction: str, region: Region
) -> Mapped:
    i = counters.get(split, 0)
    counters[split] = i + 1
    labels: dict[str, LabelValue] = {
        "split": split,
        "data_type": text(row, "data_type"),
        "data_source": text(row, "data_source"),
    }
    return Mapped(f"{split}_{i}", instruction, region, labels, known_size(row))


def split_of_file_name(row: CopyRow) -> str:
    """The split of a row from its ``file_name`` prefix (see :data:`SPLIT_OF_PREFIX`)."""
    name = text(row, "file_name")
    prefix = name.split("_", 1)[0]
    if prefix not in SPLIT_OF_PREFIX:
        raise GgeError(
            f"{row.file}: row {row.row}: file_name {name!r} starts with none of "
            f"{', '.join(p + '_' for p in SPLIT_OF_PREFIX)} (the split is read from it)"
        )
    return SPLIT_OF_PREFIX[prefix]


def screenspot_hf_rows(target: ScreenSpotTarget) -> RowMapper:
    """The rootsautomation/ScreenSpot schema, the split from the ``file_name`` prefix.

    Columns ``file_name``, ``bbox`` [x1, y1, x2, y2] in [0, 1], ``instruction``, ``data_type``,
    ``data_source``, ``image``.
    """

    def rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
        counters: dict[str, int] = {}
        out = []
        for row in copy:
            size = known_size(row)
            norm = numbers(row, "bbox", 4)
            region = target(from_normalized(norm, size), size, norm)
            out.append(
                _screenspot_mapped(row, split_of_file_name(row), counters, text(row, "instruction"), region)
            )
        return out

    return rows


def screenspot_tsv_rows(target: ScreenSpotTarget) -> RowMapper:
    """VLMEvalKit's ScreenSpot TSVs: the split from the file name, ``i`` the row's position in its file.

    Columns ``question``, ``bbox`` "[x, y, w, h]" in pixels, ``data_type``, ``data_source``, ``image``.
    """

    def rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
        counters: dict[str, int] = {}
        out = []
        for row in copy:
            split = SPLIT_OF_TSV.get(row.file.name)
            if split is None:
                raise GgeError(f"{row.file}: not a ScreenSpot TSV name ({', '.join(SPLIT_OF_TSV)})")
            x, y, w, h = numbers(row, "bbox", 4)
            region = target([x, y, x + w, y + h], known_size(row), None)
            out.append(_screenspot_mapped(row, split, counters, text(row, "question"), region))
        return out

    return rows


def tsv_split_order(path: Path) -> tuple[int, str]:
    """VLMEvalKit's ScreenSpot TSVs in the release's split order (mobile, desktop, web)."""
    split = SPLIT_OF_TSV.get(path.name)
    return (SPLITS.index(split) if split else len(SPLITS), path.name)


SCREENSPOT_HF = ("file_name", "bbox", "instruction", "data_type", "data_source")
SCREENSPOT_TSV = ("index", "question", "bbox", "data_type", "data_source")


def _v1_variant(options: BenchmarkOptions, n: int) -> dict[str, Any]:
    return {"version": "v1"}


# ----------------------------------------------------------------------------------------------
# ScreenSpot-Pro: ids and labels are the record's; the box is divided by img_size

PRO_LABELS = ("group", "ui_type", "platform", "application")


def _pro_language(options: BenchmarkOptions) -> str:
    language = str(getattr(options, "language", "en"))
    if language != "en":
        raise GgeError(
            f"screenspot_pro: bench.screenspot_pro.language={language}: the Hub copies hold English "
            "instructions only (read the release layout for instruction_cn)"
        )
    return language


def pro_lmms_rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
    """lmms-lab/ScreenSpot-Pro: the release record's columns (``id``, pixel xyxy ``bbox``, ``img_size``)."""
    _pro_language(options)
    out = []
    for row in copy:
        w, h = numbers(row, "img_size", 2)
        if w <= 0 or h <= 0:
            raise GgeError(f"{row.file}: row {row.row}: column 'img_size' must be positive, got {[w, h]}")
        size = (int(w), int(h))
        labels: dict[str, LabelValue] = {k: text(row, k) for k in PRO_LABELS}
        x1, y1, x2, y2 = numbers(row, "bbox", 4)
        region = normalized_box(x1, y1, x2, y2, size)
        out.append(Mapped(text(row, "id"), text(row, "instruction"), region, labels, size))
    return out


def _pro_variant(options: BenchmarkOptions, n: int) -> dict[str, Any]:
    return {"language": _pro_language(options)}


# ----------------------------------------------------------------------------------------------
# OSWorld-G: ids are the record's; box_type says how box_coordinates reads


def osworld_region(row: CopyRow, options: BenchmarkOptions, name: str) -> Region:
    """The release region of an OSWorld-G copy row, by the release rule.

    A 4-number polygon (copies that reduce polygons to boxes hold them so) reads as corners, as
    lmms-eval reads it; the release check then reports it.
    """
    box_type = text(row, "box_type")
    values = cell(row, "box_coordinates")
    if box_type == "refusal":
        return Absent(abstention_hits=refusals_option(name, options) == "scored")
    if box_type == "bbox":
        return xywh_box(numbers(row, "box_coordinates", 4))
    if box_type == "polygon" and isinstance(values, (list, tuple)) and len(values) == 4:
        x1, y1, x2, y2 = numbers(row, "box_coordinates", 4)
        return Box(x1, y1, x2, y2)
    if box_type == "polygon":
        n = len(values) if isinstance(values, (list, tuple)) else 0
        if n < 6 or n % 2:
            raise GgeError(
                f"{row.file}: row {row.row}: a polygon needs an even count >= 6 of numbers, got {values!r}"
            )
        return polygon_from_flat(numbers(row, "box_coordinates", n))
    raise GgeError(f"{row.file}: row {row.row}: box_type must be bbox, polygon or refusal, got {box_type!r}")


def osworld_rows(name: str) -> RowMapper:
    """MMInstruction/OSWorld-G: the release's columns, no refusal rows (read it with ``refusals=excluded``).

    Columns ``id``, ``instruction``, ``image_size``, ``box_type``, ``box_coordinates``, ``image``.
    """

    def rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
        refusals = refusals_option(name, options)
        out = []
        for row in copy:
            region = osworld_region(row, options, name)
            if isinstance(region, Absent) and refusals == "excluded":
                raise GgeError(
                    f"{row.file}: row {row.row}: a refusal row in a copy read with refusals=excluded"
                )
            w, h = numbers(row, "image_size", 2)
            labels: dict[str, LabelValue] = {"box_type": region.kind}
            out.append(Mapped(text(row, "id"), text(row, "instruction"), region, labels, (int(w), int(h))))
        return out

    return rows


def osworld_variant(instructions: str, name: str) -> Callable[[BenchmarkOptions, int], dict[str, Any]]:
    """OSWorld-G's variant: the instruction file, the ``refusals`` choice and the samples read."""

    def variant(options: BenchmarkOptions, n: int) -> dict[str, Any]:
        return {"instructions": instructions, "refusals": refusals_option(name, options), "denominator": n}

    return variant


OSWORLD_COLUMNS = ("id", "instruction", "image_size", "box_type", "box_coordinates")


# ----------------------------------------------------------------------------------------------
# VenusBench-GD: VLMEvalKit's VenusBench.tsv (ids <subtask>_<i>, i the row's position in its subtask)

VENUS_UNKNOWN = "unknown"
VENUS_REFUSAL = [-1.0, -1.0, -1.0, -1.0]


def _venus_language(options: BenchmarkOptions) -> str:
    language = str(getattr(options, "language", "en"))
    if language != "en":
        raise GgeError(
            f"venusbench_gd: bench.venusbench_gd.language={language}: VLMEvalKit's TSV holds English "
            "instructions only (read the release layout for instruction_zh)"
        )
    return language


def venus_tsv_rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
    """VLMEvalKit's VenusBench.tsv, ids ``<subtask>_<i>`` as the release loader numbers them.

    Columns ``question``, ``bbox`` "[x1, y1, x2, y2]" in pixels (``[-1, -1, -1, -1]``: a refusal),
    ``category`` (the subtask), ``ui_type`` and ``application`` when there; no platform or group
    (labelled ``unknown``, as the release loader labels a record without them).
    """
    _venus_language(options)
    counters: dict[str, int] = {}
    out = []
    for row in copy:
        subtask = text(row, "category")
        i = counters.get(subtask, 0)
        counters[subtask] = i + 1
        values = numbers(row, "bbox", 4)
        size = known_size(row)
        x1, y1, x2, y2 = values
        region: Region = Absent() if values == VENUS_REFUSAL else normalized_box(x1, y1, x2, y2, size)
        labels: dict[str, LabelValue] = {"subtask": subtask}
        for key in ("ui_type", "platform", "application", "group"):
            value = row.values.get(key)
            labels[key] = value if isinstance(value, str) and value else VENUS_UNKNOWN
        out.append(Mapped(f"{subtask}_{i}", text(row, "question"), region, labels, size))
    return out


def _venus_variant(options: BenchmarkOptions, n: int) -> dict[str, Any]:
    return {"language": _venus_language(options)}


# ----------------------------------------------------------------------------------------------
# The layouts

LAYOUTS: dict[str, CopyLayout] = {
    "screenspot_v2/hf": CopyLayout("parquet", SCREENSPOT_HF, "image", True, screenspot_hf_rows(pixel_target)),
    "screenspot_v2/vlmevalkit": CopyLayout(
        "tsv", SCREENSPOT_TSV, "image", True, screenspot_tsv_rows(pixel_target), file_order=tsv_split_order
    ),
    "screenspot_v1/hf": CopyLayout(
        "parquet", SCREENSPOT_HF, "image", True, screenspot_hf_rows(normalized_target), _v1_variant
    ),
    "screenspot_v1/vlmevalkit": CopyLayout(
        "tsv",
        SCREENSPOT_TSV,
        "image",
        True,
        screenspot_tsv_rows(normalized_target),
        _v1_variant,
        tsv_split_order,
    ),
    "screenspot_pro/lmms": CopyLayout(
        "parquet",
        ("id", "instruction", "bbox", "img_size", *PRO_LABELS),
        "image",
        False,
        pro_lmms_rows,
        _pro_variant,
    ),
    "venusbench_gd/vlmevalkit": CopyLayout(
        "tsv", ("index", "question", "bbox", "category"), "image", True, venus_tsv_rows, _venus_variant
    ),
    **{
        f"{name}/mminstruction": CopyLayout(
            "parquet",
            OSWORLD_COLUMNS,
            "image",
            False,
            osworld_rows(name),
            osworld_variant(instructions, name),
        )
        for name, instructions in (("osworld_g", "original"), ("osworld_g_refined", "refined"))
    },
}
"""One mapping per copy layout, keyed ``<benchmark>/<layout>``."""
