"""The 2x2 max pools the Helium build fuses into the layer before them, against the reference.

On the Cortex-M55 a max pool (2x2, stride 2, no padding) that alone reads a convolution's or a
one-input-channel depthwise layer's output is done by that layer's Helium kernel when it is exact
(every multiplier >= 0, channels in whole groups of four, and for the depthwise layer the whole int8
range): the layer pools its sums before one requantization and the pool only copies. The models
here reach the fused forms on awkward shapes -- a depthwise layer without an activation before its
pool, a 20-channel convolution whose 180-byte windows end in a 4-byte remainder and whose 60-byte
window rows are copied byte-wise, a convolution without padding (14 -> 12), a strided convolution
whose 3x3 output the pool cuts to 1x1 (the pixels no window reads are not computed) -- and the forms
that must not fuse: 6 and 13 channels, a clamped (ReLU6) range, a short window, a window not a
multiple of four bytes, and a negative multiplier (the requantization then decreases: the maximum of
the sums would give the minimum of the outputs). Each is compared with ExecuTorch's reference on
every image, on the Helium, DSP and plain-C builds of the AN547; whether a pool was fused shows in
its own instruction count, against the same program with one multiplier of the layer negated.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from tinyrps.data import make_split
from tinyrps.export import cortex_m
from tinyrps.reference import cortex_m as reference

from .elementwise_reference import edited_program

LINEAR_OUT = 12


def _with_head(body: nn.Module) -> nn.Module:
    with torch.no_grad():
        features = body(torch.zeros(1, 1, 28, 28)).numel()
    return nn.Sequential(body, nn.Flatten(), nn.Linear(features, LINEAR_OUT))


def fusion_models() -> dict:
    return {
        # every pool fusable: depthwise 1 -> 16 without an activation (the whole int8 range), a
        # 16 -> 20 convolution without padding (14 -> 12), a strided 20 -> 24 one (6 -> 3) whose pool
        # keeps one pixel of nine
        "fused": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.MaxPool2d(2),
            nn.Conv2d(16, 20, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(20, 24, 3, stride=2, padding=1), nn.MaxPool2d(2))),
        # the in-place kernel's shapes (3x3, stride 1, 16 or 32 channels in; conv2d_pooled.c), padded: a
        # 16 -> 32 layer (14 -> 7), then a 32 -> 12 one whose 7x7 output the pool cuts to 3x3 (its last
        # row and column are not computed) with 12 channels out (three pairs of pairs)
        "in_place": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 12, 3, padding=1), nn.MaxPool2d(2))),
        # the in-place kernel's shapes without a pool after the first (13x13: odd, every pixel its own
        # output), a pool after the second (13 -> 6); run on the image built for "in_place", where the
        # in-place kernel is the only Helium convolution
        "in_place_unpooled": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 12, 3, padding=1), nn.MaxPool2d(2))),
        # none fusable: 6 channels (depthwise), 13 channels clamped by ReLU6 through a 54-byte
        # (short) window, then a window of 117 bytes (not whole words)
        "unfused": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 6, 3, padding=1), nn.MaxPool2d(2),
            nn.Conv2d(6, 13, 3, padding=1), nn.ReLU6(), nn.MaxPool2d(2),
            nn.Conv2d(13, 8, 3, padding=1), nn.MaxPool2d(2))),
    }


def _negate_first(data: bytes) -> bytes:
    values = np.frombuffer(data, np.int32).copy()
    values[0] = -values[0]
    return values.tobytes()


# the requantization multipliers' argument of each layer kind (its schema)
MULTIPLIERS = {"cortex_m::quantized_conv2d": 8, "cortex_m::quantized_depthwise_conv2d": 9}


@pytest.fixture(scope="module")
def fusion_images() -> np.ndarray:
    return make_split("test", 6, 31)[0]


@pytest.fixture(scope="module")
def fusion_programs(fusion_images, tmp_path_factory):
    """name -> exported .pte for the Cortex-M55; "negated": "fused" with the first channel's multiplier of
    every convolution and depthwise layer negated ("in_place_negated": "in_place" so)."""
    folder = tmp_path_factory.mktemp("fusion")
    cache = {}

    def get(name: str):
        if name not in cache:
            if name.endswith("negated"):
                pte = folder / f"{name}.pte"
                data = get(name[:-len("negated")].rstrip("_") or "fused")
                for operator, position in MULTIPLIERS.items():
                    edited = folder / f"{name}-{operator.split('::')[1]}.pte"
                    edited.write_bytes(edited_program(data, operator, constants={position: _negate_first}))
                    data = edited
                pte.write_bytes(data.read_bytes())
            else:
                torch.manual_seed(sum(map(ord, name)))
                model = fusion_models()[name]().eval()
                lowered = cortex_m.lower_images(model, fusion_images, "cortex-m55")
                pte = folder / f"{name}.pte"
                pte.write_bytes(lowered.program)
            cache[name] = pte
        return cache[name]
    return get


@pytest.fixture(scope="module")
def m55_builds(firmware_elf_path):
    from tinyrps.firmware import build_firmware
    from tinyrps.firmware.qemu import FIRMWARE_EXECUTABLE
    return {variant: build_firmware(kind).tool(FIRMWARE_EXECUTABLE)
            for variant, kind in (("mve", "mps3-an547"), ("dsp", "mps3-an547-dsp"), ("c", "mps3-an547-c"))}


def _pool_instructions(result) -> list:
    return [layer["instructions"] for layer in result.layers if layer["op"].endswith("max_pool2d")]


@pytest.mark.slow     # boots QEMU three times per program
@pytest.mark.parametrize("name", ["fused", "unfused", "negated", "in_place", "in_place_negated", "in_place_unpooled"])
def test_every_build_matches_the_reference(name, fusion_programs, fusion_images, m55_builds):
    from tinyrps.firmware.qemu import run_batch
    pte = fusion_programs(name)
    expected = reference.reference_int8(pte, fusion_images)
    assert len(np.unique(expected)) > 8, "degenerate outputs would not test the arithmetic"
    for variant, elf in m55_builds.items():
        result = run_batch(pte, fusion_images, elf=elf)
        mismatching = int((result.int8 != expected).any(axis=1).sum())
        assert mismatching == 0, f"{variant}: {mismatching} of {len(expected)} images differ from the reference"


@pytest.mark.slow
def test_the_helium_build_fuses_what_is_exact_and_nothing_else(fusion_programs, fusion_images, m55_builds):
    """A fused pool copies its input; an unfused one reads four taps per output. With one multiplier
    negated no pool of the same program may fuse."""
    from tinyrps.firmware.qemu import run_batch
    images = fusion_images[:3]
    fused = _pool_instructions(run_batch(fusion_programs("fused"), images, elf=m55_builds["mve"]))
    negated = _pool_instructions(run_batch(fusion_programs("negated"), images, elf=m55_builds["mve"]))
    assert len(fused) == len(negated) == 3
    # a pool's count does not depend on the data: unfused, both programs' would be equal
    for pool, (a, b) in enumerate(zip(fused, negated)):
        assert a < b, f"pool {pool}: {a} instructions fused against {b} unfused"
    assert 2 * fused[0] < negated[0] and 2 * fused[1] < negated[1], (fused, negated)
    # the layers before the pools did the pools' work: the fused program runs in fewer instructions
    fused_total = run_batch(fusion_programs("fused"), images, elf=m55_builds["mve"]).instructions
    negated_total = run_batch(fusion_programs("negated"), images, elf=m55_builds["mve"]).instructions
    assert np.median(fused_total) < np.median(negated_total)


def test_the_negated_program_negates_what_it_should(fusion_programs):
    """The edited program differs from the fused one in the two multipliers alone, and the reference
    runs it (so the board comparisons above compare what they claim to)."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plans = [deserialize_pte_binary(fusion_programs(n).read_bytes()).program for n in ("fused", "negated")]
    buffers = [[bytes(b.storage) for b in p.constant_buffer] for p in plans]
    changed = [i for i, (a, b) in enumerate(zip(*buffers)) if a != b]
    assert 1 <= len(changed) <= 3   # the depthwise layer's and the two convolutions' (a shared buffer counts once)
    for i in changed:
        a, b = (np.frombuffer(x[i], np.int32) for x in buffers)
        assert b[0] == -a[0] and (a[1:] == b[1:]).all() and a[0] > 0


