"""Footprint and speed of a Cortex-M program on the firmware of an emulated board (QEMU).

    measure_firmware(pte, board) -> {"board", "core", "kernels", "flash_bytes", "ram_bytes",
                                     "arena_bytes", "instructions_per_inference",
                                     "instructions_per_inference_plain_c", "instructions_per_mac",
                                     "layers", ...}

- flash_bytes: what a board stores for this program: the code, read-only data and .data
  initialisers (from the ELF's sections) of the program's own firmware image plus the .pte
  itself. That image ("image": "program") is the board's firmware built with only the
  program's operators and the kernel variants its calls bind on the generic image
  (tinyrps.deploy.firmware_image): what a product made for this program flashes. It runs the
  program once more, and must give the same outputs, kernels and instructions per call as the
  generic image, or this raises. The generic image (every operator and variant: what `run`,
  `eval` and `serve` boot) is measured beside it, its footprint under "generic_image". The RAM
  figures below are the program image's too.
- ram_bytes: .data + .bss + stack (+ the 16-byte boot descriptor), plus the runtime's
  arena at the size this program needs (trt_arena_needed: its memory plan, the kernels'
  workspace and working memory). The firmware gives the arena all the RAM left after the
  rest (the linker's .arena section, up to the end of the port's RAM region), so a
  larger program needs no other build: `ram_bytes_reserved` is that whole RAM.
- arena_parts_bytes: arena_bytes in its three parts (trt_arena_layout): {"planned": the
  memory plan's buffers, "workspace": what the kernel calls' own (load-time precomputations,
  kept raw int8 values) add above the rest, "working": what their working memory adds above
  the plan}; the runtime places both by lifetime in the plan's free bytes first.
- largest_live_set_bytes (and _call): the memory plan's largest live set, read from the program
  (tinyrps.measure.live_set): the floor of an arena that keeps each call's tensors whole;
  arena_gap_bytes: arena_bytes less it (the plan's fragmentation and the kernels' workspace and
  working memory that find no room in the plan's free bytes). In the quick measurement too.
- instructions_per_inference: the firmware's own count around trt_run, under
  QEMU's -icount shift=0 (1 instruction = 1 ns, counted by SysTick: exact to one
  tick, 1e9 / SysTick Hz instructions). Run twice on the same images; the counts must
  be identical, or this raises. QEMU counts instructions, not cycles.
- instructions_per_inference_plain_c: the same program and images on the same board,
  with the firmware built with the portable plain-C kernels (TINYRPS_KERNELS=c),
  measured in the same call.
- layers: per kernel call of the program, `{op, kernels, instructions, macs}` (the ISA
  build; `instructions_plain_c` beside it), from the runtime's own per-call counter; the
  MACs are the runtime's count for the program, not a formula of the model, and `kernels`
  the variant the runtime bound for that call ("mve", "dsp" or "c").
- boot_instructions: from reset to ready (startup, the board's set-up, the program found
  and loaded: what the firmware does before it can serve or run a batch), with
  load_instructions, trt_load's share of it. The boot does not hash the program;
  sha256_instructions is what the hash costs when the host asks for it (one of the runs
  here does, and the hash must be the program's, or this raises). Both boots must count
  the same, or this raises.
- kernels: the variant the heavy layers (convolutions, linear layers, pools) bound in the
  ISA build, as the runtime reports it. It must be the one the build was made for (the
  core's fastest), and plain C everywhere in the plain-C build; anything else raises.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import struct
from pathlib import Path
from typing import Optional

import numpy as np

from ..infra.errors import UserError
from ..firmware.boards import DEFAULT_BOARD, KERNEL_SET_NAMES, Board, get_board, guest_core, kernels_name
from ..hardware.cores import display_name, find_core
from ..infra.tempdirs import temp_dir

# ELF32 section header flags and types
SHF_ALLOC = 0x2
SHT_NOBITS = 8
# The firmware's RAM sections (firmware/board/common/sections.ld) besides the arena, which takes the rest.
RAM_SECTIONS = (".boot_args", ".data", ".bss", ".stack")
ARENA_SECTION = ".arena"

# One image per class, rendered with this seed: fixed inputs for the instruction count.
MEASURE_SEED = 2024

# Kernel calls that do the model's work: each has a variant for every ISA, so the ISA build
# must bind the core's fastest for them (quantize, dequantize and copies have fewer variants).
# Average pooling is not one of them: it computes in float32, as the reference does, and the DSP
# extension has no floating point, so on the DSP cores it runs its plain-C kernel (on the FPU).
HEAVY_OPERATORS = ("conv", "linear", "max_pool", "batch_matmul")


def measure_program(pte, described, quick: bool = False) -> dict:
    """The measure stage's `firmware` figures of a Cortex-M program: measured on the emulated board
    of the core its descriptor names. `quick` (for a search): the instruction count only."""
    from ..firmware.boards import board_for_core
    core = described.info.core
    board = board_for_core(core)
    samples = measurement_inputs(described)
    figures = (quick_count(pte, board.name, samples, core=core) if quick
               else measure_firmware(pte, board.name, samples, core=core))
    figures.update(live_set_figures(Path(pte).read_bytes(), figures["arena_bytes"]))
    if quick:
        return figures
    note = hosted_note(core)
    if note:
        figures["note"] = note
    return figures


def live_set_figures(program: bytes, arena_bytes: int) -> dict:
    """The memory plan's largest live set (tinyrps.measure.live_set) beside the arena, and the gap between
    them: what the arena holds above the floor of a plan that keeps each call's tensors whole."""
    from .live_set import largest_live_set
    live = largest_live_set(program)
    return {"largest_live_set_bytes": live["bytes"], "largest_live_set_call": live["call"],
            "arena_gap_bytes": arena_bytes - live["bytes"]}


