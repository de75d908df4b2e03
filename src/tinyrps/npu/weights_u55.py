"""Where each value of an Ethos-U55/U65 weight stream goes in the OHWI weight tensor.

The NPU reads weights in the order its MAC array consumes them: OFM blocks (OFM_BLK_DEPTH
channels), then IFM blocks (16 channels in part-kernel-first order or for 16-bit IFMs, else
32), then sub-kernels of at most 8x8 (over dilation), then micro-blocks of the OFM and IFM
depth (8 deep; 4 OFM channels on the 32-MAC configuration), with the kernel elements
between them: depth-first order walks the kernel outside the IFM micro-blocks,
part-kernel-first inside them, padding each sub-kernel's elements to a multiple of 4
(2 for 16-bit IFMs). Depthwise weights are one IFM channel deep, each OFM channel reading its
own IFM channel, with the elements padded to a multiple of 4. Positions past the tensor's
edges hold zeros. This module computes that order from the operation's registers; the
model scatters the decoded stream through it.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import NpuCorrupt

DEPTH_FIRST, PART_KERNEL_FIRST, DEPTHWISE = "depth-first", "part-kernel-first", "depthwise"


def round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


@lru_cache(maxsize=256)
def stream_order(ofm_depth: int, kh: int, kw: int, ifm_depth: int, *, traversal: str, ofm_block_depth: int,
                 ofm_ublock: int, ifm_ublock: int, ifm_bits: int, dilation: tuple = (1, 1)) -> np.ndarray:
    """The flat OHWI index (-1: a padding zero) of each value of the stream, in stream order.
    For depthwise weights the tensor is [channels, kh, kw, 1]."""
    depthwise, part_kernel = traversal == DEPTHWISE, traversal == PART_KERNEL_FIRST
    ifm_block = 16 if part_kernel or ifm_bits == 16 else 32
    element_round = 4 if depthwise else (2 if ifm_bits == 16 else 4) if part_kernel else 1
    decomp_y, decomp_x = 8 // dilation[0], 8 // dilation[1]
    i_count = 1 if depthwise else ifm_depth
    o_lanes = np.arange(ofm_ublock)[:, None]                       # one micro-block: OFM lanes x IFM lanes
    i_lanes = np.arange(1 if depthwise else ifm_ublock)[None, :]
    pieces = []
    for ofm_z in range(0, ofm_depth, ofm_block_depth):
        ofm_in_block = min(ofm_block_depth, ofm_depth - ofm_z)
        for ifm_z in range(0, 1 if depthwise else ifm_depth, ifm_block):
            ifm_in_block = ifm_ublock if depthwise else (
                min(ifm_block, ifm_depth - ifm_z) if part_kernel else ifm_block)
            for sub_y in range(0, kh, decomp_y):
                sub_h = min(kh - sub_y, decomp_y)
                for sub_x in range(0, kw, decomp_x):
                    sub_w = min(kw - sub_x, decomp_x)
                    elements = round_up(sub_w * sub_h, element_round)
                    outer = range(0, ifm_in_block, ifm_ublock) if part_kernel else range(1)
                    inner = range(1) if part_kernel else range(0, ifm_in_block, ifm_ublock)
                    for ifm_outer in outer:
                        for ofm_u in range(0, ofm_in_block, ofm_ublock):
                            for element in range(elements):
                                ky, kx = divmod(element, sub_w)
                                for ifm_inner in inner:
                                    o = ofm_z + ofm_u + o_lanes
                                    i = ifm_z + ifm_outer + ifm_inner + i_lanes
                                    valid = (o < ofm_depth) & (i < i_count) & (ky < sub_h)
                                    flat = ((o * kh + sub_y + ky) * kw + sub_x + kx) * i_count + i
                                    pieces.append(np.where(valid, flat, -1).reshape(-1))
    if not pieces:
        raise NpuCorrupt(f"a weight tensor of shape {(ofm_depth, kh, kw, ifm_depth)} has no weights")
    return np.concatenate(pieces)


def scatter(values: np.ndarray, order: np.ndarray, shape: tuple, what: str) -> np.ndarray:
    """The OHWI tensor whose stream is `values` in `order`."""
    if len(values) < len(order):
        raise NpuCorrupt(f"{what}: the weight stream decodes to {len(values)} values; "
                         f"the operation takes {len(order)}")
    tensor = np.zeros(int(np.prod(shape)), np.int32)
    used = order >= 0
    tensor[order[used]] = values[:len(order)][used]
    return tensor.reshape(shape)
