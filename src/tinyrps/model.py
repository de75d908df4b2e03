"""The TinyRPS networks in PyTorch: small CNNs for 28x28 grayscale letter images, built
from an architecture of tinyrps.arch (default `tinyrps`: Conv16-Conv32-Pool-Conv64-Pool-FC128-FC3).

Module names `body` (convolutions and pools) and `head` (flatten and fully connected
layers) are part of the checkpoint format (state_dict keys), so keep them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

# the architecture names are re-exported: model.py is where the network is, for a reader
from .arch import (ARCHITECTURES, DEFAULT_ARCH, Arch, arch_names, count_macs, count_params,  # noqa: F401
                   describe_arch, feature_shape, parse_arch, run_arch)
from .errors import UserError
from .labels import IMAGE_SIZE, LABELS

INPUT_SHAPE = (1, 1, IMAGE_SIZE, IMAGE_SIZE)


class TinyRPS(nn.Module):
    """The network of an architecture (default: `tinyrps`, the seed network, with its exact
    module layout: body = conv/ReLU/pool layers, head = flatten + fully connected layers)."""

    def __init__(self, arch="tinyrps") -> None:
        super().__init__()
        self.arch = arch if isinstance(arch, Arch) else parse_arch(arch)
        body, channels = [], 1
        for layer in self.arch.feature_layers:
            if layer.kind == "conv":
                body += [nn.Conv2d(channels, layer.width, 3, stride=layer.stride, padding=1), nn.ReLU()]
                channels = layer.width
            else:
                body.append(nn.MaxPool2d(layer.kernel, stride=2))
        self.body = nn.Sequential(*body)
        head, features = [nn.Flatten()], int(np.prod(feature_shape(self.arch)))
        for units in self.arch.hidden_units:
            head += [nn.Linear(features, units), nn.ReLU()]
            features = units
        head.append(nn.Linear(features, len(LABELS)))
        self.head = nn.Sequential(*head)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def images_to_tensor(images) -> torch.Tensor:
    """uint8 [N,28,28] -> float32 [N,1,28,28] in [0,1], the model's input convention."""
    a = np.asarray(images)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"expected uint8 images of shape [N,{IMAGE_SIZE},{IMAGE_SIZE}], got {a.dtype} {a.shape}")
    # float32 division, the same rounding as the firmware's (float)x / 255.0f
    return torch.from_numpy(a.astype(np.float32)[:, None] / np.float32(255.0))


def load_model(path, arch=None) -> TinyRPS:
    """The checkpoint at `path` in eval mode, built as `arch` (default: the run's architecture)."""
    arch = arch or run_arch(path)
    model = TinyRPS(arch)
    state = torch.load(path, map_location="cpu", weights_only=True)
    try:
        model.load_state_dict(state)
    except RuntimeError:
        raise UserError(f"{path} does not hold a '{arch}' network (its weights have other shapes): "
                        f"check `arch` in {Path(path).parent / 'config.json'}") from None
    return model.eval()
