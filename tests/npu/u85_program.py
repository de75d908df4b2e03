"""What the weight tests read from an Ethos-U85 program: each convolution's registers and the bytes
of its weight and scale streams, and the TOSA graph's constants to compare them with.

A minimal reader of its own: the delegate's blocks, the COP1 header, the register commands, and
the 1-D DMA that copies weights into the fast scratch before the convolution that reads them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tinyrps.npu.weights_u85 import layout_from_registers, u85_cores

# cmd0 opcodes (register value in the command word's upper half)
OP_STOP, OP_CONV, OP_DEPTHWISE, OP_DMA_START = 0, 2, 3, 16
IFM_DEPTH_M1, IFM_PRECISION, OFM_DEPTH_M1, OFM_BLK_DEPTH_M1 = 260, 261, 275, 279
KERNEL_WIDTH_M1, KERNEL_HEIGHT_M1, KERNEL_STRIDE, ACC_FORMAT = 288, 289, 290, 292
WEIGHT_REGION, SCALE_REGION, WEIGHT_FORMAT = 296, 297, 302
DMA0_SRC_REGION, DMA0_DST_REGION = 304, 305
# cmd1 opcodes (a 32-bit payload follows; for addresses the param's low byte holds bits 39:32)
WEIGHT_BASE, WEIGHT_LENGTH, SCALE_BASE, SCALE_LENGTH = 32, 33, 34, 35
DMA0_SRC, DMA0_DST, DMA0_LEN = 48, 49, 50
WEIGHT_N = {1: (144, 145), 2: (146, 147), 3: (148, 149)}


def delegate_blocks(pte: Path) -> dict:
    """The Vela blob's named blocks: 16-byte name, u32 length, u8 external, 11 reserved, data padded to 16."""
    from tinyrps.export.ethos_u import plan_of
    plan = plan_of(Path(pte).read_bytes())
    blob = bytes(plan.backend_delegate_data[plan.execution_plan[0].delegates[0].processed.index].data)
    blocks, at = {}, 0
    while at < len(blob):
        name = blob[at:at + 16].rstrip(b"\0").decode()
        (length,) = struct.unpack_from("<I", blob, at + 16)
        blocks[name] = blob[at + 32:at + 32 + length]
        at += 32 + (length + 15) // 16 * 16
    return blocks


def register_commands(cmd_data: bytes) -> tuple:
    """(MACs from the config word, [(opcode, is_cmd1, param, payload)]) of a COP1 payload."""
    words = np.frombuffer(cmd_data, "<u4")
    assert bytes(cmd_data[:4]) == b"COP1", "not a COP1 command stream"
    macs = 1 << int(words[2] & 0xF)
    at = 4
    while words[at] & 0xFF == 0x05:       # NOP tags to the 16-byte boundary
        at += 1
    tag = int(words[at])
    assert tag & 0xFF == 0x02, f"no command-stream tag at word {at}"
    length = ((tag >> 8) & 0xFF) << 16 | tag >> 16
    stream, i, commands = words[at + 1:at + 1 + length], 0, []
    while i < len(stream):
        word = int(stream[i])
        opcode, cmd1, param = word & 0x3FF, (word >> 14) & 3 == 1, word >> 16
        payload = int(stream[i + 1]) if cmd1 else None
        commands.append((opcode, cmd1, param, payload))
        i += 2 if cmd1 else 1
    return macs, commands


@dataclass
class Convolution:
    """One NPU_OP_CONV/NPU_OP_DEPTHWISE: the registers it ran with and its streams' bytes."""
    depthwise: bool
    regs: dict
    weights: list            # per core: the bytes of WEIGHT, WEIGHT1, ... (empty where the length is 0)
    scales: bytes
    macs: int
    fields: dict = field(default_factory=dict)


