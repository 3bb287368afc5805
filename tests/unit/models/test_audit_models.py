"""Mutation-audit pins of a replay's line-vs-sample check and of ``set_options`` (expected values by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf
from PIL import Image

from gge.errors import GgeError
from gge.models.factory import ModelConfig
from gge.models.registry import set_options
from gge.models.replay import ReplayModel
from gge.types import Box, Sample


def _replay(tmp_path: Path, lines: list[dict[str, object]]) -> tuple[ReplayModel, Path]:
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return ReplayModel(path), path


def _line(sid: str, image: str, size: list[int]) -> dict[str, object]:
    return {"benchmark": "b", "id": sid, "candidates": [[5, 5]], "image": image, "size": size}


def _sample(sid: str, image: str, size: tuple[int, int] = (10, 10)) -> Sample:
    return Sample("b", sid, image, size, "click", Box(0, 0, 9, 9))


def test_a_sample_embedded_in_a_hub_copy_is_not_compared_by_name(tmp_path: Path) -> None:
    """A line naming a file answers a Hub copy's row: the row has no file name, only its size is compared."""
    model, _ = _replay(tmp_path, [_line("0", "/release/a.png", [10, 10])])
    row = _sample("0", f"{tmp_path / 'test-00000.parquet'}::parquet:0/image")
    assert model.differences(row) is None
    model.check_samples([row])  # no refusal


def test_the_refusal_names_the_files_first_differing_line_not_the_first_sample(tmp_path: Path) -> None:
    lines = [_line("0", "/x/zero.png", [10, 10]), _line("1", "/x/one.png", [10, 10])]
    model, path = _replay(tmp_path, lines)
    later, earlier = _sample("1", "/d/a.png"), _sample("0", "/d/b.png")
    with pytest.raises(GgeError) as e:
        model.check_samples([later, earlier])  # samples in another order than the file's lines
    assert str(e.value).startswith(
        f"{path}:1: b 0: the line's screenshot is zero.png (10x10), the sample's b.png (10x10) "
        "(2 of the 2 lines"
    )


def test_only_samples_with_a_line_are_counted_as_checked(tmp_path: Path) -> None:
    Image.new("RGB", (10, 10)).save(tmp_path / "a.png")
    model, _ = _replay(tmp_path, [_line("0", "/x/other.png", [10, 10])])
    with pytest.raises(GgeError, match=r"\(1 of the 1 lines checked name another screenshot"):
        model.check_samples(
            [_sample("0", str(tmp_path / "a.png")), _sample("7", "/d/a.png"), _sample("8", "/d/a.png")]
        )


def test_a_variant_prompt_is_named_by_its_own_key() -> None:
    """A section's dict default ({}) is not itself reported null when a key is set under it."""
    m = OmegaConf.merge(
        OmegaConf.structured(ModelConfig), {"prompts": {"variants": {"screenspot_pro": {"system": "s"}}}}
    )
    assert isinstance(m, DictConfig)
    assert set_options(m, ("name", "critic")) == ["prompts.variants.screenspot_pro.system=s"]


def test_building_a_replay_with_an_option_it_does_not_read_refuses(tmp_path: Path) -> None:
    """The kind's build checks its options itself, not only the run before it (a direct caller too)."""
    from gge.models.registry import kind_of
    from gge.run.settings import parse_args

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"benchmark": "b", "id": "0", "candidates": [[5, 5]]}) + "\n")
    cfg = parse_args(["model=replay", f"model.predictions={path}", "model.temperature=0.9"])
    with pytest.raises(GgeError, match=r"^model\.temperature=0\.9: model=replay does not use it "):
        kind_of(cfg.model).build(cfg)
    ok = parse_args(["model=replay", f"model.predictions={path}"])
    assert isinstance(kind_of(ok.model).build(ok), ReplayModel)


def test_a_built_replay_stops_at_a_missing_screenshot_with_strict_images(tmp_path: Path) -> None:
    from gge.models.registry import kind_of
    from gge.run.settings import parse_args

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"benchmark": "b", "id": "0", "candidates": [[5, 5]]}) + "\n")
    gone = _sample("0", "/gone.png")
    lenient = parse_args(["model=replay", f"model.predictions={path}"])
    preds = kind_of(lenient.model).build(lenient).predict([gone])
    # its size is known: a replay scores it without the file (issue 37), unless strict_images
    assert [(p.image_error, [c.point for c in p.candidates]) for p in preds] == [(None, [(5.0, 5.0)])]
    unknown = _sample("0", "/gone.png", size=(1, 1))  # the size only the (absent) file could give
    preds = kind_of(lenient.model).build(lenient).predict([unknown])
    assert [p.image_error for p in preds] == ["b: sample 0: cannot read image /gone.png: not found"]
    strict = parse_args(["model=replay", f"model.predictions={path}", "strict_images=true"])
    with pytest.raises(GgeError, match=r"cannot read image /gone.png: not found \(strict_images=true\)"):
        kind_of(strict.model).build(strict).predict([gone])
