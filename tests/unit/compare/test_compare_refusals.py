"""``gge compare`` refuses what it cannot pair, and pins the rules of its headlines (issue 19).

Every run here is a hand-built output folder: a results.json whose numbers are computed in this file
by plain formulas from the predictions.jsonl lines written beside it, and (optionally) the run.json
recording each benchmark's samples digest. The expected numbers of each comparison are computed
here too, independently of :mod:`gge.compare` (a plain loop over the bootstrap's resamples, scipy's
normal quantiles, group means by hand).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm

from gge.cli.commands import main
from gge.compare import compare_runs, load_run, render_markdown, write_compare
from gge.documents.results import SCHEMA_VERSION
from gge.errors import GgeError
from gge.scoring.stats import resample_weights

SEL = "critic"
ABSENT = object()
"""``write_run(schema_version=ABSENT)``: a results.json without ``schema_version``."""


def _cands(n: int) -> list[list[float]]:
    return [[float(10 * i + 1), 7.0] for i in range(n)]


def line(
    bench: str,
    sid: str,
    hits: Sequence[bool],
    top1: bool,
    *,
    image: str | None = None,
    labels: dict[str, str] | None = None,
    selection: str = SEL,
    format_error: bool = False,
    image_error: str | None = None,
) -> dict[str, Any]:
    """A consistent predictions.jsonl line: the critic's pick is a hitting candidate iff Top-1 hits."""
    cands = _cands(len(hits))
    if top1:
        pick: list[float] | None = cands[list(hits).index(True)]
    elif False in hits:
        pick = cands[list(hits).index(False)]
    else:
        pick = None
    rec: dict[str, Any] = {
        "benchmark": bench,
        "id": sid,
        "candidates": cands,
        "raw": "",
        "format_error": format_error,
        "hits": list(hits),
        "image": image if image is not None else f"/shots/{bench}/{sid}.png",
        "top1": {selection: top1},
        "picks": {selection: pick},
    }
    if image_error is not None:
        rec["image_error"] = image_error
    if labels is not None:
        rec["labels"] = labels
    return rec


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_run(
    folder: Path,
    lines: Sequence[dict[str, Any]],
    *,
    k: int = 5,
    selection: str = SEL,
    schema_version: Any = SCHEMA_VERSION,
    digests: dict[str, str] | str | None = "ids",
    variant: Any = "original",
    headline: dict[str, float] | None = None,
) -> Path:
    """Write results.json (numbers by plain formulas), predictions.jsonl and run.json into ``folder``.

    The entries are S1's (unqualified = official headline, micro in ``micro``); ``schema_version`` is
    written first (``ABSENT``: none). ``digests`` "ids": a digest of each benchmark's ids; a dict:
    those digests; None: no run.json. ``variant`` "original": ``load.variant = {}``; None: no ``load``
    (as summarize-verl writes). ``headline``: the official Top-1 written per benchmark (default: the
    micro one).
    """
    folder.mkdir(parents=True, exist_ok=True)
    by_bench: dict[str, list[dict[str, Any]]] = {}
    for rec in lines:
        by_bench.setdefault(rec["benchmark"], []).append(rec)
    benchmarks: dict[str, Any] = {}
    for name, recs in by_bench.items():
        n = len(recs)
        micro_top1 = 100 * sum(r["top1"][selection] for r in recs) / n
        micro_orc = 100 * sum(any(r["hits"][:k]) for r in recs) / n
        head = (headline or {}).get(name, micro_top1)
        entry: dict[str, Any] = {
            "samples": n,
            "top1": head,
            f"oracle@{k}": micro_orc,
            "micro": {"top1": micro_top1, f"oracle@{k}": micro_orc},
            "official": {"rule": "?", "top1": head, f"oracle@{k}": micro_orc},
            "format_errors": sum(bool(r.get("format_error")) for r in recs),
            "image_errors": [{"id": r["id"], "error": r["image_error"]} for r in recs if "image_error" in r],
        }
        if variant is not None:
            entry["load"] = {"variant": {} if variant == "original" else variant}
        benchmarks[name] = entry
    doc: dict[str, Any] = {} if schema_version is ABSENT else {"schema_version": schema_version}
    doc |= {"gge_version": "0.1.0", "k": k, "selection": selection, "protocol": "hand-built"}
    doc["benchmarks"] = benchmarks
    (folder / "results.json").write_text(json.dumps(doc))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    if digests is not None:
        if digests == "ids":
            digests = {n: _digest(",".join(sorted(r["id"] for r in recs))) for n, recs in by_bench.items()}
        assert isinstance(digests, dict)
        fp = {"benchmarks": {n: {"options": {}, "samples": d} for n, d in digests.items()}}
        (folder / "run.json").write_text(json.dumps({"fingerprint": fp}))
    return folder


