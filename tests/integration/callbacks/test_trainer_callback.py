"""GroundingEvalTrainerCallback on real transformers / TRL trainers: schedule, logging, resume, DDP, errors.

Real parts only: a tiny Qwen3-VL checkpoint built offline (trained by a ``Trainer`` and by TRL's
``GRPOTrainer`` on CPU), a toy ``torch.nn.Module`` grounder where the numbers must be exact, the demo
suite, TensorBoard event files and an offline W&B run read back from disk, a 2-process gloo run
forked from this process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from answered import Noting, critic_pick, hits
from gge.callbacks import GroundingEvalTrainerCallback
from paths import ROOT
from tiny_checkpoints import build_tiny_qwen3_vl
from transformers import Trainer, TrainingArguments
from transformers.integrations import TensorBoardCallback

from gge.errors import GgeError
from gge.models.base import Generation, GenerationRequest
from gge.models.factory import preset_settings
from gge.models.hf import TransformersBackend
from gge.models.hf_loading import load_model, load_processor
from gge.models.policy import GroundingPolicy
from gge.types import Candidate, Prediction, Sample

pytestmark = pytest.mark.usefixtures("one_thread")

BENCHMARKS = ["screenspot_v2", "osworld_g"]


@pytest.fixture(scope="module")
def tiny_vl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen3_vl(tmp_path_factory.mktemp("ckpt") / "Qwen3-VL-tiny")


# -- a toy grounder where the numbers are known ------------------------------------------------------
class Toy(torch.nn.Module):
    """Trains a parameter; clicks each target's centre first for ids of even length, else a far miss first.

    Ids of odd length get the far point the higher critic score: a critic miss with the target in
    Oracle@2. It records the ids it is asked about and whether it was in training mode.
    """

    def __init__(self) -> None:
        super().__init__()
        self.offset = torch.nn.Parameter(torch.tensor([4.0, 3.0]))
        self.seen: list[tuple[str, bool, bool]] = []

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        return {"loss": (self.offset**2).sum() * 0.01 + 0 * x.sum()}

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        out = []
        for s in samples:
            self.seen.append((s.id, self.training, torch.is_grad_enabled()))
            box = s.region.pixel_box()
            if box is None:
                out.append(Prediction(s.benchmark, s.id, (Candidate(None),)))
                continue
            centre = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
            far = (centre[0] + 500, centre[1] + 500)
            good, bad = Candidate(centre, 0.8), Candidate(far, 0.2)
            if len(s.id) % 2:
                good, bad = Candidate(far, 0.9), Candidate(centre, 0.1)
            out.append(Prediction(s.benchmark, s.id, (good, bad)))
        return out


class Zeros(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"x": torch.zeros(1)}


def _args(out: Path, **kw: Any) -> TrainingArguments:
    settings: dict[str, Any] = {
        "output_dir": str(out),
        "per_device_train_batch_size": 2,
        "max_steps": 4,
        "report_to": [],
        "logging_steps": 1,
        "use_cpu": True,
        "save_strategy": "no",
        "disable_tqdm": True,
        **kw,
    }
    return TrainingArguments(**settings)


def _toy_cb(demo: Path, **kw: Any) -> GroundingEvalTrainerCallback:
    settings: dict[str, Any] = {
        "data_root": demo,
        "max_samples_per_benchmark": 7,
        "k": 2,
        "batch_size": 2,
        "table_samples": 2,
        **kw,
    }
    return GroundingEvalTrainerCallback(BENCHMARKS, **settings)


def _toy_run(out: Path, cb: GroundingEvalTrainerCallback, **kw: Any) -> tuple[Trainer, Toy]:
    model = Toy()
    resume = kw.pop("resume_from_checkpoint", None)
    trainer = Trainer(model=model, args=_args(out, **kw), train_dataset=Zeros(), eval_dataset=Zeros())
    cb.attach(trainer)
    trainer.train(resume_from_checkpoint=resume)
    return trainer, model


def _grounding_rows(trainer: Trainer) -> list[dict[str, Any]]:
    return [row for row in trainer.state.log_history if "grounding/mean/top1" in row]


# -- a tiny Qwen3-VL trained by a real Trainer ------------------------------------------------------
class TextOnly(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        ids = torch.tensor([5 + i, 6, 7, 8, 9, 10])
        return {"input_ids": ids, "labels": ids.clone()}


class RecordingBackend(TransformersBackend):
    """The real backend; notes the training mode and grad mode the callback left the model in."""

    modes: list[tuple[bool, bool]]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.modes.append((self.model.training, torch.is_grad_enabled()))
        return super().generate(requests)


def _vl_policy(ckpt: Path, modes: list[tuple[bool, bool]], k: int) -> Any:
    processor = load_processor(ckpt, max_pixels=50_000)  # the evaluation's own processor
    settings = preset_settings(
        "qwen3_vl", k=k, proposer="sampling", critic="listwise", max_new_tokens=12, critic_max_new_tokens=6
    )

    def policy(model: Any, processing_class: Any) -> GroundingPolicy:
        backend = RecordingBackend(model, processor)
        backend.modes = modes
        return GroundingPolicy(backend, settings)

    return policy


def test_trainer_logs_through_report_to_at_the_scheduled_steps(
    tiny_vl: Path, demo_suite: Path, tmp_path: Path
) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    modes: list[tuple[bool, bool]] = []
    model = load_model(tiny_vl)
    cb = GroundingEvalTrainerCallback(
        BENCHMARKS,
        data_root=demo_suite,
        policy=_vl_policy(tiny_vl, modes, k=3),
        every_n_steps=2,
        max_samples_per_benchmark=3,
        k=3,
        table_samples=2,
    )
    trainer = Trainer(
        model=model,
        args=_args(tmp_path, report_to=["tensorboard"]),
        train_dataset=TextOnly(),
        callbacks=[cb],  # in the constructor, then given its trainer
    )
    cb.attach(trainer)
    assert sum(c is cb for c in trainer.callback_handler.callbacks) == 1  # attach() did not add it twice
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer.train()

    assert [h["step"] for h in cb.history] == [2, 4]
    assert modes and all(m == (False, False) for m in modes)  # eval mode, no grad...
    assert model.training  # ...and back in train mode
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters())  # it did train
    rows = _grounding_rows(trainer)
    assert [r["step"] for r in rows] == [2, 4]  # in state.log_history, at the evaluated steps only
    losses = [r["step"] for r in trainer.state.log_history if "loss" in r]
    assert losses == [1, 2, 3, 4]  # the trainer's own rows are all there (logging_steps=1)
    for row, entry in zip(rows, cb.history, strict=True):
        for name in BENCHMARKS:
            for key in ("top1", "oracle@3", "critic_miss", "format_error", "official/top1"):
                assert f"grounding/{name}/{key}" in row, key
            assert row[f"grounding/{name}/top1"] == entry[name]["top1"]
        # the outcome split covers every sample once: its six shares add up to 100
        kinds = ("hit", "critic_miss", "proposer_miss", "abstained", "format_error", "image_error")
        for name in BENCHMARKS:
            assert sum(row[f"grounding/{name}/{kind}"] for kind in kinds) == pytest.approx(100.0)
            assert row[f"grounding/{name}/hit"] == pytest.approx(row[f"grounding/{name}/micro/top1"])
    # report_to=["tensorboard"]: the scalars (prefixed train/ by transformers) and the overlays
    (events,) = {p.parent for p in tmp_path.rglob("events.out.tfevents*")}
    acc = EventAccumulator(str(events), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/grounding/mean/top1")] == [2, 4]
    assert [e.value for e in acc.Scalars("train/grounding/screenspot_v2/oracle@3")] == pytest.approx(
        [r["grounding/screenspot_v2/oracle@3"] for r in rows]
    )
    images = acc.Tags()["images"]
    assert sorted(images) == sorted(f"grounding/{n}/{i}" for n in BENCHMARKS for i in cb.table_ids[n])
    assert [e.step for e in acc.Images(images[0])] == [2, 4]
    assert not list(tmp_path.rglob("*.jpg"))  # TensorBoard took the images


def test_grpo_trainer_on_a_tiny_vlm(tiny_vl: Path, demo_suite: Path, tmp_path: Path) -> None:
    """TRL's GRPOTrainer (a Trainer) trains the tiny Qwen3-VL on CPU with the callback attached."""
    from datasets import Dataset
    from PIL import Image
    from trl import GRPOConfig, GRPOTrainer

    modes: list[tuple[bool, bool]] = []
    model = load_model(tiny_vl)
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "click OK"}]}]
    data = Dataset.from_dict({"prompt": [prompt] * 4, "image": [Image.new("RGB", (320, 200), "gray")] * 4})

    def reward(completions: list[Any], **kwargs: Any) -> list[float]:
        return [float(len(str(c)) % 7) for c in completions]

    config = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=2,
        use_vllm=False,
        bf16=False,
        fp16=False,
        use_cpu=True,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=data,
        processing_class=load_processor(tiny_vl, max_pixels=50_000),
    )
    cb = GroundingEvalTrainerCallback(  # as TRL's own callbacks are attached
        ["screenspot_v2"],
        data_root=demo_suite,
        trainer=trainer,
        policy=_vl_policy(tiny_vl, modes, k=2),
        every_n_steps=1,
        max_samples_per_benchmark=2,
        k=2,
        table_samples=1,
    )
    trainer.add_callback(cb)
    trainer.train()

    assert [h["step"] for h in cb.history] == [1, 2]
    assert modes and all(m == (False, False) for m in modes) and model.training
    rows = _grounding_rows(trainer)
    assert [r["step"] for r in rows] == [1, 2]
    assert all("grounding/screenspot_v2/oracle@2" in r and "reward" not in r for r in rows)
    # GRPO's own rows keep their rewards: the evaluation's row did not take them away
    rewards = [r["step"] for r in trainer.state.log_history if "reward" in r]
    assert rewards == [1, 2]
    assert len(list(tmp_path.rglob("grounding/screenspot_v2/step_*/*.jpg"))) == 2  # no TB, no W&B: files


