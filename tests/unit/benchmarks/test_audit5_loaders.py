"""Audit 5's surviving mutants of the loaders and Hub copies, and ScreenSpot-Pro's one id per sample.

WebClick's box units and layouts, GroundUI's ``edges`` resume, RUC's layouts, categories, messages
and the dark_box note, ScreenSpot-Pro's ``gt_type`` tables and ids (a negative copy is ``<id>_negative``
under ``negative`` and ``all``; a replay of positive ids under ``negative`` is refused naming the
variant), a Hub copy's unreadable image and a release without screenshots, and the release
comparisons' neighbours. Expected values are written out by hand from the planted records.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hub_writers import RECORDS, SIZES, PngCache, screenspot_hf_row, screenspot_pro_release, write_hf_parquet
from PIL import Image

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import UNKNOWN_SIZE
from gge.benchmarks.groundui import GroundUIOptions
from gge.benchmarks.hub import load_source, release_check
from gge.benchmarks.hub_digests import compare_digests, compare_samples, digests
from gge.benchmarks.ruc import RUCOptions, instruction_of
from gge.benchmarks.screenspot_pro import ScreenSpotPro, ScreenSpotProOptions
from gge.benchmarks.webclick import WebClickOptions
from gge.errors import GgeError
from gge.run.runstate import asked_digest
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box, Sample


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 210, 220)).save(buf, "PNG")
    return buf.getvalue()


def _run(args: list[str], out: io.StringIO | None = None) -> dict[str, Any]:
    return run(parse_args(args), out=out if out is not None else io.StringIO())


def _replay(path: Path, benchmark: str, lines: list[tuple[str, Any]]) -> Path:
    path.write_text(
        "".join(json.dumps({"benchmark": benchmark, "id": i, "candidates": [p]}) + "\n" for i, p in lines)
    )
    return path


# ----------------------------------------------------------------------------------------------
# WebClick (WC01, WC03, WC05)


def _wc_row(bbox: list[float], image: bytes | None = None) -> dict[str, Any]:
    return {
        "image": {"bytes": image if image is not None else _png((200, 100)), "path": None},
        "instruction": "open menu",
        "bbox": bbox,
        "bucket": "agentbrowse",
    }


def _wc_write(path: Path, rows: list[dict[str, Any]]) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_pixel_boxes_holding_a_0_or_a_1_are_read_as_pixels(tmp_path: Path) -> None:
    """WC01: each box has a value in [0, 1] but not all four: pixels (not 50 screen widths)."""
    rows = [_wc_row([0, 0, 50, 40]), _wc_row([1, 1, 120, 90])]
    root = _wc_write(tmp_path / "wc" / "data" / "test-00000-of-00001.parquet", rows).parent.parent
    loaded = get_benchmark("webclick").load(root, WebClickOptions())
    assert loaded.summary["variant"]["bbox"] == "pixels"
    assert [s.region for s in loaded.samples] == [Box(0, 0, 50, 40), Box(1, 1, 120, 90)]


def test_a_normalised_box_on_an_unreadable_image_is_refused_naming_the_row(tmp_path: Path) -> None:
    """WC03: the box needs its image's size; a junk image header is refused, naming file and row."""
    rows = [_wc_row([0.1, 0.1, 0.2, 0.2]), _wc_row([0.5, 0.5, 0.6, 0.6], image=b"not an image")]
    root = _wc_write(tmp_path / "wc" / "data" / "test-00000-of-00001.parquet", rows).parent.parent
    with pytest.raises(GgeError) as e:
        get_benchmark("webclick").load(root, WebClickOptions())
    assert "\n" not in str(e.value)
    assert str(e.value).endswith(
        "test-00000-of-00001.parquet: row 1: its image's header cannot be read "
        "(a normalised box needs its size)"
    )
    # as pixels the box needs no size: the row loads, its screenshot unreadable
    loaded = get_benchmark("webclick").load(root, WebClickOptions(bbox="pixels"))
    assert loaded.samples[1].image_size == UNKNOWN_SIZE and loaded.samples[1].region == Box(
        0.5, 0.5, 0.6, 0.6
    )


