"""The NPU's register file as a command stream leaves it, and the fields an operation reads.

A register keeps its value until the stream writes it again; one never written reads 0, as
after the NPU's reset. Field positions are those of the NPU's register descriptions.
"""
from __future__ import annotations

from . import NpuCorrupt, NpuUnsupported
from .featuremap import CHAIN, FeatureMap, read_precision

REGIONS = 3       # the driver passes three base addresses: weights, scratch, fast scratch
TILE2X2, TILE3X1, CHAINED, NONE = 0, 1, 2, 3       # the U85's *_PRECISION.activation_storage


class Registers:
    def __init__(self, product: str):
        self.product = product
        self.values = {}

    def set(self, command) -> None:
        self.values[command.name] = command

    def param(self, name: str) -> int:
        command = self.values.get(name)
        return 0 if command is None else command.param

    def signed16(self, name: str) -> int:
        value = self.param(name)
        return value - 0x10000 if value & 0x8000 else value

    def payload(self, name: str) -> int:
        command = self.values.get(name)
        return 0 if command is None or command.payload is None else command.payload

    def address(self, name: str) -> int:
        """A 40-bit address: the payload, with the parameter's low byte as bits 39..32."""
        return self.payload(name) | (self.param(name) & 0xFF) << 32

    def region(self, name: str) -> int:
        region = self.param(name) & 7
        if region >= REGIONS:
            raise NpuCorrupt(f"{name} {region}: the driver passes regions 0 (weights), 1 (scratch) "
                             f"and 2 (fast scratch) only")
        return region

    def feature_map(self, name: str) -> FeatureMap:
        type_bits = 1 if name == "OFM" else 2
        size, signed, layout = read_precision(name, self.param(f"{name}_PRECISION"), type_bits)
        storage = self._u85_storage(name) if self.product == "ethos-u85" else TILE2X2
        if storage != TILE2X2:       # no address: chained, or a scalar operand that reads no memory
            region = CHAIN if storage == CHAINED else None
            return FeatureMap(name, region, (0,) * 4, (0, 0, 0), (0, 0, 0), size, signed, layout)
        return FeatureMap(
            name, self.region(f"{name}_REGION"), tuple(self.address(f"{name}_BASE{i}") for i in range(4)),
            (self.param(f"{name}_HEIGHT0_M1"), self.param(f"{name}_HEIGHT1_M1"), self.param(f"{name}_WIDTH0_M1")),
            tuple(self.address(f"{name}_STRIDE_{axis}") for axis in "YXC"), size, signed, layout)

    def _u85_storage(self, name: str) -> int:
        """activation_storage: TILE2X2 (the tiles above), CHAINED, or NONE (a scalar operand)."""
        storage = (self.param(f"{name}_PRECISION") >> 14) & 3
        if storage == TILE3X1:
            raise NpuUnsupported(f"{name}_PRECISION.activation_storage 1 (TILE3X1) is not implemented")
        if storage == NONE and name == "OFM":
            raise NpuUnsupported("OFM_PRECISION.activation_storage 3 (NONE) is not implemented "
                                 "(a scalar operand's is)")
        return storage

    def zero_point(self, name: str, fm: FeatureMap) -> int:
        """A ZERO_POINT register: 16 bits, signed where the feature map is."""
        return self.signed16(name) if fm.signed else self.param(name)

    def kernel(self) -> dict:
        stride = self.param("KERNEL_STRIDE")
        dilation_y, dilation_x = (stride >> 4 & 1) + 1, (stride >> 3 & 1) + 1
        # the KERNEL_*_M1 registers hold the dilated extent
        return {"height": self.param("KERNEL_HEIGHT_M1") // dilation_y + 1,
                "width": self.param("KERNEL_WIDTH_M1") // dilation_x + 1,
                "stride_y": ((stride >> 9 & 1) << 1 | (stride >> 1 & 1)) + 1,
                "stride_x": ((stride >> 6 & 1) << 1 | (stride & 1)) + 1,
                "part_kernel": bool(stride >> 2 & 1),
                "dilation_y": dilation_y, "dilation_x": dilation_x}

    def padding(self) -> tuple:
        return tuple(self.param(f"IFM_PAD_{side}") for side in ("TOP", "LEFT", "BOTTOM", "RIGHT"))

    def ofm_shape(self) -> tuple:
        return (self.param("OFM_HEIGHT_M1") + 1, self.param("OFM_WIDTH_M1") + 1, self.param("OFM_DEPTH_M1") + 1)
