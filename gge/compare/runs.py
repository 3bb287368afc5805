"""Reading a run back for ``gge compare``: its results.json and the predictions.jsonl beside it.

:func:`load_run` reads an output folder (or a results.json) into a :class:`Run`, one :class:`Line` per
sample, and refuses, naming the file and line, a malformed or impossible line or a predictions.jsonl
that does not reproduce its results.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gge.benchmarks.base import read_json, read_text
from gge.documents.records import PredictionRecord, decode, json_lines, wire_point
from gge.documents.results import ResultsDocument, RunSummary, oracle_at, read_results
from gge.errors import GgeError
from gge.run.runstate import RUN_FILE
from gge.types import Candidate, CostRecord, LabelValue, Region

__all__ = ["Line", "Run", "load_run"]

_REPRODUCE_TOL = 1e-6
"""Points by which a micro mean recomputed from predictions.jsonl may differ from results.json (rounding)."""


def _pct(x: float) -> float:
    return 100.0 * x


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
        candidates: The scored candidates with the critic's scores (for the budget curves).
        outcomes: Whether each strategy's pick hits (the line's ``top1``).
        costs: The sample's cost ledger (empty: none recorded).
        target: The sample's target (scores a pick that is no candidate), or None where not recorded.
        size: The screenshot's (width, height), or None where not recorded.
        raw: The model's answer text as the line records it (``raw``; "" where absent).
        not_in_file: The run replayed a file without a line for the sample (a miss).
        server_error: The sample's request failed for good in the run (a miss; a server error).
    """

    id: str
    lineno: int
    top1: bool
    hits: tuple[bool, ...]
    image: str | None
    labels: Mapping[str, LabelValue] | None
    format_error: bool = False
    image_error: bool = False
    candidates: tuple[Candidate, ...] = ()
    outcomes: Mapping[str, bool] = field(default_factory=dict)
    costs: tuple[CostRecord, ...] = ()
    target: Region | None = None
    size: tuple[int, int] | None = None
    raw: str = ""
    not_in_file: bool = False
    server_error: bool = False


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
            (:func:`gge.run.runstate.samples_digest`: ids, instructions, targets, image sizes): results.json's
            ``samples_digest``, else the one in the run.json beside it (of every sample its data held:
            the fingerprint's, of what the model was asked, without targets: compared only with a
            digest of its own kind, else a note); None when there is neither (results written by an
            older gge, or by summarize-verl).
        digests_file: The file the digests were read from.
    """

    folder: Path
    results_path: Path
    predictions_path: Path
    document: ResultsDocument
    lines: Mapping[str, list[Line]]
    label: str
    digests: Mapping[str, str] | None = None
    digests_file: Path | None = None

    @property
    def selection(self) -> str:
        """The selection strategy whose pick is Top-1."""
        return self.document["selection"]

    @property
    def k(self) -> int:
        """The run's K."""
        return self.document["k"]

    @property
    def protocol(self) -> str:
        """The run's protocol line."""
        return self.document["protocol"]

    def summary(self) -> RunSummary:
        """The ``"a"``/``"b"`` entry of compare.json."""
        return {
            "path": str(self.folder),
            "label": self.label,
            "selection": self.selection,
            "k": self.k,
            "protocol": self.protocol,
        }


def _read_results(path: Path) -> ResultsDocument:
    """results.json of this gge's schema_version, with the fields a comparison reads checked."""
    doc = read_results(path)
    for key, kind in (("benchmarks", dict), ("k", int), ("selection", str)):
        if not isinstance(doc.get(key), kind):
            raise GgeError(f"{path}: not a gge results.json: '{key}' missing or not {kind.__name__}")
    for name, entry in doc["benchmarks"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("samples"), int):
            raise GgeError(f"{path}: benchmarks.{name}: missing 'samples' (not a gge results.json entry)")
    return doc


_PICKS_A_CANDIDATE = ("critic", "first", "medoid")
"""Strategies whose pick is one of the sample's candidates (the spatial ones build new points)."""


