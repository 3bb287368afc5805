"""ScreenSpot-Pro: professional high-resolution screenshots, one target per image.

Layout (FORMATS.md, section 2)::

    ScreenSpot-Pro/
      annotations/<app>_<os>.json          # every *.json is read, sorted by name
      images/<img_filename>

A record's ``bbox`` is ``[x1, y1, x2, y2]`` in pixels; the official scorer divides it by ``img_size``
and tests the normalised point with inclusive edges (``inventor_windows_60`` keeps its y1 = -1).
Ids are the records' ``id``. The ``language`` option picks ``instruction`` (``en``) or
``instruction_cn`` (``cn``).

``gt_type`` reads the files as the official script's ``--gt_type`` does
(likaixin2000/ScreenSpot-Pro-GUI-Grounding @ ``bd8bbbb4``, ``eval_screenspot_pro.py``): ``positive``
(the default) as above; ``negative`` as negative instructions, each record's target absent: correct
only on an abstention (the script: correct iff the model's wrapper says ``negative``; gge: its
abstention rules, an answer that says the target is not there or a point with both coordinates
negative), so only meaningful on files whose instructions name what is not on the screen; ``all``
both. A sample has one id whatever the variant: the positive copy of record X is ``X`` (``positive``
and ``all``), its negative copy ``X_negative`` (``negative`` and ``all``), so a predictions file
answers the same samples under every variant (the script's log keeps ``X`` with ``gt_type``
beside it; a replay under ``negative`` of a file holding only positive ids is refused, naming the
variant: :meth:`gge.models.replay.ReplayModel.check_samples`). With negatives the samples carry a
``gt_type`` label, positives and negatives are tabled apart, and the official script's tables, which
blend the two, are kept beside them and say so. ``inst_style`` is recorded and only labels the run,
as the script's ``--inst_style`` only labels its results: the instruction read is always the files'
``instruction`` (a variant's texts must already be there).

Example:
    >>> ScreenSpotProOptions(language="cn").language
    'cn'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_under,
    json_files,
    normalized_box,
    read_json_list,
    require_numbers,
    require_root,
    require_size,
    require_str,
    str_labels,
)
from gge.benchmarks.hosts import Host
from gge.errors import unknown_name
from gge.types import Absent, Region, Sample

INSTRUCTION_FIELDS = {"en": "instruction", "cn": "instruction_cn"}
"""Instruction field read for each language."""

GROUPS = ("Dev", "Creative", "CAD", "Scientific", "Office", "OS")
GT_TYPES = ("positive", "negative", "all")
INST_STYLES = ("instruction", "action", "description")
BLENDED = " (positives and negatives blended, as the official script's)"
NEGATIVE_SUFFIX = "_negative"
"""The negative copy of record ``X`` is sample ``X_negative`` (under ``gt_type=negative`` and ``all``)."""


@dataclass
class ScreenSpotProOptions(BenchmarkOptions):
    """Options of ScreenSpot-Pro.

    Attributes:
        language: ``en`` reads ``instruction``; ``cn`` reads ``instruction_cn``.
        gt_type: ``positive`` (the default), ``negative`` (every record's target absent) or ``all``.
        inst_style: ``instruction``, ``action`` or ``description``: a label of the run (the files'
            ``instruction`` is read whatever it says, as in the official script).
    """

    language: str = "en"
    gt_type: str = "positive"
    inst_style: str = "instruction"

    NOT_PREDICTIVE: ClassVar[tuple[str, ...]] = (*BenchmarkOptions.NOT_PREDICTIVE, "inst_style")
    """``inst_style`` only labels the run."""


class ScreenSpotPro(Benchmark):
    """ScreenSpot-Pro: 1581 samples over 26 applications in six groups."""

    name = "screenspot_pro"
    title = "ScreenSpot-Pro"
    directory = "screenspot_pro"
    host = Host(
        "hub",
        "likaixin/ScreenSpot-Pro",
        "210e78d3844251110bff86c95835ebd37a6930fa",
        "third party",
        ("annotations/*.json", "images/*.png"),
    )
    options_type = ScreenSpotProOptions
    label_keys: ClassVar[tuple[str, ...]] = ("group", "ui_type", "platform", "application")
    tables: ClassVar[tuple[TableSpec, ...]] = (
        TableSpec("By group", rows="group", cols="ui_type", row_order=GROUPS, col_order=("text", "icon")),
        TableSpec("By application", rows="application"),
        TableSpec("By platform", rows="platform", row_order=("macos", "windows", "linux")),
    )

    apart_rows: ClassVar[tuple[str, tuple[str, ...]]] = ("group", GROUPS)
    """The label (and its order) a run with negatives tables against ``gt_type``."""

    def __init__(self, gt_type: str = "positive") -> None:
        if gt_type != "positive":  # this instance's label keys and tables shadow the class's
            keys = (*type(self).label_keys, "gt_type")
            rows, order = type(self).apart_rows
            apart = (
                TableSpec("By gt_type", rows="gt_type", row_order=("positive", "negative")),
                TableSpec(
                    f"By {rows} and gt_type",
                    rows=rows,
                    cols="gt_type",
                    row_order=order,
                    col_order=("positive", "negative"),
                ),
            )
            blended = tuple(
                TableSpec(t.title + BLENDED, t.rows, t.cols, t.row_order, t.col_order)
                for t in type(self).tables
            )
            tables = apart + blended if gt_type == "all" else type(self).tables
            self.__dict__.update(label_keys=keys, tables=tables)

    def configured(self, options: BenchmarkOptions) -> ScreenSpotPro:
        """The benchmark for one run's ``gt_type``: with negatives, a ``gt_type`` label and its tables."""
        gt_type, _ = _gt_options(self.name, options)
        return self if gt_type == "positive" else type(self)(gt_type)

    def headline_caveat(self, options: BenchmarkOptions) -> str | None:
        """With negatives: which samples the headline is over (a negative hits only on an abstention)."""
        gt_type, _ = _gt_options(self.name, options)
        asked = (
            "; gge asks with the model's own prompt, which offers no 'not there' answer unless its preset's "
            "does"
        )
        if gt_type == "negative":
            return (
                "negative instructions only (the official script's negative pass: only an abstention hits)"
                + asked
            )
        if gt_type == "all":
            return (
                "positives and negatives blended (the official script's overall, not the positive headline)"
                + asked
            )
        return None

    def annotation_files(self, root: Path) -> list[Path]:
        """Every ``annotations/*.json``, sorted by name (refused, naming the folder, when there is none)."""
        return json_files(root / "annotations", name=self.name, kind="annotation")

    def image_folder(self, root: Path) -> str:
        """The folder under the root that ``img_filename`` is relative to."""
        return "images"

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read every annotation file and check the images (see the module docstring).

        Args:
            root: The benchmark folder.
            options: A :class:`ScreenSpotProOptions` (a plain BenchmarkOptions reads English).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        language = getattr(options, "language", "en")
        if language not in INSTRUCTION_FIELDS:
            raise unknown_name(f"{self.name} language", str(language), INSTRUCTION_FIELDS)
        instruction_field = INSTRUCTION_FIELDS[language]
        paths = self.annotation_files(root)
        images = self.image_folder(root)
        gt_type, inst_style = _gt_options(self.name, options)
        out = LoadCollector(self.name, root)
        kinds = ("positive", "negative") if gt_type == "all" else (gt_type,)
        keys = tuple(k for k in self.label_keys if k != "gt_type")
        for path in paths:
            where = str(out.file(path))
            for i, rec in enumerate(read_json_list(path)):
                sid = require_str(rec, "id", where=where, sample_id=f"#{i}")
                size = require_size(rec, "img_size", where=where, sample_id=sid)
                filename = require_str(rec, "img_filename", where=where, sample_id=sid)
                x1, y1, x2, y2 = require_numbers(rec, "bbox", 4, where=where, sample_id=sid)
                labels = str_labels(rec, keys, where=where, sample_id=sid)
                image = image_under(root, images, filename, where=where, sample_id=sid)
                instruction = require_str(rec, instruction_field, where=where, sample_id=sid)
                for kind in kinds:  # one sample per kind read (gt_type=all: the record twice)
                    region: Region = normalized_box(x1, y1, x2, y2, size) if kind == "positive" else Absent()
                    sample = Sample(
                        benchmark=self.name,
                        id=sid if kind == "positive" else f"{sid}{NEGATIVE_SUFFIX}",
                        image_path=image,
                        image_size=size,
                        instruction=instruction,
                        region=region,
                        labels=labels if gt_type == "positive" else {**labels, "gt_type": kind},
                    )
                    out.add(sample, f"{path.name} record {i}")
        variant = {"language": language}
        if gt_type != "positive" or inst_style != "instruction":
            variant.update(gt_type=gt_type, inst_style=inst_style)
        if inst_style != "instruction":
            out.notes.append(
                f"inst_style={inst_style} labels the run only: the files' instruction is read, as the "
                "official script's --inst_style does"
            )
        return out.result(variant)


def _gt_options(name: str, options: BenchmarkOptions) -> tuple[str, str]:
    """The run's ``gt_type`` and ``inst_style``, checked."""
    gt_type = str(getattr(options, "gt_type", "positive"))
    inst_style = str(getattr(options, "inst_style", "instruction"))
    if gt_type not in GT_TYPES:
        raise unknown_name(f"{name} gt_type", gt_type, list(GT_TYPES))
    if inst_style not in INST_STYLES:
        raise unknown_name(f"{name} inst_style", inst_style, list(INST_STYLES))
    return gt_type, inst_style


class ScreenSpotV2Variants(ScreenSpotPro):
    """ScreenSpot-v2 variants (likaixin/ScreenSpot-v2-variants): ScreenSpot-Pro's schema and script.

    Layout (FORMATS.md, section 13; two seen, both read)::

        ScreenSpot-v2-variants/
          mobile.json desktop.json web.json   # or annotations/*.json (every *.json, sorted by name)
          imgs/<platform>_<uuid>.png          # or images/

    A record is ScreenSpot-Pro's (``img_filename``, ``bbox`` xyxy pixels, ``img_size``, ``instruction``,
    ``id``, ``ui_type``, ``application``, ``platform``; no ``group``), scored as ScreenSpot-Pro's script
    scores it, ``gt_type`` and ``inst_style`` included: where the action / description / negative
    texts are stored is not known, so a variant's texts must be in the ``instruction`` of the files
    pointed at (as the official script reads them).
    """

    name = "screenspot_v2_variants"
    title = "ScreenSpot-v2 variants"
    directory = "screenspot_v2_variants"
    host = Host(
        "hub",
        "likaixin/ScreenSpot-v2-variants",
        "aa4d83b6833d77d3bb3b7cb769951e2db80052b6",
        "third party",
        ("annotations/*.json", "images/*"),
    )
    label_keys = ("ui_type", "platform", "application")
    tables = (
        TableSpec("By platform", rows="platform", cols="ui_type", col_order=("text", "icon")),
        TableSpec("By application", rows="application"),
    )
    apart_rows = ("platform", ())

    def annotation_files(self, root: Path) -> list[Path]:
        """Every ``annotations/*.json`` where that folder is, else every ``*.json`` of the root."""
        folder = root / "annotations" if (root / "annotations").is_dir() else root
        return json_files(folder, name=self.name, kind="annotation", folder_needed=False)

    def image_folder(self, root: Path) -> str:
        """``imgs/`` (the first upload), else ``images/``."""
        return "imgs" if (root / "imgs").is_dir() else "images"
