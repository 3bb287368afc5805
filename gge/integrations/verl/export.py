"""``gge export verl``: gge's benchmarks as validation parquet files for verl or EasyR1.

Each sample is asked as ``eval.py`` asks it; the folder also gets the reward module and a manifest
with the trainer options to set.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gge.benchmarks import DEFAULT_BENCHMARKS, get_benchmark
from gge.benchmarks.images import image_bytes, open_image
from gge.benchmarks.loading import benchmark_root, load_benchmarks
from gge.errors import GgeError, unknown_name
from gge.geometry import smart_resize
from gge.integrations.verl.ground_truth import DATA_SOURCE_PREFIX, GROUND_TRUTH_VERSION, GroundTruth
from gge.integrations.verl.resize import (
    EASYR1_MAX_PIXELS,
    EASYR1_MIN_PIXELS,
    _check_flavor,
    trainer_seen_size,
)
from gge.integrations.verl.trainer_options import trainer_notes, trainer_options
from gge.types import Sample

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from gge.benchmarks.base import Benchmark
    from gge.models.policy import AdapterSettings, GroundingPolicy

IMAGE_TOKEN = "<image>"
"""The placeholder both trainers split prompts at."""
ABILITY = "gui_grounding"


def _pyarrow() -> Any:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise GgeError("gge export verl needs pyarrow: pip install 'gge[verl]'") from None
    return pa, pq


def _flat_messages(messages: Sequence[Mapping[str, Any]], where: str) -> list[dict[str, str]]:
    """The chat messages of eval with string contents, the image parts as ``<image>`` placeholders."""
    out = []
    for m in messages:
        parts = []
        for part in m["content"]:
            if part["type"] == "image":
                parts.append(IMAGE_TOKEN)
                continue
            text = str(part["text"])
            if IMAGE_TOKEN in text or "<video>" in text:
                raise GgeError(
                    f"{where}: the request's text holds '<image>' or '<video>', which the trainers "
                    "would read as a placeholder"
                )
            parts.append(text)
        out.append({"role": str(m["role"]), "content": "".join(parts)})
    return out


def _easyr1_prompt(messages: list[dict[str, str]], fold_system: bool, preset: str) -> str:
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    if not fold_system:
        roles = ", ".join(m["role"] for m in messages)
        raise GgeError(
            f"model={preset} sends {len(messages)} messages ({roles}), and EasyR1 builds one user turn from "
            "the prompt (verl/utils/dataset.py, RLHFDataset._build_messages): export with flavor=verl, or "
            "add fold_system=true to join them into one user turn (then the request differs from eval's)"
        )
    return "\n\n".join(m["content"] for m in messages)


@dataclass
class ExportConfig:
    """What ``gge export verl`` accepts (``key=value``; also ``model.<key>=``, ``bench.<name>.<key>=``).

    Attributes:
        benchmarks: Benchmarks to export.
        data_root: Folder holding one folder per benchmark (unset: the synthetic demo suite).
        out: The output folder (required).
        model: The preset whose request is exported.
        flavor: ``verl`` or ``easyr1``.
        k: Candidates of a ``single_pass`` / ``sampling`` preset (as eval's ``k``).
        max_samples: Export only the first N samples of each benchmark.
        max_pixels: The trainer's largest image area (verl: default the preset's ``max_pixels``;
            EasyR1: its ``data.max_pixels``, default 4194304).
        min_pixels: The trainer's smallest image area (verl: the preset's; EasyR1: ``data.min_pixels``,
            default 262144).
        resize_images: Write each screenshot at the size the model sees (as eval resizes it), so the
            trainer does not resize it again; false writes the original files.
        fold_system: EasyR1: join a system prompt and several user messages into one user turn.
        overwrite: Clear ``out`` first when it is not empty: everything in it is deleted, not only
            the files an export writes (without it a non-empty ``out`` is refused, so that no file
            of an earlier export is left beside the new ones).
        seed: Seed of the demo suite.
    """

    benchmarks: list[str] = field(default_factory=lambda: list(DEFAULT_BENCHMARKS))
    data_root: str | None = None
    out: str | None = None
    model: str = "qwen2_5_vl"
    flavor: str = "verl"
    k: int = 5
    max_samples: int | None = None
    max_pixels: int | None = None
    min_pixels: int | None = None
    resize_images: bool = True
    fold_system: bool = False
    overwrite: bool = False
    seed: int = 0


def _encode_png(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _schema(pa: Any, flavor: str) -> Any:
    if flavor == "easyr1":
        return pa.schema(
            [
                ("prompt", pa.string()),
                ("answer", pa.string()),
                ("images", pa.list_(pa.struct([("bytes", pa.binary())]))),
                ("data_source", pa.string()),
            ]
        )
    image = pa.struct([("bytes", pa.binary()), ("min_pixels", pa.int64()), ("max_pixels", pa.int64())])
    extra = pa.struct(
        [
            ("index", pa.int64()),
            ("split", pa.string()),
            ("benchmark", pa.string()),
            ("sample_id", pa.string()),
            ("instruction", pa.string()),
            ("image_size", pa.list_(pa.int64())),
            ("seen_size", pa.list_(pa.int64())),
            ("preset", pa.string()),
            ("convention", pa.string()),
            ("prefill_dropped", pa.string()),
        ]
    )
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("images", pa.list_(image)),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", extra),
        ]
    )


def _listing(folder: Path, limit: int = 8) -> str:
    """The names in ``folder`` for a message: sorted, folders with a trailing ``/``, the first ``limit``."""
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names)} entries)"


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both resolved)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def _has_content(folder: Path) -> bool:
    """Whether ``folder`` holds anything but empty folders (an export that stopped before writing).

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> (folder / "data" / "sub").mkdir(parents=True)
        >>> _has_content(folder)
        False
    """
    return any(c.is_symlink() or not c.is_dir() or _has_content(c) for c in folder.iterdir())


def prepare_out(out: Path, *, overwrite: bool, keep: Sequence[Path] = ()) -> None:
    """Make ``out`` an empty folder for an export (refusing a file, or content without ``overwrite``).

    A folder holding only empty folders (an export that stopped before writing) counts as empty.
    With ``overwrite`` the folder's whole content is deleted (not only the files an export writes);
    a folder holding one of ``keep`` (the data being exported) or the working directory is refused
    rather than cleared.

    Args:
        out: The export's folder.
        overwrite: Clear a non-empty ``out``.
        keep: Paths that must survive (the benchmarks' folders).

    Raises:
        GgeError: ``out`` is a file, is not empty (without ``overwrite``), holds ``keep`` or the working
            directory, or cannot be created or cleared.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "old.parquet").write_bytes(b"")
        >>> prepare_out(folder, overwrite=True)
        >>> sorted(p.name for p in folder.iterdir())
        ['data']
    """
    if out.exists() and not out.is_dir():
        raise GgeError(f"out={out} is a file, not a folder: give the folder the export goes to")
    if out.is_dir() and _has_content(out):
        if not overwrite:
            raise GgeError(
                f"out={out} is not empty ({_listing(out)}): give a new or empty folder, or add "
                "overwrite=true to delete its content first (an earlier export's files left beside the "
                "new ones would be read as part of it)"
            )
        for path, what in [(Path.cwd(), "the working directory"), *((k, "the data") for k in keep)]:
            if _inside(path, out):
                raise GgeError(
                    f"out={out} holds {what} ({path}): overwrite=true would delete it; give another folder"
                )
        for child in list(out.iterdir()):
            try:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            except OSError as e:
                raise GgeError(f"out={out}: cannot delete {child.name}: {e.strerror or e}") from None
    try:
        (out / "data").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GgeError(f"out={out}: cannot create the folder: {e.strerror or e}") from None


@dataclass(frozen=True)
class _View:
    """The image sizes of an export: the model's resize factor and the pixel limits it works within."""

    factor: int  # the model's resize factor (patch x merge)
    proc_min: int  # the processor's smallest and largest areas (the preset's)
    proc_max: int
    t_min: int  # the trainer's
    t_max: int
    lo: int  # both together: the areas the model sees
    hi: int


