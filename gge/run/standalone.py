"""One standalone evaluation, ``run(cfg)``: load, fingerprint, evaluate through Lightning, write the folder.

``python eval.py`` (:mod:`gge.cli.eval`) and ``gge watch`` call :func:`run` with a configuration from
:func:`gge.run.settings.parse_args`.
"""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO, cast

from omegaconf import DictConfig, OmegaConf

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import LoadedBenchmark
from gge.benchmarks.loading import BenchmarkSet, load_benchmarks
from gge.benchmarks.plugins import benchmark_origin
from gge.documents.caveats import unmatched_notes
from gge.documents.cost import WindowSummary
from gge.documents.results import CostSetup, ResultsDocument
from gge.errors import GgeError
from gge.loggers.standalone import console_summary, log_standalone
from gge.models import settings_record
from gge.models.base import Policy, answers_per_sample, capabilities
from gge.models.registry import ModelKind, kind_of
from gge.models.replay import parse_line
from gge.run.assemble import build_document, write_run
from gge.run.dry_run import dry_run
from gge.run.evaluate import merge_results
from gge.run.hardware import cost_setup
from gge.run.invocations import InvocationLedger, Snapshot, counters_of, merged_window, with_summed
from gge.run.pool_run import (
    PoolPolicy,
    RescuePolicy,
    critic_extras,
    headline_results,
    plan_pool,
    pool_fingerprint,
    write_pool,
)
from gge.run.predlog import MalformedLine, bad_lines_path, existing_logs, read_records
from gge.run.probe import ProbeResult, image_token_checks
from gge.run.probe_store import probe_and_keep, restore_probe
from gge.run.runstate import (
    asked_digest,
    check_not_smaller,
    check_output_dir,
    checkpoint_digest,
    first_digest,
    output_dir_lock,
    prepare_output_dir,
    samples_digest,
)
from gge.run.settings import bench_options, run_data_root, validate, warn_model_type
from gge.run.stops import Rerun, interrupted, stopped
from gge.run.stops import kept as kept_samples
from gge.run.windowed import evaluate_windowed, is_windowed
from gge.scoring.scoring import score_sample
from gge.types import Sample, SampleResult


def _load_root(data_root: Path | None) -> Path:
    """The ``data_root`` the loader is given (the working directory stands in for none).

    With none, every benchmark names its own files (``root``, or a records ``path``, relative to the
    working directory): nothing is read under it.
    """
    return data_root if data_root is not None else Path.cwd()


def _make_policy(kind: ModelKind, cfg: DictConfig, root: Path | None, is_demo: bool, out: TextIO) -> Policy:
    kind.fill_defaults(cfg, root if is_demo else None)
    warn_model_type(cfg, out)
    return kind.build(cfg)


def _is_launcher_rank() -> bool:
    """True in the process that started the run (rank 0), before and after a DDP launch."""
    return os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("NODE_RANK", "0") == "0"


_NOT_PREDICTIVE = (
    "device",
    "concurrency",
    "max_concurrency",
    "max_retries",
    "timeout_s",
    "server_wait_s",
    "delay_s",
    "api_key_env",
    "attn_implementation",
)
"""Model options that change no prediction (left out of the run's fingerprint)."""


