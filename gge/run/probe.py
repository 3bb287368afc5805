"""Ask an endpoint once before a run: is it the server and model meant, what is it, what does it see.

An endpoint run can go wrong in ways that each request meets again for hours: a wrong port, a
``base_url`` without ``/v1``, a model name the server does not serve, a server that refuses the
preset's prefill, ignores ``n``, gives no log-probabilities, or resizes screenshots with its own pixel
limits. :func:`probe_server` asks the server once, in seconds, before any sample is evaluated, and
says each problem in one line naming the option that fixes it:

1. ``GET models``: nothing answering (stops: a :class:`~gge.errors.TransientError`, as a server
   still starting is, which ``gge watch`` tries again), a missing ``/v1`` (404 there, 200 at ``/v1/models``:
   stops), an API key wanted (stops), a model name not served (stops, listing the served ones; not
   where the list's entries carry a ``status``: ``transformers serve`` lists its cache and the models
   it has loaded, and loads any other on demand).
2. Who answered: vLLM's ``GET /version``, SGLang's ``GET /get_server_info`` (its version and pixel
   limits where given), the HTTP ``Server`` header, the models' ``owned_by``, and from the answers
   the ``model`` and ``system_fingerprint`` fields.
3. The first sample's proposer request exactly as the run sends it (the policy's own ``propose``,
   so the preset's prompt, prefill and ``n`` are the run's: a refused prefill stops; an answer that
   does not parse, a server that ignores ``n`` when the proposer samples, one without
   log-probabilities when the critic is pointwise are a warning each). Its answer is not kept: the
   run asks the sample again.
4. What the model saw (a Qwen-VL preset: ``resize_factor``): per benchmark, its first sample's
   proposer request sent twice as the run sends it (its budget too: ``transformers serve`` answers
   HTTP 500 to a Qwen tool call cut short, e.g. after one token), with the screenshot at its sent
   size and with a small image; the difference of the prompt tokens is the difference of image
   tokens, exactly
   (:func:`gge.scoring.image_tokens.split_prompt`). A mismatch is one warning line (recorded), or
   stops the run with ``strict_server=true``. The text split is kept for the per-request check of
   the run (:func:`image_token_checks`), with the bytes of the sample's own text in the prompt
   (:func:`sample_text_bytes`: its instruction and stated screen size, as often as the preset's
   templates hold them).
5. An adaptive window's start, for any preset: the first sample's proposer request with the small
   image (:data:`SMALL_SIDE`) alone, then :data:`COPIES` copies at once. A server
   that serves requests one at a time takes about ``COPIES`` times as long for them; one that batches
   takes about as long as for one. Rule (ratios, not times): the copies' wall over the one request's
   at least :data:`SERIAL_SHARE` x ``COPIES`` means one at a time, and the window starts at
   :data:`SERIAL_START` instead of 64 (``transformers serve`` generates one VLM request at a time:
   a first wave of 64 timed out 60 requests there).

The record (:class:`ProbeResult`'s ``record``) goes to results.json under ``model.backend.probe``;
the API key is never in it (only its variable's name is, elsewhere). The probe's requests are the
server's like any other: ``model.backend.usage`` (the server's own count) and ``cost.window`` include
them; the record's ``usage`` says how many of them were the probe's (``requests``, ``retries``,
``prompt_tokens``, ``completion_tokens``: the backends' counters after the probe less before). The
record and the splits are kept in the output folder (:mod:`gge.run.probe_store`), so a resumed
run's benchmarks finished by an earlier invocation keep their check and its record of who answered.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from PIL import Image

from gge.benchmarks.images import decode_image
from gge.errors import GgeError, TransientError
from gge.models.base import GenerationRequest
from gge.scoring.image_tokens import (
    SeenRequest,
    TokenSplit,
    answers_paid,
    check_requests,
    image_tokens_for,
    mismatch_line,
    split_prompt,
)
from gge.types import Sample, SampleResult

COPIES = 4
"""Copies of the small request sent at once to see whether the server serves them together."""

SERIAL_SHARE = 0.6
"""The copies' wall over one request's, as a share of ``COPIES``, from which the server serves one
at a time: a batching server takes about 1x (each copy its own prefill, one decode step), one that
serves one at a time ``COPIES``x; 0.6 (2.4x for 4 copies) lies between, clear of both."""

SERIAL_START = 2
"""Where an adaptive window starts on a server that serves one request at a time: one request being
served and one waiting, so the server never idles between them and no request waits long enough
in its queue to time out."""

SMALL_SIDE = 112
"""The small image of the token probe: 112 x 112 (16 tokens at factor 28, 16 at 32 after rounding),
far inside every server's pixel limits."""

