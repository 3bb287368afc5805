"""Finding the checkpoints a trainer saved, and telling when one is complete enough to evaluate.

:func:`find_checkpoints` lists ``checkpoint-<N>/`` and ``global_step_<N>/`` folders; :func:`pending_reason`
says why one is not ready yet (no weights, a file in flight, a missing shard, recent changes).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gge.errors import GgeError

DEFAULT_SETTLE_S = 30.0
_HF_DIR = re.compile(r"checkpoint-(\d+)")
_VERL_DIR = re.compile(r"global_step_?(\d+)")
_VERL_MODEL_DIRS = ("actor/huggingface", "actor/hf", "huggingface", "hf", ".")
_SHARD = re.compile(r".*-\d{5}-of-(\d{5})\.(safetensors|bin)")
_IN_FLIGHT = re.compile(r".*\.(tmp|temp|part|partial|incomplete)|\..+\.[A-Za-z0-9]{6}")
_WEIGHT_BIN = re.compile(r"(pytorch_model|model)([-.].*)?\.bin")

_clock: Callable[[], float] = time.time
"""The clock the settle rule reads (a test sets it)."""


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint folder a trainer saved.

    Attributes:
        step: The training step, from the folder's name.
        path: The Hugging Face model folder evaluated (``ckpt=``).
        root: The folder the trainer saved (``checkpoint-N/`` or ``global_step_N/``): watched for
            changes as a whole.
        layout: ``hf`` (``checkpoint-N/``) or ``verl`` (``global_step_N/...``, also EasyR1).
    """

    step: int
    path: Path
    root: Path
    layout: str


def _verl_model_folder(root: Path) -> Path:
    """The model folder of a ``global_step_N/``: the first holding weights, else config, else the default."""
    folders = [root / sub if sub != "." else root for sub in _VERL_MODEL_DIRS]
    with_config = [f for f in folders if (f / "config.json").is_file()]
    with_weights = [f for f in with_config if _weight_files(f)]
    return (with_weights or with_config or folders)[0]


def find_checkpoints(root: str | Path) -> list[Checkpoint]:
    """The checkpoints directly under ``root``, complete or not, in step order.

    Args:
        root: The folder a trainer saves checkpoints into.

    Returns:
        One :class:`Checkpoint` per ``checkpoint-<N>/`` and ``global_step_<N>/`` folder, sorted by
        step (then name: two folders with one step are both listed).

    Raises:
        GgeError: ``root`` is not a folder.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> for name in ("checkpoint-300", "checkpoint-25", "tmp-checkpoint-400", "runs"):
        ...     (root / name).mkdir()
        >>> [c.step for c in find_checkpoints(root)]
        [25, 300]
    """
    folder = Path(root)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise GgeError(f"{folder} {what}: name the folder the trainer saves checkpoints into")
    found: list[Checkpoint] = []
    for child in folder.iterdir():
        if not child.is_dir():
            continue
        hf, verl = _HF_DIR.fullmatch(child.name), _VERL_DIR.fullmatch(child.name)
        if hf:
            found.append(Checkpoint(int(hf.group(1)), child, child, "hf"))
        elif verl:
            found.append(Checkpoint(int(verl.group(1)), _verl_model_folder(child), child, "verl"))
    return sorted(found, key=lambda c: (c.step, c.root.name))


def _weight_files(folder: Path) -> list[Path]:
    try:
        files = [p for p in folder.iterdir() if p.is_file()]
    except OSError:
        return []
    return sorted(
        p
        for p in files
        if (p.suffix == ".safetensors" and not p.name.startswith("adapter_")) or _WEIGHT_BIN.fullmatch(p.name)
    )


