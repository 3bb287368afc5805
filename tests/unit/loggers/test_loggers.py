"""Evaluation logging: overlays (pure), W&B offline read back from disk, TensorBoard events, JPEG files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from paths import ROOT
from PIL import Image, ImageDraw
from wandb_reader import LoggedImage, OfflineRun, find_run_dirs, read_run

from gge.benchmarks.base import Benchmark, BenchmarkOptions, LoadedBenchmark, normalized_box
from gge.documents.results import share
from gge.drawing import (
    HIT_COLOUR,
    MISS_COLOUR,
    PICK_COLOUR,
    TARGET_COLOUR,
    draw_overlay,
    marker_radius,
    point_scale,
    target_thumbnail,
    thumbnail,
)
from gge.loggers.dispatch import log_evaluation, safe_file_name
from gge.loggers.wandb import (
    HIT_CLASS,
    MISS_CLASS,
    PICK_HIT_CLASS,
    PICK_MISS_CLASS,
    TARGET_CLASS,
    log_evaluation_wandb,
    sample_columns,
)
from gge.scoring.analysis import OUTCOMES, outcome
from gge.scoring.metrics import benchmark_metrics
from gge.scoring.scoring import score_sample
from gge.types import Absent, Box, Candidate, Polygon, Prediction, Sample, SampleResult

K = 4
STRATEGY = "critic"
BACKGROUND = (128, 128, 128)


class DemoBench(Benchmark):
    name = "demo"
    title = "Demo"
    directory = "demo"
    label_keys = ("group",)
    tables = ()

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        raise NotImplementedError


@dataclass
class Suite:
    samples: dict[str, Sample]
    results: list[SampleResult]
    entry: dict[str, Any]
    table_ids: list[str]

    @property
    def shown(self) -> list[str]:
        """The ids that get a row / image: in table_ids, with a sample and a result, in that order."""
        have = {r.id for r in self.results}
        return [i for i in self.table_ids if i in have and i in self.samples]

    def result(self, sid: str) -> SampleResult:
        return next(r for r in self.results if r.id == sid)

    def kwargs(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "samples": self.samples,
            "results": self.results,
            "table_ids": self.table_ids,
            "k": K,
            "strategy": STRATEGY,
        }


def _screenshot(path: Path, size: tuple[int, int]) -> str:
    img = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(img)
    draw.rectangle((size[0] // 3, size[1] // 3, size[0] // 2, size[1] // 2), fill=(90, 90, 160))
    img.save(path)
    return str(path)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    folder = tmp_path_factory.mktemp("screens")
    wide, tall = (1280, 720), (400, 800)
    c = Candidate
    box = Box(100, 100, 300, 200)
    normalized = normalized_box(600, 300, 800, 400, wide)
    triangle = Polygon(((50, 50), (350, 100), (200, 400)))
    # id: (size, image format, region, candidates in proposer order, group)
    spec: dict[str, tuple[tuple[int, int], str, Any, tuple[Candidate, ...], str]] = {
        # the critic picks #2, a miss, while #1 hits
        "box": (wide, "png", box, (c((200, 150), 0.2), c((900, 500), 0.9), c((640, 600), 0.5)), "a"),
        "norm": (wide, "jpg", normalized, (c((700, 350), 0.9), c((100, 600), 0.1)), "a"),
        "poly": (tall, "png", triangle, (c((200, 150), 0.3), c((60, 700), 0.6), c(None, 0.1)), "b"),
        "absent": (wide, "png", Absent(), (c(None, 0.8), c((300, 300), 0.2)), "b"),
        "apps/odd id": (tall, "png", Box(10, 10, 390, 60), (c((200, 35)), c((200, 500))), "a"),
        "fmt": (wide, "png", Box(10, 10, 50, 50), (), "b"),
        "noresult": (wide, "png", Box(10, 10, 50, 50), (), "b"),
    }
    samples: dict[str, Sample] = {}
    results: list[SampleResult] = []
    for i, (sid, (size, ext, region, cands, group)) in enumerate(spec.items()):
        path = _screenshot(folder / f"s{i}.{ext}", size)
        sample = Sample("demo", sid, path, size, f"instruction for {sid}", region, {"group": group})
        samples[sid] = sample
        if sid != "noresult":
            raw = "" if sid == "fmt" else f"raw answer of {sid}"
            pred = Prediction("demo", sid, cands, format_error=sid == "fmt", raw=raw)
            results.append(score_sample(sample, pred, k=K))
    entry = benchmark_metrics(DemoBench(), results, k=K, strategy=STRATEGY)
    table_ids = ["poly", "box", "not-a-sample", "absent", "norm", "apps/odd id", "fmt", "noresult"]
    return Suite(samples, results, entry, table_ids)


def _open(path: str) -> Image.Image:
    with Image.open(path) as im:
        im.load()
        copy: Image.Image = im.copy()
    return copy


def _scale(sample: Sample, thumb: Image.Image) -> tuple[float, float]:
    return thumb.size[0] / sample.image_size[0], thumb.size[1] / sample.image_size[1]


def _window(img: Image.Image, x: float, y: float, r: int) -> list[Any]:
    cx, cy = round(x), round(y)
    return [
        img.getpixel((i, j))
        for i in range(max(0, cx - r), min(img.width, cx + r + 1))
        for j in range(max(0, cy - r), min(img.height, cy + r + 1))
    ]


def _near(colour: Any, target: tuple[int, int, int], tol: int) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(colour, target, strict=True))


# ---------------------------------------------------------------------------------------------
# Overlays (pure)


@pytest.mark.parametrize(
    ("size", "max_width", "expected", "scale"),
    [
        ((1280, 720), 960, (960, 540), 0.75),
        ((400, 800), 960, (400, 800), 1.0),
        ((3840, 2160), 960, (960, 540), 0.25),
        ((1000, 3), 100, (100, 1), 0.1),
        ((960, 10), 960, (960, 10), 1.0),
    ],
)
def test_thumbnail_downscales_only(
    size: tuple[int, int], max_width: int, expected: tuple[int, int], scale: float
) -> None:
    image = Image.new("RGBA", size, (1, 2, 3, 255))
    before = image.tobytes()
    thumb, factor = thumbnail(image, max_width)
    assert thumb.size == expected and thumb.mode == "RGB"
    assert factor == pytest.approx(scale)
    assert image.tobytes() == before and image.mode == "RGBA"
    assert thumb is not image
    with pytest.raises(ValueError):
        thumbnail(image, 0)


def test_overlays_are_pure_and_sized(suite: Suite) -> None:
    for sid in suite.shown:
        sample = suite.samples[sid]
        image = _open(sample.image_path)
        before = image.tobytes()
        overlay = draw_overlay(image, sample, suite.result(sid), STRATEGY)
        assert image.tobytes() == before
        assert overlay.width <= 960 and overlay.mode == "RGB"
        assert overlay.size == thumbnail(image)[0].size
        small = draw_overlay(image, sample, suite.result(sid), STRATEGY, max_width=300)
        assert small.width == 300


def test_candidates_green_or_red_at_scaled_positions(suite: Suite) -> None:
    checked = 0
    for sid in suite.shown:
        sample, result = suite.samples[sid], suite.result(sid)
        overlay = draw_overlay(_open(sample.image_path), sample, result, STRATEGY)
        sx, sy = _scale(sample, overlay)
        for cand, hit in zip(result.candidates, result.hits, strict=True):
            if cand.point is None:
                continue
            x, y = cand.point[0] * sx, cand.point[1] * sy
            assert overlay.getpixel((round(x), round(y))) == (HIT_COLOUR if hit else MISS_COLOUR), (sid, cand)
            checked += 1
    assert checked == 10


def test_pick_ring_around_the_strategy_pick(suite: Suite) -> None:
    sample, result = suite.samples["box"], suite.result("box")
    image = _open(sample.image_path)
    overlay = draw_overlay(image, sample, result, "critic")
    radius = marker_radius(overlay.size)
    for strategy in ("critic", "first"):
        overlay = draw_overlay(image, sample, result, strategy)
        pick = result.picks[strategy]
        assert pick is not None and pick.point is not None
        x, y = pick.point[0] * 0.75, pick.point[1] * 0.75
        assert PICK_COLOUR in _window(overlay, x - 2 * radius, y, 2)
        other = result.candidates[0 if strategy == "critic" else 1]
        assert other.point is not None
        assert PICK_COLOUR not in _window(
            overlay, other.point[0] * 0.75 - 2 * radius, other.point[1] * 0.75, 2
        )


def test_target_outlines_and_absent_banner(suite: Suite) -> None:
    # Polygon: every edge midpoint lies on the outline (400 px wide: scale 1).
    poly = suite.samples["poly"]
    assert isinstance(poly.region, Polygon)
    overlay = draw_overlay(_open(poly.image_path), poly, suite.result("poly"), STRATEGY)
    vertices = poly.region.vertices
    for (x1, y1), (x2, y2) in zip(vertices, vertices[1:] + vertices[:1], strict=True):
        assert TARGET_COLOUR in _window(overlay, (x1 + x2) / 2, (y1 + y2) / 2, 1)
    # Boxes (pixel and normalized): the left edge midpoint, scaled.
    for sid in ("box", "norm"):
        sample = suite.samples[sid]
        overlay = draw_overlay(_open(sample.image_path), sample, suite.result(sid), STRATEGY)
        region_box = sample.region.pixel_box()
        assert region_box is not None
        x1, y1, _, y2 = region_box
        assert TARGET_COLOUR in _window(overlay, x1 * 0.75, (y1 + y2) / 2 * 0.75, 1)
        assert _near(overlay.getpixel((2, 2)), BACKGROUND, 3)  # no banner
    # Absent: a banner in the top-left corner, in the overlay and in the W&B thumbnail.
    absent = suite.samples["absent"]
    image = _open(absent.image_path)
    overlay = draw_overlay(image, absent, suite.result("absent"), STRATEGY)
    assert overlay.getpixel((2, 2)) == TARGET_COLOUR
    thumb, scale = target_thumbnail(image, absent)
    assert thumb.getpixel((2, 2)) == TARGET_COLOUR and scale == (0.75, 0.75)
    # A box target is left to the box layers: the W&B thumbnail is the plain thumbnail.
    box = suite.samples["box"]
    image = _open(box.image_path)
    assert target_thumbnail(image, box)[0].tobytes() == thumbnail(image)[0].tobytes()


def test_overlay_of_a_pre_resized_image_scales_from_the_sample_size(suite: Suite) -> None:
    sample, result = suite.samples["box"], suite.result("box")
    resized = _open(sample.image_path).resize((640, 360))
    overlay = draw_overlay(resized, sample, result, STRATEGY)
    assert overlay.size == (640, 360)
    assert point_scale(sample.image_size, overlay.size) == (0.5, 0.5)
    assert overlay.getpixel((100, 75)) == HIT_COLOUR  # candidate #1 at (200, 150)
    assert overlay.getpixel((450, 250)) == MISS_COLOUR  # candidate #2 at (900, 500)


# ---------------------------------------------------------------------------------------------
# W&B offline, read back from disk


@pytest.fixture(scope="module")
def wandb_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("wandb")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")  # WandbLogger overwrites it: the context restores it
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_DISABLE_CODE", "true")
        for var in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            mp.setenv(var, str(root))
        yield root
        if "wandb" in sys.modules:  # drop wandb's process-wide settings read from this environment
            sys.modules["wandb"].teardown()


@pytest.fixture(scope="module")
def lightning_run(wandb_env: Path, suite: Suite) -> OfflineRun:
    """Two evaluations through log_evaluation and Lightning's WandbLogger, as in training."""
    wandb = pytest.importorskip("wandb")
    WandbLogger = pytest.importorskip("pytorch_lightning.loggers").WandbLogger

    save_dir = wandb_env / "lightning"
    save_dir.mkdir()
    logger = WandbLogger(offline=True, save_dir=str(save_dir), project="gge-test")
    try:
        # Lightning advances W&B's own step on every log_metrics call: past the trainer step here.
        for i in range(25):
            logger.log_metrics({"train/loss": 1.0 / (i + 1)}, step=i)
        for step in (10, 20):
            written = log_evaluation(
                [logger], step=step, benchmark=DemoBench(), log_dir=None, **suite.kwargs()
            )
            assert written == []
            logger.log_metrics({"train/loss": 0.5}, step=step)
    finally:
        wandb.finish()
    (run_dir,) = find_run_dirs(save_dir)
    return read_run(run_dir)


