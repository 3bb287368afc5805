"""What a new user stumbles on: headlines without an official scorer, left-out records, lock files, costs.

Hand-built documents (``helpers/report_documents.py``) and hand-written expected lines:

- every benchmark that publishes no scorer (WebClick, RUC: docs/benchmarks.md's table) has its
  headline labelled alike, ``gge's rule (no official scorer)``, in report.md, report.html and the
  summary printed on the console; none of them reads "Official";
- the loader's notes, the prediction lines of records the loader left out on purpose (RUC's 998 and
  1026) and the stray prediction lines are in report.md and report.html, with counts, ids and why;
- a finished output folder holds no ``.gge.lock``, and a second run still refuses while the first
  holds it, even when the first took the lock on a file that was removed after it opened it;
- the cost line of an imported log says it comes from another harness;
- ``python -m gge.demo.train`` says what it draws and how long it takes, then its progress.
"""

from __future__ import annotations

import copy
import fcntl
import html
import io
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from report_documents import make_document

from gge.benchmarks import REGISTRY
from gge.errors import TransientError
from gge.report.cost_tables import setup_text
from gge.report.html import render_report_html
from gge.report.markdown import render_benchmark, render_summary
from gge.run.hardware import cost_setup
from gge.run.runstate import LOCK_FILE, output_dir_lock
from gge.types import STRATEGIES

NO_SCORER = {"webclick": "WebClick", "ruc": "RUC"}
"""The registered benchmarks that publish no scorer (docs/benchmarks.md)."""
GGE_RULE = "gge's rule (no official scorer): "
WEBCLICK_HOW = "a hit is the point in the box normalised by the image size, edges included"
RUC_HOW = "a hit is the point in correct_box"


def document(**entries: dict[str, Any]) -> dict[str, Any]:
    """make_document's two entries under the given names (each with its extra keys), every strategy named."""
    base = make_document()
    template = base["benchmarks"]["osworld_g"]  # micro headline, 20.00 / 30.00 over 5 samples
    template["selection"] = {s: template["selection"].get(s, 10.0) for s in STRATEGIES}
    base["benchmarks"] = {name: copy.deepcopy(template) | extra for name, extra in entries.items()}
    base["mean"] = {"benchmarks": list(entries), "top1": 20.0, "oracle@3": 30.0}
    return base


def md_headline(doc: dict[str, Any], name: str) -> str:
    return render_benchmark(name, doc["benchmarks"][name], k=3, strategy="critic").splitlines()[2]


# -- item 2: one label for every benchmark without an official scorer ------------------------------


def test_the_reports_label_every_gge_rule_headline_alike() -> None:
    caveats = {
        "webclick": f"{GGE_RULE}WebClick publishes none; {WEBCLICK_HOW}",
        "ruc": f"{GGE_RULE}RUC publishes none; {RUC_HOW}",
    }
    doc = document(
        **{name: {"load": {"variant": {}, "notes": [], "headline_caveat": c}} for name, c in caveats.items()}
    )
    for name, caveat in caveats.items():
        assert md_headline(doc, name) == (
            f"- Headline (micro; not official: {caveat}): Top-1 **20.00** [30.1, 70.2] · Oracle@3 **30.00** "
            "[40.0, 80.0] (95% Wilson) · critic gap 10.0 · P(Top-1 hit | Oracle@3 hit) 77.7%"
        )
    page = render_report_html(doc, [])
    for caveat in caveats.values():
        escaped = html.escape(caveat, quote=True)
        assert f'headline (micro; <span class="warning">not official: {escaped}</span>): Top-1' in page
    assert page.count("(not official)</span></td>") == 2  # both summary rows
    summary = render_summary(NO_SCORER, doc["benchmarks"], doc["mean"], k=3)  # what the console prints
    rows = [line.replace(" ", "") for line in summary.splitlines() if line.startswith("| ")]
    assert [r.split("|")[3] for r in rows[1:]] == ["micro(notofficial)", "micro(notofficial)", "unweighted"]
    assert summary.endswith(
        f"\n\n- WebClick: not official: {caveats['webclick']}\n- RUC: not official: {caveats['ruc']}"
        "\n- mean of 2: 2 of its headlines not official (WebClick, RUC)"
    )
    assert "Official" not in md_headline(doc, "webclick") + summary


