"""The published log formats gge reads, each into :class:`~gge.models.imported.lines.LogLine`.

- ``sspro_log``: the official ScreenSpot-Pro script's ``--log_path`` JSON
  (likaixin2000/ScreenSpot-Pro-GUI-Grounding, ``eval_screenspot_pro.py`` and
  ``eval_screenspot_pro_parallel.py``, read at bd8bbbb): ``{"details": [...], "metrics": {...}}``,
  one record per sample with ``id`` (absent before commit 7e6cc78 and from the parallel script),
  ``img_path``, ``prompt_to_evaluate``, ``gt_type``, ``bbox`` (x1, y1, x2, y2 pixels, positives only),
  ``pred`` (original pixels or null), ``raw_response`` and ``correctness`` (``correct``, ``wrong``,
  ``wrong_format``). The same reader takes its variants: the same records one per line (OmniParser's
  ``eval/logs_sspro_omniv2.json``, with ``idx``), forks' renamed keys (``image_path``, ``language``,
  ``gt_bbox``), and the MAI-UI evaluation's outputs (Tongyi-MAI/MAI-UI ``evaluation/grounding``, read
  at 4dd07b9: ``eval_local.py`` writes this JSON; ``eval_server.py`` writes JSONL lines of the input
  annotation, ``img_filename``, ``instruction``, ``bbox``, plus ``pred``, ``pred_norm``, ``raw_response``
  and ``correctness`` with ``incorrect`` for a miss).
- ``gelato``: Gelato's ``evaluation/run_grounding_eval.py`` log (mlfoundations/Gelato, read at
  1f83dad): ``{"accuracy", "correct", "total", ..., "sample_results": [...], "metadata": {...}}``, each
  result with ``img_filename``, ``instruction``, ``response``, ``is_correct``, ``predicted_click``
  (original pixels or null), ``error_msg`` and ``bbox`` (x1, y1, x2, y2 pixels, a flat polygon, or
  ``[0, 0, 0, 0]`` for a refusal item); no sample id. A response containing "refusal" with no click
  is the model's refusal.

- ``clawgui``: ClawGUI-Eval's ``predictions.jsonl`` or ``predictions_judge.jsonl`` (ZJU-REAL/ClawGUI
  ``clawgui-eval``, read at d990d3e): each line the input sample (``id``, ``question``, ``answer``:
  x1, y1, x2, y2 pixels or a flat polygon, ``image``, ``image_size``) plus the raw answer under
  ``<model_type>_infer`` and, once judged, ``correct`` (and on OSWorld-G ``counted_in_accuracy``). It
  keeps no parsed point: its answers are read with ``--preset``/``--convention``.

Every other format's point is in the screenshot's original pixels, as these logs store it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gge.benchmarks.screenspot_pro import NEGATIVE_SUFFIX
from gge.errors import GgeError
from gge.models.imported.lines import LogLine

_KEPT = ("gt_type", "ui_type", "lang", "language", "instruction_style")
"""Fields of a ScreenSpot-Pro script record kept beside the line (what was asked)."""
_VERDICTS = {"correct": True, "wrong": False, "incorrect": False, "wrong_format": False}


def utf8_text(path: Path, encoding: str = "utf-8") -> str:
    """A file's text, or one line naming the file and the first byte that is not UTF-8.

    Args:
        path: The file.
        encoding: ``utf-8``, or ``utf-8-sig`` to drop a byte-order mark (spreadsheet exports).

    Returns:
        The text.

    Raises:
        GgeError: The file is not UTF-8.
    """
    try:
        return path.read_bytes().decode(encoding)
    except UnicodeDecodeError as e:
        raise GgeError(f"{path}: not UTF-8 text (byte {e.start})") from None


def read_log_text(path: Path, encoding: str = "utf-8") -> str:
    """A log file's text: refused in one line when missing, not UTF-8 or empty.

    Args:
        path: The log file.
        encoding: As :func:`utf8_text`.

    Returns:
        The text.

    Raises:
        GgeError: naming the file and what is wrong with it.
    """
    if not path.is_file():
        raise GgeError(f"{path}: no such log file")
    text = utf8_text(path, encoding)
    if not text.strip():
        raise GgeError(f"{path}: the log is empty")
    return text


def json_records(path: Path) -> tuple[Any, list[tuple[int, Any]] | None]:
    """The file's one JSON value, or its JSON lines as ``(line, value)`` when it is JSONL."""
    text = read_log_text(path)
    try:
        return json.loads(text), None
    except json.JSONDecodeError:
        pass
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            raise GgeError(f"{path}:{n}: neither one JSON document nor JSON lines: {e.msg}") from None
    return None, out


