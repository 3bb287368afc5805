"""gge's reward for the trainers: :func:`compute_score` (verl) and :func:`compute_score_batch` (EasyR1).

Rows gge did not export (training data) go to the ``fallback`` reward, or verl's default.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gge.errors import GgeError
from gge.integrations.verl.ground_truth import (
    DATA_SOURCE_PREFIX,
    is_gge_ground_truth,
    read_ground_truth,
)
from gge.integrations.verl.resize import _check_flavor
from gge.types import SampleResult

REWARD_NAME = "gge"
"""EasyR1 prints it when it loads this module as its reward function."""
REWARD_TYPE = "batch"
"""EasyR1 calls :func:`compute_score_batch` with a list of responses (``AutoRewardManager``)."""
SELECTION = "first"
"""The trainers run no critic: Top-1 is the proposer's first answer."""

_VIEW_KEYS = ("flavor", "min_pixels", "max_pixels")
_OWN_KEYS = (*_VIEW_KEYS, "fallback")
"""The reward keyword arguments gge reads itself (the rest go on to a fallback)."""
REWARD_KEYS = ("score", "acc", "hit", "oracle", "format_error", "abstained")
"""The keys :func:`compute_score` returns for every row."""


def _view_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The trainer settings among a reward call's keyword arguments (others are the trainer's own)."""
    view = {key: kwargs[key] for key in _VIEW_KEYS if kwargs.get(key) is not None}
    for key in ("min_pixels", "max_pixels"):
        if key in view and not (isinstance(view[key], int) and view[key] > 0):
            raise GgeError(f"reward keyword {key} must be a positive integer, got {view[key]!r}")
    if "flavor" in view:
        _check_flavor(view["flavor"])
    return view


def reward_values(result: SampleResult) -> dict[str, float]:
    """The numbers one scored response reports (every key always present, as verl needs).

    ``hit``: the answer's (first) point hits under the official rule, or it abstains on an absent
    target; ``oracle``: some point of the answer hits (``single_pass`` answers hold several);
    ``format_error``: nothing could be read; ``abstained``: the answer says the target is absent.
    """
    hit = float(result.top1.get(SELECTION, False))
    return {
        "score": hit,
        "acc": hit,
        "hit": hit,
        "oracle": float(result.oracle),
        "format_error": float(result.format_error),
        "abstained": float(result.abstained(SELECTION)),
    }


@functools.lru_cache(maxsize=64)
def _load_function(spec: str, what: str) -> tuple[Callable[..., Any], Any]:
    """``"pkg.module:function"`` or ``"path/to/file.py:function"`` -> (the function, its module)."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise GgeError(
            f"{what} must be 'package.module:function' or 'path/to/file.py:function', got {spec!r}"
        )
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where).expanduser()
        if not path.is_file():
            raise GgeError(f"{what} {spec!r}: no file {path}")
        module_name = "gge_fallback_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise GgeError(f"{what} {spec!r}: cannot load {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise GgeError(f"{what} {spec!r}: cannot import {where}: {e}") from None
    fn = getattr(module, name, None)
    if not callable(fn):
        raise GgeError(f"{what} {spec!r}: {where} has no function {name!r}")
    return fn, module


def _verl_default_compute_score() -> Callable[..., Any] | None:
    """The ``default_compute_score`` of verl, imported now (None without verl)."""
    try:
        module = importlib.import_module("verl.utils.reward_score")
    except ImportError:
        return None
    fn = getattr(module, "default_compute_score", None)
    return fn if callable(fn) else None


def _same_keys(result: Any) -> dict[str, Any]:
    """A fallback's result as a dict holding :data:`REWARD_KEYS` (what verl needs of every row)."""
    values: dict[str, Any] = dict(result) if isinstance(result, Mapping) else {"score": result}
    if "score" not in values:
        raise GgeError(f"the fallback reward returned a dict without 'score': {sorted(values)}")
    acc = values.setdefault("acc", values["score"])
    for key in ("hit", "oracle"):
        values.setdefault(key, acc)
    for key in ("format_error", "abstained"):
        values.setdefault(key, 0.0)
    return values


def _fallback_score(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Score a row that is not gge's with the ``fallback`` reward kwarg, else verl's default."""
    spec = kwargs.get("fallback")
    rest = {key: value for key, value in kwargs.items() if key not in _OWN_KEYS}
    fn: Callable[..., Any] | None
    if spec is None or spec == "":
        fn = _verl_default_compute_score()
        if fn is None:
            raise GgeError(
                f"data_source {data_source!r} is not a gge benchmark, and no reward can score it: gge's "
                "compute_score scores rows of `gge export verl` (data_source gge/<benchmark>) and passes "
                "others to the reward kwarg fallback (custom_reward_function.reward_kwargs.fallback="
                "pkg.module:function or path/to/file.py:function), else to verl's default_compute_score, "
                "which cannot be imported here (is verl installed?)"
            )
        try:
            result = fn(
                data_source=data_source,
                solution_str=solution_str,
                ground_truth=ground_truth,
                extra_info=extra_info,
                **rest,
            )
        except NotImplementedError:
            raise GgeError(
                f"data_source {data_source!r} is neither a gge benchmark nor one verl's "
                "default_compute_score knows: give its reward function as custom_reward_function."
                "reward_kwargs.fallback=pkg.module:function (or path/to/file.py:function)"
            ) from None
        return _same_keys(result)
    fn = spec if callable(spec) else _load_function(str(spec), "reward kwarg fallback")[0]
    result = fn(
        data_source=data_source,
        solution_str=solution_str,
        ground_truth=ground_truth,
        extra_info=extra_info,
        **rest,
    )
    return _same_keys(result)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The custom reward function of verl: one response scored by the benchmark's official rule.

    Configure verl with ``custom_reward_function.path=pkg://gge.integrations.verl`` (or the
    ``gge_reward.py`` the export writes) and ``custom_reward_function.name=compute_score``.

    Args:
        data_source: The row's ``data_source``: ``gge/<benchmark>``.
        solution_str: The model's response (decoded without special tokens).
        ground_truth: The row's ``reward_model.ground_truth`` (the JSON text the export wrote).
        extra_info: The row's ``extra_info`` (not needed: the ground truth is self-contained).
        **kwargs: Through ``custom_reward_function.reward_kwargs``: ``max_pixels`` / ``min_pixels`` /
            ``flavor`` when the trainer resizes images with other limits than the export assumed;
            ``fallback`` (``"pkg.module:function"``, ``"path/to/file.py:function"`` or a callable), the
            reward of rows that are not gge's (training data). gge's rows ignore anything else verl
            passes; a fallback gets it.

    Returns:
        ``score`` (1.0 for a hit, else 0.0: the reward), ``acc`` (the same, so verl's
        ``val-core/gge/<benchmark>/acc/mean@N`` is the micro Top-1), ``hit``, ``oracle``,
        ``format_error``, ``abstained`` (all floats, every key always present). Another data source's
        row gets its fallback's result as a dict holding these keys too (``score`` and ``acc`` the
        fallback's, ``hit`` and ``oracle`` its ``acc``, ``format_error`` and ``abstained`` 0.0, unless
        the fallback returns them): verl needs every row of a validation to return the same keys, so a
        validation set mixing gge's benchmarks with data whose fallback returns a float (or a dict of
        these keys) works; a fallback returning other keys needs its data validated in another run.

    Raises:
        GgeError: for a ground truth gge did not write under a ``gge/<benchmark>`` data source, or
            another data source no fallback can score (no ``fallback`` given, and verl is not installed
            or its ``default_compute_score`` does not know it).

    Example:
        >>> def exact(data_source, solution_str, ground_truth, extra_info=None):
        ...     return float(solution_str.strip() == ground_truth)
        >>> compute_score("openai/gsm8k", "72", "72", fallback=exact)["score"]
        1.0
    """
    if not isinstance(data_source, str) or not data_source.startswith(DATA_SOURCE_PREFIX):
        return _fallback_score(data_source, solution_str, ground_truth, extra_info, kwargs)
    gt = read_ground_truth(ground_truth)
    if data_source != DATA_SOURCE_PREFIX + gt.benchmark:
        raise GgeError(
            f"data_source {data_source!r} does not match its ground truth's benchmark {gt.benchmark!r}"
        )
    if not isinstance(solution_str, str):
        raise GgeError(f"solution_str must be a string, got {type(solution_str).__name__}")
    return reward_values(gt.score([solution_str], **_view_kwargs(kwargs)))


def compute_score_batch(reward_inputs: Sequence[Mapping[str, Any]], **kwargs: Any) -> list[dict[str, Any]]:
    """EasyR1's batch reward function: ``worker.reward.reward_function=gge_reward.py:compute_score_batch``.

    EasyR1 scores training and validation with this one function: items whose ground truth is not
    gge's (training data) go to ``fallback``.

    Args:
        reward_inputs: ``{"response", "response_length", "ground_truth"}`` per response.
        **kwargs: ``worker.reward.reward_function_kwargs``: ``max_pixels`` / ``min_pixels`` when
            ``data.max_pixels`` / ``data.min_pixels`` differ from what the export assumed;
            ``fallback``: the reward of items that are not gge's, ``"path/to/file.py:function"``,
            ``"pkg.module:function"`` or a callable, called as EasyR1 calls a reward function (with
            the list of those items, or one item at a time when its module sets
            ``REWARD_TYPE = "sequential"``) and with the other keyword arguments.

    Returns:
        Per response: ``overall`` (the reward: 1.0 for a hit), ``accuracy`` (the same),
        ``format`` (1.0 when the answer could be read), the keys of :func:`reward_values`, and
        ``<benchmark>/accuracy``, so EasyR1's ``val/<benchmark>/accuracy_reward`` is the benchmark's
        micro Top-1; the fallback's result for the other items (EasyR1 averages each key over the
        responses that return it).

    Raises:
        GgeError: for a malformed input, or an item that is not gge's without a ``fallback``.

    Example:
        >>> from gge.integrations.verl.ground_truth import GroundTruth
        >>> from gge.types import Absent
        >>> gt = GroundTruth("osworld_g", "3", Absent(), (800, 600), (800, 600), (812, 588), (812, 588))
        >>> item = {"response": "The element is not visible.", "ground_truth": gt.to_json()}
        >>> out = compute_score_batch([item])
        >>> out[0]["overall"], out[0]["osworld_g/accuracy"], out[0]["abstained"]
        (1.0, 1.0, 1.0)
    """
    view = _view_kwargs(kwargs)
    out: list[dict[str, Any] | None] = []
    others: list[int] = []
    for i, item in enumerate(reward_inputs):
        try:
            truth = item["ground_truth"]
            response = item["response"]
        except (KeyError, TypeError) as e:
            raise GgeError(f"reward input {i}: needs 'response' and 'ground_truth' ({e})") from None
        if not is_gge_ground_truth(truth):
            others.append(i)
            out.append(None)
            continue
        try:
            gt = read_ground_truth(truth)
        except GgeError as e:
            raise GgeError(f"reward input {i}: {e}") from None
        values = reward_values(gt.score([str(response)], **view))
        out.append(
            {
                "overall": values["score"],
                "accuracy": values["hit"],
                "format": 1.0 - values["format_error"],
                **values,
                f"{gt.benchmark}/accuracy": values["hit"],
            }
        )
    if others:
        scored = _batch_fallback([reward_inputs[i] for i in others], others[0], kwargs)
        for i, result in zip(others, scored, strict=True):
            out[i] = result
    return [o for o in out if o is not None]


def _batch_fallback(
    items: list[Mapping[str, Any]], first: int, kwargs: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """EasyR1: score the items that are not gge's with the ``fallback`` kwarg (one list, in order)."""
    spec = kwargs.get("fallback")
    if spec is None or spec == "":
        raise GgeError(
            f"reward input {first}: the ground truth is not one `gge export verl` wrote (training data?): "
            "give the reward function of other data as worker.reward.reward_function_kwargs.fallback="
            "path/to/file.py:function (EasyR1 scores training and validation with one function)"
        )
    rest = {key: value for key, value in kwargs.items() if key not in _OWN_KEYS}
    if callable(spec):
        fn, kind = spec, "batch"
    else:
        fn, module = _load_function(str(spec), "reward kwarg fallback")
        kind = getattr(module, "REWARD_TYPE", "batch")
    sequential = kind == "sequential"
    results = [fn(item, **rest) for item in items] if sequential else list(fn(items, **rest))
    if len(results) != len(items) or not all(isinstance(r, Mapping) for r in results):
        raise GgeError(
            f"the fallback reward returned {len(results)} results for {len(items)} inputs; EasyR1 needs "
            "one dict per input"
        )
    return [dict(r) for r in results]
