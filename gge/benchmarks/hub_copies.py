"""The known Hub copies of each benchmark, as data: repository, files, count, what differs from the release.

Most people download a benchmark from the Hub as parquet (images embedded, HF datasets ``Image``
struct) or as a VLMEvalKit TSV (base64 images), not in its release layout. :data:`KNOWN_COPIES` lists
the copies gge knows (repository, file pattern, count, what differs from the release) and, for those
it reads, the :class:`~gge.benchmarks.hub_layouts.CopyLayout` that turns the copy's rows into exactly
the fields the release loader gives (same ids, labels, region type and space, instruction; the image
stays embedded).
Copies known but not read yet have ``layout=None``: selecting one is a one-line error. UI-Vision,
UI-I2E-Bench, showdown-clicks and CAGUI have no known parquet or TSV copy: their releases are on the
Hub themselves, and harnesses download them as released.

Ids follow FORMATS.md: a copy without the release's ids gets them by position, as the release does
(``<split>_<i>`` in the copy's row order, the split from the copy file's name or the screenshot's); the
release check (:mod:`gge.benchmarks.hub`) then tells whether that order, and everything else, is the
release's.

Example:
    >>> [c.repository for c in copies_of("screenspot_v2") if c.layout is not None]
    ['HongxinLi/ScreenSpot_v2', 'VLMEvalKit (opencompass.openxlab.space)']
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gge.benchmarks.hub_layouts import LAYOUTS, CopyLayout


@dataclass(frozen=True)
class KnownCopy:
    """One known Hub copy of a benchmark.

    Attributes:
        benchmark: The benchmark it copies.
        repository: Where it is published.
        files: File-name pattern (``fnmatch``) of its files.
        kind: ``parquet`` or ``tsv``.
        records: Its record count, when known.
        layout: How gge reads it, or None (known, not read yet).
        differs: What is known to differ from the release ("" when nothing is known to).
    """

    benchmark: str
    repository: str
    files: str
    kind: str
    records: int | None
    layout: CopyLayout | None
    differs: str = ""

    def matches(self, names: Sequence[str]) -> bool:
        """Whether every one of the file names fits this copy's pattern."""
        return bool(names) and all(fnmatch.fnmatch(n, self.files) for n in names)


RELEASE_FILES: dict[str, tuple[str, ...]] = {
    "screenspot_v2": ("screenspot_*_v2.json",),
    "screenspot_v1": ("screenspot_mobile.json", "screenspot_desktop.json", "screenspot_web.json"),
    "screenspot_pro": ("annotations/*.json",),
    "osworld_g": ("OSWorld-G.json", "benchmark/OSWorld-G.json"),
    "osworld_g_refined": ("OSWorld-G_refined.json", "benchmark/OSWorld-G_refined.json"),
    "ui_vision": ("annotations/element_grounding/*.json",),
    "mmbench_gui": ("L2_annotations.json",),
    "ui_i2e_bench": ("I2E-bench-annotation.jsonl",),
    "showdown_clicks": ("showdown-clicks-dev/data.csv", "data.csv"),
    "cagui_grounding": ("code/*.jsonl",),
    "venusbench_gd": ("instruction/*.json",),
}
"""Glob patterns (under the benchmark's folder) of each release's annotation files: ``source=auto``
reads the release when one of them is there."""


# ----------------------------------------------------------------------------------------------
# The table

NORMALISED = (
    "bbox normalised [x1, y1, x2, y2] in [0, 1] (the release: pixel xywh); no split column (data_source "
    "does not give it: gge reads the file_name prefix)"
)
VLMEVALKIT = (
    "VLMEvalKit scores x+w-1 (a one-pixel shrink) and raises on boxes outside [0, 1]; "
    "gge scores the release rule"
)