def hosted_note(core: str) -> Optional[str]:
    """Where a core QEMU has no machine for ran (tinyrps.hardware.cores: its host), or None."""
    record = find_core(core)
    if record is None or record.host is None:
        return None
    host = display_name(record.host)
    if record.own_build:
        return (f"QEMU 7.2 has no {record.display} machine: its own build (-mcpu={core}) ran on the {host} of the "
                f"{record.board}, whose instruction set contains the {record.display}'s; the counts are of that "
                "build's instructions")
    return (f"QEMU 7.2 has no {record.display} machine: measured on the {host} of the {record.board} with the "
            f"{host}'s firmware (the same instruction set); the counts are that core's")


def quick_count(pte, board: str, samples=None, core: str = None) -> dict:
    """Instructions per inference with the fastest kernels, from one QEMU run: what a search needs."""
    from ..firmware.qemu import firmware_elf, run_batch
    spec = get_board(board)
    samples = measurement_images() if samples is None else samples
    result = run_batch(Path(pte), samples, elf=firmware_elf(board, "isa", core), board=board)
    return {"board": spec.name, "core": built_core(spec, core), "kernels": kernels_name(spec, "isa", core),
            "instructions_per_inference": int(np.median(result.instructions)), "arena_bytes": result.arena_needed,
            "quick": True}


def built_core(board: Board, core: str = None) -> str:
    """The core the firmware that ran was built for: a core's own build on the board, else the board's."""
    guest = guest_core(board.name, core)
    return guest.name if guest else board.core


