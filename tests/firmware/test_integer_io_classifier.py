"""The runtime's image helper (trt_infer) on an RPS program exported with `--io int8`: the uint8 image goes in
as the int8 values the float program's first call makes of it, and the int8 output comes out dequantized as
the float program's last call does, so both programs give the same raw int8 values and the same logits, bit
for bit (`tinyrps-native infer`, the runtime's native build)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tinyrps.export import export_target


@pytest.mark.slow
def test_the_image_helper_gives_the_float_programs_results_from_an_integer_program(
        trained_run, data_dir, exported, native_tool, asan_build, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("export"))
    integer = export_target(run, "cortex-m55", data_dir=data_dir, io="int8")
    floating = exported("cortex-m55")
    from tinyrps.data import load_split
    images = np.asarray(load_split(data_dir, "test")[0])[:64]
    (tmp_path / "images.bin").write_bytes(images.astype(np.uint8).tobytes())
    results = {}
    sanitized = asan_build.tool("tinyrps-native")     # the integer path under AddressSanitizer and UBSan too
    for name, pte, tool in (("float", floating, native_tool), ("int8", integer, native_tool),
                            ("int8-asan", integer, sanitized)):
        done = subprocess.run([str(tool), "infer", str(pte), str(tmp_path / "images.bin"),
                               str(tmp_path / f"{name}.bin")], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        results[name] = (tmp_path / f"{name}.bin").read_bytes()
    assert len(results["int8"]) == 64 * 3 * 5
    assert results["int8"] == results["float"] == results["int8-asan"]
    q = np.frombuffer(results["float"][:64 * 3], np.int8)
    assert len(np.unique(q)) > 3, "degenerate outputs would not test the arithmetic"
