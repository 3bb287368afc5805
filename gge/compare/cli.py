"""The command ``gge compare A B``: read both runs, pair them, print the table and write the files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from gge.compare.pairing import compare_runs
from gge.compare.render import _check_out_dir, default_out_dir, render_markdown, write_compare
from gge.compare.runs import load_run
from gge.documents.results import CompareDocument
from gge.errors import GgeError

__all__ = ["run_compare"]


def run_compare(
    a_path: str | Path,
    b_path: str | Path,
    *,
    out_dir: str | Path | None = None,
    resamples: int = 2000,
    seed: int = 0,
    labels: Sequence[str] | None = None,
    stream: TextIO | None = None,
) -> CompareDocument:
    """``gge compare A B``: read both runs, pair them, print the table and write the files.

    Args:
        a_path: Run A (baseline): output folder or results.json.
        b_path: Run B.
        out_dir: Output folder (default :func:`default_out_dir`, which is inside B, never A).
        resamples: Bootstrap resamples.
        seed: Bootstrap seed.
        labels: Names of A and B in the tables (default: their folder names).
        stream: Where the table is printed (default: stdout).

    Returns:
        The compare.json document.

    Raises:
        GgeError: for unreadable runs or runs that cannot be paired.
    """
    import sys

    if resamples < 1:
        raise GgeError(f"--resamples must be at least 1, got {resamples}")
    label_a, label_b = labels if labels is not None else (None, None)
    a = load_run(a_path, label_a)
    b = load_run(b_path, label_b)
    if labels is None and a.label == b.label:
        a = replace(a, label=f"{a.label} (A)")
        b = replace(b, label=f"{b.label} (B)")
    out = Path(out_dir) if out_dir is not None else default_out_dir(a, b)
    _check_out_dir(out)
    doc = compare_runs(a, b, resamples=resamples, seed=seed)
    text = render_markdown(doc)
    write_compare(doc, out, text)
    stream = stream if stream is not None else sys.stdout
    print(text, file=stream)
    print(f"wrote {out}", file=stream)
    return doc