def measure_firmware(pte, board: str = DEFAULT_BOARD, samples=None, image: str = "program",
                     core: str = None) -> dict:
    """Measure a Cortex-M .pte (path or bytes) on `board`'s firmware; see the module docstring.
    samples: the inputs to count on (default: the RPS measurement images). image: "program" (the
    footprint of the program's own firmware image) or "generic" (of the image with every operator).
    core: the program's core, for a core with a build of its own on the board (the Cortex-M0 on the
    mps2-an385): that build runs it."""
    from ..firmware.qemu import firmware_elf, run_batch

    if image not in IMAGES:
        raise UserError(f"unknown firmware image '{image}'; valid: {', '.join(IMAGES)}")
    spec = get_board(board)
    with temp_dir("measure") as work:
        pte_path = _as_file(pte, Path(work))
        elf, elf_c = firmware_elf(board, "isa", core), firmware_elf(board, "c", core)
        images = measurement_images() if samples is None else samples
        # three QEMU runs, two at a time (QEMU is single-threaded; the machine has two cores); the second
        # also hashes the program, after its boot: the identity check, and the hash's own cost
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            runs = [pool.submit(run_batch, pte_path, images, elf=e, board=board, sha256=hashed)
                    for e, hashed in ((elf, False), (elf, True), (elf_c, False))]
            first, second, plain_c = (r.result() for r in runs)
        program_sha256 = hashlib.sha256(pte_path.read_bytes()).hexdigest()
        generic = memory_footprint(elf_sections(elf))
        flashed, own = elf, first
        if image == "program":
            from ..deploy.firmware_image import program_image_elf
            flashed = program_image_elf(pte_path.read_bytes(), first.layers, board, core)
            own = run_batch(pte_path, images, elf=flashed, board=board)
            same_run(first, own, board)
        sections = elf_sections(flashed)
        program_bytes = pte_path.stat().st_size
    check_runs(first, second, plain_c, program_sha256, board)
    footprint = memory_footprint(sections)
    for name, run, measured in (("generic", first, generic), (image, own, footprint)):
        if measured["arena"] != run.arena_capacity:
            raise UserError(f"the {board} firmware's {name} image reports an arena of {run.arena_capacity} bytes, "
                            f"its ELF's {ARENA_SECTION} section is {measured['arena']} bytes: rebuild the firmware")
    return firmware_record(spec, image, (first, second, plain_c, own), footprint, generic, program_bytes, core)


def check_runs(first, second, plain_c, program_sha256: str, board: str) -> None:
    """The three runs of a measurement agree as they must: the same counts twice (QEMU's -icount), the
    program the firmware hashed is the one measured, and the plain-C kernels give the ISA's outputs."""
    if not np.array_equal(first.instructions, second.instructions) or \
            (first.boot_instructions, first.load_instructions) != (second.boot_instructions, second.load_instructions):
        raise UserError("instruction counts differ between two identical runs "
                        f"({first.instructions.tolist()} vs {second.instructions.tolist()} per inference, "
                        f"{first.boot_instructions} vs {second.boot_instructions} to boot); "
                        "QEMU must run with -icount shift=0")
    if second.model_sha256 != program_sha256:
        raise UserError(f"the {board} firmware hashed another program than the one measured "
                        f"(SHA-256 {second.model_sha256[:12]}... vs {program_sha256[:12]}...): "
                        "the model slot was not loaded correctly")
    if not same_outputs(first, plain_c):
        raise UserError(f"the ISA and the plain-C kernels of the {board} firmware disagree on the same images: "
                        "a kernel is wrong")


def firmware_record(spec, image: str, runs: tuple, footprint: dict, generic: dict, program_bytes: int,
                    core: str = None) -> dict:
    """The measurement's figures from its runs (the ISA build's, hashed, plain C's, the flashed image's)
    and the footprints of the flashed and the generic image; `core`: the program's core (built_core)."""
    first, second, plain_c, own = runs
    instructions = int(np.median(first.instructions))
    instructions_c = int(np.median(plain_c.instructions))
    macs = sum(layer["macs"] for layer in first.layers)
    ram_needed = footprint["ram_static"] + own.arena_needed
    return {
        "board": spec.name,
        "core": built_core(spec, core),
        "kernels": bound_kernels(spec, first.layers, plain_c.layers, core),
        "image": image,
        "image_note": IMAGES[image],
        "flash_bytes": footprint["flash_image"] + program_bytes,
        "ram_bytes": ram_needed,
        "arena_bytes": own.arena_needed,
        "arena_parts_bytes": own.arena_parts,
        "instructions_per_inference": instructions,
        "instructions_per_inference_plain_c": instructions_c,
        "instructions_per_mac": round(instructions / macs, 3) if macs else None,
        "instructions_per_mac_plain_c": round(instructions_c / macs, 3) if macs else None,
        "macs": macs,
        "layers": merge_layers(first.layers, plain_c.layers),
        "instructions_range": [int(first.instructions.min()), int(first.instructions.max())],
        "deterministic": True,
        "code_bytes": footprint["code"],
        "rodata_bytes": footprint["rodata"],
        "data_bytes": footprint["data"],
        "bss_bytes": footprint["bss"],
        "stack_bytes": footprint["stack"],
        "stack_used_bytes": own.stack_used,
        "program_bytes": program_bytes,
        "arena_reserved_bytes": own.arena_capacity,
        "ram_bytes_reserved": footprint["ram_reserved"],
        "ram_static_bytes": footprint["ram_static"],
        "boot_instructions": first.boot_instructions,
        "load_instructions": first.load_instructions,
        "sha256_instructions": second.sha256_instructions,
        "generic_image": {"flash_bytes": generic["flash_image"] + program_bytes, "code_bytes": generic["code"],
                          "rodata_bytes": generic["rodata"], "data_bytes": generic["data"],
                          "ram_bytes": generic["ram_static"] + first.arena_needed},
        "emulator": f"qemu-system-arm -M {spec.machine} ({emulated_core(spec, core)}), -icount shift=0: counts "
                    "instructions, not cycles",
    }


