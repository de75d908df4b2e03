"""The firmware image a product would flash for one Cortex-M program: the board's firmware with only
the program's operators and the kernel variants its calls bind, beside the generic image that `run`,
`eval` and `serve` use (every operator, every variant).

    program_image_elf(program, layers, board) -> Path of tinyrps_fw.elf

The selection is tinyrps.deploy.selection's, as a deploy library's: the program's operators and those
their files need (select_operators), and per operator's ops/ file the variants the program's calls
bound on the generic image (image_selection, from the measured layers). The image's sources are the
firmware's with
- ops/operator_selection.h naming those operators and variants (of every ISA the build compiles,
  plain C included): the table, its declarations, the kernel parameters and the variant lists follow
  from it, and the linker (--gc-sections) drops the kernels no kept row uses;
- the ops/ files of the other operators left out.
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

from ..infra.errors import UserError


DELEGATE_OPERATORS = ("cortex_m::quantize_per_tensor", "cortex_m::dequantize_per_tensor")


def image_tree(fw: Path, operator_names: list, layers: list, isa_kernels: str) -> dict:
    """{path relative to fw: text} of the program's firmware image sources (see the module docstring)."""
    from ..firmware.sources import source_files
    from .selection import (SELECTION_HEADER, image_selection, operator_files, runtime_rows, select_operators,
                            selection_header)
    src = fw / "src"
    # the image's loader keeps the Ethos-U delegate (ethos_u_delegate.c), whose CPU part names these two
    # operators: a program with integer inputs and outputs has neither of its own
    names = set(operator_names) | set(DELEGATE_OPERATORS)
    symbols = select_operators([row.qualified for row in runtime_rows(src) if row.name in names], src, isa_kernels)
    files = operator_files(src)
    left_out = {rel for symbol, rel in files.items() if symbol not in symbols}
    tree = {}
    for path in source_files(fw):
        rel = path.relative_to(fw).as_posix()
        in_src = rel[len("src/"):]
        if in_src in left_out:
            continue                              # an operator the program does not use
        tree[rel] = path.read_text()
    tree[f"src/{SELECTION_HEADER}"] = selection_header(image_selection(layers, symbols, src, isa_kernels))
    return tree


def program_image_elf(program: bytes, layers: list, board: str, core: str = None) -> Path:
    """The firmware ELF of `board` built for this program's operators and the variants `layers` (the generic
    ISA image's measured calls) bound; with `core`, of that core's own build if it has one on the board."""
    from ..firmware.boards import firmware_build, get_board, kernels_name
    from ..firmware.build import build_firmware
    from ..firmware.qemu import FIRMWARE_EXECUTABLE
    from ..firmware.sources import firmware_dir
    from ..hardware.pte import program_contents
    spec = get_board(board)
    operators = program_contents(program).operators
    if not layers:
        raise UserError("the program ran no kernel call on the firmware: nothing to build its image of")
    tree = image_tree(firmware_dir(), list(operators), layers, kernels_name(spec, "isa", core))
    return build_firmware(firmware_build(board, "isa", core), limits=program_limits(program),
                          image=tree).tool(FIRMWARE_EXECUTABLE)


def program_limits(program: bytes) -> dict:
    """The runtime's TRT_MAX_* limits set to this program's counts (at least 1 each), from the flatbuffer as
    the host build of the runtime reads it (`tinyrps-native dump`, which checks no limit)."""
    import json
    import subprocess
    from ..firmware.build import build_firmware
    from ..infra.tempdirs import temp_dir
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
