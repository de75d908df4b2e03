"""The NPU's operations as steps: DMA, convolution, depthwise convolution, pooling (elementwise: elementwise.py).

Each builder reads the registers an operation uses when its command is met, checks them,
computes its feature maps' addresses and returns a step; `step.run(memory)` executes it on
the regions (memory[0..2]), the LUT memory (memory[3]) and the U85's chained feature map
(memory[4]). Arithmetic is exact integer arithmetic: accumulators are formed from
(ifm - zero point) * weight, in float64 where every partial sum is an integer below 2**53 (so
exact), then int64.
"""
from __future__ import annotations

import numpy as np

from . import NpuCorrupt, NpuUnsupported, output_stage, weights_u55
from .mlw_stream import mlw_decode
from .featuremap import CHAIN, MAX_ELEMENTS, UPSCALE_NONE, UPSCALE_ZEROS, Access, access

U55_ACC = {0: 32, 1: 40}
POOL_MODES = {0: "MAX", 1: "AVERAGE", 2: "REDUCE_SUM"}
# the U85's pooling modes: SUM adds the window's taps (no kernel-size compensation), MIN takes the
# least, NONE reads no IFM (the accumulators come from ACC_FORMAT.acc_input)
U85_POOL_MODES = {0: "MAX", 1: "AVERAGE", 2: "REDUCE_SUM", 3: "SUM", 4: "NONE", 5: "MIN"}
ACC_INPUT_RESET, ACC_INPUT_KEEP, ACC_INPUT_IFM2 = 0, 1, 2
ACTIVATION_NONE = 0


class Step:
    report: dict

    def run(self, memory: list) -> None:
        raise NotImplementedError


# ---- DMA -------------------------------------------------------------------------------------

class Dma(Step):
    def __init__(self, src: tuple, dst: tuple, length: int, at: int):
        (self.src_region, self.src), (self.dst_region, self.dst), self.length = src, dst, length
        self.report = {"at": at, "operation": "DMA", "macs": 0, "dma_bytes": length}

    def run(self, memory: list) -> None:
        memory[self.dst_region][self.dst:self.dst + self.length] = \
            memory[self.src_region][self.src:self.src + self.length]


def build_dma(registers, command, config, extents) -> Step:
    src_param, dst_param = registers.param("DMA0_SRC_REGION"), registers.param("DMA0_DST_REGION")
    if src_param >> 8 & 1:
        raise NpuUnsupported("DMA0_SRC_REGION.region_mode INTERNAL (a DMA from the NPU's internal memory)")
    stride_mode = src_param >> 9 & 3
    if stride_mode != 0:
        raise NpuUnsupported(f"DMA0_SRC_REGION.stride_mode {stride_mode} (a 2-D or 3-D DMA) is not implemented")
    if config.product == "ethos-u85" and (src_param >> 11 & 1 or dst_param >> 11 & 1):
        raise NpuUnsupported("DMA0_SRC/DST_REGION.idx_mode (an indexed DMA) is not implemented")
    src_region = registers.region("DMA0_SRC_REGION")
    src, length = registers.address("DMA0_SRC"), registers.address("DMA0_LEN")
    dst = registers.address("DMA0_DST")
    if dst_param >> 8 & 1:                    # the internal memory: the LUT
        dst_region = 3
        if dst + length > config.internal_bytes:
            raise NpuCorrupt(f"DMA0_DST {dst} + DMA0_LEN {length} runs past the NPU's {config.internal_bytes}-byte "
                             f"internal memory")
    else:
        dst_region = registers.region("DMA0_DST_REGION")
        extents.add(dst_region, (dst + length, f"DMA destination ({length} bytes at {dst})"))
    extents.add(src_region, (src + length, f"DMA source ({length} bytes at {src})"))
    return Dma((src_region, src), (dst_region, dst), length, command.at)


# ---- the kernel operations ---------------------------------------------------------------------

