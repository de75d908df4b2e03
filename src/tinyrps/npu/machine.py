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
MAX_FAST_SCRATCH = 1 << 26      # the U85's largest SRAM configurations are a few MB


def prepare(commands: list, config: Config, region_sizes: tuple, name: str) -> tuple:
    """(steps, region sizes): the program's operations in order, and the regions' sizes
    (the fast scratch sized to what the steps touch)."""
    from . import operations
    registers = Registers(config.product)
    steps, extents, stopped = [], {}, False
    for command in commands:
        if command.name == "OP_STOP":
            stopped = True
            break
        if not command.name.startswith("OP_"):
            registers.set(command)
        elif command.name not in IGNORED:
            build = operations.BUILDERS.get(command.name)
            if build is None:
                raise NpuUnsupported(f"{name}: {command.name} (command word {command.at}) is not implemented")
            try:
                steps.append(build(registers, command, config, extents))
            except (NpuCorrupt, NpuUnsupported) as error:
                raise type(error)(f"{name}: {command.name} at command word {command.at}: {error}") from None
    if not stopped:
        raise NpuCorrupt(f"{name}: the command stream ends without OP_STOP")
    return steps, _sizes(extents, region_sizes, name)


def _sizes(extents: dict, known: tuple, name: str) -> tuple:
    sizes = list(known) + [0] * (REGIONS - len(known))
    fast = max((end for end, _ in extents.get(2, [])), default=0)
    if fast > MAX_FAST_SCRATCH:
        raise NpuCorrupt(f"{name}: the command stream reaches {fast} bytes into the fast scratch (region 2)")
    sizes[2] = max(sizes[2], fast)
    for region, ends in extents.items():
        for end, what in ends:
            if end > sizes[region]:
                raise NpuCorrupt(f"{name}: {what} reaches byte {end} of region {region}, "
                                 f"which has {sizes[region]} bytes")
    return tuple(sizes)
