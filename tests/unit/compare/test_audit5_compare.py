"""Audit 5's survivors in ``gge explain`` and ``gge compare``: each rule they left free, on hand-made inputs.

The walk's figures are counted by hand in the comments (each step's figure before and after it, not
only the sum of the steps, which equals B's figure minus A's by construction); compare's setups are
results.json documents written out here; the matched-budget spread is worked out from its formula.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gge.benchmarks.base import Average
from gge.compare.drift import compare_setups, engine_text
from gge.compare.explain import Explanation, Side, explain, read_side
from gge.compare.matched import Curve, closest, seconds_spread
from gge.compare.pairing import _pairs
from gge.compare.runs import Line, Run
from gge.errors import GgeError
from gge.types import Box, CostRecord, Sample

BOX = (10.0, 10.0, 20.0, 20.0)
IN, OUT = (15.0, 15.0), (50.0, 50.0)


def _samples(n: int) -> list[Sample]:
    """``n`` samples, each a 100x100 screenshot whose target is the box (10, 10)-(20, 20)."""
    return [Sample("b", f"s{i}", f"/d/{i}.png", (100, 100), f"click {i}", Box(*BOX)) for i in range(n)]


def _run_side(name: str, points: dict[str, tuple[float, float] | None]) -> Side:
    """A gge run's side: each line's point written, judged by gge."""
    return Side(name, {i: Side.Line(p, None, True, None, None) for i, p in points.items()})


def _steps(walk: Explanation) -> dict[str, tuple[float, float, tuple[str, ...], tuple[str, ...]]]:
    return {s.name: (s.start, s.end, s.to_hit, s.to_miss) for s in walk.steps}


# --- gge explain: which step moves a sample ---------------------------------------------------------


def test_an_uncounted_line_enters_with_gges_verdict_of_the_logs_own_point() -> None:
    """EX08: a line the harness did not count enters by the log's point, not the point written."""
    line = Side.Line
    # s0: counted, judged a hit; s1: not counted, the log's point IN (a hit), the point written OUT
    a = Side("A", {"s0": line(IN, True, True, IN, BOX), "s1": line(OUT, False, False, IN, BOX)})
    b = _run_side("B", {"s0": IN, "s1": IN})
    walk = explain(_samples(2), a, b)
    steps = _steps(walk)
    # printed: 1 of its 1 counted line (100); over the 2 samples s1 enters as a hit (its log point): 100
    assert steps["A: denominator"] == (100.0, 100.0, (), ())
    assert steps["A: data"] == steps["A: verdict rule"] == (100.0, 100.0, (), ())
    # the point written is OUT: the parse / frame step, not the denominator, turns s1 into a miss
    assert steps["A: parse / frame"] == (100.0, 50.0, (), ("s1",))
    assert steps["answer"] == (50.0, 100.0, ("s1",), ())


def test_a_log_without_verdicts_moves_nothing_where_its_own_point_differs() -> None:
    """EX09: a log without verdicts printed gge's verdict of its points: no verdict of its own to replace."""
    # the log's own point OUT (a miss by gge) beside the point written IN (a hit): the log printed 100
    a = Side("A", {"s0": Side.Line(IN, None, True, OUT, BOX)}, log=True)
    walk = explain(_samples(1), a, _run_side("B", {"s0": IN}))
    assert walk.moved == []
    assert all((s.start, s.end) == (100.0, 100.0) for s in walk.steps)


def test_a_line_without_the_logs_box_is_moved_by_the_verdict_rule_not_the_data() -> None:
    """EX10: the data step is for lines whose log box is not the release's; no box, no data step."""
    line = Side.Line
    # s0: the log judged its point IN wrong and kept no box; s1 a hit, as a counted judged line
    a = Side("A", {"s0": line(IN, False, True, IN, None), "s1": line(IN, True, True, IN, None)})
    walk = explain(_samples(2), a, _run_side("B", {"s0": IN, "s1": IN}))
    steps = _steps(walk)
    assert steps["A: denominator"] == (50.0, 50.0, (), ())  # 1 of 2 counted, 1 of 2 samples
    assert steps["A: data"] == (50.0, 50.0, (), ())
    assert steps["A: verdict rule"] == (50.0, 100.0, ("s0",), ())