class Kernel(Step):
    """What convolution, depthwise convolution and pooling share: the IFM window, the output stage."""

    def __init__(self, registers, command, config, extents, operation: str):
        self.operation, self.product = operation, config.product
        self.ofm_shape = registers.ofm_shape()
        kernel = registers.kernel()
        self.kh, self.kw = kernel["height"], kernel["width"]
        self.sy, self.sx = kernel["stride_y"], kernel["stride_x"]
        self.dy, self.dx = kernel["dilation_y"], kernel["dilation_x"]
        self.part_kernel = kernel["part_kernel"]
        if registers.param("KERNEL_STRIDE") >> 5 & 1:
            raise NpuUnsupported("KERNEL_STRIDE.decomposition D4X4 is not implemented (D8X8 is)")
        self.pad = registers.padding()
        self.upscale = registers.param("IFM_UPSCALE") & 3
        if self.upscale > UPSCALE_ZEROS:
            raise NpuCorrupt(f"IFM_UPSCALE mode {self.upscale} is not an upscaling mode")
        oh, ow, oc = self.ofm_shape
        top, left, bottom, right = self.pad
        ih = (oh - 1) * self.sy + (self.kh - 1) * self.dy + 1 - top - bottom
        iw = (ow - 1) * self.sx + (self.kw - 1) * self.dx + 1 - left - right
        if ih < 1 or iw < 1:
            raise NpuCorrupt(f"the padding {self.pad} leaves no IFM for OFM {self.ofm_shape} "
                             f"and a {self.kh}x{self.kw} kernel")
        if self.upscale != UPSCALE_NONE:         # the IFM in memory is half the height and width read
            ih, iw = (ih + 1) // 2, (iw + 1) // 2
        self.ifm_depth = registers.param("IFM_DEPTH_M1") + 1
        ifm, ofm = registers.feature_map("IFM"), registers.feature_map("OFM")
        if ifm.region == CHAIN:
            raise NpuUnsupported(f"a chained IFM (IFM_PRECISION.activation_storage 2) into {operation} "
                                 f"is not implemented (into an elementwise operation it is)")
        if ifm.region is None:
            raise NpuCorrupt(f"{operation} reads an IFM stored nowhere (IFM_PRECISION.activation_storage 3)")
        self.ifm = Access(ifm, (ih, iw, self.ifm_depth), extents)
        self.transpose, self.reverse = ofm_transpose(registers, config), ofm_reverse(registers, config)
        self.ofm = access(ofm, tuple(self.ofm_shape[a] for a in self.transpose), extents)
        self.ifm_zp = registers.zero_point("IFM_ZERO_POINT", ifm)
        self.ofm_zp = registers.zero_point("OFM_ZERO_POINT", ofm)
        self._output_stage(registers, config)
        self.report = {"at": command.at, "operation": operation, "ofm": self.ofm_shape,
                       "kernel": (self.kh, self.kw), "macs": 0, "dma_bytes": 0}

    def _output_stage(self, registers, config, records: bool = True) -> None:
        """The output stage's registers; `records`: whether a per-channel scale mode reads scale records."""
        ofm_precision = registers.param("OFM_PRECISION")
        self.per_channel = not ofm_precision >> 8 & 1
        activation = registers.param("ACTIVATION")
        self.lut = lut_offset(activation, config, self.ofm.fm)
        self.act_min, self.act_max = registers.signed16("ACTIVATION_MIN"), registers.signed16("ACTIVATION_MAX")
        if not self.ofm.fm.signed:
            self.act_min, self.act_max = registers.param("ACTIVATION_MIN"), registers.param("ACTIVATION_MAX")
        if self.ofm.fm.size == 4:
            # the 16-bit activation range does not bound a 32-bit OFM (a transpose convolution's
            # accumulators on the U55 go through one); only the OFM's type does
            self.act_min, self.act_max = -(1 << 31), (1 << 31) - 1
        if config.product == "ethos-u85":
            scale = registers.values.get("OFM_SCALE")
            param = 0 if scale is None else scale.param
            self.round = output_stage.round_mode(output_stage.U85_ROUND, param >> 13 & 7, "OFM_SCALE")
            self.double_round = param >> 6 & 0x1F
            self.global_scale = (registers.payload("OFM_SCALE") & 0x7FFFFFFF, param & 0x3F)
            acc = registers.param("ACC_FORMAT")
            self.acc_input = acc >> 4 & 3
            if self.acc_input == ACC_INPUT_KEEP or acc >> 6 & 1 or self.acc_input > ACC_INPUT_IFM2:
                raise NpuUnsupported(f"ACC_FORMAT.acc_input {acc >> 4 & 3} / acc_output {acc >> 6 & 1} "
                                     f"(accumulators kept across operations) is not implemented")
            if self.acc_input == ACC_INPUT_IFM2 and self.operation != "POOL NONE":
                raise NpuUnsupported(f"ACC_FORMAT.acc_input IFM2 with {self.operation} is not implemented "
                                     f"(with POOL NONE it is)")
            self.acc_bits = {0: 32, 1: 48}.get(acc & 3)
            if self.acc_bits is None:
                raise NpuUnsupported(f"ACC_FORMAT.acc_format {acc & 3} is not implemented")
            self.microblock = acc >> 8 & 7
            clip = activation >> 12 & 1
            self.clip = None if clip else (-(1 << 15), (1 << 15) - 1)
        else:
            self.round = output_stage.round_mode(output_stage.U55_ROUND, ofm_precision >> 14 & 3, "OFM_PRECISION")
            self.double_round = 0
            self.global_scale = (registers.payload("OFM_SCALE"), registers.param("OFM_SCALE") & 0x3F)
            acc = registers.param("ACC_FORMAT") & 3
            self.acc_bits = U55_ACC.get(acc)
            if self.acc_bits is None:
                raise NpuUnsupported(f"ACC_FORMAT {acc} (a float16 accumulator) is not implemented")
            clip = activation >> 12 & 7
            ranges = {0: None, 2: (0, 255), 3: (-128, 127), 5: (-(1 << 15), (1 << 15) - 1)}
            if clip not in ranges:
                raise NpuCorrupt(f"ACTIVATION.activation_clip_range {clip} is not a clip range")
            self.clip = ranges[clip]
        self.scale_records = None
        if self.per_channel and records:
            self.scale_records = ScaleRecords(registers, config, self.ofm_shape[2], self.report_name(), {})

    def report_name(self) -> str:
        return self.operation

    def prepare_windows(self) -> None:
        """The IFM taps of every OFM position, as byte indices into the IFM's region."""
        oh, ow, _ = self.ofm_shape
        self.taps, self.padding = self.ifm.windows(self.ofm_shape, (self.kh, self.kw), (self.sy, self.sx),
                                                   (self.dy, self.dx), self.pad, self.upscale)
        self.taps_shape = (oh, ow, self.kh, self.kw, self.ifm_depth)

    def read_taps(self, memory: list, dtype, fill) -> np.ndarray:
        """[oh, ow, kh, kw, c] of (ifm - zero point), padded taps `fill`."""
        raw = memory[self.ifm.fm.region][self.taps].view(self.ifm.fm.dtype)
        x = raw.astype(dtype)
        if self.ifm_zp:
            x -= self.ifm_zp
        if self.padding is not None:
            x[self.padding] = fill
        return x.reshape(self.taps_shape)

    def finish(self, memory: list, acc: np.ndarray) -> None:
        """The output stage on the [oh, ow, oc] accumulators, written to the OFM."""
        if self.per_channel:
            bias, scale, shift = self.scale_records.read(memory)
            value = acc + bias
        else:
            value, (scale, shift) = acc, self.global_scale
        self.write(memory, output_stage.rescale(value, scale, shift, self.round, self.double_round))

    def write(self, memory: list, scaled: np.ndarray) -> None:
        out = scaled + self.ofm_zp
        if self.lut is not None:
            # an int8 lookup: the table's entry for the saturated value, -128 first
            table = memory[3][self.lut:self.lut + 256].view(np.int8)
            out = table[output_stage.clamp(out, -128, 127) + 128].astype(np.int64)
        out = output_stage.clamp(out, self.act_min, self.act_max)
        if self.clip is not None:
            out = output_stage.clamp(out, *self.clip)
        if self.reverse is not None:
            out = np.flip(out, self.reverse)
        self.ofm.write(memory[self.ofm.fm.region], out.transpose(self.transpose))


