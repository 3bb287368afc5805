"""What the release check of a Hub copy compares: record keys, the digests gge ships, their differences.

A record's keys (:func:`record_keys`) are its id, its region to 1e-3 pixel with its hit rule
(:func:`region_key`), its instruction, its image size and its labels; :func:`digests` hashes them per
benchmark and variant (``release_digests.json``, written by tools/release_digests.py), and
:func:`compare_digests` / :func:`compare_samples` say what a copy's records change against them or
against release files. :mod:`gge.benchmarks.hub` reads the copies and runs the check.

Example:
    >>> from gge.types import Box
    >>> region_key(Box(1, 2, 3.04, 4.0004))
    'bbox/pixel 1.000 2.000 3.040 4.000'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from gge.benchmarks.base import UNKNOWN_SIZE
from gge.benchmarks.hub_layouts import PIXEL_DECIMALS
from gge.types import Absent, Polygon, Region, Sample

DIGESTS_FILE = "release_digests.json"
"""The release digests shipped beside this module (written by tools/release_digests.py)."""

RECORD_HASH_CHARS = 6
"""Hex characters kept of each record's hash in the digests file (to count what differs: a changed
record passes for unchanged with odds of about n / 16.7 million for n records)."""

MAX_NAMED = 5
"""Differences name at most this many ids."""


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
    point += "/strict" if region.strict else ""  # GroundUI excludes the edges
    return f"bbox/{region.space}{point} " + " ".join(_round(v) for v in region.pixel_box())


@cache
def _derived_labels(benchmark: str) -> tuple[str, ...]:
    """The benchmark's ``derived_labels`` (none for a name gge does not know)."""
    from gge.benchmarks import REGISTRY  # the registry imports this module's users

    bench = REGISTRY.get(benchmark)
    return bench.derived_labels if bench is not None else ()


def record_keys(sample: Sample) -> dict[str, str]:
    """The text each digest hashes for one sample (keyed by what it checks).

    Args:
        sample: The sample.

    Returns:
        ``{"ids": ..., "regions": ..., "instructions": ..., "sizes": ..., "labels": ...}`` (the labels
        without the benchmark's ``derived_labels``).
    """
    derived = _derived_labels(sample.benchmark)
    labels = json.dumps(
        {k: sample.labels[k] for k in sorted(sample.labels) if k not in derived}, ensure_ascii=False
    )
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


def sha256_hex(text: str) -> str:
    """The hex SHA-256 of a text (UTF-8)."""
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
        out[f] = sha256_hex("\n".join(texts))
        if f in RECORD_FIELDS:
            out[f"{f}_records"] = "".join(sorted(sha256_hex(t)[:RECORD_HASH_CHARS] for t in texts))
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


def record_hashes(joined: str) -> set[str]:
    """The per-record hashes of a digests entry (its :data:`RECORD_HASH_CHARS`-character pieces)."""
    return {joined[i : i + RECORD_HASH_CHARS] for i in range(0, len(joined), RECORD_HASH_CHARS)}


