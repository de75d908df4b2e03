"""The code size of a library: its example linked for the core by arm-none-eabi-gcc at each optimisation,
split by origin from the linker's map (the library, the C library and libgcc, the example, the program)."""
from __future__ import annotations

import concurrent.futures
import json
import re
import shutil
import subprocess
from pathlib import Path

from ..hardware.cores import get_core
from ..infra.tempdirs import temp_dir
from .library_files import MANIFEST

ARM_GCC = "arm-none-eabi-gcc"
SIZE_OPTIMISATIONS = ("-Os", "-O2", "-O3")


def code_sizes(folder: Path, spec) -> dict:
    """{-Os: {...}, -O3: {...}} of the library linked into its example for the core, or {"missing": why}."""
    if shutil.which(ARM_GCC) is None:
        from ..firmware.build import APT_ARM
        return {"missing": f"{ARM_GCC} is not installed ({APT_ARM})"}
    return {opt: example_code_size(folder, spec.name, spec.facts.core, opt) for opt in SIZE_OPTIMISATIONS}


def cpu_flags(core: str) -> list:
    """-mcpu and friends for a core, as the firmware's toolchain file has them."""
    cpu = ["-march=armv8.1-m.main+mve.fp+fp.dp"] if core == "cortex-m85" else [f"-mcpu={core}"]
    return cpu + ["-mthumb", f"-mfloat-abi={'hard' if get_core(core).fpu else 'soft'}"]


def example_code_size(folder: Path, name: str, core: str, opt: str) -> dict:
    """Bytes of code and read-only data of example/main.c linked with the library for `core` (arm-none-eabi-gcc
    `opt`, -ffunction-sections -fdata-sections, --gc-sections), without the program's bytes: the library's
    objects, the libc and libgcc functions they pull in, and the example's own."""
    manifest = json.loads((folder / MANIFEST).read_text())
    flags = [*cpu_flags(core), opt, "-ffunction-sections", "-fdata-sections", *manifest["build"]["cflags"],
             f"-I{folder / 'include'}"]
    with temp_dir("size") as work:
        work = Path(work)
        stub = work / "print_stub.c"
        stub.write_text("volatile char example_sink;\n"
                        "void example_print(const char *line) { while (*line) example_sink = *line++; }\n")
        objects = {"example": [], "library": []}
        units = [("example", folder / "example" / "main.c"), ("example", stub)]
        units += [("library", folder / s) for s in manifest["build"]["sources"]]
        jobs = []
        for i, (part, source) in enumerate(units):
            obj = work / part / f"{i}_{source.stem}.o"
            obj.parent.mkdir(exist_ok=True)
            jobs.append([*flags, "-c", str(source), "-o", str(obj)])
            objects[part].append(str(obj))
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:   # two cores
            list(pool.map(lambda job: _arm_gcc(job, core), jobs))
        map_file = work / "example.map"
        _arm_gcc([*cpu_flags(core), *objects["example"], *objects["library"], "-nostartfiles", "--specs=nano.specs",
                  "--specs=nosys.specs", "-Wl,--gc-sections", "-Wl,-e,main", f"-Wl,-Map={map_file}",
                  "-o", str(work / "example.elf"), "-lm"], core)   # libm: the portable float operators
        sizes = map_section_sizes(map_file.read_text(), work, program_section=f".rodata.{name}_program")
    return {"compiler": f"{ARM_GCC} {_compiler_version()}", "flags": " ".join([*cpu_flags(core), opt]), **sizes}


def _arm_gcc(args: list, core: str) -> None:
    result = subprocess.run([ARM_GCC, *args], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"the library does not build for the {core}: {result.stderr.strip()[-2000:]}")


def _compiler_version() -> str:
    result = subprocess.run([ARM_GCC, "-dumpversion"], capture_output=True, text=True)
    return result.stdout.strip()


_MAP_ENTRY = re.compile(r"^ (\.(?:text|rodata|data|bss)[^\s]*)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(.+)$", re.M)


def map_section_sizes(map_text: str, work: Path, program_section: str) -> dict:
    """Code and read-only data the link kept, by origin (a GNU ld map file): the objects under work/library,
    under work/example, and the C library's and libgcc's archive members; the program's own section apart."""
    memory_map = map_text[map_text.index("Linker script and memory map"):]
    memory_map = re.sub(r"^ (\.\S+)\n\s+", r" \1 ", memory_map, flags=re.M)   # entries split over two lines
    totals = {"library": 0, "libc": 0, "example": 0, "program": 0, "library_text": 0, "library_ram": 0}
    for section, _address, size, origin in _MAP_ENTRY.findall(memory_map):
        size, origin = int(size, 16), origin.strip()
        if section.startswith((".data", ".bss")):
            if origin.startswith(str(work / "library")):
                totals["library_ram"] += size
        elif section == program_section:
            totals["program"] += size
        elif origin.startswith(str(work / "library")):
            totals["library"] += size
            totals["library_text"] += size if section.startswith(".text") else 0
        elif origin.startswith(str(work / "example")):
            totals["example"] += size
        else:
            totals["libc"] += size
    return {"library_bytes": totals["library"], "library_text_bytes": totals["library_text"],
            "library_rodata_bytes": totals["library"] - totals["library_text"], "libc_bytes": totals["libc"],
            "example_bytes": totals["example"], "program_bytes": totals["program"],
            "library_and_libc_bytes": totals["library"] + totals["libc"],
            "library_static_ram_bytes": totals["library_ram"]}