U55_TABLES = range(16, 24)       # ACTIVATION.activation_function TABLE_0..7
U85_LUT_S8_S8 = 4
LUT_AREA = 2048                 # the U55 keeps its lookup tables in the last 2 KB of its SHRAM


def lut_offset(activation: int, config, ofm) -> int:
    """Where in the internal memory an int8 lookup table starts, or None without one."""
    function = activation & 0x1F
    if function == ACTIVATION_NONE:
        return None
    if ofm.size != 1:
        raise NpuUnsupported(f"ACTIVATION.activation_function {function} with a {8 * ofm.size}-bit OFM "
                             f"(a 16-bit lookup) is not implemented")
    if config.product == "ethos-u85":
        if function != U85_LUT_S8_S8:
            raise NpuUnsupported(f"ACTIVATION.activation_function {function} is not implemented (LUT_S8_S8 is)")
        return (activation >> 5 & 7) * 256        # ACTIVATION.table: 256-byte tables in the 2 KB LUT
    if function not in U55_TABLES:
        raise NpuUnsupported(f"ACTIVATION.activation_function {function} (a built-in TANH/SIGMOID) "
                             f"is not implemented")
    return config.internal_bytes - LUT_AREA + (function - U55_TABLES.start) * 256


# OFM_PRECISION.activation_transpose (U85): the axes of the computed (H, W, C) OFM that the
# stored feature map's (height, width, depth) hold; its registers' shape is the computed one
TRANSPOSES = {0: (0, 1, 2), 1: (1, 0, 2), 2: (0, 2, 1), 3: (1, 2, 0), 6: (2, 0, 1), 7: (2, 1, 0)}


