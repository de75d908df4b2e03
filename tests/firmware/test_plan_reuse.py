"""Memory plans that reuse an input's bytes: ExecuTorch's planner gives an input's place to a new tensor once the
input's last reader has run, and that tensor may have the input's dtype and size (a softmax's dequantize writes
its float32 result there, and the next quantize reads it). The loader must tell that new tensor from a view of
the input: counted as a read of the input, it refused these valid programs ("input 0 is overwritten by kernel
call 2 before it is read by kernel call 3").

The programs are softmax chains behind 0 to 3 linear layers: together their plans write over the input's bytes
at every position of the chain after the first call, in float32 (the input's dtype and size) and int8. Each runs
bit-exact with ExecuTorch's Python operators natively and on the Cortex-M55's board."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generic_programs import replay, sample_inputs  # noqa: E402

from tinyrps.devices import open_device  # noqa: E402

WIDTH = 10
# (softmaxes, linear layers before them)
CHAINS = ((1, 0), (2, 0), (3, 0), (1, 1), (2, 1), (3, 1), (1, 2), (1, 3))


class SoftmaxChain(nn.Module):
    def __init__(self, softmaxes: int, linears: int) -> None:
        super().__init__()
        self.softmaxes = softmaxes
        self.linears = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(linears)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linears(x)
        for _ in range(self.softmaxes):
            x = torch.softmax(x, -1)
        return x


def export(softmaxes: int, linears: int) -> bytes:
    from tinyrps.export.cortex_m import lower
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(softmaxes * 10 + linears)
        model = SoftmaxChain(softmaxes, linears).eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, WIDTH, generator=generator) * 3,) for _ in range(8)]
    return lower(model, (torch.zeros(1, WIDTH),), calibration, "cortex-m55").program


@pytest.fixture(scope="module")
def chains(tmp_path_factory) -> dict:
    """{(softmaxes, linears): Path of its Cortex-M55 program}, exported once (and kept across runs)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import fixture_cache
    key = fixture_cache.fixture_key("softmax-chains", CHAINS, modules=["tinyrps.export.cortex_m"], files=[Path(__file__)])

    def build(out: Path) -> None:
        for softmaxes, linears in CHAINS:
            (out / f"softmax{softmaxes}-linear{linears}.pte").write_bytes(export(softmaxes, linears))
    folder = fixture_cache.cached_folder("softmax-chains", key, build, tmp_path_factory.mktemp("chains"))
    return {(s, n): folder / f"softmax{s}-linear{n}.pte" for s, n in CHAINS}


def input_reuses(program: bytes) -> list:
    """(position, dtype name) of each kernel call that writes over bytes of the program's input."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    size = {1: 1, 6: 4}

    def place(index):
        t = plan.values[index].val
        return t.allocation_info.memory_offset_low, int(np.prod(t.sizes)) * size[int(t.scalar_type)], t.scalar_type

    start, length, _ = place(plan.inputs[0])
    found = []
    for k, call in enumerate(plan.chains[0].instructions):
        offset, nbytes, dtype = place(call.instr_args.args[-2])
        if offset < start + length and start < offset + nbytes:
            found.append((k, dtype.name))
    return found


def samples_of(program: bytes, count: int, seed: int) -> list:
    return [(a * 6 - 3).astype(np.float32) for a in sample_inputs(program, count, seed)]


def assert_bit_exact(result, program: bytes, samples: list, chain: tuple) -> None:
    (expected,), _ = replay(program, samples)
    (got,) = result.outputs
    assert got.dtype == expected.dtype and np.array_equal(got.view(np.uint8), expected.view(np.uint8))
    # a softmax of a softmax is near uniform: after three, two or three distinct values are left
    assert len(np.unique(expected)) >= (2 if chain[0] >= 3 else 4), "degenerate outputs would not test the arithmetic"


def test_the_plans_reuse_the_input_at_every_position(chains):
    """Between them, the programs write over their input at every position of the chain after the first call,
    and with a tensor of the input's dtype (float32) and size at several: the case the loader misread."""
    reuses = {pair: input_reuses(path.read_bytes()) for pair, path in chains.items()}
    positions = {k for found in reuses.values() for k, _ in found}
    longest = max(k for found in reuses.values() for k, _ in found)
    assert positions == set(range(1, longest + 1)) and longest >= 10, reuses
    assert all(any(dtype == "FLOAT" and k < max(p for p, _ in found) for k, dtype in found)
               for found in reuses.values()), reuses


@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: f"softmax{c[0]}-linear{c[1]}")
def test_native_runs_plans_that_reuse_the_input(chains, chain):
    program = chains[chain].read_bytes()
    samples = samples_of(program, 6, seed=3)
    with open_device("native", chains[chain]) as device:
        assert_bit_exact(device.run_batch(samples), program, samples, chain)


@pytest.mark.slow
def test_the_m55_board_runs_plans_that_reuse_the_input(chains, firmware_elf_path):
    for chain, path in chains.items():
        program = path.read_bytes()
        samples = samples_of(program, 4, seed=5)
        with open_device("mcu", path, board="mps3-an547", transport="batch") as device:
            assert_bit_exact(device.run_batch(samples), program, samples, chain)
