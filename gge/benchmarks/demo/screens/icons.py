"""The icons of the demo screens: primitives in unit coordinates, drawn into a square glyph box.

:data:`ICONS` maps each icon name to its :class:`IconSpec`: how instructions name it, what clicking it
does (in English and Chinese) and the :class:`Prim` shapes that draw it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Prim:
    """One drawing primitive of an icon, in unit coordinates of the glyph square.

    Attributes:
        op: ``poly`` (filled polygon, flat x,y list), ``disc`` (cx, cy, r), ``ring`` (cx, cy, r, outline),
            ``line`` (flat points), ``rect`` (x1, y1, x2, y2 filled) or ``frame`` (rectangle outline).
        data: The coordinates.
        color: Palette name, ``""`` for the icon's foreground, ``"bg"`` for the background under it.
        width: Stroke width for ``ring``, ``line`` and ``frame``, as a fraction of the glyph size.
    """

    op: str
    data: tuple[float, ...]
    color: str = ""
    width: float = 0.1


@dataclass(frozen=True)
class IconSpec:
    """A named icon: what it looks like and how instructions refer to it.

    Attributes:
        desc: Noun phrase for instructions (``"the {desc} icon"``).
        function: Imperative phrase saying what clicking it does (functional instructions).
        cn: Chinese name, for ``instruction_cn``.
        prims: Drawing primitives.
        outline: Index of the ``poly`` primitive that outlines the icon (a polygon target), or -1.
    """

    desc: str
    function: str
    cn: str
    prims: tuple[Prim, ...]
    outline: int = -1


def _ngon(
    n: int, r: float = 0.42, r2: float | None = None, cx: float = 0.5, cy: float = 0.5
) -> tuple[float, ...]:
    """Regular polygon (or a star when ``r2`` is given: alternating radii, 2n vertices)."""
    pts: list[float] = []
    count = 2 * n if r2 is not None else n
    for i in range(count):
        rad = r if r2 is None or i % 2 == 0 else r2
        a = -math.pi / 2 + 2 * math.pi * i / count
        pts += [round(cx + rad * math.cos(a), 4), round(cy + rad * math.sin(a), 4)]
    return tuple(pts)


_ARROW_DOWN = (0.38, 0.1, 0.62, 0.1, 0.62, 0.5, 0.86, 0.5, 0.5, 0.9, 0.14, 0.5, 0.38, 0.5)


def _turn(flat: tuple[float, ...], quarter: int) -> tuple[float, ...]:
    out: list[float] = []
    for i in range(0, len(flat), 2):
        x, y = flat[i], flat[i + 1]
        for _ in range(quarter):
            x, y = 1 - y, x
        out += [x, y]
    return tuple(out)


def _flat(values: tuple[float, ...]) -> str:
    return " ".join(f"{v:g}" for v in values)


def _icon(desc: str, function: str, cn: str, prims: str, outline: int = -1) -> IconSpec:
    """An icon from a compact spec: ``"op v v v ... [@colour] [w=width]; ..."`` (see :class:`Prim`)."""
    parsed: list[Prim] = []
    for part in prims.split(";"):
        op, *tokens = part.split()
        color = next((t[1:] for t in tokens if t.startswith("@")), "")
        width = next((float(t[2:]) for t in tokens if t.startswith("w=")), 0.1)
        data = tuple(float(t) for t in tokens if not t.startswith(("@", "w=")))
        parsed.append(Prim(op, data, color, width))
    return IconSpec(desc, function, cn, tuple(parsed), outline)


_CIRCLE12 = _flat(_ngon(12, 0.45))
_X = "line .36 .36 .64 .64 @white w=.09; line .64 .36 .36 .64 @white w=.09"
ICONS: dict[str, IconSpec] = {
    "settings": _icon(
        "settings", "Open the settings", "设置", f"poly {_flat(_ngon(8, 0.46, 0.34))}; disc .5 .5 .14 @bg", 0
    ),
    "search": _icon(
        "search (magnifier)", "Search for something", "搜索", "ring .42 .42 .26; line .6 .6 .88 .88 w=.13"
    ),
    "add": _icon(
        "plus",
        "Add a new item",
        "添加",
        "poly .4 .1 .6 .1 .6 .4 .9 .4 .9 .6 .6 .6 .6 .9 .4 .9 .4 .6 .1 .6 .1 .4 .4 .4",
        0,
    ),
    "delete": _icon(
        "trash can",
        "Delete the selected item",
        "删除",
        "rect .25 .32 .75 .9; rect .14 .18 .86 .26; rect .4 .08 .6 .18",
    ),
    "favourite": _icon(
        "star", "Mark this as a favourite", "收藏", f"poly {_flat(_ngon(5, 0.46, 0.19, cy=0.53))}", 0
    ),
    "close window": _icon("close window", "Close this window", "关闭窗口", f"poly {_CIRCLE12} @red; {_X}", 0),
    "minimize": _icon(
        "minimize",
        "Minimize this window",
        "最小化",
        f"poly {_CIRCLE12} @yellow; line .32 .5 .68 .5 @white w=.09",
        0,
    ),
    "maximize": _icon(
        "maximize",
        "Maximize this window",
        "最大化",
        f"poly {_CIRCLE12} @green; frame .33 .33 .67 .67 @white w=.08",
        0,
    ),
    "home": _icon("home", "Go to the home page", "主页", "poly .5 .1 .9 .48 .9 .9 .1 .9 .1 .48", 0),
    "download": _icon("download arrow", "Download the file", "下载", f"poly {_flat(_ARROW_DOWN)}", 0),
    "upload": _icon("upload arrow", "Upload a file", "上传", f"poly {_flat(_turn(_ARROW_DOWN, 2))}", 0),
    "back": _icon(
        "back arrow", "Go back to the previous page", "返回", f"poly {_flat(_turn(_ARROW_DOWN, 1))}", 0
    ),
    "forward": _icon(
        "forward arrow", "Go forward to the next page", "前进", f"poly {_flat(_turn(_ARROW_DOWN, 3))}", 0
    ),
    "refresh": _icon(
        "refresh", "Reload the current view", "刷新", "ring .5 .52 .32 w=.11; poly .62 .06 .9 .22 .62 .38"
    ),
    "menu": _icon(
        "menu (three lines)",
        "Open the main menu",
        "菜单",
        "rect .12 .2 .88 .3; rect .12 .45 .88 .55; rect .12 .7 .88 .8",
    ),
    "more": _icon(
        "more options (three dots)",
        "Show more options",
        "更多",
        "disc .5 .2 .09; disc .5 .5 .09; disc .5 .8 .09",
    ),
    "notifications": _icon(
        "notifications bell",
        "Check the notifications",
        "通知",
        "poly .5 .1 .72 .3 .74 .66 .88 .78 .12 .78 .26 .66 .28 .3; disc .5 .86 .08",
        0,
    ),
    "account": _icon(
        "user profile",
        "Open the account profile",
        "个人资料",
        "disc .5 .32 .2; poly .14 .92 .2 .66 .36 .56 .64 .56 .8 .66 .86 .92",
    ),
    "open folder": _icon(
        "folder", "Open a folder", "打开文件夹", "poly .08 .22 .4 .22 .48 .32 .92 .32 .92 .82 .08 .82", 0
    ),
    "save": _icon(
        "save (floppy disk)",
        "Save the current file",
        "保存",
        "rect .14 .14 .86 .86; rect .3 .14 .7 .4 @bg; rect .28 .58 .72 .86 @bg",
    ),
    "undo": _icon(
        "undo",
        "Undo the last action",
        "撤销",
        "line .82 .78 .82 .46 .34 .46 w=.12; poly .1 .46 .36 .24 .36 .68",
    ),
    "redo": _icon(
        "redo",
        "Redo the last undone action",
        "重做",
        "line .18 .78 .18 .46 .66 .46 w=.12; poly .9 .46 .64 .24 .64 .68",
    ),
    "run": _icon("play (triangle)", "Start running it", "运行", "poly .22 .12 .86 .5 .22 .88"),
    "share": _icon(
        "share",
        "Share this with others",
        "分享",
        "line .74 .22 .26 .5 .74 .78 w=.08; disc .74 .22 .14; disc .26 .5 .14; disc .74 .78 .14",
    ),
    "edit": _icon(
        "pencil", "Edit the selected item", "编辑", "poly .14 .86 .2 .64 .66 .18 .82 .34 .36 .8", 0
    ),
    "mail": _icon(
        "envelope",
        "Send it by e-mail",
        "邮件",
        "frame .1 .24 .9 .78 w=.08; line .12 .27 .5 .55 .88 .27 w=.08",
    ),
    "calendar": _icon(
        "calendar",
        "Pick a date",
        "日历",
        "frame .12 .18 .88 .88 w=.08; rect .12 .18 .88 .36; rect .28 .5 .42 .62; rect .58 .5 .72 .62",
    ),
    "lock": _icon("padlock", "Lock it against changes", "锁定", "ring .5 .4 .2 w=.09; rect .2 .44 .8 .9"),
    "camera": _icon(
        "camera", "Take a snapshot", "截图", "rect .1 .3 .9 .82; rect .34 .18 .66 .3; disc .5 .56 .16 @bg"
    ),
    "info": _icon(
        "information (i)",
        "Show details about it",
        "信息",
        f"poly {_flat(_ngon(16, 0.45))}; rect .45 .42 .55 .76 @bg; disc .5 .28 .06 @bg",
        0,
    ),
    "bookmark": _icon(
        "bookmark ribbon", "Bookmark this page", "书签", "poly .24 .1 .76 .1 .76 .9 .5 .66 .24 .9", 0
    ),
    "filter": _icon(
        "funnel filter", "Filter the list", "筛选", "poly .1 .14 .9 .14 .58 .5 .58 .88 .42 .78 .42 .5", 0
    ),
    "zoom in": _icon(
        "zoom in",
        "Zoom in",
        "放大",
        "ring .42 .42 .28 w=.09; line .62 .62 .9 .9 w=.12; "
        "line .28 .42 .56 .42 w=.08; line .42 .28 .42 .56 w=.08",
    ),
    "print": _icon(
        "printer",
        "Print the document",
        "打印",
        "rect .28 .1 .72 .34; rect .1 .34 .9 .7; rect .28 .58 .72 .9 @bg",
    ),
    "grid": _icon(
        "grid view",
        "Show the items as a grid",
        "网格视图",
        "rect .12 .12 .44 .44; rect .56 .12 .88 .44; rect .12 .56 .44 .88; rect .56 .56 .88 .88",
    ),
    "chart": _icon(
        "bar chart",
        "Show a chart of the data",
        "图表",
        "rect .12 .5 .3 .88; rect .41 .2 .59 .88; rect .7 .38 .88 .88",
    ),
    "brush": _icon(
        "paint brush", "Paint with the brush tool", "画笔", "line .84 .16 .4 .6 w=.12; disc .3 .72 .16"
    ),
    "crop": _icon(
        "crop",
        "Crop the image",
        "裁剪",
        "line .26 .08 .26 .74 .92 .74 w=.11; line .08 .26 .74 .26 .74 .92 w=.11",
    ),
    "layers": _icon(
        "layers stack",
        "Show the layers",
        "图层",
        "poly .5 .1 .9 .32 .5 .54 .1 .32; line .1 .52 .5 .74 .9 .52 w=.08; line .1 .7 .5 .92 .9 .7 w=.08",
    ),
    "terminal": _icon(
        "terminal prompt",
        "Open a terminal",
        "终端",
        "frame .08 .14 .92 .86 w=.08; line .24 .36 .42 .5 .24 .64 w=.08; line .5 .66 .74 .66 w=.08",
    ),
    "git branch": _icon(
        "source control branch",
        "Show the source control changes",
        "源代码管理",
        "line .3 .22 .3 .78 w=.08; line .7 .3 .7 .46 .3 .66 w=.08; "
        "disc .3 .2 .11; disc .3 .8 .11; disc .7 .28 .11",
    ),
    "debug": _icon(
        "bug",
        "Start debugging",
        "调试",
        "disc .5 .56 .28; disc .5 .22 .12; line .08 .46 .92 .46 w=.07; line .1 .78 .9 .78 w=.07",
    ),
    "extensions": _icon(
        "extensions (blocks)",
        "Browse the extensions",
        "扩展",
        "rect .1 .4 .44 .74; rect .46 .4 .8 .74; rect .1 .76 .44 .96; poly .62 .04 .92 .2 .76 .36 .5 .2",
    ),
    "repeat": _icon(
        "repeat (loop arrows)",
        "Repeat the playlist",
        "循环",
        "frame .14 .3 .86 .74 w=.09; poly .6 .16 .84 .3 .6 .44",
    ),
}
