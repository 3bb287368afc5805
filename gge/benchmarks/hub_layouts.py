"""How each Hub-copy layout's rows map onto exactly the Samples the release loader gives.

One :class:`CopyLayout` per layout, keyed ``<benchmark>/<layout>`` in :data:`LAYOUTS` (the known-copies
table, :mod:`gge.benchmarks.hub_copies`, points at them): the columns it reads, the image column, the
copy's own size column if it has one (compared with each embedded image's header), the row mapping
(ids, labels, region type and space, instruction, as the release loader builds them, with the
loaders' own constants and rules) and the release variant it is checked against.

Example:
    >>> from_normalized([0.1, 0.5, 0.2, 1.0], (1170, 2532))
    [117.0, 1266.0, 234.0, 2532.0]
"""

from __future__ import annotations

import ast
import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gge.benchmarks.base import BenchmarkOptions, normalized_box
from gge.benchmarks.hub_files import CopyRow
from gge.benchmarks.osworld_g import osworld_region as release_osworld_region
from gge.benchmarks.osworld_g import refusals_option
from gge.benchmarks.screenspot_pro import INSTRUCTION_FIELDS as PRO_LANGUAGES
from gge.benchmarks.screenspot_pro import ScreenSpotPro
from gge.benchmarks.screenspot_v1 import ScreenSpotV1
from gge.benchmarks.screenspot_v2 import SPLITS, ScreenSpotV2
from gge.benchmarks.venusbench_gd import LANGUAGES as VENUS_LANGUAGES
from gge.benchmarks.venusbench_gd import OPTIONAL_LABELS as VENUS_LABELS
from gge.benchmarks.venusbench_gd import UNKNOWN as VENUS_UNKNOWN
from gge.benchmarks.venusbench_gd import venus_target
from gge.errors import GgeError, unknown_name
from gge.types import Absent, Box, LabelValue, Region


@dataclass(frozen=True)
class Mapped:
    """One copy row as the release loader would give it (without the image reference).

    Attributes:
        row: The copy row it comes from.
        id: The release id.
        instruction: The instruction.
        region: The target, as the release loader builds it.
        labels: The release labels.
        size: The image (width, height): always the embedded image's, from its header.
        declared_size: The copy's own size column's value (None: the layout has none), compared
            with ``size``; when given, it is the sample's size (as the release records it).
    """

    row: CopyRow
    id: str
    instruction: str
    region: Region
    labels: dict[str, LabelValue]
    size: tuple[int, int]
    declared_size: tuple[int, int] | None = None


RowMapper = Callable[[Sequence[CopyRow], BenchmarkOptions], list[Mapped]]
"""Maps every row of a copy (all its files, in order) onto the release's fields (leaving out the rows
the release loader leaves out with these options)."""


@dataclass(frozen=True)
class CopyLayout:
    """How one copy layout's columns map onto the release's Samples.

    Attributes:
        kind: ``parquet`` or ``tsv``.
        columns: The plain columns it reads (all must be in the file: that identifies the layout).
        image_column: The embedded image column.
        size_column: The copy's own image-size column, or None. The size always comes from each
            embedded image's header; a size column that says otherwise is a recorded difference.
        rows: The mapping.
        variant: The release loader's ``variant`` summary for the options and the number of samples
            read (what the copy is checked against).
        file_order: Sort key of the copy's files (default: by name), so the samples come in the
            release's order.
        numbered: Its ids are numbered by row position (``<prefix>_<i>``), as the release numbers its
            records: they are then matched to the release's records by content (screenshot name and
            instruction, the box to break ties), so a copy in another row order, or with a row
            dropped, still finds each record (:func:`gge.benchmarks.hub.match_rows`).
        name_column: The column holding the screenshot's file name (None, or absent from a row: the
            rows are matched by instruction and box alone).
        prefix_order: The release's order of the id prefixes (its splits), for a copy checked
            against the digests (prefixes not listed follow in the order the copy first has them).
    """

    kind: str
    columns: tuple[str, ...]
    image_column: str
    size_column: str | None
    rows: RowMapper
    variant: Callable[[BenchmarkOptions, int], dict[str, Any]] = field(default=lambda options, n: {})
    file_order: Callable[[Path], Any] = field(default=lambda path: path.name)
    numbered: bool = False
    name_column: str | None = None
    prefix_order: tuple[str, ...] = ()


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
        raise GgeError(f"{row.where}: no value in column '{column}'")
    return value


