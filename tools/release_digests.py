"""Write gge/benchmarks/release_digests.json: the release digests a Hub copy is checked against.

Reads the real annotation records (``../shared/benchmarks`` beside the clone by default, laid out as
each release lays them out, no screenshots), lays placeholder screenshots of the true sizes (one
small PNG per size, hard-linked to every path) in a temporary folder, loads each benchmark with its
own loader and every variant listed below, and writes per benchmark and variant: the record count
and the sha256 digests of the sorted ids, of (id, region) in pixels rounded to 1e-3, of (id,
instruction), of (id, image size) and of (id, labels), with each record's short hash (to count what
differs). The records themselves are never written.

Usage::

    python tools/release_digests.py [SHARED_BENCHMARKS_DIR]
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from PIL import Image

from gge.benchmarks import get_benchmark
from gge.benchmarks.hub_digests import DIGESTS_FILE, digests, variant_key

OUT = Path(__file__).resolve().parents[1] / "gge" / "benchmarks" / DIGESTS_FILE


def load_json(path: Path) -> Any:
    """A JSON file's value."""
    with path.open(encoding="utf-8") as f:
        return json.load(f)


class Placeholders:
    """One 1-bit PNG per size, hard-linked to every screenshot path of that size."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.by_size: dict[tuple[int, int], Path] = {}

    def lay(self, path: Path, size: Iterable[float]) -> None:
        """Lay a placeholder of ``size`` at ``path`` (a hard link to the PNG of that size)."""
        w, h = (int(v) for v in size)
        src = self.by_size.get((w, h))
        if src is None:
            src = self.folder / f"{w}x{h}.png"
            Image.new("1", (w, h)).save(src)
            self.by_size[(w, h)] = src
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.link(src, path)


def link(src: Path, dst: Path) -> None:
    """A symbolic link to a real annotation file."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists():
        os.symlink(src, dst)


def screenspot(version: str, image_folder: str, suffix: str) -> Callable[[Path, Path, Placeholders], None]:
    """The layer of a ScreenSpot release (three split files, a flat image folder)."""

    def lay(shared: Path, root: Path, pngs: Placeholders) -> None:
        for split in ("mobile", "desktop", "web"):
            name = f"screenspot_{split}{suffix}.json"
            link(shared / version / name, root / name)
        sizes = load_json(shared / version / "image_sizes.json")
        for split in ("mobile", "desktop", "web"):
            for rec in load_json(shared / version / f"screenspot_{split}{suffix}.json"):
                size = sizes.get(rec["img_filename"])
                if size is None:
                    raise SystemExit(f"{version}: no true size of {rec['img_filename']}: cannot lay it")
                pngs.lay(root / image_folder / rec["img_filename"], size)

    return lay


def pro(shared: Path, root: Path, pngs: Placeholders) -> None:
    """ScreenSpot-Pro's layout."""
    for f in sorted((shared / "screenspot_pro" / "annotations").glob("*.json")):
        link(f, root / "annotations" / f.name)
        for rec in load_json(f):
            pngs.lay(root / "images" / rec["img_filename"], rec["img_size"])


def osworld(shared: Path, root: Path, pngs: Placeholders) -> None:
    """OSWorld-G's layout (a repository folder holding benchmark/)."""
    for name in ("OSWorld-G.json", "OSWorld-G_refined.json"):
        link(shared / "osworld_g" / "benchmark" / name, root / "benchmark" / name)
    for rec in load_json(shared / "osworld_g" / "benchmark" / "OSWorld-G.json"):
        pngs.lay(root / "benchmark" / "images" / rec["image_path"], rec["image_size"])


def mmbench(shared: Path, root: Path, pngs: Placeholders) -> None:
    """MMBench-GUI's layout."""
    link(shared / "mmbench_gui" / "L2_annotations.json", root / "L2_annotations.json")
    for rec in load_json(shared / "mmbench_gui" / "L2_annotations.json"):
        pngs.lay(root / "offline_images" / rec["platform"] / rec["image_path"], rec["image_size"])


def i2e(shared: Path, root: Path, pngs: Placeholders) -> None:
    """UI-I2E-Bench's layout."""
    name = "I2E-bench-annotation.jsonl"
    link(shared / "ui_i2e_bench" / name, root / name)
    for path, size in load_json(shared / "ui_i2e_bench" / "image_sizes.json").items():
        pngs.lay(root / path, size)


