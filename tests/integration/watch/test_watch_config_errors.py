"""``gge watch`` telling configuration errors from transient ones, on tiny real Qwen3-VL checkpoints.

Each evaluation is the real eval path (1 benchmark, 2 samples). A configuration error is made the
way a user meets it: a checkpoint in a folder whose names match none of the families sharing
``model_type: qwen3_vl`` (eval refuses to guess); the correction is ``model=qwen3_vl``. A transient
error, a logger error and Ctrl-C are raised where they happen in a real run: in the middle of the
evaluation (after a sample is written), by W&B without an API key, and by an interrupt there.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

from test_watch import SMALL  # the same tiny-model eval arguments
from tiny_checkpoints import build_tiny_qwen3_vl

from gge.errors import GgeError
from gge.integrations.watch import METRICS_FILE, WATCH_FILE, watch, watch_main
from gge.integrations.watch import watcher as watch_watcher
from gge.report import markdown
from gge.report.markdown import render_summary
from gge.run import settings
from gge.run.predlog import PredictionLog
from gge.run.runstate import output_dir_lock

pytestmark = pytest.mark.usefixtures("one_thread_per_module")

QWEN3_FAMILIES = 4  # presets listing model_type qwen3_vl: qwen3_vl, mai_ui, ui_venus_1_5, gui_owl_1_5


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny checkpoint written an hour ago."""
    folder = build_tiny_qwen3_vl(tmp_path_factory.mktemp("models") / "seed1", seed=1)
    t = time.time() - 3600
    for p in [folder, *folder.rglob("*")]:
        os.utime(p, (t, t))
    return folder


def _args(demo: Path) -> list[str]:
    return [f"data_root={demo}", *SMALL]


def _state(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / WATCH_FILE).read_text(encoding="utf-8"))
    return data


