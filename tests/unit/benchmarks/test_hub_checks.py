"""The release check and the copy mappings on tiny synthetic copies (no shared folder needed).

Boxes digested at 1e-3 pixel, digests that differ with no record located, embedded images whose
size disagrees with the copy's own size column, [0, 1] bbox cells holding pixels, VenusBench's TSV
against its release rules, OSWorld-G's copy without refusals, and messages that name a TSV's
physical line.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import osworld_g_folder
import pytest
from hub_writers import (
    RECORDS,
    SIZES,
    PngCache,
    png_bytes,
    screenspot_hf_row,
    screenspot_pro_release,
    tiny_parquet,
    tiny_release,
    tsv_cell,
    write_hf_parquet,
)
from PIL import Image

from gge.benchmarks import get_benchmark, hub, hub_digests
from gge.benchmarks.base import BenchmarkOptions
from gge.benchmarks.hub import load_source
from gge.benchmarks.hub_digests import compare_digests, digests, region_key
from gge.benchmarks.hub_files import CopyRow
from gge.benchmarks.hub_layouts import from_normalized, osworld_region, venus_label
from gge.benchmarks.osworld_g import osworld_region as release_osworld_region
from gge.errors import GgeError
from gge.geometry import to_original
from gge.scoring.scoring import score_sample
from gge.types import Absent, Box, Candidate, Polygon, Prediction

pytest.importorskip("pyarrow")


def without_image(samples: list[Any]) -> list[tuple[Any, ...]]:
    return [(s.benchmark, s.id, s.image_size, s.instruction, s.region, dict(s.labels)) for s in samples]


def v2(tmp_path: Path) -> tuple[Any, Path, list[Any]]:
    bench = get_benchmark("screenspot_v2")
    release = tiny_release(tmp_path / "release")
    return bench, release, bench.load(release, bench.options_type()).samples


# ----------------------------------------------------------------------------------------------
# 1. Regions to 1e-3 pixel


def test_a_box_moved_by_004_pixel_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench, release, samples = v2(tmp_path)
    w, h = SIZES["mobile_m.png"]  # mobile_1: [0, 0, 5, 5] pixels on 117 x 253
    moved = tiny_parquet(tmp_path / "moved", {"bbox": [0.0, 0.0, 4.96 / w, 5 / h]})
    # the 0.04 pixel matters: the release box holds the point (5, 5) (inclusive edges), the copy's not
    assert Box(0, 0, 5, 5).contains(5, 5) and not Box(0, 0, 4.96, 5).contains(5, 5)
    with pytest.raises(GgeError) as e:
        load_source(bench, moved, bench.options_type(source="parquet", release_root=str(release)))
    assert (
        "1 boxes differ (mobile_1; mobile_1: 'bbox/pixel 0.000 0.000 4.960 5.000' vs release "
        "'bbox/pixel 0.000 0.000 5.000 5.000')" in str(e.value)
    )
    # the same through digests (gge's shipped ones are of the real release: these are the tiny one's)
    monkeypatch.setattr(hub, "release_digests", lambda: {"screenspot_v2": {"{}": digests(samples)}})
    with pytest.raises(GgeError, match=r"differs from the release: 1 boxes differ \(mobile_1\) \(known of"):
        load_source(bench, moved, bench.options_type(source="parquet"))
    faithful = load_source(bench, tiny_parquet(tmp_path / "faithful"), bench.options_type(source="parquet"))
    assert faithful.summary["provenance"]["release_check"]["matches"] is True


def test_a_faithful_normalised_box_keys_as_the_release_pixel_box() -> None:
    """Float noise of x / w * w never reaches 1e-3 pixel: integer boxes over many screen widths."""

    def numbers(key: str) -> str:
        return key.split(" ", 1)[1]

    for w in range(1, 4000, 13):
        h = 7 + w // 3
        for x in range(0, w + 2, max(1, w // 37)):
            y = x * h // w
            pixel = Box(x, y, x + 1, y + 1)
            norm = [x / w, y / h, (x + 1) / w, (y + 1) / h]
            assert region_key(Box(*from_normalized(norm, (w, h)))) == region_key(pixel), (w, x)
            as_normalized = region_key(Box(*norm, space="normalized", size=(w, h)))
            assert numbers(as_normalized) == numbers(region_key(pixel)), (w, x)


def test_region_keys_at_1e3_pixel_by_hand() -> None:
    assert region_key(Box(1, 2, 3.04, 4.0004)) == "bbox/pixel 1.000 2.000 3.040 4.000"
    assert region_key(Box(-0.0001, 0, 1, 1)) == "bbox/pixel 0.000 0.000 1.000 1.000"  # no "-0.000"
    assert (
        region_key(Polygon(((0.5, 1), (2, 3.0016), (4, 0)))) == "polygon 0.500 1.000 2.000 3.002 4.000 0.000"
    )
    assert region_key(Absent(abstention_hits=False)) == "refusal never"


# ----------------------------------------------------------------------------------------------
# 2. A digest that differs while no record is located


def test_a_field_digest_that_differs_with_no_record_located_is_listed(tmp_path: Path) -> None:
    _, _, samples = v2(tmp_path)
    assert compare_digests(samples, digests(samples)) == []
    changed = [replace(samples[1], instruction="tap B"), *samples[:1], *samples[2:]]
    release = digests(samples)
    assert compare_digests(changed, release) == ["1 instructions differ (mobile_1)"]
    # a short-hash collision: the per-record hashes say every record is there, the full digest not
    release["instructions_records"] = digests(changed)["instructions_records"]
    assert compare_digests(changed, release) == ["instructions differ (records not located)"]


def test_the_ids_digest_is_compared_too(tmp_path: Path) -> None:
    _, _, samples = v2(tmp_path)
    renamed = [*samples[:3], replace(samples[3], id="web_9")]
    release = digests(samples)
    for field in hub_digests.RECORD_FIELDS:  # every short hash collides with the renamed copy's
        release[f"{field}_records"] = digests(renamed)[f"{field}_records"]
    assert compare_digests(renamed, release) == [
        "ids differ (records not located)",
        "boxes differ (records not located)",
        "instructions differ (records not located)",
        "image sizes differ (records not located)",
        "labels differ",
    ]


# ----------------------------------------------------------------------------------------------
# 3. Image sizes: the embedded image's header, against the copy's own size column

PRO = [
    ("app_windows_0", [10, 20, 50, 40]),
    ("app_windows_1", [0, 0, 200, 100]),
    ("app_windows_2", [150, 60, 170, 90]),
]
PRO_SIZE = [200, 100]


def pro_release(root: Path) -> Path:
    return screenspot_pro_release(root, PRO, (PRO_SIZE[0], PRO_SIZE[1]))


def pro_copy(root: Path, image_sizes: list[tuple[int, int]]) -> Path:
    png = PngCache()
    rows = [
        {
            "id": sid,
            "instruction": f"click {sid}",
            "bbox": bbox,
            "img_size": PRO_SIZE,
            "group": "Office",
            "ui_type": "icon",
            "platform": "windows",
            "application": "app",
            "image": (png(size), "shot.png"),
        }
        for (sid, bbox), size in zip(PRO, image_sizes, strict=True)
    ]
    write_hf_parquet(root / "data" / "train-00000-of-00001.parquet", rows)
    return root


def test_an_embedded_image_smaller_than_its_size_column_is_refused_naming_the_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = get_benchmark("screenspot_pro")
    release = pro_release(tmp_path / "release")
    expected = bench.load(release, bench.options_type())
    faithful = load_source(
        bench,
        pro_copy(tmp_path / "faithful", [(200, 100)] * 3),
        bench.options_type(release_root=str(release)),
    )
    assert without_image(faithful.samples) == without_image(expected.samples)
    assert faithful.summary["provenance"]["release_check"]["matches"] is True
    small = pro_copy(tmp_path / "small", [(200, 100), (100, 50), (100, 50)])
    with pytest.raises(GgeError) as e:
        load_source(bench, small, bench.options_type(release_root=str(release)))
    msg = str(e.value)
    assert "\n" not in msg
    assert (
        "differs from the release: 2 embedded images are not the size in column 'img_size' "
        "(app_windows_1, app_windows_2; app_windows_1: image 100x50 vs column 200x100)"
    ) in msg
    allowed = load_source(
        bench, small, bench.options_type(release_root=str(release), allow_copy_differences=True)
    )
    check = allowed.summary["provenance"]["release_check"]
    assert check["matches"] is False
    assert (
        check["not_compared"]
        == "screenshot pixels (only each image's size, read from the embedded image's header)"
    )
    # against digests: the header sizes are compared with the release's image sizes, record by record
    tiny = {"screenspot_pro": {'{"language": "en"}': digests(expected.samples)}}
    monkeypatch.setattr(hub, "release_digests", lambda: tiny)
    with pytest.raises(
        GgeError,
        match=r"differs from the release: 2 embedded images are not the size in column 'img_size' "
        r"\(app_windows_1, app_windows_2; app_windows_1: image 100x50 vs column 200x100\) "
        r"\(known of lmms-lab",
    ):
        load_source(bench, small, bench.options_type())
    # Run anyway, the sample's size is the recorded img_size, as the release records it, and the box the
    # release's [0, 1] box: a model's answer is mapped to that size, so point and box share one frame.
    assert allowed.samples[1].image_size == (200, 100)
    assert allowed.samples[2].region == Box(0.75, 0.6, 0.85, 0.9, space="normalized", size=(200, 100))
    sample = allowed.samples[2]
    x, y = to_original(800, 750, "norm_1000", sample.image_size)  # the box's centre, in 0..1000
    assert score_sample(sample, Prediction(sample.benchmark, sample.id, (Candidate((x, y)),)), k=1).top1[
        "first"
    ]


# ----------------------------------------------------------------------------------------------
# 4. [0, 1] bbox cells


def test_a_normalised_bbox_cell_holding_pixels_is_refused(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    copy = tiny_parquet(tmp_path / "pixels", {"bbox": [0.0, 0.0, 5.0, 5.0]})
    with pytest.raises(GgeError) as e:
        load_source(bench, copy, bench.options_type(source="parquet"))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(
        f"{copy / 'data' / 'test-00000-of-00002.parquet'}: row 1: column 'bbox' must hold [0, 1]"
    )
    assert "got 5.0 in [0.0, 0.0, 5.0, 5.0] (image 117x253)" in msg


def test_a_normalised_box_may_reach_one_pixel_past_the_screen_as_the_release_does(tmp_path: Path) -> None:
    bench, release, _ = v2(tmp_path)
    w, h = SIZES["mobile_m.png"]
    one_past = tiny_parquet(tmp_path / "one", {"bbox": [0.0, 0.0, (w + 1) / w, 5 / h]})
    loaded = load_source(
        bench,
        one_past,
        bench.options_type(source="parquet", release_root=str(release), allow_copy_differences=True),
    )
    assert loaded.samples[1].region == Box(0, 0, w + 1, 5)
    two_past = tiny_parquet(tmp_path / "two", {"bbox": [0.0, 0.0, (w + 2) / w, 5 / h]})
    with pytest.raises(GgeError, match=r"row 1: column 'bbox' must hold \[0, 1\] units"):
        load_source(bench, two_past, bench.options_type(source="parquet"))


# ----------------------------------------------------------------------------------------------
# 5, 7. VenusBench-GD's TSV: the release's refusal and label rules; messages name the physical line

VENUS = [
    # (subtask, instruction, bbox or None for no bbox, ui_type or None, application or None)
    ("element", "click a", [10, 20, 30, 40], "text", "chrome"),
    ("refusal", "not there\nacross two lines", [-1, -1, -1, -1], "icon", "chrome"),
    ("refusal", "no box at all", None, "icon", None),
    ("element", "the other", [0, 0, 100, 50], None, "chrome"),
]


def venus_release(root: Path) -> Path:
    (root / "instruction").mkdir(parents=True)
    (root / "images" / "web").mkdir(parents=True)
    Image.new("1", (200, 100)).save(root / "images" / "web" / "a.png")
    by_subtask: dict[str, list[dict[str, Any]]] = {}
    for subtask, instruction, bbox, ui_type, application in VENUS:
        rec: dict[str, Any] = {"img_filename": "web/a.png", "instruction": instruction}
        rec.update(
            {k: v for k, v in (("bbox", bbox), ("ui_type", ui_type), ("application", application)) if v}
        )
        by_subtask.setdefault(subtask, []).append(rec)
    for subtask, recs in by_subtask.items():
        (root / "instruction" / f"{subtask}.json").write_text(json.dumps(recs), encoding="utf-8")
    return root


def venus_tsv(path: Path, bad_bbox: str | None = None) -> Path:
    shot = base64.b64encode(png_bytes((200, 100))).decode()
    lines = ["index\timage\timage_path\tquestion\tbbox\tcategory\tui_type\tapplication"]
    for i, (subtask, instruction, bbox, ui_type, application) in enumerate(VENUS):
        image = shot if i == 0 else "0"
        box = "" if bbox is None else str(bbox)
        instruction = tsv_cell(instruction)  # the second one is quoted: its record spans 2 lines
        if i == 3 and bad_bbox is not None:
            box = bad_bbox
        lines.append(
            f"{i}\t{image}\tweb/a.png\t{instruction}\t{box}\t{subtask}\t{ui_type or ''}\t{application or ''}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_venusbench_tsv_follows_the_release_refusal_and_label_rules(tmp_path: Path) -> None:
    bench = get_benchmark("venusbench_gd")
    release_root = venus_release(tmp_path / "release")
    release = bench.load(release_root, bench.options_type())
    tsv = venus_tsv(tmp_path / "copy" / "VenusBench.tsv")
    options = bench.options_type(release_root=str(release_root))
    loaded = load_source(bench, tsv.parent, options)
    # the copy's rows (element, refusal, refusal, element) come back in the release's order
    assert [s.id for s in loaded.samples] == ["element_0", "element_1", "refusal_0", "refusal_1"]
    assert without_image(loaded.samples) == without_image(release.samples)
    assert loaded.summary["provenance"]["release_check"]["matches"] is True
    element_1, refusal_1 = loaded.samples[1], loaded.samples[3]
    assert refusal_1.region == Absent()  # no bbox: a refusal, as the release reads it
    assert dict(refusal_1.labels)["application"] == "unknown"
    assert dict(element_1.labels)["ui_type"] == "unknown"


def test_a_tsv_row_error_names_its_physical_line(tmp_path: Path) -> None:
    bench = get_benchmark("venusbench_gd")
    tsv = venus_tsv(tmp_path / "VenusBench.tsv", bad_bbox="[1, 2, 3]")
    # header line 1, records on lines 2, 3-4 (a quoted newline), 5, 6: the fourth record is on line 6
    assert tsv.read_text(encoding="utf-8").splitlines()[5].startswith("3\t0\t")
    with pytest.raises(GgeError, match=rf"^{tsv}:6: column 'bbox' must be 4 numbers, got \[1, 2, 3\]$"):
        load_source(bench, tmp_path, bench.options_type(allow_copy_differences=True))


def test_a_venus_label_that_is_not_a_string_is_refused() -> None:
    row = CopyRow(Path("v.parquet"), 4, {"ui_type": 3, "application": "", "platform": None}, "", (9, 9))
    assert venus_label(row, "application") == "unknown"
    assert venus_label(row, "platform") == "unknown"
    with pytest.raises(GgeError, match=r"^v.parquet: row 4: column 'ui_type' must be a string, got 3$"):
        venus_label(row, "ui_type")


# ----------------------------------------------------------------------------------------------
# 6, 8. OSWorld-G's MMInstruction copy: refusal rows left out with refusals=excluded; its regions


def osworld_copy(root: Path) -> Path:
    png = png_bytes(osworld_g_folder.SIZE)
    rows = [
        {
            "id": sid,
            "instruction": f"click {sid}",
            "image_size": list(osworld_g_folder.SIZE),
            "box_type": kind,
            "box_coordinates": [float(v) for v in coords],
            "image": (png, "shot.png"),
        }
        for sid, kind, coords in osworld_g_folder.RECORDS
    ]
    write_hf_parquet(root / "data" / "test-00000-of-00001.parquet", rows)
    return root


@pytest.mark.parametrize("refusals", ["excluded", "scored", "miss"])
def test_an_osworld_copy_with_refusal_rows_reads_as_the_release_does(refusals: str, tmp_path: Path) -> None:
    bench = get_benchmark("osworld_g")
    release_root = osworld_g_folder.write_folder(tmp_path)
    options = bench.options_type(refusals=refusals, release_root=str(release_root))
    loaded = load_source(bench, osworld_copy(tmp_path / "copy"), options)
    release = bench.load(release_root, bench.options_type(refusals=refusals))
    assert without_image(loaded.samples) == without_image(release.samples)
    assert len(loaded.samples) == {"excluded": 5, "scored": 8, "miss": 8}[refusals]
    assert loaded.summary["variant"] == release.summary["variant"]
    assert loaded.summary["provenance"]["release_check"]["matches"] is True
    left_out = [n for n in loaded.summary["notes"] if "rows left out" in n]
    assert left_out == (
        ["3 of the copy's 8 rows left out, as the release loader leaves those records out with these options"]
        if refusals == "excluded"
        else []
    )


def row_of(box_type: str, coords: list[float]) -> CopyRow:
    return CopyRow(
        Path("c.parquet"), 2, {"id": "X-0", "box_type": box_type, "box_coordinates": coords}, "", (9, 9)
    )


def test_osworld_copy_regions_are_the_loaders_but_a_four_number_polygon() -> None:
    opts = BenchmarkOptions()
    for kind, coords in (("bbox", [1.0, 2.0, 3.0, 4.0]), ("polygon", [0.0, 0.0, 4.0, 0.0, 4.0, 4.0])):
        rec = {"box_type": kind, "box_coordinates": coords}
        assert osworld_region(row_of(kind, coords), opts, "osworld_g") == release_osworld_region(
            rec, where="c", sample_id="X-0"
        )
    assert osworld_region(row_of("bbox", [1.0, 2.0, 3.0, 4.0]), opts, "osworld_g") == Box(1, 2, 4, 6)
    assert osworld_region(row_of("refusal", [0.0] * 4), BenchmarkOptions(), "osworld_g") == Absent()
    # a boxed polygon (MMInstruction's copy): the corners of its box, where the loader's rule would give
    # a 2-vertex polygon that no point is inside
    boxed = [100.0, 10.0, 150.0, 60.0]
    assert osworld_region(row_of("polygon", boxed), opts, "osworld_g") == Box(100, 10, 150, 60)
    degenerate = release_osworld_region(
        {"box_type": "polygon", "box_coordinates": boxed}, where="c", sample_id="X-0"
    )
    assert isinstance(degenerate, Polygon) and degenerate.degenerate and not degenerate.contains(125, 35)
    with pytest.raises(
        GgeError, match=r"^c.parquet: row 2: record X-0: field 'box_coordinates' of a polygon"
    ):
        osworld_region(row_of("polygon", [1.0, 2.0, 3.0, 4.0, 5.0]), opts, "osworld_g")


def test_the_release_key_of_a_box_names_its_point_rule() -> None:
    """A showdown-clicks copy whose boxes lost the int-point rule would score otherwise: it must differ."""
    assert region_key(Box(1, 2, 3, 4, integer_point=True)) == "bbox/pixel/int 1.000 2.000 3.000 4.000"
    assert region_key(Box(1, 2, 3, 4)) == "bbox/pixel 1.000 2.000 3.000 4.000"


def test_the_docs_list_every_known_copy() -> None:
    from paths import ROOT

    from gge.benchmarks.hub_copies import KNOWN_COPIES, copies_table

    page = (ROOT / "docs" / "hub-copies.md").read_text(encoding="utf-8")
    assert copies_table() in page  # regenerate the page's table when the known copies change
    assert len(copies_table().splitlines()) == 2 + len(KNOWN_COPIES)


# ----------------------------------------------------------------------------------------------
# 9. Rows numbered by position: matched to the release by content (issue 26, item 6)

WEB = [  # on web_w.png (128 x 96): a shared instruction told apart by its box, and an exact duplicate
    ("open d", [7, 9, 11, 13]),
    ("open e", [20, 20, 10, 10]),
    ("open e", [40, 40, 10, 10]),
    ("open f", [1, 1, 5, 5]),
    ("open f", [1, 1, 5, 5]),
    ("close", [60, 60, 5, 5]),
]


def web_records() -> dict[str, list[dict[str, Any]]]:
    web = [
        {"img_filename": "web_w.png", "bbox": b, "instruction": t, "data_type": "text", "data_source": "shop"}
        for t, b in WEB
    ]
    return {**RECORDS, "web": web}


def numbered_release(root: Path, version: str = "v2") -> Path:
    """:func:`web_records` in ScreenSpot-v2's (or v1's) release layout, black screenshots of SIZES."""
    suffix, folder = ("_v2", "screenspotv2_image") if version == "v2" else ("", "screenspot_imgs")
    (root / folder).mkdir(parents=True)
    for split, recs in web_records().items():
        (root / f"screenspot_{split}{suffix}.json").write_text(json.dumps(recs), encoding="utf-8")
    for name, size in SIZES.items():
        Image.new("1", size).save(root / folder / name)
    return root


def copy_rows() -> list[dict[str, Any]]:
    """The release records as HF-copy rows, in the release's order (mobile, desktop, web)."""
    png = PngCache()
    recs = web_records()
    return [
        screenspot_hf_row(rec, SIZES[rec["img_filename"]], png)
        for s in ("mobile", "desktop", "web")
        for rec in recs[s]
    ]


