"""The Cortex-M cores tinyrps builds programs for: one `Core` record each, in one table.

    name     the -mcpu, and the Cortex-M export target ("cortex-m55")
    display  how tables and messages name it ("Cortex-M55")
    isa      the fastest kernel variant its ISA allows: "mve" (Helium), "dsp", or "c" (plain C only)
    board    the emulated board (firmware/board/<board>/) that runs its programs
    timing   its row of the cycle model (tinyrps.measure.cycles); None for a core without one
    host     the board's own core, for a core QEMU has no machine for: its programs run on the board
             of a core whose instruction set contains its own (None: the board is the core's)
    own_build  with a host: the firmware is built for this core (-mcpu=name) and runs on the host's
             board; without: the host's own firmware runs its programs, and its figures are the host's
    fpu      it has a floating-point unit (the firmware's float ABI is hard, else soft)

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
    host: Optional[str] = None
    own_build: bool = False
    fpu: bool = True

    @property
    def description(self) -> str:
        """"Cortex-M55 (MVE)": the core and its kernel variant; a hosted core says where it runs."""
        kernels = "plain C" if self.isa == "c" else self.isa.upper()
        if self.host is None:
            return f"{self.display} ({kernels})"
        how = "its own build on" if self.own_build else "run by"
        return f"{self.display} ({kernels}; {how} the {display_name(self.host)} of {self.board})"


# The ten cores of executorch 1.5.1's CortexMTargetConfig and the CMSIS-NN backend each resolves to:
# MVE (precomputed kernel sums) on the M55/M85, DSP (bias in the linear kernel) on the M4, M7, M33 and
# M35P, SCALAR (the same program as DSP) on the M0, M0+, M3 and M23, which run the plain-C kernels.
# QEMU 7.2 has no machine for the M85, M35P, M0+ or M23, and its microbit M0 has 16 KiB of RAM: an
# M85 or M35P program runs on the firmware of the M55 or M33 (the same instruction set); the M0 and
# M0+ (Armv6-M) and the M23 (Armv8-M Baseline) have firmware of their own, run on the M3 (Armv7-M)
# and the M33 (Armv8-M Mainline), whose instruction sets contain theirs.
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
    # The M7 row is single-issue: its dual issue of instruction pairs and its branch prediction can
    # take a real M7 well below it, so its band is the widest.
    Core("cortex-m7", "Cortex-M7", "dsp", "mps2-an500",
         CoreTiming("cortex-m7", "armv7e-m", 25_000_000, 0.35, branch_refill=1, load=1, load_pipelined=1,
                    store=1, load_pair=1, multiple_per_register=0.5, divide=7, fp_divide=14, low_overhead_loop=0)),
    Core("cortex-m3", "Cortex-M3", "c", "mps2-an385", fpu=False),
    Core("cortex-m0", "Cortex-M0", "c", "mps2-an385", host="cortex-m3", own_build=True, fpu=False),
    Core("cortex-m0plus", "Cortex-M0+", "c", "mps2-an385", host="cortex-m3", own_build=True, fpu=False),
    Core("cortex-m23", "Cortex-M23", "c", "mps2-an505", host="cortex-m33", own_build=True, fpu=False),
    Core("cortex-m35p", "Cortex-M35P", "dsp", "mps2-an505", host="cortex-m33"),
    Core("cortex-m85", "Cortex-M85", "mve", "mps3-an547", host="cortex-m55"),
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
