"""Readable tables: each benchmark laid out like its official table, as Markdown.

The same text is printed and written to ``output_dir/report.md``; numbers are rounded to one
decimal here only (results.json keeps them unrounded).

Example:
    >>> fmt(56.4321), fmt(None)
    ('56.4', '–')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gge.documents.caveats import copy_warning, data_notes, headline_caveat, variant_text
from gge.documents.results import (
    BenchmarkEntry,
    GroupStats,
    HeadlineInterval,
    ImageTokenCheck,
    Interval,
    Invocation,
    MeanStats,
    OfficialTable,
    Subset,
    oracle_at,
    pass_at,
    share,
)
from gge.report.cost_tables import Section, cost_sections
from gge.report.critic_tables import critic_sections
from gge.report.numbers import fmt as fmt
from gge.report.numbers import fmt_headline
from gge.report.numbers import fmt_signed as fmt_signed
from gge.types import STRATEGIES


def _pair(stats: GroupStats, k: int) -> str:
    if not stats["samples"]:
        return "–"
    if k == 1:
        return fmt(stats["top1"])
    return f"{fmt(stats['top1'])} / {fmt(oracle_at(stats, k))}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table with columns padded for reading in a terminal."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def render_table(t: OfficialTable, k: int) -> str:
    """One official table: a 2-D grid of "Top-1 / Oracle@K" cells, or a 1-D list with counts.

    With ``k == 1`` (a one-answer run) the cells are Top-1 only.
    """
    title = f"### {t['title']}"
    if t["cols"] is None:
        header = [t["rows"], "n", "Top-1"] + ([] if k == 1 else [f"Oracle@{k}"])

        def cells(s: GroupStats) -> list[str]:
            return [str(s["samples"]), fmt(s["top1"])] + ([] if k == 1 else [fmt(oracle_at(s, k))])

        rows = [[v, *cells(s)] for v, s in t["row_avg"].items()]
        rows.append(["all", *cells(t["all"])])
        return f"{title}\n\n{markdown_table(header, rows)}"
    cols = list(t["col_values"])
    grid, col_avg = t["cells"], t["col_avg"]
    header = [f"{t['rows']} \\ {t['cols']}", *cols, "avg"]
    rows = [
        [rv, *(_pair(grid[rv][cv], k) for cv in cols), _pair(t["row_avg"][rv], k)] for rv in t["row_values"]
    ]
    rows.append(["avg", *(_pair(col_avg[cv], k) for cv in cols), _pair(t["all"], k)])
    what = "Top-1" if k == 1 else f"Top-1 / Oracle@{k}"
    return f"{title} ({what}, %)\n\n{markdown_table(header, rows)}"


def subset_text(subset: Subset | None, titles: Mapping[str, str]) -> str:
    """What a subset run says of itself (results.json ``subset``), or "" for a full run.

    The one wording of report.md and the console (under ``Protocol:``), report.html's banner,
    ``gge compare``'s note and ``gge watch``'s step line. Only the benchmarks ``max_samples`` cut are
    named.

    Example:
        >>> subset_text({"max_samples": 5, "benchmarks": {"b": {"evaluated": 5, "total": 36},
        ...     "c": {"evaluated": 4, "total": 4}}}, {"b": "B", "c": "C"})
        'subset: first 5 of 36 samples (B); max_samples=5: not comparable with published numbers'
        >>> subset_text(None, {})
        ''
    """
    if subset is None:
        return ""
    cut = []
    for name, c in subset["benchmarks"].items():
        if c["evaluated"] >= c["total"]:
            continue
        cut.append(f"first {c['evaluated']} of {c['total']} samples ({titles.get(name, name)})")
    n = subset["max_samples"]
    what = ", ".join(cut) if cut else f"first {n} samples"
    return f"subset: {what}; max_samples={n}: not comparable with published numbers"


def answered_line(model: Mapping[str, Any]) -> str | None:
    """Who answered, for the head of report.md and report.html (None: a run that asked no model).

    An endpoint: the engine (what the probe learnt: ``vLLM 0.11.0``, ``SGLang ...``, else the HTTP
    ``Server`` header), its base URL and the served model (the answers' ``model`` field where the
    server returned one, else the name asked); in process: the checkpoint and transformers' version.

    Args:
        model: results.json's ``model`` record.

    Example:
        >>> answered_line({"backend": {"backend": "openai", "base_url": "http://h:8000/v1", "model": "q",
        ...     "probe": {"engine": {"name": "vLLM 0.11.0"}, "answers": {"model": ["q"]}}}})
        'Answered by: vLLM 0.11.0 at http://h:8000/v1, model q'
        >>> answered_line({"backend": {"backend": "transformers", "checkpoint": "/ckpt",
        ...     "transformers": "4.57"}})
        'Answered by: /ckpt, in process (transformers 4.57)'
    """
    backend = model.get("backend")
    if not isinstance(backend, Mapping):
        return None
    if backend.get("backend") == "transformers" and backend.get("checkpoint"):
        version = f" {backend['transformers']}" if backend.get("transformers") else ""
        return f"Answered by: {backend['checkpoint']}, in process (transformers{version})"
    if backend.get("backend") != "openai":
        return None

    def part(record: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        value = record.get(key)
        return value if isinstance(value, Mapping) else {}

    probe = part(backend, "probe")
    engine, answers = part(probe, "engine"), part(probe, "answers")
    name = engine.get("name") or (f"a server ({engine['server']})" if engine.get("server") else None)
    served, asked = answers.get("model"), backend.get("model")
    if isinstance(served, list):  # the distinct names the answers gave
        served = ", ".join(map(str, served)) or None
    shown = f"{served} (asked as {asked})" if served and asked and served != asked else served or asked
    return f"Answered by: {name or 'an OpenAI-compatible server'} at {backend.get('base_url')}, model {shown}"


def head_lines(
    protocol: str,
    subset: Subset | None,
    titles: Mapping[str, str],
    notes: Sequence[str] = (),
    setup: str | None = None,
) -> list[str]:
    """The head of a run's report, one line each: the one head of report.md and the console.

    The protocol, the subset line of a subset run, the cost setup where given, then each note.

    Example:
        >>> head_lines("demo", None, {}, ["a note"])
        ['Protocol: demo', 'Note: a note']
    """
    subset_line = subset_text(subset, titles)
    return [
        f"Protocol: {protocol}",
        *([subset_line] if subset_line else []),
        *([setup] if setup else []),
        *(f"Note: {n}" for n in notes),
    ]


_USAGE_WORDS = (
    ("requests", "requests answered", "request answered"),
    ("retries", "retries", "retry"),
    ("overloads", "overloads", "overload"),
    ("failed", "failed for good", "failed for good"),
    ("outages", "outages", "outage"),
    ("unreachable_s", "s unreachable", "s unreachable"),
    ("prompt_tokens", "prompt tokens", "prompt token"),
    ("completion_tokens", "completion tokens", "completion token"),
)
"""The counters of an endpoint's ``usage`` the report names, in its order, with their words (many, one)."""

