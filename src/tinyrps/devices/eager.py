"""PyTorch eager execution of the float checkpoint: the reference every program is compared to."""
from __future__ import annotations

import numpy as np
import torch

from ..infra.errors import UserError
from ..network.model import images_to_tensor, load_model
from .base import Device


class EagerDevice(Device):
    name = "eager"
    batch_size = 256

    def __init__(self, model_path, **_):
        if model_path.suffix != ".pt":
            raise UserError(f"device 'eager' runs the PyTorch checkpoint (model.pt), not {model_path.name}")
        try:
            self.model = load_model(model_path)
        except UserError:   # load_model names the file and what is wrong with it
            raise
        except Exception as e:
            raise UserError(f"{model_path} is not a TinyRPS checkpoint ({type(e).__name__}): train one with `tinyrps train`") from None

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.model(images_to_tensor(images)).numpy()

    def describe(self) -> str:
        return "PyTorch eager (float32)"
