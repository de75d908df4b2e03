"""Operator probes: small modules, each exercising one kind of NPU command once exported for an
Ethos-U target. Each seeds its own weights, so its program is the same on every export.

PROBES maps a probe's name to (module class, input shape)."""
import torch
from torch import nn


class ConvPadStride(nn.Module):
    """A 3x3 convolution, stride 2, padding 1, 24 -> 40 channels: depth-first weights, two OFM blocks."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(11)
        self.conv = nn.Conv2d(24, 40, 3, stride=2, padding=1)

    def forward(self, x):
        return self.conv(x)


class ConvRelu5x5(nn.Module):
    """A 5x5 convolution with padding 2 on 3 channels (part-kernel-first weights), then ReLU."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(12)
        self.conv = nn.Conv2d(3, 16, 5, padding=2)

    def forward(self, x):
        return torch.relu(self.conv(x))


class Depthwise(nn.Module):
    """A 3x3 depthwise convolution of 32 channels, padding 1."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(13)
        self.conv = nn.Conv2d(32, 32, 3, padding=1, groups=32)

    def forward(self, x):
        return self.conv(x)


class MaxPool(nn.Module):
    """A 3x3 max pool, stride 2, padding 1."""

    def forward(self, x):
        return nn.functional.max_pool2d(x, 3, stride=2, padding=1)


class AvgPool(nn.Module):
    """A 2x2 average pool, stride 2, no padding."""

    def forward(self, x):
        return nn.functional.avg_pool2d(x, 2)


class AvgPoolPadded(nn.Module):
    """A 3x3 average pool, stride 1, padding 1, padding not counted."""

    def forward(self, x):
        return nn.functional.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)


class Add(nn.Module):
    """x + conv(x): an elementwise add of two tensors of different scales."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(16)
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        return x + self.conv(x)


class Mul(nn.Module):
    """x * conv(x): an elementwise product of two tensors."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(17)
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        return x * self.conv(x)


class Sigmoid(nn.Module):
    """A LUT activation: sigmoid."""

    def forward(self, x):
        return torch.sigmoid(x)


class Tanh(nn.Module):
    """A LUT activation: tanh."""

    def forward(self, x):
        return torch.tanh(x)


class TransposeConv(nn.Module):
    """A 2x2 transpose convolution, stride 2 (upscaling), 8 -> 8 channels."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(14)
        self.conv = nn.ConvTranspose2d(8, 8, 2, stride=2)

    def forward(self, x):
        return self.conv(x)


class Linear(nn.Module):
    """A fully connected layer, 200 -> 24."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(15)
        self.fc = nn.Linear(200, 24)

    def forward(self, x):
        return self.fc(x)


class Flip(nn.Module):
    """x flipped along its width and, after a 1x1 convolution, its channels (the U85 reverses the OFM)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(18)
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        return torch.flip(self.conv(torch.flip(x, dims=[3])), dims=[1])


PROBES = {
    "conv-pad-stride": (ConvPadStride, (1, 24, 9, 11)),
    "conv-relu-5x5": (ConvRelu5x5, (1, 3, 12, 10)),
    "depthwise": (Depthwise, (1, 32, 8, 8)),
    "max-pool": (MaxPool, (1, 16, 9, 9)),
    "avg-pool": (AvgPool, (1, 16, 8, 8)),
    "avg-pool-padded": (AvgPoolPadded, (1, 16, 6, 6)),
    "add": (Add, (1, 8, 6, 6)),
    "mul": (Mul, (1, 8, 6, 6)),
    "sigmoid": (Sigmoid, (1, 8, 6, 6)),
    "tanh": (Tanh, (1, 8, 6, 6)),
    "transpose-conv": (TransposeConv, (1, 8, 5, 5)),
    "linear": (Linear, (1, 200)),
}
# what ExecuTorch's Arm lowering leaves to the CPU on the U55 (aten::flip), for the U85 only
U85_PROBES = {"flip": (Flip, (1, 8, 6, 7))}
