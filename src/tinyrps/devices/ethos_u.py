"""What the two devices of an Ethos-U program (`npu`, `npu-ref`) share: opening the program and its
descriptor, its tensors' layouts and quantization, Vela's figures from its measurement, and how those
figures are shown.

Both do on the host what the program leaves to the CPU (quantize the float input, dequantize the int8
output, with the parameters read from the program itself) and report Vela's estimate of the NPU's
time, where the program was measured (`tinyrps measure`), as the time of an inference.
"""
from __future__ import annotations

from pathlib import Path

from .. import measure
from ..hardware.pte import read_program
from ..reference.ethos_u import io_quantization
from .base import Device, require_family
from .executorch import io_layouts


class EthosUDevice(Device):
    """A device of an Ethos-U program: `_open` and `_read_io` set the attributes both devices read."""
    batch_size = 64

    def _open(self, model_path) -> bytes:
        """The program's bytes; sets model_path and descriptor (None for a program without one)
        after refusing a program of another family."""
        self.model_path = Path(model_path)
        program = read_program(self.model_path)
        self.descriptor = require_family(self.model_path, "ethos-u", self.name, program)
        return program

    def _read_io(self, program: bytes) -> None:
        """Sets inputs and outputs (their layouts), input_q and output_q (their quantization) and vela
        (Vela's figures from the program's measurement, {} where it was not measured)."""
        self.inputs, self.outputs = io_layouts(self.descriptor)
        quantization = io_quantization(program)
        self.input_q, self.output_q = quantization["input"], quantization["output"]
        self.vela = (measure.read(self.model_path, needs=("vela",)) or {}).get("vela", {})

    def _vela_stats(self, accelerator: str) -> dict:
        """Vela's estimate of one inference on the NPU, as last_stats gives it."""
        return {"npu_estimate_ms": self.vela.get("inference_ms"), "npu_cycles": self.vela.get("npu_cycles"),
                "accelerator": accelerator, "clock_hz": self.vela.get("clock_hz")}


def vela_figure(stats: dict, pte, target: str) -> dict:
    """Vela's estimate of one inference on the NPU, from the program's measurement, as a figure of a move."""
    accelerator = (stats.get("accelerator") or target).replace("ethos-u", "Ethos-U")
    name = f"{accelerator} time (Vela estimate)"
    if stats.get("npu_estimate_ms") is None:
        return {"name": name, "value": "not measured",
                "note": f"run `tinyrps measure --model {Path(pte).name}` to have Vela estimate it"}
    clock = f" at {stats['clock_hz'] / 1e6:.0f} MHz" if stats.get("clock_hz") else ""
    return {"name": name, "value": f"{stats['npu_estimate_ms']:.3f} ms{clock}",
            "note": "Vela's estimate of the NPU's time for one inference, from `tinyrps measure`"}


def accelerator_name(described, target: str) -> str:
    """"Ethos-U85-128": the program's accelerator as labels name it (its descriptor's, else the target's)."""
    return getattr(getattr(described, "info", None), "accelerator", target).replace("ethos-u", "Ethos-U")
