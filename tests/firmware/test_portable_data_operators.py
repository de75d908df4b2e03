"""The portable matrix-product, creation, selection and gathering operators (ops/portable_matmul.c,
portable_create.c, portable_select.c, portable_gather.c, portable_split.c) against ExecuTorch's own runtime.

As in test_portable_operators.py: each case is a program of one operator (or a few) lowered by
ExecuTorch's plain edge flow, run by ExecuTorch's runtime in Python (its kernels, the pybindings) and by
the native build of the firmware's runtime on the same inputs. Integer results, copies, creations,
comparisons and linear (whose float32 sum ExecuTorch takes in order, the bias last) are equal bit for
bit; log1p within 2 ulp. ExecuTorch's mm and bmm (its optimized kernels) sum in an order of their own:
on integer-valued operands every order gives the same bits, which the runtime must give; on random
ones the two sums of the same products may differ by what reordering allows, at most k float32
roundings of the sum of the products' magnitudes (the bound of any order's error).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_portable_operators import Fn, executorch_outputs, ints, native_outputs, program, randn, ulps  # noqa: E402


def whole(*shape, seed=0):
    """Small integer values as float32: every product and sum of a few of them is exact in any order."""
    return ints(*shape, dtype=torch.int32, seed=seed, lo=-8, hi=8).to(torch.float32)


# name -> (function, inputs): results equal bit for bit
EXACT = {
    "mm_whole": (torch.mm, [whole(3, 9), whole(9, 5)]),
    "mm_transposed": (lambda a, b: torch.mm(a, b.t()), [whole(4, 6), whole(5, 6)]),
    "bmm_whole": (torch.bmm, [whole(2, 3, 7), whole(2, 7, 4)]),
    "bmm_broadcast_batch": (lambda a, b: torch.bmm(a.expand(2, -1, -1), b), [whole(1, 3, 4), whole(2, 4, 5)]),
    "linear_bias": (lambda x, w, b: F.linear(x, w, b), [randn(5, 16), randn(7, 16), randn(7)]),
    "linear_odd": (lambda x, w, b: F.linear(x, w, b), [randn(1, 33), randn(6, 33), randn(6)]),
    "addmm": (torch.addmm, [randn(7), randn(5, 16), randn(16, 7)]),
    "full_float": (lambda x: x * torch.full((2, 3), 0.3), [randn(2, 3)]),
    "full_int": (lambda x: x + torch.full((4,), 7, dtype=torch.int32), [ints(4)]),
    "arange_float": (lambda x: x + torch.arange(5, dtype=torch.float32), [randn(1, 5)]),
    "arange_start_step": (lambda x: x * torch.arange(0.5, 3.1, 0.3), [randn(9)]),
    "arange_int": (lambda x: x + torch.arange(-3, 9, 2), [ints(6, dtype=torch.int64)]),
    "split_last": (lambda x: [t * 1.0 for t in torch.split(x, [2, 4, 1], 1)], [randn(3, 7)]),
    "split_items_are_outputs": (lambda x: torch.split(x, [2, 5], 1), [randn(3, 7)]),
    "split_first_int8": (lambda x: [t + 1 for t in torch.split(x, [1, 3], 0)], [ints(4, 5, dtype=torch.int8)]),
    "split_equal_middle": (lambda x: torch.sigmoid(x.split(3, 1)[0]) * x.split(3, 1)[1], [randn(2, 6, 3)]),
    "int64_constant_to_float": (lambda x: x * torch.tensor(3), [randn(2, 5)]),
    "int64_to_float": (lambda x: x.to(torch.float32) / 2, [ints(3, 4, dtype=torch.int64)]),
    "gt_scalar": (lambda x: x > 0.5, [randn(3, 7)]),
    "le_scalar_int": (lambda x: x <= 3, [ints(4, 5)]),
    "ge_int_float_scalar": (lambda x: (x >= 2.5).to(torch.int32), [ints(6)]),
    "lt_tensor_broadcast": (torch.lt, [randn(2, 1, 5), randn(3, 1)]),
    "eq_ne_tensor": (lambda a, b: [a == b, a != b], [ints(3, 4, lo=-2, hi=2), ints(4, lo=-2, hi=2)]),
    "gt_int_float_tensor": (torch.gt, [ints(3, 4, lo=-3, hi=3), randn(3, 4)]),
    "where_broadcast": (lambda x, y: torch.where(x > 0, x, y), [randn(2, 3, 4), randn(3, 1)]),
    "where_int": (lambda c, x, y: torch.where(c > 0, x, y), [ints(5), ints(5, dtype=torch.int64), ints(1, 5, dtype=torch.int64)]),
    "index_first": (lambda x: x[torch.tensor([0, 2, 4, -1])] * 1.0, [randn(5, 3)]),
    "index_middle_2d": (lambda x: x[:, torch.tensor([[1, 0], [2, 2]])] + 1, [ints(2, 3, 4)]),
    "index_int32": (lambda x: x[:, :, torch.tensor([3, 1], dtype=torch.int32)] * 1.0, [randn(2, 2, 5)]),
    "repeat_2d": (lambda x: x.repeat(2, 3) * 1.0, [randn(2, 3)]),
    "repeat_more_dims_int8": (lambda x: x.repeat(2, 1, 3) + 1, [ints(3, 2, dtype=torch.int8)]),
    "upsample_nearest_2x": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest") * 1.0, [randn(1, 2, 3, 4)]),
    "upsample_nearest_size": (lambda x: F.interpolate(x, size=(5, 7), mode="nearest") * 1.0, [randn(1, 2, 3, 4)]),
    "upsample_nearest_down": (lambda x: F.interpolate(x, size=(2, 3), mode="nearest") * 1.0, [randn(2, 1, 5, 7)]),
    "amax_last": (lambda x: x.amax(-1), [randn(2, 5, 3)]),
    "amax_dims_keep": (lambda x: x.amax((0, 2), keepdim=True), [randn(3, 4, 5)]),
    "amax_int8": (lambda x: x.amax(1), [ints(4, 6, dtype=torch.int8)]),
    "amax_nan": (lambda x: x.amax(0), [torch.tensor([[1.0, float("nan")], [float("nan"), 2.0], [3.0, -1.0]])]),
}

# name -> (function, inputs): float results within 2 ulp (the C library's log1pf and expf)
CLOSE = {
    "log1p": (lambda x: torch.log1p(x.abs()), [randn(3, 7)]),
    "softplus": (F.softplus, [randn(4, 9) * 3]),
    "softplus_beta": (lambda x: F.softplus(x, beta=2, threshold=5), [randn(2, 3, 5)]),
}

# name -> (function, inputs): mm and bmm on random floats, ExecuTorch summing in its own order
REORDERED = {
    "mm_random": (torch.mm, [randn(5, 64), randn(64, 7)]),
    "bmm_random": (torch.bmm, [randn(3, 4, 40), randn(3, 40, 6)]),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_the_data_operators_equal_executorch_bit_for_bit(name, native_tool, tmp_path):
    fn, inputs = EXACT[name]
    pte = program(fn, inputs)
    want, got = executorch_outputs(pte, inputs), native_outputs(native_tool, pte, inputs, tmp_path)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g.reshape(-1).view(np.uint8), np.ascontiguousarray(w).reshape(-1).view(np.uint8)), (g, w)


@pytest.mark.parametrize("name", sorted(CLOSE))
def test_log1p_is_within_two_ulp(name, native_tool, tmp_path):
    fn, inputs = CLOSE[name]
    pte = program(fn, inputs)
    want, got = executorch_outputs(pte, inputs), native_outputs(native_tool, pte, inputs, tmp_path)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float32 and g.shape == w.shape
        assert ulps(g, w) <= 2, (g, w)


@pytest.mark.parametrize("name", sorted(REORDERED))
def test_matrix_products_are_within_what_reordering_allows(name, native_tool, tmp_path):
    fn, inputs = REORDERED[name]
    pte = program(fn, inputs)
    want, got = executorch_outputs(pte, inputs)[0], native_outputs(native_tool, pte, inputs, tmp_path)[0]
    a, b = (x.double().numpy() for x in inputs)
    magnitude = np.abs(a) @ np.abs(b)
    inner = a.shape[-1]
    bound = inner * np.finfo(np.float32).eps * magnitude
    assert got.shape == want.shape and np.all(np.abs(got.astype(np.float64) - want) <= bound), (got, want)
    sequential = np.zeros(want.shape, np.float32)   # the runtime's order: the inner index from 0 up
    for i in range(inner):
        sequential = (sequential + (a[..., :, i:i + 1] * b[..., i:i + 1, :]).astype(np.float32)).astype(np.float32)
    assert np.array_equal(got, sequential)


def test_a_split_counts_one_call_per_item_in_the_runtime_check_and_a_librarys_tables(native_tool, tmp_path):
    """The loader binds split_with_sizes_copy once per out item: the export's check and a library's
    TRT_MAX_KERNEL_CALLS count them so, and a Tensor?[]'s tensors take argument slots as a Tensor[]'s."""
    from tinyrps.deploy.library import native_facts, table_limits
    from tinyrps.export.runtime_check import runtime_refusal
    split = program(lambda x: [t * 1.0 for t in torch.split(x, [1, 1, 1, 1, 3], 1)], [randn(2, 7)])
    (tmp_path / "split.pte").write_bytes(split)
    _, dump = native_facts(tmp_path / "split.pte")
    assert table_limits(dump)["TRT_MAX_KERNEL_CALLS"] == 5 + 5       # the split's five items, five multiplies
    index = program(lambda x: x[:, torch.tensor([2, 0])] * 1.0, [randn(3, 4)])
    (tmp_path / "index.pte").write_bytes(index)
    _, dump = native_facts(tmp_path / "index.pte")
    index_call = next(c for c in dump["plans"][0]["chains"][0] if any(
        dump["plans"][0]["values"][a]["kind"] == "optional_tensor_list" for a in c["args"]))
    assert table_limits(dump)["TRT_MAX_KERNEL_ARGS"] >= len(index_call["args"]) + 2
    assert runtime_refusal(split) is None and runtime_refusal(index) is None


def test_a_float_full_before_an_integer_operator_is_refused_in_one_line(tmp_path):
    """ExecuTorch's lowering of x * full(...) leaves the full float before quantized_mul: refused, not a traceback."""
    from tinyrps.export.cortex_m import check_replay, lower
    from tinyrps.infra.errors import UserError
    examples = [(randn(2, 3, seed=s),) for s in range(4)]
    lowered = lower(Fn(lambda x: x * torch.full((2, 3), 0.5)), (torch.zeros(2, 3),), examples, "cortex-m55")
    with pytest.raises(UserError) as raised:
        check_replay(lowered, examples)
    assert "does not replay" in str(raised.value) and "\n" not in str(raised.value)


