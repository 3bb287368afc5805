"""``gge watch`` on hand-built checkpoint folders: no model is loaded, nothing is evaluated.

A checkpoint here is a folder of files of the right shapes: a ``config.json`` and ``.safetensors``
files written byte by byte (an 8-byte little-endian header length, the JSON header, the tensor
bytes), so each expected length is computed here from the header, not by the watcher. Times are
set on the files and given to the settle rule, never read from the wall clock.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from gge.errors import GgeError, TransientError
from gge.integrations.watch import (
    METRICS_FILE,
    WATCH_FILE,
    Checkpoint,
    evaluated_steps,
    find_checkpoints,
    is_configuration_error,
    pending_reason,
    watch,
)
from gge.integrations.watch import metrics_log as watch_log
from gge.integrations.watch import scan as watch_scan
from gge.integrations.watch import state as watch_state

T0 = 1_700_000_000.0  # the files' time in these tests


def _safetensors(path: Path, tensors: list[tuple[str, int, int]]) -> int:
    """Write a safetensors file of F32 tensors ``(name, start, end)``; returns its full length."""
    header = {
        name: {"dtype": "F32", "shape": [(end - start) // 4], "data_offsets": [start, end]}
        for name, start, end in tensors
    }
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header).encode()
    data_len = max(end for _, _, end in tensors)
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + bytes(data_len))
    return 8 + len(raw) + data_len


def _set_times(root: Path, t: float) -> None:
    for p in [root, *root.rglob("*")]:
        os.utime(p, (t, t))


def _hf_checkpoint(root: Path, step: int = 1) -> Checkpoint:
    folder = root / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "qwen3_vl"}', encoding="utf-8")
    _safetensors(folder / "model.safetensors", [("w", 0, 24)])
    _set_times(folder, T0)
    (ck,) = [c for c in find_checkpoints(root) if c.step == step]
    return ck


# --- which folder of a verl global_step_N/ is the model ------------------------------------------


VERL_DIRS = ["actor/huggingface", "actor/hf", "huggingface", "hf", "."]


@pytest.mark.parametrize(
    ("configs", "weights", "expected"),
    [
        ([], [], "actor/huggingface"),  # nothing yet: where verl writes
        (["actor/huggingface"], [], "actor/huggingface"),  # verl's save: config, no weights
        (["actor/hf"], [], "actor/hf"),
        (["huggingface"], [], "huggingface"),
        (["hf"], [], "hf"),
        (["."], [], "."),
        (["actor/huggingface", "hf"], [], "actor/huggingface"),  # config only: the first
        (["hf", "."], [], "hf"),
        (["actor/huggingface", "huggingface"], ["huggingface"], "huggingface"),  # merged elsewhere
        (["actor/huggingface", "."], ["."], "."),
        (["actor/huggingface", "actor/hf"], ["actor/huggingface", "actor/hf"], "actor/huggingface"),
        (["actor/hf", "hf"], ["hf"], "hf"),
    ],
)
def test_a_verl_step_is_read_from_the_first_folder_with_weights_else_with_config(
    tmp_path: Path, configs: list[str], weights: list[str], expected: str
) -> None:
    step = tmp_path / "global_step_7"
    step.mkdir()
    for sub in configs:
        (step / sub).mkdir(parents=True, exist_ok=True)
        (step / sub / "config.json").write_text("{}", encoding="utf-8")
    for sub in weights:
        _safetensors(step / sub / "model.safetensors", [("w", 0, 8)])
    (ck,) = find_checkpoints(tmp_path)
    assert (ck.step, ck.layout, ck.root) == (7, "verl", step)
    assert ck.path == (step if expected == "." else step / expected)


# --- in-flight files --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "model.safetensors.tmp",
        "model.safetensors.temp",
        "model-00001-of-00002.safetensors.part",
        "tokenizer.json.partial",
        "model.safetensors.incomplete",
        ".model.safetensors.Xy12Z9",  # rsync's temporary name
        ".config.json.a1B2c3",
    ],
)
def test_a_file_in_flight_holds_the_checkpoint_back(tmp_path: Path, name: str) -> None:
    ck = _hf_checkpoint(tmp_path)
    assert pending_reason(ck, 30, now=T0 + 3600) is None
    (ck.path / name).write_bytes(b"...")
    _set_times(ck.root, T0)
    assert pending_reason(ck, 30, now=T0 + 3600) == f"{name} is being written"
    assert pending_reason(ck, 0) == f"{name} is being written"


def test_ordinary_names_are_not_in_flight(tmp_path: Path) -> None:
    ck = _hf_checkpoint(tmp_path)
    for name in (".gitattributes", "README.md", "tokenizer.json", "generation_config.json", "vocab.txt"):
        (ck.path / name).write_text("x", encoding="utf-8")
    _set_times(ck.root, T0)
    assert pending_reason(ck, 30, now=T0 + 3600) is None


# --- a safetensors file shorter than its header says ------------------------------------------------


@pytest.mark.parametrize("short_by", [1, 5, 23])
def test_a_safetensors_short_by_less_than_its_header_waits(tmp_path: Path, short_by: int) -> None:
    ck = _hf_checkpoint(tmp_path)
    weights = ck.path / "model.safetensors"
    # the last tensor listed is not the one ending last: the expected length is the furthest end
    full = _safetensors(weights, [("b", 0, 48), ("a", 48, 96), ("c", 16, 32)])
    header_len = int.from_bytes(weights.read_bytes()[:8], "little")
    assert full == 8 + header_len + 96 and short_by < header_len
    data = weights.read_bytes()
    assert len(data) == full
    _set_times(ck.root, T0)
    assert pending_reason(ck, 30, now=T0 + 3600) is None  # whole: complete
    weights.write_bytes(data[: full - short_by])
    _set_times(ck.root, T0)
    expected = f"model.safetensors is still being written ({full - short_by} of {full} bytes)"
    assert pending_reason(ck, 30, now=T0 + 3600) == expected


def test_a_safetensors_cut_inside_its_header_waits(tmp_path: Path) -> None:
    ck = _hf_checkpoint(tmp_path)
    weights = ck.path / "model.safetensors"
    data = weights.read_bytes()
    n = int.from_bytes(data[:8], "little")
    weights.write_bytes(data[: 8 + n - 1])
    assert (
        pending_reason(ck, 0) == f"model.safetensors is still being written (its header alone is {n} bytes)"
    )
    weights.write_bytes(data[:5])
    assert pending_reason(ck, 0) == "model.safetensors is still being written (5 bytes)"


# --- settle: the whole checkpoint, recursively --------------------------------------------------------


def test_a_change_deep_in_a_verl_step_restarts_the_settle(tmp_path: Path) -> None:
    hf = tmp_path / "global_step_5" / "actor" / "huggingface"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text("{}", encoding="utf-8")
    _safetensors(hf / "model.safetensors", [("w", 0, 8)])
    deep = tmp_path / "global_step_5" / "actor" / "optim" / "rank_0"
    deep.mkdir(parents=True)
    (deep / "optim_world_size_2_rank_0.pt").write_bytes(b"optimizer state")
    _set_times(tmp_path / "global_step_5", T0)
    (ck,) = find_checkpoints(tmp_path)
    assert ck.path == hf and ck.root == tmp_path / "global_step_5"
    assert pending_reason(ck, 30, now=T0 + 31) is None

    os.utime(deep / "optim_world_size_2_rank_0.pt", (T0 + 100, T0 + 100))  # still being written
    assert pending_reason(ck, 30, now=T0 + 120) == "changed 20s ago: waiting until nothing changes for 30s"
    assert pending_reason(ck, 30, now=T0 + 130) is None
    assert pending_reason(ck, 0, now=T0 + 100) is None  # --settle 0: no wait


def test_a_change_in_a_subfolder_of_a_hf_checkpoint_restarts_the_settle(tmp_path: Path) -> None:
    ck = _hf_checkpoint(tmp_path)
    zero = ck.root / "global_step100" / "zero"
    zero.mkdir(parents=True)
    (zero / "mp_rank_00_model_states.pt").write_bytes(b"deepspeed")
    _set_times(ck.root, T0)
    assert pending_reason(ck, 30, now=T0 + 30) is None
    os.utime(zero / "mp_rank_00_model_states.pt", (T0 + 50, T0 + 50))
    assert pending_reason(ck, 30, now=T0 + 60) == "changed 10s ago: waiting until nothing changes for 30s"
    os.utime(zero / "mp_rank_00_model_states.pt", (T0, T0))
    os.utime(zero, (T0 + 55, T0 + 55))  # a file removed or added there changes the folder itself
    assert pending_reason(ck, 30, now=T0 + 60) == "changed 5s ago: waiting until nothing changes for 30s"


def test_the_settle_rule_reads_the_watchers_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ck = _hf_checkpoint(tmp_path)
    monkeypatch.setattr(watch_scan, "_clock", lambda: T0 + 7)
    assert pending_reason(ck, 30) == "changed 7s ago: waiting until nothing changes for 30s"
    monkeypatch.setattr(watch_scan, "_clock", lambda: T0 + 30)
    assert pending_reason(ck, 30) is None


# --- metrics.csv -------------------------------------------------------------------------------------


def test_the_csv_keeps_one_row_per_step_sorted_as_numbers(tmp_path: Path) -> None:
    path = tmp_path / METRICS_FILE
    watch_log._write_metrics_csv(path, 100, {"a": 1.0})
    watch_log._write_metrics_csv(path, 9, {"a": 2.0, "b": 0.5})
    watch_log._write_metrics_csv(path, 10, {"a": 3.0})
    watch_log._write_metrics_csv(path, 9, {"a": 4.0, "b": 0.25})  # step 9 evaluated again
    assert path.read_text(encoding="utf-8") == "step,subset,a,b\n9,,4.0,0.25\n10,,3.0,\n100,,1.0,\n"


# --- state: killed steps, changed arguments ---------------------------------------------------------


def _write_state(out: Path, root: Path, eval_args: list[str], steps: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    state = {
        "version": 1,
        "dir": str(root.resolve()),
        "eval_args": eval_args,
        "wandb_run_id": None,
        "steps": steps,
    }
    (out / WATCH_FILE).write_text(json.dumps(state), encoding="utf-8")


def _read_state(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / WATCH_FILE).read_text(encoding="utf-8"))
    return data


def test_a_step_killed_at_its_last_attempt_is_failed(tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    out = root / "gge_watch"
    _write_state(
        out,
        root,
        [],
        {
            "1": {"status": "running", "attempts": 3},
            "2": {"status": "running", "attempts": 2},
            "3": {"status": "running", "attempts": 3, "error": "RuntimeError: CUDA out of memory"},
        },
    )
    report = watch(root, [], once=True, attempts=3, stdout=io.StringIO())
    steps = _read_state(out)["steps"]
    assert steps["1"]["status"] == "failed" and steps["1"]["error"] == "the watcher died while evaluating it"
    assert steps["2"]["status"] == "retry" and steps["2"]["error"] == "the watcher died while evaluating it"
    assert steps["3"]["status"] == "failed" and steps["3"]["error"] == "RuntimeError: CUDA out of memory"
    assert report.state["steps"] == steps


def test_corrected_arguments_are_accepted_when_nothing_was_evaluated(tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    out = root / "gge_watch"
    error = "run/checkpoint-1: model_type 'qwen3_vl' is shared by 4 families and no name says which"
    _write_state(
        out,
        root,
        ["k=3"],
        {
            "1": {"status": "config_error", "attempts": 0, "error": error},
            "2": {"status": "retry", "attempts": 1, "error": "RuntimeError: x"},
            "4": {"status": "vanished", "attempts": 0},
        },
    )
    for step in (1, 2):  # eval got as far as recording its run, then stopped before any sample
        (out / f"step_{step}").mkdir()
        (out / f"step_{step}" / "run.json").write_text('{"fingerprint": {"k": 3}}', encoding="utf-8")
        (out / f"step_{step}" / "predictions.rank0.jsonl").write_text("", encoding="utf-8")
    said = io.StringIO()
    watch(root, ["k=4", "model=qwen3_vl"], once=True, stdout=said)
    state = _read_state(out)
    assert state["eval_args"] == ["k=4", "model=qwen3_vl"]
    assert state["steps"] == {"4": {"status": "vanished", "attempts": 0}}  # the others start afresh
    assert (
        "gge watch: the eval arguments changed (then: k=3; now: k=4 model=qwen3_vl); nothing was "
        "evaluated with the old ones: continuing with the new ones"
    ) in said.getvalue()
    watch(root, ["k=4", "model=qwen3_vl"], once=True, stdout=(again := io.StringIO()))  # now pinned
    assert "changed" not in again.getvalue()
    (out / "step_2" / "predictions.rank0.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")  # evaluated
    with pytest.raises(GgeError, match=r"then: k=4 model=qwen3_vl; now: k=5\) \(step 2 was evaluated"):
        watch(root, ["k=5"], once=True, stdout=io.StringIO())


@pytest.mark.parametrize(
    ("status", "files"),
    [
        ("done", {}),
        ("retry", {"predictions.rank0.jsonl": '{"id": "a"}\n'}),
        ("interrupted", {"predictions.rank3.jsonl": '{"id": "a"}\n'}),
        ("running", {"predictions.jsonl": '{"id": "a"}\n'}),
        ("failed", {"results.json": "{}"}),
        ("config_error", {"predictions.rank0.jsonl": "", "predictions.rank1.jsonl": '{"id": "b"}\n'}),
    ],
)
def test_other_arguments_are_refused_once_a_step_was_evaluated(
    tmp_path: Path, status: str, files: dict[str, str]
) -> None:
    root = tmp_path / "run"
    root.mkdir()
    out = root / "gge_watch"
    _write_state(
        out, root, ["k=3"], {"1": {"status": "config_error", "attempts": 0}, "6": {"status": status}}
    )
    (out / "step_6").mkdir()
    for name, text in files.items():
        (out / "step_6" / name).write_text(text, encoding="utf-8")
    before = (out / WATCH_FILE).read_text(encoding="utf-8")
    with pytest.raises(
        GgeError, match=r"other eval arguments \(then: k=3; now: k=4\) \(step 6 was evaluated with them\)"
    ):
        watch(root, ["k=4"], once=True, stdout=io.StringIO())
    assert (out / WATCH_FILE).read_text(encoding="utf-8") == before


def test_evaluated_steps_are_read_from_the_state_and_the_step_folders(tmp_path: Path) -> None:
    (tmp_path / "step_2").mkdir()
    (tmp_path / "step_2" / "predictions.rank0.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "step_2" / "run.json").write_text("{}", encoding="utf-8")
    (tmp_path / "step_10").mkdir()
    (tmp_path / "step_10" / "predictions.rank12.jsonl").write_text("x\n", encoding="utf-8")
    (tmp_path / "step_x").mkdir()
    (tmp_path / "step_x" / "results.json").write_text("{}", encoding="utf-8")
    steps = {"2": {"status": "retry"}, "3": {"status": "done"}, "5": {"status": "failed"}}
    assert evaluated_steps(tmp_path, steps) == [3, 10]


def test_a_restarted_watcher_says_a_configuration_error_once_and_skips_it(tmp_path: Path) -> None:
    root = tmp_path / "run"
    _hf_checkpoint(root)
    out = root / "gge_watch"
    _write_state(out, root, [], {"1": {"status": "config_error", "attempts": 0, "error": "the error"}})
    said = io.StringIO()
    report = watch(root, [], once=True, settle_s=0, stdout=said)
    assert report.evaluated == [] and report.failed == [] and report.config_errors == {}
    lines = [x for x in said.getvalue().splitlines() if "step 1" in x]
    assert lines == [
        "gge watch: step 1: not evaluated: configuration error with these eval arguments (the error); "
        "correct them and restart, or --retry-failed once the checkpoint is fixed"
    ]
    assert _read_state(out)["steps"]["1"] == {"status": "config_error", "attempts": 0, "error": "the error"}


def test_a_removed_checkpoint_that_met_a_configuration_error_is_not_reported_vanished(tmp_path: Path) -> None:
    root = tmp_path / "run"
    root.mkdir()
    out = root / "gge_watch"
    entry = {"status": "config_error", "attempts": 0, "error": "the error"}
    _write_state(out, root, [], {"1": entry, "2": {"status": "retry", "attempts": 1}})
    state = _read_state(out)
    state["seen"] = [1, 2]
    (out / WATCH_FILE).write_text(json.dumps(state), encoding="utf-8")
    said = io.StringIO()
    watch(root, [], once=True, stdout=said)  # the trainer removed both (save_total_limit)
    steps = _read_state(out)["steps"]
    assert steps["1"] == entry and steps["2"]["status"] == "vanished"
    removed = [x for x in said.getvalue().splitlines() if "was removed before it could be evaluated" in x]
    assert [x.split(":")[1].strip() for x in removed] == ["step 2"]


# --- which errors are configuration errors -----------------------------------------------------------


def _raised(make: Any) -> BaseException:
    try:
        make()
    except BaseException as e:  # the error is what is checked
        return e
    raise AssertionError("nothing raised")


def _wrapped(cause: BaseException) -> None:
    try:
        raise cause
    except BaseException as e:
        raise GgeError(f"cannot load the model of ckpt: {type(e).__name__}: {e}") from e


def _plain() -> None:
    raise GgeError("k must be at least 1, got 0")


def _from_none() -> None:
    try:
        raise KeyError("x")
    except KeyError:
        raise GgeError("bad configuration (x)") from None


def _from_none_over(cause: BaseException) -> None:
    """gge's usual ``raise GgeError(...) from None`` while handling ``cause``: it stays in __context__."""
    try:
        raise cause
    except BaseException:
        raise GgeError("cannot read it") from None


