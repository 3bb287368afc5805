"""What eval.py says of plugins: --help offers only the options a plugin has; a broken one, its own error.

The plugins are installed by hand (a ``*.dist-info`` folder with ``entry_points.txt`` on ``PYTHONPATH``,
which is all ``importlib.metadata`` reads), so no build is needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths import ROOT

MODULE = """
from dataclasses import dataclass

from gge.benchmarks.base import Benchmark, BenchmarkOptions, TableSpec


@dataclass
class Options(BenchmarkOptions):
    kind: str = "all"


class Plain(Benchmark):
    name = "plain_bench"
    title = "Plain"
    directory = "plain"
    options_type = Options
    label_keys = ("kind",)
    tables = (TableSpec("By kind", rows="kind"),)

    def load(self, root, options):
        raise NotImplementedError
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good plugin (``plain_bench``, no Hub copies) and a broken one (``my_bench``: does not import)."""
    site = tmp_path_factory.mktemp("site")
    (site / "plain_pkg.py").write_text(MODULE)
    (site / "broken_pkg.py").write_text("import no_such_package_for_gge_tests\n")
    info = site / "msg_benches-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: msg-benches\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [gge.benchmarks]
            plain_bench = plain_pkg:Plain
            my_bench = broken_pkg:MyBench
            """
        )
    )
    return site


def _eval(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(ROOT / "eval.py"), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=120)


def test_help_offers_no_hub_copy_options_for_a_plugin_without_copies(site: Path) -> None:
    p = _eval(site, "--help")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    plain = [line for line in lines if line.startswith("  bench.plain_bench.")]
    assert plain == ["  bench.plain_bench.root=null", "  bench.plain_bench.kind=all"]
    # gge's benchmarks with Hub copies keep them, those without none
    assert "  bench.screenspot_v2.source=auto" in lines and "  bench.screenspot_v2.release_root=null" in lines
    without = ("  bench.records.source", "  bench.ui_vision.source")
    assert not [line for line in lines if line.startswith(without)]


def test_a_broken_plugin_given_its_options_gets_its_own_error(site: Path, tmp_path: Path) -> None:
    p = _eval(site, "benchmarks=[my_bench]", "bench.my_bench.kind=icon", f"output_dir={tmp_path}")
    assert p.returncode == 2
    assert p.stderr.splitlines()[-1] == (
        "gge: error: bench.my_bench.kind: benchmark plugin 'my_bench' (entry point 'my_bench = "
        "broken_pkg:MyBench' of distribution msg-benches 0.1): cannot import broken_pkg:MyBench: "
        "ModuleNotFoundError: No module named 'no_such_package_for_gge_tests'"
    )
    assert "BenchConfig" not in p.stderr
