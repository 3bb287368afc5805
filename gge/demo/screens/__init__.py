"""Synthetic GUI screenshots drawn with PIL, with the exact box of every clickable element.

The drawing code lives in :mod:`gge.demo.screens.layouts` (split into modules next).
"""

from __future__ import annotations

from gge.demo.screens.layouts import ICONS, PROFILES, Element, Screen, ScreenSpec, render
from gge.demo.screens.layouts import _rng as _rng

__all__ = ["ICONS", "PROFILES", "Element", "Screen", "ScreenSpec", "render"]
