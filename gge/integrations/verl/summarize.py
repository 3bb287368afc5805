"""``gge summarize-verl``: a trainer's dumped validation generations as gge's results and reports.

Reads verl's ``<step>.jsonl`` dumps or EasyR1's ``generations.log`` and scores them with the
official rules, the exact Oracle@K and the unbiased pass@k.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gge.benchmarks import REGISTRY, get_benchmark
from gge.benchmarks.base import read_text
from gge.documents.records import json_lines
from gge.errors import GgeError
from gge.integrations.verl.export import _pyarrow
from gge.integrations.verl.ground_truth import GroundTruth, is_gge_ground_truth, read_ground_truth
from gge.integrations.verl.reward import SELECTION, _view_kwargs
from gge.run.runstate import check_output_dir
from gge.types import Sample, SampleResult

if TYPE_CHECKING:
    from gge.benchmarks.base import Benchmark
    from gge.documents.results import ResultsDocument


@dataclass(frozen=True)
class DumpRecord:
    """One response read from a trainer's validation dump.

    Attributes:
        where: ``file:line`` (or ``file: block N``) for messages.
        output: The model's response.
        ground_truth: The sample's ground truth.
        step: The training step, when the dump says it.
    """

    where: str
    output: str
    ground_truth: GroundTruth
    step: int | None


@dataclass(frozen=True)
class Dump:
    """The responses :func:`read_dump` read from one dump file.

    Attributes:
        file: The file read.
        records: The responses to gge's samples, in the file's order.
        format: ``verl`` (``<step>.jsonl``) or ``easyr1`` (``generations.log``).
        step: The training step (None when the file has none, or several).
        skipped: Responses whose ground truth is not gge's (other data validated alongside).
        repaired: Where (``file:line``) a response held lone surrogates, replaced by U+FFFD.
    """

    file: Path
    records: list[DumpRecord]
    format: str
    step: int | None
    skipped: int = 0
    repaired: tuple[str, ...] = ()

    @property
    def steps(self) -> list[int | None]:
        """The distinct steps of the records, in order (None: the file does not say)."""
        return sorted({r.step for r in self.records}, key=lambda x: (x is not None, x or 0))


_EASYR1_BLOCK = re.compile(
    r"\[prompt\] (?P<prompt>.*?)\n\[output\] (?P<output>.*?)\n"
    r"\[ground_truth\] (?P<gt>.*?)\n\[score\] (?P<score>[^\n]*)(?:\n|\Z)",
    re.DOTALL,
)
"""One ``[prompt] / [output] / [ground_truth] / [score]`` block of EasyR1's ``generations.log`` (the last
one may end the file without a newline)."""


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone UTF-16 surrogate (JSON's ``"\\ud800"``): a Python string can hold it, UTF-8 cannot."""


def _dump_truth(value: Any, where: str, what: str) -> GroundTruth:
    """A dumped ground truth, read; errors name the line (a gge one holds no lone surrogate)."""
    try:
        gt = read_ground_truth(value)
    except GgeError as e:
        raise GgeError(f"{where}: {what}: {e}") from None
    if _SURROGATE.search(gt.to_json()):
        raise GgeError(
            f"{where}: {what}: holds a lone surrogate (invalid Unicode, e.g. \\ud800), which `gge export "
            "verl` never writes: the dump was altered"
        )
    return gt


def _dump_file(path: Path, step: int | None) -> tuple[Path, int | None]:
    """The file to read: ``path`` itself, or in a ``validation_data_dir`` the step's ``<step>.jsonl``."""
    if path.is_file():
        return path, step
    if not path.is_dir():
        raise GgeError(f"dump not found: {path}")
    steps = {int(p.stem): p for p in path.glob("*.jsonl") if p.stem.isdigit()}
    if steps:
        listed = ", ".join(map(str, sorted(steps)))
        if step is None and len(steps) > 1:
            raise GgeError(
                f"{path} holds the validations of {len(steps)} training steps ({listed}): summarize one at "
                "a time, choosing its step with --step N (summarize_verl(step=N))"
            )
        chosen = next(iter(steps)) if step is None else step
        if chosen not in steps:
            raise GgeError(f"{path}: no {chosen}.jsonl; steps dumped: {listed}")
        return steps[chosen], chosen
    if (path / "generations.log").is_file():
        return path / "generations.log", step
    raise GgeError(
        f"{path}: no <step>.jsonl (verl trainer.validation_data_dir) and no generations.log (EasyR1)"
    )


