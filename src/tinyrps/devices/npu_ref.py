"""What the Ethos-U NPU computes, on the host: the program's TOSA graph in the TOSA reference model.

Vela compiles a TOSA graph into the NPU's command stream, and TOSA defines the
int8 arithmetic bit for bit, so running that graph through Arm's TOSA reference
model gives the NPU's numbers. The device runs the very graph compiled for the
.pte (kept by the export as RUN/export/T/out.tosa, its sha256 in the sidecar) and
does on the host what the program leaves to the CPU: quantize the float input and
dequantize the int8 output, with the parameters read from the program itself.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..pte import checked_sidecar, read_program
from .base import Device, require_family


class NpuRefDevice(Device):
    name = "npu-ref"
    # The graph has a batch of one, so each image is one run; batches only amortise the output redirection.
    batch_size = 64
    simulated_by = "the TOSA reference model"

    def __init__(self, model_path, **_):
        from ..export.ethos_u import io_quantization
        model_path = Path(model_path)
        program = read_program(model_path)
        require_family(model_path, "ethos-u", self.name, program)
        self.sidecar = verified_sidecar(model_path, program)
        self.tosa = read_tosa(model_path, self.sidecar)
        self.input_shape = graph_input_shape(self.tosa, model_path)
        quantization = io_quantization(program)
        self.input_q, self.output_q = quantization["input"], quantization["output"]
        self.vela = self.sidecar.get("vela", {})
        self._reference_ms = None

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        quantized = quantize(images_to_float(images), self.input_q)
        start = time.perf_counter()
        outputs = run_graph(self.tosa, [q.reshape(self.input_shape) for q in quantized])
        self._reference_ms = (time.perf_counter() - start) * 1000 / len(images)
        return dequantize(outputs, self.output_q)

    def describe(self) -> str:
        vela = self.vela
        if not vela:
            return "TOSA reference model (Ethos-U graph)"
        return (f"TOSA reference model ({vela['accelerator']} graph; Vela estimate {vela['inference_ms']:.3f} ms "
                f"at {vela['clock_hz'] / 1e6:.0f} MHz)")

    def last_stats(self) -> dict:
        """Vela's estimate of one inference on the NPU, and what the reference model took per image here."""
        stats = {"npu_estimate_ms": self.vela.get("inference_ms"), "npu_cycles": self.vela.get("npu_cycles"),
                 "accelerator": self.vela.get("accelerator"), "clock_hz": self.vela.get("clock_hz")}
        if self._reference_ms is not None:
            stats["reference_ms"] = self._reference_ms
        return stats


def run_graph(tosa: bytes, inputs: list) -> np.ndarray:
    """Run the graph once per int8 input; return the int8 outputs as [N, outputs]."""
    import tosa_reference_model as refm

    from ..export.ethos_u import output_to
    outputs = []
    with output_to(None):  # the reference model prints a version note on every run
        for x in inputs:
            result, status = refm.run(tosa, [x])
            if status != refm.GraphStatus.TOSA_VALID:
                raise UserError(f"the TOSA reference model could not run this program's graph ({status.name}): "
                                f"export it again")
            outputs.append(np.asarray(result[0]).reshape(-1))
    return np.stack(outputs)


def verified_sidecar(model_path: Path, program: bytes) -> dict:
    sidecar = checked_sidecar(model_path, program)
    if not sidecar or "ethos_u" not in sidecar:
        raise UserError(f"{model_path.with_suffix('.json')} (the sidecar naming the TOSA graph of {model_path.name}) "
                        f"is missing or has no TOSA graph: export the program again with `tinyrps export`")
    return sidecar


def tosa_path(model_path: Path, sidecar: dict) -> Path:
    """Where the export kept the program's TOSA graph: RUN/export/T/out.tosa next to RUN/export/T.pte."""
    return model_path.parent / model_path.stem / sidecar["ethos_u"]["tosa"]


def read_tosa(model_path: Path, sidecar: dict) -> bytes:
    path = tosa_path(model_path, sidecar)
    if not path.is_file():
        raise UserError(f"the TOSA graph compiled into {model_path.name} is missing ({path}): export it again")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != sidecar["ethos_u"]["tosa_sha256"]:
        raise UserError(f"{path} is not the TOSA graph compiled into {model_path.name} (its sha256 differs): "
                        f"export it again")
    return data


def graph_input_shape(tosa: bytes, model_path: Path) -> tuple:
    """Shape of the graph's input; the graph must have one int8 input and one int8 output."""
    from tosa.DType import DType
    from tosa.TosaGraph import TosaGraph
    try:
        block = TosaGraph.GetRootAs(tosa, 0).Regions(0).Blocks(0)
        tensors = {block.Tensors(i).Name(): block.Tensors(i) for i in range(block.TensorsLength())}
        inputs = [tensors[block.Inputs(i)] for i in range(block.InputsLength())]
        outputs = [tensors[block.Outputs(i)] for i in range(block.OutputsLength())]
    except Exception:
        raise UserError(f"the TOSA graph of {model_path.name} is unreadable: export it again") from None
    if len(inputs) != 1 or len(outputs) != 1 or any(t.Type() != DType.INT8 for t in inputs + outputs):
        raise UserError(f"the TOSA graph of {model_path.name} does not have one int8 input and one int8 output: "
                        f"it is not a tinyrps program")
    return tuple(int(d) for d in inputs[0].ShapeAsNumpy())


def images_to_float(images: np.ndarray) -> np.ndarray:
    """uint8 [N,28,28] -> float32 [N,1,28,28] in [0,1], as tinyrps.model.images_to_tensor."""
    return (images.astype(np.float32) / np.float32(255.0))[:, None]


def quantize(x: np.ndarray, q: dict) -> np.ndarray:
    """float32 -> int8 as ExecuTorch's quantize_per_tensor kernel: multiply by the float32
    reciprocal of the scale, round half to even, add the zero point, clamp."""
    inverse = np.float32(1.0) / np.float32(q["scale"])
    return np.clip(np.rint(x * inverse) + q["zero_point"], q["qmin"], q["qmax"]).astype(np.int8)


def dequantize(q: np.ndarray, p: dict) -> np.ndarray:
    """int8 -> float32 as ExecuTorch's dequantize_per_tensor kernel: (q - zero point) * scale in double."""
    return ((q.astype(np.int64) - p["zero_point"]) * float(p["scale"])).astype(np.float32)
