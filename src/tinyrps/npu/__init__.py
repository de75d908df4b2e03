"""A functional model of the Arm Ethos-U55 and Ethos-U85 NPUs: it executes the command stream Vela wrote.

An Ethos-U program's delegate holds what a driver hands the NPU: a register command stream, the
weights (region 0) and the size of the scratch (region 1). The model reads them from the .pte
(blob), decodes the stream into commands (commands), and executes them in stream order on its
regions (machine), each operation as the NPU's datapath defines it (operations, output_stage).
The int8 results are checked bit for bit against the TOSA reference model (tests/npu).

    load(program_bytes, name) -> Program      the delegate of a .pte, parsed and checked
    Program.run(inputs) -> (outputs, report)   int8 arrays in, int8 arrays out, what executed per layer

Anything the model does not implement is a NpuUnsupported naming the command, field and value;
anything malformed is a NpuCorrupt: both are UserErrors (one line, never a guess).
"""
from __future__ import annotations

from ..infra.errors import UserError


class NpuError(UserError):
    """The NPU program cannot be executed."""


class NpuCorrupt(NpuError):
    """The program is malformed: a length, offset, opcode or region access out of range."""


class NpuUnsupported(NpuError):
    """A command, field value or format the model does not implement."""


def load(program: bytes, name: str = "program"):
    from .program import Program
    return Program.from_pte(program, name)
