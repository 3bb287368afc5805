"""Benchmarks outside gge: the ``gge.benchmarks`` entry-point group.

A tiny real package, built and installed here with pip (offline, ``--target``), is picked up by name:
``python eval.py --help`` lists it, ``bench.my_bench.<option>=`` sets its options, and eval scores it
to the hand-counted numbers. Broken plugins installed beside it (an import error, a class that is no
benchmark, a name taken by gge or not matching the class) leave gge working and are named, with their
distribution, when asked for. The checks themselves run in-process on entry points built here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT
from PIL import Image

from gge.benchmarks import BUILTIN, get_benchmark, plugins
from gge.benchmarks.base import BootstrapCI
from gge.benchmarks.plugins import benchmark_origin, entry_point_benchmarks, plugin_error, plugin_problems
from gge.errors import GgeError

GOOD_MODULE = '''
"""A benchmark outside gge: tasks.json of {file, text, box: [x1, y1, x2, y2], kind} over shots/."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from gge.benchmarks.base import (
    Benchmark, BenchmarkOptions, LoadCollector, LoadedBenchmark, TableSpec, image_size_from_header,
    image_under, read_json_list, require_numbers, require_root, require_str,
)
from gge.types import Box, Sample


@dataclass
class MyOptions(BenchmarkOptions):
    kind: str = "all"


class MyBench(Benchmark):
    name = "my_bench"
    title = "My Bench"
    directory = "my_bench"
    options_type = MyOptions
    label_keys = ("kind",)
    tables = (TableSpec("By kind", rows="kind"),)

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        assert isinstance(options, MyOptions)
        require_root(root, self.name)
        out = LoadCollector(self.name, root)
        path = out.file(root / "tasks.json")
        where = str(path)
        for i, rec in enumerate(read_json_list(path)):
            sid = str(i)
            kind = require_str(rec, "kind", where=where, sample_id=sid)
            if options.kind not in ("all", kind):
                continue
            file = require_str(rec, "file", where=where, sample_id=sid)
            image = image_under(root, "shots", file, where=where, sample_id=sid)
            size = image_size_from_header(image, where=where, sample_id=sid)
            text = require_str(rec, "text", where=where, sample_id=sid)
            box = Box(*require_numbers(rec, "box", 4, where=where, sample_id=sid))
            out.add(Sample(self.name, sid, image, size, text, box, {"kind": kind}), f"tasks.json record {i}")
        return out.result({"kind": options.kind})
