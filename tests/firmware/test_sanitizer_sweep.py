"""Thousands of corrupted programs through the runtime under AddressSanitizer and UBSan.

Any out-of-bounds access, use of uninitialised pointers or undefined arithmetic aborts
the sweep (-fno-sanitize-recover=all) and fails the test with the sanitizer's report.
The sweep runs twice: with the plain-C kernels, and with the DSP kernels (on the portable
model of the DSP instructions), so every kernel variant the host can run is swept.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

SWEEP = {"cortex-m55": 1200, "cortex-m4": 400}


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["c", "dsp"])
def test_mutation_sweep_finds_nothing(kernels, exported, asan_build, native):
    mutate = asan_build.tool("tinyrps-mutate" + ("-dsp" if kernels == "dsp" else ""))
    total = 0
    for target, count in SWEEP.items():
        summary = json.loads(native.tool(mutate, exported(target), count, 20261130).stdout)
        assert summary["mutations"] == count
        assert summary["semantic_targets"] > 300, "the reader found too few fields to mutate"
        # both outcomes must be frequent, or the sweep tests little
        assert 0.05 * count < summary["loaded_and_ran"] < 0.6 * count, summary
        assert sum(summary["rejected"].values()) + summary["loaded_and_ran"] == count
        total += count
    assert total >= 1500


@pytest.mark.parametrize("tool", ["tinyrps-native", "tinyrps-native-dsp"])
def test_sanitized_build_computes_the_same_outputs(tool, m55_pte, images, native, native_tool, asan_build, tmp_path):
    plain = native.run(native_tool, m55_pte, images[:40], tmp_path)
    sanitized = native.run(asan_build.tool(tool), m55_pte, images[:40], tmp_path)
    for a, b in zip(plain, sanitized):
        np.testing.assert_array_equal(a, b)
