"""Footprint and speed of a Cortex-M program on the firmware (Cortex-M55, MPS3 AN547 in QEMU).

    measure_firmware(pte) -> {"flash_bytes", "ram_bytes", "arena_bytes",
                              "instructions_per_inference", "instructions_per_mac", ...}

- flash_bytes: what a board stores: the firmware's code, read-only data and .data
  initialisers (from the ELF's sections) plus the .pte itself.
- ram_bytes: .data + .bss + stack, with the runtime's arena counted at the size the
  program's memory plan needs (the firmware reserves a fixed, larger arena:
  `ram_bytes_reserved` is the RAM the built image actually takes).
- instructions_per_inference: the firmware's own count around trt_infer, under
  QEMU's -icount shift=0 (1 instruction = 1 ns, counted by SysTick: exact to
  one tick, 31.25 instructions). Run twice on the same images; the counts must
  be identical, or this raises.
"""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np

from ..errors import UserError

# ELF32 section header flags and types
SHF_ALLOC = 0x2
SHT_NOBITS = 8
DTCM_BASE, DTCM_END = 0x20000000, 0x20080000
ITCM_END = 0x00080000

# One image per class, rendered with this seed: fixed inputs for the instruction count.
MEASURE_SEED = 2024


def measure_firmware(pte, macs: int = None) -> dict:
    """Measure a Cortex-M .pte (path or bytes) on the AN547 firmware; see the module docstring.
    `macs`: the network's multiply-accumulates (default: the default architecture's)."""
    from ..model import count_macs
    from .qemu import firmware_elf, run_batch

    with tempfile.TemporaryDirectory(prefix="tinyrps-measure.") as work:
        pte_path = _as_file(pte, Path(work))
        elf = firmware_elf()
        sections = elf_sections(elf)
        images = measurement_images()
        first = run_batch(pte_path, images, elf=elf)
        second = run_batch(pte_path, images, elf=elf)
        program_bytes = pte_path.stat().st_size
    if not np.array_equal(first.instructions, second.instructions):
        raise UserError("instruction counts differ between two identical runs "
                        f"({first.instructions.tolist()} vs {second.instructions.tolist()}); "
                        "QEMU must run with -icount shift=0")
    footprint = memory_footprint(sections)
    instructions = int(np.median(first.instructions))
    macs = macs or count_macs()
    ram_needed = footprint["ram_reserved"] - first.arena_capacity + first.arena_needed
    return {
        "flash_bytes": footprint["flash_image"] + program_bytes,
        "ram_bytes": ram_needed,
        "arena_bytes": first.arena_needed,
        "instructions_per_inference": instructions,
        "instructions_per_mac": round(instructions / macs, 3),
        "macs": macs,
        "instructions_range": [int(first.instructions.min()), int(first.instructions.max())],
        "deterministic": True,
        "code_bytes": footprint["code"],
        "rodata_bytes": footprint["rodata"],
        "data_bytes": footprint["data"],
        "bss_bytes": footprint["bss"],
        "stack_bytes": footprint["stack"],
        "stack_used_bytes": first.stack_used,
        "program_bytes": program_bytes,
        "arena_reserved_bytes": first.arena_capacity,
        "ram_bytes_reserved": footprint["ram_reserved"],
        "boot_instructions": first.boot_instructions,
        "emulator": "qemu-system-arm -M mps3-an547 (Cortex-M55), -icount shift=0",
    }


def measurement_images() -> np.ndarray:
    from ..data import render
    return render(np.array([0, 1, 2]), np.random.default_rng(MEASURE_SEED))


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

    stored = sum(size for addr, size, flags, kind in sections.values()
                 if flags & SHF_ALLOC and kind != SHT_NOBITS)
    in_ram = sum(size for addr, size, flags, kind in sections.values()
                 if flags & SHF_ALLOC and DTCM_BASE <= addr < DTCM_END)
    return {
        "code": size_of(".vectors", ".text", ".ARM.exidx", ".init_array"),
        "rodata": size_of(".rodata"),
        "data": size_of(".data"),
        "bss": size_of(".bss"),
        "stack": size_of(".stack"),
        "flash_image": stored,          # code + rodata + .data initialisers
        "ram_reserved": in_ram,         # boot descriptor + data + bss + stack
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
