"""What a benchmark's heading and headline say of its data: the variant, and why a headline is not official.

Readers of a results document word an entry's ``load.variant`` with :func:`variant_text` and its caveats
with :func:`headline_caveat` (a variant that is not the official one, a subtask left out, a Hub copy
that differs from the release): report.md and report.html on the headline line and in the summary,
the W&B tables' ``variant`` column (:func:`describe`), the console's load line, and compare's
headings.

Example:
    >>> variant_text({"load": {"variant": {"refusals": "miss", "denominator": 564}}})
    'refusals: miss · denominator: 564'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gge.documents.results import COPY_SOURCES, BenchmarkEntry

COPY_DIFFERS = (
    "Hub copy that differs from the release (allow_copy_differences=true): not the official headline"
)
"""What a heading says of a benchmark read from a Hub copy whose records differ from the release."""
COPY_UNCHECKED = (
    "Hub copy not checked against the release (allow_copy_differences=true): not the official headline"
)
"""What it says of a Hub copy gge could not check against the release."""


def variant_text(entry: BenchmarkEntry) -> str:
    """``key: value`` of each of the entry's ``load.variant`` keys joined by `` · ``; "" without one.

    The one wording of the report.md and report.html headings and the W&B tables.

    Example:
        >>> variant_text({"load": {"variant": {"refusals": "scored", "denominator": 564}}})
        'refusals: scored · denominator: 564'
        >>> variant_text({})
        ''
    """
    load = entry.get("load")
    return variant_words((load["variant"] if load is not None else None) or {})


def variant_words(variant: Mapping[str, Any]) -> str:
    """``key: value`` of each key of a variant joined by `` · `` (:func:`variant_text`).

    Example:
        >>> variant_words({"language": "cn"}), variant_words({})
        ('language: cn', '')
    """
    return " · ".join(f"{key}: {value}" for key, value in variant.items())


def headline_caveat(entry: BenchmarkEntry) -> str:
    """Why the entry's headline is not the benchmark's published one, or "" when it is.

    The benchmark's own caveat for the run's options (``load.headline_caveat``: a variant that is not
    the official one, a subtask left out), else the Hub-copy warning (:func:`copy_warning`).

    Example:
        >>> headline_caveat({"load": {"headline_caveat": "refusals left out"}}), headline_caveat({})
        ('refusals left out', '')
    """
    load = entry.get("load")
    caveat = load.get("headline_caveat") if load is not None else None
    return caveat or copy_warning(entry)


def copy_warning(entry: BenchmarkEntry) -> str:
    """Why the entry's headline is not the official one because of where its records came from, or "".

    A Hub copy (``load.provenance.source`` parquet or tsv) that ran only because
    ``allow_copy_differences=true`` was set: :data:`COPY_DIFFERS` when ``release_check.matches`` is
    False, :data:`COPY_UNCHECKED` when gge could not check it (None).

    Example:
        >>> prov = {"source": "parquet", "release_check": {"matches": False}, "allowed_differences": True}
        >>> copy_warning({"load": {"provenance": prov}}) == COPY_DIFFERS, copy_warning({"load": {}})
        (True, '')
    """
    load = entry.get("load")
    provenance = load.get("provenance") if load is not None else None
    if (
        provenance is None
        or provenance.get("source") not in COPY_SOURCES
        or not provenance["allowed_differences"]
    ):
        return ""
    matches = provenance["release_check"].get("matches")
    if matches is True:
        return ""
    return COPY_DIFFERS if matches is False else COPY_UNCHECKED


def describe(variant: Mapping[str, Any], caveat: str | None) -> str:
    """The variant's words, then ``not official: <caveat>`` when the headline is not the published one.

    Example:
        >>> describe({"refusals": "miss"}, "refusals counted as misses"), describe({}, None)
        ('refusals: miss · not official: refusals counted as misses', '')
    """
    words = [variant_words(variant)] if variant else []
    return " · ".join([*words, *([f"not official: {caveat}"] if caveat else [])])


def entry_description(entry: BenchmarkEntry) -> str:
    """:func:`describe` of an entry: its ``load.variant`` and its :func:`headline_caveat`.

    Example:
        >>> entry_description({"load": {"variant": {}, "headline_caveat": "two of three subtasks"}})
        'not official: two of three subtasks'
    """
    load = entry.get("load")
    return describe((load["variant"] if load is not None else None) or {}, headline_caveat(entry) or None)
