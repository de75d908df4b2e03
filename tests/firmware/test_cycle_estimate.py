"""The cycle estimate on the emulated boards: QEMU's trace of one inference, mapped onto the firmware's
disassembly, must give each kernel call the instructions the firmware counts itself (so the
estimate is of the code that ran), and the estimate is labelled as one."""
from __future__ import annotations

import pytest

from tinyrps.hardware import descriptor
from tinyrps.measure.cycles import ESTIMATE_NOTE, TIMINGS, measure_program

pytestmark = pytest.mark.slow     # builds the firmware, boots QEMU with its trace on


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m33", "cortex-m4"])
def test_each_kernel_call_is_traced_as_the_firmware_counts_it(exported, firmware_elf_path, target):
    # firmware_elf_path: the cross toolchain and QEMU are installed (or the test fails saying how)
    pte = exported(target)
    estimate = measure_program(pte, descriptor.read(pte))
    assert estimate["note"] == ESTIMATE_NOTE and "not a measurement" in estimate["note"]
    timing = TIMINGS[estimate["core"]]
    assert estimate["uncertainty"] == timing.uncertainty and estimate["clock_hz"] == timing.clock_hz
    for layer in estimate["layers"]:
        # the counter is read to a SysTick tick (about 31 instructions) at each end of the call
        assert abs(layer["traced_instructions"] - layer["instructions"]) <= 64, layer
        assert 0.5 * layer["traced_instructions"] <= layer["estimated_cycles"] <= 4 * layer["traced_instructions"]
    total = sum(layer["estimated_cycles"] for layer in estimate["layers"])
    assert estimate["estimated_cycles_per_inference"] == total
    assert estimate["estimated_ms"] == pytest.approx(total / timing.clock_hz * 1e3, rel=1e-3)
