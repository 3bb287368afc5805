"""The command lines ``gge export verl key=value ...`` and ``gge summarize-verl DUMP ...``."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gge.benchmarks import REGISTRY
from gge.errors import GgeError
from gge.integrations.verl.export import ExportConfig, export_verl
from gge.integrations.verl.summarize import summarize_verl


def parse_export_args(argv: Sequence[str]) -> tuple[ExportConfig, dict[str, Any], dict[str, Any]]:
    """``key=value`` arguments of ``gge export verl`` -> (config, model overrides, benchmark options).

    Example:
        >>> args = ["benchmarks=[osworld_g]", "out=/tmp/x", "model.proposer=sampling"]
        >>> cfg, over, _ = parse_export_args(args)
        >>> cfg.benchmarks, cfg.out, over
        (['osworld_g'], '/tmp/x', {'proposer': 'sampling'})
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from gge.run.settings import BenchConfig

    plain: list[str] = []
    model_args: list[str] = []
    bench_args: list[str] = []
    for arg in argv:
        if "=" not in arg:
            raise GgeError(
                f"arguments are key=value pairs, got {arg!r} (e.g. 'benchmarks=[screenspot_pro]' out=DIR)"
            )
        key = arg.split("=", 1)[0]
        if key.startswith("model."):
            model_args.append(arg[len("model.") :])
        elif key.startswith("bench."):
            bench_args.append(arg[len("bench.") :])
        else:
            plain.append(arg)
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(ExportConfig), OmegaConf.from_dotlist(plain))
        bench = OmegaConf.merge(OmegaConf.structured(BenchConfig), OmegaConf.from_dotlist(bench_args))
        overrides = OmegaConf.to_container(OmegaConf.from_dotlist(model_args), resolve=True)
    except OmegaConfBaseException as e:
        bad = getattr(e, "full_key", None) or "arguments"
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise GgeError(f"bad export option ({bad}): {msg}") from None
    config = OmegaConf.to_object(cfg)
    assert isinstance(config, ExportConfig) and isinstance(overrides, dict)
    options = {str(name): OmegaConf.to_object(value) for name, value in bench.items()}
    return config, {str(k): v for k, v in overrides.items()}, options


def export_help() -> str:
    """``gge export verl --help``: how to call it, every key with its default and meaning, the names.

    Example:
        >>> text = export_help()
        >>> "  flavor=verl" in text and "  k=5" in text and "Models (model=):" in text
        True
    """
    from omegaconf import OmegaConf

    from gge.models.factory import preset_names

    meaning: dict[str, str] = {}
    last = ""
    doc = (ExportConfig.__doc__ or "").split("Attributes:", 1)[-1]
    for line in doc.splitlines():
        m = re.match(r"\s{8}(\w+): (.*)", line)
        if m:
            last = m[1]
            meaning[last] = m[2].strip()
        elif line.strip() and last:
            meaning[last] += " " + line.strip()
    defaults = OmegaConf.to_container(OmegaConf.structured(ExportConfig))
    assert isinstance(defaults, dict)
    lines = [
        "usage: gge export verl key=value ... [model.<key>=value ...] [bench.<name>.<option>=value ...]",
        "",
        "Write gge's benchmarks as validation parquet files for verl or EasyR1",
        "(out/data/<benchmark>.parquet), out/gge_reward.py (the reward) and out/manifest.json, asking",
        "each sample as `python eval.py model=<preset>` asks it, and print the trainer options to use.",
        "",
        "Keys (key=default):",
    ]
    for key, value in defaults.items():
        name = str(key)
        shown = json.dumps(value) if value is None or isinstance(value, (bool, list, dict)) else str(value)
        lines.append(f"  {name}={shown}")
        if meaning.get(name):
            lines.append(f"      {meaning[name]}")
    lines += [
        "",
        "model.<key>=value overrides a key of the preset (e.g. model.proposer=sampling), as in eval.py;",
        "bench.<name>.<option>=value sets a benchmark's option (e.g. bench.screenspot_pro.root=DIR).",
        "",
        f"Models (model=): {', '.join(preset_names())}",
        "Benchmarks: " + ", ".join(REGISTRY),
    ]
    return "\n".join(lines)


