"""The kinds of model ``model=`` names, each answering in one place what a run asks of it.

A model is the bundled demo policy (``demo``), a predictions file (``replay``), a family preset
(``configs/models/<name>.yaml``, over transformers or an endpoint), or gge's own endpoint preset
(``openai_api``). :func:`kind_of` finds a configuration's kind once; the callers then ask the kind how
its policy is built, which files fingerprint a run, what its numbers are comparable with, whether
transformers must be installed, whether a dry run applies and which analysis options follow.
A new kind is one :class:`ModelKind` subclass and one line in :data:`KINDS`.

Example:
    >>> [type(kind_of(name)).__name__ for name in ("demo", "replay", "qwen2_5_vl", "openai_api")]
    ['DemoKind', 'ReplayKind', 'PresetKind', 'EndpointKind']
    >>> kind_of("demo").renders_requests, kind_of("qwen2_5_vl").renders_requests
    (False, True)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TextIO

from omegaconf import DictConfig, OmegaConf

from gge.benchmarks.loading import check_images
from gge.errors import GgeError, did_you_mean, unknown_name
from gge.models.base import Policy, capabilities, policy_analysis_options
from gge.models.factory import (
    ModelConfig,
    grounding_policy,
    load_preset,
    preset_config,
    preset_names,
    size_only_policy,
)
from gge.models.policy import GroundingPolicy
from gge.models.replay import ReplayModel
from gge.scoring.analysis import analysis_options
from gge.types import Absent, Sample

NOT_COMPARABLE = "gge proposer/critic with gge's generic prompts: not comparable to published numbers"
"""The protocol of a preset that states no published source (and of gge's endpoint preset)."""

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


def cascade_protocol(m: DictConfig) -> str | None:
    """The protocol of a run with a refine stage (``model.refine=zoom``), or None without one.

    A second request on a crop is no published protocol, whatever the first request is:
    ``gge cascade (zoom x<Z> on <pick>): not comparable to published numbers``, the pick being the
    critic's (``first`` when ``model.critic=none``: the first candidate is refined).

    Example:
        >>> cascade_protocol(OmegaConf.create({"refine": "zoom", "refine_zoom": 2.0, "critic": "none"}))
        'gge cascade (zoom x2 on first): not comparable to published numbers'
    """
    if m.get("refine", "none") == "none":
        return None
    pick = "first" if m.critic == "none" else "critic"
    return (
        f"gge cascade ({m.refine} x{float(m.refine_zoom):g} on {pick}): not comparable to published numbers"
    )


def _value(m: DictConfig, key: str) -> Any:
    """A ``model`` option as plain data (a nested section as a dict)."""
    v = m[key]
    return OmegaConf.to_container(v, resolve=True) if isinstance(v, DictConfig) else v


def _leaves(value: Any, prefix: str) -> dict[str, Any]:
    """``{dotted key: value}`` of a plain option value (a section's leaves, a dict as a whole if empty)."""
    if isinstance(value, dict) and value:
        return {k: v for key, sub in value.items() for k, v in _leaves(sub, f"{prefix}.{key}").items()}
    return {prefix: value}


def set_options(m: DictConfig, honoured: Sequence[str]) -> list[str]:
    """The ``model`` options outside ``honoured`` whose value differs from the schema's default.

    Args:
        m: A ``model`` section (typed by :class:`~gge.models.factory.ModelConfig`).
        honoured: The options the kind reads (top-level keys).

    Returns:
        ``key=value`` of each option set to something else than its default, in schema order (a
        section's options by their dotted key).

    Example:
        >>> m = OmegaConf.merge(
        ...     OmegaConf.structured(ModelConfig),
        ...     {"backend": "openai", "critic": "none", "prompts": {"system": "Be brief."}},
        ... )
        >>> set_options(m, ("name", "critic"))
        ['backend=openai', 'prompts.system=Be brief.']
    """
    default = OmegaConf.structured(ModelConfig)
    out = []
    for key in default:
        if key in honoured or key not in m:
            continue
        given, usual = _leaves(_value(m, str(key)), str(key)), _leaves(_value(default, str(key)), str(key))
        out += [f"{k}={v}" for k, v in given.items() if k not in usual or usual[k] != v]
        out += [
            f"{k}=null" for k in usual if k not in given and not any(g.startswith(f"{k}.") for g in given)
        ]
    return out


def refuse_unused(m: DictConfig, honoured: Sequence[str], why: str) -> None:
    """Refuse, in one line, the ``model`` options outside ``honoured`` set to a value of their own.

    Args:
        m: A ``model`` section.
        honoured: The options the kind reads.
        why: The rest of the line, with ``{it}`` for "it" or "them".

    Raises:
        GgeError: ``model.<key>=<value>, ...: <why>`` naming every such option (:func:`set_options`).
    """
    unused = set_options(m, honoured)
    if unused:
        it = "it" if len(unused) == 1 else "them"
        raise GgeError(", ".join(f"model.{kv}" for kv in unused) + ": " + why.format(it=it))


class ModelKind(ABC):
    """One kind of model: how a run builds it and what it says about the run.

    Attributes:
        label: The kind's name (a ``model=`` name, or ``preset`` for every family preset).
        from_preset: Its options come from ``configs/models/<name>.yaml`` (else only ``model.name``
            is set before the command line's ``model.<key>=``).
        renders_requests: ``dry_run=true`` applies: it sends requests a dry run can write.
        refines: ``model.refine=zoom`` applies (default False: the run refuses it).
        replays: Its answers, refine answers included, are read back from a file (``selection=refined``
            needs no refine stage of its own: the file's are scored).
    """

    label: ClassVar[str]
    from_preset: ClassVar[bool]
    renders_requests: ClassVar[bool]
    refines: ClassVar[bool] = False
    """Its policy can run the refine stage (``model.refine=zoom``): a :class:`GroundingPolicy`."""
    replays: ClassVar[bool] = False

    def fill_defaults(self, cfg: DictConfig, demo_root: Path | None) -> None:
        """Fill in what the run's other options imply, before anything reads ``cfg`` (default: nothing).

        Args:
            cfg: The whole run configuration (changed in place).
            demo_root: The synthetic demo suite's folder when the run reads it (no ``data_root``).
        """
        del cfg, demo_root

    @abstractmethod
    def build(self, cfg: DictConfig) -> Policy:
        """The policy the configuration names (loading weights or reading files as needed)."""

    @abstractmethod
    def fingerprint_files(self, cfg: DictConfig) -> dict[str, str | None]:
        """The files whose content makes the predictions, by option name (``ckpt``...; None: not set)."""

    @abstractmethod
    def protocol(self, m: DictConfig) -> str:
        """What the numbers of a run are comparable with (results.json ``protocol``, report.md)."""

    @abstractmethod
    def needs_transformers(self, m: DictConfig) -> bool:
        """Whether a run (not a dry run) loads a model with the transformers package."""

    @abstractmethod
    def analysis_options(self, m: DictConfig, policy: Policy) -> dict[str, Any]:
        """The analysis options of a run (:func:`gge.scoring.analysis.analysis_options`)."""

    def entry_extras(
        self, policy: Policy, benchmark: str, every: Sequence[Sample], evaluated: Sequence[Sample]
    ) -> dict[str, Any]:
        """What this kind adds to a benchmark's results.json entry (default: nothing).

        Args:
            policy: The run's policy (built by :meth:`build`).
            benchmark: The benchmark's name.
            every: All the samples its files hold.
            evaluated: The samples the run evaluated.
        """
        del policy, benchmark, every, evaluated
        return {}

    def run_warnings(self, policy: Policy, benchmarks: Sequence[str]) -> list[str]:
        """Warnings about the run as a whole, printed after its tables (default: none).

        Args:
            policy: The run's policy.
            benchmarks: The benchmarks the run evaluated.
        """
        del policy, benchmarks
        return []

    def check_options(self, m: DictConfig) -> None:
        """Refuse the ``model`` options this kind cannot honour (default: it honours them all).

        Raises:
            GgeError: one line naming the option and the kind.
        """
        del m

    def recorded_options(self, m: DictConfig) -> dict[str, Any]:
        """The ``model`` options results.json ``config.model`` records: those the run used (default: all)."""
        model = OmegaConf.to_container(m, resolve=True)
        assert isinstance(model, dict)
        return {str(key): value for key, value in model.items()}

    def check_data(
        self, policy: Policy, samples: Mapping[str, Sequence[Sample]], *, strict_images: bool, out: TextIO
    ) -> None:
        """Check the loaded samples against what the policy needs, before anything is evaluated.

        The default lists the missing screenshots of a policy that looks at them
        (:func:`gge.benchmarks.loading.check_images`; ``strict_images`` stops the run).

        Args:
            policy: The run's policy.
            samples: The samples to evaluate, by benchmark.
            strict_images: Stop on a missing screenshot instead of warning.
            out: Where warnings go.
        """
        if capabilities(policy).needs_images:
            check_images(samples, strict=strict_images, out=out)

    def dry_run_policy(self, m: DictConfig, k: int) -> GroundingPolicy:
        """A policy over no model that renders the requests a run would send (``renders_requests``).

        Raises:
            GgeError: this kind sends no request (the default).
        """
        raise GgeError(f"model={m.name} sends no request: a dry run renders a preset's")


class DemoKind(ModelKind):
    """``model=demo``: the small proposer/critic shipped with gge (:mod:`gge.models.demo`).

    ``ckpt=`` may name another demo checkpoint (a ``*.pt`` file); unset, the shipped one. Of the
    ``model`` options it honours only ``model.critic=none``, which switches its critic off (no
    ``judge`` stage; the candidates unscored, so every critic pick is the first, as a preset's without
    a critic); every other option set to a value of its own is refused (:meth:`check_options`), and
    results.json records only ``name`` and ``critic``.
    """

    label = "demo"
    from_preset = False
    renders_requests = False
    HONOURED: ClassVar[tuple[str, ...]] = ("name", "critic")
    """The ``model`` options the demo reads."""

    def check_options(self, m: DictConfig) -> None:
        """Refuse a critic other than its own or none, and every option it does not read, when set.

        Raises:
            GgeError: e.g. ``model.backend=openai: model=demo does not use it ...``.
        """
        default_critic = ModelConfig.critic
        if m.critic not in (default_critic, "none"):
            raise GgeError(
                f"model.critic={m.critic}: model=demo has one critic, its own network (on by default, "
                "off with model.critic=none); a listwise or pointwise critic is a preset's"
            )
        refuse_unused(
            m,
            self.HONOURED,
            "model=demo does not use {it} (a preset's or a replay's option); the demo takes ckpt=, k=, "
            "seed= and model.critic=none: unset {it}, or name a preset with model=NAME",
        )

    def recorded_options(self, m: DictConfig) -> dict[str, Any]:
        """``name`` and ``critic``: the options the demo reads (the others are refused when set).

        The critic is recorded as what runs: ``own`` (its own network, the default) or ``none``, not
        the schema's ``listwise`` default, which the demo never asks.
        """
        return {"name": _value(m, "name"), "critic": "none" if m.critic == "none" else "own"}

    def build(self, cfg: DictConfig) -> Policy:
        """The demo policy from ``ckpt`` (default: the shipped checkpoint), with ``k``, ``seed``, critic.

        Raises:
            GgeError: an option it cannot honour (:meth:`check_options`).
        """
        from gge.models.demo import load_demo_policy

        self.check_options(cfg.model)
        return load_demo_policy(
            cfg.ckpt or None, k=int(cfg.k), seed=int(cfg.seed), critic=cfg.model.critic != "none"
        )

    def fingerprint_files(self, cfg: DictConfig) -> dict[str, str | None]:
        """The checkpoint: ``ckpt``, or the shipped one."""
        from gge.models.demo import default_checkpoint

        return {"ckpt": str(default_checkpoint()) if cfg.ckpt is None else cfg.ckpt}

    def protocol(self, m: DictConfig) -> str:
        """The demo model on its synthetic suite: gge's own numbers (its proposer alone with no critic)."""
        model = "proposer, no critic" if m.critic == "none" else "proposer/critic"
        return f"gge demo {model} (synthetic suite): not comparable to published numbers"

    def needs_transformers(self, m: DictConfig) -> bool:
        """No: a torch model of gge's own."""
        return False

    def analysis_options(self, m: DictConfig, policy: Policy) -> dict[str, Any]:
        """What the demo policy declares (its critic's scores are logits)."""
        return policy_analysis_options(policy)


class ReplayKind(ModelKind):
    """``model=replay``: the predictions of ``model.predictions`` (a JSONL file), no model.

    Of the ``model`` options it reads ``predictions`` and ``delay_s`` (with ``format``, a published log
    read as ``gge import`` reads it, and ``read_preset``, ``read_convention`` and ``columns``, as its
    ``--preset``, ``--convention`` and ``--columns``: :mod:`gge.models.imported.replaying`), and two
    that describe the run
    that made the file: ``proposer`` (``sampling`` makes pass@k count its answers as draws) and
    ``critic`` (compared by ``gge compare``); every other option set to a value of its own is refused
    (:meth:`check_options`: a replay sends no request, so a backend, convention or sampling setting
    would be recorded and do nothing), and results.json records only these.
    """

    HONOURED: ClassVar[tuple[str, ...]] = (
        "name",
        "predictions",
        "format",
        "read_preset",
        "read_convention",
        "columns",
        "delay_s",
        "proposer",
        "critic",
    )
    """The ``model`` options a replay reads or records."""

    def check_options(self, m: DictConfig) -> None:
        """Refuse every option a replay does not read, when set.

        Raises:
            GgeError: e.g. ``model.backend=openai: model=replay does not use it ...``.
        """
        refuse_unused(
            m,
            self.HONOURED,
            "model=replay does not use {it} (it sends no request: the answers are the file's); it takes "
            "model.predictions=, model.format= (with model.read_preset=, model.read_convention=, "
            "model.columns=), model.delay_s= and, describing the run that made the file, "
            "model.proposer= and model.critic=: unset {it}",
        )

    def recorded_options(self, m: DictConfig) -> dict[str, Any]:
        """The options a replay reads or records (:attr:`HONOURED`; a log's reading ones only for a log)."""
        log = ("format", "read_preset", "read_convention", "columns")
        return {key: _value(m, key) for key in self.HONOURED if str(m.format) != "gge" or key not in log}

    label = "replay"
    from_preset = False
    renders_requests = False
    replays = True

    def fill_defaults(self, cfg: DictConfig, demo_root: Path | None) -> None:
        """Over the demo suite, the suite's own ``predictions.jsonl`` when no file is named."""
        if cfg.model.predictions is None and demo_root is not None:
            cfg.model.predictions = str(demo_root / "predictions.jsonl")

    def build(self, cfg: DictConfig) -> Policy:
        """The replay model of the file.

        Raises:
            GgeError: no file named, or an option it does not read (:meth:`check_options`).
        """
        m = cfg.model
        self.check_options(m)
        if m.predictions is None:
            raise GgeError("model=replay needs model.predictions=FILE (a JSONL file, one line per sample)")
        if str(m.format) == "gge":
            for key in ("read_preset", "read_convention", "columns"):
                if m[key] is not None:
                    raise GgeError(
                        f"model.{key}={m[key]}: reads a published log; a gge replay file's points are "
                        "final (name the log's model.format=, or unset it)"
                    )
            return ReplayModel(m.predictions, delay_s=float(m.delay_s), strict_images=bool(cfg.strict_images))
        from gge.models.imported.generic import parse_columns
        from gge.models.imported.replaying import ImportedReplay
        from gge.models.imported.reread import reading

        how = None
        if m.read_preset is not None or m.read_convention is not None:
            how = reading(m.read_preset, m.read_convention)
        return ImportedReplay(
            m.predictions,
            str(m.format),
            reading=how,
            columns=parse_columns(str(m.columns)) if m.columns is not None else None,
            delay_s=float(m.delay_s),
            strict_images=bool(cfg.strict_images),
        )

    def check_data(
        self, policy: Policy, samples: Mapping[str, Sequence[Sample]], *, strict_images: bool, out: TextIO
    ) -> None:
        """Each line checked, and the missing screenshots whose size no record gives listed.

        A line that names another screenshot or size than its sample refuses the file
        (:meth:`gge.models.replay.ReplayModel.check_samples`), counting every such line. A sample whose
        record gives its screenshot's size is scored without the file (a replay needs no pixels:
        :func:`gge.benchmarks.images.absent_but_sized`): one line per benchmark says how many.
        """
        assert isinstance(policy, ReplayModel)
        from gge.models.imported.replaying import ImportedReplay

        if isinstance(policy, ImportedReplay):
            for line in policy.load(samples).summary():
                print(line, file=out)
        from gge.benchmarks.images import absent_but_sized

        policy.check_samples(s for group in samples.values() for s in group)
        read = {name: [s for s in group if not absent_but_sized(s)] for name, group in samples.items()}
        for name, group in samples.items():
            unread = len(group) - len(read[name])
            if unread and not strict_images:  # strict: every screenshot must be there (listed below)
                said = images_read(len(group), unread)
                print(
                    f"{name}: {unread} of {len(group)} screenshots not present: scored from their records' "
                    f"sizes (a replay needs no pixels; results.json images: {said})",
                    file=out,
                )
        check_images(samples if strict_images else read, strict=strict_images, out=out)

    def fingerprint_files(self, cfg: DictConfig) -> dict[str, str | None]:
        """The predictions file."""
        return {"predictions": cfg.model.predictions}

    def protocol(self, m: DictConfig) -> str:
        """The run that made the predictions decides."""
        return "replayed predictions: as comparable as the run that made them"

    def needs_transformers(self, m: DictConfig) -> bool:
        """No: nothing is loaded."""
        return False

    def analysis_options(self, m: DictConfig, policy: Policy) -> dict[str, Any]:
        """pass@k when the replayed run says ``model.proposer=sampling``; the score kind inferred."""
        return analysis_options(str(m.proposer), None)

    def entry_extras(
        self, policy: Policy, benchmark: str, every: Sequence[Sample], evaluated: Sequence[Sample]
    ) -> dict[str, Any]:
        """The file's lines that match no sample, how many evaluated samples lack one, and the images read.

        ``images``: ``read`` (every screenshot present), ``not read`` (none: scored from the records'
        sizes) or ``partly read`` (with ``images_not_read``: how many were not).
        """
        assert isinstance(policy, ReplayModel)
        from gge.benchmarks.images import absent_but_sized
        from gge.models.imported.replaying import ImportedReplay

        unread = sum(absent_but_sized(s) for s in evaluated)
        extras: dict[str, Any] = {
            "unmatched_predictions": policy.unknown_ids(benchmark, (s.id for s in every)),
            "missing_predictions": len(policy.missing_ids(benchmark, (s.id for s in evaluated))),
            "images": images_read(len(evaluated), unread),
        }
        if 0 < unread < len(evaluated):
            extras["images_not_read"] = unread
        if isinstance(policy, ImportedReplay) and policy.report is not None:
            extras["imported_log"] = policy.imported_log()
        return extras

    def run_warnings(self, policy: Policy, benchmarks: Sequence[str]) -> list[str]:
        """One per benchmark the file has lines for that the run did not evaluate (a typo named as such)."""
        from gge.benchmarks import REGISTRY

        assert isinstance(policy, ReplayModel)
        warnings = []
        for other in sorted(policy.benchmarks() - set(benchmarks)):
            hint = "" if other in REGISTRY else f": not a benchmark{did_you_mean(other, REGISTRY)}"
            warnings.append(f"the predictions file has lines for '{other}', not evaluated in this run{hint}")
        return warnings


def images_read(samples: int, unread: int) -> str:
    """What a replay read of a benchmark's screenshots: ``read``, ``not read`` or ``partly read``.

    Example:
        >>> images_read(10, 0), images_read(10, 10), images_read(10, 3), images_read(0, 0)
        ('read', 'not read', 'partly read', 'read')
    """
    if unread == 0:
        return "read"
    return "not read" if unread >= samples else "partly read"


class PresetKind(ModelKind):
    """A family preset: its authors' request (prompts, convention, pixel budget) over a backend.

    ``model.backend=transformers`` loads ``ckpt``; ``model.backend=openai`` asks an endpoint, whose
    server-side smart_resize is mirrored with ``model.resize_factor`` (default: the preset's
    ``patch_factor``).
    """

    label = "preset"
    from_preset = True
    renders_requests = True
    refines = True

    def resize_factor(self, m: DictConfig) -> int | None:
        """The openai backend's mirrored resize factor: ``model.resize_factor``, else ``patch_factor``."""
        return int(m.resize_factor) if m.resize_factor else int(m.patch_factor)

    def build(self, cfg: DictConfig) -> Policy:
        """A :class:`~gge.models.policy.GroundingPolicy` (:func:`gge.models.factory.grounding_policy`)."""
        return grounding_policy(cfg, self.resize_factor(cfg.model))

    def dry_run_policy(self, m: DictConfig, k: int) -> GroundingPolicy:
        """The preset's policy over a stand-in that knows only the size the model sees."""
        return size_only_policy(m, k, self.resize_factor(m))

    def fingerprint_files(self, cfg: DictConfig) -> dict[str, str | None]:
        """The checkpoint and the separate critic's, where set."""
        return {"ckpt": cfg.ckpt, "critic_ckpt": cfg.model.critic_ckpt}

    def protocol(self, m: DictConfig) -> str:
        """``official <family>, <source>`` when the preset runs as its authors evaluate it.

        That is greedy, no critic, its requests unchanged; otherwise ``gge proposer/critic: not
        comparable to published numbers``, naming what differs from the official request, if anything;
        with a refine stage, :func:`cascade_protocol`.
        """
        cascade = cascade_protocol(m)
        if cascade is not None:
            return cascade
        preset = load_preset(str(m.name))
        if not preset.get("source"):
            return NOT_COMPARABLE

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

    def needs_transformers(self, m: DictConfig) -> bool:
        """With the transformers backend."""
        return bool(m.backend == "transformers")

    def analysis_options(self, m: DictConfig, policy: Policy) -> dict[str, Any]:
        """From the preset's proposer and critic modes."""
        return analysis_options(str(m.proposer), str(m.critic))


class EndpointKind(PresetKind):
    """``model=openai_api``: any model behind an OpenAI-compatible endpoint, with gge's generic prompts.

    The screenshot is sent as it is unless ``model.resize_factor`` names the server's resize factor.
    """

    label = "openai_api"

    def resize_factor(self, m: DictConfig) -> int | None:
        """``model.resize_factor`` as set (None: the server sees the screenshot as it is)."""
        return None if m.resize_factor is None else int(m.resize_factor)

    def protocol(self, m: DictConfig) -> str:
        """Generic prompts of gge's own: never a published protocol (a cascade says so its way)."""
        return cascade_protocol(m) or NOT_COMPARABLE


KINDS: dict[str, ModelKind] = {"demo": DemoKind(), "replay": ReplayKind(), "openai_api": EndpointKind()}
"""The kinds a ``model=`` name has of its own; every other preset is a :data:`PRESET`."""

PRESET = PresetKind()
"""The kind of every family preset (``configs/models/<name>.yaml``) not named in :data:`KINDS`."""


def model_names() -> list[str]:
    """Every valid ``model=`` name: the kinds that are no preset, then the presets."""
    return [name for name, kind in KINDS.items() if not kind.from_preset] + preset_names()


def kind_of(m: DictConfig | str) -> ModelKind:
    """The kind of a ``model`` section (or of a ``model=`` name).

    Raises:
        GgeError: an unknown name, listing the known ones.
    """
    name = m if isinstance(m, str) else str(m.name)
    if name in KINDS:
        return KINDS[name]
    if name in preset_names():
        return PRESET
    raise unknown_name("model", name, model_names())


def build_policy(cfg: DictConfig) -> Policy:
    """The policy the configuration names (its kind's :meth:`ModelKind.build`).

    Args:
        cfg: The whole run configuration (``model``, ``ckpt``, ``k``, ``batch_size``, ``seed``).

    Returns:
        The demo model, a replay model, or a :class:`~gge.models.policy.GroundingPolicy` over a backend.
    """
    return kind_of(cfg.model).build(cfg)


def dry_run_policy(m: DictConfig, k: int) -> GroundingPolicy:
    """A policy over no model: it renders the requests a run would send (``dry_run=true``).

    The size the model sees is the preset's kind's (:meth:`ModelKind.dry_run_policy`).
    """
    return kind_of(m).dry_run_policy(m, k)


def preset_request(
    name: str,
    benchmark: str,
    instruction: str,
    image_size: tuple[int, int],
    overrides: dict[str, Any] | None = None,
) -> tuple[tuple[int, int], list[Any]]:
    """The proposer requests a preset sends for one screenshot, without loading any model.

    Args:
        name: The preset.
        benchmark: The benchmark (selects a per-benchmark variant).
        instruction: The instruction.
        image_size: (width, height) of the screenshot.
        overrides: ``model.<key>`` values to apply, e.g. ``{"proposer": "sampling"}``.

    Returns:
        ``(seen_size, specs)``: the size the model sees, and the request specs
        (:class:`gge.models.policy.RequestSpec`: ``messages``, ``prefill``, ``generation``).

    Example:
        >>> size, specs = preset_request("qwen2_vl", "screenspot_pro", "open the filter", (1920, 1080))
        >>> size, specs[0].messages[-1]["content"][0]
        ((1932, 1092), {'type': 'image', 'width': 1932, 'height': 1092})
    """
    policy = dry_run_policy(preset_config(name, overrides), 5)
    seen = policy.backend.seen_size(*image_size)
    sample = Sample(benchmark, "0", "", image_size, instruction, Absent())
    return seen, policy.proposer_requests(sample, seen)