@pytest.fixture(scope="module")
def plain_run(wandb_env: Path, suite: Suite) -> OfflineRun:
    """Two evaluations straight to a wandb.init run (explicit steps)."""
    wandb = pytest.importorskip("wandb")

    save_dir = wandb_env / "plain"
    save_dir.mkdir()
    run = wandb.init(
        mode="offline", dir=str(save_dir), project="gge-test", settings=wandb.Settings(silent=True)
    )
    try:
        for step in (3, 7):
            log_evaluation_wandb(run, step=step, benchmark_name="demo", title="Demo", **suite.kwargs())
    finally:
        wandb.finish()
    (run_dir,) = find_run_dirs(save_dir)
    return read_run(run_dir)


def _expected_candidates(result: SampleResult) -> list[list[float] | None]:
    return [None if c.point is None else [c.point[0], c.point[1]] for c in result.candidates]


def test_wandb_samples_table_rows(lightning_run: OfflineRun, suite: Suite) -> None:
    tables = lightning_run.tables("grounding/demo/samples")
    assert [t.row["trainer/global_step"] for t in tables] == [10, 20]
    assert all(t.step is not None and t.step >= 25 for t in tables)  # W&B's own counter, not dropped
    for table, step in zip(tables, (10, 20), strict=True):
        assert table.columns == sample_columns(K)
        rows = table.rows()
        assert (
            [r["id"] for r in rows] == suite.shown == ["poly", "box", "absent", "norm", "apps/odd id", "fmt"]
        )
        for row in rows:
            sid = row["id"]
            result, sample = suite.result(sid), suite.samples[sid]
            assert row["step"] == step
            assert row["instruction"] == sample.instruction
            assert row["hit@1"] == result.hit_at(1)
            assert row[f"hit@{K}"] == result.hit_at(K)
            assert row["top1"] == result.top1[STRATEGY]
            assert json.loads(row["candidates"]) == _expected_candidates(result)
            assert json.loads(row["scores"]) == [c.score for c in result.candidates]
            pick = json.loads(row["pick"])
            assert pick["strategy"] == STRATEGY and pick["hit"] == result.top1[STRATEGY]
            assert row["raw"] == result.raw
            assert row["format_error"] == result.format_error
    by_id = {r["id"]: r for r in tables[0].rows()}
    assert [by_id["box"]["hit@1"], by_id["box"][f"hit@{K}"], by_id["box"]["top1"]] == [True, True, False]
    assert json.loads(by_id["box"]["pick"]) == {
        "strategy": "critic",
        "point": [900, 500],
        "abstain": False,
        "rank": 2,
        "hit": False,
    }
    assert json.loads(by_id["absent"]["pick"])["abstain"] is True
    assert by_id["absent"]["top1"] is True
    assert by_id["fmt"]["format_error"] is True and json.loads(by_id["fmt"]["candidates"]) == []


