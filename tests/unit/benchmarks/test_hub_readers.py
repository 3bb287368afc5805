"""The embedded-image readers and the copy path on tiny synthetic files (no shared folder needed).

Parquet (an HF datasets ``Image`` struct, a plain binary column), VLMEvalKit TSV (base64 cells, cells
naming another row's index, quoted cells), the ``source`` choice, the copy-layout errors and the
provenance of a release load.
"""

from __future__ import annotations

import base64
import hashlib
import io
import sys
from pathlib import Path
from typing import Any

import pytest
from hub_writers import (
    RECORDS,
    SIZES,
    PngCache,
    png_bytes,
    tiny_parquet,
    tiny_release,
    write_hf_parquet,
    write_vlmevalkit_tsv,
)
from PIL import Image

from gge.benchmarks import get_benchmark, images
from gge.benchmarks.base import BenchmarkOptions
from gge.benchmarks.hub import detect_source, load_source
from gge.benchmarks.hub_files import read_tsv_rows
from gge.benchmarks.images import embedded_ref, image_bytes, image_name, open_image, split_ref
from gge.errors import GgeError
from gge.types import Absent, Box

pytest.importorskip("pyarrow")


def noise_png(size: tuple[int, int]) -> bytes:
    """A PNG of noise (it does not compress away: a few hundred bytes for 20x20)."""
    buf = io.BytesIO()
    Image.effect_noise(size, 40).save(buf, format="PNG")
    return buf.getvalue()


class Counting(io.FileIO):
    """A file that counts the bytes read from it."""

    total = 0

    def read(self, size: int = -1) -> bytes:
        data = super().read(size)
        Counting.total += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        n = super().readinto(buffer)
        Counting.total += n or 0
        return n or 0


def test_one_parquet_image_reads_one_row_group_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = [(20 + i % 7, 20 + i % 5) for i in range(2000)]
    rows = [{"n": i, "image": (noise_png(s), f"{i}.png")} for i, s in enumerate(sizes)]
    path = write_hf_parquet(tmp_path / "test-00000-of-00001.parquet", rows, row_group_size=100)
    monkeypatch.setattr(images, "open_binary", lambda p: Counting(p, "rb"))
    monkeypatch.setattr(images, "_PARQUET", {})
    Counting.total = 0
    with open_image(embedded_ref(str(path), "parquet", "1234/image")) as im:
        assert im.size == sizes[1234]
    first = Counting.total
    assert 0 < first < path.stat().st_size / 5, (first, path.stat().st_size)
    # the same row group again: served from the process's cache, no further read
    assert (
        Image.open(io.BytesIO(image_bytes(embedded_ref(str(path), "parquet", "1299/image")))).size
        == sizes[1299]
    )
    assert Counting.total == first


def test_a_plain_binary_column_and_the_reader_errors(tmp_path: Path) -> None:
    rows = [
        {"k": "a", "shot": (png_bytes((3, 4)), "a.png")},
        {"k": "b", "shot": (png_bytes((6, 2)), "b.png")},
    ]
    path = write_hf_parquet(tmp_path / "x.parquet", rows, image_column="shot", struct=False)
    with open_image(embedded_ref(str(path), "parquet", "1/shot")) as im:
        assert im.size == (6, 2)
    with pytest.raises(OSError, match="row 2 is not in the file"):
        image_bytes(embedded_ref(str(path), "parquet", "2/shot"))
    with pytest.raises(OSError, match="no column 'image'"):
        image_bytes(embedded_ref(str(path), "parquet", "0/image"))
    empty = write_hf_parquet(tmp_path / "y.parquet", [{"k": "a", "image": (None, "lost.png")}])
    with pytest.raises(OSError, match=r"holds no bytes.*lost\.png"):
        image_bytes(embedded_ref(str(empty), "parquet", "0/image"))


def test_reference_parts_and_names() -> None:
    ref = embedded_ref("/d/data/test.parquet", "parquet", "12/image")
    assert split_ref(ref) == ("/d/data/test.parquet", "parquet", "12/image")
    assert image_name(ref) == "test.parquet::parquet:12/image"
    assert split_ref("/d/a::b.png") is None  # no registered kind: a plain path


def test_no_pyarrow_is_one_line_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(GgeError, match=r"pip install 'gge\[hub\]'"):
        images.require_pyarrow()


