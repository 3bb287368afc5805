"""The resumable per-sample log: one append-only JSONL file per rank, one result record per line.

Each rank appends :func:`gge.documents.records.encode` dicts to ``predictions.rank{rank}.jsonl`` as
samples finish; every :meth:`PredictionLog.append` writes complete lines and fsyncs. A line counts once
its newline is on disk. A rerun reads every rank file an earlier run left (any world size) with
:func:`read_records` and skips the samples found there; a line's key is read by the codec
(:func:`gge.documents.records.record_key`), the whole line by :func:`gge.documents.records.decode`.
Each line is also a valid replay line (:func:`gge.models.replay.parse_line`).

Example:
    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> with PredictionLog(rank_log_path(out, 0)) as log:
    ...     log.append([{"benchmark": "demo", "id": "1", "candidates": [[3.0, 4.0]]}])
    >>> records = read_records(existing_logs(out))
    >>> records[("demo", "1")]["candidates"], records.duplicates
    ([[3.0, 4.0]], 0)
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from gge.documents.records import record_key
from gge.errors import GgeError, TransientError

__all__ = [
    "GroupedLog",
    "MalformedLine",
    "PredictionLog",
    "Records",
    "bad_lines_path",
    "existing_logs",
    "is_server_error",
    "rank_log_path",
    "read_records",
]

_RANK_FILE = re.compile(r"predictions\.rank(\d+)\.jsonl")

Key = tuple[str, str]


def rank_log_path(output_dir: str | Path, rank: int) -> Path:
    """The log file of one rank: ``output_dir / f"predictions.rank{rank}.jsonl"``.

    Args:
        output_dir: The run's output folder.
        rank: The process rank (>= 0).

    Returns:
        The path (nothing is created).

    Raises:
        ValueError: for a negative rank.

    Example:
        >>> rank_log_path("out", 3).as_posix()
        'out/predictions.rank3.jsonl'
    """
    if rank < 0:
        raise ValueError(f"rank must be >= 0, got {rank}")
    return Path(output_dir) / f"predictions.rank{rank}.jsonl"


def existing_logs(output_dir: str | Path) -> list[Path]:
    """Every ``predictions.rank<N>.jsonl`` file in ``output_dir``, by rank number.

    Files of an earlier run with another world size are included (a rerun must skip what any of them
    finished). A missing folder gives ``[]``.

    Args:
        output_dir: The run's output folder.

    Returns:
        The files, sorted by rank (``rank2`` before ``rank10``).

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp())
        >>> for r in (10, 2):
        ...     _ = rank_log_path(out, r).write_text("")
        >>> [p.name for p in existing_logs(out)]
        ['predictions.rank2.jsonl', 'predictions.rank10.jsonl']
    """
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("predictions.rank*.jsonl"):
        m = _RANK_FILE.fullmatch(path.name)
        if m and path.is_file():
            found.append((int(m.group(1)), path.name, path))
    return [path for _, _, path in sorted(found)]


class MalformedLine(GgeError):
    """A malformed line of a prediction log that is not its last (a run cannot resume past it as is).

    Attributes:
        path: The log file.
        lineno: The line's number (1-based).
    """

    def __init__(self, message: str, path: Path, lineno: int) -> None:
        super().__init__(message)
        self.path = path
        self.lineno = lineno


def bad_lines_path(path: str | Path) -> Path:
    """Where :func:`read_records` keeps the malformed lines it drops from ``path``: ``<path>.bad``.

    Example:
        >>> bad_lines_path("out/predictions.rank0.jsonl").as_posix()
        'out/predictions.rank0.jsonl.bad'
    """
    path = Path(path)
    return path.with_name(path.name + ".bad")


def _parse(line: bytes) -> Any:
    """The JSON value of one line; raises ValueError (UnicodeDecodeError or JSONDecodeError)."""
    return json.loads(line.decode("utf-8"))


def _line_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of every newline-terminated line, the newline excluded."""
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        nl = data.find(b"\n", start)
        if nl < 0:
            return spans
        spans.append((start, nl))
        start = nl + 1


def _good_end(data: bytes, spans: list[tuple[int, int]]) -> int:
    """Where the file's complete lines end: an unterminated tail and a malformed last line excluded."""
    end = spans[-1][1] + 1 if spans else 0
    if data[end:].strip():
        return end  # the unterminated tail is the last line: it alone is dropped
    for start, stop in reversed(spans):
        if not data[start:stop].strip():
            continue
        try:
            _parse(data[start:stop])
        except ValueError:
            return start
        break
    return end


def _repair(path: Path, data: bytes, end: int) -> None:
    if end < len(data):
        with path.open("r+b") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())


