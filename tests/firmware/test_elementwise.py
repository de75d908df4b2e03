"""The elementwise and data-movement operators of the C runtime against ExecuTorch's Python reference.

Each probe of probes_elementwise.py is exported through the project's Cortex-M flow; then:

- the lowering emits the operators the probe names (the table of docs/runtime.md), and the
  runtime has every operator of the program;
- natively, the plain-C and the DSP kernels (on the portable model of the DSP instructions) give
  every kernel call's output bytes equal to the Python replay's, on images whose outputs at
  those calls take many values;
- on the emulated Cortex-M55 the Helium, DSP and plain-C builds give the reference's outputs on
  every image, binding the variants the operator has;
- programs with their arguments rewritten to the edges of their ranges (positive and extreme
  shifts, INT32_MIN and negative multipliers, zero points whose shifted differences wrap,
  narrow activation ranges, an infinite quotient, another activation table) agree too, and the
  fast variants hand the calls they cannot do exactly to plain C;
- malformed arguments are refused at load with a reason naming the operator; the sanitized build
  computes the same bytes, and a mutation sweep of the mixed network finds nothing.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))   # the probes and the reference beside this file
import elementwise_reference as reference  # noqa: E402
import fixture_cache  # noqa: E402  (tests/, on the path from the top conftest)
import probes_elementwise  # noqa: E402
from probes_elementwise import PROBES  # noqa: E402
from tinyrps.data import make_split  # noqa: E402
from tinyrps.export import cortex_m  # noqa: E402
from tinyrps.firmware.operators import runtime_operators  # noqa: E402
from tinyrps.network.model import INPUT_SHAPE  # noqa: E402
from tinyrps.network.quantization import image_examples  # noqa: E402
from tinyrps.reference.cortex_m import register_operators  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# The calls a probe is about: everything but the stem, the head and the input and output.
FRAME = ("quantize_per_tensor", "dequantize_per_tensor", "quantized_conv2d", "quantized_depthwise_conv2d",
         "quantized_linear", "_clone_dim_order")
# Operators with a Helium / DSP kernel: the ISA builds must bind it for every probe (the exported
# parameters are all within the ISA kernels' range).
MVE_OPERATORS = {"cortex_m::quantized_add", "cortex_m::quantized_mul", "cortex_m::minimum", "cortex_m::maximum",
                 "cortex_m::quantized_activation", "aten::clamp"}
DSP_OPERATORS = {"cortex_m::quantized_add", "cortex_m::quantized_mul", "cortex_m::quantize_per_tensor"}
# ... but where the lowering gave the output the contiguous layout of the flatten after it, the NHWC
# operands are read a channel count apart: that is plain C's.
STRIDED = {("minimum", "cortex_m::minimum"), ("maximum_channels", "cortex_m::maximum")}
M4_PROBES = ("add_residual", "mul_channels", "softmax", "mixed")


@pytest.fixture(scope="module")
def probe_images() -> np.ndarray:
    return make_split("test", 4, 23)[0]


@pytest.fixture(scope="module")
def probe_programs(probe_images, tmp_path_factory):
    """(name, core) -> exported .pte of that probe, built once (and kept across runs, keyed by the probes,
    this module and the export's sources)."""
    key = fixture_cache.fixture_key("elementwise-probes", files=[Path(probes_elementwise.__file__), Path(__file__)],
                                    modules=["tinyrps.export.cortex_m", "tinyrps.network.model", "tinyrps.network.quantization",
                                             "tinyrps.data"])
    cache = {}

    def get(name: str, core: str = "cortex-m55") -> Path:
        if (name, core) not in cache:
            def build(out: Path) -> None:
                torch.manual_seed(sum(map(ord, name)))
                model = PROBES[name][0]().eval()
                # not strict: some probes keep a portable operator the runtime has (aten::clamp)
                lowered = cortex_m.lower(model, (torch.zeros(INPUT_SHAPE),), image_examples(probe_images), core,
                                         strict=False)
                (out / f"{name}-{core}.pte").write_bytes(lowered.program)
            folder = fixture_cache.cached_folder(f"elementwise-probe-{name}-{core}", key, build,
                                                 tmp_path_factory.mktemp("elementwise"))
            cache[name, core] = folder / f"{name}-{core}.pte"
        return cache[name, core]
    return get


def is_frame(name: str) -> bool:
    return name.split("::")[1] in FRAME


class Layers:
    """Every kernel call's output bytes of the reference replay, per image (computed once)."""

    def __init__(self, pte: Path, images: np.ndarray):
        self.pte, self.images = pte, images
        self.expected = [reference.replay_layers(pte, image) for image in images]

    def mismatches(self, native, tool, work: Path) -> list:
        """'image i: operator (variant) differs in n bytes' for every call of `tool` that differs."""
        summary, raw = native.layers(tool, self.pte, self.images, work)
        kernels = json.loads(native.tool(tool, "info", self.pte).stdout)["kernels"]
        found, pos = [], 0
        for i, calls in enumerate(self.expected):
            assert [c["name"] for c in summary["calls"]] == [name for name, _ in calls]
            for k, (call, (name, expected)) in enumerate(zip(summary["calls"], calls)):
                got = np.frombuffer(raw[pos:pos + call["bytes"]], np.uint8)
                pos += call["bytes"]
                differing = int(np.count_nonzero(got != np.frombuffer(expected, np.uint8)))
                if differing:
                    found.append(f"image {i}: {name} ({kernels[k]}) differs in {differing} bytes")
        assert pos == len(raw)
        return found

    def variety(self) -> dict:
        """Distinct int8 values each of the probe's own calls wrote, over the images."""
        seen = {}
        for calls in self.expected:
            for name, data in calls:
                if not is_frame(name):
                    seen.setdefault(name, set()).update(np.frombuffer(data, np.int8).tolist())
        return {name: len(values) for name, values in seen.items()}


def bound_kernels(native, tool, pte) -> list:
    info = json.loads(native.tool(tool, "info", pte).stdout)
    return list(zip(info["calls"], info["kernels"]))


# ---- what the lowering emits ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROBES))
def test_the_probe_lowers_to_its_operators(name, probe_programs):
    ops = set(cortex_m.program_operators(probe_programs(name).read_bytes()))
    assert PROBES[name][1] <= ops, f"{name} no longer lowers to {PROBES[name][1] - ops}"
    assert ops <= {op.qualified for op in runtime_operators()}, ops


# ---- natively: every kernel call, plain C and DSP ------------------------------------------------------

# In the fast tier one probe per kernel family (each probe replays through the reference operators:
# about 1.5 s); every probe in `make test`.
FAST_PROBES = {"mixed", "add_residual", "mul_channels", "softmax", "pad_hw", "permute_nhwc", "cat_channels", "clamp"}
assert FAST_PROBES <= set(PROBES), FAST_PROBES - set(PROBES)


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST_PROBES else pytest.mark.slow)
                                  for n in sorted(PROBES)])
