"""CAGUI grounding: Fun2Point (cap.jsonl) and Text2Point (ocr.jsonl); headline = mean of the two.

Layout (FORMATS.md, section 9; the root is ``CAGUI_grounding/``, or a folder holding it)::

    CAGUI_grounding/
      code/cap.jsonl  code/ocr.jsonl          # 1500 lines each
      images/cap/<n>.jpeg  images/ocr/<n>.jpeg

A record's ``image`` is relative to AgentCPM-GUI's ``eval/`` folder: the prefix
``grounding_eval/dataset/images/`` is mapped to ``images/cap/`` for cap.jsonl and to ``images/`` for
ocr.jsonl (whose paths go on with ``ocr/<n>.jpeg``); a path without that prefix is refused. The box is
``abs_position``, the string ``"<x1, y1, x2, y2>"`` in integer pixels, tested with inclusive edges as the
official scripts do. The record's ``id`` is not unique, so ids are ``fun2point_<line>`` and
``text2point_<line>`` (the 0-based line number). The image size is read from the image header; for a
screenshot that is not there it is ``abs_position / rel_position`` (the largest coordinate of each axis),
when the record has ``rel_position``.

The instruction is the record's ``text``, as the official prompts put it in (AgentCPM-GUI
``eval/grounding_eval/code/*/``): Fun2Point asks for the element whose function description is ``text``
(a Chinese sentence), Text2Point for the element showing ``text`` (ocr line 416's text is empty: it is
kept, as the official denominator keeps it). The third subtask, Bbox2Text (ocr.jsonl, box -> text),
answers with text, not a point: it is not evaluated, so gge's headline (the mean of the two point
subtasks) is not the published average (the mean of three).

The official scripts (OpenBMB/AgentCPM-GUI @ acbaf509, ``eval/grounding_eval/code/*/``) test the
mapped point as a float, never int-ed (minicpm, UI-TARS and OS-Atlas compute ``bbox[0] / 1000 * w``
and test ``gt_x_min <= x <= gt_x_max``; the Qwen2.5-VL and GPT-4o scripts accept only integer answers),
so the point is tested as given (unlike showdown-clicks, whose scorer takes an int pixel point).

Example:
    >>> parse_position("<1, 2, 30, 40>", where="cap.jsonl:1", key="abs_position", number=int)
    (1, 2, 30, 40)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from gge.benchmarks.base import (
    UNKNOWN_SIZE,
    Average,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    image_size_from_header,
    read_jsonl,
    require_files,
    require_root,
    require_str,
    resolve_image,
)
from gge.benchmarks.hosts import Host
from gge.benchmarks.images import image_exists
from gge.errors import GgeError
from gge.types import Box, Sample

FOLDER = "CAGUI_grounding"
RECORD_PREFIX = "grounding_eval/dataset/images/"
SUBTASKS: dict[str, tuple[str, str]] = {
    "fun2point": ("cap.jsonl", "images/cap/"),
    "text2point": ("ocr.jsonl", "images/"),
}
"""Subtask -> (annotation file under code/, what the record prefix maps to)."""
BBOX2TEXT_NOTE = (
    "bbox2text answers with text, not a point: not evaluated; the official average is the mean of three "
    "subtasks, gge's headline is the mean of the two point subtasks: not comparable to the published average"
)
HEADLINE_CAVEAT = (
    "the mean of Fun2Point and Text2Point; the published average also includes Bbox2Text (a text answer, "
    "not evaluated)"
)
_NUM = r"\s*([+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*"
_POSITION = re.compile(rf"<{_NUM},{_NUM},{_NUM},{_NUM}>")
_INT = re.compile(r"[+-]?\d+")
N = TypeVar("N", int, float)


def parse_position(text: Any, *, where: str, key: str, number: Callable[[str], N]) -> tuple[N, N, N, N]:
    """The four numbers of a ``"<x1, y1, x2, y2>"`` string, parsed strictly.

    Args:
        text: The field's value.
        where: ``file:line`` for the message.
        key: The field name, for the message.
        number: ``int`` (every value must be an integer) or ``float``.

    Returns:
        (x1, y1, x2, y2).

    Raises:
        GgeError: for anything but four comma-separated numbers in angle brackets.
    """
    m = _POSITION.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None or (number is int and not all(_INT.fullmatch(v) for v in m.groups())):
        kind = "integers" if number is int else "numbers"
        raise GgeError(f"{where}: field '{key}' must be '<x1, y1, x2, y2>' with four {kind}, got {text!r}")
    a, b, c, d = (number(v) for v in m.groups())
    return a, b, c, d


def cagui_root(root: Path) -> Path:
    """The ``CAGUI_grounding`` folder: ``root``, or ``root/CAGUI_grounding`` when only it has ``code/``.

    Args:
        root: The folder given.

    Returns:
        The folder holding ``code/`` and ``images/``.
    """
    if not (root / "code").is_dir() and (root / FOLDER / "code").is_dir():
        return root / FOLDER
    return root


def mapped_image(record_path: str, subtask: str, *, where: str) -> str:
    """The record's image path relative to the dataset root (FORMATS.md, section 9).

    Args:
        record_path: The record's ``image``.
        subtask: ``fun2point`` or ``text2point``.
        where: ``file:line`` for the message.

    Returns:
        The mapped relative path (``images/cap/0.jpeg``, ``images/ocr/0.jpeg``).

    Example:
        >>> mapped_image("grounding_eval/dataset/images/ocr/7.jpeg", "text2point", where="x")
        'images/ocr/7.jpeg'
    """
    if not record_path.startswith(RECORD_PREFIX):
        raise GgeError(f"{where}: field 'image' does not start with '{RECORD_PREFIX}': {record_path!r}")
    return SUBTASKS[subtask][1] + record_path[len(RECORD_PREFIX) :]


def size_from_positions(
    absolute: tuple[int, int, int, int], relative: tuple[float, float, float, float]
) -> tuple[int, int] | None:
    """The image size as ``abs / rel`` on the largest coordinate of each axis (None when it is 0).

    Example:
        >>> size_from_positions((10, 20, 540, 1200), (0.01, 0.01, 0.5, 0.5))
        (1080, 2400)
    """
    out: list[int] = []
    for axis in (0, 1):  # x: coordinates 0 and 2; y: 1 and 3
        a, r = max((absolute[axis], relative[axis]), (absolute[axis + 2], relative[axis + 2]))
        if a <= 0 or r <= 0:
            return None
        out.append(round(a / r))
    return out[0], out[1]


class CAGUIGrounding(Benchmark):
    """CAGUI grounding: 1500 Fun2Point and 1500 Text2Point samples on Chinese mobile apps."""

    name = "cagui_grounding"
    title = "CAGUI grounding"
    directory = "cagui_grounding"
    host = Host(
        "hub",
        "openbmb/CAGUI",
        None,
        "",
        ("CAGUI_grounding/code/*.jsonl", "CAGUI_grounding/images/*"),
        note="CAGUI_agent/ (847 MB of the repository's 1.4 GB) is not fetched",
        licence="cc-by-nc-4.0",
    )
    label_keys = ("subtask",)
    official = Average("macro_subtask", ("subtask",))
    tables = (TableSpec("By subtask", rows="subtask", row_order=tuple(SUBTASKS)),)

    def headline_caveat(self, options: BenchmarkOptions) -> str | None:
        """Always: the published average is the mean of three subtasks, gge's of the two point ones."""
        return HEADLINE_CAVEAT

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read code/cap.jsonl and code/ocr.jsonl (see the module docstring).

        Args:
            root: ``CAGUI_grounding/``, or a folder holding it.
            options: Common options (none specific).

        Returns:
            The samples and the load summary (its notes say Bbox2Text is left out).
        """
        require_root(root, self.name)
        base = cagui_root(root)
        paths = {subtask: base / "code" / file for subtask, (file, _) in SUBTASKS.items()}
        require_files(paths.values(), name=self.name)
        out = LoadCollector(self.name, root)
        empty: list[str] = []
        from_positions = 0
        for subtask, path in paths.items():
            where_file = str(out.file(path))
            for lineno, rec in read_jsonl(path):
                where = f"{where_file}:{lineno}"
                sid = f"{subtask}_{lineno - 1}"
                sample, sized = self._sample(base, subtask, rec, sid, where)
                from_positions += sized
                if not sample.instruction.strip():
                    empty.append(sid)
                out.add(sample, where)
        out.notes.append(BBOX2TEXT_NOTE)
        if empty:
            out.notes.append(
                f"{len(empty)} samples with an empty text (kept, as the official scripts keep them): "
                + ", ".join(empty[:20])
            )
        if from_positions:
            out.notes.append(f"{from_positions} image sizes from abs_position / rel_position (no screenshot)")
        return out.result()

    def _sample(self, base: Path, subtask: str, rec: Any, sid: str, where: str) -> tuple[Sample, bool]:
        """One record as a sample, and whether its size came from the positions."""
        if not isinstance(rec, Mapping):
            raise GgeError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        relative = mapped_image(require_str(rec, "image", where=where, sample_id=sid), subtask, where=where)
        image = resolve_image(base, relative, where=where, sample_id=sid)
        if "abs_position" not in rec:
            raise GgeError(f"{where}: record {sid} has no field 'abs_position'")
        x1, y1, x2, y2 = parse_position(rec["abs_position"], where=where, key="abs_position", number=int)
        rel = None
        if "rel_position" in rec:
            rel = parse_position(rec["rel_position"], where=where, key="rel_position", number=float)
        size = image_size_from_header(image, where=where, sample_id=sid)
        sized = False
        if size == UNKNOWN_SIZE and rel is not None and not image_exists(image):
            guess = size_from_positions((x1, y1, x2, y2), rel)
            if guess is not None:
                size, sized = guess, True
        sample = Sample(
            benchmark=self.name,
            id=sid,
            image_path=image,
            image_size=size,
            instruction=require_str(rec, "text", where=where, sample_id=sid),
            region=Box(x1, y1, x2, y2),
            labels={"subtask": subtask},
        )
        return sample, sized
