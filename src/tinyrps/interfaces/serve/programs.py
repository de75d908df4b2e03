"""The programs `tinyrps serve` serves: from runs and models, each with the device that runs it and the
label the page's selector shows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ...infra.errors import UserError


@dataclass(frozen=True)
class Program:
    id: str               # what the page names it by
    pte: Path
    target: str
    family: str
    device: str           # the tinyrps.devices name that runs it
    label: str            # for the selector: the target, and what it runs on
    options: dict = field(default_factory=dict)   # open_device options (board, port)
    core: Optional[str] = None                    # the MCU core it runs on ("Cortex-M55"), for mcu

    def public(self) -> dict:
        return {"id": self.id, "label": self.label, "target": self.target, "family": self.family,
                "device": self.device}


def collect_programs(runs=(), models=(), device: str = None, board: str = None, port: str = None) -> list:
    """The programs of the runs (each checked to come from its checkpoint) and the models, each
    with the device that runs it: `device` for the programs whose family it runs, the family's
    default for the others."""
    from ...hardware import descriptor
    from ...hardware.families import get_family
    from ...hardware.pte import program_family
    from ...programs import selected
    paths = []
    for run in runs:
        found = selected(run)
        if not found:
            raise UserError(f"{run} has no exported program: export one with "
                            f"`tinyrps export --run {run} --target int8-xnnpack`")
        paths += list(found.items())
    paths += [(Path(m).stem, Path(m)) for m in models]
    programs, seen, ids = [], set(), set()
    for name, pte in paths:
        if pte.resolve() in seen:
            continue
        seen.add(pte.resolve())
        family = program_family(pte)
        devices = get_family(family).devices
        chosen = device if device in devices else devices[0]
        described = descriptor.read(pte)
        target = described.target if described is not None else name
        pid = unique_id(name, ids)
        options = {}
        if chosen == "mcu":
            options = {"board": board} if board else {}
            if port:
                options["port"] = port
        label, core = program_label(pte, target, chosen, described, board, port)
        programs.append(Program(pid, pte, target, family, chosen, label, options, core))
    check_device_options(programs, device, board, port)
    return programs


def unique_id(name: str, taken: set) -> str:
    pid, n = name, 2
    while pid in taken:
        pid, n = f"{name}-{n}", n + 1
    taken.add(pid)
    return pid


def check_device_options(programs: list, device: str, board: str, port: str) -> None:
    if not programs:
        raise UserError("nothing to serve: give --run RUN or --model X.pte")
    if device and not any(p.device == device for p in programs):
        raise UserError(f"no program served here runs on --device {device}: "
                        f"{', '.join(sorted({p.family for p in programs}))} programs only")
    on_mcu = [p for p in programs if p.device == "mcu"]
    if (board or port) and not on_mcu:
        flag = "--board" if board else "--port"
        raise UserError(f"{flag} is for the mcu device, and no program served here runs on it")
    if port and len(on_mcu) > 1:
        raise UserError(f"--port {port} is one board with one program, and {len(on_mcu)} Cortex-M programs would "
                        f"run on it ({', '.join(p.id for p in on_mcu)}): give the one it holds with --model X.pte")


def program_label(pte: Path, target: str, device: str, described, board: str, port: str) -> tuple:
    """(the selector's label: the target and what it runs on, the MCU core's name or None)."""
    from ...devices import device_class
    where, core = device_class(device).runs_on(pte, target, described, board, port)
    return f"{target}: {where}", core
