"""The portable operators (ops/portable_*.c) against ExecuTorch's own runtime.

Each case is a program of one operator (or a few) on awkward shapes: broadcasts along every axis,
size-1 dims, odd sizes, inputs in channels-last order. It is lowered by ExecuTorch's plain edge flow
(no quantization: the operators stay aten's), run by ExecuTorch's runtime in Python (its portable
kernels, the pybindings) and by the native build of the firmware's runtime on the same inputs.
Integer results and the float ones whose arithmetic is one rounding per element (add, sub, mul,
div, clamps, copies, and sum, mean, the pools, the convolutions and the normalizations, which follow the
reference's order of operations) must be
equal bit for bit; the ones that call the C library's exp, tanh, log or pow within 2 ulp. (ExecuTorch's
portable kernels have no hardswish or hardsigmoid, and its edge flow decomposes them: the coverage set
of scripts/operator_coverage.py checks those against the replay.)
"""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *x):
        return self.fn(*x)


def program(fn, inputs) -> bytes:
    from executorch.exir import to_edge
    return to_edge(torch.export.export(Fn(fn), tuple(inputs))).to_executorch().buffer


def executorch_outputs(pte: bytes, inputs) -> list:
    from tinyrps.devices.executorch import runtime_extension
    runtime = runtime_extension()
    method = runtime._load_program_from_buffer(pte, program_verification=runtime.Verification.Minimal).load_method("forward")
    return [o.numpy().copy() for o in method([x.contiguous() for x in inputs])]


def native_outputs(tool, pte: bytes, inputs, work) -> list:
    from tinyrps.firmware.tensors import samples_file_bytes, spec_from_json, split_results
    path, samples, results = work / "p.pte", work / "in.bin", work / "out.bin"
    path.write_bytes(pte)
    info = json.loads(_tool(tool, "info", path))
    specs = [spec_from_json(e) for e in info["inputs"]]
    outs = [spec_from_json(e) for e in info["outputs"]]
    samples.write_bytes(samples_file_bytes(specs, [x.contiguous().numpy()[None] for x in inputs]))
    _tool(tool, "run", path, samples, results)
    got, _ = split_results(np.frombuffer(results.read_bytes(), np.uint8).reshape(1, -1), outs)
    return [g[0] for g in got]