@dataclass
class _Rows:
    """What every row of one export shares, and what its rows tell the manifest."""

    policy: GroundingPolicy  # the preset's, over a stand-in that renders the requests
    settings: AdapterSettings
    model: str
    flavor: str
    fold_system: bool
    resize_images: bool
    view: _View
    prefills: set[str] = field(default_factory=set)  # the assistant prefills dropped
    tokens: int = 0  # an upper bound of the longest prompt's tokens
    folded: bool = False  # whether some EasyR1 prompt joined several messages


def _check_arguments(
    benchmarks: Sequence[str],
    model: str,
    flavor: str,
    k: int,
    max_samples: int | None,
    max_pixels: int | None,
    min_pixels: int | None,
) -> None:
    """Refuse an unknown flavor or preset, bad shared options (as eval.py does), pixel limits below 1."""
    from gge.models.factory import preset_names
    from gge.run.settings import RunSettings

    _check_flavor(flavor)
    if model not in preset_names():
        raise unknown_name("preset (model=)", model, preset_names())
    RunSettings(tuple(benchmarks), k=k, max_samples=max_samples)
    for name, value in (("max_pixels", max_pixels), ("min_pixels", min_pixels)):
        if value is not None and value < 1:
            raise GgeError(f"{name} must be a positive integer, got {value}")


