"""Small PyTorch modules that make the Cortex-M lowering emit the elementwise and data-movement operators.

Each probe is the smallest construct the flow of `tinyrps.export.cortex_m.lower_to_edge`
(CortexMQuantizer, PT2E, to_edge_transform_and_lower, CortexMPassManager) turns into the
operator it names, inside what the runtime takes today: a [1, 1, 28, 28] float input, one or
two convolutions in front, the construct, then flatten, a linear layer of at most 16 outputs
and the final dequantize. `PROBES[name] = (module factory, operators the program must call)`.

The shapes are awkward on purpose: channel counts that are not multiples of 4 or 16 (3, 5, 7,
13, 17, 19, 33), odd widths (13, 26, 27), broadcasts along the channels.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

OUTPUTS = 16   # the most values a program may output: the most int8 values compared per image


class Probe(nn.Module):
    """stem (convolutions) -> body(stem output) -> flatten -> linear(OUTPUTS)."""

    def __init__(self, stem: nn.Module, body, extra: dict | None = None):
        super().__init__()
        self.stem = stem
        self.body = body
        self.extra = nn.ModuleDict(extra or {})
        with torch.no_grad():
            features = self.body(self, self.stem(torch.zeros(1, 1, 28, 28))).numel()
        self.head = nn.Linear(features, OUTPUTS)

    def forward(self, x):
        return self.head(torch.flatten(self.body(self, self.stem(x)), 1))


def conv(cin: int, cout: int, k: int = 3, **kw) -> nn.Module:
    return nn.Conv2d(cin, cout, k, **kw)


def stem(c: int, stride: int = 2, padding: int = 1, relu: bool = True) -> nn.Module:
    """1 -> c channels: 14x14 with the defaults, 13x13 unpadded.

    Without the ReLU where the map feeds cat, minimum or maximum: those share their inputs'
    quantization, and CortexMQuantizer then leaves a conv + ReLU before them unquantized (a
    portable aten::convolution on int8 and a clamp, in executorch 1.5.1)."""
    layers = [conv(1, c, stride=stride, padding=padding)] + ([nn.ReLU()] if relu else [])
    return nn.Sequential(*layers)


def probe(c, body, extra=None, stride=2, padding=1, relu=True):
    return lambda: Probe(stem(c, stride, padding, relu), body, extra)


class SoftmaxHead(nn.Module):
    """conv -> linear(n) -> softmax over the last dim, optionally of a [1, rows, n / rows] view."""

    def __init__(self, n: int, rows: int = 1):
        super().__init__()
        self.stem = nn.Sequential(conv(1, 3, stride=2), nn.ReLU())
        self.fc = nn.Linear(3 * 13 * 13, n)
        with torch.no_grad():
            self.fc.weight *= 8   # logits a few units apart: probabilities across the int8 range
        self.rows = rows

    def forward(self, x):
        y = self.fc(torch.flatten(self.stem(x), 1))
        return torch.softmax(y.reshape(1, self.rows, -1), dim=-1).reshape(1, -1)


class Mixed(nn.Module):
    """Every elementwise operator in one small network: a residual block, hardswish, a
    squeeze-excitation gate, cat, pad, a permute and a softmax head (19 kernel calls)."""

    def __init__(self):
        super().__init__()
        self.c0 = conv(1, 8, stride=2, padding=1)
        self.c1 = conv(8, 8, padding=1)
        self.c2 = conv(8, 8, padding=1)
        self.gate = conv(8, 8, 14)
        self.c3 = conv(16, 5, stride=2)
        self.fc = nn.Linear(5 * 7 * 7, OUTPUTS)
        with torch.no_grad():
            self.fc.weight *= 4

    def forward(self, x):
        x = F.relu(self.c0(x))
        x = F.relu(self.c1(x) + x)
        h = F.hardswish(self.c2(x))
        g = h * torch.sigmoid(self.gate(h))
        y = F.pad(torch.cat([g, h], 1), (1, 0, 0, 1))
        y = self.c3(y).permute(0, 2, 3, 1)
        return torch.softmax(self.fc(torch.flatten(y, 1)), -1)


PROBES = {
    # quantized_add: a residual connection, 5 channels (not a multiple of 4), 14x14
    "add_residual": (probe(5, lambda m, x: F.relu(x + m.extra["c"](x)), {"c": conv(5, 5, padding=1)}),
                     {"cortex_m::quantized_add.out"}),
    # quantized_add: a residual connection on a 7x7 map of 5 channels (245 elements: too few to
    # repay the Helium kernel's tables)
    "add_small": (probe(5, lambda m, x: F.relu(x + m.extra["c"](x)), {"c": conv(5, 5, padding=1)}, stride=4),
                  {"cortex_m::quantized_add.out"}),
    # quantized_add with a negative second multiplier: a subtraction, 13 channels, 13x13
    "sub": (probe(13, lambda m, x: x - m.extra["c"](x), {"c": conv(13, 13, padding=1)}, padding=0),
            {"cortex_m::quantized_add.out"}),
    # quantized_add of a [1, C, 1, 1] term broadcast over an NHWC map (a squeeze-excitation shape)
    "add_channels": (probe(7, lambda m, x: x + m.extra["g"](x), {"g": conv(7, 7, 14)}),
                     {"cortex_m::quantized_add.out"}),
    # quantized_add with an integer alpha folded into the second multiplier
    "add_alpha": (probe(3, lambda m, x: torch.add(x, m.extra["c"](x), alpha=2), {"c": conv(3, 3, padding=1)}),
                  {"cortex_m::quantized_add.out"}),
    # quantized_mul of two maps, 17 channels (one past 16)
    "mul": (probe(17, lambda m, x: x * m.extra["c"](x), {"c": conv(17, 17, padding=1)}),
            {"cortex_m::quantized_mul.out"}),
    # quantized_mul of a tensor by itself
    "square": (probe(5, lambda m, x: x * x), {"cortex_m::quantized_mul.out"}),
    # squeeze-excitation: sigmoid of a [1, C, 1, 1] map (quantized_activation), broadcast product
    "mul_channels": (probe(19, lambda m, x: x * torch.sigmoid(m.extra["g"](x)), {"g": conv(19, 19, 14)}),
                     {"cortex_m::quantized_mul.out", "cortex_m::quantized_activation.out"}),
    # hardswish after a convolution: minimum with a 0-dim constant, then a product whose second
    # zero point lies outside the int8 range
    "hardswish": (probe(7, lambda m, x: F.hardswish(m.extra["c"](x)), {"c": conv(7, 7, padding=1)}),
                  {"cortex_m::minimum.out", "cortex_m::quantized_mul.out"}),
    # quantized_div of two maps of one shape (zero divisors included)
    "div": (probe(5, lambda m, x: x / torch.sigmoid(m.extra["c"](x)), {"c": conv(5, 5, padding=1)}),
            {"cortex_m::quantized_div.out"}),
    # quantized_activation: each function is a table
    "sigmoid": (probe(3, lambda m, x: torch.sigmoid(m.extra["c"](x)), {"c": conv(3, 3, padding=1)}),
                {"cortex_m::quantized_activation.out"}),
    "tanh": (probe(13, lambda m, x: torch.tanh(m.extra["c"](x)), {"c": conv(13, 13, padding=1)}),
             {"cortex_m::quantized_activation.out"}),
    "silu_gelu": (probe(5, lambda m, x: F.gelu(F.silu(m.extra["c"](x))), {"c": conv(5, 5, padding=1)}),
                  {"cortex_m::quantized_activation.out"}),
    # minimum and maximum of two maps, and broadcast against a [1, C, 1, 1] one
    "minimum": (probe(7, lambda m, x: torch.minimum(x, m.extra["c"](x)), {"c": conv(7, 7, padding=1)}, relu=False),
                {"cortex_m::minimum.out"}),
    "maximum_channels": (probe(33, lambda m, x: torch.maximum(x, m.extra["g"](x)), {"g": conv(33, 33, 14)}, relu=False),
                         {"cortex_m::maximum.out"}),
    # softmax of a linear layer's 10 outputs; of 16 as four rows of 4 (an outer dimension)
    "softmax": (lambda: SoftmaxHead(10), {"cortex_m::softmax.out"}),
    "softmax_rows": (lambda: SoftmaxHead(16, rows=4), {"cortex_m::softmax.out"}),
    # transpose: NCHW -> NHWC is a copy of the NHWC bytes; other permutations move bytes
    "permute_nhwc": (probe(5, lambda m, x: x.permute(0, 2, 3, 1)), {"cortex_m::transpose.out"}),
    "permute_wch": (probe(7, lambda m, x: x.permute(0, 3, 1, 2), padding=0), {"cortex_m::transpose.out"}),
    "transpose_hw": (probe(3, lambda m, x: x.transpose(2, 3)), {"cortex_m::transpose.out"}),
    # ... but after a squeeze-excitation gate the lowering leaves the portable permute_copy (int8)
    "permute_after_gate": (probe(5, lambda m, x: m.extra["c"](x * torch.sigmoid(m.extra["g"](x))).permute(0, 2, 3, 1),
                                 {"g": conv(5, 5, 14), "c": conv(5, 7, stride=2)}), {"aten::permute_copy.out"}),
    # pad: height and width, then the channels; a pad value that is not the zero point
    "pad_hw": (probe(5, lambda m, x: F.pad(x, (1, 2, 3, 0)), padding=0, relu=False), {"cortex_m::pad.out"}),
    "pad_channels": (probe(3, lambda m, x: F.pad(x, (0, 1, 0, 0, 2, 1), value=0.5)), {"cortex_m::pad.out"}),
    # cat along the channels (5 + 3 + 5) and along the width; a relu after it stays a clamp
    "cat_channels": (probe(5, lambda m, x: torch.cat([x, m.extra["c"](x), x], 1), {"c": conv(5, 3, padding=1)}, relu=False),
                     {"aten::cat.out"}),
    "cat_width_relu": (probe(3, lambda m, x: F.relu(torch.cat([x, m.extra["c"](x)], 3)), {"c": conv(3, 3, padding=1)}, relu=False),
                       {"aten::cat.out", "aten::clamp.out"}),
    # clamp: a hardtanh the passes cannot fuse (after a cat, whose quantization it shares)
    "clamp": (probe(5, lambda m, x: F.hardtanh(torch.cat([x, m.extra["c"](x)], 1), -0.5, 0.25),
                    {"c": conv(5, 2, padding=1)}, relu=False),
              {"aten::clamp.out"}),
    # squeeze and unsqueeze of the activations
    "squeeze": (probe(13, lambda m, x: m.extra["g"](x).squeeze(3).squeeze(2), {"g": conv(13, 13, 14)}),
                {"aten::squeeze_copy.dims_out"}),
    "unsqueeze": (probe(5, lambda m, x: x.unsqueeze(1)), {"aten::unsqueeze_copy.out"}),
    # all of it at once
    "mixed": (Mixed, {"cortex_m::quantized_add.out", "cortex_m::minimum.out", "cortex_m::quantized_mul.out",
                      "cortex_m::quantized_activation.out", "aten::cat.out", "cortex_m::pad.out",
                      "aten::permute_copy.out", "cortex_m::softmax.out"}),
}
