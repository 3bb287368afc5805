"""Benchmarks outside gge: the ``gge.benchmarks`` entry-point group.

A Python package registers a benchmark with no change to gge by declaring, in its ``pyproject.toml``::

    [project.entry-points."gge.benchmarks"]
    my_bench = "my_bench_pkg:MyBench"

The entry point's name is the benchmark's name; its object is a :class:`~gge.benchmarks.base.Benchmark`
subclass (or an instance of one). :func:`entry_point_benchmarks` imports and checks every entry point
once, when :mod:`gge.benchmarks` builds its registry. A broken plugin (it does not import, its object
is not a valid benchmark, its name clashes with gge's own or another package's) never stops gge: it
is left out of the registry and :func:`plugin_error` gives the one-line error naming the entry point,
its distribution and what is wrong, for whoever asks for it by name. A plugin whose name clashes with
one of gge's own benchmarks is also a ``UserWarning`` when the registry is built (asking for the name
gives gge's benchmark, so no error would ever say the plugin was dropped). :func:`benchmark_origin` says which
distribution (name and version) provided a plugin benchmark, for results.json.

Example:
    >>> plugin_error("screenspot_v2") is None  # gge's own benchmark: never a plugin error
    True
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from typing import Any

from omegaconf import OmegaConf

from gge.benchmarks.base import Average, Benchmark, BenchmarkOptions, BootstrapCI, TableSpec
from gge.errors import GgeError

GROUP = "gge.benchmarks"
"""The entry-point group gge reads benchmarks from."""

_BROKEN: dict[str, GgeError] = {}
_ORIGINS: dict[str, dict[str, str]] = {}
_PROBLEMS: list[str] = []


def entry_point_benchmarks(
    builtin: Mapping[str, Benchmark],
    entry_points: Callable[[], Iterable[metadata.EntryPoint]] | None = None,
) -> dict[str, Benchmark]:
    """The benchmarks installed packages register in the ``gge.benchmarks`` entry-point group.

    Each entry point is imported and checked (:func:`check_benchmark`); one that fails is left out
    and remembered (:func:`plugin_error`, :func:`plugin_problems`). Calling it again starts over.

    Args:
        builtin: gge's own benchmarks by name (a plugin may not take one of these names).
        entry_points: The entry points to read (default: the installed ones of the group; tests pass
            their own).

    Returns:
        The valid plugin benchmarks by name, in entry-point name order.
    """
    _BROKEN.clear()
    _ORIGINS.clear()
    _PROBLEMS.clear()
    found = list(entry_points() if entry_points is not None else metadata.entry_points(group=GROUP))
    claims: dict[str, list[metadata.EntryPoint]] = {}
    for ep in found:
        claims.setdefault(ep.name, []).append(ep)
    out: dict[str, Benchmark] = {}
    for name in sorted(claims):
        eps = claims[name]
        if len(eps) > 1:
            who = " and ".join(_describe(ep) for ep in eps)
            _fail(
                name, f"benchmark plugin '{name}': claimed by {len(eps)} entry points ({who}): none is loaded"
            )
            continue
        ep = eps[0]
        try:
            bench = _load(ep, builtin)
        except GgeError as e:
            line = _fail(name, f"benchmark plugin '{name}' ({_describe(ep)}): {e}", clash=name in builtin)
            if name in builtin:  # get_benchmark(name) gives gge's own: nothing else would say so
                warnings.warn(line, UserWarning, stacklevel=2)
            continue
        out[name] = bench
        dist = _distribution(ep)
        _ORIGINS[name] = {
            "distribution": dist[0] if dist else "unknown",
            "version": dist[1] if dist else "unknown",
            "entry_point": f"{ep.name} = {ep.value}",
        }
    return out


def plugin_error(name: str) -> GgeError | None:
    """The error of the broken plugin benchmark called ``name``, if one is installed.

    :func:`gge.benchmarks.get_benchmark` raises it for a name it does not know, instead of "unknown
    benchmark". A plugin whose name clashes with one of gge's own benchmarks gives None here (the
    name is gge's own and works); :func:`plugin_problems` lists it.

    Args:
        name: A benchmark name.

    Returns:
        The one-line error (the entry point, its distribution, what is wrong), or None.
    """
    return _BROKEN.get(name)


def plugin_problems() -> list[str]:
    """One line per installed ``gge.benchmarks`` entry point that was left out, and why.

    Returns:
        The lines (for ``--help``, and for a user wondering why a plugin is not listed).
    """
    return list(_PROBLEMS)


def benchmark_origin(name: str) -> dict[str, str] | None:
    """Which installed package provided the benchmark called ``name`` (for results.json).

    Args:
        name: A benchmark name.

    Returns:
        ``{"distribution", "version", "entry_point"}`` for a plugin benchmark; None for gge's own
        benchmarks (results.json's ``gge_version`` covers them) and for unknown names.
    """
    origin = _ORIGINS.get(name)
    return dict(origin) if origin is not None else None


def check_benchmark(bench: Benchmark, name: str) -> None:
    """Check that a benchmark object declares what gge needs, as its entry point names it.

    Args:
        bench: The benchmark (an instance).
        name: The name it must carry (the entry point's name).

    Raises:
        GgeError: naming the first attribute at fault.
    """
    cls = type(bench).__name__
    for attr in ("name", "title", "directory", "label_keys", "tables"):
        if not hasattr(bench, attr):
            raise GgeError(f"{cls} does not set the class attribute '{attr}'")
    for attr in ("name", "title", "directory"):
        value = getattr(bench, attr)
        if not isinstance(value, str) or not value:
            raise GgeError(f"{cls}.{attr} must be a non-empty string, got {value!r}")
    if bench.name != name:
        raise GgeError(
            f"{cls}.name is {bench.name!r}, but the entry point is named {name!r}: make them equal"
        )
    keys = bench.label_keys
    if not isinstance(keys, tuple) or not all(isinstance(k, str) for k in keys):
        raise GgeError(f"{cls}.label_keys must be a tuple of strings, got {keys!r}")
    for attr in ("tables", "extra_averages"):
        value = getattr(bench, attr)
        kind = TableSpec if attr == "tables" else Average
        if not isinstance(value, tuple) or not all(isinstance(v, kind) for v in value):
            raise GgeError(f"{cls}.{attr} must be a tuple of {kind.__name__}, got {value!r}")
    if not isinstance(bench.official, Average):
        raise GgeError(f"{cls}.official must be an Average, got {bench.official!r}")
    for avg in (bench.official, *bench.extra_averages):
        unknown = [k for k in avg.over if k not in keys]
        if unknown:
            raise GgeError(
                f"{cls}: average '{avg.name}' is over {unknown}, which are not in label_keys {keys}"
            )
    for spec in bench.tables:
        unknown = [k for k in (spec.rows, spec.cols) if k is not None and k not in keys]
        if unknown:
            raise GgeError(f"{cls}: table '{spec.title}' uses {unknown}, which are not in label_keys {keys}")
    _check_headline_ci(bench.headline_ci, cls)
    opts = bench.options_type
    if not (isinstance(opts, type) and issubclass(opts, BenchmarkOptions) and dataclasses.is_dataclass(opts)):
        raise GgeError(f"{cls}.options_type must be a dataclass subclassing BenchmarkOptions, got {opts!r}")
    # every registered benchmark's options become one field of eval's typed config: a class that
    # cannot be one would stop every command, so it is checked here
    try:
        OmegaConf.structured(opts())
    except Exception as e:
        first = (str(e).splitlines() or [""])[0]
        raise GgeError(
            f"{cls}.options_type {opts.__name__} is not a config with defaults for every option "
            f"(bench.{name}.<option>=): {type(e).__name__}: {first}"
        ) from None


# ----------------------------------------------------------------------------------------------


def _check_headline_ci(ci: Any, cls: str) -> None:
    """``headline_ci`` is None or a BootstrapCI that gge can compute (checked before any evaluation).

    The interval is computed after the whole evaluation ran: a value gge cannot compute is refused
    here, when the plugin is registered, rather than there.
    """
    if ci is None:
        return
    if not isinstance(ci, BootstrapCI):
        raise GgeError(f"{cls}.headline_ci must be a BootstrapCI or None, got {ci!r}")
    if ci.method != "percentile":
        raise GgeError(
            f"{cls}.headline_ci.method must be 'percentile' (the only bootstrap method gge computes), "
            f"got {ci.method!r}"
        )
    resamples, confidence = ci.resamples, ci.confidence
    if not isinstance(resamples, int) or isinstance(resamples, bool) or resamples < 1:
        raise GgeError(f"{cls}.headline_ci.resamples must be a whole number >= 1, got {resamples!r}")
    ok = (
        isinstance(confidence, (int, float))
        and not isinstance(confidence, bool)
        and math.isfinite(confidence)
    )
    if not ok or not 0 < confidence < 1:
        raise GgeError(f"{cls}.headline_ci.confidence must be a number between 0 and 1, got {confidence!r}")


def _load(ep: metadata.EntryPoint, builtin: Mapping[str, Benchmark]) -> Benchmark:
    """Import, instantiate and check one entry point's benchmark (GgeError says what is wrong)."""
    name = ep.name
    if not name.isidentifier() or keyword.iskeyword(name):
        raise GgeError(f"the name {name!r} is not a Python identifier (bench.<name>.<option>= needs one)")
    if name in builtin:
        raise GgeError(
            f"the name clashes with gge's own benchmark '{name}' (gge's is kept): rename the entry point"
        )
    try:
        obj: Any = ep.load()
    except Exception as e:  # a plugin that does not import must not stop gge
        raise GgeError(f"cannot import {ep.value}: {type(e).__name__}: {e}") from None
    if isinstance(obj, Benchmark):
        bench = obj
    elif inspect.isclass(obj) and issubclass(obj, Benchmark):
        if inspect.isabstract(obj):
            missing = ", ".join(sorted(getattr(obj, "__abstractmethods__", ())))
            raise GgeError(f"{obj.__name__} is abstract (it does not implement: {missing})")
        try:
            bench = obj()
        except Exception as e:
            raise GgeError(f"{obj.__name__}() failed: {type(e).__name__}: {e}") from None
    else:
        what = obj.__name__ if inspect.isclass(obj) else type(obj).__name__
        raise GgeError(f"{ep.value} is {what}, not a subclass of gge.benchmarks.base.Benchmark")
    check_benchmark(bench, name)
    return bench


def _fail(name: str, message: str, *, clash: bool = False) -> str:
    """Remember a broken plugin: its one-line error, and a line for :func:`plugin_problems` (returned)."""
    line = " ".join(message.split())
    _PROBLEMS.append(line)
    if not clash:
        _BROKEN[name] = GgeError(line)
    return line


def _distribution(ep: metadata.EntryPoint) -> tuple[str, str] | None:
    """(name, version) of the distribution declaring ``ep``, when known."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None
    return str(dist.metadata["Name"]), str(dist.version)


def _describe(ep: metadata.EntryPoint) -> str:
    """``entry point my_bench = pkg:Cls of distribution my-bench 0.1``."""
    dist = _distribution(ep)
    of = f" of distribution {dist[0]} {dist[1]}" if dist else " of an unknown distribution"
    return f"entry point '{ep.name} = {ep.value}'{of}"