def compare_digests(
    samples: Sequence[Sample],
    release: Mapping[str, Any],
    release_ids: Sequence[str] = (),
    after: Mapping[str, str | None] | None = None,
) -> list[str]:
    """What differs between samples and a release's digests, one line each (empty: they match).

    Args:
        samples: The copy's samples.
        release: The release's digests for the same variant.
        release_ids: The release's ids in its order, as far as known (:class:`Matching`): a missing
            one is named with the record before it.
        after: An extra copy row's id -> the id of the row before it in the copy (named with it).

    Returns:
        The differences: the count, then per field how many records differ. A field whose digest
        differs though no record is located by the short hashes (a short-hash collision, or a
        field with none kept) is still listed, so a copy never passes while a digest differs.
    """
    mine = digests(samples)
    out: list[str] = []
    if mine["records"] != release["records"]:
        out.append(f"count {mine['records']} vs release {release['records']}")
    theirs_ids = record_hashes(release["ids_records"])
    my_ids = {sha256_hex(s.id)[:RECORD_HASH_CHARS]: s.id for s in samples}
    extra = [sid for h, sid in my_ids.items() if h not in theirs_ids]
    missing = len(theirs_ids - set(my_ids))
    if extra:
        out.append(f"{len(extra)} ids not in the release ({named_ids(_placed(extra, after or {}))})")
    if missing:
        named = [i for i in release_ids if i not in {s.id for s in samples}]
        where = f" ({named_ids(_placed(named, _before(release_ids)))})" if named else ""
        out.append(f"{missing} release ids missing{where}")
    ids_differ = bool(extra or missing)  # then every field's digest differs with the ids, if nothing else
    if mine["ids"] != release["ids"] and not ids_differ:
        out.append(f"{WHAT['ids']} differ (records not located)")
    for f in FIELDS[1:]:
        if mine[f] == release[f]:
            continue
        differ: list[str] = []
        if f"{f}_records" in release:
            theirs = record_hashes(release[f"{f}_records"])
            differ = [
                s.id
                for s in samples
                if sha256_hex(s.id)[:RECORD_HASH_CHARS] in theirs_ids
                and sha256_hex(record_keys(s)[f])[:RECORD_HASH_CHARS] not in theirs
            ]
        if differ:
            out.append(f"{len(differ)} {WHAT[f]} differ ({named_ids(differ)})")
        elif not ids_differ:
            kept = f"{f}_records" in release
            out.append(f"{WHAT[f]} differ" + (" (records not located)" if kept else ""))
    return out


def compare_samples(
    samples: Sequence[Sample],
    release: Sequence[Sample],
    after: Mapping[str, str | None] | None = None,
) -> list[str]:
    """What differs between samples and the release's, record by record (naming the first ids).

    A release id missing is named with the release record before it, an extra id with the copy
    row before it (``after``).

    Args:
        samples: The copy's samples.
        release: The release loader's samples.
        after: An extra copy row's id -> the id of the row before it in the copy.

    Returns:
        One line per kind of difference (empty: they match). The image sizes of release records
        whose screenshot is missing or unreadable are not compared: one line says how many, and
        where.
    """
    out: list[str] = []
    if len(samples) != len(release):
        out.append(f"count {len(samples)} vs release {len(release)}")
    theirs = {s.id: record_keys(s) for s in release}
    mine = {s.id: record_keys(s) for s in samples}
    extra = [i for i in mine if i not in theirs]
    missing = [i for i in theirs if i not in mine]
    if extra:
        out.append(f"{len(extra)} ids not in the release ({named_ids(_placed(extra, after or {}))})")
    if missing:
        before = _before([s.id for s in release])
        out.append(f"{len(missing)} release ids missing ({named_ids(_placed(missing, before))})")
    unsized = {s.id for s in release if s.image_size == UNKNOWN_SIZE}
    for f in FIELDS[1:]:
        differ = [
            i
            for i, k in mine.items()
            if i in theirs and k[f] != theirs[i][f] and not (f == "sizes" and i in unsized)
        ]
        if differ:
            first = differ[0]
            out.append(
                f"{len(differ)} {WHAT[f]} differ ({named_ids(differ)}; {first}: "
                f"{mine[first][f].split(chr(9), 1)[1]!r} vs release {theirs[first][f].split(chr(9), 1)[1]!r})"
            )
    return out


def _before(ids: Sequence[str]) -> dict[str, str | None]:
    """Each id -> the id before it (None for the first)."""
    return {sid: ids[i - 1] if i else None for i, sid in enumerate(ids)}


def _placed(ids: Sequence[str], before: Mapping[str, str | None]) -> list[str]:
    """Ids named with their neighbour: ``web_10 after web_9``, ``web_0 at the start`` (as known)."""
    return [
        sid if sid not in before else f"{sid} after {before[sid]}" if before[sid] else f"{sid} at the start"
        for sid in ids
    ]


def named_ids(ids: Sequence[str]) -> str:
    """Ids for a message: the first :data:`MAX_NAMED`, then how many more."""
    more = f", +{len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else ""
    return ", ".join(ids[:MAX_NAMED]) + more
