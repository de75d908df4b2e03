"""Feature maps in NPU memory: where element (y, x, c) of an IFM, IFM2 or OFM lives.

A feature map is up to four tiles (BASE0 top-left, BASE1 top-right, BASE2 bottom-left,
BASE3 bottom-right): the left tiles are WIDTH0 wide, the top-left one HEIGHT0 high, the
top-right one HEIGHT1 high; coordinates inside a tile count from its corner. In a tile,
NHWC puts element (y, x, c) at y*STRIDE_Y + x*STRIDE_X + c*size, and NHCWB16 in bricks of
16 channels at y*STRIDE_Y + (c//16)*STRIDE_C + (16*x + c%16)*size.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import NpuCorrupt, NpuUnsupported

NHWC, NHCWB16 = 0, 1
UPSCALE_NONE, UPSCALE_NEAREST, UPSCALE_ZEROS = 0, 1, 2      # IFM_UPSCALE.mode
# where the U85 keeps a CHAINED feature map (activation_storage 2): not in a region but handed from
# one operation's output stage to the next operation's input, in memory[CHAIN]
CHAIN = 4
MAX_ELEMENTS = 1 << 22     # 4 M elements: beyond any SRAM an Ethos-U has
MAX_TAPS = 1 << 23         # the taps of one operation, each an 8-byte index: at most 64 MB
DTYPES = {(1, True): np.int8, (1, False): np.uint8, (2, True): np.int16, (2, False): np.uint16,
          (4, True): np.int32, (4, False): np.uint32}


@dataclass(frozen=True)
class FeatureMap:
    name: str           # "IFM", "IFM2" or "OFM"
    region: int
    bases: tuple        # BASE0..3
    tile: tuple         # (HEIGHT0_M1, HEIGHT1_M1, WIDTH0_M1)
    strides: tuple      # (STRIDE_Y, STRIDE_X, STRIDE_C)
    size: int           # bytes per element
    signed: bool
    layout: int

    @property
    def dtype(self):
        return DTYPES[(self.size, self.signed)]

    def addresses(self, height: int, width: int, depth: int) -> np.ndarray:
        """Byte address of the first byte of each element, [height, width, depth] int64."""
        y = np.arange(height, dtype=np.int64)[:, None, None]
        x = np.arange(width, dtype=np.int64)[None, :, None]
        c = np.arange(depth, dtype=np.int64)[None, None, :]
        h0, h1, w0 = (t + 1 for t in self.tile)
        right = x >= w0
        bottom = y >= np.where(right, h1, h0)
        tile = right.astype(np.int64) + 2 * bottom
        ty = y - np.where(bottom, np.where(right, h1, h0), 0)
        tx = x - np.where(right, w0, 0)
        base = np.asarray(self.bases, np.int64)[tile]
        sy, sx, sc = self.strides
        if self.layout == NHWC:
            return base + ty * sy + tx * sx + c * self.size
        return base + ty * sy + (c // 16) * sc + (tx * 16 + c % 16) * self.size


def read_precision(name: str, param: int, type_bits: int) -> tuple:
    """(element size, signed, layout) of a PRECISION register: type in bit 0, precision in the two
    bits at `type_bits` (1 for the OFM, 2 for the IFMs), layout in bits 7..6."""
    precision, layout = (param >> type_bits) & 3, (param >> 6) & 3
    if precision == 3:
        raise NpuUnsupported(f"{name}_PRECISION: 64-bit feature maps are not implemented")
    if layout > NHCWB16:
        raise NpuCorrupt(f"{name}_PRECISION: layout {layout} is neither NHWC nor NHCWB16")
    return 1 << precision, bool(param & 1), layout


class Access:
    """The elements of one feature map an operation touches, their addresses checked once."""

    def __init__(self, fm: FeatureMap, shape: tuple, extents):
        self.fm, self.shape = fm, tuple(shape)
        if min(shape) < 1 or int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            raise NpuCorrupt(f"{fm.name} of shape {tuple(shape)} is not a feature map this model takes")
        addresses = fm.addresses(*shape)
        if addresses.size:
            low, high = int(addresses.min()), int(addresses.max()) + fm.size
            if low < 0:
                raise NpuCorrupt(f"{fm.name} {shape} in region {fm.region} starts at a negative address ({low})")
            extents.add(fm.region, (high, f"{fm.name} {tuple(shape)}"))
        self.flat = addresses.reshape(-1)
        if fm.size > 1:      # one index per byte, little-endian
            self.flat = (self.flat[:, None] + np.arange(fm.size)).reshape(-1)

    def windows(self, ofm_shape: tuple, kernel: tuple, stride: tuple, dilation: tuple, pad: tuple,
                upscale: int = UPSCALE_NONE) -> tuple:
        """(byte indices [oh, ow, kh, kw, c] of each tap of each OFM position, the flat positions of
        the taps that fall in the padding or None): the IFM as a convolution or pooling reads it.
        Upscaled, the IFM is read at twice its height and width: NEAREST repeats each element,
        ZEROS puts it at the even positions and padding (a zero) at the odd ones."""
        ih, iw, depth = self.shape
        oh, ow = ofm_shape[:2]
        (kh, kw), (sy, sx), (dy, dx), (top, left) = kernel, stride, dilation, pad[:2]
        if oh * ow * kh * kw * depth * self.fm.size > MAX_TAPS:
            raise NpuUnsupported(f"an operation reading {oh * ow * kh * kw * depth} IFM taps (OFM {tuple(ofm_shape)}, "
                                 f"kernel {kh}x{kw}, {depth} channels) is larger than this model takes")
        y = (np.arange(oh) * sy)[:, None, None, None] + (np.arange(kh) * dy - top)[None, None, :, None]
        x = (np.arange(ow) * sx)[None, :, None, None] + (np.arange(kw) * dx - left)[None, None, None, :]
        factor = 1 if upscale == UPSCALE_NONE else 2
        inside = (y >= 0) & (y < ih * factor) & (x >= 0) & (x < iw * factor)
        if upscale == UPSCALE_ZEROS:
            inside &= (y % 2 == 0) & (x % 2 == 0)
        y, x = y // factor, x // factor
        cell = np.clip(y, 0, ih - 1) * iw + np.clip(x, 0, iw - 1)                 # [oh, ow, kh, kw]
        element = cell[..., None] * depth + np.arange(depth)
        size = self.fm.size
        starts = self.flat.reshape(-1, size)[:, 0] if size > 1 else self.flat
        index = starts[element]
        if size > 1:
            index = index[..., None] + np.arange(size)
        padding = None
        if not inside.all():
            padding = np.flatnonzero(np.broadcast_to(~inside[..., None], element.shape))
        return index.reshape(-1), padding

    def read(self, memory: np.ndarray) -> np.ndarray:
        return memory[self.flat].view(self.fm.dtype).reshape(self.shape)

    def write(self, memory: np.ndarray, values: np.ndarray) -> None:
        info = np.iinfo(self.fm.dtype)
        data = np.clip(values, info.min, info.max).astype(self.fm.dtype).reshape(-1)
        memory[self.flat] = data.view(np.uint8)


class ChainAccess:
    """A CHAINED feature map (U85): the values one operation's output stage hands the next
    operation, never stored in a region. An OFM chained must be the next operation's IFM or IFM2."""

    def __init__(self, fm: FeatureMap, shape: tuple):
        self.fm, self.shape = fm, tuple(shape)
        if min(shape) < 1 or int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            raise NpuCorrupt(f"{fm.name} of shape {tuple(shape)} is not a feature map this model takes")

    def read(self, chain: dict) -> np.ndarray:
        return chain["values"]

    def write(self, chain: dict, values: np.ndarray) -> None:
        info = np.iinfo(self.fm.dtype)
        chain["values"] = np.clip(values, info.min, info.max).astype(self.fm.dtype).reshape(self.shape)


def access(fm: FeatureMap, shape: tuple, extents):
    """An Access to a feature map in a region, or a ChainAccess to a chained one (checked against
    the chained OFM the operation before left: its shape and type)."""
    if fm.region != CHAIN:
        return Access(fm, shape, extents)
    chained = ChainAccess(fm, shape)
    if fm.name == "OFM":
        extents.chain_out = chained
        return chained
    before = extents.chain
    if before is None or before.shape != chained.shape or before.fm.dtype != fm.dtype:
        what = "none" if before is None else f"{before.shape} {np.dtype(before.fm.dtype).name}"
        raise NpuCorrupt(f"a chained {fm.name} {chained.shape} {np.dtype(fm.dtype).name} follows "
                         f"a chained OFM of {what}")
    extents.chain_read = True
    return chained
