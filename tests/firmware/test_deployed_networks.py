"""Programs larger than MLPerf Tiny's: MobileNetV2 (67 kernel calls) and MobileNetV3-small (120) at 96x96x3
(tinyrps.devtools.zoo.DEPLOYED), bit-exact with ExecuTorch's Python operators natively and on the Cortex-M55's board;
a hardswish whose input range collapsed to one value (its shifted zero point far beyond 2^24); the tables of a
program's own firmware image sized to the program; and a program the board's RAM cannot hold, refused with
how much it needs against how much the board has."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generic_programs import replay, sample_inputs  # noqa: E402

from tinyrps.devtools import zoo  # noqa: E402
from tinyrps.devices import open_device  # noqa: E402
from tinyrps.infra.errors import UserError  # noqa: E402

NETWORKS = tuple(zoo.DEPLOYED)


class DeadHardswish(nn.Module):
    """A hardswish after a 1x1 convolution whose weights and bias are zero: calibration sees one value (0),
    the observer's scale is float32's epsilon, and the decomposed hardswish's quantized_mul takes the zero
    point 0 - round(3 / eps) - 128 = -25,165,952 (as MobileNetV3-small with torchvision's initialisation
    does in one block)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.dead = nn.Conv2d(8, 8, 1)
        with torch.no_grad():
            self.dead.weight.zero_()
            self.dead.bias.zero_()
        self.hardswish = nn.Hardswish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return y + self.hardswish(self.dead(y))


