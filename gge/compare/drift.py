"""Engine drift: how two runs' answers differ, and whether their setups differ only by the engine.

Two runs of one checkpoint through different backends or engines (transformers in-process against
an OpenAI-compatible endpoint, vLLM against SGLang, two releases of one engine) should answer alike
on greedy requests; where they do not, the difference is the engine's, and it can cost a grounding
model much of its accuracy without anything failing. ``gge compare`` measures it for every pair of
runs (:func:`benchmark_drift`, compare.json ``benchmarks.<name>.drift``) and says what else differs
between the runs (:func:`compare_setups`, compare.json ``setup``), so that drift is read as the
engine's only where nothing else changed.

**What differs** (per benchmark, over the paired samples):

- *raw differs*: the two raw answer texts differ once leading and trailing whitespace is stripped
  (``str.strip``); a sampling run's raw holds all its answers, so any of them differing counts.
- *candidates differ*: the candidate lists differ as predictions.jsonl writes them
  (:func:`gge.documents.records.wire_point`: their number, or any point, abstention or unparsed
  slot), points compared exactly.
- *point drift*: the Euclidean distance, in original-screenshot pixels, between the two runs' first
  candidates (proposer order: the official answer of a greedy preset, the greedy answer of a
  sampling run) over the samples where both are points; its min, median, 90th percentile, max
  (``numpy.percentile``'s linear interpolation) and mean, and how many *moved* (distance > 0). A
  first candidate that is no point (an abstention, an unparsed answer, no candidate at all) is
  counted apart, per side.
- *flips*: samples whose Top-1 (each run's own selection strategy) is a hit in one run and a miss
  in the other, each way; the same for the first candidate's hit. The first
  :data:`FLIP_EXAMPLES` Top-1 flips, in the order compare pairs the samples (A's predictions.jsonl
  order), are listed with both raw answers and points.

**What counts as the engine** (:data:`ENGINE_KEYS`): the results.json ``model.backend`` and
``model.critic_backend`` records (the backend, its endpoint or checkpoint loading, library versions)
and the ``config`` options that choose or tune how answers are computed, not what is asked
(``config.model.backend``, ``base_url``, ``api_model``, ``dtype``, ``device``,
``attn_implementation``, ``trust_remote_code``, ``predictions`` of a replay, ``config.trainer``,
``config.batch_size``; ``config.ckpt`` only where one run loads none, as an endpoint run does: two
different checkpoints are another model). Options that change no prediction are not compared
(:data:`IGNORED_KEYS`: paths, logging, retries, timeouts, request concurrency, the call and token
counts). Every other recorded setting (``k``, ``selection``, ``gge_version``, the rest of
``config``, ``model.adapter``: prompts with their hashes, decoding, pixels, conventions) is part
of the protocol: if one differs, the runs differ beyond the engine and compare says which. A
replay run records its predictions file, not what produced it: where either run is a replay and
anything differs, compare says that whether the runs differ only by engine is unknown.

**What the models saw** (:func:`input_check`): two engines can differ in what they make of one request
(a server that shrinks the screenshot to its own ``max_pixels``, a processor release with a token-budget
bug) without any recorded setting differing. Where the setups are the same or differ only by engine,
the verdict also requires the matched samples' proposer prompt tokens to agree (per sample: the
``propose`` cost records' input tokens over the answer texts they paid for, as both kinds of run count a
prompt once per answer text, :class:`~gge.types.CostRecord`; a ``single_pass`` answer is one text
however many points it lists: :func:`prompt_tokens`): within :data:`TOKEN_TOLERANCE` of the larger
on at least :data:`AGREEING_SHARE` of the samples both runs count. Otherwise the relation is
``inputs``: the models saw different inputs, by how much, and it is not engine drift. Where a run
records no prompt token counts, compare says the inputs cannot be checked. A run's own image-token
check (results.json ``image_tokens``) that found answers costing other image tokens than expected is
named too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from gge.compare.runs import Line, Run
from gge.documents.compare import (
    DistanceSpread,
    Drift,
    DriftExample,
    FlipCounts,
    InputCheck,
    SetupComparison,
    SetupDifference,
)
from gge.documents.records import wire_point
from gge.scoring.image_tokens import answers_paid

__all__ = [
    "AGREEING_SHARE",
    "ENGINE_KEYS",
    "FLIP_EXAMPLES",
    "IGNORED_KEYS",
    "TOKEN_TOLERANCE",
    "benchmark_drift",
    "compare_setups",
    "distance_spread",
    "engine_text",
    "input_check",
    "prompt_tokens",
    "proposer_mode",
]

FLIP_EXAMPLES = 5
"""How many Top-1 flips of each benchmark compare lists with their raw answers."""

ENGINE_KEYS = (
    "model.backend",
    "model.critic_backend",
    "config.model.backend",
    "config.model.base_url",
    "config.model.api_model",
    "config.model.dtype",
    "config.model.device",
    "config.model.attn_implementation",
    "config.model.trust_remote_code",
    "config.model.predictions",
    "config.trainer",
    "config.batch_size",
    "config.ckpt",
    "config.model.critic_ckpt",
)
"""The recorded settings (dotted paths into results.json, and everything under them) that are the
engine: they may differ between runs that differ only by engine. ``config.ckpt`` and
``config.model.critic_ckpt`` count only where one of the runs has none (:func:`compare_setups`)."""

IGNORED_KEYS = (
    "model.calls",
    "model.usage",
    *(
        f"model.{backend}.{key}"
        for backend in ("backend", "critic_backend")
        for key in (
            "usage",
            "api_key_env",
            "concurrency",
            "max_concurrency",
            "max_retries",
            "timeout_s",
            "backoff_s",
            "window",
            "images",
            "server_wait_s",
            # the probe's measurements and its copy of the endpoint: what differs in them is told by
            # base_url and by the prompt token check (input_check); the models a server lists and who
            # answered the probe (the backend's own answers record says who answered the run); its own
            # requests; its engine identity is compared, where both runs probed (compare_setups)
            "probe.endpoint",
            "probe.warnings",
            "probe.window",
            "probe.image_tokens",
            "probe.served_models",
            "probe.answers",
            "probe.usage",
        )
    ),
    "config.output_dir",
    "config.data_root",
    "config.benchmarks",
    "config.bench",
    "config.max_samples",
    "config.num_workers",
    "config.resume",
    "config.logger",
    "config.wandb_project",
    "config.table_samples",
    "config.report_misses",
    "config.dry_run",
    "config.strict_images",
    "config.drop_malformed_lines",
    "config.pad_batches",
    "config.model.api_key_env",
    "config.model.concurrency",
    "config.model.max_concurrency",
    "config.model.max_retries",
    "config.model.timeout_s",
    "config.model.server_wait_s",
    "config.strict_server",
    "config.max_server_error_share",
    "config.probe",
    "config.progress_s",
    "config.model.backoff_s",
    "config.model.delay_s",
    "config.model.selected_by",
)
"""Recorded settings that change no prediction (where the files are, logging, retries, timeouts,
how many requests are in flight and how the window moves, counts of calls, tokens and images
encoded) or that the pairing checks itself (the benchmarks, their variants and samples): never
compared. A new option of this kind belongs here; until it is, it reads as a difference."""

TOKEN_TOLERANCE = 0.01
"""Two runs' prompt tokens per proposer request agree on a sample within this fraction of the larger.
The same text through the same chat template costs the same tokens, so any gap is the image's or the
template's; 1% lets a special token or two counted otherwise pass on a prompt of a few hundred tokens,
while a screenshot resized by one row of 28-pixel patches changes a 1080p one's tokens by 2.6%."""

