"""``python eval.py key=value ...``: a typed configuration, one ``run(cfg)``, an exit code.

Configuration is an OmegaConf dotlist over a dataclass schema: unknown keys are rejected with a
did-you-mean, wrong types are rejected. ``model=NAME`` picks a model (``model.<option>=`` then sets
its options); ``bench.<benchmark>.<option>=`` sets a benchmark's options (``root``, and e.g.
``bench.screenspot_pro.language=cn``). Quote lists in bash: ``'benchmarks=[screenspot_pro,osworld_g]'``.

Example:
    >>> cfg = parse_args(["model=replay", "model.predictions=p.jsonl", "benchmarks=[osworld_g]", "k=3"])
    >>> cfg.model.name, list(cfg.benchmarks), cfg.k
    ('replay', ['osworld_g'], 3)
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

import gge
from gge.benchmarks import DEFAULT_BENCHMARKS, REGISTRY, get_benchmark
from gge.benchmarks.base import Benchmark, BenchmarkOptions, LoadedBenchmark
from gge.errors import GgeError, did_you_mean, unknown_name
from gge.models import ReplayModel, build_policy, model_names, settings_record
from gge.models.base import Policy, answers_per_sample
from gge.models.factory import ModelConfig, load_preset, preset_for_checkpoint
from gge.models.policy import GroundingPolicy
from gge.models.replay import parse_line
from gge.report.markdown import render_benchmark, render_summary, subset_text
from gge.run.assemble import write_html_report, write_outputs
from gge.run.evaluate import merge_results, needs_images
from gge.run.predlog import existing_logs, read_records
from gge.run.runstate import (
    check_not_smaller,
    check_output_dir,
    checkpoint_digest,
    output_dir_lock,
    prepare_output_dir,
    samples_digest,
)
from gge.scoring.analysis import analysis_options, policy_analysis_options
from gge.scoring.metrics import benchmark_metrics, mean_over_benchmarks, scalar_metrics
from gge.scoring.scoring import SampleResult, score_sample
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS, check_strategy
from gge.types import Sample

BenchConfig = make_dataclass(
    "BenchConfig",
    [(name, b.options_type, field(default_factory=b.options_type)) for name, b in REGISTRY.items()],
)
"""Per-benchmark options, one field per registered benchmark (``bench.<name>.<option>``)."""


@dataclass
class TrainerConfig:
    """The Lightning Trainer that runs the evaluation (``trainer.<key>=``).

    Attributes:
        accelerator: ``auto``, ``cpu``, ``gpu``, ``cuda``...
        devices: Devices per node (an int, a list, or ``auto``).
        num_nodes: Nodes.
        strategy: ``auto``, ``ddp``, ``fsdp``, ``deepspeed_stage_3``... (with a strategy that shards
            parameters also set ``pad_batches=true``).
        precision: e.g. ``bf16-mixed``, ``32-true`` (default: Lightning's).
    """

    accelerator: str = "auto"
    devices: Any = 1
    num_nodes: int = 1
    strategy: str = "auto"
    precision: str | None = None


@dataclass
class EvalConfig:
    """Everything ``python eval.py`` accepts.

    Attributes:
        benchmarks: Benchmarks to evaluate, by registered name.
        data_root: Folder holding one folder per benchmark (``DIR/<name>``; ``osworld_g_refined``
            reads ``DIR/osworld_g``). Unset: the synthetic demo suite, generated on first use.
        output_dir: Where results.json, predictions.jsonl and report.md go
            (default ``outputs/<date-time>``).
        ckpt: A checkpoint folder (transformers models; picks the preset from its ``model_type``
            unless ``model=`` names one) or a demo checkpoint file (``*.pt``). Unset with the
            default ``model=demo``: the demo checkpoint shipped with gge.
        model: The model and its options.
        selection: The selection strategy whose pick is reported as Top-1 (every strategy is
            also reported under ``selection``).
        k: Candidates scored per sample (Oracle@1..K). A one-answer run scores one: a preset with
            ``model.proposer=greedy``, or a replay file whose records carry one candidate at most
            (results.json ``k`` is the K scored).
        cluster_radius: Radius of the ``cluster`` strategy, as a fraction of the image diagonal.
        seed: Seed of the demo suite (and of anything random in a run).
        batch_size: Samples per model call.
        num_workers: DataLoader workers decoding screenshots in parallel with the model.
        decode_max_pixels: Downscale screenshots above this area while decoding (saves memory and
            transfer for models that see fewer pixels; points still map to the original size).
        pad_batches: Equal batch counts on every rank (FSDP / DeepSpeed ZeRO-3); padding is dropped.
        strict_images: Stop at the first missing or unreadable screenshot. Default: all missing
            files are listed at the start, and each unreadable screenshot is its sample's failure
            (a miss, counted apart and listed in results.json under ``image_errors``).
        dry_run: Load no weights and evaluate nothing: print the preset and why it was chosen (and
            the warning a run gives when the checkpoint's ``model_type`` is not the preset's), write
            ``output_dir/requests.jsonl``, one line per model request the run would make (``propose``;
            with a critic also ``rank``/``judge`` over placeholder candidates, K points evenly placed
            on the image diagonal, since the real ones need the proposer's answers), and print the
            first request of each stage as a person would read it.
        resume: Skip the samples an earlier run into ``output_dir`` finished (the folder's
            ``run.json`` must show the same model, checkpoint, prompts, k... or the run stops and
            names what differs); false removes that run's predictions and outputs and starts over.
        logger: ``wandb``, ``tensorboard`` or ``csv``: also log the scalars, the tables and the
            overlays (screenshots with target, candidates and pick) a training run would log.
        wandb_project: The W&B project (``logger=wandb``; offline when ``WANDB_MODE=offline``).
        table_samples: Screenshots per benchmark in the logged tables.
        report_misses: Misses per benchmark in ``report.html``'s gallery (screenshots drawn with the
            target, candidates and pick; about 20-60 KB each); 0 keeps the page without a gallery.
        trainer: The Lightning Trainer.
        max_samples: Evaluate only the first N samples of each benchmark (smoke tests; the numbers
            are then not comparable with papers: results.json says so under ``subset``, report.md
            and the console in a "subset: first N of M samples" line). A smaller run into a folder
            holding a finished run of more samples refuses (choose another ``output_dir``).
        bench: Per-benchmark options.
    """

    benchmarks: list[str] = field(default_factory=lambda: list(DEFAULT_BENCHMARKS))
    data_root: str | None = None
    output_dir: str | None = None
    ckpt: str | None = None
    model: ModelConfig = field(default_factory=ModelConfig)
    selection: str = "critic"
    k: int = 5
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS
    seed: int = 0
    batch_size: int = 16
    max_samples: int | None = None
    num_workers: int = 0
    decode_max_pixels: int | None = None
    pad_batches: bool = False
    strict_images: bool = False
    resume: bool = True
    dry_run: bool = False
    logger: str | None = None
    wandb_project: str = "gge"
    table_samples: int = 16
    report_misses: int = 20
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    bench: Any = field(default_factory=BenchConfig)


def parse_args(argv: Sequence[str]) -> DictConfig:
    """Build the typed configuration from ``key=value`` arguments.

    Args:
        argv: Arguments, e.g. ``["model=replay", "'benchmarks=[a,b]'"]`` as the shell passes them.

    Returns:
        The merged, validated configuration.

    Raises:
        GgeError: for an unknown key, a wrong type or an unknown model.
    """
    dotlist: list[str] = []
    preset: str | None = None
    ckpt: str | None = None
    replay_file = False
    for arg in argv:
        if "=" not in arg:
            raise GgeError(f"arguments are key=value pairs, got {arg!r} (e.g. 'benchmarks=[screenspot_pro]')")
        key, value = arg.split("=", 1)
        if key == "model":  # group selection, as in Hydra: model=NAME then model.<option>=...
            if value not in model_names():
                raise unknown_name("model", value, model_names())
            preset = value
        else:
            ckpt = value if key == "ckpt" else ckpt
            replay_file = replay_file or key == "model.predictions"
            dotlist.append(arg)
    selected_by = None
    if preset is None and ckpt:
        preset, selected_by = preset_for_checkpoint(ckpt)
    elif preset is None and replay_file:
        preset = "replay"  # a predictions file says which model answers
    layers = [OmegaConf.structured(EvalConfig)]
    if preset is not None:
        layers.append(
            OmegaConf.create({"model": load_preset(preset)})
            if preset not in ("replay", "demo")
            else OmegaConf.create({"model": {"name": preset}})
        )
    if selected_by is not None and preset not in ("replay", "demo"):
        layers.append(OmegaConf.create({"model": {"selected_by": selected_by}}))
    try:
        cfg = OmegaConf.merge(*layers, OmegaConf.from_dotlist(dotlist))
    except OmegaConfBaseException as e:
        bad_key: str | None = getattr(e, "full_key", None)
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        hint = ""
        if bad_key == "benchmarks":
            hint = "; benchmarks is a list: 'benchmarks=[screenspot_pro,osworld_g]' (quote it in bash)"
        raise GgeError(f"bad configuration ({bad_key or 'arguments'}): {msg}{hint}") from None
    assert isinstance(cfg, DictConfig)
    return cfg


OPTIONAL_PACKAGES = {
    "transformers": "pip install 'gge[hf]'",
    "wandb": "pip install 'gge[wandb]'",
    "tensorboard": "pip install tensorboard",
}
"""The optional packages a configuration may need, and how to install each."""


def _has_module(name: str) -> bool:
    """Whether an optional package is installed (without importing it)."""
    return importlib.util.find_spec(name) is not None


def _require(package: str, why: str) -> None:
    if not _has_module(package):
        raise GgeError(
            f"{why} needs the {package} package, which is not installed: {OPTIONAL_PACKAGES[package]}"
        )


def _validate(cfg: DictConfig) -> None:
    if not cfg.benchmarks:
        raise GgeError("benchmarks is empty: name at least one, e.g. 'benchmarks=[screenspot_v2]'")
    for name in cfg.benchmarks:
        get_benchmark(name)
    if len(set(cfg.benchmarks)) != len(cfg.benchmarks):
        raise GgeError(f"benchmarks lists a name twice: {list(cfg.benchmarks)}")
    check_strategy(cfg.selection)
    if cfg.model.name not in model_names():
        raise unknown_name("model", cfg.model.name, model_names())
    if cfg.k < 1:
        raise GgeError(f"k must be at least 1, got {cfg.k}")
    if not cfg.cluster_radius >= 0:
        raise GgeError(f"cluster_radius must be >= 0, got {cfg.cluster_radius}")
    if cfg.max_samples is not None and cfg.max_samples < 1:
        raise GgeError(f"max_samples must be at least 1, got {cfg.max_samples}")
    if cfg.logger is not None and cfg.logger not in LOGGERS:
        raise unknown_name("logger", cfg.logger, LOGGERS)
    if cfg.num_workers < 0:
        raise GgeError(f"num_workers must be >= 0, got {cfg.num_workers}")
    if cfg.batch_size < 1:
        raise GgeError(f"batch_size must be at least 1, got {cfg.batch_size}")
    if cfg.decode_max_pixels is not None and cfg.decode_max_pixels < 1:
        raise GgeError(f"decode_max_pixels must be at least 1 (or unset), got {cfg.decode_max_pixels}")
    if cfg.table_samples < 0:
        raise GgeError(f"table_samples must be >= 0, got {cfg.table_samples}")
    if cfg.report_misses < 0:
        raise GgeError(f"report_misses must be >= 0, got {cfg.report_misses}")
    if cfg.logger in ("wandb", "tensorboard"):
        _require(cfg.logger, f"logger={cfg.logger}")
    if cfg.model.name not in ("demo", "replay") and cfg.model.backend == "transformers" and not cfg.dry_run:
        _require("transformers", f"model={cfg.model.name}")


def _data_root(cfg: DictConfig, out: TextIO) -> tuple[Path, bool]:
    if cfg.data_root is not None:
        return Path(cfg.data_root), False
    from gge.demo import demo_root

    root = demo_root(cfg.seed)
    print(f"data_root not set: using the synthetic demo suite at {root}", file=out)
    return root, True


def _make_policy(cfg: DictConfig, root: Path, is_demo: bool, out: TextIO) -> Policy:
    if cfg.model.name == "replay" and cfg.model.predictions is None and is_demo:
        cfg.model.predictions = str(root / "predictions.jsonl")
    _warn_model_type(cfg, out)
    return build_policy(cfg)


def _warn_model_type(cfg: DictConfig, out: TextIO) -> None:
    """Warn when ``ckpt``'s ``model_type`` is not one of the preset's (a real run and a dry run)."""
    expected = list(cfg.model.model_types)
    if cfg.ckpt and expected and Path(cfg.ckpt, "config.json").is_file():
        from gge.models.hf_loading import model_type

        found = model_type(cfg.ckpt)
        if found not in expected:
            print(
                f"warning: model={cfg.model.name} is for {cfg.model.family or cfg.model.name} checkpoints "
                f"(model_type {', '.join(expected)}), but {cfg.ckpt} is a '{found}' checkpoint: its answers "
                "may be read in the wrong format",
                file=out,
            )


def _is_launcher_rank() -> bool:
    """True in the process that started the run (rank 0), before and after a DDP launch."""
    return os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("NODE_RANK", "0") == "0"


_NOT_PREDICTIVE = (
    "device",
    "concurrency",
    "max_retries",
    "timeout_s",
    "delay_s",
    "api_key_env",
    "attn_implementation",
)
"""Model options that change no prediction (left out of the run's fingerprint)."""


def _fingerprint(cfg: DictConfig, loads: Mapping[str, LoadedBenchmark]) -> dict[str, Any]:
    """What changes this run's predictions (see :mod:`gge.run.runstate`)."""
    model = OmegaConf.to_container(cfg.model, resolve=True)
    assert isinstance(model, dict)
    for key in _NOT_PREDICTIVE:
        model.pop(key, None)
    files: dict[str, Any] = {}
    ckpt = cfg.ckpt
    if ckpt is None and cfg.model.name == "demo":
        from gge.demo.model import default_checkpoint

        ckpt = str(default_checkpoint())
    for key, path in (
        ("ckpt", ckpt),
        ("critic_ckpt", cfg.model.critic_ckpt),
        ("predictions", cfg.model.predictions),
    ):
        if path:
            files[key] = {"path": str(path), "digest": checkpoint_digest(path)}
    benchmarks: dict[str, Any] = {}
    for name, loaded in loads.items():
        options = OmegaConf.to_container(cfg.bench[name], resolve=True)
        assert isinstance(options, dict)
        options.pop("root", None)
        benchmarks[name] = {"options": options, "samples": samples_digest(loaded.samples)}
    return {
        "model": model,
        "files": files,
        "k": int(cfg.k),
        "seed": int(cfg.seed),
        "decode_max_pixels": cfg.decode_max_pixels,
        "precision": cfg.trainer.precision,
        "benchmarks": benchmarks,
    }


def _restore(output_dir: Path, samples: dict[str, list[Sample]], k: int, radius: float) -> list[SampleResult]:
    """Results of samples an earlier run in ``output_dir`` finished (re-scored from its log)."""
    return _rescore(read_records(existing_logs(output_dir), repair=_is_launcher_rank()), samples, k, radius)


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


def _load(
    cfg: DictConfig, data_root: Path, out: TextIO
) -> tuple[dict[str, Benchmark], dict[str, LoadedBenchmark], dict[str, list[Sample]]]:
    """Read every configured benchmark: the benchmarks, what was loaded, the samples evaluated."""
    benches: dict[str, Benchmark] = {}
    loads: dict[str, LoadedBenchmark] = {}
    samples: dict[str, list[Sample]] = {}
    for name in cfg.benchmarks:
        bench = get_benchmark(name)
        options = OmegaConf.to_object(cfg.bench[name])
        assert isinstance(options, BenchmarkOptions)
        root = Path(options.root) if options.root else data_root / bench.directory
        loaded = bench.load(root, options)
        n_odd = loaded.summary["degenerate_boxes"]
        odd = f" ({n_odd} degenerate boxes kept as released)" if n_odd else ""
        print(f"{name}: {len(loaded.samples)} samples from {root}{odd}", file=out)
        if not loaded.samples:
            print(f"warning: {name}: the annotation files hold no samples", file=out)
        benches[name], loads[name] = bench, loaded
        samples[name] = loaded.samples if cfg.max_samples is None else loaded.samples[: cfg.max_samples]
    return benches, loads, samples


def subset_record(
    max_samples: int | None, loads: Mapping[str, LoadedBenchmark], samples: Mapping[str, Sequence[Sample]]
) -> dict[str, Any] | None:
    """results.json ``subset``: None when every benchmark ran whole, else what ``max_samples`` kept.

    Args:
        max_samples: The run's ``max_samples``.
        loads: What each benchmark loaded (all its samples).
        samples: The samples evaluated per benchmark.

    Returns:
        ``None``, or ``{"max_samples": N, "benchmarks": {name: {"evaluated": n, "total": M}}}`` (every
        benchmark of the run, cut or not).

    Example:
        >>> from gge.benchmarks.base import LoadedBenchmark
        >>> loads = {"b": LoadedBenchmark("b", "/data/b", [1, 2, 3])}
        >>> subset_record(2, loads, {"b": [1, 2]})
        {'max_samples': 2, 'benchmarks': {'b': {'evaluated': 2, 'total': 3}}}
        >>> subset_record(5, loads, {"b": [1, 2, 3]}) is None
        True
    """
    counts = {name: {"evaluated": len(samples[name]), "total": len(loads[name].samples)} for name in samples}
    if max_samples is None or all(c["evaluated"] == c["total"] for c in counts.values()):
        return None
    return {"max_samples": int(max_samples), "benchmarks": counts}


def _check_images(samples: Mapping[str, Sequence[Sample]], *, strict: bool, out: TextIO) -> None:
    """List every missing screenshot at once (each file with its samples); ``strict`` stops the run."""
    missing: dict[str, list[str]] = {}
    for group in samples.values():
        for s in group:
            if not os.path.isfile(s.image_path):
                missing.setdefault(s.image_path, []).append(f"{s.benchmark} {s.id}")
    if not missing:
        return
    n = sum(len(ids) for ids in missing.values())
    listed = "\n".join(f"  {path} ({', '.join(ids)})" for path, ids in missing.items())
    head = f"missing screenshots: {len(missing)} files ({n} samples"
    if strict:
        raise GgeError(f"{head}, strict_images=true):\n{listed}")
    print(
        f"warning: {head}, scored as misses and listed under image_errors; strict_images=true "
        f"stops instead):\n{listed}",
        file=out,
    )


def _readable(request: Mapping[str, Any]) -> str:
    """One request as a person reads it: each message's role, then its parts."""
    w, h = request["image_size"]
    lines = [f"{request['benchmark']} {request['id']}: the model sees {w}x{h}"]
    for m in request["messages"]:
        lines.append(f"--- {m['role']} ---")
        for part in m["content"]:
            if part["type"] == "image":
                lines.append(f"[image {part['width']}x{part['height']}]")
                if "markers" in request:
                    shown = ", ".join(f"({x:.0f}, {y:.0f})" for x, y in request["markers"])
                    lines.append(f"[markers drawn at {shown}]")
            else:
                lines.append(part["text"])
    if request["prefill"]:
        lines.append("--- assistant (prefill; generation continues) ---")
        lines.append(request["prefill"])
    lines.append(f"--- generation: {json.dumps(request['generation'])} ---")
    return "\n".join(lines)


_PROTOCOL_KEYS = (
    "prompts",
    "convention",
    "max_new_tokens",
    "min_pixels",
    "max_pixels",
    "prompt_max_pixels",
    "patch_factor",
    "repetition_penalty",
    "box_pairs",
)
"""Model options that make the request and its reading: changed, the protocol is no longer official."""


def protocol_statement(m: DictConfig) -> str:
    """What the numbers of this run are comparable with (results.json ``protocol``, report.md).

    ``official <family>, <source>`` when a family preset runs as its authors evaluate it (greedy, no
    critic, its requests unchanged); otherwise ``gge proposer/critic: not comparable to published
    numbers`` (naming what differs from the official request, if anything).
    """
    if m.name == "demo":
        return "gge demo proposer/critic (synthetic suite): not comparable to published numbers"
    if m.name == "replay":
        return "replayed predictions: as comparable as the run that made them"
    preset = load_preset(str(m.name))
    if not preset.get("source") or m.name == "openai_api":
        return "gge proposer/critic with gge's generic prompts: not comparable to published numbers"

    def value(cfg: Any, key: str) -> Any:
        v = cfg[key]
        return OmegaConf.to_container(v) if isinstance(v, DictConfig) else v

    changed = []
    for key in _PROTOCOL_KEYS:
        if key == "prompts":  # the preset's own templates (gge's defaults fill the rest)
            changed += [
                f"prompts.{p}" for p in preset.prompts if value(m.prompts, p) != value(preset.prompts, p)
            ]
        elif key in preset and value(m, key) != value(preset, key):
            changed.append(key)
    if not changed and m.proposer == "greedy" and m.critic == "none":
        return f"official {m.family}, {m.source}"
    why = f" (changed from the official request: {', '.join(changed)})" if changed else ""
    if m.proposer == "sampling" and not changed:
        why = (
            f"; candidate 1 is the official {m.family} request's greedy answer: "
            "selection.first is the official number"
        )
    return f"gge proposer/critic: not comparable to published numbers{why}"


PLACEHOLDER_CANDIDATES = (
    "placeholder candidates: {n} points evenly placed on the image diagonal (a real run draws the "
    "proposer's answers)"
)
"""What a dry run's critic request says about its markers (``requests.jsonl`` ``placeholder``)."""


def placeholder_points(n: int, size: tuple[int, int]) -> list[list[float]]:
    """``n`` points evenly placed on the diagonal of a ``size`` image: the dry run's critic candidates.

    Example:
        >>> placeholder_points(3, (400, 200))
        [[100.0, 50.0], [200.0, 100.0], [300.0, 150.0]]
    """
    w, h = size
    return [[w * (i + 1) / (n + 1), h * (i + 1) / (n + 1)] for i in range(n)]


def _critic_requests(policy: GroundingPolicy, sample: Sample, seen: tuple[int, int]) -> list[dict[str, Any]]:
    """The critic requests of one sample over placeholder candidates (``rank``/``judge`` stages).

    The listwise critic sees every candidate in one request (``rank_list``), the pointwise one each
    candidate in its own (``judge_one``), as :meth:`GroundingPolicy.rank` sends them. A sample with
    fewer than two candidates (a greedy proposer) gets no critic request, as in a real run.
    """
    s = policy.settings_
    n = s.k
    if s.critic == "none" or n < 2:
        return []
    points = placeholder_points(n, seen)
    common = {"benchmark": sample.benchmark, "id": sample.id, "image_size": list(seen), "prefill": None}
    placeholder = PLACEHOLDER_CANDIDATES.format(n=n)
    if s.critic == "listwise":
        messages = policy.critic_messages("rank_list", sample, seen, n)
        generation: dict[str, Any] = {
            "num_sequences": 1,
            "do_sample": False,
            "max_new_tokens": s.critic_max_new_tokens,
        }
        return [
            {
                **common,
                "stage": "rank",
                "messages": messages,
                "generation": generation,
                "markers": points,
                "placeholder": placeholder,
            }
        ]
    messages = policy.critic_messages("judge_one", sample, seen, 1)
    judged: dict[str, Any] = {"yes_probability": {"yes": s.yes, "no": s.no}}
    return [
        {
            **common,
            "stage": "judge",
            "messages": messages,
            "generation": judged,
            "markers": [point],
            "placeholder": placeholder,
        }
        for point in points
    ]


def _dry_run(cfg: DictConfig, data_root: Path, output_dir: Path, out: TextIO) -> dict[str, Any]:
    """``dry_run=true``: the requests a run would send, written to ``requests.jsonl``; no weights.

    Prints which preset runs and why (``ckpt=`` detection or ``model=``), the warning a real run
    gives when the checkpoint's ``model_type`` is not the preset's, and the first request of each
    stage. With a critic, the critic's requests are written too, over placeholder candidates.
    """
    from gge.models.factory import dry_run_policy

    if cfg.model.name in ("demo", "replay"):
        raise GgeError(
            f"dry_run=true renders a preset's requests; model={cfg.model.name} sends none (name a preset)"
        )
    why = f"chosen by ckpt=: {cfg.model.selected_by}" if cfg.model.selected_by else "named with model="
    print(f"preset: model={cfg.model.name} ({why})", file=out)
    _warn_model_type(cfg, out)
    policy = dry_run_policy(cfg.model, int(cfg.k))
    _, _, samples = _load(cfg, data_root, out)
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "requests.jsonl"
    first: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as f:
        for group in samples.values():
            for sample in group:
                seen = policy.backend.seen_size(*sample.image_size)
                requests = [
                    {
                        "benchmark": sample.benchmark,
                        "id": sample.id,
                        "stage": "propose",
                        "image_size": list(seen),
                        "messages": spec.messages,
                        "prefill": spec.prefill,
                        "generation": spec.generation,
                    }
                    for spec in policy.proposer_requests(sample, seen)
                ]
                for request in [*requests, *_critic_requests(policy, sample, seen)]:
                    f.write(json.dumps(request, ensure_ascii=False) + "\n")
                    first.setdefault(request["stage"], request)
                    counts[request["stage"]] = counts.get(request["stage"], 0) + 1
    for stage, request in first.items():
        note = f", over {request['placeholder']}" if "placeholder" in request else ""
        print(f"\nthe first {stage} request{note}:\n" + _readable(request) + "\n", file=out)
    s = policy.settings_
    if s.critic != "none" and s.k < 2:
        print(
            f"critic: no requests (model.proposer={s.proposer} gives one candidate; "
            "the critic ranks two or more)",
            file=out,
        )
    n = sum(counts.values())
    split = ", ".join(f"{c} {stage}" for stage, c in counts.items())
    print(f"dry run: wrote {n} requests ({split or 'none'}) to {path} (no model loaded)", file=out)
    return {"dry_run": {"requests": n, "stages": counts, "file": str(path)}}


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
        cfg: A configuration from :func:`parse_args` (or ``OmegaConf.structured(EvalConfig)``).
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


def _run(cfg: DictConfig, out: TextIO | None, stack: ExitStack) -> dict[str, Any]:
    out = out or sys.stdout
    if not _is_launcher_rank():
        out = io.StringIO()  # only rank 0 prints
    _validate(cfg)
    strategy, radius = str(cfg.selection), float(cfg.cluster_radius)
    data_root, is_demo = _data_root(cfg, out)
    if cfg.output_dir is None:
        cfg.output_dir = f"outputs/{time.strftime('%Y%m%d-%H%M%S')}"
    output_dir = check_output_dir(cfg.output_dir)
    if cfg.dry_run:
        return _dry_run(cfg, data_root, output_dir, out)
    policy = _make_policy(cfg, data_root, is_demo, out)
    k = answers_per_sample(policy, int(cfg.k))

    benches, loads, samples = _load(cfg, data_root, out)
    if needs_images(policy):
        _check_images(samples, strict=bool(cfg.strict_images), out=out)

    if _is_launcher_rank():
        stack.enter_context(output_dir_lock(output_dir))
        if cfg.resume:
            check_not_smaller(
                output_dir, {name: len(group) for name, group in samples.items()}, cfg.max_samples
            )
        prepare_output_dir(output_dir, _fingerprint(cfg, loads), resume=bool(cfg.resume))
    restored = _restore(output_dir, samples, k, radius)
    if restored:
        print(f"resuming: {len(restored)} samples already finished in {output_dir}", file=out)
    done_ids: dict[str, set[str]] = {}
    for r in restored:
        done_ids.setdefault(r.benchmark, set()).add(r.id)

    from gge.run.lightning import GroundingEvalModule

    # pass@k needs exchangeable answers, and calibration the critic's score kind: from the preset's
    # modes; a replayed run says model.proposer=sampling itself; the demo's from its policy
    if cfg.model.name == "demo":
        options = policy_analysis_options(policy)
    else:
        critic = None if cfg.model.name == "replay" else str(cfg.model.critic)
        options = analysis_options(str(cfg.model.proposer), critic)

    def finalize(gathered: list[SampleResult]) -> None:
        """On rank 0, in whichever process runs it: merge, score, write the output folder."""
        entries: dict[str, dict[str, Any]] = {}
        titles: dict[str, str] = {}
        all_results: list[SampleResult] = []
        sections: list[str] = []
        for name, bench in benches.items():
            results = merge_results([restored, gathered], samples[name])
            entry = benchmark_metrics(bench, results, k=k, strategy=strategy, **options)
            entry["load"] = loads[name].summary
            # what this run evaluated (its first max_samples), which gge compare pairs on
            entry["samples_digest"] = samples_digest(samples[name])
            if isinstance(policy, ReplayModel):
                entry["unmatched_predictions"] = policy.unknown_ids(name, (s.id for s in loads[name].samples))
                entry["missing_predictions"] = len(policy.missing_ids(name, (s.id for s in samples[name])))
            entries[name], titles[name] = entry, bench.title
            all_results += results
            sections.append(render_benchmark(bench.title, entry, k=k, strategy=strategy))
        mean = mean_over_benchmarks(entries, k)
        protocol = protocol_statement(cfg.model)
        subset = subset_record(cfg.max_samples, loads, samples)
        head = f"Protocol: {protocol}" + ("" if subset is None else "\n" + subset_text(subset, titles))
        report = "\n\n".join([head, *sections, render_summary(titles, entries, mean, k=k)])
        config = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(config, dict)
        config["data_root"] = str(data_root)
        document = {
            "gge_version": gge.__version__,
            "protocol": protocol,
            "benchmarks": entries,
            "mean": mean,
            "k": k,
            "subset": subset,
            "selection": strategy,
            "model": settings_record(policy),
            "config": config,
        }
        write_outputs(output_dir, document, all_results, report)
        write_html_report(
            output_dir,
            document,
            {(x.benchmark, x.id): x for group in samples.values() for x in group},
            all_results,
            benches,
            misses=int(cfg.report_misses),
        )

    module = GroundingEvalModule(
        policy,
        samples,
        k=k,
        cluster_radius=radius,
        batch_size=int(cfg.batch_size),
        num_workers=int(cfg.num_workers),
        decode_max_pixels=cfg.decode_max_pixels,
        output_dir=output_dir,
        done_ids=done_ids,
        pad_batches=bool(cfg.pad_batches),
        strict_images=bool(cfg.strict_images),
        on_gathered=finalize,
    )
    results_path = output_dir / "results.json"
    if results_path.exists() and _is_launcher_rank():
        results_path.unlink()  # a stale file must not pass for this run's
    trainer = _trainer(cfg)
    trainer.predict(module, return_predictions=False)
    if trainer.global_rank != 0 or not _is_launcher_rank():
        return {}
    # Under fork/spawn launchers rank 0 ran in a child process: read back what it wrote. No file means
    # no rank ran the loop (no benchmark has a sample), so nothing new was evaluated.
    if not results_path.exists():
        finalize([])
    document: dict[str, Any] = json.loads(results_path.read_text(encoding="utf-8"))
    for name, entry in document["benchmarks"].items():
        if entry.get("unmatched_predictions"):
            n_un = len(entry["unmatched_predictions"])
            ex = ", ".join(entry["unmatched_predictions"][:3])
            print(f"warning: {name}: {n_un} prediction lines match no sample (e.g. {ex})", file=out)
        if entry.get("missing_predictions"):
            print(
                f"warning: {name}: {entry['missing_predictions']} samples have no prediction "
                "(counted as format errors)",
                file=out,
            )
    if isinstance(policy, ReplayModel):
        for other in sorted(policy.benchmarks() - set(cfg.benchmarks)):
            hint = "" if other in REGISTRY else f": not a benchmark{did_you_mean(other, REGISTRY)}"
            print(
                f"warning: the predictions file has lines for '{other}', not evaluated in this run{hint}",
                file=out,
            )
    print("\n" + (output_dir / "report.md").read_text(encoding="utf-8").rstrip("\n"), file=out)
    print(f"\nwrote {results_path} (and report.html: open it in a browser)", file=out)
    if cfg.logger is not None:
        records = read_records([output_dir / "predictions.jsonl"], repair=False)
        results = _rescore(records, samples, k, radius)
        try:
            _log_standalone(stack, cfg, output_dir, document, benches, samples, results, out)
        except Exception as e:
            if not type(e).__module__.startswith("wandb"):
                raise
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise GgeError(
                f"logger=wandb: {first} The results are written ({results_path}); to log them, run "
                "`wandb login`, or set WANDB_MODE=offline (sync later with `wandb sync`)"
            ) from None
    return document


LOGGERS = ("wandb", "tensorboard", "csv")


def _log_standalone(
    stack: ExitStack,
    cfg: DictConfig,
    output_dir: Path,
    document: dict[str, Any],
    benches: dict[str, Benchmark],
    samples: dict[str, list[Sample]],
    results: list[SampleResult],
    out: TextIO,
) -> None:
    """``logger=``: the scalars, tables and overlays a training run would log, for a standalone run."""
    from pytorch_lightning.loggers import CSVLogger, TensorBoardLogger, WandbLogger

    from gge.benchmarks.sampling import stratified_subset
    from gge.loggers.dispatch import log_evaluation

    k = int(document["k"])
    logger: Any
    if cfg.logger == "wandb":
        # W&B stages table images (and caches artifacts) under the home folder unless told otherwise:
        # keep them with the run, under output_dir/wandb
        for var in ("WANDB_DATA_DIR", "WANDB_CACHE_DIR"):
            if var not in os.environ:
                os.environ[var] = str((output_dir / "wandb").resolve())
                stack.callback(os.environ.pop, var, None)
        logger = WandbLogger(project=cfg.wandb_project, save_dir=str(output_dir), name=output_dir.name)
    elif cfg.logger == "tensorboard":
        logger = TensorBoardLogger(save_dir=str(output_dir), name="tensorboard")
    else:
        logger = CSVLogger(save_dir=str(output_dir), name="csv")
    try:
        logger.log_hyperparams(document["config"])
        scalars = scalar_metrics(document["benchmarks"], k)
        logger.log_metrics(scalars, step=0)
        for name, bench in benches.items():
            mine = [r for r in results if r.benchmark == name]
            shown = stratified_subset(samples[name], cfg.table_samples, (), seed=int(cfg.seed))
            log_evaluation(
                [logger],
                step=0,
                benchmark=bench,
                entry=document["benchmarks"][name],
                samples={s.id: s for s in samples[name]},
                results=mine,
                table_ids=[s.id for s in shown],
                k=k,
                strategy=str(cfg.selection),
                log_dir=output_dir,
            )
        logger.save()
    finally:
        if cfg.logger == "wandb":
            logger.experiment.finish()  # the run this command opened
    print(f"logged to {cfg.logger}", file=out)


def help_text() -> str:
    """``--help``: how to call eval.py, then every key with its default, and the models.

    Example:
        >>> "  k=5" in help_text().splitlines()
        True
    """

    def flat(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
        if isinstance(node, dict):
            return [item for key, value in node.items() for item in flat(value, f"{prefix}{key}.")]
        return [(prefix[:-1], node)]

    defaults = OmegaConf.to_container(OmegaConf.structured(EvalConfig))
    lines = [
        (__doc__ or "").split("Example:")[0].strip(),
        "",
        "Keys (key=default; model.* keys are set by the preset model= names):",
    ]
    for key, value in flat(defaults):
        shown = json.dumps(value) if value is None or isinstance(value, (bool, list, dict)) else str(value)
        if isinstance(value, str) and ("\n" in value or len(value) > 60):
            shown = json.dumps(value)[:57] + "..."
        lines.append(f"  {key}={shown}")
    lines += ["", f"Models (model=): {', '.join(model_names())}", "Benchmarks: " + ", ".join(REGISTRY)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse, run, and turn bad input into one message and exit code 2.

    Args:
        argv: Arguments (default ``sys.argv[1:]``).

    Returns:
        0 on success, 2 on bad input or configuration.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(help_text())
        return 0
    try:
        run(parse_args(args))
    except GgeError as e:
        print(f"gge: error: {e}", file=sys.stderr)
        return 2
    return 0