def read_dump(path: str | Path, *, step: int | None = None) -> Dump:
    """Read the responses of one validation from a verl dump or an EasyR1 ``generations.log``.

    Responses whose ground truth is not gge's (another data set validated alongside) are skipped and
    counted; a malformed line, or a gge ground truth that does not read, is an error.

    Args:
        path: A ``<step>.jsonl`` file, verl's ``trainer.validation_data_dir`` (its one step, or
            ``step`` when it holds several), or EasyR1's ``generations.log`` (or the folder holding
            it: EasyR1 appends every validation's ``trainer.val_generations_to_log`` shuffled
            responses to it, unmarked by step, so give it a file holding one validation).
        step: The training step to read (verl).

    Returns:
        The file's responses to gge's samples.

    Raises:
        GgeError: naming the file and line (or block) at fault, or when no response is gge's.
    """
    file, step = _dump_file(Path(path), step)
    text = read_text(file)
    records: list[DumpRecord] = []
    skipped = 0
    if text.startswith("[prompt] "):
        for i, block in enumerate(_EASYR1_BLOCK.finditer(text), start=1):
            where = f"{file}: block {i}"
            if not is_gge_ground_truth(block["gt"]):
                skipped += 1
                continue
            gt = _dump_truth(block["gt"], where, "[ground_truth]")
            records.append(DumpRecord(where, block["output"], gt, None))
        if not records:
            what = "no [prompt]/[output]/[ground_truth]/[score] blocks"
            if skipped:
                plural = "s" if skipped > 1 else ""
                what = f"{skipped} block{plural}, none with a ground truth `gge export verl` wrote"
            raise GgeError(f"{file}: {what}")
        return Dump(file, records, "easyr1", None, skipped)
    seen_steps: set[int] = set()
    repaired: list[str] = []
    for _, where, obj in json_lines(text, file):
        if not isinstance(obj, dict) or not isinstance(obj.get("output"), str):
            raise GgeError(f"{where}: expected a JSON object with a string 'output' (verl's dump format)")
        if "gts" not in obj:
            raise GgeError(
                f"{where}: no 'gts' field: verl dumps the ground truth from v0.5 on (PR #2353); "
                "upgrade verl to summarize its generations"
            )
        line_step = obj.get("step")
        if isinstance(line_step, int):
            seen_steps.add(line_step)
        if step is not None and line_step != step:
            continue
        if not is_gge_ground_truth(obj["gts"]):
            skipped += 1
            continue
        gt = _dump_truth(obj["gts"], where, "field 'gts'")
        output = obj["output"]
        if _SURROGATE.search(output):  # JSON's "\ud800" escape: UTF-8 cannot write it into the outputs
            repaired.append(where)
            output = _SURROGATE.sub("\ufffd", output)
        records.append(DumpRecord(where, output, gt, line_step if isinstance(line_step, int) else None))
    if not records:
        hint = f"; steps in it: {', '.join(map(str, sorted(seen_steps)))}" if seen_steps else ""
        of_step = f" of step {step}" if step is not None else ""
        if skipped:
            raise GgeError(
                f"{file}: no responses to gge's samples{of_step}: its {skipped} responses have ground truths "
                "that `gge export verl` did not write"
            )
        raise GgeError(f"{file}: no responses{of_step}{hint}")
    steps = {r.step for r in records}
    if step is None and len(steps) == 1:
        step = next(iter(steps))
    return Dump(file, records, "verl", step, skipped, tuple(repaired))


