"""``gge compare`` at matched budget (issue 20): a K=3 and a K=5 run, against a hand computation.

Both runs are real output folders of ``python eval.py model=replay`` over the demo suite, replaying
files written here: candidates on or off each sample's target box, critic scores (probabilities for
the K=3 run, a ranking for the K=5 one) and a fixed cost ledger per sample, so every cost on the
curves is a closed form. The matched pair, Δ Top-1 and its interval are recomputed from the two
predictions.jsonl files by direct enumeration and a plain loop over the bootstrap resamples.
"""

from __future__ import annotations

import io
import itertools
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cost_documents import SETUP

from gge.benchmarks import get_benchmark
from gge.cli.commands import main
from gge.compare import compare_runs, load_run
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS, select
from gge.scoring.stats import resample_weights
from gge.types import Box, Candidate

BENCH = "screenspot_v2"
RESAMPLES = 300


def _targets(demo: Path) -> list[tuple[str, Box, tuple[int, int]]]:
    b = get_benchmark(BENCH)
    out = []
    for s in b.load(demo / b.directory, b.options_type()).samples:
        assert isinstance(s.region, Box)
        out.append((s.id, s.region, s.image_size))
    return out


def _miss(box: Box, size: tuple[int, int], rng: random.Random) -> list[float]:
    """A point off the box (near a corner of the screen, jittered)."""
    corners = [(1.0, 1.0), (size[0] - 1.0, size[1] - 1.0), (1.0, size[1] - 1.0), (size[0] - 1.0, 1.0)]
    rng.shuffle(corners)
    for x, y in corners:
        point = (abs(x - rng.uniform(0, 5)), abs(y - rng.uniform(0, 5)))
        if not box.contains(*point):
            return list(point)
    raise AssertionError("no point off the box")


def _inside(box: Box, rng: random.Random) -> list[float]:
    """A point well inside the box, jittered (two of them are never the same point)."""
    x1, y1, x2, y2 = box.pixel_box()
    return [x1 + (x2 - x1) * rng.uniform(0.3, 0.7), y1 + (y2 - y1) * rng.uniform(0.3, 0.7)]


def _ledger(k: int, *, judges: bool) -> list[dict[str, Any]]:
    """A propose request for all k slots; a judge per slot (pointwise) or one ranking (listwise)."""
    if judges:
        cost = [
            {"stage": "propose", "input_tokens": 300, "output_tokens": 60, "seconds": 0.3, "candidates": k}
        ]
        cost += [
            {
                "stage": "judge",
                "input_tokens": 100,
                "output_tokens": 0,
                "seconds": 0.1,
                "slot": i,
                "candidates": 1,
            }
            for i in range(k)
        ]
        return cost
    return [
        {"stage": "propose", "input_tokens": 200, "output_tokens": 100, "seconds": 0.5, "candidates": k},
        {"stage": "rank", "input_tokens": 150, "output_tokens": 5, "seconds": 0.2, "candidates": 0},
    ]


def _timed_only(k: int) -> list[dict[str, Any]]:
    """A ledger that knows seconds only (an endpoint that reports no usage): 0.11 s per answer, 0.2 s rank."""
    return [
        {"stage": "propose", "seconds": 0.11 * k, "candidates": k},
        {"stage": "rank", "seconds": 0.2, "candidates": 0},
    ]


def _replay_file(
    path: Path, demo: Path, k: int, *, seed: int, ranking: bool, costs: bool = True, timed_only: bool = False
) -> Path:
    rng = random.Random(seed)
    lines = []
    for sid, box, size in _targets(demo):
        cands = [_inside(box, rng) if rng.random() < 0.4 else _miss(box, size, rng) for _ in range(k)]
        scores: list[float] = (
            [float(v) for v in rng.sample(range(1, k + 1), k)]
            if ranking
            else [rng.random() for _ in range(k)]
        )
        line: dict[str, Any] = {
            "benchmark": BENCH,
            "id": sid,
            "candidates": cands,
            "scores": scores,
            "raw": "",
        }
        if costs:
            line["cost"] = _timed_only(k) if timed_only else _ledger(k, judges=not ranking)
        lines.append(line)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _eval(demo: Path, out: Path, predictions: Path, *extra: str) -> Path:
    argv = [
        f"data_root={demo}",
        f"benchmarks=[{BENCH}]",
        f"output_dir={out}",
        "model=replay",
        f"model.predictions={predictions}",
        "report_misses=0",
        *extra,
    ]
    run(parse_args(argv), out=io.StringIO())
    return out


