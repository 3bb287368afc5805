"""The demo-suite writers of the four benchmarks added after the six, each in its release layout.

ScreenSpot (v1), showdown-clicks, CAGUI grounding and VenusBench-GD (FORMATS.md, sections 7-10). They
draw from their own random streams (``_rng(seed, <benchmark>)``) and their own screen keys, and run after
the six writers of :mod:`~gge.benchmarks.demo.suite.writers`, so the six folders keep their bytes.
:data:`MORE_WRITERS` lists them in writing order. Showdown frames are WebP, CAGUI screenshots JPEG
(Pillow's wheels write both: ``PIL.features.check("webp")``); a screenshot shown by several records is
encoded once and its bytes written to each record's file (the releases give every click or line its
own file).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from gge.benchmarks.base import normalized_box
from gge.benchmarks.demo.screens.elements import Element, Screen, ScreenSpec, _rng
from gge.benchmarks.demo.screens.icons import ICONS
from gge.benchmarks.demo.screens.layouts import render
from gge.benchmarks.demo.suite.cases import Case, _allocate, _dump, _ints, _pick, _save_png, _styles, _token
from gge.benchmarks.demo.suite.instructions import KIND_CN, chinese_instruction, describe, instruction
from gge.benchmarks.demo.suite.writers import _absent_element
from gge.types import Absent, Box, Region

_SSV1: tuple[tuple[str, str, float, ScreenSpec], ...] = (
    ("mobile", "ios", 1.0, ScreenSpec("ssv1-ios", "phone", "ios", (428, 926), "m_shop", "light")),
    (
        "mobile",
        "android",
        1.0,
        ScreenSpec("ssv1-android", "phone", "android", (360, 800), "m_social", "light_purple"),
    ),
    ("desktop", "macos", 1.0, ScreenSpec("ssv1-mac", "desktop", "macos", (1280, 800), "code", "dark")),
    (
        "desktop",
        "windows",
        1.0,
        ScreenSpec("ssv1-win", "desktop", "windows", (1366, 768), "science", "light_green"),
    ),
    ("web", "shop", 0.5, ScreenSpec("ssv1-shop", "web", "windows", (1280, 720), "w_shop", "light")),
    ("web", "forum", 0.5, ScreenSpec("ssv1-forum", "web", "macos", (1440, 900), "w_forum", "light_orange")),
    ("web", "gitlab", 0.5, ScreenSpec("ssv1-gitlab", "web", "linux", (1280, 800), "w_gitlab", "dark")),
    ("web", "tool", 0.5, ScreenSpec("ssv1-tool", "web", "windows", (1366, 768), "w_tool", "light_purple")),
)


def _write_screenspot_v1(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "screenspot_v1")
    splits: dict[str, list[dict[str, Any]]] = {"mobile": [], "desktop": [], "web": []}
    cases: list[Case] = []
    for (split, source, _, spec), count in zip(_SSV1, _allocate(n, [r[2] for r in _SSV1]), strict=True):
        screen = render(spec, seed)
        name = f"{split}_{'-'.join(_token(rng, k) for k in (8, 4, 4, 4, 12))}.png"
        _save_png(screen.image, root / "screenspot_imgs" / name)
        for el, style in zip(
            _pick(screen, count, rng), _styles(rng, count, {"basic": 0.8, "functional": 0.2}), strict=True
        ):
            x1, y1, x2, y2 = (int(v) for v in el.box)
            rec = {
                "img_filename": name,
                "bbox": [x1, y1, x2 - x1, y2 - y1],
                "instruction": instruction(el, screen, style),
                "data_type": el.ui_type,
                "data_source": source,
            }
            region = normalized_box(x1, y1, x2, y2, spec.size)
            cases.append(Case("screenspot_v1", f"{split}_{len(splits[split])}", region, screen, el))
            splits[split].append(rec)
    for split, records in splits.items():
        _dump(root / f"screenspot_{split}.json", records)
    return cases


_SHOWDOWN: tuple[ScreenSpec, ...] = (
    ScreenSpec("sdc-0", "desktop", "macos", (1280, 800), "office", "light", title="Pages"),
    ScreenSpec("sdc-1", "web", "macos", (1280, 800), "w_shop", "light_orange"),
    ScreenSpec("sdc-2", "desktop", "macos", (1440, 900), "os", "light_purple", title="Finder"),
    ScreenSpec("sdc-3", "web", "macos", (1440, 900), "w_forum", "light"),
    ScreenSpec("sdc-4", "desktop", "macos", (1470, 956), "code", "dark", title="Xcode"),
    ScreenSpec("sdc-5", "desktop", "macos", (1470, 956), "media", "dark", title="Music"),
)
SHOWDOWN_COLUMNS = ("id", "recording_id", "image", "instruction", "x1", "y1", "x2", "y2", "width", "height")


def _encoded(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    if fmt == "WEBP":
        image.convert("RGB").save(buffer, format="WEBP", lossless=True, method=0)
    else:
        image.convert("RGB").save(buffer, format="JPEG", quality=75)
    return buffer.getvalue()


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _recording(rng: np.random.Generator) -> str:
    return "-".join(_token(rng, k) for k in (8, 4, 4, 4, 12)).upper()


def _write_showdown_clicks(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "showdown_clicks")
    dev = root / "showdown-clicks-dev"
    rows: list[dict[str, str]] = []
    cases: list[Case] = []
    for spec, count in zip(_SHOWDOWN, _allocate(n, [1.0] * len(_SHOWDOWN)), strict=True):
        screen = render(spec, seed)
        data = _encoded(screen.image, "WEBP")
        recording = _recording(rng)
        frame = int(rng.integers(20, 400))
        for el in _pick(screen, count, rng):
            frame += int(rng.integers(15, 120))
            rel = f"frames/{recording}/{frame}.webp"
            _write_bytes(dev / rel, data)
            sid = _token(rng, 16)
            x1, y1, x2, y2 = (int(v) for v in el.box)
            w, h = spec.size
            text = instruction(el, screen, "basic" if rng.random() < 0.7 else "functional")
            values = (sid, recording, rel, text[0].lower() + text[1:], x1, y1, x2, y2, w, h)
            rows.append({k: str(v) for k, v in zip(SHOWDOWN_COLUMNS, values, strict=True)})
            cases.append(Case("showdown_clicks", sid, Box(x1, y1, x2, y2, integer_point=True), screen, el))
    dev.mkdir(parents=True, exist_ok=True)
    with (dev / "data.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=SHOWDOWN_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return cases


_CAGUI: dict[str, tuple[ScreenSpec, ...]] = {
    "cap": (
        ScreenSpec("cagui-cap-0", "phone", "android", (1080, 2400), "m_shop", "light_orange"),
        ScreenSpec("cagui-cap-1", "phone", "android", (1220, 2712), "m_social", "light"),
        ScreenSpec("cagui-cap-2", "phone", "android", (1080, 2400), "m_settings", "light_green"),
        ScreenSpec("cagui-cap-3", "phone", "android", (1080, 2340), "m_social", "light_purple"),
    ),
    "ocr": (
        ScreenSpec("cagui-ocr-0", "phone", "android", (1080, 2400), "m_social", "light_purple"),
        ScreenSpec("cagui-ocr-1", "phone", "android", (1440, 3200), "m_shop", "light"),
        ScreenSpec("cagui-ocr-2", "phone", "android", (1080, 2400), "m_settings", "light"),
        ScreenSpec("cagui-ocr-3", "phone", "android", (1220, 2712), "m_shop", "light_green"),
        ScreenSpec("cagui-ocr-4", "phone", "android", (1080, 2400), "m_settings", "light_orange"),
    ),
}
"""Screens of cap.jsonl (Fun2Point) and ocr.jsonl (Text2Point, text targets only)."""


def cagui_function(el: Element) -> str:
    """A Chinese function description of the element, in the manner of CAGUI's cap.jsonl ``text``."""
    if el.kind == "icon":
        return f"UI元素是一个{ICONS[el.label].cn}图标。点击该图标可以打开与{ICONS[el.label].cn}相关的功能。"
    return f"UI元素是一个{KIND_CN[el.kind]}，上面显示“{el.label}”。点击后会执行与“{el.label}”相关的操作。"


