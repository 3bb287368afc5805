"""The windowed loop's rules the audit found unpinned (audit-5 WI01-WI10): no wall clock anywhere.

The demand bound, the in-progress bound and Ctrl-C are driven by events and a fake request window
whose ``waiting`` the test scripts; each check is on what happened in order (which reads of the
window came before which sample entered the model), never on seconds. Timeouts on waits only keep a
broken run from hanging.
"""

from __future__ import annotations

import _thread
import gc
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gge.errors import GgeError
from gge.run.windowed import evaluate_windowed, is_windowed
from gge.types import Box, Candidate, Prediction, Sample, SampleResult

WAIT_S = 10.0
"""The most any wait of these tests lasts (a safety net: on the code, every wait ends on its event)."""


def _sample(folder: Path, i: int, image: Image.Image | None = None, benchmark: str = "b") -> Sample:
    image = image if image is not None else Image.new("RGB", (8, 8), (i * 10, 0, 0))
    path = folder / f"{i}.png"
    image.save(path)
    return Sample(benchmark, str(i), str(path), image.size, "click", Box(0, 0, 4, 4))


class Policy:
    """A concurrent policy answering each sample at (1, 1); it logs what it saw and its ``cancel`` calls.

    ``answer`` replaces the prediction list of a sample (by id); ``enter`` is called with the sample's
    id when it enters the model (before answering).
    """

    needs_images = True
    concurrent = True

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, object]] = []
        self.cancels: list[bool] = []
        self.cancelled = False
        self.images: list[tuple[str, str, tuple[int, int]]] = []  # id, mode, size
        self.refuse_when_cancelled = False

    def cancel(self, on: bool = True) -> None:
        with self.lock:
            self.cancels.append(on)
            self.cancelled = on

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        raise AssertionError("the windowed loop hands screenshots")

    def enter(self, sample: Sample) -> None:
        """Called first in predict_images."""

    def answer(self, sample: Sample) -> list[Prediction]:
        return [Prediction(sample.benchmark, sample.id, (Candidate((1.0, 1.0)),))]

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        (sample,), (image,) = samples, images
        with self.lock:
            self.events.append(("enter", sample.id))
            self.images.append((sample.id, image.mode, image.size))
            if self.refuse_when_cancelled and self.cancelled:
                raise GgeError("cancelled: the run is stopping")
        self.enter(sample)
        return self.answer(sample)


class ScriptedWindow:
    """A request window whose demand the test scripts: each read of ``waiting`` takes the next value.

    The last value repeats. Every read is logged into the policy's events (with the samples entering
    the model), so a test sees which reads came before which sample started.
    """

    def __init__(self, policy: Policy, limit: int, waiting: list[int], max_limit: int | None = None) -> None:
        self.policy = policy
        self.limit = limit
        self.max_limit = limit if max_limit is None else max_limit
        self.script = list(waiting)
        self.reads = 0
        self.read = threading.Condition()

    @property
    def waiting(self) -> int:
        value = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        with self.policy.lock:
            self.policy.events.append(("waiting", value))
        with self.read:
            self.reads += 1
            self.read.notify_all()
        return value


# -- WI02: the demand bound --------------------------------------------------------------------------


@pytest.mark.parametrize("prefetch", [2, 0])
def test_no_sample_starts_while_prefetch_requests_wait_for_the_window(tmp_path: Path, prefetch: int) -> None:
    policy = Policy()
    bound = max(1, prefetch)  # prefetch 0 still lets a sample start when nothing waits
    script = [5, bound, bound, bound - 1]  # a queue, then at the bound (still full), then below it
    policy.window = ScriptedWindow(policy, limit=4, waiting=script)  # type: ignore[attr-defined]
    samples = [_sample(tmp_path, i) for i in range(3)]
    results = evaluate_windowed(policy, samples, k=1, prefetch=prefetch)
    assert [r.id for r in results] == ["0", "1", "2"]
    first = policy.events.index(("enter", "0"))
    before = [value for kind, value in policy.events[:first] if kind == "waiting"]
    # no sample entered the model while the window reported `bound` or more waiting: the first
    # entered after the read below the bound (the loop may read again for the next samples first)
    assert before[: len(script)] == script


