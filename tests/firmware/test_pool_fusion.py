"""A quantized max pool fused into the quantized convolution before it (ops/conv2d.c, runtime.c).

The convolution's kernels then take the largest int32 accumulator of each pool window and
requantize it once, which is the pool of the requantized outputs bit for bit only where the
requantization keeps the order (positive multipliers) and the chain lets the convolution's output
go (the pool is its only reader). The probes below are exported through the project's Cortex-M
flow for cortex-m55 and cortex-m4, on awkward shapes: channel counts that are not multiples of 4
or 16, odd maps whose last row and column the pool drops, a stride-2 padded convolution, windows
of 2, 3, 4 and 9 pixels, and pairs that must not fuse (an overlapping pool, a convolution output
that another call reads too, a negative multiplier written into the program). Then:

- the loader fuses exactly the pairs it may (`tinyrps-native info`'s "fused");
- natively, the plain-C and DSP kernels give every call's output bytes equal to ExecuTorch's
  Python reference replaying the program (a fused convolution has no output of its own: its
  pool's output is compared);
- on the emulated boards (the Cortex-M55 with its Helium, DSP and plain-C builds, the Cortex-M33
  and Cortex-M4 with the DSP kernels), the int8 outputs equal the reference's on every image.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import elementwise_reference  # noqa: E402
import fixture_cache  # noqa: E402  (tests/, on the path from the top conftest)
import probes_conv  # noqa: E402

from tinyrps.data import make_split  # noqa: E402
from tinyrps.reference import cortex_m as reference  # noqa: E402

CORES = ("cortex-m55", "cortex-m4")
CONV = "cortex_m::quantized_conv2d"


class SharedOutput(nn.Module):
    """A convolution whose output a max pool and an average pool both read: not fused."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(1, 4, 3)                      # 26x26x4
        self.conv = nn.Conv2d(4, 7, 3, padding=1)            # 26x26x7
        self.head = nn.Linear(13 * 13 * 7, probes_conv.LINEAR_OUT)

    def forward(self, x):
        y = torch.relu(self.conv(torch.relu(self.first(x))))
        z = nn.functional.max_pool2d(y, 2) + nn.functional.avg_pool2d(y, 2)
        return self.head(z.flatten(1))


