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
NO_OFFICIAL_SCORER = "gge's rule (no official scorer)"
"""How the caveat of a benchmark that publishes no scorer begins (:func:`gge_rule`): the one wording
of WebClick's and RUC's headlines in report.md, report.html, the summary and the console."""


def gge_rule(benchmark: str, how: str) -> str:
    """The headline caveat of a benchmark without an official scorer: whose rule, then how it scores.

    Every such benchmark's :meth:`~gge.benchmarks.base.Benchmark.headline_caveat` returns it, so each
    report labels their headlines alike (``not official: gge's rule (no official scorer): ...``).

    Example:
        >>> gge_rule("RUC", "a hit is the point in correct_box")
        "gge's rule (no official scorer): RUC publishes none; a hit is the point in correct_box"
    """
    return f"{NO_OFFICIAL_SCORER}: {benchmark} publishes none; {how}"


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


# ----------------------------------------------------------------------------------------------
# What the loader left out and the prediction lines no sample answers: report.md, report.html


SHOWN_IDS = 5
"""How many ids a line names before ``...``."""


def _ids(ids: list[str]) -> str:
    """The first :data:`SHOWN_IDS` ids, then ``, ...`` when there are more."""
    return ", ".join(ids[:SHOWN_IDS]) + (", ..." if len(ids) > SHOWN_IDS else "")


def left_out(entry: BenchmarkEntry) -> dict[str, list[str]]:
    """The records the loader left out on purpose, by why (``load.left_out``); {} when none or unsaid.

    Example:
        >>> left_out({"load": {"left_out": {"by its id": ["998"]}}})
        {'by its id': ['998']}
        >>> left_out({})
        {}
    """
    load = entry.get("load")
    return {} if load is None else dict(load.get("left_out") or {})


def data_notes(entry: BenchmarkEntry) -> list[str]:
    """What the entry's data says beside its figures, one line each: the one wording of both reports.

    The loader's notes (``load.notes``: what it left out and why, labels it filled in), then the
    replayed file's lines that no sample answers (:func:`unmatched_notes`).

    Example:
        >>> entry = {"unmatched_predictions": ["998", "x1"],
        ...          "load": {"notes": ["record 998 left out"], "left_out": {"by its id": ["998"]}}}
        >>> for line in data_notes(entry):  # doctest: +NORMALIZE_WHITESPACE
        ...     print(line)
        Loader: record 998 left out
        Prediction lines of records the loader left out as the release's code does (by its id): 1 (998):
            not scored, not stray
        Prediction lines that match no sample: 1 (x1): not scored
    """
    load = entry.get("load")
    notes = (load.get("notes") if load is not None else None) or []
    return [f"Loader: {note}" for note in notes] + unmatched_notes(entry)


def unmatched_notes(entry: BenchmarkEntry) -> list[str]:
    """The replayed file's lines no sample answers (``unmatched_predictions``), one line a kind.

    Those of records the loader left out on purpose (``load.left_out``, as the release's code does:
    not stray), then the stray ones, each with its count and first :data:`SHOWN_IDS` ids; [] when
    there are none.

    Example:
        >>> unmatched_notes({"unmatched_predictions": ["x1", "x2"]})
        ['Prediction lines that match no sample: 2 (x1, x2): not scored']
    """
    unmatched = entry.get("unmatched_predictions") or []
    lines: list[str] = []
    placed: set[str] = set()
    for why, ids in left_out(entry).items():
        chosen = set(ids)
        answered = [i for i in unmatched if i in chosen]
        placed.update(answered)
        if answered:
            lines.append(
                f"Prediction lines of records the loader left out as the release's code does ({why}): "
                f"{len(answered)} ({_ids(answered)}): not scored, not stray"
            )
    stray = [i for i in unmatched if i not in placed]
    if stray:
        lines.append(f"Prediction lines that match no sample: {len(stray)} ({_ids(stray)}): not scored")
    return lines