@pytest.mark.parametrize("prefetch", [2, 1, 0])
def test_one_sample_starts_only_on_the_first_read_below_the_bound(tmp_path: Path, prefetch: int) -> None:
    """One sample: the loop reads the window until it may start it, then reads no more before it enters
    (with several, later reads for the next samples can come before the first enters)."""
    policy = Policy()
    bound = max(1, prefetch)
    script = [5, bound, bound, bound - 1]
    policy.window = ScriptedWindow(policy, limit=4, waiting=script)  # type: ignore[attr-defined]
    [result] = evaluate_windowed(policy, [_sample(tmp_path, 0)], k=1, prefetch=prefetch)
    first = policy.events.index(("enter", "0"))
    assert result.id == "0" and [v for kind, v in policy.events[:first] if kind == "waiting"] == script


def _held_in_the_model(
    policy: Policy,
) -> tuple[threading.Event, list[str], list[int], threading.Condition]:
    """Hold every sample in ``policy``'s model until ``go`` is set: (go, the ids inside, the count
    inside after each entry, the condition notified at each entry)."""
    go = threading.Event()
    inside: list[str] = []
    most: list[int] = []
    entered = threading.Condition()

    def enter(sample: Sample) -> None:
        with entered:
            inside.append(sample.id)
            most.append(len(inside))
            entered.notify_all()
        assert go.wait(WAIT_S)
        with entered:
            inside.remove(sample.id)

    policy.enter = enter  # type: ignore[method-assign]
    return go, inside, most, entered


def test_at_most_the_windows_limit_plus_prefetch_samples_are_in_progress(tmp_path: Path) -> None:
    policy = Policy()
    window = ScriptedWindow(policy, limit=1, waiting=[0], max_limit=8)
    policy.window = window  # type: ignore[attr-defined]
    go, inside, most, entered = _held_in_the_model(policy)

    def conductor() -> None:
        with entered:  # two samples in the model: the window's limit (1) plus prefetch (1)
            assert entered.wait_for(lambda: len(inside) == 2, WAIT_S)
        with window.read:  # the loop asked for room three more times and was refused each time
            reads = window.reads
            assert window.read.wait_for(lambda: window.reads >= reads + 3, WAIT_S)
        go.set()

    helper = threading.Thread(target=conductor, daemon=True)
    helper.start()
    results = evaluate_windowed(policy, [_sample(tmp_path, i) for i in range(4)], k=1, prefetch=1)
    helper.join(WAIT_S)
    assert go.is_set() and [r.id for r in results] == ["0", "1", "2", "3"]
    assert max(most) == 2


def test_without_a_window_sixteen_plus_prefetch_samples_are_in_progress(tmp_path: Path) -> None:
    policy = Policy()
    go, inside, most, entered = _held_in_the_model(policy)
    samples = [_sample(tmp_path, i) for i in range(19)]

    def conductor() -> None:
        with entered:  # 16 + prefetch 2 in the model; the 19th waits for room
            assert entered.wait_for(lambda: len(inside) == 18, WAIT_S)
        go.set()

    helper = threading.Thread(target=conductor, daemon=True)
    helper.start()
    results = evaluate_windowed(policy, samples, k=1, prefetch=2)
    helper.join(WAIT_S)
    assert go.is_set() and len(results) == 19 and max(most) == 18


# -- WI03, WI04: cancel ------------------------------------------------------------------------------


def test_the_first_failure_tells_the_policy_to_stop(tmp_path: Path) -> None:
    class Breaks(Policy):
        def answer(self, sample: Sample) -> list[Prediction]:
            raise GgeError("POST http://x: HTTP 400: refused")

    policy = Breaks()
    with pytest.raises(GgeError, match="HTTP 400"):
        evaluate_windowed(policy, [_sample(tmp_path, 0)], k=1)
    assert policy.cancels == [False, True]  # allowed to send at the start, stopped at the failure