def ofm_reverse(registers, config):
    """OFM_PRECISION.activation_reverse (U85): the computed OFM's axis (0 H, 1 W, 2 C) stored reversed, or None."""
    if config.product != "ethos-u85":
        return None
    reverse = registers.param("OFM_PRECISION") >> 9 & 3
    return None if reverse == 0 else reverse - 1


def ofm_transpose(registers, config) -> tuple:
    if config.product != "ethos-u85":
        return TRANSPOSES[0]
    precision = registers.param("OFM_PRECISION")
    transpose = precision >> 11 & 7
    if transpose not in TRANSPOSES:
        raise NpuCorrupt(f"OFM_PRECISION.activation_transpose {transpose} is not a transpose")
    return TRANSPOSES[transpose]


class ScaleRecords:
    """The per-channel bias, scale and shift: a 10-byte record per OFM channel.
    U55: i40 bias, u32 scale, u6 shift. U85 (32-bit accumulator): i32 bias, u31 scale, u6 shift."""

    def __init__(self, registers, config, channels: int, what: str, extents):
        self.region = registers.region("SCALE_REGION")
        self.base, self.length = registers.address("SCALE_BASE"), registers.address("SCALE_LENGTH")
        self.channels, self.product = channels, config.product
        if self.length < 10 * channels:
            raise NpuCorrupt(f"SCALE_LENGTH {self.length} holds fewer than the {channels} 10-byte records "
                             f"of the OFM's channels")
        self.extent = (self.base + 10 * channels, f"scale records ({10 * channels} bytes at {self.base})")
        self._bytes, self._values = None, None

    def read(self, memory: list) -> tuple:
        raw = memory[self.region][self.base:self.base + 10 * self.channels]
        if len(raw) < 10 * self.channels:
            raise NpuCorrupt(f"the scale records at {self.base} run past region {self.region}")
        data = raw.tobytes()
        if data != self._bytes:
            self._bytes, self._values = data, self._decode(raw.reshape(self.channels, 10).astype(np.int64))
        return self._values

    def _decode(self, r: np.ndarray) -> tuple:
        if self.product == "ethos-u85":
            bias = r[:, 0] | r[:, 1] << 8 | r[:, 2] << 16 | r[:, 3] << 24
            bias = np.where(bias >= 1 << 31, bias - (1 << 32), bias)
            scale = (r[:, 4] | r[:, 5] << 8 | r[:, 6] << 16 | r[:, 7] << 24) & 0x7FFFFFFF
            return bias, scale, r[:, 8] & 0x3F
        bias = r[:, 0] | r[:, 1] << 8 | r[:, 2] << 16 | r[:, 3] << 24 | r[:, 4] << 32
        bias = np.where(bias >= 1 << 39, bias - (1 << 40), bias)
        return bias, r[:, 5] | r[:, 6] << 8 | r[:, 7] << 16 | r[:, 8] << 24, r[:, 9] & 0x3F


