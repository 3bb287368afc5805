"""UI-I2E-Bench: implicit and explicit instructions on web, desktop and mobile screenshots.

Layout (FORMATS.md, section 6)::

    I2E-Bench/
      I2E-bench-annotation.jsonl            # one JSON object per line
      screenshot/folder_{1..5}/<name>.png   # the record's ``image`` is relative to the root

A record's ``bounding_box`` is ``[x1, y1, x2, y2]`` in pixels, tested as written with inclusive edges:
no corner swap, so an inverted box is never hit and a zero-area box only on its point. Ids are the
0-based index among the non-empty lines. The image size comes from the image header.

Example:
    >>> instr_type_label(2), instr_type_label(1), instr_type_label("Explicit")
    ('implicit', 'explicit', 'explicit')
    >>> merged_el_type("radio")
    'toggle'
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_size_from_header,
    image_under,
    read_jsonl,
    require,
    require_numbers,
    require_root,
    require_str,
)
from gge.benchmarks.hosts import Host
from gge.errors import GgeError
from gge.types import Box, Sample

ANNOTATION_FILE = "I2E-bench-annotation.jsonl"
INSTR_TYPES = ("implicit", "explicit")
EL_TYPES = ("button", "icon", "input", "dropdown", "toggle", "checkbox", "radio")
MERGED_INTO_TOGGLE = frozenset({"checkbox", "radio"})


def instr_type_label(value: object) -> str | None:
    """The instruction type as the official script reads it, or None when it is not understood.

    A string is lower-cased and must be ``implicit`` or ``explicit``; an integer 2 is implicit and
    any other integer explicit.

    Args:
        value: The record's ``annotations.instr_type``.

    Returns:
        ``"implicit"``, ``"explicit"`` or None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "implicit" if value == 2 else "explicit"
    if isinstance(value, str) and value.lower() in INSTR_TYPES:
        return value.lower()
    return None


def merged_el_type(el_type: str) -> str:
    """The leaderboard's five element types: ``checkbox`` and ``radio`` count as ``toggle``.

    Args:
        el_type: A lower-cased element type.

    Returns:
        The merged type.
    """
    return "toggle" if el_type in MERGED_INTO_TOGGLE else el_type


def instr_type_of(rec: Mapping[str, Any], *, where: str, sample_id: str) -> str:
    """The checked ``annotations.instr_type`` of a record.

    Args:
        rec: The record.
        where: The file and line (for the message).
        sample_id: The sample's id (for the message).

    Returns:
        ``"implicit"`` or ``"explicit"``.
    """
    annotations = require(rec, "annotations", where=where, sample_id=sample_id)
    if not isinstance(annotations, Mapping) or "instr_type" not in annotations:
        raise GgeError(f"{where}: record {sample_id} has no field 'annotations.instr_type'")
    label = instr_type_label(annotations["instr_type"])
    if label is None:
        raise GgeError(
            f"{where}: record {sample_id}: field 'annotations.instr_type' must be implicit, explicit "
            f"or an integer, got {annotations['instr_type']!r}"
        )
    return label


class UII2EBench(Benchmark):
    """UI-I2E-Bench: 1477 samples; boxes scored exactly as written."""

    name = "ui_i2e_bench"
    title = "UI-I2E-Bench"
    directory = "ui_i2e_bench"
    host = Host(
        "hub",
        "vaundys/I2E-Bench",
        None,
        "",
        ("I2E-bench-annotation.jsonl", "*.png"),
        optional=("*.jpg", "*.jpeg"),
    )
    label_keys = ("source", "instr_type", "el_type", "el_type_merged")
    tables = (
        TableSpec("By source", rows="source", row_order=("mobile", "desktop", "web")),
        TableSpec("By instruction type", rows="instr_type", row_order=INSTR_TYPES),
        TableSpec("By element type", rows="el_type", row_order=EL_TYPES),
        TableSpec(
            "By element type (leaderboard, checkbox and radio as toggle)",
            rows="el_type_merged",
            row_order=tuple(t for t in EL_TYPES if t not in MERGED_INTO_TOGGLE),
        ),
    )

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the JSON-lines annotations and check the images (see the module docstring).

        Args:
            root: The benchmark folder.
            options: Common options (none specific).

        Returns:
            The samples and the load summary.
        """
        require_root(root, self.name)
        out = LoadCollector(self.name, root)
        path = out.file(root / ANNOTATION_FILE)
        for i, (lineno, rec) in enumerate(read_jsonl(path)):
            sid = str(i)
            where = f"{path}:{lineno}"
            if not isinstance(rec, dict):
                raise GgeError(f"{where}: record {sid} is {type(rec).__name__}, expected an object")
            image = image_under(
                root, require_str(rec, "image", where=where, sample_id=sid), where=where, sample_id=sid
            )
            el_type = require_str(rec, "el_type", where=where, sample_id=sid).lower()
            x1, y1, x2, y2 = require_numbers(rec, "bounding_box", 4, where=where, sample_id=sid)
            sample = Sample(
                benchmark=self.name,
                id=sid,
                image_path=image,
                image_size=image_size_from_header(image, where=where, sample_id=sid),
                instruction=require_str(rec, "instruction", where=where, sample_id=sid),
                region=Box(x1, y1, x2, y2),
                labels={
                    "source": require_str(rec, "source", where=where, sample_id=sid),
                    "instr_type": instr_type_of(rec, where=where, sample_id=sid),
                    "el_type": el_type,
                    "el_type_merged": merged_el_type(el_type),
                },
            )
            out.add(sample, f"{path.name} line {lineno}")
        return out.result()