_WHY_CHARS = 80
"""Characters of a stopped invocation's error shown in the ``resumed:`` line (results.json has it whole)."""


def usage_text(usage: Mapping[str, object]) -> str:
    """An endpoint's usage counters in words (those of :data:`_USAGE_WORDS` it records).

    Example:
        >>> usage_text({"requests": 303, "retries": 58, "prompt_tokens": 1234567, "unreachable_s": 45.25})
        '303 requests answered, 58 retries, 45.2 s unreachable, 1,234,567 prompt tokens'
        >>> usage_text({"requests": 2, "retries": 1, "outages": 1})
        '2 requests answered, 1 retry, 1 outage'
    """
    parts = []
    for key, many, one in _USAGE_WORDS:
        value = usage.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        number = f"{value:,.1f}" if isinstance(value, float) else f"{value:,}"
        parts.append(f"{number} {one if value == 1 and isinstance(value, int) else many}")
    return ", ".join(parts)


def invocation_lines(invocations: Sequence[Invocation], model: Mapping[str, Any]) -> list[str]:
    """The report's lines on the run's invocations and its endpoint usage (summed over them).

    ``resumed: N invocations (...)`` when the run took more than one (each with how it ended and the
    samples it finished), then one ``usage`` line per endpoint backend that counts its requests.

    Args:
        invocations: results.json ``invocations``.
        model: results.json ``model`` (its counters already summed over the invocations).

    Example:
        >>> invs = [{"end": "interrupted", "samples": 20}, {"end": "finished", "samples": 16}]
        >>> for line in invocation_lines(invs, {"backend": {"usage": {"requests": 40, "retries": 3}}}):
        ...     print(line)
        resumed: 2 invocations (#1 interrupted, 20 samples; #2 finished, 16 samples)
        usage, summed over the 2 invocations: 40 requests answered, 3 retries
    """
    n = len(invocations)
    lines = []
    if n > 1:
        ends = []
        for i, inv in enumerate(invocations, 1):
            why = inv.get("why")
            said = f" ({why[:_WHY_CHARS]}{'...' if len(why) > _WHY_CHARS else ''})" if why else ""
            ends.append(f"#{i} {inv['end']}{said}, {inv['samples']} samples")
        lines.append(f"resumed: {n} invocations ({'; '.join(ends)})")
    summed = f", summed over the {n} invocations" if n > 1 else ""
    for key, name in (("backend", "usage"), ("critic_backend", "critic usage")):
        record = model.get(key)
        usage = record.get("usage") if isinstance(record, Mapping) else None
        if isinstance(usage, Mapping) and "requests" in usage:
            lines.append(f"{name}{summed}: {usage_text(usage)}")
    return lines


