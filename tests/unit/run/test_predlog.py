from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gge.documents.records import encode
from gge.errors import GgeError
from gge.models.replay import parse_line
from gge.run.predlog import (
    MalformedLine,
    PredictionLog,
    bad_lines_path,
    existing_logs,
    rank_log_path,
    read_records,
)
from gge.scoring.scoring import score_sample
from gge.types import Box, Candidate, Prediction, Sample


def _record(i: int, bench: str = "demo") -> dict[str, object]:
    s = Sample(bench, str(i), "/x.png", (100, 100), "click", Box(10, 10, 20, 20), {"group": "a"})
    p = Prediction(bench, str(i), (Candidate((15.0, 15.0), 0.9), Candidate((50.0, 50.0), 0.1)), raw="é")
    return encode(score_sample(s, p, k=5))


def _lines(path: Path) -> list[object]:
    text = path.read_text(encoding="utf-8")
    assert text == "" or text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "predictions.rank0.jsonl"
    log = PredictionLog(path)
    assert path.parent.is_dir() and not path.exists()  # opened lazily
    log.append([_record(0), _record(1)])
    log.append([])
    log.append(iter([_record(2)]))
    log.close()
    log.close()
    records = read_records([path])
    assert list(records) == [("demo", "0"), ("demo", "1"), ("demo", "2")]
    assert records[("demo", "1")] == _record(1)
    assert records.duplicates == 0 and records.dropped == []
    # Each line is a valid replay line.
    pred = parse_line(records[("demo", "0")], "x:1")
    assert pred.candidates[0].point == (15.0, 15.0) and pred.raw == "é"
    # Appending after close reopens, in append mode.
    with PredictionLog(path) as again:
        again.append([_record(3)])
    assert len(_lines(path)) == 4


def test_append_rejects_records_without_keys(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    log = PredictionLog(path)
    with pytest.raises(ValueError):
        log.append([_record(0), {"id": "1"}])
    log.close()
    assert not path.exists() or path.read_text() == ""


@pytest.mark.parametrize(
    "tail",
    [b'{"benchmark": "demo", "id": "9", "candi', b"\x00\x00\x00", b'{"benchmark": "demo"}', b"garbage\n"],
)
def test_truncated_last_line_is_ignored_and_repaired(tmp_path: Path, tail: bytes) -> None:
    path = rank_log_path(tmp_path, 0)
    with PredictionLog(path) as log:
        log.append([_record(0), _record(1)])
    good = path.read_bytes()
    path.write_bytes(good + tail)
    records = read_records([path])
    assert list(records) == [("demo", "0"), ("demo", "1")]
    assert records.dropped == [path]
    assert path.read_bytes() == good
    with PredictionLog(path) as log:
        log.append([_record(2)])
    assert [r["id"] for r in _lines(path)] == ["0", "1", "2"]  # type: ignore[index]


def test_no_repair_leaves_the_file(tmp_path: Path) -> None:
    path = rank_log_path(tmp_path, 0)
    path.write_bytes(json.dumps(_record(0)).encode() + b'\n{"bench')
    before = path.read_bytes()
    assert list(read_records([path], repair=False)) == [("demo", "0")]
    assert path.read_bytes() == before


def test_writer_repairs_its_own_file(tmp_path: Path) -> None:
    path = rank_log_path(tmp_path, 1)
    path.write_bytes(json.dumps(_record(0)).encode() + b'\n{"benchmark": "de')
    with PredictionLog(path) as log:
        log.append([_record(1)])
    assert [r["id"] for r in _lines(path)] == ["0", "1"]  # type: ignore[index]


def test_malformed_middle_line_names_file_and_line(tmp_path: Path) -> None:
    path = rank_log_path(tmp_path, 0)
    good = json.dumps(_record(0))
    path.write_text(f"{good}\n\n{{oops\n{good}\n")
    with pytest.raises(GgeError, match=rf"{path.name}:3: malformed JSON"):
        read_records([path])
    # A malformed line followed by an unterminated tail is not the last line: still an error.
    path.write_text(f"{good}\n{{oops\n{{trunc")
    with pytest.raises(GgeError, match=rf"{path.name}:2"):
        read_records([path])


def test_malformed_middle_lines_are_dropped_when_asked_and_kept_aside(tmp_path: Path) -> None:
    path = rank_log_path(tmp_path, 0)
    a, b, c = (json.dumps(_record(i)) for i in range(3))
    bad_json, not_a_record = "{oops", '{"id": "9"}'
    text = f"{a}\n{bad_json}\n{b}\n{not_a_record}\n{c}\n{{trunc"  # and a truncated last line
    path.write_text(text)
    with pytest.raises(MalformedLine) as e:  # stopping is the default
        read_records([path])
    assert (e.value.path, e.value.lineno) == (path, 2) and isinstance(e.value, GgeError)
    text = text.removesuffix("{trunc")
    assert path.read_text() == text  # only the truncated tail was cut off (as before)
    # a reader that may not write: the lines are skipped, the file is left as it is
    records = read_records([path], repair=False, drop_malformed=True)
    assert list(records) == [("demo", "0"), ("demo", "1"), ("demo", "2")]
    assert [m.split(": ", 1)[0] for m in records.malformed] == [f"{path}:2", f"{path}:4"]
    assert records.moved_to == [] and path.read_text() == text
    # repairing: moved to <log>.bad as they were, the log keeps the good lines in order
    records = read_records([path], drop_malformed=True)
    assert list(records) == [("demo", "0"), ("demo", "1"), ("demo", "2")]
    assert records.moved_to == [bad_lines_path(path)] == [tmp_path / "predictions.rank0.jsonl.bad"]
    assert bad_lines_path(path).read_text() == f"{bad_json}\n{not_a_record}\n"
    assert path.read_text() == f"{a}\n{b}\n{c}\n"
    assert read_records([path]).malformed == []  # read again: nothing left to drop


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "1"}', "missing field 'benchmark'"),
        ('{"benchmark": "b"}', "missing field 'id'"),
        ('{"benchmark": 3, "id": "1"}', "field 'benchmark' must be a string"),
        ('{"benchmark": "b", "id": true}', "field 'id' must be"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_records_without_keys_are_errors(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(_record(0)) + "\n" + line + "\n")
    with pytest.raises(GgeError, match=rf"p\.jsonl:2: {message}"):
        read_records([path])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GgeError, match="not found"):
        read_records([tmp_path / "nope.jsonl"])


