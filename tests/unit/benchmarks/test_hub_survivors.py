"""Pins of the hub modules' mutation survivors (issue 26): each test fails on the mutant named in it.

Also, on the real ScreenSpot-v2 records (skipped when ../shared/benchmarks is absent): a copy whose
rows are shuffled matches gge's shipped release digests, and one with a row dropped names that row.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hub_writers import PngCache, screenspot_hf_row, tiny_parquet, tiny_release, write_hf_parquet
from real_records import SHARED, load_json

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import UNKNOWN_SIZE, BenchmarkOptions
from gge.benchmarks.hub import load_source, size_column_differences
from gge.benchmarks.hub_copies import KnownCopy, identify
from gge.benchmarks.hub_digests import record_keys
from gge.benchmarks.hub_files import CopyRow
from gge.benchmarks.hub_layouts import LAYOUTS, Mapped, from_normalized, osworld_region
from gge.benchmarks.osworld_g import osworld_region as release_osworld_region
from gge.errors import GgeError
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


# ----------------------------------------------------------------------------------------------
# Issue 26 item 6 on the real records

V2 = SHARED / "screenspot_v2"
SPLITS = ("mobile", "desktop", "web")


def real_v2_rows() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """The real ScreenSpot-v2 records, and them as HongxinLi parquet rows in the release's order."""
    records = {s: load_json(V2 / f"screenspot_{s}_v2.json") for s in SPLITS}
    sizes = load_json(V2 / "image_sizes.json")
    png = PngCache()
    rows = [screenspot_hf_row(rec, sizes[rec["img_filename"]], png) for s in SPLITS for rec in records[s]]
    return records, rows


def the_records_of(samples: list[Sample], records: dict[str, list[dict[str, Any]]]) -> None:
    """Each sample is the raw record its id names (instruction, screenshot-free box), independently."""
    for s in samples:
        split, i = s.id.rsplit("_", 1)
        rec = records[split][int(i)]
        x, y, w, h = rec["bbox"]
        assert (s.instruction, s.labels["data_type"]) == (rec["instruction"], rec["data_type"]), s.id
        assert s.region.pixel_box() == pytest.approx((x, y, x + w, y + h), abs=1e-3), s.id


@pytest.mark.skipif(not V2.is_dir(), reason=f"real annotation records not present ({V2})")
def test_a_shuffled_real_v2_copy_matches_the_shipped_digests_and_a_dropped_row_is_named(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyarrow")
    bench = get_benchmark("screenspot_v2")
    records, rows = real_v2_rows()
    shuffled = list(rows)
    random.Random(26).shuffle(shuffled)
    write_hf_parquet(tmp_path / "shuffled" / "data" / "test-00000-of-00001.parquet", shuffled)
    loaded = load_source(bench, tmp_path / "shuffled", bench.options_type(source="parquet"))
    assert loaded.summary["provenance"]["release_check"]["matches"] is True
    expected = [f"{s}_{i}" for s in SPLITS for i in range(len(records[s]))]
    assert [s.id for s in loaded.samples] == expected  # the release's ids, in its order
    the_records_of(loaded.samples, records)
    dropped = [r for k, r in enumerate(rows) if k != len(records["mobile"]) + len(records["desktop"]) + 10]
    write_hf_parquet(tmp_path / "dropped" / "data" / "test-00000-of-00001.parquet", dropped)
    with pytest.raises(GgeError) as e:
        load_source(bench, tmp_path / "dropped", bench.options_type(source="parquet"))
    assert (
        "differs from the release: count 1271 vs release 1272; 1 release ids missing (web_10 after web_9) ("
        in (str(e.value))
    )