def _export_ground_truths(export: Path) -> list[GroundTruth]:
    """The ground truths of every row of an export folder (to count samples the trainer dropped).

    A folder without ``manifest.json`` (an export that stopped before the end) is refused, and so is a
    parquet file its ``manifest.json`` does not list (left by an earlier export into the folder): its
    samples would count as dropped by the trainer.
    """
    _, pq = _pyarrow()
    files = sorted((export / "data").glob("*.parquet"))
    if not files:
        raise GgeError(f"{export}: no data/*.parquet (an output folder of `gge export verl`)")
    manifest = export / "manifest.json"
    if not manifest.is_file():
        raise GgeError(
            f"--export {export}: not a finished gge export: no manifest.json (the export stopped before "
            f"writing it?); rerun gge export verl ... out={export} overwrite=true"
        )
    try:
        listed = json.loads(read_text(manifest)).get("files")
    except (json.JSONDecodeError, AttributeError):
        listed = None
    if not isinstance(listed, dict):
        raise GgeError(f"{manifest}: not the manifest `gge export verl` writes (no 'files' object)")
    names = {Path(str(f)).name for f in listed.values()}
    stale = [f.name for f in files if f.name not in names]
    if stale:
        raise GgeError(
            f"{export / 'data'} holds {', '.join(stale)}, which its manifest.json does not list (left "
            "by an earlier export into the folder?): their samples would count as dropped by the "
            "trainer; export again into a new folder, or with overwrite=true"
        )
    out = []
    for f in files:
        table = pq.read_table(f)
        if "answer" in table.column_names:
            values = table.column("answer").to_pylist()
        else:
            values = [rm["ground_truth"] for rm in table.column("reward_model").to_pylist()]
        for i, value in enumerate(values):
            try:
                out.append(read_ground_truth(value))
            except GgeError as e:
                raise GgeError(f"{f}: row {i}: {e}") from None
    return out


def _step_name(step: int | None) -> str:
    return "no step" if step is None else f"step {step}"


def _check_summary_out(out: str | Path) -> Path:
    """``out`` as a Path, or a one-line error when it cannot be a folder written to (checked first).

    ``out`` or a parent is a file, or the nearest existing folder above it is not writable.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "x"
        >>> _ = f.write_text("")
        >>> _check_summary_out(f / "sub")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: --out .../x/sub: .../x is a file, not a folder: give the folder the ...
    """
    path = Path(out)
    try:
        check_output_dir(path, option="--out")
    except GgeError as e:
        raise GgeError(f"{e}: give the folder the summary goes to") from None
    existing = next((p for p in (path, *path.parents) if p.exists()), Path.cwd())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GgeError(f"--out {path}: {existing} is not writable: give a folder the summary can go to")
    return path


_Key = tuple[int | None, str, str]
"""A sample of one validation: (step, benchmark, id)."""
_Grouped = dict[_Key, tuple[GroundTruth, list[str]]]
"""Per sample, its ground truth and its responses in the dump's order."""


def _read_dumps(paths: Sequence[str | Path], step: int | None) -> tuple[list[Dump], int | None]:
    """Every dump read, refusing a file given twice or responses of several steps; and their step."""
    dumps = [read_dump(p, step=step) for p in paths]
    files = [d.file.resolve() for d in dumps]
    for i, f in enumerate(files):
        if f in files[:i]:
            raise GgeError(f"{dumps[i].file} is given twice: its responses would count twice")
    steps = {st for d in dumps for st in d.steps}
    if len(steps) > 1:
        listed = "; ".join(f"{d.file}: {', '.join(_step_name(st) for st in d.steps)}" for d in dumps)
        raise GgeError(
            f"the dump spans {len(steps)} training steps ({listed}): summarize one validation at a time, "
            "choosing its step with --step N (summarize_verl(step=N))"
        )
    return dumps, next(iter(steps))


def _group_responses(
    dumps: Sequence[Dump], the_step: int | None, export: str | Path | None
) -> tuple[_Grouped, dict[str, int]]:
    """The responses grouped by sample; the ``export``'s samples without one added, counted per benchmark."""
    grouped: _Grouped = {}
    for r in (r for d in dumps for r in d.records):
        key = (r.step, r.ground_truth.benchmark, r.ground_truth.id)
        grouped.setdefault(key, (r.ground_truth, []))[1].append(r.output)
    missing: dict[str, int] = {}
    if export is not None:
        for gt in _export_ground_truths(Path(export)):
            if (the_step, gt.benchmark, gt.id) not in grouped:
                grouped[(the_step, gt.benchmark, gt.id)] = (gt, [])
                missing[gt.benchmark] = missing.get(gt.benchmark, 0) + 1
    return grouped, missing


def _refuse_uneven(grouped: _Grouped, sizes: Counter[int]) -> None:
    """The error for samples with different numbers of responses (without ``allow_uneven``)."""
    by_count = sorted(sizes, key=lambda n: (-sizes[n], n))
    counts = "; ".join(f"{sizes[n]} sample{'s' if sizes[n] > 1 else ''} with n={n}" for n in by_count)
    common = max(sizes, key=lambda n: sizes[n])
    odd = next((key, texts) for key, (_, texts) in grouped.items() if texts and len(texts) != common)
    raise GgeError(
        f"samples have different numbers of responses ({counts}; e.g. {odd[0][1]} {odd[0][2]} has "
        f"{len(odd[1])}): a prompt listed twice in val_files, dumps pooled, or EasyR1's log of a random "
        "subset. Pass --allow-uneven (allow_uneven=True) to score each sample with its own n: pass@k "
        f"for k up to the smallest n ({min(sizes)}), Oracle@K over each sample's first K responses"
    )


