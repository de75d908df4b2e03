"""The runner's build: the checkout's build_executor_runner.sh with the program's settings, told to
use this Python and the executorch package's flatc (the script sources setup_path.sh, which may
put the set-up's own virtual environment first on PATH)."""
import os
import sys
from pathlib import Path

import pytest

from tinyrps.deploy.runner_build import (build_command, build_environment, flatc_path, python_build_flags,
                                         refuse_paths_with_spaces)
from tinyrps.infra.errors import UserError

SETTINGS = {"accelerator": "ethos-u85-128", "system_config": "Ethos_U85_SYS_DRAM_Mid", "memory_mode": "Dedicated_Sram"}


def test_flatc_is_the_executorch_packages_own():
    import executorch
    flatc = flatc_path()
    assert flatc in [Path(p) / "data" / "bin" / "flatc" for p in executorch.__path__]
    assert flatc.is_file() and os.access(flatc, os.X_OK)


def test_python_and_flatc_are_passed_to_cmake():
    assert python_build_flags() == f"-DPYTHON_EXECUTABLE={sys.executable} -DFLATC_EXECUTABLE={flatc_path()}"


def test_build_command_with_the_program_baked_in(tmp_path):
    cmd = build_command(tmp_path / "et", SETTINGS, tmp_path / "out", pte=tmp_path / "m.pte")
    assert cmd == ["bash", str(tmp_path / "et/backends/arm/scripts/build_executor_runner.sh"),
                   f"--pte={tmp_path / 'm.pte'}", "--target=ethos-u85-128", "--system_config=Ethos_U85_SYS_DRAM_Mid",
                   "--memory_mode=Dedicated_Sram", f"--output={tmp_path / 'out'}",
                   f"--extra_build_flags=-DPYTHON_EXECUTABLE={sys.executable} -DFLATC_EXECUTABLE={flatc_path()}"]


def test_build_command_of_the_semihosting_runner(tmp_path):
    cmd = build_command(tmp_path / "et", SETTINGS, tmp_path / "out")
    assert "--pte=semihosting" in cmd  # the script turns it into -DSEMIHOSTING=ON
    assert not any(a.startswith("--pte=/") for a in cmd)


def test_build_environment_puts_the_toolchain_and_this_python_first(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("VIRTUAL_ENV", "/home/user/et-setup-venv")
    env = build_environment(tmp_path / "toolchain" / "bin")
    assert env["PATH"].split(os.pathsep) == [str(tmp_path / "toolchain" / "bin"), str(Path(sys.executable).parent),
                                            "/usr/bin", "/bin"]
    # setup_path.sh's `export PATH=$VIRTUAL_ENV/bin:$PATH` then keeps this environment first
    assert env["VIRTUAL_ENV"] == sys.prefix
    assert (Path(env["VIRTUAL_ENV"]) / "bin").resolve() == Path(sys.executable).parent.resolve()


def test_paths_with_spaces_are_refused_clearly(tmp_path):
    refuse_paths_with_spaces({"the ExecuTorch checkout": tmp_path / "executorch"})
    with pytest.raises(UserError, match="build_executor_runner.sh breaks on paths with spaces, and the "
                                        "ExecuTorch checkout '.*my code/executorch' has one"):
        refuse_paths_with_spaces({"the ExecuTorch checkout": tmp_path / "my code" / "executorch"})
    with pytest.raises(UserError, match="or pass --workdir"):
        refuse_paths_with_spaces({"the work folder": tmp_path / "a b"})