USAGE_KEYS = ("requests", "retries", "prompt_tokens", "completion_tokens")
"""The backend usage counters whose probe share the record's ``usage`` gives."""


@dataclass
class ProbeResult:
    """What the probe found.

    Attributes:
        record: results.json's ``model.backend.probe``: ``endpoint``, ``served_models``,
            ``engine`` (``name``, ``version``, ``server``, ``max_pixels``, ``min_pixels`` where told),
            ``answers`` (``model``, ``system_fingerprint``), ``image_tokens`` (per benchmark: the
            probe's split), ``window`` (the parallelism measured and the start chosen),
            ``warnings`` (each line said), ``usage`` (the probe's own requests and tokens).
        splits: Per benchmark: the text tokens of its first sample's proposer prompt and the UTF-8
            bytes of that sample's own text in it (:func:`sample_text_bytes`; for
            :func:`image_token_checks`).
    """

    record: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, tuple[int, int]] = field(default_factory=dict)


def serves_one_at_a_time(alone_s: float, together_s: float, copies: int = COPIES) -> bool:
    """Whether ``copies`` requests sent at once took as long as one after the other would.

    Args:
        alone_s: The wall time of one request sent alone.
        together_s: The wall time of ``copies`` copies sent at once (until the last answer).
        copies: How many were sent at once.

    Returns:
        ``together_s >= SERIAL_SHARE * copies * alone_s``.

    Example:
        >>> serves_one_at_a_time(1.0, 3.9), serves_one_at_a_time(1.0, 1.2)
        (True, False)
    """
    return together_s >= SERIAL_SHARE * copies * alone_s


def engine_name(version_info: Mapping[str, Any] | None, server_info: Mapping[str, Any] | None) -> str | None:
    """The serving engine named by what it says about itself (None: it says nothing gge knows).

    Example:
        >>> engine_name({"version": "0.11.0"}, None)
        'vLLM 0.11.0'
        >>> engine_name(None, {"version": "0.5.4", "tp_size": 1})
        'SGLang 0.5.4'
    """
    if server_info is not None:
        version = server_info.get("version")
        return "SGLang" + (f" {version}" if isinstance(version, str) else "")
    if version_info is not None and isinstance(version_info.get("version"), str):
        return f"vLLM {version_info['version']}"
    return None


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


def _find(data: Any, key: str, depth: int = 2) -> Any:
    """The first value of ``key`` in a JSON object or the objects inside it (``depth`` levels)."""
    if not isinstance(data, dict):
        return None
    if key in data:
        return data[key]
    if depth > 0:
        for value in data.values():
            found = _find(value, key, depth - 1)
            if found is not None:
                return found
    return None


def _root(base_url: str) -> str:
    parts = urllib.parse.urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