def test_every_kernel_call_matches_the_reference(name, probe_programs, probe_images, native, native_tool,
                                                 native_dsp_tool, tmp_path):
    pte = probe_programs(name)
    layers = Layers(pte, probe_images[::3][:4])
    for tool in (native_tool, native_dsp_tool):
        assert layers.mismatches(native, tool, tmp_path) == [], tool.name
    variety = layers.variety()
    assert variety and min(variety.values()) >= 8, f"degenerate outputs would not test the arithmetic: {variety}"
    for call, kernel in bound_kernels(native, native_dsp_tool, pte):
        wanted = "dsp" if call in DSP_OPERATORS or call.split("::")[1] in ("quantized_conv2d", "quantized_linear",
                                                                         "quantized_depthwise_conv2d") else "c"
        assert kernel == wanted, f"{call} runs the {kernel} kernel"
    assert {kernel for _, kernel in bound_kernels(native, native_tool, pte)} == {"c"}


@pytest.mark.slow
@pytest.mark.parametrize("name", M4_PROBES)
def test_cortex_m4_programs_match_the_reference(name, probe_programs, probe_images, native, native_tool,
                                                native_dsp_tool, tmp_path):
    layers = Layers(probe_programs(name, "cortex-m4"), probe_images[::4][:3])
    for tool in (native_tool, native_dsp_tool):
        assert layers.mismatches(native, tool, tmp_path) == [], tool.name


