"""More operator probes: elementwise ABS, MIN, compares and bitwise operations, REDUCE_SUM, tables
(softmax, hardswish, leaky ReLU) and, on the U85, chained operations and RESIZE. A probe's program
is cached by the file defining its module, so these stay apart from probe_modules.py's.

PROBES and U85_PROBES map a probe's name to (module class, input shape), as in probe_modules."""
import torch
from torch import nn


class Abs(nn.Module):
    """|x|: the elementwise ABS (one operand, the output stage's global scale)."""

    def forward(self, x):
        return torch.abs(x)


class Softsign(nn.Module):
    """x / (|x| + 1): ABS, an add whose result goes through a reciprocal table, and a product
    (on the U85 the three are chained: no feature map between them is stored)."""

    def forward(self, x):
        return x / (torch.abs(x) + 1.0)


class Minimum(nn.Module):
    """min(x, x / 2): an elementwise MIN of 32-bit operands after their rescale (on the U55 in the
    per-channel scale mode, whose MIN and MAX take no scale records)."""

    def forward(self, x):
        return torch.minimum(x, x * 0.5)


class MeanSpatial(nn.Module):
    """The mean over height and width: REDUCE_SUM into a 32-bit and then an 8-bit feature map."""

    def forward(self, x):
        return x.mean(dim=(2, 3), keepdim=True)


class SumChannels(nn.Module):
    """The sum over channels: one REDUCE_SUM of the channels at each position."""

    def forward(self, x):
        return x.sum(dim=1, keepdim=True)


class Softmax(nn.Module):
    """A softmax over channels: max, exp and reciprocal tables, REDUCE_SUM, 32-bit elementwise
    operations (on the U85 its second table is table 1 of the LUT)."""

    def forward(self, x):
        return torch.softmax(x, dim=1)


class Hardswish(nn.Module):
    """hardswish: an int8 table."""

    def forward(self, x):
        return nn.functional.hardswish(x)


class LeakyRelu(nn.Module):
    """leaky ReLU, slope 0.1: an int8 table (Vela emits no elementwise LRELU for it)."""

    def forward(self, x):
        return nn.functional.leaky_relu(x, 0.1)


class Where(nn.Module):
    """where(x > 0.5, x, -x): on the U85 a CMP_GT mask (true is every bit set) and its AND, AND_NOT and OR."""

    def forward(self, x):
        return torch.where(x > 0.5, x, -x)


class WhereGe(nn.Module):
    """where(x >= 0.25, x, x / 2): a CMP_GE mask (U85)."""

    def forward(self, x):
        return torch.where(x >= 0.25, x, x * 0.5)


class WhereNe(nn.Module):
    """where(round(x) != 0, x, -x): not-equal as CMP_EQ and NOT (U85)."""

    def forward(self, x):
        return torch.where(torch.round(x) != 0, x, -x)


class WhereXor(nn.Module):
    """where((x > 0) ^ (x < 1), x, -x): two masks combined by XOR (U85)."""

    def forward(self, x):
        return torch.where((x > 0) ^ (x < 1), x, -x)


class ResizeNearest(nn.Module):
    """A nearest resize from 4x3 to 11x7: RESIZE NEAREST with steps of 8/22 and 6/14 (U85)."""

    def forward(self, x):
        return nn.functional.interpolate(x, size=(11, 7), mode="nearest")


class UpsampleBilinear(nn.Module):
    """A bilinear upsample by 2, half-pixel centres: RESIZE BILINEAR into int8 (U85)."""

    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)


class ResizeBilinearCorners(nn.Module):
    """A bilinear resize from 4x4 to 8x8 with aligned corners: RESIZE BILINEAR into a 32-bit feature
    map (its weights' sum, 196, is no power of two), rescaled by a POOL NONE (U85)."""

    def forward(self, x):
        return nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)


PROBES = {
    "abs": (Abs, (1, 8, 6, 6)),
    "softsign": (Softsign, (1, 8, 6, 6)),
    "minimum": (Minimum, (1, 8, 6, 6)),
    "mean-spatial": (MeanSpatial, (1, 8, 6, 6)),
    "sum-channels": (SumChannels, (1, 8, 6, 6)),
    "softmax": (Softmax, (1, 8, 6, 6)),
    "hardswish": (Hardswish, (1, 8, 6, 6)),
    "leaky-relu": (LeakyRelu, (1, 8, 6, 6)),
}
# for the U85 only: on the U55, ExecuTorch's Arm lowering leaves aten::gt and aten::where to the CPU,
# and the export of a bilinear resize fails
U85_PROBES = {"where": (Where, (1, 8, 6, 6)), "where-ge": (WhereGe, (1, 8, 6, 6)),
              "where-ne": (WhereNe, (1, 8, 6, 6)), "where-xor": (WhereXor, (1, 8, 6, 6)),
              "resize-nearest": (ResizeNearest, (1, 8, 4, 3)),
              "upsample-bilinear": (UpsampleBilinear, (1, 8, 5, 5)),
              "resize-bilinear-corners": (ResizeBilinearCorners, (1, 8, 4, 4))}
