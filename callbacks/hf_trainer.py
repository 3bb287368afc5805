"""GroundingEvalTrainerCallback: evaluate the model a transformers ``Trainer`` (or TRL trainer) is training.

The same evaluation as :class:`gge.callbacks.GroundingEvalCallback` (one piece of code,
:class:`gge.run.online.OnlineEvaluator`): fixed seeded stratified subsets, sharded over the trainer's
processes, gathered once, official scoring; logged through the trainer. Give it its trainer
(``cb.attach(trainer)``, or ``trainer=`` as TRL's own callbacks take it): events of a
``TrainerCallback`` carry no trainer, and the trainer is what logs, unwraps the model and knows the
processes.

* **When**: every ``every_n_steps`` optimizer steps (``on_step_end``), and/or whenever the trainer
  evaluates (``on_evaluate``, with ``eval_on_evaluate``); never twice at one step.
* **What it logs**: ``grounding/<benchmark>/top1``, ``grounding/<benchmark>/oracle@K``,
  ``grounding/mean/top1``... through ``transformers.Trainer.log``: they land in
  ``trainer.state.log_history`` and go to every ``report_to`` integration (W&B, TensorBoard...;
  those prefix keys with ``train/``). Every rank logs the same gathered values, as the trainer does
  for its own metrics; the integrations write on the main process only. The base
  ``Trainer.log`` is called, not a subclass's: TRL trainers' ``log`` also flushes the metrics they
  accumulate between logging steps (rewards...), which an evaluation row must not take away.
* On ``on_evaluate`` it also adds ``eval_grounding/...`` to the trainer's evaluation metrics, so
  ``metric_for_best_model="grounding/mean/top1"`` (with ``load_best_model_at_end``) works; attach it
  before an ``EarlyStoppingCallback`` that watches one of them.
* **Views** (main process only): with a W&B run active (``report_to=["wandb"]`` or your own
  ``wandb.init``) the same tables as the Lightning callback (screenshots with boxes, breakdown,
  Oracle@k curve), stepped by ``train/global_step`` like the ``WandbCallback``'s rows; with
  TensorBoard the overlays as images; otherwise JPEG overlays under ``output_dir/grounding/``. A
  failure there is a warning, never an exception into training.
* **Model**: unwrapped from DDP / FSDP / DeepSpeed with ``trainer.accelerator.unwrap_model``, in eval
  mode under ``torch.no_grad`` during the evaluation and back in its own modes afterwards (every
  submodule's), also on error. A ``greedy`` policy (one answer per sample) logs Top-1 only.
* **Checkpoints**: the subset ids, table ids and history are saved in ``trainer_state.json``
  (``TrainerState.stateful_callbacks``, the :class:`transformers.trainer_callback.ExportableState`
  contract) and restored on ``resume_from_checkpoint``, so a resumed run evaluates the same samples.

Example:
    >>> cb = GroundingEvalTrainerCallback(["screenspot_v2"], data_root="/data/gui", every_n_steps=100)
    >>> cb.every_n_steps, cb.eval_on_evaluate, cb.k
    (100, True, 5)
    >>> sorted(cb.state()["attributes"])
    ['history', 'sample_ids', 'table_ids']
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import sys
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from transformers import Trainer, TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_callback import ExportableState

from gge.documents.results import BenchmarkEntry
from gge.errors import GgeError
from gge.models.base import Predictor
from gge.run.online import (
    WANDB_STEP_KEY,
    BenchmarkSpec,
    EvaluatorViews,
    OnlineEvaluator,
    check_every,
    check_policy,
    is_due,
)
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS

OWNER = "GroundingEvalTrainerCallback"

PolicyFn = Callable[[Any, Any], Predictor]
"""``policy(model, processing_class) -> Policy``: the unwrapped model and the trainer's processing class."""

