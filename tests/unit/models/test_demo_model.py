"""The demo proposer/critic: sampling maths, the policy contract, checkpoints, RL steps, training with gge."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from PIL import Image, ImageDraw

from gge.demo.train import DemoRL, TrainConfig, train
from gge.errors import GgeError
from gge.models.base import Critic, Proposer
from gge.models.demo import (
    CELL,
    DemoNet,
    DemoPolicy,
    cell_points,
    default_checkpoint,
    load_demo_policy,
    make_view,
    sample_cells,
    save_checkpoint,
    widget_scale,
)
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box, Sample


@pytest.fixture
def net() -> DemoNet:
    torch.manual_seed(0)
    return DemoNet()


def _screen(tmp_path: Path, size: tuple[int, int] = (640, 360)) -> tuple[Path, Box]:
    """A white screen with one dark button; its box."""
    im = Image.new("RGB", size, "white")
    box = Box(400, 40, 480, 70)
    ImageDraw.Draw(im).rectangle((400, 40, 480, 70), fill=(26, 115, 232))
    path = tmp_path / "screen.png"
    im.save(path)
    return path, box


def test_sample_cells_are_distinct_with_plackett_luce_log_probabilities() -> None:
    torch.manual_seed(1)
    logits = torch.randn(7, 9, requires_grad=True)
    idx, logp = sample_cells(logits, 6)
    assert len(set(idx.tolist())) == 6
    p = torch.softmax(logits.detach().flatten(), 0)
    left, expected = 1.0, []
    for i in idx.tolist():
        expected.append(math.log(float(p[i]) / left))
        left -= float(p[i])
    assert torch.allclose(logp.detach(), torch.tensor(expected), atol=1e-5)
    logp.sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()


def test_sample_cells_gradient_stays_finite_when_one_cell_holds_all_the_mass() -> None:
    logits = torch.zeros(20)
    logits[3] = 60.0
    logits.requires_grad_(True)
    idx, logp = sample_cells(logits, 5, torch.Generator().manual_seed(0))
    assert idx[0] == 3 and torch.isfinite(logp).all()
    logp.sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().max()) < 10


def test_cell_points_of_edge_cells_stay_on_the_screen() -> None:
    """A 360-px phone is 22.5 cells wide: points of the last column must not fall past its edge."""
    jitter = torch.tensor([[0.999, 0.999], [0.0, 0.999]])
    pts = cell_points(torch.tensor([22, 23]), 23, jitter, extent=(360.0, 40.0))
    assert pts[0, 0] < 360 and pts[0, 1] < 16 and pts[1, 1] < 40
    assert pts[1].tolist() == pytest.approx([0.0, 16 + 0.999 * 16])
    view = make_view(Image.new("RGB", (360, 780)))
    assert view.extent == (360.0, 780.0) and view.cells[0] * CELL > 360


def test_cell_points_lie_inside_their_cells() -> None:
    pts = cell_points(torch.tensor([0, 5, 7]), 5, torch.tensor([[0.0, 0.0], [0.5, 0.5], [0.99, 0.25]]))
    expected = [0.0, 0.0, 0.5 * CELL, 1.5 * CELL, 2.99 * CELL, 1.25 * CELL]
    assert pts.flatten().tolist() == pytest.approx(expected)


def test_view_scale_maps_normalised_pixels_to_the_original_size() -> None:
    view = make_view(Image.new("RGB", (960, 540)), size=(1920, 1080))  # decoded at half size
    assert view.scale == widget_scale(1920, 1080) == 1.5
    assert view.size == (1920, 1080)
    assert view.half.shape == (3, 360, 640) and view.small.shape == (3, 180, 320)


def test_policy_follows_the_protocols_and_is_deterministic_per_sample(net: DemoNet, tmp_path: Path) -> None:
    path, box = _screen(tmp_path)
    samples = [Sample("b", str(i), str(path), (640, 360), f"Click the button {i}", box) for i in range(3)]
    image = Image.open(path).convert("RGB")
    policy = DemoPolicy(net, k=4, seed=7)
    assert isinstance(policy, Proposer) and isinstance(policy, Critic)
    together = policy.predict_images(samples, [image] * 3)
    alone = policy.predict_images(samples[2:], [image])
    # same candidates and scores in any batch (the ledger's seconds and batch are the batch's own)
    assert replace(together[2], costs=()) == replace(alone[0], costs=())
    assert [p.id for p in together] == ["0", "1", "2"]
    for pred in together:
        assert len(pred.candidates) == 4
        assert len({c.point for c in pred.candidates}) == 4  # distinct cells
        for c in pred.candidates:
            assert c.point is not None and 0 <= c.point[0] < 640 and 0 <= c.point[1] < 360
            assert c.score is not None and math.isfinite(c.score)
    # propose + rank gives what predict_images gives
    props = policy.propose(samples, [image] * 3)
    judged = policy.rank(samples, [image] * 3, props)
    assert [c.point for c in props[1].candidates] == [c.point for c in together[1].candidates]
    assert list(judged[1].scores) == pytest.approx([c.score for c in together[1].candidates], abs=1e-5)
    assert DemoPolicy(net, k=4, seed=8).predict_images(samples[:1], [image])[0] != together[0]


def test_policy_points_follow_the_original_size_when_the_pipeline_downscaled(net: DemoNet) -> None:
    policy = DemoPolicy(net, k=5, seed=0)
    s = Sample("b", "0", "", (2560, 1440), "Click the star icon", Box(0, 0, 9, 9))
    full = policy.predict_images([s], [Image.new("RGB", (2560, 1440), "white")])[0]
    small = policy.predict_images([s], [Image.new("RGB", (1280, 720), "white")])[0]
    assert [c.point for c in full.candidates] == [c.point for c in small.candidates]
    assert all(c.point is not None and c.point[0] < 2560 for c in full.candidates)


def test_checkpoint_round_trip_and_clear_errors(net: DemoNet, tmp_path: Path) -> None:
    path = save_checkpoint(net, tmp_path / "m.pt", {"note": "x"})
    loaded = load_demo_policy(path, k=3)
    assert loaded.settings()["weights_sha256"] == DemoPolicy(net).settings()["weights_sha256"]
    assert loaded.settings()["checkpoint"] == str(path) and loaded.k == 3
    with pytest.raises(GgeError, match=r"demo checkpoint not found: .*nope\.pt"):
        load_demo_policy(tmp_path / "nope.pt")
    with pytest.raises(GgeError, match="is a folder, not a file"):
        load_demo_policy(tmp_path)
    torch.save(
        {"format": "gge-demo/1", "config": {"dim": 8, "bogus": 1}, "state_dict": {}}, tmp_path / "odd.pt"
    )
    with pytest.raises(GgeError, match=r"odd\.pt: weights or sizes do not fit"):
        load_demo_policy(tmp_path / "odd.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(GgeError, match=r"bad\.pt: not a gge demo checkpoint"):
        load_demo_policy(bad)
    torch.save({"format": "other"}, tmp_path / "other.pt")
    with pytest.raises(GgeError, match="gge-demo/1"):
        load_demo_policy(tmp_path / "other.pt")


def test_rl_steps_move_the_proposer_towards_the_rewarded_element(tmp_path: Path) -> None:
    """The sign of the policy gradient: a few steps on one screen raise the mass on the target."""
    torch.manual_seed(0)
    path, box = _screen(tmp_path)
    sample = Sample("b", "0", str(path), (640, 360), "Click the blue button", box)
    module = DemoRL(TrainConfig(sets=8, k=8, lr=1e-2))
    view = make_view(Image.open(path), (640, 360))
    opt = module.configure_optimizers()

    def target_mass() -> float:
        with torch.no_grad():
            logits = module.net.cell_logits(view.small, module.net.instruction([sample.instruction]))[0]
        p = torch.softmax(logits.flatten(), 0).reshape(logits.shape)
        x1, y1, x2, y2 = (int(v / view.scale // CELL) for v in (box.x1, box.y1, box.x2, box.y2))
        return float(p[y1 : y2 + 1, x1 : x2 + 1].sum())

    before = target_mass()
    for _ in range(15):
        opt.zero_grad()
        loss, _stats = module._screen_loss(view, [sample])
        loss.backward()
        opt.step()
    assert target_mass() > 3 * before


@pytest.mark.slow
def test_training_with_the_callback_logs_metrics_each_epoch_and_saves_a_loadable_checkpoint(
    demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tiny run of the real recipe: Trainer.fit, GroundingEvalCallback every epoch, CSV, checkpoint."""
    monkeypatch.setenv("GGE_CACHE", str(tmp_path / "cache"))
    config = TrainConfig(seeds=(1001,), per_benchmark=12, epochs=2, steps_per_epoch=2, eval_samples=2)
    meta = train(config, tmp_path / "run", data_root=demo_suite)
    assert meta["epochs_run"] == 2
    assert "grounding/mean/top1" in meta["final_callback_metrics"]
    assert "grounding/screenspot_pro/oracle@5" in meta["final_callback_metrics"]
    rows = list(csv.DictReader((tmp_path / "run" / "logs" / "version_0" / "metrics.csv").open()))
    evaluated = [r for r in rows if r.get("grounding/mean/top1")]
    assert [int(r["epoch"]) for r in evaluated] == [0, 1]
    assert any(r.get("train/hit") for r in rows)
    trained = load_demo_policy(tmp_path / "run" / "demo_policy.pt").net.state_dict()
    torch.manual_seed(config.seed)  # the weights fit started from (seed_everything(seed), then DemoNet())
    initial = DemoNet().state_dict()
    assert trained.keys() == initial.keys()
    assert any(not torch.equal(trained[k], initial[k]) for k in initial)  # 4 RL steps moved them
    summary = json.loads((tmp_path / "run" / "train_summary.json").read_text())
    assert summary["train"]["seeds"] == [1001]


