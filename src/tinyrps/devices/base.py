"""The inference-device interface: uint8 images in, float32 logits out; and, on the devices that run
the firmware's runtime, any program's tensors in and out.

Every way of running the model (PyTorch, the ExecuTorch runtime, the TOSA
reference model, the firmware on an emulated MCU, the firmware's C runtime built
for the host) is a Device. Devices may hold resources (a runtime, a QEMU process),
so they are context managers and must be closed.

`classify` takes the image classifiers of this project. `run` (one inference) and
`run_batch` (arrays with a leading N) take any program the device runs: one array per
input, of its dtype and shape (`inputs`, TensorLayouts), and give every output in its own
dtype and shape with its raw int8 values where it has them (the int8 tensor the
dequantize that wrote it read). The firmware devices (`native`, `mcu`) implement them,
and their `classify` is `run_batch` on the images as the program's float32 input.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..infra.errors import UserError
from ..network.labels import IMAGE_SIZE, LABELS
from . import wrong_family
from ..hardware.pte import family_of_program


@dataclass
class RunResult:
    """What `run` and `run_batch` give: per output of the program, its values in the output's dtype and shape
    ([N, *shape] from run_batch), and its raw int8 values (same shape) or None where it has none."""
    outputs: list
    int8: list
    #: instructions of each inference where the device counts them ([N] from run_batch), else None
    instructions: Optional[np.ndarray] = None
    stats: dict = field(default_factory=dict)
    #: the mean per-layer profile of the run (one dict per kernel call, as measure's) where the device takes one
    layers: Optional[list] = None
    #: the key of each layer's count and what it counts: "instructions" on the emulated boards (not cycles),
    #: "nanoseconds" of the host's monotonic clock on the native build (noisy: the host's load)
    counter: str = "instructions"
    #: with `layers`: each inference's whole count in that counter ([N]), the runtime's work between calls included
    profile_totals: Optional[np.ndarray] = None


class Device:
    #: registry name, e.g. "executorch"
    name = "?"
    #: the program's inputs and outputs (tinyrps.firmware.tensors.TensorLayout), on devices that run tensors
    inputs: Optional[tuple] = None
    outputs: Optional[tuple] = None

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
    #: set to a list to collect the RunResult of every run_batch call (classify's too) that took a
    #: per-layer profile, in order (eval --etdump); None: nothing is kept
    profiles: Optional[list] = None

    def computation(self) -> Optional[str]:
        """A digest of the function this device computes of its inputs, for a caller that runs
        several programs over the same images: two devices with the same digest give the same
        outputs bit for bit, so the second may take the first's. None: not known to be shared."""
        return None

    def last_stats(self) -> dict:
        """What the device measured or estimated of its last inference, e.g. `instructions` on
        an MCU core or `npu_estimate_ms`; empty when it has nothing to report."""
        return {}

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # ---- any program's tensors ----

    def run(self, inputs) -> RunResult:
        """One inference: one array per input of the program, of its exact dtype and shape."""
        from ..firmware.tensors import check_inputs
        arrays = check_inputs(self._input_specs(), inputs, self._program_name(), batched=False)
        result = self.run_batch([a[None] for a in arrays])
        return RunResult([o[0] for o in result.outputs], [None if q is None else q[0] for q in result.int8],
                         None if result.instructions is None else int(result.instructions[0]), result.stats)

    def run_batch(self, inputs) -> RunResult:
        """N inferences: one array [N, *shape] per input of the program, of its dtype."""
        from ..firmware.tensors import check_inputs
        specs = self._input_specs()
        arrays = check_inputs(specs, inputs, self._program_name(), batched=True)
        if not len(arrays[0]):
            return RunResult([np.zeros((0, *s.shape), s.dtype) for s in self.outputs],
                             [np.zeros((0, *s.shape), np.int8) if s.has_int8 else None for s in self.outputs],
                             np.zeros(0, np.int64))
        result = self._run_batch(arrays)
        if self.profiles is not None and result.layers:
            self.profiles.append(result)
        return result

    def _run_batch(self, arrays: list) -> RunResult:
        raise NotImplementedError

    def _input_specs(self) -> tuple:
        if self.inputs is None:
            raise UserError(f"device '{self.name}' runs image classifiers only (classify); run a program's tensors "
                            "with --device native or --device mcu (Cortex-M programs), --device npu or npu-ref "
                            "(Ethos-U programs) or --device executorch")
        return self.inputs

    def _program_name(self) -> str:
        path = getattr(self, "model_path", None)
        return path.name if path is not None else "the program"

    def _classify_by_run(self, images: np.ndarray) -> tuple:
        """An image classifier on run_batch: the images as its float32 input (x / 255), its output 0 as logits
        [N, classes] and their raw int8 values (None where there are none)."""
        from ..firmware.tensors import images_as_input, is_image_classifier
        if not is_image_classifier(list(self._input_specs()), list(self.outputs)):
            got = ", ".join(spec.describe() for spec in self.inputs)
            raise UserError(f"{self._program_name()} is not an image classifier (it takes {got}, not one float32 "
                            "[1, 1, 28, 28] image and float32 logits): run it with run() instead of classify")
        result = self.run_batch([images_as_input(images)])
        logits, int8 = result.outputs[0], result.int8[0]
        rows = len(images)
        return (logits.reshape(rows, -1).astype(np.float32),
                None if int8 is None else int8.reshape(rows, -1), result)

    @classmethod
    def runs_on(cls, pte, target: str, described, board=None, port=None) -> tuple:
        """(what a program of `target` runs on here, as labels name it; the MCU core's display name or None)."""
        return cls.name, None

    @classmethod
    def figures(cls, stats: dict, pte, target: str, core) -> list:
        """The device's own figures of one inference (its last_stats), each with what it is: {name, value, note}."""
        return [{"name": f"{cls.name} latency", "value": f"{stats['host_ms']:.3f} ms",
                 "note": "one inference, timed around the call on this server"}]

    def describe(self) -> str:
        """One line for the game and tables, e.g. 'ExecuTorch runtime (XNNPACK)'."""
        return self.name

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def require_family(model_path, family: str, device_name: str, program: bytes, descriptor_only: bool = False):
    """Refuse a program of another family in one line that names the devices that can run it;
    return the program's descriptor (None for a program without one).

    A descriptor that does not describe `program` (the program's bytes) is refused first, on
    every device. The family comes from the program's contents; with descriptor_only, from
    the descriptor alone, and a program without one is left to the device to judge."""
    from ..hardware import descriptor
    described = descriptor.read(model_path, program)
    if descriptor_only:
        actual = described.family if described is not None else family
    else:
        actual = family_of_program(program, model_path)
    if actual != family:
        raise wrong_family(model_path, actual, device_name)
    return described


def check_images(images) -> np.ndarray:
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise ValueError(f"expected uint8 images [N,{IMAGE_SIZE},{IMAGE_SIZE}], got {images.dtype} {images.shape}")
    return images
