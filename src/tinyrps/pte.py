"""Facts about a .pte file: is it one, does its sidecar describe it, which hardware does it need."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Optional

from .errors import UserError

# File identifier of an ExecuTorch program flatbuffer (bytes 4..8): "ET" and the format
# version. ET12 is what this ExecuTorch writes and the only one the firmware's reader
# (firmware/src/pte_reader.c) accepts, so the host refuses the others too.
PTE_FILE_IDENTIFIER = b"ET12"
# The families a program can belong to, as sidecars name them.
FAMILIES = ("host", "ethos-u", "cortex-m")


def read_program(path) -> bytes:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"model file not found: {path} (create one with `tinyrps export --run RUN --target T`)")
    data = path.read_bytes()
    identifier = data[4:8]
    if len(data) < 8 or identifier[:2] != PTE_FILE_IDENTIFIER[:2]:
        raise UserError(f"{path} is not an ExecuTorch program (.pte): export one with `tinyrps export`")
    if identifier != PTE_FILE_IDENTIFIER:
        shown = identifier.decode("ascii", "replace")
        raise UserError(f"{path} is an ExecuTorch program of format {shown}, but tinyrps reads "
                        f"{PTE_FILE_IDENTIFIER.decode()} only: export it again with `tinyrps export`")
    return data


def checked_sidecar(path, program: bytes) -> Optional[dict]:
    """The sidecar T.json of program T.pte, or None if it has none.

    A sidecar is trusted only for the program it was written with: one whose sha256 is not
    the program's (the .pte was replaced or changed after the export) is refused."""
    from .export import read_sidecar
    path = Path(path)
    sidecar = read_sidecar(path)
    if sidecar is None:
        return None
    if sidecar.get("sha256") != hashlib.sha256(program).hexdigest():
        raise UserError(f"{path.name} does not match its sidecar {path.with_suffix('.json').name} (the sidecar's "
                        f"sha256 is not the program's: one of them was replaced): export the program again "
                        f"with `tinyrps export`")
    family = sidecar.get("family")
    if family is not None and family not in FAMILIES:
        raise UserError(f"the sidecar {path.with_suffix('.json').name} names an unknown family '{family}' "
                        f"(valid: {', '.join(FAMILIES)}): export the program again with `tinyrps export`")
    return sidecar


def program_family(path) -> str:
    """'host', 'ethos-u' or 'cortex-m': from the sidecar if it matches the program, else from the program."""
    program = read_program(path)
    sidecar = checked_sidecar(path, program)
    if sidecar and sidecar.get("family"):
        return sidecar["family"]
    return family_of_program(program, path)


def family_of_program(data: bytes, path="program") -> str:
    from executorch.exir._serialize._program import deserialize_pte_binary
    try:
        plan = deserialize_pte_binary(data).program.execution_plan[0]
    except Exception:
        raise UserError(f"{path} is a corrupted ExecuTorch program: export it again with `tinyrps export`") from None
    if any(d.id == "EthosUBackend" for d in plan.delegates):
        return "ethos-u"
    if any(op.name.startswith("cortex_m::") for op in plan.operators):
        return "cortex-m"
    return "host"
