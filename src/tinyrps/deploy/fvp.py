"""Run an Ethos-U program on Arm's Corstone FVP with ExecuTorch's bare-metal `arm_executor_runner`.

The FVP (Corstone-320: Cortex-M85 + Ethos-U85; Corstone-300: Cortex-M55 +
Ethos-U55) is a free download from Arm under an EULA, and the runner is built
from an ExecuTorch source checkout of the release that made the program, with
the Arm GNU toolchain. `check_prerequisites` says which of these are missing and
how to get each; `deploy_fvp` builds the runner with the .pte baked in (through
the checkout's own build script, so the build matches that release), runs the
FVP headless with a time limit, and reads back the output tensor and the cycle
counts the runner prints. docs/fvp.md has the same steps by hand.

The runner feeds the program an input of ones (it has no image to read on a bare
board), i.e. an all-white 28x28 image; the result is compared with the npu-ref
device on that same image.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import UserError
from ..model import IMAGE_SIZE, LABELS

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
TOOLCHAIN = "Arm GNU Toolchain 13.3.rel1 (arm-gnu-toolchain-13.3.rel1-x86_64-arm-none-eabi.tar.xz)"
TOOLCHAIN_PAGE = "developer.arm.com > Tools and Software > GNU Toolchain > Downloads"
MIN_CMAKE = (3, 20)
# Where ExecuTorch's examples/arm/setup.sh puts the FVPs, the toolchain and setup_path.sh.
SCRATCH = Path("examples") / "arm" / "arm-scratch"
RUNNER_SOURCE = Path("examples") / "arm" / "executor_runner" / "arm_executor_runner.cpp"
BUILD_RUNNER = Path("backends") / "arm" / "scripts" / "build_executor_runner.sh"
BUILD_EXECUTORCH = Path("backends") / "arm" / "scripts" / "build_executorch.sh"
STANDALONE_RUNNER = Path("examples") / "arm" / "executor_runner" / "standalone"


def executorch_release() -> str:
    """The ExecuTorch release that made the programs, e.g. '1.5.1'."""
    from executorch.version import __version__
    return __version__.split("+")[0]


# --- the program --------------------------------------------------------------------------------

def program_settings(model) -> dict:
    """Accelerator, system config and memory mode of an Ethos-U program, from its sidecar."""
    from ..export import read_sidecar
    from ..pte import family_of_program, read_program
    model = Path(model)
    family = family_of_program(read_program(model), model)
    if family != "ethos-u":
        raise UserError(f"{model.name} is a {family} program: the FVP flow runs Ethos-U programs; "
                        f"export one with `tinyrps export --target ethos-u85-128`")
    sidecar = read_sidecar(model) or {}
    settings = sidecar.get("ethos_u")
    if not settings:
        raise UserError(f"{model.with_suffix('.json')} (the program's sidecar) is missing: export the program again")
    family = settings["accelerator"].rsplit("-", 1)[0]
    if family not in FVPS:
        raise UserError(f"there is no Corstone FVP flow for {settings['accelerator']} in ExecuTorch's runner; "
                        f"export an ethos-u85-* (Corstone-320) or ethos-u55-* (Corstone-300) target")
    return settings


# --- prerequisites ------------------------------------------------------------------------------

def check_prerequisites(model, executorch_root, fvp=None, toolchain=None) -> list:
    """[(name, ok, detail)] for everything the FVP run needs; detail says what was found or how to get it."""
    settings = program_settings(model)
    root = Path(executorch_root).expanduser()
    return [check_fvp(settings["accelerator"], root, fvp),
            check_checkout(root),
            check_arm_setup(root),
            check_toolchain(root, toolchain),
            check_cmake()]


def fvp_binary_name(accelerator: str) -> str:
    return FVPS[accelerator.rsplit("-", 1)[0]][0]


def find_fvp(accelerator: str, root: Path, fvp=None) -> Optional[Path]:
    """The FVP binary: the one given, else on PATH, else where ExecuTorch's setup.sh installs it."""
    name, folder, _ = FVPS[accelerator.rsplit("-", 1)[0]]
    if fvp is not None:
        path = Path(fvp).expanduser()
        return path.resolve() if path.is_file() and os.access(path, os.X_OK) else None
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path).resolve()
    installed = sorted((root / SCRATCH / f"FVP-{folder}" / "models").glob(f"*/{name}"))
    return installed[0].resolve() if installed else None


