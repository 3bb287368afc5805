"""The resume check on odd run records, and how a differing setting is shown (own mutation sample)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gge.errors import GgeError
from gge.run.runstate import differences, prepare_output_dir


@pytest.mark.parametrize("recorded", [[1, 2], "k=5", 7])
def test_a_run_record_whose_fingerprint_is_no_mapping_is_a_different_run(
    tmp_path: Path, recorded: object
) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"fingerprint": recorded}))
    (tmp_path / "predictions.rank0.jsonl").write_text('{"benchmark": "x", "id": "1"}\n')
    with pytest.raises(GgeError, match=r"holds predictions of a different run"):
        prepare_output_dir(
            tmp_path, {"k": 5, "benchmarks": {"x": {"samples": "asked:" + "0" * 64}}}, resume=True
        )


def test_a_setting_is_shown_whole_up_to_sixty_characters_then_cut() -> None:
    sixty = "x" * 58  # 60 characters with its quotes
    assert differences({"a": sixty}, {"a": 1}) == [f'a: "{sixty}" -> 1']
    longer = "y" * 59  # 61 with its quotes: the first 57, then ...
    assert differences({"a": 1}, {"a": longer}) == ['a: 1 -> "' + "y" * 56 + "..."]


def test_the_lock_file_is_readable_by_all_and_written_by_its_owner_only(tmp_path: Path) -> None:
    from gge.run.runstate import LOCK_FILE, output_dir_lock

    umask = os.umask(0)
    os.umask(umask)
    with output_dir_lock(tmp_path):
        assert stat.S_IMODE((tmp_path / LOCK_FILE).stat().st_mode) == 0o644 & ~umask