# a U55 stream may end in a few zeros beyond its layout's values (its last slice is padded)
STREAM_SLACK = 64


class Weights:
    """An operation's weight streams, decoded and put in OHWI order when their bytes change."""

    def __init__(self, registers, config, shape: tuple, traversal: str, ifm_bits: int, dilation: tuple,
                 stride: tuple, extents):
        self.shape, self.config = shape, config
        if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            raise NpuUnsupported(f"a weight tensor of shape {shape} is larger than this model takes")
        self.region = registers.region("WEIGHT_REGION")
        cores = 1
        if config.product == "ethos-u85":
            from .weights_u85 import u85_cores
            cores = u85_cores(config.macs)
        elif config.cores > 1:
            raise NpuUnsupported(f"weights for {config.cores} cores (WEIGHT1_BASE) are not implemented")
        names = ["WEIGHT"] + [f"WEIGHT{i}" for i in range(1, cores)]
        if config.product == "ethos-u85" and registers.param("WEIGHT_FORMAT") & 1:
            names = names[:1]                         # a fast-weight stream interleaves the cores
        self.streams = [(registers.address(f"{n}_BASE"), registers.address(f"{n}_LENGTH")) for n in names]
        for base, length in self.streams:
            extents.add(self.region, (base + length, f"weight stream ({length} bytes at {base})"))
        if config.product == "ethos-u85":
            self.u85 = _u85_parameters(registers, config, shape, traversal, ifm_bits, dilation, stride)
        else:
            self.u85 = None
            self.order = weights_u55.stream_order(
                shape[0], shape[1], shape[2], shape[3], traversal=traversal,
                ofm_block_depth=registers.param("OFM_BLK_DEPTH_M1") + 1, ofm_ublock=config.ofm_ublock,
                ifm_ublock=8, ifm_bits=ifm_bits, dilation=dilation)
        self._bytes, self._tensor = None, None

    def tensor(self, memory: list) -> np.ndarray:
        data = [memory[self.region][base:base + length].tobytes() for base, length in self.streams]
        if data != self._bytes:
            self._bytes, self._tensor = data, self._decode(data)
        return self._tensor

    def _decode(self, data: list) -> np.ndarray:
        if self.u85 is None:
            values = mlw_decode(data[0], len(self.order) + STREAM_SLACK)
            return weights_u55.scatter(values, self.order, self.shape, "weights")
        from .weights_u85 import u85_weights
        tensor = u85_weights(data if len(data) > 1 else data[0], **self.u85)
        if self.u85["depthwise"]:
            tensor = tensor[0].transpose(2, 0, 1)[..., None]       # [1, kh, kw, c] -> [c, kh, kw, 1]
        return tensor


def _u85_parameters(registers, config, shape, traversal, ifm_bits, dilation, stride) -> dict:
    from .weights_u85 import ifm_block_depth, u85_cores, ublock_depth
    weight_format = registers.param("WEIGHT_FORMAT")
    sparse = bool(weight_format >> 4 & 1)
    microblock = registers.param("ACC_FORMAT") >> 8 & 7
    ublock = ublock_depth(config.macs, microblock)
    names = {weights_u55.DEPTH_FIRST: "depth_first", weights_u55.PART_KERNEL_FIRST: "part_kernel",
             weights_u55.DEPTHWISE: "depthwise"}
    kind = names[traversal]
    return {"ofm_depth": shape[0], "ifm_depth": shape[0] if kind == "depthwise" else shape[3],
            "kernel_h": shape[1], "kernel_w": shape[2],
            "ofm_block_depth": registers.param("OFM_BLK_DEPTH_M1") + 1, "ublock_depth": ublock,
            "ifm_block_depth": ifm_block_depth(kind, macs=config.macs, ublock=ublock, sparse=sparse,
                                               ifm_bits=ifm_bits),
            "traversal": kind, "sparse": sparse, "depthwise": kind == "depthwise",
            "weight_format": "FWD" if weight_format & 1 else "SWD", "cores": u85_cores(config.macs),
            "stride": stride, "dilation": dilation, "ifm_bits": ifm_bits, "macs": config.macs}


