"""`export --io int8`: a Cortex-M program that takes and gives the quantized tensors.

One small network of two outputs is exported twice from the same weights and calibration, with float
and with integer inputs and outputs. The integer program must compute what the float one computes
bit for bit (the same int8 values reach the first layer, and each output is the int8 tensor the float
program dequantizes last), in ExecuTorch's Python operators and in the runtime; its descriptor must
carry each integer tensor's scale and zero point, the ones the float program's own quantize and
dequantize calls use.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from tinyrps.export import export_model
from tinyrps.export.cortex_m import quantize_inputs
from tinyrps.hardware import descriptor
from tinyrps.hardware.descriptor import Origin
from tinyrps.reference.cortex_m import NP_DTYPES, _program, _Replay, replay_many_with_int8

SHAPE = (1, 3, 12, 12)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
        self.a, self.b = nn.Linear(8 * 3 * 3, 5), nn.Linear(8 * 3 * 3, 20)

    def forward(self, x):
        h = self.body(x)
        return self.a(h), self.b(h)


def _inputs(count: int, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(SHAPE, generator=g),) for _ in range(count)]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """{"float": path, "int8": path}: the same network, weights and calibration, exported both ways."""
    out = tmp_path_factory.mktemp("integer-io")
    torch.manual_seed(11)
    model = TwoHeads().eval()
    origin = Origin(module="test:TwoHeads", calibration="8 N(0, 1) examples")
    made = {}
    for io in ("float", "int8"):
        made[io] = export_model(model, (torch.zeros(SHAPE),), _inputs(8, 1), "cortex-m55", out, origin,
                                name=f"two-heads-{io}", **({} if io == "float" else {"io": io}))
    return made


def _calls(pte, operator: str) -> list:
    """The scale and zero point arguments of every call of `operator` in the program, in chain order."""
    prog = _program(pte.read_bytes())
    found = []
    for call in prog.instructions:
        name, _ = prog.operators[call.op_index]
        if name == operator:
            found.append((prog.values[call.args[1]].val.double_val, prog.values[call.args[2]].val.int_val))
    return found


def test_the_descriptor_carries_each_integer_tensors_scale_and_zero_point(programs):
    floats = descriptor.read(programs["float"], programs["float"].read_bytes())
    ints = descriptor.read(programs["int8"], programs["int8"].read_bytes())
    assert all(t.dtype == "float32" and t.scale is None and t.zero_point is None for t in floats.inputs + floats.outputs)
    assert [t.dtype for t in ints.inputs + ints.outputs] == ["int8"] * 3
    assert [t.shape for t in ints.inputs + ints.outputs] == [t.shape for t in floats.inputs + floats.outputs]
    # the float program's first call quantizes the input, its last calls dequantize the outputs: with these
    (quantize,) = _calls(programs["float"], "cortex_m::quantize_per_tensor")
    dequantize = _calls(programs["float"], "cortex_m::dequantize_per_tensor")
    assert [(t.scale, t.zero_point) for t in ints.inputs] == [quantize]
    assert sorted((t.scale, t.zero_point) for t in ints.outputs) == sorted(dequantize)
    assert ints.info.quantization["io"] == "int8" and floats.info.quantization["io"] == "float"
    raw = json.loads(programs["int8"].with_suffix(".json").read_text())
    assert raw["descriptor_version"] == descriptor.DESCRIPTOR_VERSION == 4
    assert raw["inputs"][0]["scale"] == quantize[0] and raw["inputs"][0]["zero_point"] == quantize[1]
    # and the integer program no longer quantizes or dequantizes anything itself
    assert not _calls(programs["int8"], "cortex_m::quantize_per_tensor")
    assert not _calls(programs["int8"], "cortex_m::dequantize_per_tensor")


def test_the_same_int8_values_reach_the_first_layer(programs):
    """The float program's first call (its quantize) writes the very bytes the integer program is given."""
    float_prog, int_prog = _program(programs["float"].read_bytes()), _program(programs["int8"].read_bytes())
    for (x,) in _inputs(6, 5):
        replayed = _Replay(float_prog, record=True)
        replayed.run([x.numpy()])
        (q,) = quantize_inputs(programs["int8"].read_bytes(), (x,))
        given = _Replay(int_prog)
        given._write(int_prog.inputs[0], torch.from_numpy(np.ascontiguousarray(q.numpy())))
        assert replayed.layers[0][0] == "cortex_m::quantize_per_tensor"
        assert replayed.layers[0][1] == given._bytes(int_prog.inputs[0])


