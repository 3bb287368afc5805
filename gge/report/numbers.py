"""How the reports write numbers: percentages, differences, token counts, seconds and calls per sample.

report.md, report.html, the console and ``gge compare`` print numbers through these, so one value
reads the same everywhere; results.json keeps them unrounded. "–" (an en dash) stands for "none".

Example:
    >>> fmt(56.4321), fmt_signed(-1.25), fmt_tokens(1040.25), fmt_seconds(0.01234), fmt_calls(5)
    ('56.4', '-1.2', '1,040', '0.0123', '5.00')
"""

from __future__ import annotations

DASH = "–"
"""What a missing value reads."""


def fmt(value: float | None) -> str:
    """A percentage with one decimal, or an en dash for "no samples"."""
    return DASH if value is None else f"{value:.1f}"


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


__all__ = ["COST_WORDS", "DASH", "cost_text", "fmt", "fmt_calls", "fmt_seconds", "fmt_signed", "fmt_tokens"]