def _fingerprint(kind: ModelKind, cfg: DictConfig, loads: Mapping[str, LoadedBenchmark]) -> dict[str, Any]:
    """What changes this run's predictions (see :mod:`gge.run.runstate`)."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    assert isinstance(model, dict)
    for key in _NOT_PREDICTIVE:
        model.pop(key, None)
    if model.get("image_format", "png") == "png":  # lossless: as the runs before the option sent
        model.pop("image_format", None)
        model.pop("jpeg_quality", None)
    if model.get("format", "gge") == "gge":  # a replay file, as the runs before published logs read
        for key in ("format", "read_preset", "read_convention", "columns"):
            model.pop(key, None)
    files: dict[str, Any] = {}
    for key, path in kind.fingerprint_files(cfg).items():
        if path:
            files[key] = {"path": str(path), "digest": checkpoint_digest(path)}
    benchmarks: dict[str, Any] = {}
    for name, loaded in loads.items():
        options = OmegaConf.to_container(cfg.bench[name], resolve=True)
        assert isinstance(options, dict)
        for key in get_benchmark(name).options_type.NOT_PREDICTIVE:
            options.pop(key, None)
        # what the model is asked (no target): a rerun that only rescores (refusals=miss) resumes
        benchmarks[name] = {"options": options, "samples": asked_digest(loaded.samples)}
    return {
        "model": model,
        "files": files,
        "k": int(cfg.k),
        "seed": int(cfg.seed),
        "decode_max_pixels": cfg.decode_max_pixels,
        "precision": cfg.trainer.precision,
        "benchmarks": benchmarks,
        **({"pool": pool} if (pool := pool_fingerprint(cfg)) is not None else {}),
        **({"critic_rescue": True} if cfg.critic_rescue else {}),
    }


def _restore(
    output_dir: Path, samples: dict[str, list[Sample]], k: int, radius: float, drop: bool, out: TextIO
) -> list[SampleResult]:
    """Results of samples an earlier run in ``output_dir`` finished (re-scored from its log).

    ``drop``: malformed lines before a log's last are moved to its ``.bad`` file (and named on ``out``);
    else such a line stops the run, saying how to drop it.
    """
    try:
        records = read_records(
            existing_logs(output_dir),
            repair=_is_launcher_rank(),
            drop_malformed=drop,
            reask_server_errors=True,
        )
    except MalformedLine as e:
        raise Rerun(
            f"{e}: a line of this output folder's own prediction log, not its last, cannot be read. "
            f"Rerun with drop_malformed_lines=true to move it to {bad_lines_path(e.path)} and evaluate "
            "its sample again (or resume=false to start over)",
            {"output_dir": str(output_dir), "drop_malformed_lines": "true"},
        ) from None
    if records.malformed:
        kept = f" (kept in {', '.join(map(str, records.moved_to))})" if records.moved_to else ""
        n = len(records.malformed)
        what = "line" if n == 1 else "lines"
        again = "its sample is" if n == 1 else "their samples are"
        print(
            f"dropped {n} malformed prediction log {what}{kept}; {again} evaluated again: "
            + "; ".join(records.malformed),
            file=out,
        )
    if records.reask:
        n = len(records.reask)
        print(f"asking again {n} sample{'s' if n != 1 else ''} whose request failed (server_error)", file=out)
    return _rescore(records, samples, k, radius)


def _rescore(
    records: Mapping[tuple[str, str], Any], samples: dict[str, list[Sample]], k: int, radius: float
) -> list[SampleResult]:
    """Score logged prediction records against the samples they name (others are ignored)."""
    by_key = {(s.benchmark, s.id): s for group in samples.values() for s in group}
    restored = []
    for key, rec in records.items():
        sample = by_key.get(key)
        if sample is not None:
            pred = parse_line(rec, f"logged prediction {key[0]}/{key[1]}")
            restored.append(score_sample(sample, pred, k=k, cluster_radius=radius))
    return restored


def _trainer(cfg: DictConfig) -> Any:
    import pytorch_lightning as pl
    import torch
    from lightning_fabric.utilities.exceptions import MisconfigurationException

    from gge.run.lightning import BenchmarkProgressBar, SamplesPerSecond

    t = cfg.trainer
    kwargs: dict[str, Any] = {
        "accelerator": t.accelerator,
        "devices": t.devices,
        "num_nodes": t.num_nodes,
        "strategy": t.strategy,
        "logger": False,
        "enable_checkpointing": False,
        "enable_model_summary": False,
        "use_distributed_sampler": False,
        "callbacks": [BenchmarkProgressBar(), SamplesPerSecond()],  # benchmark name and samples/s
    }
    if t.precision is not None:
        kwargs["precision"] = t.precision
    try:
        return pl.Trainer(**kwargs)
    except (ValueError, TypeError, RuntimeError, MisconfigurationException) as e:
        hint = ""
        if str(t.accelerator) in ("gpu", "cuda") and not torch.cuda.is_available():
            hint = " (torch sees no CUDA GPU here: use trainer.accelerator=cpu, or auto)"
        raise GgeError(f"trainer: {e}{hint}") from None


def run(cfg: DictConfig, out: TextIO | None = None) -> dict[str, Any]:
    """Evaluate the configured model on the configured benchmarks and write the output folder.

    The evaluation runs through a Lightning Trainer (``trainer.*`` keys): each rank evaluates its
    shard, appends finished samples to ``output_dir/predictions.rank<r>.jsonl``, and a rerun with the
    same ``output_dir`` skips them (after checking, with ``run.json``, that it is the same run; see
    :mod:`gge.run.runstate`). The output folder is locked while the run uses it. Rank 0 merges, scores and
    writes the outputs.

    Args:
        cfg: A configuration from :func:`gge.run.settings.parse_args` (or
            ``OmegaConf.structured(gge.run.settings.EvalConfig)``).
        out: Where the tables are printed (default stdout).

    Returns:
        The results document also written to ``output_dir/results.json`` (empty on ranks other than 0).

    Raises:
        GgeError: for bad input, naming the file, line, record or key.
    """
    with ExitStack() as stack, warnings.catch_warnings():
        _quiet_lightning(stack)
        return _run(cfg, out, stack)


class _NoTips(logging.Filter):
    """Drops Lightning's advertising tips (``💡 Tip: ... litlogger``) from gge's own runs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Tip:" not in record.getMessage()


