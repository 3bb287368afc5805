"""The windowed loop on its own: screenshots opened lazily, unreadable ones counted, order kept."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from gge.errors import GgeError
from gge.run.windowed import evaluate_windowed
from gge.types import Box, Candidate, Prediction, Sample


class Reader:
    """A concurrent policy that reads each screenshot's top-left pixel, answering at its brightness."""

    needs_images = True
    concurrent = True

    def __init__(self, hold: threading.Event | None = None) -> None:
        self.hold = hold
        self.modes: list[str] = []

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        raise AssertionError("the windowed loop hands screenshots")

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        (sample,), (image,) = samples, images
        if self.hold is not None and sample.id == "0":
            assert self.hold.wait(5)  # the first sample finishes after the others
        self.modes.append(image.mode)
        value = np.asarray(image)[0, 0, 0]
        return [Prediction(sample.benchmark, sample.id, (Candidate((float(value), 1.0)),))]


def _sample(folder: Path, i: int, image: Image.Image, name: str | None = None) -> Sample:
    path = folder / (name or f"{i}.png")
    image.save(path)
    return Sample("b", str(i), str(path), image.size, "click", Box(0, 0, 10, 10))


def test_results_come_back_in_sample_order_whatever_order_they_finish(tmp_path: Path) -> None:
    hold = threading.Event()
    samples = [_sample(tmp_path, i, Image.new("RGB", (16, 8), (i * 40, 0, 0))) for i in range(5)]
    finished: list[str] = []

    def logged(result: object) -> None:
        finished.append(result.id)  # type: ignore[attr-defined]
        if len(finished) == 4:
            hold.set()

    results = evaluate_windowed(Reader(hold), samples, k=1, on_result=logged)
    assert finished[-1] == "0" and sorted(finished) == ["0", "1", "2", "3", "4"]
    assert [r.id for r in results] == ["0", "1", "2", "3", "4"]
    assert [r.candidates[0].point for r in results] == [(i * 40.0, 1.0) for i in range(5)]
    assert [r.top1["first"] for r in results] == [
        True,
        False,
        False,
        False,
        False,
    ]  # x = 0, 40, ...: only 0 in box


def test_a_palette_screenshot_is_decoded_to_rgb_as_the_batched_loop_does(tmp_path: Path) -> None:
    image = Image.new("RGB", (16, 8), (200, 10, 10)).convert("P")
    policy = Reader()
    (result,) = evaluate_windowed(policy, [_sample(tmp_path, 0, image)], k=1)
    assert policy.modes == ["RGB"]
    red = image.convert("RGB").getpixel((0, 0))
    assert isinstance(red, tuple) and result.candidates[0].point == (float(red[0]), 1.0)