def image_tokens_text(check: ImageTokenCheck) -> str | None:
    r"""What a benchmark's image-token check found, in words (None: no answer differs).

    The one wording of report.md (:func:`image_tokens_lines`), report.html's warning and the
    console's: how many proposer answers cost other image tokens than the preset expects, fewer or
    more, the ratio observed/expected (summed over those answers), the first such answer, and the
    likely cause.

    Args:
        check: results.json's ``benchmarks.<name>.image_tokens``
            (:func:`gge.scoring.image_tokens.check_requests`).

    Example:
        >>> text = image_tokens_text({"source": "prompt", "factor": 28, "requests": 40, "differ": 40,
        ...     "unchecked": 0, "ratio": 0.3311, "tolerance": "...",
        ...     "example": {"id": "p7", "size": [1288, 728], "expected": 1196, "observed": 396}})
        >>> for part in text.replace(" (", "\n(").replace(": the", ":\nthe").splitlines():
        ...     print(part)
        the model saw fewer image tokens than the preset expects in 40 of 40 proposer answers
        (observed/expected 0.33; e.g. p7: 396 for its 1288x728 screenshot, 1196 expected):
        the server likely resizes with its own max_pixels/min_pixels
        (start it with the preset's)
        >>> image_tokens_text({"source": "prompt", "requests": 40, "differ": 0, "ratio": None})
    """
    differ = check.get("differ")
    if not differ:
        return None
    ratio = check.get("ratio")
    how = "other"
    facts = []
    if isinstance(ratio, int | float):
        how = "fewer" if ratio < 1 else "more" if ratio > 1 else "other"
        facts.append(f"observed/expected {ratio:.2f}")
    example = check.get("example")
    if example is not None:
        w, h = example["size"]
        seen, expected = example["observed"], example["expected"]
        facts.append(f"e.g. {example['id']}: {seen} for its {w}x{h} screenshot, {expected} expected")
    said = f" ({'; '.join(facts)})" if facts else ""
    who = "server" if check.get("source") == "prompt" else "processor"
    return (
        f"the model saw {how} image tokens than the preset expects in {differ} of {check.get('requests')} "
        f"proposer answers{said}: the {who} likely resizes with its own max_pixels/min_pixels "
        "(start it with the preset's)"
    )


def image_tokens_lines(entry: BenchmarkEntry) -> list[str]:
    """report.md's warning on a benchmark whose image-token check found differing answers (else none).

    Example:
        >>> check = {"source": "measured", "requests": 4, "differ": 1, "ratio": 2.0, "example": None}
        >>> [line[:58] for line in image_tokens_lines({"image_tokens": check})]
        ['- Warning: the model saw more image tokens than the preset']
        >>> image_tokens_lines({})
        []
    """
    check = entry.get("image_tokens")
    text = None if check is None else image_tokens_text(check)
    return [] if text is None else [f"- Warning: {text}"]


def bootstrap_label(spec: HeadlineInterval) -> str:
    """How a benchmark's declared headline interval is named beside it.

    Example:
        >>> bootstrap_label({"method": "percentile", "resamples": 9999, "confidence": 0.95, "seed": 0,
        ...                  "top1": [50.0, 60.0]})
        '95% CI (percentile bootstrap, 9999 resamples, seed 0)'
    """
    level = f"{100 * spec['confidence']:g}"
    return f"{level}% CI ({spec['method']} bootstrap, {spec['resamples']} resamples, seed {spec['seed']})"