def test_parquet_files_directly_in_the_root_are_read(tmp_path: Path) -> None:
    """WC05: no data/ folder: the root's own *.parquet, in name order."""
    root = tmp_path / "wc"
    _wc_write(root / "b.parquet", [_wc_row([0.5, 0.5, 1.0, 1.0])])
    _wc_write(root / "a.parquet", [_wc_row([0.1, 0.1, 0.2, 0.3])])
    loaded = get_benchmark("webclick").load(root, WebClickOptions())
    assert [(s.id, s.region) for s in loaded.samples] == [
        ("test_0", Box(0.1, 0.1, 0.2, 0.3, "normalized", (200, 100))),
        ("test_1", Box(0.5, 0.5, 1.0, 1.0, "normalized", (200, 100))),
    ]
    assert [f["path"] for f in loaded.summary["provenance"]["files"]] == ["a.parquet", "b.parquet"]


# ----------------------------------------------------------------------------------------------
# GroundUI (GU02)


def test_a_rerun_with_the_edges_included_resumes_and_rescores(tmp_path: Path) -> None:
    """GU02: ``edges`` is not predictive: the same folder resumes, the edge point now a hit."""
    folder = tmp_path / "groundui" / "gui_grounding"
    (folder / "images").mkdir(parents=True)
    Image.new("RGB", (200, 100)).save(folder / "images" / "web_a.png")
    line = {
        "image": "web_a.png",
        "instruction": "open menu",
        "bbox": [10, 10, 30, 20],
        "source": "omniact",
        "platform": "web",
        "resolution": [200, 100],
        "raw_instruction": "menu",
    }
    (folder / "metadata_1k.jsonl").write_text(json.dumps(line) + "\n")
    preds = _replay(tmp_path / "p.jsonl", "groundui_1k", [("0", [10, 15])])  # on the left edge
    args = [
        f"bench.groundui_1k.root={tmp_path / 'groundui'}",
        f"model.predictions={preds}",
        f"output_dir={tmp_path / 'o'}",
        "benchmarks=[groundui_1k]",
    ]
    strict = _run(args)["benchmarks"]["groundui_1k"]
    assert strict["top1"] == 0.0
    out = io.StringIO()
    included = _run([*args, "bench.groundui_1k.edges=included", "resume=true"], out)["benchmarks"][
        "groundui_1k"
    ]
    assert "resuming: 1 samples already finished" in out.getvalue()
    assert included["top1"] == 100.0
    assert "edges" in GroundUIOptions.NOT_PREDICTIVE


# ----------------------------------------------------------------------------------------------
# RUC (RU01, RU04, RU06, RU07)


def _ruc_rec(sid: int, kind: str = "Normal", **more: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": sid,
        "type": kind,
        "category": "fake_button" if kind == "Deception" else None,
        "image_path": f"images/{sid}.png",
        "image_width": 100,
        "image_height": 100,
        "correct_box": {"bbox": [10, 10, 30, 30]},
        "messages": [{"role": "user", "content": f"click {sid}"}],
    }
    if kind == "Deception":
        rec["dark_box"] = {"bbox": [50, 10, 70, 30]}
    rec.update(more)
    return rec


def _ruc_write(root: Path, name: str, records: list[dict[str, Any]]) -> Path:
    (root / "images").mkdir(parents=True, exist_ok=True)
    for r in records:
        Image.new("RGB", (100, 100)).save(root / r["image_path"])
    text = "".join(json.dumps(r) + "\n" for r in records) if name.endswith(".jsonl") else json.dumps(records)
    (root / name).write_text(text)
    return root


def test_the_full_split_reads_full_json_where_merged_jsonl_is_there_too(tmp_path: Path) -> None:
    """RU01: both layouts in one folder: split=full is full.json, not the earlier merged.jsonl."""
    root = _ruc_write(tmp_path / "ruc", "full.json", [_ruc_rec(1), _ruc_rec(2)])
    _ruc_write(root, "merged.jsonl", [_ruc_rec(7), _ruc_rec(8), _ruc_rec(9)])
    loaded = get_benchmark("ruc").load(root, RUCOptions())
    assert [s.id for s in loaded.samples] == ["1", "2"]
    assert loaded.summary["variant"]["split"] == "full" and loaded.summary["files"] == ["full.json"]
    merged = get_benchmark("ruc").load(root, RUCOptions(split="merged"))
    assert [s.id for s in merged.samples] == ["7", "8", "9"]