AGREEING_SHARE = 0.99
"""The share of the samples both runs count on which the prompt tokens must agree: one sample in a
hundred may differ (an instruction one tokenizer splits otherwise) without the inputs being called
different."""

_CHECKPOINTS = ("config.ckpt", "config.model.critic_ckpt")
_PROBED = ("model.backend.probe", "model.critic_backend.probe")
"""Where a run that probed its server records the probe (``probe=true``), compared only where both did."""
_MISSING = "(absent)"
_SHOWN = 3
"""Differences named in the statement (the rest are counted; compare.json lists them all)."""


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Dotted paths of the leaves of nested mappings (a list is one leaf)."""
    if isinstance(value, Mapping) and value:
        for key, inner in value.items():
            _flatten(inner, f"{prefix}.{key}", out)
    else:
        out[prefix] = value


def _settings(run: Run) -> dict[str, Any]:
    """A run's recorded setup as dotted paths (:func:`compare_setups` says which), less the ignored."""
    doc = run.document
    out: dict[str, Any] = {key: doc.get(key) for key in ("k", "selection", "gge_version")}
    for key in ("config", "model"):
        _flatten(doc.get(key, {}), key, out)
    return {path: value for path, value in out.items() if not _under(path, IGNORED_KEYS)}


def _backend(run: Run) -> Mapping[str, Any] | None:
    model = run.document.get("model")
    backend = model.get("backend") if isinstance(model, Mapping) else None
    return backend if isinstance(backend, Mapping) else None