def _float_and_int8_inputs(programs, count: int):
    samples = _inputs(count, 9)
    floats = [np.stack([x.numpy() for (x,) in samples])]
    ints = [np.stack([np.ascontiguousarray(quantize_inputs(programs["int8"].read_bytes(), s)[0].numpy())
                      for s in samples])]
    return floats, ints


def test_integer_outputs_are_the_float_programs_raw_int8_in_the_reference(programs):
    floats, ints = _float_and_int8_inputs(programs, 16)
    _, raw = replay_many_with_int8(programs["float"].read_bytes(), floats)
    got, _ = replay_many_with_int8(programs["int8"].read_bytes(), ints)
    assert len(got) == len(raw) == 2
    for g, want in zip(got, raw):
        assert g.dtype == np.int8 and np.array_equal(g, want)
    assert any(len(np.unique(w)) > 3 for w in raw), "degenerate outputs would not test the arithmetic"


@pytest.mark.slow
def test_integer_outputs_are_the_float_programs_raw_int8_in_the_runtime(programs):
    """The runtime (the native build) runs both programs: the same int8 values out, bit for bit."""
    from tinyrps.devices import open_device
    floats, ints = _float_and_int8_inputs(programs, 16)
    with open_device("native", programs["float"]) as device:
        raw = device.run_batch(floats).int8
    with open_device("native", programs["int8"]) as device:
        got = device.run_batch(ints).outputs
    assert len(got) == len(raw) == 2
    for g, want in zip(got, raw):
        assert g.dtype == np.dtype(NP_DTYPES[1]) and np.array_equal(g, want)


@pytest.mark.slow
@pytest.mark.parametrize("board", ["mps3-an547", "mps2-an505", "mps2-an386"])
def test_integer_outputs_are_the_float_programs_raw_int8_on_every_board(tmp_path_factory, firmware_elf_path, board):
    """The same on the Cortex-M55, M33 and M4 boards, each program exported for the board's core."""
    from tinyrps.devices import open_device
    from tinyrps.firmware.boards import get_board
    core = get_board(board).core
    out = tmp_path_factory.mktemp(f"integer-io-{core}")
    torch.manual_seed(11)
    model = TwoHeads().eval()
    origin = Origin(module="test:TwoHeads", calibration="8 N(0, 1) examples")
    made = {io: export_model(model, (torch.zeros(SHAPE),), _inputs(8, 1), core, out, origin, name=f"two-heads-{io}",
                             **({} if io == "float" else {"io": io})) for io in ("float", "int8")}
    floats, ints = _float_and_int8_inputs(made, 8)
    with open_device("mcu", made["float"], board=board, transport="batch") as device:
        raw = device.run_batch(floats).int8
    with open_device("mcu", made["int8"], board=board, transport="batch") as device:
        got = device.run_batch(ints).outputs
    for g, want in zip(got, raw):
        assert g.dtype == np.int8 and np.array_equal(g, want)


def test_the_official_runtime_loads_the_integer_program_and_reads_its_quantization(programs):
    """ExecuTorch's own runtime (its Python bindings) loads the program, and its constant methods return the
    quantization the descriptor records (its forward needs the Cortex-M kernels, which those bindings lack for
    the float program as well)."""
    from executorch.runtime import Runtime
    program = Runtime.get().load_program(programs["int8"])
    assert {"forward", "input0_scale", "input0_zp", "output0_scale", "output1_zp"} <= set(program.method_names)
    described = descriptor.read(programs["int8"])
    assert program.load_method("input0_scale").execute([])[0] == described.inputs[0].scale
    assert program.load_method("input0_zp").execute([])[0] == described.inputs[0].zero_point
    assert program.load_method("output1_scale").execute([])[0] == described.outputs[1].scale


def test_only_the_cortex_m_targets_take_io():
    from tinyrps.export import check_options, get_target
    from tinyrps.infra.errors import UserError
    assert check_options(get_target("cortex-m4"), {"io": "int8", "system_config": None}) == {"io": "int8"}
    for target in ("ethos-u85-128", "fp32", "int8-xnnpack"):
        with pytest.raises(UserError, match="does not take --io"):
            check_options(get_target(target), {"io": "int8"})