def _check_models(backend: Any, record: dict[str, Any]) -> None:
    """GET models: stops on nothing answering, a missing /v1, a key wanted, a model not served."""
    base = str(backend.base_url)
    url = f"{base}/models"
    try:
        status, headers, body = backend.get("models")
    except GgeError as e:  # a server still starting: gge watch tries again (a TransientError)
        raise TransientError(
            f"probe: nothing answers at {url}: is the server up, and is model.base_url's port right? ({e})"
        ) from None
    server = _header(headers, "Server")
    if server:
        record["engine"]["server"] = server
    if status == 404:
        hint = ""
        if not base.endswith("/v1"):
            try:
                answered = backend.get("/v1/models")[0]
            except GgeError:
                answered = 0
            if answered == 200:
                raise GgeError(
                    f"probe: GET {url} answered HTTP 404 but {_root(base)}/v1/models answers: add /v1 "
                    f"(model.base_url={_root(base)}/v1)"
                )
            hint = " (e.g. http://127.0.0.1:8000/v1)"
        raise GgeError(f"probe: GET {url} answered HTTP 404: is model.base_url the API root{hint}?")
    if status in (401, 403):
        raise GgeError(
            f"probe: GET {url} answered HTTP {status}: the server wants an API key: set the environment "
            f"variable {backend.api_key_env} (model.api_key_env names it)"
        )
    data = _json_object(body) if status == 200 else None
    listed = data.get("data") if data is not None else None
    if not isinstance(listed, list):
        record["warnings"].append(f"GET {url} answered HTTP {status} without a model list: not checked")
        return
    served = [m["id"] for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)]
    owners = sorted(
        {m["owned_by"] for m in listed if isinstance(m, dict) and isinstance(m.get("owned_by"), str)}
    )
    record["served_models"] = served
    if owners:
        record["engine"]["owned_by"] = owners
    # transformers serve lists the models of its cache and those it has loaded, each with a "status"
    # (not an OpenAI field), and loads any other it is asked for: a name it does not list is no error
    on_demand = any(isinstance(m, dict) and isinstance(m.get("status"), dict) for m in listed)
    if on_demand:
        record["engine"]["loads_models"] = "on demand"
    if served and backend.model not in served and not on_demand:
        raise GgeError(
            f"probe: the server at {base} serves {', '.join(map(repr, served))}, not {backend.model!r}: set "
            "model.api_model to the served name"
        )


def _identity(backend: Any, record: dict[str, Any]) -> None:
    """What the engine says about itself: SGLang's /get_server_info, vLLM's /version."""
    found: dict[str, dict[str, Any] | None] = {}
    for path in ("/get_server_info", "/version"):
        try:
            status, _, body = backend.get(path)
        except GgeError:
            status, body = 0, b""
        found[path] = _json_object(body) if status == 200 else None
    info, version = found["/get_server_info"], found["/version"]
    name = engine_name(version, info)
    engine = record["engine"]
    if name is not None:
        engine["name"] = name
    for key in ("max_pixels", "min_pixels"):
        value = _find(info, key)
        if isinstance(value, int):
            engine[key] = value


def _first_image(sample: Sample) -> Image.Image:
    return decode_image(sample)


def _view(backend: Any, image: Image.Image) -> Image.Image:
    seen = tuple(backend.seen_size(*image.size))
    return image if seen == image.size else image.resize(seen, Image.Resampling.BICUBIC)


def _prompt_tokens(generation: Any) -> int | None:
    value = generation.usage.get("prompt_tokens") if isinstance(generation.usage, dict) else None
    return value if isinstance(value, int) else None


def _first_request(policy: Any, sample: Sample, image: Image.Image, result: ProbeResult) -> None:
    """The first sample's proposer request as the run sends it; what its answer showed."""
    warnings = result.record["warnings"]
    try:
        (proposal,) = policy.propose([sample], [image])
    except TransientError as e:  # a request that failed for good: the run meets it as that sample's
        warnings.append(f"the first request ({sample.benchmark}/{sample.id}) failed: {e}")
        return
    except GgeError as e:
        raise GgeError(f"probe: {sample.benchmark}/{sample.id}: {e}") from None
    if proposal.format_error:
        warnings.append(
            f"the answer to {sample.benchmark}/{sample.id} does not parse as the preset's "
            f"({proposal.raw[:80]!r}): is model.api_model the model the preset is for?"
        )
    answers = policy.backend.settings().get("answers") or {}
    if policy.proposer_mode == "sampling" and answers.get("n") == "ignored":
        warnings.append(
            "the server ignores n (one answer per request): gge asks again for each missing sample, "
            "K-1 more requests per sample; serve with vLLM or SGLang, or use model.proposer=single_pass"
        )
    if policy.critic_mode == "pointwise" and len([c for c in proposal.candidates if c.point]) >= 2:
        messages = policy.critic_messages("judge_one", sample, _view(policy.critic_backend, image).size, 1)
        request = GenerationRequest(_view(policy.critic_backend, image), messages, max_new_tokens=1)
        with_costs = getattr(policy.critic_backend, "yes_probability_with_costs", None)
        if callable(with_costs):
            with_costs([request], policy.settings_.yes, policy.settings_.no)
        if getattr(policy.critic_backend, "logprobs", None) == "unavailable":
            warnings.append(
                "the server returns no log-probabilities: the pointwise critic's scores are 1 or 0 "
                "(its answer), not P(Yes); serve with vLLM or SGLang, or use model.critic=listwise"
            )


