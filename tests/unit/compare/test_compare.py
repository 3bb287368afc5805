"""``gge compare A B`` (issue 11, item 5): the statistics, and the command on real runs of the demo.

The statistics are checked against independent computations (scipy's binomial test for McNemar, a
simulation for the bootstrap's coverage); the command against numbers computed directly from the
two predictions.jsonl files. The demo is run once (module fixture) and replayed for the other runs.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from gge.benchmarks import get_benchmark
from gge.cli.commands import main
from gge.compare import MIN_CLUSTERS, compare_runs, load_run
from gge.compare.pairing import _check_pairable
from gge.compare.runs import Line, Run, _check_possible
from gge.documents.records import PredictionRecord
from gge.documents.results import SCHEMA_VERSION, ResultsDocument
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.stats import (
    MDD_FACTOR,
    macro_statistic,
    mcnemar_exact,
    min_detectable_difference,
    paired_bootstrap,
    resample_weights,
)
from gge.types import Candidate

BENCHES = ("screenspot_v2", "osworld_g", "ui_vision")

# -- McNemar ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_only", "b_only"),
    [
        (0, 0),
        (0, 1),
        (1, 0),
        (0, 5),
        (1, 9),
        (9, 1),
        (3, 3),
        (5, 6),
        (10, 25),
        (40, 60),
        (500, 560),
        (3000, 3190),
    ],
)
def test_mcnemar_matches_the_binomial_test(a_only: int, b_only: int) -> None:
    n = a_only + b_only
    expected = 1.0 if n == 0 else binomtest(b_only, n, 0.5).pvalue
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert mcnemar_exact(a_only, b_only) == mcnemar_exact(b_only, a_only)


def test_mcnemar_log_space_branch_agrees_with_scipy() -> None:
    for a_only, b_only in ((10_000, 10_300), (15_000, 15_000), (12_000, 11_700)):
        expected = binomtest(b_only, a_only + b_only, 0.5).pvalue
        assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-6)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)


# -- the clustered bootstrap -----------------------------------------------------------------------


def _correlated(clusters: int, per: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Every screenshot holds ``per`` samples with identical outcomes (perfect correlation)."""
    rng = np.random.default_rng(seed)
    a = np.repeat((rng.random(clusters) < 0.5).astype(float), per)
    b = np.repeat((rng.random(clusters) < 0.6).astype(float), per)
    return a, b, [f"shot{i // per}" for i in range(clusters * per)]


def test_resamples_take_whole_screenshots() -> None:
    a, b, shots = _correlated(30, 6, seed=1)
    seen: list[np.ndarray] = []

    def recording_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        seen.append(weights.copy())
        return np.asarray((weights @ values) / weights.sum(axis=1))

    paired_bootstrap(a, b, shots, resamples=300, seed=4, statistic=recording_mean)
    weights = np.concatenate(seen[::2])  # the statistic sees B then A, on the same resamples
    assert weights.shape == (300, len(a))
    assert np.array_equal(np.concatenate(seen[1::2]), weights)  # paired: A and B share the draws
    by_shot = weights.reshape(300, 30, 6)
    assert (by_shot == by_shot[:, :, :1]).all()  # a screenshot's samples always move together
    assert (by_shot[:, :, 0].sum(axis=1) == 30).all()  # as many screenshots drawn as there are
    assert np.array_equal(resample_weights(shots, resamples=300, seed=4), weights)


def test_clustered_interval_is_wider_than_the_per_sample_one() -> None:
    a, b, shots = _correlated(30, 6, seed=2)
    singles = [str(i) for i in range(len(a))]
    lo_c, hi_c, se_c = paired_bootstrap(a, b, shots, seed=0)
    lo_s, hi_s, se_s = paired_bootstrap(a, b, singles, seed=0)
    # perfectly correlated clusters of 6: the honest SE is about sqrt(6) times the naive one
    assert se_c / se_s == pytest.approx(np.sqrt(6), rel=0.2)
    assert hi_c - lo_c > 1.8 * (hi_s - lo_s)
    # both intervals are the percentiles of the resampled differences, recomputed by a plain loop
    for clusters, (lo, hi) in ((shots, (lo_c, hi_c)), (singles, (lo_s, hi_s))):
        want_lo, want_hi, _ = _loop_bootstrap(a, b, clusters, resamples=2000, seed=0)
        assert (100 * lo, 100 * hi) == pytest.approx((want_lo, want_hi), abs=1e-9)