def test_an_empty_category_is_labelled_none(tmp_path: Path) -> None:
    """RU04: ``""`` and a missing category are one table row, ``none``."""
    records = [_ruc_rec(1, category=""), _ruc_rec(2), _ruc_rec(3, category="ad")]
    loaded = get_benchmark("ruc").load(_ruc_write(tmp_path / "ruc", "full.json", records), RUCOptions())
    assert [s.labels["category"] for s in loaded.samples] == ["none", "none", "ad"]


def test_a_blank_user_message_is_not_the_instruction() -> None:
    """RU06: the first user message with text is the instruction."""
    messages = [{"role": "user", "content": "   "}, {"role": "user", "content": "Click Buy"}]
    assert instruction_of(messages, "f:1") == "Click Buy"
    with pytest.raises(GgeError, match=r"^f:2: messages has no user message with text$"):
        instruction_of([{"role": "user", "content": " "}], "f:2")


def test_records_whose_dark_box_does_not_follow_their_type_are_noted(tmp_path: Path) -> None:
    """RU07: a Deception without dark_box and a Normal with one are named in one note."""
    records = [
        _ruc_rec(1),
        _ruc_rec(2, "Deception"),
        _ruc_rec(3, "Deception", dark_box=None),
        _ruc_rec(4, dark_box={"bbox": [50, 10, 70, 30]}),
    ]
    loaded = get_benchmark("ruc").load(_ruc_write(tmp_path / "ruc", "full.json", records), RUCOptions())
    assert [s.decoy is not None for s in loaded.samples] == [False, True, False, True]
    assert loaded.summary["notes"] == [
        "2 records whose dark_box does not follow their type (a Deception without one, or a Normal with "
        "one): decoy_clicks counts the samples with a decoy, not the Deception ones: 3, 4"
    ]
    fine = [_ruc_rec(1), _ruc_rec(2, "Deception")]
    assert (
        get_benchmark("ruc")
        .load(_ruc_write(tmp_path / "ok", "full.json", fine), RUCOptions())
        .summary["notes"]
        == []
    )


# ----------------------------------------------------------------------------------------------
# ScreenSpot-Pro: gt_type's tables (SP01) and one id per sample (issue item 1)

PRO_RECORDS = [("app_windows_0", [10, 20, 50, 40]), ("app_windows_1", [150, 60, 170, 90])]


def _pro(root: Path) -> Path:
    return screenspot_pro_release(root, PRO_RECORDS, (200, 100), mode="RGB")


def test_a_negative_only_run_keeps_the_class_tables_with_the_gt_type_label() -> None:
    """SP01: nothing is blended under gt_type=negative: the class's tables, not 'by gt_type'."""
    negative = ScreenSpotPro("negative")
    assert [t.title for t in negative.tables] == ["By group", "By application", "By platform"]
    assert negative.label_keys == ("group", "ui_type", "platform", "application", "gt_type")
    assert [t.title for t in ScreenSpotPro("all").tables][:2] == ["By gt_type", "By group and gt_type"]


def test_a_record_has_one_id_per_copy_whatever_the_variant(tmp_path: Path) -> None:
    """Item 1: the positive copy of X is X, its negative copy X_negative, under every gt_type."""
    root = _pro(tmp_path / "pro")
    bench = get_benchmark("screenspot_pro")

    def ids(gt_type: str) -> list[str]:
        opts = ScreenSpotProOptions(gt_type=gt_type)
        return [s.id for s in bench.configured(opts).load(root, opts).samples]

    assert ids("positive") == ["app_windows_0", "app_windows_1"]
    assert ids("negative") == ["app_windows_0_negative", "app_windows_1_negative"]
    assert ids("all") == [
        "app_windows_0",
        "app_windows_0_negative",
        "app_windows_1",
        "app_windows_1_negative",
    ]


def _pro_args(tmp_path: Path, preds: Path, gt_type: str, out: str = "o") -> list[str]:
    return [
        f"bench.screenspot_pro.root={tmp_path / 'pro'}",
        f"bench.screenspot_pro.gt_type={gt_type}",
        f"model.predictions={preds}",
        f"output_dir={tmp_path / out}",
        "benchmarks=[screenspot_pro]",
    ]