def _tool(tool, *args) -> str:
    result = subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance between two float32 arrays in units in the last place."""
    def ordered(x):
        i = np.ascontiguousarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return int(np.max(np.abs(ordered(a) - ordered(b)))) if a.size else 0


def randn(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed + sum(shape))
    x = torch.randn(*shape, generator=g) * 3
    return x.to(dtype) if dtype.is_floating_point else (x * 20).round().clamp(-128, 127).to(dtype)


def ints(*shape, dtype=torch.int32, seed=0, lo=-100, hi=100):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)


# name -> (function, inputs): results equal bit for bit
EXACT = {
    "add_every_axis": (torch.add, [randn(1, 3, 1, 5), randn(2, 1, 4, 1)]),
    "add_alpha": (lambda a, b: torch.add(a, b, alpha=-0.5), [randn(3, 4), randn(1, 4)]),
    "add_rank_gap": (torch.add, [randn(2, 3, 5), randn(5)]),
    "sub_every_axis": (torch.sub, [randn(7, 1, 3), randn(1, 5, 1)]),
    "sub_alpha": (lambda a, b: torch.sub(a, b, alpha=3), [randn(3, 4), randn(3, 1)]),
    "mul_size_one": (torch.mul, [randn(1, 1, 1), randn(2, 1, 3)]),
    "div_broadcast": (torch.div, [randn(2, 3, 4), randn(3, 1) + 5]),
    "div_by_zero": (torch.div, [randn(4), torch.tensor([0.0, -0.0, 1.0, 0.0])]),
    "add_int32": (lambda a, b: torch.add(a, b, alpha=7), [ints(3, 1, 5), ints(4, 1)]),
    "add_int32_wraps": (torch.add, [torch.tensor([2**31 - 1, -2**31], dtype=torch.int32),
                                    torch.tensor([1, -1], dtype=torch.int32)]),
    "mul_int32": (torch.mul, [ints(2, 3), ints(1, 3)]),
    "sub_int8": (torch.sub, [ints(5, 3, dtype=torch.int8), ints(3, dtype=torch.int8)]),
    "mul_int8_wraps": (torch.mul, [ints(4, 4, dtype=torch.int8), ints(4, 1, dtype=torch.int8)]),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.75), [randn(3, 7)]),
    "relu6_4d": (F.relu6, [randn(1, 3, 5, 5)]),
    "abs": (torch.abs, [randn(2, 9)]),
    "neg_int32": (torch.neg, [ints(3, 5)]),
    "abs_int32": (torch.abs, [ints(3, 5)]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), [randn(3, 7)]),
    "pow2": (lambda x: torch.pow(x, 2), [randn(3, 5)]),
    "sum_dims": (lambda x: x.sum(dim=(1, 3)), [randn(2, 3, 4, 5)]),
    "sum_keepdim": (lambda x: x.sum(dim=-1, keepdim=True), [randn(3, 1, 7)]),
    "sum_all": (lambda x: x.sum(), [randn(3, 5)]),
    "mean_dims": (lambda x: x.mean(dim=(2, 3)), [randn(1, 3, 5, 7)]),
    "mean_first": (lambda x: x.mean(dim=0, keepdim=True), [randn(5, 3, 2)]),
    "to_float": (lambda x: x.to(torch.float32), [ints(3, 4)]),
    "to_int32": (lambda x: x.to(torch.int32), [randn(3, 4)]),
    "slice_step": (lambda x: x[:, 1:6:2] * 1.0, [randn(4, 7)]),
    "slice_negative": (lambda x: x[-3:] * 1.0, [ints(5, 3)]),
    "select_middle": (lambda x: x[:, 2] * 1.0, [randn(3, 5, 2)]),
    "expand_every_axis": (lambda x: x.expand(2, 3, 4) * 1.0, [randn(1, 3, 1)]),
}

# The pools and convolutions of ops/portable_pool.c and ops/portable_conv.c. A max pool's values are read by
# a later call (the loader's out of the call is its indices: a program whose output is the values is refused).
WEIGHTS = {"w1d": randn(6, 2, 3, seed=1), "w2d": randn(6, 4, 3, 3, seed=1), "wt_groups": randn(4, 3, 3, 3, seed=1),
           "wt": randn(4, 6, 3, 3, seed=1), "wt1d": randn(4, 6, 4, seed=1), "bias": randn(6, seed=2)}
EXACT.update({
    "max_pool_ceil": (lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True) * 1.0, [randn(1, 3, 9, 9)]),
    "max_pool_dilation_padding": (lambda x: F.max_pool2d(x, 3, (2, 1), padding=1, dilation=2) * 1.0,
                                  [randn(2, 2, 10, 9)]),
    "max_pool_indices": (lambda x: F.max_pool2d_with_indices(x, 3, 2, 1, ceil_mode=True)[1] + 0, [randn(1, 3, 9, 9)]),
    "max_pool_int8_ties_3d": (lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True) * 1,
                              [ints(3, 9, 8, dtype=torch.int8, lo=-3, hi=3)]),
    "avg_pool_ceil": (lambda x: F.avg_pool2d(x, 3, 2, ceil_mode=True), [randn(1, 3, 9, 9)]),
    "avg_pool_divisor": (lambda x: F.avg_pool2d(x, 2, divisor_override=3), [randn(1, 3, 9, 9)]),
    "avg_pool_exclude_padding_ceil": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                                      [randn(1, 3, 8, 8)]),
    "avg_pool_include_padding_ceil_3d": (lambda x: F.avg_pool2d(x, (3, 2), 2, 1, ceil_mode=True), [randn(3, 8, 7)]),
    "conv1d_groups_stride_padding": (lambda x: F.conv1d(x, WEIGHTS["w1d"], WEIGHTS["bias"], stride=2, padding=1,
                                                        groups=2), [randn(1, 4, 16)]),
    "conv2d_dilation": (lambda x: F.conv2d(x, WEIGHTS["w2d"], WEIGHTS["bias"], padding=2, dilation=2),
                        [randn(1, 4, 9, 9)]),
    "conv2d_asymmetric_no_bias": (lambda x: F.conv2d(x, WEIGHTS["w2d"], None, stride=(2, 1), padding=(1, 0)),
                                  [randn(2, 4, 7, 6)]),
    "conv_transpose2d_output_padding_groups": (
        lambda x: F.conv_transpose2d(x, WEIGHTS["wt_groups"], WEIGHTS["bias"], stride=2, padding=1, output_padding=1,
                                     groups=2), [randn(1, 4, 5, 5)]),
    "conv_transpose2d_dilation_no_bias": (lambda x: F.conv_transpose2d(x, WEIGHTS["wt"], None, dilation=2),
                                          [randn(1, 4, 5, 5)]),
    "conv_transpose1d_stride": (lambda x: F.conv_transpose1d(x, WEIGHTS["wt1d"], WEIGHTS["bias"], stride=3),
                                [randn(1, 4, 7)]),
})

# The normalizations of ops/portable_norm.c: every step one float32 operation (batch norm's 1/sqrt in double),
# in ExecuTorch's order. Layer norm's mean and rstd are outputs too; a call's first output is read by a later
# call (the loader's out of the call is its last output, as a max pool's indices).
NORM = {"mean": randn(3, seed=3), "var": randn(3, seed=4).abs() + 0.1, "w": randn(3, seed=5), "b": randn(3, seed=6)}
EXACT.update({
    "batch_norm": (lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, False, 0.1, 1e-5) * 1.0,
                   [randn(2, 3, 4, 5), randn(3), randn(3), randn(3), randn(3).abs()]),
    "batch_norm_constants_3d": (lambda x: F.batch_norm(x, NORM["mean"], NORM["var"], NORM["w"], NORM["b"], False, 0.1,
                                                       1e-3) * 1.0, [randn(2, 3, 7)]),
    "batch_norm_no_affine_2d": (lambda x, m, v: F.batch_norm(x, m, v, None, None, False, 0.1, 1e-5) + 0.0,
                                [randn(4, 3), randn(3), randn(3).abs()]),
    "layer_norm_last": (lambda x, w, b: F.layer_norm(x, [8], w, b) * 1.0, [randn(3, 8), randn(8), randn(8)]),
    "layer_norm_two_dims_no_affine": (lambda x: F.layer_norm(x, [3, 4]) * 1.0, [randn(2, 3, 4)]),
    "layer_norm_mean_rstd": (lambda x, w, b: [t * 1.0 for t in torch.native_layer_norm(x, [5], w, b, 1e-5)[:2]] +
                             [torch.native_layer_norm(x, [5], w, b, 1e-5)[2]], [randn(3, 4, 5), randn(5), randn(5)]),
})

# name -> (function, inputs) of tensors in different dim orders, which ExecuTorch's portable kernels refuse
# (they take operands of one dim order) and the runtime takes: equal, bit for bit, to torch's own result
LAYOUTS = {
    "add_channels_last": (lambda a, b: a + b, [randn(1, 3, 4, 5).to(memory_format=torch.channels_last),
                                               randn(1, 3, 1, 1)]),
    "to_contiguous": (lambda x: x.contiguous() * 1.0, [randn(1, 3, 4, 5).to(memory_format=torch.channels_last)]),
    "sum_channels_last": (lambda x: x.sum(dim=(0, 1)), [randn(1, 3, 4, 5).to(memory_format=torch.channels_last)]),
    "max_pool_channels_last": (lambda x: F.max_pool2d(x, 2, dilation=2, ceil_mode=True) * 1.0,
                               [randn(1, 3, 9, 9).to(memory_format=torch.channels_last)]),
}

# name -> (function, inputs): float results within 2 ulp
CLOSE = {
    "sigmoid": (torch.sigmoid, [randn(3, 7)]),
    "tanh": (torch.tanh, [randn(1, 2, 3, 5)]),
    "exp": (torch.exp, [randn(4, 3)]),
    "pow_fraction": (lambda x: torch.pow(x.abs(), 1.5), [randn(3, 5)]),
    "elu": (F.elu, [randn(3, 7)]),
    "softmax_last": (lambda x: F.softmax(x, -1), [randn(2, 7)]),
    "softmax_first": (lambda x: F.softmax(x, 0), [randn(5, 3)]),
    "softmax_middle": (lambda x: F.softmax(x, 1), [randn(2, 3, 1, 5)]),
    "softmax_size_one": (lambda x: F.softmax(x, 2), [randn(2, 3, 1, 5)]),
    "log_softmax_last": (lambda x: F.log_softmax(x, -1), [randn(3, 9)]),
    "log_softmax_middle": (lambda x: F.log_softmax(x, 1), [randn(1, 4, 3, 3)]),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_the_portable_operators_equal_executorch_bit_for_bit(name, native_tool, tmp_path):
    fn, inputs = EXACT[name]
    pte = program(fn, inputs)
    want, got = executorch_outputs(pte, inputs), native_outputs(native_tool, pte, inputs, tmp_path)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g.reshape(-1).view(np.uint8), np.ascontiguousarray(w).reshape(-1).view(np.uint8)), (g, w)


# name -> (function, channels-last inputs): ExecuTorch's portable normalizations refuse them; each element's
# arithmetic does not depend on the dim order, so the runtime gives ExecuTorch's bits of the contiguous input
NORM_LAYOUTS = {
    "batch_norm_channels_last": (lambda x: F.batch_norm(x, NORM["mean"], NORM["var"], NORM["w"], NORM["b"], False,
                                                        0.1, 1e-5) * 1.0,
                                 [randn(2, 3, 4, 5).to(memory_format=torch.channels_last)]),
    "layer_norm_channels_last": (lambda x: F.layer_norm(x, [4, 5]) * 1.0,
                                 [randn(2, 3, 4, 5).to(memory_format=torch.channels_last)]),
}


@pytest.mark.parametrize("name", sorted(NORM_LAYOUTS))
def test_the_normalizations_of_other_dim_orders_give_executorchs_bits(name, native_tool, tmp_path):
    fn, inputs = NORM_LAYOUTS[name]
    contiguous = [x.contiguous() for x in inputs]
    want = executorch_outputs(program(fn, contiguous), contiguous)[0]
    got = native_outputs(native_tool, program(fn, inputs), inputs, tmp_path)[0]
    assert got.shape == want.shape and np.array_equal(got.view(np.uint8), want.view(np.uint8)), (got, want)


@pytest.mark.parametrize("name", sorted(CLOSE))
def test_the_transcendental_operators_are_within_two_ulp(name, native_tool, tmp_path):
    fn, inputs = CLOSE[name]
    pte = program(fn, inputs)
    want, got = executorch_outputs(pte, inputs), native_outputs(native_tool, pte, inputs, tmp_path)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape
        assert ulps(g, w) <= 2, (g, w)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_operands_of_other_dim_orders_give_torchs_result(name, native_tool, tmp_path):
    fn, inputs = LAYOUTS[name]
    pte = program(fn, inputs)
    want, got = fn(*inputs).contiguous().numpy(), native_outputs(native_tool, pte, inputs, tmp_path)[0]
    assert got.shape == want.shape and np.array_equal(got.view(np.uint8), want.view(np.uint8)), (got, want)


def test_a_standalone_relu6_exports_for_the_cortex_m55(tmp_path):
    """The lowering leaves a float aten::hardtanh between a dequantize and a quantize: export takes it."""
    from tinyrps.export.cortex_m import lower
    examples = [(randn(1, 8, seed=s),) for s in range(4)]
    lowered = lower(Fn(F.relu6), (torch.zeros(1, 8),), examples, "cortex-m55")
    assert "aten::hardtanh.out" in lowered.operators


def test_an_operator_the_runtime_lacks_is_refused_in_one_line():
    from tinyrps.export.cortex_m import lower
    from tinyrps.infra.errors import UserError
    examples = [(randn(1, 8, seed=s),) for s in range(4)]
    with pytest.raises(UserError) as raised:
        lower(Fn(lambda x: torch.cumsum(x, 1)), (torch.zeros(1, 8),), examples, "cortex-m55")
    assert "aten::cumsum.out" in str(raised.value) and "\n" not in str(raised.value)


# ---- in Cortex-M programs, natively and on the boards --------------------------------------------------

# Programs of tinyrps.devtools.coverage_programs whose float layers are portable operators of exact
# arithmetic: the same bits on every build (no C library function in them). The pools and convolutions
# among them are the forms the lowering leaves as aten's (ceil_mode, divisor_override, 1-D, transposed
# with output padding, 3-D). The normalizations' float results differ from torch's (the replay's) in the last
# bits; the quantize after them rounds both alike on these inputs.
LOWERED = ("add_every_axis", "sub_alpha_2", "div_odd", "mean_2_3_keep", "sum_1_2", "relu6_4d", "hardtanh_2d",
           "pow2_4d", "abs_2d", "leaky_relu_2d")
LOWERED += ("max_pool2d_ceil", "avg_pool2d_divisor", "conv1d_groups", "conv_transpose2d_outpad", "conv3d")
LOWERED += ("batchnorm_alone", "layernorm")
BOARDS = {"cortex-m55": "mps3-an547", "cortex-m4": "mps2-an386"}   # one board per ISA: Helium, DSP


@pytest.fixture(scope="module")
def lowered_programs(tmp_path_factory):
    """name -> (the .pte `tinyrps export --module` wrote, its input shapes)."""
    from tinyrps.devtools import coverage_programs
    from tinyrps.interfaces.cli import main
    out = tmp_path_factory.mktemp("lowered")
    found = {}
    for name in LOWERED:
        _, shapes = coverage_programs.PROGRAMS[name]
        args = ["export", "--module", f"{coverage_programs.__file__}:{name}", "--target", "cortex-m55",
                "--calibration", "random", "--out", str(out), "--name", name, "--quiet"]
        for shape in shapes:
            args += ["--input-shape", ",".join(map(str, shape))]
        assert main(args) == 0, name
        found[name] = (out / f"{name}.pte", shapes)
    return found


def lowered_inputs(shapes, count=3):
    rng = np.random.default_rng(5)
    return [rng.standard_normal((count, *s)).astype(np.float32) for s in shapes]


def assert_replayed(result, pte, inputs):
    from tinyrps.reference.cortex_m import replay
    for i in range(len(inputs[0])):
        want = replay(pte.read_bytes(), [x[i] for x in inputs])
        for got, w in zip(result.outputs, want):
            assert np.array_equal(got[i].reshape(w.shape), w), pte.name


@pytest.mark.slow     # lowers seventeen programs
def test_cortex_m_programs_with_portable_operators_run_natively_bit_exact(lowered_programs):
    from tinyrps.devices import open_device
    for name, (pte, shapes) in lowered_programs.items():
        inputs = lowered_inputs(shapes)
        with open_device("native", pte) as device:
            assert_replayed(device.run_batch(inputs), pte, inputs)


@pytest.mark.slow
@pytest.mark.parametrize("core", list(BOARDS))
def test_cortex_m_programs_with_portable_operators_run_on_the_boards_bit_exact(lowered_programs, firmware_elf_path,
                                                                               core):
    from tinyrps.devices import open_device
    for name, (pte, shapes) in lowered_programs.items():
        inputs = lowered_inputs(shapes)
        with open_device("mcu", pte, board=BOARDS[core], transport="batch") as device:
            assert_replayed(device.run_batch(inputs), pte, inputs)