def test_every_registered_benchmark_without_an_official_scorer_says_gges_rule() -> None:
    said = {name: bench.headline_caveat(bench.options_type()) or "" for name, bench in REGISTRY.items()}
    assert {name for name, caveat in said.items() if caveat.startswith(GGE_RULE)} == set(NO_SCORER)
    for name, title in NO_SCORER.items():
        assert said[name].startswith(f"{GGE_RULE}{title} publishes none; ")
    doc = document(webclick={"load": {"variant": {}, "notes": [], "headline_caveat": said["webclick"]}})
    assert md_headline(doc, "webclick").startswith(f"- Headline (micro; not official: {GGE_RULE}WebClick")
    assert "Official" not in md_headline(doc, "webclick")
    assert "official (micro)" not in render_report_html(doc, [])


# -- item 7c: the loader's notes, its left-out records, stray prediction lines ---------------------

RUC_NOTES = [
    "1 records without correct_box.bbox left out, as the released code does: 1026",
    "record 998 left out, as the released code does (by its id)",
]


def test_left_out_records_and_stray_lines_are_in_both_reports() -> None:
    ruc = {
        "load": {
            "variant": {},
            "notes": RUC_NOTES,
            "left_out": {"no correct_box.bbox": ["1026"], "by its id": ["998"]},
        },
        "unmatched_predictions": ["s1", "998", "s2", "s3", "1026", "s4", "s5", "s6"],
    }
    doc = document(ruc=ruc)
    text = render_benchmark("RUC", doc["benchmarks"]["ruc"], k=3, strategy="critic").splitlines()
    wanted = [
        "- Loader: 1 records without correct_box.bbox left out, as the released code does: 1026",
        "- Loader: record 998 left out, as the released code does (by its id)",
        "- Prediction lines of records the loader left out as the release's code does (no correct_box.bbox): "
        "1 (1026): not scored, not stray",
        "- Prediction lines of records the loader left out as the release's code does (by its id): "
        "1 (998): not scored, not stray",
        "- Prediction lines that match no sample: 6 (s1, s2, s3, s4, s5, ...): not scored",
    ]
    start = text.index(wanted[0])
    assert text[start : start + 5] == wanted
    page = render_report_html(doc, [])
    items = "".join(f"<li>{html.escape(line[2:], quote=True)}</li>" for line in wanted)
    assert f'<ul class="muted data-notes">{items}</ul>' in page


def test_without_notes_or_stray_lines_nothing_is_said() -> None:
    doc = document(b={"load": {"variant": {}, "notes": []}, "unmatched_predictions": []})
    text = render_benchmark("B", doc["benchmarks"]["b"], k=3, strategy="critic")
    assert "Loader:" not in text and "Prediction lines" not in text
    assert "data-notes" not in render_report_html(doc, [])


# -- item 7d: the lock file of a finished folder -----------------------------------------------------