# -- the toy grounder: exact numbers ----------------------------------------------------------------
def test_numbers_state_and_files_of_a_toy_run(demo_suite: Path, tmp_path: Path) -> None:
    cb = _toy_cb(demo_suite, every_n_steps=2)
    trainer, model = _toy_run(tmp_path, cb)
    assert [h["step"] for h in cb.history] == [2, 4]
    assert model.seen and not any(training or grad for _, training, grad in model.seen)
    assert model.training
    assert cb.sample_ids is not None and {len(v) for v in cb.sample_ids.values()} == {7}
    ids = cb.sample_ids["screenspot_v2"]
    hits = sum(len(i) % 2 == 0 for i in ids)  # the critic picks the centre for ids of even length
    row = _grounding_rows(trainer)[-1]
    assert row["grounding/screenspot_v2/top1"] == pytest.approx(100 * hits / 7)
    assert row["grounding/screenspot_v2/oracle@2"] == 100.0
    assert row["grounding/screenspot_v2/critic_miss"] == pytest.approx(100 * (7 - hits) / 7)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jpg"))
    assert len(files) == 2 * 2 * 2 and files[0].startswith("grounding/")  # 2 steps x 2 benchmarks x 2


@pytest.mark.parametrize("restore_callbacks", [False, True], ids=["default", "restore-callback-states"])
def test_resume_keeps_the_subset_and_history(
    demo_suite: Path, tmp_path: Path, restore_callbacks: bool
) -> None:
    first = _toy_cb(demo_suite, every_n_steps=2)
    _toy_run(tmp_path, first, save_strategy="steps", save_steps=2)
    saved = json.loads((tmp_path / "checkpoint-4" / "trainer_state.json").read_text())
    state = saved["stateful_callbacks"]["GroundingEvalTrainerCallback"]
    assert state["attributes"]["sample_ids"] == first.sample_ids
    assert [h["step"] for h in state["attributes"]["history"]] == [2, 4]

    other = _toy_cb(demo_suite, every_n_steps=2, seed=7)
    trainer, _ = _toy_run(tmp_path / "fresh", other, max_steps=2)
    assert other.sample_ids != first.sample_ids  # another seed picks another subset...

    again = _toy_cb(demo_suite, every_n_steps=2, seed=7)
    trainer, model = _toy_run(
        tmp_path,
        again,
        max_steps=6,
        resume_from_checkpoint=str(tmp_path / "checkpoint-4"),
        restore_callback_states_from_checkpoint=restore_callbacks,
    )
    assert again.sample_ids == first.sample_ids  # ...but the checkpoint's subset wins
    assert again.table_ids == first.table_ids
    assert [h["step"] for h in again.history] == [2, 4, 6]
    evaluated = {i for i, _, _ in model.seen}
    assert evaluated == {i for ids in first.sample_ids.values() for i in ids}
    (running,) = [
        c for c in trainer.callback_handler.callbacks if isinstance(c, GroundingEvalTrainerCallback)
    ]
    assert (running is again) != restore_callbacks  # transformers rebuilt it from the checkpoint...
    assert running.evaluator is again.evaluator  # ...sharing the user's evaluator