def sample_text_bytes(policy: Any, sample: Sample, view_size: tuple[int, int]) -> int:
    """UTF-8 bytes of a sample's own text in its proposer prompt: what differs between two samples.

    A benchmark's proposer prompts differ only where the preset's templates put the sample's
    instruction and the screen size the prompt states (``{instruction}``, ``{width}``,
    ``{height}``; in the system prompt and its tool schema too, as Qwen2.5-VL's tool schema states the
    screen size, and its ``single_pass`` prompt again); ``{k}`` and ``{labels}`` are the run's. Each
    place counts: the instruction's bytes and the size's digits as often as the templates hold them.

    Args:
        policy: A :class:`~gge.models.policy.GroundingPolicy`.
        sample: The sample.
        view_size: The size its screenshot is sent at.

    Returns:
        The bytes (0 for a policy without templates).
    """
    settings = getattr(policy, "settings_", None)
    if settings is None:
        return 0
    prompts = settings.prompts.for_benchmark(sample.benchmark)
    user = prompts.propose_k if settings.proposer == "single_pass" else prompts.propose_one
    texts = [user or "", prompts.prefill or ""]
    if prompts.system is not None:
        texts += [prompts.system] + [prompts.tools or ""] * prompts.system.count("{tools}")
    w, h = policy.prompt_size(sample, view_size)
    own = {"instruction": len(sample.instruction.encode("utf-8")), "width": len(str(w))}
    own["height"] = len(str(h))
    return sum(text.count("{" + key + "}") * n for text in texts for key, n in own.items())


def _requests(
    policy: Any, sample: Sample, image: Image.Image
) -> tuple[Image.Image, GenerationRequest, GenerationRequest]:
    """A sample's proposer request as the run sends it, and the same with the small image."""
    backend = policy.backend
    view = _view(backend, image)
    spec = policy.proposer_requests(sample, view.size)[0]
    small = Image.new("RGB", backend.seen_size(SMALL_SIDE, SMALL_SIDE), (128, 128, 128))
    # the run's own budget: a server that parses answers refuses one cut short (transformers serve
    # answers HTTP 500 to a Qwen tool call cut after <tool_call>); the prompt tokens do not depend on it
    budget = spec.generation.get("max_new_tokens")
    asked = budget if isinstance(budget, int) else 1
    big_request, small_request = (
        GenerationRequest(shown, spec.messages, prefill=spec.prefill, max_new_tokens=asked)
        for shown in (view, small)
    )
    return view, big_request, small_request


def _token_split(
    policy: Any, sample: Sample, image: Image.Image, result: ProbeResult, strict: bool
) -> GenerationRequest | None:
    """Per benchmark: the screenshot's image tokens as the server counted them; the small request."""
    backend = policy.backend
    factor = backend.resize_factor
    view, big_request, small_request = _requests(policy, sample, image)
    small, asked = small_request.image, small_request.max_new_tokens
    try:
        big, little = backend.generate([big_request, small_request])
    except TransientError as e:
        result.record["warnings"].append(f"{sample.benchmark}: the token probe failed: {e}")
        return None
    p_big, p_small = _prompt_tokens(big), _prompt_tokens(little)
    entry: dict[str, Any] = {
        "sample": sample.id,
        "size": list(view.size),
        "small_size": list(small.size),
        "prompt_tokens": p_big,
        "small_prompt_tokens": p_small,
        "max_new_tokens": asked,
    }
    result.record["image_tokens"][sample.benchmark] = entry
    if p_big is None or p_small is None:
        entry["note"] = "the server reports no usage.prompt_tokens: not checked"
        return small_request
    split: TokenSplit = split_prompt(
        p_big,
        p_small,
        expected_big=image_tokens_for(*view.size, factor),
        expected_small=image_tokens_for(*small.size, factor),
    )
    entry.update(
        image_tokens=split.image_tokens,
        expected=split.expected,
        text_tokens=split.text_tokens,
        ratio=round(split.ratio, 4),
    )
    result.splits[sample.benchmark] = (split.text_tokens, sample_text_bytes(policy, sample, view.size))
    line = mismatch_line(split, view.size, factor, *backend.resize_limits())
    if line is not None:
        if strict:
            raise GgeError(f"probe: {sample.benchmark}: {line} (strict_server=true)")
        result.record["warnings"].append(f"{sample.benchmark}: {line}")
    return small_request