def _quiet_lightning(stack: ExitStack) -> None:
    """For this run: no Lightning tips, no deprecation notices Lightning raises about its own code."""
    tips = _NoTips()
    for name in ("pytorch_lightning.utilities.rank_zero", "lightning.pytorch.utilities.rank_zero"):
        logger = logging.getLogger(name)
        logger.addFilter(tips)
        stack.callback(logger.removeFilter, tips)
    warnings.filterwarnings("ignore", message=r".*treespec, LeafSpec.*")  # Lightning 2.6 on torch 2.13
    warnings.filterwarnings(
        "ignore", message=r"Total length of .* across ranks is zero"
    )  # a rank with no samples


@dataclass(frozen=True)
class _Run:
    """What the steps of one run share once its model and benchmarks are loaded.

    Attributes:
        cfg: The run's configuration.
        kind: The model's kind.
        policy: The model's policy.
        k: Answers scored per sample.
        strategy: The selection strategy (``selection``).
        radius: The cluster radius of the selection.
        data_root: The folder benchmarks without their own files are read from: ``data_root``, the
            demo suite, or None when every benchmark names its own (``root``, a records ``path``).
        output_dir: The run's output folder.
        loaded: The benchmarks, what each loaded, and the samples evaluated.
        ledger: The output folder's record of the run's invocations (rank 0; None before it starts).
    """

    cfg: DictConfig
    kind: ModelKind
    policy: Policy
    k: int
    strategy: str
    radius: float
    data_root: Path | None
    output_dir: Path
    loaded: BenchmarkSet
    ledger: InvocationLedger | None = None
    probe: ProbeResult = field(default_factory=ProbeResult)
    console: TextIO | None = None


def _load(
    cfg: DictConfig,
    strategy: str,
    radius: float,
    data_root: Path | None,
    is_demo: bool,
    output_dir: Path,
    out: TextIO,
) -> _Run:
    """Build the model's policy and load the benchmarks (their images checked when the policy reads them)."""
    kind = kind_of(cfg.model)
    policy = _make_policy(kind, cfg, data_root, is_demo, out)
    loaded = load_benchmarks(
        cfg.benchmarks, _load_root(data_root), bench_options(cfg), max_samples=cfg.max_samples, out=out
    )
    if cfg.critic_rescue:  # the critic asked again where its proposer missed
        policy = RescuePolicy(policy, int(cfg.seed))
    if (pooled := plan_pool(cfg, loaded, output_dir, out)) is not None:  # the critic alone, on pools
        loaded, policy = pooled[0], PoolPolicy(policy, pooled[1])
        cfg.k = policy.max_candidates()
    k = answers_per_sample(policy, int(cfg.k))
    kind.check_data(policy, loaded.samples, strict_images=bool(cfg.strict_images), out=out)
    return _Run(cfg, kind, policy, k, strategy, radius, data_root, output_dir, loaded)