def test_a_replay_of_positive_ids_under_negative_is_refused_naming_the_variant(tmp_path: Path) -> None:
    """Item 1: a positive pass's file scored as negatives would be 0.00 with every sample not in it."""
    _pro(tmp_path / "pro")
    # app_windows_0's box is (10, 20)-(50, 40): (30, 30) inside; app_windows_1 abstains
    positive = _replay(
        tmp_path / "pos.jsonl", "screenspot_pro", [("app_windows_0", [30, 30]), ("app_windows_1", None)]
    )
    with pytest.raises(GgeError) as e:
        _run(_pro_args(tmp_path, positive, "negative"))
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == (
        f"{positive}:1: screenspot_pro is read with gt_type=negative, whose samples are the records' "
        "negative copies (app_windows_0_negative), and none of the file's lines answers one: its 2 "
        "screenspot_pro ids are the positive copies' (app_windows_0): a gt_type=positive file, or one "
        "written before gge named the negative copies so; replay it with "
        "bench.screenspot_pro.gt_type=positive (or all), or name its negative lines <id>_negative"
    )
    # the same file under positive: 1 of 2; under all: the positives answered, the negatives not in it
    assert (
        _run(_pro_args(tmp_path, positive, "positive", "o1"))["benchmarks"]["screenspot_pro"]["top1"] == 50.0
    )
    both = _run(_pro_args(tmp_path, positive, "all", "o2"))["benchmarks"]["screenspot_pro"]
    assert both["samples"] == 4 and both["top1"] == 25.0 and both["missing_predictions"] == 2
    # a file of the negative ids: app_windows_0_negative answers a point (a miss), _1 abstains (a hit)
    negative = _replay(
        tmp_path / "neg.jsonl",
        "screenspot_pro",
        [("app_windows_0_negative", [30, 30]), ("app_windows_1_negative", [-1, -1])],
    )
    neg = _run(_pro_args(tmp_path, negative, "negative", "o3"))["benchmarks"]["screenspot_pro"]
    assert neg["samples"] == 2 and neg["top1"] == 50.0 and neg["missing_predictions"] == 0


def test_a_folder_written_under_the_earlier_negative_ids_is_refused_not_mixed(tmp_path: Path) -> None:
    """Item 1: a folder whose run.json records the negatives under their positive ids is another run."""
    root = _pro(tmp_path / "pro")
    negative = _replay(
        tmp_path / "neg.jsonl",
        "screenspot_pro",
        [("app_windows_0_negative", [30, 30]), ("app_windows_1_negative", [-1, -1])],
    )
    args = _pro_args(tmp_path, negative, "negative")
    _run(args)
    # what the gge before wrote: the same samples under their records' ids
    opts = ScreenSpotProOptions(gt_type="negative")
    samples = get_benchmark("screenspot_pro").configured(opts).load(root, opts).samples
    earlier = [replace(s, id=s.id.removesuffix("_negative")) for s in samples]
    run_file = tmp_path / "o" / "run.json"
    record = json.loads(run_file.read_text())
    record["fingerprint"]["benchmarks"]["screenspot_pro"]["samples"] = asked_digest(earlier)
    run_file.write_text(json.dumps(record))
    with pytest.raises(GgeError) as e:
        _run([*args, "resume=true"])
    assert "holds predictions of a different run" in str(e.value)
    assert "benchmarks.screenspot_pro.samples" in str(e.value) and "\n" not in str(e.value)


# ----------------------------------------------------------------------------------------------
# Hub copies (HU08, HU09) and the release comparisons (HD03, HD04)


def _pro_copy(path: Path, junk: bool = False) -> Path:
    """PRO_RECORDS as the lmms-lab parquet copy's rows in ``path`` (the second image junk bytes)."""
    png = PngCache()
    rows = [
        {
            "id": sid,
            "instruction": f"click {sid}",
            "bbox": bbox,
            "img_size": [200, 100],
            "group": "Office",
            "ui_type": "icon",
            "platform": "windows",
            "application": "app",
            "image": (b"junk" if junk and i == 1 else png((200, 100)), "shot.png"),
        }
        for i, (sid, bbox) in enumerate(PRO_RECORDS)
    ]
    return write_hf_parquet(path, rows)