def _count_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The checkpoints the watcher started an evaluation of (eval's arguments read with ``ckpt=``)."""
    calls: list[str] = []
    real_parse = settings.parse_args

    def counting_parse(argv: Any) -> Any:
        ckpts = [a.split("=", 1)[1] for a in argv if a.startswith("ckpt=")]
        calls.extend(Path(c).name for c in ckpts)
        return real_parse(argv)

    monkeypatch.setattr(settings, "parse_args", counting_parse)
    return calls


def test_an_ambiguous_family_uses_no_attempt_is_said_once_and_the_corrected_restart_is_accepted(
    model: Path,
    demo_suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "run"  # no name says which Qwen3-VL family
    ck = root / "checkpoint-1"
    shutil.copytree(model, ck)
    out = root / "gge_watch"
    calls = _count_runs(monkeypatch)
    args = _args(demo_suite)

    assert watch_main([str(root), "--once", "--attempts", "2", *args]) == 2  # bad input
    said = capsys.readouterr()
    entry = _state(out)["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("config_error", 0)
    assert entry["error"].startswith(f"{ck}: model_type 'qwen3_vl' is shared by {QWEN3_FAMILIES} families")
    assert "no name says which" in entry["error"] and "model=qwen3_vl" in entry["error"]
    lines = [x for x in said.out.splitlines() if "configuration error" in x]
    assert lines == [
        f"gge watch: step 1: configuration error: {entry['error']}; not evaluated again with these eval "
        "arguments (correct them and restart the watcher)"
    ]
    assert "Traceback" not in said.err and calls == ["checkpoint-1"]

    # the same settings again: not evaluated, no attempt, said once
    report = watch(root, args, once=True, attempts=2, stdout=(buf := io.StringIO()))
    assert report.evaluated == [] and report.failed == [] and report.config_errors == {}
    assert calls == ["checkpoint-1"] and _state(out)["steps"]["1"]["attempts"] == 0
    assert [x for x in buf.getvalue().splitlines() if "step 1" in x] == [
        f"gge watch: step 1: not evaluated: configuration error with these eval arguments "
        f"({entry['error']}); correct them and restart, or --retry-failed once the checkpoint is fixed"
    ]

    # corrected: accepted, since nothing was evaluated with the old arguments
    fixed = [*args, "model=qwen3_vl"]
    report = watch(root, fixed, once=True, attempts=2, stdout=(buf := io.StringIO()))
    assert report.evaluated == [1] and not report.failed and not report.config_errors
    assert "the eval arguments changed (then: (none); now: model=qwen3_vl)" in buf.getvalue()
    state = _state(out)
    assert state["eval_args"] == fixed
    assert (state["steps"]["1"]["status"], state["steps"]["1"]["attempts"]) == ("done", 1)
    assert "(attempt 2 of 2)" not in buf.getvalue()
    doc = json.loads((out / "step_1" / "results.json").read_text(encoding="utf-8"))
    assert doc["model"]["adapter"]["preset"] == "qwen3_vl"

    # now something was evaluated with them: other arguments are refused again
    with pytest.raises(GgeError, match=r"now: k=3\) \(step 1 was evaluated with them\)"):
        watch(root, [*fixed, "k=3"], once=True, stdout=io.StringIO())


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ([], "is shared by 4 families"),  # the checkpoint's family
        (["model=qwen3_vl", "cluster_radius=-1"], "cluster_radius must be >= 0, got -1"),  # a bad value
    ],
)
def test_a_polling_watcher_does_not_retry_a_configuration_error(
    model: Path,
    demo_suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    error: str,
) -> None:
    root = tmp_path / "run"
    shutil.copytree(model, root / "checkpoint-1")
    calls = _count_runs(monkeypatch)
    scans: list[int] = []
    real_scan = watch_watcher._Watcher.scan

    def scan_then_stop(self: Any, skip: set[int]) -> Any:
        scans.append(1)
        if len(scans) > 6:  # six scans, with the polls between them: then Ctrl-C
            raise KeyboardInterrupt
        return real_scan(self, skip)

    monkeypatch.setattr(watch_watcher._Watcher, "scan", scan_then_stop)
    buf = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        watch(root, [*_args(demo_suite), *extra], poll_s=0.01, attempts=3, stdout=buf)
    assert calls == ["checkpoint-1"]  # tried once, not at every scan
    assert [x for x in buf.getvalue().splitlines() if "configuration error" in x and error in x] != []
    assert len([x for x in buf.getvalue().splitlines() if "configuration error" in x]) == 1
    entry = _state(root / "gge_watch")["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("config_error", 0) and error in entry["error"]


def _failing_append(
    monkeypatch: pytest.MonkeyPatch, error: BaseException, *, times: int = 10**6
) -> list[int]:
    """Make step 1's evaluation raise ``error`` right after it writes a sample, ``times`` times."""
    raised: list[int] = []
    real_append = PredictionLog.append

    def append(self: PredictionLog, records: Any) -> None:
        real_append(self, records)
        if "step_1" in str(self.path) and len(raised) < times:
            raised.append(1)
            raise error

    monkeypatch.setattr(PredictionLog, "append", append)
    return raised


@pytest.mark.parametrize(
    "error",
    [RuntimeError("CUDA out of memory"), GgeError("image a.png: cannot decode it")],
    ids=["runtime", "gge-error-after-a-sample"],
)
def test_an_error_in_the_middle_of_an_evaluation_is_transient_and_retried(
    model: Path, demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    root = tmp_path / "Qwen3-VL-tiny-grpo"
    shutil.copytree(model, root / "checkpoint-1")
    shutil.copytree(model, root / "checkpoint-2")
    out = root / "gge_watch"
    args = _args(demo_suite)
    _failing_append(monkeypatch, error)

    report = watch(root, args, once=True, attempts=2, stdout=(buf := io.StringIO()))
    assert report.failed == [1] and report.evaluated == [2] and report.config_errors == {}
    entry = _state(out)["steps"]["1"]
    shown = str(error) if isinstance(error, GgeError) else f"RuntimeError: {error}"
    assert (entry["status"], entry["attempts"], entry["error"]) == ("retry", 1, shown)
    assert f"step 1: failed: {shown}; tried again later" in buf.getvalue()

    report = watch(root, args, once=True, attempts=2, stdout=(buf := io.StringIO()))
    assert report.failed == [1] and "(attempt 2 of 2)" in buf.getvalue()
    assert (_state(out)["steps"]["1"]["status"], _state(out)["steps"]["1"]["attempts"]) == ("failed", 2)
    assert watch(root, args, once=True, attempts=2, stdout=io.StringIO()).failed == []  # left alone
    # both samples were written by the two failed attempts: given new attempts, it finishes
    assert watch_main([str(root), "--once", "--attempts", "2", "--retry-failed", *args]) == 0
    entry = _state(out)["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("done", 1) and "error" not in entry


def test_a_logger_error_uses_no_attempt(
    model: Path, demo_suite: Path, wandb_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = wandb_env / "Qwen3-VL-tiny-grpo"
    shutil.copytree(model, root / "checkpoint-1")
    out = root / "gge_watch"
    args = _args(demo_suite)
    monkeypatch.setenv("WANDB_MODE", "online")  # no API key, no network: W&B refuses
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(wandb_env / "home"))  # no ~/.netrc
    with pytest.raises(GgeError, match=r"--logger wandb: .*API key"):
        watch(root, args, once=True, logger="wandb", stdout=io.StringIO())
    entry = _state(out)["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("retry", 0)
    with (out / METRICS_FILE).open(newline="", encoding="utf-8") as f:
        assert [r["step"] for r in csv.DictReader(f)] == ["1"]  # the evaluation itself finished

    import wandb

    wandb.teardown()  # W&B reads its mode once per process
    monkeypatch.setenv("WANDB_MODE", "offline")
    report = watch(root, args, once=True, logger="wandb", stdout=(buf := io.StringIO()))
    assert report.evaluated == [1] and "(attempt" not in buf.getvalue()
    assert (_state(out)["steps"]["1"]["status"], _state(out)["steps"]["1"]["attempts"]) == ("done", 1)


def test_ctrl_c_during_an_evaluation_uses_no_attempt(
    model: Path, demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "Qwen3-VL-tiny-grpo"
    shutil.copytree(model, root / "checkpoint-1")
    out = root / "gge_watch"
    args = _args(demo_suite)
    raised = _failing_append(monkeypatch, KeyboardInterrupt(), times=1)
    with pytest.raises(KeyboardInterrupt):
        watch(root, args, once=True, attempts=1, stdout=io.StringIO())
    assert raised == [1]
    entry = _state(out)["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("interrupted", 0)

    report = watch(root, args, once=True, attempts=1, stdout=(buf := io.StringIO()))
    assert report.evaluated == [1] and not report.failed  # --attempts 1: the interrupted one was not it
    assert "resuming: 1 samples already finished" in buf.getvalue()
    assert (_state(out)["steps"]["1"]["status"], _state(out)["steps"]["1"]["attempts"]) == ("done", 1)


def _retried_then_done(root: Path, args: list[str], error: str) -> None:
    """Step 1's first attempt failed with ``error``: an attempt used, to be tried again, not config_error."""
    out = root / "gge_watch"
    entry = _state(out)["steps"]["1"]
    assert (entry["status"], entry["attempts"], entry["error"]) == ("retry", 1, error)
    report = watch(root, args, once=True, attempts=2, stdout=(buf := io.StringIO()))
    assert report.evaluated == [1] and not report.config_errors and "(attempt 2 of 2)" in buf.getvalue()
    assert (_state(out)["steps"]["1"]["status"], _state(out)["steps"]["1"]["attempts"]) == ("done", 2)


def _first_attempt(root: Path, args: list[str]) -> tuple[watch_watcher.WatchReport, str]:
    report = watch(root, args, once=True, attempts=2, stdout=(buf := io.StringIO()))
    assert report.failed == [1] and report.config_errors == {} and report.evaluated == []
    return report, buf.getvalue()


def test_a_step_folder_locked_by_another_run_uses_an_attempt_and_is_retried(
    model: Path, demo_suite: Path, tmp_path: Path
) -> None:
    root = tmp_path / "Qwen3-VL-tiny-grpo"
    shutil.copytree(model, root / "checkpoint-1")
    args = _args(demo_suite)
    step_dir = root / "gge_watch" / "step_1"
    with output_dir_lock(step_dir):  # another gge run holds the step's folder
        _, said = _first_attempt(root, args)
    error = _state(root / "gge_watch")["steps"]["1"]["error"]
    assert error.startswith(f"output_dir {step_dir} is in use by another gge run (pid {os.getpid()}, ")
    assert f"step 1: failed: {error}; tried again later" in said
    _retried_then_done(root, args, error)


def test_an_unreadable_annotation_file_uses_an_attempt_and_is_retried(
    model: Path, demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    annotations = demo_suite / "screenspot_v2" / "screenspot_mobile_v2.json"
    failing = [True]
    real_read_text = Path.read_text

    def read_text(self: Path, *a: Any, **kw: Any) -> str:  # the file system fails the read, as NFS can
        if self == annotations and failing:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
        return real_read_text(self, *a, **kw)

    monkeypatch.setattr(Path, "read_text", read_text)
    root = tmp_path / "Qwen3-VL-tiny-grpo"
    shutil.copytree(model, root / "checkpoint-1")
    args = _args(demo_suite)
    _first_attempt(root, args)
    error = _state(root / "gge_watch")["steps"]["1"]["error"]
    assert error == f"{annotations}: cannot read: Input/output error"
    failing.clear()  # the mount is back
    _retried_then_done(root, args, error)


def test_a_server_down_for_the_openai_preset_uses_an_attempt_and_is_retried(
    model: Path, demo_suite: Path, tmp_path: Path
) -> None:
    with socket.socket() as s:  # a loopback port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = tmp_path / "Qwen3-VL-tiny-grpo"
    shutil.copytree(model, root / "checkpoint-1")
    url = f"http://127.0.0.1:{port}/v1"
    args = [
        *_args(demo_suite),
        "model=openai_api",
        f"model.base_url={url}",
        "model.api_model=served",
        "model.max_retries=0",
    ]
    _first_attempt(root, args)
    entry = _state(root / "gge_watch")["steps"]["1"]
    assert (entry["status"], entry["attempts"]) == ("retry", 1)
    # the probe meets it first, in one line (a TransientError: the step is tried again)
    assert entry["error"].startswith(f"probe: nothing answers at {url}/models: is the server up, and is ")
    report = watch(root, args, once=True, attempts=2, stdout=io.StringIO())  # still down: given up
    assert report.failed == [1] and not report.config_errors
    assert (
        _state(root / "gge_watch")["steps"]["1"]["status"],
        _state(root / "gge_watch")["steps"]["1"]["attempts"],
    ) == ("failed", 2)


def test_an_error_finishing_a_step_whose_samples_an_earlier_attempt_logged_is_retried(
    model: Path, demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "Qwen3-VL-tiny-grpo"
    shutil.copytree(model, root / "checkpoint-1")
    args = _args(demo_suite)
    errors: list[BaseException] = [RuntimeError("killed while finishing"), GgeError("cannot write report.md")]
    real_summary = render_summary

    def summary(*a: Any, **kw: Any) -> Any:  # after every sample is logged, before the outputs
        if errors:
            raise errors.pop(0)
        return real_summary(*a, **kw)

    monkeypatch.setattr(markdown, "render_summary", summary)
    _first_attempt(root, args)
    log = root / "gge_watch" / "step_1" / "predictions.rank0.jsonl"
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2  # both samples logged by attempt 1
    report = watch(root, args, once=True, attempts=3, stdout=(buf := io.StringIO()))
    assert "resuming: 2 samples already finished" in buf.getvalue()  # attempt 2 adds no sample
    assert report.failed == [1] and report.config_errors == {}
    entry = _state(root / "gge_watch")["steps"]["1"]
    assert (entry["status"], entry["attempts"], entry["error"]) == ("retry", 2, "cannot write report.md")
    report = watch(root, args, once=True, attempts=3, stdout=io.StringIO())
    assert report.evaluated == [1]
    assert (
        _state(root / "gge_watch")["steps"]["1"]["status"],
        _state(root / "gge_watch")["steps"]["1"]["attempts"],
    ) == ("done", 3)
