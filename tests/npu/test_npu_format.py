"""The NPU model's parsing and arithmetic on hand-made programs: the delegate's blocks, the COP1
payload, register commands, bounds checks, the output stage's round modes and the U55 weight order."""
import struct

import numpy as np
import pytest

from tinyrps.infra.errors import UserError
from tinyrps.npu import NpuCorrupt, NpuUnsupported, blob, output_stage, weights_u55
from tinyrps.npu.program import Program

U55_128_CONFIG = 0x00001807          # product 0 (U55), 24 KB SHRAM, 2**7 MACs
STOP = 0xFFFF0000


def cmd0(opcode: int, param: int = 0) -> list:
    return [opcode | param << 16]


def cmd1(opcode: int, payload: int, param: int = 0) -> list:
    return [opcode | 1 << 14 | param << 16, payload]


def cop1(words: list, config: int = U55_128_CONFIG) -> bytes:
    header = [int.from_bytes(b"COP1", "little"), 0x00100001, config, 0x10066001]
    header += [0x05] * (3 - len(header) % 4)          # NOP tags: the stream tag ends a 16-byte unit
    header += [0x02 | (len(words) >> 16) << 8 | (len(words) & 0xFFFF) << 16]
    return struct.pack(f"<{len(header) + len(words)}I", *header, *words)


def io_block(places: list) -> bytes:
    """count, then per tensor shape[6], element size, offset, region."""
    data = struct.pack("<i", len(places))
    for size, offset in places:
        data += struct.pack("<6iiii", 1, 1, 1, 1, 1, size, 1, offset, 1)
    return data


def vela_blob(cmd_data: bytes, weights: bytes, scratch: int, inputs: list, outputs: list) -> bytes:
    blocks = [("vela_bin_stream", b""), ("cmd_data", cmd_data), ("weight_data", weights),
              ("scratch_size", struct.pack("<I", scratch)), ("inputs", io_block(inputs)),
              ("outputs", io_block(outputs)), ("vela_end_stream", b"")]
    out = b""
    for name, data in blocks:
        out += name.encode().ljust(16, b"\0") + struct.pack("<IB11x", len(data), 0)
        out += data + b"\0" * (-len(data) % 16)
    return out


def dma(src_region: int, src: int, dst_region: int, dst: int, length: int) -> list:
    return (cmd0(0x130, src_region) + cmd1(0x030, src) + cmd0(0x131, dst_region) + cmd1(0x031, dst)
            + cmd1(0x032, length) + cmd0(0x010))


def program(words: list, weights: bytes = bytes(range(64)), scratch: int = 64) -> Program:
    data = vela_blob(cop1(words), weights, scratch, [(16, 0)], [(16, 32)])
    return Program(blob.parse_delegate(data, "test.pte"), "test.pte")


def test_a_dma_copies_from_the_weights_into_the_scratch():
    p = program(dma(0, 8, 1, 32, 16) + [STOP])
    (out,) = p.run([np.zeros(16, np.int8)])
    assert bytes(out.view(np.uint8)) == bytes(range(8, 24))
    assert p.report() == [{"at": 8, "operation": "DMA", "macs": 0, "dma_bytes": 16}]


def test_a_dma_outside_its_region_is_refused_before_running():
    with pytest.raises(NpuCorrupt, match=r"OP_DMA_START at command word 8: DMA source \(16 bytes at 60\) "
                                         r"reaches byte 76 of region 0"):
        program(dma(0, 60, 1, 32, 16) + [STOP])


def test_the_fast_scratch_is_sized_by_what_the_stream_touches():
    p = program(dma(0, 0, 2, 100, 16) + dma(2, 100, 1, 32, 16) + [STOP])
    assert p.region_sizes == (64, 64, 116)
    (out,) = p.run([np.zeros(16, np.int8)])
    assert bytes(out.view(np.uint8)) == bytes(range(16))


@pytest.mark.parametrize("words,message", [
    (dma(0, 0, 1, 32, 16), "ends without OP_STOP"),
    (cmd0(0x3FF) + [STOP], "opcode 0x3ff, which the ethos-u55 does not have"),
    ([3 << 14, STOP], "has kind 3"),
    (cmd0(0x10F, 5) + cmd0(0x005) + [STOP], "IFM_REGION 5: the driver passes regions 0"),
    (cmd0(0x114, 6) + cmd0(0x005) + [STOP], "64-bit feature maps are not implemented"),
    (cmd0(0x007) + [STOP], "opcode 0x7"),                    # OP_RESIZE exists on the U85 only
])
def test_a_bad_command_stream_is_one_line(words, message):
    with pytest.raises(UserError, match=message) as e:
        program(words)
    assert "\n" not in str(e.value) and str(e.value).startswith("test.pte")