def _choose_k(grouped: _Grouped, sizes: Counter[int], k: int | None, one_point: bool) -> int:
    """The K scored: ``k``, or the fewest responses (``single_pass``: the preset's K), checked."""
    n_min, n_max = min(sizes), max(sizes)
    kk = k if k is not None else (n_min if one_point else max(gt.k for gt, _ in grouped.values()))
    if kk < 1:
        raise GgeError(f"k must be at least 1, got {kk}")
    most = n_max if one_point else max(gt.k for gt, _ in grouped.values())
    if kk > most:
        what = "responses" if one_point else "points a single_pass answer holds"
        raise GgeError(
            f"k={kk}, but no sample has more than {most} {what}: Oracle@{kk} would be Oracle@{most} "
            f"under another name; give --k {most} or less (or leave it out)"
        )
    return kk


def _score(
    grouped: _Grouped, kk: int, one_point: bool, view: dict[str, Any]
) -> tuple[
    dict[str, list[SampleResult]], dict[tuple[str, str], tuple[int, int]], dict[tuple[str, str], Sample]
]:
    """Each sample scored at ``kk``; per sample, its (responses, hits among all of them) and its Sample."""
    by_bench: dict[str, list[SampleResult]] = {}
    hits_of: dict[tuple[str, str], tuple[int, int]] = {}
    samples: dict[tuple[str, str], Sample] = {}
    for (_, name, sid), (gt, texts) in grouped.items():
        scored = gt.score(texts, k=kk, **view)
        by_bench.setdefault(name, []).append(scored)
        samples[(name, sid)] = gt.sample()
        if one_point:  # every response, for pass@k from the sample's own n
            every = scored if kk == max(1, len(texts)) else gt.score(texts, k=max(1, len(texts)), **view)
            hits_of[(name, sid)] = (len(texts), sum(every.hits))
    return by_bench, hits_of, samples


def _benchmark_extras(
    grouped: _Grouped,
    the_step: int | None,
    by_bench: dict[str, list[SampleResult]],
    hits_of: dict[tuple[str, str], tuple[int, int]],
    *,
    one_point: bool,
    pass_n: int,
    missing: dict[str, int],
    has_export: bool,
) -> tuple[dict[str, Benchmark], dict[str, dict[str, Any]], list[SampleResult]]:
    """In gge's order: the benchmarks, each one's extras and every result.

    The extras: pass@k (one-point answers), responses per sample, missing responses (with an export).
    """
    from gge.scoring.analysis import pass_at_k

    all_results: list[SampleResult] = []
    benches = {}
    extras: dict[str, dict[str, Any]] = {}
    order = list(REGISTRY)  # the order gge reports benchmarks in
    for name in sorted(by_bench, key=lambda b: (b not in order, order.index(b) if b in order else 0, b)):
        benches[name] = get_benchmark(name)
        results = by_bench[name]
        extra: dict[str, Any] = {}
        if one_point:
            nc = [hits_of[(name, r.id)] for r in results]
            table: dict[str, Any] = {"n": pass_n, "first_slot": 0}
            for j in range(1, pass_n + 1):
                total = sum(pass_at_k(n, c, j) for n, c in nc if n)  # no response: a miss
                table[f"pass@{j}"] = 100.0 * total / len(nc)
            extra["pass_at_k"] = table
        got = [len(grouped[(the_step, name, r.id)][1]) for r in results]
        extra["responses_per_sample"] = {"min": min(got), "max": max(got)}
        if has_export:
            extra["missing_responses"] = missing.get(name, 0)
        extras[name] = extra
        all_results += results
    return benches, extras, all_results


