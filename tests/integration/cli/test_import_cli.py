"""``gge import`` as a user runs it: the demo suite's ScreenSpot-Pro, an official-layout log, a replay."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

from gge.benchmarks.demo import write_demo_suite
from gge.cli.commands import main
from gge.errors import GgeError
from gge.models.replay import ReplayModel
from gge.run.settings import parse_args
from gge.run.standalone import run


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_suite(tmp_path_factory.mktemp("demo"), per_benchmark=12)


def _log(suite: Path, tmp_path: Path) -> tuple[Path, list[dict]]:
    """An official-script log of the suite's ScreenSpot-Pro: every sample answered at its box's centre
    but the first (null: a wrong_format line), and one line for a screenshot the suite does not have."""
    records = []
    for f in sorted((suite / "screenspot_pro" / "annotations").glob("*.json")):
        records += json.loads(f.read_text())
    details = []
    for i, rec in enumerate(records):
        x1, y1, x2, y2 = rec["bbox"]
        pred = None if i == 0 else [(x1 + x2) / 2, (y1 + y2) / 2]
        details.append(
            {
                "id": rec["id"],
                "img_path": f"/mnt/cluster/ss-pro/images/{rec['img_filename']}",
                "prompt_to_evaluate": rec["instruction"],
                "gt_type": "positive",
                "pred": pred,
                "raw_response": "" if pred is None else f"({pred[0]}, {pred[1]})",
                "bbox": rec["bbox"],
                "correctness": "wrong_format" if pred is None else "correct",
            }
        )
    details.append({**details[1], "id": "nope_0", "img_path": "x/none.png", "prompt_to_evaluate": "gone"})
    log = tmp_path / "ss_pro_results.json"
    log.write_text(json.dumps({"details": details, "metrics": {}}))
    return log, records


def test_import_writes_replay_lines_and_says_what_it_matched(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, records = _log(suite, tmp_path)
    out = tmp_path / "preds.jsonl"
    args = ["import", "sspro_log", str(log), "--benchmark", "screenspot_pro", "--data-root", str(suite)]
    assert main([*args, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    n = len(records)
    assert f"{n + 1} lines, {n} matched to screenspot_pro samples" in said
    assert f"unmatched {log}: details[{n}]: its id nope_0 is no sample's" not in said  # it names a screenshot
    assert f"unmatched {log}: details[{n}]: no sample has screenshot none.png" in said
    assert f"gge's rule gives the same on {n} of {n} matched lines" in said
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == [r["id"] for r in records]
    assert lines[0]["candidates"] == ["unparsed"] and lines[0]["format_error"] is True
    # the replay model reads the file as it is (the imported block rides along)
    model = ReplayModel(out)
    assert model.benchmarks() == {"screenspot_pro"} and model.max_candidates() == 1
    # a second import to the same file is refused, and --force replaces it
    assert main([*args, "--out", str(out)]) == 2
    assert f"gge: error: {out} exists: gge import does not overwrite" in capsys.readouterr().err
    assert main([*args, "--out", str(out), "--force"]) == 0


def test_replaying_an_import_scores_what_the_log_says(suite: Path, tmp_path: Path) -> None:
    log, records = _log(suite, tmp_path)
    out = tmp_path / "preds.jsonl"
    main(
        [
            "import",
            "sspro_log",
            str(log),
            "--benchmark",
            "screenspot_pro",
            "--data-root",
            str(suite),
            "--out",
            str(out),
        ]
    )
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "eval.py", "model=replay", f"model.predictions={out}", f"data_root={suite}",
         "benchmarks=[screenspot_pro]", f"output_dir={run}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((run / "results.json").read_text())
    section = results["benchmarks"]["screenspot_pro"]
    # every sample but the first answered at its box centre: (n - 1) / n, the first a format error
    n = len(records)
    assert section["samples"] == n and section["top1"] == pytest.approx(100.0 * (n - 1) / n, abs=1e-9)
    assert section["format_errors"] == 1


def test_replay_reads_a_log_in_its_format_without_an_import_step(suite: Path, tmp_path: Path) -> None:
    log, records = _log(suite, tmp_path)
    body = json.loads(log.read_text())
    dropped = body["details"].pop(2)["id"]  # the harness never asked this one
    log.write_text(json.dumps(body))
    buf = io.StringIO()
    args = [f"model.predictions={log}", f"data_root={suite}", "benchmarks=[screenspot_pro]"]
    doc = run(
        parse_args(["model=replay", "model.format=sspro_log", *args, f"output_dir={tmp_path / 'r'}"]), out=buf
    )
    said = buf.getvalue()
    n = len(records)
    assert f"{n} lines, {n - 1} matched to screenspot_pro samples" in said
    e = doc["benchmarks"]["screenspot_pro"]
    # the first is a format error, the dropped one not in the file, the rest at their box's centre
    assert e["samples"] == n and e["top1"] == pytest.approx(100.0 * (n - 2) / n, abs=1e-9)
    assert e["format_errors"] == 1 and e["not_in_file"]["ids"] == [dropped]
    assert e["not_in_file"]["top1"] == pytest.approx(100.0 * (n - 2) / (n - 1), abs=1e-9)
    assert doc["model"]["format"] == "sspro_log" and doc["model"]["sha256"]
    assert e["imported_log"] == {
        "format": "sspro_log",
        "file": str(log),
        "lines": n,  # the n - 1 left and the line for a screenshot the suite lacks
        "matched": n - 1,
        "unmatched": [f"{log}: details[{n - 1}]: no sample has screenshot none.png and instruction 'gone'"],
        "ambiguous": [],
    }
    report = (tmp_path / "r" / "report.md").read_text()
    said = f"{n} lines, {n - 1} matched to samples, 1 unmatched, 0 ambiguous"
    assert f"- Replayed from a published log (sspro_log: {log}): {said}" in report
    assert f"- Not in the predictions file: 1 samples ({dropped}): no matched line answers them" in report
    # a published log keeps no gge cost records, and the run says whose log it is, not "written by hand"
    assert doc["cost"]["hardware"] == (
        f"none: {log} is a log imported from another harness (sspro_log), which keeps no gge cost records"
    )
    # a log is of one benchmark; reading options belong to a log
    with pytest.raises(GgeError, match=r"a log is of one benchmark, and this run has 2"):
        run(
            parse_args(
                ["model=replay", "model.format=sspro_log", f"model.predictions={log}", f"data_root={suite}",
                 "benchmarks=[screenspot_pro,screenspot_v2]", f"output_dir={tmp_path / 'r2'}"]
            ),
            out=io.StringIO(),
        )  # fmt: skip
    with pytest.raises(GgeError, match=r"model.read_preset=ui_tars_1_5: reads a published log"):
        run(parse_args(["model=replay", "model.read_preset=ui_tars_1_5", *args]), out=io.StringIO())
    with pytest.raises(GgeError, match=r"model.format.*'sspro-log'.*did you mean 'sspro_log'"):
        run(parse_args(["model=replay", "model.format=sspro-log", *args]), out=io.StringIO())
