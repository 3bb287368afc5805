"""Synthetic GUI screenshots drawn with PIL, with the exact box of every clickable element.

A :class:`ScreenSpec` names a layout style (``desktop``, ``web`` or ``phone``), a size, a theme and a
vocabulary profile; :func:`render` draws it and returns every clickable element with its pixel box.
Modules: :mod:`~gge.benchmarks.demo.screens.themes` (palette and themes),
:mod:`~gge.benchmarks.demo.screens.icons`, :mod:`~gge.benchmarks.demo.screens.profiles` (label
vocabularies), :mod:`~gge.benchmarks.demo.screens.elements` (screens, elements and the drawing canvas)
and :mod:`~gge.benchmarks.demo.screens.layouts` (the layouts and :func:`render`).
"""

from __future__ import annotations

from gge.benchmarks.demo.screens.elements import Box, Element, Screen, ScreenSpec, Vertices
from gge.benchmarks.demo.screens.elements import _rng as _rng
from gge.benchmarks.demo.screens.icons import ICONS, IconSpec, Prim
from gge.benchmarks.demo.screens.layouts import render
from gge.benchmarks.demo.screens.profiles import PROFILES, Profile
from gge.benchmarks.demo.screens.themes import PALETTE, THEMES, Theme

__all__ = [
    "ICONS",
    "PALETTE",
    "PROFILES",
    "THEMES",
    "Box",
    "Element",
    "IconSpec",
    "Prim",
    "Profile",
    "Screen",
    "ScreenSpec",
    "Theme",
    "Vertices",
    "render",
]