def hf_copy(root: Path, rows: list[dict[str, Any]]) -> Path:
    write_hf_parquet(root / "data" / "test-00000-of-00001.parquet", rows)
    return root


def both_checks(
    bench: Any, release: Path, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, dict[str, Any]]]:
    """The two checks: record by record against release_root, and against (the tiny release's) digests."""
    samples = bench.load(release, bench.options_type()).samples
    monkeypatch.setattr(hub, "release_digests", lambda: {bench.name: {"{}": digests(samples)}})
    return [("release_root", {"release_root": str(release)}), ("digests", {})]


def test_a_shuffled_faithful_copy_matches_the_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = get_benchmark("screenspot_v2")
    release = numbered_release(tmp_path / "release")
    expected = without_image(bench.load(release, bench.options_type()).samples)
    rows = copy_rows()
    shuffled = [rows[i] for i in (8, 2, 7, 0, 5, 1, 4, 3, 6)]  # web rows and splits interleaved
    copy = hf_copy(tmp_path / "copy", shuffled)
    for how, options in both_checks(bench, release, monkeypatch):
        loaded = load_source(bench, copy, bench.options_type(source="parquet", **options))
        assert loaded.summary["provenance"]["release_check"]["matches"] is True, how
        assert without_image(loaded.samples) == expected, how  # the release's ids, order and fields