def _write_cagui_grounding(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "cagui_grounding")
    totals = {"cap": n // 2, "ocr": n - n // 2}
    lines: dict[str, list[str]] = {"cap": [], "ocr": []}
    cases: list[Case] = []
    for file, specs in _CAGUI.items():
        for spec, count in zip(specs, _allocate(totals[file], [1.0] * len(specs)), strict=True):
            screen = render(spec, seed)
            data = _encoded(screen.image, "JPEG")
            allowed = None if file == "cap" else (lambda e: e.kind != "icon")
            for el in _pick(screen, count, rng, allowed=allowed):
                k = len(lines[file])
                folder = "" if file == "cap" else "ocr/"
                _write_bytes(root / "images" / file / f"{k}.jpeg", data)
                x1, y1, x2, y2 = (int(v) for v in el.box)
                w, h = spec.size
                rec = {
                    "task": "bbox2function" if file == "cap" else "bbox2text",
                    "image": f"grounding_eval/dataset/images/{folder}{k}.jpeg",
                    "id": k if rng.random() < 0.8 else max(0, k - 1),  # not unique, as in the release
                    "abs_position": f"<{x1}, {y1}, {x2}, {y2}>",
                    "rel_position": f"<{x1 / w}, {y1 / h}, {x2 / w}, {y2 / h}>",
                    "text": cagui_function(el) if file == "cap" else el.label,
                }
                subtask = "fun2point" if file == "cap" else "text2point"
                cases.append(Case("cagui_grounding", f"{subtask}_{k}", Box(x1, y1, x2, y2), screen, el))
                lines[file].append(json_line(rec))
    (root / "code").mkdir(parents=True, exist_ok=True)
    for file, text in lines.items():
        (root / "code" / f"{file}.jsonl").write_text("".join(text), encoding="utf-8")
    return cases


def json_line(rec: dict[str, Any]) -> str:
    """One compact JSON line (the releases' jsonl style), with its newline."""
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"


_VENUS: tuple[tuple[str, str, str, ScreenSpec], ...] = (
    # (platform folder, application, group, screen)
    (
        "web",
        "ShopMart",
        "Shopping",
        ScreenSpec("vbgd-shop", "web", "windows", (1920, 1080), "w_shop", "light"),
    ),
    ("web", "DevHub", "Development", ScreenSpec("vbgd-git", "web", "linux", (1440, 900), "w_gitlab", "dark")),
    ("mobile", "Chatter", "Social", ScreenSpec("vbgd-chat", "phone", "ios", (390, 844), "m_social", "light")),
    (
        "mobile",
        "Settings",
        "Tools",
        ScreenSpec("vbgd-set", "phone", "android", (360, 780), "m_settings", "light_green"),
    ),
    (
        "desktop",
        "Writer",
        "Office",
        ScreenSpec("vbgd-office", "desktop", "windows", (1920, 1080), "office", "light_purple"),
    ),
    ("desktop", "Files", "Tools", ScreenSpec("vbgd-files", "desktop", "macos", (1440, 900), "os", "light")),
)
VENUS_SUBTASKS = ("element_grounding", "functional_grounding", "refusal_grounding")
_VENUS_REFUSAL_SHARE = 0.25


def _write_venusbench_gd(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "venusbench_gd")
    refusals = max(2, round(n * _VENUS_REFUSAL_SHARE))
    per_file = dict(zip(VENUS_SUBTASKS, [*_allocate(n - refusals, [1.0, 1.0]), refusals], strict=True))
    files: dict[str, list[dict[str, Any]]] = {s: [] for s in VENUS_SUBTASKS}
    cases: list[Case] = []
    screens: list[tuple[str, str, str, str, Screen]] = []
    for folder, app, group, spec in _VENUS:
        screen = render(spec, seed)
        rel = f"{folder}/{app.lower()}_{_token(rng, 6)}.png"
        _save_png(screen.image, root / "images" / rel)
        screens.append((folder, app, group, rel, screen))
    for subtask in VENUS_SUBTASKS:
        counts = _allocate(per_file[subtask], [1.0] * len(screens))
        for (folder, app, group, rel, screen), count in zip(screens, counts, strict=True):
            refusal = subtask == "refusal_grounding"
            targets: list[Element | None] = [None] * count if refusal else list(_pick(screen, count, rng))
            for el in targets:
                sid = f"{subtask}_{len(files[subtask])}"
                shown = el if el is not None else _absent_element(screen, rng)
                style = "functional" if subtask == "functional_grounding" else "basic"
                rec: dict[str, Any] = {"img_filename": rel}
                region: Region
                if el is None:
                    region = Absent()
                    if len(files[subtask]) % 3 != 1:  # one refusal in three has no bbox key (the default)
                        rec["bbox"] = [-1, -1, -1, -1]
                else:
                    rec["bbox"] = _ints(el.box)
                    x1, y1, x2, y2 = (float(v) for v in el.box)
                    region = normalized_box(x1, y1, x2, y2, screen.spec.size)
                rec["instruction"] = instruction(shown, screen, style) if el else f"Click {describe(shown)}"
                rec["instruction_zh"] = chinese_instruction(shown)
                rec.update({"platform": folder, "application": app, "group": group})
                if el is not None:
                    rec["ui_type"] = el.ui_type
                cases.append(Case("venusbench_gd", sid, region, screen, el))
                files[subtask].append(rec)
    for subtask, records in files.items():
        _dump(root / "instruction" / f"{subtask}.json", records)
    _dump(root / "meta.json", {"name": "VenusBench-GD (gge demo)", "subtasks": list(VENUS_SUBTASKS)})
    return cases


MORE_WRITERS: tuple[tuple[str, Callable[[Path, int, int], list[Case]]], ...] = (
    ("screenspot_v1", _write_screenspot_v1),
    ("showdown_clicks", _write_showdown_clicks),
    ("cagui_grounding", _write_cagui_grounding),
    ("venusbench_gd", _write_venusbench_gd),
)
"""The four writers, in writing order (after the six of :data:`~.writers._WRITERS`)."""
