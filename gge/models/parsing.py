r"""Parsers of grounding-model answers: points, critic rankings and yes/no verdicts.

Points come back in the model's own coordinate units (pixels of the resized image, 0..1000, 0..1,
...); converting them to original-image pixels is the caller's job. Nothing is guessed: an answer
with nothing parseable is a format error, and the caller keeps the raw text.

Precedence of :func:`parse_points` (the first tier that yields anything wins; inside a tier, points
come in order of appearance and a match nested in another one is dropped):

1. structured syntaxes: action calls (``click(x=.., y=..)``, ``pyautogui.click(x, y)``,
   ``click(start_box='(x,y)')``, ``click(point='<point>x y</point>')``), JSON/dict keys
   (``point_2d``, ``bbox_2d``, ``coordinate``, ``start_box``, ...), ``"x": .., "y": ..`` pairs,
   ``<|box_start|>..<|box_end|>``, ``<box>..</box>`` and ``<point>..</point>``;
2. bracketed number groups: ``(x, y)`` / ``[x, y]`` is a point, ``(x1, y1, x2, y2)`` a box read as
   its centre; other group sizes and numbers outside brackets are not read;
3. an answer that is exactly two numbers, ``"512, 384"`` or ``"512 384"``;
4. a refusal phrase ("not found", "not visible", ...) with no coordinate: one abstention.

A point whose two coordinates are both negative (``(-1, -1)``) is an abstention (``None``).
When the answer holds ``</think>``, only the text after the last one is read; when it holds
``<answer>..</answer>`` blocks, only their contents are read.

Example:
    >>> parse_points("Action: click(start_box='<|box_start|>(123,456)<|box_end|>')")
    ParsedPoints(points=((123.0, 456.0),), format_error=False)
    >>> parse_points("1. (10, 20)\n2. [30, 40, 50, 60]").points
    ((10.0, 20.0), (40.0, 50.0))
    >>> parse_ranking("2 > 1 > 3", k=3)
    [1, 0, 2]
    >>> parse_yes_no("**No**, it is the search field.")
    False
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gge.types import Point

__all__ = ["ParsedPoints", "Point", "parse_points", "parse_ranking", "parse_yes_no"]

Entry = Point | None
"""One parsed entry: a point, or ``None`` for an abstention."""


@dataclass(frozen=True)
class ParsedPoints:
    """The points read from one answer.

    Attributes:
        points: Points in order of appearance, in the model's units; ``None`` marks an abstention
            (the model said the target is not on the screen).
        format_error: True when nothing parseable was found (then ``points == ()``).
    """

    points: tuple[Entry, ...]
    format_error: bool


# ----------------------------------------------------------------------------------------- regexes

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_SEP = r"(?:\s*[,;]\s*|\s+)"
_NUMS = rf"{_NUM}(?:{_SEP}{_NUM})*"

# A number not glued to a preceding word or dot ("x1" and "v1.5" give no stray 1 / 5).
_NUM_RE = re.compile(rf"(?<![\w.]){_NUM}")
_THINK_END_RE = re.compile(r"</think\s*>", re.IGNORECASE)
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)

# Action calls; the arguments are found by bracket matching from the opening parenthesis.
_CALL_RE = re.compile(
    r"(?<![\w.])(?:[A-Za-z_]\w*\.)*"
    r"(?:(?:left_|right_|middle_|double_|triple_)?click|(?:left|right|middle|double|triple)click"
    r"|left_double|right_single|long_press|tap|move_?to|mouse_move|hover|drag_?to|drag|scroll)"
    r"\s*\(",
    re.IGNORECASE,
)
_POINT_KEYS = r"point_2d|bbox_2d|start_box|start_point|click_point|coordinates?|position|point|bbox|box"
_KWARG_RE = re.compile(
    rf"(?<![\w])(?:{_POINT_KEYS})\s*=\s*(?P<v>'[^']*'|\"[^\"]*\"|\([^)]*\)|\[[^\]]*\]|<[^,)]*)",
    re.IGNORECASE,
)
_KW_PREFIX_RE = re.compile(r"\s*[A-Za-z_]\w*\s*=")
_KEY_RE = re.compile(rf"(?<![\w])[\"']?(?:{_POINT_KEYS})[\"']?\s*[:=]\s*[\"']?\s*(?=[\[(])", re.IGNORECASE)
_XY_RE = re.compile(
    rf"(?<![\w.])[\"']?x[\"']?\s*[=:]\s*(?P<x>{_NUM})\s*[,;]?\s*[\"']?y[\"']?\s*[=:]\s*(?P<y>{_NUM})",
    re.IGNORECASE,
)
_BOX_TAG_RES = (
    re.compile(r"<\|box_start\|>(?P<v>.{0,300}?)<\|box_end\|>", re.DOTALL),
    re.compile(r"<box>(?P<v>.{0,300}?)</box>", re.IGNORECASE | re.DOTALL),
)
_POINT_TAG_RE = re.compile(r"<point>(?P<v>.{0,300}?)</point>", re.IGNORECASE | re.DOTALL)
_GROUP_RE = re.compile(rf"(?P<o>[\[(])\s*(?P<nums>{_NUMS})\s*(?P<c>[\])])")
_PLAIN_RE = re.compile(rf"\s*(?P<x>{_NUM})(?:\s*,\s*|\s+)(?P<y>{_NUM})\s*\.?\s*")
_REFUSAL_RE = re.compile(
    r"\bnot\s+(?:be\s+)?(?:present|found|visible|on\s+(?:the\s+)?screen)\b"
    r"|\b(?:does\s*not|doesn[’']t|do\s+not|don[’']t)\s+exist"
    r"|\bno\s+such\s+element"
    r"|\b(?:cannot|can\s+not|can[’']t)\s+(?:find|locate)"
    r"|\bisn[’']t\s+visible"
    r"|\bunable\s+to\s+(?:find|locate)"
    r"|\brefus(?:e|ed|es|ing|al)\b",
    re.IGNORECASE,
)

_INT_RE = re.compile(r"(?<![\w.])#?(\d+)(?![\w]|\.\d)")
_RANK_KEY_RE = re.compile(
    r"(?<![\w])[\"']?(?:ranking|ranks?|order|best|answer|choice|selected|selection)[\"']?\s*[:=]\s*"
    r"(?P<v>\[[^\]]*\]|\"[^\"]*\"|'[^']*'|#?\d+(?:\s*(?:,|>|;|\s)\s*#?\d+)*)",
    re.IGNORECASE,
)
_BEST_RE = re.compile(
    r"\bbest\b(?:\s+(?:one|choice|option|candidate|answer|match))?\s*(?:is|:|=)?\s*"
    r"(?:candidate|option|choice|number)?\s*(?:#|no\.)?\s*(\d+)\b",
    re.IGNORECASE,
)
_CANDIDATE_RE = re.compile(r"\b(?:candidate|option)\s*(?:#|no\.|number)?\s*(\d+)\b", re.IGNORECASE)
_YES_NO_RE = re.compile(r"\b(yes|no)\b", re.IGNORECASE)

_MAX_CALL_SCAN = 500  # longest argument list searched for the closing parenthesis
_OPEN, _CLOSE = "([{", ")]}"


# ----------------------------------------------------------------------------------------- helpers


def _focus(text: str) -> str:
    """The part of an answer that is read: after the last ``</think>``, inside ``<answer>`` tags."""
    ends = list(_THINK_END_RE.finditer(text))
    if ends:
        text = text[ends[-1].end() :]
    answers = _ANSWER_RE.findall(text)
    return "\n".join(answers) if answers else text


def _numbers(s: str) -> list[float] | None:
    """All numbers of ``s``; None when one of them is not finite (the group is then ignored)."""
    values = [float(m) for m in _NUM_RE.findall(s)]
    return values if all(math.isfinite(v) for v in values) else None


def _entry(nums: Sequence[float] | None) -> list[Entry]:
    """Two numbers: a point; four: a box's centre; both coordinates negative: an abstention.

    Returns:
        ``[]`` when the numbers make no point, else a one-element list.
    """
    if nums is None:
        return []
    if len(nums) == 2:
        x, y = nums
    elif len(nums) == 4:
        x, y = 0.5 * nums[0] + 0.5 * nums[2], 0.5 * nums[1] + 0.5 * nums[3]
    else:
        return []
    if not (math.isfinite(x) and math.isfinite(y)):
        return []
    return [None] if x < 0 and y < 0 else [(float(x), float(y))]


def _closing(text: str, start: int) -> int:
    """Index of the bracket closing the one opened just before ``start``, or -1."""
    depth = 1
    for i in range(start, min(len(text), start + _MAX_CALL_SCAN)):
        ch = text[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(args: str) -> list[str]:
    """Split an argument list at its top-level commas."""
    parts: list[str] = []
    depth, quote, last = 0, "", 0
    for i, ch in enumerate(args):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[last:i])
            last = i + 1
    parts.append(args[last:])
    return parts


def _call_entry(args: str) -> list[Entry]:
    """The point of one action call's arguments (keywords first, then positional ones)."""
    m = _XY_RE.search(args)
    if m:
        got = _entry(_numbers(f"{m['x']} {m['y']}"))
        if got:
            return got
    for m in _KWARG_RE.finditer(args):
        got = _entry(_numbers(m["v"]))
        if got:
            return got
    positional = [a.strip() for a in _split_top(args) if a.strip() and not _KW_PREFIX_RE.match(a)]
    if not positional:
        return []
    if len(positional) >= 2 and all(_NUM_RE.fullmatch(a) for a in positional[:2]):
        return _entry(_numbers(f"{positional[0]} {positional[1]}"))
    return _entry(_numbers(positional[0]))


