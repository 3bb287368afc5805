"""GroundingEvalTrainerCallback across ranks and saved states: stale scalars, padding, ranks, views, twins.

Real transformers ``Trainer`` runs on CPU with the toy grounder of ``test_trainer_callback`` (exact
numbers); the process index and world size of a 2-process run are given to one process by setting
``TrainingArguments``' properties, so the shard a rank evaluates can be checked without a second process.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from gge.callbacks import GroundingEvalTrainerCallback
from test_trainer_callback import BENCHMARKS, Toy, Zeros, _args, _grounding_rows, _toy_cb, _toy_run
from transformers import Trainer, TrainerCallback, TrainingArguments

from gge.types import Prediction, Sample

pytestmark = pytest.mark.usefixtures("one_thread")


def _trainer(out: Path, cb: GroundingEvalTrainerCallback, model: torch.nn.Module | None = None) -> Trainer:
    trainer = Trainer(model=model or Toy(), args=_args(out), train_dataset=Zeros(), eval_dataset=Zeros())
    cb.attach(trainer)
    return trainer


def _as_rank(
    monkeypatch: pytest.MonkeyPatch, process_index: int, local_process_index: int, world: int
) -> None:
    """Make this process's TrainingArguments say it is one rank of a ``world``-process run."""
    monkeypatch.setattr(TrainingArguments, "process_index", property(lambda self: process_index))
    monkeypatch.setattr(TrainingArguments, "local_process_index", property(lambda self: local_process_index))
    monkeypatch.setattr(TrainingArguments, "world_size", property(lambda self: world))


# -- no stale scalars -------------------------------------------------------------------------------
class MetricsSeen(TrainerCallback):
    """Notes the metrics of every trainer evaluation as the callbacks after the grounding one see them."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, dict[str, float]]] = []

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Any = None, **kwargs: Any) -> None:
        self.seen.append((state.global_step, dict(metrics or {})))


def test_a_later_trainer_evaluation_gets_no_stale_grounding_scalars(demo_suite: Path, tmp_path: Path) -> None:
    """Grounding evaluated at steps 2 and 4 only: the trainer's evaluation at step 3 carries none of it."""
    cb = _toy_cb(demo_suite, every_n_steps=2, eval_on_evaluate=False)
    seen = MetricsSeen()
    trainer = Trainer(
        model=Toy(),
        args=_args(tmp_path, eval_strategy="steps", eval_steps=3),
        train_dataset=Zeros(),
        eval_dataset=Zeros(),
    )
    cb.attach(trainer)
    trainer.add_callback(seen)  # after the grounding callback: it sees what that one added
    trainer.train()
    assert [h["step"] for h in cb.history] == [2, 4]
    steps = [step for step, _ in seen.seen]
    assert 3 in steps
    for step, metrics in seen.seen:
        grounding = {key: value for key, value in metrics.items() if "grounding" in key}
        if step != 4:  # no grounding evaluation at this step: nothing from step 2 is passed on
            assert grounding == {}, step
    # at the step it evaluated (4), the trainer's evaluation does carry that step's numbers
    metrics = trainer.evaluate()
    (row4,) = [r for r in _grounding_rows(trainer) if r["step"] == 4]
    assert metrics["eval_grounding/mean/top1"] == row4["grounding/mean/top1"]
    assert metrics["eval_grounding/screenspot_v2/top1"] == row4["grounding/screenspot_v2/top1"]


# -- ranks: the global rank shards, padding under sharded parameters ---------------------------------
def _seen_ids(model: Toy) -> list[str]:
    return [i for i, _, _ in model.seen]


