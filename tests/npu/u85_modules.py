"""The network exported for the Ethos-U85 weight tests: one layer of each weight order and format.

It seeds its own weights, so that its program is the same on every export."""
import torch
from torch import nn


def two_of_four(weight: torch.Tensor) -> torch.Tensor:
    """Zero input channels 1 and 3 of every four: weights the NPU can store 2:4 sparse."""
    keep = torch.zeros(weight.shape[1])
    keep[0::4] = 1
    keep[2::4] = 1
    return weight * keep[None, :, None, None]


def few_values(shape, values: int) -> torch.Tensor:
    """Weights of `values` levels around zero, which quantize to as many int8 values per channel:
    few enough for the fast weight format's tables (4 or 16 entries)."""
    half = values // 2
    return torch.randint(-half, half + 1, shape).float() * 0.01


class Layers(nn.Module):
    """A strided 5x5 convolution of a shallow input (part-kernel order, stride phases), a 5x5 depthwise
    convolution (more than 10 taps: its padding inside the kernel too), a dilated one, a 2:4 sparse one, ones of three and of nine weight values, 1x1
    convolutions deep enough for several IFM and OFM blocks (depth-first order), dense and 2:4
    sparse, and a fully connected layer."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(20)
        self.strided = nn.Conv2d(3, 20, 5, stride=2, padding=2)
        self.depthwise = nn.Conv2d(20, 20, 5, padding=2, groups=20)
        self.dilated = nn.Conv2d(20, 24, 3, dilation=2, padding=2)
        self.sparse = nn.Conv2d(24, 48, 3, padding=1)
        self.three = nn.Conv2d(48, 48, 3, padding=1)
        self.nine = nn.Conv2d(48, 48, 3, padding=1)
        self.widen = nn.Conv2d(48, 200, 1)
        self.sparse_pointwise = nn.Conv2d(200, 200, 1)
        self.pointwise = nn.Conv2d(200, 96, 1)
        self.fc = nn.Linear(96 * 16, 40)
        with torch.no_grad():
            self.sparse.weight.copy_(two_of_four(self.sparse.weight))
            self.sparse_pointwise.weight.copy_(two_of_four(self.sparse_pointwise.weight))
            self.three.weight.copy_(few_values(self.three.weight.shape, 3))
            self.nine.weight.copy_(few_values(self.nine.weight.shape, 9))

    def forward(self, x):
        for layer in (self.strided, self.depthwise, self.dilated, self.sparse, self.three, self.nine,
                      self.widen, self.sparse_pointwise, self.pointwise):
            x = torch.relu(layer(x))
        x = nn.functional.max_pool2d(x, 2)
        return self.fc(x.flatten(1))
