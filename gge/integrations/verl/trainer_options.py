"""The trainer options an export prints and puts in its manifest, and the notes that go with them.

verl and EasyR1 read the exported parquet files through these command-line options: the files, the
prompt and response lengths, the reward module, and the validation's decoding (the preset's).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def trainer_options(
    flavor: str,
    out: Path,
    files: Sequence[Path],
    proposer: str,
    k: int,
    min_pixels: int | None,
    max_pixels: int | None,
    max_new_tokens: int = 256,
    prompt_tokens: int = 1024,
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = 0,
) -> list[str]:
    """The trainer's command-line options that use an export (printed and put in the manifest).

    ``prompt_tokens`` is an upper bound of the longest prompt (image tokens, plus the text's UTF-8 bytes:
    a byte-level BPE token holds at least one byte, plus 64 for the chat template's own tokens): both
    trainers drop longer prompts silently (``filter_overlong_prompts``), so ``data.max_prompt_length``
    must reach it (``gge summarize-verl --export`` counts dropped samples as misses).

    The validation's decoding is the preset's: a ``sampling`` preset asks for K responses at its
    ``temperature`` / ``top_p`` / ``top_k`` (``top_k`` -1 when the preset leaves it off), any other
    one response at temperature 0. verl reads ``actor_rollout_ref.rollout.val_kwargs.{n, do_sample,
    temperature, top_p, top_k}`` (``trainer/config/rollout/rollout.yaml``; its agent loop samples at
    ``val_kwargs.temperature``, default 0, whatever ``do_sample`` says); EasyR1 sets every key of
    ``worker.rollout.val_override_config`` that vLLM's ``SamplingParams`` has (``n``, ``temperature``,
    ``top_p``, ``top_k``: ``verl/workers/rollout/vllm_rollout_spmd.py``), its example config
    validating at temperature 0.6.

    Example:
        >>> opts = trainer_options("verl", Path("x"), [Path("x/a.parquet")], "sampling", 4, None, None,
        ...                        temperature=0.7, top_p=0.9)
        >>> [o.split("val_kwargs.")[1] for o in opts if "val_kwargs" in o]
        ['n=4', 'do_sample=True', 'temperature=0.7', 'top_p=0.9', 'top_k=-1']
    """
    reward = out / "gge_reward.py"
    n = k if proposer == "sampling" else 1
    if n > 1:
        sampling = {"temperature": temperature, "top_p": top_p, "top_k": top_k if top_k > 0 else -1}
    else:
        sampling = {"temperature": 0}
    if flavor == "verl":
        listed = ",".join(str(f) for f in files)
        val = "actor_rollout_ref.rollout.val_kwargs"
        return [
            f"data.val_files=[{listed}]",
            "data.prompt_key=prompt",
            "data.image_key=images",
            f"data.max_prompt_length={prompt_tokens}",
            f"custom_reward_function.path={reward}",
            "custom_reward_function.name=compute_score",
            f"{val}.n={n}",
            f"{val}.do_sample={'True' if n > 1 else 'False'}",
            *(f"{val}.{key}={value}" for key, value in sampling.items()),
            f"data.max_response_length={max_new_tokens}",
            "trainer.validation_data_dir=DIR  (then: gge summarize-verl DIR)",
        ]
    return [
        f"data.val_files={out / 'data'}",
        "data.prompt_key=prompt",
        "data.answer_key=answer",
        "data.image_key=images",
        "data.format_prompt=null",
        f"data.max_prompt_length={prompt_tokens}",
        f"data.min_pixels={min_pixels}",
        f"data.max_pixels={max_pixels}",
        f"worker.reward.reward_function={reward}:compute_score_batch",
        f"worker.rollout.val_override_config.n={n}",
        *(f"worker.rollout.val_override_config.{key}={value}" for key, value in sampling.items()),
        f"data.max_response_length={max_new_tokens}",
    ]


def trainer_notes(flavor: str, proposer: str, k: int, rows: int) -> list[str]:
    """What to know when using the printed options (printed under them and put in the manifest).

    Args:
        flavor: ``verl`` or ``easyr1``.
        proposer: The preset's proposer mode.
        k: Its K.
        rows: Samples exported (all benchmarks).
    """
    n = k if proposer == "sampling" else 1
    if flavor == "verl":
        notes = [
            "training on other data in the same run: verl scores training and validation with "
            "custom_reward_function, so gge's compute_score passes rows whose data_source is not gge/... "
            "to verl's default_compute_score, or to your reward given as "
            "custom_reward_function.reward_kwargs.fallback=pkg.module:function (or path/to/file.py:function)",
        ]
    else:
        notes = [
            "training on other data in the same run: EasyR1 scores training and validation with one "
            "reward function, so give your reward of the training data as "
            "worker.reward.reward_function_kwargs.fallback=path/to/file.py:function (a batch function, or "
            'sequential when its module sets REWARD_TYPE = "sequential"); without it a non-gge item raises',
            "EasyR1 dumps no full generations: with trainer.logger including file, it appends "
            "trainer.val_generations_to_log shuffled responses to <trainer.save_checkpoint_path>/"
            "generations.log at each validation, unmarked by step; "
            f"trainer.val_generations_to_log={rows * n} logs every response. gge summarize-verl reads one "
            "validation's blocks of it as a sample of the validation set",
        ]
    if proposer == "sampling" and k > 1:
        notes.append(
            f"the trainer samples all {k} responses (eval's sampling proposer answers greedily first): "
            "the summary's Top-1 is the first sampled response; export a greedy preset for eval's Top-1"
        )
    return notes
