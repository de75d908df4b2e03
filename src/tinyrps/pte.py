"""Facts about a .pte file: is it one, and which kind of hardware does it need."""
from __future__ import annotations

from pathlib import Path

from .errors import UserError

# File identifier of an ExecuTorch program flatbuffer (bytes 4..8).
PTE_MAGIC_PREFIX = b"ET"


def read_program(path) -> bytes:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"model file not found: {path} (create one with `tinyrps export --run RUN --target T`)")
    data = path.read_bytes()
    if len(data) < 8 or data[4:6] != PTE_MAGIC_PREFIX:
        raise UserError(f"{path} is not an ExecuTorch program (.pte): export one with `tinyrps export`")
    return data


def program_family(path) -> str:
    """'host', 'ethos-u' or 'cortex-m': from the sidecar if present, else from the program."""
    from .export import read_sidecar
    sidecar = read_sidecar(path)
    if sidecar and sidecar.get("family"):
        return sidecar["family"]
    return family_of_program(read_program(path), path)


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