def ui_vision(shared: Path, root: Path, pngs: Placeholders) -> None:
    """UI-Vision's layout."""
    folder = shared / "ui_vision" / "annotations" / "element_grounding"
    for f in sorted(folder.glob("*.json")):
        link(f, root / "annotations" / "element_grounding" / f.name)
        for rec in load_json(f):
            pngs.lay(root / "images" / rec["image_path"], rec["image_size"])
    link(shared / "ui_vision" / "mapdict_cat2platform.json", root / "mapdict_cat2platform.json")


def showdown(shared: Path, root: Path, pngs: Placeholders) -> None:
    """showdown-clicks' layout (frame sizes from the rows)."""
    dev = shared / "showdown_clicks" / "showdown-clicks-dev"
    link(dev / "data.csv", root / "showdown-clicks-dev" / "data.csv")
    with (dev / "data.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            pngs.lay(root / "showdown-clicks-dev" / row["image"], (float(row["width"]), float(row["height"])))


def cagui(shared: Path, root: Path, pngs: Placeholders) -> None:
    """CAGUI's layout (record paths mapped as the loader maps them)."""
    sizes = load_json(shared / "cagui_grounding" / "image_sizes.json")
    prefix = "grounding_eval/dataset/images/"
    for name, images in (("cap.jsonl", "images/cap/"), ("ocr.jsonl", "images/")):
        link(shared / "cagui_grounding" / "code" / name, root / "code" / name)
        for line in (shared / "cagui_grounding" / "code" / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                image = json.loads(line)["image"]
                pngs.lay(root / (images + image[len(prefix) :]), sizes[image])


LAYERS: dict[str, tuple[str, Callable[[Path, Path, Placeholders], None]]] = {
    "screenspot_v2": ("screenspot_v2", screenspot("screenspot_v2", "screenspotv2_image", "_v2")),
    "screenspot_pro": ("screenspot_pro", pro),
    "osworld_g": ("osworld_g", osworld),
    "osworld_g_refined": ("osworld_g", osworld),
    "mmbench_gui": ("mmbench_gui", mmbench),
    "ui_i2e_bench": ("ui_i2e_bench", i2e),
    "ui_vision": ("ui_vision", ui_vision),
    "showdown_clicks": ("showdown_clicks", showdown),
    "cagui_grounding": ("cagui_grounding", cagui),
}
"""Per benchmark: the folder its placeholders go in, and how they are laid. Not screenspot_v1: the true
sizes of 24 of its 610 images are not known here (its normalised boxes need them), so its copies are
checked only against release files (``bench.screenspot_v1.release_root``). Not venusbench_gd: no
records."""

VARIANTS: dict[str, list[dict[str, Any]]] = {
    "osworld_g": [{"refusals": r} for r in ("scored", "miss", "excluded")],
    "osworld_g_refined": [{"refusals": r} for r in ("scored", "miss", "excluded")],
}
"""Per benchmark, the option sets loaded (default: the default options only)."""


def main(argv: list[str]) -> int:
    """Write the digests file; ``argv[1]`` is the folder of the real records."""
    shared = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
    if not (shared / "screenspot_v2").is_dir():
        print(f"error: {shared}: not a folder of the real annotation records (give it as the argument)")
        return 2
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "pngs").mkdir()
        pngs = Placeholders(base / "pngs")
        for name, (folder, lay) in LAYERS.items():
            bench = get_benchmark(name)
            root = base / folder
            lay(shared, root, pngs)
            fields = {f for f in bench.options_type.__dataclass_fields__}
            for overrides in VARIANTS.get(name, [{}]):
                if not set(overrides) <= fields:
                    print(f"{name}: options {sorted(overrides)} not there yet: skipped {overrides}")
                    continue
                loaded = bench.load(root, bench.options_type(**overrides))
                key = variant_key(loaded.summary["variant"])
                out.setdefault(name, {})[key] = digests(loaded.samples)
                print(f"{name} {key}: {len(loaded.samples)} records")
    document = {
        "about": (
            "Digests of the release records of each benchmark and variant "
            "(gge.benchmarks.hub_digests.digests), "
            "written by tools/release_digests.py from the real records; the records are not here."
        ),
        "benchmarks": out,
    }
    OUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
