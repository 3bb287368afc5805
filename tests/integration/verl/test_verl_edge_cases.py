"""verl / EasyR1 edge cases and refusals, each against an independent computation.

Export folders (a non-empty ``out`` is refused unless ``overwrite=true``), dump folders of several
steps, lone surrogates in dumped responses, one-response dumps (a Top-1-only summary), the reward's
``oracle`` and EasyR1's ``format``, the fallback of JSON objects that are not gge's, the size the
model sees in verl (the processor's second resize), the exported pixels (PIL's bicubic resize, as
eval resizes), a >12.8 MP screenshot under Qwen2.5-VL's ``prompt_max_pixels``, the decoding ``n``
of the printed options, and the prompt-length bound against a real processor's token count.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from test_verl import verl_messages

from gge.cli.commands import main as gge_main
from gge.errors import GgeError
from gge.geometry import from_original
from gge.integrations.verl import (
    GroundTruth,
    compute_score,
    compute_score_batch,
    export_main,
    export_verl,
    is_gge_ground_truth,
    read_dump,
    read_ground_truth,
    summarize_verl,
    trainer_notes,
    trainer_options,
    verl_seen_size,
)
from gge.run.settings import parse_args
from gge.run.standalone import run
from gge.types import Box

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

VAL = "actor_rollout_ref.rollout.val_kwargs"
EZ = "worker.rollout.val_override_config"


def rows_of(files: list[Path]) -> list[dict[str, Any]]:
    return [row for f in files for row in pq.read_table(f).to_pylist()]


def micro(entry: dict[str, Any]) -> dict[str, Any]:
    """The micro means: ``entry["micro"]``, or an entry written before it (``top1`` was the micro mean)."""
    found: dict[str, Any] = entry.get("micro", entry)
    return found


def tool_call(x: float, y: float) -> str:
    """Qwen2.5-VL's answer (the whole computer_use call: the trainers send no prefill)."""
    args = {"action": "left_click", "coordinate": [round(x), round(y)]}
    return "<tool_call>\n" + json.dumps({"name": "computer_use", "arguments": args}) + "\n</tool_call>"


def centre_answer(gt: GroundTruth) -> str:
    """An answer at the centre of the target, in the frame the prompt states."""
    assert isinstance(gt.region, Box)
    x1, y1, x2, y2 = gt.region.pixel_box()
    return tool_call(*from_original((x1 + x2) / 2, (y1 + y2) / 2, gt.convention, gt.image_size, gt.frame))


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``gge ARGS`` as a user runs it: the exit code, stdout and stderr."""
    code = gge_main(args)
    got = capsys.readouterr()
    return code, got.out, got.err


def one_line_error(code: int, err: str, *pieces: str) -> None:
    assert code == 2 and "Traceback" not in err, err
    (line,) = err.strip().splitlines()
    assert line.startswith("gge: error: "), line
    for piece in pieces:
        assert piece in line, (piece, line)


@pytest.fixture(scope="module")
def export(demo_suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Four ScreenSpot-v2 samples exported for qwen2_5_vl, and their ground truths."""
    out = tmp_path_factory.mktemp("export") / "x"
    files = export_verl(["screenspot_v2"], demo_suite, out, max_samples=4)
    rows = rows_of(files)
    return {
        "out": out,
        "rows": rows,
        "gts": [read_ground_truth(r["reward_model"]["ground_truth"]) for r in rows],
    }


def dump_line(gt: GroundTruth, output: str, step: int = 1) -> str:
    """One line of verl's dump; ``json.dumps`` writes a lone surrogate as the escape ``\\ud800``."""
    return json.dumps(
        {"input": "user ...", "output": output, "gts": gt.to_json(), "score": 0.0, "step": step}
    )


# --------------------------------------------------------------------------------- export folders


