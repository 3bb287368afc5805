r"""An output folder belongs to one run: its fingerprint, checked on resume, and a lock while in use.

A rerun into an output folder skips the samples an earlier run finished. That is only right when
the earlier run asked the same model the same way: ``run.json`` in the folder records a
**fingerprint** of everything that changes predictions, and a rerun whose fingerprint differs stops
with an error naming what differs (``resume=false`` starts the folder over; a new ``output_dir``
keeps both).

In the fingerprint: the model section (preset, prompts, convention, modes, pixel limits, decoding,
dtype...), the checkpoint's content digest (and a separate critic's, a replay file's), ``k``,
``seed``, ``decode_max_pixels``, the trainer's precision, and per benchmark its options (the
instruction variant, the language...) and a digest of what its samples ask (:func:`asked_digest`:
id, instruction and image size; not the target, which changes no prediction: a resume re-scores the
answers it reuses). Not in it, since they do not change any prediction: the selection strategy and
cluster radius (every strategy is recomputed from the predictions), ``max_samples`` (a larger rerun
resumes; a smaller one into a folder holding a finished run refuses, :func:`check_not_smaller`,
since its subset's results would replace the finished ones), batch size, workers, devices, loggers,
and the model's ``device``, endpoint concurrency, retries and timeouts. A run.json whose samples
digest is of an older scheme (:func:`digest_version`) refuses a resume, saying so: it cannot tell
whether its predictions were made on these samples.

A folder in use is locked (``flock`` on ``.gge.lock``): a second run on it refuses. The kernel
drops the lock when its process ends, so a killed run never leaves it stuck; a run that ends
removes the file (:func:`output_dir_lock`).

Example:
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> prepare_output_dir(out, {"k": 5, "model": {"name": "demo"}}, resume=True)
    >>> _ = (out / "predictions.rank0.jsonl").write_text('{"benchmark": "b", "id": "1"}\n')
    >>> prepare_output_dir(out, {"k": 3, "model": {"name": "demo"}}, resume=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gge.errors.GgeError: output_dir ... holds predictions of a different run, ...: k: 5 -> 3. Rerun ...
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gge.benchmarks.hub_digests import region_key
from gge.benchmarks.images import image_name
from gge.documents.files import atomic_write
from gge.errors import GgeError, TransientError
from gge.run.predlog import existing_logs
from gge.types import Sample

RUN_FILE = "run.json"
LOCK_FILE = ".gge.lock"
OUTPUT_FILES = (
    "predictions.jsonl",
    "results.json",
    "report.md",
    "report.html",
    RUN_FILE,
    "invocations.json",  # gge.run.invocations.INVOCATIONS_FILE
    "probe.json",  # gge.run.probe_store.PROBE_FILE
)
"""What a run writes besides its ``predictions.rank<r>.jsonl`` logs (removed by ``resume=false``)."""

_WHOLE_FILE_LIMIT = 64 << 20
_CHUNK = 1 << 20
_CHUNKS = 16
_WEIGHT_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".gguf",
    ".json",
    ".model",
    ".txt",
    ".jinja",
    ".py",
)


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file; above 64 MiB, of its size and 16 evenly spaced 1 MiB chunks.

    Two checkpoints of one training run have the same sizes and differ in (almost) every byte of
    their weights, so sampled chunks tell them apart without reading gigabytes.

    Args:
        path: The file.

    Returns:
        A hex digest, prefixed ``sampled:`` when only chunks were read.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "a"
        >>> _ = p.write_bytes(b"abc")
        >>> file_digest(p)[:12]
        'ba7816bf8f01'
    """
    p = Path(path)
    size = p.stat().st_size
    h = hashlib.sha256()
    with p.open("rb") as f:
        if size <= _WHOLE_FILE_LIMIT:
            for block in iter(lambda: f.read(_CHUNK), b""):
                h.update(block)
            return h.hexdigest()
        h.update(str(size).encode())
        for i in range(_CHUNKS):
            f.seek((size - _CHUNK) * i // (_CHUNKS - 1))
            h.update(f.read(_CHUNK))
    return "sampled:" + h.hexdigest()


def checkpoint_digest(path: str | Path) -> str:
    """A digest of a checkpoint: a file's :func:`file_digest`, or a folder's weights and configs.

    Args:
        path: A checkpoint file or folder (weights, ``config.json``, tokenizer and processor files).

    Returns:
        A hex digest; ``"missing"`` when the path does not exist (the loader reports that itself).
    """
    p = Path(path)
    if p.is_file():
        return file_digest(p)
    if not p.is_dir():
        return "missing"
    h = hashlib.sha256()
    for f in sorted(q for q in p.iterdir() if q.is_file() and q.name.endswith(_WEIGHT_SUFFIXES)):
        h.update(f"{f.name}\0{file_digest(f)}\n".encode())
    return h.hexdigest()


SAMPLES_DIGEST_VERSION = "v2"
"""The scheme of :func:`samples_digest`, its digests' prefix (``v2:<sha256>``). A digest of 64 hex
characters and no prefix is the first scheme's (gge before v2): id, instruction and screenshot name,
no target; it cannot be compared with a ``v2`` digest (:func:`digest_version`)."""

ASKED_DIGEST_VERSION = "asked"
"""The scheme of :func:`asked_digest` (``asked:<sha256>``): a sample without its target."""

DIGEST_KINDS = {
    "v1": "ids, instructions and screenshot names (an older gge)",
    SAMPLES_DIGEST_VERSION: "ids, instructions, targets and image sizes",
    ASKED_DIGEST_VERSION: "ids, instructions, screenshot names and image sizes, not targets",
}
"""What a digest of each scheme covers (for messages)."""


def digest_version(digest: str) -> str:
    """The scheme a samples digest was written by: ``"v2"``, ``"asked"`` or (no prefix) ``"v1"``.

    Example:
        >>> digest_version("v2:" + "0" * 64), digest_version("asked:" + "0" * 64), digest_version("0" * 64)
        ('v2', 'asked', 'v1')
    """
    prefix, sep, _ = digest.partition(":")
    return prefix if sep else "v1"


def sample_identity(sample: Sample, *, target: bool = True) -> list[Any]:
    """What a sample is, for :func:`samples_digest`: id, instruction, target and image size.

    The target is :func:`gge.benchmarks.hub_digests.region_key`: the region in pixels to 1e-3 pixel with its
    hit rule (a box's space and integer-point rule, a polygon's vertices, an absent target's
    ``abstention_hits``). The screenshot is identified by its size, not its name: a Hub copy's
    screenshots are rows of a parquet or TSV file (``test-00000.parquet::parquet:3/image``), not the
    release's files, and not every copy records the release's file name. These are the fields the
    release check compares (:func:`gge.benchmarks.hub_digests.record_keys`, labels aside), at its
    precision, so a copy gge reports as matching the release has the release's digest.

    Args:
        sample: The sample.
        target: False leaves the target out and puts the screenshot's name in (:func:`asked_digest`).
    """
    if not target:
        return [sample.id, sample.instruction, image_name(sample.image_path), list(sample.image_size)]
    return [sample.id, sample.instruction, region_key(sample.region), list(sample.image_size)]


def _digest(samples: Sequence[Sample], *, target: bool) -> str:
    h = hashlib.sha256()
    for s in sorted(samples, key=lambda s: s.id):
        h.update(json.dumps(sample_identity(s, target=target), ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def first_digest(samples: Sequence[Sample]) -> str:
    """The samples digest of the first scheme (``v1``, gge before v2): id, instruction, screenshot name.

    Kept to read an older folder's ``run.json``: a resume whose samples give the digest that folder
    recorded continues it (:func:`prepare_output_dir`), instead of refusing a folder nothing changed in.
    """
    h = hashlib.sha256()
    for s in sorted(samples, key=lambda s: s.id):
        h.update(json.dumps([s.id, s.instruction, image_name(s.image_path)]).encode())
    return h.hexdigest()


def samples_digest(samples: Sequence[Sample]) -> str:
    """A digest of what a benchmark asks and how it scores: :func:`sample_identity` of each sample.

    Order-free (sorted by id) and prefixed by its scheme, :data:`SAMPLES_DIGEST_VERSION`. Two runs
    whose samples differ in one target (a box moved, a refusal's ``abstention_hits``) have different
    digests: results.json's ``samples_digest``, on which ``gge compare`` refuses to pair them.

    Args:
        samples: A benchmark's samples.

    Returns:
        ``"v2:<sha256 hex>"``.
    """
    return f"{SAMPLES_DIGEST_VERSION}:{_digest(samples, target=True)}"


def asked_digest(samples: Sequence[Sample]) -> str:
    """A digest of what a benchmark asks the model: :func:`sample_identity` without the target.

    The fingerprint's (run.json): a target changes no prediction, and a resume re-scores the answers
    it reuses against this run's targets (``bench.osworld_g.refusals`` is not predictive), so only what
    the model is asked must match: id, instruction, the screenshot's name
    (:func:`gge.benchmarks.images.image_name`) and size, so a folder is not resumed on other
    screenshots behind the same ids.

    Args:
        samples: A benchmark's samples.

    Returns:
        ``"asked:<sha256 hex>"``.
    """
    return f"{ASKED_DIGEST_VERSION}:{_digest(samples, target=False)}"


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(_flatten(value[key], f"{prefix}{key}."))
        return out if out or not prefix else {prefix[:-1]: {}}
    return {prefix[:-1]: value}


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``"key: old -> new"`` for every leaf that differs between two fingerprints.

    Example:
        >>> differences({"k": 5, "model": {"a": 1}}, {"k": 3, "model": {"a": 1, "b": 2}})
        ['k: 5 -> 3', 'model.b: (absent) -> 2']
    """
    a, b = _flatten(old), _flatten(new)
    out = []
    for key in sorted(set(a) | set(b)):
        if a.get(key, ...) != b.get(key, ...):
            was = _show(a[key]) if key in a else "(absent)"
            now = _show(b[key]) if key in b else "(absent)"
            out.append(f"{key}: {was} -> {now}")
    return out


def _clear(folder: Path) -> None:
    for path in [*existing_logs(folder), *(folder / name for name in OUTPUT_FILES)]:
        if path.is_file():
            path.unlink()


def check_output_dir(folder: str | Path, *, option: str = "output_dir") -> Path:
    """``folder`` as a Path, or a one-line error (naming ``option``) when it or a parent is a file.

    Example:
        >>> import tempfile
        >>> f = Path(tempfile.mkdtemp()) / "x"
        >>> _ = f.write_text("")
        >>> check_output_dir(f / "run")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: output_dir .../x/run: .../x is a file, not a folder
    """
    path = Path(folder)
    for p in (path, *path.parents):
        if p.exists() and not p.is_dir():
            raise GgeError(f"{option} {path}: {p} is a file, not a folder")
    return path


def make_output_dir(folder: str | Path, *, option: str = "output_dir") -> Path:
    """:func:`check_output_dir`, then create the folder (and its parents) when missing.

    Args:
        folder: The folder.
        option: The option named in the message.

    Returns:
        The folder.

    Raises:
        GgeError: a parent is a file, or the folder cannot be created (a read-only parent: one line
            naming the folder and the reason, not a PermissionError traceback).
    """
    out = check_output_dir(folder, option=option)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GgeError(
            f"{option} {out}: cannot create the folder ({e.strerror or e}: {e.filename or out}); "
            f"choose a writable {option}"
        ) from None
    return out


def _old_digests(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The benchmarks whose samples digest in ``old`` is of the first scheme (v1) and ``new``'s is not."""
    benches_old, benches_new = old.get("benchmarks"), new.get("benchmarks")
    if not isinstance(benches_old, Mapping) or not isinstance(benches_new, Mapping):
        return []
    out = []
    for name, entry in benches_old.items():
        other = benches_new.get(name)
        was = entry.get("samples") if isinstance(entry, Mapping) else None
        now = other.get("samples") if isinstance(other, Mapping) else None
        if not isinstance(was, str) or not isinstance(now, str):
            continue
        if digest_version(was) == "v1" != digest_version(now):
            out.append(str(name))
    return out


def prepare_output_dir(
    folder: str | Path,
    fingerprint: Mapping[str, Any],
    *,
    resume: bool,
    first_digests: Mapping[str, str] | None = None,
) -> None:
    """Check that ``folder`` holds this run's predictions (or none), then record the fingerprint.

    Args:
        folder: The output folder (created when missing).
        fingerprint: What changes predictions (JSON-ready), see the module docstring.
        resume: False: remove an earlier run's logs and outputs first and start over.
        first_digests: Each benchmark's :func:`first_digest`: an older folder whose ``run.json``
            records that digest (the first scheme) holds predictions of these samples and resumes;
            without them, or when they differ, such a folder is refused.

    Raises:
        GgeError: the folder holds predictions of a run with another fingerprint (naming each key that
            differs), or predictions with no ``run.json`` to compare with.
    """
    out = make_output_dir(folder)
    run_file = out / RUN_FILE
    fp = json.loads(json.dumps(fingerprint))  # as it reads back from the file
    if not resume:
        _clear(out)
    logs = [p for p in existing_logs(out) if p.stat().st_size > 0]
    if run_file.is_file():
        try:
            old = json.loads(run_file.read_text(encoding="utf-8"))["fingerprint"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise GgeError(f"{run_file}: unreadable run record ({e}); rerun with resume=false") from None
        stale = _old_digests(old, fp) if isinstance(old, Mapping) else []
        if stale and first_digests is not None:
            same = [b for b in stale if old["benchmarks"][b].get("samples") == first_digests.get(b)]
            for bench in same:  # the same samples, by the first scheme: compare the rest as usual
                old["benchmarks"][bench]["samples"] = fp["benchmarks"][bench]["samples"]
            stale = [b for b in stale if b not in same]
        if stale and logs:
            raise GgeError(
                f"output_dir {out} holds predictions whose {RUN_FILE} records a samples digest of an "
                f"older gge ({', '.join(stale)}: ids, instructions and screenshot names) that these "
                "samples do not give: they were made on other samples. Rerun with resume=false to "
                "replace them, or choose a new output_dir"
            )
        diff = differences(old, fp)
        if diff and logs:
            raise GgeError(
                f"output_dir {out} holds predictions of a different run, which this one would reuse: "
                + "; ".join(diff)
                + ". Rerun with resume=false to replace them, or choose a new output_dir"
            )
    elif logs:
        raise GgeError(
            f"output_dir {out} holds predictions ({logs[0].name}) but no {RUN_FILE} saying which run "
            "made them; rerun with resume=false to replace them, or choose a new output_dir"
        )
    record = {"fingerprint": fp, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        atomic_write(run_file, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    except OSError as e:
        raise GgeError(
            f"output_dir {out}: cannot write {RUN_FILE} ({e.strerror or e}); choose a writable output_dir"
        ) from None


def check_not_smaller(folder: str | Path, counts: Mapping[str, int], max_samples: int | None) -> None:
    """Refuse a run that would replace a finished run's results with those of fewer samples.

    A rerun into a folder resumes; with a smaller ``max_samples`` it would finish at once and write
    a subset's results.json and report.html over the finished run's. The same or a larger run is
    fine (it resumes, or evaluates the samples the finished run left out).

    Args:
        folder: The output folder.
        counts: The samples this run evaluates, per benchmark.
        max_samples: This run's ``max_samples`` (named in the message).

    Raises:
        GgeError: the folder's results.json counts more samples for a benchmark than ``counts``.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp())
        >>> _ = (out / "results.json").write_text('{"benchmarks": {"b": {"samples": 36}}}')
        >>> check_not_smaller(out, {"b": 36}, None)
        >>> check_not_smaller(out, {"b": 5}, 5)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gge.errors.GgeError: output_dir ... holds a finished run of more samples (b 36) than max_samples=5 ...
    """
    path = Path(folder) / "results.json"
    try:
        finished = json.loads(path.read_text(encoding="utf-8"))["benchmarks"]
        done = {str(name): int(entry["samples"]) for name, entry in finished.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return  # no finished run (or no readable one) to protect
    larger = {name: n for name, n in done.items() if name in counts and counts[name] < n}
    if not larger:
        return
    had = ", ".join(f"{name} {n}" for name, n in larger.items())
    now = ", ".join(f"{name} {counts[name]}" for name in larger)
    raise GgeError(
        f"output_dir {Path(folder)} holds a finished run of more samples ({had}) than "
        f"max_samples={max_samples} evaluates ({now}): its results.json and report.html would be "
        "replaced by a subset's. Choose another output_dir for the smaller run (or rerun with "
        "resume=false to discard the finished one)"
    )


@contextmanager
def output_dir_lock(folder: str | Path) -> Iterator[None]:
    """Hold ``folder/.gge.lock`` for the duration: a second run on the folder refuses.

    An ``flock``: released by the kernel when the process ends, so a killed run leaves no stale lock.
    A run that ends removes the file, so a finished folder holds no ``.gge.lock`` (a killed run
    leaves it, unlocked: the next run takes it). Removing a locked file races with a process that
    opened it just before: that process would lock the removed file while a third creates a new
    one. So the file is removed while still locked, and a process that got the lock checks that
    the path still names the file it locked (the same device and inode), and otherwise opens the
    path again. Where ``fcntl`` or ``flock`` is not available (Windows, some network file systems)
    no lock is taken (and the file is left).

    Raises:
        TransientError: another process holds the lock (its pid and start time are named).
        GgeError: the folder cannot be created or is not writable (one line naming it).
    """
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    out = make_output_dir(folder)
    path = out / LOCK_FILE
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise GgeError(
                f"output_dir {out}: cannot create its lock file {LOCK_FILE} ({e.strerror or e}); "
                "choose a writable output_dir"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise TransientError(
                f"output_dir {out} is in use by another gge run ({holder}); wait for it to end, "
                "or choose another output_dir"
            ) from None
        except OSError:  # no flock on this file system: run unlocked
            locked = False
            break
        if _names(path, fd):
            locked = True
            break
        os.close(fd)  # the holder removed the file after this process opened it: open the path again
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
        yield
    finally:
        if locked and _names(path, fd):  # never another's file (this one's removed by hand, re-made)
            with contextlib.suppress(OSError):  # while still locked: one that opened it sees it gone, retries
                path.unlink()
        os.close(fd)  # releases the lock


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (the same device and inode)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)