def _structured(text: str) -> list[Entry]:
    """Tier 1: calls, keys, x/y pairs and tags; outermost match first, in order of appearance."""
    found: list[tuple[int, int, list[Entry]]] = []
    for m in _CALL_RE.finditer(text):
        close = _closing(text, m.end())
        if close >= 0:
            found.append((m.start(), close + 1, _call_entry(text[m.end() : close])))
    for m in _KEY_RE.finditer(text):
        close = _closing(text, m.end() + 1)
        if close >= 0:
            found.append((m.start(), close + 1, _bracketed(text[m.end() : close + 1])))
    for m in _XY_RE.finditer(text):
        found.append((m.start(), m.end(), _entry(_numbers(f"{m['x']} {m['y']}"))))
    for tag_re in _BOX_TAG_RES:
        for m in tag_re.finditer(text):
            found.append((m.start(), m.end(), _entry(_numbers(m["v"]))))
    for m in _POINT_TAG_RE.finditer(text):
        found.append((m.start(), m.end(), _bracketed(m["v"]) or _entry(_numbers(m["v"]))))
    return list(_outermost(found))


def _outermost(found: list[tuple[int, int, list[Entry]]]) -> Iterator[Entry]:
    """Entries of the matches not nested in (or overlapping) an earlier, longer one."""
    end = -1
    for start, stop, entries in sorted((f for f in found if f[2]), key=lambda f: (f[0], -f[1])):
        if start >= end:
            end = stop
            yield from entries