def test_a_dropped_row_is_named_with_its_neighbour_not_a_cascade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = get_benchmark("screenspot_v2")
    release = numbered_release(tmp_path / "release")
    rows = copy_rows()
    del rows[4]  # web_1 ("open e" at [20, 20]): web_2 .. web_5 would each move up one place
    copy = hf_copy(tmp_path / "copy", rows)
    for how, options in both_checks(bench, release, monkeypatch):
        loaded = load_source(
            bench, copy, bench.options_type(source="parquet", allow_copy_differences=True, **options)
        )
        assert loaded.summary["provenance"]["release_check"]["differences"] == [
            "count 8 vs release 9",
            "1 release ids missing (web_1 after web_0)",
        ], how
        web = [(s.id, s.instruction, s.region) for s in loaded.samples if s.id.startswith("web")]
        assert [w[0] for w in web] == ["web_0", "web_2", "web_3", "web_4", "web_5"], how
        assert web[1][1:] == ("open e", Box(40, 40, 50, 50)), how  # the second "open e", by its box


def test_an_extra_row_is_named_with_the_row_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = get_benchmark("screenspot_v2")
    release = numbered_release(tmp_path / "release")
    rows = copy_rows()
    extra = {**rows[5], "instruction": "not in the release"}
    rows.insert(6, extra)  # after web_2
    copy = hf_copy(tmp_path / "copy", rows)
    for how, options in both_checks(bench, release, monkeypatch):
        with pytest.raises(GgeError) as e:
            load_source(bench, copy, bench.options_type(source="parquet", **options))
        assert (
            "differs from the release: count 10 vs release 9; 1 ids not in the release (web_6 after web_2)"
            in str(e.value)
        ), how


