"""The ten cores ExecuTorch's Cortex-M backend targets: each exports, and the default network's program
runs bit-exact on the board its tinyrps.hardware.cores record names, with the firmware built for it (the
M0, M0+ and M23 for their own architectures on the board of a core whose instruction set contains theirs),
the board and the core named wherever the run is described."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from tinyrps.devices import open_device
from tinyrps.firmware import boards
from tinyrps.hardware.cores import CORES, get_core

# The cores test_boards.py covers (M55, M33, M4) and these: core, board, kernels the heavy layers
# bind, the core the firmware is built for, its ELF's Tag_CPU_arch (readelf -A).
NEW_CORES = [
    ("cortex-m85", "mps3-an547", "mve", "cortex-m55", "v8.1-M.mainline"),
    ("cortex-m7", "mps2-an500", "dsp", "cortex-m7", "v7E-M"),
    ("cortex-m3", "mps2-an385", "c", "cortex-m3", "v7"),
    ("cortex-m0", "mps2-an385", "c", "cortex-m0", "v6S-M"),
    ("cortex-m0plus", "mps2-an385", "c", "cortex-m0plus", "v6S-M"),
    ("cortex-m23", "mps2-an505", "c", "cortex-m23", "v8-M.baseline"),
    ("cortex-m35p", "mps2-an505", "dsp", "cortex-m33", "v8-M.mainline"),
]


def test_the_ten_targets_are_executorchs():
    """Every core ExecuTorch 1.5.1's CortexMTargetConfig knows has its row, and every row a board."""
    from executorch.backends.cortex_m.target_config import CortexM, CortexMTargetConfig
    assert {c.name for c in CORES} == {CortexMTargetConfig(cpu=m).target_string for m in CortexM}
    assert all(c.board in boards.BOARDS for c in CORES)
    for core in CORES:       # a hosted core runs on a board whose own core is its host
        assert boards.get_board(core.board).core == (core.host or core.name), core


def elf_arch(elf) -> str:
    out = subprocess.run(["arm-none-eabi-readelf", "-A", str(elf)], capture_output=True, text=True, check=True).stdout
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if "Tag_CPU_arch:" in line)


@pytest.mark.parametrize("core,board,kernels,built_for,arch", NEW_CORES)
def test_the_default_network_runs_bit_exact_on_each_cores_board(exported, measured, test_images, core, board,
                                                                  kernels, built_for, arch):
    from fixture_cache import reference_int8
    from tinyrps.firmware.qemu import firmware_elf
    pte = exported(core)
    firmware = measured(pte)["firmware"]
    assert (firmware["board"], firmware["core"], firmware["kernels"]) == (board, built_for, kernels)
    assert elf_arch(firmware_elf(board, "isa", core)) == arch
    record = get_core(core)
    if record.host:           # the measurement says where a core QEMU has no machine for ran
        assert board in firmware["note"] and record.display in firmware["note"]
    images = test_images[0][:3]
    with open_device("mcu", pte) as device:           # the serial link: the port's UART too
        device.classify(images)
        assert device.info.board == board and device.last_stats()["board"] == board
        assert np.array_equal(device.last_int8, reference_int8(pte, images))
        assert board in device.describe()
        if record.own_build:
            assert f"{record.display} build on the" in device.describe()


def test_a_core_built_for_itself_has_a_firmware_build_of_its_own():
    """The M0 runs its own build on the M3's board; the M35P runs the M33's; a plain-C core has one build."""
    from tinyrps.firmware.build import BUILDS
    assert boards.firmware_build("mps2-an385", "isa", "cortex-m0") == "mps2-an385-cortex-m0"
    assert boards.firmware_build("mps2-an385", "c", "cortex-m0") == "mps2-an385-cortex-m0"
    assert boards.firmware_build("mps2-an505", "isa", "cortex-m23") == "mps2-an505-cortex-m23"
    assert boards.firmware_build("mps2-an505", "isa", "cortex-m35p") == "mps2-an505"
    assert boards.firmware_build("mps2-an505", "c", "cortex-m35p") == "mps2-an505-c"
    assert boards.firmware_build("mps2-an385", "c") == "mps2-an385"           # the M3: plain C only
    assert boards.firmware_build("mps2-an386", "isa", "cortex-m0") == "mps2-an386"   # --board: that board's own
    m0 = BUILDS["mps2-an385-cortex-m0"].cmake_args
    assert {"-DTINYRPS_CPU=cortex-m0", "-DTINYRPS_GUEST_CORE=ON", "-DTINYRPS_FLOAT_ABI=soft"} <= set(m0)
    assert not any("FLOAT_ABI" in arg for arg in BUILDS["mps2-an500"].cmake_args)     # the M7 has an FPU