def _bracketed(text: str) -> list[Entry]:
    """Tier 2: ``(x, y)`` / ``[x, y]`` points and ``(x1, y1, x2, y2)`` boxes, in order."""
    out: list[Entry] = []
    for m in _GROUP_RE.finditer(text):
        if _OPEN.index(m["o"]) == _CLOSE.index(m["c"]):
            out.extend(_entry(_numbers(m["nums"])))
    return out


def _plain(text: str) -> list[Entry]:
    """Tier 3: an answer that is exactly two numbers."""
    m = _PLAIN_RE.fullmatch(text)
    return _entry(_numbers(f"{m['x']} {m['y']}")) if m else []


# ------------------------------------------------------------------------------------------ public


def parse_points(text: str, *, max_points: int | None = None) -> ParsedPoints:
    r"""All points of a model's answer, in order of appearance, in the model's units.

    Args:
        text: The model's answer (never raises on any string).
        max_points: Keep only the first ``max_points`` entries (None: all).

    Returns:
        The points (``None`` entries are abstentions); ``ParsedPoints((), True)`` when nothing
        parseable was found.

    Raises:
        ValueError: If ``max_points`` is below 1.

    Example:
        >>> parse_points('```json\n[{"bbox_2d": [10, 20, 30, 40], "label": "OK"}]\n```').points
        ((20.0, 30.0),)
        >>> parse_points('<tool_call>{"name": "computer_use", "arguments": '
        ...              '{"action": "left_click", "coordinate": [512, 384]}}</tool_call>').points
        ((512.0, 384.0),)
        >>> parse_points("<|box_start|>(100,200),(300,400)<|box_end|>").points
        ((200.0, 300.0),)
        >>> parse_points("(10, 20) (-1, -1) (5, -3)").points
        ((10.0, 20.0), None, (5.0, -3.0))
        >>> parse_points("The element is not present on this screen.")
        ParsedPoints(points=(None,), format_error=False)
        >>> parse_points("Step 1: find the button.")
        ParsedPoints(points=(), format_error=True)
        >>> parse_points("[[1, 2], [3, 4], [5, 6]]", max_points=2).points
        ((1.0, 2.0), (3.0, 4.0))
    """
    if max_points is not None and max_points < 1:
        raise ValueError(f"max_points must be at least 1, got {max_points}")
    body = _focus(text)
    entries = _structured(body) or _bracketed(body) or _plain(body)
    if not entries:
        if not _REFUSAL_RE.search(body):
            return ParsedPoints((), True)
        entries = [None]
    if max_points is not None:
        entries = entries[:max_points]
    return ParsedPoints(tuple(entries), False)


