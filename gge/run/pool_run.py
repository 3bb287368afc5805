"""A critic-only run on frozen candidate pools (``pool.source=synthetic|run|file``).

:func:`plan_pool` builds (or reads, and checks) one pool per sample (:mod:`gge.scoring.pools`), writes
it to ``output_dir/pool.jsonl`` with its recipe (``pool.json``), and turns the run's samples into the
*asks*: each pool once (``pool.orders=none``, the sample's own id) or once per cyclic order
(``rotate``: ids ``<id>~<k>``, the list shifted by k). :class:`PoolPolicy` wraps the model's policy:
its proposer is never asked; each ask's candidates are the pool's points in the ask's order, and the
model's own critic (``rank``: listwise, pointwise, the demo critic) scores them through the same
backends as any run (in-process batches, the endpoint's request window). So the run's Top-1
(``critic`` strategy) is the critic's accuracy on the pool, Oracle@K is 100% by construction, and the
calibration entry is the critic's on gold against distractors. :func:`pool_extras` adds the pool's
figures (:mod:`gge.scoring.pool_figures`) to each benchmark's entry as ``critic_pool``.

A sample with no pool (a refusal, a degenerate target) is left out and counted under ``skipped``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig
from PIL import Image

from gge.benchmarks.images import open_image
from gge.benchmarks.loading import BenchmarkSet
from gge.errors import GgeError
from gge.models.base import Proposal
from gge.models.occlusion import views_cover
from gge.run.predlog import read_records
from gge.scoring.analysis import target_area_fraction
from gge.scoring.pool_figures import Ask, pool_figures
from gge.scoring.pools import (
    NESTED,
    PoolEntry,
    PoolRecipe,
    check_entry,
    orders,
    pool_from_points,
    shuffled_labels,
    sub_pools,
    synthetic_pool,
    why_no_pool,
)
from gge.scoring.selection import select
from gge.types import Candidate, Prediction, Sample, SampleResult

POOL_FILE = "pool.jsonl"
RECIPE_FILE = "pool.json"
SEPARATOR = "~"
"""Between a sample's id and its order's number in an ask's id (``rotate``)."""


@dataclass(frozen=True)
class PoolPlan:
    """The pools of a run and its asks.

    Attributes:
        recipe: How the pools were made.
        digests: Per benchmark, the sha256 of its lines of ``pool.jsonl`` (what ``gge compare`` pairs on).
        asks: Ask ``(benchmark, id)`` -> its pool and order.
        skipped: Per benchmark, the samples with no pool by why.
        labels: ``pool.labels=shuffled``: each ask's marker numbers (shown position -> number).
        sub_asks: ``pool.nested``: the asks of nested sub-pools (the other figures leave them out).
        text: ``pool.jsonl``: every pool of the samples read (whatever ``max_samples`` asks).
    """

    recipe: PoolRecipe
    digests: Mapping[str, str]
    asks: Mapping[tuple[str, str], tuple[PoolEntry, tuple[int, ...]]]
    skipped: Mapping[str, Mapping[str, list[str]]]
    labels: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    sub_asks: frozenset[tuple[str, str]] = frozenset()
    text: str = ""

    def record(self, benchmark: str) -> dict[str, Any]:
        """What results.json records of the pool (``critic_pool.pool``)."""
        skipped = self.skipped.get(benchmark, {})
        return {
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self.recipe).items()},
            "digest": self.digests.get(benchmark, ""),
            "file": POOL_FILE,
            "skipped": {why: len(ids) for why, ids in skipped.items()},
        }


def recipe_of(cfg: DictConfig) -> PoolRecipe | None:
    """The run's pool recipe (``pool.*``), or None when the run asks no pool."""
    p = cfg.pool
    if p.source is None:
        return None
    if p.source in ("run", "file") and not p.path:
        raise GgeError(
            f"pool.source={p.source} reads pool.path=FILE (a run's predictions.jsonl, or a pool file)"
        )
    return PoolRecipe(
        str(p.source),
        int(p.n),
        tuple(str(k) for k in p.kinds),
        tuple(float(d) for d in p.near),
        int(cfg.seed if p.seed is None else p.seed),
        str(p.orders),
        None if p.path is None else str(p.path),
        str(p.labels),
        bool(p.nested),
    )


def pool_fingerprint(cfg: DictConfig) -> dict[str, Any] | None:
    """What of the pool changes a run's predictions (its recipe, and the content of a file it reads)."""
    recipe = recipe_of(cfg)
    if recipe is None:
        return None
    out: dict[str, Any] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(recipe).items()}
    if recipe.path is not None:
        out["path_sha256"] = hashlib.sha256(Path(recipe.path).read_bytes()).hexdigest()
    return out


