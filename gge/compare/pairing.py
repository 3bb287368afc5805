"""Pairing two runs sample by sample: :func:`compare_runs`, the compare.json document.

Runs that cannot be paired (other benchmarks, variants, sample ids or samples) are refused with a
one-line error naming both; every benchmark and table cell gets its paired statistics
(:mod:`gge.scoring.stats`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from gge.benchmarks import configured_benchmark
from gge.benchmarks.base import MICRO, Average, Benchmark, TableSpec
from gge.benchmarks.hub_digests import region_key
from gge.benchmarks.images import split_ref
from gge.compare.drift import benchmark_drift, compare_setups
from gge.compare.matched import differs, matched_budget
from gge.compare.runs import Line, Run, _pct
from gge.documents.caveats import headline_caveat
from gge.documents.results import (
    SCHEMA_VERSION,
    BenchmarkEntry,
    CompareDocument,
    CompareEntry,
    CompareMean,
    ErrorCounts,
    HeadlineDiff,
    PairedCell,
    PairedFigures,
    PairedTable,
    PairStat,
    insert_after,
)
from gge.errors import GgeError
from gge.report.markdown import subset_text
from gge.run.runstate import DIGEST_KINDS, RUN_FILE, digest_version
from gge.scoring.grouping import average, group_by, table
from gge.scoring.stats import macro_statistic, mcnemar_exact, min_detectable_difference, paired_bootstrap
from gge.types import LabelValue, SampleResult

__all__ = ["MIN_CLUSTERS", "compare_runs"]

_SELECTED = "selected"
"""Strategy key of the light SampleResults rebuilt from predictions.jsonl (each run's own selection)."""

MIN_CLUSTERS = 5
"""Fewer screenshots than this give no bootstrap interval and no MDD (``None``, printed "–"): resampling
one to four screenshots says nothing about the spread (one screenshot gives a zero-width interval)."""


def _pair_stat(
    a: np.ndarray, b: np.ndarray, clusters: Sequence[str], *, resamples: int, seed: int, level: float
) -> PairStat:
    """A PairStat of two 0/1 outcome vectors (percent and points); None where there are no samples.

    The interval and the MDD are None when the samples lie on fewer than :data:`MIN_CLUSTERS`
    screenshots.
    """
    if len(a) == 0:
        return {
            "a": None,
            "b": None,
            "diff": None,
            "ci": None,
            "mcnemar_p": 1.0,
            "mdd": None,
            "b_only": 0,
            "a_only": 0,
            "samples": 0,
            "screenshots": 0,
        }
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


def _variant(entry: BenchmarkEntry) -> dict[str, Any] | None:
    """The benchmark variant a run read (``load.variant``), None when it records no load."""
    load = entry.get("load")
    return None if load is None else load["variant"]


def _pool_digest(entry: BenchmarkEntry) -> str | None:
    """The digest of the pool a run judged its critic on (``critic_pool.pool.digest``), None for none."""
    pool = cast(dict[str, Any], entry).get("critic_pool")
    digest = pool.get("pool", {}).get("digest") if isinstance(pool, dict) else None
    return str(digest) if digest else None


def _refuse(a: Run, b: Run, what: str) -> GgeError:
    return GgeError(f"cannot compare {a.folder} (A) and {b.folder} (B): {what}")


def _few(ids: Sequence[str], n: int = 3) -> str:
    shown = ", ".join(repr(i) for i in ids[:n])
    return f"{shown}, ..." if len(ids) > n else shown


def _target_differences(a_lines: Sequence[Line], b_lines: Sequence[Line]) -> list[tuple[str, str, str]]:
    """``(id, A's target, B's target)`` of each sample whose recorded targets differ (A's order).

    Targets are compared as the samples digest compares them (:func:`gge.benchmarks.hub_digests.region_key`:
    pixels to 1e-3 pixel, with the hit rule); a line without a target (an older gge) is not compared.
    """
    by_id_b = {x.id: x for x in b_lines}
    out = []
    for xa in a_lines:
        xb = by_id_b.get(xa.id)
        if xb is None or xa.target is None or xb.target is None:
            continue
        ka, kb = region_key(xa.target), region_key(xb.target)
        if ka != kb:
            out.append((xa.id, ka, kb))
    return out


def _annotation_files(run: Run, name: str) -> dict[str, str | None]:
    """``{path: sha256}`` of the files a run's benchmark read (``load.provenance.files``; {} if none)."""
    load = run.document["benchmarks"][name].get("load")
    provenance = load.get("provenance") if isinstance(load, dict) else None
    found = provenance.get("files") if isinstance(provenance, dict) else None
    if not isinstance(found, list):
        return {}
    return {
        str(f["path"]): (str(f["sha256"]) if f.get("sha256") else None)
        for f in found
        if isinstance(f, dict) and "path" in f
    }


def _annotations(a: Run, b: Run, name: str) -> str:
    """Where the two runs' annotation files differ, by ``load.provenance``'s sha256 (for a refusal)."""
    fa, fb = _annotation_files(a, name), _annotation_files(b, name)
    if not fa or not fb:
        return "no load.provenance in both results.json to tell which annotation file differs"
    differ = [p for p in fa if p in fb and fa[p] != fb[p]]
    if differ:
        p = differ[0]
        more = f" (+{len(differ) - 1} more files)" if len(differ) > 1 else ""
        sha_a, sha_b = (fa[p] or "unread")[:12], (fb[p] or "unread")[:12]
        return f"load.provenance: {p} sha256 {sha_a}… in A vs {sha_b}… in B{more}"
    if set(fa) != set(fb):
        return f"load.provenance: A read {_few(sorted(fa), 2)}, B read {_few(sorted(fb), 2)}"
    return "load.provenance: the annotation files read have the same sha256 in both"


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
        va, vb = _variant(a.document["benchmarks"][name]), _variant(b.document["benchmarks"][name])
        if va != vb:
            raise _refuse(a, b, f"{name}: different benchmark variants: A {va} vs B {vb}")
        pa, pb = _pool_digest(a.document["benchmarks"][name]), _pool_digest(b.document["benchmarks"][name])
        if pa != pb:
            if pa is not None and pb is not None:
                what = (
                    f"critics judged on different pools (digest {pa[:12]}… in A vs {pb[:12]}… in B): "
                    f"ask B on A's pool (pool.source=file pool.path={a.folder}/pool.jsonl)"
                )
            else:
                pooled, other = ("A", "B") if pa is not None else ("B", "A")
                what = f"{pooled} judged its critic on a frozen pool, {other} did not: nothing to pair"
            raise _refuse(a, b, f"{name}: {what}")
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
        moved = _target_differences(a.lines.get(name, []), b.lines.get(name, []))
        if moved:
            first, ta, tb = moved[0]
            raise _refuse(
                a,
                b,
                f"{name}: different samples behind the same ids: the targets differ for {len(moved)} of "
                f"{len(ids_a)} samples ({_few([m[0] for m in moved])}; {first}: A {ta!r} vs B {tb!r}); "
                f"{_annotations(a, b, name)}",
            )
        da = None if a.digests is None else a.digests.get(name)
        db = None if b.digests is None else b.digests.get(name)
        if da is not None and db is not None and digest_version(da) != digest_version(db):
            kind_a, kind_b = (DIGEST_KINDS.get(v, f"scheme {v}") for v in map(digest_version, (da, db)))
            notes.append(
                f"{name}: the samples digests cannot be compared (A's covers {kind_a}, B's {kind_b}): "
                "samples paired by id and recorded targets only"
            )
        elif da is not None and db is not None and da != db:
            raise _refuse(
                a,
                b,
                f"{name}: different samples behind the same ids: samples digest {da[:16]}… in "
                f"{a.digests_file} vs {db[:16]}… in {b.digests_file} (other targets, instructions or "
                f"screenshot sizes: other data?); {_annotations(a, b, name)}",
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
    micro: PairStat,
    groups: list[list[int]],
    clusters: Sequence[str],
    *,
    resamples: int,
    seed: int,
    level: float,
) -> HeadlineDiff:
    """One official headline difference (Top-1 or Oracle@K) with its interval.

    A micro rule takes the micro PairStat's interval; a macro rule bootstraps the macro mean of the
    same per-sample ``values``, and gives no interval when a group lies on fewer than
    :data:`MIN_CLUSTERS` screenshots (it would drop out of resamples and skew the mean).
    """
    out: HeadlineDiff = {"rule": rule.name, "a": a_value, "b": b_value, "diff": None, "ci": None}
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


def _pairs(a_lines: list[Line], b_lines: list[Line]) -> tuple[list[tuple[Line, Line]], list[str], int]:
    """The lines paired by id (A's order), each pair's cluster (its screenshot) and how many have none.

    A pair's screenshot is A's, else B's; B's when every screenshot of A is embedded in a Hub copy and
    B's are not (a copy names each row's image apart, so rows showing one screenshot would be
    clusters of their own).
    """
    by_id_b = {x.id: x for x in b_lines}
    pairs = [(x, by_id_b[x.id]) for x in a_lines]
    b_first = all(x.image is None or split_ref(x.image) is not None for x in a_lines) and not any(
        x.image is not None and split_ref(x.image) is not None for x in b_lines
    )
    images = [(xb.image or xa.image) if b_first else (xa.image or xb.image) for xa, xb in pairs]
    clusters = [
        img if img is not None else f"sample:{xa.id}" for img, (xa, _) in zip(images, pairs, strict=True)
    ]
    return pairs, clusters, sum(img is None for img in images)


def _compare_benchmark(
    name: str,
    a_lines: list[Line],
    b_lines: list[Line],
    *,
    k: int,
    resamples: int,
    seed: int,
    level: float,
    variant: Mapping[str, Any] | None = None,
) -> tuple[CompareEntry, list[str]]:
    notes: list[str] = []
    bench: Benchmark | None = configured_benchmark(name, variant)  # tabled as the runs were
    if bench is None:
        notes.append(f"{name}: not a benchmark this gge knows: micro headline, no tables")
    title = bench.title if bench is not None else name
    official: Average = bench.official if bench is not None else MICRO
    specs: tuple[TableSpec, ...] = bench.tables if bench is not None else ()
    okey = f"oracle@{k}"
    keys = ("top1",) if k == 1 else ("top1", okey)  # one answer: Oracle@1 is Top-1 (S3)

    pairs, clusters, missing_images = _pairs(a_lines, b_lines)
    ids = [x.id for x, _ in pairs]
    where = {sid: i for i, sid in enumerate(ids)}
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

    tables: list[PairedTable] = []
    for spec in specs:
        if not any(spec.rows in r.labels for r in res_a):
            continue
        layout = table(res_a, spec, k, _SELECTED)
        cells: list[PairedCell] = []
        if spec.cols is None:
            members = _indices(group_by(res_a, [spec.rows]), where)
            for rv in layout["row_values"]:
                cells.append(cast(PairedCell, {"row": rv, "col": None, **pair(members[(rv,)])}))
        else:
            members = _indices(group_by(res_a, [spec.rows, spec.cols]), where)
            for rv in layout["row_values"]:
                for cv in layout["col_values"]:
                    if members.get((rv, cv)):
                        cells.append(cast(PairedCell, {"row": rv, "col": cv, **pair(members[(rv, cv)])}))
        tables.append({"title": spec.title, "rows": spec.rows, "cols": spec.cols, "cells": cells})

    top1_a, top1_b = values["top1"]
    entry: CompareEntry = {
        "title": title,
        "samples": len(ids),
        "screenshots": len(set(clusters)),
        "cluster": "screenshot"
        if not missing_images
        else ("sample" if missing_images == len(ids) else "mixed"),
        "top1": heads["top1"],
        "official": heads["top1"],
        "micro": cast(PairedFigures, {key: micro[key] for key in keys}),
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
        "drift": benchmark_drift(pairs),
    }
    entry = insert_after(entry, "image_errors", {**_server_errors(pairs), **_not_in_file(pairs)})
    return insert_after(entry, "top1", {key: heads[key] for key in keys[1:]}), notes


def _server_errors(pairs: Sequence[tuple[Line, Line]]) -> dict[str, ErrorCounts]:
    """``{"server_errors": {"a": n, "b": n}}`` where a side's request failed for good for some samples."""
    counts: ErrorCounts = {
        "a": sum(xa.server_error for xa, _ in pairs),
        "b": sum(xb.server_error for _, xb in pairs),
    }
    return {"server_errors": counts} if counts["a"] or counts["b"] else {}


def _not_in_file(pairs: Sequence[tuple[Line, Line]]) -> dict[str, ErrorCounts]:
    """``{"not_in_file": {"a": n, "b": n}}`` where a side replayed a file without some samples' lines."""
    counts: ErrorCounts = {
        "a": sum(xa.not_in_file for xa, _ in pairs),
        "b": sum(xb.not_in_file for _, xb in pairs),
    }
    return {"not_in_file": counts} if counts["a"] or counts["b"] else {}


def _subset_note(side: str, run: Run) -> str | None:
    text = subset_text(run.document.get("subset"), {})
    return f"{side} ({run.folder}) is a subset run ({text})" if text else None


def compare_runs(
    a: Run, b: Run, *, resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> CompareDocument:
    """Pair two runs sample by sample: the compare.json document.

    The document (:class:`~gge.documents.results.CompareDocument`) has ``schema_version`` (first), ``a``/``b``
    (path, label, selection, k, protocol), ``k`` (the common K = min(kA, kB)), ``bootstrap`` (resamples,
    seed, cluster, level), ``benchmarks``, ``mean`` (of the official Top-1 headlines, over the benchmarks
    that have one: ``benchmarks``, ``a``, ``b``, ``diff``), and ``warnings`` / ``notes`` (lists of
    strings), ``setup`` (what differs in the runs' recorded setups: nothing, only the engine, or
    more, :func:`gge.compare.drift.compare_setups`).

    Per benchmark, as results.json (S1): ``top1`` and ``oracle@K`` are the **official headline**
    differences (``{"rule", "a", "b", "diff", "ci"}``; ``official`` is the same as ``top1``);
    ``micro`` holds the micro PairStats ``top1`` and ``oracle@K`` (every sample counts once: McNemar,
    MDD, won/lost); then ``title``, ``samples``, ``screenshots``, ``cluster``, ``format_errors`` and
    ``image_errors`` (``{"a": n, "b": n}``; ``server_errors`` and ``not_in_file`` too where a side
    has some), ``tables`` of per-cell (micro) PairStats, the
    ``won`` and ``lost`` ids, and ``drift``: how the answers differ (raw texts, candidates, the
    first points' distance in original pixels, the flips each way and the first flips' raw
    answers, :func:`gge.compare.drift.benchmark_drift`). With a common K of 1 (a one-answer run,
    S3) there are no ``oracle@K`` entries anywhere: Top-1 only. A PairStat is ``{"a", "b", "diff"
    (b - a), "ci", "mcnemar_p", "mdd", "b_only", "a_only", "samples", "screenshots"}``;
    percentages and points are unrounded
    floats.

    When the runs differ in K, critic or refine stage (:func:`gge.compare.matched.differs`), each
    benchmark also gets ``budget``: the comparison at matched budget
    (:func:`gge.compare.matched.matched_budget`), or None where it cannot be made (the notes say
    why); the warnings say where the costs compared there may not be one unit (other hardware,
    backends, or costs replayed: :func:`gge.compare.matched.setup_warnings`).

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
    benchmarks: dict[str, CompareEntry] = {}
    for name in a.document["benchmarks"]:
        entry, more = _compare_benchmark(
            name,
            a.lines.get(name, []),
            b.lines.get(name, []),
            k=k,
            resamples=resamples,
            seed=seed,
            level=level,
            variant=_variant(a.document["benchmarks"][name]),
        )
        if differs(a, b, name):
            pairs, clusters, _ = _pairs(a.lines.get(name, []), b.lines.get(name, []))
            budget, more_notes, more_warnings = matched_budget(
                a,
                b,
                name,
                pairs,
                clusters,
                resamples=resamples,
                seed=seed,
                level=level,
                min_clusters=MIN_CLUSTERS,
            )
            entry = {**entry, "budget": budget}
            more += more_notes
            warnings += more_warnings
        variant = _variant(a.document["benchmarks"][name])  # B's is the same (_check_pairable)
        benchmarks[name] = insert_after(entry, "title", {"variant": dict(variant)}) if variant else entry
        caveats = dict.fromkeys(headline_caveat(r.document["benchmarks"][name]) for r in (a, b))
        caveat = "; ".join(c for c in caveats if c)
        if caveat:
            benchmarks[name] = insert_after(
                benchmarks[name], "variant" if variant else "title", {"caveat": caveat}
            )
        notes += more
    modes = {e["cluster"] for e in benchmarks.values()}
    cluster = "screenshot" if modes <= {"screenshot"} else ("sample" if modes == {"sample"} else "mixed")
    heads = [e["top1"] for e in benchmarks.values() if e["top1"]["diff"] is not None]
    mean: CompareMean = {"benchmarks": len(heads), "a": None, "b": None, "diff": None}
    if heads:
        mean_a = sum(cast(float, h["a"]) for h in heads) / len(heads)
        mean_b = sum(cast(float, h["b"]) for h in heads) / len(heads)
        mean["a"], mean["b"], mean["diff"] = mean_a, mean_b, mean_b - mean_a
    return {
        "schema_version": SCHEMA_VERSION,
        "a": a.summary(),
        "b": b.summary(),
        "k": k,
        "setup": compare_setups(a, b),
        "bootstrap": {"resamples": resamples, "seed": seed, "cluster": cluster, "level": level},
        "benchmarks": benchmarks,
        "mean": mean,
        "warnings": warnings,
        "notes": notes,
    }
