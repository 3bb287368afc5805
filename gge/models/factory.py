"""What a policy is built from: presets, checkpoint detection, adapter settings and backends.

Which of these a model uses is its kind's business (:mod:`gge.models.registry`, whose
:func:`~gge.models.registry.build_policy` turns a configuration into a policy).

Presets are YAML files in the top-level ``configs/models/`` folder (shipped in the wheel as
``gge.configs``), one per model family, each the family's official evaluation protocol with its
source named; a preset's keys are ``model.<key>`` options, which the command line can override.
``ckpt=PATH`` without ``model=`` picks the preset from the checkpoint's ``model_type`` and its name
(:func:`preset_for_checkpoint`), and stops when the name does not say which family it is.

Example:
    >>> "qwen2_5_vl" in preset_names() and "openai_api" in preset_names()
    True
"""

from __future__ import annotations

import importlib.resources
import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gge.errors import GgeError
from gge.models.base import Backend
from gge.models.markers import MarkerStyle
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.models.prompts import Prompts


def _preset_dir() -> Path:
    """Where the presets are: the installed ``gge.configs``, or ``configs/`` of the source tree.

    Running ``python eval.py`` in a clone imports gge from the clone, where ``gge.configs`` does not
    exist as a folder (the wheel maps the top-level ``configs/`` to it); the clone's ``configs/`` is
    then the one.
    """
    try:
        return Path(str(importlib.resources.files("gge.configs"))) / "models"
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "configs" / "models"


PRESET_DIR = _preset_dir()
PROCESSOR_MIN_PIXELS = 56 * 56
PROCESSOR_MAX_PIXELS = 14 * 14 * 4 * 16384
"""The Qwen2/2.5-VL processors' default pixel limits (used where a preset leaves one unset)."""

_DEFAULT_PROMPTS = Prompts()
_DEFAULT_MARKERS = MarkerStyle()
_DEFAULT_ADAPTER = AdapterSettings()
"""gge's defaults, held once: the schema below takes its defaults from the settings objects it fills."""


@dataclass
class PromptConfig:
    """Prompt templates (see :class:`gge.models.prompts.Prompts` for the placeholders)."""

    name: str = _DEFAULT_PROMPTS.name
    system: str | None = None
    tools: str | None = None
    propose_one: str = _DEFAULT_PROMPTS.propose_one
    propose_k: str = _DEFAULT_PROMPTS.propose_k
    rank_list: str = _DEFAULT_PROMPTS.rank_list
    judge_one: str = _DEFAULT_PROMPTS.judge_one
    prefill: str | None = None
    user_layout: str = _DEFAULT_PROMPTS.user_layout
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class MarkerConfig:
    """Critic marker style (see :class:`gge.models.markers.MarkerStyle`)."""

    shape: str = _DEFAULT_MARKERS.shape
    size: float = _DEFAULT_MARKERS.size
    colors: list[str] = field(default_factory=lambda: list(_DEFAULT_MARKERS.colors))
    outline: str = _DEFAULT_MARKERS.outline
    numbered: bool = _DEFAULT_MARKERS.numbered


