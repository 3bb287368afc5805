"""``dry_run=true``: the requests a run would send, written to ``requests.jsonl``; no weights are loaded.

The proposer's requests are the real ones; the critic's go over placeholder candidates
(:func:`placeholder_points`), since the real ones need the proposer's answers; a refine stage's
(``model.refine=zoom``) goes to the crop around a placeholder pick, the image centre
(:data:`PLACEHOLDER_PICK`), since the real pick needs the critic's scores.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig

from gge.benchmarks.images import size_error
from gge.benchmarks.loading import load_benchmarks
from gge.errors import GgeError
from gge.models.policy import GroundingPolicy
from gge.models.refine import crop_region
from gge.models.registry import kind_of
from gge.run.runstate import make_output_dir
from gge.run.settings import bench_options, warn_model_type
from gge.types import Sample


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
                if "window" in request:
                    x1, y1, x2, y2 = request["window"]
                    cw, ch = request["crop_size"]
                    lines.append(
                        f"[the crop ({x1:g}, {y1:g})-({x2:g}, {y2:g}) of the screenshot, {cw}x{ch} px]"
                    )
            else:
                lines.append(part["text"])
    if request["prefill"]:
        lines.append("--- assistant (prefill; generation continues) ---")
        lines.append(request["prefill"])
    lines.append(f"--- generation: {json.dumps(request['generation'])} ---")
    return "\n".join(lines)


PLACEHOLDER_CANDIDATES = (
    "placeholder candidates: {n} points evenly placed on the image diagonal (a real run draws the "
    "proposer's answers)"
)
"""What a dry run's critic request says about its markers (``requests.jsonl`` ``placeholder``)."""


PLACEHOLDER_PICK = (
    "placeholder pick: the image centre (a real run crops around the critic's pick, where "
    "model.refine_when={when} says so)"
)
"""What a dry run's refine request says about its crop (``requests.jsonl`` ``placeholder``)."""


def _refine_requests(policy: GroundingPolicy, sample: Sample) -> list[dict[str, Any]]:
    """The refine request of one sample (stage ``refine``), on the crop around the image centre.

    As :meth:`GroundingPolicy.refine` sends it: the window of :func:`gge.models.refine.crop_region`
    around the pick, the crop at the size the model sees it (``image_size``), its window and its size
    in original pixels (``window``, ``crop_size``). Nothing without a refine stage.
    """
    s = policy.settings_
    if s.refine == "none":
        return []
    w, h = sample.image_size
    crop = crop_region((w / 2, h / 2), sample.image_size, sample.image_size, s.refine_zoom)
    seen = policy.backend.seen_size(*crop.size)
    spec = policy.refine_request(sample, crop, seen)
    return [
        {
            "benchmark": sample.benchmark,
            "id": sample.id,
            "stage": "refine",
            "image_size": list(seen),
            "messages": spec.messages,
            "prefill": spec.prefill,
            "generation": spec.generation,
            "window": list(crop.window),
            "crop_size": list(crop.size),
            "placeholder": PLACEHOLDER_PICK.format(when=s.refine_when),
        }
    ]


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


def dry_run(cfg: DictConfig, data_root: Path, output_dir: Path, out: TextIO) -> dict[str, Any]:
    """``dry_run=true``: the requests a run would send, written to ``requests.jsonl``; no weights.

    Prints which preset runs and why (``ckpt=`` detection or ``model=``), the warning a real run
    gives when the checkpoint's ``model_type`` is not the preset's, and the first request of each
    stage. With a critic, the critic's requests are written too, over placeholder candidates; with a
    refine stage its request, on the crop around a placeholder pick (the image centre).
    """
    kind = kind_of(cfg.model)
    if not kind.renders_requests:
        raise GgeError(
            f"dry_run=true renders a preset's requests; model={cfg.model.name} sends none (name a preset)"
        )
    why = f"chosen by ckpt=: {cfg.model.selected_by}" if cfg.model.selected_by else "named with model="
    print(f"preset: model={cfg.model.name} ({why})", file=out)
    warn_model_type(cfg, out)
    policy = kind.dry_run_policy(cfg.model, int(cfg.k))
    samples = load_benchmarks(
        cfg.benchmarks, data_root, bench_options(cfg), max_samples=cfg.max_samples, out=out
    ).samples
    output_dir = make_output_dir(output_dir)
    path = output_dir / "requests.jsonl"
    first: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    wrong_size: list[str] = []
    with path.open("w", encoding="utf-8") as f:
        for group in samples.values():
            for sample in group:
                wrong = size_error(sample)
                if wrong is not None:  # a run would not ask it: the sample's image error
                    wrong_size.append(wrong)
                    continue
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
                critic = _critic_requests(policy, sample, seen)
                for request in [*requests, *critic, *_refine_requests(policy, sample)]:
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
    if wrong_size:
        print(
            f"warning: {len(wrong_size)} screenshot{'s are' if len(wrong_size) > 1 else ' is'} not the size "
            f"{'their records give' if len(wrong_size) > 1 else 'its record gives'}: a run scores "
            f"{'each' if len(wrong_size) > 1 else 'it'} as an image error, and no request is written for "
            f"{'them' if len(wrong_size) > 1 else 'it'}; the first: {wrong_size[0]}",
            file=out,
        )
    n = sum(counts.values())
    split = ", ".join(f"{c} {stage}" for stage, c in counts.items())
    print(f"dry run: wrote {n} requests ({split or 'none'}) to {path} (no model loaded)", file=out)
    return {"dry_run": {"requests": n, "stages": counts, "file": str(path)}}
