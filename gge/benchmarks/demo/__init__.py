"""A synthetic demo suite: the six benchmarks in their official layouts and a replay file.

It writes benchmark files and reads nothing above the benchmarks, so it stands on their floor, where
the run (which reads it when no ``data_root`` is given) can reach it. The names are imported lazily:
importing :mod:`gge.benchmarks.demo` does not draw the suite's modules (pillow, fonts).

Example:
    >>> from gge.benchmarks.demo import demo_root, write_demo_suite
    >>> callable(write_demo_suite) and callable(demo_root)
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gge.benchmarks.demo.suite import demo_root, write_demo_suite

__all__ = ["demo_root", "write_demo_suite"]


def __getattr__(name: str) -> Any:
    """Import :mod:`gge.benchmarks.demo.suite` on first use of one of its exported names."""
    if name in __all__:
        from gge.benchmarks.demo import suite

        return getattr(suite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
