"""Configure and build firmware/ with CMake, once per source change.

Builds: "native" (host gcc: the runtime library, `tinyrps-native` and the mutation
sweep `tinyrps-mutate`), "native-asan" (the same with AddressSanitizer and UBSan),
"fuzz" (clang: the same, plus the libFuzzer targets of firmware/fuzz/),
and per board port (firmware/board/<board>, tinyrps.firmware.boards) two
arm-none-eabi-gcc builds of the firmware image `tinyrps_fw.elf`: "<board>" with
the fastest kernels the core's ISA allows (TINYRPS_KERNELS=auto) and "<board>-c"
with the portable plain-C kernels (TINYRPS_KERNELS=c), e.g. "mps2-an505" and
"mps2-an505-c"; "mps3-an547-dsp", the Cortex-M55 without MVE (-mcpu=cortex-m55+nomve),
which binds the DSP kernels on that board; and "<board>-<core>" for a core with a build of its own
on another core's board (tinyrps.hardware.cores), e.g. "mps2-an385-cortex-m0". A core of plain C
only (no DSP) has one build: its "isa" build is its "c" one.

Builds never go into the source tree (or an installed package): each one builds in
the user's cache, `$XDG_CACHE_HOME/tinyrps/firmware/<build>-<key>/` (default
`~/.cache/...`), where the key is a hash of every firmware source, the build settings
and the compiler's version. An unchanged tree costs one hash and no CMake call; a
changed one gets a fresh folder, and the oldest folders of a build are pruned.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..infra.errors import UserError
from .c_facts import limit_names
from .sources import firmware_dir, source_files

APT_HOST = "apt-get install --no-install-recommends cmake gcc libc6-dev"
APT_ARM = "apt-get install --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"
APT_FUZZ = "apt-get install --no-install-recommends cmake clang-16 libclang-rt-16-dev"
TOOLCHAIN_FILE = Path("cmake") / "arm-none-eabi.cmake"


@dataclass(frozen=True)
class BuildSpec:
    cmake_args: tuple
    compilers: tuple                 # executables that must be on PATH
    install_hint: str
    cross: bool = False              # built with the Arm toolchain file


def _board_builds() -> dict:
    """Per board: the fastest kernels its core allows, plain C, its reduced-ISA builds, and the builds
    of the cores it runs with firmware of their own (one build where the kernels are plain C only)."""
    from ..hardware.cores import get_core
    from .boards import BOARDS, firmware_build, guest_cores
    specs = {}
    for board in BOARDS.values():
        wanted = [("isa", board.core, "auto", None), ("c", board.core, "c", None)]
        wanted += [(name, cpu, "auto", None) for name, cpu in board.reduced_isa]
        wanted += [(kernels, guest.name, selection, guest.name) for guest in guest_cores(board.name)
                   for kernels, selection in (("isa", "auto"), ("c", "c"))]
        for kernels, cpu, selection, guest in wanted:
            build = firmware_build(board.name, kernels, guest)
            if build in specs:
                continue                  # plain C only: the "c" build is the "isa" one
            args = ("-DCMAKE_BUILD_TYPE=Release", f"-DTINYRPS_BOARD={board.name}", f"-DTINYRPS_CPU={cpu}",
                    f"-DTINYRPS_KERNELS={selection}")
            if guest:
                args += ("-DTINYRPS_GUEST_CORE=ON",)
            if not get_core(cpu.split("+")[0]).fpu:
                args += ("-DTINYRPS_FLOAT_ABI=soft",)
            specs[build] = BuildSpec(args, ("arm-none-eabi-gcc",), APT_ARM, cross=True)
    return specs


BUILDS = {
    "native": BuildSpec(("-DCMAKE_BUILD_TYPE=Release",), ("gcc",), APT_HOST),
    "native-asan": BuildSpec(("-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DTRT_SANITIZE=ON"), ("gcc",), APT_HOST),
    **_board_builds(),
    # the libFuzzer targets of firmware/fuzz/ (with sanitized host tools beside them)
    "fuzz": BuildSpec(("-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DCMAKE_C_COMPILER=clang-16", "-DTRT_SANITIZE=ON",
                  "-DTRT_FUZZ=ON"), ("clang-16",), APT_FUZZ),
}


@dataclass
class FirmwareBuild:
    name: str
    build_dir: Path
    executables: dict = field(default_factory=dict)   # file name -> path of every built executable

    def tool(self, name: str) -> Path:
        if name not in self.executables:
            raise UserError(f"the {self.name} firmware build has no '{name}' (built: "
                            f"{', '.join(sorted(self.executables)) or 'nothing'}); check firmware/CMakeLists.txt")
        return self.executables[name]


def build_firmware(build: str = "native", limits: dict = None, image: dict = None) -> FirmwareBuild:
    """Build (if sources changed) and return the executables of one firmware build.

    limits: the runtime's table limits to build with instead of its header's defaults, e.g.
    {"TRT_MAX_KERNEL_CALLS": 128} (a build of its own, beside the default one).
    image: sources of their own instead of the firmware tree, {path relative to firmware/: text} of
    every file (a program's own image, tinyrps.deploy.firmware_image): built from a copy of them in
    the build folder, `<build>-program-<key>`, keyed by them."""
    if build not in BUILDS:
        raise UserError(f"unknown firmware build '{build}'; valid: {', '.join(BUILDS)}")
    spec = BUILDS[build]
    source = firmware_dir()
    _check_tools(build, spec)
    args = list(spec.cmake_args)
    known = limit_names() if limits else ()
    for name, value in sorted((limits or {}).items()):
        if name not in known or not isinstance(value, int) or value < 1:
            raise UserError(f"a runtime limit is one of {', '.join(known)} with a positive int value, not "
                            f"{name}={value!r}")
        args.append(f"-D{name}={value}")
    if spec.cross:
        toolchain = source / TOOLCHAIN_FILE
        if not toolchain.is_file():
            raise UserError(f"the Cortex-M toolchain file {toolchain} is missing; the {build} firmware cannot be built")
        args.append(f"-DCMAKE_TOOLCHAIN_FILE={toolchain}")
    folder_prefix = build if image is None else f"{build}-{IMAGE_FOLDER}"
    if image is None:
        stamp = _stamp(source, args, spec.compilers)
    else:
        stamp = _stamp_files(sorted((rel, text.encode()) for rel, text in image.items()), args, spec.compilers)
    build_dir = build_root() / f"{folder_prefix}-{stamp[:16]}"
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # one build at a time per folder, across processes
        stamp_file = build_dir / ".source-stamp"
        if not (stamp_file.is_file() and stamp_file.read_text() == stamp):
            (build_dir / "build.log").unlink(missing_ok=True)
            if image is not None:
                source = _write_tree(build_dir / IMAGE_FOLDER, image)
            _run_cmake(build, ["cmake", "-S", str(source), "-B", str(build_dir), *args], build_dir)
            _run_cmake(build, ["cmake", "--build", str(build_dir), "-j", str(min(2, os.cpu_count() or 1))], build_dir)
            stamp_file.write_text(stamp)
    _prune(folder_prefix, keep=build_dir)
    return FirmwareBuild(build, build_dir, _executables(build_dir))


# The folder of a build from sources of its own (`image`), in its build folder, and the middle of its name.
IMAGE_FOLDER = "program"


def _write_tree(root: Path, files: dict) -> Path:
    """The sources `files` ({relative path: text}) under root, replacing whatever was there."""
    shutil.rmtree(root, ignore_errors=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def sources_fingerprint() -> str:
    """The sha256 of every firmware source (path and bytes): what a measurement of the firmware records,
    so that a figure taken with other sources is not shown for today's."""
    source = firmware_dir()
    h = hashlib.sha256()
    for path in source_files(source):
        h.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def build_root() -> Path:
    """Where firmware builds live: the user's cache, never a source tree. A home folder that does not
    exist is not made: the builds then go into a temporary folder of this process."""
    from ..infra.tempdirs import missing_home, temporary_cache
    cache = os.environ.get("XDG_CACHE_HOME")
    if not cache:
        cache = temporary_cache() if missing_home() else str(Path.home() / ".cache")
    return Path(cache) / "tinyrps" / "firmware"


# A build folder unused for this long is removed (checkouts and versions may alternate).
PRUNE_AFTER_S = 7 * 24 * 3600


def _prune(build: str, keep: Path) -> None:
    """Mark `keep` as used now, and remove folders of `build` unused for PRUNE_AFTER_S; skip any in use."""
    os.utime(keep)
    cutoff = time.time() - PRUNE_AFTER_S
    for old in build_root().glob(f"{build}-*"):
        if old == keep or not old.is_dir() or len(old.name) != len(build) + 17 or old.stat().st_mtime > cutoff:
            continue
        try:
            with open(old / ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue   # being built by another process right now


def _check_tools(build: str, spec: BuildSpec) -> None:
    missing = [t for t in ("cmake", *spec.compilers) if shutil.which(t) is None]
    if missing:
        raise UserError(f"the {build} firmware build needs {' and '.join(missing)}, which is not installed: "
                        f"{spec.install_hint}")


def _stamp(source: Path, args: list, compilers: tuple) -> str:
    """Hash of every source file (path and bytes), the CMake arguments and the compilers' versions."""
    return _stamp_files(((str(path.relative_to(source)), path.read_bytes()) for path in source_files(source)),
                        args, compilers)


def _stamp_files(files, args: list, compilers: tuple) -> str:
    """Hash of (relative path, bytes) of every source, the CMake arguments and the compilers' versions."""
    h = hashlib.sha256("\0".join(args).encode())
    for compiler in compilers:
        version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
        h.update(version.encode() + b"\0")
    for rel, data in files:
        h.update(rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def _run_cmake(build: str, command: list, build_dir: Path) -> None:
    log = build_dir / "build.log"
    with open(log, "a") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise UserError(f"building the {build} firmware failed (`{' '.join(command[:2])}`); see {log}")


def _executables(build_dir: Path) -> dict:
    found = {}
    for path in build_dir.rglob("*"):
        if "CMakeFiles" in path.parts or not path.is_file():
            continue
        if path.suffix == ".elf" or (os.access(path, os.X_OK) and path.suffix == ""):
            found[path.name] = path
    return found
