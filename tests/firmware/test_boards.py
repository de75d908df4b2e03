"""The three emulated boards: each port's memory map agrees with the host's board table, and a
program of each core runs on its own board (or, with --board, on another), bit-exact."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tinyrps.devices import open_device
from tinyrps.infra.errors import UserError
from tinyrps.firmware import boards
from tinyrps.measure.firmware import elf_sections

pytestmark = pytest.mark.slow     # builds the firmware of every board, boots QEMU

CORES = [("cortex-m55", "mps3-an547", "mve"), ("cortex-m33", "mps2-an505", "dsp"), ("cortex-m4", "mps2-an386", "dsp")]


def elf_symbols(elf) -> dict:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}


@pytest.mark.parametrize("board", list(boards.BOARDS))
def test_port_memory_map_matches_the_board_table(board, firmware_elf_path):
    from tinyrps.firmware.qemu import firmware_elf      # firmware_elf_path: the tools are installed
    spec = boards.get_board(board)
    for kernels in boards.KERNEL_SETS:
        elf = firmware_elf(board, kernels)
        symbols, sections = elf_symbols(elf), elf_sections(elf)
        assert symbols["__model_base"] == spec.model_address
        assert symbols["__model_max_size"] == spec.model_max_bytes
        assert sections[".boot_args"][0] == spec.descriptor_address
        # the arena takes the RAM region's rest, up to its end
        assert symbols["__arena_end"] == spec.descriptor_address + spec.ram_bytes
        assert symbols["__arena_start"] == sections[".arena"][0] and sections[".arena"][1] >= 256 * 1024
        assert elf.read_bytes().count(board.encode()) >= 1      # the name `info` reports


def test_the_m55_board_builds_without_mve_too(cortex_m_pte, test_images):
    """The Cortex-M55 built with -mcpu=cortex-m55+nomve binds the DSP kernels on the same board:
    the same outputs as the Helium build."""
    from tinyrps.firmware.qemu import firmware_elf, run_batch
    images = test_images[0][:2]
    fast = run_batch(cortex_m_pte, images, elf=firmware_elf("mps3-an547"), board="mps3-an547")
    dsp = run_batch(cortex_m_pte, images, elf=firmware_elf("mps3-an547", "dsp"), board="mps3-an547")
    assert np.array_equal(fast.int8, dsp.int8) and dsp.board == "mps3-an547"
    with pytest.raises(UserError, match="valid: isa, c$"):
        firmware_elf("mps2-an386", "dsp")


def test_a_firmware_image_of_another_board_is_refused(cortex_m_pte, test_images):
    """The AN386 image loads on QEMU's AN547 at the wrong addresses; whatever it does, it is refused."""
    from tinyrps.firmware.qemu import firmware_elf, run_batch
    with pytest.raises(UserError):
        run_batch(cortex_m_pte, test_images[0][:1], elf=firmware_elf("mps2-an386"), board="mps3-an547", timeout=20)


def test_every_core_with_a_target_has_a_board():
    from tinyrps.hardware.cores import CORES
    from tinyrps.hardware.families import get_family
    assert {c.name for c in CORES} == {t.name for t in get_family("cortex-m").targets}
    assert all(c.board in boards.BOARDS for c in CORES)
    assert boards.board_for_core("cortex-m85").name == "mps3-an547"      # no M85 machine in QEMU 7.2
    with pytest.raises(UserError, match="unknown board 'mps2-an999'; valid boards: mps3-an547"):
        boards.get_board("mps2-an999")


@pytest.mark.parametrize("core,board,kernels", CORES)
def test_program_runs_on_its_cores_board(exported, measured, test_images, core, board, kernels):
    from fixture_cache import reference_int8
    pte = exported(core)
    firmware = measured(pte)["firmware"]
    assert (firmware["board"], firmware["core"], firmware["kernels"]) == (board, core, kernels)
    images = test_images[0][:3]
    with open_device("mcu", pte) as device:
        device.classify(images)
        assert device.info.board == board and device.last_stats()["board"] == board
        assert np.array_equal(device.last_int8, reference_int8(pte, images))
        # the serial count is the one the measure stage took on the same board (same firmware build)
        # (the counts vary with the image only in data-dependent branches: well under 1 %)
        served = device.last_stats()["instructions"]
        assert abs(served - firmware["instructions_per_inference"]) <= 0.01 * firmware["instructions_per_inference"]


@pytest.mark.parametrize("core", [c for c, _, _ in CORES[1:]])
def test_the_measurement_has_layers_and_the_plain_c_count(exported, measured, core):
    firmware = measured(exported(core))["firmware"]
    total = firmware["instructions_per_inference"]
    assert abs(sum(layer["instructions"] for layer in firmware["layers"]) - total) <= 0.05 * total
    assert firmware["instructions_per_inference_plain_c"] > 0
    assert {"op", "kernels", "instructions", "macs", "instructions_plain_c"} <= set(firmware["layers"][0])
    assert firmware["flash_bytes"] <= 512 * 1024 and firmware["ram_bytes"] <= 128 * 1024


# The official ExecuTorch runtime's memory for the default program (docs/library.md): its memory
# plan, method allocator pool and temp allocator, 38,208 + 5,900 + 212 B.
OFFICIAL_ARENA_BYTES = 38_208 + 5_900 + 212


@pytest.mark.parametrize("core", [c for c, _, _ in CORES])
def test_the_arena_is_at_most_the_official_runtimes_on_every_board(exported, measured, core):
    """The memory plan as exported (38,208 B), the kernels' workspace and the working memory the calls
    find no room for in the plan, together no more than the official runtime needs for the program."""
    firmware = measured(exported(core))["firmware"]
    parts = firmware["arena_parts_bytes"]
    assert parts["planned"] == 38_208, parts
    assert firmware["arena_bytes"] == sum(parts.values()) <= OFFICIAL_ARENA_BYTES, parts