def test_no_sample_starts_after_the_first_failure(tmp_path: Path) -> None:
    class Breaks(Policy):
        def answer(self, sample: Sample) -> list[Prediction]:
            raise GgeError("POST http://x: HTTP 400: refused")

    policy = Breaks()
    policy.window = ScriptedWindow(policy, limit=1, waiting=[0])  # type: ignore[attr-defined]
    with pytest.raises(GgeError, match="HTTP 400"):  # one sample at a time: limit 1, prefetch 0
        evaluate_windowed(policy, [_sample(tmp_path, i) for i in range(4)], k=1, prefetch=0)
    assert [event for event in policy.events if event[0] == "enter"] == [("enter", "0")]


def test_a_policy_an_earlier_evaluation_stopped_sends_again(tmp_path: Path) -> None:
    policy = Policy()
    policy.refuse_when_cancelled = True
    policy.cancel()  # a training run's earlier evaluation stopped it
    results = evaluate_windowed(policy, [_sample(tmp_path, i) for i in range(3)], k=1)
    assert [r.id for r in results] == ["0", "1", "2"]
    assert policy.cancels == [True, False]


# -- WI05, WI06: what the model is handed ------------------------------------------------------------


def test_an_rgba_screenshot_is_handed_as_rgb(tmp_path: Path) -> None:
    policy = Policy()
    image = Image.new("RGBA", (8, 6), (200, 10, 10, 0))
    evaluate_windowed(policy, [_sample(tmp_path, 0, image)], k=1)
    assert policy.images == [("0", "RGB", (8, 6))]


def test_an_rgb_screenshot_is_handed_undecoded_and_a_decoded_ones_file_is_closed(tmp_path: Path) -> None:
    undecoded: list[bool] = []

    class Looks(Policy):
        def enter(self, sample: Sample) -> None:
            pass

        def predict_images(
            self, samples: Sequence[Sample], images: Sequence[Image.Image]
        ) -> list[Prediction]:
            undecoded.append(getattr(images[0], "fp", None) is not None)  # its file still open
            return super().predict_images(samples, images)

    rgb = _sample(tmp_path, 0)
    palette = _sample(tmp_path, 1, Image.new("RGB", (8, 8), (9, 9, 9)).convert("P"))
    gc.collect()  # what earlier tests left unclosed is not this test's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate_windowed(Looks(), [rgb], k=1)  # an endpoint may send its file: never decoded
        evaluate_windowed(Looks(), [palette], k=1)  # decoded to RGB: the file opened first is closed
        gc.collect()
    assert undecoded == [True, False]
    unclosed = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert [m for m in unclosed if str(tmp_path) in m] == []


def test_decode_max_pixels_downscales_the_screenshot_handed_to_the_model(tmp_path: Path) -> None:
    policy = Policy()
    pixels = np.random.default_rng(0).integers(0, 256, (100, 100, 3), dtype=np.uint8)
    sample = _sample(tmp_path, 0, Image.fromarray(pixels))
    evaluate_windowed(policy, [sample], k=1, decode_max_pixels=2500)
    assert policy.images == [("0", "RGB", (50, 50))]  # 100x100 at scale sqrt(2500 / 10000) = 0.5
    policy.images.clear()
    evaluate_windowed(policy, [sample], k=1)  # no limit: the file as it is
    assert policy.images == [("0", "RGB", (100, 100))]


# -- WI07-WI09: the model's own failures and answers -------------------------------------------------


def test_a_value_error_of_the_model_on_a_readable_screenshot_stops_the_run(tmp_path: Path) -> None:
    class Malformed(Policy):
        def answer(self, sample: Sample) -> list[Prediction]:
            raise ValueError("the answer '(1,' is not a point")

    with pytest.raises(ValueError, match="is not a point"):
        evaluate_windowed(Malformed(), [_sample(tmp_path, 0)], k=1)


