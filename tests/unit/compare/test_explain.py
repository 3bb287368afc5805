"""``gge explain``: a walk whose every cause is planted once, checked against a hand count."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from gge.benchmarks.base import Average
from gge.cli.commands import main
from gge.compare.explain import Side, _printing, explain, read_side
from gge.errors import GgeError
from gge.types import Box, Sample

N = 10


def _samples() -> list[Sample]:
    return [
        Sample("b", f"s{i}", f"/d/{i}.png", (100, 100), f"click {i}", Box(10, 10, 20, 20)) for i in range(N)
    ]


BOX = (10.0, 10.0, 20.0, 20.0)
IN, OUT = (15.0, 15.0), (50.0, 50.0)


def _a() -> Side:
    """A harness's log: 9 lines (s9 not in the file), s8 not counted by it, one cause each on s1-s3."""
    line = Side.Line
    return Side(
        "A",
        {
            "s0": line(IN, True, True, IN, BOX),
            "s1": line(
                (25.0, 15.0), True, True, (25.0, 15.0), (10.0, 10.0, 30.0, 20.0)
            ),  # data: its box is wider
            "s2": line((20.0, 15.0), False, True, (20.0, 15.0), BOX),  # rule: judged 20.4, logged 20
            "s3": line(IN, False, True, OUT, BOX),  # parse: the raw answer read again is IN
            "s4": line(IN, True, True, IN, BOX),
            "s5": line(IN, True, True, IN, BOX),
            "s6": line(OUT, False, True, OUT, BOX),
            "s7": line(IN, True, True, IN, BOX),
            "s8": line(OUT, False, False, OUT, BOX),  # not counted by the harness
        },
    )


def _b() -> Side:
    """A gge run of the same checkpoint: every sample; s5 answered elsewhere, s9 answered."""
    points = {f"s{i}": IN for i in range(N)} | {
        "s1": (25.0, 15.0),
        "s2": (20.0, 15.0),
        "s5": OUT,
        "s6": OUT,
        "s8": OUT,
    }
    return Side("B", {i: Side.Line(p, None, True, None, None) for i, p in points.items()})


def test_each_planted_cause_is_its_own_step_and_the_steps_sum_to_the_difference() -> None:
    walk = explain(_samples(), _a(), _b(), published=61.0)
    # A printed 5 of its 8 counted lines (s0 s1 s4 s5 s7); B, a gge run, 6 of 10 (s0 s2 s3 s4 s7 s9)
    assert walk.a_figure == 62.5 and walk.b_figure == 61.0
    moved = {s.name: (s.points, s.to_hit, s.to_miss) for s in walk.steps}
    assert moved["A: denominator"][0] == pytest.approx(50.0 - 62.5)  # 5 of 10: s8 and s9 now count
    assert moved["A: data"] == (pytest.approx(-10.0), (), ("s1",))
    assert moved["A: verdict rule"] == (pytest.approx(10.0), ("s2",), ())
    assert moved["A: parse / frame"] == (pytest.approx(10.0), ("s3",), ())
    assert moved["answer"] == (pytest.approx(0.0), ("s9",), ("s5",))
    assert all(moved[name][0] == 0 for name in moved if name.startswith("B:"))  # a gge run: nothing to walk
    assert moved["printed"][0] == pytest.approx(61.0 - 60.0)
    assert walk.total == pytest.approx(61.0 - 62.5)
    denominator = next(s for s in walk.steps if s.name == "A: denominator")
    assert denominator.note == "(1 not in the file; 1 not counted or judged by its harness: s9, s8)"


