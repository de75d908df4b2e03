"""The CPU part of an Ethos-U program on the emulated Cortex-M55 + Ethos-U system (QEMU).

    measure_program(pte, described) -> {"board", "core", "kernels", "instructions_per_inference",
                                        "arena_bytes", "arena_parts_bytes", "layers", "emulator", "npu"}

An Ethos-U program runs on a Cortex-M CPU and an Ethos-U NPU: the CPU runs the operators
outside the delegate (quantize, dequantize) and the delegate call itself (copying its inputs
into the NPU's scratch and its outputs out, and the driver call); the NPU runs the command
stream. The measure stage's `vela` figures are Vela's estimate of the NPU's part; these are
the CPU's, counted on the tinyrps firmware of the MPS3 AN547 (Cortex-M55) in QEMU, with the
delegate's job handed over the NPU link to the NPU model on the host (tinyrps.firmware.npu_host).

- layers: per kernel call, in chain order, {op, kernels, variant, macs, instructions}: the runtime's own
  per-call counter, mean per inference over the measurement images. The delegate call's
  count is the board's side of the job only: the NPU model's work is not the board's.
- QEMU counts instructions (-icount shift=0), not cycles.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from ..firmware.boards import DEFAULT_BOARD, get_board
from ..infra.errors import UserError

# The board whose CPU takes the Cortex-M55's place beside the NPU (docs/design.md).
SYSTEM_BOARD = DEFAULT_BOARD
NPU_NOTE = ("the delegate's command stream ran on the NPU model on the host over the NPU link: its time is "
            "not the board's (Vela's estimate gives the NPU's)")


def measure_program(pte, described, quick: bool = False) -> Optional[dict]:
    """The measure stage's `cpu_part` figures of an Ethos-U program (see the module docstring); none in a
    quick measurement (a search needs Vela's estimate only)."""
    from ..firmware.qemu import firmware_elf, run_batch
    if quick:
        return None
    from .firmware import measurement_inputs
    board = get_board(SYSTEM_BOARD)
    result = run_batch(Path(pte), measurement_inputs(described), elf=firmware_elf(board.name, "isa"),
                       board=board.name)
    if not any(layer["kernels"] == "npu" for layer in result.layers):
        raise UserError(f"the {board.name} firmware ran {Path(pte).name} without an Ethos-U delegate call: "
                        "export it again with `tinyrps export`")
    return {
        "board": board.name,
        "core": board.core,
        "kernels": board.isa_kernels,
        "instructions_per_inference": int(np.median(result.instructions)),
        "arena_bytes": result.arena_needed,
        "arena_parts_bytes": result.arena_parts,
        "layers": [{key: layer[key] for key in ("op", "kernels", "variant", "macs", "instructions")}
                   for layer in result.layers],
        "emulator": f"qemu-system-arm -M {board.machine} ({board.core}), -icount shift=0: counts instructions, "
                    "not cycles",
        "npu": NPU_NOTE,
    }


def fingerprint() -> str:
    """What the figures depend on besides the program: the firmware's sources (and the NPU link's)."""
    from .firmware import fingerprint as firmware_fingerprint
    return firmware_fingerprint()
