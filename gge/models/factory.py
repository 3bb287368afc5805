"""From the ``model`` section of the configuration to a policy: presets, checkpoints, backends.

Presets are YAML files in ``gge/configs/models/`` (shipped in the wheel), one per model family; a
preset's keys are ``model.<key>`` options, which the command line can override.
``ckpt=PATH`` without ``model=`` picks the preset from the checkpoint's ``model_type``.

Example:
    >>> sorted(preset_names())
    ['openai_api', 'qwen2_5_vl', 'qwen2_vl', 'qwen3_vl', 'ui_tars_1_5']
    >>> PRESET_BY_MODEL_TYPE["qwen3_vl"]
    'qwen3_vl'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gge.errors import GgeError
from gge.models.base import Backend, Policy
from gge.models.markers import DEFAULT_COLORS, MarkerStyle
from gge.models.policy import AdapterSettings, GroundingPolicy, Prompts
from gge.models.replay import ReplayModel

PRESET_DIR = Path(__file__).resolve().parents[1] / "configs" / "models"
PRESET_BY_MODEL_TYPE = {"qwen2_5_vl": "qwen2_5_vl", "qwen3_vl": "qwen3_vl", "qwen2_vl": "qwen2_vl"}
"""Which preset a checkpoint gets from its config.json ``model_type`` when ``model=`` is not given."""

_DEFAULT_PROMPTS = Prompts()


@dataclass
class PromptConfig:
    """Prompt templates (see :class:`gge.models.policy.Prompts` for the placeholders)."""

    name: str = _DEFAULT_PROMPTS.name
    system: str | None = None
    propose_one: str = _DEFAULT_PROMPTS.propose_one
    propose_k: str = _DEFAULT_PROMPTS.propose_k
    rank_list: str = _DEFAULT_PROMPTS.rank_list
    judge_one: str = _DEFAULT_PROMPTS.judge_one


@dataclass
class MarkerConfig:
    """Critic marker style (see :class:`gge.models.markers.MarkerStyle`)."""

    shape: str = "circle"
    size: float = 0.012
    colors: list[str] = field(default_factory=lambda: list(DEFAULT_COLORS))
    outline: str = "white"
    numbered: bool = True


@dataclass
class ModelConfig:
    """Which model answers, and its options (``model.<option>=`` on the command line).

    Attributes:
        name: ``demo`` (the small proposer/critic shipped with gge, :mod:`gge.demo.model`; ``ckpt=``
            may point at another demo checkpoint), ``replay`` or a preset (``qwen2_5_vl``,
            ``ui_tars_1_5``, ``qwen3_vl``, ``qwen2_vl``, ``openai_api``).
        predictions: ``replay``: the JSONL predictions file.
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
        repetition_penalty: Repetition penalty (1.0 = off, whatever the checkpoint says).
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
        concurrency: ``openai``: requests in flight at most.
        max_retries: ``openai``: retries on 429, 5xx and timeouts.
        timeout_s: ``openai``: per-request timeout.
        resize_factor: ``openai``: mirror the server's smart_resize with this factor (Qwen-VL served).
    """

    name: str = "demo"
    predictions: str | None = None
    delay_s: float = 0.0
    backend: str = "transformers"
    convention: str = "abs_resized"
    proposer: str = "single_pass"
    critic: str = "listwise"
    critic_ckpt: str | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    repetition_penalty: float = 1.0
    max_new_tokens: int = 256
    critic_max_new_tokens: int = 32
    min_pixels: int | None = None
    max_pixels: int | None = None
    dtype: str = "auto"
    device: str = "auto"
    attn_implementation: str | None = None
    trust_remote_code: bool = False
    yes: str = "Yes"
    no: str = "No"
    prompts: PromptConfig = field(default_factory=PromptConfig)
    markers: MarkerConfig = field(default_factory=MarkerConfig)
    base_url: str | None = None
    api_model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    max_retries: int = 5
    timeout_s: float = 60.0
    resize_factor: int | None = None


def preset_names() -> list[str]:
    """The presets shipped with gge."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def model_names() -> list[str]:
    """Every valid ``model=`` name."""
    return ["demo", "replay", *preset_names()]