def convolutions(pte: Path) -> list:
    """Each convolution of the program, with its weight and scale bytes read where the NPU reads
    them (region 0 is the weights, region 2 the fast scratch that DMA fills from it)."""
    blocks = delegate_blocks(pte)
    macs, commands = register_commands(blocks["cmd_data"])
    regions = {0: bytearray(blocks["weight_data"]), 1: bytearray(1 << 20), 2: bytearray(1 << 22)}
    cmd0, cmd1, found = {}, {}, []
    for opcode, is_cmd1, param, payload in commands:
        if is_cmd1:
            cmd1[opcode] = ((param & 0xFF) << 32) | payload
            continue
        if opcode == OP_DMA_START:
            src, dst = cmd0[DMA0_SRC_REGION], cmd0[DMA0_DST_REGION]
            assert (src >> 9) & 3 == 0 and (dst >> 9) & 3 == 0 and not (src >> 8) & 1, "only 1-D external DMA"
            s, d, n = cmd1[DMA0_SRC], cmd1[DMA0_DST], cmd1[DMA0_LEN]
            regions[dst & 7][d:d + n] = regions[src & 7][s:s + n]
        elif opcode in (OP_CONV, OP_DEPTHWISE):
            memory = regions[cmd0[WEIGHT_REGION] & 7]
            streams = [bytes(memory[cmd1[WEIGHT_BASE]:cmd1[WEIGHT_BASE] + cmd1[WEIGHT_LENGTH]])]
            for core, (base, length) in WEIGHT_N.items():
                if core < u85_cores(macs):
                    n = cmd1.get(length, 0)
                    streams.append(bytes(memory[cmd1[base]:cmd1[base] + n]) if n else b"")
            scale_memory = regions[cmd0[SCALE_REGION] & 7]
            scales = bytes(scale_memory[cmd1[SCALE_BASE]:cmd1[SCALE_BASE] + cmd1[SCALE_LENGTH]])
            found.append(Convolution(opcode == OP_DEPTHWISE, dict(cmd0), streams, scales, macs))
        else:
            cmd0[opcode] = param
    for conv in found:
        conv.fields = layout_fields(conv)
    return found


def layout_fields(conv: Convolution) -> dict:
    """u85_weights's keyword arguments, from the registers (WEIGHT_FORMAT's reset value is SWD, dense)."""
    r = conv.regs
    return layout_from_registers(
        macs=conv.macs, depthwise=conv.depthwise, ofm_depth_m1=r[OFM_DEPTH_M1], ifm_depth_m1=r[IFM_DEPTH_M1],
        ifm_precision=r[IFM_PRECISION], kernel_height_m1=r[KERNEL_HEIGHT_M1], kernel_width_m1=r[KERNEL_WIDTH_M1],
        kernel_stride=r[KERNEL_STRIDE], acc_format=r[ACC_FORMAT], ofm_blk_depth_m1=r[OFM_BLK_DEPTH_M1],
        weight_format=r.get(WEIGHT_FORMAT, 0))


def acc_format(conv: Convolution) -> str:
    return "I48" if conv.regs[ACC_FORMAT] & 3 else "I32"


# --- the TOSA graph -------------------------------------------------------------------------------

@dataclass
class TosaConv:
    """A TOSA convolution: its weights as the NPU computes them (OHWI, or [1, KH, KW, C] for a
    depthwise convolution that stays depthwise), its bias and the multipliers and shifts of the
    RESCALE that reads its output. A depthwise convolution of one input channel is an ordinary
    convolution to the NPU (its channel multiplier becomes the OFM depth): `kind` says which."""
    kind: str
    weights: np.ndarray
    bias: np.ndarray
    multipliers: np.ndarray
    shifts: np.ndarray


def tosa_convolutions(tosa: bytes) -> list:
    from tosa.DType import DType
    from tosa.Op import Op
    from tosa.TosaGraph import TosaGraph
    types = {DType.INT8: np.int8, DType.INT16: np.int16, DType.INT32: np.int32}
    block = TosaGraph.GetRootAs(tosa, 0).Regions(0).Blocks(0)
    tensors = {}
    for i in range(block.TensorsLength()):
        t = block.Tensors(i)
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        data = t.DataAsNumpy() if t.DataLength() else None
        if data is not None and t.Type() in types:
            data = np.frombuffer(data.tobytes(), types[t.Type()])
        tensors[t.Name()] = (shape, data)
    ops = [block.Operators(i) for i in range(block.OperatorsLength())]
    rescale_of = {op.Inputs(0): (tensors[op.Inputs(1)][1], tensors[op.Inputs(2)][1])
                  for op in ops if op.Op() == Op.RESCALE}
    found = []
    for op in ops:
        if op.Op() not in (Op.CONV2D, Op.DEPTHWISE_CONV2D):
            continue
        shape, data = tensors[op.Inputs(1)]
        weights = data[:int(np.prod(shape))].reshape(shape).astype(np.int32)
        zero_point = tensors[op.Inputs(4)][1].astype(np.int32)
        assert not zero_point.any(), "the int8 recipe quantizes weights symmetrically"
        if op.Op() == Op.DEPTHWISE_CONV2D:      # [KH, KW, C, M]
            kh, kw, c, m = shape
            if c == 1:
                kind, weights = "conv", weights.reshape(kh, kw, m).transpose(2, 0, 1)[..., None]
            else:
                assert m == 1, "a channel multiplier on more than one channel"
                kind, weights = "depthwise", weights.reshape(1, kh, kw, c)
        else:
            kind = "conv"
        multipliers, shifts = rescale_of[op.Outputs(0)]
        found.append(TosaConv(kind, weights, tensors[op.Inputs(2)][1].astype(np.int64),
                              multipliers.astype(np.int64), shifts.astype(np.int64)))
    return found