def test_explain_reads_an_import_and_a_run_and_writes_its_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an imported file as gge import writes it, and a run's predictions.jsonl (first candidate scored)
    a = tmp_path / "a.jsonl"
    rows = [
        {"benchmark": "screenspot_v2", "id": "x", "candidates": [[1.0, 1.0]],
         "imported": {"format": "gelato", "file": "g", "line": 1, "correct": True, "counted": True,
                      "point": [1.0, 1.0], "box": None}},
    ]  # fmt: skip
    a.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    side = read_side(a, "screenspot_v2", "A")
    assert side.imported and side.lines["x"] == Side.Line((1.0, 1.0), True, True, (1.0, 1.0), None)
    from gge.benchmarks.demo import write_demo_suite

    suite = write_demo_suite(tmp_path / "demo", per_benchmark=12)
    out = tmp_path / "explained"
    code = main(
        ["explain", str(suite / "predictions.jsonl"), str(suite / "predictions.jsonl"), "--benchmark",
         "screenspot_v2", "--data-root", str(suite), "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    doc = json.loads((out / "explain.json").read_text())
    # one run against itself: the same figure, no step moves a sample
    assert doc["a_figure"] == doc["b_figure"] and doc["total"] == 0
    assert all(not s["to_hit"] and not s["to_miss"] for s in doc["steps"])
    assert (out / "explain.md").read_text().startswith("# A -> B: screenspot_v2, 12 samples")
    assert "difference +0.00 points, the steps' sum +0.00" in capsys.readouterr().out


def test_a_line_without_a_verdict_is_out_of_the_printed_figure_and_judged_by_gge_after() -> None:
    line = Side.Line
    a = Side("A", {"s0": line(IN, True, True, IN, BOX), "s1": line(IN, None, True, IN, BOX)})
    b = Side("B", {"s0": line(IN, None, True, None, None), "s1": line(IN, None, True, None, None)})
    walk = explain(_samples()[:2], a, b)
    # A printed 1 of its 1 judged line; over the 2 samples gge judges s1 too (a hit): nothing else moves
    assert walk.a_figure == 100.0 and walk.b_figure == 100.0 and walk.total == 0
    assert [s.name for s in walk.steps if s.points] == []
    assert walk.steps[0].note == "(1 not counted or judged by its harness: s1)"


def test_a_log_on_the_b_side_is_walked_back_step_by_step() -> None:
    walk = explain(_samples(), Side("A", _b().lines), Side("B", _a().lines))
    moved = {s.name: (s.points, s.to_hit, s.to_miss) for s in walk.steps}
    # the run printed 60 over its 10 lines; the log 62.5 over its 8: the same causes, the other way
    assert (walk.a_figure, walk.b_figure) == (60.0, 62.5)
    assert moved["answer"] == (pytest.approx(0.0), ("s5",), ("s9",))
    assert moved["B: parse / frame (back)"] == (pytest.approx(-10.0), (), ("s3",))
    assert moved["B: verdict rule (back)"] == (pytest.approx(-10.0), (), ("s2",))
    assert moved["B: data (back)"] == (pytest.approx(10.0), ("s1",), ())
    assert moved["B: denominator (back)"][0] == pytest.approx(62.5 - 50.0)
    assert walk.total == pytest.approx(2.5)


def test_a_negative_point_on_a_refusal_item_is_an_abstention_by_gges_rule() -> None:
    from gge.types import Absent

    samples = [Sample("o", "r", "/r.png", (100, 100), "add a name", Absent())]
    # the harness scored [-1, -1] as a point (wrong); gge reads it as an abstention, which hits
    a = Side("A", {"r": Side.Line((-1.0, -1.0), False, True, (-1.0, -1.0), (0.0, 0.0, 0.0, 0.0))})
    b = Side("B", {"r": Side.Line(None, None, True, None, None, refused=True)})
    walk = explain(samples, a, b)
    moved = {s.name: (s.points, s.to_hit) for s in walk.steps if s.points}
    assert moved == {"A: verdict rule": (100.0, ("r",))} and walk.total == 100.0


def _line(**imported: object) -> str:
    block = {"correct": True, "counted": True, "point": [1.0, 1.0], "box": None} | imported
    return json.dumps({"benchmark": "b", "id": "s0", "candidates": [[1.0, 1.0]], "imported": block})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_line(correct="false"), r"f\.jsonl:1: imported\.correct must be true, false or null"),
        (_line(counted=0), r"f\.jsonl:1: imported\.counted must be true or false"),
        (_line(point=[1.0]), r"f\.jsonl:1: imported\.point must be \[x, y\] or null"),
        (_line(box=[1, 2, "x", 4]), r"f\.jsonl:1: imported\.box must be a list of at least 4 numbers"),
        (
            json.dumps({"benchmark": "b", "id": "s0", "candidates": [], "imported": 3}),
            "imported must be an object",
        ),
        (_line() + "\n" + _line(), r"f\.jsonl:2: a second line for b s0 \(the first at line 1\)"),
        (json.dumps({"benchmark": "other", "id": "s0", "candidates": []}), r"f\.jsonl: no line for b"),
    ],
)
def test_a_bad_side_file_is_one_line_naming_file_line_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(GgeError, match=message):
        read_side(path, "b", "A")


