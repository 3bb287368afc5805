"""The colours of the demo screens: a fixed palette and the themes that paint a layout's roles.

A fixed palette keeps the images in "P" mode (flat, tiny PNGs): :data:`PALETTE` names every colour, and a
:class:`Theme` says which palette colour paints each role of a layout (:data:`THEMES`).
"""

from __future__ import annotations

from dataclasses import dataclass

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
