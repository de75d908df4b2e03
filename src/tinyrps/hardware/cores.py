"""The Cortex-M cores tinyrps builds programs for: one `Core` record each, in one table.

    name     the -mcpu, and the Cortex-M export target ("cortex-m55")
    display  how tables and messages name it ("Cortex-M55")
    isa      the fastest kernel variant its ISA allows beside plain C: "mve" (Helium) or "dsp"
    board    the emulated board (firmware/board/<board>/) that runs its programs
    timing   its row of the cycle model (tinyrps.measure.cycles); None for a core that runs on
             another core's board, whose figures are that core's

Adding a core is its row here and, if no board runs it yet, a port folder under firmware/board/
with its row in tinyrps.firmware.boards. Nothing here imports more than the standard library.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..infra.errors import UserError


@dataclass(frozen=True)
class CoreTiming:
    """Cycles per instruction class on one core (zero-wait memory)."""
    core: str
    objdump_arch: str               # objdump -m: decodes every instruction the core has
    clock_hz: int                   # the emulated board's clock
    uncertainty: float              # the estimate's relative error band (+/-)
    branch_refill: int              # P: cycles to refill the pipeline after a taken branch
    load: int                       # a single load (LDR, LDRB, ...)
    load_pipelined: int             # a single load or store right after another one
    store: int
    load_pair: int                  # LDRD / STRD
    multiple_per_register: float    # LDM, STM, PUSH, POP: 1 + this x registers
    divide: int                     # SDIV/UDIV: the middle of its data-dependent range
    fp_divide: int                  # VDIV, VSQRT (single precision)
    low_overhead_loop: int          # LE/LETP taken: the branch the loop hardware makes for free
    mve: bool = False               # Helium: 2 cycles a vector instruction, 1 when it overlaps


@dataclass(frozen=True)
class Core:
    name: str
    display: str
    isa: str
    board: str
    timing: Optional[CoreTiming] = None

    @property
    def description(self) -> str:
        """"Cortex-M55 (MVE)": the core and its kernel variant."""
        return f"{self.display} ({self.isa.upper()})"


# The cores whose CortexMTargetConfig resolves to a CMSIS-NN backend in executorch 1.5.1: DSP (bias in
# the linear kernel) on M4/M33, MVE (precomputed kernel sums) on M55/M85. QEMU 7.2 has no Cortex-M85
# machine: an M85 program (the M55's Armv8.1-M MVE operators) runs on the M55 of the AN547.
CORES = (
    Core("cortex-m4", "Cortex-M4", "dsp", "mps2-an386",
         CoreTiming("cortex-m4", "armv7e-m", 25_000_000, 0.15, branch_refill=2, load=2, load_pipelined=1,
                    store=1, load_pair=3, multiple_per_register=1.0, divide=7, fp_divide=14, low_overhead_loop=0)),
    Core("cortex-m33", "Cortex-M33", "dsp", "mps2-an505",
         CoreTiming("cortex-m33", "armv8-m.main", 20_000_000, 0.20, branch_refill=2, load=2, load_pipelined=1,
                    store=1, load_pair=3, multiple_per_register=1.0, divide=7, fp_divide=14, low_overhead_loop=0)),
    Core("cortex-m55", "Cortex-M55", "mve", "mps3-an547",
         CoreTiming("cortex-m55", "armv8.1-m.main", 32_000_000, 0.30, branch_refill=2, load=1, load_pipelined=1,
                    store=1, load_pair=1, multiple_per_register=0.5, divide=6, fp_divide=14, low_overhead_loop=0,
                    mve=True)),
    Core("cortex-m85", "Cortex-M85", "mve", "mps3-an547"),
)

_BY_NAME = {c.name: c for c in CORES}


def core_names() -> tuple:
    return tuple(_BY_NAME)


def find_core(name: str) -> Optional[Core]:
    return _BY_NAME.get(name)


def get_core(name: str) -> Core:
    if name not in _BY_NAME:
        raise UserError(f"unknown Cortex-M core '{name}'; valid: {', '.join(_BY_NAME)}")
    return _BY_NAME[name]


def display_name(name: str) -> str:
    """The core's display name, or `name` itself for a core tinyrps has no record of."""
    core = _BY_NAME.get(name)
    return core.display if core else name


def timings() -> dict:
    """core name -> CoreTiming of every core that has its own row of the cycle model."""
    return {c.name: c.timing for c in CORES if c.timing is not None}