def _protocol(fmt: str, preset: Sequence[str], per_sample: str, kk: int, easyr1: bool) -> str:
    """The document's protocol line: what was scored, and how."""
    protocol = (
        f"{fmt} validation generations ({per_sample} per sample) of the {', '.join(preset)} request "
        "exported by gge; "
        + (
            "one answer scored per sample: Top-1 only"
            if kk == 1
            else "Top-1 is the first response, Oracle@K some response among the first K"
        )
    )
    if easyr1:
        protocol += (
            "; EasyR1's generations.log holds a random sample of the validation's responses: the numbers "
            "are over the logged responses only, and each sample's Top-1 is its first logged response, "
            "a random one of its responses"
        )
    return protocol


def _notes(
    easyr1: bool,
    sizes: Counter[int],
    pass_n: int,
    kk: int,
    missing: dict[str, int],
    skipped: int,
    repaired: Sequence[str],
) -> list[str]:
    """The document's notes: what differs from a full validation."""
    n_min, n_max = min(sizes), max(sizes)
    notes: list[str] = []
    if easyr1:
        notes.append(
            "EasyR1 logs only trainer.val_generations_to_log responses per validation, chosen by a "
            "(fixed-seed) shuffle of all of them, and appends each validation to generations.log without "
            "its step: this summary is over a random sample of the validation's responses (all of them "
            "only when trainer.val_generations_to_log reaches their number), pooling every validation in "
            "the file (keep one validation's blocks in it), and each sample's Top-1 is whichever of its "
            "responses was logged first, not the model's first answer"
        )
    if n_min != n_max:
        notes.append(
            f"responses per sample differ (n = {n_min} to {n_max}; "
            + ", ".join(f"{sizes[n]} with n={n}" for n in sorted(sizes))
            + f"): pass@k is each sample's unbiased estimate from its own n, for k up to {pass_n}; "
            f"Oracle@K reads each sample's first K={kk} responses"
        )
    if missing:
        notes.append(
            f"{sum(missing.values())} exported samples have no response in the dump and count as misses "
            "(pass@k 0)"
            + (
                ": right only when the log holds every response of the validation"
                if easyr1
                else " (dropped by the trainer, e.g. by its prompt-length filter)"
            )
        )
    if skipped:
        notes.append(
            f"skipped {skipped} response{'s' if skipped > 1 else ''} whose ground truth is not gge's "
            "(other data validated alongside)"
        )
    if repaired:
        notes.append(
            f"{len(repaired)} response{'s' if len(repaired) > 1 else ''} held lone surrogates (invalid "
            f"Unicode, first at {repaired[0]}), each replaced by U+FFFD to be written as UTF-8; the "
            "answers were read and scored with the rest of their text as dumped"
        )
    return notes


def _write_summary(
    out: Path,
    document: ResultsDocument,
    report: str,
    all_results: Sequence[SampleResult],
    samples: Mapping[tuple[str, str], Sample],
    benches: Mapping[str, Benchmark],
    report_misses: int,
) -> dict[str, Any]:
    """Write the summary's folder; the results document as written (errors name the file)."""
    from gge.run.assemble import write_run

    try:
        written = write_run(out, document, report, all_results, samples, benches, misses=report_misses)
        loaded: dict[str, Any] = json.loads(written.read_text(encoding="utf-8"))
    except OSError as e:
        where = e.filename2 or e.filename or out  # os.replace: filename2 is the destination
        raise GgeError(f"--out {out}: cannot write {where}: {e.strerror or e}") from None
    return loaded


