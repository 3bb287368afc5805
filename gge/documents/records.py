"""The per-sample record: one line of predictions.jsonl, written and read back by one codec.

:class:`PredictionRecord` is a line's fields; :func:`encode` writes a
:class:`~gge.types.SampleResult` as a line (the object :func:`json.dumps` writes) and
:func:`decode` reads one back, checking every field it knows and naming the file and line of the
first one at fault. The readers (replay, ``gge compare``, the resumable log) read lines through
:func:`decode` (the log, which only needs a line's key, through :func:`record_key`), never the JSON
keys themselves.

``predictions.jsonl`` is a valid replay file (``model=replay model.predictions=...``): re-scoring it
with another selection strategy or K needs no model. A replay file written by hand needs only the
replay fields (``benchmark``, ``id``, ``candidates``; ``scores``, ``raw``, ``format_error``...); the
outcome fields gge writes beside them (``hits``, ``top1``, ``picks``, ``image``, ``labels``) are None
in its records.

Example:
    >>> from gge.types import Candidate
    >>> from gge.types import SampleResult
    >>> r = SampleResult("b", "1", {}, 5, (Candidate((1.0, 2.0), 0.5),), (True,))
    >>> encode(r)["candidates"]
    [[1.0, 2.0]]
    >>> rec = decode(encode(r), "p.jsonl:1")
    >>> rec.candidates[0].point, rec.candidates[0].score, rec.hits
    ((1.0, 2.0), 0.5, (True,))
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gge.errors import GgeError
from gge.types import (
    STAGES,
    STRATEGIES,
    Absent,
    Box,
    Candidate,
    CostRecord,
    LabelValue,
    Point,
    Polygon,
    Prediction,
    Refinement,
    Region,
    SampleResult,
)

__all__ = [
    "UNPARSED",
    "PredictionRecord",
    "cost_json",
    "decode",
    "encode",
    "json_lines",
    "record_key",
    "target_json",
    "wire_point",
]

UNPARSED = "unparsed"
"""How predictions.jsonl writes the slot of an unparseable sampled answer (replay reads it back)."""


@dataclass(frozen=True)
class PredictionRecord:
    """One line of predictions.jsonl.

    Attributes:
        benchmark: Benchmark name.
        id: Native sample id (an integer id in a replay file is read as its string).
        candidates: The answers in proposer order, with the critic's scores; ``null`` (or a point
            with both coordinates negative) is an abstention, ``"unparsed"`` an unparseable answer.
        raw: The model's text.
        format_error: The model's answer was unparseable (or missing).
        truncated: The answer was cut by the token budget.
        image_error: Why the screenshot could not be read, or None.
        critic_raw: The critic's text.
        critic_format_error: The critic's answer was unparseable.
        hits: Whether each scored candidate hits (None: a replay file without outcomes).
        top1: Whether each selection strategy's pick hits (None: no outcomes).
        picks: Each strategy's pick: a candidate, or None for no pick (or an abstention, which the
            file writes as ``null`` too); None: no outcomes.
        image: The screenshot's path, or None (lines written before gge recorded it).
        labels: The sample's breakdown labels, or None (lines written before gge recorded them).
        costs: The cost ledger of the sample's model requests (``cost``: one object per request,
            its unknown counts left out); empty: none recorded.
        refine: The refine stage's answer (``refine``), or None.
        target: The sample's target with its official hit rule (``target``: ``{"box": [x1, y1, x2,
            y2]}`` with ``space``/``frame``/``integer_point``/``strict`` where they are not the default,
            ``{"polygon": [[x, y], ...]}``, or ``{"absent": true, "abstention_hits": ...}``), so a
            reader can score a pick that is no candidate (a vote on a subset); None: not recorded.
        size: The screenshot's (width, height) (``size``), or None.
        not_in_file: The replayed predictions file had no line for the sample (``not_in_file``:
            a miss counted apart from format errors).
        server_error: The sample's request failed for good (``server_error``: the server's last
            error, one line), or None; a resume asks the sample again.
        rescue: ``critic_rescue``: whether the critic picked the target's point put in among the
            candidates that all missed (``rescue``), or None: not asked.
    """

    benchmark: str
    id: str
    candidates: tuple[Candidate, ...]
    raw: str = ""
    format_error: bool = False
    truncated: bool = False
    image_error: str | None = None
    critic_raw: str = ""
    critic_format_error: bool = False
    hits: tuple[bool, ...] | None = None
    top1: Mapping[str, bool] | None = None
    picks: Mapping[str, Candidate | None] | None = None
    image: str | None = None
    labels: Mapping[str, LabelValue] | None = None
    costs: tuple[CostRecord, ...] = ()
    refine: Refinement | None = None
    target: Region | None = None
    size: tuple[int, int] | None = None
    not_in_file: bool = False
    server_error: str | None = None
    rescue: bool | None = None

    @classmethod
    def of(cls, r: SampleResult) -> PredictionRecord:
        """The record of a scored sample (what :func:`encode` writes)."""
        return cls(
            r.benchmark,
            r.id,
            r.candidates,
            raw=r.raw,
            format_error=r.format_error,
            truncated=r.truncated,
            image_error=r.image_error,
            critic_raw=r.critic_raw,
            critic_format_error=r.critic_format_error,
            hits=tuple(r.hits),
            top1=dict(r.top1),
            picks=dict(r.picks),
            image=r.image_path or None,
            labels=r.labels,
            costs=r.costs,
            refine=r.refine,
            target=r.region,
            size=r.image_size,
            not_in_file=r.not_in_file,
            server_error=r.server_error,
            rescue=r.rescue,
        )

    def to_json(self) -> dict[str, Any]:
        """The line's JSON object: the replay fields, then the outcome fields present."""
        rec: dict[str, Any] = {
            "benchmark": self.benchmark,
            "id": self.id,
            "candidates": [wire_point(c) for c in self.candidates],
        }
        if any(c.score is not None for c in self.candidates):
            rec["scores"] = [c.score for c in self.candidates]
        rec["raw"] = self.raw
        rec["format_error"] = self.format_error
        if self.truncated:
            rec["truncated"] = True
        if self.image_error is not None:
            rec["image_error"] = self.image_error
        if self.not_in_file:
            rec["not_in_file"] = True
        if self.server_error is not None:
            rec["server_error"] = self.server_error
        if self.rescue is not None:
            rec["rescue"] = self.rescue
        if self.critic_raw or self.critic_format_error:
            rec["critic_raw"] = self.critic_raw
            rec["critic_format_error"] = self.critic_format_error
        if self.hits is not None:
            rec["hits"] = list(self.hits)
        if self.image:
            rec["image"] = self.image
        if self.labels:
            rec["labels"] = {key: v if isinstance(v, str) else list(v) for key, v in self.labels.items()}
        if self.top1 is not None:
            rec["top1"] = dict(self.top1)
        if self.picks is not None:
            rec["picks"] = {name: wire_point(p) for name, p in self.picks.items()}
        if self.refine is not None:
            rec["refine"] = _refine_json(self.refine)
        if self.costs:
            rec["cost"] = [cost_json(c) for c in self.costs]
        if self.size is not None:
            rec["size"] = [self.size[0], self.size[1]]
        if self.target is not None:
            rec["target"] = target_json(self.target)
        return rec

    def prediction(self) -> Prediction:
        """The model's answer this line holds, as replay answers it."""
        return Prediction(
            self.benchmark,
            self.id,
            self.candidates,
            format_error=self.format_error,
            raw=self.raw,
            critic_format_error=self.critic_format_error,
            critic_raw=self.critic_raw,
            truncated=self.truncated,
            image_error=self.image_error,
            costs=self.costs,
            refine=self.refine,
            not_in_file=self.not_in_file,
            server_error=self.server_error,
            rescue=self.rescue,
        )


