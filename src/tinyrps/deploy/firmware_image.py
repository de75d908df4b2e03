"""The firmware image a product would flash for one Cortex-M program: the board's firmware with only
the program's operators and the kernel variants its calls bind, beside the generic image that `run`,
`eval` and `serve` use (every operator, every variant).

    program_image_elf(program, layers, board) -> Path of tinyrps_fw.elf

The selection is the deploy library's (tinyrps.deploy.library): the program's operators and those
the runtime refers to (select_operators), and per operator's ops/ file the variants the program's
calls bound on the generic image (bound_variants, from the measured layers). The image's sources are
the firmware's with
- ops/operators.def holding only those operators' rows (the table, its declarations and the kernel
  parameters follow from it), and the ops/ files of the other operators left out;
- each selected ops/ file's variant list without the rows no call binds (of every ISA the build
  compiles, plain C included), so that the linker (--gc-sections) drops their kernels.
Every kept call binds the same variant as on the generic image: the rows before its variant did not
accept it there, and those kept are still before it; a call the loader moved to another row when it
fused the next call into it (ops/conv2d.c, fuse_next) ran that row, and the row it bound first, left
out, no longer comes before it: there it binds that row directly, and the fusion keeps it. The
measurement checks this on the image itself (the same kernels, instructions and outputs per call).
The runtime's tables (kernel calls, operators, arguments, inputs and outputs: the TRT_MAX_* limits)
are sized to the program's own counts, as the deploy library's are (program_limits), so the image
holds no RAM for calls the program does not make. One build per distinct selection and limits,
cached by them (tinyrps.firmware.build).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UserError


def image_tree(fw: Path, operator_names: list, layers: list, isa_kernels: str) -> dict:
    """{path relative to fw: text} of the program's firmware image sources (see the module docstring)."""
    from ..firmware.operators import DEFINE
    from ..firmware.sources import source_files
    from .library import (FIRMWARE_ISAS, OPERATOR_LIST, OPERATOR_SOURCES, bound_variants, library_operator_list,
                          runtime_rows, select_operators, variant_rows, without_unbound_variants)
    src = fw / "src"
    names = set(operator_names)
    symbols = select_operators([row.qualified for row in runtime_rows(src) if row.name in names], src)
    bound = bound_variants(layers, symbols, src, isa_kernels)
    kept_rows = {}
    for symbol in symbols:
        rel = OPERATOR_SOURCES[symbol]["ops"][0]
        kept_rows.setdefault(rel, set()).update(bound[symbol])
    tree = {}
    for path in source_files(fw):
        rel = path.relative_to(fw).as_posix()
        text = path.read_text()
        in_src = rel[len("src/"):]
        if in_src == OPERATOR_LIST:
            text = library_operator_list(text, symbols)
        elif rel.startswith("src/ops/") and rel.endswith(".c"):
            defined = [symbol for symbol, _ in DEFINE.findall(text)]
            if defined and not set(defined) & set(symbols):   # the shared bind steps' files define none: kept
                continue                          # an operator the program does not use
            used = kept_rows.get(in_src, set())
            if used:                              # an operator no call runs (a sibling, dequantize) keeps its list
                listed = {name for symbol in defined
                          for isa, name in variant_rows(text, symbol, in_src) if isa in FIRMWARE_ISAS[isa_kernels]}
                if listed - used:
                    text = without_unbound_variants(text, listed - used, in_src)
        tree[rel] = text
    return tree


def program_image_elf(program: bytes, layers: list, board: str) -> Path:
    """The firmware ELF of `board` built for this program's operators and the variants `layers` (the generic
    ISA image's measured calls) bound."""
    from ..firmware.boards import firmware_kind, get_board
    from ..firmware.build import build_firmware
    from ..firmware.qemu import FIRMWARE_EXECUTABLE
    from ..firmware.sources import firmware_dir
    from ..pte import program_contents
    spec = get_board(board)
    operators = program_contents(program).operators
    if not layers:
        raise UserError("the program ran no kernel call on the firmware: nothing to build its image of")
    tree = image_tree(firmware_dir(), list(operators), layers, spec.isa_kernels)
    return build_firmware(firmware_kind(board, "isa"), limits=program_limits(program),
                          image=tree).tool(FIRMWARE_EXECUTABLE)


def program_limits(program: bytes) -> dict:
    """The runtime's TRT_MAX_* limits set to this program's counts (at least 1 each), from the flatbuffer as
    the host build of the runtime reads it (`tinyrps-native dump`, which checks no limit)."""
    import json
    import subprocess
    from ..firmware.build import build_firmware
    from ..tempdirs import temp_dir
    from .library import table_limits
    tool = build_firmware("native").tool("tinyrps-native")
    with temp_dir("limits") as work:
        pte = Path(work) / "program.pte"
        pte.write_bytes(program)
        result = subprocess.run([str(tool), "dump", str(pte)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit {result.returncode}"
        raise UserError(f"the runtime cannot read the program ({reason.removeprefix('error: ')}): export it again "
                        "with `tinyrps export`")
    return table_limits(json.loads(result.stdout))
