"""The endpoint path end to end against a real ``transformers serve`` with a tiny Qwen2.5-VL built offline.

The server runs in the Python that ``GGE_SERVE_PYTHON`` names (``.ci/run`` builds it: torch 2.13.0 CPU,
``transformers[serving]==5.24.0``, pillow), unpinned, so each request's ``model`` (a checkpoint
folder) is loaded on first use: one server for every checkpoint here. A Qwen preset's requests go
through it as a user sends them (``model=qwen2_5_vl model.backend=openai``): the computer-use system
prompt, the image at ``smart_resize`` size, the answer in resized pixels. Two checkpoints:

- ``fixed``: programmed (``engine_checkpoints.program``) to answer the Qwen tool call
  ``<tool_call>{... "coordinate": [25, 17]}</tool_call>`` to anything; the server parses it into
  ``message.tool_calls`` with empty ``content``, which gge must read back.
- ``noisy``: random weights (std 0.2), whose greedy answer changes with a pixel or a rounding: the same
  run in-process (``model.backend=transformers``) and through the server must answer identically.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")

from engine_checkpoints import (
    SERVE_ENV,
    Engine,
    EngineError,
    build_serve_qwen2_5_vl,
    engine_python,
    limit_pixels,
    not_started,
    skip_reason,
    start_transformers_serve,
)

from gge.errors import GgeError
from gge.models.base import GenerationRequest
from gge.models.openai_api import OpenAIBackend
from gge.run.settings import parse_args
from gge.run.standalone import run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        engine_python(SERVE_ENV) is None, reason=skip_reason(SERVE_ENV, "transformers[serving]")
    ),
]

CALL = '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": ['
END = "]}}\n</tool_call>"
ANSWER = CALL + "25, 17" + END
POINT = (25, 17)  # in pixels of the smart_resize'd screenshot (the preset's abs_resized)

# The demo records (gge.benchmarks.demo.suite.records_demo): id -> (image size, the target region read off the
# records file by hand, in original pixels: a box (x1, y1, x2, y2), a polygon, or None when absent).
RECORDS: dict[str, tuple[tuple[int, int], Any]] = {
    "demo_0": ((320, 200), (8, 8, 48, 28)),
    "demo_1": ((320, 200), (56, 8, 96, 28)),
    "demo_2": ((320, 200), (200, 40, 312, 190)),
    "demo_3": ((320, 200), None),
    "demo_4": ((200, 400), (150, 350, 190, 390)),
    "demo_5": ((200, 400), (10, 10, 50, 40)),
    "demo_6": ((200, 400), [(100, 100), (120, 120), (100, 140), (80, 120)]),
    "demo_7": ((200, 400), None),
    "demo_8": ((400, 250), (340, 10, 390, 40)),
    "demo_9": ((400, 250), (150, 180, 250, 220)),
    "demo_10": ((400, 250), (20, 10, 300, 40)),
    "demo_11": ((400, 250), None),
}


def _resized(width: int, height: int) -> tuple[int, int]:
    """Qwen2.5-VL's resize of a small screenshot: each side to the nearest multiple of 28."""
    return round(width / 28) * 28, round(height / 28) * 28


def _inside(point: tuple[float, float], region: Any) -> bool:
    """Whether a point hits a box or a polygon (crossing count); never for an absent target."""
    if region is None:
        return False
    x, y = point
    if isinstance(region, tuple):
        return region[0] <= x <= region[2] and region[1] <= y <= region[3]
    crossings = 0
    for (x1, y1), (x2, y2) in zip(region, region[1:] + region[:1], strict=True):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            crossings += 1
    return crossings % 2 == 1


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    python = engine_python(SERVE_ENV)
    assert python is not None
    try:
        server = start_transformers_serve(python, tmp_path_factory.mktemp("serve"))
    except EngineError as error:
        not_started("transformers serve", error)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("serve_checkpoints")
    return {
        "fixed": build_serve_qwen2_5_vl(root / "fixed", answer=ANSWER, pieces=[CALL, END]),
        "noisy": build_serve_qwen2_5_vl(root / "noisy", seed=1, noise=0.2),
    }


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gge.benchmarks.demo.suite.records_demo import write_records_demo

    root = tmp_path_factory.mktemp("records_demo")
    write_records_demo(root)
    return root