def ss_lines(outcomes: Sequence[tuple[bool, bool]], bench: str = "screenspot_v2") -> list[dict[str, Any]]:
    """Lines of ``bench`` from (top1, oracle) pairs; two samples per screenshot."""
    out = []
    for i, (top1, oracle) in enumerate(outcomes):
        hits = [False, True, False] if oracle and not top1 else [True, False, False] if top1 else [False] * 3
        out.append(
            line(bench, f"s{i}", hits, top1, image=f"/shots/{bench}/{i // 2}.png", labels={"split": "mobile"})
        )
    return out


A_OUT = [(True, True), (False, True), (False, False), (True, True), (False, False), (False, True)] * 2
B_OUT = [(True, True), (True, True), (False, False), (False, True), (True, True), (False, False)] * 2


def _refused(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    assert main(["compare", *map(str, argv), "--resamples", "50"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("gge: error: ") and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err
    return captured.err


# -- item 1: different samples behind the same ids --------------------------------------------------


def test_refuses_different_samples_digests_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    da, db = _digest("screens of run A"), _digest("screens of run B")
    a = write_run(tmp_path / "A", ss_lines(A_OUT), digests={"screenspot_v2": da})
    b = write_run(tmp_path / "B", ss_lines(B_OUT), digests={"screenspot_v2": db})
    err = _refused(capsys, a, b)
    assert str(a) in err and str(b) in err and "screenspot_v2: different samples" in err
    assert da[:16] in err and db[:16] in err
    assert str(a / "run.json") in err and str(b / "run.json") in err
    # the same digests pair
    write_run(tmp_path / "B", ss_lines(B_OUT), digests={"screenspot_v2": da})
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    assert not any("digest" in n for n in doc["notes"]) and doc["warnings"] == []


def test_a_run_without_a_digest_is_paired_by_ids_with_a_note(tmp_path: Path) -> None:
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    b = write_run(tmp_path / "B", ss_lines(B_OUT), digests=None)  # an older gge: no run.json
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    notes = [n for n in doc["notes"] if "digest" in n]
    assert len(notes) == 1 and str(b) in notes[0] and "by id only" in notes[0]
    c = write_run(tmp_path / "C", ss_lines(B_OUT), digests={})  # run.json without this benchmark
    doc = compare_runs(load_run(a), load_run(c), resamples=20)
    notes = [n for n in doc["notes"] if "digest" in n]
    assert len(notes) == 1 and "screenspot_v2" in notes[0] and str(c) in notes[0]


# -- results.json is read by its schema_version -----------------------------------------------------


@pytest.mark.parametrize("version", [ABSENT, 99])
def test_refuses_a_results_json_of_another_schema_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: Any
) -> None:
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    b = write_run(tmp_path / "B", ss_lines(B_OUT), schema_version=version)
    err = _refused(capsys, a, b)
    found = "no schema_version (written by gge 0.1.0)" if version is ABSENT else "schema_version 99"
    assert err.startswith(f"gge: error: {b / 'results.json'}: {found}")
    assert f"reads schema_version {SCHEMA_VERSION}" in err
    assert f"python eval.py model=replay model.predictions={b / 'predictions.jsonl'}" in err
    with pytest.raises(GgeError, match="schema_version"):
        load_run(b)
    # a JSON object that is no gge document at all says so
    (b / "results.json").write_text("{}")
    assert "no schema_version (no gge_version: not written by gge?)" in _refused(capsys, a, b)


# -- item 1: predictions.jsonl must reproduce its own results.json ----------------------------------


def test_refuses_predictions_that_do_not_reproduce_results_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    b = write_run(tmp_path / "B", ss_lines(B_OUT))
    results = json.loads((b / "results.json").read_text())
    micro = results["benchmarks"]["screenspot_v2"]["micro"]
    want_top1 = 100 * sum(t for t, _ in B_OUT) / len(B_OUT)  # 6 of 12
    assert micro["top1"] == pytest.approx(want_top1)
    micro["top1"] = 19.4  # a results.json of another run
    (b / "results.json").write_text(json.dumps(results))
    err = _refused(capsys, a, b)
    assert str(b / "predictions.jsonl") in err and str(b / "results.json") in err
    assert "screenspot_v2" in err and "Top-1" in err and "19.4" in err and f"{want_top1:.6g}" in err
    micro["top1"] = want_top1 + 0.01  # more than rounding
    (b / "results.json").write_text(json.dumps(results))
    assert f"reports {want_top1 + 0.01:.6g}" in _refused(capsys, a, b)
    micro["top1"] = want_top1 + 1e-9  # rounding: accepted
    (b / "results.json").write_text(json.dumps(results))
    assert main(["compare", str(a), str(b), "--resamples", "20"]) == 0
    capsys.readouterr()
    micro["top1"] = want_top1
    micro["oracle@5"] += 100 / 12  # one more Oracle hit than the lines hold
    (b / "results.json").write_text(json.dumps(results))
    err = _refused(capsys, a, b)
    want_orc = 100 * sum(o for _, o in B_OUT) / len(B_OUT)
    assert "screenspot_v2" in err and "Oracle@5" in err and f"{want_orc:.6g}" in err
    assert f"{want_orc + 100 / 12:.6g}" in err


def test_the_headline_of_a_new_file_is_not_taken_for_its_micro_mean(tmp_path: Path) -> None:
    """S1: the unqualified top1 of a file with ``micro`` is the official headline, which may differ."""
    a = write_run(tmp_path / "A", ss_lines(A_OUT), headline={"screenspot_v2": 71.0})
    b = write_run(tmp_path / "B", ss_lines(B_OUT), headline={"screenspot_v2": 3.0})
    doc = compare_runs(load_run(a), load_run(b), resamples=20)  # not refused
    assert doc["benchmarks"]["screenspot_v2"]["micro"]["top1"]["b"] == pytest.approx(50.0)  # 6 of 12


def test_refuses_another_runs_predictions_copied_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    b = write_run(tmp_path / "B", ss_lines(B_OUT))
    (b / "predictions.jsonl").write_text((a / "predictions.jsonl").read_text())
    err = _refused(capsys, a, b)
    assert f"{b / 'predictions.jsonl'}: screenspot_v2: Top-1" in err


def test_a_subset_run_is_said_so(tmp_path: Path) -> None:
    """S2: a run that evaluated the first N of M samples is named in a note."""
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    b = write_run(tmp_path / "B", ss_lines(B_OUT))
    results = json.loads((b / "results.json").read_text())
    results["subset"] = {
        "max_samples": 12,
        "benchmarks": {
            "screenspot_v2": {"evaluated": 12, "total": 1272},
            "osworld_g": {"evaluated": 12, "total": 12},  # not cut: not named, as report.md says it
        },
    }
    (b / "results.json").write_text(json.dumps(results))
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    notes = [n for n in doc["notes"] if "subset" in n]
    assert notes == [
        f"B ({b}) is a subset run (subset: first 12 of 1272 samples (screenspot_v2); max_samples=12: "
        "not comparable with published numbers)"
    ]
    assert f"- note: {notes[0]}" in render_markdown(doc)


# -- item 1: impossible lines -----------------------------------------------------------------------


def _with_line(tmp_path: Path, index: int, rec: dict[str, Any]) -> tuple[Path, Path]:
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    lines = ss_lines(B_OUT)
    lines[index] = rec
    return a, write_run(tmp_path / "B", lines)


def test_refuses_a_top1_hit_with_no_hitting_candidate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = line("screenspot_v2", "s2", [False, False, False], False, image="/shots/screenspot_v2/1.png")
    rec["top1"][SEL] = True  # hand-edited: Top-1 above Oracle@5
    a, b = _with_line(tmp_path, 2, rec)
    err = _refused(capsys, a, b)
    assert f"{b / 'predictions.jsonl'}:3:" in err and "Top-1 hit" in err and "no candidate hits" in err


def test_refuses_a_pick_that_is_not_a_candidate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = line("screenspot_v2", "s1", [True, True, False], True, image="/shots/screenspot_v2/0.png")
    rec["picks"][SEL] = [500.0, 500.0]
    a, b = _with_line(tmp_path, 1, rec)
    err = _refused(capsys, a, b)
    assert f"{b / 'predictions.jsonl'}:2:" in err and "[500.0, 500.0]" in err and "not one of" in err


def test_refuses_a_pick_whose_hit_contradicts_top1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = line("screenspot_v2", "s4", [False, True, False], True, image="/shots/screenspot_v2/2.png")
    rec["picks"][SEL] = rec["candidates"][0]  # a missing candidate, yet Top-1 hits
    a, b = _with_line(tmp_path, 4, rec)
    err = _refused(capsys, a, b)
    assert f"{b / 'predictions.jsonl'}:5:" in err and "hits but its pick, candidate 1, misses" in err
    rec = line("screenspot_v2", "s4", [False, True, False], False, image="/shots/screenspot_v2/2.png")
    rec["picks"][SEL] = rec["candidates"][1]  # a hitting candidate, yet Top-1 misses
    a, b = _with_line(tmp_path, 4, rec)
    err = _refused(capsys, a, b)
    assert f"{b / 'predictions.jsonl'}:5:" in err and "misses but its pick, candidate 2, hits" in err


def test_refuses_hits_that_do_not_match_the_candidates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = line("screenspot_v2", "s0", [True, False, False], True, image="/shots/screenspot_v2/0.png")
    rec["candidates"] = rec["candidates"][:2]
    a, b = _with_line(tmp_path, 0, rec)
    err = _refused(capsys, a, b)
    assert f"{b / 'predictions.jsonl'}:1:" in err and "3 hits for 2 candidates" in err


def test_an_abstention_may_hit_a_refusal_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OSWorld-G refusals: an abstaining candidate (null) hits; the critic picking it is a Top-1 hit."""

    def refusal(sid: str, top1: bool) -> dict[str, Any]:
        rec = line("osworld_g", sid, [True, False], top1)
        rec["candidates"][0] = None  # the abstention, which hits the refusal target
        rec["picks"][SEL] = None if top1 else rec["candidates"][1]
        return rec

    a = write_run(tmp_path / "A", [refusal(f"r{i}", i % 2 == 0) for i in range(6)])
    b = write_run(tmp_path / "B", [refusal(f"r{i}", True) for i in range(6)])
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    assert doc["benchmarks"]["osworld_g"]["micro"]["top1"]["b"] == 100.0
    lines = [refusal(f"r{i}", True) for i in range(6)]
    lines[4]["top1"][SEL] = False  # picked the hitting abstention, yet a miss
    err = _refused(capsys, a, write_run(tmp_path / "C", lines))
    assert (
        f"{tmp_path / 'C' / 'predictions.jsonl'}:5:" in err
        and "misses but its pick, candidate 1, hits" in err
    )


def test_a_spatial_pick_may_hit_where_no_candidate_does(tmp_path: Path) -> None:
    """A mean of candidates is a new point: a Top-1 hit above Oracle@K is possible, not refused."""
    recs = [line("screenspot_v2", f"s{i}", [False, False], False, selection="mean") for i in range(6)]
    recs[2]["top1"]["mean"], recs[2]["picks"]["mean"] = True, [6.0, 7.0]
    a = write_run(
        tmp_path / "A", recs[:1] + [dict(r, top1={"mean": False}) for r in recs[1:]], selection="mean"
    )
    b = write_run(tmp_path / "B", recs, selection="mean")
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    assert doc["benchmarks"]["screenspot_v2"]["micro"]["top1"]["b"] == pytest.approx(100 / 6)


# -- item 1: --out ----------------------------------------------------------------------------------


def test_out_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    b = write_run(tmp_path / "B", ss_lines(B_OUT))
    afile = tmp_path / "a-file"
    afile.write_text("")
    err = _refused(capsys, a, b, "--out", afile)
    assert f"--out {afile}: " in err and "is a file" in err
    err = _refused(capsys, a, b, "--out", afile / "sub")
    assert f"--out {afile / 'sub'}: {afile} is a file" in err
    blocked = tmp_path / "blocked"
    (blocked / "compare.json").mkdir(parents=True)  # compare.json cannot be written, even as root
    err = _refused(capsys, a, b, "--out", blocked)
    assert f"--out {blocked}: cannot write {blocked / 'compare.json'}" in err


# -- items 4, 5, 8: what the tables show -------------------------------------------------------------


def _md_rows(md: str, first_header: str) -> dict[str, dict[str, str]]:
    """The first markdown table whose header starts with ``first_header``, as {first cell: {col: cell}}."""
    rows: list[list[str]] = []
    for text in md.splitlines():
        cells = [c.strip() for c in text.strip().strip("|").split("|")]
        if text.startswith("|") and (rows or cells[0] == first_header):
            rows.append(cells)
        elif rows:
            break
    header, body = rows[0], [r for r in rows[2:]]
    return {r[0]: dict(zip(header, r, strict=True)) for r in body}


def test_summary_tables_carry_image_errors_beside_format_errors(tmp_path: Path) -> None:
    la, lb = ss_lines(A_OUT), ss_lines(B_OUT)
    la[0]["format_error"] = True
    for i in (2, 5):
        lb[i] = line("screenspot_v2", f"s{i}", [], False, image=la[i]["image"], image_error="unreadable")
        lb[i]["picks"][SEL] = None
    b_out = [(False, False) if i in (2, 5) else o for i, o in enumerate(B_OUT)]
    assert [(r["top1"][SEL], any(r["hits"])) for r in lb] == b_out
    doc = compare_runs(
        load_run(write_run(tmp_path / "A", la)), load_run(write_run(tmp_path / "B", lb)), resamples=20
    )
    e = doc["benchmarks"]["screenspot_v2"]
    assert e["format_errors"] == {"a": 1, "b": 0} and e["image_errors"] == {"a": 0, "b": 2}
    row = _md_rows(render_markdown(doc), "benchmark")["ScreenSpot-v2"]
    assert row["format errors A/B"] == "1/0" and row["image errors A/B"] == "0/2"
    write_compare(doc, tmp_path / "out")
    page = (tmp_path / "out" / "compare.html").read_text()
    assert "format errors A 1 · B 0" in page and "image errors A 0 · B 2" in page


def test_a_one_answer_comparison_shows_top1_only(tmp_path: Path) -> None:
    def one(outcomes: Sequence[bool]) -> list[dict[str, Any]]:
        return [
            line("ui_vision", f"u{i}", [t], t, labels={"setting": "basic"}, image=f"/u/{i}.png")
            for i, t in enumerate(outcomes)
        ]

    a = write_run(tmp_path / "A", one([True, False] * 4), k=1)
    b = write_run(tmp_path / "B", one([True, True, False, False] * 2), k=1)
    doc = compare_runs(load_run(a), load_run(b), resamples=20)
    assert doc["k"] == 1
    text = json.dumps(doc)
    assert "oracle" not in text.lower()
    md = render_markdown(doc)
    assert "Oracle" not in md and "Top-1" in md and "Top-1 only" in md
    write_compare(doc, tmp_path / "out")
    page = (tmp_path / "out" / "compare.html").read_text()
    assert "Oracle" not in page and "Top-1" in page
    # K differs: the note says Top-1 only, not "Oracle@K is compared at K = 1"
    c_lines = [
        line("ui_vision", f"u{i}", [t, False], t, labels={"setting": "basic"}, image=f"/u/{i}.png")
        for i, t in enumerate([True, True, False, False] * 2)
    ]
    c = write_run(tmp_path / "C", c_lines)
    doc = compare_runs(load_run(a), load_run(c), resamples=20)
    assert doc["k"] == 1 and "oracle" not in json.dumps(doc).lower()
    assert any("Top-1 only" in n for n in doc["notes"])


def _uv_lines(values: Sequence[tuple[str, bool, bool]], per_shot: int = 2) -> list[dict[str, Any]]:
    """UI-Vision lines from (setting, top1, oracle); ``per_shot`` samples of a setting per screenshot."""
    out: list[dict[str, Any]] = []
    counter: dict[str, int] = {}
    for i, (setting, top1, oracle) in enumerate(values):
        j = counter.setdefault(setting, 0)
        counter[setting] = j + 1
        hits = [False, True] if oracle and not top1 else [True, False] if top1 else [False, False]
        out.append(
            line(
                "ui_vision",
                f"u{i}",
                hits,
                top1,
                image=f"/uv/{setting}/{j // per_shot}.png",
                labels={"setting": setting},
            )
        )
    return out


def _macro(values: Sequence[tuple[str, bool, bool]], which: int) -> float:
    """The macro mean over settings of Top-1 (``which`` 1) or Oracle (2), by hand."""
    groups: dict[str, list[bool]] = {}
    for setting, top1, oracle in values:
        groups.setdefault(setting, []).append(top1 if which == 1 else oracle)
    return 100 * sum(sum(g) / len(g) for g in groups.values()) / len(groups)


def _settings(n_basic: int, n_func: int, seed: int) -> tuple[list[tuple[str, bool, bool]], ...]:
    rng = np.random.default_rng(seed)
    runs = []
    for p in (0.3, 0.6):
        vals = []
        for setting, n in (("basic", n_basic), ("functional", n_func)):
            for _ in range(n):
                t = bool(rng.random() < p)
                vals.append((setting, t, t or bool(rng.random() < 0.5)))
        runs.append(vals)
    return tuple(runs)


def test_headlines_are_official_and_micro_figures_are_labelled_micro(tmp_path: Path) -> None:
    """S1: a macro benchmark's headline rows are the macro means; the paired table says micro."""
    va, vb = _settings(12, 4, seed=1)
    la, lb = ss_lines(A_OUT) + _uv_lines(va), ss_lines(B_OUT) + _uv_lines(vb)
    a = write_run(tmp_path / "A", la, headline={"ui_vision": _macro(va, 1)})
    b = write_run(tmp_path / "B", lb)
    doc = compare_runs(load_run(a), load_run(b), resamples=200, seed=3)
    # a micro benchmark: its headline is the micro PairStat's figures and interval
    ss = doc["benchmarks"]["screenspot_v2"]
    top1_a, orc_a, shots = _arrays(la[:12])
    top1_b, orc_b, _ = _arrays(lb[:12])
    for key, (va_, vb_) in (("top1", (top1_a, top1_b)), ("oracle@5", (orc_a, orc_b))):
        lo, hi, _ = _loop_interval(va_, vb_, shots, None, resamples=200, seed=3)
        assert ss[key]["rule"] == "micro" and ss[key]["ci"] == pytest.approx([lo, hi])
        assert (ss[key]["a"], ss[key]["b"]) == pytest.approx((100 * va_.mean(), 100 * vb_.mean()))
    e = doc["benchmarks"]["ui_vision"]
    assert e["top1"]["rule"] == "macro_setting" == e["official"]["rule"]
    assert (e["top1"]["a"], e["top1"]["b"]) == pytest.approx((_macro(va, 1), _macro(vb, 1)))
    assert (e["oracle@5"]["a"], e["oracle@5"]["b"]) == pytest.approx((_macro(va, 2), _macro(vb, 2)))
    assert e["top1"]["diff"] == pytest.approx(_macro(vb, 1) - _macro(va, 1))
    micro_a = 100 * sum(v[1] for v in va) / len(va)
    assert _macro(va, 1) != pytest.approx(micro_a)  # the case where the two differ
    assert e["micro"]["top1"]["a"] == pytest.approx(micro_a)
    assert e["micro"]["oracle@5"]["b"] == pytest.approx(100 * sum(v[2] for v in vb) / len(vb))
    md = render_markdown(doc)
    heads = _md_rows(md, "benchmark")
    row = heads["UI-Vision"]
    assert row["rule"] == "macro_setting" and row["Top-1 A"] == f"{_macro(va, 1):.1f}"
    assert row["Oracle@5 B"] == f"{_macro(vb, 2):.1f}"
    assert "micro Top-1 A" in md and "Δ micro Top-1" in md and "micro Oracle@5 A" in md


# -- item 10: survivors ------------------------------------------------------------------------------


def _loop_interval(
    a: np.ndarray,
    b: np.ndarray,
    clusters: list[str],
    groups: list[list[int]] | None,
    *,
    resamples: int,
    seed: int,
) -> tuple[float, float, float]:
    """The paired bootstrap by a plain loop over the resamples: (low, high, se) in points."""
    diffs = []
    for w in resample_weights(clusters, resamples=resamples, seed=seed):
        means = []
        for v in (a, b):
            if groups is None:
                means.append(float(np.dot(w, v) / w.sum()))
            else:
                present = [g for g in groups if sum(w[i] for i in g) > 0]
                means.append(
                    float(np.mean([sum(w[i] * v[i] for i in g) / sum(w[i] for i in g) for g in present]))
                )
        diffs.append(100 * (means[1] - means[0]))
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return float(lo), float(hi), float(np.std(diffs, ddof=1))


def _arrays(lines: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    top1 = np.array([r["top1"][SEL] for r in lines], dtype=float)
    orc = np.array([any(r["hits"][:5]) for r in lines], dtype=float)
    return top1, orc, [r["image"] for r in lines]


def test_mdd_is_in_points_and_independent_of_the_code() -> None:
    from gge.compare.pairing import _pair_stat

    rng = np.random.default_rng(11)
    n = 240
    a = (rng.random(n) < 0.4).astype(float)
    b = np.where(rng.random(n) < 0.7, a, 1 - a)  # B disagrees with A on about 30% of samples
    clusters = [f"shot{i // 3}" for i in range(n)]
    got = _pair_stat(a, b, clusters, resamples=600, seed=4, level=0.95)
    lo, hi, se = _loop_interval(a, b, clusters, None, resamples=600, seed=4)
    factor = norm.ppf(0.975) + norm.ppf(0.80)
    assert got["mdd"] == pytest.approx(factor * se, rel=1e-9)
    assert got["ci"] == pytest.approx([lo, hi], rel=1e-9)
    # and a known answer: per-sample clusters, SE of a mean difference = sd(d) / sqrt(n), in points
    singles = [str(i) for i in range(n)]
    big = _pair_stat(a, b, singles, resamples=4000, seed=0, level=0.95)
    d = b - a
    assert big["mdd"] == pytest.approx(factor * 100 * d.std() / math.sqrt(n), rel=0.06)


def test_macro_headline_interval_needs_five_screenshots_in_every_group(tmp_path: Path) -> None:
    # functional: 8 samples on 4 screenshots (2 per screenshot), basic on 12: no interval
    va, vb = _settings(24, 8, seed=3)
    few = compare_runs(
        load_run(write_run(tmp_path / "A4", _uv_lines(va))),
        load_run(write_run(tmp_path / "B4", _uv_lines(vb))),
        resamples=300,
    )
    e = few["benchmarks"]["ui_vision"]
    assert e["screenshots"] == 16 and e["micro"]["top1"]["ci"] is not None
    assert e["official"]["diff"] == pytest.approx(_macro(vb, 1) - _macro(va, 1))
    assert e["official"]["ci"] is None and e["top1"]["ci"] is None and e["oracle@5"]["ci"] is None
    # functional on exactly 5 screenshots: an interval, the macro bootstrap of Top-1 (not Oracle)
    va, vb = _settings(24, 10, seed=3)
    la, lb = _uv_lines(va), _uv_lines(vb)
    doc = compare_runs(
        load_run(write_run(tmp_path / "A5", la)),
        load_run(write_run(tmp_path / "B5", lb)),
        resamples=300,
        seed=7,
    )
    e = doc["benchmarks"]["ui_vision"]
    top1_a, orc_a, clusters = _arrays(la)
    top1_b, orc_b, _ = _arrays(lb)
    groups = [[i for i, v in enumerate(va) if v[0] == s] for s in ("basic", "functional")]
    lo, hi, _ = _loop_interval(top1_a, top1_b, clusters, groups, resamples=300, seed=7)
    olo, ohi, _ = _loop_interval(orc_a, orc_b, clusters, groups, resamples=300, seed=7)
    assert (lo, hi) != pytest.approx((olo, ohi))  # the two differ here
    assert e["official"]["ci"] == pytest.approx([lo, hi]) and e["top1"]["ci"] == pytest.approx([lo, hi])
    assert e["oracle@5"]["ci"] == pytest.approx([olo, ohi])


def test_refuses_duplicated_and_extra_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path / "A", ss_lines(A_OUT))
    lines = ss_lines(B_OUT)
    b = write_run(tmp_path / "B", lines)
    pred = b / "predictions.jsonl"
    text = pred.read_text().splitlines()
    pred.write_text("\n".join([*text, text[3]]) + "\n")  # s3 twice
    err = _refused(capsys, a, b)
    assert f"{pred}:13: screenspot_v2 sample 's3' already on line 4" in err
    extra = line("screenspot_v2", "s99", [False], False)
    pred.write_text("\n".join([*text, json.dumps(extra)]) + "\n")  # a 13th sample
    err = _refused(capsys, a, b)
    assert f"{pred}: 13 screenspot_v2 lines, but {b / 'results.json'} reports 12 samples" in err


@pytest.mark.parametrize("side", ["A", "B"])
def test_a_variant_recorded_on_one_side_only_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], side: str
) -> None:
    refined = {"instructions": "refined"}
    a = write_run(tmp_path / "A", ss_lines(A_OUT), variant=refined if side == "A" else None)
    b = write_run(tmp_path / "B", ss_lines(B_OUT), variant=refined if side == "B" else None)
    err = _refused(capsys, a, b)
    assert "screenspot_v2: different benchmark variants" in err and "'refined'" in err and "None" in err


