"""Any program's inputs and outputs, end to end: programs that are not image classifiers (two inputs, two
outputs, int8 inputs and outputs, a last call that is not a dequantize, inputs of other shapes than 28x28,
inputs and outputs larger than one link frame, outputs of more than 16 values) on the `native` device and
on the firmware of all three boards, over the serial link and the batch, bit-exact with ExecuTorch's
Python operators replaying each program (generic_programs.replay). And the runtime's table limits."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generic_programs import PROGRAMS, program_io, replay, sample_inputs  # noqa: E402

from tinyrps.devices import open_device  # noqa: E402
from tinyrps.infra.errors import UserError  # noqa: E402

CORES = {"cortex-m55": "mps3-an547", "cortex-m33": "mps2-an505", "cortex-m4": "mps2-an386"}


def assert_bit_exact(result, program: bytes, samples: list) -> None:
    expected, expected_int8 = replay(program, samples)
    assert len(result.outputs) == len(expected) == len(result.int8)
    for k, (got, want) in enumerate(zip(result.outputs, expected)):
        assert got.dtype == want.dtype and got.shape == want.shape, k
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), f"output {k} differs"
    for k, (got, want) in enumerate(zip(result.int8, expected_int8)):
        assert (got is None) == (want is None), k
        if want is not None:
            assert got.dtype == np.int8 and np.array_equal(got, want), f"the raw int8 values of output {k} differ"
    assert any(len(np.unique(o)) > 3 for o in expected), "degenerate outputs would not test the arithmetic"


# ---- native ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("core", ["cortex-m55", "cortex-m4"])
def test_native_runs_any_program_bit_exact(generic_pte, name, core):
    pte = generic_pte(name, core)
    program = pte.read_bytes()
    samples = sample_inputs(program, 6, seed=7)
    with open_device("native", pte) as device:
        inputs, outputs = program_io(program)
        assert [(s.dtype, s.shape, s.dim_order) for s in device.inputs] == inputs
        assert [(s.dtype, s.shape, s.dim_order) for s in device.outputs] == outputs
        result = device.run_batch(samples)
        assert_bit_exact(result, program, samples)
        one = device.run([a[2] for a in samples])
        assert all(np.array_equal(a.view(np.uint8), b[2].view(np.uint8)) for a, b in zip(one.outputs, result.outputs))


def test_the_program_shapes_the_tests_claim(generic_pte):
    """What the programs exercise, read from them: other shapes, two inputs, int8 in and out, a last call that
    is not a dequantize, more than 16 output values, tensors above one link frame (1024 bytes)."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    heads, two, int8_io, auto, mobilenet = (program_io(generic_pte(n, "cortex-m55").read_bytes()) for n in PROGRAMS)
    assert heads[0] == [(np.float32, (1, 3, 16, 16), (0, 2, 3, 1))] and [o[1] for o in heads[1]] == [(1, 5), (1, 40)]
    assert len(two[0]) == 2 and len(two[1]) == 2
    assert [i[0] for i in int8_io[0]] == [np.float32, np.int8] and [o[0] for o in int8_io[1]] == [np.float32, np.int8]
    plan = deserialize_pte_binary(generic_pte("int8-io", "cortex-m55").read_bytes()).program.execution_plan[0]
    last = plan.operators[plan.chains[0].instructions[-1].instr_args.op_index].name
    assert last == "cortex_m::quantized_linear"
    assert auto[0][0][1] == (1, 640) and auto[1][0][1] == (1, 640)       # 2560 bytes each way
    assert mobilenet[0] == [(np.float32, (1, 3, 96, 96), (0, 2, 3, 1))]
    plan = deserialize_pte_binary(generic_pte("mobilenet-v1-0.25", "cortex-m55").read_bytes()).program.execution_plan[0]
    assert list(plan.non_const_buffer_sizes) == [0, 138240] and len(plan.chains[0].instructions) == 31


