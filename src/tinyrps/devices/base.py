"""The inference-device interface: uint8 images in, float32 logits out.

Every way of running the model (PyTorch, the ExecuTorch runtime, the TOSA
reference model, the firmware on an emulated MCU, the firmware's C runtime built
for the host) is a Device. Devices may hold resources (a runtime, a QEMU process),
so they are context managers and must be closed.
"""
from __future__ import annotations

import numpy as np

from ..model import IMAGE_SIZE


class Device:
    #: registry name, e.g. "host"
    name = "?"

    def classify(self, images: np.ndarray) -> np.ndarray:
        """uint8 [N,28,28] -> float32 logits [N,3]."""
        images = check_images(images)
        if 0 < len(images) <= self.batch_size:  # the common single-call case, kept lean for latency
            return self._classify_batch(images)
        if not len(images):
            return np.zeros((0, 3), np.float32)
        return np.concatenate([self._classify_batch(images[i:i + self.batch_size])
                               for i in range(0, len(images), self.batch_size)])

    #: how many images one `_classify_batch` call takes at most
    batch_size = 1
    #: True where the computing happens in another process (QEMU, a native tool), so a
    #: caller may run this device alongside in-process work
    out_of_process = False

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> str:
        """One line for the game and tables, e.g. 'ExecuTorch runtime (XNNPACK)'."""
        return self.name

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_images(images) -> np.ndarray:
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"expected uint8 images [N,{IMAGE_SIZE},{IMAGE_SIZE}], got {images.dtype} {images.shape}")
    return images