def _eval(demo: Path, out: Path, *options: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """An eval run of the records benchmark; its results and its predictions by sample id."""
    args = [f"data_root={demo}", "benchmarks=[records]", f"output_dir={out}", *options]
    results = run(parse_args(args), out=io.StringIO())
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    return results, {r["id"]: r for r in map(json.loads, lines)}


def _served(engine: Engine, checkpoint: Path) -> list[str]:
    return [
        "model=qwen2_5_vl",
        "model.backend=openai",
        f"model.base_url={engine.url}",
        f"model.api_model={checkpoint}",
        "model.concurrency=2",
        "model.max_retries=0",
        "model.prompts.prefill=null",  # transformers serve refuses a prefill (HTTP 422)
    ]


def test_a_qwen_preset_through_transformers_serve_scores_what_its_fixed_answer_implies(
    engine: Engine, checkpoints: dict[str, Path], demo: Path, tmp_path: Path
) -> None:
    results, rows = _eval(demo, tmp_path / "run", *_served(engine, checkpoints["fixed"]))
    assert sorted(rows) == sorted(RECORDS)
    expected_hits = 0
    for sample_id, ((width, height), region) in RECORDS.items():
        row = rows[sample_id]
        # the server parsed the tool call into message.tool_calls; gge wrote it back
        assert row["raw"] == ANSWER, sample_id
        rw, rh = _resized(width, height)
        point = (POINT[0] * width / rw, POINT[1] * height / rh)
        assert row["candidates"][0] == pytest.approx(list(point), abs=1e-9), sample_id
        hit = _inside(point, region)
        assert row["hits"] == [hit], sample_id
        expected_hits += hit
    assert expected_hits == 3  # save, go back, search (the point is near every screen's top left)
    assert results["benchmarks"]["records"]["top1"] == pytest.approx(100 * expected_hits / len(RECORDS))


def test_the_same_checkpoint_in_process_and_through_the_server_answers_identically(
    engine: Engine, checkpoints: dict[str, Path], demo: Path, tmp_path: Path
) -> None:
    short = ["model.max_new_tokens=24"]
    _, served = _eval(demo, tmp_path / "served", *_served(engine, checkpoints["noisy"]), *short)
    local_options = [
        "model=qwen2_5_vl",
        f"ckpt={checkpoints['noisy']}",
        "model.backend=transformers",
        "model.device=cpu",
        "model.dtype=float32",
        "model.prompts.prefill=null",
        *short,
    ]
    _, local = _eval(demo, tmp_path / "local", *local_options)
    assert sorted(served) == sorted(local) == sorted(RECORDS)
    drift = {i: (local[i]["raw"], served[i]["raw"]) for i in RECORDS if local[i]["raw"] != served[i]["raw"]}
    assert not drift, f"{len(drift)} of {len(RECORDS)} greedy answers drift (in-process, served): {drift}"
    assert len({r["raw"] for r in local.values()}) > 1  # a detector: its answers depend on the input


def test_the_preset_prefill_is_refused_by_the_server_and_the_run_stops_naming_the_option(
    engine: Engine, checkpoints: dict[str, Path], demo: Path, tmp_path: Path
) -> None:
    options = [o for o in _served(engine, checkpoints["fixed"]) if "prefill" not in o]
    with pytest.raises(GgeError) as err:
        _eval(demo, tmp_path / "run", *options)
    message = str(err.value)
    assert "model.prompts.prefill" in message and "HTTP 422" in message, message
    assert "\n" not in message


def test_without_n_and_logprobs_the_backend_asks_again_and_answers_hard(
    engine: Engine, checkpoints: dict[str, Path]
) -> None:
    from PIL import Image

    backend = OpenAIBackend(engine.url, str(checkpoints["fixed"]), concurrency=1, max_retries=0)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "the save button"}]}]
    request = GenerationRequest(
        Image.new("RGB", (56, 56), (30, 90, 200)), messages, num_sequences=3, do_sample=True
    )
    [gen] = backend.generate([request])
    assert gen.texts == [ANSWER] * 3
    record = backend._reading_record()
    assert (record["n"], record["n_reasks"], record["tool_call_answers"]) == ("ignored", 2, 3)
    # no logprobs: the hard answer from the text of the first token. (On the tool-call checkpoint
    # a one-token answer is half a tool call, which transformers serve answers with HTTP 500.)
    noisy = OpenAIBackend(engine.url, str(checkpoints["noisy"]), concurrency=1, max_retries=0)
    judge = GenerationRequest(request.image, messages)
    [first] = noisy.generate([GenerationRequest(request.image, messages, max_new_tokens=1)])
    [p] = noisy.yes_probability([judge], first.texts[0].strip() or "Yes", "No")
    assert type(p) is float and p == (1.0 if first.texts[0].strip() else 0.0)
    [q] = noisy.yes_probability([judge], "certainly-not-" + first.texts[0].strip(), "No")
    assert type(q) is float and q == 0.0
    assert noisy.settings()["logprobs"] == "unavailable"


