"""``python eval.py`` and ``run()`` on the demo suite: results.json, the numbers against an independent
computation, replays, overrides, prediction lines that match no sample, variants and bad configurations.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT
from replay_runs import load_samples, read_lines, replay_run, write_lines
from scipy.stats import binomtest

from gge.benchmarks import DEFAULT_BENCHMARKS, REGISTRY
from gge.cli.eval import main
from gge.compare import compare_runs, load_run, render_markdown
from gge.errors import GgeError
from gge.report.compare_page import render_compare_html
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import STRATEGIES, Absent

ALL = [*DEFAULT_BENCHMARKS, "osworld_g_refined"]
TITLES = {name: REGISTRY[name].title for name in DEFAULT_BENCHMARKS}


def _run(demo: Path, out: Path, *extra: str) -> dict[str, Any]:
    args = [
        f"data_root={demo}",
        f"model.predictions={demo / 'predictions.jsonl'}",
        f"output_dir={out}",
        f"benchmarks=[{','.join(ALL)}]",
        *extra,
    ]
    return run(parse_args(args), out=io.StringIO())


@pytest.fixture(scope="module")
def demo_run(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("run")
    return out, _run(demo_suite, out)


MACRO_OVER = {"ui_vision": "setting", "mmbench_gui": "grounding_type"}  # README: official headlines


def _slot(value: Any) -> tuple[float, float] | str | None:
    """A replay file's candidate: a point, None (abstains) or "unparsed" (docs/replay-import-explain.md)."""
    if value is None or value == "unparsed":
        return value
    x, y = float(value[0]), float(value[1])
    return None if x < 0 and y < 0 else (x, y)


def _middle(values: list[float]) -> float:
    v, m = sorted(values), len(values) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def _pick(strategy: str, slots: list[Any], scores: list[Any]) -> Any:
    """Top-1 by the documented rules: "missing" when there is no answer."""
    if not slots:
        return "missing"
    if strategy == "first":
        return slots[0]
    if strategy == "critic":
        scored = [j for j in range(len(slots)) if scores[j] is not None]
        if not scored:
            return slots[0]
        return slots[max(scored, key=lambda j: (scores[j], -j))]
    assert strategy == "median"
    points = [c for c in slots if c is not None and c != "unparsed"]
    abstain = sum(c is None for c in slots)
    if not points and not abstain:
        return "missing"
    if abstain > len(points):
        return None
    return (_middle([p[0] for p in points]), _middle([p[1] for p in points]))


