"""The NPU's elementwise operations of the IFM and the IFM2 (or a scalar): MUL, ADD, SUB, MIN, MAX,
ABS, and the U85's compares (true is -1, every bit set; false 0) and bitwise AND, OR, XOR, NOT, AND_NOT.

Each operand's zero point is subtracted and the operand scaled as its NPU scales it (the U55's
OPA/OPB scaling of an add or a subtract, the U85's IFM/IFM2_SCALE), the operation applied, and the
result goes through the output stage the kernel operations share (operations.Kernel).
"""
from __future__ import annotations

import numpy as np

from . import NpuCorrupt, NpuUnsupported, output_stage
from .featuremap import access
from .operations import Kernel, ofm_reverse, ofm_transpose

ELEMENTWISE_MODES = {0: "MUL", 1: "ADD", 2: "SUB", 3: "MIN", 4: "MAX", 6: "ABS"}
U85_ELEMENTWISE_MODES = {**ELEMENTWISE_MODES, 16: "CMP_EQ", 17: "CMP_NE", 18: "CMP_GE", 19: "CMP_GT",
                         33: "AND", 34: "OR", 35: "XOR", 36: "NOT", 42: "AND_NOT"}
# the modes the model does not implement (Vela 5.1 writes none of them for an int8 program)
UNIMPLEMENTED = {5: "LRELU", 7: "CLZ", 8: "SHR", 9: "SHL", 10: "LSR", 11: "DIV"}
UNARY = {"ABS", "NOT"}         # these read the IFM only: the IFM2 registers are not theirs
BINARY = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply, "MIN": np.minimum, "MAX": np.maximum,
          "AND": np.bitwise_and, "OR": np.bitwise_or, "XOR": np.bitwise_xor,
          "AND_NOT": lambda a, b: a & ~b,
          "CMP_EQ": np.equal, "CMP_NE": np.not_equal, "CMP_GE": np.greater_equal, "CMP_GT": np.greater}
U55_OPA_OPB_16, U55_OPA_32, U55_OPB_32 = 0, 1, 2
# U55 advanced add/sub: the operand that is not scaled by OPA_SCALE is shifted left by this much
U55_FIXED_SHIFT = {1: 19, 2: 14}
# U85 IFM_BROADCAST / IFM2_BROADCAST.broadcast_mode: the axes (H, W, C) of size 1 that are repeated
U85_BROADCAST = {0: (), 1: (0,), 2: (1,), 3: (0, 1), 4: (2,), 5: (0, 2), 6: (1, 2), 7: (0, 1, 2)}
U85_BROADCAST_SCALAR = 8


