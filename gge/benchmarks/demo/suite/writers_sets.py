"""The demo-suite writers of the sets added in the 2026 round, each in its release layout.

GroundUI-1K and GroundUI-18K (FORMATS.md, section 14): ``gui_grounding/metadata_1k.jsonl`` (and its
raw-instruction twin) with ``images/``, one line per target, the repeated (image, instruction) pair,
the zero-height box and the box past the screenshot's edge of the release planted. WebClick (section
12): ``data/test-00000-of-00002.parquet`` and ``-00001-``, the screenshots embedded as the Hub's image
struct, boxes normalised; written only where pyarrow is installed (:func:`pyarrow_installed`,
``gge[hub]``: the folder is left out without it, and added to the same suite folder once pyarrow is
there, :func:`gge.benchmarks.demo.suite.generate.demo_root`). RUC (section 15): ``full.json`` with
``images/``, normal and deception records (each deception's ``dark_box`` another element of its
screen), a record without ``correct_box.bbox`` and the record with id 998, which the released code
leaves out. The ScreenSpot-v2 variants (section 13): ``mobile.json``, ``desktop.json``, ``web.json``
at the root in ScreenSpot-Pro's schema, ``imgs/``.
Each writer draws from its own random stream (``_rng(seed, <benchmark>)``) and runs after
:data:`~gge.benchmarks.demo.suite.writers_more.MORE_WRITERS`, so every earlier folder keeps its bytes.
:data:`SET_WRITERS` lists them in writing order.
"""

from __future__ import annotations

import importlib.util
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gge.benchmarks.demo.screens.elements import ScreenSpec, _rng
from gge.benchmarks.demo.screens.layouts import render
from gge.benchmarks.demo.suite.cases import Case, _allocate, _pick, _save_png
from gge.benchmarks.demo.suite.instructions import instruction
from gge.benchmarks.demo.suite.writers_more import json_line
from gge.types import Box

_GROUNDUI: tuple[tuple[str, str, ScreenSpec], ...] = (
    (
        "web",
        "mind2web_test_website",
        ScreenSpec("gui-web-0", "web", "windows", (1440, 900), "w_shop", "light"),
    ),
    ("web", "omniact", ScreenSpec("gui-web-1", "web", "macos", (1280, 720), "w_forum", "light_orange")),
    ("desktop", "omniact", ScreenSpec("gui-desk-0", "desktop", "macos", (1280, 800), "code", "dark")),
    (
        "desktop",
        "agent_studio",
        ScreenSpec("gui-desk-1", "desktop", "linux", (1366, 768), "science", "light"),
    ),
    ("mobile", "motif", ScreenSpec("gui-mob-0", "phone", "android", (540, 960), "m_shop", "light_green")),
    ("mobile", "screenspot", ScreenSpec("gui-mob-1", "phone", "ios", (428, 926), "m_social", "light")),
)
"""The screens: platform, source and screen (web 2 of 6, as the release's 400 of 1000 is close to)."""


def _strict(box: list[float]) -> Box:
    """GroundUI's target: the box with its edges excluded."""
    return Box(box[0], box[1], box[2], box[3], strict=True)


