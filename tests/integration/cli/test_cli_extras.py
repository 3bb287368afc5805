"""Smaller things a user of eval.py sees: --help, the progress bar, Lightning's noise, W&B's files."""

from __future__ import annotations

import io
import logging
import os
import sys
import warnings
from pathlib import Path

import pytest

from gge.cli.eval import main
from gge.run.settings import parse_args
from gge.run.standalone import run

REPLAY = ["benchmarks=[screenspot_v2,osworld_g]", "max_samples=3"]


def test_help_lists_every_key_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    for expected in (
        "  k=5",
        "  selection=critic",
        "  resume=true",
        "  strict_images=false",
        "  dry_run=false",
    ):
        assert expected in lines
    assert "  trainer.accelerator=auto" in lines and "  bench.screenspot_pro.language=en" in lines
    assert any(line.startswith("Models (model=): demo, replay, gta1") for line in lines)
    assert ">>>" not in text  # the module's doctest is not help


def test_progress_bar_names_the_benchmark_and_lightning_tips_are_gone(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    args = [f"data_root={demo_suite}", f"output_dir={tmp_path}", *REPLAY]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(parse_args([*args, f"model.predictions={demo_suite / 'predictions.jsonl'}"]), out=io.StringIO())
    captured = capsys.readouterr()
    err = captured.out + captured.err  # Lightning's tqdm bar writes to stdout
    assert "Predicting screenspot_v2" in err and "Predicting osworld_g" in err
    assert "DataLoader" not in err
    assert not any("Tip:" in r.getMessage() for r in caplog.records)
    assert not any("LeafSpec" in str(w.message) for w in caught)
    # the tip filter is removed after the run
    assert not any(logging.getLogger("pytorch_lightning.utilities.rank_zero").filters)


def test_wandb_offline_files_stay_under_the_run_folder(
    demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("wandb")
    for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "cfg"))
    out = tmp_path / "run"
    args = [f"data_root={demo_suite}", f"output_dir={out}", *REPLAY, "logger=wandb", "table_samples=2"]
    try:
        run(parse_args([*args, f"model.predictions={demo_suite / 'predictions.jsonl'}"]), out=io.StringIO())
    finally:
        sys.modules["wandb"].teardown()
    staged = [p for p in (out / "wandb" / "artifacts" / "staging").iterdir() if _is_image(p)]
    assert len(staged) == 2 * 2  # the tables' screenshots: table_samples=2 per benchmark, 2 benchmarks
    home = tmp_path / "home"
    assert not home.exists() or not [p for p in home.rglob("*") if p.is_file() and _is_image(p)]
    assert "WANDB_DATA_DIR" not in os.environ  # set for the run only


def _is_image(path: Path) -> bool:
    from PIL import Image

    try:
        with Image.open(path):
            return True
    except OSError:
        return False
