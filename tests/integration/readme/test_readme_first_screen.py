"""The README's first screen: the three paths come first, and the README stays a five-minute read.

The three paths (the demo; a model behind vLLM or SGLang on ScreenSpot-Pro; inside training) are the
README's first three ``## `` headings, numbered 1-3, so they come before every reference section
(benchmarks, presets, commands, reference pages, tests), and the first of them starts within the first
15 lines (after the title and a short pitch). The README is at most 300 lines: the rewrite of issue 37,
item 4, took it from 979 lines to 258; the reference lives in docs/. The two set-up commands stay
verbatim, with the line about busy machines, since ``.ci/run`` runs the README's test command.
"""

from __future__ import annotations

import re

from paths import ROOT

README = ROOT / "README.md"
MAX_LINES = 300
"""The README's length bound, in lines."""
FIRST_PATH_BY = 15
"""The line by which the first path's heading starts."""
SET_UP = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install -e . && "
    "python eval.py",
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && "
    "pip install -e '.[dev]' && OMP_NUM_THREADS=1 python -m pytest -q",
)
"""The two set-up commands, as the README gives them (one line each)."""


def headings() -> list[tuple[int, str]]:
    """The README's ``## `` headings outside code blocks, with their 1-based line numbers.

    Returns:
        (line number, heading text) in order.
    """
    out: list[tuple[int, str]] = []
    fence = False
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence and line.startswith("## "):
            out.append((number, line[3:].strip()))
    return out


def test_the_three_paths_come_first() -> None:
    found = headings()
    first_three = [text for _, text in found[:3]]
    assert [t[:3] for t in first_three] == ["1. ", "2. ", "3. "], first_three
    assert "demo" in first_three[0]
    assert "vLLM" in first_three[1] and "SGLang" in first_three[1] and "ScreenSpot-Pro" in first_three[1]
    assert "training" in first_three[2].lower()
    assert found[0][0] <= FIRST_PATH_BY, found[0]
    rest = [text for _, text in found[3:]]
    assert not any(re.match(r"\d+\. ", t) for t in rest), rest


def test_each_path_holds_its_commands() -> None:
    """Path 1 holds set-up 1; path 2 data, check, server, eval, progress, prefill, results; 3 its block."""
    text = README.read_text(encoding="utf-8")
    found = headings()
    lines = text.splitlines()
    bodies = [
        "\n".join(lines[start : (found[i + 1][0] - 1 if i + 1 < len(found) else len(lines))])
        for i, (start, _) in enumerate(found[:3])
    ]
    assert SET_UP[0] in bodies[0] and "Times on a busy machine are 2-5x these" in bodies[0]
    for needle in (
        "likaixin/ScreenSpot-Pro",
        "gge data check --data-root /data/gui screenspot_pro",
        "vllm serve Qwen/Qwen2.5-VL-7B-Instruct",
        "model.api_model=Qwen/Qwen2.5-VL-7B-Instruct",
        "progress [",
        "model.prompts.prefill",
        "results.json",
        "report.html",
    ):
        assert needle in bodies[1], needle
    assert "GroundingEvalCallback(" in bodies[2]


def test_the_readme_is_short_and_keeps_both_set_up_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    commands = [line for line in text.splitlines() if line.startswith("python3 -m venv")]
    assert commands == list(SET_UP)