def render_benchmark(title: str, entry: BenchmarkEntry, *, k: int, strategy: str) -> str:
    """The headline lines and every table of one benchmark.

    The heading names the benchmark's variant (``load.variant``: instruction file, language, how
    refusals count, denominator) and warns when the records come from a Hub copy that differs from
    the release. The first line is the official headline (with its Wilson intervals when the
    official rule is micro; the Top-1 interval is the benchmark's own bootstrap where it declares
    one, ``headline_interval``); a macro headline is followed by the micro means and their
    intervals. With ``k == 1`` (a one-answer run) every line and table is Top-1 only: no Oracle@k,
    no selection strategies, no critic gap or gain. Last come the cost table (``cost``), the refine
    table (``refine``) and the budget table (``budget``), each only where the entry has it
    (:mod:`gge.report.cost_tables`). The loader's notes and the replayed lines no sample answers
    are listed under the headline (:func:`gge.documents.caveats.data_notes`).
    """
    n = entry["samples"]
    ci = entry["intervals"]
    off = entry["official"]
    micro = entry["micro"]
    one = k == 1

    def interval(bounds: Interval | None) -> str:
        return "" if bounds is None else f" [{fmt(bounds[0])}, {fmt(bounds[1])}]"

    variant = variant_text(entry)
    label = f" · {variant}" if variant else ""
    how = scored_text(k, strategy)
    copy = copy_warning(entry)
    warning = f" · {copy}" if copy else ""
    is_micro = off["rule"] == "micro"
    boot = entry.get("headline_interval")
    boot_ci = (
        "" if boot is None or boot["top1"] is None else f"{interval(boot['top1'])} {bootstrap_label(boot)}"
    )
    wilson = " (95% Wilson)" if is_micro and ci["top1"] is not None else ""
    top1_ci = interval(ci["top1"]) if is_micro else ""
    if is_micro and boot_ci:
        top1_ci = boot_ci  # the benchmark's own interval of its headline; Oracle@K keeps Wilson's
        wilson = "" if one or oracle_at(ci, k) is None else " (95% Wilson)"
    caveat = headline_caveat(entry)
    named = (
        f"Official headline ({off['rule']})"
        if not caveat
        else f"Headline ({off['rule']}; not official: {caveat})"
    )
    head = f"- {named}: Top-1 **{fmt_headline(off['top1'])}**{top1_ci}"
    absent = entry.get("not_in_file")
    if not one:
        o_top1, o_oracle = off["top1"], oracle_at(off, k)
        gap = None if o_top1 is None or o_oracle is None else o_oracle - o_top1
        given = f"{fmt(entry['top1_given_oracle'])}%" + ("" if is_micro else " (micro)")
        oracle_ci = interval(oracle_at(ci, k)) if is_micro else ""
        head += (
            f" · Oracle@{k} **{fmt_headline(o_oracle)}**{oracle_ci}{wilson}"
            f" · critic gap {fmt(gap)} · P(Top-1 hit | Oracle@{k} hit) {given}"
        )
    else:
        head += wilson
    if absent is not None:
        head += f" · over all {n} samples, {absent['samples']} of them not in the predictions file (misses)"
    lines = [f"## {title} — {n} samples{label} · {how}{warning}", "", head]
    if not is_micro:
        if boot_ci:  # the declared interval is of the micro Top-1
            line = f"- Micro (hits over samples): Top-1 {fmt(micro['top1'])}{boot_ci}"
            wilson_of = "" if one else f" · Oracle@{k} {fmt(oracle_at(micro, k))}{interval(oracle_at(ci, k))}"
            tail = " (95% Wilson)" if wilson_of and ci["top1"] is not None else ""
            lines.append(line + wilson_of + tail)
        else:
            line = f"- Micro (hits over samples): Top-1 {fmt(micro['top1'])}{interval(ci['top1'])}"
            if not one:
                line += f" · Oracle@{k} {fmt(oracle_at(micro, k))}{interval(oracle_at(ci, k))}"
            lines.append(line + (" (95% Wilson)" if ci["top1"] is not None else ""))
    others = [a for name, a in entry["averages"].items() if name != off["rule"] and name != "micro"]
    for a in others:
        line = f"- Also reported ({a['rule']}, not official): Top-1 {fmt(a['top1'])}"
        lines.append(line if one else f"{line} · Oracle@{k} {fmt(oracle_at(a, k))}")
    if not one:
        lines.append(
            f"- Oracle@k ({off['rule']}): "
            + " · ".join(f"@{j} {fmt(oracle_at(entry, j))}" for j in range(1, k + 1))
        )
        lines.append(
            "- Top-1 by selection (micro): "
            + " · ".join(f"{s} {fmt(entry['selection'][s])}" for s in STRATEGIES)
        )
    fe = entry["format_errors"]
    bad = entry["image_errors"]
    rate = f" ({fmt(100.0 * fe / n)}%)" if n else ""
    lines.append(
        f"- Format errors (unparseable or empty answers, scored as misses): {fe}{rate} · "
        f"image errors (unreadable screenshots): {len(bad)}"
    )
    log = entry.get("imported_log")
    if log is not None:
        lines.append(
            f"- Replayed from a published log ({log['format']}: {log['file']}): {log['lines']} lines, "
            f"{log['matched']} matched to samples, {len(log['unmatched'])} unmatched, "
            f"{len(log['ambiguous'])} ambiguous (never guessed; results.json names each)"
        )
    if absent is not None:
        first = ", ".join(absent["ids"][:5]) + (", ..." if absent["samples"] > 5 else "")
        why = "no matched line answers them" if log is not None else "no line answers them"
        lines.append(
            f"- Not in the predictions file: {absent['samples']} samples ({first}): {why}, "
            "so they are misses, not format errors · the same rule over the "
            f"{absent['lines']} samples with a line: Top-1 {fmt_headline(absent['top1'])}"
        )
    lines += [f"- {note}" for note in data_notes(entry)]
    if bad:
        lines.append(f"- Unreadable screenshots (the model was not asked; scored as misses): {len(bad)}")
        lines += [f"  - {e['error']}" for e in bad]
    lines += server_error_lines(entry)
    lines += image_tokens_lines(entry)
    if entry["critic_format_errors"]:
        n_critic = entry["critic_format_errors"]
        lines.append(f"- Critic format errors (unparseable rankings, proposer order used): {n_critic}")
    lines.append(f"- Abstentions (Top-1 says the target is absent): {entry['abstentions']}")
    decoys = entry.get("decoy_clicks")
    if decoys is not None:
        parts = [
            f"{name} {fmt(d['over_decoy_samples'])}% ({d['clicks']})"
            for name, d in decoys["by_strategy"].items()
        ]
        lines.append(
            f"- Deceptive clicks, of the {decoys['decoy_samples']} samples with a decoy ({decoys['rule']}): "
            + " · ".join(parts)
        )
    lines += render_analysis_lines(entry, k=k)
    for t in entry["tables"]:
        lines += ["", render_table(t, k)]
    for section in render_analysis_tables(entry, k=k):
        lines += ["", section]
    for part in [*critic_sections(entry), *cost_sections(entry, k)]:
        lines += ["", render_section(part)]
    return "\n".join(lines)