def test_on_evaluate_feeds_metric_for_best_model(demo_suite: Path, tmp_path: Path) -> None:
    cb = _toy_cb(demo_suite, every_n_steps=2, eval_on_evaluate=True)
    trainer, _ = _toy_run(
        tmp_path,
        cb,
        eval_strategy="steps",
        eval_steps=2,
        save_strategy="steps",
        save_steps=2,
        metric_for_best_model="grounding/mean/top1",
        load_best_model_at_end=True,
    )
    assert [h["step"] for h in cb.history] == [2, 4]  # by step and on evaluate: once per step
    assert trainer.state.best_metric == pytest.approx(_grounding_rows(trainer)[-1]["grounding/mean/top1"])
    trainer.evaluate()  # after training, at the last step: nothing new
    assert len(cb.history) == 2
    evaluate_only = _toy_cb(demo_suite)  # eval_on_evaluate only
    trainer = Trainer(model=Toy(), args=_args(tmp_path / "ev"), eval_dataset=Zeros())
    evaluate_only.attach(trainer)
    metrics = trainer.evaluate()
    (entry,) = evaluate_only.history
    mean = (entry["screenspot_v2"]["top1"] + entry["osworld_g"]["top1"]) / 2
    assert metrics["eval_grounding/mean/top1"] == pytest.approx(mean)