# ---- in Cortex-M programs, natively and on the boards --------------------------------------------------

# Programs of tinyrps.devtools.coverage_programs whose float or integer layers are these operators, of
# exact arithmetic (no C library function): the same bits on every build. The LSTM and GRU (sigmoid and
# tanh) run natively only, where the C library is the replay's.
LOWERED = ("split", "chunk_sum", "arange_add", "matmul_2d", "matmul_broadcast", "repeat", "upsample_nearest",
           "amax_last", "index_tensor")
RECURRENT = ("lstm", "gru")


@pytest.fixture(scope="module")
def lowered_programs(tmp_path_factory):
    """name -> (the .pte `tinyrps export --module` wrote, its input shapes)."""
    from tinyrps.devtools import coverage_programs
    from tinyrps.interfaces.cli import main
    out = tmp_path_factory.mktemp("lowered")
    found = {}
    for name in LOWERED + RECURRENT:
        _, shapes = coverage_programs.PROGRAMS[name]
        args = ["export", "--module", f"{coverage_programs.__file__}:{name}", "--target", "cortex-m55",
                "--calibration", "random", "--out", str(out), "--name", name, "--quiet"]
        for shape in shapes:
            args += ["--input-shape", ",".join(map(str, shape))]
        assert main(args) == 0, name
        found[name] = (out / f"{name}.pte", shapes)
    return found