def render_section(section: Section) -> str:
    """One cost, refine or budget section (:mod:`gge.report.cost_tables`): heading, table, notes.

    Example:
        >>> print(render_section(Section("x", "Title", ["a", "b"], [["1", "2"]], ["A note."])))
        ### Title
        <BLANKLINE>
        | a | b |
        |---|---|
        | 1 | 2 |
        <BLANKLINE>
        - A note.
    """
    out = f"### {section.title}\n\n{markdown_table(section.header, section.rows)}"
    if section.notes:
        out += "\n\n" + "\n".join(f"- {note}" for note in section.notes)
    return out


OUTCOME_NAMES = {
    "hit": "hit",
    "critic_miss": "critic miss",
    "proposer_miss": "proposer miss",
    "abstained": "abstained",
    "format_error": "format error",
    "image_error": "unreadable image",
    "server_error": "server error",
    "not_in_file": "not in the file",
}
"""How the report names the outcome kinds of :data:`gge.scoring.analysis.OUTCOMES`."""


SERVER_ERRORS_SHOWN = 5
"""Server errors report.md names one by one (results.json lists every one)."""


def server_error_lines(entry: BenchmarkEntry) -> list[str]:
    """report.md's lines on a benchmark's server errors: how many, the first few with their errors.

    Example:
        >>> entry = {"server_errors": [{"id": "7", "error": "POST u: HTTP 500 (after 2 retries)"}]}
        >>> for line in server_error_lines(entry):  # doctest: +ELLIPSIS
        ...     print(line)
        - Server errors (the request failed for good; scored as misses; a rerun ... asks them again): 1
          - 7: POST u: HTTP 500 (after 2 retries)
    """
    errors = entry.get("server_errors") or []
    if not errors:
        return []
    lines = [
        "- Server errors (the request failed for good; scored as misses; a rerun into the output folder "
        f"asks them again): {len(errors)}"
    ]
    lines += [f"  - {e['id']}: {e['error']}" for e in errors[:SERVER_ERRORS_SHOWN]]
    if len(errors) > SERVER_ERRORS_SHOWN:
        lines.append(f"  - and {len(errors) - SERVER_ERRORS_SHOWN} more (results.json lists each)")
    return lines