def _replay(run: Run) -> bool:
    model = run.document.get("model")
    return isinstance(model, Mapping) and model.get("model") == "replay"


def _endpoint(run: Run) -> bool:
    backend = _backend(run)
    return backend is not None and backend.get("base_url") is not None


def engine_text(run: Run) -> str:
    """How a run's answers were produced, in words: the backend and where its model is.

    Example: ``openai endpoint http://127.0.0.1:8000/v1 (model 'qwen')``, ``transformers 4.57.1,
    torch 2.8.0: /ckpts/qwen`` or ``replay of runs/a/predictions.jsonl``.

    Args:
        run: The run.

    Returns:
        The text (``unknown`` where results.json records no backend).
    """
    model = run.document.get("model") or {}
    config = run.document.get("config") or {}
    backend = _backend(run)
    if backend is not None:
        kind = str(backend.get("backend", "unknown"))
        if backend.get("base_url") is not None:
            return f"{kind} endpoint {backend['base_url']} (model {backend.get('model')!r})"
        versions = ", ".join(
            f"{lib} {backend[lib]}" for lib in ("transformers", "torch") if backend.get(lib) is not None
        )
        where = backend.get("checkpoint")
        # the transformers backend's name is the first library listed: said once
        text = versions if versions.startswith(f"{kind} ") else kind + (f" {versions}" if versions else "")
        return text + (f": {where}" if where is not None else "")
    if isinstance(model, Mapping) and model.get("model") == "replay":
        return f"replay of {model.get('predictions')}"
    if isinstance(model, Mapping) and model.get("model") is not None:
        where = model.get("checkpoint") or config.get("ckpt")
        return f"{model['model']}" + (f": {where}" if where else "")
    return "unknown"


def _shown(value: Any) -> str:
    return _MISSING if value is _MISSING else repr(value)


def _listed(diffs: Sequence[SetupDifference]) -> str:
    shown = "; ".join(f"{d['key']}: {_shown(d['a'])} vs {_shown(d['b'])}" for d in diffs[:_SHOWN])
    more = f"; +{len(diffs) - _SHOWN} more in compare.json" if len(diffs) > _SHOWN else ""
    return shown + more


def proposer_mode(run: Run) -> str | None:
    """The run's proposer mode as it records it; None where it records none.

    An adapter policy's ``model.adapter.proposer``, else ``config.model.proposer`` (a replay's: the run
    that made its file).
    """
    model = run.document.get("model")
    adapter = model.get("adapter") if isinstance(model, Mapping) else None
    mode = adapter.get("proposer") if isinstance(adapter, Mapping) else None
    if mode is None:
        config = run.document.get("config")
        options = config.get("model") if isinstance(config, Mapping) else None
        mode = options.get("proposer") if isinstance(options, Mapping) else None
    return mode if isinstance(mode, str) else None


