"""Two general harnesses' per-sample files, read into :class:`~gge.models.imported.lines.LogLine`.

Neither keeps a parsed point, so their answers are read with ``--preset``/``--convention``:

- ``vlmevalkit``: VLMEvalKit's prediction file (open-compass/VLMEvalKit, ``vlmeval/inference.py`` and
  ``vlmeval/dataset/GUI/``, read at e8e78f0): ``<model>_<dataset>.xlsx`` (the default; ``PRED_FORMAT``
  may make it ``.tsv`` or ``.json``), the dataset's table without its base64 ``image`` column plus the
  raw ``prediction``: ``index`` (a row number within that dataset), ``image_path``, ``question``,
  ``bbox`` (a list written as text: ``[x, y, w, h]`` pixels for ScreenSpot v1/v2 and OSWorld-G,
  ``[x1, y1, x2, y2]`` for ScreenSpot-Pro, read per benchmark by :func:`settle_boxes`). It records no
  verdict (its scores go to ``_score.json``); ScreenSpot-Pro is six datasets, one file each.
- ``lmms_eval``: lmms-eval's ``--log_samples`` file ``<date>_samples_<task>.jsonl``
  (EvolvingLMMs-Lab/lmms-eval, ``lmms_eval/loggers/evaluation_tracker.py`` and
  ``lmms_eval/tasks/screenspot_pro``, read at 75571cf): one line per document, ``doc_id`` (its row in
  the task's Hub split), ``target`` (the instruction), ``filtered_resps`` (the model's text; a
  one-element list before flattening), and one key per metric holding ``{"correct": bool, ...}``. No
  screenshot, box or point: a line is matched by its instruction, ``doc_id`` choosing among samples
  that share it only where the loaded samples are in the split's order
  (:func:`~gge.models.imported.lines.match_lines`).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gge.errors import GgeError
from gge.models.imported.formats import json_records, raw_text, text_field
from gge.models.imported.lines import LogLine

__all__ = ["read_lmms_eval", "read_vlmevalkit", "settle_boxes"]

XYXY_BENCHMARKS = ("screenspot_pro",)
"""The benchmarks whose VLMEvalKit ``bbox`` is corners; every other one's is ``[x, y, w, h]``."""


def _xlsx_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows of an xlsx file's first sheet under its header row, numbered as the sheet numbers them."""
    try:
        import openpyxl
    except ImportError:
        raise GgeError(
            f"{path}: reading .xlsx needs openpyxl (pip install 'gge[xlsx]'), or have VLMEvalKit write "
            "PRED_FORMAT=tsv"
        ) from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises zipfile, KeyError and its own errors for a bad file
        raise GgeError(f"{path}: not an xlsx workbook ({type(e).__name__}: {e})") from None
    try:
        rows = book.worksheets[0].iter_rows(values_only=True)
        header = next(rows, None)
        if header is None:
            raise GgeError(f"{path}: the sheet is empty")
        names = ["" if h is None else str(h) for h in header]
        out = []
        for n, values in enumerate(rows, start=2):
            if all(v is None for v in values):
                continue
            out.append((n, {name: value for name, value in zip(names, values, strict=False) if name}))
        return out
    finally:
        book.close()


def _table_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """A VLMEvalKit prediction file's rows: xlsx, TSV, or JSON (records, JSON lines, or pandas' columns)."""
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        return _xlsx_rows(path)
    if suffix in (".tsv", ".csv"):
        from gge.models.imported.generic import table_rows

        return [(n, dict(row)) for n, row in table_rows(path)]
    whole, jsonl = json_records(path)
    if jsonl is not None:
        rows = jsonl
    elif isinstance(whole, list):
        rows = list(enumerate(whole, start=1))
    elif isinstance(whole, dict) and whole and all(isinstance(v, dict) for v in whole.values()):
        # pandas' to_json default: {column: {row: value}}
        keys = list(next(iter(whole.values())))
        rows = [(i + 1, {col: whole[col].get(key) for col in whole}) for i, key in enumerate(keys)]
    elif isinstance(whole, dict):  # JSON lines of one row read as one document
        rows = [(1, whole)]
    else:
        raise GgeError(f"{path}: not a VLMEvalKit prediction file (xlsx, tsv, or a JSON table)")
    for n, row in rows:
        if not isinstance(row, dict):
            raise GgeError(f"{path}:{n}: a row must be a JSON object, got {row!r:.60}")
    return rows