def _resume(run: _Run, stack: ExitStack, out: TextIO) -> tuple[list[SampleResult], dict[str, set[str]]]:
    """Lock and prepare the output folder (rank 0); the results an earlier run finished, and their ids."""
    cfg, output_dir, samples = run.cfg, run.output_dir, run.loaded.samples
    if _is_launcher_rank():
        stack.enter_context(output_dir_lock(output_dir))
        if cfg.resume:
            check_not_smaller(
                output_dir, {name: len(group) for name, group in samples.items()}, cfg.max_samples
            )
        prepare_output_dir(
            output_dir,
            _fingerprint(run.kind, cfg, run.loaded.loads),
            resume=bool(cfg.resume),
            first_digests={name: first_digest(ld.samples) for name, ld in run.loaded.loads.items()},
        )
    drop = bool(cfg.drop_malformed_lines)
    restored = _restore(output_dir, samples, run.k, run.radius, drop, out)
    if restored:
        print(f"resuming: {len(restored)} samples already finished in {output_dir}", file=out)
    done_ids: dict[str, set[str]] = {}
    for r in restored:
        done_ids.setdefault(r.benchmark, set()).add(r.id)
    return restored, done_ids


def _finalize(
    run: _Run, restored: list[SampleResult], options: Mapping[str, Any], gathered: list[SampleResult]
) -> None:
    """On rank 0, in whichever process runs it: merge, score, write the output folder."""
    cfg, policy, loaded = run.cfg, run.policy, run.loaded
    benches, loads, samples = loaded.benchmarks, loaded.loads, loaded.samples
    results = {name: merge_results([restored, gathered], samples[name]) for name in benches}
    extras: dict[str, dict[str, Any]] = {}
    for name in benches:
        # what this run evaluated (its first max_samples), which gge compare pairs on
        extras[name] = {"load": loads[name].summary, "samples_digest": samples_digest(samples[name])}
        extras[name].update(run.kind.entry_extras(policy, name, loads[name].samples, samples[name]))
        extras[name].update(critic_extras(policy, name, results[name]))
        origin = benchmark_origin(name)
        if origin is not None:
            extras[name]["origin"] = origin
    checks = image_token_checks(policy, results, samples, run.probe.splits, cfg.decode_max_pixels)
    for name, check in checks.items():  # what the model saw (gge.run.probe)
        extras[name]["image_tokens"] = check
    config = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(config, dict)
    config["data_root"] = None if run.data_root is None else str(run.data_root)
    config["model"] = run.kind.recorded_options(cfg.model)  # the options the run used, not every default
    model = settings_record(policy)
    if run.probe.record and isinstance(model.get("backend"), dict):  # who answered (gge.run.probe)
        model["backend"] = {**model["backend"], "probe": run.probe.record}
    cost = _cost_setup(run, options, any(r.costs for group in results.values() for r in group))
    invocations = None
    if run.ledger is not None:  # the counters and window summed over every invocation of the run
        counters, window = _snapshot(run)
        answered = sum(r.server_error is None for r in gathered)  # as a stop counts them: kept_samples
        invocations = run.ledger.end("finished", samples=answered, counters=counters, window=window)
        model = with_summed(model, invocations)
        windows = [inv["window"] for inv in invocations if "window" in inv]
        whole = merged_window(windows)
        if whole is not None and "window" in cost:
            cost["window"] = whole
    document, report = build_document(
        benches,
        {name: headline_results(policy, group) for name, group in results.items()},  # nested sub-pools apart
        k=run.k,
        strategy=run.strategy,
        protocol=run.kind.protocol(cfg.model),
        model=model,
        config=cast(dict[str, Any], config),
        extras=extras,
        subset=loaded.subset(),
        metrics_options=options,
        cost=cost,
        invocations=invocations,
    )
    every_result = [r for name in benches for r in results[name]]
    write_run(
        run.output_dir,
        document,
        report,
        every_result,
        loaded.by_key(),
        benches,
        misses=int(cfg.report_misses),
    )


def _cost_setup(run: _Run, options: Mapping[str, Any], recorded: bool) -> CostSetup:
    """What the run's costs were measured on (a replay's: not here, but by the run that wrote its file).

    ``recorded``: some sample has cost records (a replayed file may have none, and the setup says so).
    """
    m = run.cfg.model
    replayed = options.get("cost_source") == "replayed"
    window = _window_summary(run.policy)
    return cost_setup(
        capabilities(run.policy).device_modules,
        backend=str(m.backend) if run.kind.from_preset else run.kind.label,
        batch_size=1 if window is not None else int(run.cfg.batch_size),
        replayed_from=str(m.predictions) if replayed else None,
        recorded=recorded,
        window=window,
        imported_format=str(m.format) if replayed and str(m.get("format", "gge")) != "gge" else None,
    )


