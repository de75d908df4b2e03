"""The emulated Cortex-M boards the firmware has a port for (firmware/board/<name>/).

Each board is one QEMU machine and one core. What the port's sources say -- the core
(port.cmake), the SysTick clock (port.h), where the program and the boot descriptor go and
how much RAM there is (the linker script) -- is read from them (c_facts.port), so it is
written once; this table adds what only the host needs: the QEMU machine and the reduced-ISA
builds. The core's own facts (its kernel variant, which board runs it) are its tinyrps.hardware.cores
record; a core with a build of its own on another core's board (the Cortex-M0 on the M3's) is that
record alone: the board builds it beside its own. `tests/firmware/test_boards.py` checks the port facts against the built firmware.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..hardware.cores import CORES, core_names, find_core, get_core
from ..infra.errors import UserError


@dataclass(frozen=True)
class Board:
    name: str                  # the port folder, the firmware's `info` board name
    machine: str               # qemu-system-arm -M
    description: str
    # more firmware builds for this board: kernel set -> -mcpu with ISA extensions switched off
    # (the M55 without MVE runs the DSP kernels: each variant tested on one board)
    reduced_isa: tuple = ()

    @property
    def _port(self):
        from .c_facts import port
        return port(self.name)

    @property
    def core(self) -> str:
        """-mcpu of the firmware (the export target's core): the port's PORT_CORE."""
        return self._port.core

    @property
    def isa_kernels(self) -> str:
        """The kernel variant the core's ISA allows: "mve" or "dsp" (its tinyrps.hardware.cores record)."""
        return get_core(self.core).isa

    @property
    def model_address(self) -> int:
        """Start of the port's MODEL region: the .pte, unchanged."""
        return self._port.model_address

    @property
    def model_max_bytes(self) -> int:
        """__model_max_size."""
        return self._port.model_max_bytes

    @property
    def descriptor_address(self) -> int:
        """Start of the port's RAM region: the boot descriptor."""
        return self._port.ram_address

    @property
    def ram_bytes(self) -> int:
        """The port's RAM region: data, bss, stack and the runtime's arena."""
        return self._port.ram_bytes

    @property
    def systick_hz(self) -> int:
        """SysTick's clock: one tick is 1e9 / systick_hz instructions."""
        return self._port.systick_hz


BOARDS = {b.name: b for b in (
    Board("mps3-an547", "mps3-an547", "Arm MPS3 AN547: SSE-300 with a Cortex-M55 (Helium/MVE)",
          reduced_isa=(("dsp", "cortex-m55+nomve"),)),
    Board("mps2-an505", "mps2-an505", "Arm MPS2+ AN505: Cortex-M33 (DSP), booting Secure"),
    Board("mps2-an386", "mps2-an386", "Arm MPS2+ AN386: Cortex-M4 (DSP)"),
    Board("mps2-an500", "mps2-an500", "Arm MPS2 AN500: Cortex-M7 (DSP, double-precision FPU)"),
    Board("mps2-an385", "mps2-an385", "Arm MPS2 AN385: Cortex-M3 (Armv7-M, no DSP, no FPU)"),
)}

DEFAULT_BOARD = "mps3-an547"

# Kernel sets a firmware build can bind: the fastest the ISA allows, or portable plain C.
KERNEL_SETS = ("isa", "c")
KERNEL_SET_NAMES = {"isa": "ISA-kernel", "c": "plain-C"}     # as messages name the builds


def get_board(name: str) -> Board:
    if name not in BOARDS:
        raise UserError(f"unknown board '{name}'; valid boards: {', '.join(BOARDS)}")
    return BOARDS[name]


def board_for_core(core: str) -> Board:
    """The board that runs a program exported for `core` (its tinyrps.hardware.cores record names it)."""
    record = find_core(core)
    if record is None:
        raise UserError(f"no emulated board runs a {core} program; cores with a board: {', '.join(core_names())}")
    return BOARDS[record.board]


def firmware_build(board: str, kernels: str = "isa", core: str = None) -> str:
    """The build (tinyrps.firmware.build) of the firmware for `board` with a kernel set:
    "isa", "c", or one of the board's reduced-ISA builds (e.g. "dsp" on the mps3-an547). With `core`,
    a core with a build of its own on the board (e.g. "cortex-m0" on the mps2-an385) gets that build.
    A core of plain C only has one build: its "isa" and "c" builds are the same kind."""
    spec = get_board(board)
    valid = KERNEL_SETS + tuple(name for name, _ in spec.reduced_isa)
    if kernels not in valid:
        raise UserError(f"unknown kernel set '{kernels}' for {board}; valid: {', '.join(valid)}")
    guest = guest_core(board, core)
    base = f"{board}-{guest.name}" if guest else board
    plain_only = get_core(guest.name if guest else spec.core).isa == "c"
    return base if kernels == "isa" or (kernels == "c" and plain_only) else f"{base}-{kernels}"


def guest_core(board: str, core: str = None):
    """The record of `core` if it has a build of its own that runs on `board`, else None."""
    record = find_core(core) if core else None
    return record if record is not None and record.own_build and record.board == board else None


def guest_cores(board: str) -> tuple:
    """The cores with a build of their own that runs on `board`."""
    return tuple(c for c in CORES if c.own_build and c.board == board)


def kernels_name(board: Board, kernels: str = "isa", core: str = None) -> str:
    """What the measurement calls a build's kernels: "mve", "dsp" or "c"."""
    guest = guest_core(board.name, core)
    isa = guest.isa if guest else board.isa_kernels
    return isa if kernels == "isa" else "c"