def _safetensors_short(path: Path) -> str | None:
    """Why a ``.safetensors`` file is not whole yet (shorter than its header says), or None."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return f"{path.name} is still being written ({size} bytes)"
            n = int.from_bytes(head, "little")
            if n > size - 8:
                return f"{path.name} is still being written (its header alone is {n} bytes)"
            header = json.loads(f.read(n))
    except OSError as e:
        return f"{path.name} cannot be read yet ({e.strerror or e})"
    except ValueError:
        return f"{path.name} has an unreadable header (still being written?)"
    ends = [
        int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)
    ]
    expected = 8 + n + max(ends, default=0)
    if size < expected:
        return f"{path.name} is still being written ({size} of {expected} bytes)"
    return None


def _no_weights_hint(ckpt: Checkpoint) -> str:
    if ckpt.layout == "verl":
        return (
            "verl saves weights there only with trainer.checkpoint.save_contents including hf_model; "
            "otherwise merge them into it: python -m verl.model_merger merge --backend fsdp "
            f"--local_dir {ckpt.root / 'actor'} --target_dir {ckpt.path} "
            f"(EasyR1: python scripts/model_merger.py --local_dir {ckpt.root / 'actor'})"
        )
    return (
        "sharded trainer states (DeepSpeed ZeRO-3 without stage3_gather_16bit_weights_on_model_save, "
        "FSDP SHARDED_STATE_DICT) leave none there: save full weights, or consolidate them into it"
    )


def _newest_change(root: Path) -> float | None:
    newest: float | None = None
    for folder, _dirs, files in os.walk(root):
        for path in (folder, *(os.path.join(folder, name) for name in files)):
            try:
                mtime = os.stat(path).st_mtime
            except OSError:  # removed meanwhile
                continue
            newest = mtime if newest is None else max(newest, mtime)
    return newest


def pending_reason(
    ckpt: Checkpoint, settle_s: float = DEFAULT_SETTLE_S, now: float | None = None
) -> str | None:
    r"""Why a checkpoint is not complete yet (the rule: docs/watch.md), or None.

    Args:
        ckpt: The checkpoint.
        settle_s: Seconds without any change under ``ckpt.root`` before it counts as written.
        now: The time to compare modification times with (default: now).

    Returns:
        None when the checkpoint can be evaluated; otherwise one line saying what is missing.

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "checkpoint-1").mkdir()
        >>> (ck,) = find_checkpoints(root)
        >>> pending_reason(ck, 0)
        'no config.json yet'
        >>> _ = (ck.path / "config.json").write_text("{}")
        >>> _ = (ck.path / "model-00001-of-00002.safetensors").write_bytes(b"\x02" + bytes(7) + b"{}")
        >>> pending_reason(ck, 0)
        'model-00001-of-00002.safetensors: a shard of 2 with no index yet'
        >>> _ = (ck.path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        ...     "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
        >>> pending_reason(ck, 0)
        'model-00002-of-00002.safetensors is missing (1 of 2 shards in model.safetensors.index.json)'
        >>> _ = (ck.path / "model-00002-of-00002.safetensors").write_bytes(b"\x02" + bytes(7) + b"{}")
        >>> pending_reason(ck, 0) is None
        True
        >>> pending_reason(ck, 30)  # doctest: +ELLIPSIS
        'changed ...s ago: waiting until nothing changes for 30s'
    """
    folder = ckpt.path
    if not (folder / "config.json").is_file():
        if (folder / "adapter_config.json").is_file():
            return "a LoRA adapter without config.json: gge evaluates full models (merge the adapter first)"
        return "no config.json yet"
    try:
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
    except OSError as e:
        return f"cannot list it ({e.strerror or e})"
    in_flight = [n for n in names if _IN_FLIGHT.fullmatch(n)]
    if in_flight:
        return f"{in_flight[0]} is being written"
    indexes = [n for n in names if n.endswith(".index.json")]
    for index in indexes:
        try:
            weight_map = json.loads((folder / index).read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"{index} is unreadable (still being written?)"
        missing = [s for s in shards if s not in names]
        if missing:
            return (
                f"{missing[0]} is missing ({len(shards) - len(missing)} of {len(shards)} shards in {index})"
            )
    weights = _weight_files(folder)
    if not indexes:
        for w in weights:
            shard = _SHARD.fullmatch(w.name)
            if shard is not None:
                return f"{w.name}: a shard of {int(shard.group(1))} with no index yet"
    if not weights:
        return f"config.json but no model weights yet ({_no_weights_hint(ckpt)})"
    for w in weights:
        if w.suffix == ".safetensors":
            short = _safetensors_short(w)
            if short:
                return short
    if settle_s > 0:
        newest = _newest_change(ckpt.root)
        age = (_clock() if now is None else now) - (newest if newest is not None else 0.0)
        if age < settle_s:
            return f"changed {max(age, 0):.0f}s ago: waiting until nothing changes for {settle_s:g}s"
    return None