def test_a_v1_copy_that_cannot_be_checked_suggests_release_root(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v1")
    copy = hf_copy(tmp_path / "copy", copy_rows())
    with pytest.raises(GgeError) as e:
        load_source(bench, copy, bench.options_type(source="parquet"))
    msg = str(e.value)
    assert "cannot be checked against the release (gge has no release digest of screenspot_v1" in msg
    assert "set bench.screenspot_v1.release_root=DIR" in msg
    assert msg.endswith(
        "set bench.screenspot_v1.allow_copy_differences=true to evaluate it anyway "
        "(its headline is then not the official one)"
    )
    release = numbered_release(tmp_path / "release", "v1")
    loaded = load_source(bench, copy, bench.options_type(source="parquet", release_root=str(release)))
    assert loaded.summary["provenance"]["release_check"]["matches"] is True


def test_a_release_root_without_screenshots_says_so_naming_the_folder(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v1")
    release = numbered_release(tmp_path / "release", "v1")
    for png in (release / "screenspot_imgs").iterdir():
        png.unlink()
    copy = hf_copy(tmp_path / "copy", copy_rows())
    with pytest.raises(GgeError) as e:
        load_source(bench, copy, bench.options_type(source="parquet", release_root=str(release)))
    msg = str(e.value)
    assert "1x1" not in msg
    assert (
        f"cannot be checked against the release (image sizes not checked: the screenshots of 9 of the "
        f"release's 9 records are missing or unreadable under {release} (first: "
        f"{release / 'screenspot_imgs' / 'mobile_m.png'}))"
    ) in msg
