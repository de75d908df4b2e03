"""A dilated convolution in a Cortex-M program: the Python reference computes it (torch has no integer dilated
convolution; tinyrps.reference.cortex_m supplies it, exact), so `tinyrps export` checks and writes the program,
and the firmware's runtime runs it bit for bit like the reference."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tinyrps.reference import cortex_m as reference

MODEL = '''
from torch import nn


class Dilated(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, dilation=2, padding=2)
        self.depthwise = nn.Conv2d(8, 8, 3, dilation=(2, 3), padding=(2, 3), groups=8)

    def forward(self, x):
        return self.depthwise(self.conv(x))
'''


def stuffed(weight: torch.Tensor, dilation: tuple, dims: tuple) -> torch.Tensor:
    """`weight` with dilation - 1 zeros between its taps along the spatial `dims`: the same convolution undilated,
    which torch computes on integers itself."""
    kh, kw = weight.shape[dims[0]], weight.shape[dims[1]]
    shape = list(weight.shape)
    shape[dims[0]], shape[dims[1]] = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    out = torch.zeros(shape, dtype=weight.dtype)
    index = [slice(None)] * weight.dim()
    index[dims[0]], index[dims[1]] = slice(None, None, dilation[0]), slice(None, None, dilation[1])
    out[tuple(index)] = weight
    return out


def test_the_reference_computes_dilated_integer_convolutions_as_their_undilated_twins():
    reference.register_operators()
    g = torch.Generator().manual_seed(5)
    x = torch.randint(-128, 128, (2, 6, 11, 10), dtype=torch.int8, generator=g).contiguous(
        memory_format=torch.channels_last)
    requantize = (torch.randint(1 << 29, 1 << 30, (6,), dtype=torch.int32, generator=g),
                  torch.randint(-12, -6, (6,), dtype=torch.int32, generator=g))
    scratch = torch.empty(0, dtype=torch.int8)
    # quantized_conv2d: OHWI weights, groups 2
    w = torch.randint(-127, 128, (6, 3, 3, 3), dtype=torch.int8, generator=g)
    b = torch.randint(-5000, 5000, (6,), dtype=torch.int32, generator=g)
    conv = torch.ops.cortex_m.quantized_conv2d
    got = conv(x, w, b, [1, 2], [2, 1], [2, 3], 7, -3, *requantize, -128, 127, scratch)
    want = conv(x, stuffed(w, (2, 3), (1, 2)), b, [1, 2], [2, 1], [1, 1], 7, -3, *requantize, -128, 127, scratch)
    assert got.dtype == torch.int8 and torch.equal(got, want)
    assert len(torch.unique(got)) > 20      # not a tensor clamped flat
    # quantized_depthwise_conv2d: 1HWO weights
    w = torch.randint(-127, 128, (1, 3, 3, 6), dtype=torch.int8, generator=g)
    depthwise = torch.ops.cortex_m.quantized_depthwise_conv2d
    got = depthwise(x, w, b, [1, 1], [3, 2], [3, 2], 1, 7, -3, *requantize, -128, 127, scratch)
    want = depthwise(x, stuffed(w, (3, 2), (1, 2)), b, [1, 1], [3, 2], [1, 1], 1, 7, -3, *requantize, -128, 127,
                     scratch)
    assert torch.equal(got, want)


def test_an_integer_convolution_beyond_int32_is_refused_not_wrapped():
    x = torch.full((1, 1, 5, 5), 2 ** 20, dtype=torch.int32)
    w = torch.full((1, 1, 3, 3), 2 ** 12, dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="exceeds int32"):
        reference.integer_conv2d(x, w, None, (1, 1), (0, 0), (2, 2), 1)


@pytest.mark.slow     # lowers a model, builds the native runtime
def test_a_dilated_convolution_exports_and_runs_natively_like_the_reference(cli, tmp_path):
    (tmp_path / "models.py").write_text(MODEL)
    res = cli("export", "--module", f"{tmp_path / 'models.py'}:Dilated", "--input-shape", "1,3,12,12",
              "--calibration", "random", "--target", "cortex-m55", "--out", tmp_path, "--name", "dilated",
              timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    pte = tmp_path / "dilated.pte"
    operators = [name for name, _ in reference.parse_program(pte.read_bytes()).operators]
    assert {"cortex_m::quantized_conv2d", "cortex_m::quantized_depthwise_conv2d"} <= set(operators), operators
    inputs = np.random.default_rng(11).standard_normal((6, 1, 3, 12, 12)).astype(np.float32)
    np.savez(tmp_path / "in.npz", input0=inputs)
    res = cli("run", "--model", pte, "--inputs", tmp_path / "in.npz", "--out", tmp_path / "out.npz",
              "--device", "native", timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    got = np.load(tmp_path / "out.npz")
    outputs, int8 = reference.replay_many_with_int8(pte.read_bytes(), [inputs])
    assert np.array_equal(got["output0_int8"].reshape(int8[0].shape), int8[0])
    assert np.array_equal(got["output0"].reshape(outputs[0].shape), outputs[0])
