"""The console's summary keeps the Hub-copy warning where the headline's caveat is the variant's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gge.documents.caveats import COPY_DIFFERS
from gge.loggers.standalone import console_summary

DIFFERING = {"source": "parquet", "release_check": {"matches": False}, "allowed_differences": True}


def _doc(load: dict[str, Any]) -> Any:
    entry = {"samples": 4, "official": {"rule": "micro", "top1": 50.0, "oracle@1": 50.0},
             "format_errors": 0, "image_errors": [], "load": load}  # fmt: skip
    return {"protocol": "p", "k": 1, "selection": "first", "benchmarks": {"b": entry},
            "mean": {"benchmarks": ["b"], "top1": 50.0, "oracle@1": 50.0}}  # fmt: skip


def test_a_differing_copy_read_as_a_variant_is_warned_on_the_console() -> None:
    text = console_summary(
        _doc({"headline_caveat": "gt_type=all", "provenance": DIFFERING}), {"b": "B"}, Path("o")
    )
    assert f"warning: B: {COPY_DIFFERS}" in text.splitlines()


def test_the_warning_is_said_once_where_it_is_the_headlines_caveat() -> None:
    text = console_summary(_doc({"provenance": DIFFERING}), {"b": "B"}, Path("o"))
    assert f"warning: B: {COPY_DIFFERS}" not in text and COPY_DIFFERS in text  # on the table's row
    assert "warning:" not in console_summary(_doc({"headline_caveat": "gt_type=all"}), {"b": "B"}, Path("o"))
