"""A resume never mixes runs; a folder in use refuses a second run; what the run's fingerprint holds.

The fingerprint holds the digests of the files the model kind reads (a checkpoint folder retrained in
place, a file over 64 MiB digested by its size and 16 chunks) and of the samples (id, instruction,
target, image size); ``differences`` tells an absent key from a null one; writes are atomic.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_checkpoints import build_tiny_qwen2_5_vl

from gge.documents.files import atomic_write
from gge.errors import GgeError
from gge.models.demo import default_checkpoint
from gge.run import runstate
from gge.run.runstate import (
    asked_digest,
    checkpoint_digest,
    differences,
    digest_version,
    file_digest,
    output_dir_lock,
    samples_digest,
)
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Absent, Box, Polygon, Region, Sample

BENCHES = "benchmarks=[screenspot_v2,osworld_g]"


def _demo(demo: Path, out: Path, *extra: str) -> dict[str, Any]:
    args = [f"data_root={demo}", f"output_dir={out}", BENCHES, "max_samples=6", *extra]
    return run(parse_args(args), out=io.StringIO())


def _top1(doc: dict[str, Any]) -> dict[str, float]:
    return {name: e["top1"] for name, e in doc["benchmarks"].items()}


def test_a_rerun_with_another_k_stops_and_names_what_differs(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _demo(demo_suite, out, "k=5")
    with pytest.raises(GgeError) as e:
        _demo(demo_suite, out, "k=3")
    msg = str(e.value)
    assert "k: 5 -> 3" in msg and "resume=false" in msg and str(out) in msg
    # resume=false starts over and gives what a fresh folder gives
    fresh = _demo(demo_suite, tmp_path / "fresh", "k=3")
    again = _demo(demo_suite, out, "k=3", "resume=false")
    assert _top1(again) == _top1(fresh)
    assert json.loads((out / "run.json").read_text())["fingerprint"]["k"] == 3


def test_the_same_run_resumes(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _demo(demo_suite, out)
    buf = io.StringIO()
    again = run(
        parse_args([f"data_root={demo_suite}", f"output_dir={out}", BENCHES, "max_samples=6"]), out=buf
    )
    assert "resuming: 12 samples already finished" in buf.getvalue()
    assert _top1(again) == _top1(first)
    # the options of a published log's replay are left out at their defaults: a folder written before
    # they existed has the same fingerprint, and resumes
    model = json.loads((out / "run.json").read_text())["fingerprint"]["model"]
    assert not {"format", "read_preset", "read_convention", "columns"} & set(model)
    # the selection strategy and max_samples do not change predictions: still the same run
    _demo(demo_suite, out, "selection=mean", "max_samples=8")


def test_another_checkpoint_with_the_same_path_is_another_run(demo_suite: Path, tmp_path: Path) -> None:
    ckpt = tmp_path / "policy.pt"
    shutil.copy(default_checkpoint(), ckpt)
    out = tmp_path / "run"
    _demo(demo_suite, out, f"ckpt={ckpt}")
    blob = torch.load(ckpt, weights_only=True)  # a retrained checkpoint saved over the old one
    state = blob["state_dict"]
    name = next(k for k, v in state.items() if v.is_floating_point())
    state[name] = state[name] + 0.01
    torch.save(blob, ckpt)
    with pytest.raises(GgeError, match=r"files\.ckpt\.digest: "):
        _demo(demo_suite, out, f"ckpt={ckpt}")


def test_another_prompt_or_benchmark_variant_is_another_run(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    replay = f"model.predictions={demo_suite / 'predictions.jsonl'}"
    args = [f"data_root={demo_suite}", f"output_dir={out}", replay, "benchmarks=[osworld_g]"]
    run(parse_args(args), out=io.StringIO())
    refined = [f"data_root={demo_suite}", f"output_dir={out}", replay, "benchmarks=[osworld_g_refined]"]
    with pytest.raises(GgeError, match=r"benchmarks\.osworld_g\.options: \{\} -> \(absent\)"):
        run(parse_args(refined), out=io.StringIO())
    assert differences({"model": {"prompts": {"system": "a"}}}, {"model": {"prompts": {"system": "b"}}}) == [
        'model.prompts.system: "a" -> "b"'
    ]


def test_predictions_without_a_run_record_are_not_reused(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _demo(demo_suite, out)
    (out / "run.json").unlink()  # e.g. a folder written by a gge before run.json existed
    with pytest.raises(GgeError, match=r"no run\.json saying which run made them"):
        _demo(demo_suite, out)
    _demo(demo_suite, out, "resume=false")


def test_output_dir_that_is_a_file(demo_suite: Path, tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    for target in (f, f / "sub"):
        with pytest.raises(GgeError, match=f"output_dir {target}: {f} is a file, not a folder"):
            _demo(demo_suite, target)


def test_a_folder_in_use_refuses_and_a_killed_holder_leaves_no_lock(demo_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with output_dir_lock(out), pytest.raises(GgeError, match="is in use by another gge run \\(pid "):
        _demo(demo_suite, out)
    # another process holds it, then is killed: the kernel drops the lock
    code = (
        "import sys, time\nfrom gge.run.runstate import output_dir_lock\n"
        f"with output_dir_lock({str(out)!r}):\n    print('held', flush=True)\n    time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(GgeError, match=f"pid {proc.pid}"):
            _demo(demo_suite, out)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()  # reaped: its descriptors, and so the lock, are gone
    assert _demo(demo_suite, out)["benchmarks"]


MiB = 1 << 20


# -- the checkpoint digest ----------------------------------------------------------------------------


def _flip_a_weight(path: Path) -> None:
    """Retrain in place: change one byte of a safetensors file's tensor data (same size, same header)."""
    data = bytearray(path.read_bytes())
    (header,) = struct.unpack("<Q", data[:8])
    offset = 8 + header + 16
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_an_hf_folder_retrained_in_place_refuses_to_resume(demo_suite: Path, tmp_path: Path) -> None:
    ckpt = build_tiny_qwen2_5_vl(tmp_path / "Qwen2.5-VL-tiny")
    out = tmp_path / "out"
    args = [
        f"data_root={demo_suite}",
        f"output_dir={out}",
        "benchmarks=[screenspot_v2]",
        "max_samples=1",
        f"ckpt={ckpt}",
        "model.max_pixels=50000",
        "model.max_new_tokens=4",
        "model.device=cpu",
    ]
    run(parse_args(args), out=io.StringIO())
    before = checkpoint_digest(ckpt)
    _flip_a_weight(ckpt / "model.safetensors")
    assert checkpoint_digest(ckpt) != before
    with pytest.raises(GgeError) as e:
        run(parse_args(args), out=io.StringIO())
    after = checkpoint_digest(ckpt)
    assert f'files.ckpt.digest: "{before[:40]}' in str(e.value) and f'-> "{after[:40]}' in str(e.value)
    assert str(e.value).count(" -> ") == 1  # the weights alone changed


