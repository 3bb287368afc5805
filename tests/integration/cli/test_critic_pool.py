"""A critic judged alone on frozen candidate pools, end to end through ``python eval.py``.

Each figure against a count made here from the files the run wrote (pool.jsonl, predictions.jsonl)
and the release records, not from gge's own figures:

- the demo critic on a synthetic pool asked in every cyclic order: each ask's candidates are its
  pool's points in that order, nothing is proposed, Top-1 and ``critic_pool.accuracy`` are the share
  of asks whose highest-scored candidate is gold, consistency the share of pools picked alike in
  every order, and the refusal samples of OSWorld-G have no pool; a rerun resumes, a rerun with
  another pool refuses;
- a listwise critic behind an endpoint that always ranks the first marker first (the scripted
  server): only ``rank`` requests, accuracy 25 with four candidates rotated, first-position rate 100,
  consistency 0;
- a pool from a run's predictions: its candidates, the hitting ones gold (by the release's rule,
  written out here), a gold put in where none hits;
- a pool file a user brings: the same pool asked again (compare pairs the two runs; a run on another
  pool is refused), and a line the data contradicts refused naming file and line;
- a model with no critic to ask refuses.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from scripted_endpoint import Scripted, demo_args

from gge.benchmarks import get_benchmark
from gge.cli.commands import main as gge_main
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.scoring.pools import shuffled_labels

pytestmark = pytest.mark.slow  # each runs gge end to end (a few seconds)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _pick(scores: list[float | None]) -> int:
    """The critic's pick written out: the highest score, the earlier on a tie, unscored below scored."""
    best = 0
    for i, s in enumerate(scores):
        if s is not None and (scores[best] is None or s > scores[best]):  # type: ignore[operator]
            best = i
    return best


def _asks(out: Path) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[dict[str, Any], int, int]]]:
    """The pools by (benchmark, id), and per ask: its pool, its order's shift, the pool index picked."""
    pools = {(e["benchmark"], e["id"]): e for e in _lines(out / "pool.jsonl")}
    asks = []
    for line in _lines(out / "predictions.jsonl"):
        sid, _, shift = str(line["id"]).rpartition("~")
        entry = pools[(line["benchmark"], sid)]
        n = len(entry["points"])
        order = [(int(shift) + j) % n for j in range(n)]
        assert [[round(x, 3), round(y, 3)] for x, y in line["candidates"]] == [
            entry["points"][i] for i in order
        ]
        asks.append((entry, int(shift), order[_pick(line["scores"])]))
    return pools, asks