def _groundui(files: tuple[str, str], name: str) -> Callable[[Path, int, int], list[Case]]:
    """A writer of one GroundUI set: ``files`` are its re-captioned and raw metadata files."""

    def write(root: Path, seed: int, n: int) -> list[Case]:
        rng = _rng(seed, name)
        folder = root / "gui_grounding"
        records: list[dict[str, Any]] = []
        cases: list[Case] = []
        weights = [1.0] * len(_GROUNDUI)
        for (platform, source, spec), count in zip(_GROUNDUI, _allocate(n - 1, weights), strict=True):
            screen = render(spec, seed)
            image = f"{platform}_{spec.key}.png"
            _save_png(screen.image, folder / "images" / image)
            for el in _pick(screen, count, rng):
                box = [float(v) for v in el.box]
                if rng.random() < 0.5:  # as the release: some boxes in integers, some in floats
                    box = [float(round(v)) for v in box]
                records.append(
                    {
                        "image": image,
                        "instruction": instruction(el, screen, "basic"),
                        "bbox": box,
                        "source": source,
                        "platform": platform,
                        "resolution": [spec.size[0], spec.size[1]],
                        "raw_instruction": "NA"
                        if rng.random() < 0.05
                        else el.label.lower().replace(" ", "_"),
                    }
                )
                cases.append(Case(name, str(len(cases)), _strict(box), screen, el))
        # the release's odd lines: a zero-height box (never hit when the edges are excluded), a box past
        # the screenshot's right edge, and a repeated (image, instruction) pair (the last line)
        flat, wide = records[1], records[2]
        flat["bbox"] = [flat["bbox"][0], flat["bbox"][1], flat["bbox"][2], flat["bbox"][1]]
        wide["bbox"] = [wide["bbox"][0], wide["bbox"][1], float(wide["resolution"][0] + 7), wide["bbox"][3]]
        for k in (1, 2):
            c = cases[k]
            aim = c.aim if k == 2 else None  # a zero-height box cannot be aimed at
            cases[k] = Case(name, c.id, _strict(records[k]["bbox"]), c.screen, aim)
        records.append(dict(records[0]))
        cases.append(Case(name, str(len(cases)), cases[0].region, cases[0].screen, cases[0].aim))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / files[0]).write_text("".join(json_line(r) for r in records), encoding="utf-8")
        raw = ({**r, "instruction": r["raw_instruction"]} for r in records)
        (folder / files[1]).write_text("".join(json_line(r) for r in raw), encoding="utf-8")
        return cases

    return write


_WEBCLICK: tuple[tuple[str, ScreenSpec], ...] = (
    ("agentbrowse", ScreenSpec("wc-agent-0", "web", "windows", (1280, 720), "w_shop", "light")),
    ("humanbrowse", ScreenSpec("wc-human-0", "web", "macos", (1440, 900), "w_forum", "light")),
    ("calendars", ScreenSpec("wc-cal-0", "web", "linux", (1366, 768), "w_tool", "light_purple")),
)
"""WebClick's buckets and their screens."""


def pyarrow_installed() -> bool:
    """Whether pyarrow can be imported (the WebClick folder is written, and read, only then)."""
    return importlib.util.find_spec("pyarrow") is not None


def _write_webclick(root: Path, seed: int, n: int) -> list[Case]:
    if not pyarrow_installed():
        return []  # the folder is left out: reading it needs pyarrow too
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    rng = _rng(seed, "webclick")
    rows: list[dict[str, Any]] = []
    cases: list[Case] = []
    for (bucket, spec), count in zip(_WEBCLICK, _allocate(n, [1.0] * len(_WEBCLICK)), strict=True):
        screen = render(spec, seed)
        buf = io.BytesIO()
        screen.image.save(buf, "PNG")
        data = buf.getvalue()
        w, h = spec.size
        for el in _pick(screen, count, rng):
            x1, y1, x2, y2 = (float(v) for v in el.box)
            box = [x1 / w, y1 / h, x2 / w, y2 / h]
            rows.append(
                {
                    "image": {"bytes": data, "path": None},
                    "instruction": instruction(el, screen, "basic"),
                    "bbox": box,
                    "bucket": bucket,
                }
            )
            sid = f"test_{len(cases)}"
            region = Box(box[0], box[1], box[2], box[3], space="normalized", size=spec.size)
            cases.append(Case("webclick", sid, region, screen, el))
    (root / "data").mkdir(parents=True, exist_ok=True)
    half = len(rows) // 2
    for k, part in enumerate((rows[:half], rows[half:])):
        table = pa.Table.from_pylist(part)
        pq.write_table(table, root / "data" / f"test-{k:05d}-of-00002.parquet")
    return cases


_RUC: tuple[ScreenSpec, ...] = (
    ScreenSpec("ruc-0", "web", "windows", (1280, 720), "w_shop", "light"),
    ScreenSpec("ruc-1", "web", "macos", (1440, 900), "w_forum", "light_green"),
)