def test_a_hosted_core_names_its_board_in_its_description():
    from tinyrps.hardware.families import get_family
    described = {t.name: t.description for t in get_family("cortex-m").targets}
    assert "Cortex-M0 (plain C; its own build on the Cortex-M3 of mps2-an385)" in described["cortex-m0"]
    assert "Cortex-M35P (DSP; run by the Cortex-M33 of mps2-an505)" in described["cortex-m35p"]
    assert "Cortex-M7 (DSP)" in described["cortex-m7"]


def test_the_cycle_model_has_rows_for_the_cores_it_estimates():
    """The M7 has its own row (single-issue, so the widest band); the M85 and M35P use their hosts'; a core
    with a build of its own on another's board, and the M3, have instruction counts only."""
    from tinyrps.measure.cycles import TIMINGS, model_timing, models
    assert model_timing("cortex-m7") is TIMINGS["cortex-m7"]
    assert TIMINGS["cortex-m7"].uncertainty > max(t.uncertainty for name, t in TIMINGS.items() if name != "cortex-m7")
    assert model_timing("cortex-m85") is TIMINGS["cortex-m55"] and model_timing("cortex-m35p") is TIMINGS["cortex-m33"]
    assert [core for core in ("cortex-m3", "cortex-m0", "cortex-m0plus", "cortex-m23") if models(core)] == []
    assert models("cortex-m4") and not models("cortex-m99")


def test_a_cpu_fault_on_an_armv6_m_core_is_reported(exported, test_images, tmp_path):
    """The Thumb-1 form of the fault handler (no IT block, no TST with an immediate) reports a fault in the
    Cortex-M0 build as the other cores' handler does."""
    import importlib.util
    from pathlib import Path
    from tinyrps.firmware import qemu
    from tinyrps.firmware.link import LinkError
    spec = importlib.util.spec_from_file_location("qemu_firmware_tests", Path(__file__).with_name("test_qemu_firmware.py"))
    spec.loader.exec_module(helpers := importlib.util.module_from_spec(spec))
    _firmware_with_a_trap_in = helpers._firmware_with_a_trap_in     # a UDF at a function's start
    pte = exported("cortex-m0")
    elf = qemu.firmware_elf("mps2-an385", "isa", "cortex-m0")
    trapped = _firmware_with_a_trap_in(elf, "trt_infer", tmp_path / "trapped.elf")
    trapped = _firmware_with_a_trap_in(trapped, "trt_run", tmp_path / "trapped.elf")
    with qemu.LinkedFirmware(pte, elf=trapped, board="mps2-an385") as server:
        assert server.link.info().loaded
        with pytest.raises(LinkError, match=r"crashed during 'infer': cpu fault: pc=0x[0-9a-f]{8}$"):
            server.link.infer(test_images[0][0])
        server.process.wait(5)          # the firmware resets; -no-reboot ends QEMU


def test_a_library_for_a_plain_c_core_is_refused_in_one_line(cli, exported, tmp_path):
    """`deploy library` carries a core's DSP or Helium kernels beside plain C: for the M0 it says so and what
    to do, in one line (exit status 2), instead of failing on the missing variant."""
    res = cli("deploy", "library", "--model", exported("cortex-m0"), "--out", tmp_path / "lib")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "plain C only" in res.stderr and "--device mcu" in res.stderr and not (tmp_path / "lib").exists()
