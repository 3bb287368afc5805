"""A rerun with another ``bench.osworld_g.refusals`` into the same output folder (issue 26 item 9).

``OSWorldGOptions.NOT_PREDICTIVE`` documents that ``refusals`` changes how the answers are scored, not
what is asked, so a rerun with another value reuses the predictions and rescores them. Pinned here:
the resumed run's numbers are a fresh run's under the new value, worked out by hand in
``osworld_g_folder.EXPECTED`` (miss: 2 hits of 8, 25 %, no refusal hit).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from osworld_g_folder import EXPECTED, replay, write_folder, write_predictions

from gge.run.settings import parse_args
from gge.run.standalone import run


def _refusal_row(entry: dict[str, object]) -> tuple[int, float] | None:
    tables = entry["tables"]
    assert isinstance(tables, list)
    (table,) = [t for t in tables if t["rows"] == "box_type"]
    row = table["row_avg"].get("refusal")
    return None if row is None else (row["samples"], row["top1"])


@pytest.mark.slow
def test_a_rerun_with_refusals_as_misses_rescores_the_answers_it_reuses(tmp_path: Path) -> None:
    data = write_folder(tmp_path / "data").parent
    predictions = write_predictions(tmp_path / "p.jsonl")
    first = replay(data, predictions, tmp_path / "run")
    assert first["benchmarks"]["osworld_g"]["top1"] == pytest.approx(EXPECTED["scored"][2])
    # the answers the folder holds are reused, every one of them (none asked again)
    printed = io.StringIO()
    args = [f"data_root={data}", f"model.predictions={predictions}", f"output_dir={tmp_path / 'run'}"]
    resumed = run(parse_args([*args, "benchmarks=[osworld_g]", "bench.osworld_g.refusals=miss"]), out=printed)
    assert f"resuming: {EXPECTED['miss'][0]} samples already finished" in printed.getvalue()
    fresh = replay(data, predictions, tmp_path / "fresh", "bench.osworld_g.refusals=miss")
    samples, hits, top1, abstentions, row = EXPECTED["miss"]
    for doc in (resumed, fresh):
        entry = doc["benchmarks"]["osworld_g"]
        assert (entry["samples"], entry["abstentions"]) == (samples, abstentions)
        assert entry["top1"] == pytest.approx(top1, abs=1e-12)
        assert _refusal_row(entry) == pytest.approx(row)
        assert entry["load"]["variant"]["refusals"] == "miss"
    # the outcome written per line is the new rule's: no refusal sample hits, 2 hits in all
    lines = [json.loads(x) for x in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert sum(line["top1"]["first"] for line in lines) == hits
    assert not any(line["top1"]["first"] for line in lines if line["id"].startswith("CCCCCCCCCC"))
    assert resumed["benchmarks"]["osworld_g"]["top1"] == fresh["benchmarks"]["osworld_g"]["top1"]
