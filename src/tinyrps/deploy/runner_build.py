"""Building ExecuTorch's `arm_executor_runner` through the checkout's own build script.

Two kinds of runner: one with the program baked in (`--pte=<file>`; it feeds the
program an input of ones), and one that reads the program and its input from the
host through semihosting (`--pte=semihosting`, i.e. `-DSEMIHOSTING=ON`).

The script sources the checkout's `setup_path.sh`, which (when ExecuTorch's set-up
ran inside a virtual environment) puts that environment's `bin/` first on PATH. Its
CMake would then find a Python without torch or executorch and rebuild flatc from
source. So the build is told which Python and flatc to use, and `VIRTUAL_ENV` names
this environment.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ..infra.errors import UserError
from .prerequisites import BUILD_RUNNER, executorch_release

SEMIHOSTING = "semihosting"
RUNNER_NAMES = ("arm_executor_runner", "arm_executor_runner.elf")


def flatc_path() -> Path:
    """The flatc that comes with the executorch package (the same one that wrote the programs)."""
    import executorch.data.bin as package_bin  # executorch itself is a namespace package (no __file__)
    flatc = Path(package_bin.__file__).parent / "flatc"
    if not (flatc.is_file() and os.access(flatc, os.X_OK)):
        raise UserError(f"{flatc} (the executorch package's flatc) is missing: reinstall the package "
                        f"with `pip install --force-reinstall executorch=={executorch_release()}`")
    return flatc


def python_build_flags() -> str:
    """CMake flags naming this Python and the package's flatc; the script forwards them unquoted."""
    return f"-DPYTHON_EXECUTABLE={sys.executable} -DFLATC_EXECUTABLE={flatc_path()}"


def build_environment(toolchain_bin: Path) -> dict:
    """The toolchain and this Python's bin/ first on PATH, and VIRTUAL_ENV naming this environment
    (the set-up's setup_path.sh may put $VIRTUAL_ENV/bin first)."""
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = sys.prefix
    env["PATH"] = os.pathsep.join([str(toolchain_bin), str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def build_command(root: Path, settings: dict, output: Path, pte: Optional[Path] = None) -> list:
    """build_executor_runner.sh with the program's accelerator, system config and memory mode;
    `pte=None` builds the semihosting runner."""
    return ["bash", str(root / BUILD_RUNNER),
            f"--pte={pte if pte is not None else SEMIHOSTING}",
            f"--target={settings['accelerator']}",
            f"--system_config={settings['system_config']}",
            f"--memory_mode={settings['memory_mode']}",
            f"--output={output}",
            f"--extra_build_flags={python_build_flags()}"]


def refuse_paths_with_spaces(paths: dict) -> None:
    """build_executor_runner.sh expands its paths unquoted, so a space splits one into two words."""
    for role, path in paths.items():
        if any(c.isspace() for c in str(path)):
            raise UserError(f"ExecuTorch's build_executor_runner.sh breaks on paths with spaces, and {role} "
                            f"'{path}' has one: move it to a path without spaces"
                            + (" or pass --workdir" if role == "the work folder" else ""))


def build_runner(root: Path, settings: dict, output: Path, log: Path, env: dict, timeout_s: int,
                 pte: Optional[Path] = None) -> Path:
    """Build the runner into `output` (log in `log`); return its ELF file."""
    cmd = build_command(root, settings, output, pte)
    with open(log, "w") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            done = subprocess.run(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise UserError(f"building arm_executor_runner took over {timeout_s} s; see {log}") from None
    if done.returncode != 0:
        raise UserError(f"building arm_executor_runner failed (exit {done.returncode}; the first build clones "
                        f"Arm's Ethos-U sources with git and needs network access); see {log}")
    return find_elf(output, log)


def find_elf(output: Path, log: Path) -> Path:
    elves = sorted(p for p in output.rglob("arm_executor_runner*") if p.is_file() and p.name in RUNNER_NAMES)
    if not elves:
        raise UserError(f"the build finished without an arm_executor_runner in {output}; see {log}")
    return elves[0]