def prompt_tokens(line: Line, mode: str | None = None) -> float | None:
    """A sample's prompt tokens per proposer request: its ``propose`` records' input tokens per answer.

    A request counts its prompt once per answer text it returned (an in-process prefill shared by n
    sequences, an endpoint request for n choices, a greedy-first pair: :class:`~gge.types.CostRecord`),
    so the input tokens over the answer texts are one prompt's tokens. A record's ``candidates`` are
    its answer texts where the proposer draws one point per text (``greedy``, ``sampling``), but a
    ``single_pass`` answer is one text listing several points (its ``candidates``, the points parsed):
    there each record is one answer.

    Args:
        line: The sample's line.
        mode: The run's proposer mode (:func:`proposer_mode`); None (not recorded): each record's
            ``candidates``, as for a mode with one point per answer.

    Returns:
        The tokens (None: no proposer record, or one that does not count its input tokens).
    """
    records = [c for c in line.costs if c.stage == "propose"]
    if not records or any(c.input_tokens is None for c in records):
        return None
    answers = sum(answers_paid(c, mode) for c in records)
    return sum(c.input_tokens or 0 for c in records) / answers


def _image_token_notes(side: str, run: Run) -> list[str]:
    """What a run's own image-token check says, where it found answers off the expectation."""
    notes = []
    for name, entry in run.document.get("benchmarks", {}).items():
        check: Any = cast(Mapping[str, Any], entry).get("image_tokens")
        if not isinstance(check, Mapping) or not check.get("differ"):
            continue
        ratio = check.get("ratio")
        by = f" (observed/expected {ratio:.2f})" if isinstance(ratio, int | float) else ""
        notes.append(
            f"{side}'s {name}: {check['differ']} of {check.get('requests', '?')} proposer answers cost other "
            f"image tokens than its preset expects{by}"
        )
    return notes


def _tokens(value: float) -> str:
    return f"{value:,.0f}"


def input_check(a: Run, b: Run) -> InputCheck:
    """Whether the two runs' models saw the same inputs: their matched samples' prompt tokens.

    Samples are matched by benchmark and id; each sample's tokens are :func:`prompt_tokens`. The
    inputs agree when the tokens agree within :data:`TOKEN_TOLERANCE` on at least
    :data:`AGREEING_SHARE` of the samples both runs count.

    Args:
        a: Run A.
        b: Run B.

    Returns:
        compare.json ``setup.inputs`` (:class:`~gge.documents.compare.InputCheck`).
    """
    matched = 0
    both: list[tuple[float, float]] = []
    counted = {"A": 0, "B": 0}
    mode_a, mode_b = proposer_mode(a), proposer_mode(b)
    for bench, lines in a.lines.items():
        others = {x.id: x for x in b.lines.get(bench, [])}
        for xa in lines:
            xb = others.get(xa.id)
            if xb is None:
                continue
            matched += 1
            ta, tb = prompt_tokens(xa, mode_a), prompt_tokens(xb, mode_b)
            counted["A"] += ta is not None
            counted["B"] += tb is not None
            if ta is not None and tb is not None:
                both.append((ta, tb))
    differing = [(x, y) for x, y in both if abs(x - y) > TOKEN_TOLERANCE * max(x, y)]
    notes = [*_image_token_notes("A", a), *_image_token_notes("B", b)]
    shown = differing or both
    a_tokens = sum(x for x, _ in shown) / len(shown) if shown else None
    b_tokens = sum(y for _, y in shown) / len(shown) if shown else None
    ratio = b_tokens / a_tokens if a_tokens and b_tokens is not None else None
    if not both:
        status = "unknown"
        none = [side for side, n in counted.items() if n == 0] or ["A", "B"]
        records = "records" if len(none) == 1 else "record"
        statement = (
            f"whether the models saw the same inputs cannot be checked: {' and '.join(none)} {records} no "
            "prompt token counts for the matched samples' proposer requests"
        )
    elif len(both) - len(differing) >= AGREEING_SHARE * len(both):
        status = "agree"
        statement = (
            f"the models saw the same inputs: the prompt tokens per proposer request agree on "
            f"{len(both) - len(differing)} of {len(both)} matched samples"
        )
    else:
        assert a_tokens is not None and b_tokens is not None and ratio is not None
        status = "differ"
        statement = (
            f"the models saw different inputs: A {_tokens(a_tokens)} vs B {_tokens(b_tokens)} prompt tokens "
            f"per proposer request on {len(differing)} of {len(both)} matched samples (B/A {ratio:.2f}): "
            "the engines prepared the screenshots differently, not engine drift"
        )
    if notes:
        statement += "; " + "; ".join(notes)
    return {
        "status": status,
        "matched": matched,
        "checked": len(both),
        "differing": len(differing),
        "a_tokens": a_tokens,
        "b_tokens": b_tokens,
        "ratio": ratio,
        "tolerance": TOKEN_TOLERANCE,
        "image_tokens": notes,
        "statement": statement,
    }


