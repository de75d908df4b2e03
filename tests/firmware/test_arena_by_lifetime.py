"""The kernels' workspace and working memory in the memory plan's free bytes, placed by lifetime at load
(runtime.c, place_by_lifetime): where the plan has bytes that hold no value while they are live, the arena
is no larger than the plan's largest live set, and every result stays bit-exact.

- DS-CNN (MLPerf Tiny, integer inputs and outputs) with the plain-C kernels, natively: 20,464 B, its
  largest live set (with the workspace beside the plan, 23,536 B);
- TinyRPS's default program with the Helium kernels on the Cortex-M55 board: 38,208 B, its largest live
  set (with the convolutions' folded biases beside the plan, 39,056 B)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_cache  # noqa: E402

from tinyrps.devtools import zoo  # noqa: E402
from tinyrps.measure.live_set import largest_live_set  # noqa: E402

pytestmark = pytest.mark.slow      # an export, a QEMU run


@pytest.fixture(scope="module")
def ds_cnn(tmp_path_factory) -> Path:
    """DS-CNN exported for the Cortex-M55 with integer inputs and outputs (kept across runs)."""
    key = fixture_cache.fixture_key("zoo-export-int8", zoo.DEFAULT_SEED,
                                    modules=["tinyrps.devtools.zoo", *fixture_cache.package_modules("tinyrps.export")])

    def build(out: Path) -> None:
        zoo.export_network("ds-cnn-small", "cortex-m55", out, io="int8")
    folder = fixture_cache.cached_folder("zoo-ds-cnn-small-cortex-m55-int8", key, build,
                                         tmp_path_factory.mktemp("ds-cnn"))
    return folder / "ds-cnn-small-cortex-m55-int8.pte"


def test_natively_the_arena_of_ds_cnn_is_its_largest_live_set(ds_cnn, native_tool, native):
    from tinyrps.devices import open_device
    from tinyrps.reference.cortex_m import replay_many
    info = json.loads(native.tool(native_tool, "info", ds_cnn).stdout)
    assert set(info["kernels"]) == {"c"}
    assert info["arena_bytes"] == largest_live_set(ds_cnn.read_bytes())["bytes"] == 20_464
    shape = zoo.bit_exact_inputs("ds-cnn-small", 16)[0].shape
    inputs = [np.random.default_rng(3).integers(-128, 128, shape, dtype=np.int8)]
    with open_device("native", ds_cnn) as device:
        result = device.run_batch(inputs)
    (want,) = replay_many(ds_cnn, inputs)
    assert result.outputs[0].dtype == want.dtype == np.int8
    np.testing.assert_array_equal(result.outputs[0], want)


def test_on_the_m55_the_arena_of_the_default_program_is_its_largest_live_set(cortex_m_pte, firmware_elf_path,
                                                                            test_images):
    from tinyrps.firmware import qemu
    from tinyrps.reference.cortex_m import reference_int8
    batch = qemu.run_batch(cortex_m_pte, test_images[0], elf=firmware_elf_path)
    assert {layer["kernels"] for layer in batch.layers if "conv" in layer["op"]} == {"mve"}
    live = largest_live_set(cortex_m_pte.read_bytes())["bytes"]
    assert batch.arena_parts == {"planned": live, "workspace": 0, "working": 0}
    assert batch.arena_needed == live == 38_208
    np.testing.assert_array_equal(batch.int8, reference_int8(cortex_m_pte, test_images[0]))