_COST_COUNTS = ("input_tokens", "image_tokens", "output_tokens", "cached_tokens")
_COST_TIMES = ("seconds", "prefill_seconds")
_COST_LAYOUT = ("batch_size", "slot", "candidates", "window")


def cost_json(c: CostRecord) -> dict[str, Any]:
    """How a line writes one request's cost: its stage and the counts it knows (None left out).

    Example:
        >>> cost_json(CostRecord("propose", input_tokens=90, seconds=0.25, candidates=5))
        {'stage': 'propose', 'input_tokens': 90, 'seconds': 0.25, 'batch_size': 1, 'slot': 0, 'candidates': 5}
    """
    out: dict[str, Any] = {"stage": c.stage}
    for key in (*_COST_COUNTS, *_COST_TIMES, *_COST_LAYOUT):
        value = getattr(c, key)
        if value is not None:
            out[key] = value
    return out


def target_json(region: Region) -> dict[str, Any]:
    """How a line writes a sample's target (its official hit rule kept).

    Example:
        >>> target_json(Box(1, 2, 3, 4)), target_json(Absent(abstention_hits=False))
        ({'box': [1, 2, 3, 4]}, {'absent': True, 'abstention_hits': False})
    """
    if isinstance(region, Box):
        out: dict[str, Any] = {"box": [region.x1, region.y1, region.x2, region.y2]}
        if region.space != "pixel":
            out["space"] = region.space
        if region.size is not None:
            out["frame"] = [region.size[0], region.size[1]]
        if region.integer_point:
            out["integer_point"] = True
        if region.strict:
            out["strict"] = True
        return out
    if isinstance(region, Polygon):
        return {"polygon": [[x, y] for x, y in region.vertices]}
    return {"absent": True, "abstention_hits": region.abstention_hits}


