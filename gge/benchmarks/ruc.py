"""RUC (Real UI Clickboxes): normal and deception samples, each deception with a decoy beside the target.

Layout (FORMATS.md, section 15; DUDE-Framework/Real-UI-Clickboxes, which changed between revisions)::

    Real-UI-Clickboxes/                    # card 50dbd61 and later    # card 7425075 and earlier
      full.json  train.json  eval.json     # split=full|train|eval      merged.jsonl (split=merged)
      images/<...>                         # paths relative to the repository root

A record: ``id``, ``type`` (``Normal`` or ``Deception``), ``category`` (optional), ``image_path``,
``image_width``, ``image_height``, ``correct_box`` (an object whose ``bbox`` is ``[x1, y1, x2, y2]`` in
pixels), ``dark_box`` (optional, the same shape: the deceptive region) and ``messages`` (the user
message's text is the instruction). A file is a JSON list or JSON lines (either is read). As the
released code does (``src/utils/datasets.py``), records without ``correct_box.bbox`` and the record with
id 998 are left out; the load summary counts them.

There is no official box-based scorer: the paper's task-completion and deception rates come from an
agent loop judged by a trained model. gge's rule, labelled as such on every headline: a hit is a
point inside ``correct_box.bbox`` (inclusive, pixels); the headline is the micro accuracy over the
samples loaded, tabled by type (Normal, Deception) and category; a **deceptive click** is a pick
inside ``dark_box.bbox`` and not a hit, reported per selection strategy (``first``, the vote
``cluster``, the ``critic`` ...) over the samples with a decoy and over all (results.json
``decoy_clicks``): whether the critic avoids decoys. The revision read is recorded
(``bench.ruc.revision=<sha>``), with the files' sha256.

Example:
    >>> instruction_of([{"role": "system", "content": "x"}, {"role": "user", "content": "Click Buy"}], "f:1")
    'Click Buy'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from gge.benchmarks.base import (
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    TableSpec,
    read_text,
    require_root,
    resolve_image,
)
from gge.benchmarks.hosts import Host, fetched_commit
from gge.documents.caveats import gge_rule
from gge.errors import GgeError, unknown_name
from gge.types import Box, Sample

SPLITS = {"full": "full.json", "train": "train.json", "eval": "eval.json", "merged": "merged.jsonl"}
"""The file of each split (``merged``: the layout before card 50dbd61)."""
DROPPED_ID = "998"
"""The record the released code leaves out by id (``src/utils/datasets.py``)."""
NOT_NAMED = "not named"
CAVEAT = gge_rule(
    "RUC",
    "its paper's rates come from an agent loop judged by a model; a hit is the point in correct_box",
)


@dataclass
class RUCOptions(BenchmarkOptions):
    """Options of RUC (``bench.ruc.<option>=``).

    Attributes:
        split: ``full`` (the default), ``train`` or ``eval`` (``*.json`` of card 50dbd61 and later), or
            ``merged`` (``merged.jsonl`` of the earlier layout); ``full`` falls back to ``merged``
            where only the earlier layout is there.
        revision: The dataset revision the folder holds (a Hub commit sha), recorded with the result.
    """

    split: str = "full"
    revision: str | None = None

    NOT_PREDICTIVE: ClassVar[tuple[str, ...]] = (*BenchmarkOptions.NOT_PREDICTIVE, "revision")
    """``revision`` only labels the run (the samples digest covers what was read)."""


def instruction_of(messages: Any, where: str) -> str:
    """The user message's text of a record's ``messages`` (a string, or the text parts of a list)."""
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, Mapping) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str) and content.strip():
                    return content
                if isinstance(content, list):
                    texts = [
                        p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"
                    ]
                    text = " ".join(t for t in texts if isinstance(t, str)).strip()
                    if text:
                        return text
    raise GgeError(f"{where}: messages has no user message with text")


def _box(value: Any, key: str, where: str) -> Box | None:
    """``value["bbox"]`` as a pixel box; None where the record has no such box."""
    if value is None:
        return None
    bbox = value.get("bbox") if isinstance(value, Mapping) else None
    if bbox is None:
        return None
    if (
        not isinstance(bbox, list)
        or len(bbox) != 4
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in bbox)
    ):
        raise GgeError(f"{where}: {key}.bbox must be 4 numbers, got {bbox!r:.80}")
    x1, y1, x2, y2 = (float(v) for v in bbox)
    return Box(x1, y1, x2, y2)


def _records(path: Path) -> list[tuple[str, Any]]:
    """A file's records with where each is: a JSON list, or JSON lines."""
    text = read_text(path)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return [(f"{path}: record {i}", r) for i, r in enumerate(whole)]
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append((f"{path}:{n}", json.loads(line)))
            except json.JSONDecodeError as e:
                raise GgeError(f"{path}:{n}: neither a JSON list nor JSON lines: {e.msg}") from None
    return out