def _pick(record: Mapping[str, Any], *keys: str) -> tuple[str, Any]:
    """The first of ``keys`` the record has and its value (the first key and None when it has none)."""
    for key in keys:
        if key in record:
            return key, record[key]
    return keys[0], None


def _point(value: Any, key: str, where: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    ):
        raise GgeError(f"{where}: {key} must be [x, y] (two finite numbers) or null, got {value!r:.80}")
    return (float(value[0]), float(value[1]))


def _box(value: Any, key: str, where: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list | tuple)
        or len(value) < 4
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    ):
        raise GgeError(f"{where}: {key} must be a list of at least 4 finite numbers, got {value!r:.80}")
    return tuple(float(v) for v in value)


def text_field(value: Any, key: str, where: str) -> str | None:
    """A record's text field, or None where it has none; anything else is refused naming ``where``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise GgeError(f"{where}: {key} must be a string, got {value!r:.80}")
    return value


def raw_text(value: Any) -> str:
    """The model's answer as text: a string as it is, any other JSON value written as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _sspro_line(record: Any, where: str, line: int) -> LogLine:
    if not isinstance(record, dict):
        raise GgeError(f"{where}: a record must be a JSON object, got {record!r:.60}")
    if "correctness" not in record:
        raise GgeError(f"{where}: no 'correctness' (the official ScreenSpot-Pro script's verdict)")
    verdict = record["correctness"]
    if not isinstance(verdict, str) or verdict not in _VERDICTS:
        raise GgeError(f"{where}: correctness must be one of {', '.join(_VERDICTS)}, got {verdict!r:.40}")
    ident = record.get("id")
    gt_type = record.get("gt_type", "positive")
    point = _point(record.get("pred"), "pred", where)
    image_key, image = _pick(record, "img_path", "image_path", "img_filename")
    instruction_key, instruction = _pick(record, "prompt_to_evaluate", "instruction")
    box_key, box = _pick(record, "bbox", "gt_bbox")
    negative = gt_type == "negative"
    return LogLine(
        where=where,
        line=line,
        # the script keeps a record's id on both of its copies; gge's negative copy is <id>_negative
        id=None if ident is None else str(ident) + (NEGATIVE_SUFFIX if negative else ""),
        image=text_field(image, image_key, where),
        instruction=text_field(instruction, instruction_key, where),
        box=_box(box, box_key, where),
        point=point,
        raw=raw_text(record.get("raw_response")),
        correct=_VERDICTS[verdict],
        format_error=verdict == "wrong_format",
        refused=negative and verdict == "correct",
        fields={k: record[k] for k in _KEPT if k in record},
    )


def read_sspro_log(path: Path) -> list[LogLine]:
    """The official ScreenSpot-Pro script's log and its variants (module docstring).

    Args:
        path: The log file (JSON with ``details``, or JSON lines of the same records).

    Returns:
        Its lines in file order.

    Raises:
        GgeError: naming the file, the line or record, and the key at fault.
    """
    whole, jsonl = json_records(path)
    if isinstance(whole, dict) and "correctness" in whole:  # a one-line JSONL log
        jsonl = [(1, whole)]
    if jsonl is not None:
        return [_sspro_line(r, f"{path}:{n}", n) for n, r in jsonl]
    if isinstance(whole, dict) and isinstance(whole.get("details"), list):
        return [_sspro_line(r, f"{path}: details[{i}]", i + 1) for i, r in enumerate(whole["details"])]
    if isinstance(whole, list):
        return [_sspro_line(r, f"{path}: [{i}]", i + 1) for i, r in enumerate(whole)]
    raise GgeError(f"{path}: not a ScreenSpot-Pro script log (a JSON object with 'details', or its records)")