def test_a_copy_row_whose_image_cannot_be_read_stays_unreadable(tmp_path: Path) -> None:
    """HU08: an unreadable embedded image does not take its size column's value (not scored as read)."""
    pytest.importorskip("pyarrow")
    _pro_copy(tmp_path / "copy" / "data" / "train-00000-of-00001.parquet", junk=True)
    release = _pro(tmp_path / "release")
    bench = get_benchmark("screenspot_pro")
    options = bench.options_type(source="parquet", release_root=str(release), allow_copy_differences=True)
    loaded = load_source(bench, tmp_path / "copy", options)
    assert [s.image_size for s in loaded.samples] == [(200, 100), UNKNOWN_SIZE]


def test_the_copy_record_says_whether_the_copy_is_a_known_one(tmp_path: Path) -> None:
    """hub.py: provenance.copy of lmms-lab's file names is known; other file names are not."""
    pytest.importorskip("pyarrow")
    release = _pro(tmp_path / "release")
    bench = get_benchmark("screenspot_pro")
    options = bench.options_type(source="parquet", release_root=str(release))
    _pro_copy(tmp_path / "known" / "data" / "train-00000-of-00001.parquet")
    known = load_source(bench, tmp_path / "known", options).summary["provenance"]["copy"]
    assert known["known"] is True and known["repository"] == "lmms-lab/ScreenSpot-Pro"
    _pro_copy(tmp_path / "mine" / "screens.parquet")
    mine = load_source(bench, tmp_path / "mine", options).summary["provenance"]["copy"]
    assert (mine["known"], mine["repository"], mine["files"]) == (False, None, ["screens.parquet"])


V1 = {"mobile": RECORDS["mobile"][:1], "desktop": RECORDS["desktop"], "web": RECORDS["web"]}
"""Three records of hub_writers' tiny ScreenSpot, each on its own screenshot."""


def _v1_release(root: Path) -> Path:
    """:data:`V1` in ScreenSpot v1's release layout, the screenshots folder empty."""
    (root / "screenspot_imgs").mkdir(parents=True)
    for split, recs in V1.items():
        (root / f"screenspot_{split}.json").write_text(json.dumps(recs), encoding="utf-8")
    return root


def test_a_copy_that_differs_beside_missing_release_screenshots_is_a_difference(tmp_path: Path) -> None:
    """HU09: with the sizes unchecked, a changed instruction is still 'differs' (False), not None."""
    pytest.importorskip("pyarrow")
    bench = get_benchmark("screenspot_v1")
    release = _v1_release(tmp_path / "release")
    png = PngCache()
    rows = [
        screenspot_hf_row(rec, SIZES[rec["img_filename"]], png)
        for split in ("mobile", "desktop", "web")
        for rec in V1[split]
    ]
    options = bench.options_type(source="parquet", release_root=str(release), allow_copy_differences=True)
    faithful = write_hf_parquet(tmp_path / "same" / "data" / "test-00000-of-00001.parquet", rows).parents[1]
    check = load_source(bench, faithful, options).summary["provenance"]["release_check"]
    # the first record the release loader reads (mobile, desktop, web) is the one named
    assert check["matches"] is None and check["differences"] == [
        "image sizes not checked: the screenshots of 3 of the release's 3 records are missing or unreadable "
        f"under {release} (first: {release / 'screenspot_imgs' / 'mobile_m.png'})"
    ]
    rows[2] = {**rows[2], "instruction": "open e"}  # web_0's "open d"
    changed = write_hf_parquet(tmp_path / "changed" / "data" / "test-00000-of-00001.parquet", rows).parents[1]
    check = load_source(bench, changed, options).summary["provenance"]["release_check"]
    assert check["matches"] is False
    assert len(check["differences"]) == 2 and check["differences"][1].startswith("image sizes not checked")


def _samples(n: int) -> list[Sample]:
    return [
        Sample("screenspot_v2", f"web_{i}", "web.png", (100, 100), f"open {i}", Box(i, i, i + 5, i + 5))
        for i in range(n)
    ]