def _truncated(tmp_path: Path) -> Sample:
    sample = _sample(tmp_path, 0, Image.effect_noise((64, 64), 50).convert("RGB"))
    data = Path(sample.image_path).read_bytes()
    Path(sample.image_path).write_bytes(data[: len(data) // 2])  # the header reads, the pixels do not
    with Image.open(sample.image_path) as im:
        assert im.size == (64, 64)
    return sample


def test_a_truncated_screenshot_is_the_samples_counted_failure(tmp_path: Path) -> None:
    sample = _truncated(tmp_path)
    (result,) = evaluate_windowed(Reader(), [sample], k=1)
    assert result.image_error is not None and sample.image_path in result.image_error
    assert result.image_error.startswith("b: sample 0: cannot read image") and not result.top1["first"]


def test_strict_images_stops_at_a_truncated_screenshot(tmp_path: Path) -> None:
    sample = _truncated(tmp_path)
    with pytest.raises(GgeError, match=r"cannot read image .* \(strict_images=true\)"):
        evaluate_windowed(Reader(), [sample], k=1, strict_images=True)


def test_a_missing_screenshot_is_counted_with_the_loaders_message(tmp_path: Path) -> None:
    sample = Sample("b", "7", str(tmp_path / "gone.png"), (10, 10), "click", Box(0, 0, 1, 1))
    (result,) = evaluate_windowed(Reader(), [sample], k=1)
    assert result.image_error is not None and result.image_error.startswith("b: sample 7: cannot read image")


def test_a_policy_that_is_not_concurrent_is_refused() -> None:
    class Plain:
        needs_images = True

        def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
            return []

        def predict_images(
            self, samples: Sequence[Sample], images: Sequence[Image.Image]
        ) -> list[Prediction]:
            return []

    with pytest.raises(GgeError, match="does not declare concurrent"):
        evaluate_windowed(Plain(), [], k=1)


def test_the_first_failure_stops_the_run_and_is_raised(tmp_path: Path) -> None:
    class Breaks(Reader):
        def predict_images(
            self, samples: Sequence[Sample], images: Sequence[Image.Image]
        ) -> list[Prediction]:
            if samples[0].id == "2":
                raise GgeError("POST http://x: HTTP 400: refused")
            return super().predict_images(samples, images)

    samples = [_sample(tmp_path, i, Image.new("RGB", (4, 4))) for i in range(4)]
    done: list[str] = []
    with pytest.raises(GgeError, match="HTTP 400"):
        evaluate_windowed(Breaks(), samples, k=1, on_result=lambda r: done.append(r.id))
    assert "2" not in done


def test_the_grouped_log_writes_every_record_once_from_many_threads(tmp_path: Path) -> None:
    import json

    from gge.run.predlog import GroupedLog, PredictionLog

    path = tmp_path / "predictions.rank0.jsonl"
    log = GroupedLog(PredictionLog(path))

    def put(t: int) -> None:
        for i in range(50):
            log.put({"benchmark": "b", "id": f"{t}-{i}"})

    threads = [threading.Thread(target=put, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()
    ids = [json.loads(line)["id"] for line in path.read_text().splitlines()]
    assert sorted(ids) == sorted(f"{t}-{i}" for t in range(8) for i in range(50))
    with pytest.raises(ValueError, match="needs 'benchmark' and 'id'"):
        GroupedLog(PredictionLog(tmp_path / "other.jsonl")).put({"id": "1"})


def test_the_grouped_log_says_a_failed_write_at_close_and_at_the_next_put(tmp_path: Path) -> None:
    from gge.run.predlog import GroupedLog, PredictionLog

    folder = tmp_path / "a-folder.jsonl"
    folder.mkdir()  # the log's path is a folder: the writer's open fails
    log = GroupedLog(PredictionLog(folder))
    log.put({"benchmark": "b", "id": "1"})
    with pytest.raises(IsADirectoryError):
        log.close()
    with pytest.raises(IsADirectoryError):
        log.put({"benchmark": "b", "id": "2"})


def test_a_halt_from_outside_stops_drawing_samples_and_returns_what_finished(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "s.png"
    Image.new("RGB", (10, 10)).save(path)
    halt = threading.Event()
    drawn: list[int] = []

    class Centre:
        needs_images = True
        concurrent = True

        def predict(self, samples: Any) -> Any:
            raise AssertionError("not called")

        def predict_images(self, samples: Any, images: Any) -> Any:
            if samples[0].id == "3":
                halt.set()  # the parent stops the run while the fourth sample is asked
            return [Prediction(s.benchmark, s.id, (Candidate((5.0, 5.0)),)) for s in samples]

    def samples() -> Any:  # an iterable without a length, as a client process draws them
        for i in range(100):
            drawn.append(i)
            yield Sample("b", str(i), str(path), (10, 10), "click", Box(0, 0, 9, 9))

    results = evaluate_windowed(Centre(), samples(), k=1, prefetch=0, halt=halt)
    ids = [r.id for r in results]
    assert "3" in ids and ids == sorted(ids, key=int) and len(drawn) < 100
