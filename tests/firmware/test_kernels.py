"""Every kernel variant against ExecuTorch's reference operators, on small models with awkward shapes.

Shapes no default model has: channel counts that are not multiples of 4 or 16 (1, 3, 5, 7, 13, 17,
19, 33), padding, padding wider than the kernel, strides of 2, odd and rectangular feature maps,
a strided one-input-channel first layer, rectangular kernels, and the DSP kernels' fast forms
(windows of whole groups, a last block of one to four pixels). Each model is exported through the
project's Cortex-M flow and then:

- natively, the plain-C kernels and the DSP kernels (on the portable model of the DSP
  instructions) give every kernel call's output bytes equal to the Python replay's;
- on the emulated Cortex-M55, the Helium build, the DSP build (-mcpu=cortex-m55+nomve) and the
  plain-C build (+nomve+nodsp) give int8 outputs equal to the reference on every image, and
  their instruction counts show that the three are different code.

Plus the kernels below the operator table: DSP against C on thousands of random shapes, the
DSP model against the instructions' definitions, NaN in quantize, program extents -- under
AddressSanitizer and UBSan too.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from tinyrps.data import make_split
from tinyrps.export import cortex_m
from tinyrps.reference import cortex_m as reference

LINEAR_OUT = 16   # the most outputs a program may have: the most int8 values to compare


def _with_head(body: nn.Module) -> nn.Module:
    with torch.no_grad():
        features = body(torch.zeros(1, 1, 28, 28)).numel()
    return nn.Sequential(body, nn.Flatten(), nn.Linear(features, LINEAR_OUT))


def awkward_models() -> dict:
    return {
        # odd channel counts everywhere, stride 2 on a 28-wide map (14), a rectangular kernel
        # with padding on one axis only, pooling with padding on odd sizes
        "odd_channels": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 5, 3, padding=1), nn.ReLU(),
            nn.Conv2d(5, 7, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(7, 19, (3, 2), padding=(1, 0)), nn.ReLU(),
            nn.MaxPool2d(3, stride=2, padding=1))),
        # a 1x1 convolution padded by 2 (windows with no input at all), a strided rectangular
        # first layer, a 33-channel layer (one past two Helium vectors), a 2x2 pool
        "wide_padding": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 3, (5, 3), stride=(2, 1), padding=(2, 1)), nn.ReLU(),
            nn.Conv2d(3, 17, 1, padding=2), nn.ReLU(),
            nn.Conv2d(17, 33, 3, stride=2), nn.ReLU(),
            nn.MaxPool2d(2))),
        # the DSP fast forms on shapes of their own: the first layer's channel records with 8 channels;
        # channel records of a convolution with whole groups (8 -> 12 through a 3x2 window: rows of
        # 16 bytes, widened in one call; 12 -> 5 through 3x3: rows of 36) over maps of 196 and 49
        # pixels (a last block of four pixels and one of one); the 2x2 pool's own loop on 12 channels
        "aligned_windows": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 12, (3, 2), stride=2, padding=(1, 0)), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(12, 5, 3, padding=1), nn.ReLU())),
        # an unpadded strided first layer (13x13 output), a 13-channel map, 3x3 pooling of an
        # odd map without padding
        "strided_first": lambda: _with_head(nn.Sequential(
            nn.Conv2d(1, 13, 3, stride=2), nn.ReLU(),
            nn.Conv2d(13, 20, 3, padding=1), nn.ReLU6(),
            nn.MaxPool2d(3, stride=2))),
    }


@pytest.fixture(scope="module")
def awkward_images() -> np.ndarray:
    return make_split("test", 4, 23)[0]


@pytest.fixture(scope="module")
def awkward_programs(awkward_images, tmp_path_factory):
    """(name, core) -> exported .pte of that model, built once per module."""
    folder = tmp_path_factory.mktemp("awkward")
    cache = {}

    def get(name: str, core: str):
        if (name, core) not in cache:
            torch.manual_seed(sum(map(ord, name + core)))
            model = awkward_models()[name]().eval()
            lowered = cortex_m.lower_images(model, awkward_images, core)
            pte = folder / f"{name}-{core}.pte"
            pte.write_bytes(lowered.program)
            cache[name, core] = pte
        return cache[name, core]
    return get


def layer_mismatches(native, tool, pte, images, work) -> list:
    return native.layer_mismatches(tool, pte, images, work, reference.replay_layers)


@pytest.mark.slow
@pytest.mark.parametrize("core", ["cortex-m55", "cortex-m4"])
@pytest.mark.parametrize("name", sorted(awkward_models()))
def test_c_and_dsp_kernels_match_the_reference_layer_by_layer(name, core, awkward_programs, awkward_images, native,
                                                              native_tool, native_dsp_tool, tmp_path):
    pte = awkward_programs(name, core)
    images = awkward_images[::3][:4]
    for tool in (native_tool, native_dsp_tool):
        assert layer_mismatches(native, tool, pte, images, tmp_path) == [], tool.name
    c_kernels = json.loads(native.tool(native_tool, "info", pte).stdout)["kernels"]
    dsp_kernels = json.loads(native.tool(native_dsp_tool, "info", pte).stdout)["kernels"]
    assert set(c_kernels) == {"c"}
    # every convolution, pooling and linear layer of these models takes the DSP path
    calls = json.loads(native.tool(native_tool, "info", pte).stdout)["calls"]
    for call, kernel in zip(calls, dsp_kernels):
        wanted = "c" if call.split("::")[1] in ("dequantize_per_tensor", "_clone_dim_order") else "dsp"
        assert kernel == wanted, f"{call} runs the {kernel} kernel"


@pytest.fixture(scope="module")
def m55_variants(firmware_elf_path):
    """The AN547 firmware with each of the Cortex-M55's kernel paths (the Helium one is the default)."""
    from tinyrps.firmware import build_firmware
    from tinyrps.firmware.qemu import FIRMWARE_EXECUTABLE
    return {variant: build_firmware(kind).tool(FIRMWARE_EXECUTABLE)
            for variant, kind in (("mve", "mps3-an547"), ("dsp", "mps3-an547-dsp"), ("c", "mps3-an547-c"))}


