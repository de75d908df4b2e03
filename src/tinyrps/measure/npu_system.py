"""The CPU part of an Ethos-U program on the emulated Cortex-M55 + Ethos-U system (QEMU).

    measure_program(pte, described) -> {"board", "core", "kernels", "instructions_per_inference",
                                        "arena_bytes", "arena_parts_bytes", "layers", "emulator", "npu"}

An Ethos-U program runs on a Cortex-M CPU and an Ethos-U NPU: the CPU runs the operators
outside the delegate (quantize, dequantize) and the delegate call itself (copying its inputs
into the NPU's scratch and its outputs out, and the driver call); the NPU runs the command
stream. The measure stage's `vela` figures are Vela's estimate of the NPU's part; these are
the CPU's, counted on the tinyrps firmware of the MPS3 AN547 (Cortex-M55) in QEMU, with the
delegate's job handed over the NPU link to the NPU model on the host (tinyrps.firmware.npu_host).

- layers: per kernel call, in chain order, {op, kernels, variant, macs, instructions, estimated_cycles}:
  the runtime's own per-call counter, mean per inference over the measurement images, and the cycle
  model's estimate of the same call on a real Cortex-M55 (tinyrps.measure.cycles, one traced
  inference). The delegate call's figures are the board's side of the job only (the copies and the
  link driver, which does more than Arm's driver would): the NPU model's work is not the board's.
- `whole_inference(cpu_part, vela)`: one inference at the system's clock, each part estimated (the
  report and `measure` show it under the per-layer table).
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
    from ..firmware.qemu import firmware_elf, images_as_input, run_batch
    if quick:
        return None
    from .firmware import measurement_inputs
    from .cycles import TIMINGS, estimate_run
    board = get_board(SYSTEM_BOARD)
    elf = firmware_elf(board.name, "isa")
    samples = measurement_inputs(described)
    result = run_batch(Path(pte), samples, elf=elf, board=board.name)
    if not any(layer["kernels"] == "npu" for layer in result.layers):
        raise UserError(f"the {board.name} firmware ran {Path(pte).name} without an Ethos-U delegate call: "
                        "export it again with `tinyrps export`")
    # one inference traced, its kernel calls matched to the firmware's own counts of the same inference
    one = [images_as_input(samples[:1])] if hasattr(samples, "ndim") else [s[:1] for s in samples]
    counted = run_batch(Path(pte), one, elf=elf, board=board.name)
    traced = estimate_run(Path(pte), elf, board, one, counted.layers, TIMINGS[board.core])
    layers = [{**{key: layer[key] for key in ("op", "kernels", "variant", "macs", "instructions")},
               "estimated_cycles": estimated["estimated_cycles"]}
              for layer, estimated in zip(result.layers, traced["layers"])]
    return {
        "board": board.name,
        "core": board.core,
        "kernels": board.isa_kernels,
        "instructions_per_inference": int(np.median(result.instructions)),
        "estimated_cycles_per_inference": traced["estimated_cycles_per_inference"],
        "clock_hz": traced["clock_hz"],
        "uncertainty": traced["uncertainty"],
        "arena_bytes": result.arena_needed,
        "arena_parts_bytes": result.arena_parts,
        "layers": layers,
        "emulator": f"qemu-system-arm -M {board.machine} ({board.core}), -icount shift=0: counts instructions, "
                    "not cycles",
        "npu": NPU_NOTE,
    }


def whole_inference(cpu: dict, vela: dict) -> dict:
    """One inference, estimated, at the system's clock (Vela's system config gives it; the CPU and the NPU
    of a Corstone system share it): the CPU part's cycles by the cycle model, the NPU part's by Vela
    (memory waits included), the CPU waiting while the NPU runs, as a driver's invoke does."""
    clock = vela["clock_hz"]
    cpu_cycles, npu_cycles = cpu["estimated_cycles_per_inference"], vela["total_cycles"]
    return {"clock_hz": clock, "cpu_cycles": cpu_cycles, "cpu_uncertainty": cpu["uncertainty"],
            "npu_cycles": npu_cycles, "cpu_ms": cpu_cycles / clock * 1e3, "npu_ms": npu_cycles / clock * 1e3,
            "ms": (cpu_cycles + npu_cycles) / clock * 1e3}


def fingerprint() -> str:
    """What the figures depend on besides the program: the firmware's sources (and the NPU link's) and the
    cycle model."""
    from .cycles import fingerprint as cycles_fingerprint
    return cycles_fingerprint()