def test_duplicates_counted_and_first_kept(tmp_path: Path) -> None:
    first = _record(0)
    second = dict(_record(0), raw="later")
    a, b = rank_log_path(tmp_path, 0), rank_log_path(tmp_path, 1)
    with PredictionLog(a) as log:
        log.append([first, _record(1), second])
    with PredictionLog(b) as log:
        log.append([dict(_record(1), raw="other rank"), _record(1, bench="other")])
    records = read_records([a, b])
    assert isinstance(records, dict)
    assert len(records) == 3
    assert records[("demo", "0")]["raw"] == "é"
    assert records[("demo", "1")]["raw"] == "é"
    assert records.duplicates == 2
    assert records.duplicate_keys == [("demo", "0"), ("demo", "1")]


def test_rank_files_merged_across_world_sizes(tmp_path: Path) -> None:
    # An earlier run with 3 ranks, a later one with 2: every file is found and merged.
    for rank in range(3):
        with PredictionLog(rank_log_path(tmp_path, rank)) as log:
            log.append([_record(i) for i in range(rank, 9, 3)])
    with PredictionLog(rank_log_path(tmp_path, 1)) as log:
        log.append([_record(9), _record(10, bench="other")])
    (tmp_path / "predictions.jsonl").write_text("")
    (tmp_path / "predictions.rankx.jsonl").write_text("")
    logs = existing_logs(tmp_path)
    assert [p.name for p in logs] == [f"predictions.rank{r}.jsonl" for r in range(3)]
    records = read_records(logs)
    assert {k for k in records if k[0] == "demo"} == {("demo", str(i)) for i in range(10)}
    assert ("other", "10") in records and records.duplicates == 0


def test_paths_and_listing(tmp_path: Path) -> None:
    assert rank_log_path(tmp_path, 12) == tmp_path / "predictions.rank12.jsonl"
    assert rank_log_path(str(tmp_path), 0) == tmp_path / "predictions.rank0.jsonl"
    with pytest.raises(ValueError):
        rank_log_path(tmp_path, -1)
    assert existing_logs(tmp_path / "missing") == []
    assert existing_logs(tmp_path) == []
    for r in (11, 2, 0):
        rank_log_path(tmp_path, r).write_text("")
    assert [p.name for p in existing_logs(tmp_path)] == [
        "predictions.rank0.jsonl",
        "predictions.rank2.jsonl",
        "predictions.rank11.jsonl",
    ]
    assert read_records(existing_logs(tmp_path)) == {}