def test_tsv_cells_naming_another_rows_index_and_quoted_cells(tmp_path: Path) -> None:
    noisy = io.BytesIO()
    Image.effect_noise((400, 400), 64).convert("RGB").save(noisy, format="PNG")
    assert len(base64.b64encode(noisy.getvalue())) > 131072  # above csv's default field limit
    shots = [png_bytes((5, 7)), noisy.getvalue(), png_bytes((5, 7)), png_bytes((9, 3))]
    rows = [
        {"index": 10 + i, "image": shot, "question": q, "bbox": [i, 0, 2, 2]}
        for i, (shot, q) in enumerate(
            zip(shots, ["plain", 'say "hi"\tthere', "tab\tand\nnewline", "x"], strict=True)
        )
    ]
    path = write_vlmevalkit_tsv(tmp_path / "ScreenSpot_v2_Mobile.tsv", rows, ["question", "bbox"])
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[3].split("\t")[1] == "10"  # row 2 shares row 0's image: it names that row's index
    found, notes = read_tsv_rows(path)
    assert notes == []
    assert [r.values["question"] for r in found] == ["plain", 'say "hi"\tthere', "tab\tand\nnewline", "x"]
    assert [r.size for r in found] == [(5, 7), (400, 400), (5, 7), (9, 3)]
    assert found[2].image == found[0].image
    for r, shot in zip(found, shots, strict=True):
        assert image_bytes(r.image) == shot
    assert found[1].values["bbox"] == "[1, 0, 2, 2]"


def test_a_tsv_cell_naming_no_row_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    data = base64.b64encode(png_bytes((2, 2))).decode()
    path.write_text(f"index\timage\tquestion\n1\t{data}\ta\n2\t7\tb\n", encoding="utf-8")
    with pytest.raises(GgeError, match=r"t.tsv:3: image cell '7' names no row"):
        read_tsv_rows(path)


# ----------------------------------------------------------------------------------------------
# A tiny ScreenSpot-v2: its release layout and copies of it


def opts(**kw: Any) -> BenchmarkOptions:
    return BenchmarkOptions(**kw)


def without_image(samples: list[Any]) -> list[tuple[Any, ...]]:
    return [(s.benchmark, s.id, s.image_size, s.instruction, s.region, dict(s.labels)) for s in samples]