def _entries(
    recipe: PoolRecipe, samples: Mapping[str, Sequence[Sample]]
) -> tuple[list[PoolEntry], dict[str, Any]]:
    """The pools of every sample, and the samples without one (per benchmark, by why)."""
    entries: list[PoolEntry] = []
    skipped: dict[str, dict[str, list[str]]] = {}
    by_key = {(s.benchmark, s.id): s for group in samples.values() for s in group}
    if recipe.source == "synthetic":
        for name, group in samples.items():
            got, why = synthetic_pool(group, recipe.n, recipe.kinds, recipe.seed, recipe.near)
            entries.extend(got)
            if why:
                skipped[name] = why
        return entries, skipped
    assert recipe.path is not None
    path = Path(recipe.path)
    if not path.is_file():
        raise GgeError(f"pool.path={path}: no such file")
    if recipe.source == "run":
        records = read_records([path], repair=False)
        if not any(key in records for key in by_key):
            raise GgeError(
                f"pool.path={path}: no line for any sample read (another run's data or benchmarks?)"
            )
        for key, s in by_key.items():
            rec = records.get(key)
            points = [
                tuple(p)
                for p in (rec or {}).get("candidates") or []
                if isinstance(p, list) and len(p) == 2 and all(isinstance(v, (int, float)) for v in p)
            ]
            reason = "not in the run" if rec is None else why_no_pool(s) or "no point proposed on the screen"
            entry = None if rec is None else pool_from_points(s, points, recipe.n, recipe.seed)
            if entry is None:
                skipped.setdefault(s.benchmark, {}).setdefault(reason, []).append(s.id)
            else:
                entries.append(entry)
        return entries, skipped
    seen: set[tuple[str, str]] = set()
    for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        where = f"{path}:{i}"
        try:
            line = json.loads(text)
        except ValueError as e:
            raise GgeError(f"{where}: not a JSON line ({e})") from None
        if not isinstance(line, dict):
            raise GgeError(f"{where}: not a JSON object")
        key = (str(line.get("benchmark")), str(line.get("id")))
        if key in seen:
            raise GgeError(f"{where}: a second pool for {key[0]} {key[1]}")
        seen.add(key)
        if key[0] in samples:
            entries.append(check_entry(line, by_key.get(key), where))
    for s in by_key.values():
        if (s.benchmark, s.id) not in seen:
            skipped.setdefault(s.benchmark, {}).setdefault("not in the pool file", []).append(s.id)
    return entries, skipped


def build_plan(
    recipe: PoolRecipe,
    asked: Mapping[str, Sequence[Sample]],
    universe: Mapping[str, Sequence[Sample]] | None = None,
) -> tuple[dict[str, list[Sample]], PoolPlan]:
    """The pools of the samples asked, and their asks (``pool.jsonl``'s text in the plan).

    Args:
        recipe: How the pools are made.
        asked: The samples to ask, by benchmark.
        universe: Every sample the pools are drawn among (other elements on a screenshot), by
            benchmark; default ``asked``. A training callback's fixed subset draws among the whole
            benchmark, so its pools do not depend on which samples the subset holds.

    Returns:
        The asks by benchmark (each pool once, or once per order), and the plan.

    Raises:
        GgeError: A pool file's line the data contradicts (naming file and line), no pool at all.
    """
    entries, skipped = _entries(recipe, universe if universe is not None else asked)
    wanted = {(s.benchmark, s.id) for group in asked.values() for s in group}
    if not any((e.benchmark, e.id) in wanted for e in entries):
        raise GgeError(f"pool.source={recipe.source}: no sample of {', '.join(asked)} has a pool")
    lines = {
        name: [json.dumps(e.record(), separators=(",", ":")) + "\n" for e in entries if e.benchmark == name]
        for name in asked
    }
    text = "".join(line for name in asked for line in lines[name])
    digests = {name: hashlib.sha256("".join(lines[name]).encode("utf-8")).hexdigest() for name in asked}
    by_key = {(e.benchmark, e.id): e for e in entries}
    asks: dict[tuple[str, str], tuple[PoolEntry, tuple[int, ...]]] = {}
    labels: dict[tuple[str, str], tuple[str, ...]] = {}
    sub_asks: set[tuple[str, str]] = set()
    samples: dict[str, list[Sample]] = {}
    for name, group in asked.items():
        samples[name] = []
        for s in group:
            full = by_key.get((s.benchmark, s.id))
            if full is None:
                continue
            for entry in [*(sub_pools(full) if recipe.nested else []), full]:
                sid = entry.id  # the sample's, or a nested sub-pool's (<id>#<m>)
                for k, order in enumerate(orders(entry, recipe.orders)):
                    ask_id = sid if recipe.orders == "none" else f"{sid}{SEPARATOR}{k}"
                    if (s.benchmark, ask_id) in asks:
                        raise GgeError(
                            f"{s.benchmark}: the ask id {ask_id!r} is also another sample's ask (ids with "
                            f"'{SEPARATOR}' or '{NESTED}'): ask without pool.orders=rotate or pool.nested"
                        )
                    samples[name].append(replace(s, id=ask_id))
                    asks[(s.benchmark, ask_id)] = (entry, order)
                    if entry is not full:
                        sub_asks.add((s.benchmark, ask_id))
                    if recipe.labels == "shuffled":
                        key = f"{s.benchmark}:{ask_id}"
                        labels[(s.benchmark, ask_id)] = shuffled_labels(len(order), recipe.seed, key)
    asked_skipped: dict[str, dict[str, list[str]]] = {}
    for name, by_why in skipped.items():
        for why, ids in by_why.items():
            if left := [i for i in ids if (name, i) in wanted]:
                asked_skipped.setdefault(name, {})[why] = left
    return samples, PoolPlan(recipe, digests, asks, asked_skipped, labels, frozenset(sub_asks), text)


