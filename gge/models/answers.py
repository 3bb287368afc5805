"""A proposer's answers read as candidates: the one reading, for the policy and for trainers' rewards."""

from __future__ import annotations

from collections.abc import Sequence

from gge.geometry import to_original
from gge.models.parsing import parse_points
from gge.types import Candidate


def answer_candidates(
    texts: Sequence[str],
    *,
    proposer: str,
    k: int,
    box_pairs: bool,
    convention: str,
    image_size: tuple[int, int],
    frame: tuple[int, int],
    cut: Sequence[bool] | None = None,
) -> tuple[Candidate, ...]:
    """A sample's candidates in original pixels, read from the proposer's answers.

    ``single_pass``: the points of the first answer (at most ``k``). Other modes: one candidate per
    answer, in order; an unparseable or cut answer keeps its slot as an unparsed candidate (never a
    hit). Points are read in the preset's ``convention`` (``abs_resized`` in ``frame``) and mapped to
    ``image_size``. The one reading of an answer, for the policy and for trainers' rewards
    (:mod:`gge.integrations.verl`).

    Args:
        texts: The answers, one per generated sequence.
        proposer: ``single_pass``, ``sampling`` or ``greedy``.
        k: Points read from a ``single_pass`` answer at most.
        box_pairs: Read ``(x1,y1),(x2,y2)`` as one box.
        convention: The coordinate convention of the answers.
        image_size: The sample's original (width, height).
        frame: The size ``abs_resized`` coordinates refer to.
        cut: Per answer, whether the token budget cut it (a cut answer is never parsed).

    Returns:
        The candidates, in proposer order.

    Example:
        >>> [c.point for c in answer_candidates(["(10, 20)", "no idea"], proposer="sampling", k=2,
        ...     box_pairs=False, convention="abs_resized", image_size=(200, 100), frame=(100, 50))]
        [(20.0, 40.0), None]
    """
    cut = [False] * len(texts) if cut is None else cut

    def point(p: tuple[float, float] | None) -> Candidate:
        if p is None:
            return Candidate(None)
        return Candidate(to_original(p[0], p[1], convention, image_size, frame))

    if proposer == "single_pass":
        first = texts[0] if texts and not cut[0] else ""
        return tuple(point(p) for p in parse_points(first, max_points=k, box_pairs=box_pairs).points)
    slots = [parse_points(t, max_points=1, box_pairs=box_pairs) for t in texts]
    return tuple(
        Candidate(None, raw=t, parsed=False) if p.format_error or c else point(p.points[0])
        for p, t, c in zip(slots, texts, cut, strict=True)
    )