def _independent(demo: Path, name: str, k: int, strategy: str) -> dict[str, Any]:
    """One benchmark's numbers from the replay file and the sample regions, with a loop of our own."""
    bench = REGISTRY[name]
    samples = bench.load(demo / bench.directory, bench.options_type()).samples
    lines = {}
    for line in (demo / "predictions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["benchmark"] == name:
            lines[rec["id"]] = rec
    rows = []
    for s in samples:

        def hit(c: Any, s: Any = s) -> bool:
            if c == "unparsed" or c == "missing":
                return False
            if c is None:
                return isinstance(s.region, Absent)
            return bool(s.region.contains(c[0], c[1]))

        rec = lines.get(s.id, {"candidates": [], "format_error": True})
        slots = [_slot(c) for c in rec["candidates"]][:k]
        scores = (rec.get("scores") or [None] * len(rec["candidates"]))[:k]
        picks = {st: _pick(st, slots, scores) for st in ("critic", "first", strategy)}
        rows.append(
            {
                "labels": s.labels,
                "top1": hit(picks[strategy]),
                "first": hit(picks["first"]),
                "critic": hit(picks["critic"]),
                "oracle": [any(hit(c) for c in slots[:j]) for j in range(1, k + 1)],
                "format_error": bool(rec.get("format_error")) or all(c == "unparsed" for c in slots),
                "abstains": picks[strategy] is None,
            }
        )
    n = len(rows)

    def pct(xs: list[bool]) -> float:
        return 100 * sum(xs) / len(xs)

    out: dict[str, Any] = {"samples": n, "top1": pct([r["top1"] for r in rows])}
    for j in range(1, k + 1):
        out[f"oracle@{j}"] = pct([r["oracle"][j - 1] for r in rows])
    over = MACRO_OVER.get(name)
    if over is None:
        out["official"] = (out["top1"], out[f"oracle@{k}"])
    else:
        groups = sorted({r["labels"][over] for r in rows})
        out["official"] = tuple(
            sum(pct([f(r) for r in rows if r["labels"][over] == g]) for g in groups) / len(groups)
            for f in (lambda r: r["top1"], lambda r: r["oracle"][k - 1])
        )
    out["first"] = pct([r["first"] for r in rows])
    out["critic"] = pct([r["critic"] for r in rows])
    out["format_errors"] = sum(r["format_error"] for r in rows)
    out["abstentions"] = sum(r["abstains"] for r in rows)
    hits_top1, hits_oracle = sum(r["top1"] for r in rows), sum(r["oracle"][-1] for r in rows)
    out["counts"] = (hits_top1, hits_oracle, n)
    both = sum(r["top1"] and r["oracle"][-1] for r in rows)
    out["top1_given_oracle"] = 100 * both / hits_oracle if hits_oracle else None
    breakdown: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        for key, value in r["labels"].items():
            for v in (value,) if isinstance(value, str) else value:
                breakdown.setdefault(key, {}).setdefault(v, []).append(r)
    out["breakdown"] = {
        key: {
            v: {
                "samples": len(g),
                "top1": pct([r["top1"] for r in g]),
                f"oracle@{k}": pct([r["oracle"][-1] for r in g]),
            }
            for v, g in groups_.items()
        }
        for key, groups_ in breakdown.items()
    }
    return out


def _wilson(hits: int, n: int) -> tuple[float, float]:
    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return 100 * ci.low, 100 * ci.high


def test_results_json_names(demo_suite: Path, demo_run: tuple[Path, dict[str, Any]]) -> None:
    out, doc = demo_run
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert set(on_disk["benchmarks"]) == set(ALL)
    for name, e in on_disk["benchmarks"].items():
        bench = REGISTRY[name]
        want = _independent(demo_suite, name, 5, "critic")
        assert e["samples"] == want["samples"] == 36
        for key in ["top1", *(f"oracle@{j}" for j in range(1, 6))]:
            assert e["micro"][key] == pytest.approx(want[key]), (name, key)
        assert e["official"]["rule"] == bench.official.name
        assert (e["official"]["top1"], e["official"]["oracle@5"]) == pytest.approx(want["official"]), name
        assert (e["top1"], e["oracle@5"]) == pytest.approx(want["official"]), name  # the headline is official
        assert set(e["selection"]) == set(STRATEGIES)
        assert e["selection"]["critic"] == pytest.approx(want["critic"])
        assert e["selection"]["first"] == pytest.approx(want["first"])
        assert e["format_errors"] == want["format_errors"], name
        assert e["abstentions"] == want["abstentions"], name
        assert set(e["breakdown"]) <= set(bench.label_keys)
        assert set(e["breakdown"]) == set(want["breakdown"]), name
        for key, groups in want["breakdown"].items():
            assert set(e["breakdown"][key]) == set(groups), (name, key)
            for value, stats in groups.items():
                assert e["breakdown"][key][value] == pytest.approx(stats), (name, key, value)
        top1_hits, oracle_hits, n = want["counts"]
        assert e["intervals"]["top1"] == pytest.approx(_wilson(top1_hits, n), abs=1e-9)
        assert e["intervals"]["oracle@5"] == pytest.approx(_wilson(oracle_hits, n), abs=1e-9)
        assert e["critic_gap"] == pytest.approx(want["official"][1] - want["official"][0])
        assert e["top1_given_oracle"] == pytest.approx(want["top1_given_oracle"])
    assert on_disk["benchmarks"]["ui_vision"]["official"]["rule"] == "macro_setting"
    assert on_disk["benchmarks"]["mmbench_gui"]["official"]["rule"] == "macro_grounding_type"
    assert "macro_cells" in on_disk["benchmarks"]["screenspot_v2"]["averages"]
    assert on_disk["config"]["k"] == 5 and on_disk["model"]["model"] == "replay"
    report = (out / "report.md").read_text()
    assert "## ScreenSpot-Pro" in report and "## Summary" in report and "Oracle@5" in report


def test_demo_suite_shows_the_features(demo_suite: Path, demo_run: tuple[Path, dict[str, Any]]) -> None:
    _, doc = demo_run
    b = doc["benchmarks"]
    want = {name: _independent(demo_suite, name, 5, "critic") for name in b}
    # format errors are kept and counted, refusals answered by abstaining: as the file says
    assert {n: e["format_errors"] for n, e in b.items()} == {n: w["format_errors"] for n, w in want.items()}
    assert {n: e["abstentions"] for n, e in b.items()} == {n: w["abstentions"] for n, w in want.items()}
    assert want["osworld_g"]["abstentions"] == 3  # the suite's predictions file abstains three times
    assert "category" in b["osworld_g"]["breakdown"]
    for name, e in b.items():
        assert (e["micro"]["top1"], e["micro"]["oracle@5"]) == pytest.approx(
            (want[name]["top1"], want[name]["oracle@5"])
        )


def _independent_screenspot_v2(demo: Path) -> tuple[float, float]:
    """ScreenSpot-v2 Oracle@5 and critic Top-1 computed from the raw files, without gge."""
    preds = {}
    for line in (demo / "predictions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["benchmark"] == "screenspot_v2":
            preds[rec["id"]] = rec
    n = oracle = top1 = 0
    for split in ("mobile", "desktop", "web"):
        records = json.loads((demo / "screenspot_v2" / f"screenspot_{split}_v2.json").read_text())
        for i, rec in enumerate(records):
            x, y, w, h = rec["bbox"]
            p = preds.get(f"{split}_{i}", {"candidates": []})

            def hit(c: Any, x: float = x, y: float = y, w: float = w, h: float = h) -> bool:
                return c is not None and x <= c[0] <= x + w and y <= c[1] <= y + h

            cands = p["candidates"][:5]
            n += 1
            oracle += any(hit(c) for c in cands)
            if cands:
                scores = p.get("scores") or [0.0] * len(cands)
                best = max(
                    range(len(cands)), key=lambda j: (scores[j] if scores[j] is not None else -1e9, -j)
                )
                top1 += hit(cands[best])
    return 100 * oracle / n, 100 * top1 / n


def test_numbers_match_an_independent_computation(
    demo_suite: Path, demo_run: tuple[Path, dict[str, Any]]
) -> None:
    oracle, top1 = _independent_screenspot_v2(demo_suite)
    e = demo_run[1]["benchmarks"]["screenspot_v2"]
    assert e["oracle@5"] == pytest.approx(oracle) and e["top1"] == pytest.approx(top1)


def test_predictions_jsonl_replays_to_the_same_numbers(
    demo_suite: Path, demo_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out, doc = demo_run
    lines = (out / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == sum(e["samples"] for e in doc["benchmarks"].values())
    again = run(
        parse_args(
            [
                f"data_root={demo_suite}",
                f"model.predictions={out / 'predictions.jsonl'}",
                f"output_dir={tmp_path}",
                f"benchmarks=[{','.join(ALL)}]",
            ]
        ),
        out=io.StringIO(),
    )
    for name in ALL:
        a, b = dict(doc["benchmarks"][name]), dict(again["benchmarks"][name])
        assert a == b


def test_selection_and_k_overrides(demo_suite: Path, tmp_path: Path) -> None:
    doc = _run(demo_suite, tmp_path, "selection=median", "k=3")
    assert doc["k"] == 3 and doc["selection"] == "median"
    for name, e in doc["benchmarks"].items():
        want = _independent(demo_suite, name, 3, "median")
        assert e["top1"] == pytest.approx(want["top1"]), name
        assert e["selection"]["median"] == pytest.approx(want["top1"])
        assert e["selection"]["critic"] == pytest.approx(want["critic"])  # critic among the first 3
        for j in (1, 2, 3):
            assert e[f"oracle@{j}"] == pytest.approx(want[f"oracle@{j}"]), (name, j)
        assert "oracle@4" not in e and set(e["official"]) >= {"top1", "oracle@3"}
        assert (e["official"]["top1"], e["official"]["oracle@3"]) == pytest.approx(want["official"]), name
        assert e["abstentions"] == want["abstentions"], name
        assert e["top1_given_oracle"] == pytest.approx(want["top1_given_oracle"]), name


def test_unknown_and_missing_prediction_lines(demo_suite: Path, tmp_path: Path) -> None:
    src = (demo_suite / "predictions.jsonl").read_text().splitlines()
    kept = [ln for ln in src if json.loads(ln)["id"] != "mobile_0"]
    assert len(kept) == len(src) - 1
    kept.append(json.dumps({"benchmark": "screenspot_v2", "id": "mobile_99999", "candidates": [[1, 1]]}))
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(kept) + "\n")
    buf = io.StringIO()
    cfg = parse_args(
        [
            f"data_root={demo_suite}",
            f"model.predictions={p}",
            f"output_dir={tmp_path / 'o'}",
            "benchmarks=[screenspot_v2]",
        ]
    )
    doc = run(cfg, out=buf)
    e = doc["benchmarks"]["screenspot_v2"]
    assert e["unmatched_predictions"] == ["mobile_99999"] and e["missing_predictions"] == 1
    assert (
        "warning: screenspot_v2: Prediction lines that match no sample: 1 (mobile_99999): not scored"
        in buf.getvalue()
        and "1 samples have no prediction" in buf.getvalue()
    )
    rec = next(json.loads(ln) for ln in (tmp_path / "o" / "predictions.jsonl").read_text().splitlines())
    assert rec["id"] == "mobile_0" and rec["candidates"] == []
    assert rec["not_in_file"] is True and rec["format_error"] is False  # not a format error: never asked
    # the same file whole, replayed apart: its Top-1 per sample, then the two denominators by hand
    whole = run(
        parse_args(
            [
                f"data_root={demo_suite}",
                f"model.predictions={demo_suite / 'predictions.jsonl'}",
                f"output_dir={tmp_path / 'whole'}",
                "benchmarks=[screenspot_v2]",
            ]
        ),
        out=io.StringIO(),
    )
    strategy = whole["benchmarks"]["screenspot_v2"]["decomposition"]["strategy"]
    lines = read_lines(tmp_path / "whole" / "predictions.jsonl")
    hits = sum(r["top1"][strategy] for r in lines if r["id"] != "mobile_0")
    n = len(lines)
    assert e["samples"] == n and e["top1"] == pytest.approx(100.0 * hits / n)  # over every sample
    full_errors = whole["benchmarks"]["screenspot_v2"]["format_errors"]
    assert e["format_errors"] == full_errors - next(r["format_error"] for r in lines if r["id"] == "mobile_0")
    assert e["not_in_file"] == {
        "samples": 1,
        "ids": ["mobile_0"],
        "lines": n - 1,
        "top1": pytest.approx(100.0 * hits / (n - 1)),
    }
    assert e["decomposition"]["overall"]["counts"]["not_in_file"] == 1
    report = (tmp_path / "o" / "report.md").read_text()
    assert f"over all {n} samples, 1 of them not in the predictions file (misses)" in report
    assert "- Not in the predictions file: 1 samples (mobile_0)" in report
    assert "| format errors | image errors | not in the file |" in report  # the summary's column
    html = (tmp_path / "o" / "report.html").read_text()
    start = html.index('<section id="summary">')
    summary = html[start : html.index("</section>", start)]
    header_cells = summary[: summary.index("</tr>")].count("<th>")
    mean_row = summary[summary.index('<tr class="mean">') :]
    assert "<th>not in the file</th>" in summary
    assert mean_row[: mean_row.index("</tr>")].count("<td>") == header_cells  # the mean row fills each column
    assert f"over all {n} samples, 1 not in the predictions file (misses; over the {n - 1} with a" in html
    # compare counts it on its side, apart from format errors
    doc_c = compare_runs(load_run(tmp_path / "whole"), load_run(tmp_path / "o"), resamples=20)
    c = doc_c["benchmarks"]["screenspot_v2"]
    assert c["not_in_file"] == {"a": 0, "b": 1}
    assert c["format_errors"]["b"] == e["format_errors"]
    assert "not in the predictions file (misses, not format errors): A 0/1 B" in render_markdown(doc_c)
    assert "not in the predictions file A 0 · B 1 (misses)" in render_compare_html(doc_c)


def test_per_benchmark_root_and_refined_variant(demo_suite: Path, tmp_path: Path) -> None:
    cfg = parse_args(
        [
            f"data_root={tmp_path / 'nowhere'}",
            f"bench.osworld_g_refined.root={demo_suite / 'osworld_g'}",
            f"model.predictions={demo_suite / 'predictions.jsonl'}",
            f"output_dir={tmp_path / 'o'}",
            "benchmarks=[osworld_g_refined]",
        ]
    )
    doc = run(cfg, out=io.StringIO())
    e = doc["benchmarks"]["osworld_g_refined"]
    assert e["load"]["variant"] == {"instructions": "refined", "refusals": "scored", "denominator": 36}
    assert doc["config"]["bench"]["osworld_g_refined"]["root"] == str(demo_suite / "osworld_g")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["benchmark=[screenspot_v2]"], "benchmark"),
        (["benchmarks=screenspot_v2"], "benchmarks is a list"),
        (["benchmarks=[screenspot_pr]"], "did you mean 'screenspot_pro'"),
        (["selection=critc"], "did you mean 'critic'"),
        (["model=repaly"], "did you mean 'replay'"),
        (["k=0"], "k must be at least 1"),
        (["k=five"], "k"),
        (["bench.screenspot_pro.languag=cn"], "languag"),
        (["bench.screenspot_pro.language=de"], "language"),
        (["model.predictions=/no/such/file.jsonl"], "replay predictions file not found"),
        (["data_root=/no/such/dir", "model.predictions=PRED"], "benchmark folder not found"),
        (["data_root=DEMO", "model=replay"], "model=replay needs model.predictions=FILE"),
        (["oops"], "key=value"),
    ],
)
def test_bad_configuration_exits_2_with_one_message(
    args: list[str], needle: str, demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wants_default_predictions = "data_root=DEMO" in args
    args = [
        a.replace("PRED", str(demo_suite / "predictions.jsonl")).replace("DEMO", str(demo_suite))
        for a in args
    ]
    if not any(a.startswith("data_root=") for a in args):
        args.append(f"data_root={demo_suite}")
    if not any(a.startswith("model.predictions=") for a in args) and not wants_default_predictions:
        args.append(f"model.predictions={demo_suite / 'predictions.jsonl'}")
    args.append(f"output_dir={tmp_path}")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("gge: error:") and needle in err


def test_data_root_demo_has_no_predictions_default(demo_suite: Path) -> None:
    with pytest.raises(GgeError, match=r"needs model\.predictions"):
        run(
            parse_args([f"data_root={demo_suite}", "model=replay", "benchmarks=[screenspot_v2]"]),
            out=io.StringIO(),
        )


@pytest.mark.slow
def test_eval_py_with_no_arguments(tmp_path: Path) -> None:
    """The README's main command: the demo suite generated into the cache, tables printed."""
    env = {**os.environ, "GGE_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "eval.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "using the synthetic demo suite" in proc.stdout and "## Summary" in proc.stdout
    results = list((tmp_path / "outputs").glob("*/results.json"))
    assert len(results) == 1
    doc = json.loads(results[0].read_text())
    assert list(doc["benchmarks"]) == list(DEFAULT_BENCHMARKS)
    # the shipped demo policy (issue 5): far above chance (a random click hits 0.5% of the time on
    # this suite), the critic has something to choose from and beats every spatial baseline
    assert doc["model"]["model"] == "gge-demo"
    # the README's table of this command (official headlines, rounded to 0.1)
    table = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in {*TITLES.values(), "mean of 6"}:
            table[cells[0]] = (float(cells[1]), float(cells[2]))
    shown = {TITLES[n]: (e["top1"], e["oracle@5"]) for n, e in doc["benchmarks"].items()}
    shown["mean of 6"] = (doc["mean"]["top1"], doc["mean"]["oracle@5"])
    assert {t: (round(a, 1), round(b, 1)) for t, (a, b) in shown.items()} == table
    by_strategy = {
        s: sum(e["selection"][s] for e in doc["benchmarks"].values()) / len(doc["benchmarks"])
        for s in STRATEGIES
    }
    micro = sum(e["micro"]["top1"] for e in doc["benchmarks"].values()) / len(doc["benchmarks"])
    assert by_strategy["critic"] == pytest.approx(micro)  # the critic's pick is what Top-1 reports
    assert all(by_strategy["critic"] > v for s, v in by_strategy.items() if s != "critic"), by_strategy
    readme = (ROOT / "README.md").read_text()
    said = readme[readme.index("Mean Top-1 by selection strategy") :].split("A uniformly random")[0]
    stated = {m[0]: float(m[1]) for m in re.findall(r"(\w+) (\d+\.\d)", said.replace("*", ""))}
    assert {s: round(v, 1) for s, v in by_strategy.items()} == stated


def test_lines_for_benchmarks_not_evaluated_are_reported(demo_suite: Path, tmp_path: Path) -> None:
    src = (demo_suite / "predictions.jsonl").read_text()
    p = tmp_path / "p.jsonl"
    p.write_text(src + json.dumps({"benchmark": "screenspot-v2", "id": "mobile_0", "candidates": []}) + "\n")
    buf = io.StringIO()
    args = [
        f"data_root={demo_suite}",
        f"model.predictions={p}",
        f"output_dir={tmp_path / 'o'}",
        "benchmarks=[screenspot_v2]",
    ]
    run(parse_args(args), out=buf)
    text = buf.getvalue()
    assert (
        "'screenspot-v2', not evaluated in this run: not a benchmark (did you mean 'screenspot_v2'?)" in text
    )
    assert "'screenspot_pro', not evaluated in this run" in text


# -- replay under max_samples; two benchmarks sharing ids in one run -------------------------------


def test_replay_under_max_samples_reports_only_the_evaluated_samples(
    demo_suite: Path, tmp_path: Path
) -> None:
    m = 5
    names = ("screenspot_v2", "osworld_g")
    src = read_lines(demo_suite / "predictions.jsonl")
    firsts = {name: [s.id for s in load_samples(demo_suite, name)] for name in names}
    # drop one evaluated sample's line and one beyond max_samples, per benchmark
    dropped = {(name, firsts[name][1]) for name in names} | {(name, firsts[name][m + 2]) for name in names}
    kept = [r for r in src if (r["benchmark"], r["id"]) not in dropped]
    buf = io.StringIO()
    doc = replay_run(
        demo_suite,
        write_lines(tmp_path / "p.jsonl", kept),
        tmp_path / "o",
        f"benchmarks=[{','.join(names)}]",
        f"max_samples={m}",
        buf=buf,
    )
    text = buf.getvalue()
    assert "match no sample" not in text
    for name in names:
        e = doc["benchmarks"][name]
        assert e["samples"] == m
        assert e["unmatched_predictions"] == []
        assert e["missing_predictions"] == 1
        assert f"warning: {name}: 1 samples have no prediction" in text


def test_osworld_g_and_refined_with_shared_ids_keep_their_own_numbers(
    demo_suite: Path, tmp_path: Path
) -> None:
    plain = [r for r in read_lines(demo_suite / "predictions.jsonl") if r["benchmark"] == "osworld_g"]
    refined = []
    for s in load_samples(demo_suite, "osworld_g_refined"):  # a near-perfect model on the refined variant
        box = s.region.pixel_box()
        centre = None if box is None else [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]
        refined.append({"benchmark": "osworld_g_refined", "id": s.id, "candidates": [centre]})
    assert {r["id"] for r in plain} == {r["id"] for r in refined}
    path = write_lines(tmp_path / "p.jsonl", plain + refined)
    both = replay_run(demo_suite, path, tmp_path / "both", "benchmarks=[osworld_g,osworld_g_refined]")
    for name in ("osworld_g", "osworld_g_refined"):
        alone = replay_run(demo_suite, path, tmp_path / name, f"benchmarks=[{name}]")
        assert both["benchmarks"][name] == alone["benchmarks"][name], name
    buf = io.StringIO()  # a rerun into the same folder restores both from the log, apart
    again = replay_run(
        demo_suite, path, tmp_path / "both", "benchmarks=[osworld_g,osworld_g_refined]", buf=buf
    )
    assert f"resuming: {2 * len(plain)} samples already finished" in buf.getvalue()
    assert again["benchmarks"] == both["benchmarks"]
    g, r = both["benchmarks"]["osworld_g"], both["benchmarks"]["osworld_g_refined"]
    assert r["top1"] == 100.0 > g["top1"]  # the two really differ
    recs = read_lines(tmp_path / "both" / "predictions.jsonl")
    assert Counter(x["benchmark"] for x in recs) == {
        "osworld_g": len(plain),
        "osworld_g_refined": len(refined),
    }