def _twice_over(cause: BaseException) -> None:
    """A GgeError raised from None while handling a GgeError that wraps ``cause``."""
    try:
        _wrapped(cause)
    except GgeError:
        raise GgeError("the run failed") from None


def _transient() -> None:
    raise TransientError("output_dir /o/step_1 is in use by another gge run (pid 7); wait for it to end")


@pytest.mark.parametrize(
    ("make", "samples_added", "expected"),
    [
        (_plain, False, True),
        (_plain, True, False),  # after samples: not the settings' fault alone
        (_from_none, False, True),
        (lambda: _wrapped(ValueError("bad shape")), False, True),
        (lambda: _wrapped(OSError(5, "Input/output error")), False, False),  # a read that can pass
        (lambda: _wrapped(MemoryError()), False, False),
        (lambda: _wrapped(RuntimeError("CUDA out of memory")), False, False),
        (lambda: (_ for _ in ()).throw(RuntimeError("CUDA out of memory")), False, False),
        (lambda: (_ for _ in ()).throw(ValueError("x")), False, False),  # not gge's bad-input error
        (_transient, False, False),  # marked: a bad state of the world, a retry may pass
        (lambda: _from_none_over(OSError(5, "Input/output error")), False, False),
        (lambda: _from_none_over(ConnectionRefusedError(111, "Connection refused")), False, False),
        (lambda: _from_none_over(TimeoutError("timed out")), False, False),
        (lambda: _from_none_over(MemoryError()), False, False),
        (lambda: _from_none_over(RuntimeError("CUDA error")), False, False),
        (lambda: _from_none_over(FileNotFoundError(2, "No such file")), False, True),  # a wrong path
        (lambda: _from_none_over(ValueError("bad")), False, True),
        (lambda: _twice_over(OSError(5, "Input/output error")), False, False),  # two links down
        (lambda: _twice_over(ValueError("bad shape")), False, True),
    ],
)
def test_a_configuration_error_is_a_gge_error_before_any_sample_not_caused_by_the_environment(
    make: Any, samples_added: bool, expected: bool
) -> None:
    assert is_configuration_error(_raised(make), samples_added) is expected


