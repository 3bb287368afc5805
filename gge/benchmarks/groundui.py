"""GroundUI-1K (agent-studio): 1000 web, desktop and mobile clicks; the hit rule excludes the box's edges.

Layout (FORMATS.md, section 14; the release's Google-Drive tarball)::

    groundui_1k/                          # the root (or the release's gui_grounding/ folder itself)
      gui_grounding/metadata_1k.jsonl     # GroundUI-1K, re-captioned instructions (the benchmark)
      gui_grounding/metadata_raw_1k.jsonl # the same lines, raw instructions (an ablation)
      gui_grounding/metadata.jsonl        # GroundUI-18K (``groundui_18k``), assumed the same fields
      gui_grounding/images/<image>

A line: ``image`` (a file name under ``images/``), ``instruction``, ``bbox`` ``[x1, y1, x2, y2]`` in
pixels (integers or floats), ``source``, ``platform`` (web, desktop, mobile), ``resolution`` ``[w, h]``
(the scorer's image size: gge's too) and ``raw_instruction``. The id is the 0-based line number (four
(image, instruction) pairs repeat in the 1K file).

The official scorer (computer-agents/agent-studio @ ``d7f6cb59``, ``eval_agent_desiderata/
eval_gui_grounding.py``) multiplies the answer's ``(x, y)`` in [0, 1] by ``resolution`` and counts a
hit iff ``left < x < right and top < y < bottom``: **strict, the edges excluded** (``Box(strict=True)``;
every other set gge reads includes them); an answer it cannot parse scores 0 and stays in the
denominator. ``make_report.py`` prints the mean score over every line (micro, the headline) and per
platform. The load summary reports the boxes of zero height or width (the 1K file's line 67 can never
be hit under the strict rule) and those past the image's edge (26 in the 1K file).

``bench.groundui_1k.edges=included`` scores with the edges included, and ``instructions=raw`` reads the
raw instructions: both are gge's variants, labelled as not official.

Example:
    >>> Box(10, 10, 20, 20, strict=True).contains(10, 15), Box(10, 10, 20, 20).contains(10, 15)
    (False, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    read_jsonl,
    require_files,
    require_numbers,
    require_root,
    require_size,
    require_str,
    resolve_image,
)
from gge.benchmarks.hosts import Host
from gge.errors import GgeError, unknown_name
from gge.types import Box, Sample

FOLDER = "gui_grounding"
PLATFORMS = ("web", "desktop", "mobile")
SOURCES = (
    "omniact",
    "motif",
    "mind2web_test_domain",
    "mind2web_test_task",
    "mind2web_test_website",
    "screenspot",
    "agent_studio",
)
INSTRUCTIONS = {"recaptioned": "metadata_1k.jsonl", "raw": "metadata_raw_1k.jsonl"}
EDGES = ("excluded", "included")


@dataclass
class GroundUIOptions(BenchmarkOptions):
    """Options of GroundUI (``bench.groundui_1k.<option>=``).

    Attributes:
        instructions: ``recaptioned`` (``metadata_1k.jsonl``, the benchmark) or ``raw``
            (``metadata_raw_1k.jsonl``: the raw instructions, an ablation; not the official headline).
        edges: ``excluded`` (the official strict rule) or ``included`` (gge's variant, as every other
            set scores; not the official headline).
    """

    instructions: str = "recaptioned"
    edges: str = "excluded"

    NOT_PREDICTIVE: ClassVar[tuple[str, ...]] = (*BenchmarkOptions.NOT_PREDICTIVE, "edges")
    """``edges`` changes how the answers are scored, not what is asked: a rerun rescores them."""


METADATA = ("metadata_1k.jsonl", "metadata_raw_1k.jsonl", "metadata.jsonl", "metadata_raw.jsonl")
"""Every metadata file of the release folder."""


def gui_grounding(root: Path) -> Path:
    """The folder holding the metadata files: ``root/gui_grounding``, else ``root`` where it holds one."""
    nested = root / FOLDER
    if nested.is_dir() or not any((root / name).is_file() for name in METADATA):
        return nested
    return root


def _tarball(folder: str, copy: str) -> Host:
    """The release's host: agent-studio's Google Drive tarball, fetched by hand."""
    return Host(
        "manual",
        "agent-studio's Google Drive",
        None,
        "",
        (),
        note=(
            "download the gui_grounding tarball linked from computer-agents/agent-studio's README "
            f"(eval_agent_desiderata) and unpack its gui_grounding/ folder into DIR/{folder}; the Hub "
            f"parquet agent-studio/{copy} is not read by gge"
        ),
    )


class GroundUI1K(Benchmark):
    """GroundUI-1K: 400 web, 300 desktop and 300 mobile screenshots' targets, edges excluded."""

    name = "groundui_1k"
    title = "GroundUI-1K"
    directory = "groundui_1k"
    host = _tarball("groundui_1k", "GroundUI-1K")
    label_keys = ("platform", "source")
    options_type = GroundUIOptions
    tables = (
        TableSpec("By platform", rows="platform", row_order=PLATFORMS),
        TableSpec("By source", rows="source", row_order=SOURCES),
    )

    files: ClassVar[Mapping[str, str]] = INSTRUCTIONS
    """The metadata file of each ``instructions`` value."""

    def _options(self, options: BenchmarkOptions) -> GroundUIOptions:
        """The run's options, checked (plain :class:`BenchmarkOptions`: the defaults)."""
        instructions = str(getattr(options, "instructions", "recaptioned"))
        edges = str(getattr(options, "edges", "excluded"))
        if instructions not in self.files:
            raise unknown_name(f"{self.name} instructions", instructions, list(self.files))
        if edges not in EDGES:
            raise unknown_name(f"{self.name} edges", edges, list(EDGES))
        return GroundUIOptions(instructions=instructions, edges=edges)

    def headline_caveat(self, options: BenchmarkOptions) -> str | None:
        """Where the run's options are gge's variants: the raw instructions, or the edges included."""
        opts = self._options(options)
        said = []
        if opts.instructions != "recaptioned":
            said.append(
                f"the {opts.instructions} instructions ({self.files[opts.instructions]}), an ablation"
            )
        if opts.edges != "excluded":
            said.append("the box's edges included (the official scorer excludes them)")
        return "; ".join(said) or None

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read the metadata file (see the module docstring).

        Args:
            root: The benchmark folder (or its ``gui_grounding/`` folder).
            options: :class:`GroundUIOptions`.

        Returns:
            The samples and the load summary.
        """
        opts = self._options(options)
        require_root(root, self.name)
        base = gui_grounding(root)
        path = base / self.files[opts.instructions]
        require_files([path], name=self.name)
        out = LoadCollector(self.name, root)
        where_file = str(out.file(path))
        strict = opts.edges == "excluded"
        for lineno, rec in read_jsonl(path):
            where = f"{where_file}:{lineno}"
            out.add(self._sample(base, rec, str(lineno - 1), where, strict), where)
        variant = {"instructions": opts.instructions, "edges": opts.edges}
        return out.result(variant)

    def _sample(self, base: Path, rec: Any, sid: str, where: str, strict: bool) -> Sample:
        """One line as a sample; a line at fault raises naming the file, the line and the field."""
        if not isinstance(rec, Mapping):
            raise GgeError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        name = require_str(rec, "image", where=where, sample_id=sid)
        image = resolve_image(base / "images", name, where=where, sample_id=sid)
        x1, y1, x2, y2 = require_numbers(rec, "bbox", 4, where=where, sample_id=sid)
        platform = require_str(rec, "platform", where=where, sample_id=sid)
        return Sample(
            benchmark=self.name,
            id=sid,
            image_path=image,
            image_size=require_size(rec, "resolution", where=where, sample_id=sid),
            instruction=require_str(rec, "instruction", where=where, sample_id=sid),
            region=Box(x1, y1, x2, y2, strict=strict),
            labels={"platform": platform, "source": require_str(rec, "source", where=where, sample_id=sid)},
        )


class GroundUI18K(GroundUI1K):
    """GroundUI-18K: the 18,026-line set, read by the same loader (``metadata.jsonl``)."""

    name = "groundui_18k"
    title = "GroundUI-18K"
    directory = "groundui_18k"
    host = _tarball("groundui_18k", "GroundUI-18K")
    files: ClassVar[Mapping[str, str]] = {"recaptioned": "metadata.jsonl", "raw": "metadata_raw.jsonl"}