class Records(dict[Key, dict[str, Any]]):
    """What :func:`read_records` returns: a dict ``(benchmark, id) -> record``, plus duplicate counts.

    Attributes:
        duplicates: How many lines repeated a (benchmark, id) already read (the first is kept).
        duplicate_keys: The repeated keys, once per repeat, in reading order.
        dropped: Paths whose unterminated or malformed last line was ignored (and cut off when
            repairing).
        malformed: ``file:line: why`` of each malformed line before a file's last that was dropped
            (``drop_malformed``; moved to :func:`bad_lines_path` when repairing).
        moved_to: The :func:`bad_lines_path` files the dropped lines were appended to.
        reask: The keys whose record is a ``server_error`` (the request failed for good), left out by
            ``reask_server_errors`` so the run asks them again; in reading order.
    """

    def __init__(self) -> None:
        super().__init__()
        self.reask: list[Key] = []
        self.duplicates = 0
        self.duplicate_keys: list[Key] = []
        self.dropped: list[Path] = []
        self.malformed: list[str] = []
        self.moved_to: list[Path] = []


def read_records(
    paths: Iterable[str | Path],
    *,
    repair: bool = True,
    drop_malformed: bool = False,
    reask_server_errors: bool = False,
) -> Records:
    r"""Read prediction logs into one dict keyed by ``(benchmark, id)``; ids are normalised to strings.

    A run killed mid-write may leave a truncated last line. An unterminated last line (no newline) and
    a last line that is not valid UTF-8 JSON are ignored, and with ``repair`` (the default) the file is
    truncated back to the end of the last complete line, so later appends start on a fresh line.
    Repair only while no process appends to these files (e.g. read before the evaluation loop, then a
    barrier); :class:`PredictionLog` repairs its own file when it opens it, so concurrent readers can
    pass ``repair=False``. Blank lines are skipped. A sample found twice, within or across files (e.g.
    finished by an earlier run with another world size) keeps its first record and is counted in
    :attr:`Records.duplicates`, except a ``server_error`` record (its request failed for good), which
    a later record of its sample replaces: a rerun that asked it again appended the answer after it
    (not counted as a duplicate). A malformed line before the last (not UTF-8 JSON, or no record's
    ``benchmark`` and ``id``) stops the reading, unless ``drop_malformed``: it is then left out and
    listed in :attr:`Records.malformed`, and with ``repair`` moved from the file to
    :func:`bad_lines_path` (appended there as it was, nothing lost), so its sample is evaluated again.

    Args:
        paths: Log files, read in this order (:func:`existing_logs` gives rank order).
        repair: Truncate a bad tail off the file (and move dropped malformed lines out of it).
        drop_malformed: Drop malformed lines before the last instead of stopping.
        reask_server_errors: Leave out the samples whose record is a ``server_error`` (listed in
            :attr:`Records.reask`): a resume asks them again and never keeps a server error as an
            answer.

    Returns:
        The records, a :class:`Records` dict (the first record of each key, or the last one after
        a server error).

    Raises:
        GgeError: for a missing file.
        MalformedLine: for a malformed line that is not the last (naming ``file:line``): not UTF-8
            JSON, or not an object with a string ``benchmark`` and a string or integer ``id``.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "predictions.rank0.jsonl"
        >>> _ = path.write_text('{"benchmark": "b", "id": 1}\n{"benchmark": "b", "id": "1"}\n{"bench')
        >>> records = read_records([path])
        >>> list(records), records.duplicates, path.read_text()
        ([('b', '1')], 1, '{"benchmark": "b", "id": 1}\n{"benchmark": "b", "id": "1"}\n')
    """
    records = Records()
    for p in paths:
        path = Path(p)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise GgeError(f"prediction log not found: {path}") from None
        except OSError as e:
            raise TransientError(f"cannot read prediction log {path}: {e}") from None
        spans = _line_spans(data)
        end = _good_end(data, spans)
        if end < len(data):
            records.dropped.append(path)
            if repair:
                _repair(path, data, end)
        bad: list[tuple[int, int]] = []
        for lineno, (start, stop) in enumerate(spans, start=1):
            if start >= end:
                break
            line = data[start:stop]
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                key, obj = _read_line(line, where)
            except GgeError as e:
                if not drop_malformed:
                    raise MalformedLine(str(e), path, lineno) from None
                records.malformed.append(str(e))
                bad.append((start, stop))
                continue
            if key in records and not is_server_error(records[key]):
                records.duplicates += 1
                records.duplicate_keys.append(key)
            else:
                records[key] = obj
        if bad and repair:
            _move_out(path, data[:end], bad)
            records.moved_to.append(bad_lines_path(path))
    if reask_server_errors:
        records.reask = [key for key, obj in records.items() if is_server_error(obj)]
        for key in records.reask:
            del records[key]
    return records


def is_server_error(record: Any) -> bool:
    """Whether a log record is a ``server_error``: its sample's request failed for good (asked again).

    Example:
        >>> is_server_error({"benchmark": "b", "id": "1", "server_error": "HTTP 500"}), is_server_error({})
        (True, False)
    """
    return isinstance(record, dict) and record.get("server_error") is not None


def _read_line(line: bytes, where: str) -> tuple[Key, Any]:
    """The key and value of one line (GgeError naming ``where`` for a malformed one)."""
    try:
        obj = _parse(line)
    except UnicodeDecodeError:
        raise GgeError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise GgeError(f"{where}: malformed JSON line: {e.msg}") from None
    return record_key(obj, where), obj


