"""The six benchmark writers of the demo suite, each with its table of screens (one row per screenshot).

Each writer draws its screens and writes a benchmark's samples exactly as FORMATS.md lays the official
release out (so that gge's loaders read them unchanged), and returns the written samples as
:class:`~gge.benchmarks.demo.suite.cases.Case` records; :data:`_WRITERS` lists them in writing order.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gge.benchmarks.demo.screens.elements import Element, Screen, ScreenSpec, _rng
from gge.benchmarks.demo.screens.layouts import render
from gge.benchmarks.demo.screens.profiles import PROFILES
from gge.benchmarks.demo.suite.cases import (
    Case,
    _allocate,
    _box,
    _dump,
    _ints,
    _pick,
    _save_png,
    _styles,
    _token,
    _xyxy,
)
from gge.benchmarks.demo.suite.instructions import (
    basic_instruction,
    chinese_instruction,
    describe,
    functional_instruction,
    instruction,
    spatial_instruction,
)
from gge.types import Absent, Box, Polygon, Region

_SSV2: tuple[tuple[str, str, float, ScreenSpec], ...] = (
    ("mobile", "ios", 1.0, ScreenSpec("ssv2-ios", "phone", "ios", (390, 844), "m_social", "light")),
    (
        "mobile",
        "android",
        1.0,
        ScreenSpec("ssv2-android", "phone", "android", (360, 780), "m_settings", "light_green"),
    ),
    (
        "desktop",
        "windows",
        1.0,
        ScreenSpec("ssv2-win", "desktop", "windows", (1920, 1080), "office", "light"),
    ),
    ("desktop", "macos", 1.0, ScreenSpec("ssv2-mac", "desktop", "macos", (1440, 900), "os", "light_purple")),
    (
        "web",
        "gitlab",
        0.5,
        ScreenSpec("ssv2-gitlab", "web", "windows", (1280, 720), "w_gitlab", "light_purple"),
    ),
    ("web", "shop", 0.5, ScreenSpec("ssv2-shop", "web", "windows", (1440, 900), "w_shop", "light_orange")),
    ("web", "forum", 0.5, ScreenSpec("ssv2-forum", "web", "macos", (1280, 800), "w_forum", "light")),
    ("web", "tool", 0.5, ScreenSpec("ssv2-tool", "web", "windows", (1366, 768), "w_tool", "light_green")),
)


def _write_screenspot_v2(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "screenspot_v2")
    splits: dict[str, list[dict[str, Any]]] = {"mobile": [], "desktop": [], "web": []}
    cases: list[Case] = []
    for (split, source, _, spec), count in zip(_SSV2, _allocate(n, [r[2] for r in _SSV2]), strict=True):
        screen = render(spec, seed)
        name = f"{split}_{'-'.join(_token(rng, k) for k in (8, 4, 4, 4, 12))}.png"
        _save_png(screen.image, root / "screenspotv2_image" / name)
        for el, style in zip(
            _pick(screen, count, rng), _styles(rng, count, {"basic": 0.7, "functional": 0.3}), strict=True
        ):
            x1, y1, x2, y2 = el.box
            rec = {
                "img_filename": name,
                "bbox": [x1, y1, x2 - x1, y2 - y1],
                "instruction": instruction(el, screen, style),
                "data_type": el.ui_type,
                "data_source": source,
            }
            cases.append(
                Case("screenspot_v2", f"{split}_{len(splits[split])}", Box(x1, y1, x2, y2), screen, el)
            )
            splits[split].append(rec)
    for split, records in splits.items():
        _dump(root / f"screenspot_{split}_v2.json", records)
    return cases


_SSPRO: tuple[tuple[str, str, str, str, str, ScreenSpec], ...] = (
    (
        "vscode_macos",
        "vscode_mac",
        "vscode",
        "macos",
        "Dev",
        ScreenSpec(
            "sspro-vscode", "desktop", "macos", (2560, 1664), "code", "dark", 1.4, title="Visual Studio Code"
        ),
    ),
    (
        "photoshop_windows",
        "photoshop_windows",
        "photoshop",
        "windows",
        "Creative",
        ScreenSpec(
            "sspro-ps", "desktop", "windows", (2560, 1440), "graphics", "dark", 1.3, title="Adobe Photoshop"
        ),
    ),
    (
        "inventor_windows",
        "inventor_windows",
        "inventor",
        "windows",
        "CAD",
        ScreenSpec(
            "sspro-inventor",
            "desktop",
            "windows",
            (3840, 1080),
            "cad",
            "light",
            1.2,
            title="Autodesk Inventor",
        ),
    ),
    (
        "matlab_macos",
        "matlab_mac",
        "matlab",
        "macos",
        "Scientific",
        ScreenSpec(
            "sspro-matlab", "desktop", "macos", (2560, 1440), "science", "light_orange", 1.3, title="MATLAB"
        ),
    ),
    (
        "word_macos",
        "word_mac",
        "word",
        "macos",
        "Office",
        ScreenSpec(
            "sspro-word", "desktop", "macos", (2560, 1440), "office", "light", 1.3, title="Microsoft Word"
        ),
    ),
    (
        "linux_common_linux",
        "common_linux",
        "linux_common",
        "linux",
        "OS",
        ScreenSpec("sspro-linux", "desktop", "linux", (2880, 1800), "os", "dark", 1.5, title="Files"),
    ),
)
_SSPRO_TOP_EDGE = "inventor_windows"
"""Its first sample is an icon touching the top edge, annotated with y1 = -1 (as inventor_windows_60)."""


def _write_screenspot_pro(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "screenspot_pro")
    cases: list[Case] = []
    for (stem, folder, app, platform, group, spec), count in zip(
        _SSPRO, _allocate(n, [1.0] * len(_SSPRO)), strict=True
    ):
        screen = render(spec, seed)
        day, hh, mm, ss = (
            int(v)
            for v in (rng.integers(1, 29), rng.integers(0, 24), rng.integers(0, 60), rng.integers(0, 60))
        )
        rel = f"{folder}/screenshot_2024-11-{day:02d}_{hh:02d}-{mm:02d}-{ss:02d}.png"
        _save_png(screen.image, root / "images" / rel)
        top_edge = stem == _SSPRO_TOP_EDGE
        first = (lambda e: e.kind == "icon" and e.box[1] == 0) if top_edge else None
        records: list[dict[str, Any]] = []
        targets = _pick(screen, count, rng, first=first)
        for k, (el, style) in enumerate(
            zip(targets, _styles(rng, count, {"basic": 0.5, "functional": 0.5}), strict=True)
        ):
            bbox = _xyxy(el)
            if top_edge and k == 0:
                bbox[1] = -1
            records.append(
                {
                    "img_filename": rel,
                    "bbox": _ints(bbox),
                    "instruction": instruction(el, screen, style),
                    "instruction_cn": chinese_instruction(el),
                    "id": f"{stem}_{k}",
                    "application": app,
                    "platform": platform,
                    "img_size": list(spec.size),
                    "ui_type": el.ui_type,
                    "group": group,
                }
            )
            cases.append(Case("screenspot_pro", f"{stem}_{k}", _box(bbox), screen, el))
        _dump(root / "annotations" / f"{stem}.json", records)
    return cases


_OSW_LINUX_TOOLS = ("favourite", "home", "download")
_OSW: tuple[tuple[str, ScreenSpec], ...] = (
    # (icon whose outline is the polygon target of the screen's first sample, or "" for none, screen)
    (
        "favourite",
        ScreenSpec(
            "osw-0",
            "desktop",
            "linux",
            (1920, 1080),
            "graphics",
            "dark",
            extra_tools=_OSW_LINUX_TOOLS,
            title="GNU Image Manipulation Program",
        ),
    ),
    (
        "close window",
        ScreenSpec("osw-1", "desktop", "linux", (1920, 1080), "office", "light", title="LibreOffice Writer"),
    ),
    ("home", ScreenSpec("osw-2", "desktop", "linux", (1280, 720), "code", "dark", extra_tools=("home",))),
    (
        "download",
        ScreenSpec(
            "osw-3", "desktop", "linux", (1280, 720), "science", "light_green", extra_tools=("download",)
        ),
    ),
    ("", ScreenSpec("osw-4", "web", "linux", (1920, 1080), "w_shop", "light_orange")),
    ("", ScreenSpec("osw-5", "desktop", "linux", (1280, 720), "media", "dark")),
)
_OSW_REFUSAL_SCREENS = (1, 2, 3, 4)
_OSW_UNCLASSIFIED = (0, 5)
"""Screens whose last sample is left out of every category of classification_result.json."""
OSWORLD_CATEGORIES = (
    "text_matching",
    "element_recognition",
    "layout_understanding",
    "fine_grained_manipulation",
    "refusal",
)
_GUI_TYPES = {
    "button": ["Button", "Label"],
    "icon": ["Icon", "Button"],
    "field": ["Text Field", "Input"],
    "checkbox": ["Checkbox", "Label"],
    "radio": ["Radio Button", "Label"],
    "toggle": ["Toggle", "Switch"],
    "menu": ["Menu", "Menu Bar"],
    "tab": ["Tab", "Label"],
    "link": ["Link", "Label"],
    "list_item": ["List", "Label"],
    "text": ["Label"],
}
_AREA_TYPES = {
    "toolbar": "Toolbar",
    "title bar": "Title Bar",
    "sidebar": "Sidebar",
    "status bar": "Status Bar",
    "main panel": "Form",
    "properties panel": "Panel",
    "browser toolbar": "Toolbar",
}


def _absent_element(screen: Screen, rng: np.random.Generator) -> Element:
    """A plausible element that is not on the screen (for refusal samples)."""
    present = {e.label.lower() for e in screen.elements}
    kind, attr = [("button", "buttons"), ("checkbox", "checks"), ("list_item", "items"), ("tab", "tabs")][
        int(rng.integers(4))
    ]
    labels = sorted({v for p in PROFILES.values() for v in getattr(p, attr) if v.lower() not in present})
    return Element(kind, labels[int(rng.integers(len(labels)))], (0, 0, 1, 1), "")


def _write_osworld_g(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "osworld_g")
    original: list[dict[str, Any]] = []
    refined: list[dict[str, Any]] = []
    categories: dict[str, list[dict[str, str]]] = {c: [] for c in OSWORLD_CATEGORIES}
    cases: list[Case] = []
    for j, ((poly_icon, spec), count) in enumerate(zip(_OSW, _allocate(n, [1.0] * len(_OSW)), strict=True)):
        screen = render(spec, seed)
        image_id = _token(rng, 10, string.ascii_letters + string.digits)
        _save_png(screen.image, root / "images" / f"{image_id}.png")
        refusal_at = 1 if j in _OSW_REFUSAL_SCREENS else -1
        first = (
            (lambda e, name=poly_icon: e.kind == "icon" and e.label == name and bool(e.outline))
            if poly_icon
            else None
        )
        targets: list[Element | None] = list(_pick(screen, count - (refusal_at >= 0), rng, first=first))
        if refusal_at >= 0:
            targets.insert(refusal_at, None)
        styles = _styles(rng, count, {"basic": 0.5, "functional": 0.3, "spatial": 0.2})
        for k, (el, style) in enumerate(zip(targets, styles, strict=True)):
            sid = f"{image_id}-{k}"
            region: Region
            cats: list[str] = []
            if el is None:
                fake = _absent_element(screen, rng)
                box_type, coords, region = "refusal", [0.0, 0.0, 0.0, 0.0], Absent()
                text = instruction(fake, screen, "basic" if style == "spatial" else style)
                better = f"Find {describe(fake)} on the screen and click it."
                gui = _GUI_TYPES[fake.kind]
                cats = ["refusal"]
            else:
                if el.outline and k == 0 and poly_icon:
                    box_type, region = "polygon", Polygon(el.outline)
                    coords = [round(v, 2) for xy in el.outline for v in xy]
                    cats.append("fine_grained_manipulation")
                else:
                    x1, y1, x2, y2 = el.box
                    box_type = "bbox"
                    coords = [
                        round(x1 + float(rng.uniform(-0.4, 0.4)), 2),
                        round(y1 + float(rng.uniform(-0.4, 0.4)), 2),
                    ]
                    coords += [
                        round(x2 - coords[0] + float(rng.uniform(-0.3, 0.3)), 2),
                        round(y2 - coords[1] + float(rng.uniform(-0.3, 0.3)), 2),
                    ]
                    region = Box(coords[0], coords[1], coords[0] + coords[2], coords[1] + coords[3])
                text = instruction(el, screen, style)
                better = f"{functional_instruction(el)}: click {describe(el)} in the {el.area}."
                gui = _GUI_TYPES[el.kind] + ([_AREA_TYPES[el.area]] if el.area in _AREA_TYPES else [])
                if el.kind == "icon" or style == "functional":
                    cats.append("element_recognition")
                if style == "basic" and el.kind != "icon":
                    cats.append("text_matching")
                if style == "spatial":
                    cats.append("layout_understanding")
                if (
                    el.kind in ("checkbox", "radio", "toggle")
                    or min(el.box[2] - el.box[0], el.box[3] - el.box[1]) < 24
                ):
                    cats.append("fine_grained_manipulation")
            rec = {
                "id": sid,
                "image_path": f"{image_id}.png",
                "image_size": list(spec.size),
                "instruction": text,
                "box_type": box_type,
                "box_coordinates": _ints(coords) if el is None else coords,
                "GUI_types": gui,
            }
            original.append(rec)
            refined.append({**rec, "instruction": text if rng.random() < 0.12 else better})
            if not (j in _OSW_UNCLASSIFIED and k == count - 1):
                for c in dict.fromkeys(cats):
                    categories[c].append({"id": sid})
            cases.append(Case("osworld_g", sid, region, screen, el))
    _dump(root / "OSWorld-G.json", original)
    _dump(root / "OSWorld-G_refined.json", refined)
    _dump(root / "classification_result.json", {"classified": categories})
    return cases


_UIV: tuple[tuple[str, ScreenSpec], ...] = (
    ("VSCode", ScreenSpec("uiv-vscode", "desktop", "linux", (1920, 1080), "code", "dark", title="VSCode")),
    ("GIMP", ScreenSpec("uiv-gimp", "desktop", "linux", (1920, 1080), "graphics", "dark", title="GIMP")),
    ("Brave", ScreenSpec("uiv-brave", "web", "linux", (1920, 1080), "w_forum", "light")),
    (
        "LibreOffice Calc",
        ScreenSpec(
            "uiv-calc", "desktop", "linux", (1920, 1080), "office", "light_green", title="LibreOffice Calc"
        ),
    ),
    ("Anki", ScreenSpec("uiv-anki", "desktop", "linux", (1280, 720), "education", "light")),
    ("VLC Media Player", ScreenSpec("uiv-vlc", "desktop", "linux", (1280, 720), "media", "dark")),
)
UI_VISION_SETTINGS = ("basic", "functional", "spatial")
UI_VISION_CATEGORIES: dict[str, list[str]] = {
    "Education": ["Anki", "Zotero", "Calibre", "QGIS"],
    "Browsers": ["Brave", "Chromium", "Mozilla Firefox"],
    "Development": ["VSCode", "Eclipse", "PyCharm", "gedit"],
    "Productivity": ["Libreoffice Calc", "LibreOffice Writer", "draw.io", "Joplin"],
    "Creativity": ["GIMP", "Inkscape", "Krita", "Blender"],
    "Entertainment": ["VLC Media Player", "Kodi", "Signal"],
}
"""``mapdict_cat2platform.json``; ``"Libreoffice Calc"`` differs in case from the records on purpose."""
_UIV_INVERTED = ("basic", 5)
_ELEMENT_TYPE = {
    "button": "button",
    "icon": "icon",
    "field": "input field",
    "checkbox": "checkbox",
    "radio": "radio button",
    "toggle": "toggle switch",
    "menu": "menu",
    "tab": "tab",
    "link": "link",
    "list_item": "list item",
    "text": "text",
}


def _write_ui_vision(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "ui_vision")
    screens: list[tuple[str, str, Screen]] = []
    for platform, spec in _UIV:
        screen = render(spec, seed)
        slug = "".join(ch for ch in platform.lower() if ch.isalnum())
        rel = f"{slug}/{slug}_{int(rng.integers(100, 999))}.png"
        _save_png(screen.image, root / "images" / rel)
        screens.append((platform, rel, screen))
    cases: list[Case] = []
    for setting, total in zip(UI_VISION_SETTINGS, _allocate(n, [1.0] * len(UI_VISION_SETTINGS)), strict=True):
        records: list[dict[str, Any]] = []
        for (platform, rel, screen), count in zip(
            screens, _allocate(total, [1.0] * len(screens)), strict=True
        ):
            allowed = (
                (lambda e, s=screen: spatial_instruction(e, s.elements) is not None)
                if setting == "spatial"
                else None
            )
            for el in _pick(screen, count, rng, allowed=allowed):
                bbox = _xyxy(el)
                region = _box(bbox)
                if (setting, len(records)) == _UIV_INVERTED:
                    bbox = [bbox[2], bbox[1], bbox[0], bbox[3]]
                cases.append(Case("ui_vision", f"{setting}_{len(records)}", region, screen, el))
                records.append(
                    {
                        "image_path": rel,
                        "prompt_to_evaluate": instruction(el, screen, setting),
                        "bbox": _ints(bbox),
                        "image_size": list(screen.spec.size),
                        "platform": platform,
                        "element_type": _ELEMENT_TYPE[el.kind],
                        "category": el.area.title(),
                    }
                )
        _dump(root / "annotations" / "element_grounding" / f"element_grounding_{setting}.json", records)
    _dump(root / "mapdict_cat2platform.json", UI_VISION_CATEGORIES)
    return cases


_MMB: tuple[tuple[str, str, ScreenSpec], ...] = (
    (
        "os_windows",
        "word",
        ScreenSpec("mmb-win", "desktop", "windows", (1920, 1080), "office", "light", title="Word"),
    ),
    (
        "os_mac",
        "finder",
        ScreenSpec("mmb-mac", "desktop", "macos", (1440, 900), "os", "light", title="Finder"),
    ),
    ("os_linux", "vscode", ScreenSpec("mmb-linux", "desktop", "linux", (1280, 720), "code", "dark")),
    ("os_ios", "messages", ScreenSpec("mmb-ios", "phone", "ios", (390, 844), "m_social", "light")),
    (
        "os_android",
        "settings",
        ScreenSpec("mmb-android", "phone", "android", (360, 780), "m_settings", "light_green"),
    ),
    ("os_web", "shopmart", ScreenSpec("mmb-web", "web", "windows", (1280, 720), "w_shop", "light_orange")),
)
_MMB_MINUS_ONE = "os_windows"
"""Its first sample touches the left edge and is annotated with x1 = -1 (the official scorer reads 0)."""


def _write_mmbench_gui(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "mmbench_gui")
    records: list[dict[str, Any]] = []
    cases: list[Case] = []
    for (platform, app, spec), count in zip(_MMB, _allocate(n, [1.0] * len(_MMB)), strict=True):
        screen = render(spec, seed)
        name = f"{_token(rng, 8)}_{_token(rng, 8)}_{_token(rng, 64)}.png"
        _save_png(screen.image, root / "offline_images" / platform / name)
        w, h = spec.size
        edge = platform == _MMB_MINUS_ONE
        targets = _pick(screen, count, rng, first=(lambda e: e.box[0] == 0) if edge else None)
        for k, el in enumerate(targets):
            advanced = k % 2 == 1
            style = ("functional" if rng.random() < 0.5 else "spatial") if advanced else "basic"
            text = instruction(el, screen, style) if advanced else f"T{describe(el)[1:]} in the {el.area}"
            x1, y1, x2, y2 = el.box
            bbox: list[float] = [round(x1 / w, 4), round(y1 / h, 4), round(x2 / w, 4), round(y2 / h, 4)]
            if edge and k == 0:
                bbox[0] = -1
            fixed = [0.0 if v == -1 else v for v in bbox]
            index = len(records)
            records.append(
                {
                    "index": index,
                    "image_path": name,
                    "instruction": text,
                    "bbox": bbox,
                    "image_size": [w, h],
                    "data_type": el.ui_type,
                    "platform": platform,
                    "app_name": app,
                    "grounding_type": "advanced" if advanced else "basic",
                }
            )
            cases.append(Case("mmbench_gui", str(index), _box(fixed, size=(w, h)), screen, el))
    _dump(root / "L2_annotations.json", records)
    return cases


_I2E: tuple[tuple[str, str, ScreenSpec], ...] = (
    ("folder_1", "web", ScreenSpec("i2e-tool", "web", "windows", (1280, 720), "w_tool", "light_green")),
    ("folder_1", "desktop", ScreenSpec("i2e-gimp", "desktop", "windows", (1920, 1080), "graphics", "light")),
    ("folder_1", "mobile", ScreenSpec("i2e-shop", "phone", "android", (360, 780), "m_shop", "light_orange")),
    ("folder_2", "web", ScreenSpec("i2e-forum", "web", "macos", (1440, 900), "w_forum", "light")),
    ("folder_2", "desktop", ScreenSpec("i2e-files", "desktop", "macos", (1280, 720), "os", "light_purple")),
    ("folder_2", "mobile", ScreenSpec("i2e-chat", "phone", "ios", (390, 844), "m_social", "light")),
)
_I2E_ZERO_AREA, _I2E_INVERTED = 3, 7
"""Line numbers written with a zero-area box (x1 == x2) and an inverted one (x1 > x2), kept as written."""
_EL_TYPE = {
    "icon": "Icon",
    "button": "button",
    "checkbox": "Checkbox",
    "radio": "radio",
    "toggle": "toggle",
    "field": "input",
    "text": "text",
    "menu": "Button",
    "tab": "button",
    "link": "Text",
    "list_item": "text",
}


def _write_ui_i2e_bench(root: Path, seed: int, n: int) -> list[Case]:
    rng = _rng(seed, "ui_i2e_bench")
    lines: list[str] = []
    cases: list[Case] = []
    for j, ((folder, source, spec), count) in enumerate(
        zip(_I2E, _allocate(n, [1.0] * len(_I2E)), strict=True)
    ):
        screen = render(spec, seed)
        rel = f"screenshot/{folder}/{10 * j + int(rng.integers(1, 10))}_{int(rng.integers(1, 6))}.png"
        _save_png(screen.image, root / rel)
        for el in _pick(screen, count, rng):
            implicit = rng.random() < 0.6
            x1, y1, x2, y2 = el.box
            bbox: list[float] = [x1, y1, x2, y2]
            if len(lines) == _I2E_ZERO_AREA:
                bbox = [x1, y1, x1, y2]
            elif len(lines) == _I2E_INVERTED:
                bbox = [x2, y1, x1, y2]
            rec = {
                "image": rel,
                "instruction": functional_instruction(el) if implicit else basic_instruction(el),
                "bounding_box": _ints(bbox),
                "annotations": {"instr_type": "implicit" if implicit else "explicit"},
                "el_type": _EL_TYPE[el.kind],
                "source": source,
            }
            cases.append(Case("ui_i2e_bench", str(len(lines)), _box(bbox), screen, el))
            lines.append(json.dumps(rec, ensure_ascii=False))
    root.mkdir(parents=True, exist_ok=True)
    (root / "I2E-bench-annotation.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cases


_WRITERS: tuple[tuple[str, Callable[[Path, int, int], list[Case]]], ...] = (
    ("screenspot_v2", _write_screenspot_v2),
    ("screenspot_pro", _write_screenspot_pro),
    ("osworld_g", _write_osworld_g),
    ("ui_vision", _write_ui_vision),
    ("mmbench_gui", _write_mmbench_gui),
    ("ui_i2e_bench", _write_ui_i2e_bench),
)