def _resolve_view(
    m: DictConfig,
    settings: AdapterSettings,
    flavor: str,
    model: str,
    max_pixels: int | None,
    min_pixels: int | None,
) -> _View:
    """The factor and pixel limits of the preset ``m`` under the trainer's (refusing limits that cross)."""
    from gge.models.factory import PROCESSOR_MAX_PIXELS

    factor = settings.patch_factor
    proc_min = settings.min_pixels
    proc_max = int(m.max_pixels) if m.max_pixels is not None else PROCESSOR_MAX_PIXELS
    if flavor == "verl":
        t_min = proc_min if min_pixels is None else min_pixels
        t_max = proc_max if max_pixels is None else max_pixels
    else:
        t_min = EASYR1_MIN_PIXELS if min_pixels is None else min_pixels
        t_max = EASYR1_MAX_PIXELS if max_pixels is None else max_pixels
    lo, hi = max(proc_min, t_min), min(proc_max, t_max)
    if lo > hi:
        raise GgeError(f"min_pixels {lo} exceeds max_pixels {hi} (trainer and model {model} limits together)")
    return _View(factor, proc_min, proc_max, t_min, t_max, lo, hi)


def _prepare(
    benchmarks: Sequence[str],
    data_root: Path,
    options: Mapping[str, Any],
    out: Path,
    overwrite: bool,
) -> None:
    """:func:`prepare_out`, keeping the benchmarks' folders (known before any benchmark is read)."""
    roots = []
    for name in benchmarks:
        bench = get_benchmark(name)
        roots.append(benchmark_root(bench, data_root, options.get(name) or bench.options_type()))
    prepare_out(out, overwrite=overwrite, keep=roots)


def _image(
    sample: Sample, where: str, flavor: str, resize_images: bool, view: _View
) -> tuple[bytes, tuple[int, int], tuple[int, int]]:
    """The screenshot's bytes to write, the size written, and the size the model sees."""
    from PIL import Image

    try:
        with open_image(sample.image_path) as im:
            rgb = im.convert("RGB")
            decoded = rgb.size
    except OSError as e:
        raise GgeError(f"{where}: cannot read {sample.image_path}: {e}") from None
    if resize_images:
        h, w = smart_resize(
            decoded[1], decoded[0], factor=view.factor, min_pixels=view.lo, max_pixels=view.hi
        )
        seen = (w, h)
        image = rgb if seen == rgb.size else rgb.resize(seen, Image.Resampling.BICUBIC)
        data, exported = _encode_png(image), seen
    else:
        data, exported = image_bytes(sample.image_path), decoded
        seen = trainer_seen_size(
            flavor,
            decoded,
            factor=view.factor,
            min_pixels=view.t_min,
            max_pixels=view.t_max,
            processor_min_pixels=view.proc_min,
            processor_max_pixels=view.proc_max,
        )
    return data, exported, seen


def _ground_truth(
    ctx: _Rows,
    bench_name: str,
    sample: Sample,
    exported: tuple[int, int],
    seen: tuple[int, int],
    frame: tuple[int, int],
) -> str:
    """The row's ground truth (what the reward needs to score a response as eval does), as JSON."""
    settings, view = ctx.settings, ctx.view
    return GroundTruth(
        benchmark=bench_name,
        id=sample.id,
        region=sample.region,
        image_size=sample.image_size,
        exported_size=exported,
        seen_size=seen,
        frame=frame,
        labels=sample.labels,
        instruction=sample.instruction,
        image_path=str(sample.image_path),
        preset=ctx.model,
        convention=settings.convention,
        proposer=settings.proposer,
        k=settings.k,
        box_pairs=settings.box_pairs,
        patch_factor=view.factor,
        prompt_max_pixels=settings.prompt_max_pixels,
        processor_min_pixels=view.proc_min,
        processor_max_pixels=view.proc_max,
        flavor=ctx.flavor,
        trainer_min_pixels=view.t_min,
        trainer_max_pixels=view.t_max,
    ).to_json()


