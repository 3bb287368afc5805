"""The report's gallery of misses: which misses are shown, their thumbnails, and their cards.

:func:`gallery_entries` picks a benchmark's misses round-robin over the kinds of miss and draws each
one's screenshot with the target, candidates and pick (:func:`gge.drawing.draw_overlay`) as
a JPEG ``data:`` URI; ``_gallery`` renders the entries as the page's filterable gallery section.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from gge.benchmarks.base import TableSpec
from gge.benchmarks.images import absent_but_sized, open_image
from gge.drawing import draw_overlay, pick_rank
from gge.report.html_format import _count, _frac, _mapping, _num, esc, kind_colour
from gge.scoring.analysis import MISS_KINDS, OUTCOMES, outcome
from gge.types import LabelValue, Sample, SampleResult, label_values

JPEG_QUALITY = 80
"""Quality of the gallery's JPEG thumbnails (about 20-40 kB per 480-pixel screenshot)."""


def kind_label(kind: str) -> str:
    """A human label for an outcome kind.

    Example:
        >>> kind_label("critic_miss")
        'critic miss'
    """
    return kind.replace("_", " ")


# -- gallery ----------------------------------------------------------------------------------------
def _first(value: LabelValue | None) -> str | None:
    """A label's value; the first one of a multi-label value (None when there is none)."""
    values = label_values(value)
    return str(values[0]) if values else None


def cell_of(labels: Mapping[str, LabelValue], spec: TableSpec | None) -> dict[str, str | None]:
    """The official table cell a sample falls in: ``{"row": value | None, "col": value | None}``.

    Args:
        labels: The sample's breakdown labels.
        spec: The benchmark's first official table, or None.

    Returns:
        The row and column values (the first value of a multi-label key; None when absent).

    Example:
        >>> cell_of({"group": "CAD", "ui_type": ("icon", "text")}, TableSpec("t", "group", "ui_type"))
        {'row': 'CAD', 'col': 'icon'}
    """
    if spec is None:
        return {"row": None, "col": None}
    return {
        "row": _first(labels.get(spec.rows)),
        "col": _first(labels.get(spec.cols)) if spec.cols is not None else None,
    }


def cell_label(cell: Mapping[str, Any] | None) -> str:
    """``"row / col"``, ``"row"``, or ``"–"`` for a gallery entry's cell.

    Example:
        >>> cell_label({"row": "CAD", "col": "icon"}), cell_label({"row": None, "col": None})
        ('CAD / icon', '–')
    """
    if not cell:
        return "–"
    parts = [str(v) for v in (cell.get("row"), cell.get("col")) if v is not None]
    return " / ".join(parts) if parts else "–"


def _select_round_robin(
    misses: Sequence[tuple[str, SampleResult]], limit: int
) -> list[tuple[str, SampleResult]]:
    """At most ``limit`` misses, taking one of each kind in turn (kinds in MISS_KINDS order)."""
    queues: dict[str, list[tuple[str, SampleResult]]] = {}
    for kind, r in misses:
        queues.setdefault(kind, []).append((kind, r))
    order = [k for k in MISS_KINDS if k in queues] + sorted(k for k in queues if k not in MISS_KINDS)
    chosen: list[tuple[str, SampleResult]] = []
    depth = 0
    while len(chosen) < limit:
        took = False
        for kind in order:
            if depth < len(queues[kind]) and len(chosen) < limit:
                chosen.append(queues[kind][depth])
                took = True
        if not took:
            break
        depth += 1
    return chosen


BLANK = (236, 236, 236)
"""The colour of the canvas a screenshot that is not present is drawn on (:func:`blank_canvas`)."""


def blank_canvas(sample: Sample, result: SampleResult) -> bool:
    """Whether a sample's overlay is drawn on a blank canvas: scored, its file absent, its size known.

    A replay scores such a sample from its record's size (:func:`gge.benchmarks.images.absent_but_sized`);
    its card then shows the target, candidates and pick where they are, on a grey canvas of that size.
    A sample whose missing file was its image error gets no thumbnail, as before.
    """
    return result.image_error is None and absent_but_sized(sample)


def _screenshot(sample: Sample, result: SampleResult) -> Image.Image:
    """The sample's screenshot, opened lazily; a blank canvas of its size where :func:`blank_canvas`."""
    if blank_canvas(sample, result):
        return Image.new("RGB", sample.image_size, BLANK)
    return open_image(sample.image_path)


