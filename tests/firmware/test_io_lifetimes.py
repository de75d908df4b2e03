"""What trt_load guarantees about a program's inputs and outputs, on hand-mutated programs.

The memory plan reuses bytes once their tensor is dead, so an input is only guaranteed until its
last reader and an output from its writer on. The loader refuses a program where a kernel call
writes over an input before the last call that reads it, or over an output after the call that
writes it. The raw int8 values of a dequantized output are the int8 tensor the dequantize read:
when a later call reuses those bytes (the planner does so in the two-output programs), the runtime
copies them aside right after the dequantize runs, and reports the copy.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generic_programs import replay, sample_inputs  # noqa: E402

from tinyrps.devices import open_device  # noqa: E402


def edit(pte: Path, change, out: Path) -> Path:
    """A copy of the program after change(plan)."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    program = deserialize_pte_binary(pte.read_bytes())
    change(program.program.execution_plan[0])
    out.write_bytes(bytes(serialize_pte_binary(program, extract_delegate_segments=False)))
    return out


def calls(plan) -> list:
    return plan.chains[0].instructions


def op_name(plan, call) -> str:
    return plan.operators[call.instr_args.op_index].name.split("::")[-1]


def write_to(plan, call, place_like: int, offset: int):
    """A copy of the kernel call whose `out` is a new tensor like value `place_like`, planned at `offset`."""
    value = copy.deepcopy(plan.values[place_like])
    value.val.allocation_info.memory_offset_low = offset
    plan.values.append(value)
    moved = copy.deepcopy(call)
    moved.instr_args.args[-2:] = [len(plan.values) - 1] * 2
    return moved


def refusal(native, tool, program: Path) -> str:
    result = native.tool(tool, "info", program, check=False)
    assert result.returncode == 3, result.stdout
    return result.stderr.strip()


def test_a_call_writing_over_the_input_before_it_is_read_is_refused(m55_pte, native, native_tool, tmp_path):
    """The final dequantize, run first as well, writes the logits over the image before the quantize reads it."""
    def change(plan):
        calls(plan).insert(0, copy.deepcopy(calls(plan)[-1]))
    program = edit(m55_pte, change, tmp_path / "early.pte")
    assert refusal(native, native_tool, program) == \
        "error: bad tensor: input 0 is overwritten by kernel call 0 before it is read by kernel call 1"


def test_a_call_writing_over_the_second_input_is_refused(generic_pte, native, native_tool, tmp_path):
    """The quantize of input 0, pointed at the bytes of input 1, runs before input 1's quantize reads it."""
    def change(plan):
        second = plan.values[plan.inputs[1]].val.allocation_info.memory_offset_low
        first = calls(plan)[0]
        calls(plan)[0] = write_to(plan, first, first.instr_args.args[-2], second)
    program = edit(generic_pte("two-inputs", "cortex-m55"), change, tmp_path / "over-input.pte")
    assert refusal(native, native_tool, program) == \
        "error: bad tensor: input 1 is overwritten by kernel call 0 before it is read by kernel call 1"


def test_a_call_writing_over_an_output_after_it_is_written_is_refused(generic_pte, native, native_tool, tmp_path):
    """The layout copy once more at the end, over the bytes of the second output (a program that ends in a
    dequantize is not enough: what matters is what is written after each output)."""
    def change(plan):
        calls(plan).append(copy.deepcopy(next(c for c in calls(plan) if op_name(plan, c) == "_clone_dim_order")))
    program = edit(generic_pte("two-heads", "cortex-m55"), change, tmp_path / "after.pte")
    assert refusal(native, native_tool, program) == \
        "error: bad tensor: output 1 is overwritten by kernel call 9 after it is written by kernel call 8"


def kept_int8_program(m55_pte: Path, out: Path) -> Path:
    """The classifier with one more call after its final dequantize: the layout copy, writing over the int8
    tensor the dequantize read (not over the logits)."""
    def change(plan):
        dequantize = calls(plan)[-1]
        q = plan.values[dequantize.instr_args.args[0]].val
        clone = next(c for c in calls(plan) if op_name(plan, c) == "_clone_dim_order")
        out_value = clone.instr_args.args[-2]
        size = int(np.prod(plan.values[out_value].val.sizes))
        # end 4 bytes into the int8 values: the copy overlaps them and nothing else that is read
        calls(plan).append(write_to(plan, clone, out_value, q.allocation_info.memory_offset_low + 4 - size))
    return edit(m55_pte, change, out)


def test_raw_int8_values_reused_by_a_later_call_are_kept(m55_pte, native, native_tool, images, tmp_path):
    program = kept_int8_program(m55_pte, tmp_path / "reused.pte")
    info = json.loads(native.tool(native_tool, "info", program).stdout)
    assert len(info["calls"]) == 11 and info["outputs"][0]["int8"] is True
    int8, logits = native.run(native_tool, program, images[:30], tmp_path)
    original_int8, original_logits = native.run(native_tool, m55_pte, images[:30], tmp_path)
    assert np.array_equal(int8, original_int8) and np.array_equal(logits, original_logits)


@pytest.mark.slow
def test_a_runtime_without_int8_copies_refuses_a_program_that_needs_one(m55_pte, native, native_tool, tmp_path):
    """Built with TRT_INT8_COPIES=0 (a library whose program writes its outputs with its last call), the
    runtime refuses the program whose raw int8 values a later call reuses, which the full runtime keeps, and
    still loads the classifier."""
    from tinyrps.firmware import firmware_dir
    build = tmp_path / "build"
    for command in (["cmake", "-S", str(firmware_dir()), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     "-DCMAKE_C_FLAGS=-DTRT_INT8_COPIES=0"],
                    ["cmake", "--build", str(build), "--target", "tinyrps-native", "-j", "2"]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    program = kept_int8_program(m55_pte, tmp_path / "reused.pte")
    assert refusal(native, build / "native" / "tinyrps-native", program) == \
        "error: unsupported operator: an output's int8 values overwritten later (TRT_INT8_COPIES=0)"
    assert json.loads(native.tool(native_tool, "info", program).stdout)["outputs"][0]["int8"] is True
    assert json.loads(native.tool(build / "native" / "tinyrps-native", "info", m55_pte).stdout)["outputs"][0]["int8"]


@pytest.mark.slow
def test_raw_int8_values_reused_by_a_later_call_are_kept_on_the_board(m55_pte, generic_pte, firmware_elf_path,
                                                                      test_images, tmp_path):
    program = kept_int8_program(m55_pte, tmp_path / "reused.pte")
    images = test_images[0][:3]
    with open_device("mcu", m55_pte) as device:
        original = device.classify(images), device.last_int8
    with open_device("mcu", program) as device:
        assert np.array_equal(device.classify(images), original[0]) and np.array_equal(device.last_int8, original[1])
    # and in a program the planner made so: the first head's int8 values share bytes with the second head
    pte = generic_pte("two-heads", "cortex-m55")
    samples = sample_inputs(pte.read_bytes(), 2, seed=5)
    with open_device("mcu", pte, transport="batch") as device:
        result = device.run_batch(samples)
    assert np.array_equal(result.int8[0], replay(pte.read_bytes(), samples)[1][0])