def test_bootstrap_interval_covers_the_true_difference() -> None:
    rng = np.random.default_rng(7)
    covered = 0
    for sim in range(60):
        shot_effect = rng.random(50) < 0.5  # 50 screenshots of 4 samples, correlated through the screenshot
        p_a = np.repeat(np.where(shot_effect, 0.7, 0.3), 4)
        a = (rng.random(200) < p_a).astype(float)
        b = (rng.random(200) < p_a + 0.1).astype(float)  # true difference: +0.10
        lo, hi, _ = paired_bootstrap(a, b, [str(i // 4) for i in range(200)], resamples=400, seed=sim)
        covered += lo <= 0.1 <= hi
    assert covered >= 51  # nominal 95% of 60 = 57; binomial slack


def test_bootstrap_is_deterministic_and_checks_its_input() -> None:
    a, b, shots = _correlated(20, 3, seed=3)
    assert paired_bootstrap(a, b, shots, seed=5) == paired_bootstrap(a, b, shots, seed=5)
    assert paired_bootstrap(a, b, shots, seed=5) != paired_bootstrap(a, b, shots, seed=6)
    assert paired_bootstrap(a, a, shots) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="one entry per sample"):
        paired_bootstrap(a, b[:-1], shots)
    with pytest.raises(ValueError, match="at least one sample"):
        paired_bootstrap(a[:0], b[:0], [])


def test_macro_statistic_averages_the_groups_present() -> None:
    values = np.array([1.0, 1.0, 0.0, 0.0, 1.0])
    stat = macro_statistic([[0, 1, 2], [3, 4], [4]], 5)  # sample 4 is in two groups (multi-label)
    assert stat(values, np.ones((1, 5)))[0] == pytest.approx((2 / 3 + 1 / 2 + 1) / 3)
    only_first = np.array([[1, 1, 1, 0, 0]])  # groups 2 and 3 absent: left out, not counted as 0
    assert stat(values, only_first)[0] == pytest.approx(2 / 3)
    assert np.isnan(macro_statistic([[0]], 2)(values[:2], np.array([[0, 2]])))[0]


# -- real runs of the demo -------------------------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _centre(demo: Path, bench: str, sid: str) -> list[float]:
    b = get_benchmark(bench)
    sample = next(s for s in b.load(demo / b.directory, b.options_type()).samples if s.id == sid)
    box = sample.region.pixel_box()
    assert box is not None
    return [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]


@pytest.fixture(scope="module")
def runs(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A: the demo checkpoint; B: A's predictions with some Top-1 outcomes flipped (replay);
    C: A replayed with another selection and K; D: A replayed on fewer samples."""
    root = tmp_path_factory.mktemp("compare")
    common = [f"data_root={demo_suite}", f"benchmarks=[{','.join(BENCHES)}]"]

    def eval_(name: str, *extra: str) -> Path:
        run(parse_args([*common, f"output_dir={root / name}", "max_samples=12", *extra]), out=io.StringIO())
        return root / name

    a = eval_("A")
    flipped = []
    for i, rec in enumerate(_lines(a / "predictions.jsonl")):
        rec = {key: rec[key] for key in ("benchmark", "id", "candidates", "scores", "raw") if key in rec}
        if i % 3 == 0:  # flip: a hit becomes a miss, a miss (with a box target) a hit
            hit = _lines(a / "predictions.jsonl")[i]["top1"]["critic"]
            if hit:
                rec["candidates"], rec["scores"] = [[-50.0, -50.0]], [1.0]
            elif rec["id"] and _target_has_box(demo_suite, rec["benchmark"], rec["id"]):
                rec["candidates"], rec["scores"] = [_centre(demo_suite, rec["benchmark"], rec["id"])], [1.0]
        flipped.append(rec)
    b = eval_("B", "model=replay", f"model.predictions={_write_lines(root / 'flipped.jsonl', flipped)}")
    replay_a = ["model=replay", f"model.predictions={a / 'predictions.jsonl'}"]
    c = eval_("C", *replay_a, "selection=first", "k=3")
    d = root / "D"
    run(parse_args([*common, f"output_dir={d}", "max_samples=10", *replay_a]), out=io.StringIO())
    return {"A": a, "B": b, "C": c, "D": d, "root": root}


def _target_has_box(demo: Path, bench: str, sid: str) -> bool:
    b = get_benchmark(bench)
    sample = next(s for s in b.load(demo / b.directory, b.options_type()).samples if s.id == sid)
    return sample.region.pixel_box() is not None


def _direct(a: Path, b: Path, bench: str, key: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The paired numbers computed straight from the two predictions files."""
    la = {r["id"]: key(r) for r in _lines(a / "predictions.jsonl") if r["benchmark"] == bench}
    lb = {r["id"]: key(r) for r in _lines(b / "predictions.jsonl") if r["benchmark"] == bench}
    assert la.keys() == lb.keys()
    n = len(la)
    b_only = [i for i in la if lb[i] and not la[i]]
    a_only = [i for i in la if la[i] and not lb[i]]
    d = len(a_only) + len(b_only)
    return {
        "a": 100 * sum(la.values()) / n,
        "b": 100 * sum(lb.values()) / n,
        "won": b_only,
        "lost": a_only,
        "p": 1.0 if d == 0 else binomtest(len(b_only), d, 0.5).pvalue,
        "a_values": np.array([la[i] for i in la], dtype=float),  # A's file order
        "b_values": np.array([lb[i] for i in la], dtype=float),
    }


def _loop_bootstrap(
    a: np.ndarray, b: np.ndarray, clusters: list[str], *, resamples: int, seed: int
) -> tuple[float, float, float]:
    """The paired bootstrap of the mean difference by a plain loop over the resamples, in points."""
    diffs = [
        100
        * (
            sum(wi * bi for wi, bi in zip(w, b, strict=True))
            - sum(wi * ai for wi, ai in zip(w, a, strict=True))
        )
        / sum(w)
        for w in resample_weights(clusters, resamples=resamples, seed=seed)
    ]
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return float(lo), float(hi), float(np.std(diffs, ddof=1))


def test_compare_two_runs_matches_a_direct_computation(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = runs["root"] / "AB"
    assert main(["compare", str(runs["A"]), str(runs["B"]), "--out", str(out), "--resamples", "500"]) == 0
    printed = capsys.readouterr().out
    assert "| ScreenSpot-v2 |" in printed and "Δ Top-1" in printed and f"wrote {out}" in printed
    doc = json.loads((out / "compare.json").read_text())
    assert (out / "compare.md").read_text().strip() in printed
    assert doc["k"] == 5 and doc["bootstrap"] == {
        "resamples": 500,
        "seed": 0,
        "cluster": "screenshot",
        "level": 0.95,
    }
    assert doc["a"]["label"] == "A" and doc["b"]["selection"] == "critic" and doc["warnings"] == []
    results_a = json.loads((runs["A"] / "results.json").read_text())
    results_b = json.loads((runs["B"] / "results.json").read_text())
    changed = with_interval = with_mdd = 0
    for bench in BENCHES:
        e = doc["benchmarks"][bench]
        top1 = _direct(runs["A"], runs["B"], bench, lambda r: r["top1"]["critic"])
        oracle = _direct(runs["A"], runs["B"], bench, lambda r: any(r["hits"][:5]))
        shots = [r["image"] for r in _lines(runs["A"] / "predictions.jsonl") if r["benchmark"] == bench]
        for stat, want in ((e["micro"]["top1"], top1), (e["micro"]["oracle@5"], oracle)):
            assert stat["a"] == pytest.approx(want["a"]) and stat["b"] == pytest.approx(want["b"])
            assert stat["diff"] == pytest.approx(want["b"] - want["a"])
            assert (stat["b_only"], stat["a_only"]) == (len(want["won"]), len(want["lost"]))
            assert stat["mcnemar_p"] == pytest.approx(want["p"], rel=1e-9)
            assert stat["screenshots"] == len(set(shots))
            if len(set(shots)) < MIN_CLUSTERS:
                assert stat["ci"] is None and stat["mdd"] is None
                continue
            with_interval += 1
            lo, hi, se = _loop_bootstrap(want["a_values"], want["b_values"], shots, resamples=500, seed=0)
            assert stat["ci"] == pytest.approx([lo, hi], abs=1e-9)
            if se > 0:
                with_mdd += 1
                assert stat["mdd"] == pytest.approx((norm.ppf(0.975) + norm.ppf(0.8)) * se, rel=1e-9)
            else:  # no spread (e.g. runs that never disagree): no evidence of an MDD
                assert stat["mdd"] is None
            if not (want["won"] or want["lost"]):
                assert stat["ci"] == [0, 0]
        assert e["won"] == top1["won"] and e["lost"] == top1["lost"]
        changed += len(e["won"]) + len(e["lost"])
        assert e["samples"] == 12
        assert e["screenshots"] == len(set(shots))
        # the headline is each run's own results.json headline (macro for UI-Vision)
        for key in ("top1", "oracle@5"):
            assert e[key]["rule"] == results_a["benchmarks"][bench]["official"]["rule"]
            assert e[key]["a"] == pytest.approx(results_a["benchmarks"][bench]["official"][key])
            assert e[key]["b"] == pytest.approx(results_b["benchmarks"][bench]["official"][key])
        assert e["official"] == e["top1"]
        for key, count in (("format_errors", lambda x: x), ("image_errors", len)):
            assert e[key] == {
                "a": count(results_a["benchmarks"][bench][key]),
                "b": count(results_b["benchmarks"][bench][key]),
            }
        # every table cell agrees with the runs' own tables
        for t, ta, tb in zip(
            e["tables"],
            results_a["benchmarks"][bench]["tables"],
            results_b["benchmarks"][bench]["tables"],
            strict=True,
        ):
            assert t["title"] == ta["title"] and t["cells"]
            for c in t["cells"]:
                if t["cols"] is None:
                    sa, sb = ta["row_avg"][c["row"]], tb["row_avg"][c["row"]]
                else:
                    sa, sb = ta["cells"][c["row"]][c["col"]], tb["cells"][c["row"]][c["col"]]
                assert c["samples"] == sa["samples"] == c["top1"]["samples"]
                assert (c["top1"]["a"], c["top1"]["b"]) == pytest.approx((sa["top1"], sb["top1"]))
                assert (c["oracle@5"]["a"], c["oracle@5"]["b"]) == pytest.approx(
                    (sa["oracle@5"], sb["oracle@5"])
                )
    assert changed > 0  # the flips did change outcomes
    # the first 12 samples of two of the benchmarks span 5 or more screenshots (an interval, and
    # flips there, so an MDD); the others lie on fewer
    assert (with_interval, with_mdd) == (2, 2)
    heads = [doc["benchmarks"][n]["official"] for n in BENCHES]
    assert doc["mean"]["diff"] == pytest.approx(sum(h["b"] - h["a"] for h in heads) / len(heads))
    assert (out / "compare.html").read_text().startswith("<!DOCTYPE html>")


def test_compare_of_a_run_with_itself_is_zero(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = runs["root"] / "AA"
    assert main(["compare", str(runs["A"]), str(runs["A"] / "results.json"), "--out", str(out)]) == 0
    doc = json.loads((out / "compare.json").read_text())

    def zero(stat: dict[str, Any]) -> None:
        assert stat["diff"] == 0 and stat["mcnemar_p"] == 1.0 and stat["a_only"] == stat["b_only"] == 0
        assert stat["mdd"] is None  # never disagreeing says nothing about what could be detected
        if stat["screenshots"] >= MIN_CLUSTERS:
            assert stat["ci"] == [0, 0]
        else:  # too few screenshots for an interval
            assert stat["ci"] is None

    for name, e in doc["benchmarks"].items():
        zero(e["micro"]["top1"])
        zero(e["micro"]["oracle@5"])
        assert e["won"] == e["lost"] == []
        lines = [r for r in _lines(runs["A"] / "predictions.jsonl") if r["benchmark"] == name]
        over = get_benchmark(name).official.over
        fewest = min(  # screenshots of the smallest group of the headline's rule (all lines when micro)
            len(
                {r["image"] for r in lines if all(r["labels"].get(key) == g[i] for i, key in enumerate(over))}
            )
            for g in {tuple(r["labels"][key] for key in over) for r in lines}
        )
        for key in ("top1", "oracle@5"):
            assert e[key]["diff"] == 0
            assert e[key]["ci"] == (None if fewest < MIN_CLUSTERS else [0, 0])
        for t in e["tables"]:
            for c in t["cells"]:
                zero(c["top1"])
                zero(c["oracle@5"])
    assert doc["mean"]["diff"] == 0
    assert doc["a"]["label"] == "A (A)" and doc["b"]["label"] == "A (B)"


def test_different_selection_and_k_warn_and_use_the_common_k(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["compare", str(runs["A"]), str(runs["C"]), "--labels", "demo", "first@3", "--resamples", "50"])
        == 0
    )
    printed = capsys.readouterr().out
    out = runs["C"] / "compare-vs-demo"  # the default: inside B, never inside A
    doc = json.loads((out / "compare.json").read_text())
    assert doc["k"] == 3 and "oracle@3" in doc["benchmarks"]["osworld_g"]
    assert doc["a"]["label"] == "demo" and doc["b"]["label"] == "first@3"
    assert "'critic'" in doc["warnings"][0] and "'first'" in doc["warnings"][0]
    assert any("compared at K = 3" in n for n in doc["notes"])
    assert "warning: the runs select Top-1 differently" in printed and "Oracle@3" in printed
    # Top-1 of C is A's `first` pick
    la = [r for r in _lines(runs["A"] / "predictions.jsonl") if r["benchmark"] == "screenspot_v2"]
    assert doc["benchmarks"]["screenspot_v2"]["micro"]["top1"]["b"] == pytest.approx(
        100 * sum(r["top1"]["first"] for r in la) / len(la)
    )
    assert doc["benchmarks"]["screenspot_v2"]["micro"]["oracle@3"]["a"] == pytest.approx(
        100 * sum(any(r["hits"][:3]) for r in la) / len(la)
    )
    assert not any(p.name.startswith("compare") for p in runs["A"].iterdir())


def test_predictions_without_screenshots_fall_back_to_per_sample_clusters(runs: dict[str, Path]) -> None:
    old = runs["root"] / "old"
    shutil.copytree(runs["A"], old, ignore=shutil.ignore_patterns("compare*"))
    lines = _lines(old / "predictions.jsonl")
    _write_lines(old / "predictions.jsonl", [{k: v for k, v in r.items() if k != "image"} for r in lines])
    doc = compare_runs(load_run(old), load_run(runs["B"]), resamples=50)
    assert doc["bootstrap"]["cluster"] == "screenshot"  # B still has the paths: they are used
    old_b = runs["root"] / "old_b"
    shutil.copytree(old, old_b)
    doc = compare_runs(load_run(old), load_run(old_b), resamples=50)
    assert doc["bootstrap"]["cluster"] == "sample"
    assert doc["benchmarks"]["osworld_g"]["screenshots"] == 12
    assert any("its own cluster" in n for n in doc["notes"])


# -- refusals --------------------------------------------------------------------------------------


def _refused(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    assert main(["compare", *map(str, argv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gge: error: ") and err.count("\n") == 1
    return err


def test_refuses_different_sample_sets(runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, runs["A"], runs["D"])
    assert str(runs["A"]) in err and str(runs["D"]) in err
    assert "screenspot_v2: different sample sets: 2 ids only in A (" in err and "0 only in B" in err


def test_refuses_different_variants(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "refined"
    shutil.copytree(runs["B"], other, ignore=shutil.ignore_patterns("compare*"))
    doc = json.loads((other / "results.json").read_text())
    doc["benchmarks"]["osworld_g"]["load"]["variant"] = {"instructions": "refined"}
    (other / "results.json").write_text(json.dumps(doc))
    err = _refused(capsys, runs["A"], other)
    assert "osworld_g: different benchmark variants" in err and "'refined'" in err and "'original'" in err


def test_refuses_missing_or_malformed_files(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(runs["B"], broken, ignore=shutil.ignore_patterns("compare*"))
    (broken / "predictions.jsonl").unlink()
    err = _refused(capsys, runs["A"], broken)
    assert f"{broken / 'predictions.jsonl'}: not found" in err
    lines = (runs["B"] / "predictions.jsonl").read_text().splitlines()
    (broken / "predictions.jsonl").write_text("\n".join([*lines[:2], "{oops", *lines[3:]]) + "\n")
    assert f"{broken / 'predictions.jsonl'}:3: malformed JSON line" in _refused(capsys, runs["A"], broken)
    (broken / "results.json").write_text("{")
    assert f"{broken / 'results.json'}: line 1" in _refused(capsys, runs["A"], broken)
    assert "not found" in _refused(capsys, runs["A"], tmp_path / "nowhere")


def test_refuses_another_runs_predictions(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A's predictions.jsonl copied into B's folder: same ids and counts, not B's results.json."""
    copied = tmp_path / "copied"
    shutil.copytree(runs["B"], copied, ignore=shutil.ignore_patterns("compare*"))
    shutil.copy(runs["A"] / "predictions.jsonl", copied / "predictions.jsonl")
    err = _refused(capsys, runs["A"], copied)
    bench = next(  # the first benchmark whose Top-1 the flips changed
        n
        for n in BENCHES
        if _direct(runs["A"], runs["B"], n, lambda r: r["top1"]["critic"])["won"]
        or _direct(runs["A"], runs["B"], n, lambda r: r["top1"]["critic"])["lost"]
    )
    want = _direct(runs["A"], runs["B"], bench, lambda r: r["top1"]["critic"])
    head = f"{copied / 'predictions.jsonl'}: {bench}: Top-1 {want['a']:.6g} from its lines, but "
    assert head in err and f"{copied / 'results.json'} reports {want['b']:.6g}" in err


def test_refuses_other_screenshots_behind_the_same_ids(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two ScreenSpot-v2 runs on different demo screens that share ids: their samples digests differ."""
    from gge.benchmarks.demo import write_demo_suite

    other = write_demo_suite(tmp_path / "other-suite", seed=1)
    for name, root in (("here", demo_suite), ("there", other)):
        argv = [
            f"data_root={root}",
            "benchmarks=[screenspot_v2]",
            "max_samples=6",
            f"output_dir={tmp_path / name}",
        ]
        run(parse_args(argv), out=io.StringIO())
    ids = [[r["id"] for r in _lines(tmp_path / n / "predictions.jsonl")] for n in ("here", "there")]
    assert ids[0] == ids[1]  # the pairing by ids alone would accept them
    # a subset run is paired on what it evaluated: the digest of its 6 samples, in results.json
    digests = [
        json.loads((tmp_path / n / "results.json").read_text())["benchmarks"]["screenspot_v2"][
            "samples_digest"
        ]
        for n in ("here", "there")
    ]
    assert digests[0] != digests[1]
    err = _refused(capsys, tmp_path / "here", tmp_path / "there")
    # other screens, other targets: the first that differs is named, and the annotation file it is in
    assert "screenspot_v2: different samples behind the same ids: the targets differ for " in err
    assert "load.provenance: screenspot_" in err and " in A vs " in err


def _eval_screenspot(root: Path, out: Path, *extra: str) -> None:
    argv = [f"data_root={root}", "benchmarks=[screenspot_v2]", f"output_dir={out}", "report_misses=0", *extra]
    run(parse_args(argv), out=io.StringIO())


def test_subset_runs_pair_on_what_they_evaluated(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Data that differs only past the first N samples: N-sample runs pair, whole runs are refused."""
    edited = tmp_path / "edited"
    shutil.copytree(demo_suite / "screenspot_v2", edited / "screenspot_v2")
    web = edited / "screenspot_v2" / "screenspot_web_v2.json"
    records = json.loads(web.read_text())
    records[-1]["instruction"] = "Follow the 'Decompress' link"  # the suite's last sample, web_11
    web.write_text(json.dumps(records))
    for name, root, extra in (
        ("a5", demo_suite, ["max_samples=5"]),
        ("b5", edited, ["max_samples=5"]),
        ("a", demo_suite, []),
        ("b", edited, []),
    ):
        _eval_screenspot(root, tmp_path / name, *extra)
    doc = compare_runs(load_run(tmp_path / "a5"), load_run(tmp_path / "b5"), resamples=50)
    e = doc["benchmarks"]["screenspot_v2"]
    assert e["samples"] == 5 and e["micro"]["top1"]["diff"] == 0.0  # the same 5 samples, the same model
    err = _refused(capsys, tmp_path / "a", tmp_path / "b")
    assert "screenspot_v2: different samples behind the same ids" in err


def test_refuses_different_benchmarks(runs: dict[str, Path], tmp_path: Path) -> None:
    fewer = tmp_path / "fewer"
    shutil.copytree(runs["B"], fewer, ignore=shutil.ignore_patterns("compare*"))
    doc = json.loads((fewer / "results.json").read_text())
    del doc["benchmarks"]["ui_vision"]
    (fewer / "results.json").write_text(json.dumps(doc))
    lines = [r for r in _lines(fewer / "predictions.jsonl") if r["benchmark"] != "ui_vision"]
    _write_lines(fewer / "predictions.jsonl", lines)
    with pytest.raises(GgeError, match=r"different benchmarks \(only in A: ui_vision; only in B: none\)"):
        compare_runs(load_run(runs["A"]), load_run(fewer))


# -- the gge command -------------------------------------------------------------------------------


def test_gge_dispatches_subcommands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "compare" in capsys.readouterr().out
    assert main(["comprae"]) == 2
    assert "unknown command 'comprae' (did you mean 'compare'?)" in capsys.readouterr().err
    assert main(["compare", "--help"]) == 0
    assert "--resamples" in capsys.readouterr().out
    assert main(["compare", "onlyone"]) == 2  # argparse usage error
    assert main(["eval", "--help"]) == 0
    assert "k=5" in capsys.readouterr().out
    assert main(["k=0"]) == 2  # key=value without a subcommand is an evaluation
    assert "k must be at least 1" in capsys.readouterr().err


def test_mdd_is_the_power_factor_times_the_bootstrap_se() -> None:
    """(z_0.975 + z_0.80) from scipy, and the clustered-bootstrap SE by a plain loop over the resamples."""
    factor = norm.ppf(0.975) + norm.ppf(0.80)
    assert abs(MDD_FACTOR - factor) < 1e-12
    a, b, shots = _correlated(40, 2, seed=9)
    _, _, se = paired_bootstrap(a, b, shots, resamples=700, seed=2)
    _, _, loop_se = _loop_bootstrap(a, b, shots, resamples=700, seed=2)
    assert 100 * se == pytest.approx(loop_se, rel=1e-9)
    assert min_detectable_difference(se) == pytest.approx(factor * loop_se / 100, rel=1e-9)
    # a known answer: perfectly correlated pairs of samples, SE = sd(d over shots) / sqrt(shots)
    d = (b - a)[::2]
    _, _, big = paired_bootstrap(a, b, shots, resamples=5000, seed=0)
    assert big == pytest.approx(d.std() / np.sqrt(len(d)), rel=0.06)


def test_too_few_screenshots_give_no_interval() -> None:
    from gge.compare.pairing import _pair_stat

    a, b = np.array([0.0, 1.0, 0.0, 1.0]), np.array([1.0, 1.0, 1.0, 1.0])
    few = _pair_stat(a, b, ["s1", "s1", "s2", "s2"], resamples=200, seed=0, level=0.95)
    assert few["ci"] is None and few["mdd"] is None and few["screenshots"] == 2
    assert few["diff"] == 50.0 and few["mcnemar_p"] == pytest.approx(0.5)  # the exact test still holds
    n = MIN_CLUSTERS
    many = _pair_stat(np.zeros(n), np.ones(n), [f"s{i}" for i in range(n)], resamples=200, seed=0, level=0.95)
    assert many["ci"] == [100.0, 100.0] and many["screenshots"] == n
    assert many["mdd"] is None  # they disagree everywhere, the same way: no spread, no evidence of an MDD


def test_compare_two_demo_checkpoints_end_to_end(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two real checkpoints through eval: the shipped demo and one with perturbed weights."""
    import torch

    from gge.models.demo import default_checkpoint, load_demo_policy, save_checkpoint

    net = load_demo_policy(default_checkpoint()).net
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.5 * p.abs().mean() * torch.randn(p.shape, generator=generator))
    other = save_checkpoint(net, tmp_path / "perturbed.pt")
    common = [f"data_root={demo_suite}", "benchmarks=[screenspot_v2,ui_vision]", "max_samples=24"]
    run(parse_args([*common, f"output_dir={tmp_path / 'early'}", f"ckpt={other}"]), out=io.StringIO())
    run(parse_args([*common, f"output_dir={tmp_path / 'shipped'}"]), out=io.StringIO())
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "early"), str(tmp_path / "shipped")]) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "shipped" / "compare-vs-early"
    doc = json.loads((out / "compare.json").read_text())
    direct = _direct(tmp_path / "early", tmp_path / "shipped", "screenspot_v2", lambda r: r["top1"]["critic"])
    e = doc["benchmarks"]["screenspot_v2"]
    assert e["won"] == direct["won"] and e["lost"] == direct["lost"] and e["won"] + e["lost"]
    assert e["micro"]["top1"]["diff"] == pytest.approx(direct["b"] - direct["a"]) == e["top1"]["diff"]
    assert "| ScreenSpot-v2 " in printed and "| UI-Vision " in printed
    page = (out / "compare.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "ScreenSpot-v2" in page


def test_macro_interval_equals_a_direct_loop_over_the_resamples() -> None:
    """The vectorised macro bootstrap against recomputing the macro mean resample by resample."""
    rng = np.random.default_rng(1)
    n = 60
    a, b = (rng.random(n) < 0.4).astype(float), (rng.random(n) < 0.6).astype(float)
    clusters = [f"shot{i // 3}" for i in range(n)]  # three samples per screenshot
    groups = [list(range(0, 30)), list(range(30, 60))]
    lo, hi, se = paired_bootstrap(
        a, b, clusters, statistic=macro_statistic(groups, n), resamples=400, seed=3, level=0.9
    )
    weights = resample_weights(clusters, resamples=400, seed=3)
    diffs = []
    for w in weights:
        means = [
            [sum(w[i] * v[i] for i in g) / sum(w[i] for i in g) for g in groups if sum(w[i] for i in g)]
            for v in (a, b)
        ]
        diffs.append(np.mean(means[1]) - np.mean(means[0]))
    assert (lo, hi) == pytest.approx(tuple(np.percentile(diffs, [5, 95])))
    assert se == pytest.approx(np.std(diffs, ddof=1), rel=1e-6)


def test_mcnemar_is_fast_and_exact_up_to_the_exact_branch_limit() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for a_only, b_only in ((9000, 9400), (19990, 10)):
        want = scipy_stats.binomtest(min(a_only, b_only), a_only + b_only, 0.5).pvalue
        assert mcnemar_exact(a_only, b_only) == pytest.approx(want, rel=1e-9, abs=1e-300)


# -- survivors of the issue 26 mutation audit -----------------------------------------------------------


def _hand_run(folder: Path, ids: Sequence[str]) -> Run:
    lines = [Line(i, n + 1, True, (True,), f"/shots/{i}.png", {}) for n, i in enumerate(ids)]
    document = cast(
        ResultsDocument, {"k": 1, "selection": "critic", "benchmarks": {"b": {"samples": len(ids)}}}
    )
    return Run(folder, folder / "results.json", folder / "predictions.jsonl", document, {"b": lines}, "x")


def test_the_sample_sets_are_compared_by_id_not_by_count(tmp_path: Path) -> None:
    a, b = _hand_run(tmp_path / "A", ["1", "2"]), _hand_run(tmp_path / "B", ["1", "3"])
    with pytest.raises(
        GgeError, match=r"b: different sample sets: 1 ids only in A \('2'\), 1 only in B \('3'\)"
    ):
        _check_pairable(a, b)
    assert _check_pairable(a, _hand_run(tmp_path / "C", ["2", "1"])) == [
        f"{side} ({folder}) has no run.json recording its samples digests (an older gge, or summarize-verl): "
        "samples paired by id only"
        for side, folder in (("A", tmp_path / "A"), ("B", tmp_path / "C"))
    ]


@pytest.mark.parametrize(("candidates", "hits"), [(3, 2), (2, 3)])
def test_a_line_with_fewer_or_more_hits_than_candidates_is_refused(candidates: int, hits: int) -> None:
    rec = PredictionRecord("b", "1", tuple(Candidate((float(i), 0.0)) for i in range(candidates)))
    with pytest.raises(GgeError, match=rf"^p.jsonl:4: {hits} hits for {candidates} candidates"):
        _check_possible(rec, "p.jsonl:4", (False,) * hits, {})


def test_lines_of_a_benchmark_results_json_does_not_report_are_refused(tmp_path: Path) -> None:
    line: dict[str, Any] = {"benchmark": "a", "id": "1", "candidates": [[1.0, 1.0]], "hits": [True]}
    line |= {"top1": {"critic": True}, "picks": {"critic": [1.0, 1.0]}}
    entry = {"samples": 1, "top1": 100.0, "micro": {"top1": 100.0, "oracle@1": 100.0}}
    doc = {"schema_version": SCHEMA_VERSION, "k": 1, "selection": "critic", "benchmarks": {"a": entry}}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    lines = [line, {**line, "benchmark": "zzz"}]
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(GgeError) as e:
        load_run(tmp_path)
    assert str(e.value) == (
        f"{tmp_path / 'predictions.jsonl'}: lines for zzz, which {tmp_path / 'results.json'} does not report "
        "(files from different runs?)"
    )
    (tmp_path / "predictions.jsonl").write_text(json.dumps(line) + "\n")
    assert list(load_run(tmp_path).lines) == ["a"]
