"""The budget plot and the cost scalars reach the loggers: real W&B offline (read back from disk), real CSV.

A hand-built results document (``helpers/cost_documents.py``) goes through
:func:`gge.loggers.standalone.log_standalone`, the path of ``python eval.py logger=...``: its scalars
(:func:`gge.scoring.metrics.scalar_metrics`) and each benchmark's views
(:func:`gge.loggers.wandb.log_evaluation_wandb` through Lightning's ``WandbLogger``). The expected
values are the document's, written out by hand.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from cost_documents import cost_document
from omegaconf import OmegaConf
from wandb_reader import OfflineRun, find_run_dirs, read_run

from gge.benchmarks import get_benchmark
from gge.loggers.standalone import log_standalone
from gge.loggers.wandb import BUDGET_COLUMNS, budget_series

B = "osworld_g"
SCALARS = {  # cost(): the total's and the propose stage's figures; refine(): its counts and rates
    f"grounding/{B}/cost/calls_per_sample": 4.0,
    f"grounding/{B}/cost/tokens_per_sample": 2600.0,
    f"grounding/{B}/cost/seconds_per_sample": 0.75,
    f"grounding/{B}/cost/seconds_p90": 0.9,
    f"grounding/{B}/cost/propose/calls_per_sample": 1.0,
    f"grounding/{B}/cost/propose/tokens_per_sample": 1040.3,
    f"grounding/{B}/cost/judge/calls_per_sample": 2.0,
    f"grounding/{B}/cost/refine/seconds_p90": 0.3,
    f"grounding/{B}/refine/before": 62.5,
    f"grounding/{B}/refine/after": 67.5,
    f"grounding/{B}/refine/fixed": 4.0,
    f"grounding/{B}/refine/broken": 2.0,
    f"grounding/{B}/refine/trigger_rate": 75.0,
}
# the budget curves of budget(): (tokens, seconds, Top-1) per j of the critic, the vote and first; each at
# what it pays: the critic its judges included (none at j = 1), the vote and first the proposer's alone
CURVES = {
    "critic": [(840.3, 0.15, 40.0), (1633.7, 0.375, 55.0), (2080.3, 0.5, 62.5)],
    "cluster (voting)": [(840.3, 0.15, 40.0), (940.3, 0.2, 45.0), (1040.3, 0.25, 50.0)],
    "first": [(840.3, 0.15, 40.0), (940.3, 0.2, 40.0), (1040.3, 0.25, 40.0)],
}


def _log(kind: str, output_dir: Path) -> None:
    cfg = OmegaConf.create(
        {"logger": kind, "wandb_project": "gge-test", "table_samples": 2, "seed": 0, "selection": "critic"}
    )
    with ExitStack() as stack:
        log_standalone(
            stack,
            cfg,
            output_dir,
            cost_document(),  # type: ignore[arg-type]
            {B: get_benchmark(B)},
            {B: []},
            [],
            io.StringIO(),
        )


@pytest.fixture(scope="module")
def wandb_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OfflineRun]:
    pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("wandb")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        mp.setenv("WANDB_DISABLE_CODE", "true")
        for var in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            mp.setenv(var, str(root / "wandb"))
        _log("wandb", root / "run")
        (run_dir,) = find_run_dirs(root / "run")
        yield read_run(run_dir)
        if "wandb" in sys.modules:  # drop wandb's process-wide settings read from this environment
            sys.modules["wandb"].teardown()


@pytest.mark.slow  # the offline run: about 8 s on two cores
def test_wandb_gets_the_cost_and_refine_scalars(wandb_run: OfflineRun) -> None:
    logged = {k: v for row in wandb_run.history for k, v in row.items() if k.startswith("grounding/")}
    for key, value in SCALARS.items():
        assert logged[key] == pytest.approx(value), key
    assert logged[f"grounding/{B}/top1"] == 62.5  # beside the other scalars


@pytest.mark.slow
@pytest.mark.parametrize("axis", ["tokens", "seconds"])
def test_wandb_budget_line_series(wandb_run: OfflineRun, axis: str) -> None:
    key = f"grounding/{B}/budget/top1_vs_{axis}"
    chart = wandb_run.config["_wandb"]["visualize"][key]
    assert chart["panel_config"]["panelDefId"] == "wandb/lineseries/v0"
    strings = chart["panel_config"]["stringSettings"]
    assert strings == {"title": f"OSWorld-G: Top-1 vs {axis} per sample", "xname": f"{axis} per sample"}
    (table,) = wandb_run.tables(f"{key}_table")
    assert table.columns == ["step", "lineKey", "lineVal"]
    column = 0 if axis == "tokens" else 1
    expected = [[point[column], name, point[2]] for name, points in CURVES.items() for point in points]
    assert table.data == expected


@pytest.mark.slow
def test_wandb_budget_points_table(wandb_run: OfflineRun) -> None:
    (table,) = wandb_run.tables(f"grounding/{B}/budget/points")
    strategies = ["critic", "first", "mean", "median", "geomedian", "medoid", "cluster"]
    assert table.columns == [*BUDGET_COLUMNS, *strategies, "refined"]
    assert table.data == [
        ["j=1", 1, 840.3, 0.15, 840.3, 0.15, "derived", 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, None],
        [
            "j=2",
            2,
            940.3,
            0.2,
            1633.7,
            0.375,
            "derived",
            60.0,
            55.0,
            40.0,
            42.5,
            42.5,
            44.0,
            47.5,
            45.0,
            None,
        ],
        [
            "j=3",
            3,
            1040.3,
            0.25,
            2080.3,
            0.5,
            "measured",
            70.0,
            62.5,
            40.0,
            45.0,
            47.5,
            47.5,
            46.0,
            50.0,
            None,
        ],
        ["refined", None, 2600.0, 0.75, None, None, "measured", None, *([None] * 7), 67.5],
    ]


def test_csv_gets_the_cost_and_refine_scalars(tmp_path: Path) -> None:
    _log("csv", tmp_path)
    (metrics,) = tmp_path.rglob("metrics.csv")
    with metrics.open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    for key, value in SCALARS.items():
        assert float(row[key]) == pytest.approx(value), key


def test_budget_series_leave_out_points_without_a_cost() -> None:
    budget: dict[str, Any] = cost_document()["benchmarks"][B]["budget"]
    budget["points"][0]["seconds"] = None
    budget["critic"] = None
    xs, ys, keys = budget_series(budget, "seconds")  # type: ignore[arg-type]
    assert keys == ["cluster (voting)", "first"]
    assert xs == [[0.2, 0.25], [0.2, 0.25]] and ys == [[45.0, 50.0], [40.0, 40.0]]


def test_budget_series_give_the_critic_its_own_x_values() -> None:
    budget: dict[str, Any] = cost_document()["benchmarks"][B]["budget"]
    xs, ys, keys = budget_series(budget, "tokens")  # type: ignore[arg-type]
    assert keys == list(CURVES)
    assert xs == [[t for t, _, _ in points] for points in CURVES.values()]
    assert ys == [[y for _, _, y in points] for points in CURVES.values()]