def test_a_missing_first_record_is_named_at_the_start() -> None:
    """HD03: the first release record has no record before it (not the last one)."""
    release = _samples(3)
    assert compare_samples(release[1:], release) == [
        "count 2 vs release 3",
        "1 release ids missing (web_0 at the start)",
    ]
    assert (
        compare_samples([release[0], release[2]], release)[1] == "1 release ids missing (web_1 after web_0)"
    )


def test_an_extra_id_is_not_also_a_field_difference() -> None:
    """HD04: fields are compared on the release's ids only: an extra record is listed once."""
    release = _samples(3)
    extra = Sample("screenspot_v2", "web_9", "web.png", (50, 60), "close", Box(1, 2, 3, 4))
    assert compare_digests([*release, extra], digests(release)) == [
        "count 4 vs release 3",
        "1 ids not in the release (web_9)",
    ]


# ----------------------------------------------------------------------------------------------
# Own mutation runs: what the sampled mutants showed unpinned


def test_a_bad_instruction_or_bucket_and_a_null_bbox_value_are_named(tmp_path: Path) -> None:
    """webclick.py: each of instruction and bucket must be text; a null in bbox is not a number."""
    for k, row in enumerate(
        [
            {**_wc_row([0.1, 0.1, 0.2, 0.2]), "instruction": None},
            {**_wc_row([0.1, 0.1, 0.2, 0.2]), "bucket": None},
        ]
    ):
        root = _wc_write(tmp_path / f"t{k}" / "a.parquet", [_wc_row([0.1, 0.1, 0.2, 0.3]), row]).parent
        with pytest.raises(GgeError, match=r"a\.parquet: row 1: instruction and bucket must be text, got "):
            get_benchmark("webclick").load(root, WebClickOptions())
    root = _wc_write(tmp_path / "n" / "a.parquet", [_wc_row([0.1, None, 0.2, 0.3])]).parent  # type: ignore[list-item]
    with pytest.raises(
        GgeError, match=r"a\.parquet: row 0: bbox must be 4 numbers, got \[0\.1, None, 0\.2, 0\.3\]"
    ):
        get_benchmark("webclick").load(root, WebClickOptions())


def test_a_groundui_folder_without_its_files_is_named(tmp_path: Path) -> None:
    """groundui.py: no folder, an empty folder (the release's gui_grounding/ file named), no metadata."""
    bench = get_benchmark("groundui_1k")
    with pytest.raises(GgeError, match=r"^groundui_1k: benchmark folder not found: "):
        bench.load(tmp_path / "gone", GroundUIOptions())
    (tmp_path / "empty").mkdir()
    want = tmp_path / "empty" / "gui_grounding" / "metadata_1k.jsonl"
    with pytest.raises(GgeError) as e:
        bench.load(tmp_path / "empty", GroundUIOptions())
    assert str(e.value) == f"groundui_1k: annotation file not found: {want}"


def test_a_user_message_without_text_content_is_passed_over() -> None:
    """ruc.py: a user message whose content is neither text nor a list of parts is not read as one."""
    messages = [
        {"role": "user", "content": None},
        {"role": "user", "content": 5},
        {"role": "user", "content": "Go"},
    ]
    assert instruction_of(messages, "f:1") == "Go"


def test_a_ruc_record_without_an_id_is_named(tmp_path: Path) -> None:
    """ruc.py: the id is required (one line naming the record), not a KeyError."""
    rec = {k: v for k, v in _ruc_rec(2).items() if k != "id"}
    root = _ruc_write(tmp_path / "ruc", "full.json", [_ruc_rec(1), rec])
    with pytest.raises(GgeError, match=r"full\.json: record 1: no field 'id'$"):
        get_benchmark("ruc").load(root, RUCOptions())


def test_the_note_of_records_without_a_box_names_the_first_twenty(tmp_path: Path) -> None:
    """ruc.py: 21 records without correct_box.bbox: all counted, the first 20 named."""
    boxless = [_ruc_rec(i, correct_box={}) for i in range(100, 121)]
    root = _ruc_write(tmp_path / "ruc", "full.json", [_ruc_rec(1), *boxless])
    notes = get_benchmark("ruc").load(root, RUCOptions()).summary["notes"]
    named = ", ".join(str(i) for i in range(100, 120))
    assert notes == [f"21 records without correct_box.bbox left out, as the released code does: {named}"]


