"""The transformers backend: a Qwen-VL family model (a checkpoint folder, or a model in memory).

Batched generation with left padding under ``torch.inference_mode``; the model is put back in its
previous train/eval state afterwards, so the training-time callback can wrap the model being trained.
Sampling asks ``generate`` for ``num_return_sequences`` from one prompt: one call per batch of
samples, never K separate calls (transformers repeats the prompt inside that call's batch).

Requests with equal decoding settings are put in batches in order of their image's token count
(the processor's resized area; ties keep request order), so a batch pays little padding for its
largest image; answers come back in request order. Every answer carries its measured cost
(:class:`~gge.types.CostRecord`): its own unpadded tokens and an equal share of its batch's
wall time, CUDA-synchronised on a GPU.

Example:
    >>> TransformersBackend.__name__
    'TransformersBackend'
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from gge.errors import GgeError
from gge.models.base import Generation, GenerationRequest
from gge.models.hf_loading import image_tokens, load_model, load_processor, merge_size, resized_size
from gge.types import CostRecord

_END_TOKENS = ("<|im_end|>", "<|endoftext|>")
"""Qwen-VL's end-of-turn and end-of-text tokens: they end an answer and are cut from its text."""


def _config_sha256(path: str | None) -> str | None:
    if path is None:
        return None
    cfg = Path(path) / "config.json"
    return hashlib.sha256(cfg.read_bytes()).hexdigest() if cfg.is_file() else None