def _literal_box(value: Any, where: str) -> tuple[float, ...] | None:
    """VLMEvalKit's ``bbox`` cell: a list, or a list written as text (``"[1, 2, 3, 4]"``)."""
    if value is None or value == "":
        return None
    written = value
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise GgeError(f"{where}: bbox must be a list of 4 numbers, got {written!r:.60}") from None
    if (
        not isinstance(value, list | tuple)
        or len(value) != 4
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise GgeError(f"{where}: bbox must be a list of 4 numbers, got {written!r:.60}")
    return tuple(float(v) for v in value)


def read_vlmevalkit(path: Path) -> list[LogLine]:
    """A VLMEvalKit prediction file (module docstring); the points are read from ``prediction``.

    Args:
        path: ``<model>_<dataset>.xlsx`` (or ``.tsv``/``.json``).

    Returns:
        Its rows as lines, without a point; the ``bbox`` kept as written until
        :func:`settle_boxes` knows the benchmark.

    Raises:
        GgeError: naming the file, the row and the column at fault.
    """
    out = []
    for n, row in _table_rows(path):
        where = f"{path}:{n}"
        for key in ("question", "prediction"):
            if key not in row:
                raise GgeError(f"{where}: no column {key!r} (a VLMEvalKit prediction file has it)")
        image, question = row.get("image_path"), row["question"]
        out.append(
            LogLine(
                where=where,
                line=n,
                id=None,
                image=None if image in (None, "") else str(image),
                instruction=None if question in (None, "") else str(question),
                box=None,
                point=None,
                raw=raw_text(row["prediction"]),
                correct=None,
                fields={"needs_reading": True, "bbox_as_written": _literal_box(row.get("bbox"), where)},
            )
        )
    if not out:
        raise GgeError(f"{path}: no row")
    return out


def settle_boxes(lines: Sequence[LogLine], benchmark: str) -> list[LogLine]:
    """Each line's box in corners, where its format writes it per benchmark (VLMEvalKit's ``bbox``).

    Example:
        >>> line = LogLine("f:2", 2, None, "a.png", "x", None, None, "", None,
        ...                fields={"bbox_as_written": (10.0, 20.0, 5.0, 5.0)})
        >>> settle_boxes([line], "screenspot_v2")[0].box, settle_boxes([line], "screenspot_pro")[0].box
        ((10.0, 20.0, 15.0, 25.0), (10.0, 20.0, 5.0, 5.0))
    """
    from dataclasses import replace

    out = []
    for line in lines:
        written = line.fields.get("bbox_as_written")
        if isinstance(written, tuple) and line.box is None:
            x, y, a, b = (float(v) for v in written)
            box = (x, y, a, b) if benchmark in XYXY_BENCHMARKS else (x, y, x + a, y + b)
            line = replace(line, box=box)
        out.append(line)
    return out


def _verdict(record: dict[str, Any], where: str) -> bool | None:
    """The line's ``correct``, from its metric keys (each holds the same record), or None."""
    found = [
        (key, value["correct"])
        for key, value in record.items()
        if isinstance(value, dict) and "correct" in value and key not in ("doc",)
    ]
    if not found:
        return None
    for key, value in found:
        if not isinstance(value, bool):
            raise GgeError(f"{where}: {key}.correct must be true or false, got {value!r:.40}")
    verdicts = {v for _, v in found}
    if len(verdicts) > 1:
        raise GgeError(f"{where}: its metric records disagree on correct ({', '.join(k for k, _ in found)})")
    return bool(found[0][1])


def read_lmms_eval(path: Path) -> list[LogLine]:
    """lmms-eval's ``--log_samples`` file (module docstring); the points are read from ``filtered_resps``.

    Args:
        path: ``<date>_samples_<task>.jsonl``.

    Returns:
        Its lines, each with its instruction (``target``), ``doc_id`` as its position and its verdict.

    Raises:
        GgeError: naming the file, the line and the key at fault.
    """
    whole, jsonl = json_records(path)
    if jsonl is None:
        jsonl = [(1, whole)] if isinstance(whole, dict) else None
    if jsonl is None:
        raise GgeError(f"{path}: not an lmms-eval samples file (JSON lines with doc_id)")
    out = []
    for n, record in jsonl:
        where = f"{path}:{n}"
        if not isinstance(record, dict):
            raise GgeError(f"{where}: a line must be a JSON object, got {record!r:.60}")
        for key in ("doc_id", "target", "filtered_resps"):
            if key not in record:
                raise GgeError(f"{where}: no {key!r} (an lmms-eval --log_samples line has it)")
        doc_id = record["doc_id"]
        if not isinstance(doc_id, int) or isinstance(doc_id, bool) or doc_id < 0:
            raise GgeError(f"{where}: doc_id must be a row number (an integer >= 0), got {doc_id!r:.40}")
        answer = record["filtered_resps"]
        while isinstance(answer, list) and len(answer) == 1:  # [[text]] or [text] before flattening
            answer = answer[0]
        if isinstance(answer, list):
            raise GgeError(f"{where}: filtered_resps holds {len(answer)} answers; gge reads one per sample")
        out.append(
            LogLine(
                where=where,
                line=n,
                id=None,
                image=None,
                instruction=text_field(record["target"], "target", where),
                box=None,
                point=None,
                raw=answer if isinstance(answer, str) else json.dumps(answer),
                correct=_verdict(record, where),
                fields={"needs_reading": True, "position": doc_id},
            )
        )
    return out
