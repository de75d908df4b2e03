"""Reading what arm_executor_runner leaves behind: its log and its output tensor files.

The runner's log lines are in the exact formats of ExecuTorch's sources (see SEMIHOSTING_RUN in
conftest.py); the problem patterns are those of backends/arm/test/runner_utils.py:655 of the
executorch 1.5.1 package (`^[EF][: ]`, `Hard fault`, `Assertion`) and of the final grep in
backends/arm/scripts/run_fvp.sh (`^(F|E|\\[critical\\]|Hard fault.|Info: Simulation is stopping.
Reason: CPU time has been exceeded.)`), plus the failed method load that the runner logs at Info level.
"""
import struct

import numpy as np
import pytest

from tinyrps.deploy.runner_output import (cycle_counts, output_file, parse_runner_output, problems,
                                          read_output_tensor)
from tinyrps.infra.errors import UserError


def test_cycle_counts_are_read_from_the_performance_report(semihosting_log):
    counts = cycle_counts("\n".join(semihosting_log))
    assert counts == {"npu_cycles": 141522, "ethos_u_delegate_cpu_cycles": 183711, "cpu_cycles": 241003,
                      "inferences": 1}


def test_a_clean_run_has_no_problems(semihosting_log):
    assert problems("\n".join(semihosting_log)) == []


def test_cycle_count_missing_from_the_log_is_none():
    assert cycle_counts("I [executorch:arm_executor_runner.cpp:1 main()] nothing\n")["npu_cycles"] is None


@pytest.mark.parametrize("line", [
    # Error and Fatal log lines
    "E [executorch:arm_executor_runner.cpp:407 prepare_input_tensors()] input size (3000) and tensor size (3136) mismatch!",
    "F [executorch:arm_executor_runner.cpp:455 read_binary_file()] Could not open file x.bin (errno: 2) for reading, exiting!",
    "F [executorch:arm_executor_runner.cpp:741 runner_init()] Program loading failed @ 0x70000000: 0x23",
    # the failed method load is logged at Info level, and the runner carries on
    "I [executorch:arm_executor_runner.cpp:915 runner_init()] Loading of method forward failed with status 0x20",
    # a critical message of the FVP itself
    "[critical] Ethos-U: out of range access",
    # the CPU faulted, an assertion failed (newlib's wording too), the time limit was hit
    "Hard fault. irq=-13, pc=0x10000a3c, lr=0x10000b11, xpsr=0x61000003, sp=0x3007ff98",
    "Assertion failed: (ptr != nullptr)",
    'assertion "tensor.numel() == 3" failed: file "x.cpp", line 10, function: main',
    "Info: Simulation is stopping. Reason: CPU time has been exceeded.",
])
def test_every_problem_pattern_is_caught(line, semihosting_log):
    text = "\n".join(semihosting_log[:10] + [line] + semihosting_log[10:])
    assert problems(text) == [line]
    # as the FVP's console gives it, with carriage returns
    assert problems(text.replace("\n", "\r\n")) == [line]


def test_printed_outputs_of_the_baked_in_runner(semihosting_log):
    text = "\n".join(semihosting_log[:-4] + ["Output[0][0]: (float) -3.151000", "Output[0][1]: (float) 7.427000",
                                             "Output[0][2]: (float) -1.350500"])
    parsed = parse_runner_output(text)
    assert parsed["logits"] == [-3.151, 7.427, -1.3505]
    assert (parsed["npu_cycles"], parsed["cpu_cycles"]) == (141522, 241003)
    assert parsed["errors"] == []
    # an incomplete print is no result
    assert parse_runner_output("Output[0][0]: (float) 1.0\nOutput[0][2]: (float) 2.0\n")["logits"] == []


def test_output_tensor_file_is_read_as_float32(tmp_path):
    # print_outputs() (semihosting) fwrite()s the tensor's bytes to "<base>-<i>.bin"
    path = output_file(tmp_path, "out")
    assert path == tmp_path / "out-0.bin"
    path.write_bytes(struct.pack("<3f", -3.25, 7.5, -1.125))
    logits = read_output_tensor(path, 3, tmp_path / "fvp.log")
    assert logits.dtype == np.float32 and logits.tolist() == [-3.25, 7.5, -1.125]


def test_output_tensor_file_of_the_wrong_size_or_missing_is_refused(tmp_path):
    path = output_file(tmp_path, "out")
    with pytest.raises(UserError, match="wrote no out-0.bin"):
        read_output_tensor(path, 3, tmp_path / "fvp.log")
    path.write_bytes(struct.pack("<2f", 1.0, 2.0))
    with pytest.raises(UserError, match="8 bytes, expected 3 float32 values"):
        read_output_tensor(path, 3, tmp_path / "fvp.log")