# -- the probe: who answered, and what the model saw ----------------------------------------------------
SERVER_MAX_PIXELS = 50176
"""The ``limited`` checkpoint's own ``max_pixels`` (224 x 224: at most 64 image tokens), as a server
started with its own limit has; the preset sends up to 12,845,056 pixels."""

PRESET_PIXELS = (3136, 12845056)  # configs/models/qwen2_5_vl.yaml: min_pixels, max_pixels

# id -> (screenshot size, whether the size the preset sends it at is above the server's limit, by hand)
SHOTS: dict[str, tuple[tuple[int, int], bool]] = {
    "s0": ((640, 360), True),  # sent at 644x364 = 234,416 pixels (the probe's sample: the first)
    "s1": ((160, 120), False),  # 168x112 = 18,816
    "s2": ((1280, 720), True),  # 1288x728 = 937,664
    "s3": ((200, 200), False),  # 196x196 = 38,416
    "s4": ((224, 224), False),  # 224x224 = 50,176: at the limit, not above it
    "s5": ((400, 250), True),  # 392x252 = 98,784
}
FITTING = ("s1", "s3", "s4")


def _reference_resize(width: int, height: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """(width, height) after Qwen2-VL's ``smart_resize`` (transformers' own: the reference library)."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = smart_resize(height, width, factor=28, min_pixels=min_pixels, max_pixels=max_pixels)
    return w, h


def _tokens(size: tuple[int, int]) -> int:
    return (size[0] // 28) * (size[1] // 28)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = build_serve_qwen2_5_vl(
        tmp_path_factory.mktemp("limited") / "qwen", answer=ANSWER, pieces=[CALL, END]
    )
    return limit_pixels(folder, SERVER_MAX_PIXELS)


def _server_pixels(checkpoint: Path) -> tuple[int, int]:
    """The server's own (min_pixels, max_pixels): its checkpoint's image processor's ``size``."""
    size = json.loads((checkpoint / "preprocessor_config.json").read_text(encoding="utf-8"))["size"]
    return int(size["shortest_edge"]), int(size["longest_edge"])


def _shots(root: Path, ids: Sequence[str]) -> Path:
    """A records folder (``<root>/records``) of plain screenshots of SHOTS' sizes; the data root."""
    from PIL import Image

    images = root / "records" / "images"
    images.mkdir(parents=True)
    rows = []
    for sample_id in ids:
        Image.new("RGB", SHOTS[sample_id][0], (200, 210, 220)).save(images / f"{sample_id}.png")
        box = {"bbox": [0, 0, 20, 20], "box_format": "xyxy", "units": "pixels"}
        rows.append(
            {"id": sample_id, "image": f"images/{sample_id}.png", "instruction": "click the button", **box}
        )
    (root / "records" / "records.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    return root


def _listed(engine: Engine) -> dict[str, Any]:
    """The server's GET /v1/models, asked directly: each listed id and its ``status``."""
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(engine.url + "/models", timeout=10) as resp:
        return {m["id"]: m.get("status") for m in json.loads(resp.read())["data"]}


def _probed(engine: Engine, checkpoint: Path, data: Path, out: Path) -> tuple[dict[str, Any], list[str]]:
    """An eval run of the records benchmark through the server: its results and the probe's lines."""
    args = [f"data_root={data}", "benchmarks=[records]", f"output_dir={out}", *_served(engine, checkpoint)]
    printed = io.StringIO()
    results = run(parse_args(args), out=printed)
    return results, [line for line in printed.getvalue().splitlines() if line.startswith("warning: probe:")]


def test_the_probe_records_transformers_serve_and_catches_its_own_max_pixels(
    engine: Engine, limited: Path, tmp_path: Path
) -> None:
    server_min, server_max = _server_pixels(limited)
    assert server_max == SERVER_MAX_PIXELS < PRESET_PIXELS[1]
    before = _listed(engine)
    assert str(limited) not in before  # not loaded yet: served on demand
    results, lines = _probed(engine, limited, _shots(tmp_path / "data", list(SHOTS)), tmp_path / "run")
    probe = results["model"]["backend"]["probe"]
    # what transformers serve says about itself: no /version nor /get_server_info, uvicorn's Server
    # header; its /v1/models lists its Hub cache (empty here) and the folders it has loaded (by earlier
    # tests of this module, if any: owned by "local", each with a "status", from which the probe knows
    # it loads any other folder asked for); each answer's model field is the request's, the checkpoint
    # folder; no system_fingerprint
    assert probe["endpoint"] == engine.url
    listed = {"owned_by": ["local"], "loads_models": "on demand"} if before else {}
    assert probe["engine"] == {"server": "uvicorn", **listed}
    assert probe["served_models"] == list(before)
    assert _listed(engine)[str(limited)] == {"value": "loaded"}
    assert probe["answers"] == {"model": [str(limited)], "system_fingerprint": []}
    # the first screenshot (s0) as sent, and as the server's own limit resizes it again
    sent = _reference_resize(*SHOTS["s0"][0], *PRESET_PIXELS)
    seen = _reference_resize(*sent, server_min, server_max)
    assert (sent, seen) == ((644, 364), (280, 168))  # the reference library's arithmetic, by hand too
    split = probe["image_tokens"]["records"]
    assert (split["sample"], split["size"], split["small_size"]) == ("s0", list(sent), [112, 112])
    assert (split["image_tokens"], split["expected"]) == (_tokens(seen), _tokens(sent)) == (60, 299)
    # the server's own usage: the two prompts differ by their images' tokens (the small one's 4 x 4)
    assert split["prompt_tokens"] - split["small_prompt_tokens"] == _tokens(seen) - 16
    assert lines == [f"warning: probe: {probe['warnings'][0]}"]
    assert lines[0].startswith(
        "warning: probe: records: the model saw fewer image tokens than gge sent: the server counts 60 image "
        "tokens for a 644x364 screenshot where the preset expects 299 (ratio 0.20; "
    )
    # every request of the run: those whose sent screenshot is above the server's limit differ
    above = {i for i, (size, flag) in SHOTS.items() if flag}
    for sample_id, (size, flag) in SHOTS.items():  # the hand-written flags agree with the arithmetic
        w, h = _reference_resize(*size, *PRESET_PIXELS)
        assert (w * h > server_max) == flag, sample_id
    check = results["benchmarks"]["records"]["image_tokens"]
    assert (check["source"], check["requests"], check["differ"], check["unchecked"]) == (
        "prompt",
        6,
        len(above),
        0,
    )
    assert len(above) == 3
    # the first that differs is the probe's own sample: its prompt is the probe's, so exact
    assert check["example"] == {"id": "s0", "size": list(sent), "expected": 299, "observed": 60}


def test_screenshots_under_the_server_limit_differ_in_no_request(
    engine: Engine, limited: Path, tmp_path: Path
) -> None:
    results, lines = _probed(engine, limited, _shots(tmp_path / "data", FITTING), tmp_path / "run")
    assert lines == []
    probe = results["model"]["backend"]["probe"]
    split = probe["image_tokens"]["records"]
    sent = _reference_resize(*SHOTS[FITTING[0]][0], *PRESET_PIXELS)
    assert (split["sample"], split["size"]) == (FITTING[0], list(sent))
    assert split["image_tokens"] == split["expected"] == _tokens(sent) == 24
    check = results["benchmarks"]["records"]["image_tokens"]
    assert (check["requests"], check["differ"], check["ratio"], check["example"]) == (
        len(FITTING),
        0,
        None,
        None,
    )