@pytest.mark.parametrize("image", ["", 5])
def test_a_ruc_image_path_that_is_not_a_path_is_named(tmp_path: Path, image: object) -> None:
    """ruc.py: an empty or non-text image_path is refused naming the record."""
    root = _ruc_write(tmp_path / "ruc", "full.json", [_ruc_rec(1)])
    (root / "full.json").write_text(json.dumps([_ruc_rec(1, image_path=image)]))
    with pytest.raises(GgeError, match=r"full\.json: record 0: image_path must be a path, got "):
        get_benchmark("ruc").load(root, RUCOptions())


def test_a_ruc_sample_is_its_records_width_by_height(tmp_path: Path) -> None:
    """ruc.py: image_size is (image_width, image_height), not a square."""
    root = _ruc_write(tmp_path / "ruc", "full.json", [_ruc_rec(1, image_width=120, image_height=90)])
    assert get_benchmark("ruc").load(root, RUCOptions()).samples[0].image_size == (120, 90)


def test_a_matching_copy_has_no_digest_difference_and_a_missing_record_is_named_once() -> None:
    """hub_digests.py: no line without an extra id; a missing one named with its neighbour."""
    release = _samples(3)
    assert compare_digests(release, digests(release)) == []
    ids = [s.id for s in release]
    assert compare_digests([release[0], release[2]], digests(release), ids) == [
        "count 2 vs release 3",
        "1 release ids missing (web_1 after web_0)",
    ]


def test_an_instruction_holding_a_tab_is_shown_whole() -> None:
    """hub_digests.py: only the id is cut off the compared text (the first tab), not the rest."""
    release = [replace(s, instruction=f"open\tmenu {s.id}") for s in _samples(2)]
    copy = [release[0], replace(release[1], instruction="open\tthe menu")]
    assert compare_samples(copy, release) == [
        "1 instructions differ (web_1; web_1: 'open\\tthe menu' vs release 'open\\tmenu web_1')"
    ]


def test_a_file_answering_some_negatives_or_no_record_is_not_refused_under_negative(tmp_path: Path) -> None:
    """replay.py: the refusal needs every negative unanswered and a record's positive id in the file."""
    _pro(tmp_path / "pro")
    # an 'all' run's file, app_windows_1_negative left out: its one negative line abstains (a hit)
    some = _replay(
        tmp_path / "some.jsonl",
        "screenspot_pro",
        [("app_windows_0", [30, 30]), ("app_windows_1", [160, 70]), ("app_windows_0_negative", [-1, -1])],
    )
    e = _run(_pro_args(tmp_path, some, "negative", "o1"))["benchmarks"]["screenspot_pro"]
    assert (e["samples"], e["top1"], e["missing_predictions"]) == (2, 50.0, 1)
    assert e["unmatched_predictions"] == ["app_windows_0", "app_windows_1"]
    # a file naming no record: nothing to say about the variant, every sample not in the file
    other = _replay(tmp_path / "other.jsonl", "screenspot_pro", [("other", [1, 1])])
    e = _run(_pro_args(tmp_path, other, "negative", "o2"))["benchmarks"]["screenspot_pro"]
    assert (e["top1"], e["missing_predictions"], e["unmatched_predictions"]) == (0.0, 2, ["other"])


def test_the_release_check_loads_the_release_when_not_given_it(tmp_path: Path) -> None:
    """hub.py: release_check reads release_root itself where the caller passes no release."""
    release = _pro(tmp_path / "release")
    bench = get_benchmark("screenspot_pro")
    samples = bench.load(release, bench.options_type()).samples
    options = bench.options_type(release_root=str(release))
    check = release_check(bench, {"language": "en"}, samples, options)
    assert check["matches"] is True and check["differences"] == []
    assert check["checked_against"] == f"the release files under {release}"
    moved = [samples[0], replace(samples[1], instruction="click elsewhere")]
    assert release_check(bench, {"language": "en"}, moved, options)["differences"] == [
        "1 instructions differ (app_windows_1; app_windows_1: 'click elsewhere' vs release "
        "'click app_windows_1')"
    ]


