"""bench/endpoint_throughput.py: its fake engine answers as it says, and its accounting is right.

No timing is asserted. The engine is driven directly (real HTTP on 127.0.0.1, real PNG and JPEG
bytes) for what it answers; the script's quick run (gge's ``eval.py`` in a subprocess against it) is
checked against an independent reading of the engine's own request log: the requests counted
(against gge's own count in results.json, and record by record against the modes' request rule
plus gge's probe, which asks the first record's requests again before the run), the limit (the service times
summed / C), the in-flight mean and peak and the slots busy (integrated piecewise over the log's
events, a brute-force count per elementary interval), the slots never over C, the pixels sent (the
records' screenshot sizes); and the printed ratios and their verdicts are those recomputed from the
log, not the script's own figures (the wall and the client's CPU, which only the script measures,
excepted). The restated targets of issue 36 are checked the same way: the rate on 2 cores over the
rate on 1 (requests in the log / the log's span), the CPU per 1080p and per 4K request on one core
(the images in the log counted: every one of those records' screenshots is 1080p, or 4K), the short
run's requests in flight, and the summary's count of targets met. The pinning wrapper is checked by
the affinity a pinned child reports.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import math
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT
from PIL import Image

sys.path.insert(0, str(ROOT / "bench"))
import endpoint_throughput as et

K = 5


def _data_url(image: Image.Image, fmt: str) -> str:
    buf = io.BytesIO()
    image.save(buf, format=fmt)
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def _post(port: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _body(url: str, text: str, **more: Any) -> dict[str, Any]:
    content = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": text}]
    return {"model": "m", "messages": [{"role": "user", "content": content}], **more}


def test_engine_answers_each_request_kind_and_reads_the_image_header() -> None:
    engine = et.FakeEngine(slots=2, latency=0.0)
    png = _data_url(Image.new("RGB", (640, 360), "white"), "PNG")
    jpeg = _data_url(Image.new("RGB", (300, 200), "white"), "JPEG")
    gif = "data:image/gif;base64," + base64.b64encode(b"GIF89a" + bytes(26)).decode()
    with engine.serving() as port:
        # one point of the written target, in the pixels of the image sent, n = 3 choices
        status, one = _post(port, _body(png, "click OK [target 0.25000 0.50000 640x360]", n=3))
        assert status == 200 and [c["message"]["content"] for c in one["choices"]] == ["(160, 180)"] * 3
        assert (
            one["usage"]["prompt_tokens"]
            == 640 * 360 // 784 + len("click OK [target 0.25000 0.50000 640x360]") // 4
        )
        # k points for the single-pass request; the first is the target
        status, many = _post(
            port, _body(png, f"Give {K} different candidate points [target 0.5 0.5 640x360]")
        )
        lines = many["choices"][0]["message"]["content"].splitlines()
        assert status == 200 and len(lines) == K and lines[0] == "(320, 180)"
        # a ranking for the listwise critic
        status, rank = _post(port, _body(jpeg, f"The screenshot shows {K} numbered candidate click points"))
        assert status == 200 and rank["choices"][0]["message"]["content"] == "1, 2, 3, 4, 5"
        # Yes/No with top log-probabilities for the pointwise judge
        status, judge = _post(
            port, _body(png, "Does clicking it?", logprobs=True, top_logprobs=20, max_tokens=1)
        )
        top = judge["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        assert status == 200 and [t["token"] for t in top] == ["Yes", "No"]
        assert math.isclose(sum(math.exp(t["logprob"]) for t in top), 1.0)
        # neither PNG nor JPEG, and PNG bytes under a JPEG type: refused
        assert _post(port, _body(gif, "click"))[0] == 400
        assert _post(port, _body(png.replace("image/png", "image/jpeg"), "click"))[0] == 400
    by_kind = [(e.kind, e.images, e.status) for e in engine.log]
    assert by_kind[:4] == [
        ("propose", [("png", 640, 360)], 200),
        ("propose", [("png", 640, 360)], 200),
        ("rank", [("jpeg", 300, 200)], 200),
        ("judge", [("png", 640, 360)], 200),
    ]
    assert [s for _, _, s in by_kind[4:]] == [400, 400]


def test_engine_lists_its_model_and_logs_no_get() -> None:
    engine = et.FakeEngine(slots=1, latency=0.0)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with engine.serving() as port:
        with opener.open(f"http://127.0.0.1:{port}/v1/models", timeout=30) as resp:
            assert resp.status == 200 and json.loads(resp.read())["data"] == [
                {"id": "fake-vl", "object": "model"}
            ]
        with pytest.raises(urllib.error.HTTPError) as missing:
            opener.open(f"http://127.0.0.1:{port}/version", timeout=30)
        assert missing.value.code == 404
    assert engine.log == []


def test_engine_serves_at_most_c_at_once() -> None:
    engine = et.FakeEngine(slots=2, latency=0.05, sigma=0.5, seed=3)
    url = _data_url(Image.new("RGB", (64, 64)), "PNG")
    with engine.serving() as port:
        threads = [threading.Thread(target=_post, args=(port, _body(url, "click"))) for _ in range(7)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    log = engine.log
    assert len(log) == 7
    # busy slots counted over every elementary interval of the starts and finishes
    times = sorted({t for e in log for t in (e.start, e.finish)})
    for a, b in itertools.pairwise(times):
        mid = (a + b) / 2
        assert sum(e.start <= mid < e.finish for e in log) <= 2
    # the lognormal's draws are the engine's own (seeded): a second engine draws the same times
    again = et.FakeEngine(slots=2, latency=0.05, sigma=0.5, seed=3)
    assert sorted(e.service for e in log) == sorted(again.draw() for _ in range(7))


def _brute_count(log: list[dict[str, Any]], begin: str, end: str) -> tuple[float, int]:
    """The area and peak of the requests between their ``begin`` and ``end`` events: a count per
    elementary interval of those events, integrated."""
    times = sorted({t for e in log for t in (e[begin], e[end])})
    area, peak = 0.0, 0
    for a, b in itertools.pairwise(times):
        mid = (a + b) / 2
        count = sum(e[begin] <= mid < e[end] for e in log)
        area += count * (b - a)
        peak = max(peak, count)
    return area, peak


def _brute_in_flight(log: list[dict[str, Any]]) -> tuple[float, int]:
    """Mean and peak requests in flight (arrived, not answered) over the first arrival to the last answer."""
    area, peak = _brute_count(log, "arrival", "sent")
    return area / _span(log), peak


def _span(log: list[dict[str, Any]]) -> float:
    return float(max(e["sent"] for e in log) - min(e["arrival"] for e in log))


PER_RECORD = {"greedy": {"propose": 1}, "sampling_pointwise": {"propose": 2, "judge": K}}
"""A record's requests: greedy one; sampling + pointwise the greedy request and the sampled one,
then one judge per candidate."""
PROBE = {"greedy": {"propose": 1 + 5}, "sampling_pointwise": {"propose": 2 + 5, "judge": 1}}
"""What gge's probe (gge/run/probe.py) asks before the run: the first record's proposer requests
again, one judge where the critic is pointwise (does the server give log-probabilities), and for an
adaptive window the first record's proposer request with a small image alone, then 4 copies of it at
once (does the server serve requests together: ``COPIES``)."""


def _tag(row: dict[str, Any]) -> str:
    return str(row["instruction"][row["instruction"].index("[target") :])


def _per_record(log: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """Requests by (record's target tag, kind), counted from the engine's log."""
    counts: dict[tuple[str, str], int] = {}
    for e in log:
        counts[e["target"], e["kind"]] = counts.get((e["target"], e["kind"]), 0) + 1
    return counts


def _rule(mode: str, rows: list[dict[str, Any]], probe: bool = True) -> dict[tuple[str, str], int]:
    """The requests by (record, kind) the mode's rule and the probe make on these records."""
    counts = {(_tag(r), kind): n for r in rows for kind, n in PER_RECORD[mode].items()}
    for kind, n in PROBE[mode].items() if probe else ():
        counts[_tag(rows[0]), kind] += n
    return counts


def _run_of(log: list[dict[str, Any]], mode: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's own requests: the log less the probe's, which are the first to arrive (the probe asks
    and has its answers before the run sends anything), the first record's."""
    ordered = sorted(log, key=lambda e: e["arrival"])
    n = sum(PROBE[mode].values())
    probe, run = ordered[:n], ordered[n:]
    assert {e["target"] for e in probe} == {_tag(rows[0])}
    assert max(e["sent"] for e in probe) <= run[0]["arrival"]
    return run


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


@pytest.mark.slow
def test_quick_run_accounting_matches_the_engine_log(tmp_path: Path) -> None:
    modes = ("greedy", "sampling_pointwise")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "endpoint_throughput.py"),
            "--quick",
            "--modes",
            ",".join(modes),
            "--json",
            str(tmp_path / "figures.json"),
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    doc = json.loads((tmp_path / "figures.json").read_text(encoding="utf-8"))
    runs = {r["mode"]: r for r in doc["runs"] if r["phase"] == "fill"}
    assert list(runs) == list(modes)
    # the quick run's records: 12 rows cycling over the script's screens
    rows = [
        json.loads(x) for x in (tmp_path / "logs" / "records_12" / "records.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 12
    sizes = {f"{key}.png": size for key, size, *_ in et.SCREENS}
    verdicts: list[bool] = []
    for mode in modes:
        fig = runs[mode]
        log = [
            json.loads(x)
            for x in (tmp_path / "logs" / f"requests_{mode}_C4_L0.05.jsonl").read_text().splitlines()
        ]
        assert fig["returncode"] == 0 and all(e["status"] == 200 for e in log)
        # requests: the engine's log, gge's own count and the mode's rule agree, record by record
        # (each request's text carries its record's target tag); the probe's extra requests are the
        # first record's
        assert fig["requests"] == len(log) == fig["client_requests"]
        assert _per_record(log) == _rule(mode, rows)
        # every image went as PNG, at its record's screenshot size (a judge's marked view too)
        assert all(fmt == "png" for e in log for fmt, _, _ in e["images"])
        size_of = {_tag(r): tuple(sizes[r["image"]]) for r in rows}
        # the probe's requests are start-up: the figures below are the run's own requests'
        whole, log = log, _run_of(log, mode, rows)
        assert all(tuple(i[1:]) == size_of[e["target"]] for e in log for i in e["images"])
        # the probe's images: the first record's screenshot, and the window probe's small image
        # (gge/run/probe.py SMALL_SIDE: 4 copies at once tell whether the server serves them together)
        probe_sizes = {tuple(i[1:]) for e in whole[: len(whole) - len(log)] for i in e["images"]}
        assert probe_sizes == {size_of[_tag(rows[0])], (112, 112)}
        assert fig["probe_requests"] == sum(PROBE[mode].values())
        pixels = sum(n * math.prod(size_of[tag]) for (tag, _), n in _rule(mode, rows, probe=False).items())
        assert math.isclose(fig["pixels_1080p"], pixels / (1920 * 1080))
        if mode == "greedy":
            assert fig["top1"] == 100  # the engine answers every target's centre
        # limit = the service times / C; every service the fixed L
        assert all(e["service"] == 0.05 for e in log)
        assert math.isclose(fig["limit_s"], len(log) * 0.05 / 4)
        # in flight: the brute-force integral of the log
        mean, peak = _brute_in_flight(log)
        assert math.isclose(fig["mean_in_flight"], mean, rel_tol=1e-9) and fig["peak_in_flight"] == peak
        # the printed ratios and verdicts, recomputed from the log (C = 4, L = 0.05), the records'
        # pixels and the two figures only the script measures (the wall, the client's CPU)
        tag = f"{mode} C=4 L=0.05"
        limit = len(log) * 0.05 / 4
        busy_area, busy_peak = _brute_count(log, "start", "finish")
        assert busy_peak <= 4
        wall, startup, cpu_span = fig["wall_s"], fig["startup_s"], fig["client_cpu_span_s"]
        assert math.isclose(fig["bound_s"], limit + startup + 0.05)
        bound = wall / (limit + startup + 0.05)
        cpu = cpu_span / (pixels / (1920 * 1080)) * 1000
        expected = [
            f"wall / limit = {wall / limit:.2f}",
            f"wall / (limit + startup + L) = {bound:.2f} (target <= 1.1: {_verdict(bound <= 1.1)})",
            f"mean in flight / C = {mean / 4:.2f} (target >= 0.9: {_verdict(mean >= 0.9 * 4)})",
            f"peak in flight / C = {peak / 4:.2f}",
            f"mean slots busy / C = {busy_area / _span(log) / 4:.2f}",
            f"client CPU ms per 1080p request = {cpu:.1f}\n",
            f"client cores busy over the span = {cpu_span / _span(log):.2f} ",
        ]
        for line in expected:
            assert f"ratio: {tag}: {line}" in out, line
        verdicts += [bound <= 1.1, mean >= 0.9 * 4]

    def read_log(label: str) -> list[dict[str, Any]]:
        path = tmp_path / "logs" / f"requests_{label}.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()]

    def cpu_of(label: str) -> float:
        return float(next(r for r in doc["runs"] if r["label"] == label)["client_cpu_span_s"])

    # cores: sampling + pointwise on 1 core and on 2 over 1080p records; the rate = requests / span
    one, two = (read_log(f"sampling_pointwise_C4_L0.05_1080p_{n}core") for n in (1, 2))
    rows_1080p = _records(tmp_path / "logs" / "records_1080p_12")
    assert _per_record(one) == _per_record(two) == _rule("sampling_pointwise", rows_1080p)
    one, two = (_run_of(log, "sampling_pointwise", rows_1080p) for log in (one, two))
    assert {tuple(i[1:]) for e in one + two for i in e["images"]} == {(1920, 1080)}
    r1, r2 = len(one) / _span(one), len(two) / _span(two)
    scaling = (
        f"ratio: sampling_pointwise C=4 L=0.05 1080p: rate on 2 cores / on 1 core = {r2:.1f} / {r1:.1f} "
        f"requests/s = {r2 / r1:.2f} (target >= 1.8: {_verdict(r2 / r1 >= 1.8)})"
    )
    assert scaling in out
    verdicts.append(r2 / r1 >= 1.8)
    # cpu: on one core, per 1080p request (one image of 1920x1080 pixels = one 1080p request) and per
    # 4K request (each image 3840x2160)
    for label, tag, size, per, bound in (
        (
            "sampling_pointwise_C4_L0.05_1080p_1core",
            "sampling_pointwise C=4 L=0.05 1080p",
            (1920, 1080),
            "1080p",
            30,
        ),
        ("greedy_C4_L0.05_1080p_1core", "greedy C=4 L=0.05 1080p", (1920, 1080), "1080p", 30),
        ("greedy_C4_L0.05_4k_1core", "greedy C=4 L=0.05 4k", (3840, 2160), "4K", 120),
        ("sampling_pointwise_C4_L0.05_4k_1core", "sampling_pointwise C=4 L=0.05 4k", (3840, 2160), "4K", 120),
    ):
        log = read_log(label)
        rows_of = _records(tmp_path / "logs" / ("records_4k_4" if "4k" in label else "records_1080p_12"))
        assert _per_record(log) == _rule(label.partition("_C4")[0], rows_of)
        images = [tuple(i[1:]) for e in _run_of(log, label.partition("_C4")[0], rows_of) for i in e["images"]]
        assert set(images) == {size}  # the run's; the probe's are its screenshot and its small image
        assert {tuple(i[1:]) for e in log for i in e["images"]} == {size, (112, 112)}
        cpu = cpu_of(label) / len(images) * 1000
        line = f"ratio: {tag} on 1 core: client CPU ms per {per} request = {cpu:.1f} (target <= {bound}: "
        assert f"{line}{_verdict(cpu <= bound)})" in out, line
        verdicts.append(cpu <= bound)
    # short: 12 greedy requests at C=3, L=0.05 s; the mean in flight over the log's span
    short = read_log("greedy_C3_L0.05_short")
    assert _per_record(short) == _rule("greedy", rows)
    mean, _ = _brute_in_flight(_run_of(short, "greedy", rows))
    line = f"ratio: greedy C=3 L=0.05: mean in flight / C = {mean / 3:.2f} (target >= 0.9: "
    assert f"{line}{_verdict(mean >= 0.9 * 3)})" in out
    verdicts.append(mean >= 0.9 * 3)
    # the summary: every target above, counted by hand
    assert f"all targets: {_verdict(all(verdicts))} ({sum(verdicts)} of {len(verdicts)} met)" in out
    assert len(verdicts) == 2 * 2 + 2 + 4 - 1 + 1


def test_pin_runs_the_command_on_the_cores_named() -> None:
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    cpu = min(os.sched_getaffinity(0))
    got = subprocess.run(
        [sys.executable, "-c", et.PIN, str(cpu), sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert got.stdout.strip() == f"[{cpu}]"