def scored_text(k: int, strategy: str) -> str:
    """How a run's Top-1 is chosen, in report.md's words: by the strategy among K, or the one answer.

    Example:
        >>> scored_text(5, "critic"), scored_text(1, "critic")
        ('Top-1 by `critic` · K=5', 'one answer per sample (Top-1 only)')
    """
    return "one answer per sample (Top-1 only)" if k == 1 else f"Top-1 by `{strategy}` · K={k}"


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render_analysis_lines(entry: BenchmarkEntry, *, k: int) -> list[str]:
    """The "why" lines of a benchmark: outcome split, critic gain, pass@k, miss distance, calibration.

    A section that is None (no critic scores, no sampled answers) gives no line; with ``k == 1`` (a
    one-answer run) there is no critic's gain.
    """
    lines: list[str] = []
    dec = entry["decomposition"]
    if dec["overall"]["samples"]:
        overall = dec["overall"]
        parts = [
            f"{OUTCOME_NAMES[kind]} {fmt(share(overall, kind))}"
            for kind in OUTCOME_NAMES
            if share(overall, kind)
        ]
        by = "Top-1" if k == 1 else f"Top-1 by `{dec['strategy']}`"  # one answer: no strategy chose it
        lines.append(f"- Where the misses are ({by}, % of samples): " + " · ".join(parts))
    gain = None if k == 1 else entry["critic_gain"]
    if gain and gain["over_first"] is not None:
        best = gain["best_spatial"]
        lines.append(
            f"- Critic's gain in Top-1: {fmt_signed(gain['over_first'])} over `first`, "
            f"{fmt_signed(gain['over_best_spatial'])} over the best spatial baseline (`{best}`)"
        )
    pk = entry["pass_at_k"]
    if pk:
        values = " · ".join(f"@{j} {fmt(pass_at(pk, j))}" for j in range(1, pk["n"] + 1))
        slots = "the sampled answers after the greedy first" if pk["first_slot"] else "every answer"
        lines.append(f"- pass@k (unbiased, from n={pk['n']}: {slots}): {values}")
    dist = entry["miss_distance"]
    sc = dist["screen"]
    if dist["misses"] and sc:
        t = dist["target_sizes"]
        size_part = f"{_num(t['median'])} target sizes (IQR {_num(t['q1'])}–{_num(t['q3'])}), " if t else ""
        lines.append(
            f"- Misses land from the target (median over {dist['misses']}): {size_part}"
            f"{fmt(100 * sc['median'])}% of the screen diagonal "
            f"(IQR {fmt(100 * sc['q1'])}–{fmt(100 * sc['q3'])}%)"
        )
    cal = entry["calibration"]
    if cal:
        if cal["score_kind"] == "probability":
            lines.append(
                f"- Critic calibration (P(yes) over {cal['candidates']} candidates): AUROC "
                f"{_num(cal['auroc'], 3)} · ECE {_num(cal['ece'], 3)} · Brier {_num(cal['brier'], 3)} · "
                f"AURC {fmt(cal['aurc'])}%"
            )
        else:
            what = "ranking (listwise" if cal["score_kind"] == "rank" else "scores (uncalibrated"
            lines.append(
                f"- Critic {what}, {cal['candidates']} candidates): AUROC {_num(cal['auroc'], 3)} "
                "(not probabilities: no ECE or Brier)"
            )
    return lines


