"""Run from a clone's root, ``gge.callbacks`` and ``gge.configs`` import as they do from the wheel.

After ``pip install .`` (not editable), ``python eval.py`` or a README snippet run in the clone imports
the clone's ``gge/`` folder, which holds neither package (they live in ``callbacks/`` and ``configs/``).
The subprocess below is that situation: site-packages on the path without its ``.pth`` hooks (so no
editable-install finder), the clone's root first.
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

pytestmark = pytest.mark.slow

PROBE = """
import sys
sys.path[:0] = [{root!r}]
sys.path += {sites!r}
import gge
assert gge.__file__.startswith({root!r}), gge.__file__
from gge.callbacks import GroundingEvalCallback, GroundingEvalTrainerCallback
import gge.callbacks.grounding
import gge.configs
from gge.models.factory import preset_names
print(GroundingEvalCallback.__module__, GroundingEvalTrainerCallback.__name__, gge.configs.__path__[0])
print(len(preset_names()))
"""


def test_callbacks_and_configs_import_from_the_clone_root_without_an_installed_finder() -> None:
    sites = [p for p in site.getsitepackages() if Path(p).is_dir()]
    code = PROBE.format(root=str(ROOT), sites=sites)
    proc = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    module, trainer_cls, configs = first.split()
    assert module == "gge.callbacks.grounding"
    assert trainer_cls == "GroundingEvalTrainerCallback"
    assert Path(configs) == ROOT / "configs"
    assert int(second) == len(list((ROOT / "configs" / "models").glob("*.yaml")))