'''

BAD_MODULE = """
from dataclasses import dataclass, field

from gge.benchmarks.base import Benchmark, BenchmarkOptions, BootstrapCI, TableSpec


class NotABench:
    name = "not_a_bench"


class Misnamed(Benchmark):
    name = "other_name"
    title = "Misnamed"
    directory = "misnamed"
    label_keys = ()
    tables = ()

    def load(self, root, options):
        raise NotImplementedError


class Abstract(Benchmark):
    name = "abstract_bench"
    title = "Abstract"
    directory = "abstract"
    label_keys = ()
    tables = ()


class Clash(Misnamed):
    name = "screenspot_v2"


@dataclass(kw_only=True)
class NoDefault(BenchmarkOptions):
    level: int


@dataclass
class NotAConfig(BenchmarkOptions):
    levels: set[int] = field(default_factory=set)


class BadOptions(Misnamed):
    name = "bad_options"
    options_type = NoDefault


class BadConfig(Misnamed):
    name = "bad_config"
    options_type = NotAConfig


class BadTable(Misnamed):
    name = "bad_table"
    label_keys = ("a",)
    tables = (TableSpec("By b", rows="b"),)


class GoodCI(Misnamed):
    name = "good_ci"
    headline_ci = BootstrapCI(resamples=1, confidence=0.5)


class BcaCI(Misnamed):
    name = "bca_ci"
    headline_ci = BootstrapCI(method="bca")


class NoResamples(Misnamed):
    name = "no_resamples"
    headline_ci = BootstrapCI(resamples=0)


class FloatResamples(Misnamed):
    name = "float_resamples"
    headline_ci = BootstrapCI(resamples=99.5)


class SureCI(Misnamed):
    name = "sure_ci"
    headline_ci = BootstrapCI(confidence=1.0)


class PercentCI(Misnamed):
    name = "percent_ci"
    headline_ci = BootstrapCI(confidence=95)


class TupleCI(Misnamed):
    name = "tuple_ci"
    headline_ci = (9999, 0.95)
"""

BROKEN_ENTRY_POINTS = {
    "broken_bench": "broken_benches.missing:Nope",  # the module imports a package that is not there
    "not_a_bench": "broken_benches.bad:NotABench",
    "misnamed": "broken_benches.bad:Misnamed",
    "abstract_bench": "broken_benches.bad:Abstract",
    "screenspot_v2": "broken_benches.bad:Clash",
    "bad_table": "broken_benches.bad:BadTable",
}


def _package(
    folder: Path, dist: str, version: str, modules: dict[str, str], entry_points: dict[str, str]
) -> Path:
    """A source tree of one package: pyproject.toml (setuptools) and its modules."""
    package = next(iter(modules)).split("/")[0]
    eps = "\n".join(f'{name} = "{value}"' for name, value in entry_points.items())
    (folder / package).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [build-system]
            requires = ["setuptools"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "{dist}"
            version = "{version}"

            [tool.setuptools]
            packages = ["{package}"]

            [project.entry-points."gge.benchmarks"]
            """
        )
        + eps
        + "\n"
    )
    for name, text in modules.items():
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both packages installed with pip into a folder of their own (what PYTHONPATH then names)."""
    tmp = tmp_path_factory.mktemp("plugins")
    good = _package(
        tmp / "good",
        "my-bench-pkg",
        "0.3.1",
        {"my_bench_pkg/__init__.py": GOOD_MODULE},
        {"my_bench": "my_bench_pkg:MyBench"},
    )
    bad = _package(
        tmp / "bad",
        "broken-benches",
        "1.0",
        {
            "broken_benches/__init__.py": "",
            "broken_benches/missing.py": "import no_such_package_for_gge_tests\n",
            "broken_benches/bad.py": BAD_MODULE,
        },
        BROKEN_ENTRY_POINTS,
    )
    target = tmp / "site"
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q"]
    p = subprocess.run(
        [*cmd, "--target", str(target), str(good), str(bad)], capture_output=True, text=True, check=False
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return target


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin's tiny folder: four tasks on one 100 x 80 screenshot."""
    root = tmp_path_factory.mktemp("my_bench")
    (root / "shots").mkdir()
    Image.new("RGB", (100, 80), (255, 255, 255)).save(root / "shots" / "s.png")
    tasks = [
        {"file": "s.png", "text": "ok", "box": [10, 10, 30, 30], "kind": "icon"},
        {"file": "s.png", "text": "cancel", "box": [40, 10, 60, 30], "kind": "icon"},
        {"file": "s.png", "text": "name", "box": [10, 50, 90, 70], "kind": "text"},
        {"file": "s.png", "text": "title", "box": [0, 0, 100, 8], "kind": "text"},
    ]
    (root / "tasks.json").write_text(json.dumps(tasks))
    return root


# Replay answers: hit, miss, hit, miss (by hand against the boxes above).
ANSWERS = [[20, 20], [70, 20], [50, 60], [50, 40]]


def _gge(site: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.slow
def test_an_installed_package_is_a_benchmark_by_name(site: Path, data: Path, tmp_path: Path) -> None:
    p = _gge(site, str(ROOT / "eval.py"), "--help")
    assert p.returncode == 0, p.stderr
    benchmarks = next(line for line in p.stdout.splitlines() if line.startswith("Benchmarks: "))
    assert "my_bench" in benchmarks.removeprefix("Benchmarks: ").split(", ")
    assert "  bench.my_bench.kind=all" in p.stdout.splitlines()
    assert "broken_bench" not in benchmarks  # the broken ones are left out; gge still answers
    left_out = p.stdout.split("Benchmark packages left out (gge.benchmarks entry points):\n", 1)[1]
    assert "  benchmark plugin 'broken_bench" in left_out  # and --help says why

    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"benchmark": "my_bench", "id": str(i), "candidates": [a]}) + "\n"
            for i, a in enumerate(ANSWERS)
        )
    )
    common = [
        "benchmarks=[my_bench]",
        f"bench.my_bench.root={data}",
        f"model.predictions={preds}",
        f"data_root={tmp_path}",
    ]
    p = _gge(site, str(ROOT / "eval.py"), *common, f"output_dir={tmp_path / 'all'}")
    assert p.returncode == 0, p.stderr
    entry = json.loads((tmp_path / "all" / "results.json").read_text())["benchmarks"]["my_bench"]
    assert entry["samples"] == 4 and entry["top1"] == 50.0  # 2 of 4
    (table,) = entry["tables"]
    assert table["title"] == "By kind"
    assert {v: (c["samples"], c["top1"]) for v, c in table["row_avg"].items()} == {
        "icon": (2, 50.0),
        "text": (2, 50.0),
    }
    assert entry["load"]["variant"] == {"kind": "all"}

    # the plugin's own option, set on the command line
    p = _gge(
        site, str(ROOT / "eval.py"), *common, "bench.my_bench.kind=icon", f"output_dir={tmp_path / 'icon'}"
    )
    assert p.returncode == 0, p.stderr
    entry = json.loads((tmp_path / "icon" / "results.json").read_text())["benchmarks"]["my_bench"]
    assert entry["samples"] == 2 and entry["top1"] == 50.0 and entry["load"]["variant"] == {"kind": "icon"}

    # gge's own benchmarks still run beside the broken plugins (one of which claims screenspot_v2)
    assert (
        _gge(
            site,
            "-c",
            "from gge.benchmarks import get_benchmark; print(type(get_benchmark('screenspot_v2')).__name__)",
        ).stdout.strip()
        == "ScreenSpotV2"
    )


PROBE = """
import json
from gge.benchmarks import REGISTRY
from gge.benchmarks.plugins import benchmark_origin, plugin_error, plugin_problems
names = sorted({"my_bench", "screenspot_v2", *BROKEN})
print(json.dumps({
    "registry": sorted(n for n in names if n in REGISTRY),
    "errors": {n: str(plugin_error(n)) if plugin_error(n) else None for n in names},
    "problems": plugin_problems(),
    "origin": {n: benchmark_origin(n) for n in ("my_bench", "screenspot_v2", "broken_bench")},
}))
"""


@pytest.mark.slow
def test_broken_plugins_are_named_with_their_distribution(site: Path) -> None:
    p = _gge(site, "-c", f"BROKEN = {sorted(BROKEN_ENTRY_POINTS)!r}\n{PROBE}")
    assert p.returncode == 0, p.stderr
    got: dict[str, Any] = json.loads(p.stdout)
    assert got["registry"] == ["my_bench", "screenspot_v2"]
    assert got["origin"] == {
        "my_bench": {
            "distribution": "my-bench-pkg",
            "version": "0.3.1",
            "entry_point": "my_bench = my_bench_pkg:MyBench",
        },
        "screenspot_v2": None,
        "broken_bench": None,
    }
    errors = got["errors"]
    assert errors["my_bench"] is None and errors["screenspot_v2"] is None  # gge's own name keeps working
    dist = "of distribution broken-benches 1.0"
    expected = {
        "broken_bench": "cannot import broken_benches.missing:Nope: ModuleNotFoundError: No module named "
        "'no_such_package_for_gge_tests'",
        "not_a_bench": "broken_benches.bad:NotABench is NotABench, not a subclass of "
        "gge.benchmarks.base.Benchmark",
        "misnamed": "Misnamed.name is 'other_name', but the entry point is named 'misnamed': make them equal",
        "abstract_bench": "Abstract is abstract (it does not implement: load)",
        "bad_table": "BadTable: table 'By b' uses ['b'], which are not in label_keys ('a',)",
    }
    for name, why in expected.items():
        ep = f"entry point '{name} = {BROKEN_ENTRY_POINTS[name]}' {dist}"
        assert errors[name] == f"benchmark plugin '{name}' ({ep}): {why}"
    clash = next(line for line in got["problems"] if line.startswith("benchmark plugin 'screenspot_v2'"))
    assert clash.endswith(
        "the name clashes with gge's own benchmark 'screenspot_v2' (gge's is kept): rename the entry point"
    )
    assert len(got["problems"]) == len(BROKEN_ENTRY_POINTS)


def test_get_benchmark_raises_a_broken_plugins_own_error() -> None:
    plugins._BROKEN["__probe__"] = GgeError("probe")
    try:
        with pytest.raises(GgeError, match=r"^probe$"):
            get_benchmark("__probe__")
    finally:
        del plugins._BROKEN["__probe__"]


@pytest.mark.slow
def test_naming_a_broken_plugin_is_one_line_naming_it(site: Path, tmp_path: Path) -> None:
    p = _gge(
        site,
        str(ROOT / "eval.py"),
        "benchmarks=[broken_bench]",
        f"output_dir={tmp_path}",
        f"data_root={tmp_path}",
    )
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert lines[-1] == (
        "gge: error: benchmark plugin 'broken_bench' (entry point 'broken_bench = "
        "broken_benches.missing:Nope' of distribution broken-benches 1.0): cannot import "
        "broken_benches.missing:Nope: ModuleNotFoundError: No module named 'no_such_package_for_gge_tests'"
    )
    # besides the error: only the warning that the plugin claiming screenspot_v2 was dropped
    assert [line for line in lines if "Warning" in line] == [CLASH_WARNING.format(root=ROOT)]


INIT = ROOT / "gge" / "benchmarks" / "__init__.py"
REGISTRY_LINE = next(  # the line that builds the registry: the warnings point there
    i for i, line in enumerate(INIT.read_text().splitlines(), start=1) if line.startswith("REGISTRY:")
)
CLASH_WARNING = (
    f"{{root}}/gge/benchmarks/__init__.py:{REGISTRY_LINE}: UserWarning: benchmark plugin 'screenspot_v2' "
    "(entry point 'screenspot_v2 = broken_benches.bad:Clash' of distribution broken-benches 1.0): the name "
    "clashes with gge's own benchmark 'screenspot_v2' (gge's is kept): rename the entry point"
)


def test_no_plugin_installed_is_no_warning() -> None:
    # the test venv has no gge.benchmarks entry points: importing the registry and --help stay quiet
    assert list(metadata.entry_points(group=plugins.GROUP)) == []
    for args in (["-W", "error", "-c", "import gge.benchmarks"], [str(ROOT / "eval.py"), "--help"]):
        p = subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert (p.returncode, p.stderr) == (0, ""), args


# ----------------------------------------------------------------------------------------------
# The checks, in-process on entry points made here (no distribution: "an unknown distribution").


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module of benchmark classes importable as ``h3_plugin_classes``."""
    (tmp_path / "h3_plugin_classes.py").write_text(GOOD_MODULE + BAD_MODULE + "\nINSTANCE = MyBench()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "h3_plugin_classes"


def _read(eps: dict[str, str]) -> dict[str, Any]:
    found = [metadata.EntryPoint(name, value, plugins.GROUP) for name, value in eps.items()]
    return entry_point_benchmarks(BUILTIN, lambda: found)


@pytest.fixture(autouse=True)
def _restore() -> Any:
    """Reading entry points here replaces the module's record of broken plugins: put it back."""
    saved = dict(plugins._BROKEN), dict(plugins._ORIGINS), list(plugins._PROBLEMS)
    yield
    plugins._BROKEN.clear()
    plugins._BROKEN.update(saved[0])
    plugins._ORIGINS.clear()
    plugins._ORIGINS.update(saved[1])
    plugins._PROBLEMS[:] = saved[2]


def test_a_class_or_an_instance(module: str) -> None:
    got = _read({"my_bench": f"{module}:MyBench"})
    assert list(got) == ["my_bench"] and type(got["my_bench"]).__name__ == "MyBench"
    assert benchmark_origin("my_bench") == {
        "distribution": "unknown",
        "version": "unknown",
        "entry_point": f"my_bench = {module}:MyBench",
    }
    got = _read({"my_bench": f"{module}:INSTANCE"})
    assert type(got["my_bench"]).__name__ == "MyBench" and plugin_problems() == []


@pytest.mark.parametrize(
    ("name", "obj", "why"),
    [
        ("my-bench", "MyBench", "the name 'my-bench' is not a Python identifier"),
        ("class", "MyBench", "the name 'class' is not a Python identifier"),
        ("my_bench", "nothing_here", "cannot import {m}:nothing_here: AttributeError"),
        ("my_bench", "Misnamed", "Misnamed.name is 'other_name', but the entry point is named 'my_bench'"),
        ("ui_vision", "MyBench", "the name clashes with gge's own benchmark 'ui_vision'"),
        ("other_name", "BadTable", "BadTable.name is 'bad_table'"),
        ("bad_table", "BadTable", "table 'By b' uses ['b'], which are not in label_keys ('a',)"),
        ("not_a_bench", "NotABench", "{m}:NotABench is NotABench, not a subclass"),
        (
            "bad_options",
            "BadOptions",
            "BadOptions.options_type NoDefault is not a config with defaults for every option "
            "(bench.bad_options.<option>=): TypeError: ",
        ),
        ("bad_config", "BadConfig", "NotAConfig is not a config with defaults for every option"),
        (
            "bca_ci",
            "BcaCI",
            "BcaCI.headline_ci.method must be 'percentile' (the only bootstrap method gge computes), "
            "got 'bca'",
        ),
        (
            "no_resamples",
            "NoResamples",
            "NoResamples.headline_ci.resamples must be a whole number >= 1, got 0",
        ),
        ("float_resamples", "FloatResamples", "headline_ci.resamples must be a whole number >= 1, got 99.5"),
        ("sure_ci", "SureCI", "SureCI.headline_ci.confidence must be a number between 0 and 1, got 1.0"),
        ("percent_ci", "PercentCI", "headline_ci.confidence must be a number between 0 and 1, got 95"),
        ("tuple_ci", "TupleCI", "TupleCI.headline_ci must be a BootstrapCI or None, got (9999, 0.95)"),
    ],
)
def test_what_is_wrong_is_named(module: str, name: str, obj: str, why: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _read({name: f"{module}:{obj}"}) == {}
    (problem,) = [line for line in plugin_problems() if line.startswith(f"benchmark plugin '{name}'")]
    # a clash with gge's own name is a warning too (get_benchmark gives gge's, and no error says so)
    assert [(w.category, str(w.message)) for w in caught] == (
        [(UserWarning, problem)] if name in BUILTIN else []
    )
    assert why.format(m=module) in problem
    ep = f"(entry point '{name} = {module}:{obj}' of an unknown distribution)"
    assert problem.startswith(f"benchmark plugin '{name}' {ep}: ")
    error = plugin_error(name)
    if name in BUILTIN:
        assert error is None  # gge's own keeps the name
    else:
        assert error is not None and str(error) == problem


def test_a_headline_interval_gge_can_compute_is_accepted(module: str) -> None:
    got = _read({"good_ci": f"{module}:GoodCI"})
    assert list(got) == ["good_ci"] and plugin_problems() == []
    assert got["good_ci"].headline_ci == BootstrapCI(resamples=1, confidence=0.5, method="percentile")


def test_a_name_claimed_twice_loads_neither(module: str) -> None:
    found = [
        metadata.EntryPoint("my_bench", f"{module}:MyBench", plugins.GROUP),
        metadata.EntryPoint("my_bench", f"{module}:INSTANCE", plugins.GROUP),
    ]
    assert entry_point_benchmarks(BUILTIN, lambda: found) == {}
    error = plugin_error("my_bench")
    assert error is not None and "claimed by 2 entry points" in str(error) and "none is loaded" in str(error)
