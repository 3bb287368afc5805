"""``gge compare``'s engine drift (issue 27, item 6): how two runs' answers differ, and what else does.

Two kinds of real run folders: replays of two hand-written predictions files that differ in known
ways (every kind of difference: a moved point, a reformatted answer, critic scores that pick another
candidate, an abstention, an unparsed answer), and runs of ``model=openai_api`` against two real HTTP
servers on 127.0.0.1 (two "engines" of one served model) that answer each instruction from tables
written here. Every count and distance is checked against a computation from what was written
(the candidates, raw texts and scores of the files; the servers' answer tables), never from
compare's own output.
"""

from __future__ import annotations

import io
import json
import math
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gge.cli.commands import main
from gge.compare import compare_runs, load_run
from gge.compare.drift import FLIP_EXAMPLES
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Sample
from tests.helpers.replay_runs import load_samples, replay_run, write_lines

BENCH = "screenspot_v2"
Point = tuple[float, float]


# -- independent reading of what was written -------------------------------------------------------


def _inside(p: Point | None, s: Sample) -> bool:
    """ScreenSpot-v2's hit: the point lies in the target box (edges included)."""
    box = s.region.pixel_box()
    assert box is not None
    return p is not None and box[0] <= p[0] <= box[2] and box[1] <= p[1] <= box[3]


def _centre(s: Sample) -> Point:
    box = s.region.pixel_box()
    assert box is not None
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def _linear_percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile by linear interpolation between order statistics (numpy's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _expected(
    samples: Sequence[Sample],
    a: Mapping[str, tuple[str, list[Point | None], list[float]]],
    b: Mapping[str, tuple[str, list[Point | None], list[float]]],
) -> dict[str, Any]:
    """The drift of two runs computed from (raw, first points..., scores) per sample id.

    A candidate of None is no point (an abstention or an unparsed answer, both misses here); Top-1
    is the hit of the highest-scored candidate.
    """

    def top1(c: Sequence[Point | None], scores: Sequence[float], s: Sample) -> bool:
        return _inside(c[max(range(len(c)), key=lambda i: scores[i])], s)

    dist: list[float] = []
    out: dict[str, Any] = dict.fromkeys(
        ("raw", "a_only", "b_only", "neither", "t_ab", "t_ba", "f_ab", "f_ba"), 0
    )
    flips: list[str] = []
    for s in samples:
        (ra, ca, sa), (rb, cb, sb) = a[s.id], b[s.id]
        out["raw"] += ra.strip() != rb.strip()
        pa, pb = ca[0], cb[0]
        if pa is not None and pb is not None:
            dist.append(math.hypot(pa[0] - pb[0], pa[1] - pb[1]))
        else:
            out["a_only" if pa is not None else "b_only" if pb is not None else "neither"] += 1
        ta, tb = top1(ca, sa, s), top1(cb, sb, s)
        out["t_ab"] += ta and not tb
        out["t_ba"] += tb and not ta
        if ta != tb:
            flips.append(s.id)
        fa, fb = _inside(pa, s), _inside(pb, s)
        out["f_ab"] += fa and not fb
        out["f_ba"] += fb and not fa
    out["distances"] = dist
    out["flips"] = flips
    return out


def _check_drift(d: Mapping[str, Any], want: Mapping[str, Any], n: int) -> None:
    dist = want["distances"]
    assert d["samples"] == n
    assert d["raw_differs"] == want["raw"]
    assert d["both_points"] == len(dist)
    assert d["moved"] == sum(x > 0 for x in dist)
    assert (d["a_only_point"], d["b_only_point"], d["neither_point"]) == (
        want["a_only"],
        want["b_only"],
        want["neither"],
    )
    assert d["both_points"] + d["a_only_point"] + d["b_only_point"] + d["neither_point"] == n
    assert d["distance"] == pytest.approx(
        {
            "min": min(dist),
            "median": _linear_percentile(dist, 50),
            "p90": _linear_percentile(dist, 90),
            "max": max(dist),
            "mean": sum(dist) / len(dist),
        },
        abs=1e-9,
    )
    assert d["top1_flips"] == {"a_hit_b_miss": want["t_ab"], "a_miss_b_hit": want["t_ba"]}
    assert d["first_flips"] == {"a_hit_b_miss": want["f_ab"], "a_miss_b_hit": want["f_ba"]}