def test_a_run_side_is_scored_by_its_selection_and_over_its_own_samples(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"selection": "critic"}))
    lines = [  # the critic picks the second candidate, which hits; the first misses
        {"benchmark": "b", "id": f"s{i}", "candidates": [[50.0, 50.0], [15.0, 15.0]],
         "picks": {"first": [50.0, 50.0], "critic": [15.0, 15.0]}}
        for i in range(2)
    ]  # fmt: skip
    (run / "predictions.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    side = read_side(run, "b", "B")
    assert side.scored_by == "its critic pick" and side.lines["s0"].point == IN
    # a run over 2 of the 10 samples printed 100: the 8 it did not run are the denominator's, not the answer's
    walk = explain(_samples(), Side("A", side.lines), side)
    assert walk.a_figure == 100.0
    assert walk.steps[0].name == "A: denominator" and walk.steps[0].points == pytest.approx(20.0 - 100.0)
    assert walk.steps[0].note.startswith("(8 not in the file: s2, s3")


def test_a_run_that_replayed_a_file_without_some_lines_counts_them_as_it_printed(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    hit = {"benchmark": "b", "candidates": [[15.0, 15.0]]}
    lines = [
        {**hit, "id": "s0"},
        {**hit, "id": "s1"},
        {"benchmark": "b", "id": "s2", "candidates": [], "not_in_file": True},
    ]
    (run / "predictions.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    side = read_side(run, "b", "B")
    assert side.absent == {"s2"} and side.lines["s2"].point is None
    # the run printed 2 of its 3 samples (s2 a miss, as its results.json's top1 counts it), not 2 of 2
    a = Side("A", {i: Side.Line(IN, None, True, None, None) for i in ("s0", "s1", "s2")})
    walk = explain(_samples()[:3], a, side)
    assert walk.b_figure == pytest.approx(200 / 3)
    answer = next(st for st in walk.steps if st.name == "answer")
    assert answer.to_miss == ("s2",) and "1 of them not in B's replayed file: s2" in answer.note


def test_a_log_without_verdicts_prints_micro_even_on_a_macro_benchmark(tmp_path: Path) -> None:
    samples = [replace(s, labels={"g": "x" if i < 6 else "y"}) for i, s in enumerate(_samples())]
    log = tmp_path / "log.jsonl"  # a gge import of a log that keeps no verdicts (VLMEvalKit's)
    rows = [
        {"benchmark": "b", "id": f"s{i}", "candidates": [list(IN if i in (0, 6, 7) else OUT)],
         "imported": {"format": "vlmevalkit", "file": "p.xlsx", "line": i + 2, "correct": None}}
        for i in range(N)
    ]  # fmt: skip
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    side = read_side(log, "b", "A")
    assert side.is_log and not side.imported
    walk = explain(samples, side, side, official=Average("macro_g", ("g",)))
    assert walk.a_figure == pytest.approx(30.0)  # 3 of 10, micro: a harness's log prints micro
    assert not any("aggregation" in st.name for st in walk.steps)


def test_the_moved_samples_carry_both_points_and_the_steps_that_move_them() -> None:
    walk = explain(_samples(), _a(), _b())
    moved = {m.id: m for m in walk.moved}
    assert list(moved) == ["s1", "s2", "s3", "s5", "s9"]  # sample order
    assert moved["s1"].steps == ("A: data: to miss",)
    assert moved["s3"].steps == ("A: parse / frame: to hit",) and moved["s3"].a_point == IN
    assert (moved["s5"].a_point, moved["s5"].b_point, moved["s5"].a_hit, moved["s5"].b_hit) == (
        IN,
        OUT,
        True,
        False,
    )
    assert (moved["s9"].a_point, moved["s9"].steps) == (None, ("answer: to hit",))
    assert walk.document()["moved"][0] == {
        "id": "s1", "steps": ["A: data: to miss"], "a_point": [25.0, 15.0], "b_point": [25.0, 15.0],
        "a_hit": False, "b_hit": False,
    }  # fmt: skip


def test_a_macro_headline_is_walked_through_its_aggregation() -> None:
    # groups x (s0-s5) and y (s6-s9); official: the mean of the two groups' hit rates
    samples = [
        Sample(
            "b",
            f"s{i}",
            f"/d/{i}.png",
            (100, 100),
            f"click {i}",
            Box(10, 10, 20, 20),
            {"g": "x" if i < 6 else "y"},
        )
        for i in range(N)
    ]
    rule = Average("macro_g", ("g",))
    # A: a harness log (it prints micro); B: a gge run (it prints the macro mean) over 9 samples (no s9)
    a = Side(
        "A",
        {f"s{i}": Side.Line(IN if i < 5 else OUT, i < 5, True, IN if i < 5 else OUT, BOX) for i in range(N)},
    )
    b = Side(
        "B", {f"s{i}": Side.Line(IN if i in (0, 6, 7) else OUT, None, True, None, None) for i in range(9)}
    )
    walk = explain(samples, a, b, official=rule)
    assert walk.a_figure == 50.0  # 5 of 10, micro
    assert walk.b_figure == pytest.approx((1 / 6 + 2 / 3) / 2 * 100)  # x: s0 of 6; y: s6, s7 of 3
    steps = {s.name: s for s in walk.steps}
    assert "A: aggregation" not in steps  # a log prints micro
    assert steps["B: denominator (back)"].points == pytest.approx(300 / 9 - 30.0)  # 3 of 10 -> 3 of 9
    assert steps["B: aggregation (back)"].points == pytest.approx((1 / 6 + 2 / 3) / 2 * 100 - 300 / 9)
    assert steps["B: aggregation (back)"].note == "(micro -> macro_g over its 9 samples)"
    assert walk.total == pytest.approx(walk.b_figure - walk.a_figure)
    # the run on the A side: its aggregation comes first
    back = explain(samples, b, a, official=rule)
    assert back.steps[0].name == "B: aggregation"
    assert back.steps[0].points == pytest.approx(300 / 9 - (1 / 6 + 2 / 3) / 2 * 100)
    assert back.total == pytest.approx(50.0 - (1 / 6 + 2 / 3) / 2 * 100)


@pytest.mark.parametrize(
    ("published", "computed", "said"),
    [
        (62.5, 62.5, "; 62.5000 rounded to 2 decimals"),
        (66.7, 200 / 3, "; 66.6667 rounded to 1 decimals"),
        (66.66, 200 / 3, "; 66.6667 cut to 2 decimals"),
        (66.6, 200 / 3, "; 66.6667 cut to 1 decimals"),
        (66.5, 200 / 3, ""),
    ],
)
def test_a_published_figure_within_the_printing_says_so(published: float, computed: float, said: str) -> None:
    assert _printing(published, computed) == said


def test_the_page_draws_each_moved_sample_with_both_points(tmp_path: Path) -> None:
    from gge.benchmarks.demo import write_demo_suite
    from gge.benchmarks.loading import load_benchmarks

    suite = write_demo_suite(tmp_path / "demo", per_benchmark=12)
    samples = load_benchmarks(["screenspot_v2"], suite, {}).samples["screenspot_v2"]
    # B answers every sample at its target's centre: each of A's first candidates that misses flips
    b = tmp_path / "b.jsonl"
    lines = []
    for s in samples:
        x1, y1, x2, y2 = s.region.pixel_box()  # type: ignore[union-attr]
        lines.append(
            {"benchmark": "screenspot_v2", "id": s.id, "candidates": [[(x1 + x2) / 2, (y1 + y2) / 2]]}
        )
    b.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp_path / "explained"
    args = ["explain", str(suite / "predictions.jsonl"), str(b), "--benchmark", "screenspot_v2"]
    assert main([*args, "--data-root", str(suite), "--out", str(out), "--labels", "log", "run"]) == 0
    doc = json.loads((out / "explain.json").read_text())
    assert doc["b_figure"] == 100.0
    answer = next(s for s in doc["steps"] if s["name"] == "answer")
    assert answer["to_miss"] == [] and [m["id"] for m in doc["moved"]] == answer["to_hit"] != []
    page = (out / "explain.html").read_text()
    cards = re.findall(r'<figure class="card" data-id="([^"]+)"><img src="data:image/jpeg;base64,', page)
    assert cards == answer["to_hit"]  # each drawn, in sample order
    assert "1 = log's point (ringed), 2 = run's point" in page


def test_the_page_draws_at_most_its_cards_and_counts_the_rest() -> None:
    from gge.report.explain_page import CARDS, render_explain_html

    moved = [
        {"id": f"s{i}", "steps": ["answer: to hit"], "a_point": None, "b_point": [1.0, 1.0], "a_hit": False,
         "b_hit": True}
        for i in range(CARDS + 3)
    ]  # fmt: skip
    doc = {
        "benchmark": "b",
        "samples": 99,
        "a_figure": 0.0,
        "b_figure": 1.0,
        "total": 1.0,
        "steps": [],
        "moved": moved,
    }
    page = render_explain_html(doc, {})
    assert page.count('<figure class="card"') == CARDS and "and 3 more, listed in explain.json" in page