def _label(digits: str) -> int:
    """A label's value; 0 (never valid) for absurdly long digit runs, which ``int`` may refuse."""
    return int(digits) if len(digits) <= 9 else 0


def _labels(text: str) -> list[int]:
    """The candidate labels named by a critic's answer, best first (unfiltered)."""
    m = _RANK_KEY_RE.search(text)
    if m:
        return [_label(v) for v in _INT_RE.findall(m["v"])]
    m = _BEST_RE.search(text)
    if m:
        return [_label(m[1])]
    named = _CANDIDATE_RE.findall(text)
    if named:
        return [_label(v) for v in named]
    return [_label(v) for v in _INT_RE.findall(text)]


def parse_ranking(text: str, k: int) -> list[int] | None:
    """A critic's ranking of candidates labelled 1..k, as 0-based indices best first.

    Read in this order: a ``ranking`` / ``best`` / ``answer`` key (JSON or ``key: value``), a "best
    is N" phrase, "candidate N" mentions, then every standalone integer. Labels outside 1..k and
    repeats are ignored; a partial ranking is completed with the remaining candidates in proposer
    order. Only the text after the last ``</think>`` and inside ``<answer>`` tags is read.

    Args:
        text: The critic's answer (never raises on any string).
        k: The number of candidates.

    Returns:
        A permutation of ``range(k)``, or None when the answer names no valid label.

    Raises:
        ValueError: If ``k`` is below 1.

    Example:
        >>> parse_ranking("Ranking: 2,1,3", 3)
        [1, 0, 2]
        >>> parse_ranking('{"best": 3}', 4)
        [2, 0, 1, 3]
        >>> parse_ranking("The best is candidate #2", 3)
        [1, 0, 2]
        >>> parse_ranking("none of them", 3) is None
        True
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    order: list[int] = []
    for label in _labels(_focus(text)):
        if 1 <= label <= k and label - 1 not in order:
            order.append(label - 1)
    if not order:
        return None
    return order + [i for i in range(k) if i not in order]


def parse_yes_no(text: str) -> bool | None:
    """A critic's yes/no verdict: the first "yes" or "no" word decides.

    Only the text after the last ``</think>`` and inside ``<answer>`` tags is read.

    Args:
        text: The critic's answer.

    Returns:
        True for yes, False for no, None when neither word appears.

    Example:
        >>> parse_yes_no("The answer is yes.")
        True
        >>> parse_yes_no("Maybe.") is None
        True
    """
    m = _YES_NO_RE.search(_focus(text))
    return None if m is None else m[1].lower() == "yes"