@pytest.mark.slow     # builds the firmware three times, boots QEMU
@pytest.mark.parametrize("name", sorted(awkward_models()))
def test_every_cortex_m55_variant_matches_the_reference_on_qemu(name, awkward_programs, awkward_images, m55_variants):
    from tinyrps.firmware.qemu import run_batch
    pte = awkward_programs(name, "cortex-m55")
    expected = reference.reference_int8(pte, awkward_images)
    assert len(np.unique(expected)) > 8, "degenerate outputs would not test the arithmetic"
    counts = {}
    for variant, elf in m55_variants.items():
        result = run_batch(pte, awkward_images, elf=elf)
        mismatching = int((result.int8 != expected).any(axis=1).sum())
        assert mismatching == 0, f"{variant}: {mismatching} of {len(expected)} images differ from the reference"
        counts[variant] = int(np.median(result.instructions))
    assert counts["mve"] < counts["dsp"] < counts["c"], counts


def test_a_program_that_runs_on_after_its_output_is_refused(m55_pte, native, native_tool, tmp_path):
    """A call after the one that writes an output must not write over it: the output read after the run
    would not be what its call wrote. Here the layout copy runs once more after the final dequantize, over
    the bytes of the logits."""
    import copy
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    program = deserialize_pte_binary(m55_pte.read_bytes())
    chain = program.program.execution_plan[0].chains[0].instructions
    chain.append(copy.deepcopy(chain[-4]))    # the layout copy once more, after the final dequantize
    longer = tmp_path / "longer.pte"
    longer.write_bytes(bytes(serialize_pte_binary(program, extract_delegate_segments=False)))
    result = native.tool(native_tool, "info", longer, check=False)
    assert result.returncode == 3
    assert "output 0 is overwritten by kernel call 10 after it is written by kernel call 9" in result.stderr


def test_kernels_below_the_operator_table(native_build, asan_build, native):
    for build, rounds in ((native_build, 3000), (asan_build, 800)):
        summary = json.loads(native.tool(build.tool("tinyrps-kernel-checks"), 20261130, rounds).stdout)
        assert summary["failures"] == 0 and summary["rounds"] == rounds
        # the DSP kernels took a good share of the random shapes (the rest run on plain C)
        assert summary["conv_dsp"] > rounds // 4 and summary["depthwise_dsp"] > rounds // 4, summary


def test_padding_wider_than_the_kernel_under_the_sanitizers(awkward_programs, awkward_images, native, asan_build,
                                                            tmp_path):
    """A 1x1 convolution padded by 2 has output pixels whose windows hold no input at all."""
    pte = awkward_programs("wide_padding", "cortex-m55")
    expected = reference.reference_int8(pte, awkward_images)
    for tool in ("tinyrps-native", "tinyrps-native-dsp"):
        int8, _ = native.run(asan_build.tool(tool), pte, awkward_images, tmp_path)
        np.testing.assert_array_equal(int8, expected)
