"""The COP1 driver payload and the register command stream inside it.

The payload (Vela's `cmd_data`) is a list of 32-bit little-endian words: the fourcc "COP1",
a config tag with the NPU's config word and architecture version, NOP tags to a 16-byte
boundary, and a command-stream tag whose length (in words) covers the rest. Each command
word carries the opcode in bits 9..0, its kind in bits 15..14 (0: a register value or an
operation with a 16-bit parameter; 1: the same with a 32-bit payload word after it) and
the parameter in bits 31..16. The opcode tables are this model's own data, named as the
NPU's registers are: SET_x writes register x, OP_x starts an operation.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from . import NpuCorrupt, NpuUnsupported

FOURCC = b"COP1"
TAG_CONFIG, TAG_CMDSTREAM, TAG_NOP = 0x01, 0x02, 0x05
PRODUCTS = {0: "ethos-u55", 1: "ethos-u65", 2: "ethos-u85"}

# cmd0 opcodes shared by the U55/U65 and the U85
CMD0 = {
    0x000: "OP_STOP", 0x001: "OP_IRQ", 0x002: "OP_CONV", 0x003: "OP_DEPTHWISE", 0x005: "OP_POOL",
    0x006: "OP_ELEMENTWISE", 0x010: "OP_DMA_START", 0x011: "OP_DMA_WAIT", 0x012: "OP_KERNEL_WAIT",
    0x013: "OP_PMU_MASK",
    0x100: "IFM_PAD_TOP", 0x101: "IFM_PAD_LEFT", 0x102: "IFM_PAD_RIGHT", 0x103: "IFM_PAD_BOTTOM",
    0x104: "IFM_DEPTH_M1", 0x105: "IFM_PRECISION", 0x107: "IFM_UPSCALE", 0x109: "IFM_ZERO_POINT",
    0x10A: "IFM_WIDTH0_M1", 0x10B: "IFM_HEIGHT0_M1", 0x10C: "IFM_HEIGHT1_M1", 0x10F: "IFM_REGION",
    0x111: "OFM_WIDTH_M1", 0x112: "OFM_HEIGHT_M1", 0x113: "OFM_DEPTH_M1", 0x114: "OFM_PRECISION",
    0x115: "OFM_BLK_WIDTH_M1", 0x116: "OFM_BLK_HEIGHT_M1", 0x117: "OFM_BLK_DEPTH_M1",
    0x118: "OFM_ZERO_POINT", 0x11A: "OFM_WIDTH0_M1", 0x11B: "OFM_HEIGHT0_M1", 0x11C: "OFM_HEIGHT1_M1",
    0x11F: "OFM_REGION", 0x120: "KERNEL_WIDTH_M1", 0x121: "KERNEL_HEIGHT_M1", 0x122: "KERNEL_STRIDE",
    0x124: "ACC_FORMAT", 0x125: "ACTIVATION", 0x126: "ACTIVATION_MIN", 0x127: "ACTIVATION_MAX",
    0x128: "WEIGHT_REGION", 0x129: "SCALE_REGION", 0x12F: "BLOCKDEP",
    0x130: "DMA0_SRC_REGION", 0x131: "DMA0_DST_REGION", 0x132: "DMA0_SIZE0", 0x133: "DMA0_SIZE1",
    0x180: "IFM2_BROADCAST", 0x185: "IFM2_PRECISION", 0x189: "IFM2_ZERO_POINT", 0x18A: "IFM2_WIDTH0_M1",
    0x18B: "IFM2_HEIGHT0_M1", 0x18C: "IFM2_HEIGHT1_M1", 0x18F: "IFM2_REGION",
}
CMD1 = {
    0x000: "IFM_BASE0", 0x001: "IFM_BASE1", 0x002: "IFM_BASE2", 0x003: "IFM_BASE3", 0x004: "IFM_STRIDE_X",
    0x005: "IFM_STRIDE_Y", 0x006: "IFM_STRIDE_C", 0x010: "OFM_BASE0", 0x011: "OFM_BASE1", 0x012: "OFM_BASE2",
    0x013: "OFM_BASE3", 0x014: "OFM_STRIDE_X", 0x015: "OFM_STRIDE_Y", 0x016: "OFM_STRIDE_C",
    0x020: "WEIGHT_BASE", 0x021: "WEIGHT_LENGTH", 0x022: "SCALE_BASE", 0x023: "SCALE_LENGTH", 0x024: "OFM_SCALE",
    0x030: "DMA0_SRC", 0x031: "DMA0_DST", 0x032: "DMA0_LEN",
    0x080: "IFM2_BASE0", 0x081: "IFM2_BASE1", 0x082: "IFM2_BASE2", 0x083: "IFM2_BASE3", 0x084: "IFM2_STRIDE_X",
    0x085: "IFM2_STRIDE_Y", 0x086: "IFM2_STRIDE_C", 0x090: "WEIGHT1_BASE", 0x091: "WEIGHT1_LENGTH",
}
# what differs by NPU (one opcode means different registers on the U55 and the U85)
CMD0_U55 = {0x10D: "IFM_IB_END", 0x123: "PARALLEL_MODE", 0x12D: "AB_START", 0x181: "IFM2_SCALAR",
            0x18D: "IFM2_IB_START"}
CMD1_U55 = {0x025: "OPA_SCALE", 0x026: "OPB_SCALE", 0x033: "DMA0_SKIP0", 0x034: "DMA0_SKIP1",
            0x092: "SCALE1_BASE", 0x093: "SCALE1_LENGTH"}
CMD0_U85 = {0x007: "OP_RESIZE", 0x108: "IFM_BROADCAST", 0x12A: "RESIZE_X_SCALE_N_M1",
            0x12B: "RESIZE_Y_SCALE_N_M1", 0x12C: "RESIZE_X_OFFSET", 0x12D: "RESIZE_Y_OFFSET",
            0x12E: "WEIGHT_FORMAT", 0x134: "DMA0_IDX_REGION"}
CMD1_U85 = {0x025: "IFM_SCALE", 0x026: "IFM2_SCALE", 0x027: "OP_SCALAR", 0x033: "DMA0_SRC_STRIDE0",
            0x034: "DMA0_SRC_STRIDE1", 0x035: "DMA0_DST_STRIDE0", 0x036: "DMA0_DST_STRIDE1", 0x037: "DMA0_IDX",
            0x038: "DMA0_IDX_MAX", 0x039: "DMA0_IDX_SKIP1", 0x092: "WEIGHT2_BASE", 0x093: "WEIGHT2_LENGTH",
            0x094: "WEIGHT3_BASE", 0x095: "WEIGHT3_LENGTH", 0x096: "RESIZE_X_STEP", 0x097: "RESIZE_Y_STEP",
            0x100: "OP_BRANCH"}
TABLES = {"ethos-u55": ({**CMD0, **CMD0_U55}, {**CMD1, **CMD1_U55}),
          "ethos-u65": ({**CMD0, **CMD0_U55}, {**CMD1, **CMD1_U55}),
          "ethos-u85": ({**CMD0, **CMD0_U85}, {**CMD1, **CMD1_U85})}


@dataclass(frozen=True)
class Config:
    product: str        # "ethos-u55", "ethos-u65" or "ethos-u85"
    macs: int           # MACs per cycle of all cores together
    shram_kb: int
    arch_version: int

    @property
    def cores(self) -> int:
        """Cores sharing the MACs: the Ethos-U65-512 is two 256-MAC cores."""
        return 2 if self.product == "ethos-u65" and self.macs == 512 else 1

    @property
    def ofm_ublock(self) -> int:
        """OFM channels of one micro-block: 4 on the 32-MAC Ethos-U55, else 8."""
        return 4 if self.macs == 32 else 8

    @property
    def internal_bytes(self) -> int:
        """The internal memory a DMA can write (lookup tables): the U55/U65's SHRAM, the U85's 2 KB LUT."""
        return 2048 if self.product == "ethos-u85" else self.shram_kb * 1024


@dataclass(frozen=True)
class Command:
    at: int             # the command's word index in the command stream
    name: str           # e.g. "OP_CONV", "IFM_BASE0"
    param: int          # bits 31..16 of the command word
    payload: int        # the 32-bit word after a cmd1 command; None for cmd0

    @property
    def value(self) -> int:
        """The register value: the payload (addresses: param bits 7..0 are bits 39..32), or the parameter."""
        if self.payload is None:
            return self.param
        return self.payload


def parse_payload(cmd_data: bytes, name: str) -> tuple:
    """(Config, the register command stream's words) of a COP1 payload."""
    if len(cmd_data) % 4 or len(cmd_data) < 16:
        raise NpuCorrupt(f"{name}: the command data is {len(cmd_data)} bytes, not a whole COP1 payload")
    words = struct.unpack(f"<{len(cmd_data) // 4}I", cmd_data)
    if cmd_data[:4] != FOURCC:
        raise NpuCorrupt(f"{name}: the command data does not start with COP1 ({cmd_data[:4]!r})")
    config, at = None, 1
    while at < len(words):
        tag, param = words[at] & 0xFF, words[at] >> 16
        if tag == TAG_CONFIG:
            if at + 3 > len(words):
                raise NpuCorrupt(f"{name}: the COP1 config tag at word {at} is cut short")
            config = _config(words[at + 1], words[at + 2], name)
            at += 3
        elif tag == TAG_NOP:
            at += 1
        elif tag == TAG_CMDSTREAM:
            length = ((words[at] >> 8) & 0xFF) << 16 | param
            if config is None:
                raise NpuCorrupt(f"{name}: the COP1 payload has no config before its command stream")
            if at + 1 + length != len(words):
                raise NpuCorrupt(f"{name}: the COP1 command stream says {length} words; "
                                 f"{len(words) - at - 1} follow")
            return config, words[at + 1:]
        else:
            raise NpuUnsupported(f"{name}: COP1 driver action {tag:#x} at word {at} is not implemented")
    raise NpuCorrupt(f"{name}: the COP1 payload has no command stream")


def _config(word: int, version: int, name: str) -> Config:
    product = PRODUCTS.get(word >> 28)
    if product is None:
        raise NpuUnsupported(f"{name}: NPU product {word >> 28} in the COP1 config word is not implemented")
    return Config(product, 1 << (word & 0xF), (word >> 8) & 0xFF, version)


def decode(words, config: Config, name: str) -> list:
    """The stream's commands, in order; an unknown opcode is a corrupt stream."""
    cmd0, cmd1 = TABLES[config.product]
    commands, at = [], 0
    while at < len(words):
        word = words[at]
        opcode, kind, param = word & 0x3FF, (word >> 14) & 3, word >> 16
        if kind == 0:
            table, payload, size = cmd0, None, 1
        elif kind == 1:
            if at + 1 >= len(words):
                raise NpuCorrupt(f"{name}: command word {at} ({word:#010x}) lacks its payload word")
            table, payload, size = cmd1, words[at + 1], 2
        else:
            raise NpuCorrupt(f"{name}: command word {at} ({word:#010x}) has kind {kind}, neither cmd0 nor cmd1")
        if opcode not in table:
            raise NpuCorrupt(f"{name}: command word {at} ({word:#010x}) has opcode {opcode:#x}, "
                             f"which the {config.product} does not have")
        commands.append(Command(at, table[opcode], param, payload))
        at += size
    return commands