@pytest.fixture(scope="module")
def runs(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A: K=3, sampled (exchangeable from slot 1), pointwise critic; B: K=5, a ranked list, listwise."""
    root = tmp_path_factory.mktemp("budget")
    a_file = _replay_file(root / "a.jsonl", demo_suite, 3, seed=1, ranking=False)
    b_file = _replay_file(root / "b.jsonl", demo_suite, 5, seed=2, ranking=True)
    bare = _replay_file(root / "bare.jsonl", demo_suite, 5, seed=2, ranking=True, costs=False)
    pointwise = _replay_file(root / "d.jsonl", demo_suite, 5, seed=3, ranking=False)
    timed = _replay_file(root / "e.jsonl", demo_suite, 5, seed=4, ranking=True, timed_only=True)
    return {
        "D": _eval(demo_suite, root / "D", pointwise),
        "E": _eval(demo_suite, root / "E", timed),
        "A": _eval(demo_suite, root / "A", a_file, "model.proposer=sampling"),
        "B": _eval(demo_suite, root / "B", b_file),
        "C": _eval(demo_suite, root / "C", b_file, "selection=cluster"),
        "bare": _eval(demo_suite, root / "bare", bare),
        "root": root,
    }


def _lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "predictions.jsonl").read_text().splitlines() if x.strip()]


def _critic_hit(line: dict[str, Any], slots: tuple[int, ...]) -> bool:
    """The critic's pick on a subset, by hand: the highest score, the earlier slot on a tie."""
    best = slots[0]
    for s in slots[1:]:
        if line["scores"][s] > line["scores"][best]:
            best = s
    return bool(line["hits"][best])


def _expected_hits(lines: list[dict[str, Any]], k: int, j: int, first: int | None) -> np.ndarray:
    if first is None or j <= first:
        subsets = [tuple(range(j))]
    else:
        subsets = [tuple(range(first)) + c for c in itertools.combinations(range(first, k), j - first)]
    return np.array([sum(_critic_hit(x, s) for s in subsets) / len(subsets) for x in lines])


# tokens per sample at j, by hand from the ledgers. The critic pays its requests only where it runs, on
# at least two candidates (every candidate here is a point); first, the vote and the spatial picks never.
# A (K=3, slot 0 always kept, each of slots 1-2 with probability (j-1)/2): the propose request is always
#   made (300) and pays 20 output tokens per candidate used; the critic's judges 100 per slot used.
A_PROPOSER = {j: 300 + 20 * j for j in range(1, 4)}
A_TOKENS = {1: 300 + 20, 2: 300 + 40 + 100 + 2 * 0.5 * 100, 3: 300 + 60 + 300}
A_SECONDS = {1: 0.1, 2: 0.2 + 0.1 + 2 * 0.5 * 0.1, 3: 0.3 + 0.3}  # 0.1 s per answer, 0.1 s per judge
# B (K=5, the first j): the propose request 200 + 20 j; the critic's ranking (about all at once) 155
#   wherever the critic runs (j >= 2).
B_PROPOSER = {j: 200 + 20 * j for j in range(1, 6)}
B_TOKENS = {j: 200 + 20 * j + (155 if j >= 2 else 0) for j in range(1, 6)}


def test_the_curves_costs_are_the_ledgers_closed_forms(runs: dict[str, Path]) -> None:
    for folder, proposer, critic_tokens, method, critic in (
        (runs["A"], A_PROPOSER, A_TOKENS, "subsets", "pointwise"),
        (runs["B"], B_PROPOSER, B_TOKENS, "prefix", "induced"),
    ):
        budget = json.loads((folder / "results.json").read_text())["benchmarks"][BENCH]["budget"]
        assert budget["method"] == method and budget["critic"] == critic
        assert [p["tokens"] for p in budget["points"]] == pytest.approx(
            [proposer[j] for j in sorted(proposer)]
        )
        got = [p["critic"]["tokens"] for p in budget["points"]]
        assert got == pytest.approx([critic_tokens[j] for j in sorted(critic_tokens)])
        # a replay: what the run paid at j = K is the replayed file's, not measured here
        assert [p["cost"] for p in budget["points"]][-2:] == ["derived", "replayed"]


def test_matched_budget_between_k3_and_k5_by_hand(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = runs["root"] / "AB"
    assert (
        main(["compare", str(runs["A"]), str(runs["B"]), "--out", str(out), "--resamples", str(RESAMPLES)])
        == 0
    )
    printed = capsys.readouterr().out
    doc = json.loads((out / "compare.json").read_text())
    budget = doc["benchmarks"][BENCH]["budget"]

    # the closest pair by hand: A j=2 (540 tokens) and B j=5 (455): 85/540 apart; no other pair is closer
    rel = {(ja, jb): abs(ta - tb) / max(ta, tb) for ja, ta in A_TOKENS.items() for jb, tb in B_TOKENS.items()}
    assert min(rel, key=rel.__getitem__) == (2, 5)
    assert budget["unit"] == "tokens" and budget["spread"] is None
    assert (budget["a"]["j"], budget["b"]["j"]) == (2, 5)
    assert budget["relative_difference"] == pytest.approx(85 / 540)
    assert budget["a"]["tokens"] == pytest.approx(540) and budget["b"]["tokens"] == pytest.approx(455)
    assert budget["a"]["seconds"] == pytest.approx(A_SECONDS[2])  # no prefill timed apart
    assert budget["b"]["seconds"] == pytest.approx(0.5 + 0.2)
    assert budget["a"]["cost"] == "derived" and budget["b"]["cost"] == "replayed"
    assert (budget["a"]["method"], budget["b"]["method"]) == ("subsets", "prefix")
    assert (budget["a"]["critic"], budget["b"]["critic"]) == ("pointwise", "induced")
    # both runs replayed files: compare cannot tell whether their costs are one unit, and says so
    for side, other, file in (("A", "B", "a.jsonl"), ("B", "A", "b.jsonl")):
        source = runs["root"] / file
        assert (
            f"{BENCH}: {side}'s costs are replayed (not measured here: costs read back from {source}): the "
            f"setup they were measured on is not recorded, so whether {side}'s tokens compare with {other}'s "
            "is unknown"
        ) in doc["warnings"]

    la, lb = _lines(runs["A"]), _lines(runs["B"])
    by_id = {x["id"]: x for x in lb}
    lb = [by_id[x["id"]] for x in la]  # compare pairs in A's order
    ea = _expected_hits(la, 3, 2, 1)
    eb = _expected_hits(lb, 5, 5, None)
    assert budget["a"]["top1"] == pytest.approx(100 * ea.mean())
    assert budget["b"]["top1"] == pytest.approx(100 * eb.mean())
    assert budget["diff"] == pytest.approx(100 * (eb.mean() - ea.mean()))
    # the interval: a plain loop over compare's resamples of screenshots
    clusters = [x["image"] for x in la]
    diffs = [
        100 * (float(w @ eb) - float(w @ ea)) / w.sum()
        for w in resample_weights(clusters, resamples=RESAMPLES, seed=0).astype(float)
    ]
    assert budget["ci"] == pytest.approx(list(np.percentile(diffs, [2.5, 97.5])), abs=1e-9)
    assert budget["samples"] == len(la) and budget["screenshots"] == len(set(clusters))
    # every point of both curves, against the enumeration
    for side, lines, k, first in (("a", la, 3, 1), ("b", lb, 5, None)):
        tops = [p["top1"] for p in budget[side]["curve"]]
        assert tops == pytest.approx(
            [100 * _expected_hits(lines, k, j, first).mean() for j in range(1, k + 1)]
        )
    # at j = K the curve is the run's own Top-1 and what it paid
    a_results = json.loads((runs["A"] / "results.json").read_text())["benchmarks"][BENCH]
    assert budget["a"]["curve"][-1]["top1"] == pytest.approx(a_results["micro"]["top1"])
    assert budget["a"]["curve"][-1]["cost"] == "replayed"
    assert budget["a"]["curve"][-1]["tokens"] == pytest.approx(
        a_results["cost"]["total"]["tokens"]["total"]["mean"]
    )

    assert f"- warning: {BENCH}: A's costs are replayed" in printed
    assert "## At matched budget (the runs differ in K, critic or refine stage)" in printed
    assert "critic j=2/3 (derived)" in printed and "critic j=5/5 (replayed)" in printed
    md = (out / "compare.md").read_text()
    assert "### Budget curves" in md
    html = (out / "compare.html").read_text()
    assert "At matched budget" in html and "Top-1 against tokens per sample" in html


def test_voting_curve_below_k_from_the_recorded_targets(runs: dict[str, Path], demo_suite: Path) -> None:
    """B replayed with selection=cluster: a vote on j candidates is a new point, hit-tested on its target."""
    doc = compare_runs(load_run(runs["A"]), load_run(runs["C"]), resamples=50)
    budget = doc["benchmarks"][BENCH]["budget"]
    curve = budget["b"]["curve"]
    assert budget["b"]["strategy"] == "cluster"
    assert not any("builds a new point" in n for n in doc["notes"])
    # by hand: the vote over the first j candidates (prefix: B's answers are a ranked list), hit-tested on
    # the benchmark's own target (loaded here, not read from the lines)
    targets = {sid: (box, size) for sid, box, size in _targets(demo_suite)}
    lines = [json.loads(x) for x in (runs["C"] / "predictions.jsonl").read_text().splitlines()]

    def vote_hits(line: dict[str, Any], j: int) -> bool:
        box, size = targets[line["id"]]
        cands = [Candidate(tuple(c) if isinstance(c, list) else None) for c in line["candidates"][:j]]
        pick = select("cluster", cands, size, cluster_radius=DEFAULT_CLUSTER_RADIUS)
        return pick is not None and pick.point is not None and box.contains(*pick.point)

    want = [100 * float(np.mean([vote_hits(x, j) for x in lines])) for j in range(1, 6)]
    assert [p["top1"] for p in curve] == pytest.approx(want)
    c_results = json.loads((runs["C"] / "results.json").read_text())["benchmarks"][BENCH]
    assert curve[-1]["top1"] == pytest.approx(c_results["selection"]["cluster"])
    # the vote never pays the critic's ranking: C's curve costs B's proposer alone
    assert [p["tokens"] for p in curve] == pytest.approx([B_PROPOSER[j] for j in range(1, 6)])
    rel = {
        (ja, jb): abs(A_TOKENS[ja] - B_PROPOSER[jb]) / max(A_TOKENS[ja], B_PROPOSER[jb])
        for ja in A_TOKENS
        for jb in B_PROPOSER
    }
    assert min(rel, key=rel.__getitem__) == (1, 5)  # A's critic at j = 1 (320) and C's vote of 5 (300)
    assert (budget["a"]["j"], budget["b"]["j"]) == (1, 5)


def test_runs_alike_in_k_and_critic_get_no_matched_budget(runs: dict[str, Path]) -> None:
    doc = compare_runs(load_run(runs["B"]), load_run(runs["C"]), resamples=50)  # same K, same critic
    assert "budget" not in doc["benchmarks"][BENCH]


def test_runs_without_costs_say_so(runs: dict[str, Path]) -> None:
    doc = compare_runs(load_run(runs["A"]), load_run(runs["bare"]), resamples=50)
    assert doc["benchmarks"][BENCH]["budget"] is None
    assert any("no comparison at matched budget: B" in n and "no cost records" in n for n in doc["notes"])
    # the replay of a file without costs says it has none (in results.json and report.md)
    bare = json.loads((runs["bare"] / "results.json").read_text())
    assert bare["benchmarks"][BENCH]["cost"] is None
    assert bare["cost"]["source"] == "replayed" and bare["cost"]["hardware"].startswith("none: ")
    assert "has no cost records" in (runs["bare"] / "report.md").read_text()


def test_another_critic_at_the_same_k_is_matched(runs: dict[str, Path]) -> None:
    """B (K=5, a ranking) against D (K=5, P(yes) per candidate): the critics differ: budgets matched."""
    doc = compare_runs(load_run(runs["B"]), load_run(runs["D"]), resamples=50)
    budget = doc["benchmarks"][BENCH]["budget"]
    assert (budget["a"]["critic"], budget["b"]["critic"]) == ("induced", "pointwise")
    # B: 200 + 20 j (+ 155 from j = 2); D: 300 + 12 j (+ 100 j, a judge per candidate, from j = 2)
    d_tokens = {j: 300 + 12 * j + (100 * j if j >= 2 else 0) for j in range(1, 6)}
    rel = {
        (ja, jb): abs(B_TOKENS[ja] - d_tokens[jb]) / max(B_TOKENS[ja], d_tokens[jb])
        for ja in B_TOKENS
        for jb in d_tokens
    }
    assert (budget["a"]["j"], budget["b"]["j"]) == min(rel, key=rel.__getitem__)
    assert budget["b"]["tokens"] == pytest.approx(d_tokens[budget["b"]["j"]])


def test_seconds_stand_in_where_tokens_are_unknown(runs: dict[str, Path]) -> None:
    doc = compare_runs(load_run(runs["A"]), load_run(runs["E"]), resamples=50)
    budget = doc["benchmarks"][BENCH]["budget"]
    assert budget["unit"] == "seconds"
    assert all(p["tokens"] is None for p in budget["b"]["curve"])
    # A: 0.1, 0.4, 0.6 s at j = 1..3; E (the first j): 0.11 j (+ 0.2 of ranking from j = 2) -> (2, 2)
    # is 0.02 / 0.42 apart
    e_seconds = {j: 0.11 * j + (0.2 if j >= 2 else 0.0) for j in range(1, 6)}
    rel = {
        (ja, jb): abs(ta - tb) / max(ta, tb) for ja, ta in A_SECONDS.items() for jb, tb in e_seconds.items()
    }
    assert min(rel, key=rel.__getitem__) == (2, 2)
    assert (budget["a"]["j"], budget["b"]["j"]) == (2, 2)
    assert budget["relative_difference"] == pytest.approx(0.02 / 0.42)
    assert budget["a"]["seconds"] == pytest.approx(0.4) and budget["b"]["seconds"] == pytest.approx(0.42)
    # every sample of A and of E has the same ledger: sd 0, the mean is known exactly, the plain rule's pair
    assert budget["spread"]["a"] == pytest.approx(0.0, abs=1e-12)
    assert budget["spread"]["b"] == pytest.approx(0.0, abs=1e-12)
    assert budget["spread"]["pairings"] == [[2, 2]] and budget["spread"]["inside"] is False


def test_results_without_budget_curves_are_named(runs: dict[str, Path], tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(runs["B"], old, ignore=shutil.ignore_patterns("compare*"))
    doc = json.loads((old / "results.json").read_text())
    del doc["benchmarks"][BENCH]["budget"]
    (old / "results.json").write_text(json.dumps(doc))
    got = compare_runs(load_run(runs["A"]), load_run(old), resamples=50)
    assert got["benchmarks"][BENCH]["budget"] is None
    assert any("has no budget curves (written before them)" in n for n in got["notes"])


def test_a_refined_run_is_one_point_at_its_whole_cost(runs: dict[str, Path], tmp_path: Path) -> None:
    """A run whose selection is the refine stage's pick: its curve is one point, refine included."""
    refined = tmp_path / "refined"
    shutil.copytree(runs["D"], refined, ignore=shutil.ignore_patterns("compare*"))
    lines = _lines(refined)
    for x in lines:
        x["top1"]["refined"] = x["top1"]["critic"]
        x["cost"].append(
            {"stage": "refine", "input_tokens": 90, "output_tokens": 10, "seconds": 0.3, "candidates": 0}
        )
    (refined / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    doc = json.loads((refined / "results.json").read_text())
    doc["selection"] = "refined"
    (refined / "results.json").write_text(json.dumps(doc))
    got = compare_runs(load_run(runs["A"]), load_run(refined), resamples=50)
    b = got["benchmarks"][BENCH]["budget"]["b"]
    assert b["strategy"] == "refined" and b["method"] == "refined" and b["j"] == 5
    assert [p["j"] for p in b["curve"]] == [5]
    assert b["tokens"] == pytest.approx(300 + 60 + 500 + 100)  # D's whole ledger plus the refine request
    assert b["cost"] == "replayed"
    assert b["top1"] == pytest.approx(100 * sum(x["top1"]["critic"] for x in lines) / len(lines))


def _edited(run: Path, to: Path, **setup: Any) -> Path:
    """A copy of a run whose results.json says its costs were measured, on ``setup`` (a replay's, edited)."""
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("compare*"))
    doc = json.loads((to / "results.json").read_text())
    doc["cost"] = SETUP | setup
    doc["benchmarks"][BENCH]["cost"]["source"] = "measured"
    (to / "results.json").write_text(json.dumps(doc))
    return to


def test_cost_setups_that_differ_are_warned_of(runs: dict[str, Path], tmp_path: Path) -> None:
    a = _edited(runs["A"], tmp_path / "A")
    same = compare_runs(load_run(a), load_run(_edited(runs["B"], tmp_path / "B")), resamples=50)
    assert same["benchmarks"][BENCH]["budget"]["unit"] == "tokens"
    assert same["warnings"] == []
    # tokens: only the backend matters (another machine counts the same tokens)
    other_cpu = _edited(runs["B"], tmp_path / "B2", hardware="Other CPU", batch_size=1)
    assert compare_runs(load_run(a), load_run(other_cpu), resamples=50)["warnings"] == []
    endpoint = _edited(runs["B"], tmp_path / "B3", backend="openai")
    got = compare_runs(load_run(a), load_run(endpoint), resamples=50)["warnings"]
    assert got == [
        f"{BENCH}: matched budget in tokens, but the runs' cost setups differ (backend: A 'transformers', "
        "B 'openai'): tokens counted by other backends (tokenizers, image encodings, caches) are not one unit"
    ]
    # seconds (E reports no tokens): hardware, device, dtype, backend and batch size all matter
    timed = _edited(runs["E"], tmp_path / "E", hardware="Other CPU", batch_size=1)
    got = compare_runs(load_run(a), load_run(timed), resamples=50)["warnings"]
    assert got == [
        f"{BENCH}: matched budget in seconds, but the runs' cost setups differ (hardware: A 'Test CPU x 2 "
        "cores', B 'Other CPU'; batch_size: A 8, B 1): seconds measured on other hardware or settings are "
        "not one unit"
    ]
    timed_alike = _edited(runs["E"], tmp_path / "E2")
    assert compare_runs(load_run(a), load_run(timed_alike), resamples=50)["warnings"] == []


def _with_model(run: Path, to: Path, **model: Any) -> Path:
    """A copy of a run whose results.json config.model is edited."""
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("compare*"))
    doc = json.loads((to / "results.json").read_text())
    doc["config"]["model"].update(model)
    (to / "results.json").write_text(json.dumps(doc))
    return to


def test_another_refine_stage_is_matched(runs: dict[str, Path], tmp_path: Path) -> None:
    """Runs alike in K and critic but not in refine stage get the comparison at matched budget."""
    zoom = _with_model(runs["C"], tmp_path / "zoom", refine="zoom")
    doc = compare_runs(load_run(runs["B"]), load_run(zoom), resamples=50)
    assert doc["benchmarks"][BENCH]["budget"] is not None
    wider = _with_model(runs["C"], tmp_path / "wider", refine="zoom", refine_zoom=4.0)
    assert "budget" in compare_runs(load_run(zoom), load_run(wider), resamples=50)["benchmarks"][BENCH]
    # without a refine stage its other settings do nothing: no difference
    idle = _with_model(runs["C"], tmp_path / "idle", refine="none", refine_zoom=4.0)
    assert (
        "budget" not in compare_runs(load_run(runs["B"]), load_run(idle), resamples=50)["benchmarks"][BENCH]
    )


def test_lines_written_before_the_target_was_recorded_leave_a_vote_out(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """C's lines without ``target``/``size`` (an older gge): a vote on fewer candidates is unknown."""
    old = tmp_path / "old"
    shutil.copytree(runs["C"], old, ignore=shutil.ignore_patterns("compare*"))
    lines = _lines(old)
    for x in lines:
        x.pop("target", None)
        x.pop("size", None)
    (old / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    doc = compare_runs(load_run(runs["A"]), load_run(old), resamples=50)
    notes = [n for n in doc["notes"] if "builds a new point" in n]
    assert len(notes) == 1
    assert "predictions.jsonl lines (written before gge recorded it) do not have" in notes[0]
    curve = doc["benchmarks"][BENCH]["budget"]["b"]["curve"]
    assert curve[-1]["top1"] is not None  # j = K: the run's own outcome


def test_a_tie_of_cost_goes_to_the_larger_budget(runs: dict[str, Path], tmp_path: Path) -> None:
    """B against itself with a refine setting changed: every (j, j) is 0 apart; the tie goes to j = 5."""
    zoom = _with_model(runs["B"], tmp_path / "zoom", refine="zoom")
    budget = compare_runs(load_run(runs["B"]), load_run(zoom), resamples=50)["benchmarks"][BENCH]["budget"]
    # by hand: B's tokens rise with j (B_TOKENS), so only (j, j) pairs are 0 apart; the largest is j = 5
    assert sorted(B_TOKENS.values()) == [B_TOKENS[j] for j in range(1, 6)]
    assert budget["unit"] == "tokens" and budget["relative_difference"] == 0.0
    assert (budget["a"]["j"], budget["b"]["j"]) == (5, 5)
    assert budget["spread"] is None  # tokens are counted, not measured


def _noise(n: int, scale: float, seed: int) -> np.ndarray:
    """Per-sample factors ``1 + scale · u``, u uniform in [-1, 1] in ± pairs (their mean is exactly 1)."""
    rng = random.Random(seed)
    half = [rng.uniform(-1, 1) for _ in range(n // 2)]
    u = [v for r in half for v in (r, -r)] + [0.0] * (n % 2)
    rng.shuffle(u)
    return 1 + scale * np.array(u)


def _timed(lines: list[dict[str, Any]], t: np.ndarray) -> str:
    """Lines whose ledger is seconds only, sample n's scaled by ``t[n]``.

    Sample n: a propose request of 1.0 s·t (0.8 s·t of it the prompt's prefill) for all 5 slots and a
    judge of 0.02 s·t per slot: 1.1 s·t in all.
    """
    out = []
    for x, tn in zip(lines, t, strict=True):
        tn = float(tn)
        cost = [{"stage": "propose", "seconds": 1.0 * tn, "prefill_seconds": 0.8 * tn, "candidates": 5}]
        cost += [{"stage": "judge", "seconds": 0.02 * tn, "slot": i, "candidates": 1} for i in range(5)]
        out.append(json.dumps({**x, "cost": cost}) + "\n")
    return "".join(out)


@pytest.mark.parametrize("noise", [0.3, 0.005])
def test_identical_predictions_timed_apart_pair_at_the_closest_and_flag_what_noise_hides(
    runs: dict[str, Path], demo_suite: Path, tmp_path: Path, noise: float
) -> None:
    """Two runs of one predictions file, B's seconds 3% slower, each sample's time noisy by ±``noise``.

    The pair is the closest measured cost, A's j = 5 with B's j = 4, whatever the noise. With ±30%
    per sample, the uncertainty of the runs' mean seconds (36 samples) hides many other pairings and
    compare flags them; with ±0.5% it is small enough that the closest alone lies inside it.
    """
    source = [json.loads(x) for x in (runs["root"] / "d.jsonl").read_text().splitlines()]
    n = len(source)
    t_a = _noise(n, noise, seed=11)
    t_b = 1.03 * _noise(n, noise, seed=12)
    (tmp_path / "a.jsonl").write_text(_timed(source, t_a))
    (tmp_path / "b.jsonl").write_text(_timed(source, t_b))
    a = _eval(demo_suite, tmp_path / "A", tmp_path / "a.jsonl")
    b = _with_model(_eval(demo_suite, tmp_path / "B0", tmp_path / "b.jsonl"), tmp_path / "B", critic="none")
    out = tmp_path / "AB"
    assert main(["compare", str(a), str(b), "--out", str(out), "--resamples", "50"]) == 0
    doc = json.loads((out / "compare.json").read_text())
    budget = doc["benchmarks"][BENCH]["budget"]
    assert budget["unit"] == "seconds"

    # by hand: the critic pays, per unit of t, the prefill 0.8, 0.04 per answer used and 0.02 per judge
    # from j = 2 (at j = 1 it does not run): 0.84, then 0.8 + 0.06 j, times the run's mean t
    coef = {j: 0.84 if j == 1 else 0.8 + 0.06 * j for j in range(1, 6)}
    cost_a = {j: c * float(t_a.mean()) for j, c in coef.items()}
    cost_b = {j: c * float(t_b.mean()) for j, c in coef.items()}
    rel = {(ja, jb): abs(ca - cb) / max(ca, cb) for ja, ca in cost_a.items() for jb, cb in cost_b.items()}
    assert min(rel, key=rel.__getitem__) == (5, 4)  # 1.1 against 1.0712: closer than any (j, j), 0.03/1.03
    assert (budget["a"]["j"], budget["b"]["j"]) == (5, 4)
    assert budget["relative_difference"] == pytest.approx(rel[5, 4])
    assert budget["a"]["seconds"] == pytest.approx(cost_a[5]) and budget["b"]["seconds"] == pytest.approx(
        cost_b[4]
    )
    # each run's uncertainty: 1.96 sd / sqrt(n) / mean of its seconds per sample (1.1 t); the tolerance
    # of their difference sqrt(a^2 + b^2)
    half = [1.96 * np.std(1.1 * t, ddof=1) / np.sqrt(n) / np.mean(1.1 * t) for t in (t_a, t_b)]
    tolerance = float(np.hypot(*half))
    near = {pair for pair, r in rel.items() if r - rel[5, 4] <= tolerance}
    got = budget["spread"]
    assert got["a"] == pytest.approx(half[0]) and got["b"] == pytest.approx(half[1])
    assert got["tolerance"] == pytest.approx(tolerance) and got["policy"] == "flag"
    assert got["pairings"][0] == [5, 4] and {tuple(p) for p in got["pairings"]} == near
    listed = [rel[p, q] for p, q in got["pairings"]]
    assert all(x <= y + 1e-12 for x, y in itertools.pairwise(listed))  # from the closest (ties: (j, j))
    md = (out / "compare.md").read_text()
    html = (out / "compare.html").read_text()
    words = (
        "at matched budget in seconds, the pairing (jA, jB) = (5, 4) (the closest measured cost) cannot be "
        "told apart by the measurement from "
    )
    if noise == 0.3:
        assert tolerance > 0.05 and len(near) > 3  # the scenario: noise hides many pairings
        assert got["inside"] is True
        assert [n for n in doc["notes"] if words in n] != []
        assert f"±{100 * tolerance:.2g}%, inside" in md
        assert words in md
        assert f'<p class="warning">{words}' in html
    else:
        assert tolerance < rel[5, 5] - rel[5, 4]  # the scenario: the next pairing lies outside
        assert near == {(5, 4)} and got["inside"] is False
        assert not [n for n in doc["notes"] if "at matched budget in seconds" in n]
        assert re.search(rf"±{100 * tolerance:.2g}%\s+\|", md) and words not in md
        assert (
            '<p class="muted">at matched budget in seconds, the measurement tells the pairing '
            "(jA, jB) = (5, 4) (the closest measured cost) apart from every other" in html
        )