def test_the_answer_note_counts_points_within_half_a_pixel_as_the_same_and_takes_the_true_median() -> None:
    """EX15 and the audit's aside: 0.5 px apart is the same point; the median of two is their mean."""
    a = _run_side("A", {"s0": IN, "s1": IN})
    # s0 0.5 px to the right; s1 3.5 px: the median of (0.5, 3.5) is 2.0 (the upper middle would be 3.5)
    b = _run_side("B", {"s0": (15.5, 15.0), "s1": (18.5, 15.0)})
    answer = next(s for s in explain(_samples(2), a, b).steps if s.name == "answer")
    assert answer.note == "(points: 1 of 2 the same; median drift 2.0 px, 3.5 px at most)"


def test_the_answer_note_names_only_the_moved_samples_a_side_had_no_line_for() -> None:
    """EX23: 'not in X's replayed file' counts the moved samples in X's absent set, not in its lines."""
    a = Side(
        "A",
        {"s0": Side.Line(None, None, True, None, None), "s1": Side.Line(OUT, None, True, None, None)},
        absent={"s0"},
    )
    b = _run_side("B", {"s0": IN, "s1": IN})
    answer = next(s for s in explain(_samples(2), a, b).steps if s.name == "answer")
    assert (answer.start, answer.end, answer.to_hit) == (0.0, 100.0, ("s0", "s1"))
    # s1's two points: (50, 50) and (15, 15), 35 * sqrt(2) = 49.50 px apart
    assert answer.note == (
        "(points: 0 of 1 the same; median drift 49.5 px, 49.5 px at most; "
        "1 of them not in A's replayed file: s0)"
    )


def test_a_published_figure_equal_to_the_computed_one_still_has_its_row() -> None:
    """EX03: a step that moves nothing but says something (the published figure) is a markdown row."""
    a = _run_side("A", {"s0": IN, "s1": OUT})
    b = _run_side("B", {"s0": IN, "s1": IN})
    walk = explain(_samples(2), a, b, published=100.0)
    rows = [r for r in walk.markdown("A", "B").splitlines() if r.startswith("| printed |")]
    assert rows == [
        "| printed | 100.00 | 100.00 | +0.00 | 0 | 0 |  (published 100.00 against 100.00 computed, "
        "B's printed figure: gge's rule (micro) over its 2 lines, of the 2 samples; "
        "100.0000 rounded to 2 decimals) |"
    ]


def test_a_run_on_the_a_side_says_its_aggregation_over_its_samples() -> None:
    """The aggregation note counts A's lines among the release's samples: 3 of the 4 here."""
    samples = [replace(s, labels={"g": "x" if i < 2 else "y"}) for i, s in enumerate(_samples(4))]
    rule = Average("macro_g", ("g",))
    # A, a run over s0, s1, s2: x 1 of 2 (s0), y 1 of 1 (s2): macro 75, micro 2 of 3
    a = _run_side("A", {"s0": IN, "s1": OUT, "s2": IN})
    walk = explain(samples, a, _run_side("B", {f"s{i}": IN for i in range(4)}), official=rule)
    first = walk.steps[0]
    assert (first.name, first.start, first.end) == ("A: aggregation", 75.0, pytest.approx(200 / 3))
    assert first.note == "(macro_g over its 3 samples -> micro)"


def test_a_run_with_no_line_for_a_release_sample_prints_zero_on_a_macro_rule() -> None:
    """No sample of the release among a run's lines: no group to average, a figure of 0, no crash."""
    samples = [replace(s, labels={"g": "x"}) for s in _samples(2)]
    walk = explain(
        samples,
        _run_side("A", {"s0": IN, "s1": IN}),
        _run_side("B", {"z": IN}),
        official=Average("m", ("g",)),
    )
    assert (walk.a_figure, walk.b_figure) == (100.0, 0.0)


# --- gge explain: reading a side ------------------------------------------------------------------


def _imported(tmp_path: Path, block: dict[str, Any]) -> Path:
    path = tmp_path / "f.jsonl"
    line = {"benchmark": "b", "id": "s0", "candidates": [[15.0, 15.0]], "imported": block}
    path.write_text(json.dumps(line) + "\n")
    return path