def compare_setups(a: Run, b: Run) -> SetupComparison:
    """What differs between two runs' recorded setups: nothing, only the engine, or more.

    Each run's results.json is read as dotted paths (``k``, ``selection``, ``gge_version``, every
    leaf of ``config`` and ``model``), less :data:`IGNORED_KEYS`; a path recorded by one run only
    differs (its value ``"(absent)"`` on the other side). A differing path under
    :data:`ENGINE_KEYS` is the engine's, except a checkpoint (``config.ckpt``,
    ``config.model.critic_ckpt``) set to two different values: that is another model. A probe's
    record (``model.backend.probe``) is compared only where both runs have one: a run with
    ``probe=false`` against the same server differs in nothing. The relation
    is ``same`` (nothing differs), ``replay`` (something differs and a run is a replay, whose
    engine and protocol are not recorded), ``other`` (a setting beyond the engine differs) or
    ``engine``.

    Args:
        a: Run A.
        b: Run B.

    Returns:
        compare.json ``setup`` (:class:`~gge.documents.compare.SetupComparison`).
    """
    sa, sb = _settings(a), _settings(b)
    for backend in _PROBED:  # a probe on one side only (probe=false on the other) is no difference
        if not any(_under(k, (backend,)) for k in sa) or not any(_under(k, (backend,)) for k in sb):
            sa = {k: v for k, v in sa.items() if not _under(k, (backend,))}
            sb = {k: v for k, v in sb.items() if not _under(k, (backend,))}
    engine: list[SetupDifference] = []
    other: list[SetupDifference] = []
    for key in [*sa, *(k for k in sb if k not in sa)]:
        va, vb = sa.get(key, _MISSING), sb.get(key, _MISSING)
        if va == vb:
            continue
        diff: SetupDifference = {"key": key, "a": va, "b": vb}
        both_set = va not in (None, _MISSING) and vb not in (None, _MISSING)
        if _under(key, ENGINE_KEYS) and not (key in _CHECKPOINTS and both_set):
            engine.append(diff)
        else:
            other.append(diff)
    texts = {"a": engine_text(a), "b": engine_text(b)}
    replays = [side for side, run in (("A", a), ("B", b)) if _replay(run)]
    if replays and (engine or other):
        relation = "replay"
        statement = (
            f"{' and '.join(replays)} {'replays' if len(replays) == 1 else 'replay'} a predictions file "
            f"(A: {texts['a']}; B: {texts['b']}), whose engine and protocol are not recorded: whether the "
            "runs differ only by engine is unknown"
        )
    elif other:
        relation = "other"
        statement = (
            f"the runs differ beyond the engine ({_listed(other)}): the answers that differ mix the "
            "engine with these"
        )
    elif engine:
        relation = "engine"
        served = [side for side, run in (("A", a), ("B", b)) if _endpoint(run)]
        caveat = (
            f" ({' and '.join(served)}: an endpoint run records the model name served, not the checkpoint "
            "behind it)"
            if served
            else ""
        )
        keys = [d["key"] for d in engine if not d["key"].startswith("model.")] or [d["key"] for d in engine]
        statement = (
            f"the runs differ only by engine (A: {texts['a']}; B: {texts['b']}; differing: "
            f"{', '.join(keys)}): the answers that differ are engine drift{caveat}"
        )
    else:
        relation = "same"
        statement = (
            "the runs' recorded setups are the same, engine included: the answers that differ are "
            "run-to-run nondeterminism"
        )
    inputs = input_check(a, b)
    if relation in ("engine", "same") and inputs["status"] == "differ":
        relation = "inputs"
        said = "differ only by engine" if engine else "are the same, engine included"
        statement = f"the runs' recorded setups {said}, but {inputs['statement']}"
    elif relation in ("engine", "same") and (inputs["status"] == "unknown" or inputs["image_tokens"]):
        statement += f"; {inputs['statement']}"
    return {
        "relation": relation,
        "engine": texts,
        "engine_differences": engine,
        "differences": other,
        "statement": statement,
        "inputs": inputs,
    }