def load_preset(name: str) -> DictConfig:
    """A preset's YAML as a config (validated against :class:`ModelConfig` by the caller's merge)."""
    cfg = OmegaConf.load(PRESET_DIR / f"{name}.yaml")
    assert isinstance(cfg, DictConfig)
    cfg.name = name
    return cfg


def preset_for_checkpoint(ckpt: str) -> str:
    """The preset of a checkpoint: ``demo`` for a demo file (``*.pt``), else its ``model_type``'s."""
    from gge.models.hf_loading import model_type

    if ckpt.endswith((".pt", ".pth")) or Path(ckpt).is_file():
        return "demo"  # a file: only demo checkpoints are single files (load_demo_policy says if not)

    mtype = model_type(ckpt)
    if mtype not in PRESET_BY_MODEL_TYPE:
        raise GgeError(
            f"{ckpt}: no preset for model_type '{mtype}'; name one with model=NAME "
            f"(known: {', '.join(preset_names())})"
        )
    return PRESET_BY_MODEL_TYPE[mtype]


def adapter_settings(m: DictConfig, k: int) -> AdapterSettings:
    """The policy settings from the ``model`` section."""
    prompts: dict[str, Any] = dict(OmegaConf.to_container(m.prompts, resolve=True))  # type: ignore[arg-type]
    markers: dict[str, Any] = dict(OmegaConf.to_container(m.markers, resolve=True))  # type: ignore[arg-type]
    markers["colors"] = tuple(markers["colors"])
    try:
        style = MarkerStyle(**markers)
    except ValueError as e:
        raise GgeError(f"model.markers: {e}") from None
    return AdapterSettings(
        preset=str(m.name),
        convention=str(m.convention),
        proposer=str(m.proposer),
        critic=str(m.critic),
        k=1 if m.proposer == "greedy" else k,
        temperature=float(m.temperature),
        top_p=float(m.top_p),
        top_k=int(m.top_k),
        repetition_penalty=float(m.repetition_penalty),
        max_new_tokens=int(m.max_new_tokens),
        critic_max_new_tokens=int(m.critic_max_new_tokens),
        prompts=Prompts(**prompts),
        markers=style,
        yes=str(m.yes),
        no=str(m.no),
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


def build_policy(cfg: DictConfig) -> Policy:
    """The policy the configuration names.

    Args:
        cfg: The whole run configuration (``model``, ``ckpt``, ``k``, ``batch_size``).

    Returns:
        The demo model, a replay model, or a :class:`~gge.models.policy.GroundingPolicy` over a backend.
    """
    m = cfg.model
    if m.name == "demo":
        from gge.demo.model import load_demo_policy

        return load_demo_policy(cfg.ckpt or None, k=int(cfg.k), seed=int(cfg.seed))
    if m.name == "replay":
        if m.predictions is None:
            raise GgeError("model=replay needs model.predictions=FILE (a JSONL file, one line per sample)")
        return ReplayModel(m.predictions, delay_s=float(m.delay_s))
    settings = adapter_settings(m, int(cfg.k))
    backend: Backend
    if m.backend == "transformers":
        if not cfg.ckpt:
            raise GgeError(f"model={m.name} needs ckpt=PATH (a checkpoint folder)")
        backend = _transformers_backend(m, str(cfg.ckpt), int(cfg.batch_size))
    elif m.backend == "openai":
        from gge.models.openai_api import OpenAIBackend

        if not m.base_url or not m.api_model:
            raise GgeError("the openai backend needs model.base_url=URL and model.api_model=NAME")
        backend = OpenAIBackend(
            str(m.base_url),
            str(m.api_model),
            api_key_env=str(m.api_key_env),
            concurrency=int(m.concurrency),
            max_retries=int(m.max_retries),
            timeout_s=float(m.timeout_s),
            max_pixels=m.max_pixels,
            min_pixels=m.min_pixels,
            resize_factor=m.resize_factor,
        )
    else:
        raise GgeError(f"unknown model.backend {m.backend!r}; known: transformers, openai")
    critic: Backend | None = None
    if m.critic_ckpt:
        critic = _transformers_backend(m, str(m.critic_ckpt), int(cfg.batch_size))
    return GroundingPolicy(backend, settings, critic)
