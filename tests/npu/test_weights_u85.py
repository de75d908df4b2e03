"""The Ethos-U85's weight and scale streams, decoded from real programs, are the TOSA graph's constants.

Each program is exported by `tinyrps export --module` (tests/npu/u85_modules.py:Layers, one layer of
every weight order and format) or is the trained network's; each convolution's layout is read from
its registers (tests/npu/u85_program.py) and its decoded weights must equal, element for element,
the OFM-channel slice of the TOSA convolution they came from, every channel of every TOSA
convolution covered. The scale records must hold the TOSA bias and the RESCALE multipliers.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import fixture_cache
from tinyrps.hardware import descriptor
from tinyrps.infra.errors import UserError
from tinyrps.npu import mlw_stream as mlw, weights_u85 as w85
from tinyrps.reference.ethos_u import read_tosa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import u85_program as up  # noqa: E402

MODULES = Path(__file__).resolve().parent / "u85_modules.py"
INPUT_SHAPE = "1,3,16,16"
# Weights in SRAM read faster than the decoder decodes them: the compiler then picks the fast weight
# format for every layer it can (raw bytes where the values are many).
FAST_MEMORY = ["--system-config", "Ethos_U85_SYS_DRAM_High", "--memory-mode", "Sram_Only"]
CONFIGS = {
    "ethos-u85-128": ("ethos-u85-128", []),
    "ethos-u85-256": ("ethos-u85-256", []),
    "ethos-u85-512": ("ethos-u85-512", []),
    "ethos-u85-1024": ("ethos-u85-1024", []),
    "ethos-u85-2048": ("ethos-u85-2048", []),
    "ethos-u85-128-sram": ("ethos-u85-128", FAST_MEMORY),
    "ethos-u85-1024-sram": ("ethos-u85-1024", FAST_MEMORY),
}
# What each configuration's program must exercise (measured on Vela 5.1): (traversal, format, sparse).
DENSE_AND_SPARSE = {("part_kernel", "SWD", False), ("depthwise", "SWD", False), ("part_kernel", "SWD", True),
                    ("depth_first", "SWD", False), ("depth_first", "SWD", True)}
REQUIRED = {
    "ethos-u85-128": DENSE_AND_SPARSE | {("part_kernel", "FWD lut2", False)},
    "ethos-u85-256": DENSE_AND_SPARSE | {("part_kernel", "FWD lut2", False)},
    "ethos-u85-512": DENSE_AND_SPARSE | {("part_kernel", "FWD lut2", False)},
    "ethos-u85-1024": DENSE_AND_SPARSE,
    "ethos-u85-2048": DENSE_AND_SPARSE,
    "ethos-u85-128-sram": {("part_kernel", "FWD raw", False), ("part_kernel", "FWD raw", True),
                           ("part_kernel", "FWD lut2", False), ("part_kernel", "FWD lut4", False),
                           ("depth_first", "FWD raw", False), ("depthwise", "SWD", False)},
    "ethos-u85-1024-sram": {("part_kernel", "FWD lut2", False), ("part_kernel", "FWD lut4", False),
                            ("depth_first", "SWD", False)},
}
# Where a depth-first layer has several OFM and several IFM blocks (the larger NPUs take the 1x1
# layers' OFM in fewer blocks): (dense, 2:4 sparse).
SERPENTINE = {"ethos-u85-128": (True, True), "ethos-u85-256": (True, True), "ethos-u85-512": (True, True)}
CORES = {"ethos-u85-128": 1, "ethos-u85-256": 1, "ethos-u85-512": 2, "ethos-u85-1024": 4, "ethos-u85-2048": 4}


@pytest.fixture(scope="session")
def layers_program(cli_session, tmp_path_factory):
    """get(config) -> the Layers network's program for that configuration, exported once (and kept)."""
    key_of = {name: fixture_cache.fixture_key("u85-layers", target, *memory, INPUT_SHAPE,
                                              modules=fixture_cache.package_modules("tinyrps.export")
                                              + ["tinyrps.network.user_model", "tinyrps.interfaces.cli"], files=[MODULES])
              for name, (target, memory) in CONFIGS.items()}

    def get(name: str) -> Path:
        target, memory = CONFIGS[name]

        def build(out: Path) -> None:
            done = cli_session("export", "--module", f"{MODULES}:Layers", "--input-shape", INPUT_SHAPE,
                               "--calibration", "random", "--target", target, *memory, "--out", out,
                               "--name", "layers", timeout=600)
            assert done.returncode == 0, done.stderr[-2000:]
        folder = fixture_cache.cached_folder(f"u85-layers-{name}", key_of[name], build,
                                             tmp_path_factory.mktemp(f"u85-{name}"))
        return folder / "layers.pte"
    return get


