"""Reading a benchmark from a Hub copy, checking it against the release, and the ``source`` choice.

``bench.<name>.source`` says what the benchmark's folder holds: ``release`` (the official layout,
read by the benchmark's own loader), ``parquet`` or ``tsv`` (a Hub copy, mapped by
:mod:`gge.benchmarks.hub_copies` onto exactly the release's Samples, images left embedded), or
``auto`` (the release when its annotation files are there, else the one kind of copy file the folder
holds). A copy's records are checked against the release: against the digests gge ships
(``release_digests.json``: count, ids, regions to 1e-3 pixel, instructions, image sizes and labels,
per benchmark and variant) and, with ``bench.<name>.release_root``, record by record against release
files. A copy whose ids are numbered by row position (ScreenSpot's, VenusBench's) is first matched
to the release's records by content (:func:`match_rows`: screenshot name and instruction, the box to
break ties), so rows in another order still match, and a dropped or extra row is named with its
neighbour (``web_10 after web_9``) rather than shifting every id after it. Screenshot pixels are
not compared, only their sizes: each embedded image's size is read from its header, and a copy
whose own size column says otherwise differs. A copy that differs, or
that cannot be checked, is refused unless ``bench.<name>.allow_copy_differences=true``; either way
``provenance`` says what was read.

The record keys, digests and their comparison are :mod:`gge.benchmarks.hub_digests`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
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
from gge.benchmarks.hub_digests import (
    DIGESTS_FILE,
    RECORD_HASH_CHARS,
    compare_digests,
    compare_samples,
    named_ids,
    record_hashes,
    region_key,
    release_digests,
    sha256_hex,
    variant_key,
)
from gge.benchmarks.hub_files import COLUMN_READERS, CopyRow, copy_files, read_parquet_rows, read_tsv_rows
from gge.benchmarks.hub_layouts import CopyLayout, Mapped
from gge.documents.results import COPY_SOURCES
from gge.errors import GgeError
from gge.types import Sample

SOURCES = ("auto", "release", *COPY_SOURCES)
"""The values of ``bench.<name>.source``."""

NOT_COMPARED = "screenshot pixels (only each image's size, read from the embedded image's header)"
"""``provenance.release_check.not_compared``: what the release check does not look at."""


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
# Rows numbered by position: matched to the release's records by content


@dataclass(frozen=True)
class Matching:
    """A copy's rows numbered by position, matched to the release's records by content.

    Attributes:
        mapped: The rows under the release's ids, in the release's order; a row that matches no
            record follows the row before it in the copy, under an id the release does not have.
        release_ids: The release's ids in its order, as far as known (against the digests: the
            numbered ids of each prefix the copy has).
        after: Each row matching no record -> the id of the row before it in the copy (None: first).
    """

    mapped: list[Mapped]
    release_ids: list[str]
    after: dict[str, str | None]


Fits = Callable[[Mapped, str, int], bool]
"""Whether a row fits a release id at a level: 2 instruction and box (and screenshot name), 1 the
instruction (and name)."""
Candidates = Callable[[Mapped, int], list[str]]
"""The release ids a row fits at a level, in the release's order."""


def _numbered(sample_id: str) -> tuple[str, int] | None:
    prefix, _, number = sample_id.rpartition("_")
    return (prefix, int(number)) if prefix and number.isdigit() else None


def _screenshot(m: Mapped, layout: CopyLayout) -> str | None:
    value = m.row.values.get(layout.name_column) if layout.name_column else None
    return Path(value).name if isinstance(value, str) and value else None


def release_fits(release: Sequence[Sample], layout: CopyLayout) -> tuple[list[str], Fits, Candidates]:
    """Matching against the release's records: screenshot name and instruction, then the box.

    Args:
        release: The release loader's samples.
        layout: The copy's layout (its screenshot-name column).

    Returns:
        The release ids in order, and the fit and candidate tests.
    """
    index: dict[tuple[Any, ...], list[str]] = {}
    keys: dict[str, dict[tuple[Any, ...], None]] = {}
    for s in release:
        name, region = Path(s.image_path).name, region_key(s.region)
        mine = {
            (2, name, s.instruction, region): None,
            (2, None, s.instruction, region): None,
            (1, name, s.instruction): None,
            (1, None, s.instruction): None,
        }
        keys[s.id] = mine
        for entry in mine:
            index.setdefault(entry, []).append(s.id)

    def key(m: Mapped, level: int) -> tuple[Any, ...]:
        name = _screenshot(m, layout)
        return (2, name, m.instruction, region_key(m.region)) if level == 2 else (1, name, m.instruction)

    def fits(m: Mapped, sid: str, level: int) -> bool:
        return key(m, level) in keys.get(sid, {})

    def candidates(m: Mapped, level: int) -> list[str]:
        return index.get(key(m, level), [])

    return [s.id for s in release], fits, candidates


