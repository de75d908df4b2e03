"""Export: the trained checkpoint -> ExecuTorch .pte programs, one per target.

A target is a named recipe (`Target.build`) registered by its family module:
`host` (portable and XNNPACK programs for the host CPU), `ethos_u` (int8 delegated
to an Arm Ethos-U NPU through TOSA and Vela) and `cortex_m` (int8 with CMSIS-NN
operators for the bare-metal firmware). `export_target` is the one driver: it
loads the checkpoint and calibration images, runs the recipe, and writes
RUN/export/T.pte, its sidecar RUN/export/T.json and any kept intermediates in
RUN/export/T/, each atomically.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..artifacts import atomic_write_bytes, atomic_write_json, run_config, sha256_file
from ..errors import UserError
from ..model import INPUT_SHAPE, LABELS, TinyRPS, describe_arch, load_model

# How many training images calibrate post-training quantization.
CALIBRATION_IMAGES = 256


@dataclass
class BuildContext:
    model: TinyRPS              # float model in eval mode
    calibration: np.ndarray     # uint8 [N,28,28] training images
    workdir: Path               # scratch folder for intermediates (deleted afterwards unless kept)
    options: dict               # target options from the command line (e.g. system_config)


@dataclass
class BuildResult:
    program: bytes                               # the .pte
    info: dict = field(default_factory=dict)     # merged into the sidecar JSON
    keep: dict = field(default_factory=dict)     # name -> file in workdir, kept in RUN/export/T/


@dataclass
class EvalContext:
    """What a family's extra evaluation sees of one variant."""
    target: str
    pte: Path
    images: np.ndarray          # uint8 test images
    labels: np.ndarray
    logits: np.ndarray          # this variant's logits on its device
    device: object              # the open Device that produced them
    predictions: dict           # variant name -> predicted labels of variants evaluated before


@dataclass(frozen=True)
class Target:
    name: str
    family: str                 # "host", "ethos-u" or "cortex-m"
    description: str
    build: Callable[[BuildContext], BuildResult]
    default_device: str
    options: tuple = ()         # names of the command-line options this target takes
    extra_eval: Optional[Callable[[EvalContext], dict]] = None
    # returns None when the target can be built here, else a line saying what is missing
    unavailable: Callable[[], Optional[str]] = lambda: None


TARGETS: dict = {}


def register(target: Target) -> Target:
    TARGETS[target.name] = target
    return target


def _load_families() -> None:
    from . import host  # noqa: F401
    for name in ("ethos_u", "cortex_m"):
        try:
            __import__(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise


_families_loaded = False
FAMILY_ORDER = ("host", "ethos-u", "cortex-m")


def targets() -> dict:
    """Every registered target, host programs first (registration order within a family)."""
    global _families_loaded
    if not _families_loaded:
        _families_loaded = True
        _load_families()
    return dict(sorted(TARGETS.items(), key=lambda kv: FAMILY_ORDER.index(kv[1].family)))


def get_target(name: str) -> Target:
    all_targets = targets()
    if name not in all_targets:
        raise UserError(f"unknown target '{name}'; valid targets: {', '.join(all_targets)}")
    return all_targets[name]


def calibration_images(data_dir, count: int = CALIBRATION_IMAGES) -> np.ndarray:
    from ..data import load_split
    images, _ = load_split(data_dir, "train")
    return images[:count]


def versions() -> dict:
    import torch
    from executorch.version import __version__ as et_version
    return {"torch": torch.__version__, "executorch": et_version}


def export_target(run_dir, target_name: str, data_dir=None, **options) -> Path:
    """Build one target from RUN/model.pt and write RUN/export/T.{pte,json}; return the .pte path."""
    run_dir = Path(run_dir)
    target = get_target(target_name)
    missing = target.unavailable()
    if missing:
        raise UserError(f"cannot build target '{target_name}': {missing}")
    checkpoint = run_dir / "model.pt"
    if not checkpoint.is_file():
        raise UserError(f"no checkpoint at {checkpoint}: create it with `tinyrps train --data DATA --out {run_dir}`")
    data_dir = Path(data_dir) if data_dir else Path(run_config(run_dir)["data"])
    unknown = set(k for k, v in options.items() if v is not None) - set(target.options)
    if unknown:
        named = ", ".join("--" + name.replace("_", "-") for name in sorted(unknown))   # as typed on the command line
        raise UserError(f"target '{target_name}' does not take {named}")
    out_dir = run_dir / "export"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target_name}.", dir=out_dir) as work:
        model = load_model(checkpoint)
        ctx = BuildContext(model=model, calibration=calibration_images(data_dir),
                           workdir=Path(work), options={k: v for k, v in options.items() if v is not None})
        result = target.build(ctx)
        pte = out_dir / f"{target_name}.pte"
        kept = {}
        if result.keep:
            keep_dir = out_dir / target_name
            staging = Path(work) / ".kept"
            staging.mkdir()
            for name, src in result.keep.items():
                shutil.copy2(src, staging / name)
                kept[name] = str((keep_dir / name).relative_to(run_dir))
            shutil.rmtree(keep_dir, ignore_errors=True)
            os.replace(staging, keep_dir)
        sidecar = {
            "target": target.name,
            "family": target.family,
            "description": target.description,
            "default_device": target.default_device,
            "labels": list(LABELS),
            "arch": describe_arch(model.arch),
            "input": {"shape": list(INPUT_SHAPE), "dtype": "float32", "range": [0.0, 1.0],
                      "from": "uint8 image / 255"},
            "size_bytes": len(result.program),
            "sha256": hashlib.sha256(result.program).hexdigest(),
            "checkpoint_sha256": sha256_file(checkpoint),
            "versions": versions(),
            "files": kept,
            **result.info,
        }
        # the program first, then the sidecar that describes it
        atomic_write_bytes(pte, result.program)
        atomic_write_json(pte.with_suffix(".json"), sidecar)
    return pte

