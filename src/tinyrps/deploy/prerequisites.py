"""What the FVP route needs on this machine, where each piece is, and how to get a missing one.

Each check returns a `Check(name, ok, detail)`: `detail` is what was found, or one
sentence saying how to get it. The figures (CMake version, toolchain release, FVP
archives, set-up script options) are those of ExecuTorch 1.5's Arm scripts.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import namedtuple
from pathlib import Path
from typing import Optional

from ..hardware.families import npu_family

Check = namedtuple("Check", "name ok detail")

# NPU family -> (FVP binary, folder name used by ExecuTorch's setup.sh, board prefix of the FVP parameters)
FVPS = {
    "ethos-u85": ("FVP_Corstone_SSE-320", "corstone320", "mps4_board"),
    "ethos-u55": ("FVP_Corstone_SSE-300_Ethos-U55", "corstone300", "mps3_board"),
}
FVP_DOWNLOAD = {
    "corstone320": "Arm Corstone SSE-320 FVP (FVP_Corstone_SSE-320_11.27_25_Linux64.tgz)",
    "corstone300": "Arm Corstone SSE-300 FVP (FVP_Corstone_SSE-300_11.27_42_Linux64.tgz)",
}
ARM_FVP_PAGE = "developer.arm.com > Tools and Software > Fixed Virtual Platforms > Arm Ecosystem FVPs"
TOOLCHAIN = "Arm GNU Toolchain 15.2.rel1 (arm-gnu-toolchain-15.2.rel1-x86_64-arm-none-eabi.tar.xz)"
TOOLCHAIN_PAGE = "developer.arm.com > Tools and Software > GNU Toolchain > Downloads"
# The runner's CMake project pulls in ExecuTorch's top-level project, which requires 3.24.
MIN_CMAKE = (3, 24)
# Where ExecuTorch's examples/arm/setup.sh puts the FVPs, the toolchain and setup_path.sh.
SCRATCH = Path("examples") / "arm" / "arm-scratch"
SETUP_SCRIPT = Path("examples") / "arm" / "setup.sh"
RUNNER_SOURCE = Path("examples") / "arm" / "executor_runner" / "arm_executor_runner.cpp"
BUILD_RUNNER = Path("backends") / "arm" / "scripts" / "build_executor_runner.sh"


def executorch_release() -> str:
    """The ExecuTorch release that made the programs, e.g. '1.5.1'."""
    from executorch.version import __version__
    return __version__.split("+")[0]


def check_all(accelerator: str, root: Path, fvp=None, toolchain=None) -> list:
    return [check_fvp(accelerator, root, fvp),
            check_checkout(root),
            check_arm_setup(root),
            check_toolchain(root, toolchain),
            check_cmake(),
            check_git()]


def missing_prerequisites_message(checks: list) -> str:
    missing = [c for c in checks if not c.ok]
    return "cannot run on the FVP, missing " + "; ".join(f"[{c.name}] {c.detail}" for c in missing)


# --- the FVP ------------------------------------------------------------------------------------

def fvp_binary_name(accelerator: str) -> str:
    return FVPS[npu_family(accelerator)][0]


def find_fvp(accelerator: str, root: Path, fvp=None) -> Optional[Path]:
    """The FVP binary: the one given, else on PATH, else where ExecuTorch's setup.sh installs it."""
    name, folder, _ = FVPS[npu_family(accelerator)]
    if fvp is not None:
        path = Path(fvp).expanduser()
        return path.resolve() if path.is_file() and os.access(path, os.X_OK) else None
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path).resolve()
    installed = sorted((root / SCRATCH / f"FVP-{folder}" / "models").glob(f"*/{name}"))
    return installed[0].resolve() if installed else None


def check_fvp(accelerator: str, root: Path, fvp=None) -> Check:
    name, folder, _ = FVPS[npu_family(accelerator)]
    found = find_fvp(accelerator, root, fvp)
    if found:
        return Check(name, True, str(found))
    where = f"{fvp} is not an executable file" if fvp is not None else \
        f"not on PATH nor in {root / SCRATCH / f'FVP-{folder}'}"
    # The installer needs --force to install into the folder it was unpacked into.
    return Check(name, False, f"{where}: download the free {FVP_DOWNLOAD[folder]} from {ARM_FVP_PAGE}, "
                              f"unpack it into ~/fvp/{folder}, install it there with `./{name}.sh "
                              f"--i-agree-to-the-contained-eula --force --no-interactive --destination ~/fvp/{folder}` "
                              f"and pass --fvp ~/fvp/{folder}/models/Linux64_GCC-9.3/{name} "
                              f"(or run {root / SETUP_SCRIPT} --i-agree-to-the-contained-eula)")


# --- the ExecuTorch checkout and its Arm set-up -------------------------------------------------

