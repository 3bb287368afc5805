"""The benchmark registry: one module per benchmark, one line here per benchmark.

Benchmarks outside gge join through the ``gge.benchmarks`` entry-point group
(:mod:`gge.benchmarks.plugins`, docs/extending.md).

Example:
    >>> get_benchmark("screenspot_pro").title
    'ScreenSpot-Pro'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gge.benchmarks.base import Benchmark
from gge.benchmarks.cagui_grounding import CAGUIGrounding
from gge.benchmarks.groundui import GroundUI1K, GroundUI18K
from gge.benchmarks.mmbench_gui import MMBenchGUI
from gge.benchmarks.osworld_g import OSWorldG, OSWorldGRefined
from gge.benchmarks.plugins import entry_point_benchmarks, plugin_error
from gge.benchmarks.records import RecordsBenchmark
from gge.benchmarks.ruc import RUC
from gge.benchmarks.screenspot_pro import ScreenSpotPro, ScreenSpotV2Variants
from gge.benchmarks.screenspot_v1 import ScreenSpotV1
from gge.benchmarks.screenspot_v2 import ScreenSpotV2
from gge.benchmarks.showdown_clicks import ShowdownClicks
from gge.benchmarks.ui_i2e_bench import UII2EBench
from gge.benchmarks.ui_vision import UIVision
from gge.benchmarks.venusbench_gd import VenusBenchGD
from gge.benchmarks.webclick import WebClick
from gge.errors import GgeError, unknown_name

BUILTIN: dict[str, Benchmark] = {
    b.name: b
    for b in (
        ScreenSpotV2(),
        ScreenSpotPro(),
        OSWorldG(),
        OSWorldGRefined(),
        UIVision(),
        MMBenchGUI(),
        UII2EBench(),
        ScreenSpotV1(),
        ShowdownClicks(),
        CAGUIGrounding(),
        VenusBenchGD(),
        GroundUI1K(),
        GroundUI18K(),
        WebClick(),
        RUC(),
        ScreenSpotV2Variants(),
        RecordsBenchmark(),
    )
}
"""The benchmarks gge ships, in the order it reports them."""

REGISTRY: dict[str, Benchmark] = {**BUILTIN, **entry_point_benchmarks(BUILTIN)}
"""Every benchmark a run can name: gge's own, then those of installed packages (entry points)."""

DEFAULT_BENCHMARKS: tuple[str, ...] = (
    "screenspot_v2",
    "screenspot_pro",
    "osworld_g",
    "ui_vision",
    "mmbench_gui",
    "ui_i2e_bench",
)
"""The six benchmarks, one instruction variant each (``osworld_g_refined`` is opt-in)."""


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark called ``name``.

    Args:
        name: A registered name.

    Returns:
        The benchmark.

    Raises:
        GgeError: for an unknown name, with a did-you-mean; for a benchmark package whose entry point
            is broken, naming the entry point, its distribution and what is wrong.
    """
    if name not in REGISTRY:
        broken = plugin_error(name)
        raise broken if broken is not None else unknown_name("benchmark", name, REGISTRY)
    return REGISTRY[name]


def configured_benchmark(name: str, variant: Mapping[str, Any] | None) -> Benchmark | None:
    """The registered benchmark as a run's recorded variant (``load.variant``) configured it, or None.

    A benchmark whose label keys and tables follow its options (ScreenSpot-Pro's ``gt_type``) is
    rebuilt from the options the variant names, so a reader of the run's files (compare, summarize)
    tables it as the run did; an unknown name gives None.

    Example:
        >>> [t.title for t in configured_benchmark("screenspot_pro", {"gt_type": "all"}).tables][:1]
        ['By gt_type']
        >>> configured_benchmark("nope", None) is None
        True
    """
    bench = REGISTRY.get(name)
    if bench is None:
        return None
    known = {f.name for f in dataclasses.fields(bench.options_type)}
    given = {k: v for k, v in (variant or {}).items() if k in known}
    try:
        return bench.configured(bench.options_type(**given))
    except (GgeError, TypeError):
        return bench
