"""Corstone FVP route: each missing prerequisite is named with how to get it, with ExecuTorch 1.5's figures."""
import pytest

from tinyrps.deploy import fvp, prerequisites
from tinyrps.infra.errors import UserError


def check_named(checks, prefix):
    (check,) = [c for c in checks if c.name.startswith(prefix)]
    return check


def test_all_present_passes(u85, checkout, bin_dir, executable, toolchain):
    toolchain(bin_dir, cxx_library=True)
    executable(bin_dir / "FVP_Corstone_SSE-320")
    checks = fvp.check_prerequisites(u85, checkout)
    assert all(c.ok for c in checks), checks
    assert [len(c) for c in checks] == [3] * 6


def test_missing_fvp_says_where_to_download_and_how_to_install_it(u85, checkout, bin_dir, toolchain):
    toolchain(bin_dir, cxx_library=True)
    check = check_named(fvp.check_prerequisites(u85, checkout), "FVP_Corstone_SSE-320")
    assert not check.ok
    assert "developer.arm.com" in check.detail and "--fvp" in check.detail and "setup.sh" in check.detail
    # installing into the folder the archive was unpacked into needs --force (fvp_utils.sh)
    assert "--i-agree-to-the-contained-eula --force --no-interactive --destination ~/fvp/corstone320" in check.detail


def test_fvp_given_on_the_command_line(u85, checkout, bin_dir, tmp_path, executable, toolchain):
    toolchain(bin_dir, cxx_library=True)
    given = executable(tmp_path / "fvp" / "FVP_Corstone_SSE-320")
    assert check_named(fvp.check_prerequisites(u85, checkout, fvp=given), "FVP_Corstone_SSE-320").ok
    check = check_named(fvp.check_prerequisites(u85, checkout, fvp=tmp_path / "nope"), "FVP_Corstone_SSE-320")
    assert not check.ok and "not an executable file" in check.detail


def test_fvp_installed_by_executorch_setup_is_found(u85, checkout, bin_dir, executable):
    executable(checkout / "examples/arm/arm-scratch/FVP-corstone320/models/Linux64_GCC-9.3/FVP_Corstone_SSE-320")
    assert check_named(fvp.check_prerequisites(u85, checkout), "FVP_Corstone_SSE-320").ok


def test_missing_checkout_says_how_to_clone_it(u85, bin_dir, tmp_path):
    check = check_named(fvp.check_prerequisites(u85, tmp_path / "nowhere"), "ExecuTorch")
    assert not check.ok and f"git clone --branch v{prerequisites.executorch_release()}" in check.detail


def test_checkout_of_another_release_is_refused(u85, checkout, bin_dir):
    (checkout / "version.txt").write_text("9.9.0a0\n")
    check = check_named(fvp.check_prerequisites(u85, checkout), "ExecuTorch")
    assert not check.ok and f"checkout v{prerequisites.executorch_release()}" in check.detail


def test_missing_arm_setup_names_both_ways_to_run_setup_sh(u85, checkout, bin_dir):
    (checkout / "examples/arm/arm-scratch/setup_path.sh").unlink()
    check = check_named(fvp.check_prerequisites(u85, checkout), "Arm example setup")
    assert not check.ok and "setup.sh --i-agree-to-the-contained-eula" in check.detail
    # for users with their own FVP and toolchain: setup_path.sh without the downloads
    assert "setup.sh --disable-ethos-u-deps" in check.detail
    # setup.sh does not fetch the Ethos-U platform and driver sources; the runner's build does
    assert "Ethos-U driver" not in check.detail


def test_missing_toolchain_names_upstreams_release(u85, checkout, bin_dir):
    check = check_named(fvp.check_prerequisites(u85, checkout), "Arm GNU toolchain")
    # backends/arm/scripts/toolchain_utils.sh (ExecuTorch 1.5): 15.2.rel1
    assert not check.ok and "Arm GNU Toolchain 15.2.rel1" in check.detail and "PATH" in check.detail
    assert "arm-gnu-toolchain-15.2.rel1-x86_64-arm-none-eabi.tar.xz" in check.detail


def test_toolchain_without_cxx_library_is_refused(u85, checkout, bin_dir, toolchain):
    toolchain(bin_dir, cxx_library=False)
    check = check_named(fvp.check_prerequisites(u85, checkout), "Arm GNU toolchain")
    assert not check.ok and "C++ standard library" in check.detail
    assert "libstdc++-arm-none-eabi-newlib" in check.detail


@pytest.mark.parametrize("version,ok", [("3.23.5", False), ("3.24.0", True), ("3.31.6", True)])
def test_cmake_must_be_3_24_or_newer(u85, checkout, bin_dir, version, ok, executable):
    # ExecuTorch's top-level CMakeLists.txt, which the runner's project pulls in, requires 3.24
    executable(bin_dir / "cmake", f"#!/bin/sh\necho 'cmake version {version}'\n")
    check = check_named(fvp.check_prerequisites(u85, checkout), "CMake >= 3.24")
    assert check.ok is ok
    if not ok:
        assert f"is {version[:4]}" in check.detail and "pip install" in check.detail


def test_missing_git_is_named_because_the_build_fetches_arm_sources(u85, checkout, bin_dir):
    (bin_dir / "git").unlink()
    check = check_named(fvp.check_prerequisites(u85, checkout), "git")
    assert not check.ok and "network" in check.detail


def test_deploy_names_every_missing_prerequisite_in_one_line(u85, tmp_path, bin_dir):
    (bin_dir / "git").unlink()
    with pytest.raises(UserError) as e:
        fvp.deploy_fvp(u85, tmp_path / "nowhere")
    message = str(e.value)
    assert "\n" not in message
    for name in ("FVP_Corstone_SSE-320", "ExecuTorch", "setup.sh", "Arm GNU toolchain", "[git"):
        assert name in message
    assert "[CMake" not in message  # present, so not reported


@pytest.mark.slow
def test_deploy_refuses_a_program_that_is_not_for_the_npu(exported, checkout):
    with pytest.raises(UserError, match="Ethos-U"):
        fvp.deploy_fvp(exported("int8-xnnpack"), checkout)