def _sample_row(ctx: _Rows, bench_name: str, index: int, sample: Sample) -> dict[str, Any]:
    """One sample's parquet row, asked as eval asks it (noting its prefill and prompt length in ``ctx``)."""
    settings, view = ctx.settings, ctx.view
    where = f"{bench_name} {sample.id}"
    data, exported, seen = _image(sample, where, ctx.flavor, ctx.resize_images, view)
    frame = ctx.policy.prompt_size(sample, seen)
    (spec,) = ctx.policy.proposer_requests(sample, seen)
    messages = _flat_messages(spec.messages, where)
    if spec.prefill:
        ctx.prefills.add(spec.prefill)
    # image tokens (one per factor x factor patch) + text: a byte-level BPE token (Qwen's) is at
    # least one UTF-8 byte, so the bytes bound the text's tokens; 64 for the chat template's own
    text_bytes = sum(len(msg["content"].encode("utf-8")) for msg in messages)
    ctx.tokens = max(ctx.tokens, (seen[0] // view.factor) * (seen[1] // view.factor) + text_bytes + 64)
    gt = _ground_truth(ctx, bench_name, sample, exported, seen, frame)
    source = DATA_SOURCE_PREFIX + bench_name
    if ctx.flavor == "easyr1":
        prompt = _easyr1_prompt(messages, ctx.fold_system, ctx.model)
        ctx.folded = ctx.folded or len(messages) > 1
        return {"prompt": prompt, "answer": gt, "images": [{"bytes": data}], "data_source": source}
    return {
        "data_source": source,
        "prompt": messages,
        "images": [{"bytes": data, "min_pixels": view.t_min, "max_pixels": view.t_max}],
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": gt},
        "extra_info": {
            "index": index,
            "split": "test",
            "benchmark": bench_name,
            "sample_id": sample.id,
            "instruction": sample.instruction,
            "image_size": list(sample.image_size),
            "seen_size": list(seen),
            "preset": ctx.model,
            "convention": settings.convention,
            "prefill_dropped": spec.prefill,
        },
    }


def _manifest(
    ctx: _Rows,
    m: DictConfig,
    out: Path,
    files: list[Path],
    benches: Sequence[Benchmark],
    counts: dict[str, int],
    model_overrides: Mapping[str, Any] | None,
    data_root: str | Path,
    max_samples: int | None,
) -> dict[str, Any]:
    """The export's ``manifest.json``: settings, counts, the trainer options to set."""
    from gge.models.protocol import protocol_statement

    settings, view, prefills = ctx.settings, ctx.view, ctx.prefills
    manifest = {
        "gge_export": GROUND_TRUTH_VERSION,
        "flavor": ctx.flavor,
        "preset": ctx.model,
        "model_overrides": dict(model_overrides or {}),
        "protocol": protocol_statement(m),
        "settings": settings.record(),
        "files": {b.name: str(f) for b, f in zip(benches, files, strict=True)},
        "samples": counts,
        "data_root": str(data_root),
        "max_samples": max_samples,
        "image": {
            "resized": ctx.resize_images,
            "factor": view.factor,
            "trainer_min_pixels": view.t_min,
            "trainer_max_pixels": view.t_max,
            "processor_min_pixels": view.proc_min,
            "processor_max_pixels": view.proc_max,
        },
        "prefill_dropped": sorted(prefills)[0] if len(prefills) == 1 else sorted(prefills) or None,
        "request_changed": (
            "the preset's assistant prefill is not sent (the trainers cannot prefill)" if prefills else None
        ),
        "folded_messages": ctx.folded,
        "trainer_options": trainer_options(
            ctx.flavor,
            out,
            files,
            settings.proposer,
            settings.k,
            view.t_min,
            view.t_max,
            settings.max_new_tokens,
            -(-ctx.tokens // 256) * 256,
            temperature=settings.temperature,
            top_p=settings.top_p,
            top_k=settings.top_k,
        ),
        "trainer_notes": trainer_notes(ctx.flavor, settings.proposer, settings.k, sum(counts.values())),
    }
    if ctx.folded:
        notes = [
            str(manifest["request_changed"] or ""),
            "the request's messages are joined into one user turn",
        ]
        manifest["request_changed"] = "; ".join(x for x in notes if x)
    return manifest


def export_verl(
    benchmarks: Sequence[str],
    data_root: str | Path,
    out: str | Path,
    *,
    model: str = "qwen2_5_vl",
    model_overrides: Mapping[str, Any] | None = None,
    flavor: str = "verl",
    k: int = 5,
    max_samples: int | None = None,
    max_pixels: int | None = None,
    min_pixels: int | None = None,
    resize_images: bool = True,
    fold_system: bool = False,
    bench_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Write the benchmarks as validation parquet files for verl or EasyR1.

    Each sample is asked exactly as ``python eval.py model=<model>`` asks it (``dry_run=true`` shows
    the same messages), except the assistant prefill, which the trainers cannot send (see
    docs/verl.md). Files: ``out/data/<benchmark>.parquet``, ``out/manifest.json`` (settings, counts, the
    trainer options to set) and ``out/gge_reward.py`` (the reward module to point the trainer at).

    Args:
        benchmarks: Benchmark names.
        data_root: Folder holding one folder per benchmark.
        out: Output folder.
        model: The preset (``configs/models/<model>.yaml``).
        model_overrides: ``model.<key>`` values, e.g. ``{"proposer": "sampling"}``.
        flavor: ``verl`` or ``easyr1``.
        k: Candidates of ``single_pass`` / ``sampling`` presets.
        max_samples: Only the first N samples of each benchmark.
        max_pixels: The trainer's largest image area (see :class:`ExportConfig`).
        min_pixels: The trainer's smallest image area.
        resize_images: Write screenshots at the size the model sees (default) or as they are.
        fold_system: EasyR1: join the request's messages into one user turn.
        bench_options: Per benchmark, its options object (``bench.<name>.<option>``).
        overwrite: Delete the content of a non-empty ``out`` first (see :func:`prepare_out`); without
            it a non-empty ``out`` is refused.

    Returns:
        The parquet files, one per benchmark, in order.

    Raises:
        GgeError: for an unknown benchmark, preset or flavor, benchmarks empty or listing a name twice,
            ``k`` or ``max_samples`` below 1 (checked as eval.py checks them:
            :class:`~gge.run.settings.RunSettings`), an unreadable screenshot, a request EasyR1 cannot
            carry, an ``out`` that is a file or not empty (without ``overwrite``).

    Example:
        >>> import tempfile
        >>> from gge.benchmarks.demo import write_demo_suite
        >>> root = write_demo_suite(Path(tempfile.mkdtemp()), per_benchmark=12)
        >>> files = export_verl(["osworld_g"], root, Path(tempfile.mkdtemp()), max_samples=2)
        >>> [f.name for f in files]
        ['osworld_g.parquet']
    """
    from gge.models.factory import preset_config
    from gge.models.registry import kind_of

    pa, pq = _pyarrow()
    _check_arguments(benchmarks, model, flavor, k, max_samples, max_pixels, min_pixels)
    m = preset_config(model, dict(model_overrides or {}))
    policy = kind_of(m).dry_run_policy(m, k)
    view = _resolve_view(m, policy.settings_, flavor, model, max_pixels, min_pixels)

    options = bench_options or {}
    out = Path(out)
    _prepare(benchmarks, Path(data_root), options, out, overwrite)
    loaded = load_benchmarks(benchmarks, Path(data_root), options, max_samples=max_samples)
    benches = list(loaded.benchmarks.values())
    schema = _schema(pa, flavor)
    ctx = _Rows(policy, policy.settings_, model, flavor, fold_system, resize_images, view)
    files: list[Path] = []
    counts: dict[str, int] = {}
    for bench in benches:
        samples = loaded.samples[bench.name]
        rows = [_sample_row(ctx, bench.name, index, sample) for index, sample in enumerate(samples)]
        path = out / "data" / f"{bench.name}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        files.append(path)
        counts[bench.name] = len(rows)
    (out / "gge_reward.py").write_text(REWARD_MODULE, encoding="utf-8")
    manifest = _manifest(ctx, m, out, files, benches, counts, model_overrides, data_root, max_samples)
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return files


REWARD_MODULE = '''"""gge's reward for verl and EasyR1 (written by `gge export verl`).

verl:   custom_reward_function.path=THIS_FILE custom_reward_function.name=compute_score
EasyR1: worker.reward.reward_function=THIS_FILE:compute_score_batch
"""

from gge.integrations.verl import REWARD_NAME, REWARD_TYPE, compute_score, compute_score_batch

__all__ = ["REWARD_NAME", "REWARD_TYPE", "compute_score", "compute_score_batch"]
'''
"""The reward module the export writes next to the data (``gge_reward.py``)."""
