"""``gge import generic --columns``: a table of any harness, its columns declared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gge.errors import GgeError
from gge.models.imported import import_log
from gge.models.imported.generic import parse_columns
from gge.models.imported.reread import reading
from gge.types import Box, Sample


def _samples() -> list[Sample]:
    return [
        Sample("b", f"s-{i}", f"/d/app/{i}.png", (100, 80), f"click {i}", Box(10, 10, 30, 30))
        for i in range(3)
    ]


def test_a_csv_with_x_and_y_columns_and_its_verdicts(tmp_path: Path) -> None:
    path = tmp_path / "preds.csv"
    path.write_text(
        "file,query,px,py,ok\n"
        "app/0.png,click 0,20,20,correct\n"  # a hit, as the table says
        "app/1.png,click 1,90,70,0\n"  # a miss, as the table says
        "app/2.png,click 2,,,wrong\n"  # no point
    )
    columns = parse_columns("image=file,instruction=query,x=px,y=py,correct=ok")
    report = import_log("generic", path, _samples(), columns=columns)
    assert {sid: ln.line for sid, ln in report.matched.lines.items()} == {"s-0": 2, "s-1": 3, "s-2": 4}
    assert [r["candidates"] for r in report.records] == [[[20.0, 20.0]], [[90.0, 70.0]], ["unparsed"]]
    assert report.agree == 3 and report.hits == 1


def test_a_vlmevalkit_style_tsv_read_from_its_raw_predictions(tmp_path: Path) -> None:
    path = tmp_path / "model_ScreenSpot.tsv"
    path.write_text(
        "index\timage_path\tquestion\tbbox\tprediction\n"
        "1\tapp/0.png\tclick 0\t[10, 10, 20, 20]\tpyautogui.click(x=0.2, y=0.25)\n"
        "2\tapp/1.png\tclick 1\t[10, 10, 20, 20]\tpyautogui.click(x=0.9, y=0.9)\n"
    )
    columns = parse_columns("image=image_path,instruction=question,raw=prediction")
    with pytest.raises(GgeError, match="no parsed point: name --preset NAME or --convention NAME"):
        import_log("generic", path, _samples(), columns=columns)
    report = import_log("generic", path, _samples(), reading(convention="norm_1"), columns)
    # 0.2 x 100, 0.25 x 80 = (20, 20): a hit; (90, 72): a miss; s-2 is not in the file
    assert [r["candidates"] for r in report.records] == [[[20.0, 20.0]], [[90.0, 72.0]]]
    assert report.matched.missing == ["s-2"] and report.hits == 1 and report.unjudged == 2


def test_jsonl_with_a_point_column_and_ids(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps({"sid": f"s-{i}", "xy": [15, 15]}) for i in range(3)) + "\n")
    report = import_log("generic", path, _samples(), columns=parse_columns("id=sid,point=xy"))
    assert len(report.records) == 3 and report.hits == 3


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("id=a,point", r"'point' is not field=column"),
        ("id=a,where=b,point=c", r"unknown field 'where'"),
        ("image=a,point=b", r"name id=\.\.\., or both image=\.\.\. and instruction=\.\.\."),
        ("id=a,correct=b", r"name point=\.\.\., or x=\.\.\. and y=\.\.\., or raw=\.\.\."),
        ("id=a,x=px,raw=r", r"x=px without y=\.\.\.: name both coordinates"),
        ("id=a,y=py,point=p", r"y=py without x=\.\.\.: name both coordinates"),
    ],
)
def test_a_bad_columns_spec_is_one_line(spec: str, message: str) -> None:
    with pytest.raises(GgeError, match="--columns: " + message):
        parse_columns(spec)


def test_a_declared_column_a_row_lacks_names_the_line_and_the_column(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"sid": "s-0", "xy": [1, 1]}) + "\n" + json.dumps({"sid": "s-1"}) + "\n")
    with pytest.raises(GgeError, match=r"p\.jsonl:2: no column 'xy' \(declared as point=xy\)"):
        import_log("generic", path, _samples(), columns=parse_columns("id=sid,point=xy"))
    with pytest.raises(GgeError, match="--columns is for gge import generic"):
        import_log("gelato", path, _samples(), columns={"id": "sid"})
    with pytest.raises(GgeError, match="needs --columns"):
        import_log("generic", path, _samples())


def test_csv_rows_keep_their_line_numbers_and_long_cells(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    long_answer = "(20, 20) " + "x" * 200_000  # longer than the csv module's default field limit
    path.write_text(
        'id,answer\ns-0,"(15, 15)\nsecond line"\n\ns-1,"' + long_answer + '"\ns-2,\n',
        encoding="utf-8-sig",  # with a byte-order mark, as spreadsheet programs write
    )
    columns = parse_columns("id=id,raw=answer")
    report = import_log("generic", path, _samples(), reading(convention="abs_original"), columns)
    # the first row spans lines 2-3, a blank line 4, the long row line 5, the empty answer line 6
    assert {sid: ln.line for sid, ln in report.matched.lines.items()} == {"s-0": 3, "s-1": 5, "s-2": 6}
    assert [r["candidates"] for r in report.records] == [[[15.0, 15.0]], [[20.0, 20.0]], ["unparsed"]]


def test_a_broken_json_list_is_named_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('[\n {"id": "s-0", "xy": [1, 1]},\n {"id": "s-1", "xy": [1, 1]\n]\n')
    with pytest.raises(GgeError, match=r"p\.json:4: not JSON"):
        import_log("generic", path, _samples(), columns=parse_columns("id=id,point=xy"))


def test_spreadsheet_verdicts_read_as_written(tmp_path: Path) -> None:
    path = tmp_path / "p.json"  # a JSON list from a float column: 1.0 / 0.0, numbers and text
    rows = [
        {"sid": "s-0", "xy": [15, 15], "ok": 1.0},
        {"sid": "s-1", "xy": [15, 15], "ok": "0.0"},
        {"sid": "s-2", "xy": [15, 15], "ok": 0},
    ]
    path.write_text(json.dumps(rows))
    report = import_log("generic", path, _samples(), columns=parse_columns("id=sid,point=xy,correct=ok"))
    assert [ln.correct for ln in report.read] == [True, False, False]
    path.write_text(json.dumps([{**rows[0], "ok": 2.0}]))
    with pytest.raises(GgeError, match=r"p\.json:1: ok must be true/false, 1/0 or correct/wrong, got 2\.0"):
        import_log("generic", path, _samples(), columns=parse_columns("id=sid,point=xy,correct=ok"))