def summarize_verl(
    dump: str | Path | Sequence[str | Path],
    out: str | Path,
    *,
    k: int | None = None,
    step: int | None = None,
    export: str | Path | None = None,
    max_pixels: int | None = None,
    min_pixels: int | None = None,
    allow_uneven: bool = False,
    report_misses: int = 20,
) -> dict[str, Any]:
    """Turn a trainer's dumped validation generations into gge's results, with the official rules.

    One validation (one training step) at a time: dumps spanning several steps are refused (choose
    one with ``step``). The n responses to a sample are its n candidates, exchangeable (sampled from
    one prompt): Oracle@K is "some response among the first K hits", ``pass_at_k`` the unbiased pass@k
    of each sample from its own n responses, averaged (k = 1..n, ``pass@1`` being verl's
    ``mean@n``), Top-1 the first response. Every sample must have the same n (a prompt listed twice
    in ``val_files`` has 2n; EasyR1's log holds a random subset of the responses) unless
    ``allow_uneven``: then pass@k is reported for k up to the smallest n, and Oracle@K (K: the
    smallest n by default) reads each sample's first K responses. Samples the ``export`` finds
    without any response count as misses (pass@k 0). Official averages (macro where the benchmark's
    paper uses one) and tables are computed as ``eval.py`` computes them. The document's ``notes``
    say what differs from a full validation (skipped non-gge responses, EasyR1's sample, uneven n).

    Args:
        dump: verl dump file(s) or folder, or EasyR1 ``generations.log`` (see :func:`read_dump`).
        out: Output folder: ``results.json``, ``predictions.jsonl``, ``report.md``, ``report.html``.
        k: Responses scored per sample (default: the fewest any sample has, which is all of them
            when every sample has the same number; ``single_pass``: the preset's K), at most the
            most any sample has (a one-response dump: ``k`` 1, a Top-1-only summary).
        step: The training step to read.
        export: The export folder: samples with no response in the dump (e.g. dropped by the
            trainer's prompt-length filter) are counted as misses with a format error.
        max_pixels: The trainer's ``max_pixels``, when it differs from what the export assumed.
        min_pixels: The trainer's ``min_pixels``, likewise.
        allow_uneven: Score samples with different numbers of responses (see above).
        report_misses: Misses per benchmark in ``report.html``'s gallery.

    Returns:
        The results document (also written to ``out/results.json``).

    Raises:
        GgeError: for unreadable dumps (naming the file and line), dumps of several steps, the same
            file given twice, unequal numbers of responses without ``allow_uneven``, a ``k`` above
            the responses (or ``single_pass`` points) any sample has, an ``out`` that is (or lies under)
            a file or is not writable (checked before any dump is read), or an ``export`` folder
            without ``manifest.json``.
    """
    from gge.run.assemble import build_document

    paths = [dump] if isinstance(dump, (str, Path)) else list(dump)
    if not paths:
        raise GgeError("no dump given")
    out = _check_summary_out(out)
    dumps, the_step = _read_dumps(paths, step)
    formats = sorted({d.format for d in dumps})
    skipped = sum(d.skipped for d in dumps)
    view = _view_kwargs({"max_pixels": max_pixels, "min_pixels": min_pixels})
    grouped, missing = _group_responses(dumps, the_step, export)
    one_point = all(gt.proposer != "single_pass" for gt, _ in grouped.values())
    sizes = Counter(len(texts) for _, texts in grouped.values() if texts)
    n_min, n_max = min(sizes), max(sizes)
    if one_point and len(sizes) > 1 and not allow_uneven:
        _refuse_uneven(grouped, sizes)
    kk = _choose_k(grouped, sizes, k, one_point)
    by_bench, hits_of, samples = _score(grouped, kk, one_point, view)
    pass_n = min(kk, n_min)
    benches, extras, all_results = _benchmark_extras(
        grouped,
        the_step,
        by_bench,
        hits_of,
        one_point=one_point,
        pass_n=pass_n,
        missing=missing,
        has_export=export is not None,
    )
    exchangeable = 0 if one_point else None
    gts = [gt for gt, _ in grouped.values()]
    preset = sorted({gt.preset for gt in gts})
    fmt = "/".join(formats)
    easyr1 = "easyr1" in formats
    per_sample = f"{n_min}" if n_min == n_max else f"{n_min} to {n_max}"
    protocol = _protocol(fmt, preset, per_sample, kk, easyr1)
    repaired = [where for d in dumps for where in d.repaired]
    notes = _notes(easyr1, sizes, pass_n, kk, missing, skipped, repaired)
    document, report = build_document(
        benches,
        by_bench,
        k=kk,
        strategy=SELECTION,
        protocol=protocol,
        model={
            "preset": preset,
            "convention": sorted({gt.convention for gt in gts}),
            "proposer": sorted({gt.proposer for gt in gts}),
            "flavor": sorted({gt.flavor for gt in gts}),
        },
        config={
            "dump": [str(p) for p in paths],
            "format": fmt,
            "step": the_step,
            "export": None if export is None else str(export),
            "max_pixels": max_pixels,
            "min_pixels": min_pixels,
            "allow_uneven": allow_uneven,
            "skipped_responses": skipped,
            "repaired_responses": len(repaired),
            "sample_of_validation": easyr1,
        },
        extras=extras,
        notes=notes,
        metrics_options={"exchangeable_from": exchangeable},
    )
    return _write_summary(  # as written (what eval.py's run returns too)
        out, document, report, all_results, samples, benches, report_misses
    )