def check_fvp(accelerator: str, root: Path, fvp=None) -> Check:
    name, folder, _ = FVPS[accelerator.rsplit("-", 1)[0]]
    found = find_fvp(accelerator, root, fvp)
    if found:
        return Check(name, True, str(found))
    where = f"{fvp} is not an executable file" if fvp is not None else \
        f"not on PATH nor in {root / SCRATCH / f'FVP-{folder}'}"
    return Check(name, False, f"{where}: download the free {FVP_DOWNLOAD[folder]} from {ARM_FVP_PAGE}, "
                              f"install it with `./{name}.sh --i-agree-to-the-contained-eula --no-interactive "
                              f"--destination ~/fvp/{folder}` and pass --fvp ~/fvp/{folder}/models/Linux64_GCC-9.3/{name} "
                              f"(or run {root / 'examples/arm/setup.sh'} --i-agree-to-the-contained-eula)")


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
                              f"`{root / 'examples/arm/setup.sh'} --i-agree-to-the-contained-eula`, which also "
                              f"fetches the Ethos-U driver and platform sources")


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
        return Check(name, False, "cmake not found: `pip install cmake` or `apt-get install cmake`")
    if version < MIN_CMAKE:
        return Check(name, False, f"{cmake} is {'.'.join(map(str, version))}: `pip install cmake` for a newer one")
    return Check(name, True, f"{cmake} ({'.'.join(map(str, version))})")


def cmake_version(cmake: str) -> Optional[tuple]:
    try:
        out = subprocess.run([cmake, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"version (\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else None


def missing_prerequisites_message(checks: list) -> str:
    missing = [c for c in checks if not c.ok]
    return "cannot run on the FVP, missing " + "; ".join(f"[{c.name}] {c.detail}" for c in missing)


# --- build and run ------------------------------------------------------------------------------

def deploy_fvp(model, executorch_root, fvp=None, toolchain=None, workdir=None,
               timeout_s: int = 600, build_timeout_s: int = 3600) -> dict:
    """Build arm_executor_runner with `model` baked in, run it on the Corstone FVP, and report
    the output logits and the runner's cycle counts next to npu-ref's logits and Vela's estimate.

    Build and FVP logs go to `workdir` (default: RUN/export/T.fvp/ next to RUN/export/T.pte).
    """
    model = Path(model).resolve()
    root = Path(executorch_root).expanduser().resolve()
    settings = program_settings(model)
    checks = check_prerequisites(model, root, fvp, toolchain)
    if not all(c.ok for c in checks):
        raise UserError(missing_prerequisites_message(checks))
    workdir = Path(workdir) if workdir else model.parent / f"{model.stem}.fvp"
    workdir.mkdir(parents=True, exist_ok=True)
    env = build_environment(root, find_toolchain(root, toolchain))
    elf = build_runner(model, root, settings, workdir, env, build_timeout_s)
    fvp_binary = find_fvp(settings["accelerator"], root, fvp)
    log = run_fvp(fvp_binary, settings["accelerator"], elf, workdir, env, timeout_s)
    parsed = parse_runner_output(log.read_text(errors="replace"))
    if parsed["errors"] or not parsed["logits"]:
        problem = parsed["errors"][0] if parsed["errors"] else "no output tensor printed"
        raise UserError(f"the runner did not complete on the FVP ({problem}); see {log}")
    return report(model, settings, fvp_binary, elf, log, parsed)


def build_environment(root: Path, toolchain_bin: Path) -> dict:
    """PATH with the toolchain and this Python first: the runner's CMake calls `python` for its helpers."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(toolchain_bin), str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def build_runner(model: Path, root: Path, settings: dict, workdir: Path, env: dict, timeout_s: int) -> Path:
    """Build the runner through the checkout's own script; return the ELF."""
    build_dir = workdir / "build"
    log = workdir / "build.log"
    steps = []
    if not (root / STANDALONE_RUNNER).is_dir() and not (root / "arm_test" / "cmake-out").is_dir():
        # releases whose runner links a prebuilt runtime: build that first
        steps.append(["bash", str(root / BUILD_EXECUTORCH)])
    steps.append(["bash", str(root / BUILD_RUNNER), f"--pte={model}", f"--target={settings['accelerator']}",
                  f"--system_config={settings['system_config']}", f"--memory_mode={settings['memory_mode']}",
                  f"--output={build_dir}"])
    with open(log, "w") as out:
        for cmd in steps:
            out.write(f"$ {' '.join(cmd)}\n")
            out.flush()
            try:
                done = subprocess.run(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise UserError(f"building arm_executor_runner took over {timeout_s} s; see {log}") from None
            if done.returncode != 0:
                raise UserError(f"building arm_executor_runner failed (exit {done.returncode}); see {log}")
    elves = sorted(p for p in build_dir.rglob("arm_executor_runner*") if p.is_file()
                   and p.name in ("arm_executor_runner", "arm_executor_runner.elf"))
    if not elves:
        raise UserError(f"the build finished without an arm_executor_runner in {build_dir}; see {log}")
    return elves[0]


def fvp_command(fvp: Path, accelerator: str, elf: Path, timeout_s: int) -> list:
    """Headless FVP: no visualisation, no telnet terminal, UART to stdout, quit when the program ends."""
    _, _, board = FVPS[accelerator.rsplit("-", 1)[0]]
    macs = accelerator.rsplit("-", 1)[1]
    npu = f"{board}.subsystem.ethosu" if board == "mps4_board" else "ethosu"
    params = [f"{npu}.num_macs={macs}",
              f"{board}.visualisation.disable-visualisation=1",
              f"{board}.telnetterminal0.start_telnet=0",
              f"{board}.uart0.out_file=-",
              f"{board}.uart0.shutdown_on_eot=1"]
    if board == "mps4_board":
        params.append("vis_hdlcd.disable_visualisation=1")
    cmd = [str(fvp)]
    for p in params:
        cmd += ["-C", p]
    return cmd + ["-a", str(elf), "--timelimit", str(timeout_s)]


def run_fvp(fvp: Path, accelerator: str, elf: Path, workdir: Path, env: dict, timeout_s: int) -> Path:
    log = workdir / "fvp.log"
    env = dict(env)
    # The Corstone-320 FVP ships its own Python runtime library next to its models/ folder.
    bundled = fvp.parent.parent.parent / "python" / "lib"
    if bundled.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(bundled), env.get("LD_LIBRARY_PATH")]))
    cmd = fvp_command(fvp, accelerator, elf, timeout_s)
    with open(log, "w") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            subprocess.run(cmd, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s + 60)
        except subprocess.TimeoutExpired:
            raise UserError(f"the FVP did not finish within {timeout_s + 60} s; see {log}") from None
    return log