def digest_fits(
    mapped: Sequence[Mapped], release: Mapping[str, Any], layout: CopyLayout
) -> tuple[list[str], Fits, Candidates]:
    """Matching against the release's digests: the per-record hashes of instruction and box.

    The release's ids of each prefix the copy has are found by their hashes (``<prefix>_0``,
    ``_1``, ... while the release has them); the prefixes follow ``layout.prefix_order``. A row is
    moved to another record only when instruction and box both fit it (by instruction alone it
    keeps its own id, where that fits).

    Args:
        mapped: The copy's rows.
        release: The release's digests.
        layout: The copy's layout.

    Returns:
        The release ids in order, and the fit and candidate tests.
    """
    ids, instructions, regions = (
        record_hashes(release.get(f"{f}_records", "")) for f in ("ids", "instructions", "regions")
    )
    seen = list(dict.fromkeys(n[0] for m in mapped if (n := _numbered(m.id)) is not None))
    prefixes = [p for p in layout.prefix_order if p in seen] + [
        p for p in seen if p not in layout.prefix_order
    ]
    by_prefix: dict[str, list[str]] = {}
    for prefix in prefixes:
        found = by_prefix.setdefault(prefix, [])
        while (
            len(found) < int(release["records"])
            and sha256_hex(f"{prefix}_{len(found)}")[:RECORD_HASH_CHARS] in ids
        ):
            found.append(f"{prefix}_{len(found)}")

    def fits(m: Mapped, sid: str, level: int) -> bool:
        if sha256_hex(f"{sid}\t{m.instruction}")[:RECORD_HASH_CHARS] not in instructions:
            return False
        return level == 1 or sha256_hex(f"{sid}\t{region_key(m.region)}")[:RECORD_HASH_CHARS] in regions

    def candidates(m: Mapped, level: int) -> list[str]:
        # Another record by its instruction alone is not looked for: one 6-hex hash would find a wrong
        # one for about 3 in 100 rows of a 500-record split (instruction and box: 1 in 400,000).
        numbered = _numbered(m.id)
        if numbered is None or level < 2:
            return []
        return [sid for sid in by_prefix.get(numbered[0], []) if fits(m, sid, level)]

    return [sid for p in prefixes for sid in by_prefix[p]], fits, candidates