def test_eval_picks_the_demo_model_from_a_pt_checkpoint(
    net: DemoNet, demo_suite: Path, tmp_path: Path
) -> None:
    ckpt = save_checkpoint(net, tmp_path / "mine.pt")
    cfg = parse_args(
        [f"ckpt={ckpt}", f"data_root={demo_suite}", "benchmarks=[ui_i2e_bench]", "max_samples=4"]
    )
    assert cfg.model.name == "demo"
    doc = run(cfg, out=io.StringIO())
    assert doc["model"]["checkpoint"] == str(ckpt)


def test_the_shipped_checkpoint_is_the_default_model() -> None:
    assert default_checkpoint().is_file()
    assert parse_args([]).model.name == "demo"
    assert parse_args(["model.predictions=p.jsonl"]).model.name == "replay"  # the file implies replay
    assert load_demo_policy().settings()["checkpoint"] == str(default_checkpoint())


@pytest.mark.slow
def test_training_logs_to_wandb_offline_and_finishes_its_run(
    demo_suite: Path, wandb_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wandb_reader import find_run_dirs, read_run

    monkeypatch.setenv("GGE_CACHE", str(wandb_env / "cache"))
    config = TrainConfig(seeds=(1001,), per_benchmark=12, epochs=1, steps_per_epoch=2, eval_samples=2)
    train(config, wandb_env / "run", logger="wandb", data_root=demo_suite)
    (run_dir,) = find_run_dirs(wandb_env / "run")
    run = read_run(run_dir)  # waits for the exit record: the run was finished
    assert {"grounding/mean/top1", "grounding/mean/oracle@5", "train/hit"} <= run.keys()
    assert run.tables("grounding/screenspot_v2/samples")


def test_a_checkpoint_file_that_is_not_a_demo_checkpoint_is_named_in_the_error(
    demo_suite: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "model.ckpt"
    bad.write_bytes(b"\x00" * 16)
    cfg = parse_args([f"ckpt={bad}", f"data_root={demo_suite}", f"output_dir={tmp_path / 'o'}"])
    assert cfg.model.name == "demo"
    with pytest.raises(GgeError, match=r"model\.ckpt: not a gge demo checkpoint"):
        run(cfg, out=io.StringIO())