# -- replays of two hand-written files -------------------------------------------------------------


def _scenarios(samples: Sequence[Sample]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Lines of A and B: nine kinds of difference, cycling over the samples (two candidates each)."""
    a_lines: list[dict[str, Any]] = []
    b_lines: list[dict[str, Any]] = []
    for i, s in enumerate(samples):
        c = _centre(s)
        m = (s.image_size[0] + 40.0, s.image_size[1] + 40.0)  # off the screen: a miss
        moved = (c[0] + 3.0, c[1] + 4.0)  # 5 px away, still in the box (checked below)
        assert _inside(moved, s), s.id
        kind = i % 9
        a: tuple[list[Any], list[float], str] = ([c, m], [1.0, 0.0], "")
        b: tuple[list[Any], list[float], str] = ([c, m], [1.0, 0.0], "")
        if kind == 1:  # the first point moves 5 px, both hit
            b = ([moved, m], [1.0, 0.0], "")
        elif kind == 2:  # the same answer with other surrounding whitespace
            b = ([c, m], [1.0, 0.0], "  {} \n")
        elif kind == 3:  # B proposes the miss first: A hit, B miss (Top-1 and first)
            b = ([m, c], [1.0, 0.0], "")
        elif kind == 4:  # the other way round
            a = ([m, c], [1.0, 0.0], "")
        elif kind == 5:  # B's critic prefers the miss (a Top-1 flip only); its first point moves 0.5 px
            b = ([(c[0] + 0.3, c[1] + 0.4), m], [0.0, 1.0], "")
        elif kind == 6:  # B abstains first
            b = ([None, m], [1.0, 0.0], "")
        elif kind == 7:  # A's first answer did not parse; its critic picks the centre
            a = (["unparsed", c], [0.0, 1.0], "")
        elif kind == 8:  # both abstain, in other words
            a = ([None, m], [1.0, 0.0], "absent")
            b = ([None, m], [1.0, 0.0], "not on the screen")
        for (cands, scores, raw), lines in ((a, a_lines), (b, b_lines)):
            text = " ".join("none" if p is None else str(p) for p in cands)
            raw = raw.format(text) if "{}" in raw else (raw or text)
            lines.append(
                {
                    "benchmark": BENCH,
                    "id": s.id,
                    "candidates": [list(p) if isinstance(p, tuple) else p for p in cands],
                    "scores": scores,
                    "raw": raw,
                }
            )
    return a_lines, b_lines


def _as_written(lines: Sequence[dict[str, Any]]) -> dict[str, tuple[str, list[Point | None], list[float]]]:
    return {
        x["id"]: (
            x["raw"],
            [tuple(p) if isinstance(p, list) else None for p in x["candidates"]],
            x["scores"],
        )
        for x in lines
    }


@pytest.fixture(scope="module")
def replays(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("drift")
    samples = load_samples(demo_suite, BENCH)
    a_lines, b_lines = _scenarios(samples)
    extra = ("model=replay", f"benchmarks=[{BENCH}]", "k=2")
    for name, lines in (("A", a_lines), ("B", b_lines)):
        replay_run(demo_suite, write_lines(root / f"{name}.jsonl", lines), root / name, *extra)
    return {"root": root, "samples": samples, "a": _as_written(a_lines), "b": _as_written(b_lines)}


def test_drift_counts_and_distances_match_the_files_written(
    replays: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    root, samples = replays["root"], replays["samples"]
    out = root / "AB"
    assert main(["compare", str(root / "A"), str(root / "B"), "--out", str(out), "--resamples", "50"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "compare.json").read_text())
    d = doc["benchmarks"][BENCH]["drift"]
    want = _expected(samples, replays["a"], replays["b"])
    _check_drift(d, want, len(samples))
    # the lists written as predictions.jsonl writes them: a point, "unparsed" or null, exactly
    written_a = {
        x["id"]: x["candidates"] for x in map(json.loads, (root / "A.jsonl").read_text().splitlines())
    }
    written_b = {
        x["id"]: x["candidates"] for x in map(json.loads, (root / "B.jsonl").read_text().splitlines())
    }
    assert d["candidates_differ"] == sum(written_a[s.id] != written_b[s.id] for s in samples)
    # every kind of difference is there (the scenarios are what they say)
    assert want["raw"] and want["a_only"] and want["b_only"] and want["neither"]
    assert want["t_ab"] != want["f_ab"] and want["t_ba"] != want["f_ba"]
    assert 0 < d["moved"] < d["both_points"] and d["distance"]["min"] == 0
    # the first flips, with both raw answers and first points
    first = want["flips"][:FLIP_EXAMPLES]
    assert [x["id"] for x in d["examples"]] == first
    for x in d["examples"]:
        (ra, ca, _), (rb, cb, _) = replays["a"][x["id"]], replays["b"][x["id"]]
        assert (x["a_raw"], x["b_raw"]) == (ra, rb)
        assert (x["a_point"], x["b_point"]) == tuple(None if p is None else list(p) for p in (ca[0], cb[0]))
    # the replays record their files, not what made them: compare says it cannot tell
    setup = doc["setup"]
    assert setup["relation"] == "replay"
    assert setup["statement"] == (
        f"A and B replay a predictions file (A: replay of {root / 'A.jsonl'}; B: replay of "
        f"{root / 'B.jsonl'}), whose engine and protocol are not recorded: whether the runs differ only "
        "by engine is unknown"
    )
    # the terminal, compare.md and compare.html show it
    md = (out / "compare.md").read_text()
    assert md.strip() in printed
    assert "## Answers that differ" in md and f"- setup: {setup['statement']}" in md
    assert (
        f"ScreenSpot-v2: Top-1 flips (the first {FLIP_EXAMPLES} of {len(want['flips'])}, in A's order):" in md
    )
    section = md.split("## Answers that differ", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| ScreenSpot-v2 "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:5] == [
        str(len(samples)),
        str(want["raw"]),
        str(d["candidates_differ"]),
        f"{d['moved']}/{d['both_points']}",
    ]
    assert cells[9:] == [
        f"{want['a_only']}/{want['b_only']}",
        f"{want['t_ab']}/{want['t_ba']}",
        f"{want['f_ab']}/{want['f_ba']}",
    ]
    html = (out / "compare.html").read_text()
    assert '<section id="drift"><h2>Answers that differ</h2>' in html
    assert f"the first {FLIP_EXAMPLES} Top-1 flips" in html


def test_flips_are_listed_in_a_s_order_both_ways_mixed(replays: dict[str, Any]) -> None:
    """The first flips follow A's predictions.jsonl, not B's, not sorted ids, not one direction first."""
    root, samples = replays["root"], replays["samples"]
    reversed_b = root / "B-reversed"
    shutil.copytree(root / "B", reversed_b, dirs_exist_ok=True)
    path = reversed_b / "predictions.jsonl"
    path.write_text("".join(reversed(path.read_text().splitlines(keepends=True))))
    doc = compare_runs(load_run(root / "A"), load_run(reversed_b), resamples=20)
    flips = _expected(samples, replays["a"], replays["b"])["flips"]
    listed = [x["id"] for x in doc["benchmarks"][BENCH]["drift"]["examples"]]
    a_order = [json.loads(x)["id"] for x in (root / "A" / "predictions.jsonl").read_text().splitlines()]
    assert listed == [i for i in a_order if i in flips][:FLIP_EXAMPLES]
    assert len(flips) > FLIP_EXAMPLES and listed != sorted(flips)[:FLIP_EXAMPLES]
    ways = [x["flip"] for x in doc["benchmarks"][BENCH]["drift"]["examples"]]
    assert ways == ["a_hit_b_miss", "a_miss_b_hit", "a_hit_b_miss", "a_hit_b_miss", "a_hit_b_miss"]
    # B's order changes no count
    plain = compare_runs(load_run(root / "A"), load_run(root / "B"), resamples=20)
    assert plain["benchmarks"][BENCH]["drift"] == doc["benchmarks"][BENCH]["drift"]
    # and B against A lists B's flips the other way round
    back = compare_runs(load_run(root / "B"), load_run(root / "A"), resamples=20)["benchmarks"][BENCH][
        "drift"
    ]
    assert [x["id"] for x in back["examples"]] == listed
    assert back["top1_flips"] == {
        "a_hit_b_miss": plain["benchmarks"][BENCH]["drift"]["top1_flips"]["a_miss_b_hit"],
        "a_miss_b_hit": plain["benchmarks"][BENCH]["drift"]["top1_flips"]["a_hit_b_miss"],
    }


# -- two engines behind real endpoints -------------------------------------------------------------


def _server(answers: Mapping[str, str]) -> ThreadingHTTPServer:
    """A chat-completions endpoint answering each instruction from ``answers``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = body["messages"][-1]["content"][-1]["text"]
            answer = answers[text.rsplit("Instruction: ", 1)[1]]
            payload = json.dumps(
                {
                    "choices": [{"index": 0, "message": {"content": answer}}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


N_ENDPOINT = 12


def _engine_answers(samples: Sequence[Sample]) -> tuple[dict[str, str], dict[str, str]]:
    """Per instruction, engine 1's and engine 2's answer (an instruction asked twice keeps its first)."""
    one: dict[str, str] = {}
    two: dict[str, str] = {}
    for i, s in enumerate(samples):
        if s.instruction in one:
            continue
        x, y = (round(v) for v in _centre(s))
        one[s.instruction] = f"({x}, {y})"
        two[s.instruction] = [
            f"({x}, {y})",  # the same
            f"({x},{y})",  # the same point written otherwise
            f"({x + 3}, {y + 4})",  # 5 px away
            "I cannot find it",  # no point
            f"({s.image_size[0] + 50}, {y})",  # off the screen
        ][i % 5]
    return one, two


def _point_of(answer: str) -> Point | None:
    if not answer.startswith("("):
        return None
    x, y = answer.strip("()").split(",")
    return (float(x), float(y))


@pytest.fixture(scope="module")
def engines(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("engines")
    samples = load_samples(demo_suite, BENCH)[:N_ENDPOINT]
    one, two = _engine_answers(samples)
    servers = [_server(one), _server(two)]
    urls = [f"http://127.0.0.1:{s.server_address[1]}/v1" for s in servers]
    common = [
        f"data_root={demo_suite}",
        f"benchmarks=[{BENCH}]",
        f"max_samples={N_ENDPOINT}",
        "model=openai_api",
        "model.api_model=served",
        "model.proposer=greedy",
        "model.critic=none",
    ]

    def eval_(name: str, url: str, *extra: str) -> Path:
        args = [*common, f"output_dir={root / name}", f"model.base_url={url}", *extra]
        run(parse_args(args), out=io.StringIO())
        return root / name

    try:
        folders = {
            "one": eval_("one", urls[0]),
            "two": eval_("two", urls[1], "model.concurrency=3", "model.timeout_s=30"),
            "again": eval_("again", urls[0]),
            "budget": eval_("budget", urls[1], "model.max_new_tokens=64"),
        }
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()
    yield {"root": root, "samples": samples, "answers": (one, two), "urls": urls, **folders}


def test_two_engines_of_one_protocol_are_said_to_differ_only_by_engine(
    engines: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    samples, urls = engines["samples"], engines["urls"]
    out = engines["root"] / "one-vs-two"
    assert (
        main(["compare", str(engines["one"]), str(engines["two"]), "--out", str(out), "--resamples", "50"])
        == 0
    )
    printed = capsys.readouterr().out
    doc = json.loads((out / "compare.json").read_text())
    setup = doc["setup"]
    assert setup["relation"] == "engine"
    assert [x["key"] for x in setup["engine_differences"]] == [
        "config.model.base_url",
        "model.backend.base_url",
    ]
    assert setup["differences"] == []  # concurrency and timeouts change no prediction: not compared
    engine = {side: f"openai endpoint {url} (model 'served')" for side, url in zip("ab", urls, strict=True)}
    assert setup["engine"] == engine
    statement = (
        f"the runs differ only by engine (A: {engine['a']}; B: {engine['b']}; differing: "
        "config.model.base_url): the answers that differ are engine drift (A and B: an endpoint run records "
        "the model name served, not the checkpoint behind it)"
    )
    assert setup["statement"] == statement
    assert f"- setup: {statement}" in printed and f"- setup: {statement}" in (out / "compare.md").read_text()
    assert statement.replace("'", "&#x27;") in (out / "compare.html").read_text()

    def table(answers: Mapping[str, str]) -> dict[str, tuple[str, list[Point | None], list[float]]]:
        return {s.id: (answers[s.instruction], [_point_of(answers[s.instruction])], [1.0]) for s in samples}

    one, two = engines["answers"]
    want = _expected(samples, table(one), table(two))
    d = doc["benchmarks"][BENCH]["drift"]
    _check_drift(d, want, len(samples))
    assert want["raw"] and want["a_only"] and want["t_ab"] and max(want["distances"]) > 5
    assert d["candidates_differ"] == sum(
        _point_of(one[s.instruction]) != _point_of(two[s.instruction]) for s in samples
    )
    assert [x["id"] for x in d["examples"]] == want["flips"][:FLIP_EXAMPLES]
    # the listing shows both raw answers and points (an unparsed answer: no point)
    first = next(s for s in samples if s.id == want["flips"][0])
    pa, pb = _point_of(one[first.instruction]), _point_of(two[first.instruction])
    assert pa is not None and pb is None
    line = (
        f'- {first.id} (A hit, B miss): A "{one[first.instruction]}" → ({pa[0]:.1f}, {pa[1]:.1f}); '
        f'B "{two[first.instruction]}" → no point'
    )
    assert line in (out / "compare.md").read_text().splitlines()
    assert [x["b_raw"] for x in d["examples"]] == [
        two[s.instruction] for s in samples if s.id in want["flips"]
    ][:FLIP_EXAMPLES]


def test_runs_that_differ_beyond_the_engine_or_not_at_all_are_said_so(engines: dict[str, Any]) -> None:
    other = compare_runs(load_run(engines["one"]), load_run(engines["budget"]), resamples=20)["setup"]
    assert other["relation"] == "other"
    assert [x["key"] for x in other["differences"]] == [
        "config.model.max_new_tokens",
        "model.adapter.max_new_tokens",
    ]
    assert other["statement"] == (
        "the runs differ beyond the engine (config.model.max_new_tokens: 256 vs 64; "
        "model.adapter.max_new_tokens: 256 vs 64): the answers that differ mix the engine with these"
    )
    same = compare_runs(load_run(engines["one"]), load_run(engines["again"]), resamples=20)
    assert same["setup"]["relation"] == "same" and same["setup"]["engine_differences"] == []
    assert same["setup"]["statement"] == (
        "the runs' recorded setups are the same, engine included: the answers that differ are "
        "run-to-run nondeterminism"
    )
    d = same["benchmarks"][BENCH]["drift"]
    assert (d["raw_differs"], d["candidates_differ"], d["moved"], d["examples"]) == (0, 0, 0, [])
    assert d["distance"] == {"min": 0.0, "median": 0.0, "p90": 0.0, "max": 0.0, "mean": 0.0}


def test_two_checkpoints_are_another_model_and_an_endpoint_s_missing_one_the_engine(
    engines: dict[str, Any], tmp_path: Path
) -> None:
    """``config.ckpt`` set to two values differs beyond the engine; set on one side only, the engine."""
    folders = {}
    for name, source, ckpt in (("x", "one", "/ckpts/a"), ("y", "two", "/ckpts/b"), ("z", "two", None)):
        folders[name] = tmp_path / name
        shutil.copytree(engines[source], folders[name])
        path = folders[name] / "results.json"
        doc = json.loads(path.read_text())
        doc["config"]["ckpt"] = ckpt
        path.write_text(json.dumps(doc))
    other = compare_runs(load_run(folders["x"]), load_run(folders["y"]), resamples=20)["setup"]
    assert other["relation"] == "other"
    assert other["differences"] == [{"key": "config.ckpt", "a": "/ckpts/a", "b": "/ckpts/b"}]
    engine = compare_runs(load_run(folders["x"]), load_run(folders["z"]), resamples=20)["setup"]
    assert engine["relation"] == "engine" and engine["differences"] == []
    assert [x["key"] for x in engine["engine_differences"]] == [
        "config.ckpt",
        "config.model.base_url",
        "model.backend.base_url",
    ]