def _window_start(
    backend: Any, request: GenerationRequest, result: ProbeResult, clock: Callable[[], float]
) -> None:
    """An adaptive window's start from the server's parallelism (see the module's rule)."""
    try:
        began = clock()
        backend.generate([request])
        alone = clock() - began
        began = clock()
        backend.generate([request] * COPIES)
        together = clock() - began
    except TransientError as e:  # the window starts where it would without the probe
        result.record["warnings"].append(f"the window probe failed: {e}")
        return
    serial = serves_one_at_a_time(alone, together)
    entry: dict[str, Any] = {
        "copies": COPIES,
        "ratio": round(together / alone, 2) if alone > 0 else None,
        "one_at_a_time": serial,
        "start": None,
    }
    if serial:
        reason = (
            f"probe: {COPIES} requests at once took {together / alone:.1f}x one request's time "
            "(the server serves one at a time)"
        )
        backend.window.start_at(SERIAL_START, reason)
        entry["start"] = SERIAL_START
    result.record["window"] = entry


def probe_server(
    policy: Any,
    samples: Mapping[str, Sequence[Sample]],
    *,
    out: TextIO,
    strict: bool = False,
    clock: Callable[[], float] = time.perf_counter,
) -> ProbeResult:
    """Ask an endpoint policy's server once, before any sample is evaluated (see the module).

    Args:
        policy: A :class:`~gge.models.policy.GroundingPolicy` over an
            :class:`~gge.models.openai_api.OpenAIBackend` (anything else: nothing is asked).
        samples: Each benchmark's samples to evaluate (the first of each is probed).
        out: Where each warning is printed (one line each, ``warning: probe: ...``).
        strict: An image token mismatch stops the run (``strict_server=true``).
        clock: Seconds (the window probe's ratio of two walls; a test drives it from a fake
            server's simulated time).

    Returns:
        What it found (empty for a backend it cannot ask).

    Raises:
        TransientError: Nothing answers (a server still starting: ``gge watch`` tries again).
        GgeError: A missing ``/v1``, an API key wanted, a model name not served, a
            refused prefill, or (``strict``) a token mismatch: one line naming the option to set.
    """
    backend: Any = getattr(policy, "backend", None)
    result = ProbeResult()
    if not callable(getattr(backend, "get", None)):
        return result
    record = result.record
    record.update(endpoint=str(backend.base_url), engine={}, warnings=[], image_tokens={})
    backends = _backends(policy)
    before = _usage(backends)
    _check_models(backend, record)
    _identity(backend, record)
    firsts = [group[0] for group in samples.values() if group]
    small: GenerationRequest | None = None
    for i, sample in enumerate(firsts):
        try:
            image = _first_image(sample)
        except GgeError:
            continue  # the run says so as that sample's image error
        if i == 0:
            _first_request(policy, sample, image, result)
        if getattr(backend, "resize_factor", None):
            small = _token_split(policy, sample, image, result, strict) or small
        elif small is None:  # no token check: the window's small request all the same
            small = _requests(policy, sample, image)[2]
    answers = backend.settings().get("answers") or {}
    record["answers"] = {k: answers.get(k) for k in ("model", "system_fingerprint")}
    window = getattr(backend, "window", None)
    adaptive = getattr(window, "adaptive", False) and callable(getattr(window, "start_at", None))
    if small is not None and adaptive:
        _window_start(backend, small, result, clock)
    after = _usage(backends)
    record["usage"] = {key: after[key] - before[key] for key in USAGE_KEYS}
    for line in record["warnings"]:
        print(f"warning: probe: {line}", file=out)
    return result