def write_pool(policy: object, output_dir: Path) -> None:
    """Write a pool run's ``pool.jsonl`` and ``pool.json`` (once the output folder is locked and checked)."""
    if not isinstance(policy, PoolPolicy):
        return
    plan = policy.plan
    (output_dir / POOL_FILE).write_text(plan.text, encoding="utf-8")
    doc = {**plan.record(""), "digests": dict(plan.digests), "skipped": plan.skipped}
    doc.pop("digest", None)
    (output_dir / RECIPE_FILE).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def headline_results(policy: object, results: Sequence[SampleResult]) -> list[SampleResult]:
    """The results a benchmark's headline is computed on: a pool run's nested sub-pool asks left out."""
    if not isinstance(policy, PoolPolicy) or not policy.plan.sub_asks:
        return list(results)
    return [r for r in results if (r.benchmark, r.id) not in policy.plan.sub_asks]


def plan_pool(
    cfg: DictConfig, loaded: BenchmarkSet, output_dir: Path, out: TextIO
) -> tuple[BenchmarkSet, PoolPlan] | None:
    """The run's pools and its samples turned into asks (None: no pool).

    Args:
        cfg: The run's configuration.
        loaded: Its benchmarks.
        output_dir: Where ``pool.jsonl`` and ``pool.json`` go.
        out: Where the pool's line is said.

    Returns:
        The benchmarks with their asks in place of their samples, and the plan. The pools are drawn
        among every sample read (``max_samples`` asks the first, and moves no pool); the files are
        written by :func:`write_pool`, once the output folder is locked.

    Raises:
        GgeError: A pool file's line that the data contradicts (naming file and line), no pool at all.
    """
    recipe = recipe_of(cfg)
    if recipe is None:
        return None
    universe = {name: ld.samples for name, ld in loaded.loads.items()}  # max_samples moves no pool
    samples, plan = build_plan(recipe, loaded.samples, universe)
    n_asks = sum(len(g) for g in samples.values())
    pools = len({(e.benchmark, e.id) for key, (e, _) in plan.asks.items() if key not in plan.sub_asks})
    left = sum(len(ids) for by_why in plan.skipped.values() for ids in by_why.values())
    print(
        f"pool ({recipe.source}, {recipe.n} candidates, orders {recipe.orders}): {pools} pools, "
        f"{n_asks} critic asks, no proposer requests; {left} samples without a pool; "
        f"{output_dir / POOL_FILE}",
        file=out,
    )
    return replace(loaded, samples=samples), plan


def _critic_mode(inner: Any, asker: str) -> str | None:
    """The critic mode of the model a wrapper asks (None: not declared); refuses a model with no critic.

    Args:
        inner: The model's policy.
        asker: What asks its critic (for the message: ``a pool``, ``critic_rescue``).
    """
    if not callable(getattr(inner, "rank", None)):
        raise GgeError(
            f"{asker} asks the model's critic, and {type(inner).__name__} has none (model=replay?)"
        )
    critic = getattr(inner, "critic_mode", None) or getattr(getattr(inner, "settings_", None), "critic", None)
    if critic == "none" or getattr(inner, "critic", None) is False:  # the demo policy's switch
        raise GgeError(f"{asker} asks the model's critic: model.critic=none has none (listwise or pointwise)")
    return str(critic) if critic is not None else None