def check_checkout(root: Path) -> Check:
    name = f"ExecuTorch v{executorch_release()} checkout"
    clone = (f"git clone --branch v{executorch_release()} https://github.com/pytorch/executorch.git {root} && "
             f"git -C {root} submodule update --init --recursive")
    missing = [p for p in (Path("CMakeLists.txt"), RUNNER_SOURCE, BUILD_RUNNER) if not (root / p).is_file()]
    if missing:
        return Check(name, False, f"{root} has no {missing[0]}: get the sources with `{clone}`")
    version = (root / "version.txt").read_text().strip() if (root / "version.txt").is_file() else "unknown"
    if not version.startswith(executorch_release()):
        return Check(name, False, f"{root} is ExecuTorch {version}, but the programs are made by "
                                  f"{executorch_release()}: `git -C {root} checkout v{executorch_release()} && "
                                  f"git -C {root} submodule update --init --recursive`")
    empty = empty_submodules(root)
    if empty:
        return Check(name, False, f"submodule {empty[0]} of {root} is empty: "
                                  f"`git -C {root} submodule update --init --recursive`")
    return Check(name, True, f"{root} (ExecuTorch {version})")


def empty_submodules(root: Path) -> list:
    gitmodules = root / ".gitmodules"
    if not gitmodules.is_file():
        return []
    paths = re.findall(r"^\s*path\s*=\s*(\S+)", gitmodules.read_text(), flags=re.M)
    return [p for p in paths if not (root / p).is_dir() or not any((root / p).iterdir())]


def check_arm_setup(root: Path) -> Check:
    name = "Arm example setup (examples/arm/setup.sh)"
    setup_path = root / SCRATCH / "setup_path.sh"
    if setup_path.is_file():
        return Check(name, True, str(setup_path))
    return Check(name, False, f"{setup_path} is missing (the runner's build script sources it): run "
                              f"`{root / SETUP_SCRIPT} --i-agree-to-the-contained-eula`, which downloads the FVPs "
                              f"and the Arm GNU toolchain, or `{root / SETUP_SCRIPT} --disable-ethos-u-deps` "
                              f"if you install those yourself")


# --- build tools --------------------------------------------------------------------------------

def find_toolchain(root: Path, toolchain=None) -> Optional[Path]:
    """The bin/ folder holding arm-none-eabi-gcc: given (the folder, its parent or the gcc), on PATH,
    or where ExecuTorch's setup.sh installs it."""
    if toolchain is not None:
        given = Path(toolchain).expanduser()
        for candidate in (given.parent if given.is_file() else given, given / "bin"):
            if (candidate / "arm-none-eabi-gcc").is_file():
                return candidate.resolve()
        return None
    on_path = shutil.which("arm-none-eabi-gcc")
    if on_path:
        return Path(on_path).resolve().parent
    installed = sorted((root / SCRATCH).glob("arm-gnu-toolchain-*-arm-none-eabi/bin/arm-none-eabi-gcc"))
    return installed[-1].parent.resolve() if installed else None


def check_toolchain(root: Path, toolchain=None) -> Check:
    name = "Arm GNU toolchain (arm-none-eabi-gcc/g++ with the C++ library)"
    get = (f"install {TOOLCHAIN} from {TOOLCHAIN_PAGE} and put its bin/ folder on PATH "
           f"(Debian's gcc-arm-none-eabi also needs libstdc++-arm-none-eabi-newlib: the runner is C++)")
    bin_dir = find_toolchain(root, toolchain)
    if bin_dir is None:
        where = f"{toolchain} holds no arm-none-eabi-gcc" if toolchain is not None else "arm-none-eabi-gcc not found"
        return Check(name, False, f"{where}: {get}")
    gxx = bin_dir / "arm-none-eabi-g++"
    if not gxx.is_file():
        return Check(name, False, f"{bin_dir} has no arm-none-eabi-g++: {get}")
    if not has_cxx_library(gxx):
        return Check(name, False, f"{gxx} has no C++ standard library for Cortex-M: {get}")
    return Check(name, True, f"{bin_dir} ({compiler_version(bin_dir / 'arm-none-eabi-gcc')})")


def has_cxx_library(gxx: Path) -> bool:
    """Does g++ find libstdc++ for a hard-float Armv8.1-M core? (It prints the bare name when it does not.)"""
    try:
        out = subprocess.run([str(gxx), "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard",
                              "-print-file-name=libstdc++.a"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    path = out.stdout.strip()
    return out.returncode == 0 and os.path.isabs(path) and os.path.isfile(path)


def compiler_version(gcc: Path) -> str:
    try:
        out = subprocess.run([str(gcc), "-dumpversion"], capture_output=True, text=True, timeout=30)
        return f"GCC {out.stdout.strip()}"
    except (OSError, subprocess.TimeoutExpired):
        return "version unknown"


def check_cmake() -> Check:
    name = f"CMake >= {'.'.join(map(str, MIN_CMAKE))}"
    cmake = shutil.which("cmake")
    version = cmake_version(cmake) if cmake else None
    if version is None:
        return Check(name, False, "cmake not found: `pip install 'cmake>=3.24,<4'` or `apt-get install cmake`")
    if version < MIN_CMAKE:
        return Check(name, False, f"{cmake} is {'.'.join(map(str, version))}: `pip install 'cmake>=3.24,<4'` "
                                  f"for a newer one")
    return Check(name, True, f"{cmake} ({'.'.join(map(str, version))})")


def cmake_version(cmake: str) -> Optional[tuple]:
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"version (\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else None


def check_git() -> Check:
    # The runner's first CMake configure clones Arm's Ethos-U core platform and driver.
    name = "git (the first build fetches Arm's Ethos-U platform and driver sources)"
    git = shutil.which("git")
    if git:
        return Check(name, True, git)
    return Check(name, False, "git not found: `apt-get install git` (the build also needs network access)")
