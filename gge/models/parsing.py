r"""Parsers of grounding-model answers: points, critic rankings and yes/no verdicts.

Points come back in the model's own coordinate units (pixels of the resized image, 0..1000, 0..1,
...); converting them to original-image pixels is the caller's job. Nothing is guessed: an answer
with nothing parseable is a format error, and the caller keeps the raw text.

Precedence of :func:`parse_points` (the first tier that yields anything wins; inside a tier, points
come in order of appearance and a match nested in another one is dropped):

1. structured syntaxes: action calls (``click(x=.., y=..)``, ``pyautogui.click(x, y)``,
   ``click(start_box='(x,y)')``, ``click(point='<point>x y</point>')``), JSON action objects (any
   object with an ``"action"`` / ``"action_type"`` key, e.g. a Qwen ``computer_use`` tool call: its
   first point is the action's point), JSON/dict keys (``point_2d``, ``bbox_2d``, ``coordinate``,
   ``coordinates``, ``start_box``, ...) with a bracketed or quoted value, ``point: x, y`` (a key and
   bare numbers on one line), ``"x": .., "y": ..`` pairs, ``<|box_start|>..<|box_end|>``,
   ``<box>..</box>`` and ``<point>..</point>``. A move (``mouse_move``, ``move_to``, ``hover``, ...)
   directly followed by a click (``left_click``, ``click``, ...) is one point: the click's, or the
   move's when the click has none;
2. bracketed number groups: ``(x, y)`` / ``[x, y]`` is a point, ``(x1, y1, x2, y2)`` a box read as
   its centre; other group sizes and numbers outside brackets are not read. With ``box_pairs=True``
   two pairs joined by a comma on one line (``(x1,y1),(x2,y2)``: a Qwen2-VL box whose special tokens
   were stripped; ``[[x1,y1],[x2,y2]]``) are one box read as its centre;
3. an answer that is exactly two numbers, ``"512, 384"`` or ``"512 384"``;
4. a refusal phrase ("not found", "not visible", ...) with no coordinate: one abstention.

Tiers 2 to 4 are skipped when the answer ends inside an unclosed ``<|box_start|>``, ``<box>`` or
``<point>`` tag (it was cut off): with no complete structured answer it is a format error. A key
``bbox_2d`` / ``bbox`` / ``box`` / ``start_box`` holding two pairs is one box, whatever
``box_pairs`` says.

A point whose two coordinates are both negative (``(-1, -1)``) is an abstention (``None``).
When the answer holds ``</think>``, only the text after the last one is read; when it holds
``<answer>..</answer>`` blocks, only their contents are read.

Example:
    >>> parse_points("Action: click(start_box='<|box_start|>(123,456)<|box_end|>')")
    ParsedPoints(points=((123.0, 456.0),), format_error=False)
    >>> parse_points("1. (10, 20)\n2. [30, 40, 50, 60]").points
    ((10.0, 20.0), (40.0, 50.0))
    >>> parse_points("(501,10),(990,40)").points
    ((501.0, 10.0), (990.0, 40.0))
    >>> parse_points("(501,10),(990,40)", box_pairs=True).points
    ((745.5, 25.0),)
    >>> parse_points("point: 512, 384").points
    ((512.0, 384.0),)
    >>> parse_points("<point>12 3")
    ParsedPoints(points=(), format_error=True)
    >>> parse_ranking("2 > 1 > 3", k=3)
    [1, 0, 2]
    >>> parse_yes_no("**No**, it is the search field.")
    False
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

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
_HSEP = r"(?:[ \t]*[,;][ \t]*|[ \t]+)"  # a separator that stays on one line

# A number not glued to a preceding word or dot ("x1" and "v1.5" give no stray 1 / 5).
_NUM_RE = re.compile(rf"(?<![\w.]){_NUM}")
_THINK_END_RE = re.compile(r"</think\s*>", re.IGNORECASE)
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)

# Action names: what a call or a JSON "action" value does (a move followed by a click is one point).
_MOVE_NAME_RE = re.compile(r"(?:mouse_?)?move(?:_?to)?|hover", re.IGNORECASE)
_CLICK_NAME_RE = re.compile(
    r"(?:left_|right_|middle_|double_|triple_)?click|(?:left|right|middle|double|triple)click"
    r"|left_double|right_single|long_press|tap",
    re.IGNORECASE,
)
# Action calls; the arguments are found by bracket matching from the opening parenthesis.
_CALL_RE = re.compile(
    r"(?<![\w.])(?:[A-Za-z_]\w*\.)*"
    r"(?P<name>(?:left_|right_|middle_|double_|triple_)?click|(?:left|right|middle|double|triple)click"
    r"|left_double|right_single|long_press|tap|move_?to|mouse_move|hover|drag_?to|drag|scroll)"
    r"\s*\(",
    re.IGNORECASE,
)
# JSON action objects ({"action": "left_click", ...}); the object is found by bracket matching.
_ACTION_RE = re.compile(
    r"(?<![\w])[\"']?action(?:_type)?[\"']?\s*:\s*[\"'](?P<name>[A-Za-z_][\w.]*)[\"']", re.IGNORECASE
)
_BOX_KEYS = r"bbox_2d|start_box|bbox|box"
_POINT_KEYS = rf"point_2d|{_BOX_KEYS}|start_point|click_point|coordinates?|position|point"
_BOX_KEY_RE = re.compile(_BOX_KEYS, re.IGNORECASE)
_KWARG_RE = re.compile(
    rf"(?<![\w])(?:{_POINT_KEYS})\s*=\s*(?P<v>'[^']*'|\"[^\"]*\"|\([^)]*\)|\[[^\]]*\]|<[^,)]*)",
    re.IGNORECASE,
)
_KW_PREFIX_RE = re.compile(r"\s*[A-Za-z_]\w*\s*=")
_KEY_RE = re.compile(
    rf"(?<![\w])[\"']?(?P<key>{_POINT_KEYS})[\"']?\s*[:=]\s*[\"']?\s*(?=[\[(])", re.IGNORECASE
)
# ``point: 512, 384``: a key and bare numbers on the same line (2 numbers a point, 4 a box).
_KEY_BARE_RE = re.compile(
    rf"(?<![\w])[\"']?(?:{_POINT_KEYS})[\"']?[ \t]*[:=][ \t]*[\"']?[ \t]*"
    rf"(?P<v>{_NUM}(?:{_HSEP}{_NUM})*)(?!\w|\.\d)",
    re.IGNORECASE,
)
_XY_RE = re.compile(
    rf"(?<![\w.])[\"']?x[\"']?\s*[=:]\s*(?P<x>{_NUM})\s*[,;]?\s*[\"']?y[\"']?\s*[=:]\s*(?P<y>{_NUM})",
    re.IGNORECASE,
)
_BOX_TAG_RES = (
    re.compile(r"<\|box_start\|>(?P<v>.{0,300}?)<\|box_end\|>", re.DOTALL),
    re.compile(r"<box>(?P<v>.{0,300}?)</box>", re.IGNORECASE | re.DOTALL),
)
_POINT_TAG_RE = re.compile(r"<point>(?P<v>.{0,300}?)</point>", re.IGNORECASE | re.DOTALL)
_TAGS = (("<|box_start|>", "<|box_end|>"), ("<box>", "</box>"), ("<point>", "</point>"))
_GROUP_RE = re.compile(rf"(?P<o>[\[(])\s*(?P<nums>{_NUMS})\s*(?P<c>[\])])")
_PAIR_JOIN_RE = re.compile(r"[ \t]*,[ \t]*")
_PLAIN_RE = re.compile(rf"\s*(?P<x>{_NUM})(?:\s*,\s*|\s+)(?P<y>{_NUM})\s*\.?\s*")
_REFUSAL_RE = re.compile(
    r"\bnot\s+(?:be\s+)?(?:present|found|visible|on\s+(?:the\s+)?screen)\b"
    r"|\b(?:does\s*not|doesn[’']t|do\s+not|don[’']t)\s+exist"
    r"|\bno\s+such\s+element"
    r"|\bnot\s+existent\b"  # ScreenSpot-Pro's GPT wrappers ask for "Target not existent"
    r"|\b(?:cannot|can\s+not|can[’']t)\s+(?:find|locate)"
    r"|\bisn[’']t\s+visible"
    r"|\bunable\s+to\s+(?:find|locate)"
    r"|\brefus(?:e|ed|es|ing|al)\b"
    # an agent's "give up" action: terminate with a failure status (GUI-Owl on infeasible OSWorld-G tasks)
    r"|\bterminate\b[\s\S]{0,200}?\bfail(?:ure|ed)?\b"
    r"|\bfail(?:ure|ed)?\b[\s\S]{0,200}?\bterminate\b",
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

_MAX_CALL_SCAN = 500  # longest argument list (or JSON action object) searched for its brackets
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


def _opening_brace(text: str, end: int) -> int:
    """Index of the ``{`` of the innermost bracket still open at ``end``, or -1 (none, or not ``{``)."""
    depth = 0
    for i in range(end - 1, max(-1, end - 1 - _MAX_CALL_SCAN), -1):
        ch = text[i]
        if ch in _CLOSE:
            depth += 1
        elif ch in _OPEN:
            if depth == 0:
                return i if ch == "{" else -1
            depth -= 1
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


class _Match(NamedTuple):
    """One tier-1 match: its span, its entries and what kind of action it is, if any."""

    start: int
    stop: int
    entries: list[Entry]
    kind: str = ""  # "move", "click" or "" (anything else)


def _kind(name: str) -> str:
    """``"move"``, ``"click"`` or ``""`` for an action name (a module prefix is ignored)."""
    name = name.rsplit(".", 1)[-1]
    if _MOVE_NAME_RE.fullmatch(name):
        return "move"
    return "click" if _CLICK_NAME_RE.fullmatch(name) else ""


def _matches(text: str, *, actions: bool = True) -> list[_Match]:
    """Tier-1 matches of ``text``, unordered (calls and JSON actions only when ``actions``)."""
    found: list[_Match] = []
    if actions:
        for m in _CALL_RE.finditer(text):
            close = _closing(text, m.end())
            if close >= 0:
                found.append(
                    _Match(m.start(), close + 1, _call_entry(text[m.end() : close]), _kind(m["name"]))
                )
        for m in _ACTION_RE.finditer(text):
            start = _opening_brace(text, m.start())
            close = _closing(text, start + 1) if start >= 0 else -1
            if close >= 0:
                inner = _outermost(_matches(text[start + 1 : close], actions=False))
                entries = next((e.entries[:1] for e in inner if e.entries), [])
                found.append(_Match(start, close + 1, entries, _kind(m["name"])))
    for m in _KEY_RE.finditer(text):
        close = _closing(text, m.end() + 1)
        if close >= 0:
            pairs = _BOX_KEY_RE.fullmatch(m["key"]) is not None
            found.append(_Match(m.start(), close + 1, _bracketed(text[m.end() : close + 1], box_pairs=pairs)))
    for m in _KEY_BARE_RE.finditer(text):
        found.append(_Match(m.start(), m.end(), _entry(_numbers(m["v"]))))
    for m in _XY_RE.finditer(text):
        found.append(_Match(m.start(), m.end(), _entry(_numbers(f"{m['x']} {m['y']}"))))
    for tag_re in _BOX_TAG_RES:
        for m in tag_re.finditer(text):
            found.append(_Match(m.start(), m.end(), _entry(_numbers(m["v"]))))
    for m in _POINT_TAG_RE.finditer(text):
        found.append(_Match(m.start(), m.end(), _bracketed(m["v"]) or _entry(_numbers(m["v"]))))
    return found


def _outermost(found: list[_Match]) -> list[_Match]:
    """The matches not nested in (or overlapping) an earlier, longer one, in order of appearance.

    A match with no entries is dropped, except a click: it is kept (claiming no span) so that a move
    before it can give it its point.
    """
    kept: list[_Match] = []
    end = -1
    for match in sorted(found, key=lambda f: (f.start, -f.stop)):
        if match.start < end:
            continue
        if match.entries:
            end = match.stop
            kept.append(match)
        elif match.kind == "click":
            kept.append(match)
    return kept


def _structured(text: str) -> list[Entry]:
    """Tier 1: calls, actions, keys, x/y pairs and tags; a move then a click is one point."""
    matches = _outermost(_matches(text))
    out: list[Entry] = []
    i = 0
    while i < len(matches):
        match = matches[i]
        if match.kind == "move" and i + 1 < len(matches) and matches[i + 1].kind == "click":
            out.extend(matches[i + 1].entries or match.entries)
            i += 2
        else:
            out.extend(match.entries)
            i += 1
    return out


def _unclosed_tag(text: str) -> bool:
    """Whether the last ``<|box_start|>``, ``<box>`` or ``<point>`` of ``text`` is never closed."""
    lower = text.lower()
    for opening, closing in _TAGS:
        i = lower.rfind(opening)
        if i >= 0 and lower.find(closing, i + len(opening)) < 0:
            return True
    return False


def _pair_run(text: str, groups: Sequence[re.Match[str]], i: int) -> int:
    """How many 2-number groups of one bracket kind, joined by commas on one line, start at ``i``."""
    n = 0
    while i + n < len(groups):
        g = groups[i + n]
        if len(_NUM_RE.findall(g["nums"])) != 2 or g["o"] != groups[i]["o"]:
            break
        if n and not _PAIR_JOIN_RE.fullmatch(text[groups[i + n - 1].end() : g.start()]):
            break
        n += 1
    return max(n, 1)


def _bracketed(text: str, *, box_pairs: bool = False) -> list[Entry]:
    """Tier 2: ``(x, y)`` / ``[x, y]`` points and ``(x1, y1, x2, y2)`` boxes, in order.

    With ``box_pairs``, exactly two pairs joined by a comma (``(x1,y1),(x2,y2)``) are one box.
    """
    groups = [m for m in _GROUP_RE.finditer(text) if _OPEN.index(m["o"]) == _CLOSE.index(m["c"])]
    out: list[Entry] = []
    i = 0
    while i < len(groups):
        run = _pair_run(text, groups, i) if box_pairs else 1
        if run == 2:
            out.extend(_entry(_numbers(f"{groups[i]['nums']} {groups[i + 1]['nums']}")))
        else:
            for g in groups[i : i + run]:
                out.extend(_entry(_numbers(g["nums"])))
        i += run
    return out


def _plain(text: str) -> list[Entry]:
    """Tier 3: an answer that is exactly two numbers."""
    m = _PLAIN_RE.fullmatch(text)
    return _entry(_numbers(f"{m['x']} {m['y']}")) if m else []


# ------------------------------------------------------------------------------------------ public


def parse_points(text: str, *, max_points: int | None = None, box_pairs: bool = False) -> ParsedPoints:
    r"""All points of a model's answer, in order of appearance, in the model's units.

    Args:
        text: The model's answer (never raises on any string).
        max_points: Keep only the first ``max_points`` entries (None: all).
        box_pairs: Read two bracketed pairs joined by a comma (``(x1,y1),(x2,y2)`` or
            ``[[x1,y1],[x2,y2]]``) as one box, its centre: for models that answer Qwen2-VL boxes
            and servers that strip their special tokens. False (the default) reads them as two
            points, the way gge's own candidate lists are written.

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
        >>> parse_points('{"action": "mouse_move", "coordinate": [10, 20]}\n'
        ...              '{"action": "left_click"}').points
        ((10.0, 20.0),)
        >>> parse_points("<|box_start|>(100,200),(300,400)<|box_end|>").points
        ((200.0, 300.0),)
        >>> parse_points("[[100, 200], [300, 400]]", box_pairs=True).points
        ((200.0, 300.0),)
        >>> parse_points("point:512,384").points
        ((512.0, 384.0),)
        >>> parse_points("(10, 20) (-1, -1) (5, -3)").points
        ((10.0, 20.0), None, (5.0, -3.0))
        >>> parse_points("The element is not present on this screen.")
        ParsedPoints(points=(None,), format_error=False)
        >>> parse_points("Step 1: find the button.")
        ParsedPoints(points=(), format_error=True)
        >>> parse_points("<|box_start|>(501,10),(99")
        ParsedPoints(points=(), format_error=True)
        >>> parse_points("[[1, 2], [3, 4], [5, 6]]", max_points=2).points
        ((1.0, 2.0), (3.0, 4.0))
    """
    if max_points is not None and max_points < 1:
        raise ValueError(f"max_points must be at least 1, got {max_points}")
    body = _focus(text)
    entries = _structured(body)
    if not entries:
        if _unclosed_tag(body):  # cut off inside a tag: its numbers are not a point
            return ParsedPoints((), True)
        entries = _bracketed(body, box_pairs=box_pairs) or _plain(body)
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
