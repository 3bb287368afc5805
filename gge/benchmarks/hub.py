"""Reading a benchmark from a Hub copy, checking it against the release, and the ``source`` choice.

``bench.<name>.source`` says what the benchmark's folder holds: ``release`` (the official layout,
read by the benchmark's own loader), ``parquet`` or ``tsv`` (a Hub copy, mapped by
:mod:`gge.benchmarks.hub_copies` onto exactly the release's Samples, images left embedded), or
``auto`` (the release when its annotation files are there, else the one kind of copy file the folder
holds). A copy's records are checked against the release: against the digests gge ships
(``release_digests.json``: count, ids, regions to 1e-3 pixel, instructions, image sizes and labels,
per benchmark and variant) and, with ``bench.<name>.release_root``, record by record against release
files. Screenshot pixels are not compared, only their sizes: each embedded image's size is read
from its header, and a copy whose own size column says otherwise differs. A copy that differs, or
that cannot be checked, is refused unless ``bench.<name>.allow_copy_differences=true``; either way
``provenance`` says what was read.

Example:
    >>> from gge.types import Box
    >>> region_key(Box(1, 2, 3.04, 4.0004))
    'bbox/pixel 1.000 2.000 3.040 4.000'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from gge.benchmarks.base import (
    UNKNOWN_SIZE,
    Benchmark,
    BenchmarkOptions,
    LoadCollector,
    LoadedBenchmark,
    file_record,
)
from gge.benchmarks.hub_copies import (
    RELEASE_FILES,
    KnownCopy,
    copies_of,
    describe,
    identify,
    layout_key,
    layouts_of,
    unread_copy,
)
from gge.benchmarks.hub_files import COLUMN_READERS, CopyRow, copy_files, read_parquet_rows, read_tsv_rows
from gge.benchmarks.hub_layouts import PIXEL_DECIMALS, CopyLayout, Mapped
from gge.documents.results import COPY_SOURCES
from gge.errors import GgeError
from gge.types import Absent, Polygon, Region, Sample

SOURCES = ("auto", "release", *COPY_SOURCES)
"""The values of ``bench.<name>.source``."""

DIGESTS_FILE = "release_digests.json"
"""The release digests shipped beside this module (written by tools/release_digests.py)."""

RECORD_HASH_CHARS = 6
"""Hex characters kept of each record's hash in the digests file (to count what differs: a changed
record passes for unchanged with odds of about n / 16.7 million for n records)."""

MAX_NAMED = 5
"""Differences name at most this many ids."""

NOT_COMPARED = "screenshot pixels (only each image's size, read from the embedded image's header)"
"""``provenance.release_check.not_compared``: what the release check does not look at."""


# ----------------------------------------------------------------------------------------------
# Digests: what the release check compares


def _round(v: float) -> str:
    text = f"{round(float(v), PIXEL_DECIMALS):.{PIXEL_DECIMALS}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def region_key(region: Region) -> str:
    """A region as text in pixel units rounded to 1e-3 pixel, with its kind (a box's space, its point rule).

    1e-3 pixel is the precision pixel boxes are recovered at from a copy's [0, 1] boxes
    (:data:`~gge.benchmarks.hub_layouts.PIXEL_DECIMALS`): fine enough that a box moved by a few
    hundredths of a pixel (which changes the inclusive hit test at integer points) differs, coarse
    enough that the float noise of a faithful copy's division and product does not.

    Args:
        region: The region.

    Returns:
        The text.
    """
    if isinstance(region, Absent):
        return f"refusal {'abstention' if region.abstention_hits else 'never'}"
    if isinstance(region, Polygon):
        return "polygon " + " ".join(f"{_round(x)} {_round(y)}" for x, y in region.vertices)
    point = "/int" if region.integer_point else ""  # showdown-clicks tests the int pixel point
    return f"bbox/{region.space}{point} " + " ".join(_round(v) for v in region.pixel_box())


def record_keys(sample: Sample) -> dict[str, str]:
    """The text each digest hashes for one sample (keyed by what it checks).

    Args:
        sample: The sample.

    Returns:
        ``{"ids": ..., "regions": ..., "instructions": ..., "sizes": ..., "labels": ...}``.
    """
    labels = json.dumps({k: sample.labels[k] for k in sorted(sample.labels)}, ensure_ascii=False)
    return {
        "ids": sample.id,
        "regions": f"{sample.id}\t{region_key(sample.region)}",
        "instructions": f"{sample.id}\t{sample.instruction}",
        "sizes": f"{sample.id}\t{sample.image_size[0]}x{sample.image_size[1]}",
        "labels": f"{sample.id}\t{labels}",
    }


FIELDS = ("ids", "regions", "instructions", "sizes", "labels")
"""What the digests cover, in the order differences are listed."""

RECORD_FIELDS = ("ids", "regions", "instructions", "sizes")
"""The fields whose per-record short hashes are kept too (so a difference is counted and named)."""

WHAT = {
    "ids": "ids",
    "regions": "boxes",
    "instructions": "instructions",
    "sizes": "image sizes",
    "labels": "labels",
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digests(samples: Sequence[Sample]) -> dict[str, Any]:
    """The release digests of a set of samples (what release_digests.json holds per variant).

    Args:
        samples: The samples.

    Returns:
        ``records``, per field the sha256 of its sorted record texts, and for :data:`RECORD_FIELDS`
        the sorted short hashes of each record (``<field>_records``, one string of 6-hex-character
        hashes).
    """
    keys = [record_keys(s) for s in samples]
    out: dict[str, Any] = {"records": len(samples)}
    for f in FIELDS:
        texts = sorted(k[f] for k in keys)
        out[f] = _sha("\n".join(texts))
        if f in RECORD_FIELDS:
            out[f"{f}_records"] = "".join(sorted(_sha(t)[:RECORD_HASH_CHARS] for t in texts))
    return out


VARIANT_COUNTS = ("denominator",)
"""Variant entries that count what was read rather than choose it: left out of the digests' keys."""


def variant_key(variant: Mapping[str, Any]) -> str:
    """A load variant as the key of the digests file (``{}`` for none; counts left out).

    Example:
        >>> variant_key({"refusals": "excluded", "denominator": 510})
        '{"refusals": "excluded"}'
    """
    chosen = {k: v for k, v in variant.items() if k not in VARIANT_COUNTS}
    return json.dumps(chosen, sort_keys=True, ensure_ascii=False)


@lru_cache(maxsize=1)
def release_digests() -> dict[str, dict[str, Any]]:
    """The shipped release digests: ``{benchmark: {variant_key: digests}}`` (empty when absent)."""
    try:
        text = resources.files("gge.benchmarks").joinpath(DIGESTS_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}
    data = json.loads(text)
    return dict(data.get("benchmarks", {}))


def _hashes(joined: str) -> set[str]:
    return {joined[i : i + RECORD_HASH_CHARS] for i in range(0, len(joined), RECORD_HASH_CHARS)}


def compare_digests(samples: Sequence[Sample], release: Mapping[str, Any]) -> list[str]:
    """What differs between samples and a release's digests, one line each (empty: they match).

    Args:
        samples: The copy's samples.
        release: The release's digests for the same variant.

    Returns:
        The differences: the count, then per field how many records differ. A field whose digest
        differs though no record is located by the short hashes (a short-hash collision, or a
        field with none kept) is still listed, so a copy never passes while a digest differs.
    """
    mine = digests(samples)
    out: list[str] = []
    if mine["records"] != release["records"]:
        out.append(f"count {mine['records']} vs release {release['records']}")
    theirs_ids = _hashes(release["ids_records"])
    my_ids = {_sha(s.id)[:RECORD_HASH_CHARS]: s.id for s in samples}
    extra = [sid for h, sid in my_ids.items() if h not in theirs_ids]
    missing = len(theirs_ids - set(my_ids))
    if extra:
        out.append(f"{len(extra)} ids not in the release ({_named(extra)})")
    if missing:
        out.append(f"{missing} release ids missing")
    ids_differ = bool(extra or missing)  # then every field's digest differs with the ids, if nothing else
    if mine["ids"] != release["ids"] and not ids_differ:
        out.append(f"{WHAT['ids']} differ (records not located)")
    for f in FIELDS[1:]:
        if mine[f] == release[f]:
            continue
        differ: list[str] = []
        if f"{f}_records" in release:
            theirs = _hashes(release[f"{f}_records"])
            differ = [
                s.id
                for s in samples
                if _sha(s.id)[:RECORD_HASH_CHARS] in theirs_ids
                and _sha(record_keys(s)[f])[:RECORD_HASH_CHARS] not in theirs
            ]
        if differ:
            out.append(f"{len(differ)} {WHAT[f]} differ ({_named(differ)})")
        elif not ids_differ:
            kept = f"{f}_records" in release
            out.append(f"{WHAT[f]} differ" + (" (records not located)" if kept else ""))
    return out


def compare_samples(samples: Sequence[Sample], release: Sequence[Sample]) -> list[str]:
    """What differs between samples and the release's, record by record (naming the first ids).

    Args:
        samples: The copy's samples.
        release: The release loader's samples.

    Returns:
        One line per kind of difference (empty: they match).
    """
    out: list[str] = []
    if len(samples) != len(release):
        out.append(f"count {len(samples)} vs release {len(release)}")
    theirs = {s.id: record_keys(s) for s in release}
    mine = {s.id: record_keys(s) for s in samples}
    extra = [i for i in mine if i not in theirs]
    missing = [i for i in theirs if i not in mine]
    if extra:
        out.append(f"{len(extra)} ids not in the release ({_named(extra)})")
    if missing:
        out.append(f"{len(missing)} release ids missing ({_named(missing)})")
    for f in FIELDS[1:]:
        differ = [i for i, k in mine.items() if i in theirs and k[f] != theirs[i][f]]
        if differ:
            first = differ[0]
            out.append(
                f"{len(differ)} {WHAT[f]} differ ({_named(differ)}; {first}: "
                f"{mine[first][f].split(chr(9), 1)[1]!r} vs release {theirs[first][f].split(chr(9), 1)[1]!r})"
            )
    return out


def _named(ids: Sequence[str]) -> str:
    more = f", +{len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else ""
    return ", ".join(ids[:MAX_NAMED]) + more


# ----------------------------------------------------------------------------------------------
# Which source a folder holds


def release_present(bench: Benchmark, root: Path) -> bool | None:
    """Whether the release's annotation files are in ``root`` (None: gge does not know its files)."""
    patterns = RELEASE_FILES.get(bench.name)
    if patterns is None:
        return None
    return any(next(iter(root.glob(p)), None) is not None for p in patterns)


def detect_source(bench: Benchmark, root: Path) -> str:
    """The ``source`` of ``auto``: the release when its files are there, else the one kind of copy.

    Args:
        bench: The benchmark.
        root: Its folder.

    Returns:
        ``release``, ``parquet`` or ``tsv``.

    Raises:
        GgeError: Copies of both kinds and no release files, naming what was found and the option.
    """
    if not root.is_dir() or not copies_of(bench.name) or release_present(bench, root) is not False:
        return "release"  # the release loader says what is missing, as it always has
    found = copy_files(root)
    if not found:
        return "release"
    if len(found) > 1:
        listing = "; ".join(f"{k}: {', '.join(p.name for p in v[:3])}" for k, v in sorted(found.items()))
        raise GgeError(
            f"{bench.name}: {root} holds no release files and copies of {len(found)} kinds ({listing}): "
            f"set bench.{bench.name}.source=release|parquet|tsv"
        )
    return next(iter(found))


# ----------------------------------------------------------------------------------------------
# Loading a copy


def _layout(bench: Benchmark, root: Path, kind: str, files: list[Path]) -> CopyLayout:
    """The layout whose columns every copy file has (one-line errors for none or several)."""
    names = [p.name for p in files]
    layouts = layouts_of(bench.name, kind)
    unread = unread_copy(bench.name, kind, names)
    columns = {p: COLUMN_READERS[kind](p) for p in files}
    fits = {
        k: v
        for k, v in layouts.items()
        if all(set(v.columns) | {v.image_column} <= set(cols) for cols in columns.values())
    }
    first = files[0]
    if unread is not None:
        raise GgeError(
            f"{bench.name}: {first} looks like {unread.repository}'s copy, which gge knows but does not "
            f"read yet ({unread.differs}); use the release layout (bench.{bench.name}.source=release)"
        )
    if len(fits) == 1:
        return next(iter(fits.values()))
    if not fits:
        known = describe(layouts) if layouts else f"gge reads no {kind} copy of {bench.name}"
        raise GgeError(
            f"{bench.name}: the {kind} files in {root} ({', '.join(names[:3])}) fit no known copy layout: "
            f"columns {', '.join(columns[first])}; known: {known}"
        )
    raise GgeError(f"{bench.name}: {first} fits several copy layouts ({', '.join(fits)})")


def read_rows(kind: str, files: Sequence[Path], layout: CopyLayout) -> tuple[list[CopyRow], list[str]]:
    """Every row of a copy's files, in file order, with the notes the readers made."""
    rows: list[CopyRow] = []
    notes: list[str] = []
    for path in files:
        if kind == "parquet":
            rows += read_parquet_rows(path, list(layout.columns), layout.image_column)
        else:
            found, more = read_tsv_rows(path, layout.image_column)
            rows += found
            notes += more
    return rows, notes


def load_copy(bench: Benchmark, root: Path, options: BenchmarkOptions, kind: str) -> LoadedBenchmark:
    """Read a Hub copy of ``bench`` under ``root`` as the release's Samples, checked against the release.

    Args:
        bench: The benchmark.
        root: The folder holding the copy's files (searched recursively).
        options: The benchmark's options (``allow_copy_differences``, ``release_root``).
        kind: ``parquet`` or ``tsv``.

    Returns:
        The samples (images embedded) and the load summary, with ``provenance``.

    Raises:
        GgeError: No such files, no layout fits, a bad row, or a copy that differs from the release (or
            cannot be checked) without ``allow_copy_differences``.
    """
    if not root.is_dir():
        raise GgeError(f"{bench.name}: benchmark folder not found: {root} (set bench.{bench.name}.root=DIR)")
    files = copy_files(root).get(kind, [])
    if not files:
        raise GgeError(f"{bench.name}: source={kind}, but {root} holds no .{kind} file")
    layout = _layout(bench, root, kind, files)
    files = sorted(files, key=layout.file_order)
    rows, notes = read_rows(kind, files, layout)
    out = LoadCollector(bench.name, root)
    for path in files:
        out.file(path)
    out.notes += notes
    mapped = layout.rows(rows, options)
    for m in mapped:
        # The recorded size, as the release records it: answers are mapped to it and the box is in its
        # units, so a copy whose embedded image is another size (a difference, reported) still scores
        # point and box in one frame. A header that cannot be read keeps the sample unreadable.
        readable = m.size != UNKNOWN_SIZE
        size = m.declared_size if m.declared_size is not None and readable else m.size
        sample = Sample(bench.name, m.id, m.row.image, size, m.instruction, m.region, m.labels)
        out.add(sample, m.row.origin)
    if len(mapped) < len(rows):
        out.notes.append(
            f"{len(rows) - len(mapped)} of the copy's {len(rows)} rows left out, as the release loader "
            "leaves those records out with these options"
        )
    variant = layout.variant(options, len(out.samples))
    names = [p.name for p in files]
    known = identify(bench.name, kind, names, layout)
    check = release_check(bench, variant, out.samples, options)
    own = size_column_differences(mapped, layout.size_column)
    if own:
        check = {**check, "matches": False, "differences": [*own, *check["differences"]]}
    out.provenance = {
        "source": kind,
        "files": [file_record(p, root) for p in files],
        "copy": copy_record(known, layout, names),
        "release_check": check,
        "allowed_differences": bool(options.allow_copy_differences) and check["matches"] is not True,
    }
    if check["matches"] is not True:
        refuse_or_note(bench, files, check, options, out, known)
    return out.result(variant)


def size_column_differences(mapped: Sequence[Mapped], column: str | None) -> list[str]:
    """A copy's rows whose embedded image is not the size its own size column says (one line, or none).

    Args:
        mapped: The mapped rows (``size`` from the image header, ``declared_size`` from the column).
        column: The size column's name (None: the copy has none).

    Returns:
        ``["<n> embedded images are not the size in column '<column>' (<ids>; <first>: ...)"]`` or [].
        An unreadable image is not counted here (it is listed as unreadable).
    """
    if column is None:
        return []
    differ = [
        m for m in mapped if m.declared_size is not None and m.size not in (UNKNOWN_SIZE, m.declared_size)
    ]
    if not differ:
        return []
    first = differ[0]
    assert first.declared_size is not None
    (w, h), (cw, ch) = first.size, first.declared_size
    return [
        f"{len(differ)} embedded images are not the size in column '{column}' "
        f"({_named([m.id for m in differ])}; {first.id}: image {w}x{h} vs column {cw}x{ch})"
    ]


def copy_record(known: KnownCopy | None, layout: CopyLayout, names: Sequence[str]) -> dict[str, Any]:
    """``provenance.copy``: the known copy it was identified as (or an unknown copy of a known layout)."""
    return {
        "repository": known.repository if known else None,
        "files": list(names),
        "layout": layout_key(layout),
        "known": known is not None,
        "records": known.records if known else None,
        "differs": known.differs if known else "",
    }


def release_check(
    bench: Benchmark,
    variant: Mapping[str, Any],
    samples: Sequence[Sample],
    options: BenchmarkOptions,
) -> dict[str, Any]:
    """``provenance.release_check``: against the release files under ``release_root``, else the digests.

    Args:
        bench: The benchmark.
        variant: The release variant the copy is read as.
        samples: The copy's samples.
        options: Its options.

    Returns:
        ``{"matches": True | False | None, "differences": [...], "checked_against": ...,
        "not_compared": ...}``.
    """
    if options.release_root:
        release_root = Path(options.release_root)
        release = bench.load(release_root, options)
        differences = compare_samples(samples, release.samples)
        return {
            "matches": not differences,
            "differences": differences,
            "checked_against": f"the release files under {release_root}",
            "not_compared": NOT_COMPARED,
        }
    entry = release_digests().get(bench.name, {}).get(variant_key(variant))
    if entry is None:
        return {
            "matches": None,
            "differences": [f"gge has no release digest of {bench.name} {variant_key(variant)}"],
            "checked_against": None,
            "not_compared": NOT_COMPARED,
        }
    differences = compare_digests(samples, entry)
    return {
        "matches": not differences,
        "differences": differences,
        "checked_against": f"gge's release digests ({DIGESTS_FILE}, {bench.name} {variant_key(variant)})",
        "not_compared": NOT_COMPARED,
    }


def refuse_or_note(
    bench: Benchmark,
    files: Sequence[Path],
    check: Mapping[str, Any],
    options: BenchmarkOptions,
    out: LoadCollector,
    known: KnownCopy | None = None,
) -> None:
    """Refuse a copy that differs from the release or cannot be checked, unless the option allows it.

    The message names the copy's file, what differs, what is known to differ in that copy (the
    known-copies table) and the option.
    """
    where = files[0] if len(files) == 1 else f"{files[0]} (+{len(files) - 1} files)"
    if check["matches"] is None:
        what = f"cannot be checked against the release ({'; '.join(check['differences'])})"
    else:
        what = f"differs from the release: {'; '.join(check['differences'])}"
    if known is not None and known.differs:
        what += f" (known of {known.repository}: {known.differs})"
    if not options.allow_copy_differences:
        raise GgeError(
            f"{bench.name}: the copy {where} {what}: set bench.{bench.name}.allow_copy_differences=true "
            "to evaluate it anyway (its headline is then not the official one)"
        )
    out.notes.append(
        f"the copy {what}; evaluated because allow_copy_differences=true: not the official headline"
    )


def load_source(bench: Benchmark, root: Path, options: BenchmarkOptions) -> LoadedBenchmark:
    """Read ``bench`` from ``root`` by its ``source`` option (the dispatch of the one loader).

    Args:
        bench: The benchmark.
        root: Its folder.
        options: Its options.

    Returns:
        The loaded benchmark.
    """
    source = str(options.source)
    if source not in SOURCES:
        raise GgeError(f"bench.{bench.name}.source={source!r}: must be one of {', '.join(SOURCES)}")
    if source == "auto":
        source = detect_source(bench, root)
    if source == "release":
        return bench.load(root, options)
    return load_copy(bench, root, options, source)