# The firmware image whose footprint a measurement reports.
IMAGES = {
    "program": "the firmware built with only this program's operators and the kernel variants its calls bind "
               "(what a product made for it flashes); `run`, `eval` and `serve` boot the generic image",
    "generic": "the generic firmware with every operator and kernel variant (what `run`, `eval` and `serve` boot)",
}


# What a measurement's figures are of besides the firmware's sources: raised when the measurement changes
# what it reports (2: the footprint of the program's own image; 3: boot_instructions from reset to ready,
# without the program's hash, which sha256_instructions counts apart), so that older figures are taken again.
FIGURES_OF = "3: the boot from reset, without the hash (counted apart)"


def fingerprint() -> str:
    """What the measure stage records with the firmware figures: the firmware's sources and FIGURES_OF."""
    import hashlib
    from ..firmware.build import sources_fingerprint
    return hashlib.sha256(f"{sources_fingerprint()}\0{FIGURES_OF}".encode()).hexdigest()


def same_outputs(a, b) -> bool:
    """Two runs gave the same raw int8 values of every output, or, for an output that has none (an integer
    output, or one no dequantize wrote), the same output."""
    if len(a.outputs) != len(b.outputs):
        return False
    for k in range(len(a.outputs)):
        x, y = a.outputs_int8[k], b.outputs_int8[k]
        if (x is None) != (y is None):
            return False
        if x is None:
            x, y = a.outputs[k], b.outputs[k]
        if not np.array_equal(x, y):
            return False
    return True


def same_run(generic, own, board: str) -> None:
    """The program's own image must run the program as the generic image does: the same outputs, and per call
    the same operator, kernels, MACs and instructions (the variant's place in its list differs: the lists
    are shorter); anything else is a bug in the selection."""
    def calls(run):
        return [(layer["op"], layer["kernels"], layer["macs"], layer["instructions"]) for layer in run.layers]
    if (not same_outputs(generic, own) or not np.array_equal(generic.instructions, own.instructions)
            or calls(generic) != calls(own) or generic.arena_needed != own.arena_needed):
        raise UserError(f"the program's own firmware image of {board} runs it otherwise than the generic image "
                        f"({own.instructions.tolist()} vs {generic.instructions.tolist()} instructions): the "
                        "selection of its operators and variants is wrong")


def merge_layers(isa_layers: list, plain_c: list) -> list:
    """Per kernel call: {op, kernels, variant, instructions, macs} of the ISA build (variant: the bound
    variant's place in its operator's list as that firmware compiles it), with the plain-C build's count
    beside it."""
    if [layer["op"] for layer in isa_layers] != [layer["op"] for layer in plain_c]:
        raise UserError("the ISA and the plain-C firmware ran different kernel chains; rebuild the firmware")
    return [{"op": f["op"], "kernels": f["kernels"], "variant": f["variant"], "instructions": f["instructions"],
             "macs": f["macs"],
             "instructions_plain_c": c["instructions"]} for f, c in zip(isa_layers, plain_c)]


def is_heavy(op: str) -> bool:
    """A Cortex-M operator with ISA kernels of its own (the portable aten::linear, mm and bmm have plain C only)."""
    namespace, _, name = op.rpartition("::")
    return namespace == "cortex_m" and any(heavy in name for heavy in HEAVY_OPERATORS)


def emulated_core(board: Board, core: str = None) -> str:
    """"cortex-m4", or "a cortex-m0 build on its cortex-m3" for a core's own build on another core's board."""
    guest = guest_core(board.name, core)
    return f"a {guest.name} build on its {board.core}" if guest else board.core


