"""The demo proposer/critic: a small torch model that grounds instructions on GUI screenshots.

It is the default model of ``python eval.py`` (trained by RL on the synthetic suite with
:mod:`gge.demo.train`) and a worked example of the :class:`~gge.models.base.Proposer` and
:class:`~gge.models.base.Critic` protocols. It does not read text: it learns what an instruction's
words say about *where* and *what kind* of element to click (a toolbar icon, a checkbox, the star
icon...), which is enough to be far above chance and to give a critic something to choose from.

- **Views.** A screenshot is first brought to a common widget density (the size a 1280x720 desktop
  or a 360-wide phone would have, :func:`widget_scale`), then kept at 1/4 of that (the proposer's
  view) and at 1/2 (the critic's view).
- **Instruction.** Lower-cased words and word pairs, hashed into buckets of a mean embedding bag.
- **Proposer.** A small CNN over the 1/4 view and the pixel coordinates, modulated by the
  instruction (FiLM), gives a logit per cell of 16 normalised pixels. K candidates are K distinct
  cells drawn from the softmax, each at a uniformly random point of its cell that lies on the
  screen, in original pixels, ordered by the proposer's logit (the first is its best guess).
- **Critic.** For each candidate, a 28x28 crop of the 1/2 view (56 normalised pixels around the
  point: is it *on* an element, and which) stacked with a 28x28 crop of the 1/4 view (112 pixels of
  context), through a small CNN modulated by the instruction, gives one score per candidate.
- **Cost.** Each prediction's ledger has a ``propose`` request (its share of the batch's views and
  instruction embeddings, plus its own proposer forward) and a ``judge`` request (one critic forward
  over its K crops), both about slots 0..K-1, in seconds only: it is not a token model.
- **No critic.** ``model.critic=none`` (``critic=False``) switches the critic off: no ``judge``
  request, the candidates unscored in the proposer's order, so every critic pick is the first.

Example:
    >>> import torch
    >>> from PIL import Image
    >>> from gge.types import Box, Sample
    >>> torch.manual_seed(0) and None
    >>> policy = DemoPolicy(DemoNet(), k=3, seed=0)
    >>> s = Sample("b", "0", "", (640, 360), "Click the star icon", Box(0, 0, 9, 9))
    >>> pred = policy.predict_images([s], [Image.new("RGB", (640, 360), "white")])[0]
    >>> len(pred.candidates), all(c.score is not None for c in pred.candidates)
    (3, True)
    >>> [(c.stage, c.slot, c.candidates, c.input_tokens) for c in pred.costs]
    [('propose', 0, 3, None), ('judge', 0, 3, None)]
"""

from __future__ import annotations

import hashlib
import itertools
import re
import time
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from gge.errors import GgeError
from gge.models.base import Judgement, Proposal
from gge.types import Candidate, CostRecord, Prediction, Sample

__all__ = [
    "CELL",
    "DemoConfig",
    "DemoNet",
    "DemoPolicy",
    "View",
    "default_checkpoint",
    "encode_instruction",
    "load_demo_policy",
    "make_view",
    "save_checkpoint",
    "widget_scale",
]

CELL = 16
"""Side of a proposer cell, in normalised pixels (four pixels of the 1/4 view)."""

_FINE = 28  # critic crop side, pixels of the 1/2 view (56 normalised pixels)
_CONTEXT = 28  # critic context side, pixels of the 1/4 view (112 normalised pixels)
_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


def widget_scale(width: int, height: int) -> float:
    """Size of widgets on a screen of this size relative to a 1280x720 desktop (or a 360-wide phone).

    Example:
        >>> widget_scale(1920, 1080), widget_scale(360, 780), widget_scale(800, 600)
        (1.5, 1.0, 1.0)
    """
    if height > width:
        return max(0.5, width / 360)
    return max(1.0, min(width / 1280, height / 720))