class RUC(Benchmark):
    """RUC: 910 normal and 497 deception samples (full split), each deception with its decoy."""

    name = "ruc"
    title = "RUC (Real UI Clickboxes)"
    directory = "ruc"
    host = Host(
        "hub",
        "DUDE-Framework/Real-UI-Clickboxes",
        None,
        "",
        ("images/*",),
        optional=("full.json", "train.json", "eval.json", "merged.jsonl"),
        licence="cc-by-nc-4.0",
        note="its records changed between revisions (train.json re-uploaded): the commit fetched is recorded",
    )
    label_keys = ("type", "category")
    options_type = RUCOptions
    tables = (
        TableSpec("By type", rows="type", row_order=("Normal", "Deception")),
        TableSpec("By category", rows="category"),
    )

    def headline_caveat(self, options: BenchmarkOptions) -> str | None:
        """Always: the rule is gge's (no official box-based scorer)."""
        return CAVEAT

    def load(self, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
        """Read one split's records (see the module docstring).

        Args:
            root: The dataset's folder.
            options: :class:`RUCOptions`.

        Returns:
            The samples and the load summary (variant: split, revision; notes: the records left out).
        """
        split = str(getattr(options, "split", "full"))
        if split not in SPLITS:
            raise unknown_name("ruc split", split, list(SPLITS))
        revision = fetched_commit(root, getattr(options, "revision", None), "bench.ruc.revision")
        require_root(root, self.name)
        path = root / SPLITS[split]
        if split == "full" and not path.is_file() and (root / SPLITS["merged"]).is_file():
            split, path = "merged", root / SPLITS["merged"]
        if not path.is_file():
            raise GgeError(f"{self.name}: annotation file not found: {path} (split={split})")
        out = LoadCollector(self.name, root)
        out.file(path)
        no_box: list[str] = []
        dropped = 0
        odd: list[str] = []
        for where, rec in _records(path):
            if not isinstance(rec, Mapping):
                raise GgeError(f"{where}: expected a JSON object, got {type(rec).__name__}")
            if "id" not in rec:
                raise GgeError(f"{where}: no field 'id'")
            sid = str(rec["id"])
            region = _box(rec.get("correct_box"), "correct_box", where)
            if region is None:
                no_box.append(sid)
                continue
            if sid == DROPPED_ID:
                dropped += 1
                continue
            sample = self._sample(root, rec, sid, region, where)
            if (sample.labels["type"] == "Deception") != (sample.decoy is not None):
                odd.append(sid)
            out.add(sample, where)
        # each kind left out is said in a note and recorded: a prediction line of one is not stray
        if no_box:
            out.notes.append(
                f"{len(no_box)} records without correct_box.bbox left out, as the released code does: "
                + ", ".join(no_box[:20])
            )
            out.left_out["no correct_box.bbox"] = no_box
        if dropped:
            out.notes.append(f"record {DROPPED_ID} left out, as the released code does (by its id)")
            out.left_out["by its id"] = [DROPPED_ID]
        if odd:
            out.notes.append(
                f"{len(odd)} records whose dark_box does not follow their type (a Deception without one, or "
                "a Normal with one): decoy_clicks counts the samples with a decoy, not the Deception ones: "
                + ", ".join(odd[:20])
            )
        return out.result({"split": split, "revision": revision or NOT_NAMED})

    def _sample(self, root: Path, rec: Mapping[str, Any], sid: str, region: Box, where: str) -> Sample:
        """One record as a sample; a field at fault raises naming where."""
        kind = rec.get("type")
        if kind not in ("Normal", "Deception"):
            raise GgeError(f"{where}: type must be Normal or Deception, got {kind!r:.40}")
        image = rec.get("image_path")
        if not isinstance(image, str) or not image:
            raise GgeError(f"{where}: image_path must be a path, got {image!r:.60}")
        size = (rec.get("image_width"), rec.get("image_height"))
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size):
            raise GgeError(f"{where}: image_width and image_height must be positive integers, got {size}")
        category = rec.get("category")
        return Sample(
            benchmark=self.name,
            id=sid,
            image_path=resolve_image(root, image, where=where, sample_id=sid),
            image_size=(int(size[0]), int(size[1])),  # type: ignore[arg-type]
            instruction=instruction_of(rec.get("messages"), where),
            region=region,
            labels={"type": kind, "category": category if isinstance(category, str) and category else "none"},
            decoy=_box(rec.get("dark_box"), "dark_box", where),
        )