def test_an_imported_point_of_three_numbers_is_refused(tmp_path: Path) -> None:
    """EX17: ``imported.point`` is exactly [x, y]."""
    path = _imported(tmp_path, {"correct": True, "point": [1, 2, 3]})
    with pytest.raises(
        GgeError, match=r"f\.jsonl:1: imported\.point must be \[x, y\] or null, got \[1, 2, 3\]"
    ):
        read_side(path, "b", "A")


def test_an_imported_line_without_counted_is_counted(tmp_path: Path) -> None:
    """EX18: a hand-made or older import without ``counted`` is in its printed figure."""
    side = read_side(_imported(tmp_path, {"correct": True}), "b", "A")
    assert side.lines["s0"] == Side.Line(IN, True, True, None, None)


def test_an_imported_box_of_four_numbers_is_read(tmp_path: Path) -> None:
    side = read_side(
        _imported(tmp_path, {"correct": True, "point": [15, 15], "box": [10, 10, 20, 20]}), "b", "A"
    )
    assert side.lines["s0"] == Side.Line(IN, True, True, IN, BOX)


def _run_folder(tmp_path: Path, selection: str | None, lines: list[dict[str, Any]]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    if selection is not None:
        (run / "results.json").write_text(json.dumps({"selection": selection}))
    (run / "predictions.jsonl").write_text("".join(json.dumps({"benchmark": "b", **x}) + "\n" for x in lines))
    return run


def test_a_null_pick_is_an_abstention_only_where_the_runs_own_verdict_is_a_hit(tmp_path: Path) -> None:
    """EX19: a null pick its run calls a miss is no pick, not an abstention."""
    run = _run_folder(
        tmp_path,
        "first",
        [
            {"id": "s0", "candidates": [None], "picks": {"first": None}, "top1": {"first": False}},
            {"id": "s1", "candidates": [None], "picks": {"first": None}, "top1": {"first": True}},
        ],
    )
    side = read_side(run, "b", "B")
    assert side.scored_by == "its first pick"
    assert (side.lines["s0"].refused, side.lines["s1"].refused) == (False, True)


def test_an_unparsed_first_candidate_is_no_abstention(tmp_path: Path) -> None:
    """EX20: only a parsed answer without a point (null) is an abstention; "unparsed" is none."""
    run = _run_folder(
        tmp_path, None, [{"id": "s0", "candidates": ["unparsed"]}, {"id": "s1", "candidates": [None]}]
    )
    side = read_side(run, "b", "B")
    assert side.scored_by == "its first candidate"
    assert (side.lines["s0"].refused, side.lines["s1"].refused) == (False, True)


# --- gge compare: what differs between two setups ------------------------------------------------


def _run(document: dict[str, Any], label: str = "A") -> Run:
    folder = Path(label)
    return Run(folder, folder / "results.json", folder / "predictions.jsonl", document, {}, label)  # type: ignore[arg-type]


def _transformers(version: str) -> dict[str, Any]:
    backend = {"backend": "transformers", "transformers": version, "torch": "2.8.0", "checkpoint": "/ck"}
    return {
        "k": 1,
        "selection": "first",
        "config": {"ckpt": "/ck"},
        "model": {"model": "qwen", "backend": backend},
    }


def test_a_setting_recorded_empty_by_one_run_and_absent_from_the_other_differs() -> None:
    """DR02: ``{}`` is a value of its own: recorded by one run only, it differs."""
    a = _run({"k": 1, "config": {"model": {"name": "qwen", "prompts": {}}}})
    b = _run({"k": 1, "config": {"model": {"name": "qwen"}}}, "B")
    setup = compare_setups(a, b)
    assert setup["relation"] == "other"
    assert setup["differences"] == [{"key": "config.model.prompts", "a": {}, "b": "(absent)"}]


def test_a_key_sharing_an_engine_keys_prefix_without_its_dot_is_not_the_engines() -> None:
    """DR01: a key is under an engine key only by a dotted path (``device_map`` is not under ``device``)."""
    a = _run({"k": 1, "config": {"model": {"name": "qwen", "device_map": "auto"}}})
    b = _run({"k": 1, "config": {"model": {"name": "qwen"}}}, "B")
    setup = compare_setups(a, b)
    assert (setup["relation"], setup["engine_differences"]) == ("other", [])
    assert setup["differences"] == [{"key": "config.model.device_map", "a": "auto", "b": "(absent)"}]


def test_two_in_process_engines_get_no_endpoint_caveat() -> None:
    """DR03: the caveat on the model name served is an endpoint run's (a ``base_url``), not any backend's."""
    setup = compare_setups(_run(_transformers("4.57.1")), _run(_transformers("4.58.0"), "B"))
    assert setup["relation"] == "engine"
    assert [d["key"] for d in setup["engine_differences"]] == ["model.backend.transformers"]
    unchecked = (
        "; whether the models saw the same inputs cannot be checked: A and B record no prompt token "
        "counts for the matched samples' proposer requests"
    )
    assert setup["statement"].endswith(
        "differing: model.backend.transformers): the answers that differ are engine drift" + unchecked
    )
    # B served by an endpoint: the caveat names B only
    served = _transformers("4.57.1")
    served["model"]["backend"] = {
        "backend": "openai",
        "base_url": "http://127.0.0.1:8000/v1",
        "model": "qwen",
    }
    text = compare_setups(_run(_transformers("4.57.1")), _run(served, "B"))["statement"]
    assert text.endswith(
        "engine drift (B: an endpoint run records the model name served, not the checkpoint behind it)"
        + unchecked
    )


def test_an_engine_is_said_by_its_backend_versions_and_checkpoint() -> None:
    """The transformers backend named once, before its versions (the docstring's example)."""
    assert engine_text(_run(_transformers("4.57.1"))) == "transformers 4.57.1, torch 2.8.0: /ck"
    other = {"model": {"backend": {"backend": "vllm", "torch": "2.8.0", "checkpoint": "/ck"}}}
    assert engine_text(_run(other)) == "vllm torch 2.8.0: /ck"
    assert engine_text(_run({"model": {"backend": {"backend": "vllm"}}})) == "vllm"


def test_two_replays_of_the_same_recorded_setup_are_the_same() -> None:
    """DR06: replays are unknown only where something differs; the same recorded setup is 'same'."""
    doc = {
        "k": 1,
        "selection": "first",
        "model": {"model": "replay", "predictions": "p.jsonl"},
        "config": {"batch_size": 8},
    }
    setup = compare_setups(_run(doc), _run(json.loads(json.dumps(doc)), "B"))
    assert setup["relation"] == "same"
    assert setup["statement"].startswith("the runs' recorded setups are the same, engine included")
    # two replays of the file in other batches: only an engine key differs, but a replay records no engine
    other = json.loads(json.dumps(doc))
    other["config"]["batch_size"] = 16
    setup = compare_setups(_run(doc), _run(other, "B"))
    assert (setup["relation"], setup["differences"]) == ("replay", [])
    assert setup["engine_differences"] == [{"key": "config.batch_size", "a": 8, "b": 16}]


# --- gge compare: matched budget and pairing ------------------------------------------------------


def _seconds_curve(seconds: list[float]) -> Curve:
    """A curve of one known sample whose point j costs ``seconds[j - 1]`` seconds (no tokens)."""
    js = tuple(range(1, len(seconds) + 1))
    return Curve(
        "critic", len(js), "prefix", None, js, tuple((1.0,) for _ in js), tuple((None, s) for s in seconds),
        tuple("measured" for _ in js),
    )  # fmt: skip


def test_a_pairing_exactly_at_the_tolerance_is_indistinguishable() -> None:
    """MA02: within the tolerance includes its edge: |100 - 125| / 125 = 0.2 is inside a tolerance of 0.2."""
    match = closest(_seconds_curve([100.0]), _seconds_curve([100.0, 125.0]), tolerance=0.2)
    assert match is not None and match.unit == "seconds"
    assert (match.i, match.m, match.inside) == (0, 0, ((0, 0), (0, 1)))


def test_a_point_whose_hits_are_unknown_is_never_paired() -> None:
    """A's j = 2 costs B's exactly but one of its hits is unknown: the closest known point pairs."""
    a = _seconds_curve([100.0, 200.0])
    a = Curve(a.strategy, a.k, a.method, a.critic, a.js, ((1.0,), (None,)), a.costs, a.labels)
    match = closest(a, _seconds_curve([200.0]))
    assert match is not None and (match.i, match.m, match.rel) == (0, 0, 0.5)


def test_costs_under_a_second_are_compared_relatively() -> None:
    """0.5 s against 1.0 s is 0.5 apart, against 0.9 s 0.4 / 0.9: the second is the closest."""
    match = closest(_seconds_curve([0.5]), _seconds_curve([1.0, 0.9]))
    assert match is not None and (match.i, match.m) == (0, 1)
    assert match.rel == pytest.approx(0.4 / 0.9)


def _timed(i: int, seconds: float | None) -> Line:
    costs = () if seconds is None else (CostRecord("propose", seconds=seconds),)
    return Line(f"s{i}", i + 1, True, (True,), None, None, costs=costs)


def test_two_samples_give_a_spread_of_their_mean() -> None:
    """MA04: seconds 1 and 3: mean 2, sd sqrt(2) (ddof 1), n 2: 1.96 * sqrt(2) / sqrt(2) / 2 = 0.98."""
    assert seconds_spread([_timed(0, 1.0), _timed(1, 3.0)]) == pytest.approx(0.98)


def test_a_sample_without_a_cost_ledger_is_left_out_of_the_spread() -> None:
    """MA03: an unreadable screenshot's sample records no costs: no crash, the same 0.98 as without it."""
    assert seconds_spread([_timed(0, 1.0), _timed(1, None), _timed(2, 3.0)]) == pytest.approx(0.98)


def test_a_run_with_some_screenshots_embedded_is_clustered_by_its_own() -> None:
    """PA05: B's screenshots stand in only where every one of A's is embedded in a Hub copy."""
    a = [
        Line("s0", 1, True, (True,), "data/x.parquet::parquet:0", None),
        Line("s1", 2, True, (True,), "/d/1.png", None),
    ]
    b = [Line("s0", 1, True, (True,), "/b/0.png", None), Line("s1", 2, True, (True,), "/b/1.png", None)]
    _, clusters, unknown = _pairs(a, b)
    assert (clusters, unknown) == (["data/x.parquet::parquet:0", "/d/1.png"], 0)
    # every one of A's embedded: B's files
    assert _pairs(a[:1], b[:1])[1] == ["/b/0.png"]


def test_bs_screenshots_stand_in_only_where_none_of_bs_is_embedded() -> None:
    """A's all embedded or none: B's files, and a pair with no screenshot is a cluster of its own."""
    a = [Line("s0", 1, True, (True,), "x.parquet::parquet:0", None), Line("s1", 2, True, (True,), None, None)]
    b = [Line("s0", 1, True, (True,), "/b/0.png", None), Line("s1", 2, True, (True,), None, None)]
    _, clusters, unknown = _pairs(a, b)
    assert (clusters, unknown) == (["/b/0.png", "sample:s1"], 1)
    # B partly embedded itself: A's
    a2 = [Line(f"s{i}", i + 1, True, (True,), f"x.parquet::parquet:{i}", None) for i in range(2)]
    b2 = [
        Line("s0", 1, True, (True,), "y.parquet::parquet:0", None),
        Line("s1", 2, True, (True,), "/b/1.png", None),
    ]
    assert _pairs(a2, b2)[1] == ["x.parquet::parquet:0", "x.parquet::parquet:1"]


# --- from an unbiased mutant sample (seed 11) ---------------------------------------------------


def test_an_imported_point_keeps_its_x_and_its_y(tmp_path: Path) -> None:
    side = read_side(_imported(tmp_path, {"correct": False, "point": [12, 47]}), "b", "A")
    assert side.lines["s0"].log_point == (12.0, 47.0)


def test_a_selection_that_is_no_name_reads_the_first_candidate(tmp_path: Path) -> None:
    run = _run_folder(
        tmp_path, None, [{"id": "s0", "candidates": [[1, 2], [15, 15]], "picks": {"5": [15, 15]}}]
    )
    for selection in (5, ["5"]):  # a hand-edited results.json: no strategy's name, so no pick of one
        (run / "results.json").write_text(json.dumps({"selection": selection}))
        side = read_side(run, "b", "B")
        assert side.scored_by == "its first candidate" and side.lines["s0"].point == (1.0, 2.0)
