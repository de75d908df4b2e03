"""Each operator of the C runtime against ExecuTorch's Python reference.

Layer by layer on the TinyRPS programs (the output bytes of every kernel call), and
end to end on small models built to reach the other branches of the kernels: strides,
rectangular kernels and padding, grouped and depthwise-multiplier convolutions, a conv
without bias, clamped activations, pooling with padding, channel counts that are not
multiples of four, and both linear forms (MVE kernel sums on M55, bias on M4/M33).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from tinyrps.data import make_split
from tinyrps.export import cortex_m
from tinyrps.firmware.operators import runtime_operators
from tinyrps.network.quantization import image_examples
from tinyrps.reference import cortex_m as reference


def small_models() -> dict:
    return {
        "strided": lambda: nn.Sequential(
            nn.Conv2d(1, 6, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(6, 10, 3), nn.ReLU6(),
            nn.MaxPool2d(3, stride=2, padding=1), nn.Flatten(), nn.Linear(10 * 6 * 6, 7)),
        "grouped": lambda: nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 12, 3, padding=1, groups=2), nn.ReLU(),
            nn.Conv2d(12, 24, 3, stride=2, padding=1, groups=12, bias=False),
            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(24 * 7 * 7, 5), nn.ReLU(), nn.Linear(5, 3)),
        "rectangular": lambda: nn.Sequential(
            nn.Conv2d(1, 5, (3, 5), stride=(1, 2), padding=(1, 2)), nn.Conv2d(5, 9, 1),
            nn.MaxPool2d((2, 3), stride=(2, 1)), nn.Flatten(), nn.Linear(9 * 14 * 12, 16)),
    }


CASES = [("strided", "cortex-m55"), ("grouped", "cortex-m55"), ("rectangular", "cortex-m55"),
         ("grouped", "cortex-m4"), ("strided", "cortex-m33")]


@pytest.fixture(scope="module")
def small_images() -> np.ndarray:
    return make_split("test", 4, 5)[0]


@pytest.mark.slow
@pytest.mark.parametrize("model_name,core", CASES)
def test_small_model_matches_the_edge_program_and_its_replay(model_name, core, small_images, native, native_tool,
                                                             tmp_path):
    torch.manual_seed(sum(map(ord, model_name + core)))
    model = small_models()[model_name]().eval()
    lowered = cortex_m.lower_images(model, small_images, core)
    expected = np.concatenate([out.numpy() for example in image_examples(small_images)
                               for out in cortex_m.edge_outputs(lowered.edge_program, example)])
    program = lowered.program
    pte = tmp_path / f"{model_name}.pte"
    pte.write_bytes(program)
    assert set(cortex_m.program_operators(program)) <= {op.qualified for op in runtime_operators()}

    (replayed,) = reference.replay_many(pte, reference.rps_inputs(small_images))
    native_int8, native_logits = native.run(native_tool, pte, small_images, tmp_path)
    np.testing.assert_array_equal(replayed.reshape(expected.shape), expected)
    np.testing.assert_array_equal(native_logits, expected)
    np.testing.assert_array_equal(native_int8, reference.reference_int8(pte, small_images))
    assert len(np.unique(expected)) > 3, "degenerate outputs would not test the arithmetic"


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4"])
def test_every_layer_output_is_bit_exact(target, exported, images, native, native_tool, tmp_path):
    pte = exported(target)
    sample = images[::60][:5]
    # a convolution whose max pool is fused into it writes no output of its own: its pool's is compared
    assert native.layer_mismatches(native_tool, pte, sample, tmp_path, reference.replay_layers) == []
