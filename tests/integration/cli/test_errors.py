"""Bad input gets one clear line, not a traceback (issue 13, point 4)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from paths import ROOT

import gge.run.settings
from gge.cli.eval import main
from gge.run.settings import parse_args
from gge.run.standalone import run


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["benchmarks=[screenspot_v2]", "max_samples=2", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gge: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("decode_max_pixels=0", "decode_max_pixels must be at least 1 (or unset), got 0"),
        ("table_samples=-1", "table_samples must be >= 0, got -1"),
    ],
)
def test_bad_numbers(capsys: pytest.CaptureFixture[str], tmp_path: Path, arg: str, message: str) -> None:
    assert _error(capsys, f"output_dir={tmp_path}", arg) == f"gge: error: {message}"


def test_output_dir_under_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    err = _error(capsys, f"output_dir={tmp_path / 'f' / 'run'}")
    assert err == f"gge: error: output_dir {tmp_path / 'f' / 'run'}: {tmp_path / 'f'} is a file, not a folder"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_gpu_accelerator_without_a_gpu(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = _error(capsys, f"output_dir={tmp_path}", "trainer.accelerator=gpu")
    assert err.startswith("gge: error: trainer: ") and err.endswith(
        "(torch sees no CUDA GPU here: use trainer.accelerator=cpu, or auto)"
    )


@pytest.mark.parametrize(
    ("args", "package", "install"),
    [
        (["logger=wandb"], "wandb", "pip install 'gge[wandb]'"),
        (["logger=tensorboard"], "tensorboard", "pip install tensorboard"),
        (["model=qwen2_5_vl", "ckpt=/models/x"], "transformers", "pip install 'gge[hf]'"),
    ],
)
def test_a_missing_optional_package_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    args: list[str],
    package: str,
    install: str,
) -> None:
    real = gge.run.settings._has_module
    monkeypatch.setattr(gge.run.settings, "_has_module", lambda name: name != package and real(name))
    err = _error(capsys, f"output_dir={tmp_path}", *args)
    assert err.endswith(f"needs the {package} package, which is not installed: {install}")


def test_a_garbage_demo_checkpoint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "model.pt"
    bad.write_bytes(os.urandom(64))
    err = _error(capsys, f"ckpt={bad}", f"output_dir={tmp_path / 'out'}")
    assert err.startswith(f"gge: error: {bad}: not a gge demo checkpoint: torch.load cannot read it (")
    assert "weights_only" not in err


@pytest.mark.slow
def test_wandb_without_a_key_says_the_results_are_written(demo_suite: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(HOME=str(tmp_path), WANDB_CONFIG_DIR=str(tmp_path / "cfg"), WANDB_DIR=str(tmp_path))
    env["NETRC"] = str(tmp_path / "no-netrc")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "eval.py"), f"data_root={demo_suite}", f"output_dir={out}",
         "benchmarks=[screenspot_v2]", "max_samples=2", "logger=wandb"],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("gge: error: logger=wandb: ")
    assert f"The results are written ({out / 'results.json'})" in last and "WANDB_MODE=offline" in last
    assert json.loads((out / "results.json").read_text())["benchmarks"]["screenspot_v2"]["samples"] == 2


def test_a_preset_for_another_model_type_warns(tmp_path: Path) -> None:
    ckpt = tmp_path / "Qwen3-VL-8B-Instruct"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({"model_type": "qwen3_vl"}))
    buf = io.StringIO()
    with pytest.raises(Exception):  # noqa: B017 - the folder holds no weights: loading fails after the warning
        run(
            parse_args(["model=ui_tars_1_5", f"ckpt={ckpt}", "max_samples=1", f"output_dir={tmp_path}"]),
            out=buf,
        )
    assert (
        f"warning: model=ui_tars_1_5 is for UI-TARS-1.5 checkpoints (model_type qwen2_5_vl), but {ckpt} "
        "is a 'qwen3_vl' checkpoint" in buf.getvalue()
    )
