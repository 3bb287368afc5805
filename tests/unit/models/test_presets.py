"""Each preset's greedy request equals its family's official request, word for word.

The official requests are test data (``tests/data/official/<preset>.json``), written from the
family's evaluation code (named in each file's ``source``), not from gge's templates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from paths import DATA, ROOT

from gge.models.factory import load_preset, preset_names
from gge.models.registry import preset_request

OFFICIAL = DATA / "official"
FAMILIES = [
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen2_vl",
    "ui_tars_1_5",
    "gta1",
    "ui_venus_ground",
    "ui_venus_1_5",
    "gui_g2",
    "gui_owl_1_5",
    "holo1_5",
    "infigui_g1",
    "mai_ui",
    "se_gui",
    "opencua",
]


def _normal(messages: list[dict[str, Any]]) -> list[tuple[str, list[Any]]]:
    """Role and parts, adjacent text parts joined (a chat template concatenates them)."""
    out = []
    for m in messages:
        parts: list[Any] = []
        for c in m["content"]:
            if c["type"] == "text" and parts and parts[-1][0] == "text":
                parts[-1] = ("text", parts[-1][1] + c["text"])
            elif c["type"] == "text":
                parts.append(("text", c["text"]))
            else:
                parts.append(("image", c["width"], c["height"]))
        out.append((m["role"], parts))
    return out


def _cases() -> list[Any]:
    cases = []
    for name in FAMILIES:
        path = OFFICIAL / f"{name}.json"
        if not path.is_file():
            cases.append(pytest.param(name, None, marks=pytest.mark.xfail(reason="no official data yet")))
            continue
        for i, case in enumerate(json.loads(path.read_text(encoding="utf-8"))["cases"]):
            cases.append(pytest.param(name, case, id=f"{name}-{i}-{case['benchmark']}"))
    return cases


def test_every_family_has_a_preset() -> None:
    assert set(FAMILIES) | {"openai_api"} <= set(preset_names())


@pytest.mark.parametrize(("name", "case"), _cases())
def test_greedy_request_equals_the_official_one(name: str, case: dict[str, Any] | None) -> None:
    assert case is not None
    seen, specs = preset_request(
        name, case["benchmark"], case["instruction"], tuple(case["image_size"]), {"proposer": "greedy"}
    )
    assert list(seen) == case["seen_size"]
    assert len(specs) == 1
    assert _normal(specs[0].messages) == _normal(case["messages"])
    assert specs[0].prefill == case["prefill"]
    for key, value in case["generation"].items():
        assert specs[0].generation[key] == value, key


@pytest.mark.parametrize("name", FAMILIES)
def test_official_by_default_and_source_named(name: str) -> None:
    preset = load_preset(name)
    assert preset.proposer == "greedy" and preset.critic == "none"
    assert preset.source and preset.family and preset.model_types
    # the YAML names its source in a comment too (repository, file, commit or date)
    assert (ROOT / "configs" / "models" / f"{name}.yaml").read_text().startswith("# ")


def test_presets_are_found_from_a_source_tree_without_gge_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    # `python eval.py` in a clone imports gge from the clone, where gge.configs is no folder (the wheel
    # maps configs/ to it): the clone's configs/ is used then
    import importlib.resources

    from gge.models import factory

    def missing(name: str) -> None:
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(importlib.resources, "files", missing)
    assert factory._preset_dir() == ROOT / "configs" / "models"
    assert (factory._preset_dir() / "qwen2_5_vl.yaml").is_file()