def test_a_missing_record_without_the_release_order_is_counted_unnamed() -> None:
    """hub_digests.py: no release ids given, nothing to name a missing record by: no empty brackets."""
    release = _samples(3)
    assert compare_digests(release[1:], digests(release)) == ["count 2 vs release 3", "1 release ids missing"]


def test_lines_of_the_records_ruc_leaves_out_are_not_stray(tmp_path: Path) -> None:
    """Records 998 and a box-less 1026 are left out as RUC's code does: their lines are said apart."""
    records = [_ruc_rec(1), _ruc_rec(998), _ruc_rec(1026, correct_box={})]
    root = _ruc_write(tmp_path / "ruc", "full.json", records)
    loaded = get_benchmark("ruc").load(root, RUCOptions())
    assert [s.id for s in loaded.samples] == ["1"]
    assert loaded.summary["left_out"] == {
        "no correct_box.bbox": ["1026"],
        "by its id": ["998"],
    }
    preds = _replay(
        tmp_path / "p.jsonl", "ruc", [("1", [20, 20]), ("998", [20, 20]), ("1026", [1, 1]), ("x", [1, 1])]
    )
    out = io.StringIO()
    args = [
        f"model.predictions={preds}",
        f"bench.ruc.root={root}",
        "benchmarks=[ruc]",
        f"output_dir={tmp_path / 'o'}",
    ]
    doc = _run(args, out)
    assert doc["benchmarks"]["ruc"]["top1"] == 100.0  # the one sample, hit
    said = [line for line in out.getvalue().splitlines() if line.startswith("warning: ruc: Prediction lines")]
    assert said == [
        "warning: ruc: Prediction lines of records the loader left out as the release's code does "
        "(no correct_box.bbox): 1 (1026): not scored, not stray",
        "warning: ruc: Prediction lines of records the loader left out as the release's code does "
        "(by its id): 1 (998): not scored, not stray",
        "warning: ruc: Prediction lines that match no sample: 1 (x): not scored",
    ]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "Prediction lines that match no sample: 1 (x): not scored" in report
    assert "(by its id): 1 (998): not scored, not stray" in report


def test_pixel_boxes_within_two_pixels_are_pixels_and_a_mix_is_refused(tmp_path: Path) -> None:
    """From an unbiased mutant sample (seed 23): [0, 1] bounds the normalised units, and a mix is named."""
    rows = [_wc_row([0.5, 0.5, 1.5, 1.5]), _wc_row([1, 1, 2, 2])]  # tiny pixel boxes: a value past 1
    root = _wc_write(tmp_path / "wc" / "data" / "test-00000-of-00001.parquet", rows).parent.parent
    loaded = get_benchmark("webclick").load(root, WebClickOptions())
    assert loaded.summary["variant"]["bbox"] == "pixels"
    rows = [_wc_row([0.1, 0.1, 0.2, 0.2]), _wc_row([10, 10, 50, 40])]
    root = _wc_write(tmp_path / "mix" / "data" / "test-00000-of-00001.parquet", rows).parent.parent
    with pytest.raises(GgeError, match=r"its bbox is not in \[0, 1\], .*'s in: the boxes mix units"):
        get_benchmark("webclick").load(root, WebClickOptions())


# from an unbiased mutant sample (seed 37)


def test_a_user_message_of_text_parts_is_the_instruction() -> None:
    parts = [{"type": "image"}, {"type": "text", "text": "Click"}, {"type": "text", "text": "Buy "}]
    assert instruction_of([{"role": "user", "content": parts}], "f:1") == "Click Buy"


def test_a_correct_box_that_is_no_object_is_a_record_without_a_box(tmp_path: Path) -> None:
    records = [_ruc_rec(1), _ruc_rec(2, correct_box=[10, 10, 30, 30])]
    loaded = get_benchmark("ruc").load(_ruc_write(tmp_path / "ruc", "full.json", records), RUCOptions())
    assert [s.id for s in loaded.samples] == ["1"] and loaded.summary["left_out"] == {
        "no correct_box.bbox": ["2"]
    }