_POLICY_HINT = (
    "policy=lambda model, processing_class: GroundingPolicy(TransformersBackend(model, processor), "
    "preset_settings(...)) (gge.models.policy, gge.models.hf, gge.models.factory)"
)


class TensorBoardLogger:
    """A transformers ``TensorBoardCallback``'s writer, as ``log_evaluation`` (gge.loggers.dispatch) takes it.

    ``log_evaluation`` recognises loggers by class name (it imports no logger library) and calls
    ``logger.experiment.add_image``; this class carries that name and the writer.
    """

    def __init__(self, writer: Any) -> None:
        self.experiment = writer


def _jsonable(value: Any) -> Any:
    """Paths as strings, mappings and sequences converted inside: what ``trainer_state.json`` can hold."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _check_policy_fn(policy: Any) -> None:
    """A policy function must take ``(model, processing_class)``: say so now, not at the first evaluation."""
    message = f"{OWNER}: policy must be a function (model, processing_class) -> Policy, e.g. {_POLICY_HINT}"
    if not callable(policy):
        raise GgeError(message)
    try:
        inspect.signature(policy).bind(None, None)
    except TypeError:
        raise GgeError(message) from None
    except ValueError:  # no signature to read (a builtin): trust it
        pass


def _full_params(wrapped: Any) -> contextlib.AbstractContextManager[Any]:
    """Under FSDP (the original wrapper), the root module's own parameters gathered for generation.

    ``accelerator.unwrap_model`` strips the root FSDP wrapper, so parameters only the root holds
    (embeddings, the LM head) would stay sharded during ``generate``; TRL generates inside
    ``FullyShardedDataParallel.summon_full_params(model, recurse=False)`` for the same reason, and so
    does this. Any other model (plain, DDP, DeepSpeed, FSDP2): no change.
    """
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    except ImportError:  # a torch built without distributed
        return contextlib.nullcontext()
    if isinstance(wrapped, FullyShardedDataParallel):
        return FullyShardedDataParallel.summon_full_params(wrapped, recurse=False, writeback=False)
    return contextlib.nullcontext()


class GroundingEvalTrainerCallback(EvaluatorViews, TrainerCallback, ExportableState):
    """Evaluate the model a transformers ``Trainer`` / TRL trainer is training on grounding benchmarks.

    Args:
        benchmarks: Benchmark names (read from ``data_root/<folder>``), or a mapping from name to
            its root folder, or to its options (``{"root": ..., "language": "cn"}``).
        data_root: Folder holding one folder per benchmark; None with no root given: the synthetic
            demo suite (generated on first use).
        policy: ``policy(model, processing_class)`` returns the policy to evaluate (something with
            ``predict(samples)``, e.g. a :class:`gge.models.policy.GroundingPolicy` over a
            :class:`gge.models.hf.TransformersBackend` wrapping ``model``); ``model`` is the
            unwrapped model being trained, ``processing_class`` the trainer's. Default: the model
            itself, which must then implement ``predict``.
        trainer: The trainer (or call :meth:`attach`); needed before training starts.
        every_n_steps: Evaluate every n optimizer steps (None: not by step).
        eval_on_evaluate: Evaluate whenever the trainer evaluates (its ``eval_strategy``, or
            ``trainer.evaluate()``).
        max_samples_per_benchmark: Evaluate a fixed, seeded subset of this many samples per
            benchmark, stratified by the benchmark's official table cells; the same samples every
            time (saved in checkpoints).
        k: Candidates scored per sample (Oracle@1..K).
        selection: The selection strategy reported as Top-1.
        cluster_radius: Radius of the ``cluster`` strategy.
        seed: Seed of the subset and of the demo suite.
        batch_size: Samples per model call.
        num_workers: DataLoader workers decoding screenshots.
        table_samples: Samples per benchmark shown as images (same ids every time).
        pad_batches: Give every rank the same number of batches (FSDP / DeepSpeed ZeRO-3, where every
            forward is a collective); padding results are dropped. Default: on when the trainer
            runs FSDP or DeepSpeed.
        log_dir: Where JPEG overlays go when neither W&B nor TensorBoard takes images (default:
            the trainer's ``output_dir``).
        strict_images: Stop at the first unreadable screenshot (default: that sample is a miss,
            counted under ``image_errors``; training goes on).
        critic_pool: Also judge the critic alone on a frozen synthetic pool per sample each evaluation
            (``{"n": 4, "orders": "rotate", "seed": 0, "kinds": [...], "near": [...]}``, every key
            optional; ``{}`` for the defaults): ``grounding/<name>/critic_pool/accuracy``,
            ``consistency``, ``first_position_rate`` on the same candidates every time.

    Raises:
        GgeError: Bad arguments: an unknown benchmark (with a did-you-mean) or selection, no
            schedule, a size below 1, a trainer that is not a transformers ``Trainer``.

    Example:
        >>> cb = GroundingEvalTrainerCallback({"osworld_g": "/data/osworld_g"}, eval_on_evaluate=True)
        >>> cb.state()["args"]["benchmarks"], cb.every_n_steps
        ({'osworld_g': '/data/osworld_g'}, None)
    """

    # every callback given a trainer, in the order it was first given one (pairs rebuilt callbacks with twins)
    _attached: ClassVar[weakref.WeakValueDictionary[int, GroundingEvalTrainerCallback]] = (
        weakref.WeakValueDictionary()
    )
    _attach_count: ClassVar[itertools.count[int]] = itertools.count()

    def __init__(
        self,
        benchmarks: Sequence[str] | Mapping[str, BenchmarkSpec],
        *,
        data_root: str | Path | None = None,
        policy: PolicyFn | None = None,
        trainer: Trainer | None = None,
        every_n_steps: int | None = None,
        eval_on_evaluate: bool = True,
        max_samples_per_benchmark: int | None = None,
        k: int = 5,
        selection: str = "critic",
        cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
        seed: int = 0,
        batch_size: int = 8,
        num_workers: int = 0,
        table_samples: int = 8,
        pad_batches: bool | None = None,
        log_dir: str | Path | None = None,
        strict_images: bool = False,
        critic_pool: Mapping[str, Any] | None = None,
    ) -> None:
        self.evaluator = OnlineEvaluator(
            benchmarks,
            owner=OWNER,
            data_root=data_root,
            max_samples_per_benchmark=max_samples_per_benchmark,
            k=k,
            selection=selection,
            cluster_radius=cluster_radius,
            seed=seed,
            batch_size=batch_size,
            num_workers=num_workers,
            table_samples=table_samples,
            strict_images=strict_images,
            critic_pool=critic_pool,
        )
        check_every(OWNER, every_n_steps=every_n_steps)
        if every_n_steps is None and not eval_on_evaluate:
            raise GgeError(f"{OWNER}: set every_n_steps, or eval_on_evaluate=True, or both")
        if policy is not None:
            _check_policy_fn(policy)
        self.policy_fn = policy
        self.every_n_steps = every_n_steps
        self.eval_on_evaluate = bool(eval_on_evaluate)
        self.pad_batches = pad_batches
        self.log_dir = log_dir
        self._data_root_arg = None if data_root is None else str(data_root)
        self._last_step: int | None = None
        self._last_scalars: dict[str, float] = {}
        self.trainer: Trainer | None = None
        self._attach_key: int | None = None  # its key in ``_attached``
        self._position: int | None = None  # its place among the trainer's callbacks of this class
        self._adopted = False  # rebuilt by the trainer from a checkpoint, its twin's parts taken
        if trainer is not None:
            self._set_trainer(trainer)

    # -- the trainer ----------------------------------------------------------------------------
    def _set_trainer(self, trainer: Trainer) -> None:
        if not isinstance(trainer, Trainer):
            raise GgeError(f"{OWNER}: trainer must be a transformers Trainer, got {type(trainer).__name__}")
        self.trainer = trainer
        if self._attach_key is None:
            self._attach_key = next(GroundingEvalTrainerCallback._attach_count)
            GroundingEvalTrainerCallback._attached[self._attach_key] = self

    def attach(self, trainer: Trainer) -> GroundingEvalTrainerCallback:
        """Give the callback its trainer and add it to the trainer's callbacks (once).

        Works whether the callback was passed in ``Trainer(callbacks=[...])`` or not.

        Args:
            trainer: A ``transformers.Trainer`` (TRL's ``GRPOTrainer``, ``SFTTrainer``... are ones).

        Returns:
            The callback.

        Example:
            >>> cb = GroundingEvalTrainerCallback(["screenspot_v2"], every_n_steps=50)
            >>> cb.attach(trainer)  # doctest: +SKIP
        """
        self._set_trainer(trainer)
        if not any(cb is self for cb in trainer.callback_handler.callbacks):
            trainer.add_callback(self)
        mine = [cb for cb in trainer.callback_handler.callbacks if type(cb) is type(self)]
        self._position = next(i for i, cb in enumerate(mine) if cb is self)
        return self

    def _adopt_twin(self) -> bool:
        """Take the trainer, policy and evaluator of the callback the trainer replaced with this one.

        With ``restore_callback_states_from_checkpoint=True`` transformers rebuilds stateful callbacks
        from ``trainer_state.json`` (``type(cb)(**state["args"])``) and swaps them in: the rebuilt
        one has no trainer nor policy (they are not JSON); the one it replaced has both. With several
        callbacks of this class, the n-th rebuilt one (in the trainer's order) takes the n-th replaced
        one (in the trainer's order when :meth:`attach` was called, else the order they were given
        their trainer). Its state is restored afterwards from the checkpoint (``on_train_begin``).
        """
        attached = list(GroundingEvalTrainerCallback._attached.values())  # in the order first given a trainer
        for trainer in {id(t): t for t in (cb.trainer for cb in attached) if t is not None}.values():
            running = [cb for cb in trainer.callback_handler.callbacks if type(cb) is type(self)]
            if not any(cb is self for cb in running):
                continue
            replaced = sorted(
                (
                    cb
                    for cb in attached
                    if cb.trainer is trainer and type(cb) is type(self) and not any(r is cb for r in running)
                ),
                key=lambda cb: (cb._position is None, cb._position or 0),  # stable: then attach order
            )
            rebuilt = [cb for cb in running if cb.trainer is None or cb._adopted]
            index = next(i for i, cb in enumerate(rebuilt) if cb is self)
            if index >= len(replaced):
                return False
            twin = replaced[index]
            self.evaluator = twin.evaluator  # the user's reference sees the same history
            self.policy_fn = twin.policy_fn
            self._adopted = True
            self._set_trainer(trainer)
            return True
        return False

    def _require_trainer(self) -> Trainer:
        if self.trainer is None and not self._adopt_twin():
            raise GgeError(
                f"{OWNER} has no trainer: call callback.attach(trainer) after building the trainer "
                "(or pass trainer=..., as TRL's callbacks take it); it logs through the trainer"
            )
        assert self.trainer is not None
        return self.trainer

    # -- checkpoints (transformers' ExportableState) --------------------------------------------
    def state(self) -> dict[str, Any]:
        """The callback's settings (``args``) and its fixed subset, table ids and history (``attributes``).

        Saved by the trainer in ``trainer_state.json`` under ``stateful_callbacks`` at each checkpoint.
        """
        specs = {name: _jsonable(spec) for name, spec in self.evaluator.specs.items()}
        ev = self.evaluator
        return {
            "args": {
                "benchmarks": specs,
                "data_root": self._data_root_arg,
                "every_n_steps": self.every_n_steps,
                "eval_on_evaluate": self.eval_on_evaluate,
                "max_samples_per_benchmark": ev.max_samples,
                "k": ev.k,
                "selection": ev.selection,
                "cluster_radius": ev.cluster_radius,
                "seed": ev.seed,
                "batch_size": ev.batch_size,
                "num_workers": ev.num_workers,
                "table_samples": ev.table_samples,
                "pad_batches": self.pad_batches,
                "log_dir": None if self.log_dir is None else str(self.log_dir),
                "strict_images": ev.strict_images,
            },
            "attributes": {
                "sample_ids": ev.sample_ids,
                "table_ids": ev.table_ids,
                "history": ev.history,
            },
        }

    @classmethod
    def from_state(
        cls, state: Mapping[str, Any], *, policy: PolicyFn | None = None, trainer: Trainer | None = None
    ) -> GroundingEvalTrainerCallback:
        """Rebuild a callback from :meth:`state` (e.g. read from a checkpoint's ``trainer_state.json``).

        Args:
            state: ``{"args": ..., "attributes": ...}`` as :meth:`state` returns it.
            policy: The policy function (not saved: it is code).
            trainer: The trainer (not saved).

        Returns:
            The callback, with the saved subset, table ids and history.

        Example:
            >>> cb = GroundingEvalTrainerCallback(["screenspot_v2"], every_n_steps=10)
            >>> cb.history.append({"step": 10})
            >>> GroundingEvalTrainerCallback.from_state(cb.state()).history
            [{'step': 10}]
        """
        callback = cls(**dict(state["args"]), policy=policy, trainer=trainer)
        callback._restore(state.get("attributes") or {})
        return callback

    def _restore(self, attributes: Mapping[str, Any]) -> None:
        self.evaluator.load_state_dict(attributes)

    def _saved_state(self, state: TrainerState, trainer: Trainer) -> Mapping[str, Any] | None:
        """This callback's entry in ``state.stateful_callbacks`` (one of a list for several of its class).

        With several callbacks of this class the trainer keeps a list: their states when training
        started, then each save appends every one's state again, in callback order. The last ``n``
        entries (``n`` callbacks of this class now, as many as the run that saved it had) are the
        ones the checkpoint saved last; this callback's is the one at its position among them.
        """
        stored: Any = state.stateful_callbacks  # a dict of states once built (typed as a list)
        saved = stored.get(type(self).__name__) if isinstance(stored, Mapping) else None
        if isinstance(saved, list):
            mine = [cb for cb in trainer.callback_handler.callbacks if type(cb) is type(self)]
            index = next((i for i, cb in enumerate(mine) if cb is self), len(mine))
            latest = saved[-len(mine) :]  # (as many callbacks of this class as when it was saved)
            saved = latest[index] if index < len(latest) else None
        return saved if isinstance(saved, Mapping) else None

    # -- events ---------------------------------------------------------------------------------
    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Check the set-up, restore the subset and history of a resumed run, read the benchmarks."""
        trainer = self._require_trainer()
        if not any(cb is self for cb in trainer.callback_handler.callbacks):
            raise GgeError(
                f"{OWNER}: the trainer given to attach() is not the one running this callback; "
                "attach it to the trainer that trains"
            )
        saved = self._saved_state(state, trainer)
        if saved is not None:  # a resumed run: the checkpoint's subset wins (curves stay comparable)
            self._restore(saved.get("attributes") or {})
        self.evaluator.load()
        strategy = getattr(args.eval_strategy, "value", args.eval_strategy)
        if self.every_n_steps is None and strategy == "no" and state.is_world_process_zero:
            warnings.warn(
                f"{OWNER}: eval_strategy is 'no' and every_n_steps is None, so this run never "
                "evaluates on its own: it evaluates only when trainer.evaluate() is called. Set "
                "every_n_steps=... (or an eval_strategy with an eval_dataset)",
                UserWarning,
                stacklevel=2,
            )

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        """Evaluate every ``every_n_steps`` optimizer steps."""
        if is_due(state.global_step, self.every_n_steps) and state.global_step != self._last_step:
            self.evaluate()

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        """Evaluate when the trainer evaluates (once per step); add ``eval_grounding/...`` to its metrics."""
        if self.eval_on_evaluate and state.global_step != self._last_step:
            self.evaluate()
        if metrics is not None and self._last_step == state.global_step:
            metrics.update({f"eval_{key}": value for key, value in self._last_scalars.items()})

    # -- the evaluation -------------------------------------------------------------------------
    def _policy(self, model: Any, processing_class: Any) -> Predictor:
        policy = self.policy_fn(model, processing_class) if self.policy_fn is not None else model
        return check_policy(policy, OWNER, type(model).__name__, _POLICY_HINT)

    def evaluate(self) -> dict[str, BenchmarkEntry]:
        """Run every benchmark on the model being trained now, log the numbers, return the entries.

        Every process must call this (it gathers results across processes); the callback's events
        do. Returns the results.json-style entry of each benchmark.
        """
        trainer = self._require_trainer()
        state, args = trainer.state, trainer.args
        step = state.global_step
        self._last_step = step
        subsets = self.evaluator.select()
        wrapped = getattr(trainer, "model_wrapped", None)
        wrapped = trainer.model if wrapped is None else wrapped
        model = trainer.accelerator.unwrap_model(wrapped)
        policy = self._policy(model, trainer.processing_class)
        pad = self.pad_batches
        if pad is None:
            sharded = ("is_fsdp_enabled", "is_deepspeed_enabled")
            pad = any(bool(getattr(trainer, name, False)) for name in sharded)
        with _full_params(wrapped):
            evaluation = self.evaluator.run(
                policy,
                rank=args.process_index,
                world=args.world_size,
                pad_batches=pad,
                module=model,
                subsets=subsets,
            )
        self._last_scalars = dict(evaluation.scalars)
        self._log_scalars(trainer, evaluation.scalars)
        if state.is_world_process_zero:
            self.evaluator.log_media_safely(evaluation, step=step, **self._media_targets(trainer))
        self.evaluator.record(evaluation, step=step, epoch=float(state.epoch or 0.0))
        return evaluation.entries

    def _log_scalars(self, trainer: Trainer, scalars: Mapping[str, float]) -> None:
        """``transformers.Trainer.log``: ``state.log_history`` and every ``report_to`` integration.

        The trainer's ``on_log`` clears ``control.should_log``; an evaluation row logged from
        ``on_step_end`` must not cancel the trainer's own row (loss, rewards...) due at this step,
        so the flag is put back.
        """
        control = trainer.control
        should_log = control.should_log
        try:
            Trainer.log(trainer, dict(scalars))
        except Exception as e:
            warnings.warn(
                f"{OWNER}: logging the scalars failed at step {trainer.state.global_step} "
                f"({type(e).__name__}: {e}); training goes on",
                UserWarning,
                stacklevel=2,
            )
        finally:
            control.should_log = trainer.control.should_log = should_log

    def _media_targets(self, trainer: Trainer) -> dict[str, Any]:
        """Where the views go: the active W&B run, the TensorBoard writers, the JPEG folder."""
        wandb = sys.modules.get("wandb")
        run = getattr(wandb, "run", None) if wandb is not None else None
        writers = [
            TensorBoardLogger(cb.tb_writer)
            for cb in trainer.callback_handler.callbacks
            if "TensorBoardCallback" in {c.__name__ for c in type(cb).__mro__}
            and getattr(cb, "tb_writer", None) is not None
        ]
        return {
            "loggers": writers,
            "log_dir": self.log_dir or trainer.args.output_dir,
            "wandb_run": run,
            "wandb_step_key": WANDB_STEP_KEY,
        }


__all__ = ["GroundingEvalTrainerCallback", "PolicyFn"]