def export_main(argv: Sequence[str]) -> int:
    """``gge export verl key=value ...``: write the parquet files, print where and how to use them.

    Returns:
        0 on success (bad input raises :class:`~gge.errors.GgeError`).
    """
    args = list(argv)
    if args and args[0] == "verl":
        args = args[1:]
    elif args and "=" not in args[0] and args[0] not in ("-h", "--help"):
        raise GgeError(f"unknown export target {args[0]!r}; known: verl (gge export verl key=value ...)")
    if any(a in ("-h", "--help") for a in args):
        print(export_help())
        return 0
    cfg, overrides, options = parse_export_args(args)
    if not cfg.out:
        raise GgeError("out=DIR is required: the folder the parquet files go to")
    from gge.run.settings import DEMO_DATA_ROOT, default_data_root, fetched_data_root

    if cfg.data_root is None or cfg.data_root == DEMO_DATA_ROOT:
        roots = {
            n: o.get("root") if isinstance(o, dict) else getattr(o, "root", None) for n, o in options.items()
        }
        unrooted = [n for n in cfg.benchmarks if not roots.get(n)]
        fetched = fetched_data_root(unrooted, sys.stdout) if cfg.data_root is None else None
        data_root = fetched or default_data_root(cfg.seed, sys.stdout)
    else:
        data_root = Path(cfg.data_root)
    files = export_verl(
        cfg.benchmarks,
        data_root,
        cfg.out,
        model=cfg.model,
        model_overrides=overrides,
        flavor=cfg.flavor,
        k=cfg.k,
        max_samples=cfg.max_samples,
        max_pixels=cfg.max_pixels,
        min_pixels=cfg.min_pixels,
        resize_images=cfg.resize_images,
        fold_system=cfg.fold_system,
        bench_options=options,
        overwrite=cfg.overwrite,
    )
    manifest = json.loads((Path(cfg.out) / "manifest.json").read_text(encoding="utf-8"))
    for name, n in manifest["samples"].items():
        print(f"{name}: {n} samples -> {manifest['files'][name]}")
    if manifest.get("request_changed"):
        print(f"note: {manifest['request_changed']}")
    print(f"\n{cfg.flavor} options:\n  " + "\n  ".join(manifest["trainer_options"]))
    for note in manifest["trainer_notes"]:
        print(f"note: {note}")
    print(f"\nwrote {len(files)} files and {Path(cfg.out) / 'manifest.json'}")
    return 0


def summarize_parser() -> argparse.ArgumentParser:
    """The argument parser of ``gge summarize-verl``.

    Example:
        >>> summarize_parser().parse_args(["dumps", "--step", "40"]).step
        40
    """
    p = argparse.ArgumentParser(
        prog="gge summarize-verl",
        description=(
            "Turn verl's dumped validation generations (trainer.validation_data_dir) or EasyR1's "
            "generations.log of an export by `gge export verl` into gge's results.json, report.md and "
            "report.html, with each benchmark's official rules and the unbiased pass@k. One training "
            "step at a time; responses to other data are skipped and counted."
        ),
    )
    p.add_argument(
        "dump", metavar="DUMP", nargs="+", help="a <step>.jsonl file, the dump folder, or generations.log"
    )
    p.add_argument("--out", metavar="DIR", default=None, help="output folder (default: beside the dump)")
    p.add_argument(
        "--step",
        type=int,
        default=None,
        help="training step to read (needed when the dump holds several; they are refused otherwise)",
    )
    p.add_argument(
        "--k", type=int, default=None, help="responses scored per sample (default: all, or the fewest)"
    )
    p.add_argument("--export", metavar="DIR", default=None, help="the export folder: count missing samples")
    p.add_argument(
        "--max-pixels", type=int, default=None, help="the trainer's max_pixels, if not the export's"
    )
    p.add_argument(
        "--min-pixels", type=int, default=None, help="the trainer's min_pixels, if not the export's"
    )
    p.add_argument(
        "--allow-uneven",
        action="store_true",
        help="score samples with different numbers of responses (each sample's pass@k from its own n)",
    )
    p.add_argument("--report-misses", type=int, default=20, help="misses per benchmark in report.html")
    return p


def summarize_main(argv: Sequence[str]) -> int:
    """``gge summarize-verl DUMP [--out DIR] [--step N]``: write the results, print the tables.

    Returns:
        0 on success (bad input raises :class:`~gge.errors.GgeError`).
    """
    ns = summarize_parser().parse_args(list(argv))
    first = Path(ns.dump[0])
    if ns.out is None:
        base = first if first.is_dir() else first.parent
        ns.out = str(
            base / (f"gge-step{ns.step}" if ns.step is not None else f"gge-{first.stem or 'summary'}")
        )
    doc = summarize_verl(
        ns.dump,
        ns.out,
        k=ns.k,
        step=ns.step,
        export=ns.export,
        max_pixels=ns.max_pixels,
        min_pixels=ns.min_pixels,
        allow_uneven=ns.allow_uneven,
        report_misses=ns.report_misses,
    )
    print((Path(ns.out) / "report.md").read_text(encoding="utf-8").rstrip("\n"))
    for note in doc.get("notes") or []:
        print(f"note: {note}")
    print(f"\nwrote {Path(ns.out) / 'results.json'} (step {doc['config']['step']}; and report.html)")
    return 0


def _main(argv: Iterable[str] | None = None) -> int:  # pragma: no cover - python -m entry
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "summarize":
            return summarize_main(args[1:])
        return export_main(args)
    except GgeError as e:
        print(f"gge: error: {e}", file=sys.stderr)
        return 2
