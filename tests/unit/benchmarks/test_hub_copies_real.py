"""Hub copies built from the real records (skipped when ../shared/benchmarks is absent).

Each copy is written here in its Hub layout (placeholder images of the true sizes embedded): the
HongxinLi/ScreenSpot_v2 parquet (bbox in [0, 1] corners, split from data_source), VLMEvalKit's
ScreenSpot-v2 TSVs (xywh pixel strings, shared images as index cells), rootsautomation/ScreenSpot
(v1), lmms-lab/ScreenSpot-Pro. Each must load to exactly the release layout's Samples (all fields
but image_path), pass the release check against gge's shipped digests (or the release files), and
a copy with one box changed, one record dropped or one instruction changed must be refused with a
message saying so, and accepted with allow_copy_differences=true with the differences in provenance.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hub_writers import PngCache, screenspot_hf_row, write_hf_parquet, write_vlmevalkit_tsv
from paths import ROOT
from PIL import Image
from real_records import SHARED, Placeholders, link, load_json

from gge.benchmarks import get_benchmark
from gge.benchmarks.base import LoadedBenchmark
from gge.benchmarks.hub import load_source
from gge.benchmarks.images import open_image
from gge.errors import GgeError
from gge.run.settings import parse_args
from gge.run.standalone import run

if not SHARED.is_dir():
    pytest.skip(f"real annotation records not present ({SHARED})", allow_module_level=True)
pytest.importorskip("pyarrow")

SPLITS = ("mobile", "desktop", "web")
V1_UNKNOWN_SIZE = (3000, 2600)
"""The size laid for the 24 ScreenSpot v1 images whose true size the shared folder lacks: large enough
to hold their boxes (the largest reaches x 2956, y 2532), so their [0, 1] boxes stay in [0, 1]."""


def screenspot_records(version: str, suffix: str) -> dict[str, list[dict[str, Any]]]:
    return {s: load_json(SHARED / version / f"screenspot_{s}{suffix}.json") for s in SPLITS}


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("release")
    (base / "pngs").mkdir()
    lay = Placeholders(base / "pngs").lay
    ss2 = base / "screenspot_v2"
    for split in SPLITS:
        link(SHARED / "screenspot_v2" / f"screenspot_{split}_v2.json", ss2 / f"screenspot_{split}_v2.json")
    for name, size in load_json(SHARED / "screenspot_v2" / "image_sizes.json").items():
        lay(ss2 / "screenspotv2_image" / name, size)
    ss1 = base / "screenspot_v1"
    sizes = load_json(SHARED / "screenspot_v1" / "image_sizes.json")
    for split, recs in screenspot_records("screenspot_v1", "").items():
        link(SHARED / "screenspot_v1" / f"screenspot_{split}.json", ss1 / f"screenspot_{split}.json")
        for rec in recs:
            lay(
                ss1 / "screenspot_imgs" / rec["img_filename"], sizes.get(rec["img_filename"], V1_UNKNOWN_SIZE)
            )
    pro = base / "screenspot_pro"
    for f in sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json")):
        link(f, pro / "annotations" / f.name)
        for rec in load_json(f):
            lay(pro / "images" / rec["img_filename"], rec["img_size"])
    return {"screenspot_v2": ss2, "screenspot_v1": ss1, "screenspot_pro": pro}


def image_sizes(root: Path, folder: str, recs: Iterable[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    out = {}
    for rec in recs:
        with Image.open(root / folder / rec["img_filename"]) as im:
            out[rec["img_filename"]] = im.size
    return out


def screenspot_hf_rows(root: Path, version: str, suffix: str, folder: str) -> list[dict[str, Any]]:
    """rootsautomation's schema: bbox as [0, 1] corners, mobile then desktop then web."""
    png = PngCache()
    records = screenspot_records(version, suffix)
    sizes = image_sizes(root, folder, (r for recs in records.values() for r in recs))
    return [
        screenspot_hf_row(rec, sizes[rec["img_filename"]], png) for split in SPLITS for rec in records[split]
    ]