class Elementwise(Kernel):
    """A binary elementwise operation of the IFM and the IFM2 (or a scalar), with the operands' scaling."""

    def __init__(self, registers, command, config, extents):
        mode = command.param & 0x3F
        self.mode = (U85_ELEMENTWISE_MODES if config.product == "ethos-u85" else ELEMENTWISE_MODES).get(mode)
        if self.mode is None:
            what = f" ({UNIMPLEMENTED[mode]})" if mode in UNIMPLEMENTED else ""
            raise NpuUnsupported(f"OP_ELEMENTWISE mode {mode}{what} is not implemented")
        self.operation, self.product = f"ELEMENTWISE {self.mode}", config.product
        self.ofm_shape = registers.ofm_shape()
        self.transpose, self.reverse = ofm_transpose(registers, config), ofm_reverse(registers, config)
        ofm = registers.feature_map("OFM")
        self.ofm = access(ofm, tuple(self.ofm_shape[a] for a in self.transpose), extents)
        self.operands = [self._operand(registers, config, "IFM", extents)]
        if self.mode not in UNARY:
            self.operands.append(self._operand(registers, config, "IFM2", extents))
        self.ofm_zp = registers.zero_point("OFM_ZERO_POINT", ofm)
        self.report = {"at": command.at, "operation": self.operation, "ofm": self.ofm_shape,
                       "macs": int(np.prod(self.ofm_shape)), "dma_bytes": 0}
        self._output_stage(registers, config, records=False)
        if self.per_channel and config.product != "ethos-u85" and self.mode in ("MIN", "MAX"):
            # the U55 has no scale records for an elementwise operation: its MIN and MAX in the
            # per-channel scale mode pass their result unscaled
            self.per_channel, self.global_scale = False, (1, 0)
        elif self.per_channel:
            raise NpuUnsupported(f"ELEMENTWISE {self.mode} in OFM_PRECISION's per-channel scale mode "
                                 f"is not implemented")
        self._operand_scaling(registers, config)

    def _operand(self, registers, config, name: str, extents) -> dict:
        """How to read one operand: its access (None for a scalar), zero point and broadcast axes."""
        fm = registers.feature_map(name)
        axes, scalar = self._broadcast(registers, config, name)
        zp = registers.zero_point(f"{name}_ZERO_POINT", fm)
        if scalar is not None:
            return {"access": None, "value": scalar, "zp": zp}
        if fm.region is None:
            raise NpuCorrupt(f"{name} is stored nowhere (storage NONE) but is not a scalar")
        shape = tuple(1 if axis in axes else size for axis, size in enumerate(self.ofm_shape))
        return {"access": access(fm, shape, extents), "zp": zp}

    def _broadcast(self, registers, config, name: str) -> tuple:
        """(the broadcast axes, the scalar value or None) of an operand."""
        if config.product == "ethos-u85":
            mode = registers.param(f"{name}_BROADCAST") & 0xF
            if mode == U85_BROADCAST_SCALAR:
                value = registers.payload("OP_SCALAR")
                return (), value - (1 << 32) if value >> 31 else value
            if mode not in U85_BROADCAST:
                raise NpuCorrupt(f"{name}_BROADCAST mode {mode} is not a broadcast")
            return U85_BROADCAST[mode], None
        if name == "IFM":
            return (), None
        param = registers.param("IFM2_BROADCAST")
        if param >> 6 & 1:
            raise NpuUnsupported("IFM2_BROADCAST.operand_order (IFM2 as the first operand) is not implemented")
        if param >> 7 & 1:
            return (), registers.signed16("IFM2_SCALAR")
        return tuple(axis for axis in range(3) if param >> axis & 1), None

    def _operand_scaling(self, registers, config) -> None:
        """Per operand: None (used as it is), ("shift", n) or ("scale", scale, shift, round mode, dbl)."""
        self.scaling = [None, None]
        if config.product == "ethos-u85":
            for i, name in enumerate(("IFM_SCALE", "IFM2_SCALE")):
                param = registers.param(name)
                mode = output_stage.NATURAL if param >> 13 & 1 else output_stage.DOUBLE_SYMMETRIC
                self.scaling[i] = ("scale", registers.payload(name) & 0x7FFFFFFF, param & 0x3F, mode,
                                   param >> 6 & 0x1F)
            return
        if self.mode not in ("ADD", "SUB"):
            return
        precision = registers.param("IFM_PRECISION")
        scale_mode = precision >> 8 & 3
        rounding = output_stage.round_mode(output_stage.U55_ROUND, precision >> 14 & 3, "IFM_PRECISION")
        opa = ("scale", registers.payload("OPA_SCALE"), registers.param("OPA_SCALE") & 0x3F, rounding, 0)
        if scale_mode == U55_OPA_OPB_16:
            opb = registers.payload("OPB_SCALE") & 0xFFFF
            self.scaling = [("scale", opa[1], 0, rounding, 0), ("scale", opb, 0, rounding, 0)]
        elif scale_mode in (U55_OPA_32, U55_OPB_32):
            size = self.operands[0]["access"].fm.size if self.operands[0]["access"] else 1
            if size not in U55_FIXED_SHIFT:
                raise NpuUnsupported(f"advanced add/sub scaling of {8 * size}-bit operands is not implemented")
            fixed = ("shift", U55_FIXED_SHIFT[size])
            self.scaling = [opa, fixed] if scale_mode == U55_OPA_32 else [fixed, opa]
        else:
            raise NpuCorrupt(f"IFM_PRECISION.scale_mode {scale_mode} is not a scale mode")

    def _value(self, memory, operand, scaling) -> np.ndarray:
        if operand["access"] is None:
            x = np.int64(operand["value"]) - operand["zp"]
        else:
            raw = operand["access"].read(memory[operand["access"].fm.region]).astype(np.int64)
            x = raw - operand["zp"]
        if scaling is None:
            return x
        if scaling[0] == "shift":
            return x << scaling[1]
        return output_stage.rescale(x, scaling[1], scaling[2], scaling[3], scaling[4])

    def run(self, memory: list) -> None:
        a, *b = (self._value(memory, o, s) for o, s in zip(self.operands, self.scaling))
        if self.mode in UNARY:
            acc = np.abs(a) if self.mode == "ABS" else ~a
        else:
            acc = BINARY[self.mode](a, b[0])
            if self.mode.startswith("CMP_"):
                acc = -acc.astype(np.int64)
        self.finish(memory, np.broadcast_to(acc, self.ofm_shape))

