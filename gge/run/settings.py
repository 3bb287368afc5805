"""The configuration of ``python eval.py``: its typed schema, its checks, and what a run reads from it.

:class:`EvalConfig` is the schema :func:`parse_args` merges the ``key=value`` arguments over (after the
preset that ``model=`` names or ``ckpt=`` picks); :func:`validate` checks what the schema alone cannot.
A run and a dry run both read the benchmarks it names with their options (:func:`bench_options`, for
:func:`gge.benchmarks.loading.load_benchmarks`) and warn about a checkpoint of another model type
(:func:`warn_model_type`); :class:`RunSettings` checks the options every evaluation shares.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from gge.benchmarks import DEFAULT_BENCHMARKS, REGISTRY, get_benchmark
from gge.benchmarks.base import BenchmarkOptions
from gge.errors import GgeError, unknown_name
from gge.loggers.standalone import LOGGERS
from gge.models.factory import ModelConfig, load_preset, preset_for_checkpoint
from gge.models.refine import check_refine
from gge.models.registry import kind_of
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS, REFINED, check_strategy


@dataclass(frozen=True)
class RunSettings:
    """The options every evaluation shares, checked in one place (eval.py, the callbacks, export verl).

    Built from eval.py's configuration (:func:`validate`), from :class:`~gge.run.online.OnlineEvaluator`'s
    arguments, and from ``gge export verl``'s; construction raises on the first bad value, naming
    it as the caller calls it (``names``) and prefixed by ``owner`` (a callback's class name).

    Attributes:
        benchmarks: Benchmark names (registered, at least one, none twice).
        k: Candidates scored per sample (at least 1).
        selection: The Top-1 selection strategy.
        cluster_radius: Radius of the ``cluster`` strategy (>= 0).
        max_samples: Samples per benchmark (at least 1), or None for all.
        batch_size: Samples per model call (at least 1).
        num_workers: DataLoader workers (>= 0).
        table_samples: Samples drawn in the loggers' tables (>= 0).
        owner: Prefix of every error (``"MyCallback: ..."``), or None.
        names: How the caller names an option, where it differs (e.g. ``max_samples`` is the
            callbacks' ``max_samples_per_benchmark``).

    Example:
        >>> RunSettings(("osworld_g",), k=0)
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: k must be at least 1, got 0
    """

    benchmarks: tuple[str, ...]
    k: int = 5
    selection: str = "critic"
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS
    max_samples: int | None = None
    batch_size: int = 1
    num_workers: int = 0
    table_samples: int = 0
    owner: str | None = None
    names: Mapping[str, str] = field(default_factory=dict)

    def _fail(self, key: str, rule: str, value: object) -> GgeError:
        head = f"{self.owner}: " if self.owner else ""
        return GgeError(f"{head}{self.names.get(key, key)} must be {rule}, got {value}")

    def __post_init__(self) -> None:
        head = f"{self.owner}: " if self.owner else ""
        if isinstance(self.benchmarks, str):
            raise GgeError(f"{head}benchmarks must be a list of names, got the string {self.benchmarks!r}")
        if not self.benchmarks:
            raise GgeError(f"{head}benchmarks is empty: name at least one, e.g. 'benchmarks=[screenspot_v2]'")
        for name in self.benchmarks:
            get_benchmark(name)
        if len(set(self.benchmarks)) != len(self.benchmarks):
            raise GgeError(f"{head}benchmarks lists a name twice: {list(self.benchmarks)}")
        check_strategy(self.selection)
        for key, low in (
            ("k", 1),
            ("max_samples", 1),
            ("batch_size", 1),
            ("num_workers", 0),
            ("table_samples", 0),
        ):
            value = getattr(self, key)
            if value is not None and value < low:
                raise self._fail(key, "at least 1" if low == 1 else ">= 0", value)
        if not self.cluster_radius >= 0:
            raise self._fail("cluster_radius", ">= 0", self.cluster_radius)


BenchConfig = make_dataclass(
    "BenchConfig",
    [(name, b.options_type, field(default_factory=b.options_type)) for name, b in REGISTRY.items()],
)
"""Per-benchmark options, one field per registered benchmark (``bench.<name>.<option>``)."""


@dataclass
class PoolConfig:
    """``pool.*``: judge the model's critic alone on frozen candidate pools (:mod:`gge.run.pool_run`).

    Attributes:
        source: ``synthetic`` (from the data: a gold inside the target and distractors of named kinds),
            ``run`` (a finished run's predictions.jsonl, ``path``), ``file`` (a pool file, ``path``),
            or unset: an ordinary run.
        path: The run's predictions or the pool file.
        n: Candidates per pool.
        kinds: Distractor kinds of a synthetic pool, cycled (near_miss, other_element, random).
        near: Near-miss distances from the target's edge, in target diagonals (cycled).
        seed: The pools' seed (unset: the run's ``seed``).
        orders: ``none`` (each pool asked once) or ``rotate`` (once per cyclic shift: position bias).
        labels: ``order`` (a listwise critic's markers numbered as shown) or ``shuffled`` (the label
            probe: seeded numbers, so a bias to number 1 shows apart from a bias to the first marker).
        nested: Also ask each pool's nested sub-pools of 2..N-1 candidates (accuracy by N).
    """

    source: str | None = None
    path: str | None = None
    n: int = 4
    kinds: list[str] = field(default_factory=lambda: ["near_miss", "other_element", "random"])
    near: list[float] = field(default_factory=lambda: [0.25, 0.5])
    seed: int | None = None
    orders: str = "none"
    labels: str = "order"
    nested: bool = False


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
            reads ``DIR/osworld_g``). Unset: the default data folder when ``gge data fetch`` put every
            benchmark asked there, else the synthetic demo suite (generated on first use); ``demo``:
            the demo suite whatever was fetched.
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
        strict_server: Stop an endpoint run at the first request that failed for good (its retries
            ran out, or the server refused or garbled it). Default: that sample is a ``server_error``
            (a miss, counted apart and listed in results.json under ``server_errors``) and the run
            goes on; a rerun into the folder asks it again.
        probe: Ask an endpoint once before the run (:mod:`gge.run.probe`): a wrong port, a missing
            ``/v1``, a model name not served, a refused prefill stop it in seconds, naming the option to
            set; it records who answered and checks the image tokens the server counts against the
            preset's (a mismatch warns, or stops with ``strict_server=true``), and starts an adaptive
            window small on a server that serves one request at a time. false skips it.
        max_server_error_share: Stop an endpoint run (keeping what finished; the same command
            resumes) once more than this share of its finished samples are server errors, checked
            from the 20th sample on: the server is broken, not flaky. 1 never stops.
        dry_run: Load no weights and evaluate nothing: print the preset and why it was chosen (and
            the warning a run gives when the checkpoint's ``model_type`` is not the preset's), write
            ``output_dir/requests.jsonl``, one line per model request the run would make (``propose``;
            with a critic also ``rank``/``judge`` over placeholder candidates, K points evenly placed
            on the image diagonal, since the real ones need the proposer's answers), and print the
            first request of each stage as a person would read it.
        resume: Skip the samples an earlier run into ``output_dir`` finished (the folder's
            ``run.json`` must show the same model, checkpoint, prompts, k... or the run stops and
            names what differs); false removes that run's predictions and outputs and starts over.
        drop_malformed_lines: Resume past malformed lines (not the last) of the output folder's own
            prediction logs: each is moved to ``predictions.rank<r>.jsonl.bad``, named on the console,
            and its sample evaluated again. Default: such a line stops the run, naming it.
        logger: ``wandb``, ``tensorboard`` or ``csv``: also log the scalars, the tables and the
            overlays (screenshots with target, candidates and pick) a training run would log.
        wandb_project: The W&B project (``logger=wandb``; offline when ``WANDB_MODE=offline``).
        table_samples: Screenshots per benchmark in the logged tables.
        report_misses: Misses per benchmark in ``report.html``'s gallery (screenshots drawn with the
            target, candidates and pick; about 20-60 KB each); 0 keeps the page without a gallery.
        progress_s: An endpoint run's progress line (samples done per benchmark, requests in flight,
            requests/s, retries, server errors, ETA) on stderr: on a terminal a live line redrawn in
            place; in a pipe or a log file one line every ``progress_s`` seconds (and one when the
            server becomes unreachable or is back), nothing for a run shorter than that. 0 turns it
            off. Default 60: a five-hour run's log gets 300 lines.
        client_procs: Client processes an endpoint run asks its samples from (:mod:`gge.run.client_procs`),
            each with a share of the request window: the per-sample client work (decoding, a marking
            critic's marks, PNGs, request bodies) then uses that many cores instead of one
            interpreter's. Worth it for a marking critic (pointwise, listwise) or ``model.refine=zoom``
            at high request rates (one core keeps up with about 30-60 of their requests per second at
            1080p); greedy and sampling runs need about 3 ms of client CPU a request. Default 1: the
            run's threads in one process. At most the window's most requests and the samples.
        pool: Judge the critic alone on frozen candidate pools (:class:`PoolConfig`): no proposer
            request; Top-1 is the critic's accuracy on the pool, ``critic_pool`` its figures.
        critic_rescue: Where no candidate hits, ask the critic again with a gold point (inside the
            target, seeded) in place of one: ``critic_rescue`` in results.json, the rate at which it
            picks the target once offered, beside the critic gap (nothing scored changes).
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
    strict_server: bool = False
    max_server_error_share: float = 0.1
    probe: bool = True
    resume: bool = True
    drop_malformed_lines: bool = False
    dry_run: bool = False
    logger: str | None = None
    wandb_project: str = "gge"
    table_samples: int = 16
    report_misses: int = 20
    progress_s: float = 60.0
    client_procs: int = 1
    pool: PoolConfig = field(default_factory=PoolConfig)
    critic_rescue: bool = False
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
            kind_of(value)  # an unknown name stops here
            preset = value
        else:
            _check_bench_key(key)
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
        from_preset = kind_of(preset).from_preset
        layers.append(OmegaConf.create({"model": load_preset(preset) if from_preset else {"name": preset}}))
        if selected_by is not None and from_preset:
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


def _check_bench_key(key: str) -> None:
    """``bench.<name>.<option>`` names a registered benchmark; else the benchmark's own error.

    A plugin that failed to load is not in the schema: its own load error (:func:`get_benchmark`)
    says why, rather than the schema's "Key '<name>' not in 'BenchConfig'".
    """
    parts = key.split(".")
    if parts[0] == "bench" and len(parts) > 1 and parts[1] not in REGISTRY:
        try:
            get_benchmark(parts[1])
        except GgeError as e:  # a broken plugin's own error, or "unknown benchmark" with a did-you-mean
            raise GgeError(f"{key}: {e}") from None


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


def validate(cfg: DictConfig) -> None:
    """Check what the schema alone cannot: names, ranges, and the optional packages the run needs.

    Args:
        cfg: A configuration from :func:`parse_args`.

    Raises:
        GgeError: naming the first key that is wrong, or the package to install.
    """
    RunSettings(
        tuple(cfg.benchmarks),
        k=cfg.k,
        selection=cfg.selection,
        cluster_radius=cfg.cluster_radius,
        max_samples=cfg.max_samples,
        batch_size=cfg.batch_size,
        num_workers=cfg.num_workers,
        table_samples=cfg.table_samples,
    )
    if not 0.0 <= float(cfg.max_server_error_share) <= 1.0:
        raise GgeError(f"max_server_error_share must be in [0, 1], got {cfg.max_server_error_share}")
    kind = kind_of(cfg.model)  # an unknown model name stops here
    m = cfg.model
    if m.refine != "none" and not kind.refines:
        raise GgeError(
            f"model.refine={m.refine}: model={m.name} asks no grounding request to repeat on a crop "
            "(a preset's model refines); set model.refine=none"
        )
    check_refine(
        str(m.refine),
        float(m.refine_zoom),
        str(m.refine_when),
        float(m.refine_radius),
        float(m.refine_threshold),
        str(m.critic),
    )
    kind.check_options(m)  # before any data is built (a demo run generates its suite on first use)
    if cfg.selection == REFINED and cfg.model.refine == "none" and not kind.replays:
        raise GgeError(
            "selection=refined needs a refine stage: set model.refine=zoom (the refined pick is the "
            "answer of that stage)"
        )
    if cfg.logger is not None and cfg.logger not in LOGGERS:
        raise unknown_name("logger", cfg.logger, LOGGERS)
    if cfg.decode_max_pixels is not None and cfg.decode_max_pixels < 1:
        raise GgeError(f"decode_max_pixels must be at least 1 (or unset), got {cfg.decode_max_pixels}")
    if cfg.report_misses < 0:
        raise GgeError(f"report_misses must be >= 0, got {cfg.report_misses}")
    if cfg.dry_run and cfg.pool.source is not None:
        raise GgeError("dry_run=true writes proposer requests, and a pool run asks none: try max_samples=2")
    if int(cfg.client_procs) > 1 and (cfg.pool.source is not None or cfg.critic_rescue):
        raise GgeError(
            f"client_procs={cfg.client_procs}: client processes build the model's own policy, not a pool's "
            "or a rescue's: run pool.source= and critic_rescue=true with client_procs=1"
        )
    if int(cfg.client_procs) < 1:
        raise GgeError(
            f"client_procs must be at least 1 (1: the run's threads in one process), got {cfg.client_procs}"
        )
    if not float(cfg.progress_s) >= 0:
        raise GgeError(f"progress_s must be >= 0 (0 turns the progress line off), got {cfg.progress_s}")
    if cfg.logger in ("wandb", "tensorboard"):
        _require(cfg.logger, f"logger={cfg.logger}")
    if kind.needs_transformers(cfg.model) and not cfg.dry_run:
        _require("transformers", f"model={cfg.model.name}")


def warn_model_type(cfg: DictConfig, out: TextIO) -> None:
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


def bench_options(cfg: DictConfig) -> dict[str, BenchmarkOptions]:
    """Each configured benchmark's options object (``bench.<name>.<option>=``), by name."""
    options: dict[str, BenchmarkOptions] = {}
    for name in cfg.benchmarks:
        value = OmegaConf.to_object(cfg.bench[name])
        assert isinstance(value, BenchmarkOptions)
        options[name] = value
    return options


def own_files(options: BenchmarkOptions) -> bool:
    """Whether a benchmark's options name its files themselves: ``root``, or a file ``path`` (``records``).

    Such a benchmark reads nothing under ``data_root``.

    Example:
        >>> own_files(BenchmarkOptions(root="/data/mine")), own_files(BenchmarkOptions())
        (True, False)
    """
    return bool(options.root) or bool(getattr(options, "path", None))


DEMO_DATA_ROOT = "demo"
"""``data_root=demo``: the synthetic demo suite, whatever ``gge data fetch`` put in the default folder."""


def uses_demo_suite(cfg: DictConfig) -> bool:
    """Whether the run reads the demo suite: no ``data_root``, and some benchmark without its own files.

    Args:
        cfg: A configuration from :func:`parse_args`.

    Returns:
        True when some configured benchmark would be read from the demo suite.
    """
    return cfg.data_root is None and not all(own_files(o) for o in bench_options(cfg).values())


def fetched_data_root(names: Sequence[str], out: TextIO | None) -> Path | None:
    """With no ``data_root``: the default data folder when ``gge data fetch`` put all of ``names`` there.

    Args:
        names: The benchmarks read under ``data_root`` (those without files of their own).
        out: Where to say it, or None.

    Returns:
        The folder (said on ``out``), or None: none of them was fetched (the demo suite is read).

    Raises:
        GgeError: Some were fetched and some not (:func:`gge.benchmarks.hosts.fetched_root`).
    """
    from gge.benchmarks.hosts import fetched_root

    if not names:
        return None
    root = fetched_root({n: get_benchmark(n).directory for n in names})
    if root is not None and out is not None:
        print(f"data_root not set: reading {', '.join(names)} as gge data fetch put them in {root}", file=out)
    return root


def default_data_root(seed: int, out: TextIO | None) -> Path:
    """The bundled demo suite (generated on first use) when no ``data_root`` is given; says so on ``out``.

    Args:
        seed: The run's seed (the suite's folder is per seed).
        out: Where to say it, or None.

    Returns:
        The demo suite's folder.
    """
    from gge.benchmarks.demo import demo_root  # the synthetic suite, drawn on first use

    root = demo_root(seed)
    if out is not None:
        print(f"data_root not set: using the synthetic demo suite at {root}", file=out)
    return root


def run_data_root(cfg: DictConfig, out: TextIO | None) -> tuple[Path | None, bool]:
    """The folder a run reads its benchmarks from, and whether it is the synthetic demo suite.

    ``data_root=demo`` is the demo suite whatever was fetched; an unset ``data_root`` is the default
    data folder when ``gge data fetch`` put every benchmark without files of its own there
    (:func:`fetched_data_root`, which then sets ``cfg.data_root`` so results.json records it), else
    the demo suite, generated on first use and said on ``out``.

    Args:
        cfg: The run's configuration (``data_root`` is resolved in place).
        out: Where to say which folder is read, or None.

    Returns:
        ``(data_root, is_demo)``: None when every benchmark names its own files.
    """
    if cfg.data_root == DEMO_DATA_ROOT:
        cfg.data_root = None
    elif cfg.data_root is None:
        unrooted = [name for name, options in bench_options(cfg).items() if not own_files(options)]
        fetched = fetched_data_root(unrooted, out)
        cfg.data_root = None if fetched is None else str(fetched)
    is_demo = uses_demo_suite(cfg)
    if is_demo:
        return default_data_root(int(cfg.seed), out), True
    return (None if cfg.data_root is None else Path(cfg.data_root)), False
