"""Export: a PyTorch model -> an ExecuTorch .pte program and its descriptor, purely ahead of time.

The export quantizes, lowers and serialises, nothing else: it needs neither a cross
toolchain nor an emulator, and what a program's figures are (footprint, instructions,
Vela's estimate) is the measure stage's (tinyrps.measure).

The targets and their families are the records of tinyrps.hardware.families; each family's
recipes module here (`cpu`, `ethos_u`, `cortex_m`) has `build(target, ctx) -> BuildResult`.
Two drivers share one writer:

    export_target(run, target)        a training run's checkpoint -> RUN/export/T.pte
    export_model(model, inputs, ...)  any nn.Module with example inputs (`tinyrps export --module`)

Each writes T.pte, its descriptor T.json (tinyrps.hardware.descriptor) and any kept intermediates in
T/. Everything is built under temporary names first; then, with Ctrl-C held back, T/ is
swapped in, T.pte renamed over the old one and T.json last, as the commit: a stop at any
instant (Ctrl-C, a kill, a full disk) leaves the old program, the new one, or (a kill
between two renames) a program whose descriptor refuses it, since the descriptor records
the sha256 of the program and of every kept file. The next export removes what a killed
one left.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..infra import ctrl_c
from ..hardware import descriptor as descriptors
from ..infra.artifacts.files import check_replaceable_file, fsync_dir, sha256_bytes, sha256_file
from ..infra.artifacts.records import check_run_data
from ..infra.artifacts.locks import folder_lock, interrupts_deferred
from ..infra.artifacts.staging import remove_dead_entries, swap_in
from ..hardware.descriptor import Origin, ProgramDescriptor, TensorSpec
from ..infra.errors import UserError
from ..hardware.families import Target, family_of_target, get_family, get_target, targets  # noqa: F401 (re-exported)
from ..network.labels import LABELS, RPS_INPUT_CONVENTION, RPS_OUTPUT_CONVENTION


@dataclass
class BuildContext:
    target: Target
    model: object               # torch.nn.Module in eval mode
    example_inputs: tuple       # one example per program input (batch of one)
    calibration: list           # input tuples that calibrate post-training quantization
    calibration_note: str       # what they are, for the descriptor
    workdir: Path               # scratch folder for intermediates (deleted afterwards unless kept)
    options: dict               # target options from the command line (e.g. system_config)
    source: Optional[str] = None   # what model and calibration are (their sha256s), so that a recipe
                                   # may reuse a lowering of the same source; None: no reuse


@dataclass
class BuildResult:
    program: bytes                               # the .pte
    info: object                                 # the family's descriptor record (tinyrps.hardware.families)
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
    from ..network.arch import describe_arch
    from ..network.model import INPUT_SHAPE, load_model
    from ..network.quantization import calibration_images, image_examples, rps_calibration_note
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
        source = f"{origin.checkpoint_sha256}:{sha256_bytes(images.tobytes())}"
        return write_program(target, model, (torch.zeros(INPUT_SHAPE),), image_examples(images), origin,
                             run_dir / "export", given, labels=LABELS,
                             conventions=([RPS_INPUT_CONVENTION], [RPS_OUTPUT_CONVENTION]), source=source)


def export_model(model, example_inputs: tuple, calibration: list, target_name: str, out_dir, origin: Origin,
                 name: Optional[str] = None, labels=None, **options) -> Path:
    """Build one target from any nn.Module: OUT/NAME.{pte,json} (NAME defaults to the target's name)."""
    target = get_target(target_name)
    check_buildable(target)
    given = check_options(target, options)
    return write_program(target, model.eval(), tuple(example_inputs), list(calibration), origin, Path(out_dir),
                         given, labels=labels, name=name)


def write_program(target: Target, model, example_inputs: tuple, calibration: list, origin: Origin, out_dir: Path,
                  options: dict, labels=None, name: Optional[str] = None, conventions=None,
                  source: Optional[str] = None) -> Path:
    """Run the target's recipe in a scratch folder and write the program, its descriptor and its kept files.
    The caller holds the lock of the folder `out_dir` is in (or of `out_dir` itself)."""
    name = name or target.name
    if name != target.name and name in targets():
        raise UserError(f"--name {name} is the name of another target than {target.name}: a program is shown by "
                        "its name, so choose a name that is no target's")
    pte = out_dir / f"{name}.pte"
    for path in (pte, descriptors.path_of(pte)):       # refused before the work, not at the commit
        check_replaceable_file(path)
    with interrupts_deferred():
        made = _make_folder(out_dir)
    remove_leftovers(out_dir, name)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.export-{os.getpid()}-", dir=out_dir))
    try:
        ctx = BuildContext(target=target, model=model, example_inputs=example_inputs, calibration=calibration,
                           calibration_note=origin.calibration, workdir=work, options=options, source=source)
        with ctrl_c.held(f"the {name} export"):    # torch's mode stacks survive no interrupt
            result = recipes(target).build(target.name, ctx)
        kept = stage_kept(result.keep, work)
        inputs, outputs = program_io(result.program, conventions)
        described = ProgramDescriptor(
            target=target.name, family=target.family, description=target.description,
            size_bytes=len(result.program), sha256=sha256_bytes(result.program),
            inputs=inputs, outputs=outputs, labels=tuple(labels) if labels else None, origin=origin,
            versions=versions(), files={n: f"{name}/{n}" for n in result.keep},
            files_sha256={n: sha256_file(kept / n) for n in result.keep}, info=result.info)
        commit(pte, result.program, described, kept, work)
    except BaseException:
        with interrupts_deferred():
            shutil.rmtree(work, ignore_errors=True)
            for folder in made:          # a new --out that got no program is not left behind
                with contextlib.suppress(OSError):
                    folder.rmdir()
        raise
    with interrupts_deferred():
        shutil.rmtree(work, ignore_errors=True)
    return pte


def _make_folder(folder: Path) -> list:
    """Make `folder` and its missing parents; return those made, deepest first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def stage_kept(keep: dict, work: Path) -> Optional[Path]:
    """Copy the kept intermediates into one folder of the scratch folder, to be swapped in as T/."""
    if not keep:
        return None
    staging = work / ".kept"
    staging.mkdir()
    for name, src in keep.items():
        shutil.copy2(src, staging / name)
    return staging


def commit(pte: Path, program: bytes, described: ProgramDescriptor, kept: Optional[Path], work: Path) -> None:
    """T/ first, the program next, its descriptor last, with Ctrl-C held back: a kill between two
    of them leaves a descriptor that does not describe what is beside it, which every reader
    refuses. The temporary files are in the scratch folder `work`, so a kill leaves nothing else."""
    tmp = work / "program.pte"
    with open(tmp, "wb") as f:                # written and synced before anything is replaced
        f.write(program)
        f.flush()
        os.fsync(f.fileno())
    with interrupts_deferred():
        if kept is not None:
            swap_in(kept, pte.with_suffix(""))
        os.replace(tmp, pte)
        fsync_dir(pte.parent)
        descriptors.write(pte, described, scratch=work)


def remove_leftovers(out_dir: Path, name: str) -> None:
    """What an export of NAME that was killed left in `out_dir`: its scratch folder (which holds its
    temporary program and descriptor) and the old T/ it set aside. Each name carries its
    process's id, so a concurrent export's own are never touched."""
    remove_dead_entries(out_dir, re.compile(rf"\.{re.escape(name)}\.(export|old)-(?P<pid>\d+)-.+"))


def program_io(program: bytes, conventions=None) -> tuple:
    """(inputs, outputs) of the program's forward method as TensorSpecs, from the serialized program;
    an int8 input or output that ExecuTorch's QuantizeInputs / QuantizeOutputs passes made carries the
    scale and zero point they wrote into the program (`io_quantization`)."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from ..firmware.c_facts import dtype_name
    parsed = deserialize_pte_binary(program).program
    plan = parsed.execution_plan[0]
    conventions = conventions or ([], [])
    quantized = io_quantization(parsed)

    def specs(direction, indices, notes):
        out = []
        for k, index in enumerate(indices):
            t = plan.values[index].val
            if type(t).__name__ != "Tensor":
                raise UserError(f"the program's input/output {k} is not a tensor ({type(t).__name__}): "
                                "tinyrps runs programs whose inputs and outputs are tensors")
            scale, zero_point = quantized.get((direction, k), (None, None))
            note = notes[k] if k < len(notes) else ""
            if note and scale is not None:      # an integer input is no longer what the convention describes
                note += ", as int8: round(x / scale) + zero_point"
            out.append(TensorSpec(dtype_name(t.scalar_type), tuple(int(s) for s in t.sizes), note, scale, zero_point))
        return tuple(out)
    return specs("input", plan.inputs, conventions[0]), specs("output", plan.outputs, conventions[1])


def io_quantization(parsed) -> dict:
    """{("input" | "output", k): (scale, zero_point)} of a deserialized program: ExecuTorch's QuantizeInputs /
    QuantizeOutputs passes record each integer input's and output's quantization as constant methods of the
    program (`input0_scale`, `input0_zp`, `output0_scale`, ...), each a plan returning one value."""
    constants = {}
    for plan in parsed.execution_plan:
        if plan.name != "forward" and len(plan.outputs) == 1:
            value = plan.values[plan.outputs[0]].val
            number = getattr(value, "double_val", getattr(value, "int_val", None))
            if number is not None:
                constants[plan.name] = number
    found = {}
    for name, scale in constants.items():
        direction, _, rest = name.partition("put")
        if direction in ("in", "out") and rest.endswith("_scale") and rest[:-len("_scale")].isdigit():
            k = int(rest[:-len("_scale")])
            zero_point = constants.get(f"{direction}put{k}_zp")
            if zero_point is not None:
                found[(direction + "put", k)] = (float(scale), int(zero_point))
    return found


def versions() -> dict:
    import torch
    from executorch.version import __version__ as et_version
    return {"torch": torch.__version__, "executorch": et_version}