# --- what the tests compare ------------------------------------------------------------------------

def decode(conv: up.Convolution) -> np.ndarray:
    """The convolution's weights; each SWD stream decoded by tinyrps.npu.mlw_stream must equal the Vela
    wheel's own decoding of it."""
    from ethosu import mlw_codec
    fields = conv.fields
    if fields["weight_format"] == "FWD":
        assert not any(conv.weights[1:]), "an FWD layer reads one stream, WEIGHT; WEIGHT1..3 are empty"
        return w85.u85_weights(conv.weights[0], **fields)
    for stream in filter(None, conv.weights):
        wheel = np.asarray(mlw_codec.decode(bytearray(stream)), np.int32)
        assert np.array_equal(w85.swd_decode(stream, len(wheel)), wheel)
    return w85.u85_weights(conv.weights, **fields)


def kind_of(conv: up.Convolution) -> tuple:
    fields = conv.fields
    fmt = fields["weight_format"]
    if fmt == "FWD":
        fmt += " " + w85.fwd_header(conv.weights[0])[0]
    return fields["traversal"], fmt, fields["sparse"]


def slices_of(weights: np.ndarray, depthwise: bool, graph: list) -> list:
    """(TOSA convolution, first channel) of every slice of the graph's weights equal to `weights`."""
    found = []
    for op in graph:
        if (op.kind == "depthwise") != depthwise:
            continue
        theirs = np.moveaxis(op.weights, 3, 0) if depthwise else op.weights
        mine = np.moveaxis(weights, 3, 0) if depthwise else weights
        if theirs.shape[1:] != mine.shape[1:]:
            continue
        for first in range(theirs.shape[0] - mine.shape[0] + 1):
            if np.array_equal(theirs[first:first + mine.shape[0]], mine):
                found.append((op, first))
    return found


def paired(pte: Path) -> list:
    """(convolution, its decoded weights, its TOSA convolution, first channel) for every
    convolution of the program; each must equal a slice of the graph's weights."""
    graph = up.tosa_convolutions(read_tosa(pte, descriptor.read(pte)))
    assert graph, "no convolution in the TOSA graph"
    pairs, covered = [], {id(op): np.zeros(op.bias.size, bool) for op in graph}
    for index, conv in enumerate(up.convolutions(pte)):
        weights = decode(conv)
        matches = slices_of(weights, conv.depthwise, graph)
        assert matches, (f"convolution {index} ({kind_of(conv)}, {conv.fields}): its decoded weights "
                         f"equal no slice of the TOSA graph's")
        op, first = matches[0]
        covered[id(op)][first:first + conv.fields["ofm_depth"]] = True
        pairs.append((conv, weights, op, first))
    for op in graph:
        assert covered[id(op)].all(), f"TOSA {op.kind} {op.weights.shape}: channels no convolution decodes to"
    return pairs


