"""The probe's record kept in the output folder, so that a resumed run keeps what its probes found.

A run's probe (:mod:`gge.run.probe`) asks the server about the benchmarks it has left to evaluate; a
resumed run does not ask again about benchmarks an earlier invocation finished, and an invocation
with nothing left to do asks nothing. So the record (who answered, the window's start, each
benchmark's image token split) and the splits are written to the output folder's
:data:`PROBE_FILE` after each probe (atomically), read back by the next invocation, and merged
(:func:`merge_probes`: the later probe's fields, the earlier's per-benchmark splits it did not ask
again). ``resume=false`` starts over without it. An unreadable file is a warning and is ignored: the
probe describes the run, whose answers do not depend on it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from gge.documents.files import atomic_write
from gge.errors import GgeError
from gge.run.probe import ProbeResult, probe_server
from gge.types import Sample

PROBE_FILE = "probe.json"
"""The output folder's copy of the probe's record and splits (:func:`keep_probe`, :func:`load_probe`)."""


def load_probe(output_dir: Path, benchmarks: Sequence[str]) -> tuple[ProbeResult, str | None]:
    """The probe record and splits an earlier invocation of the run kept in ``output_dir``.

    Args:
        output_dir: The run's output folder.
        benchmarks: The run's benchmarks (another benchmark's split is not kept).

    Returns:
        What was kept (empty: no file), and a warning line where the file cannot be read (it is then
        ignored: the probe describes the run, the run's answers do not depend on it; the benchmarks
        an earlier invocation finished have no image token check, and the next probe rewrites it).

    Example:
        >>> import tempfile
        >>> load_probe(Path(tempfile.mkdtemp()), ["b"])
        (ProbeResult(record={}, splits={}), None)
    """
    path = output_dir / PROBE_FILE
    if not path.is_file():
        return ProbeResult(), None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        record, stored = data["record"], data["splits"]
        if not isinstance(record, dict) or not isinstance(stored, dict):
            raise TypeError("record and splits are not objects")
        splits = {
            str(name): (int(pair[0]), int(pair[1])) for name, pair in stored.items() if name in benchmarks
        }
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        why = f"{path}: unreadable probe record ({type(e).__name__}: {e}): ignored"
        return ProbeResult(), why
    tokens = record.get("image_tokens")
    if isinstance(tokens, dict):
        record["image_tokens"] = {name: v for name, v in tokens.items() if name in benchmarks}
    return ProbeResult(record, splits), None


def merge_probes(earlier: ProbeResult, later: ProbeResult) -> ProbeResult:
    """An earlier invocation's probe updated by a later one's.

    The later record replaces the earlier's fields (who answers now, the window's start, the usage of
    its own probe), except per benchmark: the image token splits (and their warnings) of benchmarks
    the later probe did not ask stay the earlier's. A later probe that asked nothing (an invocation
    with nothing left to do) leaves the earlier record as it is.

    Example:
        >>> a = ProbeResult({"image_tokens": {"a": 1}, "warnings": ["a: off"]}, {"a": (9, 3)})
        >>> b = ProbeResult({"image_tokens": {"b": 2}, "warnings": []}, {"b": (8, 4)})
        >>> m = merge_probes(a, b)
        >>> m.record["image_tokens"], m.record["warnings"], m.splits
        ({'a': 1, 'b': 2}, ['a: off'], {'a': (9, 3), 'b': (8, 4)})
    """
    if not later.record:
        return ProbeResult(dict(earlier.record), dict(earlier.splits))
    old_tokens = earlier.record.get("image_tokens") or {}
    new_tokens = later.record.get("image_tokens") or {}
    kept = [name for name in old_tokens if name not in new_tokens]
    old_lines = [
        line
        for line in earlier.record.get("warnings") or []
        if any(str(line).startswith(f"{name}: ") for name in kept)
    ]
    record = {
        **later.record,
        "image_tokens": {**{name: old_tokens[name] for name in kept}, **new_tokens},
        "warnings": [*old_lines, *(later.record.get("warnings") or [])],
    }
    splits = {name: v for name, v in earlier.splits.items() if name not in new_tokens}
    return ProbeResult(record, {**splits, **later.splits})


def keep_probe(output_dir: Path, probe: ProbeResult) -> None:
    """Write the probe's record and splits to ``output_dir``'s :data:`PROBE_FILE`, atomically.

    Raises:
        GgeError: The file cannot be written (naming it).
    """
    path = output_dir / PROBE_FILE
    data = {"record": probe.record, "splits": {name: list(pair) for name, pair in probe.splits.items()}}
    try:
        atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as e:
        raise GgeError(f"{path}: cannot write the probe record ({e.strerror or e})") from None


def _replace(into: ProbeResult, other: ProbeResult) -> None:
    into.record.clear()
    into.record.update(other.record)
    into.splits.clear()
    into.splits.update(other.splits)


def restore_probe(
    into: ProbeResult, output_dir: Path, benchmarks: Sequence[str], *, resume: bool, out: TextIO | None
) -> None:
    """Put the probe an earlier invocation kept (a resume) into ``into``; remove it when starting over.

    Args:
        into: The run's probe (filled in place).
        output_dir: The run's output folder.
        benchmarks: The run's benchmarks.
        resume: False: the run starts over (``resume=false``): the kept probe is removed.
        out: Where a warning is printed (an unreadable file; stdout when None).
    """
    if not resume:
        (output_dir / PROBE_FILE).unlink(missing_ok=True)
        return
    stored, unreadable = load_probe(output_dir, benchmarks)
    if unreadable is not None:
        print(f"warning: {unreadable}", file=out or sys.stdout)
    _replace(into, merge_probes(into, stored))


def probe_and_keep(
    policy: Any,
    todo: Sequence[Sample],
    into: ProbeResult,
    output_dir: Path,
    *,
    out: TextIO | None,
    strict: bool,
) -> None:
    """Probe the server for the benchmarks of ``todo``, merge it into ``into`` and keep the result.

    Args:
        policy: The run's policy (:func:`gge.run.probe.probe_server`).
        todo: The samples left to evaluate (the first of each benchmark is probed).
        into: The run's probe so far (an earlier invocation's, restored): updated in place.
        output_dir: The run's output folder (:data:`PROBE_FILE` is written there).
        out: Where the probe's warnings are printed (stdout when None).
        strict: ``strict_server=true``.

    Raises:
        GgeError: What :func:`~gge.run.probe.probe_server` raises; the file cannot be written.
    """
    asked: dict[str, list[Sample]] = {}
    for s in todo:
        asked.setdefault(s.benchmark, []).append(s)
    found = probe_server(policy, asked, out=out or sys.stdout, strict=strict)
    _replace(into, merge_probes(into, found))
    keep_probe(output_dir, into)