def _target(value: Any, where: str) -> Region | None:
    if value is None:
        return None
    bad = GgeError(f"{where}: field 'target' must be a box, polygon or absent target, got {value!r}")
    if not isinstance(value, dict):
        raise bad
    if "box" in value:
        box, frame, space = value["box"], value.get("frame"), value.get("space", "pixel")
        ok = isinstance(box, list) and len(box) == 4 and all(_number(v) for v in box)
        ok = ok and space in ("pixel", "normalized") and isinstance(value.get("integer_point", False), bool)
        ok = ok and isinstance(value.get("strict", False), bool)
        ok = ok and (
            frame is None or (isinstance(frame, list) and len(frame) == 2 and all(_int(v) for v in frame))
        )
        if not ok or (space == "normalized" and frame is None):
            raise bad
        x1, y1, x2, y2 = (float(v) for v in box)
        return Box(
            x1,
            y1,
            x2,
            y2,
            space="normalized" if space == "normalized" else "pixel",
            size=None if frame is None else (frame[0], frame[1]),
            integer_point=bool(value.get("integer_point", False)),
            strict=bool(value.get("strict", False)),
        )
    if "polygon" in value:
        vertices = value["polygon"]
        if not (
            isinstance(vertices, list)
            and all(isinstance(v, list) and len(v) == 2 and all(_number(x) for x in v) for v in vertices)
        ):
            raise bad
        return Polygon(tuple((float(v[0]), float(v[1])) for v in vertices))
    if value.get("absent") is True and isinstance(value.get("abstention_hits", True), bool):
        return Absent(abstention_hits=bool(value.get("abstention_hits", True)))
    raise bad


def _size(value: Any, where: str) -> tuple[int, int] | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(_int(v) and v > 0 for v in value)):
        raise GgeError(f"{where}: field 'size' must be [width, height] in whole pixels, got {value!r}")
    return (value[0], value[1])