def _centre(box: dict[str, Any]) -> tuple[float, float]:
    pos = box["position"]
    if "middle" in pos:
        return float(pos["middle"][0]), float(pos["middle"][1])
    return (pos["minX"] + pos["maxX"]) / 2, (pos["minY"] + pos["maxY"]) / 2


def test_wandb_images_and_box_layers(lightning_run: OfflineRun, suite: Suite) -> None:
    for table in lightning_run.tables("grounding/demo/samples"):
        for row in table.rows():
            sid = row["id"]
            sample, result = suite.samples[sid], suite.result(sid)
            image = row["image"]
            assert isinstance(image, LoggedImage) and image.format == "jpg"
            decoded = image.open()
            expected_thumb = thumbnail(_open(sample.image_path))[0]
            assert decoded.format is None or decoded.format == "JPEG"
            assert decoded.size == expected_thumb.size == (image.width, image.height)
            drawn = target_thumbnail(_open(sample.image_path), sample)[0]
            assert np.abs(np.asarray(decoded, float) - np.asarray(drawn, float)).mean() < 2.0  # JPEG
            assert decoded.width <= 960
            assert set(image.boxes) == {"ground_truth", "candidates", "pick"}
            assert {TARGET_CLASS, HIT_CLASS, MISS_CLASS, PICK_HIT_CLASS, PICK_MISS_CLASS} <= set(
                image.class_labels
            )
            sx, sy = _scale(sample, expected_thumb)

            truth = image.boxes["ground_truth"]
            region_box = sample.region.pixel_box()
            if region_box is None:
                assert truth == []
            else:
                (gt,) = truth
                assert gt["domain"] == "pixel" and gt["class_id"] == TARGET_CLASS
                x1, y1, x2, y2 = region_box
                got = [gt["position"][k] for k in ("minX", "minY", "maxX", "maxY")]
                assert got == pytest.approx([x1 * sx, y1 * sy, x2 * sx, y2 * sy], abs=0.5)

            pointed = [
                (rank, c, hit)
                for rank, (c, hit) in enumerate(zip(result.candidates, result.hits, strict=True), start=1)
                if c.point is not None
            ]
            boxes = image.boxes["candidates"]
            assert len(boxes) == len(pointed)
            for box, (rank, cand, hit) in zip(boxes, pointed, strict=True):
                assert cand.point is not None
                assert box["domain"] == "pixel"
                assert _centre(box) == pytest.approx((cand.point[0] * sx, cand.point[1] * sy), abs=0.5)
                assert box["class_id"] == (HIT_CLASS if hit else MISS_CLASS)
                assert box["box_caption"].startswith(f"#{rank} score=")

            pick = result.picks.get(STRATEGY)
            if pick is None or pick.point is None:
                assert image.boxes["pick"] == []
            else:
                (pbox,) = image.boxes["pick"]
                assert _centre(pbox) == pytest.approx((pick.point[0] * sx, pick.point[1] * sy), abs=0.5)
                assert pbox["class_id"] == (PICK_HIT_CLASS if result.top1[STRATEGY] else PICK_MISS_CLASS)

            if isinstance(sample.region, Polygon):  # the outline is drawn into the pixels
                (ax, ay), (bx, by) = sample.region.vertices[:2]
                window = _window(decoded, (ax + bx) / 2 * sx, (ay + by) / 2 * sy, 2)
                assert any(_near(p, TARGET_COLOUR, 70) for p in window)
            if isinstance(sample.region, Absent):
                assert _near(decoded.getpixel((3, 3)), TARGET_COLOUR, 40)