def test_every_weight_and_config_file_of_a_folder_is_in_its_digest(tmp_path: Path) -> None:
    names = [
        "model.safetensors",
        "pytorch_model.bin",
        "config.json",
        "tokenizer.model",
        "chat_template.jinja",
    ]
    for name in names:
        (tmp_path / name).write_bytes(name.encode())
    (tmp_path / "notes.md").write_text("not a checkpoint file")
    expected = hashlib.sha256()
    for name in sorted(names):
        expected.update(f"{name}\0{hashlib.sha256(name.encode()).hexdigest()}\n".encode())
    assert checkpoint_digest(tmp_path) == expected.hexdigest()
    (tmp_path / "notes.md").write_text("changed")
    assert checkpoint_digest(tmp_path) == expected.hexdigest()


def test_a_file_over_64_mib_is_digested_by_its_size_and_16_evenly_spaced_chunks(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    size = 64 * MiB + 4097
    with path.open("wb") as f:  # sparse: cheap to write and read
        f.truncate(size)
    offsets = [(size - MiB) * i // 15 for i in range(16)]
    marks = {offsets[0]: b"A", offsets[7] + 5: b"B", size - 1: b"Z"}
    with path.open("r+b") as f:
        for at, byte in marks.items():
            f.seek(at)
            f.write(byte)
    data = bytearray(size)
    for at, byte in marks.items():
        data[at] = byte[0]
    h = hashlib.sha256(str(size).encode())
    for at in offsets:
        h.update(bytes(data[at : at + MiB]))
    assert file_digest(path) == "sampled:" + h.hexdigest()
    # a change in the last sampled chunk (the file's last byte) changes the digest
    with path.open("r+b") as f:
        f.seek(size - 1)
        f.write(b"Y")
    assert file_digest(path) != "sampled:" + h.hexdigest()
    # a file of exactly 64 MiB is read whole
    whole = tmp_path / "whole.bin"
    with whole.open("wb") as f:
        f.truncate(64 * MiB)
    assert file_digest(whole) == hashlib.sha256(bytes(64 * MiB)).hexdigest()


# -- the samples digest -------------------------------------------------------------------------------


def _sample(sid: str, instruction: str, image: str, region: Region | None = None) -> Sample:
    return Sample("b", sid, image, (100, 100), instruction, region or Absent())


def _by_hand(rows: list[tuple[str, str, str, tuple[int, int]]]) -> str:
    """The v2 digest written out: sorted by id, one JSON line [id, instruction, target text, size]."""
    h = hashlib.sha256()
    for sid, text, target, (w, h_) in sorted(rows):
        h.update(json.dumps([sid, text, target, [w, h_]]).encode() + b"\n")
    return "v2:" + h.hexdigest()


def test_the_samples_digest_covers_id_instruction_target_and_size_not_the_screenshot_name() -> None:
    base = [
        _sample("1", "open the menu", "/data/a.png"),
        _sample("2", "close it", "/data/b.png", Box(1, 2, 3, 4)),
    ]
    digest = samples_digest(base)
    assert digest == _by_hand(
        [
            ("1", "open the menu", "refusal abstention", (100, 100)),
            ("2", "close it", "bbox/pixel 1.000 2.000 3.000 4.000", (100, 100)),
        ]
    )
    assert digest_version(digest) == "v2"
    assert samples_digest(base[::-1]) == digest  # order of loading does not matter
    assert samples_digest([base[0], _sample("2", "close it", "/elsewhere/b.png", Box(1, 2, 3, 4))]) == digest
    # a Hub copy's embedded screenshot is named by its row: the name is not part of the digest
    embedded = "/hub/test-00000.parquet::parquet:1/image"
    assert samples_digest([base[0], _sample("2", "close it", embedded, Box(1, 2, 3, 4))]) == digest
    # float noise below 1e-3 pixel (a copy's [0, 1] box times the size) is the same target
    assert samples_digest([base[0], _sample("2", "close it", "/d/b.png", Box(1, 2, 3.0000001, 4))]) == digest
    others = [
        _sample("2", "close the menu", "/data/b.png", Box(1, 2, 3, 4)),  # instruction
        _sample("3", "close it", "/data/b.png", Box(1, 2, 3, 4)),  # id
        _sample("2", "close it", "/data/b.png", Box(1, 2, 3, 5)),  # one box edge
        _sample("2", "close it", "/data/b.png", Box(1, 2, 3, 4, integer_point=True)),  # its hit rule
        _sample("2", "close it", "/data/b.png", Polygon(((1, 2), (3, 2), (3, 4)))),
        replace(_sample("2", "close it", "/data/b.png", Box(1, 2, 3, 4)), image_size=(100, 101)),
    ]
    for other in others:
        assert samples_digest([base[0], other]) != digest, other
    # a refusal's abstention rule is part of the target
    assert samples_digest([_sample("1", "open the menu", "/a.png", Absent(False)), base[1]]) != digest


def test_the_fingerprints_digest_is_what_the_model_is_asked_not_the_target() -> None:
    """A resume re-scores the answers it reuses: another target (a refusal rule) must not stop it."""
    base = [
        _sample("1", "open the menu", "/data/a.png"),
        _sample("2", "close it", "/d/b.png", Box(1, 2, 3, 4)),
    ]
    h = hashlib.sha256()
    for sid, text, name in (("1", "open the menu", "a.png"), ("2", "close it", "b.png")):
        h.update(json.dumps([sid, text, name, [100, 100]]).encode() + b"\n")
    digest = asked_digest(base)
    assert digest == "asked:" + h.hexdigest() and digest_version(digest) == "asked"
    # other screenshots behind the same ids, instructions and sizes are not the same samples asked
    assert asked_digest([base[0], replace(base[1], image_path="/d/other.png")]) != digest
    rescored = [
        replace(base[0], region=Absent(abstention_hits=False)),
        replace(base[1], region=Box(5, 5, 9, 9)),
    ]
    assert asked_digest(rescored) == digest and samples_digest(rescored) != samples_digest(base)
    assert asked_digest([base[0], replace(base[1], instruction="close the menu")]) != digest
    assert asked_digest([base[0], replace(base[1], image_size=(100, 99))]) != digest


def test_a_run_record_with_an_older_samples_digest_refuses_the_resume_saying_so(tmp_path: Path) -> None:
    """A run.json of gge before the v2 digest (64 hex characters, no target) cannot vouch for its logs."""
    out = tmp_path / "run"
    old_digest = hashlib.sha256(b"ids, instructions and screenshot names").hexdigest()
    new = {"k": 5, "benchmarks": {"b": {"options": {}, "samples": "asked:" + "0" * 64}}}
    old = {"k": 5, "benchmarks": {"b": {"options": {}, "samples": old_digest}}}
    runstate.prepare_output_dir(out, old, resume=True)
    # no predictions yet: nothing to mix up, the record is replaced
    runstate.prepare_output_dir(out, new, resume=True)
    assert json.loads((out / "run.json").read_text())["fingerprint"] == new
    runstate.prepare_output_dir(out, old, resume=True)
    (out / "predictions.rank0.jsonl").write_text('{"benchmark": "b", "id": "1"}\n')
    with pytest.raises(GgeError) as e:
        runstate.prepare_output_dir(out, new, resume=True)
    msg = str(e.value)
    assert msg.count("\n") == 0 and str(out) in msg
    assert "a samples digest of an older gge (b: ids, instructions and screenshot names)" in msg
    assert "resume=false" in msg
    assert json.loads((out / "run.json").read_text())["fingerprint"] == old  # left as it was
    runstate.prepare_output_dir(out, new, resume=False)  # starting over is allowed
    assert not (out / "predictions.rank0.jsonl").exists()


def test_an_older_run_record_of_these_samples_resumes(tmp_path: Path) -> None:
    """A run.json of the first scheme whose digest these samples give (id, instruction, name) resumes."""
    samples = [_sample("2", "close it", "/d/b.png"), _sample("1", "open the menu", "/data/a.png")]
    h = hashlib.sha256()
    for sid, text, name in (("1", "open the menu", "a.png"), ("2", "close it", "b.png")):
        h.update(json.dumps([sid, text, name]).encode())
    assert runstate.first_digest(samples) == h.hexdigest()
    out = tmp_path / "run"
    old = {"k": 5, "benchmarks": {"b": {"options": {}, "samples": h.hexdigest()}}}
    new = {"k": 5, "benchmarks": {"b": {"options": {}, "samples": asked_digest(samples)}}}
    runstate.prepare_output_dir(out, old, resume=True)
    (out / "predictions.rank0.jsonl").write_text('{"benchmark": "b", "id": "1"}\n')
    runstate.prepare_output_dir(out, new, resume=True, first_digests={"b": h.hexdigest()})
    assert (out / "predictions.rank0.jsonl").exists()  # kept, to be resumed
    assert json.loads((out / "run.json").read_text())["fingerprint"] == new  # upgraded
    # the same old record, other samples: refused, and another setting still differs as before
    (out / "run.json").write_text(json.dumps({"fingerprint": old}))
    with pytest.raises(GgeError, match=r"older gge \(b: ids, instructions and screenshot names\) that these"):
        runstate.prepare_output_dir(out, new, resume=True, first_digests={"b": "0" * 64})
    with pytest.raises(GgeError, match=r"holds predictions of a different run.*\bk\b"):
        runstate.prepare_output_dir(out, {**new, "k": 3}, resume=True, first_digests={"b": h.hexdigest()})


# -- differences --------------------------------------------------------------------------------------


def test_differences_tells_an_absent_key_from_a_null_one() -> None:
    assert differences({"a": None}, {}) == ["a: null -> (absent)"]
    assert differences({}, {"model": {"x": None}}) == ["model.x: (absent) -> null"]
    assert differences({"a": None, "b": 1}, {"a": None, "b": 1}) == []


# -- atomic writes ------------------------------------------------------------------------------------


def test_an_atomic_write_is_flushed_to_disk_before_it_replaces_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.json"
    path.write_text("old")
    seen: list[tuple[str, str]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        temp = os.readlink(f"/proc/self/fd/{fd}")
        seen.append((Path(temp).read_text(), path.read_text()))  # the temp file whole, the old file in place
        real_fsync(fd)

    monkeypatch.setattr(runstate.os, "fsync", fsync)
    atomic_write(path, "new text")
    assert seen == [("new text", "old")]
    assert path.read_text() == "new text"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary_file(
    error: BaseException, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "report.md"
    path.write_text("old")

    def replace(src: Any, dst: Any) -> None:
        raise error

    monkeypatch.setattr(runstate.os, "replace", replace)
    with pytest.raises(type(error)):
        atomic_write(path, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
    assert path.read_text() == "old"


# -- the fingerprint ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        ("seed=0", "seed=1", "seed: 0 -> 1"),
        ("decode_max_pixels=null", "decode_max_pixels=100000", "decode_max_pixels: null -> 100000"),
        ("model.critic=listwise", "model.critic=none", 'model.critic: "listwise" -> "none"'),
    ],
)
def test_a_rerun_that_changes_a_predictive_setting_refuses_and_names_it(
    first: str, second: str, named: str, demo_suite: Path, tmp_path: Path
) -> None:
    critic = tmp_path / "critic.pt"
    critic.write_bytes(b"critic weights, round 1")
    out = tmp_path / "out"

    def args(setting: str) -> list[str]:
        return [
            f"data_root={demo_suite}",
            f"model.predictions={demo_suite / 'predictions.jsonl'}",
            f"output_dir={out}",
            "benchmarks=[screenspot_v2]",
            "max_samples=2",
            setting.replace("CRITIC", str(critic)),
        ]

    run(parse_args(args(first)), out=io.StringIO())
    run(parse_args(args(first)), out=io.StringIO())  # unchanged: resumes
    critic.write_bytes(b"critic weights, round 2")  # a critic file that replay never reads
    run(parse_args(args(first)), out=io.StringIO())  # changes nothing: it is not in the fingerprint
    with pytest.raises(GgeError) as e:
        run(parse_args(args(second)), out=io.StringIO())
    assert named in str(e.value)
    assert str(e.value).count(" -> ") == 1  # that key alone


def test_a_checkpoint_retrained_in_place_refuses_the_resume(demo_suite: Path, tmp_path: Path) -> None:
    """The fingerprint holds the digest of each file the model kind reads (the demo: its ckpt)."""
    import torch

    from gge.models.demo import default_checkpoint

    ckpt = tmp_path / "demo.pt"
    ckpt.write_bytes(default_checkpoint().read_bytes())
    out = tmp_path / "out"
    args = [f"data_root={demo_suite}", f"ckpt={ckpt}", f"output_dir={out}", "benchmarks=[screenspot_v2]"]
    run(parse_args([*args, "max_samples=2"]), out=io.StringIO())
    run(parse_args([*args, "max_samples=2"]), out=io.StringIO())  # the same file: resumes
    blob = torch.load(ckpt, map_location="cpu", weights_only=True)
    name = next(k for k, v in blob["state_dict"].items() if torch.is_floating_point(v))
    blob["state_dict"][name] = blob["state_dict"][name] + 1.0  # one more training step, same path
    torch.save(blob, ckpt)
    with pytest.raises(GgeError) as e:
        run(parse_args([*args, "max_samples=2"]), out=io.StringIO())
    assert "files.ckpt.digest: " in str(e.value) and str(e.value).count(" -> ") == 1


def test_a_preset_fingerprints_its_checkpoint_and_its_critic_checkpoint() -> None:
    from gge.models.registry import kind_of

    cfg = parse_args(["model=qwen2_5_vl", "ckpt=/m/policy", "model.critic_ckpt=/m/critic"])
    assert kind_of(cfg.model).fingerprint_files(cfg) == {"ckpt": "/m/policy", "critic_ckpt": "/m/critic"}
    replay = parse_args(["model.predictions=/p.jsonl", "model.critic_ckpt=/m/critic"])
    assert kind_of(replay.model).fingerprint_files(replay) == {"predictions": "/p.jsonl"}
