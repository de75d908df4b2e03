"""Executing a register command stream: the prepare pass and the steps it makes.

The stream is walked once, in order, with a register file. Each register command sets its
register; each operation command reads the registers it needs and becomes a step whose
addresses are computed and bounds-checked here, once. Running the program is then running
the steps in order on the regions (weights, scratch, fast scratch). The fast scratch's size
is not in the program: it is what the stream touches. The scheduling commands (waits,
block sizes, dependencies, PMU) change nothing a step computes, since the steps run one
after another in stream order, and are skipped.
"""
from __future__ import annotations

from . import NpuCorrupt, NpuUnsupported
from .commands import Config
from .registers import REGIONS, Registers

# commands that only schedule, order or measure the NPU's work
IGNORED = {"OP_DMA_WAIT", "OP_KERNEL_WAIT", "OP_PMU_MASK", "OP_IRQ"}
# a register whose name starts as an operation's does: the U85's scalar operand
REGISTERS_NAMED_OP = {"OP_SCALAR"}
MAX_FAST_SCRATCH = 1 << 26      # the U85's largest SRAM configurations are a few MB


def prepare(commands: list, config: Config, region_sizes: tuple, name: str) -> tuple:
    """(steps, region sizes): the program's operations in order, and the regions' sizes
    (the fast scratch sized to what the steps touch)."""
    from . import elementwise, operations, resize
    builders = {**operations.BUILDERS, "OP_ELEMENTWISE": elementwise.Elementwise, "OP_RESIZE": resize.Resize}
    registers = Registers(config.product)
    steps, extents, stopped = [], Extents(region_sizes), False
    for command in commands:
        if command.name == "OP_STOP":
            stopped = True
            break
        if not command.name.startswith("OP_") or command.name in REGISTERS_NAMED_OP:
            registers.set(command)
        elif command.name not in IGNORED:
            build = builders.get(command.name)
            if build is None:
                raise NpuUnsupported(f"{name}: {command.name} (command word {command.at}) is not implemented")
            extents.chain_out, extents.chain_read = None, False
            try:
                steps.append(build(registers, command, config, extents))
            except (NpuCorrupt, NpuUnsupported) as error:
                raise type(error)(f"{name}: {command.name} at command word {command.at}: {error}") from None
            if extents.chain is not None and not extents.chain_read:
                raise NpuCorrupt(f"{name}: {command.name} at command word {command.at} does not read the "
                                 f"chained OFM of the operation before it")
            extents.chain = extents.chain_out
    if not stopped:
        raise NpuCorrupt(f"{name}: the command stream ends without OP_STOP")
    if extents.chain is not None:
        raise NpuCorrupt(f"{name}: the last operation chains its OFM to no operation")
    return steps, _sizes(extents, region_sizes, name)


class Extents:
    """The end of every region access the steps make, checked as each step is built: against the
    weights' and the scratch's sizes, and the fast scratch's limit (its size is the furthest end)."""

    def __init__(self, known: tuple):
        self.sizes = list(known) + [MAX_FAST_SCRATCH] * (REGIONS - len(known))
        self.fast_end = 0
        # the chained OFM the operation being built must read, the one it leaves, and whether it read
        self.chain, self.chain_out, self.chain_read = None, None, False     # (featuremap.access)

    def add(self, region: int, entry: tuple) -> None:
        end, what = entry
        if end > self.sizes[region]:
            limit = "the fast scratch's limit" if region == 2 else "its size"
            raise NpuCorrupt(f"{what} reaches byte {end} of region {region}, beyond {limit} ({self.sizes[region]})")
        if region == 2:
            self.fast_end = max(self.fast_end, end)


def _sizes(extents: Extents, known: tuple, name: str) -> tuple:
    return tuple(known) + (extents.fast_end,)