def test_wandb_breakdown_table_and_oracle_curve(lightning_run: OfflineRun, suite: Suite) -> None:
    expected = [
        [label, value, stats["samples"], stats["top1"], stats[f"oracle@{K}"]]
        for label, values in suite.entry["breakdown"].items()
        for value, stats in values.items()
    ]
    assert [row[:2] for row in expected] == [["group", "a"], ["group", "b"]]
    breakdowns = lightning_run.tables("grounding/demo/breakdown")
    assert len(breakdowns) == 2
    for table in breakdowns:
        assert table.columns == ["label", "value", "samples", "top1", f"oracle@{K}"]
        assert table.data == expected
    curves = lightning_run.tables("grounding/demo/oracle_at_k_table")
    assert len(curves) == 2
    for table in curves:
        assert table.columns == ["k", "oracle"]
        assert table.data == [[j, suite.entry[f"oracle@{j}"]] for j in range(1, K + 1)]
    chart = lightning_run.config["_wandb"]["visualize"]["grounding/demo/oracle_at_k"]
    assert chart["panel_config"]["panelDefId"] == "wandb/line/v0"
    assert chart["panel_config"]["fieldSettings"]["x"] == "k"


def test_wandb_why_tables_and_plots(lightning_run: OfflineRun, suite: Suite) -> None:
    entry = suite.entry
    (dec, _) = lightning_run.tables("grounding/demo/decomposition")
    assert dec.columns == ["cell", "samples", *OUTCOMES]
    overall = entry["decomposition"]["overall"]
    assert dec.data[0] == ["all", overall["samples"], *(share(overall, kind) for kind in OUTCOMES)]
    assert len(dec.data) == 1  # the demo benchmark has no official table: no cells
    (sizes, _) = lightning_run.tables("grounding/demo/size_buckets")
    assert [row[3] for row in sizes.data] == [b["samples"] for b in entry["size_buckets"]["buckets"]]
    assert entry["calibration"]["score_kind"] == "probability"  # the suite's scores lie in [0, 1]
    (rel, _) = lightning_run.tables("grounding/demo/calibration/reliability")
    assert [row[2] for row in rel.data] == [r["count"] for r in entry["calibration"]["reliability"]]
    charts = lightning_run.config["_wandb"]["visualize"]
    for key in ("outcomes", "top1_by_size", "calibration/reliability_plot", "calibration/risk_coverage"):
        assert f"grounding/demo/{key}" in charts, key
    # each sample row names its outcome
    (samples, _) = lightning_run.tables("grounding/demo/samples")
    kinds = {r["id"]: r["outcome"] for r in samples.rows()}
    assert kinds["box"] == "critic_miss" and kinds["fmt"] == "format_error"
    assert kinds == {sid: outcome(suite.result(sid), STRATEGY) for sid in kinds}