def _refine_json(r: Refinement) -> dict[str, Any]:
    return {
        "base": r.base,
        "triggered": r.triggered,
        "point": None if r.point is None else [r.point[0], r.point[1]],
        "window": None if r.window is None else list(r.window),
        "raw": r.raw,
        "format_error": r.format_error,
    }


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _costs(value: Any, where: str) -> tuple[CostRecord, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise GgeError(f"{where}: field 'cost' must be a list of request costs, got {value!r}")
    out = []
    for i, item in enumerate(value):
        at = f"{where}: cost[{i}]"
        if not isinstance(item, dict):
            raise GgeError(f"{at} must be an object, got {item!r}")
        stage = item.get("stage")
        if stage not in STAGES:
            raise GgeError(f"{at}: 'stage' must be one of {', '.join(STAGES)}, got {stage!r}")
        fields: dict[str, Any] = {}
        for key in (*_COST_COUNTS, *_COST_LAYOUT):
            v = item.get(key)
            if v is not None and not (_int(v) and v >= 0):
                raise GgeError(f"{at}: '{key}' must be a whole number >= 0, got {v!r}")
            if v is not None:
                fields[key] = v
        for key in _COST_TIMES:
            v = item.get(key)
            if v is not None and not (_number(v) and v >= 0):
                raise GgeError(f"{at}: '{key}' must be a number of seconds >= 0, got {v!r}")
            if v is not None:
                fields[key] = float(v)
        try:
            out.append(CostRecord(stage, **fields))
        except ValueError as e:  # e.g. more cached tokens than input tokens
            raise GgeError(f"{at}: {e}") from None
    return tuple(out)


def _refinement(value: Any, where: str) -> Refinement | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise GgeError(f"{where}: field 'refine' must be an object, got {value!r}")
    base, triggered, raw = value.get("base", "critic"), value.get("triggered", False), value.get("raw", "")
    fmt = value.get("format_error", False)
    if not isinstance(raw, str):
        raise GgeError(f"{where}: refine 'raw' must be a string, got {raw!r}")
    if base not in STRATEGIES:
        raise GgeError(
            f"{where}: refine 'base' must be the selection strategy it refined ({', '.join(STRATEGIES)}), "
            f"got {base!r}"
        )
    if not isinstance(triggered, bool) or not isinstance(fmt, bool):
        raise GgeError(f"{where}: refine 'triggered' and 'format_error' must be true or false")
    window = value.get("window")
    if window is not None and not (
        isinstance(window, list) and len(window) == 4 and all(_number(v) for v in window)
    ):
        raise GgeError(f"{where}: refine 'window' must be [x1, y1, x2, y2] or null, got {window!r}")
    point = value.get("point")
    if point is not None and not (
        isinstance(point, list) and len(point) == 2 and all(_number(v) for v in point)
    ):
        raise GgeError(f"{where}: refine 'point' must be [x, y] or null, got {point!r}")
    return Refinement(
        base=base,
        triggered=triggered,
        point=None if point is None else (float(point[0]), float(point[1])),
        window=None
        if window is None
        else (float(window[0]), float(window[1]), float(window[2]), float(window[3])),
        raw=raw,
        format_error=fmt,
    )


def wire_point(c: Candidate | None) -> list[float] | str | None:
    """How a line writes a candidate or a pick: ``[x, y]``, ``"unparsed"``, or ``null`` (none, abstention)."""
    if c is not None and not c.parsed:
        return UNPARSED
    return None if c is None or c.point is None else [c.point[0], c.point[1]]


def encode(r: SampleResult) -> dict[str, Any]:
    """One line of predictions.jsonl: the replay fields plus the per-sample outcome.

    Args:
        r: The scored sample.

    Returns:
        The JSON object of the line (:meth:`PredictionRecord.to_json` of :meth:`PredictionRecord.of`).
    """
    return PredictionRecord.of(r).to_json()


# -- reading a line back ----------------------------------------------------------------------------
def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _point(value: Any, where: str, what: str = "a candidate") -> Point | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(_number(v) for v in value)):
        raise GgeError(
            f'{where}: {what} must be [x, y] with finite numbers, null or "unparsed"; got {value!r}'
        )
    x, y = float(value[0]), float(value[1])
    return None if x < 0 and y < 0 else (x, y)


def _candidate(value: Any, score: float | None, where: str, what: str = "a candidate") -> Candidate:
    if value == UNPARSED:
        return Candidate(None, score, parsed=False)
    return Candidate(_point(value, where, what), score)


def _pick(value: Any, where: str, strategy: str) -> Candidate | None:
    return None if value is None else _candidate(value, None, where, f"the '{strategy}' pick")


def _bools(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, bool) for v in value)


def _labels(value: Any, where: str) -> Mapping[str, LabelValue] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise GgeError(f"{where}: field 'labels' must be an object, got {value!r}")
    out: dict[str, LabelValue] = {}
    for key, v in value.items():
        if isinstance(v, str):
            out[key] = v
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[key] = tuple(v)
        else:
            raise GgeError(f"{where}: label '{key}' must be a string or a list of strings, got {v!r}")
    return out


def record_key(obj: Any, where: str) -> tuple[str, str]:
    """The ``(benchmark, id)`` of one line (the id as a string), checked as :func:`decode` checks it.

    Raises:
        GgeError: naming ``where``, for a line that is not an object with a string ``benchmark`` and
            a string or integer ``id``.
    """
    if not isinstance(obj, dict):
        raise GgeError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for field in ("benchmark", "id"):
        if field not in obj:
            raise GgeError(f"{where}: missing field '{field}'")
    bench, sid = obj["benchmark"], obj["id"]
    if not isinstance(bench, str):
        raise GgeError(f"{where}: field 'benchmark' must be a string, got {bench!r}")
    if isinstance(sid, bool) or not isinstance(sid, (str, int)):
        raise GgeError(f"{where}: field 'id' must be a string or an integer, got {sid!r}")
    return bench, str(sid)


