"""OSWorld-G, with its original and its refined instructions (two registered benchmarks).

Layout (FORMATS.md, section 3); the root is ``benchmark/`` itself or a folder that contains it::

    benchmark/
      OSWorld-G.json  OSWorld-G_refined.json   # same 564 ids; refined rewrites 507 instructions
      classification_result.json               # optional: {"classified": {<category>: [{"id": ...}]}}
      images/<image_path>

``box_type`` says how ``box_coordinates`` reads: ``bbox`` ``[x, y, w, h]`` pixels (inclusive rectangle),
``polygon`` a flat ``[x1, y1, x2, y2, ...]`` (even-odd ray casting), ``refusal`` (only an abstention is
correct). Ids are the records' ``id``, the same in both variants.

Three denominators circulate (FORMATS.md, section 11); ``bench.osworld_g.refusals=`` picks one and
the load summary's ``variant`` records it with the number of samples loaded (``denominator``):

* ``scored`` (default, the official 564): the 54 refusal samples are scored, only an abstention hits;
* ``miss`` (564): refusal samples stay in the denominator and are never hit, not even by an
  abstention (Tongyi-MAI/MAI-UI keeps them as ``[0, 0, 0, 0]`` boxes that always miss);
* ``excluded`` (510): refusal records are left out (mlfoundations/Gelato, ZJU-REAL/ClawGUI).

Example:
    >>> polygon_from_flat([0, 0, 4, 0, 4, 4]).vertices
    ((0.0, 0.0), (4.0, 0.0), (4.0, 4.0))
    >>> OSWorldGOptions(refusals="excluded").refusals
    'excluded'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_under,
    read_json,
    read_json_list,
    require,
    require_numbers,
    require_root,
    require_size,
    require_str,
    xywh_box,
)
from gge.benchmarks.hosts import Host
from gge.errors import GgeError, did_you_mean
from gge.types import Absent, LabelValue, Polygon, Region, Sample

CLASSIFICATION_FILE = "classification_result.json"
CATEGORIES = (
    "text_matching",
    "element_recognition",
    "layout_understanding",
    "fine_grained_manipulation",
    "refusal",
    "unclassified",
)
UNCLASSIFIED = ("unclassified",)

REFUSALS = {
    "scored": "the official rule (the official table divides by every sample, refusals included)",
    "miss": "as Tongyi-MAI/MAI-UI counts them; not the official rule",
    "excluded": "as mlfoundations/Gelato and ZJU-REAL/ClawGUI count; not the official rule",
}
"""The values of the ``refusals`` option, with whose count each one is."""


@dataclass
class OSWorldGOptions(BenchmarkOptions):
    """Options of OSWorld-G (and of its refined variant).

    Attributes:
        refusals: How the refusal samples (target absent) count: ``scored`` (the official rule: only
            an abstention hits them), ``miss`` (kept in the denominator, never hit) or ``excluded``
            (left out).
    """

    refusals: str = "scored"

    NOT_PREDICTIVE: ClassVar[tuple[str, ...]] = (*BenchmarkOptions.NOT_PREDICTIVE, "refusals")
    """``refusals`` changes how the answers are scored, not what is asked (as ``selection`` does), so a
    rerun with another value reuses the predictions and rescores them; ``excluded`` asks fewer
    samples, which the samples digest covers."""


def refusals_option(name: str, options: BenchmarkOptions) -> str:
    """The ``refusals`` option, checked (a plain BenchmarkOptions reads ``scored``).

    Args:
        name: The benchmark's name, for the message.
        options: Its options.

    Returns:
        ``scored``, ``miss`` or ``excluded``.

    Example:
        >>> refusals_option("osworld_g", OSWorldGOptions(refusals="mis"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: bench.osworld_g.refusals='mis' (did you mean 'miss'?): must be scored, ...
    """
    value = getattr(options, "refusals", "scored")
    if value not in REFUSALS:
        raise GgeError(
            f"bench.{name}.refusals={value!r}{did_you_mean(str(value), REFUSALS)}: "
            "must be scored, miss or excluded"
        )
    return str(value)


def polygon_from_flat(values: Sequence[float]) -> Polygon:
    """A polygon from a flat ``[x1, y1, x2, y2, ...]`` list (the length must be even).

    Args:
        values: The coordinates.

    Returns:
        The polygon.
    """
    return Polygon(tuple((float(values[i]), float(values[i + 1])) for i in range(0, len(values), 2)))


def benchmark_folder(root: Path, annotation_file: str) -> Path:
    """The folder holding the annotation file: ``root`` itself, else ``root/benchmark``.

    Args:
        root: The folder the user gave.
        annotation_file: The instruction file to find.

    Returns:
        The benchmark folder (``root`` when neither holds the file, so the error names it there).
    """
    if not (root / annotation_file).is_file() and (root / "benchmark" / annotation_file).is_file():
        return root / "benchmark"
    return root


def read_categories(path: Path) -> dict[str, set[str]]:
    """Read ``classification_result.json``: sample id -> the categories that list it.

    Args:
        path: The file.

    Returns:
        The categories of every listed id.
    """
    data = read_json(path)
    classified = data.get("classified") if isinstance(data, dict) else None
    if not isinstance(classified, dict):
        raise GgeError(f'{path}: expected {{"classified": {{<category>: [{{"id": ...}}, ...]}}}}')
    categories: dict[str, set[str]] = {}
    for category, items in classified.items():
        if not isinstance(items, list):
            raise GgeError(f"{path}: category '{category}' must be a list of records")
        for j, item in enumerate(items):
            if isinstance(item, Mapping):
                sid = str(require(item, "id", where=f"{path}: category '{category}'", sample_id=f"#{j}"))
            elif isinstance(item, str):
                sid = item
            else:
                raise GgeError(f"{path}: category '{category}' item {j} must be an object with an 'id'")
            categories.setdefault(sid, set()).add(str(category))
    return categories


def osworld_region(
    rec: Mapping[str, Any], *, where: str, sample_id: str, abstention_hits: bool = True
) -> Region:
    """The target of a record, by its ``box_type``.

    Args:
        rec: The record.
        where: The file (for the message).
        sample_id: The sample's id (for the message).
        abstention_hits: Whether an abstention hits a refusal target (False: ``refusals=miss``).

    Returns:
        A pixel Box, a Polygon or Absent.
    """
    box_type = require_str(rec, "box_type", where=where, sample_id=sample_id)
    if box_type == "refusal":
        return Absent(abstention_hits=abstention_hits)
    if box_type == "bbox":
        return xywh_box(require_numbers(rec, "box_coordinates", 4, where=where, sample_id=sample_id))
    if box_type == "polygon":
        values = require_numbers(rec, "box_coordinates", None, where=where, sample_id=sample_id)
        if not values or len(values) % 2:
            raise GgeError(
                f"{where}: record {sample_id}: field 'box_coordinates' of a polygon must be a flat "
                f"list of x, y pairs, got {len(values)} numbers"
            )
        return polygon_from_flat(values)
    raise GgeError(
        f"{where}: record {sample_id}: field 'box_type' must be bbox, polygon or refusal, got {box_type!r}"
    )


class OSWorldG(Benchmark):
    """OSWorld-G with its original instructions (564 samples: bbox, polygon and refusal targets)."""

    name = "osworld_g"
    title = "OSWorld-G"
    directory = "osworld_g"
    host = Host(
        "github",
        "xlang-ai/OSWorld-G",
        "daa6bd8e0e629f0917ad2984df930bf0bd967540",
        "third party",
        ("benchmark/*.json", "benchmark/images/*"),
        licence="Apache-2.0 (3rd party)",
        note="the repository's archive at the commit: its benchmark/ folder holds records and screenshots",
    )
    options_type = OSWorldGOptions
    annotation_file: ClassVar[str] = "OSWorld-G.json"
    instructions: ClassVar[str] = "original"
    label_keys = ("box_type", "category")
    derived_labels = ("category",)  # from classification_result.json, where the folder has it
    tables = (
        TableSpec("By category", rows="category", row_order=CATEGORIES),
        TableSpec("By box type", rows="box_type", row_order=("bbox", "polygon", "refusal")),
    )

    def headline_caveat(self, options: BenchmarkOptions) -> str | None:
        """Not the official headline unless refusals are scored (the official 564)."""
        refusals = refusals_option(self.name, options)
        return None if refusals == "scored" else REFUSALS_CAVEAT[refusals]

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the instruction file, the optional categories and check the images.

        Args:
            root: The ``benchmark/`` folder, or a folder containing it.
            options: An :class:`OSWorldGOptions` (a plain BenchmarkOptions scores the refusals).

        Returns:
            The samples and the load summary: ``variant`` says which instruction file, how the
            refusals count and the denominator (samples loaded); a note says what that choice means.
        """
        refusals = refusals_option(self.name, options)
        require_root(root, self.name)
        folder = benchmark_folder(root, self.annotation_file)
        out = LoadCollector(self.name, root)
        path = out.file(folder / self.annotation_file)
        records = read_json_list(path)
        categories: dict[str, set[str]] | None = None
        classification = folder / CLASSIFICATION_FILE
        if classification.is_file():
            categories = read_categories(out.file(classification))
        else:
            out.notes.append(
                f"{CLASSIFICATION_FILE} not found in {folder}: no 'category' label, "
                "so the per-category table is not shown (see the per-box_type table)"
            )
        where = str(path)
        record_ids: set[str] = set()
        dropped = 0
        for i, rec in enumerate(records):
            sid = require_str(rec, "id", where=where, sample_id=f"#{i}")
            record_ids.add(sid)
            region = osworld_region(rec, where=where, sample_id=sid, abstention_hits=refusals == "scored")
            if isinstance(region, Absent) and refusals == "excluded":
                dropped += 1
                continue
            labels: dict[str, LabelValue] = {"box_type": region.kind}
            if categories is not None:
                found = categories.get(sid)
                labels["category"] = tuple(sorted(found)) if found else UNCLASSIFIED
            image_path = require_str(rec, "image_path", where=where, sample_id=sid)
            sample = Sample(
                benchmark=self.name,
                id=sid,
                image_path=image_under(folder, "images", image_path, where=where, sample_id=sid),
                image_size=require_size(rec, "image_size", where=where, sample_id=sid),
                instruction=require_str(rec, "instruction", where=where, sample_id=sid),
                region=region,
                labels=labels,
            )
            out.add(sample, f"{path.name} record {i}")
        if categories is not None:
            unknown = set(categories) - record_ids
            if unknown:
                out.notes.append(
                    f"{CLASSIFICATION_FILE} lists {len(unknown)} id(s) not in {self.annotation_file}"
                )
        refusal_samples = sum(isinstance(s.region, Absent) for s in out.samples)
        out.notes.append(refusals_note(refusals, len(out.samples), refusal_samples + dropped))
        loaded = out.result({"instructions": self.instructions, "refusals": refusals})
        loaded.summary["variant"]["denominator"] = len(out.samples)
        return loaded


REFUSALS_CAVEAT = {
    "miss": "refusals counted as misses (MAI-UI's count); the official headline scores them "
    "(refusals=scored)",
    "excluded": "refusals left out (Gelato's and ClawGUI's 510); the official headline scores them "
    "(refusals=scored, 564)",
}
"""The headline caveat of each non-official ``refusals`` choice."""


def refusals_note(refusals: str, denominator: int, refusal_records: int) -> str:
    """The load summary's note on the ``refusals`` choice: what it means and which one is official.

    Args:
        refusals: The option's value.
        denominator: Samples loaded.
        refusal_records: Refusal records in the file.

    Returns:
        One line.

    Example:
        >>> refusals_note("excluded", 510, 54)  # doctest: +ELLIPSIS
        'refusals=excluded: the 54 refusal records are left out (denominator 510): ...'
    """
    what = {
        "scored": f"the {refusal_records} refusal samples are scored, only an abstention hits them",
        "miss": f"the {refusal_records} refusal samples stay in the denominator and are never hit, "
        "not even by an abstention",
        "excluded": f"the {refusal_records} refusal records are left out",
    }[refusals]
    official = "" if refusals == "scored" else "; the official table scores them (refusals=scored)"
    return f"refusals={refusals}: {what} (denominator {denominator}): {REFUSALS[refusals]}{official}"


class OSWorldGRefined(OSWorldG):
    """OSWorld-G with the refined instructions (same samples and ids, read from the same folder)."""

    name = "osworld_g_refined"
    title = "OSWorld-G (refined)"
    directory = "osworld_g"
    annotation_file = "OSWorld-G_refined.json"
    instructions = "refined"