@pytest.mark.parametrize("local", [0, 1], ids=["local-rank-0", "local-rank-1"])
def test_the_global_rank_chooses_the_shard(
    demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: int
) -> None:
    """Rank 3 of 4 (on the second node, local rank 0 or 1) evaluates samples 3, 7, 11... of each subset."""
    cb = _toy_cb(demo_suite, every_n_steps=1, max_samples_per_benchmark=9, batch_size=1)
    model = Toy()
    trainer = _trainer(tmp_path, cb, model)
    _as_rank(monkeypatch, process_index=3, local_process_index=local, world=4)
    cb.evaluate()
    assert cb.sample_ids is not None
    want = [i for name in BENCHMARKS for i in cb.sample_ids[name][3::4]]  # range(3, n, 4)
    assert sorted(_seen_ids(model)) == sorted(want)  # its shard (batched by screen size, so reordered)
    assert trainer.state.global_step == 0 and len(cb.history) == 1


@pytest.mark.parametrize(
    ("flag", "padded"),
    [(None, False), ("is_fsdp_enabled", True), ("is_deepspeed_enabled", True)],
    ids=["plain", "fsdp", "deepspeed"],
)
def test_sharded_parameters_pad_every_rank_to_the_same_batches(
    demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str | None, padded: bool
) -> None:
    """7 samples on 2 ranks, 1 per batch: rank 0 runs 4 forwards; rank 1 has 3, and runs 4 when padded."""
    cb = _toy_cb(demo_suite, every_n_steps=1, batch_size=1)
    model = Toy()
    trainer = _trainer(tmp_path, cb, model)
    if flag is not None:
        setattr(trainer, flag, True)
    _as_rank(monkeypatch, process_index=1, local_process_index=1, world=2)
    entries = cb.evaluate()
    assert cb.sample_ids is not None
    per_benchmark = 4 if padded else 3  # ceil(7 / 2) forwards, or its own 3 samples
    assert len(model.seen) == len(BENCHMARKS) * per_benchmark
    real = [i for name in BENCHMARKS for i in cb.sample_ids[name][1::2]]
    # its shard (batched by screen size); a padding forward repeats one of its samples (and is not scored)
    assert sorted(dict.fromkeys(_seen_ids(model))) == sorted(real)
    for name in BENCHMARKS:  # padding is dropped: only the shard's 3 results are scored
        assert entries[name]["samples"] == 3