def write_shards(folder: Path, rows: list[dict[str, Any]], shards: int) -> Path:
    per = -(-len(rows) // shards)
    for i in range(shards):
        write_hf_parquet(
            folder / "data" / f"test-{i:05d}-of-{shards:05d}.parquet", rows[i * per : (i + 1) * per]
        )
    return folder


def write_v2_tsv(folder: Path, root: Path, mutate: dict[str, Any] | None = None) -> Path:
    """VLMEvalKit's ScreenSpot_v2_<Split>.tsv (index, image, image_path, question, bbox, data_type...)."""
    png = PngCache()
    records = screenspot_records("screenspot_v2", "_v2")
    sizes = image_sizes(root, "screenspotv2_image", (r for recs in records.values() for r in recs))
    for split in SPLITS:
        rows = [
            {
                "image": png(sizes[rec["img_filename"]]),
                "image_path": rec["img_filename"],
                "question": rec["instruction"],
                "bbox": rec["bbox"],
                "data_type": rec["data_type"],
                "data_source": rec["data_source"],
            }
            for rec in records[split]
        ]
        for key, value in (mutate or {}).get(split, {}).items():
            rows[key].update(value)
        columns = ["image_path", "question", "bbox", "data_type", "data_source"]
        write_vlmevalkit_tsv(folder / f"ScreenSpot_v2_{split.capitalize()}.tsv", rows, columns)
    return folder


def pro_rows(root: Path) -> list[dict[str, Any]]:
    png = PngCache()
    rows = []
    for f in sorted((SHARED / "screenspot_pro" / "annotations").glob("*.json")):
        for rec in load_json(f):
            rows.append(
                {
                    "id": rec["id"],
                    "instruction": rec["instruction"],
                    "bbox": rec["bbox"],
                    "img_size": rec["img_size"],
                    **{k: rec[k] for k in ("group", "ui_type", "platform", "application")},
                    "image": (png(rec["img_size"]), rec["img_filename"]),
                }
            )
    return rows


def fields(loaded: LoadedBenchmark) -> list[tuple[Any, ...]]:
    return [
        (s.benchmark, s.id, s.image_size, s.instruction, s.region, dict(s.labels)) for s in loaded.samples
    ]


def release_of(name: str, releases: dict[str, Path]) -> LoadedBenchmark:
    bench = get_benchmark(name)
    return bench.load(releases[name], bench.options_type())


def load(name: str, root: Path, **options: Any) -> LoadedBenchmark:
    bench = get_benchmark(name)
    return load_source(bench, root, bench.options_type(**options))


@pytest.fixture(scope="module")
def v2_parquet(releases: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = screenspot_hf_rows(releases["screenspot_v2"], "screenspot_v2", "_v2", "screenspotv2_image")
    return write_shards(tmp_path_factory.mktemp("hongxinli"), rows, 2)


# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["parquet", "auto"])
def test_the_screenspot_v2_parquet_copy_is_the_release(
    source: str, releases: dict[str, Path], v2_parquet: Path
) -> None:
    loaded = load("screenspot_v2", v2_parquet, source=source)
    release = release_of("screenspot_v2", releases)
    assert len(loaded.samples) == 1272
    assert fields(loaded) == fields(release)
    prov = loaded.summary["provenance"]
    assert prov["source"] == "parquet"
    assert prov["copy"]["repository"] == "HongxinLi/ScreenSpot_v2"
    assert [f["path"] for f in prov["files"]] == [
        "data/test-00000-of-00002.parquet",
        "data/test-00001-of-00002.parquet",
    ]
    assert prov["release_check"] == {
        "matches": True,
        "differences": [],
        "checked_against": "gge's release digests (release_digests.json, screenspot_v2 {})",
        "not_compared": "screenshot pixels (only each image's size, read from the embedded image's header)",
    }
    # the embedded image decodes to the placeholder's size (the one the release layout holds)
    s, r = loaded.samples[700], release.samples[700]
    with open_image(s.image_path) as a, open_image(r.image_path) as b:
        assert a.size == b.size == s.image_size


def test_the_screenspot_v2_vlmevalkit_tsv_copy_is_the_release(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    folder = write_v2_tsv(tmp_path / "lmudata", releases["screenspot_v2"])
    # VLMEvalKit's dedup: the second record on one image names the first one's index
    first, second = (folder / "ScreenSpot_v2_Mobile.tsv").read_text(encoding="utf-8").splitlines()[1:3]
    assert len(second.split("\t")[1]) <= 64 < len(first.split("\t")[1])
    for source in ("tsv", "auto"):
        loaded = load("screenspot_v2", folder, source=source)
        assert fields(loaded) == fields(release_of("screenspot_v2", releases))
        prov = loaded.summary["provenance"]
        assert prov["source"] == "tsv" and prov["release_check"]["matches"] is True
        assert prov["copy"]["repository"] == "VLMEvalKit (opencompass.openxlab.space)"
    with open_image(loaded.samples[1].image_path) as im:
        assert im.size == loaded.samples[1].image_size


def test_the_screenspot_v1_parquet_copy_is_the_release_by_its_files(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    rows = screenspot_hf_rows(releases["screenspot_v1"], "screenspot_v1", "", "screenspot_imgs")
    folder = write_shards(tmp_path / "roots", rows, 3)
    release = release_of("screenspot_v1", releases)
    loaded = load("screenspot_v1", folder, source="parquet", release_root=str(releases["screenspot_v1"]))
    assert fields(loaded) == fields(release)
    prov = loaded.summary["provenance"]
    assert prov["copy"]["repository"] == "rootsautomation/ScreenSpot"
    assert prov["release_check"]["matches"] is True
    assert loaded.summary["variant"] == release.summary["variant"] == {"version": "v1"}
    # no digests of v1 ship (24 image sizes are unknown): without its files the copy cannot be checked
    with pytest.raises(GgeError, match=r"cannot be checked against the release \(gge has no release digest"):
        load("screenspot_v1", folder, source="parquet")
    allowed = load("screenspot_v1", folder, source="parquet", allow_copy_differences=True)
    assert allowed.summary["provenance"]["release_check"]["matches"] is None
    assert allowed.summary["provenance"]["allowed_differences"] is True


def test_the_screenspot_pro_lmms_copy_is_the_release(releases: dict[str, Path], tmp_path: Path) -> None:
    rows = pro_rows(releases["screenspot_pro"])
    folder = tmp_path / "lmms"
    write_hf_parquet(folder / "data" / "train-00000-of-00001.parquet", rows, row_group_size=200)
    loaded = load("screenspot_pro", folder)
    assert fields(loaded) == fields(release_of("screenspot_pro", releases))
    assert loaded.summary["variant"] == {"language": "en"}
    prov = loaded.summary["provenance"]
    assert prov["copy"]["repository"] == "lmms-lab/ScreenSpot-Pro"
    assert prov["release_check"]["matches"] is True
    odd = next(s for s in loaded.samples if s.id == "inventor_windows_60")
    assert odd.region.y1 == -1 / odd.image_size[1]  # kept as released
    with pytest.raises(GgeError, match="the Hub copies hold English instructions only"):
        load("screenspot_pro", folder, language="cn")


# ----------------------------------------------------------------------------------------------
# Copies that differ


def test_a_v2_copy_with_one_box_changed_is_refused_then_allowed(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    rows = screenspot_hf_rows(releases["screenspot_v2"], "screenspot_v2", "_v2", "screenspotv2_image")
    rows[501]["bbox"] = [0.0, 0.0, 0.5, 0.5]  # the first desktop record
    folder = write_shards(tmp_path / "copy", rows, 2)
    with pytest.raises(GgeError) as e:
        load("screenspot_v2", folder)
    msg = str(e.value)
    assert "\n" not in msg
    assert (
        "test-00000-of-00002.parquet (+1 files) differs from the release: 1 boxes differ (desktop_0)" in msg
    )
    assert msg.endswith(
        "set bench.screenspot_v2.allow_copy_differences=true to evaluate it anyway "
        "(its headline is then not the official one)"
    )
    loaded = load("screenspot_v2", folder, allow_copy_differences=True)
    prov = loaded.summary["provenance"]
    assert prov["release_check"]["matches"] is False
    assert prov["release_check"]["differences"] == ["1 boxes differ (desktop_0)"]
    assert prov["allowed_differences"] is True
    assert any("not the official headline" in n for n in loaded.summary["notes"])


def test_a_v2_copy_with_one_record_dropped_is_refused(releases: dict[str, Path], tmp_path: Path) -> None:
    rows = screenspot_hf_rows(releases["screenspot_v2"], "screenspot_v2", "_v2", "screenspotv2_image")
    del rows[1271]  # the last web record: every other id stays in place
    folder = write_shards(tmp_path / "copy", rows, 2)
    with pytest.raises(
        GgeError,
        match=r"differs from the release: count 1271 vs release 1272; 1 release ids missing "
        r"\(web_436 after web_435\) \(known of HongxinLi",
    ):
        load("screenspot_v2", folder)
    loaded = load("screenspot_v2", folder, allow_copy_differences=True)
    assert loaded.summary["provenance"]["release_check"]["differences"] == [
        "count 1271 vs release 1272",
        "1 release ids missing (web_436 after web_435)",
    ]


def test_a_v2_tsv_with_one_instruction_changed_is_refused(releases: dict[str, Path], tmp_path: Path) -> None:
    folder = write_v2_tsv(tmp_path / "lmu", releases["screenspot_v2"], {"web": {3: {"question": "not it"}}})
    with pytest.raises(
        GgeError,
        match=r"ScreenSpot_v2_Mobile.tsv \(\+2 files\) differs from the release: "
        r"1 instructions differ \(web_3\)",
    ):
        load("screenspot_v2", folder, source="tsv")
    # with the release files beside it the difference is shown
    loaded = load(
        "screenspot_v2",
        folder,
        source="tsv",
        allow_copy_differences=True,
        release_root=str(releases["screenspot_v2"]),
    )
    (line,) = loaded.summary["provenance"]["release_check"]["differences"]
    want = load_json(SHARED / "screenspot_v2" / "screenspot_web_v2.json")[3]["instruction"]
    assert line == f"1 instructions differ (web_3; web_3: 'not it' vs release {want!r})"


# ----------------------------------------------------------------------------------------------
# End to end: the same results.json numbers


def predictions(release: LoadedBenchmark) -> list[dict[str, Any]]:
    """Hits on the box centre for two of three samples, an edge point, a miss, an abstention."""
    out = []
    for i, s in enumerate(release.samples):
        x1, y1, x2, y2 = s.region.pixel_box()
        point: list[float] | None
        if i % 3 == 0:
            point = [(x1 + x2) / 2, (y1 + y2) / 2]
        elif i % 3 == 1:
            point = [x2, y2]  # the inclusive edge
        else:
            point = [x1 - 5, y1 - 5] if i % 2 else None
        out.append({"benchmark": s.benchmark, "id": s.id, "candidates": [point]})
    return out


NUMBERS = (
    "samples",
    "top1",
    "micro",
    "official",
    "averages",
    "intervals",
    "breakdown",
    "tables",
    "format_errors",
)


def test_eval_of_the_parquet_copy_gives_the_release_numbers(
    releases: dict[str, Path], v2_parquet: Path, tmp_path: Path
) -> None:
    release = release_of("screenspot_v2", releases)
    pred = tmp_path / "predictions.jsonl"
    pred.write_text("".join(json.dumps(r) + "\n" for r in predictions(release)), encoding="utf-8")
    docs = {}
    for label, root in (("release", releases["screenspot_v2"]), ("copy", v2_parquet)):
        args = [
            "model=replay",
            f"model.predictions={pred}",
            "benchmarks=[screenspot_v2]",
            f"bench.screenspot_v2.root={root}",
            f"output_dir={tmp_path / label}",
        ]
        run(parse_args(args), out=io.StringIO())
        docs[label] = load_json(tmp_path / label / "results.json")
    a, b = (docs[k]["benchmarks"]["screenspot_v2"] for k in ("release", "copy"))
    assert a["samples"] == 1272
    assert 0 < a["top1"] < 100
    for key in NUMBERS:
        assert a[key] == b[key], key
    assert a["load"]["provenance"]["source"] == "release"
    assert b["load"]["provenance"]["source"] == "parquet"
    assert b["load"]["provenance"]["release_check"]["matches"] is True


# ----------------------------------------------------------------------------------------------
# OSWorld-G: MMInstruction/OSWorld-G drops the refusals and boxes the polygons


def osworld_copy(folder: Path, *, box_polygons: bool) -> Path:
    """MMInstruction's layout from the real records: no refusal rows; polygons boxed when asked."""
    png = PngCache()
    rows = []
    for rec in load_json(SHARED / "osworld_g" / "benchmark" / "OSWorld-G.json"):
        if rec["box_type"] == "refusal":
            continue
        coords = rec["box_coordinates"]
        if rec["box_type"] == "polygon" and box_polygons:
            xs, ys = coords[0::2], coords[1::2]
            coords = [min(xs), min(ys), max(xs), max(ys)]
        rows.append(
            {
                "id": rec["id"],
                "instruction": rec["instruction"],
                "image_size": rec["image_size"],
                "box_type": rec["box_type"],
                "box_coordinates": [float(v) for v in coords],
                "image": (png(rec["image_size"]), rec["image_path"]),
            }
        )
    assert len(rows) == 510  # FORMATS.md section 11: 470 bbox + 40 polygon
    write_hf_parquet(folder / "data" / "test-00000-of-00001.parquet", rows)
    return folder


@pytest.fixture(scope="module")
def osworld_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("osw")
    (base / "pngs").mkdir()
    lay = Placeholders(base / "pngs").lay
    link(SHARED / "osworld_g" / "benchmark" / "OSWorld-G.json", base / "benchmark" / "OSWorld-G.json")
    for rec in load_json(SHARED / "osworld_g" / "benchmark" / "OSWorld-G.json"):
        lay(base / "benchmark" / "images" / rec["image_path"], rec["image_size"])
    return base


def test_an_osworld_copy_without_refusals_is_the_510_variant(osworld_release: Path, tmp_path: Path) -> None:
    folder = osworld_copy(tmp_path / "faithful", box_polygons=False)
    loaded = load("osworld_g", folder, refusals="excluded")
    bench = get_benchmark("osworld_g")
    release = bench.load(osworld_release, bench.options_type(refusals="excluded"))
    assert fields(loaded) == fields(release)
    assert loaded.summary["variant"] == release.summary["variant"]
    assert loaded.summary["variant"]["denominator"] == 510
    assert loaded.summary["provenance"]["release_check"]["matches"] is True
    # read as the official 564 it is refused: the refusals are not there
    with pytest.raises(GgeError, match=r"count 510 vs release 564; 54 release ids missing"):
        load("osworld_g", folder)


def test_an_osworld_copy_with_boxed_polygons_is_refused_then_allowed(tmp_path: Path) -> None:
    folder = osworld_copy(tmp_path / "mminstruction", box_polygons=True)
    with pytest.raises(GgeError) as e:
        load("osworld_g", folder, refusals="excluded")
    msg = str(e.value)
    assert "differs from the release: 40 boxes differ (" in msg
    # box_type polygon -> bbox (labels are digested whole), then what the table knows of the copy
    assert "; labels differ (known of MMInstruction/OSWorld-G: drops the 54 refusals" in msg
    loaded = load("osworld_g", folder, refusals="excluded", allow_copy_differences=True)
    prov = loaded.summary["provenance"]
    assert prov["release_check"]["matches"] is False and prov["allowed_differences"] is True
    assert sum(s.region.kind == "bbox" for s in loaded.samples) == 510


def test_the_shipped_release_digests_are_the_loaders_output_on_the_real_records(tmp_path: Path) -> None:
    """A loader change that changes what a release gives must be followed by tools/release_digests.py."""
    import importlib.util

    from gge.benchmarks import hub_digests as hub

    spec = importlib.util.spec_from_file_location("release_digests", ROOT / "tools" / "release_digests.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    shipped = json.loads((ROOT / "gge" / "benchmarks" / hub.DIGESTS_FILE).read_text(encoding="utf-8"))
    tool.OUT = tmp_path / "digests.json"
    assert tool.main(["release_digests.py", str(SHARED)]) == 0
    fresh = json.loads(tool.OUT.read_text(encoding="utf-8"))
    assert fresh == shipped, "run: python tools/release_digests.py"
    assert shipped["benchmarks"]["screenspot_v2"]["{}"]["records"] == 1272
    assert (
        shipped["benchmarks"]["osworld_g"]['{"instructions": "original", "refusals": "excluded"}']["records"]
        == 510
    )