@dataclass(frozen=True)
class View:
    """A screenshot as the demo model sees it.

    Attributes:
        small: The 1/4 view, float (3, h, w) in [0, 1].
        half: The 1/2 view, float (3, H, W) in [0, 1].
        scale: Original pixels per normalised pixel (:func:`widget_scale`).
        size: Original (width, height).
    """

    small: torch.Tensor
    half: torch.Tensor
    scale: float
    size: tuple[int, int]

    @property
    def cells(self) -> tuple[int, int]:
        """Proposer cells (columns, rows)."""
        return (self.small.shape[2] + 3) // 4, (self.small.shape[1] + 3) // 4

    @property
    def extent(self) -> tuple[float, float]:
        """The screen's (width, height) in normalised pixels."""
        return self.size[0] / self.scale, self.size[1] / self.scale

    def to_uint8(self) -> View:
        """A compact copy (uint8 pixels) for caches; :meth:`to_float` undoes it."""
        return View(_u8(self.small), _u8(self.half), self.scale, self.size)

    def to_float(self) -> View:
        """Pixels as float in [0, 1] (a no-op for a float view)."""
        if self.small.dtype.is_floating_point:
            return self
        return View(self.small.float() / 255, self.half.float() / 255, self.scale, self.size)


def _u8(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.uint8 else (t * 255).round().clamp(0, 255).to(torch.uint8)


def _tensor(image: Image.Image) -> torch.Tensor:
    return torch.from_numpy(np.asarray(image, dtype=np.float32) / 255).permute(2, 0, 1).contiguous()


def make_view(image: Image.Image, size: tuple[int, int] | None = None) -> View:
    """The demo model's view of a screenshot.

    Args:
        image: The decoded screenshot (possibly downscaled by the data pipeline).
        size: The screenshot's original (width, height) (``Sample.image_size``); default the image's.

    Returns:
        The view; its ``scale`` maps normalised pixels to *original* pixels.
    """
    w, h = size or image.size
    scale = widget_scale(w, h)
    rgb = image.convert("RGB")
    nw, nh = max(1, round(w / scale)), max(1, round(h / scale))
    half = rgb.resize((max(1, nw // 2), max(1, nh // 2)), Image.Resampling.BOX)
    small = half.resize((max(4, nw // 4), max(4, nh // 4)), Image.Resampling.BOX)
    return View(_tensor(small), _tensor(half), scale, (w, h))


def encode_instruction(text: str, buckets: int) -> list[int]:
    """Hashed bucket ids of an instruction's lower-cased words and adjacent word pairs.

    Example:
        >>> ids = encode_instruction("Click the 'Save' button", 1000)
        >>> len(ids), all(0 <= i < 1000 for i in ids)
        (7, True)
    """
    words = _WORD.findall(text.lower())
    grams = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
    return [zlib.crc32(g.encode("utf-8")) % buckets for g in grams] or [0]


@dataclass(frozen=True)
class DemoConfig:
    """Sizes of :class:`DemoNet` (saved with the weights).

    Attributes:
        buckets: Hash buckets of the instruction embedding.
        dim: Instruction embedding size.
        channels: Proposer CNN channels.
        critic_channels: Critic CNN channels.
    """

    buckets: int = 4096
    dim: int = 32
    channels: int = 24
    critic_channels: int = 32


def _conv(cin: int, cout: int, *, stride: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=dilation, dilation=dilation)


class DemoNet(nn.Module):
    """The proposer and critic networks, with their shared instruction embedding.

    Args:
        config: Sizes.
    """

    def __init__(self, config: DemoConfig | None = None) -> None:
        super().__init__()
        self.config = c = config or DemoConfig()
        self.embed = nn.EmbeddingBag(c.buckets, c.dim, mode="mean")
        ch = c.channels
        self.stem = nn.Sequential(_conv(5, 16, stride=2), nn.ReLU(), _conv(16, ch, stride=2), nn.ReLU())
        self.body = nn.Sequential(
            _conv(ch, ch, dilation=2),
            nn.ReLU(),
            _conv(ch, ch, dilation=4),
            nn.ReLU(),
            _conv(ch, ch, dilation=8),
        )
        self.film = nn.Linear(c.dim, 2 * ch)
        self.head = nn.Sequential(nn.ReLU(), _conv(ch, ch), nn.ReLU(), nn.Conv2d(ch, 1, 1))
        cc = c.critic_channels
        self.critic_cnn = nn.Sequential(
            _conv(6, 16), nn.ReLU(), nn.MaxPool2d(2), _conv(16, cc), nn.ReLU(), nn.MaxPool2d(2), _conv(cc, cc)
        )
        self.critic_film = nn.Linear(c.dim, 2 * cc)
        self.critic_head = nn.Sequential(
            nn.ReLU(), nn.Linear(2 * cc + c.dim, cc), nn.ReLU(), nn.Linear(cc, 1)
        )

    def instruction(self, texts: Sequence[str]) -> torch.Tensor:
        """Instruction embeddings, (len(texts), dim)."""
        ids = [encode_instruction(t, self.config.buckets) for t in texts]
        flat = torch.tensor(
            [i for row in ids for i in row], dtype=torch.long, device=self.embed.weight.device
        )
        offsets = torch.tensor(
            [0, *np.cumsum([len(r) for r in ids])[:-1]], dtype=torch.long, device=flat.device
        )
        out: torch.Tensor = self.embed(flat, offsets)
        return out

    def cell_logits(self, small: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Proposer logits over cells, (n, rows, columns): one view, ``n`` instruction embeddings."""
        _, h, w = small.shape
        ys = torch.linspace(-1, 1, h, device=small.device)[:, None].expand(h, w)
        xs = torch.linspace(-1, 1, w, device=small.device)[None, :].expand(h, w)
        x = torch.cat([small, xs[None], ys[None]])[None]
        feats = self.body(self.stem(x))  # the screen's features, computed once for all instructions
        gamma, beta = self.film(q).chunk(2, dim=-1)
        feats = feats * (1 + gamma[:, :, None, None]) + beta[:, :, None, None]
        out: torch.Tensor = self.head(feats)[:, 0]
        return out

    def critic_scores(self, view: View, points: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """Critic scores, (n,), of candidate points (n, 2) in normalised pixels."""
        crops = _crops(view, points)
        feats = self.critic_cnn(crops)
        gamma, beta = self.critic_film(q).chunk(2, dim=-1)
        feats = feats * (1 + gamma[:, :, None, None]) + beta[:, :, None, None]
        mid = feats.shape[-1] // 2
        centre = feats[:, :, mid, mid]
        pooled = feats.mean(dim=(2, 3))
        x = torch.cat([centre, pooled, q.expand(len(points), -1)], dim=1)
        out: torch.Tensor = self.critic_head(x)[:, 0]
        return out


def _crops(view: View, points: torch.Tensor) -> torch.Tensor:
    """(n, 6, 28, 28): a 1/2-view crop and a 1/4-view crop centred on each point (normalised pixels)."""
    out = []
    for source, factor, side in ((view.half, 2, _FINE), (view.small, 4, _CONTEXT)):
        pad = side // 2
        padded = F.pad(source, (pad, pad, pad, pad))
        _, h, w = source.shape
        cx = (points[:, 0] / factor).long().clamp(0, w - 1)
        cy = (points[:, 1] / factor).long().clamp(0, h - 1)
        offsets = torch.arange(side)
        rows = (cy[:, None] + offsets[None, :])[:, :, None]  # (n, side, 1)
        cols = (cx[:, None] + offsets[None, :])[:, None, :]  # (n, 1, side)
        out.append(padded[:, rows, cols].permute(1, 0, 2, 3))  # (n, 3, side, side)
    return torch.cat(out, dim=1)


def sample_cells(
    logits: torch.Tensor, k: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw up to ``k`` distinct cells from ``softmax(logits)``, without replacement.

    Returns:
        The flat cell indices (in draw order) and the log-probability of each draw under the
        renormalised distribution it was drawn from (the Plackett-Luce log-likelihood terms).
    """
    flat = logits.flatten()
    n = min(k, flat.numel())
    idx = torch.multinomial(
        torch.softmax(flat.detach().float(), 0), n, replacement=False, generator=generator
    )
    logp = torch.log_softmax(flat, 0)
    # log P(i-th draw) = log p_i - log(mass left after the earlier draws), the latter as a
    # logsumexp over the cells not drawn yet (stable when the earlier draws hold almost all the mass)
    drawn = torch.zeros((n, flat.numel()), dtype=torch.bool, device=flat.device)
    for i in range(1, n):
        drawn[i, idx[:i]] = True
    left = torch.logsumexp(logp.expand(n, -1).masked_fill(drawn, float("-inf")), dim=1)
    return idx, logp[idx] - left


def cell_points(
    idx: torch.Tensor, columns: int, jitter: torch.Tensor, extent: tuple[float, float] | None = None
) -> torch.Tensor:
    """Points (n, 2) in normalised pixels: cell corners plus ``jitter`` (n, 2) in [0, 1) of the cell.

    Args:
        idx: Flat cell indices.
        columns: Cells per row.
        jitter: Position inside each cell, as fractions of its side.
        extent: The screen's (width, height) in normalised pixels: the last column and row of cells,
            which may reach past the screen's edge, are shrunk to the part that lies on the screen.
    """
    rows = torch.div(idx, columns, rounding_mode="floor")
    cols = idx - rows * columns
    corner = torch.stack([cols, rows], dim=1).float() * CELL
    side = torch.full_like(corner, float(CELL))
    if extent is not None:
        side = torch.minimum(side, (torch.tensor(extent) - corner).clamp(min=1e-3))
    return corner + jitter * side


class DemoPolicy:
    """The demo model as a gge policy, both a :class:`~gge.models.base.Proposer` and a ``Critic``.

    Args:
        net: The networks.
        k: Candidates per sample.
        seed: Seed of the candidate draws (each sample's draw is seeded by this and its id, so a
            sample gets the same candidates in any batch, on any rank, on a rerun).
        source: Where the weights came from (recorded in the settings).
        critic: Run its critic (default); False (``model.critic=none``): no ``judge`` stage, the
            candidates unscored in the proposer's order, so every critic pick is the first.
    """

    needs_images = True
    score_kind: str | None = "score"
    """The critic's scores are logits (higher is better), not probabilities: calibration reports AUROC."""
    proposer_mode: str | None = None
    """None: its K candidates are distinct cells drawn without replacement, not exchangeable answers."""
    critic_mode: str | None = None
    """None: its critic is its own network (the scores read as ``score_kind`` says)."""

    def __init__(
        self, net: DemoNet, *, k: int = 5, seed: int = 0, source: str = "", critic: bool = True
    ) -> None:
        if k < 1:
            raise GgeError(f"k must be at least 1, got {k}")
        self.net = net
        self.k = k
        self.seed = seed
        self.source = source
        self.critic = critic
        if not critic:
            self.score_kind = None  # nothing is scored

    def _generator(self, sample: Sample) -> torch.Generator:
        key = f"{self.seed}/{sample.benchmark}/{sample.id}".encode()
        return torch.Generator().manual_seed(int.from_bytes(hashlib.sha256(key).digest()[:8], "little") >> 1)

    @torch.no_grad()
    def _propose_one(self, sample: Sample, view: View, q: torch.Tensor) -> torch.Tensor:
        """Candidate points (k, 2) in normalised pixels, best proposer logit first."""
        logits = self.net.cell_logits(view.small, q)[0]
        gen = self._generator(sample)
        idx, _ = sample_cells(logits, self.k, gen)
        idx = idx[torch.argsort(logits.flatten()[idx], descending=True, stable=True)]
        jitter = torch.rand((len(idx), 2), generator=gen)
        return cell_points(idx, logits.shape[1], jitter, view.extent)

    @torch.no_grad()
    def _inputs(
        self, samples: Sequence[Sample], images: Sequence[Image.Image]
    ) -> tuple[list[View], torch.Tensor]:
        """Each screenshot's view and each instruction's embedding (one row per sample)."""
        views = [make_view(im, s.image_size) for s, im in zip(samples, images, strict=True)]
        return views, self.net.instruction([s.instruction for s in samples])

    def _timed_inputs(
        self, samples: Sequence[Sample], images: Sequence[Image.Image]
    ) -> tuple[list[View], torch.Tensor, float]:
        """:meth:`_inputs` and each sample's share of the seconds they took."""
        began = time.perf_counter()
        views, q = self._inputs(samples, images)
        return views, q, (time.perf_counter() - began) / max(1, len(samples))

    def propose(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Proposal]:
        """K candidates per sample, in original pixels (see the module docstring), with their cost."""
        views, q, share = self._timed_inputs(samples, images)
        out = []
        for i, (sample, view) in enumerate(zip(samples, views, strict=True)):
            began = time.perf_counter()
            points = self._propose_one(sample, view, q[i : i + 1])
            cost = _cost("propose", share + time.perf_counter() - began, len(samples), len(points))
            cands = _candidates(view, points)
            out.append(Proposal(cands, raw=" ".join(c.raw for c in cands), costs=(cost,)))
        return out

    def rank(
        self, samples: Sequence[Sample], images: Sequence[Image.Image], proposals: Sequence[Proposal]
    ) -> list[Judgement]:
        """One critic score per candidate (higher is better), with the critic forward's cost.

        The cost's seconds are the sample's share of the views and its own critic forward. With the
        critic off, every score is None and nothing is run or recorded.
        """
        if not self.critic:
            return [Judgement(tuple(None for _ in prop.candidates)) for prop in proposals]
        views, q, share = self._timed_inputs(samples, images)
        out = []
        with torch.no_grad():
            for i, (view, prop) in enumerate(zip(views, proposals, strict=True)):
                pts = [c.point for c in prop.candidates if c.point is not None]
                if not pts:
                    out.append(Judgement(tuple(None for _ in prop.candidates)))
                    continue
                began = time.perf_counter()
                norm = torch.tensor(pts, dtype=torch.float32) / view.scale
                scores = iter(self.net.critic_scores(view, norm, q[i : i + 1]).tolist())
                cost = _cost("judge", share + time.perf_counter() - began, 1, len(prop.candidates))
                out.append(
                    Judgement(
                        tuple(None if c.point is None else next(scores) for c in prop.candidates),
                        costs=(cost,),
                    )
                )
        return out

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        """Propose and rank (one view per screenshot, shared by both stages).

        Each prediction's ``costs``: a ``propose`` request (its share of the batch's views and
        instruction embeddings plus its own proposer forward; ``batch_size`` the samples) and a
        ``judge`` request (its critic forward over the K crops, ``batch_size`` 1), both about slots
        0..K-1; seconds only (not a token model). With the critic off, only the ``propose`` request,
        and the candidates unscored.
        """
        views, q, share = self._timed_inputs(samples, images)
        out = []
        for i, (sample, view) in enumerate(zip(samples, views, strict=True)):
            with torch.no_grad():
                began = time.perf_counter()
                points = self._propose_one(sample, view, q[i : i + 1])
                proposed = time.perf_counter()
                scores = self.net.critic_scores(view, points, q[i : i + 1]).tolist() if self.critic else None
                judged = time.perf_counter()
            cands = _candidates(view, points, scores)
            costs: tuple[CostRecord, ...] = (
                _cost("propose", share + proposed - began, len(samples), len(points)),
            )
            if self.critic:
                costs += (_cost("judge", judged - proposed, 1, len(points)),)
            raw = " ".join(c.raw for c in cands)
            out.append(Prediction(sample.benchmark, sample.id, cands, raw=raw, costs=costs))
        return out

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """Decode the screenshots and :meth:`predict_images`."""
        from gge.benchmarks.images import decode_image

        return self.predict_images(samples, [decode_image(s) for s in samples])

    def max_candidates(self) -> int | None:
        """None: it gives the K it is asked for, the run's."""
        return None

    def device_modules(self) -> tuple[Any, ...]:
        """None: its network stays on the CPU, where it makes its tensors."""
        return ()

    def settings(self) -> dict[str, Any]:
        """The reproducibility record: weights, sizes and sampling settings."""
        digest = hashlib.sha256()
        for name, tensor in sorted(self.net.state_dict().items()):
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().numpy().tobytes())
        return {
            "model": "gge-demo",
            "checkpoint": self.source,
            "weights_sha256": digest.hexdigest()[:16],
            "config": asdict(self.net.config),
            "k": self.k,
            "seed": self.seed,
            "critic": "demo" if self.critic else "none",
        }


def _cost(stage: str, seconds: float, batch: int, candidates: int) -> CostRecord:
    """A demo request's cost: seconds only, about slots 0..``candidates``-1."""
    return CostRecord(stage, seconds=seconds, batch_size=batch, slot=0, candidates=candidates)


def _candidates(
    view: View, points: torch.Tensor, scores: Sequence[float] | None = None
) -> tuple[Candidate, ...]:
    """Candidates in original pixels (kept inside the image) from points in normalised pixels."""
    w, h = view.size
    out = []
    for i, (x, y) in enumerate(points.tolist()):
        point = (min(x * view.scale, w - 0.5), min(y * view.scale, h - 0.5))
        out.append(Candidate(point, None if scores is None else scores[i], f"({x:.1f}, {y:.1f})"))
    return tuple(out)


def default_checkpoint() -> Path:
    """The trained demo checkpoint shipped inside the package."""
    return Path(__file__).parent.parent / "demo" / "checkpoints" / "demo_policy.pt"


def save_checkpoint(net: DemoNet, path: str | Path, meta: dict[str, Any] | None = None) -> Path:
    """Write the weights, sizes and ``meta`` (training settings and scores) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    torch.save(
        {"format": "gge-demo/1", "config": asdict(net.config), "state_dict": state, "meta": meta or {}}, path
    )
    return path


def load_demo_policy(
    path: str | Path | None = None, *, k: int = 5, seed: int = 0, critic: bool = True
) -> DemoPolicy:
    """The demo policy from a checkpoint written by :func:`save_checkpoint` (default: the shipped one).

    ``critic=False`` switches its critic off (``model.critic=none``, see :class:`DemoPolicy`).

    Raises:
        GgeError: naming the file, when it is missing or not a demo checkpoint.
    """
    path = Path(path) if path is not None else default_checkpoint()
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "not found"
        raise GgeError(f"demo checkpoint {what}: {path}")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for a bad file
        # torch's message is advice about weights_only, which is not the problem here
        raise GgeError(
            f"{path}: not a gge demo checkpoint: torch.load cannot read it ({type(e).__name__}; "
            "not a torch checkpoint, or a damaged one)"
        ) from None
    if not isinstance(blob, dict) or blob.get("format") != "gge-demo/1":
        raise GgeError(f"{path}: not a gge demo checkpoint (no 'format': 'gge-demo/1')")
    try:
        net = DemoNet(DemoConfig(**blob["config"]))
        net.load_state_dict(blob["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise GgeError(f"{path}: weights or sizes do not fit the demo model: {e!r}") from None
    net.eval()
    return DemoPolicy(net, k=k, seed=seed, source=str(path), critic=critic)