def test_native_runs_any_program_under_the_sanitizers(generic_pte, asan_build, native_tool, tmp_path):
    from tinyrps.firmware.tensors import samples_file_bytes, spec_from_json
    for name in PROGRAMS:
        pte = generic_pte(name, "cortex-m55")
        info = json.loads(_tool(native_tool, "info", pte))
        specs = [spec_from_json(e) for e in info["inputs"]]
        samples = tmp_path / f"{name}.bin"
        samples.write_bytes(samples_file_bytes(specs, sample_inputs(pte.read_bytes(), 3, seed=2)))
        results = {}
        for label, tool in (("plain", native_tool), ("asan", asan_build.tool("tinyrps-native")),
                            ("asan-dsp", asan_build.tool("tinyrps-native-dsp"))):
            _tool(tool, "run", pte, samples, tmp_path / f"{name}-{label}.out")
            results[label] = (tmp_path / f"{name}-{label}.out").read_bytes()
        assert results["plain"] == results["asan"] == results["asan-dsp"], name


def _tool(tool, *args) -> str:
    import subprocess
    result = subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_wrong_inputs_are_one_line(generic_pte):
    pte = generic_pte("two-inputs", "cortex-m55")
    samples = sample_inputs(pte.read_bytes(), 2, seed=1)
    with open_device("native", pte) as device:
        cases = {
            "takes 2 inputs (float32 [1, 1, 8, 8], float32 [1, 12]); 1 was given": [samples[0]],
            "input 1 of two-inputs-cortex-m55.pte is float32 [N, 1, 12]; the array given is float64 [2, 1, 12]":
                [samples[0], samples[1].astype(np.float64)],
            "input 0 of two-inputs-cortex-m55.pte is float32 [N, 1, 1, 8, 8]; the array given is float32 [2, 8, 8]":
                [samples[0][:, 0, 0], samples[1]],
            "hold 2 and 1 samples": [samples[0], samples[1][:1]],
        }
        for message, given in cases.items():
            with pytest.raises(UserError) as raised:
                device.run_batch(given)
            assert message in str(raised.value) and "\n" not in str(raised.value)
        with pytest.raises(UserError, match=r"input 0 .* is float32 \[1, 1, 8, 8\]; the array given is float32 "
                                            r"\[2, 1, 1, 8, 8\]"):
            device.run(samples)
        with pytest.raises(UserError, match="not an image classifier .*run it with run"):
            device.classify(np.zeros((1, 28, 28), np.uint8))


def test_devices_without_tensors_say_which_do(exported, trained_run):
    with open_device("eager", trained_run / "model.pt") as device:
        with pytest.raises(UserError, match="--device native or --device mcu"):
            device.run([np.zeros((1, 1, 28, 28), np.float32)])
    for name in ("npu", "npu-ref"):       # an Ethos-U program's tensors: the NPU model and the TOSA reference
        with open_device(name, exported("ethos-u85-128")) as device:
            (logits,) = device.run([np.zeros((1, 1, 28, 28), np.float32)]).outputs
            assert logits.shape == (1, 3)
    with open_device("executorch", exported("fp32")) as device:      # the host runtime takes any program's tensors
        (logits,) = device.run([np.zeros((1, 1, 28, 28), np.float32)]).outputs
        assert logits.shape == (1, 3)


# ---- the boards -------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("core", list(CORES))
def test_every_board_runs_any_program_bit_exact(generic_pte, firmware_elf_path, core):
    """Over the serial link (inputs and outputs in pieces of one frame) and the batch, on each core's board."""
    for name in PROGRAMS:
        pte = generic_pte(name, core)
        program = pte.read_bytes()
        samples = sample_inputs(program, 4, seed=11)
        with open_device("mcu", pte, board=CORES[core]) as serial:
            assert [(s.dtype, s.shape, s.dim_order) for s in serial.inputs] == program_io(program)[0]
            by_serial = serial.run_batch([a[:2] for a in samples])
            assert serial.last_stats()["transport"] == "serial"
            assert_bit_exact(by_serial, program, [a[:2] for a in samples])
        with open_device("mcu", pte, board=CORES[core], transport="batch") as batch:
            by_batch = batch.run_batch(samples)
            assert batch.last_stats()["transport"] == "batch"
            assert_bit_exact(by_batch, program, samples)
        # the same firmware, the same counter: serial and batch count the same instructions
        assert by_batch.instructions[:2].tolist() == by_serial.instructions.tolist(), name