def distance_spread(distances: Sequence[float]) -> DistanceSpread | None:
    """Min, median, 90th percentile, max and mean of distances (``numpy.percentile``, linear).

    Example:
        >>> spread = distance_spread([0.0, 1.0, 2.0, 3.0, 10.0])  # p90: 3 + 0.6 * (10 - 3)
        >>> {key: round(value, 6) for key, value in spread.items()}
        {'min': 0.0, 'median': 2.0, 'p90': 7.2, 'max': 10.0, 'mean': 3.2}
        >>> distance_spread([]) is None
        True
    """
    if not distances:
        return None
    values = np.asarray(distances, dtype=float)
    return {
        "min": float(values.min()),
        "median": float(np.percentile(values, 50)),
        "p90": float(np.percentile(values, 90)),
        "max": float(values.max()),
        "mean": float(values.mean()),
    }


def _first_point(line: Line) -> tuple[float, float] | None:
    if not line.candidates:
        return None
    return line.candidates[0].point


def _flips(pairs: Sequence[tuple[bool, bool]]) -> FlipCounts:
    return {
        "a_hit_b_miss": sum(x and not y for x, y in pairs),
        "a_miss_b_hit": sum(y and not x for x, y in pairs),
    }


def benchmark_drift(pairs: Sequence[tuple[Line, Line]]) -> Drift:
    """How two runs' answers differ on one benchmark (compare.json ``drift``; the module says how).

    Args:
        pairs: The paired lines (A's, B's), in the order compare pairs them (A's file order).

    Returns:
        The counts, the distribution of the first points' distance in original pixels, the flips
        each way and the first :data:`FLIP_EXAMPLES` Top-1 flips with their raw answers.
    """
    distances: list[float] = []
    a_only = b_only = neither = 0
    examples: list[DriftExample] = []
    for xa, xb in pairs:
        pa, pb = _first_point(xa), _first_point(xb)
        distance = None
        if pa is not None and pb is not None:
            distance = math.dist(pa, pb)
            distances.append(distance)
        elif pa is not None:
            a_only += 1
        elif pb is not None:
            b_only += 1
        else:
            neither += 1
        if xa.top1 != xb.top1 and len(examples) < FLIP_EXAMPLES:
            examples.append(
                {
                    "id": xa.id,
                    "flip": "a_hit_b_miss" if xa.top1 else "a_miss_b_hit",
                    "a_raw": xa.raw,
                    "b_raw": xb.raw,
                    "a_point": None if pa is None else [pa[0], pa[1]],
                    "b_point": None if pb is None else [pb[0], pb[1]],
                    "distance": distance,
                }
            )
    return {
        "samples": len(pairs),
        "raw_differs": sum(xa.raw.strip() != xb.raw.strip() for xa, xb in pairs),
        "candidates_differ": sum(
            [wire_point(c) for c in xa.candidates] != [wire_point(c) for c in xb.candidates]
            for xa, xb in pairs
        ),
        "both_points": len(distances),
        "moved": sum(d > 0 for d in distances),
        "a_only_point": a_only,
        "b_only_point": b_only,
        "neither_point": neither,
        "distance": distance_spread(distances),
        "top1_flips": _flips([(xa.top1, xb.top1) for xa, xb in pairs]),
        "first_flips": _flips(
            [(bool(xa.hits[:1] and xa.hits[0]), bool(xb.hits[:1] and xb.hits[0])) for xa, xb in pairs]
        ),
        "examples": examples,
    }