def test_an_unimplemented_field_value_names_itself():
    # a 2-D DMA: DMA0_SRC_REGION.stride_mode 1
    with pytest.raises(NpuUnsupported, match="stride_mode 1 .* is not implemented"):
        program(cmd0(0x130, 1 << 9) + cmd1(0x032, 4) + cmd0(0x010) + [STOP])


@pytest.mark.parametrize("cut", [10, 40, 100, 200])
def test_a_cut_blob_is_corrupt(cut):
    data = vela_blob(cop1([STOP]), bytes(64), 64, [(16, 0)], [(16, 32)])
    with pytest.raises(NpuCorrupt):
        blob.parse_delegate(data[:cut], "test.pte")


@pytest.mark.parametrize("places,message", [([(16, 60)], "outside its scratch"), ([(16, -4)], "offset -4")])
def test_tensors_outside_the_scratch_are_refused(places, message):
    data = vela_blob(cop1([STOP]), bytes(64), 64, places, [(16, 32)])
    with pytest.raises(NpuCorrupt, match=message):
        blob.parse_delegate(data, "test.pte")


def test_the_cop1_header_is_checked():
    payload = bytearray(cop1([STOP]))
    payload[:4] = b"COP2"
    with pytest.raises(NpuCorrupt, match="does not start with COP1"):
        Program(blob.Delegate(bytes(payload), b"", 16, (), ()), "test.pte")
    short = cop1([STOP])[:-8] + struct.pack("<2I", 0x00050002, STOP)       # the tag says 5 words
    with pytest.raises(NpuCorrupt, match="says 5 words; 1 follow"):
        Program(blob.Delegate(short, b"", 16, (), ()), "test.pte")


def tosa_apply_scale_32(value: int, multiplier: int, shift: int, double_round: bool) -> int:
    """TOSA's apply_scale_32, written from the specification's pseudo-code."""
    round_ = 1 << (shift - 1)
    if double_round and shift > 31:
        round_ += 1 << 30 if value >= 0 else -(1 << 30)
    return (value * multiplier + round_) >> shift


def test_the_round_modes_are_tosa_rescale_single_and_double_round():
    rng = np.random.default_rng(1)
    values = rng.integers(-(1 << 31), 1 << 31, 2000)
    for multiplier, shift in [(1 << 30, 31), (1404975576, 39), (1073741825, 33), (1, 1), (1798112000, 45)]:
        natural = output_stage.rescale(values, multiplier, shift, output_stage.NATURAL)
        double = output_stage.rescale(values, multiplier, shift, output_stage.DOUBLE_SYMMETRIC)
        assert natural.tolist() == [tosa_apply_scale_32(int(v), multiplier, shift, False) for v in values]
        assert double.tolist() == [tosa_apply_scale_32(int(v), multiplier, shift, True) for v in values]


def test_truncating_round_modes():
    v = np.array([-7, -4, -1, 0, 1, 4, 7])
    assert output_stage.rescale(v, 1, 2, output_stage.TRUNCATE_TO_ZERO).tolist() == [-1, -1, 0, 0, 0, 1, 1]
    assert output_stage.rescale(v, 1, 2, output_stage.TRUNCATE_TO_LOWER).tolist() == [-2, -1, -1, 0, 0, 1, 1]
    assert output_stage.rescale(v, 1, 2, output_stage.SYMMETRIC).tolist() == [-2, -1, 0, 0, 0, 1, 2]


@pytest.mark.parametrize("traversal,shape,block,ublock", [
    (weights_u55.DEPTH_FIRST, (40, 3, 3, 24), 32, 8), (weights_u55.DEPTH_FIRST, (3, 1, 1, 200), 16, 8),
    (weights_u55.PART_KERNEL_FIRST, (16, 5, 5, 3), 16, 8), (weights_u55.PART_KERNEL_FIRST, (20, 9, 9, 2), 8, 4),
    (weights_u55.DEPTHWISE, (32, 3, 3, 1), 16, 8)])
def test_the_u55_weight_order_places_each_weight_once(traversal, shape, block, ublock):
    order = weights_u55.stream_order(*shape, traversal=traversal, ofm_block_depth=block, ofm_ublock=ublock,
                                     ifm_ublock=8, ifm_bits=8)
    placed = np.sort(order[order >= 0])
    assert placed.tolist() == list(range(int(np.prod(shape))))


# ---- the U85's chained feature maps, scalar operands and compares, on hand-made programs ----------

U85_128_CONFIG = 0x20000007         # product 2 (U85), 2**7 MACs
CHAINED = 2 << 14                    # *_PRECISION.activation_storage CHAINED
INT8, GLOBAL_SCALE = 1, 1 << 8       # *_PRECISION: signed 8-bit; OFM_PRECISION: the global scale