def read_gelato(path: Path) -> list[LogLine]:
    """A Gelato grounding evaluation log (module docstring).

    Args:
        path: The ``grounding_eval_*.json`` file.

    Returns:
        Its ``sample_results`` in file order.

    Raises:
        GgeError: naming the file, the record and the key at fault.
    """
    whole, jsonl = json_records(path)
    if jsonl is not None or not isinstance(whole, dict) or not isinstance(whole.get("sample_results"), list):
        raise GgeError(f"{path}: not a Gelato log (a JSON object with 'sample_results')")
    out = []
    for i, record in enumerate(whole["sample_results"]):
        where = f"{path}: sample_results[{i}]"
        if not isinstance(record, dict):
            raise GgeError(f"{where}: a result must be a JSON object, got {record!r:.60}")
        for key in ("img_filename", "instruction", "is_correct"):
            if key not in record:
                raise GgeError(f"{where}: no {key!r}")
        if not isinstance(record["is_correct"], bool):
            raise GgeError(f"{where}: is_correct must be true or false, got {record['is_correct']!r:.40}")
        point = _point(record.get("predicted_click"), "predicted_click", where)
        response = raw_text(record.get("response"))
        refused = point is None and "refusal" in response.lower()
        out.append(
            LogLine(
                where=where,
                line=i + 1,
                id=None,
                image=text_field(record["img_filename"], "img_filename", where),
                instruction=text_field(record["instruction"], "instruction", where),
                box=_box(record.get("bbox"), "bbox", where),
                point=point,
                raw=response,
                correct=record["is_correct"],
                format_error=point is None and not refused,
                refused=refused,
                fields=_resized(record, where),
            )
        )
    return out


def read_clawgui(path: Path) -> list[LogLine]:
    """ClawGUI-Eval's predictions, judged or not (module docstring); the points are read from raw text.

    Args:
        path: ``predictions.jsonl`` or ``predictions_judge.jsonl`` (or its ``.json`` list).

    Returns:
        Its lines in file order, each without a point (:attr:`LogLine.point` None).

    Raises:
        GgeError: naming the file, the line and the key at fault.
    """
    whole, jsonl = json_records(path)
    if isinstance(whole, dict) and any(k.endswith("_infer") for k in whole):  # a one-line JSONL file
        jsonl = [(1, whole)]
    if jsonl is None:
        if not isinstance(whole, list):
            raise GgeError(f"{path}: not a ClawGUI-Eval predictions file (JSON lines, or a JSON list)")
        jsonl = [(i + 1, r) for i, r in enumerate(whole)]
    out = []
    for n, record in jsonl:
        where = f"{path}:{n}"
        if not isinstance(record, dict):
            raise GgeError(f"{where}: a line must be a JSON object, got {record!r:.60}")
        raw_keys = [k for k in record if k.endswith("_infer")]
        if len(raw_keys) != 1:
            raise GgeError(f"{where}: expected one '<model_type>_infer' answer, found {raw_keys or 'none'}")
        correct = record.get("correct")
        if correct is not None and not isinstance(correct, bool):
            raise GgeError(f"{where}: correct must be true or false, got {correct!r:.40}")
        counted = record.get("counted_in_accuracy", True)
        if not isinstance(counted, bool):
            raise GgeError(f"{where}: counted_in_accuracy must be true or false, got {counted!r:.40}")
        out.append(
            LogLine(
                where=where,
                line=n,
                id=None if record.get("id") is None else str(record["id"]),
                image=text_field(record.get("image"), "image", where),
                instruction=text_field(record.get("question"), "question", where),
                box=_box(record.get("answer"), "answer", where),
                point=None,
                raw=raw_text(record[raw_keys[0]]),
                correct=correct,
                counted=counted,
                fields={"needs_reading": True},
            )
        )
    return out


def _resized(record: Mapping[str, Any], where: str) -> dict[str, object]:
    """A Gelato result's ``resized_resolution`` (the frame of its pixel answers), checked."""
    if record.get("resized_resolution") is None:
        return {}
    value = record["resized_resolution"]
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise GgeError(
            f"{where}: resized_resolution must be [width, height] (positive integers), got {value!r:.60}"
        )
    return {"resized": value}


FORMATS: dict[str, Callable[[Path], list[LogLine]]] = {
    "sspro_log": read_sspro_log,
    "gelato": read_gelato,
    "clawgui": read_clawgui,
}
"""The formats ``gge import`` reads, by name."""