def test_wandb_plain_run_logs_at_the_given_steps(plain_run: OfflineRun, suite: Suite) -> None:
    tables = plain_run.tables("grounding/demo/samples")
    assert [t.step for t in tables] == [3, 7]
    for table, step in zip(tables, (3, 7), strict=True):
        rows = table.rows()
        assert [r["id"] for r in rows] == suite.shown
        assert {r["step"] for r in rows} == {step}
        assert all(isinstance(r["image"], LoggedImage) for r in rows)
    assert [t.step for t in plain_run.tables("grounding/demo/breakdown")] == [3, 7]
    # The run folder keeps a scalar-only copy of each table (images read "Image").
    copy = json.loads(
        (plain_run.run_dir / "files" / tables[0].row["grounding/demo/samples"]["path"]).read_text()
    )
    assert [r[1] for r in copy["data"]] == suite.shown and copy["data"][0][3] == "Image"


class _Recorder:
    """A run that keeps what log_evaluation_wandb hands it (the payload's keys and wandb objects)."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], int | None]] = []

    def log(self, payload: dict[str, Any], step: int | None = None) -> None:
        self.calls.append((payload, step))


def test_wandb_of_a_one_answer_run_has_no_oracle_curve_or_column(suite: Suite) -> None:
    pytest.importorskip("wandb")
    rescored = [
        score_sample(
            suite.samples[r.id], Prediction("demo", r.id, r.candidates[:1], format_error=r.format_error), k=1
        )
        for r in suite.results
    ]
    assert all(r.k == 1 and len(r.candidates) <= 1 for r in rescored)
    entry = benchmark_metrics(DemoBench(), rescored, k=1, strategy=STRATEGY)
    for k, want_curve in ((1, False), (K, True)):
        run = _Recorder()
        use = entry if k == 1 else suite.entry
        log_evaluation_wandb(
            run, step=5, benchmark_name="demo", title="Demo", entry=use, samples=suite.samples,
            results=[], table_ids=[], k=k, strategy=STRATEGY,
        )  # fmt: skip
        ((payload, step),) = run.calls
        assert step == 5
        assert ("grounding/demo/oracle_at_k" in payload) is want_curve, k
        breakdown = payload["grounding/demo/breakdown"]
        sizes = payload["grounding/demo/size_buckets"]
        if k == 1:
            assert breakdown.columns == ["label", "value", "samples", "top1"]
            assert sizes.columns == ["bucket", "low", "high", "samples", "top1"]
            # first answers: group a box, norm, apps/odd id all hit; group b poly hits, absent abstains
            # (a hit on an absent target), fmt has none
            assert breakdown.data == [["group", "a", 3, 100.0], ["group", "b", 3, 200 / 3]]
        else:
            assert breakdown.columns == ["label", "value", "samples", "top1", f"oracle@{K}"]
            assert sizes.columns[-1] == f"oracle@{K}"


def test_sample_columns_have_no_duplicate_for_k1() -> None:
    assert sample_columns(1).count("hit@1") == 1
    assert len(set(sample_columns(5))) == len(sample_columns(5))


# ---------------------------------------------------------------------------------------------
# TensorBoard, CSV / no logger, import guard


def test_tensorboard_gets_one_overlay_per_id(tmp_path: Path, suite: Suite) -> None:
    pytest.importorskip("tensorboard")
    from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger
    from tensorboard.backend.event_processing.event_accumulator import (  # type: ignore[import-untyped]
        EventAccumulator,
    )

    tb = TensorBoardLogger(save_dir=str(tmp_path), name="tb")
    csv = CSVLogger(save_dir=str(tmp_path), name="csv")
    written = log_evaluation(
        [csv, tb], step=5, benchmark=DemoBench(), log_dir=tmp_path / "files", **suite.kwargs()
    )
    assert written == [] and not (tmp_path / "files").exists()
    tb.experiment.flush()
    acc = EventAccumulator(tb.log_dir, size_guidance={"images": 0})
    acc.Reload()
    assert sorted(acc.Tags()["images"]) == sorted(f"grounding/demo/{sid}" for sid in suite.shown)
    for sid in suite.shown:
        (event,) = acc.Images(f"grounding/demo/{sid}")
        expected = thumbnail(_open(suite.samples[sid].image_path))[0].size
        assert event.step == 5 and (event.width, event.height) == expected
    tb.experiment.close()


def test_csv_logger_gets_jpeg_files(tmp_path: Path, suite: Suite) -> None:
    from pytorch_lightning.loggers import CSVLogger

    csv = CSVLogger(save_dir=str(tmp_path), name="csv")
    written = log_evaluation([csv], step=12, benchmark=DemoBench(), log_dir=None, **suite.kwargs())
    folder = Path(csv.log_dir) / "grounding" / "demo" / "step_12"
    assert written == [folder / f"{safe_file_name(sid)}.jpg" for sid in suite.shown]
    assert folder / "apps_odd_id.jpg" in written
    for sid, path in zip(suite.shown, written, strict=True):
        with Image.open(path) as im:
            assert im.format == "JPEG"
            assert im.size == thumbnail(_open(suite.samples[sid].image_path))[0].size


def test_no_logger_writes_under_log_dir(tmp_path: Path, suite: Suite) -> None:
    written = log_evaluation([], step=3, benchmark=DemoBench(), log_dir=tmp_path, **suite.kwargs())
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        f"grounding/demo/step_3/{safe_file_name(sid)}.jpg" for sid in suite.shown
    ]
    assert all(p.is_file() for p in written)
    assert log_evaluation([], step=3, benchmark=DemoBench(), log_dir=None, **suite.kwargs()) == []


def test_colliding_file_names_get_a_suffix(tmp_path: Path, suite: Suite) -> None:
    box = suite.samples["box"]
    twins = {
        sid: Sample("demo", sid, box.image_path, box.image_size, "x", box.region) for sid in ("a b", "a_b")
    }
    results = [score_sample(s, Prediction("demo", s.id, (Candidate((1, 1)),)), k=1) for s in twins.values()]
    written = log_evaluation(
        [], step=0, benchmark=DemoBench(), entry={}, samples=twins, results=results,
        table_ids=["a b", "a_b"], k=1, strategy="first", log_dir=tmp_path,
    )  # fmt: skip
    assert [p.name for p in written] == ["a_b.jpg", "a_b-2.jpg"]


def test_gge_loggers_import_without_wandb_or_lightning() -> None:
    code = (
        "import sys\n"
        "sys.modules['wandb'] = None  # any import of wandb now raises ImportError\n"
        "import gge.loggers.dispatch, gge.loggers.wandb\n"
        "assert 'pytorch_lightning' not in sys.modules and 'lightning' not in sys.modules\n"
        "try:\n"
        "    gge.loggers.wandb.log_evaluation_wandb(None, step=0, benchmark_name='x', title='x', entry={},\n"
        "        samples={}, results=[], table_ids=[], k=1, strategy='first')\n"
        "except ImportError as e:\n"
        "    assert 'pip install wandb' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)
