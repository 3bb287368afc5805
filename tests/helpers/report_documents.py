"""Hand-built results and documents for the report.html tests: real scored samples and schema documents.

:func:`make_run` scores real :class:`~gge.types.Sample` objects over small PNGs written with pillow (one
of every outcome kind); :func:`make_document`, :func:`empty_document` and :func:`make_compare` are
results.json / compare.json documents that follow the issue-11 schema (research/ISSUE11_SCHEMA.md)
exactly. Used by ``test_html_report.py`` and by the headless-Chromium test ``test_browser.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image

from gge.benchmarks.base import TableSpec
from gge.documents.results import SCHEMA_VERSION
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, Prediction, Sample, SampleResult

EVIL = "<script>alert(1)</script>"
PRO_SPEC = TableSpec("By group", "group", "ui_type")
OSW_SPEC = TableSpec("By category", "category")


# -- fixtures ---------------------------------------------------------------------------------------
def _png(path: Path, size: tuple[int, int]) -> str:
    Image.new("RGB", size, (205, 205, 205)).save(path)
    return str(path)


def make_run(tmp_path: Path) -> tuple[dict[tuple[str, str], Sample], list[SampleResult], dict[str, Any]]:
    """Samples over real PNGs and their scored results, one of every outcome kind (k=3)."""
    wide = _png(tmp_path / "wide.png", (800, 450))
    tall = _png(tmp_path / "tall.png", (300, 600))
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n this is not a png")
    missing = str(tmp_path / "missing.png")
    box = Box(100, 100, 200, 150)
    far, near = Candidate((600.0, 350.0), 0.9), Candidate((150.0, 125.0), 0.2)

    def pro(i: int, path: str, labels: dict[str, Any], instruction: str = "") -> Sample:
        size = (300, 600) if path == tall else (800, 450)
        return Sample("screenspot_pro", f"p{i}", path, size, instruction or f"click item {i}", box, labels)

    cad_text, dev_icon = {"group": "CAD", "ui_type": "text"}, {"group": "Dev", "ui_type": "icon"}
    rows: list[tuple[Sample, dict[str, Any]]] = [
        (pro(0, wide, cad_text), {"candidates": (Candidate((150.0, 125.0), 0.9),), "raw": "hit"}),
        (pro(1, wide, cad_text), {"candidates": (far, near), "raw": "critic miss raw"}),
        (
            Sample("screenspot_pro", "id<b>2", wide, (800, 450), f"press {EVIL}", box, dev_icon),
            {"candidates": (far, Candidate((700.0, 50.0), 0.4)), "raw": f"answer {EVIL}"},
        ),
        (pro(3, wide, dev_icon), {"candidates": (Candidate(None, 0.8),), "raw": "not there"}),
        (pro(4, wide, cad_text), {"format_error": True, "raw": "no numbers"}),
        (pro(5, str(broken), dev_icon), {"image_error": "cannot identify image"}),
        (pro(6, missing, cad_text), {"candidates": (far,), "raw": "far away"}),
        (pro(7, tall, {"group": ("Dev", "CAD"), "ui_type": "icon"}), {"candidates": (far, near)}),
        (pro(8, str(broken), cad_text), {"candidates": (far,), "raw": "unreadable screenshot"}),
        (
            Sample("osworld_g", "o0", wide, (800, 450), "open the menu", box, {"category": "text_matching"}),
            {"candidates": (far,), "raw": "osworld miss", "critic_raw": "critic says 1"},
        ),
    ]
    samples = {(s.benchmark, s.id): s for s, _ in rows}
    results = [score_sample(s, Prediction(s.benchmark, s.id, **kw), k=3) for s, kw in rows]
    return samples, results, {"screenspot_pro": PRO_SPEC, "osworld_g": OSW_SPEC}


def _stats(samples: int, top1: float | None, oracle: float | None) -> dict[str, Any]:
    return {"samples": samples, "top1": top1, "oracle@3": oracle}


def _decomp(n: int, hit: int, critic: int, proposer: int) -> dict[str, Any]:
    counts = {"hit": hit, "critic_miss": critic, "proposer_miss": proposer, "abstained": 0}
    counts |= {"format_error": 0, "image_error": 0}
    return {"samples": n, "counts": counts, **{k: 100.0 * v / n if n else None for k, v in counts.items()}}


def new_sections() -> dict[str, Any]:
    """Every issue-11 section of one benchmark entry, with distinctive numbers."""
    return {
        "decomposition": {
            "strategy": "critic",
            "overall": _decomp(10, 5, 3, 2),
            "tables": [
                {
                    "title": "By group",
                    "rows": "group",
                    "cols": "ui_type",
                    "cells": [
                        {"row": "CAD", "col": "text", **_decomp(6, 3, 2, 1)},
                        {"row": "Dev", "col": "icon", **_decomp(4, 2, 1, 1)},
                    ],
                }
            ],
        },
        "critic_gain": {"over_first": 12.34, "over_best_spatial": -3.21, "best_spatial": "medoid"},
        "pass_at_k": {"n": 3, "first_slot": 0, "pass@1": 31.0, "pass@2": 44.0, "pass@3": 51.0},
        "size_buckets": {
            "edges": [0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 1],
            "no_area": 2,
            "unreadable": 0,
            "buckets": [
                {
                    "label": "<0.01%",
                    "low": 0.0,
                    "high": 1e-4,
                    "samples": 0,
                    "top1": None,
                    "oracle@3": None,
                    "median_area": None,
                },
                {
                    "label": "0.01–0.03%",
                    "low": 1e-4,
                    "high": 3e-4,
                    "samples": 7,
                    "top1": 42.9,
                    "oracle@3": 71.4,
                    "median_area": 2e-4,
                },
                {
                    "label": "≥10%",
                    "low": 0.1,
                    "high": 1.0,
                    "samples": 3,
                    "top1": 100.0,
                    "oracle@3": 100.0,
                    "median_area": 0.2,
                },
            ],
        },
        "miss_distance": {
            "misses": 5,
            "target_sizes": {"q1": 0.44, "median": 1.77, "q3": 6.66},
            "screen": {"q1": 0.012, "median": 0.0345, "q3": 0.25},
        },
        "calibration": {
            "score_kind": "probability",
            "candidates": 30,
            "positives": 11,
            "auroc": 0.81234,
            "ece": 0.0567,
            "brier": 0.1789,
            "reliability": [
                {"low": 0.0, "high": 0.5, "count": 10, "confidence": 0.3, "accuracy": 0.2},
                {"low": 0.5, "high": 1.0, "count": 20, "confidence": 0.8, "accuracy": 0.7},
                {"low": 0.9, "high": 1.0, "count": 0, "confidence": None, "accuracy": None},
            ],
            "risk_coverage": [
                {"threshold": 0.9, "coverage": 30.0, "kept": 3, "top1": 100.0},
                {"threshold": 0.5, "coverage": 100.0, "kept": 10, "top1": 50.0},
            ],
            "aurc": 21.5,
            "unscored_samples": 1,
        },
    }


def plain_sections(samples: int) -> dict[str, Any]:
    """The "why" sections of a run without critic scores or sampled answers, no target sizes, no misses."""
    return {
        "decomposition": {"strategy": "critic", "overall": _decomp(samples, samples, 0, 0), "tables": []},
        "critic_gain": None,
        "pass_at_k": None,
        "size_buckets": {"edges": [0, 1], "buckets": [], "no_area": 0, "unreadable": 0},
        "miss_distance": {"misses": 0, "target_sizes": None, "screen": None},
        "calibration": None,
    }


def base_entry(top1: float, oracle: float, *, samples: int = 10) -> dict[str, Any]:
    """A results.json benchmark entry with the "why" sections of :func:`plain_sections`."""
    none = _stats(0, None, None)  # a cell without samples: every row and column has each cell
    cells = {
        "CAD": {"text": _stats(6, 50.0, 66.7), "icon": none},
        "Dev": {"text": none, "icon": _stats(4, 25.0, 75.0)},
    }
    return {
        "samples": samples,
        "top1": top1,
        "oracle@1": 40.0,
        "oracle@2": 55.0,
        "oracle@3": oracle,
        "micro": {"top1": top1, "oracle@1": 40.0, "oracle@2": 55.0, "oracle@3": oracle},
        "official": {"rule": "micro", "top1": top1, "oracle@3": oracle},
        "averages": {"micro": {"rule": "micro", "top1": top1, "oracle@3": oracle}},
        "intervals": {"top1": [30.1, 70.2], "oracle@3": [40.0, 80.0]},
        "format_errors": 1,
        "truncated": 0,
        "image_errors": [{"id": "p5", "error": "cannot identify image"}],
        "unparsed_candidates": 0,
        "critic_format_errors": 0,
        "abstentions": 1,
        "critic_gap": oracle - top1,
        "top1_given_oracle": 77.7,
        "selection": {"critic": top1, "first": 41.1, "medoid": 55.5},
        "breakdown": {},
        "tables": [
            {
                "title": "By group",
                "rows": "group",
                "cols": "ui_type",
                "row_values": ["CAD", "Dev"],
                "col_values": ["text", "icon"],
                "cells": cells,
                "row_avg": {"CAD": _stats(6, 50.0, 66.7), "Dev": _stats(4, 25.0, 75.0)},
                "col_avg": {"text": _stats(6, 50.0, 66.7), "icon": _stats(4, 25.0, 75.0)},
                "all": _stats(10, top1, oracle),
            },
            {
                "title": "By application <i>",
                "rows": "application",
                "cols": None,
                "row_values": ["autocad", "<b>vscode</b>"],
                "row_avg": {"autocad": _stats(6, 50.0, 66.7), "<b>vscode</b>": _stats(4, 25.0, 75.0)},
                "all": _stats(10, top1, oracle),
            },
        ],
        **plain_sections(samples),
    }


def make_document() -> dict[str, Any]:
    """A results document: ScreenSpot-Pro with every "why" section, OSWorld-G with the plain ones."""
    return {
        "schema_version": SCHEMA_VERSION,
        "gge_version": "0.1.0",
        "protocol": "demo protocol",
        "benchmarks": {
            "screenspot_pro": base_entry(56.4321, 78.96) | new_sections(),
            "osworld_g": base_entry(20.0, 30.0, samples=5),
        },
        "mean": {"benchmarks": ["screenspot_pro", "osworld_g"], "top1": 38.21605, "oracle@3": 54.48},
        "k": 3,
        "subset": None,
        "selection": "critic",
        "model": {"model": "replay"},
        "config": {},
    }


def empty_document() -> dict[str, Any]:
    """A results document of no benchmark."""
    return make_document() | {"benchmarks": {}, "mean": {"benchmarks": [], "top1": None, "oracle@3": None}}


def _pair(a: float, b: float, lo: float, hi: float, p: float) -> dict[str, Any]:
    return {
        "a": a,
        "b": b,
        "diff": b - a,
        "ci": [lo, hi],
        "mcnemar_p": p,
        "mdd": 4.44,
        "b_only": 17,
        "a_only": 5,
        "samples": 200,
        "screenshots": 120,
    }


def make_compare() -> dict[str, Any]:
    side = {
        "path": "/runs/a/results.json",
        "label": "baseline",
        "selection": "critic",
        "k": 5,
        "protocol": "qwen",
    }
    top1 = {"rule": "micro", "a": 40.0, "b": 46.0, "diff": 6.0, "ci": [2.25, 9.75]}
    return {
        "schema_version": SCHEMA_VERSION,
        "a": side,
        "b": side | {"path": "/runs/b/results.json", "label": "candidate <new>"},
        "k": 5,
        "bootstrap": {"resamples": 2000, "seed": 0, "cluster": "screenshot", "level": 0.95},
        "benchmarks": {
            "screenspot_pro": {
                "title": "ScreenSpot-Pro",
                "samples": 200,
                "screenshots": 120,
                "cluster": "screenshot",
                "top1": top1,
                "oracle@5": {"rule": "micro", "a": 60.0, "b": 59.0, "diff": -1.0, "ci": [-4.5, 2.5]},
                "official": top1,
                "micro": {
                    "top1": _pair(40.0, 46.0, 2.25, 9.75, 0.0004),
                    "oracle@5": _pair(60.0, 59.0, -4.5, 2.5, 0.6123),
                },
                "format_errors": {"a": 0, "b": 1},
                "image_errors": {"a": 0, "b": 0},
                "tables": [
                    {
                        "title": "By group",
                        "rows": "group",
                        "cols": "ui_type",
                        "cells": [
                            {
                                "row": "CAD",
                                "col": "icon",
                                "samples": 50,
                                "top1": _pair(20.0, 33.3, 1.0, 25.0, 0.02),
                                "oracle@5": _pair(40.0, 38.0, -9.0, 5.0, 0.7),
                            },
                        ],
                    }
                ],
                "won": ["w1", f"w{EVIL}"],
                "lost": ["l1"],
            }
        },
        "mean": {"benchmarks": 1, "a": 40.0, "b": 46.0, "diff": 6.0},
        "warnings": [],
        "notes": [],
    }
