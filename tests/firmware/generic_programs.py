"""Cortex-M programs that are not image classifiers, and ExecuTorch's Python reference for any program.

`export(name, core)` lowers one of the small networks below with the Cortex-M flow of
tinyrps.export.cortex_m (generalised to any number and shape of inputs, and to int8 inputs
and outputs with ExecuTorch's own QuantizeInputs / QuantizeOutputs passes), built only from the
operators the runtime has: quantize/dequantize, conv2d, depthwise conv2d, max-pool,
linear and the layout copy. `replay(program, inputs)` runs a serialized program with the
Cortex-M backend's Python operators, on the program's own memory plan, and returns every
output and, per output written by a dequantize, the int8 tensor that call read when it ran.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

# ScalarType codes -> numpy / torch dtypes
NP_DTYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 6: np.float32, 7: np.float64,
             11: np.bool_}
TORCH_DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 6: torch.float32,
                7: torch.float64, 11: torch.bool}


# ---------------------------------------------------------------------------------------------
# The networks
# ---------------------------------------------------------------------------------------------

class TwoHeads(nn.Module):
    """float32 [1, 3, 16, 16] (12 KiB: several link frames) -> 5 and 40 values (two outputs, one above 16)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
        self.a, self.b = nn.Linear(8 * 4 * 4, 5), nn.Linear(8 * 4 * 4, 40)

    def forward(self, x):
        h = self.body(x)
        return self.a(h), self.b(h)


class TwoInputs(nn.Module):
    """An image [1, 1, 8, 8] and a vector [1, 12] -> one output from each."""

    def __init__(self):
        super().__init__()
        self.image = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                   nn.Linear(4 * 4 * 4, 6))
        self.vector = nn.Sequential(nn.Linear(12, 10), nn.ReLU(), nn.Linear(10, 7))

    def forward(self, image, vector):
        return self.image(image), self.vector(vector)


class AutoEncoder(nn.Module):
    """640 in, 640 out (2.5 KiB each way: input and output both span several frames)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(640, 32), nn.ReLU(), nn.Linear(32, 8), nn.ReLU(), nn.Linear(8, 32),
                                 nn.ReLU(), nn.Linear(32, 640))

    def forward(self, x):
        return self.net(x)


class MobileNetV1(nn.Module):
    """MobileNetV1 with width 0.25 at 96x96x3 (the shape of MLPerf Tiny's visual wake words network: a
    138,240-byte memory plan, 31 kernel calls), its global average pool a 3x3 max-pool (the runtime has no
    average pool yet) and 16 classes (two would leave too few distinct outputs to test the arithmetic)."""

    def __init__(self, classes: int = 16):
        super().__init__()
        widths = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2)] + \
            [(128, 128, 1)] * 5 + [(128, 256, 2), (256, 256, 1)]
        layers = [nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU()]
        for cin, cout, stride in widths:
            layers += [nn.Conv2d(cin, cin, 3, stride, 1, groups=cin), nn.BatchNorm2d(cin), nn.ReLU(),
                       nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU()]
        self.net = nn.Sequential(*layers, nn.MaxPool2d(3), nn.Flatten(), nn.Linear(256, classes))

    def forward(self, x):
        return self.net(x)


# name -> (network, input shapes, quantized inputs, quantized outputs)
PROGRAMS = {
    "two-heads": (TwoHeads, [(1, 3, 16, 16)], (), ()),
    "two-inputs": (TwoInputs, [(1, 1, 8, 8), (1, 12)], (), ()),
    # int8 in and out for the vector: its first call is a linear, its last one a linear, not a dequantize
    "int8-io": (TwoInputs, [(1, 1, 8, 8), (1, 12)], (1,), (1,)),
    "autoencoder": (AutoEncoder, [(1, 640)], (), ()),
    "mobilenet-v1-0.25": (MobileNetV1, [(1, 3, 96, 96)], (), ()),     # 108 KiB of input: 109 frames
}


def calibration_inputs(name: str, count: int, seed: int) -> list:
    """`count` random float samples in [0, 1] of each input of network `name` ([N, *shape])."""
    rng = np.random.default_rng(seed)
    return [rng.random((count, *shape), dtype=np.float32) for shape in PROGRAMS[name][1]]


def sample_inputs(program: bytes, count: int, seed: int) -> list:
    """`count` random samples of each input of a program, in its dtype: floats in [0, 1], int8 anywhere."""
    rng = np.random.default_rng(seed)
    samples = []
    for dtype, shape, _ in program_io(program)[0]:
        if dtype == np.int8:
            samples.append(rng.integers(-128, 128, (count, *shape), dtype=np.int8))
        else:
            samples.append(rng.random((count, *shape), dtype=np.float32).astype(dtype))
    return samples


def export(name: str, core: str) -> bytes:
    """The network `name`, seeded, calibrated on 8 random samples, as a Cortex-M program for `core`."""
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    network, shapes, int8_inputs, int8_outputs = PROGRAMS[name]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(sum(map(ord, name)))
        model = network().eval().to(memory_format=torch.channels_last)

    def as_example(arrays):
        return tuple(_channels_last(torch.from_numpy(np.ascontiguousarray(a))) for a in arrays)

    example = as_example([np.zeros(shape, np.float32) for shape in shapes])
    prepared = prepare_pt2e(torch.export.export(model, example).module(check_guards=False), CortexMQuantizer())
    calibration = calibration_inputs(name, 8, 1)
    with torch.no_grad():
        for n in range(8):
            prepared(*as_example([a[n] for a in calibration]))
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(torch.export.export(converted, example),
                                       compile_config=cortex_m_edge_compile_config())
    if int8_inputs or int8_outputs:
        edge = edge.transform([QuantizeInputs(edge, list(int8_inputs)), QuantizeOutputs(edge, list(int8_outputs))])
    config = CortexMTargetConfig.from_target_string(core)
    edge._edge_programs["forward"] = CortexMPassManager(edge.exported_program(), target_config=config).transform()
    return edge.to_executorch().buffer


def _channels_last(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t


# ---------------------------------------------------------------------------------------------
# The reference
# ---------------------------------------------------------------------------------------------

def program_io(program: bytes) -> tuple:
    """([(dtype, shape, dim_order)] of the inputs, the same of the outputs), from the serialized program."""
    plan = _plan(program)

    def describe(index):
        t = plan.values[index].val
        return np.dtype(NP_DTYPES[t.scalar_type]), tuple(t.sizes), tuple(t.dim_order)
    return [describe(i) for i in plan.inputs], [describe(i) for i in plan.outputs]


def _plan(program: bytes):
    from executorch.exir._serialize._program import deserialize_pte_binary
    return deserialize_pte_binary(program).program.execution_plan[0]


def _register_operators() -> None:
    import executorch.backends.cortex_m.passes  # noqa: F401  (the passes first: a circular import otherwise)
    import executorch.backends.cortex_m.ops.operators  # noqa: F401
    import executorch.exir.passes.dim_order_ops_registry  # noqa: F401


def replay(program: bytes, samples: list) -> tuple:
    """(outputs, raw int8 values): per output [N, *shape], and per output written by a dequantize the int8 tensor
    that call read [N, *shape] (None for the others); samples: one array [N, *shape] per input."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    _register_operators()
    pte = deserialize_pte_binary(program).program
    replayer = _Replay(pte)
    outputs, int8 = [], []
    with torch.no_grad():
        for n in range(len(samples[0])):
            o, q = replayer.run([a[n] for a in samples])
            outputs.append(o)
            int8.append(q)
    count = len(outputs)
    stacked = [np.stack([outputs[n][k] for n in range(count)]) for k in range(len(outputs[0]))]
    stacked_q = [None if int8[0][k] is None else np.stack([int8[n][k] for n in range(count)])
                 for k in range(len(int8[0]))]
    return stacked, stacked_q