# name -> (builder, how many convolution + max pool pairs the loader fuses)
PROBES = {
    # 2x2 pools after a stride-2 padded convolution of 13 channels (14x14 -> 7x7) and after one of
    # 19 channels on the odd 7x7 map (-> 3x3: the last row and column are never computed)
    "pool_2x2": (lambda: probes_conv.with_head(nn.Sequential(
        nn.Conv2d(1, 5, 3, padding=1), nn.ReLU(),            # the one-channel first layer (depthwise)
        nn.Conv2d(5, 13, 3, stride=2, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(13, 19, 3, padding=1),
        nn.MaxPool2d(2))), 2),
    # windows of 9 (3x3 on 26x26: two rows and columns dropped), 2 (1x2) and 2 (2x1) pixels, 7, 33
    # and 5 channels; then an overlapping pool (stride 1), which is not fused and follows a pool
    "pool_windows": (lambda: probes_conv.with_head(nn.Sequential(
        nn.Conv2d(1, 6, 3), nn.ReLU(),                       # 26x26x6
        nn.Conv2d(6, 7, 3, padding=1),
        nn.MaxPool2d(3),                                     # 8x8x7
        nn.Conv2d(7, 33, 1),
        nn.MaxPool2d((1, 2)),                                # 8x4x33
        nn.Conv2d(33, 5, (3, 1), padding=(1, 0)), nn.ReLU(),
        nn.MaxPool2d((2, 1)),                                # 4x4x5
        nn.Conv2d(5, 6, 1),
        nn.MaxPool2d(2, stride=1))), 3),                     # 3x3x6, overlapping windows
    "shared_output": (SharedOutput, 0),
}

# One channel of every convolution with its multiplier negated (the requantization then reverses
# the order, so the pool of the outputs is not the requantized largest accumulator): never fused.
MULTIPLIERS = 8   # quantized_conv2d's argument: requantize_multipliers


def _negate_first(old: bytes) -> bytes:
    values = np.frombuffer(old, "<i4").copy()
    values[0] = -values[0]
    return values.tobytes()


@pytest.fixture(scope="module")
def images() -> np.ndarray:
    return make_split("test", 3, 31)[0]


@pytest.fixture(scope="module")
def programs(images, tmp_path_factory):
    """(name, core, negated) -> .pte, exported once (and kept across runs)."""
    key = fixture_cache.fixture_key("pool-fusion-probes", files=[Path(probes_conv.__file__), Path(__file__)],
                                    modules=["tinyrps.export.cortex_m", "tinyrps.model", "tinyrps.quantization",
                                             "tinyrps.reference.cortex_m", "tinyrps.data"])
    edited = tmp_path_factory.mktemp("pool-fusion-edited")
    cache = {}

    def get(name: str, core: str, negated: bool = False) -> Path:
        if (name, core, False) not in cache:
            def build(out: Path) -> None:
                probes_conv.export_probe(PROBES[name][0], name, core, images, out)
            folder = fixture_cache.cached_folder(f"pool-fusion-{name}-{core}", key, build,
                                                 tmp_path_factory.mktemp("pool-fusion"))
            cache[name, core, False] = folder / f"{name}-{core}.pte"
        if negated and (name, core, True) not in cache:
            pte = edited / f"{name}-{core}-negated.pte"
            pte.write_bytes(elementwise_reference.edited_program(cache[name, core, False], CONV,
                                                                 constants={MULTIPLIERS: _negate_first}))
            cache[name, core, True] = pte
        return cache[name, core, negated]
    return get


def fused_pairs(native, tool, pte) -> list:
    """The (convolution, pool) call pairs the loader fused."""
    info = json.loads(native.tool(tool, "info", pte).stdout)
    fused, calls = info["fused"], info["calls"]
    pairs = [(i, i + 1) for i, f in enumerate(fused) if f == 1]
    for i, j in pairs:
        assert calls[i] == CONV and calls[j] == "cortex_m::quantized_max_pool2d" and fused[j] == 2, info
    assert fused.count(2) == len(pairs), info
    return pairs


def reference_layers(pte, image) -> list:
    return reference.replay_layers(pte, image)


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("name", sorted(PROBES))
def test_the_loader_fuses_what_it_may_and_the_bytes_equal_the_reference(name, core, programs, images, native,
                                                                        native_tool, native_dsp_tool, tmp_path):
    pte = programs(name, core)
    for tool in (native_tool, native_dsp_tool):
        assert len(fused_pairs(native, tool, pte)) == PROBES[name][1], tool.name
        assert native.layer_mismatches(tool, pte, images, tmp_path, reference_layers) == [], tool.name
    expected = reference.reference_int8(pte, images)
    assert len(np.unique(expected)) > 3, "degenerate outputs would not test the arithmetic"


@pytest.mark.parametrize("core", CORES)
def test_a_negative_multiplier_is_not_fused(core, programs, images, native, native_tool, native_dsp_tool, tmp_path):
    pte = programs("pool_2x2", core, negated=True)
    for tool in (native_tool, native_dsp_tool):
        assert fused_pairs(native, tool, pte) == [], tool.name
        assert native.layer_mismatches(tool, pte, images, tmp_path, reference_layers) == [], tool.name
    # the unedited program fuses both pairs, and the edit changes what the program computes
    assert len(fused_pairs(native, native_tool, programs("pool_2x2", core))) == 2
    assert not np.array_equal(reference.reference_int8(pte, images),
                              reference.reference_int8(programs("pool_2x2", core), images))


@pytest.fixture(scope="module")
def m55_variants(firmware_elf_path):
    """The AN547 firmware with each of the Cortex-M55's kernel paths (Helium is the default)."""
    from tinyrps.firmware import build_firmware
    from tinyrps.firmware.qemu import FIRMWARE_EXECUTABLE
    return {variant: build_firmware(kind).tool(FIRMWARE_EXECUTABLE)
            for variant, kind in (("mve", "mps3-an547"), ("dsp", "mps3-an547-dsp"), ("c", "mps3-an547-c"))}


@pytest.mark.slow     # builds the firmware for three boards (the M55 three times), boots QEMU
@pytest.mark.parametrize("name,negated", [(name, False) for name in sorted(PROBES)] + [("pool_2x2", True)],
                         ids=[f"{name}-as-exported" for name in sorted(PROBES)] + ["pool_2x2-negative-multiplier"])
def test_the_boards_match_the_reference(name, negated, programs, images, m55_variants):
    """Every probe as exported, and the one probe whose multiplier is negated (it must not fuse)."""
    from tinyrps.firmware.qemu import firmware_elf, run_batch
    runs = [("cortex-m55", variant, elf, "mps3-an547") for variant, elf in m55_variants.items()] + \
           [("cortex-m4", "dsp", firmware_elf(board), board) for board in ("mps2-an505", "mps2-an386")]
    for core, variant, elf, board in runs:
        pte = programs(name, core, negated)
        expected = reference.reference_int8(pte, images)
        result = run_batch(pte, images, elf=elf, board=board)
        mismatching = int((result.int8 != expected).any(axis=1).sum())
        assert mismatching == 0, f"{board} {variant}: {mismatching} of {len(expected)} images differ"
        pools = [layer for layer in result.layers if layer["op"] == "cortex_m::quantized_max_pool2d"]
        assert {layer["kernels"] for layer in pools} == {variant}, (board, variant)