KNOWN_COPIES: tuple[KnownCopy, ...] = (
    KnownCopy(
        "screenspot_v2",
        "HongxinLi/ScreenSpot_v2",
        "test-*-of-*.parquet",
        "parquet",
        1272,
        LAYOUTS["screenspot_v2/hf"],
        f"{NORMALISED}; rows are numbered by position, then matched to the release's records by content",
    ),
    KnownCopy(
        "screenspot_v2",
        "VLMEvalKit (opencompass.openxlab.space)",
        "ScreenSpot_v2_*.tsv",
        "tsv",
        1272,
        LAYOUTS["screenspot_v2/vlmevalkit"],
        VLMEVALKIT,
    ),
    KnownCopy(
        "screenspot_v2",
        "lmms-lab/ScreenSpot-v2",
        "train-*.parquet",
        "parquet",
        1272,
        None,
        "columns other than image, instruction, bbox (pixel xywh) not known",
    ),
    KnownCopy(
        "screenspot_v1",
        "rootsautomation/ScreenSpot",
        "test-*-of-*.parquet",
        "parquet",
        1272,
        LAYOUTS["screenspot_v1/hf"],
        f"{NORMALISED} (already corners: never converted again)",
    ),
    KnownCopy(
        "screenspot_v1",
        "VLMEvalKit (opencompass.openxlab.space)",
        "ScreenSpot_[MDW]*.tsv",
        "tsv",
        1272,
        LAYOUTS["screenspot_v1/vlmevalkit"],
        VLMEVALKIT,
    ),
    KnownCopy(
        "screenspot_pro",
        "lmms-lab/ScreenSpot-Pro",
        "train-*.parquet",
        "parquet",
        1581,
        LAYOUTS["screenspot_pro/lmms"],
        "split named train; no instruction_cn",
    ),
    KnownCopy(
        "screenspot_pro",
        "HongxinLi/ScreenSpot-Pro",
        "test-*-of-*.parquet",
        "parquet",
        1581,
        None,
        "bbox normalised; no id column (group, ui_type, application columns not known)",
    ),
    KnownCopy(
        "screenspot_pro",
        "VLMEvalKit (opencompass.openxlab.space)",
        "ScreenSpot_Pro_*.tsv",
        "tsv",
        1581,
        None,
        "no release id (ids would need a join on image and instruction); group from the file name",
    ),
    KnownCopy(
        "screenspot_pro",
        "likaixin/ScreenSpot-Pro refs/convert/parquet",
        "[0-9][0-9][0-9][0-9].parquet",
        "parquet",
        None,
        None,
        "the Hub's imagefolder conversion: images and a folder label, no annotations (use the release files)",
    ),
    *(
        KnownCopy(
            name,
            "MMInstruction/OSWorld-G",
            "test-*.parquet",
            "parquet",
            510,
            LAYOUTS[f"{name}/mminstruction"],
            "drops the 54 refusals (read it with bench.osworld_g.refusals=excluded) and replaces each of the "
            "40 polygons by its bounding box (reported); which instruction set it holds is not known",
        )
        for name in ("osworld_g", "osworld_g_refined")
    ),
    KnownCopy(
        "screenspot_pro",
        "TIGER-Lab/ScreenSpot-Pro",
        "test-*.parquet",
        "parquet",
        None,
        None,
        "lmms-eval's copy; bbox and img_size may be JSON strings; which columns it holds: not known",
    ),
    KnownCopy(
        "mmbench_gui",
        "MMInstruction/MMBenchGUI",
        "*.parquet",
        "parquet",
        None,
        None,
        "named by one harness; its format, split and columns: not known",
    ),
    KnownCopy(
        "osworld_g",
        "VLMEvalKit (opencompass.openxlab.space)",
        "OSWorld_G*.tsv",
        "tsv",
        None,
        None,
        "not read yet",
    ),
    KnownCopy(
        "venusbench_gd",
        "Zery/VBGD_Dataset",
        "VenusBench*.tsv",
        "tsv",
        None,
        LAYOUTS["venusbench_gd/vlmevalkit"],
        "VLMEvalKit's copy: no platform or group columns (labelled unknown); which subtasks and whether the "
        "refusals are in it: not known; gge has no release records to check it against",
    ),
    KnownCopy(
        "venusbench_gd",
        "Zery/VBGD_Dataset",
        "VBGD*.tsv",
        "tsv",
        None,
        None,
        "VLMEvalKit's older VBGD cut (ScreenSpot-Pro-style columns); its relation to the release: unknown",
    ),
)
"""Every known Hub copy, by benchmark (those with ``layout=None`` are known, not read yet)."""


def copies_of(benchmark: str) -> list[KnownCopy]:
    """The known copies of a benchmark.

    Args:
        benchmark: Its name.

    Returns:
        The copies, in table order.
    """
    return [c for c in KNOWN_COPIES if c.benchmark == benchmark]


def layouts_of(benchmark: str, kind: str) -> dict[str, CopyLayout]:
    """The layouts gge reads for a benchmark's copies of one kind.

    Args:
        benchmark: Its name.
        kind: ``parquet`` or ``tsv``.

    Returns:
        ``{key: layout}``.
    """
    prefix = f"{benchmark}/"
    return {k: v for k, v in LAYOUTS.items() if k.startswith(prefix) and v.kind == kind}


def identify(benchmark: str, kind: str, names: Sequence[str], layout: CopyLayout) -> KnownCopy | None:
    """The known copy whose file pattern fits the file names and whose layout is ``layout``.

    Args:
        benchmark: The benchmark.
        kind: The copy kind.
        names: The copy's file names.
        layout: The layout its columns fit.

    Returns:
        The copy, or None (an unknown copy of a known layout).
    """
    for c in copies_of(benchmark):
        if c.kind == kind and c.layout is layout and c.matches(names):
            return c
    return None


def unread_copy(benchmark: str, kind: str, names: Sequence[str]) -> KnownCopy | None:
    """A known copy gge does not read yet whose file pattern fits ``names`` (and no read copy's does)."""
    if any(c.kind == kind and c.layout is not None and c.matches(names) for c in copies_of(benchmark)):
        return None
    for c in copies_of(benchmark):
        if c.kind == kind and c.layout is None and c.matches(names):
            return c
    return None


def layout_key(layout: CopyLayout) -> str:
    """The key of a layout in :data:`LAYOUTS`."""
    return next(k for k, v in LAYOUTS.items() if v is layout)


def describe(columns: Mapping[str, CopyLayout]) -> str:
    """``key (col, col, ...)`` of each layout, for messages."""
    return "; ".join(f"{k}: {', '.join(v.columns)}" for k, v in columns.items())


def copies_table() -> str:
    """The known copies as a Markdown table (docs/hub-copies.md holds it; a test keeps them in step).

    Returns:
        One row per copy: benchmark, repository, files, kind, records, whether gge reads it, and what
        is known to differ from the release.

    Example:
        >>> copies_table().splitlines()[0]
        '| benchmark | repository | files | kind | records | read | differs from the release |'
    """
    rows = [
        "| benchmark | repository | files | kind | records | read | differs from the release |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in KNOWN_COPIES:
        cells = [
            f"`{c.benchmark}`",
            c.repository,
            f"`{c.files}`",
            c.kind,
            "?" if c.records is None else str(c.records),
            "yes" if c.layout is not None else "not yet",
            (c.differs or "nothing known").replace("|", "\\|"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)
