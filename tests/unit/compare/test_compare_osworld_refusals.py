"""``gge compare`` refuses two OSWorld-G runs that count the refusals differently, and pairs two that agree.

The same predictions file replayed with ``bench.osworld_g.refusals=scored`` and ``=miss`` gives the
same samples (ids, instructions, screenshots: the same samples digest) but other numbers: only the
recorded variant tells them apart, and compare's variant check must refuse the pair.
"""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from osworld_g_folder import replay, write_folder, write_predictions

from gge.compare import compare_runs, load_run, render_markdown
from gge.errors import GgeError
from gge.report.compare_page import render_compare_html


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("osw_runs")
    write_folder(tmp / "data")
    predictions = write_predictions(tmp / "p.jsonl")
    out = {}
    for name, extra in {
        "scored": [],
        "miss": ["bench.osworld_g.refusals=miss"],
        "miss_again": ["bench.osworld_g.refusals=miss", "seed=1"],
        "excluded": ["bench.osworld_g.refusals=excluded"],
    }.items():
        replay(tmp / "data", predictions, tmp / name, *extra)
        out[name] = tmp / name
    return out


@pytest.mark.parametrize(
    ("a", "b", "va", "vb"), [("scored", "miss", "scored", "miss"), ("miss", "scored", "miss", "scored")]
)
def test_scored_and_miss_are_refused(runs: dict[str, Path], a: str, b: str, va: str, vb: str) -> None:
    with pytest.raises(GgeError) as e:
        compare_runs(load_run(runs[a]), load_run(runs[b]))
    msg = str(e.value)
    assert "\n" not in msg and str(runs[a]) in msg and str(runs[b]) in msg
    assert "osworld_g: different benchmark variants" in msg
    assert f"'refusals': '{va}'" in msg and f"'refusals': '{vb}'" in msg


def test_excluded_is_refused_against_scored(runs: dict[str, Path]) -> None:
    with pytest.raises(GgeError, match=r"osworld_g: different benchmark variants.*'refusals': 'excluded'"):
        compare_runs(load_run(runs["scored"]), load_run(runs["excluded"]))


def test_two_runs_with_refusals_as_misses_pair(runs: dict[str, Path]) -> None:
    doc = compare_runs(load_run(runs["miss"]), load_run(runs["miss_again"]))
    entry = doc["benchmarks"]["osworld_g"]
    assert entry["samples"] == 8
    assert entry["top1"]["a"] == entry["top1"]["b"] == pytest.approx(25.0)
    assert entry["top1"]["diff"] == 0.0


def test_the_compare_outputs_name_the_common_variant(runs: dict[str, Path]) -> None:
    doc = compare_runs(load_run(runs["miss"]), load_run(runs["miss_again"]))
    entry = doc["benchmarks"]["osworld_g"]
    variant = {"instructions": "original", "refusals": "miss", "denominator": 8}
    caveat = (
        "refusals counted as misses (MAI-UI's count); the official headline scores them (refusals=scored)"
    )
    assert entry["variant"] == variant and entry["caveat"] == caveat
    assert list(entry)[:3] == ["title", "variant", "caveat"]
    named = f"instructions: original · refusals: miss · denominator: 8 · not official: {caveat}"
    assert f"\n## OSWorld-G (osworld_g · {named})\n" in render_markdown(doc)
    assert f'<span class="muted">(osworld_g · {html.escape(named)})</span></h2>' in render_compare_html(doc)
    scored = compare_runs(load_run(runs["scored"]), load_run(runs["scored"]))["benchmarks"]["osworld_g"]
    assert "caveat" not in scored  # the official variant has none


def test_a_compare_entry_without_variant_has_no_key(runs: dict[str, Path]) -> None:
    doc = compare_runs(load_run(runs["miss"]), load_run(runs["miss_again"]))
    entry = dict(doc["benchmarks"]["osworld_g"])
    entry.pop("variant")
    entry.pop("caveat")
    doc["benchmarks"]["osworld_g"] = entry  # type: ignore[typeddict-item]
    assert "\n## OSWorld-G (osworld_g)\n" in render_markdown(doc)
    assert '<span class="muted">(osworld_g)</span></h2>' in render_compare_html(doc)