def test_export_refuses_a_folder_that_is_not_empty_unless_overwrite(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "val"
    common = [f"data_root={demo_suite}", f"out={out}", "max_samples=2"]
    assert export_main(["verl", "benchmarks=[screenspot_v2,osworld_g]", *common]) == 0
    (out / "my_notes.txt").write_text("mine")
    capsys.readouterr()
    # a second export into it: refused, naming the folder and what is there; nothing touched
    code, _, err = cli(["export", "verl", "benchmarks=[osworld_g]", *common], capsys)
    one_line_error(
        code,
        err,
        f"out={out} is not empty",
        "(data/, gge_reward.py, manifest.json, my_notes.txt)",
        "overwrite=true",
    )
    assert sorted(p.name for p in (out / "data").iterdir()) == ["osworld_g.parquet", "screenspot_v2.parquet"]
    # overwrite=true clears the folder's whole content first: no parquet of the earlier export is left
    code, _, err = cli(["export", "verl", "benchmarks=[osworld_g]", *common, "overwrite=true"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["data", "gge_reward.py", "manifest.json"]
    assert [p.name for p in (out / "data").iterdir()] == ["osworld_g.parquet"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["samples"] == {"osworld_g": 2}
    # an empty folder is fine without overwrite
    (tmp_path / "empty").mkdir()
    assert (
        export_main(
            ["verl", "benchmarks=[osworld_g]", f"data_root={demo_suite}", f"out={tmp_path / 'empty'}"]
        )
        == 0
    )


def test_export_out_errors_are_one_line(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "a_file.txt"
    afile.write_text("x")
    base = ["export", "verl", "benchmarks=[osworld_g]", f"data_root={demo_suite}", "max_samples=1"]
    one_line_error(*cli([*base, f"out={afile}"], capsys)[::2], f"out={afile} is a file, not a folder")
    one_line_error(*cli([*base, f"out={afile}", "overwrite=true"], capsys)[::2], "is a file")
    one_line_error(*cli([*base, f"out={afile / 'sub'}"], capsys)[::2], "cannot create the folder")
    assert afile.read_text() == "x"
    # overwrite never deletes the screenshots being exported
    data = tmp_path / "data"
    shutil.copytree(demo_suite / "osworld_g", data / "osworld_g")
    one_line_error(
        *cli([*base[:3], f"data_root={data}", f"out={tmp_path}", "overwrite=true"], capsys)[::2],
        "holds the data",
    )
    assert (data / "osworld_g").is_dir() and afile.is_file()


def test_export_folder_holding_only_empty_folders_counts_as_empty(
    demo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An export that stopped before writing leaves an empty data/: the next one needs no overwrite."""
    out = tmp_path / "val"
    (out / "data" / "nested").mkdir(parents=True)
    base = ["export", "verl", "benchmarks=[osworld_g]", f"data_root={demo_suite}", "max_samples=1"]
    code, _, err = cli([*base, f"out={out}"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["data", "gge_reward.py", "manifest.json"]
    assert [p.name for p in (out / "data").iterdir()] == ["nested", "osworld_g.parquet"]
    # an empty file deep in an empty-looking tree is content: still refused without overwrite
    other = tmp_path / "other"
    (other / "data" / "nested").mkdir(parents=True)
    (other / "data" / "nested" / "part.parquet").write_bytes(b"")
    one_line_error(*cli([*base, f"out={other}"], capsys)[::2], f"out={other} is not empty (data/)")
    assert (other / "data" / "nested" / "part.parquet").is_file()
    # a link to an empty folder is content too (overwrite would remove the link)
    linked = tmp_path / "linked"
    linked.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (linked / "data").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    one_line_error(*cli([*base, f"out={linked}"], capsys)[::2], f"out={linked} is not empty")


def test_export_help_says_what_overwrite_deletes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["export", "verl", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "overwrite=false" in text
    assert "everything in it is deleted, not only the files an export writes" in text


# ---------------------------------------------------------------------------------------- summaries


def test_summarize_refuses_a_folder_of_several_steps(
    export: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    for step in (40, 8):
        (dumps / f"{step}.jsonl").write_text(
            "".join(dump_line(gt, centre_answer(gt), step) + "\n" for gt in export["gts"])
        )
    code, _, err = cli(["summarize-verl", str(dumps), "--out", str(tmp_path / "o")], capsys)
    one_line_error(code, err, f"{dumps} holds the validations of 2 training steps (8, 40)", "--step N")
    assert not (tmp_path / "o").exists()
    code, _, err = cli(["summarize-verl", str(dumps), "--out", str(tmp_path / "o"), "--step", "8"], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "o" / "results.json").read_text())["config"]["step"] == 8
    assert read_dump(dumps, step=40).step == 40
    with pytest.raises(GgeError, match=r"2 training steps \(8, 40\)"):
        read_dump(dumps)


def test_lone_surrogates_in_responses_are_replaced_and_scored(
    export: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl's dump is JSON, which can hold a lone surrogate (``"\\ud800"``); UTF-8 cannot: kept and said."""
    gts = export["gts"]
    outputs = [centre_answer(g) for g in gts]
    outputs[0] += " \ud800"  # still a hit
    outputs[1] = "\udc00 I cannot tell"  # a format error
    dump = tmp_path / "3.jsonl"
    dump.write_text("".join(dump_line(g, o, 3) + "\n" for g, o in zip(gts, outputs, strict=True)))
    assert "\\ud800" in dump.read_text()
    code, _, err = cli(["summarize-verl", str(dump), "--out", str(tmp_path / "o")], capsys)
    assert code == 0 and "Traceback" not in err, err
    doc = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    entry = doc["benchmarks"]["screenspot_v2"]
    assert micro(entry)["top1"] == pytest.approx(75.0) and entry["format_errors"] == 1
    assert doc["config"]["repaired_responses"] == 2
    assert any(
        f"2 responses held lone surrogates (invalid Unicode, first at {dump}:1)" in n for n in doc["notes"]
    )
    raws = [
        json.loads(x)["raw"] for x in (tmp_path / "o" / "predictions.jsonl").read_text("utf-8").splitlines()
    ]
    assert raws[0] == outputs[0][:-1] + "\ufffd" and raws[1].startswith("\ufffd I cannot")
    assert (tmp_path / "o" / "report.html").is_file()
    # a ground truth holding one was not written by gge export: refused, naming the line
    bad = json.loads(dump_line(gts[0], outputs[2]))
    bad["gts"] = bad["gts"].replace('"instruction":"', '"instruction":"\\ud800', 1)
    dump.write_text(dump_line(gts[1], outputs[2]) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(GgeError, match=rf"{re.escape(str(dump))}:2: field 'gts': holds a lone surrogate"):
        summarize_verl(dump, tmp_path / "o2")


def test_one_response_dump_is_a_top1_only_summary(
    export: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """val_kwargs.n=1 (a greedy preset): k is 1, and a larger --k is refused, not renamed Oracle@1."""
    gts = export["gts"]
    outputs = [centre_answer(g) for g in gts]
    outputs[2] = tool_call(0, 0)  # a miss
    dump = tmp_path / "5.jsonl"
    dump.write_text("".join(dump_line(g, o, 5) + "\n" for g, o in zip(gts, outputs, strict=True)))
    doc = summarize_verl(dump, tmp_path / "o", report_misses=0)
    entry = doc["benchmarks"]["screenspot_v2"]
    assert doc["k"] == 1 and entry["pass_at_k"]["n"] == 1
    assert micro(entry)["top1"] == micro(entry)["oracle@1"] == pytest.approx(75.0)
    assert not any(key.startswith("oracle@") and key != "oracle@1" for key in micro(entry))
    assert "Oracle@" not in (tmp_path / "o" / "report.md").read_text()  # S3: shown as Top-1 only
    for k in (5, 2):
        code, _, err = cli(
            ["summarize-verl", str(dump), "--out", str(tmp_path / "o3"), "--k", str(k)], capsys
        )
        one_line_error(code, err, f"k={k}, but no sample has more than 1 responses", "--k 1")
    # uneven: samples with 1 and 2 responses; K=2 reads each one's first 2 (the most any has), K=3 none
    outputs[0] = tool_call(0, 0)  # sample 0: a miss, then a hit
    lines = [dump_line(g, o, 5) for g, o in zip(gts, outputs, strict=True)]
    lines.append(dump_line(gts[0], centre_answer(gts[0]), 5))
    dump.write_text("\n".join(lines) + "\n")
    doc = summarize_verl(dump, tmp_path / "o4", k=2, allow_uneven=True, report_misses=0)
    entry = doc["benchmarks"]["screenspot_v2"]
    assert doc["k"] == 2 and entry["pass_at_k"]["n"] == 1
    assert (micro(entry)["top1"], micro(entry)["oracle@2"]) == (pytest.approx(50.0), pytest.approx(75.0))
    with pytest.raises(GgeError, match="k=3, but no sample has more than 2 responses"):
        summarize_verl(dump, tmp_path / "o5", k=3, allow_uneven=True)
    with pytest.raises(GgeError, match="is a file, not a folder"):
        summarize_verl(dump, dump)


# -------------------------------------------------------------------------------------------- reward


def test_reward_oracle_counts_any_point_of_a_single_pass_answer() -> None:
    """A ``single_pass`` answer holds K points: ``hit`` is its first point's, ``oracle`` any point's."""
    gt = GroundTruth(
        "screenspot_v2", "7", region=Box(100, 100, 200, 150), image_size=(1000, 500),
        exported_size=(500, 250), seen_size=(500, 250), frame=(500, 250), proposer="single_pass", k=3,
    ).to_json()  # fmt: skip
    # the target in the frame: x 50..100, y 50..75
    cases = {
        "(10, 10), (75, 60), (300, 200)": (0.0, 1.0),
        "(75, 60), (10, 10)": (1.0, 1.0),
        "(1, 1), (2, 2)": (0.0, 0.0),
    }
    for text, (hit, oracle) in cases.items():
        got = compute_score("gge/screenspot_v2", text, gt)
        assert (got["score"], got["hit"], got["oracle"]) == (hit, hit, oracle), text
        (batch,) = compute_score_batch([{"response": text, "ground_truth": gt}])
        assert (batch["overall"], batch["oracle"]) == (hit, oracle), text


def test_easyr1_format_is_whether_the_answer_reads() -> None:
    gt = GroundTruth(
        "screenspot_v2", "1", Box(100, 100, 200, 150), (1000, 500), (500, 250), (500, 250), (500, 250)
    )
    texts = [
        "click(x=75, y=60)",
        "I cannot tell where that is.",
        "The element is not visible on the screen.",
        "(1, 1)",
    ]
    out = compute_score_batch([{"response": t, "ground_truth": gt.to_json()} for t in texts])
    assert [o["format"] for o in out] == [1.0, 0.0, 1.0, 1.0]
    assert [o["overall"] for o in out] == [1.0, 0.0, 0.0, 0.0]


def test_json_objects_that_are_not_ggess_go_to_the_fallback(tmp_path: Path) -> None:
    """Another data set's ground truth may be a JSON object too: without ``"gge"`` it is not gge's."""
    other = json.dumps({"answer": "72", "type": "math"})
    assert not is_gge_ground_truth(other) and not is_gge_ground_truth({"answer": 3})
    seen: list[Any] = []

    def batch(items: list[dict[str, Any]], **kwargs: Any) -> list[dict[str, float]]:
        seen.extend(i["ground_truth"] for i in items)
        return [{"overall": 0.5} for _ in items]

    assert compute_score_batch([{"response": "72", "ground_truth": other}], fallback=batch) == [
        {"overall": 0.5}
    ]
    assert seen == [other]
    gt = GroundTruth("osworld_g", "3", Box(0, 0, 10, 10), (800, 600), (800, 600), (812, 588), (812, 588))
    dump = tmp_path / "1.jsonl"
    lines = [dump_line(gt, "(1, 1)"), json.dumps({"output": "72", "gts": other, "step": 1})]
    dump.write_text("\n".join(lines) + "\n")
    read = read_dump(dump)
    assert (len(read.records), read.skipped) == (1, 1)


# ------------------------------------------------------------------------------------------- sizes


def hf_smart_resize(
    size: tuple[int, int], min_pixels: int, max_pixels: int, factor: int = 28
) -> tuple[int, int]:
    """transformers' Qwen2-VL ``smart_resize`` (what qwen_vl_utils and the processor apply), as (w, h)."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = smart_resize(size[1], size[0], factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)
    return (w, h)


def test_verl_seen_size_applies_the_processors_resize_after_fetch_image() -> None:
    """qwen_vl_utils resizes under the image dict's limits; the processor then under its own."""
    size, proc_max = (3840, 2160), 1_000_000
    fetched = hf_smart_resize(size, 3136, 16384 * 28 * 28)
    expected = hf_smart_resize(fetched, 3136, proc_max)
    assert expected != fetched
    got = verl_seen_size(size, factor=28, processor_min_pixels=3136, processor_max_pixels=proc_max)
    assert got == expected
    # a trainer run with a larger max_pixels than the export assumed: the processor still caps the view
    gt = GroundTruth(
        "screenspot_v2", "1", Box(3000, 1800, 3100, 1900), size, size, expected, expected,
        processor_max_pixels=proc_max, trainer_max_pixels=proc_max,
    )  # fmt: skip
    assert gt.view(max_pixels=16384 * 28 * 28)[0] == expected


def test_exported_pixels_are_pils_bicubic_resize(demo_suite: Path, tmp_path: Path) -> None:
    files = export_verl(["screenspot_v2", "osworld_g"], demo_suite, tmp_path / "x", max_samples=3)
    resized = 0
    for row in rows_of(files):
        gt = read_ground_truth(row["reward_model"]["ground_truth"])
        with Image.open(gt.image_path) as im:
            original = im.convert("RGB")
        expected = (
            original
            if original.size == gt.seen_size
            else original.resize(gt.seen_size, Image.Resampling.BICUBIC)
        )
        with Image.open(io.BytesIO(row["images"][0]["bytes"])) as got:
            assert got.size == gt.seen_size and got.convert("RGB").tobytes() == expected.tobytes(), gt.id
        resized += original.size != gt.seen_size
    assert resized == 6  # every one was resized, so the filter shows


def test_a_screenshot_above_12_8_mp_is_exported_as_eval_asks_it(tmp_path: Path, demo_suite: Path) -> None:
    """Qwen2.5-VL: the model sees the 12.8 MP cap, the prompt states smart_resize under 99999999 (the
    ScreenSpot-Pro evaluator's rule), and answers are read in the stated frame."""
    big = (4480, 2940)  # 13.2 MP: multiples of 28, so the stated frame is the screenshot itself
    root = tmp_path / "data" / "screenspot_v2"
    (root / "screenspotv2_image").mkdir(parents=True)
    Image.new("RGB", big, (200, 210, 220)).save(root / "screenspotv2_image" / "big.png")
    record = {
        "img_filename": "big.png",
        "bbox": [4300, 2800, 40, 40],
        "instruction": "Click the corner",
        "data_type": "icon",
        "data_source": "windows",
    }
    for split in ("mobile", "desktop", "web"):
        (root / f"screenspot_{split}_v2.json").write_text(json.dumps([record]))
    (f,) = export_verl(["screenspot_v2"], tmp_path / "data", tmp_path / "x", max_samples=1)
    (row,) = pq.read_table(f).to_pylist()
    gt = read_ground_truth(row["reward_model"]["ground_truth"])
    run(
        parse_args(
            ["model=qwen2_5_vl", "ckpt=/nowhere", "dry_run=true", f"data_root={tmp_path / 'data'}",
             f"output_dir={tmp_path / 'dry'}", "benchmarks=[screenspot_v2]", "max_samples=1"]
        ),
        out=io.StringIO(),
    )  # fmt: skip
    request = json.loads((tmp_path / "dry" / "requests.jsonl").read_text().splitlines()[0])
    with Image.open(io.BytesIO(row["images"][0]["bytes"])) as im:
        written = im.size
    seen = hf_smart_resize(big, 3136, 12845056)
    assert written == tuple(request["image_size"]) == gt.seen_size == seen != big
    assert gt.frame == hf_smart_resize(big, 3136, 99999999) == big
    assert "The screen's resolution is 4480x2940." in json.dumps(request["messages"])
    assert verl_messages(row["prompt"], [written]) == request["messages"]
    # the target's centre stated in the frame hits; the same point in the seen image's pixels misses
    assert compute_score("gge/screenspot_v2", tool_call(4320, 2820), gt.to_json())["hit"] == 1.0
    sx, sy = 4320 * seen[0] / big[0], 2820 * seen[1] / big[1]
    assert compute_score("gge/screenspot_v2", tool_call(sx, sy), gt.to_json())["hit"] == 0.0


# ------------------------------------------------------------------------------------ trainer options


@pytest.mark.parametrize("flavor", ["verl", "easyr1"])
def test_only_a_sampling_preset_asks_for_several_responses(flavor: str) -> None:
    """A greedy or single_pass preset answers once: n=1 at temperature 0, whatever k is."""
    key = f"{VAL}." if flavor == "verl" else f"{EZ}."
    for proposer, k, n in (("greedy", 5, 1), ("single_pass", 5, 1), ("sampling", 5, 5), ("sampling", 1, 1)):
        opts = trainer_options(
            flavor, Path("x"), [Path("x/data/a.parquet")], proposer, k, 3136, 4096 * 28 * 28
        )
        assert f"{key}n={n}" in opts, (proposer, k)
        assert (f"{key}temperature=0" in opts) == (n == 1), (proposer, k)
    notes = " ".join(trainer_notes("easyr1", "greedy", 5, 12))
    assert "trainer.val_generations_to_log=12 logs every response" in notes
    assert "trainer.val_generations_to_log=60" in " ".join(trainer_notes("easyr1", "sampling", 5, 12))


def test_greedy_export_asks_for_one_response(demo_suite: Path, tmp_path: Path) -> None:
    export_main(
        [
            "verl",
            "benchmarks=[osworld_g]",
            f"data_root={demo_suite}",
            f"out={tmp_path}",
            "max_samples=1",
            "k=7",
        ]
    )
    opts = json.loads((tmp_path / "manifest.json").read_text())["trainer_options"]
    assert {f"{VAL}.n=1", f"{VAL}.do_sample=False", f"{VAL}.temperature=0"} <= set(opts)


def token_counts(processor: Any, files: list[Path]) -> list[int]:
    """Each exported row's prompt length as the processor builds it (chat template, image tokens)."""
    counts = []
    for row in rows_of(files):
        messages = []
        for m in row["prompt"]:
            parts: list[dict[str, Any]] = []
            for i, seg in enumerate(m["content"].split("<image>")):
                parts += [{"type": "image"}] if i else []
                parts += [{"type": "text", "text": seg}] if seg else []
            messages.append({"role": m["role"], "content": parts})
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        with Image.open(io.BytesIO(row["images"][0]["bytes"])) as im:
            encoded = processor(text=[text], images=[im.convert("RGB")], return_tensors="pt")
        counts.append(int(encoded["input_ids"].shape[1]))
    return counts


def prompt_bound(out: Path) -> int:
    opts = json.loads((out / "manifest.json").read_text())["trainer_options"]
    (bound,) = [int(o.split("=")[1]) for o in opts if o.startswith("data.max_prompt_length=")]
    return bound


def test_prompt_length_bound_is_never_below_the_processors_token_count(
    demo_suite: Path, tmp_path: Path
) -> None:
    """data.max_prompt_length reaches every exported prompt as a real processor tokenizes it (verl
    drops longer prompts silently): a tiny Qwen2.5-VL's processor, chat template and byte-level BPE."""
    from tiny_checkpoints import build_tiny_qwen2_5_vl

    from gge.models.hf_loading import load_processor

    processor = load_processor(build_tiny_qwen2_5_vl(tmp_path / "tiny"))
    # the largest screenshots first: the bound is over every row, not the last one
    files = export_verl(["screenspot_pro", "screenspot_v2"], demo_suite, tmp_path / "x", max_samples=2)
    counts = token_counts(processor, files)
    assert counts[0] > counts[-1]  # screenspot_pro's prompts are the longest
    assert prompt_bound(tmp_path / "x") >= max(counts), counts
    # a long non-English instruction (ScreenSpot-Pro has Chinese ones): 3 UTF-8 bytes a character
    root = tmp_path / "data" / "screenspot_v2"
    (root / "screenspotv2_image").mkdir(parents=True)
    Image.new("RGB", (560, 560), (90, 90, 90)).save(root / "screenspotv2_image" / "s.png")
    record = {"img_filename": "s.png", "bbox": [10, 10, 40, 40], "instruction": "点击设置按钮" * 500}
    record.update(data_type="icon", data_source="windows")
    for split in ("mobile", "desktop", "web"):
        (root / f"screenspot_{split}_v2.json").write_text(json.dumps([record], ensure_ascii=False))
    files = export_verl(["screenspot_v2"], tmp_path / "data", tmp_path / "cjk", max_samples=1)
    (count,) = token_counts(processor, files)
    assert prompt_bound(tmp_path / "cjk") >= count


def test_summary_refuses_an_export_folder_with_parquets_its_manifest_does_not_list(
    demo_suite: Path, export: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An export folder written over before overwrite= existed: its old parquet's samples are not dropped."""
    gts = export["gts"]
    dump = tmp_path / "2.jsonl"
    dump.write_text("".join(dump_line(g, centre_answer(g), 2) + "\n" for g in gts))
    folder = tmp_path / "x"
    shutil.copytree(export["out"], folder)
    doc = summarize_verl(dump, tmp_path / "o", export=folder, report_misses=0)
    assert doc["benchmarks"]["screenspot_v2"]["missing_responses"] == 0
    other = export_verl(["osworld_g"], demo_suite, tmp_path / "y", max_samples=2)
    shutil.copy(other[0], folder / "data")
    code, _, err = cli(
        ["summarize-verl", str(dump), "--export", str(folder), "--out", str(tmp_path / "o2")], capsys
    )
    one_line_error(
        code, err, f"{folder / 'data'} holds osworld_g.parquet, which its manifest.json does not list"
    )


def test_summary_refuses_an_export_folder_without_its_manifest(
    export: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An interrupted export (parquets written, manifest.json not yet): its samples cannot be trusted."""
    gts = export["gts"]
    dump = tmp_path / "2.jsonl"
    dump.write_text("".join(dump_line(g, centre_answer(g), 2) + "\n" for g in gts))
    folder = tmp_path / "x"
    shutil.copytree(export["out"], folder)
    (folder / "manifest.json").unlink()
    out = tmp_path / "o"
    code, _, err = cli(["summarize-verl", str(dump), "--export", str(folder), "--out", str(out)], capsys)
    one_line_error(
        code,
        err,
        f"--export {folder}: not a finished gge export: no manifest.json",
        f"rerun gge export verl ... out={folder} overwrite=true",
    )
    assert not out.exists()


def test_summary_out_that_cannot_be_a_folder_is_refused_before_the_dump_is_read(
    export: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--out under a file, or in a folder that cannot be written: one line, before any scoring."""
    gts = export["gts"]
    dump = tmp_path / "2.jsonl"
    dump.write_text("".join(dump_line(g, centre_answer(g), 2) + "\n" for g in gts))
    afile = tmp_path / "somefile"
    afile.write_text("x")
    for out in (afile / "sub", afile / "sub" / "deeper"):
        code, _, err = cli(["summarize-verl", str(dump), "--out", str(out)], capsys)
        one_line_error(code, err, f"--out {out}: {afile} is a file, not a folder")
    assert afile.read_text() == "x"
    # checked first: a dump that cannot be read is not reached (its error would name its line 1)
    broken = tmp_path / "3.jsonl"
    broken.write_text("not json\n")
    code, _, err = cli(["summarize-verl", str(broken), "--out", str(afile / "sub")], capsys)
    one_line_error(code, err, f"--out {afile / 'sub'}: {afile} is a file, not a folder")
    assert str(broken) not in err
    # a folder nobody may write in (/proc/self refuses even root): refused first, by name
    locked = Path("/proc/self")
    if locked.is_dir() and not os.access(locked, os.W_OK):
        code, _, err = cli(["summarize-verl", str(broken), "--out", str(locked / "gge" / "o")], capsys)
        one_line_error(code, err, f"--out {locked / 'gge' / 'o'}: {locked} is not writable")
        code, _, err = cli(["summarize-verl", str(broken), "--out", str(locked)], capsys)
        one_line_error(code, err, f"--out {locked}: {locked} is not writable")
    # a write that fails after scoring (results.json is a folder there): one line naming the file
    out = tmp_path / "o"
    (out / "results.json").mkdir(parents=True)
    (out / "results.json" / "keep.txt").write_text("mine")
    code, _, err = cli(["summarize-verl", str(dump), "--out", str(out)], capsys)
    one_line_error(code, err, f"--out {out}: cannot write {out / 'results.json'}")
    assert (out / "results.json" / "keep.txt").read_text() == "mine"
