"""Synthetic GUI screenshots drawn with PIL, with the exact box of every clickable element.

A :class:`ScreenSpec` names a layout style (``desktop``, ``web`` or ``phone``), a size, a theme and a
vocabulary profile (the labels an application shows). :func:`render` lays the screen out from a seeded
random generator, draws it in a flat palette image (small PNGs) and returns every clickable element with
its pixel box, so that a benchmark record can point at a drawn element whose text matches its instruction.

Example:
    >>> spec = ScreenSpec("demo", "phone", "android", (360, 780), "m_settings", "light")
    >>> screen = render(spec, seed=0)
    >>> screen.image.size
    (360, 780)
    >>> any(e.kind == "toggle" for e in screen.elements)
    True
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw, ImageFont

Box = tuple[int, int, int, int]
"""A drawn box ``(x1, y1, x2, y2)``: inclusive pixel extents, as PIL fills them."""

Vertices = tuple[tuple[float, float], ...]

# --------------------------------------------------------------------------------------------------
# Colours and themes: a fixed palette keeps the images in "P" mode (flat, tiny PNGs).

PALETTE: dict[str, tuple[int, int, int]] = {
    "white": (255, 255, 255),
    "black": (0, 0, 0),
    "ink": (32, 33, 36),
    "gray7": (95, 99, 104),
    "gray5": (154, 160, 166),
    "gray3": (218, 220, 224),
    "gray2": (232, 234, 237),
    "gray1": (241, 243, 244),
    "gray0": (248, 249, 250),
    "d_bg": (30, 30, 30),
    "d_panel": (37, 37, 38),
    "d_bar": (51, 51, 51),
    "d_title": (60, 60, 60),
    "d_text": (212, 212, 212),
    "d_muted": (133, 133, 133),
    "d_border": (85, 85, 85),
    "blue": (26, 115, 232),
    "lblue": (210, 227, 252),
    "dblue": (9, 71, 113),
    "green": (24, 128, 56),
    "lgreen": (206, 234, 214),
    "purple": (107, 79, 187),
    "lpurple": (232, 224, 247),
    "orange": (232, 113, 10),
    "lorange": (253, 226, 200),
    "red": (217, 48, 37),
    "yellow": (249, 171, 0),
    "teal": (18, 164, 175),
}
_COLOR = {name: i for i, name in enumerate(PALETTE)}
_PALETTE_BYTES = bytes(v for rgb in PALETTE.values() for v in rgb)


@dataclass(frozen=True)
class Theme:
    """Palette colour names for the roles a layout paints.

    Attributes:
        bg: Window background.
        panel: Side panels and toolbars.
        bar: Menu bars and status bars.
        title: Title bar.
        text: Main text.
        muted: Secondary text and placeholders.
        accent: Primary buttons, links, checked boxes.
        on_accent: Text on the accent colour.
        field: Input field background.
        border: Borders and separators.
        select: Selected list row.
    """

    bg: str
    panel: str
    bar: str
    title: str
    text: str
    muted: str
    accent: str
    on_accent: str
    field: str
    border: str
    select: str


def _light(accent: str, select: str) -> Theme:
    return Theme(
        "white", "gray1", "gray2", "gray3", "ink", "gray7", accent, "white", "white", "gray5", select
    )


THEMES: dict[str, Theme] = {
    "light": _light("blue", "lblue"),
    "light_green": _light("green", "lgreen"),
    "light_purple": _light("purple", "lpurple"),
    "light_orange": _light("orange", "lorange"),
    "dark": Theme(
        "d_bg",
        "d_panel",
        "d_bar",
        "d_title",
        "d_text",
        "d_muted",
        "blue",
        "white",
        "d_title",
        "d_border",
        "dblue",
    ),
}

# --------------------------------------------------------------------------------------------------
# Icons: primitives in unit coordinates, drawn into a square glyph box.


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

# --------------------------------------------------------------------------------------------------
# Vocabulary profiles: the labels an application's screens show.


@dataclass(frozen=True)
class Profile:
    """The labels one kind of application shows; layouts draw from these pools without repeats.

    Attributes:
        title: Application title (window title, site name or app bar title).
        nav: Menus (desktop), navigation links (web) or bottom navigation labels (phone).
        tools: Icon names (keys of :data:`ICONS`) for toolbars and app bars.
        side_title: Heading of the side panel.
        items: Side panel rows (desktop), card titles (web) or list rows (phone).
        tabs: Tab labels.
        search: Placeholder of the search field.
        fields: Labelled input fields.
        checks: Checkbox and switch labels.
        radios: Radio button labels (one group).
        buttons: Button labels.
        status: Status bar texts (desktop) or footer links (web).
        heading: Heading of the main form.
    """

    title: str
    nav: tuple[str, ...]
    tools: tuple[str, ...]
    side_title: str
    items: tuple[str, ...]
    tabs: tuple[str, ...]
    search: str
    fields: tuple[str, ...]
    checks: tuple[str, ...]
    radios: tuple[str, ...]
    buttons: tuple[str, ...]
    status: tuple[str, ...]
    heading: str


def _p(
    title: str,
    nav: str,
    tools: str,
    side: str,
    items: str,
    tabs: str,
    search: str,
    fields: str,
    checks: str,
    radios: str,
    buttons: str,
    status: str,
    heading: str,
) -> Profile:
    def split(s: str) -> tuple[str, ...]:
        return tuple(v.strip() for v in s.split("|") if v.strip())

    return Profile(
        title,
        split(nav),
        split(tools),
        side,
        split(items),
        split(tabs),
        search,
        split(fields),
        split(checks),
        split(radios),
        split(buttons),
        split(status),
        heading,
    )


PROFILES: dict[str, Profile] = {
    "code": _p(
        "Visual Studio Code",
        "File|Edit|Selection|View|Go|Run|Terminal|Help",
        "open folder|search|git branch|debug|extensions|run|refresh|settings|terminal|add",
        "EXPLORER",
        "main.py|utils.py|README.md|setup.cfg|requirements.txt|Dockerfile|config.yaml|test_app.py",
        "Welcome|Settings|Extensions|Keyboard Shortcuts",
        "Search files",
        "Font Size|Tab Size|Word Wrap Column|Line Height",
        "Format On Save|Auto Save|Minimap|Bracket Pair Colorization|Sticky Scroll|Render Whitespace",
        "Light|Dark|High Contrast",
        "Run Tests|Commit|Sync Changes|Install|Reload Window",
        "Ln 12, Col 8|UTF-8|Python 3.11|main",
        "Editor Settings",
    ),
    "graphics": _p(
        "Image Editor",
        "File|Edit|Image|Layer|Select|Filter|View|Window|Help",
        "brush|crop|zoom in|layers|edit|grid|camera|add|delete|favourite",
        "LAYERS",
        "Background|Layer 1|Shadow|Text Layer|Mask|Curves 1|Group 2",
        "Properties|Adjustments|Libraries|Swatches",
        "Search tools",
        "Width|Height|Resolution|Opacity",
        "Constrain Proportions|Show Grid|Snap to Guides|Anti-alias|Resample|Lock Transparency",
        "Pixels|Inches|Percent",
        "Apply|Reset|Export|Flatten Image",
        "Doc: 24.3M|Zoom 100%|RGB/8",
        "Image Size",
    ),
    "cad": _p(
        "Part Designer",
        "File|Edit|View|Insert|Format|Tools|Draw|Modify|Dimension",
        "add|edit|grid|zoom in|layers|chart|lock|delete|filter|info",
        "MODEL BROWSER",
        "Origin|Sketch1|Extrusion1|Fillet1|Hole1|Work Plane1|End of Part",
        "3D Model|Sketch|Annotate|Inspect",
        "Search commands",
        "Distance|Angle|Thickness|Radius",
        "Show Dimensions|Snap to Grid|Ortho Mode|Symmetric|Preview|Auto Project",
        "Join|Cut|Intersect",
        "Finish Sketch|Extrude|Revolve|Measure",
        "Ready|Units: mm|Scale 1:1",
        "Extrude",
    ),
    "science": _p(
        "Data Lab",
        "File|Edit|View|Data|Analysis|Plot|Window|Help",
        "open folder|chart|run|debug|grid|filter|zoom in|print|refresh|info",
        "WORKSPACE",
        "data.csv|results.mat|model.m|fig1.fig|sample_A|sample_B|trend.do",
        "Command Window|Variables|Plots|Editor",
        "Search documentation",
        "Sample Size|Significance Level|Lag Order|Iterations",
        "Robust Errors|Include Constant|Log Scale|Show Legend|Hold On|Parallel Pool",
        "Linear|Quadratic|Cubic",
        "Run Analysis|Plot Data|Estimate|Clear Workspace",
        "Ready|Variables: 12|Elapsed 0.42 s",
        "Regression",
    ),
    "office": _p(
        "Word Processor",
        "File|Home|Insert|Design|Layout|References|Review|View",
        "print|edit|grid|chart|share|camera|mail|bookmark|lock|add",
        "NAVIGATION",
        "Introduction|Methods|Results|Discussion|Appendix|Acknowledgements",
        "Headings|Pages|Comments|Styles",
        "Search in document",
        "Font Size|Line Spacing|Left Indent|Page Width",
        "Track Changes|Show Ruler|Spell Check|Hyphenation|Keep with Next|Widow Control",
        "Portrait|Landscape",
        "Share|Insert Table|Accept All|Compare",
        "Page 1 of 4|1,203 words|English (US)",
        "Paragraph",
    ),
    "os": _p(
        "Files",
        "File|Edit|View|Go|Window|Help",
        "back|forward|home|open folder|grid|share|delete|info|search|lock",
        "FAVOURITES",
        "Desktop|Documents|Downloads|Pictures|Music|Network|Trash",
        "General|Display|Sound|Network|Privacy",
        "Search settings",
        "Computer Name|Workgroup|Proxy Host|Port",
        "Show Hidden Files|Night Light|Bluetooth|Automatic Updates|Do Not Disturb|Show Battery Percentage",
        "Wired|Wireless|VPN",
        "Restart Now|Add Printer|Check for Updates|Manage Storage",
        "12 items|38.2 GB available",
        "System",
    ),
    "education": _p(
        "Anki",
        "File|Edit|View|Tools|Help",
        "add|search|chart|settings|refresh|calendar|edit|delete|info",
        "DECKS",
        "Default|Japanese|Biology|Spanish Verbs|World Capitals|Chemistry",
        "Decks|Browse|Stats|Card Types",
        "Search cards",
        "New Cards per Day|Maximum Reviews|Learning Steps|Graduating Interval",
        "Bury Siblings|Show Timer|Autoplay Audio|Show Answer Times",
        "Again|Hard|Good|Easy",
        "Study Now|Create Deck|Import File|Sync Collection",
        "42 cards due|Studied 18 cards",
        "Deck Options",
    ),
    "media": _p(
        "VLC media player",
        "Media|Playback|Audio|Video|Subtitle|Tools|View|Help",
        "run|back|forward|repeat|camera|grid|settings|menu|add",
        "PLAYLIST",
        "intro.mp4|lecture_01.mkv|song.mp3|podcast_12.ogg|trailer.webm",
        "Video|Audio Track|Subtitles|Codec",
        "Search playlist",
        "Playback Speed|Audio Delay|Subtitle Delay|Volume",
        "Loop|Shuffle|Always on Top|Hardware Decoding|Show Spectrum",
        "Stereo|Mono|Surround",
        "Play|Stop|Open Media|Save Playlist",
        "00:12 / 03:45|Speed 1.00x",
        "Adjustments",
    ),
    "w_gitlab": _p(
        "GitLab",
        "Projects|Groups|Issues|Merge Requests|Snippets|Milestones",
        "notifications|add|account|info|menu",
        "Filter projects",
        "gge-core|web-frontend|infra-terraform|docs-site|mobile-app|data-pipeline",
        "Projects · GitLab|Pipelines · GitLab|Merge requests",
        "Search or go to",
        "Branch Name|Commit Message",
        "Delete Source Branch|Squash Commits|Private Only|Show Archived",
        "Last Updated|Name|Most Stars",
        "New Project|Clone|Fork|Star|Create Issue|Run Pipeline|Edit Wiki",
        "About GitLab|Docs|Pricing|Status",
        "Your projects",
    ),
    "w_shop": _p(
        "ShopMart",
        "Deals|Electronics|Books|Fashion|Home & Garden|Sell",
        "account|favourite|notifications|menu|bookmark",
        "Refine results",
        "Wireless Earbuds|Coffee Grinder|Desk Lamp|Running Shoes|Backpack 30L|Smart Watch",
        "ShopMart: Online Shopping|Your Orders|Wish List",
        "Search products",
        "Zip Code|Coupon Code",
        "Free Shipping|In Stock Only|Prime Delivery|Top Rated",
        "Price: Low to High|Newest Arrivals|Best Selling",
        "Add to Cart|Buy Now|Save for Later|Compare|Notify Me|View Details|See Similar",
        "Help|Returns|Gift Cards|Careers",
        "Results",
    ),
    "w_forum": _p(
        "DevTalk",
        "Latest|Top|Categories|Unread|Bookmarks",
        "notifications|account|search|menu|add",
        "Filter topics",
        "Help with PATH variable|Best budget laptop?|Weekly showcase thread|Rust vs Go for CLI tools|"
        "Docker build is slow|Tips for a first marathon",
        "DevTalk Community|Latest topics|My profile",
        "Search topics",
        "Topic Title|Tags",
        "Watch Thread|Hide Solved|Only My Posts|Show Pinned",
        "Hot|New|Top",
        "New Topic|Reply|Follow|Share Post|Mark Solved|Subscribe|Quote",
        "Guidelines|FAQ|Terms of Service|Privacy",
        "Topics",
    ),
    "w_tool": _p(
        "ConvertKit Online",
        "Convert|Compress|Merge|Split|Pricing",
        "account|upload|download|menu|info",
        "Options",
        "PDF to Word|JPG to PNG|Merge PDF|Compress Video|Rotate PDF|Unlock PDF",
        "ConvertKit: free converter|Pricing|My account",
        "Enter a URL",
        "Email Address|Output Name",
        "Keep Metadata|Email Me the Result|OCR Scanned Pages|Delete After Download",
        "High Quality|Balanced|Small File",
        "Upload File|Convert Now|Download|Start Free Trial|Choose Files|Get Started|Try Demo",
        "API|Blog|Contact|Security",
        "Tools",
    ),
    "m_settings": _p(
        "Settings",
        "Home|Search|Alerts|Profile",
        "back|search|more",
        "",
        "Wi-Fi|Bluetooth|Mobile Data|Notifications|Battery|Display|Privacy|Storage|About Phone",
        "General|Connections|Advanced",
        "Search settings",
        "",
        "Airplane Mode|Dark Mode|Auto-rotate|Location|Hotspot",
        "",
        "Sign Out|Reset All Settings",
        "",
        "",
    ),
    "m_shop": _p(
        "ShopNow",
        "Home|Categories|Cart|Account",
        "menu|search|favourite",
        "",
        "Today's Deals|Your Orders|Wish List|Gift Cards|Customer Service|Buy Again|Coupons",
        "For You|Trending|New",
        "Search products",
        "",
        "Fast Delivery|Eco Packaging|Deal Alerts",
        "",
        "Checkout|Continue Shopping",
        "",
        "",
    ),
    "m_social": _p(
        "Messages",
        "Chats|Calls|Stories|Settings",
        "back|search|more",
        "",
        "Alice Martin|Bob Chen|Family Group|Carol Diaz|Work Team|Dan Okafor|Book Club",
        "All|Unread|Groups",
        "Search messages",
        "",
        "Read Receipts|Message Preview|Mute Groups",
        "",
        "New Chat|Invite Friends",
        "",
        "",
    ),
}

# --------------------------------------------------------------------------------------------------
# Screens and elements.


@dataclass(frozen=True)
class Element:
    """One clickable element drawn on a screen.

    Attributes:
        kind: ``button``, ``icon``, ``field``, ``checkbox``, ``radio``, ``toggle``, ``menu``, ``tab``,
            ``link``, ``list_item`` or ``text``.
        label: Visible text; for icons the icon name (a key of :data:`ICONS`).
        box: Drawn extents ``(x1, y1, x2, y2)``, inclusive pixels.
        area: Where it sits (``"toolbar"``, ``"sidebar"``...), for instructions and categories.
        outline: Absolute polygon outline of a shaped icon (empty when none).
    """

    kind: str
    label: str
    box: Box
    area: str
    outline: Vertices = ()

    @property
    def ui_type(self) -> str:
        """``"icon"`` for icons, ``"text"`` otherwise (the benchmarks' text/icon split)."""
        return "icon" if self.kind == "icon" else "text"

    @property
    def center(self) -> tuple[float, float]:
        """Centre of the drawn box."""
        x1, y1, x2, y2 = self.box
        return ((x1 + x2) / 2, (y1 + y2) / 2)


@dataclass(frozen=True)
class ScreenSpec:
    """What to draw.

    Attributes:
        key: Unique name; seeds the layout together with the suite seed.
        style: ``desktop``, ``web`` or ``phone``.
        platform: ``windows``, ``macos``, ``linux``, ``ios`` or ``android`` (window controls, look).
        size: (width, height) in pixels.
        profile: Key of :data:`PROFILES`.
        theme: Key of :data:`THEMES`.
        scale: Size of widgets relative to a 1280x720 desktop (0 picks one from the size).
        extra_tools: Icons that must appear in the toolbar (first).
        title: Application title shown on screen (default: the profile's).
    """

    key: str
    style: str
    platform: str
    size: tuple[int, int]
    profile: str
    theme: str
    scale: float = 0.0
    extra_tools: tuple[str, ...] = ()
    title: str = ""


@dataclass(frozen=True)
class Screen:
    """A rendered screen.

    Attributes:
        spec: What was drawn.
        image: The screenshot (palette mode).
        elements: Every clickable element, in drawing order.
    """

    spec: ScreenSpec
    image: Image.Image
    elements: tuple[Element, ...] = field(default_factory=tuple)


@functools.lru_cache(maxsize=64)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size)