# ---- the Cortex-M55's three builds on QEMU -----------------------------------------------------------

@pytest.fixture(scope="module")
def m55_builds(firmware_elf_path):
    """The AN547 firmware with each of the Cortex-M55's kernel paths (the Helium one is the default)."""
    from tinyrps.firmware import build_firmware
    from tinyrps.firmware.qemu import FIRMWARE_EXECUTABLE
    return {variant: build_firmware(kind).tool(FIRMWARE_EXECUTABLE)
            for variant, kind in (("mve", "mps3-an547"), ("dsp", "mps3-an547-dsp"), ("c", "mps3-an547-c"))}


@pytest.mark.slow     # boots QEMU three times per probe
@pytest.mark.parametrize("name", sorted(PROBES))
def test_every_cortex_m55_variant_matches_the_reference_on_qemu(name, probe_programs, probe_images, m55_builds):
    from tinyrps.firmware.qemu import run_batch
    pte = probe_programs(name)
    expected = reference.reference_int8(pte, probe_images)
    counts = {}
    for variant, elf in m55_builds.items():
        result = run_batch(pte, probe_images, elf=elf)
        mismatching = int((result.int8 != expected).any(axis=1).sum())
        assert mismatching == 0, f"{variant}: {mismatching} of {len(expected)} images differ from the reference"
        fast = MVE_OPERATORS if variant == "mve" else DSP_OPERATORS if variant == "dsp" else set()
        for layer in result.layers:
            if not is_frame(layer["op"]):
                wanted = variant if layer["op"] in fast and (name, layer["op"]) not in STRIDED else "c"
                assert layer["kernels"] == wanted, (variant, layer)
        counts[variant] = int(np.median(result.instructions))
    assert counts["mve"] < counts["dsp"] < counts["c"], counts


@pytest.mark.slow     # boots QEMU once per probe
def test_helium_adds_operands_of_one_layout_through_their_tables(probe_programs, probe_images, m55_builds):
    """quantized_add's Helium variants (ops/quantized_add.c's list): operands read along the row (a
    residual, a [1, C, 1, 1] gate: rows of C channels) with 512 elements or more through their tables
    (kernels/mve/quantized_add_table.c, first), fewer on the vector terms (second); the test above
    checks their outputs."""
    from tinyrps.firmware.qemu import run_batch
    for name, wanted in (("add_residual", 0), ("sub", 0), ("add_channels", 0), ("add_small", 1)):
        result = run_batch(probe_programs(name), probe_images[:1], elf=m55_builds["mve"])
        bound = {(layer["kernels"], layer["variant"]) for layer in result.layers
                 if layer["op"] == "cortex_m::quantized_add"}
        assert bound == {("mve", wanted)}, (name, bound)


# ---- arguments at the edges of their ranges -------------------------------------------------------------

def _table(seed: int) -> bytes:
    return np.random.default_rng(seed).integers(-128, 128, 256).astype(np.int8).tobytes()


