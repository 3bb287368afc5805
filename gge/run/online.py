"""The evaluation the trainer callbacks run on the model being trained: one piece of code for all trainers.

:class:`OnlineEvaluator` holds everything that is not specific to a trainer: argument checks, the
fixed seeded stratified subsets (``sample_ids``, chosen once and saved in checkpoints) and the table
ids, the run over every benchmark (sharded by rank, the model in eval mode under ``torch.no_grad``,
gathered once, scored with the official rules), the scalars, the per-sample views (W&B tables,
TensorBoard images, JPEG files) and the history. The Lightning callback
(:class:`gge.callbacks.GroundingEvalCallback`) and the transformers / TRL one
(:class:`gge.callbacks.GroundingEvalTrainerCallback`) are adapters over it: they decide *when* to
evaluate, find the model, rank and world size, and send the numbers through their trainer.

Example:
    >>> ev = OnlineEvaluator(["screenspot_v2"], data_root="/data/gui", max_samples_per_benchmark=50)
    >>> ev.k, ev.selection, ev.max_samples, ev.state_dict()["sample_ids"] is None
    (5, 'critic', 50, True)
    >>> is_due(6, 3), is_due(0, 3), is_due(4, None)
    (True, False, False)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, NoReturn, TypeVar, cast, overload

import torch

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import Benchmark, BenchmarkOptions
from gge.benchmarks.loading import load_benchmarks
from gge.benchmarks.sampling import strata_keys, stratified_subset
from gge.documents.caveats import describe
from gge.documents.results import BenchmarkEntry, oracle_at
from gge.errors import GgeError
from gge.models.base import Predictor, answers_per_sample, policy_analysis_options
from gge.run.data import make_loader, shard_indices
from gge.run.evaluate import evaluate_batches, gather_results, needs_images
from gge.run.pool_run import PoolPlan, PoolPolicy, build_plan, pool_extras
from gge.run.settings import DEMO_DATA_ROOT, RunSettings, default_data_root, fetched_data_root
from gge.run.windowed import evaluate_windowed, is_windowed
from gge.scoring.metrics import benchmark_metrics, scalar_metrics
from gge.scoring.pools import DISTRACTOR_KINDS, PoolRecipe
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS
from gge.types import Sample, SampleResult

BenchmarkSpec = str | Path | Mapping[str, Any] | None
"""A benchmark's root folder, or its options (``{"root": ..., "language": "cn"}``), or None."""

T = TypeVar("T")

WANDB_STEP_KEY = "train/global_step"
"""The step metric transformers' ``WandbCallback`` logs with every row (its x axis for every key)."""


def is_due(count: int, every: int | None) -> bool:
    """Whether an evaluation is due after ``count`` steps (or epochs) when evaluating every ``every``.

    Example:
        >>> [n for n in range(1, 8) if is_due(n, 3)]
        [3, 6]
    """
    return every is not None and count > 0 and count % every == 0


def check_every(owner: str, **values: int | None) -> None:
    """Raise a :class:`GgeError` naming ``owner`` for any schedule value (``every_n_*``) below 1.

    Example:
        >>> check_every("Cb", every_n_steps=0)
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: Cb: every_n_steps must be at least 1, got 0
    """
    for label, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise GgeError(f"{owner}: {label} must be at least 1, got {value!r}")


