"""Corstone FVP deployment: each missing prerequisite is named with how to get it."""
import stat

import pytest

from tinyrps.deploy import fvp
from tinyrps.errors import UserError


def executable(path, text="#!/bin/sh\nexit 0\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    """An otherwise empty PATH with a CMake, so each test decides which tools exist."""
    folder = tmp_path / "bin"
    executable(folder / "cmake", "#!/bin/sh\necho 'cmake version 3.28.1'\n")
    monkeypatch.setenv("PATH", str(folder))
    return folder


@pytest.fixture
def checkout(tmp_path):
    """The files of an ExecuTorch checkout that the checks look at (no sources are built here)."""
    root = tmp_path / "executorch"
    for rel in ("CMakeLists.txt", "examples/arm/executor_runner/arm_executor_runner.cpp",
                "backends/arm/scripts/build_executor_runner.sh", "examples/arm/arm-scratch/setup_path.sh"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / "version.txt").write_text(fvp.executorch_release() + "\n")
    return root


def toolchain(folder, cxx_library: bool):
    """arm-none-eabi-gcc/g++ that answer the C++ library probe as a toolchain with/without libstdc++ does."""
    library = folder / "lib" / "libstdc++.a"
    library.parent.mkdir(parents=True, exist_ok=True)
    library.write_text("")
    answer = str(library) if cxx_library else "libstdc++.a"
    executable(folder / "arm-none-eabi-gcc", "#!/bin/sh\necho 13.3.1\n")
    executable(folder / "arm-none-eabi-g++", f"#!/bin/sh\necho {answer}\n")


def check_named(checks, prefix):
    (check,) = [c for c in checks if c.name.startswith(prefix)]
    return check


@pytest.fixture
def u85(exported):
    return exported("ethos-u85-128")


def test_all_present_passes(u85, checkout, bin_dir):
    toolchain(bin_dir, cxx_library=True)
    executable(bin_dir / "FVP_Corstone_SSE-320")
    checks = fvp.check_prerequisites(u85, checkout)
    assert all(c.ok for c in checks), checks
    assert [len(c) for c in checks] == [3] * 5


def test_missing_fvp_says_where_to_download_it(u85, checkout, bin_dir):
    toolchain(bin_dir, cxx_library=True)
    check = check_named(fvp.check_prerequisites(u85, checkout), "FVP_Corstone_SSE-320")
    assert not check.ok
    assert "developer.arm.com" in check.detail and "--fvp" in check.detail and "setup.sh" in check.detail


def test_fvp_given_on_the_command_line(u85, checkout, bin_dir, tmp_path):
    toolchain(bin_dir, cxx_library=True)
    given = executable(tmp_path / "fvp" / "FVP_Corstone_SSE-320")
    assert check_named(fvp.check_prerequisites(u85, checkout, fvp=given), "FVP_Corstone_SSE-320").ok
    check = check_named(fvp.check_prerequisites(u85, checkout, fvp=tmp_path / "nope"), "FVP_Corstone_SSE-320")
    assert not check.ok and "not an executable file" in check.detail


def test_fvp_installed_by_executorch_setup_is_found(u85, checkout, bin_dir):
    executable(checkout / "examples/arm/arm-scratch/FVP-corstone320/models/Linux64_GCC-9.3/FVP_Corstone_SSE-320")
    assert check_named(fvp.check_prerequisites(u85, checkout), "FVP_Corstone_SSE-320").ok


def test_missing_checkout_says_how_to_clone_it(u85, bin_dir, tmp_path):
    check = check_named(fvp.check_prerequisites(u85, tmp_path / "nowhere"), "ExecuTorch")
    assert not check.ok and f"git clone --branch v{fvp.executorch_release()}" in check.detail


def test_checkout_of_another_release_is_refused(u85, checkout, bin_dir):
    (checkout / "version.txt").write_text("9.9.0a0\n")
    check = check_named(fvp.check_prerequisites(u85, checkout), "ExecuTorch")
    assert not check.ok and f"checkout v{fvp.executorch_release()}" in check.detail


def test_missing_arm_setup_says_to_run_setup_sh(u85, checkout, bin_dir):
    (checkout / "examples/arm/arm-scratch/setup_path.sh").unlink()
    check = check_named(fvp.check_prerequisites(u85, checkout), "Arm example setup")
    assert not check.ok and "setup.sh --i-agree-to-the-contained-eula" in check.detail


def test_missing_toolchain_says_where_to_get_it(u85, checkout, bin_dir):
    check = check_named(fvp.check_prerequisites(u85, checkout), "Arm GNU toolchain")
    assert not check.ok and "Arm GNU Toolchain 13.3.rel1" in check.detail and "PATH" in check.detail


def test_toolchain_without_cxx_library_is_refused(u85, checkout, bin_dir):
    toolchain(bin_dir, cxx_library=False)
    check = check_named(fvp.check_prerequisites(u85, checkout), "Arm GNU toolchain")
    assert not check.ok and "C++ standard library" in check.detail
    assert "libstdc++-arm-none-eabi-newlib" in check.detail


def test_deploy_names_every_missing_prerequisite_in_one_line(u85, tmp_path, bin_dir):
    with pytest.raises(UserError) as e:
        fvp.deploy_fvp(u85, tmp_path / "nowhere")
    message = str(e.value)
    assert "\n" not in message
    for name in ("FVP_Corstone_SSE-320", "ExecuTorch", "setup.sh", "Arm GNU toolchain"):
        assert name in message
    assert "[CMake" not in message  # present, so not reported


def test_deploy_refuses_a_program_that_is_not_for_the_npu(exported, checkout):
    with pytest.raises(UserError, match="Ethos-U"):
        fvp.deploy_fvp(exported("int8-xnnpack"), checkout)


def test_fvp_command_is_headless_and_bounded(tmp_path):
    cmd = fvp.fvp_command(tmp_path / "FVP_Corstone_SSE-320", "ethos-u85-256", tmp_path / "runner.elf", 120)
    joined = " ".join(cmd)
    for parameter in ("mps4_board.subsystem.ethosu.num_macs=256", "mps4_board.telnetterminal0.start_telnet=0",
                      "mps4_board.visualisation.disable-visualisation=1", "mps4_board.uart0.out_file=-",
                      "mps4_board.uart0.shutdown_on_eot=1"):
        assert parameter in cmd
    assert joined.endswith(f"-a {tmp_path / 'runner.elf'} --timelimit 120")


def test_runner_output_is_parsed():
    # lines as arm_executor_runner prints them (its log format and its printf of outputs)
    text = "\n".join([
        "I [executorch:arm_executor_runner.cpp:412 main()] Model buffer loaded, has 1 methods",
        "I [executorch:arm_perf_monitor.cpp:180 StopMeasurements()] NPU Inferences : 1",
        "I [executorch:arm_perf_monitor.cpp:193 StopMeasurements()] ethos-u : cycle_cnt : 183711 cycles (183711.00 per inference)",
        "I [executorch:arm_perf_monitor.cpp:206 StopMeasurements()] Inference runtime: 241003 CPU cycles total (241003.00 per inference)",
        "I [executorch:arm_perf_monitor.cpp:240 StopMeasurements()] ethosu_pmu_cycle_cntr :  141522 (141522.00 per inference)",
        "Output[0][0]: (float) -3.151000",
        "Output[0][1]: (float) 7.427000",
        "Output[0][2]: (float) -1.350500",
    ])
    parsed = fvp.parse_runner_output(text)
    assert parsed["logits"] == [-3.151, 7.427, -1.3505]
    assert (parsed["npu_cycles"], parsed["cpu_cycles"], parsed["ethos_u_delegate_cpu_cycles"]) == (141522, 241003, 183711)
    assert parsed["errors"] == []
    failed = fvp.parse_runner_output("E [executorch:arm_executor_runner.cpp:99 main()] Loading of method failed\n")
    assert failed["errors"] and failed["logits"] == []