def test_the_demo_critic_on_a_synthetic_pool_in_every_order(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "pool"
    args = [f"data_root={demo_suite}", "benchmarks=[screenspot_pro,osworld_g]", "pool.source=synthetic"]
    args += ["pool.orders=rotate", f"output_dir={out}"]
    buf = io.StringIO()
    result = run(parse_args(args), out=buf)
    pools, asks = _asks(out)
    refusals = [
        r
        for r in json.loads((demo_suite / "osworld_g" / "OSWorld-G.json").read_text())
        if r["box_type"] == "refusal"
    ]
    assert len([p for p in pools if p[0] == "osworld_g"]) == 36 - len(refusals) and refusals
    assert f"{len(pools)} pools, {len(asks)} critic asks, no proposer requests" in buf.getvalue()
    for name in ("screenspot_pro", "osworld_g"):
        mine = [(e, shift, picked) for e, shift, picked in asks if e["benchmark"] == name]
        correct = sum(picked in e["gold"] for e, _, picked in mine)
        entry = result["benchmarks"][name]
        figures = entry["critic_pool"]
        assert figures["asks"] == len(mine) == 4 * figures["pools"]
        assert figures["accuracy"] == pytest.approx(100 * correct / len(mine), abs=1e-4)
        assert entry["top1"] == pytest.approx(figures["accuracy"], abs=1e-3)  # the critic's pick is Top-1
        assert entry["oracle@4"] == 100.0 and figures["chance"] == 25.0
        by_pool: dict[str, set[int]] = {}
        for e, _, picked in mine:
            by_pool.setdefault(e["id"], set()).add(picked)
        same = sum(len(v) == 1 for v in by_pool.values())
        assert figures["consistency"] == pytest.approx(100 * same / len(by_pool), abs=1e-4)
        first = sum(picked == shift for _, shift, picked in mine)  # shown first: pool index == the shift
        assert figures["first_position_rate"] == pytest.approx(100 * first / len(mine), abs=1e-4)
        mine_lines = [
            x for x in (out / "pool.jsonl").read_text().splitlines(keepends=True) if f'"{name}"' in x
        ]
        assert figures["pool"]["digest"] == hashlib.sha256("".join(mine_lines).encode()).hexdigest()
    assert result["benchmarks"]["osworld_g"]["critic_pool"]["pool"]["skipped"] == {
        "no target (a refusal sample)": len(refusals)
    }
    # report.md and report.html print the figures results.json holds
    report, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    pro = result["benchmarks"]["screenspot_pro"]["critic_pool"]
    heading = f"### The critic on a frozen pool: {pro['pools']} pools of 4 candidates, every cyclic order"
    heading += f" ({pro['asks']} asks)"
    assert heading in report and "What the critic picked (% of asks)" in report
    assert f"| accuracy (the pick is gold)                | {pro['accuracy']:.1f}% " in report
    assert "The critic on a frozen pool" in page and "Accuracy by where the gold was shown" in page
    costs = [c for line in _lines(out / "predictions.jsonl") for c in line.get("cost", [])]
    assert costs and {c["stage"] for c in costs} == {"judge"}  # the critic's requests alone
    # the same command resumes what it finished; another pool into the folder is refused
    again = run(parse_args(args), out=io.StringIO())
    assert (
        again["benchmarks"]["screenspot_pro"]["critic_pool"]
        == result["benchmarks"]["screenspot_pro"]["critic_pool"]
    )
    written = (out / "pool.jsonl").read_bytes()
    with pytest.raises(GgeError, match="pool"):
        run(parse_args([*args, "pool.seed=7"]), out=io.StringIO())
    assert (out / "pool.jsonl").read_bytes() == written  # the refused rerun wrote nothing


def test_a_listwise_endpoint_critic_that_always_ranks_the_first_marker_first(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    server.rank_order = lambda text, k: list(range(1, k + 1))
    out = tmp_path / "first"
    args = demo_args(server, demo_suite, out, 6, "probe=false", "pool.source=synthetic", "pool.orders=rotate")
    result = run(parse_args(args), out=io.StringIO())
    kinds = [e["kind"] for e in server.log]
    assert set(kinds) == {"rank"} and len(kinds) == 24  # 6 pools x 4 orders, no proposer request
    f = result["benchmarks"]["screenspot_v2"]["critic_pool"]
    assert (f["accuracy"], f["chance"], f["first_position_rate"], f["first_position_over_chance"]) == (
        25.0,
        25.0,
        100.0,
        75.0,
    )
    assert f["consistency"] == 0.0
    # the gold's marker sits on its target in every ask: none of the 24 shows the target uncovered
    covered = result["benchmarks"]["screenspot_v2"]["occlusion"]
    assert covered["critic"] == "listwise" and covered["samples"] == 24 and "none" not in covered["buckets"]
    assert sum(b["samples"] for b in covered["buckets"].values()) == 24 and covered["mean_cover"] > 0
    assert f["by_gold_position"] == {
        "0": {"asks": 6, "accuracy": 100.0},
        **{str(p): {"asks": 6, "accuracy": 0.0} for p in (1, 2, 3)},
    }


def test_the_label_probe_tells_a_bias_to_number_one_from_a_bias_to_the_first_marker(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    server.rank_order = lambda text, k: list(range(1, k + 1))  # always "1, 2, 3, 4": number 1 best
    out = tmp_path / "labels"
    more = ("probe=false", "pool.source=synthetic", "pool.orders=rotate", "pool.labels=shuffled")
    result = run(parse_args(demo_args(server, demo_suite, out, 5, *more)), out=io.StringIO())
    f = result["benchmarks"]["screenspot_v2"]["critic_pool"]
    pools = {e["id"]: e for e in _lines(out / "pool.jsonl")}
    first = correct = 0
    for line in _lines(out / "predictions.jsonl"):
        sid, _, k = line["id"].rpartition("~")
        labels = shuffled_labels(4, 0, f"screenspot_v2:{line['id']}")  # the probe's numbering (its input)
        at = labels.index("1")  # the candidate that bore number 1 is the one picked
        assert _pick(line["scores"]) == at
        first += at == 0
        correct += (int(k) + at) % 4 in pools[sid]["gold"]
    assert f["label_one_rate"] == 100.0 and f["label_one_over_chance"] == 75.0
    assert f["first_position_rate"] == pytest.approx(100 * first / 20, abs=1e-4)
    assert f["accuracy"] == pytest.approx(100 * correct / 20, abs=1e-4)
    with pytest.raises(GgeError, match="numbers a listwise critic's markers"):
        run(
            parse_args(
                [
                    f"data_root={demo_suite}",
                    "benchmarks=[screenspot_v2]",
                    "max_samples=2",
                    *more[1:],
                    f"output_dir={tmp_path / 'd'}",
                ]
            )
        )


def test_nested_pools_give_accuracy_by_the_number_of_candidates(
    server: Scripted, demo_suite: Path, tmp_path: Path
) -> None:
    server.rank_order = lambda text, k: list(range(1, k + 1))  # the first marker shown, whatever it marks
    out = tmp_path / "nested"
    more = ("probe=false", "pool.source=synthetic", "pool.orders=rotate", "pool.nested=true")
    result = run(parse_args(demo_args(server, demo_suite, out, 4, *more)), out=io.StringIO())
    f = result["benchmarks"]["screenspot_v2"]["critic_pool"]
    # 4 pools: each in sizes 2, 3 (nested) and 4, each size in its m cyclic orders: the gold first in one
    assert f["by_candidates"] == {
        str(m): {"asks": 4 * m, "accuracy": round(100 / m, 4), "chance": round(100 / m, 4)} for m in (2, 3, 4)
    }
    assert (f["pools"], f["asks"], f["accuracy"]) == (4, 16, 25.0)  # the other figures: the full pools
    entry = result["benchmarks"]["screenspot_v2"]
    assert (entry["samples"], entry["top1"]) == (16, 25.0)  # so is the headline: the sub-pools apart
    assert len(server.log) == 4 * (2 + 3 + 4)
    assert "Accuracy by the number of candidates (nested pools)" in (out / "report.md").read_text()


def _v2_records(demo: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for split in ("mobile", "desktop", "web"):
        for i, r in enumerate(
            json.loads((demo / "screenspot_v2" / f"screenspot_{split}_v2.json").read_text())
        ):
            out[f"{split}_{i}"] = r
    return out


def _size(demo: Path, record: dict[str, Any]) -> tuple[int, int]:
    with Image.open(demo / "screenspot_v2" / "screenspotv2_image" / record["img_filename"]) as im:
        return im.size


def test_a_pool_from_a_runs_candidates(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "from_run"
    args = [f"data_root={demo_suite}", "benchmarks=[screenspot_v2]", "pool.source=run", f"output_dir={out}"]
    args.append(f"pool.path={demo_suite / 'predictions.jsonl'}")
    run(parse_args(args), out=io.StringIO())
    records = _v2_records(demo_suite)
    proposed = {
        r["id"]: r["candidates"]
        for r in _lines(demo_suite / "predictions.jsonl")
        if r["benchmark"] == "screenspot_v2"
    }
    pools = [e for e in _lines(out / "pool.jsonl")]
    result = json.loads((out / "results.json").read_text())["benchmarks"]["screenspot_v2"]["critic_pool"]
    put_in = [e for e in pools if "gold" in e["kinds"]]  # the proposer missed: a gold put in
    assert result["critic_rescue"]["asks"] == len(put_in) and put_in
    assert result["critic_rescue"]["proposer_hit_asks"] == len(pools) - len(put_in)
    sizes = {sid: r for sid, r in records.items()}
    on_screen = {  # the run's points on the screen (the demo's images are 1080x2400 / 1920x1080 ...)
        sid: [
            p
            for p in cands
            if p is not None
            and 0 <= p[0] < _size(demo_suite, sizes[sid])[0]
            and 0 <= p[1] < _size(demo_suite, sizes[sid])[1]
        ]
        for sid, cands in proposed.items()
    }
    empty = sorted(sid for sid, pts in on_screen.items() if not pts)
    assert len(pools) == len(records) - len(empty)
    assert result["pool"]["skipped"] == ({"no point proposed on the screen": len(empty)} if empty else {})
    for e in pools:
        x, y, w, h = records[e["id"]]["bbox"]
        inside = [x <= px <= x + w and y <= py <= y + h for px, py in e["points"]]  # the release's rule
        assert e["gold"] == [i for i, hit in enumerate(inside) if hit]
        run_points = []  # the run's points on the screen, each once, the first 4
        for a, b in on_screen[e["id"]]:
            if [round(a, 3), round(b, 3)] not in run_points and len(run_points) < 4:
                run_points.append([round(a, 3), round(b, 3)])
        if any(x <= a <= x + w and y <= b <= y + h for a, b in run_points):
            assert e["points"] == run_points and set(e["kinds"]) == {"proposer"}
        else:  # none hit: a gold in one candidate's place, the others the run's (or random where it gave 1)
            (g,) = e["gold"]
            assert e["kinds"][g] == "gold" and len(e["points"]) == max(2, len(run_points))
            for i, (p, kind) in enumerate(zip(e["points"], e["kinds"], strict=True)):
                if i != g:
                    assert (kind, p) == (
                        ("proposer", run_points[i]) if i < len(run_points) else ("random", p)
                    )


def test_more_samples_into_a_pool_run_keep_its_pools(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "grow"
    base = [
        f"data_root={demo_suite}",
        "benchmarks=[screenspot_v2]",
        "pool.source=synthetic",
        f"output_dir={out}",
    ]
    run(parse_args([*base, "max_samples=4"]), out=io.StringIO())
    first = (out / "pool.jsonl").read_bytes()
    asked = {x["id"]: x["candidates"] for x in _lines(out / "predictions.jsonl")}
    run(parse_args([*base, "max_samples=12"]), out=io.StringIO())  # resumes the 4, asks 8 more
    assert (out / "pool.jsonl").read_bytes() == first  # drawn among every sample read, whatever is asked
    pools = {e["id"]: e["points"] for e in _lines(out / "pool.jsonl")}
    lines = _lines(out / "predictions.jsonl")
    assert len(lines) == 12 and all(asked[i] == x["candidates"] for x in lines if (i := x["id"]) in asked)
    assert all([[round(a, 3), round(b, 3)] for a, b in x["candidates"]] == pools[x["id"]] for x in lines)


def test_a_pool_file_asked_again_pairs_and_another_pool_is_refused(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [f"data_root={demo_suite}", "benchmarks=[screenspot_pro]"]
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    run(parse_args([*base, "pool.source=synthetic", f"output_dir={a}"]), out=io.StringIO())
    run(
        parse_args([*base, "pool.source=file", f"pool.path={a / 'pool.jsonl'}", f"output_dir={b}"]),
        out=io.StringIO(),
    )
    assert (a / "pool.jsonl").read_bytes() == (b / "pool.jsonl").read_bytes()
    assert [x["scores"] for x in _lines(a / "predictions.jsonl")] == [
        x["scores"] for x in _lines(b / "predictions.jsonl")
    ]
    assert gge_main(["compare", str(a), str(b), "--out", str(tmp_path / "ab")]) == 0
    run(parse_args([*base, "pool.source=synthetic", "pool.seed=3", f"output_dir={c}"]), out=io.StringIO())
    capsys.readouterr()
    assert gge_main(["compare", str(a), str(c), "--out", str(tmp_path / "ac")]) == 2
    (said,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("gge: error:")]
    assert "screenspot_pro: critics judged on different pools (digest " in said
    # a line the data contradicts: its gold moved off the target
    lines = _lines(a / "pool.jsonl")
    g = lines[2]["gold"][0]
    lines[2]["points"][g] = [1.0, 1.0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(
        GgeError, match=f"{bad}:3: point {g} \\[1.0, 1.0\\]: the gold point misses the target"
    ):
        run(parse_args([*base, "pool.source=file", f"pool.path={bad}", f"output_dir={tmp_path / 'd'}"]))


def test_a_model_with_no_critic_to_ask_refuses(demo_suite: Path, tmp_path: Path) -> None:
    base = [f"data_root={demo_suite}", "benchmarks=[screenspot_pro]", "pool.source=synthetic"]
    with pytest.raises(GgeError, match="has none"):
        replay = f"model.predictions={demo_suite / 'predictions.jsonl'}"
        run(parse_args([*base, "model=replay", replay, f"output_dir={tmp_path / 'a'}"]))
    with pytest.raises(GgeError, match="a pool run asks none"):
        run(parse_args([*base, "dry_run=true", f"output_dir={tmp_path / 'd'}"]))
    with pytest.raises(GgeError, match="client processes build the model's own policy"):
        run(parse_args([*base, "client_procs=2", f"output_dir={tmp_path / 'c'}"]))
    with pytest.raises(GgeError, match=r"model\.critic=none has none"):
        run(parse_args([*base, "model.critic=none", f"output_dir={tmp_path / 'b'}"]))


def test_critic_rescue_in_an_ordinary_run(demo_suite: Path, tmp_path: Path) -> None:
    from gge.models.base import Proposal
    from gge.models.registry import kind_of
    from gge.scoring.pools import pool_from_points
    from gge.types import Candidate

    out = tmp_path / "rescue"
    args = [f"data_root={demo_suite}", "benchmarks=[screenspot_v2]", "max_samples=12", f"output_dir={out}"]
    result = run(parse_args([*args, "critic_rescue=true"]), out=io.StringIO())
    lines = _lines(out / "predictions.jsonl")
    missed = [x for x in lines if not any(x["hits"]) and any(c is not None for c in x["candidates"])]
    assert {x["id"] for x in lines if "rescue" in x} == {x["id"] for x in missed} and missed
    # each rescue asked again here: the run's own critic on the same candidates with the gold put in
    cfg = parse_args([*args, f"output_dir={tmp_path / 'x'}"])
    kind = kind_of(cfg.model)
    kind.fill_defaults(cfg, demo_suite)
    critic = kind.build(cfg)
    bench = get_benchmark("screenspot_v2")
    samples = {s.id: s for s in bench.load(demo_suite / bench.directory, bench.options_type()).samples}
    rescued = 0
    for x in missed:
        s = samples[x["id"]]
        entry = pool_from_points(s, [tuple(c) for c in x["candidates"] if c is not None], 5, 0)
        assert entry is not None
        with Image.open(s.image_path) as im:
            (j,) = critic.rank(
                [s], [im.convert("RGB")], [Proposal(tuple(Candidate(p) for p in entry.points))]
            )
        best = _pick(list(j.scores))
        assert x["rescue"] == (best in entry.gold), x["id"]
        rescued += best in entry.gold
    figures = result["benchmarks"]["screenspot_v2"]["critic_rescue"]
    assert figures == {
        "asked": len(missed),
        "rescued": rescued,
        "rate": round(100 * rescued / len(missed), 4),
    }
    assert "The critic offered the target it missed" in (out / "report.md").read_text()
    with pytest.raises(GgeError, match="critic_rescue"):  # a run without it into the folder would mix
        run(parse_args(args), out=io.StringIO())
