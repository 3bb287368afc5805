"""Mutation-audit pins of matching rows numbered by position (:func:`gge.benchmarks.hub.match_rows`).

The fit tests are written by hand (which row fits which release id at which level), so each expected
assignment follows from the documented rule alone.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gge.benchmarks.hub import match_rows, release_fits
from gge.benchmarks.hub_layouts import Mapped
from gge.types import Box, Sample

REGION = Box(1, 2, 3, 4)


def _row(sid: str, instruction: str = "click", region: Box = REGION) -> Mapped:
    row: Any = None  # the fit tests here never read the copy row
    return Mapped(row=row, id=sid, instruction=instruction, region=region, labels={}, size=(10, 10))


def _tests(table: dict[tuple[str, str, int], bool]) -> tuple[Any, Any]:
    """``fits``/``candidates`` from a table (row's instruction, release id, level) -> fits."""

    def fits(m: Mapped, sid: str, level: int) -> bool:
        return table.get((m.instruction, sid, level), False)

    def candidates(m: Mapped, level: int) -> list[str]:
        return [sid for (who, sid, lv), ok in table.items() if ok and who == m.instruction and lv == level]

    return fits, candidates


def _ids(matching: Any) -> list[tuple[str, str]]:
    return [(m.instruction, m.id) for m in matching.mapped]


def test_a_row_keeps_its_own_record_before_another_row_may_take_it() -> None:
    """Row "B" (first) fits only p_1, row "A" fits its own p_1: A keeps it, B falls back to its own p_0."""
    fits, candidates = _tests({("B", "p_1", 2): True, ("A", "p_1", 2): True})
    m = match_rows([_row("p_0", "B"), _row("p_1", "A")], ["p_0", "p_1"], fits, candidates)
    assert _ids(m) == [("B", "p_0"), ("A", "p_1")] and m.after == {}


def test_rows_fitting_by_instruction_alone_are_moved_to_their_records() -> None:
    fits, candidates = _tests({("X", "p_1", 1): True, ("Y", "p_0", 1): True})
    m = match_rows([_row("p_0", "X"), _row("p_1", "Y")], ["p_0", "p_1"], fits, candidates)
    assert _ids(m) == [("Y", "p_0"), ("X", "p_1")] and m.after == {}


def test_a_duplicated_row_is_an_extra_row_after_the_one_it_repeats() -> None:
    """Two rows fit p_0 of p_0, p_1: the second is extra, renumbered p_2 (p_1 is the release's)."""
    fits, candidates = _tests({("D", "p_0", 2): True, ("D", "p_0", 1): True})
    m = match_rows([_row("p_0", "D"), _row("p_0", "D"), _row("p_1", "Z")], ["p_0", "p_1"], fits, candidates)
    assert [x.id for x in m.mapped] == ["p_0", "p_2", "p_1"]
    assert m.after == {"p_2": "p_0"} and m.release_ids == ["p_0", "p_1"]


def test_a_copy_without_screenshot_names_matches_by_instruction_and_box() -> None:
    release = [Sample("b", "r_0", "/rel/a.png", (10, 10), "open it", REGION)]
    layout = SimpleNamespace(name_column=None)  # the copy has no screenshot-name column
    ids, fits, candidates = release_fits(release, layout)  # type: ignore[arg-type]
    row = _row("p_0", "open it")
    assert ids == ["r_0"]
    assert fits(row, "r_0", 2) and fits(row, "r_0", 1)
    assert candidates(row, 2) == ["r_0"] == candidates(row, 1)
    moved = _row("p_0", "open it", Box(1, 2, 3, 9))
    assert not fits(moved, "r_0", 2) and fits(moved, "r_0", 1)