def _check_possible(
    rec: PredictionRecord, where: str, hits: tuple[bool, ...], top1: Mapping[str, bool]
) -> None:
    """Refuse a line no gge run can write: its Top-1 outcomes contradict its candidates and hits.

    A pick of ``null`` is an abstention (or no answer at all); it may hit, where the target is a
    refusal (OSWorld-G), so only a pick's agreement with the candidate it is can be checked. Picks
    and candidates are compared as the line writes them (:func:`gge.documents.records.wire_point`).
    """
    cands = [wire_point(c) for c in rec.candidates]
    if len(cands) != len(hits):
        raise GgeError(f"{where}: {len(hits)} hits for {len(cands)} candidates (a hand-edited line?)")
    for strategy in _PICKS_A_CANDIDATE:
        if top1.get(strategy) is True and not any(hits):
            raise GgeError(
                f"{where}: a Top-1 hit of '{strategy}' but no candidate hits "
                f"(Top-1 above Oracle; a hand-edited line?)"
            )
    if rec.picks is None:
        return
    for strategy in _PICKS_A_CANDIDATE:
        if strategy not in rec.picks:
            continue
        pick = wire_point(rec.picks[strategy])
        if pick not in cands:
            if isinstance(pick, list):
                raise GgeError(f"{where}: the '{strategy}' pick {pick} is not one of the line's candidates")
            continue  # no answer: no candidates, or the abstention of a majority (medoid)
        i = cands.index(pick)
        if strategy in top1 and top1[strategy] != hits[i]:
            did = "hits" if top1[strategy] else "misses"
            raise GgeError(
                f"{where}: Top-1 of '{strategy}' {did} but its pick, candidate {i + 1}, "
                f"{'misses' if top1[strategy] else 'hits'}"
            )


def _parse_line(obj: Any, where: str, lineno: int, selection: str) -> tuple[str, Line]:
    """One line read by the codec (:func:`gge.documents.records.decode`), checked for what compare needs."""
    rec = decode(obj, where)
    if rec.hits is None or rec.top1 is None:
        missing = "hits" if rec.hits is None else "top1"
        raise GgeError(f"{where}: no field '{missing}' (not a gge predictions.jsonl line)")
    hits, top1 = rec.hits, rec.top1
    if selection not in top1:
        raise GgeError(
            f"{where}: no Top-1 for the run's selection '{selection}' (top1 has: {', '.join(top1)})"
        )
    _check_possible(rec, where, hits, top1)
    line = Line(
        rec.id,
        lineno,
        top1[selection],
        hits,
        rec.image,
        rec.labels,
        format_error=rec.format_error,
        image_error=rec.image_error is not None,
        candidates=rec.candidates,
        outcomes=top1,
        costs=rec.costs,
        target=rec.target,
        size=rec.size,
        raw=rec.raw,
        not_in_file=rec.not_in_file,
        server_error=rec.server_error is not None,
    )
    return rec.benchmark, line


def _evaluated_digests(document: ResultsDocument) -> dict[str, str] | None:
    """The digest of the samples each benchmark evaluated (results.json ``samples_digest``), or None.

    A subset run (``max_samples``) evaluated its first N samples: those are what it is paired on, not
    everything its data folder held (run.json's digest, which resume checks, covers all of them).
    Written by eval; summarize-verl's results have none.
    """
    entries = document["benchmarks"]
    if not entries:
        return None
    digests = {name: e.get("samples_digest") for name, e in entries.items()}
    if not all(isinstance(d, str) for d in digests.values()):
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
        micro = entry["micro"]
        got = [
            ("Top-1", micro["top1"], _pct(sum(x.top1 for x in lines) / len(lines))),
            (
                f"Oracle@{run.k}",
                oracle_at(micro, run.k),
                _pct(sum(any(x.hits[: run.k]) for x in lines) / len(lines)),
            ),
        ]
        for what, want, value in got:
            if not isinstance(want, (int, float)) or isinstance(want, bool):
                continue
            if abs(want - value) > _REPRODUCE_TOL:
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