def render_analysis_tables(entry: BenchmarkEntry, *, k: int) -> list[str]:
    """Tables of the "why" sections: outcomes per cell of the first official table, results by target size.

    (results.json has the outcomes for the cells of every official table.) With ``k == 1`` the size
    table is Top-1 only.
    """
    out: list[str] = []
    dec = entry["decomposition"]
    kinds = list(OUTCOME_NAMES)
    for t in dec["tables"][:1]:
        used = [kind for kind in kinds if any(c["counts"].get(kind) for c in t["cells"])] or ["hit"]
        cell_name = t["rows"] if t["cols"] is None else f"{t['rows']} / {t['cols']}"
        header = [cell_name, "n", *(OUTCOME_NAMES[kind] for kind in used)]
        rows = [
            [
                c["row"] if c["col"] is None else f"{c['row']} / {c['col']}",
                str(c["samples"]),
                *(fmt(share(c, kind)) for kind in used),
            ]
            for c in t["cells"]
        ]
        out.append(f"### {t['title']}: where the misses are (% of samples)\n\n{markdown_table(header, rows)}")
    sizes = entry["size_buckets"]
    if any(b["samples"] for b in sizes["buckets"]):
        header = ["target area (% of screen)", "n", "Top-1"] + ([] if k == 1 else [f"Oracle@{k}"])
        rows = [
            [b["label"], str(b["samples"]), fmt(b["top1"])] + ([] if k == 1 else [fmt(oracle_at(b, k))])
            for b in sizes["buckets"]
            if b["samples"]
        ]
        apart = [
            f"{count} {what}"
            for count, what in (
                (sizes["no_area"], "without an area (absent targets, or a screenshot of unknown size)"),
                (sizes["unreadable"], "unreadable screenshots"),
            )
            if count
        ]
        note = f" ({'; '.join(apart)})" if apart else ""
        out.append(f"### By target size{note}\n\n{markdown_table(header, rows)}")
    return out


def render_summary(
    titles: Mapping[str, str], entries: Mapping[str, BenchmarkEntry], mean: MeanStats, *, k: int
) -> str:
    """One row per benchmark with its official headline, and their unweighted mean.

    A headline that is not official (a variant, a subtask left out: its caveat) says so on its row
    and in a note; the mean row counts how many of them it includes, and a note names them.

    Each row counts the format errors and the image errors (unreadable screenshots), where some
    request failed for good the server errors, and, where a replayed file lacks some samples' lines,
    the samples not in the file; with ``k == 1`` (a one-answer run) the table is Top-1 only (no
    Oracle@1, no gap).
    """
    one = k == 1
    absent = any("not_in_file" in e for e in entries.values())
    served = any(e.get("server_errors") for e in entries.values())
    header = ["benchmark", "samples", "official rule", "Top-1"]
    header += [] if one else [f"Oracle@{k}", "gap"]
    header += ["format errors", "image errors"] + (["server errors"] if served else [])
    header += ["not in the file"] if absent else []
    rows = []
    caveats = {name: headline_caveat(e) for name, e in entries.items()}
    for name, e in entries.items():
        off = e["official"]
        rule = f"{off['rule']} (not official)" if caveats[name] else off["rule"]
        row = [titles[name], str(e["samples"]), rule, fmt_headline(off["top1"])]
        if not one:
            top1, oracle = off["top1"], oracle_at(off, k)
            row += [fmt_headline(oracle), fmt(None if top1 is None or oracle is None else oracle - top1)]
        rows.append([*row, str(e["format_errors"]), str(len(e["image_errors"]))])
        if served:
            rows[-1].append(str(len(e.get("server_errors") or [])))
        if absent:
            rows[-1].append(str(e["not_in_file"]["samples"]) if "not_in_file" in e else "0")
    unofficial = [name for name in mean["benchmarks"] if caveats.get(name)]
    if len(entries) > 1:
        n = len(mean["benchmarks"])
        label = f"mean of {n}" + (f" ({len(unofficial)} not official)" if unofficial else "")
        row = [label, "", "unweighted", fmt_headline(mean["top1"])]
        rows.append(row + ([] if one else [fmt_headline(oracle_at(mean, k)), ""]) + [""] * (2 + absent))
    notes = "".join(f"\n- {titles[name]}: not official: {c}" for name, c in caveats.items() if c)
    if unofficial and len(entries) > 1:
        which = ", ".join(titles[name] for name in unofficial)
        n = len(mean["benchmarks"])
        notes += f"\n- mean of {n}: {len(unofficial)} of its headlines not official ({which})"
    notes = f"\n{notes}" if notes else ""
    return "## Summary (headlines: official unless marked)\n\n" + markdown_table(header, rows) + notes