@dataclass
class ModelConfig:
    """Which model answers, and its options (``model.<option>=`` on the command line).

    Attributes:
        name: ``demo`` (the small proposer/critic shipped with gge, :mod:`gge.models.demo`; ``ckpt=``
            may point at another demo checkpoint), ``replay`` or a preset (``qwen2_5_vl``,
            ``ui_tars_1_5``, ``qwen3_vl``, ``qwen2_vl``, ``openai_api``).
        predictions: ``replay``: the JSONL predictions file (or, with ``format``, a published log).
        format: ``replay``: the file's format, ``gge`` (replay lines; the default) or a ``gge import``
            format (``sspro_log``, ``gelato``, ``clawgui``, ``generic``...), read and matched to the
            run's one benchmark as ``gge import`` does.
        read_preset: ``replay`` of a log: read its raw answers again with this preset (``--preset``).
        read_convention: ``replay`` of a log: the raw answers' convention (``--convention``).
        columns: ``replay`` of a ``generic`` log: ``field=column,...`` (``--columns``).
        delay_s: ``replay``: seconds to wait per batch, standing in for a model's latency
            (benchmarks, interruption tests).
        backend: ``transformers`` or ``openai``.
        convention: How the model's coordinates read (``abs_original``, ``abs_resized``, ``norm_1000``,
            ``norm_999``, ``norm_1``).
        proposer: ``single_pass``, ``sampling`` or ``greedy``.
        critic: ``listwise``, ``pointwise`` or ``none``.
        critic_ckpt: A separate critic checkpoint (default: the proposer's model in a second prompt).
        temperature: Sampling temperature (``sampling``).
        top_p: Nucleus mass (``sampling``).
        top_k: Top-k (``sampling``; 0 = off, whatever the checkpoint's generation config says).
        repetition_penalty: Repetition penalty (1.0 = off, whatever the checkpoint says; null = the
            checkpoint's generation config, as official code that passes none gets it).
        max_new_tokens: Proposer generation budget.
        critic_max_new_tokens: Listwise critic generation budget.
        min_pixels: Smallest image area the model sees.
        max_pixels: Largest image area the model sees.
        dtype: ``auto``, ``bfloat16``, ``float16``, ``float32``.
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda``, ``cuda:1``...
        attn_implementation: e.g. ``sdpa``, ``flash_attention_2``.
        trust_remote_code: Allow code shipped with a checkpoint (off unless asked).
        yes: Pointwise critic's positive answer.
        no: Pointwise critic's negative answer.
        prompts: Prompt templates.
        markers: Marker style.
        base_url: ``openai``: the endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        api_model: ``openai``: the served model's name.
        api_key_env: ``openai``: the environment variable holding the key (never logged).
        concurrency: ``openai``: the request window, requests in flight at once across the whole run
            (samples, stages and benchmarks); null (the default): adaptive, starting at 64 and
            growing up to ``max_concurrency`` while the server keeps up, halved on HTTP 429/503 and
            timeouts (:mod:`gge.models.window`).
        max_concurrency: ``openai``: the most an adaptive window grows to (default 256).
        image_format: ``openai``: how request images are sent, ``png`` (lossless: the model sees the
            pixels an in-process run sees; the default) or ``jpeg`` (smaller, lossy); a screenshot
            sent unchanged goes as its file's own bytes where the format allows
            (:mod:`gge.models.encoding`).
        jpeg_quality: ``openai``: the quality of ``jpeg`` images (1-100, default 90).
        max_retries: ``openai``: retries on 429, 5xx and timeouts.
        timeout_s: ``openai``: per-request timeout.
        server_wait_s: ``openai``: how long (seconds) to wait for a server that stops answering
            connections after it has answered once (a restart, a model reload): requests wait and are
            sent again when it answers (default 600; 0: do not wait). Changes no prediction.
        resize_factor: ``openai``: mirror the server's smart_resize with this factor (Qwen-VL served;
            default for a family preset: its ``patch_factor``).
        family: The model family a preset evaluates (e.g. ``Qwen2.5-VL``).
        source: Where the preset's protocol comes from (repository, file, commit).
        model_types: The ``model_type`` values of the family's checkpoints (checkpoint detection).
        name_patterns: Regular expressions that a checkpoint's name matches when it is of this family.
        patch_factor: The model's resize factor (patch x merge).
        prompt_max_pixels: The screen size the prompt states is ``smart_resize`` under this max area
            (None: the size the model sees).
        box_pairs: Read ``(x1,y1),(x2,y2)`` as one box.
        needs_remote_code: The family's checkpoints need ``trust_remote_code`` (asked for explicitly).
        selected_by: How ``ckpt=`` chose this preset (filled in by gge, recorded in results.json).
        refine: ``none`` (the official protocols) or ``zoom``: a second look at a crop around the
            critic's pick (the first candidate without a critic), asked with the family's own
            grounding request; the answer is the ``refined`` selection strategy.
        refine_zoom: The crop is the screenshot's width and height divided by this (> 1), centred on
            the pick and shifted to stay inside the screenshot.
        refine_when: ``always``, ``disagree`` (the proposer's candidates lie farther than
            ``refine_radius`` of the image diagonal from the pick) or ``low_score`` (the critic's top
            score is under ``refine_threshold``).
        refine_radius: ``disagree``: the spread, as a fraction of the image diagonal.
        refine_threshold: ``low_score``: the critic's score under which the stage runs.
    """

    name: str = "demo"
    predictions: str | None = None
    format: str = "gge"
    read_preset: str | None = None
    read_convention: str | None = None
    columns: str | None = None
    delay_s: float = 0.0
    backend: str = "transformers"
    convention: str = _DEFAULT_ADAPTER.convention
    proposer: str = _DEFAULT_ADAPTER.proposer
    critic: str = _DEFAULT_ADAPTER.critic
    critic_ckpt: str | None = None
    temperature: float = _DEFAULT_ADAPTER.temperature
    top_p: float = _DEFAULT_ADAPTER.top_p
    top_k: int = _DEFAULT_ADAPTER.top_k
    repetition_penalty: float | None = _DEFAULT_ADAPTER.repetition_penalty
    max_new_tokens: int = _DEFAULT_ADAPTER.max_new_tokens
    critic_max_new_tokens: int = _DEFAULT_ADAPTER.critic_max_new_tokens
    min_pixels: int | None = None
    max_pixels: int | None = None
    dtype: str = "auto"
    device: str = "auto"
    attn_implementation: str | None = None
    trust_remote_code: bool = False
    yes: str = _DEFAULT_ADAPTER.yes
    no: str = _DEFAULT_ADAPTER.no
    prompts: PromptConfig = field(default_factory=PromptConfig)
    markers: MarkerConfig = field(default_factory=MarkerConfig)
    base_url: str | None = None
    api_model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int | None = None
    max_concurrency: int = 256
    image_format: str = "png"
    jpeg_quality: int = 90
    max_retries: int = 5
    timeout_s: float = 60.0
    server_wait_s: float = 600.0
    resize_factor: int | None = None
    family: str | None = None
    source: str | None = None
    model_types: list[str] = field(default_factory=list)
    name_patterns: list[str] = field(default_factory=list)
    patch_factor: int = _DEFAULT_ADAPTER.patch_factor
    prompt_max_pixels: int | None = _DEFAULT_ADAPTER.prompt_max_pixels
    box_pairs: bool = _DEFAULT_ADAPTER.box_pairs
    needs_remote_code: bool = False
    selected_by: str | None = None
    refine: str = _DEFAULT_ADAPTER.refine
    refine_zoom: float = _DEFAULT_ADAPTER.refine_zoom
    refine_when: str = _DEFAULT_ADAPTER.refine_when
    refine_radius: float = _DEFAULT_ADAPTER.refine_radius
    refine_threshold: float = _DEFAULT_ADAPTER.refine_threshold