def u85_program(words: list) -> Program:
    data = vela_blob(cop1(words, U85_128_CONFIG), bytes(64), 64, [(16, 0)], [(16, 32)])
    return Program(blob.parse_delegate(data, "test.pte"), "test.pte")


def u85_elementwise(mode: int, ifm: int = 0, ofm: int = 32, ifm_storage: int = 0, ofm_storage: int = 0,
                    scalar: int = None) -> list:
    """An elementwise operation on a 1x16x1 int8 IFM at scratch byte `ifm` (or a chained one), with
    a scalar IFM2 if given, into an OFM at `ofm` (or chained); unit scales, zero points 0."""
    words = (cmd0(0x10F, 1) + cmd0(0x105, INT8 | ifm_storage) + cmd0(0x10A, 15) + cmd0(0x10B, 0)
             + cmd0(0x10C, 0) + cmd0(0x104, 0) + cmd1(0x000, ifm) + cmd1(0x004, 1) + cmd1(0x005, 16)
             + cmd1(0x006, 1) + cmd1(0x025, 1) + cmd1(0x026, 1)
             + cmd0(0x11F, 1) + cmd0(0x114, INT8 | GLOBAL_SCALE | ofm_storage) + cmd0(0x111, 15)
             + cmd0(0x112, 0) + cmd0(0x113, 0) + cmd0(0x11A, 15) + cmd0(0x11B, 0) + cmd0(0x11C, 0)
             + cmd1(0x010, ofm) + cmd1(0x014, 1) + cmd1(0x015, 16) + cmd1(0x016, 1)
             + cmd0(0x126, 0xFF80) + cmd0(0x127, 127) + cmd1(0x024, 1))
    if scalar is not None:      # IFM2 stored nowhere (NONE), broadcast as a scalar from OP_SCALAR
        words += cmd0(0x185, INT8 | 3 << 14) + cmd0(0x180, 8) + cmd1(0x027, scalar & 0xFFFFFFFF)
    return words + cmd0(0x006, mode)


ABS, CMP_GT, AND, NOT = 6, 19, 33, 36


def test_a_chained_ofm_is_the_next_operations_ifm():
    p = u85_program(u85_elementwise(ABS, ofm_storage=CHAINED) + u85_elementwise(NOT, ifm_storage=CHAINED)
                    + [STOP])
    x = np.arange(-8, 8, dtype=np.int8)
    (out,) = p.run([x])
    assert out.tolist() == (~np.abs(x.astype(np.int64))).tolist()


def test_a_compare_is_minus_one_where_true_against_a_scalar_operand():
    # OP_SCALAR is a register (its name starts as an operation's does)
    p = u85_program(u85_elementwise(CMP_GT, scalar=-2) + [STOP])
    x = np.arange(-8, 8, dtype=np.int8)
    (out,) = p.run([x])
    assert out.tolist() == np.where(x > -2, -1, 0).tolist()


@pytest.mark.parametrize("words,message", [
    (u85_elementwise(ABS, ofm_storage=CHAINED) + [STOP], "chains its OFM to no operation"),
    (u85_elementwise(ABS, ofm_storage=CHAINED) + u85_elementwise(ABS) + [STOP], "does not read the chained OFM"),
    (u85_elementwise(ABS, ifm_storage=CHAINED) + [STOP], "follows a chained OFM of none"),
    (u85_elementwise(AND)[:-1] + cmd0(0x185, INT8 | 3 << 14) + cmd0(0x180, 0) + cmd0(0x006, AND) + [STOP],
     "stored nowhere"),
    (u85_elementwise(ABS, ofm_storage=3 << 14) + [STOP], "OFM_PRECISION.activation_storage 3"),
    (cmd0(0x007, 1) + [STOP], "OP_RESIZE mode 1 .*REPLICATE"),
    (u85_elementwise(5) + [STOP], r"OP_ELEMENTWISE mode 5 \(LRELU\) is not implemented"),
    (u85_elementwise(11) + [STOP], r"OP_ELEMENTWISE mode 11 \(DIV\) is not implemented"),
])
def test_a_bad_u85_stream_is_one_line(words, message):
    with pytest.raises(UserError, match=message) as e:
        u85_program(words)
    assert "\n" not in str(e.value) and str(e.value).startswith("test.pte")


def test_a_pool_of_an_ifm_stored_nowhere_is_corrupt():
    words = u85_elementwise(ABS)[:-1] + cmd0(0x105, INT8 | 3 << 14) + cmd0(0x005) + [STOP]
    with pytest.raises(NpuCorrupt, match="POOL MAX reads an IFM stored nowhere"):
        u85_program(words)
