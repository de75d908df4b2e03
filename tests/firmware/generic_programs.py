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

from tinyrps.reference.cortex_m import NP_DTYPES


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
    """The network `name`, seeded, calibrated on 8 random samples, as a Cortex-M program for `core`
    (through tinyrps's own lowering, with int8 inputs or outputs where the network asks for them)."""
    from tinyrps.export.cortex_m import lower_to_edge

    network, shapes, int8_inputs, int8_outputs = PROGRAMS[name]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(sum(map(ord, name)))
        model = network().eval()
    example = tuple(torch.zeros(shape) for shape in shapes)
    calibration = calibration_inputs(name, 8, 1)
    examples = [tuple(torch.from_numpy(np.ascontiguousarray(a[n])) for a in calibration) for n in range(8)]
    edge = lower_to_edge(model, example, examples, core, int8_inputs=int8_inputs, int8_outputs=int8_outputs)
    return edge.to_executorch().buffer


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


def replay(program: bytes, samples: list) -> tuple:
    """(outputs, raw int8 values): per output [N, *shape], and per output written by a dequantize the int8 tensor
    that call read [N, *shape] (None for the others); samples: one array [N, *shape] per input."""
    from tinyrps.reference.cortex_m import replay_many_with_int8
    return replay_many_with_int8(program, samples)
