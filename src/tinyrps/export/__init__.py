"""Export: a PyTorch model -> an ExecuTorch .pte program and its descriptor, purely ahead of time.

The export quantizes, lowers and serialises, nothing else: it needs neither a cross
toolchain nor an emulator, and what a program's figures are (footprint, instructions,
Vela's estimate) is the measure stage's (tinyrps.measure).

The targets and their families are the records of tinyrps.families; each family's
recipes module here (`host`, `ethos_u`, `cortex_m`) has `build(target, ctx) -> BuildResult`.
Two drivers share one writer:

    export_target(run, target)        a training run's checkpoint -> RUN/export/T.pte
    export_model(model, inputs, ...)  any nn.Module with example inputs (`tinyrps export --module`)

Each writes T.pte, its descriptor T.json (tinyrps.descriptor) and any kept intermediates in
T/, each atomically (a temporary name, then a rename), the program first: an interrupted
export never leaves a half-written program, and a descriptor always describes the program
beside it.
"""
from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .. import descriptor as descriptors
from ..artifacts import atomic_write_bytes, check_run_data, folder_lock, sha256_file
from ..descriptor import Origin, ProgramDescriptor, TensorSpec
from ..errors import UserError
from ..families import Target, family_of_target, get_family, get_target, targets  # noqa: F401 (re-exported)
from ..labels import LABELS, RPS_INPUT_CONVENTION, RPS_OUTPUT_CONVENTION


@dataclass
class BuildContext:
    target: Target
    model: object               # torch.nn.Module in eval mode
    example_inputs: tuple       # one example per program input (batch of one)
    calibration: list           # input tuples that calibrate post-training quantization
    calibration_note: str       # what they are, for the descriptor
    workdir: Path               # scratch folder for intermediates (deleted afterwards unless kept)
    options: dict               # target options from the command line (e.g. system_config)


@dataclass
class BuildResult:
    program: bytes                               # the .pte
    info: object                                 # the family's descriptor record (tinyrps.families)
    keep: dict = field(default_factory=dict)     # name -> file in workdir, kept in T/


def recipes(target: Target):
    return importlib.import_module(f"{__name__}.{get_family(target.family).recipes}")


def check_buildable(target: Target) -> None:
    missing = get_family(target.family).available()
    if missing:
        raise UserError(f"cannot build target '{target.name}': {missing}")


def check_options(target: Target, options: dict) -> dict:
    given = {k: v for k, v in options.items() if v is not None}
    unknown = set(given) - set(target.options)
    if unknown:
        named = ", ".join("--" + name.replace("_", "-") for name in sorted(unknown))   # as typed on the command line
        raise UserError(f"target '{target.name}' does not take {named}")
    return given


def export_target(run_dir, target_name: str, data_dir=None, **options) -> Path:
    """Build one target from RUN/model.pt and write RUN/export/T.{pte,json}; return the .pte path."""
    from ..arch import describe_arch
    from ..model import INPUT_SHAPE, load_model
    from ..quantization import calibration_images, image_examples, rps_calibration_note
    import torch

    run_dir = Path(run_dir)
    target = get_target(target_name)
    check_buildable(target)
    given = check_options(target, options)
    checkpoint = run_dir / "model.pt"
    if not checkpoint.is_file():
        raise UserError(f"no checkpoint at {checkpoint}: create it with `tinyrps train --data DATA --out {run_dir}`")
    # calibration comes from the training split the run was trained on, unless --data names another
    data_dir = Path(data_dir) if data_dir else check_run_data(run_dir, ["train"])
    # the programs go into RUN/export: a retraining must not swap the run meanwhile (it would drop them)
    with folder_lock(run_dir):
        model = load_model(checkpoint)
        images = calibration_images(data_dir)
        origin = Origin(checkpoint_sha256=sha256_file(checkpoint), arch=describe_arch(model.arch),
                        calibration=rps_calibration_note(len(images)))
        return write_program(target, model, (torch.zeros(INPUT_SHAPE),), image_examples(images), origin,
                             run_dir / "export", given, labels=LABELS,
                             conventions=([RPS_INPUT_CONVENTION], [RPS_OUTPUT_CONVENTION]))


def export_model(model, example_inputs: tuple, calibration: list, target_name: str, out_dir, origin: Origin,
                 name: Optional[str] = None, labels=None, **options) -> Path:
    """Build one target from any nn.Module: OUT/NAME.{pte,json} (NAME defaults to the target's name)."""
    target = get_target(target_name)
    check_buildable(target)
    given = check_options(target, options)
    return write_program(target, model.eval(), tuple(example_inputs), list(calibration), origin, Path(out_dir),
                         given, labels=labels, name=name)


def write_program(target: Target, model, example_inputs: tuple, calibration: list, origin: Origin, out_dir: Path,
                  options: dict, labels=None, name: Optional[str] = None, conventions=None) -> Path:
    """Run the target's recipe in a scratch folder and write the program, its descriptor and its kept files."""
    name = name or target.name
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}.", dir=out_dir) as work:
        ctx = BuildContext(target=target, model=model, example_inputs=example_inputs, calibration=calibration,
                           calibration_note=origin.calibration, workdir=Path(work), options=options)
        result = recipes(target).build(target.name, ctx)
        pte = out_dir / f"{name}.pte"
        files = keep_files(result.keep, out_dir / name, Path(work))
        inputs, outputs = program_io(result.program, conventions)
        described = ProgramDescriptor(
            target=target.name, family=target.family, description=target.description,
            size_bytes=len(result.program), sha256=hashlib.sha256(result.program).hexdigest(),
            inputs=inputs, outputs=outputs, labels=tuple(labels) if labels else None, origin=origin,
            versions=versions(), files=files, info=result.info)
        # the program first, then the descriptor that describes it
        atomic_write_bytes(pte, result.program)
        descriptors.write(pte, described)
    return pte


def keep_files(keep: dict, keep_dir: Path, work: Path) -> dict:
    """Move the kept intermediates into T/ in one rename; returns name -> path relative to the program's folder."""
    if not keep:
        return {}
    staging = work / ".kept"
    staging.mkdir()
    for name, src in keep.items():
        shutil.copy2(src, staging / name)
    shutil.rmtree(keep_dir, ignore_errors=True)
    os.replace(staging, keep_dir)
    return {name: f"{keep_dir.name}/{name}" for name in keep}


DTYPE_NAMES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 6: "float32", 7: "float64", 11: "bool"}


def program_io(program: bytes, conventions=None) -> tuple:
    """(inputs, outputs) of the program's forward method as TensorSpecs, from the serialized program."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    conventions = conventions or ([], [])

    def specs(indices, notes):
        out = []
        for k, index in enumerate(indices):
            t = plan.values[index].val
            if type(t).__name__ != "Tensor":
                raise UserError(f"the program's input/output {k} is not a tensor ({type(t).__name__}): "
                                "tinyrps runs programs whose inputs and outputs are tensors")
            out.append(TensorSpec(DTYPE_NAMES.get(t.scalar_type, f"scalar type {t.scalar_type}"),
                                  tuple(int(s) for s in t.sizes), notes[k] if k < len(notes) else ""))
        return tuple(out)
    return specs(plan.inputs, conventions[0]), specs(plan.outputs, conventions[1])


def versions() -> dict:
    import torch
    from executorch.version import __version__ as et_version
    return {"torch": torch.__version__, "executorch": et_version}
