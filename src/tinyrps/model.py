"""The TinyRPS network: a small CNN for 28x28 grayscale letter images.

Conv16-Conv32-Pool-Conv64-Pool-FC128-FC3. Module names `body` and `head` are part
of the checkpoint format (state_dict keys), so keep them.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .labels import IMAGE_SIZE, LABELS

INPUT_SHAPE = (1, 1, IMAGE_SIZE, IMAGE_SIZE)


class TinyRPS(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 128),
            nn.ReLU(),
            nn.Linear(128, len(LABELS)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def count_macs() -> int:
    """Multiply-accumulates of one inference (convolutions and linear layers)."""
    s = IMAGE_SIZE
    macs = s * s * 16 * 1 * 9            # conv1 at 28x28
    macs += s * s * 32 * 16 * 9          # conv2 at 28x28
    macs += (s // 2) ** 2 * 64 * 32 * 9  # conv3 at 14x14
    macs += 64 * 7 * 7 * 128 + 128 * 3   # fc1, fc2
    return macs


def images_to_tensor(images) -> torch.Tensor:
    """uint8 [N,28,28] -> float32 [N,1,28,28] in [0,1], the model's input convention."""
    a = np.asarray(images)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"expected uint8 images of shape [N,{IMAGE_SIZE},{IMAGE_SIZE}], got {a.dtype} {a.shape}")
    # float32 division, the same rounding as the firmware's (float)x / 255.0f
    return torch.from_numpy(a.astype(np.float32)[:, None] / np.float32(255.0))


def load_model(path) -> TinyRPS:
    model = TinyRPS()
    model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
    return model.eval()