def _rng(*parts: int | str) -> np.random.Generator:
    """A generator seeded by a stable hash of the parts (never Python's salted ``hash``)."""
    words = [p if isinstance(p, int) else zlib.crc32(p.encode("utf-8")) for p in parts]
    return np.random.default_rng(words)


class _Canvas:
    """Draws widgets and records the clickable ones."""

    def __init__(self, spec: ScreenSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self.w, self.h = spec.size
        if spec.scale > 0:
            self.s = spec.scale
        elif spec.style == "phone":
            self.s = self.w / 360
        else:
            self.s = max(1.0, min(self.w / 1280, self.h / 720))
        self.theme = THEMES[spec.theme]
        self.profile = PROFILES[spec.profile]
        self.title = spec.title or self.profile.title
        self.rng = rng
        self.img = Image.new("P", spec.size, _COLOR[self.theme.bg])
        self.img.putpalette(_PALETTE_BYTES)
        self.draw = ImageDraw.Draw(self.img)
        self.elements: list[Element] = []
        self.used: set[str] = set()
        self.fs = self.px(13)

    # -- primitives --------------------------------------------------------------------------------
    def px(self, v: float) -> int:
        return max(1, round(v * self.s))

    def col(self, name: str) -> int:
        return _COLOR[getattr(self.theme, name)] if hasattr(self.theme, name) else _COLOR[name]

    def text_w(self, text: str, size: int = 0) -> int:
        return math.ceil(_font(size or self.fs).getlength(text))

    def text(
        self, x: float, cy: float, text: str, color: str = "text", size: int = 0, center: bool = False
    ) -> None:
        font = _font(size or self.fs)
        left, top, right, bottom = font.getbbox(text)
        x0 = x - (right - left) / 2 - left if center else x - left
        self.draw.text((round(x0), round(cy - (top + bottom) / 2)), text, fill=self.col(color), font=font)

    def rect(self, box: Box, fill: str, outline: str | None = None, radius: int = 0) -> None:
        o = None if outline is None else self.col(outline)
        if radius:
            self.draw.rounded_rectangle(box, radius=radius, fill=self.col(fill), outline=o)
        else:
            self.draw.rectangle(box, fill=self.col(fill), outline=o)

    def hline(self, x1: int, x2: int, y: int, color: str = "border") -> None:
        self.draw.line((x1, y, x2, y), fill=self.col(color))

    def add(self, kind: str, label: str, box: Box, area: str, outline: Vertices = ()) -> Element:
        el = Element(kind, label, box, area, outline)
        self.elements.append(el)
        return el

    def take(self, pool: Sequence[str], n: int | None = None, keep_order: bool = False) -> list[str]:
        """Up to n labels of the pool not used yet on this screen (shuffled unless keep_order)."""
        order = list(range(len(pool))) if keep_order else [int(i) for i in self.rng.permutation(len(pool))]
        out: list[str] = []
        for i in order:
            if pool[i] and pool[i].lower() not in self.used and (n is None or len(out) < n):
                out.append(pool[i])
                self.used.add(pool[i].lower())
        return out

    # -- widgets -----------------------------------------------------------------------------------
    def glyph(self, box: Box, name: str, fg: str, bg: str) -> Vertices:
        """Draw an icon in the square box; return its absolute outline (empty when it has none)."""
        x1, y1, x2, _ = box
        size = x2 - x1

        def pts(flat: tuple[float, ...]) -> list[tuple[float, float]]:
            return [
                (round(x1 + flat[i] * size, 2), round(y1 + flat[i + 1] * size, 2))
                for i in range(0, len(flat), 2)
            ]

        spec = ICONS[name]
        outline: Vertices = ()
        for i, p in enumerate(spec.prims):
            c = self.col(bg if p.color == "bg" else (p.color or fg))
            width = max(1, round(p.width * size))
            if p.op == "poly":
                vs = pts(p.data)
                self.draw.polygon(vs, fill=c)
                if i == spec.outline:
                    outline = tuple(vs)
            elif p.op in ("disc", "ring"):
                cx, cy, r = x1 + p.data[0] * size, y1 + p.data[1] * size, p.data[2] * size
                e = (cx - r, cy - r, cx + r, cy + r)
                if p.op == "disc":
                    self.draw.ellipse(e, fill=c)
                else:
                    self.draw.ellipse(e, outline=c, width=width)
            elif p.op == "line":
                self.draw.line(pts(p.data), fill=c, width=width, joint="curve")
            elif p.op == "rect":
                (a, b), (d, e2) = pts(p.data)
                self.draw.rectangle((a, b, d, e2), fill=c)
            elif p.op == "frame":
                (a, b), (d, e2) = pts(p.data)
                self.draw.rectangle((a, b, d, e2), outline=c, width=width)
        return outline

    def icon(self, box: Box, name: str, area: str, glyph: int, fg: str = "text", bg: str = "") -> Element:
        x1, y1, x2, y2 = box
        if bg:
            self.rect(box, bg, radius=self.px(4))
        gx, gy = (x1 + x2 + 1 - glyph) // 2, (y1 + y2 + 1 - glyph) // 2
        outline = self.glyph((gx, gy, gx + glyph, gy + glyph), name, fg, bg or self._bg_at(x1, y1))
        self.used.add("icon:" + name)
        return self.add("icon", name, box, area, outline)

    def _bg_at(self, x: int, y: int) -> str:
        index = int(self.img.getpixel((x, y)))  # type: ignore[arg-type]
        return list(PALETTE)[index]

    def button(
        self, x: int, y: int, label: str, area: str, primary: bool = True, w: int = 0, h: int = 0
    ) -> Element:
        h = h or self.px(30)
        w = w or self.text_w(label) + self.px(28)
        box = (x, y, x + w - 1, y + h - 1)
        if primary:
            self.rect(box, "accent", radius=self.px(4))
        else:
            self.rect(box, "field", outline="border", radius=self.px(4))
        self.text(x + w / 2, y + h / 2, label, "on_accent" if primary else "text", center=True)
        return self.add("button", label, box, area)

    def field(self, x: int, y: int, w: int, label: str, area: str, placeholder: str = "") -> Element:
        h = self.px(28)
        box = (x, y, x + w - 1, y + h - 1)
        self.rect(box, "field", outline="border", radius=self.px(3))
        self.text(x + self.px(8), y + h / 2, placeholder or label, "muted")
        return self.add("field", label, box, area)

    def checkbox(self, x: int, y: int, label: str, area: str, checked: bool, radio: bool = False) -> Element:
        h, sq = self.px(22), self.px(14)
        top = y + (h - sq) // 2
        sbox = (x, top, x + sq - 1, top + sq - 1)
        if radio:
            self.draw.ellipse(sbox, fill=self.col("field"), outline=self.col("border"), width=self.px(1))
            if checked:
                d = self.px(4)
                self.draw.ellipse((x + d, top + d, x + sq - 1 - d, top + sq - 1 - d), fill=self.col("accent"))
        else:
            self.rect(sbox, "accent" if checked else "field", outline="accent" if checked else "border")
            if checked:
                pts = [
                    (x + sq * 0.2, top + sq * 0.5),
                    (x + sq * 0.42, top + sq * 0.75),
                    (x + sq * 0.8, top + sq * 0.25),
                ]
                self.draw.line(pts, fill=self.col("on_accent"), width=self.px(2))
        tx = x + sq + self.px(6)
        self.text(tx, y + h / 2, label)
        return self.add(
            "radio" if radio else "checkbox", label, (x, y, tx + self.text_w(label), y + h - 1), area
        )

    def toggle(self, x: int, y: int, label: str, area: str, on: bool) -> Element:
        w, h = self.px(38), self.px(22)
        box = (x, y, x + w - 1, y + h - 1)
        self.draw.rounded_rectangle(box, radius=h // 2, fill=self.col("accent" if on else "gray5"))
        k = self.px(3)
        kx = x + w - h + k if on else x + k
        self.draw.ellipse((kx, y + k, kx + h - 2 * k - 1, y + h - k - 1), fill=self.col("white"))
        return self.add("toggle", label, box, area)

    def menu(self, x: int, y: int, h: int, label: str, area: str) -> Element:
        w = self.text_w(label) + self.px(20)
        self.text(x + self.px(10), y + h / 2, label)
        return self.add("menu", label, (x, y, x + w - 1, y + h - 1), area)

    def tab(self, x: int, y: int, h: int, label: str, area: str, active: bool) -> Element:
        w = self.text_w(label) + self.px(32)
        box = (x, y, x + w - 1, y + h - 1)
        if active:
            self.rect(box, "bg")
            self.rect((x, y + h - self.px(3), x + w - 1, y + h - 1), "accent")
        self.text(x + w / 2, y + h / 2, label, "text" if active else "muted", center=True)
        return self.add("tab", label, box, area)

    def link(self, x: int, cy: int, label: str, area: str, color: str = "accent") -> Element:
        h = self.px(22)
        self.text(x + self.px(3), cy, label, color)
        return self.add(
            "link", label, (x, cy - h // 2, x + self.text_w(label) + self.px(6), cy - h // 2 + h - 1), area
        )

    def label(
        self, x: int, cy: int, text: str, area: str, color: str = "muted", kind: str = "text"
    ) -> Element:
        h = self.px(20)
        self.text(x + self.px(3), cy, text, color)
        return self.add(
            kind, text, (x, cy - h // 2, x + self.text_w(text) + self.px(6), cy - h // 2 + h - 1), area
        )

    def list_item(
        self, x1: int, y: int, x2: int, h: int, label: str, area: str, selected: bool, lead: str
    ) -> Element:
        box = (x1, y, x2, y + h - 1)
        if selected:
            self.rect(box, "select")
        d = self.px(12)
        cy = y + h // 2
        self.draw.rounded_rectangle(
            (x1 + self.px(12), cy - d // 2, x1 + self.px(12) + d, cy + d // 2),
            self.px(2),
            fill=self.col(lead),
        )
        self.text(x1 + self.px(32), cy, label)
        return self.add("list_item", label, box, area)

    def filler(self, x1: int, y1: int, x2: int, y2: int) -> None:
        """Lines of greyed 'content' so that the screen is not empty (not clickable)."""
        step = self.px(22)
        y = y1
        while y + self.px(10) < y2 and x2 - x1 > self.px(60):
            indent = self.px(20) * int(self.rng.integers(0, 3))
            length = int(self.rng.integers(self.px(60), max(self.px(61), (x2 - x1 - indent) * 3 // 4)))
            self.rect(
                (x1 + indent, y, x1 + indent + length, y + self.px(8)),
                "border" if self.theme.bg == "d_bg" else "gray2",
            )
            y += step


# --------------------------------------------------------------------------------------------------
# Layouts.


def _form(c: _Canvas, x1: int, y1: int, x2: int, y2: int, area: str, heading: str) -> int:
    """A settings form: fields, checkboxes, radios, switches, buttons; greyed content below them."""
    p = c.profile
    c.rect((x1, y1, x2, y2), "bg", outline="border", radius=c.px(6))
    pad = c.px(20)
    c.text(x1 + pad, y1 + c.px(22), heading, "text", size=c.px(16))
    y = y1 + c.px(46)
    colw = (x2 - x1 - 2 * pad) // 2
    fields = c.take(p.fields, 4)
    for i, name in enumerate(fields):
        cx = x1 + pad + (i % 2) * colw
        c.text(cx, y + c.px(8), name, "muted")
        c.field(cx, y + c.px(18), colw - pad, name, area, placeholder=str(int(c.rng.integers(1, 99))))
        if i % 2 == 1 or i == len(fields) - 1:
            y += c.px(58)
    row = c.px(30)
    x = x1 + pad
    for j, name in enumerate(c.take(p.checks, 3)):
        el = c.checkbox(x, y, name, area, checked=j == 0)
        x = el.box[2] + c.px(28)
        if x > x2 - c.px(200):
            x, y = x1 + pad, y + row
    y += row
    radios = c.take(p.radios, keep_order=True)
    x = x1 + pad
    for j, name in enumerate(radios):
        el = c.checkbox(x, y, name, area, checked=j == 0, radio=True)
        x = el.box[2] + c.px(28)
    y += row if radios else 0
    for name in c.take(p.checks, 2):
        c.text(x1 + pad, y + c.px(11), name)
        c.toggle(x1 + pad + c.text_w(name) + c.px(16), y, name, area, on=bool(c.rng.integers(0, 2)))
        y += row
    labels = c.take(p.buttons, 3)
    bx = x2 - pad
    by = y + c.px(10)
    for j, name in enumerate(reversed(labels)):
        w = c.text_w(name) + c.px(28)
        bx -= w
        c.button(bx, by, name, area, primary=j == 0)
        bx -= c.px(10)
    c.filler(x1 + pad, by + c.px(50), x2 - pad, y2 - pad)
    return by + c.px(30)


def _desktop(c: _Canvas) -> None:
    w, h, p, plat = c.w, c.h, c.profile, c.spec.platform
    th = c.px(30)
    c.rect((0, 0, w - 1, th - 1), "title")
    if plat == "macos":
        x, d = c.px(12), c.px(20)
        for name in ("close window", "minimize", "maximize"):
            top = (th - d) // 2
            c.icon((x, top, x + d - 1, top + d - 1), name, "title bar", glyph=d - 2)
            x += d + c.px(6)
    else:
        bw = c.px(46)
        x = w - 3 * bw
        for name in ("minimize", "maximize", "close window"):
            c.icon((x, 0, x + bw - 1, th - 1), name, "title bar", glyph=c.px(18))
            x += bw
        if plat == "windows":
            x, bw = c.px(6), c.px(30)
            for name in ("save", "undo", "redo"):
                c.icon((x, 0, x + bw - 1, th - 1), name, "title bar", glyph=c.px(16))
                x += bw
    doc = c.take(p.items, 1)
    c.text(w / 2, th / 2, f"{doc[0] if doc else 'Untitled'} - {c.title}", center=True)
    y, mh = th, c.px(26)
    c.rect((0, y, w - 1, y + mh - 1), "bar")
    x = c.px(6)
    for name in c.take(p.nav, keep_order=True):
        if x + c.text_w(name) + c.px(20) > w * 0.55:
            break
        x = c.menu(x, y, mh, name, "menu bar").box[2] + 1
    y += mh
    tb, sz = c.px(40), c.px(30)
    c.rect((0, y, w - 1, y + tb - 1), "panel")
    c.hline(0, w - 1, y + tb - 1)
    x, fw = c.px(8), c.px(240)
    names = [n for n in c.spec.extra_tools if "icon:" + n not in c.used]
    names += [n for n in c.take(p.tools) if n not in names and "icon:" + n not in c.used]
    for i, name in enumerate(names):
        if x + sz > w - fw - c.px(40):
            break
        top = y + (tb - sz) // 2
        c.icon((x, top, x + sz - 1, top + sz - 1), name, "toolbar", glyph=c.px(18))
        x += sz + c.px(4)
        if i % 4 == 3:
            c.draw.line((x + c.px(3), top + 3, x + c.px(3), top + sz - 4), fill=c.col("border"))
            x += c.px(10)
    c.field(w - fw - c.px(12), y + (tb - c.px(28)) // 2, fw, p.search, "toolbar")
    y += tb
    sh = c.px(24)
    c.rect((0, h - sh, w - 1, h - 1), "bar")
    sx = c.px(10)
    for name in c.take(p.status, keep_order=True):
        sx = c.label(sx, h - sh // 2, name, "status bar").box[2] + c.px(24)
    sw = int(w * 0.17)
    c.rect((0, y, sw - 1, h - sh - 1), "panel")
    c.text(c.px(12), y + c.px(16), p.side_title, "muted", size=c.px(11))
    ly, rh = y + c.px(30), c.px(26)
    leads = ("blue", "orange", "green", "purple", "teal", "gray5", "red")
    for j, name in enumerate(c.take(p.items)):
        if ly + rh > h - sh - c.px(8):
            break
        c.list_item(0, ly, sw - 1, rh, name, "sidebar", selected=j == 1, lead=leads[j % len(leads)])
        ly += rh
    rw = int(w * 0.2) if w / h > 1.7 or w >= 1800 else 0
    mx1, mx2 = sw + c.px(16), w - rw - c.px(16)
    ty, tabh = y + c.px(6), c.px(32)
    x = mx1
    for j, name in enumerate(c.take(p.tabs, 4)):
        if x + c.text_w(name) + c.px(40) > mx2:
            break
        x = c.tab(x, ty, tabh, name, "tab bar", active=j == 0).box[2] + c.px(2)
    c.hline(mx1, mx2, ty + tabh)
    fy1 = ty + tabh + c.px(14)
    _form(c, mx1, fy1, min(mx2, mx1 + c.px(760)), h - sh - c.px(12), "main panel", p.heading)
    if rw:
        rx = w - rw
        c.rect((rx, y, w - 1, h - sh - 1), "panel")
        c.draw.line((rx, y, rx, h - sh - 1), fill=c.col("border"))
        c.text(rx + c.px(12), y + c.px(16), "PROPERTIES", "muted", size=c.px(11))
        yy = y + c.px(34)
        for name in c.take(p.fields, 2):
            c.text(rx + c.px(12), yy + c.px(8), name, "muted")
            c.field(rx + c.px(12), yy + c.px(18), rw - c.px(24), name, "properties panel", "auto")
            yy += c.px(56)
        for name in c.take(p.checks, 2):
            c.checkbox(rx + c.px(12), yy, name, "properties panel", checked=False)
            yy += c.px(30)
        for name in c.take(p.buttons, 1):
            c.button(rx + c.px(12), yy + c.px(8), name, "properties panel", primary=False)


def _web(c: _Canvas) -> None:
    w, h, p = c.w, c.h, c.profile
    tsh = c.px(36)
    c.rect((0, 0, w - 1, tsh - 1), "title")
    x = c.px(8)
    for j, name in enumerate(c.take(p.tabs, keep_order=True)):
        if x + c.text_w(name) + c.px(80) > w * 0.7:
            break
        x = c.tab(x, c.px(4), tsh - c.px(4), name, "browser tab bar", active=j == 0).box[2] + c.px(4)
    c.icon(
        (x, c.px(8), x + c.px(22) - 1, c.px(8) + c.px(22) - 1),
        "add",
        "browser tab bar",
        glyph=c.px(14),
        fg="muted",
    )
    y, ah, sz = tsh, c.px(42), c.px(30)
    c.rect((0, y, w - 1, y + ah - 1), "bg")
    c.hline(0, w - 1, y + ah - 1)
    x = c.px(8)
    for name in ("back", "forward", "refresh"):
        top = y + (ah - sz) // 2
        c.icon((x, top, x + sz - 1, top + sz - 1), name, "browser toolbar", glyph=c.px(16), fg="muted")
        x += sz + c.px(4)
    url_w = w - x - c.px(100)
    site = "".join(ch for ch in c.title.split()[0].lower() if ch.isalnum())
    c.field(
        x + c.px(6),
        y + (ah - c.px(28)) // 2,
        url_w,
        "address bar",
        "browser toolbar",
        f"https://www.{site}.com/",
    )
    x = x + c.px(6) + url_w + c.px(10)
    for name in ("bookmark", "more"):
        top = y + (ah - sz) // 2
        c.icon((x, top, x + sz - 1, top + sz - 1), name, "browser toolbar", glyph=c.px(16), fg="muted")
        x += sz + c.px(4)
    y += ah
    hh = c.px(60)
    c.rect((0, y, w - 1, y + hh - 1), "accent")
    c.text(c.px(24), y + hh / 2, c.title, "on_accent", size=c.px(20))
    x = c.px(44) + c.text_w(c.title, c.px(20))
    fw = c.px(260)
    for name in c.take(p.nav, keep_order=True):
        if x + c.text_w(name) + c.px(20) > w - fw - c.px(150):
            break
        x = c.link(x, y + hh // 2, name, "navigation bar", color="on_accent").box[2] + c.px(14)
    fx = w - fw - c.px(110)
    c.field(fx, y + (hh - c.px(28)) // 2, fw, p.search, "navigation bar")
    isz = c.px(28)
    top = y + (hh - isz) // 2
    c.icon(
        (fx + fw + c.px(6), top, fx + fw + c.px(6) + isz - 1, top + isz - 1),
        "search",
        "navigation bar",
        glyph=c.px(16),
        fg="on_accent",
    )
    tools = [n for n in c.take(p.tools) if "icon:" + n not in c.used][:2]
    ix = fx + fw + c.px(40)
    for name in tools:
        c.icon((ix, top, ix + isz - 1, top + isz - 1), name, "navigation bar", glyph=c.px(16), fg="on_accent")
        ix += isz + c.px(4)
    y += hh
    fh = c.px(40)
    c.rect((0, h - fh, w - 1, h - 1), "panel")
    x = c.px(24)
    for name in c.take(p.status, keep_order=True):
        x = c.link(x, h - fh // 2, name, "footer", color="muted").box[2] + c.px(20)
    side = c.px(230)
    c.rect((0, y, side - 1, h - fh - 1), "panel")
    c.text(c.px(16), y + c.px(22), p.side_title, "text", size=c.px(15))
    yy = y + c.px(40)
    for name in c.take(p.checks, 4):
        if yy + c.px(24) > h - fh - c.px(8):
            break
        c.checkbox(c.px(16), yy, name, "filter sidebar", checked=bool(c.rng.integers(0, 2)))
        yy += c.px(28)
    yy += c.px(8)
    for j, name in enumerate(c.take(p.radios, keep_order=True)):
        if yy + c.px(24) > h - fh - c.px(8):
            break
        c.checkbox(c.px(16), yy, name, "filter sidebar", checked=j == 0, radio=True)
        yy += c.px(28)
    gx1, gy1 = side + c.px(24), y + c.px(20)
    c.text(gx1, gy1 + c.px(8), p.heading, "text", size=c.px(18))
    cw, ch, gap = c.px(240), c.px(200), c.px(20)
    cols = max(1, (w - gx1 - c.px(16) + gap) // (cw + gap))
    rows = max(1, (h - fh - gy1 - c.px(40) + gap) // (ch + gap))
    titles = c.take(p.items, cols * rows)
    buttons = c.take(p.buttons, len(titles))
    fills = ("lblue", "lorange", "lgreen", "lpurple", "gray2")
    for k, (title, btn) in enumerate(zip(titles, buttons, strict=False)):
        cx1 = gx1 + (k % cols) * (cw + gap)
        cy1 = gy1 + c.px(30) + (k // cols) * (ch + gap)
        c.rect((cx1, cy1, cx1 + cw - 1, cy1 + ch - 1), "bg", outline="border", radius=c.px(6))
        c.rect((cx1 + c.px(10), cy1 + c.px(10), cx1 + cw - c.px(11), cy1 + c.px(90)), fills[k % len(fills)])
        c.label(cx1 + c.px(8), cy1 + c.px(108), title, "content", color="text", kind="link")
        c.text(
            cx1 + c.px(11), cy1 + c.px(130), f"{int(c.rng.integers(2, 99))} reviews", "muted", size=c.px(11)
        )
        c.button(cx1 + c.px(10), cy1 + ch - c.px(44), btn, "content", primary=k % 2 == 0)


def _phone(c: _Canvas) -> None:
    w, h, p = c.w, c.h, c.profile
    sb = c.px(26)
    c.rect((0, 0, w - 1, sb - 1), "panel")
    c.text(c.px(16), sb / 2, "9:41", size=c.px(12))
    c.rect((w - c.px(40), c.px(9), w - c.px(16), sb - c.px(9)), "text")
    y, ab, sz = sb, c.px(54), c.px(40)
    c.rect((0, y, w - 1, y + ab - 1), "panel")
    tools = [n for n in p.tools if "icon:" + n not in c.used]
    top = y + (ab - sz) // 2
    c.icon((c.px(6), top, c.px(6) + sz - 1, top + sz - 1), tools[0], "app bar", glyph=c.px(20))
    c.text(c.px(56), y + ab / 2, c.title, size=c.px(18))
    x = w - c.px(6)
    for name in reversed(tools[1:3]):
        c.icon((x - sz, top, x - 1, top + sz - 1), name, "app bar", glyph=c.px(20))
        x -= sz + c.px(2)
    y += ab + c.px(10)
    c.field(c.px(14), y, w - c.px(28), p.search, "search bar")
    y += c.px(40)
    tabs = c.take(p.tabs, 3, keep_order=True)
    tw = (w - c.px(28)) // max(1, len(tabs))
    for j, name in enumerate(tabs):
        x1 = c.px(14) + j * tw
        box = (x1, y, x1 + tw - 1, y + c.px(32) - 1)
        c.rect(box, "accent" if j == 0 else "panel", radius=c.px(6))
        c.text(x1 + tw / 2, y + c.px(16), name, "on_accent" if j == 0 else "text", center=True)
        c.add("tab", name, box, "tab bar")
    y += c.px(44)
    nav_h, rh = c.px(62), c.px(50)
    buttons = c.take(p.buttons, 1)
    toggles = c.take(p.checks, 2)
    reserve = nav_h + c.px(60) * len(buttons) + rh * len(toggles) + c.px(8)
    leads = ("blue", "orange", "green", "purple", "teal", "red", "gray5")
    for j, name in enumerate(c.take(p.items)):
        if y + rh > h - reserve:
            break
        el = c.list_item(0, y, w - 1, rh, name, "list", selected=False, lead=leads[j % len(leads)])
        cx, cy = w - c.px(20), (el.box[1] + el.box[3]) // 2
        c.draw.line(
            [(cx - c.px(4), cy - c.px(6)), (cx + c.px(2), cy), (cx - c.px(4), cy + c.px(6))],
            fill=c.col("muted"),
            width=c.px(2),
        )
        c.hline(c.px(16), w - 1, y + rh - 1, "panel")
        y += rh
    for j, name in enumerate(toggles):
        c.text(c.px(16), y + rh / 2, name)
        c.toggle(w - c.px(56), y + (rh - c.px(22)) // 2, name, "list", on=j == 0)
        y += rh
    for name in buttons:
        c.button(c.px(16), y + c.px(10), name, "main", w=w - c.px(32), h=c.px(40))
    ny = h - nav_h
    c.rect((0, ny, w - 1, h - 1), "panel")
    c.hline(0, w - 1, ny)
    labels = c.take(p.nav, 4, keep_order=True)
    iw = w // max(1, len(labels))
    for j, (name, icon) in enumerate(
        zip(labels, ("home", "search", "notifications", "account"), strict=False)
    ):
        x1 = j * iw
        g = c.px(22)
        gx = x1 + (iw - g) // 2
        c.glyph((gx, ny + c.px(8), gx + g, ny + c.px(8) + g), icon, "accent" if j == 0 else "muted", "panel")
        c.text(x1 + iw / 2, ny + c.px(44), name, "accent" if j == 0 else "muted", size=c.px(11), center=True)
        c.add(
            "tab", name, (x1 + c.px(4), ny + c.px(4), x1 + iw - c.px(5), h - c.px(5)), "bottom navigation bar"
        )


_LAYOUTS = {"desktop": _desktop, "web": _web, "phone": _phone}


def _check(spec: ScreenSpec, elements: Sequence[Element]) -> None:
    w, h = spec.size
    for i, a in enumerate(elements):
        x1, y1, x2, y2 = a.box
        if not (0 <= x1 < x2 < w and 0 <= y1 < y2 < h):
            raise AssertionError(f"{spec.key}: {a} outside the {w}x{h} screen")
        for b in elements[i + 1 :]:
            if x1 <= b.box[2] and b.box[0] <= x2 and y1 <= b.box[3] and b.box[1] <= y2:
                raise AssertionError(f"{spec.key}: {a} overlaps {b}")


def render(spec: ScreenSpec, seed: int) -> Screen:
    """Lay out and draw one screen.

    Args:
        spec: What to draw.
        seed: Suite seed; with ``spec.key`` it fixes every random choice of the layout.

    Returns:
        The screen: a palette-mode image and its clickable elements (non-overlapping, inside the image,
        labels unique per kind).

    Example:
        >>> s = render(ScreenSpec("x", "desktop", "windows", (1280, 720), "office", "light"), seed=1)
        >>> [e.label for e in s.elements if e.kind == "menu"][:3]
        ['File', 'Home', 'Insert']
    """
    canvas = _Canvas(spec, _rng(seed, "screen", spec.key))
    _LAYOUTS[spec.style](canvas)
    _check(spec, canvas.elements)
    return Screen(spec, canvas.img, tuple(canvas.elements))