def check_scales(conv: up.Convolution, op: up.TosaConv, first: int) -> None:
    depth = conv.fields["ofm_depth"]
    records = w85.scale_records(depth, conv.fields["ublock_depth"])
    assert len(conv.scales) == -(-records * w85.SCALE_RECORD // 16) * 16, "SCALE_LENGTH"
    bias, scale, shift = w85.u85_scales(conv.scales, records, up.acc_format(conv))
    wanted = slice(first, first + depth)
    assert np.array_equal(bias[:depth], op.bias[wanted])
    # The compiler may drop trailing zero bits of the multiplier, with the shift: the same scaling.
    tosa_shift = op.shifts[wanted]
    assert (shift[:depth] <= tosa_shift).all()
    assert np.array_equal(scale[:depth] << (tosa_shift - shift[:depth]), op.multipliers[wanted])
    assert not (bias[depth:].any() or scale[depth:].any() or shift[depth:].any()), "padding records are zero"


def serpentine(conv: up.Convolution) -> bool:
    """A depth-first layer of several OFM blocks and several IFM blocks: its IFM blocks run backwards
    on every other OFM block."""
    f = conv.fields
    return (f["traversal"] == "depth_first" and f["ofm_depth"] > f["ofm_block_depth"]
            and f["ifm_depth"] > f["ifm_block_depth"])


# --- the programs -----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("config", list(CONFIGS))
def test_weights_are_the_tosa_constants(layers_program, config):
    pairs = paired(layers_program(config))
    kinds = {kind_of(conv) for conv, *_ in pairs}
    assert REQUIRED[config] <= kinds, f"not exercised: {REQUIRED[config] - kinds}"
    assert any(conv.fields["stride"] == (2, 2) for conv, *_ in pairs)
    assert any(conv.fields["dilation"] == (2, 2) for conv, *_ in pairs)
    for sparse, wanted in zip((False, True), SERPENTINE.get(config, (False, False))):
        if wanted:
            assert any(serpentine(conv) and conv.fields["sparse"] == sparse for conv, *_ in pairs)
    assert {conv.fields["cores"] for conv, *_ in pairs} == {CORES[CONFIGS[config][0]]}


@pytest.mark.slow
@pytest.mark.parametrize("config", ["ethos-u85-128", "ethos-u85-1024", "ethos-u85-2048", "ethos-u85-1024-sram"])
def test_scales_are_the_tosa_bias_and_rescale(layers_program, config):
    for conv, _, op, first in paired(layers_program(config)):
        check_scales(conv, op, first)


@pytest.mark.slow
def test_trained_network_weights_and_scales(exported):
    """The default network on ethos-u85-128: its first layer is 2:4 sparse, its 64-channel
    convolution split into two slices of 32."""
    pairs = paired(exported("ethos-u85-128"))
    assert ("part_kernel", "SWD", True) in {kind_of(conv) for conv, *_ in pairs}
    assert sum(first > 0 for *_, first in pairs) >= 1, "a layer split over OFM slices"
    for conv, _, op, first in pairs:
        check_scales(conv, op, first)


# --- the formats, on streams of known content ---------------------------------------------------------

def fwd_stream(mode: str, values: list, adjust: int = 0, lut: list = ()) -> bytes:
    """A fast weight stream written from the format's description: header, then the payload."""
    bits = [1 if mode == "raw" else 0, 1 if mode == "lut2" else 0] + [0] * 102
    bits += [(adjust >> i) & 1 for i in range(8)]
    for value in list(lut) + [0] * (16 - len(lut)):
        folded = abs(value) << 1 | (value < 0)
        bits += [(folded >> i) & 1 for i in range(9)]
    width = {"raw": 8, "lut2": 2, "lut4": 4}[mode]
    for value in values:
        code = (value + adjust) & 0xFF if mode == "raw" else list(lut).index(value)
        bits += [(code >> i) & 1 for i in range(width)]
    bits += [0] * (-len(bits) % 256)
    return np.packbits(np.array(bits, np.uint8), bitorder="little").tobytes()


@pytest.mark.parametrize("mode, values, adjust, lut", [
    ("raw", [-128, 127, 0, 5, -7], 0, []),
    ("raw", [-255, -128, -200, 0], 127, []),        # values below int8: stored shifted up
    ("lut2", [3, -3, 0, 0, 3], 0, [0, 3, -3]),
    ("lut4", [-255, 255, 7, -1, 0, 9], 0, [0, -1, 7, 9, -255, 255]),
])
def test_fwd_decode(mode, values, adjust, lut):
    stream = fwd_stream(mode, values, adjust, lut)
    assert w85.fwd_header(stream)[0] == mode
    decoded = w85.fwd_decode(stream)
    assert decoded[:len(values)].tolist() == values
    assert len(decoded) == (len(stream) * 8 - 256) // {"raw": 8, "lut2": 2, "lut4": 4}[mode]


def test_fwd_refuses_corrupt_headers():
    stream = bytearray(fwd_stream("raw", [1, 2, 3]))
    with pytest.raises(UserError, match="32-byte units"):
        w85.fwd_decode(bytes(stream[:40]))
    stream[5] |= 1       # a reserved bit
    with pytest.raises(UserError, match="reserved bits"):
        w85.fwd_decode(bytes(stream))


def small_layout(**changes) -> dict:
    fields = dict(ofm_depth=8, ifm_depth=8, kernel_h=1, kernel_w=1, ofm_block_depth=8, ublock_depth=8,
                  ifm_block_depth=64, traversal="depth_first", weight_format="FWD")
    fields.update(changes)
    return fields


def test_fwd_layer_round_trip_and_corruption():
    """A 1x1 depth-first layer of 8x8 weights on one core: for each slice of 8 of the IFM block's
    64 channels, each group of 4 OFM channels, 4 x 8 values; IFM channels 8-63 are zeros."""
    weights = np.arange(64).reshape(8, 1, 1, 8) - 32
    stream = np.zeros(8 * 64, np.int32)
    for o in range(8):              # groups of 4 OFM channels x slices of 8 IFM channels
        for i in range(8):
            stream[(i // 8) * 64 + (o // 4) * 32 + (o % 4) * 8 + i % 8] = weights[o, 0, 0, i]
    assert (w85.u85_weights(fwd_stream("raw", stream.tolist()), **small_layout()) == weights).all()
    stream[100] = 1                 # a padding slot: IFM channel 12 of OFM channel 4
    with pytest.raises(UserError, match="nonzero padding"):
        w85.u85_weights(fwd_stream("raw", stream.tolist()), **small_layout())
    with pytest.raises(UserError, match="holds 224 weights"):
        w85.u85_weights(fwd_stream("raw", stream[:200].tolist()), **small_layout())


def test_scale_records_both_accumulators():
    def record(bias: int, scale: int, shift: int, acc: str) -> bytes:
        width = 6 if acc == "I48" else 4
        return (bias & ((1 << 8 * width) - 1)).to_bytes(width, "little") + scale.to_bytes(8 - width, "little") \
            + bytes([shift, 0])
    data = record(-5, 0x7FFFFFFF, 63, "I32") + record(2**31 - 1, 1, 0, "I32")
    bias, scale, shift = w85.u85_scales(data, 2, "I32")
    assert bias.tolist() == [-5, 2**31 - 1] and scale.tolist() == [0x7FFFFFFF, 1] and shift.tolist() == [63, 0]
    data = record(-(2**47), 0x7FFF, 40, "I48") + record(2**40 + 3, 12345, 17, "I48")
    bias, scale, shift = w85.u85_scales(data, 2, "I48")
    assert bias.tolist() == [-(2**47), 2**40 + 3] and scale.tolist() == [0x7FFF, 12345] and shift.tolist() == [40, 17]
    with pytest.raises(UserError, match="outside its fields"):
        w85.u85_scales(record(0, 0x8000, 0, "I48"), 1, "I48")
    with pytest.raises(UserError, match="too short"):
        w85.u85_scales(data[:15], 2, "I48")


def test_configuration_tables():
    assert [w85.ublock_depth(128, m) for m in (1, 0)] == [8, 16]
    assert [w85.ublock_depth(1024, m) for m in (3, 2, 4)] == [32, 32, 16]
    assert [w85.u85_cores(m) for m in (128, 256, 512, 1024, 2048)] == [1, 1, 2, 4, 4]
    assert w85.scale_records(20, 8) == 32 and w85.scale_records(20, 32) == 32 and w85.scale_records(40, 64) == 64
    with pytest.raises(UserError, match="microblock 5"):
        w85.ublock_depth(128, 5)
    with pytest.raises(UserError, match="does not exist"):
        w85.u85_cores(64)


def test_layout_from_registers():
    registers = dict(ofm_depth_m1=39, ifm_depth_m1=2, ifm_precision=0, kernel_height_m1=8, kernel_width_m1=4,
                     ofm_blk_depth_m1=23, weight_format=0x11, acc_format=1 << 8)
    # stride x 3 (msb 1, lsb 0), stride y 2 (lsb 1), part-kernel, dilation y 2
    fields = w85.layout_from_registers(macs=128, depthwise=False, kernel_stride=1 << 6 | 1 << 1 | 1 << 2 | 1 << 4,
                                       **registers)
    assert (fields["stride"], fields["dilation"], fields["kernel_h"], fields["kernel_w"]) == ((3, 2), (1, 2), 5, 5)
    assert (fields["traversal"], fields["sparse"], fields["weight_format"]) == ("part_kernel", True, "FWD")
    assert (fields["ofm_depth"], fields["ifm_depth"], fields["ofm_block_depth"], fields["ublock_depth"]) == (40, 3, 24, 8)
    assert fields["ifm_block_depth"] == 16 and fields["cores"] == 1
    with pytest.raises(UserError, match="D4X4"):
        w85.layout_from_registers(macs=128, depthwise=False, kernel_stride=1 << 5, **registers)


def encoded(weights: list) -> bytes:
    """A standard weight stream of `weights`, by the Vela wheel's encoder (the same syntax)."""
    from ethosu import mlw_codec
    return bytes(mlw_codec.encode(weights))


@pytest.mark.parametrize("seed, zeros, spread", [(0, 0.6, 100), (1, 0.0, 255), (2, 0.95, 3), (3, 0.3, 1)])
def test_mlw_decode_matches_the_encoder(seed, zeros, spread):
    rng = np.random.default_rng(seed)
    weights = (rng.integers(-spread, spread + 1, 40000) * (rng.random(40000) >= zeros)).tolist()
    assert mlw.mlw_decode(encoded(weights), len(weights)).tolist() == weights


def test_mlw_decode_refuses_corrupt_streams():
    """Where the wheel's decoder would end the process (a stream that runs out) or allocate without
    bound (a corrupt zero run), tinyrps's raises one line; random damage never crashes it."""
    rng = np.random.default_rng(4)
    weights = (rng.integers(-50, 51, 5000) * (rng.random(5000) < 0.5)).tolist()
    stream = encoded(weights)
    with pytest.raises(UserError, match="ends inside a field"):
        mlw.mlw_decode(stream[:len(stream) // 2], len(weights))
    with pytest.raises(UserError, match="more weights than its layer has"):
        mlw.mlw_decode(stream, len(weights) - 1)
    for _ in range(100):
        damaged = bytearray(stream)
        for at in rng.integers(0, len(damaged), 3):
            damaged[at] ^= 1 << int(rng.integers(0, 8))
        try:
            values = mlw.mlw_decode(bytes(damaged), len(weights))
        except UserError:
            continue
        assert len(values) <= len(weights)


def test_a_layout_beyond_any_layer_is_refused_before_it_is_built():
    with pytest.raises(UserError, match="registers are corrupt"):
        w85.u85_weights(b"", **small_layout(ofm_depth=65536, ifm_depth=65536, weight_format="SWD"))