def test_two_predictions_for_one_sample_are_refused(tmp_path: Path) -> None:
    class Twice(Policy):
        def answer(self, sample: Sample) -> list[Prediction]:
            return super().answer(sample) * 2

    with pytest.raises(GgeError, match=r"^the model returned 2 predictions for 1 sample$"):
        evaluate_windowed(Twice(), [_sample(tmp_path, 0)], k=1)


def test_no_prediction_for_a_sample_is_refused(tmp_path: Path) -> None:
    class Silent(Policy):
        def answer(self, sample: Sample) -> list[Prediction]:
            return []

    with pytest.raises(GgeError, match=r"^the model returned 0 predictions for 1 sample$"):
        evaluate_windowed(Silent(), [_sample(tmp_path, 0)], k=1)


@pytest.mark.parametrize(("benchmark", "sid"), [("other", "0"), ("b", "1")])
def test_an_answer_for_another_sample_is_refused(tmp_path: Path, benchmark: str, sid: str) -> None:
    class Elsewhere(Policy):
        def answer(self, sample: Sample) -> list[Prediction]:
            return [Prediction(benchmark, sid, (Candidate((1.0, 1.0)),))]

    with pytest.raises(GgeError, match=rf"^the model answered {benchmark}/{sid} for sample b/0$"):
        evaluate_windowed(Elsewhere(), [_sample(tmp_path, 0)], k=1)


# -- WI10: Ctrl-C ------------------------------------------------------------------------------------


def test_after_ctrl_c_a_sample_that_finishes_is_not_logged(tmp_path: Path) -> None:
    policy = Policy()
    zero_logged = threading.Event()
    interrupted = threading.Event()
    release = threading.Event()
    logged: list[str] = []

    def enter(sample: Sample) -> None:
        if sample.id == "1":  # in the model when Ctrl-C comes; answers after the run has stopped
            assert zero_logged.wait(WAIT_S)
            interrupted.set()
            _thread.interrupt_main()
            release.wait(WAIT_S)

    def log(result: SampleResult) -> None:
        logged.append(result.id)
        if result.id == "0":
            zero_logged.set()

    policy.enter = enter  # type: ignore[method-assign]
    # one sample at a time (limit 1, prefetch 0): sample 1 starts once sample 0 has ended, so Ctrl-C
    # comes while the run waits for its last sample in progress
    policy.window = ScriptedWindow(policy, limit=1, waiting=[0])  # type: ignore[attr-defined]
    samples = [_sample(tmp_path, i) for i in range(2)]
    before = set(threading.enumerate())
    try:
        with pytest.raises(KeyboardInterrupt):
            evaluate_windowed(policy, samples, k=1, on_result=log, prefetch=0)
    finally:
        release.set()
        for thread in set(threading.enumerate()) - before:  # the run's sample threads end
            thread.join(WAIT_S)
            assert not thread.is_alive()
    assert interrupted.is_set()
    assert logged == ["0"]  # sample 1 answered after the interrupt: not handed to the closed log
    assert policy.cancels == [False, True]  # and the policy was told to stop sending


# -- on_scored, WI01 ---------------------------------------------------------------------------------


def test_on_scored_sees_each_result_before_the_log(tmp_path: Path) -> None:
    order: list[tuple[str, str]] = []
    lock = threading.Lock()

    def note(what: str) -> Callable[[SampleResult], None]:
        def call(result: SampleResult) -> None:
            with lock:
                order.append((what, result.id))

        return call

    evaluate_windowed(
        Policy(),
        [_sample(tmp_path, i) for i in range(3)],
        k=1,
        on_scored=note("scored"),
        on_result=note("logged"),
    )
    for sid in ("0", "1", "2"):
        assert order.index(("scored", sid)) < order.index(("logged", sid))
    assert len(order) == 6


def test_a_policy_whose_predict_images_is_not_callable_is_not_windowed() -> None:
    class NotCallable:
        needs_images = True
        concurrent = True
        predict_images = "not a method"

        def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
            return []

    assert not is_windowed(NotCallable())
    assert is_windowed(Policy())