class Convolution(Kernel):
    def __init__(self, registers, command, config, extents):
        super().__init__(registers, command, config, extents, "CONV")
        oh, ow, oc = self.ofm_shape
        if not self.per_channel:
            raise NpuUnsupported("a convolution with a global OFM_SCALE (no scale records) is not implemented")
        self._records_extent(extents)
        traversal = weights_u55.PART_KERNEL_FIRST if self.part_kernel else weights_u55.DEPTH_FIRST
        self.weights = Weights(registers, config, (oc, self.kh, self.kw, self.ifm_depth), traversal,
                               8 * self.ifm.fm.size, (self.dy, self.dx), (self.sy, self.sx), extents)
        self.report["macs"] = oh * ow * oc * self.kh * self.kw * self.ifm_depth
        self._matrix_of = None
        self.prepare_windows()

    def _records_extent(self, extents):
        extents.add(self.scale_records.region, self.scale_records.extent)

    def run(self, memory: list) -> None:
        weights = self.weights.tensor(memory)
        if self._matrix_of is not weights:
            self._matrix = weights.reshape(weights.shape[0], -1).T.astype(np.float64)
            self._matrix_of = weights
        windows = self.read_taps(memory, np.float64, 0.0)
        oh, ow, oc = self.ofm_shape
        acc = matmul(windows.reshape(oh * ow, -1), self._matrix)
        self.finish(memory, acc.astype(np.int64).reshape(oh, ow, oc))


class Depthwise(Convolution):
    def __init__(self, registers, command, config, extents):
        Kernel.__init__(self, registers, command, config, extents, "DEPTHWISE")
        oh, ow, oc = self.ofm_shape
        if self.ifm_depth != oc:
            raise NpuUnsupported(f"a depthwise convolution of {self.ifm_depth} IFM channels into {oc} OFM "
                                 f"channels is not implemented")
        if not self.per_channel:
            raise NpuUnsupported("a depthwise convolution with a global OFM_SCALE is not implemented")
        self._records_extent(extents)
        self.weights = Weights(registers, config, (oc, self.kh, self.kw, 1), weights_u55.DEPTHWISE,
                               8 * self.ifm.fm.size, (self.dy, self.dx), (self.sy, self.sx), extents)
        self.report["macs"] = oh * ow * oc * self.kh * self.kw
        self.prepare_windows()

    def run(self, memory: list) -> None:
        weights = self.weights.tensor(memory)[..., 0].transpose(1, 2, 0)      # [kh, kw, c]
        windows = self.read_taps(memory, np.int64, 0)
        self.finish(memory, np.einsum("yxhwc,hwc->yxc", windows, weights.astype(np.int64)))