def _critic_pick(candidates: Sequence[Candidate], size: tuple[int, int] | None) -> int | None:
    """The index of the critic's pick (the ``critic`` strategy's rule), or None with no candidate."""
    if not candidates:
        return None
    pick = select("critic", candidates, size or (1, 1))
    return next((i for i, c in enumerate(candidates) if c is pick), None)


def _screenshots(samples: Sequence[Sample]) -> list[Image.Image]:
    """The samples' screenshots, decoded (a policy asked by ``predict`` reads them itself)."""
    images = []
    for s in samples:
        with open_image(s.image_path) as im:
            images.append(im.convert("RGB"))
    return images


class PoolPolicy:
    """A model's policy whose proposer is a frozen pool: only its critic is asked.

    Every member but the proposer's is the model's own (its settings, backends, request window).
    """

    proposer_mode = None  # no proposer: no pass@k over the pool's candidates

    def __init__(self, inner: Any, plan: PoolPlan) -> None:
        critic = _critic_mode(inner, "a pool")
        refine = getattr(getattr(inner, "settings_", None), "refine", "none")
        if plan.labels and critic != "listwise":
            raise GgeError(
                "pool.labels=shuffled numbers a listwise critic's markers: this critic is not listwise"
            )
        if refine != "none":
            raise GgeError(
                "a pool asks the critic alone: model.refine=zoom re-asks the proposer (refine=none)"
            )
        self._inner = inner
        self.plan = plan

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def max_candidates(self) -> int:
        """The most candidates of a pool."""
        return max(len(e.points) for e, _ in self.plan.asks.values())

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """The critic's scores on each ask's pool (screenshots read from their files)."""
        return self.predict_images(samples, _screenshots(samples))

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        """The critic's scores on each ask's pool, in the ask's order."""
        proposals = []
        for s in samples:
            entry, order = self.plan.asks[(s.benchmark, s.id)]
            proposals.append(Proposal(tuple(Candidate(entry.points[i]) for i in order)))
        if self.plan.labels:  # the label probe: another number on each marker, read back to its candidate
            shown = [self.plan.labels[(s.benchmark, s.id)] for s in samples]
            judgements = self._inner.rank(samples, images, proposals, labels=shown)
        else:
            judgements = self._inner.rank(samples, images, proposals)
        return [
            Prediction(
                s.benchmark,
                s.id,
                tuple(Candidate(c.point, score) for c, score in zip(p.candidates, j.scores, strict=True)),
                critic_format_error=j.format_error,
                critic_raw=j.raw,
                costs=tuple(j.costs),
            )
            for s, p, j in zip(samples, proposals, judgements, strict=True)
        ]


class RescuePolicy:
    """A model's policy whose critic is asked again where its proposer missed (``critic_rescue=true``).

    Each sample is answered as usual. Where some candidates are points and none hits the target, the
    critic is asked once more on those candidates with a gold point (inside the target, seeded, as a
    pool from a run puts it: :func:`gge.scoring.pools.pool_from_points`) in place of one, and the
    prediction records whether it picked the gold (``rescue``). That second ask changes nothing
    scored and is not in the cost ledger. Every other member is the model's own.
    """

    def __init__(self, inner: Any, seed: int) -> None:
        _critic_mode(inner, "critic_rescue")
        self._inner = inner
        self.seed = seed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def predict(self, samples: Sequence[Sample]) -> list[Prediction]:
        """Each sample's answer, and the critic's rescue where the proposer missed (screenshots read)."""
        return self.predict_images(samples, _screenshots(samples))

    def predict_images(self, samples: Sequence[Sample], images: Sequence[Image.Image]) -> list[Prediction]:
        """Each sample's answer, and the critic's rescue where the proposer missed."""
        out = list(self._inner.predict_images(samples, images))
        asked: list[tuple[int, PoolEntry]] = []
        for i, (s, p) in enumerate(zip(samples, out, strict=True)):
            points = [c.point for c in p.candidates if c.point is not None and c.parsed]
            if not points or p.server_error is not None or any(s.region.contains(*pt) for pt in points):
                continue
            entry = pool_from_points(s, points, len(points), self.seed)
            if entry is not None:
                asked.append((i, entry))
        if not asked:
            return out
        proposals = [Proposal(tuple(Candidate(pt) for pt in e.points)) for _, e in asked]
        judged = self._inner.rank([samples[i] for i, _ in asked], [images[i] for i, _ in asked], proposals)
        for (i, entry), proposal, j in zip(asked, proposals, judged, strict=True):
            scored = [
                Candidate(c.point, score) for c, score in zip(proposal.candidates, j.scores, strict=True)
            ]
            picked = _critic_pick(scored, samples[i].image_size)
            out[i] = replace(out[i], rescue=picked is not None and picked in entry.gold)
        return out