def _backends(policy: Any) -> list[Any]:
    """The policy's distinct backends with usage counters (the proposer's, a critic's own)."""
    found: list[Any] = []
    for backend in (getattr(policy, "backend", None), getattr(policy, "critic_backend", None)):
        if callable(getattr(backend, "settings", None)) and all(backend is not b for b in found):
            found.append(backend)
    return found


def _usage(backends: Sequence[Any]) -> dict[str, int]:
    """The backends' usage counters (:data:`USAGE_KEYS`), summed."""
    total = dict.fromkeys(USAGE_KEYS, 0)
    for backend in backends:
        usage = backend.settings().get("usage") or {}
        for key in USAGE_KEYS:
            value = usage.get(key)
            total[key] += value if isinstance(value, int) else 0
    return total


def image_token_checks(
    policy: Any,
    results: Mapping[str, Sequence[SampleResult]],
    samples: Mapping[str, Sequence[Sample]],
    splits: Mapping[str, tuple[int, int]],
    decode_max_pixels: int | None = None,
) -> dict[str, Any]:
    """Per benchmark, the run's proposer answers whose image tokens differ from the preset's.

    The factor is the endpoint's ``resize_factor`` (no factor: a screenshot sent as it is, nothing
    expected, no check) or, for an in-process backend whose cost records count image tokens, the
    preset's ``patch_factor``. An endpoint answer's tolerance is its sample's own text in the prompt
    (:func:`sample_text_bytes`) against the probe sample's. Each answer's sent size is the backend's
    ``seen_size`` of the sample's screenshot; a run that decodes screenshots smaller
    (``decode_max_pixels``) is not checked. A request for c sequences counts its prompt c times
    (:class:`~gge.types.CostRecord`): each record is divided by its answers (:func:`answers_paid`).

    Args:
        policy: The run's policy.
        results: Each benchmark's results (with their cost records).
        samples: Each benchmark's samples (instructions, screenshot sizes).
        splits: The probe's text split per benchmark (:attr:`ProbeResult.splits`).
        decode_max_pixels: The run's ``decode_max_pixels``.

    Returns:
        Each checked benchmark's :class:`~gge.documents.results.ImageTokenCheck`.
    """
    backend = getattr(policy, "backend", None)
    settings = getattr(policy, "settings_", None)
    if backend is None or settings is None or decode_max_pixels is not None:
        return {}
    endpoint = hasattr(backend, "resize_factor")
    factor = backend.resize_factor if endpoint else settings.patch_factor
    if not factor:
        return {}
    out: dict[str, Any] = {}
    for name, group in results.items():
        by_id = {s.id: s for s in samples.get(name, ())}
        seen: list[SeenRequest] = []
        for r in group:
            sample = by_id.get(r.id)
            if sample is None:
                continue
            w, h = backend.seen_size(*sample.image_size)
            try:
                expected = image_tokens_for(w, h, factor)
            except ValueError:
                continue
            own_bytes = sample_text_bytes(policy, sample, (w, h))
            for c in r.costs:
                m = answers_paid(c, policy.proposer_mode)
                if c.stage != "propose" or c.input_tokens is None:
                    continue
                seen.append(
                    SeenRequest(
                        r.id,
                        (w, h),
                        expected,
                        prompt_tokens=c.input_tokens // m,
                        image_tokens=None if c.image_tokens is None else c.image_tokens // m,
                        instruction_bytes=own_bytes,
                    )
                )
        if not seen or (endpoint and name not in splits and not any(s.image_tokens for s in seen)):
            continue
        text, probe_bytes = splits.get(name, (None, 0))
        out[name] = check_requests(seen, factor=factor, text_tokens=text, probe_bytes=probe_bytes)
    return out