class Pooling(Kernel):
    def __init__(self, registers, command, config, extents):
        mode = command.param & 7
        self.mode = (U85_POOL_MODES if config.product == "ethos-u85" else POOL_MODES).get(mode)
        if self.mode is None:
            raise NpuUnsupported(f"OP_POOL pooling_mode {mode} is not implemented")
        super().__init__(registers, command, config, extents, f"POOL {self.mode}")
        if self.mode == "REDUCE_SUM":
            self._check_reduce_sum()
        elif self.ifm_depth != self.ofm_shape[2]:
            raise NpuCorrupt(f"pooling {self.ifm_depth} IFM channels into {self.ofm_shape[2]} OFM channels")
        if self.per_channel and self.mode != "NONE":
            raise NpuUnsupported("pooling with per-channel scale records is not implemented")
        if self.per_channel:
            extents.add(self.scale_records.region, self.scale_records.extent)
        oh, ow, oc = self.ofm_shape
        self.report["macs"] = oh * ow * max(oc, self.ifm_depth) * self.kh * self.kw
        if self.mode == "NONE":
            if getattr(self, "acc_input", ACC_INPUT_RESET) != ACC_INPUT_IFM2:
                raise NpuUnsupported("POOL NONE without ACC_FORMAT.acc_input IFM2 is not implemented")
            self.report["macs"] = 0
            accumulators = registers.feature_map("IFM2")
            if accumulators.region is None:
                raise NpuCorrupt("POOL NONE reads its accumulators from an IFM2 stored nowhere (storage NONE)")
            self.accumulators = access(accumulators, self.ofm_shape, extents)
        # The NPU divides an average pool's sum by its taps inside the IFM itself on the U85, and on
        # the U55 where the pool is padded (its OFM_SCALE is then a unit); otherwise the OFM_SCALE
        # holds the division by the kernel's size.
        self.hw_average = self.mode == "AVERAGE" and (
            config.product == "ethos-u85" or (any(self.pad) and self.global_scale == (1, 0)))
        self.prepare_windows()
        self.single_tap = self.kh * self.kw == 1
        if self.hw_average:
            inside = np.ones(int(np.prod(self.taps_shape)), np.int64)
            if self.padding is not None:
                inside[self.padding] = 0
            counts = inside.reshape(self.taps_shape)[..., :1].sum(axis=(2, 3))
            self.reciprocal = reciprocal_scale(counts)

    def _check_reduce_sum(self) -> None:
        """REDUCE_SUM adds the IFM's channels at each position into one OFM channel, one tap each."""
        if self.ofm_shape[2] != 1:
            raise NpuCorrupt(f"REDUCE_SUM into {self.ofm_shape[2]} OFM channels (it makes one)")
        if (self.kh, self.kw, self.sy, self.sx) != (1, 1, 1, 1) or any(self.pad) or self.upscale:
            raise NpuUnsupported(f"REDUCE_SUM with a {self.kh}x{self.kw} kernel, stride {self.sy}x{self.sx}, "
                                 f"padding {self.pad} or upscaling is not implemented (1x1 unpadded is)")

    def run(self, memory: list) -> None:
        if self.mode == "NONE":
            acc = self.accumulators.read(memory[self.accumulators.fm.region]).astype(np.int64)
            return self.finish(memory, acc)
        fill = {"MAX": np.iinfo(np.int64).min, "MIN": np.iinfo(np.int64).max}.get(self.mode, 0)
        x = self.read_taps(memory, np.int64, fill)
        if self.mode == "REDUCE_SUM":          # the channels of each position, into one
            return self.finish(memory, x.sum(axis=(2, 3, 4))[..., None])
        if self.single_tap:
            acc = x.reshape(self.ofm_shape)
        elif self.mode == "MAX":
            acc = x.max(axis=(2, 3))
        elif self.mode == "MIN":
            acc = x.min(axis=(2, 3))
        else:
            acc = x.sum(axis=(2, 3))
        if not self.hw_average:
            return self.finish(memory, acc)
        multiplier, shift = self.reciprocal
        self.finish(memory, output_stage.rescale(acc * multiplier, 1, shift, output_stage.NATURAL))


# OpenBLAS splits a product over threads above 2**18 multiply-adds; on a loaded machine (the
# interpreter's usual place: beside a test suite or a server) those threads cost ten times what
# they give, so each product is cut into row blocks below that size.
SINGLE_THREAD_MACS = 1 << 17


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    rows = max(1, SINGLE_THREAD_MACS // max(1, a.shape[1] * b.shape[1]))
    if rows >= a.shape[0]:
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]))
    for i in range(0, a.shape[0], rows):
        np.matmul(a[i:i + rows], b, out=out[i:i + rows])
    return out


def reciprocal_scale(counts: np.ndarray) -> tuple:
    """(multiplier, shift) with multiplier / 2**shift ~ 1/count, as TOSA's reciprocal_scale."""
    counts = counts.astype(np.int64)
    k = np.ceil(np.log2(counts)).astype(np.int64)           # (1 << k) / 2 < count <= (1 << k)
    return ((1 << 30) + 1 << k) // counts, 30 + k


BUILDERS = {"OP_DMA_START": build_dma, "OP_CONV": Convolution, "OP_DEPTHWISE": Depthwise, "OP_POOL": Pooling}
