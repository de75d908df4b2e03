"""The U85's RESIZE: nearest and bilinear resizing of the IFM, as TOSA's RESIZE defines it.

Output row oy reads the IFM at y = oy * d + offset in units of 1/n of a row (n: RESIZE_Y_SCALE_N_M1
+ 1, d: the step, RESIZE_Y_STEP, offset: RESIZE_Y_OFFSET), so at row floor(y / n) and fraction
y mod n; columns likewise. NEAREST takes the nearer row and column, BILINEAR weighs the four
neighbours by (n - fraction) and fraction, both clamped to the IFM's edges. The accumulator is that
value times 2**16 (the output stage's shift takes it off), then the shared output stage.
"""
from __future__ import annotations

import numpy as np

from . import NpuCorrupt, NpuUnsupported
from .featuremap import CHAIN, access
from .operations import Kernel, ofm_reverse, ofm_transpose

RESIZE_MODES = {0: "BILINEAR", 2: "NEAREST"}       # 1 is REPLICATE
ACC_SHIFT = 16


class Resize(Kernel):
    def __init__(self, registers, command, config, extents):
        mode = command.param & 3
        self.mode = RESIZE_MODES.get(mode)
        if self.mode is None:
            raise NpuUnsupported(f"OP_RESIZE mode {mode} (REPLICATE) is not implemented")
        self.operation, self.product = f"RESIZE {self.mode}", config.product
        self.ofm_shape = registers.ofm_shape()
        oh, ow, oc = self.ofm_shape
        # the IFM's height and width are the KERNEL registers' (the rows and columns the clamps keep to)
        ih, iw = registers.param("KERNEL_HEIGHT_M1") + 1, registers.param("KERNEL_WIDTH_M1") + 1
        self.ifm_depth = registers.param("IFM_DEPTH_M1") + 1
        if self.ifm_depth != oc:
            raise NpuCorrupt(f"RESIZE of {self.ifm_depth} IFM channels into {oc} OFM channels")
        ifm = registers.feature_map("IFM")
        if ifm.region == CHAIN or ifm.region is None:
            raise NpuUnsupported("RESIZE of a chained IFM is not implemented")
        self.ifm = access(ifm, (ih, iw, self.ifm_depth), extents)
        self.transpose, self.reverse = ofm_transpose(registers, config), ofm_reverse(registers, config)
        ofm = registers.feature_map("OFM")
        self.ofm = access(ofm, tuple(self.ofm_shape[a] for a in self.transpose), extents)
        self.ifm_zp = registers.zero_point("IFM_ZERO_POINT", ifm)
        self.ofm_zp = registers.zero_point("OFM_ZERO_POINT", ofm)
        self._output_stage(registers, config, records=False)
        if self.per_channel:
            raise NpuUnsupported("RESIZE in OFM_PRECISION's per-channel scale mode is not implemented")
        (self.y0, self.y1, self.wy), self.ny = self._axis(registers, "Y", oh, ih)
        (self.x0, self.x1, self.wx), self.nx = self._axis(registers, "X", ow, iw)
        self.report = {"at": command.at, "operation": self.operation, "ofm": self.ofm_shape,
                       "macs": oh * ow * oc * (4 if self.mode == "BILINEAR" else 1), "dma_bytes": 0}

    def _axis(self, registers, axis: str, out: int, size: int) -> tuple:
        """(the two IFM indices and the weight of the second, per output index), and n."""
        n = registers.param(f"RESIZE_{axis}_SCALE_N_M1") + 1
        if registers.param(f"RESIZE_{axis}_STEP") & 0xF:
            raise NpuUnsupported(f"RESIZE_{axis}_STEP with an integer step (a scale below 1) is not implemented")
        d = registers.payload(f"RESIZE_{axis}_STEP") & 0xFFFF
        if d >= n:
            raise NpuCorrupt(f"RESIZE_{axis}_STEP's fraction {d} is not below its scale {n}")
        offset = registers.param(f"RESIZE_{axis}_OFFSET") & 0xFFF
        offset -= (offset & 0x800) << 1                  # 12-bit two's complement
        y = np.arange(out, dtype=np.int64) * d + offset
        index, fraction = y // n, y % n
        if self.mode == "NEAREST":
            index = index + (fraction >= n // 2)
            first = np.clip(index, 0, size - 1)
            return (first, first, np.zeros_like(fraction)), n
        return (np.clip(index, 0, size - 1), np.clip(index + 1, 0, size - 1), fraction), n

    def run(self, memory: list) -> None:
        x = self.ifm.read(memory[self.ifm.fm.region]).astype(np.int64) - self.ifm_zp
        if self.mode == "NEAREST":
            acc = x[self.y0][:, self.x0] << ACC_SHIFT
        else:
            wy, wx = self.wy[:, None, None], self.wx[None, :, None]
            rows0, rows1 = x[self.y0], x[self.y1]
            acc = ((rows0[:, self.x0] * (self.nx - wx) + rows0[:, self.x1] * wx) * (self.ny - wy)
                   + (rows1[:, self.x0] * (self.nx - wx) + rows1[:, self.x1] * wx) * wy) << ACC_SHIFT
        self.finish(memory, acc)