def _predict(
    run: _Run, done_ids: dict[str, set[str]], finalize: Callable[[list[SampleResult]], None]
) -> bool:
    """Evaluate through a Lightning Trainer; whether this process is rank 0 of the launch (it reports).

    A policy that runs windowed (an endpoint: :func:`gge.run.windowed.is_windowed`) is evaluated in
    this one process instead, without torch or Lightning: its request window is its parallelism.
    A results.json left in the output folder is removed first (rank 0): it must not pass for this run's.
    """
    windowed = is_windowed(run.policy)
    if windowed and (int(os.environ.get("WORLD_SIZE", "1")) > 1 or not _is_launcher_rank()):
        raise GgeError(
            f"model={run.cfg.model.name} (model.backend=openai) runs in one process: its request window "
            "is its parallelism (model.concurrency). Start it with python eval.py, without torchrun or "
            "another launcher"
        )
    results_path = run.output_dir / "results.json"
    if results_path.exists() and _is_launcher_rank():
        results_path.unlink()  # a stale file must not pass for this run's
    if windowed:
        return _predict_windowed(run, done_ids, finalize)
    if int(run.cfg.client_procs) > 1:
        print(
            f"warning: client_procs={run.cfg.client_procs} is for endpoint runs (model.backend=openai); "
            "this model runs in process (its parallelism is trainer.devices and num_workers): ignored",
            file=run.console or sys.stdout,
        )
    from gge.run.lightning import GroundingEvalModule

    cfg = run.cfg
    module = GroundingEvalModule(
        run.policy,
        run.loaded.samples,
        k=run.k,
        cluster_radius=run.radius,
        batch_size=int(cfg.batch_size),
        num_workers=int(cfg.num_workers),
        decode_max_pixels=cfg.decode_max_pixels,
        output_dir=run.output_dir,
        done_ids=done_ids,
        pad_batches=bool(cfg.pad_batches),
        strict_images=bool(cfg.strict_images),
        on_gathered=finalize,
    )
    trainer = _trainer(cfg)
    handler = signal.getsignal(signal.SIGINT)
    try:
        trainer.predict(module, return_predictions=False)
    except SystemExit:  # Lightning's answer to Ctrl-C: "Detected KeyboardInterrupt", then exit(1)
        if not trainer.interrupted:
            raise
        _restore_handler(handler)  # Lightning ignores Ctrl-C from its graceful shutdown on
        module.close_log()
        raise interrupted(run.output_dir, _wanted(run)) from None
    return bool(trainer.global_rank == 0 and _is_launcher_rank())


