"""Read back an offline W&B run from disk (wandb 0.31): history rows, config, logged tables and images.

wandb has no public reader for ``run-<id>.wandb``. Its format: a 7-byte header (``:W&B``, uint16
0xBEE1, uint8 0), then LevelDB-log chunks in 32 KiB blocks (u32 checksum, u16 length, u8 type:
1 full / 2 first / 3 middle / 4 last; a block tail shorter than a chunk header is zero padding).
Unlike LevelDB, the checksum is plain CRC-32 (zlib's), unmasked, over the type byte and the payload.
Each reassembled payload is a ``wandb.proto.wandb_internal_pb2.Record``.

A logged table appears in a history row as ``{"_type": "table-file", "artifact_path":
"wandb-client-artifact://<client_id>/<path>", "path": "media/table/...table.json", ...}``. The
artifact record with that ``client_id`` has a manifest mapping ``<path>`` (and the table's images
``media/images/...``) to ``local_path`` files in ``$WANDB_DATA_DIR/artifacts/staging``; the table JSON
there holds the image cells with their ``boxes``. The run folder's own ``files/media/table`` copy
keeps scalar cells only (images read ``"Image"``); it is the fallback when no artifact is found.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK_SIZE = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
ARTIFACT_SCHEME = "wandb-client-artifact://"


def read_payloads(path: str | Path, *, verify: bool = True) -> list[bytes]:
    """The record payloads of a ``.wandb`` file, reassembled from their chunks, in order.

    Args:
        path: The ``run-<id>.wandb`` file.
        verify: Check every chunk's CRC (raises ValueError on a mismatch).
    """
    data = Path(path).read_bytes()
    if data[: len(HEADER)] != HEADER:
        raise ValueError(f"{path}: not a W&B log (header {data[:7]!r})")
    pos = len(HEADER)
    out: list[bytes] = []
    pending: bytes | None = None
    while pos + CHUNK_HEADER <= len(data):
        left = BLOCK_SIZE - pos % BLOCK_SIZE
        if left < CHUNK_HEADER:  # block trailer
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + CHUNK_HEADER])
        pos += CHUNK_HEADER
        payload = data[pos : pos + length]
        pos += length
        if kind == 0 and length == 0:  # zero padding (preallocated or truncated tail)
            continue
        if verify and zlib.crc32(payload, zlib.crc32(bytes([kind]))) != crc:
            raise ValueError(f"{path}: CRC mismatch in a chunk ending at byte {pos}")
        if kind == FULL:
            out.append(payload)
        elif kind == FIRST:
            pending = payload
        elif kind == MIDDLE and pending is not None:
            pending += payload
        elif kind == LAST and pending is not None:
            out.append(pending + payload)
            pending = None
        else:
            raise ValueError(f"{path}: unexpected chunk type {kind} at byte {pos}")
    return out


def read_records(path: str | Path, *, verify: bool = True) -> list[Any]:
    """The ``wandb_internal_pb2.Record`` messages of a ``.wandb`` file."""
    from wandb.proto import wandb_internal_pb2 as pb

    records = []
    for payload in read_payloads(path, verify=verify):
        record = pb.Record()  # type: ignore[attr-defined]
        record.ParseFromString(payload)
        records.append(record)
    return records


def _set_nested(target: dict[str, Any], item: Any) -> None:
    """Apply one ``{key | nested_key, value_json}`` item to a nested dict."""
    keys = list(item.nested_key) or [item.key]
    node = target
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[keys[-1]] = json.loads(item.value_json)


@dataclass(frozen=True)
class LoggedImage:
    """An image cell of a logged table.

    Attributes:
        path: The image file (in the artifact staging folder).
        width: Width recorded by wandb.
        height: Height recorded by wandb.
        format: ``"jpg"``, ``"png"``...
        boxes: Box layers: ``{layer: [{"position", "domain", "class_id", "box_caption", ...}]}``.
        class_labels: ``{class_id: name}`` of the image's class set.
    """

    path: Path
    width: int
    height: int
    format: str
    boxes: dict[str, list[dict[str, Any]]]
    class_labels: dict[int, str]

    def open(self) -> Image.Image:
        """The decoded image (loaded, file closed)."""
        with Image.open(self.path) as im:
            im.load()
            copy: Image.Image = im.copy()
        return copy


@dataclass(frozen=True)
class LoggedTable:
    """One logged instance of a table.

    Attributes:
        key: The history key (``grounding/demo/samples``).
        step: The history row's ``_step``.
        row: The whole history row it was logged with (other keys, e.g. ``trainer/global_step``).
        columns: Column names.
        data: Rows; image cells are :class:`LoggedImage` (or ``"Image"`` when only the run folder's
            copy was found).
        source: The table JSON read.
    """

    key: str
    step: int | None
    row: dict[str, Any]
    columns: list[str]
    data: list[list[Any]]
    source: Path

    def rows(self) -> list[dict[str, Any]]:
        """Rows as ``{column: cell}``."""
        return [dict(zip(self.columns, r, strict=True)) for r in self.data]


@dataclass
class OfflineRun:
    """What an offline run wrote.

    Attributes:
        run_dir: The ``offline-run-<time>-<id>`` folder.
        history: History rows in order (nested keys as nested dicts).
        summary: The last summary values.
        config: The run config (``_wandb.visualize`` holds custom charts such as ``wandb.plot.line``).
        artifacts: Artifact manifests by client id: ``{manifest path: local file}``.
        record_types: How many records of each type were read.
    """

    run_dir: Path
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, dict[str, Path]] = field(default_factory=dict)
    record_types: dict[str, int] = field(default_factory=dict)

    def keys(self) -> set[str]:
        """Every top-level key of every history row."""
        return {k for row in self.history for k in row}

    def tables(self, key: str) -> list[LoggedTable]:
        """Every logged instance of the table ``key``, in history order."""
        out = []
        for row in self.history:
            value = row.get(key)
            if isinstance(value, dict) and value.get("_type") == "table-file":
                out.append(self._load_table(key, row, value))
        return out

    def _manifest(self, artifact_path: str) -> tuple[dict[str, Path], str] | None:
        if not artifact_path.startswith(ARTIFACT_SCHEME):
            return None
        client_id, _, inner = artifact_path[len(ARTIFACT_SCHEME) :].partition("/")
        manifest = self.artifacts.get(client_id.split(":")[0])
        return None if manifest is None else (manifest, inner)

    def _load_table(self, key: str, row: dict[str, Any], value: dict[str, Any]) -> LoggedTable:
        found = self._manifest(str(value.get("artifact_path", "")))
        if found is not None and found[1] in found[0]:
            manifest, inner = found
            source = manifest[inner]
        else:
            manifest, source = {}, self.run_dir / "files" / value["path"]
        table = json.loads(source.read_text(encoding="utf-8"))
        data = [[self._cell(cell, manifest) for cell in r] for r in table["data"]]
        step = row.get("_step")
        return LoggedTable(
            key, None if step is None else int(step), row, list(table["columns"]), data, source
        )

    @staticmethod
    def _cell(cell: Any, manifest: dict[str, Path]) -> Any:
        if not (isinstance(cell, dict) and cell.get("_type") == "image-file"):
            return cell
        labels: dict[int, str] = {}
        classes = cell.get("classes")
        if isinstance(classes, dict) and classes.get("path") in manifest:
            class_set = json.loads(manifest[classes["path"]].read_text(encoding="utf-8"))["class_set"]
            labels = {int(c["id"]): str(c["name"]) for c in class_set}
        return LoggedImage(
            path=manifest[cell["path"]],
            width=int(cell["width"]),
            height=int(cell["height"]),
            format=str(cell.get("format", "")),
            boxes={layer: list(boxes) for layer, boxes in cell.get("boxes", {}).items()},
            class_labels=labels,
        )


def find_run_dirs(root: str | Path) -> list[Path]:
    """Offline run folders (``offline-run-*`` holding a ``run-*.wandb``) under ``root``, oldest first."""
    dirs = {p.parent for p in Path(root).rglob("offline-run-*/run-*.wandb")}
    return sorted(dirs, key=lambda p: p.name)


def read_run(run_dir: str | Path, *, verify: bool = True, wait_s: float = 30.0) -> OfflineRun:
    """Read an offline run folder, waiting until the run's log is complete (its ``exit`` record).

    ``wandb.finish()`` can return before wandb's service process has written everything (seen in
    CI: an empty history read right after ``finish``), so the log is re-read until it holds the
    exit record, or ``wait_s`` passes (then what is there is returned).

    Args:
        run_dir: The run folder (``offline-run-<time>-<id>``, holding ``run-<id>.wandb``).
        verify: Check chunk CRCs.
        wait_s: How long to wait for the exit record.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            run = _read_run_once(run_dir, verify=verify)
            if "exit" in run.record_types or time.monotonic() > deadline:
                return run
        except (ValueError, OSError):  # a chunk still being written
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def _read_run_once(run_dir: str | Path, *, verify: bool = True) -> OfflineRun:
    folder = Path(run_dir)
    logs = sorted(folder.glob("run-*.wandb"))
    if len(logs) != 1:
        raise FileNotFoundError(f"{folder}: expected one run-*.wandb file, found {len(logs)}")
    run = OfflineRun(folder)
    for record in read_records(logs[0], verify=verify):
        kind = record.WhichOneof("record_type")
        run.record_types[kind] = run.record_types.get(kind, 0) + 1
        if kind == "history":
            row: dict[str, Any] = {}
            for item in record.history.item:
                _set_nested(row, item)
            run.history.append(row)
        elif kind == "summary":
            for item in record.summary.update:
                _set_nested(run.summary, item)
        elif kind == "config":
            for item in record.config.update:
                _set_nested(run.config, item)
        elif kind == "artifact":
            contents = {c.path: Path(c.local_path) for c in record.artifact.manifest.contents if c.local_path}
            for client_id in (record.artifact.client_id, record.artifact.sequence_client_id):
                if client_id:
                    run.artifacts.setdefault(client_id, {}).update(contents)
    return run
