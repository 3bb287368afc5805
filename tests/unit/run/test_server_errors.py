"""A request that failed for good is its sample's ``server_error``, not the run's end (issue 36, item 4).

Pinned, with a fake concurrent policy that raises :class:`gge.errors.RequestFailed` for chosen
samples (the endpoint raises it after its retries): the sample is a counted miss carrying the error,
the run goes on; ``strict_server`` stops at the first; more than ``max_server_error_share`` of the
finished samples stops the run once :data:`SERVER_ERROR_MIN_SAMPLES` have finished (counted by
hand, samples run one at a time through a window of 1); the prediction line keeps the error and a
resume asks the sample again (a later line replaces it); results.json and report.md count and list
the server errors apart from format and image errors.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from PIL import Image

from gge.benchmarks.base import Benchmark, BenchmarkOptions, LoadedBenchmark
from gge.documents.records import decode, encode
from gge.documents.results import BenchmarkEntry
from gge.errors import GgeError, RequestFailed, ServerGone
from gge.report.markdown import render_summary, server_error_lines
from gge.run.predlog import PredictionLog, existing_logs, rank_log_path, read_records
from gge.run.stops import RunStopped, kept_line
from gge.run.windowed import (
    SERVER_ERROR_MIN_SAMPLES,
    ServerBroken,
    ServerErrorShare,
    evaluate_windowed,
    server_error_text,
)
from gge.scoring.analysis import outcome
from gge.scoring.metrics import benchmark_metrics
from gge.types import Box, Candidate, Prediction, Sample, SampleResult


class Failing:
    """A concurrent policy that answers the box's centre, or raises ``error`` for the ids in ``fail``.

    With ``serial`` it shows a request window of 1 (and the run is given ``prefetch=0``), so the
    samples run one at a time in order and the finished counts are known when each one ends.
    """

    needs_images = True
    concurrent = True

    def __init__(
        self, fail: set[str], error: type[Exception] = RequestFailed, *, serial: bool = True
    ) -> None:
        self.fail, self.error = fail, error
        self.asked: list[str] = []
        self.lock = threading.Lock()
        if serial:
            self.window = SimpleNamespace(limit=1, max_limit=1, waiting=0)

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        raise AssertionError("the windowed loop hands screenshots")

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        (sample,) = samples
        with self.lock:
            self.asked.append(sample.id)
        if sample.id in self.fail:
            raise self.error(f"POST http://h/v1/chat/completions (model 'm'): HTTP 500:\n  boom {sample.id}")
        return [Prediction(sample.benchmark, sample.id, (Candidate((5.0, 5.0)),), raw="(5, 5)")]


def _samples(folder: Path, n: int) -> list[Sample]:
    path = folder / "s.png"
    Image.new("RGB", (10, 10)).save(path)
    return [Sample("b", str(i), str(path), (10, 10), "click", Box(0, 0, 9, 9)) for i in range(n)]


def _run(policy: Failing, samples: list[Sample], **kw: Any) -> tuple[list[SampleResult], list[SampleResult]]:
    logged: list[SampleResult] = []
    results = evaluate_windowed(policy, samples, k=1, on_result=logged.append, prefetch=0, **kw)
    return results, logged


def test_a_failed_request_is_that_samples_counted_miss_and_the_run_goes_on(tmp_path: Path) -> None:
    samples = _samples(tmp_path, 5)
    results, logged = _run(Failing({"1", "3"}, serial=False), samples)
    assert [r.id for r in results] == ["0", "1", "2", "3", "4"]
    assert sorted(r.id for r in logged) == ["0", "1", "2", "3", "4"]
    errors = {r.id: r.server_error for r in results if r.server_error is not None}
    assert errors == {
        "1": "POST http://h/v1/chat/completions (model 'm'): HTTP 500: boom 1",  # one line
        "3": "POST http://h/v1/chat/completions (model 'm'): HTTP 500: boom 3",
    }
    failed = [r for r in results if r.id in errors]
    assert all(not r.format_error and r.image_error is None and not r.top1["first"] for r in failed)
    assert [outcome(r, "first") for r in results] == ["hit", "server_error", "hit", "server_error", "hit"]


def test_a_long_error_is_cut_to_one_line_of_500_characters() -> None:
    text = server_error_text(RequestFailed("x" * 300 + "\n" + "y" * 300))
    assert text == "x" * 300 + " " + "y" * 196 + "..." and len(text) == 500


def test_strict_server_stops_at_the_first_failed_request(tmp_path: Path) -> None:
    policy = Failing({"2"})
    with pytest.raises(RequestFailed, match=r"HTTP 500:\n  boom 2 \(strict_server=true\)$"):
        _run(policy, _samples(tmp_path, 6), strict_server=True)
    assert policy.asked == ["0", "1", "2"]  # one at a time: nothing started after the failure


def test_a_server_gone_still_stops_the_run(tmp_path: Path) -> None:
    policy = Failing({"2"}, ServerGone)
    logged: list[SampleResult] = []
    with pytest.raises(ServerGone):
        evaluate_windowed(policy, _samples(tmp_path, 6), k=1, on_result=logged.append, prefetch=0)
    assert [r.id for r in logged] == ["0", "1"]


def _first_stop(failing: set[str], n: int, share: float, least: int) -> int | None:
    """Brute force: the finished count at which the errors first pass the share (None: never)."""
    errors = 0
    for finished in range(1, n + 1):
        errors += str(finished - 1) in failing
        if finished >= least and errors / finished > share:
            return finished
    return None


@pytest.mark.parametrize(
    ("failing", "n", "stops_at"),
    [
        ({"0", "1"}, 30, None),  # 2 of 20 = 0.1: not more than the share, the run finishes
        ({"0", "1", "2"}, 30, 20),  # 3 of the first 20: stops at the 20th (a hit) finishing
        ({"25", "26", "27"}, 40, 28),  # 1/26, 2/27, then 3/28 > 0.1: stops at the 28th
        ({"5", "12"}, 30, None),  # 2/20 at the 20th, fewer after
        (set(map(str, range(19))), 30, 20),  # all of the first 19 fail: the share is checked at 20
    ],
)
def test_more_than_the_share_of_server_errors_stops_the_run(
    tmp_path: Path, failing: set[str], n: int, stops_at: int | None
) -> None:
    assert SERVER_ERROR_MIN_SAMPLES == 20
    assert _first_stop(failing, n, 0.1, 20) == stops_at  # the hand count agrees with the rule
    policy = Failing(failing)
    logged: list[SampleResult] = []
    if stops_at is None:
        results = evaluate_windowed(policy, _samples(tmp_path, n), k=1, on_result=logged.append, prefetch=0)
        assert sum(r.server_error is not None for r in results) == len(failing)
        assert len(logged) == n
        return
    with pytest.raises(ServerBroken) as caught:
        evaluate_windowed(policy, _samples(tmp_path, n), k=1, on_result=logged.append, prefetch=0)
    errors = len([i for i in failing if int(i) < stops_at])
    assert (caught.value.errors, caught.value.finished) == (errors, stops_at)
    assert str(caught.value).startswith(
        f"{errors} of the {stops_at} samples finished failed at the server (more than "
        "max_server_error_share=0.1): the server looks broken, not flaky; last error: POST "
    )
    assert [r.id for r in logged] == [str(i) for i in range(stops_at)]  # every finished one is kept
    assert policy.asked == [str(i) for i in range(stops_at)]


def test_a_share_of_one_never_stops_and_of_zero_stops_at_the_least(tmp_path: Path) -> None:
    everything = set(map(str, range(25)))
    results, _ = _run(Failing(everything), _samples(tmp_path, 25), max_server_error_share=1.0)
    assert all(r.server_error is not None for r in results) and len(results) == 25
    with pytest.raises(ServerBroken) as caught:
        _run(Failing({"1"}), _samples(tmp_path, 10), max_server_error_share=0.0, server_error_min_samples=3)
    assert (caught.value.errors, caught.value.finished) == (1, 3)


def _result(i: int, error: str | None) -> SampleResult:
    sample = Sample("b", str(i), "/s.png", (10, 10), "click", Box(0, 0, 9, 9))
    pred = (
        Prediction("b", str(i), server_error=error)
        if error is not None
        else Prediction("b", str(i), (Candidate((5.0 if i % 2 else 50.0, 5.0)),), raw="p")
    )
    from gge.scoring.scoring import score_sample

    return score_sample(sample, pred, k=1)


def test_the_prediction_line_keeps_the_error_and_reads_it_back() -> None:
    r = _result(0, "POST u: HTTP 500 (after 2 retries)")
    line = encode(r)
    assert line["server_error"] == "POST u: HTTP 500 (after 2 retries)"
    assert "format_error" in line and line["format_error"] is False
    back = decode(json.loads(json.dumps(line)), "predictions.jsonl:1")
    assert back.server_error == r.server_error and back.prediction().server_error == r.server_error
    assert back.prediction() == Prediction("b", "0", server_error=r.server_error)
    assert "server_error" not in encode(_result(1, None))
    with pytest.raises(
        GgeError, match=r"^predictions.jsonl:1: field 'server_error' must be a string, got 5$"
    ):
        decode({**line, "server_error": 5}, "predictions.jsonl:1")


def test_a_resume_asks_a_server_error_again_and_its_later_line_replaces_it(tmp_path: Path) -> None:
    log = rank_log_path(tmp_path, 0)
    first = [encode(_result(0, None)), encode(_result(1, "HTTP 500")), encode(_result(2, "HTTP 429"))]
    with PredictionLog(log) as writer:
        writer.append(first)
    records = read_records(existing_logs(tmp_path), reask_server_errors=True)
    assert list(records) == [("b", "0")] and records.reask == [("b", "1"), ("b", "2")]
    with PredictionLog(log) as writer:  # the rerun: sample 1 answered, sample 2 failed again
        writer.append(
            [encode(_result(1, None)), encode(_result(2, "HTTP 500 again")), encode(_result(0, None))]
        )
    records = read_records(existing_logs(tmp_path))
    assert records[("b", "1")].get("server_error") is None and records[("b", "1")]["raw"] == "p"
    assert records[("b", "2")]["server_error"] == "HTTP 500 again"
    assert records.duplicates == 1 and records.duplicate_keys == [("b", "0")]  # the answered 0 repeated
    again = read_records(existing_logs(tmp_path), reask_server_errors=True)
    assert list(again) == [("b", "0"), ("b", "1")] and again.reask == [("b", "2")]
    with PredictionLog(log) as writer:  # a server error after an answer does not replace the answer
        writer.append([encode(_result(1, "late"))])
    assert read_records(existing_logs(tmp_path))[("b", "1")].get("server_error") is None


class Micro(Benchmark):
    name = "b"
    title = "B"
    directory = "b"
    label_keys = ()
    tables = ()

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


def _entry(results: list[SampleResult]) -> BenchmarkEntry:
    return benchmark_metrics(Micro(), results, k=1, strategy="first")


def test_results_json_counts_server_errors_apart_as_misses_in_the_denominator() -> None:
    errors = {1: "HTTP 500", 4: "HTTP 429", 5: "not JSON"}
    results = [_result(i, errors.get(i)) for i in range(8)]
    entry = _entry(results)
    # by hand: odd ids answered inside the box (1, 3, 5, 7), 1 and 5 are server errors: hits 3, 7
    assert entry["samples"] == 8 and entry["top1"] == 100.0 * 2 / 8
    assert entry["server_errors"] == [{"id": "1", "error": "HTTP 500"}, {"id": "4", "error": "HTTP 429"},
                                      {"id": "5", "error": "not JSON"}]  # fmt: skip
    assert entry["format_errors"] == 0 and entry["image_errors"] == []
    split = entry["decomposition"]["overall"]
    assert split["counts"] == {
        "hit": 2,
        "critic_miss": 0,
        "proposer_miss": 3,  # 0, 2, 6 answered outside the box
        "abstained": 0,
        "format_error": 0,
        "image_error": 0,
        "server_error": 3,
    }
    assert split["server_error"] == 100.0 * 3 / 8
    clean = _entry([_result(i, None) for i in range(4)])
    assert clean["server_errors"] == [] and "server_error" not in clean["decomposition"]["overall"]


def test_report_md_lists_the_first_five_and_counts_them_in_the_summary() -> None:
    errors = {i: f"HTTP 500 #{i}" for i in range(7)}
    entry = _entry([_result(i, errors.get(i)) for i in range(9)])
    assert server_error_lines(entry) == [
        "- Server errors (the request failed for good; scored as misses; a rerun into the output folder "
        "asks them again): 7",
        *(f"  - {i}: HTTP 500 #{i}" for i in range(5)),
        "  - and 2 more (results.json lists each)",
    ]
    mean = {"benchmarks": ["b"], "top1": entry["top1"]}
    table = render_summary({"b": "B"}, {"b": entry}, cast(Any, mean), k=1)
    head, _, row = (line for line in table.splitlines() if line.startswith("|"))
    assert head.split("|")[-2].strip() == "server errors" and row.split("|")[-2].strip() == "7"
    older = cast(
        BenchmarkEntry, {key: v for key, v in _entry([_result(0, None)]).items() if key != "server_errors"}
    )
    assert server_error_lines(older) == []  # a results.json written before the key reads the same
    assert "server errors" not in render_summary({"b": "B"}, {"b": older}, cast(Any, mean), k=1)


def test_the_stop_message_says_what_is_kept_and_how_to_resume(tmp_path: Path) -> None:
    with PredictionLog(rank_log_path(tmp_path, 0)) as writer:
        writer.append([encode(_result(0, None))])
    stop = RunStopped("the server is gone", 1, 3, tmp_path, reask=2)
    assert str(stop) == (
        f"the server is gone: 1 of 3 samples are kept in {tmp_path} (predictions.rank0.jsonl); the same "
        "command resumes from them, asking the 2 server errors again"
    )
    assert stop.rerun == {"output_dir": str(tmp_path), "resume": "true"}
    assert isinstance(stop, GgeError) and "\n" not in str(stop)
    assert kept_line(0, 3, tmp_path / "none") == (
        f"0 of 3 samples are kept in {tmp_path / 'none'} (no prediction log); "
        "the same command resumes from them"
    )


@pytest.mark.parametrize("share", ["-0.1", "1.5"])
def test_a_share_outside_0_to_1_is_refused_naming_the_key(share: str) -> None:
    from gge.run.settings import parse_args, validate

    with pytest.raises(GgeError, match=rf"^max_server_error_share must be in \[0, 1\], got {share}$"):
        validate(parse_args([f"max_server_error_share={share}"]))


class CutShort(Failing):
    """Sample 0's server is gone; sample 1's request is cut short by the stop (RequestFailed after it)."""

    def __init__(self) -> None:
        super().__init__(set(), serial=False)
        self.cancelled = threading.Event()
        self.started = threading.Event()

    def cancel(self, on: bool = True) -> None:
        if on:
            self.cancelled.set()

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        (sample,) = samples
        if sample.id == "0":
            assert self.started.wait(5)
            raise ServerGone("the server at u stayed unreachable for 0 s (model.server_wait_s)")
        self.started.set()
        assert self.cancelled.wait(5)
        raise RequestFailed("cancelled: the run is stopping")


def test_a_request_cut_short_by_the_stop_is_no_server_error(tmp_path: Path) -> None:
    logged: list[SampleResult] = []
    with pytest.raises(ServerGone):
        evaluate_windowed(CutShort(), _samples(tmp_path, 2), k=1, on_result=logged.append)
    assert logged == []


def test_the_share_is_checked_after_every_finished_sample_whatever_it_is() -> None:
    """Three errors among the first 19 samples (3 > 0.1 x 19 is not yet checked); a clean 20th stops it."""
    share = ServerErrorShare(0.1, min_samples=20)
    stops = [share.add("HTTP 500" if i in (0, 5, 9) else None) for i in range(20)]
    assert [i for i, s in enumerate(stops) if s is not None] == [19]  # 3 > 0.1 x 20, at the 20th
    assert "3 of the 20 samples finished failed at the server" in str(stops[19])
    assert share.last == "HTTP 500"