def overlay_data_uri(
    sample: Sample, result: SampleResult, strategy: str, *, max_width: int = 480
) -> tuple[str, tuple[int, int]] | None:
    """The screenshot with the target, candidates and pick drawn, as a JPEG ``data:`` URI.

    Args:
        sample: The sample (its ``image_path``, ``image_size`` and region).
        result: Its scored result.
        strategy: The selection strategy whose pick is ringed.
        max_width: Largest width of the thumbnail; a portrait screenshot is fitted into a
            ``max_width`` square (its height is bounded too, so phone screens stay small).

    Returns:
        ``(uri, (width, height))``, or None when the image cannot be read or drawn (never raises
        for a missing, truncated or otherwise unreadable file). A file not present whose size the
        record gives is drawn on a blank canvas of that size (:func:`blank_canvas`).
    """
    try:
        with _screenshot(sample, result) as im:
            w, h = im.size
            width = max(1, min(max_width, max_width * w // h)) if h > w else max_width
            if im.format == "JPEG":
                im.draft("RGB", (width, 1))  # decode at a reduced scale: much faster
            thumb = draw_overlay(im, sample, result, strategy, max_width=width)
        buf = io.BytesIO()
        thumb.save(buf, "JPEG", quality=JPEG_QUALITY, optimize=True)
    except Exception:  # any unreadable image (OSError, bomb, bad header, odd mode): no thumbnail
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii"), thumb.size


def _point(point: tuple[float, float] | None) -> list[float] | None:
    return None if point is None else [round(float(point[0]), 1), round(float(point[1]), 1)]


def gallery_entries(
    samples: Mapping[tuple[str, str], Sample],
    results: Sequence[SampleResult],
    *,
    strategy: str,
    tables: Mapping[str, TableSpec | None],
    limit_per_benchmark: int = 60,
    max_width: int = 480,
) -> list[dict[str, Any]]:
    """The gallery of misses: one entry per missed sample, with its overlay as a JPEG data URI.

    **Which misses** (deterministic): a benchmark's misses (outcome other than ``hit``, see
    :func:`gge.scoring.analysis.outcome`) are queued by kind in the order of ``results``; entries are taken
    round-robin over the kinds in :data:`gge.scoring.analysis.MISS_KINDS` order (the first critic miss, the
    first proposer miss, ..., then the second of each...) until ``limit_per_benchmark`` are taken or
    none is left. Entries come out benchmark by benchmark (in order of first appearance) in that
    round-robin order, so the first cards of a benchmark show every kind of miss it has.

    Args:
        samples: The samples, keyed by ``(benchmark, id)``. A result without its sample is rebuilt
            from the result's own ``image_path``, ``image_size`` and ``region`` (no instruction);
            without those it gets no thumbnail.
        results: The scored results, in sample order.
        strategy: The selection strategy whose pick is Top-1.
        tables: Each benchmark's first official table (None: no table); gives the entry's cell.
        limit_per_benchmark: Entries kept per benchmark at most.
        max_width: Largest thumbnail width in pixels (a portrait one fits a square of that side).

    Returns:
        Dicts with ``benchmark``, ``id``, ``instruction``, ``kind`` (an outcome kind), ``cell``
        (``{"row", "col"}``, see :func:`cell_of`), ``thumb`` (a ``data:image/jpeg;base64,...`` URI or
        None when the image cannot be read), ``thumb_size`` (``[w, h]`` or None), ``blank`` (drawn on a
        blank canvas: the file is not present, its record gives its size), ``raw``,
        ``critic_raw``, ``candidates`` (how many were scored), ``hit_ranks`` (1-based ranks of the
        candidates that hit), ``pick`` (``{"rank", "point", "hit"}``: proposer rank or None for an
        aggregated point, the point or None for an abstention or no pick), ``oracle`` (some
        candidate hits), ``format_error``, ``image_error`` and ``server_error``.

    Example:
        >>> from gge.scoring.scoring import score_sample
        >>> from gge.types import Box, Candidate, Prediction
        >>> s = Sample("demo", "0", "/no/such.png", (100, 100), "click OK", Box(0, 0, 10, 10))
        >>> r = score_sample(s, Prediction("demo", "0", (Candidate((50, 50), 0.9),)), k=1)
        >>> (e,) = gallery_entries({("demo", "0"): s}, [r], strategy="critic", tables={})
        >>> e["kind"], e["pick"]
        ('proposer_miss', {'rank': 1, 'point': [50.0, 50.0], 'hit': False})
        >>> e["thumb"][:23], e["thumb_size"], e["blank"]  # no file: drawn on a blank 100x100 canvas
        ('data:image/jpeg;base64,', [100, 100], True)
    """
    if limit_per_benchmark < 0:
        raise ValueError(f"limit_per_benchmark must be >= 0, got {limit_per_benchmark}")
    by_bench: dict[str, list[tuple[str, SampleResult]]] = {}
    for r in results:
        kind = outcome(r, strategy)
        if kind != "hit":
            by_bench.setdefault(r.benchmark, []).append((kind, r))
        else:
            by_bench.setdefault(r.benchmark, [])
    chosen: list[tuple[str, str, SampleResult, Sample | None]] = []
    for bench, misses in by_bench.items():
        for kind, r in _select_round_robin(misses, limit_per_benchmark):
            sample = samples.get((r.benchmark, r.id))
            if sample is None and r.region is not None and r.image_size is not None and r.image_path:
                sample = Sample(r.benchmark, r.id, r.image_path, r.image_size, "", r.region, r.labels)
            chosen.append((bench, kind, r, sample))

    def draw(job: tuple[str, str, SampleResult, Sample | None]) -> tuple[str, tuple[int, int]] | None:
        _, _, r, sample = job
        return overlay_data_uri(sample, r, strategy, max_width=max_width) if sample else None

    # The screenshots are decoded on every core (Pillow decodes and resizes without the GIL): the
    # gallery is most of a large run's report time.
    with ThreadPoolExecutor(max_workers=max(1, min(len(chosen), os.cpu_count() or 1))) as pool:
        overlays = list(pool.map(draw, chosen))
    out: list[dict[str, Any]] = []
    for (bench, kind, r, sample), drawn in zip(chosen, overlays, strict=True):
        spec = tables.get(bench)
        pick = r.picks.get(strategy)
        out.append(
            {
                "benchmark": bench,
                "id": r.id,
                "instruction": sample.instruction if sample is not None else "",
                "kind": kind,
                "cell": cell_of(sample.labels if sample is not None else r.labels, spec),
                "thumb": drawn[0] if drawn else None,
                "thumb_size": list(drawn[1]) if drawn else None,
                "blank": bool(drawn and sample is not None and blank_canvas(sample, r)),
                "raw": r.raw,
                "critic_raw": r.critic_raw,
                "candidates": len(r.candidates),
                "hit_ranks": [i for i, hit in enumerate(r.hits, start=1) if hit],
                "pick": {
                    "rank": pick_rank(r, strategy),
                    "point": _point(pick.point) if pick is not None else None,
                    "hit": bool(r.top1.get(strategy, False)),
                },
                "oracle": any(r.hits),
                "format_error": r.format_error,
                "image_error": r.image_error,
                "server_error": r.server_error,
            }
        )
    return out


def _cell_key(entry: Mapping[str, Any]) -> str:
    return f"{entry.get('benchmark', '')} · {cell_label(entry.get('cell'))}"


def _card(entry: Mapping[str, Any]) -> str:
    kind = str(entry.get("kind", ""))
    thumb = entry.get("thumb")
    if isinstance(thumb, str) and thumb.startswith("data:image/"):
        size = entry.get("thumb_size")
        dims = ""
        if isinstance(size, (list, tuple)) and len(size) == 2 and all(_num(v) for v in size):
            dims = f' width="{int(size[0])}" height="{int(size[1])}"'
        alt = f"screenshot of {esc(entry.get('id'))} with the target and candidates"
        if entry.get("blank"):
            alt = f"the target and candidates of {esc(entry.get('id'))} on a blank canvas of its size"
        img = f'<img src="{esc(thumb)}"{dims} alt="{alt}">'
        if entry.get("blank"):
            img += '<div class="noimg">screenshot not present: drawn on a blank canvas of its size</div>'
    else:
        img = '<div class="noimg">screenshot unavailable</div>'
    pick = _mapping(entry.get("pick"))
    point = pick.get("point")
    if point is None:
        what = "abstains" if pick.get("rank") is not None else "no pick"
    else:
        rank = pick.get("rank")
        where = f"({_frac(point[0], 0)}, {_frac(point[1], 0)})" if isinstance(point, (list, tuple)) else ""
        what = f"#{esc(rank)} {where}" if rank is not None else f"new point {where}"
    hits = entry.get("hit_ranks") or []
    n = entry.get("candidates")
    hit_text = ", ".join(f"#{esc(h)}" for h in hits) if hits else "none"
    colour = kind_colour(kind)
    raw = entry.get("raw") or ""
    critic = entry.get("critic_raw") or ""
    critic_html = (
        f"<details><summary>critic answer</summary><pre>{esc(critic)}</pre></details>" if critic else ""
    )
    image_error = entry.get("image_error")
    err = f'<div class="pick">image error: {esc(image_error)}</div>' if image_error else ""
    server_error = entry.get("server_error")
    if server_error:
        err += f'<div class="pick">server error (asked again on a rerun): {esc(server_error)}</div>'
    return (
        f'<figure class="card" data-benchmark="{esc(entry.get("benchmark"))}" '
        f'data-cell="{esc(_cell_key(entry))}" data-kind="{esc(kind)}">{img}<figcaption>'
        f'<div class="meta"><span class="kind" style="background:{colour}">{esc(kind_label(kind))}</span> '
        f"<b>{esc(entry.get('benchmark'))}</b> · <code>{esc(entry.get('id'))}</code> · "
        f"cell: {esc(cell_label(entry.get('cell')))}</div>"
        f'<p class="instr">{esc(entry.get("instruction"))}</p>'
        f'<div class="pick">pick: {what} · hits: {hit_text} · '
        f"{_count(n)} candidate{'' if n == 1 else 's'}</div>"
        f"{err}<pre>{esc(raw) if raw else '(no raw answer)'}</pre>{critic_html}</figcaption></figure>"
    )


def _gallery(gallery: Sequence[Mapping[str, Any]]) -> str:
    benches: dict[str, int] = {}
    cells: dict[str, dict[str, int]] = {}
    kinds: dict[str, int] = {}
    for e in gallery:
        b = str(e.get("benchmark", ""))
        benches[b] = benches.get(b, 0) + 1
        per = cells.setdefault(b, {})
        key = _cell_key(e)
        per[key] = per.get(key, 0) + 1
        kind = str(e.get("kind", ""))
        kinds[kind] = kinds.get(kind, 0) + 1
    bench_opts = "".join(f'<option value="{esc(b)}">{esc(b)} ({n})</option>' for b, n in benches.items())
    cell_opts = "".join(
        f'<optgroup label="{esc(b)}" data-benchmark="{esc(b)}">'
        + "".join(
            f'<option value="{esc(key)}">{esc(key.split(" · ", 1)[1])} ({n})</option>'
            for key, n in sorted(per.items())
        )
        + "</optgroup>"
        for b, per in cells.items()
    )
    ordered = [k for k in OUTCOMES if k in kinds] + sorted(k for k in kinds if k not in OUTCOMES)
    kind_opts = "".join(
        f'<option value="{esc(k)}">{esc(kind_label(k))} ({kinds[k]})</option>' for k in ordered
    )
    n = len(gallery)
    cards = "".join(_card(e) for e in gallery)
    empty = '<p class="muted">No misses to show.</p>' if not gallery else ""
    return (
        '<section id="gallery"><h2>Gallery of misses</h2>'
        '<p class="muted">Target in blue, candidates as discs (green hit, red miss) with their proposer '
        "rank, the pick ringed in yellow.</p>"
        '<div class="filters">'
        '<label>benchmark <select id="filter-benchmark">'
        f'<option value="">all</option>{bench_opts}</select></label>'
        f'<label>cell <select id="filter-cell"><option value="">all</option>{cell_opts}</select></label>'
        f'<label>kind <select id="filter-kind"><option value="">all</option>{kind_opts}</select></label>'
        f'<span id="gallery-count">showing {n} of {n}</span></div>'
        f'{empty}<div class="cards">{cards}</div></section>'
    )


__all__ = [
    "cell_label",
    "cell_of",
    "gallery_entries",
    "kind_label",
    "overlay_data_uri",
]
