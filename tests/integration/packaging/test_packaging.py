"""The wheel holds every package, preset and asset of the source tree (what `pip install .` ships)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from paths import ROOT

SKIP = shutil.ignore_patterns(
    ".git", ".venv*", "outputs", "runs", "build", "dist", "__pycache__", "*.egg-info", ".*_cache", "tests"
)


def shipped(root: Path) -> set[str]:
    """What the wheel must hold, from the source tree: its files under their installed names."""
    want = {str(p.relative_to(root)) for p in (root / "gge").rglob("*") if p.is_file()}
    for folder in ("callbacks", "configs"):  # pyproject's package-dir: installed as gge.<folder>
        want |= {f"gge/{p.relative_to(root)}" for p in (root / folder).rglob("*") if p.is_file()}
    return {w for w in want if "__pycache__" not in w and not w.endswith(".pyc")}


def test_the_wheel_holds_every_module_preset_and_asset(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=SKIP)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("gge-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    want = shipped(src)
    assert not want - names, f"left out of the wheel: {sorted(want - names)}"
    # the kinds of file the run needs at run time are among them (so `want` is not vacuous)
    for needed in (
        "gge/configs/models/qwen2_5_vl.yaml",
        "gge/callbacks/grounding.py",
        "gge/demo/checkpoints/demo_policy.pt",
        "gge/py.typed",
        "gge/report/assets/report.css",
        "gge/integrations/verl/__init__.py",
    ):
        assert needed in names, needed
    extra = {n for n in names if n.startswith("gge/") and not n.endswith("/")} - want
    assert not extra, f"the wheel holds files the source tree lacks: {sorted(extra)}"
