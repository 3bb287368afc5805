"""How the reports write numbers: percentages, differences, token counts, seconds and calls per sample.

report.md, report.html, the console and ``gge compare`` print numbers through these, so one value
reads the same everywhere; results.json keeps them unrounded. "–" (an en dash) stands for "none".

Example:
    >>> fmt(56.4321), fmt_signed(-1.25), fmt_tokens(1040.25), fmt_seconds(0.01234), fmt_calls(5)
    ('56.4', '-1.2', '1,040', '0.0123', '5.00')
"""

from __future__ import annotations

from gge.documents.compare import MatchedSpread

DASH = "–"
"""What a missing value reads."""


def fmt(value: float | None) -> str:
    """A percentage with one decimal, or an en dash for "no samples"."""
    return DASH if value is None else f"{value:.1f}"


def fmt_headline(value: float | None) -> str:
    """A headline percentage with two decimals, as papers print theirs (67.19 beside 67.19, not 67.2).

    Example:
        >>> fmt_headline(67.1875), fmt_headline(100.0), fmt_headline(None)
        ('67.19', '100.00', '–')
    """
    return DASH if value is None else f"{value:.2f}"


def fmt_signed(value: float | None) -> str:
    """A difference in points with its sign and one decimal, or an en dash.

    Example:
        >>> fmt_signed(2.345), fmt_signed(-0.04), fmt_signed(None)
        ('+2.3', '-0.0', '–')
    """
    return DASH if value is None else f"{value:+.1f}"


def fmt_tokens(value: float | None) -> str:
    """Tokens per sample: whole tokens with thousands separators from 100 up, one decimal below.

    Example:
        >>> fmt_tokens(12345.6), fmt_tokens(99.96), fmt_tokens(7.25), fmt_tokens(None)
        ('12,346', '100.0', '7.2', '–')
    """
    if value is None:
        return DASH
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def fmt_seconds(value: float | None) -> str:
    """Seconds per sample with three significant digits (whole seconds from 1000 up).

    Example:
        >>> fmt_seconds(0.5), fmt_seconds(12.345), fmt_seconds(0.000123), fmt_seconds(4321.0), fmt_seconds(0)
        ('0.5', '12.3', '0.000123', '4,321', '0')
    """
    if value is None:
        return DASH
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def fmt_calls(value: float | None) -> str:
    """Model requests per sample, with two decimals.

    Example:
        >>> fmt_calls(1.0), fmt_calls(5.333), fmt_calls(None)
        ('1.00', '5.33', '–')
    """
    return DASH if value is None else f"{value:.2f}"


COST_WORDS = (
    "cost per sample of what the strategy pays (the critic's requests for the critic pick only): what the "
    "run paid at j = K (measured, or replayed from its predictions file), derived below it from the ledger"
)
"""What a matched-budget cost is, in compare.md's and compare.html's words."""


def cost_text(value: float | None, unit: str) -> str:
    """A cost per sample: tokens whole with separators from 100 up, seconds to 3 significant digits.

    Example:
        >>> cost_text(12345.6, "tokens"), cost_text(42.25, "tokens"), cost_text(0.01234, "seconds")
        ('12,346', '42.2', '0.0123 s')
    """
    if value is None:
        return "–"
    if unit == "tokens":
        return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"
    return f"{value:.3g} s"


def fmt_share(value: float | None) -> str:
    """A relative figure (a fraction) as a percentage with two significant digits, or "unknown".

    Example:
        >>> fmt_share(0.02912), fmt_share(0.000412), fmt_share(0.125), fmt_share(0.0), fmt_share(None)
        ('2.9%', '0.041%', '12%', '0%', 'unknown')
    """
    return "unknown" if value is None else f"{100 * value:.2g}%"


def _pm(value: float | None) -> str:
    return "unknown" if value is None else f"±{fmt_share(value)}"


def _pairs(pairings: list[list[int]]) -> str:
    return ", ".join(f"({p}, {q})" for p, q in pairings)


def spread_text(spread: MatchedSpread) -> str:
    """What the uncertainty of the measured seconds says of the matched pairing (one sentence).

    The one builder of the sentence that compare.json's note, compare.md and compare.html print
    (each after its own label: the benchmark, its title). Inside (more than one pairing): which
    pairings the measurement cannot tell from the matched one; else that it tells them apart.

    Example:
        >>> spread = {"measure": "m", "a": 0.02, "b": 0.021, "tolerance": 0.029,
        ...           "pairings": [[5, 4], [5, 5], [4, 4]], "inside": True, "policy": "flag"}
        >>> print(spread_text(spread))  # doctest: +NORMALIZE_WHITESPACE
        at matched budget in seconds, the pairing (jA, jB) = (5, 4) (the closest measured cost) cannot
        be told apart by the measurement from (5, 5), (4, 4): their relative cost differences lie within
        ±2.9% of its own, the uncertainty of a difference of two measured costs, √(A² + B²) (A ±2%,
        B ±2.1%: m)
        >>> print(spread_text({**spread, "pairings": [[5, 4]], "inside": False}))
        ... # doctest: +NORMALIZE_WHITESPACE
        at matched budget in seconds, the measurement tells the pairing (jA, jB) = (5, 4) (the closest
        measured cost) apart from every other: none lies within ±2.9% of its relative cost difference,
        the uncertainty of a difference of two measured costs, √(A² + B²) (A ±2%, B ±2.1%: m)
    """
    chosen = _pairs(spread["pairings"][:1])
    why = (
        f"{_pm(spread['tolerance'])}"
        f"{' of its own' if spread['inside'] else ' of its relative cost difference'}, the uncertainty of a "
        f"difference of two measured costs, √(A² + B²) (A {_pm(spread['a'])}, "
        f"B {_pm(spread['b'])}: {spread['measure']})"
    )
    head = "at matched budget in seconds, "
    if spread["inside"]:
        return (
            f"{head}the pairing (jA, jB) = {chosen} (the closest measured cost) cannot be told apart by the "
            f"measurement from {_pairs(spread['pairings'][1:])}: their relative cost differences lie within "
            f"{why}"
        )
    return (
        f"{head}the measurement tells the pairing (jA, jB) = {chosen} (the closest measured cost) apart "
        f"from every other: none lies within {why}"
    )


__all__ = [
    "COST_WORDS",
    "DASH",
    "cost_text",
    "fmt",
    "fmt_calls",
    "fmt_seconds",
    "fmt_share",
    "fmt_signed",
    "fmt_tokens",
    "spread_text",
]