@pytest.mark.slow     # lowers eleven programs
def test_cortex_m_programs_with_these_operators_run_natively_bit_exact(lowered_programs):
    from tinyrps.devices import open_device
    from test_portable_operators import assert_replayed, lowered_inputs
    for name, (pte, shapes) in lowered_programs.items():
        inputs = lowered_inputs(shapes)
        with open_device("native", pte) as device:
            assert_replayed(device.run_batch(inputs), pte, inputs)


@pytest.mark.slow
@pytest.mark.parametrize("core", ["cortex-m55", "cortex-m4"])
def test_cortex_m_programs_with_these_operators_run_on_the_boards_bit_exact(lowered_programs, firmware_elf_path, core):
    from tinyrps.devices import open_device
    from test_portable_operators import BOARDS, assert_replayed, lowered_inputs
    for name in LOWERED:
        pte, shapes = lowered_programs[name]
        inputs = lowered_inputs(shapes)
        with open_device("mcu", pte, board=BOARDS[core], transport="batch") as device:
            assert_replayed(device.run_batch(inputs), pte, inputs)


@pytest.mark.slow     # measures the program on the board, builds the library three times
def test_a_program_of_these_operators_makes_a_library(lowered_programs, tmp_path):
    """The LSTM (full, linear, split, sigmoid, tanh, mul) as a library: its own tables count a split's
    items, its measure takes the portable linear's plain C, its kernels build in the library's layout."""
    from tinyrps.interfaces.cli import main
    pte, _ = lowered_programs["lstm"]
    assert main(["deploy", "library", "--model", str(pte), "--out", str(tmp_path / "lib")]) == 0
    assert (tmp_path / "lib" / "src" / "runtime" / "ops" / "portable_split.c").exists()
