"""Family detection, the sizes a preset's settings give (issue 19, item 10), the registry of model kinds."""

from __future__ import annotations

import inspect
import io
import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from omegaconf import OmegaConf
from PIL import Image

from gge.errors import GgeError
from gge.integrations.verl import export_verl
from gge.models.factory import (
    ADAPTER_KEYS,
    PRESET_DIR,
    MarkerConfig,
    ModelConfig,
    adapter_settings,
    preset_config,
    preset_for_checkpoint,
    preset_names,
)
from gge.models.markers import MarkerStyle
from gge.models.policy import AdapterSettings, GroundingPolicy
from gge.models.registry import KINDS, PRESET, ModelKind, build_policy, dry_run_policy, kind_of, model_names
from gge.run.settings import parse_args

SCREEN = (390, 844)  # the demo suite's ScreenSpot-v2 mobile screenshots


def _qwen_smart_resize(height: int, width: int, factor: int, lo: int, hi: int) -> tuple[int, int]:
    """Qwen2-VL's smart_resize (qwen_vl_utils), written out here: (height, width)."""
    h, w = round(height / factor) * factor, round(width / factor) * factor
    if h * w > hi:
        beta = math.sqrt(height * width / hi)
        h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h * w < lo:
        beta = math.sqrt(lo / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h, w


def test_a_fine_tune_whose_config_names_its_base_model_is_the_fine_tune(tmp_path: Path) -> None:
    folder = tmp_path / "UI-TARS-1.5-7B"
    folder.mkdir()
    config = {"model_type": "qwen2_5_vl", "_name_or_path": "Qwen/Qwen2.5-VL-7B-Instruct"}
    (folder / "config.json").write_text(json.dumps(config))
    preset, why = preset_for_checkpoint(str(folder))
    assert preset == "ui_tars_1_5"
    assert why == "model_type 'qwen2_5_vl' and the name 'UI-TARS-1.5-7B' matches /ui[-_ ]?tars[-_ ]?1\\.5/"
    assert parse_args([f"ckpt={folder}"]).model.name == "ui_tars_1_5"
    # the base model's own folder is the base model
    base = tmp_path / "Qwen2.5-VL-7B-Instruct"
    base.mkdir()
    (base / "config.json").write_text(json.dumps(config))
    assert preset_for_checkpoint(str(base))[0] == "qwen2_5_vl"


OPENAI = ["model.backend=openai", "model.base_url=http://127.0.0.1:9/v1", "model.api_model=served"]


@pytest.mark.parametrize(
    ("args", "seen"),
    [
        (["model=qwen2_5_vl"], (392, 840)),  # the family's smart_resize (factor 28): 390 -> 392, 844 -> 840
        (["model=qwen3_vl"], (384, 832)),  # factor 32
        (["model=openai_api"], SCREEN),  # gge's endpoint preset sends the screenshot as it is
        (["model=openai_api", "model.resize_factor=28"], (392, 840)),
    ],
)
def test_a_preset_over_the_openai_backend_keeps_its_resize_in_a_run_and_a_dry_run(
    args: list[str], seen: tuple[int, int]
) -> None:
    cfg = parse_args([*args, *OPENAI])
    run_size = build_policy(cfg).backend.seen_size(*SCREEN)  # type: ignore[attr-defined]
    dry_size = dry_run_policy(cfg.model, 5).backend.seen_size(*SCREEN)
    assert run_size == dry_size == seen
    if cfg.model.name != "openai_api":
        m = cfg.model
        h, w = _qwen_smart_resize(
            SCREEN[1], SCREEN[0], int(m.patch_factor), int(m.min_pixels), int(m.max_pixels)
        )
        assert (w, h) == seen


def _yaml(name: str) -> dict[str, Any]:
    data = yaml.safe_load((PRESET_DIR / f"{name}.yaml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("name", preset_names())
def test_the_settings_carry_the_preset_s_min_pixels(name: str) -> None:
    expected = _yaml(name).get("min_pixels") or 56 * 56  # the processors' default where a preset sets none
    assert adapter_settings(preset_config(name), 5).min_pixels == expected


def test_the_schema_s_defaults_are_the_settings_defaults() -> None:
    """One set of defaults: the model section's schema takes them from the settings it fills."""
    assert {key: getattr(ModelConfig(), key) for key in ADAPTER_KEYS} == {
        key: getattr(AdapterSettings(), key) for key in ADAPTER_KEYS
    }
    markers = MarkerConfig()
    assert MarkerStyle(**{**vars(markers), "colors": tuple(markers.colors)}) == MarkerStyle()
    assert adapter_settings(OmegaConf.structured(ModelConfig(name="custom")), 5) == AdapterSettings()


@pytest.mark.parametrize("name", preset_names())
def test_the_adapter_settings_take_the_model_options_as_the_schema_types_them(name: str) -> None:
    m = preset_config(name, {"temperature": 1, "top_p": 1, "max_new_tokens": 64})  # ints for floats
    settings = adapter_settings(m, 5)
    assert settings.preset == name and settings.k == (1 if m.proposer == "greedy" else 5)
    for key in ADAPTER_KEYS:
        value, default = getattr(settings, key), getattr(AdapterSettings(), key)
        assert value == m[key], key
        assert value is None or default is None or type(value) is type(default), key
    assert settings.record()["temperature"] == 1.0 and isinstance(settings.record()["temperature"], float)


def test_the_export_enlarges_a_small_screenshot_to_the_preset_s_min_pixels(
    demo_suite: Path, tmp_path: Path
) -> None:
    preset = _yaml("ui_venus_ground")
    assert preset["min_pixels"] == 2_000_000 and preset["patch_factor"] == 28  # 390x844 is below it
    (f,) = export_verl(["screenspot_v2"], demo_suite, tmp_path / "x", model="ui_venus_ground", max_samples=1)
    (row,) = pq.read_table(f).to_pylist()
    with Image.open(io.BytesIO(row["images"][0]["bytes"])) as im:
        exported = im.size
    h, w = _qwen_smart_resize(SCREEN[1], SCREEN[0], 28, 2_000_000, preset["max_pixels"])
    assert exported == (w, h) == (980, 2100)


def _subclasses(cls: type) -> set[type]:
    return {c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))}


def _run_config(kind: ModelKind, tmp_path: Path) -> Any:
    """A configuration of each kind that builds without weights or a server."""
    if kind.label == "replay":
        answers = tmp_path / "answers.jsonl"
        line = {"benchmark": "screenspot_v2", "id": "0", "candidates": [[1, 2]]}
        answers.write_text(json.dumps(line) + "\n")
        return parse_args([f"model.predictions={answers}"])
    name = {"preset": "qwen2_5_vl"}.get(kind.label, kind.label)
    return parse_args([f"model={name}", *(OPENAI if kind.from_preset else [])])


@pytest.mark.parametrize("kind", [*KINDS.values(), PRESET], ids=lambda k: k.label)
def test_every_registered_kind_answers_every_question(kind: ModelKind, tmp_path: Path) -> None:
    """No kind is left half-declared: each answers what a run asks of it."""
    assert not inspect.isabstract(type(kind))
    assert isinstance(kind.label, str) and kind.label
    assert isinstance(kind.from_preset, bool) and isinstance(kind.renders_requests, bool)
    cfg = _run_config(kind, tmp_path)
    assert kind_of(cfg.model) is kind
    kind.fill_defaults(cfg, None)
    policy = kind.build(cfg)
    assert callable(policy.predict)
    files = kind.fingerprint_files(cfg)
    assert files and set(files) <= {"ckpt", "critic_ckpt", "predictions"}
    assert all(path is None or isinstance(path, str) for path in files.values())
    statement = kind.protocol(cfg.model)
    assert isinstance(statement, str) and ("comparable" in statement or statement.startswith("official "))
    assert isinstance(kind.needs_transformers(cfg.model), bool)
    assert set(kind.analysis_options(cfg.model, policy)) == {"exchangeable_from", "score_kind"}
    if kind.renders_requests:
        assert isinstance(kind.dry_run_policy(cfg.model, 3), GroundingPolicy)
    else:
        with pytest.raises(GgeError, match="sends no request"):
            kind.dry_run_policy(cfg.model, 3)


def test_every_kind_is_registered_and_every_name_has_one() -> None:
    registered = [*KINDS.values(), PRESET]
    assert {type(k) for k in registered} == _subclasses(ModelKind)  # a kind class with no registry line
    assert all(kind.label == name for name, kind in KINDS.items())
    assert model_names() == ["demo", "replay", *preset_names()]
    assert {type(kind_of(name)).__name__ for name in model_names()} == {
        "DemoKind",
        "ReplayKind",
        "PresetKind",
        "EndpointKind",
    }
    with pytest.raises(GgeError, match="unknown model 'qwen25'"):
        kind_of("qwen25")