def rescue_figures(results: Sequence[SampleResult]) -> dict[str, Any] | None:
    """``critic_rescue`` of an ordinary run's entry (None: not asked).

    Over the samples whose candidates all missed: how often the critic picked the target once offered.
    """
    asked = [r.rescue for r in results if r.rescue is not None]
    if not asked:
        return None
    return {"asked": len(asked), "rescued": sum(asked), "rate": round(100 * sum(asked) / len(asked), 4)}


COVER_BUCKETS: tuple[tuple[str, float], ...] = (
    ("none", 0.0),
    ("under 25%", 0.25),
    ("25-50%", 0.5),
    ("over 50%", 1.0),
)
"""Occlusion buckets: the share of the target's box the critic's markers hide, at most the bound."""


def occlusion(policy: object, results: Sequence[SampleResult]) -> dict[str, Any] | None:
    """How much of each target a marking critic's markers hid, and the critic's Top-1 by how much.

    Args:
        policy: The run's policy (a :class:`PoolPolicy`'s model is looked through).
        results: One benchmark's results.

    Returns:
        ``{critic, samples, mean_cover, buckets: {name: {samples, top1}}}`` over the samples the critic
        judged (two or more point candidates, a target with a box), or None when the critic draws no
        markers (the demo critic, none).
    """
    inner = policy._inner if isinstance(policy, (PoolPolicy, RescuePolicy)) else policy
    settings = getattr(inner, "settings_", None)
    critic = getattr(settings, "critic", None)
    backend = getattr(inner, "critic_backend", None)
    if critic not in ("listwise", "pointwise") or backend is None or settings is None:
        return None
    covers: list[tuple[float, bool]] = []
    for r in results:
        box = r.region.pixel_box() if r.region is not None else None
        points = [c.point for c in r.candidates if c.point is not None]
        if box is None or r.image_size is None or len(points) < 2:
            continue
        w, h = r.image_size
        vw, vh = backend.seen_size(w, h)
        sx, sy = vw / w, vh / h
        shown = [(x * sx, y * sy) for x, y in points]
        cover = views_cover(
            (vw, vh), shown, settings.markers, (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy), critic
        )
        covers.append((cover, bool(r.top1.get("critic"))))
    buckets: dict[str, list[bool]] = {}
    for cover, hit in covers:
        name = next(n for n, most in COVER_BUCKETS if cover <= most)
        buckets.setdefault(name, []).append(hit)
    return {
        "critic": critic,
        "samples": len(covers),
        "mean_cover": None if not covers else round(100 * sum(c for c, _ in covers) / len(covers), 4),
        "buckets": {
            n: {"samples": len(buckets[n]), "top1": round(100 * sum(buckets[n]) / len(buckets[n]), 4)}
            for n, _ in COVER_BUCKETS
            if n in buckets
        },
    }


def critic_extras(policy: object, name: str, results: Sequence[SampleResult]) -> dict[str, Any]:
    """A benchmark entry's critic figures: ``critic_pool`` (a pool run), ``occlusion`` (a marking critic)."""
    out = pool_extras(policy, name, results)
    rescued = rescue_figures(results)
    if rescued is not None:
        out["critic_rescue"] = rescued
    covered = occlusion(policy, results)
    if covered is not None:
        out["occlusion"] = covered
    return out


def pool_extras(policy: object, name: str, results: Sequence[SampleResult]) -> dict[str, Any]:
    """``critic_pool`` of a benchmark's entry: the pool's record and the critic's figures ({}: no pool)."""
    if not isinstance(policy, PoolPolicy):
        return {}
    plan = policy.plan
    asks = []
    for r in results:
        key = (r.benchmark, r.id)
        entry, order = plan.asks[key]
        asks.append(
            Ask(
                entry,
                order,
                _critic_pick(r.candidates, r.image_size),
                target_area_fraction(r) or 0.0,
                r.critic_format_error,
                plan.labels.get(key),
                key in plan.sub_asks,
            )
        )
    return {"critic_pool": {"pool": plan.record(name), **pool_figures(asks, plan.recipe.orders)}}