def text(row: CopyRow, column: str) -> str:
    """A mandatory string cell (see :func:`cell`)."""
    value = cell(row, column)
    if not isinstance(value, str):
        raise GgeError(f"{row.where}: column '{column}' must be a string, got {value!r}")
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
        raise GgeError(f"{row.where}: column '{column}' must be {n} numbers, got {value!r}")
    return [float(v) for v in value]


def known_size(row: CopyRow) -> tuple[int, int]:
    """The row's image size from the embedded image's header.

    An unreadable image gives ``UNKNOWN_SIZE``: the sample is kept and listed as an unreadable
    screenshot (a counted miss), as the release loaders keep a missing file.
    """
    return row.size


def size_cell(row: CopyRow, column: str) -> tuple[int, int]:
    """A copy's own ``[width, height]`` column (positive), as the release loader reads its size field."""
    w, h = numbers(row, column, 2)
    if w <= 0 or h <= 0:
        raise GgeError(f"{row.where}: column '{column}' must be positive, got {[w, h]}")
    return int(w), int(h)


PIXEL_DECIMALS = 3
"""Pixel coordinates recovered from a copy's [0, 1] boxes are rounded to this many decimals, so
integer release boxes come back as the integers they were (the product leaves a 1e-13 residue)."""

NORMALIZED_SLACK = 1e-6
"""How far past one pixel outside the image a [0, 1] coordinate may lie (float noise)."""


def from_normalized(values: Sequence[float], size: tuple[int, int]) -> list[float]:
    """Pixel ``[x1, y1, x2, y2]`` from a box in [0, 1] units.

    Example:
        >>> from_normalized([0.1, 0.5, 0.2, 1.0], (1170, 2532))
        [117.0, 1266.0, 234.0, 2532.0]
    """
    w, h = size
    return [round(v * s, PIXEL_DECIMALS) for v, s in zip(values, (w, h, w, h), strict=True)]


def normalized_cell(row: CopyRow, column: str, size: tuple[int, int]) -> list[float]:
    """A ``[x1, y1, x2, y2]`` cell in [0, 1] units, refused when a value lies outside them.

    One pixel of slack is allowed on each side (with :data:`NORMALIZED_SLACK` of float noise): the
    release boxes reach one pixel past the screen (ScreenSpot-v2's ``mobile_02e9bl.png`` box ends at
    x = 2361 of 2360), so a faithful copy's [0, 1] box does too. A copy holding pixel corners in
    this column is refused here rather than multiplied by the image size.

    Example:
        >>> from pathlib import Path
        >>> row = CopyRow(Path("c.parquet"), 3, {"bbox": [10, 20, 30, 40]}, "", (100, 50))
        >>> normalized_cell(row, "bbox", (100, 50))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: c.parquet: row 3: column 'bbox' must hold [0, 1] units, got 10.0 ...
    """
    values = numbers(row, column, 4)
    w, h = size
    for v, s in zip(values, (w, h, w, h), strict=True):
        pixel = 1 / s if s > 1 else 0.0
        if not -pixel - NORMALIZED_SLACK <= v <= 1 + pixel + NORMALIZED_SLACK:
            raise GgeError(
                f"{row.where}: column '{column}' must hold [0, 1] units, got {v!r} in {values} "
                f"(image {w}x{h}): pixel corners are not read as [0, 1] boxes"
            )
    return values


# ----------------------------------------------------------------------------------------------
# ScreenSpot (v1, v2): ids <split>_<i>, labels split / data_type / data_source (SPLITS: the loaders')

SPLIT_OF_PREFIX = {"mobile": "mobile", "pc": "desktop", "web": "web"}
"""The split of a ScreenSpot screenshot by its file name's prefix (``mobile_``, ``pc_``, ``web_``): every
release record's file name starts so, in both versions. ``data_source`` does not say the split:
ScreenSpot-v2 has 52 ``shop`` records in mobile and 28 in desktop (mapping sources to splits, as
GUI-Actor's ``domain_dict`` does for HongxinLi/ScreenSpot_v2, puts those 80 in web)."""