def _jsonable(value: Any) -> Any:
    """A JSON-ready copy (dict-like objects to dicts, unknown objects to their repr)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _jsonable(v) for k, v in dict(value.items()).items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


class TransformersBackend:
    """A transformers vision-language model and its processor, as a :class:`~gge.models.base.Backend`.

    Args:
        model: A loaded ``*ForConditionalGeneration`` model.
        processor: Its processor (tokenizer with left padding, image processor with the resize limits).
        batch_size: Requests per forward/generate call.
        checkpoint: Where the model was loaded from (recorded), if anywhere.
        extra: More settings to record (dtype, device, pixel limits...).
        group_by_size: Batch requests in order of image-token count (default); False keeps
            request order (what a comparison of the two measures; greedy answers are the same).
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        *,
        batch_size: int = 8,
        checkpoint: str | None = None,
        extra: dict[str, Any] | None = None,
        group_by_size: bool = True,
    ) -> None:
        self.model = model
        self.processor = processor
        self.batch_size = max(1, batch_size)
        self.checkpoint = checkpoint
        self.extra = dict(extra or {})
        self.group_by_size = group_by_size
        self.processor.tokenizer.padding_side = "left"

    @classmethod
    def from_pretrained(
        cls,
        path: str,
        *,
        dtype: str = "auto",
        device: str = "cpu",
        attn_implementation: str | None = None,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        trust_remote_code: bool = False,
        batch_size: int = 8,
        group_by_size: bool = True,
    ) -> TransformersBackend:
        """Load a checkpoint folder.

        Args:
            path: The checkpoint folder.
            dtype: ``auto``, ``bfloat16``, ``float16`` or ``float32``.
            device: ``cpu``, ``cuda``, ``cuda:1``...
            attn_implementation: e.g. ``sdpa`` or ``flash_attention_2`` (default: the library's).
            min_pixels: Image processor's smallest area.
            max_pixels: Image processor's largest area.
            trust_remote_code: Allow code from the checkpoint (off unless asked).
            batch_size: Requests per forward/generate call.
            group_by_size: Batch requests in order of image-token count (see the class).

        Returns:
            The backend.
        """
        model = load_model(
            path,
            dtype=dtype,
            device=device,
            attn_implementation=attn_implementation,
            trust_remote_code=trust_remote_code,
        )
        processor = load_processor(
            path, min_pixels=min_pixels, max_pixels=max_pixels, trust_remote_code=trust_remote_code
        )
        extra = {
            "dtype": dtype,
            "device": device,
            "attn_implementation": attn_implementation,
            "min_pixels": min_pixels,
            "max_pixels": max_pixels,
            "trust_remote_code": trust_remote_code,
        }
        return cls(
            model,
            processor,
            batch_size=batch_size,
            checkpoint=str(path),
            extra=extra,
            group_by_size=group_by_size,
        )

    # -- Backend API ----------------------------------------------------------------------------
    def seen_size(self, width: int, height: int) -> tuple[int, int]:
        """The processor's resized size for a screenshot of this size."""
        return resized_size(self.processor, width, height)

    def _inputs(self, requests: Sequence[GenerationRequest]) -> Any:
        texts = [
            self.processor.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True)
            + (r.prefill or "")
            for r in requests
        ]
        batch = self.processor(
            text=texts, images=[r.image for r in requests], padding=True, return_tensors="pt"
        )
        return batch.to(self.model.device)

    def _run(self, fn: Any) -> Any:
        import torch

        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                return fn()
        finally:
            self.model.train(was_training)

    def _clock(self) -> float:
        """``time.perf_counter()`` once the model's device has finished its queued work (CUDA)."""
        import torch

        device = getattr(self.model, "device", None)
        if getattr(device, "type", None) == "cuda" and torch.cuda.is_available():
            torch.cuda.synchronize(device)
        return time.perf_counter()

    def _by_image_size(self, requests: Sequence[GenerationRequest], idx: Iterable[int]) -> list[int]:
        """``idx`` in order of the image-token count of each request's image, ties in request order.

        The count is the processor's resized area (image tokens times the pixels of one); an image
        processor without the Qwen-VL resize rule is ordered by the image's own area. With
        ``group_by_size`` off, ``idx`` as given.
        """
        idx = list(idx)
        if not self.group_by_size:
            return idx

        def area(i: int) -> int:
            width, height = requests[i].image.size
            try:
                w, h = resized_size(self.processor, width, height)
            except GgeError:
                return width * height
            return w * h

        return sorted(idx, key=lambda i: (area(i), i))

    def _chunks(
        self, requests: Sequence[GenerationRequest], idx: Iterable[int]
    ) -> Iterator[tuple[list[int], Any, float]]:
        """Batches of ``batch_size`` of ``idx``, in :meth:`_by_image_size` order.

        Each is ``(indices, processed inputs, the clock when its processing began)``: a batch's time
        includes its inputs'.
        """
        ordered = self._by_image_size(requests, idx)
        for start in range(0, len(ordered), self.batch_size):
            chunk = ordered[start : start + self.batch_size]
            began = self._clock()
            yield chunk, self._inputs([requests[i] for i in chunk]), began

    def _image_tokens(self, inputs: Any) -> list[int | None]:
        """Each request's image tokens in a processed batch, from its ``image_grid_thw`` row.

        None (unknown) for each where the processor gives no grid of one image per request or
        neither the image processor nor the model config has a merge size.
        """
        rows = len(inputs["input_ids"])
        grid = inputs.get("image_grid_thw") if hasattr(inputs, "get") else None
        if grid is None or len(grid) != rows:
            return [None] * rows
        try:
            merge = merge_size(self.processor, self.model)
        except GgeError:
            return [None] * rows
        return list(image_tokens(grid, merge))

    @staticmethod
    def _answer_length(row: Any, stops: set[int]) -> int:
        """Tokens of one generated row up to and including the first end token (all: none ends it)."""
        ids = row.tolist()
        return next((t + 1 for t, token in enumerate(ids) if token in stops), len(ids))

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate for each request; requests with equal decoding settings share a batch.

        Each decoding group is put in batches of ``batch_size`` in order of image-token count
        (:meth:`_by_image_size`); answers come back in request order.

        Each answer's ``cost`` (stage ``propose``; the policy sets the stage and slots) counts the
        request's own tokens, never its batch's padding:

        - ``input_tokens``: its prompt (the attention mask of its row), image tokens included, once
          per returned sequence (n sequences consume it n times, as n calls would);
          ``image_tokens``: likewise its image's, ``t * h * w // merge**2`` of its ``image_grid_thw``.
        - ``output_tokens``: the tokens of all its returned sequences up to and including the
          token that ended each answer (end of turn, end of text, the generation config's eos);
          the padding after it is not counted, and an answer cut by the budget counts them all.
        - ``cached_tokens``: on the one-prefill path (``greedy_first`` sampling of n sequences,
          :meth:`_greedy_first`), the prompt tokens the n continuations read from the one prefill
          instead of computing: the prompt but its last token is computed once and each continuation
          computes only the last token, so of the ``n * prompt`` consumed ``(n - 1) * (prompt - 1)``
          came from the cache (what the model computed, ``total_tokens``, is one prompt and n last
          tokens); 0 on the plain path (transformers' ``num_return_sequences`` computes the prompt n
          times).
        - ``seconds``: the batch's wall time (inputs processed, generated; CUDA-synchronised on a
          GPU) divided by the requests in it; ``prefill_seconds``: likewise the one-prefill path's
          prefill forward (None on the plain path); ``batch_size``: the requests in the batch.

        ``usage`` keeps its ``prompt_tokens`` / ``completion_tokens`` (completion: the non-padding
        tokens of the returned sequences).
        """
        out: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            key = (
                r.greedy_first,
                r.num_sequences,
                r.do_sample,
                r.temperature,
                r.top_p,
                r.top_k,
                r.repetition_penalty,
                r.max_new_tokens,
            )
            groups.setdefault(key, []).append(i)
        tok = self.processor.tokenizer
        stops = self._stop_ids()
        for (greedy_first, n, do_sample, temperature, top_p, top_k, penalty, max_new), idx in groups.items():
            for chunk, inputs, began in self._chunks(requests, idx):
                kwargs: dict[str, Any] = {
                    "max_new_tokens": max_new,
                    "do_sample": do_sample,
                    "num_return_sequences": n,
                }
                if penalty is not None:  # None: the checkpoint's generation config decides
                    kwargs["repetition_penalty"] = penalty
                # Every decoding knob is explicit: a checkpoint's generation_config.json must not
                # change what gge measures (Qwen2.5-VL ships top_k=1, which makes sampling greedy).
                if do_sample:
                    kwargs.update(temperature=temperature, top_p=top_p, top_k=top_k)
                else:
                    kwargs.update(temperature=None, top_p=None, top_k=None)
                kwargs["pad_token_id"] = (
                    tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
                )
                prompt_len = inputs["input_ids"].shape[1]
                shared = bool(greedy_first and do_sample and n > 1)
                prefill_s: float | None = None
                if shared:
                    new, prefill_s = self._run(
                        lambda inputs=inputs, kwargs=kwargs: self._greedy_first(inputs, kwargs)
                    )
                else:
                    ids = self._run(
                        lambda inputs=inputs, kwargs=kwargs: self.model.generate(**inputs, **kwargs)
                    )
                    new = ids[:, prompt_len:]
                new = new.cpu()
                seconds = (self._clock() - began) / len(chunk)
                images = self._image_tokens(inputs)
                texts = [self.decode(row) for row in new]
                pad = kwargs["pad_token_id"]
                for j, i in enumerate(chunk):
                    rows = range(j * n, (j + 1) * n)
                    completion = sum(int((new[r] != pad).sum()) for r in rows)
                    prompt = int(inputs["attention_mask"][j].sum())
                    prefill = requests[i].prefill or ""
                    image = images[j]
                    cost = CostRecord(
                        "propose",
                        input_tokens=n * prompt,
                        image_tokens=None if image is None else n * image,
                        output_tokens=sum(self._answer_length(new[r], stops) for r in rows),
                        cached_tokens=(n - 1) * (prompt - 1) if shared else 0,
                        seconds=seconds,
                        prefill_seconds=None if prefill_s is None else prefill_s / len(chunk),
                        batch_size=len(chunk),
                    )
                    out[i] = Generation(
                        [prefill + texts[r] if prefill else texts[r].strip() for r in rows],
                        {"prompt_tokens": prompt, "completion_tokens": completion},
                        # cut by the budget: every new token used and none of them ends the answer
                        [len(new[r]) >= max_new and not (stops | {pad}) & set(new[r].tolist()) for r in rows],
                        cost,
                    )
        return [g for g in out if g is not None]

    def _greedy_first(self, inputs: Any, kwargs: dict[str, Any]) -> tuple[Any, float]:
        """Generated ids of a greedy answer then K-1 samples per prompt, from one prefill of each prompt.

        The prompt but its last token goes through the model once; its KV cache then serves a greedy
        continuation (a copy of the cache) and K-1 sampled ones (the cache repeated), which process
        the last token and decode. The image tokens, the bulk of a screenshot prompt, are computed
        once instead of K times. Qwen-VL models keep their multimodal position offsets
        (``rope_deltas``) from the prefill; they are repeated for the sampled rows.

        Returns:
            New token ids, ``(batch * K, T)``, rows of one prompt together, the greedy row first;
            and the seconds of the prefill forward (CUDA-synchronised on a GPU).
        """
        import copy

        import torch
        from transformers import DynamicCache

        k = int(kwargs["num_return_sequences"])
        pad = kwargs["pad_token_id"]
        length = inputs["input_ids"].shape[1]
        prefix = {
            key: value[:, :-1]
            if torch.is_tensor(value) and value.dim() == 2 and value.shape[1] == length
            else value
            for key, value in inputs.items()
        }
        try:
            cache = DynamicCache(config=self.model.config)
        except TypeError:  # transformers 4.x
            cache = DynamicCache()
        name = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        inner: Any = getattr(self.model, "model", None)
        if hasattr(inner, "rope_deltas"):
            inner.rope_deltas = None  # computed afresh for these prompts by the prefill
        began = self._clock()
        self.model(**prefix, **{name: cache}, use_cache=True, logits_to_keep=1)
        prefill_s = self._clock() - began
        deltas = getattr(inner, "rope_deltas", None)
        text = {key: inputs[key] for key in ("input_ids", "attention_mask")}
        common = {
            key: value for key, value in kwargs.items() if key not in ("num_return_sequences", "do_sample")
        }
        greedy_kwargs = {**common, "temperature": None, "top_p": None, "top_k": None}
        greedy = self.model.generate(**text, **{name: copy.deepcopy(cache)}, do_sample=False, **greedy_kwargs)
        cache.batch_repeat_interleave(k - 1)
        if deltas is not None:
            inner.rope_deltas = deltas.repeat_interleave(k - 1, dim=0)
        many = {key: value.repeat_interleave(k - 1, dim=0) for key, value in text.items()}
        sampled = self.model.generate(**many, **{name: cache}, do_sample=True, **common)
        greedy, sampled = greedy[:, length:], sampled[:, length:]
        width = max(greedy.shape[1], sampled.shape[1])
        rows = []
        for b in range(greedy.shape[0]):
            rows.append(greedy[b])
            rows += list(sampled[b * (k - 1) : (b + 1) * (k - 1)])
        out = torch.full((len(rows), width), pad, dtype=greedy.dtype, device=greedy.device)
        for r, row in enumerate(rows):
            out[r, : row.shape[0]] = row
        return out, prefill_s

    def _stop_ids(self) -> set[int]:
        """Token ids that end an answer (end of turn, end of text, the generation config's eos)."""
        tok = self.processor.tokenizer
        ids: set[int] = set()
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        for value in [eos] if isinstance(eos, int) else list(eos or []):
            ids.add(int(value))
        for special in (tok.eos_token, *_END_TOKENS):
            tid = tok.convert_tokens_to_ids(special) if special else None
            if isinstance(tid, int) and tid != getattr(tok, "unk_token_id", None):
                ids.add(tid)
        return ids

    def decode(self, ids: Any) -> str:
        """Generated token ids to text, keeping special tokens that carry answers.

        ``skip_special_tokens=True`` would also delete ``<|box_start|>``/``<|box_end|>`` (special in
        the Qwen-VL tokenizers), turning a Qwen2-VL box into two points; only end-of-turn and padding
        tokens are removed.
        """
        tok = self.processor.tokenizer
        text: str = tok.decode(ids, skip_special_tokens=False)
        for special in {tok.eos_token, tok.pad_token, *_END_TOKENS}:
            if special:
                text = text.replace(special, "")
        return text.strip()

    def token_id(self, word: str) -> int:
        """The id of the first token of ``word`` (the pointwise critic reads its probability)."""
        ids = self.processor.tokenizer.encode(word, add_special_tokens=False)
        if not ids:
            raise ValueError(f"{word!r} encodes to no token")
        return int(ids[0])

    def yes_probability(self, requests: Sequence[GenerationRequest], yes: str, no: str) -> list[float]:
        """P(first answer token = ``yes``) from one forward pass per batch of requests."""
        return self.yes_probability_with_costs(requests, yes, no)[0]

    def yes_probability_with_costs(
        self, requests: Sequence[GenerationRequest], yes: str, no: str
    ) -> tuple[list[float], list[CostRecord]]:
        """:meth:`yes_probability` and what each request cost (stage ``judge``).

        Batched in order of image-token count as :meth:`generate` is, results in request order.
        Each cost has the request's own ``input_tokens`` and ``image_tokens`` (as in
        :meth:`generate`), ``output_tokens`` 0 (one forward, no token generated), and an equal share
        of its batch's wall time.

        Args:
            requests: Prompts with their images.
            yes: The word whose first token's probability is read.
            no: The negative word (not read).

        Returns:
            One probability and one cost per request, in request order.
        """
        import torch

        del no
        yes_id = self.token_id(yes)
        probs: list[float] = [0.0] * len(requests)
        costs: list[CostRecord | None] = [None] * len(requests)
        for chunk, inputs, began in self._chunks(requests, range(len(requests))):
            logits = self._run(lambda inputs=inputs: self.model(**inputs, logits_to_keep=1).logits[:, -1, :])
            p = torch.softmax(logits.float(), dim=-1)[:, yes_id].cpu()
            seconds = (self._clock() - began) / len(chunk)
            images = self._image_tokens(inputs)
            for j, i in enumerate(chunk):
                probs[i] = float(p[j])
                costs[i] = CostRecord(
                    "judge",
                    input_tokens=int(inputs["attention_mask"][j].sum()),
                    image_tokens=images[j],
                    output_tokens=0,
                    seconds=seconds,
                    batch_size=len(chunk),
                )
        return probs, [c for c in costs if c is not None]

    def settings(self) -> dict[str, Any]:
        """Checkpoint, its config hash, library versions and loading options."""
        import torch
        import transformers

        return {
            "backend": "transformers",
            "checkpoint": self.checkpoint,
            "config_sha256": _config_sha256(self.checkpoint),
            "model_class": type(self.model).__name__,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "batch_size": self.batch_size,
            "group_by_size": self.group_by_size,
            **self.extra,
            "image_processor_size": _jsonable(getattr(self.processor.image_processor, "size", None)),
            "generation_config": _jsonable(self.model.generation_config.to_diff_dict()),
        }
