"""Inference devices, chosen by `--device`. See base.Device for the interface.

Modules are imported lazily: listing the device names (for `tinyrps --help`) imports
nothing, opening `executorch` does not pay for QEMU, and `eager` not for the ExecuTorch runtime.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..infra.errors import UserError, require_file

if TYPE_CHECKING:        # the interface, for the annotation only: importing it here would cost every command
    from .base import Device

@dataclass(frozen=True)
class DeviceRow:
    """What the commands know of a device before they open it (nothing here imports its module)."""
    module: str              # its module in tinyrps.devices
    cls: str                 # its Device class there
    runs: str                # what it runs (documentation of the table; no message reads it)
    profiles: bool = False   # it takes a per-layer profile of each inference (eval/run --etdump)
    slow: bool = False       # an inference takes a tenth of a second or more: large splits are refused
    tensors: bool = False    # it runs any program's tensors (`tinyrps run`), not only image classifiers


DEVICES = {
    "eager": DeviceRow("eager", "EagerDevice", "the PyTorch checkpoint (model.pt)"),
    "executorch": DeviceRow("executorch", "ExecuTorchDevice", "a .pte in the ExecuTorch runtime on this CPU", tensors=True),
    "npu": DeviceRow("npu", "NpuDevice", "an Ethos-U .pte's command stream in tinyrps's functional model of the NPU",
                     tensors=True),
    "npu-ref": DeviceRow("npu_ref", "NpuRefDevice", "an Ethos-U .pte's TOSA graph in the TOSA reference model",
                         tensors=True),
    "mcu": DeviceRow("mcu", "McuDevice", "a Cortex-M .pte on the firmware of its board in QEMU (M55, M33, M4), over "
                     "the serial link", profiles=True, slow=True, tensors=True),
    "native": DeviceRow("native", "NativeDevice", "a Cortex-M .pte on the firmware's C runtime built for this host",
                        profiles=True, tensors=True),
}


# A device renamed after 0.1.0: its old name stays accepted, hidden, for one release.
OLD_DEVICE_NAMES = {"host": "executorch"}


def device_name(text: str) -> str:
    """The device a name means: the name itself, or the new name of an old one (`--device host`)."""
    return OLD_DEVICE_NAMES.get(text, text)


def device_names() -> list:
    return list(DEVICES)


def device_row(name: str) -> DeviceRow:
    name = device_name(name)
    if name not in DEVICES:
        raise UserError(f"unknown device '{name}'; valid devices: {', '.join(DEVICES)}")
    return DEVICES[name]


def device_class(name: str) -> type:
    row = device_row(name)
    return getattr(importlib.import_module(f"{__name__}.{row.module}"), row.cls)


def open_device(name: str, model, **options) -> Device:
    """Open device `name` on a model file (model.pt for eager, a .pte otherwise).

    Options every device accepts (and may ignore): `bulk=True` says many images will
    follow in big calls (evaluation), so a device may pick a faster bulk path.
    Device-specific options go to that device only."""
    cls = device_class(name)
    model = require_file(model, "model file", "create one with `tinyrps export --run RUN --target T`")
    return cls(model, **options)


def default_device(pte) -> str:
    """The device that runs this program by default, from its descriptor or its contents."""
    from ..hardware.families import get_family
    from ..hardware.pte import program_family
    if Path(pte).suffix == ".pt":
        return "eager"
    return get_family(program_family(pte)).default_device


def wrong_family(model_path, actual: str, device_name: str) -> UserError:
    """The one line for a program of family `actual` given to a device of another family."""
    from ..hardware.families import get_family
    article = "an" if actual[0] in "aeiou" else "a"
    other = get_family(actual)
    devices = [d for d in other.devices if d != device_name]
    return UserError(f"{Path(model_path).name} is {article} {actual} program: it needs {other.needs}, which device "
                     f"'{device_name}' does not have; run it with --device {' or --device '.join(devices)}")


def check_device_runs(pte, device_name: str) -> None:
    """Refuse, before any work, a device of one family named for a program of another (from the
    program's contents; the device checks the rest when it opens)."""
    from ..hardware.families import FAMILIES
    from ..hardware.pte import program_family
    family = program_family(pte)
    runs = {f.name for f in FAMILIES if device_name in f.devices}    # the mcu runs two families
    if runs and family not in runs:
        raise wrong_family(pte, family, device_name)


def check_program_devices(programs: dict, device_override, board) -> None:
    """Before any work on a run's programs (name -> .pte): the device named for all of them can
    run each, and a --board picks the board of at least one of them."""
    devices = set()
    for pte in programs.values():
        if device_override is not None:
            check_device_runs(pte, device_override)
        devices.add(device_override or default_device(pte))
    if board and "mcu" not in devices:
        which = ", ".join(programs) or "no program"
        raise UserError(f"--board {board} is for Cortex-M programs on --device mcu, and {which} "
                        f"{'runs' if len(programs) == 1 else 'run'} on {', '.join(sorted(devices)) or 'none'}: "
                        "leave --board out or select a Cortex-M program")


def require_board_device(device_name: str, board) -> None:
    """--board picks an emulated board: only the mcu device has one."""
    if board and device_name != "mcu":
        raise UserError(f"--board {board} is for --device mcu; device '{device_name}' has no board")


def require_tensor_device(pte, device_name: str) -> None:
    """Before `run` opens a device: one that gives the program's raw outputs, and advice that leads to
    one (a program no device here runs tensors of is said to be so, not sent to another device)."""
    from ..hardware.families import get_family
    from ..hardware.pte import program_family
    family = get_family(program_family(pte))
    able = [d for d in family.devices if DEVICES[d].tensors]
    name = Path(pte).name
    if not able:
        raise UserError(f"{name} is {'an' if family.name[0] in 'aeiou' else 'a'} {family.name} program, and no device "
                        f"here gives its raw outputs ({', '.join(family.devices)} runs image classifiers only): "
                        f"classify pictures with `tinyrps classify --model {pte} --device {family.devices[0]} "
                        f"IMAGE`, or run it on the Corstone-320 FVP with `tinyrps deploy fvp --model {pte} "
                        "--executorch-root DIR`")
    if device_name not in able:
        raise UserError(f"device '{device_name}' does not run {name}'s tensors: run it with --device "
                        f"{' or --device '.join(able)}")
