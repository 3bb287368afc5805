"""What a run's costs were measured on: results.json ``cost`` (hardware, device, backend, dtype, batch).

Seconds mean little without the machine that spent them, so a run records its processor (and GPU),
the device and dtype its model ran in, the backend and the batch size beside the per-benchmark
ledgers (:func:`gge.scoring.cost.cost_summary`). A replayed run measured nothing itself: its setup
says so and names the file whose costs it read back (or, for a log imported from another harness,
that such a log keeps no gge cost records).

Example:
    >>> setup = cost_setup((), backend="demo", batch_size=16)
    >>> setup["device"], setup["backend"], setup["batch_size"], setup["source"]
    ('cpu', 'demo', 16, 'measured')
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from gge.documents.cost import WindowSummary
from gge.documents.results import CostSetup

BATCH_GROUPING = "image size"
"""How each rank's samples are batched (:func:`gge.run.data.make_loader`): equal screenshot sizes
together, so a batch pays for little padding."""


def _cpu_name() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown processor"


def _model_device_dtype(modules: Sequence[Any]) -> tuple[str, str | None]:
    """The device and dtype of the first parameter of the first torch module (``cpu``, None without)."""
    for module in modules:
        parameters = getattr(module, "parameters", None)
        if not callable(parameters):
            continue
        for p in parameters():
            return str(p.device), str(p.dtype).removeprefix("torch.")
    return "cpu", None


def describe_hardware(device: str) -> str:
    """The machine in words: the GPU for a CUDA device, and the processor with its core count.

    Args:
        device: The model's device (``cpu``, ``cuda:0``...).

    Returns:
        e.g. ``"NVIDIA H200 (cuda:0); AMD EPYC 9454 x 16 cores"``.
    """
    cpu = f"{_cpu_name()} x {os.cpu_count() or 1} cores"
    if device.startswith("cuda"):
        import torch

        return f"{torch.cuda.get_device_name(torch.device(device))} ({device}); {cpu}"
    return cpu


def cost_setup(
    modules: Sequence[Any],
    *,
    backend: str,
    batch_size: int,
    replayed_from: str | None = None,
    recorded: bool = True,
    window: Mapping[str, Any] | None = None,
    imported_format: str | None = None,
) -> CostSetup:
    """results.json ``cost``: what the run's cost ledger was measured on.

    Args:
        modules: The policy's torch modules (:attr:`gge.models.base.Capabilities.device_modules`): their
            device and dtype are the run's.
        backend: ``transformers``, ``openai``, ``demo``, ``replay``...
        batch_size: Samples per model call.
        replayed_from: For a replay, the predictions file whose costs were read back: nothing was
            measured on this machine, and the setup says so.
        recorded: Whether any sample has cost records; a replayed file without any says it has none.
        window: What an endpoint run's request window did (:meth:`gge.models.window.RequestWindow.summary`),
            recorded as ``window``; None for a run without one.
        imported_format: For a replay of a published log (``model.format``, not ``gge``), its format:
            a log another harness wrote keeps no gge cost records, and the setup says so.

    Returns:
        The setup.
    """
    device, dtype = _model_device_dtype(modules)
    if replayed_from is None:
        hardware = describe_hardware(device)
    elif recorded:
        hardware = f"not measured here: costs read back from {replayed_from}"
    elif imported_format is not None:
        hardware = (
            f"none: {replayed_from} is a log imported from another harness ({imported_format}), "
            "which keeps no gge cost records"
        )
    else:
        hardware = f"none: {replayed_from} has no cost records (written before gge kept them, or by hand)"
    setup: CostSetup = {
        "source": "measured" if replayed_from is None else "replayed",
        "hardware": hardware,
        "device": device,
        "backend": backend,
        "dtype": dtype,
        "batch_size": int(batch_size),
        "batch_grouping": BATCH_GROUPING,
    }
    if window is not None:
        setup["window"] = cast(WindowSummary, dict(window))
    return setup