def check_policy(policy: object, owner: str, what: str, hint: str) -> Predictor:
    """``policy`` if it has a ``predict(samples)``, else a :class:`GgeError` saying what to pass.

    Args:
        policy: What the callback's ``policy`` function returned (or the model itself).
        owner: The callback's name, heading the message.
        what: What was asked (e.g. the module's class name).
        hint: How to pass a policy instead.

    Returns:
        ``policy``.
    """
    if not callable(getattr(policy, "predict", None)):
        raise GgeError(f"{owner}: {what} has no predict(samples); pass {hint}")
    return policy  # type: ignore[return-value]


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of every benchmark, the same on every rank (results are gathered).

    Attributes:
        subsets: The samples evaluated, by benchmark.
        results: Their scored results, in sample order, by benchmark.
        entries: The results.json-style entry of each benchmark
            (:func:`gge.scoring.metrics.benchmark_metrics`).
        scalars: The numbers a logger plots (:func:`gge.scoring.metrics.scalar_metrics`):
            ``grounding/<name>/top1``...
        k: The answers scored per sample: the evaluator's ``k``, or 1 for a one-answer policy (a
            ``greedy`` proposer), whose evaluation is Top-1 only (no Oracle@k, no strategies).
    """

    subsets: dict[str, list[Sample]]
    results: dict[str, list[SampleResult]]
    entries: dict[str, BenchmarkEntry]
    scalars: dict[str, float] = field(default_factory=dict)
    k: int = 5


class OnlineEvaluator:
    """Evaluate a policy on fixed subsets of grounding benchmarks, again and again during training.

    Args:
        benchmarks: Benchmark names (read from ``data_root/<folder>``), or a mapping from name to
            its root folder, or to its options (``{"root": ..., "language": "cn"}``).
        owner: The name that heads error messages and warnings (the callback's class name).
        data_root: Folder holding one folder per benchmark (``demo``: the synthetic demo suite); None
            with no root given: what ``gge data fetch`` put in the default folder, else the synthetic
            demo suite (generated on first use).
        max_samples_per_benchmark: Evaluate a fixed, seeded subset of this many samples per
            benchmark, stratified by the benchmark's official table cells (None: all).
        k: Candidates scored per sample (Oracle@1..K).
        selection: The selection strategy reported as Top-1.
        cluster_radius: Radius of the ``cluster`` strategy.
        seed: Seed of the subset and of the demo suite.
        batch_size: Samples per model call.
        num_workers: DataLoader workers decoding screenshots.
        table_samples: Samples per benchmark shown as images (same ids every time).
        strict_images: Stop at the first unreadable screenshot (default: a miss, counted apart).
        critic_pool: Also judge the critic alone, each evaluation, on one frozen synthetic pool per
            sample of the subset (:mod:`gge.scoring.pools`; keys ``n``, ``kinds``, ``near``, ``seed``,
            ``orders``, default ``rotate``): the critic's curve on the same candidates every time,
            ``grounding/<name>/critic_pool/accuracy``, ``consistency``, ``first_position_rate``.

    Raises:
        GgeError: A bad setting, as :class:`~gge.run.settings.RunSettings` words it (an unknown
            benchmark with a did-you-mean, no benchmark, an unknown selection strategy, a size below
            1...), headed by ``owner``.

    Example:
        >>> ev = OnlineEvaluator({"screenspot_pro": "/data/ss-pro"}, owner="MyCallback", k=3)
        >>> sorted(ev.specs), ev.k
        (['screenspot_pro'], 3)
        >>> OnlineEvaluator(["screenspot_v2"], owner="MyCallback", num_workers=-1)
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: MyCallback: num_workers must be >= 0, got -1
    """

    def __init__(
        self,
        benchmarks: Sequence[str] | Mapping[str, BenchmarkSpec],
        *,
        owner: str = "OnlineEvaluator",
        data_root: str | Path | None = None,
        max_samples_per_benchmark: int | None = None,
        k: int = 5,
        selection: str = "critic",
        cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
        seed: int = 0,
        batch_size: int = 8,
        num_workers: int = 0,
        table_samples: int = 8,
        strict_images: bool = False,
        critic_pool: Mapping[str, Any] | None = None,
    ) -> None:
        # A string reaches RunSettings as it is (it says so); a list's repeats collapse, as before.
        names: Any = benchmarks if isinstance(benchmarks, str) else tuple(dict.fromkeys(benchmarks))
        RunSettings(
            names,
            k=k,
            selection=selection,
            cluster_radius=cluster_radius,
            max_samples=max_samples_per_benchmark,
            batch_size=batch_size,
            num_workers=num_workers,
            table_samples=table_samples,
            owner=owner,
            names={"max_samples": "max_samples_per_benchmark"},
        )
        specs: dict[str, BenchmarkSpec] = (
            dict(benchmarks) if isinstance(benchmarks, Mapping) else dict.fromkeys(benchmarks)
        )
        self.owner = owner
        self.specs: dict[str, BenchmarkSpec] = specs
        self.data_root = None if data_root is None else Path(data_root)
        self.max_samples = max_samples_per_benchmark
        self.k = k
        self.selection = selection
        self.cluster_radius = cluster_radius
        self.seed = seed
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.table_samples = table_samples
        self.strict_images = strict_images
        self.critic_pool = _pool_recipe(owner, critic_pool, seed)
        self._pool: tuple[dict[str, list[Sample]], PoolPlan] | None = None
        self.benchmarks: dict[str, Benchmark] = {}
        self.variants: dict[str, str] = {}
        """Each benchmark's variant in the report's words (for the W&B tables' ``variant`` column)."""
        self.samples: dict[str, list[Sample]] = {}
        self.sample_ids: dict[str, list[str]] | None = None
        self.table_ids: dict[str, list[str]] = {}
        self.history: list[dict[str, Any]] = []

    # -- set-up ---------------------------------------------------------------------------------
    def _options(self) -> dict[str, BenchmarkOptions]:
        """Each benchmark's options from its spec: a mapping (``root`` and options), a root path, or None."""
        options: dict[str, BenchmarkOptions] = {}
        for name, spec in self.specs.items():
            given = dict(spec) if isinstance(spec, Mapping) else {} if spec is None else {"root": str(spec)}
            try:
                options[name] = get_benchmark(name).options_type(**given)
            except TypeError as e:
                raise GgeError(f"{self.owner}: options of {name}: {e}") from None
        return options

    def load(self) -> None:
        """Read the benchmarks once (every rank reads the same files); later calls do nothing.

        Every sample is kept (:meth:`select` draws the stratified subset); ``data_root`` defaults to
        the demo suite only when some benchmark has no root of its own.
        """
        if self.samples:
            return
        options = self._options()
        if self.data_root == Path(DEMO_DATA_ROOT):  # the synthetic suite, whatever was fetched
            self.data_root = default_data_root(self.seed, None)
        elif self.data_root is None and not all(o.root for o in options.values()):
            unrooted = [n for n, o in options.items() if not o.root]
            self.data_root = fetched_data_root(unrooted, None) or default_data_root(self.seed, None)
        loaded = load_benchmarks(list(self.specs), self.data_root, options, max_samples=None)
        self.benchmarks.update(loaded.benchmarks)
        self.samples.update(loaded.samples)
        for name, ld in loaded.loads.items():
            self.variants[name] = describe(ld.summary["variant"], ld.summary.get("headline_caveat"))

    def select(self) -> dict[str, list[Sample]]:
        """The fixed subset of each benchmark (chosen once, or restored from a checkpoint).

        Reads the benchmarks first if needed.

        Raises:
            GgeError: Ids restored from a checkpoint are not in the benchmark files any more.
        """
        self.load()
        if self.sample_ids is None:
            self.sample_ids = {}
        for name, samples in self.samples.items():
            if name not in self.sample_ids:  # first use, or a benchmark the checkpoint did not have
                spec = self.benchmarks[name].tables[0] if self.benchmarks[name].tables else None
                rows, cols = (spec.rows, spec.cols) if spec else (None, None)
                keys = strata_keys(self.benchmarks[name].label_keys, rows, cols)
                chosen = stratified_subset(samples, self.max_samples, keys, seed=self.seed)
                self.sample_ids[name] = [s.id for s in chosen]
        out: dict[str, list[Sample]] = {}
        for name, samples in self.samples.items():
            by_id = {s.id: s for s in samples}
            ids = self.sample_ids.get(name, [])
            missing = [i for i in ids if i not in by_id]
            if missing:
                raise GgeError(
                    f"{self.owner}: {name}: {len(missing)} sample ids saved in the checkpoint "
                    f"are not in the benchmark files any more (e.g. {missing[0]})"
                )
            out[name] = [by_id[i] for i in ids]
            if name not in self.table_ids:
                keys = strata_keys(self.benchmarks[name].label_keys, None, None)
                picked = stratified_subset(out[name], self.table_samples, keys, seed=self.seed)
                self.table_ids[name] = [s.id for s in picked]
        return out

    # -- the evaluation -------------------------------------------------------------------------
    def run(
        self,
        policy: Predictor,
        *,
        rank: int = 0,
        world: int = 1,
        pad_batches: bool = False,
        module: torch.nn.Module | None = None,
        subsets: dict[str, list[Sample]] | None = None,
    ) -> Evaluation:
        """Run every benchmark on this rank's shard, gather the results, score them.

        Every rank must call this with the same arguments but its own ``rank`` (it gathers results
        across ranks with ``torch.distributed`` when a process group is running). ``module`` (the
        model being trained) is put in eval mode under ``torch.no_grad`` and back in its previous
        mode afterwards, also when the policy raises: every submodule gets its own mode back (a
        frozen part kept in eval mode inside a training model stays in eval mode). A one-answer
        policy (:func:`gge.models.base.answers_per_sample`) is scored with K = 1: Top-1 only.

        Args:
            policy: The model to evaluate.
            rank: This process's rank.
            world: Number of processes.
            pad_batches: Give every rank the same number of batches (sharded parameters: every
                forward is a collective); padding results are dropped.
            module: The ``torch.nn.Module`` to switch to eval mode meanwhile, if any.
            subsets: The samples (default: :meth:`select`).

        Returns:
            The evaluation (the same on every rank).
        """
        subsets = self.select() if subsets is None else subsets
        k = answers_per_sample(policy, self.k)
        modes = [(sub, sub.training) for sub in module.modules()] if module is not None else []
        if module is not None:
            module.eval()
        entries: dict[str, BenchmarkEntry] = {}
        all_results: dict[str, list[SampleResult]] = {}
        windowed: dict[str, list[SampleResult]] | None = None
        try:
            if is_windowed(policy):  # an endpoint: every benchmark's shard through one request window
                windowed = {}
                shard = [s for group in subsets.values() for s in _shard(group, rank, world)]
                for r in evaluate_windowed(
                    policy, shard, k=k, cluster_radius=self.cluster_radius, strict_images=self.strict_images
                ):
                    windowed.setdefault(r.benchmark, []).append(r)
            with torch.no_grad():
                for name, samples in subsets.items():
                    if windowed is not None:
                        local = windowed.get(name, [])
                    else:
                        loader = make_loader(
                            samples,
                            rank=rank,
                            world=world,
                            batch_size=self.batch_size,
                            num_workers=self.num_workers,
                            pad_batches=pad_batches,
                            decode=needs_images(policy),
                        )
                        local = evaluate_batches(
                            policy,
                            loader,
                            k=k,
                            cluster_radius=self.cluster_radius,
                            strict_images=self.strict_images,
                        )
                    results = gather_results(local, samples)  # a collective: every rank calls it
                    entries[name] = benchmark_metrics(
                        self.benchmarks[name],
                        results,
                        k=k,
                        strategy=self.selection,
                        cluster_radius=self.cluster_radius,
                        **policy_analysis_options(policy),
                    )
                    all_results[name] = results
        finally:
            for sub, mode in modes:  # parents first: each submodule ends in its own mode
                if sub.training != mode:
                    sub.train(mode)
        evaluation = Evaluation(subsets, all_results, entries, scalar_metrics(entries, k), k)
        if self.critic_pool is not None and not isinstance(policy, PoolPolicy):
            self._judge_critic(
                policy, evaluation, rank=rank, world=world, pad_batches=pad_batches, module=module
            )
        return evaluation

    def _judge_critic(self, policy: Predictor, evaluation: Evaluation, **how: Any) -> None:
        """The critic alone on the subset's frozen pools: ``critic_pool`` in each entry, its scalars."""
        assert self.critic_pool is not None
        if self._pool is None:  # drawn once among every sample read: the same pools at every evaluation
            asks, plan = build_plan(self.critic_pool, evaluation.subsets, self.samples)
            self._pool = (asks, plan)
        asks, plan = self._pool
        pooled = PoolPolicy(policy, plan)
        judged = self.run(cast(Predictor, pooled), subsets=asks, **how)
        for name, results in judged.results.items():
            figures = pool_extras(pooled, name, results).get("critic_pool")
            if figures is None:
                continue
            evaluation.entries[name]["critic_pool"] = figures
            for key in POOL_SCALARS:
                if figures[key] is not None:
                    evaluation.scalars[f"grounding/{name}/critic_pool/{key}"] = float(figures[key])

    def log_media(
        self,
        evaluation: Evaluation,
        *,
        step: int,
        loggers: Sequence[Any] = (),
        log_dir: str | Path | None = None,
        wandb_run: Any = None,
        wandb_step_key: str | None = WANDB_STEP_KEY,
    ) -> None:
        """Show each benchmark's samples: W&B tables, TensorBoard images, or JPEG overlays (rank zero only).

        ``loggers`` go through :func:`gge.loggers.dispatch.log_evaluation` (Lightning loggers, chosen by
        class name); ``wandb_run`` (a W&B run that is not one of ``loggers``) gets the same tables
        through :func:`gge.loggers.wandb.log_evaluation_wandb`, stepped by ``wandb_step_key``. JPEG
        files go under ``log_dir`` only when nothing took the images. Exceptions propagate: see
        :meth:`log_media_safely`.
        """
        from gge.loggers.dispatch import log_evaluation
        from gge.loggers.wandb import log_evaluation_wandb

        for name, samples in evaluation.subsets.items():
            by_id = {s.id: s for s in samples}
            common: dict[str, Any] = {
                "step": step,
                "entry": evaluation.entries[name],
                "samples": by_id,
                "results": evaluation.results[name],
                "table_ids": self.table_ids[name],
                "k": evaluation.k,
                "strategy": self.selection,
                "variant": self.variants.get(name, ""),
            }
            if wandb_run is not None:
                bench = self.benchmarks[name]
                log_evaluation_wandb(
                    wandb_run, benchmark_name=bench.name, title=bench.title, step_key=wandb_step_key, **common
                )
                if not loggers:
                    continue
            log_evaluation(loggers, benchmark=self.benchmarks[name], log_dir=log_dir, **common)

    def log_media_safely(self, evaluation: Evaluation, *, step: int, **kwargs: Any) -> bool:
        """:meth:`log_media`, turning any failure into a warning: the views never stop training.

        Returns:
            Whether everything was logged.
        """
        # Tables and overlays are a view of the numbers: a failure there (a logger's network, a
        # disk, an odd image) is reported and never raised into training.
        try:
            self.log_media(evaluation, step=step, **kwargs)
        except Exception as e:
            warnings.warn(
                f"{self.owner}: logging the tables and overlays failed at step {step} "
                f"({type(e).__name__}: {e}); the scalars were logged, training goes on",
                UserWarning,
                stacklevel=2,
            )
            return False
        return True

    def record(self, evaluation: Evaluation, *, step: int, epoch: float) -> dict[str, Any]:
        """Append this evaluation to the history and return the entry.

        Per benchmark: the headline ``top1`` and ``oracle@K`` (the entry's, the official rule's; no
        Oracle@K for a one-answer evaluation), as ``grounding/<name>/top1`` plots them.
        """
        k = evaluation.k
        entry: dict[str, Any] = {"epoch": epoch, "step": step}
        for n, e in evaluation.entries.items():
            entry[n] = {"top1": e["top1"]} if k == 1 else {"top1": e["top1"], f"oracle@{k}": oracle_at(e, k)}
        self.history.append(entry)
        return entry

    # -- checkpoints ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The fixed subset, the table ids and the history of evaluations (plain JSON types)."""
        return {
            "sample_ids": self.sample_ids,
            "table_ids": self.table_ids,
            "history": self.history,
            "seed": self.seed,
        }

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore the subset (so curves stay comparable across a resume) and the history."""
        ids = state_dict.get("sample_ids")
        self.sample_ids = None if ids is None else {str(n): list(v) for n, v in dict(ids).items()}
        self.table_ids = {str(n): list(v) for n, v in dict(state_dict.get("table_ids") or {}).items()}
        self.history = list(state_dict.get("history") or [])


POOL_SCALARS = ("accuracy", "chance", "consistency", "first_position_rate", "first_position_over_chance")
"""The critic's figures on its pool that a callback logs, as ``grounding/<name>/critic_pool/<figure>``."""


def _pool_recipe(owner: str, given: Mapping[str, Any] | None, seed: int) -> PoolRecipe | None:
    """A callback's ``critic_pool`` option as a synthetic pool's recipe (orders ``rotate`` by default)."""
    if given is None:
        return None
    unknown = sorted(set(given) - {"n", "kinds", "near", "seed", "orders", "labels"})
    if unknown:
        raise GgeError(
            f"{owner}: critic_pool: unknown key {unknown[0]!r} (n, kinds, near, seed, orders, labels)"
        )
    try:
        return PoolRecipe(
            "synthetic",
            int(given.get("n", 4)),
            tuple(given.get("kinds", DISTRACTOR_KINDS)),
            tuple(float(d) for d in given.get("near", (0.25, 0.5))),
            int(given.get("seed", seed)),
            str(given.get("orders", "rotate")),
            None,
            str(given.get("labels", "order")),
        )
    except GgeError as e:
        raise GgeError(f"{owner}: critic_{e}") from None


def _shard(samples: Sequence[Sample], rank: int, world: int) -> list[Sample]:
    """This rank's samples of a benchmark (:func:`gge.run.data.shard_indices`)."""
    return [samples[i] for i in shard_indices(len(samples), rank, world)]


class _View(Generic[T]):
    """A read-only attribute of a callback that lives in its evaluator (``obj.evaluator.<name>``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _View[T]: ...
    @overload
    def __get__(self, obj: EvaluatorViews, owner: type | None = None) -> T: ...
    def __get__(self, obj: EvaluatorViews | None, owner: type | None = None) -> T | _View[T]:
        return self if obj is None else cast(T, getattr(obj.evaluator, self.name))

    def __set__(self, obj: EvaluatorViews, value: NoReturn) -> None:
        raise AttributeError(f"{type(obj).__name__}.{self.name} cannot be set")


class _Settable(_View[T]):
    """A :class:`_View` also set in the evaluator, as ``copy`` makes it (default: as given)."""

    def __init__(self, copy: Callable[[T], T] = lambda value: value) -> None:
        self.copy = copy

    def __set__(self, obj: EvaluatorViews, value: T) -> None:
        setattr(obj.evaluator, self.name, self.copy(value))


class EvaluatorViews:
    """Attributes of a callback that live in its :class:`OnlineEvaluator` (``self.evaluator``).

    Both callbacks expose the evaluator's settings and state under the same names, read from the
    evaluator (and the last four also set there; set ``max_samples`` before the first evaluation).

    Attributes:
        specs: The benchmarks asked for, name to root or options.
        data_root: The folder holding one folder per benchmark (the demo suite's once generated).
        benchmarks: The benchmarks, once read.
        samples: Every sample of each benchmark, once read.
        k: Candidates scored per sample.
        selection: The selection strategy reported as Top-1.
        seed: Seed of the subset.
        table_samples: Samples per benchmark shown as images.
        max_samples: Samples per benchmark in the fixed subset (None: all).
        sample_ids: The fixed subset's ids by benchmark (None until the first evaluation or a restore).
        table_ids: The ids shown as images, by benchmark (set: a copy).
        history: One entry per evaluation: ``epoch``, ``step`` and each benchmark's Top-1 and Oracle@K
            (set: a copy).

    Example:
        >>> class Cb(EvaluatorViews):
        ...     def __init__(self):
        ...         self.evaluator = OnlineEvaluator(["screenspot_v2"], data_root="/data")
        >>> cb = Cb()
        >>> cb.max_samples = 2
        >>> cb.evaluator.max_samples, cb.history
        (2, [])
        >>> cb.k = 3
        Traceback (most recent call last):
        ...
        AttributeError: Cb.k cannot be set
    """

    evaluator: OnlineEvaluator
    specs = _View[dict[str, BenchmarkSpec]]()
    data_root = _View[Path | None]()
    benchmarks = _View[dict[str, Benchmark]]()
    samples = _View[dict[str, list[Sample]]]()
    k = _View[int]()
    selection = _View[str]()
    seed = _View[int]()
    table_samples = _View[int]()
    max_samples = _Settable[int | None]()
    sample_ids = _Settable[dict[str, list[str]] | None]()
    table_ids = _Settable[dict[str, list[str]]](dict)
    history = _Settable[list[dict[str, Any]]](list)


__all__ = [
    "WANDB_STEP_KEY",
    "BenchmarkSpec",
    "Evaluation",
    "EvaluatorViews",
    "OnlineEvaluator",
    "check_every",
    "check_policy",
    "is_due",
]