def _predict_windowed(
    run: _Run, done_ids: dict[str, set[str]], finalize: Callable[[list[SampleResult]], None]
) -> bool:
    """Evaluate every benchmark's unfinished samples through one request window (:mod:`gge.run.windowed`).

    Each finished sample is appended to ``predictions.rank0.jsonl`` as it finishes, so a killed run
    resumes from them as one evaluated through Lightning does.
    """
    from gge.documents.records import encode
    from gge.run.client_procs import evaluate_in_processes, process_count
    from gge.run.predlog import GroupedLog, PredictionLog, rank_log_path
    from gge.run.progress import Progress, start_progress
    from gge.scoring.budget import prime_budget

    cfg = run.cfg
    samples = run.loaded.samples
    todo = [s for name, group in samples.items() for s in group if s.id not in done_ids.get(name, ())]
    restore_probe(run.probe, run.output_dir, list(samples), resume=bool(cfg.resume), out=run.console)
    first = run.kind.analysis_options(cfg.model, run.policy).get("exchangeable_from")

    def prime(result: SampleResult) -> None:
        prime_budget(result, k=run.k, exchangeable_from=first, cluster_radius=run.radius)

    log = GroupedLog(PredictionLog(rank_log_path(run.output_dir, 0)))  # no thread waits on an fsync
    progress: Progress | None = None
    try:  # the probe inside: its Ctrl-C and its errors say what is kept, as the run's do
        if cfg.probe and todo:  # ask the server once, before any sample (gge.run.probe)
            strict = bool(cfg.strict_server)
            probe_and_keep(run.policy, todo, run.probe, run.output_dir, out=run.console, strict=strict)
        progress = start_progress(run.policy, samples, done_ids, float(cfg.progress_s))  # stderr
        procs = process_count(int(cfg.client_procs), run.policy, len(todo))
        if todo and procs < int(cfg.client_procs):
            print(
                f"client_procs={cfg.client_procs}: {procs} client process{'es' if procs > 1 else ''} "
                "(at most the request window's start and the samples to ask)",
                file=run.console or sys.stdout,
            )
        common: dict[str, Any] = {
            "k": run.k,
            "cluster_radius": run.radius,
            "decode_max_pixels": cfg.decode_max_pixels,
            "strict_images": bool(cfg.strict_images),
            "on_result": progress.counting(lambda r: log.put(encode(r))),
            "strict_server": bool(cfg.strict_server),
            "max_server_error_share": float(cfg.max_server_error_share),
        }
        if procs > 1:  # the samples over client processes, each with a share of the window
            local = evaluate_in_processes(cfg, run.policy, todo, procs, exchangeable_from=first, **common)
        else:  # on_scored: the budget curves' per-sample work, done while the run goes on
            local = evaluate_windowed(run.policy, todo, on_scored=prime, **common)
    except KeyboardInterrupt:
        log.close()
        raise interrupted(run.output_dir, _wanted(run)) from None
    except GgeError as e:  # the server gone, broken, or strict_server: say what is kept and how to resume
        log.close()
        raise stopped(run.output_dir, _wanted(run), e) from e
    finally:
        log.close()  # a no-op after the one above
        if progress is not None:
            progress.close()  # its final state, before any message or the report
    order = [s for group in run.loaded.samples.values() for s in group]
    finalize(merge_results([local], order))
    return True


def _snapshot(run: _Run) -> Snapshot:
    """The policy's counters and request window so far (:mod:`gge.run.invocations`)."""
    return counters_of(settings_record(run.policy)), _window_summary(run.policy)


def _window_summary(policy: Policy) -> WindowSummary | None:
    """What a windowed policy's request window did so far (results.json ``cost.window``), else None."""
    summary = getattr(policy, "window_summary", None)
    return summary() if callable(summary) and is_windowed(policy) else None


def _predict_recorded(
    run: _Run, done_ids: dict[str, set[str]], finalize: Callable[[list[SampleResult]], None], restored: int
) -> bool:
    """:func:`_predict`, its invocation's end recorded however it ends (finished, interrupted, stopped).

    An endpoint run's counters are also recorded every :data:`gge.run.invocations.UPDATE_EVERY_S`
    seconds, so that a killed process loses at most that much of them.
    """
    ledger = run.ledger
    if ledger is None:
        return _predict(run, done_ids, finalize)
    try:
        with ExitStack() as updating:
            if is_windowed(run.policy):
                updating.enter_context(ledger.keep_updated(lambda: _snapshot(run)))
            done = _predict(run, done_ids, finalize)
    except BaseException as e:
        # the samples answered in the logs less those restored, server errors left out (as a resume
        # and a finished invocation count them)
        samples = max(0, kept_samples(run.output_dir, _wanted(run))[0] - restored)
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        try:
            counters, window = _snapshot(run)
            if isinstance(e, KeyboardInterrupt):
                ledger.end("interrupted", samples=samples, counters=counters, window=window)
            else:
                ledger.end("stopped", samples=samples, counters=counters, window=window, why=why)
        except (GgeError, OSError) as record_error:  # the run's own error is the one to say
            logging.getLogger(__name__).warning("%s: not recorded: %s", ledger.path, record_error)
        raise
    return done


def _wanted(run: _Run) -> set[tuple[str, str]]:
    """The (benchmark, id) of every sample the run evaluates."""
    return {(s.benchmark, s.id) for group in run.loaded.samples.values() for s in group}


def _restore_handler(handler: Any) -> None:
    """Put back the SIGINT handler (only the main thread may set one; elsewhere none was changed)."""
    with suppress(ValueError, TypeError):
        signal.signal(signal.SIGINT, handler)