def test_pad_batches_given_explicitly_wins(
    demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cb = _toy_cb(demo_suite, every_n_steps=1, batch_size=1, pad_batches=False)
    model = Toy()
    trainer = _trainer(tmp_path, cb, model)
    trainer.is_fsdp_enabled = True
    _as_rank(monkeypatch, process_index=1, local_process_index=1, world=2)
    cb.evaluate()
    assert len(model.seen) == len(BENCHMARKS) * 3


# -- views on the main process only -----------------------------------------------------------------
@pytest.mark.parametrize("main", [True, False], ids=["world-process-zero", "other-rank"])
def test_only_the_main_process_writes_the_views(demo_suite: Path, tmp_path: Path, main: bool) -> None:
    cb = _toy_cb(demo_suite, every_n_steps=1)
    trainer = _trainer(tmp_path, cb)
    trainer.state.is_world_process_zero = main
    cb.evaluate()
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jpg"))
    if main:  # 2 benchmarks x table_samples 2, under output_dir/grounding/<benchmark>/step_0/
        assert len(files) == 4 and all(f.startswith("grounding/") and "/step_0/" in f for f in files)
    else:
        assert files == []
    assert len(cb.history) == 1 and len(_grounding_rows(trainer)) == 1  # the numbers are there either way


# -- several callbacks of one class -----------------------------------------------------------------
@pytest.mark.parametrize("restore_callbacks", [False, True], ids=["default", "restore-callback-states"])
def test_several_callbacks_of_one_class_keep_their_own_saved_state(
    demo_suite: Path, tmp_path: Path, restore_callbacks: bool
) -> None:
    """Two callbacks (other benchmarks, seeds, schedules) saved in one checkpoint each get their own back."""
    first = _toy_cb(demo_suite, every_n_steps=2, seed=1)
    second = GroundingEvalTrainerCallback(
        ["screenspot_v2"], data_root=demo_suite, max_samples_per_benchmark=3, k=2, every_n_steps=1, seed=2
    )
    trainer = Trainer(
        model=Toy(), args=_args(tmp_path, save_strategy="steps", save_steps=2), train_dataset=Zeros()
    )
    first.attach(trainer)
    second.attach(trainer)
    trainer.train()
    saved = json.loads((tmp_path / "checkpoint-4" / "trainer_state.json").read_text())
    states = saved["stateful_callbacks"]["GroundingEvalTrainerCallback"]
    # transformers lists both states at the start, then appends both at each save (steps 2 and 4)
    assert len(states) == 6 and [s["attributes"]["sample_ids"] for s in states[:2]] == [None, None]
    assert [s["attributes"]["sample_ids"] for s in states[-2:]] == [first.sample_ids, second.sample_ids]
    assert [len(s["attributes"]["history"]) for s in states[-2:]] == [2, 4]
    assert first.sample_ids != second.sample_ids

    again_first = _toy_cb(demo_suite, every_n_steps=2, seed=11)
    again_second = GroundingEvalTrainerCallback(
        ["screenspot_v2"], data_root=demo_suite, max_samples_per_benchmark=3, k=2, every_n_steps=1, seed=12
    )
    resumed = Trainer(
        model=Toy(),
        args=_args(tmp_path, max_steps=6, restore_callback_states_from_checkpoint=restore_callbacks),
        train_dataset=Zeros(),
        callbacks=[again_first, again_second],
    )
    again_second.attach(resumed)  # given their trainer in the other order: their places still count
    again_first.attach(resumed)
    again_first.attach(resumed)  # and once more: still one callback
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-4"))
    running = [c for c in resumed.callback_handler.callbacks if isinstance(c, GroundingEvalTrainerCallback)]
    assert len(running) == 2
    # rebuilt by transformers or not, each running callback shares its own user's evaluator
    assert [c.evaluator for c in running] == [again_first.evaluator, again_second.evaluator]
    assert again_first.sample_ids == first.sample_ids and again_first.table_ids == first.table_ids
    assert again_second.sample_ids == second.sample_ids and again_second.table_ids == second.table_ids
    assert [h["step"] for h in again_first.history] == [2, 4, 6]
    assert [h["step"] for h in again_second.history] == [1, 2, 3, 4, 5, 6]


def test_a_callback_with_no_saved_entry_starts_afresh(demo_suite: Path, tmp_path: Path) -> None:
    from transformers import TrainerState

    first, second = _toy_cb(demo_suite, every_n_steps=1), _toy_cb(demo_suite, every_n_steps=1)
    trainer = Trainer(model=Toy(), args=_args(tmp_path), train_dataset=Zeros(), callbacks=[first, second])
    first.attach(trainer)
    second.attach(trainer)
    entry = {"args": {}, "attributes": {"sample_ids": {"screenspot_v2": ["mobile_2"]}}}
    state = TrainerState()
    state.stateful_callbacks = {"GroundingEvalTrainerCallback": [entry]}  # one entry, two callbacks
    assert first._saved_state(state, trainer) == entry
    assert second._saved_state(state, trainer) is None


def test_a_twin_never_given_its_trainer_is_still_refused(demo_suite: Path, tmp_path: Path) -> None:
    from gge.errors import GgeError

    given, forgotten = _toy_cb(demo_suite, every_n_steps=1), _toy_cb(demo_suite, every_n_steps=1)
    trainer = Trainer(
        model=Toy(), args=_args(tmp_path, max_steps=1), train_dataset=Zeros(), callbacks=[given, forgotten]
    )
    given.attach(trainer)
    with pytest.raises(GgeError, match=r"has no trainer: call callback.attach\(trainer\)"):
        trainer.train()
    assert forgotten.trainer is None and given.evaluator is not forgotten.evaluator


def test_one_saved_state_goes_to_the_first_of_two_callbacks(demo_suite: Path, tmp_path: Path) -> None:
    """A checkpoint of one callback resumed with two: transformers rebuilds the first, its twin."""
    alone = _toy_cb(demo_suite, every_n_steps=2, seed=1)
    _toy_run(tmp_path, alone, save_strategy="steps", save_steps=4)
    asked: list[str] = []

    def policy(model: Any, processing_class: Any) -> Any:  # code: not in the checkpoint, kept from the twin
        asked.append(type(model).__name__)
        return model

    first = _toy_cb(demo_suite, every_n_steps=2, seed=5, policy=policy)
    second = _toy_cb(demo_suite, every_n_steps=2, seed=6)
    resumed = Trainer(
        model=Toy(),
        args=_args(tmp_path, max_steps=6, restore_callback_states_from_checkpoint=True),
        train_dataset=Zeros(),
        callbacks=[first, second],
    )
    second.attach(resumed)
    first.attach(resumed)
    resumed.train(resume_from_checkpoint=str(tmp_path / "checkpoint-4"))
    running = [c for c in resumed.callback_handler.callbacks if isinstance(c, GroundingEvalTrainerCallback)]
    assert sorted(id(c.evaluator) for c in running) == sorted([id(first.evaluator), id(second.evaluator)])
    (rebuilt,) = [c for c in running if c is not first and c is not second]
    assert rebuilt.evaluator is first.evaluator  # the one transformers replaced
    assert first.sample_ids == alone.sample_ids  # and it restored the checkpoint's subset
    assert [h["step"] for h in first.history] == [2, 4, 6]
    assert asked == ["Toy"]  # its policy function evaluated step 6


# -- FSDP: the root's own parameters gathered while the model answers --------------------------------
class Watched(Toy):
    """The toy grounder; notes whether each predict ran inside a summon_full_params of the FSDP root."""

    def __init__(self, log: list[Any]) -> None:
        super().__init__()
        self.log = log

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        self.log.append("predict")
        return super().predict(samples)


@pytest.fixture
def gloo_group() -> Iterator[None]:
    """A one-process gloo group on CPU (what FSDP needs to wrap a module)."""
    import torch.distributed as dist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.mark.filterwarnings("ignore:FSDP is switching to use `NO_SHARD`")
def test_under_fsdp_the_model_answers_inside_the_roots_summon_full_params(
    demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gloo_group: None
) -> None:
    import contextlib

    from torch.distributed.fsdp import FullyShardedDataParallel

    log: list[Any] = []
    real = FullyShardedDataParallel.summon_full_params

    @contextlib.contextmanager
    def recording(module: torch.nn.Module, **kwargs: Any) -> Iterator[None]:
        with real(module, **kwargs):
            log.append(("enter", module, kwargs))
            yield
            log.append("exit")

    monkeypatch.setattr(FullyShardedDataParallel, "summon_full_params", staticmethod(recording))
    model = Watched(log)
    cb = _toy_cb(demo_suite, every_n_steps=1, max_samples_per_benchmark=3, batch_size=2)
    trainer = _trainer(tmp_path, cb, model)
    root = FullyShardedDataParallel(model, device_id=torch.device("cpu"))
    trainer.model_wrapped = root  # what the trainer holds under FSDP: the root wrapper
    cb.evaluate()
    assert log[0] == ("enter", root, {"recurse": False, "writeback": False})
    assert log[-1] == "exit"
    assert log[1:-1] == ["predict"] * (len(BENCHMARKS) * 2)  # every forward inside it, 2 batches each
    assert model.training  # back in train mode after, the root's parameters released
    assert cb.sample_ids is not None and len(cb.history) == 1


def test_without_fsdp_no_parameters_are_summoned(
    demo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("summon_full_params outside FSDP")

    monkeypatch.setattr(FullyShardedDataParallel, "summon_full_params", staticmethod(never))
    cb = _toy_cb(demo_suite, every_n_steps=1)
    _trainer(tmp_path, cb)
    cb.evaluate()
    assert len(cb.history) == 1
