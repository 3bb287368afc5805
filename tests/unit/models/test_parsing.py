"""Parsers of model answers: points, rankings, yes/no (table-driven cases and property tests)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gge.models.parsing import ParsedPoints, parse_points, parse_ranking, parse_yes_no

Entry = tuple[float, float] | None

# ------------------------------------------------------------------------------------ parse_points

POINT_CASES: list[tuple[str, tuple[Entry, ...]]] = [
    # action calls
    ("click(x=123, y=456)", ((123, 456),)),
    ("left_click(x=1.5, y=2)", ((1.5, 2),)),
    ("pyautogui.click(x=123, y=456)", ((123, 456),)),
    ("pyautogui.click(123, 456)", ((123, 456),)),
    ("pyautogui.moveTo(10, 20)", ((10, 20),)),
    ("pyautogui.click(100, 200, clicks=2)", ((100, 200),)),
    ("pyautogui.click(x=100, y=200, button='left')", ((100, 200),)),
    ("pyautogui.doubleClick(7, 8)", ((7, 8),)),
    # UI-TARS
    ("click(start_box='(123,456)')", ((123, 456),)),
    ("click(start_box='<|box_start|>(123,456)<|box_end|>')", ((123, 456),)),
    ("Action: click(point='<point>123 456</point>')", ((123, 456),)),
    ("Thought: The OK button.\nAction: left_double(start_box='(10,20)')", ((10, 20),)),
    ("click(start_box='(10,20,30,40)')", ((20, 30),)),
    ("click(start_box='[10, 20, 30, 40]')", ((20, 30),)),
    ("drag(start_box='(1,2)', end_box='(3,4)')", ((1, 2),)),
    # bracketed points, prose around them
    ("(100, 200)", ((100, 200),)),
    ("[100, 200]", ((100, 200),)),
    ("(0.49,0.40)", ((0.49, 0.40),)),
    ("[-3.5, 7]", ((-3.5, 7),)),
    ("The button is at (100, 200).", ((100, 200),)),
    ("I would click [12.25, 3e2] here", ((12.25, 300),)),
    ("(123 456)", ((123, 456),)),
    # <point> tags
    ("<point>12 34</point>", ((12, 34),)),
    ("<point>12,34</point>", ((12, 34),)),
    ("CLICK <point>[[500, 300]]</point>", ((500, 300),)),
    ("<point>[[500, 300], [100, 200]]</point>", ((500, 300), (100, 200))),
    # Qwen2.5-VL / Qwen3-VL JSON grounding
    ('{"point_2d": [1, 2]}', ((1, 2),)),
    ('{"point_2d": [1, 2], "label": "OK button"}', ((1, 2),)),
    ('{"bbox_2d": [10, 20, 30, 40]}', ((20, 30),)),
    ('```json\n[\n  {"bbox_2d": [10, 20, 30, 40], "label": "OK"}\n]\n```', ((20, 30),)),
    (
        '```json\n[{"point_2d": [5, 6], "label": "a"}, {"point_2d": [7, 8], "label": "b"}]\n```',
        ((5, 6), (7, 8)),
    ),
    ('[{"bbox_2d": [0, 0, 10, 10]}, {"bbox_2d": [10, 10, 20, 20]}]', ((5, 5), (15, 15))),
    ('{"point_2d": [[10, 20], [30, 40]]}', ((10, 20), (30, 40))),
    ("{'point_2d': [3, 4]}", ((3, 4),)),
    ('{"coordinate": "(5, 6)"}', ((5, 6),)),
    ('{"x": 100, "y": 200}', ((100, 200),)),
    ("x: 100, y: 200", ((100, 200),)),
    # key: bare numbers on one line
    ("point:512,384", ((512, 384),)),
    ("point: 512, 384", ((512, 384),)),
    ("Point: 512 384", ((512, 384),)),
    ("The answer is point:0.5,0.25.", ((0.5, 0.25),)),
    ('{"point": "512, 384"}', ((512, 384),)),
    ("bbox: 10, 20, 30, 40", ((20, 30),)),
    ("1. point: 10, 20\n2. point: 30, 40", ((10, 20), (30, 40))),
    ("point: -1, -1", (None,)),
    # Qwen2-VL / OS-Atlas box tokens
    ("<|box_start|>(100,200),(300,400)<|box_end|>", ((200, 300),)),
    ("<|object_ref_start|>OK<|object_ref_end|><|box_start|>(100,200),(300,400)<|box_end|>", ((200, 300),)),
    ("<|box_start|>(123,456)<|box_end|>", ((123, 456),)),
    ("<box>[[10, 20, 30, 40]]</box>", ((20, 30),)),
    # tool calls
    (
        '<tool_call>\n{"name": "computer_use", "arguments": '
        '{"action": "left_click", "coordinate": [512, 384]}}\n</tool_call>',
        ((512, 384),),
    ),
    ('{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [5, 6]}}', ((5, 6),)),
    (
        '<tool_call>{"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [1, 2]}}'
        '</tool_call>\n<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [3, 4]}}</tool_call>',
        ((3, 4),),  # a move then a click: one point, the click's
    ),
    (
        '<tool_call>{"name": "computer_use", "arguments": {"action": "mouse_move", "coordinate": [1, 2]}}'
        "</tool_call>\n"
        '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click"}}</tool_call>',
        ((1, 2),),  # a move then a click with no coordinate: the move's point
    ),
    ('{"action": "hover", "coordinate": [1, 2]}', ((1, 2),)),  # a move alone keeps its point
    (
        '{"action": "mouse_move", "coordinate": [1, 2]}\n{"action": "left_click"}\n'
        '{"action": "left_click", "coordinate": [3, 4]}',
        ((1, 2), (3, 4)),  # the first click is at the move's point, the second at its own
    ),
    (
        '{"action": "left_click", "coordinate": [1, 2], "position": [3, 4]}',
        ((1, 2),),
    ),  # one action, one point
    ('{"action": "move_to", "x": 1, "y": 2}, {"action": "click", "x": 3, "y": 4}', ((3, 4),)),
    ('[{"action_type": "click", "x": 5, "y": 6}]', ((5, 6),)),
    ("{'action': 'double_click', 'coordinate': (7, 8)}", ((7, 8),)),
    ('{"action": "left_click", "coordinate": [100, 200], "dims": [1920, 1080]}', ((100, 200),)),
    ('{"action": "left_click", "coordinates": [100, 200], "dims": [1920, 1080]}', ((100, 200),)),
    ("pyautogui.moveTo(10, 20)\npyautogui.click()", ((10, 20),)),
    ("pyautogui.moveTo(10, 20)\npyautogui.click(30, 40)", ((30, 40),)),
    ("hover(x=1, y=2)\nleft_click(x=3, y=4)\nclick(x=5, y=6)", ((3, 4), (5, 6))),
    ('{"action": "type", "text": "hi"}\n{"action": "left_click", "coordinate": [9, 8]}', ((9, 8),)),
    # 4-number boxes
    ("[10, 20, 30, 40]", ((20, 30),)),
    ("(10, 20, 30, 40)", ((20, 30),)),
    ("[0.1, 0.2, 0.3, 0.4]", ((0.2, 0.3),)),
    # several candidates
    ("1. (10, 20)\n2. (30, 40)", ((10, 20), (30, 40))),
    ("Candidates:\n1) [10, 20]\n2) [30, 40]\n3) [50, 60]", ((10, 20), (30, 40), (50, 60))),
    ("[[10,20],[30,40]]", ((10, 20), (30, 40))),
    ("[[10, 20, 30, 40]]", ((20, 30),)),
    ("click(x=1, y=2)\nclick(x=3, y=4)", ((1, 2), (3, 4))),
    ("(10, 20), (30, 40)", ((10, 20), (30, 40))),
    ("1. (10, 20)\n2. (-1, -1)\n3. (5, -3)", ((10, 20), None, (5, -3))),
    # plain "x, y"
    ("512, 384", ((512, 384),)),
    ("512 384", ((512, 384),)),
    ("  12.5,7 \n", ((12.5, 7),)),
    # refusals
    ("(-1, -1)", (None,)),
    ("[-1,-1]", (None,)),
    ("click(x=-1, y=-1)", (None,)),
    ('{"point_2d": [-1, -1]}', (None,)),
    ("The element is not present.", (None,)),
    ("Target NOT FOUND", (None,)),
    ("This element does not exist on the page.", (None,)),
    ("There is no such element.", (None,)),
    ("I cannot find it.", (None,)),
    ("The icon isn't visible.", (None,)),
    ("It is not visible here.", (None,)),
    ("The item is not on the screen.", (None,)),
    ("Unable to locate the widget.", (None,)),
    ("I refuse.", (None,)),
    ("Not found (see step 1)", (None,)),
    ("Target not existent", (None,)),  # the answer ScreenSpot-Pro's GPT wrappers ask for (negatives)
    # coordinates win over refusal words; one negative coordinate is a point
    ("I cannot find it exactly, but maybe (10, 20).", ((10, 20),)),
    ("(-5, 10)", ((-5, 10),)),
    ("(5, -10)", ((5, -10),)),
    # reasoning: only the text after </think>, only <answer> contents
    ("<think>maybe (1, 2)</think>(3, 4)", ((3, 4),)),
    ("it is at (1, 2)... </think>\n(3, 4)", ((3, 4),)),
    ("I think (1, 2) but <answer>(5, 6)</answer>", ((5, 6),)),
    ("Thought: it is at (1, 2).\nAction: click(start_box='(3,4)')", ((3, 4),)),
]

FORMAT_ERRORS = [
    "",
    "   ",
    "I would click the OK button.",
    "Step 1: click the OK button",
    "5",
    "(5)",
    "(1, 2, 3)",
    "NaN",
    "(nan, nan)",
    "(inf, 3)",
    "(1e999, 5)",
    "click()",
    "pyautogui.click(<|pointer_start|><|pointer_pad|><|pointer_end|>)",
    "Steps 1 2 3 then 4",
    "<think>(1, 2)</think>",
    "(1, 2]",
    '{"action": "left_click"}',  # a click with no point and no move before it
    # cut off inside a box / point tag: no point from the lower tiers, no plain numbers
    "<|box_start|>(501,10),(99",
    "<|box_start|>(501,10),(990,40)",
    "<box>(1,2),(3",
    "<box>(1,2)",
    "<point>12 3",
    "The target is not found <point>12 3",
    "(5, 6) <|box_start|>(3",
    "<box>?</box> (5, 6) <box>(5, 6",  # the last tag decides
    "click(start_box='<|box_start|>(123,456)",
]


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def _same(got: Sequence[Entry], want: Sequence[Entry]) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if g is None or w is None:
            if g is not w:
                return False
        elif not (_close(g[0], w[0]) and _close(g[1], w[1])):
            return False
    return True


@pytest.mark.parametrize(("text", "want"), POINT_CASES)
def test_parse_points_table(text: str, want: tuple[Entry, ...]) -> None:
    got = parse_points(text)
    assert not got.format_error
    assert _same(got.points, want), got.points


@pytest.mark.parametrize("text", FORMAT_ERRORS)
def test_parse_points_format_errors(text: str) -> None:
    assert parse_points(text) == ParsedPoints((), True)


def test_points_are_floats() -> None:
    (p,) = parse_points("click(x=1, y=2)").points
    assert p is not None
    assert all(type(c) is float for c in p)


# precedence: a box is not two points, two points are not a box, structured beats brackets


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("[10, 20, 30, 40]", ((20, 30),)),  # one box, not two points
        ("(10, 20), (30, 40)", ((10, 20), (30, 40))),  # two points, not a box
        ("<|box_start|>(10,20),(30,40)<|box_end|>", ((20, 30),)),  # box token: one box
        ("Step 1: the target is at (10, 20). Step 2: click.", ((10, 20),)),  # prose numbers ignored
        ("There are 3 buttons; the second is at [7, 8]", ((7, 8),)),
        ('The answer (see 2 lines below): {"point_2d": [7, 8]}', ((7, 8),)),  # JSON over brackets
        ("Looks like (1, 2). click(x=3, y=4)", ((3, 4),)),  # call over brackets
        ("box: (10, 20, 30, 40)", ((20, 30),)),
    ],
)
def test_precedence(text: str, want: tuple[Entry, ...]) -> None:
    assert _same(parse_points(text).points, want)


# structured keys win over stray numbers earlier in the text; only the text after the last </think>


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('Looks like (1, 2). {"point_2d": [3, 4]}', ((3, 4),)),
        ('I see [5, 6]; {"coordinate": [7, 8]}', ((7, 8),)),
        ('I see [5, 6]; {"coordinates": [7, 8]}', ((7, 8),)),
        ("Maybe (1, 2) or [3, 4]; point: 5, 6", ((5, 6),)),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", '
            '"coordinate": [100, 200], "dims": [1920, 1080]}}</tool_call>',
            ((100, 200),),
        ),
        (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", '
            '"coordinates": [100, 200], "dims": [1920, 1080]}}</tool_call>',
            ((100, 200),),
        ),
        ("<think>a</think>(1, 2)</think>(3, 4)", ((3, 4),)),
        ("<think>(9, 9)</think> (1, 2) </think> point: 3, 4", ((3, 4),)),
    ],
)
def test_structured_beats_stray_numbers(text: str, want: tuple[Entry, ...]) -> None:
    got = parse_points(text)
    assert got.points == tuple(want), got.points
    assert not got.format_error


@pytest.mark.parametrize(
    ("text", "pairs", "plain"),
    [
        ("(501,10),(990,40)", ((745.5, 25),), ((501, 10), (990, 40))),
        ("(501, 10), (990, 40)", ((745.5, 25),), ((501, 10), (990, 40))),
        ("[[10,20],[30,40]]", ((20, 30),), ((10, 20), (30, 40))),
        ("[[10, 20], [30, 40]]", ((20, 30),), ((10, 20), (30, 40))),
        ("The box is (10,20),(30,40).", ((20, 30),), ((10, 20), (30, 40))),
        ("(10,20),(30,40)<|box_end|>", ((20, 30),), ((10, 20), (30, 40))),  # only box_start stripped
        ("(-1,-1),(-1,-1)", (None,), (None, None)),
        # lines of pairs (gge's candidate lists) stay points either way
        ("(10, 20)\n(30, 40)", ((10, 20), (30, 40)), ((10, 20), (30, 40))),
        ("1. (10, 20)\n2. (30, 40)", ((10, 20), (30, 40)), ((10, 20), (30, 40))),
        # three pairs are not a box; mixed brackets are not a box; nor a pair and a box
        ("(1,2),(3,4),(5,6)", ((1, 2), (3, 4), (5, 6)), ((1, 2), (3, 4), (5, 6))),
        ("(1,2),[3,4]", ((1, 2), (3, 4)), ((1, 2), (3, 4))),
        ("(1,2),(3,4,5,6)", ((1, 2), (4, 5)), ((1, 2), (4, 5))),
        ("(1,2) and (3,4)", ((1, 2), (3, 4)), ((1, 2), (3, 4))),
        ("(1,2),(3,4) (5,6),(7,8)", ((2, 3), (6, 7)), ((1, 2), (3, 4), (5, 6), (7, 8))),
        # structured answers do not depend on the option
        ("<|box_start|>(10,20),(30,40)<|box_end|>", ((20, 30),), ((20, 30),)),
        ("<point>[[500, 300], [100, 200]]</point>", ((500, 300), (100, 200)), ((500, 300), (100, 200))),
        ('{"point_2d": [[10, 20], [30, 40]]}', ((10, 20), (30, 40)), ((10, 20), (30, 40))),
        ('{"bbox_2d": [[10, 20], [30, 40]]}', ((20, 30),), ((20, 30),)),  # a box key holds one box
    ],
)
def test_box_pairs(text: str, pairs: tuple[Entry, ...], plain: tuple[Entry, ...]) -> None:
    assert parse_points(text, box_pairs=True).points == tuple(pairs)
    assert parse_points(text).points == tuple(plain)
    assert parse_points(text, box_pairs=False).points == tuple(plain)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # a complete structured answer elsewhere still counts
        ("<point>1 2</point> then <point>3 4", ((1, 2),)),
        ('{"point_2d": [7, 8]} <|box_start|>(501,10),(99', ((7, 8),)),
        ("click(x=3, y=4) <box>(1,2),(3", ((3, 4),)),
        ("(5, 6) <|box_start|>(1,2)<|box_end|> <|box_start|>(3", ((1, 2),)),
        # a tag closed later is no truncation
        ("<point>12 34</point>", ((12, 34),)),
        ("<box>(1,2)</box> and (5, 6)", ((1, 2),)),
    ],
)
def test_unclosed_tags(text: str, want: tuple[Entry, ...]) -> None:
    assert parse_points(text).points == tuple(want)


def test_unclosed_tag_under_box_pairs() -> None:
    for text in ("<|box_start|>(501,10),(99", "<|box_start|>(501,10),(990,40)", "<box>[[1,2],[3,"):
        assert parse_points(text, box_pairs=True) == ParsedPoints((), True)


def test_max_points() -> None:
    text = "1. (1, 2)\n2. (-1, -1)\n3. (5, 6)"
    assert parse_points(text, max_points=1).points == ((1.0, 2.0),)
    assert parse_points(text, max_points=2).points == ((1.0, 2.0), None)
    assert len(parse_points(text, max_points=10).points) == 3
    assert parse_points("not found", max_points=1) == ParsedPoints((None,), False)
    with pytest.raises(ValueError):
        parse_points(text, max_points=0)


# ----------------------------------------------------------------------------------- parse_ranking


@pytest.mark.parametrize(
    ("text", "k", "want"),
    [
        ("3", 3, [2, 0, 1]),
        ("2, 1, 3", 3, [1, 0, 2]),
        ("[2, 1, 3]", 3, [1, 0, 2]),
        ("2 > 1 > 3", 3, [1, 0, 2]),
        ("Ranking: 2,1,3", 3, [1, 0, 2]),
        ("<answer>2</answer>", 3, [1, 0, 2]),
        ("Candidate 2", 3, [1, 0, 2]),
        ("The best is candidate #2", 3, [1, 0, 2]),
        ("Candidates 1 and 3 miss; the best is 2.", 3, [1, 0, 2]),
        ('{"ranking": [2, 1, 3]}', 3, [1, 0, 2]),
        ('{"best": 2}', 3, [1, 0, 2]),
        ('```json\n{"ranking": [3, 2]}\n```', 4, [2, 1, 0, 3]),
        ('Candidate 1 is off by 3 pixels. {"best": 2}', 3, [1, 0, 2]),
        ("Thought: candidate 1 is off. <answer>3, 1</answer>", 3, [2, 0, 1]),
        ("<think>1 > 2</think>2 > 1", 2, [1, 0]),
        ("Candidate 2 is best, then candidate 3, then candidate 1", 3, [1, 2, 0]),
        ("7, 2, 2, 0", 3, [1, 0, 2]),  # out of range and repeats ignored
        ("1", 1, [0]),
    ],
)
def test_parse_ranking_table(text: str, k: int, want: list[int]) -> None:
    assert parse_ranking(text, k) == want


@pytest.mark.parametrize("text", ["", "none of them", "0", "9 > 8", "candidate 5", "1.5", '{"best": 7}'])
def test_parse_ranking_none(text: str) -> None:
    assert parse_ranking(text, 3) is None


def test_parse_ranking_bad_k() -> None:
    with pytest.raises(ValueError):
        parse_ranking("1", 0)


# ----------------------------------------------------------------------------------- parse_yes_no


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Yes", True),
        ("yes.", True),
        ("YES, it is.", True),
        ("**No**", False),
        ("No.", False),
        ("The answer is yes", True),
        ("<think>no idea... well, no</think>Yes", True),
        ("<answer>no</answer>", False),
        ("Maybe", None),
        ("I know nothing", None),
        ("", None),
    ],
)
def test_parse_yes_no(text: str, want: bool | None) -> None:
    assert parse_yes_no(text) is want


# -------------------------------------------------------------------------------- property tests

PROPS = settings(max_examples=200, deadline=None, database=None)

coords = st.one_of(
    st.integers(min_value=-10_000, max_value=100_000).map(float),
    # no subnormals: a box centre's sign would hinge on the rounding of 5e-324 / 2 (not a screen coordinate)
    st.floats(min_value=-1e7, max_value=1e7, allow_nan=False, allow_infinity=False, allow_subnormal=False),
)
points = st.tuples(coords, coords)


def _num(v: float) -> str:
    """Rounding-safe text of a number: an int when integral, else repr (exact round trip)."""
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


def _expected(p: tuple[float, float]) -> Entry:
    return None if p[0] < 0 and p[1] < 0 else p


POINT_SYNTAXES: dict[str, Callable[[str, str], str]] = {
    "click_kw": lambda x, y: f"click(x={x}, y={y})",
    "pyautogui_pos": lambda x, y: f"pyautogui.click({x}, {y})",
    "moveTo": lambda x, y: f"pyautogui.moveTo({x}, {y})",
    "start_box": lambda x, y: f"click(start_box='({x},{y})')",
    "start_box_tokens": lambda x, y: f"click(start_box='<|box_start|>({x},{y})<|box_end|>')",
    "point_kw": lambda x, y: f"Action: click(point='<point>{x} {y}</point>')",
    "paren": lambda x, y: f"The target is at ({x}, {y}).",
    "square": lambda x, y: f"[{x}, {y}]",
    "point_tag": lambda x, y: f"<point>{x} {y}</point>",
    "point_2d": lambda x, y: f'```json\n[{{"point_2d": [{x}, {y}], "label": "target"}}]\n```',
    "tool_call": lambda x, y: (
        f'<tool_call>{{"name": "computer_use", "arguments": {{"action": "left_click", '
        f'"coordinate": [{x}, {y}]}}}}</tool_call>'
    ),
    "box_token_point": lambda x, y: f"<|box_start|>({x},{y})<|box_end|>",
    "plain": lambda x, y: f"{x}, {y}",
    "xy_json": lambda x, y: f'{{"x": {x}, "y": {y}}}',
    "point_colon": lambda x, y: f"point:{x},{y}",
    "point_colon_spaced": lambda x, y: f"point: {x}, {y}",
    "move_then_click": lambda x, y: (
        f'<tool_call>{{"name": "computer_use", "arguments": {{"action": "mouse_move", '
        f'"coordinate": [{x}, {y}]}}}}</tool_call>\n<tool_call>{{"name": "computer_use", '
        f'"arguments": {{"action": "left_click"}}}}</tool_call>'
    ),
}


@PROPS
@given(p=points, syntax=st.sampled_from(sorted(POINT_SYNTAXES)))
def test_roundtrip_single_point(p: tuple[float, float], syntax: str) -> None:
    text = POINT_SYNTAXES[syntax](_num(p[0]), _num(p[1]))
    got = parse_points(text)
    assert not got.format_error, text
    assert _same(got.points, (_expected(p),)), (text, got.points)


BOX_SYNTAXES: dict[str, Callable[[str, str, str, str], str]] = {
    "bbox_2d": lambda a, b, c, d: f'{{"bbox_2d": [{a}, {b}, {c}, {d}], "label": "x"}}',
    "square4": lambda a, b, c, d: f"[{a}, {b}, {c}, {d}]",
    "paren4": lambda a, b, c, d: f"({a}, {b}, {c}, {d})",
    "qwen2_box": lambda a, b, c, d: f"<|box_start|>({a},{b}),({c},{d})<|box_end|>",
}


@PROPS
@given(p1=points, p2=points, syntax=st.sampled_from(sorted(BOX_SYNTAXES)))
def test_roundtrip_box_centre(p1: tuple[float, float], p2: tuple[float, float], syntax: str) -> None:
    text = BOX_SYNTAXES[syntax](_num(p1[0]), _num(p1[1]), _num(p2[0]), _num(p2[1]))
    centre = ((p1[0] + p2[0]) / 2, (p1[1] + p2[1]) / 2)
    assert _same(parse_points(text).points, (_expected(centre),)), text


PAIR_SYNTAXES: dict[str, Callable[[str, str, str, str], str]] = {
    "qwen2_stripped": lambda a, b, c, d: f"({a},{b}),({c},{d})",
    "nested_pairs": lambda a, b, c, d: f"[[{a}, {b}], [{c}, {d}]]",
    "qwen2_box": lambda a, b, c, d: f"<|box_start|>({a},{b}),({c},{d})<|box_end|>",
}


@PROPS
@given(p1=points, p2=points, syntax=st.sampled_from(sorted(PAIR_SYNTAXES)))
def test_roundtrip_box_pairs(p1: tuple[float, float], p2: tuple[float, float], syntax: str) -> None:
    text = PAIR_SYNTAXES[syntax](_num(p1[0]), _num(p1[1]), _num(p2[0]), _num(p2[1]))
    centre = ((p1[0] + p2[0]) / 2, (p1[1] + p2[1]) / 2)
    assert _same(parse_points(text, box_pairs=True).points, (_expected(centre),)), text
    if syntax != "qwen2_box":  # without the option: two points
        assert _same(parse_points(text).points, (_expected(p1), _expected(p2))), text


def _tool_call(action: str, p: tuple[float, float] | None) -> str:
    coordinate = "" if p is None else f', "coordinate": [{_num(p[0])}, {_num(p[1])}]'
    return (
        f'<tool_call>{{"name": "computer_use", "arguments": {{"action": "{action}"{coordinate}}}}}'
        "</tool_call>"
    )


@PROPS
@given(
    move=points,
    click=st.none() | points,
    move_name=st.sampled_from(["mouse_move", "move_to", "hover"]),
    click_name=st.sampled_from(["left_click", "click", "double_click", "right_click"]),
)
def test_move_then_click_is_one_point(
    move: tuple[float, float], click: tuple[float, float] | None, move_name: str, click_name: str
) -> None:
    text = _tool_call(move_name, move) + "\n" + _tool_call(click_name, click)
    want = _expected(move if click is None else click)
    assert _same(parse_points(text).points, (want,)), text


def _numbered(ps: Sequence[tuple[float, float]]) -> str:
    return "\n".join(f"{i}. ({_num(x)}, {_num(y)})" for i, (x, y) in enumerate(ps, 1))


def _json_list(ps: Sequence[tuple[float, float]]) -> str:
    return json.dumps([{"point_2d": [x, y], "label": f"c{i}"} for i, (x, y) in enumerate(ps)])


def _nested(ps: Sequence[tuple[float, float]]) -> str:
    return "[" + ", ".join(f"[{_num(x)}, {_num(y)}]" for x, y in ps) + "]"


def _clicks(ps: Sequence[tuple[float, float]]) -> str:
    return "\n".join(f"click(start_box='({_num(x)},{_num(y)})')" for x, y in ps)


LIST_SYNTAXES: dict[str, Callable[[Sequence[tuple[float, float]]], str]] = {
    "numbered": _numbered,
    "json_list": _json_list,
    "nested": _nested,
    "clicks": _clicks,
}


@PROPS
@given(
    ps=st.lists(points, min_size=1, max_size=6),
    syntax=st.sampled_from(sorted(LIST_SYNTAXES)),
    cap=st.none() | st.integers(min_value=1, max_value=8),
)
def test_roundtrip_several_points(ps: list[tuple[float, float]], syntax: str, cap: int | None) -> None:
    text = LIST_SYNTAXES[syntax](ps)
    want = tuple(_expected(p) for p in ps)[:cap]
    assert _same(parse_points(text, max_points=cap).points, want), text


@PROPS
@given(text=st.text(), cap=st.none() | st.integers(min_value=1, max_value=5))
def test_parse_points_total(text: str, cap: int | None) -> None:
    got = parse_points(text, max_points=cap)
    assert isinstance(got, ParsedPoints)
    assert isinstance(got.points, tuple)
    assert got.format_error == (got.points == ())
    assert cap is None or len(got.points) <= cap
    for p in got.points:
        if p is not None:
            assert isinstance(p, tuple) and len(p) == 2
            assert all(isinstance(c, float) and math.isfinite(c) for c in p)
            assert not (p[0] < 0 and p[1] < 0)


fragments = st.sampled_from(
    ["(", ")", "[", "]", "{", "}", ",", " ", "-", ".", "1", "23", "4.5", "e9", "<point>", "</point>",
     "<|box_start|>", "<|box_end|>", "click(", "x=", "y=", '"point_2d": ', '"bbox_2d": ', "</think>",
     "<answer>", "</answer>", "start_box='", "'", "nan", "inf", "candidate ", "best ", ">", "#"]
)  # fmt: skip


@PROPS
@given(text=st.one_of(st.text(), st.lists(fragments | st.text(max_size=3), max_size=30).map("".join)))
def test_never_raises(text: str) -> None:
    got = parse_points(text)
    assert got.format_error == (got.points == ())
    for k in (1, 3):
        r = parse_ranking(text, k)
        assert r is None or sorted(r) == list(range(k))
    assert parse_yes_no(text) in (True, False, None)


@PROPS
@given(text=st.text(), k=st.integers(min_value=1, max_value=10))
def test_parse_ranking_is_permutation_or_none(text: str, k: int) -> None:
    r = parse_ranking(text, k)
    assert r is None or (isinstance(r, list) and sorted(r) == list(range(k)))


@PROPS
@given(perm=st.permutations(range(1, 7)), n=st.integers(min_value=1, max_value=6))
def test_parse_ranking_roundtrip(perm: list[int], n: int) -> None:
    k = len(perm)
    shown = perm[:n]
    rest = [i for i in range(k) if i + 1 not in shown]
    want = [p - 1 for p in shown] + rest
    assert parse_ranking(" > ".join(map(str, shown)), k) == want
    assert parse_ranking(json.dumps({"ranking": shown}), k) == want


def test_a_terminate_failure_call_is_an_abstention() -> None:
    call = '{"name": "computer_use", "arguments": {"action": "terminate", "status": "failure"}}'
    gave_up = f"<tool_call>\n{call}\n</tool_call>"
    assert parse_points(gave_up) == ParsedPoints((None,), False)
    pretty = '{\n  "status": "failure",\n  "action": "terminate"\n}'
    assert parse_points(pretty) == ParsedPoints((None,), False)
    assert parse_points('terminate(status="success")').format_error  # done is not "absent"
    with_point = '{"action": "terminate", "status": "failure", "coordinate": [1, 2]}'
    assert parse_points(with_point).points == ((1.0, 2.0),)  # a coordinate wins over a refusal


# --------------------------------------------------------------- rules pinned one by one (issue 19)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # every <answer> block is read, in order; what lies between and around them is not
        ("<answer>(1, 2)</answer> then (9, 9) <answer>(3, 4)</answer>", ((1, 2), (3, 4))),
        ("(7, 7) <answer>[10, 20]</answer>\n<answer>[30, 40]</answer> (8, 8)", ((10, 20), (30, 40))),
        # two blocks each holding one number are not one point "5 6": the blocks stay apart
        ("<answer>(5, 6)</answer><answer>(-1, -1)</answer>", ((5, 6), None)),
    ],
)
def test_several_answer_blocks_are_all_read(text: str, want: tuple[Entry, ...]) -> None:
    got = parse_points(text)
    assert got == ParsedPoints(tuple(want), False), got


def test_several_answer_blocks_stay_separate_lines() -> None:
    # each block is its own line: a key's bare numbers stop at its block (glued they would run on)
    assert parse_points("<answer>point: 10, 20</answer><answer>point: 30, 40</answer>").points == (
        (10.0, 20.0),
        (30.0, 40.0),
    )
    assert parse_points("<answer>point: 10, 20</answer><answer>5</answer>").points == ((10.0, 20.0),)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("<point>1 2</point><point>3 4</point>", ((1, 2), (3, 4))),  # adjacent: both points
        ("<point>10 20</point><point>30 40</point><point>50 60</point>", ((10, 20), (30, 40), (50, 60))),
        ("<|box_start|>(1,2)<|box_end|><|box_start|>(3,4)<|box_end|>", ((1, 2), (3, 4))),
        ("click(x=1, y=2)click(x=3, y=4)", ((1, 2), (3, 4))),
    ],
)
def test_adjacent_matches_are_all_kept(text: str, want: tuple[Entry, ...]) -> None:
    assert parse_points(text).points == tuple(want)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # a JSON action whose name carries a module prefix: the move then the click is one point, the click's
        (
            '{"action": "pyautogui.moveTo", "coordinate": [1, 2]}\n'
            '{"action": "pyautogui.leftClick", "coordinate": [3, 4]}',
            ((3, 4),),
        ),
        (
            '{"action": "pyautogui.moveTo", "coordinate": [1, 2]}\n'
            '{"action": "left_click", "coordinate": [3, 4]}',
            ((3, 4),),
        ),
        ('{"action": "gui.hover", "x": 5, "y": 6}, {"action": "gui.click", "x": 7, "y": 8}', ((7, 8),)),
        # the click with no point takes the move's
        ('{"action": "pyautogui.moveTo", "coordinate": [1, 2]}\n{"action": "pyautogui.click"}', ((1, 2),)),
        # the call forms, with and without the module
        ("pyautogui.moveTo(10, 20)\npyautogui.leftClick(30, 40)", ((30, 40),)),
        ("pyautogui.moveTo(10, 20)\nleft_click(x=30, y=40)", ((30, 40),)),
    ],
)
def test_prefixed_move_then_click_gives_the_click(text: str, want: tuple[Entry, ...]) -> None:
    assert parse_points(text).points == tuple(want)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # a number glued to a word or a dot is not read ("x1", "v1.5" give no stray 1 / 5 / .5)
        ("<point>v1.5 300 400</point>", ((300, 400),)),
        ("<box>x1 100 y1 200</box>", ((100, 200),)),
        ("<|box_start|>(x1 10,y1 20)<|box_end|>", ((10, 20),)),
        ("click(start_box='v2.0 (7,8)')", ((7, 8),)),
    ],
)
def test_numbers_glued_to_a_word_or_dot_are_not_read(text: str, want: tuple[Entry, ...]) -> None:
    assert parse_points(text).points == tuple(want)


@pytest.mark.parametrize(
    "text",
    [
        "The target is in position: 3, 4th row of the grid.",  # "4th" is no coordinate
        "point: 1, 2.5.1",  # a version string, not 1, 2.5
        "point: 512, 384px",
    ],
)
def test_a_key_value_ending_inside_a_word_or_number_is_no_point(text: str) -> None:
    assert parse_points(text) == ParsedPoints((), True)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("point: 512, 384.", ((512, 384),)),  # a full stop ends the sentence, not the number
        ("point: 512, 384, then stop", ((512, 384),)),
        ("point: 0.5, 0.25)", ((0.5, 0.25),)),
    ],
)
def test_a_key_value_ending_at_punctuation_is_read(text: str, want: tuple[Entry, ...]) -> None:
    assert parse_points(text).points == tuple(want)
