"""``gge watch`` on a folder without checkpoints says so, names what it watched, and exits 0.

No checkpoint yet is the normal state of a trainer's folder before its first save, and ``--once`` is
for cron: exit 0 (nothing failed), but the line says which folder was watched, which names were
looked for, and a folder one level down that holds checkpoints (the likely mistake). Polling, it says
so once, not at every scan. The output folder keeps no ``.gge.lock`` once the watcher ends.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gge.integrations.watch import watch, watch_main
from gge.integrations.watch import watcher as watcher_module
from gge.run.runstate import LOCK_FILE

LOOKED_FOR = "no checkpoint-<N>/ or global_step_<N>/ folder directly in it"


def test_an_empty_folder_is_said_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "logs").mkdir()  # a folder, but no checkpoint in it
    assert watch_main([str(tmp_path), "--once"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"gge watch: watching {tmp_path} (once); results in {tmp_path / 'gge_watch'}",
        f"gge watch: no checkpoints in {tmp_path} ({LOOKED_FOR}): nothing to evaluate",
    ]
    assert not (tmp_path / "gge_watch" / LOCK_FILE).exists()


def test_a_run_folder_one_level_down_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run_b" / "global_step_10").mkdir(parents=True)
    (tmp_path / "run_a" / "checkpoint-5").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    assert watch_main([str(tmp_path), "--once"]) == 0
    said = capsys.readouterr().out.splitlines()[1]
    assert said == (
        f"gge watch: no checkpoints in {tmp_path} ({LOOKED_FOR}; {tmp_path / 'run_a'}, {tmp_path / 'run_b'} "
        "hold some): nothing to evaluate"
    )
    (tmp_path / "run_b" / "global_step_10").rmdir()
    assert watch_main([str(tmp_path), "--once"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"gge watch: no checkpoints in {tmp_path} ({LOOKED_FOR}; {tmp_path / 'run_a'} holds some: "
        "watch that folder): nothing to evaluate"
    )


def test_polling_says_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(watcher_module.time, "sleep", sleep)
    out = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        watch(tmp_path, poll_s=5, stdout=out)
    assert sleeps == [5, 5, 5]  # three scans
    assert out.getvalue().splitlines() == [
        f"gge watch: watching {tmp_path} (every 5s until Ctrl-C); results in {tmp_path / 'gge_watch'}",
        f"gge watch: no checkpoints in {tmp_path} ({LOOKED_FOR}): waiting for the trainer's first save",
    ]
    assert not (tmp_path / "gge_watch" / LOCK_FILE).exists()
