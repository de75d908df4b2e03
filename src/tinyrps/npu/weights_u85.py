"""The Ethos-U85's weights and scales as the NPU reads them, turned back into TOSA's tensors.

A U85 convolution reads its weights from one compressed stream per core (WEIGHT_BASE/LENGTH,
WEIGHT1..3_BASE/LENGTH) in the order the MAC array consumes them, and its per-channel bias and
requantization from SCALE_BASE/LENGTH. This module undoes both:

    u85_weights(streams, ...)  -> int32 OHWI weights, zero point already subtracted
                                  (depthwise: [1, KH, KW, C])
    layout_from_registers(...) -> u85_weights's layout, from a convolution's register values
    u85_scales(data, count, acc) -> (bias, scale, shift) per output channel
    fwd_decode(data)           -> the values of one Fast Weight Decoder (FWD) stream
    fwd_header(data)           -> its mode (raw, 2- or 4-bit LUT), zero adjustment and LUT
    swd_decode(data, limit)    -> the values of one standard (SWD, MLW) stream

Every parameter of the layout is read from the command stream or from the NPU's
configuration, never guessed: see u85_weights. The stream order is:

    for each OFM block (OFM_BLK_DEPTH_M1 + 1 channels):
      for each IFM block, serpentine: forwards for even OFM blocks, backwards for odd ones,
            starting again on the block the previous OFM block ended on
        for each 8x8 sub-kernel (8 / dilation taps a side):
          for each IFM micro-block, for each OFM micro-block:
            for each stride phase (part-kernel and depthwise), each kernel row,
                  each kernel column (odd rows right to left):
              for each slice of 8 IFM channels (16 when 2:4 sparse, 1 when depthwise):
                for each group of 4 OFM channels that this core computes:
                  4 OFM channels x the slice's IFM channels
            zeros that round the sub-kernel's taps up to 5 or 10 (part-kernel, depthwise)

Channels outside the tensor are zeros in the stream; so are the rounding taps. A stream whose
padding is not zero, or whose length is not the layout's, is refused as corrupt. With a 16-bit
IFM the same loops take IFM micro-blocks of 8 and round the taps to 10; tinyrps's int8 programs
have none, so only the 8-bit layouts are checked against the compiler's output.
"""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from ..infra.errors import UserError
from .mlw_stream import mlw_decode

# ACC_FORMAT.microblock -> the micro-block's (height, width).
MICROBLOCKS = {0: (1, 1), 1: (1, 2), 2: (1, 4), 3: (2, 2), 4: (2, 4), 5: (4, 4)}

# Per U85 size (MACs, from the COP1 header's config word): its cores, and the depth of each
# OFM micro-block it offers, keyed by (height, width). Arm's configuration table.
U85_CONFIGS = {
    128: (1, {(1, 2): 8, (1, 1): 16}),
    256: (1, {(1, 2): 16, (1, 4): 8, (2, 2): 8}),
    512: (2, {(2, 2): 16, (1, 4): 16}),
    1024: (4, {(2, 2): 32, (1, 4): 32, (2, 4): 16}),
    2048: (4, {(2, 2): 64, (1, 4): 64, (4, 4): 16}),
}

TRAVERSALS = ("depth_first", "part_kernel", "depthwise")
INTERLEAVE = 4  # OFM channels a core takes in turn within a micro-block
# A layout of more weights than this is refused before it is built, so that a corrupt register
# cannot make the model allocate gigabytes; the default network has 0.4 M weights in all.
MAX_WEIGHTS = 1 << 24


def u85_config(macs: int) -> tuple:
    if macs not in U85_CONFIGS:
        raise UserError(f"an Ethos-U85 with {macs} MACs does not exist (it has 128, 256, 512, 1024 or 2048)")
    return U85_CONFIGS[macs]


def u85_cores(macs: int) -> int:
    return u85_config(macs)[0]


def ublock_depth(macs: int, microblock: int) -> int:
    """Depth of the OFM micro-block that ACC_FORMAT.microblock selects on a U85 of `macs` MACs."""
    shapes = u85_config(macs)[1]
    hw = MICROBLOCKS.get(microblock)
    if hw not in shapes:
        raise UserError(f"ACC_FORMAT microblock {microblock} is not a micro-block of the Ethos-U85-{macs}")
    return shapes[hw]