def preset_names() -> list[str]:
    """The presets shipped with gge."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def load_preset(name: str) -> DictConfig:
    """A preset's YAML as a config (validated against :class:`ModelConfig` by the caller's merge)."""
    cfg = OmegaConf.load(PRESET_DIR / f"{name}.yaml")
    assert isinstance(cfg, DictConfig)
    cfg.name = name
    return cfg


def checkpoint_names(ckpt: str | Path) -> list[str]:
    """The names a checkpoint goes by: its folder and the folder above, ``_name_or_path``, README title.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()) / "UI-TARS-1.5-7B" / "checkpoint-200"
        >>> root.mkdir(parents=True)
        >>> _ = (root / "config.json").write_text('{"_name_or_path": "ByteDance-Seed/UI-TARS-1.5-7B"}')
        >>> checkpoint_names(root)
        ['checkpoint-200', 'UI-TARS-1.5-7B', 'ByteDance-Seed/UI-TARS-1.5-7B']
    """
    folder = Path(ckpt).resolve()
    names = [folder.name, folder.parent.name]
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if isinstance(config, dict) and isinstance(config.get("_name_or_path"), str):
            names.append(config["_name_or_path"])
    except (OSError, ValueError):
        pass
    readme = folder / "README.md"
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8", errors="replace").splitlines()[:80]:
            if line.startswith("# "):
                names.append(line[2:].strip())
                break
    return [n for n in names if n]


def preset_for_checkpoint(ckpt: str) -> tuple[str, str]:
    """The preset of a checkpoint, and why: never a silent guess between families.

    A file is a demo checkpoint. A folder's ``model_type`` gives the families that share it; a
    checkpoint name (see :func:`checkpoint_names`) matching a family's ``name_patterns`` picks that
    family (a fine-tune's family before its base model's). When several families share the model type
    and no name says which, it stops and lists them.

    Args:
        ckpt: A checkpoint folder or a demo checkpoint file.

    Returns:
        ``(preset, reason)``.

    Raises:
        GgeError: no preset knows the model type, or the name does not tell the family.
    """
    from gge.models.hf_loading import model_type

    if ckpt.endswith((".pt", ".pth")) or Path(ckpt).is_file():
        return "demo", "a single file: a gge demo checkpoint"

    mtype = model_type(ckpt)
    presets = {name: load_preset(name) for name in preset_names()}
    family = [name for name, p in presets.items() if mtype in (p.get("model_types") or [])]
    if not family:
        raise GgeError(
            f"{ckpt}: no preset for model_type '{mtype}'; name one with model=NAME "
            f"(known: {', '.join(preset_names())})"
        )
    names = checkpoint_names(ckpt)
    matches: dict[str, str] = {}
    for preset in family:
        for pattern in presets[preset].get("name_patterns") or []:
            hit = next((n for n in names if re.search(pattern, n, re.IGNORECASE)), None)
            if hit is not None and preset not in matches:
                matches[preset] = f"model_type '{mtype}' and the name '{hit}' matches /{pattern}/"
    tuned = {p: why for p, why in matches.items() if p != mtype}  # a fine-tune names its base too
    chosen = tuned or matches
    if len(chosen) == 1:
        return next(iter(chosen.items()))
    if not matches and len(family) == 1:
        return family[0], f"model_type '{mtype}' (the only family with it)"
    listed = sorted(chosen) if chosen else sorted(family)
    lines = "; ".join(f"model={p} ({presets[p].get('family') or p})" for p in listed)
    said = (
        f"its name ({', '.join(repr(n) for n in names)}) matches several" if chosen else "no name says which"
    )
    raise GgeError(
        f"{ckpt}: model_type '{mtype}' is shared by {len(family)} families and {said}; add one of: {lines}"
    )


_DERIVED = ("preset", "k", "min_pixels", "prompts", "markers")
"""The :class:`~gge.models.policy.AdapterSettings` fields :func:`adapter_settings` derives."""
ADAPTER_KEYS = tuple(
    f.name
    for f in fields(AdapterSettings)
    if f.name in {g.name for g in fields(ModelConfig)} and f.name not in _DERIVED
)
"""The ``model`` options an AdapterSettings takes as they are (``convention``, ``proposer``...)."""


def adapter_settings(m: DictConfig, k: int) -> AdapterSettings:
    """The policy settings from the ``model`` section: built once per policy, frozen, ``record()``-ed.

    The options of :data:`ADAPTER_KEYS` are taken as the schema typed them; ``preset`` is the
    model's name, ``k`` is 1 for a greedy proposer, an unset ``min_pixels`` is the processors'
    default, and the prompts and markers become :class:`~gge.models.prompts.Prompts` and
    :class:`~gge.models.markers.MarkerStyle`.
    """
    prompts: dict[str, Any] = dict(OmegaConf.to_container(m.prompts, resolve=True))  # type: ignore[arg-type]
    prompts["variants"] = {str(b): dict(v) for b, v in (prompts.get("variants") or {}).items()}
    markers: dict[str, Any] = dict(OmegaConf.to_container(m.markers, resolve=True))  # type: ignore[arg-type]
    markers["colors"] = tuple(markers["colors"])
    try:
        style = MarkerStyle(**markers)
    except ValueError as e:
        raise GgeError(f"model.markers: {e}") from None
    return AdapterSettings(
        preset=str(m.name),
        k=1 if m.proposer == "greedy" else k,
        min_pixels=int(m.min_pixels) if m.min_pixels is not None else PROCESSOR_MIN_PIXELS,
        prompts=Prompts(**prompts),
        markers=style,
        **{key: m[key] for key in ADAPTER_KEYS},
    )


def _device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _transformers_backend(m: DictConfig, path: str, batch_size: int) -> Backend:
    from gge.models.hf import TransformersBackend

    return TransformersBackend.from_pretrained(
        path,
        dtype=str(m.dtype),
        device=_device(str(m.device)),
        attn_implementation=m.attn_implementation,
        min_pixels=m.min_pixels,
        max_pixels=m.max_pixels,
        trust_remote_code=bool(m.trust_remote_code),
        batch_size=batch_size,
    )


def grounding_policy(cfg: DictConfig, resize_factor: int | None) -> GroundingPolicy:
    """A preset's policy: its adapter settings over the backend ``model.backend`` names.

    Args:
        cfg: The whole run configuration (``model``, ``ckpt``, ``k``, ``batch_size``).
        resize_factor: The openai backend's mirrored smart_resize factor (None or 0: the screenshot is
            sent as it is), as the preset's kind says (:meth:`gge.models.registry.PresetKind.resize_factor`).

    Returns:
        A :class:`~gge.models.policy.GroundingPolicy` over a transformers model or an endpoint, with a
        separate transformers critic when ``model.critic_ckpt`` names one.

    Raises:
        GgeError: a transformers preset without ``ckpt``, remote code not allowed, an endpoint without
            its URL or model name, or an unknown backend.
    """
    m = cfg.model
    settings = adapter_settings(m, int(cfg.k))
    backend: Backend
    if m.backend == "transformers":
        if not cfg.ckpt:
            raise GgeError(f"model={m.name} needs ckpt=PATH (a checkpoint folder)")
        if m.needs_remote_code and not m.trust_remote_code:
            raise GgeError(
                f"model={m.name}: {m.family or m.name} checkpoints ship their own model code; "
                "loading them runs it: add model.trust_remote_code=true if you trust the checkpoint"
            )
        backend = _transformers_backend(m, str(cfg.ckpt), int(cfg.batch_size))
    elif m.backend == "openai":
        from gge.models.openai_api import OpenAIBackend

        if not m.base_url or not m.api_model:
            raise GgeError("the openai backend needs model.base_url=URL and model.api_model=NAME")
        backend = OpenAIBackend(
            str(m.base_url),
            str(m.api_model),
            api_key_env=str(m.api_key_env),
            concurrency=None if m.concurrency is None else int(m.concurrency),
            max_concurrency=int(m.max_concurrency),
            max_retries=int(m.max_retries),
            timeout_s=float(m.timeout_s),
            server_wait_s=float(m.server_wait_s),
            max_pixels=m.max_pixels,
            min_pixels=m.min_pixels,
            resize_factor=resize_factor,
            image_format=str(m.image_format),
            jpeg_quality=int(m.jpeg_quality),
        )
    else:
        raise GgeError(f"unknown model.backend {m.backend!r}; known: transformers, openai")
    critic: Backend | None = None
    if m.critic_ckpt:
        critic = _transformers_backend(m, str(m.critic_ckpt), int(cfg.batch_size))
    return GroundingPolicy(backend, settings, critic)


class _SizeOnly:
    """A backend stand-in that knows only the size a model sees (for dry runs: no weights loaded)."""

    def __init__(self, m: DictConfig, settings: AdapterSettings, resize_factor: int | None) -> None:
        self.factor = settings.patch_factor
        self.min_pixels = settings.min_pixels
        self.max_pixels = int(m.max_pixels) if m.max_pixels is not None else PROCESSOR_MAX_PIXELS
        self.native = m.backend == "openai" and not resize_factor

    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        from gge.geometry import smart_resize

        if self.native:  # an endpoint sent the screenshot as it is (no resize declared)
            return (width, height)
        h, w = smart_resize(
            height, width, factor=self.factor, min_pixels=self.min_pixels, max_pixels=self.max_pixels
        )
        return (w, h)

    def generate(self, requests: Any) -> Any:
        raise GgeError("a dry run generates nothing")

    def yes_probability(self, requests: Any, yes: str, no: str) -> Any:
        raise GgeError("a dry run generates nothing")

    def settings(self) -> dict[str, Any]:
        return {"backend": "dry_run"}


def size_only_policy(m: DictConfig, k: int, resize_factor: int | None) -> GroundingPolicy:
    """A preset's policy over no model: it renders the requests a run would send.

    Args:
        m: The ``model`` section of a preset.
        k: Candidates asked for.
        resize_factor: As for :func:`grounding_policy` (None or 0 over the openai backend: the
            model sees the screenshot as it is).
    """
    settings = adapter_settings(m, k)
    return GroundingPolicy(_SizeOnly(m, settings, resize_factor), settings)


def preset_config(name: str, overrides: dict[str, Any] | None = None) -> DictConfig:
    """A preset as a complete, validated ``model`` section, with ``model.<key>`` overrides applied."""
    if name not in preset_names():
        raise GgeError(f"unknown preset {name!r}; known: {', '.join(preset_names())}")
    m = OmegaConf.merge(OmegaConf.structured(ModelConfig), load_preset(name), overrides or {})
    assert isinstance(m, DictConfig)
    return m


def preset_settings(name: str, *, k: int = 5, **overrides: Any) -> AdapterSettings:
    """A preset's adapter settings (prompts, convention, modes...), for a policy built in code.

    The training-time callback wraps the model being trained; this gives it the preset's protocol
    instead of hand-written settings.

    Args:
        name: The preset, e.g. ``"qwen3_vl"``.
        k: Candidates asked for (``greedy`` gives one).
        overrides: ``model.<key>`` values, e.g. ``proposer="sampling", critic="listwise"``.

    Returns:
        The settings.

    Example:
        >>> s = preset_settings("qwen3_vl", proposer="sampling")
        >>> s.convention, s.proposer, s.critic, s.patch_factor
        ('norm_1000', 'sampling', 'none', 32)
    """
    return adapter_settings(preset_config(name, overrides), k)