def test_samples_added_compares_the_prediction_logs_before_and_after(tmp_path: Path) -> None:
    step = tmp_path / "step_1"
    before = watch_state._log_marks(step)  # no folder yet
    assert before == {} and not watch_state._samples_added(step, before)
    step.mkdir()
    (step / "run.json").write_text("{}", encoding="utf-8")
    (step / "predictions.rank0.jsonl").write_text("", encoding="utf-8")
    assert not watch_state._samples_added(step, before)  # a log opened, nothing in it
    before = watch_state._log_marks(step)
    assert not watch_state._samples_added(step, before)  # an empty log: nothing evaluated
    (step / "predictions.rank0.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    assert watch_state._samples_added(step, before)
    os.utime(step / "predictions.rank0.jsonl", (T0, T0))  # written by an earlier attempt
    before = watch_state._log_marks(step)
    assert not watch_state._samples_added(step, before)  # restored, nothing new
    (step / "predictions.rank1.jsonl").write_text('{"id": "b"}\n', encoding="utf-8")
    assert watch_state._samples_added(step, before)  # another rank's first sample
    (step / "predictions.rank1.jsonl").unlink()
    (step / "predictions.rank0.jsonl").unlink()  # resume=false cleared it ...
    assert not watch_state._samples_added(step, before)
    (step / "predictions.rank0.jsonl").write_text('{"id": "c"}\n', encoding="utf-8")  # ... and a sample
    assert watch_state._samples_added(step, before)


def test_has_samples_sees_what_an_earlier_attempt_logged(tmp_path: Path) -> None:
    step = tmp_path / "step_1"
    assert not watch_state._has_samples(step)  # no folder
    step.mkdir()
    (step / "run.json").write_text("{}", encoding="utf-8")
    (step / "results.json").write_text("{}", encoding="utf-8")  # not a sample log
    (step / "predictions.rank0.jsonl").write_text("", encoding="utf-8")
    (step / "predictions.jsonl").write_text("", encoding="utf-8")
    assert not watch_state._has_samples(step)  # logs opened, nothing in them
    (step / "predictions.rank3.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    assert watch_state._has_samples(step)  # any rank
    (step / "predictions.rank3.jsonl").unlink()
    (step / "predictions.jsonl").write_text('{"id": "a"}\n', encoding="utf-8")
    assert watch_state._has_samples(step)  # the merged log of an earlier attempt


def test_the_metrics_csv_has_a_subset_column_empty_for_a_full_run(tmp_path: Path) -> None:
    path = tmp_path / METRICS_FILE
    text = "subset: first 2 of 3 samples (B); max_samples=2: not comparable with published numbers"
    watch_log._write_metrics_csv(path, 5, {"grounding/b/top1": 50.0}, text)
    watch_log._write_metrics_csv(path, 2, {"grounding/b/top1": 25.0})
    assert path.read_text(encoding="utf-8") == (f"step,subset,grounding/b/top1\n2,,25.0\n5,{text},50.0\n")
    old = tmp_path / "old.csv"  # written by a watcher before the column: it is added, empty before
    old.write_text("step,grounding/b/top1\n1,10.0\n", encoding="utf-8")
    watch_log._write_metrics_csv(old, 3, {"grounding/b/top1": 30.0}, "subset: x")
    assert old.read_text(encoding="utf-8") == "step,grounding/b/top1,subset\n1,10.0,\n3,30.0,subset: x\n"


def test_the_transient_failures_gge_meets_are_marked_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each is raised ``from None`` (no __cause__): marked TransientError, the watcher retries it."""
    import errno
    import socket
    import threading

    from gge.benchmarks.base import read_text
    from gge.models.openai_api import OpenAIBackend
    from gge.run.predlog import read_records
    from gge.run.runstate import output_dir_lock

    out = tmp_path / "o"
    with output_dir_lock(out), pytest.raises(TransientError) as lock, output_dir_lock(out):
        pass  # a second holder (its own open file): refused
    assert str(lock.value).startswith(f"output_dir {out} is in use by another gge run (pid {os.getpid()}, ")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAIBackend(url, "served", max_retries=0)
    with pytest.raises(TransientError) as down:
        backend._loop.post({"model": "served"}, threading.Event())
    assert str(down.value).startswith(f"nothing answers at {url} (")  # before any answer: a server starting
    assert str(down.value).endswith("): is the server up, and is base_url's port right?")
    with pytest.raises(TransientError) as get_down:
        backend.get("models")
    assert str(get_down.value).startswith(f"GET {url}/models: nothing answers (")

    def eio(*a: Any, **kw: Any) -> Any:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(Path, "read_text", eio)
    monkeypatch.setattr(Path, "read_bytes", eio)
    with pytest.raises(TransientError) as annotations:
        read_text(tmp_path / "a.json")
    assert str(annotations.value) == f"{tmp_path / 'a.json'}: cannot read: Input/output error"
    with pytest.raises(TransientError) as log:
        read_records([tmp_path / "p.jsonl"])
    assert (
        str(log.value) == f"cannot read prediction log {tmp_path / 'p.jsonl'}: [Errno 5] Input/output error"
    )
    assert not is_configuration_error(TransientError("x"), samples_added=False)


# --- results.json is read by its schema_version --------------------------------------------------


@pytest.mark.parametrize("version", [None, 99])
def test_a_results_json_of_another_schema_version_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int | None
) -> None:
    from gge.documents.results import SCHEMA_VERSION
    from gge.run import standalone

    root = tmp_path / "run"
    _hf_checkpoint(root, step=1)

    def stale_run(cfg: Any, out: Any = None) -> dict[str, Any]:  # eval's document, as it read it back
        doc: dict[str, Any] = {"gge_version": "0.0.9", "benchmarks": {}, "k": 5, "mean": {}}
        if version is not None:
            doc = {"schema_version": version, **doc}
        folder = Path(cfg.output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "results.json").write_text(json.dumps(doc), encoding="utf-8")
        return doc

    monkeypatch.setattr(standalone, "run", stale_run)
    report = watch(root, ["model=qwen3_vl"], once=True, settle_s=0, stdout=(said := io.StringIO()))
    results = root / "gge_watch" / "step_1" / "results.json"
    found = "no schema_version (written by gge 0.0.9)" if version is None else "schema_version 99"
    error = report.config_errors[1]
    assert error.startswith(f"{results}: {found}") and "\n" not in error
    assert f"reads schema_version {SCHEMA_VERSION}: re-score" in error
    assert f"model.predictions={results.parent / 'predictions.jsonl'}" in error
    assert f"step 1: configuration error: {error}" in said.getvalue()
    assert _read_state(root / "gge_watch")["steps"]["1"]["status"] == "config_error"