# --- the runner's output ------------------------------------------------------------------------

_NUMBER = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"
_PATTERNS = {
    "npu_cycles": r"ethosu_pmu_cycle_cntr\s*:\s*(\d+)",
    "ethos_u_delegate_cpu_cycles": r"ethos-u\s*:\s*cycle_cnt\s*:\s*(\d+)",
    "cpu_cycles": r"Inference runtime:\s*(\d+)\s*CPU cycles",
    "inferences": r"NPU Inferences\s*:\s*(\d+)",
}
_ERROR_LINE = re.compile(r"^(?:[FE] \[executorch|Hard fault|.*CPU time has been exceeded)")


def parse_runner_output(text: str) -> dict:
    """Output tensor, cycle counts and error lines from arm_executor_runner's log (as printed on the UART).

    The runner prints each output element as `Output[0][j]: (float) v`, its Ethos-U PMU
    report (`ethosu_pmu_cycle_cntr : N`) and its CPU cycle counts; log lines of level
    Error/Fatal start with `E [executorch` / `F [executorch`.
    """
    values = {}
    for j, value in re.findall(rf"Output\[0\]\[(\d+)\]:\s*\(float\)\s*{_NUMBER}", text):
        values[int(j)] = float(value)
    logits = [values[j] for j in sorted(values)] if sorted(values) == list(range(len(values))) else []
    parsed = {"logits": logits,
              "errors": [line.strip() for line in text.splitlines() if _ERROR_LINE.match(line.strip())]}
    for key, pattern in _PATTERNS.items():
        match = re.search(pattern, text)
        parsed[key] = int(match[1]) if match else None
    return parsed


def report(model: Path, settings: dict, fvp: Path, elf: Path, log: Path, parsed: dict) -> dict:
    from ..devices import open_device
    from ..export import read_sidecar
    white = np.full((1, IMAGE_SIZE, IMAGE_SIZE), 255, np.uint8)  # the runner's input of ones
    with open_device("npu-ref", model) as device:
        expected = device.classify(white)[0]
    logits = np.array(parsed["logits"], np.float32)
    sidecar = read_sidecar(model) or {}
    vela = sidecar.get("vela", {})
    step = sidecar.get("quantization", {}).get("output", {}).get("scale", 0.0)
    diff = float(np.abs(logits - expected).max()) if logits.shape == expected.shape else None
    return {
        "model": str(model), "target": settings["accelerator"], "fvp": str(fvp), "elf": str(elf), "log": str(log),
        "input": "ones (an all-white image), the runner's built-in input",
        "logits": logits.tolist(), "predicted": LABELS[int(logits.argmax())] if len(logits) else None,
        "npu_ref_logits": expected.tolist(), "max_abs_diff_npu_ref": diff,
        "matches_npu_ref": diff is not None and diff <= step * 1.001,
        "npu_cycles": parsed["npu_cycles"], "vela_npu_cycles": vela.get("npu_cycles"),
        "npu_ms_at_vela_clock": (parsed["npu_cycles"] / vela["clock_hz"] * 1000
                                 if parsed["npu_cycles"] and vela.get("clock_hz") else None),
        "cpu_cycles": parsed["cpu_cycles"], "ethos_u_delegate_cpu_cycles": parsed["ethos_u_delegate_cpu_cycles"],
    }