def ifm_block_depth(traversal: str, *, macs: int, ublock: int, sparse: bool, ifm_bits: int = 8) -> int:
    """The IFM block depth the weight order assumes: no register holds it, the U85 fixes it by
    traversal, IFM precision, size and micro-block (the depthwise order does not use it)."""
    if traversal == "part_kernel":
        return 16
    if ifm_bits == 32 or (macs in (128, 256) and ublock == 16 and not sparse):
        return 32
    if sparse and ifm_bits == 8:
        return 128
    return 64


def layout_from_registers(*, macs: int, depthwise: bool, ofm_depth_m1: int, ifm_depth_m1: int, ifm_precision: int,
                          kernel_height_m1: int, kernel_width_m1: int, kernel_stride: int, acc_format: int,
                          ofm_blk_depth_m1: int, weight_format: int) -> dict:
    """u85_weights's keyword arguments from the values (the command word's 16-bit parameter) of the
    registers a convolution runs with, on a U85 of `macs` MACs (NPU_OP_DEPTHWISE: depthwise)."""
    stride = tuple(((kernel_stride >> msb) & 1) * 2 + ((kernel_stride >> lsb) & 1) + 1 for lsb, msb in ((0, 6), (1, 9)))
    dilation = ((kernel_stride >> 3) & 1) + 1, ((kernel_stride >> 4) & 1) + 1
    if (kernel_stride >> 5) & 1:
        raise UserError("KERNEL_STRIDE decomposition D4X4 is not implemented (Vela writes D8X8)")
    traversal = "depthwise" if depthwise else ("part_kernel" if (kernel_stride >> 2) & 1 else "depth_first")
    sparse = bool((weight_format >> 4) & 1)
    ublock = ublock_depth(macs, (acc_format >> 8) & 7)
    ifm_bits = 8 << ((ifm_precision >> 2) & 3)
    return dict(ofm_depth=ofm_depth_m1 + 1, ifm_depth=ifm_depth_m1 + 1,
                kernel_h=kernel_height_m1 // dilation[1] + 1, kernel_w=kernel_width_m1 // dilation[0] + 1,
                ofm_block_depth=ofm_blk_depth_m1 + 1, ublock_depth=ublock,
                ifm_block_depth=ifm_block_depth(traversal, macs=macs, ublock=ublock, sparse=sparse, ifm_bits=ifm_bits),
                traversal=traversal, sparse=sparse, depthwise=depthwise,
                weight_format="FWD" if weight_format & 1 else "SWD", cores=u85_cores(macs),
                stride=stride, dilation=dilation, ifm_bits=ifm_bits, macs=macs)


# --- the order of the stream ------------------------------------------------------------------