SPLIT_OF_TSV = {
    f"ScreenSpot{version}_{split.capitalize()}.tsv": split for version in ("", "_v2") for split in SPLITS
}
"""VLMEvalKit's ScreenSpot TSV file names and the split each holds."""

ScreenSpotTarget = Callable[[list[float], tuple[int, int]], Region]
"""The release region from a pixel ``[x1, y1, x2, y2]`` and the image size."""


def screenspot_target(bench: ScreenSpotV2) -> ScreenSpotTarget:
    """The release loader's own region rule, applied to a copy's pixel corners.

    :meth:`ScreenSpotV2.region` (SeeClick's normalised box for v1) of the xywh box the release records.
    """

    def target(xyxy: list[float], size: tuple[int, int]) -> Region:
        x1, y1, x2, y2 = xyxy
        return bench.region([x1, y1, x2 - x1, y2 - y1], size)

    return target


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
    return Mapped(row, f"{split}_{i}", instruction, region, labels, known_size(row))


def split_of_file_name(row: CopyRow) -> str:
    """The split of a row from its ``file_name`` prefix (see :data:`SPLIT_OF_PREFIX`)."""
    name = text(row, "file_name")
    prefix = name.split("_", 1)[0]
    if prefix not in SPLIT_OF_PREFIX:
        raise GgeError(
            f"{row.where}: file_name {name!r} starts with none of "
            f"{', '.join(p + '_' for p in SPLIT_OF_PREFIX)} (the split is read from it)"
        )
    return SPLIT_OF_PREFIX[prefix]


def screenspot_hf_rows(target: ScreenSpotTarget) -> RowMapper:
    """The rootsautomation/ScreenSpot schema, the split from the ``file_name`` prefix.

    Columns ``file_name``, ``bbox`` [x1, y1, x2, y2] in [0, 1] (checked: see :func:`normalized_cell`),
    ``instruction``, ``data_type``, ``data_source``, ``image``.
    """

    def rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
        counters: dict[str, int] = {}
        out = []
        for row in copy:
            size = known_size(row)
            norm = normalized_cell(row, "bbox", size)
            region = target(from_normalized(norm, size), size)
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
            region = target([x, y, x + w, y + h], known_size(row))
            out.append(_screenspot_mapped(row, split, counters, text(row, "question"), region))
        return out

    return rows


def tsv_split_order(path: Path) -> tuple[int, str]:
    """VLMEvalKit's ScreenSpot TSVs in the release's split order (mobile, desktop, web)."""
    split = SPLIT_OF_TSV.get(path.name)
    return (SPLITS.index(split) if split else len(SPLITS), path.name)


SCREENSPOT_HF = ("file_name", "bbox", "instruction", "data_type", "data_source")
SCREENSPOT_TSV = ("index", "question", "bbox", "data_type", "data_source")
SCREENSPOT_HF_NUMBERED: dict[str, Any] = {
    "numbered": True,
    "name_column": "file_name",
    "prefix_order": SPLITS,
}
SCREENSPOT_TSV_NUMBERED: dict[str, Any] = {
    "numbered": True,
    "name_column": "image_path",
    "prefix_order": SPLITS,
}


def _v1_variant(options: BenchmarkOptions, n: int) -> dict[str, Any]:
    return dict(ScreenSpotV1.variant)


def copy_language(
    name: str, languages: Mapping[str, str | tuple[str, ...]], options: BenchmarkOptions
) -> str:
    """The ``language`` option of a copy that holds English only, checked as the release loader checks it.

    Args:
        name: The benchmark.
        languages: The release loader's table of languages and the fields each reads (an unknown
            name is the release loader's error).
        options: The options.

    Returns:
        ``en``.

    Raises:
        GgeError: An unknown language (the release loader's message), or another known language
            (the copies do not hold it).

    Example:
        >>> copy_language("x", {"en": "instruction", "cn": "instruction_cn"}, BenchmarkOptions())
        'en'
    """
    language = str(getattr(options, "language", "en"))
    if language not in languages:
        raise unknown_name(f"{name} language", language, languages)
    if language != "en":
        fields = languages[language]
        names = " or ".join((fields,) if isinstance(fields, str) else fields)
        raise GgeError(
            f"{name}: bench.{name}.language={language}: the Hub copies hold English instructions only "
            f"(read the release layout for {names})"
        )
    return language