def _conv_variants(result) -> list:
    """The variant name each convolution of a run bound (its run function: ops/conv2d.c's list)."""
    from tinyrps.deploy.selection import FIRMWARE_ISAS, operator_files, variant_rows
    from tinyrps.firmware.sources import firmware_dir
    rel = operator_files(firmware_dir() / "src")["quantized_conv2d"]
    rows = [r for r in variant_rows((firmware_dir() / "src" / rel).read_text(), "quantized_conv2d", rel)
            if r[0] in FIRMWARE_ISAS["mve"]]
    return [rows[layer["variant"]][1] for layer in result.layers if layer["op"].endswith("quantized_conv2d")]


IN_PLACE = "trt_conv2d_pooled_mve"


@pytest.mark.slow
def test_the_in_place_kernel_takes_its_shapes_with_a_fused_pool(fusion_programs, fusion_images, m55_builds):
    """3x3 at stride 1 over 16 or 32 channels with a fused pool run read in place; the 20-channel input
    (fused), the strided layer, and every layer whose pool does not fuse (negated) run as before."""
    from tinyrps.firmware.qemu import run_batch
    images = fusion_images[:2]
    ran = {name: _conv_variants(run_batch(fusion_programs(name), images, elf=m55_builds["mve"]))
           for name in ("in_place", "fused", "in_place_negated")}
    assert ran["in_place"] == [IN_PLACE, IN_PLACE], ran
    assert ran["fused"][0] == IN_PLACE and IN_PLACE not in ran["fused"][1:], ran
    assert IN_PLACE not in ran["in_place_negated"], ran


@pytest.mark.slow
@pytest.mark.parametrize("name", ["in_place_negated", "in_place_unpooled"])
def test_the_in_place_kernel_without_a_pool_matches_the_reference(name, fusion_programs, fusion_images):
    """The image built for the in_place program keeps only the in-place row of the convolution's Helium
    variants, so there it binds every layer of its shape, fused or not: the layers whose pools do not
    fuse (negated) or that have none (unpooled) run its unpooled form, each pixel its own output."""
    from tinyrps.deploy.firmware_image import program_image_elf
    from tinyrps.firmware.qemu import run_batch
    pte = fusion_programs("in_place")
    layers = run_batch(pte, fusion_images[:1]).layers
    elf = program_image_elf(pte.read_bytes(), layers, "mps3-an547")
    other = fusion_programs(name)
    result = run_batch(other, fusion_images, elf=elf)
    # the image's only Helium convolution is the in-place one
    assert [layer["kernels"] for layer in result.layers if layer["op"].endswith("quantized_conv2d")] == ["mve"] * 2
    expected = reference.reference_int8(other, fusion_images)
    mismatching = int((result.int8 != expected).any(axis=1).sum())
    assert mismatching == 0, f"{mismatching} of {len(expected)} images differ from the reference"