def decode(obj: Any, where: str) -> PredictionRecord:
    """Read one line of predictions.jsonl (or of a replay file) back, checking every field it knows.

    Keys it does not know are ignored; the outcome fields are optional (None when absent).

    Args:
        obj: The parsed JSON value of the line.
        where: ``file:line`` for messages.

    Returns:
        The record.

    Raises:
        GgeError: naming ``where`` and the field at fault.

    Example:
        >>> rec = decode({"benchmark": "b", "id": 7, "candidates": [[1, 2], None, "unparsed"]}, "p:1")
        >>> rec.id, [c.point for c in rec.candidates], rec.candidates[2].parsed, rec.hits
        ('7', [(1.0, 2.0), None, None], False, None)
    """
    bench, sid = record_key(obj, where)
    if "candidates" not in obj:
        raise GgeError(f"{where}: missing field 'candidates'")
    cands = obj["candidates"]
    if not isinstance(cands, list):
        raise GgeError(f"{where}: field 'candidates' must be a list, got {cands!r}")
    scores = obj.get("scores")
    if scores is not None and not (
        isinstance(scores, list)
        and len(scores) == len(cands)
        and all(s is None or _number(s) for s in scores)
    ):
        raise GgeError(
            f"{where}: field 'scores' must be a list of {len(cands)} numbers or nulls (one per candidate), "
            f"got {scores!r}"
        )
    raw = obj.get("raw", "")
    if not isinstance(raw, str):
        raise GgeError(f"{where}: field 'raw' must be a string, got {raw!r}")
    fmt = obj.get("format_error", False)
    if not isinstance(fmt, bool):
        raise GgeError(f"{where}: field 'format_error' must be true or false, got {fmt!r}")
    image_error = obj.get("image_error")
    if image_error is not None and not isinstance(image_error, str):
        raise GgeError(f"{where}: field 'image_error' must be a string, got {image_error!r}")
    server_error = obj.get("server_error")
    if server_error is not None and not isinstance(server_error, str):
        raise GgeError(f"{where}: field 'server_error' must be a string, got {server_error!r}")
    truncated = obj.get("truncated", False)
    if not isinstance(truncated, bool):
        raise GgeError(f"{where}: field 'truncated' must be true or false, got {truncated!r}")
    not_in_file = obj.get("not_in_file", False)
    if not isinstance(not_in_file, bool):
        raise GgeError(f"{where}: field 'not_in_file' must be true or false, got {not_in_file!r}")
    rescue = obj.get("rescue")
    if rescue is not None and not isinstance(rescue, bool):
        raise GgeError(f"{where}: field 'rescue' must be true or false, got {rescue!r}")
    critic_raw = obj.get("critic_raw", "")
    critic_fmt = obj.get("critic_format_error", False)
    if not isinstance(critic_raw, str) or not isinstance(critic_fmt, bool):
        raise GgeError(f"{where}: 'critic_raw' must be a string and 'critic_format_error' true or false")
    candidates = tuple(
        _candidate(c, None if scores is None or scores[i] is None else float(scores[i]), where)
        for i, c in enumerate(cands)
    )
    hits = obj.get("hits")
    if hits is not None and not _bools(hits):
        raise GgeError(f"{where}: field 'hits' must be a list of true/false, got {hits!r}")
    top1 = obj.get("top1")
    if top1 is not None and not (isinstance(top1, dict) and _bools(list(top1.values()))):
        raise GgeError(f"{where}: field 'top1' must be an object of true/false by strategy, got {top1!r}")
    picks = obj.get("picks")
    if picks is not None and not isinstance(picks, dict):
        raise GgeError(f"{where}: field 'picks' must be an object (a pick by strategy), got {picks!r}")
    image = obj.get("image")
    if image is not None and not isinstance(image, str):
        raise GgeError(f"{where}: field 'image' must be a string, got {image!r}")
    return PredictionRecord(
        bench,
        sid,
        candidates,
        raw=raw,
        format_error=fmt,
        truncated=truncated,
        image_error=image_error,
        critic_raw=critic_raw,
        critic_format_error=critic_fmt,
        hits=None if hits is None else tuple(hits),
        top1=top1,
        picks=None if picks is None else {name: _pick(p, where, name) for name, p in picks.items()},
        image=image,
        labels=_labels(obj.get("labels"), where),
        costs=_costs(obj.get("cost"), where),
        refine=_refinement(obj.get("refine"), where),
        target=_target(obj.get("target"), where),
        size=_size(obj.get("size"), where),
        not_in_file=not_in_file,
        server_error=server_error,
        rescue=rescue,
    )


def json_lines(text: str, file: str | Path) -> Iterator[tuple[int, str, Any]]:
    r"""``(line number, "file:line", object)`` of each non-blank line of a JSON-lines text.

    Raises:
        GgeError: naming ``file:line``, for a line that is not JSON.

    Example:
        >>> [(n, obj) for n, _, obj in json_lines('{"a": 1}\n\n[2]\n', "x.jsonl")]
        [(1, {'a': 1}), (3, [2])]
    """
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{file}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise GgeError(f"{where}: malformed JSON line: {e.msg}") from None
        yield lineno, where, obj
