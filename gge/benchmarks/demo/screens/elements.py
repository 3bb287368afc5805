"""Screens and their elements: what to draw, what was drawn, and the canvas that draws widgets.

:class:`ScreenSpec` says what to draw, :class:`Screen` holds a rendered screenshot with every clickable
:class:`Element` and its pixel box; ``_Canvas`` draws widgets in the palette and records the clickable
ones, and ``_rng`` seeds every random choice from a stable hash.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from gge.benchmarks.demo.screens.icons import ICONS
from gge.benchmarks.demo.screens.profiles import PROFILES
from gge.benchmarks.demo.screens.themes import _COLOR, _PALETTE_BYTES, PALETTE, THEMES

Box = tuple[int, int, int, int]
"""A drawn box ``(x1, y1, x2, y2)``: inclusive pixel extents, as PIL fills them."""

Vertices = tuple[tuple[float, float], ...]


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