def test_a_parquet_copy_loads_to_the_release_samples_checked_against_release_files(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    release = tiny_release(tmp_path / "release")
    copy = tiny_parquet(tmp_path / "copy")
    loaded = load_source(bench, copy, opts(source="parquet", release_root=str(release)))
    expected = bench.load(release, bench.options_type())
    assert without_image(loaded.samples) == without_image(expected.samples)
    assert [s.id for s in loaded.samples] == ["mobile_0", "mobile_1", "desktop_0", "web_0"]
    assert loaded.samples[0].region == expected.samples[0].region  # 10/117*117 comes back as 10
    with open_image(loaded.samples[2].image_path) as im:
        assert im.size == (320, 200)
    prov = loaded.summary["provenance"]
    assert prov["source"] == "parquet"
    assert prov["release_check"]["matches"] is True
    assert prov["copy"]["repository"] == "HongxinLi/ScreenSpot_v2"
    data = (copy / "data" / "test-00000-of-00002.parquet").read_bytes()
    assert prov["files"][0] == {
        "path": "data/test-00000-of-00002.parquet",
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
    }
    assert prov["allowed_differences"] is False


def test_a_copy_that_differs_from_the_release_files_is_refused_naming_the_ids(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    release = tiny_release(tmp_path / "release")
    copy = tiny_parquet(tmp_path / "copy", {"instruction": "tap B"})
    with pytest.raises(GgeError) as e:
        load_source(bench, copy, opts(source="parquet", release_root=str(release)))
    msg = str(e.value)
    assert "\n" not in msg
    assert "test-00000-of-00002.parquet" in msg
    assert "1 instructions differ (mobile_1; mobile_1: 'tap B' vs release 'tap b')" in msg
    assert "bench.screenspot_v2.allow_copy_differences=true" in msg
    loaded = load_source(
        bench, copy, opts(source="parquet", release_root=str(release), allow_copy_differences=True)
    )
    prov = loaded.summary["provenance"]
    assert prov["release_check"]["matches"] is False
    assert prov["allowed_differences"] is True
    assert prov["release_check"]["differences"] == [
        "1 instructions differ (mobile_1; mobile_1: 'tap B' vs release 'tap b')"
    ]


def test_the_tiny_copy_is_not_the_release_by_gge_digests(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    copy = tiny_parquet(tmp_path / "copy")
    with pytest.raises(
        GgeError,
        match=r"differs from the release: count 4 vs release 1272; 1268 release ids missing \(mobile_2 after "
        r"mobile_1, mobile_3 after mobile_2, .*, \+1263 more\); 4 boxes differ "
        r"\(mobile_0, mobile_1, desktop_0, web_0\); 4 instructions differ",
    ):
        load_source(bench, copy, opts(source="auto"))


def test_auto_reads_the_release_when_its_files_are_there_else_the_one_copy_kind(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    both = tiny_parquet(tiny_release(tmp_path / "both"))
    assert detect_source(bench, both) == "release"
    assert detect_source(bench, tiny_parquet(tmp_path / "copy")) == "parquet"
    mixed = tiny_parquet(tmp_path / "mixed")
    (mixed / "ScreenSpot_v2_Web.tsv").write_text("index\timage\n", encoding="utf-8")
    with pytest.raises(
        GgeError,
        match=r"copies of 2 kinds \(parquet: test-00000-of-00002.parquet, test-00001-of-00002.parquet; "
        r"tsv: ScreenSpot_v2_Web.tsv\): set "
        r"bench.screenspot_v2.source=release\|parquet\|tsv",
    ):
        detect_source(bench, mixed)
    assert detect_source(bench, tmp_path / "absent") == "release"  # the release loader names the folder
    with pytest.raises(GgeError, match="source='zip': must be one of auto, release, parquet, tsv"):
        load_source(bench, both, opts(source="zip"))


def test_copy_files_that_fit_no_layout_or_a_known_unread_copy(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    odd = write_hf_parquet(
        tmp_path / "odd" / "x.parquet", [{"prompt": "a", "image": (png_bytes((2, 2)), "a")}]
    )
    with pytest.raises(
        GgeError,
        match=r"fit no known copy layout: columns prompt, image; known: "
        r"screenspot_v2/hf: file_name, bbox",
    ):
        load_source(bench, odd.parent, opts(source="parquet"))
    lmms = tmp_path / "lmms" / "train-00000-of-00001.parquet"
    write_hf_parquet(lmms, [{"instruction": "a", "bbox": [1, 2, 3, 4], "image": (png_bytes((2, 2)), "a")}])
    with pytest.raises(
        GgeError, match="lmms-lab/ScreenSpot-v2's copy, which gge knows but does not read yet"
    ):
        load_source(bench, lmms.parent, opts(source="parquet"))
    with pytest.raises(GgeError, match=r"source=tsv, but .* holds no .tsv file"):
        load_source(bench, lmms.parent, opts(source="tsv"))


def test_a_release_load_records_the_digests_of_the_annotation_files_read(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    release = tiny_release(tmp_path / "release")
    loaded = load_source(bench, release, opts())
    prov = loaded.summary["provenance"]
    assert prov["source"] == "release" and prov["copy"] is None
    assert prov["release_check"]["matches"] is None
    files = {f["path"]: f for f in prov["files"]}
    assert sorted(files) == [
        "screenspot_desktop_v2.json",
        "screenspot_mobile_v2.json",
        "screenspot_web_v2.json",
    ]
    data = (release / "screenspot_web_v2.json").read_bytes()
    assert files["screenspot_web_v2.json"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert files["screenspot_web_v2.json"]["bytes"] == len(data)


def tiny_tsv(root: Path) -> Path:
    png = PngCache()
    for split, recs in RECORDS.items():
        rows = [
            {
                "image": png(SIZES[r["img_filename"]]),
                "image_path": r["img_filename"],
                "question": r["instruction"],
                "bbox": r["bbox"],
                "data_type": r["data_type"],
                "data_source": r["data_source"],
            }
            for r in recs
        ]
        columns = ["image_path", "question", "bbox", "data_type", "data_source"]
        write_vlmevalkit_tsv(root / f"ScreenSpot_v2_{split.capitalize()}.tsv", rows, columns)
    return root


def test_a_vlmevalkit_tsv_copy_loads_in_the_release_order(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    release = tiny_release(tmp_path / "release")
    copy = tiny_tsv(tmp_path / "lmudata")
    loaded = load_source(bench, copy, opts(release_root=str(release)))  # auto: the only copy kind there
    assert without_image(loaded.samples) == without_image(bench.load(release, bench.options_type()).samples)
    prov = loaded.summary["provenance"]
    assert prov["source"] == "tsv" and prov["release_check"]["matches"] is True
    assert [f["path"] for f in prov["files"]] == [
        "ScreenSpot_v2_Mobile.tsv",
        "ScreenSpot_v2_Desktop.tsv",
        "ScreenSpot_v2_Web.tsv",
    ]
    with open_image(loaded.samples[1].image_path) as im:  # mobile_1 names mobile_0's image row
        assert im.size == SIZES["mobile_m.png"]


def test_a_copy_file_name_without_the_split_prefix_is_refused(tmp_path: Path) -> None:
    rows = [
        {
            "file_name": "shot.png",
            "bbox": [0.1, 0.1, 0.2, 0.2],
            "instruction": "a",
            "data_type": "text",
            "data_source": "ios",
            "image": (png_bytes((4, 4)), "shot.png"),
        }
    ]
    write_hf_parquet(tmp_path / "c" / "test-00000-of-00001.parquet", rows)
    with pytest.raises(GgeError, match=r"row 0: file_name 'shot.png' starts with none of mobile_, pc_, web_"):
        load_source(get_benchmark("screenspot_v2"), tmp_path / "c", opts())


def test_venusbench_gd_tsv_is_read_but_cannot_be_checked(tmp_path: Path) -> None:
    shot = base64.b64encode(png_bytes((200, 100))).decode()
    (tmp_path / "VenusBench.tsv").write_text(
        "index\timage\timage_path\tquestion\tbbox\tcategory\tui_type\tapplication\n"
        f"1\t{shot}\tweb/a.png\tclick it\t[10, 20, 30, 40]\telement_grounding\ttext\tchrome\n"
        "2\t1\tweb/a.png\tnot there\t[-1, -1, -1, -1]\trefusal_grounding\ticon\tchrome\n"
        "3\t1\tweb/a.png\tthe other\t[0, 0, 100, 50]\telement_grounding\ticon\tchrome\n",
        encoding="utf-8",
    )
    bench = get_benchmark("venusbench_gd")
    with pytest.raises(
        GgeError,
        match=r"cannot be checked against the release \(gge has no release digest of "
        r"venusbench_gd .*\): set bench.venusbench_gd.release_root=DIR \(a folder holding the release's "
        r"annotation files and screenshots\) to check it record by record against them, or set "
        r"bench.venusbench_gd.allow_copy_differences=true",
    ):
        load_source(bench, tmp_path, bench.options_type())
    loaded = load_source(bench, tmp_path, bench.options_type(allow_copy_differences=True))
    assert [s.id for s in loaded.samples] == [
        "element_grounding_0",
        "refusal_grounding_0",
        "element_grounding_1",
    ]
    first, refusal, third = loaded.samples
    assert first.region == Box(0.05, 0.2, 0.15, 0.4, space="normalized", size=(200, 100))
    assert isinstance(refusal.region, Absent)
    assert third.image_path == first.image_path  # the index cell resolved to row 1's image
    assert dict(first.labels) == {
        "subtask": "element_grounding",
        "ui_type": "text",
        "platform": "unknown",
        "application": "chrome",
        "group": "unknown",
    }
    prov = loaded.summary["provenance"]
    assert prov["release_check"]["matches"] is None and prov["allowed_differences"] is True
    assert prov["copy"]["repository"] == "Zery/VBGD_Dataset"
    (tmp_path / "VenusBench.tsv").rename(tmp_path / "VBGD.tsv")
    with pytest.raises(
        GgeError, match="looks like Zery/VBGD_Dataset's copy, which gge knows but does not read"
    ):
        load_source(bench, tmp_path, bench.options_type(allow_copy_differences=True))


def test_an_unreadable_embedded_image_is_kept_and_listed_as_the_release_loaders_do(tmp_path: Path) -> None:
    bench = get_benchmark("screenspot_v2")
    release = tiny_release(tmp_path / "release")
    copy = tiny_parquet(tmp_path / "copy", {"image": (b"junk", "mobile_m.png")})
    loaded = load_source(
        bench, copy, opts(source="parquet", release_root=str(release), allow_copy_differences=True)
    )
    assert [s.id for s in loaded.samples] == ["mobile_0", "mobile_1", "desktop_0", "web_0"]
    assert loaded.summary["unreadable_images"] == 1
    assert loaded.summary["unreadable_image_ids"] == ["mobile_1"]
    with pytest.raises(OSError):
        open_image(loaded.samples[1].image_path).load()
