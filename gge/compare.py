"""Paired comparison of two runs on the same samples: ``gge compare A B``.

Two output folders of ``python eval.py`` (or two ``results.json`` files, each with the
``predictions.jsonl`` written beside it) are paired sample by sample. For every benchmark, and for
every cell of its official tables, the comparison gives the difference B − A in Top-1 and in
Oracle@K with a 95% interval from a **paired bootstrap that resamples screenshots** (samples that
share a screenshot move together, since their outcomes are correlated), the **exact McNemar**
p-value, the **minimum detectable difference** at this sample size, and the samples won and lost.
The document written is ``compare.json`` (its schema is in :func:`compare_runs`; as in
results.json, a benchmark's unqualified ``top1`` / ``oracle@K`` are its official headline and the
micro figures are under ``micro``); :func:`render_markdown` lays it out as the printed table
``compare.md``. With a common K of 1 (a one-answer run) everything is Top-1 only.

Runs that cannot be paired are refused with a one-line :class:`~gge.errors.GgeError` naming both
paths: different benchmarks, different benchmark variants (``load.variant`` in results.json, also
when only one side records one), different sample ids, or different samples behind the same ids
(the samples digests recorded in each run's ``run.json`` differ; a run without one is paired by id
with a note). Each run is checked on its own first (:func:`load_run`, naming the file and line):
its predictions.jsonl must reproduce its results.json (micro Top-1 and Oracle@K of each benchmark,
the same number of lines, no line twice), and no line may be impossible (a Top-1 hit of the critic,
first or medoid pick when no candidate hits, such a pick that is not one of the candidates or whose
hit contradicts Top-1, a Top-1 hit with no answer, hits that do not match the candidates).

The statistics (paired cluster bootstrap, exact McNemar, minimum detectable difference) are the
pure functions of :mod:`gge.scoring.stats`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from gge.benchmarks import REGISTRY
from gge.benchmarks.base import MICRO, Average, Benchmark, TableSpec, read_json, read_text
from gge.errors import GgeError
from gge.report.markdown import fmt, fmt_signed, markdown_table, subset_text
from gge.run.records import json_lines
from gge.run.runstate import RUN_FILE, check_output_dir
from gge.scoring.metrics import average, group_by, micro_of, table
from gge.scoring.scoring import SampleResult
from gge.scoring.stats import (
    MDD_FACTOR,
    Statistic,
    macro_statistic,
    mcnemar_exact,
    mean_statistic,
    min_detectable_difference,
    paired_bootstrap,
    resample_weights,
)
from gge.types import LabelValue

__all__ = [
    "MDD_FACTOR",
    "MIN_CLUSTERS",
    "Run",
    "Statistic",
    "compare_runs",
    "default_out_dir",
    "load_run",
    "macro_statistic",
    "mcnemar_exact",
    "mean_statistic",
    "min_detectable_difference",
    "paired_bootstrap",
    "render_markdown",
    "resample_weights",
    "run_compare",
    "write_compare",
]

_SELECTED = "selected"
"""Strategy key of the light SampleResults rebuilt from predictions.jsonl (each run's own selection)."""

_REPRODUCE_TOL = 1e-6
"""Points by which a micro mean recomputed from predictions.jsonl may differ from results.json (rounding)."""


# ----------------------------------------------------------------------------------------------
# Reading runs


@dataclass(frozen=True)
class Line:
    """One sample of predictions.jsonl, reduced to what a comparison needs.

    Attributes:
        id: Sample id.
        lineno: 1-based line number in predictions.jsonl.
        top1: Whether the run's selection strategy picked a hit.
        hits: Hit of each scored candidate, proposer order.
        image: Screenshot path, or None in files written before gge recorded it.
        labels: Breakdown labels, or None in files written before gge recorded them.
        format_error: The model's answer was unparseable (a format error).
        image_error: The screenshot could not be read (an image error).
    """

    id: str
    lineno: int
    top1: bool
    hits: tuple[bool, ...]
    image: str | None
    labels: Mapping[str, LabelValue] | None
    format_error: bool = False
    image_error: bool = False


@dataclass(frozen=True)
class Run:
    """One run read back: its results.json and the predictions.jsonl beside it.

    Attributes:
        folder: The output folder.
        results_path: Its results.json.
        predictions_path: Its predictions.jsonl.
        document: results.json, parsed.
        lines: Per benchmark, the samples in file order.
        label: Name shown in tables.
        digests: Per benchmark, the digest of the samples it evaluated
            (:func:`gge.run.runstate.samples_digest`: ids, instructions, screenshot names): results.json's
            ``samples_digest``, else the one in the run.json beside it (of every sample its data held);
            None when there is neither (results written by an older gge, or by summarize-verl).
        digests_file: The file the digests were read from.
    """

    folder: Path
    results_path: Path
    predictions_path: Path
    document: Mapping[str, Any]
    lines: Mapping[str, list[Line]]
    label: str
    digests: Mapping[str, str] | None = None
    digests_file: Path | None = None

    @property
    def selection(self) -> str:
        """The selection strategy whose pick is Top-1."""
        return str(self.document["selection"])

    @property
    def k(self) -> int:
        """The run's K."""
        return int(self.document["k"])

    @property
    def protocol(self) -> str:
        """The run's protocol line."""
        return str(self.document.get("protocol", ""))

    def summary(self) -> dict[str, Any]:
        """The ``"a"``/``"b"`` entry of compare.json."""
        return {
            "path": str(self.folder),
            "label": self.label,
            "selection": self.selection,
            "k": self.k,
            "protocol": self.protocol,
        }


def _read_results(path: Path) -> dict[str, Any]:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise GgeError(f"{path}: expected a JSON object (gge results.json), got {type(doc).__name__}")
    for key, kind in (("benchmarks", dict), ("k", int), ("selection", str)):
        if not isinstance(doc.get(key), kind):
            raise GgeError(f"{path}: not a gge results.json: '{key}' missing or not {kind.__name__}")
    for name, entry in doc["benchmarks"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("samples"), int):
            raise GgeError(f"{path}: benchmarks.{name}: missing 'samples' (not a gge results.json entry)")
    return doc


def _labels(value: Any, where: str) -> Mapping[str, LabelValue] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise GgeError(f"{where}: 'labels' must be an object, got {value!r}")
    out: dict[str, LabelValue] = {}
    for key, v in value.items():
        if isinstance(v, str):
            out[key] = v
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            out[key] = tuple(v)
        else:
            raise GgeError(f"{where}: label '{key}' must be a string or a list of strings, got {v!r}")
    return out


_PICKS_A_CANDIDATE = ("critic", "first", "medoid")
"""Strategies whose pick is one of the sample's candidates (the spatial ones build new points)."""


def _is_point(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    )


def _check_possible(rec: Mapping[str, Any], where: str, hits: list[bool], top1: Mapping[str, Any]) -> None:
    """Refuse a line no gge run can write: its Top-1 outcomes contradict its candidates and hits.

    A pick of ``null`` is an abstention (or no answer at all); it may hit, where the target is a
    refusal (OSWorld-G), so only a pick's agreement with the candidate it is can be checked.
    """
    cands = rec.get("candidates")
    if isinstance(cands, list) and len(cands) != len(hits):
        raise GgeError(f"{where}: {len(hits)} hits for {len(cands)} candidates (a hand-edited line?)")
    for strategy in _PICKS_A_CANDIDATE:
        if top1.get(strategy) is True and not any(hits):
            raise GgeError(
                f"{where}: a Top-1 hit of '{strategy}' but no candidate hits "
                f"(Top-1 above Oracle; a hand-edited line?)"
            )
    picks = rec.get("picks")
    if not isinstance(cands, list) or not isinstance(picks, dict):
        return
    for strategy in _PICKS_A_CANDIDATE:
        if strategy not in picks:
            continue
        pick = picks[strategy]
        if pick not in cands:
            if _is_point(pick):
                raise GgeError(f"{where}: the '{strategy}' pick {pick} is not one of the line's candidates")
            continue  # no answer: no candidates, or the abstention of a majority (medoid)
        i = cands.index(pick)
        if isinstance(top1.get(strategy), bool) and top1[strategy] != hits[i]:
            did = "hits" if top1[strategy] else "misses"
            raise GgeError(
                f"{where}: Top-1 of '{strategy}' {did} but its pick, candidate {i + 1}, "
                f"{'misses' if top1[strategy] else 'hits'}"
            )


def _parse_line(rec: Any, where: str, lineno: int, selection: str) -> tuple[str, Line]:
    if not isinstance(rec, dict):
        raise GgeError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    for key in ("benchmark", "id", "hits", "top1"):
        if key not in rec:
            raise GgeError(f"{where}: no field '{key}' (not a gge predictions.jsonl line)")
    bench, sid, hits, top1 = rec["benchmark"], rec["id"], rec["hits"], rec["top1"]
    if not isinstance(bench, str) or not isinstance(sid, str):
        raise GgeError(f"{where}: 'benchmark' and 'id' must be strings")
    if not isinstance(hits, list) or not all(isinstance(h, bool) for h in hits):
        raise GgeError(f"{where}: 'hits' must be a list of true/false, got {hits!r}")
    if not isinstance(top1, dict) or not isinstance(top1.get(selection), bool):
        have = ", ".join(top1) if isinstance(top1, dict) else repr(top1)
        raise GgeError(f"{where}: no Top-1 for the run's selection '{selection}' (top1 has: {have})")
    image = rec.get("image")
    if image is not None and not isinstance(image, str):
        raise GgeError(f"{where}: 'image' must be a string, got {image!r}")
    _check_possible(rec, where, hits, top1)
    line = Line(
        sid,
        lineno,
        top1[selection],
        tuple(hits),
        image,
        _labels(rec.get("labels"), where),
        format_error=rec.get("format_error") is True,
        image_error=rec.get("image_error") is not None,
    )
    return bench, line


def _evaluated_digests(document: Mapping[str, Any]) -> dict[str, str] | None:
    """The digest of the samples each benchmark evaluated (results.json ``samples_digest``), or None.

    A subset run (``max_samples``) evaluated its first N samples: those are what it is paired on, not
    everything its data folder held (run.json's digest, which resume checks, covers all of them).
    Written by eval since issue 19; older results and summarize-verl's have none.
    """
    entries = document.get("benchmarks")
    if not isinstance(entries, Mapping) or not entries:
        return None
    digests = {name: e.get("samples_digest") for name, e in entries.items() if isinstance(e, Mapping)}
    if len(digests) != len(entries) or not all(isinstance(d, str) for d in digests.values()):
        return None
    return {name: str(d) for name, d in digests.items()}


def _read_digests(path: Path) -> dict[str, str] | None:
    """The samples digest of each benchmark in a run.json; None when there is no run.json."""
    if not path.is_file():
        return None
    record = read_json(path)
    fp = record.get("fingerprint") if isinstance(record, dict) else None
    benches = fp.get("benchmarks") if isinstance(fp, dict) else None
    if not isinstance(benches, dict):
        raise GgeError(f"{path}: not a gge run record (no fingerprint.benchmarks)")
    return {
        name: entry["samples"]
        for name, entry in benches.items()
        if isinstance(entry, dict) and isinstance(entry.get("samples"), str)
    }


def _check_reproduces(run: Run) -> None:
    """Refuse a predictions.jsonl whose lines do not give its results.json's micro Top-1 and Oracle@K."""
    for name, entry in run.document["benchmarks"].items():
        lines = run.lines.get(name, [])
        if not lines:
            continue
        got = {
            "top1": _pct(sum(x.top1 for x in lines) / len(lines)),
            f"oracle@{run.k}": _pct(sum(any(x.hits[: run.k]) for x in lines) / len(lines)),
        }
        for key, value in got.items():
            want = micro_of(entry).get(key)
            if not isinstance(want, (int, float)) or isinstance(want, bool):
                continue
            if abs(want - value) > _REPRODUCE_TOL:
                what = "Top-1" if key == "top1" else f"Oracle@{run.k}"
                raise GgeError(
                    f"{run.predictions_path}: {name}: {what} {value:.6g} from its lines, but "
                    f"{run.results_path} reports {want:.6g} (files from different runs, or hand-edited?)"
                )


def load_run(path: str | Path, label: str | None = None) -> Run:
    """Read a run: an output folder, or a results.json with its predictions.jsonl beside it.

    Args:
        path: The folder or the results.json file.
        label: Name shown in tables (default: the folder's name).

    Returns:
        The run.

    Raises:
        GgeError: naming the file (and line) missing, unreadable or malformed, an impossible line, or
            a predictions.jsonl that does not match its results.json (line counts, a sample twice, or
            a micro Top-1 / Oracle@K that its lines do not give).
    """
    path = Path(path)
    if path.is_dir():
        folder, results_path = path, path / "results.json"
    elif path.is_file():
        folder, results_path = path.parent, path
    else:
        raise GgeError(f"{path}: not found (give an output folder of eval.py, or its results.json)")
    if not results_path.is_file():
        raise GgeError(f"{folder}: no results.json (is this an output folder of eval.py?)")
    doc = _read_results(results_path)
    predictions_path = folder / "predictions.jsonl"
    if not predictions_path.is_file():
        raise GgeError(
            f"{predictions_path}: not found (a comparison pairs samples: it needs the predictions.jsonl "
            f"written beside {results_path.name})"
        )
    selection = str(doc["selection"])
    lines: dict[str, list[Line]] = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, where, rec in json_lines(read_text(predictions_path), predictions_path):
        bench, line = _parse_line(rec, where, lineno, selection)
        if (bench, line.id) in seen:
            raise GgeError(f"{where}: {bench} sample {line.id!r} already on line {seen[bench, line.id]}")
        seen[bench, line.id] = lineno
        lines.setdefault(bench, []).append(line)
    for name, entry in doc["benchmarks"].items():
        have = len(lines.get(name, []))
        if have != entry["samples"]:
            raise GgeError(
                f"{predictions_path}: {have} {name} lines, but {results_path} reports {entry['samples']} "
                f"samples (files from different runs?)"
            )
    extra = sorted(set(lines) - set(doc["benchmarks"]))
    if extra:
        raise GgeError(
            f"{predictions_path}: lines for {', '.join(extra)}, which {results_path} does not report "
            f"(files from different runs?)"
        )
    digests, digests_file = _evaluated_digests(doc), results_path
    if digests is None:
        digests, digests_file = _read_digests(folder / RUN_FILE), folder / RUN_FILE
    run = Run(
        folder,
        results_path,
        predictions_path,
        doc,
        lines,
        label or folder.resolve().name,
        digests,
        digests_file,
    )
    _check_reproduces(run)
    return run


# ----------------------------------------------------------------------------------------------
# Pairing


def _pct(x: float) -> float:
    return 100.0 * x


MIN_CLUSTERS = 5
"""Fewer screenshots than this give no bootstrap interval and no MDD (``None``, printed "–"): resampling
one to four screenshots says nothing about the spread (one screenshot gives a zero-width interval)."""


def _pair_stat(
    a: np.ndarray, b: np.ndarray, clusters: Sequence[str], *, resamples: int, seed: int, level: float
) -> dict[str, Any]:
    """A PairStat of two 0/1 outcome vectors (percent and points); None where there are no samples.

    The interval and the MDD are None when the samples lie on fewer than :data:`MIN_CLUSTERS`
    screenshots.
    """
    if len(a) == 0:
        empty = {"a": None, "b": None, "diff": None, "ci": None, "mcnemar_p": 1.0, "mdd": None}
        return {**empty, "b_only": 0, "a_only": 0, "samples": 0, "screenshots": 0}
    n_clusters = len(set(clusters))
    if n_clusters >= MIN_CLUSTERS:
        lo, hi, se = paired_bootstrap(a, b, clusters, resamples=resamples, seed=seed, level=level)
        ci: list[float] | None = [_pct(lo), _pct(hi)]
        # a zero-width bootstrap (runs that never disagree, or disagree everywhere the same way) is
        # no evidence of which difference this sample size could detect: no MDD is reported
        mdd: float | None = _pct(min_detectable_difference(se)) if se > 0 else None
    else:
        ci, mdd = None, None
    a_only = int(np.sum((a > 0) & (b == 0)))
    b_only = int(np.sum((b > 0) & (a == 0)))
    pa, pb = _pct(float(a.mean())), _pct(float(b.mean()))
    return {
        "a": pa,
        "b": pb,
        "diff": pb - pa,
        "ci": ci,
        "mcnemar_p": mcnemar_exact(a_only, b_only),
        "mdd": mdd,
        "b_only": b_only,
        "a_only": a_only,
        "samples": len(a),
        "screenshots": n_clusters,
    }


def _refuse(a: Run, b: Run, what: str) -> GgeError:
    return GgeError(f"cannot compare {a.folder} (A) and {b.folder} (B): {what}")


def _few(ids: Sequence[str], n: int = 3) -> str:
    shown = ", ".join(repr(i) for i in ids[:n])
    return f"{shown}, ..." if len(ids) > n else shown


def _check_pairable(a: Run, b: Run) -> list[str]:
    """Refuse runs that cannot be paired; the notes on what could not be checked (no samples digest)."""
    names_a, names_b = list(a.document["benchmarks"]), list(b.document["benchmarks"])
    if set(names_a) != set(names_b):
        only_a = sorted(set(names_a) - set(names_b)) or ["none"]
        only_b = sorted(set(names_b) - set(names_a)) or ["none"]
        raise _refuse(
            a, b, f"different benchmarks (only in A: {', '.join(only_a)}; only in B: {', '.join(only_b)})"
        )
    notes: list[str] = []
    for name in names_a:
        va = (a.document["benchmarks"][name].get("load") or {}).get("variant")
        vb = (b.document["benchmarks"][name].get("load") or {}).get("variant")
        if va != vb:
            raise _refuse(a, b, f"{name}: different benchmark variants: A {va} vs B {vb}")
        ids_a = [x.id for x in a.lines.get(name, [])]
        ids_b = [x.id for x in b.lines.get(name, [])]
        if set(ids_a) != set(ids_b):
            set_a, set_b = set(ids_a), set(ids_b)
            only_a = [i for i in ids_a if i not in set_b]
            only_b = [i for i in ids_b if i not in set_a]
            raise _refuse(
                a,
                b,
                f"{name}: different sample sets: {len(only_a)} ids only in A ({_few(only_a) or 'none'}), "
                f"{len(only_b)} only in B ({_few(only_b) or 'none'}) (same max_samples and data?)",
            )
        da = None if a.digests is None else a.digests.get(name)
        db = None if b.digests is None else b.digests.get(name)
        if da is not None and db is not None and da != db:
            raise _refuse(
                a,
                b,
                f"{name}: different samples behind the same ids: samples digest {da[:16]}… in "
                f"{a.digests_file} vs {db[:16]}… in {b.digests_file} (other screenshots or instructions: "
                "other data?)",
            )
        for side, run, digest in (("A", a, da), ("B", b, db)):
            if digest is None and run.digests is not None:
                notes.append(
                    f"{name}: {side} ({run.folder}) records no samples digest in {run.digests_file}: "
                    f"samples paired by id only"
                )
    for side, run in (("A", a), ("B", b)):
        if run.digests is None:
            notes.append(
                f"{side} ({run.folder}) has no {RUN_FILE} recording its samples digests (an older gge, or "
                f"summarize-verl): samples paired by id only"
            )
    return notes


def _result(bench: str, line: Line, labels: Mapping[str, LabelValue], k: int) -> SampleResult:
    return SampleResult(bench, line.id, labels, k, (), line.hits, top1={_SELECTED: line.top1})


def _indices(
    groups: Mapping[tuple[str, ...], list[SampleResult]], where: Mapping[str, int]
) -> dict[tuple[str, ...], list[int]]:
    return {key: [where[r.id] for r in members] for key, members in groups.items()}


def _headline(
    rule: Average,
    a_value: float | None,
    b_value: float | None,
    values: tuple[np.ndarray, np.ndarray],
    micro: Mapping[str, Any],
    groups: list[list[int]],
    clusters: Sequence[str],
    *,
    resamples: int,
    seed: int,
    level: float,
) -> dict[str, Any]:
    """One official headline difference (Top-1 or Oracle@K) with its interval.

    A micro rule takes the micro PairStat's interval; a macro rule bootstraps the macro mean of the
    same per-sample ``values``, and gives no interval when a group lies on fewer than
    :data:`MIN_CLUSTERS` screenshots (it would drop out of resamples and skew the mean).
    """
    out: dict[str, Any] = {"rule": rule.name, "a": a_value, "b": b_value, "diff": None, "ci": None}
    if a_value is None or b_value is None:
        return out
    out["diff"] = b_value - a_value
    if not rule.over:
        out["ci"] = micro["ci"]
        return out
    fewest = min((len({clusters[i] for i in g}) for g in groups), default=0)
    if fewest >= MIN_CLUSTERS:
        lo, hi, _ = paired_bootstrap(
            values[0],
            values[1],
            clusters,
            statistic=macro_statistic(groups, len(clusters)),
            resamples=resamples,
            seed=seed,
            level=level,
        )
        out["ci"] = [_pct(lo), _pct(hi)]
    return out


def _compare_benchmark(
    name: str, a_lines: list[Line], b_lines: list[Line], *, k: int, resamples: int, seed: int, level: float
) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    bench: Benchmark | None = REGISTRY.get(name)
    if bench is None:
        notes.append(f"{name}: not a benchmark this gge knows: micro headline, no tables")
    title = bench.title if bench is not None else name
    official: Average = bench.official if bench is not None else MICRO
    specs: tuple[TableSpec, ...] = bench.tables if bench is not None else ()
    okey = f"oracle@{k}"
    keys = ("top1",) if k == 1 else ("top1", okey)  # one answer: Oracle@1 is Top-1 (S3)

    by_id_b = {x.id: x for x in b_lines}
    pairs = [(x, by_id_b[x.id]) for x in a_lines]
    ids = [x.id for x, _ in pairs]
    where = {sid: i for i, sid in enumerate(ids)}
    images = [xa.image or xb.image for xa, xb in pairs]
    missing_images = sum(img is None for img in images)
    clusters = [img if img is not None else f"sample:{sid}" for img, sid in zip(images, ids, strict=True)]
    if missing_images:
        notes.append(
            f"{name}: {missing_images} samples have no screenshot path in predictions.jsonl (written by an "
            f"older gge): each of them is its own cluster in the bootstrap"
        )
    labels = [xa.labels if xa.labels is not None else xb.labels for xa, xb in pairs]
    if any(lab is None for lab in labels) and (specs or official.over):
        notes.append(f"{name}: predictions.jsonl has no labels (older gge): no tables, and no macro headline")
    res_a = [_result(name, xa, lab or {}, k) for (xa, _), lab in zip(pairs, labels, strict=True)]
    res_b = [_result(name, xb, lab or {}, k) for (_, xb), lab in zip(pairs, labels, strict=True)]

    values = {
        "top1": (
            np.array([xa.top1 for xa, _ in pairs], dtype=float),
            np.array([xb.top1 for _, xb in pairs], dtype=float),
        ),
        okey: (
            np.array([r.hit_at(k) for r in res_a], dtype=float),
            np.array([r.hit_at(k) for r in res_b], dtype=float),
        ),
    }

    def pair(idx: Sequence[int] | None) -> dict[str, Any]:
        sel = np.arange(len(ids)) if idx is None else np.asarray(idx, dtype=np.int64)
        cl = [clusters[i] for i in sel]
        stats = {
            key: _pair_stat(
                values[key][0][sel], values[key][1][sel], cl, resamples=resamples, seed=seed, level=level
            )
            for key in keys
        }
        return {"samples": len(sel), **stats}

    micro = pair(None)
    groups = list(_indices(group_by(res_a, official.over), where).values()) if official.over else []
    off_a = average(res_a, official, k, _SELECTED)
    off_b = average(res_b, official, k, _SELECTED)
    heads = {
        key: _headline(
            official,
            off_a[key],
            off_b[key],
            values[key],
            micro[key],
            groups,
            clusters,
            resamples=resamples,
            seed=seed,
            level=level,
        )
        for key in keys
    }

    tables: list[dict[str, Any]] = []
    for spec in specs:
        if not any(spec.rows in r.labels for r in res_a):
            continue
        layout = table(res_a, spec, k, _SELECTED)
        cells: list[dict[str, Any]] = []
        if spec.cols is None:
            members = _indices(group_by(res_a, [spec.rows]), where)
            for rv in layout["row_values"]:
                cells.append({"row": rv, "col": None, **pair(members[(rv,)])})
        else:
            members = _indices(group_by(res_a, [spec.rows, spec.cols]), where)
            for rv in layout["row_values"]:
                for cv in layout["col_values"]:
                    if members.get((rv, cv)):
                        cells.append({"row": rv, "col": cv, **pair(members[(rv, cv)])})
        tables.append({"title": spec.title, "rows": spec.rows, "cols": spec.cols, "cells": cells})

    top1_a, top1_b = values["top1"]
    entry: dict[str, Any] = {
        "title": title,
        "samples": len(ids),
        "screenshots": len(set(clusters)),
        "cluster": "screenshot"
        if not missing_images
        else ("sample" if missing_images == len(ids) else "mixed"),
        **heads,
        "official": heads["top1"],
        "micro": {key: micro[key] for key in keys},
        "format_errors": {
            "a": sum(xa.format_error for xa, _ in pairs),
            "b": sum(xb.format_error for _, xb in pairs),
        },
        "image_errors": {
            "a": sum(xa.image_error for xa, _ in pairs),
            "b": sum(xb.image_error for _, xb in pairs),
        },
        "tables": tables,
        "won": [sid for sid, xa, xb in zip(ids, top1_a, top1_b, strict=True) if xb and not xa],
        "lost": [sid for sid, xa, xb in zip(ids, top1_a, top1_b, strict=True) if xa and not xb],
    }
    return entry, notes


def _subset_note(side: str, run: Run) -> str | None:
    text = subset_text(run.document.get("subset"), {})
    return f"{side} ({run.folder}) is a subset run ({text})" if text else None


def compare_runs(
    a: Run, b: Run, *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> dict[str, Any]:
    """Pair two runs sample by sample: the compare.json document.

    The document has ``a``/``b`` (path, label, selection, k, protocol), ``k`` (the common K =
    min(kA, kB)), ``bootstrap`` (resamples, seed, cluster, level), ``benchmarks``, ``mean`` (of the
    official Top-1 headlines, over the benchmarks that have one: ``benchmarks``, ``a``, ``b``,
    ``diff``), and ``warnings`` / ``notes`` (lists of strings).

    Per benchmark, as results.json (S1): ``top1`` and ``oracle@K`` are the **official headline**
    differences (``{"rule", "a", "b", "diff", "ci"}``; ``official`` is the same as ``top1``);
    ``micro`` holds the micro PairStats ``top1`` and ``oracle@K`` (every sample counts once: McNemar,
    MDD, won/lost); then ``title``, ``samples``, ``screenshots``, ``cluster``, ``format_errors`` and
    ``image_errors`` (``{"a": n, "b": n}``), ``tables`` of per-cell (micro) PairStats, and the
    ``won`` and ``lost`` ids. With a common K of 1 (a one-answer run, S3) there are no ``oracle@K``
    entries anywhere: Top-1 only. A PairStat is ``{"a", "b", "diff" (b - a), "ci", "mcnemar_p",
    "mdd", "b_only", "a_only", "samples", "screenshots"}``; percentages and points are unrounded
    floats.

    Args:
        a: The baseline run.
        b: The run compared with it.
        resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        level: Interval coverage.

    Returns:
        The document.

    Raises:
        GgeError: when the runs cover different benchmarks, benchmark variants, sample sets, or
            samples (their recorded samples digests differ).
    """
    notes = _check_pairable(a, b)
    k = min(a.k, b.k)
    warnings: list[str] = []
    if a.selection != b.selection:
        warnings.append(
            f"the runs select Top-1 differently: A by '{a.selection}', B by '{b.selection}' "
            f"(Top-1 differences mix the models with the selection strategies)"
        )
    if a.k != b.k:
        notes.append(
            f"the runs have different K (A {a.k}, B {b.k}): the common K is 1, so Top-1 only"
            if k == 1
            else f"the runs have different K (A {a.k}, B {b.k}): Oracle@K is compared at K = {k}"
        )
    notes += [n for n in (_subset_note("A", a), _subset_note("B", b)) if n is not None]
    benchmarks: dict[str, Any] = {}
    for name in a.document["benchmarks"]:
        entry, more = _compare_benchmark(
            name,
            a.lines.get(name, []),
            b.lines.get(name, []),
            k=k,
            resamples=resamples,
            seed=seed,
            level=level,
        )
        benchmarks[name] = entry
        notes += more
    modes = {e["cluster"] for e in benchmarks.values()}
    cluster = "screenshot" if modes <= {"screenshot"} else ("sample" if modes == {"sample"} else "mixed")
    heads = [e["top1"] for e in benchmarks.values() if e["top1"]["diff"] is not None]
    mean: dict[str, Any] = {"benchmarks": len(heads), "a": None, "b": None, "diff": None}
    if heads:
        mean["a"] = sum(h["a"] for h in heads) / len(heads)
        mean["b"] = sum(h["b"] for h in heads) / len(heads)
        mean["diff"] = mean["b"] - mean["a"]
    return {
        "a": a.summary(),
        "b": b.summary(),
        "k": k,
        "bootstrap": {"resamples": resamples, "seed": seed, "cluster": cluster, "level": level},
        "benchmarks": benchmarks,
        "mean": mean,
        "warnings": warnings,
        "notes": notes,
    }


# ----------------------------------------------------------------------------------------------
# Rendering and files


def _ci(ci: Sequence[float] | None) -> str:
    if ci is None or any(math.isnan(v) for v in ci):
        return "–"
    return f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def _p(p: float) -> str:
    return "1" if p >= 1.0 else f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _stat_cells(s: Mapping[str, Any], *, won_lost: bool) -> list[str]:
    cells = [fmt(s["a"]), fmt(s["b"]), f"{fmt_signed(s['diff'])} {_ci(s['ci'])}", _p(s["mcnemar_p"])]
    if won_lost:
        cells += [fmt(s["mdd"]), f"{s['b_only']}/{s['a_only']}"]
    return cells


def _ids(ids: Sequence[str], limit: int = 20) -> str:
    if not ids:
        return "none"
    shown = ", ".join(ids[:limit])
    return f"{shown}, … (+{len(ids) - limit} more in compare.json)" if len(ids) > limit else shown


def _errors(e: Mapping[str, Any], key: str) -> str:
    counts = e.get(key)
    return f"{counts['a']}/{counts['b']}" if isinstance(counts, Mapping) else "–"


def render_markdown(doc: Mapping[str, Any]) -> str:
    """The printed paired table (compare.md) of a compare.json document.

    First the headlines: per benchmark its official rule, Top-1 (and Oracle@K) of A and B with the
    difference and its interval, the format and image errors of each run, and the mean of the
    headlines. Then the micro paired results (every sample counts once: micro Top-1 of A and B, Δ
    with its interval, McNemar p, MDD, won/lost, then micro Oracle@K), then every benchmark's table
    cells and its won and lost samples. With a common K of 1 the tables are Top-1 only.

    Args:
        doc: A :func:`compare_runs` document.

    Returns:
        Markdown text.
    """
    k = doc["k"]
    one = k == 1
    a, b, boot = doc["a"], doc["b"], doc["bootstrap"]
    level = round(100 * boot["level"])
    out = [
        f"# gge compare: {a['label']} (A) vs {b['label']} (B)",
        "",
        f"- A: {a['path']} (selection {a['selection']}, K={a['k']})",
        f"- B: {b['path']} (selection {b['selection']}, K={b['k']})",
        f"- Δ = B − A in points; [{level}% paired bootstrap interval, {boot['resamples']} resamples of "
        f"{'screenshots' if boot['cluster'] == 'screenshot' else boot['cluster'] + ' clusters'}, "
        f"seed {boot['seed']}]; p: exact McNemar; MDD: minimum detectable difference (alpha 0.05, "
        f"power 0.8); won/lost: samples only B / only A gets right; – for the interval and MDD: "
        f"fewer than {MIN_CLUSTERS} screenshots (in a group, for a macro headline)",
    ]
    if one:
        out.append("- K = 1 (one answer per sample): Top-1 only")
    out += [f"- warning: {w}" for w in doc.get("warnings", [])]
    out += [f"- note: {n}" for n in doc.get("notes", [])]
    okey = f"oracle@{k}"

    def diff(s: Mapping[str, Any]) -> str:
        return f"{fmt_signed(s['diff'])} {_ci(s['ci'])}"

    head = ["benchmark", "rule", "n", "Top-1 A", "Top-1 B", "Δ Top-1"]
    head += [] if one else [f"Oracle@{k} A", f"Oracle@{k} B", f"Δ Oracle@{k}"]
    head += ["format errors A/B", "image errors A/B"]
    hrows = []
    for e in doc["benchmarks"].values():
        row = [e["title"], e["top1"]["rule"], str(e["samples"])]
        for key in ("top1",) if one else ("top1", okey):
            row += [fmt(e[key]["a"]), fmt(e[key]["b"]), diff(e[key])]
        hrows.append([*row, _errors(e, "format_errors"), _errors(e, "image_errors")])
    m = doc["mean"]
    mean_row = [
        f"mean of {m['benchmarks']}",
        "unweighted",
        "",
        fmt(m["a"]),
        fmt(m["b"]),
        fmt_signed(m["diff"]),
    ]
    hrows.append(mean_row + ([] if one else ["", "", ""]) + ["", ""])
    out += ["", "## Headlines (each benchmark's official rule)", "", markdown_table(head, hrows)]

    def stat_head(first: Sequence[str]) -> list[str]:
        cols = [*first, "micro Top-1 A", "micro Top-1 B", "Δ micro Top-1", "p", "MDD", "won/lost"]
        return (
            cols if one else [*cols, f"micro Oracle@{k} A", f"micro Oracle@{k} B", f"Δ micro Oracle@{k}", "p"]
        )

    def stat_cells(s: Mapping[str, Any]) -> list[str]:
        cells = _stat_cells(s["top1"], won_lost=True)
        return cells if one else [*cells, *_stat_cells(s[okey], won_lost=False)]

    rows = [
        [e["title"], str(e["samples"]), str(e["screenshots"]), *stat_cells(e["micro"])]
        for e in doc["benchmarks"].values()
    ]
    out += [
        "",
        "## Paired results (micro: every sample counts once)",
        "",
        markdown_table(stat_head(["benchmark", "n", "shots"]), rows),
    ]
    for name, e in doc["benchmarks"].items():
        out += ["", f"## {e['title']} ({name})"]
        for t in e["tables"]:
            two = t["cols"] is not None
            th = stat_head([t["rows"], *([t["cols"]] if two else []), "n"])
            trows = [
                [c["row"], *([c["col"]] if two else []), str(c["samples"]), *stat_cells(c)]
                for c in t["cells"]
            ]
            out += ["", f"### {t['title']}", "", markdown_table(th, trows)]
        out += [
            "",
            f"won ({len(e['won'])}, B right and A wrong): {_ids(e['won'])}",
            "",
            f"lost ({len(e['lost'])}, A right and B wrong): {_ids(e['lost'])}",
        ]
    return "\n".join(out)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "A"


def default_out_dir(a: Run, b: Run) -> Path:
    """Where compare writes by default: ``<B's folder>/compare-vs-<A's label>``.

    B is the run under study and A its baseline, so the comparison is kept with B; nothing is
    ever written into A.

    Args:
        a: The baseline.
        b: The run compared.

    Returns:
        The folder.
    """
    return b.folder / f"compare-vs-{_slug(a.label)}"


def _write_html(doc: Mapping[str, Any], out_dir: Path) -> Path:
    from gge.report.html import render_compare_html, write_report_html

    return write_report_html(out_dir / "compare.html", render_compare_html(doc))


def write_compare(doc: Mapping[str, Any], out_dir: Path, markdown: str | None = None) -> list[Path]:
    """Write compare.json, compare.md and compare.html (:func:`gge.report.html.render_compare_html`).

    Args:
        doc: A :func:`compare_runs` document.
        out_dir: The folder (created if needed).
        markdown: The rendered table (default: :func:`render_markdown` of ``doc``).

    Returns:
        The files written.

    Raises:
        GgeError: naming the folder and the file, when ``out_dir`` (or a folder above it) is a file
            or a file cannot be written.
    """
    _check_out_dir(out_dir)
    written = [out_dir / "compare.json", out_dir / "compare.md"]
    target = out_dir
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        target = written[0]
        written[0].write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        target = written[1]
        written[1].write_text(
            (markdown if markdown is not None else render_markdown(doc)) + "\n", encoding="utf-8"
        )
        target = out_dir / "compare.html"
        written.append(_write_html(doc, out_dir))
    except OSError as e:
        raise GgeError(f"--out {out_dir}: cannot write {target}: {e.strerror or e}") from None
    return written


def _check_out_dir(out_dir: Path) -> None:
    """Refuse an output folder that is a file or lies under one (one line, before anything is computed)."""
    check_output_dir(out_dir, option="--out")


def run_compare(
    a_path: str | Path,
    b_path: str | Path,
    *,
    out_dir: str | Path | None = None,
    resamples: int = 2000,
    seed: int = 0,
    labels: Sequence[str] | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """``gge compare A B``: read both runs, pair them, print the table and write the files.

    Args:
        a_path: Run A (baseline): output folder or results.json.
        b_path: Run B.
        out_dir: Output folder (default :func:`default_out_dir`, which is inside B, never A).
        resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        labels: Names of A and B in the tables (default: their folder names).
        stream: Where the table is printed (default: stdout).

    Returns:
        The compare.json document.

    Raises:
        GgeError: for unreadable runs or runs that cannot be paired.
    """
    import sys

    if resamples < 1:
        raise GgeError(f"--resamples must be at least 1, got {resamples}")
    label_a, label_b = labels if labels is not None else (None, None)
    a = load_run(a_path, label_a)
    b = load_run(b_path, label_b)
    if labels is None and a.label == b.label:
        a = replace(a, label=f"{a.label} (A)")
        b = replace(b, label=f"{b.label} (B)")
    out = Path(out_dir) if out_dir is not None else default_out_dir(a, b)
    _check_out_dir(out)
    doc = compare_runs(a, b, resamples=resamples, seed=seed)
    text = render_markdown(doc)
    write_compare(doc, out, text)
    stream = stream if stream is not None else sys.stdout
    print(text, file=stream)
    print(f"wrote {out}", file=stream)
    return doc