class _Replay:
    """One inference: an arena per memory id, tensors as strided views into it."""

    def __init__(self, program):
        plan = program.execution_plan[0]
        self.values = plan.values
        self.inputs, self.outputs = list(plan.inputs), list(plan.outputs)
        self.operators = [(op.name, op.overload) for op in plan.operators]
        self.calls = [ins.instr_args for c in plan.chains for ins in c.instructions]
        self.constants = [bytes(b.storage) for b in program.constant_buffer]
        self.memory_sizes = list(plan.non_const_buffer_sizes)

    def run(self, sample: list) -> tuple:
        self.arenas = [np.zeros(max(int(n), 1), np.uint8) for n in self.memory_sizes]
        for index, array in zip(self.inputs, sample):
            self._view(self.values[index].val)[...] = array
        read_by = {}          # out value index of a dequantize -> the int8 values it read
        for call in self.calls:
            self._execute(call, read_by)
        outputs = [self._view(self.values[i].val).copy() for i in self.outputs]
        return outputs, [read_by.get(i) for i in self.outputs]

    def _execute(self, call, read_by: dict) -> None:
        name, overload = self.operators[call.op_index]
        namespace, op_name = name.split("::")
        packet = getattr(getattr(torch.ops, namespace), op_name)
        schema = getattr(packet, overload or "default")._schema
        named = {a.name: (a, call.args[i]) for i, a in enumerate(schema.arguments)}
        out_index = named.pop("out")[1]
        positional, keywords = [], {}
        for arg_name, (arg, value_index) in named.items():
            value = self._value(value_index)
            if str(arg.type) == "ScalarType" and isinstance(value, int):
                value = TORCH_DTYPES[value]
            if arg.kwarg_only:
                keywords[arg_name] = value
            else:
                positional.append(value)
        if op_name == "dequantize_per_tensor":
            read_by[out_index] = positional[0].numpy().astype(np.int8).copy()
        result = packet.default(*positional, **keywords)
        view = self._view(self.values[out_index].val)
        view[...] = result.reshape(view.shape).numpy().astype(view.dtype)

    def _value(self, index: int):
        val = self.values[index].val
        kind = type(val).__name__
        if kind == "Tensor":
            tensor = torch.from_numpy(self._view(val).copy())
            return tensor.contiguous(memory_format=torch.channels_last) \
                if list(val.dim_order) == [0, 2, 3, 1] else tensor
        if kind in ("Int", "Double", "Bool"):
            return getattr(val, f"{kind.lower()}_val")
        if kind == "Null":
            return None
        if kind == "IntList":
            return [self.values[i].val.int_val for i in val.items]
        raise ValueError(f"a value of kind {kind}")

    def _view(self, t) -> np.ndarray:
        """A numpy view of a serialized tensor in logical order, strided by its dim_order."""
        dtype = np.dtype(NP_DTYPES[t.scalar_type])
        sizes, strides, step = list(t.sizes), [0] * len(t.sizes), dtype.itemsize
        for dim in reversed(list(t.dim_order)):
            strides[dim] = step
            step *= sizes[dim]
        if t.data_buffer_idx > 0:
            raw = np.frombuffer(self.constants[t.data_buffer_idx], np.uint8)
        else:
            alloc = t.allocation_info
            raw = self.arenas[alloc.memory_id][alloc.memory_offset_low + (alloc.memory_offset_high << 32):]
        return np.lib.stride_tricks.as_strided(raw[:step].view(dtype), shape=sizes, strides=strides,
                                               writeable=t.data_buffer_idx == 0)