def export_dead_hardswish() -> bytes:
    from tinyrps.export.cortex_m import lower
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = DeadHardswish().eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, 3, 8, 8, generator=generator),) for _ in range(8)]
    return lower(model, (torch.zeros(1, 3, 8, 8),), calibration, "cortex-m55").program


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict:
    """{name: Path of its Cortex-M55 program} for the deployed networks and "dead-hardswish", exported once
    (some 3 minutes; kept across runs)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import fixture_cache
    key = fixture_cache.fixture_key("deployed-networks", NETWORKS, modules=["tinyrps.devtools.zoo", "tinyrps.export.cortex_m"],
                                    files=[Path(__file__)])

    def build(out: Path) -> None:
        for name in NETWORKS:
            (out / f"{name}.pte").write_bytes(zoo.lower_network(name, "cortex-m55").program)
        (out / "dead-hardswish.pte").write_bytes(export_dead_hardswish())
    folder = fixture_cache.cached_folder("deployed-networks", key, build, tmp_path_factory.mktemp("deployed"))
    return {name: folder / f"{name}.pte" for name in (*NETWORKS, "dead-hardswish")}


def plan_of(path: Path):
    from executorch.exir._serialize._program import deserialize_pte_binary
    return deserialize_pte_binary(path.read_bytes()).program.execution_plan[0]


def inputs_of(name: str, path: Path, count: int) -> list:
    if name in zoo.DEPLOYED:
        return [a[:count] for a in zoo.bit_exact_inputs(name, count)]
    return [(a * 4 - 2).astype(np.float32) for a in sample_inputs(path.read_bytes(), count, seed=4)]


def assert_bit_exact(result, path: Path, samples: list) -> None:
    expected, expected_int8 = replay(path.read_bytes(), samples)
    for got, want in zip(result.outputs, expected):
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
    for got, want in zip(result.int8, expected_int8):
        assert want is not None and np.array_equal(got, want)
        assert len(np.unique(want)) > 50, "degenerate outputs would not test the arithmetic"


@pytest.mark.slow
def test_the_programs_are_what_the_tests_claim(programs):
    calls = {name: len(plan_of(programs[name]).chains[0].instructions) for name in NETWORKS}
    assert calls == {"mobilenet-v2": 67, "mobilenet-v3-small": 120}
    plan = plan_of(programs["dead-hardswish"])
    muls = [call for call in plan.chains[0].instructions
            if plan.operators[call.instr_args.op_index].name == "cortex_m::quantized_mul"]
    zero_points = [plan.values[call.instr_args.args[k]].val.int_val for call in muls for k in (1, 3)]
    assert min(zero_points) < -(1 << 24), zero_points


@pytest.mark.slow
@pytest.mark.parametrize("name", [*NETWORKS, "dead-hardswish"])
def test_native_runs_them_bit_exact(programs, name):
    samples = inputs_of(name, programs[name], 4)
    with open_device("native", programs[name]) as device:
        assert_bit_exact(device.run_batch(samples), programs[name], samples)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*NETWORKS, "dead-hardswish"])
def test_the_m55_board_runs_them_bit_exact(programs, firmware_elf_path, name):
    samples = inputs_of(name, programs[name], 3)
    with open_device("mcu", programs[name], board="mps3-an547", transport="batch") as device:
        assert_bit_exact(device.run_batch(samples), programs[name], samples)


def test_a_program_image_has_the_programs_own_limits(m55_pte):
    from tinyrps.deploy.firmware_image import program_limits
    from tinyrps.firmware import c_facts
    plan = plan_of(m55_pte)
    limits = program_limits(m55_pte.read_bytes())
    assert limits["TRT_MAX_KERNEL_CALLS"] == len(plan.chains[0].instructions) < c_facts.limits()["TRT_MAX_KERNEL_CALLS"]
    assert limits["TRT_MAX_OPERATORS"] == len(plan.operators) and limits["TRT_MAX_VALUES"] == len(plan.values)
    assert (limits["TRT_MAX_INPUTS"], limits["TRT_MAX_OUTPUTS"]) == (len(plan.inputs), len(plan.outputs))
    assert set(limits) == set(c_facts.limits())


@pytest.mark.slow
def test_the_program_image_runs_with_its_own_tables(m55_pte, firmware_elf_path, images):
    """Built with the program's counts, the image reports them as its limits and runs the program as the generic
    image does (same outputs and instructions), with less RAM."""
    from tinyrps.deploy.firmware_image import program_image_elf
    from tinyrps.firmware.qemu import run_batch
    from tinyrps.measure.firmware import elf_sections, memory_footprint
    generic = run_batch(m55_pte, images[:3], elf=firmware_elf_path)
    own_elf = program_image_elf(m55_pte.read_bytes(), generic.layers, "mps3-an547")
    own = run_batch(m55_pte, images[:3], elf=own_elf)
    assert own.limits["TRT_MAX_KERNEL_CALLS"] == len(plan_of(m55_pte).chains[0].instructions)
    assert generic.limits["TRT_MAX_KERNEL_CALLS"] == 128
    assert np.array_equal(own.int8, generic.int8) and np.array_equal(own.instructions, generic.instructions)
    assert memory_footprint(elf_sections(own_elf))["bss"] < memory_footprint(elf_sections(firmware_elf_path))["bss"]


@pytest.mark.slow
def test_a_program_the_board_cannot_hold_says_how_much_it_needs(m55_pte, firmware_elf_path, tmp_path):
    """The memory plan grown to 600 KB: more than the Cortex-M55 board's 512 KiB of RAM."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    program = deserialize_pte_binary(m55_pte.read_bytes())
    program.program.execution_plan[0].non_const_buffer_sizes = [0, 600_000]
    large = tmp_path / "large.pte"
    large.write_bytes(bytes(serialize_pte_binary(copy.deepcopy(program), extract_delegate_segments=False)))
    for transport in ("serial", "batch"):
        with pytest.raises(UserError) as raised:
            with open_device("mcu", large, transport=transport) as device:
                device.run_batch([np.zeros((1, 1, 1, 28, 28), np.float32)])
        message = str(raised.value)
        assert "large.pte does not fit the mps3-an547 firmware: it needs an arena of 600," in message, message
        assert "the board has" in message and "bytes of RAM left for it" in message and "\n" not in message
