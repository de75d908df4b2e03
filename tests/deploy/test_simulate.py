"""FVP command lines against ExecuTorch 1.5's: backends/arm/scripts/run_fvp.sh (the runner with the
program baked in) and backends/arm/test/runner_utils.py:566-647 of the executorch 1.5.1 package
(the semihosting runner), without `ethosu.extra_args=--fast`, which would spoil the NPU timing."""
from pathlib import Path

import pytest

from tinyrps.deploy.simulate import (SEMIHOSTING_CMD_LINE_LIMIT, fvp_command, refuse_unsafe_folder,
                                     semihosting_cmd_line, semihosting_parameters)
from tinyrps.infra.errors import UserError


def parameters(cmd):
    return [cmd[i + 1] for i, a in enumerate(cmd) if a == "-C"]


def test_corstone_320_command_is_headless_unbuffered_and_bounded(tmp_path):
    cmd = fvp_command(tmp_path / "FVP_Corstone_SSE-320", "ethos-u85-256", tmp_path / "runner.elf", 120)
    assert cmd[0] == str(tmp_path / "FVP_Corstone_SSE-320")
    assert sorted(parameters(cmd)) == sorted([
        "mps4_board.subsystem.ethosu.num_macs=256", "mps4_board.visualisation.disable-visualisation=1",
        "vis_hdlcd.disable_visualisation=1", "mps4_board.telnetterminal0.start_telnet=0",
        "mps4_board.uart0.out_file=-", "mps4_board.uart0.unbuffered_output=1",
        "mps4_board.uart0.shutdown_on_eot=1"])
    assert cmd[-4:] == ["-a", str(tmp_path / "runner.elf"), "--timelimit", "120"]


def test_corstone_300_command_for_the_ethos_u55(tmp_path):
    cmd = fvp_command(Path("FVP_Corstone_SSE-300_Ethos-U55"), "ethos-u55-128", Path("r.elf"), 60)
    assert sorted(parameters(cmd)) == sorted([
        "ethosu.num_macs=128", "mps3_board.visualisation.disable-visualisation=1",
        "mps3_board.telnetterminal0.start_telnet=0", "mps3_board.uart0.out_file=-",
        "mps3_board.uart0.shutdown_on_eot=1"])


def test_semihosting_command_for_corstone_320(tmp_path):
    line = semihosting_cmd_line("m.pte", "x.bin", "out")
    assert line == "executor_runner -m m.pte -o out -i x.bin"
    cmd = fvp_command(Path("FVP_Corstone_SSE-320"), "ethos-u85-128", Path("r.elf"), 600,
                      semihosting_parameters("ethos-u85-128", tmp_path, line))
    params = parameters(cmd)
    for expected in ("mps4_board.subsystem.ethosu.num_macs=128",
                     "mps4_board.uart0.unbuffered_output=1",
                     "mps4_board.subsystem.cpu0.semihosting-enable=1",
                     "mps4_board.subsystem.cpu0.semihosting-stack_base=0",
                     "mps4_board.subsystem.cpu0.semihosting-heap_limit=0",
                     f"mps4_board.subsystem.cpu0.semihosting-cwd={tmp_path}",
                     "mps4_board.subsystem.cpu0.semihosting-cmd_line='executor_runner -m m.pte -o out -i x.bin'"):
        assert expected in params
    assert not any("extra_args" in p or "--fast" in p for p in cmd)


def test_semihosting_command_for_corstone_300(tmp_path):
    params = semihosting_parameters("ethos-u55-128", tmp_path, "executor_runner -m m.pte -o out -i x.bin")
    assert params == ["cpu0.semihosting-enable=1", "cpu0.semihosting-stack_base=0", "cpu0.semihosting-heap_limit=0",
                      f"cpu0.semihosting-cwd={tmp_path}",
                      "cpu0.semihosting-cmd_line='executor_runner -m m.pte -o out -i x.bin'"]


def test_semihosting_command_line_is_limited_to_256_characters():
    fixed = len("executor_runner -m  -o out -i x.bin")
    at_limit = "p" * (SEMIHOSTING_CMD_LINE_LIMIT - fixed)
    assert SEMIHOSTING_CMD_LINE_LIMIT == 256
    assert len(semihosting_cmd_line(at_limit, "x.bin", "out")) == 256
    with pytest.raises(UserError, match="257 characters, over the FVP's 256-character semihosting limit"):
        semihosting_cmd_line(at_limit + "p", "x.bin", "out")


@pytest.mark.parametrize("name", ["with space", "quote'd", 'double"quote'])
def test_semihosting_folder_with_a_space_or_quote_is_refused(tmp_path, name):
    with pytest.raises(UserError, match="TMPDIR"):
        refuse_unsafe_folder(tmp_path / name)
    refuse_unsafe_folder(tmp_path / "plain")