def bound_kernels(board: Board, isa_layers: list, plain_c: list, core: str = None) -> str:
    """The variant the runtime bound for the heavy layers of the ISA build ("mve", "dsp" or "c").

    It must be the one the build was made for, and the plain-C build must bind "c" for every call:
    anything else is a bug in the variant choice or in the build's flags, refused naming the layer."""
    check_variants(board, "isa", [layer for layer in isa_layers if is_heavy(layer["op"])],
                   kernels_name(board, "isa", core))
    check_variants(board, "c", plain_c, "c")
    heavy = {layer["kernels"] for layer in isa_layers if is_heavy(layer["op"])}
    if not heavy:
        raise UserError(f"the program has no convolution, linear or pooling layer to measure on {board.name}")
    return heavy.pop()


def check_variants(board: Board, build: str, layers: list, expected: str) -> None:
    for layer in layers:
        if layer["kernels"] != expected:
            raise UserError(f"the {KERNEL_SET_NAMES[build]} firmware of {board.name} ran {layer['op']} with the "
                            f"'{layer['kernels']}' kernels, not '{expected}': the runtime's variant choice and the "
                            "build disagree")


def measurement_images() -> np.ndarray:
    from ..network.letters import render
    return render(np.array([0, 1, 2]), np.random.default_rng(MEASURE_SEED))


# Inputs of a program that is not an RPS classifier: this many seeded samples per measurement.
MEASURE_SAMPLES = 3


def measurement_inputs(described):
    """What the instruction count runs on: the RPS measurement images for the RPS classifiers (their
    input is a uint8 image / 255), else MEASURE_SAMPLES seeded samples of each declared input
    (floats standard normal, integers uniform over the dtype's range)."""
    from ..network.labels import RPS_INPUT_CONVENTION
    if [t.convention for t in described.inputs] == [RPS_INPUT_CONVENTION]:
        return measurement_images()
    rng = np.random.default_rng(MEASURE_SEED)
    samples = []
    for t in described.inputs:
        dtype = np.dtype(t.dtype)
        if dtype.kind == "f":
            samples.append(rng.standard_normal((MEASURE_SAMPLES, *t.shape)).astype(dtype))
        else:
            info = np.iinfo(dtype)
            samples.append(rng.integers(info.min, int(info.max) + 1, (MEASURE_SAMPLES, *t.shape)).astype(dtype))
    return samples


def _as_file(pte, work: Path) -> Path:
    if isinstance(pte, (bytes, bytearray)):
        path = work / "program.pte"
        path.write_bytes(pte)
        return path
    path = Path(pte)
    if not path.is_file():
        raise UserError(f"model file not found: {path}")
    return path


def memory_footprint(sections: dict) -> dict:
    """Bytes per kind from the firmware's sections: {name: (address, size, flags, type)}."""
    def size_of(*names):
        return sum(sections[n][1] for n in names if n in sections)

    stored = sum(size for addr, size, flags, stype in sections.values()
                 if flags & SHF_ALLOC and stype != SHT_NOBITS)
    return {
        "code": size_of(".vectors", ".text", ".ARM.exidx", ".init_array"),
        "rodata": size_of(".rodata"),
        "data": size_of(".data"),
        "bss": size_of(".bss"),
        "stack": size_of(".stack"),
        "flash_image": stored,                      # code + rodata + .data initialisers
        "ram_static": size_of(*RAM_SECTIONS),       # boot descriptor + data + bss + stack
        "arena": size_of(ARENA_SECTION),            # the rest of RAM
        "ram_reserved": size_of(*RAM_SECTIONS, ARENA_SECTION),
    }


def elf_sections(path) -> dict:
    """Sections of a little-endian ELF32 file: {name: (address, size, flags, type)}."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        raise UserError(f"{path} is not a little-endian 32-bit ELF file: rebuild the firmware")
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    headers = [struct.unpack_from("<IIIIIIIIII", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]

    def name(offset):
        end = data.index(b"\0", names_offset + offset)
        return data[names_offset + offset:end].decode()

    return {name(h[0]): (h[3], h[5], h[2], h[1]) for h in headers[1:]}
