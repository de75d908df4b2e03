"""The inference-device interface: uint8 images in, float32 logits out.

Every way of running the model (PyTorch, the ExecuTorch runtime, the TOSA
reference model, the firmware on an emulated MCU, the firmware's C runtime built
for the host) is a Device. Devices may hold resources (a runtime, a QEMU process),
so they are context managers and must be closed.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import UserError
from ..labels import IMAGE_SIZE, LABELS
from ..families import get_family
from ..pte import family_of_program


class Device:
    #: registry name, e.g. "host"
    name = "?"

    def classify(self, images: np.ndarray) -> np.ndarray:
        """uint8 [N,28,28] -> float32 logits [N, classes]."""
        images = check_images(images)
        if 0 < len(images) <= self.batch_size:  # the common single-call case, kept lean for latency
            return self._classify_batch(images)
        if not len(images):
            return np.zeros((0, len(LABELS)), np.float32)
        return np.concatenate([self._classify_batch(images[i:i + self.batch_size])
                               for i in range(0, len(images), self.batch_size)])

    #: how many images one `_classify_batch` call takes at most
    batch_size = 1
    #: True where the computing happens in another process (QEMU, a native tool), so a
    #: caller may run this device alongside in-process work
    out_of_process = False
    #: what stands in for the hardware when the device runs a model of it on this machine
    #: (its times are then the model's, not the hardware's); None when it is the real thing
    simulated_by = None
    #: the most timed runs a benchmark should ask of this device (where each run is slow,
    #: e.g. a serial round trip); None: as many as the benchmark asks
    bench_runs: Optional[int] = None
    #: the program's raw int8 outputs (before its final dequantize) of every image since the
    #: device was opened, in order, as int8 [N, outputs]; None where the device does not see them
    int8_outputs: Optional[np.ndarray] = None
    #: the same, of the latest classify call only; None where the device does not see them
    last_int8: Optional[np.ndarray] = None

    def last_stats(self) -> dict:
        """What the device measured or estimated of its last inference, e.g. `instructions` on
        an MCU core or `npu_estimate_ms`; empty when it has nothing to report."""
        return {}

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


def require_family(model_path, family: str, device_name: str, program: bytes, sidecar_only: bool = False):
    """Refuse a program of another family in one line that names the devices that can run it;
    return the program's descriptor (None for a program without one).

    A descriptor that does not describe `program` (the program's bytes) is refused first, on
    every device. The family comes from the program's contents; with sidecar_only, from
    the descriptor alone, and a program without one is left to the device to judge."""
    from .. import descriptor
    described = descriptor.read(model_path, program)
    if sidecar_only:
        actual = described.family if described is not None else family
    else:
        actual = family_of_program(program, model_path)
    if actual != family:
        article = "an" if actual[0] in "aeiou" else "a"
        other = get_family(actual)
        raise UserError(f"{model_path.name} is {article} {actual} program: it needs {other.needs}, which device "
                        f"'{device_name}' does not have; run it with --device "
                        f"{' or --device '.join(other.devices)}")
    return described


def check_images(images) -> np.ndarray:
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"expected uint8 images [N,{IMAGE_SIZE},{IMAGE_SIZE}], got {images.dtype} {images.shape}")
    return images
