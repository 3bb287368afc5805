"""What a run's numbers are comparable with: the ``protocol`` line of results.json and report.md."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from gge.models.factory import load_preset

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