# -- the codec of a line: encode / decode ---------------------------------------------------------
# a line as gge writes it, typed out by hand: three candidates (a point, an abstention, an unparseable
# answer) with the critic's scores, the critic's text, a two-valued label, each strategy's pick
LINE = (
    '{"benchmark": "screenspot_pro", "id": "vscode_0", "candidates": [[12.5, 40.0], null, "unparsed"], '
    '"scores": [0.75, 0.5, null], "raw": "(12.5, 40)", "format_error": false, "truncated": true, '
    '"critic_raw": "1", "critic_format_error": false, "hits": [true, false, false], '
    '"image": "/shots/vscode_0.png", "labels": {"group": "Dev", "kind": ["text", "icon"]}, '
    '"top1": {"critic": true, "first": true, "mean": false}, '
    '"picks": {"critic": [12.5, 40.0], "first": [12.5, 40.0], "mean": null}}'
)


def test_the_codec_reads_a_hand_written_line_and_writes_it_back_byte_for_byte() -> None:
    from gge.documents.records import PredictionRecord, decode, encode
    from gge.types import SampleResult

    rec = decode(json.loads(LINE), "p.jsonl:1")
    assert (rec.benchmark, rec.id, rec.raw, rec.truncated) == (
        "screenspot_pro",
        "vscode_0",
        "(12.5, 40)",
        True,
    )
    assert [(c.point, c.score, c.parsed) for c in rec.candidates] == [
        ((12.5, 40.0), 0.75, True),
        (None, 0.5, True),
        (None, None, False),
    ]
    assert (rec.format_error, rec.image_error, rec.critic_raw, rec.critic_format_error) == (
        False,
        None,
        "1",
        False,
    )
    assert rec.hits == (True, False, False) and rec.image == "/shots/vscode_0.png"
    assert rec.labels == {"group": "Dev", "kind": ("text", "icon")}
    assert rec.top1 == {"critic": True, "first": True, "mean": False}
    assert rec.picks == {"critic": Candidate((12.5, 40.0)), "first": Candidate((12.5, 40.0)), "mean": None}
    assert json.dumps(rec.to_json()) == LINE  # written back as it was read
    # the scored sample this line is the record of: encode writes the hand-written line
    point = Candidate((12.5, 40.0), 0.75)
    result = SampleResult(
        "screenspot_pro",
        "vscode_0",
        {"group": "Dev", "kind": ("text", "icon")},
        3,
        (point, Candidate(None, 0.5), Candidate(None, parsed=False)),
        (True, False, False),
        picks={"critic": point, "first": point, "mean": None},
        top1={"critic": True, "first": True, "mean": False},
        raw="(12.5, 40)",
        critic_raw="1",
        truncated=True,
        image_path="/shots/vscode_0.png",
    )
    assert json.dumps(encode(result)) == LINE
    back = decode(encode(result), "p.jsonl:1")
    assert back == rec  # what the file holds (a pick is written without its score)
    assert PredictionRecord.of(result).to_json() == rec.to_json()
    # replay reads the same line as the prediction it holds
    pred = parse_line(json.loads(LINE), "p.jsonl:1")
    assert pred.candidates == rec.candidates and pred.truncated and pred.critic_raw == "1"


def test_a_replay_line_has_no_outcomes_and_bad_fields_name_the_file_and_line() -> None:
    from gge.documents.records import decode

    rec = decode({"benchmark": "b", "id": 7, "candidates": [[-1, -1], [3, 4]]}, "r.jsonl:1")
    assert rec.id == "7" and [c.point for c in rec.candidates] == [None, (3.0, 4.0)]
    assert (rec.hits, rec.top1, rec.picks, rec.image, rec.labels) == (None, None, None, None, None)
    assert rec.to_json() == {
        "benchmark": "b",
        "id": "7",
        "candidates": [None, [3.0, 4.0]],
        "raw": "",
        "format_error": False,
    }
    base = json.loads(LINE)
    for field, value, needle in (
        ("hits", [1, 0, 0], "field 'hits' must be a list of true/false"),
        ("top1", {"critic": "yes"}, "field 'top1' must be an object of true/false"),
        ("picks", {"critic": [1.0]}, "the 'critic' pick must be [x, y]"),
        ("image", 3, "field 'image' must be a string"),
        ("labels", {"group": 3}, "label 'group' must be a string or a list of strings"),
        ("candidates", "x", "field 'candidates' must be a list"),
    ):
        with pytest.raises(GgeError, match=rf"^p\.jsonl:3: {re.escape(needle)}"):
            decode(base | {field: value}, "p.jsonl:3")