# (probe, operator, edit of edited_program, the variants the Helium and the DSP builds bind for it):
# a fast variant keeps what it computes exactly and hands the rest to plain C.
EDGE_CASES = {
    "add: a positive output shift": ("add_residual", "cortex_m::quantized_add", dict(ints={10: 2, 9: 1 << 20}),
                                     ("c", "c")),
    "add: output shift -31": ("add_residual", "cortex_m::quantized_add", dict(ints={10: -31, 9: 2**31 - 1}),
                              ("mve", "dsp")),
    "add: INT32_MIN and a negative multiplier, shifts 0 and -31": (
        "add_residual", "cortex_m::quantized_add", dict(ints={2: -2**31, 3: 0, 6: -1500000000, 7: -31}), ("c", "dsp")),
    "add: zero points whose differences wrap when shifted": (
        "add_residual", "cortex_m::quantized_add", dict(ints={1: 3000, 5: -2500}), ("mve", "c")),
    "add: a narrow activation range": ("add_residual", "cortex_m::quantized_add",
                                       dict(ints={11: -20, 12: 35, 8: 7}), ("mve", "dsp")),
    "add: broadcast, a negative multiplier": ("add_channels", "cortex_m::quantized_add",
                                              dict(ints={2: -1073741824, 3: -1}), ("mve", "dsp")),
    "mul: a large zero point, a positive shift": ("mul", "cortex_m::quantized_mul",
                                                  dict(ints={1: 20000, 3: -3, 6: 3, 5: 1 << 10}), ("c", "c")),
    "mul: INT32_MIN": ("mul", "cortex_m::quantized_mul", dict(ints={5: -2**31, 6: -5}), ("c", "c")),
    "mul: broadcast, a negative multiplier": ("mul_channels", "cortex_m::quantized_mul",
                                              dict(ints={5: -1200000000, 4: 100}), ("mve", "dsp")),
    "mul: a zero point of -2^24, shift -31": ("hardswish", "cortex_m::quantized_mul",
                                              dict(ints={3: -2**24, 6: -31}), ("mve", "c")),
    "div: an infinite product": ("div", "cortex_m::quantized_div", dict(doubles={5: 1e30}), ("c", "c")),
    "div: a negative scale, far zero points": ("div", "cortex_m::quantized_div",
                                               dict(doubles={5: -0.7}, ints={1: 1000, 3: -1000}), ("c", "c")),
    "softmax: a large input shift": ("softmax", "cortex_m::softmax", dict(ints={5: 25}), ("c", "c")),
    "softmax: a small scale, another zero point": ("softmax_rows", "cortex_m::softmax",
                                                   dict(ints={5: 17, 2: 100}), ("c", "c")),
    "pad: another fill value": ("pad_hw", "cortex_m::pad", dict(ints={3: 77}), ("c", "c")),
    "clamp: lower bound above the upper": ("clamp", "aten::clamp", dict(ints={1: 50, 2: -60}), ("mve", "c")),
    "activation: another table": ("sigmoid", "cortex_m::quantized_activation", dict(constants={1: _table(1)}),
                                  ("mve", "c")),
}


@pytest.fixture(scope="module")
def edge_programs(probe_programs, tmp_path_factory):
    folder = tmp_path_factory.mktemp("edge-cases")

    def get(case: str) -> Path:
        probe, operator, edit, _ = EDGE_CASES[case]
        pte = folder / (re.sub(r"\W+", "-", case) + ".pte")
        if not pte.exists():
            pte.write_bytes(reference.edited_program(probe_programs(probe), operator, **edit))
        return pte
    return get


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_arguments_at_the_edges_match_the_reference(case, edge_programs, probe_images, native, native_tool,
                                                    native_dsp_tool, tmp_path):
    pte = edge_programs(case)
    layers = Layers(pte, probe_images[::3][:4])
    for tool in (native_tool, native_dsp_tool):
        assert layers.mismatches(native, tool, tmp_path) == [], tool.name
    operator, (_, dsp) = EDGE_CASES[case][1], EDGE_CASES[case][3]
    assert {kernel for call, kernel in bound_kernels(native, native_dsp_tool, pte) if call == operator} == {dsp}


@pytest.mark.slow     # boots QEMU once per case
@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_arguments_at_the_edges_on_helium(case, edge_programs, probe_images, m55_builds):
    from tinyrps.firmware.qemu import run_batch
    pte = edge_programs(case)
    expected = reference.reference_int8(pte, probe_images)
    result = run_batch(pte, probe_images, elf=m55_builds["mve"])
    assert int((result.int8 != expected).any(axis=1).sum()) == 0
    operator, (mve, dsp) = EDGE_CASES[case][1], EDGE_CASES[case][3]
    # the Helium build has the DSP kernels too: what Helium declines goes to the next variant
    assert {layer["kernels"] for layer in result.layers if layer["op"] == operator} == {mve if mve == "mve" else dsp}


# ---- malformed arguments: refused at load, naming the operator --------------------------------------