# ----------------------------------------------------------------------------------------------
# ScreenSpot-Pro: ids and labels are the record's; the box is divided by img_size

PRO_LABELS = ScreenSpotPro.label_keys
"""The release loader's labels (each a mandatory string field of the record)."""


def pro_lmms_rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
    """lmms-lab/ScreenSpot-Pro: the release record's columns (``id``, pixel xyxy ``bbox``, ``img_size``).

    The box is divided by ``img_size``, as the release loader divides it; the sample's size is
    ``img_size`` too, as the release records it (the embedded image's header is compared with it).
    """
    copy_language("screenspot_pro", PRO_LANGUAGES, options)
    out = []
    for row in copy:
        declared = size_cell(row, "img_size")
        labels: dict[str, LabelValue] = {k: text(row, k) for k in PRO_LABELS}
        x1, y1, x2, y2 = numbers(row, "bbox", 4)
        region = normalized_box(x1, y1, x2, y2, declared)
        out.append(
            Mapped(row, text(row, "id"), text(row, "instruction"), region, labels, known_size(row), declared)
        )
    return out


def _pro_variant(options: BenchmarkOptions, n: int) -> dict[str, Any]:
    return {"language": copy_language("screenspot_pro", PRO_LANGUAGES, options)}


# ----------------------------------------------------------------------------------------------
# OSWorld-G: ids are the record's; box_type says how box_coordinates reads


def osworld_region(row: CopyRow, options: BenchmarkOptions, name: str) -> Region:
    """The release region of an OSWorld-G copy row: the release loader's rule, but for one case.

    Everything is read by :func:`gge.benchmarks.osworld_g.osworld_region` (the release loader's
    function) except a ``polygon`` of exactly 4 numbers, which is read as the corners
    ``[x1, y1, x2, y2]`` of a pixel box. No release polygon has 4 numbers (they have 5 to 21
    vertices); a 4-number polygon is what a copy that replaces each polygon by its bounding box
    holds (MMInstruction/OSWorld-G keeps ``box_type`` polygon). The release loader would read those
    4 numbers as a 2-vertex polygon, which no point is inside: read so, each such sample would be a
    certain miss when the copy is evaluated with ``allow_copy_differences``; read as the box the
    copy means, it is scored as that box. Either way the release check reports the region (and the
    ``box_type`` label) as differing from the release's polygon.

    Example:
        >>> from pathlib import Path
        >>> values = {"id": "a-1", "box_type": "polygon", "box_coordinates": [1, 2, 5, 6]}
        >>> row = CopyRow(Path("c.parquet"), 0, values, "", (9, 9))
        >>> region = osworld_region(row, BenchmarkOptions(), "osworld_g")
        >>> region == Box(1, 2, 5, 6)
        True
    """
    box_type = text(row, "box_type")
    values = cell(row, "box_coordinates")
    if box_type == "polygon" and isinstance(values, (list, tuple)) and len(values) == 4:
        x1, y1, x2, y2 = numbers(row, "box_coordinates", 4)
        return Box(x1, y1, x2, y2)
    record = {"box_type": box_type, "box_coordinates": list(values) if isinstance(values, tuple) else values}
    return release_osworld_region(
        record,
        where=row.where,
        sample_id=text(row, "id"),
        abstention_hits=refusals_option(name, options) == "scored",
    )


def osworld_rows(name: str) -> RowMapper:
    """MMInstruction/OSWorld-G: the release's columns (no refusal rows: read it with ``refusals=excluded``).

    Columns ``id``, ``instruction``, ``image_size``, ``box_type``, ``box_coordinates``, ``image``. A
    refusal row is left out with ``refusals=excluded``, as the release loader leaves it out.
    """

    def rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
        refusals = refusals_option(name, options)
        out = []
        for row in copy:
            region = osworld_region(row, options, name)
            if isinstance(region, Absent) and refusals == "excluded":
                continue
            declared = size_cell(row, "image_size")
            labels: dict[str, LabelValue] = {"box_type": region.kind}
            instruction = text(row, "instruction")
            out.append(Mapped(row, text(row, "id"), instruction, region, labels, known_size(row), declared))
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


