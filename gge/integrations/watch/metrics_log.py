"""Logging each evaluated step's scalars: the ``metrics.csv`` rows and the one W&B run of a watcher."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gge.documents.files import atomic_write
from gge.errors import GgeError
from gge.integrations.watch.state import _run_id, _State

METRICS_FILE = "metrics.csv"
"""The per-step scalars in the output folder."""

STEP_KEY = "trainer/global_step"
"""The W&B step metric (Lightning's, so the watcher's curves line up with the gge callback's)."""


def _write_metrics_csv(path: Path, step: int, scalars: Mapping[str, float], subset: str = "") -> None:
    """Put ``step``'s row into the CSV (replacing an earlier row of that step), sorted by step.

    ``subset`` is the step's :func:`gge.report.markdown.subset_text` ("" for a full run).
    """
    rows: list[dict[str, str]] = []
    header: list[str] = ["step"]
    if path.is_file():
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            header = list(reader.fieldnames or header)
            rows = [r for r in reader if r.get("step") != str(step)]
    header += [k for k in ("subset", *sorted(scalars)) if k not in header]
    rows.append({"step": str(step), "subset": subset, **{k: repr(float(v)) for k, v in scalars.items()}})
    rows.sort(key=lambda r: int(r["step"]))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, buf.getvalue())


class _LoggerError(GgeError):
    """The logger failed (not the checkpoint): the watcher stops rather than count it as a failure."""


class _WandbRun:
    """One W&B run for the watcher's life, opened at the first row, resumed by id after a restart."""

    def __init__(self, out: Path, project: str, state: _State, name: str) -> None:
        self.out, self.project, self.state, self.name = out, project, state, name
        self._logger: Any = None
        self._env: list[str] = []

    def _open(self) -> Any:
        from pytorch_lightning.loggers import WandbLogger

        if not self.state.data.get("wandb_run_id"):
            self.state.data["wandb_run_id"] = _run_id()
            self.state.save()
        # table images and artifacts would go under the home folder: keep them with the run
        for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR"):
            if var not in os.environ:
                os.environ[var] = str((self.out / "wandb").resolve())
                self._env.append(var)
        logger = WandbLogger(
            project=self.project,
            save_dir=str(self.out),
            name=self.name,
            id=self.state.data["wandb_run_id"],
            resume="allow",
        )
        run = logger.experiment
        run.define_metric(STEP_KEY)
        run.define_metric("grounding/*", step_metric=STEP_KEY)
        logger.log_hyperparams(
            {"watch": {"dir": self.state.data["dir"], "eval_args": self.state.data["eval_args"]}}
        )
        return logger

    def log(self, step: int, scalars: Mapping[str, float]) -> None:
        try:
            if self._logger is None:
                self._logger = self._open()
            self._logger.log_metrics(dict(scalars), step=step)
        except Exception as e:
            if not type(e).__module__.startswith("wandb"):
                raise
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise _LoggerError(
                f"--logger wandb: {first} (the results are in {self.out}); run `wandb login`, or set "
                "WANDB_MODE=offline and sync later with `wandb sync`"
            ) from None

    def close(self) -> None:
        if self._logger is not None:
            self._logger.experiment.finish()
            self._logger = None
        for var in self._env:
            os.environ.pop(var, None)
        self._env = []