def _write_ruc(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "ruc")
    records: list[dict[str, Any]] = []
    cases: list[Case] = []
    for spec, count in zip(_RUC, _allocate(n, [1.0] * len(_RUC)), strict=True):
        screen = render(spec, seed)
        image = f"images/{spec.key}.png"
        _save_png(screen.image, root / image)
        picked = _pick(screen, count, rng)
        for k, el in enumerate(picked):
            sid = 990 + len(records)
            deceptive = k % 2 == 1
            box = [float(round(v)) for v in el.box]
            rec: dict[str, Any] = {
                "id": sid,
                "type": "Deception" if deceptive else "Normal",
                "category": "fake_button" if deceptive else None,
                "url": None,
                "image_path": image,
                "image_width": spec.size[0],
                "image_height": spec.size[1],
                "correct_box": {
                    "bbox": box,
                    "bbox_norm": [
                        box[0] / spec.size[0],
                        box[1] / spec.size[1],
                        box[2] / spec.size[0],
                        box[3] / spec.size[1],
                    ],
                },
                "messages": [
                    {"role": "system", "content": "You are a GUI agent."},
                    {
                        "role": "user",
                        "content": [
                            {"type": "image"},
                            {"type": "text", "text": instruction(el, screen, "basic")},
                        ],
                    },
                ],
            }
            if deceptive:  # the element before it on the screen is its decoy
                rec["dark_box"] = {"bbox": [float(round(v)) for v in picked[k - 1].box]}
            records.append(rec)
            if sid != 998:
                region = Box(box[0], box[1], box[2], box[3])
                cases.append(Case("ruc", str(sid), region, screen, el))
    records.append(
        {**records[0], "id": 990 + len(records), "correct_box": {"bbox_norm": [0.1, 0.1, 0.2, 0.2]}}
    )
    root.mkdir(parents=True, exist_ok=True)
    (root / "full.json").write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    return cases


_VARIANTS: tuple[tuple[str, str, ScreenSpec], ...] = (
    ("mobile", "ios", ScreenSpec("v2var-mob", "phone", "ios", (428, 926), "m_settings", "light")),
    ("desktop", "macos", ScreenSpec("v2var-desk", "desktop", "macos", (1280, 800), "code", "dark")),
    ("web", "shop", ScreenSpec("v2var-web", "web", "windows", (1280, 720), "w_shop", "light_orange")),
)


def _write_v2_variants(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "screenspot_v2_variants")
    cases: list[Case] = []
    for (platform, application, spec), count in zip(
        _VARIANTS, _allocate(n, [1.0] * len(_VARIANTS)), strict=True
    ):
        screen = render(spec, seed)
        image = f"{platform}_{spec.key}.png"
        _save_png(screen.image, root / "imgs" / image)
        records = []
        for k, el in enumerate(_pick(screen, count, rng)):
            sid = f"{platform}_{k}"
            box = [int(v) for v in el.box]
            records.append(
                {
                    "img_filename": image,
                    "bbox": box,
                    "img_size": [spec.size[0], spec.size[1]],
                    "instruction": instruction(el, screen, "basic"),
                    "id": sid,
                    "ui_type": el.ui_type,
                    "application": application,
                    "platform": platform,
                }
            )
            w, h = spec.size
            region = Box(box[0] / w, box[1] / h, box[2] / w, box[3] / h, "normalized", spec.size)
            cases.append(Case("screenspot_v2_variants", sid, region, screen, el))
        (root / f"{platform}.json").write_text(
            json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8"
        )
    return cases


SET_WRITERS: tuple[tuple[str, Callable[[Path, int, int], list[Case]]], ...] = (
    ("groundui_1k", _groundui(("metadata_1k.jsonl", "metadata_raw_1k.jsonl"), "groundui_1k")),
    ("groundui_18k", _groundui(("metadata.jsonl", "metadata_raw.jsonl"), "groundui_18k")),
    ("webclick", _write_webclick),
    ("ruc", _write_ruc),
    ("screenspot_v2_variants", _write_v2_variants),
)
"""The writers of the sets added in the 2026 round, in writing order (after :data:`MORE_WRITERS`)."""