def heavy(op: str) -> bool:
    return any(kind in op for kind in ("conv", "linear", "pool"))


@pytest.mark.parametrize("core,board,kernels", CORES)
def test_each_heavy_layer_ran_the_cores_fastest_kernels(exported, measured, core, board, kernels):
    """The measurement's kernels are what the runtime bound, per layer (the batch's profile block)."""
    firmware = measured(exported(core))["firmware"]
    layers = firmware["layers"]
    assert sum(heavy(layer["op"]) for layer in layers) == 7      # 3 convolutions, 2 pools, 2 linear layers
    assert {layer["kernels"] for layer in layers if heavy(layer["op"])} == {kernels} == {firmware["kernels"]}
    # quantize, dequantize and the copy have Helium variants; of them only quantize has a DSP one
    light = {layer["op"].split("::")[1]: layer["kernels"] for layer in layers if not heavy(layer["op"])}
    assert "quantize_per_tensor" in light, light
    if kernels == "mve":
        assert set(light.values()) == {"mve"}, light
    else:
        assert light.pop("quantize_per_tensor") == "dsp" and set(light.values()) == {"c"}, light


@pytest.mark.parametrize("core,board", [(core, board) for core, board, _ in CORES])
def test_the_plain_c_build_binds_c_for_every_call(exported, test_images, core, board):
    from tinyrps.firmware.qemu import firmware_elf, run_batch
    batch = run_batch(exported(core), test_images[0][:1], elf=firmware_elf(board, "c"), board=board)
    assert len(batch.layers) == 10 and {layer["kernels"] for layer in batch.layers} == {"c"}


def test_board_option_overrides_the_descriptors_core(exported, test_images):
    pte = exported("cortex-m4")
    with open_device("mcu", pte, board="mps2-an505", transport="batch") as device:
        device.classify(test_images[0][:2])
        assert device.info.board == "mps2-an505" and "Cortex-M33" in device.describe()
        assert device.last_stats()["board"] == "mps2-an505"


def test_unknown_board_on_the_command_line(cli, exported):
    res = cli("classify", "--model", exported("cortex-m4"), "--device", "mcu", "--board", "mps2-an999", "x.png")
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "mps2-an999" in res.stderr and "mps2-an505" in res.stderr


def test_board_option_needs_the_mcu_device(cli, exported):
    res = cli("play", "--model", exported("cortex-m4"), "--device", "native", "--board", "mps2-an505", "--moves", "r")
    assert res.returncode == 2 and "--device mcu" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def _input_quantization(pte) -> tuple:
    """(scale, zero_point, quant_min, quant_max) of the program's first call, its input quantize."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(Path(pte).read_bytes()).program.execution_plan[0]
    call = plan.chains[0].instructions[0].instr_args
    assert plan.operators[call.op_index].name == "cortex_m::quantize_per_tensor"
    return tuple(plan.values[call.args[i]].val.double_val if i == 1 else plan.values[call.args[i]].val.int_val
                 for i in range(1, 5))


def _special_inputs(pte) -> np.ndarray:
    """Four float32 inputs [4, 1, 1, 28, 28] of values quantize must define: infinities, values far past the
    int8 range and past int32, exact ties of the input scale (to even), and NaN in every other pixel."""
    scale, zero_point = _input_quantization(pte)[:2]
    rng = np.random.default_rng(17)
    x = rng.uniform(0.0, 1.0, (4, 28 * 28)).astype(np.float32)
    specials = np.array([np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 2.0 ** 31, -(2.0 ** 31)], np.float32)
    x[0, ::7] = np.resize(specials, x[0, ::7].size)
    ties = (np.arange(-140, 140) + 0.5 - zero_point) * scale   # x / scale lands on k + 0.5
    x[1, :ties.size] = ties.astype(np.float32)
    x[2, ::2] = np.nan
    x[3, ::3] = -np.nan
    return x.reshape(4, 1, 1, 28, 28)


@pytest.mark.parametrize("board", ["mps2-an505", "mps2-an386"])
def test_the_dsp_quantize_defines_nan_and_infinities_on_the_boards(exported, board):
    """The DSP quantize_per_tensor on the boards (VMAXNM/VMINNM on the M33, two comparisons on the M4,
    VCVTR's ties to even) against ExecuTorch's reference operators: infinities and values past any
    integer range clamp, ties round to even, bit for bit. NaN has no result in the reference (torch casts
    it to int8 through an undefined C conversion: 0 on x86); the runtime defines it as quant_min (docs/
    runtime.md), which is what the reference gives for -inf: the outputs equal the reference's with every
    NaN replaced by -inf."""
    from tinyrps.firmware.qemu import firmware_elf, run_batch
    from tinyrps.reference.cortex_m import replay_many_with_int8
    pte = exported("cortex-m4")
    x = _special_inputs(pte)
    result = run_batch(pte, [x], elf=firmware_elf(board), board=board)
    assert result.layers[0]["op"] == "cortex_m::quantize_per_tensor" and result.layers[0]["kernels"] == "dsp"
    expected = replay_many_with_int8(pte, [np.where(np.isnan(x), np.float32(-np.inf), x)])[1][0]
    expected = expected.reshape(len(x), -1)        # [N, 1, classes] -> the firmware's [N, classes]
    np.testing.assert_array_equal(result.int8, expected)
    assert len({row.tobytes() for row in expected}) == 4, "the four inputs should give four outputs"