@pytest.mark.distributed
def test_ddp_two_processes_give_the_single_process_numbers(demo_suite: Path, tmp_path: Path) -> None:
    single = _ddp_worker(0, 1, 0, tmp_path / "one", demo_suite)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("fork")  # CPU only, no CUDA initialised: like Lightning's ddp_fork
    procs = [ctx.Process(target=_ddp_worker, args=(r, 2, port, tmp_path / "two", demo_suite)) for r in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    ranks = [json.loads((tmp_path / "two" / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rank in ranks:
        assert rank["world"] == 2
        assert rank["rows"] == single["rows"] and rank["rows"]  # every rank logs the gathered numbers
        assert rank["history"] == [{**h, "epoch": rank["history"][0]["epoch"]} for h in single["history"]]
    seen = [{i for i, _, _ in rank["seen"]} for rank in ranks]
    assert seen[0] and seen[1] and not seen[0] & seen[1]  # sharded: no sample twice
    assert seen[0] | seen[1] == {i for ids in single["sample_ids"].values() for i in ids}


def _ddp_worker(rank: int, world: int, port: int, out: Path, demo: Path) -> dict[str, Any]:
    if world > 1:  # a forked child: make it a torch.distributed process as torchrun would
        from accelerate.state import AcceleratorState

        os.environ.update(
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE=str(world),
            LOCAL_WORLD_SIZE=str(world),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
        )
        AcceleratorState._reset_state(reset_partial_state=True)  # the parent's single-process state
    cb = _toy_cb(demo, every_n_steps=2)
    trainer, model = _toy_run(out, cb, max_steps=2, ddp_timeout=60)
    result = {
        "world": trainer.args.world_size,
        "rows": [
            {k: v for k, v in r.items() if k.startswith("grounding/")} for r in _grounding_rows(trainer)
        ],
        "history": cb.history,
        "seen": model.seen,
        "sample_ids": cb.sample_ids,
    }
    if world > 1:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"rank{rank}.json").write_text(json.dumps(result))
        torch.distributed.destroy_process_group()
    return result


# -- W&B, failures, arguments -----------------------------------------------------------------------
def test_wandb_tables_step_with_the_trainer_rows(demo_suite: Path, wandb_env: Path) -> None:
    import wandb
    from wandb_reader import find_run_dirs, read_run

    cb = _toy_cb(demo_suite, every_n_steps=2)
    try:
        _toy_run(wandb_env / "out", cb, report_to=["wandb"])
    finally:
        wandb.finish()
    (run_dir,) = find_run_dirs(wandb_env / "wandb")
    run = read_run(run_dir)
    tables = run.tables("grounding/screenspot_v2/samples")
    assert [t.row["train/global_step"] for t in tables] == [2, 4]  # none dropped, on the trainer's axis
    assert all([r["id"] for r in t.rows()] == cb.table_ids["screenspot_v2"] for t in tables)
    image = tables[0].rows()[0]["image"]
    assert {"ground_truth", "candidates", "pick"} <= set(image.boxes)
    curve = [
        (r["train/global_step"], r["train/grounding/mean/top1"])
        for r in run.history
        if "train/grounding/mean/top1" in r
    ]
    assert curve == [
        (h["step"], pytest.approx((h["screenspot_v2"]["top1"] + h["osworld_g"]["top1"]) / 2))
        for h in cb.history
    ]
    assert not list((wandb_env / "out").rglob("*.jpg"))


def test_a_failing_view_is_a_warning_and_training_goes_on(demo_suite: Path, tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    class Broken(SummaryWriter):
        def add_image(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("disk full")

    cb = _toy_cb(demo_suite, every_n_steps=2)
    model = Toy()
    trainer = Trainer(
        model=model,
        args=_args(tmp_path),
        train_dataset=Zeros(),
        callbacks=[TensorBoardCallback(Broken(str(tmp_path / "tb")))],
    )
    with pytest.warns(UserWarning, match=r"failed at step \d \(OSError: disk full\)") as caught:
        cb.attach(trainer).trainer.train()  # type: ignore[union-attr]
    assert sum("disk full" in str(w.message) for w in caught) == 2
    assert trainer.state.global_step == 4 and [h["step"] for h in cb.history] == [2, 4]
    assert len(_grounding_rows(trainer)) == 2  # the scalars were logged


def test_bad_arguments_and_set_up(demo_suite: Path, tmp_path: Path) -> None:
    with pytest.raises(GgeError, match="did you mean 'screenspot_pro'"):
        GroundingEvalTrainerCallback(["screenspot_pr"])
    with pytest.raises(GgeError, match="list of names"):
        GroundingEvalTrainerCallback("screenspot_v2")  # type: ignore[arg-type]
    with pytest.raises(GgeError, match="every_n_steps must be at least 1, got 0"):
        GroundingEvalTrainerCallback(["screenspot_v2"], every_n_steps=0)
    with pytest.raises(GgeError, match="set every_n_steps, or eval_on_evaluate"):
        GroundingEvalTrainerCallback(["screenspot_v2"], eval_on_evaluate=False)
    with pytest.raises(GgeError, match="selection"):
        GroundingEvalTrainerCallback(["screenspot_v2"], selection="best")
    with pytest.raises(GgeError, match="max_samples_per_benchmark must be at least 1, got 0"):
        GroundingEvalTrainerCallback(["screenspot_v2"], max_samples_per_benchmark=0)
    with pytest.raises(GgeError, match=r"policy must be a function \(model, processing_class\)"):
        GroundingEvalTrainerCallback(["screenspot_v2"], policy=lambda module: module)  # Lightning's shape
    with pytest.raises(GgeError, match="must be a transformers Trainer"):
        GroundingEvalTrainerCallback(["screenspot_v2"], trainer=object())  # type: ignore[arg-type]

    def trainer(model: torch.nn.Module, cb: GroundingEvalTrainerCallback) -> Trainer:
        return Trainer(model=model, args=_args(tmp_path, max_steps=2), train_dataset=Zeros(), callbacks=[cb])

    with pytest.raises(GgeError, match=r"has no trainer: call callback.attach\(trainer\)"):
        trainer(Toy(), _toy_cb(demo_suite, every_n_steps=1)).train()  # never given its trainer

    class NoPredict(Toy):
        predict = None  # type: ignore[assignment]

    cb = _toy_cb(demo_suite, every_n_steps=1)
    with pytest.raises(GgeError, match="NoPredict has no predict"):
        cb.attach(trainer(NoPredict(), cb)).trainer.train()  # type: ignore[union-attr]
    cb = _toy_cb(demo_suite)  # eval_on_evaluate, no eval_strategy: it would never run
    with pytest.warns(UserWarning, match="never evaluates on its own"):
        cb.attach(trainer(Toy(), cb)).trainer.train()  # type: ignore[union-attr]
    assert cb.history == []


# -- the docs' snippet (docs/training.md, linked from the README) ----------------------------------
README = ROOT / "docs" / "training.md"


@pytest.mark.slow
def test_readme_snippet_runs_as_written(tiny_vl: Path, demo_suite: Path, tmp_path: Path) -> None:
    """docs/training.md's ``GroundingEvalTrainerCallback`` block, as written, under ``Trainer.train``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    found = [b for b in blocks if "GroundingEvalTrainerCallback(" in b]
    if not found:
        pytest.fail("docs/training.md has no GroundingEvalTrainerCallback block")
    (code,) = found
    # the only change: the two paths the snippet asks the reader to set
    code, n_ckpt = re.subn(r'^CKPT = ".*?"', f"CKPT = {str(tiny_vl)!r}", code, flags=re.MULTILINE)
    code, n_data = re.subn(r'^DATA = ".*?"', f"DATA = {str(demo_suite)!r}", code, flags=re.MULTILINE)
    assert n_ckpt == n_data == 1
    namespace: dict[str, Any] = {}
    exec(compile(code, str(README), "exec"), namespace)
    callback = namespace["callback"]
    assert isinstance(callback, GroundingEvalTrainerCallback)

    callback.max_samples = 1  # keep the tiny run short: 1 sample per benchmark, evaluated at step 1
    callback.every_n_steps = 1
    answered: list[tuple[Sample, Prediction]] = []
    snippet_policy = callback.policy_fn
    assert snippet_policy is not None

    # the snippet's policy, noting what it answered
    callback.policy_fn = lambda model, processing_class: Noting(
        snippet_policy(model, processing_class), answered
    )
    trainer = Trainer(model=load_model(tiny_vl), args=_args(tmp_path, max_steps=1), train_dataset=TextOnly())
    callback.attach(trainer)
    trainer.train()
    (row,) = _grounding_rows(trainer)
    assert sorted(s.benchmark for s, _ in answered) == sorted(callback.specs)  # one sample each
    for sample, pred in answered:
        hit = [hits(sample, c) for c in pred.candidates]
        top1 = 100.0 * hits(sample, critic_pick(pred))
        assert row[f"grounding/{sample.benchmark}/top1"] == top1
        assert row[f"grounding/{sample.benchmark}/oracle@{callback.k}"] == 100.0 * any(hit[: callback.k])
    assert [h["step"] for h in callback.history] == [1]


def test_fsdp_root_parameters_are_gathered_only_under_fsdp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under FSDP1 the root's summon_full_params(recurse=False) is entered around the evaluation; else none.

    A recording stand-in for ``FullyShardedDataParallel.summon_full_params`` notes how it was called and
    when its context is entered and left (the real one, on a real FSDP root, is in
    ``test_trainer_callback_ranks_and_state.py``).
    """
    import contextlib

    from gge.callbacks.hf_trainer import _full_params
    from torch.distributed.fsdp import FullyShardedDataParallel

    log: list[Any] = []

    @contextlib.contextmanager
    def recording(module: torch.nn.Module, **kwargs: Any) -> Iterator[None]:
        log.append(("enter", module, kwargs))
        yield
        log.append("exit")

    monkeypatch.setattr(FullyShardedDataParallel, "summon_full_params", staticmethod(recording))
    with _full_params(torch.nn.Linear(2, 2)):
        log.append("evaluate")
    assert log == ["evaluate"]  # a plain module: nothing summoned
    log.clear()
    root = FullyShardedDataParallel.__new__(FullyShardedDataParallel)  # an instance, not initialised
    with _full_params(root):
        log.append("evaluate")
    assert log == [("enter", root, {"recurse": False, "writeback": False}), "evaluate", "exit"]


class ToyCritic(Toy):
    """The toy, with a critic that always picks the first candidate shown (whatever it marks)."""

    def rank(self, samples: Sequence[Sample], images: Sequence[Any], proposals: Sequence[Any]) -> list[Any]:
        from gge.models.base import Judgement

        return [
            Judgement(tuple(float(len(p.candidates) - i) for i in range(len(p.candidates))))
            for p in proposals
        ]


def test_the_critic_pool_through_a_transformers_trainer(demo_suite: Path, tmp_path: Path) -> None:
    cb = _toy_cb(demo_suite, every_n_steps=2, critic_pool={"n": 3})
    trainer = Trainer(model=ToyCritic(), args=_args(tmp_path), train_dataset=Zeros(), eval_dataset=Zeros())
    cb.attach(trainer)
    trainer.train()
    rows = _grounding_rows(trainer)
    assert len(rows) == 2
    for row in rows:  # the first shown, in each of the 3 cyclic orders of every pool
        assert row["grounding/screenspot_v2/critic_pool/first_position_rate"] == 100.0
        assert row["grounding/screenspot_v2/critic_pool/accuracy"] == pytest.approx(100 / 3, abs=1e-3)
        assert row["grounding/screenspot_v2/critic_pool/consistency"] == 0.0
        assert row["grounding/osworld_g/critic_pool/chance"] == pytest.approx(100 / 3, abs=1e-3)
