"""Small layers exported for the Ethos-U85 weight tests: each kind of weight order and format.

Each module seeds its own weights, so that its program is the same on every export."""
import torch
from torch import nn


def seeded(seed: int) -> None:
    torch.manual_seed(seed)


class DepthFirst(nn.Module):
    """A deep IFM: the weights go depth first, more than one IFM block, more than one OFM block."""

    def __init__(self):
        super().__init__()
        seeded(1)
        self.conv = nn.Conv2d(72, 40, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


class PartKernel(nn.Module):
    """A shallow IFM, a 5x5 kernel with stride 2: the weights go part-kernel first, in stride phases."""

    def __init__(self):
        super().__init__()
        seeded(2)
        self.conv = nn.Conv2d(3, 20, 5, stride=2, padding=2)

    def forward(self, x):
        return self.conv(x)


class Dilated(nn.Module):
    """A dilated 3x3 kernel."""

    def __init__(self):
        super().__init__()
        seeded(3)
        self.conv = nn.Conv2d(12, 24, 3, dilation=2, padding=2)

    def forward(self, x):
        return self.conv(x)


class Depthwise(nn.Module):
    """A 3x3 depthwise convolution of 24 channels."""

    def __init__(self):
        super().__init__()
        seeded(4)
        self.conv = nn.Conv2d(24, 24, 3, padding=1, groups=24)

    def forward(self, x):
        return self.conv(x)


class Linear(nn.Module):
    """A fully connected layer, which the NPU runs as a 1x1 convolution."""

    def __init__(self):
        super().__init__()
        seeded(5)
        self.fc = nn.Linear(96, 40)

    def forward(self, x):
        return self.fc(x)


class Sparse(nn.Module):
    """Weights with two zeros in every four input channels: the NPU's 2:4 sparse format."""

    def __init__(self):
        super().__init__()
        seeded(6)
        self.conv = nn.Conv2d(64, 48, 3, padding=1)
        with torch.no_grad():
            keep = torch.zeros(64)
            keep[0::4] = 1
            keep[2::4] = 1
            self.conv.weight *= keep[None, :, None, None]

    def forward(self, x):
        return self.conv(x)


class FewValues(nn.Module):
    """Weights of three values per channel (-w, 0, w), which quantize to {-127, 0, 127}: the
    compiler stores them in the fast weight format."""

    def __init__(self):
        super().__init__()
        seeded(7)
        self.conv = nn.Conv2d(32, 48, 3, padding=1)
        with torch.no_grad():
            self.conv.weight.copy_(torch.randint(-1, 2, self.conv.weight.shape).float() * 0.05)

    def forward(self, x):
        return self.conv(x)


class Pointwise(nn.Module):
    """A 1x1 convolution over many channels: depth first, several IFM and OFM blocks, so the IFM
    blocks turn back on every other OFM block."""

    def __init__(self):
        super().__init__()
        seeded(8)
        self.conv = nn.Conv2d(200, 96, 1)

    def forward(self, x):
        return self.conv(x)


class NineValues(nn.Module):
    """Weights of nine values per channel: the fast weight format with a 16-entry table."""

    def __init__(self):
        super().__init__()
        seeded(9)
        self.fc = nn.Linear(256, 128)
        with torch.no_grad():
            self.fc.weight.copy_(torch.randint(-4, 5, self.fc.weight.shape).float() * 0.01)

    def forward(self, x):
        return self.fc(x)


class WideLinear(nn.Module):
    """A large fully connected layer of arbitrary weights."""

    def __init__(self):
        super().__init__()
        seeded(10)
        self.fc = nn.Linear(512, 256)

    def forward(self, x):
        return self.fc(x)


class SparseFewValues(nn.Module):
    """2:4 sparse weights of three values: sparse and fast together store raw bytes."""

    def __init__(self):
        super().__init__()
        seeded(11)
        self.fc = nn.Linear(256, 128)
        with torch.no_grad():
            values = torch.randint(1, 3, self.fc.weight.shape).float() * 2 - 3   # -1 or 1
            keep = torch.zeros(256)
            keep[1::4] = 1
            keep[2::4] = 1
            self.fc.weight.copy_(values * keep[None, :] * 0.02)

    def forward(self, x):
        return self.fc(x)