def match_rows(
    mapped: Sequence[Mapped], release_ids: Sequence[str], fits: Fits, candidates: Candidates
) -> Matching:
    """Give each row numbered by position the id of the release record it holds.

    A row keeps its own id where that record fits it; else it takes the first free record that
    fits: first by instruction and box (screenshot name too, where known), then by instruction
    alone (a changed box stays a box difference). A row fitting none keeps its id if the release
    has that record free (then its fields are compared as they are), else it is an extra row under
    a new number of its prefix. Duplicated records are taken in turn.

    Args:
        mapped: The copy's rows, in the copy's order (ids by position).
        release_ids: The release's ids in its order.
        fits: Whether a row fits a release id at a level.
        candidates: The ids a row fits at a level.

    Returns:
        The rows under the release's ids, in its order, and what is needed to name the others.
    """
    valid = set(release_ids)
    ids: list[str | None] = [None] * len(mapped)
    used: set[str] = set()
    for level in (2, 1):
        for own_only in (True, False):
            for k, m in enumerate(mapped):
                if ids[k] is not None:
                    continue
                if m.id in valid and m.id not in used and fits(m, m.id, level):
                    pick: str | None = m.id
                elif own_only:
                    continue
                else:
                    pick = next((c for c in candidates(m, level) if c not in used), None)
                if pick is not None:
                    ids[k] = pick
                    used.add(pick)
    for k, m in enumerate(mapped):
        if ids[k] is None and m.id in valid and m.id not in used:
            ids[k] = m.id
            used.add(m.id)
    keep = {m.id for k, m in enumerate(mapped) if ids[k] is None and m.id not in valid}  # extra, own id free
    taken = used | valid | keep
    order = {sid: i for i, sid in enumerate(release_ids)}
    out: list[tuple[tuple[int, int, int], Mapped]] = []
    after: dict[str, str | None] = {}
    previous: str | None = None
    place = -1
    for k, m in enumerate(mapped):
        sid = ids[k]
        if sid is None:
            sid = m.id
            if sid not in keep:
                numbered = _numbered(m.id)
                prefix, n = numbered if numbered else (m.id, 0)
                while f"{prefix}_{n}" in taken:
                    n += 1
                sid = f"{prefix}_{n}"
            taken.add(sid)
            after[sid] = previous
            key = (place, 1, k)
        else:
            place = order[sid]
            key = (place, 0, 0)
        out.append((key, m if sid == m.id else replace(m, id=sid)))
        previous = sid
    out.sort(key=lambda item: item[0])
    return Matching([m for _, m in out], list(release_ids), after)


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
    variant = layout.variant(options, len(mapped))
    release = bench.load(Path(options.release_root), options) if options.release_root else None
    entry = release_digests().get(bench.name, {}).get(variant_key(variant))
    matching = None
    if layout.numbered and (release is not None or entry is not None):
        fitting = (
            release_fits(release.samples, layout)
            if release is not None
            else digest_fits(mapped, entry or {}, layout)
        )
        matching = match_rows(mapped, *fitting)
        mapped = matching.mapped
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
    names = [p.name for p in files]
    known = identify(bench.name, kind, names, layout)
    check = release_check(bench, variant, out.samples, options, release, matching)
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
        f"({named_ids([m.id for m in differ])}; {first.id}: image {w}x{h} vs column {cw}x{ch})"
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
    release: LoadedBenchmark | None = None,
    matching: Matching | None = None,
) -> dict[str, Any]:
    """``provenance.release_check``: against the release files under ``release_root``, else the digests.

    Args:
        bench: The benchmark.
        variant: The release variant the copy is read as.
        samples: The copy's samples.
        options: Its options.
        release: The release loaded from ``release_root`` (None: loaded here when the option is set).
        matching: How rows numbered by position were matched to the release (names the missing
            and extra rows' neighbours).

    Returns:
        ``{"matches": True | False | None, "differences": [...], "checked_against": ...,
        "not_compared": ...}``. Against release files whose screenshots are missing or unreadable,
        the image sizes are not checked: ``matches`` is then None unless something else differs.
    """
    after = matching.after if matching else None
    if options.release_root:
        release_root = Path(options.release_root)
        if release is None:
            release = bench.load(release_root, options)
        differences = compare_samples(samples, release.samples, after)
        unsized = [s for s in release.samples if s.image_size == UNKNOWN_SIZE]
        if unsized:
            differences.append(
                f"image sizes not checked: the screenshots of {len(unsized)} of the release's "
                f"{len(release.samples)} records are missing or unreadable under {release_root} "
                f"(first: {unsized[0].image_path})"
            )
        return {
            "matches": (None if len(differences) == 1 else False) if unsized else not differences,
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
    differences = compare_digests(samples, entry, matching.release_ids if matching else (), after)
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
        check_files = (
            ""
            if options.release_root
            else f"set bench.{bench.name}.release_root=DIR (a folder holding the release's annotation "
            "files and screenshots) to check it record by record against them, or "
        )
        raise GgeError(
            f"{bench.name}: the copy {where} {what}: {check_files}set "
            f"bench.{bench.name}.allow_copy_differences=true to evaluate it anyway (its headline is then "
            "not the official one)"
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
    gt_type = str(getattr(options, "gt_type", "positive"))  # ScreenSpot-Pro's negative pass
    if gt_type != "positive":
        raise GgeError(
            f"bench.{bench.name}.gt_type={gt_type}: reads the release's annotation files as negative "
            f"instructions; a {source} copy is read as released (positives): point root= at the files"
        )
    return load_copy(bench, root, options, source)