def test_a_finished_folder_has_no_lock_and_a_held_one_refuses(tmp_path: Path) -> None:
    with output_dir_lock(tmp_path):
        assert (tmp_path / LOCK_FILE).read_text().startswith(f"pid {os.getpid()}, started ")
        with pytest.raises(TransientError, match="is in use by another gge run"), output_dir_lock(tmp_path):
            pass
        assert (tmp_path / LOCK_FILE).is_file()  # the refused run leaves the holder's file alone
    assert not (tmp_path / LOCK_FILE).exists()
    with output_dir_lock(tmp_path):  # and the folder can be taken again
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_lock_taken_on_a_removed_file_is_taken_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder removes the file between this process's open and its flock: the lock is on nothing."""
    real = fcntl.flock
    calls: list[int] = []

    def flock(fd: int, op: int) -> None:
        if not calls:  # the file it opened is removed before it locks it, and another made at the path
            os.unlink(tmp_path / LOCK_FILE)
            (tmp_path / LOCK_FILE).write_text("")
        calls.append(fd)
        real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    with output_dir_lock(tmp_path):
        assert len(calls) == 2  # locked the removed file, saw it, opened the path again
        held = os.stat(tmp_path / LOCK_FILE)
        assert (tmp_path / LOCK_FILE).read_text().startswith(f"pid {os.getpid()}")
        with pytest.raises(TransientError, match="is in use by another gge run"), output_dir_lock(tmp_path):
            pass
        assert os.stat(tmp_path / LOCK_FILE).st_ino == held.st_ino
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_run_leaves_a_lock_file_it_does_not_hold(tmp_path: Path) -> None:
    """The lock file removed by hand during a run and another made there: the run's end leaves it."""
    with output_dir_lock(tmp_path):
        os.unlink(tmp_path / LOCK_FILE)
        (tmp_path / LOCK_FILE).write_text("pid 1, started then")
    assert (tmp_path / LOCK_FILE).read_text() == "pid 1, started then"


# -- item 7e: the costs of an imported log -----------------------------------------------------------


def test_an_imported_log_says_it_keeps_no_gge_cost_records() -> None:
    imported = cost_setup(
        (),
        backend="replay",
        batch_size=1,
        replayed_from="log.json",
        recorded=False,
        imported_format="sspro_log",
    )
    assert setup_text(imported) == (
        "Costs: none: log.json is a log imported from another harness (sspro_log), "
        "which keeps no gge cost records"
    )
    assert imported["source"] == "replayed"


# -- item 7b: the demo training says what it draws and how it goes ----------------------------------


def test_the_demo_training_prints_its_plan_and_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gge.demo import train

    monkeypatch.setenv("GGE_CACHE", str(tmp_path))
    cached = tmp_path / "demo-train-12-seed2"
    cached.mkdir()
    (cached / "demo_manifest.json").write_text("{}")
    drawn: list[int] = []

    def write(root: Path, seed: int, per_benchmark: int) -> Path:
        drawn.append(seed)
        return root

    ticks = iter([100.0, 111.0, 124.0, 136.0])  # the start, then after each of the three drawn suites

    monkeypatch.setattr(train, "write_demo_suite", write)
    monkeypatch.setattr(
        train, "load_benchmarks", lambda names, root: SimpleNamespace(samples={n: [] for n in names})
    )
    monkeypatch.setattr(train, "_clock", lambda: next(ticks))
    out = io.StringIO()
    assert train.load_training_samples((1, 2, 3, 4), 12, progress=out) == []
    assert drawn == [1, 3, 4]
    assert out.getvalue().splitlines() == [
        f"training split: drawing 3 of 4 synthetic suites (12 samples per benchmark each) into {tmp_path}, "
        "once (later runs read them back): about 6 s on 2 CPU cores",  # 3 suites at SUITE_SECONDS = 2
        "  suite 1 of 3 drawn (seed 1): 11 s so far, about 22 s left",  # 11 s a suite, 2 left
        "  suite 2 of 3 drawn (seed 3): 24 s so far, about 12 s left",  # 12 s a suite, 1 left
        "  suite 3 of 3 drawn (seed 4): 36 s so far, about 0 s left",
    ]
    quiet = io.StringIO()
    monkeypatch.setattr(train, "_clock", lambda: 0.0)
    for seed in (1, 3, 4):
        (tmp_path / f"demo-train-12-seed{seed}").mkdir()
        (tmp_path / f"demo-train-12-seed{seed}" / "demo_manifest.json").write_text("{}")
    train.load_training_samples((1, 2, 3, 4), 12, progress=quiet)
    assert quiet.getvalue() == ""  # every suite cached: nothing to draw, nothing said