@pytest.mark.slow
def test_a_board_refuses_wrong_inputs_in_one_line(generic_pte, firmware_elf_path):
    pte = generic_pte("two-heads", "cortex-m55")
    with open_device("mcu", pte) as device:
        with pytest.raises(UserError) as raised:
            device.run([np.zeros((1, 16, 16, 3), np.float32)])
        assert "input 0 of two-heads-cortex-m55.pte is float32 [1, 3, 16, 16]" in str(raised.value)
        assert "\n" not in str(raised.value)


# ---- limits ------------------------------------------------------------------------------------

def longer_program(pte: Path, extra_calls: int, out: Path) -> Path:
    """The program with `extra_calls` more copies of its first max-pool after its last call: they write only
    bytes no output or later read needs, so the outputs stay the same."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    program = deserialize_pte_binary(pte.read_bytes())
    plan = program.program.execution_plan[0]
    chain = plan.chains[0].instructions
    pool = next(ins for ins in chain if plan.operators[ins.instr_args.op_index].name.endswith("max_pool2d"))
    chain.extend(copy.deepcopy(pool) for _ in range(extra_calls))
    out.write_bytes(bytes(serialize_pte_binary(program, extract_delegate_segments=False)))
    return out


def more_outputs_program(pte: Path, outputs: int, out: Path) -> Path:
    """The program listing its output `outputs` times."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    program = deserialize_pte_binary(pte.read_bytes())
    plan = program.program.execution_plan[0]
    plan.outputs = [plan.outputs[0]] * outputs
    out.write_bytes(bytes(serialize_pte_binary(program, extract_delegate_segments=False)))
    return out


@pytest.fixture(scope="module")
def larger_limits_build():
    from tinyrps.firmware import build_firmware
    return build_firmware("native", limits={"TRT_MAX_KERNEL_CALLS": 256, "TRT_MAX_OUTPUTS": 32})


def test_a_program_over_a_limit_is_refused_and_a_larger_build_takes_it(m55_pte, native, native_tool,
                                                                       larger_limits_build, images, tmp_path):
    from tinyrps.firmware import c_facts
    assert c_facts.limits()["TRT_MAX_KERNEL_CALLS"] == 128 and c_facts.limits()["TRT_MAX_OUTPUTS"] == 16
    longer = longer_program(m55_pte, 125, tmp_path / "longer.pte")          # 135 kernel calls
    wider = more_outputs_program(m55_pte, 17, tmp_path / "wider.pte")
    for program, detail in ((longer, "over runtime limit: kernel calls above TRT_MAX_KERNEL_CALLS: 135"),
                            (wider, "over runtime limit: outputs above TRT_MAX_OUTPUTS: 17")):
        result = native.tool(native_tool, "info", program, check=False)
        assert result.returncode == 3 and result.stderr.strip() == f"error: {detail}", result.stderr
    larger = larger_limits_build.tool("tinyrps-native")
    info = json.loads(native.tool(larger, "info", longer).stdout)
    assert len(info["calls"]) == 135 and info["limits"]["TRT_MAX_KERNEL_CALLS"] == 256
    assert json.loads(native.tool(larger, "info", m55_pte).stdout)["program_storage_bytes"] > \
        json.loads(native.tool(native_tool, "info", m55_pte).stdout)["program_storage_bytes"]
    # the longer program computes what the original does
    int8, logits = native.run(larger, longer, images[:20], tmp_path)
    original_int8, original_logits = native.run(native_tool, m55_pte, images[:20], tmp_path)
    assert np.array_equal(int8, original_int8) and np.array_equal(logits, original_logits)
    assert len(json.loads(native.tool(larger, "info", wider).stdout)["outputs"]) == 17


@pytest.mark.slow
def test_a_board_names_the_limit_a_program_is_over(m55_pte, firmware_elf_path, tmp_path):
    longer = longer_program(m55_pte, 125, tmp_path / "longer.pte")
    with pytest.raises(UserError) as raised:
        open_device("mcu", longer)
    message = str(raised.value)
    assert "kernel calls above TRT_MAX_KERNEL_CALLS: 135" in message and "\n" not in message