def _warn_after(run: _Run, document: Mapping[str, Any], out: TextIO) -> None:
    """Warn of prediction lines that match no sample, samples without one, and other benchmarks' lines.

    Lines of records the loader left out on purpose (RUC's, as its released code does) are said apart
    from the stray ones, in the reports' words (:func:`gge.documents.caveats.unmatched_notes`).
    """
    for name, entry in document["benchmarks"].items():
        for note in unmatched_notes(entry):
            print(f"warning: {name}: {note}", file=out)
        if entry.get("missing_predictions"):
            print(
                f"warning: {name}: {entry['missing_predictions']} samples have no prediction "
                "(not in the file: misses, counted apart from format errors; the headline is over every "
                "sample)",
                file=out,
            )
    for warning in run.kind.run_warnings(run.policy, list(run.cfg.benchmarks)):
        print(f"warning: {warning}", file=out)


def _log(run: _Run, stack: ExitStack, document: dict[str, Any], results_path: Path, out: TextIO) -> None:
    """Log the written run to the configured logger (a wandb failure said in one line)."""
    cfg, output_dir, samples = run.cfg, run.output_dir, run.loaded.samples
    records = read_records([output_dir / "predictions.jsonl"], repair=False)
    results = _rescore(records, samples, run.k, run.radius)
    try:
        written = cast(ResultsDocument, document)  # read back from the results.json it wrote
        log_standalone(stack, cfg, output_dir, written, run.loaded.benchmarks, samples, results, out)
    except Exception as e:
        if not type(e).__module__.startswith("wandb"):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise GgeError(
            f"logger=wandb: {first} The results are written ({results_path}); to log them, run "
            "`wandb login`, or set WANDB_MODE=offline (sync later with `wandb sync`)"
        ) from None


def _run(cfg: DictConfig, out: TextIO | None, stack: ExitStack) -> dict[str, Any]:
    out = out or sys.stdout
    if not _is_launcher_rank():
        out = io.StringIO()  # only rank 0 prints
    validate(cfg)
    strategy, radius = str(cfg.selection), float(cfg.cluster_radius)
    data_root, is_demo = run_data_root(cfg, out)  # said (the demo suite generated) where a benchmark reads it
    if cfg.output_dir is None:
        cfg.output_dir = f"outputs/{time.strftime('%Y%m%d-%H%M%S')}"
    output_dir = check_output_dir(cfg.output_dir)
    if cfg.dry_run:
        return dry_run(cfg, _load_root(data_root), output_dir, out)
    run = replace(_load(cfg, strategy, radius, data_root, is_demo, output_dir, out), console=out)
    restored, done_ids = _resume(run, stack, out)
    if _is_launcher_rank():  # the folder is locked and its run checked: a pool run's files now
        write_pool(run.policy, output_dir)

    # pass@k needs exchangeable answers, and calibration the critic's score kind: the kind says which
    options = {
        **run.kind.analysis_options(cfg.model, run.policy),
        "cost_source": capabilities(run.policy).cost_source,  # a replay's costs are the file's
        "cluster_radius": run.radius,  # the budget curves' votes on subsets
    }

    if _is_launcher_rank():  # this invocation recorded beside run.json, on every way it ends
        ledger = InvocationLedger.start(output_dir, restored=len(restored), resume=bool(cfg.resume))
        run = replace(run, ledger=ledger)

    def finalize(gathered: list[SampleResult]) -> None:
        _finalize(run, restored, options, gathered)

    if not _predict_recorded(run, done_ids, finalize, len(restored)):
        return {}
    # Under fork/spawn launchers rank 0 ran in a child process: read back what it wrote. No file means
    # no rank ran the loop (no benchmark has a sample), so nothing new was evaluated.
    results_path = output_dir / "results.json"
    if not results_path.exists():
        finalize([])
    document: dict[str, Any] = json.loads(results_path.read_text(encoding="utf-8"))
    _warn_after(run, document, out)
    titles = {name: bench.title for name, bench in run.loaded.benchmarks.items()}
    written = cast(ResultsDocument, document)  # read back from the results.json it wrote
    print("\n" + console_summary(written, titles, output_dir), file=out)
    if cfg.logger is not None:
        _log(run, stack, document, results_path, out)
    return document