def venus_region(row: CopyRow, size: tuple[int, int]) -> Region:
    """The release loader's target: no ``bbox`` (an empty cell) or ``[-1, -1, -1, -1]`` is a refusal.

    Else the pixel box divided by the image size (the embedded image's, as the release reads its
    size from the image header).
    """
    value = row.values.get("bbox")
    missing = value is None or (isinstance(value, str) and not value.strip())
    return venus_target(None if missing else numbers(row, "bbox", 4), size)


def venus_label(row: CopyRow, key: str) -> str:
    """An optional label; a missing value is ``unknown``, as the release loader labels a record without it.

    An empty cell is a missing value (pandas writes a missing value so in a TSV); anything but a
    string is refused.
    """
    value = row.values.get(key)
    if value is None or value == "":
        return VENUS_UNKNOWN
    if not isinstance(value, str):
        raise GgeError(f"{row.where}: column '{key}' must be a string, got {value!r}")
    return value


def venus_tsv_rows(copy: Sequence[CopyRow], options: BenchmarkOptions) -> list[Mapped]:
    """VLMEvalKit's VenusBench.tsv, ids ``<subtask>_<i>`` as the release loader numbers them.

    Columns ``question``, ``bbox`` "[x1, y1, x2, y2]" in pixels (``[-1, -1, -1, -1]`` or empty: a
    refusal), ``category`` (the subtask), ``ui_type`` and ``application`` when there; no platform or
    group (labelled ``unknown``, as the release loader labels a record without them).
    """
    copy_language("venusbench_gd", VENUS_LANGUAGES, options)
    counters: dict[str, int] = {}
    out = []
    for row in copy:
        subtask = text(row, "category")
        i = counters.get(subtask, 0)
        counters[subtask] = i + 1
        size = known_size(row)
        region = venus_region(row, size)
        labels: dict[str, LabelValue] = {"subtask": subtask}
        labels.update({key: venus_label(row, key) for key in VENUS_LABELS})
        out.append(Mapped(row, f"{subtask}_{i}", text(row, "question"), region, labels, size))
    return out


def _venus_variant(options: BenchmarkOptions, n: int) -> dict[str, Any]:
    return {"language": copy_language("venusbench_gd", VENUS_LANGUAGES, options)}


# ----------------------------------------------------------------------------------------------
# The layouts

LAYOUTS: dict[str, CopyLayout] = {
    "screenspot_v2/hf": CopyLayout(
        "parquet",
        SCREENSPOT_HF,
        "image",
        None,
        screenspot_hf_rows(screenspot_target(ScreenSpotV2())),
        **SCREENSPOT_HF_NUMBERED,
    ),
    "screenspot_v2/vlmevalkit": CopyLayout(
        "tsv",
        SCREENSPOT_TSV,
        "image",
        None,
        screenspot_tsv_rows(screenspot_target(ScreenSpotV2())),
        file_order=tsv_split_order,
        **SCREENSPOT_TSV_NUMBERED,
    ),
    "screenspot_v1/hf": CopyLayout(
        "parquet",
        SCREENSPOT_HF,
        "image",
        None,
        screenspot_hf_rows(screenspot_target(ScreenSpotV1())),
        _v1_variant,
        **SCREENSPOT_HF_NUMBERED,
    ),
    "screenspot_v1/vlmevalkit": CopyLayout(
        "tsv",
        SCREENSPOT_TSV,
        "image",
        None,
        screenspot_tsv_rows(screenspot_target(ScreenSpotV1())),
        _v1_variant,
        tsv_split_order,
        **SCREENSPOT_TSV_NUMBERED,
    ),
    "screenspot_pro/lmms": CopyLayout(
        "parquet",
        ("id", "instruction", "bbox", "img_size", *PRO_LABELS),
        "image",
        "img_size",
        pro_lmms_rows,
        _pro_variant,
    ),
    "venusbench_gd/vlmevalkit": CopyLayout(
        "tsv",
        ("index", "question", "bbox", "category"),
        "image",
        None,
        venus_tsv_rows,
        _venus_variant,
        numbered=True,
        name_column="image_path",
    ),
    **{
        f"{name}/mminstruction": CopyLayout(
            "parquet",
            OSWORLD_COLUMNS,
            "image",
            "image_size",
            osworld_rows(name),
            osworld_variant(instructions, name),
        )
        for name, instructions in (("osworld_g", "original"), ("osworld_g_refined", "refined"))
    },
}
"""One mapping per copy layout, keyed ``<benchmark>/<layout>``."""
