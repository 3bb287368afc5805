"""Pins of the hub modules' mutation survivors (issue 26): each test fails on the mutant named in it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hub_writers import tiny_parquet, tiny_release

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import UNKNOWN_SIZE, BenchmarkOptions
from gge.benchmarks.hub import load_source, record_keys, size_column_differences
from gge.benchmarks.hub_copies import KnownCopy, identify
from gge.benchmarks.hub_files import CopyRow
from gge.benchmarks.hub_layouts import LAYOUTS, Mapped, from_normalized, osworld_region
from gge.benchmarks.osworld_g import osworld_region as release_osworld_region
from gge.types import Box, Sample

pytest.importorskip("pyarrow")


def test_the_labels_digest_does_not_depend_on_the_labels_insertion_order() -> None:
    """hub.py: labels sorted before hashing (mutant: insertion order)."""
    box = Box(1, 2, 3, 4)
    one = Sample("b", "x_0", "a.png", (9, 9), "tap", box, {"split": "web", "data_type": "icon"})
    other = Sample("b", "x_0", "a.png", (9, 9), "tap", box, {"data_type": "icon", "split": "web"})
    assert list(one.labels) != list(other.labels)
    assert record_keys(one) == record_keys(other)
    assert record_keys(one)["labels"] == 'x_0\t{"data_type": "icon", "split": "web"}'


def test_a_faithful_copy_is_not_marked_as_allowed_differences_when_the_option_is_on(tmp_path: Path) -> None:
    """hub.py: allowed_differences only when the copy differs (mutant: whenever the option is on)."""
    bench = get_benchmark("screenspot_v2")
    release = tiny_release(tmp_path / "release")
    options = bench.options_type(source="parquet", release_root=str(release), allow_copy_differences=True)
    loaded = load_source(bench, tiny_parquet(tmp_path / "copy"), options)
    provenance = loaded.summary["provenance"]
    assert provenance["release_check"]["matches"] is True
    assert provenance["allowed_differences"] is False


def _mapped(size: tuple[int, int], declared: tuple[int, int]) -> Mapped:
    row = CopyRow(Path("c.parquet"), 0, {}, "", size)
    return Mapped(row, "a_0", "tap", Box(0, 0, 1, 1), {}, size, declared)


def test_an_unreadable_embedded_image_is_not_a_size_column_difference() -> None:
    """hub.py: UNKNOWN_SIZE is listed as unreadable, not as differing (mutant: counted here)."""
    assert size_column_differences([_mapped(UNKNOWN_SIZE, (10, 10))], "image_size") == []
    assert size_column_differences([_mapped((5, 10), (10, 10))], "image_size") == [
        "1 embedded images are not the size in column 'image_size' (a_0; a_0: image 5x10 vs column 10x10)"
    ]


def test_a_two_number_polygon_is_read_by_the_release_rule_not_as_a_box() -> None:
    """hub_layouts.py: only exactly 4 numbers are a boxed polygon (mutant: <= 4)."""
    values = {"id": "X-0", "box_type": "polygon", "box_coordinates": [3.0, 4.0]}
    row = CopyRow(Path("c.parquet"), 2, values, "", (9, 9))
    release = release_osworld_region(
        {"box_type": "polygon", "box_coordinates": [3.0, 4.0]}, where="c", sample_id="X-0"
    )
    assert osworld_region(row, BenchmarkOptions(), "osworld_g") == release


def test_pixel_corners_from_normalised_values_are_rounded_to_1e3_pixel() -> None:
    """hub_layouts.py: products rounded (mutant: 0.1 * 3 = 0.30000000000000004 kept)."""
    assert 0.1 * 3 != 0.3 and 0.7 * 3 != 2.1  # the float products themselves are not the decimals
    assert from_normalized([0.1, 0.1, 0.7, 0.7], (3, 3)) == [0.3, 0.3, 2.1, 2.1]


COPY = KnownCopy("b", "r", "test-*-of-*.parquet", "parquet", None, None)


def test_every_file_of_a_copy_must_fit_its_pattern() -> None:
    """hub_copies.py: all names fit (mutant: any)."""
    assert COPY.matches(["test-00000-of-00001.parquet"]) is True
    assert COPY.matches(["test-00000-of-00001.parquet", "extra.parquet"]) is False
    assert COPY.matches([]) is False


def test_identify_needs_the_copys_layout_too() -> None:
    """hub_copies.py: a copy is identified by file names and layout (mutant: layout ignored)."""
    names = ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    known = identify("screenspot_v2", "parquet", names, LAYOUTS["screenspot_v2/hf"])
    assert known is not None and known.repository == "HongxinLi/ScreenSpot_v2"
    assert identify("screenspot_v2", "parquet", names, LAYOUTS["screenspot_pro/lmms"]) is None
