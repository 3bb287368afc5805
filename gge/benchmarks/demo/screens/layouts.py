"""The desktop, web and phone layouts of the demo screens, and :func:`render`, which draws one screen.

:func:`render` lays a :class:`~gge.benchmarks.demo.screens.elements.ScreenSpec` out from a seeded random
generator, draws it in a flat palette image (small PNGs) and returns every clickable element with its
pixel box, so that a benchmark record can point at a drawn element whose text matches its instruction.

Example:
    >>> spec = ScreenSpec("demo", "phone", "android", (360, 780), "m_settings", "light")
    >>> screen = render(spec, seed=0)
    >>> screen.image.size
    (360, 780)
    >>> any(e.kind == "toggle" for e in screen.elements)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from gge.benchmarks.demo.screens.elements import Element, Screen, ScreenSpec, _Canvas, _rng


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