def _move_out(path: Path, data: bytes, bad: list[tuple[int, int]]) -> None:
    """Append the ``bad`` lines of ``path`` to its ``.bad`` file, then rewrite it without them.

    The ``.bad`` file is written (and synced) first, so a crash in between loses no line.
    """
    with bad_lines_path(path).open("ab") as f:
        f.write(b"".join(data[start:stop] + b"\n" for start, stop in bad))
        f.flush()
        os.fsync(f.fileno())
    kept, at = [], 0
    for start, stop in bad:
        kept.append(data[at:start])
        at = stop + 1
    kept.append(data[at:])
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as f:
            f.write(b"".join(kept))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _check_record(record: Any) -> None:
    """Refuse a record that is not a dict with ``benchmark`` and ``id`` (ValueError)."""
    if not isinstance(record, dict) or "benchmark" not in record or "id" not in record:
        raise ValueError(f"a prediction record needs 'benchmark' and 'id': {record!r}")


class PredictionLog:
    """An append-only JSONL log of result records (one process per file: one file per rank).

    The parent folders are created at once; the file is opened (in append mode) at the first
    :meth:`append`. On opening, an unterminated or malformed last line left by a killed run is cut off
    (as :func:`read_records` does), so appended lines never join a partial one. Usable as a context
    manager; :meth:`append` after :meth:`close` reopens the file.

    Args:
        path: The log file, usually :func:`rank_log_path`.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "run" / "predictions.rank0.jsonl"
        >>> log = PredictionLog(path)
        >>> log.append([{"benchmark": "b", "id": "1"}, {"benchmark": "b", "id": "2"}])
        >>> log.close()
        >>> len(path.read_text().splitlines())
        2
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO | None = None

    def _open(self) -> BinaryIO:
        if self._file is None:
            created = not self.path.exists()
            if not created:
                data = self.path.read_bytes()
                _repair(self.path, data, _good_end(data, _line_spans(data)))
            self._file = self.path.open("ab")
            if created:
                _fsync_dir(self.path.parent)
        return self._file

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        """Append one line per record, then flush and fsync (all lines in one write).

        Args:
            records: Result records (:func:`gge.documents.records.encode`), each with ``benchmark`` and
                ``id``.

        Raises:
            ValueError: for a record that is not a dict with ``benchmark`` and ``id``; nothing is
                written then.
        """
        lines = []
        for rec in records:
            _check_record(rec)
            lines.append(json.dumps(rec, ensure_ascii=False) + "\n")
        if not lines:
            return
        f = self._open()
        f.write("".join(lines).encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())

    def close(self) -> None:
        """Close the file (a no-op when it is not open)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> PredictionLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _fsync_dir(folder: Path) -> None:
    """Persist a new directory entry (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class GroupedLog:
    """A :class:`PredictionLog` written by a thread of its own, each group of waiting records at once.

    :meth:`put` returns at once; the writer takes every record waiting and appends them in one write
    and one fsync (a group commit), so the many threads of a windowed run never wait on each other's
    fsync, and a record is on disk one fsync after it was put. :meth:`close` writes what is waiting,
    then closes the log; a failure to write is raised there (and by the next :meth:`put`).

    Args:
        log: The log to write to.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "predictions.rank0.jsonl"
        >>> grouped = GroupedLog(PredictionLog(path))
        >>> for i in range(3):
        ...     grouped.put({"benchmark": "b", "id": str(i)})
        >>> grouped.close()
        >>> [json.loads(x)["id"] for x in path.read_text().splitlines()]
        ['0', '1', '2']
    """

    def __init__(self, log: PredictionLog) -> None:
        self.log = log
        self._waiting: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._closing = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write, name="gge-log", daemon=True)
        self._thread.start()

    def put(self, record: dict[str, Any]) -> None:
        """Queue one record (:func:`gge.documents.records.encode`) to be appended.

        Raises:
            ValueError: for a record without ``benchmark`` and ``id`` (checked now, as
                :meth:`PredictionLog.append` would).
            OSError: the writer failed on an earlier group.
        """
        _check_record(record)
        with self._cond:
            if self._error is not None:
                raise self._error
            self._waiting.append(record)
            self._cond.notify()

    def _write(self) -> None:
        while True:
            with self._cond:
                while not self._waiting and not self._closing:
                    self._cond.wait()
                group, self._waiting = self._waiting, []
                if not group and self._closing:
                    return
            try:
                self.log.append(group)
            except BaseException as e:  # said by the next put, and by close
                with self._cond:
                    self._error = e
                return

    def close(self) -> None:
        """Write what is waiting, stop the writer, close the log.

        Raises:
            OSError: a group could not be written.
        """
        with self._cond:
            if self._closing:  # closed already: said then
                return
            self._closing = True
            self._cond.notify()
        self._thread.join()
        self.log.close()
        if self._error is not None:
            raise self._error