class _Layout:
    """The loop limits of one weight order; `core` selects the channels of one core's stream."""

    def __init__(self, *, ofm_depth, ifm_depth, kernel_h, kernel_w, ofm_block_depth, ublock, ifm_block,
                 traversal, sparse, ifm_bits, stride, dilation, macs, cores):
        if traversal not in TRAVERSALS:
            raise UserError(f"weight traversal {traversal!r} is not one of {', '.join(TRAVERSALS)}")
        for name, value in (("OFM depth", ofm_depth), ("IFM depth", ifm_depth), ("kernel height", kernel_h),
                            ("kernel width", kernel_w), ("OFM block depth", ofm_block_depth),
                            ("micro-block depth", ublock), ("IFM block depth", ifm_block), ("cores", cores)):
            if value < 1:
                raise UserError(f"weight layout: {name} {value} is not positive")
        if ofm_depth * kernel_h * kernel_w * (1 if traversal == "depthwise" else ifm_depth) > MAX_WEIGHTS:
            raise UserError(f"weight layout: {ofm_depth}x{kernel_h}x{kernel_w}x{ifm_depth} weights are more than "
                            f"the {MAX_WEIGHTS} a layer may have: the registers are corrupt")
        if ublock % (INTERLEAVE * cores):
            raise UserError(f"weight layout: micro-block depth {ublock} is not shared by {cores} cores")
        if traversal == "depthwise" and sparse:
            raise UserError("weight layout: a depthwise convolution cannot be 2:4 sparse")
        wide = ifm_bits == 16
        self.depthwise = traversal == "depthwise"
        self.ofm_depth, self.kernel_h, self.kernel_w = ofm_depth, kernel_h, kernel_w
        self.ifm_depth = 1 if self.depthwise else ifm_depth
        self.ofm_block, self.ublock, self.ifm_block, self.cores = ofm_block_depth, ublock, ifm_block, cores
        self.stride = (1, 1) if traversal == "depth_first" else tuple(stride)
        self.decomp = (8 // dilation[0], 8 // dilation[1])
        if traversal == "part_kernel":
            self.round = 10 if (wide or sparse) else 5
            self.ifm_ublock = 8 if (wide and not sparse) else ifm_block
        elif traversal == "depth_first":
            self.round, self.ifm_ublock = 1, ifm_block
        else:
            self.round, self.ifm_ublock = 10, 1
        # Depthwise rounding carries extra zero taps on the wider configurations.
        self.dw_padding = 0 if (not wide and macs <= 256) else (2 if macs <= 512 else 6)
        self.step = 1 if self.depthwise else (16 if sparse else 8)

    def tap_template(self, core: int):
        """(IFM offsets, OFM offsets) of the values one kernel tap contributes, in stream order."""
        inner = np.arange(0, self.ifm_ublock, self.step)
        groups = np.arange(core * INTERLEAVE, self.ublock, INTERLEAVE * self.cores)
        shape = (len(inner), len(groups), INTERLEAVE, self.step)
        ifm = inner[:, None, None, None] + np.arange(self.step)[None, None, None, :]
        ofm = groups[None, :, None, None] + np.arange(INTERLEAVE)[None, None, :, None]
        return np.broadcast_to(ifm, shape).ravel(), np.broadcast_to(ofm, shape).ravel()

    def order(self, core: int = 0) -> np.ndarray:
        """Source index (into [O, KH, KW, I] flattened) of each value in one core's stream; -1 is a zero."""
        ifm_off, ofm_off = self.tap_template(core)
        per_tap_padding = self.ublock // self.cores
        chunks = []
        increment, ifm_start = -self.ifm_block, 0
        for ofm_block in range(0, self.ofm_depth, self.ofm_block):
            increment = -increment
            clipped_ofm = min(self.ofm_block, self.ofm_depth - ofm_block)
            ifm_z = ifm_start
            while 0 <= ifm_z < self.ifm_depth:
                ifm_start = ifm_z
                clipped_ifm = 1 if self.depthwise else min(self.ifm_block, self.ifm_depth - ifm_z)
                for sub_x in range(0, self.kernel_w, self.decomp[0]):
                    sub_w = min(self.kernel_w - sub_x, self.decomp[0])
                    for sub_y in range(0, self.kernel_h, self.decomp[1]):
                        sub_h = min(self.kernel_h - sub_y, self.decomp[1])
                        for ifm_outer in range(0, clipped_ifm, self.ifm_ublock):
                            for ofm_outer in range(0, clipped_ofm, self.ublock):
                                self._sub_kernel(chunks, ifm_off + ifm_z + ifm_outer, ofm_off + ofm_block + ofm_outer,
                                                 sub_x, sub_y, sub_w, sub_h, per_tap_padding)
                ifm_z += increment
        return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)

    def _sub_kernel(self, chunks, ifm, ofm, sub_x, sub_y, sub_w, sub_h, per_tap_padding):
        valid = (ifm < self.ifm_depth) & (ofm < self.ofm_depth)
        remaining = -(-sub_w * sub_h // self.round) * self.round
        sx, sy = self.stride
        for phase_y in range(sy):
            rows = (sub_h + sy - 1 - phase_y) // sy
            for phase_x in range(sx):
                cols = (sub_w + sx - 1 - phase_x) // sx
                for ky in range(rows):
                    for kx in range(cols):
                        x = kx if ky % 2 == 0 else cols - 1 - kx
                        wx = sub_x + phase_x + x * sx
                        wy = sub_y + phase_y + ky * sy
                        index = ((ofm * self.kernel_h + wy) * self.kernel_w + wx) * self.ifm_depth + ifm
                        chunks.append(np.where(valid, index, -1))
                        remaining -= 1
                        if self.depthwise and remaining % self.round == 0:
                            chunks.append(np.full(self.dw_padding * per_tap_padding, -1))
        if remaining > 0:
            taps = remaining + (self.dw_padding if self.depthwise else 0)
            chunks.append(np.full(taps * self.ifm_ublock * per_tap_padding, -1))

    def fwd_block(self) -> int:
        """Values one core contributes in turn to an interleaved FWD stream."""
        return self.ublock * self.ifm_ublock * self.round // self.cores


# --- the two stream formats ----------------------------------------------------------------------

def swd_decode(data: bytes, limit: int) -> np.ndarray:
    """The values of a standard (MLW) weight stream, at most `limit` of them (tinyrps.npu.mlw_stream)."""
    return mlw_decode(data, limit)


FWD_HEADER_BITS = 256
FWD_LUT = 16
FWD_WIDTH = {"raw": 8, "lut2": 2, "lut4": 4}   # bits per value


def _unfold(folded: np.ndarray) -> np.ndarray:
    """FWD stores a signed value as its magnitude shifted left with the sign in bit 0."""
    magnitude = (folded >> 1).astype(np.int32)
    return np.where(folded & 1, -magnitude, magnitude)


def _bits_value(bits: np.ndarray, start: int, width: int) -> int:
    return int(np.dot(bits[start:start + width].astype(np.int64), 1 << np.arange(width, dtype=np.int64)))


def fwd_header(data: bytes) -> tuple:
    """(mode, zero adjustment, 16 LUT values) of a Fast Weight Decoder stream's 256-bit header:
    bit 0 raw, bit 1 small LUT, bits 2-103 reserved, bits 104-111 the raw values' signed zero
    adjustment, bits 112-255 sixteen 9-bit LUT entries, each folded (magnitude << 1 | sign).
    mode is "raw" (8-bit values), "lut2" (2-bit indices) or "lut4" (4-bit indices)."""
    if len(data) < FWD_HEADER_BITS // 8 or len(data) % (FWD_HEADER_BITS // 8):
        raise UserError(f"a fast weight stream of {len(data)} bytes is not a whole number of 32-byte units")
    bits = np.unpackbits(np.frombuffer(bytes(data[:FWD_HEADER_BITS // 8]), np.uint8), bitorder="little")
    if bits[2:104].any():
        raise UserError("a fast weight stream's header has reserved bits set: the weights are corrupt")
    mode = "raw" if bits[0] else ("lut2" if bits[1] else "lut4")
    adjust = _bits_value(bits, 104, 8)
    adjust -= 256 if adjust >= 128 else 0
    lut = _unfold(np.array([_bits_value(bits, 112 + 9 * i, 9) for i in range(FWD_LUT)]))
    return mode, adjust, lut


def fwd_decode(data: bytes) -> np.ndarray:
    """The values of a Fast Weight Decoder stream: after the header (fwd_header), 8-bit raw values
    less the zero adjustment, or 2-bit or 4-bit LUT indices, least significant bit first, up to
    the stream's 256-bit aligned end."""
    mode, adjust, lut = fwd_header(data)
    body = np.unpackbits(np.frombuffer(bytes(data[FWD_HEADER_BITS // 8:]), np.uint8), bitorder="little")
    if mode == "raw":
        return np.packbits(body, bitorder="little").view(np.int8).astype(np.int32) - adjust
    width = FWD_WIDTH[mode]
    indices = body.reshape(-1, width).astype(np.int64) @ (1 << np.arange(width))
    return lut[indices]


# --- weights -------------------------------------------------------------------------------------

Streams = Union[bytes, bytearray, memoryview, Sequence[bytes]]


def u85_weights(streams: Streams, *, ofm_depth: int, ifm_depth: int, kernel_h: int, kernel_w: int,
                ofm_block_depth: int, ublock_depth: int, ifm_block_depth: int, traversal: str,
                sparse: bool = False, depthwise: bool = False, weight_format: str = "SWD", cores: int = 1,
                stride: tuple = (1, 1), dilation: tuple = (1, 1), ifm_bits: int = 8, macs: int = 128) -> np.ndarray:
    """The int32 weights of one U85 convolution, OHWI ([1, KH, KW, C] when depthwise), with the
    weight zero point already subtracted, from the bytes the NPU reads.

    streams          WEIGHT_BASE/WEIGHT_LENGTH's bytes; with SWD on more than one core, a list of
                     one stream per core (WEIGHT, WEIGHT1, WEIGHT2, WEIGHT3); FWD has one stream
                     that interleaves the cores' values
    ofm_depth        OFM_DEPTH_M1 + 1 (the channels of this operation: a slice of the layer's)
    ifm_depth        IFM_DEPTH_M1 + 1 (depthwise: equal to ofm_depth)
    kernel_h/_w      the weights' taps: KERNEL_HEIGHT_M1 // dilation_y + 1 (the register holds
                     the dilated extent), likewise KERNEL_WIDTH_M1
    ofm_block_depth  OFM_BLK_DEPTH_M1 + 1
    ublock_depth     depth of the ACC_FORMAT.microblock micro-block: ublock_depth(macs, microblock)
    ifm_block_depth  fixed by the NPU: ifm_block_depth(traversal, ...); unused when depthwise
    traversal        KERNEL_STRIDE.weight_order: "depth_first" (0) or "part_kernel" (1);
                     "depthwise" for NPU_OP_DEPTHWISE, as is depthwise=True
    sparse           WEIGHT_FORMAT.weight_sparsity == SPARSE_2_4
    weight_format    WEIGHT_FORMAT.weight_format: "SWD" (0) or "FWD" (1)
    cores            the U85's cores: u85_cores(macs)
    stride           KERNEL_STRIDE: ((msb << 1 | lsb) + 1) for x and y
    dilation         KERNEL_STRIDE.dilation_x/_y + 1; decomposition must be D8X8 (the only one Vela emits)
    ifm_bits         IFM_PRECISION.activation_precision: 8 or 16
    macs             the COP1 header's config word: 1 << (word & 0xF)
    """
    if depthwise:
        traversal = "depthwise"
    if weight_format not in ("SWD", "FWD"):
        raise UserError(f"WEIGHT_FORMAT {weight_format!r} is neither SWD nor FWD")
    if weight_format == "FWD" and traversal == "depthwise":
        raise UserError("WEIGHT_FORMAT FWD with a depthwise convolution is not a U85 weight layout")
    if ifm_bits not in (8, 16):
        raise UserError(f"weights for a {ifm_bits}-bit IFM are not implemented (8 and 16 bits are)")
    layout = _Layout(ofm_depth=ofm_depth, ifm_depth=ifm_depth, kernel_h=kernel_h, kernel_w=kernel_w,
                     ofm_block_depth=ofm_block_depth, ublock=ublock_depth, ifm_block=ifm_block_depth,
                     traversal=traversal, sparse=sparse, ifm_bits=ifm_bits, stride=stride, dilation=dilation,
                     macs=macs, cores=cores)
    if isinstance(streams, (bytes, bytearray, memoryview)):
        streams = [bytes(streams)]
    streams = list(streams)
    if weight_format == "FWD":
        if len(streams) != 1:
            raise UserError(f"an FWD layer has one weight stream, not {len(streams)}")
        orders = [_interleave([layout.order(core) for core in range(cores)], layout.fwd_block())]
        values = [fwd_decode(streams[0])]
        slack = FWD_HEADER_BITS // FWD_WIDTH[fwd_header(streams[0])[0]] - 1
    else:
        if len(streams) != cores:
            raise UserError(f"an SWD layer on {cores} core(s) has {cores} weight stream(s), not {len(streams)}")
        orders = [layout.order(core) for core in range(cores)]
        values = [swd_decode(s, len(o)) if len(s) else np.zeros(0, np.int32) for s, o in zip(streams, orders)]
        slack = 0
    flat = np.zeros(layout.ofm_depth * kernel_h * kernel_w * layout.ifm_depth, np.int32)
    for core, (order, decoded) in enumerate(zip(orders, values)):
        _scatter(flat, order, decoded, core, weight_format, slack)
    weights = flat.reshape(layout.ofm_depth, kernel_h, kernel_w, layout.ifm_depth)
    return weights.transpose(3, 1, 2, 0).copy() if layout.depthwise else weights


def _interleave(orders: list, block: int) -> np.ndarray:
    """FWD on several cores: block after block, each core's next `block` values in turn."""
    if len(orders) == 1:
        return orders[0]
    if len({len(o) for o in orders}) != 1 or len(orders[0]) % block:
        raise UserError(f"the cores' weight orders do not split into blocks of {block}: the layout is not the NPU's")
    blocks = [o.reshape(-1, block) for o in orders]
    return np.stack(blocks, axis=1).ravel()


def _scatter(flat: np.ndarray, order: np.ndarray, decoded: np.ndarray, core: int, fmt: str, slack: int) -> None:
    """Put each decoded value at its source index. The stream must hold the layout's values and at
    most `slack` more (the zeros that end an FWD stream on a 256-bit boundary); padding is zero."""
    real = order >= 0
    if not len(decoded) and not real.any():
        return                  # a core none of whose channels exist may be given no stream
    if not len(order) <= len(decoded) <= len(order) + slack:
        raise UserError(f"the {fmt} weight stream of core {core} holds {len(decoded)} weights; "
                        f"its layer's layout needs {len(order)}: the weights are corrupt")
    decoded = decoded[:len(order)]
    if decoded[~real].any():
        raise UserError(f"the {fmt} weight stream of core {core} has nonzero padding: the weights are corrupt")
    flat[order[real]] = decoded[real]


# --- scales --------------------------------------------------------------------------------------

SCALE_RECORD = 10


def scale_records(ofm_depth: int, ublock: int) -> int:
    """Records in a U85 scale stream: the channels rounded up to whole micro-blocks of 16 or more."""
    granule = -(-ublock // 16) * 16
    return -(-ofm_depth // granule) * granule


def u85_scales(data: bytes, ofm_depth: int, acc: str = "I32") -> tuple:
    """(bias int64, scale int64, shift int32) per OFM channel from SCALE_BASE/SCALE_LENGTH's bytes.

    Each channel is a 10-byte record; ACC_FORMAT.acc_format selects its form:
      I32: bias i32 (bytes 0-3), scale u31 (bytes 4-7), shift u6 (byte 8)
      I48: bias i48 (bytes 0-5), scale u15 (bytes 6-7), shift u6 (byte 8)
    Byte 9 and the bits above each field are zero."""
    if acc not in ("I32", "I48"):
        raise UserError(f"ACC_FORMAT {acc!r} is neither I32 nor I48")
    if len(data) < ofm_depth * SCALE_RECORD:
        raise UserError(f"a scale stream of {len(data)} bytes is too short for {ofm_depth} channels "
                        f"({SCALE_RECORD} bytes each): the program is corrupt")
    records = np.frombuffer(bytes(data[:ofm_depth * SCALE_RECORD]), np.uint8).reshape(ofm_depth, SCALE_RECORD)
    wide = records.astype(np.int64)
    bias_bytes, top_bit = (6, 15) if acc == "I48" else (4, 31)
    bias = sum(wide[:, i] << (8 * i) for i in range(bias_bytes))
    bias = np.where(bias >= 1 << (8 * bias_bytes - 1), bias - (1 << (8 * bias_bytes)), bias)
    scale = sum(wide[:, bias_bytes + i] << (8 * i) for i in range(8 - bias_bytes))
    shift = records[:, 8].astype(np.int32)
    if (scale >> top_bit).any() or (shift >> 6).any() or records[:, 9].any():
        raise UserError("a scale record has bits set outside its fields: the program is corrupt")
    return bias, scale, shift
