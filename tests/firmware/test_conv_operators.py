"""The convolution, pooling, linear and matmul operators in every form the Cortex-M lowering emits.

The probe models of probes_conv.py are exported through the project's Cortex-M flow (and the
explicit-layout flow for the `_nhwc` operators), for cortex-m55 (MVE forms: linear kernel sums)
and cortex-m4 (DSP forms: linear bias). Then:

- each probe reaches the operator forms it was written for;
- natively, the plain-C kernels and the DSP kernels (on the portable model of the DSP
  instructions) give every kernel call's output bytes equal to ExecuTorch's Python reference
  replaying the program;
- on the emulated Cortex-M55, the Helium, DSP and plain-C builds give the reference's int8
  outputs on every image, and so does the Cortex-M33 board (the DSP instructions themselves).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import elementwise_reference  # noqa: E402
import fixture_cache  # noqa: E402  (tests/, on the path from the top conftest)
import probes_conv  # noqa: E402

from tinyrps.data import make_split  # noqa: E402
from tinyrps.reference import cortex_m as reference  # noqa: E402

# The explicit-layout operators say they are experimental on every call.
pytestmark = pytest.mark.filterwarnings("ignore:This explicit-layout Cortex-M operator may change")

CORES = ("cortex-m55", "cortex-m4")

# The forms each probe must reach (operator -> count at least), in the legacy flow; the
# explicit-layout flow gives the same with "_nhwc" (and quantized_avg_pool2d_nhwc for its head).
FORMS = {
    "pointwise": {"quantized_conv2d": 3},
    "rectangular": {"quantized_depthwise_conv2d": 1, "quantized_conv2d": 2},
    "dilated_grouped": {"quantized_conv2d": 3},
    "one_pixel": {"quantized_conv2d": 4},
    "depthwise": {"quantized_depthwise_conv2d": 5},
    "depth_multiplier": {"quantized_depthwise_conv2d": 5},
    "depthwise_windows": {"quantized_depthwise_conv2d": 5},
    "depthwise_one_pixel": {"quantized_depthwise_conv2d": 5},
    "depthwise_stride3": {"quantized_depthwise_conv2d": 3},
    "transpose": {"quantized_transpose_conv2d": 3},
    "avg_pool": {"quantized_avg_pool2d": 3},
    "global_avg_pool": {"quantized_avg_pool2d": 1},
    "global_mean": {"quantized_avg_pool2d": 1},
    "linear_rows": {"quantized_linear": 2},
    "linear_no_bias": {"quantized_linear": 2},
    "batch_matmul": {"quantized_batch_matmul": 1},
}

CASES = [(name, core, False) for name in probes_conv.PROBES for core in CORES] + \
        [(name, core, True) for name in probes_conv.EXPLICIT_PROBES for core in CORES]


def case_id(case) -> str:
    name, core, explicit = case
    return f"{name}-{core}{'-nhwc' if explicit else ''}"


def m55_legacy_fast(cases) -> list:
    """The cases, the Cortex-M55 programs of the legacy layout in the fast tier and the others slow (each
    case replays its probe through the reference operators: about 2 s)."""
    return [pytest.param(c, id=case_id(c), marks=() if c[1] == "cortex-m55" and not c[2] else pytest.mark.slow)
            for c in cases]


@pytest.fixture(scope="module")
def probe_images() -> np.ndarray:
    return make_split("test", 3, 29)[0]


@pytest.fixture(scope="module")
def probe_programs(probe_images, tmp_path_factory):
    """(name, core, explicit) -> exported .pte, built once (and kept across runs, keyed by the probes, this
    module and the export's sources)."""
    key = fixture_cache.fixture_key("conv-probes", files=[Path(probes_conv.__file__), Path(__file__)],
                                    modules=["tinyrps.export.cortex_m", "tinyrps.network.model", "tinyrps.network.quantization",
                                             "tinyrps.reference.cortex_m", "tinyrps.data"])
    cache = {}

    def get(name: str, core: str, explicit: bool):
        case = (name, core, explicit)
        if case not in cache:
            def build(out: Path) -> None:
                probes_conv.export_probe(probes_conv.PROBES[name], name, core, probe_images, out, explicit)
            folder = fixture_cache.cached_folder(f"conv-probe-{case_id(case)}", key, build,
                                                 tmp_path_factory.mktemp("probe"))
            cache[case] = folder / f"{case_id(case)}.pte"
        return cache[case]
    return get


def reference_layers(pte, image) -> list:
    return reference.replay_layers(pte, image)


def reference_outputs(pte, images) -> np.ndarray:
    return reference.reference_int8(pte, images)


def layer_mismatches(native, tool, pte, images, work) -> list:
    return native.layer_mismatches(tool, pte, images, work, reference_layers)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_probe_reaches_its_forms(case, probe_programs):
    name, core, explicit = case
    calls = [op.split("::")[1] for op in probes_conv.program_calls(probe_programs(name, core, explicit))]
    for form, count in FORMS[name].items():
        wanted = form + "_nhwc" if explicit else form
        assert calls.count(wanted) >= count, f"{name} on {core}: {calls}"
    if explicit:
        assert not [c for c in calls if c in FORMS[name]], "the explicit-layout flow kept a legacy operator"


@pytest.mark.parametrize("case", m55_legacy_fast(CASES))
def test_c_and_dsp_kernels_match_the_reference_layer_by_layer(case, probe_programs, probe_images, native,
                                                              native_tool, native_dsp_tool, tmp_path):
    name, core, explicit = case
    pte = probe_programs(name, core, explicit)
    for tool in (native_tool, native_dsp_tool):
        assert layer_mismatches(native, tool, pte, probe_images[:3], tmp_path) == [], tool.name
    expected = reference_outputs(pte, probe_images)
    assert len(np.unique(expected)) > 3, "degenerate outputs would not test the arithmetic"


@pytest.fixture(scope="module")
def m55_variants(firmware_elf_path):
    """The AN547 firmware with each of the Cortex-M55's kernel paths (Helium is the default)."""
    from tinyrps.firmware import build_firmware
    from tinyrps.firmware.qemu import FIRMWARE_EXECUTABLE
    return {variant: build_firmware(kind).tool(FIRMWARE_EXECUTABLE)
            for variant, kind in (("mve", "mps3-an547"), ("dsp", "mps3-an547-dsp"), ("c", "mps3-an547-c"))}


@pytest.mark.slow     # builds the firmware three times, boots QEMU
@pytest.mark.parametrize("case", [c for c in CASES if c[1] == "cortex-m55"], ids=case_id)
def test_every_cortex_m55_variant_matches_the_reference_on_qemu(case, probe_programs, probe_images, m55_variants):
    from tinyrps.firmware.qemu import run_batch
    name, core, explicit = case
    pte = probe_programs(name, core, explicit)
    expected = reference_outputs(pte, probe_images)
    for variant, elf in m55_variants.items():
        result = run_batch(pte, probe_images, elf=elf)
        mismatching = int((result.int8 != expected).any(axis=1).sum())
        assert mismatching == 0, f"{variant}: {mismatching} of {len(expected)} images differ from the reference"


@pytest.mark.slow     # builds the Cortex-M33 firmware, boots QEMU
@pytest.mark.parametrize("case", [c for c in CASES if c[1] == "cortex-m4"], ids=case_id)
def test_the_cortex_m33_board_matches_the_reference(case, probe_programs, probe_images):
    from tinyrps.firmware.qemu import firmware_elf, run_batch
    name, core, explicit = case
    pte = probe_programs(name, core, explicit)
    result = run_batch(pte, probe_images, elf=firmware_elf("mps2-an505"), board="mps2-an505")
    np.testing.assert_array_equal(result.int8, reference_outputs(pte, probe_images))


# ---- depthwise requantization the fast paths cannot hold -------------------------------------------------

def _first_channel(value: int):
    """An edit of an int32 per-channel constant: its first channel set to `value`."""
    def edit(data: bytes) -> bytes:
        words = np.frombuffer(data, np.int32).copy()
        words[0] = value
        return words.tobytes()
    return edit


# Every depthwise call's first channel edited (argument position -> edit): a bias of 2^30 is past the DSP
# kernels' accumulator bound, so they requantize the whole call exactly (arith.h) instead of with SMMULR; a
# positive shift is too, and Helium, which takes no left shift, hands the call to the DSP kernels. The other
# channels keep their outputs, so the outputs still take many values.
DEPTHWISE_EDGES = {"bias-2^30": {2: _first_channel(1 << 30)}, "positive-shift": {10: _first_channel(1)}}
# One input channel with 9 taps (dsp/depthwise_conv2d.c) and 40 (dsp/depthwise_long_window.c); channels in
# pair rows and in halfword planes (dsp/depthwise_channels.c), the planes at strides 1, 2 and 3.
DEPTHWISE_EDGE_PROBES = ("rectangular", "depthwise", "depthwise_stride3")
DEPTHWISE = "cortex_m::quantized_depthwise_conv2d"


@pytest.fixture(scope="module")
def depthwise_edge_programs(probe_programs, tmp_path_factory):
    folder = tmp_path_factory.mktemp("depthwise-edges")

    def get(name: str, core: str, edge: str) -> Path:
        pte = folder / f"{name}-{core}-{edge}.pte"
        if not pte.exists():
            pte.write_bytes(elementwise_reference.edited_program(probe_programs(name, core, False), DEPTHWISE,
                                                                 constants=DEPTHWISE_EDGES[edge]))
        return pte
    return get


@pytest.mark.parametrize("edge", sorted(DEPTHWISE_EDGES))
@pytest.mark.parametrize("name", DEPTHWISE_EDGE_PROBES)
def test_depthwise_exact_requantization_natively(name, edge, depthwise_edge_programs, probe_images, native,
                                                 native_tool, native_dsp_tool, tmp_path):
    pte = depthwise_edge_programs(name, "cortex-m4", edge)
    for tool in (native_tool, native_dsp_tool):
        assert layer_mismatches(native, tool, pte, probe_images[:3], tmp_path) == [], tool.name
    expected = reference_outputs(pte, probe_images)
    assert len(np.unique(expected)) > 3, "degenerate outputs would not test the arithmetic"


@pytest.mark.slow     # boots QEMU on three Cortex-M55 builds and the Cortex-M33 board
@pytest.mark.parametrize("edge", sorted(DEPTHWISE_EDGES))
@pytest.mark.parametrize("name", DEPTHWISE_EDGE_PROBES)
def test_depthwise_exact_requantization_on_the_boards(name, edge, depthwise_edge_programs, probe_images,
                                                      m55_variants):
    from tinyrps.firmware.qemu import firmware_elf, run_batch
    for core, runs in (("cortex-m55", m55_variants.items()), ("cortex-m4", [("dsp", firmware_elf("mps2-an505"))])):
        pte = depthwise_edge_programs(name, core, edge)
        expected = reference_outputs(pte, probe_images)
        for variant, elf in runs:
            board = "mps2-an505" if core == "cortex-m4" else "mps3-an547"
            result = run_batch(pte, probe_images, elf=elf, board=board)
            mismatching = int((result.int8 != expected).any(axis=1).sum())
            assert mismatching == 0, f"{core} {variant}: {mismatching} of {len(expected)} images differ"
            bound = {layer["kernels"] for layer in result.layers if layer["op"] == DEPTHWISE}
            # Helium declines a left shift; the DSP kernels keep every call, on their exact path
            wanted = "dsp" if variant == "dsp" or (variant == "mve" and edge == "positive-shift") else variant
            assert bound == {wanted}, (core, variant, bound)