MALFORMED = {
    "add: a shift of 40": ("add_residual", "cortex_m::quantized_add", dict(ints={3: 40}),
                           "int argument out of range in cortex_m::quantized_add"),
    "add: activation_min above activation_max": ("add_residual", "cortex_m::quantized_add", dict(ints={11: 50, 12: -50}),
                                                 "activation_min > activation_max in cortex_m::quantized_add"),
    # an operand's zero point may reach +-(2^31 - 128) (hardswish's shifted one), the output's 2^24
    "mul: a zero point of 2^31 - 127": ("mul", "cortex_m::quantized_mul", dict(ints={1: 2**31 - 127}),
                                        "int argument out of range in cortex_m::quantized_mul"),
    "mul: an output zero point of 2^25": ("mul", "cortex_m::quantized_mul", dict(ints={4: 2**25}),
                                          "int argument out of range in cortex_m::quantized_mul"),
    "div: an infinite scale": ("div", "cortex_m::quantized_div", dict(doubles={5: float("inf")}),
                               "output scale not a finite float in cortex_m::quantized_div"),
    "softmax: an output zero point of 0": ("softmax", "cortex_m::softmax", dict(ints={3: 0}),
                                           "int argument out of range in cortex_m::softmax"),
    "softmax: dim 3 of a 3-D tensor": ("softmax", "cortex_m::softmax", dict(ints={1: 3}),
                                       "int argument out of range in cortex_m::softmax"),
    "pad: a fill value of 300": ("pad_hw", "cortex_m::pad", dict(ints={3: 300}), "int argument out of range in cortex_m::pad"),
    "pad: three paddings": ("pad_hw", "cortex_m::pad", dict(int_lists={1: [0, 1, 2]}), "expected 4 paddings in cortex_m::pad"),
    "pad: a padding the output does not have": ("pad_hw", "cortex_m::pad", dict(int_lists={1: [0, 4, 1, 0]}),
                                                "output shape does not follow from the padding in cortex_m::pad"),
    "transpose: a repeated dim": ("permute_nhwc", "cortex_m::transpose", dict(int_lists={1: [0, 2, 2, 1]}),
                                  "perm is not a permutation in cortex_m::transpose"),
    "cat: dim 4 of 4-D tensors": ("cat_channels", "aten::cat", dict(ints={1: 4}), "int argument out of range in aten::cat"),
    "cat: along a dim the shapes disagree on": ("cat_channels", "aten::cat", dict(ints={1: 2}),
                                                "tensor shapes differ off the dim in aten::cat"),
    "clamp: a bound of 200": ("clamp", "aten::clamp", dict(ints={1: 200}), "int argument out of range in aten::clamp"),
    "squeeze: dim 5 of 4": ("squeeze", "aten::squeeze_copy", dict(int_lists={1: [5]}), "dim out of range in aten::squeeze_copy"),
    "unsqueeze: at another dim": ("unsqueeze", "aten::unsqueeze_copy", dict(ints={1: 3}),
                                  "output shape does not follow from the dim in aten::unsqueeze_copy"),
    "minimum: an int for a tensor": ("minimum", "cortex_m::minimum", dict(ints={1: 3}),
                                     "expected a tensor argument in cortex_m::minimum"),
    "activation: an int for the table": ("sigmoid", "cortex_m::quantized_activation", dict(ints={1: 0}),
                                         "expected a tensor argument in cortex_m::quantized_activation"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_argument_is_refused_naming_the_operator(case, probe_programs, native, native_tool, tmp_path):
    probe, operator, edit, reason = MALFORMED[case]
    pte = tmp_path / "malformed.pte"
    pte.write_bytes(reference.edited_program(probe_programs(probe), operator, **edit))
    result = native.tool(native_tool, "info", pte, check=False)
    assert result.returncode == 3, result.stdout
    assert result.stderr.count("\n") == 1 and reason in result.stderr, result.stderr


# ---- under the sanitizers ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_sanitized_builds_compute_the_same_bytes(probe_programs, probe_images, native, asan_build, tmp_path):
    """Every probe and edge case through the AddressSanitizer + UBSan build, plain C and DSP."""
    programs = [probe_programs(name) for name in sorted(PROBES)]
    programs += [tmp_path / f"edge-{i}.pte" for i in range(len(EDGE_CASES))]
    for path, (probe, operator, edit, _) in zip(programs[len(PROBES):], EDGE_CASES.values()):
        path.write_bytes(reference.edited_program(probe_programs(probe), operator, **edit))
    images = probe_images[:3]
    for pte in programs:
        expected = reference.reference_int8(pte, images)
        for tool in ("tinyrps-native", "tinyrps-native-dsp"):
            int8, _ = native.run(asan_build.tool(tool), pte, images, tmp_path)
            np.testing.assert_array_equal(int8, expected, err_msg=f"{tool} on {pte.name}")


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["c", "dsp"])
def test_a_mutation_sweep_of_the_mixed_network_finds_nothing(kernels, probe_programs, asan_build, native):
    mutate = asan_build.tool("tinyrps-mutate" + ("-dsp" if kernels == "dsp" else ""))
    summary = json.loads(native.tool(mutate, probe_programs("mixed"), 800, 20261201).stdout)
    assert summary["mutations"] == 800 and summary["semantic_targets"] > 300, summary
    assert 0.05 * 800 < summary["loaded_and_ran"] < 0.6 * 800, summary


# ---- below the operator table --------------------------------------------------------------------------------

def test_the_dsp_kernels_equal_plain_c_on_random_shapes(native_build, asan_build, native):
    """tinyrps-elementwise-checks: DSP add and mul against plain C on random shapes, broadcasts and
    parameters, the DSP model of SMMULR and SSAT, minimum and maximum of int8 and int32 (a dtype
    no exported program has), transposes of random dim orders; and all of it sanitized."""
    for build, rounds in ((native_build, 4000), (asan_build, 1000)):
        summary = json.loads(native.tool(build.tool("tinyrps-elementwise-checks"), 20261201, rounds).stdout)
        assert summary["failures"] == 0 and summary["rounds"] == rounds, summary
        assert summary["add_dsp"] > rounds // 3 and summary["mul_dsp"] > rounds // 3, summary


@pytest.mark.parametrize("input_scale", [0.02, 0.0625, 0.3, 1.7])
def test_softmax_equals_the_reference_on_many_rows(input_scale, native_build, native, tmp_path):
    """The float softmax of torch and the kernel's own float arithmetic round to the same int8
    outputs but where a probability times 256 is a near-tie: 20,000 random rows of each length.

    torch's result is its vectorised CPU kernel's, whose exp and summation order depend on the
    host (its AVX2, AVX512 and scalar kernels disagree on 2 to 8 of 36 million such outputs); a
    near-tie may round either way. Any difference must be one step, at a probability within
    1e-4 of a rounding boundary (computed in float64 from the same float32 inputs), and rare."""
    from executorch.backends.cortex_m.passes.aten_to_cortex_m_pass import _compute_softmax_params
    register_operators()
    multiplier, shift, diff_min = _compute_softmax_params(input_scale)
    scale = np.float32(multiplier / 2**31 * 2.0**shift / 2**26)
    rng = np.random.default_rng(int(input_scale * 1000))
    tool = native_build.tool("tinyrps-elementwise-checks")
    total, ties = 0, 0
    for length in (2, 3, 10, 16, 17, 40):
        zero_point = int(rng.integers(-128, 128))
        rows = rng.integers(-128, 128, size=(20000, length), dtype=np.int8)
        rows.tofile(tmp_path / "in.bin")
        native.tool(tool, "softmax", len(rows), length, zero_point, multiplier, shift, tmp_path / "in.bin",
                    tmp_path / "out.bin")
        got = np.fromfile(tmp_path / "out.bin", np.int8).reshape(rows.shape).astype(np.int32)
        expected = torch.ops.cortex_m.softmax(torch.from_numpy(rows), -1, zero_point, -128, multiplier, shift,
                                              diff_min).numpy().astype(np.int32)
        x = ((rows.astype(np.int32) - zero_point).astype(np.float32) * scale).astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        steps = e / e.sum(axis=1, keepdims=True) * 256
        differ = got != expected
        near_tie = np.abs(steps - np.floor(steps) - 0.5) < 1e-4
        assert (np.abs(got - expected)[differ] == 1).all() and near_tie[differ].all(), \
            f"length {length}: a difference that is not a near-tie"
        total += rows.size
        ties += int(differ.sum())
        assert len(np.unique(expected)) > 8
    assert ties <= total * 1e-5, f"{ties} of {total} outputs differ"