def test_mean_of_headlines_is_over_the_benchmarks_that_have_one(tmp_path: Path) -> None:
    uv_a = [dict(r) for r in _uv_lines(_settings(6, 6, seed=5)[0])]
    uv_b = [dict(r) for r in _uv_lines(_settings(6, 6, seed=5)[1])]
    for r in (*uv_a, *uv_b):
        del r["labels"]  # an older gge: no labels, so no macro headline for UI-Vision
    la, lb = ss_lines(A_OUT) + uv_a, ss_lines(B_OUT) + uv_b
    doc = compare_runs(
        load_run(write_run(tmp_path / "A", la)), load_run(write_run(tmp_path / "B", lb)), resamples=20
    )
    assert doc["benchmarks"]["ui_vision"]["official"]["diff"] is None
    top1_a = 100 * sum(t for t, _ in A_OUT) / len(A_OUT)
    top1_b = 100 * sum(t for t, _ in B_OUT) / len(B_OUT)
    assert doc["mean"]["benchmarks"] == 1
    assert (doc["mean"]["a"], doc["mean"]["b"], doc["mean"]["diff"]) == pytest.approx(
        (top1_a, top1_b, top1_b - top1_a)
    )


def test_load_run_errors_name_the_run_json(tmp_path: Path) -> None:
    b = write_run(tmp_path / "B", ss_lines(B_OUT))
    (b / "run.json").write_text("{")
    with pytest.raises(GgeError, match=r"run\.json: line 1"):
        load_run(b)
    (b / "run.json").write_text("{}")
    with pytest.raises(GgeError, match=r"run\.json: not a gge run record"):
        load_run(b)
