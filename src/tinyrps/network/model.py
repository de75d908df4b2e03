"""The TinyRPS networks in PyTorch: small CNNs for 28x28 grayscale letter images, built
from an architecture of tinyrps.network.arch (default `tinyrps`: Conv16-Conv32-Pool-Conv64-Pool-FC128-FC3).

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
                   describe_arch, feature_shape, parse_arch)
from ..infra.errors import UserError
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
            if layer.op == "conv":
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
    """The checkpoint at `path` in eval mode, built as `arch` (default: the run's architecture,
    from the config.json beside it, which also records the checkpoint's sha256; a checkpoint
    on its own is read as the default network). Anything wrong with the file is one line
    naming it (UserError): truncated or not a checkpoint, not a state dict, another network."""
    import io

    from ..infra.artifacts.records import run_config
    from ..infra.artifacts.files import sha256_bytes
    path = Path(path)
    run = path.parent
    config = run_config(run) if (run / "config.json").is_file() else None
    hint = f"train it again with `tinyrps train --data DATA --out {run}`"
    raw = path.read_bytes()
    if config is not None and sha256_bytes(raw) != config["checkpoint_sha256"]:
        raise UserError(f"{path} is not the checkpoint {run / 'config.json'} was written with (changed, or mixed "
                        f"with another run's files): {hint}")
    if not raw:
        raise UserError(f"{path} is empty: {hint}")
    try:
        state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as e:   # torch's zip reader and unpickler: whatever a damaged file makes them raise
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:100]
        raise UserError(f"{path} is not a PyTorch checkpoint tinyrps can read ({reason}): {hint}") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise UserError(f"{path} holds a {type(state).__name__}, not a network's weights (a state_dict of tensors): "
                        f"{hint}")
    if arch is None and config is not None:
        try:
            arch = parse_arch(config["arch"])
        except UserError as e:
            raise UserError(f"{run / 'config.json'}: arch '{config['arch']}' is not an architecture ({e})") from None
    arch = arch or DEFAULT_ARCH
    model = TinyRPS(arch)
    try:
        model.load_state_dict(state)
    except RuntimeError:
        name = arch.name if isinstance(arch, Arch) else arch
        where = (f"check `arch` in {run / 'config.json'}" if config is not None else
                 "with no config.json beside it, it is read as the default network: keep it in its run folder")
        raise UserError(f"{path} does not hold a '{name}' network (its weights have other names or shapes): "
                        f"{where}") from None
    return model.eval()
